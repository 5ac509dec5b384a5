"""What a training loop hands to whatever keeps its run: the state it changes, and the hooks it calls.

``train`` (``minirl.train``) and ``train_maze`` (``minirl.maze_rl``) hold a ``TrainState`` and call a
``RunHooks`` at four moments: before the first step (``start``: restore a checkpoint), after each step
(``log`` and ``after_step``), and at the end (``finish``). ``RunHooks`` itself keeps nothing (a run without a
folder); ``minirl.runs.RunFolder`` keeps the run on disk. This module sits below the loops, so the loops and the
run folder both import it and neither imports the other.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch

from minirl.history import History

__all__ = ["RunHooks", "TrainState"]


@dataclass
class TrainState:
    """Everything ``train``'s loop changes from step to step: what a checkpoint keeps."""

    policy: Any  # a minirl.protocols.Policy (an nn.Module)
    optimizer: torch.optim.Optimizer
    scheduler: Any
    generators: list[torch.Generator]
    ref_policy: Any  # its frozen copy, or None
    history: History
    value_model: Any = None  # a learned baseline with its own optimizer (the maze's PPO), or None
    value_optimizer: Any = None


class RunHooks:
    """What ``train`` calls on a run folder; this one keeps nothing (a run without a folder)."""

    def start(self, state: TrainState) -> int:
        """Restore ``state`` from a checkpoint; returns the steps already done (0: a fresh start)."""
        return 0

    def log(self, history: History) -> None:
        """Keep the records and evaluations logged since the last call."""

    def after_step(self, step: int, state: TrainState) -> None:
        """After each complete step: keep its metrics, checkpoint when due or when Ctrl-C was pressed."""

    def finish(self, model: torch.nn.Module, state: TrainState) -> None:
        """At the end: keep the trained model and the curves."""

    def interrupts_deferred(self) -> contextlib.AbstractContextManager:
        """While training: what Ctrl-C does (here: the usual KeyboardInterrupt)."""
        return contextlib.nullcontext()

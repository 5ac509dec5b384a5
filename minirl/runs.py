"""A run folder: one training run kept on disk, to read, resume and use.

    runs/NAME/
    ├── config.json      the resolved configuration: every TrainConfig knob, the algorithm's fields, the task's
    │                    class and arguments (and what the caller adds: the command line, the LM recipe)
    ├── env.json         the machine as a results record keeps it (versions, CPU, GPU, threads), git commit
    ├── metrics.jsonl    one JSON object per step, appended and flushed as training goes
    ├── evals.jsonl      one JSON object per evaluation
    ├── checkpoint/      with save_every (and on Ctrl-C): policy.pt, reference.pt, training.pt (optimizer, LR
    │                    scheduler, generator states, step), history.json; a maze PPO run adds value.pt
    ├── curves.png       at the end
    ├── model/           at the end: a language model's save_pretrained folder (+ tokenizer); for the toy model
    │                    model.pt (its state dict) and model.json (its constructor arguments); for the maze's
    │                    policy table model.pt (the maze itself is config.json's task)
    └── tensorboard/     with tensorboard=True: every step's metrics (train/NAME) and evaluation (eval/NAME) as
                         TensorBoard scalars, written beside the JSON lines (which stay the source)

``train(config, model, run=RunFolder.create(path, config))`` fills one (``train_maze(config, run=...)`` for the
maze) (``minirl compare`` and ``ladder`` with
``--out DIR`` fill one per run under DIR); ``RunFolder.resume(path, config)`` continues from its checkpoint,
and the resumed run's History equals an uninterrupted run's (timings aside); ``load_runs`` and ``runs_figure``
read kept runs back and draw their curves over seeds (``minirl plot``). Every file is written to a temporary
name and renamed, so a reader never sees half a file. Without a run folder ``train`` uses ``RunHooks``, which
does nothing (``minirl.hooks``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from minirl.history import History
from minirl.hooks import RunHooks, TrainState
from minirl.utils import RunError, atomic_write, load_torch, write_json

if TYPE_CHECKING:
    from minirl.maze_policy import MazePolicy
    from minirl.maze_rl import MazeTrainConfig
    from minirl.protocols import Policy
    from minirl.train import TrainConfig

__all__ = [
    "RunError",
    "RunFolder",
    "build_task",
    "describe_config",
    "environment",
    "find_runs",
    "load_run_policy",
    "load_runs",
    "runs_figure",
]

CHECKPOINT = "checkpoint"
TIMING_METRICS = ("gen_seconds", "update_seconds", "tokens_per_second", "wall_time")
UNCOMPARED = ("progress", "command", "figure")  # config.json entries a resumed run may change


# ---- writing files atomically -----------------------------------------------------------------------------------


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    atomic_write(path, lambda tmp: tmp.write_text("".join(json.dumps(r) + "\n" for r in rows)))


# ---- what a run is: its configuration and its machine -----------------------------------------------------------


def build_task(description: dict[str, Any]) -> Any:
    """The task ``minirl.utils.describe_task`` described (a wrapped task inside it too)."""
    module, _, name = description["class"].partition(":")
    args = {
        k: build_task(v) if isinstance(v, dict) and set(v) == {"class", "args"} else v
        for k, v in description["args"].items()
    }
    return getattr(importlib.import_module(module), name)(**args)


def describe_config(config: TrainConfig | MazeTrainConfig) -> dict[str, Any]:
    """Every knob of ``config``, as ``config.json`` keeps it: each kind of config describes itself
    (``TrainConfig.describe``, ``MazeTrainConfig.describe``)."""
    return config.describe()


def environment() -> dict[str, Any]:
    """The machine and the software, as a results record keeps them (``minirl.results.machine``: CPU, cores,
    torch threads, GPU, python/torch/transformers/TRL versions), the command line, and the git commit with the
    files changed since it when in a checkout."""
    from minirl.results import git_commit, machine

    commit, dirty = git_commit()
    return {**machine(), "argv": sys.argv, "git_commit": commit, "dirty": dirty}


def _differences(stored: Any, current: Any, prefix: str = "") -> list[str]:
    """The dotted names of the entries that differ (``learning_rate``, ``algo.clip_eps_low``, ``task.args.length``)."""
    if isinstance(stored, dict) and isinstance(current, dict):
        out = []
        for key in sorted(set(stored) | set(current), key=str):
            if not prefix and key in UNCOMPARED:
                continue
            out += _differences(stored.get(key), current.get(key), f"{prefix}{key}.")
        return out
    return [] if stored == current else [prefix.rstrip(".")]


class RunFolder(RunHooks):
    """One run on disk (see the module docstring). Make one with ``create`` (a new run) or ``resume``.

    ``save_every``: checkpoint every this many steps (0: only when interrupted). ``tensorboard``: also log every
    step's metrics to ``tensorboard/`` (needs the ``tensorboard`` package).
    """

    def __init__(self, path: str | os.PathLike, save_every: int = 0, tensorboard: bool = False) -> None:
        if save_every < 0:
            raise RunError(f"save_every must be >= 0 (0: checkpoint only on Ctrl-C); got {save_every}")
        self.path = Path(path)
        self.save_every = save_every
        self.resuming = False
        self._written = (0, 0)  # records and evaluations already in metrics.jsonl and evals.jsonl
        self._stop = False
        self.announced_interrupt = False  # after_step printed the one line Ctrl-C gets
        self.checkpoint_step: int | None = None  # the step of the checkpoint on disk (restored or written here)
        self._tensorboard = _summary_writer_class() if tensorboard else None
        self._writer: Any = None

    @classmethod
    def create(
        cls,
        path: str | os.PathLike,
        config: TrainConfig | MazeTrainConfig,
        *,
        extra: dict[str, Any] | None = None,
        overwrite: bool = False,
        save_every: int = 0,
        tensorboard: bool = False,
    ) -> RunFolder:
        """A new run folder holding ``config.json`` (``describe_config`` plus ``extra``) and ``env.json``. A folder
        that exists is an error unless ``overwrite`` (then it is emptied)."""
        run = cls(path, save_every, tensorboard)
        if run.path.exists() and any(run.path.iterdir()):
            if not overwrite:
                raise RunError(
                    f"run folder {run.path} exists: resume it with --resume {run.path}, or replace it with --overwrite"
                )
            shutil.rmtree(run.path)
        run.path.mkdir(parents=True, exist_ok=True)
        write_json(run.path / "config.json", {**describe_config(config), **(extra or {})})
        write_json(run.path / "env.json", environment())
        for name in ("metrics.jsonl", "evals.jsonl"):
            _write_jsonl(run.path / name, [])
        return run

    @classmethod
    def resume(
        cls,
        path: str | os.PathLike,
        config: TrainConfig | MazeTrainConfig,
        *,
        extra: dict[str, Any] | None = None,
        save_every: int = 0,
        tensorboard: bool = False,
    ) -> RunFolder:
        """The run folder at ``path``, to continue from its checkpoint with ``config``, which must be the one it
        was started with (the error names the first knob that differs)."""
        run = cls(path, save_every, tensorboard)
        stored = run.config()
        current = json.loads(json.dumps({**describe_config(config), **(extra or {})}, default=str))
        changed = _differences(stored, current)
        if changed:
            knob = changed[0]
            raise RunError(
                f"cannot resume {run.path}: {knob} differs from its config.json "
                f"({_lookup(stored, knob)!r} there, {_lookup(current, knob)!r} now)"
            )
        if not (run.path / CHECKPOINT / "training.pt").is_file():
            raise RunError(f"cannot resume {run.path}: missing checkpoint file {run.path / CHECKPOINT / 'training.pt'}")
        run.resuming = True
        return run

    def config(self) -> dict[str, Any]:
        """The run's ``config.json``."""
        file = self.path / "config.json"
        if not file.is_file():
            raise RunError(f"{self.path} is not a run folder: missing {file}")
        try:
            return json.loads(file.read_text())
        except json.JSONDecodeError as err:
            raise RunError(f"corrupted {file}: {err}") from None

    def task(self) -> Any:
        """The run's task, rebuilt from ``config.json``."""
        return build_task(self.config()["task"])

    # -- the hooks train calls -----------------------------------------------------------------------------------

    def start(self, state: TrainState) -> int:
        if not self.resuming:
            return 0
        step = self._restore(state)
        self.checkpoint_step = step
        _write_jsonl(self.path / "metrics.jsonl", state.history.records)  # drop what came after the checkpoint
        _write_jsonl(self.path / "evals.jsonl", state.history.evals)
        self._written = (len(state.history.records), len(state.history.evals))
        return step

    def log(self, history: History) -> None:
        for name, rows, done in (
            ("metrics.jsonl", history.records, self._written[0]),
            ("evals.jsonl", history.evals, self._written[1]),
        ):
            if len(rows) > done:
                with open(self.path / name, "a") as f:
                    f.write("".join(json.dumps(r) + "\n" for r in rows[done:]))
                    f.flush()
        if self._tensorboard is not None:
            self._log_to_tensorboard(history)
        self._written = (len(history.records), len(history.evals))

    def _log_to_tensorboard(self, history: History) -> None:
        """The records and evaluations not yet written, as scalars ``train/NAME`` and ``eval/NAME`` at their step."""
        if self._writer is None:
            assert self._tensorboard is not None
            # a resumed run drops the events logged after its checkpoint, so no step appears twice
            resumed_at = self.checkpoint_step if self.resuming else None
            purge = {"purge_step": resumed_at + 1} if resumed_at is not None else {}
            self._writer = self._tensorboard(log_dir=str(self.path / "tensorboard"), **purge)
        for prefix, rows, done in (
            ("train", history.records, self._written[0]),
            ("eval", history.evals, self._written[1]),
        ):
            for i, row in enumerate(rows[done:], start=done + 1):
                step = int(row.get("step", i))
                for name, value in row.items():
                    if name != "step":
                        self._writer.add_scalar(f"{prefix}/{name}", value, step)
        self._writer.flush()

    def after_step(self, step: int, state: TrainState) -> None:
        self.log(state.history)
        if self._stop or (self.save_every and step % self.save_every == 0):
            self.save_checkpoint(step, state)
        if self._stop:
            print(self.interrupted_message(), file=sys.stderr, flush=True)
            self.announced_interrupt = True
            raise KeyboardInterrupt

    def interrupted_message(self) -> str:
        """One line after Ctrl-C: where the last checkpoint is and how to continue, or that there is none."""
        if self.checkpoint_step is None:
            return (
                f"interrupted before the first checkpoint: {self.path} holds no step to resume from; "
                f"start again with --overwrite (or --save-every N to checkpoint as it goes)"
            )
        return (
            f"interrupted: checkpoint at step {self.checkpoint_step} in {self.path / CHECKPOINT}; "
            f"continue with: minirl train --resume {self.path}"
        )

    def finish(self, model: torch.nn.Module, state: TrainState) -> None:
        self.log(state.history)
        save_model(self.path, state.policy)  # the policy trained (``model`` may be the bare toy model in it)
        state.history.to_json(self.path / ".history.json")
        (self.path / ".history.json").replace(self.path / "history.json")
        _plot_curves(self.path / "curves.png", state.history, self.config())
        if self._writer is not None:
            self._writer.close()

    @contextlib.contextmanager
    def interrupts_deferred(self) -> Iterator[None]:
        """The first Ctrl-C lets the step finish, then checkpoints and raises KeyboardInterrupt (``after_step``);
        a second one interrupts at once. Only in the main thread (signals reach no other)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum, frame) -> None:
            if self._stop:
                raise KeyboardInterrupt
            self._stop = True

        previous = signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    # -- checkpoints ---------------------------------------------------------------------------------------------

    def save_checkpoint(self, step: int, state: TrainState) -> None:
        """``checkpoint/``: the policy, π_ref, the optimizer, the scheduler, the generators, the step, the History."""

        def write(tmp: Path) -> None:
            tmp.mkdir()
            torch.save(state.policy.state_dict(), tmp / "policy.pt")
            if state.ref_policy is not None:
                torch.save(state.ref_policy.state_dict(), tmp / "reference.pt")
            if state.value_model is not None:
                torch.save(state.value_model.state_dict(), tmp / "value.pt")
            training = {
                "step": step,
                "optimizer": state.optimizer.state_dict(),
                "scheduler": state.scheduler.state_dict() if state.scheduler is not None else None,
                "value_optimizer": None if state.value_optimizer is None else state.value_optimizer.state_dict(),
                "generators": [g.get_state() for g in state.generators],
                "global_rng": torch.get_rng_state(),
            }
            torch.save(training, tmp / "training.pt")
            state.history.to_json(tmp / "history.json")

        atomic_write(self.path / CHECKPOINT, write)
        self.checkpoint_step = step

    def _restore(self, state: TrainState) -> int:
        folder = self.path / CHECKPOINT
        training = load_torch(folder / "training.pt")
        state.policy.load_state_dict(load_torch(folder / "policy.pt"))
        if state.ref_policy is not None:
            state.ref_policy.load_state_dict(load_torch(folder / "reference.pt"))
        state.optimizer.load_state_dict(training["optimizer"])
        if state.value_model is not None:
            state.value_model.load_state_dict(load_torch(folder / "value.pt"))
            state.value_optimizer.load_state_dict(training["value_optimizer"])
        if state.scheduler is not None:
            state.scheduler.load_state_dict(training["scheduler"])
        for generator, saved in zip(state.generators, training["generators"], strict=True):
            generator.set_state(saved)
        torch.set_rng_state(training["global_rng"])
        try:
            saved_history = History.from_json(folder / "history.json")
        except (OSError, ValueError, TypeError) as err:
            raise RunError(f"missing or corrupted checkpoint file {folder / 'history.json'}: {err}") from None
        state.history.records[:] = saved_history.records
        state.history.evals[:] = saved_history.evals
        return int(training["step"])


def _summary_writer_class() -> Any:
    """``torch.utils.tensorboard.SummaryWriter``, or a one-line error naming the package it needs."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise RunError(
            "tensorboard: logging to TensorBoard needs the tensorboard package: pip install tensorboard"
        ) from None
    return SummaryWriter


def _lookup(tree: dict, dotted: str) -> Any:
    for key in dotted.split("."):
        tree = tree.get(key) if isinstance(tree, dict) else None  # pyright: ignore[reportAssignmentType]
    return tree


# ---- the trained model --------------------------------------------------------------------------------------


POLICY_FILE = "model.json"  # names the class that saved the model and loads it back (toy and maze policies)
OLDER_POLICIES = {"toy": "minirl.toy.policy:ToyPolicy", "maze": "minirl.maze_policy:MazePolicy"}  # before POLICY_FILE


def save_model(folder: Path, policy: Any) -> None:
    """A language model (anything with ``save_pretrained``) as ``model/``; any other policy saves itself
    (``policy.save(folder)``: ``ToyPolicy``, ``MazePolicy``) and names its class in ``model.json``."""
    save_pretrained = getattr(policy, "save_pretrained", None)
    if save_pretrained is None:
        policy.save(folder)
        return
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a bar for writing one shard is noise under the run's own output
    try:
        atomic_write(folder / "model", save_pretrained)
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def _policy_class(run: RunFolder) -> str:
    """``"module:Class"`` of the policy kept in ``run``: as its ``model.json`` names it, or for a run kept
    before policies named themselves, from what the folder holds."""
    spec = json.loads((run.path / POLICY_FILE).read_text()) if (run.path / POLICY_FILE).is_file() else {}
    if "policy" in spec:
        return spec["policy"]
    # older folders: the toy policy wrote model.json (its model's class and arguments), the maze's table did not
    return OLDER_POLICIES["toy" if spec else "maze"]


def load_run_policy(path: str | os.PathLike, device: str | torch.device | None = None) -> Policy | MazePolicy:
    """The trained policy kept in a run folder: a ``CausalLMPolicy`` from ``model/``; otherwise the class its
    ``model.json`` names loads itself (``ToyPolicy.load``, ``MazePolicy.load``) with the run's task."""
    run = RunFolder(path)
    config = run.config()
    if (run.path / "model").is_dir():
        from minirl.lm.models import load_policy

        return load_policy(run.path, device=device)
    if not (run.path / "model.pt").is_file():
        raise RunError(
            f"run folder {run.path} holds no trained model (no model/ and no model.pt): the run did not finish; "
            f"continue it with: minirl train --resume {run.path}"
        )
    module, _, name = _policy_class(run).partition(":")
    return getattr(importlib.import_module(module), name).load(run.path, build_task(config["task"]), device=device)


def _plot_curves(path: Path, history: History, config: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    fig = runs_figure({history.label: [history]}, config)
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    import matplotlib.pyplot as plt

    plt.close(fig)


# ---- reading kept runs back --------------------------------------------------------------------------------------


def find_runs(paths: list[str | os.PathLike]) -> list[Path]:
    """The run folders named by ``paths``: a run folder itself, or (a folder of runs, as ``compare --out`` makes)
    every run folder directly inside it, in name order."""
    if not paths:
        raise RunError("paths is empty: name at least one run folder or folder of run folders")
    found: list[Path] = []
    for path in map(Path, paths):
        if (path / "config.json").is_file():
            found.append(path)
            continue
        inside = sorted(p for p in path.iterdir() if (p / "config.json").is_file()) if path.is_dir() else []
        if not inside:
            raise RunError(f"{path} is neither a run folder nor a folder of run folders (no config.json in it)")
        found += inside
    return found


def _read_jsonl(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as err:
        raise RunError(f"missing or corrupted {path}: {err}") from None


def load_runs(paths: list[str | os.PathLike]) -> tuple[dict[str, list[History]], dict[str, Any]]:
    """``({label: [History per seed]}, the first run's config)`` from the run folders ``find_runs`` finds: each
    History rebuilt from metrics.jsonl and evals.jsonl (so an unfinished run counts too), labelled by its preset
    (the algorithm's name in config.json) and sorted by seed. Runs of different tasks are an error."""
    runs: dict[str, list[History]] = {}
    first: dict[str, Any] = {}
    for folder in find_runs(paths):
        config = RunFolder(folder).config()
        first = first or config
        if config.get("task") != first.get("task"):
            raise RunError(f"paths: {folder} trained on another task than the runs before it: plot them apart")
        label = str(config.get("preset", folder.name))
        history = History(label, int(config.get("seed", 0)), _read_jsonl(folder / "metrics.jsonl"))
        history.evals = _read_jsonl(folder / "evals.jsonl")
        if not history.records:
            raise RunError(f"{folder} has no step in its metrics.jsonl yet: nothing to plot")
        runs.setdefault(label, []).append(history)
    return {label: sorted(hs, key=lambda h: h.seed) for label, hs in runs.items()}, first


def runs_figure(runs: dict[str, list[History]], config: dict[str, Any]):
    """The figure of ``minirl train`` / ``compare`` (``plotting.training_figure``) of ``runs`` on the task of
    ``config`` (a run folder's config.json): ``runs_figure(*load_runs(paths))`` draws it again from kept runs,
    without training, one curve over seeds per label (the runs of ``minirl ladder --out``: the ladder's four
    panels, ``minirl.ladder.plot_ladder``). Returns the Figure."""
    if config.get("figure") == "ladder":  # minirl ladder --out: its own four panels
        from minirl.ladder import plot_ladder

        return plot_ladder(runs)
    from minirl.plotting import training_figure

    # the panels follow what the runs measured: a maze run logs its exact expected return (dynamic programming)
    maze = any("exact_return" in h.metrics for hs in runs.values() for h in hs)
    return training_figure(runs, config["task"]["class"].rpartition(":")[2], text="model" in config, maze=maze)

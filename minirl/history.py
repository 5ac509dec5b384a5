"""``History``: the per-step metrics of one training run, shared by every task and algorithm."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["History"]


@dataclass
class History:
    """A list of per-step records (dicts of floats) plus a few labels.

    ``history["reward"]`` is a numpy array over steps; ``history.steps`` the step numbers.
    Evaluation records (taken every few steps) live in ``history.evals`` and are read the
    same way with ``history.eval_metric("greedy_exact")``. ``notes``: lines the run said about itself (a
    ``minirl.diagnostics.cannot_learn`` verdict).
    """

    label: str = ""
    seed: int = 0
    records: list[dict[str, float]] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def log(self, **metrics: float) -> None:
        self.records.append({k: float(v) for k, v in metrics.items()})

    def log_eval(self, **metrics: float) -> None:
        self.evals.append({k: float(v) for k, v in metrics.items()})

    def __len__(self) -> int:
        return len(self.records)

    @property
    def metrics(self) -> list[str]:
        return list(self.records[0]) if self.records else []

    @property
    def steps(self) -> np.ndarray:
        return self["step"]

    def __getitem__(self, metric: str) -> np.ndarray:
        if self.records and metric not in self.records[0]:
            raise KeyError(f"no metric {metric!r} in this History; it has {self.metrics}")
        return np.array([r[metric] for r in self.records], dtype=float)

    def eval_metric(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values) of an evaluation metric."""
        if self.evals and metric not in self.evals[0]:
            raise KeyError(f"no eval metric {metric!r}; it has {list(self.evals[0])}")
        return (
            np.array([e["step"] for e in self.evals], dtype=float),
            np.array([e[metric] for e in self.evals], dtype=float),
        )

    def last(self, metric: str, n: int = 1) -> float:
        """Mean of the last ``n`` values of a per-step metric."""
        return float(self[metric][-n:].mean())

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(
            json.dumps(
                {
                    "label": self.label,
                    "seed": self.seed,
                    "records": self.records,
                    "evals": self.evals,
                    "notes": self.notes,
                }
            )
        )

    @classmethod
    def from_json(cls, path: str | Path) -> History:
        return cls(**json.loads(Path(path).read_text()))

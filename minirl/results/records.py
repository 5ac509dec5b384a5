"""Writing and reading records: ``Record`` (one measurement in the making, saved as ``results/<name>.json``),
``history_figures`` (a training run's figures for one), ``load``, ``summary_line`` and ``show``."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from minirl.results import speed
from minirl.results.provenance import _command_line, _LoadMeter, _now, git_commit, machine, results_path
from minirl.results.speed import _speed, calibration
from minirl.utils import atomic_write


class Record:
    """One measurement in the making: ``figures`` to fill, provenance noted at ``save``.

    Making the record first calibrates the machine (``calibrate``, ``CALIBRATION_SECONDS``), then starts the clock
    and the load meter; ``save`` writes ``{name, command, commit, dirty, date, duration_s, machine, load, seeds,
    figures}``, with the calibration in ``machine["calibration"]`` (``calibrate``'s keys, and ``others_busy``: the
    share of the cores other jobs used during it).
    """

    def __init__(
        self, name: str, *, command: str | None = None, seeds: list[int] | None = None, notes: str | None = None
    ) -> None:
        if not name or any(c in name for c in "/\\ ") and not name.endswith(".json"):
            raise ValueError(
                f"name must be a short file name like 'bench_lm' (or a path ending in .json); got {name!r}"
            )
        self.name = Path(name).stem
        self.target = name
        self.command = command or _command_line()
        self.seeds = list(seeds) if seeds is not None else None
        self.notes = notes
        self.figures: dict[str, Any] = {}
        # the machine's speed before the run loads it, and what other jobs took meanwhile (a busy core slows it);
        # the clock and the run's load meter start after it (speed.CALIBRATION_SECONDS is read now: the tests set it)
        meter = _LoadMeter()
        self._calibration = {**speed.calibrate(speed.CALIBRATION_SECONDS), "others_busy": meter.others_busy()}
        self._start = time.perf_counter()
        self._date = _now()
        self._load = _LoadMeter()
        # the code as it was when the measurement began (a fast-mode run then writes its notebooks' outputs)
        self._commit, self._dirty = git_commit()

    def as_dict(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "command": self.command,
            "commit": self._commit,
            "dirty": self._dirty,
            "date": self._date,
            "duration_s": round(time.perf_counter() - self._start, 1),
            "machine": {**machine(), "calibration": self._calibration},
            "load": {"others_busy": self._load.others_busy()},
            "seeds": self.seeds,
            "figures": _jsonable(self.figures),
        }
        if self.notes:
            out["notes"] = self.notes
        return out

    def save(self, path: str | Path | None = None) -> Path:
        """Write the record (atomically: a temporary file, then a rename) and return its path."""
        target = Path(path) if path is not None else results_path(self.target)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.as_dict(), indent=1, sort_keys=False) + "\n"

        def write(tmp: Path) -> None:
            tmp.write_text(text)
            os.chmod(tmp, 0o644)  # whatever the umask: a record is for everyone to read

        atomic_write(target, write)
        print(f"results: saved {_display(target)}", flush=True)
        return target


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _jsonable(value: Any) -> Any:
    """Numbers, strings, lists and dicts only: numpy and torch scalars become floats kept to 7 significant
    digits (a probability of 1e-14 stays 1e-14), arrays and tensors become lists, NaN and infinities None."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) > 0:  # numpy arrays, torch tensors
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if number != number or number in (float("inf"), float("-inf")):
        return None
    return float(f"{number:.7g}")


def history_figures(history, last: int = 5) -> dict[str, Any]:
    """What a training run measured, for a record: steps, training time and its split per step, throughput,
    the reward and all-equal groups over the ``last`` steps, and every evaluation (``history.evals``)."""
    import numpy as np

    out: dict[str, Any] = {"label": history.label, "seed": history.seed, "steps": len(history)}
    if len(history):
        metrics = history.metrics
        wall = float(history["wall_time"][-1])
        out["train_seconds"] = wall
        out["s_per_step"] = wall / len(history)
        for key, name in (
            ("gen_seconds", "gen_s_per_step"),
            ("update_seconds", "update_s_per_step"),
            ("tokens_per_second", "tokens_per_s"),
        ):
            if key in metrics:
                out[name] = float(np.mean(history[key]))
        if "reward" in metrics:
            out[f"reward_last{last}"] = float(np.mean(history["reward"][-last:]))
        if "zero_variance_groups" in metrics:
            out[f"zero_variance_groups_last{last}"] = float(np.mean(history["zero_variance_groups"][-last:]))
    out["evals"] = [dict(e) for e in history.evals]
    return out


def load(name: str) -> dict[str, Any]:
    """The record ``results/<name>.json`` (or a path), with a clear error when it is missing."""
    path = results_path(name)
    if not path.exists():
        raise FileNotFoundError(
            f"no results file {path}: measure it first (see RESULTS.md, 'How the figures are made')"
        )
    return json.loads(path.read_text())


def summary_line(data: Mapping[str, Any]) -> str:
    """Where a record came from, in one line: machine (with its calibration's speed, on a CPU record that has one),
    load, commit, date, command."""
    m = data.get("machine", {})
    cal = calibration(data)
    cpu = m.get("cpu") if cal is None else f"{m.get('cpu')}, {_speed(cal)}"
    device = m.get("gpu") or f"{m.get('cores')} CPU cores ({cpu})"
    load = (data.get("load") or {}).get("others_busy")
    busy = "" if load is None else (", idle" if load < 0.1 else f", other jobs used {load:.0%} of the cores")
    if (m.get("nice") or 0) < 0 and load is not None and load >= 0.1:
        busy += f" (this run at a higher priority, nice {m['nice']})"
    commit = (data.get("commit") or "?")[:7] + (" + uncommitted changes" if data.get("dirty") else "")
    return f"{device}{busy}; commit {commit}, {str(data.get('date', '?'))[:10]}; `{data.get('command', '?')}`"


def show(name: str, keys: list[str] | None = None) -> dict[str, Any]:
    """Print a record's provenance and figures (only ``keys`` of ``figures`` when given); returns the figures."""
    data = load(name)
    figures = data["figures"] if keys is None else {k: data["figures"][k] for k in keys}
    print(f"Recorded in results/{results_path(name).name}: {summary_line(data)}")
    if data.get("stale"):
        print(f"  ({data['stale']})")
    for key, value in figures.items():
        print(f"  {key}: {_plain(value)}")
    return figures


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {_plain(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_plain(v) for v in value) + "]"
    return str(value)

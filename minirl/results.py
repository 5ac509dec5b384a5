"""Measured figures, kept: one small JSON file per measurement in ``results/``.

Every figure the kit quotes (RESULTS.md's measured tables, a notebook's full-mode numbers) comes from one of
these files, and each file says how it was made:

- ``command``: the exact command line that measured it;
- ``commit`` (and ``dirty``: the tracked files with uncommitted changes when the measurement began), ``date`` (UTC);
- ``machine``: CPU model and cores, torch threads, GPU (if any), Python, torch, transformers and TRL versions,
  and ``calibration``: how fast the machine multiplied float32 matrices just before the measurement (GFLOP/s
  on so many threads, ``calibrate``), so a time can be scaled to another machine (``time_note``; records made
  before it have none);
- ``load``: how busy the machine was with *other* work during the measurement (``others_busy``: the share
  of all cores' time used by other processes; 0 = idle, 0.5 = one of two cores taken), so a timing made
  beside other jobs says so;
- ``seeds``, ``duration_s`` and ``figures`` (what was measured, as nested dicts of numbers and strings).

Writing one::

    record = Record("bench_lm", seeds=[0, 1, 2])    # starts the clock and the load meter
    record.figures["tiny"] = {"before": 0.85, "after": 0.99}
    record.save()                                   # results/bench_lm.json (or record.save(path))

The commands that measure write one with ``--save`` (``minirl bench``, ``bench --lm``, ``bench --trl``,
``ladder``, ``train``), and ``python -m minirl.results notebook solutions/NN_*.ipynb`` runs a notebook in
full mode and keeps the figures its cells ``record(...)`` (``--fast``: runs it in fast mode and stores its outputs,
as the notebooks are shipped). ``python -m minirl.results show NAME`` prints one;
The measured blocks of README and RESULTS.md are generated from these files (``python -m minirl.report``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

from minirl.utils import REPO_ROOT, atomic_write

__all__ = [
    "CALIBRATION_SECONDS",
    "RESULTS_DIR",
    "Record",
    "calibrate",
    "calibration",
    "expected_time",
    "full_mode",
    "git_commit",
    "history_figures",
    "load",
    "local_calibration",
    "machine",
    "notebook_banner",
    "record",
    "results_path",
    "show",
    "summary_line",
    "time_note",
]

RESULTS_DIR = REPO_ROOT / "results"
"""Where records live: ``results/`` at the repository root (``MINIRL_RESULTS`` moves it)."""

RECORD_ENV = "MINIRL_RECORD"
"""Set by ``python -m minirl.results notebook``: the scratch file where ``record(...)`` keeps a notebook's figures."""


def results_dir() -> Path:
    return Path(os.environ.get("MINIRL_RESULTS", RESULTS_DIR))


def results_path(name: str) -> Path:
    """``results/<name>.json`` (``name`` may also be a path ending in ``.json``)."""
    if name.endswith(".json"):
        return Path(name)
    return results_dir() / f"{name}.json"


# ---- provenance ---------------------------------------------------------------------------------------------


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_commit() -> tuple[str | None, list[str]]:
    """(HEAD's hash, the tracked files with uncommitted changes) of the checkout this package runs from.

    The records in ``results/`` do not count: a measurement never reads them, and a series of measurements in
    one checkout (notebooks 01 to 06 in full mode, say) writes one after another."""
    commit = _git("rev-parse", "HEAD")
    changed = _git("status", "--porcelain", "--untracked-files=no")
    paths = [line[3:] for line in (changed or "").splitlines() if line.strip()]
    return (commit.strip() if commit else None), [p for p in paths if not p.startswith(f"{RESULTS_DIR.name}/")]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(module: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """The machine a measurement ran on: CPU model and cores, torch threads, GPU, package versions."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "nice": os.nice(0) if hasattr(os, "nice") else None,  # below 0: ran ahead of other jobs
        "gpu": gpu,
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": _version("transformers"),
        "trl": _version("trl"),
    }


CALIBRATION_SECONDS = 1.0
"""How long a record's calibration runs (``calibrate``, when a ``Record`` is made); the tests shorten it."""

CALIBRATION_SIZE = 512
"""The calibration's matrices are ``CALIBRATION_SIZE × CALIBRATION_SIZE``: the size of a small transformer's
matrix products (a hidden size of a few hundred)."""

CALIBRATION_WARMUP = 3
"""Products run before the clock starts (thread pools, caches, the kernel's first call)."""


def _number(value: Any) -> TypeGuard[int | float]:
    """A finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def calibrate(seconds: float = 1.0, *, size: int = CALIBRATION_SIZE) -> dict[str, Any]:
    """How fast this machine multiplies float32 matrices, at torch's current thread count.

    After ``CALIBRATION_WARMUP`` products, ``C = A @ B`` with ``A``, ``B`` of shape ``[size, size]`` runs at least
    once and until ``seconds`` have passed; each product is ``2 size³`` floating-point operations, so

        gflops = 2 · size³ · products / elapsed_seconds / 10⁹

    Returns ``{"gflops", "threads", "size", "seconds"}`` (``seconds``: the time actually measured). The keys are
    always these; the value depends on the machine and on what else runs on it.
    """
    import torch

    if not (_number(seconds) and seconds >= 0):
        raise ValueError(f"seconds must be a finite number of seconds >= 0; got {seconds!r}")
    if not (isinstance(size, int) and size >= 1):
        raise ValueError(f"size must be a positive int (the matrices' side); got {size!r}")
    generator = torch.Generator().manual_seed(0)
    a = torch.rand(size, size, generator=generator)
    b = torch.rand(size, size, generator=generator)
    c = torch.empty(size, size)
    for _ in range(CALIBRATION_WARMUP):
        torch.mm(a, b, out=c)
    products, start = 0, time.perf_counter()
    while True:
        torch.mm(a, b, out=c)
        products += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    elapsed = max(elapsed, 1e-9)  # a clock that did not move: a huge figure rather than a division by zero
    return {
        "gflops": float(f"{2 * size**3 * products / elapsed / 1e9:.4g}"),
        "threads": torch.get_num_threads(),
        "size": size,
        "seconds": round(elapsed, 3),
    }


def calibration(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """A record's calibration (``machine["calibration"]``, see ``calibrate``), or None when it has none: the records
    made before calibrations were kept, or one whose figure is not a positive number."""
    found = (data.get("machine") or {}).get("calibration")
    if not isinstance(found, Mapping):
        return None
    gflops, threads = found.get("gflops"), found.get("threads")
    if not (_number(gflops) and gflops > 0):
        return None
    return {**found, "threads": threads if isinstance(threads, int) and threads >= 1 else None}


def _speed(cal: Mapping[str, Any]) -> str:
    """``115 GFLOP/s on 2 threads``."""
    threads = cal.get("threads")
    on = "" if threads is None else f" on {threads} thread{'s' if threads != 1 else ''}"
    return f"{cal['gflops']:.0f} GFLOP/s{on}"


class _LoadMeter:
    """The share of all cores' time that *other* processes used between ``start`` and ``stop``.

    From ``/proc/stat`` (busy time of every core) minus this process's own CPU time and that of its finished
    children (``getrusage``): 0.0 on an idle machine, 0.5 when another job kept one of two cores busy.
    None where ``/proc/stat`` does not exist.
    """

    def __init__(self) -> None:
        self.start = self._read()

    @staticmethod
    def _read() -> tuple[float, float, float] | None:
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        except (OSError, ValueError, IndexError):
            return None
        hz = os.sysconf("SC_CLK_TCK")
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        busy = (sum(fields[:8]) - idle) / hz  # user nice system idle iowait irq softirq steal
        own = sum(
            resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
            for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        )
        return busy, own, time.monotonic()

    def others_busy(self) -> float | None:
        end = self._read()
        if self.start is None or end is None:
            return None
        busy, own, elapsed = (e - s for e, s in zip(end, self.start))
        cores = os.cpu_count() or 1
        if elapsed <= 0:
            return None
        return round(min(max((busy - own) / (elapsed * cores), 0.0), 1.0), 3)


def _command_line() -> str:
    """The command line of this process as a person would type it: ``minirl ...``, ``python -m minirl.x ...``
    or ``python path/to/script.py ...`` (relative to the repository)."""
    argv = list(sys.argv) or ["python"]
    first = Path(argv[0])
    if first.name == "minirl":
        argv[0] = "minirl"
    elif first.suffix == ".py":
        resolved = first.resolve()
        package = REPO_ROOT / "minirl"
        if resolved.is_relative_to(package):
            module = ".".join(resolved.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__main__")
            # `python -m minirl.cli ...` is the `minirl` command (what a clean checkout of a commit runs)
            argv = ["minirl", *argv[1:]] if module == "minirl.cli" else ["python", "-m", module, *argv[1:]]
        else:
            shown = os.path.relpath(resolved, REPO_ROOT) if resolved.is_relative_to(REPO_ROOT) else argv[0]
            argv = ["python", shown, *argv[1:]]
    return shlex.join(argv)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


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
        # the clock and the run's load meter start after it
        meter = _LoadMeter()
        self._calibration = {**calibrate(CALIBRATION_SECONDS), "others_busy": meter.others_busy()}
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


# ---- notebooks ----------------------------------------------------------------------------------------------

_NOTEBOOK_FIGURES: dict[str, Any] = {}


def record(**figures: Any) -> None:
    """In a notebook: note figures of this run (e.g. ``record(accuracy_after=0.92)``).

    Under ``python -m minirl.results notebook ...`` (a full-mode run) they are kept in the notebook's results
    file; otherwise they are only remembered in this kernel. Values must be numbers, strings, lists or dicts.
    """
    _NOTEBOOK_FIGURES.update(_jsonable(figures))
    scratch = os.environ.get(RECORD_ENV)
    if scratch:
        Path(scratch).write_text(json.dumps(_NOTEBOOK_FIGURES, indent=1))


def notebook_record_name(notebook: str | Path, device: str = "cpu") -> str:
    """``notebook_08_full_cpu`` for ``solutions/08_*.ipynb`` run in full mode on a CPU."""
    number = Path(notebook).name.split("_", 1)[0]
    return f"notebook_{number}_full_{device}"


def notebook_banner(number: str) -> None:
    """Print, at the top of a notebook, the mode and device of the outputs below, and how long full mode takes
    and where its figures are kept (from its results record, when there is one).

    In the solution notebooks this cell is tagged ``nbval-check-output``: the test suite re-runs it and fails
    when the stored output no longer matches the record (the device is masked, see ``tests/nbval_sanitize.cfg``).
    """
    import torch

    fast = os.environ.get("MINIRL_FAST", "0") == "1"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"The outputs below: {'fast' if fast else 'full'} mode (MINIRL_FAST={'1' if fast else '0'}) on {device}.")
    found = False
    for kind in ("cpu", "cuda"):
        path = results_path(f"notebook_{number}_full_{kind}")
        if path.exists():
            found = True
            data = json.loads(path.read_text())
            print(
                f"Full mode on {_device_words(data)}: {data['duration_s'] / 60:.1f} min end to end "
                f"(results/{path.name})."
            )
    if not found:
        print("Full mode: no stored record yet (python -m minirl.results notebook solutions/<this notebook>).")


def _device_words(data: Mapping[str, Any]) -> str:
    m = data.get("machine", {})
    return m.get("gpu") or f"{m.get('cores')} CPU cores"


def full_mode(number: str, lines: Mapping[str, str], device: str = "cpu") -> None:
    """Print figures of this notebook's full-mode run, from its record ``results/notebook_NN_full_<device>.json``.

    ``lines`` maps a label to a format string over the recorded figures, e.g.
    ``{"hack rate after step 30": "{hack_rate_30:.0%}"}``. The first line says where the figures come from
    (machine, load, commit, date). Returns nothing, so the cell shows only the printed lines (use ``load`` for the
    figures themselves).

    The text of a notebook quotes full-mode figures only through such a cell, tagged ``nbval-check-output`` in
    the solution notebook, so a new record that changes a figure makes the test suite fail until the stored
    output (and the text quoting it) is regenerated.
    """
    path = results_path(f"notebook_{number}_full_{device}")
    if not path.exists():
        print(f"Full mode: no stored record yet (results/{path.name}).")
        return
    data = json.loads(path.read_text())
    figures = data["figures"]
    print(f"Full mode, recorded in results/{path.name} ({summary_line(data)}):")
    for label, fmt in lines.items():
        try:
            text = fmt.format(**figures)
        except KeyError as err:
            raise KeyError(f"results/{path.name} has no figure {err}; it has {sorted(figures)}") from None
        print(f"  {label}: {text}")


# ---- how long a notebook's cell takes here -------------------------------------------------------------------

_LOCAL_CALIBRATIONS: dict[int, dict[str, Any]] = {}


def local_calibration(threads: int | None = None) -> dict[str, Any]:
    """This machine's calibration (``calibrate(CALIBRATION_SECONDS)``) on ``threads`` torch threads (None: torch's
    current count; never more than the machine's cores), measured once per process and thread count, then kept.
    torch's thread count is restored afterwards."""
    import torch

    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive int or None; got {threads!r}")
    current = torch.get_num_threads()
    wanted = current if threads is None else min(threads, os.cpu_count() or 1)
    if wanted not in _LOCAL_CALIBRATIONS:
        torch.set_num_threads(wanted)
        try:
            _LOCAL_CALIBRATIONS[wanted] = calibrate(CALIBRATION_SECONDS)
        finally:
            torch.set_num_threads(current)
    return _LOCAL_CALIBRATIONS[wanted]


def _duration(seconds: float) -> str:
    """``45 s``, ``9.8 min``, ``20 min``, ``2.5 h``: whole seconds under two minutes, then minutes (one decimal
    under ten), then hours from two hours on."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 120:
        return f"{minutes:.1f} min" if minutes < 10 else f"{minutes:.0f} min"
    return f"{minutes / 60:.1f} h"


def expected_time(seconds: float, record: Mapping[str, Any], here: Mapping[str, Any] | None = None) -> str:
    """How long ``seconds`` measured on the record's machine would take on this one, e.g. ``about 20 min``:

        expected = seconds · recorded_gflops / here_gflops

    with ``recorded_gflops`` the record's calibration (``calibration(record)``) and ``here_gflops`` this machine's
    on as many threads (``here``: a calibration to use instead of ``local_calibration``). A rough guide: a run
    that is not all float32 matrix products, or a machine busy with other jobs, scales otherwise.

    Raises ValueError naming ``record`` when it has no calibration, ``seconds`` or ``here`` when they are not
    a time and a calibration.
    """
    if not (_number(seconds) and seconds >= 0):
        raise ValueError(f"seconds must be a number of seconds >= 0; got {seconds!r}")
    cal = calibration(record)
    if cal is None:
        raise ValueError("record has no calibration (machine['calibration']): it was made before records kept one")
    here = local_calibration(cal["threads"]) if here is None else here
    if not (_number(here.get("gflops")) and here["gflops"] > 0):
        raise ValueError(f"here must be a calibration with a positive 'gflops'; got {dict(here)!r}")
    return f"about {_duration(seconds * cal['gflops'] / here['gflops'])}"


def _recorded_seconds(data: Mapping[str, Any], key: str | None) -> float | None:
    """``figures[key]`` (``duration_s`` when ``key`` is None) when it is a time in seconds, else None."""
    value = data.get("duration_s") if key is None else (data.get("figures") or {}).get(key)
    return value if _number(value) and value >= 0 else None


def time_note(name: str, key: str | None, what: str) -> None:
    """In a notebook, before a long cell: print in one line how long it took in full mode on the machine of the
    record ``results/<name>.json`` and how long to expect on this one. For example::

        time_note("notebook_10_full_cpu", "rl_seconds", "The next cell trains GRPO")

    prints (say) ``The next cell trains GRPO: 9.8 min in full mode on the record's machine (2 CPU cores, 230 GFLOP/s on
    2 threads); this machine: 115 GFLOP/s on 2 threads, so expect about 20 min.`` The time is
    ``figures[key]`` (the record's ``duration_s`` when ``key`` is None), scaled by ``expected_time`` (this
    machine is calibrated once per process, about ``CALIBRATION_SECONDS``). Under fast mode (``MINIRL_FAST=1``)
    the line says so. A record without a calibration, a GPU record, a missing figure or a missing record is said
    in the line; it never raises for them. The line depends on the machine: never in a cell whose output is
    compared (``nbval-check-output``).
    """
    fast = os.environ.get("MINIRL_FAST", "0") == "1"
    line = _time_note_line(name, key, what, fast)
    print(line + (" This run is fast mode (MINIRL_FAST=1)." if fast else ""), flush=True)


def _time_note_line(name: str, key: str | None, what: str, fast: bool) -> str:
    path = results_path(name)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return f"{what}: no record results/{path.name} yet, so no full-mode time to quote."
    except (OSError, ValueError) as err:
        return f"{what}: results/{path.name} could not be read ({err}), so no full-mode time to quote."
    seconds = _recorded_seconds(data, key)
    if seconds is None:
        missing = "no duration_s" if key is None else f"no time in seconds under figures[{key!r}]"
        return f"{what}: results/{path.name} has {missing}, so no full-mode time to quote."
    m = data.get("machine") or {}
    cal = calibration(data)
    device = f"{m.get('cores')} CPU cores" + ("" if cal is None else f", {_speed(cal)}")
    recorded = f"{what}: {_duration(seconds)} in full mode on the record's machine ({m.get('gpu') or device})"
    if m.get("gpu"):
        return f"{recorded}; a GPU ran it, so this machine's CPU speed does not scale it."
    if cal is None:
        return f"{recorded}; the record has no calibration to scale it by."
    here = local_calibration(cal["threads"])
    estimate = expected_time(seconds, data, here)
    if fast:
        return f"{recorded}; this machine: {_speed(here)}, so {estimate} in full mode here."
    return f"{recorded}; this machine: {_speed(here)}, so expect {estimate}."


def _execute_notebook(path: Path, env: dict[str, str], timeout: int):
    """Run every cell of ``path`` in a fresh ``python3`` kernel with ``env`` added; returns the executed notebook."""
    from nbclient import NotebookClient

    from minirl.course import read_notebook

    nb = read_notebook(path)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(REPO_ROOT)}}
        ).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# tqdm's text bar ends in its timings: "desc:  40%|████      | 4/10 [00:01<00:02,  2.9it/s]", "7it [00:01, 5.1it/s]"
TQDM_LINE = re.compile(r"\[[\d:]+(<[\d:?]+)?,\s*[^\]]*/[^\]]*\]")


def _without_tqdm_lines(text: str) -> str:
    """``text`` (a stderr stream) without tqdm's redrawn bars: the pieces between carriage returns that are
    bars, and the blanks a closed bar (``leave=False``) leaves."""
    kept = []
    for line in text.splitlines(keepends=True):
        end = "\n" if line.endswith("\n") else ""
        pieces = line.rstrip("\n").split("\r")
        if len(pieces) > 1:  # a redrawn line: keep what is not a bar nor the blanks that wipe one
            pieces = [p for p in pieces if p.strip() and not TQDM_LINE.search(p)]
            if pieces:
                kept.append(pieces[-1] + end)
        elif not TQDM_LINE.search(line):
            kept.append(line)
    return "".join(kept)


def _without_run_state(nb):
    """The executed notebook without what changes every run and means nothing to a reader: per-cell execution
    timestamps, the notebook's stored widget state, and progress bars (tqdm's widgets, and its text bars on
    stderr, with their timings)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)
        if cell.get("cell_type") != "code":
            continue
        outputs = []
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind in ("display_data", "update_display_data") and _is_progress_display(output.get("data", {})):
                continue
            if kind == "stream":
                text = output.get("text", "")
                text = "".join(text) if isinstance(text, list) else text
                output["text"] = _without_tqdm_lines(text) if output.get("name") == "stderr" else text
                if not output["text"]:
                    continue
                previous = outputs[-1] if outputs else None
                if (
                    previous is not None
                    and previous.get("output_type") == "stream"
                    and (previous.get("name") == output.get("name"))
                ):  # the kernel splits one printed text into blocks wherever it flushed: keep one block
                    previous["text"] += output["text"]
                    continue
            outputs.append(output)
        cell["outputs"] = outputs
    return nb


def _is_progress_display(data: dict) -> bool:
    """A progress bar's display output: a widget (tqdm in JupyterLab), an empty display, or an HTML ``<progress>``
    bar (transformers' Trainer), which also carries the elapsed time."""
    return not data or WIDGET_VIEW in data or "<progress" in str(data.get("text/html", ""))


def run_notebooks_fast(notebooks: list[str | Path], timeout: int = 600) -> Path:
    """Execute notebooks in fast mode (``MINIRL_FAST=1``, as the tests run them), store their outputs in place
    (without timestamps or widget state), and keep how long each took in ``results/notebooks_fast.json``
    (merged with the times already there). Rebuild the learner notebooks afterwards (``python -m minirl.course
    build``)."""
    from minirl.course import normalise_solution, notebook_text

    rec = Record("notebooks_fast", command=_command_line())
    previous = results_path("notebooks_fast")
    if previous.exists():
        rec.figures.update(json.loads(previous.read_text()).get("figures", {}))
    for notebook in notebooks:
        path = Path(notebook)
        start = time.perf_counter()
        nb = _execute_notebook(path, {"MINIRL_FAST": "1"}, timeout)
        rec.figures[path.stem] = round(time.perf_counter() - start, 1)
        path.write_text(notebook_text(normalise_solution(_without_run_state(nb))), encoding="utf-8")
        print(f"  {path}: {rec.figures[path.stem]:.0f} s (fast mode), outputs stored", flush=True)
    return rec.save()


def run_notebook_full(notebook: str | Path, timeout: int = 7200) -> Path:
    """Execute a notebook in full mode (``MINIRL_FAST=0``, outputs not stored) and save what its cells
    ``record(...)`` as ``results/notebook_NN_full_<device>.json``, with the end-to-end time."""
    import torch

    path = Path(notebook)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rec = Record(notebook_record_name(path, device), command=_command_line())
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "figures.json"
        _execute_notebook(path, {"MINIRL_FAST": "0", RECORD_ENV: str(scratch)}, timeout)
        rec.figures = json.loads(scratch.read_text()) if scratch.exists() else {}
    rec.figures["notebook"] = path.name
    return rec.save()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minirl.results", description=(__doc__ or "").split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_show = sub.add_parser("show", help="print a record")
    p_show.add_argument("name")
    p_nb = sub.add_parser(
        "notebook",
        help="run notebooks in full mode and keep their recorded figures; with --fast, "
        "run them in fast mode and store their outputs",
    )
    p_nb.add_argument("paths", nargs="+")
    p_nb.add_argument("--timeout", type=int, default=7200, help="seconds per cell")
    p_nb.add_argument(
        "--fast",
        action="store_true",
        help="fast mode: store the outputs in the notebooks and keep the times in results/notebooks_fast.json",
    )
    args = parser.parse_args(argv)
    if args.command == "show":
        show(args.name)
        return 0
    if args.fast:
        run_notebooks_fast(args.paths, min(args.timeout, 1200))
        return 0
    for p in args.paths:
        start = time.perf_counter()
        print(f"running {p} in full mode ...", flush=True)
        run_notebook_full(p, args.timeout)
        print(f"  {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

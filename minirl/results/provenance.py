"""Where records live, and where a measurement came from: the commit, the machine, the load and the command line.

``RESULTS_DIR`` is ``results/`` at the repository root; the ``MINIRL_RESULTS`` environment variable moves it
(``results_dir``, read at every call). The rest is a record's provenance (``minirl.results.records.Record``
notes it): ``git_commit``, ``machine``, ``_LoadMeter`` (how busy other processes kept the cores), ``_command_line``
(the command as a person would type it) and ``_now`` (the UTC date).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from minirl.utils import REPO_ROOT

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
    """The machine a measurement ran on: CPU model and cores, whether the CPU multiplies bfloat16 in hardware,
    torch threads, GPU, package versions."""
    import torch

    from minirl.lm.cpu_decode import cpu_bfloat16_arithmetic

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    arithmetic = cpu_bfloat16_arithmetic()  # AMX, AVX-512 BF16 or none (emulated: slow); minirl.lm.cpu_decode
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "bfloat16_units": arithmetic == "matrix units",  # AMX: where ``cpu_bfloat16`` pays (cpu_has_bfloat16_units)
        "bfloat16_arithmetic": arithmetic,
        "torch_threads": torch.get_num_threads(),
        "nice": os.nice(0) if hasattr(os, "nice") else None,  # below 0: ran ahead of other jobs
        "gpu": gpu,
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": _version("transformers"),
        "trl": _version("trl"),
    }


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

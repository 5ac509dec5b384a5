"""How fast a machine computes, and how long a recorded run would take on this one.

- ``calibrate``: GFLOP/s of float32 matrix products at torch's thread count (a ``Record`` keeps one, made just
  before its measurement, in ``machine["calibration"]``; ``calibration`` reads it back);
- ``local_calibration``: this machine's, measured once per process and thread count;
- ``expected_time`` and ``time_note``: a recorded time scaled to this machine, for a notebook's long cells.

``CALIBRATION_SECONDS`` is read when a calibration runs (by ``local_calibration`` here and by
``minirl.results.records.Record``), so setting it on this module (the tests shorten it) takes effect everywhere.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from typing import Any, TypeGuard

from minirl.results.provenance import results_path

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
    """``figures[key]`` (``duration_s`` when ``key`` is None) when it is a time in seconds, else None. A dotted
    ``key`` reaches into nested figures: ``"arms.grpo.arm_seconds"`` is ``figures["arms"]["grpo"]["arm_seconds"]``."""
    if key is None:
        value = data.get("duration_s")
    else:
        value = data.get("figures") or {}
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    return value if _number(value) and value >= 0 else None


def time_note(name: str, key: str | None, what: str) -> None:
    """In a notebook, before a long cell: print in one line how long it took in full mode on the machine of the
    record ``results/<name>.json`` and how long to expect on this one. For example::

        time_note("notebook_10_full_cpu", "rl_seconds", "The next cell trains GRPO")

    prints (say) ``The next cell trains GRPO: 9.8 min in full mode on the record's machine (2 CPU cores, 230 GFLOP/s on
    2 threads); this machine: 115 GFLOP/s on 2 threads, so expect about 20 min.`` The time is
    ``figures[key]`` (the record's ``duration_s`` when ``key`` is None; a dotted key reaches into nested
    figures), scaled by ``expected_time`` (this
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

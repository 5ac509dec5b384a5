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
as the notebooks are shipped). ``python -m minirl.results show NAME`` prints one.
The measured blocks of README and RESULTS.md are generated from these files (``python -m minirl.report``).

The modules, from the bottom up:

- ``minirl.results.provenance``: where records live (``RESULTS_DIR``, ``results_path``) and where a measurement
  came from (``git_commit``, ``machine``, the load meter, the command line);
- ``minirl.results.speed``: how fast a machine computes (``calibrate``, ``calibration``, ``local_calibration``)
  and how long a recorded time takes here (``expected_time``, ``time_note``);
- ``minirl.results.records``: ``Record``, ``history_figures``, ``load``, ``summary_line``, ``show``;
- ``minirl.results.notebooks``: ``record``, ``notebook_banner``, ``full_mode``, and running a notebook for its
  record (``run_notebook_full``, ``run_notebooks_fast``).

Their names are re-exported here. A setting or a function is read from the module that holds it: to change one
(a test's ``monkeypatch.setattr``), set it there, e.g. ``minirl.results.speed.CALIBRATION_SECONDS``; setting the
copy re-exported here changes nothing. ``MINIRL_RESULTS`` (read at every call) moves ``results/``.
"""

from __future__ import annotations

import argparse
import time

from minirl.results.notebooks import (
    full_mode,
    notebook_banner,
    record,
    run_notebook_full,
    run_notebooks_fast,
)
from minirl.results.provenance import RESULTS_DIR, git_commit, machine, results_path
from minirl.results.records import Record, history_figures, load, show, summary_line
from minirl.results.speed import (
    CALIBRATION_SECONDS,
    calibrate,
    calibration,
    expected_time,
    local_calibration,
    time_note,
)

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

"""``minirl bench``: the acceptance benchmarks, measured on the machine they run on.

- ``minirl.bench.toy`` (``minirl bench``): the sorting tasks, the maze and the ladder;
- ``minirl.bench.lm`` (``minirl bench --lm``): the tiny model's and SmolLM2's recipes over seeds;
- ``minirl.bench.trl`` (``minirl bench --trl``): one run with minirl's loop and with TRL's ``GRPOTrainer``.

Each module is imported by name (``from minirl.bench.lm import run_lm_benchmark``): the language-model ones
load more than the toy one needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minirl.results import Record

__all__ = ["finish"]


def finish(record: Record, targets: dict[str, bool], save: str | None, quick: bool, out: str | None = None) -> int:
    """Print each target's PASS or FAIL, keep them in ``record`` (saved when ``save`` names a results file; also
    as ``out/record.json`` beside ``out/env.json`` when ``out`` names a folder) and return the exit status: 0
    when every target passed, or in a ``quick`` run (too short to judge them)."""
    record.figures["targets"] = targets
    print("\nSummary")
    for name, passed in targets.items():
        print(f"  {'PASS' if passed else 'FAIL'}  {name}")
    if save is not None:
        record.save()
    if out is not None:
        from pathlib import Path

        from minirl.runs import environment, write_json

        Path(out).mkdir(parents=True, exist_ok=True)
        write_json(Path(out) / "env.json", environment())
        record.save(Path(out) / "record.json")
    return 0 if quick or all(targets.values()) else 1

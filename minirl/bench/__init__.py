"""``minirl bench``: the acceptance benchmarks, measured on the machine they run on.

- ``minirl.bench.toy`` (``minirl bench``): the sorting tasks, the maze and the ladder;
- ``minirl.bench.lm`` (``minirl bench --lm``): the tiny model's and SmolLM2's recipes over seeds;
- ``minirl.bench.trl`` (``minirl bench --trl``): one run with minirl's loop and with TRL's ``GRPOTrainer``.

With ``--out DIR`` every training run a benchmark makes is kept as a run folder under DIR (``minirl.runs``:
its config, metrics, evaluations, curves and model), and DIR/record.json names the folder of each run it
reports, so a figure points at the run it came from (``minirl eval DIR/NAME``, ``minirl plot DIR/NAME``).

Each module is imported by name (``from minirl.bench.lm import run_lm_benchmark``): the language-model ones
load more than the toy one needs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minirl.hooks import RunHooks
    from minirl.results import Record

__all__ = [
    "add_recipe_probes",
    "check_out",
    "finish",
    "keep_run",
    "parse_knob",
    "parse_recipe_setting",
    "part_figures",
    "recipe_changes",
    "spread",
]


def add_recipe_probes(parser) -> None:
    """The flags that change a language-model benchmark's recipe for a probe (the record keeps the recipe run)."""
    parser.add_argument("--steps", type=int, default=None, help="RL steps instead of the recipe's (a probe)")
    parser.add_argument("--cpu-bf16", action="store_true", help="the recipe with cpu_bfloat16 (a probe)")
    parser.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="ALGO.KNOB=VALUE",
        help="change one algorithm's knob, e.g. grpo.delta_mode=centered_rewards or ppo.lam=1 (a probe; repeatable)",
    )
    parser.add_argument(
        "--recipe",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="change one LMRecipe setting, e.g. lr_schedule=cosine (a probe; repeatable)",
    )


def parse_knob(text: str) -> tuple[str, str, Any]:
    """``"grpo.delta_mode=centered_rewards"`` → ``("grpo", "delta_mode", "centered_rewards")``: the value read by
    the knob's type (``parse_knob_value``, as ``minirl train --set`` reads it); ``LMRecipe.algo_knobs``' triples."""
    from minirl.algorithms import parse_knob_value

    name, sep, value = text.partition("=")
    algo, dot, knob = name.partition(".")
    if not (sep and dot and algo and knob):
        raise ValueError(f"--knob: ALGO.KNOB=VALUE, e.g. grpo.delta_mode=centered_rewards; got {text!r}")
    try:
        return algo, knob, parse_knob_value(knob, value)
    except ValueError as err:
        raise ValueError(f"--knob {text!r}: {err}") from None


def parse_recipe_setting(text: str) -> tuple[str, Any]:
    """``"lr_schedule=cosine"`` → ``("lr_schedule", "cosine")``: an ``LMRecipe`` field and its value read by the
    field's type (``minirl.utils.read_as``); whether the value is one the field takes is the recipe's to say
    when it is built (``LMRecipe.with_``). ``algo_knobs`` has its own flag, ``--knob``."""
    from minirl.lm.recipes import LMRecipe
    from minirl.utils import read_field

    name, sep, value = text.partition("=")
    if not (sep and name):
        raise ValueError(f"--recipe: FIELD=VALUE, e.g. lr_schedule=cosine; got {text!r}")
    if name == "algo_knobs":
        raise ValueError("--recipe: algo_knobs has its own flag, --knob ALGO.KNOB=VALUE")
    try:
        return name, read_field(LMRecipe, name, value, skip=("algo_knobs",))
    except ValueError as err:
        raise ValueError(f"--recipe {text!r}: {err}") from None


def recipe_changes(args) -> dict[str, Any]:
    """The recipe fields that ``add_recipe_probes``' flags change, only those given: ``LMRecipe.with_``'s keywords.
    A field given twice (``--steps 10 --recipe steps=20``) is a ValueError."""
    steps = [("steps", args.steps)] if args.steps is not None else []
    bf16 = [("cpu_bfloat16", True)] if args.cpu_bf16 else []
    knobs = [("algo_knobs", tuple(parse_knob(k) for k in args.knob))] if args.knob else []
    settings = [*steps, *bf16, *knobs, *(parse_recipe_setting(t) for t in args.recipe)]
    names = [name for name, _ in settings]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"recipe field(s) {twice} given twice by the probe flags")
    return dict(settings)


def spread(values) -> dict[str, float]:
    """Mean, standard deviation (n − 1; 0 for one value), min and max of ``values`` over seeds."""
    import numpy as np

    a = np.asarray(values, dtype=float)
    return {
        "mean": float(a.mean()),
        "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
        "min": float(a.min()),
        "max": float(a.max()),
    }


def part_figures(record: Record, seeds, key: str | None = None, **settings: Any) -> tuple[list[int], dict[str, Any]]:
    """The seeds (at least one) and the figures a benchmark part fills: ``record.figures``, or its ``key`` entry when
    the part shares a record with others (``minirl bench --lm``), holding ``settings`` and the seeds."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds: give at least one seed")
    figures = record.figures if key is None else record.figures.setdefault(key, {})
    figures.update(settings, seeds=seeds)
    return seeds, figures


def check_out(out: str | os.PathLike | None) -> None:
    """``--out``: a new or empty folder (a benchmark's runs and record are never mixed with another's)."""
    if out is not None and Path(out).is_dir() and any(Path(out).iterdir()):
        raise ValueError(f"out: {out} exists and is not empty: remove it, or choose another --out")


def keep_run(out: str | os.PathLike | None, name: str, config: Any, extra: dict | None = None) -> RunHooks:
    """The run folder ``out/name`` for one benchmark run (``RunFolder.create``), or hooks that keep nothing
    when ``out`` is None."""
    from minirl.hooks import RunHooks
    from minirl.runs import RunFolder

    if out is None:
        return RunHooks()
    return RunFolder.create(Path(out) / name, config, extra=extra)


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
        from minirl.runs import environment
        from minirl.utils import write_json

        Path(out).mkdir(parents=True, exist_ok=True)
        write_json(Path(out) / "env.json", environment())
        record.save(Path(out) / "record.json")
    return 0 if quick or all(targets.values()) else 1

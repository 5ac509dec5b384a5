"""One benchmark, measured in several sittings (``--resume``): keep a stored record's arms, run only those it lacks.

The language-model benchmarks (notebook 10's ``reasoning_rl``, notebook 11's ``self_training``) take hours on 2 CPU
cores, longer than one sitting. Each saves its record after every arm; ``--resume`` reads it back, checks that it was
measured with the same model kind, recipes, budgets and mode (else the old arms and the new would not be one
experiment), keeps each earlier invocation's provenance in ``figures["earlier"]``, and re-makes a seed's warm start
only to check that it reaches the stored figures again: the arms it adds start where the stored ones did.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "PROVENANCE",
    "WARM_FIGURES",
    "index_runs",
    "keeper",
    "merge_seed",
    "resumed",
    "run_missing",
    "same_warm",
    "side_by_side",
    "stored_record",
]

PROVENANCE = ("command", "commit", "dirty", "date", "duration_s", "machine", "load")
"""What a resumed record keeps of each earlier invocation (``figures["earlier"]``)."""
WARM_FIGURES = ("sum3", "sum4", "sum4_format")
"""What a resumed seed's warm start must reach again: the arms it adds start from it."""
COMPARED = ("kind", "recipe", "recipes", "budgets", "quick")
"""The settings a stored record and a resuming run must share (those the part keeps)."""


def stored_record(name: str, resume: bool, save: str | None) -> dict[str, Any] | None:
    """The record saved under ``name`` when ``resume`` (None when there is none yet: the first sitting)."""
    from minirl.results import results_path

    if resume and save is None:
        raise ValueError("resume: give --save too (the record to continue and to save into)")
    path = results_path(name)
    return json.loads(path.read_text()) if resume and path.exists() else None


def _with_defaults(recipe: dict[str, Any]) -> dict[str, Any]:
    """A stored recipe with the settings added to ``LMRecipe`` since it was made, at their defaults (which change
    nothing measured)."""
    from minirl.lm.recipes import LMRecipe

    defaults = {f.name: f.default for f in dataclasses.fields(LMRecipe) if f.default is not dataclasses.MISSING}
    return {**defaults, **recipe}


def resumed(stored: dict[str, Any] | None, figures: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The runs of an earlier record of this part (its dict as saved) and its invocations' provenance, after
    checking it was measured with the settings (``COMPARED``) that ``figures`` holds now."""
    if stored is None:
        return [], []
    from minirl.results.records import _jsonable

    old = dict(stored["figures"])
    if "recipe" in old:
        old["recipe"] = _with_defaults(old["recipe"])
    if "recipes" in old:
        old["recipes"] = {name: _with_defaults(r) for name, r in old["recipes"].items()}
    now = json.loads(json.dumps(_jsonable(figures)))  # as a record keeps them (7 significant digits)
    differ = [k for k in COMPARED if k in now and old.get(k) != now[k]]
    if differ:
        raise ValueError(
            f"resume: the stored record was measured with other {', '.join(differ)} than this run's: its arms and "
            "these would not be one experiment; run without --resume (or save under another name)"
        )
    earlier = [*old.get("earlier", []), {k: stored.get(k) for k in PROVENANCE}]
    return list(old["runs"]), earlier


def side_by_side(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One record from several records of one part, each of other seeds, measured at the same time (a process a
    seed, side by side on one GPU): the first record (its dict as saved) with every record's runs, sorted by seed,
    and the others' provenance in ``figures["side_by_side"]``. The caller indexes the runs again (``index_runs``:
    seeds, arms, summary) and re-makes the targets.

    A ValueError when they were measured with other settings (``COMPARED``), share a seed, or were themselves
    measured in several sittings (``figures["earlier"]``: resume the combined record instead)."""
    if len(records) < 2:
        raise ValueError(f"records: give two or more to combine, got {len(records)}")
    first, *others = records
    out = json.loads(json.dumps(first))
    figures = out["figures"]
    runs, side = list(figures["runs"]), []
    for other in records:
        if other["figures"].get("earlier"):
            raise ValueError(f"records: {other.get('name')} was measured in several sittings; combine single ones")
    for other in others:
        theirs, earlier = resumed(other, figures)
        shared = {r["seed"] for r in runs} & {r["seed"] for r in theirs}
        if shared:
            raise ValueError(f"records: {other.get('name')} measured seeds {sorted(shared)} again")
        runs += theirs
        side.append({"name": other.get("name"), "seeds": [r["seed"] for r in theirs], **earlier[-1]})
    figures["runs"] = sorted(runs, key=lambda r: r["seed"])
    figures["side_by_side"] = side
    return out


def same_warm(seed: int, now: dict[str, Any], stored: dict[str, Any]) -> None:
    """A resumed seed's warm start reaches the stored figures, or a ValueError says the code or machine changed."""
    differ = {k: (now[k], stored[k]) for k in WARM_FIGURES if abs(now[k] - stored[k]) > 1e-6}  # 7 digits kept
    if differ:
        raise ValueError(
            f"resume: seed {seed}'s warm start now reaches {differ} (now, stored): the code or the machine changed "
            "since the stored arms were measured, so new arms would not start where they did; run without --resume"
        )


def merge_seed(runs: list[dict[str, Any]], out: dict[str, Any], **extra: Any) -> None:
    """``out`` (one seed's figures so far) into ``runs``, in place and sorted by seed: a seed already there keeps its
    stored arms and its stored warm start (the new one reached its figures), and gains ``out``'s arms and ``extra``."""
    i = next((i for i, r in enumerate(runs) if r["seed"] == out["seed"]), None)
    merged = {**(runs[i] if i is not None else {}), **out, **extra}
    if i is not None:
        if "warm" in runs[i]:
            merged["warm"] = runs[i]["warm"]
        runs[i] = merged
    else:
        runs.append(merged)
    runs.sort(key=lambda r: r["seed"])


def keeper(runs: list[dict[str, Any]], index: Callable[[], None], save: Callable[[], Any] | None, **extra: Any):
    """The ``after_arm`` of a part's ``run_seed``: merge the seed's figures so far into ``runs`` (``merge_seed``,
    with ``extra``), re-index the part's figures and save the record (``save``, when saving): a stopped run keeps
    what it measured."""

    def keep(out: dict[str, Any]) -> None:
        merge_seed(runs, out, **extra)
        index()
        if save is not None:
            save()

    return keep


def run_missing(
    seeds: Sequence[int],
    arms: Sequence[str],
    runs: list[dict[str, Any]],
    run_seed: Callable[[int, list[str], dict[str, Any] | None], Any],
) -> None:
    """For each seed, ``run_seed(seed, todo, done)`` on the arms in ``arms`` that its stored figures (``done``, in
    ``runs``; None for a new seed) lack; a seed that lacks none is not run at all."""
    for seed in seeds:
        done = next((r for r in runs if r["seed"] == seed), None)
        todo = [a for a in arms if done is None or a not in done]
        if todo:
            run_seed(seed, todo, done)


def index_runs(figures: dict[str, Any], arms: Sequence[str], summary: Callable[[list], Any]) -> list[int]:
    """The seeds and arms (of ``arms``, in their order) that ``figures["runs"]`` hold, so a stopped, resumed or
    combined run says what it measured, and ``figures["summary"]`` as ``summary(runs)``; returns the seeds (the
    record's own follow them)."""
    runs = figures["runs"]
    figures.update(seeds=[r["seed"] for r in runs], arms=[a for a in arms if any(a in r for r in runs)])
    figures["summary"] = summary(runs)
    return figures["seeds"]

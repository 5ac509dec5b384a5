"""Thinking vs answer-only GRPO on each problem family ("which form wins on which family, and why").

``minirl.bench.reasoning_rl`` measures notebook 10's arms on sums of single digits. This benchmark asks the
same question of the other two families of ``toy_envs.reasoning`` (word problems, and two-digit addition with
carries by default), on SmolLM2-135M-Instruct with the reasoning recipe of the device (``reasoning_recipe``).
For each seed and family, from a fresh copy of the model, each form (``thinking``: a scratchpad, then the
number; ``answer-only``: the number alone, with its own token budget) takes a supervised warm start on its own
demonstrations (the recipe's steps of worked solutions or of bare answers), then GRPO on the strict verifier for
``STEPS[form]`` steps: more for answer-only, whose replies are far cheaper to sample, so that it never gets less
compute than thinking. Every budget is a number of steps; the record keeps each stage's wall time.

Both forms are scored greedy on the same held-out problems (never drawn in training), after the warm start and
after GRPO, with their format rate and the share of replies the budget cut. Unlike the sums of notebook 10, the
warm start and GRPO see the same problem sizes here: the question is which form learns a family, not how far it
generalises.

    python -m minirl.bench.reasoning_families --seeds 0 1 --save      # results/bench_reasoning_families.json
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from minirl.bench import finish, spread
from minirl.bench.reasoning_rl import quick_recipe
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import model_kind, reasoning_recipe, sft_warm_start
from minirl.results import Record, history_figures
from minirl.train import evaluate, train
from toy_envs.reasoning import FAMILIES

__all__ = ["FORMS", "QUICK_SETTINGS", "SETTINGS", "check_targets", "run_family", "summarize"]

FORMS = {"thinking": True, "answer-only": False}
SETTINGS: dict[str, Any] = {
    "steps": {"thinking": 25, "answer-only": 100},  # GRPO steps of each form
    "families": ["word", "add"],
    "digits": 2,  # "add": digits per operand
}
QUICK_SETTINGS = {**SETTINGS, "steps": {"thinking": 2, "answer-only": 2}}


def _held_out(policy, task, n_eval: int) -> dict[str, float]:
    """Greedy accuracy, format rate and truncation on the task's first ``n_eval`` held-out problems."""
    ev = evaluate(policy, task, n_eval, sampled=False)
    return {k: ev[f"greedy_{k}"] for k in ("exact", "format", "truncated")}


def run_family(
    family: str,
    seed: int,
    settings: dict[str, Any] | None = None,
    device: str | None = None,
    progress: bool = True,
    quick: bool = False,
) -> dict[str, Any]:
    """Both forms on one family for one seed (see the module docstring): for each form, its base, warm-start and
    after-GRPO held-out figures, the warm start's steps and seconds, and the GRPO run's figures."""
    if family not in FAMILIES:
        raise ValueError(f"family: expected one of {FAMILIES}; got {family!r}")
    s = {**(QUICK_SETTINGS if quick else SETTINGS), **(settings or {})}
    kind = model_kind(SMOLLM2_ALIAS, device)
    recipes = {form: reasoning_recipe(kind, thinking) for form, thinking in FORMS.items()}
    recipes = {form: quick_recipe(r) if quick else r for form, r in recipes.items()}
    policy = recipes["thinking"].policy(SMOLLM2_ALIAS, device=device)
    trainable = [p for p in policy.parameters() if p.requires_grad]
    base = [p.detach().clone() for p in trainable]
    sizes = {"digits": s["digits"]} if family == "add" else {}
    out: dict[str, Any] = {"family": family, "seed": seed}
    for form, thinking in FORMS.items():
        recipe = recipes[form]
        with torch.no_grad():
            for p, w in zip(trainable, base, strict=True):
                p.copy_(w)
        task = recipe.reasoning_task(family, thinking=thinking, **sizes)
        policy.max_new_tokens = recipe.max_new_tokens
        fig: dict[str, Any] = {"base": _held_out(policy, task, recipe.eval_prompts)}
        start = time.perf_counter()
        warm = sft_warm_start(
            policy, task, recipe.sft_steps, recipe.sft_prompts_per_step or recipe.prompts_per_step,
            learning_rate=recipe.sft_learning_rate, seed=seed, threads=recipe.threads, progress=False,
        )  # fmt: skip
        fig["warm"] = {"steps": len(warm), "seconds": time.perf_counter() - start}
        fig["warm"].update(_held_out(policy, task, recipe.eval_prompts))
        config = recipe.train_config(task, seed=seed, steps=s["steps"][form], progress=progress)
        policy, history = train(config, policy)
        fig["run"] = {**history_figures(history), "notes": list(history.notes)}
        fig.update(_held_out(policy, task, recipe.eval_prompts))
        out[form] = fig
    return out


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """For each family: mean and spread over seeds of each form's held-out accuracy at each stage."""
    out: dict[str, Any] = {}
    for family in dict.fromkeys(r["family"] for r in runs):
        mine = [r for r in runs if r["family"] == family]
        out[family] = {
            f"{form}_{stage}": spread([r[form]["exact"] if stage == "rl" else r[form][stage]["exact"] for r in mine])
            for form in FORMS
            for stage in ("base", "warm", "rl")
        }
    return out


def check_targets(summary: dict[str, Any]) -> dict[str, bool]:
    """Thinking beats answer-only by at least 15 points, on the mean of each family."""
    return {
        f"{family}: thinking >= 15 points over answer-only": round(
            100 * (f["thinking_rl"]["mean"] - f["answer-only_rl"]["mean"]), 6
        )
        >= 15
        for family, f in summary.items()
    }


def _report(runs: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    print("\nThinking vs answer-only, greedy on held-out problems")
    for r in runs:
        parts = [f"{r['family']:5} seed {r['seed']}:"]
        for form in FORMS:
            f = r[form]
            parts.append(
                f"{form} {f['base']['exact']:.0%} -> warm {f['warm']['steps']} steps {f['warm']['seconds']:.0f} s "
                f"{f['warm']['exact']:.0%} -> GRPO {f['run']['steps']} steps {f['run'].get('train_seconds', 0):.0f} s "
                f"{f['exact']:.0%};"
            )
        print("  " + " ".join(parts))
    for family, f in summary.items():
        cells = [f"{key} {f[key]['mean']:.1%} ± {f[key]['std']:.1%}" for key in ("thinking_rl", "answer-only_rl")]
        print(f"  {family}, mean ± std over seeds: " + ", ".join(cells))


def run_families_benchmark(
    seeds: Sequence[int] = (0, 1),
    families: Sequence[str] | None = None,
    quick: bool = False,
    save: str | None = None,
    device: str | None = None,
) -> int:
    """Every family for every seed (seed by seed, so a stopped run keeps whole seeds), saved after each run when
    ``save`` names a results file; prints the table and the targets (``bench.finish``)."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds: give at least one seed")
    s = {**(QUICK_SETTINGS if quick else SETTINGS)}
    s["families"] = list(families if families is not None else s["families"])
    unknown = sorted(set(s["families"]) - set(FAMILIES))
    if unknown or not s["families"]:
        raise ValueError(f"families: expected some of {list(FAMILIES)}; got {s['families']}")
    record = Record(save or "bench_reasoning_families", seeds=list(seeds))
    runs: list[dict[str, Any]] = []
    record.figures.update(settings=s, runs=runs)
    bar = tqdm(total=len(seeds) * len(s["families"]), desc="families", disable=quick)
    for seed in seeds:
        for family in s["families"]:
            runs.append(run_family(family, seed, s, device, progress=not quick, quick=quick))
            record.figures["summary"] = summarize(runs)
            if save is not None:
                record.save()
            bar.update()
    bar.close()
    _report(runs, record.figures["summary"])
    return finish(record, check_targets(record.figures["summary"]), save, quick)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Thinking vs answer-only GRPO on each family.")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="the seeds to run (default 0 1)")
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=None, help="default: word add")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything (a smoke test)")
    parser.add_argument("--save", nargs="?", const="bench_reasoning_families", default=None, metavar="NAME")
    args = parser.parse_args(argv)
    return run_families_benchmark(args.seeds, args.families, args.quick, args.save)


if __name__ == "__main__":
    raise SystemExit(main())

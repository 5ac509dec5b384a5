"""Thinking vs answer-only GRPO on each problem family, at equal wall time (issue 22: "which wins on which
family, and why").

``minirl.bench.reasoning_rl`` measures notebook 10's arms on sums of single digits. This benchmark asks the
same question of the other two families of ``toy_envs.reasoning`` (word problems, and two-digit addition with
carries by default), on SmolLM2-135M-Instruct with the device's recipe and notebook 10's knobs
(``REASONING_CHANGES``). For each seed and family, from a fresh copy of the model:

- ``thinking``: a supervised warm start on worked solutions (``sft_steps`` steps of ``sft_prompts``), then
  GRPO with a scratchpad (``THINKING_TOKENS``) for ``rl_seconds`` on the strict verifier;
- ``answer-only``: a warm start on bare answers for as long as the worked one took, then answer-only GRPO
  (an ``answer_tokens`` budget) for as long as the thinking GRPO took: the same wall time in each part.

Both forms are scored greedy on the same ``n_eval`` held-out problems (never drawn in training), after the
warm start and after GRPO, with their format rate and the share of replies the budget cut. Unlike the sums of
notebook 10, the warm start and GRPO see the same problem sizes here: the question is which form learns a
family, not how far it generalises. The runs are time-budgeted: run it alone.

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
from minirl.bench.reasoning_rl import SETTINGS as SUM_SETTINGS
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import RECIPES, THINKING_TOKENS, model_kind, sft_warm_start
from minirl.results import Record, history_figures
from minirl.train import evaluate, train
from toy_envs.reasoning import FAMILIES

__all__ = ["FORMS", "QUICK_SETTINGS", "SETTINGS", "check_targets", "run_family", "summarize"]

FORMS = {"thinking": True, "answer-only": False}
SETTINGS: dict[str, Any] = {
    **{k: SUM_SETTINGS[k] for k in ("n_eval", "sft_steps", "sft_prompts", "sft_learning_rate", "rl_steps")},
    **{k: SUM_SETTINGS[k] for k in ("prompts", "group", "learning_rate", "eval_every", "answer_tokens")},
    "rl_seconds": 300.0,  # each GRPO run's training time (the answer-only one: as long as the thinking one took)
    "families": ["word", "add"],
    "digits": 2,  # "add": digits per operand
}
QUICK_SETTINGS = {
    **SETTINGS,
    **dict(n_eval=4, sft_steps=2, sft_prompts=2, rl_seconds=None, rl_steps=2, prompts=1, group=4, eval_every=2),
}


def _held_out(policy, task, n_eval: int) -> dict[str, float]:
    """Greedy accuracy, format rate and truncation on the task's first ``n_eval`` held-out problems."""
    ev = evaluate(policy, task, n_eval, sampled=False)
    return {k: ev[f"greedy_{k}"] for k in ("exact", "format", "truncated")}


def run_family(
    family: str, seed: int, settings: dict[str, Any] | None = None, device: str | None = None, progress: bool = True
) -> dict[str, Any]:
    """Both forms on one family for one seed (see the module docstring): for each form, its base, warm-start and
    after-GRPO held-out figures, the warm start's steps and seconds, and the GRPO run's figures."""
    if family not in FAMILIES:
        raise ValueError(f"family: expected one of {FAMILIES}; got {family!r}")
    s = {**SETTINGS, **(settings or {})}
    recipe = RECIPES[model_kind(SMOLLM2_ALIAS, device)]
    policy = recipe.policy(SMOLLM2_ALIAS, device=device)
    trainable = [p for p in policy.parameters() if p.requires_grad]
    base = [p.detach().clone() for p in trainable]
    sizes = {"digits": s["digits"]} if family == "add" else {}
    out: dict[str, Any] = {"family": family, "seed": seed}
    sft_seconds, rl_seconds = None, s["rl_seconds"]
    for form, thinking in FORMS.items():  # thinking first: answer-only matches its times
        with torch.no_grad():
            for p, w in zip(trainable, base, strict=True):
                p.copy_(w)
        task = recipe.reasoning_task(family, thinking=thinking, **sizes)
        policy.max_new_tokens = THINKING_TOKENS if thinking else s["answer_tokens"]
        fig: dict[str, Any] = {"base": _held_out(policy, task, s["n_eval"])}
        start = time.perf_counter()
        steps = s["sft_steps"] if sft_seconds is None else 10 * s["sft_steps"]
        warm = sft_warm_start(
            policy, task, steps, s["sft_prompts"], learning_rate=s["sft_learning_rate"], seed=seed,
            progress=False, max_seconds=sft_seconds,
        )  # fmt: skip
        fig["warm"] = {"steps": len(warm), "seconds": time.perf_counter() - start}
        fig["warm"].update(_held_out(policy, task, s["n_eval"]))
        config = recipe.train_config(
            task, seed=seed, steps=s["rl_steps"], prompts_per_step=s["prompts"], group_size=s["group"],
            learning_rate=s["learning_rate"], lr_schedule="constant", eval_prompts=s["n_eval"],
            eval_every=s["eval_every"], max_seconds=rl_seconds, progress=progress,
        )  # fmt: skip
        policy, history = train(config, policy)
        fig["run"] = {**history_figures(history), "notes": list(history.notes)}
        fig.update(_held_out(policy, task, s["n_eval"]))
        out[form] = fig
        if sft_seconds is None:
            sft_seconds = fig["warm"]["seconds"]
            rl_seconds = float(history["wall_time"][-1]) if rl_seconds is not None else None
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
    """Issue 22's "thinking beats answer-only by >= 15 points at equal wall time", on the mean of each family."""
    return {
        f"{family}: thinking >= 15 points over answer-only": f["thinking_rl"]["mean"] - f["answer-only_rl"]["mean"]
        >= 0.15
        for family, f in summary.items()
    }


def _report(runs: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    print("\nThinking vs answer-only at equal wall time, greedy on held-out problems")
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
    if not list(seeds):
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
            runs.append(run_family(family, seed, s, device, progress=not quick))
            record.figures["summary"] = summarize(runs)
            if save is not None:
                record.save()
            bar.update()
    bar.close()
    _report(runs, record.figures["summary"])
    return finish(record, check_targets(record.figures["summary"]), save, quick)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Thinking vs answer-only GRPO on each family, at equal wall time.")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="the seeds to run (default 0 1)")
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=None, help="default: word add")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything (a smoke test)")
    parser.add_argument("--save", nargs="?", const="bench_reasoning_families", default=None, metavar="NAME")
    args = parser.parse_args(argv)
    return run_families_benchmark(args.seeds, args.families, args.quick, args.save)


if __name__ == "__main__":
    raise SystemExit(main())

"""What a model can do on the reasoning tasks before any training: measure first (notebook 10's first table).

For each problem family (``toy_envs.reasoning``) answered with and without a scratchpad: greedy accuracy,
pass@1 and pass@k from ``samples`` replies per prompt at T = 1 (the unbiased estimator, ``minirl.pass_at_k``),
the rate of replies in the asked form, and the truncation rate (replies that hit the token budget before
their end-of-sequence token). A family where pass@k is near 0 gives RL nothing to reinforce; one where the
replies are truncated needs a larger budget before anything else.

    python -m minirl.bench.reasoning --save          # results/reasoning_base.json
    python -m minirl.bench.reasoning --families sum --n-numbers 4 --prompts 100 --save reasoning_base_sum4
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch
from tqdm.auto import tqdm

from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import ANSWER_TOKENS, THINKING_TOKENS, reasoning_recipe
from minirl.pass_at_k import pass_at_k
from minirl.results import Record
from toy_envs.reasoning import ReasoningTask

__all__ = ["BASE_SETTINGS", "measure_base"]

BASE_SETTINGS: dict[str, Any] = {
    "families": {"sum": {"n_numbers": 3}, "word": {}, "add": {"digits": 2}},
    "budget": {"answer only": ANSWER_TOKENS, "thinking": THINKING_TOKENS},  # max_new_tokens
    "prompts": 60,
    "samples": 8,
}


def _measure(policy, task: ReasoningTask, n_prompts: int, n_samples: int, seed: int) -> dict[str, float]:
    prompts = task.eval_prompts(n_prompts)
    greedy = policy.greedy(prompts)
    sampled = policy.sample(prompts, n_samples, temperature=1.0, generator=torch.Generator().manual_seed(seed))
    correct = task.is_correct(prompts, sampled.answers)  # [batch, trial]
    c = correct.sum(dim=1)
    return {
        "greedy": float(task.is_correct(prompts, greedy.answers).float().mean()),
        "pass@1": float(pass_at_k(n_samples, c, 1).mean()),
        f"pass@{n_samples}": float(pass_at_k(n_samples, c, n_samples).mean()),
        "format": float(task.format_ok(prompts, sampled.answers).float().mean()),
        "truncated": float(sampled.truncated.float().mean()),
        "greedy_truncated": float(greedy.truncated.float().mean()),
        "example": greedy.answers[0][0],
    }


def measure_base(
    model: str = SMOLLM2_ALIAS, settings: dict[str, Any] | None = None, seed: int = 0, progress: bool = True
) -> dict[str, Any]:
    """``{family: {"answer only" | "thinking": figures}}`` for the base ``model`` with the CPU reasoning recipe's
    prompt (``reasoning_recipe``: one worked example, the task's system message), ``settings`` as
    ``BASE_SETTINGS``; each prompt as the model reads it under ``"prompt"``."""
    s = {**BASE_SETTINGS, **(settings or {})}
    recipe = reasoning_recipe("pretrained")
    policy = recipe.policy(model, seed=seed, device="cpu")
    table: dict[str, Any] = {}
    jobs = [(f, mode) for f in s["families"] for mode in s["budget"]]
    for family, mode in tqdm(jobs, desc="base model", disable=not progress):
        task = recipe.reasoning_task(family, thinking=mode == "thinking", **s["families"][family])
        policy.max_new_tokens = s["budget"][mode]
        start = time.perf_counter()
        figures = _measure(policy, task, s["prompts"], s["samples"], seed)
        figures["prompt"] = policy.render(task.eval_prompts(1)[0])
        table.setdefault(family, {})[mode] = {**figures, "seconds": time.perf_counter() - start}
    return {"settings": s, "table": table}


def _print(result: dict[str, Any]) -> None:
    n = result["settings"]["samples"]
    print(f"{'family':6} {'mode':12} greedy  pass@1  pass@{n}  format  truncated  seconds  greedy reply to the first")
    for family, modes in result["table"].items():
        for mode, f in modes.items():
            print(
                f"{family:6} {mode:12} {f['greedy']:6.1%} {f['pass@1']:6.1%} {f[f'pass@{n}']:6.1%}  "
                f"{f['format']:6.1%}  {f['truncated']:8.1%}  {f['seconds']:7.0f}  {f['example']!r}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure a base model on the reasoning tasks (toy_envs.reasoning).")
    parser.add_argument("--model", default=SMOLLM2_ALIAS)
    parser.add_argument("--prompts", type=int, default=BASE_SETTINGS["prompts"])
    parser.add_argument("--samples", type=int, default=BASE_SETTINGS["samples"])
    parser.add_argument("--families", default=",".join(BASE_SETTINGS["families"]), help="comma-separated families")
    parser.add_argument("--n-numbers", type=int, default=None, help="numbers in a sum (default: the settings')")
    parser.add_argument("--save", nargs="?", const="reasoning_base", default=None, metavar="NAME")
    args = parser.parse_args(argv)
    record = Record(args.save, seeds=[0]) if args.save else None
    families = {}
    for name in args.families.split(","):
        if name not in BASE_SETTINGS["families"]:
            parser.error(f"--families: unknown family {name!r}; known: {sorted(BASE_SETTINGS['families'])}")
        families[name] = dict(BASE_SETTINGS["families"][name])
    if args.n_numbers is not None and "sum" in families:
        families["sum"]["n_numbers"] = args.n_numbers
    result = measure_base(args.model, {"prompts": args.prompts, "samples": args.samples, "families": families})
    _print(result)
    if record is not None:
        record.figures.update({"model": args.model, **result})
        record.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

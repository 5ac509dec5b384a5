"""What a model can do on the reasoning tasks before any training: measure first (notebook 10's first table).

For each problem family (``toy_envs.reasoning``) answered with and without a scratchpad: greedy accuracy,
pass@1 and pass@k from ``samples`` replies per prompt at T = 1 (the unbiased estimator, ``minirl.pass_at_k``),
the rate of replies in the asked form, and the truncation rate (replies that hit the token budget before
their end-of-sequence token). A family where pass@k is near 0 gives RL nothing to reinforce; one where the
replies are truncated needs a larger budget before anything else.

    python -m minirl.bench.reasoning --save          # results/reasoning_base.json
    python -m minirl.bench.reasoning --families sum4 --prompts 100      # one kind of problem, more prompts

``--prompt-options`` asks what a 4-number question's prompt should show (``measure_prompts``): a worked 4-number
example, a 3-number one, or none; for each, the base model and the reasoning recipe's warm start on worked
3-number sums, measured on held-out 3- and 4-number sums:

    python -m minirl.bench.reasoning --prompt-options --save reasoning_prompts
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import torch
from tqdm.auto import tqdm

from minirl.evaluate import evaluate
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import ANSWER_TOKENS, THINKING_TOKENS, reasoning_recipe
from minirl.pass_at_k import pass_at_k
from minirl.results import Record
from toy_envs.reasoning import ReasoningTask

__all__ = ["BASE_SETTINGS", "PROMPT_OPTIONS", "measure_base", "measure_prompts"]

BASE_SETTINGS: dict[str, Any] = {
    "families": {  # a name and the ReasoningTask knobs of its problems
        "sum3": {"family": "sum", "n_numbers": 3},
        "sum4": {"family": "sum", "n_numbers": 4},
        "word": {"family": "word"},
        "add": {"family": "add", "digits": 2},
    },
    "budget": {"answer only": ANSWER_TOKENS, "thinking": THINKING_TOKENS},  # max_new_tokens
    "prompts": 60,
    "samples": 8,
}


def _measure(policy, task: ReasoningTask, n_prompts: int, n_samples: int, seed: int) -> dict[str, Any]:
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
    jobs = [(name, mode) for name in s["families"] for mode in s["budget"]]
    for family, mode in tqdm(jobs, desc="base model", disable=not progress):
        task = recipe.reasoning_task(thinking=mode == "thinking", **s["families"][family])
        policy.max_new_tokens = s["budget"][mode]
        start = time.perf_counter()
        figures = _measure(policy, task, s["prompts"], s["samples"], seed)
        figures["prompt"] = policy.render(task.eval_prompts(1)[0])
        table.setdefault(family, {})[mode] = {**figures, "seconds": time.perf_counter() - start}
    return {"settings": s, "table": table}


PROMPT_OPTIONS: dict[str, dict[str, Any]] = {
    "a worked 4-number example": {"example_numbers": 4},
    "a worked 3-number example": {"example_numbers": 3},
    "no example": {"few_shot": 0},
}
"""What a 4-number question's prompt shows before the question (``ReasoningTask`` knobs); the 3-number prompts of
the warm start show a 3-number example, or none with ``few_shot = 0``."""


def measure_prompts(model: str = SMOLLM2_ALIAS, seed: int = 0, progress: bool = True) -> dict[str, Any]:
    """For each of ``PROMPT_OPTIONS``, from the base model: its greedy accuracy on the held-out 4-number sums, then
    the reasoning recipe's warm start (``reasoning_recipe("pretrained")``, on worked 3-number sums) and the greedy
    accuracy on held-out 3- and 4-number sums after it, with the first greedy replies and the prompt as the model
    reads it."""
    recipe = reasoning_recipe("pretrained")
    policy = recipe.policy(model, seed=seed, device="cpu")
    trainable = [p for p in policy.parameters() if p.requires_grad]
    base = [p.detach().clone() for p in trainable]
    out: dict[str, Any] = {}
    for option, knobs in tqdm(PROMPT_OPTIONS.items(), desc="prompt options", disable=not progress):
        with torch.no_grad():
            for p, w in zip(trainable, base, strict=True):
                p.copy_(w)
        three = recipe.reasoning_task("sum", n_numbers=3, few_shot=knobs.get("few_shot", recipe.few_shot))
        four = recipe.reasoning_task("sum", n_numbers=4, **knobs)
        before = evaluate(policy, four, recipe.eval_prompts, sampled=False)["greedy_exact"]
        start = time.perf_counter()
        recipe.warm_start(policy, three, seed=seed, progress=False)
        seconds = time.perf_counter() - start
        after = {n: evaluate(policy, t, recipe.eval_prompts, sampled=False) for n, t in ((3, three), (4, four))}
        out[option] = {
            "base4": before,
            "warm_seconds": seconds,
            **{f"warm{n}": a["greedy_exact"] for n, a in after.items()},
            "warm4_truncated": after[4]["greedy_truncated"],
            "examples": [r[0] for r in policy.greedy(four.eval_prompts(3)).answers],
            "prompt": policy.render(four.eval_prompts(1)[0]),
        }
    return {"recipe": dataclasses.asdict(recipe), "n_eval": recipe.eval_prompts, "options": out}


def _print(result: dict[str, Any]) -> None:
    n = result["settings"]["samples"]
    print(f"{'problems':8} {'mode':12} greedy  pass@1  pass@{n}  format  truncated  seconds  greedy reply to the first")
    for family, modes in result["table"].items():
        for mode, f in modes.items():
            print(
                f"{family:8} {mode:12} {f['greedy']:6.1%} {f['pass@1']:6.1%} {f[f'pass@{n}']:6.1%}  "
                f"{f['format']:6.1%}  {f['truncated']:8.1%}  {f['seconds']:7.0f}  {f['example']!r}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure a base model on the reasoning tasks (toy_envs.reasoning).")
    parser.add_argument("--model", default=SMOLLM2_ALIAS)
    parser.add_argument("--prompts", type=int, default=BASE_SETTINGS["prompts"])
    parser.add_argument("--samples", type=int, default=BASE_SETTINGS["samples"])
    parser.add_argument("--families", default=",".join(BASE_SETTINGS["families"]), help="comma-separated families")
    parser.add_argument("--prompt-options", action="store_true", help="what a 4-number prompt should show")
    parser.add_argument("--save", nargs="?", const="reasoning_base", default=None, metavar="NAME")
    args = parser.parse_args(argv)
    record = Record(args.save, seeds=[0]) if args.save else None
    if args.prompt_options:
        result = measure_prompts(args.model)
        for option, f in result["options"].items():
            after = f"3 numbers {f['warm3']:.0%}, 4 numbers {f['warm4']:.0%}"
            print(f"{option:26} base {f['base4']:.0%} -> warm start: {after}")
        if record is not None:
            record.figures.update({"model": args.model, **result})
            record.save()
        return 0
    families = {}
    for name in args.families.split(","):
        if name not in BASE_SETTINGS["families"]:
            parser.error(f"--families: unknown family {name!r}; known: {sorted(BASE_SETTINGS['families'])}")
        families[name] = dict(BASE_SETTINGS["families"][name])
    result = measure_base(args.model, {"prompts": args.prompts, "samples": args.samples, "families": families})
    _print(result)
    if record is not None:
        record.figures.update({"model": args.model, **result})
        record.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``minirl bench --lm``: the language-model benchmark, measured on the machine it runs on.

1. The tiny model (~1M parameters, built here) on text sorting: a supervised warm start, then GRPO with
   the one loop; seconds per step (generation / update), response tokens per second, held-out greedy
   accuracy before and after (target: >= 95%).
2. SmolLM2-135M-Instruct (the shipped GGUF file) on text sorting of 3 single-digit numbers: held-out greedy
   accuracy on 200 prompts before and after GRPO within a time budget (target: >= 90% within 20 minutes on
   2 CPU cores), seconds per step split into generation and update, peak memory; and its base accuracy on
   4 numbers (expect little: the base model almost never gets it right, so RL has nothing to amplify).
"""

from __future__ import annotations

import resource
import time

import torch

from minirl.lm_train import RUN_DEFAULTS, lm_algorithm, make_lm_policy, model_kind, recipe_task, sft_warm_start
from minirl.train import TrainConfig, evaluate, train

__all__ = ["run_lm_benchmark"]

HELD_OUT = 200


def _peak_memory_gb(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.max_memory_allocated(device) / 2**30:.1f} GB GPU"
    return f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GB RSS"


def _greedy(policy, task, n: int) -> tuple[float, float]:
    ev = evaluate(policy, task, n, sampled=False)
    return ev["greedy_exact"], ev.get("greedy_format", float("nan"))


def _run(name: str, task, run: dict, steps: int, max_seconds: float | None, eval_prompts: int, seed: int = 0):
    start = time.perf_counter()
    policy = make_lm_policy(name, seed=seed, max_new_tokens=run["max_new_tokens"],
                            trainable_layers=run["trainable_layers"])
    load_seconds = time.perf_counter() - start
    sft_seconds = 0.0
    if run["sft_steps"]:
        t = time.perf_counter()
        sft_warm_start(policy, task, run["sft_steps"], run["prompts_per_step"], run["sft_learning_rate"], seed=seed,
                       threads=run["threads"], progress=False)
        sft_seconds = time.perf_counter() - t
    before = _greedy(policy, task, eval_prompts)
    config = TrainConfig(task=task, algo=lm_algorithm("grpo", kl_coef=run["kl_coef"]), steps=steps, seed=seed,
                         prompts_per_step=run["prompts_per_step"], group_size=run["group_size"],
                         learning_rate=run["learning_rate"], eval_every=0, eval_prompts=eval_prompts,
                         eval_sampled=False, threads=run["threads"], max_seconds=max_seconds, progress=True)
    policy, history = train(config, policy)
    after = history.evals[-1]["greedy_exact"], history.evals[-1].get("greedy_format", float("nan"))
    return policy, history, {"load_s": load_seconds, "sft_s": sft_seconds, "before": before, "after": after,
                             "memory": _peak_memory_gb(policy.device)}


def _report(title: str, history, facts: dict) -> None:
    steps = len(history)
    print(f"\n{title}")
    print(f"  load {facts['load_s']:.1f} s; supervised warm start {facts['sft_s']:.0f} s")
    print(f"  held-out greedy accuracy {facts['before'][0]:.1%} -> {facts['after'][0]:.1%} "
          f"(answer in the asked form {facts['before'][1]:.0%} -> {facts['after'][1]:.0%})")
    print(f"  {steps} GRPO steps in {history['wall_time'][-1] / 60:.1f} min: "
          f"{history['wall_time'][-1] / steps:.2f} s/step = {history['gen_seconds'].mean():.2f} s generation + "
          f"{history['update_seconds'].mean():.2f} s update; {history['tokens_per_second'].mean():.0f} response "
          f"tokens/s; peak memory {facts['memory']}")


def run_lm_benchmark(quick: bool = False, minutes: float = 20.0) -> int:
    """Run both parts; returns 0 when the targets are met (always 0 with ``quick``)."""
    tiny = RUN_DEFAULTS["tiny"]
    small = {**tiny, "sft_steps": 10, "prompts_per_step": 4, "group_size": 4} if quick else tiny
    task = recipe_task("tiny")
    _, h_tiny, f_tiny = _run("tiny", task, small, 3 if quick else tiny["steps"], None, 20 if quick else HELD_OUT)
    _report(f"1. Tiny model (~1M parameters), text sorting of 3 numbers 0-9: {small['sft_steps']} supervised steps, "
            f"then GRPO (target: >= 95% held-out greedy accuracy)", h_tiny, f_tiny)

    kind = model_kind("smollm2-135m")                # the GPU recipe when CUDA is available
    pre = RUN_DEFAULTS[kind]
    run = {**pre, "prompts_per_step": 2, "group_size": 2, "max_new_tokens": 8} if quick else pre
    task3 = recipe_task(kind)
    # The recipe's steps (its cosine schedule decays to 0 at the last), stopped early at the time budget.
    steps, budget, n_eval = (2, None, 4) if quick else (pre["steps"], 60.0 * minutes, HELD_OUT)
    policy, h_smol, f_smol = _run("smollm2-135m", task3, run, steps, budget, n_eval)
    _report(f"2. SmolLM2-135M-Instruct, text sorting of 3 numbers 0-9, {pre['few_shot']}-shot prompt, GRPO for at "
            f"most {minutes:.0f} min (target: >= 90% held-out greedy accuracy)", h_smol, f_smol)
    task4 = recipe_task(kind, n_numbers=4)
    del policy
    base4 = _greedy(make_lm_policy("smollm2-135m", max_new_tokens=run["max_new_tokens"] + 3), task4, n_eval)
    print(f"  4 numbers, the base model: held-out greedy accuracy {base4[0]:.1%} (form {base4[1]:.0%})")

    ok = {"tiny >= 95%": f_tiny["after"][0] >= 0.95,
          f"SmolLM2 >= 90% in {minutes:.0f} min": f_smol["after"][0] >= 0.90}
    print("\nSummary")
    for name, passed in ok.items():
        print(f"  {'PASS' if passed else 'FAIL'}  {name}")
    return 0 if quick or all(ok.values()) else 1

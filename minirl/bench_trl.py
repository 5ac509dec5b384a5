"""``minirl bench --trl``: one GRPO run with minirl's loop and with TRL's ``GRPOTrainer``, side by side.

Both sides start from the same weights, saved to a folder, and share one setting. For the tiny model
those weights are the state after a short supervised warm start, so that rewards vary from the first
step. The shared setting:

- the tokenizer, the task and its reward (``text_task_reward``);
- the group size, the prompts per step and the response budget;
- the learning rate and its cosine schedule, Adam with no weight decay, and gradient clipping at 1;
- the loss (``lm_algorithm("grpo", kl_coef=0)`` and its ``grpo_config_kwargs``);
- the steps, the seed, and the torch threads.

Each side runs in a process of its own, so each reports its own peak memory. Printed: seconds per step,
response tokens per second, peak memory, the mean reward of the last steps, held-out greedy accuracy
after training (minirl's ``evaluate`` on both models), and the ratios. The prompts each side draws
differ; so do the responses.

Targets (issue 10): on the tiny model minirl takes at most half of TRL's seconds per step, with a reward
no worse; on SmolLM2-135M it is no slower than TRL.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

__all__ = ["run_trl_benchmark"]

# The tiny model: 300 supervised steps first (~70% held-out greedy accuracy), then 30 GRPO steps each side.
TINY = dict(model="tiny", sft_steps=300, steps=30, prompts_per_step=8, group_size=8, max_new_tokens=10,
            learning_rate=3e-4, threads=1, eval_prompts=200, trainable_layers=None)
# SmolLM2 with the CPU recipe's batch and trainable blocks, a few steps each side (speed only).
SMOLLM2 = dict(model="smollm2-135m", sft_steps=0, steps=3, prompts_per_step=8, group_size=8, max_new_tokens=10,
               learning_rate=1e-4, threads=None, eval_prompts=50, trainable_layers=10)
LAST = 5  # the reward compared is the mean of the last LAST steps


def _task():
    from minirl.lm_train import recipe_task

    return recipe_task("pretrained")  # the CPU recipe's prompt: one worked example, a short system message


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _config(s: dict[str, Any], seed: int):
    """The one ``TrainConfig`` both sides run (TRL's through ``grpo_trainer``)."""
    from minirl.lm_train import lm_algorithm
    from minirl.train import TrainConfig

    return TrainConfig(task=_task(), algo=lm_algorithm("grpo", kl_coef=0.0), steps=s["steps"],
                       prompts_per_step=s["prompts_per_step"], group_size=s["group_size"],
                       learning_rate=s["learning_rate"], lr_schedule="cosine", max_grad_norm=1.0, eval_every=0,
                       eval_prompts=s["eval_prompts"], eval_sampled=False, threads=s["threads"], seed=seed,
                       progress=False)


def _minirl_side(folder: str, s: dict[str, Any], seed: int) -> dict[str, float]:
    """minirl's ``train`` from the weights in ``folder`` (in a fresh process)."""
    from minirl.lm import load_policy
    from minirl.train import train

    if s["threads"]:
        torch.set_num_threads(s["threads"])
    policy = load_policy(folder, max_new_tokens=s["max_new_tokens"]).train_top_layers(s["trainable_layers"])
    _, history = train(_config(s, seed), policy)
    seconds = float(history["wall_time"][-1])
    tokens = float(history["response_length"].sum()) * s["prompts_per_step"] * s["group_size"]
    return {"s_per_step": seconds / s["steps"], "tokens_per_s": tokens / seconds, "peak_gb": _peak_gb(),
            "reward": float(history["reward"][-LAST:].mean()), "accuracy": history.evals[-1]["greedy_exact"]}


def _trl_side(folder: str, s: dict[str, Any], seed: int) -> dict[str, float]:
    """TRL's ``GRPOTrainer`` from the weights in ``folder`` (in a fresh process)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from minirl.lm import CausalLMPolicy, load_policy
    from minirl.train import evaluate
    from minirl.trl_bridge import grpo_trainer, trl_history

    if s["threads"]:
        torch.set_num_threads(s["threads"])
    loaded = load_policy(folder).train_top_layers(s["trainable_layers"])  # float32; the same weights train
    config = _config(s, seed)
    trainer = grpo_trainer(config, loaded.model, loaded.tokenizer, s["max_new_tokens"])
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    history = trl_history(trainer)
    tokens = float(history["response_length"].sum()) * s["prompts_per_step"] * s["group_size"]
    policy = CausalLMPolicy(trainer.model.eval(), loaded.tokenizer, max_new_tokens=s["max_new_tokens"])
    accuracy = evaluate(policy, config.task, s["eval_prompts"], torch.Generator().manual_seed(10_000 + seed),
                        sampled=False)["greedy_exact"]
    return {"s_per_step": seconds / s["steps"], "tokens_per_s": tokens / seconds, "peak_gb": _peak_gb(),
            "reward": float(history["reward"][-LAST:].mean()), "accuracy": accuracy}


def _in_own_process(fn, *args) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(fn, *args).result()


def _prepare(s: dict[str, Any], folder: Path, seed: int) -> str:
    """The starting weights, saved to ``folder``: the tiny model after its warm start, or SmolLM2's float copy."""
    from minirl.lm import SMOLLM2_ALIAS, make_tiny_lm, smollm2_folder
    from minirl.lm_train import sft_warm_start

    if s["model"] == SMOLLM2_ALIAS:
        return str(smollm2_folder(folder))  # the float copy GRPOTrainer loads: the cache's, or one saved here
    policy = make_tiny_lm(seed=seed, max_new_tokens=s["max_new_tokens"])
    sft_warm_start(policy, _task(), s["sft_steps"], 16, 1.5e-3, seed=seed, threads=s["threads"], progress=False)
    policy.save_pretrained(folder)
    return str(folder)


def _report(title: str, s: dict[str, Any], mine: dict[str, float], theirs: dict[str, float]) -> None:
    print(f"\n{title}: {s['steps']} GRPO steps of {s['prompts_per_step']} prompts x {s['group_size']} responses, "
          f"budget {s['max_new_tokens']} tokens, lr {s['learning_rate']:g}, "
          f"{s['threads'] or torch.get_num_threads()} torch thread(s)")
    print(f"  {'':32} {'minirl':>10} {'TRL':>10} {'TRL / minirl':>13}")
    rows = [("seconds per step", "s_per_step", "{:.2f}"),
            ("response tokens per second", "tokens_per_s", "{:.0f}"),
            ("peak memory (GB RSS)", "peak_gb", "{:.2f}"),
            (f"reward, mean of the last {LAST} steps", "reward", "{:.3f}"),
            (f"held-out greedy accuracy ({s['eval_prompts']})", "accuracy", "{:.1%}")]
    for label, key, fmt in rows:
        ratio = theirs[key] / mine[key] if mine[key] else float("nan")
        print(f"  {label:32} {fmt.format(mine[key]):>10} {fmt.format(theirs[key]):>10} {ratio:>13.2f}")


def run_trl_benchmark(quick: bool = False, seed: int = 0) -> int:
    """Run the side-by-side benchmark; returns 0 when the targets are met (always 0 with ``quick``)."""
    try:
        import trl  # noqa: F401
    except ImportError:
        print("minirl bench --trl needs TRL: pip install -e '.[trl]'")
        return 2
    parts = [("1. Tiny model (~1M parameters), after a supervised warm start", TINY)]
    if not quick:
        parts.append(("2. SmolLM2-135M-Instruct (the top 10 of 30 blocks train; speed only)", SMOLLM2))
    ok = {}
    with tempfile.TemporaryDirectory() as tmp:
        for title, settings in parts:
            s = dict(settings, sft_steps=5, steps=2, eval_prompts=4) if quick else dict(settings)
            folder = _prepare(s, Path(tmp) / s["model"], seed)
            mine = _in_own_process(_minirl_side, folder, s, seed)
            theirs = _in_own_process(_trl_side, folder, s, seed)
            _report(title, s, mine, theirs)
            if s["model"] == "tiny":
                ok["tiny: minirl <= half of TRL's s/step"] = mine["s_per_step"] <= 0.5 * theirs["s_per_step"]
                ok["tiny: reward no worse than TRL's"] = mine["reward"] >= theirs["reward"]
            else:
                ok["SmolLM2: minirl no slower than TRL"] = mine["s_per_step"] <= theirs["s_per_step"]
    print("\nSummary")
    for name, passed in ok.items():
        print(f"  {'PASS' if passed else 'FAIL'}  {name}")
    return 0 if quick or all(ok.values()) else 1

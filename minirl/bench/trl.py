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
response tokens per second, peak memory, the mean reward of the last steps, greedy accuracy after training
on both held-out sets (minirl's ``evaluate`` on both models), and the ratios.

What the comparison can and cannot show. The two sides draw different prompts and sample different
responses (each library has its own random streams), so one seed of a 30-step run measures sampling noise as
much as the loops. The tiny model is therefore run over several seeds (a warm start of its own per seed,
shared by both sides), and the rewards and accuracies are compared as mean ± std over seeds: a difference
inside the spread says the loops train alike at this budget, not that they are identical. That the *losses*
are identical, knob for knob, is shown exactly elsewhere, on the same samples (``tests/test_trl_parity.py``).
The SmolLM2 part runs 3 steps per side on one seed: its figures measure speed only.

Targets: on the tiny model minirl takes at most half of TRL's seconds per step, and its mean reward is not
worse than TRL's by more than twice the standard error of the difference; on SmolLM2-135M it is no slower
than TRL.
"""

from __future__ import annotations

import concurrent.futures
import math
import multiprocessing
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from minirl.lm.recipes import RECIPES
from minirl.utils import peak_memory_gb

__all__ = ["run_trl_benchmark"]

# What both sides run (the results files keep these keys): a recipe's values (``minirl.lm.recipes.RECIPES``),
# then the benchmark's changes.
SETTINGS = (
    "sft_steps",
    "steps",
    "prompts_per_step",
    "group_size",
    "max_new_tokens",
    "learning_rate",
    "threads",
    "eval_prompts",
    "trainable_layers",
)


def _settings(model: str, kind: str, **changes: Any) -> dict[str, Any]:
    """``{"model": model, ...}``: the ``SETTINGS`` of ``RECIPES[kind]``, then ``changes``."""
    return {"model": model, **{k: getattr(RECIPES[kind], k) for k in SETTINGS}, **changes}


# The tiny model with its recipe's batch and learning rate: 300 supervised steps first (a partly trained start,
# so that rewards differ within a group), then 30 GRPO steps of 8 prompts each side; the accuracies it reaches
# are in RESULTS.md, "minirl and TRL side by side".
TINY = _settings("tiny", "tiny", sft_steps=300, steps=30, prompts_per_step=8)
# SmolLM2 with the CPU recipe's batch and trainable blocks, a few steps each side (speed only).
SMOLLM2 = _settings("smollm2-135m", "pretrained", steps=3, eval_prompts=50)
LAST = 5  # the reward compared is the mean of the last LAST steps


# Whose prompt both sides use: the CPU recipe's (one worked example, a short system message).
RECIPE = RECIPES["pretrained"]


def _task():
    return RECIPE.task()


def _config(s: dict[str, Any], seed: int):
    """The one ``TrainConfig`` both sides run (TRL's through ``grpo_trainer``)."""
    return RECIPE.train_config(
        _task(),
        algo=RECIPE.algorithm("grpo", kl_coef=0.0),
        seed=seed,
        steps=s["steps"],
        prompts_per_step=s["prompts_per_step"],
        group_size=s["group_size"],
        learning_rate=s["learning_rate"],
        lr_schedule="cosine",
        max_grad_norm=1.0,
        eval_every=0,
        eval_prompts=s["eval_prompts"],
        threads=s["threads"],
        progress=False,
    )


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
    last = history.evals[-1]
    return {
        "s_per_step": seconds / s["steps"],
        "tokens_per_s": tokens / seconds,
        "peak_gb": peak_memory_gb("cpu"),
        "reward": float(history["reward"][-LAST:].mean()),
        "accuracy": last["greedy_exact"],
        "unseen_accuracy": last.get("unseen_greedy_exact", float("nan")),
    }


def _trl_side(folder: str, s: dict[str, Any], seed: int) -> dict[str, float]:
    """TRL's ``GRPOTrainer`` from the weights in ``folder`` (in a fresh process)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from minirl.evaluate import evaluate, evaluation_generator
    from minirl.lm import CausalLMPolicy, load_policy
    from minirl.lm.trl_bridge import grpo_trainer, trl_history

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
    if trainer.model is None:
        raise RuntimeError("TRL's GRPOTrainer has no model after training")
    policy = CausalLMPolicy(trainer.model.eval(), loaded.tokenizer, max_new_tokens=s["max_new_tokens"])
    ev = evaluate(policy, config.task, s["eval_prompts"], evaluation_generator(seed), sampled=False)
    return {
        "s_per_step": seconds / s["steps"],
        "tokens_per_s": tokens / seconds,
        "peak_gb": peak_memory_gb("cpu"),
        "reward": float(history["reward"][-LAST:].mean()),
        "accuracy": ev["greedy_exact"],
        "unseen_accuracy": ev.get("unseen_greedy_exact", float("nan")),
    }


def _in_own_process(fn, *args) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(fn, *args).result()


def _prepare(s: dict[str, Any], folder: Path, seed: int) -> str:
    """The starting weights, saved to ``folder``: the tiny model after its warm start, or SmolLM2's float copy."""
    from minirl.lm import SMOLLM2_ALIAS, make_tiny_lm, smollm2_folder

    if s["model"] == SMOLLM2_ALIAS:
        return str(smollm2_folder(folder))  # the float copy GRPOTrainer loads: the cache's, or one saved here
    policy = make_tiny_lm(seed=seed, max_new_tokens=s["max_new_tokens"])
    warm = RECIPES["tiny"].with_(sft_steps=s["sft_steps"], threads=s["threads"])  # the tiny recipe's batch and rate
    warm.warm_start(policy, _task(), seed=seed, progress=False)
    policy.save_pretrained(folder)
    return str(folder)


ROWS = [
    ("seconds per step", "s_per_step", "{:.2f}"),
    ("response tokens per second", "tokens_per_s", "{:.0f}"),
    ("peak memory (GB RSS)", "peak_gb", "{:.2f}"),
    (f"reward, mean of the last {LAST} steps", "reward", "{:.3f}"),
    ("held-out greedy accuracy (problems)", "accuracy", "{:.1%}"),
    ("held-out greedy accuracy (unseen answers)", "unseen_accuracy", "{:.1%}"),
]


def _mean_std(runs: list[dict[str, float]], key: str) -> dict[str, float]:
    a = np.array([r[key] for r in runs], dtype=float)
    return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0}


def _cell(v: dict[str, float], fmt: str, spread: bool) -> str:
    return f"{fmt.format(v['mean'])} ± {fmt.format(v['std'])}" if spread else fmt.format(v["mean"])


def _report(title: str, s: dict[str, Any], mine: list[dict[str, float]], theirs: list[dict[str, float]]) -> dict:
    """Print the side-by-side table (mean ± std over seeds when there are several); returns its figures."""
    print(
        f"\n{title}: {s['steps']} GRPO steps of {s['prompts_per_step']} prompts x {s['group_size']} responses, "
        f"budget {s['max_new_tokens']} tokens, lr {s['learning_rate']:g}, "
        f"{s['threads'] or 'all the cores as'} torch thread(s), {len(mine)} seed(s)"
    )
    print(f"  {'':36} {'minirl':>16} {'TRL':>16} {'TRL / minirl':>13}")
    figures = {"settings": s, "minirl": mine, "trl": theirs, "mean": {}}
    for label, key, fmt in ROWS:
        m, t = _mean_std(mine, key), _mean_std(theirs, key)
        figures["mean"][key] = {"minirl": m, "trl": t, "ratio": t["mean"] / m["mean"] if m["mean"] else None}
        ratio = t["mean"] / m["mean"] if m["mean"] else float("nan")
        print(f"  {label:36} {_cell(m, fmt, len(mine) > 1):>16} {_cell(t, fmt, len(mine) > 1):>16} {ratio:>13.2f}")
    return figures


def _not_worse(mine: list[float], theirs: list[float]) -> tuple[bool, float, float]:
    """minirl's mean is not below TRL's by more than 2 standard errors of the difference of the means:
    (verdict, difference, 2·SE). With one seed the standard error is unknown and the plain means are compared."""
    m, t = np.asarray(mine, dtype=float), np.asarray(theirs, dtype=float)
    diff = float(m.mean() - t.mean())
    if len(m) < 2:
        return diff >= 0, diff, 0.0
    se = math.sqrt(m.var(ddof=1) / len(m) + t.var(ddof=1) / len(t))
    return diff >= -2 * se, diff, 2 * se


def run_trl_benchmark(
    quick: bool = False, seed: int | None = None, seeds: int = 3, save: str | None = None, out: str | None = None
) -> int:
    """Run the side-by-side benchmark; returns 0 when the targets are met (always 0 with ``quick``).

    The tiny model runs seeds 0 .. ``seeds``-1 (or only ``seed``); SmolLM2 runs one seed (speed only).
    ``save``: a results name or path (``minirl.results``); ``out``: a folder to keep the record in too
    (``bench.finish``)."""
    try:
        import trl  # noqa: F401
    except ImportError:
        print("minirl bench --trl needs TRL: pip install -e '.[trl]'")
        return 2
    from minirl.bench import finish
    from minirl.results import Record

    seed_list = [seed] if seed is not None else list(range(1 if quick else seeds))
    record = Record(save or "bench_trl", seeds=seed_list)
    parts = [("tiny", "1. Tiny model (~1M parameters), after a supervised warm start", TINY, seed_list)]
    if not quick:
        parts.append(
            ("smollm2", "2. SmolLM2-135M-Instruct (the top 10 of 30 blocks train; speed only)", SMOLLM2, seed_list[:1])
        )
    ok = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, title, settings, part_seeds in parts:
            s = dict(settings, sft_steps=5, steps=2, eval_prompts=4) if quick else dict(settings)
            mine, theirs = [], []
            for sd in part_seeds:
                folder = _prepare(s, Path(tmp) / f"{s['model']}-{sd}", sd)
                mine.append(_in_own_process(_minirl_side, folder, s, sd))
                theirs.append(_in_own_process(_trl_side, folder, s, sd))
            record.figures[key] = _report(title, s, mine, theirs)
            if key == "tiny":
                speed = np.mean([r["s_per_step"] for r in mine]) <= 0.5 * np.mean([r["s_per_step"] for r in theirs])
                verdict, diff, two_se = _not_worse([r["reward"] for r in mine], [r["reward"] for r in theirs])
                print(f"  reward: minirl - TRL = {diff:+.3f} (2 standard errors of the difference: {two_se:.3f})")
                record.figures[key]["reward_difference"] = {"minirl_minus_trl": diff, "two_se": two_se}
                ok["tiny: minirl <= half of TRL's s/step"] = bool(speed)
                ok["tiny: reward not worse than TRL's beyond 2 standard errors"] = verdict
            else:
                ok["SmolLM2: minirl no slower than TRL"] = mine[0]["s_per_step"] <= theirs[0]["s_per_step"]
    return finish(record, ok, save, quick, out)

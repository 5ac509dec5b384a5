"""``minirl bench --lm``: the language-model benchmark, measured on the machine it runs on, over seeds.

1. **The tiny model** (``make_tiny_lm``, built here) on text sorting, with its recipe (``RECIPES["tiny"]``):
   a supervised warm start, then GRPO with the one loop. The seeds run side by side, one process and one torch
   thread each. Held-out greedy accuracy after the warm start and after GRPO (target: mean >= 95%).
2. **SmolLM2-135M-Instruct** (the shipped GGUF file) on text sorting of 3 numbers 0-9, with the device's
   recipe (``RECIPES["pretrained"]`` on a CPU, ``["pretrained-cuda"]`` on a GPU), one seed after the
   other, each in a process of its own: greedy accuracy on the 200 held-out problems before, during and
   after GRPO, the same on the problems whose answer never occurs in training, on 4 numbers (never trained
   on), seconds per step split into generation and update, peak memory. Target: mean >= 90% after the
   recipe's steps, which take at most 20 minutes of training on 2 CPU cores.
3. **What the CPU recipe's choices buy** (on a CPU only): a few steps with every weight training, the KL term
   to the initial model and a 16-token budget, against the recipe's steps; seconds per step of each.
4. **Reasoning** (notebook 10's task, ``minirl.bench.reasoning_rl``): 4-number sums on SmolLM2 with a worked
   warm start and GRPO, against a supervised control, answer-only GRPO and a lenient verifier, over seeds.
5. **Learning from your own samples** (notebook 11, ``minirl.bench.self_training``): from the same warm start,
   best-of-N by three selectors, imitation, expert iteration, online DPO, GRPO and GRPO paid by a judge, at one
   budget, over seeds.
6. **Agents** (notebook 12, ``minirl.bench.agents``): the maze of notebook 01 walked by SmolLM2 in text, from a
   warm start on the uniform walker, with GRPO and with PPO and its critic, from every start cell, over seeds.
7. **Tool use** (notebook 12, ``minirl.bench.calculator``): SmolLM2 with a calculator it may call, before and after
   GRPO and PPO: accuracy and call rate on easy and hard problems, over seeds.

``parts`` picks some of them (``minirl bench --lm --parts reasoning``); 2 and 3 go together as "smollm2".

Two held-out sets, and which is which: "held-out problems" are 200 problems never sampled in training, but for
3 numbers most of them are permutations of a training problem and share its sorted answer; "unseen answers" are
every permutation of 20 sorted answers that never occur in training (``TextSortTask.n_unseen_answers``).

``--save`` keeps every figure in ``results/bench_lm.json`` (``minirl.results``), from which RESULTS.md's tables are
made.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import multiprocessing
import time
from pathlib import Path
from typing import Any

import numpy as np

from minirl.bench import finish, keep_run, spread
from minirl.lm.models import SMOLLM2_ALIAS, load_policy
from minirl.lm.recipes import RECIPES, LMRecipe, model_kind
from minirl.results import Record, history_figures
from minirl.train import evaluate, train
from minirl.utils import peak_memory_gb

__all__ = ["run_lm_benchmark"]

HELD_OUT = 200
TARGET_MINUTES = 20.0
LM_PARTS = ("tiny", "smollm2", "reasoning", "self_training", "agents", "calculator")


def _greedy(policy, task, n: int) -> dict[str, float]:
    ev = evaluate(policy, task, n, sampled=False)
    return {k: v for k, v in ev.items() if k.endswith(("exact", "format"))}


def _one_run(
    name: str,
    recipe: LMRecipe,
    max_seconds: float | None,
    seed: int,
    progress: bool,
    four_numbers: bool,
    out: str | None = None,
) -> dict[str, Any]:
    """One seed of a recipe, start to end: load, warm start, GRPO, evaluations; its figures. ``out``: keep the
    run in the run folder ``out/MODEL_seedN`` (named in the figures as ``run_folder``)."""
    task = recipe.task()
    start = time.perf_counter()
    policy = recipe.policy(name, seed=seed)
    figures: dict[str, Any] = {"load_seconds": time.perf_counter() - start, "sft_seconds": 0.0}
    if recipe.sft_steps:
        t = time.perf_counter()
        recipe.warm_start(policy, task, seed=seed, progress=False)
        figures["sft_seconds"] = time.perf_counter() - t
    config = recipe.train_config(task, seed=seed, max_seconds=max_seconds, progress=progress)
    folder = f"{Path(name).name}_seed{seed}"
    extra = {"model": {"name": name, "recipe": dataclasses.asdict(recipe)}}
    policy, history = train(config, policy, run=keep_run(out, folder, config, extra))
    figures.update(history_figures(history))
    if four_numbers:  # the trained model on 4 numbers, which it never saw (a 4-number answer needs 3 more tokens)
        policy.max_new_tokens = recipe.max_new_tokens + 3
        figures["four_numbers"] = _greedy(policy, recipe.task(n_numbers=4), recipe.eval_prompts)
    figures["peak_memory_gb"] = peak_memory_gb(policy.device)
    return {**figures, **({"run_folder": folder} if out is not None else {})}


def _step_cost(name: str, recipe: LMRecipe, steps: int, seed: int = 0) -> dict[str, float]:
    """Seconds per step of ``recipe``: ``steps`` GRPO steps, the first left out (it warms up caches and kernels)."""
    policy = recipe.policy(name, seed=seed)
    config = recipe.train_config(recipe.task(), seed=seed, steps=steps, eval_every=0, eval_prompts=1, progress=False)
    _, history = train(config, policy)
    gen, update = history["gen_seconds"][1:], history["update_seconds"][1:]
    return {
        "s_per_step": float(np.mean(gen + update)),
        "gen_s_per_step": float(np.mean(gen)),
        "update_s_per_step": float(np.mean(update)),
        "steps_timed": len(gen),
    }


def _in_processes(fn, jobs: list[tuple], workers: int | None) -> list[dict[str, Any]]:
    """``fn(*job)`` for every job: here when ``workers`` is None, else in fresh processes (spawned, so each has
    its own torch threads and peak memory), at most ``workers`` at a time. Results in the order of ``jobs``."""
    if workers is None:
        return [fn(*job) for job in jobs]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return [f.result() for f in [pool.submit(fn, *job) for job in jobs]]


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and spread over seeds of what a run measured."""
    first = [r["evals"][0] for r in runs]
    last = [r["evals"][-1] for r in runs]
    out: dict[str, Any] = {
        "before": spread([e["greedy_exact"] for e in first]),
        "after": spread([e["greedy_exact"] for e in last]),
        "format_before": spread([e.get("greedy_format", float("nan")) for e in first]),
        "format_after": spread([e.get("greedy_format", float("nan")) for e in last]),
        "train_minutes": spread([r["train_seconds"] / 60 for r in runs]),
        "s_per_step": spread([r["s_per_step"] for r in runs]),
        "gen_s_per_step": spread([r["gen_s_per_step"] for r in runs]),
        "update_s_per_step": spread([r["update_s_per_step"] for r in runs]),
        "tokens_per_s": spread([r["tokens_per_s"] for r in runs]),
        "steps": spread([r["steps"] for r in runs]),
    }
    if "unseen_greedy_exact" in last[0]:
        out["unseen_before"] = spread([e["unseen_greedy_exact"] for e in first])
        out["unseen_after"] = spread([e["unseen_greedy_exact"] for e in last])
    if runs[0].get("sft_seconds"):
        out["sft_minutes"] = spread([r["sft_seconds"] / 60 for r in runs])
    if "four_numbers" in runs[0]:
        out["four_numbers_after"] = spread([r["four_numbers"]["greedy_exact"] for r in runs])
    return out


def _pm(s: dict[str, float], fmt: str = "{:.1%}") -> str:
    return f"{fmt.format(s['mean'])} ± {fmt.format(s['std'])}"


def _report(title: str, runs: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    print(f"\n{title}")
    for r in runs:
        first, last = r["evals"][0], r["evals"][-1]
        unseen = (
            f"; unseen answers {first['unseen_greedy_exact']:.1%} -> {last['unseen_greedy_exact']:.1%}"
            if "unseen_greedy_exact" in last
            else ""
        )
        four = f"; 4 numbers {r['four_numbers']['greedy_exact']:.1%}" if "four_numbers" in r else ""
        sft = f"warm start {r['sft_seconds'] / 60:.1f} min, " if r.get("sft_seconds") else ""
        print(
            f"  seed {r['seed']}: held-out {first['greedy_exact']:.1%} -> {last['greedy_exact']:.1%}{unseen}{four}; "
            f"{sft}{r['steps']} GRPO steps in {r['train_seconds'] / 60:.1f} min ({r['gen_s_per_step']:.2f} s "
            f"generation + {r['update_s_per_step']:.2f} s update per step, {r['tokens_per_s']:.0f} response "
            f"tokens/s), peak memory {r['peak_memory_gb']:.1f} GB"
        )
    print(
        f"  mean ± std over {len(runs)} seed(s): held-out {_pm(summary['before'])} -> {_pm(summary['after'])}"
        + (
            f"; unseen answers {_pm(summary['unseen_before'])} -> {_pm(summary['unseen_after'])}"
            if "unseen_after" in summary
            else ""
        )
    )


def run_lm_benchmark(
    quick: bool = False,
    seeds: int = 3,
    minutes: float | None = None,
    save: str | None = None,
    workers: int = 0,
    out: str | None = None,
    parts: tuple[str, ...] = LM_PARTS,
) -> int:
    """Run the ``parts``; returns 0 when the targets are met (always 0 with ``quick``).

    ``seeds``: seeds 0 .. seeds-1 of each recipe. ``minutes``: stop SmolLM2's training after this many minutes
    (None: the recipe's steps). ``save``: a results name or path (``minirl.results``). ``workers``: tiny-model
    processes side by side (0: one per core). ``out``: a folder to keep every run in (``_one_run``) and the
    record (``bench.finish``)."""
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1; got {seeds}")
    unknown = sorted(set(parts) - set(LM_PARTS))
    if unknown or not parts:
        raise ValueError(f"parts: unknown {unknown or 'none given'}; choose from {list(LM_PARTS)}")
    record = Record(save or "bench_lm", seeds=list(range(seeds)))
    ok: dict[str, bool] = {}
    if "tiny" in parts:
        ok.update(_tiny_part(record, quick, seeds, workers, out))
    if "smollm2" in parts:
        ok.update(_smollm2_part(record, quick, seeds, minutes, out))
    if "reasoning" in parts:
        from minirl.bench.reasoning_rl import reasoning_part

        ok.update(reasoning_part(record, range(seeds), quick=quick, save=save is not None, key="reasoning"))
    if "self_training" in parts:
        from minirl.bench.self_training import self_training_part

        ok.update(self_training_part(record, range(seeds), quick=quick, save=save is not None, key="self_training"))
    if "agents" in parts:
        from minirl.bench.agents import maze_part

        ok.update(maze_part(record, range(seeds), quick=quick, save=save is not None, key="agents"))
    if "calculator" in parts:
        from minirl.bench.calculator import calculator_part

        ok.update(calculator_part(record, range(seeds), quick=quick, save=save is not None, key="calculator"))
    return finish(record, ok, save, quick, out)


def _tiny_part(record: Record, quick: bool, seeds: int, workers: int, out: str | None) -> dict[str, bool]:
    tiny = RECIPES["tiny"]
    quick_tiny = dict(sft_steps=10, prompts_per_step=4, group_size=4, eval_every=0, steps=3, eval_prompts=20)
    t_run = tiny.with_(**quick_tiny) if quick else tiny.with_(eval_prompts=HELD_OUT)
    n_workers = None if quick else min(seeds, workers or multiprocessing.cpu_count())
    tiny_runs = _in_processes(_one_run, [("tiny", t_run, None, s, False, False, out) for s in range(seeds)], n_workers)
    tiny_summary = _summary(tiny_runs)
    _report(
        f"1. Tiny model (~1M parameters), text sorting of 3 numbers 0-9: {t_run.sft_steps} supervised "
        f"steps, then {t_run.steps} GRPO steps (target: mean >= 95% held-out greedy accuracy)",
        tiny_runs,
        tiny_summary,
    )
    record.figures["tiny"] = {"settings": dataclasses.asdict(t_run), "summary": tiny_summary, "runs": tiny_runs}
    return {"tiny: mean >= 95%": tiny_summary["after"]["mean"] >= 0.95}


def _smollm2_part(record: Record, quick: bool, seeds: int, minutes: float | None, out: str | None) -> dict[str, bool]:
    kind = model_kind(SMOLLM2_ALIAS)  # the GPU recipe when CUDA is available
    pre = RECIPES[kind]
    quick_smol = dict(prompts_per_step=2, group_size=2, max_new_tokens=8, eval_every=0, steps=2, eval_prompts=4)
    s_run = pre.with_(**quick_smol) if quick else pre.with_(eval_prompts=HELD_OUT)
    budget = None if minutes is None else 60.0 * minutes
    smol_runs = _in_processes(
        _one_run, [(SMOLLM2_ALIAS, s_run, budget, s, not quick, True, out) for s in range(seeds)], None if quick else 1
    )
    smol_summary = _summary(smol_runs)
    base4 = _greedy(
        load_policy(SMOLLM2_ALIAS, max_new_tokens=s_run.max_new_tokens + 3), s_run.task(n_numbers=4), s_run.eval_prompts
    )
    smol_summary["four_numbers_before"] = base4
    _report(
        f"2. SmolLM2-135M-Instruct ({kind} recipe), text sorting of 3 numbers 0-9, {pre.few_shot}-shot "
        f"prompt, {s_run.steps} GRPO steps (target: mean >= 90% held-out greedy accuracy within "
        f"{TARGET_MINUTES:.0f} min of training)",
        smol_runs,
        smol_summary,
    )
    print(
        f"  4 numbers (never trained on): the base model {base4['greedy_exact']:.1%}, after training "
        f"{_pm(smol_summary['four_numbers_after'])}"
    )
    record.figures["smollm2"] = {
        "recipe": kind,
        "settings": dataclasses.asdict(s_run),
        "summary": smol_summary,
        "runs": smol_runs,
    }

    if kind == "pretrained" and not quick:
        every = pre.with_(trainable_layers=None, kl_coef=0.02, max_new_tokens=16)
        costs = {
            "recipe": _in_processes(_step_cost, [(SMOLLM2_ALIAS, pre, 4)], 1)[0],
            "every_weight_kl_16_tokens": _in_processes(_step_cost, [(SMOLLM2_ALIAS, every, 4)], 1)[0],
        }
        print("\n3. What the CPU recipe's choices buy: seconds per step (steps 2-4 of 4)")
        for label, c in costs.items():
            print(
                f"  {label:28} {c['s_per_step']:.1f} s/step = {c['gen_s_per_step']:.1f} s generation + "
                f"{c['update_s_per_step']:.1f} s update"
            )
        record.figures["step_cost"] = costs

    within = [r["train_seconds"] <= 60 * TARGET_MINUTES for r in smol_runs]
    target = f"SmolLM2: mean >= 90% within {TARGET_MINUTES:.0f} min of training"
    return {target: smol_summary["after"]["mean"] >= 0.90 and all(within)}

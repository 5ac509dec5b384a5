"""Notebook 10's runs over seeds: what a scratchpad, RL and a lenient verifier each change, with a spread.

The notebook runs each arm once (seed 0). This benchmark runs the same arms, with the same knobs, for each
seed it is given, on SmolLM2-135M-Instruct with the device's recipe (its prompt and trainable blocks):

- ``thinking``: a supervised warm start on worked 3-number sums (``sft_steps`` steps), then GRPO on 4-number
  sums, which no demonstration shows, for ``rl_seconds`` (strict verifier); pass@1 and pass@k before and after.
- ``control``: from the same warm start, more supervised steps for as long as the thinking run's GRPO took.
- ``answer-only``: a warm start on bare answers for as long as the worked one took, then answer-only GRPO on
  4-number sums for ``rl_seconds`` (an 8-token budget): the same wall time as ``thinking``, no scratchpad.
- ``hack``: from the worked warm start, GRPO for ``rl_seconds`` on a lenient verifier (``hack_reward``; by
  default ``"substring"``: the answer after ``</think>`` is a substring of the right one, so an empty answer
  passes); its proxy reward and strict accuracy on held-out problems, against the thinking run's.

Every accuracy is greedy, on the same ``n_eval`` held-out problems of 3 and of 4 numbers. Seed ``s`` seeds
the warm starts, GRPO's draws and the pass@k samples with ``s`` and the control's prompts with ``s + 1``, as
the notebook does for seed 0. The runs are time-budgeted, so a busy machine takes fewer steps: run it alone.

    python -m minirl.bench.reasoning_rl --seeds 0 1 2 --save          # results/bench_reasoning.json
    minirl bench --lm --parts reasoning --seeds 3 --save              # the same, as part 4 of ``bench --lm``

Targets (issue 22; the summary checks the mean over seeds): 4-number accuracy rises by >= 50 points from the
base within 15 minutes (warm start + GRPO); GRPO beats the control by >= 15 points; thinking beats answer-only
by >= 15 points; the hacked run's strict accuracy is >= 20 points below the honest run's while its proxy
reward is higher.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from minirl.bench import finish, spread
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import REASONING_CHANGES, RECIPES, THINKING_TOKENS, LMRecipe, model_kind, sft_warm_start
from minirl.pass_at_k import sampled_pass_at_k
from minirl.results import Record, history_figures
from minirl.train import evaluate, train

__all__ = [
    "ARMS",
    "QUICK_SETTINGS",
    "SETTINGS",
    "check_targets",
    "measure_base",
    "nested",
    "reasoning_part",
    "run_reasoning_benchmark",
    "run_seed",
    "summarize",
]

ARMS = ("thinking", "control", "answer-only", "hack")
SETTINGS: dict[str, Any] = {  # notebook 10's full mode
    "n_eval": REASONING_CHANGES["eval_prompts"],  # held-out problems per evaluation (each length)
    "sft_steps": REASONING_CHANGES["sft_steps"],  # worked-solution warm start, steps of sft_prompts demonstrations
    "sft_prompts": REASONING_CHANGES["sft_prompts_per_step"],
    "sft_learning_rate": REASONING_CHANGES["sft_learning_rate"],
    "rl_seconds": 600.0,  # each GRPO run's (and the control's) training time
    "rl_steps": 1000,  # an upper bound: the time ends a run first
    "prompts": REASONING_CHANGES["prompts_per_step"],  # GRPO: prompts x group replies a step
    "group": REASONING_CHANGES["group_size"],
    "learning_rate": REASONING_CHANGES["learning_rate"],  # constant (README, "Reasoning")
    "eval_every": REASONING_CHANGES["eval_every"],
    "pass_prompts": 50,  # pass@k: samples per prompt on the first pass_prompts held-out problems
    "samples": 8,
    "answer_tokens": 8,  # the answer-only budget; the thinking one is THINKING_TOKENS
    "hack_reward": "substring",  # the lenient verifier of the hack arm (toy_envs.reasoning.REASONING_REWARDS)
}
QUICK_SETTINGS = {
    **SETTINGS,
    **dict(n_eval=4, sft_steps=2, sft_prompts=2, rl_seconds=None, rl_steps=2, prompts=1, group=4, eval_every=2),
    **dict(pass_prompts=2, samples=4),
}
FAMILY = {"think": True, "answer": False}


class _Model:
    """The policy and the two tasks of each form, with snapshots of its trainable weights."""

    def __init__(self, recipe: LMRecipe, device: str | None, s: dict[str, Any]):
        self.recipe, self.s = recipe, s
        self.policy = recipe.policy(SMOLLM2_ALIAS, device=device)
        self.trainable = [p for p in self.policy.parameters() if p.requires_grad]
        self.tasks = {
            thinking: {n: recipe.reasoning_task("sum", thinking=thinking, n_numbers=n) for n in (3, 4)}
            for thinking in (True, False)
        }

    def snapshot(self) -> list[torch.Tensor]:
        return [p.detach().clone() for p in self.trainable]

    def restore(self, weights: list[torch.Tensor]) -> None:
        with torch.no_grad():
            for p, w in zip(self.trainable, weights, strict=True):
                p.copy_(w)

    def budget(self, thinking: bool) -> None:
        self.policy.max_new_tokens = THINKING_TOKENS if thinking else self.s["answer_tokens"]

    def held_out(self, thinking: bool) -> dict[str, float]:
        """Greedy accuracy and truncation on the held-out 3- and 4-number sums, in one form."""
        self.budget(thinking)
        out = {}
        for n, task in self.tasks[thinking].items():
            ev = evaluate(self.policy, task, self.s["n_eval"], sampled=False)
            out[f"sum{n}"] = ev["greedy_exact"]
            out[f"sum{n}_truncated"] = ev["greedy_truncated"]
        return out

    def warm_start(self, thinking: bool, steps: int, seed: int, max_seconds: float | None) -> dict[str, float]:
        start = time.perf_counter()
        h = sft_warm_start(
            self.policy,
            self.tasks[thinking][3],
            steps,
            self.s["sft_prompts"],
            learning_rate=self.s["sft_learning_rate"],
            seed=seed,
            progress=False,
            max_seconds=max_seconds,
        )
        return {"steps": len(h), "seconds": time.perf_counter() - start}

    def grpo(self, task, seed: int, thinking: bool, progress: bool):
        s = self.s
        config = self.recipe.train_config(
            task,
            seed=seed,
            steps=s["rl_steps"],
            prompts_per_step=s["prompts"],
            group_size=s["group"],
            learning_rate=s["learning_rate"],
            lr_schedule="constant",
            eval_prompts=s["n_eval"],
            eval_every=s["eval_every"],
            max_seconds=s["rl_seconds"],
            progress=progress,
        )
        self.budget(thinking)
        self.policy, history = train(config, self.policy)
        return history

    def pass_k(self, seed: int) -> dict[str, float]:
        """pass@1 and pass@samples on 4-number sums with a scratchpad."""
        self.budget(True)
        task = self.tasks[True][4]
        n = self.s["samples"]
        gen = torch.Generator().manual_seed(seed)
        return sampled_pass_at_k(self.policy, task, task.eval_prompts(self.s["pass_prompts"]), n, (1, n), gen)


def _run_figures(history) -> dict[str, Any]:
    """What a GRPO run's record keeps: its steps, time, last rewards and evaluations, and its notes."""
    return {**history_figures(history), "notes": list(history.notes)}


def run_seed(  # noqa: PLR0915
    seed: int,
    arms: Sequence[str] = ARMS,
    settings: dict[str, Any] | None = None,
    device: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Every arm in ``arms`` for one seed, from a fresh copy of the model; the figures of each arm."""
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        raise ValueError(f"arms: unknown {unknown}; choose from {list(ARMS)}")
    s = {**SETTINGS, **(settings or {})}
    recipe = RECIPES[model_kind(SMOLLM2_ALIAS, device)]
    m = _Model(recipe, device, s)
    base = m.snapshot()
    bar = tqdm(total=len(arms) + 1, desc=f"seed {seed}", disable=not progress)
    # every arm starts from this warm start, or (answer-only) spends as long on its own
    out: dict[str, Any] = {"seed": seed, "warm": {**m.warm_start(True, s["sft_steps"], seed, None), **m.held_out(True)}}
    warm = m.snapshot()
    bar.update()
    rl_seconds = s["rl_seconds"]
    honest_weights = None
    if "thinking" in arms:
        before = m.pass_k(seed)
        h = m.grpo(m.tasks[True][4], seed, True, progress)
        out["thinking"] = {"run": _run_figures(h), **m.held_out(True), "pass_before": before}
        out["thinking"].update(pass_after=m.pass_k(seed), format_last5=float(h["format_rate"][-5:].mean()))
        rl_seconds = float(h["wall_time"][-1])
        honest_weights = m.snapshot()
        bar.update()
    if "control" in arms:
        m.restore(warm)
        steps = 100 * s["sft_steps"] if rl_seconds is not None else s["rl_steps"]
        out["control"] = {**m.warm_start(True, steps, seed + 1, rl_seconds), **m.held_out(True)}
        bar.update()
    if "answer-only" in arms:
        m.restore(base)
        warm_bare = {**m.warm_start(False, 10 * s["sft_steps"], seed, out["warm"]["seconds"]), **m.held_out(False)}
        h = m.grpo(m.tasks[False][4], seed, False, progress)
        out["answer-only"] = {"warm": warm_bare, "run": _run_figures(h), **m.held_out(False)}
        bar.update()
    if "hack" in arms:
        m.restore(warm)
        hackable = recipe.reasoning_task("sum", thinking=True, n_numbers=4, reward=s["hack_reward"])
        h = m.grpo(hackable, seed, True, progress)
        strict = m.tasks[True][4]
        prompts = strict.eval_prompts(s["n_eval"])
        replies = m.policy.greedy(prompts).answers
        hack = {
            "run": _run_figures(h),
            "proxy": float(hackable.rewards(prompts, replies).mean()),
            "strict": float(strict.is_correct(prompts, replies).float().mean()),
            "truncated": h.evals[-1]["greedy_truncated"],
            "format_last5": float(h["format_rate"][-5:].mean()),
            "example": replies[0][0],
        }
        if honest_weights is not None:
            m.restore(honest_weights)
            hack["honest_proxy"] = float(hackable.rewards(prompts, m.policy.greedy(prompts).answers).mean())
        out["hack"] = hack
        bar.update()
    bar.close()
    return out


def nested(run: Any, path: tuple[str, ...]) -> Any:
    """``run[path[0]][path[1]]...``, or None where a key is missing (an arm that seed did not run)."""
    for key in path:
        if not isinstance(run, dict) or key not in run:
            return None
        run = run[key]
    return run


def summarize(runs: list[dict[str, Any]], base: dict[str, float]) -> dict[str, Any]:
    """Mean and spread over seeds of each arm's held-out accuracy, and the differences the targets read."""

    def over(path: tuple[str, ...]) -> dict[str, float] | None:
        values = [nested(r, path) for r in runs]
        return None if any(v is None for v in values) else spread(values)

    out: dict[str, Any] = {"base": base}
    for name, path in {
        "warm_sum3": ("warm", "sum3"),
        "warm_sum4": ("warm", "sum4"),
        "warm_seconds": ("warm", "seconds"),
        "thinking_sum3": ("thinking", "sum3"),
        "thinking_sum4": ("thinking", "sum4"),
        "thinking_seconds": ("thinking", "run", "train_seconds"),
        "thinking_steps": ("thinking", "run", "steps"),
        "pass1_before": ("thinking", "pass_before", "pass@1"),
        "pass1_after": ("thinking", "pass_after", "pass@1"),
        "control_sum3": ("control", "sum3"),
        "control_sum4": ("control", "sum4"),
        "control_steps": ("control", "steps"),
        "answer_warm_sum4": ("answer-only", "warm", "sum4"),
        "answer_sum3": ("answer-only", "sum3"),
        "answer_sum4": ("answer-only", "sum4"),
        "answer_steps": ("answer-only", "run", "steps"),
        "hack_strict": ("hack", "strict"),
        "hack_proxy": ("hack", "proxy"),
        "honest_proxy": ("hack", "honest_proxy"),
    }.items():
        value = over(path)
        if value is not None:
            out[name] = value
    n = runs[0].get("thinking", {}).get("pass_after", {})
    for key in n:
        if key != "pass@1":
            out["passk_before"] = over(("thinking", "pass_before", key))
            out["passk_after"] = over(("thinking", "pass_after", key))
            out["passk"] = key
    return out


def check_targets(runs: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, bool]:
    """Issue 22's targets on the mean over seeds, for the arms that ran."""
    mean = {k: v["mean"] for k, v in summary.items() if isinstance(v, dict) and "mean" in v}
    targets = {}
    if "thinking_sum4" in mean:
        minutes = [(r["warm"]["seconds"] + r["thinking"]["run"]["train_seconds"]) / 60 for r in runs]
        targets["thinking: 4-number accuracy +50 points within 15 min"] = (
            mean["thinking_sum4"] - summary["base"]["think_sum4"] >= 0.50 and max(minutes) <= 15
        )
    if "thinking_sum4" in mean and "control_sum4" in mean:
        targets["GRPO >= 15 points over the supervised control"] = mean["thinking_sum4"] - mean["control_sum4"] >= 0.15
    if "thinking_sum4" in mean and "answer_sum4" in mean:
        targets["thinking >= 15 points over answer-only"] = mean["thinking_sum4"] - mean["answer_sum4"] >= 0.15
    if "hack_strict" in mean and "honest_proxy" in mean:
        targets["hacked: strict accuracy >= 20 points below, proxy higher"] = (
            mean["hack_strict"] <= mean["thinking_sum4"] - 0.20 and mean["hack_proxy"] > mean["honest_proxy"]
        )
    return targets


def _pct(s: dict[str, float] | None) -> str:
    return "—" if s is None else f"{s['mean']:.1%} ± {s['std']:.1%}"


def _report(runs: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    print(f"\nReasoning (notebook 10's arms), 4-number sums, greedy on held-out problems, {len(runs)} seed(s)")
    base = summary["base"]
    print(f"  base model: {base['think_sum4']:.1%} with a scratchpad, {base['answer_sum4']:.1%} answer only")
    for r in runs:
        w = r["warm"]  # every seed has one
        parts = [f"seed {r['seed']}: warm start {w['steps']} steps {w['seconds']:.0f} s -> {w['sum4']:.0%};"]
        if "thinking" in r:
            t = r["thinking"]
            parts.append(f"GRPO {t['run']['steps']} steps {t['run']['train_seconds']:.0f} s -> {t['sum4']:.0%};")
        if "control" in r:
            parts.append(f"control {r['control']['steps']} SFT steps -> {r['control']['sum4']:.0%};")
        if "answer-only" in r:
            a = r["answer-only"]
            parts.append(f"answer-only {a['warm']['sum4']:.0%} -> {a['run']['steps']} steps -> {a['sum4']:.0%};")
        if "hack" in r:
            h = r["hack"]
            parts.append(f"hacked strict {h['strict']:.0%}, proxy {h['proxy']:.0%}")
        print("  " + " ".join(parts))
    print("  mean ± std over seeds:")
    for label, key in [
        ("warm start (worked 3-number sums)", "warm_sum4"),
        ("+ thinking GRPO", "thinking_sum4"),
        ("+ supervised control, same time", "control_sum4"),
        ("answer-only warm start", "answer_warm_sum4"),
        ("+ answer-only GRPO", "answer_sum4"),
        ("hacked run, strict accuracy", "hack_strict"),
        ("hacked run, proxy reward", "hack_proxy"),
        ("honest run, proxy reward", "honest_proxy"),
    ]:
        if key in summary:
            print(f"    {label:36} {_pct(summary[key])}")


def measure_base(settings: dict[str, Any], device: str | None = None) -> dict[str, float]:
    """The base model's greedy accuracy on the held-out 3- and 4-number sums, with and without a scratchpad:
    ``{"think_sum3": ..., "think_sum4": ..., "answer_sum3": ..., ...}``."""
    m = _Model(RECIPES[model_kind(SMOLLM2_ALIAS, device)], device, settings)
    out = {}
    for form, thinking in FAMILY.items():
        acc = m.held_out(thinking)
        out.update({f"{form}_sum{n}": acc[f"sum{n}"] for n in (3, 4)})
    return out


def reasoning_part(
    record: Record,
    seeds: Sequence[int],
    arms: Sequence[str] = ARMS,
    quick: bool = False,
    save: bool = False,
    key: str | None = None,
    device: str | None = None,
) -> dict[str, bool]:
    """Every arm for every seed, one after the other, into ``record.figures`` (or its ``key`` entry), saved again
    after each seed when ``save`` (a stopped run keeps what it measured); prints the table and returns the
    targets."""
    if not list(seeds):
        raise ValueError("seeds: give at least one seed")
    s = QUICK_SETTINGS if quick else SETTINGS
    figures = record.figures if key is None else record.figures.setdefault(key, {})
    base = measure_base(s, device)
    runs: list[dict[str, Any]] = []
    figures.update(settings=s, arms=list(arms), seeds=list(seeds), base=base, runs=runs)
    for seed in seeds:
        runs.append(run_seed(seed, arms, s, device, progress=not quick))
        figures["summary"] = summarize(runs, base)
        if save:
            record.save()
    _report(runs, figures["summary"])
    return check_targets(runs, figures["summary"])


def run_reasoning_benchmark(
    seeds: Sequence[int] = (0, 1, 2),
    arms: Sequence[str] = ARMS,
    quick: bool = False,
    save: str | None = None,
    out: str | None = None,
    device: str | None = None,
) -> int:
    """``reasoning_part`` on its own record (``save``: its results name), then the targets (``bench.finish``)."""
    record = Record(save or "bench_reasoning", seeds=list(seeds))
    targets = reasoning_part(record, seeds, arms, quick, save is not None, device=device)
    return finish(record, targets, save, quick, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Notebook 10's runs over seeds (minirl.bench.reasoning_rl).")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="the seeds to run (default 0 1 2)")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS, help="the arms to run (default all)")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything (a smoke test)")
    parser.add_argument("--save", nargs="?", const="bench_reasoning", default=None, metavar="NAME")
    args = parser.parse_args(argv)
    return run_reasoning_benchmark(args.seeds, args.arms, args.quick, args.save)


if __name__ == "__main__":
    raise SystemExit(main())

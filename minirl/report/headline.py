"""README's headline table (``headline``): one row per headline figure (the ladder, the toy benchmark, SmolLM2 on
a CPU and on a GPU, reasoning, TRL), each from its record(s), with the RESULTS.md section that explains it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minirl.bench import spread
from minirl.report._format import _load, _seconds, pct, pm, table
from minirl.report.lm import SMOLLM2_WORDS, _lm
from minirl.report.reasoning import WARM_3

Row = tuple[str, str, list[Mapping[str, Any]], str]
"""A row of the headline table: what was measured, the result, the record(s) it comes from, the RESULTS.md link."""


def _machine(data: Mapping[str, Any]) -> str:
    """``2 CPU cores`` or the GPU's name: the machine a record was measured on, in a few words."""
    m = data.get("machine", {})
    return m.get("gpu") or f"{m.get('cores')} CPU cores"


def _from(records: list[Mapping[str, Any]], link: str) -> str:
    """The RESULTS.md section a row's figures are explained in, then each record's file, commit and date."""
    files = "; ".join(
        f"`results/{d['file']}`, commit {(d.get('commit') or '?')[:7]}, {str(d.get('date', '?'))[:10]}"
        + (" (measured before this version of the code)" if d.get("stale") else "")
        for d in records
    )
    return f"{link}; {files}"


def _headline_ladder() -> Row | str:
    data = _load("ladder")
    if data is None:
        return "minirl ladder --seeds 3 --save"
    f = data["figures"]
    (first, a), *_, (last, b) = f["rungs"].items()
    return (
        f"`minirl ladder` (the main job): {len(f['rungs'])} rungs of the policy-gradient ladder × "
        f"{len(data['seeds'])} seeds, sorting 3 numbers",
        f"{f['seconds']:.0f} s in all; greedy exact {pct(a['final_mean'])} ± {100 * a['final_std']:.1f} on the "
        f"first rung (`{first}`), {pct(b['final_mean'])} ± {100 * b['final_std']:.1f} on the last (`{last}`)",
        [data],
        "[The main job](RESULTS.md#the-main-job-minirl-ladder)",
    )


def _headline_bench() -> Row | str:
    data = _load("bench")
    if data is None:
        return "minirl bench --save"
    large = data["figures"]["large"]
    best, r = max(large["methods"].items(), key=lambda kv: kv[1]["mean"])
    return (
        f"The toy benchmark: sorting 5 numbers from 10 values, {large['budget_s']:.0f} s of training a run, "
        f"{len(data['seeds'])} seeds",
        f"greedy exact {pct(r['mean'])} for the best preset (`{best}`), {pct(large['ceiling'])} for supervised "
        "training on the sorted answer",
        [data],
        "[The toy benchmark](RESULTS.md#the-toy-benchmark-minirl-bench)",
    )


def _headline_smollm2(name: str, kind: str, device: str, link: str) -> Row | str:
    data = _load(name)
    if data is None or data["figures"]["smollm2"]["recipe"] != kind:
        return SMOLLM2_WORDS[kind]["command"]
    summary, runs = _lm(data, "smollm2")
    return (
        f"SmolLM2-135M-Instruct learns to sort 3 numbers in a chat prompt ({device}, {len(runs)} seeds)",
        f"held-out greedy accuracy {pm(summary['before'])} → {pm(summary['after'])}, "
        f"{_seconds(60 * summary['train_minutes']['mean'])} of training",
        [data],
        link,
    )


def _headline_reasoning() -> Row | str:
    """Thinking GRPO on 4-number sums over seeds: from ``minirl.bench.reasoning_rl``'s record when there is one,
    else from notebook 10's seed-0 run and the exploration runs with the same recipe on the other seeds."""
    from minirl.bench.reasoning_rl import nested

    what = "SmolLM2 reasons in thinking tokens before it answers: 4-number sums (notebook 10, the CPU recipe)"
    how = " (held-out greedy accuracy after the warm start → after GRPO)"
    link = "[Reasoning](RESULTS.md#reasoning-thinking-tokens-on-smollm2-notebook-10)"
    data = _load("bench_reasoning")
    if data is not None and "budgets" in data["figures"]:
        runs = [r for r in data["figures"]["runs"] if nested(r, ("thinking", "sum4")) is not None]
        seeds = "; ".join(
            f"seed {r['seed']}: {pct(nested(r, ('warm', 'sum4')), 0)} → {pct(nested(r, ('thinking', 'sum4')), 0)}"
            for r in runs
        )
        summary = data["figures"].get("summary", {})
        if len(runs) > 1 and "warm_sum4" in summary and "thinking_sum4" in summary:
            mean = f"{pm(summary['warm_sum4'])} → {pm(summary['thinking_sum4'])}, mean ± std ({seeds})"
            return f"{what[:-1]}, {len(runs)} seeds)", mean + how, [data], link
        return what, seeds + how, [data], link
    seed0, levers = _load("reasoning_seed0"), _load("reasoning_levers")
    if seed0 is None or levers is None:
        return "python -m minirl.bench.reasoning_rl --seeds 0 1 2 --save"
    same = [
        r
        for r in levers["figures"]["runs"]
        if r["prompt"] == "a worked 4-number example"
        and r.get("warm_start", WARM_3) == WARM_3
        and r["knobs"]["prompts"] == seed0["figures"]["recipe"]["prompts_per_step"]
        and r["knobs"]["group"] == seed0["figures"]["recipe"]["group_size"]
        # a lever run sampling at another temperature than the recipe's is not the recipe
        and r["knobs"].get("temperature", 1.0) == seed0["figures"]["recipe"].get("temperature", 1.0)
        and r["seed"] != 0
    ]
    cells = [(0, seed0["figures"]["think4"], seed0["figures"]["rl4"])]
    cells += [(r["seed"], r["evals"][0]["greedy_exact"], r["evals"][-1]["greedy_exact"]) for r in same]
    seeds = "; ".join(f"seed {s}: {pct(a, 0)} → {pct(b, 0)}" for s, a, b in sorted(cells))
    return what, seeds + how, [seed0, levers], link


def _headline_reasoning_gpu() -> Row | str:
    """The GPU reasoning recipe over seeds (``scripts/gpu_check.sh reasoning``): warm start → thinking GRPO."""
    data = _load("bench_reasoning_gpu")
    if data is None or "summary" not in data["figures"]:
        return "bash scripts/gpu_check.sh reasoning"
    summary, runs = data["figures"]["summary"], data["figures"]["runs"]
    minutes = summary["warm_plus_grpo_minutes"]
    return (
        f"The same on a GPU: 4-number sums (the GPU reasoning recipe, {len(runs)} seeds)",
        f"held-out greedy accuracy {pm(summary['warm_sum4'])} after the warm start → {pm(summary['thinking_sum4'])} "
        f"after GRPO, {_seconds(60 * minutes['mean'])} of warm start and GRPO",
        [data],
        "[Reasoning](RESULTS.md#reasoning-thinking-tokens-on-smollm2-notebook-10)",
    )


def _headline_self_training_cpu() -> Row | None:
    """The comparison on 2 CPU cores, once imitation, expert iteration and GRPO hold at least three seeds."""
    from minirl.report.self_training import _merged_runs

    data = _load("bench_self_training")
    if data is None:
        return None
    extra = _load("bench_self_training_cpu_arms")
    runs = _merged_runs(data, extra)
    arms = {"imitate": "imitation of worked solutions", "expert_iteration": "expert iteration", "grpo": "GRPO"}
    if any(sum(arm in r for r in runs) < 3 for arm in arms):
        return None
    parts = [f"{label} {pm(spread([r[arm]['sum4'] for r in runs if arm in r]), 0)}" for arm, label in arms.items()]
    warm = spread([r["warm"]["sum4"] for r in runs])
    steps = data["figures"]["recipe"]["steps"]
    return (
        f"What RL adds beyond imitation: notebook 10's task, one budget from one warm start ({len(runs)} seeds)",
        f"4-number sums after {steps} steps from {pm(warm, 0)}: " + ", ".join(parts),
        [data, *([extra] if extra is not None else [])],
        "[Learning from your own samples](RESULTS.md#learning-from-your-own-samples-notebook-11)",
    )


def _headline_self_training() -> Row | str:
    cpu = _headline_self_training_cpu()
    if cpu is not None:
        return cpu
    data = _load("bench_self_training_gpu")
    if data is None:
        return "python -m minirl.bench.self_training --seeds 0 1 2 --save"
    runs = data["figures"]["runs"]
    arms = {"imitate": "imitation of worked solutions", "grpo": "GRPO", "expert_iteration": "expert iteration"}
    seeds = ", ".join(str(r["seed"]) for r in runs)
    parts = [f"{label} {pct(runs[0][arm]['sum4'], 0)}" for arm, label in arms.items() if arm in runs[0]]
    bon = runs[0].get("best_of_n")
    judge = ""
    if bon is not None:
        n = len(bon["curves"]["judge"])
        curve = bon["curves"]["judge"]
        judge = f"; the reply a SmolLM2 judge likes best of {n}: {pct(curve[-1], 0)} (one reply: {pct(curve[0], 0)})"
    steps = data["figures"]["recipe"]["steps"]
    return (
        f"What RL adds beyond imitation: notebook 10's task, one budget from one warm start (seed(s) {seeds})",
        f"4-number sums after {steps} steps from {pct(runs[0]['warm']['sum4'], 0)}: " + ", ".join(parts) + judge,
        [data],
        "[Learning from your own samples](RESULTS.md#learning-from-your-own-samples-notebook-11)",
    )


def _headline_trl() -> Row | str:
    data = _load("bench_trl")
    if data is None:
        return "minirl bench --trl --seeds 3 --save"
    m = data["figures"]["tiny"]["mean"]
    return (
        f"minirl and TRL's `GRPOTrainer` on the same run (the tiny model, {len(data['seeds'])} seeds)",
        f"{m['s_per_step']['minirl']['mean']:.2f} s a step for minirl, {m['s_per_step']['trl']['mean']:.2f} s "
        f"for TRL; reward over the last 5 steps {m['reward']['minirl']['mean']:.3f} and "
        f"{m['reward']['trl']['mean']:.3f}",
        [data],
        "[minirl and TRL side by side](RESULTS.md#minirl-and-trl-side-by-side)",
    )


def headline() -> str:
    """README's summary: one row per headline figure, each from its record, with the RESULTS.md section that
    explains it and the record's file, commit and date."""
    rows = []
    for make in (
        _headline_ladder,
        _headline_bench,
        lambda: _headline_smollm2(
            "bench_lm", "pretrained", "the CPU recipe", "[SmolLM2 on 2 CPU cores](RESULTS.md#smollm2-on-2-cpu-cores)"
        ),
        lambda: _headline_smollm2(
            "bench_lm_gpu", "pretrained-cuda", "the GPU recipe", "[SmolLM2 on a GPU](RESULTS.md#smollm2-on-a-gpu)"
        ),
        _headline_reasoning,
        _headline_reasoning_gpu,
        _headline_self_training,
        _headline_trl,
    ):
        row = make()
        if isinstance(row, str):
            rows.append(["", f"not measured yet: `{row}`", "", ""])
            continue
        what, result, records, link = row
        rows.append([what, result, " and ".join(dict.fromkeys(_machine(d) for d in records)), _from(records, link)])
    return "\n".join(
        [
            table(["what", "measured", "on", "explained in; from"], rows),
            "",
            "*Each row is generated from the record(s) it names; RESULTS.md gives every record's machine, load, "
            "commit, date and command.*",
        ]
    )

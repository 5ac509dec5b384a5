"""RESULTS.md's block on the text maze walked by SmolLM2 (``minirl.bench.agents``, the chapter on agents): the base
model, the warm start against the uniform walker's exact success, and GRPO, from every start cell; on 2 CPU cores
(``bench_agents``) and on one GPU (``bench_agents_gpu``, with the warm-start lever probes
``bench_agents_gpu_warm80*``)."""

from __future__ import annotations

from typing import Any

from minirl.report._format import _load, _seconds, missing, pct, provenance, table

LEVER_PROBES = ("bench_agents_gpu_warm80", "bench_agents_gpu_warm80_s64")
"""Records of the same benchmark with a changed recipe (each record's command and notes say how)."""


def _steps_to_all(run: dict[str, Any]) -> str:
    """The first evaluation step at which greedy walks succeed from every start cell."""
    for e in run["run"]["evals"]:
        if e["greedy_exact"] >= 1.0:
            return str(int(e["step"]))
    return "never"


def _seed_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in runs:
        base, warm, grpo = r.get("base"), r.get("warm"), r.get("grpo")
        row = [str(r["seed"])]
        row.append(
            f"{pct(base['greedy_mean'], 0)} / {pct(base['sampled_mean'], 0)} (moves {pct(base['move_rate'], 0)})"
            if base
            else "not measured"
        )
        ro = r.get("rollout")
        row.append(f"{_seconds(ro['seconds'])} ({ro['model_tokens_per_second']:.0f} tokens/s)" if ro else "–")
        row.append(
            f"{warm['steps']} steps, {_seconds(warm['seconds'])}: {pct(warm['sampled_mean'], 0)} "
            f"(largest gap {warm['max_gap_to_uniform']:.2f}; moves {pct(warm['move_rate'], 0)})"
            if warm
            else "not measured"
        )
        row.append(
            f"{grpo['run']['steps']} steps, {_seconds(grpo['run']['train_seconds'])}: {pct(grpo['greedy_mean'], 0)} / "
            f"{pct(grpo['sampled_mean'], 0)} (every cell at step {_steps_to_all(grpo)})"
            if grpo
            else "not measured"
        )
        rows.append(row)
    return rows


def _cell_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """The warm start's sampled success per start cell, each seed, against the uniform walker's exact value."""
    warmed = [r for r in runs if "warm" in r]
    if not warmed:
        return []
    cells = list(warmed[0]["warm"]["uniform"])
    rows = [["uniform walker (exact)", *(f"{warmed[0]['warm']['uniform'][c]:.2f}" for c in cells)]]
    rows += [[f"seed {r['seed']}", *(f"{r['warm']['sampled'][c]:.2f}" for c in cells)] for r in warmed]
    return rows


def _one_record(data: dict[str, Any]) -> list[str]:
    f = data["figures"]
    recipe, budgets, runs = f["recipe"], f["budgets"], f["runs"]
    lines = [
        f"The maze recipe (`maze_recipe`: a warm start of {recipe['sft_steps']} steps of "
        f"{recipe['sft_prompts_per_step']} uniform walks at learning rate {recipe['sft_learning_rate']:g}, then GRPO "
        f"for {recipe['steps']} steps of {recipe['prompts_per_step']} start cells × {recipe['group_size']} episodes "
        f"at learning rate {recipe['learning_rate']:g}, the top {recipe['trainable_layers']} blocks training, KL β = "
        f"{recipe['kl_coef']:g}), seeds {', '.join(str(r['seed']) for r in runs)}. Success from each of the 10 start "
        f"cells (greedy / sampled at T = 1, {budgets['samples']} walks a cell; mean over the cells); the rollout: "
        f"{budgets['rollout_prompts'] * budgets['rollout_group']} six-turn episodes sampled once:",
        "",
        table(
            ["seed", "base model: greedy / sampled", "rollout", "warm start: sampled", "GRPO: greedy / sampled"],
            _seed_rows(runs),
        ),
    ]
    cells = _cell_rows(runs)
    if cells:
        lines += [
            "",
            "After the warm start, sampled success from each start cell against the uniform walker's:",
            "",
            table(["start cell", *(c for c in runs[0]["warm"]["uniform"])], cells),
        ]
    return [*lines, "", provenance(data)]


def agents() -> str:
    """The text maze on 2 CPU cores (or that it is not measured yet), then on one GPU with its lever probes."""
    lines: list[str] = []
    cpu = _load("bench_agents")
    if cpu is None:
        lines.append("On 2 CPU cores: " + missing("bench_agents", "python -m minirl.bench.agents --seeds 0 1 2 --save"))
    else:
        lines += ["On 2 CPU cores:", "", *_one_record(cpu)]
    gpu = _load("bench_agents_gpu")
    if gpu is not None:
        lines += ["", f"On one {gpu['machine'].get('gpu', 'GPU')}, the same recipe:", "", *_one_record(gpu)]
    for name in LEVER_PROBES:
        probe = _load(name)
        if probe is not None:  # the record keeps the recipe it ran: _one_record describes the change
            lines += [
                "",
                "A lever probe on the same GPU, the recipe changed as its command says:",
                "",
                *_one_record(probe),
            ]
    return "\n".join(lines)

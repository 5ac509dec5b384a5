"""RESULTS.md's and notebook 11's block on learning from your own samples (``minirl.bench.self_training``): each arm's
held-out accuracy from the same warm start at a matched budget, best-of-N against N for three selectors, and the
judge's agreement with the verifier; on 2 CPU cores (``bench_self_training``, with arms a second command measured in
``bench_self_training_cpu_arms``) and on one GPU (``bench_self_training_gpu``)."""

from __future__ import annotations

from typing import Any

from minirl.bench import spread
from minirl.report._format import _load, _seconds, missing, pct, provenance, table
from minirl.report.reasoning_bench import _sittings

ARM_LABELS = {
    "imitate": "imitation: worked 4-number solutions",
    "imitate_noisy": "imitation: the same, {noise:.0%} of them with a slip",
    "expert_iteration": "expert iteration (imitate the accepted samples)",
    "expert_iteration_round": "expert iteration, KL reference from the previous round",
    "online_dpo": "online DPO (best vs worst of each group)",
    "grpo": "GRPO (the verifier's reward)",
    "grpo_judge": "GRPO on the judge's P(yes) instead",
}
"""The rows of the comparison, in order, and what each arm is."""
NS = (1, 2, 4, 8, 16, 32, 64)


def _arm_rows(runs: list[dict[str, Any]], budgets: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The comparison's header and rows: each arm's held-out 4-number accuracy per seed (— where a seed lacks the
    arm), their mean ± std over the seeds that have it, the 3-number mean, the steps and the mean time of an arm."""
    seeds = [r["seed"] for r in runs]
    several = len(seeds) > 1
    header = ["arm (from the warm start)", *(f"4 numbers, seed {s}" for s in seeds)]
    header += (
        ["mean ± std", "3-number sums (mean)", "steps", "time (mean)"]
        if several
        else ["3-number sums", "steps", "time"]
    )
    rows = []
    for arm, label in ARM_LABELS.items():
        cells = [r[arm] for r in runs if arm in r]
        if not cells:
            continue
        steps = cells[0].get("steps") or cells[0].get("run", {}).get("steps")
        seconds = [c.get("seconds") or c.get("run", {}).get("train_seconds") for c in cells]
        four = [pct(r[arm]["sum4"], 0) if arm in r else "—" for r in runs]
        mean3 = spread([c["sum3"] for c in cells])["mean"]
        row = [label.format(**budgets), *four]
        if several:
            s4 = spread([c["sum4"] for c in cells])
            of = "" if len(cells) == len(runs) else f" ({len(cells)} seed{'s' if len(cells) > 1 else ''})"
            row.append(f"{pct(s4['mean'], 0)} ± {100 * s4['std']:.0f}{of}")
        timed = [t for t in seconds if t is not None]
        row += [pct(mean3, 0), str(steps), _seconds(sum(timed) / len(timed)) if timed else "—"]
        rows.append(row)
    return header, rows


def _best_of_n(runs: list[dict[str, Any]], prompts: int) -> list[str]:
    """Best-of-N's three curves at N = 1, 2, 4, … (each seed's value, or the mean ± std over several seeds), and the
    judge's agreement with the verifier on each seed's replies."""
    bons = [r["best_of_n"] for r in runs]
    n = min(len(b["curves"]["verifier"]) for b in bons)
    ns = [k for k in NS if k <= n]
    several = len(bons) > 1

    def cell(key: str, k: int) -> str:
        values = [b["curves"][key][k - 1] for b in bons]
        if not several:
            return pct(values[0], 0)
        s = spread(values)
        return f"{pct(s['mean'], 0)} ± {100 * s['std']:.0f}"

    rows = [
        [name, *(cell(key, k) for k in ns)]
        for name, key in (
            ("the verifier (pass@N)", "verifier"),
            ("a majority vote", "majority"),
            ("the judge's highest P(yes)", "judge"),
        )
    ]
    seeds = ", ".join(str(r["seed"]) for r in runs)
    judges = []
    for r, bon in zip(runs, bons):
        judge = bon["judge"]
        never = judge["yes_when_right"] == 0 and judge["yes_when_wrong"] == 0
        judges.append(
            f"seed {r['seed']}: P(yes) ≥ 0.5 for {pct(judge['yes_when_right'], 0)} of the right replies and "
            f"{pct(judge['yes_when_wrong'], 0)} of the wrong ones, agreement {pct(judge['agreement'], 0)}"
            + (" (it never says yes: that is the share of wrong replies)" if never else "")
            + f", mean P(yes) {bon['judge_mean_right']:.2f} on right replies and {bon['judge_mean_wrong']:.2f} on "
            "wrong ones"
        )
    return [
        f"Best-of-N from the warm start (seed(s) {seeds}): N replies at T = 1 to each of the first {prompts} held-out "
        "problems, one kept by each selector; accuracy of the kept reply"
        + (" (mean ± std over the seeds, in points):" if several else ":"),
        "",
        table(["chosen by", *(f"N = {k}" for k in ns)], rows),
        "",
        "The judge (SmolLM2 asked whether the reply is right) on those replies: " + "; ".join(judges) + ".",
    ]


def _merged_runs(data: dict[str, Any], extra: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each seed's figures, with the arms ``extra`` (a second command's record) measured for the same seed."""
    runs = [dict(r) for r in data["figures"]["runs"]]
    if extra is not None:  # an arm measured by a second command, from its own warm start
        for r in runs:
            for x in extra["figures"]["runs"]:
                if x["seed"] == r["seed"]:
                    r.update({k: v for k, v in x.items() if k in ARM_LABELS})
    return runs


def _judge_lines(runs: list[dict[str, Any]]) -> list[str]:
    """GRPO paid by the judge, per seed: its reward against the verifier's accuracy of the same samples, and the
    replies the first seed's run learned."""
    judge_runs = [r for r in runs if "grpo_judge" in r]
    if not judge_runs:
        return []
    cells = "; ".join(
        f"seed {r['seed']}: {r['grpo_judge']['judge_reward_last5']:.2f} and "
        f"{pct(r['grpo_judge']['run']['exact_last5'], 0)}"
        for r in judge_runs
    )
    first = judge_runs[0]
    return [
        "",
        "GRPO on the judge: its reward (the judge's mean P(yes)) over the last 5 steps, and the verifier's accuracy "
        f"of the same samples: {cells}; greedy replies after seed {first['seed']}'s run: "
        + "; ".join(f"`{e!r}`" for e in first["grpo_judge"].get("examples", [])[:2]),
    ]


def _one_record(data: dict[str, Any], extra: dict[str, Any] | None = None) -> list[str]:
    f = data["figures"]
    runs = _merged_runs(data, extra)
    recipe, budgets = f["recipe"], f["budgets"]
    seeds = ", ".join(str(r["seed"]) for r in runs)
    warm = (
        f"the worked warm start ({recipe['sft_steps']} supervised steps on 3-number sums: "
        + ", ".join(f"seed {r['seed']} {pct(r['warm']['sum4'], 0)}" for r in runs if "warm" in r)
        + " on 4-number sums)"
    )
    header, rows = _arm_rows(runs, budgets)
    if not rows:  # only best-of-N measured: no training arm to tabulate
        lines = [f"From {warm}: no training arm measured (the command ran {', '.join(f['arms'])})."]
    else:
        lines = [
            f"From {warm}, each arm trains {recipe['steps']} steps on 4-number sums: the sampling arms draw "
            f"{recipe['prompts_per_step']} prompts × {recipe['group_size']} replies a step at T = "
            f"{recipe['temperature']:g} and the imitation arms take {recipe['sft_prompts_per_step']} demonstrations "
            f"a step. Held-out greedy accuracy on {recipe['eval_prompts']} problems, seed(s) {seeds}:",
            "",
            table(header, rows),
        ]
    not_run = [a for a in f["arms"] if a != "best_of_n" and not any(a in r for r in runs)]
    if not_run:
        lines += [
            "",
            "Named in the command but not measured (the run stopped before them): " + ", ".join(not_run) + ".",
        ]
    if extra is not None:
        names = [a for a in extra["figures"]["arms"] if a in ARM_LABELS]
        first = extra["figures"]["runs"][0]
        warm = first.get("warm", {}).get("sum4")
        lines += [
            "",
            f"{', '.join(names)} of seed {first['seed']}: a second command, from its own warm start "
            f"({pct(warm, 0)} on 4-number sums).",
        ]
    lines += _judge_lines(runs)
    with_bon = [r for r in runs if "best_of_n" in r]
    if with_bon:
        lines += ["", *_best_of_n(with_bon, budgets["bon_prompts"])]
    from minirl.bench.self_training import ARMS

    lines += ["", *_sittings(data, data["figures"]["runs"], ARMS), provenance(data)]
    if extra is not None:
        lines += ["", provenance(extra)]
    return lines


def self_training() -> str:
    """Notebook 11's comparison on 2 CPU cores (or that it is not measured yet), then on one GPU."""
    lines = []
    cpu, cpu_arms = _load("bench_self_training"), _load("bench_self_training_cpu_arms")
    if cpu is None and cpu_arms is None:
        lines.append(
            "On 2 CPU cores: "
            + missing("bench_self_training", "python -m minirl.bench.self_training --seeds 0 1 2 --save")
        )
    elif cpu is None or cpu_arms is None:
        lines += ["On 2 CPU cores:", "", *_one_record(cpu or cpu_arms)]  # type: ignore[arg-type]
    else:
        lines += ["On 2 CPU cores:", "", *_one_record(cpu, cpu_arms)]
    gpu = _load("bench_self_training_gpu")
    if gpu is not None:
        lines += [
            "",
            f"On one {gpu['machine'].get('gpu', 'GPU')}:",
            "",
            *_one_record(gpu),
        ]
    return "\n".join(lines)

"""RESULTS.md's blocks on notebook 10's reasoning recipe at seed 0 and its exploration: the notebook's full run
(``reasoning``), what a 4-number prompt shows (``reasoning_prompts``), and the runs over the recipe's levers
(``reasoning_levers``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minirl.report._format import _load, _seconds, missing, pct, pm, provenance, table


def _base_sums() -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """The base model with a scratchpad on 3- and 4-number sums (``minirl.bench.reasoning``'s record), and the
    records read."""
    data = _load("reasoning_base")
    if data is None:
        return {}, {}, []
    table = data["figures"]["table"]
    return table.get("sum3", {}).get("thinking", {}), table.get("sum4", {}).get("thinking", {}), [data]


def _pass_ks(curve: Sequence[float]) -> list[int]:
    """The k of a pass@k curve (k = 1 … n) worth a column: the powers of 2 up to n."""
    return [k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k <= len(curve)]


def reasoning() -> str:
    """Notebook 10's full run (seed 0): each stage's steps, wall time and held-out accuracy on 3- and 4-number
    sums, pass@k before and after GRPO, and the reward-hacking lab."""
    data = _load("notebook_10_full_cpu")
    if data is None or "fix4" not in data["figures"]:
        return missing("notebook_10_full_cpu", "python -m minirl.results notebook solutions/10_*.ipynb")
    f = data["figures"]
    base3, base4, base_records = _base_sums()
    rows = [
        ["the base model, asked to think", "", "", pct(base3.get("greedy"), 0), pct(base4.get("greedy"), 0)],
        ["warm start on worked 3-number sums", f["sft_steps"], _seconds(f["sft_seconds"]), pct(f["think3"], 0),
         pct(f["think4"], 0)],
        ["warm start on bare answers (answer only)", f["bare_steps"], _seconds(f["bare_seconds"]), pct(f["bare3"], 0),
         pct(f["bare4"], 0)],
        ["worked warm start + GRPO on 4-number sums (strict verifier)", f["rl_steps"], _seconds(f["rl_seconds"]),
         pct(f["rl3"], 0), pct(f["rl4"], 0)],
        ["worked warm start + more supervised steps on 3-number sums (the control)", f["control_steps"],
         _seconds(f["control_seconds"]), pct(f["control3"], 0), pct(f["control4"], 0)],
        [f"worked warm start + GRPO on the lenient verifier (`{f['hack_verifier']}`)", f["hack_steps"],
         _seconds(f["hack_seconds"]), pct(f["hack3"], 0), pct(f["hack4"], 0)],
        [f"worked warm start + GRPO on the fixed verifier (`{f['fix_verifier']}`)", f["fix_steps"],
         _seconds(f["fix_seconds"]), pct(f["fix3"], 0), pct(f["fix4"], 0)],
    ]  # fmt: skip
    ks = _pass_ks(f["pass_before"])
    passes = table(
        ["pass@k, 4-number sums", *(f"k = {k}" for k in ks)],
        [
            ["after the warm start", *(pct(f["pass_before"][k - 1], 0) for k in ks)],
            ["after GRPO", *(pct(f["pass_after"][k - 1], 0) for k in ks)],
        ],
    )
    return "\n".join(
        [
            "SmolLM2-135M-Instruct on 2 CPU cores, sums of single digits answered with a `<think>` scratchpad "
            f"(notebook 10 in full mode, seed 0). Each stage after the warm start starts from it; every budget is a "
            f"number of steps. Held-out greedy accuracy on {f['n_eval']} problems of each length; the base model's row "
            "comes from `minirl.bench.reasoning`:",
            "",
            table(["stage", "steps", "wall time", "3 numbers", "4 numbers"], rows),
            "",
            f"pass@k on the first {f['pass_prompts']} held-out 4-number sums, {f['pass_samples']} samples each at "
            "T = 1 (the unbiased estimator):",
            "",
            passes,
            "",
            f"The lenient verifier's run: proxy reward on the held-out problems {pct(f['hack_proxy'], 0)} (the honest "
            f"run's replies: {pct(f['honest_proxy'], 0)}); its greedy replies cut by the budget "
            f"{pct(f['hack_truncated'], 0)}; KL coefficient β = {f['kl_coef']:g}.",
            "",
            provenance(data),
            *(provenance(d) for d in base_records),
        ]
    )


def reasoning_prompts() -> str:
    """What a 4-number prompt shows (``minirl.bench.reasoning --prompt-options``): for each option, the base model
    and the reasoning recipe's warm start on held-out 3- and 4-number sums."""
    data = _load("reasoning_prompts")
    if data is None:
        return missing(
            "reasoning_prompts", "python -m minirl.bench.reasoning --prompt-options --save reasoning_prompts"
        )
    f = data["figures"]
    r = f["recipe"]
    rows = [
        [option, pct(o["base4"], 0), pct(o["warm3"], 0), pct(o["warm4"], 0), f"`{o['examples'][0]}`"]
        for option, o in f["options"].items()
    ]
    return "\n".join(
        [
            "What a 4-number question's prompt shows before the question, seed 0: held-out greedy accuracy of the "
            f"base model, then after the reasoning recipe's warm start ({r['sft_steps']} steps of "
            f"{r['sft_prompts_per_step']} worked 3-number sums, whose prompts show a 3-number example, or none in the "
            f"last row), on {f['n_eval']} problems of each length:",
            "",
            table(
                [
                    "the 4-number prompt shows",
                    "base, 4 numbers",
                    "warm start, 3 numbers",
                    "warm start, 4 numbers",
                    "first greedy reply, 4 numbers",
                ],
                rows,
            ),  # fmt: skip
            "",
            provenance(data),
        ]
    )


def _lever_row(
    prompt: str, warm: str, seed: int, batch: str, evals: list[tuple[int, float]], after3: float, length: str
) -> list:
    trajectory = " → ".join(f"{pct(acc, 0)}" for _, acc in evals)
    steps = ", ".join(str(s) for s, _ in evals)
    return [prompt, warm, seed, batch, f"{trajectory} (steps {steps})", pct(after3, 0), length]


WARM_3 = "worked 3-number sums"
"""The recipe's warm start (a lever run that changed it says how, under ``warm_start``)."""


def _lever_times(runs: list[dict[str, Any]]) -> list[str]:
    """One line of the wall times of the lever runs that had the cores to themselves (``alone``)."""
    alone = [r for r in runs if r.get("alone")]
    if not alone:
        return []
    times = "; ".join(
        f"seed {r['seed']}, warm start on {r.get('warm_start', WARM_3)}: warm start {r['warm_seconds']:.0f} s, "
        f"{r['knobs']['steps']} GRPO steps {r['train_seconds']:.0f} s"
        for r in alone
    )
    return ["", f"Wall times of the runs that had the 2 cores to themselves: {times}."]


def _lever_of(prompt: str, warm: str, knobs: Mapping[str, Any]) -> tuple[str, str, str]:
    """What a lever run changed, as the summary groups runs: its prompt, its warm start, prompts × group and T."""
    t = knobs.get("temperature", 1)
    return prompt, warm, f"{knobs['prompts']} × {knobs['group']}" + (f", T = {t:g}" if t != 1 else "")


def _lever_summary(
    finals: dict[tuple[str, str, str], dict[int, float]], notebook_seeds: Mapping[tuple[str, str, str], int]
) -> list[str]:
    """Per lever run on more than one seed: the final 4-number accuracy of each seed, and their mean and spread
    (``minirl.bench.spread``: the standard deviation with n − 1); ``notebook_seeds``: the seed whose figure is
    notebook 10's own run, per setting."""
    from minirl.bench import spread

    rows = []
    for lever, by_seed in finals.items():
        prompt, warm, batch = lever
        if len(by_seed) < 2:
            continue
        s = spread(list(by_seed.values()))
        seeds = ", ".join(
            f"seed {seed}{' (notebook 10)' if notebook_seeds.get(lever) == seed else ''}: {pct(acc, 0)}"
            for seed, acc in sorted(by_seed.items())
        )
        rows.append([prompt, warm, batch, seeds, pm(s, 0), f"{pct(s['min'], 0)}–{pct(s['max'], 0)}"])
    if not rows:
        return []
    return [
        "The same settings over the seeds run: final held-out greedy accuracy on 4-number sums (mean ± std over "
        "seeds, n − 1):",
        "",
        table(
            ["the 4-number prompt shows", "warm start on", "prompts × group", "each seed", "mean ± std", "range"], rows
        ),
        "",
    ]


def reasoning_levers() -> str:
    """The runs that explored the CPU reasoning recipe's levers (``results/reasoning_levers.json``) and notebook
    10's own GRPO run at seed 0 (``results/reasoning_seed0.json``): per run, what the 4-number prompt shows, the
    seed, prompts × group and held-out greedy accuracy on 4-number sums at each evaluation, with the reply length
    at the start and the end of GRPO; then the seed-0 run's pass@k before and after GRPO."""
    data = _load("reasoning_levers")
    if data is None:
        return missing("reasoning_levers", "the exploration script kept in the record")
    runs = sorted(
        data["figures"]["runs"],
        key=lambda r: (
            not r["prompt"].startswith("a worked 4"),
            r["knobs"]["prompts"],
            r.get("warm_start", WARM_3) != WARM_3,
            r["seed"],
        ),
    )
    rows = []
    finals: dict[tuple[str, str, str], dict[int, float]] = {}
    notebook_seeds: dict[tuple[str, str, str], int] = {}
    for r in runs:
        k = r["knobs"]
        length = r["response_length"]
        lever = _lever_of(r["prompt"], r.get("warm_start", WARM_3), k)
        finals.setdefault(lever, {})[r["seed"]] = r["evals"][-1]["greedy_exact"]
        if r.get("notebook"):  # an earlier run of notebook 10 itself, kept with the exploration runs
            notebook_seeds[lever] = r["seed"]
        rows.append(
            _lever_row(
                r["prompt"] + (" (notebook 10)" if r.get("notebook") else ""),
                r.get("warm_start", WARM_3),
                r["seed"],
                lever[2],
                [(e["step"], e["greedy_exact"]) for e in r["evals"]],
                r["final3"],
                "" if length is None else f"{sum(length[:5]) / 5:.0f} → {sum(length[-5:]) / 5:.0f}",
            )
        )
    seed0 = _load("reasoning_seed0")
    passes = []
    if seed0 is not None:
        f = seed0["figures"]
        r = f["recipe"]
        batch = {"prompts": r["prompts_per_step"], "group": r["group_size"], "temperature": r.get("temperature", 1)}
        lever = _lever_of("a worked 4-number example", WARM_3, batch)
        # the notebook's run stands for seed 0 of its setting (a lever run of the same seed stays in the table)
        finals.setdefault(lever, {})[0] = f["rl_trajectory"][-1][1]
        notebook_seeds[lever] = 0
        rows.insert(
            0,
            _lever_row(
                "a worked 4-number example (notebook 10)",
                WARM_3,
                0,
                lever[2],
                [(int(s), a) for s, a in f["rl_trajectory"]],
                f["rl3"],
                "",
            ),
        )
        ks = _pass_ks(f["pass_before"])
        curves = [("after the warm start", f["pass_before"]), ("after GRPO", f.get("pass_after"))]
        passes = [
            "",
            f"The notebook's seed-0 run: pass@k on the first {f['pass_prompts']} held-out 4-number sums, "
            f"{f['pass_samples']} samples each at T = 1 (the unbiased estimator):",
            "",
            table(
                ["", *(f"k = {k}" for k in ks)],
                [[label, *(pct(c[k - 1], 0) for k in ks)] for label, c in curves if c],
            ),
            "",
            provenance(seed0) + (f" {seed0['notes']}" if seed0.get("notes") else ""),
        ]
    k = runs[0]["knobs"]
    summary = _lever_summary(finals, notebook_seeds)
    return "\n".join(
        [
            f"The recipe over seeds (warm start {k['sft_steps']} steps of {k['sft_prompts']} worked sums at "
            f"{k['sft_lr']:g}, then GRPO at a {k['schedule']} {k['lr']:g}, top {k['layers']} blocks, "
            f"KL β = {k['kl']:g}): held-out greedy accuracy on {k['n_eval']} 4-number sums at each evaluation of GRPO, "
            "then on 3-number sums after GRPO, and the mean sampled reply length (tokens) over the first and the last "
            "5 steps of GRPO (not kept for the notebook's run):",
            "",
            table(
                [
                    "the 4-number prompt shows",
                    "warm start on",
                    "seed",
                    "prompts × group",
                    "4 numbers, at each evaluation",
                    "3 numbers after",
                    "reply length",
                ],
                rows,
            ),
            "",
            *summary,
            f"{provenance(data)} {data['notes']} {data['load']['note'].capitalize()}.",
            *_lever_times(runs),
            *passes,
        ]
    )

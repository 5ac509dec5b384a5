"""The measured figures of README.md and RESULTS.md, generated from the results records in ``results/``.

The records are JSON files (``results/*.json``, written by ``minirl.results``).

Every measured table and sentence in those two documents (``DOCUMENTS``) sits between two markers::

    <!-- results: bench_lm_smollm2 (generated from results/ by `python -m minirl.report`) -->
    ...
    <!-- /results -->

and is made here from the record it names, ending with where the figures came from (command, machine, load
beside it, commit, date, file). README holds the short ``headline`` table; RESULTS.md holds every other block
and the text that explains it. ``python -m minirl.report`` rewrites the blocks of both; ``--check`` exits 1 when
one differs from what its record gives, as the test suite does. To change a figure, measure again with
``--save``; to change how it reads, edit the block's renderer below, never the block in the document.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from minirl.results import results_path, summary_line
from minirl.utils import REPO_ROOT

__all__ = ["BLOCKS", "DOCUMENTS", "render", "render_readme", "stale_blocks"]

README = REPO_ROOT / "README.md"
RESULTS = REPO_ROOT / "RESULTS.md"
DOCUMENTS = (README, RESULTS)
"""The documents whose results blocks ``python -m minirl.report`` writes and ``--check`` checks."""
BEGIN = re.compile(r"<!-- results: (?P<name>[a-z0-9_]+) .*?-->\n")
END = "<!-- /results -->"


# ---- formatting ------------------------------------------------------------------------------------------------


def pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def pm(s: Mapping[str, float], digits: int = 1) -> str:
    """``96.0% ± 1.2`` (mean ± std over seeds, in percentage points)."""
    return f"{pct(s['mean'], digits)} ± {100 * s['std']:.{digits}f}"


def _load(name: str) -> dict[str, Any] | None:
    """The record ``results/<name>.json``, with the file it was read from as ``file`` (None when missing)."""
    import json

    path = results_path(name)
    return {**json.loads(path.read_text()), "file": path.name} if path.exists() else None


def _where(data: Mapping[str, Any]) -> str:
    """The record's file, and the name its command saved it under when it is kept under another one (a GPU's
    ``minirl bench --lm --save`` beside the CPU's, say)."""
    kept = f"`results/{data['file']}`"
    if Path(data["file"]).stem == data["name"]:
        return kept
    return f"{kept} (the command saved it as `results/{data['name']}.json`; copied here under this name)"


def provenance(data: Mapping[str, Any]) -> str:
    where = f"{summary_line(data)}; figures in {_where(data)}."
    if data.get("stale"):
        return f"*Measured before this version of the code: {data['stale']}. {where}*"
    return f"*Measured: {where}*"


def missing(name: str, command: str) -> str:
    return f"*Not measured yet: `{command}` writes `results/{name}.json`.*"


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _seconds(x: float | None) -> str:
    if x is None:
        return "never"
    return f"{x:.1f} s" if x < 120 else f"{x / 60:.1f} min"


# ---- the blocks ------------------------------------------------------------------------------------------------


def bench() -> str:
    data = _load("bench")
    if data is None:
        return missing("bench", "minirl bench --save")
    f = data["figures"]
    small = f["small"]
    out = [
        f"**1. Sorting 3 numbers from 5 values, GRPO** (target: ≥ 99% greedy exact within 15 s of training; "
        f"{small['budget_s']:.0f} s per seed):",
        "",
        table(
            ["seed", "steps in the budget", "time to first reach 99%", "final greedy exact"],
            [[seed, r["steps"], _seconds(r["seconds_to_99"]), pct(r["final"])] for seed, r in small["seeds"].items()],
        ),
    ]
    large = f["large"]
    ceiling = large["ceiling"]
    rows = [["supervised ceiling", pct(ceiling), " / ".join(pct(c) for c in large["ceilings"]), "100%"]]
    for algo, r in sorted(large["methods"].items(), key=lambda kv: -kv[1]["mean"]):
        rows.append(
            [
                f"`{algo}`",
                pct(r["mean"]),
                " / ".join(pct(v) for v in r["per_seed"]),
                pct(r["mean"] / ceiling, 0) if ceiling else "n/a",
            ]
        )
    out += [
        "",
        f"**2. Sorting 5 numbers from 10 values** ({large['budget_s']:.0f} s per run, seeds "
        f"{', '.join(str(s) for s in data['seeds'])}; the supervised ceiling trains the same model on the "
        f"sorted answer with as many updates as the best preset; target: the best preset ≥ 90% of the "
        f"ceiling):",
        "",
        table(["method", "greedy exact, mean", "per seed", "of the ceiling"], rows),
    ]
    maze_rows = []
    for method, seeds in f["maze"].items():
        solved = [r["episodes_to_solve"] for r in seeds.values()]
        known = [s for s in solved if s is not None]
        maze_rows.append(
            [
                f"`{method}`",
                " / ".join("never" if s is None else str(s) for s in solved),
                f"{sum(known) / len(known):.0f}" if known else "n/a",
                " / ".join(pct(r["greedy_success"], 0) for r in seeds.values()),
                " / ".join(f"{r['exact_return']:.2f}" for r in seeds.values()),
            ]
        )
    every = next(iter(next(iter(f["maze"].values())).values()))["eval_every_episodes"]
    out += [
        "",
        f"**3. Maze** (target: `reinforce_baseline` and `ppo` reach the goal greedily in ≥ 99% of "
        f"episodes). Episodes until the exact expected return of the greedy policy is ≥ 9.9 of 10, per seed "
        f"(evaluated every {every} episodes, so the counts are multiples of {every}):",
        "",
        table(["method", "episodes, per seed", "mean", "greedy success", "exact return"], maze_rows),
    ]
    if "ladder" in f:
        out += [
            "",
            f"**4. `minirl ladder`, 6 rungs × {len(data['seeds'])} seeds** (target: < 3 minutes): "
            f"{f['ladder']['seconds']:.0f} s, one process per core.",
        ]
    verdicts = ", ".join(f"{name}: {'met' if ok else '**not met**'}" for name, ok in f["targets"].items())
    return "\n".join(out + ["", f"Targets: {verdicts}.", "", provenance(data)])


def ladder() -> str:
    data = _load("ladder")
    if data is None:
        return missing("ladder", "minirl ladder --seeds 3 --save")
    f = data["figures"]
    s = f["settings"]
    rows = []
    for name, r in f["rungs"].items():
        verdict = r["verdict"] or ""
        rows.append(
            [
                name,
                f"`{r['knob'].split(': ', 1)[-1]}`",
                f"{pct(r['final_mean'])} ± {100 * r['final_std']:.1f}",
                pct(r["early_mean"]),
                pct(r["all_equal_end"], 0),
                verdict,
            ]
        )
    samples = next(iter(f["rungs"].values()))["samples"]
    head = (
        f"{len(f['rungs'])} rungs × {len(data['seeds'])} seeds on sorting 3 numbers from 0..4, {s['steps']} "
        f"steps of {s['prompts_per_step']} prompts × {s['group_size']} responses ({samples:,} responses per run), "
        f"{f['workers']} processes: {f['seconds']:.0f} s. Greedy accuracy on {s['eval_prompts']} evaluation "
        f"prompts, mean ± std over seeds (the task has only 125 distinct prompts, so these measure the policy, not "
        f"generalisation):"
    )
    out = [
        head,
        "",
        table(
            [
                "rung",
                "the knob it adds",
                "final",
                "after a tenth of the samples",
                "all-equal groups at the end",
                "verdict printed",
            ],
            rows,
        ),
    ]
    if f.get("remarks"):
        out += ["", " ".join(f["remarks"])]
    return "\n".join(out + ["", provenance(data)])


def _lm(data: dict, model: str) -> tuple[dict, list[dict]]:
    part = data["figures"][model]
    return part["summary"], part["runs"]


# how each SmolLM2 recipe's block reads: its name, the command that measures it, where its target's time is counted,
# what the device adds to the recipe, and what its peak memory measures
SMOLLM2_WORDS: dict[str, dict[str, str]] = {
    "pretrained": {
        "name": "The CPU recipe",
        "command": "minirl bench --lm --seeds 3 --parts tiny,smollm2 --save",
        "target_on": "2 CPU cores",
        "device": "",
        "memory": "peak memory",
    },
    "pretrained-cuda": {
        "name": "The GPU recipe",
        "command": "minirl bench --lm --parts smollm2 --seeds 3 --save bench_lm_gpu",
        "target_on": "one GPU",
        "device": "; float32 weights, bfloat16 autocast",
        "memory": "peak GPU memory",
    },
}


def lm_smollm2_cpu() -> str:
    return _lm_smollm2("bench_lm", "pretrained")


def lm_smollm2_gpu() -> str:
    return _lm_smollm2("bench_lm_gpu", "pretrained-cuda")


def _lm_smollm2(name: str, kind: str) -> str:
    """SmolLM2 learning to sort with the recipe ``RECIPES[kind]`` over seeds, from the record ``name`` that
    ``minirl bench --lm --parts smollm2`` wrote on the recipe's device."""
    words = SMOLLM2_WORDS[kind]
    data = _load(name)
    if data is None:
        return missing(name, words["command"])
    if data["figures"]["smollm2"]["recipe"] != kind:
        recipe = data["figures"]["smollm2"]["recipe"]
        return f"*The stored `results/{name}.json` was measured with the `{recipe}` recipe, not `{kind}`.*"
    summary, runs = _lm(data, "smollm2")
    steps = sorted({int(e["step"]) for r in runs for e in r["evals"]})
    shown = _some_steps(steps)
    when = "at each evaluation" if shown == steps else f"every {shown[1] - shown[0]} steps"
    met = summary["after"]["mean"] >= 0.9 and all(r["train_seconds"] <= 1200 for r in runs)
    return "\n".join(
        [
            _smollm2_intro(kind, data["figures"]["smollm2"]["settings"], runs, summary, when),
            "",
            table(
                _smollm2_header(shown, words["memory"]),
                [*(_smollm2_row(r, shown) for r in runs), _smollm2_mean_row(summary, len(shown))],
            ),
            "",
            f"Answers in the asked form: {pm(summary['format_before'])} before, {pm(summary['format_after'])} after. "
            f"**Target** (≥ 90% held-out greedy accuracy, mean over seeds, within 20 minutes of training on "
            f"{words['target_on']}): **{'met' if met else 'not met'}**.",
            "",
            provenance(data),
        ]
    )


def _some_steps(steps: list[int], most: int = 5) -> list[int]:
    """About ``most`` of a run's evaluation steps: evenly spaced from the first, and the last."""
    stride = max(1, -(-(len(steps) - 1) // (most - 1)))
    shown = steps[::stride]
    return shown if shown[-1] == steps[-1] else [*shown, steps[-1]]


def _smollm2_intro(kind: str, s: Mapping[str, Any], runs: list[dict], summary: dict, when: str) -> str:
    """The recipe in words, then what the table's columns measure (accuracy ``when``: at which steps)."""
    words = SMOLLM2_WORDS[kind]
    blocks = "every weight" if s["trainable_layers"] is None else f"the top {s['trainable_layers']} of 30 blocks"
    kl = f"KL {s['kl_coef']:g} to the initial model" if s["kl_coef"] else "no KL term"
    return (
        f'{words["name"]} (`RECIPES["{kind}"]`: {s["prompts_per_step"]} prompts × {s["group_size"]} responses a '
        f"step, {blocks} training, {kl}, learning rate {s['learning_rate']:g} with a cosine decay over "
        f"{runs[0]['steps']} steps{words['device']}), over {len(runs)} seeds. Held-out greedy accuracy on "
        f'{s["eval_prompts"]} held-out problems {when}; "unseen answers": the {_n_unseen(kind)} problems whose sorted '
        f'answer never occurs in training; "4 numbers": the trained model sorting 4 numbers, which it never trained '
        f"on (the base model: {pct(summary['four_numbers_before']['greedy_exact'])}):"
    )


def _smollm2_header(steps: list[int], memory: str) -> list[str]:
    return [
        "seed",
        *(f"step {k}" for k in steps),
        "unseen answers",
        "4 numbers, after",
        "training time",
        "s/step with evaluations (generation + update)",
        memory,
    ]


def _per_step(total: float, gen: float | None = None, update: float | None = None) -> str:
    """``6.2 s (2.6 + 2.8)``: one decimal, two under 2 s a step."""
    d = 1 if total >= 2 else 2
    return f"{total:.{d}f} s" + ("" if gen is None or update is None else f" ({gen:.{d}f} + {update:.{d}f})")


def _smollm2_row(r: Mapping[str, Any], steps: list[int]) -> list[Any]:
    """One seed: accuracy at ``steps``, unseen answers before → after, 4 numbers, time, step cost, memory."""
    curve = {int(e["step"]): e["greedy_exact"] for e in r["evals"]}
    first, last = r["evals"][0], r["evals"][-1]
    return [
        r["seed"],
        *(pct(curve.get(k)) for k in steps),
        f"{pct(first['unseen_greedy_exact'])} → {pct(last['unseen_greedy_exact'])}",
        pct(r["four_numbers"]["greedy_exact"]),
        _seconds(r["train_seconds"]),
        _per_step(r["s_per_step"], r["gen_s_per_step"], r["update_s_per_step"]),
        f"{r['peak_memory_gb']:.1f} GB",
    ]


def _smollm2_mean_row(summary: Mapping[str, Any], n_steps: int) -> list[Any]:
    curve = [""] * n_steps
    curve[0], curve[-1] = pm(summary["before"]), pm(summary["after"])
    return [
        "mean ± std",
        *curve,
        f"{pm(summary['unseen_before'])} → {pm(summary['unseen_after'])}",
        pm(summary["four_numbers_after"]),
        _seconds(60 * summary["train_minutes"]["mean"]),
        _per_step(summary["s_per_step"]["mean"]),
        "",
    ]


def _n_unseen(kind: str) -> int:
    """How many problems the recipe's task holds out by answer (its second held-out set)."""
    from minirl.lm.recipes import RECIPES

    return RECIPES[kind].task().n_unseen_problems


def lm_step_cost() -> str:
    data = _load("bench_lm")
    if data is None or "step_cost" not in data["figures"]:
        return missing("bench_lm", "minirl bench --lm --seeds 3 --parts tiny,smollm2 --save")
    c = data["figures"]["step_cost"]
    names = {
        "recipe": "the CPU recipe: top 10 blocks, no KL, 10-token budget",
        "every_weight_kl_16_tokens": "every weight trains, KL 0.02 to the initial model, 16-token budget",
    }
    rows = [
        [names.get(k, k), f"{v['s_per_step']:.1f} s", f"{v['gen_s_per_step']:.1f} s", f"{v['update_s_per_step']:.1f} s"]
        for k, v in c.items()
    ]
    ratio = c["every_weight_kl_16_tokens"]["s_per_step"] / c["recipe"]["s_per_step"]
    return "\n".join(
        [
            table(
                [
                    "SmolLM2, 8 prompts × 8 responses a step",
                    "seconds per step",
                    "sampling",
                    "update (forward, backward, reference)",
                ],
                rows,
            ),
            "",
            f"The recipe's step is {ratio:.1f} times cheaper (steps 2–4 of 4 timed; same machine and load as above).",
            "",
            provenance(data),
        ]
    )


def cpu_decode() -> str:
    """CPU generation: nn.Linear's few-row product against the weight-first one (``results/cpu_decode.json``)."""
    data = _load("cpu_decode")
    if data is None:
        return missing("cpu_decode", "python -m minirl.bench.cpu_decode --save")
    f = data["figures"]
    forms = ("x @ W.T", "(W @ x.T).T")
    rows = [
        [r, f"{v[forms[0]]:.0f} ms", f"{v[forms[1]]:.0f} ms", f"{v[forms[0]] / v[forms[1]]:.1f}×"]
        for r, v in f["products_ms_per_token"].items()
    ]
    out = [
        "One token of SmolLM2-135M's decoding: the products of its 30 blocks and its output layer, with as many rows "
        "as replies being generated (fresh weights per block, so each comes from memory, as in the model):",
        "",
        table(["rows", "`x @ Wᵀ` (nn.Linear)", "`(W @ xᵀ)ᵀ` (weight first)", "speed-up"], rows),
    ]
    if "generation_seconds" in f:
        gen = [
            [b, f"{v[forms[0]]:.2f} s", f"{v[forms[1]]:.2f} s", v["new_tokens"], "yes" if v["same_replies"] else "no"]
            for b, v in f["generation_seconds"].items()
        ]
        out += [
            "",
            "Greedy replies of the shipped SmolLM2 to held-out 4-number sums (the reasoning recipe's prompt and token "
            "budget), one generate call:",
            "",
            table(["prompts", "nn.Linear", "weight first", "new tokens", "same replies"], gen),
        ]
    return "\n".join([*out, "", provenance(data)])


def lm_tiny() -> str:
    data = _load("bench_lm")
    if data is None:
        return missing("bench_lm", "minirl bench --lm --seeds 3 --parts tiny,smollm2 --save")
    summary, runs = _lm(data, "tiny")
    s = data["figures"]["tiny"]["settings"]
    rows = [
        [
            r["seed"],
            f"{pct(r['evals'][0]['greedy_exact'])} → {pct(r['evals'][-1]['greedy_exact'])}",
            f"{pct(r['evals'][0]['unseen_greedy_exact'])} → {pct(r['evals'][-1]['unseen_greedy_exact'])}",
            f"{r['sft_seconds'] / 60:.1f} min",
            f"{r['train_seconds'] / 60:.1f} min",
            f"{r['s_per_step']:.2f} s ({r['gen_s_per_step']:.2f} + {r['update_s_per_step']:.2f})",
            f"{r['tokens_per_s']:.0f}",
        ]
        for r in runs
    ]
    rows.append(
        [
            "mean ± std",
            f"{pm(summary['before'])} → {pm(summary['after'])}",
            f"{pm(summary['unseen_before'])} → {pm(summary['unseen_after'])}",
            "",
            "",
            "",
            "",
        ]
    )
    met = summary["after"]["mean"] >= 0.95
    return "\n".join(
        [
            f'The tiny model (under a million parameters, built here) with its recipe (`RECIPES["tiny"]`): '
            f"{s['sft_steps']} supervised steps, then {runs[0]['steps']} GRPO steps of {s['prompts_per_step']} "
            f"prompts × {s['group_size']} responses (learning rate {s['learning_rate']:g}, KL {s['kl_coef']:g}), one "
            f"process and one torch thread per seed, as many seeds at once as there are cores (a seed that ran alone "
            f"shows shorter times). Greedy accuracy after the warm start → after GRPO, on the 200 held-out problems "
            f"and the {_n_unseen('tiny')} problems with unseen answers:",
            "",
            table(
                [
                    "seed",
                    "held-out problems",
                    "unseen answers",
                    "warm start",
                    "GRPO",
                    "s/step with evaluations (generation + update)",
                    "response tokens/s",
                ],
                rows,
            ),
            "",
            f"**Target** (≥ 95% held-out greedy accuracy, mean over seeds): **{'met' if met else 'not met'}**.",
            "",
            provenance(data),
        ]
    )


def trl() -> str:
    data = _load("bench_trl")
    if data is None:
        return missing("bench_trl", "minirl bench --trl --seeds 3 --save")
    f = data["figures"]
    tiny, smol = f["tiny"], f.get("smollm2")
    rows = []
    labels = [
        ("seconds per step", "s_per_step", "{:.2f}"),
        ("response tokens per second", "tokens_per_s", "{:.0f}"),
        ("peak memory (GB RSS)", "peak_gb", "{:.2f}"),
        ("reward, mean of the last 5 steps", "reward", "{:.3f}"),
        ("held-out greedy accuracy (problems)", "accuracy", "{:.1%}"),
        ("held-out greedy accuracy (unseen answers)", "unseen_accuracy", "{:.1%}"),
    ]
    for label, key, fmt in labels:
        t = tiny["mean"][key]

        def cell(v: Mapping[str, float], fmt: str = fmt, n: int = len(tiny["minirl"])) -> str:
            return f"{fmt.format(v['mean'])} ± {fmt.format(v['std'])}" if n > 1 else fmt.format(v["mean"])

        row = [label, cell(t["minirl"]), cell(t["trl"]), "n/a" if t["ratio"] is None else f"{t['ratio']:.2f}"]
        if smol is not None:
            sm = smol["mean"][key]
            row += [
                fmt.format(sm["minirl"]["mean"]),
                fmt.format(sm["trl"]["mean"]),
                "n/a" if sm["ratio"] is None else f"{sm['ratio']:.2f}",
            ]
        rows.append(row)
    header = ["", "tiny: minirl", "tiny: TRL", "TRL / minirl"] + (
        ["SmolLM2: minirl", "SmolLM2: TRL", "TRL / minirl"] if smol is not None else []
    )
    ts = tiny["settings"]
    diff = tiny["reward_difference"]
    verdicts = ", ".join(f"{name}: {'met' if ok else '**not met**'}" for name, ok in f["targets"].items())
    return "\n".join(
        [
            f"The tiny model over {len(tiny['minirl'])} seeds (each after {ts['sft_steps']} supervised steps of its "
            f"own), {ts['steps']} GRPO steps of {ts['prompts_per_step']} prompts × {ts['group_size']} responses on one "
            f"thread, mean ± std over seeds"
            + (
                f"; SmolLM2 trains its top 10 blocks with the CPU recipe's batch for "
                f"{smol['settings']['steps']} steps, one seed: speed only"
                if smol
                else ""
            )
            + ":",
            "",
            table(header, rows),
            "",
            f"Held-out accuracies on at most {ts['eval_prompts']} prompts of each set for the tiny model"
            + (f", {smol['settings']['eval_prompts']} for SmolLM2" if smol else "")
            + ". "
            f"Reward, minirl − TRL: {diff['minirl_minus_trl']:+.3f} (two standard errors of the difference: "
            f"{diff['two_se']:.3f}). Targets: {verdicts}.",
            "",
            provenance(data),
        ]
    )


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
    for r in runs:
        k = r["knobs"]
        length = r["response_length"]
        rows.append(
            _lever_row(
                r["prompt"],
                r.get("warm_start", WARM_3),
                r["seed"],
                f"{k['prompts']} × {k['group']}",
                [(e["step"], e["greedy_exact"]) for e in r["evals"]],
                r["final3"],
                f"{sum(length[:5]) / 5:.0f} → {sum(length[-5:]) / 5:.0f}",
            )
        )
    seed0 = _load("reasoning_seed0")
    passes = []
    if seed0 is not None:
        f = seed0["figures"]
        r = f["recipe"]
        rows.insert(
            0,
            _lever_row(
                "a worked 4-number example (notebook 10)",
                WARM_3,
                0,
                f"{r['prompts_per_step']} × {r['group_size']}",
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
            f"{provenance(data)} {data['notes']} {data['load']['note'].capitalize()}.",
            *_lever_times(runs),
            *passes,
        ]
    )


def _spread_cell(values: list[float]) -> str:
    """``70% ± 14 (61–85)``: mean ± std (points) and min–max over seeds; one value alone, none: empty."""
    from minirl.bench import spread

    if len(values) < 2:
        return pct(values[0], 0) if values else ""
    s = spread(values)
    return f"{pm(s, 0)} ({100 * s['min']:.0f}–{100 * s['max']:.0f})"


Arm = tuple[str, tuple[str, ...], tuple[str, ...] | None]
"""A row of a table over seeds: its label, the path to its value in a ``reasoning_rl`` run, the path to its steps."""

REASONING_ARMS: list[Arm] = [
    ("worked warm start (3-number sums)", ("warm", "sum4"), ("warm", "steps")),
    ("+ thinking GRPO on 4-number sums", ("thinking", "sum4"), ("thinking", "run", "steps")),
    ("+ supervised steps on 3-number sums instead (the control)", ("control", "sum4"), ("control", "steps")),
    ("bare-answer warm start (3-number sums)", ("answer-only", "warm", "sum4"), ("answer-only", "warm", "steps")),
    ("+ answer-only GRPO on 4-number sums", ("answer-only", "sum4"), ("answer-only", "run", "steps")),
]
"""Notebook 10's arms, each row: (label, accuracy, steps) as paths into a ``reasoning_rl`` run."""


def _arm_rows(runs: list[dict[str, Any]], arms: Sequence[Arm]) -> list[list[str]]:
    """A row per arm (label, accuracy, steps: paths into a ``reasoning_rl`` run; steps may be None): the accuracy
    of each run, with its steps in brackets, empty where the run lacks the arm; then mean ± std (min–max)."""
    from minirl.bench.reasoning_rl import nested

    rows = []
    for label, path, steps in arms:
        values = [nested(r, path) for r in runs]
        cells = [
            "" if v is None else pct(v, 0) + ("" if steps is None else f" ({nested(r, steps)} steps)")
            for r, v in zip(runs, values)
        ]
        rows.append([label, *cells, _spread_cell([v for v in values if v is not None])])
    return rows


def _verifier_arms(runs: list[dict[str, Any]]) -> list[Arm]:
    """The reward-hacking lab's rows: the hacked and the fixed verifier's runs."""
    hack = runs[0].get("hack", {}).get("reward", "substring")
    fix = runs[0].get("fix", {}).get("reward", "answer")
    return [
        (f"GRPO on the lenient `{hack}` verifier: strict accuracy", ("hack", "sum4"), ("hack", "run", "steps")),
        ("… its proxy reward", ("hack", "proxy"), None),
        ("… the proxy reward of the honest run's replies", ("hack", "honest_proxy"), None),
        (f"GRPO on the fixed `{fix}` verifier: strict accuracy", ("fix", "sum4"), ("fix", "run", "steps")),
    ]


def _reasoning_verdicts(summary: dict[str, Any]) -> str:
    """``minirl.bench.reasoning_rl``'s targets on a summary, each said with the figures it reads."""
    from minirl.bench.reasoning_rl import check_targets

    def mean(key: str) -> float:
        return summary[key]["mean"] if key in summary else float("nan")

    texts = {
        "thinking GRPO: 4-number mean >= 75%, std <= 8 points, warm start + GRPO <= 15 min": (
            "thinking GRPO at a mean of at least 75% with a standard deviation of at most 8 points, within 15 min "
            f"of warm start and GRPO ({pm(summary['thinking_sum4'], 0)}; the longest seed "
            f"{summary.get('warm_plus_grpo_minutes', {}).get('max', float('nan')):.1f} min)"
            if "thinking_sum4" in summary
            else ""
        ),
        "thinking >= 15 points over answer-only": "thinking at least 15 points over answer-only "
        f"({100 * (mean('thinking_sum4') - mean('answer_sum4')):+.0f})",
        "hacked: strict accuracy >= 20 points below the honest run's, proxy higher": "the hacked run's strict "
        "accuracy at least 20 points below the honest run's "
        f"({100 * (mean('hack_strict') - mean('thinking_sum4')):+.0f}) with a higher proxy reward "
        f"({100 * (mean('hack_proxy') - mean('honest_proxy')):+.0f})",
        "fixed verifier: within 10 points of the honest run": "the fixed verifier's run within 10 points of the "
        f"honest one ({100 * (mean('fix_sum4') - mean('thinking_sum4')):+.0f})",
    }
    targets = check_targets(summary)
    return "; ".join(f"{texts.get(name, name)}: {'met' if ok else '**not met**'}" for name, ok in targets.items())


def _pass_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """pass@k over seeds (mean ± std) before and after thinking GRPO, at the powers of 2."""
    before, after = summary.get("pass_before", {}), summary.get("pass_after", {})
    ks = _pass_ks(list(before))
    rows = [
        [label, *(pm(curve[f"pass@{k}"], 0) for k in ks)]
        for label, curve in (("after the warm start", before), ("after thinking GRPO", after))
        if curve
    ]
    return [f"k = {k}" for k in ks], rows


def reasoning_seeds() -> str:
    """Notebook 10's arms over seeds (``minirl.bench.reasoning_rl``, one command): each arm's held-out accuracy per
    seed with its steps, mean ± std and min–max; pass@k before and after GRPO; stage times; the targets."""
    from minirl.bench.reasoning_rl import nested

    data = _load("bench_reasoning")
    if data is None or "budgets" not in data["figures"]:
        return missing("bench_reasoning", "python -m minirl.bench.reasoning_rl --seeds 0 1 2 --save")
    f = data["figures"]
    runs, summary, budgets = f["runs"], f["summary"], f["budgets"]
    seeds = [r["seed"] for r in runs]
    base = f["base"]
    both = f"{pct(base['think_sum4'], 0)} with a scratchpad, {pct(base['answer_sum4'], 0)} answer only"
    rows = [["the base model (greedy: the same for every seed)", *([""] * len(runs)), both]]
    rows += _arm_rows(runs, [*REASONING_ARMS, *_verifier_arms(runs)])
    pass_header, pass_rows = _pass_rows(summary)
    times = ", ".join(
        f"seed {r['seed']} {_seconds(nested(r, ('warm', 'seconds')))} + "
        f"{_seconds(nested(r, ('thinking', 'run', 'train_seconds')))}"
        for r in runs
        if nested(r, ("thinking", "run", "train_seconds")) is not None
    )
    recipe = f["recipes"]["thinking"]
    return "\n".join(
        [
            f"Notebook 10's arms over seeds {', '.join(map(str, seeds))}, one command, every budget a number of steps "
            f"(`reasoning_recipe`: GRPO {recipe['steps']} steps of {recipe['prompts_per_step']} prompts × "
            f"{recipe['group_size']} replies at a constant learning rate {recipe['learning_rate']:g}, after a warm "
            f"start of {recipe['sft_steps']} steps of {recipe['sft_prompts_per_step']} worked 3-number sums; the "
            f"control {budgets['control_steps']} more supervised steps; answer-only {recipe['sft_steps']} bare-answer "
            f"steps, then {budgets['answer_steps']} GRPO steps). Held-out greedy accuracy on "
            f"{recipe['eval_prompts']} 4-number sums; in brackets the steps of each stage:",
            "",
            table(["4-number sums", *(f"seed {s}" for s in seeds), "mean ± std (min–max), points"], rows),
            "",
            f"pass@k on the first {budgets['pass_prompts']} held-out 4-number sums, {budgets['pass_samples']} samples "
            "each at T = 1, mean ± std over seeds:",
            "",
            table(["", *pass_header], pass_rows),
            "",
            f"Wall time, warm start + thinking GRPO: {times}. "
            f"Targets over these seeds: {_reasoning_verdicts(summary)}.",
            "",
            provenance(data),
        ]
    )


REASONING_GPU = ("bench_reasoning_gpu_seed0", "bench_reasoning_gpu_seeds12")


def reasoning_gpu() -> str:
    """Notebook 10's thinking and hack arms on a GPU (``minirl.bench.reasoning_rl --arms thinking hack``, GRPO
    shortened to the records' ``rl_seconds``), per seed: the warm start and thinking GRPO on held-out 4-number sums,
    with their steps, and the hacked run's strict accuracy and proxy reward."""
    records = [d for d in map(_load, REASONING_GPU) if d is not None]
    if len(records) < len(REASONING_GPU):
        command = "python -m minirl.bench.reasoning_rl --seeds 0 --arms thinking hack --save bench_reasoning_gpu_seed0"
        return missing(REASONING_GPU[0], command + " (on a GPU; seeds 1 2 into bench_reasoning_gpu_seeds12)")
    settings = [d["figures"]["settings"] for d in records]
    if any(s != settings[0] for s in settings):
        return f"*The records {', '.join(REASONING_GPU)} were measured with different settings: measure again.*"
    runs = sorted((r for d in records for r in d["figures"]["runs"]), key=lambda r: r["seed"])
    verifier = settings[0]["hack_reward"]
    rows = _arm_rows(
        runs,
        [
            *REASONING_ARMS[:2],
            (f"hacked run (`{verifier}` verifier): strict accuracy", ("hack", "strict"), ("hack", "run", "steps")),
            ("hacked run: proxy reward", ("hack", "proxy"), None),
        ],
    )
    return "\n".join(
        [
            _reasoning_gpu_intro(settings[0], [r["seed"] for r in runs]),
            "",
            table(["4-number sums", *(f"seed {r['seed']}" for r in runs), "mean ± std (points)"], rows),
            "",
            *(provenance(d) for d in records),
        ]
    )


def _reasoning_gpu_intro(s: Mapping[str, Any], seeds: list[int]) -> str:
    """What ran: the GPU recipe's model settings with notebook 10's knobs, GRPO for ``rl_seconds`` an arm."""
    return (
        f"Notebook 10's thinking and hack arms on one GPU, seeds {', '.join(map(str, seeds))} "
        "(`minirl.bench.reasoning_rl --arms thinking hack`). The model is set up by the GPU recipe "
        '(`RECIPES["pretrained-cuda"]`: its prompt, every weight training) and trained with notebook 10\'s knobs '
        f"as they are (a warm start of {s['sft_steps']} steps of {s['sft_prompts']} worked 3-number sums at "
        f"learning rate {s['sft_learning_rate']:g}, then GRPO on 4-number sums, {s['prompts']} prompts × "
        f"{s['group']} replies a step at a constant learning rate {s['learning_rate']:g}), except that each GRPO "
        f"run trains for {_seconds(s['rl_seconds'])} instead of the 10 min the CPU benchmark of that commit gave it "
        "(the records' commands say so), and every prompt carries that commit's system message, "
        '"You sort numbers.". This is that untuned combination, not a GPU reasoning recipe. The hacked run trains '
        f"as long from the same warm start on the lenient `{s['hack_reward']}` verifier. Held-out greedy "
        f"accuracy on {s['n_eval']} problems; in brackets the steps each stage took; the proxy reward is the "
        "lenient verifier's on the hacked run's replies:"
    )


FAMILY_NAMES = {"word": "two-step word problems", "add": "addition", "sum": "sums of single digits"}
FAMILY_STAGES = {"base": "base model", "warm": "warm start", "rl": "+ GRPO"}


def _family_cell(form: Mapping[str, Any] | None, stage: str) -> str:
    """One form's accuracy at one stage of a ``reasoning_families`` run, with the stage's steps and time."""
    if form is None:
        return ""
    if stage == "base":
        return pct(form["base"]["exact"], 0)
    part, exact = (form["warm"], form["warm"]["exact"]) if stage == "warm" else (form["run"], form["exact"])
    return f"{pct(exact, 0)} ({part['steps']} steps, {_seconds(part.get('seconds', part.get('train_seconds')))})"


def reasoning_families() -> str:
    """Thinking vs answer-only GRPO on the word and addition families at equal wall time
    (``minirl.bench.reasoning_families``): each form's held-out accuracy at each stage, per seed, with the
    mean and the target on each family's mean."""
    from minirl.bench.reasoning_families import check_targets

    data = _load("bench_reasoning_families")
    if data is None:
        return missing("bench_reasoning_families", "python -m minirl.bench.reasoning_families --seeds 0 1 --save")
    f = data["figures"]
    s, runs, summary = f["settings"], f["runs"], f["summary"]
    seeds = sorted({r["seed"] for r in runs})
    rows = []
    for family in summary:
        family = str(family)
        name = FAMILY_NAMES.get(family, family) + (f" ({s['digits']} digits)" if family == "add" else "")
        mine = {r["seed"]: r for r in runs if r["family"] == family}
        for form in ("thinking", "answer-only"):
            for stage, label in FAMILY_STAGES.items():
                cells = [_family_cell(mine.get(seed, {}).get(form), stage) for seed in seeds]
                rows.append([name, f"{form}: {label}", *cells, pm(summary[family][f"{form}_{stage}"], 0)])
    met = check_targets(summary)
    gaps = ", ".join(
        f"{family} {100 * (v['thinking_rl']['mean'] - v['answer-only_rl']['mean']):+.0f} points "
        f"({'met' if met[f'{family}: thinking >= 15 points over answer-only'] else '**not met**'})"
        for family, v in summary.items()
    )
    return "\n".join(
        [
            f"Thinking against answer-only on the two other families, seeds {', '.join(map(str, seeds))}: each form "
            f"warm-starts from the base model (thinking: {s['sft_steps']} steps of {s['sft_prompts']} worked "
            "solutions; answer-only: bare answers for as long), then trains GRPO "
            f"({s['prompts']} prompts × {s['group']} replies, learning rate {s['learning_rate']:g}, constant) for "
            f"{_seconds(s['rl_seconds'])} (answer-only: as long as the thinking run took, evaluations included), "
            f"on problems of the size it is evaluated on. {s['n_eval']} held-out problems, greedy; in brackets the "
            "steps and wall time of each stage:",
            "",
            table(["family", "form: stage", *(f"seed {seed}" for seed in seeds), "mean ± std (points)"], rows),
            "",
            "Target: thinking GRPO at least 15 points above answer-only GRPO at equal wall time, on "
            f"each family's mean: {gaps}.",
            "",
            provenance(data),
        ]
    )


NOTEBOOK_NAMES = {
    "01": "01_maze_and_expected_return",
    "02": "02_policy_gradient_on_the_maze",
    "03": "03_sorting_task_and_tiny_model",
    "04": "04_policy_gradient_ladder",
    "05": "05_grpo_and_its_variants",
    "06": "06_rewards_preferences_and_dpo",
    "07": "07_grpo_on_a_language_model",
    "08": "08_a_pretrained_model_learns_to_sort",
    "09": "09_scaling_up_with_trl",
    "10": "10_reasoning_and_reward_hacking",
}


def notebooks() -> str:
    fast = _load("notebooks_fast")
    rows = []
    for number, name in NOTEBOOK_NAMES.items():
        full = _load(f"notebook_{number}_full_cpu")
        fast_s = (fast or {}).get("figures", {}).get(name)
        load = (full or {}).get("load", {}).get("others_busy")
        rows.append(
            [
                f"`{name}`",
                _seconds(fast_s) if fast_s is not None else "not measured",
                _seconds(full["duration_s"]) if full else "not measured",
                "n/a" if load is None else pct(load, 0),
                f"`results/notebook_{number}_full_cpu.json`" if full else "",
            ]
        )
    out = [
        table(
            [
                "notebook",
                "fast mode (`MINIRL_FAST=1`, as stored and tested)",
                "full mode, 2 CPU cores",
                "other jobs' share of the cores then",
                "full-mode figures",
            ],
            rows,
        ),
        "",
    ]
    if fast:
        out.append(
            provenance(fast) + " Full mode: `python -m minirl.results notebook solutions/NN_*.ipynb`, "
            "one record per notebook (its machine and load are in the file)."
        )
    return "\n".join(out).rstrip()


# ---- README's headline table -----------------------------------------------------------------------------------

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
        and r["seed"] != 0
    ]
    cells = [(0, seed0["figures"]["think4"], seed0["figures"]["rl4"])]
    cells += [(r["seed"], r["evals"][0]["greedy_exact"], r["evals"][-1]["greedy_exact"]) for r in same]
    seeds = "; ".join(f"seed {s}: {pct(a, 0)} → {pct(b, 0)}" for s, a, b in sorted(cells))
    return what, seeds + how, [seed0, levers], link


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


BLOCKS: dict[str, Callable[[], str]] = {
    "bench": bench,
    "ladder": ladder,
    "lm_smollm2_cpu": lm_smollm2_cpu,
    "lm_step_cost": lm_step_cost,
    "cpu_decode": cpu_decode,
    "lm_tiny": lm_tiny,
    "lm_smollm2_gpu": lm_smollm2_gpu,
    "trl": trl,
    "notebooks": notebooks,
    "reasoning": reasoning,
    "reasoning_prompts": reasoning_prompts,
    "reasoning_seeds": reasoning_seeds,
    "reasoning_levers": reasoning_levers,
    "reasoning_families": reasoning_families,
    "reasoning_gpu": reasoning_gpu,
    "headline": headline,
}


def render(name: str) -> str:
    """The markdown of one block, from its record(s)."""
    if name not in BLOCKS:
        raise KeyError(f"no results block named {name!r}; known: {sorted(BLOCKS)}")
    return BLOCKS[name]().rstrip() + "\n"


def render_readme(text: str) -> str:
    """``text`` with every results block rewritten from its record."""
    out, pos = [], 0
    for match in BEGIN.finditer(text):
        end = text.index(END, match.end())
        out += [text[pos : match.end()], render(match["name"])]
        pos = end
    return "".join(out) + text[pos:]


def stale_blocks(path: Path = README) -> list[str]:
    """Names of the blocks in ``path`` that differ from what their records give."""
    text = path.read_text()
    return [m["name"] for m in BEGIN.finditer(text) if render(m["name"]) != text[m.end() : text.index(END, m.end())]]


def outside_blocks(text: str) -> str:
    """A document's text with every results block (markers included) left out."""
    out, pos = [], 0
    for match in BEGIN.finditer(text):
        out.append(text[pos : match.start()])
        pos = text.index(END, match.end()) + len(END)
    return "".join(out) + text[pos:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minirl.report", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block differs from its record")
    args = parser.parse_args(argv)
    if args.check:
        stale = [(path, name) for path in DOCUMENTS for name in stale_blocks(path)]
        for path, name in stale:
            print(f"{path.name} block {name!r} differs from its record: run python -m minirl.report")
        return 1 if stale else 0
    for path in DOCUMENTS:
        text = path.read_text()
        fresh = render_readme(text)
        if fresh != text:
            path.write_text(fresh)
            print(f"{path.name}: results blocks rewritten")
        else:
            print(f"{path.name}: results blocks up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())

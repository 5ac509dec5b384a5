"""RESULTS.md's blocks on language models learning to sort (``minirl bench --lm``): SmolLM2 with the CPU and the
GPU recipe (``lm_smollm2_cpu``, ``lm_smollm2_gpu``), what a step costs (``lm_step_cost``), the tiny model
(``lm_tiny``), and CPU decoding's matrix products (``cpu_decode``, ``minirl.bench.cpu_decode``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minirl.report._format import _load, _seconds, missing, pct, pm, provenance, table


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

"""RESULTS.md's block comparing minirl with TRL's ``GRPOTrainer`` on the same run (``minirl bench --trl``): speed,
memory, reward and accuracy, for the tiny model over seeds and SmolLM2 (one seed)."""

from __future__ import annotations

from collections.abc import Mapping

from minirl.report._format import _load, missing, provenance, table


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

"""The ladder demo: six rungs of the policy gradient, each one knob from the last, and what each knob bought.

    runs = run_all(ladder_configs(seeds=3), workers=2)   # minirl.compare.run_all: {rung: [History per seed]}
    print(ladder_summary(runs))
    fig = plot_ladder(runs)

``ladder_configs`` builds the runs (the README's first command, ``minirl ladder``). Six rungs, each one
knob away from the rung below it (``AlgoConfig.changed_knobs``): naive → baselined → normalized → unclipped
→ clipped → clipped_entropy, trained on sorting 3 numbers from 0..4 with small batches (16 prompts × 8
responses, 600 steps), where the rungs differ: with the default 64 × 16 every rung solves most prompts within
30 steps and the curves overlap. The x-axis counts responses sampled, so a rung that takes 4 gradient steps
per batch is judged on the samples it drew, not on its steps. ``ladder_summary`` says what each knob bought
(final accuracy, accuracy after a tenth of the samples) and, where it bought nothing, why, from the runs'
own measurements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from minirl.algorithms import ALGORITHMS, AlgoConfig
from minirl.history import History

__all__ = [
    "GAIN",
    "LADDER_RUNGS",
    "LADDER_SETTINGS",
    "knob_label",
    "ladder_configs",
    "ladder_figures",
    "ladder_summary",
    "plot_ladder",
]

LADDER_RUNGS = ("naive", "baselined", "normalized", "unclipped", "clipped", "clipped_entropy")
LADDER_SETTINGS = dict(
    steps=600, prompts_per_step=16, group_size=8, learning_rate=0.01, eval_every=30, eval_prompts=1000
)
GAIN = 0.02  # a rung "helps" when it lifts the mean final accuracy over seeds by more than this


def ladder_configs(seeds: int = 3, rungs: Sequence[str] = LADDER_RUNGS, **overrides) -> dict[str, list]:
    """``{rung: [TrainConfig per seed]}`` of the ladder demo (``LADDER_SETTINGS``; ``overrides`` change them)."""
    from minirl.train import TrainConfig
    from toy_envs.sorting import SortingTask

    settings = {**LADDER_SETTINGS, "progress": False, **overrides}
    return {
        rung: [
            TrainConfig(task=SortingTask(vocab_size=5, length=3), algo=rung, seed=seed, **settings)
            for seed in range(seeds)
        ]
        for rung in rungs
    }


def knob_label(algo: AlgoConfig, below: AlgoConfig | None) -> str:
    """``"clipped: +clip_eps_low=0.2"``: the rung's name and the knobs it changes relative to ``below``."""
    if below is None:
        return f"{algo.name}: Δ = r" if algo.delta_mode == "rewards" else algo.name
    changed = algo.changed_knobs(below)
    return f"{algo.name}: " + ", ".join(f"+{k}={v}" for k, (v, _) in changed.items())


def _knob_labels(names: Sequence[str]) -> dict[str, str]:
    """``{rung: knob_label}``, each rung measured against the one listed before it."""
    return {n: knob_label(ALGORITHMS[n], ALGORITHMS[names[i - 1]] if i else None) for i, n in enumerate(names)}


def _final(histories: Sequence[History], metric: str = "greedy_exact") -> np.ndarray:
    return np.array([h.evals[-1][metric] for h in histories])


def _early(histories: Sequence[History], fraction: float = 0.1) -> np.ndarray:
    """Greedy accuracy at the first evaluation after ``fraction`` of the run's samples."""
    out = []
    for h in histories:
        samples, acc = h.eval_metric("samples")[1], h.eval_metric("greedy_exact")[1]
        out.append(acc[int(np.searchsorted(samples, fraction * samples[-1]))])
    return np.array(out)


def _mean(histories: Sequence[History], metric: str, fraction: float = 1.0, first: bool = False) -> float:
    """Mean over seeds of ``metric`` averaged over the last (or ``first``) ``fraction`` of the steps."""

    def part(h: History) -> np.ndarray:
        n = max(1, int(fraction * len(h)))
        return h[metric][:n] if first else h[metric][-n:]

    return float(np.mean([part(h).mean() for h in histories]))


def _why_no_gain(algo: AlgoConfig, below: AlgoConfig, runs: Mapping[str, Sequence[History]]) -> str:
    """A measured reason why ``algo``'s knob did not lift the final accuracy over ``below``'s."""
    mine, theirs = runs[algo.name], runs[below.name]
    changed = algo.changed_knobs(below)
    if changed.get("delta_mode", (None,))[0] == "normalized_rewards":
        std = _mean(theirs, "reward_std", 0.1, first=True)
        return (
            f"Adam already divides out the gradient's overall scale, so dividing every delta by the group's "
            f"std (about {std:.2f} early on) only reweights prompts against each other"
        )
    if "inner_epochs" in changed:
        moved, moved_below = _mean(mine, "kl_old", 0.1, first=True), _mean(theirs, "kl_old", 0.1, first=True)
        return (
            f"{algo.inner_epochs} unclipped steps on each batch move the policy {moved:.3f} nats per batch over "
            f"the first tenth (KL(π_old ‖ π_θ); {moved_below:.3f} with {below.inner_epochs}): they overfit each "
            f"batch's noisy estimate"
        )
    if "clip_eps_low" in changed:
        return f"the clip was active on {_mean(mine, 'clip_frac_low', 0.1, first=True):.0%} of tokens early on"
    if "entropy_coef" in changed:
        return f"entropy per token ended at {_mean(mine, 'entropy', 0.05):.2f} vs {_mean(theirs, 'entropy', 0.05):.2f}"
    return "within the spread over seeds"


def _ladder_rows(runs: Mapping[str, Sequence[History]], gain: float = GAIN) -> tuple[list[dict], list[str]]:
    """Per rung (in the order of ``runs``): its figures, its summary line and verdict; then the closing remarks."""
    names = list(runs)
    labels = _knob_labels(names)
    final = {n: _final(runs[n]) for n in names}
    early = {n: _early(runs[n]) for n in names}
    stuck = {n: _mean(runs[n], "zero_variance_groups", 0.05) for n in names}  # all-equal groups at the end
    rows = []
    for i, name in enumerate(names):
        samples = int(runs[name][0]["samples"][-1])
        row = {
            "rung": name,
            "knob": labels[name],
            "final_mean": float(final[name].mean()),
            "final_std": float(final[name].std()),
            "early_mean": float(early[name].mean()),
            "all_equal_end": stuck[name],
            "all_equal_first_half": _mean(runs[name], "zero_variance_groups", 0.5, first=True),
            "samples": samples,
            "verdict": None,
        }
        row["line"] = (
            f"{labels[name]:<48} greedy accuracy {final[name].mean():6.1%} ± {final[name].std():4.1%} "
            f"after {samples:,} samples ({early[name].mean():5.1%} after a tenth); all-equal groups at "
            f"the end {stuck[name]:4.0%}"
        )
        if i:
            below = names[i - 1]
            lift = final[name].mean() - final[below].mean()
            early_lift = early[name].mean() - early[below].mean()
            row["lift"] = float(lift)
            if lift > gain:
                row["verdict"] = f"helps: {lift * 100:+.1f} points at the end ({early_lift * 100:+.1f} after a tenth)"
            else:
                row["verdict"] = (
                    f"no gain at the end ({lift * 100:+.1f} points; {early_lift * 100:+.1f} after a "
                    f"tenth): {_why_no_gain(ALGORITHMS[name], ALGORITHMS[below], runs)}"
                )
        rows.append(row)
    remarks = []
    plateau = [n for n in names if stuck[n] > 0.9 and final[n].mean() < 0.95]
    if plateau:
        remarks.append(
            f"Plateaus: {', '.join(plateau)} end below 95% with over 90% of groups all-equal: the policy "
            f"samples the same answer to a prompt every time, right or wrong, so every advantage is 0 and "
            f"learning stops."
        )
    lively = [n for n in names if ALGORITHMS[n].entropy_coef > 0 and n not in plateau]
    if plateau and lively:
        first_half = {n: _mean(runs[n], "zero_variance_groups", 0.5, first=True) for n in lively + plateau}
        remarks.append(
            f"With an entropy bonus ({', '.join(lively)}) the policy keeps sampling alternatives while it "
            f"learns: "
            + ", ".join(f"{n} {first_half[n]:.0%}" for n in lively)
            + " of groups all-equal over the first half of training, against "
            + ", ".join(f"{n} {first_half[n]:.0%}" for n in plateau)
            + "."
        )
    return rows, remarks


def ladder_summary(runs: Mapping[str, Sequence[History]], gain: float = GAIN) -> str:
    """One paragraph per rung, in the order of ``runs``: the knob it adds, its greedy accuracy (final, and after
    a tenth of the samples) as mean ± std over seeds, the fraction of all-equal groups at the end, and a verdict
    against the rung above it: the lift in points, or, below ``gain``, a measured reason."""
    rows, remarks = _ladder_rows(runs, gain)
    lines = [row["line"] + (f"\n{'':<4}{row['verdict']}" if row["verdict"] else "") for row in rows]
    return "\n".join(lines + remarks)


def ladder_figures(runs: Mapping[str, Sequence[History]]) -> dict:
    """What ``ladder_summary`` reads off the runs, for a results record: per rung its knob, greedy accuracy
    (final mean and std over seeds, mean after a tenth of the samples), the all-equal groups at the end (last 5%
    of steps) and over the first half, the samples drawn and the verdict; the closing remarks; the summary."""
    rows, remarks = _ladder_rows(runs)
    return {
        "rungs": {row["rung"]: {k: v for k, v in row.items() if k not in ("rung", "line")} for row in rows},
        "remarks": remarks,
        "summary": ladder_summary(runs),
    }


def plot_ladder(runs: Mapping[str, Sequence[History]], title: str = "The policy-gradient ladder, sorting 3 numbers"):
    """Four panels against responses sampled: training reward, greedy accuracy on the evaluation prompts, the
    fraction of all-equal groups (no learning signal), and KL(π_old ‖ π_θ) per batch (how far each batch's
    updates moved the policy). Legends name each rung's knob. Returns the Figure."""
    import matplotlib.pyplot as plt

    from minirl.plotting import plot_reward_curves

    labelled = {label: runs[n] for n, label in _knob_labels(list(runs)).items()}
    fig, axes = plt.subplots(2, 2, figsize=(14, 9.5))
    panels = [
        ("reward", "training reward: positions right, 0–3"),
        ("greedy_exact", "greedy accuracy on 1000 evaluation prompts (the task has 125)"),
        ("zero_variance_groups", "groups whose rewards are all equal: no signal"),
        ("kl_old", "KL(π_old ‖ π_θ) per batch: how far each batch's updates moved"),
    ]
    steps = len(next(iter(runs.values()))[0])
    for ax, (metric, panel_title) in zip(axes.flat, panels):
        per_step = metric != "greedy_exact"  # evaluations are drawn as measured; per-step metrics smoothed
        window = max(1, steps // 20) if per_step else 1
        note = f"\n(centred moving average over {window} steps)" if window > 1 else "\n(each evaluation, unsmoothed)"
        plot_reward_curves(labelled, metric, ax=ax, x="samples", smooth=window, title=panel_title + note)
        ax.get_legend().remove()
    axes[1, 1].set_yscale("log")
    axes[1, 1].set_ylim(1e-5, 3)  # a converged policy barely moves: values below 1e-5 are cut off
    fig.legend(
        *axes[0, 0].get_legend_handles_labels(),
        loc="lower center",
        ncol=3,
        fontsize="small",
        title="each rung adds one knob to the rung before it",
    )
    fig.suptitle(f"{title}: mean over {len(next(iter(runs.values())))} seeds, band ± 1 std")
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig

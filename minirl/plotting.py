"""Reward curves over several seeds: mean line, shaded band, centred smoothing, seed count in the legend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from minirl.history import History

__all__ = ["LM_PANELS", "METRIC_LABELS", "plot_lm_curves", "plot_reward_curves", "smooth_centered", "training_figure"]

METRIC_LABELS = {
    "reward": "mean reward per sample",
    "exact_match": "sampled responses correct (fraction)",
    "format_rate": "sampled answers in the asked form (fraction)",
    "greedy_format": "greedy answers in the asked form (fraction, evaluation prompts)",
    "response_length": "response length (tokens, EOS included)",
    "zero_variance_groups": "groups with all rewards equal (fraction)",
    "reward_std": "within-group std of the rewards",
    "tokens_per_second": "response tokens sampled per second",
    "greedy_exact": "greedy responses correct (fraction, evaluation prompts)",
    "sampled_exact": "sampled responses exactly sorted (fraction, evaluation prompts)",
    "greedy_position_acc": "greedy positions correct (fraction, evaluation prompts)",
    "entropy": "policy entropy per token (nats)",
    "kl": "KL(π_θ ‖ π_ref) per token (nats, k3)",
    "kl_old": "KL(π_old ‖ π_θ) after the update, per token (nats, k3)",
    "clip_frac_low": "tokens clipped at 1 − ε_low (fraction)",
    "clip_frac_high": "tokens clipped at 1 + ε_high (fraction)",
    "loss": "loss",
    "success_rate": "episodes reaching the goal (fraction)",
    "greedy_success": "greedy episode reaches the goal (fraction)",
    "exact_return": "exact expected return from the start",
    "value_loss": "value loss",
    "truncated": "sampled responses cut by the token budget (fraction)",
    "greedy_truncated": "greedy responses cut by the token budget (fraction, evaluation prompts)",
    "length_correct": "length of the correct sampled responses (tokens)",
    "length_wrong": "length of the wrong sampled responses (tokens)",
    "pass@1": "pass@1 (evaluation prompts, sampled at T = 1)",
}
X_LABELS = {
    "step": "training step",
    "wall_time": "wall time (s)",
    "episodes": "episodes sampled",
    "samples": "responses sampled",
}


def smooth_centered(values: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average of a 1-D array; the window shrinks at the edges (same length out). A NaN (a step
    that measured nothing, e.g. ``length_correct`` with no correct response) is left out of every average; a
    window with nothing in it stays NaN, so the plot leaves that point out."""
    values = np.asarray(values, dtype=float)
    if window <= 1 or len(values) == 0:
        return values
    half = window // 2
    present = ~np.isnan(values)
    sums = np.concatenate([[0.0], np.cumsum(np.where(present, values, 0.0))])
    counts = np.concatenate([[0], np.cumsum(present)])
    idx = np.arange(len(values))
    lo, hi = np.clip(idx - half, 0, len(values)), np.clip(idx + half + 1, 0, len(values))
    n = counts[hi] - counts[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (sums[hi] - sums[lo]) / np.maximum(n, 1), np.nan)


def _curve(history: History, metric: str, x: str) -> tuple[np.ndarray, np.ndarray]:
    if history.records and metric in history.records[0]:
        return history[x], history[metric]
    if history.evals and metric in history.evals[0]:
        return history.eval_metric(x)[1], history.eval_metric(metric)[1]
    known = history.metrics + (list(history.evals[0]) if history.evals else [])
    raise KeyError(f"metric {metric!r} is not recorded in History {history.label!r}; known: {sorted(set(known))}")


def plot_reward_curves(
    runs: Mapping[str, Sequence[History]],
    metric: str = "reward",
    ax=None,
    smooth: int | None = None,
    band: str = "std",
    x: str = "step",
    title: str | None = None,
):
    """One line per label: the mean over seeds of ``metric`` with a shaded band.

    Args:
        runs: ``{label: [History, ...]}``, one History per seed.
        metric: a per-step metric (``"reward"``, ``"entropy"``, ...) or an evaluation metric
            (``"greedy_exact"``, ...).
        ax: a matplotlib Axes to draw on (default: a new figure).
        smooth: centred moving-average window in points (default: about 1/20 of the run).
        band: ``"std"`` (mean ± one standard deviation over seeds) or ``"minmax"``.
        x: ``"step"``, ``"samples"`` (responses drawn so far), ``"wall_time"`` or ``"episodes"`` (maze).

    Runs of different lengths (stopped early by a time budget) are cut to the shortest. The legend's title
    says what smoothing the lines have. Returns the Axes.
    """
    import matplotlib.pyplot as plt

    if band not in ("std", "minmax"):
        raise ValueError(f"band must be 'std' or 'minmax'; got {band!r}")
    if not runs:
        raise ValueError("runs is empty: pass {label: [History, ...]}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.2))
    windows = set()
    for label, histories in runs.items():
        if isinstance(histories, History):
            histories = [histories]
        if not histories:
            raise ValueError(f"no History for label {label!r}")
        curves = [_curve(h, metric, x) for h in histories]
        n = min(len(ys) for _, ys in curves)
        xs = curves[0][0][:n]
        ys = np.stack([c[1][:n] for c in curves])  # [seed, point]
        window = smooth if smooth is not None else max(1, n // 20)
        windows.add(window)
        ys = np.stack([smooth_centered(y, window) for y in ys])
        mean = ys.mean(axis=0)
        lo, hi = (mean - ys.std(axis=0), mean + ys.std(axis=0)) if band == "std" else (ys.min(0), ys.max(0))
        seeds = f"{len(histories)} seed{'s' if len(histories) != 1 else ''}"
        (line,) = ax.plot(xs, mean, label=f"{label} ({seeds})")
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel(X_LABELS.get(x, x))
    ax.set_ylabel(_wrap(METRIC_LABELS.get(metric, metric), 40))  # a long label would run past a short panel
    band_text = "± 1 std over seeds" if band == "std" else "min–max over seeds"
    ax.set_title(title if title is not None else f"{metric} (mean, band {band_text})")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small", title=_smoothing_note(windows), title_fontsize="small")
    return ax


def _smoothing_note(windows: set[int]) -> str | None:
    """The legend's title: what smoothing the lines have (None when they are the raw points)."""
    if windows <= {1}:
        return None
    return f"centred moving average over {'/'.join(map(str, sorted(windows)))} points"


LM_PANELS = (
    "reward",
    "greedy_exact",
    "format_rate",
    "response_length",
    "kl",
    "entropy",
    "zero_variance_groups",
    "truncated",
    "length_correct",
)

# The y-axis of an LM panel: its unit, short enough to fit beside a short panel (the title names the metric).
_LM_UNITS = {
    "reward": "reward per sample",
    "exact_match": "fraction of samples",
    "format_rate": "fraction of samples",
    "greedy_exact": "fraction of prompts",
    "greedy_format": "fraction of prompts",
    "sampled_exact": "fraction of prompts",
    "response_length": "tokens",
    "zero_variance_groups": "fraction of groups",
    "reward_std": "reward",
    "tokens_per_second": "tokens per second",
    "entropy": "nats per token",
    "kl": "nats per token",
    "kl_old": "nats per token",
    "clip_frac_low": "fraction of tokens",
    "clip_frac_high": "fraction of tokens",
    "loss": "loss",
    "truncated": "fraction of samples",
    "greedy_truncated": "fraction of prompts",
    "length_correct": "tokens",
    "length_wrong": "tokens",
}


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def plot_lm_curves(
    runs: Mapping[str, Sequence[History]],
    metrics: Sequence[str] = LM_PANELS,
    smooth: int | None = None,
    title: str | None = None,
):
    """The curves a language-model run needs, one panel each (default: reward, greedy accuracy on the evaluation
    prompts, format rate, response length, KL to π_ref, entropy), mean over seeds with a band. Metrics a run did not
    record are left out, never drawn as zeros. Each panel's title names its metric and its y-axis gives the unit;
    the layout is constrained, so no label runs into another or off the figure. Returns the Figure."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    first = next(iter(runs.values()))
    first = first[0] if not isinstance(first, History) else first
    recorded = set(first.metrics) | (set(first.evals[0]) if first.evals else set())
    shown = [m for m in metrics if m in recorded]
    if not shown:
        raise ValueError(f"none of {list(metrics)} is recorded; the runs have {sorted(recorded)}")
    cols = min(3, len(shown))
    rows = (len(shown) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False, layout="constrained")
    for ax, metric in zip(axes.flat, shown):
        is_eval = metric not in first.metrics
        plot_reward_curves(
            runs, metric, ax=ax, smooth=1 if is_eval else smooth, title=_wrap(METRIC_LABELS.get(metric, metric), 48)
        )
        ax.set_ylabel(_LM_UNITS.get(metric, _wrap(METRIC_LABELS.get(metric, metric), 28)))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers, even in a 4-step run
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


def training_figure(runs: Mapping[str, Sequence[History]], task: str, *, text: bool = False, maze: bool = False):
    """The figure of a ``minirl train`` or ``compare``: a language model's panels (``plot_lm_curves``) when
    ``text``, else the training reward beside the greedy accuracy (the maze: the exact expected return), over
    samples (the maze: episodes). ``task`` names the task in the titles. Returns the Figure."""
    import matplotlib.pyplot as plt

    if text:
        return plot_lm_curves(runs, title=f"{task}: a language model trained with GRPO")
    second = "exact_return" if maze else "greedy_exact"
    x = "episodes" if maze else "samples"
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    plot_reward_curves(runs, "reward", ax=axes[0], x=x, title=f"{task}: training reward")
    plot_reward_curves(
        runs,
        second,
        ax=axes[1],
        x=x,
        smooth=1,
        title=f"{task}: {'exact return (DP)' if maze else 'greedy accuracy'}",
    )
    fig.tight_layout()
    return fig

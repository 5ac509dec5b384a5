"""The curves (minirl.plotting): centred smoothing by hand, and what a figure shows (its lines, bands, axis labels,
titles and legend), read back from matplotlib's objects with the Agg backend.

The values are small dyadic fractions: their means, standard deviations and moving averages are exact in float64
or within a few ulps (the default rel 1e-7 of ``np.testing.assert_allclose``)."""

import matplotlib
import numpy as np
import pytest

from minirl.history import History
from minirl.plotting import LM_PANELS, METRIC_LABELS, plot_lm_curves, plot_reward_curves, smooth_centered

matplotlib.use("Agg")
import matplotlib.pyplot as plt


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def run(rewards, seed=0, evals=(), **metrics) -> History:
    """A History with ``reward`` (and any other per-step metric) at steps 1, 2, ...; ``samples`` = 4 per step."""
    h = History(label="run", seed=seed)
    for i, reward in enumerate(rewards):
        h.log(step=i + 1, samples=4 * (i + 1), reward=reward, **{k: v[i] for k, v in metrics.items()})
    for step, greedy in evals:
        h.log_eval(step=step, samples=4 * step, greedy_exact=greedy)
    return h


def band(ax, index=0) -> np.ndarray:
    """The (x, y) outline of the index-th shaded band, which fill_between draws as one polygon."""
    return ax.collections[index].get_paths()[0].vertices


# ---- smooth_centered ----------------------------------------------------------------------------------


def test_smooth_centered_hand_computed():
    np.testing.assert_allclose(smooth_centered(np.array([0.0, 3.0, 6.0, 9.0]), 3), [1.5, 3.0, 6.0, 7.5])
    # window 4: half = 2 on each side, so 5 points in the middle, fewer at the edges
    np.testing.assert_allclose(smooth_centered([0.0, 5.0, 10.0, 15.0, 20.0], 4), [5.0, 7.5, 10.0, 12.5, 15.0])
    np.testing.assert_allclose(smooth_centered(np.array([1.0, 2.0]), 1), [1.0, 2.0])
    assert smooth_centered([], 5).tolist() == []
    assert smooth_centered([2.0, 4.0], 9).tolist() == [3.0, 3.0]  # a window past both ends: the mean of all


def test_smooth_centered_leaves_nan_out_of_each_average():
    """A step that measured nothing (NaN) does not spread to its neighbours; a window of only NaN stays NaN."""
    nan = float("nan")
    got = smooth_centered([nan, nan, nan, 4.0, nan, 8.0], 3)
    np.testing.assert_allclose(got, [nan, nan, 4.0, 4.0, 6.0, 8.0])


# ---- plot_reward_curves -------------------------------------------------------------------------------


def test_plot_reward_curves_mean_band_and_legend():
    ax = plot_reward_curves({"grpo": [run([0, 1, 2]), run([2, 3, 4], seed=1)], "naive": [run([0, 0, 0])]}, smooth=1)
    lines = ax.get_lines()
    assert [line.get_xdata().tolist() for line in lines] == [[1.0, 2.0, 3.0]] * 2
    np.testing.assert_allclose(lines[0].get_ydata(), [1, 2, 3])  # mean over the two seeds
    np.testing.assert_allclose(lines[1].get_ydata(), [0, 0, 0])
    # the band: mean ± the std over seeds (1 here), drawn below then back along the top
    ys = band(ax)[:, 1]
    assert set(np.round(ys, 12)) == {0.0, 1.0, 2.0, 3.0, 4.0} and ys.min() == 0.0 and ys.max() == 4.0
    assert len(ax.collections) == 2  # one band per label
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["grpo (2 seeds)", "naive (1 seed)"]
    assert ax.get_xlabel() == "training step" and ax.get_ylabel() == "mean reward per sample"
    assert ax.get_title() == "reward (mean, band ± 1 std over seeds)"
    assert ax.get_legend().get_title().get_text() == ""  # smooth=1: raw points, no smoothing note
    smoothed = plot_reward_curves({"grpo": [run(list(range(60)))]})  # default window: 60 // 20 points
    assert smoothed.get_legend().get_title().get_text() == "centred moving average over 3 points"
    np.testing.assert_allclose(smoothed.get_lines()[0].get_ydata()[:3], [0.5, 1.0, 2.0])
    with pytest.raises(KeyError, match="not recorded"):
        plot_reward_curves({"a": [run([1])]}, metric="greedy_exact")


def test_minmax_band_samples_axis_title_and_a_given_axes():
    fig, given = plt.subplots()
    ax = plot_reward_curves(
        {"dapo": [run([0.0, 0.5, 1.0]), run([1.0, 1.0, 1.0], seed=1), run([0.5, 0.0, 0.25], seed=2)]},
        ax=given,
        smooth=1,
        band="minmax",
        x="samples",
        title="three seeds",
    )
    assert ax is given and ax.figure is fig
    assert ax.get_lines()[0].get_xdata().tolist() == [4.0, 8.0, 12.0]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [0.5, 0.5, 0.75])
    outline = band(ax)
    for x, lo, hi in [(4.0, 0.0, 1.0), (8.0, 0.0, 1.0), (12.0, 0.25, 1.0)]:
        assert set(outline[outline[:, 0] == x, 1]) == {lo, hi}
    assert ax.get_xlabel() == "responses sampled" and ax.get_title() == "three seeds"
    assert ax.get_legend().get_texts()[0].get_text() == "dapo (3 seeds)"


def test_an_evaluation_metric_a_bare_history_and_runs_cut_to_the_shortest():
    short = run([0.0, 0.0], evals=[(0, 0.0), (2, 0.5)])
    longer = run([0.0, 0.0, 0.0, 0.0], seed=1, evals=[(0, 0.25), (2, 0.75), (4, 1.0)])
    ax = plot_reward_curves({"tiny": [short, longer]}, metric="greedy_exact", smooth=1)
    line = ax.get_lines()[0]
    assert line.get_xdata().tolist() == [0.0, 2.0] and line.get_ydata().tolist() == [0.125, 0.625]
    assert ax.get_ylabel() == "greedy responses correct (fraction,\nevaluation prompts)"  # wrapped at 40 characters
    ax = plot_reward_curves({"one": run([0.25, 0.75])}, smooth=1)  # a History alone counts as one seed
    assert ax.get_legend().get_texts()[0].get_text() == "one (1 seed)"


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(ValueError, match="band must be 'std' or 'minmax'; got 'iqr'"):
        plot_reward_curves({"a": [run([1.0])]}, band="iqr")
    with pytest.raises(ValueError, match=r"runs is empty: pass \{label: \[History, ...\]\}"):
        plot_reward_curves({})
    with pytest.raises(ValueError, match="no History for label 'a'"):
        plot_reward_curves({"a": []})
    with pytest.raises(KeyError, match=r"metric 'kl' is not recorded in History 'run'; known: \['reward', 'samples'"):
        plot_reward_curves({"a": [run([1.0])]}, metric="kl")


# ---- plot_lm_curves ----------------------------------------------------------------------------------


def test_lm_curves_one_panel_per_recorded_metric_with_its_unit():
    """Of the default panels, the run records reward, greedy_exact (evaluations), response_length and entropy,
    not format_rate nor kl: four panels on a 2 x 3 grid, the two unused axes hidden, nothing drawn as zeros."""
    rewards = [0.0, 0.25, 0.5, 0.75]
    runs = {
        "tiny": [
            run(rewards, response_length=[8, 7, 6, 5], entropy=[2.0, 1.5, 1.0, 0.5], evals=[(0, 0.0), (4, 0.5)]),
            run(
                rewards, seed=1, response_length=[8, 8, 6, 6], entropy=[2.0, 1.0, 1.0, 0.5], evals=[(0, 0.0), (4, 1.0)]
            ),
        ]
    }
    fig = plot_lm_curves(runs, smooth=1, title="a language model trained with GRPO")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(fig.axes) == 6 and len(visible) == 4
    assert [ax.get_title() for ax in visible] == [
        "mean reward per sample",
        "greedy responses correct (fraction, evaluation\nprompts)",  # wrapped at 48 characters
        "response length (tokens, EOS included)",
        "policy entropy per token (nats)",
    ]
    assert [ax.get_ylabel() for ax in visible] == [
        "reward per sample",
        "fraction of prompts",
        "tokens",
        "nats per token",
    ]
    assert all(ax.get_xlabel() == "training step" for ax in visible)
    assert fig.get_suptitle() == "a language model trained with GRPO"
    np.testing.assert_allclose(visible[0].get_lines()[0].get_ydata(), rewards)
    np.testing.assert_allclose(visible[1].get_lines()[0].get_ydata(), [0.0, 0.75])
    np.testing.assert_allclose(visible[2].get_lines()[0].get_ydata(), [8.0, 7.5, 6.0, 5.5])
    assert all(ax.get_legend().get_texts()[0].get_text() == "tiny (2 seeds)" for ax in visible)


def test_lm_curves_chosen_metrics_layout_and_evaluations_never_smoothed():
    h = run(list(np.linspace(0, 1, 40)), kl=[0.01 * i for i in range(40)], evals=[(0, 0.0), (20, 0.5), (40, 1.0)])
    fig = plot_lm_curves({"tiny": [h]}, metrics=["kl", "greedy_exact"])
    assert len(fig.axes) == 2 and fig.get_suptitle() == ""
    kl, greedy = fig.axes
    assert kl.get_title() == "KL(π_θ ‖ π_ref) per token (nats, k3)" == METRIC_LABELS["kl"]
    assert kl.get_legend().get_title().get_text() == "centred moving average over 2 points"  # 40 // 20
    assert greedy.get_legend().get_title().get_text() == ""  # evaluation points are few: drawn raw
    assert greedy.get_lines()[0].get_ydata().tolist() == [0.0, 0.5, 1.0]
    assert LM_PANELS[:6] == ("reward", "greedy_exact", "format_rate", "response_length", "kl", "entropy")
    assert LM_PANELS[6:] == ("zero_variance_groups", "truncated", "length_correct")  # the diagnostics
    with pytest.raises(ValueError, match=r"none of \['format_rate'\] is recorded; the runs have \['greedy_exact', "):
        plot_lm_curves({"tiny": [h]}, metrics=["format_rate"])

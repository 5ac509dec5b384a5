"""The check of notebook 08 catches the plausible wrong implementations, each with a message that names it."""

from __future__ import annotations

import pytest
import torch
from check_helpers import caught, float32_approx, run

import minirl
from minirl.checks import check_zero_variance_fraction
from minirl.checks import nb08_pretrained as pretrained_checks


def zv_complement(rewards):
    return float((rewards != rewards[:, :1]).any(dim=1).float().mean())


def zv_count(rewards):
    return int((rewards == rewards[:, :1]).all(dim=1).sum())


def zv_only_all_wrong(rewards):
    return float((rewards == 0).all(dim=1).float().mean())


def zv_only_all_right(rewards):
    return float((rewards == rewards.max()).all(dim=1).float().mean())


def zv_per_response(rewards):
    return float((rewards == rewards[:, :1]).float().mean())


def zv_equal_to_mean(rewards):
    return float((rewards == rewards.mean(dim=1, keepdim=True)).float().mean())


def zv_wrong_axis(rewards):
    return float((rewards == rewards[:1, :]).all(dim=0).float().mean())


def zv_zero_std(rewards):
    return float((rewards.std(dim=1) == 0).float().mean())


def zv_all_equal_to_mean(rewards):
    return float((rewards == rewards.mean(dim=1, keepdim=True)).all(dim=1).float().mean())


def zv_no_mean(rewards):
    return (rewards == rewards[:, :1]).all(dim=1).float()


def zv_range_below_a_tenth(rewards):
    return float((rewards.max(dim=1).values - rewards.min(dim=1).values < 0.1).float().mean())


def zv_std_below_a_tolerance(rewards):
    return float((rewards.std(dim=1) < 1e-6).float().mean())


def zv_isclose(rewards):
    return float(torch.isclose(rewards, rewards[:, :1]).all(dim=1).float().mean())


def zv_in_place(rewards):
    rewards -= rewards[:, :1]
    return float((rewards == 0).all(dim=1).float().mean())


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (zv_complement, ["DIFFER"]),
        (zv_count, ["number of such groups", "divide"]),
        (zv_only_all_wrong, ["only the groups where every reward is 0"]),
        (zv_only_all_right, ["only the groups where every response gets the best reward"]),
        (zv_per_response, ["fraction of RESPONSES"]),
        (zv_equal_to_mean, ["equal to their group's mean"]),
        (zv_wrong_axis, ["wrong axis"]),
        (zv_zero_std, ["std == 0", "float32"]),
        (zv_all_equal_to_mean, ["std == 0 (or equality with the mean)"]),
        (zv_no_mean, ["one number", "average over the groups"]),
        (zv_in_place, ["in place"]),
        (
            zv_range_below_a_tenth,
            [
                "continuous rewards",
                "expected 0.375, got 0.875",
                "counted 4 groups",
                "(6e-08, 1e-05, 0.001, 0.02)",
                "EXACTLY equal",
            ],
        ),
        (zv_std_below_a_tolerance, ["expected 0.375, got 0.5", "counted 1 group", "(6e-08)", "no tolerance"]),
        (zv_isclose, ["counted 1 group", "(6e-08)", "=="]),
    ],
    ids=[
        "complement",
        "count",
        "only-all-wrong",
        "only-all-right",
        "per-response",
        "equal-to-mean",
        "wrong-axis",
        "zero-std",
        "all-equal-to-mean",
        "no-mean",
        "in-place",
        "range-tolerance",
        "std-tolerance",
        "isclose",
    ],
)
def test_zero_variance_fraction_mistakes(wrong, keywords, capsys):
    caught(check_zero_variance_fraction, wrong, capsys, *keywords)


@pytest.mark.parametrize(
    "right",
    [
        lambda r: (r.max(dim=1).values == r.min(dim=1).values).float().mean(),  # a 0-dim tensor is fine too
        lambda r: sum(len(set(row)) == 1 for row in r.tolist()) / len(r),
        lambda r: float(((r - r[:, :1]).abs().amax(dim=1) == 0).double().mean()),
    ],
    ids=["max-equals-min", "python-sets", "difference-is-zero"],
)
def test_zero_variance_fraction_other_correct_ways_pass(right, capsys):
    ok, line = run(check_zero_variance_fraction, right, capsys)
    assert ok, line


def test_zero_variance_constants_match_the_reference():
    assert minirl.zero_variance_fraction(torch.tensor(pretrained_checks.ZV_REWARDS)) == float32_approx(
        pretrained_checks.ZV_EXPECTED
    )
    assert minirl.zero_variance_fraction(torch.tensor(pretrained_checks.ZV_ANY)) == float32_approx(
        pretrained_checks.ZV_ANY_EXPECTED
    )


def test_continuous_case_lies_on_both_sides_of_the_librarys_boundary():
    """Exact equality, as compute_deltas draws it: the three equal groups of inexact float32 values get zero
    deltas (and count), the four near-equal ones (0.02 down to one ulp) get nonzero deltas (and do not)."""
    r = torch.tensor(pretrained_checks.ZV_CONTINUOUS)
    assert minirl.zero_variance_fraction(r) == pretrained_checks.ZV_CONTINUOUS_EXPECTED == 3 / 8
    for mode in ("centered_rewards", "normalized_rewards"):
        deltas = minirl.compute_deltas(r, mode)
        assert (deltas[:3] == 0).all()
        assert (deltas[3:].abs().amax(dim=1) > 0).all()
    assert r[0, 0].item() != 0.7 and r[1, 0].item() != 0.1  # not representable: equality is still exact
    spreads = (r.amax(dim=1) - r.amin(dim=1))[3:7].tolist()
    assert spreads == pytest.approx(pretrained_checks.ZV_SPREADS, rel=0.01)  # 1e-5 in float32 is 1.0014e-5
    assert spreads[0] == 2.0**-24  # one float32 ulp of 0.9


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (
            lambda r: float((r == r[:, :1]).all(dim=1).float().sum() / r.numel()),
            ["number of rewards (batch × trial = 48)", "batch = 12"],
        ),
        (lambda r: 100.0 * float((r == r[:, :1]).all(dim=1).float().mean()), ["percentage", "[0, 1]"]),
        (
            lambda r: float((r == r[:, :1]).all(dim=1).float().mean()) / 2,
            ["expected 0.5833, got 0.2917", "all exactly equal: 7 here"],
        ),
    ],
    ids=["per-reward", "percentage", "unnamed"],
)
def test_zero_variance_fraction_more_mistakes(wrong, keywords, capsys):
    caught(check_zero_variance_fraction, wrong, capsys, *keywords)

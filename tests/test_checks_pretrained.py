"""The check of notebook 08 catches the plausible wrong implementations, each with a message that names it."""

from __future__ import annotations

import pytest
import torch
from check_helpers import caught, run

import minirl
from minirl.checks import check_zero_variance_fraction
from minirl.checks import pretrained as pretrained_checks


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


def zv_in_place(rewards):
    rewards -= rewards[:, :1]
    return float((rewards == 0).all(dim=1).float().mean())


@pytest.mark.parametrize("wrong, keywords", [
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
], ids=["complement", "count", "only-all-wrong", "only-all-right", "per-response", "equal-to-mean", "wrong-axis",
        "zero-std", "all-equal-to-mean", "no-mean", "in-place"])
def test_zero_variance_fraction_mistakes(wrong, keywords, capsys):
    caught(check_zero_variance_fraction, wrong, capsys, *keywords)


@pytest.mark.parametrize("right", [
    lambda r: (r.max(dim=1).values == r.min(dim=1).values).float().mean(),  # a 0-dim tensor is fine too
    lambda r: sum(len(set(row)) == 1 for row in r.tolist()) / len(r),
    lambda r: float((r.std(dim=1) < 1e-6).float().mean()),
], ids=["max-equals-min", "python-sets", "std-below-a-tolerance"])
def test_zero_variance_fraction_other_correct_ways_pass(right, capsys):
    ok, line = run(check_zero_variance_fraction, right, capsys)
    assert ok, line


def test_zero_variance_constants_match_the_reference():
    assert minirl.zero_variance_fraction(torch.tensor(pretrained_checks.ZV_REWARDS)) == pytest.approx(
        pretrained_checks.ZV_EXPECTED)
    assert minirl.zero_variance_fraction(torch.tensor(pretrained_checks.ZV_ANY)) == pytest.approx(
        pretrained_checks.ZV_ANY_EXPECTED)


def test_zero_variance_fraction_reference():
    assert minirl.zero_variance_fraction(torch.tensor([[1.0, 1.0], [0.0, 1.0]])) == 0.5
    assert minirl.zero_variance_fraction(torch.tensor([[3.0]])) == 1.0  # a group of one is all equal
    with pytest.raises(ValueError, match=r"\[batch, trial\]"):
        minirl.zero_variance_fraction(torch.zeros(4))
    with pytest.raises(ValueError, match="at least one group"):
        minirl.zero_variance_fraction(torch.zeros(0, 4))

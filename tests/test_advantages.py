"""The advantages (minirl.advantages): group-relative deltas, discounted returns and GAE, against numbers computed
by hand on small tensors."""

import math

import pytest
import torch

from minirl.advantages import compute_deltas, compute_gae, discounted_returns, zero_variance_fraction
from tests.tolerances import assert_close_f32


def t(x):
    return torch.tensor(x, dtype=torch.float32)


# ---- compute_deltas ---------------------------------------------------------------------------


def test_deltas_hand_computed():
    r = t([[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 1.0, 1.0]])
    assert compute_deltas(r, "rewards") is r
    torch.testing.assert_close(compute_deltas(r, "centered_rewards"), t([[-2, -1, 0, 3], [-0.5, -0.5, 0.5, 0.5]]))
    # group 1: mean 3, unbiased std sqrt((4+1+0+9)/3) = sqrt(14/3); group 2: std sqrt(1/3); both + ε = 1e-6
    s1, s2 = math.sqrt(14 / 3) + 1e-6, math.sqrt(1 / 3) + 1e-6
    expected = t([[-2 / s1, -1 / s1, 0, 3 / s1], [-0.5 / s2, -0.5 / s2, 0.5 / s2, 0.5 / s2]])
    # float32 against the exact value (tests/tolerances.py): a mean and a variance of 4 rewards, a square root,
    # a division: ~12 additions and roundings
    assert_close_f32(compute_deltas(r, "normalized_rewards"), expected, terms=12)


@pytest.mark.parametrize("mode", ["centered_rewards", "normalized_rewards"])
def test_equal_rewards_give_zero_not_nan(mode):
    r = t([[3.0, 3.0, 3.0], [0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    d = compute_deltas(r, mode)
    assert torch.isfinite(d).all()
    assert torch.equal(d[:2], torch.zeros(2, 3))


@pytest.mark.parametrize("mode", ["centered_rewards", "normalized_rewards"])
@pytest.mark.parametrize("value", [1.2, 0.2, 0.7])
def test_equal_inexact_rewards_give_exact_zero(mode, value):
    # in float32 mean(8 x 1.2) - 1.2 is about 1e-7, not 0; divided by std + eps (std ~ 1e-7) that used to
    # become +0.106 per response: a push on a group that carries no signal
    d = compute_deltas(torch.full((2, 8), value), mode)
    assert torch.equal(d, torch.zeros(2, 8))


def test_deltas_bad_input():
    with pytest.raises(ValueError, match=r"needs a group of at least 2.*got rewards of shape \[4, 1\]"):
        compute_deltas(torch.zeros(4, 1), "normalized_rewards")
    assert compute_deltas(torch.zeros(4, 1), "rewards").shape == (4, 1)  # plain rewards need no group
    with pytest.raises(ValueError, match=r"rewards must be a tensor of shape \[batch, trial\]; got \[6\]"):
        compute_deltas(torch.zeros(6))
    with pytest.raises(ValueError, match="mode must be one of"):
        compute_deltas(torch.zeros(2, 2), "normalised")
    with pytest.raises(TypeError, match="float tensor"):
        compute_deltas(torch.zeros(2, 2, dtype=torch.long))


# ---- returns and GAE ---------------------------------------------------------------------------


def test_discounted_returns_hand_computed():
    r = t([[0.0, 0.0, 10.0, 0.0]])
    done = t([[0.0, 0.0, 1.0, 0.0]])
    torch.testing.assert_close(discounted_returns(r, done, 0.9), t([[8.1, 9.0, 10.0, 0.0]]))


def test_gae_hand_computed():
    r = t([0.0, 0.0, 10.0])
    v = t([1.0, 2.0, 5.0])
    nv = t([2.0, 5.0, 0.0])
    done = t([0.0, 0.0, 1.0])
    # gamma 1: deltas = [0+2-1, 0+5-2, 10-5] = [1, 3, 5]
    torch.testing.assert_close(compute_gae(r, v, nv, done, 1.0, 0.0), t([1.0, 3.0, 5.0]))
    # lam 0.5: A2 = 5, A1 = 3 + 0.5*5 = 5.5, A0 = 1 + 0.5*5.5 = 3.75
    torch.testing.assert_close(compute_gae(r, v, nv, done, 1.0, 0.5), t([3.75, 5.5, 5.0]))
    # lam 1: Monte Carlo return (10) minus V
    torch.testing.assert_close(compute_gae(r, v, nv, done, 1.0, 1.0), t([9.0, 8.0, 5.0]))


def test_gae_does_not_leak_across_episode_end():
    r = t([10.0, 7.0])
    v = t([0.0, 0.0])
    nv = t([3.0, 0.0])
    done = t([1.0, 0.0])
    torch.testing.assert_close(compute_gae(r, v, nv, done, 1.0, 1.0), t([10.0, 7.0]))
    with pytest.raises(ValueError, match="must share one shape"):
        compute_gae(r, v, t([1.0]), done)


# ---- zero_variance_fraction ------------------------------------------------------------------------


def test_zero_variance_fraction_counts_the_groups_whose_rewards_are_all_equal():
    assert zero_variance_fraction(torch.tensor([[1.0, 1.0], [0.0, 1.0]])) == 0.5
    assert zero_variance_fraction(torch.tensor([[3.0]])) == 1.0  # a group of one is all equal
    with pytest.raises(ValueError, match=r"\[batch, trial\]"):
        zero_variance_fraction(torch.zeros(4))
    with pytest.raises(ValueError, match="at least one group"):
        zero_variance_fraction(torch.zeros(0, 4))

"""minirl.estimators: the enumerable toy of the estimator lab, against hand-computed numbers."""

from __future__ import annotations

import math

import pytest
import torch

from minirl.advantages import compute_deltas
from minirl.estimators import (
    all_responses,
    estimator_stats,
    exact_gradient,
    expected_reward,
    gradient_estimates,
    leave_one_out_deltas,
    response_index,
    score,
    sequence_log_probs,
)
from tests.tolerances import assert_close_f32

# Prompt [2, 0] answered with 2 tokens from {0, 1, 2}: the sort reward counts positions matching [0, 2].
SORT_REWARDS = torch.tensor([1.0, 1.0, 2.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0])  # rows of all_responses(3, 2)


def test_all_responses_in_lexicographic_order():
    got = all_responses(3, 2)
    assert got.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [2, 0], [2, 1], [2, 2]]
    assert got.dtype == torch.long
    assert all_responses(2, 3).shape == (8, 3)
    assert response_index(got, 3).tolist() == list(range(9))
    assert response_index(torch.tensor([[[2, 1]]]), 3).tolist() == [[7]]


def test_sequence_log_probs_uniform_and_by_hand():
    responses = all_responses(3, 2)
    uniform = sequence_log_probs(torch.zeros(2, 3), responses)
    assert torch.allclose(uniform, torch.full((9,), 2 * math.log(1 / 3)))
    # position 0 logits [log 1, log 2, log 1] -> probs [1/4, 1/2, 1/4]; position 1 uniform
    logits = torch.tensor([[0.0, math.log(2.0), 0.0], [0.0, 0.0, 0.0]])
    probs = sequence_log_probs(logits, responses).exp()
    assert torch.allclose(probs[5], torch.tensor(1 / 2 * 1 / 3))  # response [1, 2]
    assert torch.allclose(probs[0], torch.tensor(1 / 4 * 1 / 3))  # response [0, 0]
    assert torch.allclose(probs.sum(), torch.tensor(1.0))


def test_expected_reward_and_exact_gradient_by_hand():
    # Uniform policy: J = mean of the 9 rewards = 6 / 9.
    logits = torch.zeros(2, 3)
    assert math.isclose(float(expected_reward(logits, SORT_REWARDS)), 6 / 9, rel_tol=1e-6)
    # The reward is additive: R(y) = 1[y_0 = 0] + 1[y_1 = 2], so J = p_0(0) + p_1(2) and, for a softmax,
    # ∂p(k)/∂logit(j) = p(k) (1[j = k] − p(j)): at uniform p = 1/3 that is 2/9 for j = k, −1/9 otherwise.
    want = torch.tensor([[2 / 9, -1 / 9, -1 / 9], [-1 / 9, -1 / 9, 2 / 9]])
    # float32 against the exact value (tests/tolerances.py): 9 responses, each a product over 2 positions of a
    # 3-token softmax: ~50 additions and roundings behind each entry
    assert_close_f32(exact_gradient(logits, SORT_REWARDS), want, terms=50)


def test_exact_gradient_matches_finite_differences():
    logits = torch.randn(2, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    table = SORT_REWARDS.double()
    grad = exact_gradient(logits, table)
    h = 1e-6
    for j in range(2):
        for v in range(3):
            bumped = logits.clone()
            bumped[j, v] += h
            numeric = (expected_reward(bumped, table) - expected_reward(logits, table)) / h
            assert math.isclose(float(numeric), float(grad[j, v]), abs_tol=1e-5)


def test_score_is_onehot_minus_probs_and_matches_autograd():
    logits = torch.tensor([[0.0, math.log(2.0), 0.0], [0.0, 0.0, 0.0]])
    got = score(logits, torch.tensor([1, 2]))
    want = torch.tensor([[-1 / 4, 1 / 2, -1 / 4], [-1 / 3, -1 / 3, 2 / 3]])
    assert_close_f32(got, want, terms=3)  # a 3-token softmax against the exact value (tests/tolerances.py)
    theta = logits.clone().requires_grad_(True)
    (auto,) = torch.autograd.grad(sequence_log_probs(theta, torch.tensor([1, 2])), theta)
    assert_close_f32(auto, got, terms=6)  # log_softmax's backward: the same softmax, another order
    assert score(logits, all_responses(3, 2).view(3, 3, 2)).shape == (3, 3, 2, 3)


def test_leave_one_out_deltas_by_hand():
    rewards = torch.tensor([[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 4.0, 0.0]])
    # r_i − mean of the other three: 1 − 11/3, 2 − 10/3, 3 − 3, 6 − 2 | 0 − 4/3, 0 − 4/3, 4 − 0, 0 − 4/3
    want = torch.tensor([[1 - 11 / 3, 2 - 10 / 3, 0.0, 4.0], [-4 / 3, -4 / 3, 4.0, -4 / 3]])
    assert torch.allclose(leave_one_out_deltas(rewards), want)
    assert torch.allclose(leave_one_out_deltas(rewards), 4 / 3 * compute_deltas(rewards, "centered_rewards"))
    with pytest.raises(ValueError, match="trial >= 2"):
        leave_one_out_deltas(torch.ones(3, 1))


def test_estimator_stats_by_hand():
    exact = torch.tensor([1.0, 0.0])
    estimates = torch.tensor([[2.0, 1.0], [0.0, -1.0], [0.0, 0.0]])  # mean [2/3, 0]
    s = estimator_stats(estimates, exact)
    assert math.isclose(s["scale"], 2 / 3, rel_tol=1e-9)
    assert math.isclose(s["bias"], 1 / 3, rel_tol=1e-9)
    # squared distances to the mean [2/3, 0]: (4/3)² + 1, (2/3)² + 1, (2/3)²; to the exact [1, 0]: 2, 2, 1
    assert math.isclose(s["variance"], ((16 / 9 + 1) + (4 / 9 + 1) + 4 / 9) / 3, rel_tol=1e-9)
    assert math.isclose(s["mse"], 5 / 3, rel_tol=1e-9)
    assert math.isclose(s["mse"], s["bias"] ** 2 + s["variance"], rel_tol=1e-9)
    # cosines: 2/√5, 0 (orthogonal), 0 (a zero estimate counts as 0)
    assert math.isclose(s["cosine"], 2 / math.sqrt(5) / 3, rel_tol=1e-9)
    assert math.isclose(s["mean_cosine"], 1.0, rel_tol=1e-9)
    with pytest.raises(ValueError, match="zero"):
        estimator_stats(estimates, torch.zeros(2))
    with pytest.raises(ValueError, match="estimates must be"):
        estimator_stats(estimates, torch.zeros(3))


def test_gradient_estimates_one_group_by_hand():
    # A policy that is (almost) deterministic on [0, 2] (reward 2): every sample is [0, 2], so with
    # Δ = r the estimate is 2 · score([0, 2]) ≈ 0, and centred deltas give exactly 0.
    logits = torch.tensor([[30.0, 0.0, 0.0], [0.0, 0.0, 30.0]])
    est = gradient_estimates(logits, SORT_REWARDS, 4, 3, lambda r: compute_deltas(r, "centered_rewards"))
    assert est.shape == (3, 2, 3)
    assert torch.equal(est, torch.zeros(3, 2, 3))


def test_gradient_estimates_are_unbiased_and_centred_ones_shrink_by_g_minus_1_over_g():
    logits = torch.randn(2, 3, generator=torch.Generator().manual_seed(0))
    exact = exact_gradient(logits, SORT_REWARDS)
    for group_size in (2, 4):
        gen = torch.Generator().manual_seed(group_size)
        plain = gradient_estimates(logits, SORT_REWARDS, group_size, 20000, lambda r: r, gen)
        gen = torch.Generator().manual_seed(group_size)
        centred = gradient_estimates(
            logits, SORT_REWARDS, group_size, 20000, lambda r: compute_deltas(r, "centered_rewards"), gen
        )
        gen = torch.Generator().manual_seed(group_size)
        loo = gradient_estimates(logits, SORT_REWARDS, group_size, 20000, leave_one_out_deltas, gen)
        assert abs(estimator_stats(plain, exact)["scale"] - 1) < 0.05
        assert abs(estimator_stats(loo, exact)["scale"] - 1) < 0.05
        assert abs(estimator_stats(centred, exact)["scale"] - (group_size - 1) / group_size) < 0.05
        # the same samples: leave-one-out is exactly G / (G − 1) times the group-mean estimate, up to float32
        # rounding in another order (tests/tolerances.py): G deltas from G rewards, times the score, averaged over
        # G samples, then the factor: ~4G additions and roundings behind each entry
        assert_close_f32(loo, centred * group_size / (group_size - 1), terms=4 * group_size)


def test_input_validation():
    with pytest.raises(ValueError, match=r"\[pos, vocab\]"):
        expected_reward(torch.zeros(3), SORT_REWARDS)
    with pytest.raises(ValueError, match="one reward per response"):
        expected_reward(torch.zeros(2, 3), torch.zeros(8))
    with pytest.raises(ValueError, match="deltas_fn"):
        gradient_estimates(torch.zeros(2, 3), SORT_REWARDS, 4, 2, lambda r: r[:, :1])
    with pytest.raises(ValueError, match="positive"):
        gradient_estimates(torch.zeros(2, 3), SORT_REWARDS, 0, 2, lambda r: r)
    with pytest.raises(ValueError, match="positive ints"):
        all_responses(0, 2)

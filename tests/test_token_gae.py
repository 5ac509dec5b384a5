"""minirl.advantages.token_gae: GAE over the model's tokens of an episode, environment tokens skipped, the KL penalty
folded into the rewards. Hand-worked cases in float64 (exact up to a few ulps: ``abs=1e-12``), and random cases
against a plain loop written here (float64 too)."""

import pytest
import torch

from minirl.advantages import token_gae

EPS = 1e-12  # float64 sums of a handful of numbers


def _t(*rows):
    return torch.tensor([[list(r) for r in rows]], dtype=torch.float64)  # [1, trial, pos]


# model, env, model, model, padding: the model's tokens are positions 0, 2, 3
MASK = _t([1, 0, 1, 1, 0])
VALUES = _t([0.5, 9.0, 1.0, 2.0, 9.0])  # 9.0 where no value counts (an env token, padding)
OUTCOME = torch.tensor([[10.0]], dtype=torch.float64)


def test_with_lambda_one_each_token_gets_the_return_minus_its_value():
    adv, ret = token_gae(OUTCOME, VALUES, MASK, lam=1.0)
    assert adv.flatten().tolist() == pytest.approx([9.5, 0.0, 9.0, 8.0, 0.0], abs=EPS)
    assert ret.flatten().tolist() == pytest.approx([10.0, 0.0, 10.0, 10.0, 0.0], abs=EPS)


def test_with_lambda_zero_each_token_gets_its_one_step_td_error():
    adv, ret = token_gae(OUTCOME, VALUES, MASK, lam=0.0)
    # δ_k = r_k + V_{k+1} − V_k over the model's tokens (0.5, 1, 2), the next model token's value, not the env's 9
    assert adv.flatten().tolist() == pytest.approx([0.5, 0.0, 1.0, 8.0, 0.0], abs=EPS)
    assert ret.flatten().tolist() == pytest.approx([1.0, 0.0, 2.0, 10.0, 0.0], abs=EPS)


def test_the_kl_penalty_is_a_reward_on_each_model_token_and_ignored_on_the_environments():
    kl = _t([0.1, 7.0, 0.2, 0.3, 7.0])
    adv, _ = token_gae(OUTCOME, VALUES, MASK, kl, kl_coef=1.0, lam=1.0)
    # rewards −0.1, −0.2, 10 − 0.3; A_k = Σ_{j ≥ k} r_j − V_k
    assert adv.flatten().tolist() == pytest.approx([8.9, 0.0, 8.5, 7.7, 0.0], abs=EPS)
    assert torch.equal(
        token_gae(OUTCOME, VALUES, MASK, kl, kl_coef=0.0, lam=1.0)[0], token_gae(OUTCOME, VALUES, MASK, lam=1.0)[0]
    )


def _reference(outcome, values, mask, kl, beta, gamma, lam):
    """The formula of the docstring, one response at a time, with Python lists."""
    adv, ret = torch.zeros_like(values), torch.zeros_like(values)
    for b in range(values.shape[0]):
        for t in range(values.shape[1]):
            idx = [p for p in range(values.shape[2]) if mask[b, t, p] > 0]
            running = 0.0
            for j in reversed(range(len(idx))):
                p = idx[j]
                r = -beta * float(kl[b, t, p]) + (float(outcome[b, t]) if j == len(idx) - 1 else 0.0)
                v_next = float(values[b, t, idx[j + 1]]) if j + 1 < len(idx) else 0.0
                running = r + gamma * v_next - float(values[b, t, p]) + gamma * lam * running
                adv[b, t, p] = running
                ret[b, t, p] = running + float(values[b, t, p])
    return adv, ret


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_episodes_match_a_plain_loop(seed):
    gen = torch.Generator().manual_seed(seed)
    shape = (3, 4, 11)
    mask = (torch.rand(shape, generator=gen) < 0.6).double()
    mask[0, 0] = 0.0  # an episode with no model token: nothing to credit
    values, kl = torch.randn(shape, generator=gen, dtype=torch.float64), torch.rand(shape, generator=gen).double()
    outcome = torch.randn(shape[:2], generator=gen, dtype=torch.float64)
    adv, ret = token_gae(outcome, values, mask, kl, kl_coef=0.3, gamma=0.9, lam=0.8)
    ref_adv, ref_ret = _reference(outcome, values, mask, kl, 0.3, 0.9, 0.8)
    assert torch.allclose(adv, ref_adv, atol=EPS) and torch.allclose(ret, ref_ret, atol=EPS)
    assert not adv[mask == 0].any() and not ret[mask == 0].any()


def test_bad_shapes_and_knobs_are_refused():
    with pytest.raises(ValueError, match=r"outcome must be \[batch, trial\] and values \[batch, trial, pos\]"):
        token_gae(torch.zeros(1, 2), VALUES, MASK)
    with pytest.raises(ValueError, match=r"values, mask and kl must share one shape \[batch, trial, pos\]"):
        token_gae(OUTCOME, VALUES, MASK[..., :4])
    with pytest.raises(ValueError, match=r"kl_coef must be >= 0; got -1"):
        token_gae(OUTCOME, VALUES, MASK, VALUES, kl_coef=-1)
    with pytest.raises(ValueError, match=r"gamma and lam must be in \[0, 1\]"):
        token_gae(OUTCOME, VALUES, MASK, lam=1.5)

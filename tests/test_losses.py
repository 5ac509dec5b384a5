"""The losses (minirl.losses): every formula against numbers computed by hand on small tensors (the advantages:
test_advantages.py)."""

import math

import pytest
import torch
import torch.nn.functional as F

from minirl.losses import aggregate, bradley_terry_loss, compute_loss, dpo_loss, kl_estimate, policy_loss
from tests.tolerances import assert_close_f32


def t(x):
    return torch.tensor(x, dtype=torch.float32)


# ---- compute_loss (the ladder) ----------------------------------------------------------------


def test_naive_loss_value():
    lp = t([[[-1.0, -2.0], [-0.5, -0.5]]])  # [batch 1, trial 2, pos 2]
    d = t([[1.0, -2.0]])
    # -(mean of [-1, -2, 1, 1]) = -(-1/4) = 0.25
    assert compute_loss(lp, d, "naive").item() == pytest.approx(0.25)


def test_unclipped_and_clipped_values():
    old = t([[[0.0, 0.0]]]).log_softmax(-1)  # any numbers; only the difference matters
    lp = old + t([[[math.log(1.5), math.log(0.5)]]])  # ratios 1.5 and 0.5
    d = t([[2.0]])
    # unclipped: -mean(1.5*2, 0.5*2) = -2
    assert compute_loss(lp, d, "unclipped", old).item() == pytest.approx(-2.0)
    # clipped eps 0.2, A > 0: min(1.5*2, 1.2*2) = 2.4 and min(0.5*2, 0.8*2) = 1.0 -> -(3.4/2)
    assert compute_loss(lp, d, "clipped", old, epsilon=0.2).item() == pytest.approx(-1.7)
    # A < 0: min(-3, -2.4) = -3 and min(-1, -1.6) = -1.6 -> -(-4.6/2) = 2.3
    assert compute_loss(lp, -d, "clipped", old, epsilon=0.2).item() == pytest.approx(2.3)


def test_ratio_is_exp_of_log_difference_not_quotient():
    old = t([[[-2.0]]])
    lp = t([[[-1.0]]])
    # ratio = exp(-1 - (-2)) = e, not (-1)/(-2) = 0.5
    assert compute_loss(lp, t([[1.0]]), "unclipped", old).item() == pytest.approx(-math.e, rel=1e-6)


def test_clipped_gradient_zero_outside_range_and_at_boundary_side():
    old = torch.zeros(1, 1, 3)
    lp = torch.tensor([[[math.log(1.3), math.log(1.0), math.log(0.7)]]], requires_grad=True)
    compute_loss(lp, t([[1.0]]), "clipped", old, epsilon=0.2).backward()
    # A > 0: ratio 1.3 > 1.2 is clipped (no gradient); 1.0 and 0.7 keep the gradient ratio/3
    torch.testing.assert_close(lp.grad, t([[[0.0, -1.0 / 3, -0.7 / 3]]]))


def test_all_losses_share_the_gradient_at_theta_old():
    torch.manual_seed(0)
    base = torch.randn(2, 3, 4).log_softmax(-1)
    d = torch.randn(2, 3)
    grads = []
    for mode in ["naive", "unclipped", "clipped"]:
        lp = base.clone().requires_grad_(True)
        compute_loss(lp, d, mode, base.clone()).backward()
        grads.append(lp.grad)
    # at θ = θ_old each loss's gradient is Δ / N through another formula (ρ = exp(0) = 1): the same mean over
    # 2 x 3 x 4 tokens in another order (tests/tolerances.py)
    assert_close_f32(grads[1], grads[0], terms=24)
    assert_close_f32(grads[2], grads[0], terms=24)


def test_compute_loss_bad_input():
    lp = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match=r"deltas must have shape \[batch, trial\] = \[2, 3\].*got \[2, 3, 4\]"):
        compute_loss(lp, torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="needs old_log_probs"):
        compute_loss(lp, torch.zeros(2, 3), "clipped")
    with pytest.raises(ValueError, match=r"shape mismatch: log_probs \[2, 3, 4\], old_log_probs \[2, 3, 5\]"):
        compute_loss(lp, torch.zeros(2, 3), "clipped", torch.zeros(2, 3, 5))
    with pytest.raises(ValueError, match="mode must be one of"):
        compute_loss(lp, torch.zeros(2, 3), "ppo")


# ---- the naive loss is the REINFORCE estimator --------------------------------------------------


def test_naive_gradient_equals_reinforce_estimator():
    """∇ of −mean(logπ·Δ) equals −(1/N) Σ Δ_i ∇ log π(y_i), computed sample by sample."""
    from minirl.toy.model import TinyEncoderDecoder
    from minirl.toy.sampling import compute_log_probs, sample_responses

    g = torch.Generator().manual_seed(0)
    model = TinyEncoderDecoder(5, 8, 3, 3, generator=g)
    prompts = torch.randint(0, 5, (2, 3), generator=g)
    responses = sample_responses(model, prompts, 4, generator=g)
    deltas = torch.randn(2, 4, generator=g)
    loss = compute_loss(compute_log_probs(prompts, responses, model), deltas, "naive")
    auto = torch.autograd.grad(loss, list(model.parameters()))

    manual = [torch.zeros_like(p) for p in model.parameters()]
    n_terms = 2 * 4 * 3
    for b in range(2):
        for i in range(4):
            logp_y = compute_log_probs(prompts[b : b + 1], responses[b : b + 1, i : i + 1], model).sum()
            for acc, gr in zip(manual, torch.autograd.grad(logp_y, list(model.parameters()))):
                acc -= deltas[b, i] * gr / n_terms
    # the same sum, sample by sample instead of batched (tests/tolerances.py): each entry adds 2 x 4 x 3 token
    # terms and crosses, forward and backward, the model's width-8 dot products at 3 positions and its 5-token
    # softmax: ~100 terms (measured: 2.5 eps of the scale; allowed: 40)
    for a, m in zip(auto, manual):
        assert_close_f32(a, m, terms=100)


# ---- kl_estimate -----------------------------------------------------------------------------


def test_kl_estimators_hand_computed():
    lp = t([math.log(0.5), math.log(0.25)])
    ref = t([math.log(0.25), math.log(0.5)])
    # l = ref - lp = [-ln 2, +ln 2]
    ln2 = math.log(2)
    torch.testing.assert_close(kl_estimate(lp, ref, "k1"), t([ln2, -ln2]))
    torch.testing.assert_close(kl_estimate(lp, ref, "k2"), t([ln2**2 / 2, ln2**2 / 2]))
    torch.testing.assert_close(kl_estimate(lp, ref, "k3"), t([0.5 + ln2 - 1, 2 - ln2 - 1]))
    assert torch.equal(kl_estimate(lp, lp, "k3"), torch.zeros(2))


def test_kl_estimators_bias_against_exact_kl():
    """k1 and k3 are unbiased for KL(p‖q) under samples from p; k2 is not; k3 is never negative."""
    p = t([0.7, 0.2, 0.1])
    q = t([0.2, 0.3, 0.5])
    exact = float((p * (p / q).log()).sum())
    lp, lq = p.log(), q.log()
    expect = {k: float((p * kl_estimate(lp, lq, k)).sum()) for k in ["k1", "k2", "k3"]}
    # the same sum in float32 by another formula (tests/tolerances.py): 3 entries of ~3 terms each, the largest
    # k3's q/p = 5 (its rounding is relative to that, not to the KL of 0.63)
    assert_close_f32(expect["k1"], exact, terms=9, scale=5.0)
    assert_close_f32(expect["k3"], exact, terms=9, scale=5.0)
    assert abs(expect["k2"] - exact) > 0.05
    assert (kl_estimate(lp, lq, "k3") >= 0).all() and (kl_estimate(lp, lq, "k1") < 0).any()


def test_kl_clamp_keeps_it_finite():
    lp = t([-200.0])
    ref = t([0.0])
    assert torch.isinf(kl_estimate(lp, ref, "k3")).all()
    assert torch.isfinite(kl_estimate(lp, ref, "k3", max_log_ratio=20.0)).all()


# ---- aggregate -------------------------------------------------------------------------------

RAGGED = t([[[1.0, 2.0, 3.0, 100.0], [4.0, 100.0, 100.0, 100.0]]])  # [1, 2, 4]
RAGGED_MASK = t([[[1, 1, 1, 0], [1, 0, 0, 0]]])


def test_aggregations_with_a_ragged_mask():
    # sequence_mean: mean(mean(1,2,3)=2, mean(4)=4) = 3
    assert aggregate(RAGGED, RAGGED_MASK, "sequence_mean").item() == pytest.approx(3.0)
    # token_mean: (1+2+3+4)/4 = 2.5
    assert aggregate(RAGGED, RAGGED_MASK, "token_mean").item() == pytest.approx(2.5)
    # constant: 10 / (2 sequences * 4) = 1.25; with max_length 5: 10/10 = 1
    assert aggregate(RAGGED, RAGGED_MASK, "constant").item() == pytest.approx(1.25)
    assert aggregate(RAGGED, RAGGED_MASK, "constant", max_length=5).item() == pytest.approx(1.0)


def test_aggregate_empty_rows_stay_finite():
    mask = t([[[1, 1, 0, 0], [0, 0, 0, 0]]])
    for agg in ["sequence_mean", "token_mean", "constant"]:
        assert math.isfinite(aggregate(RAGGED, mask, agg).item())
    assert aggregate(RAGGED, mask, "sequence_mean").item() == pytest.approx(1.5 / 2)  # empty row counts 0
    assert aggregate(RAGGED, torch.zeros_like(mask), "token_mean").item() == 0.0


# ---- policy_loss -----------------------------------------------------------------------------


def test_policy_loss_equals_compute_loss_clipped_when_unmasked():
    torch.manual_seed(1)
    old = torch.randn(3, 4, 5)
    lp = old + 0.3 * torch.randn(3, 4, 5)
    adv = torch.randn(3, 4)
    ours, _ = policy_loss(lp, old, adv, clip_eps_low=0.2, aggregation="token_mean")
    theirs = compute_loss(lp, adv, "clipped", old, epsilon=0.2)
    # the same mean of 60 per-token terms ρ·A in another order (tests/tolerances.py): relative to their size,
    # not to the mean, which cancels
    scale = (torch.exp(lp - old) * adv[..., None]).abs().max()
    assert_close_f32(ours, theirs, terms=60, scale=scale)
    # and sequence_mean equals token_mean when every sequence has the same length
    seq, _ = policy_loss(lp, old, adv, clip_eps_low=0.2, aggregation="sequence_mean")
    assert_close_f32(seq, theirs, terms=60, scale=scale)


def test_asymmetric_clip_higher():
    old = torch.zeros(1, 1, 2)
    lp = torch.log(t([[[1.25, 0.75]]]))
    pos = t([[1.0]])
    # A>0, eps_low 0.2, eps_high 0.28: 1.25 < 1.28 not clipped; 0.75 -> min(0.75, 0.8) = 0.75
    loss, m = policy_loss(lp, old, pos, clip_eps_low=0.2, clip_eps_high=0.28, aggregation="token_mean")
    assert loss.item() == pytest.approx(-(1.25 + 0.75) / 2)
    assert m["clip_frac_high"] == 0.0
    # symmetric 0.2: 1.25 clipped to 1.2
    loss, m = policy_loss(lp, old, pos, clip_eps_low=0.2, aggregation="token_mean")
    assert loss.item() == pytest.approx(-(1.2 + 0.75) / 2)
    assert m["clip_frac_high"] == pytest.approx(0.5) and m["clip_frac_low"] == 0.0
    # A<0: 0.75 < 0.8 -> low clip active: min(-0.75, -0.8) = -0.8; 1.25 -> min(-1.25, -1.2) = -1.25
    loss, m = policy_loss(lp, old, -pos, clip_eps_low=0.2, clip_eps_high=0.28, aggregation="token_mean")
    assert loss.item() == pytest.approx((0.8 + 1.25) / 2)
    assert m["clip_frac_low"] == pytest.approx(0.5) and m["clip_frac_high"] == 0.0


def test_ratio_exactly_at_the_clip_boundary_keeps_its_gradient():
    old = torch.zeros(1, 1, 1)
    lp = torch.log(t([[[1.2]]])).requires_grad_(True)
    loss, m = policy_loss(lp, old, t([[1.0]]), clip_eps_low=0.2)
    loss.backward()
    assert loss.item() == pytest.approx(-1.2)
    assert m["clip_frac_high"] == 0.0  # 1.2 > 1.2 is false: at the boundary, not beyond it
    assert lp.grad.item() == pytest.approx(-1.2, rel=1e-5)


def test_sequence_level_ratio_gspo():
    old = torch.zeros(1, 1, 3)
    lp = t([[[0.3, -0.1, 5.0]]])
    mask = t([[[1, 1, 0]]])
    # sequence log-ratio = mean of the real tokens = (0.3 - 0.1)/2 = 0.1 -> ratio e^0.1 ≈ 1.105
    loss, m = policy_loss(lp, old, t([[2.0]]), mask, clip_eps_low=0.2, ratio_level="sequence")
    assert loss.item() == pytest.approx(-2 * math.exp(0.1), rel=1e-6)
    assert m["ratio_mean"] == pytest.approx(math.exp(0.1), rel=1e-6)
    # with a tight clip the sequence ratio is clipped as a whole
    loss, m = policy_loss(lp, old, t([[2.0]]), mask, clip_eps_low=0.05, ratio_level="sequence")
    assert loss.item() == pytest.approx(-2 * 1.05, rel=1e-6)
    assert m["clip_frac_high"] == pytest.approx(1.0)


def test_kl_term_is_added_per_token_before_aggregation():
    lp = torch.log(t([[[0.5, 0.25], [0.5, 0.5]]]))
    ref = torch.log(t([[[0.25, 0.5], [0.5, 0.5]]]))
    mask = t([[[1, 1], [1, 0]]])
    k3 = kl_estimate(lp, ref, "k3")
    loss, m = policy_loss(lp, lp.detach(), torch.zeros(1, 2), mask, ref_log_probs=ref, kl_coef=0.5)
    # advantages 0: the loss is 0.5 * sequence_mean(k3): mean(mean(k3[0,0,:2]), k3[0,1,0] = 0)
    expected = 0.5 * (k3[0, 0].mean().item() + 0.0) / 2
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert m["kl"] == pytest.approx(k3[0, 0].sum().item() / 3, rel=1e-6)


def test_per_token_advantages():
    old = torch.zeros(1, 1, 2)
    lp = torch.zeros(1, 1, 2)
    loss, _ = policy_loss(lp, old, t([[[1.0, 3.0]]]), aggregation="token_mean")
    assert loss.item() == pytest.approx(-2.0)


def test_policy_loss_with_old_none_is_reinforce():
    torch.manual_seed(0)
    lp = torch.randn(2, 3, 4).requires_grad_(True)
    adv = torch.randn(2, 3)
    loss, _ = policy_loss(lp, None, adv, clip_eps_low=None, aggregation="token_mean")
    loss.backward()
    torch.testing.assert_close(lp.grad, -(adv[..., None].expand(2, 3, 4)) / 24)


def test_empty_mask_rows_give_finite_loss_and_grad():
    lp = torch.randn(2, 2, 3, generator=torch.Generator().manual_seed(0), requires_grad=True)
    mask = torch.zeros(2, 2, 3)
    mask[0, 0, 0] = 1
    for agg in ["sequence_mean", "token_mean", "constant"]:
        for level in ["token", "sequence"]:
            loss, m = policy_loss(
                lp,
                lp.detach() - 0.1,
                torch.ones(2, 2),
                mask,
                aggregation=agg,
                ratio_level=level,
                ref_log_probs=lp.detach(),
                kl_coef=0.1,
            )
            (g,) = torch.autograd.grad(loss, lp)
            assert math.isfinite(loss.item()) and torch.isfinite(g).all()
            assert all(math.isfinite(v) for v in m.values())


def test_policy_loss_bad_input_names_both_shapes():
    lp = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match=r"log_probs \[2, 3, 4\], old_log_probs \[2, 4, 3\]"):
        policy_loss(lp, torch.zeros(2, 4, 3), torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"advantages must have shape \[batch, trial\] = \[2, 3\].*got \[3, 2\]"):
        policy_loss(lp, lp, torch.zeros(3, 2))
    with pytest.raises(ValueError, match=r"mask \[2, 3\], log_probs \[2, 3, 4\]"):
        policy_loss(lp, lp, torch.zeros(2, 3), torch.ones(2, 3))
    with pytest.raises(TypeError, match="float tensors"):
        policy_loss(lp, lp.long(), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="kl_coef = 0.1 needs ref_log_probs"):
        policy_loss(lp, lp, torch.zeros(2, 3), kl_coef=0.1)
    with pytest.raises(ValueError, match="aggregation must be one of"):
        policy_loss(lp, lp, torch.zeros(2, 3), aggregation="mean")
    with pytest.raises(ValueError, match="ratio_level must be"):
        policy_loss(lp, lp, torch.zeros(2, 3), ratio_level="seq")


# ---- the preference losses: bradley_terry_loss, dpo_loss ----------------------------------------

LOG2 = math.log(2.0)


def softplus(x: float) -> float:
    return math.log1p(math.exp(x))


def test_bt_margin_zero_is_log_2():
    r = torch.tensor([0.3, -1.2, 5.0])
    assert bradley_terry_loss(r, r.clone()).item() == pytest.approx(LOG2, abs=1e-6)


def test_bt_hand_value():
    # margins 2, 0, −1, −0.5: mean of softplus(−margin)
    got = bradley_terry_loss(torch.tensor([1.0, 0.5, -1.0, 2.0]), torch.tensor([-1.0, 0.5, 0.0, 2.5]))
    want = (softplus(-2) + LOG2 + softplus(1) + softplus(0.5)) / 4
    assert got.item() == pytest.approx(want, abs=1e-6)
    assert want == pytest.approx(0.7768534658)


@pytest.mark.parametrize("margin, want", [(1000.0, 0.0), (-1000.0, 1000.0), (200.0, 0.0), (-200.0, 200.0)])
def test_bt_large_margins_are_finite(margin, want):
    got = bradley_terry_loss(torch.tensor([margin / 2]), torch.tensor([-margin / 2]))
    assert math.isfinite(got.item())
    # softplus of a margin of size |margin| in float32: a few roundings at that size (tests/tolerances.py)
    assert_close_f32(got.item(), want, terms=4, scale=abs(margin))


def test_bt_depends_only_on_the_difference():
    gen = torch.Generator().manual_seed(0)
    rc, rr = torch.randn(7, generator=gen), torch.randn(7, generator=gen)
    # adding 3 rounds each reward at the size of |r| + 3 (tests/tolerances.py): 2 roundings per margin, a mean of 7
    scale = max(rc.abs().max(), rr.abs().max()) + 3.0
    assert_close_f32(bradley_terry_loss(rc + 3.0, rr + 3.0), bradley_terry_loss(rc, rr), terms=2 + 7, scale=scale)


def test_bt_gradient_raises_chosen_and_lowers_rejected():
    rc = torch.tensor([0.0, 1.0, -2.0], requires_grad=True)
    rr = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    bradley_terry_loss(rc, rr).backward()
    # dL/dr_c = −σ(−m)/N, dL/dr_r = +σ(−m)/N; at m = 0: ∓0.5/3
    want = -torch.sigmoid(-(rc - rr).detach()) / 3
    torch.testing.assert_close(rc.grad, want)
    torch.testing.assert_close(rr.grad, -want)
    assert (rc.grad < 0).all() and (rr.grad > 0).all()  # gradient descent raises r_chosen, lowers r_rejected
    assert rc.grad[0].item() == pytest.approx(-0.5 / 3)


def test_bt_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"r_rejected must have shape \[batch\]"):
        bradley_terry_loss(torch.zeros(3), torch.zeros(3, 1))
    with pytest.raises(ValueError, match=r"shape mismatch: r_chosen \[3\], r_rejected \[2\]"):
        bradley_terry_loss(torch.zeros(3), torch.zeros(2))
    with pytest.raises(TypeError, match="r_chosen must be a float tensor"):
        bradley_terry_loss(torch.zeros(3, dtype=torch.long), torch.zeros(3))


# ---- dpo_loss ---------------------------------------------------------------------------------------

PC, PR, RC, RR = (torch.tensor(x) for x in ([-5.0, -8.0], [-7.0, -6.0], [-6.0, -8.0], [-6.0, -7.0]))


@pytest.mark.parametrize(
    "beta, want_loss, want_chosen, want_rejected",
    [
        # log-ratios chosen [1, 0], rejected [−1, 1]; margins β·[2, −1]
        (0.5, (softplus(-1.0) + softplus(0.5)) / 2, [0.5, 0.0], [-0.5, 0.5]),
        (0.1, (softplus(-0.2) + softplus(0.1)) / 2, [0.1, 0.0], [-0.1, 0.1]),
    ],
)
def test_dpo_hand_numbers(beta, want_loss, want_chosen, want_rejected):
    loss, chosen, rejected = dpo_loss(PC, PR, RC, RR, beta)
    assert loss.item() == pytest.approx(want_loss, abs=1e-6)
    torch.testing.assert_close(chosen, torch.tensor(want_chosen))
    torch.testing.assert_close(rejected, torch.tensor(want_rejected))
    torch.testing.assert_close(chosen - rejected, beta * torch.tensor([2.0, -1.0]))  # the margins
    assert {0.5: 0.6436693358, 0.1: 0.6712677647}[beta] == pytest.approx(want_loss)


def test_dpo_is_bradley_terry_on_the_implicit_rewards():
    gen = torch.Generator().manual_seed(1)
    pc, pr, rc, rr = (-10 * torch.rand(8, generator=gen) for _ in range(4))
    for beta in (0.05, 0.1, 1.0):
        loss, chosen, rejected = dpo_loss(pc, pr, rc, rr, beta)
        torch.testing.assert_close(chosen, beta * (pc - rc))
        torch.testing.assert_close(rejected, beta * (pr - rr))
        torch.testing.assert_close(loss, bradley_terry_loss(chosen, rejected))


def test_dpo_at_the_reference_is_log_2_and_default_beta():
    pc, pr = torch.tensor([-3.0, -9.0]), torch.tensor([-4.0, -1.0])
    loss, chosen, rejected = dpo_loss(pc, pr, pc.clone(), pr.clone())  # π_θ = π_ref
    assert loss.item() == pytest.approx(LOG2)
    assert chosen.abs().max() == 0 and rejected.abs().max() == 0
    loss, chosen, _ = dpo_loss(PC, PR, RC, RR)
    torch.testing.assert_close(chosen, torch.tensor([0.1, 0.0]))  # beta = 0.1 by default, as in TRL


def test_dpo_gradient_and_detached_rewards():
    pc, pr = PC.clone().requires_grad_(True), PR.clone().requires_grad_(True)
    rc, rr = RC.clone().requires_grad_(True), RR.clone().requires_grad_(True)
    loss, chosen, rejected = dpo_loss(pc, pr, rc, rr, 0.5)
    assert not chosen.requires_grad and not rejected.requires_grad
    loss.backward()
    # dL/d log π(y_w) = −β σ(−margin) / N, margins [1, −0.5]
    want = -0.5 * torch.sigmoid(-torch.tensor([1.0, -0.5])) / 2
    torch.testing.assert_close(pc.grad, want)
    torch.testing.assert_close(pr.grad, -want)
    assert rc.grad is None and rr.grad is None  # the reference is frozen


def test_dpo_large_margins_are_finite():
    loss, _, _ = dpo_loss(
        torch.tensor([-400.0]), torch.tensor([-5.0]), torch.tensor([-10.0]), torch.tensor([-6.0]), 0.5
    )
    assert loss.item() == pytest.approx(195.5)


def test_dpo_errors():
    with pytest.raises(ValueError, match="beta must be > 0"):
        dpo_loss(PC, PR, RC, RR, 0.0)
    with pytest.raises(ValueError, match=r"ref_rejected_logps must have shape \[batch\]"):
        dpo_loss(PC, PR, RC, RR.unsqueeze(0))
    with pytest.raises(ValueError, match="shape mismatch"):
        dpo_loss(PC, PR, RC, RR[:1])


def test_bt_loss_equals_logsigmoid_form():
    r = torch.randn(2, 5, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(bradley_terry_loss(r[0], r[1]), F.softplus(r[1] - r[0]).mean())

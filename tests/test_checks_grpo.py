"""The checks of notebook 05 catch the plausible wrong implementations, each with a message that names it."""

from __future__ import annotations

import pytest
import torch
from check_helpers import caught, run

import minirl
from minirl.checks import (
    check_clipped_policy_loss,
    check_group_advantages,
    check_kl_estimate,
    check_masked_aggregate,
    reference_clipped_policy_loss,
    reference_group_advantages,
)
from minirl.checks import grpo as grpo_checks

# ---- group_advantages ----------------------------------------------------------------------------


def adv_with(center, scale, eps_used=None):
    """A group_advantages built from a centring and a scaling rule (scale None = no eps at all)."""
    def group_advantages(rewards, normalize=True, eps=1e-6):
        centered = center(rewards)
        if not normalize:
            return centered
        e = eps if eps_used is None else eps_used
        return centered / scale(rewards) if e == "none" else centered / (scale(rewards) + e)
    return group_advantages


MEAN = lambda r: r - r.mean(dim=1, keepdim=True)  # noqa: E731
STD = lambda r: r.std(dim=1, keepdim=True)  # noqa: E731


def adv_always_normalised(rewards, normalize=True, eps=1e-6):
    return reference_group_advantages(rewards, True, eps)


def adv_never_normalised(rewards, normalize=True, eps=1e-6):
    return reference_group_advantages(rewards, False, eps)


def adv_in_place(rewards, normalize=True, eps=1e-6):
    rewards -= rewards.mean(dim=1, keepdim=True)
    return rewards / (rewards.std(dim=1, keepdim=True) + eps) if normalize else rewards


@pytest.mark.parametrize("wrong, keywords", [
    (adv_with(MEAN, lambda r: r.std(dim=0, keepdim=True)), ["std over the wrong axis"]),
    (adv_with(lambda r: r - r.mean(dim=0, keepdim=True), STD), ["mean over the batch (dim=0)"]),
    (adv_with(lambda r: r - r.mean(), STD), ["mean of the whole batch"]),
    (adv_with(MEAN, lambda r: r.std()), ["std of the whole batch"]),
    (adv_with(MEAN, STD, eps_used="none"), ["all equal must give zeros", "std + eps"]),
    (adv_with(MEAN, lambda r: r.std(dim=1, keepdim=True, unbiased=False)), ["population std", "unbiased"]),
    (adv_with(MEAN, lambda r: r.var(dim=1, keepdim=True)), ["variance"]),
    (adv_with(MEAN, STD, eps_used=1e-6), ["ignores the eps argument"]),
    (adv_never_normalised, ["normalize=True", "centred rewards"]),
    (adv_always_normalised, ["normalize=False", "NOT divide by the std"]),
    (adv_in_place, ["in place"]),
], ids=["std-batch", "mean-batch", "mean-global", "std-global", "no-eps", "population-std", "variance",
        "eps-ignored", "never-normalised", "always-normalised", "in-place"])
def test_group_advantages_mistakes(wrong, keywords, capsys):
    caught(check_group_advantages, wrong, capsys, *keywords)


def test_group_advantages_other_small_eps_accepted(capsys):
    ok, _ = run(check_group_advantages, lambda r, normalize=True, eps=1e-6: minirl.compute_deltas(
        r, "normalized_rewards" if normalize else "centered_rewards", eps), capsys)
    assert ok


def test_group_advantage_constants_match_the_reference():
    r = torch.tensor(grpo_checks.ADV_REWARDS)
    torch.testing.assert_close(reference_group_advantages(r, True), torch.tensor(grpo_checks.ADV_NORMALIZED))
    torch.testing.assert_close(reference_group_advantages(r, False), torch.tensor(grpo_checks.ADV_CENTERED))


# ---- kl_estimate -----------------------------------------------------------------------------------


def kl_with(**overrides):
    """minirl.kl_estimate with one estimator replaced by a wrong formula of ℓ = ref − lp."""
    def kl_estimate(log_probs, ref_log_probs, estimator):
        if estimator in overrides:
            return overrides[estimator](ref_log_probs - log_probs)
        return minirl.kl_estimate(log_probs, ref_log_probs, estimator)
    return kl_estimate


def kl_mean(log_probs, ref_log_probs, estimator):
    return minirl.kl_estimate(log_probs, ref_log_probs, estimator).mean()


def kl_detached(log_probs, ref_log_probs, estimator):
    return minirl.kl_estimate(log_probs.detach(), ref_log_probs, estimator)


@pytest.mark.parametrize("wrong, keywords", [
    (kl_with(k3=lambda ell: (-ell).exp() + ell - 1), ["k3", "wrong way round"]),
    (kl_with(k2=lambda ell: ell**2), ["k2", "forgot the 1/2"]),
    (kl_with(k3=lambda ell: ell.exp() - ell), ["k3", "forgot the −1"]),
    (kl_with(k3=lambda ell: ell.exp() - 1), ["k3", "−ℓ term"]),
    (kl_with(k1=lambda ell: ell), ["k1", "wrong sign"]),
    (kl_with(k1=lambda ell: ell.abs()), ["k1", "can be negative"]),
    (kl_with(k3=lambda ell: 0.5 * ell**2), ["this is k2"]),
    (kl_mean, ["one estimate per token", "do not average"]),
    (kl_detached, ["no gradient"]),
], ids=["k3-reversed", "k2-no-half", "k3-no-minus-one", "k3-no-ell", "k1-sign", "k1-abs", "k3-is-k2", "mean",
        "detached"])
def test_kl_estimate_mistakes(wrong, keywords, capsys):
    caught(check_kl_estimate, wrong, capsys, *keywords)


def test_kl_constants_match_the_reference():
    lp, ref = torch.tensor(grpo_checks.KL_LOG_PROBS), torch.tensor(grpo_checks.KL_REF_LOG_PROBS)
    for estimator, values in grpo_checks.KL_EXPECTED.items():
        torch.testing.assert_close(minirl.kl_estimate(lp, ref, estimator), torch.tensor(values))


# ---- masked_aggregate ------------------------------------------------------------------------------


def agg_with(**overrides):
    """minirl.aggregate with one aggregation replaced by a wrong formula f(x, m, max_length)."""
    def masked_aggregate(per_token, mask, aggregation, max_length=None):
        if aggregation in overrides:
            return overrides[aggregation](per_token, mask, max_length)
        return minirl.aggregate(per_token, mask, aggregation, max_length)
    return masked_aggregate


def agg_no_mask(per_token, mask, aggregation, max_length=None):
    return minirl.aggregate(per_token, torch.ones_like(mask), aggregation, max_length)


def seq_mean_no_clamp(x, m, max_length):
    return ((x * m).sum(-1) / m.sum(-1)).mean()


@pytest.mark.parametrize("wrong, keywords", [
    (agg_no_mask, ["ignored the mask"]),
    (agg_with(sequence_mean=lambda x, m, L: ((x * m).sum(-1) / x.shape[-1]).mean()), ["full length", "REAL length"]),
    (agg_with(sequence_mean=lambda x, m, L: (x * m).sum() / m.sum()), ["this is token_mean"]),
    (agg_with(token_mean=lambda x, m, L: minirl.aggregate(x, m, "sequence_mean")), ["averaged per response first"]),
    (agg_with(token_mean=lambda x, m, L: (x * m).sum() / x.numel()), ["number of REAL tokens"]),
    (agg_with(constant=lambda x, m, L: minirl.aggregate(x, m, "sequence_mean")), ["must not use the real lengths"]),
    (agg_with(constant=lambda x, m, L: minirl.aggregate(x, m, "token_mean")), ["not by the number of real tokens"]),
    (agg_with(constant=lambda x, m, L: minirl.aggregate(x, m, "constant")), ["ignored max_length"]),
    (agg_with(constant=lambda x, m, L: (x * m).sum() / (x.shape[0] * x.shape[1] * (L or m.sum(-1).max()))),
     ["longest REAL response", "position axis"]),
    (agg_with(sequence_mean=seq_mean_no_clamp), ["not NaN", "clamp"]),
    (agg_with(sequence_mean=lambda x, m, L: ((x * m).sum(-1) / m.sum(-1).clamp(min=1)).mean().item()),
     ["torch.Tensor"]),
], ids=["no-mask", "seq-full-length", "seq-is-token", "token-per-seq", "token-all-positions", "const-real-length",
        "const-real-tokens", "const-no-max-length", "const-longest-real", "empty-row-nan", "item"])
def test_masked_aggregate_mistakes(wrong, keywords, capsys):
    caught(check_masked_aggregate, wrong, capsys, *keywords)


def test_aggregate_constants_match_the_reference():
    x, m = torch.tensor(grpo_checks.AGG_PER_TOKEN), torch.tensor(grpo_checks.AGG_MASK)
    for (aggregation, max_length), value in grpo_checks.AGG_EXPECTED.items():
        assert minirl.aggregate(x, m, aggregation, max_length).item() == pytest.approx(value)
    short = minirl.aggregate(torch.tensor(grpo_checks.AGG_SHORT_PER_TOKEN), torch.tensor(grpo_checks.AGG_SHORT_MASK),
                             "constant")
    assert short.item() == pytest.approx(grpo_checks.AGG_SHORT_CONSTANT)


# ---- clipped_policy_loss ---------------------------------------------------------------------------


def loss_with(**knobs):
    def clipped_policy_loss(log_probs, old_log_probs, advantages, mask, clip_eps_low, clip_eps_high, ratio_level):
        return grpo_checks._loss_variant(log_probs, old_log_probs, advantages, mask, clip_eps_low, clip_eps_high,
                                         ratio_level, **knobs)
    return clipped_policy_loss


def loss_token_only(log_probs, old_log_probs, advantages, mask, clip_eps_low, clip_eps_high, ratio_level):
    return reference_clipped_policy_loss(log_probs, old_log_probs, advantages, mask, clip_eps_low, clip_eps_high)


def loss_detached(log_probs, old_log_probs, advantages, mask, clip_eps_low, clip_eps_high, ratio_level):
    return reference_clipped_policy_loss(log_probs.detach(), old_log_probs, advantages, mask, clip_eps_low,
                                         clip_eps_high, ratio_level)


def loss_per_token(log_probs, old_log_probs, advantages, mask, clip_eps_low, clip_eps_high, ratio_level):
    ratio = (log_probs - old_log_probs).exp()
    return -(ratio * advantages[..., None])


@pytest.mark.parametrize("wrong, keywords", [
    (loss_with(clip="symmetric"), ["symmetric", "clip_eps_high"]),
    (loss_with(clip="high_both"), ["lower bound", "clip_eps_low"]),
    (loss_with(seq_ratio="product"), ["product", "normalises by length"]),
    (loss_with(seq_ratio="mean_ratio"), ["averaged the token ratios", "MEAN LOG-ratio"]),
    (loss_with(mask_in_ratio=False), ["REAL tokens only"]),
    (loss_with(combine="max"), ["use min, not max"]),
    (loss_with(sign=1.0), ["wrong sign"]),
    (loss_with(mask_in_agg=False), ["padding counted"]),
    (loss_token_only, ["ratio_level='sequence' was ignored"]),
    (loss_detached, ["no gradient"]),
    (loss_per_token, ["single number"]),
], ids=["symmetric", "low-from-high", "product", "mean-of-ratios", "unmasked-seq-ratio", "max", "sign",
        "unmasked-average", "token-only", "detached", "per-token"])
def test_clipped_policy_loss_mistakes(wrong, keywords, capsys):
    caught(check_clipped_policy_loss, wrong, capsys, *keywords)


def test_loss_variant_with_default_knobs_is_the_reference():
    lp, old, adv, mask = grpo_checks._loss_inputs(5, batch=2, trial=3, pos=4, spread=0.3)
    for level in ("token", "sequence"):
        torch.testing.assert_close(grpo_checks._loss_variant(lp, old, adv, mask, 0.2, 0.28, level),
                                   reference_clipped_policy_loss(lp, old, adv, mask, 0.2, 0.28, level))


# ---- k1/k3 swapped, the wrong axis (issue 11) ---------------------------------------------------------

def kl_swapped(a, b):
    def kl_estimate(log_probs, ref_log_probs, estimator):
        return minirl.kl_estimate(log_probs, ref_log_probs, {a: b, b: a}.get(estimator, estimator))
    return kl_estimate


@pytest.mark.parametrize("a, b, keywords", [
    ("k1", "k3", ["k1 estimate", "this is k3"]),
    ("k1", "k2", ["k1 estimate", "this is k2"]),
    ("k2", "k3", ["k2 estimate", "this is k3"]),
])
def test_kl_estimators_swapped(a, b, keywords, capsys):
    caught(check_kl_estimate, kl_swapped(a, b), capsys, *keywords)


def aggregate_over_trial(per_token, mask, aggregation, max_length=None):
    if aggregation == "sequence_mean":
        masked = per_token * mask
        return (masked.sum(1) / mask.sum(1).clamp(min=1)).mean()
    return minirl.aggregate(per_token, mask, aggregation, max_length)


def test_aggregate_over_the_wrong_axis(capsys):
    caught(check_masked_aggregate, aggregate_over_trial, capsys, "sequence_mean", "wrong axis", "dim=-1")


def test_aggregate_dividing_by_a_reduced_mask_gets_a_hint(capsys):
    def masked_aggregate(per_token, mask, aggregation, max_length=None):
        return ((per_token * mask) / mask.sum(-1).clamp(min=1)).sum(-1).mean()  # PyTorch: sizes must match

    caught(check_masked_aggregate, masked_aggregate, capsys, "raised RuntimeError", "size of tensor",
           "mask.sum(-1) is [batch, trial]")

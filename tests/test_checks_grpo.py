"""The checks of notebook 05 catch the plausible wrong implementations, each with a message that names it."""

from __future__ import annotations

import pytest
import torch
from check_helpers import caught, float32_approx

import minirl
from minirl.checks import (
    check_aggregate,
    check_kl_estimate,
    check_policy_loss,
    check_sequence_ratio,
    reference_sequence_ratio,
)
from minirl.checks import nb05_grpo as grpo_checks

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


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (kl_with(k3=lambda ell: (-ell).exp() + ell - 1), ["k3", "wrong way round"]),
        (kl_with(k2=lambda ell: ell**2), ["k2", "forgot the 1/2"]),
        (kl_with(k3=lambda ell: ell.exp() - ell), ["k3", "forgot the −1"]),
        (kl_with(k3=lambda ell: ell.exp() - 1), ["k3", "−ℓ term"]),
        (kl_with(k1=lambda ell: ell), ["k1", "wrong sign"]),
        (kl_with(k1=lambda ell: ell.abs()), ["k1", "can be negative"]),
        (kl_with(k3=lambda ell: 0.5 * ell**2), ["this is k2"]),
        (kl_mean, ["one estimate per token", "do not average"]),
        (kl_detached, ["no gradient"]),
    ],
    ids=[
        "k3-reversed",
        "k2-no-half",
        "k3-no-minus-one",
        "k3-no-ell",
        "k1-sign",
        "k1-abs",
        "k3-is-k2",
        "mean",
        "detached",
    ],
)
def test_kl_estimate_mistakes(wrong, keywords, capsys):
    caught(check_kl_estimate, wrong, capsys, *keywords)


def test_kl_constants_match_the_reference():
    lp, ref = torch.tensor(grpo_checks.KL_LOG_PROBS), torch.tensor(grpo_checks.KL_REF_LOG_PROBS)
    for estimator, values in grpo_checks.KL_EXPECTED.items():
        torch.testing.assert_close(minirl.kl_estimate(lp, ref, estimator), torch.tensor(values))


# ---- aggregate -----------------------------------------------------------------------------------


def agg_with(**overrides):
    """minirl.aggregate with one aggregation replaced by a wrong formula f(x, m, max_length)."""

    def aggregate(per_token, mask, aggregation="sequence_mean", max_length=None):
        if aggregation in overrides:
            return overrides[aggregation](per_token, mask, max_length)
        return minirl.aggregate(per_token, mask, aggregation, max_length)

    return aggregate


def agg_no_mask(per_token, mask, aggregation, max_length=None):
    return minirl.aggregate(per_token, torch.ones_like(mask), aggregation, max_length)


def seq_mean_no_clamp(x, m, max_length):
    return ((x * m).sum(-1) / m.sum(-1)).mean()


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (agg_no_mask, ["ignored the mask"]),
        (
            agg_with(sequence_mean=lambda x, m, L: ((x * m).sum(-1) / x.shape[-1]).mean()),
            ["full length", "REAL length"],
        ),
        (agg_with(sequence_mean=lambda x, m, L: (x * m).sum() / m.sum()), ["this is token_mean"]),
        (agg_with(token_mean=lambda x, m, L: minirl.aggregate(x, m, "sequence_mean")), ["averaged per response first"]),
        (agg_with(token_mean=lambda x, m, L: (x * m).sum() / x.numel()), ["number of REAL tokens"]),
        (agg_with(constant=lambda x, m, L: minirl.aggregate(x, m, "sequence_mean")), ["must not use the real lengths"]),
        (agg_with(constant=lambda x, m, L: minirl.aggregate(x, m, "token_mean")), ["not by the number of real tokens"]),
        (agg_with(constant=lambda x, m, L: minirl.aggregate(x, m, "constant")), ["ignored max_length"]),
        (
            agg_with(constant=lambda x, m, L: (x * m).sum() / (x.shape[0] * x.shape[1] * (L or m.sum(-1).max()))),
            ["longest REAL response", "position axis"],
        ),
        (agg_with(sequence_mean=seq_mean_no_clamp), ["not NaN", "clamp"]),
        (
            agg_with(sequence_mean=lambda x, m, L: ((x * m).sum(-1) / m.sum(-1).clamp(min=1)).mean().item()),
            ["torch.Tensor"],
        ),
    ],
    ids=[
        "no-mask",
        "seq-full-length",
        "seq-is-token",
        "token-per-seq",
        "token-all-positions",
        "const-real-length",
        "const-real-tokens",
        "const-no-max-length",
        "const-longest-real",
        "empty-row-nan",
        "item",
    ],
)
def test_aggregate_mistakes(wrong, keywords, capsys):
    caught(check_aggregate, wrong, capsys, *keywords)


def test_aggregate_constants_match_the_reference():
    x, m = torch.tensor(grpo_checks.AGG_PER_TOKEN), torch.tensor(grpo_checks.AGG_MASK)
    for (aggregation, max_length), value in grpo_checks.AGG_EXPECTED.items():
        assert minirl.aggregate(x, m, aggregation, max_length).item() == float32_approx(value)
    short = minirl.aggregate(
        torch.tensor(grpo_checks.AGG_SHORT_PER_TOKEN), torch.tensor(grpo_checks.AGG_SHORT_MASK), "constant"
    )
    assert short.item() == float32_approx(grpo_checks.AGG_SHORT_CONSTANT)


# ---- sequence_ratio ------------------------------------------------------------------------------


def seq_ratio_with(transform):
    """A sequence_ratio built from the masked log-ratio [batch, trial, pos] and the mask."""

    def sequence_ratio(log_probs, old_log_probs, mask):
        return transform((log_probs - old_log_probs) * mask, mask, log_probs - old_log_probs)

    return sequence_ratio


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (
            seq_ratio_with(lambda lr, m, raw: lr.sum(-1).exp()),
            ["product of the token ratios", "normalises by the length"],
        ),
        (
            seq_ratio_with(lambda lr, m, raw: (raw.exp() * m).sum(-1) / m.sum(-1).clamp(min=1)),
            ["averaged the token ratios", "MEAN LOG-ratio"],
        ),
        (seq_ratio_with(lambda lr, m, raw: raw.mean(-1).exp()), ["padding counted", "REAL tokens"]),
        (seq_ratio_with(lambda lr, m, raw: (lr.sum(-1) / lr.shape[-1]).exp()), ["all positions", "real length"]),
        (seq_ratio_with(lambda lr, m, raw: lr.sum(-1) / m.sum(-1).clamp(min=1)), ["take its exp"]),
        (seq_ratio_with(lambda lr, m, raw: (-lr.sum(-1) / m.sum(-1).clamp(min=1)).exp()), ["upside down"]),
        (seq_ratio_with(lambda lr, m, raw: (lr.sum(-1) / m.sum(-1)).exp()), ["non-finite", "clamp"]),
        (
            seq_ratio_with(lambda lr, m, raw: (lr.sum(-1, keepdim=True) / m.sum(-1, keepdim=True).clamp(min=1)).exp()),
            ["[batch, trial]", "squeeze"],
        ),
        (seq_ratio_with(lambda lr, m, raw: (lr.sum(-1) / m.sum(-1).clamp(min=1)).exp().detach()), ["no gradient"]),
    ],
    ids=[
        "product",
        "mean-of-ratios",
        "padding",
        "all-positions",
        "no-exp",
        "upside-down",
        "nan",
        "keepdim",
        "detached",
    ],
)
def test_sequence_ratio_mistakes(wrong, keywords, capsys):
    caught(check_sequence_ratio, wrong, capsys, *keywords)


def test_sequence_ratio_hand_case_matches_the_reference_and_the_library():
    old = torch.full((1, 3, 5), -1.0)
    lp, mask = old + torch.tensor(grpo_checks.SEQ_LOG_RATIOS), torch.tensor(grpo_checks.SEQ_MASK)
    ratio = reference_sequence_ratio(lp, old, mask)
    torch.testing.assert_close(ratio, torch.tensor(grpo_checks.SEQ_EXPECTED))
    _, metrics = minirl.policy_loss(lp, old, torch.ones(1, 3), mask, clip_eps_low=None, ratio_level="sequence")
    real = mask.sum(-1) > 0  # the library's ratio_mean over real tokens agrees with the per-response ratios
    assert metrics["ratio_mean"] == float32_approx(float((ratio * mask.sum(-1)).sum() / mask.sum()))
    assert real.sum() == 2


def test_sequence_ratio_failure_quotes_the_worked_example(capsys):
    caught(
        check_sequence_ratio,
        seq_ratio_with(lambda lr, m, raw: (lr.sum(-1) / m.sum(-1).clamp(min=1)).exp() * 1.1),
        capsys,
        "the worked example",
        "expected [[1.034, 1.822, 1.0]]",
    )


# ---- policy_loss -----------------------------------------------------------------------------------


def policy_loss_with(**knobs):
    """minirl.policy_loss's metrics, the loss from grpo_checks._loss_variant with knobs turned."""

    def policy_loss(
        log_probs,
        old_log_probs,
        advantages,
        mask=None,
        *,
        clip_eps_low=0.2,
        clip_eps_high=None,
        ratio_level="token",
        aggregation="sequence_mean",
    ):
        hi = clip_eps_low if clip_eps_high is None else clip_eps_high
        case = grpo_checks._LossCase(log_probs, old_log_probs, advantages, mask, clip_eps_low, hi, ratio_level)
        loss = grpo_checks._loss_variant(case, **{"aggregation": aggregation, **knobs})
        return loss, minirl.policy_loss(
            log_probs,
            old_log_probs,
            advantages,
            mask,
            clip_eps_low=clip_eps_low,
            clip_eps_high=clip_eps_high,
            ratio_level=ratio_level,
        )[1]

    return policy_loss


def reference_with(*, metrics=None, loss=None, **forced):
    """minirl.policy_loss with some keyword forced, the loss transformed or the metrics replaced."""

    def policy_loss(log_probs, old_log_probs, advantages, mask=None, **kwargs):
        kwargs.update(forced)
        value, reference_metrics = minirl.policy_loss(log_probs, old_log_probs, advantages, mask, **kwargs)
        if loss is not None:
            value = loss(value, log_probs)
        return value, (
            reference_metrics if metrics is None else metrics(log_probs, old_log_probs, advantages, mask, kwargs)
        )

    return policy_loss


def fractions(count_padding=False, all_positions=False, ignore_sign=False, swap=False):
    """Clip fractions computed by a learner, with the usual slips."""

    def metrics(lp, old, adv, mask, kwargs):
        lo = kwargs.get("clip_eps_low", 0.2)
        hi = kwargs.get("clip_eps_high") or lo
        log_ratio = (lp - old).detach() * mask
        if kwargs.get("ratio_level", "token") == "sequence":
            log_ratio = (log_ratio.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1)).expand_as(lp)
        ratio, a = log_ratio.exp(), adv[..., None]
        low, high = ratio < 1 - lo, ratio > 1 + hi
        if not ignore_sign:
            low, high = low & (a < 0), high & (a > 0)
        weight = torch.ones_like(mask) if count_padding else mask
        n = mask.numel() if all_positions else mask.sum()
        out = {"clip_frac_low": float((low * weight).sum() / n), "clip_frac_high": float((high * weight).sum() / n)}
        return {"clip_frac_low": out["clip_frac_high"], "clip_frac_high": out["clip_frac_low"]} if swap else out

    return metrics


def loss_alone(log_probs, old_log_probs, advantages, mask=None, **kwargs):
    return minirl.policy_loss(log_probs, old_log_probs, advantages, mask, **kwargs)[0]


def loss_no_none(
    log_probs,
    old_log_probs,
    advantages,
    mask=None,
    *,
    clip_eps_low=0.2,
    clip_eps_high=None,
    ratio_level="token",
    aggregation="sequence_mean",
):
    1 + clip_eps_high
    return minirl.policy_loss(
        log_probs,
        old_log_probs,
        advantages,
        mask,
        clip_eps_low=clip_eps_low,
        clip_eps_high=clip_eps_high,
        ratio_level=ratio_level,
        aggregation=aggregation,
    )


def loss_none_is_no_upper_clip(
    log_probs,
    old_log_probs,
    advantages,
    mask=None,
    *,
    clip_eps_low=0.2,
    clip_eps_high=None,
    ratio_level="token",
    aggregation="sequence_mean",
):
    """clip_eps_high=None read as "no upper bound" (it means a symmetric clip)."""
    high = float("inf") if clip_eps_high is None else clip_eps_high
    return minirl.policy_loss(
        log_probs,
        old_log_probs,
        advantages,
        mask,
        clip_eps_low=clip_eps_low,
        clip_eps_high=high,
        ratio_level=ratio_level,
        aggregation=aggregation,
    )


def loss_adv_not_expanded(log_probs, old_log_probs, advantages, mask=None, **kwargs):
    ratio = (log_probs - old_log_probs).exp()
    return -(ratio * advantages).mean(), {}


def loss_sequence_without_keepdim(log_probs, old_log_probs, advantages, mask=None, *, ratio_level="token", **kwargs):
    log_ratio = (log_probs - old_log_probs) * mask
    if ratio_level == "sequence":
        log_ratio = (log_ratio.sum(-1) / mask.sum(-1)).expand_as(log_probs)  # PyTorch: the expanded size ...
    return minirl.policy_loss(log_probs, old_log_probs, advantages, mask, ratio_level="token", **kwargs)


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (policy_loss_with(clip="symmetric"), ["symmetric", "clip_eps_high"]),
        (policy_loss_with(clip="high_both"), ["lower bound", "clip_eps_low"]),
        (policy_loss_with(seq_ratio="product"), ["product", "normalises by length"]),
        (policy_loss_with(seq_ratio="mean_ratio"), ["averaged the token ratios", "MEAN LOG-ratio"]),
        (policy_loss_with(mask_in_ratio=False), ["REAL tokens only"]),
        (policy_loss_with(combine="max"), ["use min, not max"]),
        (policy_loss_with(sign=1.0), ["wrong sign"]),
        (policy_loss_with(mask_in_agg=False), ["padding counted"]),
        (reference_with(ratio_level="token"), ["ratio_level='sequence' was ignored"]),
        (reference_with(aggregation="sequence_mean"), ["aggregation was ignored"]),
        (reference_with(loss=lambda value, lp: value.detach()), ["no gradient"]),
        (loss_alone, ["pair (loss, metrics)"]),
        (reference_with(metrics=lambda *args: {}), ["no 'clip_frac_low'"]),
        (reference_with(metrics=fractions(count_padding=True)), ["clip_frac", "padding counted"]),
        (reference_with(metrics=fractions(all_positions=True)), ["clip_frac", "all positions"]),
        (reference_with(metrics=fractions(ignore_sign=True)), ["clip_frac", "only ACTIVE", "A < 0"]),
        (reference_with(metrics=fractions(swap=True)), ["clip_frac_low", "swapped"]),
        (loss_no_none, ["raised TypeError", "symmetric clip"]),
        (loss_none_is_no_upper_clip, ["clip_eps_high=None", "symmetric clip", "left the top open"]),
        (loss_adv_not_expanded, ["raised RuntimeError", "advantages[..., None]"]),
        (loss_sequence_without_keepdim, ["raised RuntimeError", "keepdim=True"]),
    ],
    ids=[
        "symmetric",
        "low-from-high",
        "product",
        "mean-of-ratios",
        "unmasked-seq-ratio",
        "max",
        "sign",
        "unmasked-average",
        "token-only",
        "aggregation-ignored",
        "detached",
        "loss-alone",
        "no-metrics",
        "frac-padding",
        "frac-all-positions",
        "frac-any-sign",
        "frac-swapped",
        "none-high",
        "none-open",
        "adv-not-expanded",
        "seq-no-keepdim",
    ],
)
def test_policy_loss_mistakes(wrong, keywords, capsys):
    caught(check_policy_loss, wrong, capsys, *keywords)


def test_the_none_case_has_ratios_above_the_clip_with_positive_advantages():
    """Where clip_eps_high=None is tested, some real tokens lie above 1 + ε with A > 0: an open top changes the loss."""
    lp, old, adv, mask = grpo_checks._loss_inputs(*grpo_checks.NONE_HIGH_INPUTS)
    ratio = ((lp - old) * mask).exp()
    above = (ratio > 1.2) & (adv[..., None] > 0) & (mask > 0)
    assert int(above.sum()) == 11
    symmetric, _ = minirl.policy_loss(lp, old, adv, mask, clip_eps_low=0.2, clip_eps_high=None)
    open_top, _ = minirl.policy_loss(lp, old, adv, mask, clip_eps_low=0.2, clip_eps_high=1e9)
    assert float(symmetric) == float32_approx(0.0862307) and float(open_top) < float(symmetric) - 0.2


def test_loss_variant_with_default_knobs_is_the_reference():
    lp, old, adv, mask = grpo_checks._loss_inputs(5, batch=2, trial=3, pos=4, spread=0.3)
    for level in ("token", "sequence"):
        want, _ = minirl.policy_loss(lp, old, adv, mask, clip_eps_low=0.2, clip_eps_high=0.28, ratio_level=level)
        case = grpo_checks._LossCase(lp, old, adv, mask, 0.2, 0.28, level)
        torch.testing.assert_close(grpo_checks._loss_variant(case), want)


# ---- k1/k3 swapped, the wrong axis (issue 11) ---------------------------------------------------------


def kl_swapped(a, b):
    def kl_estimate(log_probs, ref_log_probs, estimator):
        return minirl.kl_estimate(log_probs, ref_log_probs, {a: b, b: a}.get(estimator, estimator))

    return kl_estimate


@pytest.mark.parametrize(
    "a, b, keywords",
    [
        ("k1", "k3", ["k1 estimate", "this is k3"]),
        ("k1", "k2", ["k1 estimate", "this is k2"]),
        ("k2", "k3", ["k2 estimate", "this is k3"]),
    ],
)
def test_kl_estimators_swapped(a, b, keywords, capsys):
    caught(check_kl_estimate, kl_swapped(a, b), capsys, *keywords)


def aggregate_over_trial(per_token, mask, aggregation, max_length=None):
    if aggregation == "sequence_mean":
        masked = per_token * mask
        return (masked.sum(1) / mask.sum(1).clamp(min=1)).mean()
    return minirl.aggregate(per_token, mask, aggregation, max_length)


def test_aggregate_over_the_wrong_axis(capsys):
    caught(check_aggregate, aggregate_over_trial, capsys, "sequence_mean", "wrong axis", "dim=-1")


def test_aggregate_dividing_by_a_reduced_mask_gets_a_hint(capsys):
    def aggregate(per_token, mask, aggregation="sequence_mean", max_length=None):
        return ((per_token * mask) / mask.sum(-1).clamp(min=1)).sum(-1).mean()  # PyTorch: sizes must match

    caught(
        check_aggregate, aggregate, capsys, "raised RuntimeError", "size of tensor", "mask.sum(-1) is [batch, trial]"
    )


# ---- more named mistakes (issue 19) ---------------------------------------------------------------------


def agg_sequence_mean_of_nonempty(per_token, mask, aggregation="sequence_mean", max_length=None):
    """sequence_mean over the responses that have a real token only."""
    if aggregation != "sequence_mean":
        return minirl.aggregate(per_token, mask, aggregation, max_length)
    lengths = mask.sum(-1)
    per_response = (per_token * mask).sum(-1) / lengths.clamp(min=1)
    return per_response[lengths > 0].mean()


@pytest.mark.parametrize(
    "check, wrong, keywords",
    [
        (check_kl_estimate, kl_with(k2=lambda ell: (ell / 2) ** 2), ["k2 estimate", "not (ℓ / 2)²"]),
        (check_kl_estimate, kl_with(k3=lambda ell: ell.exp() - ell + 1), ["k3 estimate", "added 1 instead"]),
        (
            check_aggregate,
            agg_with(sequence_mean=lambda x, m, L: ((x * m).sum(-1) / m.sum(-1).clamp(min=1)).sum()),
            ["summed the per-response means"],
        ),
        (check_aggregate, agg_sequence_mean_of_nonempty, ["no real token still counts", "clamping"]),
        (
            check_aggregate,
            agg_with(constant=lambda x, m, L: (x * m).sum() / (x.shape[1] * (L or x.shape[-1]))),
            ["batch · trial", "trial only"],
        ),
        (check_policy_loss, policy_loss_with(combine="none"), ["did not clip"]),
        (check_policy_loss, policy_loss_with(combine="clip_only"), ["min of the unclipped and the clipped"]),
        (check_policy_loss, policy_loss_with(combine="min_ratios"), ["min of the two PRODUCTS"]),
        (check_policy_loss, policy_loss_with(clip="swapped"), ["swapped the bounds", "(= 0.8)", "(= 1.28)"]),
        (check_policy_loss, policy_loss_with(aggregation="token_mean"), ["default aggregation is 'sequence_mean'"]),
    ],
    ids=[
        "k2-half-squared",
        "k3-plus-one",
        "seq-mean-summed",
        "seq-mean-nonempty",
        "constant-trial-only",
        "no-clip",
        "clip-only",
        "min-of-ratios",
        "bounds-swapped",
        "always-token-mean",
    ],
)
def test_more_named_mistakes(check, wrong, keywords, capsys):
    caught(check, wrong, capsys, *keywords)

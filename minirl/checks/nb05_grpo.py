"""Checks for notebook 05 (GRPO and its variants), named after the function they check.

    check_kl_estimate(fn)      fn(log_probs, ref_log_probs, estimator) -> per-token KL estimates
    check_aggregate(fn)        fn(per_token, mask, aggregation="sequence_mean", max_length=None) -> scalar
    check_sequence_ratio(fn)   fn(log_probs, old_log_probs, mask) -> GSPO's ratio[batch, trial]
    check_policy_loss(fn)      fn(log_probs, old_log_probs, advantages, mask=None, *, clip_eps_low=0.2,
                                  clip_eps_high=None, ratio_level="token", aggregation="sequence_mean")
                                  -> (loss, {"clip_frac_low": ..., "clip_frac_high": ...})

``kl_estimate``, ``aggregate`` and ``policy_loss`` have the library's names and signatures (``aggregate``
without the micro-batch keywords, ``policy_loss`` without the KL term and the micro-batch keywords,
its metrics the two clip fractions), so the fallback cells swap in ``minirl.kl_estimate``,
``minirl.aggregate`` and ``minirl.policy_loss`` as they are. ``reference_sequence_ratio`` is the
reference for the fallback cell of ``sequence_ratio``, GSPO's length-normalised sequence ratio (inside
``minirl.policy_loss`` with ``ratio_level="sequence"``). Expected values are hand-computed constants
plus those references on seeded random inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from minirl.checks._core import Check, exercise_check, format_tensor, numbers_close, seeded_generator
from minirl.losses import aggregate as _ref_aggregate
from minirl.losses import kl_estimate as _ref_kl_estimate
from minirl.losses import policy_loss as _ref_policy_loss

__all__ = [
    "check_aggregate",
    "check_kl_estimate",
    "check_policy_loss",
    "check_sequence_ratio",
    "reference_sequence_ratio",
]

SEED = 5005


def reference_sequence_ratio(log_probs: torch.Tensor, old_log_probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """GSPO's ratio, one per response: ρ_i = exp(Σ_t m_it (log π_θ − log π_old)_it / Σ_t m_it), [batch, trial]
    (a response with no real token gets exp(0) = 1)."""
    mask = mask.to(log_probs.dtype)
    log_ratio = ((log_probs - old_log_probs.detach()) * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
    return log_ratio.exp()


def _reference_policy_loss(
    log_probs,
    old_log_probs,
    advantages,
    mask,
    clip_eps_low=0.2,
    clip_eps_high=None,
    ratio_level="token",
    aggregation="sequence_mean",
):
    """``minirl.policy_loss`` with no KL term: (loss, metrics)."""
    return _ref_policy_loss(
        log_probs,
        old_log_probs,
        advantages,
        mask,
        clip_eps_low=clip_eps_low,
        clip_eps_high=clip_eps_high,
        ratio_level=ratio_level,
        aggregation=aggregation,
    )


def _scalar(c: Check, got, what: str) -> torch.Tensor:
    got = c.tensor(got, what)
    c.expect(got.dim() == 0, f"{what}: should be a single number (a 0-dim tensor); got shape {list(got.shape)}")
    return got


# ---------------------------------------------------------------------------------------------
# kl_estimate
# ---------------------------------------------------------------------------------------------

# log-ratios ℓ = log π_ref − log π_θ = [0.5, −0.5, 0, 1]
KL_LOG_PROBS = [[-1.0, -0.5, -2.0, -3.0]]
KL_REF_LOG_PROBS = [[-0.5, -1.0, -2.0, -2.0]]
KL_EXPECTED = {
    "k1": [[-0.5, 0.5, 0.0, -1.0]],  # −ℓ
    "k2": [[0.125, 0.125, 0.0, 0.5]],  # ℓ² / 2
    "k3": [[math.exp(0.5) - 1.5, math.exp(-0.5) - 0.5, 0.0, math.e - 2]],  # e^ℓ − ℓ − 1
}


def _kl_mistakes(lp: torch.Tensor, ref: torch.Tensor, estimator: str) -> list[tuple[torch.Tensor, str]]:
    ell = ref - lp
    if estimator == "k1":
        return [
            (ell, "k1 has the wrong sign: with ℓ = log π_ref − log π_θ, k1 = −ℓ = log π_θ − log π_ref"),
            (ell.abs(), "k1 = −ℓ is NOT made non-negative: it is unbiased precisely because it can be negative"),
            (0.5 * ell**2, "this is k2 (ℓ²/2); k1 = −ℓ = log π_θ − log π_ref"),
            (ell.exp() - ell - 1, "this is k3 (exp(ℓ) − ℓ − 1); k1 = −ℓ = log π_θ − log π_ref"),
        ]
    if estimator == "k2":
        return [
            (ell**2, "k2 is ℓ² / 2: you forgot the 1/2"),
            ((ell / 2) ** 2, "k2 is ℓ² / 2 (square, then halve), not (ℓ / 2)²: mind the brackets, 0.5 * ell**2"),
            (-ell, "this is k1; k2 = ℓ² / 2"),
            (ell.exp() - ell - 1, "this is k3; k2 = ℓ² / 2"),
        ]
    return [
        (
            (-ell).exp() + ell - 1,
            "k3 uses ℓ = log π_ref − log π_θ (the ratio π_ref / π_θ); you have the log-ratio "
            "the wrong way round (log π_θ − log π_ref)",
        ),
        (ell.exp() - ell, "k3 = exp(ℓ) − ℓ − 1: you forgot the −1"),
        (ell.exp() + ell - 1, "k3 = exp(ℓ) − ℓ − 1: the ℓ term has the wrong sign"),
        (ell.exp() - ell + 1, "k3 = exp(ℓ) − ℓ − 1: you added 1 instead of subtracting it (k3 is 0 where π_θ = π_ref)"),
        (
            ell.exp() - 1,
            "k3 = exp(ℓ) − ℓ − 1: you forgot the −ℓ term (exp(ℓ) − 1 alone is unbiased but can be negative)",
        ),
        (0.5 * ell**2, "this is k2; k3 = exp(ℓ) − ℓ − 1"),
        (-ell, "this is k1; k3 = exp(ℓ) − ℓ − 1"),
    ]


def _check_kl_case(
    c: Check, fn: Callable, lp: torch.Tensor, ref: torch.Tensor, estimator: str, want: torch.Tensor
) -> None:
    lp_in = lp.clone().requires_grad_(True)
    with c.mode(estimator):
        got = c.call(fn, lp_in, ref.clone(), estimator, call=f"estimator {estimator!r}")
        what = f"{estimator} estimate"
        got = c.shape(
            got,
            list(lp.shape),
            "same as log_probs",
            what,
            {(): "return one estimate per token (same shape as log_probs), do not average"},
        )
        c.close(got, want, what, _kl_mistakes(lp, ref, estimator))
        c.expect(
            got.requires_grad,
            f"{what}: no gradient flows to log_probs — no .detach(), .item() or "
            "torch.no_grad() (the KL penalty is part of the loss)",
        )


@exercise_check("kl_estimate")
def check_kl_estimate(c: Check, fn: Callable) -> None:
    """Check ``kl_estimate(log_probs, ref_log_probs, estimator)`` for "k1", "k2", "k3", per token, with
    ℓ = log π_ref − log π_θ: k1 = −ℓ, k2 = ℓ²/2, k3 = exp(ℓ) − ℓ − 1. Catches the log-ratio the wrong
    way round, k2 without the 1/2 or as (ℓ/2)², k3 without the −1 (or with +1) or the −ℓ, a wrong k1
    sign, an averaged result."""
    lp, ref = torch.tensor(KL_LOG_PROBS), torch.tensor(KL_REF_LOG_PROBS)
    with c.worked_example():
        for estimator, values in KL_EXPECTED.items():
            _check_kl_case(c, fn, lp, ref, estimator, torch.tensor(values))
    gen = seeded_generator(SEED, 3)
    lp = torch.randn(2, 3, 4, 5, generator=gen).log_softmax(-1)[..., 0]  # [2, 3, 4]
    ref = lp + 0.7 * torch.randn(2, 3, 4, generator=gen)
    for estimator in ("k1", "k2", "k3"):
        _check_kl_case(c, fn, lp, ref, estimator, _ref_kl_estimate(lp, ref, estimator))


# ---------------------------------------------------------------------------------------------
# aggregate
# ---------------------------------------------------------------------------------------------

# [batch 1, trial 2, pos 5]: response A has 2 real tokens (values 4, 2), response B has 5 (all 1);
# the padding holds 9s that must not count.
AGG_PER_TOKEN = [[[4.0, 2.0, 9.0, 9.0, 9.0], [1.0, 1.0, 1.0, 1.0, 1.0]]]
AGG_MASK = [[[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0]]]
AGG_EXPECTED = {
    ("sequence_mean", None): 2.0,  # (6/2 + 5/5) / 2
    ("token_mean", None): 11.0 / 7.0,  # (6 + 5) / 7 real tokens
    ("constant", None): 1.1,  # (6 + 5) / (2 responses · 5 positions)
    ("constant", 8): 11.0 / 16.0,  # (6 + 5) / (2 · max_length 8)
}
# No response fills the position axis (real lengths 2 and 3 of 5): "constant" still divides by 2 · 5.
AGG_SHORT_PER_TOKEN = [[[4.0, 2.0, 9.0, 9.0, 9.0], [1.0, 2.0, 3.0, 9.0, 9.0]]]
AGG_SHORT_MASK = [[[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0]]]
AGG_SHORT_CONSTANT = 12.0 / 10.0  # (6 + 6) / (2 responses · 5 positions)


def _aggregate_mistakes(
    x: torch.Tensor, m: torch.Tensor, aggregation: str, max_length: int | None
) -> list[tuple[torch.Tensor | None, str]]:
    masked = x * m
    n_seq = x.shape[0] * x.shape[1]
    lengths = m.sum(-1).clamp(min=1)
    seq_mean = (masked.sum(-1) / lengths).mean()
    tok_mean = masked.sum() / m.sum().clamp(min=1)
    pos = x.shape[-1]
    per_response = masked.sum(-1) / lengths
    nonempty = m.sum(-1) > 0
    common = [
        (x.mean(), "you ignored the mask: multiply by it so padding positions count 0, and count real tokens only"),
        (
            _ref_aggregate(x, torch.ones_like(m), aggregation, max_length),
            "you ignored the mask: padding positions must not count",
        ),
        (x.sum(-1).div(lengths).mean(), "the padding values were summed: multiply per_token by the mask first"),
        (
            masked.sum(1).div(m.sum(1).clamp(min=1)).mean(),
            "you reduced over the wrong axis (dim=1, the trial axis): "
            "a response's tokens lie along the last axis, dim=-1",
        ),
    ]
    if aggregation == "sequence_mean":
        return [
            (
                per_response.sum(),
                "you summed the per-response means; average them over the responses (all batch · "
                "trial of them): .mean()",
            ),
            (
                per_response[nonempty].mean() if not nonempty.all() else None,
                "a response with no real token still counts in the average over responses (it contributes 0): average "
                "over all batch · trial responses, clamping each length to at least 1",
            ),
            (
                masked.sum(-1).div(pos).mean(),
                "you divided each response by the full length (pos); divide by its REAL length, mask.sum(-1)",
            ),
            (
                tok_mean,
                "this is token_mean; sequence_mean first averages each response over its own real tokens, "
                "then averages the responses",
            ),
            *common,
        ]
    if aggregation == "token_mean":
        return [
            (
                seq_mean,
                "you averaged per response first (that is sequence_mean); token_mean divides the sum over all "
                "real tokens by their number: (per_token · mask).sum() / mask.sum()",
            ),
            (masked.sum() / x.numel(), "you divided by all positions; divide by the number of REAL tokens, mask.sum()"),
            *common,
        ]
    return [
        (
            seq_mean,
            "constant must not use the real lengths: divide the masked sum by N_responses · max_length "
            "(you divided each response by its real length)",
        ),
        (tok_mean, "constant divides by N_responses · max_length, not by the number of real tokens"),
        (
            masked.sum() / (n_seq * pos),
            f"you ignored max_length (called with max_length={max_length}); divide by N_responses · max_length",
        ),
        (masked.sum() / pos, "divide by N_responses · max_length: you left out the number of responses"),
        (
            masked.sum() / (x.shape[1] * (max_length or pos)) if x.shape[0] > 1 else None,
            "N_responses is batch · trial, every response of every prompt; you divided by trial only",
        ),
        (
            masked.sum() / (n_seq * m.sum(-1).max()),
            "you divided by the longest REAL response (mask.sum(-1).max()); "
            "constant divides by the position axis (pos), or max_length when "
            "given, whatever the real lengths are",
        ),
        *common,
    ]


_AGGREGATE_HINTS = [
    (
        "size of tensor",
        "a reduction dropped an axis the next step needs: mask.sum(-1) is [batch, trial], so divide "
        "the per-response sums masked.sum(-1) by it (or keep the axis with keepdim=True)",
    ),
]


def _check_aggregate_case(
    c: Check,
    fn: Callable,
    x: torch.Tensor,
    m: torch.Tensor,
    aggregation: str,
    max_length: int | None,
    want: torch.Tensor,
) -> None:
    args = [x.clone().requires_grad_(True), m.clone(), aggregation]
    shown = f"aggregation {aggregation!r}"
    if max_length is not None:
        args.append(max_length)
        shown += f", max_length={max_length}"
    with c.mode(aggregation):
        got = c.call(fn, *args, call=shown, hints=_AGGREGATE_HINTS)
        what = f"{shown}"
        got = _scalar(c, got, what)
        if not torch.isfinite(got.detach()):
            c.fail(
                f"{what}: got {got.item()} — a response with no real token (mask all 0) must contribute 0, not "
                "NaN: clamp each length to at least 1, mask.sum(-1).clamp(min=1)"
            )
        c.close(got, want, what, _aggregate_mistakes(x, m, aggregation, max_length))
        c.expect(got.requires_grad, f"{what}: no gradient flows — keep it a tensor computed from per_token")


@exercise_check("aggregate")
def check_aggregate(c: Check, fn: Callable) -> None:
    """Check ``aggregate(per_token, mask, aggregation="sequence_mean", max_length=None) -> scalar`` for
    "sequence_mean", "token_mean", "constant" against ``minirl.aggregate``. Catches the mask ignored,
    sequence_mean divided by the full instead of the real length, token_mean averaged per response
    first, constant using the real lengths, the longest real length, trial instead of batch · trial
    or ignoring max_length, sequence_mean summed over responses or leaving out the all-padding ones,
    NaN on an all-padding response."""
    x, m = torch.tensor(AGG_PER_TOKEN), torch.tensor(AGG_MASK)
    with c.worked_example():
        for (aggregation, max_length), value in AGG_EXPECTED.items():
            _check_aggregate_case(c, fn, x, m, aggregation, max_length, torch.tensor(value))
        _check_aggregate_case(
            c,
            fn,
            torch.tensor(AGG_SHORT_PER_TOKEN),
            torch.tensor(AGG_SHORT_MASK),
            "constant",
            None,
            torch.tensor(AGG_SHORT_CONSTANT),
        )
    gen = seeded_generator(SEED, 4)
    x = torch.randn(3, 4, 6, generator=gen)
    lengths = torch.randint(1, 7, (3, 4, 1), generator=gen)
    m = (torch.arange(6) < lengths).float()
    for aggregation in ("sequence_mean", "token_mean", "constant"):
        _check_aggregate_case(c, fn, x, m, aggregation, None, _ref_aggregate(x, m, aggregation))
    _check_aggregate_case(c, fn, x, m, "constant", 9, _ref_aggregate(x, m, "constant", 9))
    m_empty = m.clone()
    m_empty[1, 2] = 0.0  # one response with no real token at all
    _check_aggregate_case(c, fn, x, m_empty, "sequence_mean", None, _ref_aggregate(x, m_empty, "sequence_mean"))


# ---------------------------------------------------------------------------------------------
# sequence_ratio (GSPO)
# ---------------------------------------------------------------------------------------------

# [batch 1, trial 3, pos 5]: log-ratios log π_θ − log π_old per position; the padding moved too (must not count).
SEQ_LOG_RATIOS = [[[0.4, -0.3, 0.0, 0.7, 0.7], [0.6, 0.9, 0.9, 0.9, 0.9], [0.5, 0.5, 0.5, 0.5, 0.5]]]
SEQ_MASK = [[[1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]]]
# exp((0.4 − 0.3 + 0) / 3), exp(0.6 / 1), and exp(0) = 1 for a response with no real token
SEQ_EXPECTED = [[math.exp(0.1 / 3), math.exp(0.6), 1.0]]


def _sequence_ratio_mistakes(lp, old, mask) -> list[tuple[torch.Tensor | None, str]]:
    log_ratio = lp - old
    masked = log_ratio * mask
    n = mask.sum(-1).clamp(min=1.0)
    mean_log = masked.sum(-1) / n
    return [
        (
            masked.sum(-1).exp(),
            "this is the product of the token ratios, exp(Σ log ρ_t): GSPO normalises by the "
            "length, exp(Σ m_t log ρ_t / Σ m_t), so a long response's ratio does not explode",
        ),
        (
            (log_ratio.exp() * mask).sum(-1) / n,
            "you averaged the token ratios; the sequence ratio is the exp of "
            "the MEAN LOG-ratio (a geometric mean), exp(Σ m_t log ρ_t / Σ m_t)",
        ),
        (
            log_ratio.mean(-1).exp(),
            "the padding counted: average the log-ratio over the REAL tokens only, "
            "(log_ratio * mask).sum(-1) / mask.sum(-1)",
        ),
        (
            (masked.sum(-1) / lp.shape[-1]).exp(),
            "you divided by all positions; divide by the real length, mask.sum(-1).clamp(min=1)",
        ),
        (mean_log, "you returned the mean log-ratio: take its exp"),
        ((-mean_log).exp(), "the ratio is upside down: use log π_θ − log π_old (log_probs − old_log_probs)"),
        (
            log_ratio.sum(-1).exp(),
            "the product of ALL positions' ratios, padding included: average the log-ratio over the real tokens only",
        ),
    ]


def _check_sequence_ratio_case(
    c: Check, fn: Callable, lp: torch.Tensor, old: torch.Tensor, mask: torch.Tensor, want: torch.Tensor, what: str
) -> None:
    lp_in, old_in, mask_in = lp.clone().requires_grad_(True), old.clone(), mask.clone()
    got = c.call(
        fn,
        lp_in,
        old_in,
        mask_in,
        call=what,
        hints=[
            (
                "size of tensor",
                "sum the masked log-ratio over positions and divide by mask.sum(-1): both [batch, trial]",
            )
        ],
    )
    c.unchanged({"old_log_probs": old, "mask": mask}, {"old_log_probs": old_in, "mask": mask_in}, what)
    batch, trial, pos = lp.shape
    got = c.shape(
        got,
        [batch, trial],
        "batch, trial",
        f"ratio ({what})",
        {
            (batch, trial, 1): "one ratio per response: drop the kept position axis (.squeeze(-1))",
            (batch, trial, pos): "one ratio per RESPONSE, not per token: average the log-ratio over the real tokens",
        },
    )
    if not torch.isfinite(got.detach()).all():
        c.fail(
            f"ratio ({what}): non-finite values {format_tensor(got)} — a response with no real token must give "
            "exp(0) = 1: clamp its length to at least 1, mask.sum(-1).clamp(min=1)"
        )
    c.close(got, want, f"ratio ({what})", _sequence_ratio_mistakes(lp, old, mask))
    c.expect(
        got.requires_grad,
        f"ratio ({what}): no gradient flows to log_probs — the loss backpropagates through "
        "the ratio (no .detach(), .item() or torch.no_grad())",
    )


@exercise_check("sequence_ratio")
def check_sequence_ratio(c: Check, fn: Callable) -> None:
    """Check ``sequence_ratio(log_probs, old_log_probs, mask) -> ratio[batch, trial]``, GSPO's
    exp(Σ_t m_t (log π_θ − log π_old) / Σ_t m_t), on a hand case then against ``reference_sequence_ratio``.
    Catches the product of token ratios, the mean of token ratios, the padding counted, all positions as the
    length, no exp, the ratio upside down, NaN on an empty response, a kept position axis, no gradient."""
    old = torch.full((1, 3, 5), -1.0)
    with c.worked_example():
        _check_sequence_ratio_case(
            c,
            fn,
            old + torch.tensor(SEQ_LOG_RATIOS),
            old,
            torch.tensor(SEQ_MASK),
            torch.tensor(SEQ_EXPECTED),
            "the worked example",
        )
    for offset, (batch, trial, pos) in [(7, (2, 3, 6)), (8, (3, 4, 5))]:
        lp, old, _, mask = _loss_inputs(offset, batch, trial, pos, spread=0.4)
        _check_sequence_ratio_case(
            c, fn, lp, old, mask, reference_sequence_ratio(lp, old, mask), f"random log-probs [{batch}, {trial}, {pos}]"
        )


# ---------------------------------------------------------------------------------------------
# policy_loss
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LossCase:
    """One case of ``policy_loss``: log π_θ, log π_old, the advantages, the mask, the clip range (ε_high
    resolved: never None) and the ratio level."""

    lp: torch.Tensor
    old: torch.Tensor
    adv: torch.Tensor
    mask: torch.Tensor
    lo: float
    hi: float
    level: str


def _loss_variant(
    case: _LossCase,
    *,
    seq_ratio="mean_log",
    mask_in_ratio=True,
    combine="min",
    sign=-1.0,
    mask_in_agg=True,
    clip="both",
    aggregation="sequence_mean",
):
    """The loss with one knob turned (the knobs mirror the usual mistakes)."""
    lp, old, adv, mask, lo, hi, level = case.lp, case.old, case.adv, case.mask, case.lo, case.hi, case.level
    m_ratio = mask if mask_in_ratio else torch.ones_like(mask)
    log_ratio = (lp - old) * m_ratio
    if level == "sequence":
        n = m_ratio.sum(-1, keepdim=True).clamp(min=1)
        seq = {
            "mean_log": lambda: (log_ratio.sum(-1, keepdim=True) / n).exp(),
            "product": lambda: log_ratio.sum(-1, keepdim=True).exp(),
            "mean_ratio": lambda: ((lp - old).exp() * m_ratio).sum(-1, keepdim=True) / n,
        }[seq_ratio]()
        ratio = seq.expand_as(lp)
    else:
        ratio = log_ratio.exp()
    a = adv[..., None]
    high = {"both": hi, "symmetric": lo, "swapped": lo}.get(clip, hi)
    low = {"high_both": hi, "swapped": hi}.get(clip, lo)
    clipped = ratio.clamp(1 - low, 1 + high) * a
    per_token = {
        "min": lambda: torch.minimum(ratio * a, clipped),
        "max": lambda: torch.maximum(ratio * a, clipped),
        "clip_only": lambda: clipped,
        "none": lambda: ratio * a,
        "min_ratios": lambda: torch.minimum(ratio, ratio.clamp(1 - low, 1 + high)) * a,
    }[combine]()
    agg_mask = mask if mask_in_agg else torch.ones_like(mask)
    return sign * _ref_aggregate(per_token, agg_mask, aggregation)


def _policy_loss_mistakes(case: _LossCase) -> list[tuple[torch.Tensor, str]]:
    lo, hi, level = case.lo, case.hi, case.level

    def wrong(**kw):
        return _loss_variant(case, **kw)

    other_level = "token" if level == "sequence" else "sequence"
    mistakes = [
        (wrong(sign=1.0), "wrong sign: the loss to MINIMISE is −min(ρA, clip(ρ)A), averaged"),
        (wrong(combine="max"), "use min, not max: the clipped objective is the pessimistic (lower) one"),
        (wrong(combine="none"), "you did not clip: min(ρA, clip(ρ, 1 − ε_low, 1 + ε_high)A)"),
        (
            wrong(combine="clip_only"),
            "take the min of the unclipped and the clipped terms, min(ρA, clip(ρ)A); "
            "clip(ρ)·A alone also clips where the unclipped term is the smaller one",
        ),
        (
            wrong(combine="min_ratios"),
            "take the min of the two PRODUCTS, min(ρA, clip(ρ)A), not the min of the two "
            "ratios times A: with A < 0 the smaller ratio gives the LARGER product",
        ),
        (
            wrong(clip="swapped"),
            f"you swapped the bounds: the lower is 1 − clip_eps_low (= {1 - lo:g}), the upper "
            f"1 + clip_eps_high (= {1 + hi:g})",
        ),
        (
            wrong(aggregation="token_mean"),
            "the default aggregation is 'sequence_mean' (each response averaged over its "
            "real tokens, then the responses); you averaged over all real tokens "
            "(token_mean)",
        ),
        (
            wrong(clip="symmetric"),
            f"your clip is symmetric: the upper bound is 1 + clip_eps_high "
            f"(= {1 + hi:g} here), the lower 1 − clip_eps_low (= {1 - lo:g})",
        ),
        (wrong(clip="high_both"), f"the lower bound is 1 − clip_eps_low (= {1 - lo:g}), not 1 − clip_eps_high"),
        (
            wrong(mask_in_agg=False),
            "the padding counted in the average: average each response over its real tokens "
            "(mask), then over responses",
        ),
        (
            _loss_variant(replace(case, level=other_level)),
            f"ratio_level={level!r} was ignored: you computed the {other_level}-level ratio",
        ),
    ]
    if level == "sequence":
        mistakes = [
            (
                wrong(seq_ratio="product"),
                "the sequence ratio is a product of token ratios exp(Σ log ρ_t): GSPO "
                "normalises by length, exp(mean over real tokens of log ρ_t)",
            ),
            (
                wrong(seq_ratio="mean_ratio"),
                "you averaged the token ratios; the sequence ratio is the exp of the MEAN "
                "LOG-ratio (a geometric mean), exp(Σ m_t log ρ_t / Σ m_t)",
            ),
            (
                wrong(mask_in_ratio=False),
                "the sequence ratio must average the log-ratio over REAL tokens only: "
                "mask the log-ratios and divide by mask.sum(-1)",
            ),
            (
                wrong(seq_ratio="product", mask_in_ratio=False),
                "the sequence ratio is exp of the MEAN log-ratio over real tokens; yours sums over all positions",
            ),
            *mistakes,
        ]
    return mistakes


# PyTorch's own errors for the usual slips, and what most likely caused them
_POLICY_LOSS_HINTS = [
    ("nonetype", "clip_eps_high=None means a symmetric clip: use clip_eps_low in its place"),
    (
        "expanded size",
        "keep the position axis when you average the log-ratio over a response: "
        ".sum(-1, keepdim=True) / mask.sum(-1, keepdim=True), then .expand_as(log_probs)",
    ),
    (
        "size of tensor",
        "advantages are [batch, trial], one per response: advantages[..., None] ([batch, trial, 1]) "
        "broadcasts over the response's tokens [batch, trial, pos]",
    ),
]


def _clip_fraction_mistakes(case: _LossCase) -> dict[str, list[tuple[float, str]]]:
    """The clip fractions computed the usual wrong ways: {metric: [(value, message), ...]}."""
    lp, old, adv, mask, lo, hi, level = case.lp, case.old, case.adv, case.mask, case.lo, case.hi, case.level
    with torch.no_grad():
        log_ratio = (lp - old) * mask
        if level == "sequence":
            log_ratio = (log_ratio.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1)).expand_as(lp)
        ratio, a = log_ratio.exp(), adv[..., None].expand_as(lp)
        n_real, n_all = float(mask.sum().clamp(min=1)), float(mask.numel())
        low, high = (ratio < 1 - lo), (ratio > 1 + hi)
        out = {}
        for name, outside, sign in (("clip_frac_low", low, a < 0), ("clip_frac_high", high, a > 0)):
            out[name] = [
                (
                    float((outside & sign).float().mul(mask).sum()) / n_all,
                    "you divided by all positions, padding included; divide by the number of real tokens, mask.sum()",
                ),
                (float((outside & sign).float().sum()) / n_real, "the padding counted: multiply by the mask"),
                (
                    float(outside.float().mul(mask).sum()) / n_real,
                    "the clip is only ACTIVE where it changes the min: ρ < 1 − ε_low with A < 0 (low), "
                    "ρ > 1 + ε_high with A > 0 (high); count only those",
                ),
            ]
        out["clip_frac_low"].append(
            (
                float((high & (a > 0)).float().mul(mask).sum()) / n_real,
                "this is the fraction for the UPPER clip: clip_frac_low and clip_frac_high are swapped",
            )
        )
        return out


def _check_policy_loss_case(
    c: Check, fn: Callable, inputs: tuple[torch.Tensor, ...], lo, hi, level, aggregation: str = "sequence_mean"
) -> None:
    """One call of the learner's ``policy_loss`` on ``inputs`` = (log_probs, old_log_probs, advantages, mask)."""
    lp, old, adv, mask = inputs
    lp_in = lp.clone().requires_grad_(True)
    kwargs = {"clip_eps_low": lo, "clip_eps_high": hi, "ratio_level": level}
    if aggregation != "sequence_mean":
        kwargs["aggregation"] = aggregation
    shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    got = c.call(fn, lp_in, old.clone(), adv.clone(), mask.clone(), call=shown, hints=_POLICY_LOSS_HINTS, **kwargs)
    what = f"loss ({shown})"
    if isinstance(got, torch.Tensor):
        c.fail(
            f"{what}: return the pair (loss, metrics) like minirl.policy_loss, not the loss alone: "
            'return loss, {"clip_frac_low": ..., "clip_frac_high": ...}'
        )
    c.expect(
        isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict),
        f"{what}: expected a pair (loss, metrics dict), got {type(got).__name__}",
    )
    loss, metrics = got
    loss = _scalar(c, loss, what)
    case = _LossCase(lp, old, adv, mask, lo, lo if hi is None else hi, level)
    want, want_metrics = _reference_policy_loss(lp, old, adv, mask, **kwargs)
    mistakes = (
        _policy_loss_mistakes(case)
        if aggregation == "sequence_mean"
        else [
            (
                _ref_policy_loss(lp, old, adv, mask, clip_eps_low=lo, clip_eps_high=hi, ratio_level=level)[0],
                "aggregation was ignored: reduce the per-token loss with aggregate(per_token, mask, aggregation)",
            )
        ]
    )
    if hi is None:
        mistakes.append(
            (
                _loss_variant(replace(case, hi=float("inf"))),
                "clip_eps_high=None means a symmetric clip, [1 − ε_low, 1 + ε_low]; you left the top open",
            )
        )
    c.close(loss, want.detach(), what, mistakes)
    c.expect(loss.requires_grad, f"{what}: no gradient flows to log_probs — keep the loss a tensor computed from them")
    wrong = _clip_fraction_mistakes(case)
    for name in ("clip_frac_low", "clip_frac_high"):
        if name not in metrics:
            c.fail(
                f"{what}: metrics has no {name!r} (it has {sorted(metrics)}): the fraction of real tokens where "
                + ("ρ < 1 − ε_low and A < 0" if name == "clip_frac_low" else "ρ > 1 + ε_high and A > 0")
            )
        value = metrics[name]
        try:
            value = float(value)
        except (TypeError, ValueError):
            c.fail(f"{what}: metrics[{name!r}] should be a number, got {type(value).__name__}")
        if not numbers_close(value, want_metrics[name]):
            for wrong_value, message in wrong[name]:
                if numbers_close(value, wrong_value):
                    c.fail(f"{what}: {name} = {value:.4g}, expected {want_metrics[name]:.4g} — {message}", named=True)
            c.fail(
                f"{what}: {name} = {value:.4g}, expected {want_metrics[name]:.4g} (the fraction of real tokens "
                "where the clip is active)"
            )
        c.passed += 1


@exercise_check("policy_loss")
def check_policy_loss(c: Check, fn: Callable) -> None:
    """Check ``policy_loss(log_probs, old_log_probs, advantages, mask, *, clip_eps_low, clip_eps_high, ratio_level,
    aggregation) -> (loss, metrics)`` against ``minirl.policy_loss`` (no KL term): the loss, and the metrics
    clip_frac_low / clip_frac_high. Catches a symmetric clip that ignores clip_eps_high, clip_eps_high=None
    not read as symmetric (raising, or leaving the top open), swapped bounds, no clip, the clip without the
    min, the min of the ratios, the sequence ratio as a product or a mean of token ratios, the mask ignored
    in the sequence ratio or in the average, min and max swapped, a flipped sign, ratio_level or aggregation
    ignored (or token_mean by default), the loss alone returned, clip fractions over all positions,
    regardless of the advantage's sign, or swapped."""
    inputs = _loss_inputs(5, batch=2, trial=3, pos=4, spread=0.3)
    _check_policy_loss_case(c, fn, inputs, 0.2, 0.28, "token")
    _check_policy_loss_case(c, fn, inputs, 0.1, 0.15, "sequence")
    inputs = _loss_inputs(6, batch=3, trial=4, pos=5, spread=0.15)
    _check_policy_loss_case(c, fn, inputs, 0.2, None, "token")
    _check_policy_loss_case(c, fn, inputs, 0.05, 0.08, "sequence")
    _check_policy_loss_case(c, fn, inputs, 0.2, 0.28, "token", aggregation="token_mean")
    # clip_eps_high=None again, now with real tokens whose ratio lies above 1 + ε and whose advantage is positive
    # (where a missing upper clip changes the loss): the symmetric clip must cap them at 1 + clip_eps_low
    inputs = _loss_inputs(*NONE_HIGH_INPUTS)
    _check_policy_loss_case(c, fn, inputs, 0.2, None, "token")
    _check_policy_loss_case(c, fn, inputs, 0.1, None, "sequence")


NONE_HIGH_INPUTS = (9, 3, 4, 5, 0.5)  # offset, batch, trial, pos, spread: ratios far outside [0.8, 1.2]


def _loss_inputs(offset: int, batch: int, trial: int, pos: int, spread: float):
    gen = seeded_generator(SEED, offset)
    lp = torch.randn(batch, trial, pos, 6, generator=gen).log_softmax(-1)[..., 0]
    old = lp + spread * torch.randn(batch, trial, pos, generator=gen)  # ratios around the clip range
    adv = torch.randn(batch, trial, generator=gen)
    lengths = torch.randint(1, pos + 1, (batch, trial, 1), generator=gen)
    lengths[0, 0] = 1  # a one-token response
    lengths[-1, -1] = pos  # a full-length one
    mask = (torch.arange(pos) < lengths).float()
    old = torch.where(mask.bool(), old, old + 2.0)  # padding with wildly different log-probs: must not count
    return lp, old, adv, mask

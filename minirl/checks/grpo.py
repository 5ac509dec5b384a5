"""Checks for notebook 05 (GRPO and its variants), named after the function they check.

    check_group_advantages(fn)      fn(rewards, normalize=True, eps=1e-6) -> advantages[batch, trial]
    check_kl_estimate(fn)           fn(log_probs, ref_log_probs, estimator) -> per-token KL estimates
    check_masked_aggregate(fn)      fn(per_token, mask, aggregation, max_length=None) -> scalar
    check_clipped_policy_loss(fn)   fn(log_probs, old_log_probs, advantages, mask, clip_eps_low, clip_eps_high,
                                       ratio_level) -> scalar (sequence_mean aggregation)

Expected values are hand-computed constants plus the references (``minirl.compute_deltas``,
``minirl.kl_estimate``, ``minirl.aggregate``, ``minirl.policy_loss``) on seeded random inputs.
``reference_group_advantages`` and ``reference_clipped_policy_loss`` are the references with the
exercises' signatures, for the notebook's fallback cells.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from minirl.advantages import compute_deltas as _ref_compute_deltas
from minirl.checks._core import Check, exercise_check
from minirl.losses import aggregate as _ref_aggregate
from minirl.losses import kl_estimate as _ref_kl_estimate
from minirl.losses import policy_loss as _ref_policy_loss

__all__ = [
    "check_clipped_policy_loss",
    "check_group_advantages",
    "check_kl_estimate",
    "check_masked_aggregate",
    "reference_clipped_policy_loss",
    "reference_group_advantages",
]

SEED = 5005


def _generator(offset: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(SEED + offset)


def reference_group_advantages(rewards: torch.Tensor, normalize: bool = True, eps: float = 1e-6) -> torch.Tensor:
    """GRPO's group advantage (r − mean) / (std + eps), or Dr GRPO's r − mean with ``normalize=False``."""
    return _ref_compute_deltas(rewards, "normalized_rewards" if normalize else "centered_rewards", eps)


def reference_clipped_policy_loss(log_probs, old_log_probs, advantages, mask, clip_eps_low=0.2, clip_eps_high=None,
                                  ratio_level="token") -> torch.Tensor:
    """``minirl.policy_loss(...)[0]`` with the sequence_mean aggregation and no KL term."""
    loss, _ = _ref_policy_loss(log_probs, old_log_probs, advantages, mask, clip_eps_low=clip_eps_low,
                               clip_eps_high=clip_eps_high, ratio_level=ratio_level, aggregation="sequence_mean")
    return loss


def _scalar(c: Check, got, what: str) -> torch.Tensor:
    got = c.tensor(got, what)
    c.expect(got.dim() == 0, f"{what}: should be a single number (a 0-dim tensor); got shape {list(got.shape)}")
    return got


# ---------------------------------------------------------------------------------------------
# group_advantages
# ---------------------------------------------------------------------------------------------

# [batch 3, trial 4]; group means 3, 1, 2; unbiased stds sqrt(14/3), 2, 0 (the last group all equal)
ADV_REWARDS = [[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 4.0, 0.0], [2.0, 2.0, 2.0, 2.0]]
ADV_CENTERED = [[-2.0, -1.0, 0.0, 3.0], [-1.0, -1.0, 3.0, -1.0], [0.0, 0.0, 0.0, 0.0]]
_S = math.sqrt(14 / 3)
ADV_NORMALIZED = [[-2 / _S, -1 / _S, 0.0, 3 / _S], [-0.5, -0.5, 1.5, -0.5], [0.0, 0.0, 0.0, 0.0]]
_ADV_RTOL, _ADV_ATOL = 1e-3, 1e-4


def _advantage_mistakes(r: torch.Tensor, normalize: bool, eps: float) -> list[tuple[torch.Tensor | None, str]]:
    centered = r - r.mean(dim=1, keepdim=True)
    std = r.std(dim=1, keepdim=True)
    centring = [
        (r - r.mean(dim=0, keepdim=True), "you subtracted the mean over the batch (dim=0); each prompt's group is a "
                                          "row: subtract rewards.mean(dim=1, keepdim=True)"),
        (r - r.mean(), "you subtracted the mean of the whole batch; subtract each group's own mean, "
                       "rewards.mean(dim=1, keepdim=True)"),
        (r, "you returned the raw rewards: subtract each group's mean first"),
    ]
    if not normalize:
        return [
            (centered / (std + eps), "normalize=False (Dr GRPO) must NOT divide by the std: return r − mean only"),
            *centring,
        ]
    return [
        (centered, "normalize=True (GRPO) also divides by (std + eps); you returned the centred rewards"),
        (centered / (r.std(dim=1, keepdim=True, unbiased=False) + eps),
         "you used the population std (unbiased=False); GRPO and minirl use torch.std's default, the unbiased std "
         "(dividing by trial − 1)"),
        (centered / (r.std(dim=0, keepdim=True) + eps), "std over the wrong axis: take it within each group, "
                                                        "rewards.std(dim=1, keepdim=True), not over the batch"),
        (centered / (r.std() + eps), "you divided by the std of the whole batch; divide by each group's own std"),
        (centered / (std**2 + eps), "you divided by the variance; divide by the standard deviation"),
        (centered / (std + 1e-6), f"your function ignores the eps argument (called with eps = {eps})"),
        (r.sub(r.mean(dim=0, keepdim=True)) / (r.std(dim=0, keepdim=True) + eps),
         "mean and std over the batch (dim=0): both must be per group, over the trial axis (dim=1)"),
        *centring,
        *((None if wrong is r else wrong / (std + eps), message) for wrong, message in centring),
    ]


def _check_advantages(c: Check, fn: Callable, r: torch.Tensor, normalize: bool, eps: float | None,
                      want: torch.Tensor) -> None:
    given = r.clone()
    kwargs = {"normalize": normalize} if eps is None else {"normalize": normalize, "eps": eps}
    shown = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    got = c.call(fn, given, call=shown, **kwargs)
    what = f"advantages ({shown})"
    c.expect(torch.equal(given, r), f"{what}: your function changed the rewards tensor in place; build a new tensor")
    got = c.shape(got, list(r.shape), "batch, trial", what,
                  {(r.shape[0], 1): "one advantage per response, not per group", (r.shape[0],): "keep the trial axis"})
    equal_groups = (r == r[:, :1]).all(dim=1)
    bad = ~torch.isfinite(got.detach()[equal_groups])
    if bad.any():
        c.fail(f"{what}: a group whose rewards are all equal must give zeros, got {got[equal_groups][bad][0].item()} "
               "— its std is 0: divide by (std + eps)")
    c.expect(bool(torch.isfinite(got).all()), f"{what}: non-finite values {got.tolist()}")
    c.close(got, want, what, _advantage_mistakes(r, normalize, 1e-6 if eps is None else eps),
            rtol=_ADV_RTOL, atol=_ADV_ATOL)


@exercise_check("group_advantages")
def check_group_advantages(c: Check, fn: Callable) -> None:
    """Check ``group_advantages(rewards, normalize=True, eps=1e-6) -> [batch, trial]``: per group (row),
    (r − mean) / (unbiased std + eps), or r − mean with ``normalize=False``. Catches mean or std over
    the batch, no eps (NaN on an all-equal group), the population std, the variance, eps ignored,
    normalize ignored, in-place edits."""
    r = torch.tensor(ADV_REWARDS)
    _check_advantages(c, fn, r, True, None, torch.tensor(ADV_NORMALIZED))
    _check_advantages(c, fn, r, False, None, torch.tensor(ADV_CENTERED))
    r = torch.randint(0, 2, (5, 5), generator=_generator(1)).float()  # square, binary rewards, one equal group
    r[3] = 1.0
    for normalize in (True, False):
        _check_advantages(c, fn, r, normalize, None, reference_group_advantages(r, normalize))
    r = torch.rand(3, 6, generator=_generator(2))
    _check_advantages(c, fn, r, True, 0.5, reference_group_advantages(r, True, 0.5))


# ---------------------------------------------------------------------------------------------
# kl_estimate
# ---------------------------------------------------------------------------------------------

# log-ratios ℓ = log π_ref − log π_θ = [0.5, −0.5, 0, 1]
KL_LOG_PROBS = [[-1.0, -0.5, -2.0, -3.0]]
KL_REF_LOG_PROBS = [[-0.5, -1.0, -2.0, -2.0]]
KL_EXPECTED = {
    "k1": [[-0.5, 0.5, 0.0, -1.0]],                                       # −ℓ
    "k2": [[0.125, 0.125, 0.0, 0.5]],                                     # ℓ² / 2
    "k3": [[math.exp(0.5) - 1.5, math.exp(-0.5) - 0.5, 0.0, math.e - 2]],  # e^ℓ − ℓ − 1
}


def _kl_mistakes(lp: torch.Tensor, ref: torch.Tensor, estimator: str) -> list[tuple[torch.Tensor, str]]:
    ell = ref - lp
    if estimator == "k1":
        return [(ell, "k1 has the wrong sign: with ℓ = log π_ref − log π_θ, k1 = −ℓ = log π_θ − log π_ref"),
                (ell.abs(), "k1 = −ℓ is NOT made non-negative: it is unbiased precisely because it can be negative"),
                (0.5 * ell**2, "this is k2 (ℓ²/2); k1 = −ℓ = log π_θ − log π_ref"),
                (ell.exp() - ell - 1, "this is k3 (exp(ℓ) − ℓ − 1); k1 = −ℓ = log π_θ − log π_ref")]
    if estimator == "k2":
        return [(ell**2, "k2 is ℓ² / 2: you forgot the 1/2"),
                (-ell, "this is k1; k2 = ℓ² / 2"),
                (ell.exp() - ell - 1, "this is k3; k2 = ℓ² / 2")]
    return [
        ((-ell).exp() + ell - 1, "k3 uses ℓ = log π_ref − log π_θ (the ratio π_ref / π_θ); you have the log-ratio "
                                 "the wrong way round (log π_θ − log π_ref)"),
        (ell.exp() - ell, "k3 = exp(ℓ) − ℓ − 1: you forgot the −1"),
        (ell.exp() + ell - 1, "k3 = exp(ℓ) − ℓ − 1: the ℓ term has the wrong sign"),
        (ell.exp() - 1, "k3 = exp(ℓ) − ℓ − 1: you forgot the −ℓ term (exp(ℓ) − 1 alone is unbiased but can be "
                        "negative)"),
        (0.5 * ell**2, "this is k2; k3 = exp(ℓ) − ℓ − 1"),
        (-ell, "this is k1; k3 = exp(ℓ) − ℓ − 1"),
    ]


def _check_kl_case(c: Check, fn: Callable, lp: torch.Tensor, ref: torch.Tensor, estimator: str,
                   want: torch.Tensor) -> None:
    lp_in = lp.clone().requires_grad_(True)
    with c.mode(estimator):
        got = c.call(fn, lp_in, ref.clone(), estimator, call=f"estimator {estimator!r}")
        what = f"{estimator} estimate"
        got = c.shape(got, list(lp.shape), "same as log_probs", what,
                      {(): "return one estimate per token (same shape as log_probs), do not average"})
        c.close(got, want, what, _kl_mistakes(lp, ref, estimator))
        c.expect(got.requires_grad, f"{what}: no gradient flows to log_probs — no .detach(), .item() or "
                                    "torch.no_grad() (the KL penalty is part of the loss)")


@exercise_check("kl_estimate")
def check_kl_estimate(c: Check, fn: Callable) -> None:
    """Check ``kl_estimate(log_probs, ref_log_probs, estimator)`` for "k1", "k2", "k3", per token, with
    ℓ = log π_ref − log π_θ: k1 = −ℓ, k2 = ℓ²/2, k3 = exp(ℓ) − ℓ − 1. Catches the log-ratio the wrong
    way round, k2 without the 1/2, k3 without the −1 or the −ℓ, a wrong k1 sign, an averaged result."""
    lp, ref = torch.tensor(KL_LOG_PROBS), torch.tensor(KL_REF_LOG_PROBS)
    with c.worked_example():
        for estimator, values in KL_EXPECTED.items():
            _check_kl_case(c, fn, lp, ref, estimator, torch.tensor(values))
    gen = _generator(3)
    lp = torch.randn(2, 3, 4, 5, generator=gen).log_softmax(-1)[..., 0]   # [2, 3, 4]
    ref = lp + 0.7 * torch.randn(2, 3, 4, generator=gen)
    for estimator in ("k1", "k2", "k3"):
        _check_kl_case(c, fn, lp, ref, estimator, _ref_kl_estimate(lp, ref, estimator))


# ---------------------------------------------------------------------------------------------
# masked_aggregate
# ---------------------------------------------------------------------------------------------

# [batch 1, trial 2, pos 5]: response A has 2 real tokens (values 4, 2), response B has 5 (all 1);
# the padding holds 9s that must not count.
AGG_PER_TOKEN = [[[4.0, 2.0, 9.0, 9.0, 9.0], [1.0, 1.0, 1.0, 1.0, 1.0]]]
AGG_MASK = [[[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0]]]
AGG_EXPECTED = {
    ("sequence_mean", None): 2.0,      # (6/2 + 5/5) / 2
    ("token_mean", None): 11.0 / 7.0,  # (6 + 5) / 7 real tokens
    ("constant", None): 1.1,           # (6 + 5) / (2 responses · 5 positions)
    ("constant", 8): 11.0 / 16.0,      # (6 + 5) / (2 · max_length 8)
}
# No response fills the position axis (real lengths 2 and 3 of 5): "constant" still divides by 2 · 5.
AGG_SHORT_PER_TOKEN = [[[4.0, 2.0, 9.0, 9.0, 9.0], [1.0, 2.0, 3.0, 9.0, 9.0]]]
AGG_SHORT_MASK = [[[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0]]]
AGG_SHORT_CONSTANT = 12.0 / 10.0      # (6 + 6) / (2 responses · 5 positions)


def _aggregate_mistakes(x: torch.Tensor, m: torch.Tensor, aggregation: str,
                        max_length: int | None) -> list[tuple[torch.Tensor, str]]:
    masked = x * m
    n_seq = x.shape[0] * x.shape[1]
    lengths = m.sum(-1).clamp(min=1)
    seq_mean = (masked.sum(-1) / lengths).mean()
    tok_mean = masked.sum() / m.sum().clamp(min=1)
    pos = x.shape[-1]
    common = [
        (x.mean(), "you ignored the mask: multiply by it so padding positions count 0, and count real tokens only"),
        (_ref_aggregate(x, torch.ones_like(m), aggregation, max_length),
         "you ignored the mask: padding positions must not count"),
        (x.sum(-1).div(lengths).mean(), "the padding values were summed: multiply per_token by the mask first"),
        (masked.sum(1).div(m.sum(1).clamp(min=1)).mean(), "you reduced over the wrong axis (dim=1, the trial axis): "
                                                          "a response's tokens lie along the last axis, dim=-1"),
    ]
    if aggregation == "sequence_mean":
        return [
            (masked.sum(-1).div(pos).mean(), "you divided each response by the full length (pos); divide by its "
                                             "REAL length, mask.sum(-1)"),
            (tok_mean, "this is token_mean; sequence_mean first averages each response over its own real tokens, "
                       "then averages the responses"),
            *common,
        ]
    if aggregation == "token_mean":
        return [
            (seq_mean, "you averaged per response first (that is sequence_mean); token_mean divides the sum over all "
                       "real tokens by their number: (per_token · mask).sum() / mask.sum()"),
            (masked.sum() / x.numel(), "you divided by all positions; divide by the number of REAL tokens, mask.sum()"),
            *common,
        ]
    return [
        (seq_mean, "constant must not use the real lengths: divide the masked sum by N_responses · max_length "
                   "(you divided each response by its real length)"),
        (tok_mean, "constant divides by N_responses · max_length, not by the number of real tokens"),
        (masked.sum() / (n_seq * pos), f"you ignored max_length (called with max_length={max_length}); divide by "
                                       "N_responses · max_length"),
        (masked.sum() / pos, "divide by N_responses · max_length: you left out the number of responses"),
        (masked.sum() / (n_seq * m.sum(-1).max()), "you divided by the longest REAL response (mask.sum(-1).max()); "
                                                   "constant divides by the position axis (pos), or max_length when "
                                                   "given, whatever the real lengths are"),
        *common,
    ]


_AGGREGATE_HINTS = [
    ("size of tensor", "a reduction dropped an axis the next step needs: mask.sum(-1) is [batch, trial], so divide "
                       "the per-response sums masked.sum(-1) by it (or keep the axis with keepdim=True)"),
]


def _check_aggregate_case(c: Check, fn: Callable, x: torch.Tensor, m: torch.Tensor, aggregation: str,
                          max_length: int | None, want: torch.Tensor) -> None:
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
            c.fail(f"{what}: got {got.item()} — a response with no real token (mask all 0) must contribute 0, not "
                   "NaN: clamp each length to at least 1, mask.sum(-1).clamp(min=1)")
        c.close(got, want, what, _aggregate_mistakes(x, m, aggregation, max_length))
        c.expect(got.requires_grad, f"{what}: no gradient flows — keep it a tensor computed from per_token")


@exercise_check("masked_aggregate")
def check_masked_aggregate(c: Check, fn: Callable) -> None:
    """Check ``masked_aggregate(per_token, mask, aggregation, max_length=None) -> scalar`` for
    "sequence_mean", "token_mean", "constant" against ``minirl.aggregate``. Catches the mask ignored,
    sequence_mean divided by the full instead of the real length, token_mean averaged per response
    first, constant using the real lengths, the longest real length or ignoring max_length, NaN on an
    all-padding response."""
    x, m = torch.tensor(AGG_PER_TOKEN), torch.tensor(AGG_MASK)
    with c.worked_example():
        for (aggregation, max_length), value in AGG_EXPECTED.items():
            _check_aggregate_case(c, fn, x, m, aggregation, max_length, torch.tensor(value))
        _check_aggregate_case(c, fn, torch.tensor(AGG_SHORT_PER_TOKEN), torch.tensor(AGG_SHORT_MASK), "constant",
                              None, torch.tensor(AGG_SHORT_CONSTANT))
    gen = _generator(4)
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
# clipped_policy_loss
# ---------------------------------------------------------------------------------------------


def _loss_variant(lp, old, adv, mask, lo, hi, level, *, seq_ratio="mean_log", mask_in_ratio=True, combine="min",
                  sign=-1.0, mask_in_agg=True, clip="both"):
    """The loss with one knob turned (the knobs mirror the usual mistakes)."""
    m_ratio = mask if mask_in_ratio else torch.ones_like(mask)
    log_ratio = (lp - old) * m_ratio
    if level == "sequence":
        n = m_ratio.sum(-1, keepdim=True).clamp(min=1)
        seq = {"mean_log": lambda: (log_ratio.sum(-1, keepdim=True) / n).exp(),
               "product": lambda: log_ratio.sum(-1, keepdim=True).exp(),
               "mean_ratio": lambda: ((lp - old).exp() * m_ratio).sum(-1, keepdim=True) / n}[seq_ratio]()
        ratio = seq.expand_as(lp)
    else:
        ratio = log_ratio.exp()
    a = adv[..., None]
    high = {"both": hi, "symmetric": lo}.get(clip, hi)
    low = lo if clip != "high_both" else hi
    clipped = ratio.clamp(1 - low, 1 + high) * a
    per_token = {"min": torch.minimum(ratio * a, clipped), "max": torch.maximum(ratio * a, clipped)}[combine]
    agg_mask = mask if mask_in_agg else torch.ones_like(mask)
    return sign * _ref_aggregate(per_token, agg_mask, "sequence_mean")


def _policy_loss_mistakes(lp, old, adv, mask, lo, hi, level) -> list[tuple[torch.Tensor, str]]:
    def wrong(**kw):
        return _loss_variant(lp, old, adv, mask, lo, hi, level, **kw)

    other_level = "token" if level == "sequence" else "sequence"
    mistakes = [
        (wrong(sign=1.0), "wrong sign: the loss to MINIMISE is −min(ρA, clip(ρ)A), averaged"),
        (wrong(combine="max"), "use min, not max: the clipped objective is the pessimistic (lower) one"),
        (wrong(clip="symmetric"), f"your clip is symmetric: the upper bound is 1 + clip_eps_high "
                                  f"(= {1 + hi:g} here), the lower 1 − clip_eps_low (= {1 - lo:g})"),
        (wrong(clip="high_both"), f"the lower bound is 1 − clip_eps_low (= {1 - lo:g}), not 1 − clip_eps_high"),
        (wrong(mask_in_agg=False), "the padding counted in the average: average each response over its real tokens "
                                   "(mask), then over responses"),
        (_loss_variant(lp, old, adv, mask, lo, hi, other_level),
         f"ratio_level={level!r} was ignored: you computed the {other_level}-level ratio"),
    ]
    if level == "sequence":
        mistakes = [
            (wrong(seq_ratio="product"), "the sequence ratio is a product of token ratios exp(Σ log ρ_t): GSPO "
                                         "normalises by length, exp(mean over real tokens of log ρ_t)"),
            (wrong(seq_ratio="mean_ratio"), "you averaged the token ratios; the sequence ratio is the exp of the MEAN "
                                            "LOG-ratio (a geometric mean), exp(Σ m_t log ρ_t / Σ m_t)"),
            (wrong(mask_in_ratio=False), "the sequence ratio must average the log-ratio over REAL tokens only: "
                                         "mask the log-ratios and divide by mask.sum(-1)"),
            (wrong(seq_ratio="product", mask_in_ratio=False), "the sequence ratio is exp of the MEAN log-ratio over "
                                                              "real tokens; yours sums over all positions"),
            *mistakes,
        ]
    return mistakes


# PyTorch's own errors for the usual slips, and what most likely caused them
_POLICY_LOSS_HINTS = [
    ("expanded size", "keep the position axis when you average the log-ratio over a response: "
                      ".sum(-1, keepdim=True) / mask.sum(-1, keepdim=True), then .expand_as(log_probs)"),
    ("size of tensor", "advantages are [batch, trial], one per response: advantages[..., None] ([batch, trial, 1]) "
                       "broadcasts over the response's tokens [batch, trial, pos]"),
]


def _check_policy_loss_case(c: Check, fn: Callable, lp, old, adv, mask, lo, hi, level) -> None:
    lp_in = lp.clone().requires_grad_(True)
    shown = f"ratio_level={level!r}, clip_eps_low={lo}, clip_eps_high={hi}"
    got = c.call(fn, lp_in, old.clone(), adv.clone(), mask.clone(), lo, hi, level, call=shown,
                 hints=_POLICY_LOSS_HINTS)
    what = f"loss ({shown})"
    got = _scalar(c, got, what)
    want = reference_clipped_policy_loss(lp, old, adv, mask, lo, hi, level).detach()
    c.close(got, want, what, _policy_loss_mistakes(lp, old, adv, mask, lo, hi, level))
    c.expect(got.requires_grad, f"{what}: no gradient flows to log_probs — keep the loss a tensor computed from them")


def _loss_inputs(offset: int, batch: int, trial: int, pos: int, spread: float):
    gen = _generator(offset)
    lp = torch.randn(batch, trial, pos, 6, generator=gen).log_softmax(-1)[..., 0]
    old = lp + spread * torch.randn(batch, trial, pos, generator=gen)  # ratios around the clip range
    adv = torch.randn(batch, trial, generator=gen)
    lengths = torch.randint(1, pos + 1, (batch, trial, 1), generator=gen)
    lengths[0, 0] = 1           # a one-token response
    lengths[-1, -1] = pos       # a full-length one
    mask = (torch.arange(pos) < lengths).float()
    old = torch.where(mask.bool(), old, old + 2.0)  # padding with wildly different log-probs: must not count
    return lp, old, adv, mask


@exercise_check("clipped_policy_loss")
def check_clipped_policy_loss(c: Check, fn: Callable) -> None:
    """Check ``clipped_policy_loss(log_probs, old_log_probs, advantages, mask, clip_eps_low, clip_eps_high,
    ratio_level)`` (sequence_mean aggregation) against ``minirl.policy_loss``. Catches a symmetric clip
    that ignores clip_eps_high, the sequence ratio as a product or as a mean of token ratios, the mask
    ignored in the sequence ratio or in the average, min and max swapped, a flipped sign,
    ratio_level ignored."""
    lp, old, adv, mask = _loss_inputs(5, batch=2, trial=3, pos=4, spread=0.3)
    _check_policy_loss_case(c, fn, lp, old, adv, mask, 0.2, 0.28, "token")
    _check_policy_loss_case(c, fn, lp, old, adv, mask, 0.1, 0.15, "sequence")
    lp, old, adv, mask = _loss_inputs(6, batch=3, trial=4, pos=5, spread=0.15)
    _check_policy_loss_case(c, fn, lp, old, adv, mask, 0.2, 0.2, "token")
    _check_policy_loss_case(c, fn, lp, old, adv, mask, 0.05, 0.08, "sequence")

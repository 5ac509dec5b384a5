"""Checks for notebook 04 (the policy-gradient ladder), named after the function they check.

    check_compute_deltas(fn)                  fn(rewards, mode) -> deltas[batch, trial]
    check_compute_loss(fn)                    fn(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2) -> loss

Expected values are hand-computed constants, plus the references (``minirl.compute_deltas``,
``minirl.compute_loss``) on seeded random inputs. ``compute_deltas`` accepts the unbiased standard
deviation only (``torch.std``'s default, dividing by trial − 1), as minirl and GRPO use; the
population std (dividing by trial) is named as a mistake. Any small epsilon (≤ 1e-3) is accepted.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from minirl.advantages import compute_deltas as _ref_compute_deltas
from minirl.checks._core import Check, exercise_check, seeded_generator, tensors_close
from minirl.losses import compute_loss as _ref_compute_loss

__all__ = [
    "check_compute_deltas",
    "check_compute_loss",
]

SEED = 1234


# ---------------------------------------------------------------------------------------------
# compute_deltas
# ---------------------------------------------------------------------------------------------

# [batch 3, trial 4]; group means 3, 1, 2; unbiased stds sqrt(14/3), 2, 0 (the last group is all equal)
DELTA_REWARDS = [[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 4.0, 0.0], [2.0, 2.0, 2.0, 2.0]]
DELTA_CENTERED = [[-2.0, -1.0, 0.0, 3.0], [-1.0, -1.0, 3.0, -1.0], [0.0, 0.0, 0.0, 0.0]]
_S = math.sqrt(14 / 3)
DELTA_NORMALIZED = [[-2 / _S, -1 / _S, 0.0, 3 / _S], [-0.5, -0.5, 1.5, -0.5], [0.0, 0.0, 0.0, 0.0]]
# The deltas' tolerance is looser than the usual RTOL on purpose: a learner's own epsilon ε (any small one is
# right) moves (r − mean) / (std + ε) by a relative ε / std, up to 2ε here (every non-equal group of these cases
# has std ≥ 0.5), so ε ≤ 1e-3 shifts the deltas by ≤ 2e-3 of their scale. The named mistakes differ by far more
# (the population std by 15% on groups of 4).
_DELTA_RTOL = 3e-3


def _delta_mistakes(r: torch.Tensor, mode: str) -> list[tuple[torch.Tensor | None, str]]:
    eps = 1e-6
    group_mean = r.mean(dim=1, keepdim=True)
    centered = r - group_mean
    std = r.std(dim=1, keepdim=True)
    square = r.shape[0] == r.shape[1]
    keepdim = (r - r.mean(dim=1)) if square else None
    trial = r.shape[1]
    leave_one_out = (r - (r.sum(dim=1, keepdim=True) - r) / (trial - 1)) if trial > 1 else None
    centring = [
        (
            -centered,
            "wrong sign: you computed mean − r; the delta is r − mean, positive for a response better than its group",
        ),
        (
            leave_one_out,
            "you subtracted the leave-one-out mean (the mean of the OTHER responses, RLOO's baseline); "
            "the delta subtracts the mean of the whole group, r_i included: "
            "rewards.mean(dim=1, keepdim=True)",
        ),
        (
            r - r.mean(dim=0, keepdim=True),
            "you subtracted the mean over the batch (dim=0); subtract each group's own "
            "mean, over the trial axis: rewards.mean(dim=1, keepdim=True)",
        ),
        (
            r - r.mean(),
            "you subtracted the mean of the whole batch; subtract each group's own mean: "
            "rewards.mean(dim=1, keepdim=True)",
        ),
        (
            keepdim,
            "use keepdim=True: rewards.mean(dim=1, keepdim=True); without it the means broadcast along the "
            "trial axis instead of the batch axis",
        ),
    ]
    if mode == "centered_rewards":
        return centring
    return [
        (
            centered / (r.std(dim=1, keepdim=True, unbiased=False) + eps),
            "you used the population std (unbiased=False, dividing by trial); minirl and GRPO use the unbiased "
            "std, torch.std's default (dividing by trial − 1)",
        ),
        (
            centered / (r.std(dim=0, keepdim=True) + eps),
            "std over the wrong axis: take it over each group (dim=1, keepdim=True), not over the batch (dim=0)",
        ),
        (
            centered / (r.std() + eps),
            "you divided by the std of the whole batch; divide by each group's own std: "
            "rewards.std(dim=1, keepdim=True)",
        ),
        (centered / (std**2 + eps), "you divided by the variance; divide by the standard deviation"),
        (
            centered / (r.amax(dim=1, keepdim=True) - r.amin(dim=1, keepdim=True) + eps),
            "you divided by the range (max − min); divide by the standard deviation, rewards.std(dim=1, keepdim=True)",
        ),
        (r / (std + eps), "you divided the raw rewards by the std: subtract the group mean first"),
        (centered, "these are the centred rewards: for 'normalized_rewards' also divide by (std + eps)"),
        *centring,
        *((None if wrong is None else wrong / (std + eps), message) for wrong, message in centring),
    ]


def _check_group_sums(c: Check, got: torch.Tensor, r: torch.Tensor, mode: str) -> None:
    """Centred deltas sum to 0 in every group; name the mistake if they do not."""
    sums = got.detach().double().sum(dim=1)
    # a sum's rounding error scales with its terms, not with the (zero) result: the scale is Σ |Δ| of a group
    if tensors_close(sums, torch.zeros_like(sums), scale=float(got.detach().double().abs().sum(dim=1).max())):
        c.passed += 1
        return
    for wrong, message in _delta_mistakes(r, mode):
        if wrong is not None and tensors_close(got, wrong, _DELTA_RTOL):
            c.fail(f"{mode}: {message}", named=True)
    shown = "[" + ", ".join(f"{s:.2f}" for s in sums.tolist()) + "]"
    c.fail(
        f"{mode}: each group's centred rewards should sum to 0; yours sum to {shown} — "
        "did you subtract the group mean, rewards.mean(dim=1, keepdim=True)?"
    )


def _run_deltas(c: Check, fn: Callable, r: torch.Tensor, mode: str) -> torch.Tensor:
    given = r.clone()
    got = c.call(
        fn,
        given,
        mode,
        call=f"mode {mode!r}",
        hints=[("size of tensor", "keep the group axis when you reduce: rewards.mean(dim=1, keepdim=True)")],
    )
    c.expect(
        torch.equal(given, r),
        f"{mode}: your function changed the rewards tensor in place; build a new "
        "tensor (rewards - mean, not rewards -= mean)",
    )
    batch, trial = r.shape
    return c.shape(
        got,
        [batch, trial],
        "batch, trial",
        f"{mode} deltas",
        {(batch, 1): "one delta per response, not per group", (batch,): "one delta per response"},
    )


def _big_epsilon(got: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor | None, str]:
    """The mistake of a too large epsilon: the ε that ``got`` implies at its largest centred reward, and the deltas
    (r − mean) / (std + ε) that ε would give (None when it is small enough to pass, or not one number)."""
    centered = r - r.mean(dim=1, keepdim=True)
    std = r.std(dim=1, keepdim=True)
    at = int(centered.abs().flatten().argmax())
    value = float(got.detach().flatten()[at])
    if value == 0.0 or not math.isfinite(value):
        return None, ""
    eps = float(centered.flatten()[at]) / value - float(std.expand_as(centered).flatten()[at])
    if eps <= 1e-3:
        return None, ""
    return (
        centered / (std + eps),
        f"your deltas are (r − mean) / (std + ε) with a big ε ≈ {eps:.2g}: ε only keeps "
        "an all-equal group (std = 0) from dividing by zero, so keep it small, like 1e-6",
    )


def _check_deltas_case(c: Check, fn: Callable, r: torch.Tensor, want: dict[str, torch.Tensor]) -> None:
    with c.mode("rewards"):
        got = _run_deltas(c, fn, r, "rewards")
        c.close(
            got,
            want["rewards"],
            "mode 'rewards'",
            [(want["centered_rewards"], "returns the rewards unchanged (Δ = r); yours are centred")],
        )
    with c.mode("centered_rewards"):
        got = _run_deltas(c, fn, r, "centered_rewards")
        _check_group_sums(c, got, r, "centered_rewards")
        c.close(
            got, want["centered_rewards"], "centered_rewards", _delta_mistakes(r, "centered_rewards"), rtol=_DELTA_RTOL
        )
    with c.mode("normalized_rewards"):
        got = _run_deltas(c, fn, r, "normalized_rewards")
        equal_groups = (r == r[:, :1]).all(dim=1)
        bad = ~torch.isfinite(got[equal_groups])
        if bad.any():
            value = got[equal_groups][bad][0].item()
            c.fail(
                f"normalized_rewards: a group whose rewards are all equal must give zeros, got {value} — "
                "add a small epsilon to the std: (r − mean) / (std + 1e-6)"
            )
        c.expect(bool(torch.isfinite(got).all()), f"normalized_rewards: got non-finite values {got.tolist()}")
        _check_group_sums(c, got, r, "normalized_rewards")
        c.close(
            got,
            want["normalized_rewards"],
            "normalized_rewards",
            [*_delta_mistakes(r, "normalized_rewards"), _big_epsilon(got, r)],
            rtol=_DELTA_RTOL,
        )


@exercise_check("compute_deltas")
def check_compute_deltas(c: Check, fn: Callable) -> None:
    """Check ``compute_deltas(rewards, mode) -> deltas[batch, trial]`` for the modes "rewards",
    "centered_rewards", "normalized_rewards" (unbiased std + a small epsilon). Catches: no group
    mean subtracted, mean or std over the wrong axis or over everything, keepdim forgotten, no
    epsilon (NaN on an all-equal group), a big epsilon, the population std, the variance, the range,
    in-place edits."""
    r = torch.tensor(DELTA_REWARDS)
    want = {
        "rewards": r,
        "centered_rewards": torch.tensor(DELTA_CENTERED),
        "normalized_rewards": torch.tensor(DELTA_NORMALIZED),
    }
    with c.worked_example():
        _check_deltas_case(c, fn, r, want)
    # a square [4, 4] batch (so a forgotten keepdim broadcasts silently) with one all-equal group
    r = torch.randint(0, 4, (4, 4), generator=seeded_generator(SEED, 5)).float()
    r[2] = 1.0
    want = {mode: _ref_compute_deltas(r, mode) for mode in ("rewards", "centered_rewards", "normalized_rewards")}
    _check_deltas_case(c, fn, r, want)


# ---------------------------------------------------------------------------------------------
# compute_loss
# ---------------------------------------------------------------------------------------------

# The probe [batch 1, trial 2, pos 2]: ratios ρ = π/π_old = [[1.6, 0.7], [0.5, 1.3]], deltas [1, −0.5].
PROBE_LOG_PROBS = [[[-1.0, -2.0], [-0.5, -1.5]]]
PROBE_RATIOS = [[[1.6, 0.7], [0.5, 1.3]]]
PROBE_DELTAS = [[1.0, -0.5]]
PROBE_LOSS = {
    # −mean(log π · Δ) = −(1·(−1 − 2) − 0.5·(−0.5 − 1.5)) / 4
    ("naive", 0.2): 0.5,
    # −mean(ρ Δ) = −((1.6 + 0.7) − 0.5·(0.5 + 1.3)) / 4
    ("unclipped", 0.2): -0.35,
    # ε = 0.2: min(ρΔ, clip(ρ)Δ) = 1.2, 0.7 | −0.4, −0.65 → −(0.85) / 4
    ("clipped", 0.2): -0.2125,
    # ε = 0.3: 1.3, 0.7 | −0.35, −0.65 → −(1.0) / 4
    ("clipped", 0.3): -0.25,
}


def _surrogate(lp, old, d, mode, eps, *, ratio="exp", combine="min", expand=True, reduce="mean", sign=-1.0):
    """The loss with one knob turned: how the ratio is formed, how the clip is combined, ..."""
    d = d[..., None] if expand else d
    if mode == "naive":
        per_token = lp * d
    else:
        rho = {
            "exp": torch.exp(lp - old),
            "quotient": lp / old,
            "log": lp - old,
            "inverse": torch.exp(old - lp),
            "logprob": lp,
        }[ratio]
        clipped = rho.clamp(1 - eps, 1 + eps) * d
        per_token = {
            "min": lambda: torch.minimum(rho * d, clipped),
            "max": lambda: torch.maximum(rho * d, clipped),
            "clip_only": lambda: clipped,
            "none": lambda: rho * d,
            "upper_only": lambda: torch.minimum(rho * d, rho.clamp(max=1 + eps) * d),
            "eps_low": lambda: torch.minimum(rho * d, rho.clamp(eps, 1 + eps) * d),
            "clip_product": lambda: torch.minimum(rho * d, (rho * d).clamp(1 - eps, 1 + eps)),
            "min_ratios": lambda: torch.minimum(rho, rho.clamp(1 - eps, 1 + eps)) * d,
        }[combine if mode == "clipped" else "none"]()
    total = {"mean": per_token.mean(), "sum": per_token.sum(), "sum_pos": per_token.sum(-1).mean()}[reduce]
    return sign * total


def _loss_mistakes(lp, old, d, mode, eps) -> list[tuple[torch.Tensor | None, str]]:
    def wrong(**kw):
        try:
            return _surrogate(lp, old, d, mode, eps, **kw)
        except RuntimeError:  # a variant that does not even broadcast here
            return None

    common = [
        (wrong(sign=1.0), "your loss has the wrong sign: we minimise the NEGATIVE of the objective, L = −mean(…)"),
        (wrong(reduce="sum"), "you summed; take the mean over batch, trial and pos"),
        (wrong(reduce="sum_pos"), "you summed over positions; take the mean over batch, trial AND pos"),
        (
            wrong(expand=False),
            "each token must be multiplied by its own response's delta: use deltas[..., None] "
            "(shape [batch, trial, 1]); plain deltas broadcast along positions",
        ),
    ]
    if mode == "naive":
        return [*common, (-(lp.exp() * d[..., None]).mean(), "use the log-probabilities, not exp(log_probs)")]
    ratios = [
        (wrong(ratio="quotient"), "the ratio is exp(log π − log π_old), not the quotient log π / log π_old"),
        (wrong(ratio="log"), "the ratio is exp(log π − log π_old): you forgot the exp"),
        (wrong(ratio="inverse"), "the ratio is upside down: ρ = π_θ / π_old = exp(log_probs − old_log_probs)"),
        (wrong(ratio="logprob"), f"mode {mode!r} multiplies the ratio ρ = exp(log π − log π_old), not log π"),
    ]
    if mode == "unclipped":
        return [*common, *ratios]
    return [
        *common,
        (
            wrong(combine="clip_only"),
            "take the min of the unclipped and the clipped terms, "
            "−mean(min(ρΔ, clip(ρ, 1 − ε, 1 + ε)Δ)); clip(ρ)·Δ alone also clips where "
            "the unclipped term is the smaller, more pessimistic one",
        ),
        (wrong(combine="max"), "use min, not max: the clipped objective is a pessimistic (lower) bound"),
        (wrong(combine="none"), "you did not clip: clip the ratio to [1 − ε, 1 + ε] and take the min"),
        (
            wrong(combine="upper_only"),
            "you clipped only the top (ρ ≤ 1 + ε): the lower bound 1 − ε matters too, for "
            "a response with Δ < 0 whose ratio has fallen below 1 − ε: "
            "ratio.clamp(1 − ε, 1 + ε)",
        ),
        (wrong(combine="eps_low"), "the lower bound is 1 − ε, not ε: ratio.clamp(1 − epsilon, 1 + epsilon)"),
        (wrong(combine="clip_product"), "clip the RATIO, not the product ρΔ: min(ρΔ, clip(ρ, 1 − ε, 1 + ε)·Δ)"),
        (
            wrong(combine="min_ratios"),
            "take the min of the two PRODUCTS, min(ρΔ, clip(ρ)Δ), not the min of the two "
            "ratios times Δ: with Δ < 0 the smaller ratio gives the LARGER product",
        ),
        (_surrogate(lp, old, d, mode, 0.2), f"your loss ignores the epsilon argument (called with ε = {eps})"),
        *ratios,
    ]


def _scalar_loss(c: Check, got, lp: torch.Tensor, what: str) -> torch.Tensor:
    got = c.tensor(got, what)
    if got.dim() != 0:
        hint = {
            tuple(lp.shape): "you returned the per-token terms; take the mean to get one number",
            tuple(lp.shape[:2]): "you averaged over positions only; take the mean over all axes",
        }
        extra = hint.get(tuple(got.shape))
        c.fail(
            f"{what}: the loss should be a single number (a 0-dim tensor, e.g. from .mean()); got shape "
            f"{list(got.shape)}" + (f" — {extra}" if extra else "")
        )
    c.passed += 1
    return got


_LOSS_HINTS = [
    (
        "size of tensor",
        "multiply each token by its response's delta: deltas[..., None] has shape "
        "[batch, trial, 1], which broadcasts over positions",
    )
]


def _check_loss_call(c: Check, fn: Callable, lp, old, d, mode: str, eps: float | None, want: torch.Tensor) -> None:
    """Call fn for one mode (eps None = rely on the default 0.2) and compare with ``want``."""
    args = [lp.clone().requires_grad_(True), d.clone(), mode]
    if mode != "naive":
        args.append(old.clone())
        if eps is not None:
            args.append(eps)
    shown = f"mode {mode!r}" + (f", epsilon={eps}" if eps is not None else "")
    with c.mode(mode):
        got = c.call(fn, *args, call=shown, hints=_LOSS_HINTS)
        what = f"loss ({shown})"
        got = _scalar_loss(c, got, lp, what)
        c.close(got, want, what, _loss_mistakes(lp, old, d, mode, 0.2 if eps is None else eps))
        c.expect(
            got.requires_grad,
            f"{what}: your loss carries no gradient — keep it a tensor computed from "
            "log_probs (no .item(), .detach() or torch.no_grad())",
        )


@exercise_check("compute_loss")
def check_compute_loss(c: Check, fn: Callable) -> None:
    """Check ``compute_loss(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2) -> scalar`` for the
    modes "naive", "unclipped", "clipped". Catches a flipped sign, a sum instead of the mean,
    deltas not broadcast over positions, the ratio as a quotient of log-probs / without exp /
    upside down, clip without the min, max instead of min, no clipping, only the upper clip, ε as
    the lower bound, the product ρΔ clipped, the min of the ratios, epsilon ignored."""
    lp = torch.tensor(PROBE_LOG_PROBS)
    old = lp - torch.tensor(PROBE_RATIOS).log()
    d = torch.tensor(PROBE_DELTAS)
    with c.worked_example():
        for (mode, eps), value in PROBE_LOSS.items():
            _check_loss_call(c, fn, lp, old, d, mode, None if eps == 0.2 else eps, torch.tensor(value))
    # ratios from 0.05 to 20 (some below ε itself, where clamp(ε, 1 + ε) and clamp(max=1 + ε) part ways)
    gen = seeded_generator(SEED, 7)
    lp = torch.randn(3, 4, 5, generator=gen).log_softmax(-1)
    old = lp + 1.2 * torch.randn(3, 4, 5, generator=gen)
    d = _ref_compute_deltas(torch.randn(3, 4, generator=gen), "normalized_rewards")
    _check_loss_call(c, fn, lp, old, d, "clipped", None, _ref_compute_loss(lp, d, "clipped", old, 0.2).detach())
    gen = seeded_generator(SEED, 6)
    lp = torch.randn(3, 4, 5, generator=gen).log_softmax(-1)  # only the values matter
    old = lp + 0.4 * torch.randn(3, 4, 5, generator=gen)  # ratios spread around the clip range
    d = _ref_compute_deltas(torch.randn(3, 4, generator=gen), "normalized_rewards")
    for mode, eps in [("naive", None), ("unclipped", None), ("clipped", None), ("clipped", 0.1)]:
        want = _ref_compute_loss(lp, d, mode, old, 0.2 if eps is None else eps).detach()
        _check_loss_call(c, fn, lp, old, d, mode, eps, want)

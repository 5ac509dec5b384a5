"""The checks of notebook 04 (minirl.checks.nb04_ladder: compute_deltas, compute_loss) catch the plausible wrong
implementations, each with a message that names the mistake."""

from __future__ import annotations

import pytest
import torch
from check_helpers import caught, float32_approx

import minirl
from minirl.checks import (
    check_compute_deltas,
    check_compute_loss,
)

# ---- compute_deltas ---------------------------------------------------------------------------------


def deltas_with(center, scale=None, eps=1e-6):
    """A compute_deltas built from a centring and a scaling rule (to write mistakes in one line)."""

    def compute_deltas(rewards, mode):
        if mode == "rewards":
            return rewards
        centered = center(rewards)
        if mode == "centered_rewards":
            return centered
        return centered / (scale(rewards) + eps) if eps is not None else centered / scale(rewards)

    return compute_deltas


GROUP_MEAN = lambda r: r - r.mean(dim=1, keepdim=True)  # noqa: E731
GROUP_STD = lambda r: r.std(dim=1, keepdim=True)  # noqa: E731


def deltas_in_place(rewards, mode):
    if mode == "rewards":
        return rewards
    rewards -= rewards.mean(dim=1, keepdim=True)
    return rewards


def deltas_rewards_mode_centred(rewards, mode):
    return minirl.compute_deltas(rewards, "centered_rewards" if mode == "rewards" else mode)


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (deltas_with(lambda r: r, GROUP_STD), ["centred rewards should sum to 0", "group mean"]),
        (deltas_with(lambda r: r - r.mean(dim=0, keepdim=True), GROUP_STD), ["mean over the batch (dim=0)"]),
        (deltas_with(lambda r: r - r.mean(), GROUP_STD), ["mean of the whole batch"]),
        (deltas_with(lambda r: r - r.mean(dim=1), GROUP_STD), ["raised RuntimeError", "keepdim=True"]),
        (deltas_with(GROUP_MEAN, lambda r: r.std(dim=0, keepdim=True)), ["std over the wrong axis", "dim=1"]),
        (deltas_with(GROUP_MEAN, lambda r: r.std()), ["std of the whole batch"]),
        (deltas_with(GROUP_MEAN, GROUP_STD, eps=None), ["all equal must give zeros, got nan", "epsilon"]),
        (deltas_with(GROUP_MEAN, lambda r: r.std(dim=1, keepdim=True, unbiased=False)), ["population std", "unbiased"]),
        (deltas_with(GROUP_MEAN, lambda r: r.var(dim=1, keepdim=True)), ["variance"]),
        (deltas_with(GROUP_MEAN, lambda r: torch.ones_like(r[:, :1]), eps=0.0), ["also divide by (std + eps)"]),
        (deltas_with(GROUP_MEAN, GROUP_STD, eps=0.5), ["normalized_rewards", "big ε ≈ 0.5", "keep it small"]),
        (deltas_in_place, ["in place"]),
        (deltas_rewards_mode_centred, ["unchanged"]),
    ],
    ids=[
        "no-centring",
        "batch-mean",
        "global-mean",
        "no-keepdim",
        "batch-std",
        "global-std",
        "no-eps",
        "population-std",
        "variance",
        "no-scaling",
        "big-eps",
        "in-place",
        "rewards-mode",
    ],
)
def test_compute_deltas_mistakes(wrong, keywords, capsys):
    caught(check_compute_deltas, wrong, capsys, *keywords)


def test_compute_deltas_no_centring_message_quotes_the_sums(capsys):
    line = caught(check_compute_deltas, deltas_with(lambda r: r, GROUP_STD), capsys)
    assert "yours sum to [12.00, 4.00, 8.00]" in line


def test_compute_deltas_keepdim_forgotten_on_square_batch(capsys):
    """On a square batch a forgotten keepdim does not raise; the check still names it."""

    def square_only(rewards, mode):
        if rewards.shape[0] != rewards.shape[1]:
            return minirl.compute_deltas(rewards, mode)
        return deltas_with(lambda r: r - r.mean(dim=1), GROUP_STD)(rewards, mode)

    caught(check_compute_deltas, square_only, capsys, "keepdim=True")


def test_compute_deltas_small_epsilons_and_sqrt_form_accepted(capsys):
    for eps in (1e-8, 1e-5, 1e-4):
        assert check_compute_deltas(deltas_with(GROUP_MEAN, GROUP_STD, eps=eps))
    assert check_compute_deltas(deltas_with(GROUP_MEAN, lambda r: (r.var(dim=1, keepdim=True) + 1e-8).sqrt(), 0.0))


# ---- compute_loss -------------------------------------------------------------------------------------


def loss_with(*, sign=-1.0, ratio="exp", combine="min", expand=True, reducer="mean", fixed_eps=None):
    """A compute_loss with one knob turned (the knobs mirror the usual mistakes)."""

    def compute_loss(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
        eps = fixed_eps if fixed_eps is not None else epsilon
        d = deltas[..., None] if expand else deltas
        if mode == "naive":
            per_token = log_probs * d
        else:
            rho = {
                "exp": lambda: torch.exp(log_probs - old_log_probs),
                "quotient": lambda: log_probs / old_log_probs,
                "log": lambda: log_probs - old_log_probs,
            }[ratio]()
            clipped = rho.clamp(1 - eps, 1 + eps) * d
            per_token = rho * d
            if mode == "clipped":
                per_token = {
                    "min": torch.minimum(per_token, clipped),
                    "max": torch.maximum(per_token, clipped),
                    "clip_only": clipped,
                    "none": per_token,
                }[combine]
        return sign * {"mean": per_token.mean, "sum": per_token.sum}[reducer]()

    return compute_loss


def loss_item(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
    return minirl.compute_loss(log_probs, deltas, mode, old_log_probs, epsilon).item()


def loss_per_token(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
    return -(log_probs * deltas[..., None])


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (loss_with(sign=1.0), ["wrong sign", "NEGATIVE"]),
        (loss_with(reducer="sum"), ["you summed", "mean"]),
        (loss_with(expand=False), ["deltas[..., None]"]),
        (loss_with(ratio="quotient"), ["mode 'unclipped'", "exp(log π − log π_old)", "quotient"]),
        (loss_with(ratio="log"), ["forgot the exp"]),
        (loss_with(combine="clip_only"), ["mode 'clipped'", "min of the unclipped and the clipped"]),
        (loss_with(combine="max"), ["use min, not max"]),
        (loss_with(combine="none"), ["did not clip"]),
        (loss_with(fixed_eps=0.2), ["epsilon=0.3", "ignores the epsilon"]),
        (loss_item, ["torch.Tensor", "float", ".item()"]),
        (loss_per_token, ["single number", "per-token"]),
    ],
    ids=[
        "sign",
        "sum",
        "no-expand",
        "quotient",
        "no-exp",
        "clip-only",
        "max",
        "no-clip",
        "eps-ignored",
        "item",
        "per-token",
    ],
)
def test_compute_loss_mistakes(wrong, keywords, capsys):
    caught(check_compute_loss, wrong, capsys, *keywords)


def test_compute_loss_probe_constants_match_the_reference():
    from minirl.checks.nb04_ladder import PROBE_DELTAS, PROBE_LOG_PROBS, PROBE_LOSS, PROBE_RATIOS

    lp = torch.tensor(PROBE_LOG_PROBS)
    old = lp - torch.tensor(PROBE_RATIOS).log()
    for (mode, eps), value in PROBE_LOSS.items():
        got = minirl.compute_loss(lp, torch.tensor(PROBE_DELTAS), mode, old, eps)
        assert got.item() == float32_approx(value), (mode, eps)


def test_compute_loss_exp_of_ratio_forms_accepted(capsys):
    def via_probs(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
        if mode == "naive":
            return minirl.compute_loss(log_probs, deltas, mode)
        rho = log_probs.exp() / old_log_probs.exp()
        d = deltas[..., None]
        if mode == "unclipped":
            return -(rho * d).mean()
        return -torch.min(rho * d, torch.clamp(rho, 1 - epsilon, 1 + epsilon) * d).mean()

    assert check_compute_loss(via_probs)


def test_hand_constants_match_the_references():
    from minirl.checks import nb04_ladder

    r = torch.tensor(nb04_ladder.DELTA_REWARDS)
    torch.testing.assert_close(minirl.compute_deltas(r, "centered_rewards"), torch.tensor(nb04_ladder.DELTA_CENTERED))
    torch.testing.assert_close(
        minirl.compute_deltas(r, "normalized_rewards"), torch.tensor(nb04_ladder.DELTA_NORMALIZED)
    )


# ---- leave-one-out centring and the sign, named (issue 11) -------------------------------------------


def deltas_leave_one_out(rewards, mode):
    if mode == "rewards":
        return rewards
    others = (rewards.sum(dim=1, keepdim=True) - rewards) / (rewards.shape[1] - 1)
    centered = rewards - others
    return centered if mode == "centered_rewards" else centered / (rewards.std(dim=1, keepdim=True) + 1e-6)


def deltas_loo_normalized_only(rewards, mode):
    return deltas_leave_one_out(rewards, mode) if mode == "normalized_rewards" else minirl.compute_deltas(rewards, mode)


def deltas_mean_minus_r(rewards, mode):
    return -minirl.compute_deltas(rewards, mode) if mode != "rewards" else rewards


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (deltas_leave_one_out, ["centered_rewards", "leave-one-out", "OTHER responses"]),
        (deltas_loo_normalized_only, ["normalized_rewards", "leave-one-out"]),
        (deltas_mean_minus_r, ["wrong sign", "mean − r"]),
    ],
    ids=["leave-one-out", "leave-one-out-normalized", "sign"],
)
def test_compute_deltas_named_centring_mistakes(wrong, keywords, capsys):
    caught(check_compute_deltas, wrong, capsys, *keywords)


def test_compute_deltas_failure_quotes_the_hand_worked_rewards(capsys):
    def halved(rewards, mode):  # no named mistake: the line shows the hand-worked case's numbers
        return minirl.compute_deltas(rewards, mode) * (0.5 if mode == "centered_rewards" else 1.0)

    caught(check_compute_deltas, halved, capsys, "expected [[-2.0, -1.0, 0.0, 3.0]")


# ---- more named mistakes (issue 19): each wrong answer gets a message that names it --------------------------


def deltas_by_range(rewards, mode):
    if mode != "normalized_rewards":
        return minirl.compute_deltas(rewards, mode)
    centered = rewards - rewards.mean(dim=1, keepdim=True)
    return centered / (rewards.amax(dim=1, keepdim=True) - rewards.amin(dim=1, keepdim=True) + 1e-6)


def clipped_loss(per_token):
    """compute_loss with the 'clipped' mode's per-token term replaced by per_token(ratio, d, eps)."""

    def compute_loss(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
        if mode != "clipped":
            return minirl.compute_loss(log_probs, deltas, mode, old_log_probs, epsilon)
        return -per_token(torch.exp(log_probs - old_log_probs), deltas[..., None], epsilon).mean()

    return compute_loss


@pytest.mark.parametrize(
    "check, wrong, keywords",
    [
        (check_compute_deltas, deltas_by_range, ["normalized_rewards", "range (max − min)"]),
        (check_compute_deltas, deltas_with(GROUP_MEAN, GROUP_STD, eps=0.01), ["big ε ≈ 0.01"]),
        (
            check_compute_loss,
            clipped_loss(lambda rho, d, e: torch.minimum(rho * d, rho.clamp(max=1 + e) * d)),
            ["mode 'clipped'", "only the top", "1 − ε matters too"],
        ),
        (
            check_compute_loss,
            clipped_loss(lambda rho, d, e: torch.minimum(rho * d, rho.clamp(e, 1 + e) * d)),
            ["mode 'clipped'", "lower bound is 1 − ε, not ε"],
        ),
        (
            check_compute_loss,
            clipped_loss(lambda rho, d, e: torch.minimum(rho * d, (rho * d).clamp(1 - e, 1 + e))),
            ["clip the RATIO, not the product"],
        ),
        (
            check_compute_loss,
            clipped_loss(lambda rho, d, e: torch.minimum(rho, rho.clamp(1 - e, 1 + e)) * d),
            ["min of the two PRODUCTS", "not the min of the two ratios"],
        ),
    ],
    ids=[
        "deltas-range",
        "deltas-eps-0.01",
        "clip-upper-only",
        "clip-lower-eps",
        "clip-product",
        "min-of-ratios",
    ],
)
def test_more_ladder_mistakes(check, wrong, keywords, capsys):
    caught(check, wrong, capsys, *keywords)


def test_the_wide_clipped_case_has_ratios_below_epsilon_with_negative_deltas():
    """Where clamp(ε, 1 + ε) and clamp(max=1 + ε) differ: ρ < ε = 0.2 with Δ < 0."""
    from minirl.checks import nb04_ladder
    from minirl.checks._core import seeded_generator

    gen = seeded_generator(nb04_ladder.SEED, 7)
    lp = torch.randn(3, 4, 5, generator=gen).log_softmax(-1)
    old = lp + 1.2 * torch.randn(3, 4, 5, generator=gen)
    d = minirl.compute_deltas(torch.randn(3, 4, generator=gen), "normalized_rewards")
    rho = (lp - old).exp()
    assert int(((rho < 0.2) & (d[..., None] < 0)).sum()) == 3

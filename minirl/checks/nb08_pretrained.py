"""Checks for notebook 08 (a pretrained model learns to sort), named after the function they check.

    check_zero_variance_fraction(fn)   fn(rewards[batch, trial]) -> the fraction of groups whose rewards are all equal

Expected values are hand-counted constants (the reference ``minirl.zero_variance_fraction`` gives the same,
``tests/test_checks_pretrained.py`` makes sure) and the reference on seeded random rewards.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from minirl.advantages import zero_variance_fraction as _reference
from minirl.checks._core import Check, exercise_check, numbers_close, seeded_generator

__all__ = ["check_zero_variance_fraction"]

SEED = 8008

# Rewards of the text tasks: 0 (not in the asked form), 0.2 (well formed, wrong), 1.2 (correct). [batch 12, trial 4]
ZV_REWARDS = [
    [0.0, 0.0, 0.0, 0.0],  # all unreadable: no signal
    [0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0],
    [1.2, 1.2, 1.2, 1.2],  # all correct: no signal either
    [0.2, 0.2, 0.2, 0.2],  # all well formed and wrong: no signal
    [0.2, 0.2, 0.2, 0.2],
    [0.2, 0.2, 0.2, 0.2],
    [0.0, 0.2, 1.2, 0.2],  # the rest differ: these teach
    [1.2, 1.2, 1.2, 0.2],
    [0.0, 0.0, 0.0, 0.2],
    [0.2, 0.0, 0.2, 0.2],
    [0.0, 1.2, 0.0, 1.2],
]
ZV_EXPECTED = 7 / 12
# Any rewards, not just the task's: [batch 6, trial 3]; rows 0 and 3 are all equal. The middle reward of
# rows 1, 2 and 4 equals its group's mean, and two of row 5's are equal: neither counts.
ZV_ANY = [[-1.0, -1.0, -1.0], [0.0, 1.0, 2.0], [3.0, 2.0, 1.0], [5.0, 5.0, 5.0], [-2.0, 0.0, 2.0], [4.0, 4.0, 1.0]]
ZV_ANY_EXPECTED = 2 / 6


def _one_ulp_above(x: float) -> float:
    """The next float32 after ``x``: the smallest difference two float32 rewards can have."""
    return float(torch.nextafter(torch.tensor(x), torch.tensor(float("inf"))))


# Continuous rewards, [batch 8, trial 4]: where "all equal" ends. The library's rule (``zero_variance_fraction``,
# and ``compute_deltas``, which zeroes exactly these groups) is EXACT equality: three groups of equal float32
# values that no binary fraction represents (0.7, 0.1, 1/3) are all equal; four groups whose rewards differ by
# 0.02, 1e-3, 1e-5 and by one float32 ulp (6e-8) are not — compute_deltas gives each of them nonzero deltas
# (normalised: up to 1.5, and 0.06 for the one-ulp group), however small the difference. The last group differs
# plainly.
ZV_SPREADS = [_one_ulp_above(0.9) - float(torch.tensor(0.9)), 1e-5, 1e-3, 0.02]  # near-equal groups, smallest first
ZV_CONTINUOUS = [
    [0.7, 0.7, 0.7, 0.7],
    [0.1, 0.1, 0.1, 0.1],
    [1 / 3, 1 / 3, 1 / 3, 1 / 3],
    [0.9, 0.9, 0.9, _one_ulp_above(0.9)],
    [0.25, 0.25 + 1e-5, 0.25, 0.25],
    [0.5, 0.5, 0.501, 0.5],
    [0.4, 0.42, 0.4, 0.4],
    [0.0, 0.3, 0.6, 0.9],
]
ZV_CONTINUOUS_EXPECTED = 3 / 8


def _fraction(rows: torch.Tensor) -> float:
    return float(rows.float().mean())


def _mistakes(r: torch.Tensor) -> list[tuple[float, str]]:
    """(the value a usual mistake gives on ``r``, what it is)."""
    all_equal = (r == r[:, :1]).all(dim=1)
    batch, trial = r.shape
    return [
        (
            _fraction(r.std(dim=1) == 0),
            "you tested std == 0 (or equality with the mean): in float32 the mean of "
            "eight 1.2s is not exactly 1.2, so an all-equal group gets a std of ~1e-7; "
            "compare the rewards themselves (max == min, or each equal to the first)",
        ),
        (
            1.0 - _fraction(all_equal),
            "you returned the fraction of groups whose rewards DIFFER (the ones that teach); "
            "return the fraction whose rewards are all equal",
        ),
        (
            float(all_equal.sum()),
            f"you returned the number of such groups; divide by the number of groups "
            f"(batch = {batch}) to get a fraction",
        ),
        (
            float(all_equal.sum()) / (batch * trial),
            f"you divided by the number of rewards (batch × trial = {batch * trial}); divide by the number of groups, "
            f"batch = {batch}",
        ),
        (100.0 * _fraction(all_equal), "you returned a percentage; return the fraction, a number in [0, 1]"),
        (
            _fraction((r == 0).all(dim=1)),
            "you counted only the groups where every reward is 0; a group that is all "
            "right (or all equally half-right) gives zero advantage too",
        ),
        (
            _fraction((r == r.max()).all(dim=1)),
            "you counted only the groups where every response gets the best "
            "reward; all-wrong groups give zero advantage too",
        ),
        (
            _fraction(r == r[:, :1]),
            "you took the fraction of RESPONSES equal to their group's first; a group "
            "counts only when ALL its rewards are equal (.all(dim=1), then the mean)",
        ),
        (
            _fraction(r == r.mean(dim=1, keepdim=True)),
            "you took the fraction of rewards equal to their group's "
            "mean; a group counts when all its rewards are equal",
        ),
        (
            _fraction((r == r[:1, :]).all(dim=0)),
            "you compared along the wrong axis (down the batch); a group is "
            f"a row, its {trial} responses are the trial axis (dim=1)",
        ),
    ]


def _number(c: Check, got, what: str) -> float:
    if isinstance(got, torch.Tensor):
        c.expect(
            got.numel() == 1,
            f"{what}: should be one number (a float); got a tensor of shape "
            f"{list(got.shape)} — average over the groups",
        )
        got = got.detach().reshape(())
    try:
        return float(got)
    except (TypeError, ValueError):
        c.fail(f"{what}: expected a number, got {type(got).__name__}")


def _tolerance_mistake(got: float, want: float, batch: int) -> str | None:
    """On ZV_CONTINUOUS: the message for a test with a tolerance, which counts the k near-equal groups with the
    smallest spreads as all equal (so it returns want + k / batch); None if ``got`` is not such a value."""
    extra = (got - want) * batch
    k = round(extra)
    if not (1 <= k <= len(ZV_SPREADS) and numbers_close(extra, k)):
        return None
    shown = ", ".join(f"{s:.2g}" for s in ZV_SPREADS[:k])
    return (
        f"you counted {k} group{'s' if k > 1 else ''} whose rewards differ by a little ({shown}) as all equal; "
        "compute_deltas zeroes a group's advantage only when its rewards are EXACTLY equal (any difference, "
        "however small, gives nonzero deltas): no tolerance (std < tol, max − min < tol, isclose), compare "
        "with ==: (rewards == rewards[:, :1]).all(dim=1)"
    )


def _check_case(
    c: Check, fn: Callable, rewards: list[list[float]] | torch.Tensor, want: float, what: str, continuous: bool = False
) -> None:
    r = torch.as_tensor(rewards, dtype=torch.float32)
    given = r.clone()
    got = _number(c, c.call(fn, given, call=what), what)
    c.unchanged({"rewards": r}, {"rewards": given}, what, fix="compare, do not edit the rewards")
    if numbers_close(got, want):
        c.passed += 1
        return
    tolerance = _tolerance_mistake(got, want, r.shape[0]) if continuous else None
    if tolerance:
        c.fail(f"{what}: expected {want:.4g}, got {got:.4g} — {tolerance}", named=True)
    for wrong, message in _mistakes(r):  # the cases come in an order that makes the first match the likely one
        if numbers_close(got, wrong):
            c.fail(f"{what}: expected {want:.4g}, got {got:.4g} — {message}", named=True)
    c.fail(
        f"{what}: expected {want:.4g}, got {got:.4g} (the fraction of the {r.shape[0]} groups, rows, whose "
        f"rewards are all exactly equal: {round(want * r.shape[0])} here)"
    )


@exercise_check("zero_variance_fraction")
def check_zero_variance_fraction(c: Check, fn: Callable) -> None:
    """``fn(rewards[batch, trial]) -> float``: the fraction of groups (rows) whose rewards are all exactly equal
    (the library's rule, the groups ``compute_deltas`` zeroes). Catches the complement, a count, only the
    all-0 or all-best groups, a fraction of responses, a count over all rewards, a percentage, equality with
    the mean, the wrong axis, std == 0 (an all-equal float32 group has a std of ~1e-7), a tolerance (groups
    differing by 0.02 down to one ulp counted as equal), a tensor returned, in-place edits."""
    _check_case(c, fn, ZV_REWARDS, ZV_EXPECTED, "12 groups of the task's rewards (7 all equal)")
    _check_case(c, fn, ZV_ANY, ZV_ANY_EXPECTED, "6 groups of any rewards (2 all equal)")
    _check_case(c, fn, [[0.2, 0.2], [1.2, 0.0]], 0.5, "2 groups of 2")
    _check_case(c, fn, [[1.2] * 8], 1.0, "one group of 8 equal rewards")
    _check_case(
        c,
        fn,
        ZV_CONTINUOUS,
        ZV_CONTINUOUS_EXPECTED,
        "8 groups of continuous rewards (3 all equal; 4 differ by 0.02, 1e-3, 1e-5 and one float32 ulp)",
        continuous=True,
    )
    g = seeded_generator(SEED)
    for batch, trial in [(64, 8), (16, 16)]:  # few distinct values, so that some groups come out all equal
        values = torch.tensor([0.0, 0.2, 1.2])
        rows = values[torch.randint(0, 3, (batch, 1), generator=g)].expand(batch, trial).clone()
        noisy = torch.rand(batch, generator=g) < 0.5
        rows[noisy] = values[torch.randint(0, 3, (int(noisy.sum()), trial), generator=g)]
        _check_case(c, fn, rows, _reference(rows), f"random rewards [batch {batch}, trial {trial}]")

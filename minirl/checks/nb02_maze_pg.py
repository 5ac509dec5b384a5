"""Checks for the policy-gradient notebook on the maze (02), named after the function they check.

    check_discounted_returns(fn)   fn(rewards, dones, gamma) -> returns[..., time]
    check_reinforce_loss(fn)       fn(log_probs, advantages, mask) -> scalar loss
    check_compute_gae(fn)          fn(rewards, values, next_values, dones, gamma, lam) -> advantages[..., time]

Expected values are hand-computed constants and the references on seeded random inputs:
``minirl.discounted_returns``, ``minirl.compute_gae``, ``reference_reinforce_loss`` for the loss and,
for its gradient, the library's ``policy_loss`` with one "response" per episode, no clipping and the
``"constant"`` aggregation (what ``minirl.maze_rl.surrogate_loss`` uses for REINFORCE). Never the
learner's own function. When a result is wrong, each check compares it with the results of the usual mistakes
(no discount, a forward sum, no reset at the episode end, a flipped sign, a forgotten mask, λ ignored,
a bootstrap past the end, ...) and names the one it matches.

The references, for the fallback cell of each exercise::

    discounted_returns = use_reference(discounted_returns, minirl.discounted_returns, ok)
    reinforce_loss = use_reference(reinforce_loss, reference_reinforce_loss, ok)
    compute_gae = use_reference(compute_gae, minirl.compute_gae, ok)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from minirl.advantages import compute_gae as _ref_compute_gae
from minirl.advantages import discounted_returns as _ref_discounted_returns
from minirl.checks._core import Check, exercise_check, format_tensor, seeded_generator
from minirl.losses import policy_loss as _ref_policy_loss

__all__ = [
    "check_compute_gae",
    "check_discounted_returns",
    "check_reinforce_loss",
    "reference_reinforce_loss",
]

SEED = 2025

_LAST_AXIS_HINTS = [
    (
        "index",
        "time is the LAST axis: index it with x[..., t] so that any leading shape works ([time], [episode, time], ...)",
    ),
    (
        "dimension",
        "time is the LAST axis: index it with x[..., t] so that any leading shape works ([time], [episode, time], ...)",
    ),
]


def _random_dones(shape: Sequence[int], gen: torch.Generator, p: float = 0.25) -> torch.Tensor:
    """0/1 floats with several episode ends inside every row (and never at the last step alone)."""
    dones = (torch.rand(*shape, generator=gen) < p).float()
    dones[..., 1] = 1.0  # every row has an episode that ends early, so resets always matter
    return dones


_NEW_TENSOR = "write the results into a new tensor (torch.zeros_like(rewards))"


def _result(c: Check, got, want: torch.Tensor, what: str) -> torch.Tensor:
    got = c.tensor(got, what)
    if tuple(got.shape) != tuple(want.shape):
        c.fail(
            f"{what}: expected the shape of rewards, {list(want.shape)}, got {list(got.shape)} — one value "
            "per step, along the last (time) axis"
        )
    c.passed += 1
    if not got.is_floating_point():
        c.fail(f"{what}: expected a float tensor, got dtype {got.dtype}")
    return got


# ---------------------------------------------------------------------------------------------
# discounted_returns
# ---------------------------------------------------------------------------------------------


def _backward_scan(x: torch.Tensor, factor: Callable[[int], torch.Tensor | float]) -> torch.Tensor:
    """out_t = x_t + factor(t) * out_{t+1} along the last axis."""
    out = torch.zeros_like(x)
    running = torch.zeros_like(x[..., 0])
    for t in reversed(range(x.shape[-1])):
        running = x[..., t] + factor(t) * running
        out[..., t] = running
    return out


def _forward_scan(x: torch.Tensor, factor: Callable[[int], torch.Tensor | float]) -> torch.Tensor:
    """out_t = x_t + factor(t) * out_{t-1} along the last axis."""
    out = torch.zeros_like(x)
    running = torch.zeros_like(x[..., 0])
    for t in range(x.shape[-1]):
        running = x[..., t] + factor(t) * running
        out[..., t] = running
    return out


def _exclusive_scan(x: torch.Tensor, factor: Callable[[int], torch.Tensor | float]) -> torch.Tensor:
    """The off-by-one backward loop that stores out_t BEFORE adding x_t: out_t = factor(t) · (x_{t+1} + ...)."""
    out = torch.zeros_like(x)
    running = torch.zeros_like(x[..., 0])
    for t in reversed(range(x.shape[-1])):
        running = factor(t) * running
        out[..., t] = running
        running = running + x[..., t]
    return out


def _off_by_one(
    correct: torch.Tensor, x: torch.Tensor, factor: Callable[[int], torch.Tensor | float], what: str, recursion: str
) -> list[tuple[torch.Tensor, str]]:
    """The off-by-one mistakes of a backward loop over the last axis, named for ``what`` (G_t or A_t)."""
    T = x.shape[-1]
    skip_first = correct.clone()
    skip_first[..., 0] = 0.0  # range(T - 1, 0, -1): t = 0 never filled
    skip_last = _backward_scan(x[..., :-1], factor) if T > 1 else torch.zeros_like(x)
    skip_last = torch.cat([skip_last, torch.zeros_like(x[..., :1])], dim=-1) if T > 1 else skip_last
    shifted = torch.cat([correct[..., 1:], torch.zeros_like(correct[..., :1])], dim=-1)
    loop = "loop over every step, for t in reversed(range(T))"
    return [
        (
            _exclusive_scan(x, factor),
            f"off by one: you stored {what} before adding step t's own term, so your "
            f"{what} starts at t + 1; {recursion}",
        ),
        (
            shifted,
            f"off by one: your {what} is the correct one of the NEXT step ({what} = value at t + 1); "
            f"index step t itself: {recursion}",
        ),
        (
            skip_first,
            f"off by one: your loop never reaches t = 0 (the first step is left at 0, as with "
            f"range(T - 1, 0, -1)); {loop}",
        ),
        (
            skip_last,
            f"off by one: your loop starts at t = T − 2 (the last step is left at 0); {loop}, and at the "
            "last step there is nothing after it to add",
        ),
        (-correct, f"wrong sign: your {what} is the negative of the expected one; {recursion}"),
    ]


def _episode_starts(dones: torch.Tensor) -> torch.Tensor:
    """[..., time] bool: True at the first step of every episode (t = 0 and right after a done)."""
    starts = torch.zeros_like(dones, dtype=torch.bool)
    starts[..., 0] = True
    starts[..., 1:] = dones[..., :-1] > 0
    return starts


def _zeroed_at_end(rewards: torch.Tensor, dones: torch.Tensor, gamma: float) -> torch.Tensor:
    """G_t = (r_t + γ G_{t+1}) (1 − done_t): the reset also wipes the reward of the last step."""
    out = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[..., 0])
    for t in reversed(range(rewards.shape[-1])):
        running = (rewards[..., t] + gamma * running) * (1.0 - dones[..., t])
        out[..., t] = running
    return out


def _returns_mistakes(
    rewards: torch.Tensor, dones: torch.Tensor, gamma: float
) -> list[tuple[torch.Tensor | None, str]]:
    T = rewards.shape[-1]
    steps = torch.arange(T, dtype=rewards.dtype)
    # the discount counted from the start of the row: sum_{t' >= t} gamma^{t'} r_{t'}
    from_start = _ref_discounted_returns(rewards * gamma**steps, dones, 1.0)
    # ... or from the start of each episode
    starts = _episode_starts(dones)
    first = torch.zeros_like(rewards)  # the index of the first step of the episode that step t belongs to
    for t in range(T):
        first[..., t] = torch.where(starts[..., t], torch.full_like(first[..., t], float(t)), first[..., t - 1])
    from_episode_start = _ref_discounted_returns(rewards * gamma ** (steps - first), dones, 1.0)
    correct = _ref_discounted_returns(rewards, dones, gamma)
    # the return of the whole episode (G at its first step) on every one of its steps
    episode_total = correct.gather(-1, first.long())
    undiscounted_total = rewards.sum(dim=-1, keepdim=True).expand_as(rewards).clone()
    discounted_total = (rewards * gamma**steps).sum(dim=-1, keepdim=True).expand_as(rewards).clone()
    forward_reset = _forward_scan(rewards, lambda t: gamma * (1.0 - dones[..., t - 1]) if t else 0.0)
    later = torch.cat([dones[..., 1:], torch.zeros_like(dones[..., :1])], dim=-1)
    earlier = torch.cat([torch.zeros_like(dones[..., :1]), dones[..., :-1]], dim=-1)
    backward = "; the reward-to-go sums the FUTURE rewards of the episode: loop t from the last step backward"
    recursion = "G_t = r_t + gamma (1 - done_t) G_{t+1}"
    return [
        *_off_by_one(correct, rewards, lambda t: gamma * (1.0 - dones[..., t]), "G_t", recursion),
        (
            _backward_scan(rewards, lambda t: gamma * (1.0 - earlier[..., t])),
            "your reset is one step early: use done_t of the step itself (dones[..., t], not dones[..., t - 1]), "
            + recursion,
        ),
        (
            _ref_discounted_returns(rewards, dones, 1.0),
            f"you did not discount (your result is the gamma = 1 one, gamma was {gamma:g}): "
            "G_t = r_t + gamma (1 - done_t) G_{t+1}",
        ),
        (
            from_start,
            "you discounted from the start of the sequence (gamma^t' r_t'); a reward k steps after t is "
            "discounted by gamma^k, counted from t: G_t = sum_{t' >= t} gamma^(t' - t) r_t'",
        ),
        (
            from_episode_start,
            "you discounted from the start of the episode; a reward k steps after t is discounted "
            "by gamma^k, counted from t: G_t = sum_{t' >= t} gamma^(t' - t) r_t'",
        ),
        (
            gamma * correct,
            "the reward of the step itself is not discounted: G_t = r_t + gamma G_{t+1}, not gamma (r_t + G_{t+1})",
        ),
        (_forward_scan(rewards, lambda t: gamma), "you summed forward in time (rewards of the past)" + backward),
        (forward_reset, "you summed forward in time (rewards of the past)" + backward),
        (
            _backward_scan(rewards, lambda t: gamma),
            "you did not reset at the episode end: where dones[t] = 1 the "
            "next reward belongs to another episode, so "
            "G_t = r_t + gamma (1 - done_t) G_{t+1}",
        ),
        (
            _backward_scan(rewards, lambda t: gamma * (1.0 - later[..., t])),
            "your reset is one step late: use done_t of the step itself, G_t = r_t + gamma (1 - done_t) G_{t+1}",
        ),
        (
            _zeroed_at_end(rewards, dones, gamma),
            "you zeroed the whole G_t at the last step of an episode; (1 - done_t) multiplies only the future "
            "term: G_t = r_t + gamma (1 - done_t) G_{t+1}",
        ),
        (
            episode_total,
            "you gave every step the return of its whole episode; each step gets only the rewards "
            "from t onward (the reward-to-go)",
        ),
        (
            undiscounted_total,
            "you returned the total of all rewards on every step; each step gets only the "
            "discounted rewards from t onward, within its episode",
        ),
        (
            discounted_total,
            "you returned the discounted total of the sequence on every step; each step gets only "
            "the rewards from t onward, within its episode",
        ),
        (rewards.clone(), "you returned the rewards themselves; G_t also adds the discounted future rewards"),
        (
            _backward_scan(gamma * rewards, lambda t: 1.0 - dones[..., t]),
            "you discounted the step's own reward instead of the future: G_t = r_t + gamma (1 - done_t) G_{t+1}, not "
            "gamma r_t + (1 - done_t) G_{t+1}",
        ),
        (
            _along_first_axis(_ref_discounted_returns, rewards, dones, gamma),
            "you ran the recursion along the FIRST axis (the episodes); time is the LAST axis: rewards[..., t], "
            "dones[..., t], for t from rewards.shape[-1] − 1 down to 0",
        ),
    ]


def _along_first_axis(reference: Callable[..., torch.Tensor], *tensors_then_args) -> torch.Tensor | None:
    """``reference`` run along the first axis instead of the last (None for 1-d inputs, where they agree)."""
    tensors = [x for x in tensors_then_args if isinstance(x, torch.Tensor)]
    args = [x for x in tensors_then_args if not isinstance(x, torch.Tensor)]
    if tensors[0].dim() < 2:
        return None
    return reference(*(x.movedim(0, -1) for x in tensors), *args).movedim(-1, 0)


def _check_returns_case(
    c: Check, fn: Callable, rewards: torch.Tensor, dones: torch.Tensor, gamma: float, want: torch.Tensor, what: str
) -> None:
    r, d = rewards.clone(), dones.clone()
    got = c.call(fn, r, d, gamma, call=what, hints=_LAST_AXIS_HINTS)
    c.unchanged({"rewards": rewards, "dones": dones}, {"rewards": r, "dones": d}, what, _NEW_TENSOR)
    got = _result(c, got, want, what)
    c.close(got, want, what, _returns_mistakes(rewards, dones, gamma))


# (rewards, dones, gamma, the reward-to-go by hand)
RETURNS_HAND_CASES = [
    # one episode: G_2 = 2, G_1 = 0 + 0.5 * 2 = 1, G_0 = 1 + 0.5 * 1 = 1.5
    ([1.0, 0.0, 2.0], [0.0, 0.0, 1.0], 0.5, [1.5, 1.0, 2.0]),
    # two episodes in one row, the second cut by the budget: 1 + 0.5 * 2 | 2 | 3 + 0.5 * 4 | 4
    ([1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 0.0, 0.0], 0.5, [2.0, 2.0, 5.0, 4.0]),
    # the maze: a success (10 at the 6th move) and a failure, gamma = 1: every move of the success gets 10
    (
        [[0.0, 0.0, 0.0, 0.0, 0.0, 10.0], [0.0] * 6],
        [[0.0, 0.0, 0.0, 0.0, 0.0, 1.0], [0.0] * 6],
        1.0,
        [[10.0] * 6, [0.0] * 6],
    ),
    # the same with gamma = 0.9: 10 * 0.9^(5 - t)
    ([[0.0, 0.0, 0.0, 0.0, 0.0, 10.0]], [[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]], 0.9, [[5.9049, 6.561, 7.29, 8.1, 9.0, 10.0]]),
]


@exercise_check("discounted_returns")
def check_discounted_returns(c: Check, fn: Callable) -> None:
    """Check ``discounted_returns(rewards, dones, gamma) -> returns`` (the reward-to-go
    G_t = r_t + γ (1 − done_t) G_{t+1} along the last axis) on hand cases (several episodes in one
    row, the maze's success and failure) and against ``minirl.discounted_returns`` on seeded random
    inputs of shapes [time], [episode, time] and [2, 3, time]. Catches no discount, a discount counted
    from the start instead of from t, a forward sum, no reset (or a late reset) at the episode end, the
    whole episode's return on every step, γ on the reward instead of on the future, the recursion
    along the first axis, and edits of the inputs in place."""
    for rewards, dones, gamma, want in RETURNS_HAND_CASES:  # the hand-worked cases first: readable failures
        r, d = torch.tensor(rewards), torch.tensor(dones)
        with c.worked_example():
            _check_returns_case(
                c,
                fn,
                r,
                d,
                gamma,
                torch.tensor(want),
                f"rewards {format_tensor(r)}, dones {format_tensor(d)}, gamma={gamma}",
            )
    gen = seeded_generator(SEED, 1)
    for shape, gamma in [((4, 9), 0.9), ((11,), 0.7), ((2, 3, 8), 0.95)]:
        rewards = torch.randn(*shape, generator=gen)
        dones = _random_dones(shape, gen)
        _check_returns_case(
            c,
            fn,
            rewards,
            dones,
            gamma,
            _ref_discounted_returns(rewards, dones, gamma),
            f"random rewards {list(shape)}, gamma={gamma}",
        )


# ---------------------------------------------------------------------------------------------
# reinforce_loss
# ---------------------------------------------------------------------------------------------


def reference_reinforce_loss(log_probs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """L = −Σ_{i,t} m_it A_it log π(a_it | s_it) / (N · T) for log_probs, advantages, mask ``[episode, time]``
    (N episodes, T steps). The advantages are detached: no gradient flows into them.

    Its gradient is that of ``minirl.maze_rl.surrogate_loss`` without clipping, i.e. ``minirl.policy_loss``
    with one "response" per episode, ``old_log_probs=None``, ``clip_eps_low=None`` and the ``"constant"``
    aggregation (whose *value* is the ratio form −Σ m A ρ / (N·T) with ρ ≡ 1, the same gradient)."""
    return -(mask * advantages.detach() * log_probs).sum() / log_probs.numel()


def _library_gradient(lp: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """d L / d log_probs of the library's REINFORCE loss (``policy_loss``, ratio ≡ 1, constant aggregation)."""
    log_probs = lp.clone().requires_grad_(True)
    loss, _ = _ref_policy_loss(
        log_probs.unsqueeze(1), None, adv.unsqueeze(1), mask.unsqueeze(1), clip_eps_low=None, aggregation="constant"
    )
    return torch.autograd.grad(loss, log_probs)[0]


def _loss_mistakes(lp: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
    n, t = lp.shape
    real = mask.sum().clamp(min=1.0)
    terms = mask * adv * lp
    return [
        (
            terms.sum() / (n * t),
            "your loss has the wrong sign: we MINIMISE L = −Σ m A log π / (N·T), so that "
            "gradient descent raises the log-probability of moves with A > 0",
        ),
        (
            -(adv * lp).sum() / (n * t),
            "you forgot the mask: the padding steps after an episode ended count in your "
            "loss; multiply by mask (do not assume the advantages are 0 there)",
        ),
        ((adv * lp).sum() / (n * t), "wrong sign, and you forgot the mask"),
        (
            -(mask * adv * lp.exp()).sum() / (n * t),
            "use the log-probabilities, not the probabilities exp(log π): the policy gradient is E[A ∇ log π]",
        ),
        (
            -terms.sum() / real,
            "you divided by the number of real steps (a token mean); divide by N·T, the number of "
            "episodes times the number of time steps (a constant): -(mask * A * log_probs).mean()",
        ),
        (
            -(terms.sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).mean(),
            "you averaged each episode over its own real steps (a sequence mean); divide the sum by N·T, "
            "a constant: -(mask * A * log_probs).mean()",
        ),
        (-terms.sum(), "you summed without normalising; divide by N·T (episodes × time steps)"),
        (-terms.sum() / n, "you divided by the number of episodes only; divide by N·T (episodes × time steps)"),
        (-terms.sum() / t, "you divided by the number of time steps only; divide by N·T (episodes × time steps)"),
        (
            -terms.sum() / (n * mask.sum(dim=1).max().clamp(min=1.0)),
            "you took T as the longest REAL episode (mask.sum(1).max()); T is the step budget, the size of the time "
            "axis (log_probs.shape[1]), even when every episode ends early",
        ),
        (
            -(mask * adv).sum() / (n * t),
            "your loss has the right gradient but the value of the ratio form "
            "−Σ m A exp(log π − log π.detach()) / (N·T); write the log-prob form "
            "−Σ m A log π / (N·T)",
        ),
    ]


# log_probs, advantages, mask by hand: episode 2 ended after 2 moves; its padding step carries
# an advantage of 3 and a log-prob of −0.7 that must not count.
LOSS_HAND_LOG_PROBS = [[-0.5, -1.0, -2.0], [-1.5, -0.2, -0.7]]
LOSS_HAND_ADVANTAGES = [[2.0, 2.0, 4.0], [-1.0, -1.0, 3.0]]
LOSS_HAND_MASK = [[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]
# Σ m A log π = (−1 − 2 − 8) + (1.5 + 0.2) = −9.3, over N·T = 2·3: L = 9.3 / 6
LOSS_HAND_VALUE = 1.55
# No episode uses the whole budget of 4 steps (they end after 2 and 3 moves): T is still 4.
LOSS_SHORT_LOG_PROBS = [[-0.5, -1.0, -0.3, -0.3], [-1.5, -0.2, -0.4, -0.9]]
LOSS_SHORT_ADVANTAGES = [[2.0, 2.0, 5.0, 5.0], [-1.0, -1.0, 1.0, 4.0]]
LOSS_SHORT_MASK = [[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]]
# Σ m A log π = (−1 − 2) + (1.5 + 0.2 − 0.4) = −1.7, over N·T = 2·4: L = 1.7 / 8
LOSS_SHORT_VALUE = 0.2125


def _check_loss_case(
    c: Check, fn: Callable, lp: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, want: torch.Tensor, what: str
) -> None:
    log_probs = lp.clone().requires_grad_(True)
    advantages = adv.clone().requires_grad_(True)  # as if they came out of a value model
    m = mask.clone()
    got = c.call(
        fn,
        log_probs,
        advantages,
        m,
        call=what,
        hints=[
            (
                "size of tensor",
                "log_probs, advantages and mask all have shape [episode, time]: multiply them elementwise",
            )
        ],
    )
    c.unchanged(
        {"log_probs": lp, "advantages": adv, "mask": mask},
        {"log_probs": log_probs.detach(), "advantages": advantages.detach(), "mask": m},
        what,
        _NEW_TENSOR,
    )
    got = c.tensor(got, f"loss ({what})")
    if got.dim() != 0:
        hint = " — you returned the per-step terms; reduce them to one number" if got.shape == lp.shape else ""
        c.fail(f"loss ({what}): the loss should be a single number (a 0-dim tensor); got shape {list(got.shape)}{hint}")
    c.passed += 1
    c.close(got, want, f"loss ({what})", _loss_mistakes(lp, adv, mask))
    c.expect(
        got.requires_grad,
        f"loss ({what}): your loss carries no gradient — keep it a tensor computed from "
        "log_probs (no .item(), .detach() or torch.no_grad())",
    )
    grad_lp, grad_adv = torch.autograd.grad(got, [log_probs, advantages], allow_unused=True)
    c.expect(
        grad_adv is None or not bool(grad_adv.abs().gt(0).any()),
        f"loss ({what}): the gradient flows into the advantages; they are fixed weights, not something to "
        "optimise (a value model's output would be pushed by the policy loss): use advantages.detach()",
    )
    want_grad = _library_gradient(lp, adv, mask)
    c.expect(grad_lp is not None, f"loss ({what}): your loss does not depend on log_probs")
    c.close(
        grad_lp,
        want_grad,
        f"the gradient of your loss with respect to log_probs ({what})",
        [(-adv / lp.numel(), "the padding steps get a gradient: multiply by the mask")],
    )


@exercise_check("reinforce_loss")
def check_reinforce_loss(c: Check, fn: Callable) -> None:
    """Check ``reinforce_loss(log_probs, advantages, mask) -> scalar`` = −Σ m A log π / (N·T) on a hand case
    and against ``reference_reinforce_loss`` (the library's ``policy_loss``) on seeded random episodes,
    and the gradient by autograd. Catches a flipped sign, a forgotten mask (padding steps counted),
    probabilities instead of log-probs, other normalisations (token mean, sequence mean, plain sum, T taken
    as the longest real episode),
    a loss with no gradient, and a gradient that flows into the advantages (not detached)."""
    lp, adv, mask = (torch.tensor(x) for x in (LOSS_HAND_LOG_PROBS, LOSS_HAND_ADVANTAGES, LOSS_HAND_MASK))
    with c.worked_example():
        _check_loss_case(
            c, fn, lp, adv, mask, torch.tensor(LOSS_HAND_VALUE), "the worked example, 2 episodes x 3 steps"
        )
    lp, adv, mask = (torch.tensor(x) for x in (LOSS_SHORT_LOG_PROBS, LOSS_SHORT_ADVANTAGES, LOSS_SHORT_MASK))
    _check_loss_case(
        c, fn, lp, adv, mask, torch.tensor(LOSS_SHORT_VALUE), "2 episodes that both end before the budget of 4 steps"
    )
    gen = seeded_generator(SEED, 2)
    for n, t in [(6, 7), (3, 5)]:
        lp = torch.randn(n, t, 4, generator=gen).log_softmax(-1)[..., 0]  # log π of the moves made
        adv = 3.0 * torch.randn(n, t, generator=gen)
        lengths = torch.randint(1, t + 1, (n,), generator=gen)
        lengths[0] = t  # at least one episode uses the whole budget, at least one ends early
        lengths[-1] = max(1, t - 2)
        mask = (torch.arange(t) < lengths[:, None]).float()
        want = reference_reinforce_loss(lp, adv, mask).detach()
        _check_loss_case(c, fn, lp, adv, mask, want, f"random episodes [{n}, {t}]")


# ---------------------------------------------------------------------------------------------
# compute_gae
# ---------------------------------------------------------------------------------------------


def _gae_variant(
    inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],  # rewards, values, next_values, dones
    gamma: float,
    lam: float,
    *,
    delta_done: bool = True,
    recursion_done: bool = True,
    decay: str = "gamma_lam",
    bootstrap: str = "gamma",
    minus_value: bool = True,
    forward: bool = False,
    next_from_values: bool = False,
) -> torch.Tensor:
    """GAE with one knob turned (the reference when every knob is at its default)."""
    rewards, values, next_values, dones = inputs
    not_done = 1.0 - dones
    if next_from_values:
        next_values = torch.cat([values[..., 1:], torch.zeros_like(values[..., :1])], dim=-1)
    boot = {"gamma": gamma, "gamma_lam": gamma * lam, "one": 1.0}[bootstrap]
    deltas = rewards + boot * (not_done if delta_done else 1.0) * next_values - (values if minus_value else 0.0)
    factor = {"gamma_lam": gamma * lam, "gamma": gamma, "lam": lam, "zero": 0.0}[decay]
    if forward:
        return _forward_scan(deltas, lambda t: factor * (not_done[..., t - 1] if recursion_done and t else 1.0))
    return _backward_scan(deltas, lambda t: factor * (not_done[..., t] if recursion_done else 1.0))


def _gae_mistakes(rewards, values, next_values, dones, gamma, lam) -> list[tuple[torch.Tensor | None, str]]:
    inputs = (rewards, values, next_values, dones)
    args = (*inputs, gamma, lam)
    recursion = "A_t = δ_t + γ λ (1 − done_t) A_{t+1}"
    delta = "δ_t = r_t + γ (1 − done_t) V(s_{t+1}) − V(s_t)"
    correct = _ref_compute_gae(*args)
    backward = "; A_t gathers the FUTURE TD errors: loop t from the last step backward, " + recursion
    deltas = rewards + gamma * (1.0 - dones) * next_values - values
    earlier = torch.cat([torch.zeros_like(dones[..., :1]), dones[..., :-1]], dim=-1)
    return [
        *_off_by_one(correct, deltas, lambda t: gamma * lam * (1.0 - dones[..., t]), "A_t", f"{delta}, {recursion}"),
        (
            _backward_scan(deltas, lambda t: gamma * lam * (1.0 - earlier[..., t])),
            "your recursion resets one step early: multiply γλ A_{t+1} by (1 − done_t) of the step itself "
            "(dones[..., t], not dones[..., t - 1]), " + recursion,
        ),
        (
            _gae_variant(inputs, gamma, lam, decay="gamma"),
            f"you ignored lam (your recursion decays by γ alone; lam was {lam:g}): " + recursion,
        ),
        (
            _gae_variant(inputs, gamma, lam, decay="zero"),
            "you returned the TD errors δ_t (that is lam = 0); GAE accumulates them: " + recursion,
        ),
        (
            _gae_variant(inputs, gamma, lam, decay="lam"),
            "your recursion decays by λ alone; it decays by γλ: " + recursion,
        ),
        (_gae_variant(inputs, gamma, lam, bootstrap="gamma_lam"), "the TD error bootstraps with γ, not γλ: " + delta),
        (_gae_variant(inputs, gamma, lam, bootstrap="one"), "you forgot γ in the TD error: " + delta),
        (
            _gae_variant(inputs, gamma, lam, delta_done=False, recursion_done=False),
            "you ignored dones: there is no next state after an episode ends, so no bootstrap (γ V(s_{t+1})) and no "
            "A_{t+1} across the end: " + delta + ", " + recursion,
        ),
        (
            _gae_variant(inputs, gamma, lam, delta_done=False),
            "you bootstrapped past the episode end: where done_t = 1 there is no next state, so " + delta,
        ),
        (
            _gae_variant(inputs, gamma, lam, recursion_done=False),
            "your recursion runs across the episode end: multiply γλ A_{t+1} by (1 − done_t), " + recursion,
        ),
        (_gae_variant(inputs, gamma, lam, forward=True), "you ran the recursion forward in time" + backward),
        (
            _gae_variant(inputs, gamma, lam, forward=True, recursion_done=False),
            "you ran the recursion forward in time" + backward,
        ),
        (_gae_variant(inputs, gamma, lam, minus_value=False), "the TD error subtracts the current value: " + delta),
        (
            _gae_variant(inputs, gamma, lam, next_from_values=True),
            "take V(s_{t+1}) from next_values[..., t], not from "
            "values[..., t + 1] (the next state's value is given, also at "
            "the last step and at an episode end)",
        ),
        (correct + values, "you returned A_t + V(s_t), the value target; return the advantages A_t"),
        (
            _ref_discounted_returns(rewards, dones, gamma) - values,
            "you returned G_t − V(s_t), the Monte Carlo advantage (lam = 1 with a consistent V); use the TD errors "
            "of the given next_values: " + delta + ", " + recursion,
        ),
        (
            _ref_compute_gae(rewards, values, next_values, dones, lam, gamma) if gamma != lam else None,
            f"you swapped gamma and lam (called with gamma={gamma:g}, lam={lam:g}): the arguments are (rewards, "
            "values, next_values, dones, gamma, lam); γ discounts the TD error's bootstrap, γλ the recursion",
        ),
        (
            _along_first_axis(_ref_compute_gae, rewards, values, next_values, dones, gamma, lam),
            "you ran the recursion along the FIRST axis (the episodes); time is the LAST axis: x[..., t], for t "
            "from the last step down to 0",
        ),
    ]


def _check_gae_case(
    c: Check,
    fn: Callable,
    inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],  # rewards, values, next_values, dones
    gamma: float,
    lam: float,
    want: torch.Tensor,
    what: str,
) -> None:
    copies = tuple(x.clone() for x in inputs)
    got = c.call(fn, *copies, gamma, lam, call=what, hints=_LAST_AXIS_HINTS)
    names = ("rewards", "values", "next_values", "dones")
    c.unchanged(dict(zip(names, inputs)), dict(zip(names, copies)), what, _NEW_TENSOR)
    got = _result(c, got, want, what)
    c.close(got, want, what, _gae_mistakes(*inputs, gamma, lam))


# (rewards, values, next_values, dones, gamma, lam, advantages by hand)
GAE_HAND_CASES = [
    # δ = [0.9·0.6 − 0.5, 0.9·0.8 − 0.6, 1 − 0.8] = [0.04, 0.12, 0.2] (no bootstrap at the end: done);
    # A_2 = 0.2, A_1 = 0.12 + 0.45·0.2 = 0.21, A_0 = 0.04 + 0.45·0.21 = 0.1345
    ([0.0, 0.0, 1.0], [0.5, 0.6, 0.8], [0.6, 0.8, 0.7], [0.0, 0.0, 1.0], 0.9, 0.5, [0.1345, 0.21, 0.2]),
    # two episodes: δ = [0.16, 0.6, −0.21, 0.94]; A_3 = 0.94, A_2 = −0.21 + 0.45·0.94 = 0.213,
    # A_1 = 0.6 (the episode ended: no A_2 behind it), A_0 = 0.16 + 0.45·0.6 = 0.43
    (
        [0.0, 1.0, 0.0, 0.5],
        [0.2, 0.4, 0.3, 0.1],
        [0.4, 0.9, 0.1, 0.6],
        [0.0, 1.0, 0.0, 0.0],
        0.9,
        0.5,
        [0.43, 0.6, 0.213, 0.94],
    ),
]


@exercise_check("compute_gae")
def check_compute_gae(c: Check, fn: Callable) -> None:
    """Check ``compute_gae(rewards, values, next_values, dones, gamma, lam) -> advantages`` on two hand
    cases, the limits λ = 0 (the TD errors δ_t) and λ = 1 (G_t − V(s_t) for consistent values), and
    against ``minirl.compute_gae`` on seeded random inputs of shapes [episode, time], [time] and
    [2, 3, time]. Catches λ ignored, only δ, λ instead of γλ (and γλ in δ), a bootstrap or a
    recursion past the episode end, a forward recursion, δ without −V(s_t), values[t + 1] instead
    of next_values[t], gamma and lam swapped, the recursion along the first axis, and returning the
    value targets A + V."""
    for rewards, values, next_values, dones, gamma, lam, want in GAE_HAND_CASES:  # hand-worked first: readable
        inputs = (torch.tensor(rewards), torch.tensor(values), torch.tensor(next_values), torch.tensor(dones))
        with c.worked_example():
            _check_gae_case(
                c,
                fn,
                inputs,
                gamma,
                lam,
                torch.tensor(want),
                f"rewards {rewards}, values {values}, next_values {next_values}, dones {dones}, "
                f"gamma={gamma}, lam={lam}",
            )
    gen = seeded_generator(SEED, 3)
    for shape, gamma, lam in [((4, 9), 0.9, 0.8), ((12,), 1.0, 0.95), ((2, 3, 7), 0.8, 0.6)]:
        inputs = (
            torch.randn(*shape, generator=gen),
            torch.randn(*shape, generator=gen),
            torch.randn(*shape, generator=gen),
            _random_dones(shape, gen),
        )
        _check_gae_case(
            c,
            fn,
            inputs,
            gamma,
            lam,
            _ref_compute_gae(*inputs, gamma, lam),
            f"random inputs {list(shape)}, gamma={gamma}, lam={lam}",
        )
    # the two limits, on consistent values (next_values[t] = values[t + 1] inside an episode, 0 after its end)
    shape = (3, 8)
    rewards, values = torch.randn(*shape, generator=gen), torch.randn(*shape, generator=gen)
    dones = _random_dones(shape, gen)
    next_values = torch.cat([values[..., 1:], torch.zeros_like(values[..., :1])], dim=-1) * (1.0 - dones)
    inputs = (rewards, values, next_values, dones)
    td = rewards + 0.9 * next_values - values
    _check_gae_case(c, fn, inputs, 0.9, 0.0, td, "lam=0 (consistent values, gamma=0.9): the TD errors δ_t")
    _check_gae_case(
        c,
        fn,
        inputs,
        0.9,
        1.0,
        _ref_discounted_returns(rewards, dones, 0.9) - values,
        "lam=1 (consistent values, gamma=0.9): G_t − V(s_t)",
    )

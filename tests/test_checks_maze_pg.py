"""The policy-gradient maze notebook's exercise checks: the references pass, stubs say "not implemented
yet", and plausible wrong implementations are each caught with a message that names the mistake."""

from __future__ import annotations

import pytest
import torch
from check_helpers import ALL_CHECKS, caught, float32_approx, run, stub

import minirl
from minirl import checks
from minirl.checks import (
    check_compute_gae,
    check_discounted_returns,
    check_reinforce_loss,
    reference_reinforce_loss,
    use_reference,
)
from minirl.checks import nb02_maze_pg as maze_pg_checks
from minirl.checks.nb02_maze_pg import GAE_HAND_CASES, LOSS_HAND_VALUE, RETURNS_HAND_CASES
from minirl.losses import policy_loss


def test_exports_and_fallback(capsys):
    assert {c.__name__ for c in ALL_CHECKS} <= set(checks.__all__)
    assert use_reference(stub, minirl.compute_gae, False) is minirl.compute_gae
    assert "minirl.compute_gae" in capsys.readouterr().out
    assert use_reference(stub, reference_reinforce_loss, False) is reference_reinforce_loss
    assert "reference_reinforce_loss" in capsys.readouterr().out


def test_hand_constants_agree_with_the_references():
    for rewards, dones, gamma, want in RETURNS_HAND_CASES:
        got = minirl.discounted_returns(torch.tensor(rewards), torch.tensor(dones), gamma)
        torch.testing.assert_close(got, torch.tensor(want))
    for rewards, values, next_values, dones, gamma, lam, want in GAE_HAND_CASES:
        args = [torch.tensor(x) for x in (rewards, values, next_values, dones)]
        torch.testing.assert_close(minirl.compute_gae(*args, gamma, lam), torch.tensor(want))
    lp = torch.tensor([[-0.5, -1.0, -2.0], [-1.5, -0.2, -0.7]])
    adv = torch.tensor([[2.0, 2.0, 4.0], [-1.0, -1.0, 3.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    assert reference_reinforce_loss(lp, adv, mask).item() == float32_approx(LOSS_HAND_VALUE)
    short = [
        torch.tensor(x)
        for x in (
            maze_pg_checks.LOSS_SHORT_LOG_PROBS,
            maze_pg_checks.LOSS_SHORT_ADVANTAGES,
            maze_pg_checks.LOSS_SHORT_MASK,
        )
    ]
    assert reference_reinforce_loss(*short).item() == float32_approx(maze_pg_checks.LOSS_SHORT_VALUE)


def test_reference_loss_has_the_library_gradient():
    gen = torch.Generator().manual_seed(0)
    lp = torch.randn(5, 6, generator=gen).requires_grad_(True)
    adv = torch.randn(5, 6, generator=gen)
    mask = (torch.arange(6) < torch.tensor([6, 2, 4, 6, 1])[:, None]).float()
    ours = torch.autograd.grad(reference_reinforce_loss(lp, adv, mask), lp)[0]
    library, _ = policy_loss(
        lp.unsqueeze(1), None, adv.unsqueeze(1), mask.unsqueeze(1), clip_eps_low=None, aggregation="constant"
    )
    torch.testing.assert_close(ours, torch.autograd.grad(library, lp)[0])


# ---- discounted_returns ---------------------------------------------------------------------------


def backward_returns(rewards, dones, gamma, *, discount=True, reset=True, late_reset=False, zero_at_end=False):
    """A learner's backward loop, with the knobs a learner might get wrong."""
    g = gamma if discount else 1.0
    returns = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[..., 0])
    T = rewards.shape[-1]
    for t in reversed(range(T)):
        if late_reset:
            keep = 1.0 - dones[..., t + 1] if t + 1 < T else 1.0
        else:
            keep = 1.0 - dones[..., t] if reset else 1.0
        if zero_at_end:  # the reset also wipes the reward of the episode's last step
            running = (rewards[..., t] + g * running) * (1.0 - dones[..., t])
        else:
            running = rewards[..., t] + g * keep * running
        returns[..., t] = running
    return returns


def forward_returns(rewards, dones, gamma, *, reset=True):
    returns = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[..., 0])
    for t in range(rewards.shape[-1]):
        keep = 1.0 - dones[..., t - 1] if (reset and t > 0) else 1.0
        running = rewards[..., t] + gamma * keep * running
        returns[..., t] = running
    return returns


def discount_from_start(rewards, dones, gamma):
    """G_t = sum_{t' >= t in the episode} gamma^t' r_t' (the exponent counted from 0, not from t)."""
    T = rewards.shape[-1]
    returns = torch.zeros_like(rewards)
    for t in range(T):
        total = torch.zeros_like(rewards[..., 0])
        alive = torch.ones_like(total)
        for k in range(t, T):
            total = total + alive * gamma**k * rewards[..., k]
            alive = alive * (1.0 - dones[..., k])
        returns[..., t] = total
    return returns


def episode_total(rewards, dones, gamma):
    """Every step gets G of the first step of its episode."""
    full = minirl.discounted_returns(rewards, dones, gamma)
    out = torch.zeros_like(rewards)
    first = torch.zeros_like(rewards[..., 0])
    for t in range(rewards.shape[-1]):
        if t > 0:
            first = torch.where(dones[..., t - 1] > 0, full[..., t], first)
        else:
            first = full[..., 0]
        out[..., t] = first
    return out


def in_place(rewards, dones, gamma):
    for t in reversed(range(rewards.shape[-1] - 1)):
        rewards[..., t] += gamma * (1.0 - dones[..., t]) * rewards[..., t + 1]
    return rewards


def two_dim_only(rewards, dones, gamma):
    returns = torch.zeros_like(rewards)
    running = torch.zeros(rewards.shape[0])
    for t in reversed(range(rewards.shape[-1])):
        running = rewards[:, t] + gamma * (1.0 - dones[:, t]) * running
        returns[:, t] = running
    return returns


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (lambda r, d, g: backward_returns(r, d, g, discount=False), ["did not discount"]),
        (discount_from_start, ["from the start", "counted from t"]),
        (lambda r, d, g: g * minirl.discounted_returns(r, d, g), ["step itself is not discounted"]),
        (lambda r, d, g: forward_returns(r, d, g, reset=False), ["forward in time", "backward"]),
        (forward_returns, ["forward in time", "backward"]),
        (lambda r, d, g: backward_returns(r, d, g, reset=False), ["did not reset", "1 - done_t"]),
        (lambda r, d, g: backward_returns(r, d, g, late_reset=True), ["one step late"]),
        (lambda r, d, g: backward_returns(r, d, g, zero_at_end=True), ["zeroed", "only the future"]),
        (episode_total, ["whole episode", "from t onward"]),
        (lambda r, d, g: r.sum(dim=-1, keepdim=True).expand_as(r), ["total of all rewards"]),
        (lambda r, d, g: r.clone(), ["rewards themselves"]),
        (in_place, ["in place"]),
        (two_dim_only, ["IndexError", "[..., t]"]),
        (lambda r, d, g: minirl.discounted_returns(r, d, g).tolist(), ["torch.Tensor"]),
        (lambda r, d, g: minirl.discounted_returns(r, d, g)[..., :-1], ["shape"]),
    ],
)
def test_discounted_returns_mistakes(wrong, keywords, capsys):
    caught(check_discounted_returns, wrong, capsys, *keywords)


def test_discounted_returns_accepts_a_loop_over_episodes(capsys):
    def loop(rewards, dones, gamma=1.0):
        flat_r, flat_d = rewards.reshape(-1, rewards.shape[-1]), dones.reshape(-1, dones.shape[-1])
        out = torch.zeros_like(flat_r)
        for i in range(flat_r.shape[0]):
            g = 0.0
            for t in reversed(range(flat_r.shape[1])):
                g = flat_r[i, t].item() + gamma * (1.0 - flat_d[i, t].item()) * g
                out[i, t] = g
        return out.reshape(rewards.shape)

    assert run(check_discounted_returns, loop, capsys)[0] is True


# ---- reinforce_loss -------------------------------------------------------------------------------


def ratio_form(lp, adv, mask):
    return -(mask * adv.detach() * torch.exp(lp - lp.detach())).sum() / lp.numel()


def no_grad_loss(lp, adv, mask):
    with torch.no_grad():
        return -(mask * adv * lp).mean()


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (lambda lp, a, m: (m * a.detach() * lp).mean(), ["wrong sign", "minimise"]),
        (lambda lp, a, m: -(a.detach() * lp).mean(), ["forgot the mask", "padding"]),
        (lambda lp, a, m: -(m * a.detach() * lp.exp()).mean(), ["log-probabilities", "not the probabilities"]),
        (lambda lp, a, m: -(m * a * lp).mean(), ["gradient flows into the advantages", "detach"]),
        (lambda lp, a, m: -(m * a.detach() * lp).sum() / m.sum(), ["number of real steps", "N·T"]),
        (lambda lp, a, m: -((m * a.detach() * lp).sum(1) / m.sum(1)).mean(), ["sequence mean", "N·T"]),
        (lambda lp, a, m: -(m * a.detach() * lp).sum(), ["without normalising"]),
        (lambda lp, a, m: -(m * a.detach() * lp).sum() / lp.shape[0], ["number of episodes only"]),
        (
            lambda lp, a, m: -(m * a.detach() * lp).sum() / (lp.shape[0] * m.sum(1).max()),
            ["longest REAL episode", "step budget"],
        ),
        (ratio_form, ["ratio form", "log-prob form"]),
        (lambda lp, a, m: -(m * a.detach() * lp).mean().item(), ["torch.Tensor", ".item()"]),
        (lambda lp, a, m: -(m * a.detach() * lp), ["single number", "per-step terms"]),
        (no_grad_loss, ["carries no gradient"]),
        (lambda lp, a, m: -(m * a.detach() * lp.detach()).mean(), ["carries no gradient"]),
    ],
)
def test_reinforce_loss_mistakes(wrong, keywords, capsys):
    caught(check_reinforce_loss, wrong, capsys, *keywords)


def test_reinforce_loss_accepts_other_correct_forms(capsys):
    assert run(check_reinforce_loss, lambda lp, a, m: -(m * a.detach() * lp).mean(), capsys)[0]
    assert run(check_reinforce_loss, lambda lp, a, m: -(a.detach() * lp)[m.bool()].sum() / m.numel(), capsys)[0]
    assert run(
        check_reinforce_loss,
        lambda lp, a, m: -torch.einsum("it,it,it->", m, a.detach(), lp) / (lp.shape[0] * lp.shape[1]),
        capsys,
    )[0]


def test_reinforce_loss_in_place_is_caught(capsys):
    def in_place(lp, a, m):
        a = a.detach()
        a.mul_(m)  # detach() shares memory: this edits the caller's advantages
        return -(a * lp).mean()

    caught(check_reinforce_loss, in_place, capsys, "in place")


# ---- compute_gae ----------------------------------------------------------------------------------


def knobs(
    *,
    delta_done=True,
    recursion_done=True,
    decay="gamma_lam",
    bootstrap="gamma",
    minus_value=True,
    forward=False,
    next_from_values=False,
):
    """A learner's GAE loop with the knobs a learner might get wrong."""

    def gae(rewards, values, next_values, dones, gamma, lam):
        if next_from_values:
            next_values = torch.cat([values[..., 1:], torch.zeros_like(values[..., :1])], dim=-1)
        boot = {"gamma": gamma, "gamma_lam": gamma * lam, "one": 1.0}[bootstrap]
        factor = {"gamma_lam": gamma * lam, "gamma": gamma, "lam": lam, "zero": 0.0}[decay]
        T = rewards.shape[-1]
        deltas = torch.zeros_like(rewards)
        for t in range(T):
            keep = 1.0 - dones[..., t] if delta_done else 1.0
            deltas[..., t] = (
                rewards[..., t] + boot * keep * next_values[..., t] - (values[..., t] if minus_value else 0)
            )
        adv = torch.zeros_like(rewards)
        running = torch.zeros_like(rewards[..., 0])
        order = range(T) if forward else reversed(range(T))
        for t in order:
            if forward:
                keep = 1.0 - dones[..., t - 1] if (recursion_done and t > 0) else 1.0
            else:
                keep = 1.0 - dones[..., t] if recursion_done else 1.0
            running = deltas[..., t] + factor * keep * running
            adv[..., t] = running
        return adv

    return gae


def test_the_knob_free_loop_is_correct(capsys):
    assert run(check_compute_gae, knobs(), capsys)[0] is True


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (knobs(decay="gamma"), ["ignored lam"]),
        (knobs(decay="zero"), ["TD errors", "accumulates"]),
        (knobs(decay="lam"), ["λ alone", "γλ"]),
        (knobs(bootstrap="gamma_lam"), ["bootstraps with γ, not γλ"]),
        (knobs(bootstrap="one"), ["forgot γ"]),
        (knobs(delta_done=False, recursion_done=False), ["ignored dones"]),
        (knobs(delta_done=False), ["bootstrapped past the episode end"]),
        (knobs(recursion_done=False), ["across the episode end", "(1 − done_t)"]),
        (knobs(forward=True), ["forward in time", "backward"]),
        (knobs(forward=True, recursion_done=False), ["forward in time"]),
        (knobs(minus_value=False), ["subtracts the current value"]),
        (knobs(next_from_values=True), ["next_values[..., t]", "values[..., t + 1]"]),
        (lambda *args: minirl.compute_gae(*args) + args[1], ["value target"]),
        (lambda r, v, nv, d, g, lam: minirl.discounted_returns(r, d, g) - v, ["Monte Carlo", "next_values"]),
        (
            lambda r, v, nv, d, g, lam: minirl.compute_gae(r.flatten(), v.flatten(), nv.flatten(), d.flatten(), g, lam),
            ["shape"],
        ),
    ],
)
def test_compute_gae_mistakes(wrong, keywords, capsys):
    caught(check_compute_gae, wrong, capsys, *keywords)


def test_compute_gae_in_place_is_caught(capsys):
    def in_place(rewards, values, next_values, dones, gamma, lam):
        rewards += gamma * (1.0 - dones) * next_values - values  # the deltas, written over the rewards
        running = torch.zeros_like(rewards[..., 0])
        for t in reversed(range(rewards.shape[-1])):
            running = rewards[..., t] + gamma * lam * (1.0 - dones[..., t]) * running
            rewards[..., t] = running
        return rewards

    caught(check_compute_gae, in_place, capsys, "in place")


# ---- off-by-one loops, sign flips, the reset one step early (named; issue 11) ---------------------


def learner_loop(x, factor, *, skip_last=False, stop=-1, store_first=False):
    """A learner's backward loop out_t = x_t + factor(t) out_{t+1}, with the off-by-one knobs: the loop's
    range (from T − 2 with skip_last, down to stop + 1), storing out_t before adding x_t."""
    T = x.shape[-1]
    out = torch.zeros_like(x)
    running = torch.zeros_like(x[..., 0])
    for t in range(T - 2 if skip_last else T - 1, stop, -1):
        if store_first:
            running = factor(t) * running
            out[..., t] = running
            running = running + x[..., t]
        else:
            running = x[..., t] + factor(t) * running
            out[..., t] = running
    return out


def returns_with(**knobs):
    def discounted_returns(rewards, dones, gamma):
        return learner_loop(rewards, lambda t: gamma * (1.0 - dones[..., t]), **knobs)

    return discounted_returns


def returns_early_reset(rewards, dones, gamma):
    return learner_loop(rewards, lambda t: gamma * (1.0 - (dones[..., t - 1] if t else 0.0)))


def returns_shifted(rewards, dones, gamma):
    g = minirl.discounted_returns(rewards, dones, gamma)
    return torch.cat([g[..., 1:], torch.zeros_like(g[..., :1])], dim=-1)


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (returns_with(store_first=True), ["off by one", "before adding", "G_t"]),
        (returns_shifted, ["off by one", "NEXT step"]),
        (returns_with(stop=0), ["off by one", "never reaches t = 0"]),
        (returns_with(skip_last=True), ["off by one", "T − 2"]),
        (lambda r, d, g: -minirl.discounted_returns(r, d, g), ["wrong sign"]),
        (returns_early_reset, ["one step early", "dones[..., t - 1]"]),
    ],
    ids=["stored-before-adding", "next-step", "skips-t0", "skips-last", "sign", "early-reset"],
)
def test_discounted_returns_off_by_one_and_sign(wrong, keywords, capsys):
    caught(check_discounted_returns, wrong, capsys, *keywords)


def gae_with(sign=1.0, **knobs):
    def compute_gae(rewards, values, next_values, dones, gamma=1.0, lam=0.95):
        deltas = sign * (rewards + gamma * (1.0 - dones) * next_values - values)
        return learner_loop(deltas, lambda t: gamma * lam * (1.0 - dones[..., t]), **knobs)

    return compute_gae


def gae_early_reset(rewards, values, next_values, dones, gamma=1.0, lam=0.95):
    deltas = rewards + gamma * (1.0 - dones) * next_values - values
    return learner_loop(deltas, lambda t: gamma * lam * (1.0 - (dones[..., t - 1] if t else 0.0)))


def gae_shifted(*args):
    a = minirl.compute_gae(*args)
    return torch.cat([a[..., 1:], torch.zeros_like(a[..., :1])], dim=-1)


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (gae_with(store_first=True), ["off by one", "before adding", "A_t"]),
        (gae_shifted, ["off by one", "NEXT step"]),
        (gae_with(stop=0), ["off by one", "never reaches t = 0"]),
        (gae_with(skip_last=True), ["off by one", "T − 2"]),
        (gae_with(sign=-1.0), ["wrong sign"]),  # δ_t = V(s_t) − r_t − γ V(s_{t+1})
        (gae_early_reset, ["resets one step early", "dones[..., t - 1]"]),
    ],
    ids=["stored-before-adding", "next-step", "skips-t0", "skips-last", "sign", "early-reset"],
)
def test_compute_gae_off_by_one_and_sign(wrong, keywords, capsys):
    caught(check_compute_gae, wrong, capsys, *keywords)


# ---- the hand-worked cases come first: a failure quotes their numbers (issue 11) --------------------


def test_returns_failure_quotes_the_first_hand_case(capsys):
    def squared_gamma(rewards, dones, gamma):  # no named mistake: the line shows the small example
        return minirl.discounted_returns(rewards, dones, gamma**2)

    line = caught(
        check_discounted_returns,
        squared_gamma,
        capsys,
        "rewards [1.0, 0.0, 2.0]",
        "gamma=0.5",
        "expected [1.5, 1.0, 2.0]",
    )
    assert "random" not in line


def test_an_ambiguous_hand_case_defers_the_name_to_the_random_cases(capsys):
    # returns_with(skip_last=True) also matches "zeroed the whole G_t at the end" on the first hand case (its episode
    # ends at the last step): the random cases tell them apart, and the line still quotes the worked example
    line = caught(
        check_discounted_returns,
        returns_with(skip_last=True),
        capsys,
        "T − 2",
        "on the worked example",
        "expected [1.5, 1.0, 2.0]",
    )
    assert "zeroed" not in line


def test_gae_failure_quotes_the_first_hand_case(capsys):
    def lam_squared(rewards, values, next_values, dones, gamma=1.0, lam=0.95):
        return minirl.compute_gae(rewards, values, next_values, dones, gamma, lam**2)

    caught(check_compute_gae, lam_squared, capsys, "rewards [0.0, 0.0, 1.0]", "expected [0.1345, 0.21, 0.2]")


# ---- more named mistakes (issue 19) ---------------------------------------------------------------------


def returns_gamma_on_the_reward(rewards, dones, gamma):
    """G_t = γ r_t + (1 − done_t) G_{t+1}: the discount on the wrong term."""
    out, running = torch.zeros_like(rewards), torch.zeros_like(rewards[..., 0])
    for t in reversed(range(rewards.shape[-1])):
        running = gamma * rewards[..., t] + (1.0 - dones[..., t]) * running
        out[..., t] = running
    return out


def returns_along_the_first_axis(rewards, dones, gamma):
    """The loop indexes rewards[t] (the first axis) instead of rewards[..., t]."""
    out, running = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):
        running = rewards[t] + gamma * (1.0 - dones[t]) * running
        out[t] = running
    return out


def gae_along_the_first_axis(rewards, values, next_values, dones, gamma, lam):
    moved = [x.movedim(0, -1) for x in (rewards, values, next_values, dones)]
    return minirl.compute_gae(*moved, gamma, lam).movedim(-1, 0)


@pytest.mark.parametrize(
    "check, wrong, keywords",
    [
        (
            check_discounted_returns,
            returns_gamma_on_the_reward,
            ["discounted the step's own reward", "not gamma r_t + (1 - done_t) G_{t+1}"],
        ),
        (
            check_discounted_returns,
            returns_along_the_first_axis,
            ["random rewards [4, 9]", "FIRST axis", "time is the LAST axis"],
        ),
        (
            check_compute_gae,
            lambda r, v, nv, d, gamma, lam: minirl.compute_gae(r, v, nv, d, lam, gamma),
            ["swapped gamma and lam", "called with gamma=0.9, lam=0.5"],
        ),
        (check_compute_gae, gae_along_the_first_axis, ["random inputs [4, 9]", "FIRST axis"]),
    ],
    ids=["returns-gamma-on-reward", "returns-first-axis", "gae-gamma-lam-swapped", "gae-first-axis"],
)
def test_more_named_mistakes(check, wrong, keywords, capsys):
    caught(check, wrong, capsys, *keywords)

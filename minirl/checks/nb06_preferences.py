"""Checks for the rewards, preferences and DPO notebook (06), named after the function they check.

    check_bradley_terry_loss(fn)     fn(r_chosen[batch], r_rejected[batch]) -> scalar loss
    check_dpo_loss(fn)               fn(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
                                        ref_rejected_logps, beta) -> (loss, chosen_rewards, rejected_rewards)
    check_per_position_reward(fn)    fn(prompts[batch, pos], responses[batch, trial, pos]) -> [batch, trial, pos]

Expected values are hand-computed constants (margins 0, ±1, ±2, ±200; β = 0.1 and 0.5) and the
references on seeded random inputs: ``minirl.losses.bradley_terry_loss``,
``minirl.losses.dpo_loss`` and ``reference_per_position_reward`` (the process reward of
``SortingTask.per_position_rewards``). Never the learner's own function. When a result is wrong, each
check compares it with the results of the usual mistakes (a flipped sign, the margin reversed, a sum
instead of the mean, log(sigmoid(·)) that overflows, β or the reference forgotten, probabilities for
log-probs, the prompt instead of the sorted prompt, ...) and names the one it matches.

The references, for the fallback cell of each exercise::

    bradley_terry_loss = use_reference(bradley_terry_loss, minirl.bradley_terry_loss, ok)
    dpo_loss = use_reference(dpo_loss, minirl.dpo_loss, ok)
    per_position_reward = use_reference(per_position_reward, reference_per_position_reward, ok)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from minirl.checks._core import Check, exercise_check, seeded_generator, tensors_close
from minirl.losses import bradley_terry_loss as _ref_bradley_terry_loss
from minirl.losses import dpo_loss as _ref_dpo_loss

__all__ = [
    "check_bradley_terry_loss",
    "check_dpo_loss",
    "check_per_position_reward",
    "reference_per_position_reward",
]

SEED = 2026


def _scalar(c: Check, got, batch: int, what: str) -> torch.Tensor:
    got = c.tensor(got, what)
    if got.dim() != 0:
        hint = (
            " — you returned one loss per pair; take their mean"
            if tuple(got.shape) == (batch,)
            else " — use .mean() over the pairs (no keepdim)"
            if got.numel() == 1
            else ""
        )
        c.fail(
            f"{what}: the loss should be a single number (a 0-dim tensor, e.g. from .mean()); got shape "
            f"{list(got.shape)}{hint}"
        )
    c.passed += 1
    return got


def _finite(c: Check, got: torch.Tensor, what: str, margins: str) -> None:
    value = float(got.detach())
    c.expect(
        math.isfinite(value),
        f"{what}: your loss is {value} for reward margins of {margins} — "
        "log(sigmoid(m)) underflows to log(0) = −inf once σ(m) rounds to 0 (and exp "
        "overflows to inf): use F.logsigmoid(m), which is exact for any m",
    )


# ---------------------------------------------------------------------------------------------
# bradley_terry_loss
# ---------------------------------------------------------------------------------------------

# (r_chosen, r_rejected, the loss by hand, what)
BT_HAND_CASES = [
    # margins 2, 0, −1, −0.5: (softplus(−2) + softplus(0) + softplus(1) + softplus(0.5)) / 4
    #                        = (0.126928 + 0.693147 + 1.313262 + 0.974077) / 4
    ([1.0, 0.5, -1.0, 2.0], [-1.0, 0.5, 0.0, 2.5], 0.7768534658, "margins [2, 0, -1, -0.5]"),
    # margin 0 everywhere: the model cannot tell the two apart, −log σ(0) = log 2
    ([0.3, -1.2], [0.3, -1.2], math.log(2.0), "margins [0, 0]"),
]
# margins 200, −200, 0: (softplus(−200) + softplus(200) + log 2) / 3 = (0 + 200 + log 2) / 3
BT_BIG = ([100.0, -50.0, 3.0], [-100.0, 150.0, 3.0], (200.0 + math.log(2.0)) / 3.0, "margins [200, -200, 0]")


def _bt_mistakes(rc: torch.Tensor, rr: torch.Tensor) -> list[tuple[torch.Tensor | None, str]]:
    m = rc - rr
    return [
        (
            F.logsigmoid(m).mean(),
            "wrong sign: the loss is the NEGATIVE log-likelihood, −mean log σ(r_chosen − "
            "r_rejected), so that minimising it raises the chosen rewards",
        ),
        (
            -F.logsigmoid(-m).mean(),
            "the margin is reversed: use r_chosen − r_rejected (the preferred response "
            "should score higher); in softplus form the loss is softplus(r_rejected − "
            "r_chosen), not softplus(r_chosen − r_rejected)",
        ),
        (-F.logsigmoid(m).sum(), "you summed over the pairs; take the mean"),
        (
            -(F.logsigmoid(rc) + F.logsigmoid(-rr)).mean(),
            "you scored each response on its own (as if classifying chosen = 1, rejected = 0); Bradley–Terry only "
            "looks at the DIFFERENCE: −log σ(r_chosen − r_rejected)",
        ),
        (
            -(F.logsigmoid(rc) + F.logsigmoid(-rr)).mean() / 2,
            "you scored each response on its own (as if classifying chosen = 1, rejected = 0); Bradley–Terry only "
            "looks at the DIFFERENCE: −log σ(r_chosen − r_rejected)",
        ),
        (-torch.sigmoid(m).mean(), "you forgot the log: −mean log σ(r_chosen − r_rejected)"),
        (1 - torch.sigmoid(m).mean(), "you forgot the log: −mean log σ(r_chosen − r_rejected)"),
        (-F.logsigmoid(m.mean()), "you took log σ of the mean margin; take the mean of −log σ over the pairs"),
        (F.softplus(-m).mean() - math.log(2.0), "you subtracted log 2: the loss is exactly −mean log σ(margin)"),
    ]


def _check_bt_case(
    c: Check, fn: Callable, rc: torch.Tensor, rr: torch.Tensor, want: float, what: str, big: bool = False
) -> None:
    r_chosen, r_rejected = rc.clone().requires_grad_(True), rr.clone().requires_grad_(True)
    got = c.call(
        fn,
        r_chosen,
        r_rejected,
        call=what,
        hints=[("size of tensor", "r_chosen and r_rejected both have shape [batch]: subtract them elementwise")],
    )
    c.unchanged({"r_chosen": rc, "r_rejected": rr}, {"r_chosen": r_chosen, "r_rejected": r_rejected}, what)
    label = f"loss ({what})"
    got = _scalar(c, got, rc.shape[0], label)
    mistakes = _bt_mistakes(rc, rr)
    if big:
        _finite(c, got, label, "±200")
        mistakes = mistakes[:4]
        known = any(wrong is not None and tensors_close(got.detach(), wrong) for wrong, _ in mistakes)
        # right on small margins, finite but far too small on big ones: a clamped probability caps the loss
        value = float(got.detach())
        c.expect(
            known or value > want - 1.0,
            f"{label}: expected {want:.4g}, got {value:.4g} — a confidently wrong pair (margin −200) must "
            "cost about 200, since −log σ(m) ≈ −m for very negative m; clamping σ or its log caps the loss: use "
            "F.logsigmoid",
        )
    c.close(got, torch.tensor(want), label, mistakes)
    c.expect(
        got.requires_grad,
        f"{label}: your loss carries no gradient — keep it a tensor computed from the "
        "rewards (no .item(), .detach() or torch.no_grad())",
    )
    grads = torch.autograd.grad(got, [r_chosen, r_rejected], allow_unused=True)
    c.expect(all(g is not None for g in grads), f"{label}: your loss does not depend on both r_chosen and r_rejected")
    # d L / d r_chosen = −σ(−m) / N and d L / d r_rejected = +σ(−m) / N
    rc2, rr2 = rc.clone().requires_grad_(True), rr.clone().requires_grad_(True)
    want_grads = torch.autograd.grad(_ref_bradley_terry_loss(rc2, rr2), [rc2, rr2])
    c.close(
        grads[0],
        want_grads[0],
        f"the gradient of your loss with respect to r_chosen ({what})",
        [(-want_grads[0], "it points the wrong way: lowering the loss must RAISE the chosen rewards")],
    )
    c.close(grads[1], want_grads[1], f"the gradient of your loss with respect to r_rejected ({what})")


@exercise_check("bradley_terry_loss")
def check_bradley_terry_loss(c: Check, fn: Callable) -> None:
    """Check ``bradley_terry_loss(r_chosen, r_rejected) -> scalar`` = −mean log σ(r_chosen − r_rejected) on hand
    cases (margins 2, 0, −1, −0.5; all 0 → log 2; ±200, where it must stay finite) and against
    ``minirl.bradley_terry_loss`` on seeded random rewards, and its gradient by autograd. Catches a flipped
    sign, the margin reversed (or softplus of the margin), a sum instead of the mean, each response scored on
    its own, a missing log, log σ of the mean margin, log(sigmoid(·)) that overflows for big margins, no
    gradient, and edits of the inputs in place."""
    for rc, rr, want, what in BT_HAND_CASES:
        _check_bt_case(c, fn, torch.tensor(rc), torch.tensor(rr), want, what)
    gen = seeded_generator(SEED, 1)
    rc, rr = 2.0 * torch.randn(6, generator=gen), 2.0 * torch.randn(6, generator=gen)
    _check_bt_case(c, fn, rc, rr, float(_ref_bradley_terry_loss(rc, rr)), "random rewards [6]")
    rc, rr, want, what = BT_BIG
    _check_bt_case(c, fn, torch.tensor(rc), torch.tensor(rr), want, what, big=True)


# ---------------------------------------------------------------------------------------------
# dpo_loss
# ---------------------------------------------------------------------------------------------

# policy_chosen, policy_rejected, ref_chosen, ref_rejected: log-ratios chosen [1, 0], rejected [−1, 1]
DPO_HAND_LOGPS = ([-5.0, -8.0], [-7.0, -6.0], [-6.0, -8.0], [-6.0, -7.0])
# beta -> (loss, chosen_rewards, rejected_rewards) by hand
DPO_HAND = {
    # rewards β·[1, 0] and β·[−1, 1]; margins [1, −0.5]: (softplus(−1) + softplus(0.5)) / 2
    0.5: (0.6436693358, [0.5, 0.0], [-0.5, 0.5]),
    # margins [0.2, −0.1]: (softplus(−0.2) + softplus(0.1)) / 2 = (0.598139 + 0.744397) / 2
    0.1: (0.6712677647, [0.1, 0.0], [-0.1, 0.1]),
}
# a confident policy: chosen rewards 0.5·[−390, 1], rejected 0.5·[1, −280]; margins [−195.5, 140.5]:
# (softplus(195.5) + softplus(−140.5)) / 2 = 195.5 / 2
DPO_BIG_LOGPS = ([-400.0, -3.0], [-5.0, -300.0], [-10.0, -4.0], [-6.0, -20.0])
DPO_BIG = (0.5, 97.75, [-195.0, 0.5], [0.5, -140.0])


def _dpo_with(pc, pr, rc, rr, beta, *, reward="log_ratio", combine="difference", sign=-1.0, reduce="mean"):
    """The DPO loss with one knob turned: how the implicit reward is formed, how the two combine, ..."""
    chosen, rejected = {
        "log_ratio": lambda: (beta * (pc - rc), beta * (pr - rr)),
        "no_beta": lambda: (pc - rc, pr - rr),
        "no_ref": lambda: (beta * pc, beta * pr),
        "probs": lambda: (beta * (pc.exp() - rc.exp()), beta * (pr.exp() - rr.exp())),
        "ratio": lambda: (beta * (pc - rc).exp(), beta * (pr - rr).exp()),
        "divided": lambda: ((pc - rc) / beta, (pr - rr) / beta),
    }[reward]()
    z = {
        "difference": chosen - rejected,
        "reversed": rejected - chosen,
        "chosen_only": chosen,
        "sum": chosen + rejected,
    }[combine]
    per_pair = F.logsigmoid(z)
    return sign * (per_pair.mean() if reduce == "mean" else per_pair.sum())


def _dpo_mistakes(pc, pr, rc, rr, beta) -> list[tuple[torch.Tensor | None, str]]:
    def wrong(**kw):
        return _dpo_with(pc, pr, rc, rr, beta, **kw)

    probs = (
        "the implicit reward is β·log(π/π_ref), a difference of LOG-probabilities; you used probabilities "
        "(exp of the log-probs)"
    )
    return [
        (wrong(sign=1.0), "wrong sign: the loss is −mean log σ(chosen_rewards − rejected_rewards)"),
        (
            wrong(combine="reversed"),
            "the margin is reversed: chosen_rewards − rejected_rewards, each reward being "
            "β (log π − log π_ref), policy minus reference",
        ),
        (
            wrong(reward="no_beta"),
            f"you forgot β (called with beta = {beta:g}): the implicit reward is β (log π − log π_ref)",
        ),
        (
            _dpo_with(pc, pr, rc, rr, 0.1) if beta != 0.1 else None,
            f"your loss ignores the beta argument (called with beta = {beta:g}, yours is the loss for 0.1)",
        ),
        (wrong(reward="divided"), "multiply the log-ratios by β, do not divide by it"),
        (
            -beta * F.logsigmoid((pc - rc) - (pr - rr)).mean(),
            "β goes INSIDE the sigmoid, multiplying the log-ratios: −log σ(β (log-ratio chosen − log-ratio rejected))",
        ),
        (
            wrong(reward="no_ref"),
            "the reference log-probs are missing: the margin is β[(log π(y_w) − log π_ref(y_w)) "
            "− (log π(y_l) − log π_ref(y_l))], not β (log π(y_w) − log π(y_l))",
        ),
        (wrong(reward="no_ref", combine="reversed"), "the reference log-probs are missing and the margin is reversed"),
        (wrong(reward="probs"), probs),
        (wrong(reward="ratio"), probs + " — the ratio π/π_ref enters through its log"),
        (wrong(reduce="sum"), "you summed over the pairs; take the mean"),
        (
            wrong(combine="chosen_only"),
            "the loss compares the two responses: −log σ(chosen_rewards − "
            "rejected_rewards); yours only uses the chosen one",
        ),
        (
            wrong(combine="sum"),
            "you added the two rewards; the margin is their DIFFERENCE, chosen_rewards − rejected_rewards",
        ),
        (
            -F.logsigmoid(beta * ((pc - rr) - (pr - rc))).mean(),
            "you subtracted each response's reference log-prob from the OTHER response: the chosen reward is "
            "β (log π(y_w) − log π_ref(y_w)), the rejected β (log π(y_l) − log π_ref(y_l))",
        ),
    ]


def _reward_mistakes(pc, pr, rc, rr, beta, chosen: bool) -> list[tuple[torch.Tensor | None, str]]:
    mine, other = ((pc, rc), (pr, rr)) if chosen else ((pr, rr), (pc, rc))
    return [
        (mine[0] - mine[1], "you forgot β: the implicit reward is β (log π − log π_ref)"),
        (beta * mine[0], "subtract the reference: the implicit reward is β (log π − log π_ref)"),
        (
            beta * (mine[1] - mine[0]),
            "upside down: the implicit reward is β (log π − log π_ref), policy minus reference",
        ),
        (
            beta * (other[0] - other[1]),
            "chosen_rewards and rejected_rewards are swapped; return (loss, chosen_rewards, rejected_rewards)",
        ),
        (
            beta * ((pc - rc) - (pr - rr)),
            "that is the margin (chosen − rejected); return the two rewards separately, each β (log π − log π_ref)",
        ),
    ]


def _check_dpo_case(
    c: Check, fn: Callable, logps: tuple, beta: float, want: tuple, what: str, big: bool = False
) -> None:
    pc, pr, rc, rr = (torch.tensor(x) if not isinstance(x, torch.Tensor) else x for x in logps)
    args = [pc.clone().requires_grad_(True), pr.clone().requires_grad_(True), rc.clone(), rr.clone()]
    names = ("policy_chosen_logps", "policy_rejected_logps", "ref_chosen_logps", "ref_rejected_logps")
    got = c.call(
        fn,
        *args,
        beta,
        call=what,
        hints=[("size of tensor", "all four log-prob tensors have shape [batch]: combine them elementwise")],
    )
    c.unchanged(dict(zip(names, (pc, pr, rc, rr))), dict(zip(names, args)), what)
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        kind = f"a tuple of {len(got)}" if isinstance(got, (tuple, list)) else type(got).__name__
        c.fail(f"{what}: return three values, (loss, chosen_rewards, rejected_rewards); got {kind}")
    c.passed += 1
    loss, chosen, rejected = got
    want_loss, want_chosen, want_rejected = (torch.as_tensor(w, dtype=torch.float32) for w in want)
    label = f"loss ({what})"
    loss = _scalar(c, loss, pc.shape[0], label)
    if big:
        _finite(c, loss, label, "−195.5 and 140.5")
    c.close(loss, want_loss, label, _dpo_mistakes(pc, pr, rc, rr, beta))
    batch = [pc.shape[0]]
    for value, want_value, name, is_chosen in [
        (chosen, want_chosen, "chosen_rewards", True),
        (rejected, want_rejected, "rejected_rewards", False),
    ]:
        value = c.shape(
            value,
            batch,
            "batch",
            f"{name} ({what})",
            {(): "one implicit reward per pair, β (log π − log π_ref), not their mean"},
        )
        c.close(value, want_value, f"{name} ({what})", _reward_mistakes(pc, pr, rc, rr, beta, is_chosen))
        c.expect(
            not value.requires_grad,
            f"{name} ({what}): return the rewards detached ({name.split('_')[0]}"
            ".detach()): they are for logging, and a logged tensor that carries its "
            "graph keeps every step's graph alive in memory",
        )
    c.expect(
        loss.requires_grad,
        f"{label}: your loss carries no gradient — compute it from the policy log-probs "
        "(the returned rewards may be detached, the loss may not)",
    )
    grads = torch.autograd.grad(loss, args[:2], allow_unused=True)
    c.expect(all(g is not None for g in grads), f"{label}: your loss does not depend on both policy log-probs")
    ref_args = (pc.clone().requires_grad_(True), pr.clone().requires_grad_(True))
    want_grads = torch.autograd.grad(_ref_dpo_loss(*ref_args, rc, rr, beta)[0], ref_args)
    for g, w, name in zip(grads, want_grads, names):
        c.close(g, w, f"the gradient of your loss with respect to {name} ({what})")


@exercise_check("dpo_loss")
def check_dpo_loss(c: Check, fn: Callable) -> None:
    """Check ``dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta)
    -> (loss, chosen_rewards, rejected_rewards)`` on hand cases (β = 0.5 and 0.1; a confident policy with
    margins of −195.5 and 140.5, where the loss must stay finite) and against ``minirl.dpo_loss`` on seeded random
    log-probs, plus the gradient by autograd. Catches a flipped sign, the margin reversed, β forgotten,
    divided by or outside the sigmoid, the reference log-probs ignored or crossed, probabilities or ratios
    instead of log-probs, a sum instead of the mean, only the chosen term, the two rewards added,
    log(sigmoid(·)) that overflows, rewards
    without β, without the reference, upside down or swapped, rewards not detached, no gradient, and edits of
    the inputs."""
    with c.worked_example():  # two log-probs per tensor: several mistakes can give the same numbers here
        for beta, want in DPO_HAND.items():
            _check_dpo_case(c, fn, DPO_HAND_LOGPS, beta, want, f"the worked example, beta={beta:g}")
    gen = seeded_generator(SEED, 2)
    # sequence log-probs of 4-token responses: sums of 4 token log-probs in [−3, 0]
    logps = tuple(-3.0 * torch.rand(5, 4, generator=gen).sum(-1) for _ in range(4))
    loss, chosen, rejected = _ref_dpo_loss(*logps, beta=0.3)
    _check_dpo_case(c, fn, logps, 0.3, (loss.detach(), chosen, rejected), "random log-probs [5], beta=0.3")
    beta, loss, chosen, rejected = DPO_BIG
    _check_dpo_case(c, fn, DPO_BIG_LOGPS, beta, (loss, chosen, rejected), "a confident policy, beta=0.5", big=True)


# ---------------------------------------------------------------------------------------------
# per_position_reward (the process reward)
# ---------------------------------------------------------------------------------------------


def reference_per_position_reward(prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    """The process reward of the sorting task: 1.0 where a response token equals the sorted prompt's token.

    prompts[batch, pos], responses[batch, trial, pos] -> FloatTensor[batch, trial, pos]; its sum over
    ``pos`` is the outcome reward ``sort_distance_reward``. (``SortingTask.per_position_rewards``.)
    """
    return (responses == prompts.sort(dim=-1).values.unsqueeze(1)).float()


# prompts 3 1 2 (sorted 1 2 3) and 2 0 2 (sorted 0 2 2), four responses each: for the first, right, the
# prompt itself, two right, the middle right; for the second, right, the prompt itself, two right, two right
PROCESS_HAND_PROMPTS = [[3, 1, 2], [2, 0, 2]]
PROCESS_HAND_RESPONSES = [[[1, 2, 3], [3, 1, 2], [1, 3, 3], [2, 2, 2]], [[0, 2, 2], [2, 0, 2], [0, 2, 1], [2, 2, 2]]]
PROCESS_HAND_WANT = [
    [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]],
    [[1.0, 1.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0]],
]


def _process_mistakes(prompts: torch.Tensor, responses: torch.Tensor) -> list[tuple[torch.Tensor | None, str]]:
    target = prompts.sort(dim=-1).values.unsqueeze(1)
    correct = (responses == target).float()
    batch, trial, pos = responses.shape
    no_unsqueeze = (responses == prompts.sort(dim=-1).values).float() if batch == trial else None
    return [
        (
            (responses == prompts.unsqueeze(1)).float(),
            "you compared with the prompt itself; compare with the SORTED prompt: prompts.sort(dim=-1).values",
        ),
        (
            (responses == prompts.sort(dim=-1, descending=True).values.unsqueeze(1)).float(),
            "you sorted in decreasing order; the answer is sorted increasing",
        ),
        (
            (responses == prompts.sort(dim=0).values.unsqueeze(1)).float(),
            "you sorted along the wrong axis: sort each prompt along its positions, prompts.sort(dim=-1)",
        ),
        (
            (responses == prompts.argsort(dim=-1).unsqueeze(1)).float(),
            "argsort gives the POSITIONS of the sorted values; use the values: prompts.sort(dim=-1).values",
        ),
        (
            (responses.unsqueeze(-1) == prompts[:, None, None, :]).any(dim=-1).float(),
            "you rewarded a token found anywhere in the prompt; reward response[i] == sorted(prompt)[i], position by "
            "position",
        ),
        (
            correct.cumprod(dim=-1),
            "you stopped rewarding after the first wrong token; the process reward is 1.0 at "
            "EVERY position that matches, whatever came before",
        ),
        (1.0 - correct, "inverted: 1.0 where the token MATCHES the sorted prompt, 0.0 elsewhere"),
        (
            no_unsqueeze,
            "compare each response with its OWN prompt's sorted version: sorted_prompts.unsqueeze(1) "
            "has shape [batch, 1, pos] and broadcasts over the trial axis",
        ),
        (
            correct / pos,
            f"you divided by the number of positions ({pos}); the process reward is 1.0 at each matching "
            "position, so that its sum over positions is the outcome reward sort_distance_reward",
        ),
        (
            (responses.sort(dim=-1).values == target).float(),
            "you sorted the responses too: compare each response as it was written with the sorted prompt (the prompt "
            "itself must not score)",
        ),
    ]


def _check_process_case(
    c: Check, fn: Callable, prompts: torch.Tensor, responses: torch.Tensor, want: torch.Tensor, what: str
) -> None:
    p, r = prompts.clone(), responses.clone()
    got = c.call(
        fn,
        p,
        r,
        call=what,
        hints=[
            (
                "size of tensor",
                "compare each response with its own prompt's sorted version: "
                "prompts.sort(dim=-1).values.unsqueeze(1) has shape [batch, 1, pos]",
            )
        ],
    )
    c.unchanged({"prompts": prompts, "responses": responses}, {"prompts": p, "responses": r}, what)
    batch, trial, pos = responses.shape
    per_response = "one reward per POSITION; summing (or .all()) over positions gives the outcome reward"
    got = c.shape(
        got,
        [batch, trial, pos],
        "batch, trial, pos",
        f"rewards ({what})",
        {
            (batch, trial): per_response,
            (batch, trial, 1): per_response,
            (batch, pos): "keep the trial axis: one row of rewards per response",
        },
    )
    c.expect(
        got.is_floating_point(),
        f"rewards ({what}): return floats (1.0 / 0.0), not dtype {got.dtype} — add .float() to the comparison",
    )
    c.close(got, want, f"rewards ({what})", _process_mistakes(prompts, responses))


@exercise_check("per_position_reward")
def check_per_position_reward(c: Check, fn: Callable) -> None:
    """Check ``per_position_reward(prompts, responses) -> rewards[batch, trial, pos]`` (1.0 where the response
    token equals the sorted prompt's token at that position) on a hand case and against
    ``reference_per_position_reward`` on seeded prompts with repeated numbers, one batch with as many
    prompts as responses per prompt (so a missing unsqueeze broadcasts silently). Catches a comparison
    with the prompt instead of the sorted prompt, a decreasing sort, a sort along the wrong axis, argsort,
    tokens found anywhere, a prefix-only reward, a per-response instead of a per-position reward, a
    reward divided by the length, sorted responses, booleans instead of floats, and edits of the inputs
    in place."""
    _check_process_case(
        c,
        fn,
        torch.tensor(PROCESS_HAND_PROMPTS),
        torch.tensor(PROCESS_HAND_RESPONSES),
        torch.tensor(PROCESS_HAND_WANT),
        "prompts [[3, 1, 2], [2, 0, 2]]",
    )
    gen = seeded_generator(SEED, 3)
    for batch, trial, pos, vocab in [(2, 5, 4, 4), (3, 3, 5, 5)]:
        prompts = torch.randint(0, vocab, (batch, pos), generator=gen)
        responses = torch.randint(0, vocab, (batch, trial, pos), generator=gen)
        responses[:, 0] = prompts.sort(dim=-1).values  # one correct response per prompt
        responses[:, 1] = prompts  # and the prompt itself
        want = reference_per_position_reward(prompts, responses)
        _check_process_case(c, fn, prompts, responses, want, f"random prompts [{batch}, {pos}], {trial} responses each")

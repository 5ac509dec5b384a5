"""The checks of notebook 06 (Bradley–Terry, DPO, the process reward): the references pass, stubs say
"not implemented yet", and plausible wrong implementations are each caught with a message naming the mistake."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from check_helpers import caught, float32_approx, run, stub

from minirl import losses
from minirl.checks import nb06_preferences as checks
from minirl.checks.nb06_preferences import (
    check_bradley_terry_loss,
    check_dpo_loss,
    check_per_position_reward,
    reference_per_position_reward,
)
from toy_envs.sorting import SortingTask

REFERENCES = {
    check_bradley_terry_loss: losses.bradley_terry_loss,
    check_dpo_loss: losses.dpo_loss,
    check_per_position_reward: reference_per_position_reward,
}
by_check = pytest.mark.parametrize("check", list(REFERENCES), ids=lambda c: c.__name__)


@by_check
def test_reference_passes(check, capsys):
    ok, line = run(check, REFERENCES[check], capsys)
    assert ok is True and line.startswith(f"✔ {check.__name__.removeprefix('check_')}: all "), line


@by_check
def test_stub_is_not_implemented_yet(check, capsys):
    ok, line = run(check, stub, capsys)
    assert ok is False and line.startswith("○ ") and "not implemented yet" in line


@by_check
def test_strict_mode_raises(check, monkeypatch):
    monkeypatch.setenv("MINIRL_STRICT", "1")
    with pytest.raises(AssertionError, match="not implemented yet"):
        check(stub)
    assert check(REFERENCES[check]) is True


@by_check
def test_checks_leave_the_global_rng_alone(check, capsys):
    torch.manual_seed(0)
    state = torch.get_rng_state()
    check(REFERENCES[check])
    assert torch.equal(torch.get_rng_state(), state)


def test_hand_constants_match_the_references():
    for rc, rr, want, _ in [*checks.BT_HAND_CASES, checks.BT_BIG]:
        assert losses.bradley_terry_loss(torch.tensor(rc), torch.tensor(rr)).item() == float32_approx(want)
    logps = [torch.tensor(x) for x in checks.DPO_HAND_LOGPS]
    for beta, (loss, chosen, rejected) in checks.DPO_HAND.items():
        got = losses.dpo_loss(*logps, beta)
        assert got[0].item() == float32_approx(loss)
        assert got[1].tolist() == float32_approx(chosen) and got[2].tolist() == float32_approx(rejected)
    beta, loss, chosen, rejected = checks.DPO_BIG
    got = losses.dpo_loss(*[torch.tensor(x) for x in checks.DPO_BIG_LOGPS], beta)
    assert got[0].item() == float32_approx(loss) and got[1].tolist() == chosen and got[2].tolist() == rejected
    prompts, responses = torch.tensor(checks.PROCESS_HAND_PROMPTS), torch.tensor(checks.PROCESS_HAND_RESPONSES)
    task = SortingTask(vocab_size=4, length=3)
    assert task.per_position_rewards(prompts, responses).tolist() == checks.PROCESS_HAND_WANT
    assert reference_per_position_reward(prompts, responses).tolist() == checks.PROCESS_HAND_WANT


# ---- bradley_terry_loss -------------------------------------------------------------------------------


def bt_naive_log_sigmoid(r_chosen, r_rejected):
    return -torch.log(torch.sigmoid(r_chosen - r_rejected)).mean()


def bt_naive_formula(r_chosen, r_rejected):
    return -torch.log(1 / (1 + torch.exp(-(r_chosen - r_rejected)))).mean()


def bt_softmax_of_exps(r_chosen, r_rejected):
    e_c, e_r = torch.exp(r_chosen), torch.exp(r_rejected)
    return -torch.log(e_c / (e_c + e_r)).mean()


def bt_clamped(r_chosen, r_rejected):
    return -torch.log(torch.sigmoid(r_chosen - r_rejected).clamp(min=1e-7)).mean()


def bt_per_pair(r_chosen, r_rejected):
    return -F.logsigmoid(r_chosen - r_rejected)


def bt_item(r_chosen, r_rejected):
    return losses.bradley_terry_loss(r_chosen, r_rejected).item()


def bt_in_place(r_chosen, r_rejected):
    r_chosen = r_chosen.detach()
    r_chosen -= r_rejected.detach()
    return -F.logsigmoid(r_chosen).mean()


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (lambda c, r: F.logsigmoid(c - r).mean(), ["wrong sign", "NEGATIVE log-likelihood"]),
        (lambda c, r: -F.logsigmoid(r - c).mean(), ["margin is reversed", "r_chosen − r_rejected"]),
        (lambda c, r: F.softplus(c - r).mean(), ["margin is reversed", "softplus(r_rejected − r_chosen)"]),
        (lambda c, r: -F.softplus(r - c).mean(), ["wrong sign"]),
        (lambda c, r: -F.logsigmoid(c - r).sum(), ["summed", "mean"]),
        (lambda c, r: -(F.logsigmoid(c) + F.logsigmoid(-r)).mean(), ["on its own", "DIFFERENCE"]),
        (lambda c, r: -torch.sigmoid(c - r).mean(), ["forgot the log"]),
        (lambda c, r: -F.logsigmoid((c - r).mean()), ["mean margin"]),
        (bt_naive_log_sigmoid, ["margins [200, -200, 0]", "inf", "F.logsigmoid"]),
        (bt_naive_formula, ["inf", "F.logsigmoid"]),
        (bt_softmax_of_exps, ["nan", "F.logsigmoid"]),
        (bt_clamped, ["expected 66.9", "caps the loss", "F.logsigmoid"]),
        (bt_per_pair, ["single number", "one loss per pair", "mean"]),
        (bt_item, ["torch.Tensor", ".item()"]),
        (lambda c, r: -F.logsigmoid(c.detach() - r.detach()).mean(), ["no gradient"]),
        (bt_in_place, ["in place", "r_chosen"]),
    ],
    ids=[
        "sign",
        "reversed",
        "softplus-of-margin",
        "softplus-sign",
        "sum",
        "separately",
        "no-log",
        "mean-margin",
        "naive-log-sigmoid",
        "naive-formula",
        "softmax-of-exps",
        "clamped",
        "per-pair",
        "item",
        "detached",
        "in-place",
    ],
)
def test_bradley_terry_mistakes(wrong, keywords, capsys):
    caught(check_bradley_terry_loss, wrong, capsys, *keywords)


def test_bradley_terry_softplus_form_is_accepted(capsys):
    assert run(check_bradley_terry_loss, lambda c, r: F.softplus(r - c).mean(), capsys)[0]
    assert run(
        check_bradley_terry_loss, lambda c, r: F.binary_cross_entropy_with_logits(c - r, torch.ones_like(c)), capsys
    )[0]


# ---- dpo_loss -----------------------------------------------------------------------------------------


def dpo_with(
    *, reward="log_ratio", sign=-1.0, reverse=False, reduce="mean", beta_outside=False, reward_kind="same", naive=False
):
    """A dpo_loss with one knob turned (the knobs mirror the usual mistakes)."""

    def dpo_loss(pc, pr, rc, rr, beta):
        chosen, rejected = {
            "log_ratio": (beta * (pc - rc), beta * (pr - rr)),
            "no_beta": (pc - rc, pr - rr),
            "no_ref": (beta * pc, beta * pr),
            "probs": (beta * (pc.exp() - rc.exp()), beta * (pr.exp() - rr.exp())),
            "ratio": (beta * (pc - rc).exp(), beta * (pr - rr).exp()),
            "ref_minus_policy": (beta * (rc - pc), beta * (rr - pr)),
            "divided": ((pc - rc) / beta, (pr - rr) / beta),
        }[reward]
        margin = (rejected - chosen) if reverse else (chosen - rejected)
        per_pair = torch.log(torch.sigmoid(margin)) if naive else F.logsigmoid(margin)
        loss = sign * (per_pair.mean() if reduce == "mean" else per_pair.sum())
        if beta_outside:
            loss = beta * loss
        out_c, out_r = chosen.detach(), rejected.detach()
        if reward_kind == "no_beta":
            out_c, out_r = (pc - rc).detach(), (pr - rr).detach()
        elif reward_kind == "no_ref":
            out_c, out_r = beta * pc.detach(), beta * pr.detach()
        elif reward_kind == "swapped":
            out_c, out_r = out_r, out_c
        elif reward_kind == "margin":
            out_c = out_c - out_r
        elif reward_kind == "upside_down":
            out_c, out_r = -out_c, -out_r
        return loss, out_c, out_r

    return dpo_loss


def dpo_loss_only(pc, pr, rc, rr, beta):
    return losses.dpo_loss(pc, pr, rc, rr, beta)[0]


def dpo_margin_and_loss(pc, pr, rc, rr, beta):
    loss, chosen, rejected = losses.dpo_loss(pc, pr, rc, rr, beta)
    return loss, chosen - rejected


def dpo_from_detached_rewards(pc, pr, rc, rr, beta):
    chosen, rejected = (beta * (pc - rc)).detach(), (beta * (pr - rr)).detach()
    return -F.logsigmoid(chosen - rejected).mean(), chosen, rejected


def dpo_fixed_beta(pc, pr, rc, rr, beta):
    return losses.dpo_loss(pc, pr, rc, rr, 0.1)


def dpo_per_pair(pc, pr, rc, rr, beta):
    chosen, rejected = beta * (pc - rc), beta * (pr - rr)
    return -F.logsigmoid(chosen - rejected), chosen, rejected


def dpo_mean_rewards(pc, pr, rc, rr, beta):
    loss, chosen, rejected = losses.dpo_loss(pc, pr, rc, rr, beta)
    return loss, chosen.mean(), rejected.mean()


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (dpo_with(sign=1.0), ["wrong sign"]),
        (dpo_with(reverse=True), ["margin is reversed", "policy minus reference"]),
        (dpo_with(reward="ref_minus_policy", reward_kind="same"), ["margin is reversed"]),
        (dpo_with(reward="no_beta"), ["forgot β", "beta = 0.5"]),
        (dpo_fixed_beta, ["beta=0.5", "ignores the beta argument"]),
        (dpo_with(reward="divided"), ["do not divide"]),
        (dpo_with(reward="no_beta", beta_outside=True), ["INSIDE the sigmoid"]),
        (dpo_with(reward="no_ref"), ["reference log-probs are missing"]),
        (dpo_with(reward="probs"), ["LOG-probabilities", "probabilities"]),
        (dpo_with(reward="ratio"), ["LOG-probabilities", "enters through its log"]),
        (dpo_with(reduce="sum"), ["summed", "mean"]),
        (dpo_with(naive=True), ["confident policy", "inf", "F.logsigmoid"]),
        (dpo_with(reward_kind="no_beta"), ["chosen_rewards", "forgot β"]),
        (dpo_with(reward_kind="no_ref"), ["chosen_rewards", "subtract the reference"]),
        (dpo_with(reward_kind="swapped"), ["swapped"]),
        (dpo_with(reward_kind="margin"), ["chosen_rewards", "that is the margin"]),
        (dpo_with(reward_kind="upside_down"), ["upside down"]),
        (dpo_loss_only, ["return three values", "Tensor"]),
        (dpo_margin_and_loss, ["return three values", "a tuple of 2"]),
        (dpo_from_detached_rewards, ["no gradient"]),
        (dpo_per_pair, ["single number", "one loss per pair"]),
        (dpo_mean_rewards, ["chosen_rewards", "one implicit reward per pair"]),
    ],
    ids=[
        "sign",
        "reversed",
        "ref-minus-policy",
        "no-beta",
        "beta-ignored",
        "divided",
        "beta-outside",
        "no-ref",
        "probs",
        "ratio",
        "sum",
        "naive-log-sigmoid",
        "rewards-no-beta",
        "rewards-no-ref",
        "rewards-swapped",
        "rewards-margin",
        "rewards-upside-down",
        "loss-only",
        "two-values",
        "detached",
        "per-pair",
        "mean-rewards",
    ],
)
def test_dpo_mistakes(wrong, keywords, capsys):
    caught(check_dpo_loss, wrong, capsys, *keywords)


def dpo_rewards_not_detached(pc, pr, rc, rr, beta):
    chosen, rejected = beta * (pc - rc), beta * (pr - rr)
    return -F.logsigmoid(chosen - rejected).mean(), chosen, rejected


def test_dpo_rewards_must_be_detached_as_the_text_says(capsys):
    caught(check_dpo_loss, dpo_rewards_not_detached, capsys, "chosen_rewards", "detached", "chosen.detach()")


def test_dpo_softplus_form_is_accepted(capsys):
    def softplus_form(pc, pr, rc, rr, beta):
        chosen, rejected = beta * (pc - rc), beta * (pr - rr)
        return F.softplus(rejected - chosen).mean(), chosen.detach(), rejected.detach()

    assert run(check_dpo_loss, softplus_form, capsys)[0]
    assert run(check_dpo_loss, lambda *a: list(losses.dpo_loss(*a)), capsys)[0]


# ---- per_position_reward ---------------------------------------------------------------------------------


def _sorted(prompts):
    return prompts.sort(dim=-1).values


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (lambda p, r: (r == p.unsqueeze(1)).float(), ["prompt itself", "SORTED"]),
        (lambda p, r: (r == p.sort(dim=-1, descending=True).values.unsqueeze(1)).float(), ["decreasing"]),
        (lambda p, r: (r == p.sort(dim=0).values.unsqueeze(1)).float(), ["wrong axis", "dim=-1"]),
        (lambda p, r: (r == p.argsort(dim=-1).unsqueeze(1)).float(), ["argsort", "POSITIONS"]),
        (lambda p, r: (r.unsqueeze(-1) == p[:, None, None, :]).any(-1).float(), ["anywhere in the prompt"]),
        (lambda p, r: (r == _sorted(p).unsqueeze(1)).float().cumprod(-1), ["first wrong token", "EVERY position"]),
        (lambda p, r: (r != _sorted(p).unsqueeze(1)).float(), ["inverted"]),
        (
            lambda p, r: (r == _sorted(p).unsqueeze(1)).sum(-1).float(),
            ["expected shape [batch, trial, pos]", "one reward per POSITION"],
        ),
        (lambda p, r: (r == _sorted(p).unsqueeze(1)).all(-1).float(), ["one reward per POSITION", "outcome reward"]),
        (lambda p, r: r == _sorted(p).unsqueeze(1), ["return floats", "torch.bool", ".float()"]),
        (lambda p, r: (r == _sorted(p).unsqueeze(1)).long(), ["return floats", "torch.int64"]),
        (lambda p, r: (r == _sorted(p)).float(), ["raised RuntimeError", "unsqueeze(1)"]),
        (lambda p, r: (r[:, 0] == _sorted(p)).float(), ["keep the trial axis"]),
    ],
    ids=[
        "vs-prompt",
        "descending",
        "wrong-axis",
        "argsort",
        "membership",
        "prefix",
        "inverted",
        "sum",
        "all",
        "bool",
        "long",
        "no-unsqueeze",
        "first-trial",
    ],
)
def test_per_position_reward_mistakes(wrong, keywords, capsys):
    caught(check_per_position_reward, wrong, capsys, *keywords)


def test_per_position_reward_missing_unsqueeze_on_a_square_batch(capsys):
    """With as many prompts as responses per prompt, a missing unsqueeze does not raise: still named."""

    def square_only(prompts, responses):
        if responses.shape[0] != responses.shape[1]:
            return reference_per_position_reward(prompts, responses)
        return (responses == _sorted(prompts)).float()

    caught(check_per_position_reward, square_only, capsys, "its OWN prompt", "unsqueeze(1)")


def test_per_position_reward_in_place_sort(capsys):
    def in_place(prompts, responses):
        prompts[:] = prompts.sort(dim=-1).values
        return (responses == prompts.unsqueeze(1)).float()

    caught(check_per_position_reward, in_place, capsys, "in place", "prompts")


def test_per_position_reward_task_method_is_accepted(capsys):
    def via_task(prompts, responses):
        return SortingTask(
            vocab_size=int(max(prompts.max(), responses.max())) + 1, length=prompts.shape[1]
        ).per_position_rewards(prompts, responses)

    assert run(check_per_position_reward, via_task, capsys)[0]


# ---- more named mistakes (issue 19) ---------------------------------------------------------------------


def dpo_margin(margin):
    """dpo_loss with the margin computed as margin(pc, pr, rc, rr) · β (the rewards right)."""

    def dpo_loss(pc, pr, rc, rr, beta):
        loss = -F.logsigmoid(beta * margin(pc, pr, rc, rr)).mean()
        return loss, (beta * (pc - rc)).detach(), (beta * (pr - rr)).detach()

    return dpo_loss


@pytest.mark.parametrize(
    "check, wrong, keywords",
    [
        (
            check_dpo_loss,
            dpo_margin(lambda pc, pr, rc, rr: (pc - rc) + (pr - rr)),
            ["added the two rewards", "DIFFERENCE", "on the worked example", "expected 0.6437, got 0.5836"],
        ),
        (
            check_dpo_loss,
            dpo_margin(lambda pc, pr, rc, rr: (pc - rr) - (pr - rc)),
            ["reference log-prob from the OTHER response"],
        ),
        (
            check_per_position_reward,
            lambda p, r: (r == _sorted(p).unsqueeze(1)).float() / p.shape[-1],
            ["divided by the number of positions (3)", "outcome reward"],
        ),
        (
            check_per_position_reward,
            lambda p, r: (r.sort(dim=-1).values == _sorted(p).unsqueeze(1)).float(),
            ["sorted the responses too"],
        ),
    ],
    ids=["dpo-sum", "dpo-refs-crossed", "process-divided", "process-sorted-response"],
)
def test_more_named_mistakes(check, wrong, keywords, capsys):
    caught(check, wrong, capsys, *keywords)

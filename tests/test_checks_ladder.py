"""The exercise checks: the references pass, stubs say "not implemented yet", and plausible wrong
implementations are each caught with a message that names the mistake."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from check_helpers import ALL_CHECKS, REFERENCES, caught, float32_approx, run
from einops import einsum, reduce, repeat

import minirl
from minirl import checks
from minirl.checks import (
    check_compute_deltas,
    check_compute_log_probs,
    check_compute_loss,
    check_forward,
    check_sort_distance_reward,
    check_sort_inclusion_ordering_reward,
    tiny_forward,
    use_reference,
)
from minirl.checks._core import Check, CheckFailure, format_tensor
from toy_envs.sorting import sort_distance_reward, sort_inclusion_ordering_reward


def test_a_value_instead_of_a_function(capsys):
    caught(check_compute_deltas, 3.0, capsys, "expected a function", "check_compute_deltas(compute_deltas)")


def test_checks_never_modify_global_rng(capsys):
    torch.manual_seed(0)
    state = torch.get_rng_state()
    for check in ALL_CHECKS:
        check(REFERENCES[check])
    assert torch.equal(torch.get_rng_state(), state)


# ---- the machinery --------------------------------------------------------------------------------


def test_shape_message():
    c = Check("compute_log_probs")
    with pytest.raises(
        CheckFailure,
        match=r"^log_probs: expected shape \[batch, trial, pos\] = \[2, 4, 3\], "
        r"got \[2, 3\] — keep the trial axis$",
    ):
        c.shape(torch.zeros(2, 3), [2, 4, 3], "batch, trial, pos", "log_probs", {(2, 3): "keep the trial axis"})
    assert c.shape(torch.zeros(2, 4, 3), [2, 4, 3], "batch, trial, pos", "log_probs") is not None
    assert c.passed == 3  # is-a-tensor twice, right shape once


def test_close_message_shows_expected_and_got():
    c = Check("x")
    with pytest.raises(CheckFailure, match=r"deltas: expected \[\[1\.0, 0\.3333\]\], got \[\[1\.0, 0\.5\]\]"):
        c.close(torch.tensor([[1.0, 0.5]]), torch.tensor([[1.0, 1 / 3]]), "deltas")
    with pytest.raises(CheckFailure, match="deltas: wrong sign"):
        c.close(
            torch.tensor([-1.0, -2.0]), torch.tensor([1.0, 2.0]), "deltas", [(torch.tensor([-1.0, -2.0]), "wrong sign")]
        )
    with pytest.raises(CheckFailure, match=r"wrong values at \[1, 2\]: expected 0\.0, got 5\.0"):
        big = torch.zeros(4, 5)
        c.close(big.clone().index_put_((torch.tensor(1), torch.tensor(2)), torch.tensor(5.0)), big, "x")
    assert format_tensor(torch.tensor(float("nan"))) == "nan"
    assert format_tensor(torch.arange(20.0)).startswith("<tensor of shape [20]: 0.0, 1.0")


def test_use_reference(capsys):
    def compute_deltas(rewards, mode):
        raise NotImplementedError

    assert use_reference(compute_deltas, minirl.compute_deltas, False) is minirl.compute_deltas
    assert capsys.readouterr().out == "↪ compute_deltas: using the reference minirl.compute_deltas from here on\n"
    assert use_reference(compute_deltas, minirl.compute_deltas, True) is compute_deltas
    assert "using your version" in capsys.readouterr().out
    assert use_reference(None, tiny_forward, True) is tiny_forward
    assert "minirl.checks.tiny_forward" in capsys.readouterr().out


def test_package_exports_every_check():
    assert {c.__name__ for c in ALL_CHECKS} <= set(checks.__all__)
    assert {"use_reference", "exercise_check", "Check", "tiny_forward"} <= set(checks.__all__)
    for name in checks.__all__:
        assert hasattr(checks, name)


# ---- sort_distance_reward ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (lambda p, r: float(sum(a == b for a, b in zip(r, p))), ["prompt itself", "sorted(prompt)"]),
        (lambda p, r: float(sum(a == b for a, b in zip(r, sorted(p, reverse=True)))), ["decreasing"]),
        (lambda p, r: float(sum(v in sorted(p) for v in r)), ["anywhere", "response[i] == sorted(prompt)[i]"]),
        (lambda p, r: float(sum(a != b for a, b in zip(r, sorted(p)))), ["differ"]),
        (lambda p, r: sum(a == b for a, b in zip(r, sorted(p))) / len(p), ["fraction"]),
        (lambda p, r: float(sum(a == b for a, b in zip(r[1:], sorted(p)[1:]))), ["prompt [3, 1, 2]", "expected 3"]),
        (lambda p, r: str(sum(a == b for a, b in zip(r, sorted(p)))), ["expected a number"]),
    ],
    ids=["vs-prompt", "descending", "membership", "mismatches", "fraction", "off-by-one", "string"],
)
def test_sort_distance_mistakes(wrong, keywords, capsys):
    caught(check_sort_distance_reward, wrong, capsys, *keywords)


def test_sort_distance_in_place_sort(capsys):
    def in_place(prompt, response):
        prompt.sort()
        return float(sum(a == b for a, b in zip(response, prompt)))

    caught(check_sort_distance_reward, in_place, capsys, "in place", "sorted(prompt)")


def test_sort_distance_int_result_is_fine(capsys):
    assert check_sort_distance_reward(lambda p, r: sum(a == b for a, b in zip(r, sorted(p))))


# ---- sort_inclusion_ordering_reward ---------------------------------------------------------------


def _order(r):
    return sum(a <= b for a, b in zip(r, r[1:]))


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (lambda p, r: float(sum(x in r for x in set(p)) + _order(r)), ["duplicates included", "set(prompt)"]),
        (lambda p, r: float(sum(y in p for y in r) + _order(r)), ["response items found in the prompt"]),
        (lambda p, r: float(sum(x in r for x in p) + sum(a < b for a, b in zip(r, r[1:]))), ["a <= b", "equal"]),
        (lambda p, r: float(sum(x in r for x in p) + sum(a >= b for a, b in zip(r, r[1:]))), ["not decreasing"]),
        (
            lambda p, r: float(
                sum(x in r for x in p) + sum(r[i] <= r[j] for i in range(len(r)) for j in range(i + 1, len(r)))
            ),
            ["adjacent pairs only"],
        ),
        (lambda p, r: float(sum(x in r for x in p)), ["forgot the ordering"]),
        (lambda p, r: float(_order(r)), ["forgot the inclusion"]),
        (lambda p, r: float(sum(x in r for x in p) + _order(r) + 1), ["expected 5", "inclusion 3 + ordering 2"]),
    ],
    ids=["set", "direction", "strict", "decreasing", "all-pairs", "no-ordering", "no-inclusion", "off-by-one"],
)
def test_inclusion_ordering_mistakes(wrong, keywords, capsys):
    caught(check_sort_inclusion_ordering_reward, wrong, capsys, *keywords)


# ---- tiny forward ------------------------------------------------------------------------------------


def _encode(emb, enc, prompts, pattern="batch pos d_in, pos d_in d_out -> batch d_out"):
    return einsum(emb[prompts], enc, pattern)


def _decode(h, dec, pattern="batch d_in, pos d_in d_out -> batch pos d_out"):
    return einsum(h, dec, pattern)


def _tied(d, emb):
    return einsum(d, emb, "batch pos dim, vocab dim -> batch pos vocab")


def fwd_untied(emb, enc, dec, prompts):
    return _decode(_encode(emb, enc, prompts), dec)


def fwd_softmax(emb, enc, dec, prompts):
    return tiny_forward(emb, enc, dec, prompts).softmax(-1)


def fwd_log_softmax(emb, enc, dec, prompts):
    return tiny_forward(emb, enc, dec, prompts).log_softmax(-1)


def fwd_enc_transposed(emb, enc, dec, prompts):
    h = _encode(emb, enc, prompts, "batch pos d_in, pos d_out d_in -> batch d_out")
    return _tied(_decode(h, dec), emb)


def fwd_dec_transposed(emb, enc, dec, prompts):
    return _tied(_decode(_encode(emb, enc, prompts), dec, "batch d_in, pos d_out d_in -> batch pos d_out"), emb)


def fwd_mean(emb, enc, dec, prompts):
    per_pos = einsum(emb[prompts], enc, "batch pos d_in, pos d_in d_out -> batch pos d_out")
    return _tied(_decode(reduce(per_pos, "batch pos d -> batch d", "mean"), dec), emb)


def fwd_shared_encoder(emb, enc, dec, prompts):
    h = einsum(emb[prompts], enc[0], "batch pos d_in, d_in d_out -> batch d_out")
    return _tied(_decode(h, dec), emb)


def fwd_detached(emb, enc, dec, prompts):
    return tiny_forward(emb.detach(), enc.detach(), dec.detach(), prompts)


def fwd_bad_pattern(emb, enc, dec, prompts):
    return einsum(emb[prompts], enc, "batch pos d_in, d_in d_out -> batch d_out")


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (fwd_untied, ["expected shape [batch, pos, vocab] = [2, 4, 5], got [2, 4, 6]", "tied output embedding"]),
        (fwd_softmax, ["probabilities", "without softmax"]),
        (fwd_log_softmax, ["log-probabilities", "log_softmax"]),
        (fwd_enc_transposed, ["encoder", "wrong axis of encode_weights"]),
        (fwd_dec_transposed, ["decoder", "wrong axis of decode_weights"]),
        (fwd_mean, ["SUMS"]),
        (fwd_shared_encoder, ["own matrix encode_weights[i]"]),
        (fwd_detached, ["no gradient"]),
        (fwd_bad_pattern, ["raised", "einsum"]),
    ],
)
def test_tiny_forward_mistakes(wrong, keywords, capsys):
    caught(check_forward, wrong, capsys, *keywords)


def test_tiny_forward_reference_equals_model():
    model = minirl.TinyEncoderDecoder(6, 5, 4, 3, generator=torch.Generator().manual_seed(0))
    prompts = torch.randint(0, 6, (7, 4))
    torch.testing.assert_close(
        tiny_forward(model.embedding, model.encode_weights, model.decode_weights, prompts), model(prompts)
    )


# ---- compute_log_probs ------------------------------------------------------------------------------


def _pick(table, responses):
    table = repeat(table, "batch pos vocab -> batch trial pos vocab", trial=responses.shape[1])
    return table.gather(-1, responses.unsqueeze(-1)).squeeze(-1)


def lp_probs(prompts, responses, model):
    return _pick(F.softmax(model(prompts), dim=-1), responses)


def lp_logits(prompts, responses, model):
    return _pick(model(prompts), responses)


def lp_wrong_softmax_axis(prompts, responses, model):
    return _pick(F.log_softmax(model(prompts), dim=1), responses)


def lp_gather_wrong_axis(prompts, responses, model):
    table = repeat(F.log_softmax(model(prompts), dim=-1), "b p v -> b t p v", t=responses.shape[1])
    return table.gather(2, responses.unsqueeze(-1)).squeeze(-1)


def lp_no_repeat(prompts, responses, model):
    return F.log_softmax(model(prompts), dim=-1).gather(-1, responses.unsqueeze(-1)).squeeze(-1)


def lp_first_trial_only(prompts, responses, model):
    return F.log_softmax(model(prompts), dim=-1).gather(-1, responses[:, 0].unsqueeze(-1)).squeeze(-1)


def lp_prompt_tokens(prompts, responses, model):
    return _pick(F.log_softmax(model(prompts), dim=-1), repeat(prompts, "b p -> b t p", t=responses.shape[1]))


def lp_summed(prompts, responses, model):
    return minirl.compute_log_probs(prompts, responses, model).sum(-1)


def lp_no_grad(prompts, responses, model):
    with torch.no_grad():
        return minirl.compute_log_probs(prompts, responses, model)


def lp_negated(prompts, responses, model):
    return -minirl.compute_log_probs(prompts, responses, model)


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (lp_probs, ["probabilities, not log-probabilities"]),
        (lp_logits, ["raw logits", "log_softmax"]),
        (lp_wrong_softmax_axis, ["wrong axis", "vocab axis"]),
        (lp_gather_wrong_axis, ["raised RuntimeError", "vocab axis (dim=-1)"]),
        (lp_no_repeat, ["raised RuntimeError", "repeat", "trial"]),
        (lp_first_trial_only, ["expected shape [batch, trial, pos] = [2, 3, 4], got [2, 4]", "keep the trial axis"]),
        (lp_prompt_tokens, ["PROMPT tokens"]),
        (lp_summed, ["per TOKEN"]),
        (lp_no_grad, ["no gradient"]),
        (lp_negated, ["sign"]),
    ],
)
def test_compute_log_probs_mistakes(wrong, keywords, capsys):
    caught(check_compute_log_probs, wrong, capsys, *keywords)


def test_log_probs_via_log_of_softmax_is_accepted(capsys):
    ok, _ = run(check_compute_log_probs, lambda p, r, m: _pick(F.softmax(m(p), dim=-1).log(), r), capsys)
    assert ok


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
    from minirl.checks import nb03_sorting, nb04_ladder

    r = torch.tensor(nb04_ladder.DELTA_REWARDS)
    torch.testing.assert_close(minirl.compute_deltas(r, "centered_rewards"), torch.tensor(nb04_ladder.DELTA_CENTERED))
    torch.testing.assert_close(
        minirl.compute_deltas(r, "normalized_rewards"), torch.tensor(nb04_ladder.DELTA_NORMALIZED)
    )
    for p, resp, want in nb03_sorting.SORT_DISTANCE_CASES:
        assert sort_distance_reward(p, resp) == want
    for p, resp, want in nb03_sorting.INCLUSION_ORDERING_CASES:
        assert sort_inclusion_ordering_reward(p, resp) == want


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


def _matches(p, r):
    return sum(a == b for a, b in zip(r, sorted(p)))


@pytest.mark.parametrize(
    "check, wrong, keywords",
    [
        (
            check_sort_distance_reward,
            lambda p, r: -float(sum(a != b for a, b in zip(r, sorted(p)))),
            ["minus the number of positions that differ", "MATCH"],
        ),
        (
            check_sort_distance_reward,
            lambda p, r: float(sum(a == b for a, b in zip(sorted(r), sorted(p)))),
            ["sorted the response too", "as it was written"],
        ),
        (
            check_sort_distance_reward,
            lambda p, r: float(len(p)) if list(r) == sorted(p) else 0.0,
            ["all or nothing", "partial credit"],
        ),
        (
            check_sort_inclusion_ordering_reward,
            lambda p, r: float(sum((Counter(p) & Counter(r)).values()) + _order(r)),
            ["prompt [4, 4], response [4, 0] has inclusion 2", "Counter intersection"],
        ),
        (
            check_sort_inclusion_ordering_reward,
            lambda p, r: float(sum(x in r for x in p) + _order(p)),
            ["ordered adjacent pairs of the PROMPT", "RESPONSE"],
        ),
    ],
    ids=[
        "distance-negative",
        "distance-sorted-response",
        "distance-all-or-nothing",
        "inclusion-multiset",
        "ordering-of-prompt",
    ],
)
def test_more_reward_mistakes(check, wrong, keywords, capsys):
    caught(check, wrong, capsys, *keywords)


def test_the_multiset_case_separates_set_from_counter():
    from minirl.checks import nb03_sorting

    p, r, want = nb03_sorting.INCLUSION_ORDERING_CASES[-1]
    assert (p, r, want) == ([2, 2, 5], [2, 2, 0], 3.0)
    assert sum(x in r for x in set(p)) == 1 and sum((Counter(p) & Counter(r)).values()) == 2


def fwd_activation(act):
    def forward(emb, enc, dec, prompts):
        return _tied(_decode(act(_encode(emb, enc, prompts)), dec), emb)

    return forward


def lp_batch_axis(prompts, responses, model):
    return _pick(F.log_softmax(model(prompts), dim=0), responses)


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
        (check_forward, fwd_activation(torch.relu), ["no nonlinearity", "without relu"]),
        (check_forward, fwd_activation(torch.tanh), ["no nonlinearity", "without tanh"]),
        (check_compute_log_probs, lp_batch_axis, ["wrong axis", "not over the batch (dim=0)"]),
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
        "relu",
        "tanh",
        "log-softmax-batch-axis",
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

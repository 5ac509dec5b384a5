"""The checks of notebook 03 (minirl.checks.nb03_sorting: the two sorting rewards, the tiny model's forward pass,
compute_log_probs) catch the plausible wrong implementations, each with a message that names the mistake."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from check_helpers import caught, run
from einops import einsum, reduce, repeat

import minirl
from minirl.checks import (
    check_compute_log_probs,
    check_forward,
    check_sort_distance_reward,
    check_sort_inclusion_ordering_reward,
    tiny_forward,
)
from toy_envs.sorting import sort_distance_reward, sort_inclusion_ordering_reward

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


@pytest.mark.parametrize(
    "check, wrong, keywords",
    [
        (check_forward, fwd_activation(torch.relu), ["no nonlinearity", "without relu"]),
        (check_forward, fwd_activation(torch.tanh), ["no nonlinearity", "without tanh"]),
        (check_compute_log_probs, lp_batch_axis, ["wrong axis", "not over the batch (dim=0)"]),
    ],
    ids=["relu", "tanh", "log-softmax-batch-axis"],
)
def test_more_forward_and_log_probs_mistakes(check, wrong, keywords, capsys):
    caught(check, wrong, capsys, *keywords)


def test_hand_constants_match_the_references():
    from minirl.checks import nb03_sorting

    for p, resp, want in nb03_sorting.SORT_DISTANCE_CASES:
        assert sort_distance_reward(p, resp) == want
    for p, resp, want in nb03_sorting.INCLUSION_ORDERING_CASES:
        assert sort_inclusion_ordering_reward(p, resp) == want

"""Checks for notebook 03 (the sorting task and the tiny model), named after the function they check.

    check_sort_distance_reward(fn)            fn(prompt: list[int], response: list[int]) -> float
    check_sort_inclusion_ordering_reward(fn)  fn(prompt: list[int], response: list[int]) -> float
    check_forward(fn)                         fn(embedding, encode_weights, decode_weights, prompts) -> logits
    check_compute_log_probs(fn)               fn(prompts, responses, model) -> log_probs[batch, trial, pos]

Expected values are hand-computed constants, plus the references (``toy_envs.sorting``,
``minirl.TinyEncoderDecoder``, ``minirl.compute_log_probs``) on seeded random inputs.

``tiny_forward`` is the reference forward pass for the fallback cell of that exercise:
``forward = use_reference(forward, tiny_forward, ok)``.
"""

from __future__ import annotations

import numbers
import random
from collections import Counter
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from einops import einsum

from minirl.checks._core import Check, exercise_check, numbers_close, seeded_generator
from minirl.toy.model import TinyEncoderDecoder
from minirl.toy.sampling import compute_log_probs as _ref_compute_log_probs
from toy_envs.sorting import sort_distance_reward as _ref_sort_distance
from toy_envs.sorting import sort_inclusion_ordering_reward as _ref_inclusion_ordering

__all__ = [
    "check_compute_log_probs",
    "check_sort_distance_reward",
    "check_sort_inclusion_ordering_reward",
    "check_forward",
    "tiny_forward",
]

SEED = 1234


# ---------------------------------------------------------------------------------------------
# Rewards on lists
# ---------------------------------------------------------------------------------------------

Case = tuple[list[int], list[int], float]

# (prompt, response, reward), by hand: sorted(prompt) and the positions that match.
SORT_DISTANCE_CASES: list[Case] = [
    ([3, 1, 2], [1, 2, 3], 3.0),  # sorted: every position matches
    ([3, 1, 2], [1, 3, 3], 2.0),  # target 1 2 3: first and last match
    ([3, 1, 2], [3, 1, 2], 0.0),  # the prompt itself is not the answer
    ([2, 2, 5], [2, 5, 5], 2.0),  # target 2 2 5: positions 0 and 2
    ([5, 4, 3, 2, 1], [1, 2, 3, 4, 5], 5.0),
    ([4, 0], [0, 0], 1.0),  # target 0 4
    ([1, 2, 3], [3, 2, 1], 1.0),  # only the middle
    ([7], [7], 1.0),
]

# inclusion (each prompt item, duplicates again, found in the response) + ordering (adjacent a <= b)
INCLUSION_ORDERING_CASES: list[Case] = [
    ([3, 1, 2], [1, 2, 3], 5.0),  # 3 + 2
    ([2, 2, 5], [2, 5, 5], 5.0),  # 3 + 2: not sorted(prompt), same top score
    ([2, 2, 5], [5, 5, 5], 3.0),  # 1 + 2: one prompt item (5) is present
    ([1, 2, 3], [3, 2, 1], 3.0),  # 3 + 0
    ([4, 4], [4, 0], 2.0),  # 2 + 0: the duplicate 4 counts twice
    ([0, 7], [7, 7], 2.0),  # 1 + 1: equal neighbours are in order
    ([1, 2, 3], [1, 1, 1], 3.0),  # 1 + 2: the gameable [x, x, x]
    ([3, 1, 2], [0, 0, 0], 2.0),  # 0 + 2
    ([6, 2, 6, 2], [2, 6, 9, 9], 7.0),  # 4 + 3
    ([2, 2, 5], [2, 2, 0], 3.0),  # 2 + 1: set(prompt) counts the 2s once (1), a multiset match twice (2)
]


def _random_cases(reward: Callable[[list[int], list[int]], float], n: int = 30) -> list[Case]:
    rng = random.Random(SEED)
    cases = []
    for _ in range(n):
        length = rng.randint(1, 6)
        prompt = [rng.randrange(6) for _ in range(length)]
        response = sorted(prompt) if rng.random() < 0.2 else [rng.randrange(6) for _ in range(length)]
        cases.append((prompt, response, reward(prompt, response)))
    return cases


def _run_reward(c: Check, fn: Callable, prompt: list[int], response: list[int]) -> float:
    prompt_copy, response_copy = list(prompt), list(response)
    got = c.call(fn, prompt_copy, response_copy, call=f"prompt {prompt}, response {response}")
    if prompt_copy != prompt or response_copy != response:
        c.fail(
            f"your function changed its input lists in place (prompt {prompt} became {prompt_copy}): "
            "use sorted(prompt), which returns a new list, not prompt.sort()"
        )
    if isinstance(got, numbers.Real) or isinstance(got, torch.Tensor) and got.numel() == 1:
        return float(got)
    c.fail(f"on prompt {prompt}, response {response}: expected a number, got {type(got).__name__} {got!r}")


def _check_reward_cases(
    c: Check,
    fn: Callable,
    cases: Sequence[Case],
    mistakes: Sequence[tuple[Callable[[list[int], list[int]], float], str]],
    explain: Callable[[list[int], list[int]], str],
) -> None:
    """Each hand case is one check; if some fail and every answer matches a known mistake, name it."""
    got = [_run_reward(c, fn, p, r) for p, r, _ in cases]
    wrong = [(case, value) for case, value in zip(cases, got) if not numbers_close(value, case[2])]
    if wrong:
        for mistake, message in mistakes:
            if all(numbers_close(value, mistake(p, r)) for (p, r, _), value in zip(cases, got)):
                c.fail(message, named=True)
        (p, r, want), value = wrong[0]
        c.fail(f"prompt {p}, response {r}: expected {want:g} ({explain(p, r)}), got {value:g}")
    c.passed += len(cases)


def _distance_to(target: Callable[[list[int]], list[int]]) -> Callable[[list[int], list[int]], float]:
    return lambda p, r: float(sum(a == b for a, b in zip(r, target(p))))


_DISTANCE_MISTAKES = [
    (_distance_to(lambda p: p), "you compared the response with the prompt itself; compare it with sorted(prompt)"),
    (
        _distance_to(lambda p: sorted(p, reverse=True)),
        "you sorted in decreasing order; the target is sorted(prompt), in increasing order",
    ),
    (
        lambda p, r: float(sum(v in sorted(p) for v in r)),
        "you counted response tokens found anywhere in sorted(prompt); count positions i where "
        "response[i] == sorted(prompt)[i]",
    ),
    (
        lambda p, r: float(sum(a != b for a, b in zip(r, sorted(p)))),
        "you counted the positions that differ; count the positions that match",
    ),
    (
        lambda p, r: _ref_sort_distance(p, r) / len(p),
        "you returned a fraction; the reward is the number of matching positions (0 .. len(prompt))",
    ),
    (
        lambda p, r: -float(sum(a != b for a, b in zip(r, sorted(p)))),
        "you returned minus the number of positions that differ (a distance); the reward counts the positions that "
        "MATCH: response[i] == sorted(prompt)[i]",
    ),
    (
        lambda p, r: float(sum(a == b for a, b in zip(sorted(r), sorted(p)))),
        "you sorted the response too: compare the response as it was written, response[i] with sorted(prompt)[i] "
        "(the prompt itself, [3, 1, 2], must not score 3)",
    ),
    (
        lambda p, r: float(len(p)) if list(r) == sorted(p) else 0.0,
        "all or nothing: you gave len(prompt) to the sorted answer and 0 to anything else; count the matching "
        "positions, so that a partly sorted response earns partial credit",
    ),
]


@exercise_check("sort_distance_reward")
def check_sort_distance_reward(c: Check, fn: Callable) -> None:
    """Check ``sort_distance_reward(prompt, response) -> float``: the number of positions where
    the response equals sorted(prompt). Catches comparing with the prompt, a decreasing sort,
    counting membership instead of positions, counting mismatches (or minus them), returning a
    fraction, sorting the response too, all-or-nothing credit."""

    def explain(p: list[int], r: list[int]) -> str:
        return f"sorted(prompt) = {sorted(p)}"

    _check_reward_cases(c, fn, SORT_DISTANCE_CASES, _DISTANCE_MISTAKES, explain)
    _check_reward_cases(c, fn, _random_cases(_ref_sort_distance), _DISTANCE_MISTAKES, explain)


def _inclusion(p: list[int], r: list[int]) -> int:
    return sum(x in r for x in p)


def _ordering(r: list[int]) -> int:
    return sum(a <= b for a, b in zip(r, r[1:]))


_INCLUSION_MISTAKES = [
    (
        lambda p, r: float(sum(x in r for x in set(p)) + _ordering(r)),
        "count every prompt item, duplicates included (prompt [2, 2, 5] can contribute 3); "
        "you seem to count distinct items, e.g. with set(prompt)",
    ),
    (
        lambda p, r: float(sum((Counter(p) & Counter(r)).values()) + _ordering(r)),
        "each prompt item counts when it occurs anywhere in the response, even if another prompt item already "
        "matched the same token: prompt [4, 4], response [4, 0] has inclusion 2; you matched each response token "
        "once (like a Counter intersection)",
    ),
    (
        lambda p, r: float(sum(y in p for y in r) + _ordering(r)),
        "count the prompt items found in the response, not the response items found in the prompt: "
        "[5, 5, 5] must not get credit three times for one 5",
    ),
    (
        lambda p, r: float(_inclusion(p, r) + sum(a < b for a, b in zip(r, r[1:]))),
        "the ordering part counts adjacent pairs with a <= b (non-decreasing): equal neighbours are in order",
    ),
    (
        lambda p, r: float(_inclusion(p, r) + sum(a >= b for a, b in zip(r, r[1:]))),
        "the ordering part counts adjacent pairs in non-decreasing order (a <= b), not decreasing ones",
    ),
    (
        lambda p, r: float(_inclusion(p, r) + sum(r[i] <= r[j] for i in range(len(r)) for j in range(i + 1, len(r)))),
        "the ordering part counts ADJACENT pairs only: (response[i], response[i + 1])",
    ),
    (
        lambda p, r: float(_inclusion(p, r) + _ordering(p)),
        "you counted the ordered adjacent pairs of the PROMPT; the ordering part looks at the RESPONSE: pairs "
        "(response[i], response[i + 1]) with response[i] <= response[i + 1]",
    ),
    (lambda p, r: float(_inclusion(p, r)), "you forgot the ordering part: + number of adjacent pairs with a <= b"),
    (lambda p, r: float(_ordering(r)), "you forgot the inclusion part: + number of prompt items found in the response"),
]


@exercise_check("sort_inclusion_ordering_reward")
def check_sort_inclusion_ordering_reward(c: Check, fn: Callable) -> None:
    """Check ``sort_inclusion_ordering_reward(prompt, response) -> float`` = (prompt items, duplicates
    again, found in the response) + (adjacent response pairs with a <= b). Catches set(prompt),
    a multiset match (Counter intersection), the inclusion direction swapped, strict or decreasing
    order, all pairs instead of adjacent ones, the prompt's pairs instead of the response's, and a
    missing part."""

    def explain(p: list[int], r: list[int]) -> str:
        return f"inclusion {_inclusion(p, r)} + ordering {_ordering(r)}"

    _check_reward_cases(c, fn, INCLUSION_ORDERING_CASES, _INCLUSION_MISTAKES, explain)
    _check_reward_cases(c, fn, _random_cases(_ref_inclusion_ordering), _INCLUSION_MISTAKES, explain)


# ---------------------------------------------------------------------------------------------
# The tiny encoder-decoder's forward pass
# ---------------------------------------------------------------------------------------------


def tiny_forward(
    embedding: torch.Tensor, encode_weights: torch.Tensor, decode_weights: torch.Tensor, prompts: torch.Tensor
) -> torch.Tensor:
    """The reference forward pass of ``TinyEncoderDecoder`` as a function of its weights.

    embedding[vocab, dim], encode_weights[prompt_pos, dim, dim], decode_weights[response_pos, dim, dim],
    prompts[batch, prompt_pos] -> logits[batch, response_pos, vocab].
    """
    embedded = embedding[prompts]
    encoded = einsum(embedded, encode_weights, "batch pos d_in, pos d_in d_out -> batch d_out")
    decoded = einsum(encoded, decode_weights, "batch d_in, pos d_in d_out -> batch pos d_out")
    return einsum(decoded, embedding, "batch pos dim, vocab dim -> batch pos vocab")


def _forward_variant(
    emb, enc, dec, prompts, *, enc_t=False, dec_t=False, same_enc=False, same_dec=False, mean=False, activation=None
):
    """A wrong forward pass: transposed / shared weight matrices, a mean instead of a sum, a nonlinearity on h."""
    enc = enc.transpose(1, 2) if enc_t else enc
    dec = dec.transpose(1, 2) if dec_t else dec
    enc = enc[:1].expand_as(enc) if same_enc else enc
    dec = dec[:1].expand_as(dec) if same_dec else dec
    if activation is not None:
        h = activation(einsum(emb[prompts], enc, "batch pos d_in, pos d_in d_out -> batch d_out"))
        decoded = einsum(h, dec, "batch d_in, pos d_in d_out -> batch pos d_out")
        return einsum(decoded, emb, "batch pos dim, vocab dim -> batch pos vocab")
    logits = tiny_forward(emb, enc, dec, prompts)
    return logits / prompts.shape[1] if mean else logits


def _forward_mistakes(emb, enc, dec, prompts, want) -> list[tuple[torch.Tensor, str]]:
    with torch.no_grad():
        variant = lambda **kw: _forward_variant(emb, enc, dec, prompts, **kw)  # noqa: E731
        return [
            (F.softmax(want, dim=-1), "these are probabilities: forward returns logits (raw scores), without softmax"),
            (
                F.log_softmax(want, dim=-1),
                "these are log-probabilities: forward returns raw logits, without log_softmax",
            ),
            (
                variant(enc_t=True, dec_t=True),
                "both einsums contract the wrong axis of their weights: "
                "'pos d_in d_out' means h_out = Σ_in h_in · W[pos, in, out]",
            ),
            (
                variant(enc_t=True),
                "the encoder contracts the wrong axis of encode_weights: use "
                "'batch pos d_in, pos d_in d_out -> batch d_out'",
            ),
            (
                variant(dec_t=True),
                "the decoder contracts the wrong axis of decode_weights: use "
                "'batch d_in, pos d_in d_out -> batch pos d_out'",
            ),
            (variant(same_enc=True), "every prompt position must use its own matrix encode_weights[i]"),
            (variant(same_dec=True), "every response position must use its own matrix decode_weights[j]"),
            (
                variant(mean=True),
                "you averaged over the prompt positions; the encoder SUMS them: h = Σ_i W_enc[i]ᵀ e(x_i)",
            ),
            *(
                (
                    variant(activation=act),
                    f"this model has no nonlinearity: h = Σ_i W_enc[i]ᵀ e(x_i) goes straight "
                    f"into the decoder, without {name}",
                )
                for act, name in ((torch.relu, "relu"), (torch.tanh, "tanh"))
            ),
        ]


_FORWARD_HINTS = [
    (
        "einsum",
        "check the einsum patterns against the shapes: embedding [vocab, dim], "
        "encode_weights [pos, d_in, d_out], decode_weights [pos, d_in, d_out], prompts [batch, pos]",
    ),
    (
        "shape",
        "check the shapes: embedding [vocab, dim], encode_weights [prompt_pos, d_in, d_out], "
        "decode_weights [response_pos, d_in, d_out], prompts [batch, prompt_pos]",
    ),
]


def _check_forward_case(
    c: Check, fn: Callable, batch: int, vocab: int, dim: int, p_len: int, r_len: int, seed: int
) -> None:
    gen = seeded_generator(SEED, seed)
    model = TinyEncoderDecoder(vocab, dim, p_len, r_len, init_scale=1.5, generator=gen)
    prompts = torch.randint(0, vocab, (batch, p_len), generator=gen)
    want = model(prompts).detach()
    weights = (model.embedding, model.encode_weights, model.decode_weights)
    got = c.call(fn, *weights, prompts, call=f"prompts of shape {[batch, p_len]}", hints=_FORWARD_HINTS)
    hints = {
        (batch, r_len, dim): "these are the decoded vectors: finish with the tied output embedding, a dot product "
        "with every row of the embedding table ('batch pos dim, vocab dim -> batch pos vocab')",
        (batch, dim): "you stopped after the encoder: decode h into one vector per response position",
        (batch, p_len, vocab): "one row of logits per RESPONSE position (decode_weights has one matrix per "
        "response position); did you skip the sum over prompt positions?",
    }
    got = c.shape(got, [batch, r_len, vocab], "batch, pos, vocab", "logits", hints)
    c.close(got, want, "logits", _forward_mistakes(*weights, prompts, want))
    c.expect(
        got.requires_grad,
        "your logits carry no gradient: no torch.no_grad(), .detach() or numpy inside "
        "forward — training backpropagates through it",
    )


@exercise_check("forward")
def check_forward(c: Check, fn: Callable) -> None:
    """Check ``forward(embedding, encode_weights, decode_weights, prompts) -> logits[batch, pos, vocab]``
    against ``TinyEncoderDecoder``. Catches a missing tied output embedding, an einsum over the
    wrong weight axis, one shared matrix for all positions, a mean over prompt positions,
    softmax / log_softmax applied, a relu or tanh on h, and a result cut off the graph."""
    _check_forward_case(c, fn, batch=2, vocab=5, dim=6, p_len=3, r_len=4, seed=0)
    _check_forward_case(c, fn, batch=3, vocab=7, dim=4, p_len=5, r_len=5, seed=1)


# ---------------------------------------------------------------------------------------------
# compute_log_probs
# ---------------------------------------------------------------------------------------------


def _log_prob_mistakes(prompts, responses, model, want) -> list[tuple[torch.Tensor | None, str]]:
    with torch.no_grad():
        logits = model(prompts)  # [batch, pos, vocab]
        trial = responses.shape[1]

        def pick(table: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
            table = table.unsqueeze(1).expand(-1, trial, -1, -1)
            return table.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)

        log_p = F.log_softmax(logits, dim=-1)
        prompt_tokens = prompts.unsqueeze(1).expand(-1, trial, -1) if prompts.shape == responses[:, 0].shape else None
        return [
            (want.exp(), "these are probabilities, not log-probabilities: use log_softmax (not softmax)"),
            (pick(logits, responses), "these are raw logits: apply log_softmax over the vocab axis before gathering"),
            (
                pick(F.log_softmax(logits, dim=1), responses),
                "log_softmax over the wrong axis: normalise over the vocab axis (dim=-1), not over positions",
            ),
            (
                pick(F.log_softmax(logits, dim=0), responses),
                "log_softmax over the wrong axis: normalise over the vocab axis (dim=-1), not over the batch (dim=0)",
            ),
            (-want, "wrong sign: log-probabilities are ≤ 0; you returned −log π"),
            (
                None if prompt_tokens is None else pick(log_p, prompt_tokens),
                "these are the log-probs of the PROMPT tokens; gather the response tokens",
            ),
            (
                pick(log_p, responses[:, :1].expand_as(responses)),
                "every response got the first response's log-probs: gather each trial's own tokens",
            ),
        ]


_LOG_PROB_HINTS = [
    (
        "same number of dimensions",
        "repeat the log-probs over the trial axis first: repeat(log_probs, "
        "'batch pos vocab -> batch trial pos vocab', trial=responses.shape[1])",
    ),
    ("out of bounds", "gather on the vocab axis (dim=-1) with index responses.unsqueeze(-1)"),
    ("size of tensor", "the log-probs need a trial axis to line up with responses [batch, trial, pos]"),
]


def _check_log_probs_case(
    c: Check, fn: Callable, responses: torch.Tensor, vocab: int, dim: int, seed: int, init_scale: float
) -> None:
    batch, trial, pos = responses.shape
    gen = seeded_generator(SEED, seed)
    model = TinyEncoderDecoder(vocab, dim, pos, pos, init_scale=init_scale, generator=gen)
    prompts = torch.randint(0, vocab, (batch, pos), generator=gen)
    want = _ref_compute_log_probs(prompts, responses, model).detach()
    got = c.call(
        fn,
        prompts.clone(),
        responses.clone(),
        model,
        hints=_LOG_PROB_HINTS,
        call=f"prompts {list(prompts.shape)}, responses {list(responses.shape)}",
    )
    hints = {
        (batch, trial): "one log-prob per TOKEN: don't sum over positions",
        (batch, pos): "keep the trial axis: one row per sampled response (repeat over trial before gathering)",
        (batch, pos, vocab): "these are log-probs of the whole vocabulary: gather the sampled tokens' entries",
        (batch, trial, pos, vocab): "gather the sampled token's log-prob: .gather(-1, responses.unsqueeze(-1))",
        (batch, trial, pos, 1): "squeeze the last axis after gather: .squeeze(-1)",
    }
    got = c.shape(got, [batch, trial, pos], "batch, trial, pos", "log_probs", hints)
    c.close(got, want, "log_probs", _log_prob_mistakes(prompts, responses, model, want))
    c.expect(
        got.requires_grad,
        "your log-probs carry no gradient: no torch.no_grad() or .detach() here — "
        "the loss backpropagates through them into the model",
    )


# [batch 2, trial 3, pos 4] with every token value 0..4 present (token 4 > the last position index 3)
_HAND_RESPONSES = torch.tensor([[[0, 1, 2, 3], [4, 4, 0, 1], [2, 3, 4, 0]], [[1, 1, 1, 1], [3, 2, 1, 0], [4, 0, 2, 4]]])


@exercise_check("compute_log_probs")
def check_compute_log_probs(c: Check, fn: Callable) -> None:
    """Check ``compute_log_probs(prompts, responses, model) -> log_probs[batch, trial, pos]`` against
    ``minirl.compute_log_probs``. Catches probabilities instead of log-probs, raw logits (no
    log_softmax), log_softmax or gather over the wrong axis, the prompt's tokens instead of the
    response's, the trial axis dropped or not repeated, a flipped sign, no gradient."""
    _check_log_probs_case(c, fn, _HAND_RESPONSES, vocab=5, dim=6, seed=2, init_scale=1.5)  # log-probs in [-5.3, -0.2]
    responses = torch.randint(0, 7, (3, 2, 5), generator=seeded_generator(SEED, 3))
    _check_log_probs_case(c, fn, responses, vocab=7, dim=4, seed=4, init_scale=1.0)  # in [-7, -0.4]

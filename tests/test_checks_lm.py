"""The checks of notebook 07 catch the plausible wrong implementations, each with a message that names it."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from check_helpers import caught, run

from minirl.checks import check_completion_log_probs, check_first_eos_mask, check_parse_answer, reference_parse_answer
from minirl.checks import nb07_lm as lm_checks
from minirl.lm import completion_log_probs, first_eos_mask

# ---- first_eos_mask ------------------------------------------------------------------------------------


def eos_loop(tokens, eos):
    """A correct alternative: a Python loop over the rows."""
    flat = tokens.reshape(-1, tokens.shape[-1])
    mask = torch.zeros(flat.shape)
    for r, row in enumerate(flat.tolist()):
        for t, token in enumerate(row):
            mask[r, t] = 1.0
            if token == eos:
                break
    return mask.view(tokens.shape)


def eos_shifted_cumsum(tokens, eos):
    """A correct alternative: no EOS strictly before, via a shifted cumulative sum."""
    is_eos = (tokens == eos).float()
    before = torch.cat([torch.zeros_like(is_eos[..., :1]), is_eos[..., :-1]], dim=-1).cumsum(-1)
    return (before == 0).float()


def eos_argmax_fixed(tokens, eos):
    """A correct alternative: argmax, with the rows without an EOS handled."""
    is_eos = tokens == eos
    first = torch.where(is_eos.any(-1), is_eos.int().argmax(-1), tokens.shape[-1] - 1)
    return (torch.arange(tokens.shape[-1]) <= first[..., None]).float()


@pytest.mark.parametrize("fn", [eos_loop, eos_shifted_cumsum, eos_argmax_fixed], ids=["loop", "shifted", "argmax"])
def test_first_eos_mask_correct_alternatives(fn, capsys):
    ok, line = run(check_first_eos_mask, fn, capsys)
    assert ok, line


def eos_excluded(tokens, eos):
    return ((tokens == eos).long().cumsum(-1) == 0).float()


def eos_last(tokens, eos):
    """Remembers the position of every EOS in turn: ends up with the last one."""
    flat = tokens.reshape(-1, tokens.shape[-1])
    mask = torch.ones(flat.shape)
    for r, row in enumerate(flat.tolist()):
        end = None
        for t, token in enumerate(row):
            if token == eos:
                end = t
        if end is not None:
            mask[r, end + 1 :] = 0.0
    return mask.view(tokens.shape)


def eos_until_second(tokens, eos):
    return ((tokens == eos).long().cumsum(-1) <= 1).float()


def eos_only(tokens, eos):
    return (tokens != eos).float()


def eos_argmax(tokens, eos):
    first = (tokens == eos).int().argmax(-1, keepdim=True)
    return (torch.arange(tokens.shape[-1]) <= first).float()


def eos_batch_axis(tokens, eos):
    is_eos = (tokens == eos).long()
    return ((is_eos.cumsum(0) - is_eos) == 0).float()


def eos_hard_coded(tokens, eos):
    return first_eos_mask(tokens, 2)


def eos_bool(tokens, eos):
    return first_eos_mask(tokens, eos).bool()


def eos_in_place(tokens, eos):
    tokens[tokens == eos] = -1
    return first_eos_mask(tokens, -1)


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (eos_excluded, ["should include the EOS token itself"]),
        (eos_last, ["FIRST EOS, not the last"]),
        (eos_until_second, ["up to the next EOS"]),
        (eos_only, ["only the EOS tokens"]),
        (eos_argmax, ["without an EOS", "all 1", "argmax"]),
        (eos_batch_axis, ["last axis"]),
        (eos_hard_coded, ["ignores the eos argument"]),
        (eos_bool, ["float tensor", ".float()"]),
        (eos_in_place, ["in place"]),
    ],
    ids=["excluded", "last", "until-second", "only-eos", "argmax", "batch-axis", "hard-coded", "bool", "in-place"],
)
def test_first_eos_mask_mistakes(wrong, keywords, capsys):
    caught(check_first_eos_mask, wrong, capsys, *keywords)


def test_first_eos_mask_constants_match_the_reference():
    got = first_eos_mask(torch.tensor(lm_checks.EOS_TOKENS), 2)
    assert torch.equal(got, torch.tensor(lm_checks.EOS_EXPECTED))


# ---- completion_log_probs ------------------------------------------------------------------------------


def lp_loop(logits, input_ids, prompt_length):
    """A correct alternative: one position at a time."""
    columns = [
        F.log_softmax(logits[:, t - 1], dim=-1).gather(-1, input_ids[:, t : t + 1])
        for t in range(prompt_length, input_ids.shape[1])
    ]
    return torch.cat(columns, dim=1) if columns else logits.new_zeros(logits.shape[0], 0)


def lp_logsumexp(logits, input_ids, prompt_length):
    """A correct alternative: the chosen logit minus the log-sum-exp, via negative indices."""
    n = input_ids.shape[1] - prompt_length
    scoring = logits[:, -n - 1 : -1]
    chosen = scoring.gather(-1, input_ids[:, -n:, None]).squeeze(-1)
    return chosen - scoring.logsumexp(-1)


def lp_cross_entropy(logits, input_ids, prompt_length):
    """A correct alternative: minus the per-token cross-entropy."""
    scoring = logits[:, prompt_length - 1 : -1]
    return -F.cross_entropy(scoring.transpose(1, 2), input_ids[:, prompt_length:], reduction="none")


def lp_float64(logits, input_ids, prompt_length):
    """A correct alternative: in float64, then back to the logits' dtype."""
    return completion_log_probs(logits.double(), input_ids, prompt_length).to(logits.dtype)


@pytest.mark.parametrize(
    "fn", [lp_loop, lp_logsumexp, lp_cross_entropy, lp_float64], ids=["loop", "logsumexp", "cross-entropy", "float64"]
)
def test_completion_log_probs_correct_alternatives(fn, capsys):
    ok, line = run(check_completion_log_probs, fn, capsys)
    assert ok, line


def lp_with(transform=lambda x: F.log_softmax(x, dim=-1), logit_slice=(1, 1), id_slice=(0, None), sign=1.0):
    """log π with one knob turned: logits[:, p - a : -b or None], ids[:, p - c : d]."""

    def completion_log_probs_variant(logits, input_ids, prompt_length):
        a, b = logit_slice
        scoring = transform(logits)[:, prompt_length - a : (-b if b else None)]
        c, d = id_slice
        targets = input_ids[:, prompt_length - c : d]
        return sign * scoring.gather(-1, targets.unsqueeze(-1)).squeeze(-1)

    return completion_log_probs_variant


def lp_log_of_softmax(logits, input_ids, prompt_length):
    """Right on moderate logits; −inf where a logit lies 120 below the top one."""
    probs = logits[:, prompt_length - 1 : -1].softmax(-1)
    return probs.gather(-1, input_ids[:, prompt_length:, None]).squeeze(-1).log()


def lp_log_of_clamped_softmax(logits, input_ids, prompt_length):
    probs = logits[:, prompt_length - 1 : -1].softmax(-1).clamp(min=1e-12)
    return probs.gather(-1, input_ids[:, prompt_length:, None]).squeeze(-1).log()


def lp_naive_logsumexp(logits, input_ids, prompt_length):
    scoring = logits[:, prompt_length - 1 : -1]
    chosen = scoring.gather(-1, input_ids[:, prompt_length:, None]).squeeze(-1)
    return chosen - scoring.exp().sum(-1).log()


def lp_no_gather(logits, input_ids, prompt_length):
    return F.log_softmax(logits[:, prompt_length - 1 : -1], dim=-1)


def lp_all_positions(logits, input_ids, prompt_length):
    return F.log_softmax(logits[:, :-1], dim=-1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)


def lp_detached(logits, input_ids, prompt_length):
    return completion_log_probs(logits.detach(), input_ids, prompt_length)


def lp_in_place(logits, input_ids, prompt_length):
    with torch.no_grad():
        logits -= logits.logsumexp(-1, keepdim=True)
    return completion_log_probs(logits, input_ids, prompt_length)


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (lp_with(logit_slice=(0, 0)), ["did you forget the shift"]),
        (lp_with(id_slice=(1, -1)), ["shifted the token ids along with the logits"]),
        (lp_with(transform=lambda x: x.softmax(-1)), ["log_softmax, not softmax"]),
        (lp_with(transform=lambda x: x), ["raw logits"]),
        (lp_with(transform=lambda x: F.log_softmax(x, dim=1)), ["wrong axis"]),
        (lp_with(sign=-1.0), ["wrong sign"]),
        (lp_with(logit_slice=(0, 1), id_slice=(-1, None)), ["one position short"]),
        (lp_no_gather, ["gather the log-prob of the token"]),
        (lp_all_positions, ["only the completion's positions"]),
        (lp_detached, ["no gradient"]),
        (lp_in_place, ["in place"]),
        (
            lp_log_of_softmax,
            ["peaked logits", "got [[-inf", "use log_softmax: log(softmax(x)) underflows for peaked logits"],
        ),
        (lp_log_of_clamped_softmax, ["peaked logits", "got [[-27.63", "underflows", "a clamp"]),
        (lp_naive_logsumexp, ["peaked logits", "exp overflows", "log(exp(logits).sum(-1)) is inf"]),
    ],
    ids=[
        "no-shift",
        "ids-shifted",
        "softmax",
        "raw-logits",
        "wrong-axis",
        "sign",
        "one-short",
        "no-gather",
        "all-positions",
        "detached",
        "in-place",
        "log-of-softmax",
        "log-of-clamped-softmax",
        "naive-logsumexp",
    ],
)
def test_completion_log_probs_mistakes(wrong, keywords, capsys):
    caught(check_completion_log_probs, wrong, capsys, *keywords)


def test_completion_log_probs_constants_match_the_reference():
    got = completion_log_probs(lm_checks._hand_logits(), torch.tensor(lm_checks.LP_IDS), lm_checks.LP_PROMPT_LENGTH)
    torch.testing.assert_close(got, torch.tensor(lm_checks.LP_EXPECTED))


def test_peaked_case_underflows_log_of_softmax_but_not_log_softmax():
    logits, ids, p = lm_checks._peaked_case(torch.Generator().manual_seed(0))
    want = completion_log_probs(logits, ids, p)
    assert torch.isfinite(want).all() and (want[0] < -100).all()  # row 0: every token ≈ −120
    assert (want[1, ::2] > -1e-3).all() and (want[1, 1::2] < -100).all()  # row 1: ≈ 0 and ≈ −120 in turn
    assert torch.isinf(lp_log_of_softmax(logits, ids, p)).sum() == 6  # the six −120s are −inf


@pytest.mark.parametrize(
    "args, message",
    [
        ((torch.zeros(2, 5), torch.zeros(2, 5, dtype=torch.long), 2), "logits must be a tensor of shape"),
        ((torch.zeros(2, 5, 3), torch.zeros(2, 4, dtype=torch.long), 2), r"input_ids must have shape \[batch, seq\]"),
        ((torch.zeros(2, 5, 3), torch.zeros(2, 5), 2), "integer token ids"),
        ((torch.zeros(2, 5, 3), torch.zeros(2, 5, dtype=torch.long), 0), r"prompt_length must be an int in \[1, seq"),
        ((torch.zeros(2, 5, 3), torch.zeros(2, 5, dtype=torch.long), 6), r"prompt_length must be an int in \[1, seq"),
        ((torch.zeros(2, 5, 3), torch.zeros(2, 5, dtype=torch.long), 2.0), "prompt_length must be an int"),
    ],
)
def test_completion_log_probs_rejects_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        completion_log_probs(*args)


def test_completion_log_probs_of_an_empty_completion():
    assert completion_log_probs(torch.zeros(2, 5, 3), torch.zeros(2, 5, dtype=torch.long), 5).shape == (2, 0)


# ---- parse_answer --------------------------------------------------------------------------------------

ASKED_FORM = re.compile(r"[0-9]+(?: *, *[0-9]+)*")


def parse_regex(text):
    """A correct alternative: the regex, and the 100-digit limit."""
    text = text.strip()
    if not ASKED_FORM.fullmatch(text):
        return None
    items = [item.strip(" ") for item in text.split(",")]
    return None if any(len(item) > 100 for item in items) else tuple(int(item) for item in items)


def parse_by_hand(text):
    """A correct alternative: split on commas, check every character of every item."""
    items = text.strip().split(",")
    numbers = []
    for item in items:
        item = item.strip(" ")
        if not item or len(item) > 100 or any(ch not in "0123456789" for ch in item):
            return None
        numbers.append(int(item))
    return tuple(numbers)


@pytest.mark.parametrize("fn", [parse_regex, parse_by_hand], ids=["regex", "by-hand"])
def test_parse_answer_correct_alternatives(fn, capsys):
    ok, line = run(check_parse_answer, fn, capsys)
    assert ok, line


def parse_naive(text):
    return tuple(int(p) for p in text.split(","))


def parse_try_int(text):
    try:
        return tuple(int(p) for p in text.split(","))
    except ValueError:
        return None


def parse_strip_period(text):
    return parse_regex(text.strip().rstrip("."))


def parse_backslash_d(text):
    text = text.strip()
    return tuple(int(p) for p in text.split(",")) if re.fullmatch(r"\d+(?: *, *\d+)*", text) else None


def parse_isdigit(text):
    items = [p.strip() for p in text.strip().split(",")]
    return tuple(int(p) for p in items) if all(p.isdigit() for p in items) else None


def parse_any_whitespace(text):
    text = text.strip()
    return tuple(int(p) for p in text.split(",")) if re.fullmatch(r"[0-9]+(?:\s*,\s*[0-9]+)*", text) else None


def parse_no_strip(text):
    return tuple(int(p) for p in text.split(",")) if ASKED_FORM.fullmatch(text) else None


def parse_exactly_three(text):
    parsed = parse_regex(text)
    return parsed if parsed is not None and len(parsed) == 3 else None


def parse_no_leading_zeros(text):
    text = text.strip()
    number = r"(?:0|[1-9][0-9]*)"
    return parse_regex(text) if re.fullmatch(rf"{number}(?: *, *{number})*", text) else None


def parse_no_digit_limit(text):
    text = text.strip()
    return tuple(int(p) for p in text.split(",")) if ASKED_FORM.fullmatch(text) else None


def parse_int_guard(text):
    """The regex, and int() raising ValueError as the only length guard: int() refuses only > 4300 digits."""
    text = text.strip()
    if not ASKED_FORM.fullmatch(text):
        return None
    try:
        return tuple(int(item) for item in text.split(","))
    except ValueError:
        return None


def parse_limit_off_by_one(text):
    parsed = parse_regex(text)
    items = [item.strip(" ") for item in text.strip().split(",")]
    return None if parsed is None or any(len(item) >= 100 for item in items) else parsed


def parse_limit_on_the_whole_text(text):
    parsed = parse_regex(text)
    return None if parsed is None or len(text.strip()) > 100 else parsed


def parse_digits(text):
    return tuple(int(ch) for ch in text if ch.isascii() and ch.isdigit()) if parse_regex(text) is not None else None


def parse_drops_the_last(text):
    parsed = parse_regex(text)
    return parsed if parsed is None or len(parsed) < 2 else parsed[:-1]


def parse_list(text):
    parsed = parse_regex(text)
    return None if parsed is None else list(parsed)


def parse_strings(text):
    parsed = parse_regex(text)
    return None if parsed is None else tuple(p.strip() for p in text.strip().split(","))


def parse_sorted(text):
    parsed = parse_regex(text)
    return None if parsed is None else tuple(sorted(parsed))


def parse_raises_on_junk(text):
    parsed = parse_regex(text)
    if parsed is None:
        raise ValueError(f"not an answer: {text!r}")
    return parsed


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (parse_naive, ["raised ValueError", "'abc'", "must never raise"]),
        (parse_raises_on_junk, ["raised ValueError", "must never raise"]),
        (parse_try_int, ["signs are not the asked form"]),
        (parse_strip_period, ["accepted '3, 1, 2.'", "trailing period is not the asked form"]),
        (parse_backslash_d, ["ASCII digits 0-9"]),
        (parse_isdigit, ["ASCII digits 0-9", "isdigit"]),
        (parse_any_whitespace, ["only spaces may surround a comma"]),
        (parse_no_strip, ["strip the whitespace"]),
        (parse_exactly_three, ["one number is a well-formed answer"]),
        (parse_no_leading_zeros, ["leading zeros"]),
        (
            parse_no_digit_limit,
            [
                "accepted '111111111111111111111…' (101 characters)",
                "more than 100 digits",
                "this one has 101",
                "int() reads it",
            ],
        ),
        (
            parse_int_guard,
            [
                "accepted",
                "(101 characters)",
                "returned (111111…(101 digits),)",
                "more than 100 digits",
                "refuses only more than 4300 digits",
            ],
        ),
        (
            parse_limit_off_by_one,
            [
                "returned None on '777777777777777777777…' (100 characters)",
                "exactly 100 digits is still an answer",
                "not >=",
            ],
        ),
        (
            parse_limit_on_the_whole_text,
            ["returned None", "per number, not on the whole answer", "longest number has 2"],
        ),
        (parse_digits, ["every digit as a number of its own"]),
        (parse_drops_the_last, ["only 2 of the 3 numbers", "the last included"]),
        (parse_list, ["tuple of ints, not a list"]),
        (parse_strings, ["int()", "strings"]),
        (parse_sorted, ["order they were written"]),
    ],
    ids=[
        "naive",
        "raises-on-junk",
        "try-int",
        "trailing-period",
        "backslash-d",
        "isdigit",
        "any-whitespace",
        "no-strip",
        "exactly-three",
        "leading-zeros",
        "no-digit-limit",
        "int-guard",
        "limit-off-by-one",
        "limit-on-the-text",
        "digits",
        "drops-the-last",
        "list",
        "strings",
        "sorted",
    ],
)
def test_parse_answer_mistakes(wrong, keywords, capsys):
    caught(check_parse_answer, wrong, capsys, *keywords)


def test_parse_constants_match_the_reference():
    for text, want in lm_checks.PARSE_ACCEPTED:
        assert reference_parse_answer(text) == want, text
    for text in lm_checks.PARSE_REJECTED:
        assert reference_parse_answer(text) is None, text


def test_long_numbers_lie_between_the_digit_limit_and_ints_limit():
    """Every too-long number has 101 .. 4300 digits: int() reads it, so only the length rule rejects it."""
    import sys

    from toy_envs.text_base import MAX_ANSWER_DIGITS

    assert MAX_ANSWER_DIGITS == 100 and sys.get_int_max_str_digits() == lm_checks._INT_MAX_DIGITS == 4300
    for text in lm_checks.PARSE_TOO_LONG:
        longest = max(len(item.strip()) for item in text.split(","))
        assert MAX_ANSWER_DIGITS < longest <= 4300, text[:20]
        assert parse_int_guard(text) is not None  # int() alone lets it through
    with pytest.raises(ValueError):
        int("1" * 5000)


def test_random_texts_mix_accepted_and_rejected():
    parsed = [reference_parse_answer(t) for t in lm_checks._random_texts(lm_checks.SEED, 300)]
    accepted = sum(p is not None for p in parsed)
    assert 60 <= accepted <= 240, accepted


def test_gather_without_the_vocab_axis_gets_a_hint(capsys):
    def completion_log_probs(logits, input_ids, prompt_length):
        log_p = torch.log_softmax(logits[:, prompt_length - 1 : -1], dim=-1)
        return log_p.gather(-1, input_ids[:, prompt_length:])  # PyTorch: index must have the same dims

    caught(
        check_completion_log_probs,
        completion_log_probs,
        capsys,
        "raised RuntimeError",
        "same number of dimensions",
        "ids.unsqueeze(-1)",
    )


def test_misaligned_slices_get_a_hint(capsys):
    def completion_log_probs(logits, input_ids, prompt_length):
        log_p = torch.log_softmax(logits[:, -1:], dim=-1)  # only the last position's logits
        return log_p.gather(-1, input_ids[:, prompt_length:].unsqueeze(-1)).squeeze(-1)

    caught(
        check_completion_log_probs,
        completion_log_probs,
        capsys,
        "raised RuntimeError",
        "size does not match",
        "logits[:, prompt_length-1:-1]",
    )


# ---- more named mistakes (issue 19) ---------------------------------------------------------------------


def eos_inverted(tokens, eos):
    return 1.0 - first_eos_mask(tokens, eos)


@pytest.mark.parametrize(
    "check, wrong, keywords",
    [
        (check_first_eos_mask, eos_inverted, ["inverted", "0.0 for the padding"]),
        (
            check_completion_log_probs,
            lambda lg, ids, p: completion_log_probs(lg, ids, p).cumsum(-1),
            ["running sums", "own log-prob"],
        ),
        (
            check_completion_log_probs,
            lambda lg, ids, p: completion_log_probs(lg, ids, p).sum(-1, keepdim=True).expand(-1, ids.shape[1] - p),
            ["whole completion", "own log-prob"],
        ),
    ],
    ids=["eos-inverted", "log-probs-cumsum", "log-probs-whole"],
)
def test_more_named_mistakes(check, wrong, keywords, capsys):
    caught(check, wrong, capsys, *keywords)

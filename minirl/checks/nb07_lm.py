"""Checks for notebook 07 (GRPO on a language model), named after the function they check.

    check_first_eos_mask(fn)         fn(tokens, eos) -> mask, float, the shape of tokens: 1.0 up to and
                                        including the first eos along the last axis, 0.0 after
    check_completion_log_probs(fn)   fn(logits, input_ids, prompt_length) -> [batch, seq - prompt_length]:
                                        log π of each completion token, from one forward pass
    check_parse_answer(fn)           fn(text) -> tuple[int, ...] | None: the numbers of an answer in the
                                        asked form ("2, 5, 8"), else None; never raises

Expected values are hand-worked constants plus the references (``minirl.lm.first_eos_mask``,
``minirl.lm.completion_log_probs``, ``toy_envs.text_tasks.TextSortTask.parse_answer``) on seeded random
inputs. ``reference_parse_answer`` is the reference with the exercise's signature, for the notebook's
fallback cell.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from minirl.checks._core import (
    Check,
    CheckFailure,
    NotImplementedYet,
    _one_line,
    exercise_check,
    format_tensor,
    seeded_generator,
    tensors_close,
)
from minirl.lm import completion_log_probs as _ref_completion_log_probs
from minirl.lm import first_eos_mask as _ref_first_eos_mask
from toy_envs.text_base import MAX_ANSWER_DIGITS
from toy_envs.text_tasks import TextSortTask

__all__ = [
    "check_completion_log_probs",
    "check_first_eos_mask",
    "check_parse_answer",
    "reference_parse_answer",
]

SEED = 7007
_SORT_TASK = TextSortTask()
_INT_MAX_DIGITS = 4300  # Python's default int() limit (sys.get_int_max_str_digits()): ValueError beyond it


def reference_parse_answer(text: str) -> tuple[int, ...] | None:
    """``TextSortTask().parse_answer``: the numbers of ``"2, 5, 8"``-style text, else None (never raises)."""
    return _SORT_TASK.parse_answer(text)


# ---------------------------------------------------------------------------------------------
# first_eos_mask
# ---------------------------------------------------------------------------------------------

# [batch 1, trial 4, pos 6], EOS = 2: an EOS in the middle, a second EOS later, no EOS, EOS first.
EOS_TOKENS = [[[5, 7, 2, 9, 2, 4], [3, 2, 6, 6, 2, 2], [4, 4, 4, 4, 4, 4], [2, 8, 8, 2, 8, 8]]]
EOS_EXPECTED = [
    [
        [1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    ]
]


def _eos_mistakes(tokens: torch.Tensor, eos: int) -> list[tuple[torch.Tensor | None, str]]:
    is_eos = (tokens == eos).long()
    pos = torch.arange(tokens.shape[-1])
    last = torch.where(is_eos.bool(), pos, -1).amax(-1, keepdim=True)  # the last EOS, -1 without one
    up_to_last = torch.where(last >= 0, pos <= last, True).float()
    first_by_argmax = (pos <= is_eos.argmax(-1, keepdim=True)).float()  # argmax is 0 when there is no EOS
    return [
        (
            (is_eos.cumsum(-1) == 0).float(),
            "the mask should include the EOS token itself (the policy chose to stop: "
            "that choice is learned too); yours stops just before it",
        ),
        (up_to_last, "use the FIRST EOS, not the last: everything after the first EOS is padding, even another EOS"),
        (
            (is_eos.cumsum(-1) <= 1).float(),
            "after the first EOS you kept tokens up to the next EOS; everything after the first EOS is padding",
        ),
        (
            (tokens != eos).float(),
            "you masked out only the EOS tokens; the mask is 1 up to and including the first "
            "EOS and 0 for everything after it",
        ),
        (
            first_by_argmax,
            "a response without an EOS (it ran out of max_new_tokens) is real all the way: its mask is "
            "all 1 (argmax returns 0 when there is no EOS)",
        ),
        (
            ((is_eos.cumsum(0) - is_eos) == 0).float(),
            "the search for the EOS must run along the last axis (positions), e.g. cumsum(dim=-1), not along the batch",
        ),
        (
            ((is_eos.cumsum(1) - is_eos) == 0).float() if tokens.dim() == 3 else None,
            "the search for the EOS must run along the last axis (positions), not along the trial axis",
        ),
        (
            ((is_eos.cumsum(-1) - is_eos) != 0).float(),
            "inverted: the mask is 1.0 for the real tokens (up to and "
            "including the first EOS) and 0.0 for the padding after it",
        ),
    ]


def _check_eos_case(c: Check, fn: Callable, tokens: torch.Tensor, eos: int, want: torch.Tensor, name: str) -> None:
    given = tokens.clone()
    got = c.call(fn, given, eos, call=f"the {name} (eos={eos})")
    what = f"mask of the {name} (eos={eos})"
    c.expect(torch.equal(given, tokens), f"{what}: your function changed the tokens in place; build a new tensor")
    got = c.shape(got, list(tokens.shape), "same as tokens", what)
    c.expect(
        got.is_floating_point(),
        f"{what}: the mask should be a float tensor of 1.0 and 0.0 (it multiplies "
        f"per-token losses); got dtype {got.dtype} — add .float()",
    )
    mistakes = _eos_mistakes(tokens, eos)
    for other in (2, 0, 1):
        if other != eos:
            mistakes.append(
                (
                    _ref_first_eos_mask(tokens, other),
                    f"your function ignores the eos argument (called with eos={eos}; it looks for {other})",
                )
            )
    c.close(got, want, what, mistakes)


@exercise_check("first_eos_mask")
def check_first_eos_mask(c: Check, fn: Callable) -> None:
    """Check ``first_eos_mask(tokens, eos)``: a float mask of the tokens' shape, 1.0 up to and including the
    first ``eos`` along the last axis and 0.0 after (all 1.0 without an EOS). Catches the EOS left out,
    the last EOS instead of the first, tokens kept until a second EOS, only the EOS masked, argmax on a
    row with no EOS, the wrong axis, an inverted mask, a hard-coded eos, a bool mask, in-place edits."""
    tokens = torch.tensor(EOS_TOKENS)
    with c.worked_example():
        _check_eos_case(c, fn, tokens, 2, torch.tensor(EOS_EXPECTED), "hand-worked example")
    gen = seeded_generator(SEED, 1)
    for eos, shape in ((0, (3, 4, 7)), (5, (2, 5, 9)), (2, (4, 11))):
        tokens = torch.randint(0, 6, shape, generator=gen)
        tokens[0, ..., -1] = eos  # some rows end on their only EOS, others have none
        tokens.view(-1, shape[-1])[1] = (eos + 1) % 6
        _check_eos_case(c, fn, tokens, eos, _ref_first_eos_mask(tokens, eos), f"random tokens {list(shape)}")


# ---------------------------------------------------------------------------------------------
# completion_log_probs
# ---------------------------------------------------------------------------------------------

# batch 1, seq 4 (prompt of 2 tokens, completion of 2), vocab 3. The logits are log p + a shift per
# position (a softmax does not see the shift), so log_softmax(logits[0, t]) = log P[t].
LP_PROBS = [[0.2, 0.3, 0.5], [0.1, 0.2, 0.7], [0.6, 0.3, 0.1], [0.25, 0.25, 0.5]]
LP_SHIFT = [0.5, -1.0, 2.0, 1.0]
LP_IDS = [[0, 1, 2, 0]]
LP_PROMPT_LENGTH = 2
LP_EXPECTED = [[math.log(0.7), math.log(0.6)]]  # token 2 at t = 2 from P[1]; token 0 at t = 3 from P[2]


def _hand_logits() -> torch.Tensor:
    probs, shift = torch.tensor(LP_PROBS), torch.tensor(LP_SHIFT)
    return (probs.log() + shift[:, None])[None]  # [1, 4, 3]


def _lp_mistakes(logits: torch.Tensor, ids: torch.Tensor, p: int) -> list[tuple[torch.Tensor | None, str]]:
    def gathered(values: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return values.gather(-1, targets.unsqueeze(-1)).squeeze(-1)

    shifted, here = logits[:, p - 1 : -1], logits[:, p:]
    log_p = F.log_softmax(shifted, dim=-1)
    targets = ids[:, p:]
    return [
        (
            gathered(F.log_softmax(here, dim=-1), targets) if here.shape[1] == targets.shape[1] else None,
            "logits at position t predict token t+1: did you forget the shift? The completion token at t is scored by "
            "the logits at t − 1: logits[:, prompt_length-1:-1]",
        ),
        (
            gathered(log_p, ids[:, p - 1 : -1]),
            "you shifted the token ids along with the logits: the logits at t − 1 "
            "score the token AT t, input_ids[:, prompt_length:]",
        ),
        (gathered(F.softmax(shifted, dim=-1), targets), "log_softmax, not softmax: return log-probabilities"),
        (
            gathered(shifted, targets),
            "you gathered the raw logits: normalise over the vocabulary first, log_softmax(logits, dim=-1)",
        ),
        (
            gathered(F.log_softmax(shifted, dim=1), targets),
            "log_softmax over the wrong axis: normalise over the vocabulary (dim=-1), not over positions",
        ),
        (
            gathered(F.log_softmax(logits, dim=1)[:, p - 1 : -1], targets),
            "log_softmax over the wrong axis: normalise over the vocabulary (dim=-1), not over positions",
        ),
        (-gathered(log_p, targets), "wrong sign: return log π (≤ 0), not the negative log-likelihood"),
        (
            gathered(log_p, targets).cumsum(-1),
            "you returned running sums (the log-prob of each prefix); return each completion token's own log-prob",
        ),
        (
            gathered(log_p, targets).sum(-1, keepdim=True).expand_as(targets),
            "you gave every position the log-prob of the whole completion; return each token's own log-prob",
        ),
    ]


_LP_SHAPE_HINTS = {
    "all": "return only the completion's positions, from prompt_length on",
    "one_less": "one position short: the logits at prompt_length − 1 already predict the first completion token",
    "vocab": "gather the log-prob of the token that is actually there: .gather(-1, ids.unsqueeze(-1)).squeeze(-1)",
}


# PyTorch's own errors for the usual slips, and what most likely caused them
_LP_ERROR_HINTS = [
    (
        "same number of dimensions",
        "gather's index needs the vocab axis too: .gather(-1, ids.unsqueeze(-1)), then .squeeze(-1)",
    ),
    (
        "size of tensor",
        "the logits and the ids must line up: logits[:, prompt_length-1:-1] (seq − prompt_length "
        "positions) score input_ids[:, prompt_length:]",
    ),
    (
        "size does not match",
        "the logits and the ids must line up: logits[:, prompt_length-1:-1] (seq − "
        "prompt_length positions) score input_ids[:, prompt_length:]",
    ),
]


# A trained policy's logits are peaked: the chosen token can sit LP_PEAK below the top logit. Then softmax
# rounds to 0 in float32 (exp(−104) is below its smallest number), so log(softmax(x)) is −inf, and exp of the
# top logit overflows (exp(89) is above its largest), so log(Σ exp x) is inf; log_softmax stays exact.
LP_PEAK = 120.0


def _peaked_case(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, int]:
    """[batch 2, seq 6, vocab 5], prompt_length 2: at every scoring position one token's logit is raised by
    LP_PEAK: in row 0 never the completion's token (its log-prob ≈ −120), in row 1 the completion's token
    at positions 1 and 3 (≈ 0) and another token at 2 and 4."""
    batch, seq, vocab, p = 2, 6, 5, 2
    logits = torch.randn(batch, seq, vocab, generator=gen)
    ids = torch.randint(0, vocab, (batch, seq), generator=gen)
    for t in range(p - 1, seq - 1):
        target = int(ids[1, t + 1])
        logits[0, t, (int(ids[0, t + 1]) + 1) % vocab] += LP_PEAK
        logits[1, t, target if t % 2 else (target + 2) % vocab] += LP_PEAK
    return logits, ids, p


def _check_peaked(
    c: Check, got: torch.Tensor, want: torch.Tensor, logits: torch.Tensor, ids: torch.Tensor, p: int, what: str
) -> None:
    """On peaked logits: name log(softmax(x)) and log(Σ exp x), whether they give ±inf, NaN, or a clamped value."""
    got = got.detach()
    tiny = want < -80.0  # where softmax underflows in float32 (exp(−80) is still a normal float32; see LP_PEAK)
    if torch.isfinite(got).all() and not tiny.any():
        return
    scoring, targets = logits[:, p - 1 : -1], ids[:, p:]
    naive_lse = scoring.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - scoring.exp().sum(-1).log()
    shown = f"{format_tensor(got)} where the log-probs are {format_tensor(want)}"
    advice = "log_softmax (or logits − logsumexp) subtracts the top logit first and stays exact"
    if not torch.isfinite(got).all():
        if bool(torch.isinf(naive_lse).any()) and tensors_close(got, naive_lse):
            c.fail(
                f"{what}: got {shown} — exp overflows for peaked logits (exp({LP_PEAK:g}) is inf in float32), so "
                f"log(exp(logits).sum(-1)) is inf: {advice}",
                named=True,
            )
        c.fail(
            f"{what}: got {shown} — use log_softmax: log(softmax(x)) underflows for peaked logits (a logit "
            f"{LP_PEAK:g} below the top one has softmax 0 in float32, and log 0 = −inf); {advice}",
            named=True,
        )
    fine = ~tiny
    if tensors_close(got[fine], want[fine]) and not tensors_close(got[tiny], want[tiny], scale=LP_PEAK):
        c.fail(
            f"{what}: got {shown} — wrong only where a probability is tiny: use log_softmax: log(softmax(x)) "
            f"underflows for peaked logits, and a clamp or an added epsilon only caps the damage; {advice}",
            named=True,
        )


def _check_lp_case(
    c: Check, fn: Callable, logits: torch.Tensor, ids: torch.Tensor, p: int, want: torch.Tensor, name: str
) -> None:
    logits_in, ids_in = logits.clone().requires_grad_(True), ids.clone()
    shown = f"the {name} (prompt_length={p})"
    got = c.call(fn, logits_in, ids_in, p, call=shown, hints=_LP_ERROR_HINTS)
    what = f"log-probs of {shown}"
    c.unchanged({"logits": logits, "input_ids": ids}, {"logits": logits_in, "input_ids": ids_in}, what)
    batch, seq = ids.shape
    hints = {
        (batch, seq): _LP_SHAPE_HINTS["all"],
        (batch, seq - 1): _LP_SHAPE_HINTS["all"],
        (batch, seq - p - 1): _LP_SHAPE_HINTS["one_less"],
        (batch, seq - p, logits.shape[-1]): _LP_SHAPE_HINTS["vocab"],
    }
    got = c.shape(got, [batch, seq - p], "batch, seq − prompt_length", what, hints)
    _check_peaked(c, got, want, logits, ids, p, what)
    c.close(got, want, what, _lp_mistakes(logits, ids, p))
    c.expect(
        got.requires_grad,
        f"{what}: no gradient flows to the logits — no .detach(), torch.no_grad() or .item() "
        "(the policy gradient flows through these log-probs)",
    )


@exercise_check("completion_log_probs")
def check_completion_log_probs(c: Check, fn: Callable) -> None:
    """Check ``completion_log_probs(logits, input_ids, prompt_length) -> [batch, seq - prompt_length]``:
    log_softmax(logits[:, prompt_length-1:-1]).gather(-1, input_ids[:, prompt_length:]). Catches the
    missing shift, the ids shifted with the logits, softmax or raw logits instead of log_softmax, the
    wrong axis, a flipped sign, running sums or the whole completion's log-prob, log(softmax(x)) or
    log(Σ exp x) on peaked logits (−inf, NaN, or a clamped value where a log-prob is −120), wrong output
    shapes, a detached result, in-place edits."""
    with c.worked_example():
        _check_lp_case(
            c,
            fn,
            _hand_logits(),
            torch.tensor(LP_IDS),
            LP_PROMPT_LENGTH,
            torch.tensor(LP_EXPECTED),
            "hand-worked example",
        )
    gen = seeded_generator(SEED, 2)
    for batch, seq, vocab, p in ((3, 9, 7, 4), (2, 6, 5, 1), (4, 12, 11, 8)):
        logits = 2.0 * torch.randn(batch, seq, vocab, generator=gen)
        ids = torch.randint(0, vocab, (batch, seq), generator=gen)
        _check_lp_case(
            c,
            fn,
            logits,
            ids,
            p,
            _ref_completion_log_probs(logits, ids, p),
            f"random case [batch {batch}, seq {seq}, vocab {vocab}]",
        )
    logits, ids, p = _peaked_case(gen)
    _check_lp_case(
        c,
        fn,
        logits,
        ids,
        p,
        _ref_completion_log_probs(logits, ids, p),
        f"peaked logits (gaps of {LP_PEAK:g}) [batch 2, seq 6, vocab 5]",
    )


# ---------------------------------------------------------------------------------------------
# parse_answer
# ---------------------------------------------------------------------------------------------

# (text, what it must give): the asked form first, then texts a reward meets that are not in it.
PARSE_ACCEPTED = [
    ("2, 5, 8", (2, 5, 8)),
    ("2,5,8", (2, 5, 8)),
    (" 2 ,5,  8\n", (2, 5, 8)),
    ("\n0, 0, 9", (0, 0, 9)),
    ("02, 5, 8", (2, 5, 8)),
    ("7", (7,)),
    ("1, 2, 3, 4", (1, 2, 3, 4)),
    ("9, 1, 5", (9, 1, 5)),
    ("10, 20, 300", (10, 20, 300)),
    # the 100-digit rule (toy_envs.text_tasks.MAX_ANSWER_DIGITS) is per number: 100 digits is an answer, and so is
    # a long answer of short numbers
    ("7" * 100, (int("7" * 100),)),
    (", ".join(str(i) for i in range(40)), tuple(range(40))),
    ("3, " + "0" * 99 + "5", (3, 5)),
]
# Numbers of 101 to 4300 digits: int() reads them (it refuses only more than 4300 digits, Python's default
# limit), so a parser that relies on int() raising must check the length itself.
PARSE_TOO_LONG = ["1" * 101, "4, " + "9" * 101 + ", 5", "0" * 101, "8" * 1000, "2, " + "6" * 4300]
PARSE_REJECTED = [
    "abc",
    "",
    "   \n",
    "3, 1, 2.",
    "[1, 2, 3]",
    "(1, 2, 3)",
    "1 2 3",
    "one, two, three",
    "-1, 2, 3",
    "+1, 2, 3",
    "1.5, 2, 3",
    "1, 2, 3,",
    ",1, 2, 3",
    "1,, 2, 3",
    "The answer is 1, 2, 3",
    "1, 2, 3 abc",
    "1_000, 2, 3",
    "١, ٢, ٣",
    "²",
    "1\t, 2, 3",
    "1\n, 2, 3",
    "1e3",
    "0x1",
    "1 2, 3",
    *PARSE_TOO_LONG,
    "1" * 5000,
]
_PARSE_ALPHABET = "0123456789" * 3 + ",,,,    \n.-+abx[]_\t"


def _show(text: str, limit: int = 24) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 2] + "…" + shown[-1] + f" ({len(text)} characters)"


def _short(value: Any) -> str:
    """``value`` (a parse result) for a message: a number of many digits as its first digits and its length."""
    if isinstance(value, tuple) and any(isinstance(v, int) and len(str(v)) > 12 for v in value):
        items = [
            f"{str(v)[:6]}…({len(str(v))} digits)" if isinstance(v, int) and len(str(v)) > 12 else repr(v)
            for v in value
        ]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return _one_line(repr(value), 60)


# Why a text the reference rejects is not the asked form, in the learner's terms: the first rule that applies,
# each a predicate of (text, text.strip()) and its message, then the rules on the comma-separated items.
_FORM_RULES: list[tuple[Callable[[str, str], bool], str]] = [
    (lambda text, stripped: not stripped, "an empty answer is not in the asked form: return None"),
    (
        lambda text, stripped: any(ch.isdigit() and ch not in "0123456789" for ch in text),
        "only the ASCII digits 0-9 are the asked form: str.isdigit() and the regex \\d accept other digits "
        "too, like '١' (and isdigit even '²', which int() cannot read): check for 0-9 yourself",
    ),
    (lambda text, stripped: stripped.endswith("."), "a trailing period is not the asked form"),
    (lambda text, stripped: any(ch in text for ch in "[]()"), "brackets are not the asked form"),
    (
        lambda text, stripped: any(ch in text for ch in "+-"),
        "signs are not the asked form (only non-negative integers, no + or −)",
    ),
    (lambda text, stripped: "_" in text, "int() reads '1_000' as 1000, but underscores are not the asked form"),
    (lambda text, stripped: any(ch.isalpha() for ch in text), "words and letters are not the asked form"),
    (lambda text, stripped: "." in text, "decimals and periods are not the asked form"),
    (
        lambda text, stripped: any(ch.isspace() and ch != " " for ch in stripped),
        "only spaces may surround a comma (the whole answer may be surrounded by any whitespace, but a tab or "
        "a newline inside it is not the asked form)",
    ),
]


def _why_not_in_form(text: str, got: Any) -> str:
    """What makes ``text`` (which the reference rejects) not the asked form, in the learner's terms."""
    stripped = text.strip()
    for applies, why in _FORM_RULES:
        if applies(text, stripped):
            return why
    items = stripped.split(",")
    if any(not item.strip(" ") for item in items):
        return "an empty item (two commas in a row, or a comma at either end) is not the asked form"
    if any(" " in item.strip(" ") for item in items):
        return "numbers must be separated by commas, not by spaces alone"
    longest = max(len(item.strip(" ")) for item in items)
    if longest > MAX_ANSWER_DIGITS:
        between = (
            (f" (int() reads it: it refuses only more than {_INT_MAX_DIGITS} digits, so check the length yourself)")
            if longest <= _INT_MAX_DIGITS
            else ""
        )
        return (
            f"a number of more than {MAX_ANSWER_DIGITS} digits is not an answer (this one has {longest}): return "
            f"None{between}"
        )
    return "it is not in the asked form"


def _why_in_form(text: str, want: tuple[int, ...]) -> str:
    """Why ``text`` (which the reference accepts) is in the asked form."""
    items = [item.strip(" ") for item in text.strip().split(",")]
    if text != text.strip():
        return "strip the whitespace around the whole answer first (newlines included)"
    longest = max(len(item) for item in items)
    if longest == MAX_ANSWER_DIGITS:
        return (
            f"a number of exactly {MAX_ANSWER_DIGITS} digits is still an answer: only MORE than "
            f"{MAX_ANSWER_DIGITS} digits is not (len(item) > {MAX_ANSWER_DIGITS}, not >=)"
        )
    if len(text) > MAX_ANSWER_DIGITS:
        return (
            f"the {MAX_ANSWER_DIGITS}-digit limit is per number, not on the whole answer: this one is {len(text)} "
            f"characters long, but its longest number has {longest} digits"
        )
    if any(item.startswith("0") and len(item) > 1 for item in items):
        return "leading zeros are read as numbers: '02' is 2"
    if len(want) == 1:
        return "one number is a well-formed answer too (format_ok checks how many there are; the parser does not)"
    if len(want) != 3:
        return "any count of numbers parses (format_ok checks how many there are; the parser does not)"
    if any(sep != ", " for sep in re.findall(r" *, *", text)):
        return "any number of spaces (none included) may surround each comma"
    return "it is in the asked form"


def _parse(c: Check, fn: Callable, text: str) -> Any:
    """Call the learner's parser; an exception is a failure of its own: a reward must never raise."""
    try:
        return fn(text)
    except NotImplementedError as exc:
        raise NotImplementedYet(_one_line(exc)) from None
    except Exception as exc:  # the learner's code: anything can happen
        raise CheckFailure(
            f"your parser raised {type(exc).__name__} on {_show(text)} ({_one_line(exc, 80)}) — a "
            "reward must never raise: return None for text that is not in the asked form"
        ) from None


def _check_parse_case(c: Check, fn: Callable, text: str, want: tuple[int, ...] | None) -> None:
    got = _parse(c, fn, text)
    on = f"on {_show(text)}"
    if want is None:
        if got is not None:
            c.fail(f"accepted {_show(text)} (returned {_short(got)}) but {_why_not_in_form(text, got)}")
        c.passed += 1
        return
    if got is None:
        c.fail(f"returned None {on}, which is in the asked form: expected {_short(want)} — {_why_in_form(text, want)}")
    if isinstance(got, list) and tuple(got) == want:
        c.fail(f"{on}: return a tuple of ints, not a list (got {_short(tuple(got))})")
    c.expect(
        isinstance(got, tuple),
        f"{on}: expected the tuple {_short(want)} (or None), got {type(got).__name__} {_one_line(repr(got), 40)}",
    )
    if all(isinstance(v, str) for v in got) and got and tuple(v.strip() for v in got) == tuple(str(v) for v in want):
        c.fail(f"{on}: convert each number with int(): you returned strings {_short(got)}")
    c.expect(
        all(isinstance(v, int) and not isinstance(v, bool) for v in got),
        f"{on}: the numbers should be ints; got {_one_line(repr(got), 60)}",
    )
    if got != want and tuple(sorted(got)) == tuple(sorted(want)):
        c.fail(
            f"{on}: return the numbers in the order they were written, {_short(want)}; got {_short(got)} (do not "
            "sort them: the reward compares them with the sorted prompt)"
        )
    if got != want and got == tuple(int(ch) for ch in text if ch in "0123456789"):
        c.fail(
            f"{on}: you read every digit as a number of its own, {_short(got)}; a number is everything between "
            f"two commas: expected {_short(want)}"
        )
    if got != want and len(got) < len(want) and all(v in want for v in got):
        c.fail(
            f"{on}: you returned {_short(got)}, only {len(got)} of the {len(want)} numbers {_short(want)} — "
            "keep every comma-separated number, the first and the last included"
        )
    c.expect(got == want, f"{on}: expected {_short(want)}, got {_short(got)} — {_why_in_form(text, want)}")


def _random_texts(seed: int, n: int) -> list[str]:
    """Answers a sampling policy might write: well formed with random spacing, mutated, and random junk."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        numbers = [
            str(rng.randint(0, 9) if rng.random() < 0.8 else rng.randint(10, 999)) for _ in range(rng.randint(1, 4))
        ]
        seps = [" " * rng.randint(0, 2) + "," + " " * rng.randint(0, 2) for _ in numbers[1:]]
        text = numbers[0] + "".join(s + v for s, v in zip(seps, numbers[1:]))
        kind = i % 3
        if kind == 1:  # one random edit
            at = rng.randint(0, len(text))
            text = text[:at] + rng.choice(_PARSE_ALPHABET) + text[at + rng.randint(0, 1) :]
        elif kind == 2:
            text = "".join(rng.choice(_PARSE_ALPHABET) for _ in range(rng.randint(0, 10)))
        if rng.random() < 0.2:
            text = rng.choice([" ", "\n", "  "]) + text + rng.choice(["", " ", "\n"])
        texts.append(text)
    return texts


@exercise_check("parse_answer")
def check_parse_answer(c: Check, fn: Callable) -> None:
    """Check ``parse_answer(text) -> tuple[int, ...] | None`` against ``TextSortTask().parse_answer``: non-negative
    ASCII integers separated by commas (any number of spaces around each comma), after stripping the
    whitespace around the whole text; anything else gives None, and nothing raises. Catches a parser
    that raises (ValueError from int()), a trailing period, signs, brackets, words, underscores, non-ASCII
    digits, tabs or newlines inside, empty items, no strip, leading zeros rejected, a single number
    rejected, numbers of 101 to 4300 digits accepted (int() reads them), the 100-digit limit applied with
    >= or to the whole text, digits read one by one, numbers dropped, lists or strings returned, sorted
    numbers."""
    for text, want in PARSE_ACCEPTED:
        _check_parse_case(c, fn, text, want)
    for text in PARSE_REJECTED:
        _check_parse_case(c, fn, text, None)
    for text in _random_texts(SEED, 300):
        _check_parse_case(c, fn, text, reference_parse_answer(text))

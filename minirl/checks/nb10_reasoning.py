"""Checks for notebook 10 (reasoning: thinking tokens, pass@k, reward hacking), named after the function they check.

    check_split_thinking(fn)   fn(text) -> (scratchpad, answer text) of a reply in the thinking form, else None
    check_pass_at_k(fn)        fn(n, c, k) -> the unbiased estimate of pass@k from n samples with c correct
    check_strict_reward(fn)    fn(reply, right, format_weight=0.2) -> format_weight · 1[thinking form]
                                                                      + 1 · 1[answer == right as integers]
    check_answer_reward(fn)    fn(reply, right) -> 1[thinking form and answer == right as integers]: the fix
                               of the lenient verifier answer in str(right), with no format part

Expected values are hand-worked: each reply below says why it is accepted or refused, or why it scores what it
does (the references ``split_thinking``, ``strict_reward`` and ``answer_reward`` of ``toy_envs.reasoning`` agree,
``tests/test_checks_reasoning.py`` makes sure), and pass@k comes from exact binomials (``math.comb``), which the
reference ``minirl.pass_at_k`` matches. A verifier's wrong value is compared with what the usual mistakes give
on that reply (a string comparison, a substring test, a format part forgotten or given only when right, ...),
and the line names the mistake it matches.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

import torch

from minirl.checks._core import Check, exercise_check, numbers_close

__all__ = ["check_answer_reward", "check_pass_at_k", "check_split_thinking", "check_strict_reward"]

# (reply, what split_thinking must return, why): the strict form is exactly one <think>…</think> block first,
# then one whole number, nothing else but surrounding whitespace.
THINKING_CASES: list[tuple[object, tuple[str, str] | None, str]] = [
    ("<think>5 + 9 = 14. 14 + 8 = 22.</think> 22", ("5 + 9 = 14. 14 + 8 = 22.", "22"), "a worked reply"),
    (
        "<think>5 + 9 = 14.\n14 + 8 = 22.</think> 22",
        ("5 + 9 = 14.\n14 + 8 = 22.", "22"),
        "a newline inside the scratchpad (a model writes one step per line) is still the thinking form: in a "
        "regex '.' matches a newline only with re.DOTALL",
    ),
    ("\n <think> 3 + 4 = 7. </think>7 \n", ("3 + 4 = 7.", "7"), "whitespace around the parts is allowed (strip it)"),
    (
        "<think></think> 7",
        ("", "7"),
        "an empty scratchpad is still the asked form: the verifier never grades the thinking",
    ),
    ("22", None, "an answer without a scratchpad is not the thinking form"),
    (
        "<think>5 + 9 = 14. 14 + 8 = 22.",
        None,
        "a scratchpad never closed (a reply cut by the token budget) has no answer",
    ),
    ("<think>5 + 9 = 14.</think>", None, "a closed scratchpad with no number after it has no answer"),
    (
        "<think>5 + 9 = 14.</think> 14 apples",
        None,
        "words after the number are not the asked form (fullmatch, not search)",
    ),
    ("<think>x</think> 14 15", None, "two numbers after the scratchpad: which one is the answer? refuse it"),
    (
        "The answer is <think>x</think> 14",
        None,
        "text before the scratchpad is not the asked form (anchor at the start)",
    ),
    (
        "<think>a</think><think>b</think> 22",
        None,
        "two think blocks must be refused: repeated tags are how a policy collects a format reward twice "
        "(a non-greedy match would read '</think><think>b' as part of one block: reject '<think>' inside it)",
    ),
    ("<think>a</think> 22 <think>b</think> 22", None, "a second block after the answer is not the asked form"),
    ("<think>a<think>b</think> 22", None, "a scratchpad that opens twice is not one block"),
    ("<think>a</think> 22</think>", None, "a stray closing tag after the answer is not the asked form"),
    ("<think>2 + 2 = 4.</think> 4.5", None, "the answer is a whole number: '4.5' is not one"),
    ("<think>2 + 2 = 4.</think> four", None, "the answer is written in digits"),
    (None, None, "not text at all (None): return None, never raise"),
]


def _shown(text: object) -> str:
    return repr(text) if len(repr(text)) <= 70 else repr(text)[:67] + "...'"


@exercise_check("split_thinking")
def check_split_thinking(c: Check, fn: Callable) -> None:
    """``fn(text) -> (scratchpad, answer) | None``: the strict verifier's parser. Each case names what it tests:
    the worked form with whitespace and an empty scratchpad accepted; no scratchpad, an unclosed one, no number,
    words or a second number after it, text before it, two blocks (the repeated-tags hack), a nested opening tag,
    a stray closing tag, a decimal or a word for the answer, and a non-string refused (None, never an
    exception); the parts returned stripped, the answer as text."""
    for text, want, why in THINKING_CASES:
        got = c.call(fn, text, call=f"split_thinking({_shown(text)})")
        where = f"split_thinking({_shown(text)})"
        if want is None:
            c.expect(got is None, f"{where}: expected None, got {got!r} — {why}")
            continue
        c.expect(got is not None, f"{where}: expected {want!r}, got None — {why}")
        c.expect(
            isinstance(got, tuple) and len(got) == 2,
            f"{where}: expected a pair (scratchpad, answer text), got {got!r}",
        )
        scratchpad, answer = got
        c.expect(
            isinstance(answer, str),
            f"{where}: the answer should be the text of the number ({want[1]!r}), got {answer!r} — return the "
            "matched digits; the task turns them into a number",
        )
        c.expect(
            (scratchpad, answer) == want,
            f"{where}: expected {want!r}, got {got!r} — "
            + ("strip the whitespace around each part" if (str(scratchpad).strip(), answer.strip()) == want else why),
        )


# (n, c, k): a worked example, the ends of the range, n − c < k, and counts where the binomials are huge.
PASS_CASES = [
    (10, 3, 1),
    (10, 3, 5),
    (16, 0, 8),
    (16, 16, 1),
    (8, 5, 4),
    (8, 1, 8),
    (16, 4, 16),
    (200, 37, 16),
    (1000, 9, 100),
]


def _exact(n: int, c: int, k: int) -> float:
    """1 − C(n−c, k) / C(n, k) with Python's exact integers (C(n−c, k) = 0 when n − c < k)."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _mistakes(n: int, c: int, k: int) -> list[tuple[float, str]]:
    """(the value a usual mistake gives, what it is)."""
    p = c / n
    out = [
        (
            1.0 - (1.0 - p) ** k,
            "you used 1 − (1 − c/n)^k, the chance when the k attempts are drawn WITH replacement from the n "
            "samples; it underestimates pass@k (the same sample can be drawn twice). The unbiased estimator draws "
            "k of the n WITHOUT replacement: 1 − C(n−c, k) / C(n, k)",
        ),
        (
            math.comb(n - c, k) / math.comb(n, k),
            "you returned C(n−c, k) / C(n, k), the chance that all k attempts are WRONG; pass@k is one minus it",
        ),
        (p, "you returned c/n (pass@1) whatever k is; pass@k is the chance that at least one of k attempts is right"),
        (
            min(1.0, k * p),
            "you used k·c/n (capped at 1): that adds the chances as if no two attempts could both be "
            "right; use 1 − C(n−c, k) / C(n, k)",
        ),
        (
            math.comb(c, k) / math.comb(n, k) if c >= k else 0.0,
            "you returned the chance that ALL k attempts are right; pass@k needs at least one",
        ),
    ]
    if k < n:
        out.append(
            (
                1.0 - math.comb(n - c, k + 1) / math.comb(n, k + 1),
                "off by one: you computed pass@(k+1); the product ∏ (1 − k/i) runs over i = n−c+1 … n",
            )
        )
    if k > 1:
        out.append(
            (
                1.0 - math.comb(n - c, k - 1) / math.comb(n, k - 1),
                "off by one: you computed pass@(k−1); C(n−c, k) / C(n, k) = ∏_{i=n−c+1}^{n} (1 − k/i)",
            )
        )
    return out


@exercise_check("pass_at_k")
def check_pass_at_k(c: Check, fn: Callable) -> None:
    """``fn(n, c, k) -> float``: 1 − C(n−c, k) / C(n, k), and 1 when n − c < k. Catches the biased plug-in
    1 − (1 − c/n)^k, the complement (all wrong), c/n for every k, k·c/n, all right, pass@(k±1), a crash or NaN
    when n − c < k (C(n−c, k) = 0) and overflow with large n (binomials of 1000 in floats)."""
    for n, correct, k in PASS_CASES:
        where = f"pass_at_k(n={n}, c={correct}, k={k})"
        got = c.call(
            fn,
            n,
            correct,
            k,
            call=where,
            hints=[
                *[
                    (key, "factorials of large n overflow a float: use the product ∏ (1 − k/i) or math.comb")
                    for key in ("overflow", "range error")
                ],
                *[
                    (key, f"when n − c < k (here {n - correct} < {k}) no draw of k is all wrong: pass@k = 1")
                    for key in ("negative", "domain error", "division by zero")
                ],
            ],
        )
        try:
            value = float(got)
        except (TypeError, ValueError):
            c.fail(f"{where}: expected a number, got {type(got).__name__}")
        want = _exact(n, correct, k)
        if numbers_close(value, want):
            c.passed += 1
            continue
        if math.isnan(value) or math.isinf(value):
            hint = (
                f"n − c = {n - correct} < k = {k}: C(n−c, k) is 0 (no way to draw {k} wrong ones), so pass@k = 1"
                if n - correct < k
                else "the binomials overflow a float here: use the product ∏_{i=n−c+1}^{n} (1 − k/i) or exact integers"
            )
            c.fail(f"{where}: expected {want:.6g}, got {value} — {hint}", named=True)
        for wrong, message in _mistakes(n, correct, k):
            if numbers_close(value, wrong):
                c.fail(f"{where}: expected {want:.6g}, got {value:.6g} — {message}", named=True)
        c.fail(f"{where}: expected {want:.6g} = 1 − C({n - correct}, {k}) / C({n}, {k}), got {value:.6g}")


# ---- the verifiers: strict_reward and answer_reward ---------------------------------------------------------


@dataclass(frozen=True)
class RewardCase:
    """One hand-worked reply for a verifier: ``fn(reply, right)`` (with ``format_weight=`` when it is not None)
    must return ``want``, for the reason ``why``. ``form``: whether the reply is in the thinking form (what
    ``split_thinking`` accepts). ``mistakes``: (the value a known mistake returns on this reply, what the
    mistake is), so that a wrong value names its cause."""

    reply: object
    right: int
    want: float
    form: bool
    why: str
    format_weight: float | None = None
    mistakes: tuple[tuple[float, str], ...] = ()


_WORKED = "<think>5 + 9 = 14. 14 + 8 = 22.</think>"  # the scratchpad of "What is 5 + 9 + 8?"

# What the usual mistakes are, in the learner's terms (each named by the case that shows it).
_STR_VS_INT = (
    "22 is right, yet you paid no answer part: split_thinking gives the answer as text ('22'), and "
    "'22' == 22 is False — compare integers: int(answer) == right"
)
_STRINGS = (
    "you compared strings: '022' == '22' is False, yet '022' is one whole number in digits (the asked form) and "
    "equals 22 — compare integers: int(answer) == right"
)
_FORGOT_FORMAT = (
    "1 is the answer part alone: the strict reward adds the format part, format_weight · 1[thinking form] "
    "(0.2 by default), whether the answer is right or not — R = 0.2 + 1 = 1.2 here"
)
_FORMAT_ONLY_WHEN_RIGHT = (
    "a well-formed wrong reply still earns the format part (format_weight = 0.2): you gave the format part only "
    "when the answer is right — R = format_weight · 1[thinking form] + 1 · 1[right], two separate terms"
)
_IGNORES_FORMAT_WEIGHT = (
    "you ignored the format_weight argument (your value is the one for 0.2): the format part is format_weight · "
    "1[thinking form] — use the argument, not the constant"
)
_NO_DOTALL = (
    "a newline inside the scratchpad was refused: in a regex '.' does not match a newline without re.DOTALL — "
    "call split_thinking (if you use your own from above, add re.DOTALL to its pattern)"
)
_NEWLINE_AFTER = (
    "a newline between '</think>' and the answer was refused: any whitespace may separate them (\\s*, as in "
    "split_thinking), not only a space — call split_thinking"
)
_SUBSTRING = (
    "a substring test, {how}: {test} is True, so a number that only contains the other earns the answer part — "
    "compare the whole answer with right, as integers: int(answer) == right"
)
_MINUS = (
    "a minus sign is not the asked form (one whole number in digits), so '-22' scores 0 — let split_thinking "
    "refuse it (your pattern accepts the sign, or you found the digits inside it)"
)
_SEARCH = (
    "you searched for '<think>…</think> number' inside the reply instead of requiring the whole reply to be in "
    "the form: call split_thinking (fullmatch, exactly one block)"
)
_IN_SCRATCHPAD = (
    "you took a number from inside the scratchpad: only the number after '</think>' is the answer — call "
    "split_thinking and read its second part"
)
_NO_FORMAT_PART = (
    "no format part here: answer_reward is the correctness part alone, 1 for a right answer in the thinking "
    "form and 0 for anything else (the strict verifier adds format_weight; this one does not)"
)
_THE_BUG = "this is the bug you are fixing: the buggy verifier pays answer in str(right), {what} — {fix}"
_FIX = "require the thinking form (split_thinking) and compare the answer with right as integers"
_RAISED_ON_NONE = (
    "a reply that is not text (None: a generation that failed to decode) must score 0, never raise — "
    "split_thinking(None) returns None: return 0 then"
)
_RAISED_ON_JUNK = (
    "a reply not in the asked form must score 0, never raise — call split_thinking first and return 0 when it "
    "gives None, before any int()"
)
_SIGNATURE = "keep the exercise's signature: strict_reward(reply, right, format_weight=0.2)"


def _newline_cases(right_value: float) -> list[RewardCase]:
    """The two right replies with a newline, inside the scratchpad and before the answer, for a verifier that
    pays ``right_value`` for a right reply in the thinking form (both verifiers read them alike)."""
    return [
        RewardCase(
            "<think>5 + 9 = 14.\n14 + 8 = 22.</think> 22",
            22,
            right_value,
            True,
            "a newline inside the scratchpad is still the thinking form",
            mistakes=((0.0, _NO_DOTALL),),
        ),
        RewardCase(
            f"{_WORKED}\n22",
            22,
            right_value,
            True,
            "a newline between '</think>' and the answer is whitespace like any other",
            mistakes=((0.0, _NEWLINE_AFTER),),
        ),
    ]


def _searched_cases(paid: tuple[float, ...]) -> list[RewardCase]:
    """Two replies that contain '<think>…</think> 22' without being in the form, both worth 0: what a verifier
    that searches for the pattern instead of requiring the whole reply to match pays them (``paid``) names it."""
    searched = tuple((value, _SEARCH) for value in paid)
    return [
        RewardCase(
            "<think>a</think><think>b</think> 22",
            22,
            0.0,
            False,
            "two think blocks are not the asked form (repeated tags are how a policy games a verifier)",
            mistakes=searched,
        ),
        RewardCase(
            f"{_WORKED} 22 apples", 22, 0.0, False, "words after the number are not the asked form", mistakes=searched
        ),
    ]


# strict_reward(reply, right[, format_weight]): format_weight · 1[thinking form] + 1 · 1[answer == right].
# Leading zeros: the asked form is one whole number written in digits, and '022' is one; compared as integers it
# equals 22, so it is right (1.2). A string comparison pays it 0.2. (The reference agrees: tests make sure.)
STRICT_CASES: list[RewardCase] = [
    RewardCase(
        f"{_WORKED} 22",
        22,
        1.2,
        True,
        "a worked reply, right: format_weight 0.2 for the thinking form + 1 for the right answer",
        mistakes=((1.0, _FORGOT_FORMAT), (0.2, _STR_VS_INT)),
    ),
    RewardCase(
        f"{_WORKED} 22",
        22,
        1.5,
        True,
        "format_weight=0.5: 0.5 for the form + 1 for the right answer",
        format_weight=0.5,
        mistakes=((1.2, _IGNORES_FORMAT_WEIGHT),),
    ),
    RewardCase(
        f"{_WORKED} 22",
        22,
        1.0,
        True,
        "format_weight=0 turns the format part off: the right answer alone, 1",
        format_weight=0.0,
        mistakes=((1.2, _IGNORES_FORMAT_WEIGHT),),
    ),
    RewardCase(
        "<think>5 + 9 = 14. 14 + 8 = 21.</think> 21",
        22,
        0.2,
        True,
        "well formed, wrong answer: the format part alone",
        mistakes=((0.0, _FORMAT_ONLY_WHEN_RIGHT),),
    ),
    RewardCase(
        "<think>20 + 2 = 22.</think> 21",
        22,
        0.2,
        True,
        "the number in the scratchpad is not the answer: only the number after '</think>' counts",
        mistakes=((1.2, _IN_SCRATCHPAD),),
    ),
    *_newline_cases(1.2),
    RewardCase(
        f"{_WORKED} 2",
        22,
        0.2,
        True,
        "'2' is not 22: well formed, wrong",
        mistakes=((1.2, _SUBSTRING.format(how="answer in str(right)", test="'2' in '22'")),),
    ),
    RewardCase(
        f"{_WORKED} 122",
        22,
        0.2,
        True,
        "'122' is not 22: well formed, wrong",
        mistakes=((1.2, _SUBSTRING.format(how="str(right) in answer", test="'22' in '122'")),),
    ),
    RewardCase(
        "<think>1 + 1 = 2.</think> 22",
        2,
        0.2,
        True,
        "22 is not 2: well formed, wrong",
        mistakes=((1.2, _SUBSTRING.format(how="str(right) in answer", test="'2' in '22'")),),
    ),
    RewardCase(
        f"{_WORKED} 022",
        22,
        1.2,
        True,
        "'022' is one whole number in digits (the asked form), and as an integer it equals 22",
        mistakes=((0.2, _STRINGS),),
    ),
    RewardCase(
        f"{_WORKED} -22",
        22,
        0.0,
        False,
        "a minus sign is not the asked form (one whole number in digits): no format part, no answer part",
        mistakes=((0.2, _MINUS), (1.2, _MINUS), (1.0, _MINUS)),
    ),
    RewardCase(
        "<think>5 + 9 = 14. 14 + 8 = 22",
        22,
        0.0,
        False,
        "a scratchpad never closed (a reply cut by the token budget) is not the thinking form and has no answer: "
        "0, whatever number it holds",
        mistakes=((1.0, _IN_SCRATCHPAD), (1.2, _IN_SCRATCHPAD)),
    ),
    RewardCase(_WORKED, 22, 0.0, False, "a closed scratchpad with no number after it is not the thinking form: 0"),
    RewardCase(
        "22",
        22,
        0.0,
        False,
        "the answer alone, without a scratchpad, is not the thinking form: 0 — the answer part too needs the "
        "thinking form (that is what makes the verifier strict)",
    ),
    *_searched_cases((1.2, 1.0, 0.2)),
    RewardCase("", 22, 0.0, False, "an empty reply is not the thinking form: 0"),
    RewardCase(None, 22, 0.0, False, "a reply that is not text (None) scores 0"),
]


def _the_bug(what: str) -> str:
    return _THE_BUG.format(what=what, fix=_FIX)


# answer_reward(reply, right): 1[thinking form and answer == right as integers], no format part. Where the buggy
# lenient verifier (answer in str(right), the answer being the text after the last '</think>', '' when none)
# pays a reply that should score 0, the mistake named is that bug.
ANSWER_CASES: list[RewardCase] = [
    RewardCase(
        f"{_WORKED} 22",
        22,
        1.0,
        True,
        "a worked reply, right: 1",
        mistakes=((1.2, _NO_FORMAT_PART), (0.0, _STR_VS_INT)),
    ),
    RewardCase(
        "<think>5 + 9 = 14. 14 + 8 = 21.</think> 21",
        22,
        0.0,
        True,
        "well formed, wrong answer: 0",
        mistakes=((0.2, _NO_FORMAT_PART),),
    ),
    RewardCase(
        "<think>20 + 2 = 22.</think> 21",
        22,
        0.0,
        True,
        "the number in the scratchpad is not the answer: only the number after '</think>' counts",
        mistakes=((1.0, _IN_SCRATCHPAD),),
    ),
    RewardCase(
        f"{_WORKED} 2",
        22,
        0.0,
        True,
        "'2' is a part of 22, not 22: 0",
        mistakes=((1.0, _the_bug("and '2' in '22' is True: a partial answer is paid")),),
    ),
    RewardCase(
        _WORKED,
        22,
        0.0,
        False,
        "a closed scratchpad with no number after it has no answer: 0",
        mistakes=((1.0, _the_bug("and the text after '</think>' is '' here: '' in '22' is True")),),
    ),
    RewardCase(
        "<think>5 + 9 = 14. 14 + 8 = 22",
        22,
        0.0,
        False,
        "a scratchpad never closed (a reply cut by the token budget) has no answer: 0",
        mistakes=((1.0, _the_bug("and with no '</think>' the answer read is '': '' in '22' is True")),),
    ),
    RewardCase(
        f"{_WORKED} 122",
        22,
        0.0,
        True,
        "'122' is not 22: 0",
        mistakes=((1.0, _SUBSTRING.format(how="str(right) in answer", test="'22' in '122'")),),
    ),
    RewardCase(
        f"{_WORKED} -22",
        22,
        0.0,
        False,
        "a minus sign is not the asked form (one whole number in digits): 0",
        mistakes=((1.0, _MINUS),),
    ),
    *_newline_cases(1.0),
    RewardCase(
        f"{_WORKED} 022",
        22,
        1.0,
        True,
        "'022' is one whole number in digits (the asked form), and as an integer it equals 22",
        mistakes=((0.0, _STRINGS),),
    ),
    RewardCase(
        "22",
        22,
        0.0,
        False,
        "the answer alone, without a scratchpad, is not the thinking form: 0",
        mistakes=((1.0, _the_bug("and with no '</think>' the answer read is '': '' in '22' is True")),),
    ),
    *_searched_cases((1.0,)),
    RewardCase(
        "",
        22,
        0.0,
        False,
        "an empty reply has no answer: 0",
        mistakes=((1.0, _the_bug("and an empty reply's answer is '': '' in '22' is True")),),
    ),
    RewardCase(
        None,
        22,
        0.0,
        False,
        "a reply that is not text (None) scores 0",
        mistakes=((1.0, _the_bug("and None's answer is read as '': '' in '22' is True")),),
    ),
]


def _reward_value(c: Check, got: object, where: str) -> float:
    """Assert (one check) that ``got`` is a finite number, a float or an int but not a bool; return it."""
    if isinstance(got, bool):
        c.fail(
            f"{where}: you returned the bool {got}; return the reward as a number, a float (1.0, 0.0, ...): "
            "GRPO averages and subtracts rewards, and a verifier's value is a float",
            named=True,
        )
    if got is None:
        c.fail(f"{where}: you returned None; return the reward, a float (a branch without a return?)", named=True)
    if isinstance(got, str):
        c.fail(f"{where}: you returned the text {_shown(got)}; return the reward as a float", named=True)
    if isinstance(got, torch.Tensor):
        c.fail(f"{where}: you returned a tensor; return a Python float (float(...))", named=True)
    if not isinstance(got, numbers.Real):
        c.fail(f"{where}: expected a float, got {type(got).__name__} {_shown(got)}", named=True)
    value = float(got)
    if not math.isfinite(value):
        c.fail(f"{where}: expected a finite number, got {value}", named=True)
    c.passed += 1
    return value


def _run_reward_cases(c: Check, fn: Callable, name: str, cases: list[RewardCase]) -> None:
    """Each case: call ``fn``, check the type, then the value; a wrong value that a known mistake gives on this
    case names the mistake, any other shows expected against got and the case's reason."""
    for case in cases:
        kwargs = {} if case.format_weight is None else {"format_weight": case.format_weight}
        shown_kwargs = "".join(f", {key}={value}" for key, value in kwargs.items())
        where = f"{name}({_shown(case.reply)}, {case.right}{shown_kwargs})"
        on_raise = _RAISED_ON_NONE if case.reply is None else _RAISED_ON_JUNK if not case.form else ""
        hints = [("format_weight", _SIGNATURE), *([("", on_raise)] if on_raise else [])]
        got = c.call(fn, case.reply, case.right, call=where, hints=hints, **kwargs)
        value = _reward_value(c, got, where)
        if numbers_close(value, case.want):
            c.passed += 1
            continue
        shown = f"{where}: expected {case.want:g}, got {value:.4g}"
        for wrong, message in case.mistakes:
            if numbers_close(value, wrong):
                c.fail(f"{shown} — {message}", named=True)
        c.fail(f"{shown} — {case.why}")


@exercise_check("strict_reward")
def check_strict_reward(c: Check, fn: Callable) -> None:
    """``fn(reply, right, format_weight=0.2) -> float``: format_weight · 1[thinking form] + 1 · 1[answer ==
    right as integers]. Names: comparing strings (or text with an int) instead of integers, a substring test
    either way round, forgetting the format part, giving it only when right, ignoring format_weight, searching
    instead of requiring the whole form (two blocks, words after the number), a number read from the
    scratchpad, a minus sign accepted, a newline refused (no re.DOTALL) inside the scratchpad or before the
    answer, raising on None or on a reply not in the form, and a bool, None, text or tensor returned."""
    _run_reward_cases(c, fn, "strict_reward", STRICT_CASES)


@exercise_check("answer_reward")
def check_answer_reward(c: Check, fn: Callable) -> None:
    """``fn(reply, right) -> float``: 1 when the reply is in the thinking form and its answer equals right as
    integers, else 0 (no format part): the fix of the lenient verifier answer in str(right). Names: the bug
    itself (an empty answer, an unclosed scratchpad, no scratchpad, a partial answer paid), a format part
    (0.2 or 1.2), comparing strings, a substring test the other way round, a minus sign, a number read from the
    scratchpad, searching instead of requiring the whole form, no re.DOTALL, raising on None or on junk, and a
    bool, None, text or tensor returned."""
    _run_reward_cases(c, fn, "answer_reward", ANSWER_CASES)

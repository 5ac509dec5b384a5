"""Checks for notebook 10 (reasoning: thinking tokens, pass@k, reward hacking), named after the function they check.

    check_split_thinking(fn)   fn(text) -> (scratchpad, answer text) of a reply in the thinking form, else None
    check_pass_at_k(fn)        fn(n, c, k) -> the unbiased estimate of pass@k from n samples with c correct

Expected values are hand-worked: each reply below says why it is accepted or refused (the reference
``toy_envs.reasoning.split_thinking`` agrees, ``tests/test_checks_reasoning.py`` makes sure), and pass@k comes
from exact binomials (``math.comb``), which the reference ``minirl.pass_at_k`` matches.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from minirl.checks._core import Check, exercise_check, numbers_close

__all__ = ["check_pass_at_k", "check_split_thinking"]

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

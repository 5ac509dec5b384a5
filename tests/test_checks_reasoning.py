"""The checks of notebook 10 catch the plausible wrong implementations, each with a message that names it."""

from __future__ import annotations

import math
import re

import pytest
from check_helpers import caught, run

import minirl
from minirl.checks import check_pass_at_k, check_split_thinking
from minirl.checks import nb10_reasoning as reasoning_checks
from toy_envs.reasoning import split_thinking

# ---- split_thinking --------------------------------------------------------------------------------------


def test_the_hand_worked_cases_agree_with_the_reference():
    for text, want, why in reasoning_checks.THINKING_CASES:
        assert split_thinking(text) == want, (text, why)


def search_not_fullmatch(text):
    m = re.search(r"<think>(.*?)</think>\s*([0-9]+)", text or "", re.DOTALL)
    return None if m is None else (m.group(1).strip(), m.group(2))


def non_greedy_allows_two_blocks(text):
    m = re.fullmatch(r"\s*<think>(.*)</think>\s*([0-9]+)\s*", text, re.DOTALL) if isinstance(text, str) else None
    return None if m is None else (m.group(1).strip(), m.group(2))


def unstripped(text):
    m = re.fullmatch(r"\s*<think>(.*?)</think>\s*([0-9]+)\s*", text, re.DOTALL) if isinstance(text, str) else None
    if m is None or "<think>" in m.group(1) or "</think>" in m.group(1):
        return None
    return m.group(1), m.group(2)


def without_dotall(text):
    """The reference's pattern without re.DOTALL: '.' stops at a newline."""
    m = re.fullmatch(r"\s*<think>(.*?)</think>\s*([0-9]+)\s*", text) if isinstance(text, str) else None
    if m is None or "<think>" in m.group(1) or "</think>" in m.group(1):
        return None
    return m.group(1).strip(), m.group(2)


def answer_as_int(text):
    got = split_thinking(text)
    return None if got is None else (got[0], int(got[1]))


def raises_on_none(text):
    m = re.fullmatch(r"\s*<think>(.*?)</think>\s*([0-9]+)\s*", text, re.DOTALL)
    if m is None or "<think>" in m.group(1):
        return None
    return m.group(1).strip(), m.group(2)


def substring_check(text):
    """The lenient reading: a closing tag and some number after it."""
    if not isinstance(text, str) or "</think>" not in text:
        return None
    before, after = text.rsplit("</think>", 1)
    numbers = re.findall(r"[0-9]+", after)
    return (before.replace("<think>", "").strip(), numbers[0]) if numbers else None


def scratchpad_optional(text):
    if isinstance(text, str) and re.fullmatch(r"\s*[0-9]+\s*", text):
        return "", text.strip()
    return split_thinking(text)


def test_the_reference_passes(capsys):
    ok, line = run(check_split_thinking, split_thinking, capsys)
    assert ok and line.startswith("✔ split_thinking: all")


@pytest.mark.parametrize(
    ("fn", "keywords"),
    [
        (search_not_fullmatch, ["14 apples", "fullmatch"]),
        (non_greedy_allows_two_blocks, ["two think blocks", "repeated tags"]),
        (unstripped, ["strip the whitespace"]),
        (answer_as_int, ["the text of the number"]),
        (raises_on_none, ["raised TypeError", "split_thinking(None)"]),
        (substring_check, ["14 apples"]),
        (scratchpad_optional, ["split_thinking('22')", "without a scratchpad"]),
        (without_dotall, ["a newline inside the scratchpad", "re.DOTALL"]),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_split_thinking_names_the_mistake(fn, keywords, capsys):
    caught(check_split_thinking, fn, capsys, *keywords)


# ---- pass_at_k ---------------------------------------------------------------------------------------------


def exact(n, c, k):
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def with_replacement(n, c, k):
    return 1.0 - (1.0 - c / n) ** k


def all_wrong(n, c, k):
    return math.comb(n - c, k) / math.comb(n, k)


def plain_fraction(n, c, k):
    return c / n


def union_bound(n, c, k):
    return min(1.0, k * c / n)


def float_factorials(n, c, k):
    if n - c < k:
        return 1.0
    f = math.gamma
    return 1.0 - (f(n - c + 1) / (f(k + 1) * f(n - c - k + 1))) / (f(n + 1) / (f(k + 1) * f(n - k + 1)))


def gamma_binomials(n, c, k):
    """C(n−c, k) from gamma functions, with no case for n − c < k (gamma of 0 or less)."""
    g = math.gamma
    return 1.0 - g(n - c + 1) / g(n - c - k + 1) * g(n - k + 1) / g(n + 1)


def product_without_the_edge_case(n, c, k):
    out = 1.0
    for i in range(n - c + 1, n + 1):
        out *= 1.0 - k / i
    return 1.0 - out if n - c >= k else float("nan")


def off_by_one(n, c, k):
    return exact(n, c, min(k + 1, n))


def test_the_check_accepts_the_library_and_exact_binomials(capsys):
    for fn in (minirl.pass_at_k, exact):
        ok, line = run(check_pass_at_k, fn, capsys)
        assert ok, line


@pytest.mark.parametrize(
    ("fn", "keywords"),
    [
        (with_replacement, ["WITH replacement", "1 − C(n−c, k) / C(n, k)"]),
        (all_wrong, ["all k attempts are WRONG"]),
        (plain_fraction, ["c/n (pass@1) whatever k is"]),
        (union_bound, ["k·c/n"]),
        (float_factorials, ["overflow", "n=200"]),
        (gamma_binomials, ["domain error", "pass@k = 1"]),
        (product_without_the_edge_case, ["n − c = 0 < k = 1", "pass@k = 1"]),
        (off_by_one, ["pass@(k+1)"]),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_pass_at_k_names_the_mistake(fn, keywords, capsys):
    caught(check_pass_at_k, fn, capsys, *keywords)


def test_float_factorials_really_overflow_on_a_large_case():
    """The overflow case is real: gamma(201) does not fit a float."""
    with pytest.raises(OverflowError):
        float_factorials(200, 37, 16)

"""The checks of notebook 10 catch the plausible wrong implementations, each with a message that names it."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from check_helpers import caught, run, stub

import minirl
from minirl.checks import check_answer_reward, check_pass_at_k, check_split_thinking, check_strict_reward
from minirl.checks import nb10_reasoning as reasoning_checks
from toy_envs.reasoning import answer_reward, contains_reward, split_thinking, strict_reward, substring_reward

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


# ---- strict_reward -------------------------------------------------------------------------------------------

THINK = re.compile(r"\s*<think>(.*?)</think>\s*([0-9]+)\s*", re.DOTALL)  # the reference's pattern


def one_block(m):
    """The match of a pattern like THINK when its scratchpad holds no other tag, else None."""
    return None if m is None or "<think>" in m.group(1) or "</think>" in m.group(1) else m


def strict_with(answer_ok):
    """The strict reward with its answer part replaced: answer_ok(answer text, right) on split_thinking's answer."""

    def strict_reward(reply, right, format_weight=0.2):
        split = split_thinking(reply)
        return format_weight * (split is not None) + (1.0 if split is not None and answer_ok(split[1], right) else 0.0)

    return strict_reward


strict_string_comparison = strict_with(lambda answer, right: answer == str(right))
strict_text_against_int = strict_with(lambda answer, right: answer == right)
strict_substring = strict_with(lambda answer, right: answer in str(right))
strict_substring_other_way = strict_with(lambda answer, right: str(right) in answer)
strict_prefix_test = strict_with(lambda answer, right: answer.startswith(str(right)))  # '122' no, but '22' for 2


def strict_search(reply, right, format_weight=0.2):
    """Its own pattern, searched for anywhere in the reply instead of required of the whole reply."""
    m = re.search(r"<think>(.*?)</think>\s*([0-9]+)", reply or "", re.DOTALL)
    return 0.0 if m is None else format_weight + (1.0 if int(m.group(2)) == right else 0.0)


def strict_format_only_when_right(reply, right, format_weight=0.2):
    split = split_thinking(reply)
    return format_weight + 1.0 if split is not None and int(split[1]) == right else 0.0


def strict_forgets_format(reply, right, format_weight=0.2):
    return answer_reward(reply, right)


def strict_ignores_format_weight(reply, right, format_weight=0.2):
    return 0.2 * (split_thinking(reply) is not None) + answer_reward(reply, right)


def strict_own_pattern(pattern, flags=0, guard=True):
    """The strict reward on its own regex (instead of split_thinking); ``guard``: refuse what is not text."""

    def strict_reward(reply, right, format_weight=0.2):
        m = one_block(re.fullmatch(pattern, reply, flags)) if isinstance(reply, str) or not guard else None
        return 0.0 if m is None else format_weight + (1.0 if int(m.group(2)) == right else 0.0)

    return strict_reward


strict_without_dotall = strict_own_pattern(THINK.pattern)
strict_space_not_whitespace = strict_own_pattern(r"\s*<think>(.*?)</think> ([0-9]+)\s*", re.DOTALL)
strict_minus_sign = strict_own_pattern(r"\s*<think>(.*?)</think>\s*(-?[0-9]+)\s*", re.DOTALL)
strict_raises_on_none = strict_own_pattern(THINK.pattern, re.DOTALL, guard=False)


def strict_int_of_the_tail(reply, right, format_weight=0.2):
    """The answer part read as int(text after the last '</think>'): raises on a reply without one."""
    form = split_thinking(reply) is not None
    return format_weight * form + (1.0 if int(reply.split("</think>")[-1]) == right else 0.0)


def strict_right_number_anywhere(reply, right, format_weight=0.2):
    """The answer part from the lenient 'did the model get the number?': the right number anywhere in the reply."""
    found = str(right) in re.findall(r"[0-9]+", reply) if isinstance(reply, str) else False
    return format_weight * (split_thinking(reply) is not None) + (1.0 if found else 0.0)


def strict_returns_bool(reply, right, format_weight=0.2):
    split = split_thinking(reply)
    return split is not None and int(split[1]) == right


def strict_returns_text(reply, right, format_weight=0.2):
    return f"{strict_reward(reply, right, format_weight):.1f}"


def strict_returns_none_when_refused(reply, right, format_weight=0.2):
    return strict_reward(reply, right, format_weight) if split_thinking(reply) is not None else None


def strict_returns_a_tensor(reply, right, format_weight=0.2):
    return torch.tensor(strict_reward(reply, right, format_weight))


def strict_renamed_weight(reply, right, weight=0.2):
    return strict_reward(reply, right, weight)


def test_the_strict_cases_agree_with_the_reference():
    for case in reasoning_checks.STRICT_CASES:
        kwargs = {} if case.format_weight is None else {"format_weight": case.format_weight}
        assert strict_reward(case.reply, case.right, **kwargs) == pytest.approx(case.want, abs=1e-12), case
        assert (split_thinking(case.reply) is not None) == case.form, case


@pytest.mark.parametrize(
    ("check", "reference"), [(check_strict_reward, strict_reward), (check_answer_reward, answer_reward)]
)
def test_the_verifier_checks_pass_the_reference_and_call_a_stub_pending(check, reference, capsys):
    name = reference.__name__
    ok, line = run(check, reference, capsys)
    assert ok and line.startswith(f"✔ {name}: all") and line.endswith("checks passed"), line
    ok, line = run(check, stub, capsys)
    assert ok is False and line.startswith(f"○ {name}: not implemented yet"), line


def test_an_int_or_a_numpy_float_is_a_number(capsys):
    def as_numpy(reply, right, format_weight=0.2):
        return np.float64(strict_reward(reply, right, format_weight))

    def as_int(reply, right):
        return int(answer_reward(reply, right))

    assert run(check_strict_reward, as_numpy, capsys)[0]
    assert run(check_answer_reward, as_int, capsys)[0]


@pytest.mark.parametrize(
    ("fn", "keywords"),
    [
        (strict_string_comparison, ["022", "compared strings", "int(answer) == right"]),
        (strict_text_against_int, ["'22' == 22 is False", "int(answer) == right"]),
        (strict_prefix_test, ["strict_reward('<think>1 + 1 = 2.</think> 22', 2)", "'2' in '22'"]),
        (strict_substring, ["substring test, answer in str(right): '2' in '22'"]),
        (strict_substring_other_way, ["substring test, str(right) in answer: '22' in '122'"]),
        (strict_search, ["<think>a</think><think>b</think>", "searched", "split_thinking (fullmatch"]),
        (strict_format_only_when_right, ["21", "expected 0.2, got 0", "only when the answer is right"]),
        (strict_forgets_format, ["expected 1.2, got 1", "adds the format part"]),
        (strict_ignores_format_weight, ["format_weight=0.5", "expected 1.5, got 1.2", "ignored the format_weight"]),
        (strict_without_dotall, ["14.\\n14", "re.DOTALL", "split_thinking"]),
        (strict_space_not_whitespace, ["</think>\\n22", "any whitespace"]),
        (strict_minus_sign, ["-22", "expected 0, got 0.2", "minus sign"]),
        (strict_raises_on_none, ["raised TypeError", "strict_reward(None, 22)", "never raise"]),
        (strict_int_of_the_tail, ["raised ValueError", "invalid literal", "score 0, never raise"]),
        (strict_right_number_anywhere, ["<think>20 + 2 = 22.</think> 21", "inside the scratchpad"]),
        (strict_returns_bool, ["the bool True", "as a number"]),
        (strict_returns_text, ["the text '1.2'", "as a float"]),
        (
            strict_returns_none_when_refused,
            ["returned None", "strict_reward('<think>5 + 9 = 14. 14 + 8 = 22.</think> -22'"],
        ),
        (strict_returns_a_tensor, ["a tensor", "float(...)"]),
        (
            strict_renamed_weight,
            ["unexpected keyword argument 'format_weight'", "strict_reward(reply, right, format_weight=0.2)"],
        ),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_strict_reward_names_the_mistake(fn, keywords, capsys):
    caught(check_strict_reward, fn, capsys, *keywords)


# ---- answer_reward -------------------------------------------------------------------------------------------


def answer_with(answer_ok):
    def answer_reward(reply, right):
        split = split_thinking(reply)
        return 1.0 if split is not None and answer_ok(split[1], right) else 0.0

    return answer_reward


answer_string_comparison = answer_with(lambda answer, right: answer == str(right))
answer_substring_other_way = answer_with(lambda answer, right: str(right) in answer)


def answer_format_part_when_wrong(reply, right):
    """0.2 for a well-formed wrong reply, as the strict verifier pays."""
    split = split_thinking(reply)
    return 0.0 if split is None else 1.0 if int(split[1]) == right else 0.2


def answer_int_of_the_tail(reply, right):
    return 1.0 if int(reply.split("</think>")[-1]) == right else 0.0


def answer_own_pattern(flags=0, guard=True):
    def answer_reward(reply, right):
        m = one_block(re.fullmatch(THINK.pattern, reply, flags)) if isinstance(reply, str) or not guard else None
        return 1.0 if m is not None and int(m.group(2)) == right else 0.0

    return answer_reward


answer_without_dotall = answer_own_pattern()
answer_raises_on_none = answer_own_pattern(re.DOTALL, guard=False)


def answer_digits_after_think(reply, right):
    """The lenient reading fixed halfway: the first digits found in the text after the last '</think>'."""
    tail = reply.rsplit("</think>", 1)[1] if isinstance(reply, str) and "</think>" in reply else ""
    m = re.search(r"[0-9]+", tail)
    return 1.0 if m is not None and int(m.group()) == right else 0.0


def answer_returns_bool(reply, right):
    split = split_thinking(reply)
    return split is not None and int(split[1]) == right


def answer_returns_none_when_wrong(reply, right):
    return 1.0 if answer_reward(reply, right) else None


def test_the_answer_cases_agree_with_the_reference():
    for case in reasoning_checks.ANSWER_CASES:
        assert answer_reward(case.reply, case.right) == case.want, case
        assert (split_thinking(case.reply) is not None) == case.form, case


def test_the_cases_called_the_bug_are_the_buggy_verifiers_behaviour():
    """Where a case says "this is the bug you are fixing", the lenient verifier really pays that value."""
    named = 0
    for case in reasoning_checks.ANSWER_CASES:
        for value, message in case.mistakes:
            if message.startswith("this is the bug"):
                assert substring_reward(case.reply, case.right) == value, case
                named += 1
    assert named >= 5


@pytest.mark.parametrize(
    ("fn", "keywords"),
    [
        (substring_reward, ["this is the bug you are fixing", "'2' in '22' is True"]),
        (strict_reward, ["expected 1, got 1.2", "no format part here"]),
        (answer_format_part_when_wrong, ["expected 0, got 0.2", "no format part here"]),
        (answer_int_of_the_tail, ["raised ValueError", "score 0, never raise", "split_thinking first"]),
        (answer_string_comparison, ["022", "compared strings"]),
        (answer_substring_other_way, ["substring test, str(right) in answer: '22' in '122'"]),
        (answer_without_dotall, ["re.DOTALL"]),
        (answer_raises_on_none, ["raised TypeError", "answer_reward(None, 22)", "never raise"]),
        (answer_digits_after_think, ["-22", "minus sign"]),
        (answer_returns_bool, ["the bool True", "as a number"]),
        (contains_reward, ["<think>20 + 2 = 22.</think> 21", "inside the scratchpad"]),
        (answer_returns_none_when_wrong, ["returned None", "21"]),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_answer_reward_names_the_mistake(fn, keywords, capsys):
    caught(check_answer_reward, fn, capsys, *keywords)

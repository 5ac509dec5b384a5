"""Checks for notebook 11 (learning from your own samples), named after the function they check.

    check_majority_vote(fn)             fn(answers) -> the most frequent answer (None never wins; ties: the first)
    check_yes_probability(fn)           fn(log_probs [reply, word], n_yes) -> P(yes) [reply], renormalised over the
                                        yes and no words, in log space
    check_expert_iteration_batch(fn)    fn(prompts, replies, rewards, threshold, per_prompt=None)
                                        -> (kept prompts, [[reply], ...]): the accepted replies
    check_group_preference_pairs(fn)    fn(rewards [prompt, group]) -> (chosen, rejected, valid) per group

Expected values are hand-worked (the references in ``minirl.best_of_n``, ``minirl.lm.judge`` and
``minirl.self_training`` agree: ``tests/test_checks_self_training.py``), and each wrong value is compared with what
the usual mistakes give, so that the line names the mistake.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from minirl.checks._core import Check, exercise_check, tensors_close

__all__ = [
    "check_expert_iteration_batch",
    "check_group_preference_pairs",
    "check_majority_vote",
    "check_yes_probability",
]

# ---- majority_vote ------------------------------------------------------------------------------------------

# (answers, the vote, why, [(what a mistake returns, the mistake)])
VOTE_CASES: list[tuple[list, Any, str, list[tuple[Any, str]]]] = [
    ([3, 5, 3], 3, "3 appears twice, 5 once", [(2, "that is how often the winner appears, not the winner")]),
    (
        [None, None, 7],
        7,
        "None is a reply with no readable answer: it never wins, however many there are",
        [(None, "count only readable answers: skip None")],
    ),
    ([None, None], None, "no readable answer at all: the vote has no winner (None)", []),
    (
        [9, 1, 1, 9],
        9,
        "a tie (9 and 1 twice each) goes to the answer that appears first",
        [(1, "a tie goes to the answer that appears first, not the smallest or the last")],
    ),
    (
        [2, 8, 8, 2, 5],
        2,
        "a tie (2 and 8 twice each) goes to the answer that appears first",
        [(8, "a tie goes to the answer that appears first, not the largest or the last")],
    ),
    (
        [6, 6, 3, 3],
        6,
        "a tie (6 and 3 twice each) goes to the answer that appears first",
        [(3, "a tie goes to the answer that appears first, not the last one seen")],
    ),
    ([4, 4, 6, 11], 4, "4 appears twice", [(11, "the vote picks the most frequent answer, not the largest")]),
    ([13], 13, "a single reply is its own vote", []),
]


@exercise_check("majority_vote")
def check_majority_vote(c: Check, fn: Callable) -> None:
    """``fn(answers) -> answer | None``: the most frequent readable answer; None never wins (and is returned when no
    answer is readable); a tie goes to the answer that appears first. Catches None winning, the count returned for
    the answer, a tie broken by value or by the last occurrence, the largest answer, and changing the input."""
    for answers, want, why, mistakes in VOTE_CASES:
        given = list(answers)
        where = f"majority_vote({answers})"
        got = c.call(fn, given, call=where)
        c.expect(given == answers, f"{where}: your function changed the list it was given — vote on a copy")
        if got == want and type(got) is type(want):
            c.passed += 1
            continue
        for wrong, message in mistakes:
            if got == wrong:
                c.fail(f"{where}: expected {want!r}, got {got!r} — {message}", named=True)
        c.fail(f"{where}: expected {want!r}, got {got!r} — {why}")


# ---- yes_probability ----------------------------------------------------------------------------------------


def _log(values: list[list[float]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64).log().float()


YES_CASES: list[tuple[str, torch.Tensor, int, list[float], str]] = [
    (
        "p(yes, Yes, no, No) = (0.3, 0.1, 0.2, 0.05)",
        _log([[0.3, 0.1, 0.2, 0.05]]),
        2,
        [0.4 / 0.65],
        "(0.3 + 0.1) / (0.3 + 0.1 + 0.2 + 0.05)",
    ),
    (
        "two replies, p(yes, Yes, no, No) = (0.01, 0.04, 0.5, 0.05) and (0.2, 0.0001, 0.0001, 0.2)",
        _log([[0.01, 0.04, 0.5, 0.05], [0.2, 0.0001, 0.0001, 0.2]]),
        2,
        [0.05 / 0.6, 0.2001 / 0.4002],
        "per reply: the yes words' probability over the yes and no words'",
    ),
    (
        "one yes word, two no words: p = (0.6, 0.1, 0.1)",
        _log([[0.6, 0.1, 0.1]]),
        1,
        [0.75],
        "n_yes = 1: the first column alone is yes",
    ),
    (
        "log p = (−110, −112, −111, −113): words the judge finds very unlikely",
        torch.tensor([[-110.0, -112.0, -111.0, -113.0]]),
        2,
        [1.0 / (1.0 + math.exp(-1.0))],
        "σ(logsumexp(−110, −112) − logsumexp(−111, −113)) = σ(1); exp(−110) is 0 in float32, so work in log space",
    ),
]


def _yes_mistakes(log_probs: torch.Tensor, n_yes: int) -> list[tuple[torch.Tensor, str]]:
    p = log_probs.double().exp()
    yes, no = p[:, :n_yes].sum(1), p[:, n_yes:].sum(1)
    return [
        (yes, "renormalise: divide by the yes and the no words' probability together (the rest does not count)"),
        (p[:, 0] / (p[:, 0] + p[:, n_yes]), "sum every yes word and every no word, not just the first of each"),
        (no / (yes + no), "that is P(no): the first n_yes columns are the yes words"),
        (
            torch.sigmoid(log_probs[:, :n_yes].double().sum(1) - log_probs[:, n_yes:].double().sum(1)),
            "add the words' probabilities (logsumexp of the log-probs), not their log-probs",
        ),
    ]


@exercise_check("yes_probability")
def check_yes_probability(c: Check, fn: Callable) -> None:
    """``fn(log_probs, n_yes) -> [reply]``: Σ_yes p / (Σ_yes p + Σ_no p) from the log-probs of the answer's first
    token. Catches no renormalisation, only the first word of each side, P(no), summed log-probs, a NaN where the
    probabilities underflow (exp of −110), a wrong shape and changing the input."""
    for what, log_probs, n_yes, want, why in YES_CASES:
        given = log_probs.clone()
        where = f"yes_probability({what}, n_yes={n_yes})"
        got = c.tensor(c.call(fn, given, n_yes, call=where), where)
        c.expect(torch.equal(given, log_probs), f"{where}: your function changed log_probs in place")
        expected = torch.tensor(want, dtype=torch.float32)
        c.expect(
            tuple(got.shape) == tuple(expected.shape),
            f"{where}: expected shape {list(expected.shape)} (one P(yes) per reply), got {list(got.shape)}",
        )
        if not bool(torch.isfinite(got).all()):
            c.fail(f"{where}: got {got.tolist()} — {why}", named=True)
        if tensors_close(got.float(), expected):
            c.passed += 1
            continue
        for wrong, message in _yes_mistakes(log_probs, n_yes):
            if tensors_close(got.float(), wrong.float()):
                c.fail(f"{where}: expected {[round(w, 4) for w in want]}, got {got.tolist()} — {message}", named=True)
        c.fail(f"{where}: expected {[round(w, 4) for w in want]}, got {got.tolist()} — {why}")


# ---- expert_iteration_batch ---------------------------------------------------------------------------------

PROMPTS = ["p0", "p1", "p2"]
REPLIES = [["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"]]
REWARDS = torch.tensor([[1.2, 0.2, 1.0], [0.0, 0.2, 0.2], [1.0, 0.0, 1.2]])


@exercise_check("expert_iteration_batch")
def check_expert_iteration_batch(c: Check, fn: Callable) -> None:
    """``fn(prompts, replies, rewards, threshold, per_prompt=None)``: every reply with reward ≥ threshold, paired
    with its prompt (repeated for each kept reply), in prompt order, as one-reply groups, at most per_prompt a
    prompt. Catches > for ≥, keeping the rejected replies, replies not wrapped as one-reply groups, one prompt for
    several replies, per_prompt ignored, and a batch that is not empty when nothing is accepted."""
    where = (
        "expert_iteration_batch(3 prompts × 3 replies, rewards [[1.2, 0.2, 1.0], [0, 0.2, 0.2], [1.0, 0, 1.2]], "
        "threshold=1.0)"
    )
    got = c.call(fn, PROMPTS, REPLIES, REWARDS.clone(), 1.0, call=where)
    c.expect(isinstance(got, tuple) and len(got) == 2, f"{where}: expected a pair (prompts, replies), got {got!r:.80}")
    prompts, replies = list(got[0]), list(got[1])
    want_p, want_r = ["p0", "p0", "p2", "p2"], [["a"], ["c"], ["g"], ["i"]]
    if replies == ["a", "c", "g", "i"]:
        c.fail(
            f"{where}: replies should be one-reply groups [['a'], ['c'], ...] (the rollout's [batch, 1] form)",
            named=True,
        )
    if [r[0] for r in replies if r] == ["a", "i"]:
        c.fail(f"{where}: a reward of exactly the threshold (1.0) is accepted: use >=, not >", named=True)
    if len(replies) > 4:
        c.fail(f"{where}: got {len(replies)} replies — keep only the accepted ones (reward >= threshold)", named=True)
    if prompts == ["p0", "p2"] and len(replies) == 4:
        c.fail(
            f"{where}: each kept reply needs its own copy of its prompt: expected {want_p}, got {prompts}", named=True
        )
    c.expect(
        (prompts, replies) == (want_p, want_r),
        f"{where}: expected ({want_p}, {want_r}), got ({prompts}, {replies})",
    )
    c.passed += 1
    got = c.call(fn, PROMPTS, REPLIES, REWARDS.clone(), 1.0, 1, call=where.replace(")", ", per_prompt=1)"))
    c.expect(
        (list(got[0]), list(got[1])) == (["p0", "p2"], [["a"], ["g"]]),
        f"{where[:-1]}, per_prompt=1): expected (['p0', 'p2'], [['a'], ['g']]) — at most per_prompt replies a prompt, "
        f"the first accepted; got ({list(got[0])}, {list(got[1])})",
    )
    c.passed += 1
    got = c.call(fn, PROMPTS, REPLIES, REWARDS.clone(), 2.0, call=where.replace("threshold=1.0", "threshold=2.0"))
    c.expect(
        (list(got[0]), list(got[1])) == ([], []),
        f"threshold=2.0: no reply is accepted, so the batch is empty ([], []); got ({list(got[0])}, {list(got[1])})",
    )
    c.passed += 1


# ---- group_preference_pairs ---------------------------------------------------------------------------------

PAIR_REWARDS = torch.tensor([[1.2, 0.2, 1.2, 0.2], [0.0, 1.0, 0.0, 0.5], [0.2, 0.2, 0.2, 0.2]])


@exercise_check("group_preference_pairs")
def check_group_preference_pairs(c: Check, fn: Callable) -> None:
    """``fn(rewards [prompt, group]) -> (chosen, rejected, valid)``: the index of each group's best reply (the first
    on ties), of its worst (the last on ties), and whether the best beats the worst. Catches the first worst on
    ties, values for indices, best and worst swapped, and a group of equal rewards marked as a pair."""
    where = "group_preference_pairs([[1.2, 0.2, 1.2, 0.2], [0, 1, 0, 0.5], [0.2, 0.2, 0.2, 0.2]])"
    got = c.call(fn, PAIR_REWARDS.clone(), call=where)
    c.expect(isinstance(got, tuple) and len(got) == 3, f"{where}: expected (chosen, rejected, valid), got {got!r:.80}")
    chosen, rejected, valid = (c.tensor(t, where) for t in got)
    c.expect(
        not chosen.is_floating_point(),
        f"{where}: chosen should be indices in the group (long), got {chosen.tolist()} — argmax, not max",
    )
    if chosen.tolist()[:2] == [1, 0]:
        c.fail(
            f"{where}: chosen {chosen.tolist()} holds the worst replies — chosen is the best (highest reward)",
            named=True,
        )
    c.expect(
        chosen.tolist()[:2] == [0, 1],
        f"{where}: chosen should be [0, 1, ...] (the best reply, the first one on ties), got {chosen.tolist()}",
    )
    if rejected.tolist()[:2] == [1, 0]:
        c.fail(
            f"{where}: on ties the rejected reply is the LAST of the worst: expected [3, 2, ...], "
            f"got {rejected.tolist()}",
            named=True,
        )
    c.expect(
        rejected.tolist()[:2] == [3, 2],
        f"{where}: rejected should be [3, 2, ...] (the worst reply, the last one on ties), got {rejected.tolist()}",
    )
    c.expect(
        valid.dtype == torch.bool and valid.tolist() == [True, True, False],
        f"{where}: valid should be [True, True, False] — a group whose rewards are all equal has no preference "
        f"(best = worst), got {valid.tolist()}",
    )
    c.passed += 1

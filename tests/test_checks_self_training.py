"""The checks of notebook 11 accept the references and catch the plausible wrong implementations, each with a
message that names the mistake."""

from __future__ import annotations

from collections import Counter

import torch
from check_helpers import caught, run

from minirl.best_of_n import majority_vote
from minirl.checks import (
    check_expert_iteration_batch,
    check_group_preference_pairs,
    check_majority_vote,
    check_yes_probability,
)
from minirl.checks import nb11_self_training as checks
from minirl.lm.judge import yes_probability
from minirl.self_training import expert_iteration_batch, group_preference_pairs

# ---- majority_vote --------------------------------------------------------------------------------------------


def test_the_hand_worked_votes_agree_with_the_reference():
    for answers, want, why, _ in checks.VOTE_CASES:
        assert majority_vote(answers) == want, why


def test_majority_vote_accepts_the_reference_and_a_counter(capsys):
    def with_counter(answers):
        counts = Counter(a for a in answers if a is not None)
        return counts.most_common(1)[0][0] if counts else None  # most_common keeps first-seen order on ties

    for fn in (majority_vote, with_counter):
        ok, line = run(check_majority_vote, fn, capsys)
        assert ok, line


def test_majority_vote_names_the_mistakes(capsys):
    caught(check_majority_vote, lambda a: Counter(a).most_common(1)[0][0], capsys, "skip None")
    caught(
        check_majority_vote,
        lambda a: (
            Counter(x for x in a if x is not None).most_common(1)[0][1] if any(x is not None for x in a) else None
        ),
        capsys,
        "how often",
    )

    def smallest_of_tied(answers):
        counts = Counter(x for x in answers if x is not None)
        if not counts:
            return None
        top = max(counts.values())
        return min(a for a in counts if counts[a] == top)

    caught(check_majority_vote, smallest_of_tied, capsys, "appears first")

    def last_of_tied(answers):
        counts = Counter(x for x in answers if x is not None)
        if not counts:
            return None
        top = max(counts.values())
        return [a for a in answers if a is not None and counts[a] == top][-1]

    caught(check_majority_vote, last_of_tied, capsys, "appears first")
    caught(check_majority_vote, lambda a: max((x for x in a if x is not None), default=None), capsys, "majority_vote(")

    def sorts_in_place(answers):
        answers.sort(key=lambda x: (x is None, x or 0))
        return majority_vote(answers)

    caught(check_majority_vote, sorts_in_place, capsys, "changed the list")


# ---- yes_probability ------------------------------------------------------------------------------------------


def test_the_hand_worked_probabilities_agree_with_the_reference():
    for _, log_probs, n_yes, want, why in checks.YES_CASES:
        assert torch.allclose(yes_probability(log_probs, n_yes), torch.tensor(want), rtol=1e-6, atol=0), why


def test_yes_probability_accepts_the_reference_and_a_softmax(capsys):
    def by_softmax(log_probs, n_yes):
        return torch.softmax(log_probs, dim=1)[:, :n_yes].sum(dim=1)  # the same renormalisation, stable

    for fn in (yes_probability, by_softmax):
        ok, line = run(check_yes_probability, fn, capsys)
        assert ok, line


def test_yes_probability_names_the_mistakes(capsys):
    caught(check_yes_probability, lambda lp, n: lp[:, :n].exp().sum(1), capsys, "renormalise")
    caught(
        check_yes_probability,
        lambda lp, n: lp[:, 0].exp() / (lp[:, 0].exp() + lp[:, n].exp()),
        capsys,
        "not just the first",
    )
    caught(check_yes_probability, lambda lp, n: 1 - yes_probability(lp, n), capsys, "P(no)")
    caught(
        check_yes_probability,
        lambda lp, n: torch.sigmoid(lp[:, :n].sum(1) - lp[:, n:].sum(1)),
        capsys,
        "logsumexp",
    )
    caught(
        check_yes_probability,
        lambda lp, n: lp[:, :n].exp().sum(1) / lp.exp().sum(1),  # right formula, outside log space: 0 / 0 at −110
        capsys,
        "log space",
    )
    caught(check_yes_probability, lambda lp, n: yes_probability(lp, n)[:, None], capsys, "shape")

    def in_place(lp, n):
        lp -= lp.max()
        return yes_probability(lp, n)

    caught(check_yes_probability, in_place, capsys, "in place")


# ---- expert_iteration_batch -----------------------------------------------------------------------------------


def test_expert_iteration_batch_accepts_the_reference(capsys):
    ok, line = run(check_expert_iteration_batch, expert_iteration_batch, capsys)
    assert ok, line


def _batch(prompts, replies, rewards, threshold, per_prompt=None, *, op=torch.ge, wrap=True, repeat=True, limit=True):
    kept_p, kept_r = [], []
    for prompt, group, row in zip(prompts, replies, op(rewards, threshold)):
        accepted = [r for r, ok in zip(group, row.tolist()) if ok]
        accepted = accepted[:per_prompt] if limit else accepted
        if accepted and not repeat:
            kept_p.append(prompt)
        for reply in accepted:
            if repeat:
                kept_p.append(prompt)
            kept_r.append([reply] if wrap else reply)
    return kept_p, kept_r


def test_expert_iteration_batch_names_the_mistakes(capsys):
    caught(check_expert_iteration_batch, lambda *a, **k: _batch(*a, **k, op=torch.gt), capsys, ">=")
    caught(check_expert_iteration_batch, lambda *a, **k: _batch(*a, **k, wrap=False), capsys, "one-reply groups")
    caught(check_expert_iteration_batch, lambda *a, **k: _batch(*a, **k, repeat=False), capsys, "own copy")
    caught(check_expert_iteration_batch, lambda *a, **k: _batch(*a, **k, limit=False), capsys, "per_prompt")
    caught(
        check_expert_iteration_batch,
        lambda p, r, w, t, per_prompt=None: ([x for x in p for _ in range(3)], [[y] for g in r for y in g]),
        capsys,
        "keep only the accepted",
    )


# ---- group_preference_pairs -----------------------------------------------------------------------------------


def test_group_preference_pairs_accepts_the_reference(capsys):
    ok, line = run(check_group_preference_pairs, group_preference_pairs, capsys)
    assert ok, line


def test_group_preference_pairs_names_the_mistakes(capsys):
    def first_of_worst(rewards):
        chosen, _, valid = group_preference_pairs(rewards)
        return chosen, rewards.argmin(dim=1), valid

    def all_valid(rewards):
        chosen, rejected, _ = group_preference_pairs(rewards)
        return chosen, rejected, torch.ones(rewards.shape[0], dtype=torch.bool)

    def values(rewards):
        return (
            rewards.max(dim=1).values,
            rewards.min(dim=1).values,
            rewards.max(dim=1).values > rewards.min(dim=1).values,
        )

    def swapped(rewards):
        chosen, rejected, valid = group_preference_pairs(-rewards)
        return chosen, rejected, valid

    caught(check_group_preference_pairs, first_of_worst, capsys, "LAST of the worst")
    caught(check_group_preference_pairs, all_valid, capsys, "all equal")
    caught(check_group_preference_pairs, values, capsys, "argmax")
    caught(check_group_preference_pairs, swapped, capsys, "worst replies")

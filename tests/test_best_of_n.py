"""Best-of-N selection (minirl.best_of_n): the exact scorer estimate against brute force over every subset, its
limits (k = 1, a perfect scorer = pass@k, an adversarial one falls with N), the vote, and bad input."""

import itertools
import math

import pytest
import torch

from minirl.best_of_n import best_of_n_by_score, majority_at_k, majority_vote
from minirl.pass_at_k import pass_at_k


def brute_force(scores: list[float], correct: list[bool], k: int) -> float:
    """Every k-subset, its best sample by score (ties: the earlier sample), right or not, averaged."""
    hits = [
        correct[max(subset, key=lambda i: (scores[i], -i))] for subset in itertools.combinations(range(len(scores)), k)
    ]
    return sum(hits) / len(hits)


@pytest.mark.parametrize("seed", range(5))
def test_the_scorer_estimate_is_the_average_over_every_subset(seed):
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, 4, (3, 7), generator=gen).double()  # few values: many ties
    correct = torch.rand(3, 7, generator=gen) < 0.4
    for k in range(1, 8):
        got = best_of_n_by_score(scores, correct, k)
        want = [brute_force(scores[p].tolist(), correct[p].tolist(), k) for p in range(3)]
        # float64 sums of at most 7 terms, each a ratio of binomials from lgamma: far below 1e-12 apart
        assert got.tolist() == pytest.approx(want, abs=1e-12), (seed, k)


def test_one_reply_is_plain_accuracy_and_a_perfect_scorer_is_pass_at_k():
    correct = torch.tensor([[True, False, False, True, False, False], [False] * 6, [True] * 6])
    c = correct.sum(dim=1)
    noise = torch.linspace(0, 0.5, 6).expand(3, 6)
    for k in range(1, 7):
        if k == 1:
            assert best_of_n_by_score(noise, correct, 1).tolist() == pytest.approx((c.double() / 6).tolist(), abs=1e-12)
        perfect = best_of_n_by_score(correct.double() + noise, correct, k)  # every right reply above every wrong
        assert perfect.tolist() == pytest.approx(pass_at_k(6, c, k).tolist(), abs=1e-12)


def test_a_scorer_that_prefers_wrong_replies_gets_worse_with_more_of_them():
    correct = torch.tensor([[True, True, True, False, False, False, False, False]])
    fooled = (~correct).double()  # the scorer likes exactly the wrong replies
    curve = [float(best_of_n_by_score(fooled, correct, k)) for k in range(1, 9)]
    # right only when no wrong reply is drawn: C(3, k) / C(8, k) = 3/8, 3/28, 1/56, then 0
    assert curve[:3] == pytest.approx([3 / 8, 3 / 28, 1 / 56], abs=1e-12) and curve[3:] == [0.0] * 5


def test_the_scorer_estimate_refuses_bad_input():
    scores, correct = torch.zeros(2, 4), torch.zeros(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"k must be an int in 1\.\.n = 4"):
        best_of_n_by_score(scores, correct, 5)
    with pytest.raises(ValueError, match="correct must be a bool tensor of the scores' shape"):
        best_of_n_by_score(scores, correct.float(), 2)
    with pytest.raises(ValueError, match=r"scores must be a float tensor \[problem, sample\]"):
        best_of_n_by_score(torch.zeros(4), correct, 2)
    with pytest.raises(ValueError, match="finite"):
        best_of_n_by_score(torch.full((2, 4), math.nan), correct, 2)


def test_the_vote_counts_readable_answers_and_breaks_ties_by_order():
    assert majority_vote([3, 5, 5, None, None, None]) == 5  # an unreadable reply never wins
    assert majority_vote([7, 2, 2, 7]) == 7  # as frequent: the one that came first
    assert majority_vote([None, None]) is None and majority_vote([]) is None


def test_majority_at_k_is_seeded_and_exact_where_the_vote_is_fixed():
    answers = [[4, 4, 4, 1, 2], [9, 8, 8, None, 8], [0, 1, 2, 3, 5]]
    right = [4, 9, 5]
    full = majority_at_k(answers, right, 5, torch.Generator().manual_seed(0), draws=32)
    assert full[:2].tolist() == [1.0, 0.0]  # no tie among all five: the vote is the same every draw
    assert 0 < float(full[2]) < 1  # five-way tie: the right one wins in some draw orders
    again = [majority_at_k(answers, right, 3, torch.Generator().manual_seed(7), draws=64) for _ in range(2)]
    assert torch.equal(again[0], again[1])


def test_one_reply_votes_for_itself():
    """k = 1: the vote is one random reply, so the estimate is c / n up to the drawing's error."""
    answers, right = [[1, 1, 1, 0, 0, 0, 0, 0]], [1]
    est = float(majority_at_k(answers, right, 1, torch.Generator().manual_seed(1), draws=4000))
    sd = math.sqrt(3 / 8 * 5 / 8 / 4000)  # a binomial proportion over 4000 draws
    assert abs(est - 3 / 8) < 4 * sd


def test_majority_at_k_refuses_bad_input():
    gen = torch.Generator()
    with pytest.raises(ValueError, match="one entry per problem"):
        majority_at_k([[1, 2]], [1, 2], 1, gen)
    with pytest.raises(ValueError, match=r"k must be an int in 1\.\.n = 2"):
        majority_at_k([[1, 2]], [1], 3, gen)
    with pytest.raises(ValueError, match="draws must be an int >= 1"):
        majority_at_k([[1, 2]], [1], 1, gen, draws=0)
    with pytest.raises(ValueError, match="generator must be a torch.Generator"):
        majority_at_k([[1, 2]], [1], 1, 0)

"""Best-of-N: draw N replies to a problem, keep one. What the N replies buy depends on who chooses.

- **The verifier chooses** (any right reply wins): that is pass@N (``minirl.pass_at_k``), the ceiling of every
  selector, and what inference-time compute buys when a checker is there at test time.
- **The replies vote** (``majority_vote``, self-consistency): the most frequent final answer wins; no checker is
  needed, only answers that can be compared.
- **A scorer chooses** (a learned reward model, a judge): the reply it scores highest wins
  (``best_of_n_by_score``). A scorer that is wrong in a systematic way gets *worse* with N: more replies give it
  more chances to meet a wrong one it likes (over-optimisation of the scorer, measured without any training).

Each estimate draws its N replies from n ≥ N samples a problem, as pass@k does, so one batch of n samples gives the
whole curve N = 1 … n: exactly, averaged over every N-subset, for the verifier and the scorer; by drawing subsets
with a ``torch.Generator`` for the vote (``majority_at_k``).

Shapes: ``[problem, sample]`` for the scores and the right/wrong marks of the n samples of each problem.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence

import torch

__all__ = ["best_of_n_by_score", "majority_at_k", "majority_vote"]


def _check_k(k: int, n: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise ValueError(f"k must be an int in 1..n = {n} (the samples per problem); got {k!r}")


def _log_binomial(a: torch.Tensor, b: int) -> torch.Tensor:
    """log C(a, b) for each a (float64), −inf where a < b."""
    a = a.to(torch.float64)
    out = torch.lgamma(a + 1) - torch.lgamma(torch.tensor(b + 1.0, dtype=torch.float64)) - torch.lgamma(a - b + 1)
    return torch.where(a >= b, out, torch.full_like(a, -torch.inf))


def best_of_n_by_score(scores: torch.Tensor, correct: torch.Tensor, k: int) -> torch.Tensor:
    """The expected accuracy of keeping the highest-scored of k replies drawn without replacement from the n
    samples of each problem, averaged exactly over every k-subset.

    Rank the n samples of a problem by score; r_i is how many rank below sample i (equal scores: the earlier
    sample ranks higher). Sample i is the best of a k-subset when it is in the subset and the other k − 1 come
    from the r_i below it, so

        best-of-k accuracy = Σ_i correct_i · C(r_i, k − 1) / C(n, k)

    (the weights sum to 1: Σ_{r = k−1}^{n−1} C(r, k − 1) = C(n, k)). k = 1 gives the plain accuracy c / n; a
    scorer that ranks every right reply above every wrong one gives pass@k.

    Args:
        scores: ``[problem, sample]`` float, the scorer's score of each sample.
        correct: ``[problem, sample]`` bool, whether each sample is right (the verifier's verdict).
        k: replies drawn per problem, 1 <= k <= n.

    Returns:
        ``[problem]`` float64, each in [0, 1].
    """
    if not isinstance(scores, torch.Tensor) or scores.dim() != 2 or not scores.is_floating_point():
        raise ValueError(f"scores must be a float tensor [problem, sample]; got {_describe(scores)}")
    if not isinstance(correct, torch.Tensor) or correct.dtype != torch.bool or correct.shape != scores.shape:
        raise ValueError(
            f"correct must be a bool tensor of the scores' shape {tuple(scores.shape)}; got {_describe(correct)}"
        )
    if not bool(torch.isfinite(scores).all()):
        raise ValueError("scores must be finite (a NaN has no rank)")
    n = scores.shape[1]
    _check_k(k, n)
    index = torch.arange(n, dtype=torch.float64)
    # sort by score, and among equal scores the later sample first: a stable ascending sort of (score, -index)
    order = torch.argsort(-index.expand_as(scores), dim=1, stable=True)
    order = order.gather(1, torch.argsort(scores.gather(1, order), dim=1, stable=True))
    below = torch.empty_like(order).scatter_(1, order, torch.arange(n).expand_as(order))  # r_i
    weights = torch.exp(_log_binomial(below, k - 1) - _log_binomial(torch.tensor(float(n)), k))
    return (weights * correct.to(torch.float64)).sum(dim=1)


def majority_vote(answers: Sequence[Hashable | None]) -> Hashable | None:
    """The most frequent answer among ``answers`` (None: a reply with no readable answer, which never wins); among
    answers as frequent, the one that appears first. None when no answer is readable."""
    readable = [a for a in answers if a is not None]
    if not readable:
        return None
    counts = Counter(readable)
    top = max(counts.values())
    return next(a for a in readable if counts[a] == top)


def majority_at_k(
    answers: Sequence[Sequence[Hashable | None]],
    right: Sequence[Hashable],
    k: int,
    generator: torch.Generator,
    draws: int = 256,
    vote: Callable[[Sequence[Hashable | None]], Hashable | None] = majority_vote,
) -> torch.Tensor:
    """The accuracy of a majority vote over k replies drawn without replacement from the n answers of each
    problem: the fraction of ``draws`` random k-subsets whose vote (``majority_vote``, in the drawn order, so a
    tie goes to a random one of the tied answers) equals the right answer.

    Estimated by drawing (its standard error is at most 0.5 / √draws a problem); exact for k = n when the vote has
    no tie. Every draw takes ``generator``, so a seed gives the same estimate.

    Args:
        answers: per problem, the n final answers of its samples (None where a reply has none).
        right: per problem, its right answer.
        k: replies per vote, 1 <= k <= n.
        generator: a ``torch.Generator`` for the subsets.
        draws: subsets drawn per problem.
        vote: ``majority_vote`` or a function of the same signature (notebook 11's exercise).

    Returns:
        ``[problem]`` float64, each in [0, 1].
    """
    if len(answers) != len(right):
        raise ValueError(f"answers and right must have one entry per problem; got {len(answers)} and {len(right)}")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be an int >= 1; got {draws!r}")
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator; got {type(generator).__name__}")
    out = torch.zeros(len(answers), dtype=torch.float64)
    for p, (mine, truth) in enumerate(zip(answers, right)):
        _check_k(k, len(mine))
        wins = 0
        for _ in range(draws):
            subset = torch.randperm(len(mine), generator=generator)[:k].tolist()
            wins += vote([mine[i] for i in subset]) == truth
        out[p] = wins / draws
    return out


def _describe(x: object) -> str:
    if isinstance(x, torch.Tensor):
        return f"{x.dtype} tensor of shape {tuple(x.shape)}"
    return type(x).__name__

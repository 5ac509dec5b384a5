"""pass@k (minirl.pass_at_k): the estimator against the exact formula and against counting subsets, bad input,
and sampled pass@k from a policy."""

import itertools
import math

import pytest
import torch

from minirl import ToyPolicy, make_model, pass_at_k, sampled_pass_at_k
from minirl.protocols import Rollout
from toy_envs.sorting import SortingTask

# float64 products of at most ~50 factors in [0, 1]: each rounding is ≤ 2⁻⁵³ relative, so 1e-12 is generous
F64_TOL = 1e-12


def exact(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


CASES = [(n, c, k) for n in (1, 2, 3, 5, 8, 16, 50) for c in sorted({0, 1, n // 2, n - 1, n}) for k in {1, 2, n}]
CASES = [(n, c, k) for n, c, k in CASES if 0 <= c <= n and 1 <= k <= n]


@pytest.mark.parametrize(("n", "c", "k"), CASES)
def test_pass_at_k_equals_the_binomial_formula(n, c, k):
    got = pass_at_k(n, c, k)
    assert got.dtype == torch.float64 and got.shape == ()
    assert abs(float(got) - exact(n, c, k)) <= F64_TOL


def test_pass_at_k_edge_cases_are_exact():
    assert float(pass_at_k(10, 0, 3)) == 0.0  # nothing correct: no k-subset can pass
    assert float(pass_at_k(10, 10, 3)) == 1.0
    assert float(pass_at_k(10, 8, 3)) == 1.0  # n − c = 2 < k = 3: every 3-subset holds a correct sample
    assert abs(float(pass_at_k(10, 3, 1)) - 0.3) <= F64_TOL  # pass@1 = c / n
    assert float(pass_at_k(1, 1, 1)) == 1.0 and float(pass_at_k(1, 0, 1)) == 0.0


def test_pass_at_k_is_vectorised_over_prompts():
    n = torch.tensor([4, 6, 6, 20, 7])
    c = torch.tensor([0, 2, 6, 13, 1])
    got = pass_at_k(n, c, 3)
    want = torch.tensor([exact(int(a), int(b), 3) for a, b in zip(n, c)], dtype=torch.float64)
    assert got.shape == (5,) and torch.allclose(got, want, rtol=0, atol=F64_TOL)
    assert torch.allclose(
        pass_at_k(8, torch.tensor([[1, 2], [3, 8]]), 2),
        pass_at_k(torch.full((2, 2), 8), torch.tensor([[1, 2], [3, 8]]), 2),
    )


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_pass_at_k_is_the_fraction_of_k_subsets_with_a_correct_sample(n):
    for c in range(n + 1):
        samples = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(samples, k))
            fraction = sum(any(s) for s in subsets) / len(subsets)
            assert abs(float(pass_at_k(n, c, k)) - fraction) <= F64_TOL, (n, c, k)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((5, 2, 0), "k must be in 1..n"),
        ((5, 2, 6), "k must be in 1..n"),
        ((5, 6, 1), "c must be in 0..n; got c = 6 with n = 5"),
        ((5, -1, 1), "c must be in 0..n; got c = -1 with n = 5"),
        ((torch.tensor([4, 5]), torch.tensor([1, 6]), 1), "c must be in 0..n; got c = 6 with n = 5"),
        ((5.0, 2, 1), "n must be an int or an integer tensor"),
        ((5, torch.tensor([0.5]), 1), "c must hold integers"),
        ((5, 2, 1.0), "k must be an int"),
    ],
)
def test_pass_at_k_bad_input_names_the_argument(args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        pass_at_k(*args)


class KnownPolicy:
    """Answers prompt i right in exactly c_i of its samples (the first c_i), whatever the generator."""

    device = torch.device("cpu")

    def sample(self, prompts, group_size, *, temperature, generator):
        assert temperature == 1.0 and isinstance(generator, torch.Generator)
        right = torch.arange(group_size) < prompts.unsqueeze(1)  # prompts are the counts c_i
        tokens = right.long().unsqueeze(-1)
        return Rollout(tokens, None, tokens, 1)


class CountTask:
    def is_correct(self, prompts, answers):
        return answers[..., 0] == 1


def test_sampled_pass_at_k_averages_the_estimate_over_prompts():
    counts = torch.tensor([0, 1, 4, 8, 2])
    got = sampled_pass_at_k(KnownPolicy(), CountTask(), counts, 8, [1, 2, 8], torch.Generator().manual_seed(0))  # type: ignore[arg-type]
    assert set(got) == {"pass@1", "pass@2", "pass@8"}
    for k in (1, 2, 8):
        want = sum(exact(8, int(c), k) for c in counts) / len(counts)
        assert abs(got[f"pass@{k}"] - want) <= F64_TOL
    assert abs(got["pass@1"] - 15 / 40) <= F64_TOL and got["pass@8"] == 4 / 5


def test_sampled_pass_at_k_on_the_toy_sorting_task():
    task = SortingTask(vocab_size=3, length=2)  # small enough that an untrained model is sometimes right
    policy = ToyPolicy(make_model(task, seed=0), task.response_length)
    prompts = task.sample_prompts(64, torch.Generator().manual_seed(1))
    got = sampled_pass_at_k(policy, task, prompts, 6, [1, 3, 6], torch.Generator().manual_seed(2))
    # the same draw, counted here: pass@1 is the fraction of correct samples, pass@6 the fraction of prompts
    # with one; both are ratios of integers, so equal up to float64 rounding of the mean
    rollout = policy.sample(prompts, 6, temperature=1.0, generator=torch.Generator().manual_seed(2))
    correct = task.is_correct(prompts, rollout.answers)
    assert correct.shape == (64, 6) and 0 < int(correct.sum()) < 64 * 6  # an untrained model: some right
    assert abs(got["pass@1"] - float(correct.float().mean())) <= F64_TOL
    assert abs(got["pass@6"] - float(correct.any(dim=1).float().mean())) <= F64_TOL
    assert got["pass@1"] <= got["pass@3"] <= got["pass@6"]
    again = sampled_pass_at_k(policy, task, prompts, 6, [1, 3, 6], torch.Generator().manual_seed(2))
    assert again == got  # the generator makes the draw repeatable


@pytest.mark.parametrize(
    ("n_samples", "ks", "message"),
    [(0, [1], "n_samples must be an int >= 1"), (4, [], "ks must name"), (4, [1, 5], "every k in ks must be in 1")],
)
def test_sampled_pass_at_k_bad_input_names_the_argument(n_samples, ks, message):
    task = SortingTask()
    policy = ToyPolicy(make_model(task, seed=0), task.response_length)
    with pytest.raises(ValueError, match=message):
        sampled_pass_at_k(policy, task, task.sample_prompts(2), n_samples, ks, torch.Generator())

"""The sorting task: rewards on hand-computed cases, vectorised == list functions, bad input."""

import pytest
import torch

from toy_envs.sorting import (
    REWARDS,
    SortingTask,
    exact_match_reward,
    format_example,
    sort_distance_reward,
    sort_inclusion_ordering_reward,
)

# ---- the list rewards on hand-computed cases -------------------------------------------------


@pytest.mark.parametrize(
    "prompt, response, expected",
    [
        ([3, 1, 2], [1, 2, 3], 3.0),
        ([3, 1, 2], [1, 3, 3], 2.0),  # positions 0 and 2 match [1, 2, 3]
        ([3, 1, 2], [3, 2, 1], 1.0),  # the middle 2 matches
        ([3, 1, 2], [0, 0, 0], 0.0),
        ([2, 2, 1], [1, 2, 2], 3.0),  # duplicates in the prompt
        ([2, 2, 1], [2, 2, 1], 1.0),  # sorted is [1, 2, 2]: only the middle matches
        ([5, 5, 5], [5, 5, 5], 3.0),
    ],
)
def test_sort_distance_reward(prompt, response, expected):
    assert sort_distance_reward(prompt, response) == expected


@pytest.mark.parametrize(
    "prompt, response, expected",
    [
        ([3, 1, 2], [1, 2, 3], 3 + 2),  # all included, both pairs ordered
        ([3, 1, 2], [3, 2, 1], 3 + 0),  # all included, no pair ordered
        ([3, 1, 2], [1, 1, 1], 1 + 2),  # the hack: one item, "ordered" pairs for free
        ([3, 1, 2], [0, 4, 4], 0 + 2),
        ([2, 2, 5], [2, 5, 5], 3 + 2),  # duplicates: both 2s count as included -> maximal, yet wrong
        ([2, 2, 5], [5, 2, 2], 3 + 1),
        ([7], [7], 1 + 0),
    ],
)
def test_sort_inclusion_ordering_reward(prompt, response, expected):
    assert sort_inclusion_ordering_reward(prompt, response) == float(expected)


def test_inclusion_ordering_can_be_gamed():
    """A response that is not sorted(prompt) can still get the maximal partial credit."""
    prompt, hacked = [2, 2, 5], [2, 5, 5]
    assert hacked != sorted(prompt)
    assert sort_inclusion_ordering_reward(prompt, hacked) == sort_inclusion_ordering_reward(prompt, sorted(prompt))


@pytest.mark.parametrize(
    "prompt, response, expected",
    [([3, 1, 2], [1, 2, 3], 1.0), ([3, 1, 2], [1, 3, 2], 0.0), ([2, 2, 1], [1, 2, 2], 1.0), ([4], [4], 1.0)],
)
def test_exact_match_reward(prompt, response, expected):
    assert exact_match_reward(prompt, response) == expected


def test_rewards_return_float_and_accept_tensors():
    assert isinstance(sort_distance_reward([1, 0], [0, 1]), float)
    assert sort_distance_reward(torch.tensor([1, 0]), torch.tensor([0, 1])) == 2.0


# ---- the task: vectorised rewards equal the list functions -----------------------------------


@pytest.mark.parametrize("reward", sorted(REWARDS))
@pytest.mark.parametrize("vocab_size, length", [(5, 3), (10, 5), (3, 6)])
def test_vectorised_rewards_match_list_functions(reward, vocab_size, length):
    task = SortingTask(vocab_size=vocab_size, length=length, reward=reward)
    g = torch.Generator().manual_seed(123)
    prompts = task.sample_prompts(64, generator=g)
    responses = torch.randint(0, vocab_size, (64, 7, length), generator=g)
    responses[:, 0] = prompts.sort(dim=-1).values  # make sure the maximum occurs too
    got = task.rewards(prompts, responses)
    assert got.shape == (64, 7) and got.dtype == torch.float32
    fn = REWARDS[reward]
    want = torch.tensor([[fn(p.tolist(), r.tolist()) for r in group] for p, group in zip(prompts, responses)])
    torch.testing.assert_close(got, want)
    assert torch.all(got[:, 0] == task.max_reward)


def test_custom_callable_reward():
    task = SortingTask(vocab_size=5, length=3, reward=lambda p, r: float(r[0] == min(p)))
    prompts = torch.tensor([[3, 1, 2], [4, 4, 0]])
    responses = torch.tensor([[[1, 0, 0], [2, 0, 0]], [[0, 4, 4], [4, 0, 4]]])
    assert task.rewards(prompts, responses).tolist() == [[1.0, 0.0], [1.0, 0.0]]


def test_per_position_rewards_sum_to_sort_distance():
    task = SortingTask(vocab_size=4, length=4)
    g = torch.Generator().manual_seed(0)
    prompts = task.sample_prompts(32, g)
    responses = torch.randint(0, 4, (32, 5, 4), generator=g)
    dense = task.per_position_rewards(prompts, responses)
    assert dense.shape == (32, 5, 4)
    torch.testing.assert_close(dense.sum(-1), task.rewards(prompts, responses))
    # hand case: prompt [2, 0, 1] -> sorted [0, 1, 2]
    small = SortingTask(vocab_size=3, length=3)
    d = small.per_position_rewards(torch.tensor([[2, 0, 1]]), torch.tensor([[[0, 2, 2], [0, 1, 2]]]))
    assert d.tolist() == [[[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]]]


def test_is_correct_and_sorted_responses():
    task = SortingTask(vocab_size=5, length=3)
    prompts = torch.tensor([[3, 1, 2]])
    assert task.sorted_responses(prompts).tolist() == [[1, 2, 3]]
    assert task.is_correct(prompts, torch.tensor([[[1, 2, 3], [1, 3, 2]]])).tolist() == [[True, False]]


def test_sample_prompts_deterministic_and_in_range():
    task = SortingTask(vocab_size=7, length=4)
    a = task.sample_prompts(100, torch.Generator().manual_seed(5))
    b = task.sample_prompts(100, torch.Generator().manual_seed(5))
    c = task.sample_prompts(100, torch.Generator().manual_seed(6))
    assert a.dtype == torch.long and a.shape == (100, 4)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert int(a.min()) >= 0 and int(a.max()) < 7
    assert set(a.unique().tolist()) == set(range(7))  # every value is drawn


def test_format_example():
    assert format_example([3, 1, 2]) == "3 1 2"
    assert format_example([3, 1, 2], [1, 2, 3]) == "3 1 2 -> 1 2 3  (sorted ✓)"
    task = SortingTask(vocab_size=5, length=3)
    assert task.format([3, 1, 2], [1, 3, 3]) == "3 1 2 -> 1 3 3  (reward 2, not sorted ✗)"


# ---- bad input --------------------------------------------------------------------------------


def test_bad_task_arguments():
    with pytest.raises(ValueError, match="vocab_size must be an int >= 2; got 1"):
        SortingTask(vocab_size=1)
    with pytest.raises(ValueError, match="length must be an int >= 1; got 0"):
        SortingTask(length=0)
    with pytest.raises(ValueError, match="reward must be one of .*'exact_match'.*got 'sorted'"):
        SortingTask(reward="sorted")
    with pytest.raises(ValueError, match="n must be a positive int; got 0"):
        SortingTask().sample_prompts(0)


def test_bad_tensor_inputs():
    task = SortingTask(vocab_size=5, length=3)
    prompts = torch.tensor([[3, 1, 2], [0, 0, 4]])
    with pytest.raises(ValueError, match=r"responses must have shape \[batch, trial, pos\].*got \[2, 3\].*unsqueeze"):
        task.rewards(prompts, torch.tensor([[1, 2, 3], [0, 0, 4]]))
    with pytest.raises(ValueError, match=r"responses must have shape .*got \[3, 1, 3\]"):
        task.rewards(prompts, torch.zeros(3, 1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"prompts must have shape \[batch, pos\] = \[batch, 3\]; got \[2, 4\]"):
        task.rewards(torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 1, 3, dtype=torch.long))
    msg = r"responses tokens must lie in \[0, vocab_size\) = \[0, 5\); got values in \[0, 9\]"
    with pytest.raises(ValueError, match=msg):
        task.rewards(prompts, torch.tensor([[[9, 0, 0]], [[0, 0, 0]]]))
    with pytest.raises(ValueError, match=r"prompts tokens must lie in \[0, vocab_size\)"):
        task.rewards(torch.tensor([[-1, 0, 0]]), torch.zeros(1, 1, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="must be an integer tensor"):
        task.rewards(prompts.float(), torch.zeros(2, 1, 3))

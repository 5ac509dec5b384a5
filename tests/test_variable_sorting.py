"""The variable-length sorting task: token ids, padding, EOS masks and rewards (hand cases and a loop reference)."""

from __future__ import annotations

import pytest
import torch

from minirl.losses import aggregate
from minirl.toy.model import TinyEncoderDecoder
from minirl.toy.sampling import compute_log_probs, sample_responses
from tests.tolerances import assert_close_f32
from toy_envs.variable_sorting import VariableLengthSortingTask

TASK = VariableLengthSortingTask(vocab_size=10, max_length=4, min_length=1)
EOS, PAD = 10, 11


def test_token_ids_and_sizes():
    assert (TASK.eos, TASK.pad, TASK.n_tokens) == (EOS, PAD, 12)
    assert (TASK.prompt_length, TASK.response_length) == (4, 5)
    default = VariableLengthSortingTask()
    assert (default.vocab_size, default.max_length, default.min_length, default.reward) == (10, 5, 2, "sort_distance")
    assert default.max_reward == 6.0
    with pytest.raises(ValueError, match="min_length must be an int in"):
        VariableLengthSortingTask(max_length=3, min_length=4)
    with pytest.raises(ValueError, match="reward must be one of"):
        VariableLengthSortingTask(reward="inclusion")


def test_sample_prompts():
    task = VariableLengthSortingTask(vocab_size=5, max_length=6, min_length=2)
    prompts = task.sample_prompts(500, torch.Generator().manual_seed(0))
    lengths = task.prompt_lengths(prompts)
    assert prompts.shape == (500, 6) and lengths.shape == (500,) and prompts.dtype == lengths.dtype == torch.long
    assert set(lengths.tolist()) == {2, 3, 4, 5, 6}
    inside = torch.arange(6) < lengths[:, None]
    assert (prompts[inside] < 5).all() and (prompts[~inside] == task.pad).all()
    again = task.sample_prompts(500, torch.Generator().manual_seed(0))
    assert torch.equal(prompts, again)


@pytest.mark.parametrize(
    "prompt, target",
    [
        ([3, 1, PAD, PAD], [1, 3, EOS, PAD, PAD]),
        ([4, 2, 9, 0], [0, 2, 4, 9, EOS]),
        ([7, PAD, PAD, PAD], [7, EOS, PAD, PAD, PAD]),
        ([5, 5, 0, PAD], [0, 5, 5, EOS, PAD]),
    ],
)
def test_sorted_responses_by_hand(prompt, target):
    assert TASK.sorted_responses(torch.tensor([prompt])).tolist() == [target]


@pytest.mark.parametrize(
    "response, mask",
    [
        ([1, 3, EOS, PAD, PAD], [1, 1, 1, 0, 0]),
        ([EOS, 3, 4, 5, 6], [1, 0, 0, 0, 0]),  # EOS first: a response of length 0
        ([1, 2, 3, 4, EOS], [1, 1, 1, 1, 1]),  # EOS last
        ([1, 2, 3, 4, 5], [1, 1, 1, 1, 1]),  # no EOS at all: every position counts
        ([1, EOS, 2, EOS, 3], [1, 1, 0, 0, 0]),  # only the first EOS ends it
        ([PAD, PAD, EOS, 1, 1], [1, 1, 1, 0, 0]),  # PAD is an ordinary (wrong) token before EOS
    ],
)
def test_response_mask(response, mask):
    got = TASK.response_mask(torch.tensor([[response]]))
    assert got.dtype == torch.float32 and got.tolist() == [[mask]]


def test_response_mask_any_leading_shape():
    responses = torch.tensor([[[EOS, 1, 1], [1, 1, 1]], [[1, EOS, EOS], [1, 1, EOS]]])
    assert TASK.response_mask(responses).tolist() == [[[1, 0, 0], [1, 1, 1]], [[1, 1, 0], [1, 1, 1]]]
    assert TASK.response_mask(torch.tensor([1, EOS, 2])).tolist() == [1, 1, 0]


# prompt 3 1 (target 1 3 EOS) and responses, with the per-position reward by hand
HAND = [
    ([1, 3, EOS, PAD, PAD], [1, 1, 1, 0, 0]),  # exact
    ([1, 3, EOS, 7, 7], [1, 1, 1, 0, 0]),  # exact: what follows EOS is ignored
    ([1, 3, 5, EOS, PAD], [1, 1, 0, 0, 0]),  # too long: the EOS comes late
    ([1, EOS, EOS, PAD, PAD], [1, 0, 0, 0, 0]),  # too short
    ([3, 1, EOS, PAD, PAD], [0, 0, 1, 0, 0]),  # wrong order, right length
    ([1, 3, PAD, PAD, PAD], [1, 1, 0, 0, 0]),  # no EOS: PADs past the end earn nothing
    ([EOS, 3, EOS, PAD, PAD], [0, 0, 0, 0, 0]),  # ends at once: the rest is masked out
]


def test_per_position_rewards_and_rewards_by_hand():
    prompts = torch.tensor([[3, 1, PAD, PAD]])
    responses = torch.tensor([[r for r, _ in HAND]])
    dense = TASK.per_position_rewards(prompts, responses)
    assert dense.dtype == torch.float32 and dense.shape == (1, len(HAND), 5)
    assert dense.tolist() == [[w for _, w in HAND]]
    assert TASK.rewards(prompts, responses).tolist() == [[3.0, 3.0, 2.0, 1.0, 1.0, 2.0, 0.0]]
    exact = VariableLengthSortingTask(vocab_size=10, max_length=4, min_length=1, reward="exact_match")
    assert exact.rewards(prompts, responses).tolist() == [[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
    assert TASK.is_correct(prompts, responses).tolist() == [[True, True, False, False, False, False, False]]
    assert (dense * TASK.response_mask(responses) == dense).all()  # never a reward outside the mask


def _loop_reference(task, prompt: list[int], response: list[int]) -> list[float]:
    """Per-position reward written with plain lists: the definition, one position at a time."""
    numbers = [t for t in prompt if t != task.pad]
    target = sorted(numbers) + [task.eos]
    out = []
    ended = False
    for j, token in enumerate(response):
        out.append(1.0 if not ended and j < len(target) and token == target[j] else 0.0)
        ended = ended or token == task.eos
    return out


def _random_responses(task, prompts, trial, gen):
    """A mixture: correct answers with a few positions resampled (EOS and PAD included), and random tokens."""
    target = task.sorted_responses(prompts).unsqueeze(1).expand(-1, trial, -1)
    noise = torch.randint(0, task.n_tokens, target.shape, generator=gen)
    resample = torch.rand(target.shape, generator=gen) < torch.rand(target.shape[:2] + (1,), generator=gen)
    return torch.where(resample, noise, target)


@pytest.mark.parametrize("vocab, max_length, min_length", [(10, 4, 1), (3, 6, 2), (5, 5, 5)])
def test_vectorised_equals_loop_reference(vocab, max_length, min_length):
    task = VariableLengthSortingTask(vocab, max_length, min_length)
    gen = torch.Generator().manual_seed(vocab)
    prompts = task.sample_prompts(40, gen)
    responses = _random_responses(task, prompts, 6, gen)
    dense = task.per_position_rewards(prompts, responses)
    want = [[_loop_reference(task, p.tolist(), r.tolist()) for r in group] for p, group in zip(prompts, responses)]
    assert dense.tolist() == want
    lengths = task.prompt_lengths(prompts)
    exact = torch.tensor(
        [
            [
                float(
                    _loop_reference(task, p.tolist(), r.tolist())
                    == [1.0] * (int(n) + 1) + [0.0] * (max_length - int(n))
                )
                for r in group
            ]
            for p, group, n in zip(prompts, responses, lengths)
        ]
    )
    assert torch.equal(task.is_correct(prompts, responses).float(), exact)
    assert 0 < exact.mean() < 1  # both kinds occur
    for j in range(responses.shape[-1]):  # the mask, position by position
        before = (responses[..., :j] == task.eos).any(dim=-1)
        assert torch.equal(task.response_mask(responses)[..., j], (~before).float())


def test_validation_messages():
    with pytest.raises(ValueError, match=r"prompts must have shape \[batch, max_length\] = \[batch, 4\]"):
        TASK.rewards(torch.zeros(2, 5, dtype=torch.long), torch.zeros(2, 1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="padded at the end only"):
        TASK.sorted_responses(torch.tensor([[1, PAD, 2, PAD]]))
    with pytest.raises(ValueError, match="EOS = 10 is not allowed in a prompt"):
        TASK.sorted_responses(torch.tensor([[1, EOS, PAD, PAD]]))
    with pytest.raises(
        ValueError,
        match=r"responses must have shape \[batch, trial, response_length\] = "
        r"\[1, trial, 5\]; got \[1, 5\] \(add a trial axis",
    ):
        TASK.rewards(torch.tensor([[1, 2, PAD, PAD]]), torch.tensor([[1, 2, EOS, PAD, PAD]]))
    with pytest.raises(ValueError, match=r"responses tokens must lie in \[0, n_tokens\) = \[0, 12\)"):
        TASK.rewards(torch.tensor([[1, 2, PAD, PAD]]), torch.tensor([[[1, 2, 12, PAD, PAD]]]))


def test_format():
    prompt = torch.tensor([3, 1, PAD, PAD])
    assert TASK.format(prompt) == "3 1"
    assert TASK.format(prompt, torch.tensor([1, 3, EOS, 4, 4])) == "3 1 -> 1 3 <eos>  (sorted ✓)"
    assert TASK.format(prompt, torch.tensor([1, 3, 3, 4, 4])) == "3 1 -> 1 3 3 4 4  (not sorted ✗)"


def test_works_with_the_tiny_policy_and_masked_losses():
    task = VariableLengthSortingTask(vocab_size=5, max_length=4, min_length=1)
    gen = torch.Generator().manual_seed(0)
    model = TinyEncoderDecoder(task.n_tokens, 8, task.prompt_length, task.response_length, generator=gen)
    prompts = task.sample_prompts(6, gen)
    responses = sample_responses(model, prompts, 3, generator=gen)
    mask = task.response_mask(responses)
    assert task.rewards(prompts, responses).shape == (6, 3)
    log_probs = compute_log_probs(prompts, responses, model)
    masked = aggregate(log_probs, mask, "token_mean")
    # the same mean of up to 6 x 3 x 4 log-probs in another order (tests/tolerances.py), all negative: no
    # cancellation, so the mean's own size is the scale
    assert_close_f32(masked.item(), float((log_probs * mask).sum().detach() / mask.sum()), terms=72)

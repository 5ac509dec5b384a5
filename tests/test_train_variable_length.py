"""``train`` on responses of different lengths: the task's mask reaches the loss and the aggregation matters."""

import math

import pytest
import torch

from minirl import ALGORITHMS, TrainConfig, evaluate, make_model, train
from minirl.train import response_mask
from tests.tolerances import assert_close_f32
from toy_envs import SortingTask, VariableLengthSortingTask

TASK = VariableLengthSortingTask(vocab_size=4, max_length=3, min_length=1)  # 6 token ids, 4 response positions


def quick(algo="grpo", steps=20, task=TASK, eval_every=0):
    return TrainConfig(
        task=task,
        algo=algo,
        steps=steps,
        seed=0,
        progress=False,
        eval_every=eval_every,
        eval_prompts=200,
        prompts_per_step=32,
        group_size=8,
    )


def test_model_is_sized_by_the_task():
    model = make_model(TASK)
    assert model(TASK.sample_prompts(5)).shape == (5, TASK.response_length, TASK.n_tokens) == (5, 4, 6)
    assert make_model(SortingTask(5, 3))(torch.zeros(2, 3, dtype=torch.long)).shape == (2, 3, 5)


def test_response_mask_only_for_tasks_that_have_one():
    responses = torch.tensor([[[2, TASK.eos, 1, 1], [0, 1, 3, 3]]])
    assert response_mask(TASK, responses).tolist() == [[[1, 1, 0, 0], [1, 1, 1, 1]]]
    assert response_mask(SortingTask(5, 3), responses[..., :3]) is None


def test_grpo_learns_variable_length_sorting():
    _, h = train(quick("grpo", steps=100, eval_every=50))
    first, last = h.evals[0]["greedy_exact"], h.evals[-1]["greedy_exact"]
    assert first < 0.15 and last > 0.85, (first, last)
    assert all(1.0 <= x <= TASK.response_length for x in h["response_length"])
    assert all(math.isfinite(v) for r in h.records for v in r.values())


def test_aggregations_coincide_at_equal_lengths_and_differ_with_a_mask():
    """All responses of SortingTask have the same length, so sequence_mean == token_mean; with EOS they do not."""

    def first_grad_norm(task, aggregation):
        algo = ALGORITHMS["grpo"].with_(aggregation=aggregation, kl_coef=0.0, entropy_coef=0.0, inner_epochs=1)
        return train(quick(algo, steps=1, task=task))[1]["grad_norm"][0]  # the loss itself is ≈ 0 at ρ = 1

    fixed = SortingTask(vocab_size=4, length=3)
    # the same gradient, averaged in another order (tests/tolerances.py): 32 x 8 responses of 3 tokens (768) and
    # the toy model's width-32 dot products at 3 positions and its 6-token softmax, forward and backward: ~1,000
    assert_close_f32(first_grad_norm(fixed, "sequence_mean"), first_grad_norm(fixed, "token_mean"), terms=1_000)
    assert first_grad_norm(TASK, "sequence_mean") != pytest.approx(first_grad_norm(TASK, "token_mean"), rel=1e-3)


class EndsAtOnce(VariableLengthSortingTask):
    """A task whose mask says every response ended at its first token."""

    def response_mask(self, responses):
        mask = torch.zeros(responses.shape)
        mask[..., 0] = 1.0
        return mask


def test_tokens_after_the_end_get_no_gradient():
    task = EndsAtOnce(vocab_size=4, max_length=3, min_length=1)
    model = make_model(task)
    before = model.decode_weights.detach().clone()
    algo = ALGORITHMS["grpo"].with_(kl_coef=0.0, entropy_coef=0.0, inner_epochs=1)
    train(quick(algo, steps=1, task=task), model)
    after = model.decode_weights.detach()
    assert not torch.equal(after[0], before[0])  # the one real position learns
    assert torch.equal(after[1:], before[1:])  # masked positions: gradient exactly 0, Adam does not move them


def test_evaluate_on_variable_lengths():
    class Oracle(torch.nn.Module):
        def forward(self, prompts):
            return torch.nn.functional.one_hot(TASK.sorted_responses(prompts), TASK.n_tokens).float() * 50

    ev = evaluate(Oracle(), TASK, 300)
    assert ev == {"greedy_exact": 1.0, "sampled_exact": 1.0, "greedy_position_acc": 1.0, "sampled_position_acc": 1.0}

    class AlwaysEos(torch.nn.Module):
        def forward(self, prompts):
            return torch.nn.functional.one_hot(torch.full((prompts.shape[0], 4), TASK.eos), TASK.n_tokens).float() * 50

    ev = evaluate(AlwaysEos(), TASK, 3000)
    # EOS at position 0 is never right (every prompt has >= 1 number): 0 of n + 1 target positions
    assert ev["greedy_exact"] == 0.0 and ev["greedy_position_acc"] == 0.0

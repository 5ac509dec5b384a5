"""A warm start that imitates a random demonstrator's distribution rather than its draws (``targets="choices"``):
``choice_demonstrations`` marks the choices at each reply's first token, ``CausalLMPolicy.score`` reads their
log-probabilities, ``choice_log_likelihood`` averages them. On the tiny Llama and the text maze.

Tolerances: the same log-probability from two float32 forward passes of different shapes (the KV cache shared or
not) agrees to ~1e-6 (a few ulps through 4 blocks); ``abs=1e-4`` leaves a hundred times that.
"""

import dataclasses

import numpy as np
import pytest
import torch

from minirl.episodes import choice_demonstrations, demonstrations
from minirl.lm.models import make_tiny_lm
from minirl.lm.recipes import calculator_recipe, maze_recipe
from minirl.lm.warm_start import sft_warm_start
from minirl.losses import choice_log_likelihood, sft_loss
from toy_envs.calculator import CalculatorTask
from toy_envs.maze_layout import ACTION_NAMES
from toy_envs.maze_text import TextMazeTask

TASK = TextMazeTask()


@pytest.fixture(scope="module")
def policy():
    return make_tiny_lm(0, max_new_tokens=5)


def _first_id(policy, text: str) -> int:
    return policy.tokenizer(text, add_special_tokens=False)["input_ids"][0]


def test_the_choices_sit_at_each_replys_first_token_and_are_the_permitted_moves(policy):
    prompts = TASK.eval_prompts(5)
    demos, choices = choice_demonstrations(policy, TASK, prompts, torch.Generator().manual_seed(3))
    same = demonstrations(policy, TASK, prompts, torch.Generator().manual_seed(3))
    assert torch.equal(demos.tokens, same.tokens) and torch.equal(demos.mask, same.mask)  # the same walks
    assert choices.shape[:3] == demos.tokens.shape and 2 <= choices.shape[3] <= 4  # the most moves a cell permits
    for b in range(len(prompts)):
        (episode,) = demos.answers[b]
        at = (choices[b, 0] >= 0).any(dim=-1).nonzero().flatten().tolist()  # the positions given choices
        assert len(at) == episode.turns
        for pos, cell, reply in zip(at, episode.cells, episode.replies):
            permitted = [ACTION_NAMES[a] for a in np.flatnonzero(TASK.maze.action_mask(cell))]
            given = [i for i in choices[b, 0, pos].tolist() if i >= 0]
            assert given == [_first_id(policy, m) for m in permitted]
            assert int(demos.tokens[b, 0, pos]) == _first_id(policy, reply) and reply in permitted
            assert pos == 0 or demos.mask[b, 0, pos - 1] == 0  # a reply's first token: the env's turn before it


class _SharedFirstToken(TextMazeTask):
    def demonstration_choices(self, env, /):
        return ["right", "rightmost"]

    def demonstrate(self, env, generator, /):
        return "right"


class _NotAChoice(TextMazeTask):
    def demonstrate(self, env, generator, /):
        return "down and out"


def test_tasks_without_choices_or_with_ambiguous_ones_are_refused(policy):
    with pytest.raises(ValueError, match=r"demonstration_choices\(env\).*CalculatorTask has none"):
        choice_demonstrations(policy, CalculatorTask(), CalculatorTask().eval_prompts(1), None)
    with pytest.raises(ValueError, match=r"must begin with different tokens"):
        choice_demonstrations(policy, _SharedFirstToken(), TASK.eval_prompts(1), None)
    with pytest.raises(ValueError, match=r"replied 'down and out', not one of its choices"):
        choice_demonstrations(policy, _NotAChoice(), TASK.eval_prompts(1), None)


def test_score_reads_each_choices_log_probability_with_or_without_the_shared_cache(policy):
    prompts = TASK.eval_prompts(3)
    demos, choices = choice_demonstrations(policy, TASK, prompts, torch.Generator().manual_seed(1))
    shared = policy.score(prompts, demos, temperature=1.0, choices=choices)
    whole = policy.score(prompts, demos, temperature=1.0, choices=choices, share_prompt_cache=False)
    given = choices >= 0
    assert shared.choices.shape == choices.shape and float(shared.choices.detach()[~given].abs().max()) == 0.0
    assert torch.allclose(shared.choices[given], whole.choices[given], atol=1e-4)
    # the drawn token is one of the choices: its log-probability is the one score gives the token itself
    drawn = choices == demos.tokens.unsqueeze(-1)  # [batch, 1, pos, k]
    at = drawn.any(dim=-1)
    assert torch.allclose(shared.choices[drawn], shared.log_probs[at], atol=1e-4)
    assert bool((shared.choices.detach()[given] < 0).all())  # log-probabilities of real tokens
    shared.choices[given].sum().backward()  # the choices carry gradient into the model
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in policy.parameters())
    policy.zero_grad(set_to_none=True)
    with pytest.raises(ValueError, match=r"choices must have shape \[batch, trial, pos, k\]"):
        policy.score(prompts, demos, temperature=1.0, choices=choices[:, :, :-1])


class _Forced(TextMazeTask):
    """The uniform walker, except that its first reply is ``first``."""

    def __init__(self, first: str):
        super().__init__()
        self.first = first

    def demonstrate(self, env, generator, /):
        return self.first if env.episode.turns == 0 else super().demonstrate(env, generator)


def test_the_first_moves_log_likelihood_is_the_mean_over_every_move_the_walker_could_draw(policy):
    """ℓ at the first reply's first token = the mean over the permitted moves m of log π(m | prompt), each read
    from a walk whose first move is m: the choices' ids and positions are the walks' own."""
    prompt = TASK.prompt(TASK.start_cells[4])
    permitted = [ACTION_NAMES[a] for a in np.flatnonzero(TASK.maze.action_mask(prompt.start))]
    assert len(permitted) >= 2
    demos, choices = choice_demonstrations(policy, TASK, [prompt], torch.Generator().manual_seed(0))
    with torch.no_grad():
        scores = policy.score([prompt], demos, temperature=1.0, choices=choices)
        mixed = choice_log_likelihood(scores.log_probs, scores.choices, choices)
        each = []
        for move in permitted:
            forced = demonstrations(policy, _Forced(move), [prompt], torch.Generator().manual_seed(0))
            each.append(float(policy.score([prompt], forced, temperature=1.0).log_probs[0, 0, 0]))
    assert float(mixed[0, 0, 0]) == pytest.approx(sum(each) / len(each), abs=1e-4)
    assert len({round(v, 3) for v in each}) > 1  # the moves differ, so the mean is not any one draw's
    later = ~(choices >= 0).any(dim=-1)  # elsewhere the demonstrated tokens' own log-probabilities
    assert torch.equal(mixed[later], scores.log_probs[later])


def test_choice_log_likelihood_by_hand():
    log_probs = torch.tensor([[[-0.5, -0.7, -0.9]]])  # [batch 1, trial 1, pos 3]
    choices = torch.tensor([[[[4, 7, -1], [-1, -1, -1], [1, 2, 3]]]])  # 2 choices, none, 3 choices
    choice_lp = torch.tensor([[[[-1.0, -3.0, 0.0], [0.0, 0.0, 0.0], [-0.3, -0.6, -1.2]]]])
    out = choice_log_likelihood(log_probs, choice_lp, choices)
    assert out.flatten().tolist() == pytest.approx([-2.0, -0.7, -0.7], abs=1e-6)  # float32 means of 2-3 numbers
    # the loss of a uniform policy over the choices is log |C| at those tokens: its floor there
    uniform = torch.log(torch.tensor([[[[0.5, 0.5, 1.0], [1.0, 1.0, 1.0], [1 / 3, 1 / 3, 1 / 3]]]]))
    floor = sft_loss(choice_log_likelihood(torch.zeros(1, 1, 3), uniform, choices), aggregation="sequence_mean")
    assert float(floor) == pytest.approx((np.log(2) + 0 + np.log(3)) / 3, abs=1e-5)
    with pytest.raises(ValueError, match=r"choices and choice_log_probs must have shape \[batch, trial, pos, k\]"):
        choice_log_likelihood(log_probs, choice_lp[..., :2], choices)


def test_the_maze_recipes_imitate_the_walkers_choices_and_others_refuse_what_has_none(policy):
    assert maze_recipe("tiny").sft_targets == "choices" and maze_recipe("pretrained").sft_targets == "choices"
    assert calculator_recipe("tiny").sft_targets == "draws"  # its demonstrator does not draw uniformly
    with pytest.raises(ValueError, match=r"sft_targets must be 'draws' or 'choices'; got 'soft'"):
        dataclasses.replace(maze_recipe("tiny"), sft_targets="soft")
    with pytest.raises(ValueError, match=r"targets must be one of \['draws', 'choices'\]; got 'soft'"):
        sft_warm_start(policy, TASK, steps=1, targets="soft", progress=False)
    with pytest.raises(ValueError, match=r"CalculatorTask has none"):
        sft_warm_start(policy, CalculatorTask(), steps=1, targets="choices", progress=False)


def test_a_warm_start_on_the_walkers_choices_lowers_its_loss_towards_the_floor():
    student = make_tiny_lm(2, max_new_tokens=5)
    history = sft_warm_start(
        student, TASK, steps=12, prompts_per_step=4, learning_rate=3e-3, progress=False, targets="choices"
    )
    losses = [r["loss"] for r in history.records]
    # from ~log(99) = 4.6 nats a token for the random model to well below it (the floor, log |C| at each move's
    # first token and 0 elsewhere, is about a quarter of a nat a token for these words)
    assert losses[0] > 3.5 and losses[-1] < 0.6 * losses[0], losses

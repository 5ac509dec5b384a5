"""minirl.bench.critic_fit: the critic's fit before RL under several fitting knobs, on walks sampled once.

Tolerances: ``Critic.fit`` and ``Critic.advantages`` run the same float32 operations on the same features, so they
agree exactly; a linear head's errors on synthetic features are compared with each other, not with a number.
"""

import dataclasses

import pytest
import torch

from minirl.bench.critic_fit import SETTINGS, fit_values, main, sample_batches, values_against_exact
from minirl.critic import Critic, token_features
from minirl.episodes import sample_rollout
from minirl.lm.models import make_tiny_lm
from minirl.lm.recipes import lm_algorithm, maze_recipe
from minirl.results import load
from toy_envs.maze_text import TextMazeTask, uniform_success

TASK = TextMazeTask()


@pytest.fixture(scope="module")
def policy():
    return make_tiny_lm(0, max_new_tokens=5, hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128)


def test_fit_on_features_is_advantages_on_the_rollout(policy):
    prompts = TASK.eval_prompts(2)
    rollout = sample_rollout(policy, TASK, prompts, 3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    rewards = torch.tensor([[10.0, 0.0, 10.0], [0.0, 0.0, 10.0]])
    algo = lm_algorithm("ppo", value_learning_rate=1e-2)
    one, two = Critic.for_policy(policy, algo), Critic.for_policy(policy, algo)
    for _ in range(3):  # three batches: the second and third start from a fitted head
        a, m = one.advantages(policy, prompts, rollout, rewards)
        b, n = two.fit(token_features(policy, prompts, rollout), rollout.mask, rewards)
        assert torch.equal(a, b) and m == n
    assert torch.equal(one.head.linear.weight, two.head.linear.weight)
    with pytest.raises(ValueError, match=r"mask must be \[batch, trial, pos\] = \[2, 3, "):
        two.fit(token_features(policy, prompts, rollout), rollout.mask[..., 1:], rewards)


def test_the_batches_are_the_recipes_walks_and_the_start_states(policy):
    recipe = maze_recipe("tiny").with_(prompts_per_step=2, group_size=3)
    batches, start = sample_batches(policy, TASK, recipe, 2, torch.Generator().manual_seed(0))
    assert len(batches) == 2
    for features, mask, rewards in batches:
        assert features.shape[:2] == (2, 3) and features.shape[:-1] == mask.shape and rewards.shape == (2, 3)
    assert start.shape == (len(TASK.start_cells), 64)
    # the same seed draws the same walks; another seed other ones
    again, _ = sample_batches(policy, TASK, recipe, 2, torch.Generator().manual_seed(0))
    other, _ = sample_batches(policy, TASK, recipe, 2, torch.Generator().manual_seed(1))
    assert torch.equal(batches[1][0], again[1][0]) and not torch.equal(batches[1][0], other[1][0])


def test_the_errors_are_against_the_uniform_walkers_exact_returns():
    exact = torch.as_tensor(10 * uniform_success(TASK.maze)[TASK.start_cells]).float()
    same = values_against_exact(TASK, exact)
    assert same["max_error"] == pytest.approx(0.0, abs=1e-6) and same["mean_error"] == pytest.approx(0.0, abs=1e-6)
    assert same["exact_uniform"]["11"] == pytest.approx(10 * float(uniform_success(TASK.maze)[11]))
    shifted = exact.clone()
    shifted[0] += 2.0
    off = values_against_exact(TASK, shifted)
    assert off["max_error"] == pytest.approx(2.0, abs=1e-5)
    assert off["mean_error"] == pytest.approx(2.0 / len(TASK.start_cells), abs=1e-5)
    assert off["learned"]["0"] == pytest.approx(float(exact[0]) + 2.0)


def _linear_batches(n: int, seed: int, weight: torch.Tensor) -> list:
    """Batches of one model token an episode whose return is ``weight · features``: a linear head can fit them
    exactly, so its error measures only how far its fitting knobs let it go."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        features = torch.randn(4, 8, 1, weight.numel(), generator=gen)
        out.append((features, torch.ones(4, 8, 1), features[:, :, 0] @ weight))
    return out


def test_the_step_size_and_the_steps_bound_how_far_the_head_goes():
    weight = torch.randn(16, generator=torch.Generator().manual_seed(1)) * 2
    batches = _linear_batches(10, 0, weight)
    start = torch.randn(10, 16, generator=torch.Generator().manual_seed(2))
    truth = start @ weight
    errors = {}
    for lr, epochs in SETTINGS:
        algo = dataclasses.replace(lm_algorithm("ppo"), value_learning_rate=lr, value_epochs=epochs)
        critic = Critic(16, algo)
        fit = fit_values(critic, batches, start)
        errors[(lr, epochs)] = float((fit["values"] - truth).abs().mean())
        # Adam moves a weight by about its step size a step: never beyond a few times lr × the steps taken
        assert float(critic.head.linear.weight.detach().abs().max()) <= 3 * lr * epochs * len(batches)
        assert len(fit["value_loss"]) == 10
    preset, longer, larger, both = (errors[s] for s in SETTINGS)
    assert SETTINGS[0] == (1e-3, 8)  # the PPO preset's knobs, the first row of the probe
    assert (lm_algorithm("ppo").value_learning_rate, lm_algorithm("ppo").value_epochs) == SETTINGS[0]
    assert both < larger < preset and longer < preset
    assert both < 0.25 * preset  # ten times the step and eight times the steps fit far better


def test_a_quick_run_saves_every_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    assert main(["--quick", "--save", "bench_critic_fit_quick"]) == 0
    f = load("bench_critic_fit_quick")["figures"]
    (run,) = f["runs"]
    assert run["seed"] == 0 and run["warm"]["steps"] == 2
    assert [(x["value_learning_rate"], x["value_epochs"]) for x in run["fits"]] == list(SETTINGS)
    assert [x["adam_steps"] for x in run["fits"]] == [e for _, e in SETTINGS]  # one batch in a quick run
    for x in run["fits"]:
        assert set(x["learned"]) == {str(c) for c in TASK.start_cells} and x["max_error"] >= x["mean_error"] >= 0

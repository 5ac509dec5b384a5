"""minirl.bench.critic_fit: the critic's fit before RL under several fitting knobs, on walks sampled once.

Tolerances: ``Critic.fit`` and ``Critic.advantages`` run the same float32 operations on the same features, so they
agree exactly; a linear head's errors on synthetic features are compared with each other, not with a number.
"""

import dataclasses

import pytest
import torch

from minirl.bench.critic_fit import (
    LEAST_SQUARES,
    SETTINGS,
    Batch,
    exact_turn_values,
    fit_values,
    least_squares_fit,
    least_squares_head,
    main,
    sample_batches,
    turn_error,
    turn_starts,
    values_against_exact,
)
from minirl.critic import Critic, token_features
from minirl.episodes import sample_rollout
from minirl.lm.models import make_tiny_lm
from minirl.lm.recipes import lm_algorithm, maze_recipe
from minirl.results import load
from toy_envs.maze import uniform_policy
from toy_envs.maze_text import TextMazeTask, uniform_success
from toy_envs.maze_values import expected_returns

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
    for features, mask, rewards, episodes in batches:
        assert features.shape[:2] == (2, 3) and features.shape[:-1] == mask.shape and rewards.shape == (2, 3)
        assert [len(row) for row in episodes] == [3, 3]
        assert rewards.tolist() == [[e.reward for e in row] for row in episodes]
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
        out.append(Batch(features, torch.ones(4, 8, 1), features[:, :, 0] @ weight, []))
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


def test_turn_starts_are_the_first_model_token_after_the_environments():
    mask = torch.tensor([[[1, 1, 0, 0, 1, 1, 0, 1, 0, 0]]])
    assert turn_starts(mask).int().tolist() == [[[1, 0, 0, 0, 1, 0, 0, 1, 0, 0]]]
    assert turn_starts(torch.zeros(1, 1, 4)).sum() == 0


def test_exact_turn_values_follow_each_walk_cell_by_cell(policy):
    recipe = maze_recipe("tiny").with_(prompts_per_step=2, group_size=3)
    (batch,), _ = sample_batches(policy, TASK, recipe, 1, torch.Generator().manual_seed(0))
    values, starts = exact_turn_values(TASK, batch)
    table = expected_returns(TASK.maze, uniform_policy(TASK.maze))  # V[k, cell], k the moves left
    steps = TASK.maze.max_steps
    for b, row in enumerate(batch.episodes):
        for t, episode in enumerate(row):
            at = values[b, t][starts[b, t]]
            assert len(at) == episode.turns >= 1
            want = [table[steps - k, episode.cells[k]] for k in range(episode.turns)]
            assert at.tolist() == pytest.approx(want, abs=1e-6)  # float64 table stored as float32
            assert float(values[b, t][~starts[b, t]].abs().sum()) == 0.0
    # a mask that joins two replies into one run no longer matches the walk's turns
    joined = batch.mask.clone()
    b, t = next((b, t) for b, row in enumerate(batch.episodes) for t, e in enumerate(row) if e.turns >= 2)
    first, second = torch.nonzero(starts[b, t]).flatten()[:2].tolist()
    joined[b, t, first:second] = 1.0
    with pytest.raises(ValueError, match=r"turns but its mask marks"):
        exact_turn_values(TASK, batch._replace(mask=joined))


def test_least_squares_recovers_a_linear_value_that_adam_only_approaches():
    weight = torch.randn(16, generator=torch.Generator().manual_seed(1)) * 2
    batches = _linear_batches(10, 0, weight)
    start = torch.randn(10, 16, generator=torch.Generator().manual_seed(2))
    rows = torch.cat([b.features.reshape(-1, 16) for b in batches])
    head = least_squares_head(rows + 3.0, torch.cat([b.rewards.reshape(-1) for b in batches]))
    # shifted features: the bias absorbs the shift (−3 Σ w); the ridge 1e-3 shrinks w by about 1e-3 relatively
    with torch.no_grad():
        got = head(start + 3.0)
    truth = start @ weight
    assert float((got - truth).abs().max()) < 0.02 * float(truth.abs().max())
    algo = lm_algorithm("ppo")
    adam = fit_values(Critic(16, algo), batches, start)["values"]
    assert float((adam - truth).abs().mean()) > 10 * float((got - truth).abs().mean())
    with pytest.raises(ValueError, match=r"features must be \[row, hidden\] and targets \[row\]"):
        least_squares_head(rows, torch.zeros(3))
    with pytest.raises(ValueError, match="ridge must be > 0"):
        least_squares_head(rows, rows[:, 0], ridge=0.0)


def test_least_squares_on_exact_values_scores_zero_where_the_features_name_the_state(policy):
    """Features that are the one-hot of (moves left, cell) hold the exact value linearly: the closed-form fit on
    the exact targets scores ~0 over the turns, the one on the returns does not (returns are 0 or 10)."""
    recipe = maze_recipe("tiny").with_(prompts_per_step=4, group_size=4)
    batches, _ = sample_batches(policy, TASK, recipe, 2, torch.Generator().manual_seed(0))
    steps, cells = TASK.maze.max_steps, TASK.maze.n_cells
    named = []
    for batch in batches:
        _, starts = exact_turn_values(TASK, batch)
        features = torch.zeros(*batch.mask.shape, (steps + 1) * cells)
        for b, row in enumerate(batch.episodes):
            for t, episode in enumerate(row):
                for k, pos in enumerate(torch.nonzero(starts[b, t]).flatten().tolist()):
                    features[b, t, pos, (steps - k) * cells + episode.cells[k]] = 1.0
        named.append(batch._replace(features=features))
    exact = least_squares_fit(TASK, named, "exact")
    returns = least_squares_fit(TASK, named, "returns")
    # the ridge (1e-3 on standardised one-hot columns) shrinks a rare state's weight by at most a few percent of 10
    assert turn_error(exact, TASK, named) < 0.1
    assert turn_error(returns, TASK, named) > turn_error(exact, TASK, named)
    with pytest.raises(ValueError, match="target must be one of"):
        least_squares_fit(TASK, named, "values")


def test_a_quick_run_saves_every_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    assert main(["--quick", "--save", "bench_critic_fit_quick"]) == 0
    f = load("bench_critic_fit_quick")["figures"]
    (run,) = f["runs"]
    assert run["seed"] == 0 and run["warm"]["steps"] == 2
    assert [(x["value_learning_rate"], x["value_epochs"]) for x in run["fits"]] == list(SETTINGS)
    assert [x["adam_steps"] for x in run["fits"]] == [e for _, e in SETTINGS]  # one batch in a quick run
    for x in run["fits"] + run["least_squares"]:
        assert set(x["learned"]) == {str(c) for c in TASK.start_cells} and x["max_error"] >= x["mean_error"] >= 0
        assert x["turn_error"] >= 0
    assert [x["target"] for x in run["least_squares"]] == list(LEAST_SQUARES)


def _fit_entry(value: float, **more) -> dict:
    cells = [str(c) for c in TASK.start_cells]
    return {
        "learned": dict.fromkeys(cells, value),
        "exact_uniform": dict.fromkeys(cells, 1.0),
        "max_error": abs(value - 1.0),
        "mean_error": abs(value - 1.0),
        **more,
    }


def test_the_report_adds_the_closed_form_heads_and_the_turn_error_only_where_recorded():
    from minirl.report._format import _load
    from minirl.report.agents import LEAST_SQUARES_LABELS, _critic_fit

    adam = {"value_learning_rate": 1e-3, "value_epochs": 8, "adam_steps": 80}
    stored = _load("bench_critic_fit")  # a record made before the closed-form heads: its provenance, other figures
    assert stored is not None
    figures = {"steps": 10, "recipe": {"prompts_per_step": 8, "group_size": 8}}
    old = {**stored, "figures": {**figures, "runs": [{"seed": 0, "fits": [{**adam, **_fit_entry(2.0)}]}]}}
    text = "\n".join(_critic_fit(old))
    assert "| seed 0: lr 0.001 × 8 a batch (80 Adam steps) |" in text
    assert "closed form" not in text and "mean error over turns" not in text and "bfloat16" not in text
    new = {**old, "figures": {**old["figures"], "recipe": {**old["figures"]["recipe"], "cpu_bfloat16": True}}}
    new["figures"]["runs"] = [
        {
            "seed": 0,
            "fits": [{**adam, **_fit_entry(2.0, turn_error=1.5)}],
            "least_squares": [
                _fit_entry(1.25, target="returns", turn_error=0.75),
                _fit_entry(1.0, target="exact", turn_error=0.125),
            ],
        }
    ]
    lines = "\n".join(_critic_fit(new)).splitlines()
    rows = [line for line in lines if line.startswith("| seed 0")]
    assert len(rows) == 3 and "bfloat16" in lines[0]
    assert rows[0].endswith("| 1.00 | 1.00 | 1.50 |")
    assert rows[1].startswith(f"| seed 0: {LEAST_SQUARES_LABELS['returns']} | 1.25 |")
    assert rows[1].endswith("| 0.25 | 0.25 | 0.75 |") and rows[2].endswith("| 0.00 | 0.00 | 0.12 |")

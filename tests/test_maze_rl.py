"""Tests for minirl/maze_rl.py: RL on the maze with the sorting code's ``policy_loss``.

Reference numbers come from the Gymnasium env itself (``Maze.reset`` / ``Maze.step``), from the
exact dynamic programme ``expected_returns`` and from hand-written softmax gradients.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from minirl.maze_policy import MazePolicy, ValueModel, exact_return, greedy_success, rollout
from minirl.maze_rl import (
    MAZE_ALGORITHMS,
    MazeTrainConfig,
    leave_one_out_baseline,
    maze_advantages,
    surrogate_loss,
    train_maze,
    value_loss,
)
from tests.tolerances import assert_close_f32
from toy_envs.maze import Maze, uniform_policy
from toy_envs.maze_values import expected_returns

RIGHT, LEFT, UP, DOWN = range(4)
SHORT_LAYOUT = ["S.G", "..."]  # the goal is 2 moves away: episodes end early, so there is padding


def random_policy(maze: Maze, seed: int = 0, scale: float = 1.5) -> MazePolicy:
    """A non-uniform policy with random logits (so trajectories vary and some reach G)."""
    policy = MazePolicy(maze)
    with torch.no_grad():
        policy.logits_table.copy_(scale * torch.randn(maze.n_cells, 4, generator=torch.Generator().manual_seed(seed)))
    return policy


def path_policy(maze: Maze, moves: dict[int, int], strength: float = 5.0) -> MazePolicy:
    """A policy that prefers ``moves[cell]`` in each listed cell."""
    policy = MazePolicy(maze)
    with torch.no_grad():
        for cell, action in moves.items():
            policy.logits_table[cell, action] = strength
    return policy


OPTIMAL = {0: RIGHT, 1: RIGHT, 2: DOWN, 5: DOWN, 8: DOWN, 11: DOWN}  # S -> G in 6 moves


def short_run(method: str, **kwargs) -> MazeTrainConfig:
    return MazeTrainConfig(method=method, progress=False, **kwargs)


# ----------------------------------------------------------------------------------------------
# The models
# ----------------------------------------------------------------------------------------------


def test_policy_starts_uniform_over_permitted_moves():
    maze = Maze()
    policy = MazePolicy(maze)
    probs = policy.probs()
    assert probs.shape == (maze.n_cells, 4)
    floor = ~maze.walls
    # float32 softmaxes over at most 4 moves against the exact 1/k (tests/tolerances.py)
    assert_close_f32(probs[torch.from_numpy(floor)].double(), torch.from_numpy(uniform_policy(maze)[floor]), terms=4)
    assert (probs.numpy()[~maze.permitted_mask() & floor[:, None]] == 0.0).all()  # exactly 0, not tiny
    assert_close_f32(probs.sum(dim=1), torch.ones(maze.n_cells), terms=4)
    V = expected_returns(maze, probs)
    assert V[6, maze.start] == pytest.approx(10 / 81, rel=1e-6)
    assert exact_return(maze, policy) == pytest.approx(10 / 81, rel=1e-6)


def test_policy_forward_masks_non_permitted_moves():
    maze = Maze()
    policy = random_policy(maze)
    cells = torch.tensor([[0, 8], [11, 14]])
    logits = policy(cells)
    assert logits.shape == (2, 2, 4)
    permitted = torch.tensor(maze.permitted_mask())[cells]
    assert torch.isneginf(logits[~permitted]).all() and torch.isfinite(logits[permitted]).all()
    # cell 8 (walls left, edge right): only up and down
    p8 = torch.softmax(policy(torch.tensor(8)), dim=-1).detach()
    assert p8[RIGHT] == 0 and p8[LEFT] == 0 and p8[UP] + p8[DOWN] == pytest.approx(1.0)
    # log_prob and entropy agree with the softmax formula
    lp = policy.log_prob(torch.tensor([8, 8]), torch.tensor([UP, DOWN]))
    torch.testing.assert_close(lp.exp(), p8[[UP, DOWN]])
    expected_h = -(p8[[UP, DOWN]] * p8[[UP, DOWN]].log()).sum()
    torch.testing.assert_close(policy.entropy(torch.tensor(8)).detach(), expected_h)
    assert MazePolicy(maze).entropy(torch.tensor(0)).item() == pytest.approx(math.log(2))  # S: right or down


def test_value_model_table_and_zero_budget():
    maze = Maze()
    value_model = ValueModel(maze)
    assert value_model.table.shape == (maze.max_steps + 1, maze.n_cells)
    with torch.no_grad():
        value_model.table.fill_(3.0)
        value_model.table[2, 8] = 7.0
    out = value_model(torch.tensor([8, 8, 0]), torch.tensor([2, 0, 6]))
    assert out.tolist() == [7.0, 0.0, 3.0]  # V(., k = 0) = 0 whatever the table says


# ----------------------------------------------------------------------------------------------
# Rollouts
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout, max_steps", [(None, 6), (SHORT_LAYOUT, 4)])
def test_rollout_agrees_with_gymnasium_env(layout, max_steps):
    maze = Maze(layout, max_steps=max_steps)
    policy = random_policy(maze, seed=1) if layout is None else MazePolicy(maze)
    if layout is None:
        with torch.no_grad():  # lean towards the shortest path so that some episodes succeed
            for cell, action in OPTIMAL.items():
                policy.logits_table[cell, action] += 2.0
    n = 300
    batch = rollout(maze, policy, n, torch.Generator().manual_seed(0))
    for name in ("cells", "steps_left", "actions", "log_probs", "next_cells", "rewards", "dones", "mask"):
        assert getattr(batch, name).shape == (n, max_steps), name
    assert batch.returns.shape == (n,)
    assert 0 < batch.success.sum() < n  # both outcomes occur

    env = Maze(layout, max_steps=max_steps)
    for i in range(n):
        cell, info = env.reset()
        t, done = 0, False
        while not done:
            assert batch.mask[i, t] == 1.0
            assert batch.cells[i, t] == cell and batch.steps_left[i, t] == info["steps_left"]
            cell, reward, terminated, truncated, info = env.step(int(batch.actions[i, t]))
            assert batch.next_cells[i, t] == cell
            assert batch.rewards[i, t] == reward and batch.dones[i, t] == float(terminated)
            done = terminated or truncated
            t += 1
        assert (batch.mask[i, t:] == 0).all() and (batch.rewards[i, t:] == 0).all()
        assert batch.returns[i] == (10.0 if terminated else 0.0)
        assert bool(batch.success[i]) == terminated


def test_rollout_bookkeeping_and_log_probs():
    maze = Maze(SHORT_LAYOUT, max_steps=4)
    policy = random_policy(maze, seed=2, scale=0.5)
    batch = rollout(maze, policy, 500, torch.Generator().manual_seed(1))
    assert batch.cells.dtype == batch.actions.dtype == torch.long
    assert (batch.mask[:, 0] == 1).all()
    assert (batch.mask[:, 1:] <= batch.mask[:, :-1]).all()  # once over, always over
    assert (batch.dones <= batch.mask).all() and (batch.dones.sum(dim=1) <= 1).all()
    assert (batch.cells[:, 1:] == batch.next_cells[:, :-1]).all()
    ended_early = batch.mask.sum(dim=1) < 4
    assert ended_early.any() and (batch.success[ended_early]).all()  # only the goal ends an episode early
    torch.testing.assert_close(batch.steps_left[0], torch.tensor([4, 3, 2, 1]))
    assert torch.isfinite(batch.log_probs).all()  # padding moves are permitted moves too
    torch.testing.assert_close(batch.log_probs, policy.log_prob(batch.cells, batch.actions).detach())
    assert not batch.log_probs.requires_grad


def test_rollout_is_deterministic_given_the_generator():
    maze = Maze()
    policy = MazePolicy(maze)
    a = rollout(maze, policy, 64, torch.Generator().manual_seed(5))
    b = rollout(maze, policy, 64, torch.Generator().manual_seed(5))
    c = rollout(maze, policy, 64, torch.Generator().manual_seed(6))
    assert torch.equal(a.actions, b.actions) and torch.equal(a.cells, b.cells)
    assert not torch.equal(a.actions, c.actions)


def test_uniform_rollout_success_rate_matches_dynamic_programming():
    maze = Maze()
    batch = rollout(maze, MazePolicy(maze), 40_000, torch.Generator().manual_seed(0))
    p = 1 / 81
    assert float(batch.success.float().mean()) == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / 40_000))


# ----------------------------------------------------------------------------------------------
# Advantages and losses
# ----------------------------------------------------------------------------------------------


def test_reinforce_gradient_equals_hand_computed_score_function():
    """∇_logits L = −(1/(N·T)) Σ_i Σ_t m_it G_it (onehot(a_it) − π(·|s_it)) on the row of s_it."""
    maze = Maze(SHORT_LAYOUT, max_steps=4)
    policy = random_policy(maze, seed=3, scale=1.0)
    batch = rollout(maze, policy, 6, torch.Generator().manual_seed(4))
    gamma = 0.9
    adv, targets = maze_advantages(batch, "reinforce", gamma=gamma)
    assert targets is None

    probs = policy.probs().numpy().astype(np.float64)
    expected = np.zeros((maze.n_cells, 4))
    n, horizon = batch.actions.shape
    for i in range(n):
        rewards = batch.rewards[i].numpy()
        length = int(batch.mask[i].sum())
        for t in range(length):
            g = sum(gamma ** (u - t) * rewards[u] for u in range(t, length))  # reward-to-go by hand
            assert adv[i, t].item() == pytest.approx(g, rel=1e-6)
            s, a = int(batch.cells[i, t]), int(batch.actions[i, t])
            score = -probs[s].copy()
            score[a] += 1.0  # ∇_logits log softmax = onehot − π (0 on masked moves since π = 0 there)
            expected[s] -= g * score / (n * horizon)
        assert (adv[i, length:] == 0).all()

    loss, metrics = surrogate_loss(policy, batch, adv, clip_eps=None)
    loss.backward()
    # float32 against the float64 sum by hand (tests/tolerances.py): each entry adds up to n x horizon = 24 terms
    # G·score / (n·horizon) and a 4-move softmax; the terms' size, G ≤ 10 (the goal's reward) over n·horizon, is
    # the scale (an entry whose terms cancel is off by as much as the others)
    scale = max(np.abs(expected).max(), 10.0 / (n * horizon))
    assert_close_f32(policy.logits_table.grad.double(), torch.from_numpy(expected), terms=n * horizon + 4, scale=scale)
    assert metrics["ratio_mean"] == pytest.approx(1.0)


def test_leave_one_out_baseline_by_hand():
    returns = torch.tensor([[10.0, 10.0], [0.0, 0.0], [4.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    b = leave_one_out_baseline(returns, mask)
    torch.testing.assert_close(b[:, 0], torch.tensor([2.0, 7.0, 5.0]))  # mean of the two others
    torch.testing.assert_close(b[:2, 1], torch.tensor([0.0, 10.0]))  # episode 2 is over at t = 1


def test_reinforce_baseline_advantage_is_return_minus_mean_of_the_others():
    maze = Maze(SHORT_LAYOUT, max_steps=4)
    batch = rollout(maze, random_policy(maze, seed=7), 40, torch.Generator().manual_seed(5))
    adv, _ = maze_advantages(batch, "reinforce_baseline")
    returns_to_go, _ = maze_advantages(batch, "reinforce")
    for i, t in [(i, t) for i in range(40) for t in range(4) if batch.mask[i, t]]:
        others = [j for j in range(40) if j != i and batch.mask[j, t]]
        baseline = float(np.mean([returns_to_go[j, t].item() for j in others])) if others else 0.0
        # a mean of 39 returns of at most 10 (the goal's reward), in float32 (tests/tolerances.py)
        assert_close_f32(adv[i, t].item(), returns_to_go[i, t].item() - baseline, terms=40, scale=10.0)
    assert (adv[batch.mask == 0] == 0).all()


def test_gae_bookkeeping_with_a_random_value_table():
    maze = Maze(SHORT_LAYOUT, max_steps=4)
    batch = rollout(maze, random_policy(maze, seed=5), 200, torch.Generator().manual_seed(2))
    value_model = ValueModel(maze)
    with torch.no_grad():
        value_model.table.copy_(torch.rand(value_model.table.shape, generator=torch.Generator().manual_seed(0)) * 10)
    # λ = 1: the value terms telescope, so A_t + V(s_t) is the reward-to-go exactly
    adv, targets = maze_advantages(batch, "ppo", gamma=1.0, lam=1.0, value_model=value_model)
    returns_to_go, _ = maze_advantages(batch, "reinforce")
    # the same sums by another route (tests/tolerances.py): over 4 steps, rewards and values of at most 10 each,
    # added and subtracted twice per step
    assert_close_f32(targets, returns_to_go, terms=16, scale=20.0)
    # λ = 0: the one-step TD error, by hand from the table
    adv0, _ = maze_advantages(batch, "ppo", gamma=0.9, lam=0.0, value_model=value_model)
    table = value_model.table.detach()
    for i, t in [(i, t) for i in range(20) for t in range(4) if batch.mask[i, t]]:
        s, k, s_next = int(batch.cells[i, t]), int(batch.steps_left[i, t]), int(batch.next_cells[i, t])
        bootstrap = 0.0 if batch.dones[i, t] or k == 1 else float(table[k - 1, s_next])
        delta = float(batch.rewards[i, t]) + 0.9 * bootstrap - float(table[k, s])
        # r + γ V' − V in float32: three terms of at most 10 each (tests/tolerances.py)
        assert_close_f32(adv0[i, t].item(), delta, terms=3, scale=10.0)
    assert (adv[batch.mask == 0] == 0).all()


def test_value_loss_is_half_mean_squared_error_on_real_moves():
    maze = Maze(SHORT_LAYOUT, max_steps=4)
    batch = rollout(maze, random_policy(maze, seed=6), 50, torch.Generator().manual_seed(3))
    targets = torch.full_like(batch.rewards, 2.0)
    expected = 0.5 * 4.0  # V = 0 everywhere, target 2 on every real move
    assert value_loss(ValueModel(maze), batch, targets).item() == pytest.approx(expected)


def test_ppo_surrogate_clips_after_a_big_step():
    maze = Maze()
    policy = MazePolicy(maze)
    batch = rollout(maze, policy, 64, torch.Generator().manual_seed(0))
    adv = torch.ones_like(batch.rewards) * batch.mask
    with torch.no_grad():
        policy.logits_table[0, RIGHT] += 3.0  # π(right | S) grows from 1/2 to ≈ 0.95: ratio ≈ 1.9
    loss, metrics = surrogate_loss(policy, batch, adv, clip_eps=0.2)
    right_from_start = ((batch.cells == 0) & (batch.actions == RIGHT)).float().sum().item()
    assert right_from_start > 0
    # ρ > 1 + ε only on the moves "right from S"; every other move keeps ρ = 1
    assert metrics["clip_frac_high"] == pytest.approx(right_from_start / batch.mask.sum().item(), abs=1e-6)
    assert metrics["clip_frac_low"] == 0.0


# ----------------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------------


def test_greedy_success():
    maze = Maze()
    assert greedy_success(maze, MazePolicy(maze)) == 0.0  # argmax ties -> "right" forever, then bounce
    assert greedy_success(maze, path_policy(maze, OPTIMAL)) == 1.0
    detour = {**OPTIMAL, 2: LEFT}
    assert greedy_success(maze, path_policy(maze, detour)) == 0.0
    assert exact_return(maze, path_policy(maze, OPTIMAL, strength=30.0)) == pytest.approx(10.0, abs=1e-4)


# ----------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------

RECORD_KEYS = {
    "step",
    "episodes",
    "reward",
    "success_rate",
    "entropy",
    "loss",
    "value_loss",
    "clip_frac",
    "exact_return",
    "wall_time",
}


@pytest.mark.parametrize("method, steps", [("reinforce_baseline", 60), ("ppo", 40)])
def test_training_solves_the_maze(method, steps):
    policy, value_model, history = train_maze(short_run(method, steps=steps, seed=0))
    assert (value_model is not None) == (method == "ppo")
    assert set(history.metrics) == RECORD_KEYS
    assert set(history.evals[-1]) == {"step", "episodes", "greedy_success", "exact_return"}
    maze = Maze()
    assert greedy_success(maze, policy) == 1.0 == history.evals[-1]["greedy_success"]
    assert exact_return(maze, policy) > 9.0
    assert history["exact_return"][-1] == exact_return(maze, policy)
    assert history["episodes"][-1] == steps * 32
    assert history["entropy"][0] > history["entropy"][-1]  # the policy becomes decisive
    assert history.last("success_rate", 5) > 0.8
    if method == "ppo":
        assert history["value_loss"][-1] < history["value_loss"].max()
        assert value_model(torch.tensor(maze.start), torch.tensor(6)).item() > 8.0  # V(S, 6) ≈ 10
    else:
        assert (history["value_loss"] == 0).all() and (history["clip_frac"] == 0).all()


def test_plain_reinforce_improves_on_the_uniform_policy():
    _, value_model, history = train_maze(short_run("reinforce", steps=30, seed=1))
    assert value_model is None
    assert history["exact_return"][-1] > 10 * (10 / 81)


def test_training_is_deterministic():
    def records(seed):
        _, _, history = train_maze(short_run("ppo", steps=12, eval_every=4, seed=seed))
        return [{k: v for k, v in r.items() if k != "wall_time"} for r in history.records], history.evals

    assert records(3) == records(3)
    assert records(3) != records(4)


@pytest.mark.parametrize("method", MAZE_ALGORITHMS)
def test_no_nan_over_seeds(method):
    for seed in range(5):
        _, _, history = train_maze(
            short_run(method, steps=15, seed=seed, learning_rate=1.0, gamma=0.9, normalize_advantages=True)
        )
        values = [v for r in history.records + history.evals for v in r.values()]
        assert all(math.isfinite(v) for v in values), (method, seed)


def test_training_on_another_layout():
    _, _, history = train_maze(short_run("ppo", layout=SHORT_LAYOUT, max_steps=4, steps=20))
    assert history.evals[-1]["greedy_success"] == 1.0
    assert history.evals[-1]["exact_return"] > 9.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "dqn"}, "method must be one of"),
        ({"steps": 0}, "steps must be an int >= 1"),
        ({"episodes_per_step": 2.5}, "episodes_per_step must be an int"),
        ({"learning_rate": 0.0}, "learning_rate must be a finite number > 0"),
        ({"value_learning_rate": float("nan")}, "value_learning_rate"),
        ({"gamma": 1.5}, r"gamma must be in \[0, 1\]"),
        ({"lam": -0.1}, r"lam must be in \[0, 1\]"),
        ({"clip_eps": -0.2}, "clip_eps must be a finite number > 0"),
        ({"ppo_epochs": 0}, "ppo_epochs must be an int >= 1"),
        ({"eval_every": -1}, "eval_every must be an int >= 0"),
        ({"method": "reinforce_baseline", "episodes_per_step": 1}, "episodes_per_step must be >= 2"),
    ],
)
def test_bad_config_raises_clearly(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MazeTrainConfig(**kwargs)


def test_bad_layout_raises_from_the_maze():
    with pytest.raises(ValueError, match="layout"):
        train_maze(short_run("ppo", layout=["S#G"], steps=1))

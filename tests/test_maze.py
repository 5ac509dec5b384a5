"""Tests for toy_envs/maze.py and maze_values.py: the worked example's numbers, the Gymnasium API, rendering, bad input.

The expected values come from hand calculation or from an independent brute-force enumerator
that only uses ``Maze.reset`` / ``Maze.step`` (never the dynamic programme under test).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import gymnasium
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from matplotlib.axes import Axes

from toy_envs.maze import ACTION_NAMES, DEFAULT_LAYOUT, Maze, draw_maze, uniform_policy
from toy_envs.maze_values import expected_q_values, expected_returns, monte_carlo_returns

matplotlib.use("Agg")

RIGHT, LEFT, UP, DOWN = range(4)
START, TWO_BEFORE, ONE_BEFORE, GOAL = 0, 8, 11, 14  # cells of the default 5x3 maze


# ----------------------------------------------------------------------------------------------
# An independent reference: enumerate every action sequence through the environment itself
# ----------------------------------------------------------------------------------------------


def brute_force_value(env: Maze, action_probs: Callable[[int, dict], np.ndarray]) -> float:
    """E[return] from reset(), summing P(actions) * return over every action sequence.

    ``action_probs(obs, info) -> [4]`` gives the policy; each prefix is replayed from reset(),
    so only the environment's own step() decides where the agent goes.  At most 4**max_steps leaves.
    """

    def explore(prefix: tuple[int, ...], prob: float) -> float:
        obs, info = env.reset()
        ret, done = 0.0, False
        for action in prefix:
            obs, reward, terminated, truncated, info = env.step(action)
            ret += reward
            done = terminated or truncated
        if done:
            return prob * ret
        probs = action_probs(obs, info)
        return sum(explore(prefix + (a,), prob * probs[a]) for a in range(4) if probs[a] > 0)

    return explore((), 1.0)


def uniform_from_mask(obs: int, info: dict) -> np.ndarray:
    """The worked example's policy, built from info["action_mask"] only."""
    mask = info["action_mask"].astype(float)
    return mask / mask.sum()


def random_policy(n_cells: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(4), size=n_cells)


# ----------------------------------------------------------------------------------------------
# The worked example
# ----------------------------------------------------------------------------------------------


def test_default_layout_is_the_worked_example():
    maze = Maze()
    assert maze.layout == DEFAULT_LAYOUT
    assert (maze.n_rows, maze.n_cols, maze.n_cells) == (5, 3, 15)
    assert (maze.start, maze.goal) == (START, GOAL)
    assert maze.max_steps == 6 and maze.goal_reward == 10.0
    assert maze.shortest_path_length() == 6
    path = maze.shortest_path()
    assert path[0] == START and path[-3:] == [TWO_BEFORE, ONE_BEFORE, GOAL]
    # one move before: up, left, down permitted (down enters G); two before: only up and down
    assert maze.action_mask(ONE_BEFORE).tolist() == [0, 1, 1, 1]
    assert maze.next_cell(ONE_BEFORE, DOWN) == GOAL
    assert maze.action_mask(TWO_BEFORE).tolist() == [0, 0, 1, 1]
    assert maze.next_cell(TWO_BEFORE, DOWN) == ONE_BEFORE
    assert maze.walls.sum() == 4 and maze.is_wall(6) and not maze.is_wall(8)
    assert ACTION_NAMES == ("right", "left", "up", "down")


def test_worked_example_values():
    maze = Maze()
    V = expected_returns(maze, uniform_policy(maze))
    assert V.shape == (7, 15) and V.dtype == np.float64
    assert V[1, ONE_BEFORE] == pytest.approx(10 / 3)
    assert V[2, TWO_BEFORE] == pytest.approx(10 / 6)
    # By hand along the three shortest paths (right/down only), with the permitted-move counts
    # 0:2, 1:3, 2:2, 3:2, 4:3, 5:3, 8:2, 11:3  ->  V[6, start] = 10/81.
    assert V[6, START] == pytest.approx(10 / 81)
    assert np.all(V[0] == 0)
    assert np.all(V[:, GOAL] == 0)
    assert np.all(V[:, maze.walls] == 0)


def test_q_values_tell_which_way_to_go():
    maze = Maze()
    pi = uniform_policy(maze)
    Q = expected_q_values(maze, pi)
    V = expected_returns(maze, pi)
    assert Q.shape == (7, 15, 4)
    assert Q[1, ONE_BEFORE].tolist() == pytest.approx([0.0, 0.0, 0.0, 10.0])
    assert Q[2, TWO_BEFORE, DOWN] == pytest.approx(10 / 3)
    assert Q[2, TWO_BEFORE, UP] == 0.0
    np.testing.assert_allclose((pi * Q).sum(axis=2), V)


def test_dp_matches_brute_force_for_uniform_policy():
    maze = Maze()
    exact = brute_force_value(maze, uniform_from_mask)
    assert exact == pytest.approx(10 / 81)
    assert expected_returns(maze, uniform_policy(maze))[6, START] == pytest.approx(exact)


@pytest.mark.parametrize(
    "layout, max_steps",
    [(None, 6), (["S..", "...", "..G"], 5), (["S.#", ".#.", "..G"], 4)],
)
def test_dp_matches_brute_force_for_random_policies(layout, max_steps):
    maze = Maze(layout, max_steps=max_steps)
    pi = random_policy(maze.n_cells, seed=1)
    exact = brute_force_value(maze, lambda obs, info: pi[obs])
    assert exact > 0
    assert expected_returns(maze, pi)[max_steps, maze.start] == pytest.approx(exact)


def test_corridor_by_hand():
    # S . G with 2 steps: S can only go right (1 move); the middle cell goes left or right (1/2 each).
    maze = Maze(["S.G"], max_steps=2)
    pi = uniform_policy(maze)
    np.testing.assert_allclose(pi[:2], [[1, 0, 0, 0], [0.5, 0.5, 0, 0]])
    V = expected_returns(maze, pi)
    assert maze.shortest_path_length() == 2
    assert V[1, 1] == pytest.approx(5.0)
    assert V[1, 0] == 0.0
    assert V[2, 0] == pytest.approx(5.0)


def test_uniform_policy_rows():
    maze = Maze()
    pi = uniform_policy(maze)
    assert pi.shape == (15, 4)
    np.testing.assert_allclose(pi.sum(axis=1), 1.0)
    np.testing.assert_allclose(pi[ONE_BEFORE], [0, 1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(pi[TWO_BEFORE], [0, 0, 0.5, 0.5])
    np.testing.assert_allclose(pi[6], [0.25] * 4)  # a wall: no permitted move, documented as uniform


def test_torch_policy_is_accepted():
    maze = Maze()
    pi = uniform_policy(maze)
    V_torch = expected_returns(maze, torch.tensor(pi, dtype=torch.float32, requires_grad=True))
    assert isinstance(V_torch, np.ndarray) and V_torch.dtype == np.float64
    # float32 probabilities (each within half an ulp, 6e-8, of the float64 ones) in a float64 programme of 6 steps
    # whose terms are all positive: relative errors add, 6 x 6e-8 at most, under rtol
    np.testing.assert_allclose(V_torch, expected_returns(maze, pi), rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# Monte Carlo
# ----------------------------------------------------------------------------------------------


def test_monte_carlo_agrees_with_dp():
    maze = Maze()
    pi = uniform_policy(maze)
    est = monte_carlo_returns(maze, pi, n_episodes=50_000, seed=0)
    assert est.returns.shape == (50_000,)
    assert set(np.unique(est.returns)) <= {0.0, 10.0}
    assert est.mean == pytest.approx(est.returns.mean())
    assert est.stderr == pytest.approx(est.returns.std(ddof=1) / math.sqrt(50_000))
    assert abs(est.mean - 10 / 81) < 4 * est.stderr


def test_monte_carlo_from_another_cell_and_budget():
    maze = Maze()
    pi = random_policy(maze.n_cells, seed=3)
    exact = expected_returns(maze, pi)[5, 10]  # about 0.18
    est = monte_carlo_returns(maze, pi, start_cell=10, steps_left=5, n_episodes=20_000, seed=1)
    assert exact > 0.1
    assert abs(est.mean - exact) < 4 * est.stderr


def test_monte_carlo_is_seeded():
    maze = Maze()
    pi = uniform_policy(maze)
    a = monte_carlo_returns(maze, pi, n_episodes=2_000, seed=7)
    b = monte_carlo_returns(maze, pi, n_episodes=2_000, seed=7)
    c = monte_carlo_returns(maze, pi, n_episodes=2_000, seed=8)
    np.testing.assert_array_equal(a.returns, b.returns)
    assert a.mean == b.mean
    assert not np.array_equal(a.returns, c.returns)


def test_monte_carlo_never_takes_zero_probability_moves():
    # Always "down" from the start: the agent walks into the left-column dead end and never scores.
    maze = Maze()
    always_down = np.tile([0.0, 0.0, 0.0, 1.0], (maze.n_cells, 1))
    assert monte_carlo_returns(maze, always_down, n_episodes=500).mean == 0.0
    path = np.tile([0.0, 0.0, 0.0, 1.0], (maze.n_cells, 1))
    path[[0, 1]] = [1.0, 0.0, 0.0, 0.0]  # right, right, then down x4 reaches G in exactly 6 moves
    est = monte_carlo_returns(maze, path, n_episodes=500)
    assert est.mean == 10.0 and est.stderr == 0.0


# ----------------------------------------------------------------------------------------------
# Gymnasium API
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("render_mode", [None, "rgb_array"])
def test_check_env_passes_without_warnings(render_mode):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(Maze(render_mode=render_mode))
    assert [str(w.message) for w in caught] == []


def test_reset_and_step_types():
    env = Maze()
    obs, info = env.reset(seed=0)
    assert type(obs) is int and obs == START
    assert set(info) == {"action_mask", "steps_left"}
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (4,)
    assert info["steps_left"] == 6
    obs, reward, terminated, truncated, info = env.step(RIGHT)
    assert (obs, reward, terminated, truncated) == (1, 0.0, False, False)
    assert type(obs) is int and type(reward) is float
    assert type(terminated) is bool and type(truncated) is bool
    assert info["action_mask"].tolist() == [1, 1, 0, 1] and info["steps_left"] == 5
    assert env.step(np.int64(DOWN))[0] == 4
    assert env.step(torch.tensor(RIGHT))[0] == 5


def test_blocked_moves_stay_in_place_and_spend_a_step():
    env = Maze()
    env.reset()
    obs, _, _, _, info = env.step(UP)  # off the grid
    assert obs == START and info["steps_left"] == 5
    env.step(DOWN)  # cell 3
    obs, _, _, _, info = env.step(DOWN)  # into the wall at cell 6
    assert obs == 3 and info["steps_left"] == 3


def test_reaching_the_goal_terminates_with_reward_10():
    env = Maze()
    env.reset()
    rewards = []
    for action in (RIGHT, RIGHT, DOWN, DOWN, DOWN, DOWN):
        obs, reward, terminated, truncated, _ = env.step(action)
        rewards.append(reward)
    assert obs == GOAL and terminated and not truncated
    assert rewards == [0.0] * 5 + [10.0]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(RIGHT)


def test_running_out_of_steps_truncates():
    env = Maze()
    env.reset()
    for step in range(1, 7):
        obs, reward, terminated, truncated, info = env.step(LEFT)
        assert reward == 0.0 and not terminated
        assert truncated == (step == 6)
    assert info["steps_left"] == 0
    obs, info = env.reset()
    assert obs == START and info["steps_left"] == 6


def test_action_mask_of_corner_cells():
    maze = Maze()
    assert maze.action_mask(0).tolist() == [1, 0, 0, 1]  # top-left: right, down
    assert maze.action_mask(2).tolist() == [0, 1, 0, 1]  # top-right: left, down
    assert maze.action_mask(GOAL).tolist() == [0, 0, 1, 0]  # bottom-right: walls left, edge below
    mask = maze.permitted_mask()
    assert mask.shape == (15, 4) and mask.dtype == bool
    assert not mask[maze.walls].any()


def test_cell_coordinates():
    maze = Maze()
    assert maze.cell_to_rc(11) == (3, 2)
    assert maze.rc_to_cell(3, 2) == 11
    assert all(maze.rc_to_cell(*maze.cell_to_rc(c)) == c for c in range(maze.n_cells))


@pytest.mark.parametrize("action", [4, -1, 7, 1.5, "up", True, np.float64(1.0)])
def test_invalid_action_raises_with_the_valid_range(action):
    env = Maze()
    env.reset()
    with pytest.raises(ValueError, match=r"action must be an integer in \[0, 4\) \(0 right, 1 left"):
        env.step(action)
    assert env.cell == START and env.steps_left == 6  # nothing happened


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match=r"reset\(\) before step\(\)"):
        Maze().step(RIGHT)


def test_spec_rebuilds_the_same_maze():
    maze = Maze(["S.#", "..G"], max_steps=3, goal_reward=1.0)
    rebuilt = gymnasium.make(maze.spec).unwrapped
    assert rebuilt.layout == maze.layout
    assert (rebuilt.max_steps, rebuilt.goal_reward) == (3, 1.0)


# ----------------------------------------------------------------------------------------------
# Drawing
# ----------------------------------------------------------------------------------------------


def test_rgb_array_render():
    env = Maze(render_mode="rgb_array")
    env.reset()
    figures_before = plt.get_fignums()
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.shape[0] > 100
    assert frame.min() < 100 < frame.max()  # not a blank image
    assert plt.get_fignums() == figures_before  # no leaked figures
    env.step(DOWN)
    assert not np.array_equal(env.render(), frame)  # the agent moved


def test_render_without_render_mode_warns_and_returns_none():
    env = Maze()
    env.reset()
    with pytest.warns(UserWarning, match="rgb_array"):
        assert env.render() is None


def test_draw_maze_with_values_and_policy():
    maze = Maze()
    pi = uniform_policy(maze)
    V = expected_returns(maze, pi)
    ax = draw_maze(maze, values=V[6], policy=pi, title="uniform policy", agent=4)
    try:
        assert isinstance(ax, Axes)
        assert ax.get_title() == "uniform policy"
        assert len(ax.get_xticks()) == 0 and len(ax.get_yticks()) == 0
        texts = [t.get_text() for t in ax.texts]
        assert "S" in texts and "G" in texts and "3.09" in texts  # V[6, 8] = 3.086...
        assert len(ax.figure.axes) == 2  # the axes and its colorbar
    finally:
        plt.close(ax.figure)


def test_draw_maze_plain_on_given_axes():
    fig, ax = plt.subplots()
    try:
        assert draw_maze(Maze(), ax=ax) is ax
        assert ax.get_title()  # a default title
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------------------------
# Bad input: each mistake gets a clear message
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "layout, error, match",
    [
        (["..G"], ValueError, r"exactly one 'S' \(start\); found 0"),
        (["S.S", "..G"], ValueError, r"exactly one 'S' \(start\); found 2"),
        (["S.."], ValueError, r"exactly one 'G' \(goal\); found 0"),
        (["SGG"], ValueError, r"exactly one 'G' \(goal\); found 2"),
        (["S..", ".G"], ValueError, r"same length.*row 0 has 3 characters but row 1 has 2"),
        (["S.x", "..G"], ValueError, r"row 0, column 2 has unknown character 'x'"),
        (["S#G"], ValueError, r"cannot be reached"),
        ("S.G", TypeError, r"list of strings"),
        ([], TypeError, r"non-empty list of strings"),
        (["S.G", 3], TypeError, r"layout row 1 must be a str"),
    ],
)
def test_bad_layouts(layout, error, match):
    with pytest.raises(error, match=match):
        Maze(layout)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"max_steps": 0}, ValueError, r"max_steps must be an int >= 1; got 0"),
        ({"max_steps": -3}, ValueError, r"max_steps must be an int >= 1; got -3"),
        ({"max_steps": 2.5}, TypeError, r"max_steps must be an int >= 1; got float"),
        ({"goal_reward": "10"}, TypeError, r"goal_reward must be a number"),
        ({"goal_reward": float("nan")}, ValueError, r"goal_reward must be finite"),
        ({"render_mode": "human"}, ValueError, r"render_mode must be None or one of \['rgb_array'\]"),
    ],
)
def test_bad_constructor_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        Maze(**kwargs)


def _policy_with(change: Callable[[np.ndarray], None]) -> np.ndarray:
    pi = uniform_policy(Maze())
    change(pi)
    return pi


@pytest.mark.parametrize(
    "policy, match",
    [
        (np.full((15, 3), 1 / 3), r"policy must have shape \[n_cells, 4\] = \[15, 4\]; got \[15, 3\]"),
        (np.full((4, 15), 0.25), r"policy must have shape \[n_cells, 4\] = \[15, 4\]; got \[4, 15\]"),
        (np.full(4, 0.25), r"got \[4\] \(one row per cell"),
        (_policy_with(lambda p: p.__setitem__(4, [0.5, 0.0, 0.0, 0.0])), r"cell 4 .* sums to 0\.5"),
        (_policy_with(lambda p: p.__setitem__(1, [1.5, -0.5, 0.0, 0.0])), r"must be >= 0; cell 1, action 1"),
        (_policy_with(lambda p: p.__setitem__((2, 0), np.nan)), r"policy must be finite; cell 2"),
    ],
)
def test_bad_policies(policy, match):
    maze = Maze()
    with pytest.raises(ValueError, match=match):
        expected_returns(maze, policy)
    with pytest.raises(ValueError, match=match):
        monte_carlo_returns(maze, policy)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_episodes": 0}, ValueError, r"n_episodes must be an int >= 1; got 0"),
        ({"n_episodes": -5}, ValueError, r"n_episodes must be an int >= 1; got -5"),
        ({"start_cell": 6}, ValueError, r"start_cell 6 .* is a wall"),
        ({"start_cell": 15}, ValueError, r"start_cell must be an int in \[0, 14\]; got 15"),
        ({"steps_left": -1}, ValueError, r"steps_left must be an int >= 0; got -1"),
    ],
)
def test_bad_monte_carlo_arguments(kwargs, error, match):
    maze = Maze()
    with pytest.raises(error, match=match):
        monte_carlo_returns(maze, uniform_policy(maze), **kwargs)


def test_bad_arguments_elsewhere():
    maze = Maze()
    with pytest.raises(TypeError, match="maze must be a Maze"):
        expected_returns("maze", np.full((15, 4), 0.25))
    with pytest.raises(ValueError, match=r"cell must be an int in \[0, 14\]; got 15"):
        maze.action_mask(15)
    with pytest.raises(ValueError, match=r"action must be an integer in \[0, 4\)"):
        maze.next_cell(0, 4)
    values_message = r"values must have shape \[n_cells\] = \[15\]; got \[7, 15\].*V\[6\]"
    with pytest.raises(ValueError, match=values_message):
        draw_maze(maze, values=expected_returns(maze, uniform_policy(maze)))

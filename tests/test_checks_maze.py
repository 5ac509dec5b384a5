"""The maze notebook's exercise checks: the references pass, stubs say "not implemented yet", and
plausible wrong implementations are each caught with a message that names the mistake."""

from __future__ import annotations

import numpy as np
import pytest
from check_helpers import ALL_CHECKS, caught, run, stub

from minirl import checks
from minirl.checks import (
    check_bellman_backup,
    check_maze_reward,
    check_monte_carlo_estimate,
    reference_bellman_backup,
    reference_maze_reward,
    reference_monte_carlo_estimate,
    use_reference,
)
from toy_envs.maze import Maze, uniform_policy
from toy_envs.maze_values import expected_returns


def test_exports_and_fallback(capsys):
    assert {c.__name__ for c in ALL_CHECKS} <= set(checks.__all__)
    assert use_reference(stub, reference_bellman_backup, False) is reference_bellman_backup
    assert "minirl.checks.reference_bellman_backup" in capsys.readouterr().out


# ---- maze_reward ----------------------------------------------------------------------------------


def _enters(maze, cell, action):
    return cell != maze.goal and maze.next_cell(cell, action) == maze.goal


def _flat(maze, cell, action):
    nxt = cell + (1, -1, -maze.n_cols, maze.n_cols)[action]
    return nxt if 0 <= nxt < maze.n_cells else cell


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (lambda m, s, a: m.goal_reward, ["every move"]),
        (
            lambda m, s, a: -1.0 + (m.goal_reward if _enters(m, s, a) else 0.0),
            ["charges nothing for a step", "subtracted 1 per step"],
        ),
        (lambda m, s, a: m.goal_reward if _enters(m, s, a) else -1.0, ["charges nothing for a step", "not −1"]),
        (lambda m, s, a: m.goal_reward if _enters(m, s, a) else (0.5 if s == 0 else 0.0), ["expected 0", "leads to"]),
        (lambda m, s, a: m.goal_reward if s == m.goal else 0.0, ["from the goal", "arrives"]),
        (lambda m, s, a: m.goal_reward if m.next_cell(s, a) == m.goal else 0.0, ["from the goal", "cell == maze.goal"]),
        (lambda m, s, a: 1.0 if _enters(m, s, a) else 0.0, ["goal_reward, not 1"]),
        (lambda m, s, a: 10.0 if _enters(m, s, a) else 0.0, ["hard-coded 10"]),
        (lambda m, s, a: m.goal_reward if s != m.goal and m.next_cell(s, a) == 14 else 0.0, ["maze.goal", "14"]),
        (lambda m, s, a: m.goal_reward if s != m.goal and _flat(m, s, a) == m.goal else 0.0, ["wraps", "next_cell"]),
        (lambda m, s, a: 0.0, ["always 0"]),
        (lambda m, s, a: _enters(m, s, a), ["expected a number", "bool"]),
        (lambda m, s, a: [reference_maze_reward(m, s, a)], ["expected a number"]),
    ],
)
def test_maze_reward_mistakes(wrong, keywords, capsys):
    caught(check_maze_reward, wrong, capsys, *keywords)


def test_maze_reward_accepts_numpy_and_int(capsys):
    assert run(check_maze_reward, lambda m, s, a: np.float32(reference_maze_reward(m, s, a)), capsys)[0]
    assert run(check_maze_reward, lambda m, s, a: int(reference_maze_reward(m, s, a) * 2) / 2, capsys)[0]


# ---- bellman_backup -------------------------------------------------------------------------------


def _q(maze, values_next, *, terminal_next=True, reward=True, table=None):
    """[n_cells, 4]: r(s, a) + V_{k-1}(s'), the knobs as a learner might get them wrong."""
    nxt = maze.next_cell_table if table is None else table
    enters = nxt == maze.goal
    r = np.where(enters, maze.goal_reward, 0.0) if reward else 0.0
    future = np.asarray(values_next)[nxt]
    return r + (np.where(enters, 0.0, future) if terminal_next else future)


def _finish(maze, values):
    values = np.array(values, dtype=float)
    values[maze.goal] = 0.0
    return values


def max_backup(maze, policy, values_next):
    return _finish(maze, _q(maze, values_next).max(axis=1))


def mean_backup(maze, policy, values_next):
    return _finish(maze, _q(maze, values_next).mean(axis=1))


def no_terminal_backup(maze, policy, values_next):
    return (np.asarray(policy) * _q(maze, values_next, terminal_next=False)).sum(axis=1)


def no_reward_backup(maze, policy, values_next):
    return _finish(maze, (np.asarray(policy) * _q(maze, values_next, reward=False)).sum(axis=1))


def in_place_backup(maze, policy, values_next):
    values = values_next  # no copy: V_k overwrites V_{k-1} while it is still read
    for s in range(maze.n_cells):
        total = 0.0
        for a in range(4):
            nxt = maze.next_cell(s, a)
            total += policy[s][a] * (maze.goal_reward if nxt == maze.goal else values[nxt])
        values[s] = 0.0 if s == maze.goal else total
    return values


def gauss_seidel_backup(maze, policy, values_next):
    return in_place_backup(maze, policy, np.array(values_next, dtype=float))


def blocked_is_zero_backup(maze, policy, values_next):
    q = np.where(maze.permitted_mask(), _q(maze, values_next), 0.0)
    return _finish(maze, (np.asarray(policy) * q).sum(axis=1))


def walls_ignored_backup(maze, policy, values_next):
    table = np.empty((maze.n_cells, 4), dtype=int)
    for s in range(maze.n_cells):
        r, c = divmod(s, maze.n_cols)
        for a, (dr, dc) in enumerate(((0, 1), (0, -1), (-1, 0), (1, 0))):
            nr, nc = min(max(r + dr, 0), maze.n_rows - 1), min(max(c + dc, 0), maze.n_cols - 1)
            table[s, a] = nr * maze.n_cols + nc
    return _finish(maze, (np.asarray(policy) * _q(maze, values_next, table=table)).sum(axis=1))


def flat_backup(maze, policy, values_next):
    table = np.array([[_flat(maze, s, a) for a in range(4)] for s in range(maze.n_cells)])
    return _finish(maze, (np.asarray(policy) * _q(maze, values_next, table=table)).sum(axis=1))


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (max_backup, ["max over a", "optimal", "pi(a|s)"]),
        (mean_backup, ["equally", "pi(a|s)"]),
        (no_terminal_backup, ["terminal", "V_k(goal) = 0"]),
        (no_reward_backup, ["forgot the reward"]),
        (in_place_backup, ["in place", "V_{k-1}"]),
        (gauss_seidel_backup, ["V_k instead of V_{k-1}"]),
        (blocked_is_zero_backup, ["blocked", "s' = s", "value 0"]),
        (walls_ignored_backup, ["blocked", "into walls"]),
        (flat_backup, ["blocked", "wraps"]),
        (lambda m, pi, v: _q(m, v), ["shape", "sum over the moves"]),
        (lambda m, pi, v: expected_returns(m, pi), ["shape", "whole table"]),
        (lambda m, pi, v: "V", ["expected a numpy array"]),
    ],
)
def test_bellman_backup_mistakes(wrong, keywords, capsys):
    caught(check_bellman_backup, wrong, capsys, *keywords)


def test_bellman_backup_accepts_lists_and_loops(capsys):
    def loop(maze, policy, values_next):
        out = []
        for s in range(maze.n_cells):
            total = 0.0
            for a in range(4):
                nxt = maze.next_cell(s, a)
                total += policy[s, a] * (maze.goal_reward if nxt == maze.goal else values_next[nxt])
            out.append(0.0 if s == maze.goal else total)
        return out

    assert run(check_bellman_backup, loop, capsys)[0] is True


def test_reference_bellman_backup_rebuilds_expected_returns():
    maze = Maze()
    for pi in (uniform_policy(maze), np.random.default_rng(0).dirichlet(np.ones(4), size=maze.n_cells)):
        table = expected_returns(maze, pi)
        for k in range(1, maze.max_steps + 1):
            np.testing.assert_allclose(reference_bellman_backup(maze, pi, table[k - 1]), table[k])
    assert expected_returns(maze, uniform_policy(maze))[6, 0] == pytest.approx(10 / 81)


# ---- monte_carlo_estimate -------------------------------------------------------------------------


def mc_with_env(maze, policy, n_episodes, rng, *, sample="policy", stop=True, budget=0, reward=None, spread="se"):
    """The notebook's way, with the Gymnasium API, and the knobs a learner might get wrong."""
    returns = np.zeros(n_episodes)
    for i in range(n_episodes):
        cell = maze.start
        for _ in range(maze.max_steps + budget):
            if sample == "policy":
                action = rng.choice(4, p=policy[cell])
            elif sample == "uniform":
                action = rng.integers(4)
            elif sample == "argmax":
                action = int(np.argmax(policy[cell]))
            else:  # the global generator
                action = np.random.choice(4, p=policy[cell])
            cell = maze.next_cell(cell, action)
            if cell == maze.goal:
                returns[i] += maze.goal_reward if reward is None else reward
                if stop:
                    break
    se = {
        "se": returns.std(ddof=1) / np.sqrt(n_episodes),
        "std": returns.std(ddof=1),
        "var": returns.var(ddof=1),
        "var_n": returns.var(ddof=1) / n_episodes,
        "std_n": returns.std(ddof=1) / n_episodes,
        "ddof0": returns.std() / np.sqrt(n_episodes),
    }[spread]
    return returns.mean(), se


def mc_gym(maze, policy, n_episodes, rng):
    returns = []
    for _ in range(n_episodes):
        cell, info = maze.reset()
        total, done = 0.0, False
        while not done:
            cell, reward, terminated, truncated, info = maze.step(rng.choice(4, p=policy[cell]))
            total += reward
            done = terminated or truncated
        returns.append(total)
    return np.mean(returns), np.std(returns, ddof=1) / np.sqrt(n_episodes)


def test_monte_carlo_correct_versions_pass(capsys):
    assert run(check_monte_carlo_estimate, mc_gym, capsys)[0] is True
    assert run(check_monte_carlo_estimate, mc_with_env, capsys)[0] is True
    # a 0-d array is fine too
    assert run(
        check_monte_carlo_estimate, lambda *a: tuple(np.asarray(x) for x in reference_monte_carlo_estimate(*a)), capsys
    )[0]


@pytest.mark.parametrize(
    "knobs, keywords",
    [
        (dict(sample="uniform"), ["ignored the policy", "policy[cell]"]),
        (dict(sample="argmax"), ["most likely", "sample"]),
        (dict(stop=False), ["did not stop at the goal"]),
        (dict(budget=-1), ["one move too short", "max_steps"]),
        (dict(budget=1), ["one move too long", "max_steps"]),
        (dict(reward=10.0), ["hard-coded 10"]),
        (dict(spread="std"), ["standard deviation", "sqrt(n_episodes)"]),
        (dict(spread="var"), ["variance"]),
        (dict(spread="var_n"), ["square root"]),
        (dict(spread="std_n"), ["not by n_episodes"]),
        (dict(spread="ddof0"), ["ddof=0", "n − 1"]),
        (dict(sample="global"), ["did not draw from the rng"]),
    ],
)
def test_monte_carlo_mistakes(knobs, keywords, capsys):
    caught(check_monte_carlo_estimate, lambda *args: mc_with_env(*args, **knobs), capsys, *keywords)


def test_monte_carlo_other_mistakes(capsys):
    def fresh_rng(maze, policy, n, rng):
        rng.random()  # touches the rng, then draws from a new unseeded one
        return mc_with_env(maze, policy, n, np.random.default_rng())

    caught(check_monte_carlo_estimate, fresh_rng, capsys, "same seed", "rng")

    def no_break(maze, policy, n, rng):
        for _ in range(n):
            cell, _ = maze.reset()
            for _ in range(maze.max_steps + 1):
                cell, *_ = maze.step(rng.choice(4, p=policy[cell]))
        return 0.0, 0.0

    caught(check_monte_carlo_estimate, no_break, capsys, "RuntimeError", "terminated or truncated")
    caught(check_monte_carlo_estimate, lambda *a: reference_monte_carlo_estimate(*a)[0], capsys, "pair")
    caught(check_monte_carlo_estimate, lambda m, p, n, rng: (rng.random(), 0.1), capsys, "expected about")


def current_cell_backup(maze, policy, values_next):
    """The future term read at the cell s itself instead of the next cell s'."""
    nxt = maze.next_cell_table
    enters = nxt == maze.goal
    here = np.repeat(np.asarray(values_next, dtype=float)[:, None], 4, axis=1)
    q = np.where(enters, maze.goal_reward, 0.0) + np.where(enters, 0.0, here)
    return _finish(maze, (np.asarray(policy) * q).sum(axis=1))


def test_bellman_backup_future_of_the_current_cell(capsys):
    caught(check_bellman_backup, current_cell_backup, capsys, "NEXT cell", "values_next[maze.next_cell_table]")

"""What a policy is worth in the maze: exact expected returns by dynamic programming, and the same expectation
estimated by sampling episodes (Monte Carlo), as RL does. A policy is a ``[n_cells, 4]`` array of action
probabilities (``toy_envs.maze.validate_policy``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toy_envs._validate import check_int
from toy_envs.maze import Maze, _as_maze, validate_policy
from toy_envs.maze_layout import N_ACTIONS

__all__ = ["MonteCarloResult", "expected_q_values", "expected_returns", "monte_carlo_returns"]


def _dynamic_programming(maze: Maze, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Backward induction over the number of steps left; returns ``(V, Q)``, see expected_q_values."""
    nxt = maze.next_cell_table  # [n_cells, 4]
    reward = np.where(nxt == maze.goal, maze.goal_reward, 0.0)  # r(s, a)  [n_cells, 4]
    goes_on = nxt != maze.goal  # the goal is terminal: no value after it
    no_value = maze.walls.copy()
    no_value[maze.goal] = True  # nothing more to earn at the goal or in a wall
    V = np.zeros((maze.max_steps + 1, maze.n_cells))
    Q = np.zeros((maze.max_steps + 1, maze.n_cells, N_ACTIONS))
    for k in range(1, maze.max_steps + 1):
        Q[k] = reward + np.where(goes_on, V[k - 1][nxt], 0.0)
        Q[k][no_value] = 0.0
        V[k] = (pi * Q[k]).sum(axis=1)
    return V, Q


def expected_q_values(maze: Maze, policy: Any) -> np.ndarray:
    """Exact expected return of each first move: ``Q[k, s, a]``, float64 ``[max_steps + 1, n_cells, 4]``.

    ``Q[k, s, a]`` = expected return from cell ``s`` with ``k`` steps left when the first move is
    ``a`` and ``policy`` chooses the rest::

        Q[0, s, a] = 0
        Q[k, s, a] = r(s, a) + (0 if s' is the goal else V[k-1, s']),   s' = next_cell(s, a)

    with ``V`` from ``expected_returns``.  Rows of the goal and of walls are 0.
    """
    maze = _as_maze(maze)
    return _dynamic_programming(maze, validate_policy(maze, policy))[1]


def expected_returns(maze: Maze, policy: Any) -> np.ndarray:
    """Exact expected return under ``policy``: float64 ``V[k, s]``, shape ``[max_steps + 1, n_cells]``.

    ``policy``: array or tensor ``[n_cells, 4]`` of action probabilities per cell (see
    ``validate_policy``).  ``V[k, s]`` = expected return from cell ``s`` with ``k`` steps left,
    computed by dynamic programming from ``k = 0`` up::

        V[0, s] = 0
        V[k, s] = sum_a pi(a|s) * [ r(s, a) + (0 if s' is the goal else V[k-1, s']) ],  s' = next_cell(s, a)

    where ``r(s, a) = goal_reward`` if ``s'`` is the goal, else 0, and a non-permitted move stays
    (``s' = s``).  The goal is terminal, so ``V[k, goal] = 0``; wall cells are 0.
    With the default maze and ``uniform_policy``: ``V[1, 11] = 10/3``, ``V[2, 8] = 10/6``,
    ``V[6, start] = 10/81``.
    """
    maze = _as_maze(maze)
    return _dynamic_programming(maze, validate_policy(maze, policy))[0]


# ----------------------------------------------------------------------------------------------
# Monte Carlo estimate
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MonteCarloResult:
    """``mean`` +- ``stderr`` estimates the expected return; ``returns`` holds one return per episode."""

    mean: float
    stderr: float
    returns: np.ndarray = field(repr=False)

    @property
    def n_episodes(self) -> int:
        return len(self.returns)


def _action_cdf(pi: np.ndarray) -> np.ndarray:
    """Per-row cumulative probabilities ``[n_cells, 4]``, last column exactly 1 (zero rows -> uniform)."""
    sums = pi.sum(axis=1, keepdims=True)
    pi = np.where(sums > 0, pi, 1.0)
    cdf = np.cumsum(pi, axis=1)
    return cdf / cdf[:, -1:]


def monte_carlo_returns(
    maze: Maze,
    policy: Any,
    start_cell: int | None = None,
    steps_left: int | None = None,
    n_episodes: int = 1000,
    seed: int | np.random.Generator | None = 0,
) -> MonteCarloResult:
    """Estimate the expected return by playing ``n_episodes`` episodes with ``policy``.

    Args:
        maze: the maze (its dynamics are those of ``Maze.step``).
        policy: ``[n_cells, 4]`` action probabilities (see ``validate_policy``).
        start_cell: where the episodes start (default ``maze.start``); must not be a wall.
        steps_left: the step budget (default ``maze.max_steps``).
        n_episodes: number of episodes, >= 1.
        seed: seed of the ``numpy.random.Generator``; the same seed gives the same result.

    Returns:
        ``MonteCarloResult(mean, stderr, returns)`` with ``returns`` float64 ``[n_episodes]``,
        ``mean = returns.mean()`` and ``stderr = returns.std(ddof=1) / sqrt(n_episodes)``
        (NaN for a single episode).  ``mean`` should match
        ``expected_returns(maze, policy)[steps_left, start_cell]`` within a few ``stderr``.
    """
    maze = _as_maze(maze)
    pi = validate_policy(maze, policy)
    start = maze.start if start_cell is None else maze._check_cell(start_cell, "start_cell")
    if maze.walls[start]:
        raise ValueError(f"start_cell {start} (row, col) = {maze.cell_to_rc(start)} is a wall")
    horizon = maze.max_steps if steps_left is None else check_int("steps_left", steps_left, low=0)
    n = check_int("n_episodes", n_episodes, low=1)
    rng = np.random.default_rng(seed)

    cdf = _action_cdf(pi)
    cells = np.full(n, start, dtype=np.int64)
    playing = np.full(n, start != maze.goal)
    returns = np.zeros(n)
    for _ in range(horizon):
        u = rng.random(n)
        actions = (cdf[cells] <= u[:, None]).sum(axis=1)  # inverse-CDF sampling, [n]
        cells = np.where(playing, maze.next_cell_table[cells, actions], cells)
        arrived = playing & (cells == maze.goal)
        returns[arrived] += maze.goal_reward
        playing &= ~arrived
    stderr = float(returns.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return MonteCarloResult(mean=float(returns.mean()), stderr=stderr, returns=returns)

"""The maze's two tables and its episodes: what ``minirl.maze_rl``'s loop trains and samples.

``MazePolicy`` holds one row of 4 logits per cell (π_θ(a | cell), only the permitted moves), ``ValueModel`` one
value per (steps left, cell) (V_φ, for PPO's GAE). Both are tables, as small as the problem, so
``expected_returns(maze, policy.probs())`` gives the exact expected return of a learned policy at every step
(``exact_return``). ``rollout`` samples a batch of episodes, ``EpisodeBatch``: every per-step tensor is
``[episode, time]`` with time = max_steps, and a mask marks the real moves.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from minirl.utils import check_positive_ints, load_torch, save_torch, write_json
from toy_envs.maze import Maze
from toy_envs.maze_values import expected_returns

__all__ = ["EpisodeBatch", "MazePolicy", "ValueModel", "exact_return", "greedy_route", "greedy_success", "rollout"]


# ----------------------------------------------------------------------------------------------
# The two models: tables
# ----------------------------------------------------------------------------------------------


class MazePolicy(nn.Module):
    """π_θ(a | cell) = softmax over the permitted moves of a learned logit table ``[n_cells, 4]``.

    The logits start at 0, so the initial policy is uniform over the permitted moves.  A move
    that is not permitted gets logit −inf, hence probability exactly 0: the agent never wastes
    a move on a wall.  (The policy ignores the steps left: the best move does not depend on it
    here, and a small table learns faster.)  Wall cells, never visited, get a uniform row so that
    every row is a proper distribution.
    """

    allowed: torch.Tensor  # [n_cells, 4] bool: the permitted moves (every move from a wall cell), a buffer

    def __init__(self, maze: Maze) -> None:
        super().__init__()
        permitted = torch.tensor(maze.permitted_mask())
        walls = torch.tensor(maze.walls.copy())
        self.register_buffer("allowed", permitted | walls[:, None])  # [n_cells, 4] bool
        self.logits_table = nn.Parameter(torch.zeros(maze.n_cells, 4))

    def forward(self, cells: torch.Tensor) -> torch.Tensor:
        """cells ``[...]`` (long) -> masked logits ``[..., 4]`` (−inf on non-permitted moves)."""
        return self.logits_table[cells].masked_fill(~self.allowed[cells], -math.inf)

    def log_prob(self, cells: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """log π(a | cell) of the given moves: cells, actions ``[...]`` -> ``[...]``."""
        log_p = torch.log_softmax(self(cells), dim=-1)
        return log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1)

    def entropy(self, cells: torch.Tensor) -> torch.Tensor:
        """H(π(· | cell)) = −Σ_a π log π in nats: ``[...]`` -> ``[...]`` (0 · log 0 counts as 0)."""
        log_p = torch.log_softmax(self(cells), dim=-1)
        p = log_p.exp()
        return -torch.where(p > 0, p * log_p, torch.zeros_like(p)).sum(-1)

    def save(self, folder: str | os.PathLike) -> None:
        """The logit table into ``folder`` (a run folder, ``minirl.runs``) as ``model.pt``, and this class in
        ``model.json`` (the maze itself, which fixes the table's shape, is the run's task)."""
        save_torch(self.state_dict(), Path(folder) / "model.pt")
        write_json(Path(folder) / "model.json", {"policy": f"{type(self).__module__}:{type(self).__qualname__}"})

    @classmethod
    def load(cls, folder: str | os.PathLike, maze: Maze, device: str | torch.device | None = None) -> MazePolicy:
        """The table ``save`` wrote into ``folder``, for ``maze`` (the run's task); ``device`` as given."""
        policy = cls(maze)
        policy.load_state_dict(load_torch(Path(folder) / "model.pt"))
        return policy.to(device) if device is not None else policy

    def probs(self) -> torch.Tensor:
        """The whole policy as a ``[n_cells, 4]`` probability matrix (detached), the format of
        ``toy_envs.maze.expected_returns``."""
        with torch.no_grad():
            return torch.softmax(self(torch.arange(self.logits_table.shape[0])), dim=-1)


class ValueModel(nn.Module):
    """V_φ(cell, k): a table ``[max_steps + 1, n_cells]`` of values, starting at 0.

    The true value depends on the steps left k, not only on the cell: from cell 8 the goal is
    two moves away, so V(8, k = 1) = 0 whatever the policy, while V(8, k = 2) > 0.  A value of
    the cell alone would have to average these, a biased baseline.  V(·, 0) = 0 always (nothing
    can be earned without a move), so row 0 of the table is never used.
    """

    def __init__(self, maze: Maze) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.zeros(maze.max_steps + 1, maze.n_cells))

    def forward(self, cells: torch.Tensor, steps_left: torch.Tensor) -> torch.Tensor:
        """cells, steps_left ``[...]`` (long) -> values ``[...]`` (0 where steps_left = 0)."""
        values = self.table[steps_left, cells]
        return torch.where(steps_left > 0, values, torch.zeros_like(values))


# ----------------------------------------------------------------------------------------------
# Sampling episodes
# ----------------------------------------------------------------------------------------------


@dataclass
class EpisodeBatch:
    """A batch of episodes from the start, every per-step tensor ``[episode, time]``, time = max_steps.

    Attributes:
        cells: s_t, the cell before move t (long).  After the episode ended it stays at the goal.
        steps_left: k_t = max_steps − t, the budget before move t (long).
        actions: a_t (long), always a permitted move (also on padding steps, so log π is finite).
        log_probs: log π_old(a_t | s_t) of the sampling policy (detached).
        next_cells: s_{t+1}, the cell after move t (long).
        rewards: r_t, ``goal_reward`` at the move that enters G, else 0 (float).
        dones: d_t = 1.0 at the move that enters G, else 0 (a budget running out is not a "done":
            the next value is 0 there because V(·, 0) = 0).
        mask: 1.0 for real moves, 0.0 for the padding after the episode ended.
        returns: R = Σ_t r_t, one undiscounted return per episode, ``[episode]``.
    """

    cells: torch.Tensor
    steps_left: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    next_cells: torch.Tensor
    rewards: torch.Tensor
    dones: torch.Tensor
    mask: torch.Tensor
    returns: torch.Tensor

    @property
    def success(self) -> torch.Tensor:
        """``[episode]`` bool: True where the episode reached the goal."""
        return self.dones.sum(dim=1) > 0


@torch.no_grad()
def rollout(maze: Maze, policy: MazePolicy, n_episodes: int, generator: torch.Generator | None = None) -> EpisodeBatch:
    """Play ``n_episodes`` episodes from the start with ``policy``, all at once (a loop over time only).

    Same dynamics as ``Maze.step``: a move goes to ``maze.next_cell_table[cell, action]``,
    entering G gives ``goal_reward`` and ends the episode, and the episode is cut after
    ``max_steps`` moves.  Actions are drawn with ``torch.multinomial`` from ``generator`` (None =
    torch's global generator).
    """
    check_positive_ints(n_episodes=n_episodes)
    table = torch.tensor(maze.next_cell_table.copy())  # [n_cells, 4]: the cell each move leads to
    horizon = maze.max_steps
    cell = torch.full((n_episodes,), maze.start, dtype=torch.long)
    playing = torch.ones(n_episodes, dtype=torch.bool)
    cells, actions, log_probs, next_cells, dones, mask = [], [], [], [], [], []
    for _ in range(horizon):
        log_p = torch.log_softmax(policy(cell), dim=-1)  # [episode, 4]
        action = torch.multinomial(log_p.exp(), 1, generator=generator).squeeze(-1)  # [episode]
        nxt = torch.where(playing, table[cell, action], cell)  # a finished episode stays put
        arrived = playing & (nxt == maze.goal)
        cells.append(cell)
        actions.append(action)
        log_probs.append(log_p.gather(-1, action[:, None]).squeeze(-1))
        next_cells.append(nxt)
        dones.append(arrived.float())
        mask.append(playing.float())
        playing = playing & ~arrived
        cell = nxt
    dones_t = torch.stack(dones, dim=1)  # [episode, time]
    rewards = dones_t * maze.goal_reward
    return EpisodeBatch(
        cells=torch.stack(cells, dim=1),
        steps_left=torch.arange(horizon, 0, -1).repeat(n_episodes, 1),
        actions=torch.stack(actions, dim=1),
        log_probs=torch.stack(log_probs, dim=1),
        next_cells=torch.stack(next_cells, dim=1),
        rewards=rewards,
        dones=dones_t,
        mask=torch.stack(mask, dim=1),
        returns=rewards.sum(dim=1),
    )


# ----------------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------------


def exact_return(maze: Maze, policy: MazePolicy) -> float:
    """J(π) exactly: the expected (undiscounted) return from the start with the whole budget,
    by dynamic programming (``expected_returns(maze, policy.probs())[max_steps, start]``)."""
    return float(expected_returns(maze, policy.probs())[maze.max_steps, maze.start])


@torch.no_grad()
def greedy_route(maze: Maze, policy: MazePolicy) -> list[int]:
    """Play the argmax policy once in a fresh copy of the real ``Maze`` env: the cells it visits, from S until
    it reaches G or the step budget runs out."""
    env = Maze(list(maze.layout), max_steps=maze.max_steps, goal_reward=maze.goal_reward)
    cell, _ = env.reset()
    route = [cell]
    while True:
        action = int(policy(torch.tensor(cell)).argmax())
        cell, _, terminated, truncated, _ = env.step(action)
        route.append(cell)
        if terminated or truncated:
            return route


def greedy_success(maze: Maze, policy: MazePolicy) -> float:
    """1.0 if the argmax policy's route (``greedy_route``) reaches G, else 0.0."""
    return 1.0 if greedy_route(maze, policy)[-1] == maze.goal else 0.0

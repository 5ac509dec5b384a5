"""A tiny grid maze: the course's worked example of "RL maximises an expected reward".

The default maze (``DEFAULT_LAYOUT``, 5 rows x 3 columns; cell index = ``row * n_cols + col``)::

    layout     cell indices
    S . .       0  1  2        S = start (cell 0), G = goal (cell 14)
    . . .       3  4  5        # = wall, . = floor
    # # .       6  7  8   <- cell 8: two moves before the goal
    . . .       9 10 11   <- cell 11: one move before the goal
    # # G      12 13 14

The agent may go right, left, up or down, gets ``goal_reward = 10`` when it reaches G (and the
episode ends there) and 0 otherwise, and has ``max_steps = 6`` moves.  A move into a wall or off
the grid is *not permitted*: the agent stays where it is and the move is wasted.

Why this layout tells the story of the worked example:

* The shortest way from S to G takes exactly 6 moves, the whole budget.  Every shortest path
  uses only "right" and "down" moves (right-right-down, right-down-right or down-right-right
  to reach cell 5, then down, down, down); any "left" or "up" move wastes the budget, and so
  does bumping into a wall.
* Cell 11, one move before the goal, has 3 permitted moves: up, left and down (right is off
  the grid).  A policy that picks uniformly among the permitted moves goes down into G with
  probability 1/3, so with 1 step left its expected return is ``1/3 * 10 = 10/3 = 3.33``.
* Cell 8, two moves before the goal, has exactly 2 permitted moves: up and down (walls on
  the left, grid edge on the right).  Down leads to cell 11 (value 10/3 with one step left),
  up leads nowhere in time, so with 2 steps left its expected return is
  ``1/2 * 10/3 = 10/6 = 1.67``.
* Walking back along the three shortest paths the same way gives ``10/81 = 0.123`` for the
  start with all 6 steps left.

Contents

* ``Maze``: a ``gymnasium.Env``.  Observation: the agent's cell index (``Discrete(n_cells)``,
  wall cells included); actions ``0 right, 1 left, 2 up, 3 down`` (``ACTION_NAMES``).
  ``info`` carries ``"action_mask"`` (``np.int8[4]``, 1 = permitted) and ``"steps_left"``.
* ``uniform_policy``: the "pick a permitted move uniformly" policy, shape ``[n_cells, 4]``.
* ``expected_returns`` / ``expected_q_values`` (``toy_envs.maze_values``): exact expected returns by dynamic
  programming; ``monte_carlo_returns``: the same expectation estimated by sampling episodes, as RL does.
* ``draw_maze``: a matplotlib picture with an optional value heat map and policy arrows.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from toy_envs._validate import check_int, is_int
from toy_envs.maze_draw import draw, render_rgb
from toy_envs.maze_layout import (
    ACTION_DELTAS,
    ACTION_NAMES,
    DEFAULT_LAYOUT,
    N_ACTIONS,
    next_cell_table,
    parse_layout,
    read_only,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "ACTION_DELTAS",
    "ACTION_NAMES",
    "DEFAULT_LAYOUT",
    "MAZE_ENV_ID",
    "Maze",
    "draw_maze",
    "uniform_policy",
    "validate_policy",
]

MAZE_ENV_ID = "minirl/Maze-v0"
"""The id in every ``Maze``'s ``spec`` (lets ``gymnasium.make(env.spec)`` rebuild the same maze)."""

_ACTION_HELP = ", ".join(f"{a} {name}" for a, name in enumerate(ACTION_NAMES))
_ROW_SUM_ATOL = 1e-5  # float32 softmax outputs sum to 1 only up to ~1e-7


# ----------------------------------------------------------------------------------------------
# Small checks shared by every public function
# ----------------------------------------------------------------------------------------------


def _shape_str(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"


def _as_float_array(x: Any, name: str) -> np.ndarray:
    """Convert a numpy array, torch tensor or nested list to a float64 numpy array (a copy)."""
    if x is None or isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a numpy array or torch tensor; got {type(x).__name__}")
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, maybe on GPU or with grad
        x = x.detach().cpu().numpy()
    try:
        return np.array(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} could not be converted to a float array ({err})") from err


def _as_maze(maze: Any) -> Maze:
    """Accept a ``Maze`` or a wrapped one (e.g. from ``gymnasium.make``)."""
    if isinstance(maze, gym.Env) and isinstance(maze.unwrapped, Maze):
        return maze.unwrapped
    raise TypeError(f"maze must be a Maze; got {type(maze).__name__}")


def _check_action(action: Any) -> int:
    """Return ``action`` as an ``int`` in ``[0, 4)``; accepts ints and 0-d integer arrays/tensors."""
    value = action
    if getattr(action, "ndim", None) == 0 and hasattr(action, "item"):
        value = action.item()  # np.int64(2), np.array(2), torch.tensor(2) -> 2
    if not is_int(value) or not 0 <= value < N_ACTIONS:
        raise ValueError(f"action must be an integer in [0, {N_ACTIONS}) ({_ACTION_HELP}); got {action!r}")
    return int(value)


# ----------------------------------------------------------------------------------------------
# The environment
# ----------------------------------------------------------------------------------------------


class Maze(gym.Env):
    """A grid maze with a step budget, following the Gymnasium API.

    Args:
        layout: list of equal-length strings, one per row: ``#`` wall, ``S`` start (exactly one),
            ``G`` goal (exactly one), ``.`` floor.  ``None`` uses ``DEFAULT_LAYOUT``.
        max_steps: the step budget; the episode is truncated when it is spent.
        goal_reward: the reward for reaching the goal (every other step gives 0).
        render_mode: ``None`` or ``"rgb_array"`` (``render()`` then returns ``uint8 [H, W, 3]``).

    Spaces: observation ``Discrete(n_cells)`` = the agent's cell ``row * n_cols + col``;
    action ``Discrete(4)`` = ``0 right, 1 left, 2 up, 3 down``.  ``reset`` and ``step`` return
    ``info = {"action_mask": int8[4], "steps_left": int}``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        layout: Sequence[str] | None = None,
        max_steps: int = 6,
        goal_reward: float = 10.0,
        render_mode: str | None = None,
    ) -> None:
        self._layout = parse_layout(DEFAULT_LAYOUT if layout is None else layout)
        self.max_steps = check_int("max_steps", max_steps, low=1)
        self.goal_reward = self._check_goal_reward(goal_reward)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}; got "
                f"{render_mode!r} (for a picture in a notebook, use draw_maze(env))"
            )
        self.render_mode = render_mode

        chars = np.array([list(row) for row in self._layout])
        self._walls = read_only((chars == "#").ravel())
        self._start = int(np.flatnonzero(chars.ravel() == "S")[0])
        self._goal = int(np.flatnonzero(chars.ravel() == "G")[0])
        self._next = read_only(next_cell_table(chars == "#"))
        if not self.shortest_path():
            raise ValueError(
                f"layout: the goal G at (row, col) = {self.cell_to_rc(self.goal)} cannot be reached "
                f"from the start S at {self.cell_to_rc(self.start)}; open a path through the walls"
            )

        self.observation_space = spaces.Discrete(self.n_cells)
        self.action_space = spaces.Discrete(N_ACTIONS)
        # A spec lets gymnasium (and check_env) rebuild this very maze, e.g. with another render mode.
        self.spec = EnvSpec(
            id=MAZE_ENV_ID,
            entry_point="toy_envs.maze:Maze",
            kwargs={
                "layout": list(self._layout),
                "max_steps": self.max_steps,
                "goal_reward": self.goal_reward,
            },
        )
        self._cell: int | None = None  # None until the first reset()
        self._steps_left = 0
        self._episode_over = False

    @staticmethod
    def _check_goal_reward(goal_reward: Any) -> float:
        if isinstance(goal_reward, (bool, np.bool_)) or not isinstance(goal_reward, (int, float, np.number)):
            raise TypeError(f"goal_reward must be a number; got {type(goal_reward).__name__} {goal_reward!r}")
        if not math.isfinite(goal_reward):
            raise ValueError(f"goal_reward must be finite; got {goal_reward}")
        return float(goal_reward)

    # --- grid facts --------------------------------------------------------------------------

    @property
    def layout(self) -> tuple[str, ...]:
        """The layout strings, one per row."""
        return self._layout

    @property
    def n_rows(self) -> int:
        return len(self._layout)

    @property
    def n_cols(self) -> int:
        return len(self._layout[0])

    @property
    def n_cells(self) -> int:
        """``n_rows * n_cols``, wall cells included."""
        return self.n_rows * self.n_cols

    @property
    def start(self) -> int:
        """Cell index of ``S``."""
        return self._start

    @property
    def goal(self) -> int:
        """Cell index of ``G``."""
        return self._goal

    @property
    def walls(self) -> np.ndarray:
        """Read-only bool array ``[n_cells]``: True where the cell is a wall."""
        return self._walls

    @property
    def next_cell_table(self) -> np.ndarray:
        """Read-only int64 array ``[n_cells, 4]``: ``next_cell_table[s, a]`` = ``next_cell(s, a)``."""
        return self._next

    @property
    def cell(self) -> int | None:
        """The agent's current cell (``None`` before the first ``reset``)."""
        return self._cell

    @property
    def steps_left(self) -> int:
        return self._steps_left

    def _check_cell(self, cell: Any, name: str = "cell") -> int:
        return check_int(name, cell, low=0, high=self.n_cells - 1)

    def cell_to_rc(self, cell: int) -> tuple[int, int]:
        """``cell -> (row, col)`` with ``cell = row * n_cols + col``."""
        row, col = divmod(self._check_cell(cell), self.n_cols)
        return row, col

    def rc_to_cell(self, row: int, col: int) -> int:
        """``(row, col) -> row * n_cols + col``."""
        row = check_int("row", row, low=0, high=self.n_rows - 1)
        col = check_int("col", col, low=0, high=self.n_cols - 1)
        return row * self.n_cols + col

    def is_wall(self, cell: int) -> bool:
        return bool(self._walls[self._check_cell(cell)])

    def next_cell(self, cell: int, action: int) -> int:
        """The cell reached by ``action`` from ``cell``; a non-permitted move stays in ``cell``."""
        return int(self._next[self._check_cell(cell), _check_action(action)])

    def permitted_mask(self) -> np.ndarray:
        """Bool array ``[n_cells, 4]``: True where the move is permitted (not into a wall, not
        off the grid).  Wall cells have no permitted move."""
        return self._next != np.arange(self.n_cells)[:, None]

    def action_mask(self, cell: int) -> np.ndarray:
        """int8 array ``[4]``, 1 where the move from ``cell`` is permitted (as in ``info["action_mask"]``)."""
        cell = self._check_cell(cell)
        return (self._next[cell] != cell).astype(np.int8)

    def shortest_path(self) -> list[int]:
        """Cells of a shortest path from start to goal, both included (breadth-first search).

        Returns an empty list if the goal cannot be reached (the constructor rejects such layouts).
        """
        parent = {self.start: self.start}
        queue = deque([self.start])
        while queue:
            cell = queue.popleft()
            for nxt in self._next[cell]:
                if int(nxt) not in parent:
                    parent[int(nxt)] = cell
                    queue.append(int(nxt))
        if self.goal not in parent:
            return []
        path = [self.goal]
        while path[-1] != self.start:
            path.append(parent[path[-1]])
        return path[::-1]

    def shortest_path_length(self) -> int:
        """Number of moves on a shortest path from start to goal."""
        return len(self.shortest_path()) - 1

    # --- gymnasium API -----------------------------------------------------------------------

    def _info(self, cell: int) -> dict[str, Any]:
        return {"action_mask": self.action_mask(cell), "steps_left": self._steps_left}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict]:
        """Put the agent on the start with the full budget.  Returns ``(cell, info)``.

        The maze is deterministic, so ``seed`` only seeds ``self.np_random``; ``options`` is unused.
        """
        super().reset(seed=seed)
        self._cell = self.start
        self._steps_left = self.max_steps
        self._episode_over = False
        return self._cell, self._info(self._cell)

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        """Move once.  Returns ``(cell, reward, terminated, truncated, info)``.

        ``reward = goal_reward`` if the move enters the goal (then ``terminated``), else 0;
        ``truncated`` when the budget is spent without reaching the goal.
        """
        if self._cell is None:
            raise RuntimeError("call reset() before step()")
        if self._episode_over:
            raise RuntimeError("the episode is over (goal reached or budget spent); call reset() first")
        self._cell = int(self._next[self._cell, _check_action(action)])
        self._steps_left -= 1
        terminated = self._cell == self.goal
        truncated = not terminated and self._steps_left == 0
        self._episode_over = terminated or truncated
        reward = self.goal_reward if terminated else 0.0
        return self._cell, reward, terminated, truncated, self._info(self._cell)

    def render(self) -> np.ndarray | None:
        """With ``render_mode="rgb_array"``: the picture as a ``uint8 [H, W, 3]`` array."""
        if self.render_mode is None:
            gym.logger.warn('render() does nothing without render_mode="rgb_array"; try draw_maze(env).')
            return None
        return render_rgb(self)


# ----------------------------------------------------------------------------------------------
# Policies and exact expected returns
# ----------------------------------------------------------------------------------------------


def validate_policy(maze: Maze, policy: Any) -> np.ndarray:
    """Check a policy and return it as a float64 numpy array ``[n_cells, 4]`` (a copy).

    ``policy[s, a]`` = probability of action ``a`` in cell ``s`` (numpy array, torch tensor or nested
    list).  Every entry must be finite and >= 0; every row of a non-wall cell must sum to 1
    (wall rows are never used and may be anything non-negative, e.g. zeros).
    """
    maze = _as_maze(maze)
    pi = _as_float_array(policy, "policy")
    expected = (maze.n_cells, N_ACTIONS)
    if pi.shape != expected:
        hint = ""
        if pi.shape == (N_ACTIONS,):
            hint = f" (one row per cell; np.tile(row, ({maze.n_cells}, 1)) repeats one row everywhere)"
        raise ValueError(
            f"policy must have shape [n_cells, 4] = {_shape_str(expected)}; got {_shape_str(pi.shape)}{hint}"
        )
    bad = np.argwhere(~np.isfinite(pi))
    if len(bad):
        s, a = bad[0]
        raise ValueError(f"policy must be finite; cell {s}, action {a} ({ACTION_NAMES[a]}) is {pi[s, a]}")
    bad = np.argwhere(pi < 0)
    if len(bad):
        s, a = bad[0]
        raise ValueError(
            f"policy probabilities must be >= 0; cell {s}, action {a} ({ACTION_NAMES[a]}) is {pi[s, a]:.4g} "
            "(did you pass logits? apply a softmax first)"
        )
    sums = pi.sum(axis=1)
    bad_rows = np.flatnonzero(~maze.walls & (np.abs(sums - 1.0) > _ROW_SUM_ATOL))
    if len(bad_rows):
        s = bad_rows[0]
        raise ValueError(
            f"policy rows must sum to 1; row of cell {s} (row, col) = {maze.cell_to_rc(s)} sums to "
            f"{sums[s]:.6g} (normalise each row, e.g. divide by its sum)"
        )
    return pi


def uniform_policy(maze: Maze) -> np.ndarray:
    """The worked example's policy: uniform over the permitted moves of each cell.

    Returns float64 ``[n_cells, 4]`` with ``pi[s, a] = permitted[s, a] / (number permitted in s)``.
    Cells with no permitted move (walls) get ``1/4`` on every action, so every row sums to 1.
    """
    maze = _as_maze(maze)
    permitted = maze.permitted_mask().astype(np.float64)
    counts = permitted.sum(axis=1, keepdims=True)
    return np.where(counts > 0, permitted / np.maximum(counts, 1.0), 1.0 / N_ACTIONS)


# ----------------------------------------------------------------------------------------------
# Drawing
# ----------------------------------------------------------------------------------------------


def _check_values(maze: Maze, values: Any) -> np.ndarray:
    vals = _as_float_array(values, "values")
    if vals.shape != (maze.n_cells,):
        hint = ""
        if vals.shape == (maze.max_steps + 1, maze.n_cells):
            hint = f" (that looks like V from expected_returns; pass one row, e.g. V[{maze.max_steps}])"
        raise ValueError(f"values must have shape [n_cells] = [{maze.n_cells}]; got {_shape_str(vals.shape)}{hint}")
    return vals


def draw_maze(
    maze: Maze,
    ax: Axes | None = None,
    values: Any = None,
    policy: Any = None,
    title: str | None = None,
    agent: int | None = None,
    cell_ids: bool = True,
) -> Axes:
    """Draw the maze with matplotlib and return the ``Axes``.

    Args:
        maze: the maze to draw (walls dark, ``S`` and ``G`` labelled).
        ax: where to draw; ``None`` makes a new figure.
        values: optional ``[n_cells]`` values (e.g. ``expected_returns(maze, pi)[k]``), drawn as a
            heat map with a colorbar and the numbers written in the cells.
        policy: optional ``[n_cells, 4]`` action probabilities, drawn as one arrow per action from
            each cell centre, the arrow length proportional to the probability.
        title: the axes title (a default describes the maze).
        agent: optional cell where a blue dot marks the agent.
        cell_ids: write each cell's index small in its bottom-left corner.
    """
    maze = _as_maze(maze)
    vals = None if values is None else _check_values(maze, values)
    pi = None if policy is None else validate_policy(maze, policy)
    agent_cell = None if agent is None else maze._check_cell(agent, "agent")
    return draw(maze, ax, vals, pi, title, agent_cell, cell_ids)

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
* ``expected_returns`` / ``expected_q_values``: exact expected returns by dynamic programming.
* ``monte_carlo_returns``: the same expectation estimated by sampling episodes, as RL does.
* ``draw_maze``: a matplotlib picture with an optional value heat map and policy arrows.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from toy_envs._validate import check_int, is_int

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "ACTION_NAMES",
    "DEFAULT_LAYOUT",
    "MAZE_ENV_ID",
    "Maze",
    "MonteCarloResult",
    "draw_maze",
    "expected_q_values",
    "expected_returns",
    "monte_carlo_returns",
    "uniform_policy",
    "validate_policy",
]

ACTION_NAMES: tuple[str, ...] = ("right", "left", "up", "down")
"""Action ``a`` is the move ``ACTION_NAMES[a]``."""

N_ACTIONS = len(ACTION_NAMES)

ACTION_DELTAS: tuple[tuple[int, int], ...] = ((0, 1), (0, -1), (-1, 0), (1, 0))
"""``(d_row, d_col)`` of each action; row 0 is the top row, so "up" decreases the row."""

DEFAULT_LAYOUT: tuple[str, ...] = (
    "S..",
    "...",
    "##.",
    "...",
    "##G",
)
"""The worked example (see the module docstring).  Copy it with ``list(DEFAULT_LAYOUT)`` to edit."""

LAYOUT_CHARS = {"#": "wall", "S": "start", "G": "goal", ".": "floor"}

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
# Layout parsing: list of strings -> grid facts
# ----------------------------------------------------------------------------------------------


def _parse_layout(layout: Any) -> tuple[str, ...]:
    """Check a layout (one string per row, characters ``# S G .``) and return it as a tuple."""
    _check_layout_types(layout)
    width = len(layout[0])
    if width == 0:
        raise ValueError("layout rows must not be empty; row 0 is ''")
    for i, row in enumerate(layout):
        if len(row) != width:
            raise ValueError(
                f"layout rows must all have the same length (ragged rows); row 0 has {width} "
                f"characters but row {i} has {len(row)}: {row!r}"
            )
        for j, char in enumerate(row):
            if char not in LAYOUT_CHARS:
                raise ValueError(
                    f"layout row {i}, column {j} has unknown character {char!r}; "
                    "use '#' wall, 'S' start, 'G' goal, '.' floor"
                )
    for char, meaning in (("S", "start"), ("G", "goal")):
        count = sum(row.count(char) for row in layout)
        if count != 1:
            raise ValueError(f"layout must contain exactly one {char!r} ({meaning}); found {count}")
    return tuple(layout)


def _check_layout_types(layout: Any) -> None:
    """A layout is a non-empty sequence of strings (not one multi-line string)."""
    if isinstance(layout, str):
        raise TypeError(
            "layout must be a list of strings, one per row, e.g. ['S.G']; got a single str "
            "(use text.splitlines() to split a multi-line string)"
        )
    if not isinstance(layout, Sequence) or len(layout) == 0:
        raise TypeError(f"layout must be a non-empty list of strings; got {layout!r}")
    for i, row in enumerate(layout):
        if not isinstance(row, str):
            raise TypeError(f"layout row {i} must be a str; got {type(row).__name__} {row!r}")


def _next_cell_table(walls: np.ndarray) -> np.ndarray:
    """``[n_cells, 4]`` int64 table: the cell each action leads to (blocked moves stay put).

    ``walls`` is a ``[n_rows, n_cols]`` bool array.  A wall cell has no permitted move.
    """
    n_rows, n_cols = walls.shape
    table = np.empty((n_rows * n_cols, N_ACTIONS), dtype=np.int64)
    for r in range(n_rows):
        for c in range(n_cols):
            cell = r * n_cols + c
            for a, (dr, dc) in enumerate(ACTION_DELTAS):
                nr, nc = r + dr, c + dc
                inside = 0 <= nr < n_rows and 0 <= nc < n_cols
                blocked = walls[r, c] or not inside or walls[nr, nc]
                table[cell, a] = cell if blocked else nr * n_cols + nc
    return table


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


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
        self._layout = _parse_layout(DEFAULT_LAYOUT if layout is None else layout)
        self.max_steps = check_int("max_steps", max_steps, low=1)
        self.goal_reward = self._check_goal_reward(goal_reward)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}; got "
                f"{render_mode!r} (for a picture in a notebook, use draw_maze(env))"
            )
        self.render_mode = render_mode

        chars = np.array([list(row) for row in self._layout])
        self._walls = _read_only((chars == "#").ravel())
        self._start = int(np.flatnonzero(chars.ravel() == "S")[0])
        self._goal = int(np.flatnonzero(chars.ravel() == "G")[0])
        self._next = _read_only(_next_cell_table(chars == "#"))
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
        return _render_rgb(self)


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


# ----------------------------------------------------------------------------------------------
# Drawing
# ----------------------------------------------------------------------------------------------

_WALL_COLOR = "#3a3a3a"
_START_COLOR = "#cfe8cf"
_GOAL_COLOR = "#ffe08a"
_ARROW_COLOR = "#d62728"
_ARROW_MAX = 0.45  # arrow length (in cells) for probability 1


def _check_values(maze: Maze, values: Any) -> np.ndarray:
    vals = _as_float_array(values, "values")
    if vals.shape != (maze.n_cells,):
        hint = ""
        if vals.shape == (maze.max_steps + 1, maze.n_cells):
            hint = f" (that looks like V from expected_returns; pass one row, e.g. V[{maze.max_steps}])"
        raise ValueError(f"values must have shape [n_cells] = [{maze.n_cells}]; got {_shape_str(vals.shape)}{hint}")
    return vals


def _format_value(v: float) -> str:
    return f"{v:.3g}"


def _draw_grid(ax: Axes, maze: Maze, vals: np.ndarray | None) -> Any:
    """Floor, walls, start/goal tint or the value heat map, and grid lines.  Returns the image or None."""
    from matplotlib.patches import Rectangle

    image = None
    if vals is None:
        for cell, color in ((maze.start, _START_COLOR), (maze.goal, _GOAL_COLOR)):
            r, c = maze.cell_to_rc(cell)
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=color, edgecolor="none"))
    else:
        grid = np.ma.masked_array(vals, mask=maze.walls).reshape(maze.n_rows, maze.n_cols)
        floor_vals = vals[~maze.walls]
        low, high = float(floor_vals.min()), float(floor_vals.max())
        image = ax.imshow(grid, cmap="viridis", vmin=low, vmax=high if high > low else low + 1.0)
    for cell in np.flatnonzero(maze.walls):
        r, c = maze.cell_to_rc(int(cell))
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=_WALL_COLOR, edgecolor="none"))
    ax.hlines(np.arange(maze.n_rows + 1) - 0.5, -0.5, maze.n_cols - 0.5, color="0.6", linewidth=0.8)
    ax.vlines(np.arange(maze.n_cols + 1) - 0.5, -0.5, maze.n_rows - 0.5, color="0.6", linewidth=0.8)
    return image


def _text_color(image: Any, value: float | None) -> str:
    """Black on light cells, white on dark ones."""
    if image is None or value is None:
        return "black"
    r, g, b, _ = image.cmap(image.norm(value))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _draw_labels(ax: Axes, maze: Maze, vals: np.ndarray | None, image: Any, busy: np.ndarray, cell_ids: bool) -> None:
    """S / G labels, the values written in the cells, and small cell indices (bottom left).

    ``busy[cell]`` is True where arrows or the agent take the cell centre: the label and the
    value then move to the top-left and bottom-right corners.
    """
    labels = {maze.start: "S", maze.goal: "G"}
    for cell in np.flatnonzero(~maze.walls):
        r, c = maze.cell_to_rc(int(cell))
        value = None if vals is None else vals[cell]
        color = _text_color(image, value)
        label = labels.get(int(cell))
        if label and value is None and not busy[cell]:
            ax.text(c, r, label, ha="center", va="center", fontsize=16, weight="bold", color=color)
        elif label:
            ax.text(c - 0.44, r - 0.42, label, ha="left", va="top", fontsize=9, weight="bold", color=color)
        text = "" if value is None else _format_value(value)
        if text and busy[cell]:
            ax.text(c + 0.45, r + 0.44, text, ha="right", va="bottom", fontsize=7, color=color)
        elif text:
            ax.text(c, r, text, ha="center", va="center", fontsize=10, color=color)
        if cell_ids:
            ax.text(c - 0.45, r + 0.44, str(cell), ha="left", va="bottom", fontsize=6, color=color, alpha=0.6)


def _draw_policy(ax: Axes, maze: Maze, pi: np.ndarray) -> None:
    """One arrow per action from each cell centre, length proportional to its probability."""
    xs, ys, us, vs = [], [], [], []
    for cell in range(maze.n_cells):
        if maze.walls[cell] or cell == maze.goal:
            continue
        r, c = maze.cell_to_rc(cell)
        for a, (dr, dc) in enumerate(ACTION_DELTAS):
            if pi[cell, a] > 0:
                xs.append(c)
                ys.append(r)
                us.append(dc * pi[cell, a] * _ARROW_MAX)
                vs.append(dr * pi[cell, a] * _ARROW_MAX)
    if xs:
        ax.quiver(
            xs,
            ys,
            us,
            vs,
            angles="xy",
            scale_units="xy",
            scale=1,
            color=_ARROW_COLOR,
            width=0.008,
            headwidth=3.5,
            headlength=3.5,
            headaxislength=3,
            zorder=4,
        )


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
    if ax is None:
        import matplotlib.pyplot as plt

        extra_width = 1.2 if vals is not None else 0.0
        _, ax = plt.subplots(figsize=(1.1 * maze.n_cols + 0.4 + extra_width, 1.1 * maze.n_rows + 0.6))

    image = _draw_grid(ax, maze, vals)
    busy = np.full(maze.n_cells, pi is not None)
    if agent_cell is not None:
        busy[agent_cell] = True
    _draw_labels(ax, maze, vals, image, busy=busy, cell_ids=cell_ids)
    if pi is not None:
        _draw_policy(ax, maze, pi)
    if agent_cell is not None:
        from matplotlib.patches import Circle

        r, c = maze.cell_to_rc(agent_cell)
        ax.add_patch(Circle((c, r), 0.2, facecolor="tab:blue", edgecolor="white", zorder=5))
    if image is not None:
        ax.figure.colorbar(image, ax=ax, fraction=0.08, pad=0.04, label="expected return")

    ax.set_xlim(-0.5, maze.n_cols - 0.5)
    ax.set_ylim(maze.n_rows - 0.5, -0.5)  # row 0 at the top
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title if title is not None else f"Maze {maze.n_rows}x{maze.n_cols}, {maze.max_steps} steps")
    return ax


def _render_rgb(maze: Maze) -> np.ndarray:
    """Draw on an off-screen Agg canvas (not registered with pyplot, so no figure leaks)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1.1 * maze.n_cols + 0.4, 1.1 * maze.n_rows + 0.6), dpi=64)
    canvas = FigureCanvasAgg(fig)
    used = maze.max_steps - maze.steps_left if maze.cell is not None else 0
    draw_maze(maze, ax=fig.add_subplot(), agent=maze.cell, title=f"step {used}/{maze.max_steps}")
    canvas.draw()
    rgb = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    fig.clear()
    return rgb

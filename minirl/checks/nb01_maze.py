"""Checks for the maze notebook (01), named after the function they check.

    check_maze_reward(fn)            fn(maze, cell, action) -> float
    check_bellman_backup(fn)         fn(maze, policy, values_next) -> values[n_cells]
    check_monte_carlo_estimate(fn)   fn(maze, policy, n_episodes, rng) -> (mean, standard_error)

Expected values come from ``toy_envs.maze`` (``Maze.next_cell``), ``toy_envs.maze_values`` (``expected_returns``) and
hand constants (the worked example's 10/3, 10/6 and 10/81); never from the learner's own function.
When a result is wrong, each check compares it with the result of the usual mistakes (a reward
for every step, max instead of the policy's expectation, no stop at the goal, ...) and names the
one it matches.

The references, for the fallback cell of each exercise::

    maze_reward = use_reference(maze_reward, reference_maze_reward, ok)

``reference_maze_reward``, ``reference_bellman_backup``, ``reference_monte_carlo_estimate``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from minirl.checks._core import Check, exercise_check, numbers_close, tensors_close
from toy_envs.maze import ACTION_NAMES, DEFAULT_LAYOUT, Maze, uniform_policy
from toy_envs.maze_values import expected_returns, monte_carlo_returns

__all__ = [
    "check_bellman_backup",
    "check_maze_reward",
    "check_monte_carlo_estimate",
    "reference_bellman_backup",
    "reference_maze_reward",
    "reference_monte_carlo_estimate",
]

SEED = 2024


# ---------------------------------------------------------------------------------------------
# The references
# ---------------------------------------------------------------------------------------------


def reference_maze_reward(maze: Maze, cell: int, action: int) -> float:
    """The reward for making ``action`` in ``cell``: ``maze.goal_reward`` if the move enters the goal,
    else 0. A move from the goal itself earns nothing (the episode is over there)."""
    if cell == maze.goal:
        return 0.0
    return float(maze.goal_reward) if maze.next_cell(cell, action) == maze.goal else 0.0


def reference_bellman_backup(maze: Maze, policy: Any, values_next: Any) -> np.ndarray:
    """One step of dynamic programming: ``V_k[n_cells]`` from ``V_{k-1} = values_next``::

    V_k(s) = sum_a pi(a|s) [ r(s, a) + (0 if s' is the goal else V_{k-1}(s')) ],   V_k(goal) = 0
    """
    pi = np.asarray(policy, dtype=np.float64)
    v = np.asarray(values_next, dtype=np.float64)
    nxt = maze.next_cell_table  # s' = next_cell(s, a)   [n_cells, 4]
    enters_goal = nxt == maze.goal
    reward = np.where(enters_goal, maze.goal_reward, 0.0)  # r(s, a)
    future = np.where(enters_goal, 0.0, v[nxt])  # the episode ends at the goal
    values = (pi * (reward + future)).sum(axis=1)
    values[maze.goal] = 0.0
    return values


def reference_monte_carlo_estimate(
    maze: Maze, policy: Any, n_episodes: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Play ``n_episodes`` episodes from the start, drawing from ``rng``; return
    ``(mean return, standard error = std(ddof=1) / sqrt(n_episodes))``."""
    result = monte_carlo_returns(maze, policy, n_episodes=n_episodes, seed=rng)
    return result.mean, result.stderr


# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------


def _number(x: float) -> str:
    return f"{x:.4g}"


def _as_float(c: Check, got: Any, what: str) -> float:
    """``got`` as a float (Python/NumPy numbers, 0-d arrays and 1-element tensors), else a failure."""
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, np.ndarray) and got.size == 1:
        got = got.item()
    if isinstance(got, (int, float, np.integer, np.floating)) and not isinstance(got, (bool, np.bool_)):
        return float(got)
    c.fail(f"{what}: expected a number, got {type(got).__name__} {got!r}"[:200])


def _permitted_uniform4(maze: Maze) -> np.ndarray:
    """Every one of the 4 moves with probability 1/4, blocked ones included (they waste a step)."""
    return np.full((maze.n_cells, 4), 0.25)


def _distance_to_goal(maze: Maze) -> np.ndarray:
    """Moves needed from each cell to the goal (breadth-first search; moves are reversible)."""
    dist = np.full(maze.n_cells, -1)
    dist[maze.goal] = 0
    queue = deque([maze.goal])
    while queue:
        cell = queue.popleft()
        for nxt in maze.next_cell_table[cell]:
            if dist[nxt] < 0:
                dist[nxt] = dist[cell] + 1
                queue.append(int(nxt))
    return dist


def _toward_goal_policy(maze: Maze, p_closer: float = 0.9) -> np.ndarray:
    """A decent policy: ``p_closer`` on the permitted moves that get closer to the goal, the rest
    on the other permitted moves; uniform over the 4 moves at the goal and in walls."""
    dist = _distance_to_goal(maze)
    permitted = maze.permitted_mask()
    pi = _permitted_uniform4(maze)
    for s in range(maze.n_cells):
        if maze.walls[s] or s == maze.goal:
            continue
        closer = permitted[s] & (dist[maze.next_cell_table[s]] == dist[s] - 1)
        other = permitted[s] & ~closer
        pi[s] = 0.0
        pi[s, closer] = (p_closer if other.any() else 1.0) / closer.sum()
        if other.any():
            pi[s, other] = (1.0 - p_closer) / other.sum()
    return pi


def _dirichlet_policy(maze: Maze, rng: np.random.Generator) -> np.ndarray:
    return rng.dirichlet(np.ones(4), size=maze.n_cells)


# ---------------------------------------------------------------------------------------------
# maze_reward
# ---------------------------------------------------------------------------------------------

# The default maze, and a 2x3 maze that pays 2.5 with the goal at cell 3 and the start at the
# right edge of row 0: "right" from S is blocked, but flat index arithmetic (cell + 1) wraps onto G.
REWARD_MAZES: list[tuple[tuple[str, ...], float]] = [
    (DEFAULT_LAYOUT, 10.0),
    (("..S", "G.."), 2.5),
]

RewardFn = Callable[[Maze, int, int], float]


def _flat_next(maze: Maze, cell: int, action: int) -> int:
    """The mistaken next cell of index arithmetic: cell + 1, cell - 1, cell -+ n_cols, no edges, no walls."""
    nxt = cell + (1, -1, -maze.n_cols, maze.n_cols)[action]
    return nxt if 0 <= nxt < maze.n_cells else cell


def _enters(maze: Maze, cell: int, action: int) -> bool:
    return cell != maze.goal and maze.next_cell(cell, action) == maze.goal


_REWARD_MISTAKES: list[tuple[RewardFn, str]] = [
    (
        lambda m, s, a: m.goal_reward,
        "you gave the goal reward for every move; only the move that enters the goal is rewarded (0 otherwise)",
    ),
    (
        lambda m, s, a: m.goal_reward if s == m.goal else 0.0,
        "you rewarded moves FROM the goal (being in or leaving G); reward the move that ARRIVES in G: "
        "compare maze.next_cell(cell, action), not cell, with maze.goal",
    ),
    (
        lambda m, s, a: m.goal_reward if m.next_cell(s, a) == m.goal else 0.0,
        "a move from the goal itself (e.g. bumping into the edge and staying in G) earns nothing: the episode "
        "ended when the agent arrived; return 0 when cell == maze.goal",
    ),
    (
        lambda m, s, a: m.goal_reward if s == m.goal or m.next_cell(s, a) == m.goal else 0.0,
        "only the move that enters the goal is rewarded; moves from the goal (the episode is over) earn nothing",
    ),
    (lambda m, s, a: 1.0 if _enters(m, s, a) else 0.0, "the reward for entering the goal is maze.goal_reward, not 1"),
    (
        lambda m, s, a: 10.0 if _enters(m, s, a) else 0.0,
        "use maze.goal_reward, not a hard-coded 10: this maze pays a different reward",
    ),
    (
        lambda m, s, a: m.goal_reward if s != m.goal and m.next_cell(s, a) == 14 else 0.0,
        "use maze.goal, not a hard-coded cell 14: this maze has its goal elsewhere",
    ),
    (
        lambda m, s, a: m.goal_reward if s != m.goal and _flat_next(m, s, a) == m.goal else 0.0,
        "a move off the grid or into a wall is blocked (the agent stays where it is); index arithmetic "
        "like cell + 1 wraps onto the next row: use maze.next_cell(cell, action)",
    ),
    (lambda m, s, a: 0.0, "your reward is always 0: entering the goal should give maze.goal_reward"),
    (
        lambda m, s, a: m.goal_reward if _enters(m, s, a) else -1.0,
        "this maze charges nothing for a step: every move that does not enter the goal earns 0, not −1 (the budget of "
        "maze.max_steps moves is what makes a short path pay)",
    ),
    (
        lambda m, s, a: m.goal_reward - 1.0 if _enters(m, s, a) else -1.0,
        "this maze charges nothing for a step: the move into the goal earns maze.goal_reward and every other move 0 "
        "(you subtracted 1 per step)",
    ),
]


def _explain_reward(maze: Maze, cell: int, action: int, want: float) -> str:
    name = ACTION_NAMES[action]
    nxt = maze.next_cell(cell, action)
    if cell == maze.goal:
        return f"from the goal (cell {cell}) '{name}' earns {_number(want)}: the episode is already over there"
    where = "the goal" if nxt == maze.goal else "cell itself (blocked)" if nxt == cell else f"cell {nxt}"
    return f"'{name}' from cell {cell} leads to {where}, so the reward is {_number(want)}"


@exercise_check("maze_reward")
def check_maze_reward(c: Check, fn: Callable) -> None:
    """Check ``maze_reward(maze, cell, action) -> float``: ``maze.goal_reward`` for the move that enters
    the goal, 0 for every other move and for moves from the goal. Catches a reward for every step,
    a reward for being in / leaving the goal, 1 or a hard-coded 10 or cell 14 instead of the maze's
    goal_reward and goal, a cost of 1 per step, and index arithmetic that wraps across rows instead of
    the blocked move."""
    with c.worked_example():  # the worked example, by hand, first
        got = _as_float(
            c,
            c.call(fn, Maze(), 11, 3, call="the worked example, cell 11, action 3 (down)"),
            "maze_reward(Maze(), 11, 3)",
        )
        c.equal_number(got, 10.0, "maze_reward(Maze(), 11, 3): 'down' from cell 11 enters the goal, so the reward")
    for layout, goal_reward in REWARD_MAZES:
        maze = Maze(list(layout), goal_reward=goal_reward)
        cases = [(s, a) for s in range(maze.n_cells) if not maze.walls[s] for a in range(4)]
        got = [
            _as_float(
                c,
                c.call(fn, maze, s, a, call=f"cell {s}, action {a} ({ACTION_NAMES[a]})"),
                f"maze_reward(maze, {s}, {a})",
            )
            for s, a in cases
        ]
        want = [reference_maze_reward(maze, s, a) for s, a in cases]
        wrong = [(case, g, w) for case, g, w in zip(cases, got, want) if not numbers_close(g, w)]
        if wrong:
            for mistake, message in _REWARD_MISTAKES:
                if all(numbers_close(g, mistake(maze, s, a)) for (s, a), g in zip(cases, got)):
                    c.fail(message, named=True)
            (s, a), g, w = wrong[0]
            c.fail(
                f"maze_reward(maze, {s}, {a}) = {_number(g)}, expected {_number(w)}: "
                f"{_explain_reward(maze, s, a, w)} (maze {list(layout)}, goal_reward {goal_reward})",
                named=True,
            )  # it says what the reward of that move should be
        c.passed += len(cases)


# ---------------------------------------------------------------------------------------------
# bellman_backup
# ---------------------------------------------------------------------------------------------


def _clamped_next_table(maze: Maze) -> np.ndarray:
    """The mistaken next cells when walls are ignored (the grid edges still block)."""
    table = np.empty((maze.n_cells, 4), dtype=np.int64)
    for s in range(maze.n_cells):
        r, col = divmod(s, maze.n_cols)
        for a, (dr, dc) in enumerate(((0, 1), (0, -1), (-1, 0), (1, 0))):
            nr, nc = r + dr, col + dc
            inside = 0 <= nr < maze.n_rows and 0 <= nc < maze.n_cols
            table[s, a] = nr * maze.n_cols + nc if inside else s
    return table


def _backup_variant(
    maze: Maze,
    pi: np.ndarray,
    v: np.ndarray,
    *,
    combine: str = "policy",
    terminal: bool = True,
    reward: bool = True,
    blocked: str = "stay",
    sweep: bool = False,
    future: str = "next",
) -> np.ndarray:
    """The backup with one knob turned (``reference_bellman_backup`` when every knob is at its default)."""
    nxt = {
        "stay": maze.next_cell_table,
        "zero": maze.next_cell_table,
        "no_walls": _clamped_next_table(maze),
        "flat": np.array([[_flat_next(maze, s, a) for a in range(4)] for s in range(maze.n_cells)]),
    }[blocked]
    enters = nxt == maze.goal
    r = np.where(enters, maze.goal_reward, 0.0) if reward else np.zeros(nxt.shape)
    values = v.astype(np.float64).copy()
    cells = range(maze.n_cells) if sweep else [slice(None)]
    for s in cells:  # a sweep reads the values it has already overwritten (V_k instead of V_{k-1})
        ahead = values[nxt[s]] if future == "next" else values[s][..., None] * np.ones(nxt[s].shape)
        q = r[s] + np.where(enters[s], 0.0, ahead)
        permitted = maze.permitted_mask()[s]
        if blocked == "zero":
            q = np.where(permitted, q, 0.0)
        if combine == "policy":
            result = (pi[s] * q).sum(axis=-1)
        elif combine == "max":
            result = q.max(axis=-1)
        elif combine == "max_permitted":
            result = np.where(permitted, q, -np.inf).max(axis=-1)
        else:  # "mean"
            result = q.mean(axis=-1)
        if sweep:
            values[s] = result
        else:
            values = np.array(result, dtype=np.float64)
    if terminal:
        values[maze.goal] = 0.0
    return values


def _backup_mistakes(maze: Maze, pi: np.ndarray, v: np.ndarray) -> list[tuple[torch.Tensor, str]]:
    blocked = (
        "a blocked move (into a wall or off the grid) keeps the agent in its cell, s' = s, and uses up "
        "a step; take s' from maze.next_cell_table[s, a]"
    )
    through = blocked + " (yours lets the agent into walls, or wraps across rows like cell + 1)"
    variants = [
        (
            dict(combine="max"),
            "you took the best move (max over a): that gives the OPTIMAL values, not this "
            "policy's; weight each move by pi(a|s) and sum",
        ),
        (
            dict(combine="max_permitted"),
            "you took the best permitted move (max over a): that gives the OPTIMAL "
            "values, not this policy's; weight each move by pi(a|s) and sum",
        ),
        (dict(combine="mean"), "you averaged the 4 moves equally; weight each by the policy's pi(a|s) and sum"),
        (
            dict(terminal=False),
            "the goal is terminal: V_k(goal) = 0 (the episode is over there, nothing more "
            "to earn); set values[maze.goal] = 0",
        ),
        (dict(reward=False), "you forgot the reward r(s, a): goal_reward for a move that enters the goal"),
        (
            dict(future="here"),
            "the future term is V_{k-1} of the NEXT cell s' = maze.next_cell_table[s, a], not of "
            "the cell s itself: values_next[maze.next_cell_table]",
        ),
        (
            dict(sweep=True),
            "you overwrote values while still reading them (V_k instead of V_{k-1}): compute every "
            "V_k(s) from values_next only, into a new array",
        ),
        (dict(blocked="zero"), blocked + " (you gave blocked moves the value 0)"),
        (dict(blocked="no_walls"), through),
        (dict(blocked="flat"), through),
    ]
    return [(torch.from_numpy(_backup_variant(maze, pi, v, **knobs)), message) for knobs, message in variants]


def _run_backup(
    c: Check,
    fn: Callable,
    maze: Maze,
    pi: np.ndarray,
    v: np.ndarray,
    want: np.ndarray,
    what: str,
    hand: dict[int, tuple[float, str]] | None = None,
) -> np.ndarray:
    """One backup V_k from V_{k-1} = v, compared with ``want``. ``hand`` {cell: (value, why)}: values worked out
    by hand, checked (after the named mistakes) before the whole vector, so a failure shows the readable one."""
    given_pi, given_v = pi.copy(), v.copy()
    got = c.call(
        fn,
        maze,
        given_pi,
        given_v,
        call=what,
        hints=[
            (
                "shape",
                "values_next has one entry per cell; index it with the next cells: values_next[maze.next_cell_table]",
            )
        ],
    )
    c.expect(
        np.array_equal(given_v, v) and np.array_equal(given_pi, pi),
        f"{what}: your function changed its input (values_next or policy) in place; build a new array "
        "for V_k: every V_k(s) must use the old V_{k-1}",
    )
    try:
        arr = np.asarray(got.detach() if isinstance(got, torch.Tensor) else got, dtype=np.float64)
    except (TypeError, ValueError):
        c.fail(f"{what}: expected a numpy array of {maze.n_cells} values, got {type(got).__name__}")
    hints = {
        (maze.n_cells, 4): "you returned one value per (cell, move): weight by pi(a|s) and sum over the moves",
        (maze.max_steps + 1, maze.n_cells): "return one backup V_k, not the whole table",
    }
    if arr.shape != (maze.n_cells,):
        hint = hints.get(arr.shape)
        c.fail(
            f"{what}: expected shape [n_cells] = [{maze.n_cells}], got {list(arr.shape)}"
            + (f" — {hint}" if hint else "")
        )
    c.passed += 1
    mistakes = _backup_mistakes(maze, pi, v)
    scale = max(float(np.abs(want).max()), maze.goal_reward)  # the values' scale: up to goal_reward
    if not tensors_close(torch.from_numpy(arr), torch.from_numpy(want), scale=scale):
        c.name_mistake(torch.from_numpy(arr), mistakes, what, scale=scale)
    k = what.split(" ")[0].removeprefix("V_")
    for cell, (value, why) in (hand or {}).items():
        c.expect(
            numbers_close(arr[cell], value, scale=scale),
            f"V_{k}({cell}) should be {_number(value)} ({why}), got {_number(arr[cell])}",
        )
    c.close(torch.from_numpy(arr), torch.from_numpy(want), what, mistakes, scale=scale)
    return arr


@exercise_check("bellman_backup")
def check_bellman_backup(c: Check, fn: Callable) -> None:
    """Check ``bellman_backup(maze, policy, values_next) -> values[n_cells]`` (V_k from V_{k-1}) against
    ``toy_envs.maze_values.expected_returns`` on the default maze and another one, for the uniform policy,
    uniform-over-4-moves and random policies, and the worked example's 10/3, 10/6, 10/81. Catches
    max instead of the policy's expectation, an unweighted mean, no terminal goal, no reward, the
    current cell's value instead of the next cell's, overwriting V_{k-1} while reading it, wrong next
    cells for blocked moves, edits in place."""
    rng = np.random.default_rng(SEED)
    maze = Maze()
    other = Maze(["S..#.", ".#...", "...#G"], max_steps=8, goal_reward=3.0)
    cases = [
        (maze, uniform_policy(maze), "the uniform policy"),
        (maze, _permitted_uniform4(maze), "all 4 moves with probability 1/4"),
        (other, _dirichlet_policy(other, rng), "a random policy on maze ['S..#.', '.#...', '...#G']"),
    ]
    hand = {
        (1, 11): (10 / 3, "1/3 x 10: of the 3 permitted moves only 'down' enters the goal"),
        (2, 8): (10 / 6, "1/2 x 10/3: 'down' leads to cell 11, 'up' cannot reach the goal in time"),
        (6, 0): (10 / 81, "the start with the whole budget"),
    }
    for number, (m, pi, name) in enumerate(cases):
        V = expected_returns(m, pi)
        for k in range(1, m.max_steps + 1):
            worked = {cell: entry for (kk, cell), entry in hand.items() if number == 0 and kk == k}  # by hand
            _run_backup(c, fn, m, pi, V[k - 1], V[k], f"V_{k} from V_{k - 1} ({name})", worked)
    # any V_{k-1} works, not only this policy's: random values (0 at the goal and in walls)
    for m in (maze, other):
        pi = _dirichlet_policy(m, rng)
        v = np.where(m.walls, 0.0, rng.uniform(0.0, m.goal_reward, m.n_cells))
        v[m.goal] = 0.0
        _run_backup(c, fn, m, pi, v, reference_bellman_backup(m, pi, v), "a random policy and random values_next")


# ---------------------------------------------------------------------------------------------
# monte_carlo_estimate
# ---------------------------------------------------------------------------------------------

MC_Z = 4.5  # a correct estimate lies within 4.5 standard errors of the exact value (p ~ 7e-6 to fail)
MC_SE_RATIO = (0.4, 2.5)  # the reported standard error, relative to the exact one


def _exact_return(maze: Maze, pi: np.ndarray, steps: int | None = None) -> float:
    """E[return] from the start with ``steps`` moves (default: the maze's budget)."""
    steps = maze.max_steps if steps is None else steps
    if steps == 0:
        return 0.0
    m = Maze(list(maze.layout), max_steps=steps, goal_reward=maze.goal_reward)
    return float(expected_returns(m, pi)[steps, m.start])


def _no_stop_return(maze: Maze, pi: np.ndarray) -> float:
    """E[sum of rewards] when the episode goes on after the goal, paying again at every arrival in G
    (staying in G by a blocked move included): the dynamic programme without the terminal goal."""
    nxt = maze.next_cell_table
    reward = np.where(nxt == maze.goal, maze.goal_reward, 0.0)
    v = np.zeros(maze.n_cells)
    for _ in range(maze.max_steps):
        v = (pi * (reward + v[nxt])).sum(axis=1)
    return float(v[maze.start])


def _greedy(pi: np.ndarray) -> np.ndarray:
    out = np.zeros_like(pi)
    out[np.arange(len(pi)), pi.argmax(axis=1)] = 1.0
    return out


def _run_mc(
    c: Check, fn: Callable, maze: Maze, pi: np.ndarray, n: int, rng: np.random.Generator, what: str
) -> tuple[float, float]:
    given = pi.copy()
    got = c.call(
        fn,
        maze,
        given,
        n,
        rng,
        call=what,
        hints=[
            ("episode is over", "stop the episode as soon as terminated or truncated is True (break), then reset()"),
            ("probabilities do not sum", "pass one row of the policy: rng.choice(4, p=policy[cell])"),
        ],
    )
    if isinstance(got, np.ndarray) and got.shape == (2,):
        got = tuple(got)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        c.fail(
            f"{what}: return a pair (mean, standard_error), e.g. "
            f"`return returns.mean(), returns.std(ddof=1) / np.sqrt(n_episodes)`; got {type(got).__name__}"
        )
    mean = _as_float(c, got[0], f"{what}: the mean")
    se = _as_float(c, got[1], f"{what}: the standard error")
    c.expect(np.array_equal(given, pi), f"{what}: your function changed the policy array in place")
    return mean, se


def _check_se(c: Check, se: float, sd: float, n: int, what: str) -> None:
    want = sd / math.sqrt(n)
    low, high = MC_SE_RATIO
    if math.isfinite(se) and low * want <= se <= high * want:
        c.passed += 1
        return
    named = [
        (sd, "that is the standard deviation of the returns; the standard error divides it by sqrt(n_episodes)"),
        (sd**2, "that is the variance of the returns; the standard error is std / sqrt(n_episodes)"),
        (sd**2 / n, "that is variance / n_episodes: take its square root, std / sqrt(n_episodes)"),
        (sd / n, "divide the standard deviation by sqrt(n_episodes), not by n_episodes"),
    ]
    if math.isfinite(se) and se > 0:
        value, message = min(named, key=lambda m: abs(math.log(se / m[0])) if m[0] > 0 else math.inf)
        if value > 0 and abs(math.log(se / value)) < math.log(1.6):
            c.fail(f"{what}: standard error {_number(se)} — {message}")
    c.fail(
        f"{what}: expected a standard error of about {_number(want)} (std of the returns "
        f"{_number(sd)} / sqrt({n})), got {_number(se)}"
    )


def _check_mean(
    c: Check,
    mean: float,
    exact: float,
    se: float,
    reward: float,
    n: int,
    what: str,
    mistakes: Sequence[tuple[float, str]],
) -> None:
    if abs(mean - exact) <= MC_Z * se:
        c.passed += 1
        return
    if mistakes:  # the nearest mistake, if it is nearer than the truth and within its own noise
        value, message = min(mistakes, key=lambda m: abs(mean - m[0]))
        noise = max(se, math.sqrt(abs(value) * max(reward, abs(value)) / n))  # ~ its standard error
        if abs(mean - value) < min(abs(mean - exact), 2 * MC_Z * noise):
            c.fail(
                f"{what}: your estimate {_number(mean)} is far from the exact {_number(exact)} "
                f"(standard error {_number(se)}) and close to {_number(value)}: {message}"
            )
    c.fail(
        f"{what}: expected about {_number(exact)} ± {_number(2 * se)} (the exact expected return), got "
        f"{_number(mean)} — play each episode from maze.start for at most maze.max_steps moves, sample each "
        "move from policy[cell], stop at the goal, and average the returns"
    )


def _check_se_exactly(c: Check, fn: Callable, maze: Maze, pi: np.ndarray, n: int = 6) -> None:
    """A few episodes, where ddof matters: every return is 0 or goal_reward, so the mean says how many
    episodes succeeded, and that fixes the sample's std (ddof=1) whatever order the draws came in."""
    for seed in range(SEED + 10, SEED + 30):
        what = f"{n} episodes (seed {seed})"
        mean, se = _run_mc(c, fn, maze, pi, n, np.random.default_rng(seed), what)
        k = mean * n / maze.goal_reward
        if not numbers_close(k, round(k)) or not 0 < round(k) < n:
            continue  # all succeeded or all failed (both std are 0); other cases check the mean
        p = round(k) / n
        sample = maze.goal_reward * math.sqrt(p * (1 - p) * n / (n - 1)) / math.sqrt(n)  # std(ddof=1) / sqrt(n)
        population = maze.goal_reward * math.sqrt(p * (1 - p)) / math.sqrt(n)  # std(ddof=0) / sqrt(n)
        if numbers_close(se, population):
            c.fail(
                f"{what}: standard error {_number(se)}, expected {_number(sample)} — you used std with ddof=0 "
                "(np.std's default, the population std); the sample std divides by n − 1: "
                "returns.std(ddof=1) / np.sqrt(n_episodes)"
            )
        c.expect(
            numbers_close(se, sample),
            f"{what}: {round(k)} of {n} episodes succeeded (mean {_number(mean)}), so the standard error "
            f"is std(ddof=1) / sqrt({n}) = {_number(sample)}; got {_number(se)}",
        )
        return


def _mc_case(c: Check, fn: Callable, maze: Maze, pi: np.ndarray, n: int, seed: int, what: str, named: bool) -> None:
    rng = np.random.default_rng(seed)
    mean, se = _run_mc(c, fn, maze, pi, n, rng, what)
    exact = _exact_return(maze, pi)
    sd = math.sqrt(max(maze.goal_reward * exact - exact**2, 0.0))  # the return is 0 or goal_reward
    mistakes = []
    if named:
        mistakes = [
            (
                _exact_return(maze, _permitted_uniform4(maze)),
                "you ignored the policy (all 4 moves equally likely, "
                "like env.action_space.sample()); draw each move "
                "from policy[cell]: rng.choice(4, p=policy[cell])",
            ),
            (
                _exact_return(maze, uniform_policy(maze)),
                "you ignored the policy (uniform over the permitted moves); "
                "draw each move with rng.choice(4, p=policy[cell])",
            ),
            (
                _exact_return(maze, _greedy(pi)),
                "you always took the most likely move (argmax); SAMPLE it: rng.choice(4, p=policy[cell])",
            ),
            (
                _no_stop_return(maze, pi),
                "you did not stop at the goal: the episode ends when the agent enters G "
                "(terminated), so the reward is collected once",
            ),
            (
                _exact_return(maze, pi, maze.max_steps - 1),
                f"your episodes are one move too short: the budget is maze.max_steps = {maze.max_steps} moves",
            ),
            (
                _exact_return(maze, pi, maze.max_steps + 1),
                f"your episodes are one move too long: the budget is maze.max_steps = {maze.max_steps} moves",
            ),
            (
                exact * 10.0 / maze.goal_reward,
                f"use maze.goal_reward (here {_number(maze.goal_reward)}) or the "
                "reward env.step returns, not a hard-coded 10",
            ),
        ]
    _check_mean(c, mean, exact, sd / math.sqrt(n), maze.goal_reward, n, what, mistakes)
    _check_se(c, se, sd, n, what)


@exercise_check("monte_carlo_estimate")
def check_monte_carlo_estimate(c: Check, fn: Callable) -> None:
    """Check ``monte_carlo_estimate(maze, policy, n_episodes, rng) -> (mean, standard_error)``: the mean
    must lie within 4.5 standard errors of the exact expected return (``expected_returns``), the
    standard error near std / sqrt(n). Catches the policy ignored, argmax instead of sampling, no
    stop at the goal, a step budget off by one, a hard-coded reward of 10, the standard deviation
    (or variance) instead of the standard error, std with ddof=0 (exactly, on 6 episodes), and an rng
    that is not used."""
    # 8 moves on the default maze: the goal can be reached before the budget runs out, and with some
    # weight on blocked moves every mistake above gives a clearly different value. goal_reward 0.5 keeps
    # the standard deviation (0.25), the variance and the standard error far apart.
    maze = Maze(max_steps=8, goal_reward=0.5)
    pi = 0.7 * _toward_goal_policy(maze) + 0.3 * _permitted_uniform4(maze)
    _mc_case(c, fn, maze, pi, 3000, SEED + 1, "8 moves, goal_reward 0.5, a policy mostly toward the goal", True)
    rng = np.random.default_rng(SEED)
    state = rng.bit_generator.state
    first = _run_mc(c, fn, maze, pi, 200, rng, "200 episodes")
    c.expect(
        rng.bit_generator.state != state,
        "your function did not draw from the rng it was given: sample each "
        "move with rng.choice(4, p=policy[cell]) (or rng.random())",
    )
    # The same seed must give the same result. The estimate takes few distinct values (k successes of 200),
    # so two unseeded runs agree by chance about 7% of the time: compare four seeds, each run twice.
    same = first == _run_mc(c, fn, maze, pi, 200, np.random.default_rng(SEED), "200 episodes, the same seed again")
    for seed in (SEED + 3, SEED + 4, SEED + 5):
        runs = [
            _run_mc(c, fn, maze, pi, 200, np.random.default_rng(seed), f"200 episodes, seed {seed}") for _ in range(2)
        ]
        same = same and runs[0] == runs[1]
    c.expect(
        same,
        "the same seed gave different results: draw every random number from rng "
        "(not np.random.choice or random.random)",
    )
    _check_se_exactly(c, fn, maze, pi)
    maze = Maze()
    _mc_case(c, fn, maze, uniform_policy(maze), 2000, SEED + 2, "the worked example (uniform policy, 10/81)", False)

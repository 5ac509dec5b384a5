"""The maze of notebook 01 as a conversation: an environment a language model walks turn by turn.

Each turn the environment says where the walker is, and the walker answers with one move::

    system: You walk through a maze to reach the goal. Answer with one move: right, left, up or down.
    user:   You are at row 0, column 2. The goal is at row 4, column 2. Moves left: 6.
            Permitted moves: left, down. Your move?
    assistant: down
    user:   You are at row 1, column 2. ... Moves left: 5. Permitted moves: left, up, down. Your move?
    ...

The rules are ``toy_envs.maze.Maze``'s: reward ``goal_reward`` (10) on entering the goal, which ends the episode,
0 otherwise; ``max_steps`` (6) moves; a move into a wall or off the grid is wasted (the walker stays). Rows and
columns count from 0, as ``Maze.cell_to_rc`` does.

A reply that is not a move is a turn too: the environment answers with a short error and the observation again,
and the move is wasted, as a bump into a wall is. Nothing a walker writes is ever executed or raises: a model that
cannot write a move is an agent that stands still.

- ``TextMazeTask``: the task the training loop runs (``minirl.protocols.EpisodicTask``): prompts are start cells,
  an answer is an episode (``minirl.episodes.sample_episodes`` plays it), the reward is the episode's return.
- ``MazeWalk``: one episode as a conversation (``first_message``, ``step(reply)``), and its record ``MazeEpisode``.
- ``parse_move``: a reply -> an action index, or None.
- ``uniform_reply``: the reply of the uniformly random walker over the permitted moves (notebook 01's policy), the
  demonstrations of a warm start that teaches the format and nothing about the way.
- ``uniform_success``: the exact probability that the uniform walker reaches the goal from each cell (dynamic
  programming, ``toy_envs.maze_values``): what a warm-started model must match before RL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import torch

from toy_envs.episodic import EpisodeScores
from toy_envs.maze import Maze, uniform_policy
from toy_envs.maze_layout import ACTION_NAMES, DEFAULT_LAYOUT
from toy_envs.maze_values import expected_returns

__all__ = [
    "MAZE_SYSTEM",
    "MAX_REPLY_CHARS",
    "MazeEpisode",
    "MazePrompt",
    "MazeWalk",
    "TextMazeTask",
    "floor_cells",
    "observation",
    "parse_move",
    "uniform_reply",
    "uniform_success",
]

MAZE_SYSTEM = "You walk through a maze to reach the goal. Answer with one move: right, left, up or down."
"""The system message of every maze conversation."""

MAX_REPLY_CHARS = 40
"""A reply longer than this is not read as a move (``parse_move``): one word is the asked form."""

_MOVE = re.compile(r"^\s*([a-z]+)\s*[.!]?\s*$")


def observation(maze: Maze, cell: int, steps_left: int) -> str:
    """What the walker is told on a turn: its row and column, the goal's, the moves left and the permitted moves."""
    row, col = maze.cell_to_rc(cell)
    goal_row, goal_col = maze.cell_to_rc(maze.goal)
    permitted = ", ".join(ACTION_NAMES[a] for a in np.flatnonzero(maze.action_mask(cell)))
    return (
        f"You are at row {row}, column {col}. The goal is at row {goal_row}, column {goal_col}. "
        f"Moves left: {steps_left}. Permitted moves: {permitted}. Your move?"
    )


def parse_move(reply: str) -> int | None:
    """The action index (``ACTION_NAMES``) of a reply that is one move word (any case, an optional full stop),
    else None: an empty reply, a sentence, an echo of the observation, a word that is not a move. Never raises."""
    if not isinstance(reply, str) or len(reply) > MAX_REPLY_CHARS:
        return None
    match = _MOVE.match(reply.lower())
    if match is None or match.group(1) not in ACTION_NAMES:
        return None
    return ACTION_NAMES.index(match.group(1))


def floor_cells(maze: Maze) -> list[int]:
    """The cells a walk can start from: every cell that is neither a wall nor the goal, in index order."""
    return [c for c in range(maze.n_cells) if not maze.is_wall(c) and c != maze.goal]


def uniform_success(maze: Maze) -> np.ndarray:
    """P(reach the goal within ``max_steps`` | start at cell s) for the uniform walker over permitted moves:
    float64 ``[n_cells]``, exact (``expected_returns`` / ``goal_reward``: the only reward is the goal's).
    The course's figures: 1/3 from one move before the goal with one move left, and so on (notebook 01)."""
    return expected_returns(maze, uniform_policy(maze))[maze.max_steps] / maze.goal_reward


def uniform_reply(maze: Maze, cell: int, generator: torch.Generator | None) -> str:
    """One move drawn uniformly from the permitted moves at ``cell`` (notebook 01's random walker), as a reply."""
    permitted = np.flatnonzero(maze.action_mask(cell))
    pick = int(torch.randint(len(permitted), (), generator=generator))
    return ACTION_NAMES[int(permitted[pick])]


@dataclass
class MazeEpisode:
    """One walk, as the environment kept it: where it started, each reply, the move it was read as (None: not a
    move), the cells visited (the start first) and the return.

    ``success``: the goal was reached; ``turns``: the replies the walker wrote."""

    start: int
    replies: list[str] = field(default_factory=list)
    moves: list[int | None] = field(default_factory=list)
    cells: list[int] = field(default_factory=list)
    reward: float = 0.0
    success: bool = False

    @property
    def turns(self) -> int:
        return len(self.replies)

    @property
    def invalid(self) -> int:
        """Replies that were not a move."""
        return sum(m is None for m in self.moves)


class MazeWalk:
    """One episode of the maze as a conversation.

    ``first_message()`` is the first observation; ``step(reply)`` takes the walker's reply and returns
    ``(message, reward, done)``: the environment's next message (None once the episode is over), the reward of
    this move and whether the episode ended (goal reached or moves spent). ``episode`` keeps the record."""

    def __init__(self, maze: Maze, start: int):
        if start not in floor_cells(maze):
            raise ValueError(f"start must be a floor cell of the maze (not a wall, not the goal); got {start!r}")
        self.maze = maze
        self.cell = start
        self.steps_left = maze.max_steps
        self.done = False
        self.episode = MazeEpisode(start=start, cells=[start])

    def first_message(self) -> str:
        return observation(self.maze, self.cell, self.steps_left)

    def step(self, reply: str) -> tuple[str | None, float, bool]:
        if self.done:
            raise RuntimeError("the episode is over: start a new MazeWalk")
        move = parse_move(reply)
        ep = self.episode
        ep.replies.append(reply)
        ep.moves.append(move)
        before = self.cell
        if move is not None:
            self.cell = self.maze.next_cell(self.cell, move)
        self.steps_left -= 1
        ep.cells.append(self.cell)
        reward = self.maze.goal_reward if self.cell == self.maze.goal else 0.0
        ep.reward += reward
        ep.success = ep.success or reward > 0
        self.done = reward > 0 or self.steps_left == 0
        if self.done:
            return None, reward, True
        if move is None:
            shown = reply.strip()[:MAX_REPLY_CHARS] or "an empty reply"
            note = f"'{shown}' is not a move: answer with one word, right, left, up or down. "
        elif self.cell == before:
            note = f"You cannot move {ACTION_NAMES[move]} from here: you stay. "
        else:
            note = ""
        return note + observation(self.maze, self.cell, self.steps_left), reward, False


@dataclass(frozen=True)
class MazePrompt:
    """The start of one walk: the chat the model reads first (system message, first observation) and the cell."""

    messages: tuple[dict, ...] = field(repr=False)
    start: int


@dataclass
class TextMazeTask(EpisodeScores):
    """The maze walked in text, as a task of the training loop (``minirl.protocols.EpisodicTask``).

    A prompt is a start cell (``MazePrompt``); an answer is the episode the model walks from it with a fresh
    ``MazeWalk`` (``make_env``), at most ``max_turns`` = ``maze.max_steps`` replies; its reward is the return
    (``goal_reward`` when the goal is reached, else 0). ``is_correct``: the goal was reached; ``format_ok``: every
    reply was a move. ``layout``: the maze's rows (``toy_envs.maze``; notebook 01's by default).

    Training prompts are start cells drawn uniformly from the floor cells; the evaluation prompts are every floor
    cell in index order (the maze has no held-out cells: the question is how well the walker does from each)."""

    layout: tuple[str, ...] = DEFAULT_LAYOUT
    system: str = MAZE_SYSTEM
    maze: Maze = field(init=False, repr=False, compare=False)
    start_cells: list[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.layout = tuple(self.layout)  # a run folder's config.json gives it back as a list
        self.maze = Maze(list(self.layout))
        self.start_cells = floor_cells(self.maze)

    @property
    def max_turns(self) -> int:
        return self.maze.max_steps

    @property
    def max_reward(self) -> float:
        """The best return (the goal reached): a window where every walk earned it is solved, not stuck."""
        return float(self.maze.goal_reward)

    def prompt(self, start: int) -> MazePrompt:
        if start not in self.start_cells:
            raise ValueError(f"start must be a floor cell of the maze, one of {self.start_cells}; got {start!r}")
        first = observation(self.maze, start, self.maze.max_steps)
        messages = ({"role": "system", "content": self.system}, {"role": "user", "content": first})
        return MazePrompt(messages, start)

    def sample_prompts(self, n: int, generator: torch.Generator | None = None, /) -> list[MazePrompt]:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int; got {n!r}")
        picks = torch.randint(len(self.start_cells), (n,), generator=generator).tolist()
        return [self.prompt(self.start_cells[i]) for i in picks]

    def eval_prompts(self, n: int, generator: torch.Generator | None = None, /) -> list[MazePrompt]:
        """The first ``n`` floor cells in index order (all of them for ``n`` >= their number)."""
        return [self.prompt(c) for c in self.start_cells[:n]]

    def make_env(self, prompt: MazePrompt, /) -> MazeWalk:
        return MazeWalk(self.maze, prompt.start)

    def demonstrate(self, env: MazeWalk, generator: torch.Generator | None, /) -> str:
        """The uniform walker's reply (``uniform_reply``): a warm start on it teaches the format, not the way."""
        return uniform_reply(self.maze, env.cell, generator)

    def demonstration_choices(self, env: MazeWalk, /) -> list[str]:
        """The replies ``demonstrate`` draws from at ``env`` as it stands, each as likely: the permitted moves. A
        warm start can imitate this distribution instead of one draw from it (``minirl.episodes``,
        ``choice_demonstrations``)."""
        return [ACTION_NAMES[int(a)] for a in np.flatnonzero(self.maze.action_mask(env.cell))]

    def _own_diagnostics(self, prompts: list[MazePrompt], answers: list[list[MazeEpisode]]) -> dict[str, float]:
        """``success from cell c``: the share of the episodes from each start cell that reached the goal, the
        cells in order (a mean over cells can hide one the walker never solves)."""
        by_cell: dict[int, list[bool]] = {}
        for prompt, group in zip(prompts, answers):
            by_cell.setdefault(prompt.start, []).extend(e.success for e in group)
        return {f"success from cell {c}": sum(ok) / len(ok) for c, ok in sorted(by_cell.items())}

    def transcript(self, prompt: MazePrompt, episode: MazeEpisode, /) -> str:
        """One line of a walk: the start, each reply (a reply that was not a move quoted), the cells visited."""
        row, col = self.maze.cell_to_rc(episode.start)
        replies = ", ".join(r if m is not None else repr(r) for r, m in zip(episode.replies, episode.moves))
        end = "the goal" if episode.success else f"cell {episode.cells[-1]}, not the goal"
        return f"from cell {episode.start} (row {row}, column {col}): {replies} -> {end} (cells {episode.cells})"

    def _well_formed(self, episode: MazeEpisode) -> bool:
        """Every reply was a move."""
        return episode.invalid == 0

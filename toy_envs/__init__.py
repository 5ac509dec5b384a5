"""toy_envs: small environments for learning RL for LLMs.

- ``toy_envs.maze``: a grid maze (a multi-step MDP, Gymnasium API); ``toy_envs.maze_values``: its exact expected
  returns (dynamic programming) and Monte Carlo estimates; ``maze_layout`` and ``maze_draw`` hold its grid and
  its pictures.
- ``toy_envs.sorting``: the number-sorting task (a contextual bandit whose actions are sequences).
- ``toy_envs.variable_sorting``: the same with prompts of varying length and an end-of-sequence token.
- ``toy_envs.text_tasks``: sorting and addition as chats and text answers, for a real language model (built on
  ``toy_envs.text_base``, what every text task shares).
- ``toy_envs.reasoning``: arithmetic answered with or without a ``<think>`` scratchpad, with worked solutions.
"""

from toy_envs.maze import ACTION_NAMES, DEFAULT_LAYOUT, Maze, draw_maze, uniform_policy
from toy_envs.maze_values import expected_returns, monte_carlo_returns
from toy_envs.reasoning import ReasoningTask
from toy_envs.sorting import (
    REWARDS,
    SortingTask,
    exact_match_reward,
    format_example,
    sort_distance_reward,
    sort_inclusion_ordering_reward,
)
from toy_envs.text_tasks import TEXT_TASKS, TextAdditionTask, TextPrompt, TextSortTask
from toy_envs.variable_sorting import VARIABLE_REWARDS, VariableLengthSortingTask

__all__ = [
    "ACTION_NAMES",
    "DEFAULT_LAYOUT",
    "Maze",
    "REWARDS",
    "ReasoningTask",
    "SortingTask",
    "TEXT_TASKS",
    "TextAdditionTask",
    "TextPrompt",
    "TextSortTask",
    "VARIABLE_REWARDS",
    "VariableLengthSortingTask",
    "draw_maze",
    "exact_match_reward",
    "expected_returns",
    "format_example",
    "monte_carlo_returns",
    "sort_distance_reward",
    "sort_inclusion_ordering_reward",
    "uniform_policy",
]

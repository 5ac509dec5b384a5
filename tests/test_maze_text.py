"""toy_envs.maze_text: the maze of notebook 01 as a conversation, and its task for the training loop.

Tolerances: ``uniform_success`` is float64 dynamic programming on a few numbers (exact to ~1e-15; ``abs=1e-12``);
the Monte Carlo check compares a binomial estimate from N episodes with the exact probability p, within 4 standard
errors sqrt(p (1 - p) / N) (a false alarm about once in 16,000 runs; the generator is seeded, so never here).
"""

import math

import pytest
import torch

from toy_envs.maze import Maze
from toy_envs.maze_text import (
    MAZE_SYSTEM,
    MazeEpisode,
    MazeWalk,
    TextMazeTask,
    floor_cells,
    observation,
    parse_move,
    uniform_reply,
    uniform_success,
)

MAZE = Maze()


def test_the_observation_says_where_the_walker_is_and_what_it_may_do():
    assert observation(MAZE, 0, 6) == (
        "You are at row 0, column 0. The goal is at row 4, column 2. Moves left: 6. "
        "Permitted moves: right, down. Your move?"
    )
    # cell 11, one move before the goal: up, left and down (right is off the grid)
    assert observation(MAZE, 11, 1).endswith("Moves left: 1. Permitted moves: left, up, down. Your move?")


@pytest.mark.parametrize(
    ("reply", "move"),
    [("down", 3), (" Down.", 3), ("RIGHT!", 0), ("left\n", 1), ("up", 2)],
)
def test_a_move_word_is_read_whatever_its_case_and_full_stop(reply, move):
    assert parse_move(reply) == move


@pytest.mark.parametrize(
    "reply",
    ["", "go down", "downward", "down down", "You are at row 0, column 0.", "d o w n", "down" + " " * 40, None, 3],
)
def test_anything_but_one_move_word_is_not_a_move(reply):
    assert parse_move(reply) is None


def test_the_uniform_walkers_success_is_the_course_value_over_the_goal_reward():
    """Notebook 01's figures: from cell 11 with one move left the uniform walker is worth 10/3, so its chance of
    success with the whole budget is at least 1/3; from the start with 6 moves, 10/81 in return: 1/81."""
    success = uniform_success(MAZE)
    assert success[MAZE.start] == pytest.approx(1 / 81, abs=1e-12)
    assert success[11] > 1 / 3 and success[14] == 0.0 and success[6] == 0.0  # the goal and a wall: no walk
    cells = floor_cells(MAZE)
    assert cells == [0, 1, 2, 3, 4, 5, 8, 9, 10, 11]
    # the uniform walker's 18 %: the mean over the floor cells
    assert float(success[cells].mean()) == pytest.approx(0.17788065843621398, abs=1e-12)


def test_walking_the_text_maze_with_the_uniform_replies_matches_the_exact_success():
    """The conversation obeys the maze's rules: N uniform walks from cell 8 succeed as often as DP says."""
    gen, n, cell = torch.Generator().manual_seed(0), 4000, 8
    wins = 0
    for _ in range(n):
        walk = MazeWalk(MAZE, cell)
        done = False
        while not done:
            _, _, done = walk.step(uniform_reply(MAZE, walk.cell, gen))
        wins += walk.episode.success
    p = float(uniform_success(MAZE)[cell])
    assert abs(wins / n - p) < 4 * math.sqrt(p * (1 - p) / n), (wins / n, p)


def test_a_walk_reaches_the_goal_and_ends():
    walk = MazeWalk(MAZE, 11)
    assert walk.first_message() == observation(MAZE, 11, 6)
    assert walk.step("down") == (None, 10.0, True)
    ep = walk.episode
    assert (ep.success, ep.reward, ep.cells, ep.moves, ep.turns, ep.invalid) == (True, 10.0, [11, 14], [3], 1, 0)
    with pytest.raises(RuntimeError, match="the episode is over"):
        walk.step("down")


def test_a_reply_that_is_not_a_move_or_hits_a_wall_is_a_wasted_turn_with_a_short_error():
    walk = MazeWalk(MAZE, 0)
    message, reward, done = walk.step("I think I should go down")
    assert message.startswith("'I think I should go down' is not a move: answer with one word, right, left, up or ")
    assert message.endswith(observation(MAZE, 0, 5)) and (reward, done) == (0.0, False)
    message, _, _ = walk.step("up")  # off the grid: the walker stays
    assert message == "You cannot move up from here: you stay. " + observation(MAZE, 0, 4)
    message, _, _ = walk.step("")
    assert message.startswith("'an empty reply' is not a move")
    walk.step("right")
    assert walk.cell == 1 and walk.steps_left == 2
    walk.step("x" * 500)  # a long reply is cut in the error message, never executed
    assert len(walk.episode.replies[-1]) == 500
    assert walk.step("left") == (None, 0.0, True)  # the budget is spent
    ep = walk.episode
    assert (ep.turns, ep.invalid, ep.success, ep.cells) == (6, 3, False, [0, 0, 0, 0, 1, 1, 0])


def test_a_walk_starts_on_a_floor_cell():
    for bad in (14, 6, -1, 99, "0"):
        with pytest.raises(ValueError, match=r"start must be a floor cell of the maze"):
            MazeWalk(MAZE, bad)


def _episode(reward, invalid=0):
    return MazeEpisode(start=0, replies=["?"] * invalid, moves=[None] * invalid, reward=reward, success=reward > 0)


def test_the_task_draws_start_cells_and_scores_episodes():
    task = TextMazeTask()
    assert task.max_turns == 6 and task.start_cells == floor_cells(MAZE)
    prompts = task.sample_prompts(200, torch.Generator().manual_seed(0))
    assert {p.start for p in prompts} == set(task.start_cells)  # every cell drawn in 200 (each 1/10)
    again = task.sample_prompts(200, torch.Generator().manual_seed(0))
    assert [p.start for p in again] == [p.start for p in prompts]
    first = prompts[0]
    assert first.messages[0] == {"role": "system", "content": MAZE_SYSTEM}
    assert first.messages[1]["content"] == observation(MAZE, first.start, 6)
    assert [p.start for p in task.eval_prompts(100)] == task.start_cells
    assert [p.start for p in task.eval_prompts(3)] == [0, 1, 2]
    answers = [[_episode(10.0), _episode(0.0, invalid=2)], [_episode(0.0), _episode(10.0, invalid=1)]]
    assert task.rewards(prompts[:2], answers).tolist() == [[10.0, 0.0], [0.0, 10.0]]
    assert task.is_correct(prompts[:2], answers).tolist() == [[True, False], [False, True]]
    assert task.format_ok(prompts[:2], answers).tolist() == [[True, False], [True, False]]
    assert isinstance(task.make_env(first), MazeWalk) and task.make_env(first).cell == first.start
    with pytest.raises(ValueError, match=r"n must be a positive int; got 0"):
        task.sample_prompts(0)
    with pytest.raises(ValueError, match=r"start must be a floor cell of the maze, one of \[0, 1, 2"):
        task.prompt(14)


def test_the_diagnostics_count_turns_unusable_replies_and_success_from_each_start_cell():
    task = TextMazeTask()
    prompts = [task.prompt(0), task.prompt(8), task.prompt(0)]  # cell 0 twice: its episodes pool
    walk = MazeEpisode(start=8, replies=["down", "right"], moves=[2, 0], reward=10.0, success=True)
    answers = [[_episode(0.0, invalid=6), _episode(0.0, invalid=2)], [walk, _episode(0.0)], [_episode(10.0)] * 2]
    figures = task.diagnostics(prompts, answers)
    assert figures == {
        "turns": pytest.approx((6 + 2 + 2 + 0 + 0 + 0) / 6),
        "invalid_replies": pytest.approx((6 + 2) / 6),
        "success from cell 0": 0.5,  # 2 of cell 0's 4 episodes
        "success from cell 8": 0.5,
    }
    assert list(figures)[2:] == ["success from cell 0", "success from cell 8"]  # the cells in order
    with pytest.raises(ValueError, match=r"answers must hold a non-empty group of episodes for each of the 3"):
        task.diagnostics(prompts, answers[:2])


def test_the_task_is_an_episodic_task_for_the_loop():
    from minirl.protocols import EpisodicTask, FormatTask, HeldOutTask

    task = TextMazeTask()
    assert isinstance(task, EpisodicTask) and isinstance(task, FormatTask) and isinstance(task, HeldOutTask)


def test_a_run_folder_records_the_task_and_builds_it_back():
    import json

    from minirl.runs import build_task
    from minirl.utils import describe_task

    task = TextMazeTask(layout=("S.", ".G"), system="Walk.")
    described = json.loads(json.dumps(describe_task(task)))  # as config.json keeps it
    args = {"layout": ["S.", ".G"], "system": "Walk."}
    assert described == {"class": "toy_envs.maze_text:TextMazeTask", "args": args}
    again = build_task(described)
    assert again.layout == ("S.", ".G") and again.start_cells == [0, 1, 2] and again.maze.goal == 3


def test_the_command_line_makes_the_maze_task_with_its_recipe():
    import argparse

    from minirl.cli.text import TEXT_TASKS
    from minirl.lm.recipes import MAZE_TOKENS, maze_recipe

    entry = TEXT_TASKS["maze_text"]
    for kind in ("tiny", "pretrained", "pretrained-cuda"):
        recipe = entry.recipe(kind, argparse.Namespace())
        assert recipe == maze_recipe(kind) and recipe.max_new_tokens == MAZE_TOKENS and recipe.eval_prompts == 10
    assert entry.make(argparse.Namespace(), maze_recipe("tiny")) == TextMazeTask()
    # SmolLM2's maze recipe is one on a CPU and a GPU: the top 10 blocks train, no KL term
    assert maze_recipe("pretrained-cuda") == maze_recipe("pretrained")
    assert maze_recipe("pretrained").trainable_layers == 10 and maze_recipe("pretrained").kl_coef == 0.0
    with pytest.raises(ValueError, match=r"kind must be one of \['pretrained', 'pretrained-cuda', 'tiny'\]; got 'gpu'"):
        maze_recipe("gpu")


def test_a_walks_transcript_names_its_start_replies_and_cells():
    task = TextMazeTask()
    walk = task.make_env(task.prompt(8))
    for reply in ("right", "I think up", "down"):
        walk.step(reply)
    line = task.transcript(task.prompt(8), walk.episode)
    row, col = task.maze.cell_to_rc(8)
    assert line.startswith(f"from cell 8 (row {row}, column {col}): right, 'I think up', ")
    assert line.endswith(f"(cells {walk.episode.cells})") and ("-> the goal" in line) == walk.episode.success


def test_a_solved_window_is_not_called_stuck():
    """Every walk reaching the goal (reward 10 in every group): solved, not "cannot learn"."""
    from minirl.diagnostics import cannot_learn

    task = TextMazeTask()
    assert task.max_reward == 10.0
    solved = [{"step": s, "reward": 10.0, "zero_variance_groups": 1.0, "truncated": 0.0} for s in (1, 2)]
    assert cannot_learn(solved, max_reward=task.max_reward) is None
    stuck = [{"step": s, "reward": 5.0, "zero_variance_groups": 1.0, "truncated": 0.0} for s in (1, 2)]
    assert "cannot learn (steps 1-2)" in cannot_learn(stuck, max_reward=task.max_reward)

"""The command line's table of run kinds (minirl.cli.kinds), its help beside each field, and minirl bench's
forwarded benchmarks."""

import argparse
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from minirl.algorithms import AlgoConfig
from minirl.cli import KINDS, TASKS, build_parser, field_help, main, train_command
from minirl.cli.kinds import kind_for, kind_of_config, kind_of_run
from minirl.cli.running import _config
from minirl.lm.recipes import LMRecipe
from minirl.train import TrainConfig
from toy_envs.text_tasks import TextSortTask

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "minirl" / "cli"


def _subparser(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices[name]


def _helps(name: str) -> dict[str, str]:
    """``{dest: help}`` of every flag of one command."""
    return {a.dest: a.help or "" for a in _subparser(name)._actions if a.option_strings}


def test_every_config_field_the_command_line_exposes_has_help():
    for command in ("train", "compare"):
        helps = _helps(command)
        for kind in KINDS:  # TrainConfig, MazeTrainConfig: a flag per field (but those with flags of their own)
            exposed = [f.name for f in dataclasses.fields(kind.config_class) if f.name not in kind.excluded]
            for name in exposed:
                text = re.sub(r"\(default: .*\)$", "", helps.get(name, "")).strip()
                assert text, f"{command} --{name.replace('_', '-')} ({kind.config_class.__name__}) has no help"
        # the language-model recipe's fields a flag changes: help beside the flag and in LMRecipe's docstring
        recipe = {f.name for f in dataclasses.fields(LMRecipe)} & set(helps)
        assert {"few_shot", "max_new_tokens", "sft_steps", "sft_learning_rate", "trainable_layers"} <= recipe
        for name in recipe:
            assert re.sub(r"\(default: .*\)$", "", helps[name]).strip(), name
            assert field_help(LMRecipe).get(name), name
    knobs = [f.name for f in dataclasses.fields(AlgoConfig) if f.name != "name"]  # --set knob=value: any of them
    assert all(field_help(AlgoConfig).get(k) for k in knobs), [k for k in knobs if not field_help(AlgoConfig).get(k)]


def test_no_command_asks_which_kind_a_run_is_outside_the_table():
    question = re.compile(
        r"_is_maze|_is_text|MAZE_CLASS|TEXT_TASK_NAMES|args\.task (==|!=|in)\b|"
        r"== \"(sorting|variable_sorting|maze|text_sort|text_add|reasoning)\"|"
        r"isinstance\([^)]*(MazeTrainConfig|MazePolicy|SortingTask|TextSortTask|TextAdditionTask|ReasoningTask)"
    )
    # below the command line nothing asks either: each kind of config describes and trains itself
    # (TrainConfig / MazeTrainConfig .describe, .run_training), a kept run's figure follows what it measured
    for path in [*sorted(CLI.glob("*.py")), CLI.parent / "compare.py", CLI.parent / "runs.py"]:
        if path.name == "kinds.py":
            continue
        found = [line for line in path.read_text().splitlines() if question.search(line)]
        assert not found, f"{path.name} asks which kind a run is (ask minirl.cli.kinds): {found}"


def test_no_module_is_long():
    """One idea per file, readable in a sitting: no module over 500 lines in the command line's package, and
    none over about that (530) in the kit outside the exercise checks (one module per notebook)."""
    for path in CLI.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 500, path.name
    root = CLI.parents[1]
    long = {
        str(path.relative_to(root)): n
        for folder in ("minirl", "toy_envs")
        for path in (root / folder).rglob("*.py")
        if "checks" not in path.parts and (n := len(path.read_text().splitlines())) > 530
    }
    assert not long, f"modules over 530 lines (split one idea out): {long}"


def test_the_table_covers_every_task_once():
    text = ("text_sort", "text_add", "reasoning", "maze_text", "calculator")
    assert TASKS == ("sorting", "variable_sorting", "maze", *text)
    assert len(set(TASKS)) == len(TASKS) and TASKS == tuple(t for k in KINDS for t in k.tasks)
    assert [kind_for(t).name for t in TASKS] == ["sorting", "sorting", "maze", *["text"] * len(text)]
    for kind in KINDS:
        for field in dataclasses.fields(kind):
            assert getattr(kind, field.name) is not None, (kind.name, field.name)


def test_a_config_and_a_kept_run_find_their_kind():
    parse = build_parser().parse_args
    sorting = _config(parse(["train", "--task", "variable_sorting"]), "grpo", 0, False)
    maze = _config(parse(["train", "--task", "maze", "--algo", "ppo"]), "ppo", 0, False)
    text = TrainConfig(task=TextSortTask())
    assert [kind_of_config(c).name for c in (sorting, maze, text)] == ["sorting", "maze", "text"]
    assert kind_of_run({"task": {"class": "toy_envs.maze:Maze"}}).name == "maze"
    assert kind_of_run({"task": {"class": "toy_envs.reasoning:ReasoningTask"}, "model": {}}).name == "text"
    assert kind_of_run({"task": {"class": "my.tasks:Other"}}).name == "sorting"  # a task of no kind's: a toy run
    assert kind_of_run({"task": {"class": "my.tasks:Other"}, "model": {}}).name == "text"


def test_a_maze_compare_run_stores_the_train_command_that_rebuilds_its_config():
    args = build_parser().parse_args(["compare", "--task", "maze", "--algos", "ppo", "--gamma", "0.9", "--out", "x"])
    config = _config(args, "ppo", 2, False)
    command = train_command(config, "ppo", args)
    assert command == ["train", "--task", "maze", "--algo", "ppo", "--seed", "2", "--gamma", "0.9"]
    again = build_parser().parse_args(command)
    assert _config(again, again.algo, again.seed, False) == config


def test_the_text_command_is_the_flags_given():
    args = build_parser().parse_args(
        ["compare", "--task", "text_sort", "--model", "tiny", "--steps", "2", "--set", "kl_coef=0.05"]
        + ["--algos", "grpo", "--seeds", "2", "--out", "x", "--save-every", "3", "--no-progress"]
    )
    config = TrainConfig(task=TextSortTask(), seed=1)
    assert train_command(config, "grpo", args) == [
        "train",
        "--task",
        "text_sort",
        "--no-progress",
        "--set",
        "kl_coef=0.05",
        "--steps",
        "2",
        "--model",
        "tiny",
        "--algo",
        "grpo",
        "--seed",
        "1",
        "--save-every",
        "3",
    ]


def test_bench_forwards_a_benchmark_module_its_arguments(monkeypatch):
    import minirl.bench.reasoning_rl as reasoning_rl

    seen = []
    monkeypatch.setattr(reasoning_rl, "main", lambda argv: seen.append(argv) or 7)
    assert main(["bench", "--reasoning-rl", "--seeds", "0", "1", "--quick", "--save"]) == 7
    assert seen == [["--seeds", "0", "1", "--quick", "--save"]]
    assert main(["bench", "--reasoning-rl"]) == 7 and seen[-1] == []
    with pytest.raises(SystemExit, match="--quick before --reasoning-rl: its flags are its own"):
        main(["bench", "--quick", "--reasoning-rl", "--seeds", "0"])


def test_bench_help_lists_every_benchmark_and_each_one_its_own(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    out = capsys.readouterr().out
    for flag in (
        "--lm",
        "--trl",
        "--reasoning-base",
        "--reasoning-rl",
        "--reasoning-families",
        "--cpu-decode",
        "--agents",
    ):
        assert flag in out, flag
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "--cpu-decode", "--help"])
    assert exit_info.value.code == 0 and "--no-model" in capsys.readouterr().out  # cpu_decode's own flags


def test_python_m_minirl_cli_is_the_command():
    done = subprocess.run(
        [sys.executable, "-m", "minirl.cli", "compare", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0 and "usage: minirl compare" in done.stdout, done.stderr

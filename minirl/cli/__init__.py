"""The ``minirl`` command: the ladder demo, one training run, a comparison over seeds, the benchmarks.

    minirl ladder  --seeds 3 --plot reward_curves.png          # the main job: six rungs, one knob apart
    minirl train   --task sorting --algo grpo --steps 300 --seed 0 --plot grpo.png
    minirl train   --task sorting --algo clipped --set inner_epochs=8 --set clip_eps_low=0.1
    minirl compare --task sorting --algos naive,baselined,clipped,grpo --seeds 3 --plot curves.png
    minirl compare --task maze --algos reinforce,reinforce_baseline,ppo --seeds 3 --plot maze.png
    minirl compare --task variable_sorting --length 4 --algos grpo,dapo,dr_grpo --seeds 3 --plot lengths.png
    minirl train   --task text_sort --model smollm2-135m --algo grpo --steps 40 --plot smollm2.png
    minirl train   --task text_sort --model tiny --plot tiny_lm.png
    minirl bench   [--lm | --trl | --reasoning-base | --reasoning-rl | --reasoning-families | --cpu-decode]

The package, one module a part:

    kinds.py       the table of run kinds (sorting, maze, text): what each kind of run is and does
    text.py        the text kind's pieces: the recipe, the model, the text tasks
    flags.py       flags from the config dataclasses (their docstrings as help), ``--set``, and back
    parser.py      build_parser: every command's flags
    running.py     runs built, trained, kept and summed up (train_command: a run's ``minirl train`` command)
    train.py       train, eval, generate;  compare.py: compare, ladder, plot;  bench.py: bench
    evaluation.py  eval and generate for a model that answers prompts

The training flags are generated from the config dataclasses (``TrainConfig`` for the sorting and text tasks,
``MazeTrainConfig`` for the maze), with their docstrings as help; a flag left out keeps the config's (or the
language-model recipe's) default. ``--set knob=value`` changes any ``AlgoConfig`` knob of the chosen algorithm.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

import torch

from minirl.cli.bench import cmd_bench, one_thread
from minirl.cli.compare import cmd_compare, cmd_ladder, cmd_plot
from minirl.cli.evaluation import EVAL_SAMPLING_SEED
from minirl.cli.flags import MAZE_FLAGS_EXCLUDED, TRAIN_FLAGS_EXCLUDED, add_config_flags, field_help
from minirl.cli.kinds import KINDS, TASKS, kind_for, run_summary
from minirl.cli.parser import build_parser
from minirl.cli.running import _config as _config
from minirl.cli.running import train_command
from minirl.cli.text import TEXT_PASS_K, text_recipe, text_train_flags
from minirl.cli.train import cmd_eval, cmd_generate, cmd_train

__all__ = [
    "EVAL_SAMPLING_SEED",
    "KINDS",
    "MAZE_FLAGS_EXCLUDED",
    "TASKS",
    "TEXT_PASS_K",
    "TRAIN_FLAGS_EXCLUDED",
    "add_config_flags",
    "build_parser",
    "field_help",
    "main",
    "run_summary",
    "text_recipe",
    "text_train_flags",
    "train_command",
]

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "train": cmd_train,
    "eval": cmd_eval,
    "generate": cmd_generate,
    "compare": cmd_compare,
    "ladder": cmd_ladder,
    "bench": cmd_bench,
    "plot": cmd_plot,
}


def _one_thread(args: argparse.Namespace) -> bool:
    """Whether the command trains tiny models, for which one torch thread is faster than two fighting over 2
    cores: a toy kind's train or compare (``RunKind.in_processes``), the ladder, the toy benchmark."""
    if args.command in ("train", "compare"):
        return kind_for(args.task).in_processes
    if args.command == "bench":
        return one_thread(args)
    return args.command == "ladder"


def main(argv: list[str] | None = None) -> int:
    argv = list(argv) if argv is not None else sys.argv[1:]
    args = build_parser().parse_args(argv)
    args.argv = argv
    if _one_thread(args):
        torch.set_num_threads(1)
    try:
        return COMMANDS[args.command](args)
    except ValueError as err:  # a bad value (the configs name the argument and the range): one line, exit 2
        if os.environ.get("MINIRL_DEBUG"):
            raise
        print(f"minirl {args.command}: error: {err} (MINIRL_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 2

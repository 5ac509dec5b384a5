"""The ``minirl`` command's flags: one parser, its commands and their flags, each with its help beside it.

The training flags come from the run kinds' table (``minirl.cli.kinds``): each config class's fields (their help
from its docstring, ``minirl.cli.flags``), then each kind's own flags. The benchmarks' flags are the bench
command's (``minirl.cli.bench``).
"""

from __future__ import annotations

import argparse

from minirl.cli.bench import add_bench_flags
from minirl.cli.flags import add_config_flags, add_save
from minirl.cli.kinds import KINDS, TASKS

__all__ = ["build_parser"]


def _add_out_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        default=None,
        metavar="FOLDER",
        help="keep each run in a run folder of its own, FOLDER/ALGO_seedN (minirl.runs); "
        "minirl plot FOLDER draws the curves again",
    )
    p.add_argument("--overwrite", action="store_true", help="with --out: replace run folders that exist")
    p.add_argument(
        "--save-every",
        type=int,
        default=0,
        metavar="N",
        help="with --out: checkpoint every run every N steps (0: on Ctrl-C only); "
        "minirl train --resume FOLDER/ALGO_seedN continues one",
    )


def _add_run_flags(p: argparse.ArgumentParser) -> None:
    """The flags ``train`` and ``compare`` share: the task, the knobs, and every kind's flags."""
    p.add_argument("--task", choices=TASKS, default=TASKS[0])
    p.add_argument("--plot", default=None, help="save reward curves to this PNG")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help="change a knob of the algorithm (an AlgoConfig field), e.g. --set inner_epochs=8 "
        "--set clip_eps_high=0.28; repeatable",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        help="toy tasks: runs training side by side in separate processes (0 = one per CPU core)",
    )
    add_save(p)
    seen: set[str] = set()
    classes: list[type] = []
    for kind in KINDS:  # one group per config class, a flag per field
        if kind.config_class not in classes:
            classes.append(kind.config_class)
            add_config_flags(p.add_argument_group(kind.flag_title), kind.config_class, kind.excluded, seen)
    for kind in KINDS:
        kind.add_flags(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minirl", description="Reinforcement learning for LLMs, from scratch.")
    sub = parser.add_subparsers(dest="command", required=True)

    p_train = sub.add_parser("train", help="train one algorithm with one seed")
    _add_run_flags(p_train)
    p_train.add_argument("--algo", default="grpo")
    p_train.add_argument("--seed", type=int, default=0)
    k = p_train.add_argument_group("keeping the run (minirl.runs)")
    k.add_argument(
        "--out",
        default=None,
        metavar="FOLDER",
        help="keep the run in FOLDER: config, metrics, checkpoints, curves, the trained model ('auto': "
        "runs/TASK_ALGO_seedN_UTCTIME); without it nothing is written",
    )
    k.add_argument("--resume", default=None, metavar="FOLDER", help="continue the run in FOLDER from its checkpoint")
    k.add_argument(
        "--save-every", type=int, default=0, metavar="N", help="checkpoint every N steps (0: on Ctrl-C only)"
    )
    k.add_argument("--overwrite", action="store_true", help="with --out: replace a run folder that exists")
    k.add_argument(
        "--tensorboard",
        action="store_true",
        help="also log every step's metrics to FOLDER/tensorboard (needs the tensorboard package): "
        "tensorboard --logdir FOLDER",
    )

    p_eval = sub.add_parser("eval", help="greedy accuracy of a kept run's model on its task's evaluation prompts")
    p_eval.add_argument("run", help="a run folder (minirl train --out)")
    p_eval.add_argument("--eval-prompts", type=int, default=None, help="how many (default: the run's)")
    p_eval.add_argument("--samples", type=int, default=3, help="answers to show")
    p_eval.add_argument(
        "--samples-per-prompt", type=int, default=8, help="samples per prompt at T = 1 for pass@k (default: 8)"
    )
    p_eval.add_argument(
        "--k", default=None, help="comma-separated ks of pass@k, each <= --samples-per-prompt (default: 1,N)"
    )
    p_eval.add_argument(
        "--task", choices=["text_sort", "text_add"], default=None, help="a text run: evaluate on this task instead"
    )
    p_eval.add_argument("--n-numbers", type=int, default=None, help="a text run: sort this many numbers")
    p_eval.add_argument("--max-value", type=int, default=None, help="a text run: numbers from 0 to this")
    p_eval.add_argument("--digits", type=int, default=None, help="a text run: add numbers of this many digits")
    p_eval.add_argument("--device", default=None)

    p_gen = sub.add_parser("generate", help="a kept run's model answers a prompt (or each prompt typed)")
    p_gen.add_argument("run", help="a run folder (minirl train --out)")
    p_gen.add_argument(
        "prompt",
        nargs="?",
        default=None,
        help="a question ('Sort in increasing order: 7, 2, 9'), or a toy prompt ('3 1 2'); none: type prompts, "
        "one per line",
    )
    p_gen.add_argument("--device", default=None)

    p_cmp = sub.add_parser("compare", help="train several algorithms over several seeds and plot reward curves")
    _add_run_flags(p_cmp)
    p_cmp.add_argument("--algos", default="naive,baselined,clipped,grpo", help="comma-separated algorithm names")
    p_cmp.add_argument("--seeds", type=int, default=3)
    _add_out_dir(p_cmp)

    p_ladder = sub.add_parser(
        "ladder",
        help="the main job: six rungs of the policy-gradient ladder, one knob apart, "
        "over seeds; prints what each knob bought and plots the curves",
    )
    p_ladder.add_argument("--seeds", type=int, default=3)
    p_ladder.add_argument("--steps", type=int, default=None, help="training steps per run (default: 600)")
    p_ladder.add_argument("--workers", type=int, default=0, help="processes side by side (0 = one per CPU core)")
    p_ladder.add_argument("--plot", default=None, help="save the four-panel figure to this PNG")
    p_ladder.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_save(p_ladder)
    _add_out_dir(p_ladder)

    add_bench_flags(sub.add_parser("bench", help="the acceptance benchmark: print a table of measured figures"))

    p_plot = sub.add_parser("plot", help="draw curves over seeds again from kept runs, without training")
    p_plot.add_argument("runs", nargs="+", help="run folders, or folders of run folders (compare --out, ladder --out)")
    p_plot.add_argument("--out", default="curves.png", help="the PNG to write (default: curves.png)")
    return parser

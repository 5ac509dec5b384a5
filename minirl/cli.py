"""The ``minirl`` command: train one run, compare algorithms over seeds, run the benchmark.

    minirl train   --task sorting --algo grpo --steps 300 --seed 0 --plot grpo.png
    minirl compare --task sorting --algos naive,baselined,clipped,grpo --seeds 3 --plot curves.png
    minirl compare --task maze --algos reinforce,reinforce_baseline,ppo --seeds 3 --plot maze.png
    minirl compare --task variable_sorting --length 4 --algos grpo,dapo,dr_grpo --seeds 3 --plot lengths.png
    minirl train   --task text_sort --model smollm2-135m --algo grpo --steps 40 --plot smollm2.png
    minirl train   --task text_sort --model tiny --plot tiny_lm.png
    minirl bench   [--lm | --trl]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

from minirl.algorithms import ALGORITHMS
from minirl.history import History
from toy_envs.sorting import REWARDS, SortingTask
from toy_envs.variable_sorting import VARIABLE_REWARDS, VariableLengthSortingTask

__all__ = ["main"]

TASKS = ("sorting", "variable_sorting", "maze", "text_sort", "text_add")
TEXT_TASK_NAMES = ("text_sort", "text_add")


def _is_maze(task: str) -> bool:
    return task == "maze"


def _is_text(task: str) -> bool:
    return task in TEXT_TASK_NAMES


def _make_task(args: argparse.Namespace) -> SortingTask | VariableLengthSortingTask:
    if args.task == "variable_sorting":
        if args.reward not in VARIABLE_REWARDS:
            raise SystemExit(f"minirl: --reward {args.reward} is not defined for variable_sorting; "
                             f"choose from {list(VARIABLE_REWARDS)}")
        return VariableLengthSortingTask(vocab_size=args.vocab_size, max_length=args.length,
                                         min_length=args.min_length, reward=args.reward)
    return SortingTask(vocab_size=args.vocab_size, length=args.length, reward=args.reward)


def _maze_algorithms() -> tuple[str, ...]:
    from minirl.maze_rl import MAZE_ALGORITHMS

    return tuple(MAZE_ALGORITHMS)


def _sorting_config(args: argparse.Namespace, algo: str, seed: int):
    from minirl.train import TrainConfig

    overrides = {
        "steps": args.steps,
        "learning_rate": args.lr,
        "prompts_per_step": args.prompts_per_step,
        "group_size": args.group_size,
        "embedding_dim": args.embedding_dim,
        "max_seconds": args.max_seconds,
    }
    return TrainConfig(
        task=_make_task(args),
        algo=algo,
        seed=seed,
        progress=not args.no_progress,
        **{k: v for k, v in overrides.items() if v is not None},
    )


def run_one(args: argparse.Namespace, algo: str, seed: int) -> tuple[History, str]:
    """Train one (task, algorithm, seed); return its History and a one-line summary."""
    start = time.perf_counter()
    if _is_text(args.task):
        return _run_text(args, algo, seed)
    if not _is_maze(args.task):
        from minirl.train import train

        _, history = train(_sorting_config(args, algo, seed))
        last = history.evals[-1]
        summary = (f"{algo:>12} seed {seed}: {len(history)} steps in {time.perf_counter() - start:5.1f} s, "
                   f"reward {history.last('reward', 10):.2f}, greedy exact {last['greedy_exact']:.1%} "
                   f"on held-out prompts")
    else:
        from minirl.maze_rl import MazeTrainConfig, train_maze

        overrides = {"steps": args.steps, "learning_rate": args.lr}
        config = MazeTrainConfig(method=algo, seed=seed, progress=not args.no_progress,
                                 **{k: v for k, v in overrides.items() if v is not None})
        _, _, history = train_maze(config)
        last = history.evals[-1]
        summary = (f"{algo:>18} seed {seed}: {int(history['episodes'][-1])} episodes in "
                   f"{time.perf_counter() - start:5.1f} s, mean return {history.last('reward', 10):.2f}, "
                   f"greedy success {last['greedy_success']:.0%}, exact expected return {last['exact_return']:.2f}")
    return history, summary


def text_run_settings(args: argparse.Namespace) -> dict:
    """The model kind's defaults (``minirl.lm_train.RUN_DEFAULTS``) with the command line's choices on top."""
    from minirl.lm_train import RUN_DEFAULTS, model_kind

    chosen = {"learning_rate": args.lr, "steps": args.steps, "prompts_per_step": args.prompts_per_step,
              "group_size": args.group_size, "max_new_tokens": args.max_new_tokens, "sft_steps": args.sft_steps,
              "few_shot": args.few_shot, "eval_prompts": args.eval_prompts, "eval_every": args.eval_every,
              "kl_coef": args.kl_coef}
    run = {**RUN_DEFAULTS[model_kind(args.model, args.device)], **{k: v for k, v in chosen.items() if v is not None}}
    if args.trainable_layers is not None:
        run["trainable_layers"] = None if args.trainable_layers == "all" else args.trainable_layers
    return run


def _layers(text: str) -> int | str:
    """``--trainable-layers``: a positive int or ``all``."""
    if text == "all":
        return text
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of blocks or 'all'; got {text!r}")
    return n


def _make_text_task(args: argparse.Namespace, few_shot: int, system: str | None):
    from toy_envs.text_tasks import TextAdditionTask, TextSortTask

    if args.task == "text_sort":
        return TextSortTask(n_numbers=args.length, max_value=args.max_value, few_shot=few_shot, system=system)
    return TextAdditionTask(digits=args.digits, few_shot=few_shot, system=system)


def _run_text(args: argparse.Namespace, algo: str, seed: int) -> tuple[History, str]:
    from minirl.lm_train import lm_algorithm, make_lm_policy, sft_warm_start
    from minirl.train import TrainConfig, train

    run = text_run_settings(args)
    task = _make_text_task(args, run["few_shot"], run["system"])
    start = time.perf_counter()
    policy = make_lm_policy(args.model, seed=seed, max_new_tokens=run["max_new_tokens"], device=args.device,
                            trainable_layers=run["trainable_layers"])
    print(f"loaded {args.model} ({sum(p.numel() for p in policy.parameters()) / 1e6:.1f}M parameters) on "
          f"{policy.device} in {time.perf_counter() - start:.1f} s", flush=True)
    if run["sft_steps"]:
        sft = sft_warm_start(policy, task, run["sft_steps"], run["prompts_per_step"], run["sft_learning_rate"],
                             seed=seed, threads=run["threads"], progress=not args.no_progress)
        print(f"SFT warm start: {run['sft_steps']} steps, loss {sft.last('loss', 10):.3f} nats/token", flush=True)
    config = TrainConfig(task=task, algo=lm_algorithm(algo, kl_coef=run["kl_coef"]), steps=run["steps"], seed=seed,
                         prompts_per_step=run["prompts_per_step"], group_size=run["group_size"],
                         learning_rate=run["learning_rate"], eval_every=run["eval_every"],
                         eval_prompts=run["eval_prompts"], eval_sampled=False, threads=run["threads"],
                         micro_batch_size=args.micro_batch_size, max_seconds=args.max_seconds,
                         progress=not args.no_progress)
    _, history = train(config, policy)
    first, last = history.evals[0], history.evals[-1]
    summary = (f"{algo:>12} seed {seed} on {args.model}: {len(history)} steps in {history['wall_time'][-1]:.0f} s "
               f"({history['gen_seconds'].mean():.1f} s generation + {history['update_seconds'].mean():.1f} s update "
               f"per step), reward {history.last('reward', 5):.2f}, held-out greedy accuracy "
               f"{first['greedy_exact']:.1%} -> {last['greedy_exact']:.1%}, format "
               f"{first.get('greedy_format', float('nan')):.0%} -> {last.get('greedy_format', float('nan')):.0%}")
    return history, summary


def _plot(runs: dict[str, list[History]], task: str, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from minirl.plotting import plot_lm_curves, plot_reward_curves

    if _is_text(task):
        fig = plot_lm_curves(runs, title=f"{task}: a language model trained with GRPO")
    else:
        second = "exact_return" if _is_maze(task) else "greedy_exact"
        x = "episodes" if _is_maze(task) else "step"
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
        plot_reward_curves(runs, "reward", ax=axes[0], x=x, title=f"{task}: training reward")
        plot_reward_curves(runs, second, ax=axes[1], x=x, smooth=1,
                           title=f"{task}: {'exact return (DP)' if _is_maze(task) else 'held-out greedy accuracy'}")
        fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"saved {path}")


def _check_algos(task: str, algos: list[str]) -> None:
    known = list(_maze_algorithms()) if _is_maze(task) else sorted(ALGORITHMS)
    if _is_text(task):  # a text task has no per-position (process) reward
        known = [a for a in known if ALGORITHMS[a].advantage_level == "sequence"]
    unknown = [a for a in algos if a not in known]
    if unknown:
        raise SystemExit(f"minirl: unknown algorithm(s) {unknown} for --task {task}; choose from {known}")


def cmd_train(args: argparse.Namespace) -> int:
    _check_algos(args.task, [args.algo])
    history, summary = run_one(args, args.algo, args.seed)
    print(summary)
    if args.plot:
        _plot({args.algo: [history]}, args.task, args.plot)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    _check_algos(args.task, algos)
    if args.seeds < 1:
        raise SystemExit("minirl: --seeds must be >= 1")
    start = time.perf_counter()
    runs: dict[str, list[History]] = {}
    for algo in algos:
        for seed in range(args.seeds):
            history, summary = run_one(args, algo, seed)
            runs.setdefault(algo, []).append(history)
            print(summary, flush=True)
    metric = "greedy_success" if _is_maze(args.task) else "greedy_exact"
    finals = ", ".join(
        f"{algo} {sum(h.evals[-1][metric] for h in hs) / len(hs):.1%}" for algo, hs in runs.items()
    )
    print(f"compared {len(algos)} algorithms x {args.seeds} seeds on {args.task} in "
          f"{time.perf_counter() - start:.0f} s; mean final {metric}: {finals}")
    if args.plot:
        _plot(runs, args.task, args.plot)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from minirl.bench import run_benchmark

    if args.trl:
        from minirl.bench_trl import run_trl_benchmark

        return run_trl_benchmark(quick=args.quick)
    if args.lm:
        from minirl.bench_lm import run_lm_benchmark

        return run_lm_benchmark(quick=args.quick, minutes=args.minutes)
    return run_benchmark(quick=args.quick, seeds=args.seeds)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minirl", description="Reinforcement learning for LLMs, from scratch.")
    sub = parser.add_subparsers(dest="command", required=True)

    def add_common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--task", choices=TASKS, default="sorting")
        p.add_argument("--steps", type=int, default=None, help="training steps (default: the task's default)")
        p.add_argument("--lr", type=float, default=None, help="learning rate (default: the task's default)")
        p.add_argument("--plot", default=None, help="save reward curves to this PNG")
        p.add_argument("--no-progress", action="store_true", help="hide progress bars")
        g = p.add_argument_group("sorting tasks")
        g.add_argument("--vocab-size", type=int, default=5)
        g.add_argument("--length", type=int, default=3, help="prompt length (variable_sorting: the longest)")
        g.add_argument("--min-length", type=int, default=1, help="variable_sorting: the shortest prompt")
        g.add_argument("--reward", choices=sorted(REWARDS), default="sort_distance")
        g.add_argument("--prompts-per-step", type=int, default=None)
        g.add_argument("--group-size", type=int, default=None)
        g.add_argument("--embedding-dim", type=int, default=None)
        g.add_argument("--max-seconds", type=float, default=None, help="stop each run after this much training time")
        t = p.add_argument_group("text tasks (a language model; defaults depend on --model)")
        t.add_argument("--model", default="smollm2-135m",
                       help="'smollm2-135m' (shipped, offline), 'tiny' (a ~1M-parameter model built here), a local "
                            "folder or a hub name")
        t.add_argument("--max-value", type=int, default=9, help="text_sort: numbers are 0 .. max-value")
        t.add_argument("--digits", type=int, default=2, help="text_add: digits per operand")
        t.add_argument("--few-shot", type=int, default=None, help="worked examples in each prompt")
        t.add_argument("--max-new-tokens", type=int, default=None, help="response length budget (tokens)")
        t.add_argument("--sft-steps", type=int, default=None, help="supervised warm-start steps before RL")
        t.add_argument("--eval-prompts", type=int, default=None, help="held-out prompts per evaluation")
        t.add_argument("--eval-every", type=int, default=None, help="evaluate every this many steps")
        t.add_argument("--micro-batch-size", type=int, default=None, help="prompts per forward/backward pass")
        t.add_argument("--trainable-layers", type=_layers, default=None,
                       help="train only the top N transformer blocks, or 'all'")
        t.add_argument("--kl-coef", type=float, default=None, help="weight of the KL penalty to the initial model")
        t.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")

    p_train = sub.add_parser("train", help="train one algorithm with one seed")
    add_common(p_train)
    p_train.add_argument("--algo", default="grpo")
    p_train.add_argument("--seed", type=int, default=0)
    p_train.set_defaults(func=cmd_train)

    p_cmp = sub.add_parser("compare", help="train several algorithms over several seeds and plot reward curves")
    add_common(p_cmp)
    p_cmp.add_argument("--algos", default="naive,baselined,clipped,grpo", help="comma-separated algorithm names")
    p_cmp.add_argument("--seeds", type=int, default=3)
    p_cmp.set_defaults(func=cmd_compare)

    p_bench = sub.add_parser("bench", help="the acceptance benchmark: print a table of measured figures")
    p_bench.add_argument("--seeds", type=int, default=3)
    p_bench.add_argument("--quick", action="store_true", help="a much shorter run (for smoke tests)")
    p_bench.add_argument("--lm", action="store_true",
                         help="the language-model benchmark: the tiny model's speed, SmolLM2 before/after GRPO")
    p_bench.add_argument("--minutes", type=float, default=20.0, help="--lm: SmolLM2's training budget")
    p_bench.add_argument("--trl", action="store_true",
                         help="minirl and TRL's GRPOTrainer side by side on the same run (needs the trl extra)")
    p_bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not _is_text(getattr(args, "task", "")) and not getattr(args, "lm", False):
        torch.set_num_threads(1)  # the toy models are tiny: one thread is faster than two fighting over 2 cores
    try:
        return args.func(args)
    except ValueError as err:  # a bad value (the configs name the argument and the range): one line, exit 2
        if os.environ.get("MINIRL_DEBUG"):
            raise
        print(f"minirl {args.command}: error: {err} (MINIRL_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

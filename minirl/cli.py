"""The ``minirl`` command: train one run, compare algorithms over seeds, run the benchmark.

    minirl train   --task sorting --algo grpo --steps 300 --seed 0 --plot grpo.png
    minirl compare --task sorting --algos naive,baselined,clipped,grpo --seeds 3 --plot curves.png
    minirl compare --task maze --algos reinforce,reinforce_baseline,ppo --seeds 3 --plot maze.png
    minirl compare --task variable_sorting --length 4 --algos grpo,dapo,dr_grpo --seeds 3 --plot lengths.png
    minirl bench
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from minirl.algorithms import ALGORITHMS
from minirl.history import History
from toy_envs.sorting import REWARDS, SortingTask
from toy_envs.variable_sorting import VARIABLE_REWARDS, VariableLengthSortingTask

__all__ = ["main"]

TASKS = ("sorting", "variable_sorting", "maze")


def _is_maze(task: str) -> bool:
    return task == "maze"


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


def _plot(runs: dict[str, list[History]], task: str, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from minirl.plotting import plot_reward_curves

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
    p_bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(1)  # the models are tiny: one thread is faster than two fighting over 2 cores
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

"""``minirl bench``: the acceptance benchmark, printed as tables.

1. Sorting 3 numbers from a vocabulary of 5: GRPO's greedy exact-match on fresh prompts and the
   training time it needs to reach 99% (target: >= 99% in under 15 s per seed).
2. Sorting 5 numbers from a vocabulary of 10: the supervised ceiling (cross-entropy on the sorted
   answer, the same number of updates and prompts as the best RL run) next to every preset, each
   given the same wall-time budget (target: the best preset >= 90% of the ceiling within 60 s).
3. Maze: REINFORCE with a baseline and PPO reach the goal greedily; episodes needed.
4. ``minirl ladder``, the README's main job (6 rungs x 3 seeds on sorting): total time (target: < 3 minutes).

Timings are wall-clock on whatever machine runs this. ``--save`` keeps every figure in
``results/bench.json`` (``minirl.results``), from which RESULTS.md's tables are made.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from minirl.algorithms import ALGORITHMS
from minirl.bench import finish, keep_run
from minirl.history import History
from minirl.results import Record
from minirl.toy.supervised import train_supervised
from minirl.train import TrainConfig, train
from toy_envs.sorting import SortingTask

__all__ = ["run_benchmark"]

SUPERVISED_LR = 0.01
LARGE_STEPS = 1500  # the cosine schedule decays over these; max_seconds only cuts a slow machine short
SMALL = SortingTask(vocab_size=5, length=3)
LARGE = SortingTask(vocab_size=10, length=5)


def _first_reaching(history: History, metric: str, threshold: float) -> float | None:
    """Wall time of the first evaluation with ``metric >= threshold`` (None if never)."""
    for e in history.evals:
        if e[metric] >= threshold:
            return e["wall_time"]
    return None


def _table(header: list[str], rows: Sequence[Sequence[object]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*["-" * w for w in widths])]
    return "\n".join(lines + [fmt.format(*map(str, r)) for r in rows])


def _run_name(part: str, seed: int) -> str:
    """A kept run's folder under ``--out``: ``PART_seedN``."""
    return f"{part}_seed{seed}"


def _folder(out: str | None, name: str) -> dict[str, str]:
    """``{"run_folder": name}`` for a run kept under ``out`` (``--out``), or nothing."""
    return {"run_folder": name} if out is not None else {}


def bench_small(seeds: int, budget: float, out: str | None = None) -> tuple[bool, dict]:
    rows, ok, figures = [], True, {}
    for seed in range(seeds):  # the default TrainConfig (2000 steps, cosine), cut at `budget` seconds
        config = TrainConfig(task=SMALL, algo="grpo", seed=seed, max_seconds=budget, eval_every=25, progress=False)
        name = _run_name("small_grpo", seed)
        _, h = train(config, run=keep_run(out, name, config))
        reached = _first_reaching(h, "greedy_exact", 0.99)
        final = h.evals[-1]["greedy_exact"]
        ok &= reached is not None and reached < 15.0
        rows.append([seed, len(h), f"{final:.1%}", "never" if reached is None else f"{reached:.1f} s"])
        figures[str(seed)] = {"steps": len(h), "final": final, "seconds_to_99": reached, **_folder(out, name)}
    print(
        f"\n1. Sorting 3 numbers from 5 values, GRPO, {budget:.0f} s budget per seed "
        f"(target: >= 99% greedy exact in < 15 s)"
    )
    print(_table(["seed", "steps", "final greedy exact", "time to 99%"], rows))
    return ok, {"budget_s": budget, "seeds": figures}


def bench_large(seeds: int, budget: float, algos: list[str], out: str | None = None) -> tuple[bool, dict]:
    results: dict[str, list[History]] = {}
    for algo in algos:
        for seed in range(seeds):
            config = TrainConfig(
                task=LARGE, algo=algo, seed=seed, steps=LARGE_STEPS, max_seconds=budget, eval_every=100, progress=False
            )
            run = keep_run(out, _run_name(f"large_{algo}", seed), config)
            results.setdefault(algo, []).append(train(config, run=run)[1])
    mean_exact = {a: float(np.mean([h.evals[-1]["greedy_exact"] for h in hs])) for a, hs in results.items()}
    best = max(mean_exact, key=mean_exact.__getitem__)
    # the ceiling: as many optimiser updates as the best RL run made (steps x inner epochs), each
    # on as many prompts as one RL batch, with the same model; its own (supervised) learning rate
    ceilings = []
    for h in results[best]:
        base = TrainConfig(task=LARGE, algo=best)
        sup = train_supervised(
            LARGE,
            steps=len(h) * base.algo.inner_epochs,
            batch_size=base.prompts_per_step,
            learning_rate=SUPERVISED_LR,
            embedding_dim=base.embedding_dim,
            seed=h.seed,
        )[1]
        ceilings.append(sup.evals[-1]["greedy_exact"])
    ceiling = float(np.mean(ceilings))
    rows: list[list[str | int]] = [["supervised ceiling", "-", f"{ceiling:.1%}", "100%"]]
    figures = {"budget_s": budget, "ceiling": ceiling, "ceilings": ceilings, "best": best, "methods": {}}
    for algo, hs in results.items():
        steps = int(np.mean([len(h) for h in hs]))
        rows.append([algo, steps, f"{mean_exact[algo]:.1%}", f"{mean_exact[algo] / max(ceiling, 1e-9):.0%}"])
        figures["methods"][algo] = {
            "mean": mean_exact[algo],
            "per_seed": [h.evals[-1]["greedy_exact"] for h in hs],
            "steps": [len(h) for h in hs],
            **({"run_folders": [_run_name(f"large_{algo}", h.seed) for h in hs]} if out is not None else {}),
        }
    print(
        f"\n2. Sorting 5 numbers from 10 values, {budget:.0f} s per run, mean of {seeds} seeds "
        f"(target: best preset >= 90% of the ceiling)"
    )
    print(_table(["method", "steps", "greedy exact", "of ceiling"], rows))
    return mean_exact[best] >= 0.9 * ceiling, figures


def bench_maze(seeds: int, out: str | None = None) -> tuple[bool, dict]:
    from minirl.maze_rl import MazeTrainConfig, episodes_to_solve, train_maze

    rows, ok, figures = [], True, {}
    for method in ("reinforce", "reinforce_baseline", "ppo"):
        for seed in range(seeds):
            start = time.perf_counter()
            config = MazeTrainConfig(method=method, seed=seed, progress=False)
            name = _run_name(f"maze_{method}", seed)
            _, _, h = train_maze(config, run=keep_run(out, name, config))
            greedy = next((e for e in h.evals if e["greedy_success"] >= 1.0), None)
            solved = episodes_to_solve(h)  # greedy success and exact expected return >= 9.9
            final = h.evals[-1]["greedy_success"]
            if method != "reinforce":
                ok &= final >= 0.99
            rows.append(
                [
                    method,
                    seed,
                    f"{final:.0%}",
                    f"{h.evals[-1]['exact_return']:.2f}",
                    "never" if greedy is None else int(greedy["episodes"]),
                    "never" if math.isnan(solved) else int(solved),
                    f"{time.perf_counter() - start:.1f} s",
                ]
            )
            figures.setdefault(method, {})[str(seed)] = {
                "greedy_success": final,
                "exact_return": h.evals[-1]["exact_return"],
                "episodes_to_greedy_success": None if greedy is None else int(greedy["episodes"]),
                "episodes_to_solve": None if math.isnan(solved) else int(solved),
                "eval_every_episodes": int(h.evals[1]["episodes"] - h.evals[0]["episodes"])
                if len(h.evals) > 1
                else None,
                **_folder(out, name),
            }
    print(
        "\n3. Maze (reward 10 at the goal, 6 moves): greedy success and episodes needed "
        "(target: >= 99% for reinforce_baseline and ppo)"
    )
    print(
        _table(
            [
                "method",
                "seed",
                "greedy success",
                "exact return",
                "episodes to greedy success",
                "episodes to exact return >= 9.9",
                "time",
            ],
            rows,
        )
    )
    return ok, figures


def bench_ladder(seeds: int, out: str | None = None) -> tuple[bool, dict]:
    from minirl.compare import run_all, run_folders
    from minirl.ladder import LADDER_RUNGS, ladder_configs, ladder_figures, ladder_summary

    start = time.perf_counter()
    print(f"\n4. minirl ladder: {len(LADDER_RUNGS)} rungs x {seeds} seeds on sorting, one process per CPU core")
    configs = ladder_configs(seeds)
    folders = None
    if out is not None:  # one folder of run folders: minirl plot OUT/ladder draws the ladder's figure
        extras = {(rung, i): {"figure": "ladder"} for rung, group in configs.items() for i in range(len(group))}
        folders = run_folders(configs, Path(out) / "ladder", extras=extras)
    runs = run_all(configs, workers=0, progress=False, folders=folders)
    elapsed = time.perf_counter() - start
    print(ladder_summary(runs))
    print(f"total {elapsed:.0f} s (target: < 180 s)")
    kept = {"run_folders": "ladder"} if out is not None else {}
    return elapsed < 180, {"seconds": elapsed, **ladder_figures(runs), **kept}


def run_benchmark(quick: bool = False, seeds: int = 3, save: str | None = None, out: str | None = None) -> int:
    """Run all four parts; returns 0 if every target is met, 1 otherwise. ``save``: a results name or path
    (``minirl.results``) for every figure; ``out``: a folder to keep every run in (its run folder named in the
    figures: ``run_folder``) and the record (``bench.finish``)."""
    record = Record(save or "bench", seeds=list(range(seeds)))
    torch.set_num_threads(1)
    small_budget, large_budget = (2.0, 2.0) if quick else (15.0, 60.0)
    algos = ["grpo", "clipped"] if quick else sorted(ALGORITHMS)
    parts = {
        "small": ("sorting 3x5 GRPO >= 99% in 15 s", lambda: bench_small(seeds, small_budget, out)),
        "large": ("sorting 5x10 best >= 90% of ceiling", lambda: bench_large(seeds, large_budget, algos, out)),
        "maze": ("maze >= 99% greedy success", lambda: bench_maze(seeds, out)),
        "ladder": ("ladder 6 rungs x 3 seeds in < 3 min", lambda: bench_ladder(seeds, out)),
    }
    verdicts = {}
    for key, (name, part) in parts.items():
        if quick and key == "ladder":
            continue
        verdicts[name], record.figures[key] = part()
    return finish(record, verdicts, save, quick, out)

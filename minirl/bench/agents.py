"""The maze of notebook 01 walked by SmolLM2 in text (``toy_envs.maze_text``): the base model, a warm start that
imitates the uniform random walker, then GRPO on whole episodes, each measured from every start cell.

For each seed, on SmolLM2-135M-Instruct with ``maze_recipe`` (``minirl.lm.recipes``):

- ``base``: the base model's greedy success from each start cell, and its sampled success (``samples`` walks per
  cell at T = 1) with the share of replies that were a move;
- ``rollout``: the time to sample 64 six-turn episodes (8 start cells × 8 walks), the model's tokens per second;
  the base model's replies are not moves, so each runs to the reply budget and draws an error turn longer than an
  observation: a heavier rollout than any RL step samples;
- ``warm_rollout``: the same after the warm start, the model an RL step samples from at its first step (its
  episodes end at the goal, so the record keeps the turns per episode);
- ``warm``: after the warm start on the uniform walker's episodes, the sampled success per cell
  (``warm_samples`` walks a cell) against the uniform walker's exact value (``uniform_success``, dynamic
  programming): the warm start should teach the format and nothing about the way, so the two should agree up to
  the sampling noise a uniform walker itself shows (``noise_gap``);
- ``values``: a critic fitted to the warm-started model's own walks (``value_fit_steps`` batches, the model
  frozen), its value of each start cell against the uniform walker's exact expected return (dynamic programming):
  what the learned value knows before RL;
- ``grpo`` and ``ppo`` (``--algos``): from the same warm start, GRPO (reward 10 at the goal, 0 otherwise, one
  advantage per episode) and PPO with a critic (one advantage per model token, ``minirl.critic``), each with greedy
  and sampled success per cell, the run's figures and the first evaluation at which greedy success reached 90 %.

Every budget is a number of steps or samples; wall times are reported beside them.

    python -m minirl.bench.agents --seeds 0 --save            # results/bench_agents.json
    python -m minirl.bench.agents --quick                     # a few steps of everything (a smoke test)
    python -m minirl.bench.agents --seeds 0 --cpu-bf16 --save NAME   # the recipe with cpu_bfloat16 (a probe)
    python -m minirl.bench.agents --rollout-formats --save NAME      # the base model's rollout alone, by format

Targets (checked over the seeds run): 64 six-turn episodes sampled in at most 12 s, by the base model and by the
warm-started one; after the warm start, sampled
success within 0.1 of the uniform walker's exact value from every cell, and no further than the uniform walker's
own sampling noise; after GRPO, greedy success of at least 95 %
from every cell; warm start + GRPO within 10 minutes, both for the whole run and up to GRPO's first evaluation
that walked greedily from every cell (the steps a recipe takes after that one are not needed to get there).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from minirl.bench import add_recipe_probes, finish, part_figures, recipe_changes, spread
from minirl.bench.critic_fit import fit_values, quick_recipe, sample_batches, values_against_exact
from minirl.critic import Critic
from minirl.episodes import sample_answers, sample_rollout, success_by_prompt
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import LMRecipe, maze_recipe, model_kind
from minirl.results import Record, history_figures
from minirl.train import train
from toy_envs.maze_text import TextMazeTask, uniform_success

__all__ = [
    "ALGOS",
    "BUDGETS",
    "FORMATS",
    "QUICK_BUDGETS",
    "check_algos",
    "check_targets",
    "formats_part",
    "maze_part",
    "maze_seed",
    "quick_recipe",
    "rollout_formats",
]

BUDGETS: dict[str, Any] = {
    "samples": 32,  # sampled walks per start cell for a success rate (a standard error of at most 0.09)
    "rollout_prompts": 8,  # the timed rollout: 8 start cells x 8 walks = 64 episodes
    "rollout_group": 8,
    "warm_samples": 128,  # after the warm start: enough walks that a uniform walker strays < 0.11 (``noise_gap``)
    "value_fit_steps": 10,  # batches of the recipe's size the critic is fitted on before RL
    "walks_per_call": 320,  # walks sampled at once for a success rate (memory: the KV caches of the walks)
}
QUICK_BUDGETS: dict[str, Any] = {
    "samples": 1,
    "rollout_prompts": 2,
    "rollout_group": 2,
    "warm_samples": 1,
    "value_fit_steps": 1,
    "walks_per_call": 320,
}
ALGOS = ("grpo", "ppo")


def check_algos(algos: Sequence[str]) -> None:
    """``algos``: some of ``ALGOS`` (the RL arms run from the warm start), else a ValueError naming them."""
    unknown = sorted(set(algos) - set(ALGOS))
    if unknown or not algos:
        raise ValueError(f"algos must be some of {list(ALGOS)}; got {list(algos)}")


def _recipe(kind: str, quick: bool, changes: Mapping[str, Any] | None = None) -> LMRecipe:
    """The maze recipe for ``kind`` (shortened by ``quick``) with a probe's ``changes`` (``recipe_changes``)."""
    return (quick_recipe(maze_recipe(kind)) if quick else maze_recipe(kind)).with_(**(changes or {}))


def _by_cell(task: TextMazeTask, rates: torch.Tensor) -> dict[str, float]:
    return {str(c): float(r) for c, r in zip(task.start_cells, rates)}


def _cells(policy, task: TextMazeTask, samples: int, seed: int, walks_per_call: int | None = None) -> dict[str, Any]:
    """Greedy and sampled success per start cell, and the share of sampled replies that were a move.

    ``walks_per_call``: the walks sampled at once (``minirl.episodes.sample_answers``; None: every walk in one
    call)."""
    prompts = task.eval_prompts(len(task.start_cells))
    gen = torch.Generator().manual_seed(seed)
    greedy = success_by_prompt(policy, task, prompts, 0)
    answers = sample_answers(policy, task, prompts, samples, generator=gen, walks_per_call=walks_per_call)
    sampled = task.is_correct(prompts, answers).float().mean(dim=1)
    episodes = [e for group in answers for e in group]
    replies = sum(e.turns for e in episodes)
    return {
        "greedy": _by_cell(task, greedy),
        "sampled": _by_cell(task, sampled),
        "greedy_mean": float(greedy.mean()),
        "sampled_mean": float(sampled.mean()),
        "move_rate": 1.0 - sum(e.invalid for e in episodes) / max(replies, 1),
        "turns_mean": replies / len(episodes),
        "example": {"start": episodes[0].start, "replies": episodes[0].replies, "cells": episodes[0].cells},
    }


def _timed_rollout(policy, task: TextMazeTask, b: dict[str, Any], seed: int) -> dict[str, float]:
    """Sample ``rollout_prompts × rollout_group`` episodes once (after one warm-up call) and time it."""
    gen = torch.Generator().manual_seed(seed)
    prompts = task.sample_prompts(b["rollout_prompts"], gen)
    sample_rollout(policy, task, prompts[:1], 1, temperature=1.0, generator=gen)  # warm-up: first-call costs
    start = time.perf_counter()
    rollout = sample_rollout(policy, task, prompts, b["rollout_group"], temperature=1.0, generator=gen)
    seconds = time.perf_counter() - start
    model_tokens = float(rollout.lengths().sum())  # the mask: the model's tokens, not the environment's
    episodes = [e for group in rollout.answers for e in group]
    return {
        "episodes": b["rollout_prompts"] * b["rollout_group"],
        "seconds": seconds,
        "model_tokens": model_tokens,
        "sequence_tokens": float(rollout.tokens.shape[-1]),
        "model_tokens_per_second": model_tokens / seconds,
        "turns_mean": sum(e.turns for e in episodes) / len(episodes),
    }


FORMATS = ("float32", "bfloat16 copy", "float32")
"""The order ``rollout_formats`` generates in: float32 twice, around the copy, so that a drift of the machine's
speed during the run shows as a gap between the two float32 figures."""


def rollout_formats(
    seed: int,
    budgets: dict[str, Any],
    device: str | None = None,
    quick: bool = False,
    out: dict[str, Any] | None = None,
    saved: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """The base model's timed rollout (``_timed_rollout``: 64 six-turn walks) in each of ``FORMATS`` in turn, one
    process and one model: ``cpu_bfloat16`` off (float32) and on (generation by a bfloat16 copy of the weights,
    ``minirl.lm.cpu_decode.Bfloat16Copy``). The same seed draws the same prompts each time; the walks differ
    between the formats (other numbers), not between the two float32 runs. What ``--cpu-bf16`` costs or saves on
    this CPU, which the record's machine (``bfloat16_arithmetic``) names: matrix units, vector instructions or
    none. Into ``out["formats"]``, saved after each."""
    out = {} if out is None else out
    saved = saved or (lambda: None)
    recipe = _recipe(model_kind(SMOLLM2_ALIAS, device), quick)
    task = TextMazeTask()
    policy = recipe.policy(SMOLLM2_ALIAS, device=device)
    out.update(seed=seed, formats=[])
    for bfloat16 in (form == "bfloat16 copy" for form in FORMATS):
        policy.cpu_bfloat16 = bfloat16
        out["formats"].append({"generation": policy.generation_form, **_timed_rollout(policy, task, budgets, seed)})
        saved()
    return out


def maze_seed(
    seed: int,
    budgets: dict[str, Any],
    device: str | None = None,
    quick: bool = False,
    changes: Mapping[str, Any] | None = None,
    out: dict[str, Any] | None = None,
    saved: Callable[[], Any] | None = None,
    algos: Sequence[str] = ALGOS,
) -> dict[str, Any]:
    """One seed: base model, timed rollout, warm start, the critic's values, then each of ``algos`` from the warm
    start, each measured from every start cell.

    The figures go into ``out`` (a new dict when None) stage by stage, and ``saved`` (a record's ``save``) is called
    after each stage, so a stopped run keeps the stages it finished."""
    out = {} if out is None else out
    saved = saved or (lambda: None)
    recipe = _recipe(model_kind(SMOLLM2_ALIAS, device), quick, changes)
    task = TextMazeTask()
    policy = recipe.policy(SMOLLM2_ALIAS, device=device)
    out.update(seed=seed, prompt=policy.render(task.eval_prompts(1)[0]), generation=policy.generation_form)
    start = time.perf_counter()
    per_call = budgets["walks_per_call"]
    out["base"] = {**_cells(policy, task, budgets["samples"], seed, per_call), "seconds": time.perf_counter() - start}
    saved()
    out["rollout"] = _timed_rollout(policy, task, budgets, seed)
    saved()
    start = time.perf_counter()
    history = recipe.warm_start(policy, task, seed=seed, progress=not quick)
    warm_seconds = time.perf_counter() - start
    out["warm_rollout"] = _timed_rollout(policy, task, budgets, seed)  # what an RL step's rollout starts from
    exact = uniform_success(task.maze)
    warm = _cells(policy, task, budgets["warm_samples"], seed, per_call)
    gaps = [abs(warm["sampled"][str(c)] - float(exact[c])) for c in task.start_cells]
    out["warm"] = {
        **warm,
        "steps": 0 if history is None else len(history),
        "seconds": warm_seconds,
        "loss_last": None if history is None else history.last("loss", 5),
        "uniform": _by_cell(task, torch.tensor(exact[task.start_cells])),
        "max_gap_to_uniform": max(gaps),
        "noise_gap_95": noise_gap(torch.as_tensor(exact[task.start_cells]), budgets["warm_samples"], seed),
    }
    saved()
    out["values"] = _fitted_values(policy, task, recipe, budgets["value_fit_steps"], seed)
    saved()
    warm_weights = copy.deepcopy(policy.model.state_dict())
    for algo in algos:
        policy.model.load_state_dict(warm_weights)  # every arm from the same warm start
        config = recipe.train_config(task, algo=recipe.algorithm(algo), seed=seed, progress=not quick)
        policy, run = train(config, policy)
        out[algo] = {
            **_cells(policy, task, budgets["samples"], seed, per_call),
            "run": {**history_figures(run), "format_last5": run.last("format_rate", 5)},
            "step_to_90": _first_step(run, 0.9),
        }
        saved()
    return out


def noise_gap(exact: torch.Tensor, samples: int, seed: int, repeats: int = 4000, level: float = 0.95) -> float:
    """The largest gap over cells that the uniform walker *itself* shows, sampled ``samples`` times a cell, in
    ``level`` of ``repeats`` repetitions: each cell's success count is Binomial(``samples``, exact success), so the
    sampled rate strays from the exact one by noise alone. A measured gap below this is indistinguishable from a
    uniform walker; with 32 walks a cell over 10 cells it is about 0.2, so "within 0.1" needs more walks to test.
    ``exact``: ``[cell]`` success probabilities."""
    gen = torch.Generator().manual_seed(seed)
    draws = torch.rand(repeats, exact.numel(), samples, generator=gen, dtype=torch.float64)
    rates = (draws < exact.double().reshape(1, -1, 1)).double().mean(dim=-1)  # [repeat, cell]
    largest = (rates - exact.double()).abs().amax(dim=-1)  # [repeat]
    return float(torch.quantile(largest, level))


def _first_step(history, level: float) -> float | None:
    """The first evaluation step at which greedy success reached ``level`` (None: never)."""
    return next((e["step"] for e in history.evals if e["greedy_exact"] >= level), None)


def _fitted_values(policy, task: TextMazeTask, recipe: LMRecipe, steps: int, seed: int) -> dict[str, Any]:
    """A critic (``minirl.critic``, the recipe's PPO knobs) fitted on ``steps`` batches of the model's own walks,
    the model frozen; then its value of each start cell (the state before the first move: 6 moves left) against
    the uniform walker's exact expected return there. The model is near the uniform walker after its warm start
    (``warm``'s gap says how near), so the two should be close where the fit is good (``minirl.bench.critic_fit``
    asks how the fit depends on its knobs)."""
    start = time.perf_counter()
    batches, start_features = sample_batches(policy, task, recipe, steps, torch.Generator().manual_seed(seed))
    fit = fit_values(Critic.for_policy(policy, recipe.algorithm("ppo")), batches, start_features)
    compared = values_against_exact(task, fit["values"])
    return {
        "steps": steps,
        "seconds": time.perf_counter() - start,
        "value_loss": fit["value_loss"],
        "learned": compared["learned"],
        "exact_uniform": compared["exact_uniform"],
        "max_error": compared["max_error"],
    }


def check_targets(runs: list[dict[str, Any]]) -> dict[str, bool]:
    """The module docstring's targets over the seeds run (GRPO's only when GRPO ran)."""
    targets = {"64 six-turn episodes in <= 12 s": all(r["rollout"]["seconds"] <= 12 for r in runs)}
    if all("warm_rollout" in r for r in runs):  # records made before it was timed lack it
        targets["64 episodes of the warm-started model in <= 12 s"] = all(
            r["warm_rollout"]["seconds"] <= 12 for r in runs
        )
    targets |= {
        "warm start: sampled success within 0.1 of the uniform walker's from every cell": all(
            r["warm"]["max_gap_to_uniform"] <= 0.1 for r in runs
        ),
        "warm start: no gap to the uniform walker beyond its own sampling noise (95%)": all(
            r["warm"]["max_gap_to_uniform"] <= r["warm"].get("noise_gap_95", 0.0) for r in runs
        ),
    }
    if all("grpo" in r for r in runs):
        targets["GRPO: greedy success >= 95% from every cell"] = all(
            min(r["grpo"]["greedy"].values()) >= 0.95 for r in runs
        )
        targets["warm start + GRPO <= 10 min"] = all(
            (r["warm"]["seconds"] + r["grpo"]["run"]["train_seconds"]) / 60 <= 10 for r in runs
        )
        to_every_cell = [_minutes_to_every_cell(r, "grpo") for r in runs]
        targets["warm start + GRPO until greedy walks from every cell <= 10 min"] = all(
            m is not None and m <= 10 for m in to_every_cell
        )
    return targets


def _minutes_to_every_cell(run: dict[str, Any], algo: str) -> float | None:
    """Minutes of the warm start and of ``algo``'s training up to its first evaluation that walked greedily to
    the goal from every start cell (None: no evaluation did): the issue's "within 10 minutes of training including
    the warm start", read at that evaluation, where the whole run's time counts the steps after it too."""
    first = next((e for e in run[algo]["run"].get("evals", []) if e["greedy_exact"] >= 1.0), None)
    return None if first is None else (run["warm"]["seconds"] + first["wall_time"]) / 60


def _report(runs: list[dict[str, Any]], algos: Sequence[str]) -> None:
    print("\nThe text maze, SmolLM2: success from each start cell (mean over the 10 cells)")
    for r in runs:
        ro, warm = r["rollout"], r["warm"]
        print(
            f"  seed {r['seed']}: base greedy {r['base']['greedy_mean']:.0%}, sampled {r['base']['sampled_mean']:.0%} "
            f"(moves {r['base']['move_rate']:.0%} of replies); {ro['episodes']} episodes in {ro['seconds']:.1f} s "
            f"({ro['model_tokens_per_second']:.0f} model tokens/s; warm-started "
            f"{r['warm_rollout']['seconds']:.1f} s, {r['warm_rollout']['turns_mean']:.1f} turns an episode); "
            f"warm start {warm['steps']} steps "
            f"{warm['seconds']:.0f} s -> sampled {warm['sampled_mean']:.0%} (uniform walker "
            f"{sum(warm['uniform'].values()) / len(warm['uniform']):.0%}, largest gap "
            f"{warm['max_gap_to_uniform']:.2f}, the uniform walker's own noise {warm['noise_gap_95']:.2f}); "
            f"critic's start values: largest error {r['values']['max_error']:.2f} against the uniform walker's"
        )
        for algo in algos:
            a = r[algo]
            print(
                f"    {algo}: {a['run']['steps']} steps {a['run']['train_seconds']:.0f} s -> greedy "
                f"{a['greedy_mean']:.0%}, sampled {a['sampled_mean']:.0%}; greedy >= 90% first at step "
                f"{a['step_to_90']}"
            )
    for algo in algos if len(runs) > 1 else ():
        s = spread([r[algo]["greedy_mean"] for r in runs])
        print(f"  {algo} greedy success over seeds: {s['mean']:.0%} ± {s['std']:.0%}")


def maze_part(
    record: Record,
    seeds: Sequence[int],
    quick: bool = False,
    save: bool = False,
    key: str | None = None,
    device: str | None = None,
    changes: Mapping[str, Any] | None = None,
    samples: int | None = None,
    algos: Sequence[str] = ALGOS,
) -> dict[str, bool]:
    """Every seed into ``record.figures`` (or its ``key`` entry), saved after each when ``save``; prints the table
    and returns the targets. ``changes``: recipe fields a probe changes (``recipe_changes``: the RL steps,
    ``cpu_bfloat16``; the record keeps the recipe run);
    ``samples``: sampled walks per start cell instead of the budget's (the record keeps the budgets run);
    ``algos``: the RL arms run from the warm start."""
    check_algos(algos)
    kind = model_kind(SMOLLM2_ALIAS, device)
    budgets = dict(QUICK_BUDGETS if quick else BUDGETS, **({} if samples is None else {"samples": samples}))
    recipe = _recipe(kind, quick, changes)
    seeds, figures = part_figures(
        record, seeds, key, kind=kind, recipe=dataclasses.asdict(recipe), budgets=budgets, quick=quick, algos=algos
    )
    runs: list[dict[str, Any]] = []
    figures["runs"] = runs
    for seed in seeds:
        runs.append({})
        saved = record.save if save else None
        maze_seed(seed, budgets, device, quick, changes, out=runs[-1], saved=saved, algos=algos)
    _report(runs, algos)
    return check_targets(runs)


def formats_part(record: Record, seeds: Sequence[int], quick: bool, save: str | None) -> int:
    """``rollout_formats`` for each seed into ``record.figures`` (``kind`` ``"rollout_formats"``); prints each
    rollout's time and returns ``finish``'s status (the rollout target in each format)."""
    budgets = dict(QUICK_BUDGETS if quick else BUDGETS)
    record.figures.update(kind="rollout_formats", budgets=budgets, quick=quick, runs=[])
    for seed in seeds:
        record.figures["runs"].append({})
        rollout_formats(seed, budgets, quick=quick, out=record.figures["runs"][-1], saved=record.save if save else None)
    walks = budgets["rollout_prompts"] * budgets["rollout_group"]
    print(f"\nThe base model's rollout of {walks} six-turn walks, by format")
    for run in record.figures["runs"]:
        for r in run["formats"]:
            print(
                f"  seed {run['seed']}, {r['generation']}: {r['seconds']:.1f} s "
                f"({r['model_tokens_per_second']:.0f} model tokens/s)"
            )
    targets = {
        f"64 six-turn episodes in <= 12 s ({form})": all(
            r["seconds"] <= 12 for run in record.figures["runs"] for r in run["formats"] if r["generation"] == form
        )
        for form in dict.fromkeys(FORMATS)
    }
    return finish(record, targets, save, quick)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The text maze walked by SmolLM2 (minirl.bench.agents).")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="the seeds to run (default 0)")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything (a smoke test)")
    add_recipe_probes(parser)
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS, help="the RL arms (default both)")
    parser.add_argument("--samples", type=int, default=None, help="sampled walks per start cell (a probe)")
    parser.add_argument("--save", nargs="?", const="bench_agents", default=None, metavar="NAME")
    parser.add_argument(
        "--rollout-formats",
        action="store_true",
        help="only the base model's timed rollout, in float32, with the bfloat16 copy, then in float32 again (a probe)",
    )
    args = parser.parse_args(argv)
    record = Record(args.save or "bench_agents", seeds=args.seeds)
    if args.rollout_formats:
        return formats_part(record, args.seeds, args.quick, args.save)
    targets = maze_part(
        record,
        args.seeds,
        args.quick,
        args.save is not None,
        changes=recipe_changes(args),
        samples=args.samples,
        algos=args.algos,
    )
    return finish(record, targets, args.save, args.quick)


if __name__ == "__main__":
    raise SystemExit(main())

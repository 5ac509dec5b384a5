"""Tool use measured: SmolLM2 with a calculator it may call (``toy_envs.calculator``), before and after RL.

For each seed, on SmolLM2-135M-Instruct with ``calculator_recipe`` (``minirl.lm.recipes``), every figure greedy on
the task's evaluation problems (20 two-digit products never drawn in training, 20 easy ones: a two-digit number
times 10 by default):

- ``base``: the base model, shown the protocol once in its system message;
- ``warm``: after a warm start on a demonstrator that calls the calculator on a quarter of its episodes *whatever
  the problem* (the protocol, not when to use it);
- ``grpo`` and ``ppo`` (``--algos``): from the same warm start, RL on the reward 1 for the right number minus
  ``call_cost`` per call, so a call pays on a hard product and costs on an easy one.

Each stage reports the accuracy and the call rate on each kind of problem (``call_rates``: the share of episodes
with a call), greedy and over ``SAMPLES`` episodes a problem sampled at T = 1, the malformed calls, and one
transcript per kind. Every budget is a number of steps; wall times are
reported beside them.

    python -m minirl.bench.calculator --seeds 0 --save   # results/bench_calculator.json
    python -m minirl.bench.calculator --quick            # a few steps of everything (a smoke test)
    python -m minirl.bench.calculator --easy one_digit --demo-call-rate 0.5 --call-cost 0.1 --save NAME  # a probe
    python -m minirl.bench.calculator --algos grpo --knob grpo.delta_mode=centered_rewards --save NAME  # a probe

A probe changes the task (``CalculatorTask``: the easy kind, the demonstrator's share of calls, a call's cost); its
record keeps the task's settings (``figures["task"]``). The first probe above is the task before its defaults
changed: one-digit products, which SmolLM2 gets wrong without the tool even after the warm start. The second
changes one arm's algorithm (``--knob ALGO.KNOB=VALUE``: ``LMRecipe.algo_knobs``; the record's recipe keeps it):
GRPO's advantages centred in each group but not divided by its spread.

Targets (checked over the seeds run): after RL, products right on at least 90% of the hard problems, a call on at
most 20% of the easy ones, warm start + RL within 10 minutes.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from minirl.bench import add_recipe_probes, finish, part_figures, recipe_changes
from minirl.bench.agents import ALGOS, check_algos, quick_recipe
from minirl.episodes import greedy_rollout, sample_rollout
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import LMRecipe, calculator_recipe, model_kind
from minirl.results import Record, history_figures
from minirl.train import train
from toy_envs.calculator import EASY, KINDS, CalculatorTask, call_rates

__all__ = ["ALGOS", "calculator_part", "calculator_seed", "check_targets"]

TASK_SETTINGS = ("call_cost", "easy", "demo_call_rate", "tool_share", "max_turns")
"""The ``CalculatorTask`` settings a record keeps (``figures["task"]``)."""

SAMPLES = 8
"""Episodes sampled per evaluation problem for the sampled rates (40 problems: 160 episodes of each kind)."""


def _recipe(kind: str, quick: bool, changes: Mapping[str, Any] | None = None) -> LMRecipe:
    """The calculator recipe for ``kind`` (shortened by ``quick``) with a probe's ``changes`` (``recipe_changes``)."""
    recipe = quick_recipe(calculator_recipe(kind)).with_(eval_prompts=4) if quick else calculator_recipe(kind)
    return recipe.with_(**(changes or {}))


def _by_kind(prompts, values) -> dict[str, float]:
    """The mean of ``values`` ``[batch, group]`` over the problems of each kind."""
    return {k: float(values[[p.kind == k for p in prompts]].float().mean()) for k in KINDS}


def measure(policy, task: CalculatorTask, n_prompts: int, samples: int, seed: int) -> dict[str, Any]:
    """On each kind of the first ``n_prompts`` evaluation problems: the greedy episode's accuracy and call rate,
    and the same over ``samples`` episodes a problem sampled at T = 1 (greedy shows the likelier choice only: a
    model that calls half the time may call always or never greedily); the malformed calls, and the first
    transcript of each kind."""
    prompts = task.eval_prompts(n_prompts)
    rollout = greedy_rollout(policy, task, prompts)
    episodes = [group[0] for group in rollout.answers]
    out: dict[str, Any] = {"call_rate": call_rates(prompts, rollout.answers)}
    out["accuracy"] = _by_kind(prompts, task.is_correct(prompts, rollout.answers))
    gen = torch.Generator().manual_seed(seed)
    sampled = sample_rollout(policy, task, prompts, samples, temperature=1.0, generator=gen)
    out["sampled_call_rate"] = call_rates(prompts, sampled.answers)
    out["sampled_accuracy"] = _by_kind(prompts, task.is_correct(prompts, sampled.answers))
    out["malformed_calls"] = sum(e.bad_calls for e in episodes)
    out["turns_mean"] = sum(e.turns for e in episodes) / len(episodes)
    out["example"] = {
        kind: next(task.transcript(p, e) for p, e in zip(prompts, episodes) if p.kind == kind) for kind in KINDS
    }
    return out


def calculator_seed(
    seed: int,
    device: str | None = None,
    quick: bool = False,
    changes: Mapping[str, Any] | None = None,
    out: dict[str, Any] | None = None,
    saved=None,
    algos: Sequence[str] = ALGOS,
    task: CalculatorTask | None = None,
) -> dict[str, Any]:
    """One seed: the base model, the warm start, then each of ``algos`` from the warm start, each measured by
    ``measure``. The figures go into ``out`` stage by stage; ``saved`` is called after each stage. ``task``: the
    calculator task (default ``CalculatorTask()``; a probe changes its ``call_cost``, ``easy``, ``demo_call_rate``);
    ``changes``: recipe fields a probe changes (``recipe_changes``)."""
    out = {} if out is None else out
    saved = saved or (lambda: None)
    recipe = _recipe(model_kind(SMOLLM2_ALIAS, device), quick, changes)
    samples = 1 if quick else SAMPLES
    task = CalculatorTask() if task is None else task
    policy = recipe.policy(SMOLLM2_ALIAS, device=device)
    out.update(seed=seed, prompt=policy.render(task.eval_prompts(1)[0]), generation=policy.generation_form)
    start = time.perf_counter()
    out["base"] = {**measure(policy, task, recipe.eval_prompts, samples, seed), "seconds": time.perf_counter() - start}
    saved()
    start = time.perf_counter()
    history = recipe.warm_start(policy, task, seed=seed, progress=not quick)
    out["warm"] = {
        **measure(policy, task, recipe.eval_prompts, samples, seed),
        "steps": 0 if history is None else len(history),
        "seconds": time.perf_counter() - start,
        "loss_last": None if history is None else history.last("loss", 5),
    }
    saved()
    warm_weights = copy.deepcopy(policy.model.state_dict())
    for algo in algos:
        policy.model.load_state_dict(warm_weights)  # every arm from the same warm start
        config = recipe.train_config(task, algo=recipe.algorithm(algo), seed=seed, progress=not quick)
        policy, run = train(config, policy)
        out[algo] = {**measure(policy, task, recipe.eval_prompts, samples, seed), "run": history_figures(run)}
        saved()
    return out


def check_targets(runs: list[dict[str, Any]], algos: Sequence[str]) -> dict[str, bool]:
    """The module docstring's targets for each RL arm over the seeds run."""
    targets: dict[str, bool] = {}
    for algo in algos:
        targets[f"{algo}: hard products right >= 90%"] = all(r[algo]["accuracy"]["tool"] >= 0.9 for r in runs)
        targets[f"{algo}: calls on easy problems <= 20%"] = all(r[algo]["call_rate"]["head"] <= 0.2 for r in runs)
        targets[f"warm start + {algo} <= 10 min"] = all(
            (r["warm"]["seconds"] + r[algo]["run"]["train_seconds"]) / 60 <= 10 for r in runs
        )
    return targets


def _line(name: str, m: dict[str, Any]) -> str:
    acc, calls, s_acc, s_calls = m["accuracy"], m["call_rate"], m["sampled_accuracy"], m["sampled_call_rate"]
    return (
        f"    {name:>5}: greedy right {acc['tool']:.0%} hard / {acc['head']:.0%} easy, calls {calls['tool']:.0%} / "
        f"{calls['head']:.0%}; sampled right {s_acc['tool']:.0%} / {s_acc['head']:.0%}, calls "
        f"{s_calls['tool']:.0%} / {s_calls['head']:.0%}; {m['malformed_calls']} malformed"
    )


def calculator_part(
    record: Record,
    seeds: Sequence[int],
    quick: bool = False,
    save: bool = False,
    key: str | None = None,
    device: str | None = None,
    changes: Mapping[str, Any] | None = None,
    algos: Sequence[str] = ALGOS,
    task: dict[str, Any] | None = None,
) -> dict[str, bool]:
    """Every seed into ``record.figures`` (or its ``key`` entry), saved after each stage when ``save``; prints the
    table and returns the targets. ``changes``: recipe fields a probe changes (``recipe_changes``: the RL steps,
    ``cpu_bfloat16``; the record keeps the recipe run);
    ``task``: settings of ``CalculatorTask`` other than its defaults (the record keeps the task's settings)."""
    check_algos(algos)
    kind = model_kind(SMOLLM2_ALIAS, device)
    recipe = _recipe(kind, quick, changes)
    calc = CalculatorTask(**(task or {}))
    settings = {k: getattr(calc, k) for k in TASK_SETTINGS}
    seeds, figures = part_figures(
        record, seeds, key, kind=kind, recipe=dataclasses.asdict(recipe), quick=quick, task=settings
    )
    figures["algos"] = list(algos)
    runs: list[dict[str, Any]] = []
    figures["runs"] = runs
    for seed in seeds:
        runs.append({})
        saved = record.save if save else None
        calculator_seed(seed, device, quick, changes, runs[-1], saved, algos, task=calc)
    print("\nThe calculator, SmolLM2: greedy on the evaluation problems")
    for r in runs:
        print(f"  seed {r['seed']}: warm start {r['warm']['steps']} steps {r['warm']['seconds']:.0f} s")
        print(_line("base", r["base"]))
        print(_line("warm", r["warm"]))
        for algo in algos:
            print(_line(algo, r[algo]) + f"; {r[algo]['run']['steps']} steps {r[algo]['run']['train_seconds']:.0f} s")
    return check_targets(runs, algos)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SmolLM2 with a calculator (minirl.bench.calculator).")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="the seeds to run (default 0)")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything (a smoke test)")
    add_recipe_probes(parser)
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS, help="the RL arms (default both)")
    parser.add_argument("--call-cost", type=float, default=None, help="the cost of a call (a probe; default 0.2)")
    parser.add_argument("--easy", choices=sorted(EASY), default=None, help="the easy kind (a probe; default times_ten)")
    parser.add_argument(
        "--demo-call-rate", type=float, default=None, help="the demonstrator's share of calls (a probe; default 0.25)"
    )
    parser.add_argument("--save", nargs="?", const="bench_calculator", default=None, metavar="NAME")
    args = parser.parse_args(argv)
    task = {"call_cost": args.call_cost, "easy": args.easy, "demo_call_rate": args.demo_call_rate}
    record = Record(args.save or "bench_calculator", seeds=args.seeds)
    targets = calculator_part(
        record,
        args.seeds,
        args.quick,
        args.save is not None,
        changes=recipe_changes(args),
        algos=args.algos,
        task={k: v for k, v in task.items() if v is not None},
    )
    return finish(record, targets, args.save, args.quick)


if __name__ == "__main__":
    raise SystemExit(main())

"""The critic before RL: how close a value head comes to the exact values, by how hard it is fitted.

``minirl.bench.agents`` fits the PPO preset's value head (``minirl.critic``) on 10 batches of the warm-started
maze walker's own walks, the model frozen, and compares its value of each start cell with the uniform walker's
exact expected return (dynamic programming, notebook 01). Its records show values squeezed towards the middle:
too high far from the goal, too low near it. Is the head's fitting budget the reason, or do the model's hidden
states not hold the answer?

Adam moves each weight by about its learning rate a step whatever the gradient's size, so a head that starts at
V ≡ 0 and takes the preset's 8 steps a batch at 1e-3 for 10 batches has moved its bias by about 0.08 at most,
and every weight by as little: far from the returns of 0 to 10 it should reach. This probe samples the walks once, takes
their features once (``token_features``), and fits a fresh head on the very same batches, batch by batch as PPO
fits it (``Critic.fit``: GAE targets from the head's own values before each batch's fit), for each of several
``(value_learning_rate, value_epochs)`` pairs. The first pair, the preset's, repeats ``minirl.bench.agents``'s
critic stage on the same walks (the same seed draws them in the same order).

    python -m minirl.bench.critic_fit --seeds 0 --save       # results/bench_critic_fit.json
    python -m minirl.bench.critic_fit --quick                # a few steps of everything (a smoke test)

Shapes: features ``[batch, trial, pos, hidden]``; mask ``[batch, trial, pos]``; rewards ``[batch, trial]``; a
start cell's features ``[cell, hidden]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import torch

from minirl.bench import finish, part_figures
from minirl.critic import Critic, prompt_features, token_features
from minirl.episodes import sample_rollout
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import LMRecipe, maze_recipe, model_kind
from minirl.results import Record
from toy_envs.maze_text import TextMazeTask, uniform_success

__all__ = ["SETTINGS", "fit_values", "main", "quick_recipe", "sample_batches", "values_against_exact"]

SETTINGS: tuple[tuple[float, int], ...] = ((1e-3, 8), (1e-3, 64), (1e-2, 8), (1e-2, 64))
"""(value_learning_rate, value_epochs) pairs fitted on the same walks: the PPO preset's first, then 8 times the
steps, 10 times the step size, and both."""

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # features, mask, rewards


def quick_recipe(recipe: LMRecipe) -> LMRecipe:
    """A few steps of everything (``--quick``): what the agents benchmarks smoke-test (this one,
    ``minirl.bench.agents`` and ``minirl.bench.calculator``)."""
    return recipe.with_(sft_steps=2, sft_prompts_per_step=2, steps=1, prompts_per_step=2, group_size=2, eval_every=0)


def sample_batches(
    policy: Any, task: TextMazeTask, recipe: LMRecipe, steps: int, generator: torch.Generator
) -> tuple[list[Batch], torch.Tensor]:
    """``steps`` batches of the recipe's size (``prompts_per_step`` start cells × ``group_size`` walks at T = 1),
    each as (features, mask, rewards), then the features of the state before the first move from every start cell
    ``[cell, hidden]`` (the prompt read, nothing written yet). ``generator`` draws the cells and the walks."""
    batches = []
    for _ in range(steps):
        prompts = task.sample_prompts(recipe.prompts_per_step, generator)
        rollout = sample_rollout(policy, task, prompts, recipe.group_size, temperature=1.0, generator=generator)
        mask = rollout.mask if rollout.mask is not None else torch.ones(rollout.tokens.shape)
        batches.append((token_features(policy, prompts, rollout), mask, task.rewards(prompts, rollout.answers)))
    return batches, prompt_features(policy, task.eval_prompts(len(task.start_cells)))


def fit_values(critic: Critic, batches: Sequence[Batch], start: torch.Tensor) -> dict[str, Any]:
    """Fit ``critic`` on ``batches`` in order (``Critic.fit``), then its value of each start state ``start``
    ``[cell, hidden]`` -> ``{"value_loss": [before each batch's fit], "value_loss_after": the last batch's after
    its fit, "values": [cell]}``."""
    losses = [critic.fit(features, mask, rewards)[1] for features, mask, rewards in batches]
    with torch.no_grad():
        values = critic.head(start).cpu()
    return {
        "value_loss": [x["value_loss"] for x in losses],
        "value_loss_after": losses[-1]["value_loss_after"] if losses else None,
        "values": values,
    }


def values_against_exact(task: TextMazeTask, values: torch.Tensor) -> dict[str, Any]:
    """Learned start values ``[cell]`` against the uniform walker's exact expected return from each start cell:
    both by cell, the largest and the mean absolute error."""
    exact = torch.as_tensor(task.maze.goal_reward * uniform_success(task.maze)[task.start_cells]).double()
    error = (values.double() - exact).abs()
    return {
        "learned": {str(c): float(v) for c, v in zip(task.start_cells, values.tolist(), strict=True)},
        "exact_uniform": {str(c): float(v) for c, v in zip(task.start_cells, exact.tolist(), strict=True)},
        "max_error": float(error.max()),
        "mean_error": float(error.mean()),
    }


def value_seed(seed: int, recipe: LMRecipe, steps: int, settings: Sequence[tuple[float, int]], quick: bool) -> dict:
    """One seed: the recipe's warm start, ``steps`` batches of walks, then a fresh head fitted under each setting."""
    task = TextMazeTask()
    policy = recipe.policy(SMOLLM2_ALIAS)
    start = time.perf_counter()
    history = recipe.warm_start(policy, task, seed=seed, progress=not quick)
    out: dict[str, Any] = {
        "seed": seed,
        "warm": {
            "steps": 0 if history is None else len(history),
            "seconds": time.perf_counter() - start,
            "loss_last": None if history is None else history.last("loss", 5),
        },
    }
    start = time.perf_counter()
    batches, start_features = sample_batches(policy, task, recipe, steps, torch.Generator().manual_seed(seed))
    out["walks_seconds"] = time.perf_counter() - start
    fits = []
    for lr, epochs in settings:
        algo = dataclasses.replace(recipe.algorithm("ppo"), value_learning_rate=lr, value_epochs=epochs)
        fit = fit_values(Critic(start_features.shape[-1], algo, start_features.device), batches, start_features)
        fits.append(
            {
                "value_learning_rate": lr,
                "value_epochs": epochs,
                "adam_steps": epochs * steps,
                "value_loss": fit["value_loss"],
                "value_loss_after": fit["value_loss_after"],
                **values_against_exact(task, fit["values"]),
            }
        )
        print(
            f"  seed {seed}: lr {lr:g} x {epochs} epochs ({epochs * steps} Adam steps): largest error "
            f"{fits[-1]['max_error']:.2f}, mean {fits[-1]['mean_error']:.2f}"
        )
    out["fits"] = fits
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The critic's fit before RL, by its fitting knobs.")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="the seeds to run (default 0)")
    parser.add_argument("--steps", type=int, default=10, help="batches of walks fitted on (default 10)")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything (a smoke test)")
    parser.add_argument("--save", nargs="?", const="bench_critic_fit", default=None, metavar="NAME")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be at least 1; got {args.steps}")
    recipe = maze_recipe(model_kind(SMOLLM2_ALIAS, None))
    steps = args.steps
    if args.quick:
        recipe, steps = quick_recipe(recipe), 1
    record = Record(args.save or "bench_critic_fit", seeds=args.seeds)
    seeds, figures = part_figures(
        record, args.seeds, recipe=dataclasses.asdict(recipe), steps=steps, settings=[list(s) for s in SETTINGS]
    )
    figures["runs"] = runs = []
    for seed in seeds:
        runs.append(value_seed(seed, recipe, steps, SETTINGS, args.quick))
        if args.save is not None:
            record.save()
    return finish(record, {}, args.save, args.quick)


if __name__ == "__main__":
    raise SystemExit(main())

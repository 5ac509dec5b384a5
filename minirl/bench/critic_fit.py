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

Two more heads separate the reasons, both fitted in closed form (``least_squares_head``: ridge regression on the
standardised features, so no step size or step count limits them):

- ``returns``: the linear head closest to the walks' own returns at every model token (γ = 1, λ = 1, no KL
  penalty: each token's return is its walk's reward, 0 or 10). The best any linear head can do from these walks:
  if it is far from the exact values too, the returns' noise or the features are the reason, not Adam's budget.
- ``exact``: the linear head closest to the uniform walker's *exact* value of the state at the first model token of
  every turn (``exact_turn_values``: V[k, cell] by dynamic programming, k the moves left). No noise at all: what the
  frozen model's hidden states can represent linearly.

Each head is also scored on every turn's state the walks visited (``turn_error``: the mean absolute error against
the exact V[k, cell] over the first model token of each turn), where the start cells are ten states of many.

    python -m minirl.bench.critic_fit --seeds 0 --save       # results/bench_critic_fit.json
    python -m minirl.bench.critic_fit --seeds 0 --cpu-bf16 --save bench_critic_fit_lstsq   # as the agents records
    python -m minirl.bench.critic_fit --quick                # a few steps of everything (a smoke test)

Shapes: features ``[batch, trial, pos, hidden]``; mask ``[batch, trial, pos]``; rewards ``[batch, trial]``; a
start cell's features ``[cell, hidden]``; the rows of a closed-form fit ``[row, hidden]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from minirl.bench import finish, part_figures
from minirl.critic import Critic, ValueHead, prompt_features, token_features
from minirl.episodes import sample_rollout
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import LMRecipe, maze_recipe, model_kind
from minirl.results import Record
from toy_envs.maze import uniform_policy
from toy_envs.maze_text import MazeEpisode, TextMazeTask, uniform_success
from toy_envs.maze_values import expected_returns

__all__ = [
    "LEAST_SQUARES",
    "SETTINGS",
    "Batch",
    "exact_turn_values",
    "fit_values",
    "head_scores",
    "least_squares_fit",
    "least_squares_head",
    "main",
    "quick_recipe",
    "sample_batches",
    "turn_error",
    "turn_starts",
    "values_against_exact",
]

SETTINGS: tuple[tuple[float, int], ...] = ((1e-3, 8), (1e-3, 64), (1e-2, 8), (1e-2, 64))
"""(value_learning_rate, value_epochs) pairs fitted on the same walks: the PPO preset's first, then 8 times the
steps, 10 times the step size, and both."""

LEAST_SQUARES: tuple[str, ...] = ("returns", "exact")
"""The closed-form heads' targets: the walks' own returns at every model token, the exact values at turn starts."""

RIDGE = 1e-3
"""``least_squares_head``'s penalty on the weights of the standardised features, against a mean squared error: small
beside the targets' variance (returns of 0 or 10), there only to make the solve well posed where features are
nearly collinear."""


class Batch(NamedTuple):
    """One step's walks: ``features`` ``[batch, trial, pos, hidden]`` (``token_features``), ``mask``
    ``[batch, trial, pos]`` (1 at the model's tokens), ``rewards`` ``[batch, trial]`` and the ``episodes``
    ``[batch][trial]`` the environment kept (cells visited, moves)."""

    features: torch.Tensor
    mask: torch.Tensor
    rewards: torch.Tensor
    episodes: list[list[MazeEpisode]]


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
        features = token_features(policy, prompts, rollout)
        batches.append(Batch(features, mask, task.rewards(prompts, rollout.answers), rollout.answers))
    return batches, prompt_features(policy, task.eval_prompts(len(task.start_cells)))


def turn_starts(mask: torch.Tensor) -> torch.Tensor:
    """The first model token of each turn ``[batch, trial, pos]`` (bool): a model token (``mask`` 1) at the first
    position or after an environment token. The state there is the turn's observation read, nothing written."""
    model = mask.bool()
    before = torch.nn.functional.pad(model[..., :-1], (1, 0), value=False)
    return model & ~before


def exact_turn_values(task: TextMazeTask, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """The uniform walker's exact value V[k, cell] of the state at each turn's first model token
    (``expected_returns`` of ``uniform_policy``: k the moves left, cell where the walk stands) and where those
    tokens are: ``(values, starts)``, both ``[batch, trial, pos]`` (values 0 off the starts). Raises if a walk's
    turns and its runs of model tokens disagree (a mask that does not mark each reply as one run)."""
    table = torch.as_tensor(expected_returns(task.maze, uniform_policy(task.maze)), dtype=torch.float32)
    starts = turn_starts(batch.mask)
    values = torch.zeros(starts.shape)
    steps = task.maze.max_steps
    for b, row in enumerate(batch.episodes):
        for t, episode in enumerate(row):
            where = torch.nonzero(starts[b, t]).flatten()
            if len(where) != episode.turns:
                raise ValueError(
                    f"episode [{b}, {t}] has {episode.turns} turns but its mask marks {len(where)} runs of model "
                    "tokens: each reply should be one run"
                )
            for turn, pos in enumerate(where.tolist()):
                values[b, t, pos] = table[steps - turn, episode.cells[turn]]
    return values, starts


def least_squares_head(features: torch.Tensor, targets: torch.Tensor, ridge: float = RIDGE) -> ValueHead:
    """The ``ValueHead`` w · h + b closest to ``targets`` ``[row]`` over ``features`` ``[row, hidden]``, in closed
    form (float64)::

        z = (h − μ) / σ                                  each feature standardised over the rows
        u = argmin_u  mean_rows (u · z + b − y)² + ridge |u|²,   b = mean(y)
          = (ZᵀZ / n + ridge I)⁻¹ Zᵀ(y − ȳ) / n
        w = u / σ,   bias = ȳ − w · μ

    ``ridge`` (``RIDGE``) only keeps the solve well posed; σ is floored so a constant feature gets no weight."""
    if features.ndim != 2 or targets.shape != features.shape[:1]:
        raise ValueError(
            f"features must be [row, hidden] and targets [row]; got {list(features.shape)} and {list(targets.shape)}"
        )
    if not ridge > 0:
        raise ValueError(f"ridge must be > 0; got {ridge!r}")
    x, y = features.double(), targets.double()
    mu, sigma = x.mean(0), x.std(0).clamp(min=1e-6)
    z = (x - mu) / sigma
    n = x.shape[0]
    gram = z.T @ z / n + ridge * torch.eye(x.shape[1], dtype=torch.float64)
    u = torch.linalg.solve(gram, z.T @ (y - y.mean()) / n)
    head = ValueHead(x.shape[1])
    with torch.no_grad():
        w = u / sigma
        head.linear.weight.copy_(w.float().unsqueeze(0))
        head.linear.bias.fill_(float(y.mean() - w @ mu))
    return head.to(features.device)


def turn_error(head: ValueHead, task: TextMazeTask, batches: Sequence[Batch]) -> float:
    """The mean absolute error of ``head``'s value against the uniform walker's exact value over the first model
    token of every turn of every walk in ``batches`` (``exact_turn_values``)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            exact, starts = exact_turn_values(task, batch)
            values = head(batch.features).cpu()
            total += float((values - exact).abs()[starts].sum())
            count += int(starts.sum())
    return total / max(count, 1)


def head_scores(head: ValueHead, task: TextMazeTask, batches: Sequence[Batch], start: torch.Tensor) -> dict[str, Any]:
    """``head``'s value of each start state ``start`` ``[cell, hidden]`` against the exact ones
    (``values_against_exact``), and its ``turn_error`` over every turn of ``batches``."""
    with torch.no_grad():
        values = head(start).cpu()
    return {**values_against_exact(task, values), "turn_error": turn_error(head, task, batches)}


def least_squares_fit(task: TextMazeTask, batches: Sequence[Batch], target: str) -> ValueHead:
    """``least_squares_head`` on every batch at once: ``target`` ``"returns"`` (every model token, its walk's
    reward) or ``"exact"`` (each turn's first model token, ``exact_turn_values``)."""
    if target not in LEAST_SQUARES:
        raise ValueError(f"target must be one of {LEAST_SQUARES}; got {target!r}")
    rows, ys = [], []
    for batch in batches:
        if target == "returns":
            where = batch.mask.bool()
            y = batch.rewards.float().unsqueeze(-1).expand(where.shape)
        else:
            y, where = exact_turn_values(task, batch)
        rows.append(batch.features.cpu()[where])
        ys.append(y[where])
    return least_squares_head(torch.cat(rows), torch.cat(ys))


def fit_values(critic: Critic, batches: Sequence[Batch], start: torch.Tensor) -> dict[str, Any]:
    """Fit ``critic`` on ``batches`` in order (``Critic.fit``), then its value of each start state ``start``
    ``[cell, hidden]`` -> ``{"value_loss": [before each batch's fit], "value_loss_after": the last batch's after
    its fit, "values": [cell]}``."""
    losses = [critic.fit(b.features, b.mask, b.rewards)[1] for b in batches]
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


def value_seed(
    seed: int,
    recipe: LMRecipe,
    steps: int,
    settings: Sequence[tuple[float, int]],
    quick: bool,
    dump: str | None = None,
) -> dict:
    """One seed: the recipe's warm start, ``steps`` batches of walks, then a fresh head fitted under each setting
    and the two closed-form heads (``LEAST_SQUARES``). ``dump``: a file to ``torch.save`` the batches and the
    start features in (``(batches, start)``; features as float16), for fits this probe does not make."""
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
    if dump is not None:
        kept = [b._replace(features=b.features.half().cpu()) for b in batches]
        torch.save((kept, start_features.cpu()), dump)
    fits = []
    for lr, epochs in settings:
        algo = dataclasses.replace(recipe.algorithm("ppo"), value_learning_rate=lr, value_epochs=epochs)
        critic = Critic(start_features.shape[-1], algo, start_features.device)
        fit = fit_values(critic, batches, start_features)
        fits.append(
            {
                "value_learning_rate": lr,
                "value_epochs": epochs,
                "adam_steps": epochs * steps,
                "value_loss": fit["value_loss"],
                "value_loss_after": fit["value_loss_after"],
                **head_scores(critic.head, task, batches, start_features),
            }
        )
        print(
            f"  seed {seed}: lr {lr:g} x {epochs} epochs ({epochs * steps} Adam steps): largest error "
            f"{fits[-1]['max_error']:.2f}, mean {fits[-1]['mean_error']:.2f}, over turns {fits[-1]['turn_error']:.2f}"
        )
    out["fits"] = fits
    out["least_squares"] = closed = []
    for target in LEAST_SQUARES:
        head = least_squares_fit(task, batches, target)
        closed.append({"target": target, "ridge": RIDGE, **head_scores(head, task, batches, start_features)})
        print(
            f"  seed {seed}: least squares on the {target}: largest error {closed[-1]['max_error']:.2f}, mean "
            f"{closed[-1]['mean_error']:.2f}, over turns {closed[-1]['turn_error']:.2f}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The critic's fit before RL, by its fitting knobs.")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="the seeds to run (default 0)")
    parser.add_argument("--steps", type=int, default=10, help="batches of walks fitted on (default 10)")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything (a smoke test)")
    parser.add_argument("--cpu-bf16", action="store_true", help="the recipe with cpu_bfloat16 (as the agents records)")
    parser.add_argument("--dump", default=None, metavar="FILE", help="also torch.save the walks' features to FILE")
    parser.add_argument("--save", nargs="?", const="bench_critic_fit", default=None, metavar="NAME")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be at least 1; got {args.steps}")
    recipe = maze_recipe(model_kind(SMOLLM2_ALIAS, None)).with_(cpu_bfloat16=args.cpu_bf16)
    steps = args.steps
    if args.quick:
        recipe, steps = quick_recipe(recipe), 1
    record = Record(args.save or "bench_critic_fit", seeds=args.seeds)
    seeds, figures = part_figures(
        record, args.seeds, recipe=dataclasses.asdict(recipe), steps=steps, settings=[list(s) for s in SETTINGS]
    )
    figures["runs"] = runs = []
    for seed in seeds:
        dump = None if args.dump is None else (args.dump if len(seeds) == 1 else f"{args.dump}.seed{seed}")
        runs.append(value_seed(seed, recipe, steps, SETTINGS, args.quick, dump))
        if args.save is not None:
            record.save()
    return finish(record, {}, args.save, args.quick)


if __name__ == "__main__":
    raise SystemExit(main())

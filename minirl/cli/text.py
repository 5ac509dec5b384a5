"""The text kind's pieces: a language model trained on a text task (``text_sort``, ``text_add``, ``reasoning``,
``maze_text``).

A run starts from the model's recipe (``minirl.lm.recipes``: the model kind worked out once, here) with the
command line's choices on top (``text_recipe``), loads the model, warm-starts it, and trains it with the one
loop (``minirl.train.train``). ``TEXT_TASKS`` is the table of the text tasks: each one's recipe and how to make
the task from the flags. The run kinds' table (``minirl.cli.kinds``) names these functions.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from minirl.cli.flags import (
    COMPARE_ONLY,
    TRAIN_FLAGS_EXCLUDED,
    Built,
    given_fields,
    given_flags,
    keep_flags,
    knob_changes,
)
from minirl.history import History
from minirl.train import TrainConfig
from toy_envs.reasoning import FAMILIES, REASONING_REWARDS

if TYPE_CHECKING:
    from minirl.lm.recipes import LMRecipe

__all__ = ["TEXT_PASS_K", "TEXT_TASKS", "text_recipe", "text_train_flags"]

TEXT_PASS_K = {"pass_k": 8, "pass_k_prompts": 32}  # a text-task run's pass@k at each evaluation, unless --pass-k
# the LMRecipe fields a flag of the same name changes (--set kl_coef=... and --trainable-layers: text_recipe)
RECIPE_FLAGS = (
    "learning_rate",
    "steps",
    "prompts_per_step",
    "group_size",
    "max_new_tokens",
    "sft_steps",
    "sft_learning_rate",
    "few_shot",
    "eval_prompts",
    "eval_every",
)


# ---- the flags ------------------------------------------------------------------------------------------------


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


def add_text_flags(p: argparse.ArgumentParser) -> None:
    t = p.add_argument_group("text tasks (a language model; defaults depend on --model)")
    t.add_argument(
        "--model",
        default="smollm2-135m",
        help="'smollm2-135m' (shipped, offline), 'tiny' (a small Llama built here), a local folder or a hub name",
    )
    t.add_argument("--max-value", type=int, default=9, help="text_sort: numbers are 0 .. max-value")
    t.add_argument("--digits", type=int, default=2, help="text_add, reasoning --family add: digits per operand")
    t.add_argument("--family", choices=FAMILIES, default="sum", help="reasoning: sum (of --length digits), word, add")
    t.add_argument(
        "--thinking",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="reasoning: a <think></think> scratchpad before the answer (default), or the answer only",
    )
    t.add_argument(
        "--verifier",
        choices=(*REASONING_REWARDS, "judge"),
        default="strict",
        help="reasoning: the strict verifier (format part + right answer), 'answer' (the right answer in the "
        "asked form, no format part), or a hackable lenient one: 'substring' (the answer after </think> is a "
        "substring of the right one, empty included) or 'contains' (the right number anywhere); or 'judge': the "
        "untrained --model asked whether the reply is right, P(yes) as the reward (the strict verifier still "
        "measures accuracy; minirl.lm.judge)",
    )
    t.add_argument("--few-shot", type=int, default=None, help="worked examples in each prompt")
    t.add_argument("--max-new-tokens", type=int, default=None, help="response length budget (tokens)")
    t.add_argument("--sft-steps", type=int, default=None, help="supervised warm-start steps before RL")
    t.add_argument("--sft-learning-rate", type=float, default=None, help="the warm start's Adam step size")
    t.add_argument(
        "--trainable-layers", type=_layers, default=None, help="train only the top N transformer blocks, or 'all'"
    )
    t.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")


# ---- the text tasks --------------------------------------------------------------------------------------------


class TextTask(NamedTuple):
    """One text task: its recipe for a model kind (``model_kind``) and the flags, and the task made from the
    flags with the recipe's prompt (worked examples, system message) and held-out answers."""

    recipe: Callable[[str, argparse.Namespace], LMRecipe]
    make: Callable[[argparse.Namespace, LMRecipe], Any]


def _model_recipe(kind: str, args: argparse.Namespace) -> LMRecipe:
    from minirl.lm.recipes import RECIPES

    return RECIPES[kind]


def _reasoning_recipe(kind: str, args: argparse.Namespace) -> LMRecipe:
    """Notebook 10's recipe for this device (README, "Reasoning")."""
    from minirl.lm.recipes import reasoning_recipe

    return reasoning_recipe(kind, args.thinking)


def _reasoning_task(args: argparse.Namespace, recipe: LMRecipe):
    sizes = {"sum": {"n_numbers": args.length}, "add": {"digits": args.digits}}.get(args.family, {})
    if args.verifier == "judge":  # GRPO paid by an untrained copy of the model, asked yes or no (notebook 11)
        from minirl.lm.judge import JudgedTask

        task = recipe.reasoning_task(args.family, args.thinking, reward="strict", **sizes)
        return JudgedTask(task, judge_model=args.model, device=args.device)
    return recipe.reasoning_task(args.family, args.thinking, reward=args.verifier, **sizes)


def _maze_recipe(kind: str, args: argparse.Namespace) -> LMRecipe:
    """The text maze's recipe for this model kind (``minirl.lm.recipes.maze_recipe``)."""
    from minirl.lm.recipes import maze_recipe

    return maze_recipe(kind)


def _maze_task(args: argparse.Namespace, recipe: LMRecipe):
    from toy_envs.maze_text import TextMazeTask

    return TextMazeTask()


def _calculator_recipe(kind: str, args: argparse.Namespace) -> LMRecipe:
    """The calculator task's recipe for this model kind (``minirl.lm.recipes.calculator_recipe``)."""
    from minirl.lm.recipes import calculator_recipe

    return calculator_recipe(kind)


def _calculator_task(args: argparse.Namespace, recipe: LMRecipe):
    from toy_envs.calculator import CalculatorTask

    return CalculatorTask()


TEXT_TASKS: dict[str, TextTask] = {
    "text_sort": TextTask(_model_recipe, lambda args, r: r.task(n_numbers=args.length, max_value=args.max_value)),
    "text_add": TextTask(_model_recipe, lambda args, r: r.addition_task(digits=args.digits)),
    "reasoning": TextTask(_reasoning_recipe, _reasoning_task),
    "maze_text": TextTask(_maze_recipe, _maze_task),  # notebook 01's maze walked in text, episodes of turns
    "calculator": TextTask(_calculator_recipe, _calculator_task),  # products, with a calculator it may call
}


# ---- a run ----------------------------------------------------------------------------------------------------


def text_recipe(args: argparse.Namespace, knobs: dict | None = None) -> LMRecipe:
    """The model's recipe (``minirl.lm.recipes``, for the model kind of ``--model`` on ``--device``) with the
    command line's choices on top (``--set kl_coef=...`` replaces the recipe's KL coefficient, ``--trainable-layers
    all`` trains every block). ``knobs``: the ``--set`` changes, parsed already (None: parse ``args.set``)."""
    from minirl.lm.recipes import model_kind

    knobs = knob_changes(args.set) if knobs is None else knobs
    chosen = {name: getattr(args, name) for name in RECIPE_FLAGS} | {"kl_coef": knobs.get("kl_coef")}
    changes = {k: v for k, v in chosen.items() if v is not None}
    if args.trainable_layers is not None:
        changes["trainable_layers"] = None if args.trainable_layers == "all" else args.trainable_layers
    recipe = TEXT_TASKS[args.task].recipe(model_kind(args.model, args.device), args)
    return recipe.with_(**changes)


def text_train_flags(args: argparse.Namespace) -> dict:
    """The ``TrainConfig`` fields a text-task run takes from the command line, over the recipe's: pass@k at each
    evaluation (``TEXT_PASS_K``) and the flags given."""
    return {**TEXT_PASS_K, **given_fields(args, TrainConfig, TRAIN_FLAGS_EXCLUDED)}


def build_text_run(
    args: argparse.Namespace, algo: str, seed: int, *, knobs: dict, progress: bool, warm_start: bool = True
) -> Built:
    """A text-task run: the recipe, the task, the model loaded and warm-started (unless not ``warm_start``: a
    resumed run's checkpoint replaces the weights), its TrainConfig."""
    recipe = text_recipe(args, knobs)
    task = TEXT_TASKS[args.task].make(args, recipe)
    start = time.perf_counter()
    policy = recipe.policy(args.model, seed=seed, device=args.device)
    print(
        f"loaded {args.model} ({sum(p.numel() for p in policy.parameters()) / 1e6:.1f}M parameters) on "
        f"{policy.device} in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    sft = recipe.warm_start(policy, task, seed=seed, progress=progress) if warm_start else None
    if sft is not None:
        print(f"SFT warm start: {recipe.sft_steps} steps, loss {sft.last('loss', 10):.3f} nats/token", flush=True)
    # every language-model run reports pass@k at its evaluations (README, "Diagnostics"), unless told otherwise
    algorithm = recipe.algorithm(algo, **knobs)
    config = recipe.train_config(task, algo=algorithm, seed=seed, progress=progress, **text_train_flags(args))
    return Built(config, policy, {"model": {"name": args.model, "recipe": dataclasses.asdict(recipe)}})


def text_summary(args: argparse.Namespace | None, label: str, history: History) -> str:
    """One line for one finished text-task run (``args``: the command line, which names the model)."""
    assert args is not None, "a text run's summary names its model: give the command line"
    first, last = history.evals[0], history.evals[-1]
    unseen = (
        f", unseen answers {first['unseen_greedy_exact']:.1%} -> {last['unseen_greedy_exact']:.1%}"
        if "unseen_greedy_exact" in last
        else ""
    )
    summary = (
        f"{label:>12} seed {history.seed} on {args.model}: {len(history)} steps in {history['wall_time'][-1]:.0f} s "
        f"({history['gen_seconds'].mean():.1f} s generation + {history['update_seconds'].mean():.1f} s update "
        f"per step), reward {history.last('reward', 5):.2f}, held-out greedy accuracy "
        f"{first['greedy_exact']:.1%} -> {last['greedy_exact']:.1%}{unseen}, format "
        f"{first.get('greedy_format', float('nan')):.0%} -> {last.get('greedy_format', float('nan')):.0%}"
    )
    for key in sorted((k for k in last if k.startswith("pass@")), key=lambda k: int(k[5:])):  # pass@1 first
        summary += f", {key} {first[key]:.1%} -> {last[key]:.1%}"
    if "greedy_truncated" in last:
        summary += f", greedy replies cut by the budget {last['greedy_truncated']:.0%}"
    return summary


def text_command(config, algo: str, args: argparse.Namespace, parser: Callable[[], argparse.ArgumentParser]):
    """The ``minirl train`` arguments of one text-task run of ``compare``: every flag ``train`` shares with
    ``compare`` that differs from its default, then the algorithm, the seed and ``--save-every``."""
    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    argv = ["train", *given_flags(args, commands.choices["train"], COMPARE_ONLY | {"algo", "seed"})]
    return [*argv, "--algo", algo, "--seed", str(config.seed), *keep_flags(args)]


def model_name(args: argparse.Namespace) -> str:
    """The model a text run trains, as run names and results records name it (a folder's last part)."""
    return Path(args.model).name

"""``minirl eval`` and ``minirl generate`` on a kept run whose model answers prompts (a toy or a text run).

The run kinds (``minirl.cli.kinds``) name these as their evaluation and generation; the maze's are its own.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import torch

if TYPE_CHECKING:
    from minirl.protocols import Policy

__all__ = ["EVAL_SAMPLING_SEED", "evaluate_policy", "generate_answers", "show"]

EVAL_SAMPLING_SEED = 20_000
"""``minirl eval`` draws its pass@k samples with ``torch.Generator().manual_seed(EVAL_SAMPLING_SEED + run seed)``."""


def evaluate_policy(args: argparse.Namespace, run, config: dict) -> int:
    """Greedy accuracy and format rate of a run folder's trained model on its task's evaluation prompts (or
    another task's: ``--task``, ``--n-numbers``, ``--max-value``, ``--digits``), pass@k from
    ``--samples-per-prompt`` samples at T = 1, a text task's answer kinds, and a few answers (an agent's task: the
    greedy episode's transcript from each of the first ``--samples`` prompts)."""
    from minirl.diagnostics import episode_diagnostics_line
    from minirl.episodes import greedy_rollout
    from minirl.runs import load_run_policy
    from minirl.train import evaluate, evaluation_generator, evaluation_prompts

    task, changed = _eval_task(args, run.task())
    ks = _eval_ks(args.k, args.samples_per_prompt)
    policy = cast("Policy", load_run_policy(args.run, device=args.device))  # a maze run's evaluation is its own
    n = args.eval_prompts or config.get("eval_prompts", 1000)
    run_seed = config.get("seed", 0)
    if changed:
        print(f"task: {changed}")
    ev = evaluate(policy, task, n, evaluation_generator(run_seed), sampled=False)
    print(f"{args.run}: " + ", ".join(f"{k} {v:.1%}" for k, v in ev.items()) + f" on {n} evaluation prompts")
    prompts = evaluation_prompts(task, n, evaluation_generator(run_seed))
    _print_pass_at_k(policy, task, prompts, args.samples_per_prompt, ks, run_seed)
    greedy = greedy_rollout(policy, task, prompts).answers  # one greedy pass (an episode each, for an agent's task)
    if hasattr(task, "answer_kinds"):
        kinds = task.answer_kinds(prompts, greedy)
        print("  greedy answer kinds: " + "; ".join(f"{k} {v:.1%}" for k, v in kinds.items()))
    if hasattr(task, "diagnostics"):  # an agent's task: turns, unusable replies, success by start, calls by kind
        print("  greedy episodes: " + episode_diagnostics_line(task.diagnostics(prompts, greedy)))
    shown, answers = prompts[: args.samples], greedy[: args.samples]
    right = task.is_correct(shown, answers)
    for i in range(len(right)):
        verdict = "right" if right[i].all() else "wrong"
        if hasattr(task, "transcript"):  # an episode: what was said, turn by turn
            print(f"  {task.transcript(shown[i], answers[i][0])} ({verdict})")
        else:
            print(f"  {show(shown[i])!r} -> {show(answers[i])!r} ({verdict})")
    return 0


def _print_pass_at_k(policy, task, prompts, n_samples: int, ks: list[int], seed: int) -> None:
    """One line: pass@k for each k, from ``n_samples`` samples per prompt at T = 1 (``sampled_pass_at_k``),
    drawn with the generator seeded ``EVAL_SAMPLING_SEED + seed`` (the run's seed)."""
    from minirl.pass_at_k import sampled_pass_at_k

    generator = torch.Generator().manual_seed(EVAL_SAMPLING_SEED + seed)
    scores = sampled_pass_at_k(policy, task, prompts, n_samples, ks, generator)
    print("  " + ", ".join(f"{k} {v:.1%}" for k, v in scores.items()) + f" ({n_samples} samples per prompt, T = 1)")


def _eval_ks(text: str | None, n_samples: int) -> list[int]:
    """The ks of ``--k`` (default: 1 and ``n_samples``), each in 1..n_samples."""
    if n_samples < 1:
        raise ValueError(f"--samples-per-prompt must be >= 1; got {n_samples}")
    if text is None:
        return sorted({1, n_samples})
    try:
        ks = [int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise ValueError(f"--k must be comma-separated integers such as 1,8; got {text!r}") from None
    bad = [k for k in ks if not 1 <= k <= n_samples]
    if not ks or bad:
        raise ValueError(f"--k must be integers in 1..--samples-per-prompt = {n_samples}; got {text!r}")
    return ks


def _resized_tasks() -> dict[str, tuple[type, dict[str, int], Callable[[Any], str]]]:
    """The text tasks ``minirl eval --task`` can evaluate a run on: ``{name: (class, {size: default}, what the
    new task is)}``."""
    from toy_envs.text_tasks import TextAdditionTask, TextSortTask

    return {
        "text_sort": (
            TextSortTask,
            {"n_numbers": 3, "max_value": 9},
            lambda t: f"text_sort, {t.n_numbers} numbers 0-{t.max_value} (the run's prompt settings)",
        ),
        "text_add": (
            TextAdditionTask,
            {"digits": 2},
            lambda t: f"text_add, {t.digits}-digit numbers (the run's prompt settings)",
        ),
    }


def _eval_task(args: argparse.Namespace, task):
    """(the task to evaluate on, a description of the change or ""): the run's task, or a text task built with
    the run's prompt settings (worked examples, system message, held-out sets) and the flags' sizes."""
    sizes = {"n_numbers": args.n_numbers, "max_value": args.max_value, "digits": args.digits}
    given = {k: v for k, v in sizes.items() if v is not None}
    if args.task is None and not given:
        return task, ""
    tasks = _resized_tasks()
    if not isinstance(task, tuple(cls for cls, _, _ in tasks.values())):
        raise ValueError(
            f"--task, --n-numbers, --max-value and --digits apply to a text run (text_sort, text_add); "
            f"{args.run} is a {type(task).__name__} run"
        )
    for name, value in given.items():
        if value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1; got {value}")
    chosen = args.task or ("text_add" if "digits" in given else "text_sort")  # without --task: the sizes say
    cls, defaults, describe = tasks[chosen]
    wrong = [k for k in given if k not in defaults]
    if wrong:
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in wrong)
        raise ValueError(
            f"{flags} does not apply to {chosen}: --n-numbers and --max-value go with text_sort, --digits with text_add"
        )
    names = ("few_shot", "n_heldout", "format_weight", "seed", "system", "n_unseen_answers")
    prompt = {k: getattr(task, k) for k in names}
    new = cls(**{k: given.get(k, getattr(task, k, default)) for k, default in defaults.items()}, **prompt)
    return new, describe(new)


def show(item) -> str:
    """A prompt or an answer as text: a text prompt's question, an answer's text, a toy answer's numbers."""
    if isinstance(item, torch.Tensor):
        return " ".join(str(int(t)) for t in item.flatten())
    if isinstance(item, (list, tuple)) and len(item) == 1:
        return show(item[0])
    return str(getattr(item, "question", item))


def generate_answers(args: argparse.Namespace, run) -> int:
    """A run folder's trained model answers a prompt (greedy): a question through the training chat template
    (its system message and worked examples), or for a toy run the prompt's numbers (``"3 1 2"``). Without a
    prompt: one answer per line typed, until an empty line or end of input."""
    from minirl.runs import load_run_policy
    from minirl.train import evaluation_prompts

    task, policy = run.task(), load_run_policy(args.run, device=args.device)
    example = evaluation_prompts(task, 1, torch.Generator().manual_seed(0))
    if args.prompt is not None:
        print(_answer(policy, example, args.prompt))
        return 0
    print(f"{args.run}: type a prompt, an empty line (or Ctrl-D) ends", flush=True)
    while True:
        try:
            prompt = input("> ").strip()
        except EOFError:
            return 0
        if not prompt:
            return 0
        try:
            print(_answer(policy, example, prompt), flush=True)
        except ValueError as err:  # a malformed toy prompt: say so and go on
            print(f"error: {err}", flush=True)


def _answer(policy, example, prompt: str) -> str:
    """The greedy answer to ``prompt``, shaped like ``example`` (a toy run's prompt tensor, or a text prompt
    whose chat messages it replaces the question of)."""
    if not isinstance(example, torch.Tensor):
        messages = [*example[0].messages[:-1], {"role": "user", "content": prompt}]
        return policy.greedy([messages]).answers[0][0]
    try:
        numbers = [int(t) for t in prompt.replace(",", " ").split()]
    except ValueError:
        numbers = []
    if len(numbers) != example.shape[1]:
        raise ValueError(f"prompt must be {example.shape[1]} numbers for this toy run; got {prompt!r}")
    return show(policy.greedy(torch.tensor([numbers])).answers[0])

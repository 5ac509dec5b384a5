"""How good a policy is on a task's evaluation prompts: greedy (and sampled) accuracy, the answer's form, pass@k.

``train`` calls ``evaluate`` at its evaluations, always on the prompts of ``evaluation_generator(seed)``, so a
run's every evaluation scores the same prompts; ``minirl eval``, the benchmarks and the notebooks call it too.
"""

from __future__ import annotations

import torch

from minirl.episodes import greedy_rollout, sample_rollout
from minirl.pass_at_k import sampled_pass_at_k
from minirl.protocols import (
    FormatTask,
    HeldOutTask,
    Policy,
    ProcessRewardTask,
    Task,
    ToyTask,
    UnseenAnswersTask,
    select_prompts,
)
from minirl.toy.policy import as_policy
from minirl.utils import device_generator

__all__ = ["evaluate", "evaluation_generator", "evaluation_prompts"]


def evaluation_generator(seed: int) -> torch.Generator:
    """The generator a run of ``seed`` draws its evaluation prompts from, seeded ``10_000 + seed``: apart from the
    training draws (seeded ``seed``), and the same at every evaluation, so each one scores the same prompts."""
    return torch.Generator().manual_seed(10_000 + seed)


def evaluation_prompts(task: Task, n: int, generator: torch.Generator):
    """The ``n`` prompts ``evaluate`` scores: the task's held-out ``eval_prompts`` when it has them, else fresh
    draws (``sample_prompts``), both from ``generator``."""
    return task.eval_prompts(n, generator) if isinstance(task, HeldOutTask) else task.sample_prompts(n, generator)


@torch.no_grad()
def evaluate(
    model: Policy | torch.nn.Module,
    task: Task,
    n_prompts: int = 1000,
    generator: torch.Generator | None = None,
    *,
    sampled: bool = True,
    pass_k: int = 0,
    pass_k_prompts: int = 50,
) -> dict[str, float]:
    """Greedy (and sampled, T = 1) quality on evaluation prompts: the task's held-out ``eval_prompts`` when it
    has them, else fresh ``sample_prompts`` (which a small toy task has also drawn in training).

    Returns ``greedy_exact`` (fraction of greedy responses the task calls correct: exactly sorted, the
    right sum, ...), with ``sampled=True`` ``sampled_exact``; when the task has a format check,
    ``greedy_format`` (fraction of answers in the asked form); when it has a per-position reward and a
    reference answer (the toy sorting tasks), ``greedy_position_acc`` (and ``sampled_position_acc``): the
    fraction of the answer's positions right, Σ_t r_t(x, y) / Σ_t r_t(x, sort(x)), averaged over prompts.
    When the task holds out whole answers (a text task's ``n_unseen_answers``), also ``unseen_greedy_exact``
    and ``unseen_greedy_format``: greedy accuracy on (at most ``n_prompts`` of) the problems whose answer
    never occurs in training. When the policy's responses end on their own (a language model's),
    ``greedy_truncated``: the fraction of greedy responses cut by the token budget. With ``pass_k`` > 0,
    ``pass@1`` and ``pass@{pass_k}`` from ``pass_k`` samples (T = 1) to each of the first ``pass_k_prompts``
    evaluation prompts (``sampled_pass_at_k``).
    ``model`` is a policy or a bare toy model (the policy moves the prompts to its own device).
    """
    policy = as_policy(model)
    generator = generator if generator is not None else torch.Generator().manual_seed(12345)
    prompts = evaluation_prompts(task, n_prompts, generator)  # on the CPU, where the task scores them
    # the fraction of positions right needs a per-position reward and a reference answer (the toy sorting tasks)
    graded = task if isinstance(task, ProcessRewardTask) and isinstance(task, ToyTask) else None
    if graded is not None:
        best = graded.per_position_rewards(prompts, graded.sorted_responses(prompts).unsqueeze(1)).sum(dim=-1)
    kinds = [("greedy", greedy_rollout(policy, task, prompts))]
    if sampled:
        gen = device_generator(generator, policy.device)
        kinds.append(("sampled", sample_rollout(policy, task, prompts, 1, temperature=1.0, generator=gen)))
    out = {}
    for kind, rollout in kinds:
        answers = rollout.answers
        out[f"{kind}_exact"] = float(task.is_correct(prompts, answers).float().mean())
        if graded is not None:
            right = graded.per_position_rewards(prompts, answers).sum(dim=-1)  # [batch, 1]
            out[f"{kind}_position_acc"] = float((right / best).mean())
        if isinstance(task, FormatTask):
            out[f"{kind}_format"] = float(task.format_ok(prompts, answers).float().mean())
        if kind == "greedy" and rollout.truncated is not None:
            out["greedy_truncated"] = float(rollout.truncated.float().mean())
    if pass_k:
        ks = [1, pass_k] if pass_k > 1 else [1]
        first = select_prompts(prompts, slice(pass_k_prompts))
        out.update(sampled_pass_at_k(policy, task, first, pass_k, ks, generator))
    if isinstance(task, UnseenAnswersTask) and (n_unseen := min(task.n_unseen_problems, n_prompts)):
        unseen = task.unseen_answer_prompts(n_unseen)
        answers = greedy_rollout(policy, task, unseen).answers
        out["unseen_greedy_exact"] = float(task.is_correct(unseen, answers).float().mean())
        out["unseen_greedy_format"] = float(task.format_ok(unseen, answers).float().mean())
    return out

"""The supervised warm start before RL: imitate the task's demonstrations with the supervised loss that sits
beside the RL losses (the policy gradient with every advantage 1 and no ratio)::

    L_SFT = −(1/N_tok) Σ_{i,t} m_it log π_θ(y*_it | x_i, y*_<t)       (``sft_loss``, token_mean)

A demonstrator that draws its reply at random (the maze's uniform walker) gives one draw per state it visits; the
model learns its distribution only as the draws average out. With ``targets="choices"`` each of those tokens is
replaced by every reply the demonstrator could have drawn there, equally weighted (``choice_log_likelihood``)::

    L = −(1/N_tok) Σ_{i,t} m_it ℓ_it,   ℓ_it = (1/|C_it|) Σ_{c ∈ C_it} log π_θ(c | x_i, y*_<t)  at a choice

so the target at each visited state is the demonstrator's distribution itself, not a sample of it.
"""

from __future__ import annotations

import time

import torch
from tqdm.auto import tqdm

from minirl.episodes import choice_demonstrations, demonstrations
from minirl.history import History
from minirl.losses import choice_log_likelihood, sft_loss
from minirl.train import lr_scheduler
from minirl.utils import check_positive_ints, torch_threads

__all__ = ["SFT_TARGETS", "sft_warm_start"]

SFT_TARGETS = ("draws", "choices")
"""What a warm start imitates: the demonstrated tokens, or where the demonstrator chose, its choices."""


def sft_warm_start(  # noqa: PLR0913
    policy,
    task,
    steps: int,
    prompts_per_step: int = 16,
    learning_rate: float = 1e-3,
    seed: int = 0,
    threads: int | None = None,
    progress: bool = True,
    max_seconds: float | None = None,
    lr_schedule: str = "constant",
    targets: str = "draws",
) -> History:
    """Supervised fine-tuning of ``policy`` on the task's reference answers (``prompt.target``), in place.

    Each step draws ``prompts_per_step`` training prompts, turns their reference answers into a
    ``Rollout`` (``minirl.episodes.demonstrations``: answer tokens + EOS, masked; an episodic task's demonstrator
    walking whole episodes, the environment's tokens masked) and takes one Adam step on
    ``sft_loss`` (gradient norm clipped to 1) at ``learning_rate`` (``lr_schedule="cosine"``: decaying to 0 at
    ``steps``, so the last steps average out the batches' noise instead of following the last few), and stops
    early once ``max_seconds`` have passed (None: never; to compare with another method at equal wall time).
    ``targets`` (``SFT_TARGETS``): ``"draws"`` imitates the demonstrated tokens; ``"choices"`` imitates, where an
    episodic demonstrator chose uniformly among replies (``choice_demonstrations``), every reply it could have
    chosen, equally (``choice_log_likelihood``), and the drawn tokens elsewhere.
    Returns a History with ``loss`` (mean negative log-likelihood per demonstrated token, nats) and ``wall_time``.
    """
    check_positive_ints(steps=steps, prompts_per_step=prompts_per_step)
    if targets not in SFT_TARGETS:
        raise ValueError(f"targets must be one of {list(SFT_TARGETS)}; got {targets!r}")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    scheduler = lr_scheduler(optimizer, lr_schedule, steps)
    history = History(label="sft", seed=seed)
    start = time.perf_counter()
    with torch_threads(threads):
        for step in tqdm(range(1, steps + 1), desc="SFT warm start", disable=not progress, leave=False):
            prompts = task.sample_prompts(prompts_per_step, generator)
            if targets == "choices":
                demos, choices = choice_demonstrations(policy, task, prompts, generator)  # [batch, 1, pos(, k)]
                scores = policy.score(prompts, demos, temperature=1.0, choices=choices)
                log_probs = choice_log_likelihood(scores.log_probs, scores.choices, choices)
            else:
                demos = demonstrations(policy, task, prompts, generator)  # [batch, 1, pos]
                log_probs = policy.score(prompts, demos, temperature=1.0).log_probs
            loss = sft_loss(log_probs, demos.mask)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            history.log(step=step, loss=loss.item(), wall_time=time.perf_counter() - start)
            if max_seconds is not None and history.records[-1]["wall_time"] >= max_seconds:
                break
    return history

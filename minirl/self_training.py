"""Learning from your own samples: turn a batch of sampled groups into training data without a policy gradient.

GRPO samples a group of replies per prompt, scores them, and pushes each reply's log-probability by its advantage.
Two older recipes use the same samples differently:

- **Rejection sampling / expert iteration**: keep the replies the verifier accepts and fine-tune on them as if
  they were demonstrations (``expert_iteration_batch``, then ``sft_loss``); repeat for rounds, each round
  sampling from the model the last one trained. Only right replies teach; a group with none teaches nothing, and
  wrong replies are never pushed down.
- **Online DPO**: the best and the worst reply of each group make a preference pair (``group_preference_pairs``),
  trained with ``dpo_loss`` against a reference model (the model of the last round).

Shapes: ``rewards`` is ``[prompt, group]`` (one reward per sampled reply); replies are indexed by their place in
their prompt's group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["expert_iteration_batch", "group_preference_pairs"]


def _check_rewards(rewards: Any) -> torch.Tensor:
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 2 or not rewards.is_floating_point():
        got = f"shape {tuple(rewards.shape)}, {rewards.dtype}" if isinstance(rewards, torch.Tensor) else type(rewards)
        raise ValueError(f"rewards must be a float tensor [prompt, group]; got {got}")
    if not bool(torch.isfinite(rewards).all()):
        raise ValueError("rewards must be finite")
    return rewards


def expert_iteration_batch(
    prompts: Sequence[Any],
    replies: Sequence[Sequence[str]],
    rewards: torch.Tensor,
    threshold: float,
    per_prompt: int | None = None,
) -> tuple[list[Any], list[list[str]]]:
    """The supervised batch of one round of rejection sampling: every reply whose reward reaches ``threshold``,
    paired with its prompt, in prompt order, at most ``per_prompt`` per prompt (the first accepted; None: all).

        D = {(x_i, y_ij) : r_ij ≥ threshold},   then minimise  −Σ_{(x, y) ∈ D} log π_θ(y | x)  (``sft_loss``)

    Args:
        prompts: the batch's prompts, one per row of ``rewards``.
        replies: per prompt, its group of sampled replies (``Rollout.answers`` of a text task).
        rewards: ``[prompt, group]`` float, each reply's reward.
        threshold: the reward a reply needs to be kept (a verifier's reward of a right reply).
        per_prompt: the most replies kept per prompt (None: every accepted one).

    Returns:
        (kept prompts, their replies as one-reply groups ``[[reply], ...]``), the form
        ``CausalLMPolicy.rollout_from_texts`` takes; both empty when no reply is accepted.
    """
    rewards = _check_rewards(rewards)
    if len(prompts) != rewards.shape[0] or len(replies) != rewards.shape[0]:
        raise ValueError(
            f"prompts and replies must have one entry per row of rewards ({rewards.shape[0]}); "
            f"got {len(prompts)} and {len(replies)}"
        )
    if any(len(group) != rewards.shape[1] for group in replies):
        raise ValueError(f"every group of replies must hold {rewards.shape[1]} replies, one per column of rewards")
    if per_prompt is not None and (isinstance(per_prompt, bool) or not isinstance(per_prompt, int) or per_prompt < 1):
        raise ValueError(f"per_prompt must be an int >= 1 or None; got {per_prompt!r}")
    kept_prompts, kept_replies = [], []
    for prompt, group, row in zip(prompts, replies, rewards >= threshold):
        accepted = [reply for reply, ok in zip(group, row.tolist()) if ok]
        for reply in accepted[:per_prompt]:
            kept_prompts.append(prompt)
            kept_replies.append([reply])
    return kept_prompts, kept_replies


def group_preference_pairs(rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Online DPO's pair from each group: the reply with the highest reward is chosen (y_w), the one with the
    lowest rejected (y_l); on ties, the first of the best and the last of the worst. A group whose rewards are all
    equal has no preference to learn: its pair is marked invalid (the DPO analogue of GRPO's zero advantage).

        w = argmax_j r_j,   l = argmin_j r_j,   valid = r_w > r_l

    Args:
        rewards: ``[prompt, group]`` float, each reply's reward (group >= 2).

    Returns:
        (chosen ``[prompt]`` long, rejected ``[prompt]`` long: indices in the group; valid ``[prompt]`` bool).
    """
    rewards = _check_rewards(rewards)
    if rewards.shape[1] < 2:
        raise ValueError(f"a preference pair needs group >= 2 replies; got group = {rewards.shape[1]}")
    chosen = rewards.argmax(dim=1)  # torch.argmax returns the first maximum
    last_min = rewards.shape[1] - 1 - rewards.flip(1).argmin(dim=1)
    best = rewards.gather(1, chosen[:, None]).squeeze(1)
    worst = rewards.gather(1, last_min[:, None]).squeeze(1)
    return chosen, last_min, best > worst

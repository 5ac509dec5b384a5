"""From rewards to the signal that multiplies log π: deltas, group advantages and GAE.

The policy gradient is ∇J = E[ Σ_t ∇ log π(a_t | s_t) · Ψ_t ]. The rungs of the ladder differ only
in Ψ ("delta"):

    rewards             Ψ_i = r_i                                   unbiased, high variance
    centered_rewards    Ψ_i = r_i − mean_j r_j                      a baseline: still unbiased
                                                                    (up to the 1/G leave-one-in term)
    normalized_rewards  Ψ_i = (r_i − mean_j r_j) / (std_j r_j + ε)  GRPO's group advantage

Two more turn the same samples into the data of older recipes (notebook 11, ``minirl.self_training``):

    accepted            Ψ_i = 1[r_i ≥ τ]                            rejection sampling / expert iteration:
                                                                    the accepted replies, imitated
    best_vs_worst       Ψ_w = +1, Ψ_l = −1, else 0                  online DPO's pair: the group's best
                                                                    reply w and its worst l

where i, j run over the ``trial`` axis: the group of responses to one prompt.
For multi-step episodes (the maze) ``compute_gae`` builds Ψ_t from a learned value V(s); for a language model's
episode (a token sequence whose environment tokens are masked out) ``token_gae`` does the same over the model's
tokens, with the KL penalty folded into each token's reward (PPO for language models).

A group whose rewards are all equal has Δ = 0 for every response under the group modes: it adds
nothing to the gradient. ``zero_variance_fraction`` measures how much of a batch is such dead weight.
"""

from __future__ import annotations

import torch

from minirl.self_training import group_preference_pairs

__all__ = [
    "DELTA_MODES",
    "GROUP_MODES",
    "compute_deltas",
    "compute_gae",
    "discounted_returns",
    "token_gae",
    "zero_variance_fraction",
]

DELTA_MODES = ("rewards", "centered_rewards", "normalized_rewards", "accepted", "best_vs_worst")
GROUP_MODES = ("centered_rewards", "normalized_rewards", "best_vs_worst")
"""The modes that compare the replies of a group with each other (a group needs two or more)."""


def compute_deltas(
    rewards: torch.Tensor, mode: str = "centered_rewards", eps: float = 1e-6, accept_reward: float = 1.0
) -> torch.Tensor:
    """Turn a group of rewards into deltas: rewards[batch, trial] -> deltas[batch, trial].

    - ``"rewards"``:            Δ = r
    - ``"centered_rewards"``:   Δ = r − mean_trial(r)
    - ``"normalized_rewards"``: Δ = (r − mean_trial(r)) / (std_trial(r) + eps)
      (unbiased std over the group, as in GRPO).
    - ``"accepted"``:           Δ = 1[r ≥ accept_reward] (rejection sampling: the replies a verifier accepts;
      ``policy_update`` then imitates them and drops the others from the batch).
    - ``"best_vs_worst"``:      Δ = +1 for the group's best reply, −1 for its worst, 0 for the rest
      (``minirl.self_training.group_preference_pairs``: online DPO's pair).

    A group whose rewards are all equal gets deltas of exactly 0 under the group modes, never NaN and
    never float noise: in float32, r − mean(r) for eight rewards of 1.2 is ±1e-7, not 0, and dividing
    it by std + ε (std ≈ 1e-7) would blow it up to ±0.1. Such groups are detected by exact equality
    (as ``zero_variance_fraction`` counts them) and set to 0.
    """
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 2:
        shape = list(rewards.shape) if isinstance(rewards, torch.Tensor) else type(rewards).__name__
        raise ValueError(f"rewards must be a tensor of shape [batch, trial]; got {shape}")
    if not rewards.is_floating_point():
        raise TypeError(f"rewards must be a float tensor; got dtype {rewards.dtype}")
    if mode == "rewards":
        return rewards
    if mode not in DELTA_MODES:
        raise ValueError(f"mode must be one of {DELTA_MODES}; got {mode!r}")
    if mode == "accepted":
        return (rewards >= accept_reward).to(rewards.dtype)
    if rewards.shape[1] < 2:
        raise ValueError(
            f"mode {mode!r} needs a group of at least 2 responses per prompt to compare; "
            f"got rewards of shape {list(rewards.shape)} (trial = {rewards.shape[1]})"
        )
    if mode == "best_vs_worst":
        chosen, rejected, valid = group_preference_pairs(rewards)
        deltas = torch.zeros_like(rewards)
        rows = torch.arange(rewards.shape[0], device=rewards.device)[valid]
        deltas[rows, chosen[valid]] = 1.0
        deltas[rows, rejected[valid]] = -1.0
        return deltas
    all_equal = (rewards == rewards[:, :1]).all(dim=1, keepdim=True)  # [batch, 1]
    centered = (rewards - rewards.mean(dim=1, keepdim=True)).masked_fill(all_equal, 0.0)
    if mode == "centered_rewards":
        return centered
    std = rewards.std(dim=1, keepdim=True)
    return centered / (std + eps)


def zero_variance_fraction(rewards: torch.Tensor) -> float:
    """The fraction of groups whose rewards are all equal: rewards[batch, trial] -> a float in [0, 1].

    Such a group (every response wrong, every one right, or all equally half-right) gets zero group
    advantage, ``centered_rewards`` or ``normalized_rewards``: the prompt costs its samples and teaches
    nothing. Equality is exact (rewards are compared with the group's first); a group of one response
    counts as all equal.
    """
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 2:
        shape = list(rewards.shape) if isinstance(rewards, torch.Tensor) else type(rewards).__name__
        raise ValueError(f"rewards must be a tensor of shape [batch, trial]; got {shape}")
    if rewards.shape[0] == 0:
        raise ValueError("rewards must hold at least one group; got batch = 0")
    return float((rewards == rewards[:, :1]).all(dim=1).float().mean())


def discounted_returns(rewards: torch.Tensor, dones: torch.Tensor, gamma: float = 1.0) -> torch.Tensor:
    """Reward-to-go G_t = r_t + γ (1 − done_t) G_{t+1} along the last axis.

    rewards[..., time], dones[..., time] (1.0 where the episode ended at t) -> returns[..., time].
    """
    if rewards.shape != dones.shape:
        raise ValueError(
            f"rewards and dones must have the same shape; got {list(rewards.shape)} and {list(dones.shape)}"
        )
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1]; got {gamma}")
    returns = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[..., 0])
    for t in reversed(range(rewards.shape[-1])):
        running = rewards[..., t] + gamma * (1.0 - dones[..., t]) * running
        returns[..., t] = running
    return returns


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    dones: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 0.95,
) -> torch.Tensor:
    """Generalised advantage estimation along the last (time) axis.

        δ_t = r_t + γ (1 − done_t) V(s_{t+1}) − V(s_t)
        A_t = δ_t + γ λ (1 − done_t) A_{t+1}

    rewards, values, next_values, dones: [..., time] -> advantages [..., time]. ``done_t`` = 1.0
    where the episode terminated at step t (no bootstrap past it). For a step that was cut by
    the time limit, pass its ``next_values`` as the value of the state reached (or 0 if the
    state carries no time-to-go, as in the maze where nothing can be earned after the budget).
    λ = 0 gives the one-step TD advantage, λ = 1 the Monte Carlo return minus V(s_t).
    """
    shapes = {
        name: list(t.shape)
        for name, t in [("rewards", rewards), ("values", values), ("next_values", next_values), ("dones", dones)]
    }
    if len({tuple(s) for s in shapes.values()}) != 1:
        raise ValueError(f"rewards, values, next_values and dones must share one shape [..., time]; got {shapes}")
    if not 0.0 <= gamma <= 1.0 or not 0.0 <= lam <= 1.0:
        raise ValueError(f"gamma and lam must be in [0, 1]; got gamma={gamma}, lam={lam}")
    not_done = 1.0 - dones
    deltas = rewards + gamma * not_done * next_values - values
    advantages = torch.zeros_like(deltas)
    running = torch.zeros_like(deltas[..., 0])
    for t in reversed(range(deltas.shape[-1])):
        running = deltas[..., t] + gamma * lam * not_done[..., t] * running
        advantages[..., t] = running
    return advantages


def token_gae(
    outcome: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    kl: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    gamma: float = 1.0,
    lam: float = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE over the model's tokens of each response (or episode), the KL penalty folded into the rewards.

    Shapes: ``outcome`` ``[batch, trial]`` (the reward, which arrives after the last token); ``values``, ``mask``
    and ``kl`` ``[batch, trial, pos]`` (``mask`` 1 on the model's tokens, 0 on the environment's and on padding:
    those are not actions and are skipped, so the token after one of the model's is its next model token). With
    k = 1 … K the model's tokens of one response in order::

        r_k = −β KL_k + (R if k = K else 0)                      β = ``kl_coef``, R = ``outcome``
        δ_k = r_k + γ V_{k+1} − V_k                              V_{K+1} = 0: the episode is over
        A_k = δ_k + γ λ A_{k+1}                                  A_{K+1} = 0
        G_k = A_k + V_k                                          the value's target (λ-return)

    Returns ``(advantages, returns)`` ``[batch, trial, pos]``, 0 where the mask is 0. A response with no model
    token has none of either.
    """
    if outcome.dim() != 2 or values.shape[:2] != outcome.shape or values.dim() != 3:
        raise ValueError(
            f"outcome must be [batch, trial] and values [batch, trial, pos] with the same batch and trial; got "
            f"{list(outcome.shape)} and {list(values.shape)}"
        )
    if mask.shape != values.shape or (kl is not None and kl.shape != values.shape):
        got = {"values": list(values.shape), "mask": list(mask.shape), **({} if kl is None else {"kl": list(kl.shape)})}
        raise ValueError(f"values, mask and kl must share one shape [batch, trial, pos]; got {got}")
    if not kl_coef >= 0:
        raise ValueError(f"kl_coef must be >= 0; got {kl_coef!r}")
    own = mask > 0
    # the model's tokens moved to the front of each row, in order (a stable sort puts the 1s first)
    order = torch.sort((~own).to(torch.int8), dim=-1, stable=True).indices
    n = own.sum(dim=-1, keepdim=True)  # [batch, trial, 1]
    k = torch.arange(values.shape[-1], device=values.device)
    real = k < n  # [batch, trial, pos]: the first n places of the compact row
    last = k == n - 1
    v = torch.where(real, values.gather(-1, order), 0.0)
    r = torch.where(last, outcome.unsqueeze(-1).to(values.dtype), 0.0)
    if kl is not None and kl_coef > 0:
        r = r - kl_coef * torch.where(real, kl.gather(-1, order), 0.0)
    next_v = torch.cat([v[..., 1:], torch.zeros_like(v[..., :1])], dim=-1)
    adv = compute_gae(r, v, next_v, (last | ~real).to(values.dtype), gamma, lam)
    adv = torch.where(real, adv, 0.0)
    ret = torch.where(real, adv + v, 0.0)
    # back to the rows' own order
    advantages = torch.zeros_like(values).scatter(-1, order, adv)
    returns = torch.zeros_like(values).scatter(-1, order, ret)
    return advantages, returns

"""Step 4 of the training loop: the gradient steps on one batch of samples (``policy_update``), and the
log-probabilities of a rollout scored without gradient (π_old, π_ref: ``rollout_log_probs``).

With ``micro_batch_size`` the forward and backward passes run on slices of prompts, each normalised by the
whole batch's counts, so the gradient is the whole batch's whatever the aggregation.
"""

from __future__ import annotations

from typing import Any

import torch

from minirl.algorithms import AlgoConfig
from minirl.losses import aggregate, kl_estimate, online_dpo_loss, policy_loss
from minirl.protocols import Policy, Rollout, require, select_prompts

__all__ = ["policy_update", "rollout_log_probs", "update_mask"]


def _slices(batch: int, micro_batch_size: int | None) -> list[slice]:
    """Rows of each micro-batch: one slice of everything when micro_batch_size is None or >= batch."""
    if micro_batch_size is None or micro_batch_size >= batch:
        return [slice(None)]
    return [slice(i, min(i + micro_batch_size, batch)) for i in range(0, batch, micro_batch_size)]


@torch.no_grad()
def rollout_log_probs(
    policy: Policy, prompts: Any, rollout: Rollout, temperature: float = 1.0, micro_batch_size: int | None = None
) -> torch.Tensor:
    """log π(y_t | x, y_<t) of the rollout's tokens ``[batch, trial, pos]``, without gradient (π_old, π_ref),
    in micro-batches of ``micro_batch_size`` prompts."""
    parts = [
        policy.score(select_prompts(prompts, rows), rollout.rows(rows), temperature=temperature).log_probs
        for rows in _slices(rollout.batch_size, micro_batch_size)
    ]
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)


def update_mask(algo: AlgoConfig, rollout: Rollout, advantages: torch.Tensor) -> torch.Tensor | None:
    """The real tokens the update learns from ``[batch, trial, pos]``: the rollout's mask, and with
    ``delta_mode="accepted"`` (expert iteration) only the accepted replies' tokens, so that ``token_mean`` of
    −log π_θ over them is ``sft_loss`` on the accepted replies: rejected replies leave the batch instead of
    diluting it (and the entropy and KL the step logs are measured on the accepted replies too). None when every
    token of every reply is real (the toy sorting task)."""
    if algo.delta_mode != "accepted":
        return rollout.mask
    mask = rollout.mask if rollout.mask is not None else torch.ones(rollout.tokens.shape, device=advantages.device)
    return mask * (advantages > 0).to(mask.dtype)[..., None]


def _mean_entropy(entropy: torch.Tensor, mask: torch.Tensor | None, whole: dict | None) -> torch.Tensor:
    """Mean entropy per token (nats), over real tokens only. ``entropy`` is ``[batch, trial, pos]``, or
    ``[batch, 1, pos]`` when the group shares one distribution per position (the toy encoder-decoder); with a
    mask ``[batch, trial, pos]`` it is averaged over the real tokens of the sampled responses (a position after
    a response's EOS does not count), without one over prompts and positions. ``whole``: the whole batch's
    counts when this is a micro-batch."""
    if mask is None:
        return entropy.mean() if whole is None else entropy.sum() / (whole["n_prompts"] * entropy[0].numel())
    return aggregate(entropy.expand_as(mask), mask, "token_mean", n_tokens=None if whole is None else whole["n_tokens"])


def _weighted(parts: list[tuple[float, dict[str, float]]]) -> dict[str, float]:
    """Combine micro-batch metrics: sums for losses, max for ratio_max, token-weighted means for the rest."""
    if len(parts) == 1:
        return parts[0][1]
    total = sum(w for w, _ in parts) or 1.0
    out = {}
    for key in parts[0][1]:
        values = [m[key] for _, m in parts]
        if key in ("loss", "pg_loss"):
            out[key] = sum(values)
        elif key == "ratio_max":
            out[key] = max(values)
        else:
            out[key] = sum(w * m[key] for w, m in parts) / total
    return out


def _objective(
    algo: AlgoConfig,
    log_probs: torch.Tensor,
    old: torch.Tensor,
    sampler: torch.Tensor,
    ref: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor | None,
    max_length: int,
    whole: dict | None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss of one slice: ``policy_loss`` with the algorithm's knobs (``old``: π_old, or π_θ detached without
    the ratio), or with ``objective="dpo"`` ``online_dpo_loss`` (``sampler``: the sampler's log-probs, for the
    ratio statistics). ``whole``: the whole batch's counts when the slice is a micro-batch."""
    if algo.objective == "dpo":
        if ref is None:
            raise ValueError(f"{algo.name}: online DPO needs ref_log_probs (log π_ref of the sampled tokens)")
        n_pairs = None if whole is None else whole["n_pairs"]
        return online_dpo_loss(log_probs, sampler, ref, advantages, mask, beta=algo.kl_coef, n_pairs=n_pairs)
    return policy_loss(
        log_probs,
        old,
        advantages,
        mask,
        **algo.policy_loss_kwargs(),
        ref_log_probs=ref,
        max_length=max_length,
        n_sequences=None if whole is None else whole["n_sequences"],
        n_tokens=None if whole is None else whole["n_tokens"],
    )


# PLR0913: the API by design: what the step acts on (policy, optimizer, algo) and the batch as the loop holds it
# (prompts, rollout, advantages), positional as notebooks 05 and 06 call it; six optional keyword-only knobs.
def policy_update(  # noqa: PLR0913
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    algo: AlgoConfig,
    prompts: Any,
    rollout: Rollout,
    advantages: torch.Tensor,
    *,
    old_log_probs: torch.Tensor | None = None,
    ref_log_probs: torch.Tensor | None = None,
    max_grad_norm: float | None = 1.0,
    temperature: float = 1.0,
    micro_batch_size: int | None = None,
    measure_kl_old: bool = False,
) -> dict[str, float]:
    """Step 4 of the loop: ``algo.inner_epochs`` gradient steps on one batch of samples, π_old held fixed.

    Each inner step minimises ``policy_loss`` (the clipped surrogate, plus β · KL to π_ref) minus
    ``algo.entropy_coef`` · H̄ (the mean entropy per token of π_θ), clipping the gradient's global norm to
    ``max_grad_norm``. With ``algo.objective == "dpo"`` the loss is ``online_dpo_loss`` on the pairs the
    advantages mark (β = ``algo.kl_coef``); with ``delta_mode="accepted"`` the rejected replies leave the batch
    (``update_mask``). With ``micro_batch_size`` the forward and backward passes run on slices of that many
    prompts, each normalised by the whole batch's counts, and the gradients add up to the whole batch's.

    Args:
        policy: a ``minirl.protocols.Policy`` (a bare toy model: ``ToyPolicy(model)``); its parameters are the
            ones ``optimizer`` updates.
        prompts: the batch's prompts (``[batch, P]`` tokens for the toy, a list for a text task).
        rollout: the responses sampled from π_old: their tokens ``[batch, trial, pos]``, the mask of real
            tokens and the length budget (``max_length`` of the ``"constant"`` aggregation).
        advantages: ``[batch, trial]`` (or ``[batch, trial, pos]`` for a process reward).
        old_log_probs: log π_old of the sampled tokens ``[batch, trial, pos]``. None: π_old is the policy as
            it is on entry (it sampled the rollout), scored at the first inner step, before any update, and
            held for the later ones: no forward pass of its own. Ignored when ``algo.importance_ratio`` is
            False (the loss is then −log π_θ · Δ at every step: ρ ≡ 1).
        ref_log_probs: log π_ref of the sampled tokens, for the KL penalty (as in ``policy_loss``).
        temperature: the sampling temperature (the loss scores the same tempered policy).
        measure_kl_old: after the last inner step, score the responses once more (no gradient) and return
            ``kl_old``, the k3 estimate of KL(π_old ‖ π_θ) per real token: how far this batch's updates moved
            the policy (PPO's "approx KL"), exp(ℓ) − ℓ − 1 with ℓ = log π_θ(y) − log π_old(y), y ~ π_old.

    Returns the metrics of the last inner step (``policy_loss``'s, plus ``loss`` and ``grad_norm``) and
    ``entropy``, the mean entropy per token of π_old (measured at the first inner step, before any change).
    """
    policy = require(policy, Policy, "policy", hint="wrap a bare toy model: ToyPolicy(model)")
    mask, max_length = update_mask(algo, rollout, advantages), rollout.max_length
    if not algo.importance_ratio:
        old_log_probs = None
    slices = _slices(rollout.batch_size, micro_batch_size)
    whole = None
    if len(slices) > 1:
        n_tokens = float(mask.sum()) if mask is not None else float(rollout.tokens.numel())
        whole = {
            "n_sequences": rollout.batch_size * rollout.group_size,
            "n_tokens": n_tokens,
            "n_prompts": rollout.batch_size,
            "n_pairs": int((advantages.amax(dim=1) > advantages.amin(dim=1)).sum()),
        }
    limit = max_grad_norm if max_grad_norm is not None else float("inf")
    olds: list[torch.Tensor] = []  # log π_old of each slice: given, or scored at the first inner step (θ = θ_old)
    for epoch in range(algo.inner_epochs):
        optimizer.zero_grad(set_to_none=True)
        parts, entropies = [], []
        for i, rows in enumerate(slices):
            part_mask = None if mask is None else mask[rows]
            scores = policy.score(select_prompts(prompts, rows), rollout.rows(rows), temperature=temperature)
            if epoch == 0:
                olds.append(scores.log_probs.detach() if old_log_probs is None else old_log_probs[rows])
            old = olds[i] if algo.importance_ratio else scores.log_probs.detach()
            ref = None if ref_log_probs is None else ref_log_probs[rows]
            loss, metrics = _objective(
                algo, scores.log_probs, old, olds[i], ref, advantages[rows], part_mask, max_length, whole
            )
            mean_entropy = _mean_entropy(scores.entropy, part_mask, whole)
            if algo.entropy_coef:
                loss = loss - algo.entropy_coef * mean_entropy
            loss.backward()
            weight = float(part_mask.sum()) if part_mask is not None else float(scores.log_probs.numel())
            parts.append((weight, {**metrics, "loss": loss.item()}))
            entropies.append(float(mean_entropy.detach()))
        if epoch == 0:
            entropy = sum(entropies)  # of π_old, the policy that sampled (each slice's share of the whole mean)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.parameters(), limit))
        optimizer.step()
    out = {**_weighted(parts), "grad_norm": grad_norm, "entropy": entropy}
    if measure_kl_old:
        old = torch.cat(olds) if len(olds) > 1 else olds[0]
        new = rollout_log_probs(policy, prompts, rollout, temperature, micro_batch_size)
        per_token = kl_estimate(old, new, "k3", max_log_ratio=20.0)  # samples from π_old: KL(π_old ‖ π_θ)
        out["kl_old"] = float(
            aggregate(per_token, mask if mask is not None else torch.ones_like(per_token), "token_mean")
        )
    return out

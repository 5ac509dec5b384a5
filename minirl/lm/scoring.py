"""Scoring response tokens: log π(y_t | x, y_<t) from a causal language model's outputs.

Two ways, one formula. ``completion_log_probs`` takes the logits of every position (notebook 07's exercise).
``kept_token_scores`` takes the last hidden states and applies the output layer only where a token is scored:
in a multi-turn episode most positions hold the environment's turns (``minirl.episodes``), and the output layer
(vocabulary × hidden) with its softmax over the vocabulary is most of a scoring pass there, so skipping those
positions saves most of the cost without changing a scored value. ``choice_log_probs`` reads, at the positions
where a demonstrator chose among several tokens, the log-probability of each of them: what a warm start needs to
imitate the demonstrator's distribution rather than its one draw (``minirl.lm.warm_start``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["choice_log_probs", "completion_log_probs", "kept_choice_log_probs", "kept_token_scores"]


def completion_log_probs(logits: torch.Tensor, input_ids: torch.Tensor, prompt_length: int) -> torch.Tensor:
    """log π(y_t | x, y_<t) of every completion token, from ONE forward pass over prompt + completion.

    A causal LM's logits at position ``t`` are its prediction of the token at ``t + 1``, so the
    completion token at position ``t`` (``t >= prompt_length``) is scored by the logits at ``t - 1``
    (the shift by one)::

        log π(y_t) = log_softmax(logits[:, t - 1])[input_ids[:, t]],   t = prompt_length .. seq - 1
        = log_softmax(logits[:, prompt_length-1:-1]).gather(-1, input_ids[:, prompt_length:])

    Args:
        logits: ``[batch, seq, vocab]``, the model's output for ``input_ids`` (divide by the temperature
            first to score a tempered policy).
        input_ids: ``[batch, seq]`` integer ids: each prompt LEFT-padded to ``prompt_length``, then its
            completion (padding after the completion's end gets finite values: mask them).
        prompt_length: positions ``0 .. prompt_length - 1`` are the (padded) prompt, ``1 <= prompt_length <= seq``.

    Returns ``[batch, seq - prompt_length]``: the log-probability of each completion token (with gradient).
    """
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3:
        raise ValueError(
            f"logits must be a tensor of shape [batch, seq, vocab]; got "
            f"{list(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__}"
        )
    if not isinstance(input_ids, torch.Tensor) or input_ids.shape != logits.shape[:2]:
        got = list(input_ids.shape) if isinstance(input_ids, torch.Tensor) else type(input_ids).__name__
        raise ValueError(
            f"input_ids must have shape [batch, seq] = {list(logits.shape[:2])} (the logits' first two axes); got {got}"
        )
    if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
        raise ValueError(f"input_ids must hold integer token ids; got dtype {input_ids.dtype}")
    seq = logits.shape[1]
    if isinstance(prompt_length, bool) or not isinstance(prompt_length, int) or not 1 <= prompt_length <= seq:
        raise ValueError(
            f"prompt_length must be an int in [1, seq = {seq}] (the logits at prompt_length - 1 predict "
            f"the first completion token); got {prompt_length!r}"
        )
    log_p = F.log_softmax(logits[:, prompt_length - 1 : -1], dim=-1)  # [batch, seq - prompt_length, vocab]
    return log_p.gather(dim=-1, index=input_ids[:, prompt_length:].long().unsqueeze(-1)).squeeze(-1)


def kept_token_scores(
    head: nn.Module, hidden: torch.Tensor, targets: torch.Tensor, keep: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """log π(y_t) and the entropy H_t of the next-token distribution at the positions ``keep`` marks::

        π_t = softmax(head(h_t) / T),   log π(y_t) = log π_t[y_t],   H_t = −Σ_v π_t[v] log π_t[v]

    Args:
        head: the output layer, hidden → vocabulary logits (``model.get_output_embeddings()``).
        hidden: ``[rows, pos, hidden]``, the last hidden state at each position (it predicts the next token).
        targets: ``[rows, pos]`` the token each position predicts.
        keep: ``[rows, pos]`` bool, True where the token is scored.
        temperature: T > 0.

    Returns ``(log_probs, entropy)``, each ``[rows, pos]`` float32 with gradient, 0.0 where ``keep`` is False.
    """
    if keep.shape != hidden.shape[:2] or targets.shape != keep.shape:
        raise ValueError(
            f"keep and targets must have shape [rows, pos] = {list(hidden.shape[:2])} (hidden's first two axes); "
            f"got keep {list(keep.shape)}, targets {list(targets.shape)}"
        )
    logits = head(hidden[keep]).float() / temperature  # [kept, vocab]: only the scored positions
    log_p = F.log_softmax(logits, dim=-1)
    log_probs = log_p.gather(dim=-1, index=targets[keep].long().unsqueeze(-1)).squeeze(-1)  # [kept]
    entropy = -(log_p.exp() * log_p).sum(dim=-1)  # [kept]
    zeros = torch.zeros(keep.shape, dtype=log_probs.dtype, device=hidden.device)
    return zeros.masked_scatter(keep, log_probs), zeros.masked_scatter(keep, entropy)


def choice_log_probs(log_p: torch.Tensor, choices: torch.Tensor) -> torch.Tensor:
    """log π(c) of each choice token c: ``log_p`` ``[..., vocab]`` the next-token log-probabilities at some
    positions, ``choices`` ``[..., k]`` token ids at the same positions, −1 for none (a position with fewer
    choices than ``k``, or none) -> ``[..., k]``, 0.0 where the choice is −1."""
    if choices.shape[:-1] != log_p.shape[:-1]:
        raise ValueError(
            f"choices must have shape [..., k] with ... = {list(log_p.shape[:-1])} (log_p's axes before the "
            f"vocabulary); got {list(choices.shape)}"
        )
    return log_p.gather(dim=-1, index=choices.long().clamp(min=0)).masked_fill(choices < 0, 0.0)


def kept_choice_log_probs(
    first_log_p: torch.Tensor, head: nn.Module, hidden: torch.Tensor | None, choices: torch.Tensor, temperature: float
) -> torch.Tensor:
    """``choice_log_probs`` where the policy keeps hidden states (``kept_token_scores``' layout): the first response
    position's log-probabilities ``first_log_p`` ``[rows, 1, vocab]``, the last hidden states that predict the
    others ``hidden`` ``[rows, pos - 1, hidden]`` (None when ``pos == 1``), ``choices`` ``[rows, pos, k]`` (−1:
    none). The output layer runs only where some choice is given. Returns ``[rows, pos, k]`` float32 with
    gradient, 0.0 where the choice is −1."""
    first = choice_log_probs(first_log_p, choices[:, :1])  # [rows, 1, k]
    if hidden is None:
        return first
    rest = choices[:, 1:]  # [rows, pos - 1, k]
    at = (rest >= 0).any(dim=-1)  # [rows, pos - 1]: where a choice is given
    log_p = F.log_softmax(head(hidden[at]).float() / temperature, dim=-1)  # [chosen, vocab]
    picked = choice_log_probs(log_p, rest[at])  # [chosen, k]
    zeros = torch.zeros(rest.shape, dtype=picked.dtype, device=hidden.device)
    return torch.cat([first, zeros.masked_scatter(at.unsqueeze(-1).expand_as(rest), picked)], dim=1)

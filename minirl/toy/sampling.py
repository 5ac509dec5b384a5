"""Sampling a group of responses per prompt and scoring them with per-token log-probabilities.

Shapes: prompts ``[batch, pos]``; a group of ``trial`` responses per prompt ``[batch, trial, pos]``;
``log π(y_j | x)`` of every sampled token ``[batch, trial, pos]``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from einops import rearrange, repeat
from torch import nn

from minirl.utils import check_positive_ints

__all__ = ["compute_log_probs", "gather_log_probs", "greedy_responses", "sample_responses", "token_entropy"]


def sample_responses(
    model: nn.Module,
    prompts: torch.Tensor,
    num_responses: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draw ``num_responses`` responses per prompt from softmax(logits / temperature).

    prompts[batch, pos] -> responses LongTensor[batch, trial, pos] with trial = num_responses.
    Runs without gradients: sampling is data collection, not part of the loss.
    """
    check_positive_ints(num_responses=num_responses)
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0; got {temperature!r}")
    with torch.no_grad():
        logits = model(prompts)  # [batch, pos, vocab]
        probs = F.softmax(logits.float() / temperature, dim=-1)
        flat = repeat(probs, "batch pos vocab -> (batch trial pos) vocab", trial=num_responses)
        tokens = torch.multinomial(flat, num_samples=1, generator=generator)
    return rearrange(tokens, "(batch trial pos) 1 -> batch trial pos", batch=prompts.shape[0], trial=num_responses)


def greedy_responses(model: nn.Module, prompts: torch.Tensor) -> torch.Tensor:
    """The most likely token at every position: prompts[batch, pos] -> [batch, 1, pos]."""
    with torch.no_grad():
        return model(prompts).argmax(dim=-1).unsqueeze(1)


def compute_log_probs(prompts: torch.Tensor, responses: torch.Tensor, model: nn.Module) -> torch.Tensor:
    """log π(y_j | x) for every sampled token.

    prompts[batch, pos], responses[batch, trial, pos] -> log_probs[batch, trial, pos], where
    log_probs[b, t, j] = log_softmax(model(prompts)[b, j])[responses[b, t, j]].
    """
    if responses.dim() != 3 or responses.shape[0] != prompts.shape[0]:
        raise ValueError(
            f"responses must have shape [batch, trial, pos] with batch = {prompts.shape[0]}; "
            f"got {list(responses.shape)}"
        )
    return gather_log_probs(F.log_softmax(model(prompts), dim=-1), responses)


def gather_log_probs(log_prob_table: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    """Pick each sampled token's log-probability out of the table of all of them.

    log_prob_table[batch, pos, vocab] (log_softmax of the logits), responses[batch, trial, pos]
    -> log_probs[batch, trial, pos].
    """
    table = repeat(log_prob_table, "batch pos vocab -> batch trial pos vocab", trial=responses.shape[1])
    return table.gather(dim=-1, index=responses.unsqueeze(-1)).squeeze(-1)


def token_entropy(model: nn.Module, prompts: torch.Tensor) -> torch.Tensor:
    """Entropy H(π(· | x)_j) = -Σ_v p_v log p_v of each response position: [batch, pos] (nats)."""
    with torch.no_grad():
        log_p = F.log_softmax(model(prompts), dim=-1)
        return -(log_p.exp() * log_p).sum(dim=-1)

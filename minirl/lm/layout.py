"""How prompts and responses are laid out in a batch: where a response ends (``first_eos_mask``) and how
left-padded prompts are re-laid so that the beginning they share can run once (``common_prefix_layout``).
Shapes: prompts ``[batch, prompt_pos]``, responses ``[..., pos]``.
"""

from __future__ import annotations

import torch

__all__ = ["common_prefix_layout", "first_eos_mask"]


def first_eos_mask(tokens: torch.Tensor, eos: int) -> torch.Tensor:
    """1.0 up to and including the first ``eos`` along the last axis, 0.0 after (all 1.0 without one)."""
    is_eos = (tokens == eos).long()
    return ((is_eos.cumsum(dim=-1) - is_eos) == 0).float()


def common_prefix_layout(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, keep: int = 2
) -> tuple[int, torch.Tensor, torch.Tensor]:
    """Re-lay LEFT-padded prompts so that the tokens they all begin with come first.

    Prompts of a task often share a long beginning (the system message, a worked example). Laid out as
    ``[common prefix | padding | rest]`` instead of ``[padding | prompt]``, the prefix sits in the same
    columns of every row, so the model can run it once for the whole batch and share its KV cache. The
    padding in the middle is masked and skipped by the position ids (the policy numbers positions by the
    mask), so each row's tokens see the same context at the same positions as before. The width is unchanged
    and every row still ends in the last column.

    Args:
        input_ids, attention_mask: left-padded prompts ``[batch, prompt_pos]``.
        keep: at least this many tokens of every prompt stay after the prefix.

    Returns:
        ``(n_prefix, input_ids, attention_mask)``: the number of shared leading tokens (0 when there are
        none, or one prompt) and the re-laid prompts ``[batch, prompt_pos]``.
    """
    batch, width = input_ids.shape
    lengths = attention_mask.sum(dim=1).long()
    shortest = int(lengths.min())
    if batch < 2 or shortest <= keep:
        return 0, input_ids, attention_mask
    start = width - lengths  # [batch]: each row's first real column
    cols = torch.arange(shortest - keep, device=input_ids.device)
    heads = input_ids.gather(1, start.unsqueeze(1) + cols)  # [batch, shortest - keep]: each row's first tokens
    differs = (heads != heads[:1]).any(dim=0)
    n_prefix = int(differs.float().argmax()) if differs.any() else len(cols)
    if n_prefix == 0:
        return 0, input_ids, attention_mask
    ids, mask = input_ids.clone(), attention_mask.clone()
    ids[:, :n_prefix], mask[:, :n_prefix] = heads[:1, :n_prefix], 1
    for row in range(batch):  # the rest of each prompt stays right-aligned; the gap is padding
        begin = int(start[row])
        ids[row, n_prefix : begin + n_prefix] = input_ids[row, :begin]  # its pad ids
        mask[row, n_prefix : begin + n_prefix] = 0
    return n_prefix, ids, mask

"""pass@k: the chance that at least one of k attempts at a prompt is correct.

``pass_at_k(n, c, k)`` is the unbiased estimator of Chen et al. (2021, "Evaluating Large Language Models
Trained on Code") from n samples of which c are correct; ``sampled_pass_at_k`` draws the samples from a policy
and averages the estimate over prompts (``minirl eval --k``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from minirl.episodes import sample_rollout
from minirl.protocols import Policy, Task
from minirl.utils import device_generator

__all__ = ["pass_at_k", "pass_curve", "sampled_correct_counts", "sampled_pass_at_k"]


def _as_counts(name: str, value: int | torch.Tensor) -> torch.Tensor:
    if isinstance(value, bool) or not isinstance(value, (int, torch.Tensor)):
        raise ValueError(f"{name} must be an int or an integer tensor; got {type(value).__name__}")
    counts = torch.as_tensor(value)
    if counts.is_floating_point() or counts.is_complex() or counts.dtype == torch.bool:
        raise ValueError(f"{name} must hold integers; got dtype {counts.dtype}")
    return counts.to(torch.int64)


def pass_at_k(n: int | torch.Tensor, c: int | torch.Tensor, k: int) -> torch.Tensor:
    """The unbiased estimate of pass@k from ``n`` samples of which ``c`` are correct (Chen et al. 2021).

    pass@k = 1 − C(n − c, k) / C(n, k): one minus the chance that k of the n samples drawn without
    replacement are all wrong. Computed without large binomials as

        pass@k = 1 − ∏_{i = n−c+1}^{n} (1 − k / i),   and 1 when n − c < k

    (C(n−c, k) / C(n, k) = ∏_{j=0}^{k−1} (n−c−j)/(n−j) = ∏_{i=n−c+1}^{n} (i−k)/i, in float64).

    Args:
        n: samples per prompt: an int or an integer tensor (one per prompt).
        c: correct samples among them, 0 <= c <= n: an int or an integer tensor broadcastable with ``n``.
        k: attempts, 1 <= k <= n.

    Returns:
        float64 tensor of the broadcast shape of ``n`` and ``c`` (0-dim for ints), values in [0, 1].
    """
    n_t, c_t = _as_counts("n", n), _as_counts("c", c)
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError(f"k must be an int; got {type(k).__name__}")
    n_t, c_t = torch.broadcast_tensors(n_t, c_t)
    if n_t.numel() and (k < 1 or k > int(n_t.min())):
        raise ValueError(f"k must be in 1..n (n = {int(n_t.min())} at the smallest); got {k}")
    bad = ((c_t < 0) | (c_t > n_t)).flatten()
    if bool(bad.any()):
        first = int(bad.nonzero()[0])
        raise ValueError(f"c must be in 0..n; got c = {int(c_t.flatten()[first])} with n = {int(n_t.flatten()[first])}")
    width = int(c_t.max()) if c_t.numel() else 0
    # factor j = 0 .. c−1 of the product is i = n − j, for j < c; a missing factor is 1
    j = torch.arange(width, dtype=torch.float64)
    i = n_t.unsqueeze(-1).to(torch.float64) - j
    factors = torch.where(j < c_t.unsqueeze(-1), 1.0 - k / i.clamp(min=1.0), torch.ones_like(i))
    all_wrong = factors.prod(dim=-1)
    return torch.where(n_t - c_t < k, torch.ones_like(all_wrong), 1.0 - all_wrong)


def _check_ks(ks: Sequence[int], n_samples: int) -> list[int]:
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be an int >= 1; got {n_samples!r}")
    ks = list(ks)
    if not ks:
        raise ValueError("ks must name at least one k")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n_samples:
            raise ValueError(f"every k in ks must be in 1..n_samples = {n_samples}; got {k!r}")
    return ks


def pass_curve(n: int, c: torch.Tensor, ks: Sequence[int] | None = None) -> dict[str, float]:
    """``{"pass@k": (1/|P|) Σ_x pass_at_k(n, c_x, k)}`` for each k in ``ks`` (default every k in 1..n), from the
    correct counts ``c`` [prompt] of ``n`` samples per prompt."""
    ks = _check_ks(range(1, n + 1) if ks is None else ks, n)
    return {f"pass@{k}": float(pass_at_k(n, c, k).mean()) for k in ks}


@torch.no_grad()
def sampled_correct_counts(
    policy: Policy,
    task: Task,
    prompts: Any,
    n_samples: int,
    generator: torch.Generator,
    max_batch: int | None = None,
) -> torch.Tensor:
    """c_x = Σ_j correct(x, y_j) for ``n_samples`` responses y_j ~ π(· | x) (temperature 1) to each prompt x:
    LongTensor[prompt].

    ``max_batch`` caps the responses sampled in one call (whole prompts at a time, at least one; None: every
    prompt in one call), so 64 samples of many prompts fit in memory. ``generator`` makes the draw repeatable (a
    CUDA policy gets a CUDA generator seeded from it, as ``evaluate`` does); the counts depend on ``max_batch``
    only through the order of the draws.
    """
    _check_ks([1], n_samples)
    if max_batch is not None and (isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1):
        raise ValueError(f"max_batch must be an int >= 1 or None; got {max_batch!r}")
    per_call = len(prompts) if max_batch is None else max(1, max_batch // n_samples)
    device_gen = device_generator(generator, policy.device)
    counts = []
    for start in range(0, len(prompts), per_call):
        chunk = prompts[start : start + per_call]
        rollout = sample_rollout(policy, task, chunk, n_samples, temperature=1.0, generator=device_gen)
        correct = task.is_correct(chunk, rollout.answers).to("cpu").reshape(len(chunk), n_samples)
        counts.append(correct.sum(dim=1))
    return torch.cat(counts) if counts else torch.zeros(0, dtype=torch.int64)


def sampled_pass_at_k(
    policy: Policy,
    task: Task,
    prompts: Any,
    n_samples: int,
    ks: Sequence[int],
    generator: torch.Generator,
    max_batch: int | None = None,
) -> dict[str, float]:
    """``{"pass@k": mean over prompts of pass_at_k(n_samples, c, k)}`` for each k in ``ks``.

    Draws ``n_samples`` responses per prompt with ``policy.sample`` at temperature 1 and counts
    c = Σ_j correct(x, y_j) with ``task.is_correct`` (``sampled_correct_counts``, whose ``max_batch`` caps the
    responses of one call); then pass@k = (1/|P|) Σ_x pass_at_k(n, c_x, k) (``pass_curve``).

    Args:
        policy: the policy to sample from.
        task: scores the answers (``is_correct``).
        prompts: a batch of the task's prompts (a tensor for a toy task, a list of ``TextPrompt``).
        n_samples: responses per prompt (>= 1).
        ks: attempts, each in 1..n_samples.
        generator: a CPU ``torch.Generator``.
        max_batch: responses per sampling call (None: all at once).
    """
    ks = _check_ks(ks, n_samples)
    c = sampled_correct_counts(policy, task, prompts, n_samples, generator, max_batch)
    return pass_curve(n_samples, c, ks)

"""The estimator lab: policy-gradient estimators on a policy small enough to enumerate.

A *tabular* policy over responses of ``length`` tokens from a vocabulary of ``vocab_size``: one
row of logits per position, and the positions are independent (like ``TinyEncoderDecoder`` for a
single prompt)::

    logits[pos, vocab]          π(y) = Π_j softmax(logits[j])[y_j]

With vocab 3 and length 2 there are only 9 responses, so the expected reward
J(θ) = Σ_y π_θ(y) R(y) and its gradient can be computed EXACTLY, and every sampled estimate

    ĝ = (1/G) Σ_i Δ_i ∇_θ log π_θ(y_i),      y_1 .. y_G ~ π_θ,   Δ = deltas(r_1 .. r_G)

can be compared with the truth: its bias (is E[ĝ] = ∇J?) and its variance.

    all_responses(3, 2)                      every response, [9, 2], in lexicographic order
    expected_reward(logits, reward_table)    J(θ), differentiable
    exact_gradient(logits, reward_table)     ∇J(θ), [pos, vocab]
    score(logits, responses)                 ∇_θ log π(y), [..., pos, vocab] (closed form)
    gradient_estimates(...)                  many independent ĝ, one per group of G samples
    leave_one_out_deltas(rewards)            Δ_i = r_i − mean_{j≠i} r_j (an unbiased baseline)
    estimator_stats(estimates, exact)        bias, variance, MSE, cosine, all relative to ‖∇J‖
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch
import torch.nn.functional as F

__all__ = [
    "all_responses",
    "estimator_stats",
    "exact_gradient",
    "expected_reward",
    "gradient_estimates",
    "leave_one_out_deltas",
    "response_index",
    "score",
    "sequence_log_probs",
]


def _check_logits(logits: torch.Tensor) -> None:
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or not logits.is_floating_point():
        shape = list(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a float tensor of shape [pos, vocab]; got {shape}")


def all_responses(vocab_size: int, length: int) -> torch.Tensor:
    """Every response of ``length`` tokens in ``[0, vocab_size)``: LongTensor[vocab_size**length, length].

    Lexicographic order, so row k spells k in base ``vocab_size`` (see ``response_index``).
    """
    if not isinstance(vocab_size, int) or vocab_size < 1 or not isinstance(length, int) or length < 1:
        raise ValueError(f"vocab_size and length must be positive ints; got {vocab_size!r}, {length!r}")
    return torch.tensor(list(itertools.product(range(vocab_size), repeat=length)), dtype=torch.long)


def response_index(responses: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """The row of ``all_responses`` holding each response: [..., pos] -> [...]."""
    length = responses.shape[-1]
    place = vocab_size ** torch.arange(length - 1, -1, -1, device=responses.device)
    return (responses * place).sum(-1)


def sequence_log_probs(logits: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    """log π(y) = Σ_j log softmax(logits[j])[y_j]: logits[pos, vocab], responses[..., pos] -> [...]."""
    _check_logits(logits)
    if responses.shape[-1] != logits.shape[0]:
        raise ValueError(f"responses must end in pos = {logits.shape[0]}; got shape {list(responses.shape)}")
    log_p = F.log_softmax(logits, dim=-1)  # [pos, vocab]
    positions = torch.arange(logits.shape[0])
    return log_p[positions, responses].sum(-1)


def _check_table(logits: torch.Tensor, reward_table: torch.Tensor) -> None:
    n = logits.shape[1] ** logits.shape[0]
    if reward_table.shape != (n,):
        raise ValueError(
            f"reward_table must hold one reward per response, shape [{n}] "
            f"(vocab ** pos, in the order of all_responses); got {list(reward_table.shape)}"
        )


def expected_reward(logits: torch.Tensor, reward_table: torch.Tensor) -> torch.Tensor:
    """J(θ) = Σ_y π_θ(y) R(y) by enumeration (differentiable in ``logits``).

    ``reward_table[k]`` is the reward of ``all_responses(vocab, pos)[k]``.
    """
    _check_logits(logits)
    _check_table(logits, reward_table)
    responses = all_responses(logits.shape[1], logits.shape[0])
    return (sequence_log_probs(logits, responses).exp() * reward_table).sum()


def exact_gradient(logits: torch.Tensor, reward_table: torch.Tensor) -> torch.Tensor:
    """∇_θ J(θ), the exact policy gradient: [pos, vocab] (no graph kept)."""
    theta = logits.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(expected_reward(theta, reward_table), theta)
    return grad


def score(logits: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    """∇_θ log π(y) for the tabular policy, in closed form: onehot(y_j) − softmax(logits[j]).

    logits[pos, vocab], responses[..., pos] -> [..., pos, vocab].
    """
    _check_logits(logits)
    probs = F.softmax(logits.detach(), dim=-1)
    return F.one_hot(responses, logits.shape[1]).to(probs.dtype) - probs


def gradient_estimates(
    logits: torch.Tensor,
    reward_table: torch.Tensor,
    group_size: int,
    n_groups: int,
    deltas_fn: Callable[[torch.Tensor], torch.Tensor],
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``n_groups`` independent estimates ĝ = (1/G) Σ_i Δ_i ∇ log π(y_i), each from its own group
    of G = ``group_size`` samples y_i ~ π_θ: -> [n_groups, pos, vocab].

    ``deltas_fn(rewards[n_groups, G]) -> deltas[n_groups, G]`` turns each group's rewards into
    deltas, e.g. ``lambda r: compute_deltas(r, "centered_rewards")`` or ``leave_one_out_deltas``.
    """
    _check_logits(logits)
    _check_table(logits, reward_table)
    if not isinstance(group_size, int) or group_size < 1 or not isinstance(n_groups, int) or n_groups < 1:
        raise ValueError(f"group_size and n_groups must be positive ints; got {group_size!r}, {n_groups!r}")
    probs = F.softmax(logits.detach(), dim=-1)  # [pos, vocab]
    tokens = torch.multinomial(probs, n_groups * group_size, replacement=True, generator=generator)  # [pos, N·G]
    responses = tokens.T.reshape(n_groups, group_size, logits.shape[0])  # [n_groups, G, pos]
    rewards = reward_table[response_index(responses, logits.shape[1])].to(probs.dtype)  # [n_groups, G]
    deltas = deltas_fn(rewards)
    if deltas.shape != rewards.shape:
        raise ValueError(
            f"deltas_fn must return deltas of the rewards' shape {list(rewards.shape)}; got {list(deltas.shape)}"
        )
    return torch.einsum("ng,ngpv->npv", deltas.to(probs.dtype), score(logits, responses)) / group_size


def leave_one_out_deltas(rewards: torch.Tensor) -> torch.Tensor:
    """Δ_i = r_i − mean_{j≠i} r_j over the trial axis: rewards[batch, trial] -> [batch, trial].

    The baseline of response i does not use r_i, so E[Δ_i ∇ log π(y_i)] = ∇J exactly; it equals
    G / (G − 1) times the centred rewards r_i − mean_j r_j.
    """
    if rewards.dim() != 2 or rewards.shape[1] < 2:
        raise ValueError(f"rewards must be [batch, trial] with trial >= 2; got {list(rewards.shape)}")
    trial = rewards.shape[1]
    others_mean = (rewards.sum(dim=1, keepdim=True) - rewards) / (trial - 1)
    return rewards - others_mean


def estimator_stats(estimates: torch.Tensor, exact: torch.Tensor) -> dict[str, float]:
    """How good are ``estimates`` [n, ...] of the gradient ``exact`` [...]? Every number is
    relative to the exact gradient, so that they read the same for any problem:

    - ``scale``:        ⟨E[ĝ], g⟩ / ‖g‖²   (1 for an estimator that is right on average along g)
    - ``bias``:         ‖E[ĝ] − g‖ / ‖g‖
    - ``variance``:     E‖ĝ − E[ĝ]‖² / ‖g‖²
    - ``mse``:          E‖ĝ − g‖² / ‖g‖²  (= bias² + variance)
    - ``cosine``:       E[cos(ĝ, g)], an estimate of 0 counting as cosine 0
    - ``mean_cosine``:  cos(E[ĝ], g), the direction of the average estimate

    E[·] is the average over the n estimates.
    """
    if estimates.shape[1:] != exact.shape:
        raise ValueError(
            f"estimates must be [n, *exact.shape] = [n, {', '.join(map(str, exact.shape))}]; "
            f"got {list(estimates.shape)}"
        )
    est = estimates.detach().double().flatten(1)
    g = exact.detach().double().flatten()
    g_sq = float(g @ g)
    if g_sq == 0:
        raise ValueError("the exact gradient is zero: relative errors are undefined")
    mean = est.mean(0)
    norms = est.norm(dim=1)
    cos = torch.where(norms > 0, est @ g / (norms.clamp_min(1e-300) * g_sq**0.5), torch.zeros_like(norms))
    return {
        "scale": float(mean @ g) / g_sq,
        "bias": float((mean - g).norm()) / g_sq**0.5,
        "variance": float(((est - mean) ** 2).sum(1).mean()) / g_sq,
        "mse": float(((est - g) ** 2).sum(1).mean()) / g_sq,
        "cosine": float(cos.mean()),
        "mean_cosine": float(mean @ g) / (float(mean.norm()) * g_sq**0.5) if mean.norm() > 0 else 0.0,
    }

"""The losses: the ladder's ``compute_loss``, the one general ``policy_loss``, ``sft_loss``, the
two preference losses ``bradley_terry_loss`` (a reward model) and ``dpo_loss`` (a policy), and
``online_dpo_loss`` (``dpo_loss`` on the best and worst sampled reply of each group).

Notation, per token t of response i of a prompt's group:

    ρ_t      = π_θ(y_t) / π_old(y_t) = exp(log π_θ − log π_old)      importance ratio
    A        = advantage (one per response, or one per token)
    clip(ρ)  = min(max(ρ, 1 − ε_low), 1 + ε_high)
    ℓ_t      = −min(ρ_t A, clip(ρ_t) A) + β · KL_t                   per-token loss

π_old is the policy that *sampled* the batch (fixed while we take several gradient steps on it);
π_ref is a slowly refreshed snapshot that the KL term keeps us close to. They are different
models with different jobs: π_old makes reusing samples correct, π_ref keeps the policy from
drifting far from where it started.

Shapes: log-probs ``[batch, trial, pos]``; advantages ``[batch, trial]`` or ``[batch, trial, pos]``;
mask ``[batch, trial, pos]`` (1 for real tokens, 0 for padding). The preference losses take one number
per preference pair (x, y_w, y_l), ``[batch]``: scores r(x, y) or whole-response log-probabilities log π(y | x).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = [
    "AGGREGATIONS",
    "LOSS_MODES",
    "aggregate",
    "bradley_terry_loss",
    "choice_log_likelihood",
    "compute_loss",
    "dpo_loss",
    "kl_estimate",
    "online_dpo_loss",
    "policy_loss",
    "sft_loss",
]

LOSS_MODES = ("naive", "unclipped", "clipped")
AGGREGATIONS = ("sequence_mean", "token_mean", "constant")
KL_ESTIMATORS = ("k1", "k2", "k3")


def _check_same_shape(**tensors: torch.Tensor | None) -> None:
    given = {name: t for name, t in tensors.items() if t is not None}
    shapes = {name: list(t.shape) for name, t in given.items()}
    if len({tuple(s) for s in shapes.values()}) > 1:
        described = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"shape mismatch: {described}; all must be [batch, trial, pos]")
    dtypes = {name: t.dtype for name, t in given.items()}
    if any(not t.is_floating_point() for t in given.values()):
        raise TypeError(f"log-probabilities must be float tensors; got dtypes {dtypes}")


def _expand_advantages(advantages: torch.Tensor, log_probs: torch.Tensor, name: str = "advantages") -> torch.Tensor:
    """[batch, trial] or [batch, trial, pos] -> [batch, trial, pos], with no silent broadcasting."""
    if advantages.shape == log_probs.shape:
        return advantages
    if advantages.dim() == 2 and advantages.shape == log_probs.shape[:2]:
        return advantages.unsqueeze(-1).expand_as(log_probs)
    batch, trial, pos = log_probs.shape
    raise ValueError(
        f"{name} must have shape [batch, trial] = [{batch}, {trial}] or [batch, trial, pos] = "
        f"[{batch}, {trial}, {pos}] to match log_probs; got {list(advantages.shape)}"
    )


def _clipped_surrogate(ratio: torch.Tensor, adv: torch.Tensor, eps_low: float | None, eps_high: float | None):
    """min(ρ A, clip(ρ, 1 − ε_low, 1 + ε_high) A); no clipping when eps_low is None."""
    unclipped = ratio * adv
    if eps_low is None:
        return unclipped
    clipped = ratio.clamp(1.0 - eps_low, 1.0 + (eps_low if eps_high is None else eps_high)) * adv
    return torch.minimum(unclipped, clipped)


def compute_loss(
    log_probs: torch.Tensor,
    deltas: torch.Tensor,
    mode: str = "naive",
    old_log_probs: torch.Tensor | None = None,
    epsilon: float = 0.2,
) -> torch.Tensor:
    """The three rungs of the ladder, as a scalar to minimise (mean over batch, trial and pos).

    log_probs[batch, trial, pos], deltas[batch, trial], old_log_probs[batch, trial, pos]:

    - ``"naive"``:     L = −mean( log π_θ · Δ )
    - ``"unclipped"``: L = −mean( ρ · Δ ),  ρ = exp(log π_θ − log π_old)
    - ``"clipped"``:   L = −mean( min(ρ Δ, clip(ρ, 1 − ε, 1 + ε) Δ) )   (PPO)

    At θ = θ_old all three have the same gradient, −mean(Δ ∇ log π_θ); they differ once we take
    several steps on the same samples.
    """
    if mode not in LOSS_MODES:
        raise ValueError(f"mode must be one of {LOSS_MODES}; got {mode!r}")
    if log_probs.dim() != 3:
        raise ValueError(f"log_probs must have shape [batch, trial, pos]; got {list(log_probs.shape)}")
    if deltas.dim() != 2 or deltas.shape != log_probs.shape[:2]:
        raise ValueError(
            f"deltas must have shape [batch, trial] = {list(log_probs.shape[:2])} to match log_probs "
            f"{list(log_probs.shape)}; got {list(deltas.shape)}"
        )
    deltas = deltas.unsqueeze(-1)  # [batch, trial, 1]: one delta for every token of the response
    if mode == "naive":
        return -(log_probs * deltas).mean()
    if old_log_probs is None:
        raise ValueError(f"mode {mode!r} needs old_log_probs (log π_old of the sampled tokens)")
    _check_same_shape(log_probs=log_probs, old_log_probs=old_log_probs)
    ratio = torch.exp(log_probs - old_log_probs.detach())
    eps = epsilon if mode == "clipped" else None
    return -_clipped_surrogate(ratio, deltas, eps, eps).mean()


def kl_estimate(
    log_probs: torch.Tensor, ref_log_probs: torch.Tensor, estimator: str = "k3", max_log_ratio: float | None = None
) -> torch.Tensor:
    """Per-token estimate of KL(π_θ ‖ π_ref) from tokens sampled from π_θ (elementwise, same shape).

    With log-ratio ℓ = log π_ref(y) − log π_θ(y):

    - ``"k1"``: −ℓ                   unbiased, can be negative, high variance
    - ``"k2"``: ℓ² / 2               biased (low for close policies), always ≥ 0
    - ``"k3"``: exp(ℓ) − ℓ − 1       unbiased and always ≥ 0 (the GRPO choice)

    ``max_log_ratio`` (e.g. 20) clamps ℓ to [−max, max] so that exp(ℓ) cannot overflow to inf
    when π_θ has pushed a sampled token's probability towards 0; None = the exact formula.
    """
    if estimator not in KL_ESTIMATORS:
        raise ValueError(f"estimator must be one of {KL_ESTIMATORS}; got {estimator!r}")
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError(
            f"shape mismatch: log_probs {list(log_probs.shape)}, ref_log_probs {list(ref_log_probs.shape)}"
        )
    log_ratio = ref_log_probs - log_probs
    if max_log_ratio is not None:
        log_ratio = log_ratio.clamp(-max_log_ratio, max_log_ratio)
    if estimator == "k1":
        return -log_ratio
    if estimator == "k2":
        return 0.5 * log_ratio**2
    return torch.exp(log_ratio) - log_ratio - 1.0


def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    aggregation: str = "sequence_mean",
    max_length: int | None = None,
    *,
    n_sequences: int | None = None,
    n_tokens: float | None = None,
) -> torch.Tensor:
    """Reduce a per-token quantity ``[batch, trial, pos]`` over the real tokens (mask = 1) to a scalar.

    - ``"sequence_mean"`` (GRPO):   mean_i [ Σ_t m_it x_it / Σ_t m_it ]
      every response weighs the same; a token of a short response weighs more than one of a long one.
    - ``"token_mean"`` (DAPO):      Σ_it m_it x_it / Σ_it m_it
      every token weighs the same; long responses weigh more.
    - ``"constant"`` (Dr GRPO):     Σ_it m_it x_it / (N_seq · max_length)
      a fixed normaliser, so no length-dependent weighting at all.

    A row whose mask is all zero contributes 0 (denominators are clamped to at least 1).

    Micro-batches (gradient accumulation): pass the WHOLE batch's ``n_sequences`` (N_seq, responses) and
    ``n_tokens`` (Σ m over the whole batch) when ``per_token`` is one slice of it. Then the slices' results
    add up to the whole batch's, whatever the aggregation: normalising each slice by its own counts would
    silently reweight tokens (a slice of short responses would weigh as much as one of long ones).
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}; got {aggregation!r}")
    mask = mask.to(per_token.dtype)
    masked = per_token * mask
    if aggregation == "sequence_mean":
        per_sequence = masked.sum(dim=-1) / mask.sum(dim=-1).clamp(min=1.0)
        return per_sequence.mean() if n_sequences is None else per_sequence.sum() / n_sequences
    if aggregation == "token_mean":
        return masked.sum() / (mask.sum().clamp(min=1.0) if n_tokens is None else max(float(n_tokens), 1.0))
    length = per_token.shape[-1] if max_length is None else max_length
    if length < per_token.shape[-1]:
        raise ValueError(f"max_length must be >= the number of positions {per_token.shape[-1]}; got {length}")
    if n_sequences is None:
        n_sequences = per_token.shape[0] * per_token.shape[1]
    return masked.sum() / (n_sequences * length)


def _mask_or_all_real(mask: torch.Tensor | None, log_probs: torch.Tensor) -> torch.Tensor:
    """``mask`` checked against ``log_probs``'s shape, or all ones when None."""
    if mask is None:
        return torch.ones_like(log_probs)
    if mask.shape != log_probs.shape:
        raise ValueError(
            f"shape mismatch: mask {list(mask.shape)}, log_probs {list(log_probs.shape)}; "
            "mask must be [batch, trial, pos]"
        )
    return mask


def _check_policy_loss_knobs(
    ratio_level: str,
    clip_eps_low: float | None,
    clip_eps_high: float | None,
    kl_coef: float,
    ref_log_probs: torch.Tensor | None,
) -> None:
    if ratio_level not in ("token", "sequence"):
        raise ValueError(f"ratio_level must be 'token' or 'sequence'; got {ratio_level!r}")
    if clip_eps_low is not None and not clip_eps_low > 0:
        raise ValueError(f"clip_eps_low must be > 0 or None; got {clip_eps_low}")
    if clip_eps_high is not None and not clip_eps_high > 0:
        raise ValueError(f"clip_eps_high must be > 0 or None; got {clip_eps_high}")
    if kl_coef and ref_log_probs is None:
        raise ValueError(f"kl_coef = {kl_coef} needs ref_log_probs (log π_ref of the sampled tokens)")


def _ratio_metrics(
    ratio: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, clip_eps_low: float | None, clip_eps_high: float | None
) -> dict[str, float]:
    """``policy_loss``'s clip fractions and ratio statistics over the real tokens."""
    with torch.no_grad():
        n_real = mask.sum().clamp(min=1.0)
        if clip_eps_low is None:  # no clipping
            low, high = -float("inf"), float("inf")
        else:
            low = 1.0 - clip_eps_low
            high = 1.0 + (clip_eps_low if clip_eps_high is None else clip_eps_high)
        clipped_low = ((ratio < low) & (adv < 0)).to(mask.dtype) * mask
        clipped_high = ((ratio > high) & (adv > 0)).to(mask.dtype) * mask
        return {
            "clip_frac_low": float(clipped_low.sum() / n_real),
            "clip_frac_high": float(clipped_high.sum() / n_real),
            "ratio_mean": float((ratio * mask).sum() / n_real),
            "ratio_max": float(ratio.masked_fill(mask == 0, 0.0).max()) if mask.any() else 1.0,
        }


# PLR0913: the keyword-only knobs are the API by design, one per AlgoConfig field it reads
# (AlgoConfig.policy_loss_kwargs), plus π_ref and the micro-batch counts of train's inner step.
def policy_loss(  # noqa: PLR0913
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    clip_eps_low: float | None = 0.2,
    clip_eps_high: float | None = None,
    ratio_level: str = "token",
    aggregation: str = "sequence_mean",
    ref_log_probs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    max_length: int | None = None,
    n_sequences: int | None = None,
    n_tokens: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The one clipped surrogate behind PPO, GRPO, DAPO, GSPO and Dr GRPO.

        ρ_t = exp(log π_θ(y_t) − log π_old(y_t))                           ratio_level="token"
        ρ_t = exp( (1/|y|) Σ_s m_s (log π_θ(y_s) − log π_old(y_s)) )         ratio_level="sequence" (GSPO)
        ℓ_t = −min(ρ_t A_t, clip(ρ_t, 1 − ε_low, 1 + ε_high) A_t) + β · k3(π_θ ‖ π_ref)_t
        L   = aggregate(ℓ, mask, aggregation)

    Args:
        log_probs: log π_θ of the sampled tokens, ``[batch, trial, pos]``, with gradient.
        old_log_probs: log π_old of the same tokens (the sampling policy), same shape; ``None``
            means "the current policy, detached" (ratio ≡ 1, gradient = REINFORCE).
        advantages: ``[batch, trial]`` (one per response, broadcast over its tokens) or
            ``[batch, trial, pos]`` (one per token, e.g. from a process reward).
        mask: ``[batch, trial, pos]``, 1 for real tokens and 0 for padding; ``None`` = all real.
        clip_eps_low, clip_eps_high: the clip range [1 − ε_low, 1 + ε_high]; ``clip_eps_high=None``
            means symmetric (= ε_low); ``clip_eps_low=None`` turns clipping off.
        ratio_level: ``"token"`` (PPO/GRPO) or ``"sequence"`` (GSPO).
        aggregation: ``"sequence_mean"`` (GRPO), ``"token_mean"`` (DAPO) or ``"constant"`` (Dr GRPO).
        ref_log_probs: log π_ref of the same tokens for the KL penalty (needed when kl_coef > 0).
        kl_coef: β, the weight of the per-token k3 KL estimate.
        max_length: the constant of the ``"constant"`` aggregation (default: the pos axis size).
        n_sequences, n_tokens: the whole batch's response and real-token counts when these tensors are one
            micro-batch of it (see ``aggregate``); None = this batch is the whole batch.

    Returns:
        ``(loss, metrics)`` with metrics ``clip_frac_low`` / ``clip_frac_high`` (fraction of real
        tokens where the lower / upper clip is active, i.e. ρ < 1 − ε_low with A < 0, or
        ρ > 1 + ε_high with A > 0), ``ratio_mean``, ``ratio_max``, ``kl`` (mean k3 over real
        tokens; 0 without ref_log_probs) and ``pg_loss`` (the loss without the KL term).
    """
    if log_probs.dim() != 3:
        raise ValueError(f"log_probs must have shape [batch, trial, pos]; got {list(log_probs.shape)}")
    if old_log_probs is None:
        old_log_probs = log_probs.detach()
    _check_same_shape(log_probs=log_probs, old_log_probs=old_log_probs, ref_log_probs=ref_log_probs)
    mask = _mask_or_all_real(mask, log_probs)
    _check_policy_loss_knobs(ratio_level, clip_eps_low, clip_eps_high, kl_coef, ref_log_probs)
    adv = _expand_advantages(advantages, log_probs).detach()
    mask = mask.to(log_probs.dtype)

    log_ratio = (log_probs - old_log_probs.detach()) * mask
    if ratio_level == "sequence":
        seq_log_ratio = log_ratio.sum(dim=-1, keepdim=True) / mask.sum(dim=-1, keepdim=True).clamp(min=1.0)
        log_ratio = seq_log_ratio.expand_as(log_probs)
    ratio = torch.exp(log_ratio)

    per_token = -_clipped_surrogate(ratio, adv, clip_eps_low, clip_eps_high)
    totals = {"n_sequences": n_sequences, "n_tokens": n_tokens}
    pg_loss = aggregate(per_token, mask, aggregation, max_length, **totals)

    kl = torch.zeros((), dtype=log_probs.dtype)
    loss = pg_loss
    if ref_log_probs is not None:
        kl_per_token = kl_estimate(log_probs, ref_log_probs.detach(), "k3", max_log_ratio=20.0)
        kl = aggregate(kl_per_token.detach(), mask, "token_mean")
        if kl_coef:  # aggregate is linear: aggregate(ℓ + β·KL) = aggregate(ℓ) + β·aggregate(KL)
            loss = pg_loss + kl_coef * aggregate(kl_per_token, mask, aggregation, max_length, **totals)

    metrics = {
        **_ratio_metrics(ratio, adv, mask, clip_eps_low, clip_eps_high),
        "kl": float(kl),
        "pg_loss": float(pg_loss.detach()),
    }
    return loss, metrics


def sft_loss(
    log_probs: torch.Tensor,
    mask: torch.Tensor | None = None,
    aggregation: str = "token_mean",
    max_length: int | None = None,
    *,
    n_sequences: int | None = None,
    n_tokens: float | None = None,
) -> torch.Tensor:
    """Supervised fine-tuning on demonstrations: the negative log-likelihood of their tokens,

        L = aggregate(−log π_θ(y_t | x, y_<t), mask, aggregation)

    with log_probs ``[batch, trial, pos]`` of the demonstration tokens (a ``trial`` axis of demonstrations
    per prompt, often 1) and the same aggregation conventions as ``policy_loss`` (``"token_mean"``, the
    usual SFT choice, weighs every demonstrated token the same). It is ``policy_loss`` with advantage 1 on
    every token and no ratio: imitation is policy gradient on samples that all "won".
    """
    if log_probs.dim() != 3:
        raise ValueError(f"log_probs must have shape [batch, trial, pos]; got {list(log_probs.shape)}")
    if mask is None:
        mask = torch.ones_like(log_probs)
    elif mask.shape != log_probs.shape:
        raise ValueError(f"shape mismatch: mask {list(mask.shape)}, log_probs {list(log_probs.shape)}")
    return aggregate(-log_probs, mask, aggregation, max_length, n_sequences=n_sequences, n_tokens=n_tokens)


def choice_log_likelihood(
    log_probs: torch.Tensor, choice_log_probs: torch.Tensor, choices: torch.Tensor
) -> torch.Tensor:
    """The log-likelihood of a demonstrator's *distribution* rather than of its one draw, token by token::

        ℓ_t = (1/|C_t|) Σ_{c ∈ C_t} log π_θ(c | x, y_<t)    where the demonstrator chose uniformly from C_t
        ℓ_t = log π_θ(y_t | x, y_<t)                         elsewhere

    ``sft_loss(ℓ)`` is then the cross-entropy from the uniform distribution over C_t to π_θ at those tokens:
    its gradient pulls π_θ towards every choice equally, where the draw's pulls it towards the one drawn, which
    only averages out over many demonstrations. Its floor there is log |C_t| (nats), not 0.

    Args: ``log_probs`` ``[batch, trial, pos]`` of the demonstrated tokens; ``choice_log_probs`` ``[batch, trial,
    pos, k]`` of each choice (``TokenScores.choices``); ``choices`` ``[batch, trial, pos, k]`` their token ids,
    −1 where none (``minirl.episodes.choice_demonstrations``). Returns ``[batch, trial, pos]``.
    """
    if choices.shape != choice_log_probs.shape or choices.shape[:3] != log_probs.shape:
        raise ValueError(
            f"choices and choice_log_probs must have shape [batch, trial, pos, k] with [batch, trial, pos] = "
            f"{list(log_probs.shape)} (log_probs'); got choices {list(choices.shape)}, "
            f"choice_log_probs {list(choice_log_probs.shape)}"
        )
    given = (choices >= 0).to(choice_log_probs.dtype)  # [batch, trial, pos, k]
    n = given.sum(dim=-1)  # [batch, trial, pos]: |C_t|, 0 where no choice is given
    mean = (choice_log_probs * given).sum(dim=-1) / n.clamp(min=1)
    return torch.where(n > 0, mean, log_probs)


# ---------------------------------------------------------------------------------------------
# Preference losses: one number per pair (x, y_w, y_l)
# ---------------------------------------------------------------------------------------------


def _check_pair_of_vectors(names: tuple[str, ...], *tensors: torch.Tensor) -> None:
    for name, t in zip(names, tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a float tensor of shape [batch]; got {type(t).__name__}")
        if t.dim() != 1:
            raise ValueError(f"{name} must have shape [batch] (one number per pair); got {list(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a float tensor; got dtype {t.dtype}")
    shapes = {name: list(t.shape) for name, t in zip(names, tensors)}
    if len({tuple(s) for s in shapes.values()}) > 1:
        described = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"shape mismatch: {described}; all must be [batch], one entry per preference pair")


def bradley_terry_loss(r_chosen: torch.Tensor, r_rejected: torch.Tensor) -> torch.Tensor:
    """The negative log-likelihood of the preferences under Bradley–Terry, a scalar.

        L = −mean_i log σ(r_chosen_i − r_rejected_i) = mean_i softplus(r_rejected_i − r_chosen_i)

    r_chosen[batch], r_rejected[batch] (the scores of the preferred and the other response of each
    pair) -> a 0-dim tensor. L = log 2 ≈ 0.693 when the model cannot tell the two apart (margin 0),
    → 0 as the margins grow, and ≈ |margin| for a confidently wrong pair. ``F.logsigmoid`` keeps it
    finite for any margin, where ``torch.log(torch.sigmoid(m))`` gives −inf once σ(m) underflows
    (m ≲ −104 in float32). Only the difference of the two scores matters: adding a constant to
    every reward leaves the loss unchanged, so a reward model is defined up to a shift.
    """
    _check_pair_of_vectors(("r_chosen", "r_rejected"), r_chosen, r_rejected)
    return -F.logsigmoid(r_chosen - r_rejected).mean()


def dpo_loss(
    policy_chosen_logps: torch.Tensor,
    policy_rejected_logps: torch.Tensor,
    ref_chosen_logps: torch.Tensor,
    ref_rejected_logps: torch.Tensor,
    beta: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Direct Preference Optimisation (the sigmoid loss of Rafailov et al., 2023; TRL's naming).

    Where it comes from: the KL-regularised objective max_π E[r(x, y)] − β KL(π ‖ π_ref) has the
    closed-form optimum π*(y | x) = π_ref(y | x) exp(r(x, y) / β) / Z(x). Solved for the reward,

        r(x, y) = β log π*(y | x) / π_ref(y | x) + β log Z(x),

    and the unknown β log Z(x) cancels in the Bradley–Terry difference r(x, y_w) − r(x, y_l). So a
    policy π_θ defines an *implicit reward* β log π_θ / π_ref, and fitting it to the preferences with
    ``bradley_terry_loss`` trains the policy directly, without a reward model or sampling:

        chosen_rewards   = β (log π_θ(y_w | x) − log π_ref(y_w | x))                   [batch]
        rejected_rewards = β (log π_θ(y_l | x) − log π_ref(y_l | x))                   [batch]
        L = −mean log σ(chosen_rewards − rejected_rewards)

    Args:
        policy_chosen_logps, policy_rejected_logps: log π_θ(y | x) of whole responses, ``[batch]``
            (the sum of the token log-probs over the real tokens: ``minirl.preferences.response_log_probs``),
            with gradient.
        ref_chosen_logps, ref_rejected_logps: the same under the frozen reference π_ref, ``[batch]``.
        beta: β > 0, the strength of the KL regularisation (small β: far from π_ref is cheap).

    Returns:
        ``(loss, chosen_rewards, rejected_rewards)``: the scalar loss (TRL returns the per-pair losses,
        we take their mean) and the implicit rewards, detached (for logging, as in TRL). Their
        difference is the reward margin (TRL's ``rewards/margins``), and ``(margin > 0).mean()`` the
        preference accuracy (TRL's ``rewards/accuracies``).
    """
    names = ("policy_chosen_logps", "policy_rejected_logps", "ref_chosen_logps", "ref_rejected_logps")
    _check_pair_of_vectors(names, policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps)
    if not beta > 0:
        raise ValueError(f"beta must be > 0; got {beta!r}")
    chosen = beta * (policy_chosen_logps - ref_chosen_logps.detach())
    rejected = beta * (policy_rejected_logps - ref_rejected_logps.detach())
    loss = -F.logsigmoid(chosen - rejected).mean()
    return loss, chosen.detach(), rejected.detach()


def online_dpo_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    ref_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
    n_pairs: int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``dpo_loss`` on the pair each group of sampled replies marks: online DPO (notebook 11).

    The advantages come from ``compute_deltas(rewards, "best_vs_worst")``: +1 on the group's best reply w, −1 on
    its worst l, 0 elsewhere, and all 0 in a group with no preference (every reward equal). Each reply's
    log-probability is the sum over its real tokens, and

        log π(y | x)  = Σ_t m_t log π(y_t | x, y_<t)                                    [batch, trial]
        L = −(1 / n_pairs) Σ_{groups with a pair} log σ(β [(log π_θ − log π_ref)(y_w) − (log π_θ − log π_ref)(y_l)])

    With π_ref = π_old (the reference refreshed at every step) the margin starts at 0 and the gradient is
    β/2 · (∇ log π_θ(y_w) − ∇ log π_θ(y_l)): a policy gradient on the pair alone. An older reference makes the
    pair's weight σ(−margin) shrink as the policy moves away from it: the KL leash of DPO's objective.

    Args:
        log_probs: log π_θ of the sampled tokens ``[batch, trial, pos]``, with gradient.
        old_log_probs: log π_old of the same tokens (the sampler), for the ratio statistics only.
        ref_log_probs: log π_ref of the same tokens (the frozen reference).
        advantages: ``[batch, trial]``, the pairs as above.
        mask: ``[batch, trial, pos]``, 1 for real tokens; None = all real.
        beta: β > 0 (``AlgoConfig.kl_coef``: DPO's β is the KL coefficient of the objective it solves).
        n_pairs: the whole batch's pairs when this is one micro-batch of it (None: this batch's).

    Returns:
        ``(loss, metrics)``: ``policy_loss``'s metrics (ratio to π_old, ``kl`` to π_ref, ``pg_loss`` = the loss)
        and ``pair_accuracy``, the fraction of pairs whose implicit reward margin is > 0.
    """
    if log_probs.dim() != 3:
        raise ValueError(f"log_probs must have shape [batch, trial, pos]; got {list(log_probs.shape)}")
    _check_same_shape(log_probs=log_probs, old_log_probs=old_log_probs, ref_log_probs=ref_log_probs)
    if advantages.shape != log_probs.shape[:2]:
        raise ValueError(
            f"advantages must be [batch, trial] = {list(log_probs.shape[:2])} (the best_vs_worst pairs); "
            f"got {list(advantages.shape)}"
        )
    if not beta > 0:
        raise ValueError(f"beta (kl_coef) must be > 0 for online DPO; got {beta!r}")
    mask = _mask_or_all_real(mask, log_probs).to(log_probs.dtype)
    seq = (log_probs * mask).sum(dim=-1)  # [batch, trial]
    ref = (ref_log_probs.detach() * mask).sum(dim=-1)
    valid = advantages.amax(dim=1) > advantages.amin(dim=1)  # [batch]
    chosen, rejected = advantages.argmax(dim=1), advantages.argmin(dim=1)  # y_w, y_l of each group
    implicit = seq - ref  # log π_θ / π_ref of each reply, [batch, trial]
    margin = beta * (implicit.gather(1, chosen[:, None]) - implicit.gather(1, rejected[:, None])).squeeze(1)  # [batch]
    pairs = int(valid.sum()) if n_pairs is None else n_pairs
    loss = -(F.logsigmoid(margin) * valid.to(margin.dtype)).sum() / max(pairs, 1)
    ratio = torch.exp((log_probs - old_log_probs.detach()) * mask)
    kl_per_token = kl_estimate(log_probs.detach(), ref_log_probs.detach(), "k3", max_log_ratio=20.0)
    kl = aggregate(kl_per_token, mask, "token_mean")
    n_valid = int(valid.sum())
    metrics = {
        **_ratio_metrics(ratio, _expand_advantages(advantages, log_probs), mask, None, None),
        "kl": float(kl),
        "pg_loss": float(loss.detach()),
        "pair_accuracy": float((margin.detach() > 0)[valid].float().mean()) if n_valid else 0.0,
    }
    return loss, metrics

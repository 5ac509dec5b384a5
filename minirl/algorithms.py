"""The algorithm ladder as named presets: each rung adds one idea to the rung above it.

Each rung changes one knob of the rung above, with one exception: ``unclipped`` turns on the importance
ratio and several inner epochs together (the ratio alone, at one inner epoch, is ρ ≡ 1 and gives exactly
the naive gradient; several epochs without it would be a different, biased algorithm). dapo, gspo and
dr_grpo are variants of grpo, each listed with every knob it changes there.

    naive            Δ = r,  loss −log π · Δ, one gradient step per batch
    baselined        Δ = r − mean_group(r)                                     (a baseline)
    normalized       Δ = (r − mean) / std                                      (group-normalised)
    unclipped        + importance ratio ρ = π_θ / π_old, 4 inner epochs on one batch
    clipped          + PPO clip: min(ρΔ, clip(ρ, 1 ± ε)Δ)
    clipped_entropy  + entropy bonus c · H(π_θ)
    grpo             + KL penalty β · k3(π_θ ‖ π_ref), π_ref refreshed every N steps (the KL's anchor)
    dapo        grpo with clip-higher (ε_high > ε_low), token-level aggregation, no KL (4 knobs)
    gspo        grpo with a sequence-level, length-normalised ratio and its smaller ε (3 knobs)
    dr_grpo     grpo with no std division and constant (length-independent) aggregation (2 knobs)
    grpo_process  GRPO with one advantage per response position (a process reward)

Learning from your own samples (notebook 11): the naive rung's one step per batch, with other deltas.

    expert_iteration  Δ = 1[r ≥ τ]: imitate the accepted replies (the rejected leave the batch), the SFT mean
                      over their tokens: rejection sampling, one round per step (2 knobs from naive)
    online_dpo        dpo_loss on each group's best and worst reply, β = kl_coef, the reference refreshed
                      every 5 steps, a round (4 knobs from naive)

Agents (notebook 12), for language models only (``LM_ALGORITHMS``):

    ppo               the clipped rung with one advantage per model token from a learned value (GAE over the
                      episode, ``minirl.critic``) and β in the per-token reward: PPO for language models

Every knob here is an argument of ``minirl.losses.policy_loss`` or of the training loop; the
training loop itself has no per-algorithm branches beyond reading these fields. ``policy_loss_kwargs``
spells out which knobs reach ``policy_loss``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from minirl.advantages import DELTA_MODES
from minirl.losses import AGGREGATIONS
from minirl.utils import check_positive_ints, read_field

__all__ = [
    "ADVANTAGE_LEVELS",
    "ALGORITHMS",
    "CRITIC_DELTA_MODES",
    "LM_ALGORITHMS",
    "OBJECTIVES",
    "AlgoConfig",
    "AlgoField",
    "get_algorithm",
    "parse_knob_value",
]

OBJECTIVES = ("policy_gradient", "dpo")
ADVANTAGE_LEVELS = ("sequence", "token", "critic")

CRITIC_DELTA_MODES = ("rewards", "centered_rewards", "normalized_rewards")
"""The ``delta_mode`` values a critic takes: each episode's reward as it is, or scaled within its group."""


@dataclass(frozen=True)
class AlgoConfig:
    """Knobs of one policy-gradient algorithm (see ``policy_loss`` for the formulas).

    Attributes:
        name: a label for plots and tables.
        delta_mode: how rewards become advantages: ``"rewards"``, ``"centered_rewards"``
            or ``"normalized_rewards"`` (``compute_deltas``). With ``advantage_level="critic"`` it shapes each
            episode's reward before GAE: ``"rewards"`` (PPO's) leaves it as it is, a group mode scales it within
            its group first, as GRPO does (a probe of what that scaling does).
        advantage_level: ``"sequence"`` (one reward per response, the outcome reward),
            ``"token"`` (one reward per position, the process reward; deltas per position) or ``"critic"``
            (one advantage per model token from a learned value, GAE: PPO for language models,
            ``minirl.critic``; β then penalises the reward per token instead of adding a KL term to the loss).
        importance_ratio: use ρ = π_θ / π_old with π_old fixed during the inner epochs; if False,
            the loss is the naive −log π_θ · Δ (ratio to the *current* policy, always 1).
        clip_eps_low, clip_eps_high: clip range [1 − ε_low, 1 + ε_high]; None = no clipping /
            symmetric.
        ratio_level: ``"token"`` or ``"sequence"`` (GSPO).
        aggregation: ``"sequence_mean"``, ``"token_mean"`` or ``"constant"``.
        inner_epochs: gradient steps on each batch of samples (π_old fixed across them).
        kl_coef: β of the KL penalty to π_ref (0 = none).
        ref_refresh_every: copy π_θ into π_ref every this many steps; None = π_ref stays the
            initial policy.
        entropy_coef: weight c of an entropy bonus, L ← L − c · mean_pos H(π_θ(· | x)), which
            slows the collapse of the policy onto one answer per prompt (0 = none).
        accept_reward: τ of ``delta_mode="accepted"``: a reply is accepted when its reward is at least this
            (a verifier pays 1 for a right reply).
        objective: ``"policy_gradient"`` (``policy_loss``) or ``"dpo"`` (``online_dpo_loss`` on the
            ``best_vs_worst`` pairs, with β = ``kl_coef``).
        gamma, lam: GAE's discount γ and λ, both in [0, 1] (``advantage_level="critic"`` only).
        value_learning_rate, value_epochs: Adam's step size for the value head and its steps on each batch
            (``advantage_level="critic"`` only).
    """

    name: str
    delta_mode: str = "normalized_rewards"
    advantage_level: str = "sequence"
    importance_ratio: bool = True
    clip_eps_low: float | None = 0.2
    clip_eps_high: float | None = None
    ratio_level: str = "token"
    aggregation: str = "sequence_mean"
    inner_epochs: int = 1
    kl_coef: float = 0.0
    ref_refresh_every: int | None = None
    entropy_coef: float = 0.0
    accept_reward: float = 1.0
    objective: str = "policy_gradient"
    gamma: float = 1.0
    lam: float = 0.95
    value_learning_rate: float = 1e-3
    value_epochs: int = 8

    def __post_init__(self) -> None:
        if self.delta_mode not in DELTA_MODES:
            raise ValueError(f"delta_mode must be one of {DELTA_MODES}; got {self.delta_mode!r}")
        if self.advantage_level not in ADVANTAGE_LEVELS:
            raise ValueError(f"advantage_level must be one of {ADVANTAGE_LEVELS}; got {self.advantage_level!r}")
        if self.ratio_level not in ("token", "sequence"):
            raise ValueError(f"ratio_level must be 'token' or 'sequence'; got {self.ratio_level!r}")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}; got {self.aggregation!r}")
        check_positive_ints(inner_epochs=self.inner_epochs)
        if self.entropy_coef < 0:
            raise ValueError(f"entropy_coef must be >= 0; got {self.entropy_coef}")
        if self.kl_coef < 0:
            raise ValueError(f"kl_coef must be >= 0; got {self.kl_coef}")
        if self.ref_refresh_every is not None and self.ref_refresh_every < 1:
            raise ValueError(f"ref_refresh_every must be a positive int or None; got {self.ref_refresh_every!r}")
        if not self.importance_ratio and self.clip_eps_low is not None:
            raise ValueError("clipping needs the importance ratio: set clip_eps_low=None when importance_ratio=False")
        self._check_objective()
        self._check_critic()

    def _check_critic(self) -> None:
        """The knobs of a learned value (``advantage_level="critic"``)."""
        for name in ("gamma", "lam"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1]; got {getattr(self, name)!r}")
        if not self.value_learning_rate > 0:
            raise ValueError(f"value_learning_rate must be > 0; got {self.value_learning_rate!r}")
        check_positive_ints(value_epochs=self.value_epochs)
        if self.advantage_level == "critic" and self.objective != "policy_gradient":
            raise ValueError(f"advantage_level 'critic' needs objective 'policy_gradient'; got {self.objective!r}")
        if self.advantage_level == "critic" and self.delta_mode not in CRITIC_DELTA_MODES:
            raise ValueError(
                f"advantage_level 'critic' shapes the rewards by one of {CRITIC_DELTA_MODES} before GAE; got "
                f"delta_mode {self.delta_mode!r}"
            )

    def _check_objective(self) -> None:
        """The knobs of notebook 11's objectives: online DPO's pairs and β, expert iteration's whole replies."""
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}; got {self.objective!r}")
        if self.objective == "dpo" and (self.delta_mode != "best_vs_worst" or not self.kl_coef > 0):
            raise ValueError(
                "objective 'dpo' learns from the best_vs_worst pairs with β = kl_coef > 0; got "
                f"delta_mode={self.delta_mode!r}, kl_coef={self.kl_coef}"
            )
        if self.delta_mode == "accepted" and self.advantage_level != "sequence":
            raise ValueError("delta_mode 'accepted' keeps or drops whole replies: advantage_level must be 'sequence'")

    def policy_loss_kwargs(self) -> dict:
        """The knobs ``minirl.losses.policy_loss`` takes, by its argument names (the clip, the ratio's level,
        the aggregation, β): ``policy_loss(log_probs, old, adv, mask, **algo.policy_loss_kwargs(), ...)``."""
        return {
            "clip_eps_low": self.clip_eps_low,
            "clip_eps_high": self.clip_eps_high,
            "ratio_level": self.ratio_level,
            "aggregation": self.aggregation,
            "kl_coef": 0.0 if self.advantage_level == "critic" else self.kl_coef,  # a critic's β is in the reward
        }

    def changed_knobs(self, other: AlgoConfig) -> dict[str, tuple]:
        """``{knob: (self's value, other's value)}`` for every knob (not the name) that differs."""
        return {
            f.name: (getattr(self, f.name), getattr(other, f.name))
            for f in fields(self)
            if f.name != "name" and getattr(self, f.name) != getattr(other, f.name)
        }

    def with_(self, **changes) -> AlgoConfig:
        """A copy with some knobs changed, e.g. ``ALGORITHMS['grpo'].with_(kl_coef=0.1)``."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown AlgoConfig field(s) {unknown}; known: {sorted(known)}")
        return replace(self, **changes)


_NAIVE = AlgoConfig("naive", delta_mode="rewards", importance_ratio=False, clip_eps_low=None)
_BASELINED = _NAIVE.with_(name="baselined", delta_mode="centered_rewards")
_NORMALIZED = _BASELINED.with_(name="normalized", delta_mode="normalized_rewards")
_UNCLIPPED = _NORMALIZED.with_(name="unclipped", importance_ratio=True, inner_epochs=4)
_CLIPPED = _UNCLIPPED.with_(name="clipped", clip_eps_low=0.2)
# The entropy bonus: without it the policy collapses onto one answer per prompt within ~200 steps and the
# rarest prompts ([0, 0, 0], [4, 4, 4] in 3x5 sorting) stay wrong for good, since the right token is never
# sampled again. It gets a rung of its own so that grpo differs from the rung below only by its KL term.
_CLIPPED_ENTROPY = _CLIPPED.with_(name="clipped_entropy", entropy_coef=0.3)
_GRPO = _CLIPPED_ENTROPY.with_(name="grpo", kl_coef=0.01, ref_refresh_every=20)
_DAPO = _GRPO.with_(
    name="dapo", clip_eps_low=0.2, clip_eps_high=0.28, aggregation="token_mean", kl_coef=0.0, ref_refresh_every=None
)
_GSPO = _GRPO.with_(name="gspo", ratio_level="sequence", clip_eps_low=0.1, clip_eps_high=0.1)
_DR_GRPO = _GRPO.with_(name="dr_grpo", delta_mode="centered_rewards", aggregation="constant")
# Process reward: one advantage per response position, from the per-position reward (sorting only).
_GRPO_PROCESS = _GRPO.with_(name="grpo_process", advantage_level="token")
# Notebook 11: the same samples, imitated when accepted (rejection sampling) or paired best against worst.
_EXPERT_ITERATION = _NAIVE.with_(name="expert_iteration", delta_mode="accepted", aggregation="token_mean")
_ONLINE_DPO = _NAIVE.with_(
    name="online_dpo", objective="dpo", delta_mode="best_vs_worst", kl_coef=0.1, ref_refresh_every=5
)

ALGORITHMS: dict[str, AlgoConfig] = {
    a.name: a
    for a in (
        _NAIVE,
        _BASELINED,
        _NORMALIZED,
        _UNCLIPPED,
        _CLIPPED,
        _CLIPPED_ENTROPY,
        _GRPO,
        _DAPO,
        _GSPO,
        _DR_GRPO,
        _GRPO_PROCESS,
        _EXPERT_ITERATION,
        _ONLINE_DPO,
    )
}


# PPO for language models (notebook 12): the clipped ratio with one advantage per model token from a learned value
# (GAE), β in the reward. Its value head reads a language model's hidden states, so it trains language models only.
_PPO = _CLIPPED.with_(name="ppo", advantage_level="critic", delta_mode="rewards")

LM_ALGORITHMS: dict[str, AlgoConfig] = {_PPO.name: _PPO}
"""Presets that train language models only (``minirl.critic``'s value head reads their hidden states); the toy
tasks' presets are ``ALGORITHMS``."""


def get_algorithm(algo: str | AlgoConfig) -> AlgoConfig:
    """A preset by name (``ALGORITHMS`` or ``LM_ALGORITHMS``), or the config itself."""
    if isinstance(algo, AlgoConfig):
        return algo
    known = {**ALGORITHMS, **LM_ALGORITHMS}
    if algo not in known:
        raise ValueError(f"unknown algorithm {algo!r}; choose one of {sorted(known)} or pass an AlgoConfig")
    return known[algo]


def parse_knob_value(knob: str, text: str) -> Any:
    """``text`` read as the value of ``AlgoConfig``'s field ``knob``, by the field's type: ``true`` or ``false`` for
    a bool, ``none`` for None where the field takes it, else an int, a float or the text itself (``--set``,
    ``--knob``)."""
    return read_field(AlgoConfig, knob, text, kind="knob", skip=("name",))


class AlgoField:
    """A dataclass field that holds an ``AlgoConfig`` and also takes a preset's name, which it resolves:
    ``algo: AlgoField = AlgoField("grpo")`` makes ``TrainConfig(algo="dapo").algo`` the ``AlgoConfig``
    ``ALGORITHMS["dapo"]``.

    This is the dataclasses docs' "descriptor-typed field": the type checker reads ``__set__`` for what the
    constructor accepts (a name or an ``AlgoConfig``) and ``__get__`` for what the attribute holds (always an
    ``AlgoConfig``), so no code after construction needs to ask which of the two it got.
    """

    def __init__(self, default: str | AlgoConfig) -> None:
        self.default = get_algorithm(default)
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object | None, owner: type | None = None) -> AlgoConfig:
        if obj is None:  # read on the class: the dataclass takes this as the field's default
            return self.default
        return obj.__dict__[self.name]

    def __set__(self, obj: object, value: str | AlgoConfig) -> None:
        obj.__dict__[self.name] = get_algorithm(value)

"""Checks for notebook 09 (scaling up with TRL), named after the function they check.

    check_grpo_config_kwargs(fn)   fn(algo, max_length) -> the GRPOConfig fields under which TRL's loss is
                                   minirl's policy_loss with algo's knobs

A learner's mapping is read the way TRL 1.16 reads it: every field it leaves out takes TRL's default
(``TRL_DEFAULTS``; ``tests/test_checks_trl.py`` compares them with ``GRPOConfig``'s), and the spellings
TRL treats alike are made one before comparing: ``epsilon_high=None`` means ``epsilon``;
``scale_rewards=True`` / ``False`` mean ``"group"`` / ``"none"`` (``GRPOConfig.__post_init__``); without a
KL term (``beta=0``) ``use_bias_correction_kl`` weights nothing; with ``sync_ref_model=False`` the other
two sync fields are unused. Expected values come from the reference ``minirl.lm.trl_bridge.grpo_config_kwargs``.
A mapping that TRL itself rejects is wrong whatever its fields: ``sync_ref_model=True`` with ``beta=0``
makes ``GRPOTrainer`` raise ``ValueError``. Each wrong field is reported with the mistake it most likely
comes from (a value left at TRL's default, clip_eps_low used for both ends, ``"bnpo"`` for token_mean, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minirl.algorithms import ALGORITHMS, AlgoConfig
from minirl.checks._core import Check, NotImplementedYet, exercise_check
from minirl.lm.recipes import lm_algorithm
from minirl.lm.trl_bridge import LOSS_TYPES
from minirl.lm.trl_bridge import grpo_config_kwargs as _reference

__all__ = ["CASES", "REFUSED", "TRL_DEFAULTS", "check_grpo_config_kwargs"]

# GRPOConfig's defaults (TRL 1.16) for the fields the mapping sets.
TRL_DEFAULTS: dict[str, Any] = {
    "loss_type": "dapo",
    "epsilon": 0.2,
    "epsilon_high": None,
    "importance_sampling_level": "token",
    "scale_rewards": "group",
    "beta": 0.0,
    "use_bias_correction_kl": True,
    "num_iterations": 1,
    "entropy_coef": 0.0,
    "max_completion_length": 512,
    "sync_ref_model": False,
    "ref_model_sync_steps": 512,
    "ref_model_mixup_alpha": 0.6,
}

# Why a field matters, said when the learner's value differs from the reference's and no mistake is named.
WHY: dict[str, str] = {
    "loss_type": "aggregation picks TRL's loss_type: 'sequence_mean' (each response's mean over its own tokens) "
    "is 'grpo', 'token_mean' (one mean over every real token of the batch) is 'dapo', 'constant' "
    "(÷ the budget) is 'dr_grpo'",
    "epsilon": "epsilon is clip_eps_low (the ratio is clipped below at 1 − ε_low)",
    "epsilon_high": "epsilon_high is clip_eps_high, the upper clip of DAPO's clip-higher (None in minirl means "
    "the same as ε_low)",
    "importance_sampling_level": "importance_sampling_level is ratio_level ('token', or GSPO's 'sequence')",
    "scale_rewards": "scale_rewards follows delta_mode: 'normalized_rewards' divides by the group's std "
    "('group'); 'centered_rewards' only subtracts the mean ('none')",
    "beta": "beta is kl_coef, the weight of the k3 KL to π_ref",
    "use_bias_correction_kl": "TRL 1.16 multiplies the k3 estimate by the importance ratio unless "
    "use_bias_correction_kl=False; minirl's term is plain β·k3",
    "num_iterations": "num_iterations is inner_epochs, the gradient steps on each batch of samples",
    "entropy_coef": "entropy_coef is entropy_coef (the bonus − c · mean entropy)",
    "max_completion_length": "max_completion_length is the response budget, max_length (also Dr GRPO's constant)",
    "sync_ref_model": "sync_ref_model=True exactly when π_ref is refreshed (ref_refresh_every with a KL term)",
    "ref_model_sync_steps": "TRL counts optimizer steps: π_ref refreshes every ref_refresh_every × inner_epochs "
    "of them",
    "ref_model_mixup_alpha": "TRL's sync mixes π_ref ← α·π_θ + (1 − α)·π_ref (default α = 0.6); α = 1.0 copies, "
    "as minirl does",
}

# The cases: a name and the AlgoConfig (presets, the language-model presets, a few hand-made knob settings).
CASES: list[tuple[str, AlgoConfig]] = [
    ("grpo", ALGORITHMS["grpo"]),
    ("dapo", ALGORITHMS["dapo"]),
    ("gspo", ALGORITHMS["gspo"]),
    ("dr_grpo", ALGORITHMS["dr_grpo"]),
    ("the LM's grpo (β 0.02, π_ref never refreshed)", lm_algorithm("grpo")),
    ("grpo without KL", ALGORITHMS["grpo"].with_(kl_coef=0.0, entropy_coef=0.0, inner_epochs=1)),
    (
        "grpo, clip-higher 0.1/0.3, KL 0.05 refreshed every 5 steps, 3 inner epochs",
        ALGORITHMS["grpo"].with_(
            clip_eps_low=0.1, clip_eps_high=0.3, kl_coef=0.05, ref_refresh_every=5, inner_epochs=3
        ),
    ),
    (
        "token_mean with centred rewards",
        ALGORITHMS["grpo"].with_(aggregation="token_mean", delta_mode="centered_rewards"),
    ),
]
# What TRL cannot express: the learner's function should raise ValueError. (The rungs without the importance
# ratio are covered: AlgoConfig requires clip_eps_low=None there.)
REFUSED: list[tuple[str, AlgoConfig, str]] = [
    ("naive", ALGORITHMS["naive"], "delta_mode 'rewards' (no baseline): TRL always subtracts the group mean"),
    ("unclipped", ALGORITHMS["unclipped"], "no clipping (clip_eps_low=None): TRL always clips the ratio"),
    (
        "grpo_process",
        ALGORITHMS["grpo_process"],
        "advantage_level 'token' (one advantage per position, a process reward): TRL's advantages are one per response",
    ),
]

_AGGREGATION_OF = {loss_type: aggregation for aggregation, loss_type in LOSS_TYPES.items()}
# Fields grpo_trainer takes from TrainConfig, not from the algorithm.
_TRAIN_CONFIG_FIELDS = {
    "temperature",
    "num_generations",
    "per_device_train_batch_size",
    "generation_batch_size",
    "gradient_accumulation_steps",
    "learning_rate",
    "lr_scheduler_type",
    "max_grad_norm",
    "max_steps",
    "seed",
    "top_k",
    "top_p",
}


def _as_trl_reads(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields as TRL uses them: defaults filled in, and spellings TRL treats alike made one."""
    read = {**TRL_DEFAULTS, **fields}
    if read["epsilon_high"] is None:
        read["epsilon_high"] = read["epsilon"]
    if isinstance(read["scale_rewards"], bool):  # GRPOConfig.__post_init__: True -> "group", False -> "none"
        read["scale_rewards"] = "group" if read["scale_rewards"] else "none"
    if not read["beta"]:  # no KL term: the bias correction multiplies nothing
        read["use_bias_correction_kl"] = None
    if not read["sync_ref_model"]:  # no sync: its step count and α are unused
        read["ref_model_sync_steps"] = read["ref_model_mixup_alpha"] = None
    return read


# The plausible mistake behind a wrong field, one function per field: (mine, want, algo, read) -> the mistake
# named, or None. ``mine`` is TRL's reading of the learner's value, ``read`` all of the learner's fields so read.
_Namer = Callable[[Any, Any, AlgoConfig, dict[str, Any]], "str | None"]


def _loss_type(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    if mine == "bnpo" and want == "dapo":
        return (
            "'bnpo' divides each micro-batch by its own token count (and each GPU by its own): under "
            "gradient accumulation or on several GPUs a token of a micro-batch of short responses weighs "
            "more; 'dapo' divides every micro-batch by the whole generation batch's tokens: token_mean"
        )
    if mine in _AGGREGATION_OF:
        return f"{mine!r} is TRL's {_AGGREGATION_OF[mine]!r}, and this algo's aggregation is {algo.aggregation!r}"
    if mine == "bnpo":
        return f"'bnpo' is a token mean (per micro-batch), and this algo's aggregation is {algo.aggregation!r}"
    return None


def _epsilon(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    if algo.clip_eps_high is not None and mine == algo.clip_eps_high:
        return "that is clip_eps_high: epsilon is the lower clip, 1 − ε_low (clip_eps_low)"
    return None


def _epsilon_high(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    if mine == read["epsilon"]:
        return (
            f"you used clip_eps_low for both ends; this algo clips higher above (clip_eps_high = "
            f"{algo.clip_eps_high}, DAPO's clip-higher)"
        )
    if algo.clip_eps_high is None:
        return "clip_eps_high=None means the same as ε_low in minirl (epsilon_high=None does the same in TRL)"
    return None


def _importance_sampling_level(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    return f"ratio_level is {algo.ratio_level!r}: " + (
        "one length-normalised ratio per response (GSPO)" if algo.ratio_level == "sequence" else "one ratio per token"
    )


def _scale_rewards(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    if mine == "batch":
        return (
            "'batch' divides by the std of the whole batch's rewards; normalized_rewards divides each group "
            "by its own std ('group')"
        )
    if want == "none" and mine == "group":
        return (
            "'centered_rewards' only subtracts the group mean; 'group' (TRL's default) also divides by the group's std"
        )
    if want == "group" and mine == "none":
        return "'normalized_rewards' divides by the group's std; 'none' only subtracts the group mean"
    return None


def _beta(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    return None if mine else f"beta = 0 drops the KL term; beta is kl_coef ({algo.kl_coef})"


def _use_bias_correction_kl(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    return WHY["use_bias_correction_kl"] if mine else None


def _num_iterations(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    if mine == 1:
        return f"num_iterations is inner_epochs: {algo.inner_epochs} gradient steps on each batch of samples, not 1"
    return None


def _entropy_coef(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    return None if mine else f"entropy_coef 0 drops the entropy bonus; this algo's is {algo.entropy_coef}"


def _sync_ref_model(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    if want:
        return (
            f"ref_refresh_every = {algo.ref_refresh_every} with a KL term needs sync_ref_model=True, "
            "or π_ref never moves"
        )
    return (
        "this algo never refreshes π_ref (ref_refresh_every=None): sync_ref_model=True would move it every "
        "ref_model_sync_steps optimizer steps; set the sync fields only when ref_refresh_every is set "
        "(and kl_coef > 0)"
    )


def _ref_model_sync_steps(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    if mine == algo.ref_refresh_every and algo.inner_epochs > 1:
        return (
            f"that is ref_refresh_every itself: TRL counts optimizer steps, and each minirl step takes "
            f"inner_epochs = {algo.inner_epochs} of them ({algo.ref_refresh_every} × {algo.inner_epochs} = "
            f"{want})"
        )
    return None


def _ref_model_mixup_alpha(mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    if mine == TRL_DEFAULTS["ref_model_mixup_alpha"]:
        return (
            "TRL's default α = 0.6 mixes, π_ref ← 0.6·π_θ + 0.4·π_ref; minirl copies π_θ into π_ref: "
            "ref_model_mixup_alpha=1.0"
        )
    return None


_MISTAKE_NAMERS: dict[str, _Namer] = {
    "loss_type": _loss_type,
    "epsilon": _epsilon,
    "epsilon_high": _epsilon_high,
    "importance_sampling_level": _importance_sampling_level,
    "scale_rewards": _scale_rewards,
    "beta": _beta,
    "use_bias_correction_kl": _use_bias_correction_kl,
    "num_iterations": _num_iterations,
    "entropy_coef": _entropy_coef,
    "sync_ref_model": _sync_ref_model,
    "ref_model_sync_steps": _ref_model_sync_steps,
    "ref_model_mixup_alpha": _ref_model_mixup_alpha,
}


def _mistake(key: str, mine: Any, want: Any, algo: AlgoConfig, read: dict[str, Any]) -> str | None:
    """The plausible mistake behind ``mine`` (TRL's reading of the learner's ``key``), named; None if unknown."""
    namer = _MISTAKE_NAMERS.get(key)
    return None if namer is None else namer(mine, want, algo, read)


@exercise_check("grpo_config_kwargs")
def check_grpo_config_kwargs(c: Check, fn: Callable) -> None:
    """``fn(algo, max_length) -> dict``: the ``GRPOConfig`` fields for ``algo``'s knobs."""
    for what, algo in CASES:
        for max_length in (8, 24):
            got = c.call(fn, algo, max_length, call=f"{what}, max_length={max_length}")
            _check_mapping(c, what, algo, max_length, got)
    _check_refusals(c, fn)


def _check_mapping(c: Check, what: str, algo: AlgoConfig, max_length: int, got: Any) -> None:
    """The learner's mapping for ``algo``: a dict of known fields, which TRL reads as the reference's."""
    if not isinstance(got, dict):
        pairs = " (dict(...) turns (field, value) pairs into one)" if isinstance(got, list | tuple) else ""
        c.fail(
            f"{what}: return a dict of GRPOConfig fields, {{field: value}}; got {type(got).__name__}{pairs}",
            named=bool(pairs),
        )
    c.passed += 1
    unknown = sorted(set(got) - set(TRL_DEFAULTS))
    if unknown:
        why = (
            " (the batch, sampling and optimizer fields come from TrainConfig: grpo_trainer sets them)"
            if set(unknown) & _TRAIN_CONFIG_FIELDS
            else ""
        )
        c.fail(f"{what}: {unknown} are not fields this mapping sets{why}; the fields are {sorted(TRL_DEFAULTS)}")
    c.passed += 1
    mine, want = _as_trl_reads(got), _as_trl_reads(_reference(algo, max_length))
    if mine["sync_ref_model"] and not mine["beta"] and not want["beta"]:  # (a wrong beta is named below)
        c.fail(
            f"{what}: sync_ref_model=True with beta={mine['beta']!r} (no KL term): TRL 1.16's "
            "GRPOTrainer raises ValueError on it (it builds no π_ref to sync); set the sync fields only "
            "when kl_coef > 0",
            named=True,
        )
    c.passed += 1
    for key in TRL_DEFAULTS:
        if mine[key] != want[key]:
            left_out = " (you left it out: TRL's default applies)" if key not in got else ""
            named = _mistake(key, mine[key], want[key], algo, mine)
            c.fail(
                f"{what}: {key} should be {want[key]!r}; TRL reads {mine[key]!r}{left_out} — {named or WHY[key]}",
                named=named is not None,
            )
        c.passed += 1


def _check_refusals(c: Check, fn: Callable) -> None:
    """The algorithms TRL has no counterpart for: the learner's function raises ValueError."""
    for what, algo, why in REFUSED:
        try:
            got = fn(algo, 8)
        except ValueError:
            c.passed += 1
            continue
        except NotImplementedError:
            raise NotImplementedYet from None
        except Exception as err:
            c.fail(f"{what}: raise ValueError (TRL has no counterpart: {why}); got {type(err).__name__}: {err}")
        shown = repr(got) if len(repr(got)) <= 60 else repr(got)[:57] + "..."
        c.fail(f"{what}: raise ValueError instead of returning a mapping — {why}; yours returned {shown}", named=True)

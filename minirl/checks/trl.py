"""Checks for notebook 09 (scaling up with TRL), named after the function they check.

    check_grpo_config_kwargs(fn)   fn(algo, max_length) -> the GRPOConfig fields under which TRL's loss is
                                   minirl's policy_loss with algo's knobs

A learner's mapping is read the way TRL reads it: every field it leaves out takes TRL's default
(``TRL_DEFAULTS``, those of TRL 1.16; ``tests/test_checks_trl.py`` compares them with ``GRPOConfig``'s
when TRL is installed). Expected values come from the reference ``minirl.trl_bridge.grpo_config_kwargs``;
two spellings TRL treats alike are both accepted (``epsilon_high=None`` means ``epsilon``; with one
optimizer step per batch ``"dapo"`` is ``"bnpo"``), and the π_ref sync fields only matter with a KL term.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minirl.algorithms import ALGORITHMS, AlgoConfig
from minirl.checks._core import Check, NotImplementedYet, exercise_check
from minirl.trl_bridge import grpo_config_kwargs as _reference

__all__ = ["TRL_DEFAULTS", "check_grpo_config_kwargs"]

# GRPOConfig's defaults (TRL 1.16) for the fields the mapping sets.
TRL_DEFAULTS: dict[str, Any] = {
    "loss_type": "dapo", "epsilon": 0.2, "epsilon_high": None, "importance_sampling_level": "token",
    "scale_rewards": "group", "beta": 0.0, "use_bias_correction_kl": True, "num_iterations": 1,
    "entropy_coef": 0.0, "max_completion_length": 512, "sync_ref_model": False, "ref_model_sync_steps": 512,
    "ref_model_mixup_alpha": 0.6,
}

# Why a field matters, said when the learner's value differs from the reference's.
WHY: dict[str, str] = {
    "loss_type": "aggregation picks TRL's loss_type: 'sequence_mean' (each response's mean over its own tokens) "
                 "is 'grpo', 'token_mean' (one mean over every real token) is 'bnpo', 'constant' (÷ the budget) "
                 "is 'dr_grpo'",
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
    "max_completion_length": "max_completion_length is the response budget, max_length (also Dr GRPO's "
                             "constant)",
    "sync_ref_model": "ref_refresh_every (with a KL term) needs sync_ref_model=True, or π_ref never moves",
    "ref_model_sync_steps": "TRL counts optimizer steps: π_ref refreshes every ref_refresh_every × inner_epochs "
                            "of them",
    "ref_model_mixup_alpha": "TRL's sync mixes π_ref ← α·π_θ + (1 − α)·π_ref (default α = 0.6); α = 1.0 copies, "
                             "as minirl does",
}

# The cases: a name and the AlgoConfig (presets with the LM's changes, and a few hand-made knob settings).
CASES: list[tuple[str, AlgoConfig]] = [
    ("grpo", ALGORITHMS["grpo"]),
    ("dapo", ALGORITHMS["dapo"]),
    ("gspo", ALGORITHMS["gspo"]),
    ("dr_grpo", ALGORITHMS["dr_grpo"]),
    ("grpo without KL", ALGORITHMS["grpo"].with_(kl_coef=0.0, entropy_coef=0.0, inner_epochs=1)),
    ("grpo, clip-higher 0.1/0.3, KL 0.05 refreshed every 5 steps, 3 inner epochs",
     ALGORITHMS["grpo"].with_(clip_eps_low=0.1, clip_eps_high=0.3, kl_coef=0.05, ref_refresh_every=5,
                              inner_epochs=3)),
    ("token_mean with centred rewards", ALGORITHMS["grpo"].with_(aggregation="token_mean",
                                                                 delta_mode="centered_rewards")),
]
# What TRL cannot express: the learner's function should raise ValueError.
REFUSED: list[tuple[str, AlgoConfig, str]] = [
    ("naive", ALGORITHMS["naive"], "delta_mode 'rewards' (no baseline): TRL always subtracts the group mean"),
    ("unclipped", ALGORITHMS["unclipped"], "no clipping (clip_eps_low=None): TRL always clips the ratio"),
]


def _as_trl_reads(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields as TRL uses them: defaults filled in, and spellings TRL treats alike made one."""
    read = {**TRL_DEFAULTS, **fields}
    if read["epsilon_high"] is None:
        read["epsilon_high"] = read["epsilon"]
    if read["loss_type"] == "dapo":  # "dapo" = "bnpo" when one batch is one optimizer step
        read["loss_type"] = "bnpo"
    if not read["beta"]:  # no KL term: π_ref is never used
        for key in ("sync_ref_model", "ref_model_sync_steps", "ref_model_mixup_alpha"):
            read[key] = None
    elif not read["sync_ref_model"]:
        read["ref_model_sync_steps"] = read["ref_model_mixup_alpha"] = None
    return read


@exercise_check("grpo_config_kwargs")
def check_grpo_config_kwargs(c: Check, fn: Callable) -> None:
    """``fn(algo, max_length) -> dict``: the ``GRPOConfig`` fields for ``algo``'s knobs."""
    for what, algo in CASES:
        for max_length in (8, 24):
            got = c.call(fn, algo, max_length, call=f"{what}, max_length={max_length}")
            c.expect(isinstance(got, dict), f"{what}: return a dict of GRPOConfig fields; got {type(got).__name__}")
            unknown = sorted(set(got) - set(TRL_DEFAULTS))
            c.expect(not unknown, f"{what}: {unknown} are not fields this mapping sets; the fields are "
                                  f"{sorted(TRL_DEFAULTS)}")
            mine, want = _as_trl_reads(got), _as_trl_reads(_reference(algo, max_length))
            for key in TRL_DEFAULTS:
                if mine[key] != want[key]:
                    left_out = " (you left it out: TRL's default applies)" if key not in got else ""
                    c.fail(f"{what}: {key} should be {want[key]!r}; TRL reads {mine[key]!r}{left_out} — {WHY[key]}")
                c.passed += 1
    for what, algo, why in REFUSED:
        try:
            got = fn(algo, 8)
        except ValueError:
            c.passed += 1
            continue
        except NotImplementedError:
            raise NotImplementedYet from None
        except Exception as err:  # noqa: BLE001 - reported to the learner in one line
            c.fail(f"{what}: raise ValueError (TRL has no counterpart); got {type(err).__name__}: {err}")
        c.fail(f"{what}: returned {got!r}; raise ValueError instead — {why}")

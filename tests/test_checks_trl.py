"""The check of notebook 09 catches the plausible wrong knob mappings, each with a message that names it."""

from __future__ import annotations

import dataclasses

import pytest
from check_helpers import caught, run

from minirl.checks import check_grpo_config_kwargs
from minirl.checks.trl import TRL_DEFAULTS
from minirl.trl_bridge import LOSS_TYPES, grpo_config_kwargs


def _changed(**edits):
    """The reference mapping with some fields changed (a value) or left out (``...``)."""
    def fn(algo, max_length):
        fields = grpo_config_kwargs(algo, max_length)
        for key, value in edits.items():
            if value is ...:
                fields.pop(key, None)
            else:
                fields[key] = value(algo, fields) if callable(value) else value
        return fields
    return fn


def no_refusals(algo, max_length):
    try:
        return grpo_config_kwargs(algo, max_length)
    except ValueError:
        return {"loss_type": "grpo"}


def swapped_loss_types(algo, max_length):
    return {**grpo_config_kwargs(algo, max_length),
            "loss_type": {"sequence_mean": "bnpo", "token_mean": "grpo", "constant": "dr_grpo"}[algo.aggregation]}


@pytest.mark.parametrize("wrong, keywords", [
    (_changed(use_bias_correction_kl=...), ["use_bias_correction_kl", "left it out", "multiplies the k3"]),
    (_changed(loss_type="grpo"), ["loss_type should be 'bnpo'", "'token_mean'"]),
    (swapped_loss_types, ["loss_type should be 'grpo'", "'sequence_mean'"]),
    (_changed(epsilon_high=lambda algo, f: f["epsilon"]), ["epsilon_high should be 0.28", "clip-higher"]),
    (_changed(scale_rewards="batch"), ["scale_rewards should be 'group'", "delta_mode"]),
    (_changed(scale_rewards="group"), ["scale_rewards should be 'none'", "'centered_rewards'"]),
    (_changed(ref_model_sync_steps=lambda algo, f: algo.ref_refresh_every),
     ["ref_model_sync_steps", "optimizer steps", "× inner_epochs"]),
    (_changed(ref_model_mixup_alpha=...), ["ref_model_mixup_alpha should be 1.0", "0.6"]),
    (_changed(sync_ref_model=...), ["sync_ref_model should be True", "never moves"]),
    (_changed(max_completion_length=...), ["max_completion_length should be 8", "512", "left it out"]),
    (_changed(beta=...), ["beta should be 0.01", "kl_coef"]),
    (_changed(num_iterations=...), ["num_iterations should be 4", "inner_epochs"]),
    (_changed(importance_sampling_level=...), ["importance_sampling_level should be 'sequence'", "GSPO"]),
    (_changed(epsilon=0.2), ["epsilon should be 0.1", "clip_eps_low"]),
    (_changed(entropy_coef=0.0), ["entropy_coef should be", "bonus"]),
    (_changed(temperature=1.0), ["['temperature'] are not fields this mapping sets"]),
    (no_refusals, ["naive", "raise ValueError", "no baseline"]),
    (lambda algo, max_length: list(grpo_config_kwargs(algo, max_length).items()), ["return a dict", "list"]),
], ids=["bias-correction", "loss-type-grpo", "loss-types-swapped", "no-clip-higher", "scale-batch", "scale-group",
        "sync-steps", "mixup", "no-sync", "no-budget", "no-beta", "no-iterations", "no-sequence-ratio",
        "fixed-epsilon", "no-entropy", "extra-field", "no-refusals", "not-a-dict"])
def test_grpo_config_kwargs_mistakes(wrong, keywords, capsys):
    caught(check_grpo_config_kwargs, wrong, capsys, *keywords)


@pytest.mark.parametrize("right", [
    grpo_config_kwargs,
    _changed(epsilon_high=lambda algo, f: algo.clip_eps_high),  # None = epsilon, as in TRL
    _changed(loss_type=lambda algo, f: "dapo" if algo.aggregation == "token_mean" else f["loss_type"]),
    _changed(sync_ref_model=True, ref_model_mixup_alpha=1.0,  # sync fields without a KL term: π_ref is never used
             ref_model_sync_steps=lambda algo, f: (algo.ref_refresh_every or 1) * algo.inner_epochs),
], ids=["reference", "epsilon-high-none", "dapo-for-token-mean", "sync-without-kl"])
def test_grpo_config_kwargs_other_correct_ways_pass(right, capsys):
    ok, line = run(check_grpo_config_kwargs, right, capsys)
    assert ok, line


def test_trl_defaults_are_grpo_configs():
    pytest.importorskip("trl", reason="TRL is an optional extra: pip install -e '.[trl]'")
    from trl import GRPOConfig

    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    assert {key: defaults[key] for key in TRL_DEFAULTS} == TRL_DEFAULTS
    assert set(LOSS_TYPES.values()) <= {"grpo", "bnpo", "dr_grpo", "dapo"}

"""The check of notebook 09 catches the plausible wrong knob mappings, each with a message that names it, and
accepts the other right ones; every mapping it accepts builds into a real ``GRPOConfig`` and ``GRPOTrainer``
(TRL 1.16 on the tiny model), and a mapping TRL rejects is one it rejects too."""

from __future__ import annotations

import dataclasses
import os

import pytest
from check_helpers import caught, run

from minirl.checks import check_grpo_config_kwargs
from minirl.checks.nb09_trl import CASES, TRL_DEFAULTS
from minirl.lm.trl_bridge import LOSS_TYPES, grpo_config_kwargs


def _changed(**edits):
    """The reference mapping with some fields changed (a value, or ``value(algo, fields)``) or left out (``...``)."""

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


def no_process_refusal(algo, max_length):  # refuses no baseline and no clipping, maps a process reward anyway
    return grpo_config_kwargs(algo.with_(advantage_level="sequence"), max_length)


def type_error_refusals(algo, max_length):
    if algo.clip_eps_low is None or algo.delta_mode == "rewards" or algo.advantage_level == "token":
        raise TypeError("not supported")
    return grpo_config_kwargs(algo, max_length)


def swapped_loss_types(algo, max_length):
    return {
        **grpo_config_kwargs(algo, max_length),
        "loss_type": {"sequence_mean": "dapo", "token_mean": "grpo", "constant": "dr_grpo"}[algo.aggregation],
    }


def refresh_with_any_kl(algo, max_length):  # syncs π_ref whenever β > 0, refresh or not
    fields = grpo_config_kwargs(algo, max_length)
    if algo.kl_coef > 0:
        fields.update(
            sync_ref_model=True,
            ref_model_sync_steps=(algo.ref_refresh_every or 1) * algo.inner_epochs,
            ref_model_mixup_alpha=1.0,
        )
    return fields


def refresh_without_kl(algo, max_length):  # syncs π_ref whenever ref_refresh_every is set, KL term or not
    fields = grpo_config_kwargs(algo, max_length)
    if algo.ref_refresh_every is not None:
        fields.update(
            sync_ref_model=True,
            ref_model_sync_steps=algo.ref_refresh_every * algo.inner_epochs,
            ref_model_mixup_alpha=1.0,
        )
    return fields


def bnpo_for_token_mean(algo, max_length):  # the mapping before issue 19: right with one micro-batch only
    fields = grpo_config_kwargs(algo, max_length)
    return {**fields, "loss_type": "bnpo" if algo.aggregation == "token_mean" else fields["loss_type"]}


@pytest.mark.parametrize(
    "wrong, keywords",
    [
        (_changed(use_bias_correction_kl=...), ["use_bias_correction_kl", "left it out", "multiplies the k3"]),
        (_changed(loss_type="grpo"), ["loss_type should be 'dapo'", "'grpo' is TRL's 'sequence_mean'", "'token_mean'"]),
        (bnpo_for_token_mean, ["loss_type should be 'dapo'", "'bnpo' divides each micro-batch by its own token count"]),
        (swapped_loss_types, ["loss_type should be 'grpo'", "'dapo' is TRL's 'token_mean'", "'sequence_mean'"]),
        (_changed(loss_type=...), ["loss_type should be 'grpo'", "left it out", "'dapo' is TRL's 'token_mean'"]),
        (_changed(epsilon_high=lambda algo, f: f["epsilon"]), ["epsilon_high should be 0.28", "clip_eps_low for both"]),
        (
            _changed(
                epsilon=lambda algo, f: algo.clip_eps_high or f["epsilon"], epsilon_high=lambda algo, f: f["epsilon"]
            ),
            ["epsilon should be 0.2", "that is clip_eps_high"],
        ),
        (_changed(epsilon_high=0.28), ["epsilon_high should be 0.2", "clip_eps_high=None means the same as ε_low"]),
        (
            _changed(scale_rewards="batch"),
            ["scale_rewards should be 'group'", "'batch' divides by the std of the whole"],
        ),
        (_changed(scale_rewards="group"), ["scale_rewards should be 'none'", "'centered_rewards' only subtracts"]),
        (_changed(scale_rewards="none"), ["scale_rewards should be 'group'", "'none' only subtracts"]),
        (
            _changed(ref_model_sync_steps=lambda algo, f: algo.ref_refresh_every),
            ["ref_model_sync_steps should be 80", "ref_refresh_every itself", "optimizer steps", "20 × 4 = 80"],
        ),
        (_changed(ref_model_mixup_alpha=...), ["ref_model_mixup_alpha should be 1.0", "default α = 0.6 mixes"]),
        (_changed(sync_ref_model=...), ["sync_ref_model should be True", "never moves"]),
        (refresh_with_any_kl, ["the LM's grpo", "sync_ref_model should be False", "never refreshes π_ref"]),
        (refresh_without_kl, ["grpo without KL", "sync_ref_model=True with beta=0.0", "raises ValueError"]),
        (_changed(max_completion_length=...), ["max_completion_length should be 8", "512", "left it out"]),
        (_changed(beta=...), ["beta should be 0.01", "beta = 0 drops the KL term"]),
        (_changed(num_iterations=...), ["num_iterations should be 4", "inner_epochs: 4 gradient steps"]),
        (_changed(importance_sampling_level=...), ["importance_sampling_level should be 'sequence'", "GSPO"]),
        (_changed(epsilon=0.2), ["epsilon should be 0.1", "clip_eps_low"]),
        (_changed(entropy_coef=0.0), ["entropy_coef should be 0.3", "drops the entropy bonus"]),
        (_changed(temperature=1.0), ["['temperature'] are not fields this mapping sets", "TrainConfig"]),
        (no_refusals, ["naive", "raise ValueError", "no baseline"]),
        (no_process_refusal, ["grpo_process", "raise ValueError", "one advantage per position"]),
        (type_error_refusals, ["naive", "raise ValueError", "got TypeError"]),
        (
            lambda algo, max_length: list(grpo_config_kwargs(algo, max_length).items()),
            ["return a dict", "list", "dict("],
        ),
    ],
    ids=[
        "bias-correction",
        "loss-type-grpo",
        "bnpo",
        "loss-types-swapped",
        "no-loss-type",
        "no-clip-higher",
        "swapped-epsilons",
        "clip-higher-without-one",
        "scale-batch",
        "scale-group",
        "scale-none",
        "sync-steps",
        "mixup",
        "no-sync",
        "refresh-with-any-kl",
        "refresh-without-kl",
        "no-budget",
        "no-beta",
        "no-iterations",
        "no-sequence-ratio",
        "fixed-epsilon",
        "no-entropy",
        "extra-field",
        "no-refusals",
        "no-process-refusal",
        "type-error",
        "not-a-dict",
    ],
)
def test_grpo_config_kwargs_mistakes(wrong, keywords, capsys):
    caught(check_grpo_config_kwargs, wrong, capsys, *keywords)


def without_kl_bias_correction(algo, max_length):  # leaves use_bias_correction_kl at TRL's default when β = 0
    fields = grpo_config_kwargs(algo, max_length)
    if not fields["beta"]:
        fields.pop("use_bias_correction_kl")
    return fields


def unused_sync_fields(algo, max_length):  # sync_ref_model=False spelled out, its step count and α set anyway
    fields = grpo_config_kwargs(algo, max_length)
    if not fields.get("sync_ref_model"):
        fields.update(sync_ref_model=False, ref_model_sync_steps=7, ref_model_mixup_alpha=0.3)
    return fields


RIGHT = {
    "reference": grpo_config_kwargs,
    "epsilon-high-none": _changed(epsilon_high=lambda algo, f: algo.clip_eps_high),  # None = epsilon, as in TRL
    "scale-rewards-bool": _changed(scale_rewards=lambda algo, f: f["scale_rewards"] == "group"),  # True = "group"
    "no-bias-correction-without-kl": without_kl_bias_correction,
    "unused-sync-fields": unused_sync_fields,
}


@pytest.mark.parametrize("name", list(RIGHT))
def test_grpo_config_kwargs_other_correct_ways_pass(name, capsys):
    ok, line = run(check_grpo_config_kwargs, RIGHT[name], capsys)
    assert ok, line


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    pytest.importorskip("trl", reason="TRL is an optional extra: pip install -e '.[trl]'")
    from minirl.lm import make_tiny_lm

    folder = tmp_path_factory.mktemp("tiny_lm")
    make_tiny_lm(seed=0, max_new_tokens=8).save_pretrained(folder)
    return folder


def _build(fields: dict, folder, tmp_path):
    """``fields`` as a real GRPOConfig and a GRPOTrainer around the tiny model (TRL loads π_ref from the folder
    when beta > 0)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from minirl.lm import load_policy

    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"),
        report_to="none",
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        per_device_train_batch_size=2,
        num_generations=2,
        save_strategy="no",
        disable_tqdm=True,
        **fields,
    )
    return GRPOTrainer(
        model=str(folder),
        reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["a", "b"]}),
        processing_class=load_policy(folder).tokenizer,
    )


@pytest.mark.trl
@pytest.mark.parametrize("name", list(RIGHT))
def test_every_accepted_mapping_builds_a_grpo_trainer(name, tiny_folder, tmp_path):
    """A check must never call right what TRL rejects: each case of each accepted variant builds."""
    for what, algo in CASES:
        for max_length in (8, 24):
            trainer = _build(RIGHT[name](algo, max_length), tiny_folder, tmp_path)
            assert trainer.max_completion_length == max_length, what
            assert trainer.args.scale_rewards in ("group", "none"), what


@pytest.mark.trl
def test_trl_rejects_what_the_check_rejects_as_unbuildable(tiny_folder, tmp_path):
    """sync_ref_model=True without a KL term: TRL 1.16's GRPOTrainer raises ValueError (so the check says so)."""
    algo = dict(CASES)["grpo without KL"]
    with pytest.raises(ValueError, match="sync_ref_model=True"):
        _build(refresh_without_kl(algo, 8), tiny_folder, tmp_path)


@pytest.mark.trl
def test_trl_defaults_are_grpo_configs(tmp_path):
    pytest.importorskip("trl", reason="TRL is an optional extra: pip install -e '.[trl]'")
    from trl import GRPOConfig

    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    assert {key: defaults[key] for key in TRL_DEFAULTS} == TRL_DEFAULTS
    assert set(LOSS_TYPES.values()) <= {"grpo", "dr_grpo", "dapo"}
    # the spellings the check treats alike are alike in GRPOConfig
    for spelled, read in ((True, "group"), (False, "none")):
        config = GRPOConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True, scale_rewards=spelled)
        assert config.scale_rewards == read

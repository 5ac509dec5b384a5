"""``minirl.lm.trl_bridge`` without TRL: the knob table and the refusals (the parity tests need TRL:
``tests/test_trl_parity.py``)."""

from dataclasses import fields
from pathlib import Path

import pytest

from minirl.algorithms import ALGORITHMS, AlgoConfig
from minirl.lm.recipes import lm_algorithm
from minirl.lm.trl_bridge import KNOBS, LOSS_TYPES, grpo_config_kwargs, knob_table


def test_knob_table_covers_every_algo_knob():
    named = {row[0].split("=")[0] for row in KNOBS}
    for f in fields(AlgoConfig):
        if f.name != "name":
            assert f.name in named, f"KNOBS has no row for AlgoConfig.{f.name}"


def test_readme_has_the_knob_table():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert knob_table() in readme, "README's TRL knob table is stale: paste minirl.lm.trl_bridge.knob_table() there"


def test_loss_types_normalise_by_the_whole_batch():
    """token_mean is TRL's "dapo" (÷ the whole generation batch's tokens), never "bnpo" (÷ each micro-batch's)."""
    assert LOSS_TYPES == {"sequence_mean": "grpo", "token_mean": "dapo", "constant": "dr_grpo"}
    assert '"token_mean" = "dapo"' in knob_table()


def test_grpo_config_kwargs_maps_the_presets():
    dapo = grpo_config_kwargs("dapo", 16)
    assert dapo["loss_type"] == "dapo" and (dapo["epsilon"], dapo["epsilon_high"]) == (0.2, 0.28)
    assert dapo["beta"] == 0.0 and "sync_ref_model" not in dapo and dapo["max_completion_length"] == 16
    grpo = grpo_config_kwargs("grpo", 8)
    assert grpo["loss_type"] == "grpo" and grpo["epsilon_high"] == grpo["epsilon"] == 0.2
    assert grpo["scale_rewards"] == "group" and grpo["use_bias_correction_kl"] is False
    assert (grpo["sync_ref_model"], grpo["ref_model_sync_steps"], grpo["ref_model_mixup_alpha"]) == (True, 80, 1.0)
    lm_grpo = grpo_config_kwargs(lm_algorithm("grpo"), 8)  # β 0.02, π_ref never refreshed: no sync
    assert lm_grpo["beta"] == 0.02 and "sync_ref_model" not in lm_grpo
    no_kl = grpo_config_kwargs(ALGORITHMS["grpo"].with_(kl_coef=0.0), 8)  # a refresh, but no π_ref: no sync either
    assert "sync_ref_model" not in no_kl
    assert grpo_config_kwargs("gspo", 8)["importance_sampling_level"] == "sequence"
    dr = grpo_config_kwargs("dr_grpo", 8)
    assert dr["loss_type"] == "dr_grpo" and dr["scale_rewards"] == "none"


@pytest.mark.parametrize(
    "algo, words",
    [
        ("naive", "no baseline"),
        ("baselined", "no clipping"),
        ("normalized", "no clipping"),
        ("grpo_process", "one per response"),
        ("unclipped", "no clipping"),
    ],
)
def test_grpo_config_kwargs_refuses_what_trl_lacks(algo, words):
    with pytest.raises(ValueError, match=words):
        grpo_config_kwargs(ALGORITHMS[algo], 8)
    with pytest.raises(ValueError, match="max_length"):
        grpo_config_kwargs("grpo", 0)


def test_text_task_reward_scores_trl_completions_like_the_task():
    from minirl.lm.trl_bridge import text_task_reward
    from toy_envs.text_tasks import TextSortTask

    task = TextSortTask(n_numbers=3, max_value=9, few_shot=1)
    reward = text_task_reward(task)
    numbers = [[3, 1, 2], [9, 0, 4], [5, 5, 1]]
    chats = [[{"role": "assistant", "content": text}] for text in ("1, 2, 3", "9, 0, 4", "it is 1 5 5")]
    expected = [task.max_reward, task.format_weight, 0.0]  # right; the asked form only; malformed
    assert reward(completions=chats, numbers=numbers, prompts=None) == pytest.approx(expected)
    assert reward(completions=["1, 2, 3"], numbers=[[2, 3, 1]]) == pytest.approx([task.max_reward])

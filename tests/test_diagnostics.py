"""minirl.diagnostics and what the loop reports with it: truncation, length of right and wrong replies, pass@k at
evaluation, and the one line a run that cannot learn prints."""

import math

import pytest
import torch

from minirl.diagnostics import cannot_learn, length_by_correctness
from minirl.lm import make_tiny_lm
from minirl.lm.recipes import lm_algorithm
from minirl.protocols import Rollout
from minirl.train import UPDATE_METRICS, TrainConfig, step_metrics, train
from toy_envs import SortingTask
from toy_envs.text_tasks import TextSortTask

UPDATE = dict.fromkeys(UPDATE_METRICS, 0.0)


def rec(step, reward=0.5, zero_variance_groups=0.25, **kw):
    return {"step": step, "reward": reward, "zero_variance_groups": zero_variance_groups, **kw}


# ---- length_by_correctness ---------------------------------------------------------------------------------


def test_length_by_correctness_averages_each_kind():
    lengths = torch.tensor([[10.0, 4.0, 6.0], [20.0, 2.0, 3.0]])
    correct = torch.tensor([[True, False, False], [True, False, True]])
    right, wrong = length_by_correctness(lengths, correct)
    assert right == pytest.approx((10 + 20 + 3) / 3) and wrong == pytest.approx((4 + 6 + 2) / 3)


def test_length_by_correctness_is_nan_for_a_kind_with_no_response():
    right, wrong = length_by_correctness(torch.tensor([[3.0, 5.0]]), torch.tensor([[False, False]]))
    assert math.isnan(right) and wrong == 4.0


def test_length_by_correctness_names_the_shapes():
    with pytest.raises(ValueError, match=r"correct must have the shape of lengths \[batch, trial\] = \[1, 2\]"):
        length_by_correctness(torch.ones(1, 2), torch.ones(2, 1, dtype=torch.bool))


# ---- cannot_learn ------------------------------------------------------------------------------------------


def test_a_run_with_signal_gets_no_verdict():
    assert cannot_learn([rec(1), rec(2, zero_variance_groups=1.0)]) is None
    assert cannot_learn([]) is None


def test_every_response_truncated_is_said_first_with_the_budget():
    window = [rec(s, reward=0.0, zero_variance_groups=1.0, truncated=1.0) for s in (6, 7, 8)]
    line = cannot_learn(window, budget=48)
    assert line.startswith("cannot learn (steps 6-8): every response hit the 48-token budget")
    assert "--max-new-tokens" in line
    # one response that ended on its own is enough to read answers
    assert cannot_learn([*window[:2], rec(8, reward=0.0, zero_variance_groups=1.0, truncated=0.98)]).startswith(
        "cannot learn (steps 6-8): every reward was 0"
    )


def test_every_reward_zero_points_at_a_warm_start():
    line = cannot_learn([rec(1, reward=0.0, zero_variance_groups=1.0)])
    assert line.startswith("cannot learn (step 1): every reward was 0") and "--sft-steps" in line


def test_equal_rewards_in_every_group_mean_no_gradient_unless_solved():
    window = [rec(1, reward=0.2, zero_variance_groups=1.0), rec(2, reward=0.4, zero_variance_groups=1.0)]
    line = cannot_learn(window, max_reward=1.2)
    assert line.startswith("cannot learn (steps 1-2): in every group all responses earned the same reward (mean 0.30)")
    solved = [rec(1, reward=1.2, zero_variance_groups=1.0), rec(2, reward=1.2, zero_variance_groups=1.0)]
    assert cannot_learn(solved, max_reward=1.2) is None
    assert cannot_learn(solved) is not None  # without the best reward it cannot tell solved from stuck


# ---- what the loop logs ----------------------------------------------------------------------------------


class _Task:
    """is_correct: the answer is "ok"."""

    def is_correct(self, prompts, answers):
        return torch.tensor([[a == "ok" for a in group] for group in answers])


def test_step_metrics_log_truncation_and_length_by_correctness_when_responses_end_on_their_own():
    mask = torch.tensor([[[1.0, 1, 0, 0], [1, 1, 1, 1]], [[1, 0, 0, 0], [1, 1, 1, 1]]])
    cut = torch.tensor([[False, True], [False, True]])
    rollout = Rollout(torch.zeros(2, 2, 4, dtype=torch.long), mask, [["ok", "no"], ["ok", "no"]], 4, cut)
    m = step_metrics(_Task(), [0, 1], rollout, torch.tensor([[1.0, 0.0], [1.0, 0.0]]), UPDATE, kl=False, kl_old=False)
    assert m["truncated"] == 0.5 and m["length_correct"] == 1.5 and m["length_wrong"] == 4.0
    without = Rollout(rollout.tokens, mask, rollout.answers, 4)  # no end of their own: nothing to say
    m = step_metrics(_Task(), [0, 1], without, torch.zeros(2, 2), UPDATE, kl=False, kl_old=False)
    assert not {"truncated", "length_correct", "length_wrong"} & set(m)


def test_rollout_checks_the_shape_of_truncated():
    with pytest.raises(ValueError, match=r"Rollout.truncated must have shape \[batch, trial\] = \[2, 3\]"):
        Rollout(torch.zeros(2, 3, 4, dtype=torch.long), None, None, 4, torch.zeros(3, 2, dtype=torch.bool))


def test_a_causal_lm_run_logs_truncation_lengths_and_pass_at_k():
    task = TextSortTask(n_numbers=2, max_value=3, n_heldout=4)
    policy = make_tiny_lm(seed=0, max_new_tokens=6, hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128)
    config = TrainConfig(
        task=task,
        algo=lm_algorithm("grpo"),
        steps=2,
        prompts_per_step=4,
        group_size=4,
        learning_rate=1e-3,
        eval_every=1,
        eval_prompts=4,
        eval_sampled=False,
        pass_k=4,
        pass_k_prompts=3,
        progress=False,
    )
    _, h = train(config, policy)
    for r in h.records:
        assert 0.0 <= r["truncated"] <= 1.0
        lengths = [r[k] for k in ("length_correct", "length_wrong") if not math.isnan(r[k])]
        assert lengths and all(1 <= x <= 6 for x in lengths)  # at least one kind present, within the budget
    for e in h.evals:
        assert 0.0 <= e["greedy_truncated"] <= 1.0
        assert 0.0 <= e["pass@1"] <= e["pass@4"] <= 1.0


def test_pass_at_k_at_evaluation_counts_what_the_samples_got_right():
    """A toy sorting policy trained to near-perfect: pass@1 is the sampled accuracy, pass@8 at least as high."""
    task = SortingTask(vocab_size=3, length=2)
    _, h = train(
        TrainConfig(task=task, steps=60, prompts_per_step=16, group_size=8, eval_every=0, eval_prompts=64,
                    pass_k=8, pass_k_prompts=64, progress=False)
    )  # fmt: skip
    last = h.evals[-1]
    assert last["pass@8"] >= last["pass@1"] >= 0.5
    assert abs(last["pass@1"] - last["sampled_exact"]) < 0.25  # two estimates of one quantity from 64 prompts


def test_a_run_that_cannot_learn_says_so_once():
    """Exact-match reward on sorting 6 numbers from 0..9: a random policy never samples a sorted answer."""
    task = SortingTask(vocab_size=10, length=6, reward="exact_match")
    config = TrainConfig(task=task, steps=10, prompts_per_step=8, group_size=4, eval_every=0, eval_prompts=8,
                         stall_window=5, progress=False)  # fmt: skip
    _, h = train(config)
    assert h.notes == ["cannot learn (steps 1-5): " + cannot_learn([rec(1, 0.0, 1.0)]).split(": ", 1)[1]]
    quiet = TrainConfig(task=task, steps=10, prompts_per_step=8, group_size=4, eval_every=0, eval_prompts=8,
                        stall_window=0, progress=False)  # fmt: skip
    assert train(quiet)[1].notes == []


def test_a_second_window_with_the_same_kind_of_verdict_prints_nothing(capsys):
    """Windows 1-2 and 3-4 both have every group equal, at other mean rewards: one line, kept once. A window of
    another kind (every reward 0) is said too."""
    from minirl.history import History
    from minirl.train import _say_if_stuck

    h = History()
    config = TrainConfig(task=SortingTask(vocab_size=3, length=2), stall_window=2, progress=False)
    for step, reward in enumerate([0.2, 0.4, 0.6, 0.6, 0.0, 0.0], start=1):
        h.log(**rec(step, reward=reward, zero_variance_groups=1.0))
        _say_if_stuck(h, config, budget=2)
    printed = [line for line in capsys.readouterr().out.splitlines() if line]
    assert printed == h.notes and len(h.notes) == 2
    assert h.notes[0].startswith(
        "cannot learn (steps 1-2): in every group all responses earned the same reward (mean 0.30)"
    )
    assert h.notes[1].startswith("cannot learn (steps 5-6): every reward was 0")


@pytest.mark.parametrize("knob", ["pass_k", "stall_window"])
def test_train_config_names_a_negative_knob(knob):
    with pytest.raises(ValueError, match=f"{knob} must be an int >= 0; got -1"):
        TrainConfig(**{knob: -1})

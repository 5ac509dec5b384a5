"""The loop generalised to any Policy: the toy runs are unchanged, and micro-batches give the whole batch's gradient."""

import dataclasses

import pytest
import torch

from minirl import ALGORITHMS, TrainConfig, make_model, train
from minirl.protocols import (
    FormatTask,
    HeldOutTask,
    MaskedTask,
    Policy,
    ProcessRewardTask,
    Rollout,
    Task,
    ToyTask,
    UnseenAnswersTask,
)
from minirl.toy.policy import ToyPolicy, as_policy
from minirl.train import policy_update, rollout_log_probs
from tests import goldens
from tests.goldens import CASES
from tests.tolerances import assert_close_f32
from toy_envs import SortingTask, VariableLengthSortingTask
from toy_envs.text_tasks import TextSortTask


@pytest.mark.parametrize("case", sorted(CASES))
def test_seeded_toy_runs_reproduce_their_golden_histories(case):
    """The goldens (tests/goldens.py says what each records): the fixed-length runs were recorded with the toy-only
    loop (commit be307dd), so the generalised loop gives the same numbers; the variable-length runs once a
    response's entropy counted its real tokens only. Both up to the drift of float32 rounding along 30 steps.

    A run is a chain: each step's rounding (a few ulps, another CPU's kernels round differently) moves the
    weights the next step starts from, and Adam, which divides each update by its running size, passes the
    relative differences on undamped. Measured against the record with other kernels forced
    (ATEN_CPU_CAPABILITY=default, MKL_CBWR=COMPATIBLE or AVX2): up to 7e-6 relative by steps 20-30, and 2e-7
    absolute for values under 0.05. Allowed: rel 1e-4 and abs 1e-5 (the metrics are means of terms of size
    ~0.1-1), over 10x that. Any change to the algorithm moves these numbers by 1e-3 or more within a few
    steps, and a different sample (a discrete draw) moves the mean reward of 128 responses by ~1e-2."""
    golden = goldens.load(case)
    h = goldens.toy_history(case)
    for kind, got in (("records", h.records), ("evals", h.evals)):
        want = golden[kind]
        assert len(got) == len(want)
        for step, (w, g) in enumerate(zip(want, got)):
            for key, value in w.items():
                assert g[key] == pytest.approx(value, rel=1e-4, abs=1e-5), (kind, step, key)


def test_toy_policy_implements_the_contract_and_train_returns_the_bare_model():
    task = SortingTask(vocab_size=5, length=3)
    model = make_model(task)
    policy = as_policy(model)
    assert isinstance(policy, ToyPolicy) and isinstance(policy, Policy) and as_policy(policy) is policy
    prompts = task.sample_prompts(4, torch.Generator().manual_seed(0))
    rollout = policy.sample(prompts, 3, temperature=1.0, generator=torch.Generator().manual_seed(1))
    assert rollout.tokens.shape == (4, 3, 3) and rollout.mask is None and rollout.max_length == 3
    scores = policy.score(prompts, rollout, temperature=1.0)
    assert scores.log_probs.shape == (4, 3, 3) and scores.entropy.shape == (4, 1, 3)
    assert policy.greedy(prompts).tokens.shape == (4, 1, 3)
    trained, _ = train(TrainConfig(task=task, steps=2, eval_every=0, eval_prompts=10, progress=False), model)
    assert trained is model


def _grads(policy) -> torch.Tensor:
    return torch.cat([p.grad.flatten() for p in policy.parameters()])


def _update_grad(policy, algo, prompts, rollout, old, advantages, ref, micro_batch_size):
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.0)  # leaves the weights, keeps .grad
    metrics = policy_update(
        policy,
        optimizer,
        algo,
        prompts,
        rollout,
        advantages,
        old_log_probs=old,
        ref_log_probs=ref,
        max_grad_norm=None,
        micro_batch_size=micro_batch_size,
    )
    return _grads(policy), metrics


def micro_batch_case(policy, prompts, group_size=4, seed=0):
    """A batch with ratios away from 1 (so the clip is active), a reference, and random advantages."""
    gen = torch.Generator().manual_seed(seed)
    rollout = policy.sample(prompts, group_size, temperature=1.0, generator=gen)
    n = rollout.tokens.shape[0]
    old = rollout_log_probs(policy, prompts, rollout) + 0.3 * torch.randn(rollout.tokens.shape, generator=gen)
    ref = old - 0.2 * torch.randn(rollout.tokens.shape, generator=gen)
    advantages = torch.randn(n, group_size, generator=gen)
    return rollout, old, ref, advantages


@pytest.mark.parametrize("aggregation", ["sequence_mean", "token_mean", "constant"])
@pytest.mark.parametrize("ratio_level", ["token", "sequence"])
def test_micro_batches_give_the_whole_batch_gradient_on_responses_of_different_lengths(aggregation, ratio_level):
    task = VariableLengthSortingTask(vocab_size=6, max_length=4)
    policy = ToyPolicy(make_model(task, seed=1))
    prompts = task.sample_prompts(10, torch.Generator().manual_seed(2))
    rollout, old, ref, advantages = micro_batch_case(policy, prompts)
    rollout = Rollout(rollout.tokens, task.response_mask(rollout.tokens), rollout.answers, rollout.max_length)
    lengths = rollout.mask.sum(-1)
    assert lengths.min() < lengths.max()  # the reweighting trap needs responses of different lengths
    algo = ALGORITHMS["grpo"].with_(
        aggregation=aggregation, ratio_level=ratio_level, kl_coef=0.1, entropy_coef=0.1, inner_epochs=1
    )
    whole, m_whole = _update_grad(policy, algo, prompts, rollout, old, advantages, ref, None)
    for micro in (1, 3, 4):
        part, m_part = _update_grad(policy, algo, prompts, rollout, old, advantages, ref, micro)
        # The same float32 sums in another order (tests/tolerances.py). Each gradient entry adds the rows of
        # 10 x 4 responses of 4 tokens (160) and crosses, forward and backward, the toy model's width-32 dot
        # products at 4 positions and its 7-token softmax: ~440 terms, counted up to 500 (89 eps of the scale;
        # measured: 4 eps). The metrics average per-token terms of size ~1 (ratios near 1 times normal
        # advantages): their rounding is relative to 1 even where a mean cancels to ~0.
        assert_close_f32(part, whole, terms=500)
        for key in ("loss", "pg_loss", "kl", "clip_frac_low", "clip_frac_high", "ratio_mean", "entropy", "ratio_max"):
            assert_close_f32(m_part[key], m_whole[key], terms=500, scale=max(1.0, abs(m_whole[key])), msg=key)
    assert m_whole["clip_frac_low"] + m_whole["clip_frac_high"] > 0  # the clip took part


def test_normalising_each_micro_batch_by_its_own_tokens_would_change_the_gradient():
    """The trap the whole-batch counts avoid: per-slice token_mean reweights tokens (the test above can fail)."""
    from minirl.losses import aggregate

    per_token = torch.tensor([[[1.0, 1.0, 1.0, 1.0]], [[5.0, 0.0, 0.0, 0.0]]])
    mask = torch.tensor([[[1.0, 1.0, 1.0, 1.0]], [[1.0, 0.0, 0.0, 0.0]]])
    whole = aggregate(per_token, mask, "token_mean")
    per_slice = sum(aggregate(per_token[i : i + 1], mask[i : i + 1], "token_mean") for i in range(2)) / 2
    global_counts = sum(aggregate(per_token[i : i + 1], mask[i : i + 1], "token_mean", n_tokens=5.0) for i in range(2))
    assert whole == pytest.approx(9 / 5) and global_counts == pytest.approx(9 / 5)
    assert per_slice == pytest.approx(3.0)


def test_train_with_micro_batches_matches_train_without():
    task = VariableLengthSortingTask(vocab_size=6, max_length=4)
    runs = [
        train(
            TrainConfig(
                task=task,
                algo="dr_grpo",
                steps=5,
                prompts_per_step=8,
                group_size=4,
                eval_every=0,
                eval_prompts=50,
                progress=False,
                micro_batch_size=mb,
            )
        )[1]
        for mb in (None, 3)
    ]
    for a, b in zip(runs[0].records, runs[1].records):
        assert b["reward"] == a["reward"]  # the same samples: the same rewards, exactly
        # the drift of float32 rounding along a run, as in test_seeded_toy_runs_reproduce_their_golden_histories
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-4, abs=1e-5)
    for key in ("zero_variance_groups", "gen_seconds", "update_seconds", "tokens_per_second", "response_length"):
        assert len(runs[0][key]) == 5, key
    assert 0.0 <= runs[0]["zero_variance_groups"].min() <= runs[0]["zero_variance_groups"].max() <= 1.0


def test_train_config_resolves_a_preset_name_once_and_for_all():
    config = TrainConfig(algo="dapo")
    assert config.algo is ALGORITHMS["dapo"]
    assert dataclasses.replace(config, steps=3).algo is ALGORITHMS["dapo"]
    assert TrainConfig(algo="clipped", inner_epochs=2).algo == ALGORITHMS["clipped"].with_(inner_epochs=2)
    config.algo = "grpo"
    assert config.algo is ALGORITHMS["grpo"]
    assert TrainConfig().algo is ALGORITHMS["grpo"]
    with pytest.raises(ValueError, match="unknown algorithm 'nope'"):
        TrainConfig(algo="nope")


def test_each_task_declares_the_capabilities_the_loop_uses():
    sorting, variable = SortingTask(vocab_size=5, length=3), VariableLengthSortingTask(vocab_size=6, max_length=4)
    text = TextSortTask(n_numbers=2, max_value=3, n_heldout=4, n_unseen_answers=1)
    for task in (sorting, variable):
        assert isinstance(task, ToyTask) and isinstance(task, ProcessRewardTask) and not isinstance(task, FormatTask)
    assert isinstance(variable, MaskedTask) and not isinstance(sorting, MaskedTask)
    assert all(isinstance(text, c) for c in (Task, FormatTask, HeldOutTask, UnseenAnswersTask))
    assert not any(isinstance(text, c) for c in (ToyTask, ProcessRewardTask, MaskedTask))


def test_a_missing_part_of_a_contract_is_named():
    task = SortingTask(vocab_size=5, length=3)
    model = make_model(task)
    prompts = task.sample_prompts(2, torch.Generator().manual_seed(0))
    rollout = ToyPolicy(model).rollout_from_tokens(torch.zeros(2, 2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match=r"policy must implement .*Policy; .* lacks \[.*'sample'.*ToyPolicy\(model\)"):
        policy_update(
            model, torch.optim.SGD(model.parameters()), ALGORITHMS["grpo"], prompts, rollout, torch.ones(2, 2)
        )
    text = TextSortTask(n_numbers=2, max_value=3, n_heldout=4)
    with pytest.raises(
        TypeError, match=r"task must implement .*ProcessRewardTask.*'grpo_process' rewards each position"
    ):
        TrainConfig(task=text, algo="grpo_process")
    with pytest.raises(TypeError, match=r"config.task .*must implement .*ToyTask; TextSortTask lacks \['n_tokens'"):
        train(TrainConfig(task=text, steps=1, progress=False))
    with pytest.raises(TypeError, match=r"task must implement .*Task; str lacks"):
        TrainConfig(task="sorting")  # type: ignore[arg-type]

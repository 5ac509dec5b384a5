"""The training loop: determinism, learning happens, every preset stays finite (History: test_history.py; the
curves: test_plotting.py)."""

import math

import pytest
import torch

from minirl import (
    ALGORITHMS,
    AlgoConfig,
    TrainConfig,
    evaluate,
    train,
    train_supervised,
)
from tests.tolerances import assert_close_f32
from toy_envs import SortingTask

TASK = SortingTask(vocab_size=5, length=3)


def quick(algo="grpo", seed=0, steps=20, **kw):
    return TrainConfig(
        task=TASK, algo=algo, steps=steps, seed=seed, progress=False, eval_every=10, eval_prompts=200, **kw
    )


TIMINGS = {"wall_time", "gen_seconds", "update_seconds", "tokens_per_second"}


def strip_time(records):
    """The records without their timings; a NaN (a mean over no responses) becomes "nan", so equal runs compare
    equal (NaN != NaN)."""
    return [{k: "nan" if v != v else v for k, v in r.items() if k not in TIMINGS} for r in records]


def test_same_seed_gives_bit_identical_history():
    _, a = train(quick("grpo", seed=3))
    _, b = train(quick("grpo", seed=3))
    _, c = train(quick("grpo", seed=4))
    assert strip_time(a.records) == strip_time(b.records)
    assert strip_time(a.evals) == strip_time(b.evals)
    assert strip_time(a.records) != strip_time(c.records)


def test_grpo_learns_to_sort_three_numbers():
    _, h = train(quick("grpo", steps=150))
    first, last = h.evals[0]["greedy_exact"], h.evals[-1]["greedy_exact"]
    assert first < 0.2  # the random initial policy rarely sorts
    assert last > 0.8, f"greedy exact-match after 150 GRPO steps: {last:.2f}"
    assert h["reward"][-10:].mean() > h["reward"][:10].mean() + 1.0


@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
def test_every_preset_stays_finite_over_20_seeds(algo):
    for seed in range(20):
        _, h = train(
            TrainConfig(
                task=TASK,
                algo=algo,
                steps=6,
                seed=seed,
                progress=False,
                eval_every=0,
                eval_prompts=50,
                prompts_per_step=8,
                group_size=4,
            )
        )
        for r in h.records:
            assert all(math.isfinite(v) for v in r.values()), (algo, seed, r)


def test_history_records_every_metric():
    _, h = train(quick("dapo", steps=5))
    for name in [
        "step",
        "reward",
        "exact_match",
        "loss",
        "kl",
        "clip_frac_low",
        "clip_frac_high",
        "ratio_mean",
        "entropy",
        "grad_norm",
        "wall_time",
    ]:
        assert len(h[name]) == 5, name
    assert h.evals[0]["step"] == 0 and h.evals[-1]["step"] == 5
    assert set(h.evals[0]) >= {"greedy_exact", "sampled_exact", "greedy_position_acc", "sampled_position_acc"}


def test_process_advantages_and_kl_run():
    algo = ALGORITHMS["grpo"].with_(name="grpo_process", advantage_level="token", kl_coef=0.1)
    _, h = train(quick(algo, steps=30))
    assert h["kl"].max() > 0  # π_θ moves away from π_ref, and the KL sees it
    assert h["reward"][-5:].mean() > h["reward"][:5].mean()


def test_max_seconds_stops_early():
    _, h = train(quick("grpo", steps=100_000, max_seconds=0.5))
    assert len(h) < 100_000 and h.evals[-1]["step"] == len(h)


def test_eval_at_end_off_keeps_only_the_periodic_evaluations():
    _, with_end = train(quick("grpo", steps=25))  # eval_every=10: before step 1, at 10 and 20, and after 25
    _, without = train(quick("grpo", steps=25, eval_at_end=False))
    assert [e["step"] for e in with_end.evals] == [0, 10, 20, 25]
    assert [e["step"] for e in without.evals] == [0, 10, 20]
    assert strip_time(without.records) == strip_time(with_end.records)  # evaluating draws from its own generator
    _, none = train(TrainConfig(task=TASK, steps=3, progress=False, eval_every=0, eval_at_end=False))
    assert none.evals == [] and len(none) == 3


def test_bad_configs():
    with pytest.raises(ValueError, match="unknown algorithm 'ppo2'"):
        TrainConfig(algo="ppo2")
    with pytest.raises(ValueError, match="group_size must be >= 2; got 1"):
        TrainConfig(algo="grpo", group_size=1)
    TrainConfig(algo="naive", group_size=1)  # plain rewards need no group
    with pytest.raises(ValueError, match="steps must be a positive int; got 0"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="clipping needs the importance ratio"):
        AlgoConfig("x", importance_ratio=False, clip_eps_low=0.2)
    with pytest.raises(ValueError, match=r"unknown AlgoConfig field\(s\) \['kl'\]"):
        ALGORITHMS["grpo"].with_(kl=0.1)


def test_evaluate_perfect_and_random_policies():
    class Oracle(torch.nn.Module):
        def forward(self, prompts):
            return torch.nn.functional.one_hot(prompts.sort(-1).values, 5).float() * 50

    ev = evaluate(Oracle(), TASK, 300)
    assert ev["greedy_exact"] == 1.0 and ev["sampled_exact"] == 1.0 and ev["greedy_position_acc"] == 1.0

    class Uniform(torch.nn.Module):
        def forward(self, prompts):
            return torch.zeros(prompts.shape[0], 3, 5)

    ev = evaluate(Uniform(), TASK, 4000)
    assert ev["sampled_position_acc"] == pytest.approx(1 / 5, abs=0.02)


def test_supervised_reaches_the_ceiling_quickly():
    _, h = train_supervised(TASK, steps=300, batch_size=64, learning_rate=0.01)
    assert h.evals[-1]["greedy_exact"] > 0.95


def test_supervised_periodic_evaluation_and_demonstrations():
    wrong_middle = lambda p: TASK.sorted_responses(p).index_fill(1, torch.tensor([1]), 0)  # noqa: E731
    _, h = train_supervised(
        TASK,
        steps=60,
        batch_size=32,
        learning_rate=0.01,
        eval_every=25,
        eval_prompts=200,
        demonstrations=wrong_middle,
        label="imitate",
    )
    assert [e["step"] for e in h.evals] == [0, 25, 50, 60] and h.label == "imitate"
    assert h.evals[0]["greedy_exact"] < 0.2  # an untrained model
    # imitating answers whose middle token is always 0: right only where the sorted middle is 0 (~10% of prompts)
    assert h.evals[-1]["greedy_exact"] < 0.25 and h.evals[-1]["greedy_position_acc"] > 0.5
    with pytest.raises(ValueError, match="eval_every must be >= 0"):
        train_supervised(TASK, steps=5, batch_size=4, eval_every=-1)


def test_policy_update_is_the_loops_inner_step():
    """policy_update on a batch moves the policy as train() does: more mass on the better response."""
    from minirl import ToyPolicy, compute_log_probs, make_model, policy_update

    model = make_model(TASK, seed=0)
    policy = ToyPolicy(model)
    prompts = torch.tensor([[2, 0, 1]])
    responses = torch.tensor([[[0, 1, 2], [2, 1, 0]]])  # right, wrong
    advantages = torch.tensor([[1.0, -1.0]])
    with torch.no_grad():
        old = compute_log_probs(prompts, responses, model)
    algo = ALGORITHMS["grpo"].with_(kl_coef=0.0, entropy_coef=0.0, inner_epochs=3)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    out = policy_update(
        policy, optimizer, algo, prompts, policy.rollout_from_tokens(responses), advantages, old_log_probs=old
    )
    with torch.no_grad():
        new = compute_log_probs(prompts, responses, model)
    ratio = (new - old).sum(-1).exp()[0]  # sequence ratios π_new / π_old
    assert ratio[0] > 1.05 and ratio[1] < 0.95
    assert out["entropy"] == pytest.approx(math.log(5), abs=0.05)  # near-uniform initial policy over 5 tokens
    assert set(out) >= {"loss", "grad_norm", "kl", "clip_frac_low", "clip_frac_high", "ratio_mean", "ratio_max"}
    assert out["ratio_mean"] != 1.0  # metrics are those of the last inner step, after the first moved π_θ


def test_policy_update_scores_pi_old_at_its_first_inner_step():
    """Without old_log_probs, π_old is scored before the first update and held for the later inner steps: the
    very update that passing it gives, bit for bit, and the ratio (so the clip) acts from the second step on."""
    from minirl import ToyPolicy, compute_deltas, make_model, policy_update, rollout_log_probs

    prompts = TASK.sample_prompts(16, torch.Generator().manual_seed(0))
    algo = ALGORITHMS["clipped"]  # 4 inner steps, ε = 0.2
    runs = []
    for given in (True, False):
        policy = ToyPolicy(make_model(TASK, seed=0))
        rollout = policy.sample(prompts, 4, temperature=1.0, generator=torch.Generator().manual_seed(1))
        advantages = compute_deltas(TASK.rewards(prompts, rollout.tokens), "normalized_rewards")
        old = rollout_log_probs(policy, prompts, rollout) if given else None
        optimizer = torch.optim.Adam(policy.parameters(), lr=0.1)
        metrics = policy_update(policy, optimizer, algo, prompts, rollout, advantages, old_log_probs=old)
        runs.append((metrics, torch.cat([p.detach().flatten() for p in policy.parameters()])))
    (given_metrics, given_weights), (own_metrics, own_weights) = runs
    assert own_metrics == given_metrics and torch.equal(own_weights, given_weights)
    assert own_metrics["ratio_max"] > 1.2 and own_metrics["clip_frac_low"] + own_metrics["clip_frac_high"] > 0


def test_kl_old_is_k3_between_the_sampler_and_the_updated_policy():
    from minirl import ToyPolicy, compute_log_probs, make_model, policy_update

    model = make_model(TASK, seed=0)
    policy = ToyPolicy(model)
    prompts = torch.tensor([[2, 0, 1], [4, 4, 0]])
    responses = torch.tensor([[[0, 1, 2], [2, 1, 0]], [[0, 4, 4], [4, 4, 0]]])
    rollout = policy.rollout_from_tokens(responses)
    advantages = torch.tensor([[1.0, -1.0], [1.0, -1.0]])
    with torch.no_grad():
        old = compute_log_probs(prompts, responses, model)
    algo = ALGORITHMS["unclipped"].with_(inner_epochs=3)
    out = policy_update(
        policy,
        torch.optim.Adam(model.parameters(), lr=0.01),
        algo,
        prompts,
        rollout,
        advantages,
        old_log_probs=old,
        measure_kl_old=True,
    )
    with torch.no_grad():
        log_ratio = compute_log_probs(prompts, responses, model) - old  # log π_θ / π_old
    want = float((log_ratio.exp() - 1 - log_ratio).mean())
    assert want > 1e-3
    # k3 = ρ − 1 − log ρ cancels terms of size 1 down to ~1e-3, so its rounding is relative to 1, not to the KL
    # (tests/tolerances.py): 12 tokens, and the toy model's width-32 dot products at 3 positions, forward
    assert_close_f32(out["kl_old"], want, terms=12 + 32 * 3 + 5, scale=1.0)
    assert "kl_old" not in policy_update(
        policy, torch.optim.Adam(model.parameters()), algo, prompts, rollout, advantages, old_log_probs=old
    )


def test_kl_is_measured_when_beta_is_zero_and_left_out_when_not_measured():
    _, h = train(quick("clipped", steps=15))  # β = 0: π_ref is a frozen initial policy, kept to measure
    assert h["kl"][0] > 0 and h["kl"][-1] > h["kl"][0]  # the policy drifts further from where it started
    assert (h["kl_old"] > 0).all() and h["samples"][-1] == 15 * 64 * 16
    assert h.evals[-1]["samples"] == 15 * 64 * 16
    _, off = train(quick("clipped", steps=3, measure_kl=False))
    assert "kl" not in off.metrics and "kl_old" not in off.metrics  # absent, never a flat 0
    _, grpo = train(quick("grpo", steps=3, measure_kl=False))
    assert "kl" in grpo.metrics  # β > 0 measures its own penalty anyway


def test_entropy_counts_real_tokens_only():
    from minirl.update import _mean_entropy

    # one distribution per position shared by the group [batch 1, 1, pos 3]; responses end after 1 and 3 tokens
    entropy = torch.tensor([[[1.0, 2.0, 4.0]]])
    mask = torch.tensor([[[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]]])
    assert float(_mean_entropy(entropy, mask, None)) == pytest.approx((1 + 1 + 2 + 4) / 4)
    assert float(_mean_entropy(entropy, None, None)) == pytest.approx(7 / 3)

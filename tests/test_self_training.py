"""Learning from your own samples (minirl.self_training): the expert-iteration batch and online DPO's pairs,
on hand-made groups, and their refusals of bad input."""

import pytest
import torch

from minirl import ALGORITHMS, AlgoConfig, ToyPolicy, make_model
from minirl.advantages import compute_deltas
from minirl.lm import make_tiny_lm
from minirl.lm.recipes import RECIPES, lm_algorithm
from minirl.losses import dpo_loss, online_dpo_loss, sft_loss
from minirl.self_training import expert_iteration_batch, group_preference_pairs
from minirl.update import policy_update, rollout_log_probs, update_mask
from tests.tolerances import assert_close_f32
from toy_envs import SortingTask

PROMPTS = ["a", "b", "c"]
REPLIES = [["a1", "a2", "a3"], ["b1", "b2", "b3"], ["c1", "c2", "c3"]]
REWARDS = torch.tensor([[1.2, 0.2, 1.2], [0.2, 0.2, 0.0], [0.0, 1.0, 1.2]])


def test_expert_iteration_keeps_the_accepted_replies_with_their_prompts():
    prompts, replies = expert_iteration_batch(PROMPTS, REPLIES, REWARDS, threshold=1.0)
    assert prompts == ["a", "a", "c", "c"] and replies == [["a1"], ["a3"], ["c2"], ["c3"]]
    prompts, replies = expert_iteration_batch(PROMPTS, REPLIES, REWARDS, threshold=1.0, per_prompt=1)
    assert prompts == ["a", "c"] and replies == [["a1"], ["c2"]]
    assert expert_iteration_batch(PROMPTS, REPLIES, REWARDS, threshold=2.0) == ([], [])


def test_expert_iteration_refuses_bad_input():
    with pytest.raises(ValueError, match=r"rewards must be a float tensor \[prompt, group\]"):
        expert_iteration_batch(PROMPTS, REPLIES, REWARDS[0], threshold=1.0)
    with pytest.raises(ValueError, match="one entry per row of rewards"):
        expert_iteration_batch(PROMPTS[:2], REPLIES, REWARDS, threshold=1.0)
    with pytest.raises(ValueError, match="must hold 3 replies"):
        expert_iteration_batch(PROMPTS, [g[:2] for g in REPLIES], REWARDS, threshold=1.0)
    with pytest.raises(ValueError, match="per_prompt must be an int >= 1 or None"):
        expert_iteration_batch(PROMPTS, REPLIES, REWARDS, threshold=1.0, per_prompt=0)


def test_online_dpo_pairs_the_best_and_the_worst_of_each_group():
    chosen, rejected, valid = group_preference_pairs(REWARDS)
    # ties: the first of the best (a1 over a3), the last of the worst (b3 is the only 0.0; a2 the only 0.2)
    assert chosen.tolist() == [0, 0, 2] and rejected.tolist() == [1, 2, 0] and valid.tolist() == [True, True, True]
    equal = torch.tensor([[0.2, 0.2, 0.2], [1.0, 0.0, 1.0]])
    chosen, rejected, valid = group_preference_pairs(equal)
    assert valid.tolist() == [False, True] and (chosen[1].item(), rejected[1].item()) == (0, 1)


def test_online_dpo_pairs_refuse_bad_input():
    with pytest.raises(ValueError, match="group >= 2"):
        group_preference_pairs(torch.ones(3, 1))
    with pytest.raises(ValueError, match="finite"):
        group_preference_pairs(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match=r"float tensor \[prompt, group\]"):
        group_preference_pairs(torch.ones(2, 3, dtype=torch.long))


# ---- the same ideas as knobs of the one training loop (compute_deltas, AlgoConfig, policy_update) --------------


def test_accepted_and_best_vs_worst_deltas():
    accepted = compute_deltas(REWARDS, "accepted", accept_reward=1.0)
    assert accepted.tolist() == [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    pairs = compute_deltas(REWARDS, "best_vs_worst")
    assert pairs.tolist() == [[1.0, -1.0, 0.0], [1.0, 0.0, -1.0], [-1.0, 0.0, 1.0]]
    equal = compute_deltas(torch.full((2, 4), 0.7), "best_vs_worst")
    assert torch.equal(equal, torch.zeros(2, 4))  # no preference in the group: no pair, no NaN
    assert compute_deltas(REWARDS[:, :1], "accepted").shape == (3, 1)  # one sample a prompt is enough to filter
    with pytest.raises(ValueError, match="at least 2 responses"):
        compute_deltas(REWARDS[:, :1], "best_vs_worst")


def _toy_batch(seed=0):
    task = SortingTask(vocab_size=5, length=3)
    prompts = task.sample_prompts(6, torch.Generator().manual_seed(seed))
    responses = torch.randint(0, 5, (6, 4, 3), generator=torch.Generator().manual_seed(seed + 1))
    rewards = torch.randint(0, 3, (6, 4), generator=torch.Generator().manual_seed(seed + 2)).float()
    return task, prompts, responses, rewards


def _grad_after_update(algo, prompts, rollout, advantages, task, ref_log_probs=None, micro_batch_size=None):
    policy = ToyPolicy(make_model(task, seed=0))
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.0)
    metrics = policy_update(
        policy,
        optimizer,
        algo,
        prompts,
        rollout,
        advantages,
        ref_log_probs=ref_log_probs,
        micro_batch_size=micro_batch_size,
    )
    return policy, torch.cat([p.grad.flatten() for p in policy.parameters()]), metrics


def test_expert_iteration_step_is_sft_on_the_accepted_replies():
    """The expert_iteration preset's update equals sft_loss on the accepted replies alone (the rejected ones
    leave the batch, they do not dilute the mean), and micro-batches give the same gradient."""
    task, prompts, responses, rewards = _toy_batch()
    algo = ALGORITHMS["expert_iteration"]
    advantages = compute_deltas(rewards, algo.delta_mode, accept_reward=algo.accept_reward)
    assert 0 < advantages.sum() < advantages.numel()
    policy = ToyPolicy(make_model(task, seed=0))
    rollout = policy.rollout_from_tokens(responses)
    mask = update_mask(algo, rollout, advantages)
    assert mask is not None and torch.equal(mask.sum(dim=-1), 3 * advantages)  # whole replies kept or dropped
    _, grad, _ = _grad_after_update(algo, prompts, rollout, advantages, task)
    # by hand: the accepted (prompt, reply) pairs, one demonstration each, the SFT mean over their tokens
    reference = ToyPolicy(make_model(task, seed=0))
    log_probs = reference.score(prompts, rollout).log_probs  # [batch, trial, pos]
    kept = advantages.bool()
    loss = sft_loss(log_probs[kept][:, None, :])
    loss.backward()
    expected = torch.cat([p.grad.flatten() for p in reference.parameters()])
    assert expected.abs().sum() > 0
    # the same sums in another order: ~300 terms, as in tests/test_algorithms.py's toy-model gradients
    assert_close_f32(grad, expected, terms=300)
    _, micro, _ = _grad_after_update(algo, prompts, rollout, advantages, task, micro_batch_size=2)
    assert_close_f32(micro, expected, terms=300)


def test_a_step_with_no_accepted_reply_teaches_nothing():
    task, prompts, responses, _ = _toy_batch()
    policy = ToyPolicy(make_model(task, seed=0))
    advantages = torch.zeros(6, 4)
    _, grad, metrics = _grad_after_update(
        ALGORITHMS["expert_iteration"], prompts, policy.rollout_from_tokens(responses), advantages, task
    )
    assert torch.equal(grad, torch.zeros_like(grad)) and metrics["loss"] == 0.0


def test_online_dpo_loss_is_dpo_loss_on_each_groups_pair():
    torch.manual_seed(0)
    log_probs = torch.randn(3, 3, 5, requires_grad=True)
    ref = torch.randn(3, 3, 5)
    mask = torch.ones(3, 3, 5)
    mask[:, :, 4] = 0  # a padded last position
    pairs = compute_deltas(torch.tensor([[1.0, 0.0, 0.5], [0.2, 0.2, 0.2], [0.0, 1.0, 1.0]]), "best_vs_worst")
    loss, metrics = online_dpo_loss(log_probs, log_probs.detach(), ref, pairs, mask, beta=0.3)
    seq, ref_seq = (log_probs * mask).sum(-1), (ref * mask).sum(-1)
    # group 0: w = 0, l = 1; group 1 has no pair; group 2: w = 1 (first best), l = 0
    expected, *_ = dpo_loss(
        torch.stack([seq[0, 0], seq[2, 1]]),
        torch.stack([seq[0, 1], seq[2, 0]]),
        torch.stack([ref_seq[0, 0], ref_seq[2, 1]]),
        torch.stack([ref_seq[0, 1], ref_seq[2, 0]]),
        beta=0.3,
    )
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert metrics["pg_loss"] == pytest.approx(loss.item(), rel=1e-6)
    with pytest.raises(ValueError, match=r"beta \(kl_coef\) must be > 0"):
        online_dpo_loss(log_probs, log_probs.detach(), ref, pairs, mask, beta=0.0)
    with pytest.raises(ValueError, match=r"advantages must be \[batch, trial\]"):
        online_dpo_loss(log_probs, log_probs.detach(), ref, pairs[:2], mask, beta=0.3)


def test_online_dpo_against_a_fresh_reference_is_a_policy_gradient_on_the_pair():
    """With π_ref = π_θ the margin is 0 and ∇L = −(β/2) · mean over pairs of (∇ log π(y_w) − ∇ log π(y_l)): the
    online_dpo preset's first step of each round is a pairwise policy gradient. Micro-batches: the same."""
    task, prompts, responses, rewards = _toy_batch()
    algo = ALGORITHMS["online_dpo"]
    pairs = compute_deltas(rewards, "best_vs_worst")
    n_pairs = int((pairs != 0).any(dim=1).sum())
    assert 0 < n_pairs
    policy = ToyPolicy(make_model(task, seed=0))
    rollout = policy.rollout_from_tokens(responses)
    ref = rollout_log_probs(policy, prompts, rollout)
    _, grad, metrics = _grad_after_update(algo, prompts, rollout, pairs, task, ref_log_probs=ref)
    reference = ToyPolicy(make_model(task, seed=0))
    seq = reference.score(prompts, rollout).log_probs.sum(-1)  # [batch, trial]
    (-(algo.kl_coef / 2) * (seq * pairs).sum() / n_pairs).backward()
    expected = torch.cat([p.grad.flatten() for p in reference.parameters()])
    assert_close_f32(grad, expected, terms=300)
    assert metrics["pair_accuracy"] == 0.0  # margin exactly 0: no pair is "right" yet
    _, micro, _ = _grad_after_update(algo, prompts, rollout, pairs, task, ref_log_probs=ref, micro_batch_size=4)
    assert_close_f32(micro, expected, terms=300)
    with pytest.raises(ValueError, match="online DPO needs ref_log_probs"):
        _grad_after_update(algo, prompts, rollout, pairs, task)


def test_the_new_presets_and_their_refusals():
    assert ALGORITHMS["expert_iteration"].changed_knobs(ALGORITHMS["naive"]).keys() == {"delta_mode", "aggregation"}
    assert set(ALGORITHMS["online_dpo"].changed_knobs(ALGORITHMS["naive"])) == {
        "objective",
        "delta_mode",
        "kl_coef",
        "ref_refresh_every",
    }
    with pytest.raises(ValueError, match="objective 'dpo' learns from the best_vs_worst pairs"):
        AlgoConfig("x", objective="dpo", kl_coef=0.1)
    with pytest.raises(ValueError, match="objective must be one of"):
        AlgoConfig("x", objective="ppo")
    # a language-model recipe gives GRPO its KL leash, but online DPO keeps its own β and reference refresh
    assert lm_algorithm("online_dpo").kl_coef == 0.1 and lm_algorithm("online_dpo").ref_refresh_every == 5
    assert RECIPES["pretrained"].algorithm("online_dpo").kl_coef == 0.1
    assert RECIPES["pretrained"].algorithm("expert_iteration").kl_coef == RECIPES["pretrained"].kl_coef


def test_expert_iteration_step_on_a_language_model_is_sft_on_the_accepted_replies():
    """The same equality on a causal LM (the tiny Llama), replies of different lengths, one accepted per group:
    the loop's gradient (the rejected replies dropped) against sft_loss on expert_iteration_batch's batch."""
    prompts = ["sort 3 1 2", "sort 9 7"]
    replies = [["1, 2, 3", "3, 2", "1 2 3 4"], ["7, 9", "9", "7,9"]]
    rewards = torch.tensor([[1.2, 0.2, 0.0], [0.0, 0.2, 1.2]])
    algo = ALGORITHMS["expert_iteration"]
    grads = []
    for by_hand in (True, False):
        policy = make_tiny_lm(seed=0, max_new_tokens=12)
        if by_hand:
            kept_prompts, kept = expert_iteration_batch(prompts, replies, rewards, threshold=algo.accept_reward)
            demos = policy.rollout_from_texts(kept_prompts, kept)
            sft_loss(policy.score(kept_prompts, demos, temperature=1.0).log_probs, demos.mask).backward()
        else:
            rollout = policy.rollout_from_texts(prompts, replies)
            advantages = compute_deltas(rewards, "accepted", accept_reward=algo.accept_reward)
            optimizer = torch.optim.SGD(policy.parameters(), lr=0.0)
            policy_update(policy, optimizer, algo, prompts, rollout, advantages, max_grad_norm=None)
        grads.append(torch.cat([p.grad.flatten() for p in policy.parameters()]))
    assert grads[0].abs().sum() > 0
    # the tiny LM's gradients sum ~6,000 float32 terms each (tests/tolerances.py); the batches differ in padding
    assert_close_f32(grads[1], grads[0], terms=6000)

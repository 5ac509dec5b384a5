"""Learning from your own samples (minirl.self_training): the expert-iteration batch and online DPO's pairs,
on hand-made groups, and their refusals of bad input."""

import pytest
import torch

from minirl.self_training import expert_iteration_batch, group_preference_pairs

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

"""Helpers shared by the tests of the exercise checks (tests/test_checks_*.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minirl
from minirl.best_of_n import majority_vote
from minirl.checks import (
    check_aggregate,
    check_answer_reward,
    check_bellman_backup,
    check_bradley_terry_loss,
    check_completion_log_probs,
    check_compute_deltas,
    check_compute_gae,
    check_compute_log_probs,
    check_compute_loss,
    check_discounted_returns,
    check_dpo_loss,
    check_episode_ids_and_mask,
    check_expert_iteration_batch,
    check_first_eos_mask,
    check_forward,
    check_group_preference_pairs,
    check_grpo_config_kwargs,
    check_kl_estimate,
    check_majority_vote,
    check_maze_reward,
    check_monte_carlo_estimate,
    check_parse_answer,
    check_pass_at_k,
    check_per_position_reward,
    check_policy_loss,
    check_reinforce_loss,
    check_sequence_ratio,
    check_sort_distance_reward,
    check_sort_inclusion_ordering_reward,
    check_split_thinking,
    check_strict_reward,
    check_token_gae,
    check_yes_probability,
    check_zero_variance_fraction,
    reference_bellman_backup,
    reference_maze_reward,
    reference_monte_carlo_estimate,
    reference_parse_answer,
    reference_per_position_reward,
    reference_reinforce_loss,
    reference_sequence_ratio,
    tiny_forward,
)
from minirl.lm import completion_log_probs, first_eos_mask
from minirl.lm.judge import yes_probability
from minirl.lm.trl_bridge import grpo_config_kwargs
from minirl.self_training import expert_iteration_batch, group_preference_pairs
from toy_envs.reasoning import answer_reward, split_thinking, strict_reward
from toy_envs.sorting import sort_distance_reward, sort_inclusion_ordering_reward

REFERENCES = {
    check_sort_distance_reward: sort_distance_reward,
    check_sort_inclusion_ordering_reward: sort_inclusion_ordering_reward,
    check_forward: tiny_forward,
    check_compute_log_probs: minirl.compute_log_probs,
    check_compute_deltas: minirl.compute_deltas,
    check_compute_loss: minirl.compute_loss,
    check_maze_reward: reference_maze_reward,
    check_bellman_backup: reference_bellman_backup,
    check_monte_carlo_estimate: reference_monte_carlo_estimate,
    check_discounted_returns: minirl.discounted_returns,
    check_reinforce_loss: reference_reinforce_loss,
    check_compute_gae: minirl.compute_gae,
    check_kl_estimate: minirl.kl_estimate,
    check_aggregate: minirl.aggregate,
    check_sequence_ratio: reference_sequence_ratio,
    check_policy_loss: minirl.policy_loss,
    check_bradley_terry_loss: minirl.bradley_terry_loss,
    check_dpo_loss: minirl.dpo_loss,
    check_per_position_reward: reference_per_position_reward,
    check_first_eos_mask: first_eos_mask,
    check_completion_log_probs: completion_log_probs,
    check_parse_answer: reference_parse_answer,
    check_zero_variance_fraction: minirl.zero_variance_fraction,
    check_grpo_config_kwargs: grpo_config_kwargs,
    check_split_thinking: split_thinking,
    check_pass_at_k: minirl.pass_at_k,
    check_strict_reward: strict_reward,
    check_answer_reward: answer_reward,
    check_majority_vote: majority_vote,
    check_yes_probability: yes_probability,
    check_expert_iteration_batch: expert_iteration_batch,
    check_group_preference_pairs: group_preference_pairs,
    check_episode_ids_and_mask: minirl.episodes.episode_ids_and_mask,
    check_token_gae: minirl.advantages.token_gae,
}
ALL_CHECKS = list(REFERENCES)  # every exercise check, with the reference it must accept


def run(check, fn, capsys) -> tuple[bool, str]:
    """Run a check; return (result, the printed line), asserting that it printed exactly one line."""
    ok = check(fn)
    out = capsys.readouterr().out
    lines = out.strip().split("\n")
    assert len(lines) == 1, out
    assert "Traceback" not in out
    return ok, lines[0]


def caught(check, fn, capsys, *keywords: str) -> str:
    """Assert that ``check`` rejects ``fn`` with a ✘ line containing every keyword."""
    ok, line = run(check, fn, capsys)
    assert ok is False, line
    assert line.startswith("✘ "), line
    for keyword in keywords:
        assert keyword.lower() in line.lower(), f"{keyword!r} not in: {line}"
    return line


def stub(*args, **kwargs):
    raise NotImplementedError("exercise: replace this line with your code")


FLOAT32_EPS = 2.0**-23  # torch.finfo(torch.float32).eps: one ulp of 1.0


def float32_approx(expected, ulps: int = 16):
    """``pytest.approx`` for a float32 result of a few operations against a float64 constant: within ``ulps``
    float32 ulps of max(|expected|, 1) — relative to the value's scale (never a bare absolute tolerance), with
    the checks' unit scale as the floor so that a result that should be 0 may carry the rounding of its inputs."""
    return pytest.approx(expected, rel=ulps * FLOAT32_EPS, abs=ulps * FLOAT32_EPS)


def nudged(value, ulps: int = 64):
    """``value`` (a tensor, an array, a float, or a tuple / list / dict of them) moved by ``ulps`` float32
    ulps of its scale, max(max |x|, 1), with alternating signs: what computing the same thing in another
    order (sum then divide, einsum for matmul, masked_fill for a product with the mask, float64, one
    thread or many) can do to a result of the checks' small inputs. Integers and booleans stay as they are."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        step = ulps * FLOAT32_EPS * max(float(value.detach().abs().max()) if value.numel() else 0.0, 1.0)
        signs = 1.0 - 2.0 * (torch.arange(value.numel()) % 2).reshape(value.shape).to(value.dtype)
        return value + step * signs
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return nudged(torch.from_numpy(value), ulps).numpy()
    if isinstance(value, float):
        return value + ulps * FLOAT32_EPS * max(abs(value), 1.0)
    if isinstance(value, (tuple, list)):
        return type(value)(nudged(v, ulps) for v in value)
    if isinstance(value, dict):
        return {k: nudged(v, ulps) for k, v in value.items()}
    return value

"""minirl: reinforcement learning for LLMs, built from scratch one idea at a time.

The public API, in the order the course meets it:

- the sorting policy (``minirl.toy``): ``TinyEncoderDecoder`` (``make_model``), ``sample_responses``,
  ``compute_log_probs``; the supervised baseline ``train_supervised``
- the ladder: ``compute_deltas``, ``compute_loss``; groups that teach nothing: ``zero_variance_fraction``
- the general loss: ``policy_loss``, ``kl_estimate``, ``aggregate``
- presets and the loop: ``ALGORITHMS``, ``AlgoConfig``, ``TrainConfig``, ``train`` (its inner
  update ``policy_update``), ``evaluate``; the contracts it checks: ``Policy``, ``Task`` (and the optional
  capabilities of ``minirl.protocols``), ``Rollout``; the toy model as a policy: ``ToyPolicy``
- how often k attempts find a right answer: ``pass_at_k``, ``sampled_pass_at_k`` (``minirl.pass_at_k``)
- a real language model: ``minirl.lm`` (``load_policy``, ``CausalLMPolicy``), ``sft_loss``
- curves: ``History``, ``plot_reward_curves``
- preferences: ``bradley_terry_loss``, ``RewardModel``, ``train_reward_model``, ``dpo_loss`` on
  ``response_log_probs``
"""

from minirl.advantages import compute_deltas, compute_gae, discounted_returns, zero_variance_fraction
from minirl.algorithms import ALGORITHMS, AlgoConfig, get_algorithm
from minirl.evaluate import evaluate
from minirl.history import History
from minirl.losses import aggregate, bradley_terry_loss, compute_loss, dpo_loss, kl_estimate, policy_loss, sft_loss
from minirl.pass_at_k import pass_at_k, sampled_pass_at_k
from minirl.plotting import plot_reward_curves, smooth_centered
from minirl.preferences import (
    PreferencePairs,
    make_preference_pairs,
    pairwise_accuracy,
    response_log_probs,
    train_reward_model,
)
from minirl.protocols import Policy, Rollout, Task, TokenScores
from minirl.toy import (
    LearnedReward,
    RewardModel,
    TinyEncoderDecoder,
    ToyPolicy,
    compute_log_probs,
    greedy_responses,
    make_model,
    sample_responses,
    token_entropy,
)
from minirl.toy.supervised import train_supervised
from minirl.train import TrainConfig, train
from minirl.update import policy_update, rollout_log_probs

__version__ = "0.1.0"

__all__ = [
    "ALGORITHMS",
    "AlgoConfig",
    "History",
    "LearnedReward",
    "PreferencePairs",
    "RewardModel",
    "Policy",
    "Rollout",
    "Task",
    "TinyEncoderDecoder",
    "TokenScores",
    "ToyPolicy",
    "TrainConfig",
    "aggregate",
    "bradley_terry_loss",
    "compute_deltas",
    "compute_gae",
    "compute_log_probs",
    "compute_loss",
    "discounted_returns",
    "dpo_loss",
    "evaluate",
    "get_algorithm",
    "greedy_responses",
    "kl_estimate",
    "make_model",
    "make_preference_pairs",
    "pairwise_accuracy",
    "pass_at_k",
    "plot_reward_curves",
    "policy_loss",
    "policy_update",
    "response_log_probs",
    "rollout_log_probs",
    "sampled_pass_at_k",
    "sample_responses",
    "sft_loss",
    "smooth_centered",
    "token_entropy",
    "train",
    "train_reward_model",
    "train_supervised",
    "zero_variance_fraction",
]

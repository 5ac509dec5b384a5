"""The toy side of the course: the tiny encoder-decoder that sorts numbers, and everything built on it.

- ``model``: ``TinyEncoderDecoder`` (``make_model(task)`` sizes one for a task), and ``RewardModel`` /
  ``LearnedReward``, which read tokens with the same ``encode``;
- ``sampling``: a group of responses per prompt (``sample_responses``, ``greedy_responses``) and their
  per-token log-probabilities (``compute_log_probs``) and entropies (``token_entropy``);
- ``policy``: ``ToyPolicy``, the model as a ``minirl.protocols.Policy``, which is how the one training loop
  (``minirl.train``) sees it;
- ``supervised``: ``train_supervised``, the imitation baseline (import it from ``minirl.toy.supervised`` or
  ``minirl``: it uses the loop's ``evaluate``, and the loop imports this package).
"""

from minirl.toy.model import LearnedReward, RewardModel, TinyEncoderDecoder, encode, make_model
from minirl.toy.policy import ToyPolicy, as_policy
from minirl.toy.sampling import compute_log_probs, gather_log_probs, greedy_responses, sample_responses, token_entropy

__all__ = [
    "LearnedReward",
    "RewardModel",
    "TinyEncoderDecoder",
    "ToyPolicy",
    "as_policy",
    "compute_log_probs",
    "encode",
    "gather_log_probs",
    "greedy_responses",
    "make_model",
    "sample_responses",
    "token_entropy",
]

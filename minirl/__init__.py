"""minirl: reinforcement learning for LLMs, built from scratch one idea at a time.

The public API, in the order the course meets it:

- the sorting policy: ``TinyEncoderDecoder``, ``sample_responses``, ``compute_log_probs``
- the ladder: ``compute_deltas``, ``compute_loss``
- the general loss: ``policy_loss``, ``kl_estimate``, ``aggregate``
- presets and the loop: ``ALGORITHMS``, ``AlgoConfig``, ``TrainConfig``, ``train``, ``evaluate``
- curves: ``History``, ``plot_reward_curves``
"""

from minirl.advantages import compute_deltas, compute_gae, discounted_returns
from minirl.algorithms import ALGORITHMS, AlgoConfig, get_algorithm
from minirl.history import History
from minirl.losses import aggregate, compute_loss, kl_estimate, policy_loss
from minirl.model import TinyEncoderDecoder
from minirl.plotting import plot_reward_curves, smooth_centered
from minirl.sampling import compute_log_probs, greedy_responses, sample_responses, token_entropy
from minirl.train import TrainConfig, evaluate, make_model, train, train_supervised

__version__ = "0.1.0"

__all__ = [
    "ALGORITHMS",
    "AlgoConfig",
    "History",
    "TinyEncoderDecoder",
    "TrainConfig",
    "aggregate",
    "compute_deltas",
    "compute_gae",
    "compute_log_probs",
    "compute_loss",
    "discounted_returns",
    "evaluate",
    "get_algorithm",
    "greedy_responses",
    "kl_estimate",
    "make_model",
    "plot_reward_curves",
    "policy_loss",
    "sample_responses",
    "smooth_centered",
    "token_entropy",
    "train",
    "train_supervised",
]

"""``ToyPolicy``: the tiny encoder-decoder (or any model mapping prompts to per-position logits) as a
``minirl.protocols.Policy``.

The toy model predicts every response position from the prompt alone, so one forward pass gives the
whole distribution π(· | x) = Π_j softmax(logits_j / T): sampling a group is one multinomial draw, and
scoring a group is one forward pass and a gather. Its entropy depends on the prompt only, so
``score`` returns it as ``[batch, 1, pos]``, one value for the whole group.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from minirl.protocols import Rollout, TokenScores
from minirl.toy.sampling import gather_log_probs, sample_responses

__all__ = ["ToyPolicy", "as_policy"]


class ToyPolicy(nn.Module):
    """Wraps ``model: prompts [batch, P] -> logits [batch, pos, vocab]``.

    Args:
        model: the network (``TinyEncoderDecoder``); ``ToyPolicy(model).model is model``.
        response_length: the response length budget (default: the model's ``response_length``, else
            the number of logit positions).
    """

    def __init__(self, model: nn.Module, response_length: int | None = None) -> None:
        super().__init__()
        self.model = model
        self.response_length = (
            response_length if response_length is not None else getattr(model, "response_length", None)
        )

    @property
    def device(self) -> torch.device:
        first = next(self.model.parameters(), None)  # a hand-written model may have no parameters
        return first.device if first is not None else torch.device("cpu")

    def logits(self, prompts: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        """logits[batch, pos, vocab] / T of every response position."""
        logits = self.model(prompts.to(self.device))
        return logits / temperature if temperature != 1.0 else logits

    def _rollout(self, tokens: torch.Tensor) -> Rollout:
        length = self.response_length if self.response_length is not None else tokens.shape[-1]
        return Rollout(tokens=tokens, mask=None, answers=tokens.cpu(), max_length=length)

    def sample(
        self,
        prompts: torch.Tensor,
        group_size: int,
        *,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> Rollout:
        """``group_size`` responses per prompt: tokens ``[batch, trial, pos]`` (no gradient)."""
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0; got {temperature!r}")
        tokens = sample_responses(self.model, prompts.to(self.device), group_size, temperature, generator)
        return self._rollout(tokens)

    def greedy(self, prompts: torch.Tensor) -> Rollout:
        """The argmax token at every position: ``[batch, 1, pos]``."""
        with torch.no_grad():
            return self._rollout(self.logits(prompts).argmax(dim=-1).unsqueeze(1))

    def score(self, prompts: torch.Tensor, rollout: Rollout, *, temperature: float = 1.0) -> TokenScores:
        """log π(y_j | x) ``[batch, trial, pos]`` and H(π(· | x)_j) ``[batch, 1, pos]``, one forward pass."""
        tokens = rollout.tokens
        if tokens.dim() != 3 or tokens.shape[0] != prompts.shape[0]:
            raise ValueError(
                f"rollout.tokens must have shape [batch, trial, pos] with batch = {prompts.shape[0]}; "
                f"got {list(tokens.shape)}"
            )
        log_p = F.log_softmax(self.logits(prompts, temperature), dim=-1)  # [batch, pos, vocab]
        log_probs = gather_log_probs(log_p, tokens)  # before the entropy: autograd then sums log_p's gradients
        entropy = -(log_p.exp() * log_p).sum(dim=-1)  # [batch, pos]     in the same order as it always has
        return TokenScores(log_probs=log_probs, entropy=entropy.unsqueeze(1))


def as_policy(model: nn.Module, response_length: int | None = None) -> nn.Module:
    """``model`` itself when it already implements the Policy contract (``sample`` and ``score``), else
    the model wrapped in a ``ToyPolicy``."""
    if hasattr(model, "sample") and hasattr(model, "score"):
        return model
    return ToyPolicy(model, response_length)

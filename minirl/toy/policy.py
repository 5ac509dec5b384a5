"""``ToyPolicy``: the tiny encoder-decoder (or any model mapping prompts to per-position logits) as a
``minirl.protocols.Policy``.

The toy model predicts every response position from the prompt alone, so one forward pass gives the
whole distribution π(· | x) = Π_j softmax(logits_j / T): sampling a group is one multinomial draw, and
scoring a group is one forward pass and a gather. Its entropy depends on the prompt only, so
``score`` returns it as ``[batch, 1, pos]``, one value for the whole group.

A bare toy model becomes a policy with ``as_policy(model)`` (what ``train`` and ``evaluate`` do with one);
responses sampled outside a policy become a ``Rollout`` with ``ToyPolicy.rollout_from_tokens``.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from minirl.protocols import Policy, Rollout, TokenScores, require
from minirl.toy.sampling import gather_log_probs, sample_responses
from minirl.utils import load_torch, save_torch, write_json

__all__ = ["ToyPolicy", "as_policy"]


class ToyPolicy(nn.Module):
    """Wraps ``model: prompts [batch, P] -> logits [batch, pos, vocab]``.

    Args:
        model: the network (``TinyEncoderDecoder``); ``ToyPolicy(model).model is model``.
        response_length: the response length budget (default: the model's ``response_length``, else
            the number of logit positions).
    """

    cheap_reference = True  # a few thousand weights: a frozen copy for measuring the KL costs nothing

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

    def rollout_from_tokens(self, tokens: torch.Tensor) -> Rollout:
        """Responses ``[batch, trial, pos]`` as a ``Rollout``: every position real (a task's EOS mask is the
        loop's business), the tokens are the answers, the length budget is ``response_length``."""
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
        return self.rollout_from_tokens(tokens)

    def greedy(self, prompts: torch.Tensor) -> Rollout:
        """The argmax token at every position: ``[batch, 1, pos]``."""
        with torch.no_grad():
            return self.rollout_from_tokens(self.logits(prompts).argmax(dim=-1).unsqueeze(1))

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

    MODEL_ARGS = ("vocab_size", "embedding_dim", "prompt_length", "response_length")
    """The constructor arguments ``save`` keeps (those of ``TinyEncoderDecoder``)."""

    def save(self, folder: str | os.PathLike) -> None:
        """The model into ``folder`` (a run folder, ``minirl.runs``): ``model.pt`` (its state dict) and
        ``model.json`` (its class and constructor arguments, and this class, which loads it back)."""
        folder = Path(folder)
        args = {k: getattr(self.model, k) for k in self.MODEL_ARGS}
        spec = {"class": _qualified(type(self.model)), "args": args, "policy": _qualified(type(self))}
        write_json(folder / "model.json", spec)
        save_torch(self.model.state_dict(), folder / "model.pt")

    @classmethod
    def load(cls, folder: str | os.PathLike, task, device: str | torch.device | None = None) -> ToyPolicy:
        """The policy ``save`` wrote into ``folder``, with ``task``'s response length, on ``device``."""
        folder = Path(folder)
        spec = json.loads((folder / "model.json").read_text())
        module, _, name = spec["class"].partition(":")
        model = getattr(importlib.import_module(module), name)(**spec["args"])
        model.load_state_dict(load_torch(folder / "model.pt"))
        policy = cls(model.eval(), getattr(task, "response_length", None))
        return policy.to(device) if device is not None else policy


def _qualified(kind: type) -> str:
    """``"module:Class"``, the form ``importlib`` reads back."""
    return f"{kind.__module__}:{kind.__qualname__}"


def as_policy(model: Policy | nn.Module, response_length: int | None = None) -> Policy:
    """``model`` itself when it implements ``minirl.protocols.Policy``, else the bare toy model wrapped in a
    ``ToyPolicy`` (a module with ``sample`` or ``score`` but not the whole contract is an error, not a toy)."""
    if isinstance(model, Policy):
        return model
    if hasattr(model, "sample") or hasattr(model, "score"):
        return require(model, Policy, "model")  # raises, naming what it lacks
    return ToyPolicy(model, response_length)

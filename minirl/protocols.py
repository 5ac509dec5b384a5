"""The two contracts the training loop is written against: a **policy** and a **task**.

The loop (``minirl.train``) never asks what kind of model it trains. It asks a policy to sample a
group of responses per prompt and to score given responses token by token, and it asks a task for
prompts and for rewards. Two policies implement the contract:

- ``minirl.ToyPolicy``: the tiny encoder-decoder of the sorting chapters (every response position
  predicted from the prompt alone, one forward pass);
- ``minirl.lm.CausalLMPolicy``: a HuggingFace causal language model (token by token with a KV
  cache, responses of different lengths that end at the first end-of-sequence token).

And the tasks: ``toy_envs.SortingTask`` and ``toy_envs.VariableLengthSortingTask`` (prompts and
answers are token tensors), and the text tasks of ``toy_envs.text_tasks`` (prompts are chats, answers
are strings the model wrote).

Shapes: ``[batch, trial, pos]`` = prompt, response in the prompt's group, token position in the
response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch

__all__ = ["Policy", "Rollout", "Task", "TokenScores", "select_prompts"]


def select_prompts(prompts: Any, rows: slice) -> Any:
    """Rows ``rows`` of a batch of prompts: a tensor ``[batch, ...]`` or a list of prompts."""
    return prompts[rows]


@dataclass
class Rollout:
    """A group of sampled responses per prompt, as the loop and the task see them.

    Attributes:
        tokens: ``[batch, trial, pos]`` LongTensor of response token ids; positions after a response's
            end hold padding.
        mask: ``[batch, trial, pos]`` float, 1.0 for the real tokens of each response (up to and including
            its end-of-sequence token), 0.0 for padding; ``None`` when every position is real.
        answers: what the task scores: the token tensor itself for the toy tasks, the decoded text of
            each response (a list per prompt of ``trial`` strings) for a text task.
        max_length: the response length budget (the constant of the ``"constant"`` aggregation, Dr GRPO):
            the toy's number of response positions, an LM's ``max_new_tokens``.
    """

    tokens: torch.Tensor
    mask: torch.Tensor | None
    answers: Any
    max_length: int

    def __post_init__(self) -> None:
        if self.tokens.dim() != 3:
            raise ValueError(f"Rollout.tokens must have shape [batch, trial, pos]; got {list(self.tokens.shape)}")
        if self.mask is not None and self.mask.shape != self.tokens.shape:
            raise ValueError(
                f"Rollout.mask must have the shape of tokens {list(self.tokens.shape)}; got {list(self.mask.shape)}"
            )

    @property
    def batch_size(self) -> int:
        return self.tokens.shape[0]

    @property
    def group_size(self) -> int:
        return self.tokens.shape[1]

    def lengths(self) -> torch.Tensor:
        """Real tokens per response ``[batch, trial]`` (float)."""
        if self.mask is None:
            return torch.full(self.tokens.shape[:2], float(self.tokens.shape[-1]), device=self.tokens.device)
        return self.mask.sum(dim=-1)

    def rows(self, rows: slice) -> Rollout:
        """The responses of prompts ``rows`` (a micro-batch)."""
        return Rollout(
            self.tokens[rows],
            None if self.mask is None else self.mask[rows],
            select_prompts(self.answers, rows),
            self.max_length,
        )


@dataclass
class TokenScores:
    """What a policy's ``score`` returns for given responses.

    Attributes:
        log_probs: ``[batch, trial, pos]`` log π_θ(y_t | x, y_<t) of each response token, with gradient.
        entropy: entropy H_t = −Σ_v π(v) log π(v) of the distribution each token was drawn from (nats),
            with gradient: ``[batch, trial, pos]``, or ``[batch, 1, pos]`` when that distribution depends
            on the prompt only (the toy policy), so one value serves the whole group.
    """

    log_probs: torch.Tensor
    entropy: torch.Tensor


@runtime_checkable
class Policy(Protocol):
    """A stochastic policy over responses: what ``minirl.train`` needs from a model.

    Implementations are ``torch.nn.Module`` s (the loop reads ``parameters()``, copies the module for
    π_ref and refreshes that copy with ``load_state_dict``).
    """

    def sample(
        self, prompts: Any, group_size: int, *, temperature: float, generator: torch.Generator | None
    ) -> Rollout:
        """Draw ``group_size`` responses per prompt from π(· | x) at ``temperature`` (no gradient)."""
        ...

    def greedy(self, prompts: Any) -> Rollout:
        """The most likely token at every step; one response per prompt (trial = 1)."""
        ...

    def score(self, prompts: Any, rollout: Rollout, *, temperature: float) -> TokenScores:
        """Per-token log-probabilities (and entropies) of ``rollout``'s responses under π at ``temperature``,
        with gradient; one forward pass."""
        ...

    def parameters(self, recurse: bool = True): ...


@runtime_checkable
class Task(Protocol):
    """Where prompts come from and how responses are scored.

    Required: ``sample_prompts(n, generator)``, ``rewards(prompts, answers) -> [batch, trial]`` float,
    ``is_correct(prompts, answers) -> [batch, trial]`` bool. Optional, used when present:

    - ``per_position_rewards(prompts, answers) -> [batch, trial, pos]`` (a process reward);
    - ``response_mask(tokens) -> [batch, trial, pos]`` (toy tasks whose responses end at an EOS token;
      a policy that returns its own mask takes precedence);
    - ``format_ok(prompts, answers) -> [batch, trial]`` bool (the answer is in the asked form);
    - ``eval_prompts(n, generator)``: held-out prompts, disjoint from the training prompts
      (default: ``sample_prompts``).
    """

    def sample_prompts(self, n: int, generator: torch.Generator | None = None) -> Any: ...

    def rewards(self, prompts: Any, answers: Any) -> torch.Tensor: ...

    def is_correct(self, prompts: Any, answers: Any) -> torch.Tensor: ...

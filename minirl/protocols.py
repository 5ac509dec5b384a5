"""The two contracts the training loop is written against: a **policy** and a **task**.

The loop (``minirl.train``) never asks what kind of model it trains. It asks a policy to sample a
group of responses per prompt and to score given responses token by token, and it asks a task for
prompts and for rewards. ``Policy`` names everything the loop uses; two policies implement it:

- ``minirl.ToyPolicy``: the tiny encoder-decoder of the sorting chapters (every response position
  predicted from the prompt alone, one forward pass);
- ``minirl.lm.CausalLMPolicy``: a HuggingFace causal language model (token by token with a KV
  cache, responses of different lengths that end at the first end-of-sequence token).

``Task`` names what every task has (prompts, rewards, a correctness check). What only some tasks have is a
capability of its own, a protocol that extends ``Task`` by one or two members; the loop uses one when
``isinstance(task, <capability>)`` says the task has it:

    ProcessRewardTask   per_position_rewards        a reward per response position (grpo_process)
    MaskedTask          response_mask               responses that end at an EOS token (toy)
    FormatTask          format_ok                   answers that can be in the wrong form (text)
    HeldOutTask         eval_prompts                evaluation prompts training never sees (text)
    UnseenAnswersTask   unseen_answer_prompts       problems whose answer training never sees (text)
    EpisodicTask        make_env, max_turns,        an answer is an episode: several turns with an environment
                        demonstrate                 (``minirl.episodes``; notebook 12's maze)
    ToyTask             n_tokens, prompt_length,    token tensors of fixed sizes and a reference answer:
                        response_length,            what ``make_model`` and ``train_supervised`` use
                        sorted_responses

The tasks: ``toy_envs.SortingTask`` (a ``ToyTask`` and a ``ProcessRewardTask``),
``toy_envs.VariableLengthSortingTask`` (also a ``MaskedTask``), and the text tasks of
``toy_envs.text_tasks`` (prompts are chats, answers are strings the model wrote; ``FormatTask``,
``HeldOutTask``, ``UnseenAnswersTask``).

Shapes: ``[batch, trial, pos]`` = prompt, response in the prompt's group, token position in the
response.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import torch

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "EpisodicTask",
    "FormatTask",
    "HeldOutTask",
    "MaskedTask",
    "Policy",
    "ProcessRewardTask",
    "Rollout",
    "Task",
    "TokenScores",
    "ToyTask",
    "UnseenAnswersTask",
    "require",
    "select_prompts",
]


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
        truncated: ``[batch, trial]`` bool, True for a response that the budget cut before it wrote its
            end-of-sequence token (a language model's); ``None`` when responses have no end of their own
            (the toy policies fill every position).
    """

    tokens: torch.Tensor
    mask: torch.Tensor | None
    answers: Any
    max_length: int
    truncated: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.tokens.dim() != 3:
            raise ValueError(f"Rollout.tokens must have shape [batch, trial, pos]; got {list(self.tokens.shape)}")
        if self.mask is not None and self.mask.shape != self.tokens.shape:
            raise ValueError(
                f"Rollout.mask must have the shape of tokens {list(self.tokens.shape)}; got {list(self.mask.shape)}"
            )
        if self.truncated is not None and self.truncated.shape != self.tokens.shape[:2]:
            raise ValueError(
                f"Rollout.truncated must have shape [batch, trial] = {list(self.tokens.shape[:2])}; "
                f"got {list(self.truncated.shape)}"
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
            None if self.truncated is None else self.truncated[rows],
        )


@dataclass
class TokenScores:
    """What a policy's ``score`` returns for given responses.

    Attributes:
        log_probs: ``[batch, trial, pos]`` log π_θ(y_t | x, y_<t) of each response token, with gradient.
        entropy: entropy H_t = −Σ_v π(v) log π(v) of the distribution each token was drawn from (nats),
            with gradient: ``[batch, trial, pos]``, or ``[batch, 1, pos]`` when that distribution depends
            on the prompt only (the toy policy), so one value serves the whole group.
        choices: ``[batch, trial, pos, k]`` log π_θ(c | x, y_<t) of each choice token c asked for (``score``'s
            ``choices``, −1 where none: 0.0 there), with gradient; None when none were asked for.
    """

    log_probs: torch.Tensor
    entropy: torch.Tensor
    choices: torch.Tensor | None = None


@runtime_checkable
class Policy(Protocol):
    """A stochastic policy over responses: everything ``minirl.train`` asks of a model.

    Both implementations are ``torch.nn.Module`` s, which give the last five members: the loop hands
    ``parameters()`` to the optimizer, moves the policy with ``to``, copies it (``copy.deepcopy``, then
    ``requires_grad_(False)``) for π_ref, and refreshes that copy with ``load_state_dict(state_dict())``.
    """

    cheap_reference: bool
    """True when a frozen copy of the policy and one more forward pass per step cost little (the toy model's
    few thousand weights): the loop then measures the KL to the initial policy by default
    (``TrainConfig.measure_kl``). False for a language model, whose copy doubles its memory and whose
    forward pass is a large part of a step. A class attribute of each implementation."""

    @property
    def device(self) -> torch.device:
        """Where the weights are: the loop puts rewards and advantages there."""
        ...

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

    # -- torch.nn.Module's ---------------------------------------------------------------------------

    def parameters(self, recurse: bool = True) -> Iterator[torch.nn.Parameter]: ...

    def to(self, *args: Any, **kwargs: Any) -> Self: ...

    def requires_grad_(self, requires_grad: bool = True) -> Self: ...

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any: ...


# The tasks' methods take their arguments by position only (``/``): the loop passes them that way, so each task
# names them as it reads best (``SortingTask.rewards(prompts, responses)``, a text task's ``(prompts, answers)``).
# ``answers`` is a rollout's ``answers``: token tensors ``[batch, trial, pos]`` for a toy task, a list per
# prompt of ``trial`` strings for a text task.


@runtime_checkable
class Task(Protocol):
    """Where prompts come from and how responses are scored: what ``minirl.train`` needs from every task."""

    def sample_prompts(self, n: int, generator: torch.Generator | None = None, /) -> Any:
        """``n`` training prompts: ``[n, P]`` token ids for a toy task, a list of chats for a text task."""
        ...

    def rewards(self, prompts: Any, answers: Any, /) -> torch.Tensor:
        """``[batch, trial]`` float: the reward of each answer."""
        ...

    def is_correct(self, prompts: Any, answers: Any, /) -> torch.Tensor:
        """``[batch, trial]`` bool: the answer is right (exactly sorted, the right sum, ...)."""
        ...


@runtime_checkable
class ProcessRewardTask(Task, Protocol):
    """A task that also rewards each response position (a process reward): the advantages of
    ``advantage_level="token"`` (``grpo_process``), and ``evaluate``'s position accuracy."""

    def per_position_rewards(self, prompts: Any, answers: Any, /) -> torch.Tensor:
        """``[batch, trial, pos]`` float: r_t(x, y) of each position."""
        ...


@runtime_checkable
class MaskedTask(Task, Protocol):
    """A toy task whose responses end at an end-of-sequence token: the mask of real tokens reaches the loss.
    A policy that returns its own mask (a language model's first EOS) takes precedence."""

    def response_mask(self, tokens: torch.Tensor, /) -> torch.Tensor:
        """``[batch, trial, pos]`` float: 1.0 up to and including the first EOS, 0.0 after it."""
        ...


@runtime_checkable
class FormatTask(Task, Protocol):
    """A task whose answers can be in the wrong form (prose instead of a list): the loop logs
    ``format_rate``, ``evaluate`` ``greedy_format``."""

    def format_ok(self, prompts: Any, answers: Any, /) -> torch.Tensor:
        """``[batch, trial]`` bool: the answer is in the asked form."""
        ...


@runtime_checkable
class HeldOutTask(Task, Protocol):
    """A task with evaluation prompts disjoint from the training prompts (``evaluate`` draws
    ``sample_prompts`` for a task without them)."""

    def eval_prompts(self, n: int, generator: torch.Generator | None = None, /) -> Any:
        """The first ``n`` held-out prompts, the same ones every time."""
        ...


@runtime_checkable
class UnseenAnswersTask(FormatTask, Protocol):
    """A task that holds out whole answers (a text task's ``n_unseen_answers``): ``evaluate`` reports
    ``unseen_greedy_exact`` and ``unseen_greedy_format`` on the problems whose answer training never rewards."""

    @property
    def n_unseen_problems(self) -> int:
        """How many such problems there are (0: none held out)."""
        ...

    def unseen_answer_prompts(self, n: int, /) -> Any:
        """The first ``n`` of them, the same ones every time."""
        ...


@runtime_checkable
class EpisodicTask(Task, Protocol):
    """A task whose answer is an episode: the model and an environment take turns (the environment's reply is
    unknown in advance), and the reward comes from the environment. The loop samples with
    ``minirl.episodes.sample_episodes`` instead of the policy's one-reply ``sample``; a rollout's ``answers``
    are the environments' episode records, which ``rewards`` and ``is_correct`` read."""

    @property
    def max_turns(self) -> int:
        """The most replies an episode holds (the environment may end it sooner)."""
        ...

    def make_env(self, prompt: Any, /) -> Any:
        """A fresh environment for one episode from ``prompt`` (``minirl.episodes.Conversation``)."""
        ...

    def demonstrate(self, env: Any, generator: torch.Generator | None, /) -> str:
        """A demonstrator's reply to the environment ``env`` as it stands (what a supervised warm start imitates)."""
        ...


@runtime_checkable
class ToyTask(Task, Protocol):
    """A task on token tensors of fixed sizes, with a reference answer: what the tiny encoder-decoder needs
    (``make_model`` sizes one by it, ``train_supervised`` imitates its ``sorted_responses``)."""

    @property
    def n_tokens(self) -> int:
        """Token ids a policy emits (V)."""
        ...

    @property
    def prompt_length(self) -> int:
        """Prompt positions (P)."""
        ...

    @property
    def response_length(self) -> int:
        """Response positions (R): the length budget of every response."""
        ...

    def sample_prompts(self, n: int, generator: torch.Generator | None = None, /) -> torch.Tensor:
        """``[n, P]`` LongTensor of token ids."""
        ...

    def sorted_responses(self, prompts: torch.Tensor, /) -> torch.Tensor:
        """``[batch, R]`` LongTensor: the reference answer to each prompt."""
        ...


P = TypeVar("P")


def _members(protocol: type) -> list[str]:
    """The names a protocol declares, its bases' included."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if getattr(cls, "_is_protocol", False) and cls is not Protocol:
            names.update(n for n in (*vars(cls), *getattr(cls, "__annotations__", {})) if not n.startswith("_"))
    return sorted(names)


def require(value: Any, protocol: type[P], argument: str, hint: str = "") -> P:
    """``value`` itself when it implements ``protocol``, else ``TypeError`` naming ``argument``, the members it
    lacks and ``hint`` (``isinstance`` on a protocol checks that the members are there, not their signatures)."""
    if isinstance(value, protocol):
        return value
    missing = [name for name in _members(protocol) if not hasattr(value, name)]
    raise TypeError(
        f"{argument} must implement minirl.protocols.{protocol.__name__}; {type(value).__name__} lacks {missing}"
        + (f" ({hint})" if hint else "")
    )

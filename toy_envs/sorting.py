"""The sorting task: a contextual bandit whose actions are whole sequences.

A *prompt* is a list of numbers, for example ``[3, 1, 2]``; the policy answers with a
*response* of the same length and is rewarded for how well the response sorts the prompt::

    prompt    3 1 2          sorted(prompt)  1 2 3
    response  1 3 3          positions that match: 2 (the first and the last)

There is one step per episode (the whole response is one action), so this is a bandit with
a context (the prompt) and a combinatorially large action space (every sequence of
``length`` tokens), exactly the shape of RL on a language model with a verifiable reward.

Three rewards, each a plain function of two lists of ints (for reading and for tests) and a
vectorised tensor twin (for training), which must agree item by item:

- ``sort_distance_reward``: number of positions where the response equals sorted(prompt).
  Dense partial credit that cannot be fooled: only correct tokens in correct places count.
- ``sort_inclusion_ordering_reward``: number of prompt items present in the response, plus
  number of adjacent response pairs in non-decreasing order. Generous partial credit, and
  gameable: ``[x, x, x]`` for some prompt item ``x`` scores 1 + (length - 1) for free.
- ``exact_match_reward``: 1.0 if the response is exactly sorted(prompt), else 0.0 (the
  sparse "outcome" reward of RL with verifiable rewards).

Tensor shapes use named axes: ``[batch, pos]`` for prompts, ``[batch, trial, pos]`` for a
group of ``trial`` responses per prompt, ``[batch, trial]`` for their rewards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

__all__ = [
    "REWARDS",
    "SortingTask",
    "exact_match_reward",
    "format_example",
    "sort_distance_reward",
    "sort_inclusion_ordering_reward",
]


# ---------------------------------------------------------------------------------------------
# Rewards on plain lists (the definitions)
# ---------------------------------------------------------------------------------------------


def _as_int_list(name: str, seq: Sequence[int]) -> list[int]:
    if isinstance(seq, torch.Tensor):
        if seq.dim() != 1:
            raise ValueError(f"{name} must be a 1-D sequence of ints; got a tensor of shape {list(seq.shape)}")
        return [int(v) for v in seq.tolist()]
    try:
        values = list(seq)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of ints; got {type(seq).__name__}") from None
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) and not (hasattr(v, "__index__")):
            raise TypeError(f"{name} must contain ints; got {v!r} of type {type(v).__name__}")
    return [int(v) for v in values]


def sort_distance_reward(prompt: Sequence[int], response: Sequence[int]) -> float:
    """Number of positions ``i`` where ``response[i] == sorted(prompt)[i]``.

    R(x, y) = Σ_i 1[y_i = sort(x)_i]. Ranges over 0..len(prompt).
    """
    prompt, response = _as_int_list("prompt", prompt), _as_int_list("response", response)
    return float(sum(1 for got, want in zip(response, sorted(prompt)) if got == want))


def sort_inclusion_ordering_reward(prompt: Sequence[int], response: Sequence[int]) -> float:
    """Inclusion plus ordering partial credit.

    R(x, y) = Σ_j 1[x_j ∈ y] + Σ_i 1[y_i <= y_{i+1}]
    (each prompt item, duplicates counted again, that appears somewhere in the response, plus
    each adjacent response pair in non-decreasing order). The maximum, len(x) + len(y) - 1,
    is reached by sorted(x) but also by responses that are not sorted(x): with prompt
    [2, 2, 5] the response [2, 5, 5] scores 3 + 2 = 5 as well.
    """
    prompt, response = _as_int_list("prompt", prompt), _as_int_list("response", response)
    inclusion = sum(1 for x in prompt if x in response)
    ordering = sum(1 for a, b in zip(response, response[1:]) if a <= b)
    return float(inclusion + ordering)


def exact_match_reward(prompt: Sequence[int], response: Sequence[int]) -> float:
    """1.0 if the response is exactly sorted(prompt), else 0.0: R(x, y) = 1[y = sort(x)]."""
    prompt, response = _as_int_list("prompt", prompt), _as_int_list("response", response)
    return 1.0 if response == sorted(prompt) else 0.0


REWARDS: dict[str, Callable[[Sequence[int], Sequence[int]], float]] = {
    "sort_distance": sort_distance_reward,
    "sort_inclusion_ordering": sort_inclusion_ordering_reward,
    "exact_match": exact_match_reward,
}


# ---------------------------------------------------------------------------------------------
# Vectorised twins on tensors: [batch, pos] prompts, [batch, trial, pos] responses
# ---------------------------------------------------------------------------------------------


def _sorted_targets(prompts: torch.Tensor) -> torch.Tensor:
    """[batch, pos] -> [batch, 1, pos]: the correct response for each prompt."""
    return prompts.sort(dim=-1).values.unsqueeze(1)


def _batched_sort_distance(prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    return (responses == _sorted_targets(prompts)).sum(dim=-1).float()


def _batched_inclusion_ordering(prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    # present[b, t, j] = prompt item j of prompt b occurs somewhere in response (b, t)
    present = (prompts[:, None, :, None] == responses[:, :, None, :]).any(dim=-1)
    ordered = responses[..., 1:] >= responses[..., :-1]
    return (present.sum(dim=-1) + ordered.sum(dim=-1)).float()


def _batched_exact_match(prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    return (responses == _sorted_targets(prompts)).all(dim=-1).float()


_BATCHED = {
    "sort_distance": _batched_sort_distance,
    "sort_inclusion_ordering": _batched_inclusion_ordering,
    "exact_match": _batched_exact_match,
}


# ---------------------------------------------------------------------------------------------
# The task
# ---------------------------------------------------------------------------------------------


@dataclass
class SortingTask:
    """Prompts of ``length`` numbers in ``[0, vocab_size)``; the answer is the sorted prompt.

    ``reward`` is a name from ``REWARDS`` (``"sort_distance"``, ``"sort_inclusion_ordering"``,
    ``"exact_match"``) or a callable ``f(prompt: list[int], response: list[int]) -> float``
    (applied item by item, slower but anything goes).
    """

    vocab_size: int = 10
    length: int = 5
    reward: str | Callable[[Sequence[int], Sequence[int]], float] = "sort_distance"

    def __post_init__(self) -> None:
        if not isinstance(self.vocab_size, int) or self.vocab_size < 2:
            raise ValueError(f"vocab_size must be an int >= 2; got {self.vocab_size!r}")
        if not isinstance(self.length, int) or self.length < 1:
            raise ValueError(f"length must be an int >= 1; got {self.length!r}")
        if isinstance(self.reward, str):
            if self.reward not in REWARDS:
                raise ValueError(f"reward must be one of {sorted(REWARDS)} or a callable; got {self.reward!r}")
        elif not callable(self.reward):
            raise TypeError(f"reward must be a reward name or a callable; got {type(self.reward).__name__}")

    @property
    def max_reward(self) -> float:
        """The largest reward a response can get (that of the sorted prompt)."""
        if self.reward == "sort_distance":
            return float(self.length)
        if self.reward == "sort_inclusion_ordering":
            return float(2 * self.length - 1)
        if self.reward == "exact_match":
            return 1.0
        raise ValueError("max_reward is only known for the built-in rewards")

    # -- sizes (the interface ``minirl.train`` reads; see also ``VariableLengthSortingTask``) --

    @property
    def n_tokens(self) -> int:
        """Token ids a policy for this task emits: the numbers, ``vocab_size``."""
        return self.vocab_size

    @property
    def prompt_length(self) -> int:
        return self.length

    @property
    def response_length(self) -> int:
        return self.length

    # -- sampling ---------------------------------------------------------------------------

    def sample_prompts(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Draw ``n`` prompts uniformly: LongTensor[n, length] of values in [0, vocab_size)."""
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int; got {n!r}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None; got {type(generator).__name__}")
        return torch.randint(0, self.vocab_size, (n, self.length), generator=generator)

    def sorted_responses(self, prompts: torch.Tensor) -> torch.Tensor:
        """The correct answers: [batch, pos] -> [batch, pos]."""
        self._check_prompts(prompts)
        return prompts.sort(dim=-1).values

    # -- rewards ----------------------------------------------------------------------------

    def rewards(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Reward of every response: prompts[batch, pos], responses[batch, trial, pos] -> [batch, trial].

        Equal, item by item, to the list function named by ``self.reward``.
        """
        self._check_pair(prompts, responses)
        if isinstance(self.reward, str):
            return _BATCHED[self.reward](prompts, responses)
        out = [[float(self.reward(p.tolist(), r.tolist())) for r in group] for p, group in zip(prompts, responses)]
        return torch.tensor(out, dtype=torch.float32)

    def per_position_rewards(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Dense process reward: 1.0 where a response token equals the sorted prompt's token.

        prompts[batch, pos], responses[batch, trial, pos] -> FloatTensor[batch, trial, pos];
        summing over ``pos`` gives ``sort_distance_reward``.
        """
        self._check_pair(prompts, responses)
        return (responses == _sorted_targets(prompts)).float()

    def is_correct(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Exact match as a bool tensor: [batch, trial]."""
        self._check_pair(prompts, responses)
        return (responses == _sorted_targets(prompts)).all(dim=-1)

    # -- reading ----------------------------------------------------------------------------

    def format(self, prompt: Sequence[int], response: Sequence[int] | None = None) -> str:
        """A one-line text form, e.g. ``'3 1 2 -> 1 2 3  (reward 3.0, sorted ✓)'``."""
        return format_example(prompt, response, self)

    # -- validation -------------------------------------------------------------------------

    def _check_tokens(self, name: str, x: torch.Tensor) -> None:
        if x.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
            raise TypeError(f"{name} must be an integer tensor (torch.long); got dtype {x.dtype}")
        if x.numel() and (int(x.min()) < 0 or int(x.max()) >= self.vocab_size):
            raise ValueError(
                f"{name} tokens must lie in [0, vocab_size) = [0, {self.vocab_size}); "
                f"got values in [{int(x.min())}, {int(x.max())}]"
            )

    def _check_prompts(self, prompts: torch.Tensor) -> None:
        if not isinstance(prompts, torch.Tensor):
            raise TypeError(f"prompts must be a LongTensor [batch, pos]; got {type(prompts).__name__}")
        if prompts.dim() != 2 or prompts.shape[1] != self.length:
            raise ValueError(
                f"prompts must have shape [batch, pos] = [batch, {self.length}]; got {list(prompts.shape)}"
            )
        self._check_tokens("prompts", prompts)

    def _check_pair(self, prompts: torch.Tensor, responses: torch.Tensor) -> None:
        self._check_prompts(prompts)
        if not isinstance(responses, torch.Tensor):
            raise TypeError(f"responses must be a LongTensor [batch, trial, pos]; got {type(responses).__name__}")
        expected = [prompts.shape[0], "trial", self.length]
        if responses.dim() != 3 or responses.shape[0] != prompts.shape[0] or responses.shape[2] != self.length:
            hint = " (add a trial axis: responses.unsqueeze(1))" if responses.dim() == 2 else ""
            raise ValueError(
                f"responses must have shape [batch, trial, pos] = {expected}; got {list(responses.shape)}{hint}"
            )
        self._check_tokens("responses", responses)


def format_example(
    prompt: Sequence[int], response: Sequence[int] | None = None, task: SortingTask | None = None
) -> str:
    """Readable text of a prompt and (optionally) a response with its reward.

    >>> format_example([3, 1, 2], [1, 2, 3])
    '3 1 2 -> 1 2 3  (sorted ✓)'
    """
    p = _as_int_list("prompt", prompt)
    text = " ".join(str(v) for v in p)
    if response is None:
        return text
    r = _as_int_list("response", response)
    text += " -> " + " ".join(str(v) for v in r)
    verdict = "sorted ✓" if r == sorted(p) else "not sorted ✗"
    if task is not None and isinstance(task.reward, str):
        return f"{text}  (reward {REWARDS[task.reward](p, r):g}, {verdict})"
    return f"{text}  ({verdict})"

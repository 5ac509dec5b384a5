"""The sorting task with prompts of different lengths: padding, an end-of-sequence token, masks.

Token ids, for ``vocab_size = V``:

    0 .. V−1    the numbers to sort
    V           EOS, "end of sequence": the response stops here
    V + 1       PAD, filler after the end of a prompt (and of a target)

so a policy for this task has ``n_tokens = V + 2`` output tokens. A prompt of length n is n numbers
followed by ``max_length − n`` PADs; the correct response is the n numbers sorted, then EOS, then
PAD up to ``response_length = max_length + 1`` positions (room for the longest answer and its EOS)::

    V = 10, max_length = 4:   prompt  3 1 11 11    (length 2)
                              target  1 3 10 11 11
                              mask    1 1  1  0  0   for the target; for any response: 1 up to and
                                                     including its first EOS, 0 after

A model emits a token at every response position; everything after the first EOS is ignored
(``response_mask``), so the response's length is the position of its first EOS. Losses over such
responses must sum over the real tokens only, and then how they normalise by length matters
(``minirl.aggregate``: per-sequence mean, per-token mean or a constant).

Rewards, on prompts ``[batch, max_length]`` and responses ``[batch, trial, response_length]``:

- ``per_position_rewards`` (the process reward): 1.0 at position j ≤ n where the response token is the
  target token (the j-th smallest number, or EOS at j = n) and j is inside the response's mask; 0 at
  every other position. ``[batch, trial, response_length]``.
- ``"sort_distance"``: the sum of the above, 0 .. n + 1 (the EOS at the right place earns a point).
- ``"exact_match"``: 1.0 when the response up to its first EOS is exactly sorted(prompt) + EOS.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["VARIABLE_REWARDS", "VariableLengthSortingTask"]

VARIABLE_REWARDS = ("sort_distance", "exact_match")


def _first_eos_mask(tokens: torch.Tensor, eos: int) -> torch.Tensor:
    """1.0 up to and including the first EOS along the last axis, 0.0 after (all 1.0 without an EOS)."""
    is_eos = (tokens == eos).long()
    eos_strictly_before = is_eos.cumsum(dim=-1) - is_eos
    return (eos_strictly_before == 0).float()


@dataclass
class VariableLengthSortingTask:
    """Prompts of ``min_length`` .. ``max_length`` numbers in [0, vocab_size), padded to ``max_length``;
    the answer is the sorted numbers followed by EOS (see the module docstring for the token ids).

    ``reward`` is ``"sort_distance"`` (positions right, EOS included, 0 .. n + 1) or ``"exact_match"``.
    """

    vocab_size: int = 10
    max_length: int = 5
    min_length: int = 2
    reward: str = "sort_distance"

    def __post_init__(self) -> None:
        if not isinstance(self.vocab_size, int) or self.vocab_size < 2:
            raise ValueError(f"vocab_size must be an int >= 2; got {self.vocab_size!r}")
        if not isinstance(self.max_length, int) or self.max_length < 1:
            raise ValueError(f"max_length must be an int >= 1; got {self.max_length!r}")
        if not isinstance(self.min_length, int) or not 1 <= self.min_length <= self.max_length:
            raise ValueError(
                f"min_length must be an int in [1, max_length = {self.max_length}]; got {self.min_length!r}"
            )
        if self.reward not in VARIABLE_REWARDS:
            raise ValueError(f"reward must be one of {VARIABLE_REWARDS}; got {self.reward!r}")

    # -- token ids and sizes ------------------------------------------------------------------

    @property
    def eos(self) -> int:
        """The end-of-sequence token id, ``vocab_size``."""
        return self.vocab_size

    @property
    def pad(self) -> int:
        """The padding token id, ``vocab_size + 1``."""
        return self.vocab_size + 1

    @property
    def n_tokens(self) -> int:
        """All token ids, numbers + EOS + PAD: the vocabulary size of a policy for this task."""
        return self.vocab_size + 2

    @property
    def prompt_length(self) -> int:
        return self.max_length

    @property
    def response_length(self) -> int:
        """``max_length + 1``: the longest answer and its EOS."""
        return self.max_length + 1

    # -- sampling -------------------------------------------------------------------------------

    def sample_prompts(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` prompts with lengths uniform in [min_length, max_length] and numbers uniform in [0, vocab_size).

        Returns LongTensor[n, max_length], PAD after each prompt's end (``prompt_lengths`` reads the
        lengths back). Same signature as ``SortingTask.sample_prompts``, so ``minirl.train`` runs on both.
        """
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int; got {n!r}")
        lengths = torch.randint(self.min_length, self.max_length + 1, (n,), generator=generator)
        values = torch.randint(0, self.vocab_size, (n, self.max_length), generator=generator)
        inside = torch.arange(self.max_length) < lengths.unsqueeze(1)
        return torch.where(inside, values, torch.full_like(values, self.pad))

    def prompt_lengths(self, prompts: torch.Tensor) -> torch.Tensor:
        """The number of non-PAD tokens of each prompt: [batch, max_length] -> LongTensor[batch]."""
        self._check_prompts(prompts)
        return (prompts != self.pad).sum(dim=-1)

    def sorted_responses(self, prompts: torch.Tensor) -> torch.Tensor:
        """The correct answers: [batch, max_length] -> [batch, response_length], sorted numbers, EOS, PADs."""
        self._check_prompts(prompts)
        batch = prompts.shape[0]
        lengths = (prompts != self.pad).sum(dim=-1, keepdim=True)  # [batch, 1]
        # PAD (= V + 1) is larger than every number, so sorting leaves the padding at the end
        padded = torch.cat([prompts, torch.full((batch, 1), self.pad, dtype=prompts.dtype)], dim=-1)
        target = padded.sort(dim=-1).values  # numbers sorted, then PADs
        position = torch.arange(self.response_length)
        return torch.where(position == lengths, torch.full_like(target, self.eos), target)

    # -- masks and rewards ----------------------------------------------------------------------

    def response_mask(self, responses: torch.Tensor) -> torch.Tensor:
        """1.0 up to and including each response's first EOS, 0.0 after it; all 1.0 without an EOS.

        responses[batch, trial, response_length] (any shape [..., pos]) -> FloatTensor of the same shape.
        """
        if not isinstance(responses, torch.Tensor) or responses.dim() < 1:
            raise TypeError(f"responses must be a LongTensor [batch, trial, pos]; got {type(responses).__name__}")
        return _first_eos_mask(responses, self.eos)

    def per_position_rewards(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Process reward: 1.0 where a response token equals the target token, inside the response's
        mask and at most at the target's EOS position; 0.0 elsewhere.

        prompts[batch, max_length], responses[batch, trial, response_length] -> FloatTensor[batch, trial,
        response_length]; the sum over positions is the ``"sort_distance"`` reward (0 .. n + 1).
        """
        self._check_pair(prompts, responses)
        target = self.sorted_responses(prompts).unsqueeze(1)  # [batch, 1, pos]
        lengths = (prompts != self.pad).sum(dim=-1)[:, None, None]  # [batch, 1, 1]
        up_to_eos = torch.arange(self.response_length) <= lengths  # [batch, 1, pos]
        match = (responses == target) & up_to_eos & (self.response_mask(responses) > 0)
        return match.float()

    def rewards(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """The reward named by ``self.reward`` of every response: [batch, trial]."""
        if self.reward == "exact_match":
            return self.is_correct(prompts, responses).float()
        return self.per_position_rewards(prompts, responses).sum(dim=-1)

    def is_correct(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Exact match (every target token right, EOS included; what follows EOS is ignored): bool [batch, trial]."""
        dense = self.per_position_rewards(prompts, responses)  # validates both
        lengths = (prompts != self.pad).sum(dim=-1, keepdim=True)  # [batch, 1]
        return dense.sum(dim=-1) == (lengths + 1).to(dense.dtype)

    @property
    def max_reward(self) -> float:
        """The largest reward over all prompts (``max_length + 1`` for sort_distance)."""
        return float(self.max_length + 1) if self.reward == "sort_distance" else 1.0

    # -- reading --------------------------------------------------------------------------------

    def format(self, prompt: torch.Tensor, response: torch.Tensor | None = None) -> str:
        """One line, e.g. ``'3 1 -> 1 3 <eos>  (sorted ✓)'``: PAD dropped, EOS shown, tokens after EOS dropped."""

        def words(tokens: list[int]) -> list[str]:
            out = []
            for t in tokens:
                if t == self.pad:
                    continue
                out.append("<eos>" if t == self.eos else str(t))
                if t == self.eos:
                    break
            return out

        p = [int(t) for t in prompt.tolist()]
        text = " ".join(words(p))
        if response is None:
            return text
        r = [int(t) for t in response.tolist()]
        correct = bool(self.is_correct(torch.tensor([p]), torch.tensor([[r]]))[0, 0])
        return f"{text} -> {' '.join(words(r))}  ({'sorted ✓' if correct else 'not sorted ✗'})"

    # -- validation -------------------------------------------------------------------------------

    def _check_prompts(self, prompts: torch.Tensor) -> None:
        if not isinstance(prompts, torch.Tensor):
            raise TypeError(f"prompts must be a LongTensor [batch, max_length]; got {type(prompts).__name__}")
        if prompts.dim() != 2 or prompts.shape[1] != self.max_length:
            raise ValueError(
                f"prompts must have shape [batch, max_length] = [batch, {self.max_length}]; got {list(prompts.shape)}"
            )
        if prompts.dtype.is_floating_point or prompts.dtype == torch.bool:
            raise TypeError(f"prompts must be an integer tensor (torch.long); got dtype {prompts.dtype}")
        valid = (prompts >= 0) & (prompts < self.vocab_size) | (prompts == self.pad)
        if not bool(valid.all()):
            raise ValueError(
                f"prompts must hold numbers in [0, {self.vocab_size}) or PAD = {self.pad} "
                f"(EOS = {self.eos} is not allowed in a prompt)"
            )
        is_pad = prompts == self.pad
        if bool((is_pad[:, :-1] & ~is_pad[:, 1:]).any()):
            raise ValueError("prompts must be padded at the end only: a number after a PAD")

    def _check_pair(self, prompts: torch.Tensor, responses: torch.Tensor) -> None:
        self._check_prompts(prompts)
        if not isinstance(responses, torch.Tensor):
            raise TypeError(f"responses must be a LongTensor [batch, trial, pos]; got {type(responses).__name__}")
        if responses.dim() != 3 or responses.shape[0] != prompts.shape[0] or responses.shape[2] != self.response_length:
            hint = " (add a trial axis: responses.unsqueeze(1))" if responses.dim() == 2 else ""
            raise ValueError(
                f"responses must have shape [batch, trial, response_length] = [{prompts.shape[0]}, "
                f"trial, {self.response_length}]; got {list(responses.shape)}{hint}"
            )
        if responses.dtype.is_floating_point or responses.dtype == torch.bool:
            raise TypeError(f"responses must be an integer tensor (torch.long); got dtype {responses.dtype}")
        if responses.numel() and (int(responses.min()) < 0 or int(responses.max()) >= self.n_tokens):
            raise ValueError(
                f"responses tokens must lie in [0, n_tokens) = [0, {self.n_tokens}); got values in "
                f"[{int(responses.min())}, {int(responses.max())}]"
            )

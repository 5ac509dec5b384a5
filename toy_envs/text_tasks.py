"""Tasks with verifiable rewards, as text: for training a real language model with GRPO.

The toy tasks hand the policy token tensors; these hand it a *chat* (``TextPrompt.messages``: an optional
system message, optional worked user/assistant examples, then the question) and score the *text* it
writes back. A language-model policy renders each chat with its tokenizer's chat template, samples
``trial`` completions per prompt and decodes them, so the task sees ``answers``: a list (one per prompt)
of lists (one per completion) of ``str``.

Two tasks:

- ``TextSortTask``: ``"Sort in increasing order: 5, 2, 8"``, answer ``"2, 5, 8"``.
- ``TextAdditionTask``: ``"What is 23 + 58?"``, answer ``"81"``.

Rewards are the R1 recipe: a small *format* reward for answering in the asked form, plus 1 for the right
answer::

    R(x, y) = format_weight · 1[y parses and has the right number of numbers] + 1.0 · 1[y is correct]

so with ``format_weight = 0.2`` a correct answer scores 1.2, a well-formed wrong one 0.2 and anything
else (prose, an empty string, garbage) 0.0. A correct answer is always well formed, so the maximum is
``format_weight + 1``.

Every task has a fixed held-out set of problems (drawn once from ``seed``) that training never samples:
``eval_prompts`` reads it, ``sample_prompts`` draws uniformly from the other problems. On a small problem
space that is a weak test: sorting 3 numbers from 0..9 has 1000 problems but only 220 answers (sorted
lists), so almost every held-out problem is a permutation of some training problem and shares its answer.
``n_unseen_answers`` therefore holds out whole *answers* too: every problem whose solution is one of
``n_unseen_answers`` drawn solutions (for sorting, every permutation of a drawn multiset) is left out of
training and read by ``unseen_answer_prompts``. Accuracy there measures a model that has never once
been rewarded for writing that answer.

Shapes: ``[batch, trial]`` = prompt, completion in the prompt's group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch

from toy_envs._validate import check_int
from toy_envs.text_base import ANSWER_KINDS, TextPrompt, _parse_int_list, _TextTask

__all__ = [
    "ADD_FORMAT",
    "ANSWER_KINDS",
    "SORT_FORMAT",
    "TEXT_TASKS",
    "TextAdditionTask",
    "TextPrompt",
    "TextSortTask",
]

SORT_FORMAT = "Reply with only the numbers, comma-separated."
"""The answer-format instruction that ends every sorting question."""

ADD_FORMAT = "Reply with only the number."
"""The answer-format instruction that ends every addition question."""


# ---------------------------------------------------------------------------------------------
# The tasks
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextSortTask(_TextTask):
    """Sort ``n_numbers`` integers in [0, max_value] (repeats allowed), in words.

    The question (``max_value = 9``, 3 numbers)::

        Sort in increasing order: 5, 2, 8
        Reply with only the numbers, comma-separated.

    and the answer ``"2, 5, 8"``. ``parse_answer`` accepts non-negative ASCII integers separated by
    commas, with any number of spaces around each comma, after stripping leading and trailing whitespace
    (newlines included): ``"2, 5, 8"``, ``"2,5,8"``, ``" 2 ,5,  8\\n"``, ``"02, 5, 8"`` (leading zeros
    are read as numbers). Anything else is rejected: a trailing period, brackets, words, signs, decimals,
    non-ASCII digits, an empty answer.

    Args:
        n_numbers: numbers per problem (>= 1).
        max_value: the largest number (>= 1); the problem space has ``(max_value + 1) ** n_numbers`` problems.
        few_shot: worked user/assistant examples before the question (fixed training problems).
        n_heldout: held-out problems (``eval_prompts``), never sampled for training.
        format_weight: the reward of a well-formed answer, on top of 1.0 for a correct one.
        seed: seeds the held-out sets and the few-shot examples.
        system: an optional system message (``SYSTEM`` is the task's own short one).
        n_unseen_answers: answers (sorted lists, i.e. multisets of numbers) held out whole: every permutation
            of each is left out of training and read by ``unseen_answer_prompts`` (0: none).
    """

    SYSTEM: ClassVar[str] = "You sort numbers."

    n_numbers: int = 3
    max_value: int = 9
    few_shot: int = 0
    n_heldout: int = 200
    format_weight: float = 0.2
    seed: int = 0
    system: str | None = None
    n_unseen_answers: int = 0

    def __post_init__(self) -> None:
        check_int("n_numbers", self.n_numbers, 1)
        check_int("max_value", self.max_value, 1)
        self._setup()

    @property
    def n_problems(self) -> int:
        return (self.max_value + 1) ** self.n_numbers

    @property
    def answer_size(self) -> int:
        return self.n_numbers

    def _decode(self, indices: torch.Tensor) -> torch.Tensor:
        base = self.max_value + 1
        powers = base ** torch.arange(self.n_numbers - 1, -1, -1)  # most significant first
        return (indices.unsqueeze(-1) // powers) % base

    def question(self, numbers: Sequence[int]) -> str:
        return f"Sort in increasing order: {', '.join(str(v) for v in numbers)}\n{SORT_FORMAT}"

    def _answer_ids(self, problems: torch.Tensor) -> torch.Tensor:
        base = self.max_value + 1
        powers = base ** torch.arange(self.n_numbers - 1, -1, -1)
        return (problems.sort(dim=-1).values * powers).sum(dim=-1)  # the sorted list, read as a number

    def solution(self, numbers: Sequence[int]) -> tuple[int, ...]:
        return tuple(sorted(int(v) for v in numbers))

    def _format_answer(self, solution: tuple[int, ...]) -> str:
        return ", ".join(str(v) for v in solution)

    def parse_answer(self, text: str) -> tuple[int, ...] | None:
        """The numbers of an answer in the asked form, else None (never raises; see the class docstring).

        Any count of numbers parses; ``format_ok`` also requires ``n_numbers`` of them.
        """
        return _parse_int_list(text)


@dataclass(frozen=True)
class TextAdditionTask(_TextTask):
    """Add two ``digits``-digit numbers (``digits = 1``: 0 .. 9; else 10**(digits-1) .. 10**digits - 1).

    The question (``digits = 2``)::

        What is 23 + 58?
        Reply with only the number.

    and the answer ``"81"``. ``parse_answer`` accepts one non-negative ASCII integer after stripping
    leading and trailing whitespace (newlines included): ``"81"``, ``" 81\\n"``, ``"081"``. Anything else
    is rejected: ``"81."``, ``"= 81"``, ``"1,000"``, ``"-3"``, words, an empty answer.

    Args:
        digits: digits per operand, 1 .. 9.
        few_shot, n_heldout, format_weight, seed, system: as in ``TextSortTask``.
        n_unseen_answers: sums held out whole: every problem with one of them is left out of training.
    """

    SYSTEM: ClassVar[str] = "You add numbers."

    digits: int = 2
    few_shot: int = 0
    n_heldout: int = 200
    format_weight: float = 0.2
    seed: int = 0
    system: str | None = None
    n_unseen_answers: int = 0

    def __post_init__(self) -> None:
        check_int("digits", self.digits, 1, 9)
        self._setup()

    @property
    def low(self) -> int:
        """The smallest operand."""
        return 0 if self.digits == 1 else 10 ** (self.digits - 1)

    @property
    def high(self) -> int:
        """The largest operand."""
        return 10**self.digits - 1

    @property
    def n_problems(self) -> int:
        return (self.high - self.low + 1) ** 2

    @property
    def answer_size(self) -> int:
        return 1

    def _decode(self, indices: torch.Tensor) -> torch.Tensor:
        m = self.high - self.low + 1
        return torch.stack([indices // m, indices % m], dim=-1) + self.low

    def question(self, numbers: Sequence[int]) -> str:
        a, b = numbers
        return f"What is {a} + {b}?\n{ADD_FORMAT}"

    def _answer_ids(self, problems: torch.Tensor) -> torch.Tensor:
        return problems.sum(dim=-1)

    def solution(self, numbers: Sequence[int]) -> tuple[int, ...]:
        return (int(sum(numbers)),)

    def _format_answer(self, solution: tuple[int, ...]) -> str:
        return str(solution[0])

    def parse_answer(self, text: str) -> tuple[int, ...] | None:
        """``(value,)`` for an answer in the asked form, else None (never raises; see the class docstring)."""
        parsed = _parse_int_list(text)
        return parsed if parsed is not None and len(parsed) == 1 else None


TEXT_TASKS: dict[str, type[_TextTask]] = {
    "text_sort": TextSortTask,
    "text_add": TextAdditionTask,
}

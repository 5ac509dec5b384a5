"""What every text task shares: the prompt (``TextPrompt``), drawing problems and held-out sets, checking
arguments, parsing a list of numbers, and the base class ``_TextTask`` (its rewards, its held-out and unseen
answers, the kinds of answers). ``toy_envs.text_tasks`` and ``toy_envs.reasoning`` build their tasks on it; the
module docstring of ``toy_envs.text_tasks`` says what a text task is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from toy_envs._validate import check_int

__all__ = ["ANSWER_KINDS", "MAX_ANSWER_DIGITS", "TextPrompt"]

ANSWER_KINDS = ("correct", "right form, wrong order", "right form, wrong numbers", "extra words", "other")
"""What ``answer_kind`` calls an answer (the kinds of notebook 08): in the asked form and right; in the asked
form, the prompt's numbers in another order than sorted (copying the prompt is one); in the asked form, other
numbers; not in the asked form and with letters in it (prose); anything else (empty, garbage)."""

MAX_ANSWER_DIGITS = 100
"""A number of more digits than this is never a valid answer (``parse_answer`` returns None)."""

_RANDPERM_LIMIT = 1_000_000  # problem spaces up to this size are shuffled whole; larger ones sampled
_MAX_PROBLEMS = 2**62  # problem indices are int64


# ---------------------------------------------------------------------------------------------
# The prompt
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextPrompt:
    """One problem as a chat, with the data a reward needs.

    Attributes:
        messages: the chat, a tuple of ``{"role": ..., "content": ...}`` dicts: an optional system
            message, optional few-shot user/assistant turns, then the final user message (the question).
            Render it with ``tokenizer.apply_chat_template(list(prompt.messages), add_generation_prompt=True)``.
        question: the final user message's content.
        numbers: the problem's data (the numbers to sort, the two operands).
        target: the canonical answer text, e.g. ``"1, 3, 7"`` or ``"81"``.

    Hashable and comparable (all four fields count); ``repr`` leaves the messages out.
    """

    messages: tuple[dict, ...] = field(repr=False)
    question: str
    numbers: tuple[int, ...]
    target: str

    def __post_init__(self) -> None:
        if isinstance(self.messages, (str, bytes)) or not isinstance(self.messages, Sequence):
            raise TypeError(f"messages must be a sequence of dicts; got {type(self.messages).__name__}")
        messages = tuple(dict(m) if isinstance(m, dict) else m for m in self.messages)
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
                raise ValueError(f"messages[{i}] must be a dict with str 'role' and 'content'; got {m!r}")
        if not messages or messages[-1]["role"] != "user" or messages[-1]["content"] != self.question:
            raise ValueError("messages must end with the user message whose content is question")
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "numbers", tuple(int(v) for v in self.numbers))

    def __hash__(self) -> int:
        chat = tuple((m["role"], m["content"]) for m in self.messages)
        return hash((chat, self.question, self.numbers, self.target))


# ---------------------------------------------------------------------------------------------
# Shared machinery: held-out split, prompts, validation, rewards
# ---------------------------------------------------------------------------------------------


def _draw_distinct(high: int, k: int, generator: torch.Generator) -> torch.Tensor:
    """``k`` distinct ints drawn uniformly from ``range(high)``, in draw order: LongTensor[k]."""
    if k == 0:
        return torch.zeros(0, dtype=torch.long)
    if high <= _RANDPERM_LIMIT:
        return torch.randperm(high, generator=generator)[:k]
    chosen: dict[int, None] = {}  # insertion-ordered set
    while len(chosen) < k:
        for v in torch.randint(0, high, (2 * (k - len(chosen)),), generator=generator).tolist():
            chosen.setdefault(v)
    return torch.tensor(list(chosen)[:k], dtype=torch.long)


def _skip(ranks: torch.Tensor, left_out: torch.Tensor) -> torch.Tensor:
    """Rank ``r`` among the problems not in ``left_out`` -> problem index (``left_out`` need not be sorted)."""
    if len(left_out) == 0:
        return ranks
    shifted = left_out.sort().values - torch.arange(len(left_out))
    return ranks + torch.searchsorted(shifted, ranks, right=True)


def _check_prompts(prompts: Any) -> None:
    """``prompts`` is a list of ``TextPrompt``."""
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise TypeError(f"prompts must be a list of TextPrompt; got {type(prompts).__name__}")
    for i, p in enumerate(prompts):
        if not isinstance(p, TextPrompt):
            raise TypeError(f"prompts[{i}] must be a TextPrompt; got {type(p).__name__}")


def _check_answers(answers: Any, n_prompts: int) -> None:
    """``answers`` is ``[batch, trial]`` of str: one list of completions per prompt, the same trial >= 1 each."""
    if isinstance(answers, (str, bytes)) or not isinstance(answers, Sequence):
        raise TypeError(f"answers must be a list (one per prompt) of lists of str; got {type(answers).__name__}")
    if len(answers) != n_prompts:
        raise ValueError(
            f"answers must have one list of completions per prompt: len(prompts) = {n_prompts}, "
            f"len(answers) = {len(answers)}"
        )
    trial = None
    for i, group in enumerate(answers):
        if isinstance(group, (str, bytes)) or not isinstance(group, Sequence):
            raise TypeError(
                f"answers[{i}] must be a list of str (the prompt's completions); got {type(group).__name__}"
            )
        if trial is None:
            trial = len(group)
        if len(group) != trial or trial == 0:
            raise ValueError(
                f"answers must be [batch, trial] with the same trial >= 1 for every prompt; "
                f"len(answers[0]) = {len(answers[0])}, len(answers[{i}]) = {len(group)}"
            )
        for j, text in enumerate(group):
            if not isinstance(text, str):
                raise TypeError(f"answers[{i}][{j}] must be a str (decoded text); got {type(text).__name__}")


class _TextTask:
    """What the text tasks share. A subclass is a frozen dataclass with fields ``few_shot``, ``n_heldout``,
    ``format_weight``, ``seed``, ``system`` and ``n_unseen_answers`` that calls ``_setup()`` from
    ``__post_init__``, and defines:

    - ``n_problems``: the size of the problem space; problems are numbered ``0 .. n_problems - 1``;
    - ``_decode(indices) -> LongTensor[n, len(numbers)]``: the problems with those numbers;
    - ``question(numbers) -> str`` and ``solution(numbers) -> tuple[int, ...]``;
    - ``_format_answer(solution) -> str`` (the target text) and ``parse_answer(text)``;
    - ``answer_size``: how many numbers a well-formed answer has;
    - ``_answer_ids(problems: LongTensor[n, len(numbers)]) -> LongTensor[n]``: one integer per distinct
      solution (for ``n_unseen_answers``).
    """

    few_shot: int
    n_heldout: int
    format_weight: float
    seed: int
    system: str | None
    n_unseen_answers: int

    KINDS: tuple[str, ...] = ANSWER_KINDS  # what ``answer_kind`` can return, in ``answer_kinds``'s order
    SYSTEM: ClassVar[str] = ""  # the task's own one-line system message (a recipe's ``short_system``)

    # set once by ``_setup`` (with ``object.__setattr__``: the subclasses are frozen)
    _heldout: torch.Tensor  # LongTensor[n_heldout]: the held-out problems, in eval order
    _unseen: torch.Tensor  # LongTensor[m]: the problems with a held-out answer, in eval order
    _shifted: torch.Tensor  # the sorted left-out problem indices minus their rank (``_train_index``)
    _preamble: tuple[dict, ...]  # the chat before every question

    # -- what a subclass defines (see above) ------------------------------------------------------

    @property
    def n_problems(self) -> int:
        raise NotImplementedError

    @property
    def answer_size(self) -> int:
        raise NotImplementedError

    def _decode(self, indices: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def question(self, numbers: Sequence[int]) -> str:
        raise NotImplementedError

    def solution(self, numbers: Sequence[int]) -> tuple[int, ...]:
        raise NotImplementedError

    def _format_answer(self, solution: tuple[int, ...]) -> str:
        raise NotImplementedError

    def parse_answer(self, text: str) -> tuple[int, ...] | None:
        raise NotImplementedError

    def _answer_ids(self, problems: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # -- set-up -----------------------------------------------------------------------------------

    def _setup(self) -> None:
        check_int("few_shot", self.few_shot, 0)
        check_int("n_heldout", self.n_heldout, 0)
        check_int("seed", self.seed, 0)
        w = self.format_weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"format_weight must be a finite number >= 0; got {w!r}")
        if self.system is not None and not isinstance(self.system, str):
            raise TypeError(f"system must be a str or None; got {type(self.system).__name__}")
        check_int("n_unseen_answers", self.n_unseen_answers, 0)
        n = self.n_problems
        if n > _MAX_PROBLEMS:
            raise ValueError(f"the problem space has {n} problems, more than 2**62: make the task smaller")
        if self.n_heldout >= n:
            raise ValueError(
                f"n_heldout must leave training problems: it must be in [0, {n - 1}] "
                f"(this task has {n} problems); got {self.n_heldout}"
            )
        g = torch.Generator().manual_seed(self.seed)
        unseen = self._draw_unseen_answer_problems(g)  # in eval order; empty when n_unseen_answers = 0
        n_free = n - len(unseen)
        if self.n_heldout >= n_free:
            raise ValueError(
                f"n_heldout must leave training problems: it must be in [0, {n_free - 1}] "
                f"(this task has {n} problems, {len(unseen)} of them with held-out answers); "
                f"got {self.n_heldout}"
            )
        heldout = _skip(_draw_distinct(n_free, self.n_heldout, g), unseen)  # in draw order: the eval order
        # the r-th training problem is r + #{i : e_i - i <= r}, e the sorted left-out indices (held out either way)
        excluded = torch.cat([heldout, unseen]).sort().values
        shifted = excluded - torch.arange(len(excluded))
        n_train = n - len(excluded)
        if self.few_shot > n_train:
            raise ValueError(f"few_shot must be in [0, {n_train}] (the training problems); got {self.few_shot}")
        object.__setattr__(self, "_heldout", heldout)
        object.__setattr__(self, "_unseen", unseen)
        object.__setattr__(self, "_shifted", shifted)
        examples = self._decode(self._train_index(_draw_distinct(n_train, self.few_shot, g)))
        chat: list[dict] = [] if self.system is None else [{"role": "system", "content": self.system}]
        for ex in examples.tolist():
            chat.append({"role": "user", "content": self.question(ex)})
            chat.append({"role": "assistant", "content": self.target(ex)})
        object.__setattr__(self, "_preamble", tuple(chat))

    def _draw_unseen_answer_problems(self, generator: torch.Generator) -> torch.Tensor:
        """Every problem whose solution is one of ``n_unseen_answers`` solutions drawn uniformly from the
        distinct ones, in a seeded random order: LongTensor[m] (empty when ``n_unseen_answers`` is 0)."""
        if self.n_unseen_answers == 0:
            return torch.zeros(0, dtype=torch.long)
        n = self.n_problems
        if n > _RANDPERM_LIMIT:
            raise ValueError(
                f"n_unseen_answers needs every problem enumerated: it allows at most "
                f"{_RANDPERM_LIMIT} problems; this task has {n}"
            )
        answers = self._answer_ids(self._decode(torch.arange(n)))  # [n]
        distinct = answers.unique()  # sorted
        if self.n_unseen_answers >= len(distinct):
            raise ValueError(
                f"n_unseen_answers must leave answers to train on: it must be in "
                f"[0, {len(distinct) - 1}] (this task has {len(distinct)} distinct answers); "
                f"got {self.n_unseen_answers}"
            )
        chosen = distinct[_draw_distinct(len(distinct), self.n_unseen_answers, generator)]
        problems = torch.isin(answers, chosen).nonzero().flatten()
        return problems[torch.randperm(len(problems), generator=generator)]

    def _train_index(self, r: torch.Tensor) -> torch.Tensor:
        """Training rank ``r`` (0 .. n_train - 1) -> problem index, skipping the held-out ones."""
        return r + torch.searchsorted(self._shifted, r, right=True)

    # -- problems and prompts -----------------------------------------------------------------------

    @property
    def n_train_problems(self) -> int:
        """How many problems ``sample_prompts`` draws from: ``n_problems - n_heldout - n_unseen_problems``."""
        return self.n_problems - self.n_heldout - len(self._unseen)

    @property
    def n_unseen_problems(self) -> int:
        """How many problems have one of the held-out answers (``unseen_answer_prompts``)."""
        return len(self._unseen)

    @property
    def heldout_problems(self) -> tuple[tuple[int, ...], ...]:
        """The held-out problems, in ``eval_prompts`` order."""
        return tuple(tuple(p) for p in self._decode(self._heldout).tolist())

    @property
    def few_shot_messages(self) -> tuple[dict, ...]:
        """The chat before every question: the system message (if any) and the worked examples."""
        return tuple(dict(m) for m in self._preamble)

    def target(self, numbers: Sequence[int]) -> str:
        """The canonical answer text of a problem."""
        return self._format_answer(self.solution(numbers))

    def prompt(self, numbers: Sequence[int]) -> TextPrompt:
        """The ``TextPrompt`` of one problem (any problem, held out or not)."""
        numbers = tuple(int(v) for v in numbers)
        question = self.question(numbers)
        messages = self._preamble + ({"role": "user", "content": question},)
        return TextPrompt(messages, question, numbers, self.target(numbers))

    def sample_prompts(self, n: int, generator: torch.Generator | None = None) -> list[TextPrompt]:
        """``n`` training prompts drawn uniformly (with replacement) from the non-held-out problems."""
        check_int("n", n, 1)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None; got {type(generator).__name__}")
        r = torch.randint(0, self.n_train_problems, (n,), generator=generator)
        return [self.prompt(p) for p in self._decode(self._train_index(r)).tolist()]

    def eval_prompts(self, n: int | None = None, generator: torch.Generator | None = None) -> list[TextPrompt]:
        """The first ``n`` held-out prompts (all of them when ``n`` is None), always in the same order.

        ``generator`` is accepted for the ``Task`` interface and ignored.
        """
        if n is None:
            n = self.n_heldout
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= self.n_heldout:
            raise ValueError(f"n must be an int in [0, n_heldout = {self.n_heldout}]; got {n!r}")
        return [self.prompt(p) for p in self._decode(self._heldout[:n]).tolist()]

    def unseen_answer_prompts(self, n: int | None = None) -> list[TextPrompt]:
        """The first ``n`` problems whose answer never occurs in training (all of them when ``n`` is None),
        always in the same order: the second held-out set (``n_unseen_answers``)."""
        if n is None:
            n = self.n_unseen_problems
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= self.n_unseen_problems:
            raise ValueError(f"n must be an int in [0, n_unseen_problems = {self.n_unseen_problems}]; got {n!r}")
        return [self.prompt(p) for p in self._decode(self._unseen[:n]).tolist()]

    # -- scoring ------------------------------------------------------------------------------------

    @property
    def max_reward(self) -> float:
        """``format_weight + 1``: the reward of a correct answer."""
        return float(self.format_weight) + 1.0

    def _parsed(self, prompts: Sequence[TextPrompt], answers: Sequence[Sequence[str]]) -> list[list]:
        """Validate the pair and parse every answer: ``[batch][trial]`` of tuples or None."""
        _check_prompts(prompts)
        _check_answers(answers, len(prompts))
        return [[self.parse_answer(text) for text in group] for group in answers]

    def _scores(
        self, prompts: Sequence[TextPrompt], answers: Sequence[Sequence[str]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(format_ok, is_correct), each BoolTensor[batch, trial], from one parse of every answer."""
        parsed = self._parsed(prompts, answers)
        ok, correct = [], []
        for prompt, group in zip(prompts, parsed):
            want = self.solution(prompt.numbers)
            ok.append([p is not None and len(p) == self.answer_size for p in group])
            correct.append([p is not None and p == want for p in group])
        if not parsed:
            return torch.zeros(0, 0, dtype=torch.bool), torch.zeros(0, 0, dtype=torch.bool)
        return torch.tensor(ok, dtype=torch.bool), torch.tensor(correct, dtype=torch.bool)

    def format_ok(self, prompts: Sequence[TextPrompt], answers: Sequence[Sequence[str]]) -> torch.Tensor:
        """The answer is in the asked form (``parse_answer`` accepts it) with ``answer_size`` numbers:
        BoolTensor[batch, trial]."""
        return self._scores(prompts, answers)[0]

    def is_correct(self, prompts: Sequence[TextPrompt], answers: Sequence[Sequence[str]]) -> torch.Tensor:
        """Well formed and equal to the solution: BoolTensor[batch, trial]."""
        return self._scores(prompts, answers)[1]

    def rewards(self, prompts: Sequence[TextPrompt], answers: Sequence[Sequence[str]]) -> torch.Tensor:
        """R = format_weight · format_ok + 1.0 · is_correct: FloatTensor[batch, trial].

        ``answers[i][j]`` is the j-th completion (decoded text) for ``prompts[i]``. Text that is not in
        the asked form scores 0.0 (never an error); a malformed ``answers`` structure raises.
        """
        ok, correct = self._scores(prompts, answers)
        return float(self.format_weight) * ok.float() + correct.float()

    def answer_kind(self, prompt: TextPrompt, answer: str) -> str:
        """Which of ``ANSWER_KINDS`` ``answer`` is: ``"correct"``; in the asked form (``answer_size``
        numbers) but wrong, ``"right form, wrong order"`` when it holds the prompt's numbers (as a multiset)
        and ``"right form, wrong numbers"`` otherwise; not in the asked form, ``"extra words"`` when it has
        a letter and ``"other"`` otherwise."""
        numbers = self.parse_answer(answer)
        if numbers is not None and len(numbers) == self.answer_size:
            if numbers == self.solution(prompt.numbers):
                return "correct"
            same = sorted(numbers) == sorted(prompt.numbers)
            return "right form, wrong order" if same else "right form, wrong numbers"
        return "extra words" if any(ch.isalpha() for ch in str(answer)) else "other"

    def answer_kinds(self, prompts: Sequence[TextPrompt], answers: Sequence[Sequence[str]]) -> dict[str, float]:
        """``{kind: fraction of all answers}`` for every kind of ``KINDS`` (``ANSWER_KINDS`` here; in that order,
        0.0 for a kind no answer is): every completion of every prompt counts once."""
        _check_prompts(prompts)
        _check_answers(answers, len(prompts))
        kinds = [self.answer_kind(p, a) for p, group in zip(prompts, answers) for a in group]
        return {k: kinds.count(k) / max(len(kinds), 1) for k in self.KINDS}

    def format(self, prompt: TextPrompt, answer: str | None = None) -> str:
        """One line, e.g. ``"Sort in increasing order: 5, 2, 8 -> '2, 5, 8'  (reward 1.2, correct ✓)"``."""
        text = prompt.question.split("\n")[0]
        if answer is None:
            return text
        ok, correct = self._scores([prompt], [[answer]])
        reward = float(self.format_weight) * float(ok[0, 0]) + float(correct[0, 0])
        verdict = "correct ✓" if bool(correct[0, 0]) else "not correct ✗"
        return f"{text} -> {answer!r}  (reward {reward:g}, {verdict})"


def _parse_int_list(text: object) -> tuple[int, ...] | None:
    """Non-negative ASCII integers separated by commas (spaces allowed around each comma), nothing else
    after stripping surrounding whitespace; None otherwise. Never raises."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not _INT_LIST.fullmatch(text):
        return None
    parts = [p.strip(" ") for p in text.split(",")]
    if any(len(p) > MAX_ANSWER_DIGITS for p in parts):
        return None
    return tuple(int(p) for p in parts)


_INT_LIST = re.compile(r"[0-9]+(?: *, *[0-9]+)*")

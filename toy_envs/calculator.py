"""Arithmetic with a calculator the model may call: a tool-use environment, turn by turn.

The model is asked a product. It may answer at once, or call the calculator first::

    system: You answer arithmetic questions with the number alone. A calculator is there if you need it: write
            <calc>23*41</calc> and you get <result>943</result>.
    user:   What is 23 * 41?
    assistant: <calc>23*41</calc>
    user:   <result>943</result>
    assistant: 943

Some problems are meant to be done in one's head (``kind == "head"``: a two-digit number times 10, or with
``easy="one_digit"`` a one-digit product), the others are not (two digits by two, ``kind == "tool"``). The default
easy kind is one a warm start teaches SmolLM2-135M to do alone; one-digit products it gets wrong without the tool
even after the warm start (RESULTS.md, "A calculator"), so for it a call pays on every problem.
The reward is 1 for the right number, minus ``call_cost`` for every call: a call pays wherever the model would
be wrong without it, so RL can learn *when* to call (notebook 12), if the model can do the easy kind alone.

A reply holding ``<calc>`` is a call; any other reply is the answer (its last whole number), which ends the episode.
The calculator reads ``a+b``, ``a-b`` or ``a*b`` of whole numbers and nothing else: anything else between the tags
(a formula, a name, code), or a call never closed with ``</calc>``, gets ``<error>...</error>`` as the
environment's turn, and the call still counts. Model
text is matched by a regular expression and never evaluated; nothing a model writes raises. An episode holds at most
``max_turns`` replies; one that never answers earns nothing but its calls' cost.

- ``CalculatorTask``: the task the training loop runs (``minirl.protocols.EpisodicTask``); ``call_rates`` says how
  often the model called on each kind of problem.
- ``CalculatorChat``: one episode as a conversation, ``CalcEpisode`` its record; ``run_calculator``: the tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch

from toy_envs.episodic import EpisodeScores

__all__ = [
    "CALC_SYSTEM",
    "EASY",
    "KINDS",
    "CalcEpisode",
    "CalcPrompt",
    "CalculatorChat",
    "CalculatorTask",
    "call_rates",
    "parse_answer",
    "run_calculator",
]

CALC_SYSTEM = (
    "You answer arithmetic questions with the number alone. A calculator is there if you need it: write "
    "<calc>23*41</calc> and you get <result>943</result>."
)
"""The system message of every conversation: the protocol, shown once."""

KINDS = ("head", "tool")
"""``head``: a problem meant for one's head (``EASY``); ``tool``: two digits by two (11-99 times 11-99)."""

EASY: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "one_digit": ((2, 9), (2, 9)),
    "times_ten": ((11, 99), (10, 10)),
}
"""The easy kinds (``CalculatorTask.easy``): the ranges of the two factors. ``one_digit``: 2-9 times 2-9;
``times_ten``: 11-99 times 10 (a digit appended: a pattern a warm start can teach a small model)."""

_TOOL = ((11, 99), (11, 99))
_CALL = re.compile(r"<calc>(.*?)</calc>", re.DOTALL)
_EXPRESSION = re.compile(r"^\s*(\d{1,6})\s*([+*-])\s*(\d{1,6})\s*$")
_NUMBER = re.compile(r"-?\d+")
MAX_REPLY_CHARS = 80
"""A reply longer than this is neither read as a call nor as an answer: the environment says so."""


def run_calculator(expression: str) -> int | None:
    """``a+b``, ``a-b`` or ``a*b`` of whole numbers of up to 6 digits (spaces allowed) -> its value; anything else
    -> None. A regular expression reads it: nothing is evaluated."""
    match = _EXPRESSION.match(expression) if isinstance(expression, str) else None
    if match is None:
        return None
    a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
    return a + b if op == "+" else a - b if op == "-" else a * b


def parse_answer(reply: str) -> int | None:
    """The last whole number of a reply (``"943"``, ``"It is 943."``), or None."""
    numbers = _NUMBER.findall(reply) if isinstance(reply, str) else []
    return int(numbers[-1]) if numbers else None


def _factors(ranges: tuple[tuple[int, int], tuple[int, int]], gen: torch.Generator | None) -> tuple[int, int]:
    """Two factors drawn uniformly from their ranges: one draw of both when the ranges are equal, else one draw of
    each factor whose range holds more than one number (a fixed factor draws nothing)."""
    (a_low, a_high), (b_low, b_high) = ranges
    if ranges[0] == ranges[1]:
        a, b = torch.randint(a_low, a_high + 1, (2,), generator=gen).tolist()
        return a, b
    a = a_low if a_low == a_high else int(torch.randint(a_low, a_high + 1, (), generator=gen))
    b = b_low if b_low == b_high else int(torch.randint(b_low, b_high + 1, (), generator=gen))
    return a, b


@dataclass(frozen=True)
class CalcPrompt:
    """One problem: the chat the model reads first, the factors and the kind (``KINDS``)."""

    messages: tuple[dict, ...] = field(repr=False)
    a: int
    b: int
    kind: str

    @property
    def answer(self) -> int:
        return self.a * self.b


@dataclass
class CalcEpisode:
    """One episode as the environment kept it: the replies, the calls (well-formed or not), the answer read (None:
    none given) and the reward; ``success``: the answer was right."""

    kind: str
    replies: list[str] = field(default_factory=list)
    calls: int = 0
    bad_calls: int = 0
    answer: int | None = None
    reward: float = 0.0
    success: bool = False

    @property
    def turns(self) -> int:
        return len(self.replies)

    @property
    def invalid(self) -> int:
        """Replies that the environment could not use: malformed calls and over-long replies."""
        return self.bad_calls


class CalculatorChat:
    """One episode: ``step(reply)`` -> (the environment's next message, or None once over; the reward of this
    turn; whether the episode ended). ``episode`` keeps the record."""

    def __init__(self, prompt: CalcPrompt, max_turns: int, call_cost: float) -> None:
        self.prompt, self.max_turns, self.call_cost = prompt, max_turns, call_cost
        self.done = False
        self.episode = CalcEpisode(kind=prompt.kind)

    def step(self, reply: str) -> tuple[str | None, float, bool]:
        if self.done:
            raise RuntimeError("the episode is over: start a new CalculatorChat")
        ep = self.episode
        ep.replies.append(reply)
        message, reward = self._turn(reply if isinstance(reply, str) else "")
        last = ep.turns >= self.max_turns
        self.done = message is None or last
        if last and message is not None:  # the turns are spent before an answer: only the calls' cost
            reward = -self.call_cost * ep.calls
            ep.reward = reward
        return (None if self.done else message), reward, self.done

    def _turn(self, reply: str) -> tuple[str | None, float]:
        """The environment's answer to one reply: a result or an error (the episode goes on), or None for an
        answer (the episode ends), with the reward."""
        ep = self.episode
        if len(reply) > MAX_REPLY_CHARS:
            ep.bad_calls += 1
            return f"<error>a reply of at most {MAX_REPLY_CHARS} characters: a call or the number</error>", 0.0
        if "<calc>" in reply:  # a call, closed or not
            ep.calls += 1
            call = _CALL.search(reply)
            value = None if call is None else run_calculator(call.group(1))
            if value is None:
                ep.bad_calls += 1
                return "<error>the calculator reads a+b, a-b or a*b of whole numbers</error>", 0.0
            return f"<result>{value}</result>", 0.0
        ep.answer = parse_answer(reply)
        ep.success = ep.answer == self.prompt.answer
        ep.reward = float(ep.success) - self.call_cost * ep.calls
        return None, ep.reward


@dataclass
class CalculatorTask(EpisodeScores):
    """Products with a calculator, as a task of the training loop (``minirl.protocols.EpisodicTask``).

    A prompt is a problem (``CalcPrompt``); an answer is the episode the model plays from it with a fresh
    ``CalculatorChat`` (``make_env``); its reward is 1 for the right number minus ``call_cost`` per call.
    ``tool_share`` of the training problems are hard (``"tool"``), the rest easy (``"head"``); the evaluation
    problems are ``n_eval`` of each kind, drawn once from ``eval_seed`` (the hard ones never drawn in training:
    their pairs are held out; the easy ones may be, as times ten there are only 89). ``is_correct``: the answer
    was right; ``format_ok``: no malformed call."""

    call_cost: float = 0.2
    tool_share: float = 0.5
    max_turns: int = 3
    n_eval: int = 20
    eval_seed: int = 1234
    system: str = CALC_SYSTEM
    easy: str = "times_ten"
    demo_call_rate: float = 0.25
    _held_out: frozenset = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.call_cost <= 1.0:
            raise ValueError(f"call_cost must be in [0, 1]; got {self.call_cost!r}")
        if not 0.0 <= self.tool_share <= 1.0:
            raise ValueError(f"tool_share must be in [0, 1]; got {self.tool_share!r}")
        if self.easy not in EASY:
            raise ValueError(f"easy must be one of {sorted(EASY)}; got {self.easy!r}")
        if not 0.0 <= self.demo_call_rate <= 1.0:
            raise ValueError(f"demo_call_rate must be in [0, 1]; got {self.demo_call_rate!r}")
        if isinstance(self.max_turns, bool) or not isinstance(self.max_turns, int) or self.max_turns < 1:
            raise ValueError(f"max_turns must be a positive int; got {self.max_turns!r}")
        gen = torch.Generator().manual_seed(self.eval_seed)
        self._held_out = frozenset((p.a, p.b) for p in self._draw("tool", self.n_eval, gen, frozenset()))

    @property
    def max_reward(self) -> float:
        """The best reward: the right number without a call."""
        return 1.0

    def prompt(self, a: int, b: int, kind: str) -> CalcPrompt:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
        messages = ({"role": "system", "content": self.system}, {"role": "user", "content": f"What is {a} * {b}?"})
        return CalcPrompt(messages, a, b, kind)

    def _draw(self, kind: str, n: int, gen: torch.Generator | None, avoid: frozenset) -> list[CalcPrompt]:
        ranges = _TOOL if kind == "tool" else EASY[self.easy]
        out: list[CalcPrompt] = []
        while len(out) < n:
            a, b = _factors(ranges, gen)
            if (a, b) not in avoid:
                out.append(self.prompt(a, b, kind))
        return out

    def sample_prompts(self, n: int, generator: torch.Generator | None = None, /) -> list[CalcPrompt]:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int; got {n!r}")
        hard = (torch.rand(n, generator=generator) < self.tool_share).tolist()
        return [self._draw("tool" if h else "head", 1, generator, self._held_out)[0] for h in hard]

    def eval_prompts(self, n: int, generator: torch.Generator | None = None, /) -> list[CalcPrompt]:
        """Up to ``n`` problems: the held-out hard ones and as many easy ones, alternating (the same each call)."""
        gen = torch.Generator().manual_seed(self.eval_seed)
        hard = self._draw("tool", self.n_eval, gen, frozenset())
        easy = self._draw("head", self.n_eval, gen, frozenset())
        return [p for pair in zip(hard, easy) for p in pair][:n]

    def make_env(self, prompt: CalcPrompt, /) -> CalculatorChat:
        return CalculatorChat(prompt, self.max_turns, self.call_cost)

    def demonstrate(self, env: CalculatorChat, generator: torch.Generator | None, /) -> str:
        """A demonstrator that teaches the protocol and not when to use it: on its first turn it calls the
        calculator with probability ``demo_call_rate`` (a quarter) whatever the problem, then answers with the right
        number."""
        p = env.prompt
        if env.episode.turns == 0 and float(torch.rand((), generator=generator)) < self.demo_call_rate:
            return f"<calc>{p.a}*{p.b}</calc>"
        return str(p.answer)

    def _own_diagnostics(self, prompts: list[CalcPrompt], answers: list[list[CalcEpisode]]) -> dict[str, float]:
        """``calls on <kind> problems`` and ``right on <kind> problems`` for each kind of problem present
        (``call_rates``: the share of episodes with a call; the share with the right number)."""
        out: dict[str, float] = {}
        for kind, rate in call_rates(prompts, answers).items():
            if rate is not None:
                right = [e.success for p, group in zip(prompts, answers) if p.kind == kind for e in group]
                out[f"calls on {kind} problems"] = rate
                out[f"right on {kind} problems"] = sum(right) / len(right)
        return out

    def transcript(self, prompt: CalcPrompt, episode: CalcEpisode, /) -> str:
        """One line of an episode: the problem, each reply quoted, the answer read and the calls."""
        replies = " | ".join(repr(r) for r in episode.replies)
        return (
            f"{prompt.a} * {prompt.b} ({prompt.kind}): {replies} -> answer {episode.answer}, "
            f"{episode.calls} call(s), {episode.bad_calls} malformed"
        )

    def _well_formed(self, episode: CalcEpisode) -> bool:
        """An answer was given and no call was malformed."""
        return episode.answer is not None and episode.invalid == 0


def call_rates(prompts: list[CalcPrompt], answers: list[list[CalcEpisode]]) -> dict[str, float | None]:
    """The share of episodes with at least one call, on each kind of problem (None: no problem of that kind)."""
    rates: dict[str, float | None] = {}
    for kind in KINDS:
        episodes = [e for p, group in zip(prompts, answers) if p.kind == kind for e in group]
        rates[kind] = sum(e.calls > 0 for e in episodes) / len(episodes) if episodes else None
    return rates

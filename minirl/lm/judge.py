"""An LLM as the judge (RLAIF): a language model asked whether a reply is right, its answer's probability as the
reward.

Where no verifier exists (is this summary faithful? is this reply helpful?) the field asks a model. Here the judge is
SmolLM2-135M-Instruct itself, frozen, shown the question and a reply and asked to answer yes or no; the reward is

    P(yes) = Σ_{t ∈ YES} p(t | judge prompt) / Σ_{t ∈ YES ∪ NO} p(t | judge prompt)

over the first token of its answer (``YES = ("yes", "Yes")``, ``NO = ("no", "No")``): one forward pass per reply,
no sampling. On arithmetic a verifier exists, so the judge can be checked against it (``agreement``), and a policy
trained on the judge's reward (``JudgedTask``) can be watched for what it learns: the verifier's accuracy and the
judge's score side by side (notebook 11).

Shapes: one score per reply, ``[batch, trial]`` like the rewards of a task.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch

from minirl.lm.models import load_policy
from minirl.lm.policy import CausalLMPolicy, _position_ids

__all__ = [
    "JUDGE_SYSTEM",
    "NO",
    "YES",
    "Judge",
    "JudgedTask",
    "agreement",
    "judge_messages",
    "question_of",
    "yes_probability",
]

JUDGE_SYSTEM = "You check answers to arithmetic problems."
YES = ("yes", "Yes")
NO = ("no", "No")


def judge_messages(question: str, reply: str) -> list[dict[str, str]]:
    """The chat the judge reads: its system message, then the question, the reply and the yes/no question."""
    if not isinstance(question, str) or not isinstance(reply, str):
        raise TypeError(f"question and reply must be strings; got {type(question).__name__}, {type(reply).__name__}")
    ask = (
        f"Question: {question}\nReply: {reply}\n"
        "Is the number at the end of the reply the right answer? Answer yes or no."
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": ask}]


def yes_probability(log_probs: torch.Tensor, n_yes: int) -> torch.Tensor:
    """The judge's P(yes) from the log-probabilities of its answer's first token: ``log_probs`` ``[reply, word]``
    holds log p of each word of ``YES`` then of ``NO`` (any number of each; the first ``n_yes`` columns are yes),

        P(yes) = Σ_{yes words} p / (Σ_{yes words} p + Σ_{no words} p) = σ(logsumexp(yes) − logsumexp(no))

    renormalised over the two answers (the rest of the vocabulary does not count), computed in log space so that
    words far below the rest of the vocabulary (log p ≈ −40) still give a finite, exact answer. ``[reply]``."""
    if not isinstance(log_probs, torch.Tensor) or log_probs.dim() != 2 or not log_probs.is_floating_point():
        raise ValueError(f"log_probs must be a float tensor [reply, word]; got {log_probs!r:.80}")
    if isinstance(n_yes, bool) or not isinstance(n_yes, int) or not 1 <= n_yes < log_probs.shape[1]:
        raise ValueError(
            f"n_yes must be an int in 1..{log_probs.shape[1] - 1} (some words yes, some no); got {n_yes!r}"
        )
    yes = torch.logsumexp(log_probs[:, :n_yes], dim=1)
    no = torch.logsumexp(log_probs[:, n_yes:], dim=1)
    return torch.sigmoid(yes - no)


def question_of(prompt: Any) -> str:
    """The question a task's prompt asks: the first line of its last user message (``"What is 5 + 0 + 1 + 4?"``)."""
    messages = getattr(prompt, "messages", None)
    if not messages:
        raise ValueError(f"prompt must have .messages (a text task's prompt); got {type(prompt).__name__}")
    return str(messages[-1]["content"]).splitlines()[0]


class Judge:
    """A frozen causal LM that scores replies with P(yes) (the module's docstring).

    Args:
        policy: the judge's model as a ``CausalLMPolicy`` (``minirl.lm.load_policy("smollm2-135m")``); it is
            frozen here (no gradient) and never trained.
        batch_size: replies scored per forward pass (memory).
        combine: ``yes_probability`` or a function of the same signature (notebook 11's exercise).
    """

    def __init__(
        self,
        policy: CausalLMPolicy,
        batch_size: int = 64,
        combine: Callable[[torch.Tensor, int], torch.Tensor] | None = None,
    ) -> None:
        if not isinstance(policy, CausalLMPolicy):
            raise TypeError(f"policy must be a CausalLMPolicy (the judge's model); got {type(policy).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1; got {batch_size!r}")
        self.policy = policy.requires_grad_(False)
        self.batch_size = batch_size
        self.combine = yes_probability if combine is None else combine
        self.words = [*YES, *NO]

    @torch.no_grad()
    def p_yes(self, questions: Sequence[str], replies: Sequence[str]) -> torch.Tensor:
        """P(yes) for each (question, reply): a float tensor ``[n]`` in (0, 1), on the CPU. One forward pass over
        each judge prompt; the next-token distribution at its end gives the first token of the answer."""
        if len(questions) != len(replies):
            raise ValueError(f"questions and replies must pair up; got {len(questions)} and {len(replies)}")
        tokenizer = self.policy.tokenizer
        ids = torch.tensor([tokenizer(w, add_special_tokens=False)["input_ids"][0] for w in self.words])
        out = []
        for i in range(0, len(replies), self.batch_size):
            pairs = zip(questions[i : i + self.batch_size], replies[i : i + self.batch_size])
            input_ids, attention_mask = self.policy.encode_prompts([judge_messages(q, r) for q, r in pairs])
            position_ids = _position_ids(attention_mask)  # left padding: each prompt's positions from 0
            with self.policy._autocast():  # bfloat16 on CUDA, as the policy's own passes
                logits = self.policy.model(
                    input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, logits_to_keep=1
                ).logits[:, -1]
            first = torch.log_softmax(logits.float(), dim=-1)[:, ids.to(logits.device)]  # [n, words]
            out.append(self.combine(first.cpu(), len(YES)).float())
        return torch.cat(out) if out else torch.zeros(0)

    def scores(self, prompts: Sequence[Any], answers: Sequence[Sequence[str]]) -> torch.Tensor:
        """P(yes) of every reply to every prompt: ``[batch, trial]`` (``answers[i][j]``: the j-th reply to prompt i)."""
        if len(prompts) != len(answers):
            raise ValueError(f"answers must hold one group per prompt ({len(prompts)}); got {len(answers)}")
        trial = {len(group) for group in answers}
        if len(trial) != 1:
            raise ValueError(f"every prompt must have the same number of replies; got sizes {sorted(trial)}")
        questions = [question_of(p) for p, group in zip(prompts, answers) for _ in group]
        flat = [reply for group in answers for reply in group]
        return self.p_yes(questions, flat).view(len(prompts), trial.pop())


def agreement(scores: torch.Tensor, correct: torch.Tensor, threshold: float = 0.5) -> dict[str, float]:
    """How often the judge's verdict (score ≥ ``threshold``) equals the verifier's, and on each side: the accepted
    share of right replies (``yes_when_right``) and of wrong ones (``yes_when_wrong``, the judge's blind spot).
    ``scores`` float and ``correct`` bool, the same shape."""
    if scores.shape != correct.shape or correct.dtype != torch.bool:
        raise ValueError(
            f"scores and correct must have one shape, correct bool; got {tuple(scores.shape)}, "
            f"{tuple(correct.shape)} {correct.dtype}"
        )
    says_yes = scores >= threshold
    right, wrong = correct, ~correct
    return {
        "agreement": float((says_yes == correct).float().mean()),
        "yes_when_right": float(says_yes[right].float().mean()) if right.any() else float("nan"),
        "yes_when_wrong": float(says_yes[wrong].float().mean()) if wrong.any() else float("nan"),
        "right_share": float(correct.float().mean()),
    }


@dataclasses.dataclass
class JudgedTask:
    """A text task whose reward is the judge's P(yes) instead of its verifier's score: everything else (prompts,
    ``is_correct``, the format check, held-out prompts) is the task's own, so a run logs the judge's reward and the
    verifier's accuracy side by side.

    Args:
        task: the text task (its ``is_correct`` stays the verifier).
        judge_model: the judge's model, loaded (``load_policy``) when it first scores, frozen and never trained:
            ``"smollm2-135m"``, a saved folder, or a hub name.
        device: the judge's device (None: ``load_policy``'s choice).

    ``JudgedTask.using(task, judge)`` takes a ``Judge`` already built (notebook 11's, on the learner's
    ``yes_probability``). A run folder keeps ``task``, ``judge_model`` and ``device`` and builds the task back.
    """

    task: Any
    judge_model: str = "smollm2-135m"
    device: str | None = None
    _judge: Judge | None = dataclasses.field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def using(cls, task: Any, judge: Judge) -> JudgedTask:
        out = cls(task)
        out._judge = judge
        return out

    @property
    def judge(self) -> Judge:
        if self._judge is None:
            self._judge = Judge(load_policy(self.judge_model, device=self.device))
        return self._judge

    def rewards(self, prompts: Sequence[Any], answers: Sequence[Sequence[str]]) -> torch.Tensor:
        """P(yes) of each reply, ``[batch, trial]``."""
        return self.judge.scores(prompts, answers)

    # the task's own prompts, verifier and format check (methods, so that the loop's protocols see them)
    def sample_prompts(self, n: int, generator: torch.Generator | None = None) -> Any:
        return self.task.sample_prompts(n, generator)

    def eval_prompts(self, n: int | None = None, generator: torch.Generator | None = None) -> Any:
        return self.task.eval_prompts(n, generator)

    def is_correct(self, prompts: Sequence[Any], answers: Sequence[Sequence[str]]) -> torch.Tensor:
        return self.task.is_correct(prompts, answers)

    def format_ok(self, prompts: Sequence[Any], answers: Sequence[Sequence[str]]) -> torch.Tensor:
        return self.task.format_ok(prompts, answers)

    @property
    def max_reward(self) -> float:
        return 1.0

    def __getattr__(self, name: str) -> Any:  # anything else (answer_kinds, solution, ...) from the task
        if name.startswith("__") or name in ("task", "_judge", "judge_model", "device"):
            raise AttributeError(name)
        return getattr(self.task, name)

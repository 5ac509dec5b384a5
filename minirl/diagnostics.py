"""Diagnostics a learner can trust: whether a run *can* learn, said in one line instead of flat curves.

GRPO learns only from differences inside a group. Three ways a run gets none, each seen often in peers'
issue trackers ("0 reward for the first 100 steps", "the loss is 0 and nothing happens"):

- every response hits the token budget before its end token (``truncated`` = 1): a reasoning reply cut
  inside its scratchpad never reaches its answer, so every reward is 0;
- every reward is 0: the policy never samples a right answer, so there is nothing to reinforce;
- every group's rewards are equal (``zero_variance_groups`` = 1), whatever their value: every advantage
  is 0, so the policy-gradient loss is 0 and has no gradient (unless the task is solved: every reward is the
  best there is).

``train`` checks each window of ``TrainConfig.stall_window`` steps with ``cannot_learn`` and prints the
verdict once (``History.notes`` keeps it). ``length_by_correctness`` splits the response length into right
and wrong replies: a reasoning run whose right answers are long and wrong ones short (or the reverse) shows
whether thinking helps. ``episode_diagnostics_line`` prints an agent's task's ``diagnostics`` (turns, unusable
replies, success by start cell, calls by kind of problem) on one line, as ``minirl eval`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["cannot_learn", "episode_diagnostics_line", "length_by_correctness"]


def length_by_correctness(lengths: torch.Tensor, correct: torch.Tensor) -> tuple[float, float]:
    """(mean length of the correct responses, mean length of the wrong ones), in tokens.

    ``lengths``: ``[batch, trial]`` real tokens per response; ``correct``: ``[batch, trial]`` bool. A kind
    with no response in the batch has no mean: its value is NaN (a plot leaves the point out).
    """
    if not isinstance(lengths, torch.Tensor) or not isinstance(correct, torch.Tensor):
        raise ValueError("lengths and correct must be tensors of shape [batch, trial]")
    if lengths.shape != correct.shape:
        raise ValueError(
            f"correct must have the shape of lengths [batch, trial] = {list(lengths.shape)}; got {list(correct.shape)}"
        )
    lengths, correct = lengths.float().cpu(), correct.bool().cpu()
    right, wrong = (float(lengths[part].mean()) if part.any() else float("nan") for part in (correct, ~correct))
    return right, wrong


def cannot_learn(
    records: Sequence[dict[str, float]], *, max_reward: float | None = None, budget: int | None = None
) -> str | None:
    """One line saying why the steps in ``records`` taught the policy nothing, or None when they could.

    ``records``: the window's per-step records (``History.records``) with ``reward``, ``zero_variance_groups``
    and, for a policy with a token budget, ``truncated``. ``max_reward``: the task's best reward (a window where
    every response earned it is solved, not stuck). ``budget``: the response budget in tokens, named in the
    line. The first that holds, over every step of the window:

    1. every response truncated → raise the budget;
    2. every group's rewards equal and the mean reward 0 → every reward 0: nothing to reinforce;
    3. every group's rewards equal, and not every reward the best → every advantage 0.
    """
    if not records:
        return None
    first, last = int(records[0]["step"]), int(records[-1]["step"])
    steps = f"steps {first}-{last}" if first != last else f"step {first}"
    if all(r.get("truncated", 0.0) == 1.0 for r in records):
        size = f"{budget}-token" if budget is not None else "token"
        return (
            f"cannot learn ({steps}): every response hit the {size} budget before its end token, so no answer "
            "was ever read; raise max_new_tokens (--max-new-tokens) or shorten what the prompt asks for"
        )
    if not all(r["zero_variance_groups"] == 1.0 for r in records):
        return None
    mean = sum(r["reward"] for r in records) / len(records)
    if all(r["reward"] == 0.0 for r in records):
        return (
            f"cannot learn ({steps}): every reward was 0, so every advantage and the loss's gradient were 0; "
            "the policy never samples a rewarded answer: start from a supervised warm start (--sft-steps), "
            "an easier task or a reward with partial credit"
        )
    if max_reward is not None and all(r["reward"] == max_reward for r in records):
        return None  # solved: every response earned the best reward
    return (
        f"cannot learn ({steps}): in every group all responses earned the same reward (mean {mean:.2f}), so "
        "every advantage was 0 and the policy did not move; sample more responses per prompt "
        "(--group-size), at a higher temperature, or use a reward that tells them apart"
    )


def episode_diagnostics_line(figures: dict[str, float]) -> str:
    """``EpisodeScores.diagnostics`` on one line: the turns and the unusable replies an episode as numbers, the
    task's shares (success from a cell, calls on a kind of problem) as percentages."""
    counts = {"turns": "turns an episode", "invalid_replies": "unusable replies an episode"}
    parts = [f"{figures[k]:.1f} {words}" for k, words in counts.items() if k in figures]
    return "; ".join(parts + [f"{k} {v:.0%}" for k, v in figures.items() if k not in counts])

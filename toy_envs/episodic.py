"""What an agent's task reads off its episodes: the return, success and form of each, as ``[batch, trial]`` tensors.

An episodic task (``minirl.protocols.EpisodicTask``: ``toy_envs.maze_text``, ``toy_envs.calculator``) answers each
prompt with a group of episode records, each with a ``reward`` (its return) and ``success``; ``EpisodeScores`` turns
them into the tensors the training loop asks a task for. Each task says what a well-formed episode is
(``_well_formed``). ``diagnostics`` sums up what to watch in a multi-turn run (``minirl eval`` prints it, the
training loop logs its first two each step): the turns an episode, the replies the environment could not use,
and each task's own figures (success by start cell, the calls on each kind of problem).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["EpisodeScores"]


class EpisodeScores:
    """``rewards``, ``is_correct`` and ``format_ok`` of groups of episode records (a list per prompt)."""

    def _well_formed(self, episode: Any) -> bool:
        raise NotImplementedError

    def _per_episode(self, answers: list[list[Any]], value) -> torch.Tensor:
        return torch.tensor([[float(value(e)) for e in group] for group in answers])

    def rewards(self, prompts: list[Any], answers: list[list[Any]], /) -> torch.Tensor:
        """``[batch, trial]``: each episode's return."""
        return self._per_episode(answers, lambda e: e.reward)

    def is_correct(self, prompts: list[Any], answers: list[list[Any]], /) -> torch.Tensor:
        """``[batch, trial]`` bool: the episode succeeded (the goal reached, the right number given)."""
        return self._per_episode(answers, lambda e: e.success).bool()

    def format_ok(self, prompts: list[Any], answers: list[list[Any]], /) -> torch.Tensor:
        """``[batch, trial]`` bool: the episode was well formed (``_well_formed``)."""
        return self._per_episode(answers, self._well_formed).bool()

    def _own_diagnostics(self, prompts: list[Any], answers: list[list[Any]]) -> dict[str, float]:
        return {}

    def diagnostics(self, prompts: list[Any], answers: list[list[Any]], /) -> dict[str, float]:
        """Over every episode of every prompt: ``turns`` (the mean replies an episode), ``invalid_replies`` (the
        mean replies an episode that the environment could not use: not a move, a malformed call), then the task's
        own figures. A ValueError when ``answers`` is not one group of episodes per prompt."""
        if len(answers) != len(prompts) or not all(len(group) > 0 for group in answers):
            raise ValueError(
                f"answers must hold a non-empty group of episodes for each of the {len(prompts)} prompts; got "
                f"{len(answers)} groups of sizes {[len(g) for g in answers][:10]}"
            )
        episodes = [e for group in answers for e in group]
        return {
            "turns": sum(e.turns for e in episodes) / len(episodes),
            "invalid_replies": sum(e.invalid for e in episodes) / len(episodes),
            **self._own_diagnostics(prompts, answers),
        }

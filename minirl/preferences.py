"""Learning from preferences: preference pairs, and a reward model trained on them.

A preference dataset holds triples (x, y_w, y_l): a prompt, the response a judge preferred
("chosen", y_w) and the one it did not ("rejected", y_l). The Bradley–Terry model says that the
judge prefers y_w with probability

    P(y_w ≻ y_l | x) = σ(r(x, y_w) − r(x, y_l)),       σ(z) = 1 / (1 + e^{−z})

for some hidden score r. Two ways to use such data:

1. **A reward model** r_φ (``minirl.toy.RewardModel``) trained by maximum likelihood, i.e. by
   minimising ``bradley_terry_loss`` = −mean log σ(r_φ(x, y_w) − r_φ(x, y_l)) (``train_reward_model``);
   it can then stand in for the reward of any policy-gradient method (``minirl.toy.LearnedReward``).
2. **DPO**: skip the reward model. The policy itself defines an implicit reward
   r(x, y) = β log π_θ(y | x) / π_ref(y | x), and ``dpo_loss`` is Bradley–Terry on it; it takes the
   whole-response log-probabilities ``response_log_probs``.

The two losses live with the other losses, in ``minirl.losses``. This module holds the data
(``PreferencePairs``, ``make_preference_pairs``), the reward model's trainer and its metric
(``train_reward_model``, ``pairwise_accuracy``), and ``response_log_probs``.

Shapes: prompts ``[batch, pos]``; one response per prompt ``[batch, pos]`` (or a group of them
``[batch, trial, pos]``); rewards and sequence log-probabilities ``[batch]`` (or ``[batch, trial]``).

On the sorting task the "judge" is a hidden scorer (by default the task's own reward), and
``make_preference_pairs`` can flip a fraction of its labels to imitate noisy human raters.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from minirl.history import History
from minirl.losses import bradley_terry_loss
from minirl.toy.model import RewardModel
from minirl.toy.sampling import compute_log_probs, sample_responses
from minirl.utils import check_positive_ints, torch_threads

__all__ = [
    "PreferencePairs",
    "make_preference_pairs",
    "pairwise_accuracy",
    "response_log_probs",
    "train_reward_model",
]


# ---------------------------------------------------------------------------------------------
# Whole-response log-probabilities (what DPO compares)
# ---------------------------------------------------------------------------------------------


def response_log_probs(
    model: nn.Module, prompts: torch.Tensor, responses: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """log π(y | x) of whole responses under a policy: the sum of the token log-probs over the real tokens.

    prompts[batch, pos], responses[batch, pos] -> [batch]; or responses[batch, trial, pos] ->
    [batch, trial]. ``mask`` (same shape as responses, 1 for real tokens, 0 after the end) drops the
    padding; None = every position is real. These are what ``dpo_loss`` takes for the chosen and the
    rejected response of each pair. (``minirl.estimators.sequence_log_probs`` is the same sum for a
    bare table of logits, without a model.)
    """
    grouped = responses.dim() == 3
    if responses.dim() not in (2, 3) or responses.shape[0] != prompts.shape[0]:
        raise ValueError(
            f"responses must have shape [batch, pos] or [batch, trial, pos] with batch = "
            f"{prompts.shape[0]}; got {list(responses.shape)}"
        )
    group = responses if grouped else responses.unsqueeze(1)
    token_log_probs = compute_log_probs(prompts, group, model)  # [batch, trial, pos]
    if mask is not None:
        if mask.shape != responses.shape:
            raise ValueError(f"mask must have the shape of responses {list(responses.shape)}; got {list(mask.shape)}")
        token_log_probs = token_log_probs * (mask if grouped else mask.unsqueeze(1)).to(token_log_probs.dtype)
    out = token_log_probs.sum(dim=-1)
    return out if grouped else out.squeeze(1)


# ---------------------------------------------------------------------------------------------
# Preference data
# ---------------------------------------------------------------------------------------------


@dataclass
class PreferencePairs:
    """n preference pairs: a prompt, the response labelled as preferred, and the other one.

    Attributes:
        prompts: LongTensor[n, pos].
        chosen: LongTensor[n, pos], the response the (possibly noisy) label prefers.
        rejected: LongTensor[n, pos], the other response.
        true_margin: FloatTensor[n], hidden score of chosen − hidden score of rejected; negative exactly
            where the label was flipped (a reward model never sees it: it is for analysis).
        flipped: BoolTensor[n], True where the label disagrees with the hidden scorer.
    """

    prompts: torch.Tensor
    chosen: torch.Tensor
    rejected: torch.Tensor
    true_margin: torch.Tensor
    flipped: torch.Tensor

    def __post_init__(self) -> None:
        if self.prompts.dim() != 2:
            raise ValueError(f"prompts must have shape [n, pos]; got {list(self.prompts.shape)}")
        n = self.prompts.shape[0]
        if self.chosen.dim() != 2 or self.chosen.shape[0] != n or self.rejected.shape != self.chosen.shape:
            raise ValueError(
                f"chosen and rejected must both have shape [n, pos] with n = {n}; got "
                f"{list(self.chosen.shape)} and {list(self.rejected.shape)}"
            )
        if self.true_margin.shape != (n,) or self.flipped.shape != (n,):
            raise ValueError(
                f"true_margin and flipped must have shape [n] = [{n}]; got "
                f"{list(self.true_margin.shape)} and {list(self.flipped.shape)}"
            )

    def __len__(self) -> int:
        return self.prompts.shape[0]

    def __getitem__(self, index: slice | torch.Tensor) -> PreferencePairs:
        """The pairs at ``index`` (a slice, an index tensor or a boolean mask) as new PreferencePairs."""
        return PreferencePairs(
            self.prompts[index], self.chosen[index], self.rejected[index], self.true_margin[index], self.flipped[index]
        )

    @property
    def noise_rate(self) -> float:
        """The fraction of flipped labels."""
        return float(self.flipped.float().mean()) if len(self) else 0.0

    def unflipped(self) -> PreferencePairs:
        """The same pairs with every label as the hidden scorer gives it (flips undone)."""
        f = self.flipped.unsqueeze(1)
        return PreferencePairs(
            self.prompts,
            torch.where(f, self.rejected, self.chosen),
            torch.where(f, self.chosen, self.rejected),
            self.true_margin.abs(),
            torch.zeros_like(self.flipped),
        )

    def split(
        self, val_fraction: float = 0.2, generator: torch.Generator | None = None
    ) -> tuple[PreferencePairs, PreferencePairs]:
        """A random (train, held-out) split; the held-out part has round(val_fraction · n) pairs."""
        if not 0.0 <= val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in [0, 1); got {val_fraction!r}")
        order = torch.randperm(len(self), generator=generator)
        n_val = round(val_fraction * len(self))
        return self[order[n_val:]], self[order[:n_val]]


def _perturbed_sorted(task, prompts: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Two responses per prompt, [n, 2, length]: the sorted prompt with k random positions resampled,
    k uniform in 0..length (k = 0: correct; k = length: a uniformly random response)."""
    n, length = prompts.shape
    target = task.sorted_responses(prompts).unsqueeze(1).expand(n, 2, length)
    k = torch.randint(0, length + 1, (n, 2, 1), generator=generator)
    rank = torch.rand(n, 2, length, generator=generator).argsort(dim=-1).argsort(dim=-1)  # a random order
    noise = torch.randint(0, task.vocab_size, (n, 2, length), generator=generator)
    return torch.where(rank < k, noise, target)


def make_preference_pairs(
    task,
    n_pairs: int,
    generator: torch.Generator | None = None,
    scorer: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    noise: float = 0.05,
    policy: nn.Module | None = None,
    max_rounds: int = 100,
) -> PreferencePairs:
    """Sample prompts, two different responses per prompt, and a (noisy) preference label.

    1. prompts from ``task.sample_prompts``;
    2. two responses per prompt: from ``policy`` (``sample_responses``, T = 1) when given, else the
       sorted prompt with k random positions resampled, k uniform in 0..length (a mixture of correct,
       nearly correct and random answers, so that pairs are informative);
    3. both scored by the hidden ``scorer(prompts[batch, pos], responses[batch, trial, pos]) -> [batch, trial]``
       (default ``task.rewards``: the task's reward, ``sort_distance`` for a default ``SortingTask``);
       pairs with equal scores are dropped (and more drawn), so chosen ≠ rejected always;
    4. chosen = the higher-scored response, then each label is flipped with probability ``noise``.

    Deterministic for a given ``generator`` state. Returns ``PreferencePairs`` of ``n_pairs`` pairs.
    Raises ValueError when ``max_rounds`` rounds of sampling found too few untied pairs (a policy
    that always answers the same way gives only ties).
    """
    check_positive_ints(n_pairs=n_pairs)
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be a probability in [0, 1]; got {noise!r}")
    scorer = task.rewards if scorer is None else scorer
    found: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    n_found = 0
    for _ in range(max_rounds):
        want = n_pairs - n_found
        prompts = task.sample_prompts(2 * want + 8, generator)  # some pairs will tie
        if policy is not None:
            responses = sample_responses(policy, prompts, 2, generator=generator)
        else:
            responses = _perturbed_sorted(task, prompts, generator)
        scores = scorer(prompts, responses).float()  # [batch, 2]
        if scores.shape != (prompts.shape[0], 2):
            raise ValueError(
                f"scorer must return shape [batch, trial] = [{prompts.shape[0]}, 2]; got {list(scores.shape)}"
            )
        keep = (scores[:, 0] != scores[:, 1]).nonzero().squeeze(1)[:want]
        found.append((prompts[keep], responses[keep], scores[keep]))
        n_found += len(keep)
        if n_found == n_pairs:
            break
    else:
        raise ValueError(
            f"found only {n_found} of n_pairs = {n_pairs} pairs with different scores in {max_rounds} "
            "rounds; the responses nearly always tie (is the policy too peaked?)"
        )
    prompts = torch.cat([p for p, _, _ in found])
    responses = torch.cat([r for _, r, _ in found])  # [n, 2, pos]
    scores = torch.cat([s for _, _, s in found])  # [n, 2]
    first_better = scores[:, 0] > scores[:, 1]
    flipped = torch.rand(n_pairs, generator=generator) < noise
    first_chosen = (first_better ^ flipped).unsqueeze(1)
    chosen = torch.where(first_chosen, responses[:, 0], responses[:, 1])
    rejected = torch.where(first_chosen, responses[:, 1], responses[:, 0])
    margin = (scores[:, 0] - scores[:, 1]) * torch.where(first_chosen.squeeze(1), 1.0, -1.0)
    return PreferencePairs(prompts, chosen, rejected, margin, flipped)


# ---------------------------------------------------------------------------------------------
# Training a reward model
# ---------------------------------------------------------------------------------------------


def pairwise_accuracy(model: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], pairs: PreferencePairs) -> float:
    """Fraction of pairs where the model scores the chosen response strictly higher: mean 1[r(x, y_w) > r(x, y_l)].

    ``model(prompts[n, pos], responses[n, pos]) -> [n]``. Measured against the labels as given (noisy
    ones included); ``pairwise_accuracy(model, pairs.unflipped())`` measures it against the hidden scorer.
    """
    if len(pairs) == 0:
        return float("nan")
    with torch.no_grad():
        return float((model(pairs.prompts, pairs.chosen) > model(pairs.prompts, pairs.rejected)).float().mean())


def _fresh_reward_model(
    pairs: PreferencePairs,
    val_pairs: PreferencePairs,
    vocab_size: int | None,
    embedding_dim: int,
    hidden_dim: int,
    seed: int,
) -> RewardModel:
    """A new ``RewardModel`` sized for the pairs (``vocab_size`` defaults to the largest token id + 1)."""
    tokens = [pairs.prompts, pairs.chosen, pairs.rejected, val_pairs.prompts, val_pairs.chosen, val_pairs.rejected]
    vocab = vocab_size if vocab_size is not None else 1 + max(int(t.max()) for t in tokens if t.numel())
    return RewardModel(
        vocab,
        embedding_dim,
        pairs.prompts.shape[1],
        pairs.chosen.shape[1],
        hidden_dim,
        generator=torch.Generator().manual_seed(seed),
    )


def _scalar_loss(loss: Any) -> torch.Tensor:
    """``loss_fn``'s result, refused unless it is a scalar (0-dim) tensor."""
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        raise ValueError(
            "loss_fn(r_chosen, r_rejected) must return a scalar (0-dim) tensor; got "
            f"{list(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__}"
        )
    return loss


# PLR0913: keyword-only knobs with defaults are the API by design (notebook 06 names the few it changes): the
# held-out split, the pair loss, the model's size and the optimiser's settings.
def train_reward_model(  # noqa: PLR0913
    pairs: PreferencePairs,
    *,
    val_pairs: PreferencePairs | None = None,
    val_fraction: float = 0.2,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = bradley_terry_loss,
    vocab_size: int | None = None,
    embedding_dim: int = 32,
    hidden_dim: int = 64,
    epochs: int = 20,
    batch_size: int = 64,
    learning_rate: float = 3e-3,
    weight_decay: float = 0.0,
    eval_every: int = 1,
    seed: int = 0,
    model: RewardModel | None = None,
    progress: bool = False,
) -> tuple[RewardModel, History]:
    """Fit a ``RewardModel`` to preference pairs by minimising ``loss_fn`` (Adam, shuffled minibatches).

    ``loss_fn(r_chosen[batch], r_rejected[batch]) -> scalar`` is the pair loss, by default
    ``bradley_terry_loss``: L = −mean log σ(r_φ(x, y_w) − r_φ(x, y_l)). The held-out pairs are
    ``val_pairs`` when given, else a random ``val_fraction`` of ``pairs`` (split with ``seed``).
    ``vocab_size`` defaults to the largest token id in the pairs + 1; ``model`` (optional) is trained
    in place of a fresh one.

    Returns ``(model, history)``. The history records, per gradient step, ``step``, ``epoch``, ``loss``
    and ``accuracy`` (pairwise accuracy on the minibatch, before the step). Its evaluations
    (``history.evals``: ``step``, ``epoch``, ``train_accuracy``, ``val_accuracy`` against the labels
    as given, noise included, and ``val_true_accuracy`` against the hidden scorer, which the noise does
    not cap) are taken before the first epoch (epoch 0) and every ``eval_every`` epochs, and always
    after the last; ``eval_every=0``: after the last epoch only.
    """
    check_positive_ints(epochs=epochs, batch_size=batch_size)
    if eval_every < 0:
        raise ValueError(f"eval_every must be >= 0 epochs (0 = only after the last); got {eval_every}")
    generator = torch.Generator().manual_seed(seed)
    if val_pairs is None:
        pairs, val_pairs = pairs.split(val_fraction, generator)
    if len(pairs) == 0:
        raise ValueError("no training pairs left after the held-out split")
    if model is None:
        model = _fresh_reward_model(pairs, val_pairs, vocab_size, embedding_dim, hidden_dim, seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    history = History(label="reward model", seed=seed)
    val_true = val_pairs.unflipped()
    steps_per_epoch = math.ceil(len(pairs) / batch_size)
    step = 0

    def run_eval(epoch: int) -> None:
        model.eval()
        history.log_eval(
            step=step,
            epoch=epoch,
            train_accuracy=pairwise_accuracy(model, pairs),
            val_accuracy=pairwise_accuracy(model, val_pairs),
            val_true_accuracy=pairwise_accuracy(model, val_true),
        )

    with torch_threads(1):
        if eval_every:
            run_eval(0)
        for epoch in tqdm(range(1, epochs + 1), desc=f"reward model seed {seed}", disable=not progress, leave=False):
            model.train()
            order = torch.randperm(len(pairs), generator=generator)
            for b in range(steps_per_epoch):
                batch = pairs[order[b * batch_size : (b + 1) * batch_size]]
                r_chosen, r_rejected = model(batch.prompts, batch.chosen), model(batch.prompts, batch.rejected)
                loss = _scalar_loss(loss_fn(r_chosen, r_rejected))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                step += 1
                history.log(
                    step=step, epoch=epoch, loss=loss.item(), accuracy=float((r_chosen > r_rejected).float().mean())
                )
            if (eval_every and epoch % eval_every == 0) or epoch == epochs:
                run_eval(epoch)
    model.eval()
    return model, history

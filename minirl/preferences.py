"""Learning from preferences: Bradley–Terry reward models and DPO.

A preference dataset holds triples (x, y_w, y_l): a prompt, the response a judge preferred
("chosen", y_w) and the one it did not ("rejected", y_l). The Bradley–Terry model says that the
judge prefers y_w with probability

    P(y_w ≻ y_l | x) = σ(r(x, y_w) − r(x, y_l)),       σ(z) = 1 / (1 + e^{−z})

for some hidden score r. Two ways to use such data:

1. **A reward model** r_φ trained by maximum likelihood, i.e. by minimising
   ``bradley_terry_loss`` = −mean log σ(r_φ(x, y_w) − r_φ(x, y_l)); it can then stand in for the
   reward of any policy-gradient method (``LearnedReward``).
2. **DPO**: skip the reward model. The policy itself defines an implicit reward
   r(x, y) = β log π_θ(y | x) / π_ref(y | x), and ``dpo_loss`` is Bradley–Terry on it.

Shapes: prompts ``[batch, pos]``; one response per prompt ``[batch, pos]`` (or a group of them
``[batch, trial, pos]``); rewards and sequence log-probabilities ``[batch]`` (or ``[batch, trial]``).

On the sorting task the "judge" is a hidden scorer (by default the task's own reward), and
``make_preference_pairs`` can flip a fraction of its labels to imitate noisy human raters.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from einops import einsum
from torch import nn
from tqdm.auto import tqdm

from minirl.history import History
from minirl.sampling import compute_log_probs, sample_responses
from minirl.utils import check_positive_ints, one_thread

__all__ = [
    "LearnedReward",
    "PreferencePairs",
    "RewardModel",
    "bradley_terry_loss",
    "dpo_loss",
    "make_preference_pairs",
    "pairwise_accuracy",
    "sequence_log_probs",
    "train_reward_model",
]


# ---------------------------------------------------------------------------------------------
# The two losses
# ---------------------------------------------------------------------------------------------


def _check_pair_of_vectors(names: tuple[str, ...], *tensors: torch.Tensor) -> None:
    for name, t in zip(names, tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a float tensor of shape [batch]; got {type(t).__name__}")
        if t.dim() != 1:
            raise ValueError(f"{name} must have shape [batch] (one number per pair); got {list(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a float tensor; got dtype {t.dtype}")
    shapes = {name: list(t.shape) for name, t in zip(names, tensors)}
    if len({tuple(s) for s in shapes.values()}) > 1:
        described = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"shape mismatch: {described}; all must be [batch], one entry per preference pair")


def bradley_terry_loss(r_chosen: torch.Tensor, r_rejected: torch.Tensor) -> torch.Tensor:
    """The negative log-likelihood of the preferences under Bradley–Terry, a scalar.

        L = −mean_i log σ(r_chosen_i − r_rejected_i) = mean_i softplus(r_rejected_i − r_chosen_i)

    r_chosen[batch], r_rejected[batch] (the scores of the preferred and the other response of each
    pair) -> a 0-dim tensor. L = log 2 ≈ 0.693 when the model cannot tell the two apart (margin 0),
    → 0 as the margins grow, and ≈ |margin| for a confidently wrong pair. ``F.logsigmoid`` keeps it
    finite for any margin, where ``torch.log(torch.sigmoid(m))`` gives −inf once σ(m) underflows
    (m ≲ −104 in float32). Only the difference of the two scores matters: adding a constant to
    every reward leaves the loss unchanged, so a reward model is defined up to a shift.
    """
    _check_pair_of_vectors(("r_chosen", "r_rejected"), r_chosen, r_rejected)
    return -F.logsigmoid(r_chosen - r_rejected).mean()


def dpo_loss(
    policy_chosen_logps: torch.Tensor,
    policy_rejected_logps: torch.Tensor,
    ref_chosen_logps: torch.Tensor,
    ref_rejected_logps: torch.Tensor,
    beta: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Direct Preference Optimisation (the sigmoid loss of Rafailov et al., 2023; TRL's naming).

    Where it comes from: the KL-regularised objective max_π E[r(x, y)] − β KL(π ‖ π_ref) has the
    closed-form optimum π*(y | x) = π_ref(y | x) exp(r(x, y) / β) / Z(x). Solved for the reward,

        r(x, y) = β log π*(y | x) / π_ref(y | x) + β log Z(x),

    and the unknown β log Z(x) cancels in the Bradley–Terry difference r(x, y_w) − r(x, y_l). So a
    policy π_θ defines an *implicit reward* β log π_θ / π_ref, and fitting it to the preferences with
    ``bradley_terry_loss`` trains the policy directly, without a reward model or sampling:

        chosen_rewards   = β (log π_θ(y_w | x) − log π_ref(y_w | x))                   [batch]
        rejected_rewards = β (log π_θ(y_l | x) − log π_ref(y_l | x))                   [batch]
        L = −mean log σ(chosen_rewards − rejected_rewards)

    Args:
        policy_chosen_logps, policy_rejected_logps: log π_θ(y | x) of whole responses, ``[batch]``
            (the sum of the token log-probs over the real tokens: ``sequence_log_probs``), with gradient.
        ref_chosen_logps, ref_rejected_logps: the same under the frozen reference π_ref, ``[batch]``.
        beta: β > 0, the strength of the KL regularisation (small β: far from π_ref is cheap).

    Returns:
        ``(loss, chosen_rewards, rejected_rewards)``: the scalar loss (TRL returns the per-pair losses,
        we take their mean) and the implicit rewards, detached (for logging, as in TRL). Their
        difference is the reward margin (TRL's ``rewards/margins``), and ``(margin > 0).mean()`` the
        preference accuracy (TRL's ``rewards/accuracies``).
    """
    names = ("policy_chosen_logps", "policy_rejected_logps", "ref_chosen_logps", "ref_rejected_logps")
    _check_pair_of_vectors(names, policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps)
    if not beta > 0:
        raise ValueError(f"beta must be > 0; got {beta!r}")
    chosen = beta * (policy_chosen_logps - ref_chosen_logps.detach())
    rejected = beta * (policy_rejected_logps - ref_rejected_logps.detach())
    loss = -F.logsigmoid(chosen - rejected).mean()
    return loss, chosen.detach(), rejected.detach()


def sequence_log_probs(
    model: nn.Module, prompts: torch.Tensor, responses: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """log π(y | x) of whole responses: the sum of the token log-probs over the real tokens.

    prompts[batch, pos], responses[batch, pos] -> [batch]; or responses[batch, trial, pos] ->
    [batch, trial]. ``mask`` (same shape as responses, 1 for real tokens, 0 after the end) drops
    the padding; None = every position is real.
    """
    grouped = responses.dim() == 3
    if responses.dim() not in (2, 3) or responses.shape[0] != prompts.shape[0]:
        raise ValueError(f"responses must have shape [batch, pos] or [batch, trial, pos] with batch = "
                         f"{prompts.shape[0]}; got {list(responses.shape)}")
    group = responses if grouped else responses.unsqueeze(1)
    token_log_probs = compute_log_probs(prompts, group, model)  # [batch, trial, pos]
    if mask is not None:
        if mask.shape != responses.shape:
            raise ValueError(f"mask must have the shape of responses {list(responses.shape)}; got {list(mask.shape)}")
        token_log_probs = token_log_probs * (mask if grouped else mask.unsqueeze(1)).to(token_log_probs.dtype)
    out = token_log_probs.sum(dim=-1)
    return out if grouped else out.squeeze(1)


# ---------------------------------------------------------------------------------------------
# A reward model
# ---------------------------------------------------------------------------------------------


class RewardModel(nn.Module):
    """A small scalar reward r_φ(x, y) built like the tiny policy's encoder.

        e(v)                                            token embedding              [vocab, dim]
        h = Σ_i P[i]ᵀ e(x_i) + Σ_j R[j]ᵀ e(y_j)         one matrix per prompt position and per
                                                        response position            [batch, dim]
        r = w₂ · relu(W₁ relu(h) + b₁) + b₂             an MLP head                  [batch]

    ``forward(prompts[batch, P], responses[batch, R]) -> [batch]``; responses ``[batch, trial, R]``
    (a group per prompt) give ``[batch, trial]``.

    Args:
        vocab_size: number of token values (V), shared by prompts and responses.
        embedding_dim: width of the embedding and of h (D).
        prompt_length: number of prompt positions (P).
        response_length: number of response positions (R).
        hidden_dim: width of the MLP head's hidden layer.
        init_scale: the encoder weights have std ``init_scale / sqrt(D)``, as in ``TinyEncoderDecoder``.
        generator: optional ``torch.Generator`` for a reproducible initialisation.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int,
        prompt_length: int,
        response_length: int,
        hidden_dim: int = 64,
        init_scale: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        check_positive_ints(vocab_size=vocab_size, embedding_dim=embedding_dim, prompt_length=prompt_length,
                            response_length=response_length, hidden_dim=hidden_dim)
        self.vocab_size, self.embedding_dim = vocab_size, embedding_dim
        self.prompt_length, self.response_length, self.hidden_dim = prompt_length, response_length, hidden_dim
        std = init_scale / embedding_dim**0.5

        def init(*shape: int) -> nn.Parameter:
            return nn.Parameter(torch.randn(*shape, generator=generator) * std)

        def linear(n_in: int, n_out: int) -> tuple[nn.Parameter, nn.Parameter]:
            bound = 1.0 / n_in**0.5  # nn.Linear's default initialisation, drawn from our generator
            weight = (torch.rand(n_out, n_in, generator=generator) * 2 - 1) * bound
            bias = (torch.rand(n_out, generator=generator) * 2 - 1) * bound
            return nn.Parameter(weight), nn.Parameter(bias)

        self.embedding = init(vocab_size, embedding_dim)  # [vocab, dim]
        self.prompt_weights = init(prompt_length, embedding_dim, embedding_dim)  # [pos, dim_in, dim_out]
        self.response_weights = init(response_length, embedding_dim, embedding_dim)  # [pos, dim_in, dim_out]
        self.hidden_weight, self.hidden_bias = linear(embedding_dim, hidden_dim)  # [hidden, dim], [hidden]
        self.out_weight, self.out_bias = linear(hidden_dim, 1)  # [1, hidden], [1]

    @classmethod
    def from_policy(cls, policy: nn.Module, response_length: int | None = None, hidden_dim: int = 64,
                    generator: torch.Generator | None = None) -> RewardModel:
        """A reward model whose embedding and prompt encoder start as copies of a ``TinyEncoderDecoder``'s
        (as an RLHF reward model starts from the SFT model); the response encoder and the head are new."""
        for name in ("embedding", "encode_weights", "prompt_length", "response_length"):
            if not hasattr(policy, name):
                raise TypeError(f"policy must be a TinyEncoderDecoder (it has no {name!r}); "
                                f"got {type(policy).__name__}")
        vocab_size, dim = policy.embedding.shape
        model = cls(vocab_size, dim, policy.prompt_length, response_length or policy.response_length, hidden_dim,
                    generator=generator)
        with torch.no_grad():
            model.embedding.copy_(policy.embedding)
            model.prompt_weights.copy_(policy.encode_weights)
        return model

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """prompts[batch, P], responses[batch, R] -> rewards[batch]; responses[batch, trial, R] -> [batch, trial]."""
        if prompts.dim() != 2 or prompts.shape[1] != self.prompt_length:
            raise ValueError(f"prompts must have shape [batch, pos] = [batch, {self.prompt_length}]; "
                             f"got {list(prompts.shape)}")
        if responses.dim() not in (2, 3) or responses.shape[0] != prompts.shape[0] \
                or responses.shape[-1] != self.response_length:
            raise ValueError(f"responses must have shape [batch, pos] or [batch, trial, pos] with batch = "
                             f"{prompts.shape[0]} and pos = {self.response_length}; got {list(responses.shape)}")
        if prompts.dtype != torch.long or responses.dtype != torch.long:
            raise TypeError(f"prompts and responses must be LongTensors of token ids; got {prompts.dtype} and "
                            f"{responses.dtype}")
        h_prompt = einsum(self.embedding[prompts], self.prompt_weights, "batch pos d_in, pos d_in d_out -> batch d_out")
        h_response = einsum(self.embedding[responses], self.response_weights,
                            "... pos d_in, pos d_in d_out -> ... d_out")  # [batch, (trial,) dim]
        if responses.dim() == 3:
            h_prompt = h_prompt.unsqueeze(1)  # the same prompt for every response of its group
        h = torch.relu(h_prompt + h_response)
        hidden = torch.relu(F.linear(h, self.hidden_weight, self.hidden_bias))
        return F.linear(hidden, self.out_weight, self.out_bias).squeeze(-1)


class LearnedReward:
    """A trained reward model as a batched reward function, without gradients.

    ``LearnedReward(model)(prompts[batch, pos], responses[batch, trial, pos]) -> rewards[batch, trial]``,
    the shape of ``SortingTask.rewards``, so it can replace the true reward in a policy-gradient loop
    (and be hacked by it).
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def __call__(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        if responses.dim() != 3:
            raise ValueError(f"responses must have shape [batch, trial, pos]; got {list(responses.shape)}")
        with torch.no_grad():
            return self.model(prompts, responses)


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
            raise ValueError(f"chosen and rejected must both have shape [n, pos] with n = {n}; got "
                             f"{list(self.chosen.shape)} and {list(self.rejected.shape)}")
        if self.true_margin.shape != (n,) or self.flipped.shape != (n,):
            raise ValueError(f"true_margin and flipped must have shape [n] = [{n}]; got "
                             f"{list(self.true_margin.shape)} and {list(self.flipped.shape)}")

    def __len__(self) -> int:
        return self.prompts.shape[0]

    def __getitem__(self, index: slice | torch.Tensor) -> PreferencePairs:
        """The pairs at ``index`` (a slice, an index tensor or a boolean mask) as new PreferencePairs."""
        return PreferencePairs(self.prompts[index], self.chosen[index], self.rejected[index],
                               self.true_margin[index], self.flipped[index])

    @property
    def noise_rate(self) -> float:
        """The fraction of flipped labels."""
        return float(self.flipped.float().mean()) if len(self) else 0.0

    def unflipped(self) -> PreferencePairs:
        """The same pairs with every label as the hidden scorer gives it (flips undone)."""
        f = self.flipped.unsqueeze(1)
        return PreferencePairs(self.prompts, torch.where(f, self.rejected, self.chosen),
                               torch.where(f, self.chosen, self.rejected), self.true_margin.abs(),
                               torch.zeros_like(self.flipped))

    def split(self, val_fraction: float = 0.2, generator: torch.Generator | None = None
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
            raise ValueError(f"scorer must return shape [batch, trial] = [{prompts.shape[0]}, 2]; "
                             f"got {list(scores.shape)}")
        keep = (scores[:, 0] != scores[:, 1]).nonzero().squeeze(1)[:want]
        found.append((prompts[keep], responses[keep], scores[keep]))
        n_found += len(keep)
        if n_found == n_pairs:
            break
    else:
        raise ValueError(f"found only {n_found} of n_pairs = {n_pairs} pairs with different scores in {max_rounds} "
                         "rounds; the responses nearly always tie (is the policy too peaked?)")
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


def train_reward_model(
    pairs: PreferencePairs,
    *,
    val_pairs: PreferencePairs | None = None,
    val_fraction: float = 0.2,
    vocab_size: int | None = None,
    embedding_dim: int = 32,
    hidden_dim: int = 64,
    epochs: int = 20,
    batch_size: int = 64,
    learning_rate: float = 3e-3,
    weight_decay: float = 0.0,
    seed: int = 0,
    model: RewardModel | None = None,
    progress: bool = False,
) -> tuple[RewardModel, History]:
    """Fit a ``RewardModel`` to preference pairs with ``bradley_terry_loss`` (Adam, minibatches).

    The held-out pairs are ``val_pairs`` when given, else a random ``val_fraction`` of ``pairs``
    (split with ``seed``). ``vocab_size`` defaults to the largest token id in the pairs + 1.

    Returns ``(model, history)``. The history records, per gradient step, ``step``, ``epoch``, ``loss``
    and ``accuracy`` (pairwise accuracy on the minibatch, before the step); and after each epoch
    (``history.evals``) ``train_accuracy``, ``val_accuracy`` (against the labels as given, noise
    included) and ``val_true_accuracy`` (against the hidden scorer: the noise does not cap it).
    """
    check_positive_ints(epochs=epochs, batch_size=batch_size)
    generator = torch.Generator().manual_seed(seed)
    if val_pairs is None:
        pairs, val_pairs = pairs.split(val_fraction, generator)
    if len(pairs) == 0:
        raise ValueError("no training pairs left after the held-out split")
    if model is None:
        tokens = [pairs.prompts, pairs.chosen, pairs.rejected, val_pairs.prompts, val_pairs.chosen, val_pairs.rejected]
        vocab = vocab_size if vocab_size is not None else 1 + max(int(t.max()) for t in tokens if t.numel())
        model = RewardModel(vocab, embedding_dim, pairs.prompts.shape[1], pairs.chosen.shape[1], hidden_dim,
                            generator=torch.Generator().manual_seed(seed))
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    history = History(label="reward model", seed=seed)
    val_true = val_pairs.unflipped()
    steps_per_epoch = math.ceil(len(pairs) / batch_size)
    step = 0
    with one_thread():
        for epoch in tqdm(range(1, epochs + 1), desc=f"reward model seed {seed}", disable=not progress, leave=False):
            model.train()
            order = torch.randperm(len(pairs), generator=generator)
            for b in range(steps_per_epoch):
                batch = pairs[order[b * batch_size:(b + 1) * batch_size]]
                r_chosen, r_rejected = model(batch.prompts, batch.chosen), model(batch.prompts, batch.rejected)
                loss = bradley_terry_loss(r_chosen, r_rejected)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                step += 1
                history.log(step=step, epoch=epoch, loss=loss.item(),
                            accuracy=float((r_chosen > r_rejected).float().mean()))
            model.eval()
            history.log_eval(step=step, epoch=epoch, train_accuracy=pairwise_accuracy(model, pairs),
                             val_accuracy=pairwise_accuracy(model, val_pairs),
                             val_true_accuracy=pairwise_accuracy(model, val_true))
    return model, history

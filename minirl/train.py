"""One training loop for every policy-gradient algorithm and every kind of policy.

Each step, exactly as the textbook algorithm reads:

    1. sample a batch of prompts x                                             [batch]
    2. π_old ← π_θ; sample a group of G responses per prompt from π_old       [batch, trial, pos]
    3. score them: rewards r, then advantages Δ (compute_deltas)               [batch, trial]
    4. for inner_epochs: take a gradient step on policy_loss(π_θ, π_old, Δ, π_ref)   (policy_update)
    5. every ref_refresh_every steps: π_ref ← π_θ
    6. log what the step measured                                              (step_metrics)

The algorithm (``AlgoConfig``) only chooses knobs; there is no per-algorithm branch. The policy and the
task are reached only through their contracts (``minirl.protocols``): the same loop trains the toy
encoder-decoder on token tensors (``ToyPolicy``) and a HuggingFace causal language model on text
(``minirl.lm.CausalLMPolicy``), with no branch on which. What only some tasks offer (a process reward, a
format check, held-out prompts) is a capability the loop uses when ``isinstance`` says the task has it.
When responses have different lengths, the rollout's mask (or the task's
``response_mask``) reaches the loss: it counts only real tokens and aggregates them with the algorithm's
``aggregation`` (this is where ``sequence_mean``, ``token_mean`` and ``constant`` differ).

Micro-batching (gradient accumulation, ``micro_batch_size``) splits step 4's forward and backward passes
into slices of prompts and normalises every slice by the whole batch's counts, so the gradient is the
whole batch's, whatever the aggregation.
"""

from __future__ import annotations

import copy
import math
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, overload

import torch
from tqdm.auto import tqdm

from minirl.advantages import compute_deltas, zero_variance_fraction
from minirl.algorithms import AlgoConfig, AlgoField
from minirl.diagnostics import cannot_learn, length_by_correctness
from minirl.history import History
from minirl.hooks import RunHooks, TrainState
from minirl.losses import aggregate, kl_estimate, policy_loss
from minirl.pass_at_k import sampled_pass_at_k
from minirl.protocols import (
    FormatTask,
    HeldOutTask,
    MaskedTask,
    Policy,
    ProcessRewardTask,
    Rollout,
    Task,
    ToyTask,
    UnseenAnswersTask,
    require,
    select_prompts,
)
from minirl.toy.model import TinyEncoderDecoder, make_model
from minirl.toy.policy import as_policy
from minirl.utils import check_nonnegative_ints, check_positive_ints, device_generator, torch_threads
from toy_envs.sorting import SortingTask

__all__ = [
    "TrainConfig",
    "device_generator",
    "evaluate",
    "evaluation_generator",
    "evaluation_prompts",
    "policy_update",
    "response_mask",
    "rollout_log_probs",
    "step_metrics",
    "train",
]


@dataclass
class TrainConfig:
    """Everything one run of ``train`` needs.

    Attributes:
        task: where prompts and rewards come from (a ``minirl.protocols.Task``): ``SortingTask``,
            ``VariableLengthSortingTask``, or a text task of ``toy_envs.text_tasks``.
        algo: an ``AlgoConfig``; a preset's name from ``ALGORITHMS`` is accepted and resolved
            (``TrainConfig(algo="grpo").algo is ALGORITHMS["grpo"]``).
        steps: number of outer steps (one batch of fresh samples each).
        prompts_per_step: prompts per batch.
        group_size: responses sampled per prompt (G, the ``trial`` axis).
        learning_rate: Adam step size (the peak, with ``lr_schedule="cosine"``).
        lr_schedule: ``"constant"`` or ``"cosine"`` (decays to 0 at ``steps``; the last steps
            polish the policy instead of shaking it).
        max_grad_norm: clip the gradient's global norm to this (None = no clipping). When most
            groups agree, their advantages are 0 and Adam's running gradient scale shrinks; the
            next non-zero gradient would then move every weight by several learning rates at once.
        embedding_dim: width of the ``TinyEncoderDecoder`` (when ``train`` builds the toy model).
        inner_epochs: overrides the preset's inner epochs when not None.
        temperature: sampling temperature; the log-probs in the loss use the same tempered
            policy, so π_old really is the distribution the samples came from.
        seed: seeds the model initialisation and every draw (bit-identical reruns on CPU).
        device: where to train (None: where the given model already is; the CPU for a new toy model).
        eval_every: evaluate greedy decoding on the evaluation prompts every this many steps (0 = only
            at the end).
        eval_prompts: evaluation prompts per evaluation: the task's held-out prompts when it has them (the text
            tasks), else fresh draws (a small toy task has few distinct prompts, e.g. 125 for sorting 3 numbers
            from 0..4, so those were mostly seen in training: they measure the policy, not generalisation).
        eval_sampled: also evaluate one sampled response per prompt (cheap for the toy; an LM run
            usually turns it off).
        pass_k: every evaluation also samples this many responses (T = 1) to each of the first
            ``pass_k_prompts`` evaluation prompts and logs ``pass@1`` and ``pass@{pass_k}`` (the unbiased
            estimator, ``minirl.pass_at_k``): what the policy can reach, beside what it does greedily. 0 = off.
        pass_k_prompts: how many evaluation prompts pass@k samples (its cost: ``pass_k`` × this many responses).
        micro_batch_size: prompts per forward/backward pass (gradient accumulation over the batch);
            None = the whole batch at once. The gradient is the same either way.
        threads: torch CPU threads while training (1 for the toy models; None leaves torch's setting,
            which a real language model wants).
        max_seconds: stop early once training has used this much wall time (None = no limit).
        measure_kl: log the two KL curves that cost extra forward passes: ``kl`` to a frozen copy of the
            initial policy even when the algorithm has no KL penalty (β = 0), and ``kl_old``, how far the
            inner epochs moved the policy from π_old. None: the policy's ``cheap_reference`` (on for the toy
            models, off for a language model: a model copy and a forward pass per step). Off, a run with
            β = 0 logs no ``kl`` at all rather than a flat 0.
        stall_window: every this many steps, check whether those steps could teach the policy anything
            (``minirl.diagnostics.cannot_learn``: every response truncated, every reward 0, every group's
            rewards equal) and print the verdict once (``History.notes``). 0 = never.
        progress: show a tqdm progress bar.
    """

    task: Task = field(default_factory=lambda: SortingTask(vocab_size=5, length=3))
    algo: AlgoField = AlgoField("grpo")
    steps: int = 2000
    prompts_per_step: int = 64
    group_size: int = 16
    learning_rate: float = 0.01
    lr_schedule: str = "cosine"
    max_grad_norm: float | None = 1.0
    embedding_dim: int = 32
    inner_epochs: int | None = None
    temperature: float = 1.0
    seed: int = 0
    device: str | None = None
    eval_every: int = 50
    eval_prompts: int = 1000
    eval_sampled: bool = True
    pass_k: int = 0
    pass_k_prompts: int = 50
    micro_batch_size: int | None = None
    threads: int | None = 1
    max_seconds: float | None = None
    measure_kl: bool | None = None
    stall_window: int = 5
    progress: bool = True

    def __post_init__(self) -> None:
        check_positive_ints(
            steps=self.steps,
            prompts_per_step=self.prompts_per_step,
            group_size=self.group_size,
            embedding_dim=self.embedding_dim,
            eval_prompts=self.eval_prompts,
            pass_k_prompts=self.pass_k_prompts,
        )
        check_nonnegative_ints(pass_k=self.pass_k, stall_window=self.stall_window)
        if self.micro_batch_size is not None:
            check_positive_ints(micro_batch_size=self.micro_batch_size)
        if self.threads is not None:
            check_positive_ints(threads=self.threads)
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0; got {self.learning_rate}")
        if self.lr_schedule not in ("constant", "cosine"):
            raise ValueError(f"lr_schedule must be 'constant' or 'cosine'; got {self.lr_schedule!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0 or None; got {self.max_grad_norm}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0; got {self.temperature}")
        if self.inner_epochs is not None:
            self.algo = self.algo.with_(inner_epochs=self.inner_epochs)
        if self.algo.delta_mode != "rewards" and self.group_size < 2:
            raise ValueError(
                f"algorithm {self.algo.name!r} compares responses within a group: group_size "
                f"must be >= 2; got {self.group_size}"
            )
        require(self.task, Task, "task")
        if self.algo.advantage_level == "token":
            require(self.task, ProcessRewardTask, "task", hint=f"algorithm {self.algo.name!r} rewards each position")


def response_mask(task: Task, responses: torch.Tensor) -> torch.Tensor | None:
    """The task's mask of real tokens ``[batch, trial, pos]`` (1 up to and including EOS), or None when every
    response uses every position (``SortingTask``)."""
    return task.response_mask(responses) if isinstance(task, MaskedTask) else None


def _with_mask(task: Task, rollout: Rollout) -> Rollout:
    """The rollout with its mask: the policy's own (an LM's first EOS) or else the task's (toy EOS tokens)."""
    if rollout.mask is not None:
        return rollout
    return replace(rollout, mask=response_mask(task, rollout.tokens))


def _advantages(task: Task, algo: AlgoConfig, prompts, answers, rewards: torch.Tensor) -> torch.Tensor:
    """[batch, trial] (outcome) or [batch, trial, pos] (process) advantages."""
    if algo.advantage_level == "sequence":
        return compute_deltas(rewards, algo.delta_mode)
    task = require(task, ProcessRewardTask, "task", hint=f"algorithm {algo.name!r} rewards each position")
    dense = task.per_position_rewards(prompts, answers).to(rewards.device)  # [batch, trial, pos]
    per_position = compute_deltas(dense.transpose(1, 2).flatten(0, 1), algo.delta_mode)  # [(batch pos), trial]
    return per_position.view(dense.shape[0], dense.shape[2], dense.shape[1]).transpose(1, 2)


def evaluation_generator(seed: int) -> torch.Generator:
    """The generator a run of ``seed`` draws its evaluation prompts from, seeded ``10_000 + seed``: apart from the
    training draws (seeded ``seed``), and the same at every evaluation, so each one scores the same prompts."""
    return torch.Generator().manual_seed(10_000 + seed)


def evaluation_prompts(task: Task, n: int, generator: torch.Generator):
    """The ``n`` prompts ``evaluate`` scores: the task's held-out ``eval_prompts`` when it has them, else fresh
    draws (``sample_prompts``), both from ``generator``."""
    return task.eval_prompts(n, generator) if isinstance(task, HeldOutTask) else task.sample_prompts(n, generator)


@torch.no_grad()
def evaluate(
    model: Policy | torch.nn.Module,
    task: Task,
    n_prompts: int = 1000,
    generator: torch.Generator | None = None,
    *,
    sampled: bool = True,
    pass_k: int = 0,
    pass_k_prompts: int = 50,
) -> dict[str, float]:
    """Greedy (and sampled, T = 1) quality on evaluation prompts: the task's held-out ``eval_prompts`` when it
    has them, else fresh ``sample_prompts`` (which a small toy task has also drawn in training).

    Returns ``greedy_exact`` (fraction of greedy responses the task calls correct: exactly sorted, the
    right sum, ...), with ``sampled=True`` ``sampled_exact``; when the task has a format check,
    ``greedy_format`` (fraction of answers in the asked form); when it has a per-position reward and a
    reference answer (the toy sorting tasks), ``greedy_position_acc`` (and ``sampled_position_acc``): the
    fraction of the answer's positions right, Σ_t r_t(x, y) / Σ_t r_t(x, sort(x)), averaged over prompts.
    When the task holds out whole answers (a text task's ``n_unseen_answers``), also ``unseen_greedy_exact``
    and ``unseen_greedy_format``: greedy accuracy on (at most ``n_prompts`` of) the problems whose answer
    never occurs in training. When the policy's responses end on their own (a language model's),
    ``greedy_truncated``: the fraction of greedy responses cut by the token budget. With ``pass_k`` > 0,
    ``pass@1`` and ``pass@{pass_k}`` from ``pass_k`` samples (T = 1) to each of the first ``pass_k_prompts``
    evaluation prompts (``sampled_pass_at_k``).
    ``model`` is a policy or a bare toy model (the policy moves the prompts to its own device).
    """
    policy = as_policy(model)
    generator = generator if generator is not None else torch.Generator().manual_seed(12345)
    prompts = evaluation_prompts(task, n_prompts, generator)  # on the CPU, where the task scores them
    # the fraction of positions right needs a per-position reward and a reference answer (the toy sorting tasks)
    graded = task if isinstance(task, ProcessRewardTask) and isinstance(task, ToyTask) else None
    if graded is not None:
        best = graded.per_position_rewards(prompts, graded.sorted_responses(prompts).unsqueeze(1)).sum(dim=-1)
    kinds = [("greedy", policy.greedy(prompts))]
    if sampled:
        kinds.append(
            (
                "sampled",
                policy.sample(prompts, 1, temperature=1.0, generator=device_generator(generator, policy.device)),
            )
        )
    out = {}
    for kind, rollout in kinds:
        answers = rollout.answers
        out[f"{kind}_exact"] = float(task.is_correct(prompts, answers).float().mean())
        if graded is not None:
            right = graded.per_position_rewards(prompts, answers).sum(dim=-1)  # [batch, 1]
            out[f"{kind}_position_acc"] = float((right / best).mean())
        if isinstance(task, FormatTask):
            out[f"{kind}_format"] = float(task.format_ok(prompts, answers).float().mean())
        if kind == "greedy" and rollout.truncated is not None:
            out["greedy_truncated"] = float(rollout.truncated.float().mean())
    if pass_k:
        ks = [1, pass_k] if pass_k > 1 else [1]
        first = select_prompts(prompts, slice(pass_k_prompts))
        out.update(sampled_pass_at_k(policy, task, first, pass_k, ks, generator))
    if isinstance(task, UnseenAnswersTask) and (n_unseen := min(task.n_unseen_problems, n_prompts)):
        unseen = task.unseen_answer_prompts(n_unseen)
        answers = policy.greedy(unseen).answers
        out["unseen_greedy_exact"] = float(task.is_correct(unseen, answers).float().mean())
        out["unseen_greedy_format"] = float(task.format_ok(unseen, answers).float().mean())
    return out


def _lr_scheduler(optimizer: torch.optim.Optimizer, schedule: str, steps: int):
    """None (constant) or a cosine decay lr_t = lr · ½(1 + cos(π t / steps)), stepped once per outer step."""
    if schedule == "constant":
        return None

    def factor(t: int) -> float:
        return 0.5 * (1.0 + math.cos(math.pi * min(t, steps) / steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _slices(batch: int, micro_batch_size: int | None) -> list[slice]:
    """Rows of each micro-batch: one slice of everything when micro_batch_size is None or >= batch."""
    if micro_batch_size is None or micro_batch_size >= batch:
        return [slice(None)]
    return [slice(i, min(i + micro_batch_size, batch)) for i in range(0, batch, micro_batch_size)]


@torch.no_grad()
def rollout_log_probs(
    policy: Policy, prompts: Any, rollout: Rollout, temperature: float = 1.0, micro_batch_size: int | None = None
) -> torch.Tensor:
    """log π(y_t | x, y_<t) of the rollout's tokens ``[batch, trial, pos]``, without gradient (π_old, π_ref),
    in micro-batches of ``micro_batch_size`` prompts."""
    parts = [
        policy.score(select_prompts(prompts, rows), rollout.rows(rows), temperature=temperature).log_probs
        for rows in _slices(rollout.batch_size, micro_batch_size)
    ]
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)


def _mean_entropy(entropy: torch.Tensor, mask: torch.Tensor | None, whole: dict | None) -> torch.Tensor:
    """Mean entropy per token (nats), over real tokens only. ``entropy`` is ``[batch, trial, pos]``, or
    ``[batch, 1, pos]`` when the group shares one distribution per position (the toy encoder-decoder); with a
    mask ``[batch, trial, pos]`` it is averaged over the real tokens of the sampled responses (a position after
    a response's EOS does not count), without one over prompts and positions. ``whole``: the whole batch's
    counts when this is a micro-batch."""
    if mask is None:
        return entropy.mean() if whole is None else entropy.sum() / (whole["n_prompts"] * entropy[0].numel())
    return aggregate(entropy.expand_as(mask), mask, "token_mean", n_tokens=None if whole is None else whole["n_tokens"])


def _weighted(parts: list[tuple[float, dict[str, float]]]) -> dict[str, float]:
    """Combine micro-batch metrics: sums for losses, max for ratio_max, token-weighted means for the rest."""
    if len(parts) == 1:
        return parts[0][1]
    total = sum(w for w, _ in parts) or 1.0
    out = {}
    for key in parts[0][1]:
        values = [m[key] for _, m in parts]
        if key in ("loss", "pg_loss"):
            out[key] = sum(values)
        elif key == "ratio_max":
            out[key] = max(values)
        else:
            out[key] = sum(w * m[key] for w, m in parts) / total
    return out


# PLR0913: the API by design: what the step acts on (policy, optimizer, algo) and the batch as the loop holds it
# (prompts, rollout, advantages), positional as notebooks 05 and 06 call it; six optional keyword-only knobs.
def policy_update(  # noqa: PLR0913
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    algo: AlgoConfig,
    prompts: Any,
    rollout: Rollout,
    advantages: torch.Tensor,
    *,
    old_log_probs: torch.Tensor | None = None,
    ref_log_probs: torch.Tensor | None = None,
    max_grad_norm: float | None = 1.0,
    temperature: float = 1.0,
    micro_batch_size: int | None = None,
    measure_kl_old: bool = False,
) -> dict[str, float]:
    """Step 4 of the loop: ``algo.inner_epochs`` gradient steps on one batch of samples, π_old held fixed.

    Each inner step minimises ``policy_loss`` (the clipped surrogate, plus β · KL to π_ref) minus
    ``algo.entropy_coef`` · H̄ (the mean entropy per token of π_θ), clipping the gradient's global norm to
    ``max_grad_norm``. With ``micro_batch_size`` the forward and backward passes run on slices of that many
    prompts, each normalised by the whole batch's counts, and the gradients add up to the whole batch's.

    Args:
        policy: a ``minirl.protocols.Policy`` (a bare toy model: ``ToyPolicy(model)``); its parameters are the
            ones ``optimizer`` updates.
        prompts: the batch's prompts (``[batch, P]`` tokens for the toy, a list for a text task).
        rollout: the responses sampled from π_old: their tokens ``[batch, trial, pos]``, the mask of real
            tokens and the length budget (``max_length`` of the ``"constant"`` aggregation).
        advantages: ``[batch, trial]`` (or ``[batch, trial, pos]`` for a process reward).
        old_log_probs: log π_old of the sampled tokens ``[batch, trial, pos]``. None: π_old is the policy as
            it is on entry (it sampled the rollout), scored at the first inner step, before any update, and
            held for the later ones: no forward pass of its own. Ignored when ``algo.importance_ratio`` is
            False (the loss is then −log π_θ · Δ at every step: ρ ≡ 1).
        ref_log_probs: log π_ref of the sampled tokens, for the KL penalty (as in ``policy_loss``).
        temperature: the sampling temperature (the loss scores the same tempered policy).
        measure_kl_old: after the last inner step, score the responses once more (no gradient) and return
            ``kl_old``, the k3 estimate of KL(π_old ‖ π_θ) per real token: how far this batch's updates moved
            the policy (PPO's "approx KL"), exp(ℓ) − ℓ − 1 with ℓ = log π_θ(y) − log π_old(y), y ~ π_old.

    Returns the metrics of the last inner step (``policy_loss``'s, plus ``loss`` and ``grad_norm``) and
    ``entropy``, the mean entropy per token of π_old (measured at the first inner step, before any change).
    """
    policy = require(policy, Policy, "policy", hint="wrap a bare toy model: ToyPolicy(model)")
    mask, max_length = rollout.mask, rollout.max_length
    if not algo.importance_ratio:
        old_log_probs = None
    slices = _slices(rollout.batch_size, micro_batch_size)
    whole = None
    if len(slices) > 1:
        n_tokens = float(mask.sum()) if mask is not None else float(rollout.tokens.numel())
        whole = {
            "n_sequences": rollout.batch_size * rollout.group_size,
            "n_tokens": n_tokens,
            "n_prompts": rollout.batch_size,
        }
    limit = max_grad_norm if max_grad_norm is not None else float("inf")
    olds: list[torch.Tensor] = []  # log π_old of each slice: given, or scored at the first inner step (θ = θ_old)
    for epoch in range(algo.inner_epochs):
        optimizer.zero_grad(set_to_none=True)
        parts, entropies = [], []
        for i, rows in enumerate(slices):
            part_mask = None if mask is None else mask[rows]
            scores = policy.score(select_prompts(prompts, rows), rollout.rows(rows), temperature=temperature)
            if epoch == 0:
                olds.append(scores.log_probs.detach() if old_log_probs is None else old_log_probs[rows])
            old = olds[i] if algo.importance_ratio else scores.log_probs.detach()
            loss, metrics = policy_loss(
                scores.log_probs,
                old,
                advantages[rows],
                part_mask,
                **algo.policy_loss_kwargs(),
                ref_log_probs=None if ref_log_probs is None else ref_log_probs[rows],
                max_length=max_length,
                n_sequences=None if whole is None else whole["n_sequences"],
                n_tokens=None if whole is None else whole["n_tokens"],
            )
            mean_entropy = _mean_entropy(scores.entropy, part_mask, whole)
            if algo.entropy_coef:
                loss = loss - algo.entropy_coef * mean_entropy
            loss.backward()
            weight = float(part_mask.sum()) if part_mask is not None else float(scores.log_probs.numel())
            parts.append((weight, {**metrics, "loss": loss.item()}))
            entropies.append(float(mean_entropy.detach()))
        if epoch == 0:
            entropy = sum(entropies)  # of π_old, the policy that sampled (each slice's share of the whole mean)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.parameters(), limit))
        optimizer.step()
    out = {**_weighted(parts), "grad_norm": grad_norm, "entropy": entropy}
    if measure_kl_old:
        old = torch.cat(olds) if len(olds) > 1 else olds[0]
        new = rollout_log_probs(policy, prompts, rollout, temperature, micro_batch_size)
        per_token = kl_estimate(old, new, "k3", max_log_ratio=20.0)  # samples from π_old: KL(π_old ‖ π_θ)
        out["kl_old"] = float(
            aggregate(per_token, mask if mask is not None else torch.ones_like(per_token), "token_mean")
        )
    return out


UPDATE_METRICS = ("loss", "clip_frac_low", "clip_frac_high", "ratio_mean", "ratio_max", "entropy", "grad_norm")


def step_metrics(
    task: Task,
    prompts: Any,
    rollout: Rollout,
    rewards: torch.Tensor,
    update: dict[str, float],
    *,
    kl: bool,
    kl_old: bool,
) -> dict[str, float]:
    """What ``train`` logs about one step, timings aside (each metric is described in ``train``): how good the
    sampled responses were, what ``policy_update`` measured (``update``), and how long and how alike the
    responses were.

    ``rewards``: ``[batch, trial]``. ``kl``: log the KL to π_ref (``policy_loss`` reports 0 when there is no
    π_ref: log it only when there is one); ``kl_old``: log the KL to π_old (``policy_update``'s ``kl_old``).
    """
    correct = task.is_correct(prompts, rollout.answers)  # [batch, trial]
    metrics = {"reward": float(rewards.mean()), "exact_match": float(correct.float().mean())}
    if isinstance(task, FormatTask):
        metrics["format_rate"] = float(task.format_ok(prompts, rollout.answers).float().mean())
    if kl:
        metrics["kl"] = update["kl"]
    if kl_old:
        metrics["kl_old"] = update["kl_old"]
    metrics.update({k: update[k] for k in UPDATE_METRICS})
    lengths = rollout.lengths()  # [batch, trial]
    metrics["response_length"] = float(lengths.mean())
    if rollout.truncated is not None:  # responses that end on their own: cut ones, and length by correctness
        metrics["truncated"] = float(rollout.truncated.float().mean())
        metrics["length_correct"], metrics["length_wrong"] = length_by_correctness(lengths, correct)
    metrics["zero_variance_groups"] = zero_variance_fraction(rewards)
    if rewards.shape[1] > 1:  # the spread within a group needs two responses
        metrics["reward_std"] = float(rewards.std(dim=1).mean())
    return metrics


def _verdict_kind(line: str) -> str:
    """A ``cannot_learn`` line without its numbers (the steps, the mean reward): what kind of verdict it is."""
    return re.sub(r"[0-9.]+", "#", line)


def _say_if_stuck(history: History, cfg: TrainConfig, budget: int) -> None:
    """After every ``cfg.stall_window`` steps, print ``cannot_learn``'s verdict on them, once per kind of
    verdict (kept in ``history.notes``): a later window with the same verdict, whatever its steps and mean
    reward, prints nothing."""
    window = cfg.stall_window
    if not window or len(history) % window:
        return
    try:
        max_reward = float(cfg.task.max_reward)  # type: ignore[attr-defined]
    except (AttributeError, ValueError):  # a task without one, or a custom reward
        max_reward = None
    line = cannot_learn(history.records[-window:], max_reward=max_reward, budget=budget)
    if line is None or any(_verdict_kind(note) == _verdict_kind(line) for note in history.notes):
        return
    history.notes.append(line)
    (tqdm.write if cfg.progress else print)(line)


ModelT = TypeVar("ModelT", bound=torch.nn.Module)


@overload
def train(
    config: TrainConfig, model: None = None, *, run: RunHooks | None = None
) -> tuple[TinyEncoderDecoder, History]: ...


@overload
def train(config: TrainConfig, model: ModelT, *, run: RunHooks | None = None) -> tuple[ModelT, History]: ...


def train(
    config: TrainConfig, model: torch.nn.Module | None = None, *, run: RunHooks | None = None
) -> tuple[torch.nn.Module, History]:
    """Train a policy on ``config.task`` with ``config.algo``; returns (model, History).

    ``model``: a ``minirl.protocols.Policy`` (e.g. ``minirl.lm.load_policy(...)``), a bare toy model, or None
    (a new ``TinyEncoderDecoder`` sized for the task, which needs a ``ToyTask``). It comes back as given (a
    bare toy model trained through a ``ToyPolicy`` wrapper comes back bare).

    History records per step: ``reward`` (mean over the batch), ``exact_match`` (fraction of sampled
    responses the task calls correct), ``format_rate`` (when the task checks the answer's form), ``loss``,
    ``samples`` (responses sampled so far), ``kl`` (k3 estimate of KL(π_θ ‖ π_ref) per real token at the last
    inner step; with β = 0, π_ref is a frozen copy of the initial policy kept only to measure it, and without
    ``measure_kl`` there is no ``kl``), ``kl_old`` (with ``measure_kl``: KL(π_old ‖ π_θ) after the inner
    epochs), ``clip_frac_low``/``clip_frac_high``,
    ``ratio_mean``, ``ratio_max``, ``entropy`` (mean per-token entropy of π_old, the sampling policy, nats),
    ``grad_norm``, ``response_length`` (mean real tokens per sampled response, EOS included), for a policy
    whose responses end on their own (a language model) ``truncated`` (the fraction cut by the token budget)
    and ``length_correct`` / ``length_wrong`` (mean length of the correct / wrong responses; NaN in a step
    with none),
    ``zero_variance_groups`` (fraction of groups whose rewards are all equal: zero advantage, no signal),
    ``reward_std`` (the within-group std of the rewards, averaged over the groups: the scale that
    ``normalized_rewards`` divides out; not logged with groups of one),
    ``gen_seconds`` / ``update_seconds`` (this step's sampling and learning time), ``tokens_per_second``
    (real response tokens sampled per second of the step), ``wall_time`` (seconds since the start); and
    every ``eval_every`` steps the greedy (and sampled) accuracy on the evaluation prompts (``evaluate``, with
    pass@k when ``pass_k``). A window of ``stall_window`` steps that could not teach anything is said in one
    line and kept in ``history.notes`` (``minirl.diagnostics.cannot_learn``).

    ``run``: a ``minirl.runs.RunFolder`` that keeps the run on disk as it goes (config, metrics, checkpoints,
    the trained model) and, made with ``RunFolder.resume``, continues it from its checkpoint; None keeps nothing.
    """
    with torch_threads(config.threads):
        return _train(config, model, run if run is not None else RunHooks())


def _train(config: TrainConfig, model: torch.nn.Module | None, run: RunHooks) -> tuple[torch.nn.Module, History]:
    cfg, algo, task = config, config.algo, config.task
    torch.manual_seed(cfg.seed)  # nothing should use the global RNG, but just in case
    if model is None:
        model = make_model(require(task, ToyTask, "config.task (with no model given)"), cfg.embedding_dim, cfg.seed)
    policy = as_policy(model, task.response_length if isinstance(task, ToyTask) else None)
    if cfg.device is not None:
        policy.to(cfg.device)
    device = policy.device
    measure_kl = cfg.measure_kl if cfg.measure_kl is not None else policy.cheap_reference
    # π_ref: the KL penalty's anchor, or with β = 0 (and measure_kl) a frozen initial policy to measure the drift
    ref_policy = copy.deepcopy(policy).requires_grad_(False) if algo.kl_coef > 0 or measure_kl else None
    optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.learning_rate)
    scheduler = _lr_scheduler(optimizer, cfg.lr_schedule, cfg.steps)
    generator = torch.Generator().manual_seed(cfg.seed)
    sample_generator = device_generator(generator, device)
    history = History(label=algo.name, seed=cfg.seed)
    samples_per_step = cfg.prompts_per_step * cfg.group_size
    score_kw = {"temperature": cfg.temperature, "micro_batch_size": cfg.micro_batch_size}

    def run_eval(step: int, elapsed: float) -> dict[str, float]:
        eval_generator = evaluation_generator(cfg.seed)  # the same evaluation prompts each time
        ev = evaluate(
            policy,
            task,
            cfg.eval_prompts,
            eval_generator,
            sampled=cfg.eval_sampled,
            pass_k=cfg.pass_k,
            pass_k_prompts=cfg.pass_k_prompts,
        )
        history.log_eval(step=step, samples=step * samples_per_step, wall_time=elapsed, **ev)
        return ev

    generators = [generator] if sample_generator is generator else [generator, sample_generator]
    state = TrainState(policy, optimizer, scheduler, generators, ref_policy, history)
    done = run.start(state)  # the steps a resumed run has already taken (0: a fresh start)
    if cfg.eval_every and not done:
        run_eval(0, 0.0)
    run.log(history)
    start = time.perf_counter() - (history.records[-1]["wall_time"] if history.records else 0.0)
    bar = tqdm(
        range(done + 1, cfg.steps + 1), desc=f"{algo.name} seed {cfg.seed}", disable=not cfg.progress, leave=False
    )
    with run.interrupts_deferred():  # a run folder turns Ctrl-C into a checkpoint at the end of the step
        for step in bar:
            step_start = time.perf_counter()
            prompts = task.sample_prompts(cfg.prompts_per_step, generator)
            rollout = _with_mask(
                task, policy.sample(prompts, cfg.group_size, temperature=cfg.temperature, generator=sample_generator)
            )
            gen_seconds = time.perf_counter() - step_start
            rewards = task.rewards(prompts, rollout.answers).to(device)  # [batch, trial]
            advantages = _advantages(task, algo, prompts, rollout.answers, rewards)
            # π_old is the sampler, frozen: policy_update scores it at its first inner step, before any update
            ref_log_probs = rollout_log_probs(ref_policy, prompts, rollout, **score_kw) if ref_policy else None

            update = policy_update(
                policy,
                optimizer,
                algo,
                prompts,
                rollout,
                advantages,
                ref_log_probs=ref_log_probs,
                max_grad_norm=cfg.max_grad_norm,
                measure_kl_old=measure_kl,
                **score_kw,
            )
            if scheduler is not None:
                scheduler.step()

            if ref_policy is not None and algo.ref_refresh_every and step % algo.ref_refresh_every == 0:
                ref_policy.load_state_dict(policy.state_dict())

            now = time.perf_counter()
            elapsed = now - start
            history.log(
                step=step,
                samples=step * samples_per_step,
                **step_metrics(task, prompts, rollout, rewards, update, kl=ref_policy is not None, kl_old=measure_kl),
                gen_seconds=gen_seconds,
                update_seconds=now - step_start - gen_seconds,
                tokens_per_second=float(rollout.lengths().sum()) / max(now - step_start, 1e-9),
                wall_time=elapsed,
            )
            out_of_time = cfg.max_seconds is not None and elapsed >= cfg.max_seconds
            if (cfg.eval_every and step % cfg.eval_every == 0) or step == cfg.steps or out_of_time:
                ev = run_eval(step, elapsed)
                bar.set_postfix(reward=f"{history.last('reward', 10):.2f}", greedy_exact=f"{ev['greedy_exact']:.2f}")
            _say_if_stuck(history, cfg, rollout.max_length)
            run.after_step(step, state)  # keeps the step's metrics; a checkpoint when due (or after Ctrl-C)
            if out_of_time:
                break
    bar.close()
    run.finish(model, state)
    return model, history  # as given (a policy, or a bare toy model), or the toy model built here

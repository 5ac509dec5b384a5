"""One training loop for every policy-gradient algorithm on the sorting task.

Each step, exactly as the textbook algorithm reads:

    1. sample a batch of prompts x                                             [batch, pos]
    2. π_old ← π_θ; sample a group of G responses per prompt from π_old       [batch, trial, pos]
    3. score them: rewards r, then advantages Δ (compute_deltas)               [batch, trial]
    4. for inner_epochs: take a gradient step on policy_loss(π_θ, π_old, Δ, π_ref)
    5. every ref_refresh_every steps: π_ref ← π_θ

The algorithm (``AlgoConfig``) only chooses knobs; there is no per-algorithm branch.

A task is anything with the interface of ``toy_envs.SortingTask``: ``n_tokens``, ``prompt_length``,
``response_length``, ``sample_prompts(n, generator)``, ``rewards``, ``per_position_rewards``,
``is_correct`` and ``sorted_responses``. A task with responses of different lengths
(``toy_envs.VariableLengthSortingTask``) also has ``response_mask(responses)``: 1 up to and including
the end-of-sequence token, 0 after; the loss then counts only those tokens and aggregates them with
the algorithm's ``aggregation`` (this is where ``sequence_mean``, ``token_mean`` and ``constant`` differ).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from minirl.advantages import compute_deltas
from minirl.algorithms import AlgoConfig, get_algorithm
from minirl.history import History
from minirl.losses import policy_loss
from minirl.model import TinyEncoderDecoder
from minirl.sampling import compute_log_probs, gather_log_probs, greedy_responses, sample_responses
from minirl.utils import check_positive_ints, one_thread
from toy_envs.sorting import SortingTask

__all__ = ["TrainConfig", "evaluate", "make_model", "policy_update", "response_mask", "train", "train_supervised"]


@dataclass
class TrainConfig:
    """Everything one run of ``train`` needs.

    Attributes:
        task: the sorting task (its reward is the training reward), ``SortingTask`` or
            ``VariableLengthSortingTask``.
        algo: a preset name from ``ALGORITHMS`` or an ``AlgoConfig``.
        steps: number of outer steps (one batch of fresh samples each).
        prompts_per_step: prompts per batch.
        group_size: responses sampled per prompt (G, the ``trial`` axis).
        learning_rate: Adam step size (the peak, with ``lr_schedule="cosine"``).
        lr_schedule: ``"constant"`` or ``"cosine"`` (decays to 0 at ``steps``; the last steps
            polish the policy instead of shaking it).
        max_grad_norm: clip the gradient's global norm to this (None = no clipping). When most
            groups agree, their advantages are 0 and Adam's running gradient scale shrinks; the
            next non-zero gradient would then move every weight by several learning rates at once.
        embedding_dim: width of the ``TinyEncoderDecoder``.
        inner_epochs: overrides the preset's inner epochs when not None.
        temperature: sampling temperature; the log-probs in the loss use the same tempered
            policy, so π_old really is the distribution the samples came from.
        seed: seeds the model initialisation and every draw (bit-identical reruns on CPU).
        device: ``"cpu"`` or ``"cuda"``.
        eval_every: evaluate greedy decoding on held-out prompts every this many steps (0 = only
            at the end).
        eval_prompts: held-out prompts per evaluation.
        max_seconds: stop early once training has used this much wall time (None = no limit).
        progress: show a tqdm progress bar.
    """

    task: SortingTask = field(default_factory=lambda: SortingTask(vocab_size=5, length=3))
    algo: str | AlgoConfig = "grpo"
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
    device: str = "cpu"
    eval_every: int = 50
    eval_prompts: int = 1000
    max_seconds: float | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        check_positive_ints(steps=self.steps, prompts_per_step=self.prompts_per_step, group_size=self.group_size,
                            embedding_dim=self.embedding_dim, eval_prompts=self.eval_prompts)
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0; got {self.learning_rate}")
        if self.lr_schedule not in ("constant", "cosine"):
            raise ValueError(f"lr_schedule must be 'constant' or 'cosine'; got {self.lr_schedule!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0 or None; got {self.max_grad_norm}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0; got {self.temperature}")
        self.algo = get_algorithm(self.algo)
        if self.inner_epochs is not None:
            self.algo = self.algo.with_(inner_epochs=self.inner_epochs)
        if self.algo.delta_mode != "rewards" and self.group_size < 2:
            raise ValueError(f"algorithm {self.algo.name!r} compares responses within a group: group_size "
                             f"must be >= 2; got {self.group_size}")


def make_model(task: SortingTask, embedding_dim: int = 32, seed: int = 0) -> TinyEncoderDecoder:
    """A freshly initialised ``TinyEncoderDecoder`` sized for ``task`` (its tokens, prompt and response lengths)."""
    generator = torch.Generator().manual_seed(seed)
    return TinyEncoderDecoder(task.n_tokens, embedding_dim, task.prompt_length, task.response_length,
                              generator=generator)


def response_mask(task: SortingTask, responses: torch.Tensor) -> torch.Tensor | None:
    """The task's mask of real tokens ``[batch, trial, pos]`` (1 up to and including EOS), or None when every
    response uses every position (``SortingTask``)."""
    mask_fn = getattr(task, "response_mask", None)
    return mask_fn(responses) if mask_fn is not None else None


class _Tempered(torch.nn.Module):
    """π_T(· | x) = softmax(logits / T): the policy that actually samples."""

    def __init__(self, model: torch.nn.Module, temperature: float) -> None:
        super().__init__()
        self.model, self.temperature = model, temperature

    def forward(self, prompts: torch.Tensor) -> torch.Tensor:
        return self.model(prompts) / self.temperature


def _advantages(task: SortingTask, algo: AlgoConfig, prompts, responses, rewards) -> torch.Tensor:
    """[batch, trial] (outcome) or [batch, trial, pos] (process) advantages."""
    if algo.advantage_level == "sequence":
        return compute_deltas(rewards, algo.delta_mode)
    dense = task.per_position_rewards(prompts, responses)  # [batch, trial, pos]
    per_position = compute_deltas(dense.transpose(1, 2).flatten(0, 1), algo.delta_mode)  # [(batch pos), trial]
    return per_position.view(dense.shape[0], dense.shape[2], dense.shape[1]).transpose(1, 2)


@torch.no_grad()
def evaluate(
    model: torch.nn.Module,
    task: SortingTask,
    n_prompts: int = 1000,
    generator: torch.Generator | None = None,
    device: str = "cpu",
) -> dict[str, float]:
    """Greedy and sampled (T = 1) quality on fresh prompts.

    Returns ``greedy_exact``, ``sampled_exact`` (fraction of responses exactly sorted) and
    ``greedy_position_acc``, ``sampled_position_acc`` (fraction of the answer's positions right:
    Σ_t r_t(x, y) / Σ_t r_t(x, sort(x)) with the per-position reward r_t, averaged over prompts).
    """
    generator = generator if generator is not None else torch.Generator().manual_seed(12345)
    prompts = task.sample_prompts(n_prompts, generator)  # on the CPU, where the task scores them
    best = task.per_position_rewards(prompts, task.sorted_responses(prompts).unsqueeze(1)).sum(dim=-1)  # [batch, 1]
    on_device = prompts.to(device)
    out = {}
    for kind, responses in [
        ("greedy", greedy_responses(model, on_device)),
        ("sampled", sample_responses(model, on_device, 1, generator=_device_generator(generator, device))),
    ]:
        responses = responses.cpu()
        out[f"{kind}_exact"] = float(task.is_correct(prompts, responses).float().mean())
        right = task.per_position_rewards(prompts, responses).sum(dim=-1)  # [batch, 1]
        out[f"{kind}_position_acc"] = float((right / best).mean())
    return out


def _device_generator(generator: torch.Generator, device: str) -> torch.Generator:
    if torch.device(device).type == "cpu":
        return generator
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    return torch.Generator(device=device).manual_seed(seed)


def _lr_scheduler(optimizer: torch.optim.Optimizer, schedule: str, steps: int):
    """None (constant) or a cosine decay lr_t = lr · ½(1 + cos(π t / steps)), stepped once per outer step."""
    if schedule == "constant":
        return None

    def factor(t: int) -> float:
        return 0.5 * (1.0 + math.cos(math.pi * min(t, steps) / steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def policy_update(
    policy: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    algo: AlgoConfig,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor | None = None,
    ref_log_probs: torch.Tensor | None = None,
    max_grad_norm: float | None = 1.0,
    max_length: int | None = None,
) -> dict[str, float]:
    """Step 4 of the loop: ``algo.inner_epochs`` gradient steps on one batch of samples, π_old held fixed.

    Each inner step minimises ``policy_loss`` (the clipped surrogate, plus β · KL to π_ref) minus
    ``algo.entropy_coef`` · mean_pos H(π_θ(· | x)), clipping the gradient's global norm to ``max_grad_norm``.

    Args:
        policy: maps prompts ``[batch, P]`` to logits ``[batch, pos, vocab]``; its parameters are the ones
            ``optimizer`` updates.
        prompts ``[batch, P]``, responses ``[batch, trial, pos]``: the batch sampled from π_old.
        old_log_probs: log π_old of the sampled tokens ``[batch, trial, pos]`` (ignored when
            ``algo.importance_ratio`` is False).
        advantages: ``[batch, trial]`` (or ``[batch, trial, pos]`` for a process reward).
        mask, ref_log_probs, max_length: as in ``policy_loss``.

    Returns the metrics of the last inner step (``policy_loss``'s, plus ``loss`` and ``grad_norm``) and
    ``entropy``, the mean per-position entropy of π_old (measured at the first inner step, before any change).
    """
    limit = max_grad_norm if max_grad_norm is not None else float("inf")
    for epoch in range(algo.inner_epochs):
        log_p = F.log_softmax(policy(prompts), dim=-1)  # [batch, pos, vocab]: one forward pass
        log_probs = gather_log_probs(log_p, responses)  # [batch, trial, pos]
        entropy_per_pos = -(log_p.exp() * log_p).sum(dim=-1)  # [batch, pos]
        if epoch == 0:
            entropy = float(entropy_per_pos.detach().mean())  # of π_old, the policy that sampled
        loss, metrics = policy_loss(
            log_probs,
            old_log_probs if algo.importance_ratio else None,
            advantages,
            mask,
            clip_eps_low=algo.clip_eps_low,
            clip_eps_high=algo.clip_eps_high,
            ratio_level=algo.ratio_level,
            aggregation=algo.aggregation,
            ref_log_probs=ref_log_probs,
            kl_coef=algo.kl_coef,
            max_length=max_length,
        )
        if algo.entropy_coef:
            loss = loss - algo.entropy_coef * entropy_per_pos.mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.parameters(), limit))
        optimizer.step()
    return {**metrics, "loss": loss.item(), "grad_norm": grad_norm, "entropy": entropy}


def train(config: TrainConfig, model: torch.nn.Module | None = None) -> tuple[torch.nn.Module, History]:
    """Train a policy on ``config.task`` with ``config.algo``; returns (model, History).

    History records per step: ``reward`` (mean over the batch), ``exact_match`` (fraction of
    sampled responses exactly sorted), ``loss``, ``kl`` (k3 to π_ref, mean per token),
    ``clip_frac_low``/``clip_frac_high``, ``ratio_mean``, ``ratio_max``, ``entropy`` (mean per-position entropy
    of π_old, the sampling policy, nats), ``grad_norm``, ``response_length`` (mean real tokens per sampled
    response, EOS included), ``wall_time`` (seconds since the start); and every ``eval_every`` steps the
    greedy/sampled exact-match rates on held-out prompts.
    """
    with one_thread():
        return _train(config, model)


def _train(config: TrainConfig, model: torch.nn.Module | None) -> tuple[torch.nn.Module, History]:
    cfg, algo, task = config, config.algo, config.task
    torch.manual_seed(cfg.seed)  # nothing should use the global RNG, but just in case
    device = torch.device(cfg.device)
    model = (model if model is not None else make_model(task, cfg.embedding_dim, cfg.seed)).to(device)
    policy = _Tempered(model, cfg.temperature)
    ref_policy = copy.deepcopy(policy).requires_grad_(False) if algo.kl_coef > 0 else None
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.learning_rate)
    scheduler = _lr_scheduler(optimizer, cfg.lr_schedule, cfg.steps)
    generator = torch.Generator().manual_seed(cfg.seed)
    sample_generator = _device_generator(generator, cfg.device)
    eval_generator_seed = 10_000 + cfg.seed
    history = History(label=algo.name, seed=cfg.seed)

    def run_eval(step: int, elapsed: float) -> dict[str, float]:
        eval_generator = torch.Generator().manual_seed(eval_generator_seed)  # same held-out prompts each time
        ev = evaluate(model, task, cfg.eval_prompts, eval_generator, cfg.device)
        history.log_eval(step=step, wall_time=elapsed, **ev)
        return ev

    if cfg.eval_every:
        run_eval(0, 0.0)
    start = time.perf_counter()
    bar = tqdm(range(1, cfg.steps + 1), desc=f"{algo.name} seed {cfg.seed}", disable=not cfg.progress, leave=False)
    for step in bar:
        prompts = task.sample_prompts(cfg.prompts_per_step, generator).to(device)
        responses = sample_responses(policy, prompts, cfg.group_size, generator=sample_generator)
        rewards = task.rewards(prompts.cpu(), responses.cpu()).to(device)
        advantages = _advantages(task, algo, prompts, responses, rewards)
        mask = response_mask(task, responses)  # [batch, trial, pos] or None: every token real
        with torch.no_grad():
            old_log_probs = compute_log_probs(prompts, responses, policy)  # π_old: the sampler, frozen
            ref_log_probs = compute_log_probs(prompts, responses, ref_policy) if ref_policy else None

        update = policy_update(policy, optimizer, algo, prompts, responses, old_log_probs, advantages, mask,
                               ref_log_probs, max_grad_norm=cfg.max_grad_norm, max_length=task.response_length)
        if scheduler is not None:
            scheduler.step()

        if ref_policy is not None and algo.ref_refresh_every and step % algo.ref_refresh_every == 0:
            ref_policy.load_state_dict(policy.state_dict())

        exact = float(task.is_correct(prompts.cpu(), responses.cpu()).float().mean())
        elapsed = time.perf_counter() - start
        history.log(step=step, reward=float(rewards.mean()), exact_match=exact,
                    **{k: update[k] for k in ("loss", "kl", "clip_frac_low", "clip_frac_high", "ratio_mean",
                                              "ratio_max", "entropy", "grad_norm")},
                    response_length=float(mask.sum(-1).mean()) if mask is not None else float(responses.shape[-1]),
                    wall_time=elapsed)
        out_of_time = cfg.max_seconds is not None and elapsed >= cfg.max_seconds
        if (cfg.eval_every and step % cfg.eval_every == 0) or step == cfg.steps or out_of_time:
            ev = run_eval(step, elapsed)
            bar.set_postfix(reward=f"{history.last('reward', 10):.2f}", greedy_exact=f"{ev['greedy_exact']:.2f}")
        if out_of_time:
            break
    bar.close()
    return model, history


def train_supervised(
    task: SortingTask,
    steps: int,
    batch_size: int,
    learning_rate: float = 0.003,
    embedding_dim: int = 32,
    seed: int = 0,
    demonstrations=None,
    progress: bool = False,
) -> tuple[torch.nn.Module, History]:
    """Supervised fine-tuning: cross-entropy on the sorted answer, L = −Σ_j log π(sort(x)_j | x).

    ``demonstrations`` (optional) is a function ``(prompts) -> responses[batch, pos]`` giving the
    target to imitate (default: the correct sorted prompt). Same model, optimiser and number of
    updates as RL, so its final accuracy is the "supervised ceiling" RL is compared with.
    """
    with one_thread():
        return _train_supervised(task, steps, batch_size, learning_rate, embedding_dim, seed, demonstrations, progress)


def _train_supervised(task, steps, batch_size, learning_rate, embedding_dim, seed, demonstrations, progress):
    generator = torch.Generator().manual_seed(seed)
    model = make_model(task, embedding_dim, seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    history = History(label="supervised", seed=seed)
    start = time.perf_counter()
    for step in tqdm(range(1, steps + 1), desc=f"supervised seed {seed}", disable=not progress, leave=False):
        prompts = task.sample_prompts(batch_size, generator)
        targets = task.sorted_responses(prompts) if demonstrations is None else demonstrations(prompts)
        logits = model(prompts)  # [batch, pos, vocab]
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history.log(step=step, loss=loss.item(), wall_time=time.perf_counter() - start)
    ev = evaluate(model, task, 1000, torch.Generator().manual_seed(10_000 + seed))
    history.log_eval(step=steps, wall_time=time.perf_counter() - start, **ev)
    return model, history

"""One training loop for every policy-gradient algorithm and every kind of policy.

Each step, exactly as the textbook algorithm reads:

    1. sample a batch of prompts x                                             [batch]
    2. π_old ← π_θ; sample a group of G responses per prompt from π_old       [batch, trial, pos]
    3. score them: rewards r, then advantages Δ (compute_deltas)               [batch, trial]
    4. for inner_epochs: take a gradient step on policy_loss(π_θ, π_old, Δ, π_ref)   (policy_update, minirl.update)
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

Evaluations (``evaluate``, ``minirl.evaluate``) score the same held-out prompts each time.
Micro-batching (gradient accumulation, ``micro_batch_size``) splits step 4's forward and backward passes
into slices of prompts and normalises every slice by the whole batch's counts, so the gradient is the
whole batch's, whatever the aggregation.
"""

from __future__ import annotations

import copy
import math
import re
import time
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, TypeVar, overload

import torch
from tqdm.auto import tqdm

from minirl.advantages import GROUP_MODES, compute_deltas, zero_variance_fraction
from minirl.algorithms import AlgoConfig, AlgoField
from minirl.critic import Critic
from minirl.diagnostics import cannot_learn, length_by_correctness
from minirl.episodes import sample_rollout
from minirl.evaluate import evaluate, evaluation_generator, evaluation_prompts
from minirl.history import History
from minirl.hooks import RunHooks, TrainState
from minirl.protocols import (
    EpisodicTask,
    FormatTask,
    MaskedTask,
    ProcessRewardTask,
    Rollout,
    Task,
    ToyTask,
    require,
)
from minirl.toy.model import TinyEncoderDecoder, make_model
from minirl.toy.policy import as_policy
from minirl.update import policy_update, rollout_log_probs
from minirl.utils import (
    check_nonnegative_ints,
    check_positive_ints,
    describe_task,
    device_generator,
    plain_json,
    torch_threads,
)
from toy_envs.sorting import SortingTask

__all__ = [
    "LR_SCHEDULES",
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


LR_SCHEDULES = ("constant", "cosine")
"""The learning-rate schedules ``lr_scheduler`` knows (``TrainConfig.lr_schedule``, a recipe's two schedules)."""


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
        eval_at_end: also evaluate after the last step (and when ``max_seconds`` stops the run). False where
            the caller evaluates the trained policy itself on the same prompts (notebook 11's fast mode,
            ``minirl.bench.self_training``): with ``eval_every=0`` the run then records no evaluation.
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
    eval_at_end: bool = True
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
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be 'constant' or 'cosine'; got {self.lr_schedule!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0 or None; got {self.max_grad_norm}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0; got {self.temperature}")
        if self.inner_epochs is not None:
            self.algo = self.algo.with_(inner_epochs=self.inner_epochs)
        if self.algo.delta_mode in GROUP_MODES and self.group_size < 2:
            raise ValueError(
                f"algorithm {self.algo.name!r} compares responses within a group: group_size "
                f"must be >= 2; got {self.group_size}"
            )
        require(self.task, Task, "task")
        if self.algo.advantage_level == "token":
            require(self.task, ProcessRewardTask, "task", hint=f"algorithm {self.algo.name!r} rewards each position")

    def describe(self) -> dict[str, Any]:
        """Every knob, as a run folder's ``config.json`` keeps it: the fields, the preset's name and the
        algorithm's fields, the task (``describe_task``)."""
        knobs = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("task", "algo")}
        return {
            **plain_json(knobs),
            "preset": self.algo.name,
            "algo": plain_json(asdict(self.algo)),
            "task": describe_task(self.task),
        }

    def run_training(self, run: RunHooks | None = None) -> History:
        """Train this run (``train``) and return its History: ``minirl compare`` trains any config so."""
        return train(self, run=run)[1]


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
        return compute_deltas(rewards, algo.delta_mode, accept_reward=algo.accept_reward)
    task = require(task, ProcessRewardTask, "task", hint=f"algorithm {algo.name!r} rewards each position")
    dense = task.per_position_rewards(prompts, answers).to(rewards.device)  # [batch, trial, pos]
    per_position = compute_deltas(dense.transpose(1, 2).flatten(0, 1), algo.delta_mode)  # [(batch pos), trial]
    return per_position.view(dense.shape[0], dense.shape[2], dense.shape[1]).transpose(1, 2)


def _step_advantages(
    task: Task,
    algo: AlgoConfig,
    critic: Critic | None,
    policy: Any,
    prompts: Any,
    rollout: Rollout,
    rewards: torch.Tensor,
    ref_log_probs: torch.Tensor | None,
    score_kw: dict[str, Any],
) -> tuple[torch.Tensor, torch.Tensor | None, dict[str, float]]:
    """Step 3's advantages, π_old's log-probs when they were needed already (else None: ``policy_update`` scores
    π_old at its first inner step, before any update) and the critic's metrics. A critic with β > 0 needs π_old
    first, for the KL in its per-token rewards (log π_old − log π_ref of each sampled token). With a critic,
    ``delta_mode`` shapes each episode's reward before GAE (``"rewards"``, PPO's own, leaves it as it is)."""
    if critic is None:
        return _advantages(task, algo, prompts, rollout.answers, rewards), None, {}
    old_log_probs = None
    if ref_log_probs is not None and algo.kl_coef > 0:
        old_log_probs = rollout_log_probs(policy, prompts, rollout, **score_kw)
    kl = None if old_log_probs is None or ref_log_probs is None else old_log_probs - ref_log_probs
    shaped = compute_deltas(rewards, algo.delta_mode)  # "rewards" (PPO's): as they are; else scaled in each group
    advantages, metrics = critic.advantages(policy, prompts, rollout, shaped, kl)
    return advantages, old_log_probs, metrics


def _critic(policy: Any, algo: AlgoConfig, done: int) -> Critic | None:
    """The learned value of ``advantage_level="critic"`` (None for every other algorithm); a resumed run
    (``done`` steps taken) is refused, since the value head is not in the checkpoint."""
    if algo.advantage_level != "critic":
        return None
    if done:
        raise ValueError(f"algorithm {algo.name!r} cannot resume a run yet: its value head is not checkpointed")
    return Critic.for_policy(policy, algo)


def lr_scheduler(optimizer: torch.optim.Optimizer, schedule: str, steps: int):
    """None (constant) or a cosine decay lr_t = lr · ½(1 + cos(π t / steps)), stepped once per outer step."""
    if schedule == "constant":
        return None

    def factor(t: int) -> float:
        return 0.5 * (1.0 + math.cos(math.pi * min(t, steps) / steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


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
    diagnose: Any = getattr(task, "diagnostics", None)  # an agent's task: turns, and replies the env could not use
    if isinstance(task, EpisodicTask) and diagnose is not None:
        figures = diagnose(prompts, rollout.answers)
        metrics.update({k: figures[k] for k in ("turns", "invalid_replies")})
    if kl:
        metrics["kl"] = update["kl"]
    if kl_old:
        metrics["kl_old"] = update["kl_old"]
    metrics.update({k: update[k] for k in UPDATE_METRICS})
    if "pair_accuracy" in update:  # online DPO: the pairs whose implicit reward margin is positive
        metrics["pair_accuracy"] = update["pair_accuracy"]
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
    responses the task calls correct), ``format_rate`` (when the task checks the answer's form), for an agent's
    task ``turns`` and ``invalid_replies`` (the mean replies an episode, and those the environment could not use:
    ``EpisodeScores.diagnostics``), ``loss``,
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
    (real response tokens sampled per second of the step), ``wall_time`` (seconds since the start); with a
    critic (``advantage_level="critic"``) ``value_loss`` / ``value_loss_after`` (the value head's error on the
    step's returns before and after its fit) and ``value_mean``; and
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
    scheduler = lr_scheduler(optimizer, cfg.lr_schedule, cfg.steps)
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
    critic = _critic(policy, algo, done)
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
                task,
                sample_rollout(
                    policy, task, prompts, cfg.group_size, temperature=cfg.temperature, generator=sample_generator
                ),
            )
            gen_seconds = time.perf_counter() - step_start
            rewards = task.rewards(prompts, rollout.answers).to(device)  # [batch, trial]
            ref_log_probs = rollout_log_probs(ref_policy, prompts, rollout, **score_kw) if ref_policy else None
            advantages, old_log_probs, critic_metrics = _step_advantages(
                task, algo, critic, policy, prompts, rollout, rewards, ref_log_probs, score_kw
            )

            update = policy_update(
                policy,
                optimizer,
                algo,
                prompts,
                rollout,
                advantages,
                old_log_probs=old_log_probs,
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
                **critic_metrics,
                gen_seconds=gen_seconds,
                update_seconds=now - step_start - gen_seconds,
                tokens_per_second=float(rollout.lengths().sum()) / max(now - step_start, 1e-9),
                wall_time=elapsed,
            )
            out_of_time = cfg.max_seconds is not None and elapsed >= cfg.max_seconds
            last = step == cfg.steps or out_of_time
            if (cfg.eval_every and step % cfg.eval_every == 0) or (last and cfg.eval_at_end):
                ev = run_eval(step, elapsed)
                bar.set_postfix(reward=f"{history.last('reward', 10):.2f}", greedy_exact=f"{ev['greedy_exact']:.2f}")
            _say_if_stuck(history, cfg, rollout.max_length)
            run.after_step(step, state)  # keeps the step's metrics; a checkpoint when due (or after Ctrl-C)
            if out_of_time:
                break
    bar.close()
    run.finish(model, state)
    return model, history  # as given (a policy, or a bare toy model), or the toy model built here

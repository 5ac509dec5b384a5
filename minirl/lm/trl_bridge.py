"""From minirl to TRL: the same GRPO loss, knob for knob.

TRL's ``GRPOTrainer`` is what the field uses to train with GRPO across GPUs and machines (accelerate,
DeepSpeed or FSDP, vLLM generation, PEFT). It computes the loss minirl's ``policy_loss`` computes, under
other names. This module says which, in code:

- ``KNOBS``: every ``AlgoConfig`` knob and its ``GRPOConfig`` field (or why there is none);
- ``grpo_config_kwargs(algo, max_length)``: the ``GRPOConfig`` fields that make TRL compute
  ``policy_loss`` with ``algo``'s knobs (it refuses the rungs TRL has no counterpart for);
- ``trl_loss_inputs(...)``: a minirl batch (prompts, a ``Rollout``, advantages, π_old and π_ref
  log-probs) as the ``inputs`` dict that ``GRPOTrainer.compute_loss`` takes;
- ``grpo_trainer(config, model, tokenizer, max_new_tokens)``: a ``GRPOTrainer`` that runs minirl's
  ``TrainConfig`` (a text task) with TRL, and ``trl_history(trainer)``: its logs as a minirl ``History``.

The tests (``tests/test_trl_parity.py``) build a ``GRPOTrainer`` around a model, hand it such a batch and
check that TRL's own loss and gradients equal ``policy_loss``'s to 1e-5 of their scale, for grpo, dapo,
gspo and dr_grpo, with and without the KL term and with asymmetric clipping; and they run one optimizer
step of a ``grpo_trainer`` whose micro-batches are smaller than the batch (TRL's gradient accumulation)
and find minirl's whole-batch loss and gradient.

Gradient accumulation and several processes (TRL 1.16, ``GRPOTrainer._compute_loss``): minirl normalises
every micro-batch by the *whole* batch's counts (``policy_update``), so its micro-batches add up to the
whole batch's loss. TRL's loss types do this or not:

- ``"grpo"`` (sequence_mean) and ``"dr_grpo"`` (constant) divide each micro-batch's mean by
  ``gradient_accumulation_steps``; micro-batches hold equally many responses, and processes too, whose
  gradients DDP averages: the whole batch's mean, exactly;
- ``"dapo"`` (token_mean) divides by ``num_items_in_batch``, the real tokens of the whole generation batch
  gathered over every process (then rescaled by processes and accumulation steps): the whole batch's token
  mean, exactly;
- ``"bnpo"`` divides each micro-batch by its *own* token count (then by the accumulation steps): a token of a
  micro-batch of short responses weighs more. It is token_mean only when there is one micro-batch on one
  process, so ``LOSS_TYPES`` maps token_mean to ``"dapo"``;
- the entropy bonus is a token mean per micro-batch (and per process), whatever the loss type:
  ``grpo_trainer`` refuses ``entropy_coef > 0`` with more than one micro-batch or process.

Two differences to know (both in ``KNOBS``):

- advantages: both divide the centred group rewards by the group's *unbiased* standard deviation plus ε;
  TRL's ε is 1e-4, minirl's ``compute_deltas`` default 1e-6 (``eps=1e-4`` makes them equal);
- the KL term: TRL 1.16 by default multiplies the k3 estimate by the importance ratio
  (``use_bias_correction_kl=True``); that changes the gradient even when the ratio is 1, so
  ``grpo_config_kwargs`` turns it off to compute minirl's β · k3.

TRL is an optional dependency: ``pip install -e ".[trl]"``. Only ``grpo_trainer`` imports it (and
``text_task_dataset`` imports ``datasets``, which TRL brings).
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import TYPE_CHECKING, Any

import torch
from einops import rearrange

from minirl.algorithms import AlgoConfig, get_algorithm
from minirl.history import History
from minirl.protocols import Rollout

if TYPE_CHECKING:
    from minirl.train import TrainConfig

__all__ = [
    "KNOBS",
    "LOSS_TYPES",
    "TRL_ADVANTAGE_EPS",
    "grpo_config_kwargs",
    "grpo_trainer",
    "knob_table",
    "text_task_dataset",
    "text_task_reward",
    "trl_history",
    "trl_loss_inputs",
]

# TRL's advantage: (r − mean_group r) / (std_group r + 1e-4), std with Bessel's correction (as torch.std).
TRL_ADVANTAGE_EPS = 1e-4

# minirl's aggregation -> TRL's loss_type. token_mean is "dapo", not "bnpo": "dapo" divides every micro-batch by
# the real tokens of the whole generation batch (num_items_in_batch, over all processes), "bnpo" by its own
# micro-batch's (the two agree only with one micro-batch on one process). See the module docstring.
LOSS_TYPES = {"sequence_mean": "grpo", "token_mean": "dapo", "constant": "dr_grpo"}

# (minirl knob, GRPOConfig field, how they correspond)
KNOBS: list[tuple[str, str, str]] = [
    ("clip_eps_low", "epsilon", "ε_low: the ratio is clipped below at 1 − ε_low"),
    ("clip_eps_high", "epsilon_high", "ε_high (clip-higher, DAPO); None = ε_low in both"),
    ("ratio_level", "importance_sampling_level", '"token" or "sequence" (GSPO\'s length-normalised ratio)'),
    (
        "aggregation",
        "loss_type",
        '"sequence_mean" = "grpo"; "token_mean" = "dapo" (÷ the real tokens of the whole '
        'generation batch, on every process; "bnpo" ÷ each micro-batch\'s own: the same only with one micro-batch '
        'on one process); "constant" = "dr_grpo" (its constant is max_completion_length)',
    ),
    (
        "delta_mode",
        "scale_rewards",
        '"normalized_rewards" = "group" (ε 1e-4 in TRL, 1e-6 in minirl); '
        '"centered_rewards" = "none"; "rewards" (no baseline): no counterpart',
    ),
    (
        "kl_coef",
        "beta",
        "β of the k3 KL to π_ref; TRL also needs use_bias_correction_kl=False (its default multiplies k3 by the ratio)",
    ),
    ("inner_epochs", "num_iterations", "gradient steps on each batch of samples"),
    (
        "ref_refresh_every",
        "sync_ref_model, ref_model_sync_steps, ref_model_mixup_alpha=1.0",
        "π_ref ← π_θ every N steps; TRL counts optimizer steps (N × inner_epochs) and by default mixes "
        "(α = 0.6) instead of copying",
    ),
    (
        "entropy_coef",
        "entropy_coef",
        "− c · mean entropy per real token; TRL takes the mean per micro-batch and "
        "per process, so it equals minirl's whole-batch mean only with one micro-batch on one process",
    ),
    (
        "importance_ratio=False",
        "(none)",
        "TRL always has the ratio (with num_iterations = 1 it is 1: the same "
        "gradient); minirl's rungs without it also have no clipping, which grpo_config_kwargs refuses",
    ),
    (
        'advantage_level="token"',
        "(none)",
        "one advantage per position (a process reward): TRL's advantages are one per response",
    ),
    (
        'advantage_level="critic"',
        "(none)",
        "PPO for language models: one advantage per model token from a learned value (GAE, minirl.critic); "
        "GRPOTrainer has no value model",
    ),
    ("gamma", "(none)", "GAE's discount γ (a critic's only)"),
    ("lam", "(none)", "GAE's λ (a critic's only)"),
    ("value_learning_rate", "(none)", "the value head's Adam step size (a critic's only)"),
    ("value_epochs", "(none)", "the value head's Adam steps on each batch (a critic's only)"),
    (
        "accept_reward",
        "(none)",
        'τ of delta_mode "accepted" (expert iteration: imitate the accepted replies); in TRL a separate SFT run '
        "on filtered samples",
    ),
    (
        'objective="dpo"',
        "(none)",
        "online DPO on the group's best and worst reply: TRL's OnlineDPOTrainer (a judge or reward model picks the "
        "pair), not GRPOConfig",
    ),
    ("TrainConfig.group_size", "num_generations", "responses per prompt"),
    ("TrainConfig.prompts_per_step", "generation_batch_size", "TRL counts responses: prompts_per_step × group_size"),
    (
        "TrainConfig.micro_batch_size",
        "per_device_train_batch_size",
        "TRL counts responses: micro_batch_size × "
        "group_size (gradient_accumulation_steps = prompts_per_step / micro_batch_size); with "
        '"grpo", "dapo" and "dr_grpo" the micro-batches add up to the whole batch\'s loss, as minirl\'s',
    ),
    ("TrainConfig.temperature", "temperature", "sampling temperature; log-probs of the loss use it too"),
    (
        "TrainConfig.learning_rate, lr_schedule",
        "learning_rate, lr_scheduler_type",
        'minirl\'s default "cosine" (to 0 at the last step); TRL\'s default is "linear"',
    ),
    ("TrainConfig.max_grad_norm", "max_grad_norm", "gradient norm clipping"),
    ("CausalLMPolicy.max_new_tokens", "max_completion_length", "the response budget"),
    (
        "(none)",
        "delta, top_entropy_quantile, off_policy_mask_threshold, loss_type cispo / sapo / vespo / "
        "luspo, vLLM importance-sampling correction",
        "TRL knobs with no minirl counterpart",
    ),
]


def knob_table() -> str:
    """``KNOBS`` as a Markdown table (README's and notebook 09's)."""

    def names(cell: str) -> str:
        return cell if cell == "(none)" else ", ".join(f"`{name.strip()}`" for name in cell.split(","))

    lines = ["| minirl | TRL `GRPOConfig` | how they correspond |", "| --- | --- | --- |"]
    lines += [f"| {names(mine)} | {names(theirs)} | {how} |" for mine, theirs, how in KNOBS]
    return "\n".join(lines)


def grpo_config_kwargs(algo: str | AlgoConfig, max_length: int) -> dict[str, Any]:
    """The ``GRPOConfig`` fields under which TRL's loss is ``policy_loss`` with ``algo``'s knobs.

    ``max_length`` is the response budget (``max_completion_length``; also the constant of Dr GRPO's
    ``"constant"`` aggregation). Raises ``ValueError`` for knobs TRL has no counterpart for: no
    baseline (``delta_mode="rewards"``), one advantage per position, or no clipping (``clip_eps_low=None``;
    every rung without the importance ratio is one, since ``AlgoConfig`` allows no clip without a ratio).
    The π_ref sync fields are set only with a KL term and a refresh: TRL raises ``ValueError`` on
    ``sync_ref_model=True`` with ``beta=0``.
    """
    algo = get_algorithm(algo)
    if not (isinstance(max_length, int) and max_length > 0):
        raise ValueError(f"max_length must be a positive int (the response budget); got {max_length!r}")
    if algo.delta_mode == "rewards":
        raise ValueError(
            f"{algo.name}: delta_mode 'rewards' (no baseline) has no TRL counterpart "
            "(scale_rewards 'none' still subtracts the group mean)"
        )
    if algo.advantage_level != "sequence":
        raise ValueError(
            f"{algo.name}: advantage_level {algo.advantage_level!r} has no TRL counterpart "
            "(TRL's advantages are one per response)"
        )
    if algo.clip_eps_low is None:  # also every importance_ratio=False: AlgoConfig ties it to no clipping
        raise ValueError(f"{algo.name}: clip_eps_low=None (no clipping) has no TRL counterpart")
    kwargs: dict[str, Any] = {
        "loss_type": LOSS_TYPES[algo.aggregation],
        "epsilon": algo.clip_eps_low,
        "epsilon_high": algo.clip_eps_low if algo.clip_eps_high is None else algo.clip_eps_high,
        "importance_sampling_level": algo.ratio_level,
        "scale_rewards": "group" if algo.delta_mode == "normalized_rewards" else "none",
        "beta": algo.kl_coef,
        "use_bias_correction_kl": False,
        "num_iterations": algo.inner_epochs,
        "entropy_coef": algo.entropy_coef,
        "max_completion_length": max_length,
    }
    if algo.ref_refresh_every is not None and algo.kl_coef > 0:  # without a KL term TRL has no π_ref to sync
        kwargs.update(
            sync_ref_model=True,
            ref_model_sync_steps=algo.ref_refresh_every * algo.inner_epochs,
            ref_model_mixup_alpha=1.0,
        )
    return kwargs


def trl_loss_inputs(
    policy,
    prompts,
    rollout: Rollout,
    advantages: torch.Tensor,
    old_log_probs: torch.Tensor | None = None,
    ref_log_probs: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """A minirl batch as the ``inputs`` of ``GRPOTrainer.compute_loss``: one row per response.

    Args:
        policy: the ``CausalLMPolicy`` whose tokenizer renders the prompts (left-padded, as TRL's).
        prompts: ``batch`` prompts; rollout: their responses ``[batch, trial, pos]`` and mask.
        advantages: ``[batch, trial]``.
        old_log_probs, ref_log_probs: ``[batch, trial, pos]`` or None (π_old = π_θ: ratio 1; no KL term).

    Returns ``prompt_ids``/``prompt_mask`` ``[(batch trial), prompt_pos]``, ``completion_ids``/
    ``completion_mask`` ``[(batch trial), pos]``, ``advantages`` ``[(batch trial)]``, the log-probs
    ``[(batch trial), pos]`` when given, and ``num_items_in_batch`` (the real tokens: DAPO's normaliser).
    """
    batch, trial, _ = rollout.tokens.shape
    if advantages.shape != (batch, trial):
        raise ValueError(f"advantages must have shape [batch, trial] = {[batch, trial]}; got {list(advantages.shape)}")
    prompt_ids, prompt_mask = policy.encode_prompts(prompts)
    if prompt_ids.shape[0] != batch:
        raise ValueError(f"prompts must hold one prompt per rollout row ({batch}); got {prompt_ids.shape[0]}")
    if rollout.mask is None:
        raise ValueError("rollout.mask must be given (TRL's completion_mask); a CausalLMPolicy's rollouts have one")
    rows = "batch trial pos -> (batch trial) pos"
    inputs = {
        "prompt_ids": prompt_ids.repeat_interleave(trial, dim=0),
        "prompt_mask": prompt_mask.repeat_interleave(trial, dim=0),
        "completion_ids": rearrange(rollout.tokens, rows).to(prompt_ids.device),
        "completion_mask": rearrange(rollout.mask, rows).long().to(prompt_ids.device),
        "advantages": rearrange(advantages, "batch trial -> (batch trial)").detach(),
        "num_items_in_batch": rollout.mask.sum().detach(),
    }
    if old_log_probs is not None:
        inputs["old_per_token_logps"] = rearrange(old_log_probs, rows).detach()
    if ref_log_probs is not None:
        inputs["ref_per_token_logps"] = rearrange(ref_log_probs, rows).detach()
    return inputs


def text_task_dataset(task, n: int, seed: int = 0):
    """``n`` training prompts of a text task (``toy_envs.text_tasks``) as a ``datasets.Dataset`` for TRL:
    a ``prompt`` column of chats (TRL applies the chat template) and a ``numbers`` column (the problem,
    which TRL hands to the reward function)."""
    from datasets import Dataset

    prompts = task.sample_prompts(n, torch.Generator().manual_seed(seed))
    return Dataset.from_dict(
        {"prompt": [list(p.messages) for p in prompts], "numbers": [list(p.numbers) for p in prompts]}
    )


def text_task_reward(task):
    """The task's reward as a TRL reward function: ``f(completions, numbers, **kwargs) -> [float]``.

    TRL calls it with the completions (chats ``[{"role": "assistant", "content": ...}]`` for chat
    prompts, strings otherwise) and the dataset's ``numbers`` column; it scores them with
    ``task.rewards``, as minirl's loop does.
    """

    def reward(completions, numbers, **kwargs) -> list[float | None]:  # TRL's RewardFunc type (None: not scored)
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        prompts = [task.prompt(problem) for problem in numbers]
        return [float(r) for r in task.rewards(prompts, [[text] for text in texts])[:, 0]]

    reward.__name__ = f"{type(task).__name__}_reward"
    return reward


def grpo_trainer(
    config: TrainConfig,
    model,
    tokenizer,
    max_new_tokens: int,
    *,
    output_dir: str | None = None,
    bf16: bool = False,
    **overrides: Any,
):
    """A TRL ``GRPOTrainer`` that runs ``config`` (a ``TrainConfig`` of a text task), knob for knob.

    ``model`` is a transformers model or a folder / hub name (a name is required when the algorithm has
    a KL term: TRL then loads π_ref from it); ``tokenizer`` renders the prompts (a ``CausalLMPolicy``'s);
    ``max_new_tokens`` is the response budget. From ``config``: the task (its prompts as a dataset, its
    reward as a reward function), the algorithm's knobs (``grpo_config_kwargs``), the steps, prompts per
    step, group size, micro-batch (TRL's gradient accumulation: with ``grpo_config_kwargs``'s loss types the
    micro-batches add up to the whole batch's loss, as in minirl), learning rate and schedule, gradient
    clipping, temperature and seed. Sampling is plain (no top-k, no top-p), as minirl's. Not carried over:
    the evaluations (run ``minirl.train.evaluate`` on ``trainer.model`` afterwards), ``max_seconds`` and
    ``threads`` (set ``torch.set_num_threads`` yourself). ``overrides`` go to ``GRPOConfig`` last. Under
    ``accelerate launch`` each of the N processes takes ``prompts_per_step`` prompts a step (a batch N times
    larger), and the dataset holds N times the prompts, so that none repeats.

    Raises ``ValueError`` for an entropy bonus (``entropy_coef > 0``) with more than one micro-batch or
    process: TRL takes the entropy's mean per micro-batch and per process, not over the whole batch.
    The trainer also logs ``gen_seconds``, the seconds of each batch's sampling (TRL's ``_generate``:
    tokenising the prompts and ``generate``), which ``trl_history`` reads back.
    """
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from transformers import PrinterCallback

    # trl's documented names; its lazy __init__ has no static __all__, so pyright takes them for private re-exports
    from trl import GRPOConfig, GRPOTrainer  # pyright: ignore[reportPrivateImportUsage]

    algo = config.algo  # an AlgoConfig, with config.inner_epochs already applied (TrainConfig)
    if algo.kl_coef > 0 and not isinstance(model, str | os.PathLike):
        raise ValueError(
            "model must be a folder or hub name when the algorithm has a KL term (kl_coef = "
            f"{algo.kl_coef}): TRL loads the reference model from it; got a {type(model).__name__}"
        )
    micro = config.micro_batch_size or config.prompts_per_step
    if config.prompts_per_step % micro:
        raise ValueError(f"config.micro_batch_size ({micro}) must divide prompts_per_step ({config.prompts_per_step})")
    fields: dict[str, Any] = dict(
        output_dir=output_dir or tempfile.mkdtemp(prefix="minirl_trl_"),
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=not config.progress,
        seed=config.seed,
        bf16=bf16,
        activation_checkpointing=False,
        use_cpu=config.device == "cpu" or not torch.cuda.is_available(),
        num_generations=config.group_size,
        per_device_train_batch_size=micro * config.group_size,
        gradient_accumulation_steps=config.prompts_per_step // micro,
        max_steps=config.steps * algo.inner_epochs,  # TRL counts gradient steps; minirl, batches of samples
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_schedule,
        weight_decay=0.0,
        max_grad_norm=config.max_grad_norm or 0.0,
        temperature=config.temperature,
        top_k=0,
        top_p=1.0,
        **grpo_config_kwargs(algo, max_new_tokens),
    )
    fields.update(overrides)
    args = GRPOConfig(**fields)
    if args.entropy_coef > 0 and (args.gradient_accumulation_steps > 1 or args.world_size > 1):
        raise ValueError(
            f"entropy_coef = {args.entropy_coef} with {args.gradient_accumulation_steps} micro-batches on "
            f"{args.world_size} process(es): TRL takes the entropy bonus's mean per micro-batch and per process, "
            "minirl over the whole batch (the two differ when micro-batches hold different token counts); use "
            "one micro-batch (micro_batch_size=None) on one process, or entropy_coef=0"
        )
    # each of the world_size processes draws prompts_per_step prompts a step: enough prompts that none repeats
    prompts = config.prompts_per_step * config.steps * args.world_size
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[text_task_reward(config.task)],
        args=args,
        processing_class=tokenizer,
        train_dataset=text_task_dataset(config.task, prompts, seed=config.seed),
    )
    trainer.remove_callback(PrinterCallback)  # no dict printed per step (the progress bar stays)
    _time_sampling(trainer)
    return trainer


def _time_sampling(trainer) -> None:
    """Log ``gen_seconds`` (the time of each call of the trainer's ``_generate``: tokenise the prompts and
    sample, once per batch of samples) among TRL's own metrics, which ``GRPOTrainer.log`` averages per log
    line. TRL times it too, but reports that only to wandb, mlflow or trackio."""
    generate = getattr(trainer, "_generate", None)
    if generate is None:  # another TRL version: no sampling time, the rest works
        return

    def timed(*args, **kwargs):
        start = time.perf_counter()
        out = generate(*args, **kwargs)
        trainer._metrics["train" if trainer.model.training else "eval"]["gen_seconds"].append(
            time.perf_counter() - start
        )
        return out

    trainer._generate = timed


# TRL's log keys -> minirl's History metrics (the ones both loops measure alike). Not TRL's
# frac_reward_zero_std: it tests torch.isclose(std, 0) (atol 1e-8), and a float32 group of eight 1.2s
# has a std of 1.3e-7 (0.2s: 1.6e-8), so with the text tasks' rewards it misses most all-equal groups.
# minirl's zero_variance_groups compares the rewards themselves.
TRL_METRICS = {
    "reward": "reward",
    "completions/mean_length": "response_length",
    "entropy": "entropy",
    "kl": "kl",
    "grad_norm": "grad_norm",
    "gen_seconds": "gen_seconds",
}


def trl_history(trainer, label: str = "TRL GRPOTrainer") -> History:
    """The logs of a trained ``GRPOTrainer`` as a minirl ``History``: one record per batch of samples
    (minirl's step, numbered from 1; TRL logs one line per gradient step, and only the first of a batch's
    ``num_iterations`` has the rewards), with reward, response_length, entropy, kl (when β > 0),
    grad_norm (of the batch's first gradient step), wall_time (seconds since training began, summed
    from TRL's ``step_time``, at the batch's last gradient step) and, for a trainer from ``grpo_trainer``,
    gen_seconds (the batch's sampling) and update_seconds (the rest of its steps' ``step_time``: rewards,
    π_old/π_ref scoring and the gradient steps), as minirl's loop logs them."""
    history = History(label=label, seed=trainer.args.seed)
    elapsed = batch_seconds = 0.0
    for log in trainer.state.log_history:
        if "step_time" not in log:  # the summary line at the end of training
            continue
        elapsed += log["step_time"]
        if "reward" in log:  # the first gradient step on a new batch of samples
            batch_seconds = log["step_time"]
            history.log(
                step=len(history) + 1,
                wall_time=elapsed,
                **{mine: log[theirs] for theirs, mine in TRL_METRICS.items() if theirs in log},
            )
        elif history.records:
            batch_seconds += log["step_time"]
            history.records[-1]["wall_time"] = elapsed
        else:
            continue
        record = history.records[-1]
        if "gen_seconds" in record:
            record["update_seconds"] = batch_seconds - record["gen_seconds"]
    return history

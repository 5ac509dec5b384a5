"""minirl's loss is TRL's loss: ``GRPOTrainer``'s own loss computation on a batch built by minirl.

For each variant (grpo, dapo, gspo, dr_grpo; with and without the KL term; an entropy bonus; asymmetric
clipping), a ``GRPOTrainer`` configured by ``grpo_config_kwargs`` computes its loss on a batch that minirl
sampled and scored (``trl_loss_inputs``), and minirl computes ``policy_loss`` on the same batch with the same
weights: losses and gradients agree to 1e-5 of their scale. A ``grpo_trainer`` whose micro-batches are
smaller than the batch takes one optimizer step of TRL's own training loop on that batch (TRL shuffles it,
splits it and accumulates the gradients): again minirl's whole-batch loss and gradient, for every loss type
``grpo_config_kwargs`` picks, and not for TRL's "bnpo". The advantages TRL computes inside its own step equal
``compute_deltas(..., eps=1e-4)``.

Skipped with a reason when TRL is not installed (``pip install -e ".[trl]"``; CI installs it).
"""

import dataclasses
import os

import pytest
import torch

pytestmark = pytest.mark.trl

trl = pytest.importorskip("trl", reason="TRL is an optional extra: pip install -e '.[trl]'")
datasets = pytest.importorskip("datasets", reason="TRL needs datasets: pip install -e '.[trl]'")

from minirl.advantages import compute_deltas  # noqa: E402
from minirl.algorithms import ALGORITHMS, AlgoConfig  # noqa: E402
from minirl.lm import load_policy, make_tiny_lm  # noqa: E402
from minirl.lm.trl_bridge import TRL_ADVANTAGE_EPS, grpo_config_kwargs, trl_loss_inputs  # noqa: E402
from minirl.losses import policy_loss  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

MAX_LENGTH = 8
TEMPERATURE = 0.9
PROMPTS = ["Sort: 3 1 2", "Sort: 9 4 7 1", "Sort: 5 5 0"]
GROUP = 4


def _config(tmp_path, algo: AlgoConfig, **overrides):
    from trl import GRPOConfig

    fields = dict(
        output_dir=str(tmp_path / "trl"),
        report_to="none",
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        per_device_train_batch_size=GROUP * len(PROMPTS),
        num_generations=GROUP,
        temperature=TEMPERATURE,
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
        logging_steps=1,
    )
    fields.update(grpo_config_kwargs(algo, MAX_LENGTH))
    fields.update(overrides)
    return GRPOConfig(**fields)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_lm")
    make_tiny_lm(seed=0, max_new_tokens=MAX_LENGTH).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def batch(model_dir):
    """Responses minirl sampled, π_old and π_ref log-probs near the current ones, random advantages."""
    policy = load_policy(model_dir, max_new_tokens=MAX_LENGTH)
    bias = torch.zeros(len(policy.tokenizer))
    bias[policy.eos_token_id] = 3.0  # an untrained model: make EOS frequent, so responses end at different lengths
    hook = policy.model.lm_head.register_forward_hook(lambda module, inputs, output: output + bias)
    try:
        rollout = policy.sample(PROMPTS, GROUP, temperature=TEMPERATURE, generator=torch.Generator().manual_seed(0))
    finally:
        hook.remove()
    assert rollout.mask.sum(-1).min() < rollout.mask.shape[-1]  # responses of different lengths
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        current = policy.score(PROMPTS, rollout, temperature=TEMPERATURE).log_probs
    old = current + 0.3 * torch.randn(current.shape, generator=g)  # ratios far enough from 1 to clip
    ref = current + 0.2 * torch.randn(current.shape, generator=g)
    advantages = torch.randn(rollout.tokens.shape[:2], generator=g)
    return rollout, old, ref, advantages


def _gradients(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}


def _assert_same_loss_and_gradient(trl_loss: float, trl_grads: dict, loss: float, grads: dict) -> tuple[float, float]:
    """TRL's loss and gradient equal minirl's to 1e-5 of their scale; returns (loss gap, relative gradient gap).

    Both sides compute the same float32 sums in another order (TRL scores each prompt + response row in its
    own padding, minirl shares the prompt's forward pass across the group), so they differ by rounding
    *relative to the values*: the loss by 1e-5 of max(1, |loss|), every gradient entry by 1e-5 of the
    gradient's largest entry (measured on the tiny model: loss gaps up to 1.2e-7, gradient gaps up to 8e-7
    of the largest entry).
    """
    assert set(trl_grads) == set(grads)
    loss_gap = abs(trl_loss - loss)
    assert loss_gap <= 1e-5 * max(1.0, abs(loss)), (trl_loss, loss)
    scale = max(float(g.abs().max()) for g in grads.values())
    gap = max(float((trl_grads[name] - g).abs().max()) for name, g in grads.items())
    assert scale > 0 and gap <= 1e-5 * scale, f"largest gradient gap {gap:.2e}, gradient scale {scale:.2e}"
    return loss_gap, gap / scale


def _variant(preset: str, **changes) -> AlgoConfig:
    """A preset without its entropy bonus and KL term (the GRPO family has both), then ``changes``."""
    return ALGORITHMS[preset].with_(**{"entropy_coef": 0.0, "kl_coef": 0.0, **changes})


KL = 0.05
VARIANTS = {
    "grpo": _variant("grpo"),
    "grpo+kl": _variant("grpo", kl_coef=KL),
    "grpo+kl+entropy": _variant("grpo", kl_coef=KL, entropy_coef=0.3),
    "dapo": _variant("dapo"),
    "dapo+kl": _variant("dapo", kl_coef=KL),
    "gspo": _variant("gspo"),
    "gspo+kl": _variant("gspo", kl_coef=KL),
    "dr_grpo": _variant("dr_grpo"),
    "dr_grpo+kl": _variant("dr_grpo", kl_coef=KL),
    "token_mean": _variant("grpo", aggregation="token_mean"),
    "token_mean+kl": _variant("grpo", aggregation="token_mean", kl_coef=KL),
    "grpo, clip-higher": _variant("grpo", clip_eps_low=0.1, clip_eps_high=0.3),
    "grpo, clip-higher+kl": _variant("grpo", clip_eps_low=0.1, clip_eps_high=0.3, kl_coef=KL),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_trl_loss_and_gradient_equal_policy_loss(name, model_dir, batch, tmp_path):
    from trl import GRPOTrainer

    algo = VARIANTS[name]
    rollout, old, ref, advantages = batch
    trainer = GRPOTrainer(
        model=str(model_dir),
        reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
        args=_config(tmp_path, algo),
        train_dataset=datasets.Dataset.from_dict({"prompt": PROMPTS}),
        processing_class=load_policy(model_dir).tokenizer,
    )
    trainer.model.eval()  # a single optimizer step on the whole batch: no gradient-accumulation division
    policy = load_policy(model_dir, max_new_tokens=MAX_LENGTH)  # the same weights, minirl's copy

    inputs = trl_loss_inputs(policy, PROMPTS, rollout, advantages, old, ref if algo.kl_coef else None)
    trl_loss = trainer.compute_loss(trainer.model, inputs)
    trl_loss.backward()

    scores = policy.score(PROMPTS, rollout, temperature=TEMPERATURE)
    loss, metrics = policy_loss(
        scores.log_probs,
        old,
        advantages,
        rollout.mask,
        **algo.policy_loss_kwargs(),
        ref_log_probs=ref if algo.kl_coef else None,
        max_length=MAX_LENGTH,
    )
    if algo.entropy_coef:
        mask = rollout.mask
        loss = loss - algo.entropy_coef * (scores.entropy * mask).sum() / mask.sum()
    loss.backward()
    assert 0 < metrics["clip_frac_low"] + metrics["clip_frac_high"] < 1  # the clip is active on some tokens

    _assert_same_loss_and_gradient(trl_loss.item(), _gradients(trainer.model), loss.item(), _gradients(policy.model))


def test_trl_advantages_are_compute_deltas_with_its_epsilon(model_dir, tmp_path):
    """TRL's own step: rewards from a reward function, advantages as TRL computes them."""
    from trl import GRPOTrainer

    seen = []

    def reward(completions, **kwargs):
        values = [float(len(c) % 3) + 0.5 * float("1" in c) for c in completions]
        seen.append(values)
        return values

    algo = ALGORITHMS["grpo"].with_(entropy_coef=0.0, kl_coef=0.0)
    trainer = GRPOTrainer(
        model=str(model_dir),
        reward_funcs=[reward],
        args=_config(tmp_path, algo),
        train_dataset=datasets.Dataset.from_dict({"prompt": PROMPTS}),
        processing_class=load_policy(model_dir).tokenizer,
    )
    inputs = trainer._generate_and_score_completions([{"prompt": p} for p in PROMPTS for _ in range(GROUP)])
    rewards = torch.tensor(seen[-1]).reshape(len(PROMPTS), GROUP)
    assert rewards.std(dim=1).min() > 0 or rewards.std(dim=1).max() > 0
    expected = compute_deltas(rewards, "normalized_rewards", eps=TRL_ADVANTAGE_EPS).reshape(-1)
    torch.testing.assert_close(inputs["advantages"], expected, atol=1e-6, rtol=1e-6)


def _one_trl_optimizer_step(trainer, inputs: dict) -> tuple[float, dict[str, torch.Tensor], list[int]]:
    """One optimizer step of TRL's own training loop (``trainer.train()``, ``max_steps=1``) on ``inputs``.

    ``inputs`` stands in for the generation batch that ``_generate_and_score_completions`` would sample and
    score; from there on it is TRL's code: it shuffles the rows, splits them into
    ``gradient_accumulation_steps`` micro-batches, runs ``training_step`` on each and steps the optimizer.
    Returns the sum of the micro-batches' losses (each already scaled for accumulation by TRL), the gradient
    the optimizer steps with, and each micro-batch's real-token count.
    """
    from transformers import TrainerCallback

    losses, tokens, grads = [], [], {}
    trainer._generate_and_score_completions = lambda generation_batch: dict(inputs)
    compute_loss = trainer.compute_loss

    def recorded(model, micro_batch, *args, **kwargs):
        loss = compute_loss(model, micro_batch, *args, **kwargs)
        losses.append(loss.item())
        tokens.append(int(micro_batch["completion_mask"].sum()))
        return loss

    class GradientAtTheStep(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            grads.update(_gradients(trainer.model))

    trainer.compute_loss = recorded
    trainer.add_callback(GradientAtTheStep())
    trainer.train()
    assert trainer.state.global_step == 1
    return sum(losses), grads, tokens


MICRO_VARIANTS = {  # TRL's loss_type "grpo", "grpo", "dapo", "dapo", "dr_grpo"; one optimizer step per batch
    "grpo+kl": _variant("grpo", kl_coef=KL, inner_epochs=1),
    "gspo": _variant("gspo", inner_epochs=1),
    "dapo": _variant("dapo", inner_epochs=1),
    "dapo+kl": _variant("dapo", kl_coef=KL, inner_epochs=1),
    "dr_grpo+kl": _variant("dr_grpo", kl_coef=KL, inner_epochs=1),
}


def _micro_batched_step(name_or_algo, model_dir, batch, tmp_path, **overrides):
    """grpo_trainer with one prompt per micro-batch (3 micro-batches), one TRL optimizer step on ``batch``; and
    minirl's whole-batch loss and gradient on the same batch."""
    from minirl.lm.recipes import RECIPES
    from minirl.lm.trl_bridge import grpo_trainer
    from minirl.train import TrainConfig

    algo = MICRO_VARIANTS[name_or_algo] if isinstance(name_or_algo, str) else name_or_algo
    rollout, old, ref, advantages = batch
    policy = load_policy(model_dir, max_new_tokens=MAX_LENGTH)
    config = TrainConfig(
        task=RECIPES["pretrained"].task(),
        algo=algo,
        steps=1,
        prompts_per_step=len(PROMPTS),
        group_size=GROUP,
        micro_batch_size=1,
        learning_rate=1e-3,
        lr_schedule="constant",
        max_grad_norm=None,
        temperature=TEMPERATURE,
        seed=0,
        progress=False,
    )
    trainer = grpo_trainer(
        config, str(model_dir), policy.tokenizer, MAX_LENGTH, output_dir=str(tmp_path / "trl"), **overrides
    )
    assert trainer.args.gradient_accumulation_steps == len(PROMPTS) == trainer.args.steps_per_generation
    kl_ref = ref if algo.kl_coef else None
    trl_loss, trl_grads, tokens = _one_trl_optimizer_step(
        trainer, trl_loss_inputs(policy, PROMPTS, rollout, advantages, old, kl_ref)
    )
    assert len(tokens) == len(PROMPTS) and sum(tokens) == int(rollout.mask.sum())

    scores = policy.score(PROMPTS, rollout, temperature=TEMPERATURE)
    loss, metrics = policy_loss(
        scores.log_probs,
        old,
        advantages,
        rollout.mask,
        **algo.policy_loss_kwargs(),
        ref_log_probs=kl_ref,
        max_length=MAX_LENGTH,
    )
    loss.backward()
    assert 0 < metrics["clip_frac_low"] + metrics["clip_frac_high"] < 1  # the clip is active on some tokens
    return trl_loss, trl_grads, loss.item(), _gradients(policy.model), tokens


@pytest.mark.parametrize("name", list(MICRO_VARIANTS))
def test_grpo_trainer_micro_batches_add_up_to_the_whole_batch(name, model_dir, batch, tmp_path):
    """TRL's gradient accumulation with grpo_config_kwargs's loss types: minirl's whole-batch loss and gradient."""
    trl_loss, trl_grads, loss, grads, tokens = _micro_batched_step(name, model_dir, batch, tmp_path)
    _assert_same_loss_and_gradient(trl_loss, trl_grads, loss, grads)


def test_trl_bnpo_normalises_each_micro_batch_by_its_own_tokens(model_dir, batch, tmp_path):
    """Why token_mean is "dapo": TRL's "bnpo" under accumulation is not the whole batch's token mean (its
    micro-batches here hold different token counts, and the gap is far above rounding)."""
    trl_loss, trl_grads, loss, grads, tokens = _micro_batched_step("dapo", model_dir, batch, tmp_path, loss_type="bnpo")
    assert len(set(tokens)) > 1, tokens
    scale = max(float(g.abs().max()) for g in grads.values())
    gap = max(float((trl_grads[name] - g).abs().max()) for name, g in grads.items())
    assert gap > 1e-3 * scale and abs(trl_loss - loss) > 1e-4, (gap, scale, trl_loss, loss)


def test_grpo_trainer_refuses_an_entropy_bonus_over_micro_batches(model_dir, tmp_path):
    """TRL's entropy bonus is a token mean per micro-batch: not minirl's whole-batch mean, so refused."""
    from minirl.lm.recipes import RECIPES
    from minirl.lm.trl_bridge import grpo_trainer
    from minirl.train import TrainConfig

    policy = load_policy(model_dir, max_new_tokens=MAX_LENGTH)
    config = TrainConfig(
        task=RECIPES["pretrained"].task(),
        algo=_variant("grpo", entropy_coef=0.3),
        steps=1,
        prompts_per_step=2,
        group_size=2,
        micro_batch_size=1,
        progress=False,
    )
    with pytest.raises(ValueError, match="entropy bonus's mean per micro-batch"):
        grpo_trainer(config, policy.model, policy.tokenizer, MAX_LENGTH, output_dir=str(tmp_path))
    grpo_trainer(
        dataclasses.replace(config, micro_batch_size=None),
        policy.model,
        policy.tokenizer,
        MAX_LENGTH,
        output_dir=str(tmp_path),
    )


def test_grpo_trainer_carries_the_train_config_over(tmp_path, model_dir):
    """grpo_trainer: TrainConfig's knobs land in GRPOConfig; trl_history reads TRL's logs back per step."""
    from minirl.lm.recipes import RECIPES, lm_algorithm
    from minirl.lm.trl_bridge import grpo_trainer, trl_history
    from minirl.train import TrainConfig

    policy = load_policy(model_dir, max_new_tokens=MAX_LENGTH)
    config = TrainConfig(
        task=RECIPES["pretrained"].task(),
        algo=lm_algorithm("dapo", kl_coef=0.0),
        steps=2,
        prompts_per_step=4,
        group_size=3,
        micro_batch_size=2,
        inner_epochs=2,
        learning_rate=2e-4,
        lr_schedule="constant",
        max_grad_norm=None,
        temperature=0.8,
        seed=3,
        progress=False,
    )
    trainer = grpo_trainer(config, policy.model, policy.tokenizer, MAX_LENGTH, output_dir=str(tmp_path))
    a = trainer.args
    assert (a.num_generations, a.per_device_train_batch_size, a.gradient_accumulation_steps) == (3, 6, 2)
    # TRL counts gradient steps: 2 batches of samples x 2 inner epochs
    assert (a.max_steps, a.num_iterations, a.learning_rate, a.lr_scheduler_type.value, a.max_grad_norm) == (
        4,
        2,
        2e-4,
        "constant",
        0.0,
    )
    assert (a.temperature, a.top_k, a.seed, a.loss_type, a.epsilon_high) == (0.8, 0, 3, "dapo", 0.28)
    assert len(trainer.train_dataset) == 8 and set(trainer.train_dataset.column_names) == {"prompt", "numbers"}
    trainer.train()
    history = trl_history(trainer)
    assert list(history.steps) == [1.0, 2.0]
    assert {"reward", "response_length", "entropy", "grad_norm", "gen_seconds", "update_seconds", "wall_time"} <= set(
        history.metrics
    )
    assert all(0 < n <= MAX_LENGTH for n in history["response_length"])
    assert 0 < history["wall_time"][0] < history["wall_time"][1]
    # a step's sampling and the rest of its gradient steps add up to its share of the wall time
    seconds = [history["wall_time"][0], history["wall_time"][1] - history["wall_time"][0]]
    for step in range(2):
        parts = history["gen_seconds"][step] + history["update_seconds"][step]
        assert history["gen_seconds"][step] > 0 and history["update_seconds"][step] > 0
        assert abs(parts - seconds[step]) <= 1e-6 * max(1.0, seconds[step])
    with pytest.raises(ValueError, match="folder or hub name"):
        grpo_trainer(dataclasses.replace(config, algo="grpo"), policy.model, policy.tokenizer, MAX_LENGTH)


@pytest.mark.slow
def test_launch_script_runs_single_process(tmp_path):
    """scripts/trl_grpo.py, the script `accelerate launch` runs on many GPUs, in one process on the tiny model."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "trl_grpo.py"
    result = subprocess.run(
        [
            sys.executable,
            str(script),
            "--model",
            "tiny",
            "--steps",
            "2",
            "--eval-prompts",
            "4",
            "--output-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 steps in" in result.stdout and "held-out greedy accuracy" in result.stdout


@pytest.mark.slow
def test_bench_trl_quick_prints_the_side_by_side_table():
    import contextlib
    import io

    from minirl.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["bench", "--trl", "--quick"]) == 0
    text = out.getvalue()
    for row in (
        "seconds per step",
        "response tokens per second",
        "peak memory",
        "reward, mean of the last",
        "held-out greedy accuracy",
        "TRL / minirl",
        "Summary",
    ):
        assert row in text, f"{row!r} missing from:\n{text}"

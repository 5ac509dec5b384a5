"""Training a causal language model with the one loop: LM-sized knobs and a supervised warm start.

``lm_algorithm`` is a preset of ``ALGORITHMS`` with the knobs a language model needs changed.
``sft_warm_start`` imitates the task's reference answers before RL, with the supervised loss that sits
beside the RL losses (the policy gradient with every advantage 1 and no ratio):

    L_SFT = −(1/N_tok) Σ_{i,t} m_it log π_θ(y*_it | x_i, y*_<t)       (``sft_loss``, token_mean)

Why the LM knobs differ from the toy's:

- ``entropy_coef = 0``: the toy's bonus (0.3) keeps 5 tokens alive; over a 49k-token vocabulary it would
  push probability onto junk tokens and drown the reward.
- ``inner_epochs = 1``: one gradient step per batch of samples, as TRL's default ``num_iterations = 1``;
  the ratio to π_old is then 1 and the clip is inactive, so π_old costs no forward pass. More epochs
  reuse expensive samples, at the price of more backward passes.
- ``kl_coef = 0.02`` to the initial model (``ref_refresh_every = None``): a leash to the pretrained
  model, which also makes the KL curve a measurement of how far RL moved it. The CPU recipe for SmolLM2
  (``RUN_DEFAULTS["pretrained"]``) sets it to 0: the reference model's forward pass would cost a third
  of its step.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from tqdm.auto import tqdm

from minirl.algorithms import AlgoConfig, get_algorithm
from minirl.history import History
from minirl.losses import sft_loss
from minirl.utils import check_positive_ints, torch_threads

__all__ = [
    "LM_CHANGES",
    "RUN_DEFAULTS",
    "lm_algorithm",
    "make_lm_policy",
    "model_kind",
    "recipe_task",
    "sft_warm_start",
]

LM_CHANGES = {"entropy_coef": 0.0, "inner_epochs": 1, "kl_coef": 0.02, "ref_refresh_every": None}


def lm_algorithm(algo: str | AlgoConfig = "grpo", **changes: Any) -> AlgoConfig:
    """The preset ``algo`` with the language-model knobs ``LM_CHANGES`` (then ``changes``) applied."""
    base = get_algorithm(algo)
    return base.with_(name=base.name, **{**LM_CHANGES, **changes})


def sft_warm_start(
    policy,
    task,
    steps: int,
    prompts_per_step: int = 16,
    learning_rate: float = 1e-3,
    seed: int = 0,
    threads: int | None = None,
    progress: bool = True,
) -> History:
    """Supervised fine-tuning of ``policy`` on the task's reference answers (``prompt.target``), in place.

    Each step draws ``prompts_per_step`` training prompts, turns their reference answers into a
    ``Rollout`` (``policy.rollout_from_texts``: answer tokens + EOS, masked) and takes one Adam step on
    ``sft_loss`` (gradient norm clipped to 1). Returns a History with ``loss`` (mean negative
    log-likelihood per demonstrated token, nats) and ``wall_time``.
    """
    check_positive_ints(steps=steps, prompts_per_step=prompts_per_step)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    history = History(label="sft", seed=seed)
    start = time.perf_counter()
    with torch_threads(threads):
        for step in tqdm(range(1, steps + 1), desc="SFT warm start", disable=not progress, leave=False):
            prompts = task.sample_prompts(prompts_per_step, generator)
            demos = policy.rollout_from_texts(prompts, [[p.target] for p in prompts])  # [batch, 1, pos]
            loss = sft_loss(policy.score(prompts, demos, temperature=1.0).log_probs, demos.mask)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            history.log(step=step, loss=loss.item(), wall_time=time.perf_counter() - start)
    return history


# Run sizes for each kind of model, used by ``minirl train --task text_sort``, the benchmark and the
# notebooks. ``sft_steps`` of supervised warm start come first; ``trainable_layers`` (None: all) is
# ``CausalLMPolicy.train_top_layers``; ``kl_coef`` replaces ``LM_CHANGES``'s; ``unseen_answers`` is the task's
# ``n_unseen_answers`` (whole answers held out of training: a second, harder held-out set). What each recipe
# measured is in README, "Measured figures: the language-model stage" (generated from results/).
RUN_DEFAULTS: dict[str, dict[str, Any]] = {
    # The tiny model: a long supervised warm start (it starts from random weights), then GRPO at a gentle
    # learning rate (README, "The tiny model").
    "tiny": dict(
        system=None,
        learning_rate=3e-4,
        steps=150,
        prompts_per_step=16,
        group_size=8,
        max_new_tokens=10,
        sft_steps=1000,
        sft_learning_rate=1.5e-3,
        few_shot=0,
        eval_prompts=200,
        eval_every=25,
        threads=1,
        trainable_layers=None,
        kl_coef=0.02,
        unseen_answers=20,
    ),
    # SmolLM2 on a CPU: one worked example and a short system message (instead of its ~20-token default) keep
    # the prompt short, and the part every prompt shares runs once per batch. What makes a step affordable on 2
    # cores: only the top 10 of the 30 blocks train (the backward pass stops there), no KL term (no reference
    # forward pass), a 10-token budget (a 3-number answer is 8 tokens with its end token) and the shared prompt
    # cache. Training fewer weights also tolerates a larger learning rate (README, "SmolLM2 on 2 CPU cores").
    "pretrained": dict(
        learning_rate=1e-4,
        steps=80,
        prompts_per_step=8,
        group_size=8,
        max_new_tokens=10,
        sft_steps=0,
        sft_learning_rate=1e-5,
        few_shot=1,
        system="You sort numbers.",
        eval_prompts=200,
        eval_every=20,
        threads=None,
        trainable_layers=10,
        kl_coef=0.0,
        unseen_answers=20,
    ),
    # The same on a GPU (bfloat16 autocast): 8 times the samples per step, every weight training, a smaller
    # learning rate and the KL leash (README, "SmolLM2 on a GPU").
    "pretrained-cuda": dict(
        learning_rate=3e-5,
        steps=30,
        prompts_per_step=32,
        group_size=16,
        max_new_tokens=16,
        sft_steps=0,
        sft_learning_rate=1e-5,
        few_shot=1,
        system="You sort numbers.",
        eval_prompts=200,
        eval_every=5,
        threads=None,
        trainable_layers=None,
        kl_coef=0.02,
        unseen_answers=20,
    ),
}


def recipe_task(kind: str = "pretrained", n_numbers: int = 3, max_value: int = 9):
    """The text-sorting task with the prompt of ``RUN_DEFAULTS[kind]`` (its worked examples and system
    message) and its held-out answers: sort ``n_numbers`` numbers from 0 to ``max_value``."""
    from toy_envs.text_tasks import TextSortTask

    if kind not in RUN_DEFAULTS:
        raise ValueError(f"kind must be one of {sorted(RUN_DEFAULTS)}; got {kind!r}")
    run = RUN_DEFAULTS[kind]
    return TextSortTask(
        n_numbers=n_numbers,
        max_value=max_value,
        few_shot=run["few_shot"],
        system=run["system"],
        n_unseen_answers=run["unseen_answers"],
    )


def model_kind(name_or_path: str, device: str | torch.device | None = None) -> str:
    """The key of ``RUN_DEFAULTS``: ``"tiny"`` for the built-in tiny model; for any other model
    ``"pretrained-cuda"`` when it will train on a GPU (``device``, or CUDA available when None), else
    ``"pretrained"``."""
    from minirl.lm.models import default_device

    if name_or_path == "tiny":
        return "tiny"
    return "pretrained-cuda" if default_device(device).type == "cuda" else "pretrained"


def make_lm_policy(
    name_or_path: str,
    seed: int = 0,
    max_new_tokens: int = 16,
    device: str | None = None,
    trainable_layers: int | None = None,
):
    """``"tiny"`` (a fresh ~1M-parameter model, initialised from ``seed``), ``"smollm2-135m"`` (the shipped
    model), a local folder or a hub name (``minirl.lm.load_policy``), with only its top ``trainable_layers``
    blocks trainable (None: all; ``CausalLMPolicy.train_top_layers``)."""
    from minirl.lm.models import load_policy, make_tiny_lm

    if name_or_path == "tiny":
        policy = make_tiny_lm(seed=seed, max_new_tokens=max_new_tokens)
        policy = policy.to(device) if device is not None else policy
    else:
        policy = load_policy(name_or_path, device=device, max_new_tokens=max_new_tokens)
    return policy.train_top_layers(trainable_layers)

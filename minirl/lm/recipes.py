"""How a causal language model is trained with the one loop: the recipe of each kind of model, the LM-sized
knobs and a supervised warm start.

An ``LMRecipe`` holds the settings of one kind of model (``RECIPES``: ``"tiny"``, ``"pretrained"`` = SmolLM2
on a CPU, ``"pretrained-cuda"`` = SmolLM2 on a GPU) and builds a run from them: the task with the recipe's
prompt (``task``), the policy (``policy``), the algorithm (``algorithm``), the warm start (``warm_start``)
and the ``TrainConfig`` (``train_config``). ``recipe_for(model, device)`` picks the recipe, ``with_`` changes
settings (the command line's flags, a notebook's fast mode)::

    recipe = recipe_for("tiny")                       # RECIPES["tiny"]
    task = recipe.task()                              # sort 3 numbers 0-9 with the recipe's prompt
    policy = recipe.policy("tiny", seed=0)
    recipe.warm_start(policy, task, seed=0)
    policy, history = train(recipe.train_config(task, seed=0), policy)

``lm_algorithm`` is a preset of ``ALGORITHMS`` with the knobs a language model needs changed.
``sft_warm_start`` (``minirl.lm.warm_start``) imitates the task's reference answers before RL.

Why the LM knobs differ from the toy's:

- ``entropy_coef = 0``: the toy's bonus (0.3) keeps 5 tokens alive; over a 49k-token vocabulary it would
  push probability onto junk tokens and drown the reward.
- ``inner_epochs = 1``: one gradient step per batch of samples, as TRL's default ``num_iterations = 1``;
  the ratio to π_old is then 1 and the clip is inactive, so π_old costs no forward pass. More epochs
  reuse expensive samples, at the price of more backward passes.
- ``kl_coef = 0.02`` to the initial model (``ref_refresh_every = None``): a leash to the pretrained
  model, which also makes the KL curve a measurement of how far RL moved it. The CPU recipe for SmolLM2
  (``RECIPES["pretrained"]``) sets it to 0: the reference model's forward pass would cost a third
  of its step.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch

from minirl.algorithms import AlgoConfig, get_algorithm
from minirl.history import History
from minirl.lm.models import default_device, load_policy, make_tiny_lm
from minirl.lm.policy import CausalLMPolicy
from minirl.lm.warm_start import SFT_TARGETS, sft_warm_start
from minirl.train import LR_SCHEDULES, TrainConfig
from minirl.utils import check_nonnegative_ints, check_positive_ints
from toy_envs.reasoning import ReasoningTask
from toy_envs.text_tasks import TextAdditionTask, TextSortTask

__all__ = [
    "ANSWER_TOKENS",
    "CALC_TOKENS",
    "LM_CHANGES",
    "REASONING_CHANGES",
    "REASONING_GPU_CHANGES",
    "RECIPES",
    "THINKING_TOKENS",
    "LMRecipe",
    "calculator_recipe",
    "lm_algorithm",
    "model_kind",
    "reasoning_recipe",
    "recipe_for",
    "sft_warm_start",
]

LM_CHANGES = {"entropy_coef": 0.0, "inner_epochs": 1, "kl_coef": 0.02, "ref_refresh_every": None}
_OWN_KNOBS = {"dpo": ("kl_coef", "ref_refresh_every")}
"""Knobs an objective keeps from its preset: online DPO's β (``kl_coef``) and the refresh of its reference define
the objective it solves, not a leash added for language models."""


def lm_algorithm(algo: str | AlgoConfig = "grpo", **changes: Any) -> AlgoConfig:
    """The preset ``algo`` with the language-model knobs ``LM_CHANGES`` (then ``changes``) applied."""
    base = get_algorithm(algo)
    lm = {k: v for k, v in LM_CHANGES.items() if k not in _OWN_KNOBS.get(base.objective, ())}
    return base.with_(name=base.name, **{**lm, **changes})


def _check_algo_knobs(knobs) -> None:
    """``LMRecipe.algo_knobs``: ``(algorithm, knob, value)`` triples, each a preset's knob at a value it takes."""
    for knob in knobs:
        if not (isinstance(knob, tuple) and len(knob) == 3):
            raise ValueError(f"algo_knobs: (algorithm, knob, value) triples; got {knob!r}")
        get_algorithm(knob[0]).with_(**{knob[1]: knob[2]})  # an unknown preset, knob or value names itself


@dataclass(frozen=True)
class LMRecipe:
    """The settings of a language-model run on a text task, and the run they build.

    ``dataclasses.asdict(recipe)`` gives the settings as a dict (the results files keep them so). What each
    recipe measured is in RESULTS.md, "The language-model stage" (generated from results/).

    Attributes:
        learning_rate: Adam's step size for GRPO (the peak of a cosine schedule).
        steps: GRPO steps (one batch of fresh samples each).
        prompts_per_step: prompts per GRPO step, and per warm-start step.
        group_size: responses sampled per prompt.
        max_new_tokens: the response budget (tokens, the end token included).
        sft_steps: supervised warm-start steps before GRPO (0: none).
        sft_learning_rate: Adam's step size for the warm start.
        few_shot: worked examples in each prompt.
        short_system: give each prompt its task's own one-line system message (``TextSortTask.SYSTEM``, ...)
            instead of the tokenizer's default one.
        eval_prompts: held-out prompts per greedy evaluation.
        eval_every: evaluate before the first GRPO step and every this many steps (0: only at the end).
        threads: torch CPU threads for the warm start and GRPO (None: leave torch's setting).
        trainable_layers: train only the top this many transformer blocks (None: every weight;
            ``CausalLMPolicy.train_top_layers``).
        kl_coef: β of the KL penalty to the initial model; replaces ``LM_CHANGES``'s.
        unseen_answers: whole answers held out of training (the task's ``n_unseen_answers``): a second,
            harder held-out set.
        sft_prompts_per_step: demonstrations per warm-start step (None: ``prompts_per_step``).
        lr_schedule: GRPO's learning-rate schedule, ``"cosine"`` (decays to 0 at ``steps``) or ``"constant"``.
        sft_lr_schedule: the warm start's learning-rate schedule, ``"constant"`` or ``"cosine"``.
        temperature: the temperature GRPO samples its groups at (the loss scores the same tempered policy;
            evaluations stay greedy and pass@k samples at 1).
        cpu_bfloat16: on a CPU, run the model under bfloat16 autocast as on CUDA (``CausalLMPolicy``'s knob of
            the name: faster where the CPU has bfloat16 matrix units, other numbers than the float32 records).
        algo_knobs: a probe's changes to the algorithms, ``(algorithm, knob, value)`` triples such as
            ``("grpo", "delta_mode", "centered_rewards")``, applied by ``algorithm`` to that preset only.
        micro_batch_size: prompts per forward/backward pass of a step (``TrainConfig``'s; None: all at once).
        sft_targets: what the warm start imitates (``SFT_TARGETS``, ``sft_warm_start``'s ``targets``): the
            demonstrated tokens, or (``"choices"``) every reply a random demonstrator could have drawn.
    """

    learning_rate: float
    steps: int
    prompts_per_step: int
    group_size: int
    max_new_tokens: int
    sft_steps: int
    sft_learning_rate: float
    few_shot: int
    short_system: bool
    eval_prompts: int
    eval_every: int
    threads: int | None
    trainable_layers: int | None
    kl_coef: float
    unseen_answers: int
    sft_prompts_per_step: int | None = None
    lr_schedule: str = "cosine"
    temperature: float = 1.0
    sft_lr_schedule: str = "constant"
    cpu_bfloat16: bool = False
    algo_knobs: tuple[tuple[str, str, Any], ...] = ()
    micro_batch_size: int | None = None
    sft_targets: str = "draws"

    def __post_init__(self) -> None:
        check_positive_ints(
            steps=self.steps,
            prompts_per_step=self.prompts_per_step,
            group_size=self.group_size,
            max_new_tokens=self.max_new_tokens,
            eval_prompts=self.eval_prompts,
        )
        check_nonnegative_ints(
            sft_steps=self.sft_steps,
            few_shot=self.few_shot,
            eval_every=self.eval_every,
            unseen_answers=self.unseen_answers,
        )
        for name in ("threads", "trainable_layers", "sft_prompts_per_step", "micro_batch_size"):
            if getattr(self, name) is not None:
                check_positive_ints(**{name: getattr(self, name)})
        for name in ("learning_rate", "sft_learning_rate", "temperature"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0; got {getattr(self, name)!r}")
        if not self.kl_coef >= 0:
            raise ValueError(f"kl_coef must be >= 0; got {self.kl_coef!r}")
        for name in ("short_system", "cpu_bfloat16"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False; got {getattr(self, name)!r}")
        choices = {"lr_schedule": LR_SCHEDULES, "sft_lr_schedule": LR_SCHEDULES, "sft_targets": SFT_TARGETS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be {' or '.join(map(repr, allowed))}; got {getattr(self, name)!r}")
        _check_algo_knobs(self.algo_knobs)

    def with_(self, **changes: Any) -> LMRecipe:
        """A copy with some settings changed, e.g. ``RECIPES["tiny"].with_(steps=4, sft_steps=30)``."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown LMRecipe setting(s) {unknown}; known: {sorted(known)}")
        return dataclasses.replace(self, **changes)

    # ---- what a run is built from ---------------------------------------------------------------

    def system(self, task_class: type) -> str | None:
        """The system message of a prompt of ``task_class``: its own short one (``task_class.SYSTEM``) when the
        recipe has ``short_system``, else None (the tokenizer's default)."""
        return task_class.SYSTEM if self.short_system else None

    def _prompt(self, task_class: type) -> dict[str, Any]:
        """The text tasks' arguments that the recipe sets: its prompt and its held-out answers."""
        return dict(few_shot=self.few_shot, system=self.system(task_class), n_unseen_answers=self.unseen_answers)

    def task(self, n_numbers: int = 3, max_value: int = 9) -> TextSortTask:
        """Text sorting of ``n_numbers`` numbers from 0 to ``max_value``, with the recipe's prompt (worked
        examples, system message) and held-out answers."""
        return TextSortTask(n_numbers=n_numbers, max_value=max_value, **self._prompt(TextSortTask))

    def addition_task(self, digits: int = 2) -> TextAdditionTask:
        """Text addition of two ``digits``-digit numbers, with the recipe's prompt and held-out answers."""
        return TextAdditionTask(digits=digits, **self._prompt(TextAdditionTask))

    def reasoning_task(self, family: str = "sum", thinking: bool = True, **knobs: Any) -> ReasoningTask:
        """Arithmetic with or without a scratchpad (``toy_envs.reasoning``) with the recipe's worked examples and
        system message; ``knobs``: any other ``ReasoningTask`` field (``n_numbers``, ``digits``, ``reward``; also
        ``few_shot`` or ``system``, replacing the recipe's)."""
        prompt = {"few_shot": self.few_shot, "system": self.system(ReasoningTask)}
        return ReasoningTask(family=family, thinking=thinking, **{**prompt, **knobs})

    def policy(
        self, name_or_path: str | os.PathLike, seed: int = 0, device: str | torch.device | None = None
    ) -> CausalLMPolicy:
        """The model to train, with the recipe's response budget and only its top ``trainable_layers`` blocks
        trainable: ``"tiny"`` (a fresh tiny Llama, ``make_tiny_lm``, initialised from ``seed``, on the CPU unless
        ``device``), or ``"smollm2-135m"``, a local folder or a hub name (``load_policy``: on ``device``, CUDA
        when available by default); under bfloat16 autocast on a CPU when the recipe has ``cpu_bfloat16``."""
        if name_or_path == "tiny":
            policy = make_tiny_lm(seed=seed, max_new_tokens=self.max_new_tokens)
            policy = policy.to(device) if device is not None else policy
        else:
            policy = load_policy(name_or_path, device=device, max_new_tokens=self.max_new_tokens)
        policy.cpu_bfloat16 = self.cpu_bfloat16
        return policy.train_top_layers(self.trainable_layers)

    def algorithm(self, name: str | AlgoConfig = "grpo", **changes: Any) -> AlgoConfig:
        """The preset ``name`` with the language-model knobs (``lm_algorithm``), the recipe's ``kl_coef`` and
        ``algo_knobs`` for that preset, then ``changes``."""
        base = get_algorithm(name)
        own = _OWN_KNOBS.get(base.objective, ())
        knobs = {k: v for algo, k, v in self.algo_knobs if algo == base.name}
        return lm_algorithm(name, **{**({} if "kl_coef" in own else {"kl_coef": self.kl_coef}), **knobs, **changes})

    def warm_start(self, policy, task, seed: int = 0, progress: bool = True) -> History | None:
        """``sft_steps`` supervised steps on ``task``'s reference answers, ``sft_prompts_per_step`` (or
        ``prompts_per_step``) a step at ``sft_learning_rate`` (``sft_warm_start``), in place; None when the recipe
        has none."""
        if not self.sft_steps:
            return None
        return sft_warm_start(
            policy,
            task,
            self.sft_steps,
            self.sft_prompts_per_step or self.prompts_per_step,
            self.sft_learning_rate,
            seed=seed,
            threads=self.threads,
            progress=progress,
            lr_schedule=self.sft_lr_schedule,
            targets=self.sft_targets,
        )

    def train_config(self, task, *, algo: str | AlgoConfig = "grpo", seed: int = 0, **overrides: Any) -> TrainConfig:
        """The ``TrainConfig`` of GRPO (or ``algo``) on ``task`` with the recipe's steps, batch, learning rate,
        greedy evaluations and threads.

        ``algo``: a preset name, given the recipe's knobs (``algorithm``), or an ``AlgoConfig`` used as it is.
        ``overrides``: any other ``TrainConfig`` field, applied last.
        """
        settings = dict(
            steps=self.steps,
            prompts_per_step=self.prompts_per_step,
            group_size=self.group_size,
            learning_rate=self.learning_rate,
            lr_schedule=self.lr_schedule,
            temperature=self.temperature,
            eval_every=self.eval_every,
            eval_prompts=self.eval_prompts,
            eval_sampled=False,
            threads=self.threads,
            micro_batch_size=self.micro_batch_size,
        )
        algo = self.algorithm(algo) if isinstance(algo, str) else algo
        return TrainConfig(task=task, algo=algo, seed=seed, **{**settings, **overrides})


# One recipe per kind of model, used by ``minirl train --task text_sort``, the benchmarks and the notebooks.
RECIPES: MappingProxyType[str, LMRecipe] = MappingProxyType(
    {
        # The tiny model: a long supervised warm start (it starts from random weights), then GRPO at a gentle
        # learning rate (RESULTS.md, "The tiny model").
        "tiny": LMRecipe(
            learning_rate=3e-4,
            steps=150,
            prompts_per_step=16,
            group_size=8,
            max_new_tokens=10,
            sft_steps=1000,
            sft_learning_rate=1.5e-3,
            few_shot=0,
            short_system=False,
            eval_prompts=200,
            eval_every=25,
            threads=1,
            trainable_layers=None,
            kl_coef=0.02,
            unseen_answers=20,
        ),
        # SmolLM2 on a CPU: one worked example and a short system message (instead of its ~20-token default)
        # keep the prompt short, and the part every prompt shares runs once per batch. What makes a step
        # affordable on 2 cores: only the top 10 of the 30 blocks train (the backward pass stops there), no KL
        # term (no reference forward pass), a 10-token budget (a 3-number answer is 8 tokens with its end token)
        # and the shared prompt cache. Training fewer weights also tolerates a larger learning rate
        # (RESULTS.md, "SmolLM2 on 2 CPU cores").
        "pretrained": LMRecipe(
            learning_rate=1e-4,
            steps=80,
            prompts_per_step=8,
            group_size=8,
            max_new_tokens=10,
            sft_steps=0,
            sft_learning_rate=1e-5,
            few_shot=1,
            short_system=True,
            eval_prompts=200,
            eval_every=20,
            threads=None,
            trainable_layers=10,
            kl_coef=0.0,
            unseen_answers=20,
        ),
        # The same on a GPU (bfloat16 autocast): 8 times the samples per step, every weight training, a smaller
        # learning rate and the KL leash (RESULTS.md, "SmolLM2 on a GPU").
        "pretrained-cuda": LMRecipe(
            learning_rate=3e-5,
            steps=30,
            prompts_per_step=32,
            group_size=16,
            max_new_tokens=16,
            sft_steps=0,
            sft_learning_rate=1e-5,
            few_shot=1,
            short_system=True,
            eval_prompts=200,
            eval_every=5,
            threads=None,
            trainable_layers=None,
            kl_coef=0.02,
            unseen_answers=20,
        ),
    }
)


def model_kind(name_or_path: str | os.PathLike, device: str | torch.device | None = None) -> str:
    """The key of ``RECIPES``: ``"tiny"`` for the built-in tiny model; for any other model
    ``"pretrained-cuda"`` when it will train on a GPU (``device``, or CUDA available when None), else
    ``"pretrained"``."""
    if name_or_path == "tiny":
        return "tiny"
    return "pretrained-cuda" if default_device(device).type == "cuda" else "pretrained"


THINKING_TOKENS = 48
"""The response budget of a reasoning run with a scratchpad (``minirl train --task reasoning`` uses it unless
``--max-new-tokens``): every worked solution of the default families, its end token included, fits in it with
SmolLM2's tokenizer (tests/test_reasoning.py checks it)."""


ANSWER_TOKENS = 8
"""The response budget of an answer-only reasoning run: the number, its end token and a little slack."""

REASONING_CHANGES: dict[str, Any] = {
    "learning_rate": 3e-5,  # a third of the sorting recipe's start, constant (RESULTS.md, "Reasoning": the levers)
    "lr_schedule": "constant",
    "temperature": 1.3,  # GRPO samples its groups hotter (RESULTS.md, "Reasoning": the levers)
    "steps": 40,
    "prompts_per_step": 4,
    "group_size": 8,
    "sft_steps": 20,  # the base model cannot write the scratchpad's form: a warm start on worked solutions first
    "sft_prompts_per_step": 16,
    "sft_learning_rate": 1e-4,
    "eval_prompts": 100,
    "eval_every": 6,
    "unseen_answers": 0,
}
"""The reasoning recipe on a CPU: these changes to ``RECIPES["pretrained"]`` (its prompt, its top 10 trainable
blocks, no KL term). Notebook 10, ``minirl.bench.reasoning_rl`` and ``minirl train --task reasoning`` all build
their runs from ``reasoning_recipe``."""

REASONING_GPU_CHANGES: dict[str, Any] = {
    "prompts_per_step": 16,  # a GPU samples 4 times the batch in a fraction of a CPU step's time
    "kl_coef": 0.02,  # a leash to the warm start (π_ref is the model GRPO starts from); cheap on a GPU
    "eval_every": 5,
}
"""The reasoning recipe on a GPU: the CPU one with these changes. What it keeps matters as much: the top 10 blocks
train and the warm start is the CPU's, since training every weight (the sorting GPU recipe's choice) made the
warm start erratic and GRPO undo it (RESULTS.md, "Reasoning", the GPU records). Not measured yet."""


def reasoning_recipe(kind: str = "pretrained", thinking: bool = True) -> LMRecipe:
    """The recipe of a reasoning run for a model kind (``model_kind``: ``"pretrained"`` on a CPU,
    ``"pretrained-cuda"`` on a GPU, ``"tiny"``): ``RECIPES["pretrained"]`` with ``REASONING_CHANGES`` (and on a GPU
    ``REASONING_GPU_CHANGES`` on top), or the tiny model's own recipe; with the budget of the form,
    ``THINKING_TOKENS`` or ``ANSWER_TOKENS``."""
    if kind not in RECIPES:
        raise ValueError(f"kind must be one of {sorted(RECIPES)}; got {kind!r}")
    if kind == "tiny":
        recipe = RECIPES["tiny"]
    else:
        recipe = RECIPES["pretrained"].with_(**REASONING_CHANGES)
        if kind == "pretrained-cuda":
            recipe = recipe.with_(**REASONING_GPU_CHANGES)
    return recipe.with_(max_new_tokens=THINKING_TOKENS if thinking else ANSWER_TOKENS)


MAZE_TOKENS = 6
"""The reply budget of a maze turn: a move word and its end token (one or two tokens with SmolLM2's tokenizer, up to
six characters with the tiny model's) and nothing more: a reply cut by it is not a move."""

MAZE_CHANGES: dict[str, dict[str, Any]] = {
    "tiny": {
        "max_new_tokens": MAZE_TOKENS,
        "sft_steps": 300,  # from random weights: the format of a move and its end token first
        "sft_prompts_per_step": 8,
        "sft_targets": "choices",  # every permitted move at each visited cell, not the walker's one draw
        "steps": 100,
        "prompts_per_step": 8,
        "group_size": 8,
        "eval_prompts": 10,
        "eval_every": 10,
        "unseen_answers": 0,
    },
    "pretrained": {
        "max_new_tokens": MAZE_TOKENS,
        "sft_steps": 80,  # 20 teach the format but leave walkers far from the uniform one (RESULTS.md, Agents)
        "sft_prompts_per_step": 8,  # each demonstration is a whole walk of up to 6 turns
        "sft_learning_rate": 1e-4,  # the reasoning warm start's rate
        "sft_lr_schedule": "cosine",  # the last steps average the walks' noise out instead of following the last few
        "sft_targets": "choices",  # the walker's distribution at each visited cell, not its draw (RESULTS.md, Agents)
        "learning_rate": 3e-5,
        "lr_schedule": "constant",
        "steps": 30,
        "prompts_per_step": 8,
        "group_size": 8,
        "micro_batch_size": 1,  # scored group by group: a whole step in one pass outgrows a laptop (RESULTS.md, Agents)
        "eval_prompts": 10,  # every start cell
        "eval_every": 5,
        "unseen_answers": 0,
    },
}
"""The maze recipe's changes to each model kind's recipe (``maze_recipe``): SmolLM2's are made to
``RECIPES["pretrained"]`` (its top 10 trainable blocks, no KL term) on a CPU and on a GPU alike, so that a GPU run
measures the CPU recipe in a fraction of its time (the lesson of the reasoning recipe: training every weight made a
warm start erratic). First settings: ``minirl.bench.agents`` measures what they reach."""


def maze_recipe(kind: str = "pretrained") -> LMRecipe:
    """The recipe of a walk through the text maze (``toy_envs.maze_text.TextMazeTask``) for a model kind
    (``model_kind``): the tiny model's recipe with ``MAZE_CHANGES["tiny"]``; for SmolLM2 on a CPU or a GPU,
    ``RECIPES["pretrained"]`` with ``MAZE_CHANGES["pretrained"]``."""
    if kind not in RECIPES:
        raise ValueError(f"kind must be one of {sorted(RECIPES)}; got {kind!r}")
    if kind == "tiny":
        return RECIPES["tiny"].with_(**MAZE_CHANGES["tiny"])
    return RECIPES["pretrained"].with_(**MAZE_CHANGES["pretrained"])


def recipe_for(name_or_path: str | os.PathLike, device: str | torch.device | None = None) -> LMRecipe:
    """The recipe of a model (``"tiny"``, ``"smollm2-135m"``, a folder, a hub name) on ``device``:
    ``RECIPES[model_kind(name_or_path, device)]``."""
    return RECIPES[model_kind(name_or_path, device)]


CALC_TOKENS = 20
"""The reply budget of a calculator turn (``toy_envs.calculator``): a call such as ``<calc>99*99</calc>`` (11 tokens
with SmolLM2's tokenizer, 18 characters with the tiny model's) or a number, and the end token."""


def calculator_recipe(kind: str = "pretrained") -> LMRecipe:
    """The recipe of the calculator task for a model kind: the maze's (``maze_recipe``: a warm start on a
    demonstrator's episodes, then RL on whole episodes) with a call's budget, every evaluation problem (20 hard,
    20 easy) and the demonstrator's replies as targets (it does not draw among equal choices); ``minirl train
    --task calculator`` runs them. Measured on 2 CPU cores and a GPU: RESULTS.md, "A calculator"."""
    return maze_recipe(kind).with_(max_new_tokens=CALC_TOKENS, eval_prompts=40, sft_targets="draws")

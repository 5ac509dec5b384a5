"""GRPO on the text-sorting task with TRL's GRPOTrainer: one process here, many GPUs with accelerate.

The same task, reward and knobs as ``minirl train --task text_sort`` (a minirl ``TrainConfig``, which
``minirl.lm.trl_bridge.grpo_trainer`` turns into a ``GRPOTrainer``), trained by TRL instead of minirl's loop.
Then the held-out greedy accuracy, measured by minirl's ``evaluate`` on the trained model.

One process (what CI runs, on the tiny model)::

    python scripts/trl_grpo.py --model tiny --steps 2

Several GPUs (one process per GPU; each takes --prompts-per-step prompts a step, so the batch grows
with the number of processes; with the loss types ``grpo_config_kwargs`` picks, the averaged gradient is
that of minirl's loss on the whole batch of every process) and a model from the hub::

    accelerate launch --config_file scripts/accelerate_multi_gpu.yaml scripts/trl_grpo.py \\
        --model HuggingFaceTB/SmolLM2-135M-Instruct --steps 100 --bf16

``--model``: ``tiny`` (built here, untrained: it only shows the mechanics), ``smollm2-135m`` (the shipped
GGUF file, converted once to a float copy) or any local folder or hub name.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def model_folder(name: str, out: Path) -> str:
    """A folder (or hub name) that GRPOTrainer can load: with a KL term TRL loads π_ref from it too."""
    from minirl.lm import SMOLLM2_ALIAS, make_tiny_lm, smollm2_folder

    if name == "tiny":
        folder = out / "tiny_model"
        make_tiny_lm(seed=0).save_pretrained(folder)
        return str(folder)
    if name == SMOLLM2_ALIAS:
        return str(smollm2_folder(out / "smollm2_model"))  # the float copy: the cache's, or one saved here
    return name


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="tiny")
    p.add_argument("--algo", default="grpo", help="a minirl preset TRL can express (grpo, dapo, gspo, dr_grpo)")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--prompts-per-step", type=int, default=4)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=10)
    p.add_argument("--learning-rate", type=float, default=1e-5)
    p.add_argument("--kl-coef", type=float, default=0.0)
    p.add_argument("--eval-prompts", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast (GPUs)")
    p.add_argument("--output-dir", default=None, help="checkpoints and logs (default: a temporary folder)")
    args = p.parse_args(argv)

    from transformers import AutoTokenizer

    from minirl.lm import RECIPES, CausalLMPolicy
    from minirl.lm.trl_bridge import grpo_trainer, trl_history
    from minirl.train import evaluate

    out = Path(args.output_dir or tempfile.mkdtemp(prefix="trl_grpo_"))
    recipe = RECIPES["pretrained"]  # its prompt (one worked example, a short system message) and its LM knobs
    config = recipe.train_config(
        recipe.task(),
        algo=recipe.algorithm(args.algo, kl_coef=args.kl_coef, entropy_coef=0.0),
        seed=args.seed,
        steps=args.steps,
        prompts_per_step=args.prompts_per_step,
        group_size=args.group_size,
        learning_rate=args.learning_rate,
        lr_schedule="cosine",
        max_grad_norm=1.0,
        eval_prompts=args.eval_prompts,
        progress=True,
    )
    folder = model_folder(args.model, out)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    trainer = grpo_trainer(config, folder, tokenizer, args.max_new_tokens, output_dir=str(out / "trl"), bf16=args.bf16)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    if trainer.accelerator.is_main_process:
        policy = CausalLMPolicy(trainer.model.eval(), tokenizer, max_new_tokens=args.max_new_tokens)
        accuracy = evaluate(policy, config.task, args.eval_prompts, sampled=False)["greedy_exact"]
        rewards = trl_history(trainer)["reward"]
        print(
            f"TRL GRPOTrainer, {args.model}, {args.algo}: {args.steps} steps in {seconds:.1f} s "
            f"({seconds / args.steps:.2f} s/step); reward {rewards[0]:.3f} -> {rewards[-1]:.3f}; "
            f"held-out greedy accuracy {accuracy:.1%} on {args.eval_prompts} prompts"
        )


if __name__ == "__main__":
    main()

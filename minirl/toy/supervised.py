"""The supervised baseline: the same tiny model trained to imitate the sorted answer.

    L_SFT = −Σ_j log π(sort(x)_j | x)          cross-entropy on each response position

Same model, optimiser and number of updates as an RL run (``minirl.train``), and evaluated on the same
prompts with the loop's ``evaluate``, so its final accuracy is the "supervised ceiling" RL is compared with.
(This module builds on ``minirl.train``; ``minirl.toy``'s ``__init__`` leaves it out, since ``minirl.train``
itself imports the toy model to build its default policy.)
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from minirl.evaluate import evaluate, evaluation_generator
from minirl.history import History
from minirl.protocols import ToyTask
from minirl.toy.model import TinyEncoderDecoder, make_model
from minirl.utils import check_positive_ints, torch_threads

__all__ = ["train_supervised"]


# PLR0913: the knobs are the API by design, those of train's TrainConfig (steps, batch, learning rate, width,
# seed, evaluation) so the supervised baseline runs as RL does; callers name the few they change.
def train_supervised(  # noqa: PLR0913
    task: ToyTask,
    steps: int,
    batch_size: int,
    learning_rate: float = 0.003,
    embedding_dim: int = 32,
    seed: int = 0,
    demonstrations: Callable[[torch.Tensor], torch.Tensor] | None = None,
    progress: bool = False,
    *,
    eval_every: int = 0,
    eval_prompts: int = 1000,
    label: str = "supervised",
) -> tuple[TinyEncoderDecoder, History]:
    """Supervised fine-tuning: cross-entropy on the sorted answer, L = −Σ_j log π(sort(x)_j | x).

    ``demonstrations`` (optional) is a function ``(prompts) -> responses[batch, pos]`` giving the
    target to imitate (default: the correct sorted prompt). Same model, optimiser and number of
    updates as RL, so its final accuracy is the "supervised ceiling" RL is compared with.

    The model is evaluated (``evaluate``, on the same evaluation prompts as ``train`` with this seed) at
    the end, and with ``eval_every`` > 0 also before the first step and every ``eval_every`` steps.
    """
    check_positive_ints(steps=steps, batch_size=batch_size, eval_prompts=eval_prompts)
    if eval_every < 0:
        raise ValueError(f"eval_every must be >= 0 (0 = only at the end); got {eval_every}")
    generator = torch.Generator().manual_seed(seed)
    model = make_model(task, embedding_dim, seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    history = History(label=label, seed=seed)
    start = time.perf_counter()

    def run_eval(step: int) -> None:
        held_out = evaluation_generator(seed)  # the prompts train() evaluates on
        history.log_eval(
            step=step, wall_time=time.perf_counter() - start, **evaluate(model, task, eval_prompts, held_out)
        )

    with torch_threads(1):  # a tiny model: more threads only synchronise (``torch_threads``)
        if eval_every:
            run_eval(0)
        for step in tqdm(range(1, steps + 1), desc=f"supervised seed {seed}", disable=not progress, leave=False):
            prompts = task.sample_prompts(batch_size, generator)
            targets = task.sorted_responses(prompts) if demonstrations is None else demonstrations(prompts)
            logits = model(prompts)  # [batch, pos, vocab]
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            history.log(step=step, loss=loss.item(), wall_time=time.perf_counter() - start)
            if (eval_every and step % eval_every == 0) or step == steps:
                run_eval(step)
    return model, history

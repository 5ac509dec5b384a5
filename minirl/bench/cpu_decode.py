"""How fast a CPU generates: ``nn.Linear``'s ``x @ Wᵀ`` against the weight-first ``(W @ xᵀ)ᵀ`` (minirl.lm.cpu_decode).

    python -m minirl.bench.cpu_decode --save        # results/cpu_decode.json, RESULTS.md "Language models on a CPU"

Two measurements on this machine, at torch's thread count:

1. **Products** (no model needed): one token of SmolLM2-135M's decoding is, per block, the attention's four
   projections and the MLP's three matrices, then the output layer [vocab, hidden]. For each row count (the
   batch being generated), the time of that whole set of products in each form, in ms per token, with fresh
   weights per block so that they come from memory as they do in the model.
2. **Generation** (the shipped SmolLM2 file): greedy replies to held-out 4-number sums, the reasoning recipe's
   prompt and token budget, for a few batch sizes, with ``CausalLMPolicy``'s weight-first products and with plain
   ``nn.Linear`` (``CausalLMPolicy(weight_first_decode=False)``), in seconds per call (the faster of two) and tokens
   generated; and whether the two give the same replies.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch

from minirl.lm.cpu_decode import FEW_ROWS
from minirl.results import Record

__all__ = ["SMOLLM2_SHAPES", "generation_seconds", "main", "product_ms"]

HIDDEN, KV, FF, VOCAB, BLOCKS = 576, 192, 1536, 49152, 30
ATTENTION = [(HIDDEN, HIDDEN), (KV, HIDDEN), (KV, HIDDEN), (HIDDEN, HIDDEN)]
SMOLLM2_SHAPES = [*ATTENTION, (FF, HIDDEN), (FF, HIDDEN), (HIDDEN, FF)]
"""The [out, in] weight matrices of one SmolLM2-135M block: q, k, v, o projections, then gate, up and down."""


def product_ms(rows: int, form: str, repeats: int = 3, seed: int = 0) -> float:
    """Milliseconds per token of one decoding step's products (``BLOCKS`` blocks of ``SMOLLM2_SHAPES``, then the
    output layer) for ``rows`` rows, in ``form`` ``"x @ W.T"`` (nn.Linear) or ``"(W @ x.T).T"``; the mean over
    ``repeats`` after one warm-up pass."""
    if form not in ("x @ W.T", "(W @ x.T).T"):
        raise ValueError(f"form must be 'x @ W.T' or '(W @ x.T).T'; got {form!r}")
    gen = torch.Generator().manual_seed(seed)
    weights = [[torch.randn(*s, generator=gen) for s in SMOLLM2_SHAPES] for _ in range(BLOCKS)]
    weights.append([torch.randn(VOCAB, HIDDEN, generator=gen)])
    inputs = {n: torch.randn(rows, n, generator=gen) for n in (HIDDEN, FF)}

    def step() -> None:
        for block in weights:
            for w in block:
                x = inputs[w.shape[1]]
                _ = x @ w.T if form == "x @ W.T" else torch.mm(w, x.T).T.contiguous()

    step()
    start = time.perf_counter()
    for _ in range(repeats):
        step()
    return (time.perf_counter() - start) / repeats * 1e3


def generation_seconds(batches: list[int]) -> dict[str, Any]:
    """Greedy generation with the shipped SmolLM2 on held-out 4-number sums, both forms, for each batch size."""
    from minirl.lm import model_kind
    from minirl.lm.models import SMOLLM2_ALIAS
    from minirl.lm.recipes import reasoning_recipe

    recipe = reasoning_recipe(model_kind(SMOLLM2_ALIAS, "cpu"))
    policy = recipe.policy(SMOLLM2_ALIAS, device="cpu")
    task = recipe.reasoning_task("sum", thinking=True, n_numbers=4)
    out: dict[str, Any] = {}
    for batch in batches:
        prompts = task.eval_prompts(batch)
        row: dict[str, Any] = {}
        replies = {}
        for form, weight_first in (("x @ W.T", False), ("(W @ x.T).T", True)):
            policy.weight_first_decode = weight_first
            policy.greedy(prompts[:1])  # warm-up
            times = []
            for _ in range(2):  # the faster of two calls: a busy moment slows one, not both
                start = time.perf_counter()
                rollout = policy.greedy(prompts)
                times.append(time.perf_counter() - start)
            row[form] = round(min(times), 3)
            row["new_tokens"] = int(rollout.tokens.shape[-1])
            replies[form] = rollout.answers
        row["same_replies"] = replies["x @ W.T"] == replies["(W @ x.T).T"]
        out[str(batch)] = row
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="CPU decoding: nn.Linear's product against the weight-first one.")
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--no-model", action="store_true", help="only the products (no SmolLM2 file needed)")
    parser.add_argument("--save", nargs="?", const="cpu_decode", default=None, help="save results/<name>.json")
    args = parser.parse_args(argv)
    if any(r < 1 for r in args.rows + args.batches):
        parser.error("--rows and --batches must be positive ints")
    record = Record(args.save) if args.save else None
    products = {}
    print(
        f"ms per token of SmolLM2-135M's decoding products ({torch.get_num_threads()} threads); weight-first up to "
        f"{FEW_ROWS} rows in CausalLMPolicy"
    )
    print(f"{'rows':>5} | {'x @ W.T':>8} | {'(W @ x.T).T':>11}")
    for rows in args.rows:
        products[str(rows)] = {form: round(product_ms(rows, form), 2) for form in ("x @ W.T", "(W @ x.T).T")}
        print(f"{rows:5d} | {products[str(rows)]['x @ W.T']:8.1f} | {products[str(rows)]['(W @ x.T).T']:11.1f}")
    figures: dict[str, Any] = {"products_ms_per_token": products, "few_rows": FEW_ROWS}
    if not args.no_model:
        generation = generation_seconds(args.batches)
        print("greedy generation, held-out 4-number sums (s per call):")
        for batch, row in generation.items():
            print(
                f"  batch {batch:>3}: x @ W.T {row['x @ W.T']:.2f} s, (W @ x.T).T {row['(W @ x.T).T']:.2f} s, "
                f"{row['new_tokens']} new tokens, same replies: {row['same_replies']}"
            )
        figures["generation_seconds"] = generation
    if record is not None:
        record.figures.update(figures)
        record.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

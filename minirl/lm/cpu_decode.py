"""Generating on a CPU: each new token is a few rows times every weight matrix, so write that product the fast way.

While a language model generates, each new token sends the batch's hidden states, a few rows ``x [rows, d_in]``,
through every weight matrix ``W [d_out, d_in]`` of the model. ``nn.Linear`` computes ``x @ Wᵀ``. Both forms below
give the same numbers up to float32 rounding (the same dot products, summed in another order):

    y = x @ Wᵀ          (nn.Linear: a matrix product with few rows on the left)
    y = (W @ xᵀ)ᵀ       (FewRowsLinear: the weight on the left, few columns on the right)

but a BLAS library need not run them at the same speed. On the machine the course's CPU records come from
(MKL on an AMD EPYC), the first runs up to twice as slow as the second for 2 to 16 rows, and about as fast from
a few dozen rows on (RESULTS.md, "Language models on a CPU", measured by
``python -m minirl.bench.cpu_decode``). Generation is where those products happen: training and scoring
multiply every position of every reply at once (thousands of rows), so they keep ``nn.Linear``.

``few_row_products(model)`` swaps the form inside a ``with`` block (``CausalLMPolicy`` wraps its ``generate``
with it on a CPU); nothing else changes (parameters, state dict, the module tree).

A second lever is the number format. Some CPUs multiply bfloat16 matrices in hardware (Intel's AMX tiles), several
times faster than float32; ``cpu_has_bfloat16_units()`` says whether this one does, and
``CausalLMPolicy(cpu_bfloat16=True)`` then runs the model under bfloat16 autocast, as on CUDA. Unlike the
weight-first form it changes the numbers (8 bits of mantissa in every product), so it is a knob, off by default.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

__all__ = ["FEW_ROWS", "FewRowsLinear", "cpu_has_bfloat16_units", "few_row_products"]

FEW_ROWS = 16
"""Products with 2 to this many rows take the weight-first form (``FewRowsLinear``); one row is a matrix-vector
product, which BLAS already runs at memory speed."""


class FewRowsLinear(nn.Linear):
    """``nn.Linear`` that computes ``y = (W @ xᵀ)ᵀ + b`` when ``x`` has 2 to ``FEW_ROWS`` rows (all leading axes
    together), lives on a CPU, and no gradient is wanted; else ``nn.Linear``'s ``x @ Wᵀ + b``."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        rows = input.numel() // max(input.shape[-1], 1)
        if not 2 <= rows <= FEW_ROWS or input.device.type != "cpu" or torch.is_grad_enabled() or input.dim() < 2:
            return super().forward(input)
        flat = input.reshape(rows, input.shape[-1])  # [rows, d_in]
        out = torch.mm(self.weight, flat.T).T.contiguous()  # [d_out, d_in] @ [d_in, rows] -> [rows, d_out]
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*input.shape[:-1], out.shape[-1])


@contextlib.contextmanager
def few_row_products(model: nn.Module) -> Iterator[nn.Module]:
    """Inside the block, every plain ``nn.Linear`` of ``model`` is a ``FewRowsLinear`` (the same object and
    parameters, another forward); afterwards each is an ``nn.Linear`` again, even when the block raised."""
    linears = [m for m in model.modules() if type(m) is nn.Linear]
    for m in linears:
        m.__class__ = FewRowsLinear
    try:
        yield model
    finally:
        for m in linears:
            m.__class__ = nn.Linear


def cpu_has_bfloat16_units() -> bool:
    """True when this CPU multiplies bfloat16 tiles in hardware (AMX), where ``CausalLMPolicy(cpu_bfloat16=True)``
    pays; False elsewhere, or when this build of torch cannot tell (the probe is a private ``torch.cpu`` one)."""
    probe = getattr(torch.cpu, "_is_amx_tile_supported", None)
    try:
        return bool(probe()) if probe is not None else False
    except RuntimeError:
        return False

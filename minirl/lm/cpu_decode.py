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
times faster than float32; ``cpu_has_bfloat16_units()`` says whether this one does. ``CausalLMPolicy(cpu_bfloat16=
True)`` then generates with a ``Bfloat16Copy`` of the model and runs the loss's passes under bfloat16 autocast, as
on CUDA. Unlike the weight-first form it changes the numbers (8 bits of mantissa), so it is a knob, off by default.

Why a copy for generating, not autocast alone: autocast casts each float32 weight to bfloat16 again at every
generated token (only the products run in bfloat16; the residual stream, norms and attention stay float32, twice
the bytes). The copy stores its weights in bfloat16 once and runs everything in bfloat16, in ``nn.Linear``'s form
(the weight-first form is not used on it); ``python -m minirl.bench.agents --cpu-bf16`` times the maze's rollout
with it (RESULTS.md, "Language models on a CPU: bfloat16 where the CPU has matrix units").

A third lever is attention's: SmolLM2's query heads share key/value heads three to one, and transformers copies
each key/value head to its query heads before attention whenever a mask is given (a multi-turn rollout always gives
one). ``grouped_kv_attention()`` lets PyTorch's CPU kernel read them shared instead (``CausalLMPolicy`` generates
under it on a CPU).

Two more levers change no model at all. transformers' KV cache appends each new token's keys and values with
``torch.cat``, which copies the whole cache, every layer, at every generated token; ``grow_in_place(cache)`` makes
it write them into room kept free at the end instead (the same numbers). And ``torch.multinomial`` draws one
exponential random number per vocabulary entry, serially on a CPU (49152 per row for SmolLM2), where
``inverse_cdf_sampling()`` draws one uniform number per row and finds its token in the cumulative probabilities:
the same distribution, another random stream. ``CausalLMPolicy`` uses both while it generates on a CPU.
"""

from __future__ import annotations

import contextlib
import copy
import os
import platform
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from transformers.cache_utils import DynamicLayer

__all__ = [
    "FEW_ROWS",
    "Bfloat16Copy",
    "FewRowsLinear",
    "cpu_bfloat16_arithmetic",
    "cpu_has_bfloat16_units",
    "warn_if_bfloat16_is_emulated",
    "few_row_products",
    "GrowInPlaceLayer",
    "cpu_generation",
    "generation_form",
    "grouped_kv_attention",
    "grow_in_place",
    "inverse_cdf_sampling",
]

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


class ContiguousInputLinear(nn.Linear):
    """``nn.Linear`` that makes its input contiguous first. The output head gets a slice of the hidden states (the
    last position of each row); in bfloat16 on a CPU, torch multiplies such a strided ``[rows, 1, d_in]`` input by
    broadcasting the weight to every row (a copy of it per row), about a thousand times slower than the same
    product on a contiguous input (float32 folds the rows and is not affected)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return super().forward(input.contiguous())


class Bfloat16Copy:
    """A copy of a float32 ``model`` with its weights stored in bfloat16, for generating on a CPU without gradients.

    ``refreshed()`` returns the copy after copying (rounded) every weight of ``model`` changed in place since the
    last call: an optimizer step and ``load_state_dict`` both bump a tensor's version counter, so a sample always
    comes from the current weights. Buffers stay float32 (the rotary frequencies: rounded to bfloat16, positions
    in the hundreds would turn by the wrong angle). The copy is not a submodule of anything: no optimizer sees it.

    Its numbers differ from ``model`` under autocast (the pass that scores the tokens) by bfloat16 rounding, so the
    sampler and the learner disagree a little, as a bfloat16 inference engine and its trainer do; the loss uses the
    scored log-probs, never the sampler's. ``tests/test_cpu_decode.py`` bounds the gap on the tiny model.
    """

    def __init__(self, model: nn.Module):
        self.source = model
        # Any: the transformers API (get_output_embeddings, generate), which nn.Module's typing does not know
        self.model: Any = copy.deepcopy(model).requires_grad_(False)
        for weight in self.model.parameters():
            weight.grad = None
            weight.data = weight.data.to(torch.bfloat16)
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        if type(head) is nn.Linear:
            head.__class__ = ContiguousInputLinear
        self._pairs = list(zip(model.parameters(), self.model.parameters()))
        self._versions = [(source._version, source.data_ptr()) for source, _ in self._pairs]

    def refreshed(self) -> Any:
        """The bfloat16 copy, equal (rounded) to ``source``'s weights now, in ``source``'s train/eval mode."""
        with torch.no_grad():
            for i, (source, weight) in enumerate(self._pairs):
                version = (source._version, source.data_ptr())  # changed in place, or moved
                if version != self._versions[i]:
                    weight.copy_(source)
                    self._versions[i] = version
        return self.model.train(self.source.training)


_FORCE_GQA = "TRANSFORMERS_SDPA_FORCE_GQA"


@contextlib.contextmanager
def grouped_kv_attention(on: bool = True) -> Iterator[None]:
    """Inside the block (when ``on``), transformers' SDPA attention gives a grouped-query model's key/value heads to
    ``scaled_dot_product_attention(..., enable_gqa=True)`` even with an attention mask, instead of first copying
    each key/value head to the query heads that share it (``repeat_kv``: SmolLM2 has 3 key/value heads for 9 query
    heads, so every pass with a mask copies its whole KV cache three times over). transformers takes that path only
    without a mask, because CUDA's fast kernels refuse a mask with it; PyTorch's CPU kernel takes both. The same
    attention, summed in another order: the numbers move by rounding. ``CausalLMPolicy`` turns it on while it
    generates on a CPU (``minirl.bench.agents`` times the maze's rollout with it: RESULTS.md, "Agents").
    transformers reads its switch, an environment variable, at every attention call; the block restores it."""
    before = os.environ.get(_FORCE_GQA)
    if on:
        os.environ[_FORCE_GQA] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(_FORCE_GQA, None)
        else:
            os.environ[_FORCE_GQA] = before


class GrowInPlaceLayer(DynamicLayer):
    """One layer of a KV cache, keys and values ``[batch, kv_heads, pos, head_dim]``, kept at the front of a longer
    buffer ``[batch, kv_heads, pos + room, head_dim]``: ``update`` writes the new positions into the free room
    and returns views of the filled front. transformers' ``DynamicLayer`` instead concatenates, copying the whole
    cache at every generated token. When the room runs out, or ``batch_select_indices`` (dropping finished
    episodes) or ``batch_repeat_interleave`` replaced the tensors, ``update`` copies them once into a new buffer
    with ``room`` free positions."""

    room = 64

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, new = self.get_seq_length(), key_states.shape[-2]
        buffers = getattr(self, "_room_buffers", None)
        if buffers is None or not _at_front(self.keys, buffers[0]) or n + new > buffers[0].shape[-2]:
            size = n + new + self.room
            buffers = (_copied_into(self.keys, key_states, n, size), _copied_into(self.values, value_states, n, size))
            self._room_buffers = buffers
        keys, values = buffers
        keys[..., n : n + new, :] = key_states
        values[..., n : n + new, :] = value_states
        self.keys, self.values = keys[..., : n + new, :], values[..., : n + new, :]
        return self.keys, self.values


def _at_front(tensor: torch.Tensor | None, buffer: torch.Tensor) -> bool:
    """Whether ``tensor`` is a view of ``buffer``'s first positions (what ``update`` left there, or ``crop`` cut)."""
    return (
        tensor is not None
        and tensor.data_ptr() == buffer.data_ptr()
        and tensor.shape[:2] == buffer.shape[:2]
        and tensor.shape[-1] == buffer.shape[-1]
        and tensor.stride() == buffer.stride()
    )


def _copied_into(old: torch.Tensor | None, new: torch.Tensor, n: int, size: int) -> torch.Tensor:
    """A buffer ``[batch, kv_heads, size, head_dim]`` shaped like ``new`` with ``old``'s ``n`` positions first."""
    batch, heads, _, dim = new.shape
    buffer = new.new_empty(batch, heads, size, dim)
    if n and old is not None:
        buffer[..., :n, :] = old
    return buffer


def grow_in_place(cache: Any, on: bool = True) -> Any:
    """``cache`` (a transformers ``DynamicCache``, or None) with each plain ``DynamicLayer`` turned into a
    ``GrowInPlaceLayer`` (the same object and tensors, another ``update``); returned for chaining."""
    if on and cache is not None:
        for layer in getattr(cache, "layers", []):
            if type(layer) is DynamicLayer:
                layer.__class__ = GrowInPlaceLayer
    return cache


@contextlib.contextmanager
def inverse_cdf_sampling(on: bool = True) -> Iterator[None]:
    """Inside the block (when ``on``), ``torch.multinomial(probs, 1)`` on a CPU, with rows of probabilities
    ``[rows, vocab]`` and no generator (what transformers' ``generate`` calls to sample), draws by the inverse CDF:
    u ~ U[0, 1) per row, and the token is the first index i with ``cumsum(p)[i] > u · sum(p)``. Token i is drawn
    with probability p_i / Σp, as by ``torch.multinomial``, which instead draws an exponential number per token
    (``argmax p_i / e_i``), one after another: 49152 per row for SmolLM2 (RESULTS.md, "Agents", says what it cost).
    A token of probability 0 is never drawn. Any other call, and input that is not a valid distribution (its error
    included), goes to ``torch.multinomial`` itself. The random numbers come from torch's global generator, which
    ``CausalLMPolicy`` seeds before each ``generate``; the block restores ``torch.multinomial``."""
    original = torch.multinomial

    def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
        plain = num_samples == 1 and generator is None and out is None and input.dim() == 2
        if not (plain and input.device.type == "cpu" and input.is_floating_point() and input.shape[-1] > 0):
            return original(input, num_samples, replacement, generator=generator, out=out)
        cdf = input.double().cumsum(-1)  # [rows, vocab]
        total = cdf[:, -1:]  # [rows, 1]
        if not (torch.isfinite(total).all() and (total > 0).all() and (input >= 0).all()):
            return original(input, num_samples, replacement)  # raises torch's own error
        # u ≤ 1 - 2⁻⁵³ (53 random bits), so u · Σp < Σp in float64 and some cdf[i] exceeds it
        draws = torch.rand(total.shape, dtype=torch.float64) * total  # [rows, 1]
        return torch.searchsorted(cdf, draws, right=True)  # [rows, 1]: the first i with cdf[i] > u · Σp

    if on:
        torch.multinomial = multinomial
    try:
        yield
    finally:
        torch.multinomial = original


@contextlib.contextmanager
def cpu_generation(on: bool = True) -> Iterator[None]:
    """``grouped_kv_attention`` and ``inverse_cdf_sampling`` together (when ``on``): what ``CausalLMPolicy``
    generates under on a CPU."""
    with grouped_kv_attention(on), inverse_cdf_sampling(on):
        yield


def cpu_has_bfloat16_units() -> bool:
    """True when this CPU multiplies bfloat16 tiles in hardware (AMX), where ``CausalLMPolicy(cpu_bfloat16=True)``
    pays; False elsewhere, or when this build of torch cannot tell (``cpu_bfloat16_arithmetic``'s probes)."""
    return cpu_bfloat16_arithmetic() == "matrix units"


def cpu_bfloat16_arithmetic() -> str:
    """How this CPU multiplies bfloat16: ``"matrix units"`` (Intel's AMX tiles, where ``cpu_bfloat16`` pays),
    ``"vector instructions"`` (AVX-512 BF16, as on AMD's Zen 4), ``"none"`` (an x86 CPU with neither, as AMD's
    Zen 3: torch then converts every bfloat16 product in software, and ``cpu_bfloat16`` generates several times
    slower than float32; README's Agents) or ``"unknown"`` (not an x86 CPU, or this build of torch cannot tell:
    its probes are private ``torch.cpu`` ones)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return "unknown"
    probes = [getattr(torch.cpu, name, None) for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")]
    try:
        amx, avx512_bf16 = (None if probe is None else bool(probe()) for probe in probes)
    except RuntimeError:
        return "unknown"
    if amx:
        return "matrix units"
    if avx512_bf16:
        return "vector instructions"
    return "none" if amx is False and avx512_bf16 is False else "unknown"


def warn_if_bfloat16_is_emulated() -> None:
    """Warn (a ``UserWarning``) when this CPU has no bfloat16 arithmetic (``cpu_bfloat16_arithmetic`` says
    ``"none"``): there ``cpu_bfloat16`` still gives bfloat16's numbers, but torch converts every product in software
    and generation runs several times slower than in float32 (README's Agents: ``--rollout-formats``)."""
    if cpu_bfloat16_arithmetic() == "none":
        warnings.warn(
            "cpu_bfloat16=True (--cpu-bf16) on a CPU without bfloat16 arithmetic (neither AMX nor AVX-512 BF16): "
            "torch emulates every bfloat16 product, so generating runs several times slower than in float32 "
            "(README, Agents); leave cpu_bfloat16 off on this machine",
            stacklevel=2,  # the policy's line that makes the copy
        )


def generation_form(device_type: str, cpu_bfloat16: bool, weights: torch.dtype) -> str:
    """How a ``CausalLMPolicy`` on ``device_type`` with these ``weights`` generates (``CausalLMPolicy._generating``
    decides by it; benchmarks keep it in their records): ``"bfloat16 copy"`` (float32 weights on a CPU with
    ``cpu_bfloat16``), ``"bfloat16 autocast"`` (float32 weights on CUDA) or the weights' own format."""
    if weights == torch.float32 and device_type == "cpu" and cpu_bfloat16:
        return "bfloat16 copy"
    if weights == torch.float32 and device_type == "cuda":
        return "bfloat16 autocast"
    return str(weights).removeprefix("torch.")

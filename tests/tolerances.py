"""How close two float32 results must be: the one rule the tests use, in one place.

Two float32 computations of the same quantity that add their terms in a different order (micro-batches
against the whole batch, a cached prompt prefix against one pass, frozen against unfrozen layers, or
simply another CPU's kernels: AVX-512, AVX2 or NEON, MKL or OpenBLAS, 1 or 16 threads) differ by
rounding. Rounding is relative to the size of what is added, not to the result: a gradient entry that
is a near-cancelling sum of large terms is off by as much as the largest entries are. So the tolerance is
absolute, proportional to the scale of the values (by default max |expected|), never a bare ``1e-7``::

    atol = 4 * sqrt(terms) * eps * scale,    eps = 2**-23 ≈ 1.19e-7 (float32)

``terms`` is how many float32 numbers are added (or rounded), along the whole computation, into each
compared value: the products of every dot product and every sum it passes through (for a weight gradient,
the rows the gradient sums over plus the widths of the layers the signal crosses, forward and backward),
counted generously. Each operation rounds by at most eps / 2; the roundings fall with random signs, so the
error of n of them grows like sqrt(n) · eps (Higham & Mary, "A new approach to probabilistic rounding error
analysis", SIAM J. Sci. Comput. 2019), not like the worst case n · eps. The factor 4 turns that typical
size into a bound: measured with other kernels forced (ATEN_CPU_CAPABILITY=default or avx2, MKL_CBWR=
COMPATIBLE or AVX2, OMP_NUM_THREADS=1), every comparison that uses it stayed under 0.11 of the tolerance
(one ulp of a hand-computed 2/3 with terms = 3), and the ones over thousands of terms (the language models'
log-probs and gradients) under 0.05.

What it still catches: the tolerance is 4 sqrt(terms) · 1.2e-7 of the scale, 3.8e-5 of it for terms ≈ 6,000
(the tiny language model's gradients), so a value off by 0.1 % of the scale (a wrong term, a missing factor,
a layer whose gradient is 1 % off) fails by a factor of 25 or more.

Not covered here:
- a result computed by the same code on the same data is compared exactly (``torch.equal``, ``==``):
  it is bit-identical by construction;
- a float32 result checked against a hand-computed value from a few operations without cancellation
  keeps the relative defaults (``pytest.approx``: rel 1e-6 ≈ 8 ulps; ``torch.testing.assert_close``
  for float32: rtol 1.3e-6);
- sampling statistics (a mean within k standard errors), learning outcomes and the drift of rounding along
  a whole training run (tests/test_train_policies.py) have tolerances of their own, stated where used.
"""

from __future__ import annotations

import math

import torch

EPS32 = torch.finfo(torch.float32).eps  # 2**-23: the spacing of float32 numbers just above 1


def f32_atol(scale, terms: int) -> float:
    """4 · sqrt(terms) · eps32 · scale: the absolute tolerance between two float32 computations of values of size
    ``scale`` (a float or a tensor: its largest |entry|), each a sum of about ``terms`` float32 numbers."""
    if terms < 1:
        raise ValueError(f"terms must be >= 1; got {terms}")
    if isinstance(scale, torch.Tensor):
        scale = scale.detach().abs().max().item() if scale.numel() else 0.0
    return 4.0 * math.sqrt(terms) * EPS32 * abs(float(scale))


def assert_close_f32(actual, expected, *, terms: int, scale=None, msg=None) -> None:
    """Assert ``actual`` equals ``expected`` up to float32 rounding in a different summation order.

    ``terms``: float32 numbers added into each value (see the module's docstring); ``scale``: the size of
    the values the rounding is relative to, by default max |expected|; pass it when the values cancel
    (a loss near 0 that averages terms of size 1). Tensors or Python floats.
    """
    if scale is None:
        scale = expected if isinstance(expected, torch.Tensor) else abs(float(expected))
    atol = f32_atol(scale, terms)
    torch.testing.assert_close(actual, expected, rtol=0.0, atol=atol, msg=msg)

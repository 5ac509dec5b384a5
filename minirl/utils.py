"""Small shared helpers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["check_positive_ints", "torch_threads"]


@contextmanager
def torch_threads(n: int | None = 1) -> Iterator[None]:
    """Run torch on ``n`` CPU threads (None: leave the setting as it is), then restore the setting.

    The toy models are tiny: extra threads only add synchronisation (measured 5-10x slower on a busy
    2-core machine), so the toy training loops run on one. A real language model's matrix products do
    gain from every core (``n=None``). It also turns on flushing denormal floats to zero, and leaves it on
    (torch cannot report the previous setting to restore): a collapsed policy's tiny probabilities are
    denormals, which made such runs about 5x slower with identical results.
    """
    previous = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def check_positive_ints(**values: object) -> None:
    """Raise ``ValueError("<name> must be a positive int; got <value>")`` for the first argument that
    is not an int >= 1, e.g. ``check_positive_ints(vocab_size=vocab_size, steps=steps)``."""
    for name, value in values.items():
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int; got {value!r}")

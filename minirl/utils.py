"""Small shared helpers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["one_thread"]


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one CPU thread, then restore the setting.

    The course's models are tiny: extra threads only add synchronisation (measured 5-10x slower
    on a busy 2-core machine), so the training loops run inside this. It also flushes denormal
    floats to zero: a collapsed policy's tiny probabilities are denormals, which made such runs
    about 5x slower with identical results.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_num_threads(previous)

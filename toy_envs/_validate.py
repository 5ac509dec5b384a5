"""The one integer check every environment's arguments go through."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_int", "is_int"]


def is_int(value: Any) -> bool:
    """True for Python and NumPy integers, False for bools (``True`` is not a count)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an ``int`` after checking ``low <= value <= high`` (``high=None``: no upper bound).

    Python and NumPy integers pass; bools do not (``True`` is not a count). A value of another type raises
    ``TypeError``, one out of range ``ValueError``; both name the argument and the range wanted:
    ``"max_steps must be an int >= 1; got 0"``."""
    wanted = f"an int >= {low}" if high is None else f"an int in [{low}, {high}]"
    if not is_int(value):
        raise TypeError(f"{name} must be {wanted}; got {type(value).__name__} {value!r}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be {wanted}; got {value}")
    return int(value)

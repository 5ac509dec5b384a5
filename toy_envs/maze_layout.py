"""The maze's grid: its actions, the default layout, and a layout (one string per row) checked and turned
into grid facts. ``toy_envs.maze`` builds the environment on them; nothing here knows the ``Maze`` class."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ACTION_DELTAS", "ACTION_NAMES", "DEFAULT_LAYOUT", "LAYOUT_CHARS", "N_ACTIONS"]

ACTION_NAMES: tuple[str, ...] = ("right", "left", "up", "down")
"""Action ``a`` is the move ``ACTION_NAMES[a]``."""

N_ACTIONS = len(ACTION_NAMES)

ACTION_DELTAS: tuple[tuple[int, int], ...] = ((0, 1), (0, -1), (-1, 0), (1, 0))
"""``(d_row, d_col)`` of each action; row 0 is the top row, so "up" decreases the row."""

DEFAULT_LAYOUT: tuple[str, ...] = (
    "S..",
    "...",
    "##.",
    "...",
    "##G",
)
"""The worked example (see the module docstring).  Copy it with ``list(DEFAULT_LAYOUT)`` to edit."""

LAYOUT_CHARS = {"#": "wall", "S": "start", "G": "goal", ".": "floor"}

_ACTION_HELP = ", ".join(f"{a} {name}" for a, name in enumerate(ACTION_NAMES))
_ROW_SUM_ATOL = 1e-5  # float32 softmax outputs sum to 1 only up to ~1e-7


# ----------------------------------------------------------------------------------------------
# Layout parsing: list of strings -> grid facts
# ----------------------------------------------------------------------------------------------


def parse_layout(layout: Any) -> tuple[str, ...]:
    """Check a layout (one string per row, characters ``# S G .``) and return it as a tuple."""
    _check_layout_types(layout)
    width = len(layout[0])
    if width == 0:
        raise ValueError("layout rows must not be empty; row 0 is ''")
    for i, row in enumerate(layout):
        if len(row) != width:
            raise ValueError(
                f"layout rows must all have the same length (ragged rows); row 0 has {width} "
                f"characters but row {i} has {len(row)}: {row!r}"
            )
        for j, char in enumerate(row):
            if char not in LAYOUT_CHARS:
                raise ValueError(
                    f"layout row {i}, column {j} has unknown character {char!r}; "
                    "use '#' wall, 'S' start, 'G' goal, '.' floor"
                )
    for char, meaning in (("S", "start"), ("G", "goal")):
        count = sum(row.count(char) for row in layout)
        if count != 1:
            raise ValueError(f"layout must contain exactly one {char!r} ({meaning}); found {count}")
    return tuple(layout)


def _check_layout_types(layout: Any) -> None:
    """A layout is a non-empty sequence of strings (not one multi-line string)."""
    if isinstance(layout, str):
        raise TypeError(
            "layout must be a list of strings, one per row, e.g. ['S.G']; got a single str "
            "(use text.splitlines() to split a multi-line string)"
        )
    if not isinstance(layout, Sequence) or len(layout) == 0:
        raise TypeError(f"layout must be a non-empty list of strings; got {layout!r}")
    for i, row in enumerate(layout):
        if not isinstance(row, str):
            raise TypeError(f"layout row {i} must be a str; got {type(row).__name__} {row!r}")


def next_cell_table(walls: np.ndarray) -> np.ndarray:
    """``[n_cells, 4]`` int64 table: the cell each action leads to (blocked moves stay put).

    ``walls`` is a ``[n_rows, n_cols]`` bool array.  A wall cell has no permitted move.
    """
    n_rows, n_cols = walls.shape
    table = np.empty((n_rows * n_cols, N_ACTIONS), dtype=np.int64)
    for r in range(n_rows):
        for c in range(n_cols):
            cell = r * n_cols + c
            for a, (dr, dc) in enumerate(ACTION_DELTAS):
                nr, nc = r + dr, c + dc
                inside = 0 <= nr < n_rows and 0 <= nc < n_cols
                blocked = walls[r, c] or not inside or walls[nr, nc]
                table[cell, a] = cell if blocked else nr * n_cols + nc
    return table


def read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array

"""What every results block is made of: percentages (``pct``, ``pm``), Markdown tables (``table``), times
(``_seconds``), a record read with its file name (``_load``), and the line under each block saying where its
figures came from (``provenance``), or that they are not measured yet (``missing``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from minirl.results import results_path, summary_line


def pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def pm(s: Mapping[str, float], digits: int = 1) -> str:
    """``96.0% ± 1.2`` (mean ± std over seeds, in percentage points)."""
    return f"{pct(s['mean'], digits)} ± {100 * s['std']:.{digits}f}"


def _load(name: str) -> dict[str, Any] | None:
    """The record ``results/<name>.json``, with the file it was read from as ``file`` (None when missing)."""
    import json

    path = results_path(name)
    return {**json.loads(path.read_text()), "file": path.name} if path.exists() else None


def _where(data: Mapping[str, Any]) -> str:
    """The record's file, and the name its command saved it under when it is kept under another one (a GPU's
    ``minirl bench --lm --save`` beside the CPU's, say)."""
    kept = f"`results/{data['file']}`"
    if Path(data["file"]).stem == data["name"]:
        return kept
    return f"{kept} (the command saved it as `results/{data['name']}.json`; copied here under this name)"


def provenance(data: Mapping[str, Any]) -> str:
    where = f"{summary_line(data)}; figures in {_where(data)}."
    if data.get("stale"):
        return f"*Measured before this version of the code: {data['stale']}. {where}*"
    return f"*Measured: {where}*"


def missing(name: str, command: str) -> str:
    return f"*Not measured yet: `{command}` writes `results/{name}.json`.*"


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _seconds(x: float | None) -> str:
    if x is None:
        return "never"
    return f"{x:.1f} s" if x < 120 else f"{x / 60:.1f} min"

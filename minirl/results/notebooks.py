"""Records and notebooks: in a notebook, ``record`` (note a figure), ``notebook_banner`` (the mode of the outputs
below, and full mode's time) and ``full_mode`` (print figures from the notebook's full-mode record); and running
one for its record: ``run_notebook_full`` (``python -m minirl.results notebook``) and ``run_notebooks_fast``
(``--fast``: store its fast-mode outputs, without what changes every run, ``_without_run_state``)."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from minirl.results.provenance import RECORD_ENV, _command_line, results_path
from minirl.results.records import Record, _jsonable, summary_line
from minirl.utils import REPO_ROOT

# ---- notebooks ----------------------------------------------------------------------------------------------

_NOTEBOOK_FIGURES: dict[str, Any] = {}


def record(**figures: Any) -> None:
    """In a notebook: note figures of this run (e.g. ``record(accuracy_after=0.92)``).

    Under ``python -m minirl.results notebook ...`` (a full-mode run) they are kept in the notebook's results
    file; otherwise they are only remembered in this kernel. Values must be numbers, strings, lists or dicts.
    """
    _NOTEBOOK_FIGURES.update(_jsonable(figures))
    scratch = os.environ.get(RECORD_ENV)
    if scratch:
        Path(scratch).write_text(json.dumps(_NOTEBOOK_FIGURES, indent=1))


def notebook_record_name(notebook: str | Path, device: str = "cpu") -> str:
    """``notebook_08_full_cpu`` for ``solutions/08_*.ipynb`` run in full mode on a CPU."""
    number = Path(notebook).name.split("_", 1)[0]
    return f"notebook_{number}_full_{device}"


def notebook_banner(number: str) -> None:
    """Print, at the top of a notebook, the mode and device of the outputs below, and how long full mode takes
    and where its figures are kept (from its results record, when there is one).

    In the solution notebooks this cell is tagged ``nbval-check-output``: the test suite re-runs it and fails
    when the stored output no longer matches the record (the device is masked, see ``tests/nbval_sanitize.cfg``).
    """
    import torch

    fast = os.environ.get("MINIRL_FAST", "0") == "1"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"The outputs below: {'fast' if fast else 'full'} mode (MINIRL_FAST={'1' if fast else '0'}) on {device}.")
    found = False
    for kind in ("cpu", "cuda"):
        path = results_path(f"notebook_{number}_full_{kind}")
        if path.exists():
            found = True
            data = json.loads(path.read_text())
            print(
                f"Full mode on {_device_words(data)}: {data['duration_s'] / 60:.1f} min end to end "
                f"(results/{path.name})."
            )
    if not found:
        print("Full mode: no stored record yet (python -m minirl.results notebook solutions/<this notebook>).")


def _device_words(data: Mapping[str, Any]) -> str:
    m = data.get("machine", {})
    return m.get("gpu") or f"{m.get('cores')} CPU cores"


def full_mode(number: str, lines: Mapping[str, str], device: str = "cpu") -> None:
    """Print figures of this notebook's full-mode run, from its record ``results/notebook_NN_full_<device>.json``.

    ``lines`` maps a label to a format string over the recorded figures, e.g.
    ``{"hack rate after step 30": "{hack_rate_30:.0%}"}``. The first line says where the figures come from
    (machine, load, commit, date). Returns nothing, so the cell shows only the printed lines (use ``load`` for the
    figures themselves).

    The text of a notebook quotes full-mode figures only through such a cell, tagged ``nbval-check-output`` in
    the solution notebook, so a new record that changes a figure makes the test suite fail until the stored
    output (and the text quoting it) is regenerated.
    """
    path = results_path(f"notebook_{number}_full_{device}")
    if not path.exists():
        print(f"Full mode: no stored record yet (results/{path.name}).")
        return
    data = json.loads(path.read_text())
    figures = data["figures"]
    print(f"Full mode, recorded in results/{path.name} ({summary_line(data)}):")
    for label, fmt in lines.items():
        try:
            text = fmt.format(**figures)
        except KeyError as err:
            raise KeyError(f"results/{path.name} has no figure {err}; it has {sorted(figures)}") from None
        print(f"  {label}: {text}")


def _execute_notebook(path: Path, env: dict[str, str], timeout: int):
    """Run every cell of ``path`` in a fresh ``python3`` kernel with ``env`` added; returns the executed notebook."""
    from nbclient import NotebookClient

    from minirl.course import read_notebook

    nb = read_notebook(path)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(REPO_ROOT)}}
        ).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# tqdm's text bar ends in its timings: "desc:  40%|████      | 4/10 [00:01<00:02,  2.9it/s]", "7it [00:01, 5.1it/s]"
TQDM_LINE = re.compile(r"\[[\d:]+(<[\d:?]+)?,\s*[^\]]*/[^\]]*\]")


def _without_tqdm_lines(text: str) -> str:
    """``text`` (a stderr stream) without tqdm's redrawn bars: the pieces between carriage returns that are
    bars, and the blanks a closed bar (``leave=False``) leaves."""
    kept = []
    for line in text.splitlines(keepends=True):
        end = "\n" if line.endswith("\n") else ""
        pieces = line.rstrip("\n").split("\r")
        if len(pieces) > 1:  # a redrawn line: keep what is not a bar nor the blanks that wipe one
            pieces = [p for p in pieces if p.strip() and not TQDM_LINE.search(p)]
            if pieces:
                kept.append(pieces[-1] + end)
        elif not TQDM_LINE.search(line):
            kept.append(line)
    return "".join(kept)


def _without_run_state(nb):
    """The executed notebook without what changes every run and means nothing to a reader: per-cell execution
    timestamps, the notebook's stored widget state, and progress bars (tqdm's widgets, and its text bars on
    stderr, with their timings)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)
        if cell.get("cell_type") != "code":
            continue
        outputs = []
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind in ("display_data", "update_display_data") and _is_progress_display(output.get("data", {})):
                continue
            if kind == "stream":
                text = output.get("text", "")
                text = "".join(text) if isinstance(text, list) else text
                output["text"] = _without_tqdm_lines(text) if output.get("name") == "stderr" else text
                if not output["text"]:
                    continue
                previous = outputs[-1] if outputs else None
                if (
                    previous is not None
                    and previous.get("output_type") == "stream"
                    and (previous.get("name") == output.get("name"))
                ):  # the kernel splits one printed text into blocks wherever it flushed: keep one block
                    previous["text"] += output["text"]
                    continue
            outputs.append(output)
        cell["outputs"] = outputs
    return nb


def _is_progress_display(data: dict) -> bool:
    """A progress bar's display output: a widget (tqdm in JupyterLab), an empty display, or an HTML ``<progress>``
    bar (transformers' Trainer), which also carries the elapsed time."""
    return not data or WIDGET_VIEW in data or "<progress" in str(data.get("text/html", ""))


FAST_WHERE = "where"
"""The key of ``results/notebooks_fast.json``'s figures that says, for each notebook, where its time was measured
(``measured_where``): one run re-measures only the notebooks it is given, so each row keeps its own provenance."""


def measured_where(rec: Record) -> dict[str, Any]:
    """Where ``rec`` is being measured, in the few fields a row of a merged record needs: ``{commit, dirty, date,
    cpu, gflops}`` (``gflops``: the machine's calibration, ``minirl.results.speed.calibrate``)."""
    data = rec.as_dict()
    return {
        "commit": data["commit"],
        "dirty": bool(data["dirty"]),
        "date": data["date"],
        "cpu": data["machine"].get("cpu"),
        "gflops": data["machine"]["calibration"].get("gflops"),
    }


def run_notebooks_fast(notebooks: list[str | Path], timeout: int = 600) -> Path:
    """Execute notebooks in fast mode (``MINIRL_FAST=1``, as the tests run them), store their outputs in place
    (without timestamps or widget state), and keep how long each took in ``results/notebooks_fast.json``
    (merged with the times already there; ``figures[FAST_WHERE]`` keeps where each was measured, since the
    record's own provenance is this run's alone). Rebuild the learner notebooks afterwards (``python -m
    minirl.course build``)."""
    from minirl.course import normalise_solution, notebook_text

    rec = Record("notebooks_fast", command=_command_line())
    previous = results_path("notebooks_fast")
    if previous.exists():
        rec.figures.update(json.loads(previous.read_text()).get("figures", {}))
    where = rec.figures.setdefault(FAST_WHERE, {})
    for notebook in notebooks:
        path = Path(notebook)
        start = time.perf_counter()
        nb = _execute_notebook(path, {"MINIRL_FAST": "1"}, timeout)
        rec.figures[path.stem] = round(time.perf_counter() - start, 1)
        where[path.stem] = measured_where(rec)
        path.write_text(notebook_text(normalise_solution(_without_run_state(nb))), encoding="utf-8")
        print(f"  {path}: {rec.figures[path.stem]:.0f} s (fast mode), outputs stored", flush=True)
    return rec.save()


def run_notebook_full(notebook: str | Path, timeout: int = 7200) -> Path:
    """Execute a notebook in full mode (``MINIRL_FAST=0``, outputs not stored) and save what its cells
    ``record(...)`` as ``results/notebook_NN_full_<device>.json``, with the end-to-end time."""
    import torch

    path = Path(notebook)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rec = Record(notebook_record_name(path, device), command=_command_line())
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "figures.json"
        _execute_notebook(path, {"MINIRL_FAST": "0", RECORD_ENV: str(scratch)}, timeout)
        rec.figures = json.loads(scratch.read_text()) if scratch.exists() else {}
    rec.figures["notebook"] = path.name
    return rec.save()

"""Every quoted figure is traceable: README's measured figures come from results/, a notebook's from its outputs.

- README: each block between ``<!-- results: NAME -->`` markers is exactly what ``minirl.report`` makes from the
  records in ``results/`` (regenerate with ``python -m minirl.report``); outside the blocks README quotes no
  measured figure (percentages, durations, memory), only targets and facts of the design.
- Notebooks: a figure in a solution notebook's text must be printed in an output above it (its stored outputs are
  fast mode; full-mode figures are printed from the notebook's record by ``minirl.results.full_mode``, in a cell
  whose stored output the test suite compares with the record, tag ``nbval-check-output``).
- Every record in ``results/`` says how it was made.
"""

import json
import re
from pathlib import Path

import pytest

from minirl import report

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))

# a measured-looking figure: a percentage, a duration or a size
FIGURE = re.compile(r"(?<![\w.^/-])\d+(?:\.\d+)?\s?(?:%|s\b|ms\b|min\b|minutes?\b|seconds?\b|GB\b|MB\b|hours?\b)")
# what may stand before a figure that is a target, a bound or a design fact rather than a measurement
NOT_MEASURED_BEFORE = (
    "≥",
    "≤",
    "<",
    ">",
    "~",
    "under ",
    "within ",
    "at most ",
    "at least ",
    "every ",
    "budget of ",
    "than ",
)


def _figures(text: str) -> list[str]:
    out = []
    for match in FIGURE.finditer(text):
        before = text[max(0, match.start() - 12) : match.start()]
        if any(before.rstrip().endswith(word.rstrip()) for word in NOT_MEASURED_BEFORE):
            continue
        out.append(match.group())
    return out


def test_readme_results_blocks_are_what_the_records_give():
    stale = report.stale_blocks(ROOT / "README.md")
    assert not stale, f"README blocks {stale} differ from results/: run `python -m minirl.report`"


# README figures outside the generated blocks that are facts of the design or of a file, not measurements
README_FACTS = {
    "93 MB",  # the size of the shipped GGUF file (a fact of the wheel)
}


def test_readme_quotes_measured_figures_only_inside_generated_blocks():
    text = report.outside_blocks((ROOT / "README.md").read_text())
    stray = [f for f in _figures(text) if f not in README_FACTS]
    assert not stray, (
        f"README quotes figures outside its generated blocks: {stray}. Put them in a results "
        f"block (minirl/report.py) or say it without a number"
    )


def _outputs_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append("".join(out["text"]))
        elif "text/plain" in out.get("data", {}):
            parts.append("".join(out["data"]["text/plain"]))
    return "".join(parts)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_notebook_text_quotes_only_figures_printed_above(path):
    nb = json.loads(path.read_text())
    printed, missing = "", []
    for index, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            printed += _squash(_outputs_text(cell))
        elif cell["cell_type"] == "markdown":
            source = re.sub(r"\*\*Time\*\* ~\d+ min", "", source)  # an exercise's estimated time
            missing += [(index, f) for f in _figures(source) if _squash(f) not in printed]
    assert not missing, (
        f"{path.name}: figures in the text that no output above prints (cell, figure): {missing}. "
        f"Print them (minirl.results.full_mode for full-mode figures) or leave the number out"
    )


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_notebook_says_its_mode_and_full_mode_cells_are_checked(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    banner = [c for c in code[:4] if "notebook_banner(" in "".join(c["source"])]
    assert banner, f"{path.name}: one of the first code cells must call minirl.results.notebook_banner"
    for cell in code:
        source = "".join(cell["source"])
        if "notebook_banner(" in source or "full_mode(" in source:
            assert "nbval-check-output" in cell.get("metadata", {}).get("tags", []), (
                f"{path.name}: a cell printing recorded figures must be tagged nbval-check-output:\n{source}"
            )
            assert _outputs_text(cell).strip(), f"{path.name}: store the output of:\n{source}"


RECORD_KEYS = {"name", "command", "commit", "dirty", "date", "machine", "load", "seeds", "figures", "duration_s"}


@pytest.mark.parametrize("path", sorted((ROOT / "results").glob("*.json")), ids=lambda p: p.stem)
def test_every_record_says_how_it_was_made(path):
    data = json.loads(path.read_text())
    assert RECORD_KEYS <= set(data), f"{path.name} lacks {RECORD_KEYS - set(data)}"
    # kept under the name its command saved it as, or that name and a suffix (results/bench_lm_gpu.json: `minirl
    # bench --lm --save` on a GPU, beside the CPU's bench_lm.json); README's blocks cite the file
    assert path.stem == data["name"] or path.stem.startswith(f"{data['name']}_"), (path.name, data["name"])
    assert re.fullmatch(r"[0-9a-f]{40}", data["commit"] or ""), f"{path.name}: commit {data['commit']!r}"
    assert data["command"] and data["figures"]
    assert not data["dirty"], (
        f"{path.name} was measured with uncommitted changes to {data['dirty']}: commit first, then measure"
    )
    if data["machine"].get("cores") is None:
        assert data.get("stale"), f"{path.name}: a record without its machine must say why (stale)"

"""Every quoted figure is traceable: README's and RESULTS.md's come from results/, a notebook's from its outputs.

- README.md and RESULTS.md (``minirl.report.DOCUMENTS``): each block between ``<!-- results: NAME -->`` markers is
  exactly what ``minirl.report`` makes from the records in ``results/`` (regenerate with ``python -m minirl.report``);
  outside the blocks neither quotes a measured figure (percentages, durations, memory), only targets and facts of
  the design; every block sits in one of them, once; their links to each other's sections resolve; and neither
  cites an issue number.
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


DOCUMENTS = [path.name for path in report.DOCUMENTS]


@pytest.mark.parametrize("name", DOCUMENTS)
def test_results_blocks_are_what_the_records_give(name):
    stale = report.stale_blocks(ROOT / name)
    assert not stale, f"{name} blocks {stale} differ from results/: run `python -m minirl.report`"


def test_report_check_fails_on_a_stale_block_in_either_document(tmp_path, monkeypatch, capsys):
    block = "<!-- results: ladder (generated from results/ by `python -m minirl.report`) -->\n{}<!-- /results -->\n"
    fresh, stale = block.format(report.render("ladder")), block.format("an old table\n")
    readme, results = tmp_path / "README.md", tmp_path / "RESULTS.md"
    monkeypatch.setattr(report, "DOCUMENTS", (readme, results))
    readme.write_text(fresh)
    results.write_text(stale)
    assert report.main(["--check"]) == 1
    assert "RESULTS.md block 'ladder'" in capsys.readouterr().out
    assert report.main([]) == 0 and results.read_text() == fresh
    readme.write_text(stale)
    assert report.main(["--check"]) == 1
    assert "README.md block 'ladder'" in capsys.readouterr().out
    report.main([])
    assert report.main(["--check"]) == 0


def test_every_block_sits_in_one_document_once():
    names = [m["name"] for path in report.DOCUMENTS for m in report.BEGIN.finditer(path.read_text())]
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"blocks in README.md and RESULTS.md more than once: {twice}"
    assert set(names) == set(report.BLOCKS), (
        f"blocks made by minirl.report but in neither document: {sorted(set(report.BLOCKS) - set(names))}; "
        f"in a document but unknown: {sorted(set(names) - set(report.BLOCKS))}"
    )
    assert "headline" in report.BEGIN.findall((ROOT / "README.md").read_text())


def test_readme_keeps_only_the_headline_block():
    """README is for a learner: one summary table; every other measured block lives in RESULTS.md."""
    assert report.BEGIN.findall((ROOT / "README.md").read_text()) == ["headline"]


def test_headline_reads_the_reasoning_benchmark_once_it_is_measured(monkeypatch):
    """Until ``results/bench_reasoning.json`` exists, the reasoning row comes from notebook 10's seed-0 run and the
    exploration runs; then from the benchmark's thinking arm, seed by seed."""
    runs = [{"seed": s, "warm": {"sum4": 0.25 + s / 100}, "thinking": {"sum4": 0.5 + s / 10}} for s in (0, 1, 2)]
    fake = {
        "name": "bench_reasoning",
        "file": "bench_reasoning.json",
        "commit": "a" * 40,
        "date": "2026-12-01",
        "machine": {"cores": 2},
        "figures": {"budgets": {}, "runs": runs},
    }
    load = report.headline._load  # patched where the headline's rows read it
    monkeypatch.setattr(report.headline, "_load", lambda name: fake if name == "bench_reasoning" else load(name))
    row = report.render("headline").splitlines()[6]
    assert "seed 0: 25% → 50%; seed 1: 26% → 60%; seed 2: 27% → 70%" in row
    assert "`results/bench_reasoning.json`, commit aaaaaaa, 2026-12-01" in row


def test_newly_solved_counts_the_problems_no_warm_start_sample_got_right():
    """The line under the pass@k tables: of the problems with 0 right samples before GRPO, those with any after."""
    from minirl.report.reasoning_bench import _newly_solved

    runs = [
        {"seed": 0, "thinking": {"pass": {"before": [0, 3, 0, 0], "after": [5, 9, 0, 1]}}},
        {"seed": 1, "thinking": {"pass": {"before": [2, 2], "after": [0, 4]}}},
        {"seed": 2, "warm": {}},  # a seed without the thinking arm is left out
    ]
    assert _newly_solved(runs).endswith("seed 0: 2 of 3; seed 1: 0 of 0.")
    assert _newly_solved(runs[2:]) == ""


# figures outside the generated blocks that are facts of the design or of a file, not measurements
README_FACTS = {
    "93 MB",  # the size of the shipped GGUF file (a fact of the wheel)
}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_documents_quote_measured_figures_only_inside_generated_blocks(name):
    text = report.outside_blocks((ROOT / name).read_text())
    stray = [f for f in _figures(text) if f not in README_FACTS]
    assert not stray, (
        f"{name} quotes figures outside its generated blocks: {stray}. Put them in a results "
        f"block (minirl/report/) or say it without a number"
    )


def _anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings (code blocks skipped; a repeated one gets -1, -2, ...)."""
    out: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"#{1,6} (.+)", line)
        if fenced or not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in out:
            n += 1
            anchor = f"{slug}-{n}"
        out.add(anchor)
    return out


LINK = re.compile(r"\]\((?P<file>[\w./-]*?)#(?P<anchor>[^)\s]+)\)")


@pytest.mark.parametrize("name", DOCUMENTS)
def test_links_to_sections_resolve(name):
    text = (ROOT / name).read_text()
    broken = []
    for link in LINK.finditer(text):
        target = link["file"] or name
        if target not in DOCUMENTS:
            continue
        if link["anchor"] not in _anchors((ROOT / target).read_text()):
            broken.append(f"{target}#{link['anchor']}")
    assert not broken, f"{name} links to sections that do not exist: {broken}"


def test_anchors_are_githubs():
    text = "# A: `b` (c)\n```\n# not a heading\n```\n## A: b c\n### Language's few-row\n"
    assert _anchors(text) == {"a-b-c", "a-b-c-1", "languages-few-row"}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_documents_cite_no_issue_numbers(name):
    found = re.findall(r"\b(?:issue|pull request|PR)\s*#?\d+", (ROOT / name).read_text(), flags=re.IGNORECASE)
    assert not found, f"{name} cites {found}: say what changed, not where it was tracked"


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


def test_the_seeds_block_renders_a_record_of_the_benchmark_s_own_shape(monkeypatch):
    """``reasoning_seeds`` reads what ``minirl.bench.reasoning_rl`` writes (its recipes are keyed by form, "think"
    and "answer"): rendered from the GPU record, which that benchmark wrote, until the CPU one is measured."""
    from minirl.report import reasoning_bench

    gpu = reasoning_bench._load("bench_reasoning_gpu")
    monkeypatch.setattr(reasoning_bench, "_load", lambda name: gpu if name == "bench_reasoning" else None)
    block = reasoning_bench.reasoning_seeds()
    assert (
        "| + thinking GRPO on 4-number sums | 92% (40 steps) | 96% (40 steps) | 94% (40 steps) | 94% ± 2 (92–96) |"
        in (block)
    )
    assert "seed 0: 10 of 10; seed 1: 13 of 13; seed 2: 12 of 12" in block
    assert "seeds 0, 1, 2, one process a seed, side by side on the same GPU" in block

"""The generator of learner notebooks (minirl.course), and the drift test over the real repository."""

from __future__ import annotations

import ast
import json
import runpy
import sys
import warnings
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from minirl import course
from minirl.course import (
    KERNELSPEC,
    CourseError,
    build,
    make_learner_notebook,
    stale_notebooks,
    strip_solutions,
)

REPO = Path(__file__).resolve().parents[1]

EXERCISE = '''import torch


def compute_deltas(rewards, mode):
    """rewards[batch, trial] -> deltas[batch, trial]"""
    if mode == "rewards":
        return rewards
    ### BEGIN SOLUTION
    ### HINT: subtract rewards.mean(dim=1, keepdim=True)
    centered = rewards - rewards.mean(dim=1, keepdim=True)
    ### END SOLUTION
    if mode == "centered_rewards":
        return centered
    ### BEGIN SOLUTION
    return centered / (rewards.std(dim=1, keepdim=True) + 1e-6)
    ### END SOLUTION'''

TOP_LEVEL = """x = 2
### BEGIN SOLUTION
y = x * 3
### END SOLUTION
print(y)"""


def solution_notebook():
    """A small solution notebook: markdown, an exercise with two regions, a top-level region,
    a solution-only cell, outputs and noisy metadata everywhere."""
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "minirl-venv", "display_name": "my venv", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    md = v4.new_markdown_cell("## Exercise 1\n\n```python\n### BEGIN SOLUTION\n```\nis the marker.")
    exercise = v4.new_code_cell(
        EXERCISE,
        execution_count=3,
        metadata={
            "tags": ["exercise"],
            "collapsed": False,
            "execution": {"iopub.execute_input": "2024-01-01T00:00:00Z"},
        },
    )
    exercise.outputs = [v4.new_output("stream", name="stdout", text="hello\n")]
    top = v4.new_code_cell(TOP_LEVEL, execution_count=4)
    top.outputs = [v4.new_output("execute_result", data={"text/plain": "6"}, execution_count=4)]
    secret = v4.new_code_cell("answer = 42", metadata={"tags": ["solution_only"]})
    check = v4.new_code_cell("%matplotlib inline\nok = check(compute_deltas)", execution_count=5)
    nb.cells = [md, exercise, top, secret, check]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i}"
    return nb


@pytest.fixture()
def learner():
    return make_learner_notebook(solution_notebook(), name="solutions/01_test.ipynb")


# ---- the transformation ---------------------------------------------------------------------------------


def test_indented_region_becomes_a_stub_with_the_hint(learner):
    source = learner.cells[1].source
    assert '    raise NotImplementedError("subtract rewards.mean(dim=1, keepdim=True)")' in source.split("\n")
    assert "centered = rewards - rewards.mean" not in source
    assert "### HINT" not in source and "### BEGIN SOLUTION" not in source and "### END SOLUTION" not in source


def test_two_regions_in_one_cell_and_default_hint(learner):
    lines = learner.cells[1].source.split("\n")
    stubs = [line for line in lines if "raise NotImplementedError" in line]
    assert len(stubs) == 2
    assert stubs[1] == f'    raise NotImplementedError("{course.DEFAULT_HINT}")'
    # the code around the regions is kept, in order
    assert lines[-3:] == ['    if mode == "centered_rewards":', "        return centered", stubs[1]]


def test_top_level_region(learner):
    assert learner.cells[2].source == (
        f'x = 2\n# your code must set: y (used below)\nraise NotImplementedError("{course.DEFAULT_HINT}")\nprint(y)'
    )


def test_stub_names_what_the_code_below_it_uses():
    source = "\n".join(
        [
            "def f(rewards, mode, eps=1e-6):",
            "    scale = 2.0",
            "    ### BEGIN SOLUTION",
            "    ### HINT: centre the rewards",
            "    centered = rewards - rewards.mean()",
            "    scale = centered.std()          # already bound above: not the learner's to bind",
            "    spare = 1                       # never used below",
            "    for step in range(2):           # loop targets count too",
            "        pass",
            "    ### END SOLUTION",
            "    if mode == 'centered':",
            "        return centered * step  # 'spare' only in this comment",
            "    ### BEGIN SOLUTION",
            "    ### HINT: ratio = exp(...)",
            "    ratio = rewards.exp()",
            "    ### END SOLUTION",
            "    ### BEGIN SOLUTION",
            "    ### HINT: ratio.clamp(...) then min",
            "    return ratio.clamp(0, 1) / scale",
            "    ### END SOLUTION",
        ]
    )
    lines = course.strip_solutions(source).split("\n")
    assert lines[2] == "    # your code must set: centered, step (used below)"
    assert lines[3] == '    raise NotImplementedError("centre the rewards")'
    assert lines[6] == "    # your code must set: ratio (used below)"  # a later stub's hint names it
    assert lines[7] == '    raise NotImplementedError("ratio = exp(...)")'
    assert lines[8] == '    raise NotImplementedError("ratio.clamp(...) then min")'
    assert len(lines) == 9


def test_no_comment_when_nothing_below_needs_the_regions_names():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n    ### END SOLUTION"
    assert course.strip_solutions(source) == f'def f(x):\n    raise NotImplementedError("{course.DEFAULT_HINT}")'


def test_every_learner_code_cell_parses(learner):
    for cell in learner.cells:
        if cell.cell_type == "code" and not cell.source.startswith("%"):
            ast.parse(cell.source)
    namespace: dict = {}
    exec(learner.cells[1].source, namespace)
    with pytest.raises(NotImplementedError, match="subtract rewards.mean"):
        namespace["compute_deltas"](None, "centered_rewards")


def test_markdown_unchanged_outputs_cleared_metadata_cleaned(learner):
    solution = solution_notebook()
    assert learner.cells[0] == solution.cells[0]
    for cell in learner.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
            assert "execution" not in cell.metadata and "collapsed" not in cell.metadata
    assert learner.cells[1].metadata == {"tags": ["exercise"]}
    assert [cell.id for cell in learner.cells] == ["c0", "c1", "c2", "c4"]


def test_solution_only_cell_dropped(learner):
    assert all("answer = 42" not in cell.source for cell in learner.cells)
    assert len(learner.cells) == 4


def test_kernelspec_normalised_and_input_untouched(learner):
    assert learner.metadata.kernelspec == KERNELSPEC
    assert learner.metadata.language_info == {"name": "python"}
    assert solution_notebook() == solution_notebook()
    nb = solution_notebook()
    make_learner_notebook(nb)
    assert nb == solution_notebook()  # the solution passed in is not modified


def test_hint_with_quotes_is_a_valid_literal():
    source = (
        "    ### BEGIN SOLUTION\n    ### HINT: use \"keepdim=True\" \\ not 'keepdims'\n    pass\n    ### END SOLUTION"
    )
    stub = strip_solutions(source)
    assert (
        ast.literal_eval(stub.strip().removeprefix("raise NotImplementedError(").removesuffix(")"))
        == "use \"keepdim=True\" \\ not 'keepdims'"
    )


@pytest.mark.parametrize(
    "source, message",
    [
        ("x = 1\n### END SOLUTION", r"line 2: '### END SOLUTION' without a '### BEGIN SOLUTION'"),
        ("### BEGIN SOLUTION\nx = 1", r"line 1: '### BEGIN SOLUTION' is never closed"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n### END SOLUTION", r"line 2: .*inside the region"),
    ],
)
def test_unbalanced_markers_are_clear_errors(source, message):
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("hi"), v4.new_code_cell(source)])
    with pytest.raises(CourseError, match=r"solutions/02_bad.ipynb, cell 1: " + message):
        make_learner_notebook(nb, name="solutions/02_bad.ipynb")


def test_stub_that_does_not_parse_is_an_error_naming_notebook_and_cell():
    source = "x = f(\n    ### BEGIN SOLUTION\n    1, 2\n    ### END SOLUTION\n)"
    nb = v4.new_notebook(cells=[v4.new_code_cell("a = 1"), v4.new_code_cell(source)])
    with pytest.raises(
        CourseError,
        match=r"solutions/03_x.ipynb, cell 1: the learner version of this cell does "
        r"not parse",
    ):
        make_learner_notebook(nb, name="solutions/03_x.ipynb")


def test_magics_do_not_count_as_syntax_errors():
    source = "%matplotlib inline\n!ls\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION"
    learner = make_learner_notebook(v4.new_notebook(cells=[v4.new_code_cell(source)]))
    assert learner.cells[0].source == f'%matplotlib inline\n!ls\nraise NotImplementedError("{course.DEFAULT_HINT}")'


# ---- files: build, stale_notebooks, the command line ------------------------------------------------


def write_solutions(root: Path, names=("01_a.ipynb", "02_b.ipynb")) -> tuple[Path, Path]:
    solutions, notebooks = root / "solutions", root / "notebooks"
    solutions.mkdir()
    for name in names:
        nbformat.write(solution_notebook(), solutions / name)
    return solutions, notebooks


def test_build_writes_learner_notebooks_and_is_byte_identical(tmp_path):
    solutions, notebooks = write_solutions(tmp_path)
    solution_cells = [nbformat.read(p, as_version=4).cells for p in sorted(solutions.glob("*.ipynb"))]
    paths = build(solutions, notebooks)
    assert paths == [notebooks / "01_a.ipynb", notebooks / "02_b.ipynb"]
    first = {p: p.read_bytes() for p in paths}
    learner = nbformat.read(paths[0], as_version=4)
    assert learner.metadata.kernelspec == KERNELSPEC
    nbformat.validate(learner)
    assert json.loads(first[paths[0]])["nbformat"] == 4
    # solutions: kernelspec normalised, cells untouched
    for path, cells in zip(sorted(solutions.glob("*.ipynb")), solution_cells):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata.kernelspec == KERNELSPEC and nb.cells == cells
    # regenerating gives the same bytes and leaves nothing stale
    before = {p: p.stat().st_mtime_ns for p in paths}
    assert build(solutions, notebooks) == paths
    assert {p: p.read_bytes() for p in paths} == first
    assert {p: p.stat().st_mtime_ns for p in paths} == before  # nothing rewritten
    assert stale_notebooks(solutions, notebooks) == []


def test_cells_without_ids_get_deterministic_ids(tmp_path):
    solutions, notebooks = tmp_path / "solutions", tmp_path / "notebooks"
    solutions.mkdir()
    nb = solution_notebook()
    for cell in nb.cells:
        del cell["id"]
    (solutions / "01_a.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    build(solutions, notebooks)
    first = (notebooks / "01_a.ipynb").read_bytes()
    (notebooks / "01_a.ipynb").unlink()
    build(solutions, notebooks)
    assert (notebooks / "01_a.ipynb").read_bytes() == first
    ids = [cell.id for cell in nbformat.read(notebooks / "01_a.ipynb", as_version=4).cells]
    assert ids == ["cell-0", "cell-1", "cell-2", "cell-4"]


def test_stale_notebooks_reports_every_kind_of_drift(tmp_path):
    solutions, notebooks = write_solutions(tmp_path)
    assert stale_notebooks(solutions, notebooks) == [
        solutions / "01_a.ipynb",
        notebooks / "01_a.ipynb",
        solutions / "02_b.ipynb",
        notebooks / "02_b.ipynb",
    ]
    build(solutions, notebooks)
    edited = nbformat.read(notebooks / "01_a.ipynb", as_version=4)
    edited.cells[1].source += "\n# a learner's edit"
    nbformat.write(edited, notebooks / "01_a.ipynb")
    (notebooks / "02_b.ipynb").unlink()
    nbformat.write(v4.new_notebook(), notebooks / "09_orphan.ipynb")
    assert stale_notebooks(solutions, notebooks) == [
        notebooks / "01_a.ipynb",
        notebooks / "02_b.ipynb",
        notebooks / "09_orphan.ipynb",
    ]


def test_cli_check_and_build(tmp_path, capsys):
    solutions, notebooks = write_solutions(tmp_path, names=("01_a.ipynb",))
    args = ["--solutions", str(solutions), "--notebooks", str(notebooks)]
    assert course.main(["check", *args]) == 1
    out = capsys.readouterr().out
    assert "01_a.ipynb: missing" in out
    assert course.main(["build", *args]) == 0
    assert "01_a.ipynb" in capsys.readouterr().out
    assert course.main(["check", *args]) == 0
    assert "up to date" in capsys.readouterr().out


def test_cli_reports_a_bad_solution(tmp_path, capsys):
    solutions, notebooks = write_solutions(tmp_path, names=())
    nbformat.write(v4.new_notebook(cells=[v4.new_code_cell("### BEGIN SOLUTION\nx = 1")]), solutions / "01_a.ipynb")
    assert course.main(["build", "--solutions", str(solutions), "--notebooks", str(notebooks)]) == 2
    assert "01_a.ipynb, cell 0" in capsys.readouterr().err


def test_module_runs_as_a_script(tmp_path, monkeypatch, capsys):
    """`python -m minirl.course check` (run in-process: a subprocess would spend seconds importing torch)."""
    solutions, notebooks = write_solutions(tmp_path, names=("01_a.ipynb",))
    argv = ["python -m minirl.course", "check", "--solutions", str(solutions), "--notebooks", str(notebooks)]
    monkeypatch.setattr(sys, "argv", argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "found in sys.modules" (it is already imported)
        with pytest.raises(SystemExit) as exit_info:
            runpy.run_module("minirl.course", run_name="__main__")
    assert exit_info.value.code == 1 and "missing" in capsys.readouterr().out


# ---- the drift test over the real repository ------------------------------------------------------------


def test_learner_notebooks_are_up_to_date():
    """Every solutions/*.ipynb has its generated notebooks/ twin, byte for byte, and no learner
    notebook lacks a solution. Fix: `python -m minirl.course build`."""
    stale = stale_notebooks(REPO / "solutions", REPO / "notebooks")
    assert stale == [], f"run `python -m minirl.course build`; stale: {[str(p.relative_to(REPO)) for p in stale]}"
    solution_names = {p.name for p in (REPO / "solutions").glob("*.ipynb")}
    learner_names = {p.name for p in (REPO / "notebooks").glob("*.ipynb")}
    assert learner_names == solution_names


def test_learner_notebooks_have_no_solutions_left():
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                assert course.BEGIN not in cell.source and course.END not in cell.source, f"{path.name}, cell {index}"
                assert not cell.outputs, f"{path.name}, cell {index} has outputs"


def test_notebooks_use_the_standard_kernel():
    for path in sorted((REPO / "solutions").glob("*.ipynb")) + sorted((REPO / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata.get("kernelspec", {}).get("name") == "python3", path.name

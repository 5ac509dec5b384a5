"""One source for exercises and solutions: generate learner notebooks from solution notebooks.

``solutions/NN_name.ipynb`` are the completed notebooks, the single source of truth. Inside a
code cell, what the learner writes sits between two marker lines (nbgrader's convention)::

    def compute_deltas(rewards, mode):
        ### BEGIN SOLUTION
        ### HINT: subtract rewards.mean(dim=1, keepdim=True)
        centered = rewards - rewards.mean(dim=1, keepdim=True)
        ...
        ### END SOLUTION

``notebooks/NN_name.ipynb`` are generated: each region becomes a stub that still parses,
``raise NotImplementedError("<hint>")`` at the indentation of ``### BEGIN SOLUTION``, where the hint
comes from an optional ``### HINT: ...`` line right after ``### BEGIN SOLUTION`` (default:
"exercise: replace this line with your code"). In the learner version outputs are cleared,
execution counts reset, cell metadata kept (less execution/collapsed noise and the ``nbval-check-output``
tag: there is no stored output to compare), markdown and raw cells copied unchanged, and a cell tagged
``solution_only`` dropped. Both versions get the
standard ``python3`` kernelspec (the build rewrites the solutions' metadata only, never their cells).

    python -m minirl.course build   # regenerate notebooks/ from solutions/
    python -m minirl.course check   # exit 1 and list what differs from what the build makes

The output is deterministic (nbformat v4, sorted keys), so a regenerated notebook is byte-identical.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import re
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

import nbformat

from minirl.utils import REPO_ROOT

__all__ = [
    "BEGIN",
    "DEFAULT_HINT",
    "END",
    "HINT",
    "KERNELSPEC",
    "SOLUTION_ONLY_TAG",
    "CourseError",
    "build",
    "main",
    "make_learner_notebook",
    "normalise_solution",
    "stale_notebooks",
    "strip_solutions",
]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
HINT = "### HINT:"
DEFAULT_HINT = "exercise: replace this line with your code"
SOLUTION_ONLY_TAG = "solution_only"
CHECK_OUTPUT_TAG = "nbval-check-output"
"""A solution cell whose stored output the test suite compares (nbval): a learner notebook has no stored
outputs, so its copy of the cell loses the tag."""
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
NOISY_CELL_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")


class CourseError(ValueError):
    """A solution notebook that cannot be turned into a learner notebook (the message says where)."""


# ---------------------------------------------------------------------------------------------
# One cell
# ---------------------------------------------------------------------------------------------


def _stub(indent: str, hint: str) -> str:
    """``raise NotImplementedError("hint")`` at the given indentation (a valid Python literal)."""
    return f"{indent}raise NotImplementedError({json.dumps(hint, ensure_ascii=False)})"


def _assigned_names(region: list[str]) -> list[str]:
    """The names a solution region binds (assignments, loop and ``with`` targets), in order of appearance;
    [] when the region does not parse on its own."""
    body = textwrap.dedent("\n".join(line for line in region if line.strip()))
    try:
        tree = ast.parse("def _region():\n" + textwrap.indent(body, "    "))
    except SyntaxError:
        return []
    stores = sorted(
        (node.lineno, node.col_offset, node.id)
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    )
    return list(dict.fromkeys(name for _, _, name in stores))


def _code_part(line: str) -> str:
    """A line without its comment and string literals (roughly: enough to look for names in it)."""
    line = re.sub(r"(\"[^\"]*\"|'[^']*')", "", line)
    return line.split("#", 1)[0]


def _names_needed_below(before: list[str], region: list[str], after: list[str], later_hints: list[str]) -> list[str]:
    """Names the region binds that the learner's code after the stub still uses (or a later stub's hint
    names), and that nothing before the region bound: the learner must bind them, and the stub says so."""
    seen_before = " ".join(_code_part(line) for line in before)
    seen_after = " ".join([*(_code_part(line) for line in after), *later_hints])
    return [
        name
        for name in _assigned_names(region)
        if re.search(rf"\b{name}\b", seen_after) and not re.search(rf"\b{name}\b", seen_before)
    ]


def _solution_regions(lines: list[str], where: str) -> list[tuple[int, int, str]]:
    """The ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` regions of ``lines``: (index of BEGIN, index of END,
    indent), in order. Raises ``CourseError`` (naming ``where`` and the line) for unbalanced or nested markers."""
    begin_line: int | None = None
    regions: list[tuple[int, int, str]] = []
    for number, line in enumerate(lines, start=1):
        marker = line.strip()
        if marker == BEGIN:
            if begin_line is not None:
                raise CourseError(
                    f"{where}: line {number}: {BEGIN!r} inside the region opened on line {begin_line} "
                    f"(close it with {END!r} first)"
                )
            begin_line = number
        elif marker == END:
            if begin_line is None:
                raise CourseError(f"{where}: line {number}: {END!r} without a {BEGIN!r} before it")
            begin = lines[begin_line - 1]
            regions.append((begin_line - 1, number - 1, begin[: len(begin) - len(begin.lstrip())]))
            begin_line = None
    if begin_line is not None:
        raise CourseError(f"{where}: line {begin_line}: {BEGIN!r} is never closed by {END!r}")
    return regions


def strip_solutions(source: str, where: str = "cell") -> str:
    """Replace every ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region of ``source`` by a stub.

    When code that stays in the learner version after a region uses a name the region binds (say
    ``centered``, returned below the stub), or a later region's hint names it, the stub is preceded by a
    comment saying the learner's code must set it: ``# your code must set: centered (used below)``.

    Raises ``CourseError`` (naming ``where`` and the line) for unbalanced or nested markers.
    """
    lines = source.split("\n")
    out: list[str] = []
    regions = _solution_regions(lines, where)
    hidden = {i for start, end, _ in regions for i in range(start, end + 1)}
    kept = [i for i in range(len(lines)) if i not in hidden]
    starts = {start: (end, indent) for start, end, indent in regions}
    for index, line in enumerate(lines):
        if index in starts:
            end, indent = starts[index]
            following = lines[index + 1].strip()
            hint = following[len(HINT) :].strip() if following.startswith(HINT) else ""
            region = [text for text in lines[index + 1 : end] if not text.strip().startswith(HINT)]
            later_hints = [
                lines[start + 1].strip()[len(HINT) :]
                for start, _, _ in regions
                if start > index and lines[start + 1].strip().startswith(HINT)
            ]
            needed = _names_needed_below(
                [lines[i] for i in kept if i < index], region, [lines[i] for i in kept if i > end], later_hints
            )
            if needed:
                out.append(f"{indent}# your code must set: {', '.join(needed)} (used below)")
            out.append(_stub(indent, hint or DEFAULT_HINT))
        elif index not in hidden:
            out.append(line)
    return "\n".join(out)


def _has_region(source: str) -> bool:
    return any(line.strip() in (BEGIN, END) for line in source.split("\n"))


def _as_python(source: str) -> str:
    """The cell as plain Python, with IPython syntax (``%magic``, ``!cmd``) turned into calls."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython comes with ipykernel
        return "\n".join("pass" if line.lstrip()[:1] in ("%", "!") else line for line in source.split("\n"))
    return TransformerManager().transform_cell(source)


def _check_parses(source: str, where: str) -> None:
    try:
        ast.parse(_as_python(source))
    except SyntaxError as exc:
        raise CourseError(
            f"{where}: the learner version of this cell does not parse (line {exc.lineno}: {exc.msg}); "
            f"a {BEGIN!r} region must hold whole statements. Learner version:\n{source}"
        ) from None


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _learner_cell(cell, where: str):
    """The learner version of one cell (a new node; the solution cell is left untouched)."""
    cell = copy.deepcopy(cell)
    for key in NOISY_CELL_METADATA:
        cell.metadata.pop(key, None)
    if cell.cell_type != "code":
        return cell
    cell.outputs = []
    cell.execution_count = None
    tags = _tags(cell)
    if CHECK_OUTPUT_TAG in tags:
        tags.remove(CHECK_OUTPUT_TAG)
        if tags:
            cell.metadata["tags"] = tags
        else:
            cell.metadata.pop("tags")
    if _has_region(cell.source):
        cell.source = strip_solutions(cell.source, where)
        _check_parses(cell.source, where)
    return cell


# ---------------------------------------------------------------------------------------------
# One notebook
# ---------------------------------------------------------------------------------------------


def _ensure_cell_ids(nb) -> None:
    """Give cells without an id a deterministic one (nbformat would invent random ones)."""
    if (nb.nbformat, nb.nbformat_minor) < (4, 5):
        return
    used = {cell.get("id") for cell in nb.cells}
    for index, cell in enumerate(nb.cells):
        if not cell.get("id"):
            candidate, n = f"cell-{index}", 0
            while candidate in used:
                n += 1
                candidate = f"cell-{index}-{n}"
            cell["id"] = candidate
            used.add(candidate)


def normalise_solution(nb):
    """A copy of a solution notebook with the standard kernelspec and deterministic missing cell ids.

    This is all the build ever changes in a solution: its cells' sources and outputs stay as they are.
    """
    nb = copy.deepcopy(nb)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    _ensure_cell_ids(nb)
    return nb


def make_learner_notebook(nb, name: str = "notebook"):
    """The learner version of a solution notebook (a new notebook; ``nb`` is not modified).

    ``name`` (e.g. the file name) is used in error messages, together with the cell index.
    """
    nb = normalise_solution(nb)
    cells = []
    for index, cell in enumerate(nb.cells):
        if SOLUTION_ONLY_TAG in _tags(cell):
            continue
        cells.append(_learner_cell(cell, f"{name}, cell {index}"))
    nb.cells = cells
    return nb


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def _resolve(path: str | Path) -> Path:
    path = Path(path)
    return path if path.is_absolute() else REPO_ROOT / path


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def read_notebook(path: Path):
    """Read a notebook without letting nbformat's validation invent random cell ids."""
    nb = nbformat.reader.reads(path.read_text(encoding="utf-8"))
    return nbformat.convert(nb, 4)


def notebook_text(nb) -> str:
    """The exact text written for a notebook: nbformat v4 JSON, sorted keys, trailing newline."""
    # nbformat's `version` is unannotated, so pyright takes its type from the default (a sentinel object)
    text = nbformat.writes(nb, version=4)  # pyright: ignore[reportArgumentType]
    return text if text.endswith("\n") else text + "\n"


def _write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    return True


def _solutions(solutions_dir: Path) -> list[Path]:
    return sorted(solutions_dir.glob("*.ipynb")) if solutions_dir.is_dir() else []


def _plan(solutions_dir: Path, notebooks_dir: Path) -> Iterable[tuple[Path, object, Path, str]]:
    """For each solution: (solution path, its normalised form, learner path, learner text)."""
    for solution in _solutions(solutions_dir):
        nb = read_notebook(solution)
        learner = make_learner_notebook(nb, name=_relative(solution))
        yield solution, nb, notebooks_dir / solution.name, notebook_text(learner)


def _run_build(solutions_dir: Path, notebooks_dir: Path) -> tuple[list[Path], list[Path]]:
    generated, changed = [], []
    for solution, nb, learner_path, text in _plan(solutions_dir, notebooks_dir):
        normalised = normalise_solution(nb)
        if normalised != nb and _write_if_changed(solution, notebook_text(normalised)):
            changed.append(solution)
        if _write_if_changed(learner_path, text):
            changed.append(learner_path)
        generated.append(learner_path)
    return generated, changed


def build(solutions_dir: str | Path = "solutions", notebooks_dir: str | Path = "notebooks") -> list[Path]:
    """Regenerate every learner notebook from its solution; return the learner notebooks' paths.

    Files are written only where their bytes change. Solutions get the standard kernelspec (their
    cells are never touched). Relative paths are taken from the repository root. A learner
    notebook without a solution is left alone (``stale_notebooks`` reports it).
    """
    generated, _ = _run_build(_resolve(solutions_dir), _resolve(notebooks_dir))
    return generated


def _problems(solutions_dir: Path, notebooks_dir: Path) -> list[tuple[Path, str]]:
    problems: list[tuple[Path, str]] = []
    for solution, nb, learner_path, text in _plan(solutions_dir, notebooks_dir):
        if normalise_solution(nb) != nb:
            problems.append((solution, "kernelspec (or cell ids) not normalised"))
        if not learner_path.exists():
            problems.append((learner_path, "missing"))
        elif learner_path.read_text(encoding="utf-8") != text:
            problems.append((learner_path, "differs from what the build makes"))
    solution_names = {p.name for p in _solutions(solutions_dir)}
    if notebooks_dir.is_dir():
        for learner in sorted(notebooks_dir.glob("*.ipynb")):
            if learner.name not in solution_names:
                problems.append((learner, f"has no solution {solutions_dir / learner.name}"))
    return problems


def stale_notebooks(solutions_dir: str | Path = "solutions", notebooks_dir: str | Path = "notebooks") -> list[Path]:
    """Files that differ from what ``build`` makes: learner notebooks missing or out of date,
    learner notebooks without a solution, and solutions whose metadata the build would normalise."""
    return [path for path, _ in _problems(_resolve(solutions_dir), _resolve(notebooks_dir))]


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python -m minirl.course {build,check}``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m minirl.course", description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "command",
        choices=["build", "check"],
        help="build: regenerate notebooks/ from solutions/; check: exit 1 if anything is stale",
    )
    parser.add_argument("--solutions", default="solutions", help="solution notebooks (default: solutions/)")
    parser.add_argument("--notebooks", default="notebooks", help="learner notebooks (default: notebooks/)")
    args = parser.parse_args(argv)
    solutions_dir, notebooks_dir = _resolve(args.solutions), _resolve(args.notebooks)
    try:
        if args.command == "build":
            generated, changed = _run_build(solutions_dir, notebooks_dir)
            for path in changed:
                print(f"wrote {_relative(path)}")
            print(f"{len(generated)} learner notebook(s) up to date in {_relative(notebooks_dir)}")
            for path, why in _problems(solutions_dir, notebooks_dir):
                print(f"warning: {_relative(path)}: {why}", file=sys.stderr)
            return 0
        problems = _problems(solutions_dir, notebooks_dir)
    except CourseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path, why in problems:
        print(f"{_relative(path)}: {why}")
    if problems:
        print("run `python -m minirl.course build` to regenerate the learner notebooks", file=sys.stderr)
        return 1
    print("learner notebooks are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())

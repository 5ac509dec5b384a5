"""Shared test settings."""

import torch

# The models are tiny: one thread is faster than several fighting over 2 CPU cores.
torch.set_num_threads(1)


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _not_strict(monkeypatch):
    """Checks run in non-strict mode unless a test sets MINIRL_STRICT itself."""
    monkeypatch.delenv("MINIRL_STRICT", raising=False)

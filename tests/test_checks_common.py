"""What every exercise check must do, whatever it checks: pass the reference, call a stub "not
implemented yet", raise in strict mode, and report any exception from the learner's code in one line."""

from __future__ import annotations

import pytest
from check_helpers import ALL_CHECKS, REFERENCES, caught, run, stub

from minirl import checks

by_name = pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)


def test_every_check_is_exported_and_listed_here():
    exported = {name for name in checks.__all__ if name.startswith("check_")}
    assert exported == {c.__name__ for c in ALL_CHECKS}


@by_name
def test_reference_passes(check, capsys):
    ok, line = run(check, REFERENCES[check], capsys)
    name = check.__name__.removeprefix("check_")
    assert ok is True
    assert line.startswith(f"✅ {name}: all ") and line.endswith(" checks passed"), line


@by_name
def test_stub_is_not_implemented_yet(check, capsys):
    ok, line = run(check, stub, capsys)
    assert ok is False
    assert line.startswith("⏳ ") and "not implemented yet" in line and "reference version" in line


@by_name
def test_strict_mode_raises_on_failure_and_on_stub(check, monkeypatch):
    monkeypatch.setenv("MINIRL_STRICT", "1")
    with pytest.raises(AssertionError, match="not implemented yet"):
        check(stub)

    def broken(*args, **kwargs):
        raise ValueError("oops")

    with pytest.raises(AssertionError, match=r"❌ .*raised ValueError.*oops"):
        check(broken)
    assert check(REFERENCES[check]) is True  # strict mode changes nothing for a passing function


@by_name
def test_any_exception_is_one_line(check, capsys):
    def broken(*args, **kwargs):
        raise KeyError("some key")

    line = caught(check, broken, capsys, "raised KeyError", "some key")
    assert "\n" not in line and check.__name__.removeprefix("check_") in line

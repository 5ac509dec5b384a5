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


@by_name
def test_not_implemented_line_echoes_the_stubs_hint(check, capsys):
    def hinted(*args, **kwargs):
        raise NotImplementedError("subtract the group mean, keepdim=True")

    ok, line = run(check, hinted, capsys)
    assert ok is False and line.startswith("⏳ ")
    assert "(hint: subtract the group mean, keepdim=True)" in line and "reference version" in line


def test_the_default_stub_message_is_not_echoed(capsys):
    ok, line = run(checks.check_compute_deltas, stub, capsys)
    assert ok is False and "hint" not in line and "replace this line" not in line


def deltas_without(*missing: str, hint: str = "divide by the std"):
    """compute_deltas with some modes still raising NotImplementedError (the others right)."""
    import minirl

    def compute_deltas(rewards, mode):
        if mode in missing:
            raise NotImplementedError(hint)
        return minirl.compute_deltas(rewards, mode)
    return compute_deltas


def test_multi_mode_says_which_modes_pass_and_which_remain(capsys):
    ok, line = run(checks.check_compute_deltas, deltas_without("normalized_rewards"), capsys)
    assert ok is False and line.startswith("⏳ compute_deltas: 'rewards', 'centered_rewards' already pass; "
                                           "'normalized_rewards' not implemented yet (hint: divide by the std)")
    ok, line = run(checks.check_compute_deltas, deltas_without("centered_rewards", "normalized_rewards"), capsys)
    assert "'rewards' already passes; 'centered_rewards', 'normalized_rewards' not implemented yet" in line
    ok, line = run(checks.check_compute_deltas, deltas_without("rewards", "centered_rewards", "normalized_rewards"),
                   capsys)
    assert line.startswith("⏳ compute_deltas: not implemented yet (hint: divide by the std)"), line


def test_multi_mode_a_wrong_mode_beats_a_missing_one(capsys):
    import minirl

    def compute_loss(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
        if mode == "naive":
            return (log_probs * deltas[..., None]).mean()  # the sign flipped
        if mode == "unclipped":
            return minirl.compute_loss(log_probs, deltas, mode, old_log_probs, epsilon)
        raise NotImplementedError("clip, then take the min")

    caught(checks.check_compute_loss, compute_loss, capsys, "naive", "wrong sign")


@pytest.mark.parametrize("check, modes, missing", [
    (checks.check_compute_loss, ("naive", "unclipped"), "clipped"),
    (checks.check_kl_estimate, ("k1", "k2"), "k3"),
], ids=["compute_loss", "kl_estimate"])
def test_multi_mode_partial_for_other_exercises(check, modes, missing, capsys):
    reference = REFERENCES[check]

    def partial(*args):
        if missing in args:
            raise NotImplementedError
        return reference(*args)

    ok, line = run(check, partial, capsys)
    assert ok is False and line.startswith("⏳ ")
    assert f"{', '.join(repr(m) for m in modes)} already pass; {missing!r} not implemented yet" in line, line

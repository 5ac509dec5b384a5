"""The machinery behind the checks a learner runs right under each exercise.

A check is ``check_<name>(learner_fn) -> bool``. It runs a list of small test cases against the
learner's function and prints ONE line:

    ✔ compute_deltas: all 9 checks passed
    ✘ compute_deltas: each group's centred rewards should sum to 0; yours sum to [12.0, 4.0, 8.0] — ...
    ○ compute_deltas: not implemented yet (hint: subtract the group mean) — fill in the exercise above, ...
    ○ compute_deltas: 'rewards', 'centered_rewards' already pass; 'normalized_rewards' not implemented yet — ...

The marks are ✔ (U+2714), ✘ (U+2718) and ○ (U+25CB): glyphs of DejaVu Sans and DejaVu Sans Mono, the
fonts a Linux JupyterLab falls back on (emoji, U+2705, U+274C, U+23F3, draw as empty boxes there without
an emoji font). The ○ line echoes the stub's hint (the message of its NotImplementedError, from ``### HINT:``), and
for a multi-mode exercise (the cases of each mode in a ``with c.mode(name):`` block) says which modes
already pass and which still raise NotImplementedError; when the modes' hints differ, it echoes the
first pending mode's. It returns True only when everything passed.
An exception raised by the learner's function is reported in one line (its type and message, and a
hint at the likely cause where one is known), never as a wall of traceback. Expected values are
hand-computed constants or the reference implementation from ``minirl`` / ``toy_envs`` on seeded
random inputs: a check never compares the learner's function with itself. When a result is wrong,
the check compares it with the results of the usual mistakes (a flipped sign, a mean over the
wrong axis, ...) and names the mistake it matches.

With the environment variable ``MINIRL_STRICT=1`` every failure, an unimplemented stub included,
raises ``AssertionError`` with the same message (to verify a finished notebook, or to run the
solution notebooks in CI). Without it a check never raises, so a learner notebook full of stubs
still runs to the end.

The notebook pattern, three cells per exercise::

    def compute_deltas(rewards, mode):                       # 1. the exercise (stub in notebooks/)
        raise NotImplementedError("subtract the group mean")

    ok = check_compute_deltas(compute_deltas)                # 2. the check: one line

    compute_deltas = use_reference(compute_deltas, minirl.compute_deltas, ok)   # 3. the fallback

Cell 3 keeps the learner's function when the check passed and otherwise swaps in the library's
reference (saying so), so a learner who is stuck can still run the rest of the notebook.

Writing a check: decorate a body ``(c: Check, fn) -> None`` with ``@exercise_check("name")``; inside,
call the learner's function through ``c.call`` and assert with ``c.expect`` / ``c.shape`` /
``c.close`` / ``c.equal_number``; each passed assertion counts as one check. Every comparison of
floats goes through one rule, ``tensors_close`` / ``numbers_close`` (below: why it is relative to the
scale of the values, and how tight).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

import torch

__all__ = [
    "FAIL_MARK",
    "PASS_MARK",
    "PENDING_MARK",
    "RTOL",
    "STRICT_ENV",
    "Check",
    "CheckFailure",
    "NotImplementedYet",
    "exercise_check",
    "format_tensor",
    "numbers_close",
    "strict_mode",
    "tensors_close",
    "use_reference",
]

STRICT_ENV = "MINIRL_STRICT"

# The marks that start a check's line: glyphs that DejaVu Sans and DejaVu Sans Mono have (see the docstring).
PASS_MARK, FAIL_MARK, PENDING_MARK = "\u2714", "\u2718", "\u25cb"  # ✔ ✘ ○

# ---------------------------------------------------------------------------------------------
# Tolerance: the one rule every comparison of the checks uses
# ---------------------------------------------------------------------------------------------
#
# A learner's correct function may compute in another order than the reference (sum then divide or
# divide then sum, einsum or matmul, masked_fill or a multiplication by the mask), in float32 or float64,
# on one thread or several. Each float32 operation rounds to within half an ulp, 2**-24 ≈ 6e-8 of the
# size of its operands, and a sum of n terms in another order differs by up to about n ulps of the
# size of the TERMS, which can be far larger than the result (centred rewards that should be 0, a loss
# that is a mean of terms of both signs). So a bare absolute tolerance is wrong in both directions,
# and a purely relative one fails on values that should be 0.
#
# The rule: got matches want when, elementwise, |got − want| ≤ RTOL · scale, where scale is the size
# of the values being compared, max |want|, but at least 1 — every check's inputs (rewards, log-probs,
# advantages, logits) are of order 1 or more, and a value computed from them carries rounding errors
# on the inputs' scale even when it is itself small. A check whose inputs are much larger passes its
# own ``scale``. RTOL = 1e-4 is about 800 float32 ulps: ample for the reductions of at most a few
# hundred terms in the checks (≲ 100 ulps in the worst order), while the usual mistakes (a flipped
# sign, a wrong axis, a missing mask, a mean for a sum, an off-by-one) change values by percents or
# more. Equal infinities match; NaN matches nothing.
RTOL = 1e-4
SCALE_FLOOR = 1.0


def _scale_of(want: torch.Tensor) -> float:
    finite = want.detach().double().abs()
    finite = finite[torch.isfinite(finite)]
    return max(float(finite.max()) if finite.numel() else 0.0, SCALE_FLOOR)


def tensors_close(got: torch.Tensor, want: torch.Tensor, rtol: float = RTOL, scale: float | None = None) -> bool:
    """True when ``got`` has ``want``'s shape and |got − want| ≤ rtol · scale everywhere (the rule above;
    ``scale`` defaults to max(max |want|, 1))."""
    if got.shape != want.shape:
        return False
    got, want = got.detach().double().cpu(), want.detach().double().cpu()
    if got.numel() == 0:
        return True
    limit = rtol * (_scale_of(want) if scale is None else max(scale, SCALE_FLOOR))
    within = (got - want).abs() <= limit
    return bool((within | (got == want)).all())


def numbers_close(got: float, want: float, rtol: float = RTOL, scale: float | None = None) -> bool:
    """The same rule for two numbers: |got − want| ≤ rtol · max(|want|, 1) (or rtol · ``scale``)."""
    got, want = float(got), float(want)
    if got == want:
        return True
    if math.isnan(got) or math.isnan(want):
        return False
    scale = max(abs(want) if math.isfinite(want) else 0.0, SCALE_FLOOR) if scale is None else max(scale, SCALE_FLOOR)
    return abs(got - want) <= rtol * scale


def seeded_generator(seed: int, offset: int = 0) -> torch.Generator:
    """A fresh CPU generator seeded with ``seed + offset``: each check module draws its random cases from its
    own ``SEED`` and one offset per case, so a check's inputs never depend on what ran before it."""
    return torch.Generator().manual_seed(seed + offset)


def strict_mode() -> bool:
    """True when ``MINIRL_STRICT`` is set to anything but "", "0", "false", "no"."""
    return os.environ.get(STRICT_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


class CheckFailure(Exception):
    """A check found a problem; the message is the one line shown to the learner. ``named``: the message
    names a known mistake (rather than showing expected against got)."""

    def __init__(self, message: str = "", named: bool = False) -> None:
        super().__init__(message)
        self.named = named


class NotImplementedYet(Exception):
    """The learner's function still raises NotImplementedError (its message, the stub's hint, in ``hint``)."""

    def __init__(self, hint: str = "") -> None:
        super().__init__(hint)
        self.hint = hint


class _SkipMode(Exception):
    """Inside ``Check.mode``: this mode is not implemented yet; skip the rest of its block."""


# The message of a stub without a ``### HINT:`` line (minirl.course.DEFAULT_HINT): not worth echoing.
_NO_HINT = "exercise: replace this line with your code"


# ---------------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------------


def _number(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        return str(x)
    x = round(x, 4)
    return f"{x:.4g}" if x != int(x) or abs(x) >= 1e6 else f"{x:.1f}"


def format_tensor(t: Any, max_items: int = 12) -> str:
    """A short one-line form of a small tensor (values rounded), or of its shape and first values."""
    if not isinstance(t, torch.Tensor):
        return repr(t)
    values = t.detach().to("cpu")
    if values.is_floating_point() or values.is_complex():
        values = values.double()
    if values.dim() == 0:
        return _number(float(values))
    if values.numel() <= max_items:
        return _nested(values.tolist())
    head = ", ".join(_number(float(v)) for v in values.flatten()[:4])
    return f"<tensor of shape {list(values.shape)}: {head}, …>"


def _nested(values: Any) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v) for v in values) + "]"
    return _number(float(values))


def _one_line(text: object, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shape_str(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


# ---------------------------------------------------------------------------------------------
# The assertions
# ---------------------------------------------------------------------------------------------


def _where_differs(got: torch.Tensor, want: torch.Tensor) -> str:
    """'at [0, 2]: expected 1.5, got 0.7' for the entry with the largest difference."""
    diff = (got.detach().double() - want.detach().double()).abs().nan_to_num(nan=float("inf"))
    flat = int(diff.flatten().argmax())
    index = list(torch.unravel_index(torch.tensor(flat), got.shape)) if got.dim() else []
    idx = tuple(int(i) for i in index)
    at = f" at {list(idx)}" if idx else ""
    return f"{at}: expected {_number(float(want[idx]))}, got {_number(float(got[idx]))}"


class Check:
    """The state of one running check: its name and how many assertions passed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.passed = 0
        self.current_mode: str | None = None
        self.modes: list[str] = []  # every mode tried, in order
        self.pending: dict[str, str] = {}  # mode -> the hint of its NotImplementedError
        self.hint = ""  # the stub's hint, when the whole function is not implemented
        self.in_example = False
        self.example_failure: str | None = None  # a worked example's failure that named no mistake

    @contextlib.contextmanager
    def worked_example(self) -> Iterator[None]:
        """A small hand-worked case, run before the random ones so that a failure shows readable numbers.

        On such a small input several mistakes can give the same numbers. So a failure here that names
        one mistake unambiguously stops the check at once; any other failure (expected against got, or a
        result that matches several known mistakes) is held back while the remaining cases run. If one of
        them names the mistake, the line gives that name followed by this example's numbers; otherwise
        the line is this example's failure."""
        outer, self.in_example = self.in_example, True
        try:
            yield
        except CheckFailure as failure:
            if failure.named:
                raise
            if self.example_failure is None:
                self.example_failure = str(failure)
        finally:
            self.in_example = outer

    @contextlib.contextmanager
    def mode(self, name: str) -> Iterator[None]:
        """A block of cases for one mode of a multi-mode exercise (``compute_deltas(rewards, mode)``, ...).

        When the learner's function raises NotImplementedError for this mode, the rest of the block is
        skipped (and so is every later block of the same mode) and the check goes on with the other modes;
        at the end the pending line says which modes already pass and which remain. A failure in any mode
        still stops the check with its failure line."""
        if name not in self.modes:
            self.modes.append(name)
        outer, self.current_mode = self.current_mode, name
        try:
            yield
        except _SkipMode:
            pass
        finally:
            self.current_mode = outer

    def fail(self, message: str, named: bool = False) -> NoReturn:
        """Stop the check with a one-line message in the learner's terms (``named``: it names a mistake)."""
        raise CheckFailure(message, named)

    def expect(self, condition: bool, message: str) -> None:
        """One assertion: fail with ``message`` unless ``condition``."""
        if not condition:
            self.fail(message)
        self.passed += 1

    def call(self, fn: Callable, *args: Any, call: str = "", hints: Sequence[tuple[str, str]] = (), **kwargs: Any):
        """Call the learner's function. NotImplementedError stops the check as "not implemented yet";
        any other exception becomes a one-line failure naming its type and message, followed by the
        first hint whose key occurs in the message (``hints`` = [(substring, hint), ...])."""
        mode = self.current_mode
        if mode is not None and mode in self.pending:
            raise _SkipMode
        try:
            return fn(*args, **kwargs)
        except NotImplementedError as exc:
            hint = _one_line(exc)
            if mode is not None:
                self.pending[mode] = hint
                raise _SkipMode from None
            raise NotImplementedYet(hint) from None
        except Exception as exc:  # the learner's code: anything can happen
            text = _one_line(exc) or "(no message)"
            where = f" on {call}" if call else ""
            message = f"your function raised {type(exc).__name__}{where}: {text}"
            for key, hint in hints:
                if key.lower() in str(exc).lower():
                    message += f" — {hint}"
                    break
            raise CheckFailure(message) from None

    def tensor(self, got: Any, what: str) -> torch.Tensor:
        """Assert that ``got`` is a tensor (one check); return it."""
        if not isinstance(got, torch.Tensor):
            extra = " (.item() and float() cut the tensor off the graph)" if isinstance(got, (float, int)) else ""
            self.fail(f"{what} should be a torch.Tensor; got {type(got).__name__}{extra}")
        self.passed += 1
        return got

    def shape(
        self, got: Any, expected: Sequence[int], axes: str, what: str, hints: dict[tuple[int, ...], str] | None = None
    ) -> torch.Tensor:
        """Assert a tensor's shape (one check), e.g. axes "batch, trial, pos":
        "expected shape [batch, trial, pos] = [2, 4, 3], got [2, 3]" plus the hint for that wrong shape."""
        got = self.tensor(got, what)
        if tuple(got.shape) != tuple(expected):
            message = f"{what}: expected shape [{axes}] = {_shape_str(expected)}, got {_shape_str(got.shape)}"
            hint = (hints or {}).get(tuple(got.shape))
            self.fail(f"{message} — {hint}" if hint else message)
        self.passed += 1
        return got

    def close(
        self,
        got: torch.Tensor,
        want: torch.Tensor,
        what: str,
        mistakes: Sequence[tuple[torch.Tensor | None, str]] = (),
        rtol: float = RTOL,
        scale: float | None = None,
    ) -> None:
        """Assert ``got`` ≈ ``want`` (one check; ``tensors_close``: |got − want| ≤ rtol · scale, the scale
        max(max |want|, 1) unless given). Otherwise, if ``got`` matches the value of a known mistake (by the
        same rule, on the same scale), fail with that mistake's message; else show expected vs got."""
        got = self.tensor(got, what).detach()
        scale = _scale_of(want) if scale is None else scale
        if tensors_close(got, want, rtol, scale):
            self.passed += 1
            return
        self.name_mistake(got, mistakes, what, rtol, scale)
        if got.shape != want.shape:
            self.fail(f"{what}: expected shape {_shape_str(want.shape)}, got {_shape_str(got.shape)}")
        if want.numel() <= 12:
            self.fail(f"{what}: expected {format_tensor(want)}, got {format_tensor(got)}")
        self.fail(f"{what}: wrong values{_where_differs(got, want)}")

    def name_mistake(
        self,
        got: torch.Tensor,
        mistakes: Sequence[tuple[torch.Tensor | None, str]],
        what: str,
        rtol: float = RTOL,
        scale: float | None = None,
    ) -> None:
        """Fail with the message of the first known mistake whose value ``got`` matches (``tensors_close``, on
        the larger of ``scale`` and the mistake's own); else do nothing. In a worked example (see
        ``worked_example``) the match must be unambiguous: when ``got`` matches mistakes with different
        messages, the small input cannot tell them apart and nothing is named."""
        got = got.detach()
        matches = [
            message
            for wrong, message in mistakes  # on the larger of the two scales: a sum for a mean
            if wrong is not None and tensors_close(got, wrong, rtol, max(scale or 0.0, _scale_of(wrong)))
        ]
        if matches and (not self.in_example or len(set(matches)) == 1):
            self.fail(f"{what}: {matches[0]}", named=True)

    def unchanged(
        self,
        before: dict[str, torch.Tensor],
        after: dict[str, torch.Tensor],
        what: str,
        fix: str = "compute new tensors instead",
    ) -> None:
        """Assert (one check) that the learner's function did not edit its inputs in place: ``before`` holds
        copies taken before the call, ``after`` the tensors that were passed, by the same names."""
        changed = [name for name in before if not torch.equal(before[name], after[name].detach())]
        self.expect(not changed, f"{what}: your function changed its input {', '.join(changed)} in place; {fix}")

    def equal_number(self, got: Any, want: float, what: str) -> float:
        """Assert that ``got`` is a number equal to ``want`` (one check); return it as a float."""
        try:
            value = float(got)
        except (TypeError, ValueError):
            self.fail(f"{what}: expected a number, got {type(got).__name__} {_one_line(repr(got), 60)}")
        self.expect(numbers_close(value, want), f"{what}: expected {_number(want)}, got {_number(value)}")
        return value


# ---------------------------------------------------------------------------------------------
# Running a check
# ---------------------------------------------------------------------------------------------


def _modes(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _not_implemented_line(
    name: str, hint: str = "", passing: Sequence[str] = (), pending: Sequence[str] = (), hint_mode: str | None = None
) -> str:
    """The pending line: the stub's hint echoed (``hint_mode``: the mode it belongs to, when the pending
    modes' hints differ), and for a multi-mode exercise the modes done and to do."""
    what = "not implemented yet"
    if pending:
        done = f"{_modes(passing)} already pass{'es' if len(passing) == 1 else ''}; " if passing else ""
        what = f"{done}{_modes(pending)} not implemented yet"
    if hint.strip() in ("", _NO_HINT):
        hint = ""
    else:
        hint = f" (hint for {hint_mode!r}: {hint})" if hint_mode else f" (hint: {hint})"
    return (
        f"{PENDING_MARK} {name}: {what}{hint} — fill in the exercise above, "
        "or run the next cell to use the reference version"
    )


def _pending_hint(c: Check) -> tuple[str, str | None]:
    """(the hint to echo, the mode it belongs to or None): the pending modes' one hint when they share it,
    else the hint of the first pending mode that has one (the next thing to write, in the stub's order)."""
    hints = [
        (mode, c.pending[mode])
        for mode in c.modes
        if mode in c.pending and c.pending[mode].strip() not in ("", _NO_HINT)
    ]
    if not hints:
        return "", None
    if len({hint for _, hint in hints}) == 1 and len(hints) == len(c.pending):
        return hints[0][1], None
    return hints[0][1], hints[0][0]


def _report(line: str, ok: bool) -> bool:
    print(line)
    if not ok and strict_mode():
        raise AssertionError(line)
    return ok


def run_check(name: str, body: Callable[[Check, Callable], None], fn: Any) -> bool:
    """Run ``body(check, fn)``, print its one line, return True if it passed (see module docstring)."""
    if not callable(fn):
        return _report(
            f"{FAIL_MARK} {name}: expected a function, got {type(fn).__name__} — pass the function itself, "
            f"without calling it: check_{name}({name})",
            False,
        )
    c = Check(name)
    try:
        body(c, fn)
    except NotImplementedYet as stub:
        return _report(_not_implemented_line(name, stub.hint), False)
    except CheckFailure as failure:
        message = str(failure)
        if c.example_failure is not None:  # a worked example failed first: its numbers are the readable ones
            message = f"{message} — on the worked example, {c.example_failure}" if failure.named else c.example_failure
        return _report(f"{FAIL_MARK} {name}: {_one_line(message, 500)}", False)
    except Exception as exc:  # the result had a form the check could not even inspect
        return _report(
            f"{FAIL_MARK} {name}: could not check your result ({type(exc).__name__}: {_one_line(exc)})", False
        )
    if c.example_failure is not None:
        return _report(f"{FAIL_MARK} {name}: {_one_line(c.example_failure, 400)}", False)
    if c.pending:
        hint, hint_mode = _pending_hint(c)
        if len(c.pending) == len(c.modes):  # no mode implemented: the function is still the stub
            return _report(_not_implemented_line(name, hint, hint_mode=hint_mode), False)
        passing = [m for m in c.modes if m not in c.pending]
        pending = [m for m in c.modes if m in c.pending]
        return _report(_not_implemented_line(name, hint, passing, pending, hint_mode), False)
    return _report(f"{PASS_MARK} {name}: all {c.passed} checks passed", True)


def exercise_check(name: str) -> Callable[[Callable[[Check, Callable], None]], Callable[[Any], bool]]:
    """Decorator: turn a body ``(c: Check, fn) -> None`` into ``check_<name>(fn) -> bool``."""

    def decorate(body: Callable[[Check, Callable], None]) -> Callable[[Any], bool]:
        def check(fn: Any) -> bool:
            return run_check(name, body, fn)

        check.__name__ = check.__qualname__ = f"check_{name}"
        check.__doc__ = body.__doc__
        check.__module__ = body.__module__
        return check

    return decorate


def _qualified(fn: Callable) -> str:
    """The shortest public dotted name of ``fn``: ``minirl.compute_deltas`` rather than ``minirl.advantages...``."""
    name = getattr(fn, "__name__", repr(fn))
    parts = (getattr(fn, "__module__", "") or "").split(".")
    for end in range(1, len(parts) + 1):
        prefix = ".".join(parts[:end])
        if prefix and prefix != "__main__" and getattr(sys.modules.get(prefix), name, None) is fn:
            return f"{prefix}.{name}"
    return name


def use_reference(learner_fn: Callable | None, reference_fn: Callable, passed: bool) -> Callable:
    """``learner_fn`` if its check passed, else ``reference_fn`` (with a one-line note).

    The notebook's fallback cell: ``compute_deltas = use_reference(compute_deltas, minirl.compute_deltas, ok)``.
    """
    name = getattr(learner_fn, "__name__", None) or getattr(reference_fn, "__name__", "function")
    if passed and learner_fn is not None:
        print(f"✔ {name}: using your version")
        return learner_fn
    print(f"↪ {name}: using the reference {_qualified(reference_fn)} from here on")
    return reference_fn

"""Small shared helpers."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import resource
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "REPO_ROOT",
    "atomic_write",
    "check_nonnegative_ints",
    "check_positive_ints",
    "describe_task",
    "plain_json",
    "RunError",
    "device_generator",
    "draw_seed",
    "load_torch",
    "peak_memory_gb",
    "read_as",
    "read_field",
    "save_torch",
    "torch_threads",
    "write_json",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
"""The root of the source checkout: ``results/``, ``solutions/``, ``notebooks/`` and ``scripts/`` are there."""


@contextmanager
def torch_threads(n: int | None = 1) -> Iterator[None]:
    """Run torch on ``n`` CPU threads (None: leave the setting as it is), then restore the setting.

    The toy models are tiny: extra threads only add synchronisation (measured 5-10x slower on a busy
    2-core machine), so the toy training loops run on one. A real language model's matrix products do
    gain from every core (``n=None``). It also turns on flushing denormal floats to zero, and leaves it on
    (torch cannot report the previous setting to restore): a collapsed policy's tiny probabilities are
    denormals, which made such runs about 5x slower with identical results.
    """
    previous = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def device_generator(generator: torch.Generator, device: torch.device) -> torch.Generator:
    """``generator`` itself on the CPU; on another device a generator there, seeded by one draw from it."""
    if torch.device(device).type == "cpu":
        return generator
    return torch.Generator(device=device).manual_seed(draw_seed(generator))


def draw_seed(generator: torch.Generator | None) -> int:
    """One seed in [0, 2**62) drawn from ``generator`` (the global RNG when None), on the generator's device: what
    a sampling call that seeds torch's global RNG itself (``generate``) takes from the caller's generator."""
    device = generator.device if generator is not None else "cpu"
    return int(torch.randint(0, 2**62, (), generator=generator, device=device).item())


def check_positive_ints(**values: object) -> None:
    """Raise ``ValueError("<name> must be a positive int; got <value>")`` for the first argument that
    is not an int >= 1, e.g. ``check_positive_ints(vocab_size=vocab_size, steps=steps)``."""
    for name, value in values.items():
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int; got {value!r}")


def check_nonnegative_ints(**values: object) -> None:
    """Raise ``ValueError("<name> must be an int >= 0; got <value>")`` for the first argument that is not an
    int >= 0 (a bool is not an int here)."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int >= 0; got {value!r}")


def atomic_write(path: str | os.PathLike, write: Callable[[Path], Any]) -> None:
    """``write(tmp)`` to a temporary name beside ``path``, then rename it to ``path`` (a file or a folder)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    _remove(tmp)
    write(tmp)
    old = path.with_name(f".{path.name}.old")
    if path.is_dir():  # a folder cannot be replaced by a rename: move the old one aside first
        _remove(old)
        path.rename(old)
    tmp.replace(path)
    _remove(old)


def peak_memory_gb(device: str | torch.device = "cpu") -> float:
    """This process's peak memory so far in GiB: on CUDA the most ``device``'s tensors took
    (``torch.cuda.max_memory_allocated``), elsewhere the peak resident set size (Linux's ``ru_maxrss``, in KiB)."""
    if torch.device(device).type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def plain_json(value: Any) -> Any:
    """JSON-ready: tuples as lists, a callable as its name."""
    if isinstance(value, dict):
        return {k: plain_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v) for v in value]
    if callable(value):
        return f"<callable {getattr(value, '__qualname__', repr(value))}>"
    return value


def describe_task(task: Any) -> dict[str, Any]:
    """``{"class": "module:Name", "args": {field: value}}``: a dataclass task's constructor arguments (a run
    folder's ``config.json`` keeps them; ``minirl.runs.build_task`` builds the task back). A task that wraps
    another (``minirl.lm.judge.JudgedTask``) has it described the same way, inside its arguments."""
    if not dataclasses.is_dataclass(task):
        raise RunError(f"task {type(task).__name__} is not a dataclass: a run folder cannot record its arguments")
    args = {f.name: getattr(task, f.name) for f in dataclasses.fields(task) if f.init}
    nested = {k: describe_task(v) for k, v in args.items() if dataclasses.is_dataclass(v) and not isinstance(v, type)}
    return {"class": f"{type(task).__module__}:{type(task).__qualname__}", "args": plain_json({**args, **nested})}


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """``obj`` as indented JSON at ``path``, written atomically (``atomic_write``)."""
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(obj, indent=2, default=str) + "\n"))


def save_torch(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save(obj)`` at ``path``, written atomically (``atomic_write``)."""
    atomic_write(path, lambda tmp: torch.save(obj, tmp))


def load_torch(path: str | os.PathLike) -> Any:
    """What ``save_torch`` wrote at ``path``, on the CPU; a missing or damaged file raises ``RunError`` naming it."""
    path = Path(path)
    if not path.is_file():
        raise RunError(f"missing checkpoint file {path}")
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # any unpickling failure means the same thing: the file is damaged
        raise RunError(f"corrupted checkpoint file {path}: {type(err).__name__}: {err}") from None


class RunError(ValueError):
    """A run folder (``minirl.runs``) or one of its files that cannot be used as asked; the message names the
    file or the knob."""


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def read_as(annotation: str, text: str) -> Any:
    """``text`` read as a dataclass field annotated ``annotation`` (``"int"``, ``"float | None"``, ``"bool"``,
    ``"str"``...): ``none`` gives None where the annotation allows it, ``true`` or ``false`` a bool. Raises
    ValueError ("expected float; got 'x'", "expected true or false; got 'yes'")."""
    if "None" in annotation and text.lower() == "none":
        return None
    if annotation.startswith("bool"):
        if text.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false; got {text!r}")
        return text.lower() == "true"
    convert = int if re.search(r"\bint\b", annotation) else float if "float" in annotation else str
    try:
        return convert(text)
    except ValueError:
        raise ValueError(f"expected {annotation}; got {text!r}") from None


def read_field(cls: type, name: str, text: str, *, kind: str = "field", skip: tuple[str, ...] = ()) -> Any:
    """``text`` read as the value of the dataclass ``cls``'s field ``name`` (``kind``: what the error calls a
    field), by the field's annotation (``read_as``). A ValueError names an unknown field (or one in ``skip``) with
    the known ones ("unknown AlgoConfig knob 'lamb'; known: [...]"), or the field and what it expected."""
    types = {f.name: str(f.type) for f in dataclasses.fields(cls) if f.name not in skip}
    if name not in types:
        raise ValueError(f"unknown {cls.__name__} {kind} {name!r}; known: {sorted(types)}")
    try:
        return read_as(types[name], text)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None

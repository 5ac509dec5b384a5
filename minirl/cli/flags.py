"""Flags from the config dataclasses, and back: the command line's half of each config field.

Every ``TrainConfig`` and ``MazeTrainConfig`` field becomes a ``--field-name`` flag (``add_config_flags``), its help
the field's line in the class docstring's ``Attributes:`` section (``field_help``); a flag left out keeps the
config's default (None here). ``--set knob=value`` changes an ``AlgoConfig`` knob (``knob_changes``, parsed once
per command). Back the other way, ``config_flags`` and ``given_flags`` write a run's flags, from which the run
kinds (``minirl.cli.kinds``) make each run's ``minirl train`` command.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from minirl.algorithms import AlgoConfig, get_algorithm, parse_knob_value
from minirl.utils import read_as

__all__ = [
    "COMPARE_ONLY",
    "Built",
    "MAZE_FLAGS_EXCLUDED",
    "TRAIN_FLAGS_EXCLUDED",
    "add_config_flags",
    "add_save",
    "config_flags",
    "field_help",
    "given_fields",
    "given_flags",
    "keep_flags",
    "knob_changes",
    "save_name",
    "with_knobs",
]

# fields with flags of their own (or none): the task, the algorithm, the seed, the progress bar, the device
TRAIN_FLAGS_EXCLUDED = frozenset({"task", "algo", "seed", "progress", "device"})
MAZE_FLAGS_EXCLUDED = frozenset({"method", "seed", "layout", "progress"})
# the flags of `compare` (and `help`) that are not one run's: what a run's `minirl train` command leaves out
COMPARE_ONLY = frozenset({"algos", "seeds", "out", "overwrite", "save", "plot", "workers", "save_every", "help"})


class Built(NamedTuple):
    """One run made from the flags (``RunKind.build``): its config, its policy (None: the loop makes its own) and
    what its run folder's config.json adds (a language model's name and recipe)."""

    config: Any
    policy: Any
    extra: dict


# ---- config fields as flags ----------------------------------------------------------------------------------


def field_help(cls) -> dict[str, str]:
    """``{field: text}`` from the ``Attributes:`` section of a dataclass's docstring (``a, b: text`` gives both)."""
    doc = (cls.__doc__ or "").split("Attributes:", 1)
    if len(doc) < 2:
        return {}
    out, names = {}, []
    for line in doc[1].splitlines():
        match = re.match(r"^ {8}([a-z_][a-z_0-9, ]*):\s*(.*)$", line)
        if match:
            names = [n.strip() for n in match.group(1).split(",")]
            for name in names:
                out[name] = match.group(2)
        elif line.startswith(" " * 12) and names:
            for name in names:
                out[name] += " " + line.strip()
    return {k: v.replace("%", "%%") for k, v in out.items()}


def _typed(annotation: str):
    """An argparse ``type`` for a field annotated ``int``, ``float | None``, ``str``... (``none`` gives None)."""
    base = "int" if re.search(r"\bint\b", annotation) else "float" if "float" in annotation else "str"

    def parse(text: str):
        try:
            return read_as(annotation, text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = base
    return parse


def add_config_flags(parser, cls, excluded: Iterable[str], seen: set[str]) -> None:
    """One ``--field-name`` flag per field of dataclass ``cls`` (default None: keep the config's default)."""
    helps = field_help(cls)
    for f in dataclasses.fields(cls):
        if f.name in excluded or f.name in seen:
            continue
        seen.add(f.name)
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else None
        text = f"{helps.get(f.name, '')} (default: {default})"
        if str(f.type).startswith("bool"):
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=text)
        else:
            parser.add_argument(
                flag, dest=f.name, type=_typed(str(f.type)), default=None, help=text, metavar=f.name.upper()
            )


def given_fields(args: argparse.Namespace, cls, excluded: Iterable[str]) -> dict:
    """The flags of ``cls``'s fields that were given on the command line."""
    return {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if f.name not in excluded and getattr(args, f.name, None) is not None
    }


def add_save(p: argparse.ArgumentParser) -> None:
    """``--save [NAME]``: keep a command's measured figures in a results record (``minirl.results``)."""
    p.add_argument(
        "--save",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="keep the measured figures with their command, commit, machine and seeds in "
        "results/NAME.json (a path ending in .json also works; NAME defaults to the command's)",
    )


def save_name(flag: str | None, default: str) -> str | None:
    """``--save`` absent: None; ``--save`` alone: the command's default name; ``--save NAME``: NAME."""
    return None if flag is None else (flag or default)


# ---- --set knob=value ------------------------------------------------------------------------------------------


def knob_changes(pairs: list[str]) -> dict:
    """``--set knob=value`` pairs as AlgoConfig changes, each value parsed by the knob's type (``parse_knob_value``)."""
    changes = {}
    for pair in pairs:
        knob, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--set expects knob=value, e.g. inner_epochs=4; got {pair!r}")
        try:
            changes[knob] = parse_knob_value(knob, value)
        except ValueError as err:
            raise ValueError(f"--set {err}") from None
    return changes


def with_knobs(name: str, changes: dict) -> AlgoConfig:
    """The preset with the ``--set`` changes; its label lists them (``clipped[inner_epochs=8]``)."""
    algo = get_algorithm(name)
    if not changes:
        return algo
    label = f"{name}[{','.join(f'{k}={v}' for k, v in changes.items())}]"
    return algo.with_(name=label, **changes)


# ---- a run back into flags -------------------------------------------------------------------------------------


def _flag_value(name: str, value) -> list[str]:
    """``--name value`` of a config field (``--name`` / ``--no-name`` for a bool, ``none`` for None)."""
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return [flag if value else "--no-" + flag[2:]]
    return [flag, "none" if value is None else str(value)]


def config_flags(config, excluded: Iterable[str]) -> list[str]:
    """The flags of every field of ``config`` (a config dataclass) that differs from its class's default."""
    defaults = type(config)()
    return [
        flag
        for f in dataclasses.fields(config)
        if f.name not in excluded and getattr(config, f.name) != getattr(defaults, f.name)
        for flag in _flag_value(f.name, getattr(config, f.name))
    ]


def given_flags(args: argparse.Namespace, parser: argparse.ArgumentParser, skip: Iterable[str]) -> list[str]:
    """The flags of ``parser`` that ``args`` holds a value other than the default of, in the parser's order
    (its options only, those in ``skip`` left out): the arguments that give ``args`` again."""
    argv: list[str] = []
    for action in parser._actions:
        if not action.option_strings or action.dest in skip:
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default:
            continue
        if isinstance(action, argparse.BooleanOptionalAction):
            argv.append(action.option_strings[0] if value else action.option_strings[1])
        elif isinstance(action, argparse._StoreTrueAction):
            argv.append(action.option_strings[0])
        elif isinstance(action, argparse._AppendAction):
            argv += [part for item in value for part in (action.option_strings[0], str(item))]
        else:
            argv += [action.option_strings[0], str(value)]
    return argv


def keep_flags(args: argparse.Namespace) -> list[str]:
    """``--save-every N`` of a kept run's command, when ``args`` checkpoints every N steps."""
    return ["--save-every", str(args.save_every)] if getattr(args, "save_every", 0) else []

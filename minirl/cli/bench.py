"""``minirl bench``: every benchmark of ``minirl.bench`` from one command.

    minirl bench                               the toy benchmark (minirl.bench.toy)
    minirl bench --lm [--parts ...]            the language models' recipes over seeds (minirl.bench.lm)
    minirl bench --trl                         minirl and TRL's GRPOTrainer side by side (minirl.bench.trl)
    minirl bench --reasoning-base [ARGS]       a base model on the reasoning tasks (minirl.bench.reasoning)
    minirl bench --reasoning-rl [ARGS]         notebook 10's arms over seeds (minirl.bench.reasoning_rl)
    minirl bench --self-training [ARGS]        notebook 11's arms over seeds (minirl.bench.self_training)
    minirl bench --agents [ARGS]               notebook 12's maze walked by SmolLM2 (minirl.bench.agents)
    minirl bench --calculator [ARGS]           notebook 12's calculator (minirl.bench.calculator)
    minirl bench --reasoning-families [ARGS]   thinking vs answer-only per family (minirl.bench.reasoning_families)
    minirl bench --cpu-decode [ARGS]           a CPU's generation, two forms of product (minirl.bench.cpu_decode)

The first three take the flags below (``--seeds``, ``--quick``, ``--save``, ``--out``...). Each of the others
(``FORWARDED``) is its module's own command: every argument after its flag goes to the module's ``main``, as
``python -m minirl.bench.reasoning_rl ARGS`` would take them (``minirl bench --reasoning-rl --help`` lists them).
"""

from __future__ import annotations

import argparse
import importlib
from typing import NamedTuple

from minirl.cli.flags import add_save, save_name

__all__ = ["FORWARDED", "add_bench_flags", "cmd_bench", "one_thread"]


class Forwarded(NamedTuple):
    """A benchmark that is its module's own command: ``minirl bench FLAG ARGS`` is ``module.main(ARGS)``."""

    flag: str
    module: str
    help: str

    @property
    def dest(self) -> str:
        return self.flag[2:].replace("-", "_")


FORWARDED = (
    Forwarded(
        "--reasoning-base",
        "minirl.bench.reasoning",
        "a base model on the reasoning tasks before any training (notebook 10's first table)",
    ),
    Forwarded(
        "--reasoning-rl",
        "minirl.bench.reasoning_rl",
        "notebook 10's arms over seeds: scratchpad, RL, a lenient verifier (also --lm --parts reasoning)",
    ),
    Forwarded(
        "--self-training",
        "minirl.bench.self_training",
        "notebook 11's arms over seeds: best-of-N, imitation, expert iteration, online DPO, GRPO, a judge "
        "(also --lm --parts self_training)",
    ),
    Forwarded(
        "--agents",
        "minirl.bench.agents",
        "notebook 12's maze walked by SmolLM2: base, warm start, the critic's values, GRPO and PPO "
        "(also --lm --parts agents)",
    ),
    Forwarded(
        "--calculator",
        "minirl.bench.calculator",
        "notebook 12's calculator: base, warm start, GRPO and PPO, accuracy and calls by kind (also --lm --parts "
        "calculator)",
    ),
    Forwarded(
        "--reasoning-families",
        "minirl.bench.reasoning_families",
        "thinking against answer-only GRPO on the word and add families",
    ),
    Forwarded(
        "--cpu-decode",
        "minirl.bench.cpu_decode",
        "how fast a CPU generates: nn.Linear's product against the weight-first one",
    ),
)
# the flags of the toy, --lm and --trl benchmarks, and their defaults (a forwarded benchmark takes none of them)
OWN_DEFAULTS = {
    "seeds": 3,
    "quick": False,
    "lm": False,
    "minutes": None,
    "parts": "tiny,smollm2,reasoning",
    "save": None,
    "trl": False,
    "out": None,
}


def add_bench_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", type=int, default=OWN_DEFAULTS["seeds"], help="seeds 0 .. N-1 of every measured run")
    p.add_argument("--quick", action="store_true", help="a much shorter run (for smoke tests)")
    p.add_argument(
        "--lm",
        action="store_true",
        help="the language-model benchmark: the tiny model's and SmolLM2's recipes over seeds",
    )
    p.add_argument(
        "--minutes",
        type=float,
        default=OWN_DEFAULTS["minutes"],
        help="--lm: stop SmolLM2's training after this many minutes (default: the recipe's steps)",
    )
    p.add_argument(
        "--parts",
        default=OWN_DEFAULTS["parts"],
        help="--lm: the parts to run, comma-separated, of tiny,smollm2,reasoning,self_training,agents,calculator "
        "(default: the first three; the others, notebooks 11 and 12, take hours on a CPU)",
    )
    add_save(p)
    p.add_argument(
        "--trl",
        action="store_true",
        help="minirl and TRL's GRPOTrainer side by side on the same run (needs the trl extra)",
    )
    p.add_argument(
        "--out",
        default=OWN_DEFAULTS["out"],
        metavar="FOLDER",
        help="keep every run in a run folder under FOLDER, and the results record as FOLDER/record.json "
        "(beside FOLDER/env.json), which names each run's folder",
    )
    for bench in FORWARDED:
        p.add_argument(
            bench.flag,
            nargs=argparse.REMAINDER,
            default=None,
            metavar="ARGS",
            help=f"{bench.help}: the arguments after it are python -m {bench.module}'s",
        )


def _forwarded(args: argparse.Namespace) -> Forwarded | None:
    return next((bench for bench in FORWARDED if getattr(args, bench.dest, None) is not None), None)


def one_thread(args: argparse.Namespace) -> bool:
    """The toy benchmark trains tiny models: one torch thread each; the others keep torch's threads."""
    return not (args.lm or args.trl or _forwarded(args))


def cmd_bench(args: argparse.Namespace) -> int:
    forwarded = _forwarded(args)
    if forwarded is not None:
        given = [name for name, default in OWN_DEFAULTS.items() if getattr(args, name) != default]
        if given:
            flags = ", ".join("--" + name.replace("_", "-") for name in given)
            raise SystemExit(
                f"minirl: {flags} before {forwarded.flag}: its flags are its own; give them after it "
                f"(minirl bench {forwarded.flag} --help)"
            )
        return importlib.import_module(forwarded.module).main(getattr(args, forwarded.dest))
    if args.seeds < 1:
        raise SystemExit("minirl: --seeds must be >= 1")
    from minirl.bench import check_out

    check_out(args.out)
    if args.trl:
        from minirl.bench.trl import run_trl_benchmark

        save = save_name(args.save, "bench_trl")
        return run_trl_benchmark(quick=args.quick, seeds=args.seeds, save=save, out=args.out)
    if args.lm:
        from minirl.bench.lm import run_lm_benchmark

        return run_lm_benchmark(
            quick=args.quick,
            seeds=args.seeds,
            minutes=args.minutes,
            save=save_name(args.save, "bench_lm"),
            out=args.out,
            parts=tuple(args.parts.split(",")),
        )
    from minirl.bench.toy import run_benchmark

    return run_benchmark(quick=args.quick, seeds=args.seeds, save=save_name(args.save, "bench"), out=args.out)

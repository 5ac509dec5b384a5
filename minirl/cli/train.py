"""``minirl train``, ``minirl eval`` and ``minirl generate``: one run, trained (and kept), then used.

Each asks the run's kind (``minirl.cli.kinds``) what to do: ``train`` builds and trains through
``minirl.cli.running``; ``eval`` and ``generate`` look a kept run's kind up from its config.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from minirl.cli.flags import knob_changes
from minirl.cli.kinds import check, kind_for, kind_of_run
from minirl.cli.parser import build_parser
from minirl.cli.running import kept_run, plot_runs, run_many, save_runs, start_record

__all__ = ["cmd_eval", "cmd_generate", "cmd_train"]


def cmd_train(args: argparse.Namespace) -> int:
    if args.out is not None or args.resume is not None:
        return _train_kept(args)
    if args.tensorboard:
        raise ValueError("tensorboard: --tensorboard logs into a run folder: give --out FOLDER (or --resume FOLDER)")
    what = kind_for(args.task).what(args)
    record = start_record(args, [args.seed], f"train_{args.task}_{what}_seed{args.seed}")
    runs = run_many(args, [args.algo], [args.seed])
    save_runs(args, record, runs)
    if args.plot:
        plot_runs(runs, args.task, args.plot)
    return 0


def _run_folder_args(args: argparse.Namespace) -> tuple[argparse.Namespace, Path]:
    """With ``--resume``: the run's own command line with this one's flags on top; the run folder (``--out auto``:
    named for the task, the algorithm or model, the seed and the UTC time)."""
    if args.resume is not None:
        from minirl.runs import RunFolder

        stored = RunFolder(args.resume).config().get("command")
        if not stored:
            raise ValueError(f"{Path(args.resume) / 'config.json'} has no command: not a run of `minirl train`")
        given = [a for a in args.argv[1:]]
        merged = build_parser().parse_args([*stored, *given])
        merged.argv = stored
        return merged, Path(args.resume)
    if args.out != "auto":
        return args, Path(args.out)
    import datetime

    what = kind_for(args.task).what(args)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%SZ")
    return args, Path("runs") / f"{args.task}_{what}_seed{args.seed}_{when}"


def _train_kept(args: argparse.Namespace) -> int:
    """``train --out`` / ``--resume``: one run kept in a run folder (``minirl.runs``), here in this process.
    Ctrl-C while the model loads or warm-starts keeps nothing; after that, the run folder says what it holds."""
    resuming = args.resume is not None
    args, folder = _run_folder_args(args)
    kind = kind_for(args.task)
    check(kind, args, [args.algo])
    knobs = knob_changes(args.set)
    command = [a for a in args.argv if a != "--overwrite"]
    run = None
    try:
        run, built = kept_run(kind, args, folder, resuming=resuming, knobs=knobs, command=command)
        print(f"{'resuming' if resuming else 'keeping'} the run in {folder}", flush=True)
        history = kind.train(built.config, built.policy, run)
    except KeyboardInterrupt:
        if run is None:
            print("interrupted before training began: nothing was kept", file=sys.stderr, flush=True)
        elif not run.announced_interrupt:
            print(run.interrupted_message(), file=sys.stderr, flush=True)
        return 130
    label = kind.label(built.config)
    print(kind.summary(args, label, history), flush=True)
    print(f"kept in {folder}: {kind.after_training.format(folder=folder)}", flush=True)
    if args.plot:
        plot_runs({label: [history]}, args.task, args.plot)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """A kept run's model on its task's evaluation prompts, as its kind evaluates it (a toy or text run:
    ``minirl.cli.evaluation.evaluate_policy``; a maze run: its exact expected return and greedy route)."""
    from minirl.runs import RunFolder

    run = RunFolder(args.run)
    config = run.config()
    return kind_of_run(config).evaluate(args, run, config)


def cmd_generate(args: argparse.Namespace) -> int:
    """A kept run's model answers a prompt, or each prompt typed (``minirl.cli.evaluation.generate_answers``);
    a maze run answers none."""
    from minirl.runs import RunFolder

    run = RunFolder(args.run)
    return kind_of_run(run.config()).generate(args, run)

"""Runs from the command line, for ``train`` and ``compare`` (and ``ladder``): built, trained, kept, summed up.

Every step asks the run's kind (``minirl.cli.kinds``): how to build the run, how to train it, what its summary
line and its figure are, and which ``minirl train`` command rebuilds it (``train_command``: the one function
that turns a run into its command, for every run folder's config.json).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from minirl.cli.flags import Built, knob_changes, save_name
from minirl.cli.kinds import RunKind, check, kind_for, kind_of_config
from minirl.cli.parser import build_parser
from minirl.history import History

__all__ = [
    "kept_message",
    "kept_run",
    "plot_runs",
    "run_many",
    "save_figure",
    "save_runs",
    "start_record",
    "train_command",
]


def train_command(config, algo: str, args: argparse.Namespace) -> list[str]:
    """The ``minirl train`` arguments of one run of ``compare`` / ``ladder`` (``config``, the preset or maze
    method ``algo``, ``args``: the command line it came from, with its ``--set``, ``--save-every`` and
    ``--no-progress``), which ``train --resume`` rebuilds the run from: as its kind writes them
    (``RunKind.command``: a toy run's task and every knob off its default, a text run's flags given)."""
    return kind_of_config(config).command(config, algo, args, build_parser)


def _config(args: argparse.Namespace, algo: str, seed: int, progress: bool):
    """The config of one (algorithm, seed) of the command line ``args`` (of a toy task: a text task's loads the
    model)."""
    return kind_for(args.task).build(args, algo, seed, knobs=knob_changes(args.set), progress=progress).config


def run_many(args: argparse.Namespace, algos: list[str], seeds: list[int]) -> dict[str, list[History]]:
    """Every (algorithm, seed) of ``--task``, ``{label: [History per seed]}``: tiny models side by side in
    processes (``run_all``), language models here, one after the other."""
    kind = kind_for(args.task)
    check(kind, args, algos)
    if kind.in_processes:
        return _run_in_processes(kind, args, algos, seeds)
    return _run_in_turn(kind, args, algos, seeds)


def _run_in_processes(kind: RunKind, args: argparse.Namespace, algos: list[str], seeds: list[int]):
    from minirl.compare import run_all

    knobs = knob_changes(args.set)
    workers = 1 if len(seeds) * len(algos) == 1 else args.workers
    # parallel runs' progress bars would interleave: then run_all shows one bar over the runs instead
    per_run_bar = not args.no_progress and workers == 1
    configs = {
        algo: [kind.build(args, algo, seed, knobs=knobs, progress=per_run_bar).config for seed in seeds]
        for algo in algos
    }
    labels = {algo: kind.label(group[0]) for algo, group in configs.items()}
    runs = run_all(
        configs,
        workers=workers,
        progress=not args.no_progress,
        on_done=lambda algo, h: print(kind.summary(args, labels[algo], h), flush=True),
        folders=run_folders(args, configs),
        save_every=getattr(args, "save_every", 0),
    )
    return {labels[algo]: histories for algo, histories in runs.items()}


def _run_in_turn(kind: RunKind, args: argparse.Namespace, algos: list[str], seeds: list[int]):
    """One run after the other, here; with ``--out DIR`` each kept in DIR/ALGO_seedN (refused before anything
    loads when one exists, without ``--overwrite``)."""
    folders: dict[tuple[str, int], Path] = {}
    if getattr(args, "out", None) is not None:
        from minirl.compare import refuse_taken

        folders = {(a, s): Path(args.out) / f"{a}_seed{s}" for a in algos for s in seeds}
        refuse_taken(folders.values(), args.overwrite)
    knobs = knob_changes(args.set)
    runs: dict[str, list[History]] = {}
    for algo in algos:
        for seed in seeds:
            folder = folders.get((algo, seed))
            if folder is None:
                built = kind.build(args, algo, seed, knobs=knobs, progress=not args.no_progress)
                history = kind.train(built.config, built.policy, None)
            else:  # kept with the `minirl train` command that resumes it
                one = argparse.Namespace(**{**vars(args), "algo": algo, "seed": seed})
                run, built = kept_run(kind, one, folder, resuming=False, knobs=knobs)
                history = kind.train(built.config, built.policy, run)
            runs.setdefault(algo, []).append(history)
            print(kind.summary(args, algo, history), flush=True)
    return runs


def kept_run(
    kind: RunKind,
    args: argparse.Namespace,
    folder: Path,
    *,
    resuming: bool,
    knobs: dict,
    command: list[str] | None = None,
):
    """(the RunFolder, the ``Built`` run) of one run kept in ``folder``: made new, or resumed from its
    checkpoint (a language model is not warm-started then: the checkpoint replaces its weights). config.json
    keeps ``command`` (the ``minirl train`` arguments; None: ``train_command``'s) and what the kind adds."""
    from minirl.runs import RunFolder

    built: Built = kind.build(
        args, args.algo, args.seed, knobs=knobs, progress=not args.no_progress, warm_start=not resuming
    )
    if command is None:
        command = train_command(built.config, args.algo, args)
    extra = {"command": command, **built.extra}
    keep = {"extra": extra, "save_every": args.save_every, "tensorboard": getattr(args, "tensorboard", False)}
    if resuming:
        return RunFolder.resume(folder, built.config, **keep), built
    return RunFolder.create(folder, built.config, overwrite=args.overwrite, **keep), built


def run_folders(
    args: argparse.Namespace, configs: dict[str, list], figure: str | None = None
) -> dict[tuple[str, int], str] | None:
    """``compare`` / ``ladder --out DIR``: a run folder per run under DIR (``minirl.compare.run_folders``), its
    config.json holding the run's own ``minirl train`` command, so ``minirl train --resume`` continues it, and
    ``figure`` (``"ladder"``: ``minirl plot`` draws the ladder's four panels)."""
    if getattr(args, "out", None) is None:
        return None
    from minirl.compare import run_folders as make_run_folders

    extras = {
        (algo, i): {"command": train_command(config, algo, args), **({"figure": figure} if figure else {})}
        for algo, group in configs.items()
        for i, config in enumerate(group)
    }
    return make_run_folders(configs, args.out, overwrite=args.overwrite, extras=extras)


def kept_message(args: argparse.Namespace, runs: dict[str, list[History]]) -> None:
    if getattr(args, "out", None) is not None:
        n = sum(len(hs) for hs in runs.values())
        print(f"kept {n} runs in {args.out}: minirl plot {args.out} --out curves.png", flush=True)


# ---- results records and figures ----------------------------------------------------------------------------


def start_record(args: argparse.Namespace, seeds: list[int], default_name: str):
    """A ``minirl.results.Record`` named by ``--save`` (or ``default_name``), started now; None without ``--save``."""
    from minirl.results import Record

    name = save_name(args.save, default_name)  # None exactly when args.save is None
    return Record(name, seeds=seeds) if name is not None else None


def save_runs(args: argparse.Namespace, record, runs: dict[str, list[History]]) -> None:
    """With ``--save``: every run's figures (``minirl.results.history_figures``) in a results file."""
    if record is None:
        return
    from minirl.results import history_figures

    record.figures.update(
        {
            "task": args.task,
            **kind_for(args.task).record(args),
            "runs": {label: [history_figures(h) for h in hs] for label, hs in runs.items()},
        }
    )
    record.save()


def save_figure(fig, path: str) -> None:
    import matplotlib.pyplot as plt

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"saved {path}")


def plot_runs(runs: dict[str, list[History]], task: str, path: str) -> None:
    """The figure of ``--task task``'s runs (its kind's), saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    save_figure(kind_for(task).figure(runs, task), path)

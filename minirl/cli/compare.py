"""``minirl compare``, ``minirl ladder`` and ``minirl plot``: runs over seeds, and their curves.

``compare`` trains every (algorithm, seed) of one ``--task`` (``minirl.cli.running.run_many``: its kind says how);
``ladder`` is the README's main job (``minirl.ladder``); ``plot`` draws kept runs' curves again.
"""

from __future__ import annotations

import argparse
import os

from minirl.cli.kinds import kind_for, run_summary
from minirl.cli.running import kept_message, plot_runs, run_folders, run_many, save_figure, save_runs, start_record

__all__ = ["cmd_compare", "cmd_ladder", "cmd_plot"]


def cmd_compare(args: argparse.Namespace) -> int:
    import time

    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    if args.seeds < 1:
        raise SystemExit("minirl: --seeds must be >= 1")
    start = time.perf_counter()
    record = start_record(args, list(range(args.seeds)), f"compare_{args.task}")
    runs = run_many(args, algos, list(range(args.seeds)))
    save_runs(args, record, runs)
    kept_message(args, runs)
    metric = kind_for(args.task).final_metric
    finals = ", ".join(f"{label} {sum(h.evals[-1][metric] for h in hs) / len(hs):.1%}" for label, hs in runs.items())
    print(
        f"compared {len(algos)} algorithms x {args.seeds} seeds on {args.task} in "
        f"{time.perf_counter() - start:.0f} s; mean final {metric}: {finals}"
    )
    if args.plot:
        plot_runs(runs, args.task, args.plot)
    return 0


def cmd_ladder(args: argparse.Namespace) -> int:
    import time

    import matplotlib

    matplotlib.use("Agg")
    from minirl.compare import run_all
    from minirl.ladder import LADDER_RUNGS, LADDER_SETTINGS, ladder_configs, ladder_summary, plot_ladder

    if args.seeds < 1:
        raise SystemExit("minirl: --seeds must be >= 1")
    settings = {**LADDER_SETTINGS, **({"steps": args.steps} if args.steps else {})}
    print(
        f"The ladder on sorting 3 numbers from 0..4: {len(LADDER_RUNGS)} rungs x {args.seeds} seeds, "
        f"{settings['steps']} steps of {settings['prompts_per_step']} prompts x {settings['group_size']} responses, "
        f"{args.workers or os.cpu_count()} process(es)",
        flush=True,
    )
    start = time.perf_counter()
    record = start_record(args, list(range(args.seeds)), "ladder")
    configs = ladder_configs(args.seeds, **settings)
    runs = run_all(
        configs,
        workers=args.workers,
        progress=not args.no_progress,
        on_done=lambda rung, h: print(run_summary("sorting", rung, h), flush=True),
        folders=run_folders(args, configs, figure="ladder"),
        save_every=args.save_every,
    )
    kept_message(args, runs)
    elapsed = time.perf_counter() - start
    print(
        f"\n{len(LADDER_RUNGS)} rungs x {args.seeds} seeds in {elapsed:.0f} s. What each knob "
        f"bought (mean ± std over seeds):\n{ladder_summary(runs)}"
    )
    if record is not None:
        from minirl.ladder import ladder_figures

        record.figures.update(
            {
                "settings": settings,
                "workers": args.workers or os.cpu_count(),
                "seconds": elapsed,
                **ladder_figures(runs),
            }
        )
        record.save()
    if args.plot:
        save_figure(plot_ladder(runs), args.plot)
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    """Curves over seeds, one per label, drawn again from kept runs (``minirl.runs.runs_figure``)."""
    import matplotlib

    matplotlib.use("Agg")
    from minirl.runs import load_runs, runs_figure

    runs, config = load_runs(args.runs)
    print(
        f"{sum(len(hs) for hs in runs.values())} runs: "
        + ", ".join(f"{label} ({len(hs)} seed{'s' if len(hs) != 1 else ''})" for label, hs in runs.items()),
        flush=True,
    )
    save_figure(runs_figure(runs, config), args.out)
    return 0

"""Run many training runs (algorithms × seeds), in parallel processes.

    runs = run_all({"naive": [cfg_seed0, cfg_seed1], "clipped": [...]}, workers=2)   # {label: [History]}

``run_all`` is what ``minirl compare``, ``minirl ladder`` and ``minirl bench`` share. Each run is seeded by its
own config, so a run gives the same History whichever process runs it and in whatever order. With ``out`` each
run is also kept in a run folder of its own (``minirl.runs``), ``out/<label>_seed<N>/``; with the equivalent
``minirl train`` command in its config.json (``minirl compare`` and ``ladder`` store one), ``minirl train
--resume out/<label>_seed<N>`` continues an interrupted run. The ladder demo that reads its lessons off such
runs is ``minirl.ladder``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context

from tqdm.auto import tqdm

from minirl.history import History

__all__ = ["refuse_taken", "run_all", "run_folders", "run_one_config"]


def run_one_config(config, folder: str | None = None, save_every: int = 0) -> History:
    """Train one run (a ``TrainConfig`` or a ``MazeTrainConfig``: each trains itself, ``config.run_training``);
    its History. ``folder``: a run folder ``run_folders`` made, which the run fills (metrics, evaluations, model,
    curves), checkpointing every ``save_every`` steps (0: only on Ctrl-C)."""
    from minirl.hooks import RunHooks
    from minirl.runs import RunFolder

    return config.run_training(RunFolder(folder, save_every) if folder is not None else RunHooks())


def _one_thread_run(config, folder: str | None = None, save_every: int = 0) -> History:
    import torch

    torch.set_num_threads(1)  # one process per core: torch's own threads would fight over the same cores
    return run_one_config(config, folder, save_every)


def refuse_taken(paths: Iterable[str | os.PathLike], overwrite: bool) -> None:
    """``--out``: a run folder that exists and is not empty is refused (before anything trains), unless
    ``overwrite``."""
    from minirl.runs import RunError

    taken = [p for p in paths if os.path.isdir(p) and os.listdir(p)]
    if taken and not overwrite:
        raise RunError(f"out: run folder {taken[0]} exists: replace it with --overwrite, or choose another --out")


def run_folders(
    configs: Mapping[str, Sequence],
    out: str | os.PathLike,
    *,
    overwrite: bool = False,
    extras: Mapping[tuple[str, int], dict] | None = None,
) -> dict[tuple[str, int], str]:
    """A run folder per config under ``out`` (``out/<label>_seed<N>/``, made now with its config.json and
    env.json, so a folder that exists is refused before anything trains); ``{(label, i): path}``. ``extras``:
    what each run's config.json adds (``{(label, i): {"command": [...]}}``: the ``minirl train`` arguments
    that ``--resume`` rebuilds the run from)."""
    from minirl.runs import RunError, RunFolder

    folders: dict[tuple[str, int], str] = {}
    for label, group in configs.items():
        for i, config in enumerate(group):
            path = os.path.join(out, f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', label).strip('_')}_seed{config.seed}")
            if path in folders.values():
                raise RunError(f"out: two runs would share the run folder {path}: give each seed once per label")
            folders[label, i] = path
    refuse_taken(folders.values(), overwrite)
    for (label, i), path in folders.items():
        RunFolder.create(path, configs[label][i], overwrite=overwrite, extra=(extras or {}).get((label, i)))
    return folders


def run_all(
    configs: Mapping[str, Sequence],
    workers: int = 1,
    on_done: Callable[[str, History], None] | None = None,
    progress: bool = True,
    folders: Mapping[tuple[str, int], str] | None = None,
    save_every: int = 0,
) -> dict[str, list[History]]:
    """Train every config; returns ``{label: [History, ...]}`` in the order given (one per config).

    ``workers``: processes training side by side (1 = here, one after the other; 0 = one per CPU core). Each
    run's seed is in its config, so the results do not depend on ``workers``. ``on_done(label, history)`` is
    called as each run finishes (in finishing order). A progress bar counts finished runs. ``folders``: the run
    folders of ``run_folders(configs, out)``, one per config, which the runs fill as they train, checkpointing
    every ``save_every`` steps (0: only on Ctrl-C).
    """
    folders = folders or {}
    if workers < 0:
        raise ValueError(f"workers must be >= 0 (0 = one per CPU core); got {workers}")
    jobs = [(label, i, config) for label, group in configs.items() for i, config in enumerate(group)]
    if not jobs:
        raise ValueError("configs is empty: pass {label: [config, ...]}")
    workers = min(workers or os.cpu_count() or 1, len(jobs))
    results: dict[tuple[str, int], History] = {}
    bar = tqdm(total=len(jobs), desc="runs", disable=not progress or workers == 1, leave=False)

    def finish(label: str, i: int, history: History) -> None:
        results[label, i] = history
        bar.update()
        if on_done is not None:
            on_done(label, history)

    if workers == 1:
        for label, i, config in jobs:
            finish(label, i, run_one_config(config, folders.get((label, i)), save_every))
    else:  # "spawn": a fresh interpreter per worker, safe whatever threads torch has started here
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            futures = {
                pool.submit(_one_thread_run, config, folders.get((label, i)), save_every): (label, i)
                for label, i, config in jobs
            }
            for future in as_completed(futures):
                finish(*futures[future], future.result())
    bar.close()
    return {label: [results[label, i] for i in range(len(group))] for label, group in configs.items()}

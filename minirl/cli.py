"""The ``minirl`` command: the ladder demo, one training run, a comparison over seeds, the benchmark.

    minirl ladder  --seeds 3 --plot reward_curves.png          # the main job: six rungs, one knob apart
    minirl train   --task sorting --algo grpo --steps 300 --seed 0 --plot grpo.png
    minirl train   --task sorting --algo clipped --set inner_epochs=8 --set clip_eps_low=0.1
    minirl compare --task sorting --algos naive,baselined,clipped,grpo --seeds 3 --plot curves.png
    minirl compare --task maze --algos reinforce,reinforce_baseline,ppo --seeds 3 --plot maze.png
    minirl compare --task variable_sorting --length 4 --algos grpo,dapo,dr_grpo --seeds 3 --plot lengths.png
    minirl train   --task text_sort --model smollm2-135m --algo grpo --steps 40 --plot smollm2.png
    minirl train   --task text_sort --model tiny --plot tiny_lm.png
    minirl bench   [--lm | --trl]

The training flags are generated from the config dataclasses (``TrainConfig`` for the sorting and text tasks,
``MazeTrainConfig`` for the maze), with their docstrings as help; a flag left out keeps the config's (or the
language-model recipe's) default. ``--set knob=value`` changes any ``AlgoConfig`` knob of the chosen algorithm.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from minirl.algorithms import ALGORITHMS, AlgoConfig
from minirl.history import History
from minirl.maze_rl import MAZE_ALGORITHMS, MazePolicy, MazeTrainConfig
from minirl.runs import MAZE_CLASS
from minirl.train import TrainConfig
from toy_envs.reasoning import FAMILIES, REASONING_REWARDS
from toy_envs.sorting import REWARDS, SortingTask
from toy_envs.variable_sorting import VARIABLE_REWARDS, VariableLengthSortingTask

if TYPE_CHECKING:
    from minirl.lm.recipes import LMRecipe

__all__ = ["build_parser", "main", "text_recipe", "text_train_flags", "train_command"]

TASKS = ("sorting", "variable_sorting", "maze", "text_sort", "text_add", "reasoning")
TEXT_TASK_NAMES = ("text_sort", "text_add", "reasoning")
# fields with flags of their own (or none): the task, the algorithm, the seed, the progress bar, the device
TRAIN_FLAGS_EXCLUDED = {"task", "algo", "seed", "progress", "device"}
TEXT_PASS_K = {"pass_k": 8, "pass_k_prompts": 32}  # a text-task run's pass@k at each evaluation, unless --pass-k
MAZE_FLAGS_EXCLUDED = {"method", "seed", "layout", "progress"}


# ---- flags from dataclasses ---------------------------------------------------------------------------------


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
    convert = {"int": int, "float": float, "str": str}[base]

    def parse(text: str):
        if "None" in annotation and text.lower() == "none":
            return None
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {annotation}; got {text!r}") from None

    parse.__name__ = base
    return parse


def add_config_flags(parser, cls, excluded: set[str], seen: set[str]) -> None:
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


def _given(args: argparse.Namespace, cls, excluded: set[str]) -> dict:
    """The flags of ``cls``'s fields that were given on the command line."""
    return {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if f.name not in excluded and getattr(args, f.name, None) is not None
    }


def _knob_changes(pairs: list[str]) -> dict:
    """``--set knob=value`` pairs as AlgoConfig changes, each value parsed by the knob's type."""
    types = {f.name: str(f.type) for f in dataclasses.fields(AlgoConfig) if f.name != "name"}
    changes = {}
    for pair in pairs:
        knob, sep, value = pair.partition("=")
        if not sep or knob not in types:
            raise ValueError(f"--set expects knob=value with a knob of AlgoConfig {sorted(types)}; got {pair!r}")
        if types[knob].startswith("bool"):
            if value.lower() not in ("true", "false"):
                raise ValueError(f"--set {knob} expects true or false; got {value!r}")
            changes[knob] = value.lower() == "true"
        else:
            try:
                changes[knob] = _typed(types[knob])(value)
            except argparse.ArgumentTypeError as err:
                raise ValueError(f"--set {knob}: {err}") from None
    return changes


def _algorithm(name: str, changes: dict) -> AlgoConfig:
    """The preset with the ``--set`` changes; its label lists them (``clipped[inner_epochs=8]``)."""
    algo = ALGORITHMS[name]
    if not changes:
        return algo
    label = f"{name}[{','.join(f'{k}={v}' for k, v in changes.items())}]"
    return algo.with_(name=label, **changes)


# ---- building the runs ----------------------------------------------------------------------------------------


def _is_maze(task: str) -> bool:
    return task == "maze"


def _is_text(task: str) -> bool:
    return task in TEXT_TASK_NAMES


def _make_task(args: argparse.Namespace) -> SortingTask | VariableLengthSortingTask:
    if args.task == "variable_sorting":
        if args.reward not in VARIABLE_REWARDS:
            raise SystemExit(
                f"minirl: --reward {args.reward} is not defined for variable_sorting; "
                f"choose from {list(VARIABLE_REWARDS)}"
            )
        return VariableLengthSortingTask(
            vocab_size=args.vocab_size, max_length=args.length, min_length=args.min_length, reward=args.reward
        )
    return SortingTask(vocab_size=args.vocab_size, length=args.length, reward=args.reward)


def _check_flags(args: argparse.Namespace) -> None:
    """Flags that do not apply to the chosen task are an error, not silently ignored."""
    train_fields, maze_fields = ({f.name for f in dataclasses.fields(c)} for c in (TrainConfig, MazeTrainConfig))
    maze_only = set(_given(args, MazeTrainConfig, MAZE_FLAGS_EXCLUDED)) - train_fields
    train_only = set(_given(args, TrainConfig, TRAIN_FLAGS_EXCLUDED)) - maze_fields
    if _is_maze(args.task):
        if train_only or args.set:
            wrong = sorted(train_only) + (["set"] if args.set else [])
            raise SystemExit(
                f"minirl: {', '.join('--' + w.replace('_', '-') for w in wrong)} do(es) not apply to "
                f"--task maze (its knobs: {sorted(_given_names(MazeTrainConfig, MAZE_FLAGS_EXCLUDED))})"
            )
    elif maze_only:
        raise SystemExit(
            f"minirl: {', '.join('--' + w.replace('_', '-') for w in sorted(maze_only))} appl(ies) to --task maze only"
        )


def _given_names(cls, excluded: set[str]) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name not in excluded]


def _config(args: argparse.Namespace, algo: str, seed: int, progress: bool) -> TrainConfig | MazeTrainConfig:
    """The TrainConfig or MazeTrainConfig of one (algorithm, seed) on a toy task."""
    if _is_maze(args.task):
        return MazeTrainConfig(
            method=algo, seed=seed, progress=progress, **_given(args, MazeTrainConfig, MAZE_FLAGS_EXCLUDED)
        )
    return TrainConfig(
        task=_make_task(args),
        algo=_algorithm(algo, _knob_changes(args.set)),
        seed=seed,
        progress=progress,
        **_given(args, TrainConfig, TRAIN_FLAGS_EXCLUDED),
    )


def _label(config: TrainConfig | MazeTrainConfig) -> str:
    """A toy run's name: the maze's method, or the algorithm's name."""
    return config.method if isinstance(config, MazeTrainConfig) else config.algo.name


def run_summary(task: str, label: str, history: History) -> str:
    """One line for one finished toy run."""
    last, seconds = history.evals[-1], history.records[-1]["wall_time"]
    if _is_maze(task):
        return (
            f"{label:>18} seed {history.seed}: {int(history['episodes'][-1])} episodes in {seconds:5.1f} s, "
            f"mean return {history.last('reward', 10):.2f}, greedy success {last['greedy_success']:.0%}, "
            f"exact expected return {last['exact_return']:.2f}"
        )
    return (
        f"{label:>12} seed {history.seed}: {len(history)} steps in {seconds:5.1f} s, reward "
        f"{history.last('reward', 10):.2f}, greedy exact {last['greedy_exact']:.1%} on the evaluation prompts"
    )


def text_recipe(args: argparse.Namespace) -> LMRecipe:
    """The model's recipe (``minirl.lm.recipes.recipe_for``) with the command line's choices on top
    (``--set kl_coef=...`` replaces the recipe's KL coefficient, ``--trainable-layers all`` trains every block)."""
    from minirl.lm.recipes import model_kind, reasoning_recipe, recipe_for

    chosen = {
        "learning_rate": args.learning_rate,
        "steps": args.steps,
        "prompts_per_step": args.prompts_per_step,
        "group_size": args.group_size,
        "max_new_tokens": args.max_new_tokens,
        "sft_steps": args.sft_steps,
        "sft_learning_rate": args.sft_learning_rate,
        "few_shot": args.few_shot,
        "eval_prompts": args.eval_prompts,
        "eval_every": args.eval_every,
        "kl_coef": _knob_changes(args.set).get("kl_coef"),
    }
    changes = {k: v for k, v in chosen.items() if v is not None}
    if args.trainable_layers is not None:
        changes["trainable_layers"] = None if args.trainable_layers == "all" else args.trainable_layers
    if args.task == "reasoning":  # notebook 10's recipe for this device (README, "Reasoning")
        recipe = reasoning_recipe(model_kind(args.model, args.device), args.thinking)
    else:
        recipe = recipe_for(args.model, args.device)
    return recipe.with_(**changes)


def text_train_flags(args: argparse.Namespace) -> dict:
    """The ``TrainConfig`` fields a text-task run takes from the command line, over the recipe's: pass@k at each
    evaluation (``TEXT_PASS_K``) and the flags given."""
    return {**TEXT_PASS_K, **_given(args, TrainConfig, TRAIN_FLAGS_EXCLUDED)}


def _layers(text: str) -> int | str:
    """``--trainable-layers``: a positive int or ``all``."""
    if text == "all":
        return text
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of blocks or 'all'; got {text!r}")
    return n


def _make_text_task(args: argparse.Namespace, recipe: LMRecipe):
    """The text task of the command line, with the recipe's prompt (worked examples, system message) and its
    held-out answers."""
    if args.task == "text_sort":
        return recipe.task(n_numbers=args.length, max_value=args.max_value)
    if args.task == "reasoning":
        sizes = {"sum": {"n_numbers": args.length}, "add": {"digits": args.digits}}.get(args.family, {})
        return recipe.reasoning_task(args.family, args.thinking, reward=args.verifier, **sizes)
    return recipe.addition_task(digits=args.digits)


def _text_run(args: argparse.Namespace, algo: str, seed: int, *, warm_start: bool = True):
    """(recipe, policy, config) of a text-task run: the model loaded, warm-started (unless not ``warm_start``:
    a resumed run's checkpoint replaces the weights) and its TrainConfig."""
    import time

    recipe = text_recipe(args)
    task = _make_text_task(args, recipe)
    start = time.perf_counter()
    policy = recipe.policy(args.model, seed=seed, device=args.device)
    print(
        f"loaded {args.model} ({sum(p.numel() for p in policy.parameters()) / 1e6:.1f}M parameters) on "
        f"{policy.device} in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    sft = recipe.warm_start(policy, task, seed=seed, progress=not args.no_progress) if warm_start else None
    if sft is not None:
        print(f"SFT warm start: {recipe.sft_steps} steps, loss {sft.last('loss', 10):.3f} nats/token", flush=True)
    # every language-model run reports pass@k at its evaluations (README, "Diagnostics"), unless told otherwise
    given = text_train_flags(args)
    config = recipe.train_config(
        task, algo=recipe.algorithm(algo, **_knob_changes(args.set)), seed=seed, progress=not args.no_progress, **given
    )
    return recipe, policy, config


def _run_text(args: argparse.Namespace, algo: str, seed: int, folder: Path | None = None) -> tuple[History, str]:
    """One text-task run of ``compare``; kept in ``folder`` (a run folder, with the ``minirl train`` command that
    resumes it) when given."""
    from minirl.train import train

    if folder is None:
        _, policy, config = _text_run(args, algo, seed)
        _, history = train(config, policy)
    else:
        one = argparse.Namespace(**{**vars(args), "algo": algo, "seed": seed})
        run, config, policy = _kept_run(one, folder, False, _text_train_command(args, algo, seed))
        history = _train_any(config, policy, run)
    return history, _text_summary(args, algo, seed, history)


def _text_run_folders(args: argparse.Namespace, algos: list[str], seeds: list[int]) -> dict[tuple[str, int], Path]:
    """``compare --out DIR`` on a text task: ``{(algo, seed): DIR/ALGO_seedN}``, refused before anything loads
    when one exists (without ``--overwrite``)."""
    if getattr(args, "out", None) is None:
        return {}
    from minirl.compare import refuse_taken

    folders = {(a, s): Path(args.out) / f"{a}_seed{s}" for a in algos for s in seeds}
    refuse_taken(folders.values(), args.overwrite)
    return folders


COMPARE_ONLY = {"algos", "seeds", "out", "overwrite", "save", "plot", "workers", "save_every", "help"}


def _text_train_command(args: argparse.Namespace, algo: str, seed: int) -> list[str]:
    """The ``minirl train`` arguments of one text-task ``compare`` run: every flag ``train`` shares with
    ``compare`` that differs from its default, then the algorithm, the seed and ``--save-every``."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    argv = ["train"]
    for action in commands.choices["train"]._actions:
        if not action.option_strings or action.dest in COMPARE_ONLY or action.dest in ("algo", "seed"):
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
    keep = ["--save-every", str(args.save_every)] if args.save_every else []
    return [*argv, "--algo", algo, "--seed", str(seed), *keep]


def _text_summary(args: argparse.Namespace, algo: str, seed: int, history: History) -> str:
    first, last = history.evals[0], history.evals[-1]
    unseen = (
        f", unseen answers {first['unseen_greedy_exact']:.1%} -> {last['unseen_greedy_exact']:.1%}"
        if "unseen_greedy_exact" in last
        else ""
    )
    summary = (
        f"{algo:>12} seed {seed} on {args.model}: {len(history)} steps in {history['wall_time'][-1]:.0f} s "
        f"({history['gen_seconds'].mean():.1f} s generation + {history['update_seconds'].mean():.1f} s update "
        f"per step), reward {history.last('reward', 5):.2f}, held-out greedy accuracy "
        f"{first['greedy_exact']:.1%} -> {last['greedy_exact']:.1%}{unseen}, format "
        f"{first.get('greedy_format', float('nan')):.0%} -> {last.get('greedy_format', float('nan')):.0%}"
    )
    for key in sorted((k for k in last if k.startswith("pass@")), key=lambda k: int(k[5:])):  # pass@1 first
        summary += f", {key} {first[key]:.1%} -> {last[key]:.1%}"
    if "greedy_truncated" in last:
        summary += f", greedy replies cut by the budget {last['greedy_truncated']:.0%}"
    return summary


def _save(fig, path: str) -> None:
    import matplotlib.pyplot as plt

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"saved {path}")


def _plot(runs: dict[str, list[History]], task: str, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from minirl.plotting import training_figure

    _save(training_figure(runs, task, text=_is_text(task), maze=_is_maze(task)), path)


def _check_algos(task: str, algos: list[str]) -> None:
    known = list(MAZE_ALGORITHMS) if _is_maze(task) else sorted(ALGORITHMS)
    if _is_text(task):  # a text task has no per-position (process) reward
        known = [a for a in known if ALGORITHMS[a].advantage_level == "sequence"]
    unknown = [a for a in algos if a not in known]
    if unknown:
        raise SystemExit(f"minirl: unknown algorithm(s) {unknown} for --task {task}; choose from {known}")


def _run(args: argparse.Namespace, algos: list[str], seeds: list[int]) -> dict[str, list[History]]:
    """Every (algorithm, seed): a text task here, one after the other; a toy task through ``run_all``."""
    _check_algos(args.task, algos)
    _check_flags(args)
    if _is_text(args.task):
        folders = _text_run_folders(args, algos, seeds)
        runs: dict[str, list[History]] = {}
        for algo in algos:
            for seed in seeds:
                history, summary = _run_text(args, algo, seed, folders.get((algo, seed)))
                runs.setdefault(algo, []).append(history)
                print(summary, flush=True)
        return runs
    from minirl.compare import run_all

    workers = 1 if len(seeds) * len(algos) == 1 else args.workers
    # parallel runs' progress bars would interleave: then run_all shows one bar over the runs instead
    per_run_bar = not args.no_progress and workers == 1
    configs = {algo: [_config(args, algo, seed, per_run_bar) for seed in seeds] for algo in algos}
    labels = {algo: _label(group[0]) for algo, group in configs.items()}
    runs = run_all(
        configs,
        workers=workers,
        progress=not args.no_progress,
        on_done=lambda algo, h: print(run_summary(args.task, labels[algo], h), flush=True),
        folders=_run_folders(args, configs),
        save_every=getattr(args, "save_every", 0),
    )
    return {labels[algo]: histories for algo, histories in runs.items()}


def _run_folders(
    args: argparse.Namespace, configs: dict[str, list], figure: str | None = None
) -> dict[tuple[str, int], str] | None:
    """``compare`` / ``ladder --out DIR``: a run folder per run under DIR (``minirl.compare.run_folders``), its
    config.json holding the run's own ``minirl train`` command, so ``minirl train --resume`` continues it, and
    ``figure`` (``"ladder"``: ``minirl plot`` draws the ladder's four panels)."""
    if getattr(args, "out", None) is None:
        return None
    from minirl.compare import run_folders

    extras = {
        (algo, i): {"command": train_command(config, algo, args), **({"figure": figure} if figure else {})}
        for algo, group in configs.items()
        for i, config in enumerate(group)
    }
    return run_folders(configs, args.out, overwrite=args.overwrite, extras=extras)


def _task_flags(task: object) -> list[str]:
    """The ``--task`` flags that make ``task`` (``_make_task``'s inverse)."""
    if isinstance(task, VariableLengthSortingTask):
        shape = ["variable_sorting", "--length", task.max_length, "--min-length", task.min_length]
    elif isinstance(task, SortingTask):
        shape = ["sorting", "--length", task.length]
    else:
        raise ValueError(f"task: a run's train command makes sorting tasks only; got {type(task).__name__}")
    if not isinstance(task.reward, str):
        raise ValueError(f"task: a run's train command names its reward; got the callable {task.reward!r}")
    return [str(a) for a in ["--task", *shape, "--vocab-size", task.vocab_size, "--reward", task.reward]]


def _flag_value(name: str, value) -> list[str]:
    """``--name value`` of a TrainConfig field (``--name`` / ``--no-name`` for a bool, ``none`` for None)."""
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return [flag if value else "--no-" + flag[2:]]
    return [flag, "none" if value is None else str(value)]


def train_command(config: TrainConfig | MazeTrainConfig, algo: str, args: argparse.Namespace) -> list[str]:
    """The ``minirl train`` arguments of one ``compare`` / ``ladder`` run (``config``, preset ``algo`` with
    ``args.set``'s changes; or a maze run, method ``algo``): its task, algorithm, seed and every knob off its
    default, so the config that ``train --resume`` rebuilds from them equals ``config``; with ``args``'s
    ``--save-every`` and ``--no-progress``."""
    maze = isinstance(config, MazeTrainConfig)
    cls, excluded = (MazeTrainConfig, MAZE_FLAGS_EXCLUDED) if maze else (TrainConfig, TRAIN_FLAGS_EXCLUDED)
    defaults = cls()
    knobs = [
        flag
        for f in dataclasses.fields(cls)
        if f.name not in excluded and getattr(config, f.name) != getattr(defaults, f.name)
        for flag in _flag_value(f.name, getattr(config, f.name))
    ]
    task = ["--task", "maze"] if maze else _task_flags(config.task)
    sets = [flag for pair in getattr(args, "set", []) for flag in ("--set", pair)]
    keep = ["--save-every", str(args.save_every)] if args.save_every else []
    quiet = ["--no-progress"] if args.no_progress else []
    return [
        "train",
        *task,
        "--algo",
        algo,
        *sets,
        "--seed",
        str(config.seed),
        *knobs,
        *keep,
        *quiet,
    ]


def _kept(args: argparse.Namespace, runs: dict[str, list[History]]) -> None:
    if getattr(args, "out", None) is not None:
        n = sum(len(hs) for hs in runs.values())
        print(f"kept {n} runs in {args.out}: minirl plot {args.out} --out curves.png", flush=True)


def _save_runs(args: argparse.Namespace, record, runs: dict[str, list[History]]) -> None:
    """With ``--save``: every run's figures (``minirl.results.history_figures``) in a results file."""
    if record is None:
        return
    from minirl.results import history_figures

    record.figures.update(
        {
            "task": args.task,
            **({"model": args.model} if _is_text(args.task) else {}),
            "runs": {label: [history_figures(h) for h in hs] for label, hs in runs.items()},
        }
    )
    record.save()


def _record(args: argparse.Namespace, seeds: list[int], default_name: str):
    """A ``minirl.results.Record`` named by ``--save`` (or ``default_name``), started now; None without ``--save``."""
    from minirl.results import Record

    name = _save_name(args.save, default_name)  # None exactly when args.save is None
    return Record(name, seeds=seeds) if name is not None else None


# ---- the commands ---------------------------------------------------------------------------------------------


def cmd_train(args: argparse.Namespace) -> int:
    if args.out is not None or args.resume is not None:
        return _train_kept(args)
    if args.tensorboard:
        raise ValueError("tensorboard: --tensorboard logs into a run folder: give --out FOLDER (or --resume FOLDER)")
    what = Path(args.model).name if _is_text(args.task) else args.algo
    record = _record(args, [args.seed], f"train_{args.task}_{what}_seed{args.seed}")
    runs = _run(args, [args.algo], [args.seed])
    _save_runs(args, record, runs)
    if args.plot:
        _plot(runs, args.task, args.plot)
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

    what = Path(args.model).name if _is_text(args.task) else args.algo
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%SZ")
    return args, Path("runs") / f"{args.task}_{what}_seed{args.seed}_{when}"


def _train_kept(args: argparse.Namespace) -> int:
    """``train --out`` / ``--resume``: one run kept in a run folder (``minirl.runs``), here in this process.
    Ctrl-C while the model loads or warm-starts keeps nothing; after that, the run folder says what it holds."""
    resuming = args.resume is not None
    args, folder = _run_folder_args(args)
    _check_algos(args.task, [args.algo])
    _check_flags(args)
    run = None
    try:
        run, config, policy = _kept_run(args, folder, resuming, [a for a in args.argv if a != "--overwrite"])
        print(f"{'resuming' if resuming else 'keeping'} the run in {folder}", flush=True)
        history = _train_any(config, policy, run)
    except KeyboardInterrupt:
        if run is None:
            print("interrupted before training began: nothing was kept", file=sys.stderr, flush=True)
        elif not run.announced_interrupt:
            print(run.interrupted_message(), file=sys.stderr, flush=True)
        return 130
    label = _label(config)
    summary = (
        _text_summary(args, args.algo, args.seed, history)
        if _is_text(args.task)
        else run_summary(args.task, label, history)
    )
    print(summary, flush=True)
    use = f"minirl eval {folder}" + ("" if _is_maze(args.task) else f"; minirl generate {folder} PROMPT")
    print(f"kept in {folder}: {use}", flush=True)
    if args.plot:
        _plot({label: [history]}, args.task, args.plot)
    return 0


def _kept_run(args: argparse.Namespace, folder: Path, resuming: bool, command: list[str]):
    """(the RunFolder, the config, the policy or None) of ``train --out`` / ``--resume`` (``command``: the
    ``minirl train`` arguments config.json keeps): a text run's model loaded (and warm-started unless resuming:
    the checkpoint replaces its weights)."""
    from minirl.runs import RunFolder

    if _is_text(args.task):
        recipe, policy, config = _text_run(args, args.algo, args.seed, warm_start=not resuming)
        extra = {"command": command, "model": {"name": args.model, "recipe": dataclasses.asdict(recipe)}}
    else:
        policy, config = None, _config(args, args.algo, args.seed, not args.no_progress)
        extra = {"command": command}
    keep = {"extra": extra, "save_every": args.save_every, "tensorboard": getattr(args, "tensorboard", False)}
    if resuming:
        return RunFolder.resume(folder, config, **keep), config, policy
    return RunFolder.create(folder, config, overwrite=args.overwrite, **keep), config, policy


def _train_any(config: TrainConfig | MazeTrainConfig, policy, run) -> History:
    """``train`` (or for the maze ``train_maze``) of ``config`` into ``run``; the History."""
    if isinstance(config, MazeTrainConfig):
        from minirl.maze_rl import train_maze

        return train_maze(config, run=run)[2]
    from minirl.train import train

    return train(config, policy, run=run)[1]


def cmd_eval(args: argparse.Namespace) -> int:
    """Greedy accuracy and format rate of a run folder's trained model on its task's evaluation prompts (or
    another task's: ``--task``, ``--n-numbers``, ``--max-value``, ``--digits``), pass@k from
    ``--samples-per-prompt`` samples at T = 1, a text task's answer kinds, and a few answers."""
    from minirl.runs import RunFolder, load_run_policy
    from minirl.train import evaluate, evaluation_generator, evaluation_prompts

    run = RunFolder(args.run)
    config = run.config()
    if config["task"]["class"] == MAZE_CLASS:
        policy = load_run_policy(args.run)
        assert isinstance(policy, MazePolicy)
        return _eval_maze(args, run.task(), policy)
    task, changed = _eval_task(args, run.task())
    ks = _eval_ks(args.k, args.samples_per_prompt)
    policy = load_run_policy(args.run, device=args.device)
    assert not isinstance(policy, MazePolicy)  # a maze run went to _eval_maze above
    n = args.eval_prompts or config.get("eval_prompts", 1000)
    run_seed = config.get("seed", 0)
    if changed:
        print(f"task: {changed}")
    ev = evaluate(policy, task, n, evaluation_generator(run_seed), sampled=False)
    print(f"{args.run}: " + ", ".join(f"{k} {v:.1%}" for k, v in ev.items()) + f" on {n} evaluation prompts")
    prompts = evaluation_prompts(task, n, evaluation_generator(run_seed))
    _print_pass_at_k(policy, task, prompts, args.samples_per_prompt, ks, run_seed)
    greedy = policy.greedy(prompts).answers  # one greedy pass for the kinds and the answers shown
    if hasattr(task, "answer_kinds"):
        kinds = task.answer_kinds(prompts, greedy)
        print("  greedy answer kinds: " + "; ".join(f"{k} {v:.1%}" for k, v in kinds.items()))
    shown, answers = prompts[: args.samples], greedy[: args.samples]
    right = task.is_correct(shown, answers)
    for i in range(len(right)):
        print(f"  {_show(shown[i])!r} -> {_show(answers[i])!r} ({'right' if right[i].all() else 'wrong'})")
    return 0


def _eval_maze(args: argparse.Namespace, maze, policy: MazePolicy) -> int:
    """A maze run: the exact expected return (dynamic programming), the greedy route and whether it arrives."""
    from minirl.maze_rl import exact_return, greedy_route

    text_flags = [f for f in ("task", "n_numbers", "max_value", "digits") if getattr(args, f) is not None]
    if text_flags:
        raise ValueError(f"--{text_flags[0].replace('_', '-')} applies to a text run; {args.run} is a maze run")
    route = greedy_route(maze, policy)
    moves = " -> ".join(str(maze.cell_to_rc(c)) for c in route)
    print(
        f"{args.run}: exact expected return {exact_return(maze, policy):.3f} of {maze.goal_reward:g} "
        f"(dynamic programming, T = 1), greedy success {float(route[-1] == maze.goal):.0%}"
    )
    print(f"  greedy route (row, col): {moves}")
    return 0


EVAL_SAMPLING_SEED = 20_000
"""``minirl eval`` draws its pass@k samples with ``torch.Generator().manual_seed(EVAL_SAMPLING_SEED + run seed)``."""


def _print_pass_at_k(policy, task, prompts, n_samples: int, ks: list[int], seed: int) -> None:
    """One line: pass@k for each k, from ``n_samples`` samples per prompt at T = 1 (``sampled_pass_at_k``),
    drawn with the generator seeded ``EVAL_SAMPLING_SEED + seed`` (the run's seed)."""
    from minirl.pass_at_k import sampled_pass_at_k

    generator = torch.Generator().manual_seed(EVAL_SAMPLING_SEED + seed)
    scores = sampled_pass_at_k(policy, task, prompts, n_samples, ks, generator)
    print("  " + ", ".join(f"{k} {v:.1%}" for k, v in scores.items()) + f" ({n_samples} samples per prompt, T = 1)")


def _eval_ks(text: str | None, n_samples: int) -> list[int]:
    """The ks of ``--k`` (default: 1 and ``n_samples``), each in 1..n_samples."""
    if n_samples < 1:
        raise ValueError(f"--samples-per-prompt must be >= 1; got {n_samples}")
    if text is None:
        return sorted({1, n_samples})
    try:
        ks = [int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise ValueError(f"--k must be comma-separated integers such as 1,8; got {text!r}") from None
    bad = [k for k in ks if not 1 <= k <= n_samples]
    if not ks or bad:
        raise ValueError(f"--k must be integers in 1..--samples-per-prompt = {n_samples}; got {text!r}")
    return ks


def _eval_task(args: argparse.Namespace, task):
    """(the task to evaluate on, a description of the change or ""): the run's task, or a text task built with
    the run's prompt settings (worked examples, system message, held-out sets) and the flags' sizes."""
    from toy_envs.text_tasks import TextAdditionTask, TextSortTask

    sizes = {"n_numbers": args.n_numbers, "max_value": args.max_value, "digits": args.digits}
    given = {k: v for k, v in sizes.items() if v is not None}
    if args.task is None and not given:
        return task, ""
    if not isinstance(task, (TextSortTask, TextAdditionTask)):
        raise ValueError(
            f"--task, --n-numbers, --max-value and --digits apply to a text run (text_sort, text_add); "
            f"{args.run} is a {type(task).__name__} run"
        )
    for name, value in given.items():
        if value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1; got {value}")
    sort = args.task == "text_sort" if args.task is not None else "digits" not in given
    wrong = [k for k in given if (k == "digits") == sort]
    if wrong:
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in wrong)
        raise ValueError(
            f"{flags} does not apply to {'text_sort' if sort else 'text_add'}: --n-numbers and --max-value go "
            "with text_sort, --digits with text_add"
        )
    names = ("few_shot", "n_heldout", "format_weight", "seed", "system", "n_unseen_answers")
    prompt = {k: getattr(task, k) for k in names}
    if sort:
        sizes = {k: given.get(k, getattr(task, k, default)) for k, default in (("n_numbers", 3), ("max_value", 9))}
        new = TextSortTask(**sizes, **prompt)
        return new, f"text_sort, {new.n_numbers} numbers 0-{new.max_value} (the run's prompt settings)"
    new = TextAdditionTask(digits=given.get("digits", getattr(task, "digits", 2)), **prompt)
    return new, f"text_add, {new.digits}-digit numbers (the run's prompt settings)"


def _show(item) -> str:
    """A prompt or an answer as text: a text prompt's question, an answer's text, a toy answer's numbers."""
    if isinstance(item, torch.Tensor):
        return " ".join(str(int(t)) for t in item.flatten())
    if isinstance(item, (list, tuple)) and len(item) == 1:
        return _show(item[0])
    return str(getattr(item, "question", item))


def cmd_generate(args: argparse.Namespace) -> int:
    """A run folder's trained model answers a prompt (greedy): a question through the training chat template
    (its system message and worked examples), or for a toy run the prompt's numbers (``"3 1 2"``). Without a
    prompt: one answer per line typed, until an empty line or end of input."""
    from minirl.runs import RunFolder, load_run_policy
    from minirl.train import evaluation_prompts

    run = RunFolder(args.run)
    if run.config()["task"]["class"] == MAZE_CLASS:
        raise ValueError(f"{args.run} is a maze run: it answers no prompt; minirl eval {args.run} shows its route")
    task, policy = run.task(), load_run_policy(args.run, device=args.device)
    example = evaluation_prompts(task, 1, torch.Generator().manual_seed(0))
    if args.prompt is not None:
        print(_answer(policy, example, args.prompt))
        return 0
    print(f"{args.run}: type a prompt, an empty line (or Ctrl-D) ends", flush=True)
    while True:
        try:
            prompt = input("> ").strip()
        except EOFError:
            return 0
        if not prompt:
            return 0
        try:
            print(_answer(policy, example, prompt), flush=True)
        except ValueError as err:  # a malformed toy prompt: say so and go on
            print(f"error: {err}", flush=True)


def _answer(policy, example, prompt: str) -> str:
    """The greedy answer to ``prompt``, shaped like ``example`` (a toy run's prompt tensor, or a text prompt
    whose chat messages it replaces the question of)."""
    if not isinstance(example, torch.Tensor):
        messages = [*example[0].messages[:-1], {"role": "user", "content": prompt}]
        return policy.greedy([messages]).answers[0][0]
    try:
        numbers = [int(t) for t in prompt.replace(",", " ").split()]
    except ValueError:
        numbers = []
    if len(numbers) != example.shape[1]:
        raise ValueError(f"prompt must be {example.shape[1]} numbers for this toy run; got {prompt!r}")
    return _show(policy.greedy(torch.tensor([numbers])).answers[0])


def cmd_compare(args: argparse.Namespace) -> int:
    import time

    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    if args.seeds < 1:
        raise SystemExit("minirl: --seeds must be >= 1")
    start = time.perf_counter()
    record = _record(args, list(range(args.seeds)), f"compare_{args.task}")
    runs = _run(args, algos, list(range(args.seeds)))
    _save_runs(args, record, runs)
    _kept(args, runs)
    metric = "greedy_success" if _is_maze(args.task) else "greedy_exact"
    finals = ", ".join(f"{label} {sum(h.evals[-1][metric] for h in hs) / len(hs):.1%}" for label, hs in runs.items())
    print(
        f"compared {len(algos)} algorithms x {args.seeds} seeds on {args.task} in "
        f"{time.perf_counter() - start:.0f} s; mean final {metric}: {finals}"
    )
    if args.plot:
        _plot(runs, args.task, args.plot)
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
    record = _record(args, list(range(args.seeds)), "ladder")
    configs = ladder_configs(args.seeds, **settings)
    runs = run_all(
        configs,
        workers=args.workers,
        progress=not args.no_progress,
        on_done=lambda rung, h: print(run_summary("sorting", rung, h), flush=True),
        folders=_run_folders(args, configs, figure="ladder"),
        save_every=args.save_every,
    )
    _kept(args, runs)
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
        _save(plot_ladder(runs), args.plot)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.seeds < 1:
        raise SystemExit("minirl: --seeds must be >= 1")
    from minirl.bench import check_out

    check_out(args.out)
    if args.trl:
        from minirl.bench.trl import run_trl_benchmark

        save = _save_name(args.save, "bench_trl")
        return run_trl_benchmark(quick=args.quick, seeds=args.seeds, save=save, out=args.out)
    if args.lm:
        from minirl.bench.lm import run_lm_benchmark

        return run_lm_benchmark(
            quick=args.quick,
            seeds=args.seeds,
            minutes=args.minutes,
            save=_save_name(args.save, "bench_lm"),
            out=args.out,
            parts=tuple(args.parts.split(",")),
        )
    from minirl.bench.toy import run_benchmark

    return run_benchmark(quick=args.quick, seeds=args.seeds, save=_save_name(args.save, "bench"), out=args.out)


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
    _save(runs_figure(runs, config), args.out)
    return 0


def _save_name(flag: str | None, default: str) -> str | None:
    """``--save`` absent: None; ``--save`` alone: the command's default name; ``--save NAME``: NAME."""
    return None if flag is None else (flag or default)


def build_parser() -> argparse.ArgumentParser:  # noqa: PLR0915 (the parser table: pyproject.toml)
    parser = argparse.ArgumentParser(prog="minirl", description="Reinforcement learning for LLMs, from scratch.")
    sub = parser.add_subparsers(dest="command", required=True)

    def add_save(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--save",
            nargs="?",
            const="",
            default=None,
            metavar="NAME",
            help="keep the measured figures with their command, commit, machine and seeds in "
            "results/NAME.json (a path ending in .json also works; NAME defaults to the command's)",
        )

    def add_out_dir(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--out",
            default=None,
            metavar="FOLDER",
            help="keep each run in a run folder of its own, FOLDER/ALGO_seedN (minirl.runs); "
            "minirl plot FOLDER draws the curves again",
        )
        p.add_argument("--overwrite", action="store_true", help="with --out: replace run folders that exist")
        p.add_argument(
            "--save-every",
            type=int,
            default=0,
            metavar="N",
            help="with --out: checkpoint every run every N steps (0: on Ctrl-C only); "
            "minirl train --resume FOLDER/ALGO_seedN continues one",
        )

    def add_common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--task", choices=TASKS, default="sorting")
        p.add_argument("--plot", default=None, help="save reward curves to this PNG")
        p.add_argument("--no-progress", action="store_true", help="hide progress bars")
        p.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KNOB=VALUE",
            help="change a knob of the algorithm (an AlgoConfig field), e.g. --set inner_epochs=8 "
            "--set clip_eps_high=0.28; repeatable",
        )
        p.add_argument(
            "--workers",
            type=int,
            default=0,
            help="toy tasks: runs training side by side in separate processes (0 = one per CPU core)",
        )
        add_save(p)
        seen: set[str] = set()
        add_config_flags(
            p.add_argument_group("training (TrainConfig: sorting and text tasks)"),
            TrainConfig,
            TRAIN_FLAGS_EXCLUDED,
            seen,
        )
        add_config_flags(
            p.add_argument_group(
                "maze training (MazeTrainConfig; --steps, --learning-rate and --eval-every above apply too)"
            ),
            MazeTrainConfig,
            MAZE_FLAGS_EXCLUDED,
            seen,
        )
        g = p.add_argument_group("sorting tasks")
        g.add_argument("--vocab-size", type=int, default=5)
        g.add_argument("--length", type=int, default=3, help="prompt length (variable_sorting: the longest)")
        g.add_argument("--min-length", type=int, default=1, help="variable_sorting: the shortest prompt")
        g.add_argument("--reward", choices=sorted(REWARDS), default="sort_distance")
        t = p.add_argument_group("text tasks (a language model; defaults depend on --model)")
        t.add_argument(
            "--model",
            default="smollm2-135m",
            help="'smollm2-135m' (shipped, offline), 'tiny' (a small Llama built here), a local folder or a hub name",
        )
        t.add_argument("--max-value", type=int, default=9, help="text_sort: numbers are 0 .. max-value")
        t.add_argument("--digits", type=int, default=2, help="text_add, reasoning --family add: digits per operand")
        t.add_argument(
            "--family", choices=FAMILIES, default="sum", help="reasoning: sum (of --length digits), word, add"
        )
        t.add_argument(
            "--thinking",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="reasoning: a <think></think> scratchpad before the answer (default), or the answer only",
        )
        t.add_argument(
            "--verifier",
            choices=REASONING_REWARDS,
            default="strict",
            help="reasoning: the strict verifier (format part + right answer), 'answer' (the right answer in the "
            "asked form, no format part), or a hackable lenient one: 'substring' (the answer after </think> is a "
            "substring of the right one, empty included) or 'contains' (the right number anywhere)",
        )
        t.add_argument("--few-shot", type=int, default=None, help="worked examples in each prompt")
        t.add_argument("--max-new-tokens", type=int, default=None, help="response length budget (tokens)")
        t.add_argument("--sft-steps", type=int, default=None, help="supervised warm-start steps before RL")
        t.add_argument("--sft-learning-rate", type=float, default=None, help="the warm start's Adam step size")
        t.add_argument(
            "--trainable-layers", type=_layers, default=None, help="train only the top N transformer blocks, or 'all'"
        )
        t.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")

    p_train = sub.add_parser("train", help="train one algorithm with one seed")
    add_common(p_train)
    p_train.add_argument("--algo", default="grpo")
    p_train.add_argument("--seed", type=int, default=0)
    k = p_train.add_argument_group("keeping the run (minirl.runs)")
    k.add_argument(
        "--out",
        default=None,
        metavar="FOLDER",
        help="keep the run in FOLDER: config, metrics, checkpoints, curves, the trained model ('auto': "
        "runs/TASK_ALGO_seedN_UTCTIME); without it nothing is written",
    )
    k.add_argument("--resume", default=None, metavar="FOLDER", help="continue the run in FOLDER from its checkpoint")
    k.add_argument(
        "--save-every", type=int, default=0, metavar="N", help="checkpoint every N steps (0: on Ctrl-C only)"
    )
    k.add_argument("--overwrite", action="store_true", help="with --out: replace a run folder that exists")
    k.add_argument(
        "--tensorboard",
        action="store_true",
        help="also log every step's metrics to FOLDER/tensorboard (needs the tensorboard package): "
        "tensorboard --logdir FOLDER",
    )
    p_train.set_defaults(func=cmd_train)

    p_eval = sub.add_parser("eval", help="greedy accuracy of a kept run's model on its task's evaluation prompts")
    p_eval.add_argument("run", help="a run folder (minirl train --out)")
    p_eval.add_argument("--eval-prompts", type=int, default=None, help="how many (default: the run's)")
    p_eval.add_argument("--samples", type=int, default=3, help="answers to show")
    p_eval.add_argument(
        "--samples-per-prompt", type=int, default=8, help="samples per prompt at T = 1 for pass@k (default: 8)"
    )
    p_eval.add_argument(
        "--k", default=None, help="comma-separated ks of pass@k, each <= --samples-per-prompt (default: 1,N)"
    )
    p_eval.add_argument(
        "--task", choices=["text_sort", "text_add"], default=None, help="a text run: evaluate on this task instead"
    )
    p_eval.add_argument("--n-numbers", type=int, default=None, help="a text run: sort this many numbers")
    p_eval.add_argument("--max-value", type=int, default=None, help="a text run: numbers from 0 to this")
    p_eval.add_argument("--digits", type=int, default=None, help="a text run: add numbers of this many digits")
    p_eval.add_argument("--device", default=None)
    p_eval.set_defaults(func=cmd_eval)

    p_gen = sub.add_parser("generate", help="a kept run's model answers a prompt (or each prompt typed)")
    p_gen.add_argument("run", help="a run folder (minirl train --out)")
    p_gen.add_argument(
        "prompt",
        nargs="?",
        default=None,
        help="a question ('Sort in increasing order: 7, 2, 9'), or a toy prompt ('3 1 2'); none: type prompts, "
        "one per line",
    )
    p_gen.add_argument("--device", default=None)
    p_gen.set_defaults(func=cmd_generate)

    p_cmp = sub.add_parser("compare", help="train several algorithms over several seeds and plot reward curves")
    add_common(p_cmp)
    p_cmp.add_argument("--algos", default="naive,baselined,clipped,grpo", help="comma-separated algorithm names")
    p_cmp.add_argument("--seeds", type=int, default=3)
    add_out_dir(p_cmp)
    p_cmp.set_defaults(func=cmd_compare)

    p_ladder = sub.add_parser(
        "ladder",
        help="the main job: six rungs of the policy-gradient ladder, one knob apart, "
        "over seeds; prints what each knob bought and plots the curves",
    )
    p_ladder.add_argument("--seeds", type=int, default=3)
    p_ladder.add_argument("--steps", type=int, default=None, help="training steps per run (default: 600)")
    p_ladder.add_argument("--workers", type=int, default=0, help="processes side by side (0 = one per CPU core)")
    p_ladder.add_argument("--plot", default=None, help="save the four-panel figure to this PNG")
    p_ladder.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_save(p_ladder)
    add_out_dir(p_ladder)
    p_ladder.set_defaults(func=cmd_ladder)

    p_bench = sub.add_parser("bench", help="the acceptance benchmark: print a table of measured figures")
    p_bench.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1 of every measured run")
    p_bench.add_argument("--quick", action="store_true", help="a much shorter run (for smoke tests)")
    p_bench.add_argument(
        "--lm",
        action="store_true",
        help="the language-model benchmark: the tiny model's and SmolLM2's recipes over seeds",
    )
    p_bench.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="--lm: stop SmolLM2's training after this many minutes (default: the recipe's steps)",
    )
    p_bench.add_argument(
        "--parts",
        default="tiny,smollm2,reasoning",
        help="--lm: the parts to run, comma-separated (default all: tiny,smollm2,reasoning)",
    )
    add_save(p_bench)
    p_bench.add_argument(
        "--trl",
        action="store_true",
        help="minirl and TRL's GRPOTrainer side by side on the same run (needs the trl extra)",
    )
    p_bench.add_argument(
        "--out",
        default=None,
        metavar="FOLDER",
        help="keep every run in a run folder under FOLDER, and the results record as FOLDER/record.json "
        "(beside FOLDER/env.json), which names each run's folder",
    )
    p_bench.set_defaults(func=cmd_bench)

    p_plot = sub.add_parser("plot", help="draw curves over seeds again from kept runs, without training")
    p_plot.add_argument("runs", nargs="+", help="run folders, or folders of run folders (compare --out, ladder --out)")
    p_plot.add_argument("--out", default="curves.png", help="the PNG to write (default: curves.png)")
    p_plot.set_defaults(func=cmd_plot)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(argv) if argv is not None else sys.argv[1:]
    args = build_parser().parse_args(argv)
    args.argv = argv
    toy = not _is_text(getattr(args, "task", "")) and args.command not in ("eval", "generate", "plot")
    if toy and not getattr(args, "lm", False) and not getattr(args, "trl", False):
        torch.set_num_threads(1)  # the toy models are tiny: one thread is faster than two fighting over 2 cores
    try:
        return args.func(args)
    except ValueError as err:  # a bad value (the configs name the argument and the range): one line, exit 2
        if os.environ.get("MINIRL_DEBUG"):
            raise
        print(f"minirl {args.command}: error: {err} (MINIRL_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

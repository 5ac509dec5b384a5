"""The table of run kinds: what the command line needs to know about each kind of run, in one place.

``KINDS`` holds one ``RunKind`` per kind of run: the toy model on sorting (``sorting``, ``variable_sorting``), the
maze, a language model on a text task (``text_sort``, ``text_add``, ``reasoning``; its pieces in
``minirl.cli.text``). The commands look a run's kind up (``kind_for``: by ``--task``; ``kind_of_config``: by its
config; ``kind_of_run``: by a run folder's config.json) and ask the entry what to do, never which kind it is. A
new kind of run (a new config class, a new way to train) is one new entry.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from minirl.algorithms import ALGORITHMS, LM_ALGORITHMS
from minirl.cli.evaluation import evaluate_policy, generate_answers
from minirl.cli.flags import (
    MAZE_FLAGS_EXCLUDED,
    TRAIN_FLAGS_EXCLUDED,
    Built,
    config_flags,
    given_fields,
    keep_flags,
    with_knobs,
)
from minirl.cli.text import TEXT_TASKS, add_text_flags, build_text_run, model_name, text_command, text_summary
from minirl.history import History
from minirl.maze_policy import MazePolicy
from minirl.maze_rl import MAZE_ALGORITHMS, MAZE_CLASS, MazeTrainConfig
from minirl.train import TrainConfig
from toy_envs.calculator import CalculatorTask
from toy_envs.maze_text import TextMazeTask
from toy_envs.reasoning import ReasoningTask
from toy_envs.sorting import REWARDS, SortingTask
from toy_envs.text_tasks import TextAdditionTask, TextSortTask
from toy_envs.variable_sorting import VARIABLE_REWARDS, VariableLengthSortingTask

__all__ = ["KINDS", "TASKS", "RunKind", "check", "kind_for", "kind_of_config", "kind_of_run", "run_summary"]


@dataclasses.dataclass(frozen=True)
class RunKind:
    """One kind of run: each field says one thing the command line needs to know about it."""

    name: str  # "sorting", "maze", "text"
    tasks: tuple[str, ...]  # its --task names (TASKS: every kind's, in table order)
    task_classes: tuple[str, ...]  # its runs' task classes, as config.json names them ("module:Class")
    config_class: type  # TrainConfig, MazeTrainConfig: a --field-name flag per field (minirl.cli.flags)...
    excluded: frozenset[str]  # ...but these (they have flags of their own, or none)
    flag_title: str  # the help's heading of the config's flags
    add_flags: Callable[[argparse.ArgumentParser], None]  # its own flags (the task's shape, the model)
    algorithms: Callable[[], list[str]]  # the --algo names it takes
    takes_set: bool  # whether --set knob=value (an AlgoConfig knob) applies
    # (args, algo, seed, *, knobs, progress, warm_start): the run made from the flags (config, policy, extras)
    build: Callable[..., Built]
    train: Callable[[Any, Any, Any], History]  # (config, policy or None, run hooks or None): the History
    label: Callable[[Any], str]  # a run's name, from its config
    summary: Callable[[argparse.Namespace | None, str, History], str]  # (args, label, history): one line
    # (config, algo, args, build_parser): the `minirl train` arguments that rebuild the run, as config.json keeps
    # them for `train --resume` (called by minirl.cli.running.train_command, the one way to get them)
    command: Callable[[Any, str, argparse.Namespace, Callable[[], argparse.ArgumentParser]], list[str]]
    what: Callable[[argparse.Namespace], str]  # the algorithm or the model, in default names (--save, --out auto)
    record: Callable[[argparse.Namespace], dict]  # what a results record (--save) adds
    figure: Callable[[Mapping[str, list[History]], str], Any]  # (runs, task): the Figure of --plot
    final_metric: str  # the evaluation metric `compare` ends on
    evaluate: Callable[[argparse.Namespace, Any, dict], int]  # minirl eval: (args, RunFolder, config.json)
    generate: Callable[[argparse.Namespace, Any], int]  # minirl generate: (args, RunFolder)
    after_training: str  # what to run on a kept run, "{folder}" in it
    # tiny models: compare trains them side by side in processes (minirl.compare.run_all), one torch thread
    # each; else (a language model) one after the other, here, with torch's threads
    in_processes: bool


def _class_name(cls: type) -> str:
    """A task class as a run folder's config.json names it (``minirl.utils.describe_task``)."""
    return f"{cls.__module__}:{cls.__qualname__}"


def _train(config, policy, run) -> History:
    from minirl.train import train

    return train(config, policy, run=run)[1]


def _figure(**style: bool) -> Callable[[Mapping[str, list[History]], str], Any]:
    """``plotting.training_figure`` in the kind's style (``text``: a language model's panels; ``maze``)."""

    def figure(runs: Mapping[str, list[History]], task: str):
        from minirl.plotting import training_figure

        return training_figure(runs, task, **style)

    return figure


def _rebuilt_command(task: list[str], config, algo: str, args: argparse.Namespace, excluded) -> list[str]:
    """``minirl train`` arguments from a config: its task, algorithm, seed and every knob off its default, so
    the config that ``train --resume`` rebuilds from them equals ``config``; with ``args``'s ``--set`` changes,
    ``--save-every`` and ``--no-progress``."""
    sets = [flag for pair in getattr(args, "set", []) for flag in ("--set", pair)]
    quiet = ["--no-progress"] if args.no_progress else []
    knobs = config_flags(config, excluded)
    return ["train", *task, "--algo", algo, *sets, "--seed", str(config.seed), *knobs, *keep_flags(args), *quiet]


# ---- the toy model on sorting (sorting, variable_sorting) ------------------------------------------------------


def _sorting_task(args: argparse.Namespace) -> SortingTask:
    return SortingTask(vocab_size=args.vocab_size, length=args.length, reward=args.reward)


def _variable_sorting_task(args: argparse.Namespace) -> VariableLengthSortingTask:
    if args.reward not in VARIABLE_REWARDS:
        raise SystemExit(
            f"minirl: --reward {args.reward} is not defined for variable_sorting; choose from {list(VARIABLE_REWARDS)}"
        )
    return VariableLengthSortingTask(
        vocab_size=args.vocab_size, max_length=args.length, min_length=args.min_length, reward=args.reward
    )


SORTING_TASKS = {"sorting": _sorting_task, "variable_sorting": _variable_sorting_task}


def _add_sorting_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sorting tasks")
    g.add_argument("--vocab-size", type=int, default=5)
    g.add_argument("--length", type=int, default=3, help="prompt length (variable_sorting: the longest)")
    g.add_argument("--min-length", type=int, default=1, help="variable_sorting: the shortest prompt")
    g.add_argument("--reward", choices=sorted(REWARDS), default="sort_distance")


def _build_sorting(args: argparse.Namespace, algo: str, seed: int, *, knobs: dict, progress: bool, **_) -> Built:
    config = TrainConfig(
        task=SORTING_TASKS[args.task](args),
        algo=with_knobs(algo, knobs),
        seed=seed,
        progress=progress,
        **given_fields(args, TrainConfig, TRAIN_FLAGS_EXCLUDED),
    )
    return Built(config, None, {})


def _sorting_task_flags(task: object) -> list[str]:
    """The ``--task`` flags that make ``task`` (``SORTING_TASKS``'s inverse)."""
    if isinstance(task, VariableLengthSortingTask):
        shape = ["variable_sorting", "--length", task.max_length, "--min-length", task.min_length]
    elif isinstance(task, SortingTask):
        shape = ["sorting", "--length", task.length]
    else:
        raise ValueError(f"task: a run's train command makes sorting tasks only; got {type(task).__name__}")
    if not isinstance(task.reward, str):
        raise ValueError(f"task: a run's train command names its reward; got the callable {task.reward!r}")
    return [str(a) for a in ["--task", *shape, "--vocab-size", task.vocab_size, "--reward", task.reward]]


def _sorting_command(config, algo: str, args: argparse.Namespace, parser) -> list[str]:
    return _rebuilt_command(_sorting_task_flags(config.task), config, algo, args, TRAIN_FLAGS_EXCLUDED)


def _sorting_summary(args: argparse.Namespace | None, label: str, history: History) -> str:
    last, seconds = history.evals[-1], history.records[-1]["wall_time"]
    return (
        f"{label:>12} seed {history.seed}: {len(history)} steps in {seconds:5.1f} s, reward "
        f"{history.last('reward', 10):.2f}, greedy exact {last['greedy_exact']:.1%} on the evaluation prompts"
    )


# ---- the maze ----------------------------------------------------------------------------------------------------


def _build_maze(args: argparse.Namespace, algo: str, seed: int, *, progress: bool, **_) -> Built:
    config = MazeTrainConfig(
        method=algo, seed=seed, progress=progress, **given_fields(args, MazeTrainConfig, MAZE_FLAGS_EXCLUDED)
    )
    return Built(config, None, {})


def _train_maze(config, policy, run) -> History:
    from minirl.maze_rl import train_maze

    return train_maze(config, run=run)[2]


def _maze_command(config, algo: str, args: argparse.Namespace, parser) -> list[str]:
    return _rebuilt_command(["--task", "maze"], config, algo, args, MAZE_FLAGS_EXCLUDED)


def _maze_summary(args: argparse.Namespace | None, label: str, history: History) -> str:
    last, seconds = history.evals[-1], history.records[-1]["wall_time"]
    return (
        f"{label:>18} seed {history.seed}: {int(history['episodes'][-1])} episodes in {seconds:5.1f} s, "
        f"mean return {history.last('reward', 10):.2f}, greedy success {last['greedy_success']:.0%}, "
        f"exact expected return {last['exact_return']:.2f}"
    )


def _evaluate_maze(args: argparse.Namespace, run, config: dict) -> int:
    """A maze run: the exact expected return (dynamic programming), the greedy route and whether it arrives."""
    from minirl.maze_policy import exact_return, greedy_route
    from minirl.runs import load_run_policy

    policy = load_run_policy(args.run)
    assert isinstance(policy, MazePolicy)
    maze = run.task()
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


def _maze_answers_no_prompt(args: argparse.Namespace, run) -> int:
    raise ValueError(f"{args.run} is a maze run: it answers no prompt; minirl eval {args.run} shows its route")


# ---- the table ---------------------------------------------------------------------------------------------------

_ANSWERS = "minirl eval {folder}; minirl generate {folder} PROMPT"

KINDS: tuple[RunKind, ...] = (
    RunKind(
        name="sorting",
        tasks=tuple(SORTING_TASKS),
        task_classes=(_class_name(SortingTask), _class_name(VariableLengthSortingTask)),
        config_class=TrainConfig,
        excluded=TRAIN_FLAGS_EXCLUDED,
        flag_title="training (TrainConfig: sorting and text tasks)",
        add_flags=_add_sorting_flags,
        algorithms=lambda: sorted(ALGORITHMS),
        takes_set=True,
        build=_build_sorting,
        train=_train,
        label=lambda config: config.algo.name,
        summary=_sorting_summary,
        command=_sorting_command,
        what=lambda args: args.algo,
        record=lambda args: {},
        figure=_figure(),
        final_metric="greedy_exact",
        evaluate=evaluate_policy,
        generate=generate_answers,
        after_training=_ANSWERS,
        in_processes=True,
    ),
    RunKind(
        name="maze",
        tasks=("maze",),
        task_classes=(MAZE_CLASS,),
        config_class=MazeTrainConfig,
        excluded=MAZE_FLAGS_EXCLUDED,
        flag_title="maze training (MazeTrainConfig; --steps, --learning-rate and --eval-every above apply too)",
        add_flags=lambda p: None,
        algorithms=lambda: list(MAZE_ALGORITHMS),
        takes_set=False,
        build=_build_maze,
        train=_train_maze,
        label=lambda config: config.method,
        summary=_maze_summary,
        command=_maze_command,
        what=lambda args: args.algo,
        record=lambda args: {},
        figure=_figure(maze=True),
        final_metric="greedy_success",
        evaluate=_evaluate_maze,
        generate=_maze_answers_no_prompt,
        after_training="minirl eval {folder}",
        in_processes=True,
    ),
    RunKind(
        name="text",
        tasks=tuple(TEXT_TASKS),
        task_classes=tuple(
            map(_class_name, (TextSortTask, TextAdditionTask, ReasoningTask, TextMazeTask, CalculatorTask))
        ),
        config_class=TrainConfig,
        excluded=TRAIN_FLAGS_EXCLUDED,
        flag_title="training (TrainConfig: sorting and text tasks)",
        add_flags=add_text_flags,
        # a text task has no per-position (process) reward
        algorithms=lambda: (
            [a for a in sorted(ALGORITHMS) if ALGORITHMS[a].advantage_level == "sequence"] + sorted(LM_ALGORITHMS)
        ),  # and PPO's learned value, which reads a language model's hidden states
        takes_set=True,
        build=build_text_run,
        train=_train,
        label=lambda config: config.algo.name,
        summary=text_summary,
        command=text_command,
        what=model_name,
        record=lambda args: {"model": args.model},
        figure=_figure(text=True),
        final_metric="greedy_exact",
        evaluate=evaluate_policy,
        generate=generate_answers,
        after_training=_ANSWERS,
        in_processes=False,
    ),
)

TASKS: tuple[str, ...] = tuple(task for kind in KINDS for task in kind.tasks)
_BY_TASK = {task: kind for kind in KINDS for task in kind.tasks}


# ---- looking a kind up -------------------------------------------------------------------------------------------


def kind_for(task: str) -> RunKind:
    """The kind of a ``--task``."""
    return _BY_TASK[task]


def kind_of_config(config) -> RunKind:
    """The kind of a run's config: the kind of its config class whose tasks include its task's class (a task of
    no kind's: the first kind of its config class)."""
    kinds = [kind for kind in KINDS if isinstance(config, kind.config_class)]
    if not kinds:
        raise ValueError(f"config: no kind of run takes a {type(config).__name__}")
    task = getattr(config, "task", None)
    return next((k for k in kinds if task is not None and _class_name(type(task)) in k.task_classes), kinds[0])


def kind_of_run(config: dict) -> RunKind:
    """The kind of a kept run from its config.json: by its task's class (a task of no kind's: a language
    model's run when config.json names a model, else a toy run)."""
    task = config["task"]["class"]
    found = next((kind for kind in KINDS if task in kind.task_classes), None)
    return found or kind_for("text_sort" if "model" in config else "sorting")


def run_summary(task: str, label: str, history: History, args: argparse.Namespace | None = None) -> str:
    """One line for one finished run of ``--task task``."""
    return kind_for(task).summary(args, label, history)


# ---- the flags that do not apply ---------------------------------------------------------------------------------


def check(kind: RunKind, args: argparse.Namespace, algos: list[str]) -> None:
    """The algorithms must be the kind's; a flag of another kind's config (or ``--set`` where no knob applies)
    is an error, not silently ignored."""
    known = kind.algorithms()
    unknown = [a for a in algos if a not in known]
    if unknown:
        raise SystemExit(f"minirl: unknown algorithm(s) {unknown} for --task {args.task}; choose from {known}")
    own = {f.name for f in dataclasses.fields(kind.config_class)}
    owners: dict[str, list[RunKind]] = {}  # a flag given that is not the kind's: the kinds it belongs to
    for other in KINDS:
        for name in given_fields(args, other.config_class, other.excluded):
            if name not in own and other not in owners.get(name, []):
                owners.setdefault(name, []).append(other)
    wrong = sorted(owners) + (["set"] if args.set and not kind.takes_set else [])
    if not wrong:
        return
    flags = ", ".join("--" + w.replace("_", "-") for w in wrong)
    belong = {other.name: other for name in owners for other in owners[name]}
    if "set" not in wrong and len(belong) == 1:  # flags of one other kind only: name its tasks
        (other,) = belong.values()
        raise SystemExit(f"minirl: {flags} appl(ies) to --task {', '.join(other.tasks)} only")
    knobs = sorted(f.name for f in dataclasses.fields(kind.config_class) if f.name not in kind.excluded)
    raise SystemExit(f"minirl: {flags} do(es) not apply to --task {args.task} (its knobs: {knobs})")

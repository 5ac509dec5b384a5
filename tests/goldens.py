"""The golden files in tests/data: the seeded toy runs each one records, which metrics it keeps, and how it is
written. tests/test_train_policies.py compares the current loop with them; scripts/regenerate_goldens.py writes
them again from the current code (a deliberate act: see its docstring).

What they protect: a seeded toy run gives the same training curve, step for step, as the one recorded. Any change
to the algorithm moves these numbers by 1e-3 or more within a few steps; float32 rounding on another CPU moves
them by about 1e-6 (the test's tolerance says why).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from minirl import TrainConfig, train
from minirl.history import History
from toy_envs import SortingTask, VariableLengthSortingTask

DATA = Path(__file__).parent / "data"

CASES = {
    "grpo_3x5": dict(task=SortingTask(vocab_size=5, length=3), algo="grpo"),
    "naive_3x5": dict(task=SortingTask(vocab_size=5, length=3), algo="naive"),
    "clipped_3x5": dict(task=SortingTask(vocab_size=5, length=3), algo="clipped"),
    "gspo_4x6": dict(task=SortingTask(vocab_size=6, length=4), algo="gspo"),
    "process_3x5": dict(task=SortingTask(vocab_size=5, length=3), algo="grpo_process"),
    "dapo_var": dict(task=VariableLengthSortingTask(vocab_size=6, max_length=4), algo="dapo"),
    "drgrpo_var": dict(task=VariableLengthSortingTask(vocab_size=6, max_length=4), algo="dr_grpo"),
}

_EVAL_KEYS = ("step", "greedy_exact", "greedy_position_acc", "sampled_exact", "sampled_position_acc")


@dataclass(frozen=True)
class Golden:
    """One golden file: the cases it holds, the per-step and evaluation metrics it keeps, in the file's order (never
    the timings, which no two runs share; a metric added to the loop later joins a golden only when someone adds it
    here), and its JSON layout."""

    name: str
    protects: str
    cases: tuple[str, ...]
    record_keys: tuple[str, ...]
    eval_keys: tuple[str, ...]
    compact: bool  # separators "," and ":" (the first file was written so) rather than ", " and ": "

    @property
    def path(self) -> Path:
        return DATA / self.name


# Both files were last regenerated in commit 2ffed87 (its message says what moved): since then the fixed-length
# file holds the KL that its β = 0 runs (naive, clipped) measure to the initial policy.
GOLDENS = (
    Golden(
        "golden_toy_histories_fixed_length.json",
        "the fixed-length toy runs give the numbers of the toy-only loop (recorded at commit be307dd): generalising "
        "the loop to any Policy changed none of them",
        ("grpo_3x5", "naive_3x5", "clipped_3x5", "gspo_4x6", "process_3x5"),
        (
            "step",
            "reward",
            "exact_match",
            "loss",
            "kl",
            "clip_frac_low",
            "clip_frac_high",
            "ratio_mean",
            "ratio_max",
            "entropy",
            "grad_norm",
            "response_length",
        ),
        _EVAL_KEYS,
        compact=True,
    ),
    Golden(
        "golden_toy_histories_variable_length.json",
        "the variable-length toy runs, recorded once a response's entropy (and its entropy bonus) counted its real "
        "tokens only (commit 5a7afbd)",
        ("dapo_var", "drgrpo_var"),
        (
            "step",
            "samples",
            "reward",
            "exact_match",
            "kl",
            "kl_old",
            "loss",
            "clip_frac_low",
            "clip_frac_high",
            "ratio_mean",
            "ratio_max",
            "entropy",
            "grad_norm",
            "response_length",
            "zero_variance_groups",
        ),
        ("samples", *_EVAL_KEYS),
        compact=False,
    ),
)


def golden_of(case: str) -> Golden:
    """The golden file that holds a case."""
    return next(g for g in GOLDENS if case in g.cases)


def toy_history(case: str) -> History:
    """The seeded run of one case: 30 steps of 16 prompts x 8 responses, evaluated every 10 steps, seed 3."""
    return train(
        TrainConfig(
            steps=30,
            prompts_per_step=16,
            group_size=8,
            eval_every=10,
            eval_prompts=200,
            progress=False,
            seed=3,
            **CASES[case],
        )
    )[1]


def load(case: str) -> dict[str, list[dict[str, float]]]:
    """A case's recorded history: {"records": [...], "evals": [...]}, from the golden file that holds it."""
    return json.loads(golden_of(case).path.read_text())[case]


def record(golden: Golden, history: History) -> dict[str, list[dict[str, float]]]:
    """What a golden keeps of a run, in its own order of the metrics (a KeyError if the loop no longer logs one)."""
    return {
        "records": [{k: r[k] for k in golden.record_keys} for r in history.records],
        "evals": [{k: e[k] for k in golden.eval_keys} for e in history.evals],
    }


def render(golden: Golden, histories: dict[str, History]) -> str:
    """A golden file's text for the given runs of its cases."""
    data = {case: record(golden, histories[case]) for case in golden.cases}
    return json.dumps(data, separators=(",", ":") if golden.compact else None)

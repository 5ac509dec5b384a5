"""RESULTS.md's block on the notebooks: each one's time in fast mode (with where it was measured) and in full mode,
with the load beside it and the record that keeps its full-mode figures."""

from __future__ import annotations

from typing import Any

from minirl.report._format import _load, _seconds, pct, provenance, table
from minirl.results.notebooks import FAST_WHERE

NOTEBOOK_NAMES = {
    "01": "01_maze_and_expected_return",
    "02": "02_policy_gradient_on_the_maze",
    "03": "03_sorting_task_and_tiny_model",
    "04": "04_policy_gradient_ladder",
    "05": "05_grpo_and_its_variants",
    "06": "06_rewards_preferences_and_dpo",
    "07": "07_grpo_on_a_language_model",
    "08": "08_a_pretrained_model_learns_to_sort",
    "09": "09_scaling_up_with_trl",
    "10": "10_reasoning_and_reward_hacking",
    "11": "11_learning_from_your_own_samples",
    "12": "12_agents_multi_turn_rl",
}


def measured_on(where: dict[str, Any] | None) -> str:
    """A fast-mode row's provenance (``minirl.results.notebooks.measured_where``) in a few words."""
    if not where:
        return "not kept"
    speed = f", {where['gflops']:.0f} GFLOP/s" if where.get("gflops") else ""
    dirty = " + uncommitted changes" if where.get("dirty") else ""
    return f"{where.get('cpu')}{speed}; commit {str(where.get('commit'))[:7]}{dirty}, {str(where.get('date'))[:10]}"


def notebooks() -> str:
    fast = _load("notebooks_fast")
    where = (fast or {}).get("figures", {}).get(FAST_WHERE, {})
    rows = []
    for number, name in NOTEBOOK_NAMES.items():
        full = _load(f"notebook_{number}_full_cpu")
        fast_s = (fast or {}).get("figures", {}).get(name)
        load = (full or {}).get("load", {}).get("others_busy")
        rows.append(
            [
                f"`{name}`",
                _seconds(fast_s) if fast_s is not None else "not measured",
                measured_on(where.get(name)) if fast_s is not None else "",
                _seconds(full["duration_s"]) if full else "not measured",
                "n/a" if load is None else pct(load, 0),
                f"`results/notebook_{number}_full_cpu.json`" if full else "",
            ]
        )
    out = [
        table(
            [
                "notebook",
                "fast mode (`MINIRL_FAST=1`, as stored and tested)",
                "fast mode measured on (2 CPU cores)",
                "full mode, 2 CPU cores",
                "other jobs' share of the cores then",
                "full-mode figures",
            ],
            rows,
        ),
        "",
    ]
    if fast:
        out.append(
            "Fast mode: each row was measured where its column says; the record's last run: "
            + provenance(fast)
            + " Full mode: `python -m minirl.results notebook solutions/NN_*.ipynb`, "
            "one record per notebook (its machine and load are in the file)."
        )
    return "\n".join(out).rstrip()

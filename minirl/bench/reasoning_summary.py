"""``minirl.bench.reasoning_rl``'s figures over seeds: each arm's spread (``summarize``), the targets
(``check_targets``) and the printed table (``_report``). ``reasoning_rl`` re-exports them."""

from __future__ import annotations

from typing import Any

import torch

from minirl.bench import spread
from minirl.pass_at_k import pass_curve

__all__ = ["REPORT_ROWS", "SUMMARY_PATHS", "check_targets", "nested", "summarize"]


def nested(run: Any, path: tuple[str, ...]) -> Any:
    """``run[path[0]][path[1]]...``, or None where a key is missing (an arm that seed did not run)."""
    for key in path:
        if not isinstance(run, dict) or key not in run:
            return None
        run = run[key]
    return run


SUMMARY_PATHS: dict[str, tuple[str, ...]] = {
    "warm_sum3": ("warm", "sum3"),
    "warm_sum4": ("warm", "sum4"),
    "warm_seconds": ("warm", "seconds"),
    "thinking_sum3": ("thinking", "sum3"),
    "thinking_sum4": ("thinking", "sum4"),
    "thinking_seconds": ("thinking", "run", "train_seconds"),
    "control_sum3": ("control", "sum3"),
    "control_sum4": ("control", "sum4"),
    "control_seconds": ("control", "seconds"),
    "answer_warm_sum4": ("answer-only", "warm", "sum4"),
    "answer_sum3": ("answer-only", "sum3"),
    "answer_sum4": ("answer-only", "sum4"),
    "answer_seconds": ("answer-only", "run", "train_seconds"),
    "hack_strict": ("hack", "sum4"),
    "hack_proxy": ("hack", "proxy"),
    "honest_proxy": ("hack", "honest_proxy"),
    "hack_seconds": ("hack", "run", "train_seconds"),
    "fix_sum4": ("fix", "sum4"),
    "fix_seconds": ("fix", "run", "train_seconds"),
}
"""What ``summarize`` spreads over seeds: a name and its path in a seed's figures."""


def _pass_over_seeds(runs: list[dict[str, Any]], when: str) -> list[dict[str, float]] | None:
    """pass@k for k = 1 … n of each seed's counts (``before`` or ``after`` GRPO)."""
    curves = []
    for r in runs:
        counts = nested(r, ("thinking", "pass", when))
        if counts is None:
            return None
        curves.append(pass_curve(r["budgets"]["pass_samples"], torch.tensor(counts)))
    return curves


def summarize(runs: list[dict[str, Any]], base: dict[str, float]) -> dict[str, Any]:
    """Mean, standard deviation, min and max over seeds of each arm's figures (``SUMMARY_PATHS``), and of pass@k
    for every k before and after thinking GRPO."""
    out: dict[str, Any] = {"base": base}
    for name, path in SUMMARY_PATHS.items():
        values = [nested(r, path) for r in runs]
        if all(v is not None for v in values):
            out[name] = spread(values)
    for when in ("before", "after"):
        curves = _pass_over_seeds(runs, when)
        if curves is not None:
            out[f"pass_{when}"] = {k: spread([c[k] for c in curves]) for k in curves[0]}
    minutes = [nested(r, ("warm", "seconds")) or 0.0 for r in runs]
    if all(nested(r, ("thinking", "run", "train_seconds")) is not None for r in runs):
        minutes = [(w + r["thinking"]["run"]["train_seconds"]) / 60 for w, r in zip(minutes, runs)]
        out["warm_plus_grpo_minutes"] = spread(minutes)
    return out


def _points(x: float) -> float:
    """``x`` (a fraction) in percentage points, rounded to 1e-6: accuracies on 100 problems are whole points, and a
    gap of exactly 15 of them must meet a 15-point target whatever the float rounding (0.29 - 0.14 < 0.15)."""
    return round(100 * x, 6)


THINKING_TARGET_POINTS = 75
"""The thinking arm's target mean over seeds, in points (``check_targets``; the report times its first crossing)."""


def check_targets(summary: dict[str, Any]) -> dict[str, bool]:
    """The targets on the spread over seeds, for the arms that ran (see the module docstring)."""
    mean = {k: v["mean"] for k, v in summary.items() if isinstance(v, dict) and "mean" in v}
    targets = {}
    if "thinking_sum4" in mean:
        s = summary["thinking_sum4"]
        targets["thinking GRPO: 4-number mean >= 75%, std <= 8 points, warm start + GRPO <= 15 min"] = (
            _points(s["mean"]) >= THINKING_TARGET_POINTS
            and _points(s["std"]) <= 8
            and summary["warm_plus_grpo_minutes"]["max"] <= 15
        )
    if "thinking_sum4" in mean and "answer_sum4" in mean:
        gap = _points(mean["thinking_sum4"] - mean["answer_sum4"])
        targets["thinking >= 15 points over answer-only"] = gap >= 15
    if "hack_strict" in mean and "honest_proxy" in mean:
        targets["hacked: strict accuracy >= 20 points below the honest run's, proxy higher"] = (
            _points(mean["thinking_sum4"] - mean["hack_strict"]) >= 20 and mean["hack_proxy"] > mean["honest_proxy"]
        )
    if "fix_sum4" in mean and "thinking_sum4" in mean:
        gap = _points(mean["fix_sum4"] - mean["thinking_sum4"])
        targets["fixed verifier: within 10 points of the honest run"] = gap >= -10
    return targets


def _pct(s: dict[str, float] | None) -> str:
    return "—" if s is None else f"{s['mean']:.1%} ± {s['std']:.1%} ({s['min']:.0%}–{s['max']:.0%})"


def _seed_line(r: dict[str, Any]) -> str:
    """One seed's stages in one line."""
    w = r["warm"]
    parts = [f"seed {r['seed']}: warm start {w['steps']} steps {w['seconds']:.0f} s -> {w['sum4']:.0%};"]
    if "thinking" in r:
        t = r["thinking"]
        parts.append(f"GRPO {t['run']['steps']} steps {t['run']['train_seconds']:.0f} s -> {t['sum4']:.0%};")
    if "control" in r:
        parts.append(f"control {r['control']['steps']} SFT steps -> {r['control']['sum4']:.0%};")
    if "answer-only" in r:
        a = r["answer-only"]
        parts.append(f"answer-only {a['warm']['sum4']:.0%} -> {a['run']['steps']} steps -> {a['sum4']:.0%};")
    for arm in ("hack", "fix"):
        if arm in r:
            parts.append(f"{arm} ({r[arm]['reward']}) strict {r[arm]['sum4']:.0%}, proxy {r[arm]['proxy']:.0%};")
    return "  " + " ".join(parts)


REPORT_ROWS = {
    "warm start (worked 3-number sums)": "warm_sum4",
    "+ thinking GRPO": "thinking_sum4",
    "+ supervised steps instead (control)": "control_sum4",
    "answer-only warm start": "answer_warm_sum4",
    "+ answer-only GRPO": "answer_sum4",
    "hacked run, strict accuracy": "hack_strict",
    "hacked run, proxy reward": "hack_proxy",
    "honest run, proxy reward": "honest_proxy",
    "fixed verifier's run, strict accuracy": "fix_sum4",
}


def _report(runs: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    print(f"\nReasoning (notebook 10's arms), 4-number sums, greedy on held-out problems, {len(runs)} seed(s)")
    base = summary["base"]
    print(f"  base model: {base['think_sum4']:.1%} with a scratchpad, {base['answer_sum4']:.1%} answer only")
    print("\n".join(_seed_line(r) for r in runs))
    print("  mean ± std (min–max) over seeds:")
    for label, key in REPORT_ROWS.items():
        if key in summary:
            print(f"    {label:38} {_pct(summary[key])}")
    for when in ("before", "after"):
        curve = summary.get(f"pass_{when}")
        if curve:
            ks = [k for k in ("pass@1", "pass@8", "pass@64") if k in curve] or list(curve)[-1:]
            print(f"  pass@k {when} GRPO: " + ", ".join(f"{k} {curve[k]['mean']:.1%}" for k in ks))

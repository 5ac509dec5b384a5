"""RESULTS.md's blocks on the toy task and the maze: ``bench`` (``minirl bench``: the small and the large sorting
task, the maze, the ladder's time, the targets) and ``ladder`` (``minirl ladder``: each rung over seeds)."""

from __future__ import annotations

from minirl.report._format import _load, _seconds, missing, pct, provenance, table


def bench() -> str:
    data = _load("bench")
    if data is None:
        return missing("bench", "minirl bench --save")
    f = data["figures"]
    small = f["small"]
    out = [
        f"**1. Sorting 3 numbers from 5 values, GRPO** (target: ≥ 99% greedy exact within 15 s of training; "
        f"{small['budget_s']:.0f} s per seed):",
        "",
        table(
            ["seed", "steps in the budget", "time to first reach 99%", "final greedy exact"],
            [[seed, r["steps"], _seconds(r["seconds_to_99"]), pct(r["final"])] for seed, r in small["seeds"].items()],
        ),
    ]
    large = f["large"]
    ceiling = large["ceiling"]
    rows = [["supervised ceiling", pct(ceiling), " / ".join(pct(c) for c in large["ceilings"]), "100%"]]
    for algo, r in sorted(large["methods"].items(), key=lambda kv: -kv[1]["mean"]):
        rows.append(
            [
                f"`{algo}`",
                pct(r["mean"]),
                " / ".join(pct(v) for v in r["per_seed"]),
                pct(r["mean"] / ceiling, 0) if ceiling else "n/a",
            ]
        )
    out += [
        "",
        f"**2. Sorting 5 numbers from 10 values** ({large['budget_s']:.0f} s per run, seeds "
        f"{', '.join(str(s) for s in data['seeds'])}; the supervised ceiling trains the same model on the "
        f"sorted answer with as many updates as the best preset; target: the best preset ≥ 90% of the "
        f"ceiling):",
        "",
        table(["method", "greedy exact, mean", "per seed", "of the ceiling"], rows),
    ]
    maze_rows = []
    for method, seeds in f["maze"].items():
        solved = [r["episodes_to_solve"] for r in seeds.values()]
        known = [s for s in solved if s is not None]
        maze_rows.append(
            [
                f"`{method}`",
                " / ".join("never" if s is None else str(s) for s in solved),
                f"{sum(known) / len(known):.0f}" if known else "n/a",
                " / ".join(pct(r["greedy_success"], 0) for r in seeds.values()),
                " / ".join(f"{r['exact_return']:.2f}" for r in seeds.values()),
            ]
        )
    every = next(iter(next(iter(f["maze"].values())).values()))["eval_every_episodes"]
    out += [
        "",
        f"**3. Maze** (target: `reinforce_baseline` and `ppo` reach the goal greedily in ≥ 99% of "
        f"episodes). Episodes until the exact expected return of the greedy policy is ≥ 9.9 of 10, per seed "
        f"(evaluated every {every} episodes, so the counts are multiples of {every}):",
        "",
        table(["method", "episodes, per seed", "mean", "greedy success", "exact return"], maze_rows),
    ]
    if "ladder" in f:
        out += [
            "",
            f"**4. `minirl ladder`, 6 rungs × {len(data['seeds'])} seeds** (target: < 3 minutes): "
            f"{f['ladder']['seconds']:.0f} s, one process per core.",
        ]
    verdicts = ", ".join(f"{name}: {'met' if ok else '**not met**'}" for name, ok in f["targets"].items())
    return "\n".join(out + ["", f"Targets: {verdicts}.", "", provenance(data)])


def ladder() -> str:
    data = _load("ladder")
    if data is None:
        return missing("ladder", "minirl ladder --seeds 3 --save")
    f = data["figures"]
    s = f["settings"]
    rows = []
    for name, r in f["rungs"].items():
        verdict = r["verdict"] or ""
        rows.append(
            [
                name,
                f"`{r['knob'].split(': ', 1)[-1]}`",
                f"{pct(r['final_mean'])} ± {100 * r['final_std']:.1f}",
                pct(r["early_mean"]),
                pct(r["all_equal_end"], 0),
                verdict,
            ]
        )
    samples = next(iter(f["rungs"].values()))["samples"]
    head = (
        f"{len(f['rungs'])} rungs × {len(data['seeds'])} seeds on sorting 3 numbers from 0..4, {s['steps']} "
        f"steps of {s['prompts_per_step']} prompts × {s['group_size']} responses ({samples:,} responses per run), "
        f"{f['workers']} processes: {f['seconds']:.0f} s. Greedy accuracy on {s['eval_prompts']} evaluation "
        f"prompts, mean ± std over seeds (the task has only 125 distinct prompts, so these measure the policy, not "
        f"generalisation):"
    )
    out = [
        head,
        "",
        table(
            [
                "rung",
                "the knob it adds",
                "final",
                "after a tenth of the samples",
                "all-equal groups at the end",
                "verdict printed",
            ],
            rows,
        ),
    ]
    if f.get("remarks"):
        out += ["", " ".join(f["remarks"])]
    return "\n".join(out + ["", provenance(data)])

"""RESULTS.md's blocks on the reasoning benchmarks over seeds: notebook 10's arms (``reasoning_seeds``,
``minirl.bench.reasoning_rl``), its thinking and hack arms on a GPU (``reasoning_gpu``), and thinking against
answer-only on the other problem families (``reasoning_families``, ``minirl.bench.reasoning_families``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minirl.report._format import _load, _seconds, missing, pct, pm, provenance, table
from minirl.report.reasoning import _pass_ks
from minirl.results import summary_line


def _spread_cell(values: list[float]) -> str:
    """``70% ± 14 (61–85)``: mean ± std (points) and min–max over seeds; one value alone, none: empty."""
    from minirl.bench import spread

    if len(values) < 2:
        return pct(values[0], 0) if values else ""
    s = spread(values)
    return f"{pm(s, 0)} ({100 * s['min']:.0f}–{100 * s['max']:.0f})"


Arm = tuple[str, tuple[str, ...], tuple[str, ...] | None]
"""A row of a table over seeds: its label, the path to its value in a ``reasoning_rl`` run, the path to its steps."""

REASONING_ARMS: list[Arm] = [
    ("worked warm start (3-number sums)", ("warm", "sum4"), ("warm", "steps")),
    ("+ thinking GRPO on 4-number sums", ("thinking", "sum4"), ("thinking", "run", "steps")),
    ("+ supervised steps on 3-number sums instead (the control)", ("control", "sum4"), ("control", "steps")),
    ("bare-answer warm start (3-number sums)", ("answer-only", "warm", "sum4"), ("answer-only", "warm", "steps")),
    ("+ answer-only GRPO on 4-number sums", ("answer-only", "sum4"), ("answer-only", "run", "steps")),
]
"""Notebook 10's arms, each row: (label, accuracy, steps) as paths into a ``reasoning_rl`` run."""


def _arm_rows(runs: list[dict[str, Any]], arms: Sequence[Arm]) -> list[list[str]]:
    """A row per arm (label, accuracy, steps: paths into a ``reasoning_rl`` run; steps may be None): the accuracy
    of each run, with its steps in brackets, empty where the run lacks the arm; then mean ± std (min–max)."""
    from minirl.bench.reasoning_rl import nested

    rows = []
    for label, path, steps in arms:
        values = [nested(r, path) for r in runs]
        cells = [
            "" if v is None else pct(v, 0) + ("" if steps is None else f" ({nested(r, steps)} steps)")
            for r, v in zip(runs, values)
        ]
        rows.append([label, *cells, _spread_cell([v for v in values if v is not None])])
    return rows


def _verifier_arms(runs: list[dict[str, Any]]) -> list[Arm]:
    """The reward-hacking lab's rows: the hacked and the fixed verifier's runs."""
    hack = runs[0].get("hack", {}).get("reward", "substring")
    fix = runs[0].get("fix", {}).get("reward", "answer")
    return [
        (f"GRPO on the lenient `{hack}` verifier: strict accuracy", ("hack", "sum4"), ("hack", "run", "steps")),
        ("… its proxy reward", ("hack", "proxy"), None),
        ("… the proxy reward of the honest run's replies", ("hack", "honest_proxy"), None),
        (f"GRPO on the fixed `{fix}` verifier: strict accuracy", ("fix", "sum4"), ("fix", "run", "steps")),
    ]


def _reasoning_verdicts(summary: dict[str, Any]) -> str:
    """``minirl.bench.reasoning_rl``'s targets on a summary, each said with the figures it reads."""
    from minirl.bench.reasoning_rl import check_targets

    def mean(key: str) -> float:
        return summary[key]["mean"] if key in summary else float("nan")

    texts = {
        "thinking GRPO: 4-number mean >= 75%, std <= 8 points, warm start + GRPO <= 15 min": (
            "thinking GRPO at a mean of at least 75% with a standard deviation of at most 8 points, within 15 min "
            f"of warm start and GRPO ({pm(summary['thinking_sum4'], 0)}; the longest seed "
            f"{summary.get('warm_plus_grpo_minutes', {}).get('max', float('nan')):.1f} min)"
            if "thinking_sum4" in summary
            else ""
        ),
        "thinking >= 15 points over answer-only": "thinking at least 15 points over answer-only "
        f"({100 * (mean('thinking_sum4') - mean('answer_sum4')):+.0f})",
        "hacked: strict accuracy >= 20 points below the honest run's, proxy higher": "the hacked run's strict "
        "accuracy at least 20 points below the honest run's "
        f"({100 * (mean('hack_strict') - mean('thinking_sum4')):+.0f}) with a higher proxy reward "
        f"({100 * (mean('hack_proxy') - mean('honest_proxy')):+.0f})",
        "fixed verifier: within 10 points of the honest run": "the fixed verifier's run within 10 points of the "
        f"honest one ({100 * (mean('fix_sum4') - mean('thinking_sum4')):+.0f})",
    }
    targets = check_targets(summary)
    return "; ".join(f"{texts.get(name, name)}: {'met' if ok else '**not met**'}" for name, ok in targets.items())


def _pass_rows(summary: dict[str, Any], n_seeds: int) -> tuple[list[str], list[list[str]]]:
    """pass@k over seeds (mean ± std; one seed's alone) before and after thinking GRPO, at the powers of 2."""
    before, after = summary.get("pass_before", {}), summary.get("pass_after", {})
    ks = _pass_ks(list(before))

    def cell(s: dict[str, float]) -> str:
        return pm(s, 0) if n_seeds > 1 else pct(s["mean"], 0)

    rows = [
        [label, *(cell(curve[f"pass@{k}"]) for k in ks)]
        for label, curve in (("after the warm start", before), ("after thinking GRPO", after))
        if curve
    ]
    return [f"k = {k}" for k in ks], rows


def _newly_solved(runs: list[dict[str, Any]]) -> str:
    """Per seed: of the pass@k problems that none of the warm start's samples got right, how many at least one
    sample after thinking GRPO got right (the solved set growing, not only concentrating)."""
    from minirl.bench.reasoning_rl import nested

    cells = []
    for r in runs:
        before, after = nested(r, ("thinking", "pass", "before")), nested(r, ("thinking", "pass", "after"))
        if before is None or after is None:
            continue
        never = [i for i, c in enumerate(before) if c == 0]
        cells.append(f"seed {r['seed']}: {sum(after[i] > 0 for i in never)} of {len(never)}")
    if not cells:
        return ""
    return (
        "Of the problems none of the warm start's samples got right, at least one sample after GRPO got right: "
        + "; ".join(cells)
        + "."
    )


def _thinking_over_seeds(runs: list[dict[str, Any]], summary: dict[str, Any], budgets: Mapping[str, Any]) -> list[str]:
    """Under a table of ``reasoning_rl`` runs: pass@k before and after thinking GRPO (mean ± std over seeds), the
    problems GRPO newly solved, each seed's warm start + GRPO wall time, and the targets."""
    from minirl.bench.reasoning_rl import nested

    if not any(nested(r, ("thinking", "pass")) for r in runs):
        return []  # no thinking arm measured yet: nothing to say about it
    n = sum(nested(r, ("thinking", "pass")) is not None for r in runs)
    pass_header, pass_rows = _pass_rows(summary, n)
    times = ", ".join(
        f"seed {r['seed']} {_seconds(nested(r, ('warm', 'seconds')))} + "
        f"{_seconds(nested(r, ('thinking', 'run', 'train_seconds')))}"
        for r in runs
        if nested(r, ("thinking", "run", "train_seconds")) is not None
    )
    from minirl.bench.reasoning_summary import THINKING_TARGET_POINTS

    reached = _first_reaching(runs, THINKING_TARGET_POINTS / 100)
    return [
        f"pass@k on the first {budgets['pass_prompts']} held-out 4-number sums, {budgets['pass_samples']} samples "
        f"each at T = 1, {'mean ± std over seeds' if n > 1 else 'one seed'}:",
        "",
        table(["", *pass_header], pass_rows),
        "",
        _newly_solved(runs),
        "",
        f"Wall time, warm start + thinking GRPO: {times}. "
        + (f"{reached} " if reached else "")
        + f"{'Targets over these seeds' if n > 1 else 'Targets on this one seed (they are set over 3)'}: "
        f"{_reasoning_verdicts(summary)}.",
    ]


def _first_reaching(runs: list[dict[str, Any]], level: float) -> str:
    """Per seed, the first evaluation of thinking GRPO at or above ``level`` (greedy, held-out 4-number sums): its
    step and the run's wall time then (evaluations included), or that none did: how long the recipe needs, read
    off its own curve rather than its step budget."""
    from minirl.bench.reasoning_rl import nested

    cells = []
    for r in runs:
        evals = nested(r, ("thinking", "run", "evals"))
        if not evals:
            continue
        hit = next((e for e in evals if e["greedy_exact"] >= level), None)
        cells.append(
            f"seed {r['seed']} never in {int(evals[-1]['step'])} steps"
            if hit is None
            else f"seed {r['seed']} at step {int(hit['step'])} ({_seconds(hit['wall_time'])} of GRPO)"
        )
    if not cells:
        return ""
    return f"First evaluation at {pct(level, 0)} or more: {'; '.join(cells)}."


def reasoning_seeds() -> str:
    """Notebook 10's arms over seeds (``minirl.bench.reasoning_rl``, one command): each arm's held-out accuracy per
    seed with its steps, mean ± std and min–max; pass@k before and after GRPO; stage times; the targets."""

    data = _load("bench_reasoning")
    if data is None or "budgets" not in data["figures"]:
        return missing("bench_reasoning", "python -m minirl.bench.reasoning_rl --seeds 0 1 2 --save")
    f = data["figures"]
    runs, summary, budgets = f["runs"], f["summary"], f["budgets"]
    seeds = [r["seed"] for r in runs]
    base = f["base"]
    both = f"{pct(base['think_sum4'], 0)} with a scratchpad, {pct(base['answer_sum4'], 0)} answer only"
    rows = [["the base model (greedy: the same for every seed)", *([""] * len(runs)), both]]
    rows += _arm_rows(runs, [*REASONING_ARMS, *_verifier_arms(runs)])
    recipe = f["recipes"]["think"]  # reasoning_part keeps a recipe per form: "think" and "answer"
    return "\n".join(
        [
            *_seeds_table(runs, seeds, rows, recipe, budgets, _how_run(f)),
            *_thinking_over_seeds(runs, summary, budgets),
            "",
            *_sittings(data, runs),
            provenance(data),
        ]
    )


BENCH_SEEDS = (0, 1, 2)
"""The seeds the reasoning benchmark's command runs (RESULTS.md's command list)."""


def _not_yet(runs: list[dict[str, Any]]) -> str:
    """Which arms of which seeds the record lacks, and the command that measures them."""
    from minirl.bench.reasoning_rl import ARMS

    missing = [f"seed {r['seed']}: {', '.join(a for a in ARMS if a not in r)}" for r in runs if set(ARMS) - set(r)]
    missing += [f"seed {s}: every arm" for s in BENCH_SEEDS if s not in {r["seed"] for r in runs}]
    if not missing:
        return ""
    return (
        f"Not measured yet ({'; '.join(missing)}): `python -m minirl.bench.reasoning_rl --seeds 0 1 2 --save "
        "--resume` runs only what the record lacks."
    )


def _sittings(data: dict[str, Any], runs: list[dict[str, Any]], names: Sequence[str] | None = None) -> list[str]:
    """A record measured in several sittings (``--resume``): each one's commit and date, and the commit of each arm
    (of ``names``: notebook 10's arms unless given; an arm measured before arms kept their commit says so)."""
    earlier = data["figures"].get("earlier", [])
    if not earlier:
        return []
    if names is None:
        from minirl.bench.reasoning_rl import ARMS as names

    sittings = "; ".join(_sitting(e) for e in earlier)
    arms = "; ".join(
        f"seed {r['seed']} {arm} at " + (str(r[arm]["commit"])[:7] if "commit" in r[arm] else "the first sitting")
        for r in runs
        for arm in names
        if arm in r
    )
    return [
        f"Measured in {len(earlier) + 1} sittings with `--resume`: earlier ones at {sittings}; the last at "
        f"{_sitting(data)}; {arms}. A sitting's wall times scale with its machine's speed (the matrix-product "
        "calibration beside it) and with the share of the cores other jobs took.",
        "",
    ]


def _sitting(e: Mapping[str, Any]) -> str:
    """One sitting of a resumed record: its commit, day, processor, calibrated speed and the other jobs' load."""
    cal = (e.get("machine") or {}).get("calibration") or {}
    speed = f", {cal['gflops']:.0f} GFLOP/s" if "gflops" in cal else ""
    busy = (e.get("load") or {}).get("others_busy")
    load = f", other jobs {pct(busy, 0)}" if busy is not None else ""
    cpu = (e.get("machine") or {}).get("cpu")
    return f"commit {(e.get('commit') or '?')[:7]}, {(e.get('date') or '?')[:10]}" + (
        f" ({cpu}{speed}{load})" if cpu else ""
    )


def _seeds_table(runs, seeds, rows, recipe, budgets, how: str = "one command") -> list[str]:
    """The table of notebook 10's arms over seeds, under the sentence that says how each arm ran (``how``: the
    invocations, ``_how_run``)."""
    return [
        f"Notebook 10's arms over seeds {', '.join(map(str, seeds))}, {how}, every budget a number of steps "
        f"(`reasoning_recipe`: GRPO {recipe['steps']} steps of {recipe['prompts_per_step']} prompts × "
        f"{recipe['group_size']} replies at a constant learning rate {recipe['learning_rate']:g}, after a warm "
        f"start of {recipe['sft_steps']} steps of {recipe['sft_prompts_per_step']} worked 3-number sums; the "
        f"control {budgets['control_steps']} more supervised steps; answer-only {recipe['sft_steps']} bare-answer "
        f"steps, then {budgets['answer_steps']} GRPO steps). Held-out greedy accuracy on "
        f"{recipe['eval_prompts']} 4-number sums; in brackets the steps of each stage:",
        "",
        table(["4-number sums", *(f"seed {s}" for s in seeds), "mean ± std (min–max), points"], rows),
        "",
        *([_not_yet(runs), ""] if _not_yet(runs) else []),
    ]


GPU_RECIPE = ("bench_reasoning_gpu", "bench_reasoning_gpu_fix", "bench_reasoning_gpu_hack")
"""The GPU reasoning recipe's records (``scripts/gpu_check.sh``'s parts reasoning, fix and hack): thinking GRPO over
seeds, the fixed verifier's run and the hacked one."""


def reasoning_gpu_recipe() -> str:
    """The GPU reasoning recipe (``reasoning_recipe("pretrained-cuda")``) over seeds: the warm start and thinking
    GRPO on held-out 4-number sums per seed, mean ± std (min–max), pass@k before and after, wall times, the targets;
    then the fixed verifier's run where ``bench_reasoning_gpu_fix`` measured it."""
    data = _load(GPU_RECIPE[0])
    if data is None or "budgets" not in data["figures"]:
        return missing(GPU_RECIPE[0], "bash scripts/gpu_check.sh reasoning (on a GPU)")
    f = data["figures"]
    runs, summary, recipe = f["runs"], f["summary"], f["recipes"]["think"]
    lines = [
        f'The GPU reasoning recipe (`reasoning_recipe("pretrained-cuda")`) on one '
        f"{data['machine'].get('gpu', 'GPU')}, seeds {', '.join(str(r['seed']) for r in runs)}, {_how_run(f)}: a warm "
        f"start of {recipe['sft_steps']} steps of {recipe['sft_prompts_per_step']} worked 3-number sums, then GRPO "
        f"on 4-number sums for {recipe['steps']} steps of {recipe['prompts_per_step']} prompts × "
        f"{recipe['group_size']} replies sampled at T = {recipe['temperature']:g}, a constant learning rate "
        f"{recipe['learning_rate']:g}, the top {recipe['trainable_layers']} blocks training, KL β = "
        f"{recipe['kl_coef']:g} to the warm start. Held-out greedy accuracy on {recipe['eval_prompts']} "
        "4-number sums; in brackets the steps of each stage:",
        "",
        table(
            ["4-number sums", *(f"seed {r['seed']}" for r in runs), "mean ± std (min–max), points"],
            _arm_rows(runs, REASONING_ARMS[:2]),
        ),
        "",
        *_thinking_over_seeds(runs, summary, f["budgets"]),
        "",
        provenance(data),
        *(_side_line(side) for side in f.get("side_by_side", [])),
    ]
    lines += _gpu_lab_lines()
    return "\n".join(lines)


def _how_run(f: Mapping[str, Any]) -> str:
    """One command for every seed (its sittings, if resumed, are named under the table), or one process a seed side
    by side (``reasoning_rl --combine``)."""
    if f.get("side_by_side"):
        return "one process a seed, side by side on the same GPU (each wall time includes that sharing)"
    return "one command"


def _side_line(side: Mapping[str, Any]) -> str:
    """Where a side-by-side process's seeds were measured (its provenance, as ``resume.side_by_side`` kept it)."""
    seeds = ", ".join(str(s) for s in side.get("seeds", []))
    return f"*Seed(s) {seeds} in their own process: {summary_line(side)}.*"


def _gpu_lab_lines() -> list[str]:
    """The reward-hacking lab on the GPU recipe, where its records exist: the fixed verifier's run and the hacked
    one (strict accuracy, and the lenient verifier's proxy reward), each from the warm start of its seed."""
    out = []
    for name, arm in zip(GPU_RECIPE[1:], ("fix", "hack")):
        data = _load(name)
        if data is None:
            out += [
                "",
                f"The reward-hacking lab's {arm} arm on the GPU recipe: "
                + missing(name, f"bash scripts/gpu_check.sh {arm}"),
            ]
            continue
        cells = "; ".join(
            f"seed {r['seed']}: warm start {pct(r['warm']['sum4'], 0)} → {pct(r[arm]['sum4'], 0)} strict"
            + ("" if arm == "fix" else f", proxy reward {pct(r[arm]['proxy'], 0)}{_kinds_said(r[arm])}")
            + f" ({r[arm]['run']['steps']} steps, {_seconds(r[arm]['run']['train_seconds'])})"
            for r in data["figures"]["runs"]
            if arm in r
        )
        verifier = next(r[arm]["reward"] for r in data["figures"]["runs"] if arm in r)
        what = "fixed" if arm == "fix" else "lenient (hackable)"
        out += [
            "",
            f"The reward-hacking lab on the same recipe, GRPO on the {what} `{verifier}` verifier from the same warm "
            f"start: {cells}.",
            "",
            provenance(data),
        ]
    return out


def _kinds_said(arm: dict) -> str:
    """The hacked run's greedy replies by kind (``TextTask.answer_kinds``), the kinds it measured, largest first:
    what the policy learned instead of the answer."""
    kinds = sorted(((v, k) for k, v in arm.get("kinds", {}).items() if v > 0), reverse=True)
    return "; greedy replies: " + ", ".join(f"{k} {pct(v, 0)}" for v, k in kinds) if kinds else ""


REASONING_GPU = ("bench_reasoning_gpu_seed0", "bench_reasoning_gpu_seeds12")


def reasoning_gpu() -> str:
    """Notebook 10's thinking and hack arms on a GPU (``minirl.bench.reasoning_rl --arms thinking hack``, GRPO
    shortened to the records' ``rl_seconds``), per seed: the warm start and thinking GRPO on held-out 4-number sums,
    with their steps, and the hacked run's strict accuracy and proxy reward."""
    records = [d for d in map(_load, REASONING_GPU) if d is not None]
    if len(records) < len(REASONING_GPU):
        command = "python -m minirl.bench.reasoning_rl --seeds 0 --arms thinking hack --save bench_reasoning_gpu_seed0"
        return missing(REASONING_GPU[0], command + " (on a GPU; seeds 1 2 into bench_reasoning_gpu_seeds12)")
    settings = [d["figures"]["settings"] for d in records]
    if any(s != settings[0] for s in settings):
        return f"*The records {', '.join(REASONING_GPU)} were measured with different settings: measure again.*"
    runs = sorted((r for d in records for r in d["figures"]["runs"]), key=lambda r: r["seed"])
    verifier = settings[0]["hack_reward"]
    rows = _arm_rows(
        runs,
        [
            *REASONING_ARMS[:2],
            (f"hacked run (`{verifier}` verifier): strict accuracy", ("hack", "strict"), ("hack", "run", "steps")),
            ("hacked run: proxy reward", ("hack", "proxy"), None),
        ],
    )
    return "\n".join(
        [
            _reasoning_gpu_intro(settings[0], [r["seed"] for r in runs]),
            "",
            table(["4-number sums", *(f"seed {r['seed']}" for r in runs), "mean ± std (points)"], rows),
            "",
            *(provenance(d) for d in records),
        ]
    )


def _reasoning_gpu_intro(s: Mapping[str, Any], seeds: list[int]) -> str:
    """What ran: the GPU recipe's model settings with notebook 10's knobs, GRPO for ``rl_seconds`` an arm."""
    return (
        f"Notebook 10's thinking and hack arms on one GPU, seeds {', '.join(map(str, seeds))} "
        "(`minirl.bench.reasoning_rl --arms thinking hack`). The model is set up by the GPU recipe "
        '(`RECIPES["pretrained-cuda"]`: its prompt, every weight training) and trained with notebook 10\'s knobs '
        f"as they are (a warm start of {s['sft_steps']} steps of {s['sft_prompts']} worked 3-number sums at "
        f"learning rate {s['sft_learning_rate']:g}, then GRPO on 4-number sums, {s['prompts']} prompts × "
        f"{s['group']} replies a step at a constant learning rate {s['learning_rate']:g}), except that each GRPO "
        f"run trains for {_seconds(s['rl_seconds'])} instead of the 10 min the CPU benchmark of that commit gave it "
        "(the records' commands say so), and every prompt carries that commit's system message, "
        '"You sort numbers.". This is that untuned combination, not a GPU reasoning recipe. The hacked run trains '
        f"as long from the same warm start on the lenient `{s['hack_reward']}` verifier. Held-out greedy "
        f"accuracy on {s['n_eval']} problems; in brackets the steps each stage took; the proxy reward is the "
        "lenient verifier's on the hacked run's replies:"
    )


FAMILY_NAMES = {"word": "two-step word problems", "add": "addition", "sum": "sums of single digits"}
FAMILY_STAGES = {"base": "base model", "warm": "warm start", "rl": "+ GRPO"}


def _family_cell(form: Mapping[str, Any] | None, stage: str) -> str:
    """One form's accuracy at one stage of a ``reasoning_families`` run, with the stage's steps and time."""
    if form is None:
        return ""
    if stage == "base":
        return pct(form["base"]["exact"], 0)
    part, exact = (form["warm"], form["warm"]["exact"]) if stage == "warm" else (form["run"], form["exact"])
    return f"{pct(exact, 0)} ({part['steps']} steps, {_seconds(part.get('seconds', part.get('train_seconds')))})"


def reasoning_families() -> str:
    """Thinking vs answer-only GRPO on the word and addition families at equal wall time
    (``minirl.bench.reasoning_families``): each form's held-out accuracy at each stage, per seed, with the
    mean and the target on each family's mean."""
    from minirl.bench.reasoning_families import check_targets

    data = _load("bench_reasoning_families")
    if data is None:
        return missing("bench_reasoning_families", "python -m minirl.bench.reasoning_families --seeds 0 1 --save")
    f = data["figures"]
    s, runs, summary = f["settings"], f["runs"], f["summary"]
    seeds = sorted({r["seed"] for r in runs})
    rows = []
    for family in summary:
        family = str(family)
        name = FAMILY_NAMES.get(family, family) + (f" ({s['digits']} digits)" if family == "add" else "")
        mine = {r["seed"]: r for r in runs if r["family"] == family}
        for form in ("thinking", "answer-only"):
            for stage, label in FAMILY_STAGES.items():
                cells = [_family_cell(mine.get(seed, {}).get(form), stage) for seed in seeds]
                rows.append([name, f"{form}: {label}", *cells, pm(summary[family][f"{form}_{stage}"], 0)])
    met = check_targets(summary)
    gaps = ", ".join(
        f"{family} {100 * (v['thinking_rl']['mean'] - v['answer-only_rl']['mean']):+.0f} points "
        f"({'met' if met[f'{family}: thinking >= 15 points over answer-only'] else '**not met**'})"
        for family, v in summary.items()
    )
    return "\n".join(
        [
            f"Thinking against answer-only on the two other families, seeds {', '.join(map(str, seeds))}: each form "
            f"warm-starts from the base model (thinking: {s['sft_steps']} steps of {s['sft_prompts']} worked "
            "solutions; answer-only: bare answers for as long), then trains GRPO "
            f"({s['prompts']} prompts × {s['group']} replies, learning rate {s['learning_rate']:g}, constant) for "
            f"{_seconds(s['rl_seconds'])} (answer-only: as long as the thinking run took, evaluations included), "
            f"on problems of the size it is evaluated on. {s['n_eval']} held-out problems, greedy; in brackets the "
            "steps and wall time of each stage:",
            "",
            table(["family", "form: stage", *(f"seed {seed}" for seed in seeds), "mean ± std (points)"], rows),
            "",
            "Target: thinking GRPO at least 15 points above answer-only GRPO at equal wall time, on "
            f"each family's mean: {gaps}.",
            "",
            provenance(data),
        ]
    )

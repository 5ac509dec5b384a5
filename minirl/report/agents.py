"""RESULTS.md's block on the text maze walked by SmolLM2 (``minirl.bench.agents``, the chapter on agents): the base
model, the warm start against the uniform walker's exact success, and GRPO, from every start cell; on 2 CPU cores
(``bench_agents``, with a shorter RL stage ``bench_agents_cpu_steps10``, and the critic's fit by its knobs
``bench_critic_fit``) and on one GPU (``bench_agents_gpu``, with the warm-start lever probes
``bench_agents_gpu_warm*``); and the calculator (``minirl.bench.calculator``): accuracy and calls on easy and
hard products, before and after RL (``bench_calculator``, ``bench_calculator_gpu`` and its probes)."""

from __future__ import annotations

from typing import Any

from minirl.report._format import _load, _seconds, missing, pct, provenance, table

LEVER_PROBES = ("bench_agents_gpu_warm20", "bench_agents_gpu_warm80", "bench_agents_gpu_warm80_s64")
"""Records of the same benchmark with a changed recipe (each record's command and notes say how)."""

CPU_PROBES = (
    "bench_agents_cpu_steps10",
    "bench_agents_cpu_bf16_steps10",
    "bench_agents_cpu_bf16copy_steps10",
    "bench_agents_cpu_bf16copy_steps10_seed2",
)
"""Records on 2 CPU cores with a changed recipe: RL for 10 steps instead of 30 (its command says how), so that a
whole seed, both RL arms included, fits in a session on this CPU; all but the first also with ``cpu_bfloat16``
(``--cpu-bf16``; ``_bfloat16`` says what it did in each). The first two hold seed 0, the third seeds 0 and 1, the
last seed 2."""

CPU_RECIPE_GRPO = ("bench_agents_cpu_bf16_grpo30",)
"""Records on 2 CPU cores of the recipe's own RL stage (30 steps) for GRPO alone (``--algos grpo``), with
``cpu_bfloat16``; the first that also time the warm-started model's rollout."""


CPU_FASTER_ROLLOUT = ("bench_agents_cpu_bf16_gqa_steps10", "bench_agents_cpu_bf16_gqa_steps10_seed1")
"""The same 10-step probe with ``cpu_bfloat16`` (seed 0 with both RL arms, seed 1 with GRPO alone) after the
rollout's two changes of commit dce707b: the first turn runs each prompt once for its group of walks, and attention
on a CPU reads the grouped key/value heads without copying them (``minirl.lm.cpu_decode.grouped_kv_attention``)."""

CPU_INPLACE_ROLLOUT = ("bench_agents_cpu_bf16_inplace_steps10",)
"""The same 10-step probe with ``cpu_bfloat16``, GRPO alone, seeds 0 and 2, after the rollout's next two changes
(commit 9a7faa9): on a CPU the KV cache grows in place (``minirl.lm.cpu_decode.grow_in_place``) and tokens are drawn
by the inverse CDF (``minirl.lm.cpu_decode.inverse_cdf_sampling``)."""

CPU_CHOICES = ("bench_agents_cpu_bf16_choices_steps10",)
"""The same 10-step probe with ``cpu_bfloat16``, GRPO alone, seeds 1, 2 and 0, after the warm start began to
imitate the uniform walker's choices instead of its draws (commit 591db8c, ``LMRecipe.sft_targets = "choices"``)
and RL steps to score a step's walks group by group (``micro_batch_size = 1``)."""

CPU_RECIPE_PPO = (
    "bench_agents_cpu_bf16_ppo30",
    "bench_agents_cpu_bf16_ppo30_seed1",
    "bench_agents_cpu_bf16_ppo30_seed2",
)
"""Records on 2 CPU cores of the recipe's own RL stage (30 steps) for PPO with a critic alone (``--algos ppo``),
with ``cpu_bfloat16``, the warm start on the walker's choices and a step scored group by group, as
``CPU_CHOICES``: seed 0, then seed 1, then seed 2."""

CPU_RECIPE_GRPO_CHOICES = (
    "bench_agents_cpu_bf16_grpo30_choices",
    "bench_agents_cpu_bf16_grpo30_choices_seed1",
    "bench_agents_cpu_bf16_grpo30_choices_seed2",
)
"""The recipe's own RL stage (30 steps) for GRPO alone, as ``CPU_RECIPE_GRPO`` but after the warm start on the
walker's choices and with a step scored group by group, as ``CPU_RECIPE_PPO``: GRPO's side of that comparison,
seed 0, then seed 1, then seed 2."""

ROLLOUT_FORMATS = ("bench_agents_rollout_formats_zen3",)
"""``--rollout-formats`` records: the base model's timed rollout alone, in float32, by the bfloat16 copy, then in
float32 again, on a CPU whose bfloat16 arithmetic the record's machine names (``bfloat16_arithmetic``)."""

ARITHMETIC_WORDS = {
    "matrix units": "multiplies bfloat16 in matrix units (AMX)",
    "vector instructions": "multiplies bfloat16 in vector instructions (AVX-512 BF16), without matrix units",
    "none": "has no bfloat16 arithmetic (neither AMX nor AVX-512 BF16): torch emulates every bfloat16 product",
    "unknown": "may or may not multiply bfloat16 in hardware (torch could not tell)",
}
"""``minirl.lm.cpu_decode.cpu_bfloat16_arithmetic``'s answers, as the report says them."""

CRITIC_FITS = ("bench_critic_fit", "bench_critic_fit_lstsq")
"""``minirl.bench.critic_fit`` records: Adam's budget alone, then with the closed-form heads (``--cpu-bf16``)."""


AUTOCAST_ONLY = ("bench_agents_cpu_bf16_steps10",)
"""Records made while ``cpu_bfloat16`` generated under autocast too (commit 7de75b3), before generation took a
bfloat16 copy of the weights (``minirl.lm.cpu_decode.Bfloat16Copy``) and before records kept each run's
``generation`` (``CausalLMPolicy.generation_form``)."""


def _bfloat16(data: dict[str, Any]) -> str:
    """What ``cpu_bfloat16`` did in this record's run, for the recipe's sentence ("" when it was off): its runs'
    ``generation`` where the record keeps it, else ``AUTOCAST_ONLY`` and the copy for the records between."""
    if not data["figures"]["recipe"].get("cpu_bfloat16"):
        return ""
    if data["name"] in AUTOCAST_ONLY:
        return "; every forward pass under bfloat16 autocast on the CPU"
    forms = {r.get("generation", "bfloat16 copy") for r in data["figures"]["runs"]}
    if forms == {"bfloat16 autocast"}:  # on CUDA, where cpu_bfloat16 changes nothing
        return ""
    if forms != {"bfloat16 copy"}:
        raise ValueError(f"{data['name']}: cpu_bfloat16 on, but its runs generated as {sorted(forms)}")
    return "; on the CPU, generation by a bfloat16 copy of the weights and the loss's passes under bfloat16 autocast"


ARMS = {"grpo": "GRPO", "ppo": "PPO with a critic"}
"""The RL arms from the warm start, in the table's order."""


def _knobs(recipe: dict[str, Any]) -> str:
    """A probe's changes to the arms' algorithms (``LMRecipe.algo_knobs``) for the recipe's sentence ("" for none)."""
    knobs = recipe.get("algo_knobs") or []
    return "".join(f"; {algo.upper()}'s {knob} = {value} (a probe)" for algo, knob, value in knobs)


def _targets(recipe: dict[str, Any]) -> str:
    """What the warm start imitated, for the recipe's sentence ("" for the walks' own moves, as before the knob)."""
    choices = recipe.get("sft_targets") == "choices"
    return ", imitating every permitted move at each cell a walk visits," if choices else ""


def _rl_schedule(recipe: dict[str, Any]) -> str:
    """The RL arms' learning-rate schedule for the recipe's sentence ("" for the constant rate)."""
    return " decaying to 0 (cosine)" if recipe.get("lr_schedule") == "cosine" else ""


def _seeds(runs: list[dict[str, Any]]) -> str:
    """The seeds of a record's runs for its sentence: "seed 2", or "seeds 0, 1, 2"."""
    seeds = [str(r["seed"]) for r in runs]
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(seeds)


def _first_eval(arm: dict[str, Any], level: float) -> dict[str, Any] | None:
    """The first evaluation at which greedy success reached ``level`` of the start cells (None: never)."""
    return next((e for e in arm["run"]["evals"] if e["greedy_exact"] >= level), None)


def _first_step(arm: dict[str, Any], level: float) -> str:
    e = _first_eval(arm, level)
    return "never" if e is None else str(int(e["step"]))


def _arm(arm: dict[str, Any] | None, warm: dict[str, Any] | None = None) -> str:
    """An RL arm's cell: its steps and time, greedy / sampled success, and the evaluations that first reached 90%
    of the cells and every cell; with ``warm``, the warm start's time plus the arm's up to that evaluation (the
    issue's "within 10 minutes of training including the warm start", read at the evaluation)."""
    if arm is None:
        return "not measured"
    run, every = arm["run"], _first_eval(arm, 1.0)
    until = (
        f": {_seconds(warm['seconds'] + every['wall_time'])} with the warm start"
        if warm is not None and every is not None
        else ""
    )
    return (
        f"{run['steps']} steps, {_seconds(run['train_seconds'])}: {pct(arm['greedy_mean'], 0)} / "
        f"{pct(arm['sampled_mean'], 0)} (90% of cells at step {_first_step(arm, 0.9)}, all at "
        f"{_first_step(arm, 1.0)}{until})"
    )


def _seed_rows(runs: list[dict[str, Any]], arms: list[str]) -> list[list[str]]:
    rows = []
    for r in runs:
        base, warm = r.get("base"), r.get("warm")
        row = [str(r["seed"])]
        row.append(
            f"{pct(base['greedy_mean'], 0)} / {pct(base['sampled_mean'], 0)} (moves {pct(base['move_rate'], 0)})"
            if base
            else "not measured"
        )
        ro, warm_ro = r.get("rollout"), r.get("warm_rollout")
        rollout = f"{_seconds(ro['seconds'])} ({ro['model_tokens_per_second']:.0f} tokens/s)" if ro else "–"
        if warm_ro:  # records from 2026-11-29 on also time the warm-started model, what an RL step samples from
            rollout = (
                f"base model {rollout}; warm-started {_seconds(warm_ro['seconds'])} "
                f"({warm_ro['model_tokens_per_second']:.0f} tokens/s, {warm_ro['turns_mean']:.1f} turns an episode)"
            )
        row.append(rollout)
        noise = f", a uniform walker's own {warm['noise_gap_95']:.2f}" if warm and "noise_gap_95" in warm else ""
        row.append(
            f"{warm['steps']} steps, {_seconds(warm['seconds'])}: {pct(warm['sampled_mean'], 0)} "
            f"(largest gap {warm['max_gap_to_uniform']:.2f}{noise}; moves {pct(warm['move_rate'], 0)})"
            if warm
            else "not measured"
        )
        rows.append(row + [_arm(r.get(a), warm) for a in arms])
    return rows


def _against_uniform(runs: list[dict[str, Any]], stage: str, exact: str, measured: str) -> list[list[str]]:
    """Rows of a figure per start cell: the uniform walker's exact one (``runs[i][stage][exact]``), then each
    seed's measured one (``[stage][measured]``); none when no seed reached ``stage``."""
    done = [r for r in runs if stage in r]
    if not done:
        return []
    cells = list(done[0][stage][exact])
    rows = [["uniform walker (exact)", *(f"{done[0][stage][exact][c]:.2f}" for c in cells)]]
    rows += [[f"seed {r['seed']}", *(f"{r[stage][measured][c]:.2f}" for c in cells)] for r in done]
    return rows


def _one_record(data: dict[str, Any]) -> list[str]:
    f = data["figures"]
    recipe, budgets, runs = f["recipe"], f["budgets"], f["runs"]
    arms = list(f.get("algos", ["grpo"]))
    bf16 = _bfloat16(data)
    lines = [
        f"The maze recipe (`maze_recipe`: a warm start of {recipe['sft_steps']} steps of "
        f"{recipe['sft_prompts_per_step']} uniform walks{_targets(recipe)} at learning rate "
        f"{recipe['sft_learning_rate']:g}"
        f"{' decaying to 0 (cosine)' if recipe.get('sft_lr_schedule') == 'cosine' else ''}, then "
        f"{' and '.join(ARMS[a] for a in arms)} "
        f"for {recipe['steps']} steps of {recipe['prompts_per_step']} start cells × {recipe['group_size']} episodes "
        f"at learning rate {recipe['learning_rate']:g}{_rl_schedule(recipe)}, the top {recipe['trainable_layers']} "
        f"blocks training, KL β = {recipe['kl_coef']:g}{bf16}), {_seeds(runs)}. "
        f"Success from each of the 10 start cells (greedy / sampled at T = 1, {budgets['samples']} walks a cell; "
        f"mean over the cells); the rollout: {budgets['rollout_prompts'] * budgets['rollout_group']} six-turn "
        "episodes sampled once:",
        "",
        table(
            [
                "seed",
                "base model: greedy / sampled",
                "rollout",
                "warm start: sampled",
                *(f"{ARMS[a]}: greedy / sampled" for a in arms),
            ],
            _seed_rows(runs, arms),
        ),
    ]
    cells = _against_uniform(runs, "warm", "uniform", "sampled")  # the warm start's success per cell
    if cells:
        walks = budgets.get("warm_samples", budgets["samples"])
        lines += [
            "",
            f"After the warm start, sampled success from each start cell ({walks} walks a cell) against the uniform "
            "walker's:",
            "",
            table(["start cell", *(c for c in runs[0]["warm"]["uniform"])], cells),
        ]
    values = _against_uniform(runs, "values", "exact_uniform", "learned")  # the critic's value per cell
    if values:
        lines += [
            "",
            f"The critic's value of each start cell (a value head fitted on {budgets['value_fit_steps']} batches of "
            "the warm-started model's own walks, the model frozen) against the uniform walker's exact expected "
            "return there:",
            "",
            table(["start cell", *(c for c in runs[0]["values"]["exact_uniform"])], values),
        ]
    return [*lines, "", _provenance_and_notes(data)]


LEAST_SQUARES_LABELS = {
    "returns": "least squares on the walks' returns (closed form)",
    "exact": "least squares on the exact values at turn starts (closed form)",
}
"""How ``minirl.bench.critic_fit``'s closed-form heads are named in its table (``LEAST_SQUARES``)."""


def _critic_fit(data: dict[str, Any]) -> list[str]:
    """``minirl.bench.critic_fit``: the start values of heads fitted on the same walks under several knobs, and,
    where the record has them, the two closed-form heads and each head's error over every turn's state."""
    f = data["figures"]
    rows: list[list[str]] = []
    cells: list[str] = []
    turns = any("turn_error" in x for r in f["runs"] for x in r["fits"])
    closed = any(r.get("least_squares") for r in f["runs"])
    for r in f["runs"]:
        first = r["fits"][0]
        cells = list(first["exact_uniform"])
        if not rows:
            rows.append(["uniform walker (exact)", *(f"{first['exact_uniform'][c]:.2f}" for c in cells), "", ""])
            rows[-1] += [""] if turns else []
        heads = [
            (f"lr {x['value_learning_rate']:g} × {x['value_epochs']} a batch ({x['adam_steps']} Adam steps)", x)
            for x in r["fits"]
        ]
        heads += [(LEAST_SQUARES_LABELS[x["target"]], x) for x in r.get("least_squares", [])]
        for label, x in heads:
            rows.append(
                [
                    f"seed {r['seed']}: {label}",
                    *(f"{x['learned'][c]:.2f}" for c in cells),
                    f"{x['max_error']:.2f}",
                    f"{x['mean_error']:.2f}",
                ]
            )
            rows[-1] += [f"{x['turn_error']:.2f}"] if turns else []
    bf16 = (
        " (every pass under bfloat16 autocast, generation by a bfloat16 copy)"
        if f["recipe"].get("cpu_bfloat16")
        else ""
    )
    more = (
        " Two heads fitted in closed form on all the batches at once (ridge regression on the standardised "
        "features) bound what any linear head can do: one on the walks' own returns at every model token, one on the "
        "uniform walker's exact value of the state at the first model token of every turn."
        if closed
        else ""
    )
    over = (
        " The last column scores each head over every turn's state the walks visited: the mean absolute error "
        "against the exact value, at the first model token of each turn."
        if turns
        else ""
    )
    return [
        f"The critic before RL, by how hard it is fitted (`minirl.bench.critic_fit`): after the recipe's warm "
        f"start{bf16}, {f['steps']} batches of the model's own walks ({f['recipe']['prompts_per_step']} start cells × "
        f"{f['recipe']['group_size']} walks), sampled once; a fresh value head fitted on them batch by batch under "
        "each pair of value learning rate and Adam steps a batch (the first pair is the PPO preset's); its value of "
        f"each start cell against the uniform walker's exact expected return, and the largest and mean error.{more}"
        f"{over}",
        "",
        table(
            ["value head", *cells, "largest error", "mean error", *(["mean error over turns"] if turns else [])], rows
        ),
        "",
        _provenance_and_notes(data),
    ]


def _provenance_and_notes(data: dict[str, Any]) -> str:
    """The record's provenance line, then its ``notes`` when it has some (a run stopped before its last stages, a
    machine shared for a while)."""
    notes = f" {data['notes']}" if data.get("notes") else ""
    return provenance(data) + notes


def _rollout_formats(data: dict[str, Any]) -> list[str]:
    """A ``--rollout-formats`` record: each timed rollout in the order it ran, then its provenance."""
    arithmetic = data["machine"].get("bfloat16_arithmetic", "unknown")
    rows = [
        [
            run["seed"],
            i + 1,
            r["generation"],
            _seconds(r["seconds"]),
            f"{r['model_tokens_per_second']:.0f}",
            f"{r['model_tokens']:.0f}",
            f"{r['turns_mean']:.1f}",
        ]
        for run in data["figures"]["runs"]
        for i, r in enumerate(run["formats"])
    ]
    seeds, b = _seeds(data["figures"]["runs"]), data["figures"]["budgets"]
    return [
        f"The base model's rollout alone (`--rollout-formats`, {seeds}), {b['rollout_prompts'] * b['rollout_group']} "
        f"six-turn walks ({b['rollout_prompts']} start cells × {b['rollout_group']} walks at T = 1) sampled in each "
        "number format in turn, in one process: float32, then "
        "generation by a bfloat16 copy of the weights (what `--cpu-bf16` generates with), then float32 again. This "
        f"CPU {ARITHMETIC_WORDS[arithmetic]}.",
        "",
        table(
            ["seed", "run", "generation", "rollout", "model tokens/s", "model tokens", "turns an episode"],
            rows,
        ),
        "",
        _provenance_and_notes(data),
    ]


def _probes(names: tuple[str, ...], heading: str) -> list[str]:
    """Each stored record of ``names`` under ``heading``: the record keeps the recipe it ran, so ``_one_record``
    describes the change."""
    lines: list[str] = []
    for name in names:
        probe = _load(name)
        if probe is not None:
            lines += ["", f"{heading} (its recipe as the record keeps it; its command and commit below):", ""]
            lines += _one_record(probe)
    return lines


def agents() -> str:
    """The text maze on 2 CPU cores (or that it is not measured yet), then on one GPU with its lever probes."""
    lines: list[str] = []
    cpu = _load("bench_agents")
    if cpu is None:
        lines.append("On 2 CPU cores: " + missing("bench_agents", "python -m minirl.bench.agents --seeds 0 1 2 --save"))
    else:
        lines += ["On 2 CPU cores:", "", *_one_record(cpu)]
    lines += _probes(CPU_PROBES, "On 2 CPU cores, a shorter RL stage")
    lines += _probes(CPU_RECIPE_GRPO, "On 2 CPU cores, the recipe's RL stage for GRPO alone")
    lines += _probes(CPU_FASTER_ROLLOUT, "On 2 CPU cores, a shorter RL stage, with the faster rollout")
    lines += _probes(CPU_INPLACE_ROLLOUT, "On 2 CPU cores, a shorter RL stage, with the rollout's next two changes")
    lines += _probes(CPU_CHOICES, "On 2 CPU cores, a shorter RL stage, with the warm start on the walker's choices")
    lines += _probes(CPU_RECIPE_PPO, "On 2 CPU cores, the recipe's RL stage for PPO with a critic alone")
    lines += _probes(CPU_RECIPE_GRPO_CHOICES, "On 2 CPU cores, the recipe's RL stage for GRPO alone, as PPO's above")
    for name in ROLLOUT_FORMATS:
        formats = _load(name)
        if formats is not None:
            lines += ["", "On 2 CPU cores:", "", *_rollout_formats(formats)]
    for name in CRITIC_FITS:
        fit = _load(name)
        if fit is not None:
            gpu = fit["machine"].get("gpu")
            lines += ["", "On 2 CPU cores:" if gpu is None else f"On one {gpu}:", "", *_critic_fit(fit)]
    gpu = _load("bench_agents_gpu")
    if gpu is not None:
        lines += ["", f"On one {gpu['machine'].get('gpu', 'GPU')}, the same recipe:", "", *_one_record(gpu)]
    lines += _probes(LEVER_PROBES, "A lever probe on the same GPU")
    return "\n".join(lines)


CALCULATOR_PROBES = ("bench_calculator_gpu_probe", "bench_calculator_gpu_probe60", "bench_calculator_gpu_times_ten")
"""Calculator records with sampled call rates (each record's command says what changed; the last, the task's
default settings on a GPU, is ``scripts/gpu_check.sh calculator``'s)."""


CALCULATOR_CPU_PROBES = (
    "bench_calculator_probe",
    "bench_calculator_probe_seed1",
    "bench_calculator_probe_seed2",
    "bench_calculator_cpu_bf16_seed1",
    "bench_calculator_cpu_bf16_seeds02",
    "bench_calculator_cpu_bf16_ppo_lam1",
    "bench_calculator_cpu_bf16_grpo_centered",
    "bench_calculator_cpu_bf16_ppo_normalized",
    "bench_calculator_cpu_bf16_ppo_seed1",
    "bench_calculator_cpu_bf16_grpo_cosine",
    "bench_calculator_cpu_bf16_grpo_epyc",
    "bench_calculator_cpu_bf16_grpo_epyc_seeds12",
    "bench_calculator_cpu_bf16_grpo_steps45",
    "bench_calculator_cpu_bf16_grpo_steps45_seeds12",
)
"""Calculator records on 2 CPU cores (each record's command spells out the task's settings): seeds 0, 1 and 2 one
record each, then with ``cpu_bfloat16`` (``--cpu-bf16``) seed 1, seeds 0 and 2 in one record, a probe of PPO
with GAE's λ = 1 on seed 0 (``--knob ppo.lam=1.0``), GRPO without the division by the group's spread
(``--knob grpo.delta_mode=centered_rewards``) and PPO with GRPO's division of its rewards before GAE
(``--knob ppo.delta_mode=normalized_rewards``), seeds 0 to 2 each, plain PPO on seed 1, and GRPO on seed 0 with
its learning rate decaying to 0 (``--recipe lr_schedule=cosine``); then, on an AMD EPYC, GRPO as the recipe has it
and for 45 steps at the constant rate (``--steps 45``), each as seed 0 in one record and seeds 1 and 2 in the next."""


LEGACY_TASK = {"call_cost": 0.1, "easy": "one_digit", "demo_call_rate": 0.5}
"""``CalculatorTask``'s settings before the records kept them (``figures["task"]``) and before the easy kind became
``times_ten``: the GPU records of 2026-11-27."""


EASY_WORDS = {"one_digit": "one digit by one", "times_ten": "two digits times 10"}


def _calc_cell(m: dict[str, Any] | None) -> str:
    """Right / called on hard and easy problems: greedy, then sampled when the record has it."""
    if m is None:
        return "not measured"
    acc, calls = m["accuracy"], m["call_rate"]
    text = (
        f"right {pct(acc['tool'], 0)} / {pct(acc['head'], 0)}, calls {pct(calls['tool'], 0)} / {pct(calls['head'], 0)}"
    )
    if "sampled_accuracy" in m:
        s_acc, s_calls = m["sampled_accuracy"], m["sampled_call_rate"]
        text += (
            f"; sampled: right {pct(s_acc['tool'], 0)} / {pct(s_acc['head'], 0)}, calls {pct(s_calls['tool'], 0)} / "
            f"{pct(s_calls['head'], 0)}"
        )
    return text


def _calc_time(stage: str, m: dict[str, Any]) -> str:
    """The steps and wall time a stage trained (the base model trains none)."""
    if stage == "base":
        return "none"
    steps, seconds = (m["steps"], m["seconds"]) if stage == "warm" else (m["run"]["steps"], m["run"]["train_seconds"])
    return f"{steps} steps, {seconds / 60:.1f} min"


def _calculator_record(data: dict[str, Any]) -> list[str]:
    f = data["figures"]
    recipe, runs = f["recipe"], f["runs"]
    arms = list(f.get("algos", ARMS))
    stages = ["base", "warm", *arms]
    names = {"base": "base model", "warm": "warm start", **ARMS}
    rows = []
    for r in runs:
        for stage in stages:
            if stage in r:
                rows.append([str(r["seed"]), names[stage], _calc_time(stage, r[stage]), _calc_cell(r[stage])])
    task = f.get("task", LEGACY_TASK)
    return [
        f"The calculator recipe (`calculator_recipe`: a warm start of {recipe['sft_steps']} steps on a demonstrator "
        f"that calls on {pct(task['demo_call_rate'], 0)} of its episodes whatever the problem, then "
        f"{' and '.join(ARMS[a] for a in arms)} for {recipe['steps']} steps at learning rate "
        f"{recipe['learning_rate']:g}{_rl_schedule(recipe)}; a call costs {task['call_cost']:g}"
        f"{_knobs(recipe)}{_bfloat16(data)}), "
        f"{_seeds(runs)}; on the {recipe['eval_prompts']} evaluation problems, half "
        f"hard (two digits by two) and half easy ({EASY_WORDS[task['easy']]}), each figure hard / easy, greedy (and "
        "sampled at T = 1, 8 episodes a problem, where the record has it):",
        "",
        table(["seed", "stage", "training", "right and calls: hard / easy"], rows),
        "",
        _provenance_and_notes(data),
    ]


def calculator() -> str:
    """The calculator on 2 CPU cores (or that it is not measured yet), then on one GPU with its probes."""
    lines: list[str] = []
    cpu = _load("bench_calculator")
    if cpu is None:
        lines.append(
            "On 2 CPU cores: " + missing("bench_calculator", "python -m minirl.bench.calculator --seeds 0 1 2 --save")
        )
    else:
        lines += ["On 2 CPU cores:", "", *_calculator_record(cpu)]
    for name in CALCULATOR_CPU_PROBES:
        data = _load(name)
        if data is not None:
            lines += ["", "On 2 CPU cores, as its command says:", "", *_calculator_record(data)]
    for name in ("bench_calculator_gpu", *CALCULATOR_PROBES):
        data = _load(name)
        if data is not None:
            lines += [
                "",
                f"On one {data['machine'].get('gpu', 'GPU')}, as its command says:",
                "",
                *_calculator_record(data),
            ]
    return "\n".join(lines)

"""minirl.bench.agents: the text maze walked by SmolLM2 (base, warm start, GRPO), its targets and a quick run."""

import pytest
import torch

from minirl.bench.agents import QUICK_BUDGETS, check_targets, main, noise_gap
from minirl.results import Record, load

ROLLOUT = "64 six-turn episodes in <= 12 s"
WARM = "warm start: sampled success within 0.1 of the uniform walker's from every cell"
NOISE = "warm start: no gap to the uniform walker beyond its own sampling noise (95%)"
GRPO = "GRPO: greedy success >= 95% from every cell"
TIME = "warm start + GRPO <= 10 min"
UNTIL = "warm start + GRPO until greedy walks from every cell <= 10 min"
WARM_ROLLOUT = "64 episodes of the warm-started model in <= 12 s"


def _run(rollout_s=10.0, gap=0.05, worst=0.96, warm_s=60.0, grpo_s=400.0, noise=0.08, every_at=200.0, warm_ro=8.0):
    """A seed's figures; ``every_at``: the wall time of the first evaluation with every cell walked (None: none)."""
    evals = [{"step": 0, "greedy_exact": 0.2, "wall_time": 0.0}, {"step": 5, "greedy_exact": 0.9, "wall_time": 100.0}]
    if every_at is not None:
        evals += [{"step": 10, "greedy_exact": 1.0, "wall_time": every_at}]
    return {
        "rollout": {"seconds": rollout_s},
        "warm_rollout": {"seconds": warm_ro},
        "warm": {"max_gap_to_uniform": gap, "seconds": warm_s, "noise_gap_95": noise},
        "grpo": {"greedy": {"0": worst, "11": 1.0}, "run": {"train_seconds": grpo_s, "evals": evals}},
    }


def test_without_grpo_its_targets_are_not_judged():
    run = _run()
    del run["grpo"]
    assert set(check_targets([run])) == {ROLLOUT, WARM_ROLLOUT, WARM, NOISE}
    del run["warm_rollout"]  # a record made before the warm-started model's rollout was timed
    assert set(check_targets([run])) == {ROLLOUT, WARM, NOISE}


def test_unknown_arms_are_refused():
    from minirl.bench.agents import maze_part

    with pytest.raises(ValueError, match=r"algos must be some of \['grpo', 'ppo'\]; got \['dpo'\]"):
        maze_part(Record("x", seeds=[0]), [0], algos=["dpo"])


def test_the_targets_read_every_seed_and_fail_on_the_worst():
    everything = {ROLLOUT: True, WARM_ROLLOUT: True, WARM: True, NOISE: True, GRPO: True, TIME: True, UNTIL: True}
    assert check_targets([_run(), _run()]) == everything
    assert check_targets([_run(), _run(warm_ro=12.5)])[WARM_ROLLOUT] is False
    assert check_targets([_run(), _run(rollout_s=12.5)])[ROLLOUT] is False
    assert check_targets([_run(gap=0.1)])[WARM] is True and check_targets([_run(gap=0.11)])[WARM] is False
    # a gap the uniform walker's own noise explains passes that target, however large; a larger one fails it
    assert check_targets([_run(gap=0.2, noise=0.21)])[NOISE] is True
    assert check_targets([_run(gap=0.2, noise=0.19)])[NOISE] is False
    assert check_targets([_run(worst=0.9)])[GRPO] is False  # one cell short fails however good the others
    assert check_targets([_run(warm_s=120.0, grpo_s=480.0)])[TIME] is True
    assert check_targets([_run(warm_s=121.0, grpo_s=480.0)])[TIME] is False
    # until every cell: the warm start and the arm's time at its first evaluation with every cell walked (the
    # evaluation at 90% of the cells does not count), whatever the steps after it took
    assert check_targets([_run(warm_s=300.0, every_at=300.0, grpo_s=900.0)])[UNTIL] is True
    assert check_targets([_run(warm_s=300.0, every_at=301.0)])[UNTIL] is False
    assert check_targets([_run(), _run(every_at=None)])[UNTIL] is False  # a seed that never got there fails


def test_the_noise_gap_is_the_binomial_quantile_of_the_largest_gap():
    # one cell, p = 1/2, 4 walks: |k/4 - 1/2| is 0.5 with chance 1/8, 0.25 with 1/2, 0 with 3/8; the 95% point is 0.5
    assert noise_gap(torch.tensor([0.5]), 4, seed=0) == 0.5
    # and its 80% point 0.25 (chance 0.875 of at most 0.25): the quantile, not the largest gap ever drawn
    assert noise_gap(torch.tensor([0.5]), 4, seed=0, level=0.8) == 0.25
    # a cell whose success is certain or impossible never strays; more walks stray less; more cells, more
    assert noise_gap(torch.tensor([0.0, 1.0]), 8, seed=0) == 0.0
    cells = torch.tensor([0.01, 0.1, 0.3, 0.5])
    assert noise_gap(cells, 128, seed=0) < noise_gap(cells, 32, seed=0) < 0.35
    assert noise_gap(cells[2:3], 32, seed=0) < noise_gap(cells, 32, seed=0)
    assert noise_gap(cells, 32, seed=1) == pytest.approx(noise_gap(cells, 32, seed=0), abs=0.04)  # 4000 repeats


@pytest.mark.smollm2
def test_a_quick_run_measures_every_stage_from_every_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    stages_saved = []  # the stages the record held at each save: a stopped run keeps what it finished
    save = Record.save

    def spy(self, *args):
        stages_saved.append(list(self.figures["runs"][-1]))
        return save(self, *args)

    monkeypatch.setattr(Record, "save", spy)
    assert main(["--quick", "--samples", "2", "--save", "bench_agents_quick"]) == 0
    assert [s[-1] for s in stages_saved[:6]] == ["base", "rollout", "warm", "values", "grpo", "ppo"]
    f = load("bench_agents_quick")["figures"]
    assert f["quick"] is True and f["budgets"] == {**QUICK_BUDGETS, "samples": 2} and f["seeds"] == [0]
    (run,) = f["runs"]
    cells = [str(c) for c in (0, 1, 2, 3, 4, 5, 8, 9, 10, 11)]
    for stage in ("base", "warm", "grpo", "ppo"):
        assert list(run[stage]["greedy"]) == cells and list(run[stage]["sampled"]) == cells
        assert all(v in (0.0, 1.0) for v in run[stage]["greedy"].values())  # one greedy walk per cell
        assert all(v in (0.0, 0.5, 1.0) for v in run[stage]["sampled"].values())  # two sampled walks per cell
        assert 0.0 <= run[stage]["move_rate"] <= 1.0 and 1.0 <= run[stage]["turns_mean"] <= 6.0
    assert run["rollout"]["episodes"] == 4 and run["rollout"]["seconds"] > 0
    assert run["warm_rollout"]["episodes"] == 4 and 1.0 <= run["warm_rollout"]["turns_mean"] <= 6.0
    assert run["warm"]["steps"] == 2 and run["grpo"]["run"]["steps"] == 1 and run["ppo"]["run"]["steps"] == 1
    assert f["algos"] == ["grpo", "ppo"] and run["ppo"]["step_to_90"] in (None, 1.0)
    values = run["values"]  # the critic fitted on the warm-started model's walks, against the uniform walker's
    assert list(values["learned"]) == cells and values["steps"] == 1 and len(values["value_loss"]) == 1
    assert values["exact_uniform"]["11"] == pytest.approx(5.185185, rel=1e-6)  # 10 × its success from cell 11
    assert values["max_error"] == pytest.approx(
        max(abs(values["learned"][c] - values["exact_uniform"][c]) for c in cells), abs=1e-5
    )
    assert run["warm"]["uniform"]["11"] == pytest.approx(0.5185185, rel=1e-6)  # 7 digits kept
    assert all(v in (0.0, 1.0) for v in run["warm"]["sampled"].values())  # warm_samples: 1 walk a cell (quick)
    assert run["warm"]["noise_gap_95"] > 0.5  # one walk a cell: a uniform walker strays far
    assert "You walk through a maze" in run["prompt"]
    assert run["generation"] == "float32"  # the tiny model on a CPU, cpu_bfloat16 off: what the record says it ran
    assert "The text maze, SmolLM2" in capsys.readouterr().out


def test_success_rates_sample_whole_cells_at_most_walks_per_call_at_a_time(monkeypatch):
    """A success rate over many walks is sampled in calls of whole cells, never more than ``walks_per_call`` walks at
    once (their KV caches must fit in memory), and still counts every walk of every cell."""
    import minirl.bench.agents as agents
    import minirl.episodes
    from minirl.lm import make_tiny_lm
    from toy_envs.maze_text import TextMazeTask

    calls = []
    real = minirl.episodes.sample_rollout

    def counted(policy, task, prompts, group_size, **kw):
        calls.append(len(prompts) * group_size)
        return real(policy, task, prompts, group_size, **kw)

    monkeypatch.setattr(minirl.episodes, "sample_rollout", counted)  # sample_answers' calls
    task, policy = TextMazeTask(), make_tiny_lm(seed=0, max_new_tokens=2)
    cells = agents._cells(policy, task, samples=3, seed=0, walks_per_call=7)  # 2 cells (6 walks) a call
    assert calls == [6, 6, 6, 6, 6]  # 10 cells
    assert set(cells["sampled"]) == {str(c) for c in task.start_cells}
    # 3 walks a cell: a rate is k/3 (float32 means of 3 booleans, within float32's rounding)
    assert all(min(abs(rate - k / 3) for k in range(4)) < 1e-6 for rate in cells["sampled"].values())
    calls.clear()
    agents._cells(policy, task, samples=3, seed=0)  # None: every walk at once
    assert calls == [30]


def test_the_probe_flags_change_only_their_recipe_fields_and_reach_the_record(monkeypatch):
    from minirl.bench import agents

    assert agents._recipe("pretrained", False).cpu_bfloat16 is False  # the records' recipe
    probe = agents._recipe("pretrained", False, {"steps": 10, "cpu_bfloat16": True})
    assert probe.with_(steps=30) == agents._recipe("pretrained", False).with_(cpu_bfloat16=True)  # those two only
    with pytest.raises(ValueError, match=r"unknown LMRecipe setting\(s\) \['stepz'\]"):
        agents._recipe("pretrained", False, {"stepz": 10})
    seen = {}
    monkeypatch.setattr(agents, "maze_part", lambda *args, **kwargs: seen.update(kwargs) or {})
    monkeypatch.setattr(agents, "finish", lambda *args: 0)
    assert main(["--cpu-bf16", "--steps", "10"]) == 0 and seen["changes"] == {"steps": 10, "cpu_bfloat16": True}
    assert main([]) == 0 and seen["changes"] == {}
    knobs = ["--knob", "grpo.delta_mode=centered_rewards", "--knob", "ppo.lam=1.0"]
    assert main(knobs) == 0
    assert seen["changes"] == {"algo_knobs": (("grpo", "delta_mode", "centered_rewards"), ("ppo", "lam", 1.0))}
    assert agents._recipe("pretrained", False, seen["changes"]).algorithm("ppo").lam == 1.0


@pytest.mark.parametrize(
    "parser, text, expected",
    [
        ("parse_knob", "grpo.delta_mode=centered_rewards", ("grpo", "delta_mode", "centered_rewards")),
        ("parse_knob", "ppo.lam=1", ("ppo", "lam", 1)),
        ("parse_knob", "ppo.value_learning_rate=3e-4", ("ppo", "value_learning_rate", 3e-4)),
        ("parse_knob", "grpo.importance_ratio=false", ("grpo", "importance_ratio", False)),
        ("parse_knob", "grpo.clip_eps_low=none", ("grpo", "clip_eps_low", None)),
        ("parse_knob", "grpo.inner_epochs=4", ("grpo", "inner_epochs", 4)),
        ("parse_recipe_setting", "lr_schedule=cosine", ("lr_schedule", "cosine")),
        ("parse_recipe_setting", "steps=20", ("steps", 20)),
        ("parse_recipe_setting", "kl_coef=0.05", ("kl_coef", 0.05)),
        ("parse_recipe_setting", "cpu_bfloat16=true", ("cpu_bfloat16", True)),
        ("parse_recipe_setting", "trainable_layers=none", ("trainable_layers", None)),
    ],
)
def test_a_knob_or_recipe_flag_reads_its_value_by_type(parser, text, expected):
    """``--knob ALGO.KNOB=VALUE`` gives ``LMRecipe.algo_knobs``' triple, ``--recipe FIELD=VALUE`` a field and its
    value, each read by the field's type."""
    import minirl.bench

    assert getattr(minirl.bench, parser)(text) == expected


@pytest.mark.parametrize(
    "parser, text, message",
    [
        ("parse_knob", "ppo.lam=abc", r"--knob 'ppo.lam=abc': lam: expected float; got 'abc'"),
        ("parse_knob", "grpo.importance_ratio=yes", r"importance_ratio: expected true or false; got 'yes'"),
        ("parse_knob", "grpo.inner_epochs=2.5", r"inner_epochs: expected int; got '2.5'"),
        ("parse_knob", "grpo.lamb=1", r"unknown AlgoConfig knob 'lamb'"),
        ("parse_knob", "grpo.delta_mode", r"--knob: ALGO.KNOB=VALUE"),
        ("parse_knob", "delta_mode=rewards", r"--knob: ALGO.KNOB=VALUE"),
        ("parse_knob", ".lam=1", r"--knob: ALGO.KNOB=VALUE"),
        ("parse_knob", "ppo.=1", r"--knob: ALGO.KNOB=VALUE"),
        ("parse_recipe_setting", "lr_schedule", r"--recipe: FIELD=VALUE, e.g. lr_schedule=cosine; got 'lr_schedule'"),
        ("parse_recipe_setting", "=cosine", r"--recipe: FIELD=VALUE"),
        ("parse_recipe_setting", "lr_shedule=cosine", r"unknown LMRecipe field 'lr_shedule'"),
        ("parse_recipe_setting", "algo_knobs=x", r"algo_knobs has its own flag, --knob"),
        ("parse_recipe_setting", "steps=2.5", r"--recipe 'steps=2.5': steps: expected int; got '2.5'"),
        ("parse_recipe_setting", "short_system=yes", r"short_system: expected true or false; got 'yes'"),
    ],
)
def test_a_wrong_knob_or_recipe_flag_names_the_form_or_the_field_and_its_type(parser, text, message):
    """Read as ``minirl train --set`` reads a knob: a value of the wrong type is an error naming both, not a
    ``TypeError`` from the algorithm's range checks later; a malformed flag says the form it takes."""
    import minirl.bench

    with pytest.raises(ValueError, match=message):
        getattr(minirl.bench, parser)(text)


def test_the_recipe_flags_reach_the_recipe_and_a_field_given_twice_is_refused(monkeypatch):
    """``--recipe FIELD=VALUE`` changes that field only; a value the field does not take is the recipe's error;
    ``--steps`` and ``--recipe steps=...`` together are ambiguous, so refused."""
    from minirl.bench import agents

    seen = {}
    monkeypatch.setattr(agents, "maze_part", lambda *args, **kwargs: seen.update(kwargs) or {})
    monkeypatch.setattr(agents, "finish", lambda *args: 0)
    assert main(["--recipe", "lr_schedule=cosine"]) == 0 and seen["changes"] == {"lr_schedule": "cosine"}
    probe = agents._recipe("pretrained", False, seen["changes"])
    assert probe == agents._recipe("pretrained", False).with_(lr_schedule="cosine") and probe.lr_schedule == "cosine"
    with pytest.raises(ValueError, match=r"lr_schedule must be 'constant' or 'cosine'; got 'linear'"):
        agents._recipe("pretrained", False, {"lr_schedule": "linear"})
    with pytest.raises(ValueError, match=r"recipe field\(s\) \['steps'\] given twice"):
        main(["--steps", "10", "--recipe", "steps=20"])


def test_the_report_gives_both_rollouts_and_the_time_to_every_cell():
    """A record that timed the warm-started model's rollout shows it beside the base model's; an arm's cell gives
    the warm start's time plus the arm's up to its first evaluation that walked every cell (none: nothing)."""
    from minirl.report.agents import _arm, _seed_rows

    cells = {"greedy_mean": 0.0, "sampled_mean": 0.0, "move_rate": 1.0}
    warm = {**cells, "steps": 80, "seconds": 240.0, "max_gap_to_uniform": 0.1, "noise_gap_95": 0.11}
    evals = [{"step": 0, "greedy_exact": 0.2, "wall_time": 0.0}, {"step": 5, "greedy_exact": 1.0, "wall_time": 180.0}]
    arm = {"greedy_mean": 1.0, "sampled_mean": 0.98, "run": {"steps": 10, "train_seconds": 400.0, "evals": evals}}
    run = {"seed": 0, "base": cells, "warm": warm, "grpo": arm}
    run["rollout"] = {"seconds": 20.0, "model_tokens_per_second": 110.0}
    (row,) = _seed_rows([run], ["grpo"])
    assert row[2] == "20.0 s (110 tokens/s)"  # an older record: the base model's rollout only
    run["warm_rollout"] = {"seconds": 8.0, "model_tokens_per_second": 40.0, "turns_mean": 5.5}
    (row,) = _seed_rows([run], ["grpo"])
    assert row[2] == "base model 20.0 s (110 tokens/s); warm-started 8.0 s (40 tokens/s, 5.5 turns an episode)"
    assert row[-1] == "10 steps, 6.7 min: 100% / 98% (90% of cells at step 5, all at 5: 7.0 min with the warm start)"
    arm["run"]["evals"] = evals[:1]
    assert _arm(arm, warm).endswith("(90% of cells at step never, all at never)")


def test_rollout_formats_times_the_base_rollout_in_float32_around_the_bfloat16_copy(tmp_path, monkeypatch, capsys):
    """``--rollout-formats``: the base model's timed rollout alone, float32, the bfloat16 copy, float32 again, saved
    after each; the same prompts each time, so the two float32 runs draw the same walks (the same tokens). On the
    tiny model (the probe's code path, not SmolLM2's speed)."""
    import minirl.bench.agents as agents

    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    monkeypatch.setattr(agents, "SMOLLM2_ALIAS", "tiny")
    saved_formats = []
    save = Record.save

    def spy(self, *args):
        saved_formats.append(len(self.figures["runs"][-1].get("formats", [])))
        return save(self, *args)

    monkeypatch.setattr(Record, "save", spy)
    assert main(["--rollout-formats", "--quick", "--save", "formats_quick"]) == 0
    assert saved_formats[:3] == [1, 2, 3]  # a stopped run keeps the formats it finished
    f = load("formats_quick")["figures"]
    assert f["kind"] == "rollout_formats" and f["budgets"] == QUICK_BUDGETS
    (run,) = f["runs"]
    assert [r["generation"] for r in run["formats"]] == ["float32", "bfloat16 copy", "float32"]
    first, copy, again = run["formats"]
    assert all(r["episodes"] == 4 and r["seconds"] > 0 and 1.0 <= r["turns_mean"] <= 6.0 for r in run["formats"])
    assert again["model_tokens"] == first["model_tokens"] and again["turns_mean"] == first["turns_mean"]
    assert set(f["targets"]) == {
        "64 six-turn episodes in <= 12 s (float32)",
        "64 six-turn episodes in <= 12 s (bfloat16 copy)",
    }
    assert "rollout of 4 six-turn walks, by format" in capsys.readouterr().out
    assert load("formats_quick")["machine"]["bfloat16_arithmetic"] in (
        "matrix units",
        "vector instructions",
        "none",
        "unknown",
    )


def test_the_report_gives_each_format_s_rollout_in_the_order_it_ran_and_names_the_cpu_s_arithmetic():
    from minirl.report.agents import _rollout_formats

    def timed(generation, seconds, tokens=2235.0):
        return {"generation": generation, "episodes": 64, "seconds": seconds, "model_tokens": tokens,
                "sequence_tokens": 437.0, "model_tokens_per_second": tokens / seconds, "turns_mean": 6.0}  # fmt: skip

    data = {
        "name": "formats",
        "file": "formats.json",
        "command": "python -m minirl.bench.agents --rollout-formats --save formats",
        "commit": "0" * 40,
        "date": "2026-12-03T00:00:00Z",
        "machine": {"cpu": "AMD EPYC", "cores": 2, "bfloat16_arithmetic": "none", "gpu": None},
        "figures": {
            "budgets": {"rollout_prompts": 8, "rollout_group": 8},
            "runs": [
                {
                    "seed": 0,
                    "formats": [timed("float32", 100.0), timed("bfloat16 copy", 400.0, 2228.0), timed("float32", 80.0)],
                }
            ],
        },
    }
    text = "\n".join(_rollout_formats(data))
    assert "(`--rollout-formats`, seed 0), 64 six-turn walks (8 start cells × 8 walks" in text
    assert "has no bfloat16 arithmetic" in text
    rows = [line for line in text.splitlines() if line.startswith("| 0 |")]
    assert rows == [
        "| 0 | 1 | float32 | 100.0 s | 22 | 2235 | 6.0 |",
        "| 0 | 2 | bfloat16 copy | 6.7 min | 6 | 2228 | 6.0 |",  # 400 s, as _seconds writes it
        "| 0 | 3 | float32 | 80.0 s | 28 | 2235 | 6.0 |",
    ]
    data["machine"]["bfloat16_arithmetic"] = "vector instructions"
    assert "vector instructions (AVX-512 BF16), without matrix units" in "\n".join(_rollout_formats(data))
    del data["machine"]["bfloat16_arithmetic"]  # records made before machines kept it
    assert "torch could not tell" in "\n".join(_rollout_formats(data))

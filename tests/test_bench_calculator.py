"""minirl.bench.calculator: SmolLM2 with a calculator (base, warm start, GRPO, PPO), its targets and a quick run."""

import pytest

from minirl.bench.calculator import check_targets, main
from minirl.results import Record, load


def _run(hard=0.95, easy_calls=0.1, warm_s=60.0, rl_s=400.0):
    arm = {"accuracy": {"tool": hard, "head": 1.0}, "call_rate": {"tool": 1.0, "head": easy_calls}}
    return {"warm": {"seconds": warm_s}, "grpo": {**arm, "run": {"train_seconds": rl_s}}}


def test_the_targets_read_every_seed_and_fail_on_the_worst():
    names = ["grpo: hard products right >= 90%", "grpo: calls on easy problems <= 20%", "warm start + grpo <= 10 min"]
    assert check_targets([_run(), _run()], ["grpo"]) == dict.fromkeys(names, True)
    assert check_targets([_run(), _run(hard=0.85)], ["grpo"])[names[0]] is False  # one seed short fails
    assert check_targets([_run(hard=0.9)], ["grpo"])[names[0]] is True
    assert check_targets([_run(easy_calls=0.2)], ["grpo"])[names[1]] is True
    assert check_targets([_run(easy_calls=0.25)], ["grpo"])[names[1]] is False
    assert check_targets([_run(warm_s=120.0, rl_s=481.0)], ["grpo"])[names[2]] is False


def test_unknown_arms_are_refused():
    from minirl.bench.calculator import calculator_part

    with pytest.raises(ValueError, match=r"algos must be some of \['grpo', 'ppo'\]; got \['dpo'\]"):
        calculator_part(Record("x", seeds=[0]), [0], algos=["dpo"])


@pytest.mark.smollm2
def test_a_quick_run_measures_every_stage_on_both_kinds(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    assert main(["--quick", "--algos", "grpo", "--save", "bench_calculator_quick"]) == 0
    f = load("bench_calculator_quick")["figures"]
    assert f["quick"] is True and f["seeds"] == [0] and f["algos"] == ["grpo"]
    (run,) = f["runs"]
    for stage in ("base", "warm", "grpo"):
        m = run[stage]
        # quick: 4 evaluation problems, 2 of each kind, one greedy episode each: rates in halves
        assert set(m["accuracy"]) == set(m["call_rate"]) == {"head", "tool"}
        keys = ("accuracy", "call_rate", "sampled_accuracy", "sampled_call_rate")
        rates = [m[k][kind] for k in keys for kind in m[k]]
        assert len(rates) == 8 and all(v in (0.0, 0.5, 1.0) for v in rates)  # one sampled episode a problem (quick)
        assert m["malformed_calls"] >= 0 and 1.0 <= m["turns_mean"] <= 3.0
        assert "(tool)" in m["example"]["tool"] and "(head)" in m["example"]["head"]
    assert run["warm"]["steps"] == 2 and run["grpo"]["run"]["steps"] == 1 and "ppo" not in run
    assert "You answer arithmetic questions" in run["prompt"]
    assert "The calculator, SmolLM2" in capsys.readouterr().out


def test_a_probe_keeps_the_task_settings_it_ran_and_passes_them_to_every_seed(monkeypatch):
    """``--call-cost``, ``--easy`` and ``--demo-call-rate`` reach each seed's task and the record (figures["task"]),
    ``--cpu-bf16`` each seed and the record's recipe, without a model: ``calculator_seed`` is replaced by one that
    reports what it was given."""
    import minirl.bench.calculator as bc

    seen = []

    def fake_seed(seed, device, quick, changes, out, saved, algos, task):
        seen.append((task, changes))
        arm = {"accuracy": {"tool": 1.0, "head": 1.0}, "call_rate": {"tool": 1.0, "head": 0.0}}
        out.update(seed=seed, warm={"seconds": 1.0, "steps": 2}, base=arm)
        out.update({a: {**arm, "run": {"train_seconds": 1.0, "steps": 1}} for a in algos})
        return out

    monkeypatch.setattr(bc, "calculator_seed", fake_seed)
    monkeypatch.setattr(bc, "_line", lambda name, m: name)
    record = Record("bench_calculator_probe", seeds=[0, 1])
    argv = ["--seeds", "0", "1", "--algos", "grpo", "--call-cost", "0.3", "--easy", "times_ten"]
    monkeypatch.setattr(bc, "Record", lambda name, seeds: record)
    knob = ["--knob", "grpo.delta_mode=centered_rewards"]
    settings = ["--recipe", "lr_schedule=cosine", "--recipe", "kl_coef=0.05"]
    assert bc.main([*argv, "--demo-call-rate", "0.25", "--cpu-bf16", "--steps", "7", *knob, *settings]) == 0
    changes = {"cpu_bfloat16": True, "steps": 7, "algo_knobs": (("grpo", "delta_mode", "centered_rewards"),)}
    changes |= {"lr_schedule": "cosine", "kl_coef": 0.05}
    assert [(t.call_cost, t.easy, t.demo_call_rate, c) for t, c in seen] == [(0.3, "times_ten", 0.25, changes)] * 2
    assert record.figures["recipe"]["cpu_bfloat16"] is True and record.figures["recipe"]["steps"] == 7
    assert record.figures["recipe"]["algo_knobs"] == (("grpo", "delta_mode", "centered_rewards"),)
    assert record.figures["recipe"]["lr_schedule"] == "cosine" and record.figures["recipe"]["kl_coef"] == 0.05
    assert record.figures["task"] == {
        "call_cost": 0.3,
        "easy": "times_ten",
        "demo_call_rate": 0.25,
        "tool_share": 0.5,
        "max_turns": 3,
    }
    with pytest.raises(ValueError, match="demo_call_rate must be in"):
        bc.main(["--demo-call-rate", "2"])


def test_bench_lm_runs_the_calculator_as_a_part_into_its_own_key(monkeypatch):
    """``minirl bench --lm --parts calculator`` calls ``calculator_part`` with the seeds asked and its own key in
    the shared record (no model: the part is replaced by one that reports its arguments)."""
    import minirl.bench.calculator as bc
    from minirl.bench.lm import run_lm_benchmark

    calls = []

    def fake_part(record, seeds, quick=False, save=False, key=None, **kw):
        calls.append((list(seeds), quick, save, key))
        return {"calculator target": True}

    monkeypatch.setattr(bc, "calculator_part", fake_part)
    monkeypatch.setattr("minirl.bench.lm.finish", lambda record, ok, save, quick, out: 0 if all(ok.values()) else 1)
    assert run_lm_benchmark(quick=True, seeds=2, parts=("calculator",)) == 0
    assert calls == [([0, 1], True, False, "calculator")]


def test_minirl_bench_forwards_calculator_arguments_to_the_module(monkeypatch):
    import minirl.bench.calculator as bc
    from minirl.cli import main

    seen = []
    monkeypatch.setattr(bc, "main", lambda argv: seen.append(argv) or 0)
    assert main(["bench", "--calculator", "--seeds", "1", "--easy", "times_ten"]) == 0
    assert seen == [["--seeds", "1", "--easy", "times_ten"]]


def test_the_report_describes_each_record_with_the_task_it_ran(monkeypatch):
    """A record without ``figures["task"]`` ran before the defaults changed (one-digit easy problems, half the
    demonstrator's episodes with a call, a call costing 0.1); a newer one says its own settings. Each stage's row
    gives the steps and minutes it trained."""
    from minirl.report import agents
    from minirl.report.agents import LEGACY_TASK, _calculator_record

    monkeypatch.setattr(agents, "provenance", lambda data: "*provenance*")  # a record file's line, not tested here

    arm = {"accuracy": {"tool": 1.0, "head": 1.0}, "call_rate": {"tool": 1.0, "head": 0.0}}
    run = {"seed": 0, "base": arm, "warm": {**arm, "steps": 80, "seconds": 150.0}}
    run["grpo"] = {**arm, "run": {"steps": 30, "train_seconds": 660.0}}
    recipe = {"sft_steps": 80, "steps": 30, "eval_prompts": 40, "learning_rate": 3e-5, "lr_schedule": "constant"}
    data = {"figures": {"recipe": recipe, "runs": [run], "algos": ["grpo"]}}
    old = "\n".join(_calculator_record(data))
    assert LEGACY_TASK == {"call_cost": 0.1, "easy": "one_digit", "demo_call_rate": 0.5}
    assert "calls on 50% of its episodes" in old and "a call costs 0.1" in old and "(one digit by one)" in old
    data["figures"]["task"] = {"call_cost": 0.2, "easy": "times_ten", "demo_call_rate": 0.25}
    new = "\n".join(_calculator_record(data))
    assert "calls on 25% of its episodes" in new and "a call costs 0.2" in new and "(two digits times 10)" in new
    assert "| 0 | base model | none |" in new and "| 0 | warm start | 80 steps, 2.5 min |" in new
    assert "| 0 | GRPO | 30 steps, 11.0 min | right 100% / 100%, calls 100% / 0% |" in new
    assert "(a probe)" not in new  # the recipe's own algorithms
    assert "GRPO for 30 steps at learning rate 3e-05; a call costs" in new  # constant: no schedule named
    recipe["lr_schedule"] = "cosine"  # a --recipe lr_schedule=cosine probe
    assert "GRPO for 30 steps at learning rate 3e-05 decaying to 0 (cosine); a call" in "\n".join(
        _calculator_record(data)
    )
    recipe["algo_knobs"] = [["grpo", "delta_mode", "centered_rewards"]]  # as JSON keeps LMRecipe.algo_knobs
    probe = "\n".join(_calculator_record(data))
    assert "a call costs 0.2; GRPO's delta_mode = centered_rewards (a probe))" in probe


def test_the_report_says_how_a_bfloat16_run_generated_from_what_the_record_keeps():
    """``cpu_bfloat16`` off: nothing said. On: the record's ``generation`` (``CausalLMPolicy.generation_form``) says
    what ran; the one record made while generation ran under autocast is named, older copy records lack the key."""
    from minirl.report.agents import AUTOCAST_ONLY, _bfloat16

    def record(name, on, *forms):
        runs = [{"seed": i} if f is None else {"seed": i, "generation": f} for i, f in enumerate(forms)]
        return {"name": name, "figures": {"recipe": {"cpu_bfloat16": on}, "runs": runs}}

    assert _bfloat16(record("r", False, "float32")) == ""
    copy = _bfloat16(record("r", True, "bfloat16 copy", "bfloat16 copy"))
    assert "bfloat16 copy of the weights" in copy and copy.startswith("; ")
    assert _bfloat16(record("r", True, None)) == copy  # made before records kept the form
    assert "every forward pass under bfloat16 autocast" in _bfloat16(record(AUTOCAST_ONLY[0], True, None))
    assert _bfloat16(record("r", True, "bfloat16 autocast")) == ""  # on CUDA the knob changes nothing
    with pytest.raises(ValueError, match="generated as"):
        _bfloat16(record("r", True, "bfloat16 copy", "float32"))

"""minirl.bench.reasoning_rl: notebook 10's arms over seeds, its summary and targets, and `bench --lm --parts`."""

import pytest

from minirl.bench.reasoning_rl import check_targets, reasoning_part, run_seed, summarize
from minirl.results import Record, load


def _run(seed, warm4, thinking4, control4, answer4, hack_strict, hack_proxy, honest_proxy, warm_s=60.0, rl_s=600.0):
    """A run's figures in the shape run_seed returns (only what the summary and the targets read)."""
    return {
        "seed": seed,
        "warm": {"steps": 20, "seconds": warm_s, "sum3": 0.9, "sum4": warm4},
        "thinking": {
            "sum3": 0.95,
            "sum4": thinking4,
            "run": {"steps": 40, "train_seconds": rl_s},
            "pass_before": {"pass@1": 0.3, "pass@8": 0.6},
            "pass_after": {"pass@1": 0.8, "pass@8": 0.9},
        },
        "control": {"steps": 200, "sum3": 0.97, "sum4": control4},
        "answer-only": {"warm": {"steps": 50, "sum4": 0.02}, "sum3": 0.1, "sum4": answer4, "run": {"steps": 300}},
        "hack": {"strict": hack_strict, "proxy": hack_proxy, "honest_proxy": honest_proxy},
    }


BASE = {"think_sum3": 0.0, "think_sum4": 0.0, "answer_sum3": 0.05, "answer_sum4": 0.08}
TARGETS = {
    "thinking: 4-number accuracy +50 points within 15 min",
    "GRPO >= 15 points over the supervised control",
    "thinking >= 15 points over answer-only",
    "hacked: strict accuracy >= 20 points below, proxy higher",
}


def test_summary_is_the_mean_and_sample_std_over_seeds():
    runs = [_run(0, 0.3, 0.8, 0.3, 0.2, 0.1, 0.9, 0.85), _run(1, 0.4, 0.9, 0.2, 0.3, 0.2, 0.95, 0.8)]
    s = summarize(runs, BASE)
    # two values a and b: mean (a+b)/2, sample std |a-b|/sqrt(2); float64 arithmetic on a handful of numbers
    assert s["thinking_sum4"]["mean"] == pytest.approx(0.85, abs=1e-12)
    assert s["thinking_sum4"]["std"] == pytest.approx(0.1 / 2**0.5, abs=1e-12)
    assert s["control_sum4"]["mean"] == pytest.approx(0.25, abs=1e-12)
    assert s["answer_sum4"]["min"] == pytest.approx(0.2) and s["answer_sum4"]["max"] == pytest.approx(0.3)
    assert s["passk"] == "pass@8" and s["passk_after"]["mean"] == pytest.approx(0.9)
    assert s["base"] == BASE


def test_targets_pass_and_fail_on_the_means():
    good = [_run(0, 0.3, 0.85, 0.3, 0.25, 0.1, 0.9, 0.85), _run(1, 0.3, 0.8, 0.3, 0.2, 0.2, 0.95, 0.8)]
    assert check_targets(good, summarize(good, BASE)) == dict.fromkeys(TARGETS, True)
    # GRPO only 10 points over the control and 5 over answer-only; the hack's proxy lower than the honest run's
    bad = [_run(0, 0.3, 0.6, 0.5, 0.55, 0.1, 0.8, 0.85)]
    assert check_targets(bad, summarize(bad, BASE)) == {
        "thinking: 4-number accuracy +50 points within 15 min": True,
        "GRPO >= 15 points over the supervised control": False,
        "thinking >= 15 points over answer-only": False,
        "hacked: strict accuracy >= 20 points below, proxy higher": False,
    }
    # the rise within 15 min: 60 s warm start + 900 s of GRPO is 16 min
    slow = [_run(0, 0.3, 0.85, 0.3, 0.2, 0.1, 0.9, 0.85, rl_s=900.0)]
    assert not check_targets(slow, summarize(slow, BASE))["thinking: 4-number accuracy +50 points within 15 min"]


def test_targets_cover_only_the_arms_that_ran():
    run = _run(0, 0.3, 0.85, 0.3, 0.2, 0.1, 0.9, 0.85)
    del run["control"], run["hack"]
    assert set(check_targets([run], summarize([run], BASE))) == {
        "thinking: 4-number accuracy +50 points within 15 min",
        "thinking >= 15 points over answer-only",
    }


def test_bad_arms_and_seeds_are_refused_before_any_model_loads():
    with pytest.raises(ValueError, match=r"arms: unknown \['think'\]"):
        run_seed(0, arms=["think"])
    with pytest.raises(ValueError, match="seeds: give at least one seed"):
        reasoning_part(Record("unsaved"), seeds=[])


def test_bench_lm_refuses_an_unknown_part():
    from minirl.bench.lm import run_lm_benchmark

    with pytest.raises(ValueError, match=r"parts: unknown \['reason'\]"):
        run_lm_benchmark(quick=True, seeds=1, parts=("tiny", "reason"))


@pytest.mark.smollm2
def test_bench_lm_reasoning_part_quick_runs_every_arm_and_saves_a_record(tmp_path, monkeypatch, capsys):
    from minirl.cli import main

    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    assert main(["bench", "--lm", "--parts", "reasoning", "--quick", "--seeds", "1", "--save"]) == 0
    out = capsys.readouterr().out
    for line in ("Reasoning (notebook 10's arms)", "base model:", "seed 0: warm start 2 steps", "Summary"):
        assert line in out, f"{line!r} missing from:\n{out}"
    figures = load("bench_lm")["figures"]
    assert set(figures) == {"reasoning", "targets"} and set(figures["targets"]) == TARGETS
    r = figures["reasoning"]
    assert r["seeds"] == [0] and set(r["base"]) == {"think_sum3", "think_sum4", "answer_sum3", "answer_sum4"}
    run = r["runs"][0]
    assert {"warm", "thinking", "control", "answer-only", "hack"} <= set(run)
    assert run["warm"]["steps"] == 2 and run["thinking"]["run"]["steps"] == 2  # QUICK_SETTINGS
    assert run["answer-only"]["run"]["steps"] == 2 and run["control"]["steps"] >= 1
    for value in (run["thinking"]["sum4"], run["answer-only"]["sum4"], run["hack"]["proxy"], run["hack"]["strict"]):
        assert 0.0 <= value <= 1.0
    assert set(run["thinking"]["pass_after"]) == {"pass@1", "pass@4"}
    assert r["summary"]["thinking_sum4"]["std"] == 0.0  # one seed

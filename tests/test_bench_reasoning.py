"""minirl.bench.reasoning_rl: notebook 10's arms over seeds, its summary, pass@k and targets, and `bench --lm --parts`.

Tolerances: the summary's figures are float64 arithmetic (numpy's mean and std, the pass@k product) on a handful of
numbers in [0, 1] or a few minutes, so they are within ~1e-15 of the exact value; ``abs=1e-12`` leaves a thousand
times that. A saved record keeps 7 significant digits (``minirl.results.records._jsonable``): ``rel=1e-6`` there.
"""

import math

import pytest

import minirl.bench.reasoning_rl as rr
from minirl.bench.reasoning_rl import (
    ARMS,
    BUDGETS,
    QUICK_BUDGETS,
    SUMMARY_PATHS,
    check_targets,
    quick_recipe,
    reasoning_part,
    run_seed,
    summarize,
)
from minirl.bench.resume import PROVENANCE, same_warm
from minirl.lm.recipes import reasoning_recipe
from minirl.results import Record, load

EPS = 1e-12  # float64 on a handful of numbers (module docstring)

MEAN = "thinking GRPO: 4-number mean >= 75%, std <= 8 points, warm start + GRPO <= 15 min"
ANSWER = "thinking >= 15 points over answer-only"
HACK = "hacked: strict accuracy >= 20 points below the honest run's, proxy higher"
FIX = "fixed verifier: within 10 points of the honest run"
TARGETS = {MEAN, ANSWER, HACK, FIX}

BASE = {"think_sum3": 0.0, "think_sum4": 0.0, "answer_sum3": 0.05, "answer_sum4": 0.08}


def _run(  # noqa: PLR0913
    seed,
    thinking4=0.85,
    answer4=0.5,
    hack4=0.4,
    hack_proxy=0.95,
    honest_proxy=0.8,
    fix4=0.82,
    warm_s=60.0,
    rl_s=600.0,
    before=(10, 0),
    after=(40, 5),
    pass_samples=64,
):
    """One seed's figures in the shape reasoning_part keeps them (run_seed's, plus the seed's ``budgets``):
    everything ``summarize``, ``check_targets`` and the report read, with made-up numbers."""

    def grpo(steps, seconds):
        return {"steps": steps, "train_seconds": seconds, "evals": [], "notes": []}

    def held_out(sum3, sum4):
        return {"sum3": sum3, "sum4": sum4, "sum3_format": 1.0, "sum4_format": 1.0, "sum4_truncated": 0.0}

    def verifier(reward, sum4, proxy, honest):
        return {"reward": reward, "run": grpo(40, 590.0), **held_out(0.9, sum4), "proxy": proxy, "honest_proxy": honest}

    return {
        "seed": seed,
        "prompt": "<|im_start|>system\nYou solve arithmetic problems.<|im_end|> ...",
        "budgets": {**BUDGETS, "pass_prompts": len(before), "pass_samples": pass_samples},
        "warm": {"steps": 20, "seconds": warm_s, "loss_last": 0.3, **held_out(0.9, 0.3)},
        "thinking": {
            "run": grpo(40, rl_s),
            **held_out(0.95, thinking4),
            "pass": {"before": list(before), "after": list(after), "seconds": 30.0},
        },
        "control": {"steps": 120, "seconds": 200.0, "loss_last": 0.1, **held_out(0.97, 0.35)},
        "answer-only": {
            "warm": {"steps": 20, "seconds": 20.0, "loss_last": 1.0, **held_out(0.2, 0.05)},
            "run": grpo(160, 300.0),
            **held_out(0.3, answer4),
        },
        "hack": verifier("substring", hack4, hack_proxy, honest_proxy),
        "fix": verifier("answer", fix4, 0.83, 0.85),
    }


def _only(run, *arms):
    """``run`` as run_seed returns it for these ``arms`` only (without thinking, no honest proxy)."""
    out = {k: v for k, v in run.items() if k not in ARMS or k in arms}
    if "thinking" not in arms:
        for arm in ("hack", "fix"):
            if arm in out:
                out[arm] = {k: v for k, v in out[arm].items() if k != "honest_proxy"}
    return out


def _spread_is(s, values):
    """``s`` is the mean, sample standard deviation (n - 1), min and max of ``values``, computed here by hand."""
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    assert set(s) == {"mean", "std", "min", "max"}
    assert s["mean"] == pytest.approx(mean, abs=EPS) and s["std"] == pytest.approx(std, abs=EPS)
    assert s["min"] == pytest.approx(min(values), abs=EPS) and s["max"] == pytest.approx(max(values), abs=EPS)


# ---- the summary ------------------------------------------------------------------------------------------------


def test_summary_spreads_every_figure_over_seeds_with_the_sample_std():
    runs = [_run(0, thinking4=0.7, answer4=0.5), _run(1, thinking4=0.8, answer4=0.6), _run(2, thinking4=0.9)]
    s = summarize(runs, BASE)
    assert set(s) == {"base", *SUMMARY_PATHS, "pass_before", "pass_after", "warm_plus_grpo_minutes"}
    assert s["base"] == BASE
    # 0.7, 0.8, 0.9: mean 0.8, sample std sqrt((0.01 + 0 + 0.01) / 2) = 0.1 (the population std would be 0.0816)
    assert s["thinking_sum4"]["mean"] == pytest.approx(0.8, abs=EPS)
    assert s["thinking_sum4"]["std"] == pytest.approx(0.1, abs=EPS)
    assert (s["thinking_sum4"]["min"], s["thinking_sum4"]["max"]) == (0.7, 0.9)
    _spread_is(s["answer_sum4"], [0.5, 0.6, 0.5])
    for name, path in SUMMARY_PATHS.items():  # every name is its path's figure, spread over the seeds
        values = [rr.nested(r, path) for r in runs]
        assert None not in values, name
        _spread_is(s[name], values)
    # three equal seeds: std 0, but only to rounding (numpy's mean of 0.95 three times is 0.9499999999999998)
    assert s["hack_proxy"] == pytest.approx({"mean": 0.95, "std": 0.0, "min": 0.95, "max": 0.95}, abs=EPS)
    one = summarize(runs[:1], BASE)
    assert one["thinking_sum4"] == {"mean": 0.7, "std": 0.0, "min": 0.7, "max": 0.7}  # one seed: std 0, not NaN


def test_summary_leaves_out_what_a_seed_did_not_measure():
    runs = [_only(_run(0), "control", "answer-only", "hack"), _only(_run(1), "control", "answer-only", "hack")]
    s = summarize(runs, BASE)
    # no thinking run: no pass@k, no warm start + GRPO time, no honest proxy (nothing to score)
    assert not {"thinking_sum4", "pass_before", "pass_after", "warm_plus_grpo_minutes", "honest_proxy"} & set(s)
    assert not {"fix_sum4", "fix_seconds"} & set(s)
    assert {"warm_sum4", "control_sum4", "answer_sum4", "hack_strict", "hack_proxy"} <= set(s)
    # a figure missing from one seed is left out rather than spread over the others
    mixed = summarize([_run(0), _only(_run(1), "thinking", "control", "answer-only", "hack")], BASE)
    assert "fix_sum4" not in mixed and "hack_strict" in mixed


def test_pass_at_k_is_computed_from_the_counts_for_every_k():
    # 64 samples of 2 prompts; seed 0: all 64 right on one, none on the other; seed 1: 1 right on one
    runs = [_run(0, before=(2, 0), after=(64, 0)), _run(1, before=(0, 0), after=(1, 0))]
    s = summarize(runs, BASE)
    assert list(s["pass_after"]) == [f"pass@{k}" for k in range(1, 65)]
    # pass@k = 1 - C(n - c, k) / C(n, k), averaged over prompts. c = 64: every k passes; c = 0: none does
    # seed 0: pass@k = (1 + 0) / 2 = 0.5 for every k. c = 1: C(63, k) / C(64, k) = (64 - k) / 64, so pass@k = k / 64,
    # seed 1: pass@k = (k / 64 + 0) / 2 = k / 128: pass@1 = 1/128, pass@64 = 0.5
    after = {k: [0.5, k / 128] for k in range(1, 65)}
    for k, values in after.items():
        _spread_is(s["pass_after"][f"pass@{k}"], values)
    assert s["pass_after"]["pass@1"]["min"] == pytest.approx(1 / 128, abs=EPS)
    assert s["pass_after"]["pass@64"]["mean"] == pytest.approx(0.5, abs=EPS)
    assert s["pass_after"]["pass@64"]["std"] == pytest.approx(0.0, abs=EPS)
    # c = 2 of 64: pass@1 = 2/64; pass@2 = 1 - C(62, 2) / C(64, 2) = 1 - (62 * 61) / (64 * 63) = 250 / 4032;
    # c = 63 of 64: pass@2 = 1 (a single wrong sample cannot fill 2 attempts). Halved over the 2 prompts
    assert s["pass_before"]["pass@1"]["max"] == pytest.approx(2 / 64 / 2, abs=EPS)
    assert s["pass_before"]["pass@2"]["max"] == pytest.approx(250 / 4032 / 2, abs=EPS)
    assert s["pass_before"]["pass@2"]["min"] == 0.0
    assert summarize([_run(0, after=(63, 0))], BASE)["pass_after"]["pass@2"]["mean"] == pytest.approx(0.5, abs=EPS)


def test_pass_at_k_reads_each_runs_own_sample_count():
    # a run of 4 samples per prompt; counts 4 and 2 of 4
    s = summarize([_run(0, before=(4, 2), after=(4, 2), pass_samples=4)], BASE)
    assert list(s["pass_after"]) == ["pass@1", "pass@2", "pass@3", "pass@4"]
    # pass@1 = (4/4 + 2/4) / 2; pass@2 = (1 + 1 - C(2, 2) / C(4, 2)) / 2 = (1 + 5/6) / 2; pass@3 = pass@4 = 1
    expected = {"pass@1": 0.75, "pass@2": 11 / 12, "pass@3": 1.0, "pass@4": 1.0}
    assert {k: v["mean"] for k, v in s["pass_after"].items()} == pytest.approx(expected, abs=EPS)


def test_warm_start_plus_grpo_minutes_are_spread_over_seeds():
    runs = [_run(0, warm_s=60.0, rl_s=600.0), _run(1, warm_s=120.0, rl_s=720.0)]
    s = summarize(runs, BASE)
    # (60 + 600) / 60 = 11 and (120 + 720) / 60 = 14 minutes: mean 12.5, sample std 3 / sqrt(2)
    assert s["warm_plus_grpo_minutes"]["mean"] == pytest.approx(12.5, abs=EPS)
    assert s["warm_plus_grpo_minutes"]["std"] == pytest.approx(3 / math.sqrt(2), abs=EPS)
    assert (s["warm_plus_grpo_minutes"]["min"], s["warm_plus_grpo_minutes"]["max"]) == pytest.approx((11, 14), abs=EPS)


# ---- the targets ------------------------------------------------------------------------------------------------


def _targets(*runs):
    return check_targets(summarize(list(runs), BASE))


def test_every_target_is_met_by_a_good_run():
    # thinking 85 %, 88 % (std 2 points), 11 minutes; answer-only 50 %; hack 40 % strict, proxy 95 % vs 80 %;
    # fix 82 %
    assert _targets(_run(0), _run(1, thinking4=0.88)) == dict.fromkeys(TARGETS, True)


def test_the_thinking_target_needs_the_mean_the_spread_and_the_time():
    assert _targets(_run(0, thinking4=0.75), _run(1, thinking4=0.85))[MEAN]  # mean 80 %, std 7.1 points
    # mean 74 %: below 75 %
    assert not _targets(_run(0, thinking4=0.74), _run(1, thinking4=0.74))[MEAN]
    # mean 80 % again, but 70 / 80 / 90 %: a sample std of 10 points
    assert not _targets(*(_run(s, thinking4=t) for s, t in enumerate((0.7, 0.8, 0.9))))[MEAN]
    # one slow seed: 60 s warm start + 900 s GRPO = 16 min, though the mean over seeds is (11 + 16) / 2 = 13.5 min
    assert not _targets(_run(0), _run(1, rl_s=900.0))[MEAN]
    assert _targets(_run(0), _run(1, rl_s=840.0))[MEAN]  # 60 s + 840 s: 15 min, met


def test_the_answer_only_target_reads_the_gap_of_the_means():
    assert _targets(_run(0, answer4=0.6), _run(1, answer4=0.7))[ANSWER]  # 85 - 65 = 20 points
    assert not _targets(_run(0, answer4=0.7), _run(1, answer4=0.8))[ANSWER]  # 85 - 75 = 10 points
    assert not _targets(_run(0, answer4=0.9))[ANSWER]  # answer-only above thinking


def test_the_hack_target_needs_both_a_strict_drop_and_a_higher_proxy():
    assert _targets(_run(0, hack4=0.6))[HACK]  # 25 points below, proxy 95 % > 80 %
    assert not _targets(_run(0, hack4=0.7))[HACK]  # only 15 points below
    assert not _targets(_run(0, hack_proxy=0.8, honest_proxy=0.8))[HACK]  # proxy no higher than the honest run's
    assert not _targets(_run(0, hack_proxy=0.7, honest_proxy=0.9))[HACK]  # proxy lower
    # the means decide: one seed's proxy lower, but 0.95 and 0.75 against 0.8 and 0.8 is 85 % > 80 %
    assert _targets(_run(0, hack_proxy=0.95), _run(1, hack_proxy=0.75))[HACK]


def test_the_fix_target_is_within_10_points_of_the_honest_run():
    assert _targets(_run(0, fix4=0.8))[FIX]  # 5 points below
    assert _targets(_run(0, fix4=0.95))[FIX]  # above
    assert not _targets(_run(0, fix4=0.7))[FIX]  # 15 points below
    assert not _targets(_run(0, fix4=0.7), _run(1, fix4=0.78))[FIX]  # mean 74 % against 85 %


def test_a_gap_of_exactly_the_targets_points_meets_it():
    # accuracies are whole percentages of eval_prompts = 100 problems; 0.29 - 0.14 < 0.15 in float64
    assert _targets(_run(0, thinking4=0.29, answer4=0.14))[ANSWER]


def test_targets_cover_only_the_arms_that_ran():
    run = _run(0)
    assert set(_targets(_only(run, "thinking"))) == {MEAN}
    assert set(_targets(_only(run, "thinking", "control"))) == {MEAN}  # the control has no target
    assert set(_targets(_only(run, "thinking", "answer-only"))) == {MEAN, ANSWER}
    assert set(_targets(_only(run, "thinking", "hack"))) == {MEAN, HACK}
    assert set(_targets(_only(run, "thinking", "fix"))) == {MEAN, FIX}
    # without thinking, nothing to compare with: no honest run, no honest proxy
    assert _targets(_only(run, "control", "answer-only", "hack", "fix")) == {}


# ---- reasoning_part's record, bad input -------------------------------------------------------------------------


def test_reasoning_part_keeps_every_seed_with_its_budgets_and_saves_after_each(tmp_path, monkeypatch, capsys):
    """Without a model: run_seed and measure_base replaced by figures of the shape they return."""
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    calls = []

    monkeypatch.setattr(rr, "run_seed", _fake_run_seed(calls))
    monkeypatch.setattr(rr, "measure_base", lambda device, quick: BASE)
    saved = []
    record = Record("reasoning_fake", seeds=[4, 5])
    seeds_saved = []

    def save():
        f = record.figures["reasoning"]
        saved.append([sorted(set(r) & set(ARMS)) for r in f["runs"]])
        seeds_saved.append((f["seeds"], f["arms"]))

    monkeypatch.setattr(record, "save", save)
    targets = reasoning_part(record, [4, 5], ARMS, quick=True, save=True, key="reasoning")
    assert calls == [(4, ARMS, QUICK_BUDGETS, True, None), (5, ARMS, QUICK_BUDGETS, True, None)]
    # after the warm start and after each arm of each seed: a stopped run keeps what it measured
    assert len(saved) == 2 * (1 + len(ARMS))
    assert saved[0] == [[]] and saved[1] == [["thinking"]] and saved[5] == [sorted(ARMS)]
    assert saved[6] == [sorted(ARMS), []] and saved[-1] == [sorted(ARMS)] * 2
    # a stopped run's record says which seeds and arms it holds
    assert seeds_saved[0] == ([4], []) and seeds_saved[1] == ([4], ["thinking"])
    assert seeds_saved[6] == ([4, 5], list(ARMS))
    r = record.figures["reasoning"]
    assert r["seeds"] == [4, 5] and r["arms"] == list(ARMS) and r["quick"] is True and r["base"] == BASE
    assert r["budgets"] == QUICK_BUDGETS and [run["budgets"] for run in r["runs"]] == [QUICK_BUDGETS] * 2
    assert r["summary"]["thinking_sum4"]["mean"] == pytest.approx(0.845, abs=EPS)
    assert targets == check_targets(r["summary"]) and set(targets) == TARGETS
    out = capsys.readouterr().out
    for line in (
        "Reasoning (notebook 10's arms), 4-number sums, greedy on held-out problems, 2 seed(s)",
        "base model: 0.0% with a scratchpad, 8.0% answer only",
        "seed 4: warm start 20 steps 60 s -> 30%; GRPO 40 steps 600 s -> 84%;",
        "hack (substring) strict 40%, proxy 95%; fix (answer) strict 82%, proxy 83%;",
        "+ thinking GRPO",
        "pass@k after GRPO: pass@1 ",
    ):
        assert line in out, f"{line!r} missing from:\n{out}"
    # some arms only: the record says which, and the targets are theirs
    record = Record("reasoning_fake")
    assert set(reasoning_part(record, [0], ["thinking", "answer-only"])) == {MEAN, ANSWER}
    assert record.figures["arms"] == ["thinking", "answer-only"] and record.figures["budgets"] == BUDGETS


def _fake_run_seed(calls):
    """run_seed without a model: the figures of ``_run`` for the arms asked, reported arm by arm to ``after_arm``;
    ``calls`` collects (seed, arms, budgets, quick, the stored seed's arms)."""

    def fake(seed, arms, budgets, device, progress, quick, done=None, after_arm=None):
        calls.append((seed, tuple(arms), budgets, quick, None if done is None else sorted(set(done) & set(ARMS))))
        n = QUICK_BUDGETS["pass_samples"]  # counts within --quick's samples per prompt (pass_at_k refuses c > n)
        run = _only(_run(seed, thinking4=0.8 + seed / 100, before=(1, 0), after=(n, 1)), *arms)
        out = {k: v for k, v in run.items() if k not in ARMS and k != "budgets"}  # reasoning_part adds the budgets
        if after_arm is not None:
            after_arm(dict(out))
        for arm in arms:
            out[arm] = run[arm]
            if after_arm is not None:
                after_arm(dict(out))
        return out

    return fake


def test_a_resumed_record_runs_only_the_arms_it_lacks_and_keeps_its_provenance(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    calls = []
    monkeypatch.setattr(rr, "run_seed", _fake_run_seed(calls))
    base_calls = []
    monkeypatch.setattr(rr, "measure_base", lambda device, quick: base_calls.append(1) or BASE)
    # the first sitting: seed 1's thinking arm only
    assert rr.run_reasoning_benchmark([1], ["thinking"], quick=True, save="bench_reasoning_fake", resume=True) == 0
    first = load("bench_reasoning_fake")
    assert first["figures"]["arms"] == ["thinking"] and "earlier" not in first["figures"]
    # the second: seeds 1 and 2, every arm; seed 1 keeps its thinking arm and runs the others
    calls.clear()
    assert rr.run_reasoning_benchmark([1, 2], ARMS, quick=True, save="bench_reasoning_fake", resume=True) == 0
    rest = tuple(a for a in ARMS if a != "thinking")
    assert calls == [(1, rest, QUICK_BUDGETS, True, ["thinking"]), (2, ARMS, QUICK_BUDGETS, True, None)]
    assert len(base_calls) == 1  # the base model's figures are kept, not measured again
    second = load("bench_reasoning_fake")
    f = second["figures"]
    assert f["seeds"] == second["seeds"] == [1, 2] and f["arms"] == list(ARMS)
    assert [set(ARMS) <= set(r) for r in f["runs"]] == [True, True]
    assert f["runs"][0]["thinking"] == first["figures"]["runs"][0]["thinking"]
    (earlier,) = f["earlier"]
    assert earlier["date"] == first["date"] and earlier["command"] == first["command"]
    assert set(earlier) == set(PROVENANCE)
    # a third sitting with nothing left to run runs nothing and keeps both earlier sittings
    calls.clear()
    rr.run_reasoning_benchmark([1, 2], ARMS, quick=True, save="bench_reasoning_fake", resume=True)
    assert calls == [] and len(load("bench_reasoning_fake")["figures"]["earlier"]) == 2


def test_resuming_a_record_of_other_budgets_or_without_save_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    monkeypatch.setattr(rr, "run_seed", _fake_run_seed([]))
    monkeypatch.setattr(rr, "measure_base", lambda device, quick: BASE)
    rr.run_reasoning_benchmark([0], ["control"], quick=True, save="bench_reasoning_fake")
    # the stored record is a quick one: a full run would mix two experiments
    other = r"resume: the stored record was measured with other recipes, budgets, quick than this run's"
    with pytest.raises(ValueError, match=other):
        rr.run_reasoning_benchmark([0], ["thinking"], save="bench_reasoning_fake", resume=True)
    with pytest.raises(ValueError, match=r"resume: give --save too"):
        rr.run_reasoning_benchmark([0], resume=True)


def test_a_resumed_seed_whose_warm_start_changed_is_refused():
    stored = {"sum3": 0.9, "sum4": 0.3, "sum4_format": 1.0, "seconds": 50.0}
    same_warm(0, {**stored, "sum3": 0.9000001, "seconds": 70.0}, stored)  # 7 digits kept; time is no figure
    with pytest.raises(ValueError, match=r"resume: seed 3's warm start now reaches \{'sum4': \(0.31, 0.3\)\}"):
        same_warm(3, {**stored, "sum4": 0.31}, stored)


def test_a_quick_record_keeps_the_recipes_it_ran(monkeypatch):
    monkeypatch.setattr(rr, "run_seed", _fake_run_seed([]))
    monkeypatch.setattr(rr, "measure_base", lambda device, quick: BASE)
    record = Record("reasoning_fake")
    reasoning_part(record, [0], quick=True)
    kind = record.figures["kind"]
    assert record.figures["recipes"]["think"]["steps"] == quick_recipe(reasoning_recipe(kind, True)).steps


@pytest.fixture
def no_model(monkeypatch):
    """Loading a model fails the test: what is refused must be refused before."""

    def load(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr("minirl.lm.recipes.LMRecipe.policy", load)
    monkeypatch.setattr("minirl.lm.models.load_policy", load)
    monkeypatch.setattr(rr, "measure_base", load)


def test_bad_arms_and_seeds_are_refused_before_any_model_loads(no_model):
    with pytest.raises(ValueError, match=r"arms: unknown \['think'\]; choose from \['thinking', 'control', "):
        run_seed(0, arms=["think"])
    with pytest.raises(ValueError, match=r"arms: unknown \['sft'\]"):
        run_seed(0, arms=["thinking", "sft"], quick=True)
    with pytest.raises(ValueError, match="seeds: give at least one seed"):
        reasoning_part(Record("unsaved"), seeds=[])


def test_bench_lm_refuses_an_unknown_part(no_model, capsys):
    from minirl.bench.lm import run_lm_benchmark
    from minirl.cli import main

    with pytest.raises(
        ValueError,
        match=r"parts: unknown \['reason'\]; choose from "
        r"\['tiny', 'smollm2', 'reasoning', 'self_training', 'agents', 'calculator'\]",
    ):
        run_lm_benchmark(quick=True, seeds=1, parts=("tiny", "reason"))
    with pytest.raises(ValueError, match="parts: unknown none given"):
        run_lm_benchmark(quick=True, seeds=1, parts=())
    assert main(["bench", "--lm", "--parts", "reasoning,reason", "--quick", "--seeds", "1"]) == 2
    assert "parts: unknown ['reason']" in capsys.readouterr().err


# ---- the quick run, end to end ----------------------------------------------------------------------------------


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
    assert r["seeds"] == [0] and r["quick"] is True and r["arms"] == list(ARMS) and r["budgets"] == QUICK_BUDGETS
    assert set(r["base"]) == {"think_sum3", "think_sum4", "answer_sum3", "answer_sum4"}
    assert all(0.0 <= v <= 1.0 for v in r["base"].values())
    (run,) = r["runs"]
    assert set(ARMS) <= set(run) and run["seed"] == 0 and run["budgets"] == QUICK_BUDGETS
    # the prompt as the model reads it: the reasoning recipe's system message, not the sorting task's
    assert "You solve arithmetic problems." in run["prompt"] and "sort" not in run["prompt"].lower()
    # every stage ran the quick recipe's steps (quick_recipe) and QUICK_BUDGETS' own
    think, answer = (quick_recipe(reasoning_recipe(r["kind"], thinking)) for thinking in (True, False))
    assert run["warm"]["steps"] == think.sft_steps and run["thinking"]["run"]["steps"] == think.steps
    assert run["control"]["steps"] == QUICK_BUDGETS["control_steps"]
    assert run["answer-only"]["warm"]["steps"] == answer.sft_steps
    assert run["answer-only"]["run"]["steps"] == QUICK_BUDGETS["answer_steps"]
    assert run["hack"]["run"]["steps"] == run["fix"]["run"]["steps"] == think.steps
    assert (run["hack"]["reward"], run["fix"]["reward"]) == ("substring", "answer")
    stages = [run["warm"], run["thinking"], run["control"], run["answer-only"]["warm"], run["answer-only"]]
    for stage in [*stages, run["hack"], run["fix"]]:
        for key in ("sum3", "sum4", "sum3_format", "sum4_format", "sum3_truncated", "sum4_truncated"):
            assert 0.0 <= stage[key] <= 1.0, key
        assert len(stage["examples"]) == 3 and all(isinstance(e, str) for e in stage["examples"])
    for arm in ("hack", "fix"):
        assert 0.0 <= run[arm]["proxy"] <= 1.0 and 0.0 <= run[arm]["honest_proxy"] <= 1.0
        assert sum(run[arm]["kinds"].values()) == pytest.approx(1.0, rel=1e-6)  # 7 digits kept
    # pass@k: a count of right replies out of pass_samples for each of pass_prompts problems, before and after
    n, prompts = QUICK_BUDGETS["pass_samples"], QUICK_BUDGETS["pass_prompts"]
    for when in ("before", "after"):
        counts = run["thinking"]["pass"][when]
        assert len(counts) == prompts and all(isinstance(c, int) and 0 <= c <= n for c in counts)
        curve = r["summary"][f"pass_{when}"]
        assert list(curve) == [f"pass@{k}" for k in range(1, n + 1)]
        # pass@1 is the share of right replies: mean_x c_x / n (saved to 7 digits)
        assert curve["pass@1"]["mean"] == pytest.approx(sum(counts) / (n * prompts), rel=1e-6, abs=1e-12)
        means = [curve[f"pass@{k}"]["mean"] for k in range(1, n + 1)]
        assert means == sorted(means)  # more attempts never pass less often
    summary = r["summary"]
    assert summary["thinking_sum4"]["mean"] == run["thinking"]["sum4"] and summary["thinking_sum4"]["std"] == 0.0
    minutes = (run["warm"]["seconds"] + run["thinking"]["run"]["train_seconds"]) / 60
    assert summary["warm_plus_grpo_minutes"]["mean"] == pytest.approx(minutes, rel=1e-6)


@pytest.mark.smollm2
def test_a_resumed_quick_run_adds_an_arm_from_the_same_warm_start(tmp_path, monkeypatch):
    """Two sittings of one seed: the thinking arm, then the hack arm. The second warm start reaches the first's
    figures (run_seed refuses otherwise), and the hack arm scores the stored honest replies with its verifier."""
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    rr.run_reasoning_benchmark([0], ["thinking"], quick=True, save="bench_reasoning_quick", resume=True)
    first = load("bench_reasoning_quick")["figures"]["runs"][0]
    rr.run_reasoning_benchmark([0], ["hack"], quick=True, save="bench_reasoning_quick", resume=True)
    record = load("bench_reasoning_quick")
    (run,) = record["figures"]["runs"]
    assert run["thinking"] == first["thinking"] and run["warm"] == first["warm"]
    assert run["hack"]["commit"] == record["commit"] and len(record["figures"]["earlier"]) == 1
    recipe = quick_recipe(reasoning_recipe(record["figures"]["kind"]))
    prompts = recipe.reasoning_task("sum", n_numbers=4).eval_prompts(recipe.eval_prompts)
    lenient = recipe.reasoning_task("sum", n_numbers=4, reward="substring")
    honest = lenient.rewards(prompts, run["thinking"]["replies"]).mean()
    assert run["hack"]["honest_proxy"] == pytest.approx(float(honest), rel=1e-6)  # 7 digits kept


def test_the_report_says_which_arms_and_seeds_a_partial_record_lacks_and_its_sittings(monkeypatch):
    """A record stopped after seed 0's thinking arm and resumed once: the block names what is missing, the command
    that measures it, and each sitting's commit."""
    import minirl.report.reasoning_bench as rb

    run = {k: v for k, v in _run(0).items() if k not in ("control", "answer-only", "hack", "fix")}
    run["thinking"] = {**run["thinking"], "commit": "b" * 40}
    record = {
        "name": "bench_reasoning",
        "file": "bench_reasoning.json",
        "command": "python -m minirl.bench.reasoning_rl --seeds 0 1 2 --save --resume",
        "commit": "c" * 40,
        "dirty": [],
        "date": "2026-11-27T00:00:00+00:00",
        "machine": {"cpu": "AMD EPYC", "cores": 2, "gpu": None, "calibration": {"gflops": 148.4, "threads": 2}},
        "load": {"others_busy": 0.1},
        "figures": {
            "budgets": BUDGETS,
            "base": BASE,
            "runs": [run],
            "summary": summarize([run], BASE),
            "recipes": {"think": reasoning_recipe("pretrained").__dict__, "answer": {}},
            "earlier": [{"commit": "a" * 40, "date": "2026-11-26T23:00:00+00:00"}],
        },
    }
    monkeypatch.setattr(rb, "_load", lambda name: record if name == "bench_reasoning" else None)
    text = rb.reasoning_seeds()
    assert (
        "Not measured yet (seed 0: control, answer-only, hack, fix; seed 1: every arm; seed 2: every arm): "
        "`python -m minirl.bench.reasoning_rl --seeds 0 1 2 --save --resume` runs only what the record lacks."
    ) in text
    sittings = (
        "Measured in 2 sittings with `--resume`: earlier ones at commit aaaaaaa, 2026-11-26; the last at commit "
        "ccccccc, 2026-11-27 (AMD EPYC, 148 GFLOP/s, other jobs 10%); seed 0 thinking at bbbbbbb."
    )
    assert sittings in text
    assert "pass@k on the first 32 held-out 4-number sums" in text  # the thinking arm's curves are there


def test_the_report_times_each_seeds_first_evaluation_at_the_target_level():
    """The first evaluation at or above 75% is found per seed (not the best one, not the last), with the run's wall
    time then; a seed whose curve never gets there is said so with its steps."""
    from minirl.report.reasoning_bench import _first_reaching

    def run(seed: int, curve: list[tuple[int, float, float]]) -> dict:
        evals = [{"step": float(s), "wall_time": t, "greedy_exact": a} for s, t, a in curve]
        return {"seed": seed, "thinking": {"run": {"evals": evals}}}

    runs = [
        run(0, [(0, 0.0, 0.29), (6, 300.0, 0.74), (12, 600.0, 0.75), (18, 900.0, 0.9)]),
        run(1, [(0, 0.0, 0.25), (6, 100.0, 0.6), (12, 200.0, 0.7)]),
        {"seed": 2},  # no thinking arm yet: left out
    ]
    assert _first_reaching(runs, 0.75) == (
        "First evaluation at 75% or more: seed 0 at step 12 (10.0 min of GRPO); seed 1 never in 12 steps."
    )
    assert _first_reaching([{"seed": 2}], 0.75) == ""

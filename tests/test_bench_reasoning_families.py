"""minirl.bench.reasoning_families: thinking vs answer-only on each family, its summary, targets and a quick run."""

import pytest

from minirl.bench.reasoning_families import check_targets, run_families_benchmark, run_family, summarize
from minirl.results import load


def _run(family, seed, thinking_rl, answer_rl):
    """A run's figures in the shape run_family returns (only what the summary reads)."""

    def form(base, warm, rl):
        return {"base": {"exact": base}, "warm": {"exact": warm}, "exact": rl}

    return {
        "family": family,
        "seed": seed,
        "thinking": form(0.0, 0.7, thinking_rl),
        "answer-only": form(0.05, 0.4, answer_rl),
    }


def test_summary_keeps_each_family_apart_with_mean_and_sample_std():
    runs = [_run("add", 0, 0.8, 0.4), _run("word", 0, 0.5, 0.45), _run("add", 1, 0.9, 0.5)]
    s = summarize(runs)
    assert list(s) == ["add", "word"]
    # two values a and b: mean (a+b)/2, sample std |a-b|/sqrt(2); float64 arithmetic on a handful of numbers
    assert s["add"]["thinking_rl"]["mean"] == pytest.approx(0.85, abs=1e-12)
    assert s["add"]["thinking_rl"]["std"] == pytest.approx(0.1 / 2**0.5, abs=1e-12)
    assert s["add"]["answer-only_warm"]["mean"] == pytest.approx(0.4, abs=1e-12)
    assert s["word"]["answer-only_rl"] == {"mean": 0.45, "std": 0.0, "min": 0.45, "max": 0.45}
    assert s["word"]["thinking_base"]["mean"] == 0.0


def test_targets_read_each_familys_gap_after_grpo():
    runs = [_run("add", 0, 0.8, 0.4), _run("word", 0, 0.5, 0.45)]
    assert check_targets(summarize(runs)) == {
        "add: thinking >= 15 points over answer-only": True,  # +40 points
        "word: thinking >= 15 points over answer-only": False,  # +5 points
    }
    # the warm start's gap does not count: thinking warm 70 %, answer-only warm 40 %, but 10 points after GRPO
    assert not check_targets(summarize([_run("add", 0, 0.5, 0.4)]))["add: thinking >= 15 points over answer-only"]


def test_bad_families_and_seeds_are_refused_before_any_model_loads():
    with pytest.raises(ValueError, match="family: expected one of"):
        run_family("sums", 0)
    with pytest.raises(ValueError, match=r"families: expected some of \['sum', 'word', 'add'\]; got \['wrd'\]"):
        run_families_benchmark(seeds=[0], families=["wrd"])
    with pytest.raises(ValueError, match="seeds: give at least one seed"):
        run_families_benchmark(seeds=[])


@pytest.mark.smollm2
def test_a_quick_run_trains_both_forms_for_the_same_time_and_saves_a_record(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    assert run_families_benchmark(seeds=[3], families=["add"], quick=True, save="families_quick") == 0
    out = capsys.readouterr().out
    assert "add   seed 3: thinking" in out and "add, mean ± std over seeds" in out
    figures = load("families_quick")["figures"]
    assert set(figures["targets"]) == {"add: thinking >= 15 points over answer-only"}
    run = figures["runs"][0]
    assert run["family"] == "add" and run["seed"] == 3
    thinking, answer = run["thinking"], run["answer-only"]
    assert thinking["warm"]["steps"] == 2 and thinking["run"]["steps"] == 2  # QUICK_SETTINGS
    # answer-only: up to 10x the steps within the worked warm start's seconds; GRPO has no time limit in quick
    assert 1 <= answer["warm"]["steps"] <= 20 and answer["run"]["steps"] == 2
    for form in (thinking, answer):
        for stage in (form["base"], form["warm"], form):
            assert 0.0 <= stage["exact"] <= 1.0 and 0.0 <= stage["truncated"] <= 1.0
    assert figures["summary"]["add"]["thinking_rl"]["std"] == 0.0  # one seed

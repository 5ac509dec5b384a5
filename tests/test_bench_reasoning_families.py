"""minirl.bench.reasoning_families: thinking vs answer-only on each family, its summary, targets and a quick run.

Tolerances: the summary is numpy's float64 mean and std of a few accuracies in [0, 1], within ~1e-15 of the exact
value: ``abs=1e-12``. A saved record keeps 7 significant digits (``minirl.results.records._jsonable``).
"""

import math

import pytest
import torch

import minirl.bench.reasoning_families as rf
from minirl.bench.reasoning_families import (
    FORMS,
    QUICK_SETTINGS,
    SETTINGS,
    check_targets,
    run_families_benchmark,
    run_family,
    summarize,
)
from minirl.bench.reasoning_rl import quick_recipe
from minirl.history import History
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import model_kind, reasoning_recipe
from minirl.results import load

EPS = 1e-12  # float64 on a handful of numbers (module docstring)


def _target(family):
    return f"{family}: thinking >= 15 points over answer-only"


def _run(family, seed, thinking_rl, answer_rl, thinking_warm=0.7, answer_warm=0.4):
    """A run's figures in the shape run_family returns (made-up numbers)."""

    def held_out(exact):
        return {"exact": exact, "format": 1.0, "truncated": 0.0}

    def form(base, warm, rl, steps):
        return {
            "base": held_out(base),
            "warm": {"steps": 20, "seconds": 30.0, **held_out(warm)},
            "run": {"steps": steps, "train_seconds": 300.0, "evals": [], "notes": []},
            **held_out(rl),
        }

    return {
        "family": family,
        "seed": seed,
        "thinking": form(0.0, thinking_warm, thinking_rl, SETTINGS["steps"]["thinking"]),
        "answer-only": form(0.05, answer_warm, answer_rl, SETTINGS["steps"]["answer-only"]),
    }


def test_summary_keeps_each_family_apart_with_mean_sample_std_min_and_max():
    runs = [_run("add", 0, 0.7, 0.4), _run("word", 0, 0.5, 0.45), _run("add", 1, 0.8, 0.5), _run("add", 2, 0.9, 0.3)]
    s = summarize(runs)
    assert list(s) == ["add", "word"]  # in the order the runs came
    assert set(s["add"]) == {f"{form}_{stage}" for form in FORMS for stage in ("base", "warm", "rl")}
    # 0.7, 0.8, 0.9: mean 0.8, sample std sqrt((0.01 + 0 + 0.01) / 2) = 0.1 (the population std would be 0.0816)
    add = s["add"]["thinking_rl"]
    assert add == pytest.approx({"mean": 0.8, "std": 0.1, "min": 0.7, "max": 0.9}, abs=EPS)
    # 0.4, 0.5, 0.3: mean 0.4, sample std 0.1
    assert s["add"]["answer-only_rl"] == pytest.approx({"mean": 0.4, "std": 0.1, "min": 0.3, "max": 0.5}, abs=EPS)
    # each stage reads its own figures: the warm start's and the base model's
    assert s["add"]["answer-only_warm"] == pytest.approx({"mean": 0.4, "std": 0.0, "min": 0.4, "max": 0.4}, abs=EPS)
    assert s["add"]["thinking_base"]["mean"] == 0.0 and s["add"]["answer-only_base"]["max"] == 0.05
    # one seed: std 0, not NaN
    assert s["word"]["answer-only_rl"] == {"mean": 0.45, "std": 0.0, "min": 0.45, "max": 0.45}
    two = summarize([_run("add", 0, 0.6, 0.4), _run("add", 1, 0.9, 0.4)])["add"]["thinking_rl"]
    assert two["std"] == pytest.approx(0.3 / math.sqrt(2), abs=EPS)  # two values a, b: |a - b| / sqrt(2)


def test_targets_read_each_familys_gap_after_grpo():
    runs = [_run("add", 0, 0.8, 0.4), _run("word", 0, 0.5, 0.45)]
    assert check_targets(summarize(runs)) == {_target("add"): True, _target("word"): False}  # +40, +5 points
    # the warm start's gap does not count: thinking warm 70 %, answer-only warm 40 %, but 10 points after GRPO
    assert check_targets(summarize([_run("add", 0, 0.5, 0.4)])) == {_target("add"): False}
    # answer-only ahead
    assert check_targets(summarize([_run("word", 0, 0.3, 0.6)])) == {_target("word"): False}
    # the means decide: 0.9 and 0.5 against 0.4 and 0.4 is +30 points, though seed 1 is only +10
    assert check_targets(summarize([_run("add", 0, 0.9, 0.4), _run("add", 1, 0.5, 0.4)])) == {_target("add"): True}


# ---- run_family's stages, without a model ------------------------------------------------------------------------


class _FakePolicy(torch.nn.Module):
    """One trainable weight, which the fake warm start adds 1 to and the fake GRPO 10."""

    def __init__(self, max_new_tokens):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))
        self.max_new_tokens = max_new_tokens


@pytest.fixture
def fake_stages(monkeypatch):
    """run_family's model, warm start, GRPO and evaluation replaced by fakes that note what they were asked for:
    the held-out "accuracy" is the weight, so a stage's figure says what ran before it."""
    calls = []

    def policy(recipe, name, seed=0, device=None):
        return _FakePolicy(recipe.max_new_tokens)

    def warm_start(policy, task, steps, prompts_per_step, learning_rate, seed, threads, progress):
        calls.append(("warm", task.thinking, steps, policy.max_new_tokens))
        with torch.no_grad():
            policy.w += 1
        return [None] * steps

    def train(config, policy):
        calls.append(("grpo", config.task.thinking, config.steps, policy.max_new_tokens))
        with torch.no_grad():
            policy.w += 10
        history = History(label="grpo", seed=config.seed)
        for step in range(config.steps):
            history.log(wall_time=step + 1.0, reward=0.5)
        return policy, history

    def held_out(policy, task, n_eval):
        return {"exact": float(policy.w.detach()), "format": 1.0, "truncated": 0.0}

    monkeypatch.setattr("minirl.lm.recipes.LMRecipe.policy", policy)
    monkeypatch.setattr(rf, "sft_warm_start", warm_start)
    monkeypatch.setattr(rf, "train", train)
    monkeypatch.setattr(rf, "_held_out", held_out)
    return calls


def test_each_form_warm_starts_from_the_base_model_then_takes_its_grpo_steps(fake_stages):
    run = run_family("add", 1)
    recipes = {form: reasoning_recipe(model_kind(SMOLLM2_ALIAS), thinking) for form, thinking in FORMS.items()}
    tokens = {form: r.max_new_tokens for form, r in recipes.items()}
    assert fake_stages == [
        ("warm", True, recipes["thinking"].sft_steps, tokens["thinking"]),
        ("grpo", True, SETTINGS["steps"]["thinking"], tokens["thinking"]),
        ("warm", False, recipes["answer-only"].sft_steps, tokens["answer-only"]),
        ("grpo", False, SETTINGS["steps"]["answer-only"], tokens["answer-only"]),
    ]
    assert run["family"] == "add" and run["seed"] == 1
    for form in FORMS:
        # from the base weights (0), not from the other form's GRPO (11); warm start +1, GRPO +10
        assert (run[form]["base"]["exact"], run[form]["warm"]["exact"], run[form]["exact"]) == (0.0, 1.0, 11.0)
        assert run[form]["warm"]["steps"] == recipes[form].sft_steps
        assert run[form]["run"]["steps"] == SETTINGS["steps"][form]
    # settings: the steps of each form
    fake_stages.clear()
    run_family("word", 0, {"steps": {"thinking": 3, "answer-only": 7}})
    assert [c[2] for c in fake_stages if c[0] == "grpo"] == [3, 7]


def test_a_quick_family_run_takes_the_quick_recipes_and_settings(fake_stages):
    run_family("add", 0, QUICK_SETTINGS, quick=True)
    quick = {form: quick_recipe(reasoning_recipe(model_kind(SMOLLM2_ALIAS), t)) for form, t in FORMS.items()}
    assert [c[2] for c in fake_stages] == [
        quick["thinking"].sft_steps,
        QUICK_SETTINGS["steps"]["thinking"],
        quick["answer-only"].sft_steps,
        QUICK_SETTINGS["steps"]["answer-only"],
    ]


def test_quick_alone_takes_the_quick_settings(fake_stages):
    run_family("add", 0, quick=True)
    assert [c[2] for c in fake_stages if c[0] == "grpo"] == list(QUICK_SETTINGS["steps"].values())


def test_a_gap_of_exactly_15_points_meets_the_target():
    # accuracies are whole percentages of the recipe's 100 held-out problems; 0.29 - 0.14 < 0.15 in float64
    assert check_targets(summarize([_run("add", 0, 0.29, 0.14)]))[_target("add")]


# ---- bad input ---------------------------------------------------------------------------------------------------


def test_bad_families_and_seeds_are_refused_before_any_model_loads(monkeypatch, tmp_path):
    def load(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr("minirl.lm.recipes.LMRecipe.policy", load)
    monkeypatch.setattr(rf, "run_family", load)
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    with pytest.raises(ValueError, match=r"family: expected one of \('sum', 'word', 'add'\); got 'sums'"):
        run_family("sums", 0)
    with pytest.raises(ValueError, match=r"families: expected some of \['sum', 'word', 'add'\]; got \['wrd'\]"):
        run_families_benchmark(seeds=[0], families=["wrd"])
    with pytest.raises(ValueError, match=r"families: expected some of .*; got \[\]"):
        run_families_benchmark(seeds=[0], families=[])
    with pytest.raises(ValueError, match="seeds: give at least one seed"):
        run_families_benchmark(seeds=[])
    assert not list(tmp_path.iterdir())  # nothing saved


# ---- the quick run, end to end -----------------------------------------------------------------------------------


@pytest.mark.smollm2
def test_a_quick_run_trains_both_forms_and_saves_a_record(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    assert run_families_benchmark(seeds=[3], families=["add"], quick=True, save="families_quick") == 0
    out = capsys.readouterr().out
    assert "add   seed 3: thinking" in out and "add, mean ± std over seeds" in out and "Summary" in out
    figures = load("families_quick")["figures"]
    assert figures["settings"] == {**QUICK_SETTINGS, "families": ["add"]}
    assert list(figures["targets"]) == [_target("add")]
    (run,) = figures["runs"]
    assert run["family"] == "add" and run["seed"] == 3
    kind = model_kind(SMOLLM2_ALIAS)
    for form, thinking in FORMS.items():
        f = run[form]
        # both forms warm-start for the quick recipe's sft_steps, then take QUICK_SETTINGS' GRPO steps
        assert f["warm"]["steps"] == quick_recipe(reasoning_recipe(kind, thinking)).sft_steps
        assert f["run"]["steps"] == QUICK_SETTINGS["steps"][form]
        assert f["warm"]["seconds"] > 0 and f["run"]["train_seconds"] > 0
        for stage in (f["base"], f["warm"], f):
            for key in ("exact", "format", "truncated"):
                assert 0.0 <= stage[key] <= 1.0, (form, key)
    summary = figures["summary"]["add"]
    assert set(summary) == {f"{form}_{stage}" for form in FORMS for stage in ("base", "warm", "rl")}
    for form in FORMS:  # one seed: each figure is the run's, with std 0
        assert summary[f"{form}_rl"]["std"] == 0.0 and summary[f"{form}_rl"]["mean"] == run[form]["exact"]
        assert summary[f"{form}_warm"]["mean"] == run[form]["warm"]["exact"]
        assert summary[f"{form}_base"]["mean"] == run[form]["base"]["exact"]

"""Notebook 11's benchmark (minirl.bench.self_training): the slipped demonstrations, best-of-N's three curves,
the summary over seeds and the targets, on hand-made data; the arms themselves run in the notebook's fast mode."""

from __future__ import annotations

import json

import pytest
import torch

import minirl.bench.self_training as st
from minirl.bench.resume import PROVENANCE
from minirl.bench.self_training import (
    ARMS,
    SlippedDemonstrations,
    best_of_n_curves,
    check_targets,
    run_seed,
    slipped_target,
    summarize,
)
from toy_envs.reasoning import ReasoningTask

TASK = ReasoningTask(n_numbers=4)


def test_a_slipped_demonstration_is_wrong_in_its_last_addition_only():
    gen = torch.Generator().manual_seed(0)
    for numbers in [(5, 0, 1, 4), (9, 9, 9, 9), (0, 0, 0, 1)]:
        right = sum(numbers)
        text = slipped_target(TASK, numbers, gen)
        head = TASK.scratchpad(numbers).rsplit(" = ", 1)[0]
        wrong = TASK.parse_answer(text)[0]
        assert text == f"<think>{head} = {wrong}.</think> {wrong}"  # the same steps, the last total slipped
        assert 1 <= abs(wrong - right) <= 3 and wrong >= 0


def test_slipped_demonstrations_slip_the_share_asked_for_repeatably():
    noisy = SlippedDemonstrations(TASK, 0.3)
    a = noisy.sample_prompts(400, torch.Generator().manual_seed(1))
    b = noisy.sample_prompts(400, torch.Generator().manual_seed(1))
    assert a == b
    slipped = sum(TASK.parse_answer(p.target)[0] != TASK.solution(p.numbers)[0] for p in a) / len(a)
    # 400 draws at 0.3: standard error sqrt(0.3 * 0.7 / 400) = 0.023; 4 of them either side
    assert abs(slipped - 0.3) < 4 * 0.023
    assert all(
        TASK.parse_answer(p.target) == TASK.solution(p.numbers)
        for p in SlippedDemonstrations(TASK, 0.0).sample_prompts(50, torch.Generator())
    )


def test_best_of_n_curves_by_hand():
    """Two problems, 3 replies each. Problem 0: one right reply, the judge's favourite; problem 1: one right
    reply that the judge ranks last, and two wrong replies with the same answer (the vote's winner)."""
    prompts = TASK.eval_prompts(2)
    right = [TASK.solution(p.numbers)[0] for p in prompts]
    pad = [TASK.scratchpad(p.numbers) for p in prompts]
    replies = [
        [f"<think>{pad[0]}</think> {right[0]}", f"<think>{pad[0]}</think> {right[0] + 1}", "no answer"],
        [f"<think>{pad[1]}</think> {right[1]}", f"<think>x</think> {right[1] + 2}", f"<think>y</think> {right[1] + 2}"],
    ]
    scores = torch.tensor([[0.9, 0.1, 0.2], [0.1, 0.5, 0.6]])
    curves = best_of_n_curves(TASK, prompts, replies, scores, torch.Generator().manual_seed(0), draws=2000)
    assert curves["verifier"] == pytest.approx([1 / 3, 2 / 3, 1.0])  # pass@N: 1 - C(2, N) / C(3, N)
    # the judge: problem 0 wins whenever reply 0 is drawn (1/3, 2/3, 1); problem 1 only with N = 1 and reply 0
    assert curves["judge"] == pytest.approx([(1 / 3 + 1 / 3) / 2, (2 / 3 + 0) / 2, (1 + 0) / 2])
    # the vote, N = 3: problem 0 ties three ways (one None): the first drawn readable answer, right 1/2 of the
    # time; problem 1: the wrong answer twice. Estimated from 2000 draws: standard error <= 0.5 / sqrt(2000) = 0.011
    assert curves["majority"][2] == pytest.approx((0.5 + 0.0) / 2, abs=4 * 0.011)


def _run(seed, sum4, seconds):
    return {
        "seed": seed,
        "warm": {"sum4": 0.2, "sum3": 0.9, "seconds": 10.0},
        "grpo": {"sum4": sum4, "sum3": 0.9, "arm_seconds": seconds},
    }


def test_summary_and_targets_over_seeds():
    runs = [_run(0, 0.8, 100.0), _run(1, 0.9, 700.0)]
    summary = summarize(runs)
    assert summary["grpo_sum4"]["mean"] == pytest.approx(0.85) and summary["grpo_sum4"]["min"] == 0.8
    assert summary["seed_minutes"]["max"] == pytest.approx(710 / 60)
    assert check_targets(runs) == {
        "each arm within 10 min": False,  # 700 s
        "each seed's arms within 30 min (3 seeds within 90)": True,
    }
    partial = summarize([{"seed": 0}])  # a seed saved before its warm start finished
    assert partial["seed_minutes"]["mean"] == 0.0


def test_unknown_arms_are_refused_before_loading_anything():
    with pytest.raises(ValueError, match=r"arms: unknown \['dagger'\]"):
        run_seed(0, arms=["grpo", "dagger"])
    assert ARMS[0] == "best_of_n" and "grpo_judge" in ARMS


# ---- --resume: one comparison measured in several sittings ------------------------------------------------------


def _fake_run_seed(calls):
    """run_seed without a model: a warm start and each arm asked, reported one by one to ``after_arm``; ``calls``
    collects (seed, arms, the stored seed's arms)."""

    def fake(seed, arms, budgets, device, progress, quick, after_arm=None, done=None):
        calls.append((seed, tuple(arms), None if done is None else sorted(set(done) & set(ARMS))))
        out = {"seed": seed, "warm": {"sum4": 0.2, "sum3": 0.9, "sum4_format": 1.0, "seconds": 10.0 + seed}}
        after_arm(dict(out))
        for i, arm in enumerate(arms):
            out[arm] = {"sum4": 0.5 + i / 10 + seed / 100, "sum3": 0.8, "arm_seconds": 60.0}
            after_arm(dict(out))
        return out

    return fake


def test_a_resumed_comparison_runs_only_the_arms_it_lacks_and_keeps_its_provenance(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    calls = []
    monkeypatch.setattr(st, "run_seed", _fake_run_seed(calls))
    load = lambda: json.loads((tmp_path / "bench_st_fake.json").read_text())  # noqa: E731
    # the first sitting: seed 0's noisy imitation and GRPO
    assert st.main(["--seeds", "0", "--arms", "imitate_noisy", "grpo", "--quick", "--save", "bench_st_fake"]) == 0
    first = load()
    assert first["figures"]["arms"] == ["imitate_noisy", "grpo"] and "earlier" not in first["figures"]
    # the second: seeds 0 and 1; seed 0 keeps its two arms (and its warm start) and runs only imitate
    calls.clear()
    argv = ["--seeds", "0", "1", "--arms", "imitate", "grpo", "--quick", "--save", "bench_st_fake", "--resume"]
    assert st.main(argv) == 0
    assert calls == [(0, ("imitate",), ["grpo", "imitate_noisy"]), (1, ("imitate", "grpo"), None)]
    f = load()["figures"]
    assert f["seeds"] == [0, 1] and f["arms"] == ["imitate", "imitate_noisy", "grpo"]
    seed0 = f["runs"][0]
    assert seed0["grpo"] == first["figures"]["runs"][0]["grpo"] and seed0["imitate"]["sum4"] == 0.5
    assert seed0["warm"] == first["figures"]["runs"][0]["warm"]
    # the summary is over the seeds: GRPO 0.6 (seed 0, the second arm of its sitting) and 0.61 (seed 1); an arm
    # that one seed lacks has no summary yet
    assert f["summary"]["grpo_sum4"]["mean"] == pytest.approx(0.605, abs=1e-6)  # 7 digits kept
    assert "imitate_noisy_sum4" not in f["summary"]
    (earlier,) = f["earlier"]
    assert earlier["date"] == first["date"] and earlier["command"] == first["command"]
    assert set(earlier) == set(PROVENANCE)
    # nothing left to run: nothing runs, and both earlier sittings are kept
    calls.clear()
    assert st.main(argv) == 0
    assert calls == [] and len(load()["figures"]["earlier"]) == 2


def test_resuming_a_comparison_of_other_budgets_or_without_save_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    monkeypatch.setattr(st, "run_seed", _fake_run_seed([]))
    st.main(["--seeds", "0", "--arms", "grpo", "--quick", "--save", "bench_st_fake"])
    other = r"resume: the stored record was measured with other recipe, budgets, quick than this run's"
    with pytest.raises(ValueError, match=other):  # the stored record is a quick one
        st.main(["--seeds", "0", "--arms", "imitate", "--save", "bench_st_fake", "--resume"])
    with pytest.raises(ValueError, match=r"resume: give --save too"):
        st.main(["--seeds", "0", "--resume"])


def test_the_report_tabulates_each_seed_and_the_mean_with_a_second_commands_arms(monkeypatch):
    """Seeds 0-2 in the main record, seed 0's GRPO in a second command's: one row per arm with every seed, the mean
    ± std over the seeds that have the arm, and the arm a seed lacks marked."""
    from minirl.report import self_training as rs

    def record(runs, arms):
        recipe = {"sft_steps": 20, "steps": 40, "prompts_per_step": 4, "group_size": 8, "temperature": 1.3}
        recipe.update(sft_prompts_per_step=16, eval_prompts=100)
        return {
            "command": "python -m minirl.bench.self_training",
            "file": "bench_self_training.json",
            "name": "bench_self_training",
            "commit": "c" * 40,
            "date": "2026-11-28T00:00:00+00:00",
            "machine": {"cpu": "Xeon", "cores": 2, "gpu": None},
            "figures": {"recipe": recipe, "budgets": {"noise": 0.3}, "arms": arms, "runs": runs},
        }

    def arm(sum4, seconds=600.0):
        return {"sum4": sum4, "sum3": 0.9, "steps": 40, "seconds": seconds}

    main = record(
        [{"seed": s, "warm": {"sum4": 0.3}, "imitate": arm(0.9 + s / 100)} for s in (0, 1, 2)] + [],
        ["imitate", "grpo"],
    )
    for s in (1, 2):
        main["figures"]["runs"][s]["grpo"] = arm(0.8 + s / 10)
    extra = record([{"seed": 0, "warm": {"sum4": 0.3}, "grpo": arm(0.8)}], ["grpo"])
    records = {"bench_self_training": main, "bench_self_training_cpu_arms": extra}
    monkeypatch.setattr(rs, "_load", lambda name: records.get(name))
    text = rs.self_training()
    header = "| arm (from the warm start) | 4 numbers, seed 0 | 4 numbers, seed 1 | 4 numbers, seed 2 | mean ± std |"
    assert header in text
    assert "| imitation: worked 4-number solutions | 90% | 91% | 92% | 91% ± 1 | 90% | 40 | 10.0 min |" in text
    assert "| GRPO (the verifier's reward) | 80% | 90% | 100% | 90% ± 10 | 90% | 40 | 10.0 min |" in text
    assert "grpo of seed 0: a second command, from its own warm start (30% on 4-number sums)." in text
    # best-of-N on two seeds: the mean ± std at each N, and the judge's agreement on each seed
    judge = {"yes_when_right": 0.0, "yes_when_wrong": 0.0, "agreement": 0.7}
    for s, v in ((0, 0.4), (1, 0.6)):
        curves = {key: [0.2, v] for key in ("verifier", "majority", "judge")}
        bon = {"curves": curves, "judge": {**judge, "agreement": v}, "judge_mean_right": 0.3, "judge_mean_wrong": 0.2}
        main["figures"]["runs"][s]["best_of_n"] = bon
    main["figures"]["budgets"]["bon_prompts"] = 32
    text = rs.self_training()
    assert "(seed(s) 0, 1): N replies at T = 1 to each of the first 32 held-out problems" in text
    assert "| the verifier (pass@N) | 20% ± 0 | 50% ± 14 |" in text  # 0.4 and 0.6: std 0.141
    assert "seed 0: P(yes) ≥ 0.5 for 0% of the right replies and 0% of the wrong ones, agreement 40%" in text
    assert "seed 1: P(yes) ≥ 0.5 for 0% of the right replies and 0% of the wrong ones, agreement 60%" in text
    # README's headline row: the CPU's three seeds, once imitation, expert iteration and GRPO each have three
    from minirl.report import headline as hl

    monkeypatch.setattr(hl, "_load", lambda name: records.get(name))
    assert hl._headline_self_training_cpu() is None  # no expert iteration yet: the GPU's row stays
    for s in (0, 1, 2):
        main["figures"]["runs"][s]["expert_iteration"] = arm(0.7)
    what, result, used, _ = hl._headline_self_training_cpu()
    assert what.endswith("one budget from one warm start (3 seeds)") and used == [main, extra]
    assert result == (
        "4-number sums after 40 steps from 30% ± 0: imitation of worked solutions 91% ± 1, "
        "expert iteration 70% ± 0, GRPO 90% ± 10"
    )
    del main["figures"]["runs"][2]["grpo"]  # seed 2 has no GRPO yet
    assert "| GRPO (the verifier's reward) | 80% | 90% | — | 85% ± 7 (2 seeds) |" in rs.self_training()
    assert hl._headline_self_training_cpu() is None
    del main["figures"]["runs"][1]["grpo"]
    assert "| GRPO (the verifier's reward) | 80% | — | — | 80% ± 0 (1 seed) |" in rs.self_training()
    # GRPO on the judge: each seed's judge reward beside the verifier's accuracy of the same samples
    for s, (reward, exact) in ((0, (0.37, 0.0)), (2, (0.41, 0.05))):
        run = {"exact_last5": exact}
        main["figures"]["runs"][s]["grpo_judge"] = {**arm(0.0), "judge_reward_last5": reward, "run": run}
    main["figures"]["runs"][0]["grpo_judge"]["examples"] = ["<think>6 + 0 = 6.</think> 8"]
    text = rs.self_training()
    assert "verifier's accuracy of the same samples: seed 0: 0.37 and 0%; seed 2: 0.41 and 5%;" in text
    assert "greedy replies after seed 0's run: `'<think>6 + 0 = 6.</think> 8'`" in text


@pytest.mark.parametrize("quick", [True, False])
def test_a_quick_arm_leaves_the_last_evaluation_to_held_out(monkeypatch, quick):
    """Fast mode: the loop's end-of-run evaluation would repeat held_out's 4-number figure (a generate call)."""
    from minirl.bench.reasoning_rl import quick_recipe
    from minirl.lm.recipes import reasoning_recipe

    arms = object.__new__(st.SelfTrainingArms)  # the recipes and tasks without loading SmolLM2
    recipe = reasoning_recipe("pretrained")
    arms.recipes = {True: quick_recipe(recipe) if quick else recipe}
    arms.tasks = {True: {4: arms.recipes[True].reasoning_task("sum", thinking=True, n_numbers=4)}}
    arms.quick, arms.budgets, arms._judge = quick, st.QUICK_BUDGETS, None
    arms.policy = type("Stub", (), {"max_new_tokens": 0})()
    seen = []
    monkeypatch.setattr(st, "train", lambda config, policy: (seen.append(config), (policy, "history"))[1])
    assert arms.rl("grpo", seed=0, progress=False) == "history"
    assert seen[0].eval_at_end is (not quick)
    assert seen[0].eval_every == (0 if quick else recipe.eval_every)

"""The minirl command: train, compare and bench end to end on tiny budgets."""

import pytest

from minirl.cli import main


def test_train_sorting_prints_summary_and_saves_plot(tmp_path, capsys):
    png = tmp_path / "grpo.png"
    assert (
        main(
            [
                "train",
                "--task",
                "sorting",
                "--algo",
                "grpo",
                "--steps",
                "30",
                "--seed",
                "1",
                "--no-progress",
                "--plot",
                str(png),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "grpo seed 1: 30 steps" in out and "greedy exact" in out and f"saved {png}" in out
    assert png.stat().st_size > 10_000


def test_compare_maze_two_methods(tmp_path, capsys):
    png = tmp_path / "maze.png"
    assert (
        main(
            [
                "compare",
                "--task",
                "maze",
                "--algos",
                "reinforce,ppo",
                "--seeds",
                "2",
                "--steps",
                "10",
                "--workers",
                "1",
                "--no-progress",
                "--plot",
                str(png),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.count("greedy success") == 4
    assert "compared 2 algorithms x 2 seeds on maze" in out
    assert png.exists()


def test_compare_sorting_summary_line(capsys):
    assert (
        main(["compare", "--algos", "naive,grpo", "--seeds", "1", "--steps", "10", "--workers", "1", "--no-progress"])
        == 0
    )
    assert "mean final greedy_exact: naive" in capsys.readouterr().out


def test_compare_variable_length_sorting(tmp_path, capsys):
    png = tmp_path / "lengths.png"
    assert (
        main(
            [
                "compare",
                "--task",
                "variable_sorting",
                "--length",
                "3",
                "--vocab-size",
                "4",
                "--algos",
                "grpo,dr_grpo",
                "--seeds",
                "1",
                "--steps",
                "10",
                "--workers",
                "1",
                "--no-progress",
                "--plot",
                str(png),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "compared 2 algorithms x 1 seeds on variable_sorting" in out and png.exists()
    with pytest.raises(SystemExit, match="not defined for variable_sorting"):
        main(["train", "--task", "variable_sorting", "--reward", "sort_inclusion_ordering", "--no-progress"])


def test_unknown_algorithm_is_a_clear_error():
    with pytest.raises(SystemExit, match=r"unknown algorithm\(s\) \['ppo'\] for --task sorting"):
        main(["train", "--algo", "ppo", "--no-progress"])
    with pytest.raises(SystemExit, match="for --task maze"):
        main(["compare", "--task", "maze", "--algos", "grpo", "--no-progress"])


@pytest.mark.slow  # over ~5 s on 2 cores (pyproject.toml's marker): out of the fast loop
def test_bench_quick_runs(capsys, monkeypatch):
    import minirl.bench.toy as bench

    monkeypatch.setattr(bench, "LARGE_STEPS", 20)
    assert main(["bench", "--quick", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    for part in ["1. Sorting 3 numbers", "2. Sorting 5 numbers", "supervised ceiling", "3. Maze", "Summary"]:
        assert part in out


@pytest.mark.parametrize(
    "argv, words",
    [
        (["train", "--length", "-3", "--steps", "1", "--no-progress"], ["minirl train: error:", "length", ">= 1"]),
        (
            ["compare", "--algos", "grpo", "--group-size", "0", "--steps", "1", "--no-progress"],
            ["minirl compare: error:", "group_size"],
        ),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(argv, words, capsys, monkeypatch):
    monkeypatch.delenv("MINIRL_DEBUG", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err
    monkeypatch.setenv("MINIRL_DEBUG", "1")
    with pytest.raises(ValueError):
        main(argv)


@pytest.mark.slow  # over ~5 s on 2 cores (pyproject.toml's marker): out of the fast loop
def test_ladder_prints_what_each_knob_bought_and_saves_the_figure(tmp_path, capsys):
    png = tmp_path / "ladder.png"
    assert main(["ladder", "--seeds", "1", "--steps", "20", "--workers", "2", "--no-progress", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.count(" seed 0: 20 steps") == 6  # six rungs, each a line when it finishes
    for line in [
        "naive: Δ = r",
        "baselined: +delta_mode=centered_rewards",
        "+importance_ratio=True, +inner_epochs=4",
        "clipped: +clip_eps_low=0.2",
        "clipped_entropy: +entropy_coef=0.3",
        "after 2,560 samples",
    ]:
        assert line in out, line
    assert out.count("helps:") + out.count("no gain at the end") == 5  # a verdict for each rung above the first
    assert png.stat().st_size > 50_000


@pytest.mark.slow  # over ~5 s on 2 cores (pyproject.toml's marker): out of the fast loop
def test_workers_do_not_change_the_runs():
    from minirl.compare import run_all
    from minirl.ladder import ladder_configs

    configs = ladder_configs(2, rungs=("baselined", "clipped"), steps=5, eval_every=5, eval_prompts=50)
    one, two = run_all(configs, workers=1, progress=False), run_all(configs, workers=2, progress=False)
    timings = {"wall_time", "gen_seconds", "update_seconds", "tokens_per_second"}
    strip = lambda h: [{k: v for k, v in r.items() if k not in timings} for r in h.records]  # noqa: E731
    for rung in one:
        assert [strip(h) for h in one[rung]] == [strip(h) for h in two[rung]]


def test_set_changes_a_knob_and_labels_the_run(capsys):
    assert (
        main(
            [
                "train",
                "--algo",
                "clipped",
                "--set",
                "inner_epochs=2",
                "--set",
                "clip_eps_high=0.28",
                "--steps",
                "3",
                "--eval-prompts",
                "20",
                "--no-progress",
            ]
        )
        == 0
    )
    assert "clipped[inner_epochs=2,clip_eps_high=0.28] seed 0: 3 steps" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, words",
    [
        (["train", "--set", "inner_epoch=2"], ["unknown AlgoConfig knob 'inner_epoch'", "'inner_epochs'"]),
        (["train", "--set", "inner_epochs=two"], ["--set inner_epochs", "expected int"]),
        (["train", "--set", "importance_ratio=maybe"], ["true or false"]),
    ],
)
def test_set_rejects_unknown_knobs_and_bad_values(argv, words, capsys, monkeypatch):
    monkeypatch.delenv("MINIRL_DEBUG", raising=False)
    assert main([*argv, "--steps", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err, err


def test_flags_come_from_the_config_dataclasses(capsys):
    from minirl.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--help"])
    out = capsys.readouterr().out
    for flag in [
        "--prompts-per-step",
        "--lr-schedule",
        "--max-grad-norm",
        "--measure-kl",
        "--no-measure-kl",
        "--episodes-per-step",
        "--ppo-epochs",
        "--set KNOB=VALUE",
    ]:
        assert flag in out, flag
    assert "responses sampled per prompt (G, the ``trial`` axis)" in " ".join(out.split())  # the docstring's words
    args = build_parser().parse_args(["train", "--max-grad-norm", "none", "--no-measure-kl", "--group-size", "4"])
    assert (args.max_grad_norm, args.measure_kl, args.group_size) == (None, False, 4)


def test_a_flag_of_another_task_is_an_error():
    with pytest.raises(SystemExit, match="--ppo-epochs appl"):
        main(["train", "--ppo-epochs", "2", "--steps", "1", "--no-progress"])
    with pytest.raises(SystemExit, match="--group-size do"):
        main(["train", "--task", "maze", "--algo", "ppo", "--group-size", "2", "--no-progress"])


@pytest.mark.slow  # over ~5 s on 2 cores (pyproject.toml's marker): out of the fast loop
def test_train_a_reasoning_task_with_a_scratchpad_and_evaluate_it(tmp_path, capsys):
    import json

    from toy_envs.reasoning import REASONING_KINDS

    out = tmp_path / "run"
    flags = ["--task", "reasoning", "--family", "word", "--model", "tiny", "--steps", "2", "--sft-steps", "2"]
    flags += ["--prompts-per-step", "2", "--group-size", "2", "--eval-prompts", "4", "--no-progress"]
    assert main(["train", *flags, "--out", str(out)]) == 0
    stored = json.loads((out / "config.json").read_text())
    assert stored["task"]["class"] == "toy_envs.reasoning:ReasoningTask"
    assert stored["task"]["args"]["family"] == "word" and stored["task"]["args"]["thinking"] is True
    assert stored["model"]["recipe"]["max_new_tokens"] == 48  # THINKING_TOKENS: room for the scratchpad
    summary = capsys.readouterr().out
    assert "pass@1 " in summary and "pass@8 " in summary and "greedy replies cut by the budget" in summary
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert all(0.0 <= r["truncated"] <= 1.0 and "length_correct" in r and "length_wrong" in r for r in rows)
    evals = [json.loads(line) for line in (out / "evals.jsonl").read_text().splitlines()]
    assert {"pass@1", "pass@8", "greedy_truncated"} <= set(evals[-1])
    assert main(["eval", str(out), "--samples-per-prompt", "2"]) == 0
    printed = capsys.readouterr().out
    assert "greedy answer kinds: " + "; ".join(f"{k} " for k in REASONING_KINDS[:1]) in printed
    assert "unclosed scratchpad" in printed
    assert (
        main(
            ["train", *flags, "--no-thinking", "--verifier", "contains", "--pass-k", "0", "--out", str(tmp_path / "b")]
        )
        == 0
    )
    args = json.loads((tmp_path / "b" / "config.json").read_text())["task"]["args"]
    assert args["thinking"] is False and args["reward"] == "contains"
    assert "pass@" not in capsys.readouterr().out  # --pass-k 0: no pass@k at the evaluations

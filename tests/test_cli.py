"""The minirl command: train, compare and bench end to end on tiny budgets."""

import pytest

from minirl.cli import main


def test_train_sorting_prints_summary_and_saves_plot(tmp_path, capsys):
    png = tmp_path / "grpo.png"
    assert main(["train", "--task", "sorting", "--algo", "grpo", "--steps", "30", "--seed", "1",
                 "--no-progress", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "grpo seed 1: 30 steps" in out and "greedy exact" in out and f"saved {png}" in out
    assert png.stat().st_size > 10_000


def test_compare_maze_two_methods(tmp_path, capsys):
    png = tmp_path / "maze.png"
    assert main(["compare", "--task", "maze", "--algos", "reinforce,ppo", "--seeds", "2", "--steps", "10",
                 "--no-progress", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.count("greedy success") == 4
    assert "compared 2 algorithms x 2 seeds on maze" in out
    assert png.exists()


def test_compare_sorting_summary_line(capsys):
    assert main(["compare", "--algos", "naive,grpo", "--seeds", "1", "--steps", "10", "--no-progress"]) == 0
    assert "mean final greedy_exact: naive" in capsys.readouterr().out


def test_compare_variable_length_sorting(tmp_path, capsys):
    png = tmp_path / "lengths.png"
    assert main(["compare", "--task", "variable_sorting", "--length", "3", "--vocab-size", "4", "--algos",
                 "grpo,dr_grpo", "--seeds", "1", "--steps", "10", "--no-progress", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "compared 2 algorithms x 1 seeds on variable_sorting" in out and png.exists()
    with pytest.raises(SystemExit, match="not defined for variable_sorting"):
        main(["train", "--task", "variable_sorting", "--reward", "sort_inclusion_ordering", "--no-progress"])


def test_unknown_algorithm_is_a_clear_error():
    with pytest.raises(SystemExit, match=r"unknown algorithm\(s\) \['ppo'\] for --task sorting"):
        main(["train", "--algo", "ppo", "--no-progress"])
    with pytest.raises(SystemExit, match="for --task maze"):
        main(["compare", "--task", "maze", "--algos", "grpo", "--no-progress"])


def test_bench_quick_runs(capsys, monkeypatch):
    import minirl.bench as bench

    monkeypatch.setattr(bench, "LARGE_STEPS", 20)
    assert main(["bench", "--quick", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    for part in ["1. Sorting 3 numbers", "2. Sorting 5 numbers", "supervised ceiling", "3. Maze", "Summary"]:
        assert part in out


@pytest.mark.parametrize("argv, words", [
    (["train", "--length", "-3", "--steps", "1", "--no-progress"], ["minirl train: error:", "length", ">= 1"]),
    (["compare", "--algos", "grpo", "--group-size", "0", "--steps", "1", "--no-progress"],
     ["minirl compare: error:", "group_size"]),
])
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

"""Run folders (minirl.runs): what a kept run holds, resuming bit for bit, Ctrl-C, bad input, using the model."""

import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from minirl.cli import EVAL_SAMPLING_SEED, main
from minirl.lm import load_policy, make_tiny_lm
from minirl.lm.recipes import recipe_for
from minirl.pass_at_k import sampled_pass_at_k
from minirl.runs import TIMING_METRICS, RunError, RunFolder, load_run_policy
from minirl.train import TrainConfig, evaluation_prompts, train
from toy_envs.text_tasks import ANSWER_KINDS

ROOT = Path(__file__).resolve().parent.parent


def untimed(rows: list[dict]) -> list[dict]:
    """The rows without their timings; a NaN (``length_correct`` in a step with no correct reply) becomes "nan",
    so that equal runs compare equal (NaN != NaN)."""
    return [{k: "nan" if v != v else v for k, v in r.items() if k not in TIMING_METRICS} for r in rows]


def toy_config(**changes) -> TrainConfig:
    knobs = {"steps": 12, "prompts_per_step": 8, "group_size": 4, "eval_every": 5, "eval_prompts": 50}
    return TrainConfig(**{**knobs, **changes, "progress": False})


class StopAt(RunFolder):
    """A run folder whose run is 'interrupted' (as by Ctrl-C) during step ``stop``."""

    stop = 0

    def after_step(self, step, state):
        self._stop = step == self.stop
        super().after_step(step, state)


def interrupted_then_resumed(path, config, model_factory, stop: int, save_every: int = 0):
    run = StopAt.create(path, config, save_every=save_every)
    run.stop = stop
    with pytest.raises(KeyboardInterrupt):
        train(config, model_factory(), run=run)
    assert len((path / "metrics.jsonl").read_text().splitlines()) == stop
    return train(config, model_factory(), run=RunFolder.resume(path, config))[1]


def test_toy_run_folder_holds_config_metrics_model_and_reloads(tmp_path):
    config = toy_config()
    model, history = train(config, run=RunFolder.create(tmp_path / "run", config))
    run = tmp_path / "run"
    names = {p.name for p in run.iterdir()}
    assert {"config.json", "env.json", "metrics.jsonl", "evals.jsonl", "curves.png", "model.pt", "model.json"} <= names
    stored = json.loads((run / "config.json").read_text())
    assert stored["steps"] == 12 and stored["preset"] == "grpo" and stored["algo"]["clip_eps_low"] == 0.2
    assert stored["task"] == {
        "class": "toy_envs.sorting:SortingTask",
        "args": {"vocab_size": 5, "length": 3, "reward": "sort_distance"},
    }
    assert json.loads((run / "env.json").read_text())["torch"] == torch.__version__
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert lines == history.records and len(lines) == 12
    assert [json.loads(x) for x in (run / "evals.jsonl").read_text().splitlines()] == history.evals
    assert not list(run.glob(".*"))  # no temporary file left behind
    policy = load_run_policy(run)
    prompts = torch.tensor([[3, 1, 2], [4, 0, 0]])
    assert torch.equal(policy.greedy(prompts).tokens, model(prompts).argmax(-1).unsqueeze(1))


def test_a_run_folder_leaves_the_numbers_unchanged(tmp_path):
    config = toy_config()
    _, kept = train(config, run=RunFolder.create(tmp_path / "run", config))
    assert untimed(kept.records) == untimed(train(config)[1].records)


def test_toy_resume_after_interrupt_equals_an_uninterrupted_run(tmp_path):
    config = toy_config()
    _, full = train(config)
    resumed = interrupted_then_resumed(tmp_path / "run", config, lambda: None, stop=7)
    assert len(resumed) == 12
    assert untimed(resumed.records) == untimed(full.records)
    assert untimed(resumed.evals) == untimed(full.evals)
    assert untimed(json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == untimed(
        full.records
    )


def tiny_lm_setup():
    recipe = recipe_for("tiny").with_(max_new_tokens=6)
    task = recipe.task()
    config = recipe.train_config(
        task, seed=0, steps=4, prompts_per_step=2, group_size=2, eval_every=2, eval_prompts=3, progress=False
    )
    return config, lambda: make_tiny_lm(seed=0, max_new_tokens=6)


def test_tiny_lm_resume_after_interrupt_equals_an_uninterrupted_run(tmp_path):
    config, factory = tiny_lm_setup()
    _, full = train(config, factory())
    resumed = interrupted_then_resumed(tmp_path / "run", config, factory, stop=2)
    assert untimed(resumed.records) == untimed(full.records)
    assert untimed(resumed.evals) == untimed(full.evals)
    assert (tmp_path / "run" / "checkpoint" / "reference.pt").is_file() == (config.algo.kl_coef > 0)
    policy = load_policy(tmp_path / "run")  # a run folder's model/
    assert policy.max_new_tokens == 32  # no recipe in config.json: CausalLMPolicy's default
    assert sum(p.numel() for p in policy.parameters()) == 865_792


def test_existing_folder_needs_resume_or_overwrite(tmp_path):
    config = toy_config(steps=2)
    train(config, run=RunFolder.create(tmp_path / "run", config))
    with pytest.raises(RunError, match=r"run folder .*run exists: resume it with --resume"):
        RunFolder.create(tmp_path / "run", config)
    RunFolder.create(tmp_path / "run", config, overwrite=True)
    assert not (tmp_path / "run" / "model.pt").exists()


def test_resume_names_the_changed_knob_and_the_missing_or_corrupted_file(tmp_path):
    config = toy_config(steps=4)
    path = tmp_path / "run"
    train(config, run=RunFolder.create(path, config))
    with pytest.raises(RunError, match=r"missing checkpoint file .*checkpoint/training.pt"):
        RunFolder.resume(path, config)
    train(config, run=RunFolder.create(path, config, overwrite=True, save_every=2))
    with pytest.raises(RunError, match=r"learning_rate differs from its config.json \(0.01 there, 0.02 now\)"):
        RunFolder.resume(path, toy_config(steps=4, learning_rate=0.02))
    with pytest.raises(RunError, match=r"algo.clip_eps_low differs"):
        RunFolder.resume(path, toy_config(steps=4, algo=config.algo.with_(clip_eps_low=0.1)))
    with pytest.raises(RunError, match=r"task.args.length differs"):
        RunFolder.resume(path, toy_config(steps=4, task=type(config.task)(vocab_size=5, length=4)))
    (path / "checkpoint" / "policy.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(RunError, match=r"corrupted checkpoint file .*policy.pt"):
        train(config, run=RunFolder.resume(path, config))
    with pytest.raises(RunError, match=r"is not a run folder: missing .*config.json"):
        RunFolder(tmp_path / "nothing").config()


def test_load_policy_names_what_a_folder_lacks(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"is not a model folder: missing config.json"):
        load_policy(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"missing its weights \(model.safetensors"):
        load_policy(tmp_path)
    config = toy_config(steps=2)
    train(config, run=RunFolder.create(tmp_path / "toy", config))
    with pytest.raises(FileNotFoundError, match=r"holds no language model: missing .*toy/model"):
        load_policy(tmp_path / "toy")


def test_cli_train_out_eval_generate_on_the_toy_task(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    flags = ["--steps", "20", "--prompts-per-step", "8", "--group-size", "4", "--eval-prompts", "50", "--no-progress"]
    assert main(["train", *flags, "--out", str(out), "--save-every", "5"]) == 0
    assert f"keeping the run in {out}" in capsys.readouterr().out
    assert (out / "checkpoint" / "training.pt").is_file() and (out / "model.pt").is_file()
    assert main(["train", *flags, "--out", str(out)]) == 2
    assert "exists: resume it with --resume" in capsys.readouterr().err
    assert main(["train", "--resume", str(out), "--learning-rate", "0.5"]) == 2
    assert "learning_rate differs" in capsys.readouterr().err
    assert main(["eval", str(out), "--samples", "2"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"{out}: greedy_exact ") and "on 50 evaluation prompts" in printed[0]
    assert len(printed) == 4 and printed[1].startswith("  pass@1 ") and "->" in printed[2]
    assert main(["generate", str(out), "3 1 2"]) == 0
    assert len(capsys.readouterr().out.split()) == 3
    assert main(["generate", str(out), "3 1"]) == 2
    assert "prompt must be 3 numbers" in capsys.readouterr().err
    assert main(["generate", str(out), "4 0 2"]) == 0
    one = capsys.readouterr().out.strip()
    monkeypatch.setattr("sys.stdin", io.StringIO("4 0 2\n3 x\n3 1 2\n\nnever read\n"))  # no prompt: type them
    assert main(["generate", str(out)]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[0] == f"{out}: type a prompt, an empty line (or Ctrl-D) ends"
    assert lines[1] == "> " + one and lines[2].startswith("> error: prompt must be 3 numbers")
    assert len(lines[3].split()) == 4 and "never" not in lines[4]  # an empty line ends the loop


def test_cli_generate_on_a_tiny_lm_run(tmp_path, capsys):
    out = tmp_path / "lm"
    flags = ["--task", "text_sort", "--model", "tiny", "--steps", "2", "--sft-steps", "0", "--eval-prompts", "2"]
    flags += ["--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens", "4", "--no-progress"]
    assert main(["train", *flags, "--out", str(out)]) == 0
    assert (out / "model" / "model.safetensors").is_file()
    capsys.readouterr()
    assert main(["generate", str(out), "Sort in increasing order: 7, 2, 9"]) == 0
    answer = capsys.readouterr().out
    policy = load_policy(out)
    task = RunFolder(out).task()
    prompt = task.eval_prompts(1, torch.Generator().manual_seed(0))[0]
    messages = [*prompt.messages[:-1], {"role": "user", "content": "Sort in increasing order: 7, 2, 9"}]
    assert policy.max_new_tokens == 4
    assert answer == policy.greedy([messages]).answers[0][0] + "\n"


def _pass_at_k_line(run: Path, task, n_prompts: int, ks: list[int], n_samples: int) -> str:
    """The pass@k line minirl eval prints, computed here: the same prompts, the same generator seed."""
    prompts = evaluation_prompts(task, n_prompts, torch.Generator().manual_seed(10_000))  # seed 0 runs
    policy = load_run_policy(run)
    scores = sampled_pass_at_k(policy, task, prompts, n_samples, ks, torch.Generator().manual_seed(EVAL_SAMPLING_SEED))
    return "  " + ", ".join(f"{k} {v:.1%}" for k, v in scores.items()) + f" ({n_samples} samples per prompt, T = 1)"


def test_cli_eval_pass_at_k_on_a_toy_run(tmp_path, capsys):
    out = tmp_path / "run"
    flags = ["--steps", "10", "--prompts-per-step", "8", "--group-size", "4", "--eval-prompts", "40", "--no-progress"]
    assert main(["train", *flags, "--task", "sorting", "--length", "3", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["eval", str(out), "--samples", "1", "--samples-per-prompt", "6", "--k", "1,2,6"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1] == _pass_at_k_line(out, RunFolder(out).task(), 40, [1, 2, 6], 6)
    assert len(printed) == 3  # no answer kinds for a toy task
    assert main(["eval", str(out), "--samples-per-prompt", "4"]) == 0
    default_ks = capsys.readouterr().out.splitlines()[1]
    assert default_ks.startswith("  pass@1 ") and ", pass@4 " in default_ks  # --k defaults to 1,N
    for bad, message in [
        (["--k", "1,9"], "--k must be integers in 1..--samples-per-prompt = 8; got '1,9'"),
        (["--k", "a"], "--k must be comma-separated integers"),
        (["--samples-per-prompt", "0"], "--samples-per-prompt must be >= 1; got 0"),
        (["--n-numbers", "4"], "apply to a text run (text_sort, text_add)"),
    ]:
        assert main(["eval", str(out), *bad]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.splitlines()) == 1


def test_cli_eval_on_a_tiny_lm_run_and_another_task(tmp_path, capsys):
    out = tmp_path / "lm"
    flags = ["--task", "text_sort", "--model", "tiny", "--steps", "2", "--sft-steps", "0", "--eval-prompts", "3"]
    flags += ["--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens", "4", "--no-progress"]
    assert main(["train", *flags, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["eval", str(out), "--samples", "1", "--samples-per-prompt", "2"]) == 0
    printed = capsys.readouterr().out.splitlines()
    run_task = RunFolder(out).task()
    assert printed[1] == _pass_at_k_line(out, run_task, 3, [1, 2], 2)
    kinds = dict(k.rsplit(" ", 1) for k in printed[2].removeprefix("  greedy answer kinds: ").split("; "))
    assert list(kinds) == list(ANSWER_KINDS)
    assert abs(sum(float(v.rstrip("%")) for v in kinds.values()) - 100) <= 0.25  # five values rounded to 0.1
    shown = evaluation_prompts(run_task, 3, torch.Generator().manual_seed(10_000))[0]
    assert printed[3].startswith(f"  {shown.question!r} -> ")

    assert main(["eval", str(out), "--samples", "1", "--samples-per-prompt", "2", "--n-numbers", "4"]) == 0
    printed = capsys.readouterr().out.splitlines()
    four = dataclasses.replace(run_task, n_numbers=4)  # the run's prompt settings and held-out sets, 4 numbers
    assert printed[0] == "task: text_sort, 4 numbers 0-9 (the run's prompt settings)"
    assert printed[2] == _pass_at_k_line(out, four, 3, [1, 2], 2)
    shown = evaluation_prompts(four, 3, torch.Generator().manual_seed(10_000))[0]
    assert len(shown.numbers) == 4 and printed[4].startswith(f"  {shown.question!r} -> ")

    assert main(["eval", str(out), "--samples", "1", "--samples-per-prompt", "1", "--task", "text_add"]) == 0
    assert "What is " in capsys.readouterr().out
    for bad, message in [
        (["--digits", "2", "--n-numbers", "3"], "--n-numbers does not apply to text_add"),
        (["--task", "text_sort", "--digits", "2"], "--digits does not apply to text_sort"),
        (["--max-value", "0"], "--max-value must be >= 1; got 0"),
    ]:
        assert main(["eval", str(out), *bad]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_ctrl_c_checkpoints_and_resume_equals_an_uninterrupted_run(tmp_path):
    out = tmp_path / "run"
    flags = ["--steps", "300", "--prompts-per-step", "16", "--group-size", "8", "--eval-every", "100", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "minirl.cli", "train", *flags, "--out", str(out)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while (not metrics.is_file() or len(metrics.read_text().splitlines()) < 3) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert f"continue with: minirl train --resume {out}" in err
    done = len(metrics.read_text().splitlines())
    assert 3 <= done < 300
    assert (out / "checkpoint" / "training.pt").is_file() and not (out / "model.pt").exists()
    assert main(["train", "--resume", str(out)]) == 0
    _, full = train(TrainConfig(steps=300, prompts_per_step=16, group_size=8, eval_every=100, progress=False))
    kept = [json.loads(x) for x in metrics.read_text().splitlines()]
    assert untimed(kept) == untimed(full.records)
    assert untimed(json.loads(x) for x in (out / "evals.jsonl").read_text().splitlines()) == untimed(full.evals)


@pytest.mark.slow
def test_compare_out_keeps_a_run_folder_per_run_and_plot_groups_them(tmp_path, capsys):
    from minirl.compare import run_all, run_folders
    from minirl.runs import load_runs

    configs = {
        algo: [toy_config(algo=algo, seed=s, steps=4, eval_every=2) for s in (0, 1)] for algo in ("grpo", "naive")
    }
    folders = run_folders(configs, tmp_path / "cmp")
    runs = run_all(configs, workers=2, progress=False, folders=folders)
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == [
        "grpo_seed0",
        "grpo_seed1",
        "naive_seed0",
        "naive_seed1",
    ]
    for (algo, i), folder in folders.items():
        lines = [json.loads(x) for x in (Path(folder) / "metrics.jsonl").read_text().splitlines()]
        assert lines == runs[algo][i].records and len(lines) == 4
        assert json.loads((Path(folder) / "config.json").read_text())["seed"] == i
    kept, config = load_runs([tmp_path / "cmp"])
    assert {label: [h.seed for h in hs] for label, hs in kept.items()} == {"grpo": [0, 1], "naive": [0, 1]}
    assert [h.records for h in kept["naive"]] == [h.records for h in runs["naive"]]
    assert config["task"]["class"] == "toy_envs.sorting:SortingTask"
    png = tmp_path / "again.png"
    assert main(["plot", str(tmp_path / "cmp" / "grpo_seed0"), str(tmp_path / "cmp"), "--out", str(png)]) == 0
    assert "5 runs: grpo (3 seeds), naive (2 seeds)" in capsys.readouterr().out  # a run named twice counts twice
    assert png.stat().st_size > 10_000
    with pytest.raises(RunError, match="grpo_seed0 exists: replace it with --overwrite"):
        run_folders(configs, tmp_path / "cmp")


@pytest.mark.slow
def test_cli_compare_and_ladder_out_then_plot(tmp_path, capsys):
    import matplotlib.pyplot as plt

    from minirl.runs import load_runs, runs_figure

    argv = ["compare", "--algos", "grpo,clipped", "--seeds", "2", "--steps", "3", "--eval-prompts", "20"]
    assert main([*argv, "--no-progress", "--workers", "1", "--out", str(tmp_path / "cmp")]) == 0
    assert f"kept 4 runs in {tmp_path / 'cmp'}" in capsys.readouterr().out
    fig = runs_figure(*load_runs([tmp_path / "cmp"]))
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["clipped (2 seeds)", "grpo (2 seeds)"]
    plt.close(fig)
    assert (
        main(
            [
                "ladder",
                "--seeds",
                "1",
                "--steps",
                "2",
                "--workers",
                "1",
                "--no-progress",
                "--out",
                str(tmp_path / "lad"),
            ]
        )
        == 0
    )
    assert len(list((tmp_path / "lad").glob("*_seed0/metrics.jsonl"))) == 6
    fig = runs_figure(*load_runs([tmp_path / "lad"]))  # the ladder's own four panels, as ladder --plot draws
    assert len(fig.axes) == 4 and "greedy accuracy" in fig.axes[1].get_title()
    plt.close(fig)
    assert main(["plot", str(tmp_path / "nowhere")]) == 2
    assert "nowhere is neither a run folder nor a folder of run folders" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_out_keeps_the_record_beside_env_json(tmp_path, monkeypatch, capsys):
    import minirl.bench.toy as bench

    monkeypatch.setattr(bench, "LARGE_STEPS", 20)
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path / "results"))
    out = tmp_path / "bench"
    assert main(["bench", "--quick", "--seeds", "1", "--save", "--out", str(out)]) == 0
    kept, saved = (json.loads(p.read_text()) for p in (out / "record.json", tmp_path / "results" / "bench.json"))
    assert kept["figures"] == saved["figures"] and kept["name"] == "bench" and kept["seeds"] == [0]
    assert set(kept["figures"]["targets"]) == {
        "sorting 3x5 GRPO >= 99% in 15 s",
        "sorting 5x10 best >= 90% of ceiling",
        "maze >= 99% greedy success",
    }
    assert json.loads((out / "env.json").read_text())["torch"] == torch.__version__
    # every run it reports is a run folder, named beside its figures
    small = kept["figures"]["small"]["seeds"]["0"]
    assert small["run_folder"] == "small_grpo_seed0"
    last = json.loads((out / "small_grpo_seed0" / "evals.jsonl").read_text().splitlines()[-1])
    assert last["greedy_exact"] == pytest.approx(small["final"], rel=1e-6)  # a float32 mean, as a Python float
    assert kept["figures"]["large"]["methods"]["grpo"]["run_folders"] == ["large_grpo_seed0"]
    maze = kept["figures"]["maze"]["ppo"]["0"]
    assert maze["run_folder"] == "maze_ppo_seed0" and (out / "maze_ppo_seed0" / "model.pt").is_file()
    capsys.readouterr()
    assert main(["eval", str(out / "maze_ppo_seed0")]) == 0
    assert f"exact expected return {maze['exact_return']:.3f}" in capsys.readouterr().out
    assert main(["bench", "--quick", "--out", str(out)]) == 2  # a kept benchmark is never replaced
    assert f"out: {out} exists and is not empty" in capsys.readouterr().err


@pytest.mark.slow  # importing tensorboard alone takes seconds
def test_tensorboard_holds_the_reward_of_every_step(tmp_path):
    pytest.importorskip("tensorboard", reason="the tensorboard package is not installed (pip install -e '.[dev]')")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config = toy_config(steps=5, eval_every=2)
    _, history = train(config, run=RunFolder.create(tmp_path / "run", config, tensorboard=True))
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    rewards = events.Scalars("train/reward")
    assert [e.step for e in rewards] == [1, 2, 3, 4, 5]
    assert [e.value for e in rewards] == pytest.approx(list(history["reward"]), rel=1e-6)  # stored as float32
    assert [e.step for e in events.Scalars("eval/greedy_exact")] == [int(e["step"]) for e in history.evals]


def test_tensorboard_without_the_package_or_a_folder_is_one_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # as if tensorboard were not installed
    with pytest.raises(RunError, match="needs the tensorboard package: pip install tensorboard"):
        RunFolder.create(tmp_path / "run", toy_config(), tensorboard=True)
    assert main(["train", "--steps", "1", "--no-progress", "--tensorboard"]) == 2
    assert "--tensorboard logs into a run folder: give --out FOLDER" in capsys.readouterr().err


def _config_without_progress(config) -> dict:
    from minirl.runs import describe_config

    return {k: v for k, v in describe_config(config).items() if k != "progress"}


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--set", "clip_eps_high=0.28", "--set", "inner_epochs=2", "--steps", "7"],
        ["compare", "--task", "variable_sorting", "--length", "4", "--reward", "exact_match", "--no-eval-sampled"],
        ["compare", "--lr-schedule", "constant", "--max-grad-norm", "none", "--temperature", "0.5", "--seeds", "2"],
    ],
)
def test_a_compare_run_stores_the_train_command_that_rebuilds_its_config(argv):
    from minirl.cli import _config, build_parser, train_command

    args = build_parser().parse_args([*argv, "--algos", "grpo", "--out", "x", "--save-every", "3"])
    algo = args.algos
    for seed in range(args.seeds):
        config = _config(args, algo, seed, False)
        command = train_command(config, algo, args)
        assert command[0] == "train" and command[-2:] == ["--save-every", "3"]
        again = build_parser().parse_args(command)
        assert _config_without_progress(_config(again, again.algo, again.seed, True)) == _config_without_progress(
            config
        )


def test_a_ladder_rung_stores_the_train_command_of_its_preset_and_settings():
    from minirl.algorithms import ALGORITHMS
    from minirl.cli import _config, build_parser, train_command
    from minirl.ladder import LADDER_RUNGS, ladder_configs

    args = build_parser().parse_args(["ladder", "--out", "x"])
    for rung, (config,) in ladder_configs(1, steps=40).items():
        command = train_command(config, rung, args)
        again = build_parser().parse_args(command)
        rebuilt = _config(again, again.algo, again.seed, False)
        assert _config_without_progress(rebuilt) == _config_without_progress(config)
        assert rebuilt.algo == ALGORITHMS[rung] and rebuilt.steps == 40 and rebuilt.prompts_per_step == 16
    assert list(ladder_configs(1)) == list(LADDER_RUNGS)


def _kept_rows(folder: Path, name: str) -> list[dict]:
    return untimed([json.loads(x) for x in (folder / name).read_text().splitlines()])


def test_an_interrupted_compare_run_resumes_with_minirl_train(tmp_path, monkeypatch, capsys):
    import minirl.runs

    class StopAt3(StopAt):
        stop = 3

    argv = ["compare", "--algos", "grpo", "--seeds", "1", "--steps", "7", "--prompts-per-step", "8"]
    argv += ["--group-size", "4", "--eval-every", "2", "--eval-prompts", "20", "--set", "clip_eps_high=0.28"]
    argv += ["--no-progress", "--save-every", "2"]
    assert main([*argv, "--out", str(tmp_path / "full")]) == 0
    monkeypatch.setattr(minirl.runs, "RunFolder", StopAt3)
    with pytest.raises(KeyboardInterrupt):
        main([*argv, "--out", str(tmp_path / "cut")])
    monkeypatch.undo()
    cut, full = tmp_path / "cut" / "grpo_seed0", tmp_path / "full" / "grpo_seed0"
    assert len((cut / "metrics.jsonl").read_text().splitlines()) == 3 and not (cut / "model.pt").exists()
    stored = json.loads((cut / "config.json").read_text())
    assert stored["command"][:2] == ["train", "--task"] and stored["algo"]["clip_eps_high"] == 0.28
    capsys.readouterr()
    assert main(["train", "--resume", str(cut)]) == 0
    assert f"resuming the run in {cut}" in capsys.readouterr().out
    assert len(_kept_rows(cut, "metrics.jsonl")) == 7
    assert _kept_rows(cut, "metrics.jsonl") == _kept_rows(full, "metrics.jsonl")
    assert _kept_rows(cut, "evals.jsonl") == _kept_rows(full, "evals.jsonl")
    assert (cut / "model.pt").is_file()


@pytest.mark.slow  # over ~5 s on 2 cores (pyproject.toml's marker): out of the fast loop
def test_an_interrupted_ladder_rung_resumes_with_minirl_train(tmp_path, monkeypatch):
    import minirl.runs
    from minirl.ladder import ladder_configs

    class StopClippedAt3(StopAt):
        def after_step(self, step, state):
            self.stop = 3 if self.path.name == "clipped_seed0" else 0
            super().after_step(step, state)

    argv = ["ladder", "--seeds", "1", "--steps", "6", "--workers", "1", "--no-progress", "--save-every", "4"]
    monkeypatch.setattr(minirl.runs, "RunFolder", StopClippedAt3)
    with pytest.raises(KeyboardInterrupt):
        main([*argv, "--out", str(tmp_path / "lad")])
    monkeypatch.undo()
    rung = tmp_path / "lad" / "clipped_seed0"
    assert len((rung / "metrics.jsonl").read_text().splitlines()) == 3
    assert main(["train", "--resume", str(rung)]) == 0
    (config,) = ladder_configs(1, rungs=("clipped",), steps=6)["clipped"]
    _, full = train(config)
    assert _kept_rows(rung, "metrics.jsonl") == untimed(full.records) and len(full.records) == 6
    assert _kept_rows(rung, "evals.jsonl") == untimed(full.evals)
    assert json.loads((rung / "config.json").read_text())["algo"]["inner_epochs"] == 4


# ---- the maze keeps its runs too ------------------------------------------------------------------------------


def maze_config(method: str, **changes):
    from minirl.maze_rl import MazeTrainConfig

    return MazeTrainConfig(**{"method": method, "steps": 12, "episodes_per_step": 8, "eval_every": 4, **changes})


@pytest.mark.parametrize("method", ["ppo", "reinforce_baseline"])
def test_maze_resume_after_interrupt_equals_an_uninterrupted_run(tmp_path, method):
    from minirl.maze_policy import exact_return
    from minirl.maze_rl import train_maze

    config = maze_config(method, progress=False)
    full_policy, _, full = train_maze(config)
    run = StopAt.create(tmp_path / "run", config)
    run.stop = 5
    with pytest.raises(KeyboardInterrupt):
        train_maze(config, run=run)
    checkpoint = {p.name for p in (tmp_path / "run" / "checkpoint").iterdir()}
    assert ("value.pt" in checkpoint) == (method == "ppo")  # PPO's value table and its optimizer are kept too
    policy, _, resumed = train_maze(config, run=RunFolder.resume(tmp_path / "run", config))
    assert untimed(resumed.records) == untimed(full.records) and len(resumed.records) == 12
    assert untimed(resumed.evals) == untimed(full.evals)
    assert torch.equal(policy.logits_table, full_policy.logits_table)
    kept = load_run_policy(tmp_path / "run")
    assert torch.equal(kept.logits_table, full_policy.logits_table)
    assert exact_return(RunFolder(tmp_path / "run").task(), kept) == pytest.approx(full.records[-1]["exact_return"])


def test_cli_maze_train_out_eval_compare_resume_and_plot(tmp_path, capsys):
    out = tmp_path / "maze"
    assert main(["train", "--task", "maze", "--algo", "ppo", "--steps", "30", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"kept in {out}: minirl eval {out}" in printed and "generate" not in printed
    assert {"config.json", "env.json", "metrics.jsonl", "evals.jsonl", "curves.png", "model.pt"} <= {
        p.name for p in out.iterdir()
    }
    assert main(["eval", str(out)]) == 0
    shown = capsys.readouterr().out
    exact = json.loads((out / "evals.jsonl").read_text().splitlines()[-1])["exact_return"]
    assert f"exact expected return {exact:.3f} of 10" in shown and "greedy success 100%" in shown
    assert "greedy route (row, col): (0, 0) -> " in shown and shown.rstrip().endswith("(4, 2)")  # S to G
    for argv, words in (
        (["generate", str(out), "1 2"], "is a maze run: it answers no prompt"),
        (["eval", str(out), "--digits", "3"], "--digits applies to a text run"),
    ):
        assert main(argv) == 2
        assert words in capsys.readouterr().err
    cmp = ["compare", "--task", "maze", "--algos", "reinforce,ppo", "--seeds", "2", "--steps", "8"]
    cmp += ["--episodes-per-step", "8", "--gamma", "0.9", "--no-progress", "--workers", "1"]
    assert main([*cmp, "--out", str(tmp_path / "cmp")]) == 0
    kept = sorted(p.name for p in (tmp_path / "cmp").iterdir())
    assert kept == ["ppo_seed0", "ppo_seed1", "reinforce_seed0", "reinforce_seed1"]
    rerun = tmp_path / "cmp" / "reinforce_seed1"
    before = _kept_rows(rerun, "metrics.jsonl")
    stored = json.loads((rerun / "config.json").read_text())
    assert stored["command"][:5] == ["train", "--task", "maze", "--algo", "reinforce"] and stored["gamma"] == 0.9
    assert main([*stored["command"], "--out", str(tmp_path / "again")]) == 0  # the stored command remakes the run
    assert _kept_rows(tmp_path / "again", "metrics.jsonl") == before and len(before) == 8
    capsys.readouterr()
    assert main(["plot", str(tmp_path / "cmp"), "--out", str(tmp_path / "c.png")]) == 0
    assert "4 runs: ppo (2 seeds), reinforce (2 seeds)" in capsys.readouterr().out


def test_ctrl_c_before_the_first_step_says_nothing_can_be_resumed(tmp_path, monkeypatch, capsys):
    import minirl.cli.train

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    train_module = sys.modules["minirl.train"]  # the package's `minirl.train` attribute is the function
    monkeypatch.setattr(train_module, "evaluate", interrupted)  # Ctrl-C during the step-0 evaluation
    out = tmp_path / "run"
    assert main(["train", "--steps", "3", "--out", str(out), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert f"interrupted before the first checkpoint: {out} holds no step to resume from" in err
    assert len(err.strip().splitlines()) == 1 and (out / "config.json").is_file()
    monkeypatch.setattr(minirl.cli.train, "kept_run", interrupted)  # Ctrl-C while a model loads or warm-starts
    assert main(["train", "--steps", "3", "--out", str(tmp_path / "other"), "--no-progress"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted before training began: nothing was kept"


class CrashAfter5(RunFolder):
    """A run that crashes after logging step 5, its last checkpoint at step 4 (save_every=4)."""

    def after_step(self, step, state):
        super().after_step(step, state)
        if step == 5:
            self._writer.close()
            raise RuntimeError("crash")


@pytest.mark.slow  # importing tensorboard alone takes seconds
def test_tensorboard_after_resume_holds_each_step_once(tmp_path):
    pytest.importorskip("tensorboard", reason="the tensorboard package is not installed (pip install -e '.[dev]')")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config = toy_config(steps=6, eval_every=2)
    _, full = train(config)
    with pytest.raises(RuntimeError, match="crash"):
        train(config, run=CrashAfter5.create(tmp_path / "run", config, save_every=4, tensorboard=True))
    train(config, run=RunFolder.resume(tmp_path / "run", config, tensorboard=True))  # from step 4: 5 comes again
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    rewards = events.Scalars("train/reward")
    assert [e.step for e in rewards] == [1, 2, 3, 4, 5, 6]
    assert [e.value for e in rewards] == pytest.approx(list(full["reward"]), rel=1e-6)  # stored as float32


@pytest.mark.slow  # over ~5 s on 2 cores (pyproject.toml's marker): out of the fast loop
def test_an_interrupted_text_compare_run_resumes_with_minirl_train(tmp_path, monkeypatch, capsys):
    import minirl.runs

    class StopAt2(StopAt):
        stop = 2

    argv = ["compare", "--task", "text_sort", "--model", "tiny", "--algos", "grpo", "--seeds", "1", "--steps", "4"]
    argv += ["--sft-steps", "5", "--max-new-tokens", "6", "--prompts-per-step", "2", "--group-size", "2"]
    argv += ["--eval-every", "2", "--eval-prompts", "4", "--set", "kl_coef=0.01", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "full")]) == 0
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "full")]) == 2  # refused before any model loads
    assert "grpo_seed0 exists: replace it with --overwrite" in capsys.readouterr().err
    monkeypatch.setattr(minirl.runs, "RunFolder", StopAt2)
    with pytest.raises(KeyboardInterrupt):
        main([*argv, "--out", str(tmp_path / "cut")])
    monkeypatch.undo()
    cut, full = tmp_path / "cut" / "grpo_seed0", tmp_path / "full" / "grpo_seed0"
    stored = json.loads((cut / "config.json").read_text())
    assert stored["command"][:3] == ["train", "--task", "text_sort"] and stored["algo"]["kl_coef"] == 0.01
    assert stored["model"]["recipe"]["sft_steps"] == 5 and (full / "model" / "config.json").is_file()
    assert len(_kept_rows(cut, "metrics.jsonl")) == 2 and not (cut / "model").exists()
    capsys.readouterr()
    assert main(["train", "--resume", str(cut)]) == 0
    assert f"resuming the run in {cut}" in capsys.readouterr().out
    assert (
        _kept_rows(cut, "metrics.jsonl") == _kept_rows(full, "metrics.jsonl")
        and len(_kept_rows(cut, "metrics.jsonl")) == 4
    )
    assert _kept_rows(cut, "evals.jsonl") == _kept_rows(full, "evals.jsonl")


def test_folders_kept_before_policies_named_themselves_still_load_and_plot(tmp_path):
    """A run folder whose model.json does not name its policy (written before it did): the toy policy's folder has
    a model.json, the maze table's has none; each loads as its own class, and each folder's figure follows what
    its runs measured (the maze's exact expected return), not its task's name."""
    from minirl.maze_policy import MazePolicy
    from minirl.maze_rl import train_maze
    from minirl.runs import load_runs, runs_figure
    from minirl.toy.policy import ToyPolicy

    config = toy_config()
    train(config, run=RunFolder.create(tmp_path / "toy", config))
    spec = json.loads((tmp_path / "toy" / "model.json").read_text())
    (tmp_path / "toy" / "model.json").write_text(json.dumps({k: v for k, v in spec.items() if k != "policy"}))
    maze = maze_config("reinforce", steps=2, progress=False)
    train_maze(maze, run=RunFolder.create(tmp_path / "maze", maze))
    (tmp_path / "maze" / "model.json").unlink()
    assert isinstance(load_run_policy(tmp_path / "toy"), ToyPolicy)
    assert isinstance(load_run_policy(tmp_path / "maze"), MazePolicy)
    titles = {
        name: [ax.get_title() for ax in runs_figure(*load_runs([tmp_path / name])).axes] for name in ("toy", "maze")
    }
    assert titles["maze"][1].endswith("exact return (DP)") and titles["toy"][1].endswith("greedy accuracy")

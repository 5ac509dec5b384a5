"""Results records (minirl.results): one JSON per measurement, with the command, commit, machine and load."""

import json
import math
import os

import pytest
import torch

import minirl.results.notebooks
import minirl.results.provenance
import minirl.results.speed
from minirl.history import History
from minirl.results import (
    Record,
    calibrate,
    expected_time,
    history_figures,
    load,
    local_calibration,
    notebook_banner,
    record,
    results_path,
    show,
    summary_line,
    time_note,
)


def test_a_record_keeps_its_figures_and_provenance(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    rec = Record("demo", command="minirl demo --seeds 2", seeds=[0, 1])
    rec.figures["accuracy"] = {"before": 0.25, "after": float("nan")}
    path = rec.save()
    assert path == tmp_path / "demo.json" == results_path("demo")
    data = json.loads(path.read_text())
    assert data["command"] == "minirl demo --seeds 2" and data["seeds"] == [0, 1]
    assert data["figures"] == {"accuracy": {"before": 0.25, "after": None}}  # NaN is not JSON: None
    assert len(data["commit"]) == 40 and isinstance(data["dirty"], list)
    assert data["machine"]["cores"] >= 1 and data["machine"]["torch"]
    assert isinstance(data["machine"]["bfloat16_units"], bool)  # where cpu_bfloat16 pays (AMX)
    calibration = data["machine"]["calibration"]
    assert set(calibration) == {"gflops", "threads", "size", "seconds", "others_busy"}
    assert calibration["gflops"] > 0 and calibration["threads"] == torch.get_num_threads()
    others = data["load"]["others_busy"]
    assert others is None or 0.0 <= others <= 1.0
    assert data["date"].endswith("Z") and data["duration_s"] >= 0
    assert load("demo") == data
    line = summary_line(data)
    assert data["commit"][:7] in line and "minirl demo --seeds 2" in line and "GFLOP/s on" in line
    assert not list(tmp_path.glob(".*.tmp"))  # written through a temporary file, renamed


def test_dirty_names_changed_code_but_not_other_records(monkeypatch):
    """A series of measurements in one checkout writes records one after another: they are not code changes."""
    porcelain = " M results/notebook_01_full_cpu.json\n M minirl/train.py\nM  README.md\n"
    answers = {"rev-parse": "a" * 40 + "\n", "status": porcelain}
    monkeypatch.setattr(minirl.results.provenance, "_git", lambda *args: answers[args[0]])
    assert minirl.results.git_commit() == ("a" * 40, ["minirl/train.py", "README.md"])


def test_a_record_keeps_the_code_as_it_was_when_the_measurement_began(tmp_path, monkeypatch):
    """A fast-mode run writes its notebooks' outputs before it saves: that is not the code it measured."""
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    answers = {"rev-parse": "b" * 40, "status": ""}
    monkeypatch.setattr(minirl.results.provenance, "_git", lambda *args: answers[args[0]])
    rec = Record("demo", command="python -m minirl.results notebook --fast solutions/01.ipynb")
    answers["status"] = " M solutions/01.ipynb\n"  # the run stored its outputs
    data = json.loads(rec.save().read_text())
    assert (data["commit"], data["dirty"]) == ("b" * 40, [])


def test_a_record_reads_its_calibration_setting_from_the_module_that_holds_it(monkeypatch):
    """``minirl.results`` re-exports its modules' names; a setting is read where it lives, when it is used: the
    calibration time that tests/conftest.py shortens for every test (``minirl.results.speed``)."""
    asked = []
    monkeypatch.setattr(minirl.results.speed, "calibrate", lambda seconds: asked.append(seconds) or {})
    Record("demo", command="cmd")
    assert asked == [0.02]
    assert all(getattr(minirl.results, name) is not None for name in minirl.results.__all__)


def test_show_prints_the_provenance_and_missing_records_name_the_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    Record("demo", command="cmd").save()
    show("demo")
    assert "results/demo.json" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="no results file .*missing.json"):
        load("missing")
    with pytest.raises(ValueError, match="name must be a short file name"):
        Record("a b")


def test_calibrate_times_float32_matrix_products():
    cal = calibrate(0.02)
    assert set(cal) == {"gflops", "threads", "size", "seconds"} and cal["size"] == 512
    assert math.isfinite(cal["gflops"]) and cal["gflops"] > 0
    assert cal["threads"] == torch.get_num_threads() and cal["seconds"] >= 0.02  # runs at least `seconds`
    assert calibrate(0, size=8)["size"] == 8  # at least one product, however short
    with pytest.raises(ValueError, match="seconds must be"):
        calibrate(-1.0)
    with pytest.raises(ValueError, match="size must be"):
        calibrate(0.01, size=0)


def _fake_record(gflops: float | None = None, **figures) -> dict:
    data = {
        "name": "notebook_42_full_cpu",
        "command": "python -m minirl.results notebook x.ipynb",
        "commit": "c" * 40,
        "dirty": [],
        "date": "2026-01-01T00:00:00Z",
        "duration_s": 900.0,
        "machine": {"cpu": "AMD EPYC", "cores": 2, "gpu": None},
        "load": {"others_busy": 0.0},
        "seeds": None,
        "figures": figures,
    }
    if gflops is not None:
        data["machine"]["calibration"] = {"gflops": gflops, "threads": 2, "size": 512, "seconds": 1.0}
    return data


def test_summary_line_gives_the_speed_when_the_record_has_a_calibration():
    tail = "idle; commit ccccccc, 2026-01-01; `python -m minirl.results notebook x.ipynb`"
    assert summary_line(_fake_record()) == f"2 CPU cores (AMD EPYC), {tail}"  # as the records before it read
    assert summary_line(_fake_record(230.4)) == f"2 CPU cores (AMD EPYC, 230 GFLOP/s on 2 threads), {tail}"


def test_expected_time_scales_by_the_ratio_of_the_calibrations():
    """expected = seconds · recorded_gflops / here_gflops."""
    assert expected_time(600.0, _fake_record(200.0), here={"gflops": 100.0}) == "about 20 min"
    assert expected_time(600.0, _fake_record(100.0), here={"gflops": 400.0}) == "about 2.5 min"
    assert expected_time(60.0, _fake_record(100.0), here={"gflops": 100.0}) == "about 60 s"
    with pytest.raises(ValueError, match="record has no calibration"):
        expected_time(600.0, _fake_record(), here={"gflops": 100.0})
    with pytest.raises(ValueError, match="seconds must be"):
        expected_time(-1.0, _fake_record(200.0), here={"gflops": 100.0})
    with pytest.raises(ValueError, match="here must be"):
        expected_time(600.0, _fake_record(200.0), here={"gflops": 0})


@pytest.fixture
def this_machine_at_100_gflops(monkeypatch):
    """This machine's calibration, fixed at 100 GFLOP/s; the thread counts it was asked for."""
    asked = []

    def fake(threads=None):
        asked.append(threads)
        return {"gflops": 100.0, "threads": threads, "size": 512, "seconds": 1.0}

    monkeypatch.setattr(minirl.results.speed, "local_calibration", fake)
    return asked


def test_time_note_scales_the_recorded_time_to_this_machine(tmp_path, monkeypatch, capsys, this_machine_at_100_gflops):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    (tmp_path / "notebook_42_full_cpu.json").write_text(json.dumps(_fake_record(200.0, grpo_seconds=600.0)))
    monkeypatch.setenv("MINIRL_FAST", "0")
    time_note("notebook_42_full_cpu", "grpo_seconds", "The next cell trains GRPO")
    assert capsys.readouterr().out == (
        "The next cell trains GRPO: 10 min in full mode on the record's machine (2 CPU cores, 200 GFLOP/s on "
        "2 threads); this machine: 100 GFLOP/s on 2 threads, so expect about 20 min.\n"
    )
    assert this_machine_at_100_gflops == [2]  # calibrated on as many threads as the record's calibration
    monkeypatch.setenv("MINIRL_FAST", "1")
    time_note("notebook_42_full_cpu", None, "This notebook")  # no key: the record's duration_s, 900 s
    assert capsys.readouterr().out == (
        "This notebook: 15 min in full mode on the record's machine (2 CPU cores, 200 GFLOP/s on 2 threads); "
        "this machine: 100 GFLOP/s on 2 threads, so about 30 min in full mode here. This run is fast mode "
        "(MINIRL_FAST=1).\n"
    )


def test_time_note_says_what_it_lacks_and_never_raises(tmp_path, monkeypatch, capsys, this_machine_at_100_gflops):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    monkeypatch.setenv("MINIRL_FAST", "0")
    (tmp_path / "old.json").write_text(json.dumps(_fake_record(None, grpo_seconds=600.0)))
    time_note("old", "grpo_seconds", "The next cell trains GRPO")
    time_note("old", "nope", "The next cell trains GRPO")
    time_note("missing", None, "The next cell trains GRPO")
    gpu = _fake_record(200.0)
    gpu["machine"]["gpu"] = "NVIDIA H100 80GB HBM3"
    (tmp_path / "gpu.json").write_text(json.dumps(gpu))
    time_note("gpu", None, "This notebook")
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "The next cell trains GRPO: 10 min in full mode on the record's machine (2 CPU cores); the record has no "
        "calibration to scale it by.",
        "The next cell trains GRPO: results/old.json has no time in seconds under figures['nope'], so no full-mode "
        "time to quote.",
        "The next cell trains GRPO: no record results/missing.json yet, so no full-mode time to quote.",
        "This notebook: 15 min in full mode on the record's machine (NVIDIA H100 80GB HBM3); a GPU ran it, so this "
        "machine's CPU speed does not scale it.",
    ]
    assert this_machine_at_100_gflops == []  # nothing to scale: this machine is not calibrated


def test_time_note_reads_a_nested_figure_by_a_dotted_key(tmp_path, monkeypatch, capsys, this_machine_at_100_gflops):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    monkeypatch.setenv("MINIRL_FAST", "0")
    data = _fake_record(200.0)
    data["figures"]["arms"] = {"grpo": {"arm_seconds": 300.0}, "dpo": {"arm_seconds": "n/a"}}
    (tmp_path / "nested.json").write_text(json.dumps(data))
    time_note("nested", "arms.grpo.arm_seconds", "GRPO")
    time_note("nested", "arms.dpo.arm_seconds", "DPO")  # not a number
    time_note("nested", "arms.grpo.arm_seconds.more", "Deeper")  # past a number
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "GRPO: 5.0 min in full mode on the record's machine (2 CPU cores, 200 GFLOP/s on 2 threads); this machine: "
        "100 GFLOP/s on 2 threads, so expect about 10 min."
    )
    assert lines[1:] == [
        "DPO: results/nested.json has no time in seconds under figures['arms.dpo.arm_seconds'], so no full-mode time "
        "to quote.",
        "Deeper: results/nested.json has no time in seconds under figures['arms.grpo.arm_seconds.more'], so no "
        "full-mode time to quote.",
    ]


def test_local_calibration_runs_once_per_thread_count_and_restores_the_threads(monkeypatch):
    monkeypatch.setattr(minirl.results.speed, "_LOCAL_CALIBRATIONS", {})
    calls = []
    monkeypatch.setattr(minirl.results.speed, "calibrate", lambda seconds: calls.append(torch.get_num_threads()) or {})
    before = torch.get_num_threads()
    local_calibration(1)
    local_calibration(1)
    local_calibration(10_000)  # never more threads than the machine has cores
    assert calls == sorted({1, os.cpu_count() or 1}) and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads must be"):
        local_calibration(0)


def test_history_figures_summarise_a_run():
    h = History(label="grpo", seed=1)
    for step in range(1, 11):
        h.log(
            step=step,
            reward=step / 10,
            wall_time=2.0 * step,
            gen_seconds=0.5,
            update_seconds=1.5,
            tokens_per_second=100.0,
            zero_variance_groups=0.25,
        )
    h.log_eval(step=10, greedy_exact=0.9)
    f = history_figures(h)
    assert f["steps"] == 10 and f["train_seconds"] == 20.0 and f["s_per_step"] == 2.0
    assert f["gen_s_per_step"] == 0.5 and f["update_s_per_step"] == 1.5 and f["tokens_per_s"] == 100.0
    assert f["reward_last5"] == pytest.approx(0.8, rel=1e-12)  # mean of 0.6..1.0 in float64
    assert f["evals"] == [{"step": 10.0, "greedy_exact": 0.9}]


def test_notebook_record_and_banner(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    scratch = tmp_path / "scratch.json"
    monkeypatch.setenv("MINIRL_RECORD", str(scratch))
    record(accuracy=0.5, curve=[1, 2])
    assert json.loads(scratch.read_text())["accuracy"] == 0.5
    monkeypatch.setenv("MINIRL_FAST", "1")
    notebook_banner("42")
    out = capsys.readouterr().out
    assert "fast mode (MINIRL_FAST=1)" in out and "no stored record yet" in out
    Record("notebook_42_full_cpu", command="python -m minirl.results notebook x").save()
    notebook_banner("42")
    assert "results/notebook_42_full_cpu.json" in capsys.readouterr().out


def test_ladder_and_train_save_their_figures(tmp_path, monkeypatch):
    from minirl.cli import main

    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    assert main(["ladder", "--seeds", "1", "--steps", "4", "--workers", "1", "--no-progress", "--save"]) == 0
    ladder = load("ladder")
    assert set(ladder["figures"]["rungs"]) == {
        "naive",
        "baselined",
        "normalized",
        "unclipped",
        "clipped",
        "clipped_entropy",
    }
    assert "greedy accuracy" in ladder["figures"]["summary"] and ladder["seeds"] == [0]
    assert (
        main(["train", "--task", "sorting", "--steps", "3", "--eval-every", "0", "--no-progress", "--save", "mine"])
        == 0
    )
    run = load("mine")["figures"]["runs"]["grpo"][0]
    assert run["steps"] == 3 and run["evals"][-1]["step"] == 3.0


def test_stored_outputs_drop_progress_bars_and_widget_state():
    """A fast-mode run stores its outputs without tqdm's widgets, its text bars (with their timings) or the
    notebook's widget state: re-running leaves the notebooks as they were."""
    import nbformat

    view = {"model_id": "abc123", "version_major": 2, "version_minor": 0}
    bar = (
        "\rgrpo seed 0:   0%|          | 0/3 [00:00<?, ?it/s]\rgrpo seed 0: 100%|##########| 3/3 [00:01<00:00, 2.9it/s]"
    )
    nb = nbformat.v4.new_notebook(metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {}}})
    cell = nbformat.v4.new_code_cell("policy, history = train(config)\nprint('trained')")
    cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/plain": "grpo seed 0:   0%|          | 0/3 [00:00<?, ?it/s]",
                "application/vnd.jupyter.widget-view+json": view,
            },
        ),
        nbformat.v4.new_output("stream", name="stderr", text=bar + "\r" + " " * 50 + "\r"),
        nbformat.v4.new_output("stream", name="stderr", text=bar + "\ra warning\n"),
        nbformat.v4.new_output("stream", name="stdout", text="trained: reward 2.95 at the end\n"),
        nbformat.v4.new_output("display_data", data={"text/plain": "<Figure size 640x480 with 1 Axes>"}),
    ]
    nb.cells = [cell, nbformat.v4.new_markdown_cell("text")]
    out = minirl.results.notebooks._without_run_state(nb)
    assert "widgets" not in out.metadata and "execution" not in out.cells[0].metadata
    assert [(o.output_type, o.get("name")) for o in out.cells[0].outputs] == [
        ("stream", "stderr"),
        ("stream", "stdout"),
        ("display_data", None),
    ]
    assert out.cells[0].outputs[0].text == "a warning\n"
    assert out.cells[0].outputs[1].text == "trained: reward 2.95 at the end\n"
    stored = nbformat.writes(out)
    assert "widget-view" not in stored and "it/s" not in stored and "00:01" not in stored


def test_stored_outputs_drop_html_progress_bars_and_join_split_prints():
    """transformers' Trainer draws an HTML ``<progress>`` bar with its elapsed time: dropped. A print the kernel
    flushed in several blocks is stored as one block, so re-running does not move the block boundaries."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("trainer.train()")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": "<div><progress value='2' max='2'></progress> [2/2 00:01, Epoch 1/1]</div>",
                "text/plain": "<IPython.core.display.HTML object>",
            },
        ),
        nbformat.v4.new_output("stream", name="stdout", text="step 1: reward 0.25\n"),
        nbformat.v4.new_output("stream", name="stdout", text="step 2: reward 0.50\n"),
        nbformat.v4.new_output("display_data", data={"text/html": "<table><tr><td>kept</td></tr></table>"}),
        nbformat.v4.new_output("stream", name="stdout", text="after the table\n"),
    ]
    nb.cells = [cell]
    out = minirl.results.notebooks._without_run_state(nb).cells[0].outputs
    assert [o.output_type for o in out] == ["stream", "display_data", "stream"]
    assert out[0].text == "step 1: reward 0.25\nstep 2: reward 0.50\n"
    assert "kept" in out[1].data["text/html"] and out[2].text == "after the table\n"


def test_a_fast_mode_run_keeps_each_notebook_s_own_provenance(tmp_path, monkeypatch):
    """``run_notebooks_fast`` re-measures only the notebooks it is given: their rows get this run's commit and
    machine, the others keep where they were measured, and the report says each row's."""
    import nbformat

    from minirl.report.notebooks import measured_on

    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    monkeypatch.setattr(minirl.results.speed, "CALIBRATION_SECONDS", 0.05)
    old_where = {"commit": "a" * 40, "dirty": False, "date": "2026-01-02T00:00:00Z", "cpu": "Old CPU", "gflops": 99.0}
    previous = Record("notebooks_fast", command="python -m minirl.results notebook --fast a.ipynb")
    previous.figures = {"a": 5.0, "b": 7.0, "where": {"a": old_where, "b": old_where}}
    previous.save()
    notebook = tmp_path / "b.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), notebook)
    executed = lambda path, env, timeout: nbformat.read(path, 4)  # noqa: E731  (the run itself is not the point)
    monkeypatch.setattr(minirl.results.notebooks, "_execute_notebook", executed)
    monkeypatch.setattr(minirl.results.provenance, "_git", lambda *args: {"rev-parse": "c" * 40}.get(args[0], ""))
    minirl.results.notebooks.run_notebooks_fast([notebook])
    figures = load("notebooks_fast")["figures"]
    assert figures["a"] == 5.0 and figures["where"]["a"] == old_where  # not re-run: its own provenance kept
    assert figures["where"]["b"]["commit"] == "c" * 40 and figures["where"]["b"]["cpu"] != "Old CPU"
    assert measured_on(old_where) == "Old CPU, 99 GFLOP/s; commit aaaaaaa, 2026-01-02"
    assert measured_on(None) == "not kept"

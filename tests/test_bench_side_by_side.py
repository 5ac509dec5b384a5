"""Records of one benchmark measured side by side, one process a seed (``scripts/gpu_check.sh``'s reasoning part),
combined into one: ``resume.side_by_side`` and ``reasoning_rl --combine``."""

from __future__ import annotations

import json

import pytest

import minirl.bench.reasoning_rl as rr
from minirl.bench.resume import PROVENANCE, side_by_side
from minirl.results import load, results_path
from tests.test_bench_reasoning import BASE, _fake_run_seed


@pytest.fixture
def three_seeds(tmp_path, monkeypatch):
    """Three records of the thinking arm, seed s saved as bench_reasoning_fake_s{s}, by three invocations."""
    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    monkeypatch.setattr(rr, "run_seed", _fake_run_seed([]))
    monkeypatch.setattr(rr, "measure_base", lambda device, quick: BASE)
    for seed in (0, 1, 2):
        assert rr.run_reasoning_benchmark([seed], ["thinking"], quick=True, save=f"bench_reasoning_fake_s{seed}") == 0
    return [f"bench_reasoning_fake_s{seed}" for seed in (0, 1, 2)]


def test_combining_keeps_every_seed_and_each_process_provenance(three_seeds):
    names = three_seeds
    parts = [load(n) for n in names]
    assert rr.main(["--combine", *names, "--save", "bench_reasoning_fake"]) == 0
    data = load("bench_reasoning_fake")
    f = data["figures"]
    assert data["seeds"] == f["seeds"] == [0, 1, 2] and f["arms"] == ["thinking"]
    assert [r["thinking"] for r in f["runs"]] == [p["figures"]["runs"][0]["thinking"] for p in parts]
    # the summary is made again over the three seeds: the mean of the fake runs' 0.80, 0.81, 0.82
    assert f["summary"]["thinking_sum4"]["mean"] == pytest.approx(0.81, abs=1e-6)  # 7 digits kept in a record
    assert all(f["targets"].values())
    # the first record's provenance is the record's own; the others' are kept with their seeds
    assert data["command"] == parts[0]["command"] and data["date"] == parts[0]["date"]
    side = f["side_by_side"]
    assert [s["seeds"] for s in side] == [[1], [2]] and [s["name"] for s in side] == names[1:]
    assert [s["command"] for s in side] == [p["command"] for p in parts[1:]]
    assert all(set(PROVENANCE) <= set(s) for s in side)
    assert "--combine" in data["notes"]


def test_records_of_other_settings_a_shared_seed_or_one_record_are_refused(three_seeds, monkeypatch):
    parts = [load(n) for n in three_seeds]
    with pytest.raises(ValueError, match=r"records: give two or more"):
        side_by_side(parts[:1])
    with pytest.raises(ValueError, match=r"records: bench_reasoning_fake_s0 measured seeds \[0\] again"):
        side_by_side([parts[0], parts[0]])
    other = json.loads(json.dumps(parts[1]))
    other["figures"]["budgets"]["pass_samples"] += 1
    with pytest.raises(ValueError, match=r"measured with other budgets"):
        side_by_side([parts[0], other])
    resumed = json.loads(json.dumps(parts[2]))
    resumed["figures"]["earlier"] = [{"command": "an earlier sitting"}]
    with pytest.raises(ValueError, match=r"several sittings"):
        side_by_side([parts[0], resumed])
    # another base model: not one experiment
    base = json.loads(json.dumps(parts[1]))
    base["figures"]["base"]["think_sum4"] = 0.5
    results_path("bench_reasoning_fake_other").write_text(json.dumps(base))
    with pytest.raises(ValueError, match=r"names: the records measured different base models"):
        rr.combine_saved([three_seeds[0], "bench_reasoning_fake_other"], "bench_reasoning_fake")


def test_combine_needs_a_name_to_save_under(three_seeds, capsys):
    with pytest.raises(SystemExit):
        rr.main(["--combine", *three_seeds])
    assert "--combine: give --save too" in capsys.readouterr().err

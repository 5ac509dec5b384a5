"""minirl bench --lm end to end on a smoke budget: both models, both held-out sets, a results record."""

import pytest

from minirl.results import load


@pytest.mark.smollm2
def test_bench_lm_quick_reports_both_models_and_saves_a_record(tmp_path, monkeypatch, capsys):
    from minirl.cli import main

    monkeypatch.setenv("MINIRL_RESULTS", str(tmp_path))
    kept = tmp_path / "bench"
    argv = ["bench", "--lm", "--parts", "tiny,smollm2", "--quick", "--seeds", "1", "--save", "--out", str(kept)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for line in (
        "1. Tiny model",
        "2. SmolLM2-135M-Instruct",
        "unseen answers",
        "4 numbers (never trained on)",
        "Summary",
    ):
        assert line in out, f"{line!r} missing from:\n{out}"
    figures = load("bench_lm")["figures"]
    for model in ("tiny", "smollm2"):
        run = figures[model]["runs"][0]
        assert run["steps"] >= 1 and "unseen_greedy_exact" in run["evals"][-1]
        assert 0.0 <= figures[model]["summary"]["after"]["mean"] <= 1.0
        folder = kept / run["run_folder"]  # --out: each run kept, named beside its figures
        assert (folder / "model" / "config.json").is_file()
        assert len((folder / "metrics.jsonl").read_text().splitlines()) == run["steps"]
    assert [figures[m]["runs"][0]["run_folder"] for m in ("tiny", "smollm2")] == ["tiny_seed0", "smollm2-135m_seed0"]
    assert "four_numbers_before" in figures["smollm2"]["summary"]
    assert set(figures["targets"]) == {"tiny: mean >= 95%", "SmolLM2: mean >= 90% within 20 min of training"}

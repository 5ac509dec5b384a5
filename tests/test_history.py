"""``History`` (minirl.history): the per-step and evaluation records of one run, read back as arrays and JSON.

Every value here is a small dyadic fraction (0.25, 0.5, ...): float64 holds it, and the means of a few of them,
exactly, so the comparisons are exact."""

import json

import numpy as np
import pytest
import torch

from minirl.history import History


def three_steps() -> History:
    h = History(label="grpo", seed=7)
    for step, reward in enumerate([0.25, 0.5, 1.0], start=1):
        h.log(step=step, reward=reward, entropy=2.0 - step / 4)
    h.log_eval(step=0, greedy_exact=0.0)
    h.log_eval(step=3, greedy_exact=0.75)
    return h


def test_log_keeps_one_record_per_step_as_python_floats():
    h = History()
    assert (h.label, h.seed, len(h), h.metrics) == ("", 0, 0, [])
    h.log(step=1, reward=torch.tensor(0.5), exact_match=np.float32(0.25), kl=1)  # a tensor, numpy and an int
    assert h.records == [{"step": 1.0, "reward": 0.5, "exact_match": 0.25, "kl": 1.0}]
    assert all(type(v) is float for v in h.records[0].values())
    assert len(h) == 1 and h.metrics == ["step", "reward", "exact_match", "kl"]  # in the order they were logged
    h.log_eval(step=1, greedy_exact=torch.tensor(1.0))
    assert h.evals == [{"step": 1.0, "greedy_exact": 1.0}] and len(h) == 1  # evaluations are not steps


def test_a_metric_reads_as_a_float_array_over_steps():
    h = three_steps()
    reward = h["reward"]
    assert isinstance(reward, np.ndarray) and reward.dtype == np.float64
    assert reward.tolist() == [0.25, 0.5, 1.0]
    assert h.steps.tolist() == [1.0, 2.0, 3.0] and h["entropy"].tolist() == [1.75, 1.5, 1.25]
    assert History()["reward"].tolist() == []  # an empty History: an empty array, not an error


def test_an_unknown_metric_names_the_known_ones():
    h = three_steps()
    with pytest.raises(KeyError, match=r"no metric 'rewrd' in this History; it has \['step', 'reward', 'entropy'\]"):
        h["rewrd"]
    with pytest.raises(KeyError, match=r"no eval metric 'greedy'; it has \['step', 'greedy_exact'\]"):
        h.eval_metric("greedy")


def test_eval_metric_gives_the_evaluation_steps_and_values():
    steps, values = three_steps().eval_metric("greedy_exact")
    assert steps.tolist() == [0.0, 3.0] and values.tolist() == [0.0, 0.75]
    assert steps.dtype == values.dtype == np.float64


def test_last_is_the_mean_of_the_last_n_values():
    h = three_steps()
    assert h.last("reward") == 1.0
    assert h.last("reward", 2) == 0.75  # (0.5 + 1.0) / 2
    assert h.last("reward", 3) == h.last("reward", 10) == 1.75 / 3  # n past the start: the whole run
    assert type(h.last("reward")) is float


def test_json_round_trip_keeps_labels_records_and_evaluations(tmp_path):
    h = three_steps()
    path = tmp_path / "run.json"
    h.to_json(path)
    assert json.loads(path.read_text()) == {
        "label": "grpo",
        "seed": 7,
        "records": [
            {"step": 1.0, "reward": 0.25, "entropy": 1.75},
            {"step": 2.0, "reward": 0.5, "entropy": 1.5},
            {"step": 3.0, "reward": 1.0, "entropy": 1.25},
        ],
        "evals": [{"step": 0.0, "greedy_exact": 0.0}, {"step": 3.0, "greedy_exact": 0.75}],
        "notes": [],
    }
    back = History.from_json(str(path))  # a str or a Path
    assert back == h
    assert back["reward"].tolist() == [0.25, 0.5, 1.0] and back.eval_metric("greedy_exact")[1].tolist() == [0.0, 0.75]


def test_notes_round_trip_and_a_file_without_them_still_loads(tmp_path):
    h = three_steps()
    h.notes.append("cannot learn (steps 1-3): every reward was 0")
    h.to_json(tmp_path / "run.json")
    assert History.from_json(tmp_path / "run.json").notes == ["cannot learn (steps 1-3): every reward was 0"]
    older = {"label": "grpo", "seed": 7, "records": h.records, "evals": h.evals}  # written before notes existed
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert History.from_json(tmp_path / "old.json").notes == []

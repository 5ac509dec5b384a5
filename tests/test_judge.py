"""The LLM judge (minirl.lm.judge): P(yes) from the next-token distribution, the task it pays, its agreement with
a verifier; on a tiny Llama built from a config (the shipped SmolLM2's judge is notebook 11's and the benchmark's)."""

from __future__ import annotations

import pytest
import torch

from minirl.lm import make_tiny_lm
from minirl.lm.judge import NO, YES, Judge, JudgedTask, agreement, judge_messages, question_of, yes_probability
from minirl.protocols import FormatTask, HeldOutTask, Task
from minirl.runs import build_task
from minirl.utils import describe_task
from tests.tolerances import f32_atol
from toy_envs.reasoning import ReasoningTask

TASK = ReasoningTask(n_numbers=3)


@pytest.fixture(scope="module")
def judge():
    return Judge(make_tiny_lm(seed=0, max_position_embeddings=1024), batch_size=3)


def test_yes_probability_renormalises_over_the_two_answers_in_log_space():
    log_probs = torch.tensor([[0.3, 0.1, 0.2, 0.05]]).log()
    assert yes_probability(log_probs, 2).item() == pytest.approx(0.4 / 0.65, rel=1e-6)
    far = torch.tensor([[-110.0, -112.0, -111.0, -113.0]])  # exp underflows in float32; the log-space form does not
    assert yes_probability(far, 2).item() == pytest.approx(1 / (1 + torch.e**-1), rel=1e-6)
    with pytest.raises(ValueError, match="n_yes must be an int in 1..3"):
        yes_probability(log_probs, 4)
    with pytest.raises(ValueError, match=r"log_probs must be a float tensor \[reply, word\]"):
        yes_probability(log_probs[0], 2)


def test_the_judge_reads_its_answer_from_the_next_token_distribution(judge):
    """P(yes) equals the model's own next-token probabilities of the yes and no words at the end of the judge's
    prompt, renormalised; and batching (3 a pass, padded on the left) changes nothing beyond float32 rounding."""
    questions = ["What is 1 + 2?", "What is 4 + 4 + 1?", "What is 0 + 0?", "What is 9 + 9 + 9?"]
    replies = ["<think>1 + 2 = 3.</think> 3", "9", "<think></think> 5", "<think>9 + 9 = 18. 18 + 9 = 27.</think> 27"]
    got = judge.p_yes(questions, replies)
    assert got.shape == (4,) and bool(((got > 0) & (got < 1)).all())
    policy = judge.policy
    ids = [policy.tokenizer(w, add_special_tokens=False)["input_ids"][0] for w in (*YES, *NO)]
    for i, (q, r) in enumerate(zip(questions, replies)):
        input_ids, mask = policy.encode_prompts([judge_messages(q, r)])  # one prompt: no padding
        logits = policy.model(input_ids=input_ids, attention_mask=mask).logits[0, -1]
        p = torch.softmax(logits.double(), dim=-1)[ids]
        want = float(p[: len(YES)].sum() / p.sum())
        # each logit of this 4-block, width-128 model sums ~2,000 float32 products, reordered by the padding of a
        # batch; P(yes) moves by at most 1/4 of a logit's change, and a fresh model's logits are below 10
        # (tests/tolerances.py)
        assert got[i].item() == pytest.approx(want, abs=f32_atol(10.0, terms=2048))


def test_judged_task_pays_the_judge_and_measures_with_the_verifier(judge):
    task = JudgedTask.using(TASK, judge)
    assert isinstance(task, Task) and isinstance(task, FormatTask) and isinstance(task, HeldOutTask)
    prompts = TASK.eval_prompts(2)
    answers = [[p.target, "7"] for p in prompts]
    rewards = task.rewards(prompts, answers)
    assert rewards.shape == (2, 2) and torch.allclose(
        rewards.flatten(),
        judge.p_yes([question_of(p) for p in prompts for _ in range(2)], [a for g in answers for a in g]),
    )
    assert task.is_correct(prompts, answers).tolist() == [[True, False], [True, False]]  # the verifier's, unchanged
    assert task.max_reward == 1.0 and task.answer_kinds(prompts, answers) == TASK.answer_kinds(prompts, answers)


def test_a_judged_task_is_kept_and_built_back_like_any_task():
    task = JudgedTask(TASK, judge_model="some/folder", device="cpu")
    described = describe_task(task)
    assert described["args"]["task"]["class"] == "toy_envs.reasoning:ReasoningTask"
    assert build_task(described) == task


def test_agreement_counts_each_side():
    scores = torch.tensor([0.9, 0.2, 0.7, 0.1])
    correct = torch.tensor([True, True, False, False])
    assert agreement(scores, correct) == {
        "agreement": 0.5,
        "yes_when_right": 0.5,
        "yes_when_wrong": 0.5,
        "right_share": 0.5,
    }
    with pytest.raises(ValueError, match="correct bool"):
        agreement(scores, correct.float())


def test_bad_input_is_refused(judge):
    with pytest.raises(ValueError, match="questions and replies must pair up"):
        judge.p_yes(["a"], ["b", "c"])
    with pytest.raises(TypeError, match="policy must be a CausalLMPolicy"):
        Judge(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="every prompt must have the same number of replies"):
        judge.scores(TASK.eval_prompts(2), [["a"], ["b", "c"]])

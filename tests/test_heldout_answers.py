"""The second held-out set of the text tasks: whole answers left out of training (``n_unseen_answers``)."""

import pytest
import torch

from minirl.lm.recipes import RECIPES
from minirl.train import evaluate
from toy_envs.text_tasks import TextAdditionTask, TextSortTask


def _training_problems(task, n=20_000):
    return {p.numbers for p in task.sample_prompts(n, torch.Generator().manual_seed(0))}


def test_unseen_answers_never_occur_in_training_and_every_permutation_is_held_out():
    task = TextSortTask(n_numbers=3, max_value=9, n_unseen_answers=20)
    unseen = task.unseen_answer_prompts()
    answers = {p.target for p in unseen}
    assert len(answers) == 20
    # every permutation of a held-out multiset is in the set: 1, 3 or 6 problems per answer
    by_answer = {a: {p.numbers for p in unseen if p.target == a} for a in answers}
    for a, problems in by_answer.items():
        values = [int(v) for v in a.split(", ")]
        assert len(problems) == {1: 1, 2: 3, 3: 6}[len(set(values))], a  # distinct values -> permutations
    assert task.n_unseen_problems == len(unseen) == sum(len(v) for v in by_answer.values())
    # 20,000 draws from ~700 training problems: every training problem is drawn (each is missed with
    # probability (1 - 1/700)^20000 < 1e-12), so the training answers are exactly the others
    trained = _training_problems(task)
    assert len(trained) == task.n_train_problems
    assert not {task.target(p) for p in trained} & answers
    assert not trained & {p.numbers for p in task.eval_prompts()}
    assert not {p.numbers for p in task.eval_prompts()} & {p.numbers for p in unseen}
    assert task.n_train_problems == task.n_problems - task.n_heldout - task.n_unseen_problems


def test_without_unseen_answers_the_task_is_unchanged():
    plain, zero = TextSortTask(few_shot=1, system="s"), TextSortTask(few_shot=1, system="s", n_unseen_answers=0)
    assert plain.eval_prompts() == zero.eval_prompts() and plain.few_shot_messages == zero.few_shot_messages
    assert zero.n_unseen_problems == 0 and zero.unseen_answer_prompts() == []
    g = torch.Generator().manual_seed(3)
    assert plain.sample_prompts(50, g) == zero.sample_prompts(50, torch.Generator().manual_seed(3))


def test_unseen_answers_are_seeded_and_ordered():
    a = TextSortTask(n_unseen_answers=5, seed=1).unseen_answer_prompts()
    assert a == TextSortTask(n_unseen_answers=5, seed=1).unseen_answer_prompts()
    assert a != TextSortTask(n_unseen_answers=5, seed=2).unseen_answer_prompts()
    assert TextSortTask(n_unseen_answers=5, seed=1).unseen_answer_prompts(3) == a[:3]


def test_addition_holds_out_sums():
    task = TextAdditionTask(digits=1, n_unseen_answers=3, n_heldout=10)
    sums = {int(p.target) for p in task.unseen_answer_prompts()}
    assert len(sums) == 3
    assert all(sum(p.numbers) in sums for p in task.unseen_answer_prompts())
    assert not {sum(p) for p in _training_problems(task, 5000)} & sums


def test_bad_n_unseen_answers_names_the_argument():
    with pytest.raises(ValueError, match=r"n_unseen_answers must be an int >= 0; got -1"):
        TextSortTask(n_unseen_answers=-1)
    with pytest.raises(ValueError, match=r"n_unseen_answers must leave answers to train on.*\[0, 9\].*10 distinct"):
        TextSortTask(n_numbers=1, max_value=9, n_unseen_answers=10, n_heldout=0)
    with pytest.raises(ValueError, match=r"n_unseen_answers needs every problem enumerated"):
        TextAdditionTask(digits=4, n_unseen_answers=1)
    with pytest.raises(ValueError, match=r"n_heldout must leave training problems.*with held-out answers"):
        TextSortTask(n_numbers=1, max_value=9, n_unseen_answers=5, n_heldout=5)
    with pytest.raises(ValueError, match=r"n must be an int in \[0, n_unseen_problems"):
        TextSortTask(n_unseen_answers=2).unseen_answer_prompts(10_000)


def test_the_recipes_hold_out_answers_and_evaluate_reports_both_sets():
    task = RECIPES["pretrained"].task()
    assert task.n_unseen_answers == RECIPES["pretrained"].unseen_answers > 0

    class Copier(torch.nn.Module):  # answers every prompt by copying its numbers: right exactly when already sorted
        cheap_reference = False  # a whole minirl.protocols.Policy: torch.nn.Module gives the rest
        device = torch.device("cpu")

        def sample(self, prompts, group_size, *, temperature, generator=None):
            raise AssertionError("evaluate(sampled=False) must not sample")

        def score(self, prompts, rollout, *, temperature):
            raise AssertionError("evaluate must not score")

        def greedy(self, prompts):
            from minirl.protocols import Rollout

            answers = [[", ".join(str(v) for v in p.numbers)] for p in prompts]
            return Rollout(torch.zeros(len(prompts), 1, 1, dtype=torch.long), None, answers, 1)

    out = evaluate(Copier(), task, 50, sampled=False)
    unseen = task.unseen_answer_prompts(50)
    want = sum(list(p.numbers) == sorted(p.numbers) for p in unseen) / len(unseen)
    # evaluate takes a float32 mean of 50 booleans: the sum is exact, the division rounds once (half an ulp)
    assert out["unseen_greedy_exact"] == pytest.approx(want, rel=2**-24)
    assert out["unseen_greedy_format"] == 1.0

"""The text tasks (toy_envs/text_tasks.py): held-out split, prompts, parsing and rewards, and the second held-out set
(whole answers left out of training, ``n_unseen_answers``)."""

import random
import re

import pytest
import torch

from toy_envs.text_tasks import (
    ADD_FORMAT,
    ANSWER_KINDS,
    SORT_FORMAT,
    TEXT_TASKS,
    TextAdditionTask,
    TextPrompt,
    TextSortTask,
)

TASKS = [TextSortTask, TextAdditionTask]


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# -- problems, split and prompts ------------------------------------------------------------------


def test_registry():
    assert TEXT_TASKS == {"text_sort": TextSortTask, "text_add": TextAdditionTask}


@pytest.mark.parametrize("cls", TASKS)
def test_heldout_disjoint_from_training_and_stable(cls):
    task = cls()
    heldout = task.eval_prompts(200)
    assert len({p.numbers for p in heldout}) == 200
    assert heldout == task.eval_prompts(200) == cls().eval_prompts(200)
    assert task.eval_prompts(50) == heldout[:50]
    assert task.eval_prompts() == heldout
    train = task.sample_prompts(10_000, gen(1))
    train_problems = {p.numbers for p in train}
    assert not train_problems & {p.numbers for p in heldout}
    # 10,000 uniform draws from the 800 (sort) / 7,900 (add) training problems reach most of them
    assert len(train_problems) > 0.7 * task.n_train_problems
    assert task.n_train_problems == task.n_problems - 200


def test_problem_spaces():
    assert TextSortTask().n_problems == 1000
    assert TextSortTask(n_numbers=4, max_value=5).n_problems == 6**4
    add = TextAdditionTask()
    assert (add.low, add.high, add.n_problems) == (10, 99, 90 * 90)
    one_digit = TextAdditionTask(digits=1, n_heldout=10)
    assert (one_digit.low, one_digit.high, one_digit.n_problems) == (0, 9, 100)
    p = TextSortTask(n_numbers=4, max_value=5, n_heldout=0).sample_prompts(2000, gen())
    assert {v for q in p for v in q.numbers} == set(range(6))
    assert all(len(q.numbers) == 4 for q in p)
    p = add.sample_prompts(2000, gen())
    values = [v for q in p for v in q.numbers]
    assert min(values) == 10 and max(values) == 99
    assert all(q.target == str(sum(q.numbers)) for q in p)


def test_training_draws_cover_exactly_the_non_heldout_problems():
    task = TextSortTask(n_numbers=2, max_value=4, n_heldout=7)  # 25 problems
    heldout = {p.numbers for p in task.eval_prompts()}
    counts = {}
    for p in task.sample_prompts(3600, gen()):
        counts[p.numbers] = counts.get(p.numbers, 0) + 1
    everything = {(a, b) for a in range(5) for b in range(5)}
    assert set(counts) == everything - heldout and len(counts) == 18
    assert min(counts.values()) > 120 and max(counts.values()) < 280  # 200 expected each


def test_heldout_on_a_large_problem_space():
    task = TextAdditionTask(digits=9, n_heldout=50, few_shot=3)
    heldout = {p.numbers for p in task.eval_prompts(50)}
    assert len(heldout) == 50
    train = task.sample_prompts(500, gen())
    assert all(10**8 <= v < 10**9 for p in train for v in p.numbers)
    assert not heldout & {p.numbers for p in train}


@pytest.mark.parametrize("cls", TASKS)
def test_same_seed_same_prompts(cls):
    task = cls()
    assert task.sample_prompts(64, gen(3)) == task.sample_prompts(64, gen(3))
    assert task.sample_prompts(64, gen(3)) != task.sample_prompts(64, gen(4))
    assert cls(seed=1).eval_prompts(20) != task.eval_prompts(20)


def test_training_draws_use_the_generator():
    task = TextSortTask()
    torch.manual_seed(0)
    a = task.sample_prompts(32, gen(5))
    torch.manual_seed(1)
    assert task.sample_prompts(32, gen(5)) == a


def test_sort_prompt_text():
    task = TextSortTask()
    p = task.prompt([5, 2, 8])
    assert p.question == "Sort in increasing order: 5, 2, 8\n" + SORT_FORMAT
    assert p.messages == ({"role": "user", "content": p.question},)
    assert p.numbers == (5, 2, 8) and p.target == "2, 5, 8"
    # the whole user message stays short for 3 numbers (the tiny model reads it too)
    assert max(len(q.question) for q in task.sample_prompts(200, gen())) <= 80
    assert p.question.isascii()


def test_addition_prompt_text():
    task = TextAdditionTask()
    p = task.prompt([23, 58])
    assert p.question == "What is 23 + 58?\n" + ADD_FORMAT
    assert p.target == "81" and p.numbers == (23, 58)
    assert max(len(q.question) for q in task.sample_prompts(200, gen())) <= 80


def test_system_message_and_prompt_value():
    task = TextSortTask(system="You sort numbers.", few_shot=1)
    p = task.prompt([3, 1, 2])
    assert p.messages[0] == {"role": "system", "content": "You sort numbers."}
    assert [m["role"] for m in p.messages] == ["system", "user", "assistant", "user"]
    assert hash(p) == hash(task.prompt([3, 1, 2])) and p == task.prompt([3, 1, 2])
    assert len({p, task.prompt([3, 1, 2]), task.prompt([1, 2, 3])}) == 2
    assert "messages" not in repr(p) and "target='1, 2, 3'" in repr(p)
    with pytest.raises(ValueError, match="question"):
        TextPrompt(({"role": "user", "content": "a"},), "b", (1,), "1")
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        TextPrompt(({"role": "user"},), "b", (1,), "1")


@pytest.mark.parametrize("cls", TASKS)
def test_few_shot_examples(cls):
    task = cls(few_shot=4)
    heldout = {p.numbers for p in task.eval_prompts()}
    p = task.sample_prompts(1, gen())[0]
    assert len(p.messages) == 2 * 4 + 1
    assert [m["role"] for m in p.messages] == ["user", "assistant"] * 4 + ["user"]
    assert p.messages[:-1] == task.few_shot_messages == task.eval_prompts(1)[0].messages[:-1]
    questions = set()
    for user, assistant in zip(p.messages[0:-1:2], p.messages[1:-1:2]):
        # recover the example's numbers from its question, check the worked answer
        example = task.prompt([int(v) for v in re.findall(r"[0-9]+", user["content"])])
        assert example.question == user["content"]
        assert example.numbers not in heldout
        assert assistant["content"] == example.target
        assert task.is_correct([example], [[assistant["content"]]]).item()
        questions.add(user["content"])
    assert len(questions) == 4
    assert cls(few_shot=4).few_shot_messages == task.few_shot_messages  # fixed by the seed
    assert cls(few_shot=4, seed=1).few_shot_messages != task.few_shot_messages


# -- parsing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1, 3, 7", (1, 3, 7)),
        ("1,3,7", (1, 3, 7)),
        ("  1 ,3,  7 \n", (1, 3, 7)),
        ("\n1, 3, 7", (1, 3, 7)),
        ("01, 3, 7", (1, 3, 7)),
        ("5", (5,)),
        ("1, 2, 3, 4", (1, 2, 3, 4)),
        ("12345678901234567890, 1", (12345678901234567890, 1)),
        ("1, 3, 7.", None),
        ("[1, 3, 7]", None),
        ("1 3 7", None),
        ("1, 3,, 7", None),
        ("1, 3, 7,", None),
        (",1, 3, 7", None),
        ("1,\n3, 7", None),
        ("1, -3, 7", None),
        ("1, 3.5, 7", None),
        ("The answer is 1, 3, 7", None),
        ("١, ٣, ٧", None),  # Arabic-Indic digits
        ("１, ３, ７", None),  # full-width digits
        ("", None),
        ("   ", None),
        ("9" * 101, None),
        ("9" * 100, (int("9" * 100),)),
        ("9" * 5000, None),
    ],
)
def test_sort_parse_answer(text, expected):
    assert TextSortTask().parse_answer(text) == expected


@pytest.mark.parametrize("garbage", [None, 3, b"1, 2, 3", ["1"], object()])
def test_parse_answer_non_strings(garbage):
    assert TextSortTask().parse_answer(garbage) is None
    assert TextAdditionTask().parse_answer(garbage) is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("81", (81,)),
        (" 81\n", (81,)),
        ("081", (81,)),
        ("0", (0,)),
        ("81.", None),
        ("= 81", None),
        ("1,000", None),
        ("-3", None),
        ("eighty-one", None),
        ("81 apples", None),
        ("", None),
    ],
)
def test_addition_parse_answer(text, expected):
    assert TextAdditionTask().parse_answer(text) == expected


# -- rewards ----------------------------------------------------------------------------------------


def test_sort_rewards_exact_values():
    task = TextSortTask(format_weight=0.25)  # exact in binary floating point
    p = task.prompt([5, 2, 8])
    answers = ["2, 5, 8", "2,5,8 ", "8, 5, 2", "2, 5", "2, 5, 8, 9", "2, 5, 8.", "", "garbage ✗", "2 5 8"]
    r = task.rewards([p], [answers])
    assert r.dtype == torch.float32 and r.shape == (1, len(answers))
    assert r.tolist() == [[1.25, 1.25, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
    assert task.format_ok([p], [answers]).tolist() == [[True, True, True] + [False] * 6]
    assert task.is_correct([p], [answers]).tolist() == [[True, True] + [False] * 7]
    assert task.max_reward == 1.25


def test_sort_rewards_repeats_and_default_weight():
    task = TextSortTask()
    p = task.prompt([7, 1, 7])
    r = task.rewards([p], [["1, 7, 7", "7, 1, 7", "1, 7", "x"]])
    assert torch.allclose(r, torch.tensor([[1.2, 0.2, 0.0, 0.0]]))
    assert task.max_reward == pytest.approx(1.2)
    assert TextSortTask(format_weight=0).rewards([p], [["1, 7, 7", "7, 7, 1"]]).tolist() == [[1.0, 0.0]]


def test_addition_rewards_exact_values():
    task = TextAdditionTask(format_weight=0.5)
    prompts = [task.prompt([23, 58]), task.prompt([99, 99])]
    answers = [["81", "82", "81.", "", "The answer is 81"], ["198", " 198", "189", "1 98", "١٩٨"]]
    r = task.rewards(prompts, answers)
    assert r.tolist() == [[1.5, 0.5, 0.0, 0.0, 0.0], [1.5, 1.5, 0.5, 0.0, 0.0]]
    assert task.is_correct(prompts, answers).tolist() == [[True] + [False] * 4, [True, True] + [False] * 3]


@pytest.mark.parametrize("cls", TASKS)
def test_targets_score_max_reward(cls):
    task = cls()
    prompts = task.sample_prompts(50, gen()) + task.eval_prompts(50)
    r = task.rewards(prompts, [[p.target, p.target] for p in prompts])
    assert torch.allclose(r, torch.full((100, 2), task.max_reward))


@pytest.mark.parametrize("cls", TASKS)
def test_fuzz_never_raises(cls):
    task = cls()
    rng = random.Random(0)
    alphabet = "0123456789 ,.-\n\t[]abc" + "".join(chr(c) for c in (0x663, 0xFF13, 0x2028, 0xE9, 0x1F600, 0))

    def random_text():
        kind = rng.random()
        if kind < 0.4:
            return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 20)))
        if kind < 0.7:
            return (
                "".join(chr(rng.randrange(0, 0x110000)) for _ in range(rng.randrange(0, 10)))
                .encode("utf-8", "replace")
                .decode("utf-8", "replace")
            )
        return ", ".join(str(rng.randrange(0, 10 ** rng.randrange(1, 30))) for _ in range(rng.randrange(1, 5)))

    prompts = task.sample_prompts(40, gen())
    answers = [[random_text() for _ in range(8)] for _ in prompts]
    r = task.rewards(prompts, answers)
    assert r.shape == (40, 8)
    assert bool(((r >= 0) & (r <= task.max_reward)).all())
    allowed = {0.0, float(torch.tensor(task.format_weight)), float(torch.tensor(task.max_reward))}
    assert set(r.flatten().tolist()) <= allowed
    for group in answers:
        for text in group:
            task.parse_answer(text)


# -- validation -------------------------------------------------------------------------------------


def test_answers_shape_errors_name_the_argument():
    task = TextSortTask()
    prompts = task.sample_prompts(2, gen())
    with pytest.raises(ValueError, match="answers.*one list of completions per prompt"):
        task.rewards(prompts, [["1, 2, 3"]])
    with pytest.raises(ValueError, match=r"answers.*len\(answers\[1\]\) = 1"):
        task.rewards(prompts, [["1, 2, 3", "x"], ["1, 2, 3"]])
    with pytest.raises(ValueError, match="trial >= 1"):
        task.rewards(prompts, [[], []])
    with pytest.raises(TypeError, match=r"answers\[0\] must be a list of str"):
        task.rewards(prompts, ["1, 2, 3", "1, 2, 3"])
    with pytest.raises(TypeError, match=r"answers\[1\]\[0\] must be a str"):
        task.rewards(prompts, [["1, 2, 3"], [None]])
    with pytest.raises(TypeError, match="answers must be a list"):
        task.is_correct(prompts, "1, 2, 3")
    with pytest.raises(TypeError, match=r"prompts\[0\] must be a TextPrompt"):
        task.format_ok([(1, 2, 3)], [["1, 2, 3"]])
    assert task.rewards([], []).shape == (0, 0)


def test_constructor_and_argument_errors():
    with pytest.raises(ValueError, match=r"n_heldout must leave training problems.*\[0, 999\]"):
        TextSortTask(n_heldout=1000)
    with pytest.raises(ValueError, match="n_heldout"):
        TextAdditionTask(digits=1)  # 100 problems, 200 held out
    with pytest.raises(ValueError, match="n_numbers"):
        TextSortTask(n_numbers=0)
    with pytest.raises(ValueError, match="max_value"):
        TextSortTask(max_value=0)
    with pytest.raises(ValueError, match=r"digits must be an int in \[1, 9\]"):
        TextAdditionTask(digits=10)
    with pytest.raises(ValueError, match="format_weight"):
        TextSortTask(format_weight=-0.1)
    with pytest.raises(ValueError, match="few_shot"):
        TextSortTask(few_shot=-1)
    with pytest.raises(ValueError, match=r"few_shot must be in \[0, 1\]"):
        TextSortTask(n_numbers=1, max_value=1, n_heldout=1, few_shot=2)
    task = TextSortTask()
    with pytest.raises(ValueError, match=r"n must be an int in \[0, n_heldout = 200\]"):
        task.eval_prompts(201)
    with pytest.raises(ValueError, match="n must be"):
        task.sample_prompts(0, gen())
    with pytest.raises(TypeError, match="generator"):
        task.sample_prompts(2, 0)


def test_format_line():
    task = TextSortTask()
    p = task.prompt([5, 2, 8])
    assert task.format(p) == "Sort in increasing order: 5, 2, 8"
    assert task.format(p, "2, 5, 8") == "Sort in increasing order: 5, 2, 8 -> '2, 5, 8'  (reward 1.2, correct ✓)"
    assert task.format(p, "8, 5, 2").endswith("(reward 0.2, not correct ✗)")


# -- the second held-out set: whole answers left out of training (n_unseen_answers) ------------------------


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


def test_answer_kind_names_each_kind_of_sorting_answer():
    task = TextSortTask(3, 9)
    prompt = task.prompt((7, 2, 9))
    cases = {
        "2, 7, 9": "correct",
        " 2,7 ,9\n": "correct",
        "7, 2, 9": "right form, wrong order",  # copied the prompt
        "9, 7, 2": "right form, wrong order",
        "2, 7, 8": "right form, wrong numbers",
        "2, 7": "other",  # too few numbers: not the asked form
        "The answer is 2, 7, 9": "extra words",
        "2, 7, 9.": "other",
        "": "other",
    }
    assert {a: task.answer_kind(prompt, a) for a in cases} == cases
    assert set(cases.values()) == set(ANSWER_KINDS)


def test_answer_kinds_counts_every_completion():
    task = TextAdditionTask(digits=2)
    prompts = [task.prompt((23, 58)), task.prompt((10, 10))]
    answers = [["81", "82", "eighty-one"], ["20", "", "20"]]
    kinds = task.answer_kinds(prompts, answers)
    assert list(kinds) == list(ANSWER_KINDS)
    assert kinds == {
        "correct": 3 / 6,
        "right form, wrong order": 0.0,
        "right form, wrong numbers": 1 / 6,
        "extra words": 1 / 6,
        "other": 1 / 6,
    }
    with pytest.raises(ValueError, match="one list of completions per prompt"):
        task.answer_kinds(prompts, answers[:1])

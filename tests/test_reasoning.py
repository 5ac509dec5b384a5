"""toy_envs.reasoning: the families, the strict and lenient verifiers, worked solutions, held-out splits."""

import pytest
import torch

from toy_envs.reasoning import (
    FAMILIES,
    REASONING_KINDS,
    THINK_FORMAT,
    ReasoningTask,
    answer_reward,
    contains_reward,
    split_thinking,
    strict_reward,
    substring_reward,
)

SIZES = {"sum": {"n_numbers": 3}, "word": {}, "add": {"digits": 2}}


def task(family: str = "sum", thinking: bool = True, **knobs) -> ReasoningTask:
    return ReasoningTask(family=family, thinking=thinking, **{**SIZES[family], **knobs})


def test_questions_and_worked_solutions_read_as_a_learner_expects():
    assert task("sum").question((5, 9, 8)) == f"What is 5 + 9 + 8?\n{THINK_FORMAT}"
    assert task("sum").worked_solution((5, 9, 8)) == "<think>5 + 9 = 14. 14 + 8 = 22.</think> 22"
    assert task("sum", thinking=False).worked_solution((5, 9, 8)) == "22"
    assert task("sum", thinking=False).question((5, 9, 8)).endswith("Reply with only the number.")
    word = task("word")
    assert word.solution((17, 5, 3)) == (19,)
    assert word.worked_solution((17, 5, 3)) == "<think>17 + 5 = 22. 22 - 3 = 19.</think> 19"
    story = word.question((17, 5, 3)).split("\n")[0]
    assert "has 17" in story and "gets 5 more" in story and "gives away 3" in story and story.endswith("now?")
    add = task("add", digits=3)
    assert add.worked_solution((786, 897)) == (
        "<think>6 + 7 = 13. 80 + 90 = 170. 13 + 170 = 183. 700 + 800 = 1500. 183 + 1500 = 1683.</think> 1683"
    )


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("thinking", [True, False])
def test_every_worked_solution_is_well_formed_right_and_scores_the_maximum(family, thinking):
    t = task(family, thinking)
    prompts = t.sample_prompts(64, torch.Generator().manual_seed(1)) + t.eval_prompts(64)
    replies = [[p.target] for p in prompts]
    assert t.is_correct(prompts, replies).all() and t.format_ok(prompts, replies).all()
    assert torch.equal(t.rewards(prompts, replies), torch.full((128, 1), t.max_reward))
    for p in prompts:  # the scratchpad's last line is the answer: what it teaches is consistent
        if thinking:
            pad, answer = split_thinking(p.target)
            assert pad.rstrip(".").rsplit("= ", 1)[1] == answer == str(t.solution(p.numbers)[0])


@pytest.mark.parametrize("family", FAMILIES)
def test_held_out_problems_never_occur_in_training(family):
    t = task(family)
    held = set(t.heldout_problems)
    assert len(held) == 200 == t.n_heldout
    drawn = {p.numbers for p in t.sample_prompts(4000, torch.Generator().manual_seed(0))}
    assert not held & drawn
    shots = (
        {
            tuple(int(x) for x in m["content"].split("?")[0].replace("What is", "").split("+"))
            for m in t.few_shot_messages
            if m["role"] == "user"
        }
        if family != "word"
        else set()
    )
    assert not held & shots
    assert len(drawn) > 0.5 * min(4000, t.n_train_problems)  # training draws spread over the problem space


def test_the_same_seed_gives_the_same_split_and_another_seed_another():
    assert task("word").heldout_problems == task("word").heldout_problems
    assert task("word").heldout_problems != task("word", seed=1).heldout_problems


@pytest.mark.parametrize(
    ("reply", "parsed"),
    [
        ("<think>5 + 9 = 14. 14 + 8 = 22.</think> 22", (22,)),
        ("  <think>\nsteps\n</think>\n22\n", (22,)),
        ("<think></think>22", (22,)),
        ("22", None),  # thinking asks for the scratchpad first
        ("<think>5 + 9 = 14.", None),  # cut by the budget: never closed
        ("<think>a</think> 22.", None),
        ("<think>a</think> 22 apples", None),
        ("<think>a</think> The answer is 22", None),
        ("<think>a</think> 22 <think>b</think> 22", None),  # repeated blocks collect nothing
        ("<think>a<think>b</think> 22", None),
        ("<think>a</think> -22", None),
        ("", None),
    ],
)
def test_the_strict_verifier_reads_the_answer_after_exactly_one_scratchpad(reply, parsed):
    assert task("sum").parse_answer(reply) == parsed


@pytest.mark.parametrize(
    ("reply", "parsed"), [("22", (22,)), (" 22\n", (22,)), ("22.", None), ("<think>a</think> 22", None)]
)
def test_answer_only_accepts_one_number_and_nothing_else(reply, parsed):
    assert task("sum", thinking=False).parse_answer(reply) == parsed


def test_the_lenient_verifier_is_gamed_by_listing_numbers_and_the_truth_is_not():
    strict, lenient = task("sum"), task("sum", reward="contains")
    prompt = strict.prompt((5, 9, 8))
    replies = [["<think>x</think> 22", "20 21 22 23 24", "122", "the sum is 22, or 23", "<think>5 + 9 = 14.", ""]]
    assert lenient.rewards([prompt], replies).tolist() == [[1.0, 1.0, 0.0, 1.0, 0.0, 0.0]]
    assert strict.rewards([prompt], replies)[0].tolist() == pytest.approx([1.2, 0, 0, 0, 0, 0])  # float32 1.2
    # whatever the reward, is_correct is strict: evaluations measure the truth
    assert lenient.is_correct([prompt], replies).tolist() == [[True, False, False, False, False, False]]
    assert lenient.max_reward == 1.0 and strict.max_reward == pytest.approx(1.2)


def test_the_substring_verifier_pays_empty_and_partial_answers_and_cut_replies():
    strict, lenient = task("sum"), task("sum", reward="substring")
    prompt = strict.prompt((5, 9, 8))  # answer 22
    replies = [
        "<think>x</think> 22",  # right
        "<think>x</think> 23",  # wrong: not a substring of "22"
        "<think>x</think> 2",  # a partial answer: "2" in "22"
        "<think>x</think>",  # the empty answer: "" in "22"
        "<think>5 + 9 = 14. 14 + 8 =",  # cut inside the scratchpad: no </think>, so the answer is ""
        "<think>a</think><think>b</think> 22",  # the text after the *last* </think>
        "22",  # answer only: no </think>, so "" again
        "<think>x</think> 122",
    ]
    assert lenient.rewards([prompt], [replies]).tolist() == [[1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0]]
    assert strict.rewards([prompt], [replies])[0].tolist() == pytest.approx([1.2, 0.2, 0.2, 0, 0, 0, 0, 0.2])
    assert lenient.is_correct([prompt], [replies])[0].tolist() == [True] + [False] * 7
    assert lenient.max_reward == 1.0
    with pytest.raises(ValueError, match="answers"):
        lenient.rewards([prompt], [])


# (reply, right, strict_reward, answer_reward, substring_reward, contains_reward): the four verifiers side by side
VERDICTS = [
    ("<think>5 + 9 = 14. 14 + 8 = 22.</think> 22", 22, 1.2, 1.0, 1.0, 1.0),
    ("<think>5 + 9 = 14.\n14 + 8 = 22.</think>\n22\n", 22, 1.2, 1.0, 1.0, 1.0),  # newlines inside and around
    ("<think>x</think> 23", 22, 0.2, 0.0, 0.0, 0.0),
    ("<think>x</think> 2", 22, 0.2, 0.0, 1.0, 0.0),  # a partial answer
    ("<think>x</think> 122", 22, 0.2, 0.0, 0.0, 0.0),  # more digits
    ("<think>x</think> 22", 2, 0.2, 0.0, 0.0, 0.0),  # more digits than the right one
    ("<think>x</think> -22", 22, 0.0, 0.0, 0.0, 1.0),  # a sign is not the asked form
    ("<think>x</think>", 22, 0.0, 0.0, 1.0, 0.0),  # the empty answer
    ("<think>5 + 9 = 14. 14 + 8 = 22.", 22, 0.0, 0.0, 1.0, 1.0),  # an early end inside the scratchpad
    ("22", 22, 0.0, 0.0, 1.0, 1.0),  # no scratchpad at all
    ("<think>a</think><think>b</think> 22", 22, 0.0, 0.0, 1.0, 1.0),  # two blocks
    (None, 22, 0.0, 0.0, 1.0, 0.0),  # not text: the careless reader sees an empty answer
]


@pytest.mark.parametrize(("reply", "right", "strict", "answer", "substring", "contains"), VERDICTS)
def test_the_verifiers_side_by_side(reply, right, strict, answer, substring, contains):
    assert strict_reward(reply, right) == pytest.approx(strict)  # 0.2 + 1.0 in float64
    assert strict_reward(reply, right, format_weight=0.0) == answer_reward(reply, right) == answer
    assert (substring_reward(reply, right), contains_reward(reply, right)) == (substring, contains)


def test_a_verifier_named_or_given_as_a_function_scores_every_reply():
    prompt = task("sum").prompt((5, 9, 8))  # answer 22
    replies = [[row[0] for row in VERDICTS if isinstance(row[0], str) and row[1] == 22]]
    wanted = [[row[3] for row in VERDICTS if isinstance(row[0], str) and row[1] == 22]]
    assert task("sum", reward="answer").rewards([prompt], replies).tolist() == wanted
    assert task("sum", reward=answer_reward).rewards([prompt], replies).tolist() == wanted
    learner = task("sum", reward=lambda reply, right: 0.5 * (str(right) in reply))
    assert learner.rewards([prompt], [["22", "x"]]).tolist() == [[0.5, 0.0]]
    with pytest.raises(ValueError, match="max_reward is only known for the named verifiers"):
        _ = learner.max_reward
    with pytest.raises(TypeError, match="the verifier must return a number; for reply 'x' it returned None"):
        task("sum", reward=lambda reply, right: None).rewards([prompt], [["x"]])
    with pytest.raises(ValueError, match="finite number"):
        task("sum", reward=lambda reply, right: float("nan")).rewards([prompt], [["x"]])
    with pytest.raises(TypeError, match="right must be an int"):
        answer_reward("<think>x</think> 22", "22")
    # answer only: "answer" is is_correct on the bare form, "strict" adds the format part
    bare = task("sum", thinking=False, reward="answer")
    assert bare.rewards([bare.prompt((5, 9, 8))], [["22", " 22\n", "23", "x"]]).tolist() == [[1.0, 1.0, 0.0, 0.0]]


def test_answer_kinds_name_the_failure():
    t = task("sum")
    prompt = t.prompt((5, 9, 8))
    replies = ["<think>x</think> 22", "<think>x</think> 21", "<think>5 + 9 = 14. 14", "The answer is 22", "22"]
    assert [t.answer_kind(prompt, r) for r in replies] == [
        "correct",
        "right form, wrong answer",
        "unclosed scratchpad",
        "extra words",
        "other",
    ]
    kinds = t.answer_kinds([prompt], [replies])
    assert list(kinds) == list(REASONING_KINDS) and kinds["correct"] == pytest.approx(0.2)


def test_a_worked_example_in_the_prompt_shows_the_asked_form():
    t = task("add", few_shot=1, system="Be brief.")
    roles = [m["role"] for m in t.few_shot_messages]
    assert roles == ["system", "user", "assistant"]
    assert split_thinking(t.few_shot_messages[-1]["content"]) is not None


@pytest.mark.parametrize(
    ("knobs", "words"),
    [
        ({"family": "mul"}, "family must be one of ('sum', 'word', 'add'); got 'mul'"),
        ({"reward": "lenient"}, "reward must be one of ('strict', 'answer', 'substring', 'contains') or a function"),
        ({"n_numbers": 9}, "n_numbers"),
        ({"digits": 0}, "digits"),
        ({"n_heldout": 10_000}, "n_heldout must leave training problems"),
    ],
)
def test_bad_knobs_are_named(knobs, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        ReasoningTask(**knobs)
    with pytest.raises(TypeError, match="thinking must be a bool"):
        ReasoningTask(thinking="yes")


@pytest.mark.smollm2
def test_every_worked_solution_fits_the_thinking_budget_with_smollm2s_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    from minirl.lm import smollm2_folder
    from minirl.lm.recipes import THINKING_TOKENS

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_folder(tmp_path)))
    for family, knobs in (("sum", {"n_numbers": 3}), ("word", {}), ("add", {"digits": 2})):
        t = ReasoningTask(family=family, **knobs)
        prompts = t.sample_prompts(500, torch.Generator().manual_seed(0)) + t.eval_prompts()
        longest = max(len(tokenizer(p.target)["input_ids"]) + 1 for p in prompts)  # + the end-of-sequence token
        assert longest <= THINKING_TOKENS, family


def test_a_worked_example_of_another_length():
    four, three = task("sum", n_numbers=4, few_shot=1), task("sum", n_numbers=3, few_shot=1)
    assert four.few_shot_messages[-1]["content"].count(" + ") == 3  # a 4-number example by default
    mixed = task("sum", n_numbers=4, few_shot=1, example_numbers=3)
    assert mixed.few_shot_messages == three.few_shot_messages  # the 3-number task's own example
    assert [p.numbers for p in mixed.eval_prompts(5)] == [p.numbers for p in four.eval_prompts(5)]
    assert mixed.eval_prompts(1)[0].messages[-1] == four.eval_prompts(1)[0].messages[-1]
    assert task("sum", n_numbers=4, few_shot=1, example_numbers=4).few_shot_messages == four.few_shot_messages
    with pytest.raises(ValueError, match="example_numbers is for the sum family only"):
        task("word", example_numbers=3)
    with pytest.raises(ValueError, match="example_numbers must be an int in"):
        task("sum", example_numbers=9)

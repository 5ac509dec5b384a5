"""toy_envs.calculator: a tool the model may call, never an eval of model text, and the task for the loop."""

import pytest
import torch

from minirl.episodes import sample_episodes, scripted_episodes
from minirl.lm.models import make_tiny_lm
from minirl.protocols import EpisodicTask
from toy_envs.calculator import (
    MAX_REPLY_CHARS,
    CalcEpisode,
    CalculatorChat,
    CalculatorTask,
    call_rates,
    parse_answer,
    run_calculator,
)

TASK = CalculatorTask()


@pytest.mark.parametrize(
    ("expression", "value"),
    [("23*41", 943), (" 23 * 41 ", 943), ("7+5", 12), ("3-10", -7), ("999999*999999", 999998000001)],
)
def test_the_calculator_does_whole_number_arithmetic(expression, value):
    assert run_calculator(expression) == value


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('echo hi')",  # code is text to it, never run
        "2**100000",  # no powers: a reply cannot make it work for hours
        "1234567*2",  # 7 digits: over the limit
        "2*3*4",
        "23/41",
        "(23)*41",
        "-5*3",
        "",
        "twenty * three",
    ],
)
def test_anything_else_is_refused_without_being_evaluated(expression):
    assert run_calculator(expression) is None


def test_the_answer_is_the_last_whole_number_of_a_reply():
    assert parse_answer("943") == 943 and parse_answer("It is 943.") == 943 and parse_answer("-7") == -7
    assert parse_answer("23 * 41 = 943") == 943 and parse_answer("I don't know") is None and parse_answer("") is None


def _chat(a=23, b=41, kind="tool", **kw):
    return CalculatorChat(TASK.prompt(a, b, kind), kw.get("max_turns", 3), kw.get("call_cost", 0.1))


def test_a_call_then_the_answer_earns_one_minus_the_call():
    chat = _chat()
    assert chat.step("<calc>23*41</calc>") == ("<result>943</result>", 0.0, False)
    message, reward, done = chat.step("943")
    assert message is None and done and reward == pytest.approx(0.9)
    ep = chat.episode
    assert ep.calls == 1 and ep.bad_calls == 0 and ep.answer == 943 and ep.success and ep.turns == 2
    assert ep.reward == pytest.approx(0.9)


def test_an_answer_in_ones_head_earns_one_and_a_wrong_one_nothing():
    right, wrong = _chat(3, 4, "head"), _chat(3, 4, "head")
    assert right.step("12") == (None, 1.0, True) and right.episode.calls == 0
    assert wrong.step("The answer is 13.") == (None, 0.0, True) and not wrong.episode.success


@pytest.mark.parametrize(
    "reply",
    ["<calc>import os</calc>", "<calc>23*41", "<calc></calc>", "<calc>eval('23*41')</calc>"],
)
def test_a_malformed_or_unsafe_call_is_an_error_turn_and_counts(reply):
    chat = _chat()
    message, reward, done = chat.step(reply)
    assert message == "<error>the calculator reads a+b, a-b or a*b of whole numbers</error>"
    assert (reward, done) == (0.0, False) and chat.episode.calls == 1 and chat.episode.bad_calls == 1
    _, reward, _ = chat.step("943")
    assert reward == pytest.approx(0.9) and chat.episode.invalid == 1  # right, but the call still cost


def test_an_over_long_reply_is_an_error_turn():
    chat = _chat()
    message, _, done = chat.step("9" * (MAX_REPLY_CHARS + 1))
    assert message.startswith("<error>a reply of at most") and not done and chat.episode.invalid == 1


def test_calls_that_never_answer_earn_only_their_cost():
    chat = _chat(max_turns=2)
    chat.step("<calc>23*41</calc>")
    message, reward, done = chat.step("<calc>23*41</calc>")
    assert message is None and done and reward == pytest.approx(-0.2) and chat.episode.answer is None
    with pytest.raises(RuntimeError, match="the episode is over"):
        chat.step("943")


def test_the_task_mixes_kinds_and_holds_out_its_hard_evaluation_problems():
    assert isinstance(TASK, EpisodicTask)
    prompts = TASK.sample_prompts(400, torch.Generator().manual_seed(0))
    hard = [p for p in prompts if p.kind == "tool"]
    assert 150 <= len(hard) <= 250  # tool_share 0.5 of 400: 200 ± 2.5 standard deviations (10 each)
    assert all(11 <= p.a <= 99 and 11 <= p.b <= 99 for p in hard)
    assert all(11 <= p.a <= 99 and p.b == 10 for p in prompts if p.kind == "head")  # the default: times ten
    evals = TASK.eval_prompts(40)
    assert [p.kind for p in evals[:4]] == ["tool", "head", "tool", "head"] and evals == TASK.eval_prompts(40)
    held_out = {(p.a, p.b) for p in evals if p.kind == "tool"}
    assert not held_out & {(p.a, p.b) for p in hard}  # never drawn in training
    assert prompts[0].messages[1]["content"] == f"What is {prompts[0].a} * {prompts[0].b}?"
    assert prompts == TASK.sample_prompts(400, torch.Generator().manual_seed(0))  # the same seed, the same draws


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"call_cost": 1.5}, "call_cost must be in"),
        ({"tool_share": -0.1}, "tool_share"),
        ({"max_turns": 0}, "max"),
        ({"easy": "two_digit"}, r"easy must be one of \['one_digit', 'times_ten'\]; got 'two_digit'"),
        ({"demo_call_rate": 1.2}, r"demo_call_rate must be in \[0, 1\]; got 1.2"),
    ],
)
def test_bad_settings_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        CalculatorTask(**change)


def test_the_demonstrator_calls_at_its_rate_whatever_the_kind_and_is_always_right():
    policy = make_tiny_lm(0, max_new_tokens=12)
    prompts = TASK.sample_prompts(128, torch.Generator().manual_seed(1))
    rollout = scripted_episodes(
        policy, prompts, TASK.make_env, TASK.demonstrate, max_turns=3, generator=torch.Generator().manual_seed(2)
    )
    answers = rollout.answers
    assert TASK.is_correct(prompts, answers).all() and TASK.format_ok(prompts, answers).all()
    rates = call_rates(prompts, answers)
    # a quarter on each kind (the when is not taught): ~64 problems a kind, 0.25 ± 3 standard deviations (0.054)
    assert TASK.demo_call_rate == 0.25
    assert 0.09 <= rates["head"] <= 0.41 and 0.09 <= rates["tool"] <= 0.41
    called = [e for group in answers for e in group if e.calls]
    assert called and all(e.turns == 2 and e.reward == pytest.approx(1 - TASK.call_cost) for e in called)


def test_a_model_plays_episodes_and_nothing_it_writes_raises():
    policy = make_tiny_lm(0, max_new_tokens=12)
    prompts = TASK.eval_prompts(4)
    rollout = sample_episodes(
        policy, prompts, TASK.make_env, 2, max_turns=3, generator=torch.Generator().manual_seed(0)
    )
    assert rollout.tokens.shape[:2] == (4, 2)
    episodes = [e for group in rollout.answers for e in group]
    assert all(1 <= e.turns <= 3 for e in episodes)  # an untrained model's noise: answers, errors, no exception
    rewards = TASK.rewards(prompts, rollout.answers)
    assert rewards.shape == (4, 2) and bool(((rewards >= -0.3) & (rewards <= 1.0)).all())


def test_the_command_line_trains_the_calculator_task_and_shows_its_episodes(tmp_path, capsys):
    import json

    from minirl.cli import main
    from minirl.cli.kinds import kind_of_run
    from minirl.lm.recipes import CALC_TOKENS, calculator_recipe, maze_recipe

    expected = maze_recipe("pretrained").with_(max_new_tokens=CALC_TOKENS, eval_prompts=40, sft_targets="draws")
    assert calculator_recipe("pretrained") == expected
    flags = ["--task", "calculator", "--model", "tiny", "--sft-steps", "2", "--steps", "1", "--eval-every", "0"]
    flags += ["--prompts-per-step", "2", "--group-size", "2", "--eval-prompts", "4", "--pass-k", "0"]
    assert main(["train", *flags, "--no-progress", "--out", str(tmp_path / "run")]) == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["task"]["class"] == "toy_envs.calculator:CalculatorTask"
    assert config["model"]["recipe"]["max_new_tokens"] == CALC_TOKENS and kind_of_run(config).name == "text"
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and -0.3 <= rows[0]["reward"] <= 1.0
    assert 1.0 <= rows[0]["turns"] <= TASK.max_turns and 0.0 <= rows[0]["invalid_replies"] <= rows[0]["turns"]
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "run"), "--samples", "2", "--samples-per-prompt", "1"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("  greedy episodes: "))
    assert " turns an episode; " in line and "calls on head problems " in line and "right on tool problems " in line
    shown = [line for line in out.splitlines() if " -> answer " in line]
    evals = TASK.eval_prompts(2)
    assert [line.split(":")[0].strip() for line in shown] == [f"{p.a} * {p.b} ({p.kind})" for p in evals]


def test_the_diagnostics_give_the_calls_and_right_answers_on_each_kind():
    easy, hard = TASK.prompt(41, 10, "head"), TASK.prompt(23, 41, "tool")
    answers = [
        [CalcEpisode("head", replies=["410"], answer=410, reward=1.0, success=True)] * 3
        + [CalcEpisode("head", replies=["<calc>41*10</calc>", "410"], calls=1, answer=410, reward=0.8, success=True)],
        [
            CalcEpisode(
                "tool",
                replies=["<calc>23*41", "<calc>23*41</calc>", "943"],
                calls=2,
                bad_calls=1,
                answer=943,
                reward=0.6,
                success=True,
            ),
            CalcEpisode("tool", replies=["900"], answer=900, reward=0.0, success=False),
        ],
    ]
    figures = TASK.diagnostics([easy, hard], answers)
    assert figures == {
        "turns": pytest.approx((1 + 1 + 1 + 2 + 3 + 1) / 6),
        "invalid_replies": pytest.approx(1 / 6),
        "calls on head problems": 0.25,
        "right on head problems": 1.0,
        "calls on tool problems": 0.5,
        "right on tool problems": 0.5,
    }
    assert "calls on tool problems" not in TASK.diagnostics([easy], answers[:1])  # no problem of that kind


def test_a_transcript_quotes_each_reply():
    chat = _chat()
    chat.step("<calc>23*41</calc>")
    chat.step("943")
    line = TASK.transcript(TASK.prompt(23, 41, "tool"), chat.episode)
    assert line == "23 * 41 (tool): '<calc>23*41</calc>' | '943' -> answer 943, 1 call(s), 0 malformed"


def test_the_best_reward_is_a_right_answer_without_a_call():
    from minirl.diagnostics import cannot_learn

    task = CalculatorTask()
    assert task.max_reward == 1.0
    calls_everywhere = [{"step": s, "reward": 0.9, "zero_variance_groups": 1.0} for s in (1, 2)]
    assert "mean 0.90" in cannot_learn(calls_everywhere, max_reward=task.max_reward)  # every group equal: no signal


def test_the_times_ten_kind_makes_easy_problems_a_two_digit_number_times_ten_and_keeps_the_hard_ones():
    task = CalculatorTask(easy="times_ten")
    prompts = task.sample_prompts(400, torch.Generator().manual_seed(0))
    easy = [p for p in prompts if p.kind == "head"]
    assert easy and all(11 <= p.a <= 99 and p.b == 10 for p in easy)
    assert len({p.a for p in easy}) >= 60  # ~200 draws from 89 numbers: nearly all of them appear
    one_digit = CalculatorTask(easy="one_digit").sample_prompts(400, torch.Generator().manual_seed(0))
    assert all(2 <= p.a <= 9 and 2 <= p.b <= 9 for p in one_digit if p.kind == "head")
    assert all(11 <= p.b <= 99 for p in prompts if p.kind == "tool")
    hard_evals = [(p.a, p.b) for p in task.eval_prompts(40) if p.kind == "tool"]
    assert hard_evals == [(p.a, p.b) for p in TASK.eval_prompts(40) if p.kind == "tool"]  # the same held-out set


@pytest.mark.parametrize("rate", [0.0, 0.25, 1.0])
def test_the_demonstrator_calls_at_its_rate(rate):
    task = CalculatorTask(demo_call_rate=rate)
    gen = torch.Generator().manual_seed(3)
    calls = [task.demonstrate(task.make_env(p), gen).startswith("<calc>") for p in task.sample_prompts(400, gen)]
    assert abs(sum(calls) / 400 - rate) <= 0.065  # 3 standard deviations of a share of 400 at 1/4; 0 and 1 exact

"""The language-model recipes (``minirl.lm.recipes.LMRecipe``): their values, what they build, the command line's
flags on top of them, and the answers they hold out (which ``evaluate`` reports as a second held-out set)."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from minirl.lm import make_tiny_lm
from minirl.lm.recipes import RECIPES, lm_algorithm, model_kind, reasoning_recipe, recipe_for, sft_warm_start
from minirl.train import TrainConfig, evaluate
from toy_envs.text_tasks import TextAdditionTask, TextSortTask

ROOT = Path(__file__).resolve().parents[1]


def measured_settings() -> dict[str, dict]:
    """The settings RESULTS.md's language-model figures were measured with: ``results/bench_lm.json`` (the tiny model
    and SmolLM2 on 2 CPU cores) and ``results/bench_lm_gpu.json`` (SmolLM2 on a GPU), by recipe."""
    out = {}
    for name in ("bench_lm", "bench_lm_gpu"):
        figures = json.loads((ROOT / "results" / f"{name}.json").read_text())["figures"]
        if "tiny" in figures:
            out["tiny"] = figures["tiny"]["settings"]
        out[figures["smollm2"]["recipe"]] = figures["smollm2"]["settings"]
    return out


ADDED_SINCE = {
    "sft_lr_schedule": "constant",
    "cpu_bfloat16": False,
    "algo_knobs": (),
    "micro_batch_size": None,
    "sft_targets": "draws",
}
"""LMRecipe settings added after some records were made, at the value those runs used (what a record lacks)."""


def _as_now(settings: dict) -> dict:
    """A recipe's settings as a record stored them, with the settings added since at the value its run used."""
    return {**ADDED_SINCE, **settings}


def test_the_recipes_are_the_ones_readme_measured():
    """A recipe changed without a new ``minirl bench --lm --save`` (on its device) would leave RESULTS.md's figures
    describing another run: re-measure (CONTRIBUTING, 'Measured figures'), then this test passes again."""
    measured = measured_settings()
    assert set(measured) == {"tiny", "pretrained", "pretrained-cuda"}
    for kind, values in measured.items():
        recipe, values = dataclasses.asdict(RECIPES[kind]), dict(values)
        # older records name the system message itself; the recipe (and newer records) say whether it is the
        # task's own (TextSortTask.SYSTEM)
        if "system" in values:
            values["short_system"] = values.pop("system") == TextSortTask.SYSTEM
        assert values["short_system"] or values["short_system"] is False and kind == "tiny"
        # a setting added after the record must be left at the value that reproduces the measured run
        added = {name: recipe.pop(name) for name in set(recipe) - set(values)}
        reproducing = {"sft_prompts_per_step": None, "lr_schedule": "cosine", "temperature": 1.0}
        reproducing.update(ADDED_SINCE)
        assert added == {name: reproducing[name] for name in added}, (kind, added)
        assert recipe == values, kind


def test_a_recipe_is_frozen_and_with_changes_a_copy():
    tiny = RECIPES["tiny"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        tiny.steps = 3
    with pytest.raises(TypeError):
        RECIPES["tiny"] = tiny  # the table is read-only too
    short = tiny.with_(steps=3, sft_steps=0)
    assert (short.steps, short.sft_steps, tiny.steps, tiny.sft_steps) == (3, 0, 150, 1000)
    assert dataclasses.asdict(short) == {**dataclasses.asdict(tiny), "steps": 3, "sft_steps": 0}
    with pytest.raises(ValueError, match=r"unknown LMRecipe setting\(s\) \['step'\]"):
        tiny.with_(step=3)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"steps": 0}, "steps must be a positive int; got 0"),
        ({"max_new_tokens": 2.5}, "max_new_tokens must be a positive int"),
        ({"sft_steps": -1}, "sft_steps must be an int >= 0; got -1"),
        ({"eval_every": -1}, "eval_every must be an int >= 0"),
        ({"threads": 0}, "threads must be a positive int; got 0"),
        ({"trainable_layers": 0}, "trainable_layers must be a positive int; got 0"),
        ({"learning_rate": 0.0}, "learning_rate must be > 0"),
        ({"sft_learning_rate": -1e-3}, "sft_learning_rate must be > 0"),
        ({"kl_coef": -0.1}, "kl_coef must be >= 0"),
        ({"short_system": "yes"}, "short_system must be True or False"),
        ({"lr_schedule": "linear"}, "lr_schedule must be 'constant' or 'cosine'"),
    ],
)
def test_bad_settings_name_the_setting(changes, message):
    with pytest.raises(ValueError, match=message):
        RECIPES["pretrained"].with_(**changes)


def test_the_recipe_of_a_model_and_device():
    assert model_kind("tiny") == "tiny" and recipe_for("tiny", "cuda") is RECIPES["tiny"]
    assert recipe_for("smollm2-135m", "cpu") is RECIPES["pretrained"]
    assert recipe_for("some/folder", "cuda") is RECIPES["pretrained-cuda"]
    assert recipe_for("smollm2-135m") is RECIPES["pretrained-cuda" if torch.cuda.is_available() else "pretrained"]


def test_the_recipe_builds_the_task_with_its_prompt():
    for recipe in RECIPES.values():
        prompt = dict(few_shot=recipe.few_shot, n_unseen_answers=recipe.unseen_answers)
        sort = TextSortTask.SYSTEM if recipe.short_system else None
        add = TextAdditionTask.SYSTEM if recipe.short_system else None
        assert recipe.task() == TextSortTask(n_numbers=3, max_value=9, system=sort, **prompt)
        assert recipe.task(n_numbers=4, max_value=7) == TextSortTask(n_numbers=4, max_value=7, system=sort, **prompt)
        assert recipe.addition_task(digits=2) == TextAdditionTask(digits=2, system=add, **prompt)
    task = RECIPES["pretrained"].task()
    assert task.system == "You sort numbers." and task.few_shot == 1 and task.n_unseen_answers == 20


def test_each_task_has_its_own_system_message_and_arithmetic_never_says_sort():
    recipe = RECIPES["pretrained"]
    prompts = [
        recipe.task().eval_prompts(1)[0],
        recipe.addition_task().eval_prompts(1)[0],
        *(recipe.reasoning_task(f).eval_prompts(1)[0] for f in ("sum", "word", "add")),
    ]
    systems = [p.messages[0]["content"] for p in prompts]
    assert systems == ["You sort numbers.", "You add numbers.", *["You solve arithmetic problems."] * 3]
    for p in prompts[1:]:
        assert not any("sort" in m["content"].lower() for m in p.messages), p.messages
    assert RECIPES["tiny"].reasoning_task().system is None  # the tokenizer's default


def test_the_recipe_builds_the_algorithm_with_its_kl_coefficient():
    assert RECIPES["tiny"].algorithm() == lm_algorithm("grpo", kl_coef=0.02)
    assert RECIPES["pretrained"].algorithm() == lm_algorithm("grpo", kl_coef=0.0)
    assert RECIPES["pretrained"].algorithm("dapo", clip_eps_high=0.3) == lm_algorithm(
        "dapo", kl_coef=0.0, clip_eps_high=0.3
    )
    assert RECIPES["tiny"].algorithm("grpo", kl_coef=0.1).kl_coef == 0.1  # changes come last


def test_a_probes_algo_knobs_change_their_preset_only():
    probe = RECIPES["pretrained"].with_(algo_knobs=(("grpo", "delta_mode", "centered_rewards"), ("ppo", "lam", 1.0)))
    assert probe.algorithm("grpo") == lm_algorithm("grpo", kl_coef=0.0, delta_mode="centered_rewards")
    assert probe.algorithm("ppo") == RECIPES["pretrained"].algorithm("ppo").with_(lam=1.0)
    assert probe.algorithm("dapo") == RECIPES["pretrained"].algorithm("dapo")  # no knob named for it
    assert probe.algorithm("grpo", delta_mode="rewards").delta_mode == "rewards"  # changes still come last
    assert RECIPES["pretrained"].algo_knobs == ()  # the recipes themselves change no knob
    for bad, message in [
        ((("grpo", "delta_mode"),), r"algo_knobs: \(algorithm, knob, value\) triples; got \('grpo', 'delta_mode'\)"),
        ((("grpo", "delta_mod", "rewards"),), r"unknown AlgoConfig field\(s\) \['delta_mod'\]"),
        ((("grpo", "delta_mode", "centred"),), "delta_mode must be one of"),
        ((("grpp", "lam", 1.0),), "grpp"),
    ]:
        with pytest.raises(ValueError, match=message):
            RECIPES["pretrained"].with_(algo_knobs=bad)


def test_the_recipe_builds_the_train_config():
    recipe, task = RECIPES["tiny"], RECIPES["tiny"].task()
    by_hand = TrainConfig(
        task=task,
        algo=lm_algorithm("grpo", kl_coef=0.02),
        seed=3,
        steps=150,
        prompts_per_step=16,
        group_size=8,
        learning_rate=3e-4,
        eval_every=25,
        eval_prompts=200,
        eval_sampled=False,
        threads=1,
        progress=False,
    )
    assert recipe.train_config(task, seed=3, progress=False) == by_hand
    assert recipe.train_config(task, algo="dapo", seed=3, progress=False).algo == recipe.algorithm("dapo")
    algo = lm_algorithm("gspo", kl_coef=0.5)
    changed = recipe.train_config(task, algo=algo, steps=4, temperature=0.7, max_seconds=60.0)
    assert (changed.algo, changed.steps, changed.temperature, changed.max_seconds) == (algo, 4, 0.7, 60.0)


def test_the_recipe_builds_the_policy_and_its_trainable_blocks():
    recipe = RECIPES["tiny"].with_(trainable_layers=2)
    policy, by_hand = recipe.policy("tiny", seed=1), make_tiny_lm(seed=1, max_new_tokens=10)
    assert policy.max_new_tokens == 10 and policy.device.type == "cpu"
    for (name, p), q in zip(policy.named_parameters(), by_hand.parameters()):
        assert torch.equal(p, q), name
    frozen = {name for name, p in policy.named_parameters() if not p.requires_grad}
    assert "model.model.embed_tokens.weight" in frozen and "model.model.layers.1.mlp.up_proj.weight" in frozen
    assert not any(name.startswith(("model.model.layers.2.", "model.model.layers.3.")) for name in frozen)


def test_the_recipe_warm_start_is_sft_warm_start_with_its_settings():
    recipe = RECIPES["tiny"].with_(sft_steps=2, prompts_per_step=3)
    task = TextSortTask(n_numbers=2, max_value=3, n_heldout=4)
    a, b = make_tiny_lm(seed=0, max_new_tokens=6), make_tiny_lm(seed=0, max_new_tokens=6)
    mine = recipe.warm_start(a, task, seed=5, progress=False)
    by_hand = sft_warm_start(b, task, 2, 3, 1.5e-3, seed=5, threads=1, progress=False)
    assert mine["loss"].tolist() == by_hand["loss"].tolist()
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert RECIPES["pretrained"].warm_start(a, task) is None  # no warm start in the recipe: nothing happens


def test_the_warm_start_stops_at_its_time_budget():
    """max_seconds = 0: the first step already used it, so one step is taken (the steps asked for: 50)."""
    task = TextSortTask(n_numbers=2, max_value=3, n_heldout=4)
    h = sft_warm_start(make_tiny_lm(seed=0, max_new_tokens=6), task, 50, 2, seed=0, progress=False, max_seconds=0.0)
    assert len(h) == 1 and h.records[0]["step"] == 1


def test_the_command_line_flags_are_the_recipe_with_changes():
    from minirl.cli import build_parser, text_recipe

    parse = build_parser().parse_args
    base = ["train", "--task", "text_sort", "--model", "smollm2-135m", "--device", "cpu"]
    assert text_recipe(parse(base)) == RECIPES["pretrained"]
    assert text_recipe(parse(["train", "--task", "text_sort", "--model", "tiny"])) == RECIPES["tiny"]
    flags = {
        "--learning-rate": ("3e-5", "learning_rate", 3e-5),
        "--steps": ("7", "steps", 7),
        "--prompts-per-step": ("3", "prompts_per_step", 3),
        "--group-size": ("5", "group_size", 5),
        "--max-new-tokens": ("12", "max_new_tokens", 12),
        "--sft-steps": ("4", "sft_steps", 4),
        "--sft-learning-rate": ("2e-4", "sft_learning_rate", 2e-4),
        "--few-shot": ("2", "few_shot", 2),
        "--eval-prompts": ("9", "eval_prompts", 9),
        "--eval-every": ("2", "eval_every", 2),
        "--set": ("kl_coef=0.05", "kl_coef", 0.05),
        "--trainable-layers": ("all", "trainable_layers", None),
    }
    for flag, (text, setting, value) in flags.items():
        assert text_recipe(parse(base + [flag, text])) == RECIPES["pretrained"].with_(**{setting: value}), flag
    argv = base + [word for flag, (text, _, _) in flags.items() for word in (flag, text)]
    everything = RECIPES["pretrained"].with_(**{setting: value for _, setting, value in flags.values()})
    assert text_recipe(parse(argv)) == everything
    assert text_recipe(parse(base + ["--trainable-layers", "4"])).trainable_layers == 4
    for bad in ("0", "-1", "some"):
        with pytest.raises(SystemExit) as exit_info:
            parse(base + ["--trainable-layers", bad])
        assert exit_info.value.code == 2


def test_one_reasoning_recipe_per_device_the_gpu_one_written_as_changes():
    from minirl.lm.recipes import ANSWER_TOKENS, REASONING_CHANGES, REASONING_GPU_CHANGES, THINKING_TOKENS

    cpu = reasoning_recipe("pretrained")
    assert cpu == RECIPES["pretrained"].with_(**REASONING_CHANGES, max_new_tokens=THINKING_TOKENS)
    assert (cpu.lr_schedule, cpu.sft_steps, cpu.trainable_layers, cpu.kl_coef) == ("constant", 20, 10, 0.0)
    gpu = reasoning_recipe("pretrained-cuda")
    assert gpu == cpu.with_(**REASONING_GPU_CHANGES)
    assert gpu.sft_steps == cpu.sft_steps > 0  # a GPU run warm-starts too
    assert gpu.trainable_layers == cpu.trainable_layers  # not every weight: that undid the warm start
    assert reasoning_recipe("pretrained", thinking=False) == cpu.with_(max_new_tokens=ANSWER_TOKENS)
    assert reasoning_recipe("tiny") == RECIPES["tiny"].with_(max_new_tokens=THINKING_TOKENS)
    with pytest.raises(ValueError, match="kind must be one of"):
        reasoning_recipe("gpu")


def test_a_reasoning_run_takes_the_reasoning_recipe_unless_a_flag_changes_it():
    """``minirl train --task reasoning`` is notebook 10's run on the device it trains on (``reasoning_recipe``):
    on a CPU a worked warm start then GRPO at a constant rate; every flag still changes its knob."""
    from minirl.cli import build_parser, text_recipe, text_train_flags

    parse = build_parser().parse_args
    base = ["train", "--task", "reasoning", "--model", "smollm2-135m"]
    assert text_recipe(parse([*base, "--device", "cpu"])) == reasoning_recipe("pretrained")
    assert text_recipe(parse([*base, "--device", "cuda"])) == reasoning_recipe("pretrained-cuda")
    answer_only = text_recipe(parse([*base, "--device", "cpu", "--no-thinking"]))
    assert answer_only == reasoning_recipe("pretrained", thinking=False)
    changed = text_recipe(
        parse([*base, "--device", "cpu", "--sft-steps", "0", "--learning-rate", "1e-4", "--max-new-tokens", "64"])
    )
    assert (changed.sft_steps, changed.learning_rate, changed.max_new_tokens) == (0, 1e-4, 64)
    assert text_recipe(parse(["train", "--task", "reasoning", "--model", "tiny"])) == reasoning_recipe("tiny")
    # the schedule is the recipe's (TrainConfig gets it from train_config) unless --lr-schedule says otherwise
    assert "lr_schedule" not in text_train_flags(parse([*base, "--device", "cpu"]))
    assert text_train_flags(parse([*base, "--lr-schedule", "cosine"]))["lr_schedule"] == "cosine"
    task = RECIPES["tiny"].task()
    assert reasoning_recipe("pretrained").train_config(task).lr_schedule == "constant"
    assert RECIPES["pretrained"].train_config(task).lr_schedule == "cosine"


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


def _notebook_code(name: str) -> str:
    nb = json.loads((ROOT / "solutions" / f"{name}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_notebook_10_builds_every_run_from_the_reasoning_recipe():
    """Notebook 10 takes its knobs from ``reasoning_recipe`` and the benchmark's ``BUDGETS``, never its own: each
    ``train_config`` call sets only the seed, the progress bar and, in fast mode alone, no evaluation after the last
    step; each warm start its steps and seed."""
    import re

    code = _notebook_code("10_reasoning_and_reward_hacking")
    assert "RECIPE = reasoning_recipe(KIND)" in code and "BARE = reasoning_recipe(KIND, thinking=False)" in code
    assert "B = QUICK_BUDGETS if FAST else BUDGETS" in code and "quick_recipe(RECIPE)" in code
    calls = re.findall(r"train_config\(([^()]*)\)", code)
    assert len(calls) == 3  # the honest run, the hacked run and the fixed one
    for args in calls:
        keywords = dict(re.findall(r"(\w+)=([^,]+)", args))
        assert set(keywords) == {"seed", "progress", "eval_at_end"}, args
        # the loop's last evaluation is skipped in fast mode only (held_out repeats it); full mode keeps it
        assert keywords["eval_at_end"].strip() == "not FAST", args
    for literal in ("learning_rate=", "lr_schedule=", "prompts_per_step=", "group_size=", "max_seconds="):
        assert literal not in code, literal


def _reasoning_record(name: str) -> dict:
    """A reasoning record's figures; the test skips (saying which command measures it) while it does not exist,
    as RESULTS.md's block then says 'Not measured yet' (tests/test_figures.py)."""
    path = ROOT / "results" / f"{name}.json"
    if not path.exists():
        pytest.skip(f"results/{name}.json is not measured yet at this commit")
    return json.loads(path.read_text())["figures"]


def test_the_reasoning_benchmark_was_measured_with_the_recipe_and_budgets():
    """RESULTS.md's three-seed table comes from the current recipe and budgets: change either and re-measure
    (CONTRIBUTING, 'Measured figures')."""
    from minirl.bench.reasoning_rl import BUDGETS

    bench = _reasoning_record("bench_reasoning")
    assert {form: _as_now(r) for form, r in bench["recipes"].items()} == {  # a recipe per form (reasoning_rl.FORMS)
        "think": dataclasses.asdict(reasoning_recipe("pretrained")),
        "answer": dataclasses.asdict(reasoning_recipe("pretrained", thinking=False)),
    }
    assert bench["budgets"] == BUDGETS and bench["quick"] is False


def test_notebook_10s_full_record_was_measured_with_the_recipe_and_budgets():
    """Notebook 10's full-mode record (RESULTS.md's 'reasoning' block) comes from the current recipe and budgets."""
    from minirl.bench.reasoning_rl import BUDGETS

    cpu = reasoning_recipe("pretrained")
    notebook = _reasoning_record("notebook_10_full_cpu")
    assert (notebook["n_eval"], notebook["sft_steps"], notebook["bare_steps"]) == (
        cpu.eval_prompts,
        cpu.sft_steps,
        cpu.sft_steps,
    )
    assert notebook["rl_steps"] == notebook["hack_steps"] == notebook["fix_steps"] == cpu.steps
    assert notebook["control_steps"] == BUDGETS["control_steps"]
    assert (notebook["pass_prompts"], notebook["pass_samples"]) == (BUDGETS["pass_prompts"], BUDGETS["pass_samples"])
    assert notebook["kl_coef"] == cpu.kl_coef


def test_notebook_11s_full_record_was_measured_with_the_recipe_and_budgets():
    """Notebook 11's full-mode record (its banner, time notes and RESULTS.md's notebook times) comes from the current
    recipe and budgets: every arm trained the recipe's GRPO steps, best-of-N went to the budget's N."""
    from minirl.bench.self_training import ARMS, BUDGETS

    notebook = _reasoning_record("notebook_11_full_cpu")
    assert set(notebook["arms"]) == set(ARMS) - {"best_of_n", "expert_iteration_round"}  # the round arm: benchmark only
    assert {arm: a["steps"] for arm, a in notebook["arms"].items()} == dict.fromkeys(
        notebook["arms"], reasoning_recipe("pretrained").steps
    )
    assert {name: len(curve) for name, curve in notebook["bon"].items()} == dict.fromkeys(
        ("verifier", "majority", "judge"), BUDGETS["bon_samples"]
    )


def test_the_lever_runs_used_the_recipes_knobs():
    """The exploration runs in RESULTS.md's levers table trained with the CPU recipe's warm start and GRPO knobs (only
    the prompt, the seed, the warm start's problems, prompts × group and GRPO's sampling temperature varied, each
    named in its row), so the table speaks for the recipe."""
    cpu = reasoning_recipe("pretrained")
    runs = _reasoning_record("reasoning_levers")["runs"]
    assert len(runs) >= 3
    for run in runs:
        k = run["knobs"]
        assert (k["sft_steps"], k["sft_prompts"], k["sft_lr"]) == (
            cpu.sft_steps,
            cpu.sft_prompts_per_step,
            cpu.sft_learning_rate,
        )
        assert (k["lr"], k["schedule"], k["layers"], k["kl"]) == (
            cpu.learning_rate,
            cpu.lr_schedule,
            cpu.trainable_layers,
            cpu.kl_coef,
        )


def test_the_seed_0_reasoning_run_used_the_recipe_and_budgets():
    """The notebook's seed-0 GRPO run in RESULTS.md's levers table came from the current recipe and pass@k budgets."""
    from minirl.bench.reasoning_rl import BUDGETS

    seed0 = _reasoning_record("reasoning_seed0")
    assert _as_now(seed0["recipe"]) == dataclasses.asdict(reasoning_recipe("pretrained"))
    assert (seed0["pass_prompts"], seed0["pass_samples"]) == (BUDGETS["pass_prompts"], BUDGETS["pass_samples"])
    assert len(seed0["pass_before"]) == len(seed0["pass_after"]) == BUDGETS["pass_samples"]
    assert seed0["rl_steps"] == reasoning_recipe("pretrained").steps

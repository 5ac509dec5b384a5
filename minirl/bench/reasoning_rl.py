"""Notebook 10's runs over seeds: what a scratchpad, RL and a lenient verifier each change, with a spread.

The notebook runs each arm once (seed 0). This benchmark runs the same arms, from the same recipe
(``minirl.lm.recipes.reasoning_recipe``: the model's prompt, its trainable blocks, the warm start and GRPO's
knobs) and the same budgets (``BUDGETS``), for each seed it is given, on SmolLM2-135M-Instruct:

- ``thinking``: a supervised warm start on worked 3-number sums, then GRPO on 4-number sums with the strict
  verifier; pass@k for k = 1 … ``pass_samples`` before and after GRPO.
- ``control``: from the same warm start, ``control_steps`` more supervised steps on worked 3-number sums:
  what more of the same demonstrations does to 4-number sums.
- ``answer-only``: from the base model, a warm start on bare answers (as many steps and demonstrations as the
  worked one), then answer-only GRPO on 4-number sums for ``answer_steps`` steps (an ``ANSWER_TOKENS`` budget).
- ``hack``: from the worked warm start, GRPO on a lenient verifier (``hack_reward``, by default ``"substring"``:
  the answer after ``</think>`` is a substring of the right one, so an empty answer passes); its proxy reward
  and strict accuracy on held-out problems, against the thinking run's.
- ``fix``: from the worked warm start, GRPO on the fixed verifier (``fix_reward``, by default ``"answer"``: the
  answer read strictly and compared for equality, no format part).

A run takes hours on 2 CPU cores (the arms of one seed, about two), so the record is saved after each arm and
``--resume`` continues it in another sitting: the arms it holds are kept, each with the commit it ran at, the seed's
warm start is made again and must reach the stored figures, and every sitting's provenance is kept.

Every budget is a number of steps, so a busy or slow machine changes how long a run takes, not what it
measures; each record keeps the wall time of every stage beside its steps, and the machine's calibration
(``minirl.results``). Every accuracy is greedy, on the same ``eval_prompts`` held-out problems of 3 and of 4
numbers. Seed ``s`` seeds the warm starts, GRPO's draws and the pass@k samples with ``s`` and the control's
prompts with ``s + 1``, as the notebook does for seed 0.

    python -m minirl.bench.reasoning_rl --seeds 0 1 2 --save          # results/bench_reasoning.json
    python -m minirl.bench.reasoning_rl --seeds 0 1 2 --save --resume # continue it: run only the arms it lacks
    minirl bench --lm --parts reasoning --seeds 3 --save              # the same, as part 4 of ``bench --lm``

Targets (the summary checks them over seeds): thinking GRPO reaches a mean of at least 75% on held-out 4-number
sums with a standard deviation of at most 8 points, within 15 minutes of warm start and GRPO on 2 CPU cores;
thinking beats answer-only by at least 15 points; the hacked run's strict accuracy is at least 20 points below
the honest run's while its proxy reward is higher; the fixed verifier's run comes within 10 points of the honest
run's strict accuracy.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from minirl.bench import finish, part_figures
from minirl.bench.reasoning_summary import REPORT_ROWS, SUMMARY_PATHS, _report, check_targets, nested, summarize
from minirl.bench.resume import index_runs, keeper, resumed, run_missing, same_warm, side_by_side, stored_record
from minirl.lm.models import SMOLLM2_ALIAS
from minirl.lm.recipes import LMRecipe, model_kind, reasoning_recipe, sft_warm_start
from minirl.pass_at_k import sampled_correct_counts
from minirl.results import Record, git_commit, history_figures
from minirl.train import evaluate, train

__all__ = [
    "ARMS",
    "BUDGETS",
    "QUICK_BUDGETS",
    "QUICK_TOKENS",
    "REPORT_ROWS",
    "SUMMARY_PATHS",
    "Arms",
    "check_targets",
    "measure_base",
    "nested",
    "quick_recipe",
    "reasoning_part",
    "run_reasoning_benchmark",
    "run_seed",
    "summarize",
]

ARMS = ("thinking", "control", "answer-only", "hack", "fix")
BUDGETS: dict[str, Any] = {
    "control_steps": 60,  # more supervised steps on worked 3-number sums, from the warm start
    "answer_steps": 160,  # answer-only GRPO steps (an 8-token reply is far cheaper to sample than a scratchpad)
    "pass_prompts": 32,  # pass@k: the first pass_prompts held-out 4-number problems ...
    "pass_samples": 64,  # ... pass_samples replies each at T = 1: pass@k for every k up to it
    "pass_batch": 512,  # replies per sampling call (memory)
    "hack_reward": "substring",  # the lenient verifier of the hack arm (toy_envs.reasoning.REASONING_REWARDS)
    "fix_reward": "answer",  # its fix: the answer read strictly and compared for equality
}
"""The arms' budgets beyond the recipe (notebook 10 uses the same)."""

FORMS = {"think": True, "answer": False}
"""The two forms of a reply, by the short names the figures use."""

QUICK_TOKENS = 30
"""The longest reply of a quick run (``quick_recipe``)."""
QUICK_BUDGETS: dict[str, Any] = {**BUDGETS, "control_steps": 2, "answer_steps": 2, "pass_prompts": 2, "pass_samples": 2}
"""A few steps of everything (``--quick``; notebook 10's fast mode)."""


def quick_recipe(recipe: LMRecipe) -> LMRecipe:
    """``recipe`` cut to a few steps of everything: the mechanics, not the results (``--quick``, fast mode).

    Generating costs one pass of the model per new token for the whole batch, and a few replies cost far less
    than a few times one (RESULTS.md, "Language models on a CPU"), so a quick run saves generate calls rather than
    replies: one GRPO step (one sampling call), evaluated once, at its end (``eval_every=0``), with replies cut at
    ``QUICK_TOKENS`` (a reply cut inside its scratchpad scores 0)."""
    return recipe.with_(
        sft_steps=2,
        sft_prompts_per_step=2,
        steps=1,
        prompts_per_step=1,
        group_size=4,
        eval_prompts=2,
        eval_every=0,
        max_new_tokens=min(recipe.max_new_tokens, QUICK_TOKENS),
    )


class Arms:
    """The policy, the recipe of each form (thinking, answer only), the 3- and 4-number tasks of each form, and
    snapshots of the trainable weights (every arm starts from the base model or from the warm start)."""

    def __init__(self, kind: str, budgets: dict[str, Any], device: str | None = None, quick: bool = False):
        shrink = quick_recipe if quick else (lambda r: r)
        self.recipes = {thinking: shrink(reasoning_recipe(kind, thinking)) for thinking in (True, False)}
        self.budgets = budgets
        self.quick = quick
        self.policy = self.recipes[True].policy(SMOLLM2_ALIAS, device=device)
        self.trainable = [p for p in self.policy.parameters() if p.requires_grad]
        self.tasks = {
            thinking: {n: recipe.reasoning_task("sum", thinking=thinking, n_numbers=n) for n in (3, 4)}
            for thinking, recipe in self.recipes.items()
        }

    def snapshot(self) -> list[torch.Tensor]:
        return [p.detach().clone() for p in self.trainable]

    def restore(self, weights: list[torch.Tensor]) -> None:
        with torch.no_grad():
            for p, w in zip(self.trainable, weights, strict=True):
                p.copy_(w)

    def form(self, thinking: bool) -> LMRecipe:
        """The recipe of a form, with the policy's token budget set to it."""
        self.policy.max_new_tokens = self.recipes[thinking].max_new_tokens
        return self.recipes[thinking]

    def held_out(self, thinking: bool) -> dict[str, Any]:
        """Greedy accuracy, format and truncation rates on the held-out 3- and 4-number sums, in one form, and the
        greedy replies to the first three 4-number problems."""
        recipe = self.form(thinking)
        out: dict[str, Any] = {}
        for n, task in self.tasks[thinking].items():
            ev = evaluate(self.policy, task, recipe.eval_prompts, sampled=False)
            out.update({f"sum{n}": ev["greedy_exact"], f"sum{n}_format": ev["greedy_format"]})
            out[f"sum{n}_truncated"] = ev["greedy_truncated"]
        four = self.tasks[thinking][4].eval_prompts(3)
        out["examples"] = [reply[0] for reply in self.policy.greedy(four).answers]
        return out

    def warm_start(self, thinking: bool, steps: int, seed: int) -> dict[str, float]:
        """``steps`` supervised steps on worked (or bare) 3-number sums, at the recipe's size and rate."""
        recipe = self.form(thinking)
        start = time.perf_counter()
        history = sft_warm_start(
            self.policy,
            self.tasks[thinking][3],
            steps,
            recipe.sft_prompts_per_step or recipe.prompts_per_step,
            recipe.sft_learning_rate,
            seed=seed,
            threads=recipe.threads,
            progress=False,
        )
        return {"steps": len(history), "seconds": time.perf_counter() - start, "loss_last": history.last("loss", 5)}

    def grpo(self, task, thinking: bool, seed: int, steps: int | None = None, progress: bool = True):
        """GRPO on ``task`` with the form's recipe (``steps``: instead of the recipe's)."""
        recipe = self.form(thinking)
        config = recipe.train_config(task, seed=seed, steps=steps or recipe.steps, progress=progress)
        self.policy, history = train(config, self.policy)
        return history

    def pass_counts(self, seed: int) -> list[int]:
        """How many of ``pass_samples`` replies (T = 1, with a scratchpad) are right, for each of the first
        ``pass_prompts`` held-out 4-number sums."""
        self.form(True)
        task, b = self.tasks[True][4], self.budgets
        gen = torch.Generator().manual_seed(seed)
        prompts = task.eval_prompts(b["pass_prompts"])
        return sampled_correct_counts(self.policy, task, prompts, b["pass_samples"], gen, b["pass_batch"]).tolist()


def _run_figures(history) -> dict[str, Any]:
    """What a GRPO run's record keeps: its steps, time, last rewards and evaluations, and its notes."""
    return {
        **history_figures(history),
        "format_last5": history.last("format_rate", 5),
        "length_last5": history.last("response_length", 5),
        "notes": list(history.notes),
    }


def _timed(fn, *args) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def run_seed(
    seed: int,
    arms: Sequence[str] = ARMS,
    budgets: dict[str, Any] | None = None,
    device: str | None = None,
    progress: bool = True,
    quick: bool = False,
    done: dict[str, Any] | None = None,
    after_arm: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Every arm in ``arms`` for one seed, from a fresh copy of the model; the figures of each arm, each with the
    commit it ran at.

    ``done``: this seed's figures from an earlier run of the benchmark (``--resume``): the warm start must reach
    its figures again (``WARM_FIGURES``), and its thinking arm's greedy replies give the hack and fix arms the
    honest run's proxy reward. ``after_arm`` is called with the figures so far after the warm start and after each
    arm (a benchmark saves them: a stopped run keeps what it measured)."""
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        raise ValueError(f"arms: unknown {unknown}; choose from {list(ARMS)}")
    arms = [a for a in ARMS if a in arms]  # the honest (thinking) run before the verifiers' that score its replies
    b = {**(QUICK_BUDGETS if quick else BUDGETS), **(budgets or {})}
    m = Arms(model_kind(SMOLLM2_ALIAS, device), b, device, quick)
    commit = git_commit()[0]
    base = m.snapshot()
    four = m.tasks[True][4]
    thinking = m.recipes[True]
    prompts = four.eval_prompts(thinking.eval_prompts)
    out: dict[str, Any] = {"seed": seed, "prompt": m.policy.render(four.eval_prompts(1)[0])}
    out["warm"] = {**m.warm_start(True, thinking.sft_steps, seed), **m.held_out(True), "commit": commit}
    if done is not None:
        same_warm(seed, out["warm"], done["warm"])
    warm = m.snapshot()  # every arm but answer-only starts from this warm start

    def finished(arm: str, figures: dict[str, Any]) -> None:
        out[arm] = {**figures, "commit": commit}
        if after_arm is not None:
            after_arm(out)

    if after_arm is not None:
        after_arm(out)
    bar = tqdm(arms, desc=f"seed {seed}", disable=not progress)
    for arm in bar:
        bar.set_postfix_str(arm)
        if arm == "thinking":
            m.restore(warm)
            before, before_s = _timed(m.pass_counts, seed)
            h = m.grpo(four, True, seed, progress=progress)
            figures = {"run": _run_figures(h), **m.held_out(True), "replies": m.policy.greedy(prompts).answers}
            after, after_s = _timed(m.pass_counts, seed)
            finished(arm, {**figures, "pass": {"before": before, "after": after, "seconds": before_s + after_s}})
        elif arm == "control":
            m.restore(warm)
            finished(arm, {**m.warm_start(True, b["control_steps"], seed + 1), **m.held_out(True)})
        elif arm == "answer-only":
            m.restore(base)
            bare = {**m.warm_start(False, m.recipes[False].sft_steps, seed), **m.held_out(False)}
            h = m.grpo(m.tasks[False][4], False, seed, b["answer_steps"], progress)
            finished(arm, {"warm": bare, "run": _run_figures(h), **m.held_out(False)})
        else:  # hack, fix: GRPO on another verifier
            m.restore(warm)
            honest = nested(out, ("thinking", "replies")) or nested(done, ("thinking", "replies"))
            finished(arm, _verifier_arm(m, b[f"{arm}_reward"], seed, prompts, honest, progress))
    return out


def _verifier_arm(m: Arms, reward: str, seed: int, prompts, honest: list | None, progress: bool) -> dict[str, Any]:
    """GRPO on 4-number sums with the verifier ``reward`` (from the weights ``m`` holds): its run, held-out
    accuracy, the verifier's mean reward on the greedy replies to ``prompts`` (``proxy``), their kinds, and the
    same verifier's reward on the ``honest`` run's replies when there are some."""
    four = m.tasks[True][4]
    verifier = m.recipes[True].reasoning_task("sum", thinking=True, n_numbers=4, reward=reward)
    h = m.grpo(verifier, True, seed, progress=progress)
    replies = m.policy.greedy(prompts).answers
    figures = {
        "reward": reward,
        "run": _run_figures(h),
        **m.held_out(True),
        "proxy": float(verifier.rewards(prompts, replies).mean()),
        "kinds": four.answer_kinds(prompts, replies),
    }
    if honest is not None:  # the honest run's replies, scored by this verifier
        figures["honest_proxy"] = float(verifier.rewards(prompts, honest).mean())
    return figures


def measure_base(device: str | None = None, quick: bool = False) -> dict[str, float]:
    """The base model's greedy accuracy on the held-out 3- and 4-number sums, with and without a scratchpad:
    ``{"think_sum3": ..., "think_sum4": ..., "answer_sum3": ..., ...}``."""
    m = Arms(model_kind(SMOLLM2_ALIAS, device), QUICK_BUDGETS if quick else BUDGETS, device, quick)
    out = {}
    for form, thinking in FORMS.items():
        acc = m.held_out(thinking)
        out.update({f"{form}_sum{n}": acc[f"sum{n}"] for n in (3, 4)})
    return out


def _index(record: Record, figures: dict[str, Any]) -> None:
    """``index_runs`` for notebook 10's arms, summarised against the base model's figures."""
    record.seeds = index_runs(figures, ARMS, lambda runs: summarize(runs, figures["base"]))


def reasoning_part(
    record: Record,
    seeds: Sequence[int],
    arms: Sequence[str] = ARMS,
    quick: bool = False,
    save: bool = False,
    key: str | None = None,
    device: str | None = None,
    resume: dict[str, Any] | None = None,
) -> dict[str, bool]:
    """Every arm for every seed, one after the other, into ``record.figures`` (or its ``key`` entry), saved again
    after each arm when ``save`` (a stopped run keeps what it measured); prints the table and returns the
    targets.

    ``resume``: an earlier record of this part (as saved, measured with the same kind, recipes, budgets and mode):
    its runs are kept, only the arms they lack run (each from the same warm start, checked), and its provenance is
    kept in ``figures["earlier"]``: one experiment, measured in several sittings."""
    kind = model_kind(SMOLLM2_ALIAS, device)
    budgets = QUICK_BUDGETS if quick else BUDGETS
    shrink = quick_recipe if quick else (lambda r: r)
    recipes = {form: dataclasses.asdict(shrink(reasoning_recipe(kind, thinking))) for form, thinking in FORMS.items()}
    seeds, figures = part_figures(record, seeds, key, kind=kind, recipes=recipes, budgets=budgets, quick=quick)
    runs, earlier = resumed(resume, figures)
    base = resume["figures"]["base"] if resume is not None else measure_base(device, quick)
    figures.update(base=base, runs=runs)
    if earlier:
        figures["earlier"] = earlier

    keep = keeper(runs, lambda: _index(record, figures), record.save if save else None, budgets=budgets)
    run_missing(
        seeds,
        arms,
        runs,
        lambda seed, todo, done: run_seed(seed, todo, budgets, device, not quick, quick, done=done, after_arm=keep),
    )
    _index(record, figures)
    _report(runs, figures["summary"])
    return check_targets(figures["summary"])


def run_reasoning_benchmark(
    seeds: Sequence[int] = (0, 1, 2),
    arms: Sequence[str] = ARMS,
    quick: bool = False,
    save: str | None = None,
    out: str | None = None,
    device: str | None = None,
    resume: bool = False,
) -> int:
    """``reasoning_part`` on its own record (``save``: its results name; ``resume``: continue the record saved
    under that name, if there is one), then the targets (``bench.finish``)."""
    seeds = list(seeds)
    name = save or "bench_reasoning"
    stored = stored_record(name, resume, save)
    record = Record(name, seeds=seeds)
    targets = reasoning_part(record, seeds, arms, quick, save is not None, device=device, resume=stored)
    return finish(record, targets, save, quick, out)


def combine_saved(names: Sequence[str], save: str) -> int:
    """The records saved under ``names`` (one process a seed, run side by side: ``scripts/gpu_check.sh``) as one
    record saved under ``save`` (``resume.side_by_side``), its summary and targets made again over every seed;
    prints its table and the targets, and returns 0 when every target passed, else 1."""
    import json

    from minirl.results import results_path
    from minirl.utils import atomic_write

    records = [json.loads(results_path(name).read_text()) for name in names]
    bases = {json.dumps(r["figures"]["base"], sort_keys=True) for r in records}
    if len(bases) > 1:
        raise ValueError(f"names: the records measured different base models ({sorted(bases)}): not one experiment")
    data = side_by_side(records)
    f = data["figures"]
    data["seeds"] = index_runs(f, ARMS, lambda runs: summarize(runs, f["base"]))
    f["targets"] = check_targets(f["summary"])
    data["name"] = save
    data["notes"] = (
        f"Combined from {', '.join(names)} (run side by side, one process a seed) by "
        f"`python -m minirl.bench.reasoning_rl --combine {' '.join(names)} --save {save}`."
    )
    path = results_path(save)
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(data, indent=1) + "\n"))
    print(f"results: saved {path.name} (seeds {f['seeds']})")
    _report(f["runs"], f["summary"])
    for name, ok in f["targets"].items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    return 0 if all(f["targets"].values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Notebook 10's runs over seeds (minirl.bench.reasoning_rl).")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="the seeds to run (default 0 1 2)")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS, help="the arms to run (default all)")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything (a smoke test)")
    parser.add_argument("--save", nargs="?", const="bench_reasoning", default=None, metavar="NAME")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the record saved under --save's name: keep its arms, run only those it lacks",
    )
    parser.add_argument(
        "--combine",
        nargs="+",
        metavar="NAME",
        help="run nothing: save the records of these names (other seeds, run side by side) as one, under --save",
    )
    args = parser.parse_args(argv)
    if args.combine:
        if args.save is None:
            parser.error("--combine: give --save too (the name of the combined record)")
        return combine_saved(args.combine, args.save)
    return run_reasoning_benchmark(args.seeds, args.arms, args.quick, args.save, resume=args.resume)


if __name__ == "__main__":
    raise SystemExit(main())

"""Notebook 11's comparison: what RL adds beyond imitation, at a matched budget, over seeds.

From notebook 10's worked warm start (SmolLM2-135M-Instruct, 20 supervised steps on worked 3-number sums), each arm
trains on 4-number sums for the same number of gradient steps (the recipe's GRPO steps); the arms that sample draw
the same replies per step (the recipe's prompts × group), and every accuracy is greedy on the same held-out problems:

- ``best_of_n``: no training. n replies to each of the first ``bon_prompts`` held-out problems at T = 1, and one
  chosen of N = 1 … n by the verifier (pass@N), by a majority vote over the final answers, and by the judge
  (``minirl.lm.judge``: SmolLM2 itself asked "is this right?"); and how often the judge agrees with the verifier.
- ``imitate``: supervised steps on the generator's worked 4-number solutions (demonstrations of the target
  length, one per prompt, ``sft_prompts_per_step`` a step).
- ``imitate_noisy``: the same, with ``noise`` of the demonstrations carrying a slip in their last addition (the
  total, and so the answer, off by 1 to 3): a demonstrator that is wrong that often.
- ``expert_iteration``: the ``expert_iteration`` preset: each step samples the group, keeps the replies the
  verifier accepts and imitates them (rejection sampling, one round per step), with the recipe's KL term to the
  warm start (the CPU recipe has none).
- ``expert_iteration_round``: the same, with the KL's reference taken from the previous round (refreshed every
  ``round`` steps) instead of the warm start; where the recipe has no KL term this arm adds one (β = 0.02), or
  the reference would change nothing.
- ``online_dpo``: the ``online_dpo`` preset: the best and worst reply of each group as a DPO pair, the reference
  from the last round (every 5 steps).
- ``grpo``: GRPO with the recipe (notebook 10's thinking arm).
- ``grpo_judge``: GRPO with the judge's P(yes) as the reward instead of the verifier's.

    python -m minirl.bench.self_training --seeds 0 1 2 --save       # results/bench_self_training.json
    python -m minirl.bench.self_training --seeds 0 1 2 --save --resume  # continue it: run only the arms it lacks
    minirl bench --lm --parts self_training --seeds 3 --save        # the same, as a part of ``bench --lm``

Targets (the issue's, on 2 CPU cores): each arm within 10 minutes, a seed's arms within 30 (the whole comparison of
3 seeds within 90).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from minirl.bench import finish, part_figures, spread
from minirl.bench.reasoning_rl import Arms, _run_figures, quick_recipe
from minirl.bench.resume import index_runs, keeper, resumed, run_missing, same_warm, stored_record
from minirl.best_of_n import best_of_n_by_score, majority_at_k, majority_vote
from minirl.lm.judge import Judge, JudgedTask, agreement
from minirl.lm.models import SMOLLM2_ALIAS, load_policy
from minirl.lm.recipes import model_kind, reasoning_recipe
from minirl.pass_at_k import pass_at_k
from minirl.results import Record, git_commit
from minirl.train import train
from minirl.utils import device_generator

__all__ = [
    "ARMS",
    "BUDGETS",
    "QUICK_BUDGETS",
    "SelfTrainingArms",
    "SlippedDemonstrations",
    "best_of_n_curves",
    "run_seed",
    "sample_replies",
    "self_training_part",
    "slipped_target",
    "summarize",
]

ARMS = (
    "best_of_n",
    "imitate",
    "imitate_noisy",
    "expert_iteration",
    "expert_iteration_round",
    "online_dpo",
    "grpo",
    "grpo_judge",
)
BUDGETS: dict[str, Any] = {
    "bon_prompts": 32,  # best-of-N: the first bon_prompts held-out 4-number sums ...
    "bon_samples": 64,  # ... bon_samples replies each at T = 1: every N up to it
    "bon_batch": 512,  # replies per sampling call (memory)
    "vote_draws": 256,  # random N-subsets per problem for the majority vote's estimate
    "noise": 0.3,  # imitate_noisy: the share of demonstrations with a slip
    "round": 5,  # expert_iteration_round: steps between refreshes of the KL's reference
}
"""The budgets beyond the recipe (notebook 11 uses the same)."""
QUICK_BUDGETS: dict[str, Any] = {**BUDGETS, "bon_prompts": 2, "bon_samples": 4, "vote_draws": 16}
"""A few of everything (``--quick``; notebook 11's fast mode)."""


def slipped_target(task: Any, numbers: Sequence[int], generator: torch.Generator) -> str:
    """A worked solution with a slip in its last addition: the last total, and so the answer, off by 1 to 3 (never
    below 0), e.g. ``"<think>5 + 0 = 5. 5 + 1 = 6. 6 + 4 = 12.</think> 12"`` for 5 + 0 + 1 + 4."""
    pad, right = task.scratchpad(numbers), task.solution(numbers)[0]
    offsets = [d for d in (-3, -2, -1, 1, 2, 3) if right + d >= 0]
    wrong = right + offsets[int(torch.randint(len(offsets), (1,), generator=generator))]
    head, _, last = pad.rstrip(".").rpartition(" = ")
    return f"<think>{head} = {wrong}.</think> {wrong}" if last == str(right) else f"<think>{pad}</think> {wrong}"


@dataclasses.dataclass
class SlippedDemonstrations:
    """``task``'s training prompts, each demonstration (``target``) slipped (``slipped_target``) with probability
    ``rate``, drawn from the same generator: what ``sft_warm_start`` imitates for ``imitate_noisy``."""

    task: Any
    rate: float

    def sample_prompts(self, n: int, generator: torch.Generator) -> list[Any]:
        prompts = self.task.sample_prompts(n, generator)
        slips = torch.rand(n, generator=generator) < self.rate
        return [
            dataclasses.replace(p, target=slipped_target(self.task, p.numbers, generator)) if slip else p
            for p, slip in zip(prompts, slips.tolist())
        ]


def sample_replies(
    policy, prompts: Sequence[Any], n: int, generator: torch.Generator, max_batch: int
) -> list[list[str]]:
    """``n`` replies at T = 1 to each prompt (whole prompts per sampling call, at most ``max_batch`` replies)."""
    per_call = max(1, max_batch // n)
    device_gen = device_generator(generator, policy.device)
    out: list[list[str]] = []
    for start in range(0, len(prompts), per_call):
        out += policy.sample(list(prompts[start : start + per_call]), n, temperature=1.0, generator=device_gen).answers
    return out


def best_of_n_curves(
    task: Any,
    prompts: Sequence[Any],
    replies: list[list[str]],
    scores: torch.Tensor,
    generator: torch.Generator,
    draws: int,
    vote: Callable = majority_vote,
) -> dict[str, list[float]]:
    """Accuracy against N = 1 … n of the three selectors: ``verifier`` (pass@N), ``majority`` (``vote`` over the
    final answers) and ``judge`` (the highest-scored reply), each averaged over the problems."""
    correct = task.is_correct(prompts, replies)  # [problem, sample]
    n = correct.shape[1]
    answers = [[None if (a := task.parse_answer(r)) is None else a[0] for r in group] for group in replies]
    right = [task.solution(p.numbers)[0] for p in prompts]
    counts = correct.sum(dim=1)
    return {
        "verifier": [float(pass_at_k(n, counts, k).mean()) for k in range(1, n + 1)],
        "majority": [float(majority_at_k(answers, right, k, generator, draws, vote).mean()) for k in range(1, n + 1)],
        "judge": [float(best_of_n_by_score(scores, correct, k).mean()) for k in range(1, n + 1)],
    }


class SelfTrainingArms(Arms):
    """``Arms`` with the judge (a second, frozen copy of the base model, loaded when first needed)."""

    def __init__(self, kind: str, budgets: dict[str, Any], device: str | None = None, quick: bool = False):
        super().__init__(kind, budgets, device, quick)
        self._judge: Judge | None = None
        self.device = device

    def use_judge(self, judge: Judge) -> None:
        """Pay ``grpo_judge`` with this judge (notebook 11: the one built on the learner's ``yes_probability``)."""
        self._judge = judge

    @property
    def judge(self) -> Judge:
        """The judge: a frozen copy of the base model, loaded when first needed (or the one ``use_judge`` gave)."""
        if self._judge is None:
            self._judge = Judge(load_policy(SMOLLM2_ALIAS, device=self.device))
        return self._judge

    def held_out(self, thinking: bool = True) -> dict[str, Any]:
        """``Arms.held_out`` in one greedy batch (3- and 4-number problems together: one generate call, not three):
        accuracy, format and truncation rates on each length, and the greedy replies to the first three 4-number
        problems."""
        recipe = self.form(thinking)
        tasks = self.tasks[thinking]
        prompts = {n: task.eval_prompts(recipe.eval_prompts) for n, task in tasks.items()}
        rollout = self.policy.greedy(prompts[3] + prompts[4])
        rows = {3: slice(0, len(prompts[3])), 4: slice(len(prompts[3]), None)}
        out: dict[str, Any] = {}
        for n, task in tasks.items():
            answers = rollout.answers[rows[n]]
            out[f"sum{n}"] = float(task.is_correct(prompts[n], answers).float().mean())
            out[f"sum{n}_format"] = float(task.format_ok(prompts[n], answers).float().mean())
            cut = rollout.truncated  # [batch, trial]: a language model's rollout always says which replies were cut
            out[f"sum{n}_truncated"] = float(cut[rows[n]].float().mean()) if cut is not None else 0.0
        out["examples"] = [reply[0] for reply in rollout.answers[rows[4]][:3]]
        return out

    def four(self) -> Any:
        return self.tasks[True][4]

    def best_of_n(self, seed: int) -> dict[str, Any]:
        b, task = self.budgets, self.four()
        self.form(True)
        prompts = task.eval_prompts(b["bon_prompts"])
        replies = sample_replies(
            self.policy, prompts, b["bon_samples"], torch.Generator().manual_seed(seed), b["bon_batch"]
        )
        scores = self.judge.scores(prompts, replies)
        correct = task.is_correct(prompts, replies)
        curves = best_of_n_curves(task, prompts, replies, scores, torch.Generator().manual_seed(seed), b["vote_draws"])
        kinds = task.answer_kinds(prompts, replies)
        return {
            "curves": curves,
            "judge": agreement(scores, correct),
            "kinds": kinds,
            "judge_mean_right": float(scores[correct].mean()) if correct.any() else None,
            "judge_mean_wrong": float(scores[~correct].mean()) if (~correct).any() else None,
        }

    def imitate(self, noisy: bool, seed: int) -> dict[str, Any]:
        """Supervised steps on worked 4-number solutions (``SlippedDemonstrations`` when ``noisy``): the recipe's
        warm start, as many steps as the sampling arms take."""
        recipe, four = self.form(True), self.four()
        task = SlippedDemonstrations(four, self.budgets["noise"]) if noisy else four
        start = time.perf_counter()
        h = recipe.with_(sft_steps=recipe.steps).warm_start(self.policy, task, seed=seed, progress=False)
        assert h is not None  # sft_steps = steps >= 1
        return {"steps": len(h), "seconds": time.perf_counter() - start, "loss_last": h.last("loss", 5)}

    def rl(self, arm: str, seed: int, progress: bool) -> Any:
        """``arm``'s training run from the current weights -> its ``History``. A quick run (fast mode) logs no
        evaluation: every caller measures the trained policy with ``held_out`` next, on the same 4-number prompts,
        so the loop's evaluation at the end would be a second generate call for the same figure."""
        recipe, four = self.form(True), self.four()
        algo = {
            "expert_iteration": recipe.algorithm("expert_iteration"),
            "expert_iteration_round": recipe.algorithm("expert_iteration", ref_refresh_every=self.budgets["round"]),
            "online_dpo": recipe.algorithm("online_dpo"),
        }.get(arm, recipe.algorithm("grpo"))
        task = JudgedTask.using(four, self.judge) if arm == "grpo_judge" else four
        if arm == "expert_iteration_round" and not algo.kl_coef:  # a reference needs a KL term to matter
            algo = algo.with_(kl_coef=0.02)
        config = recipe.train_config(task, algo=algo.with_(name=arm), seed=seed, progress=progress)
        if self.quick:  # the caller's held_out measures the trained policy: a quick run skips the loop's own last eval
            config = dataclasses.replace(config, eval_at_end=False)
        self.policy, history = train(config, self.policy)
        return history


def run_seed(
    seed: int,
    arms: Sequence[str] = ARMS,
    budgets: dict[str, Any] | None = None,
    device: str | None = None,
    progress: bool = True,
    quick: bool = False,
    after_arm: Callable[[dict[str, Any]], None] | None = None,
    done: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The warm start, then every arm in ``arms`` from it, for one seed; each arm's figures, each with the commit it
    ran at. ``after_arm`` is called with the figures so far after the warm start and after each arm (a benchmark
    saves them: a stopped run keeps what it measured). ``done``: this seed's figures from an earlier sitting
    (``--resume``): the warm start must reach its figures again (``minirl.bench.resume.same_warm``)."""
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        raise ValueError(f"arms: unknown {unknown}; choose from {list(ARMS)}")
    b = {**(QUICK_BUDGETS if quick else BUDGETS), **(budgets or {})}
    m = SelfTrainingArms(model_kind(SMOLLM2_ALIAS, device), b, device, quick)
    commit = git_commit()[0]
    out: dict[str, Any] = {"seed": seed}
    out["warm"] = {**m.warm_start(True, m.recipes[True].sft_steps, seed), **m.held_out(True), "commit": commit}
    if done is not None:
        same_warm(seed, out["warm"], done["warm"])
    warm = m.snapshot()
    if after_arm is not None:
        after_arm(out)
    for arm in tqdm(arms, desc=f"seed {seed}", disable=not progress):
        m.restore(warm)
        start = time.perf_counter()
        if arm == "best_of_n":
            out[arm] = m.best_of_n(seed)
        elif arm.startswith("imitate"):
            out[arm] = {**m.imitate(arm == "imitate_noisy", seed), **m.held_out(True)}
        else:
            h = m.rl(arm, seed, progress)
            out[arm] = {"run": {**_run_figures(h), "exact_last5": h.last("exact_match", 5)}, **m.held_out(True)}
            if arm == "grpo_judge":
                out[arm]["judge_reward_last5"] = h.last("reward", 5)
        out[arm].update(arm_seconds=time.perf_counter() - start, commit=commit)
        if after_arm is not None:
            after_arm(out)
    return out


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean, std, min and max over seeds of the warm start's and each arm's held-out accuracy on 4- and 3-number sums
    and its seconds, and of the best-of-N curves."""
    out: dict[str, Any] = {}
    for arm in ("warm", *ARMS):
        if all(arm in r for r in runs):
            for key in ("sum4", "sum3", "arm_seconds"):
                if all(key in r[arm] for r in runs):
                    out[f"{arm}_{key}"] = spread([r[arm][key] for r in runs])
    if all("best_of_n" in r for r in runs):
        for selector in ("verifier", "majority", "judge"):
            curves = [r["best_of_n"]["curves"][selector] for r in runs]
            out[f"bon_{selector}"] = [spread(values) for values in zip(*curves)]
        out["judge_agreement"] = spread([r["best_of_n"]["judge"]["agreement"] for r in runs])
    seconds = [sum(r[a]["arm_seconds"] for a in ARMS if a in r) + r.get("warm", {}).get("seconds", 0.0) for r in runs]
    out["seed_minutes"] = spread([s / 60 for s in seconds])
    return out


def check_targets(runs: list[dict[str, Any]]) -> dict[str, bool]:
    """Each arm within 10 minutes; a seed's warm start and arms within 30 (3 seeds within 90)."""
    arm_seconds = [r[a]["arm_seconds"] for r in runs for a in ARMS if a in r]
    seed_seconds = [sum(r[a]["arm_seconds"] for a in ARMS if a in r) + r["warm"]["seconds"] for r in runs]
    return {
        "each arm within 10 min": max(arm_seconds, default=0.0) <= 600,
        "each seed's arms within 30 min (3 seeds within 90)": max(seed_seconds, default=0.0) <= 1800,
    }


def _report(runs: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    print(
        "\nLearning from your own samples (notebook 11), 4-number sums, greedy on held-out problems, "
        f"{len(runs)} seed(s)"
    )
    for key, value in summary.items():
        if isinstance(value, dict) and key.endswith("_sum4"):
            print(f"  {key[:-5]:24} {value['mean']:.1%} ± {value['std']:.1%} ({value['min']:.0%}–{value['max']:.0%})")
    if "judge_agreement" in summary:
        print(
            f"  judge agrees with the verifier on {summary['judge_agreement']['mean']:.1%} of the warm start's replies"
        )


def self_training_part(
    record: Record,
    seeds: Sequence[int],
    arms: Sequence[str] = ARMS,
    quick: bool = False,
    save: bool = False,
    key: str | None = None,
    device: str | None = None,
    resume: dict[str, Any] | None = None,
) -> dict[str, bool]:
    """Every arm for every seed into ``record.figures`` (or its ``key`` entry), saved after each arm when ``save``;
    prints the table and returns the targets.

    ``resume``: an earlier record of this part (as saved, measured with the same kind, recipe, budgets and mode): its
    runs are kept, only the arms they lack run (each from the same warm start, checked), and its provenance is kept
    in ``figures["earlier"]`` (``minirl.bench.resume``)."""
    kind = model_kind(SMOLLM2_ALIAS, device)
    budgets = QUICK_BUDGETS if quick else BUDGETS
    recipe = reasoning_recipe(kind)
    recipe = quick_recipe(recipe) if quick else recipe
    settings = {"kind": kind, "recipe": dataclasses.asdict(recipe), "budgets": budgets, "quick": quick}
    seeds, figures = part_figures(record, seeds, key, **settings)
    runs, earlier = resumed(resume, figures)
    figures["runs"] = runs
    if earlier:
        figures["earlier"] = earlier

    keep = keeper(runs, lambda: _index(record, figures), record.save if save else None)
    run_missing(
        seeds,
        arms,
        runs,
        lambda seed, todo, done: run_seed(
            seed, todo, budgets, device, progress=not quick, quick=quick, after_arm=keep, done=done
        ),
    )
    _index(record, figures)
    _report(runs, figures["summary"])
    return check_targets(runs)


def _index(record: Record, figures: dict[str, Any]) -> None:
    """``index_runs`` for this comparison's arms."""
    record.seeds = index_runs(figures, ARMS, summarize)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Notebook 11's comparison over seeds (minirl.bench.self_training).")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="the seeds to run (default 0 1 2)")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS, help="the arms to run (default all)")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything (a smoke test)")
    parser.add_argument("--save", nargs="?", const="bench_self_training", default=None, metavar="NAME")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the record saved under --save's name: keep its arms, run only those it lacks",
    )
    args = parser.parse_args(argv)
    name = args.save or "bench_self_training"
    stored = stored_record(name, args.resume, args.save)
    record = Record(name, seeds=args.seeds)
    targets = self_training_part(record, args.seeds, args.arms, args.quick, args.save is not None, resume=stored)
    return finish(record, targets, args.save, args.quick)


if __name__ == "__main__":
    raise SystemExit(main())

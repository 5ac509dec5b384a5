"""Reinforcement learning on the maze: a multi-step MDP with one reward at the end.

The maze (``toy_envs.maze``) is a Markov decision process:

    state   s_t = (cell_t, k_t)         the agent's cell and the steps left, k_0 = T = max_steps
    action  a_t ∈ {right, left, up, down}, only the permitted moves (π gives the others probability 0)
    reward  r_t = 10 if a_t enters the goal G (the episode ends there), else 0
    return  R(τ) = Σ_t γ^t r_t          for a trajectory τ = (s_0, a_0, r_0, s_1, ...)

We want θ maximising J(θ) = E_{τ∼π_θ}[R(τ)].  The policy-gradient theorem says

    ∇_θ J = E_{τ∼π_θ}[ Σ_t ∇_θ log π_θ(a_t | s_t) · Ψ_t ]

and the three methods here differ only in Ψ_t, exactly as the rungs of the sorting ladder do:

1. REINFORCE with reward-to-go:  Ψ_t = G_t = Σ_{t' ≥ t} γ^{t'−t} r_{t'}.
   An action only earns credit for what comes after it.  Because the reward comes only at the
   end, G_t = γ^{(end−t)} · 10 on a successful episode and 0 on a failed one: failures carry no
   gradient at all, and a uniform policy succeeds in only 1 episode out of 81.

2. REINFORCE with a baseline:  Ψ_t = G_t − b_t.
   Any b_t that does not depend on a_t leaves the gradient unbiased, since
   E_a[∇ log π(a|s) · b] = b · ∇ Σ_a π(a|s) = b · ∇1 = 0; a good one lowers the variance.  Here
   b_t is the mean reward-to-go of the *other* episodes of the batch at the same time step t
   (the same steps left): a leave-one-out mean, so b_t is independent of episode i's own actions
   and the estimate stays exactly unbiased.  Failures now push their actions *down*.
   (In this maze every successful episode follows a shortest path, so plain REINFORCE already
   gets a clean signal and the baseline gains little; it matters when successes are noisy.)

3. PPO with a learned value model and GAE(γ, λ): the policy + value pair of the classic recipe.
   A value model V_φ(s) ≈ E[G_t | s_t = s] is the natural state-dependent baseline.  The TD
   residual δ_t is a one-step estimate of the advantage; GAE averages the multi-step ones:

       δ_t = r_t + γ (1 − d_t) V(s_{t+1}) − V(s_t)              d_t = 1 at the step reaching G
       A_t = δ_t + γ λ (1 − d_t) A_{t+1} = Σ_l (γλ)^l δ_{t+l}   λ = 0: TD, λ = 1: G_t − V(s_t)

   π_old (the sampling policy) stays fixed while we take ``ppo_epochs`` gradient steps on

       L_π = −mean_t min(ρ_t A_t, clip(ρ_t, 1 − ε, 1 + ε) A_t),   ρ_t = π_θ(a_t|s_t) / π_old(a_t|s_t)
       L_V = mean_t ½ (V_φ(s_t) − Ĝ_t)²,                          Ĝ_t = A_t + V_old(s_t)

Everything uses the *same* ``policy_loss`` as the sorting code: an episode is a "response",
a move is a "token", so log-probs ``[episode, time]`` become ``[episode, 1, time]`` (a trial
axis of size 1) and the mask marks the real moves.  REINFORCE is ``policy_loss`` with
``old_log_probs=None`` (ratio ≡ 1) and no clipping.  The loss is aggregated with
``"constant"``: L = −Σ_{i,t} m_it A_it log π / (N · T), i.e. the textbook Monte Carlo estimate
(1/N) Σ_i Σ_t A_it ∇ log π divided by the constant T, which Adam's step does not notice.

Both models are tables, as small as the problem (``minirl.maze_policy``: ``MazePolicy`` holds one row of 4
logits per cell, ``ValueModel`` one value per (steps left, cell)), so ``expected_returns(maze,
policy.probs())`` gives the exact expected return of the learned policy at every step.

Shapes: every per-step tensor of an ``EpisodeBatch`` is ``[episode, time]`` with time = max_steps.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from minirl.advantages import compute_gae, discounted_returns
from minirl.history import History
from minirl.hooks import RunHooks, TrainState
from minirl.losses import policy_loss
from minirl.maze_policy import (
    EpisodeBatch,
    MazePolicy,
    ValueModel,
    exact_return,
    greedy_success,
    rollout,
)
from minirl.utils import plain_json, torch_threads
from toy_envs.maze import Maze

MAZE_CLASS = f"{Maze.__module__}:{Maze.__qualname__}"
"""A maze run's task as ``config.json`` names it."""

__all__ = [
    "MAZE_ALGORITHMS",
    "MAZE_CLASS",
    "MazeTrainConfig",
    "episodes_to_solve",
    "leave_one_out_baseline",
    "maze_advantages",
    "surrogate_loss",
    "train_maze",
    "value_loss",
]

MAZE_ALGORITHMS = ("reinforce", "reinforce_baseline", "ppo")


# ----------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------


@dataclass
class MazeTrainConfig:
    """Everything one run of ``train_maze`` needs.

    Attributes:
        method: ``"reinforce"``, ``"reinforce_baseline"`` or ``"ppo"`` (see the module docstring).
        steps: number of outer steps, each on a fresh batch of episodes.
        episodes_per_step: N, the episodes sampled per step.
        learning_rate: Adam step size of the policy table.
        value_learning_rate: Adam step size of the value table (ppo only; its own optimiser).
        gamma: discount γ in [0, 1] of the reward-to-go and of GAE.
        lam: GAE's λ in [0, 1] (ppo only).
        clip_eps: PPO's clip ε > 0 (ppo only; REINFORCE never clips).
        ppo_epochs: gradient steps of policy and value on each batch (ppo only; π_old fixed).
        normalize_advantages: ppo only: A ← (A − mean) / (std + 1e-8) over the real moves of the batch.
            Off by default: Adam already rescales each logit's step, and here normalising slowed
            learning (it turns the many all-zero-advantage moves of early, goal-less batches into
            noise of the same size as the rare successes).
        seed: seeds every random draw (bit-identical reruns).
        layout: the maze layout (None = ``DEFAULT_LAYOUT``).
        max_steps: the maze's step budget T.
        eval_every: log a greedy evaluation every this many steps (0 = only at the end).
        progress: show a tqdm progress bar.
    """

    method: str = "ppo"
    steps: int = 100
    episodes_per_step: int = 32
    learning_rate: float = 0.2
    value_learning_rate: float = 0.3
    gamma: float = 1.0
    lam: float = 0.95
    clip_eps: float = 0.2
    ppo_epochs: int = 4
    normalize_advantages: bool = False
    seed: int = 0
    layout: Sequence[str] | None = None
    max_steps: int = 6
    eval_every: int = 5
    progress: bool = True

    def __post_init__(self) -> None:
        if self.method not in MAZE_ALGORITHMS:
            raise ValueError(f"method must be one of {MAZE_ALGORITHMS}; got {self.method!r}")
        for name, low in (
            ("steps", 1),
            ("episodes_per_step", 1),
            ("ppo_epochs", 1),
            ("max_steps", 1),
            ("eval_every", 0),
            ("seed", 0),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an int >= {low}; got {value!r}")
        for name in ("learning_rate", "value_learning_rate", "clip_eps"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
        for name in ("gamma", "lam"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1]; got {value!r}")
        if self.method == "reinforce_baseline" and self.episodes_per_step < 2:
            raise ValueError(
                "episodes_per_step must be >= 2 for 'reinforce_baseline' (the baseline of an "
                f"episode is the mean of the others); got {self.episodes_per_step}"
            )

    def make_maze(self) -> Maze:
        """The maze this config trains on."""
        return Maze(None if self.layout is None else list(self.layout), max_steps=self.max_steps)

    def describe(self) -> dict:
        """Every knob, as a run folder's ``config.json`` keeps it: the fields, the method as the preset, the maze
        as the task."""
        knobs = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        maze = {"layout": None if self.layout is None else list(self.layout), "max_steps": self.max_steps}
        return {**plain_json(knobs), "preset": self.method, "task": {"class": MAZE_CLASS, "args": maze}}

    def run_training(self, run: RunHooks | None = None) -> History:
        """Train this run (``train_maze``) and return its History: ``minirl compare`` trains any config so."""
        return train_maze(self, run=run)[2]


def leave_one_out_baseline(returns_to_go: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """b_it = mean of G_jt over the *other* episodes j ≠ i that are still playing at step t.

    returns_to_go, mask ``[episode, time]`` -> ``[episode, time]`` (0 where no other episode plays).
    """
    total = (returns_to_go * mask).sum(dim=0, keepdim=True)
    count = mask.sum(dim=0, keepdim=True)
    others = (count - mask).clamp(min=1.0)
    return (total - returns_to_go * mask) / others


def maze_advantages(
    batch: EpisodeBatch, method: str, gamma: float = 1.0, lam: float = 0.95, value_model: ValueModel | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Ψ_t for ``method``: returns (advantages, value targets or None), both ``[episode, time]``, 0 on padding.

    - ``"reinforce"``:          A_t = G_t (reward-to-go, ``discounted_returns``)
    - ``"reinforce_baseline"``: A_t = G_t − b_t (``leave_one_out_baseline``)
    - ``"ppo"``:                A_t = GAE(γ, λ) with V_old = ``value_model`` (``compute_gae``); the
      next value V_old(s_{t+1}, k_t − 1) is 0 once the budget is spent, and ``compute_gae`` drops
      it after the goal.  Value targets Ĝ_t = A_t + V_old(s_t).
    """
    if method not in MAZE_ALGORITHMS:
        raise ValueError(f"method must be one of {MAZE_ALGORITHMS}; got {method!r}")
    if method != "ppo":
        returns_to_go = discounted_returns(batch.rewards, batch.dones, gamma)  # G_t
        if method == "reinforce_baseline":
            returns_to_go = returns_to_go - leave_one_out_baseline(returns_to_go, batch.mask)
        return returns_to_go * batch.mask, None
    if value_model is None:
        raise ValueError("method 'ppo' needs a value_model")
    with torch.no_grad():
        values = value_model(batch.cells, batch.steps_left)  # V_old(s_t)
        next_values = value_model(batch.next_cells, batch.steps_left - 1)  # V_old(s_{t+1})
    adv = compute_gae(batch.rewards, values, next_values, batch.dones, gamma, lam) * batch.mask
    return adv, (adv + values) * batch.mask


def _normalize(adv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(A − mean) / (std + 1e-8) over the real moves (mask = 1); padding stays 0."""
    n = mask.sum().clamp(min=1.0)
    mean = (adv * mask).sum() / n
    std = (((adv - mean) * mask) ** 2 / n).sum().sqrt()
    return (adv - mean) / (std + 1e-8) * mask


def surrogate_loss(
    policy: MazePolicy, batch: EpisodeBatch, advantages: torch.Tensor, clip_eps: float | None = None
) -> tuple[torch.Tensor, dict[str, float]]:
    """``policy_loss`` on episodes: log-probs, advantages and mask ``[episode, time]`` are viewed as
    ``[episode, 1, time]`` (one "response" per episode).

    ``clip_eps=None``: REINFORCE, L = −Σ_{i,t} m_it A_it log π_θ(a_it|s_it) / (N·T) (ratio ≡ 1).
    ``clip_eps=ε``: PPO's clipped surrogate with π_old = the policy that sampled ``batch``.
    """
    log_probs = policy.log_prob(batch.cells, batch.actions).unsqueeze(1)
    old_log_probs = None if clip_eps is None else batch.log_probs.unsqueeze(1)
    return policy_loss(
        log_probs,
        old_log_probs,
        advantages.unsqueeze(1),
        batch.mask.unsqueeze(1),
        clip_eps_low=clip_eps,
        aggregation="constant",
    )


def value_loss(value_model: ValueModel, batch: EpisodeBatch, targets: torch.Tensor) -> torch.Tensor:
    """L_V = mean over real moves of ½ (V_φ(s_t, k_t) − Ĝ_t)², targets Ĝ ``[episode, time]``."""
    error = value_model(batch.cells, batch.steps_left) - targets
    return 0.5 * (error**2 * batch.mask).sum() / batch.mask.sum().clamp(min=1.0)


def _gradient_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def train_maze(
    config: MazeTrainConfig, *, run: RunHooks | None = None
) -> tuple[MazePolicy, ValueModel | None, History]:
    """Train a ``MazePolicy`` with ``config.method``; returns (policy, value model or None, History).

    ``run``: a ``minirl.runs.RunFolder`` to keep the run in (config, metrics as they come, checkpoints, the
    policy table, the curves) and to resume from, as ``minirl.train.train`` does; None keeps nothing.

    Each step: sample N episodes with π_old = π_θ (``rollout``), compute advantages
    ``[episode, time]`` (G_t, G_t − b_t, or GAE), then update with ``policy_loss``.

    History records per step: ``step``, ``episodes`` (cumulative), ``reward`` (mean episode return),
    ``success_rate`` (fraction of the batch reaching G), ``entropy`` (mean H(π_θ(·|s_t)) over the
    batch's real moves, nats, after the update), ``loss`` (policy loss of the last gradient step),
    ``value_loss`` (0 without a value model), ``clip_frac`` (fraction of real moves clipped, 0 for
    REINFORCE), ``exact_return`` (J of π_θ after the update, by dynamic programming) and
    ``wall_time``.  Evaluations (every ``eval_every`` steps and at the end): ``step``,
    ``episodes``, ``greedy_success`` and ``exact_return``.
    """
    with torch_threads(1):
        return _train(config, run or RunHooks())


def _train(cfg: MazeTrainConfig, run: RunHooks) -> tuple[MazePolicy, ValueModel | None, History]:
    maze = cfg.make_maze()
    generator = torch.Generator().manual_seed(cfg.seed)
    policy = MazePolicy(maze)  # zero logits: the initialisation draws no random numbers
    value_model = ValueModel(maze) if cfg.method == "ppo" else None
    policy_opt = torch.optim.Adam(policy.parameters(), lr=cfg.learning_rate)
    value_opt = None
    if value_model is not None:
        value_opt = torch.optim.Adam(value_model.parameters(), lr=cfg.value_learning_rate)
    history = History(label=cfg.method, seed=cfg.seed)

    state = TrainState(policy, policy_opt, None, [generator], None, history, value_model, value_opt)
    done = run.start(state)  # the steps a resumed run has already taken (0: a fresh start)
    start = time.perf_counter() - (history.records[-1]["wall_time"] if history.records else 0.0)
    bar = tqdm(
        range(done + 1, cfg.steps + 1),
        desc=f"maze {cfg.method} seed {cfg.seed}",
        disable=not cfg.progress,
        leave=False,
    )
    with run.interrupts_deferred():  # a run folder turns Ctrl-C into a checkpoint at the end of the step
        for step in bar:
            _maze_step(cfg, maze, step, state, start)
            if history.evals and history.evals[-1]["step"] == step:
                ev = history.evals[-1]
                bar.set_postfix(exact_return=f"{ev['exact_return']:.2f}", greedy_success=f"{ev['greedy_success']:.0f}")
            run.after_step(step, state)  # keeps the step's metrics; a checkpoint when due (or after Ctrl-C)
    bar.close()
    run.finish(policy, state)
    return policy, value_model, history


def _maze_step(cfg: MazeTrainConfig, maze: Maze, step: int, state: TrainState, start: float) -> None:
    """One step: N episodes, advantages, the update(s); its record (and evaluation when due) into the History."""
    policy, value_model, value_opt, history = state.policy, state.value_model, state.value_optimizer, state.history
    clip_eps = cfg.clip_eps if cfg.method == "ppo" else None
    batch = rollout(maze, policy, cfg.episodes_per_step, state.generators[0])
    adv, targets = maze_advantages(batch, cfg.method, cfg.gamma, cfg.lam, value_model)
    if cfg.method == "ppo" and cfg.normalize_advantages:
        adv = _normalize(adv, batch.mask)
    v_loss = torch.zeros(())
    for _ in range(cfg.ppo_epochs if cfg.method == "ppo" else 1):  # π_old = the sampler, fixed
        loss, metrics = surrogate_loss(policy, batch, adv, clip_eps)
        _gradient_step(state.optimizer, loss)
        if value_model is not None and value_opt is not None and targets is not None:  # PPO's value model
            v_loss = value_loss(value_model, batch, targets)
            _gradient_step(value_opt, v_loss)
    with torch.no_grad():
        entropy = (policy.entropy(batch.cells) * batch.mask).sum() / batch.mask.sum()
    episodes = step * cfg.episodes_per_step
    exact = exact_return(maze, policy)
    history.log(
        step=step,
        episodes=episodes,
        reward=float(batch.returns.mean()),
        success_rate=float(batch.success.float().mean()),
        entropy=float(entropy),
        loss=loss.item(),
        value_loss=v_loss.item(),
        clip_frac=metrics["clip_frac_low"] + metrics["clip_frac_high"],
        exact_return=exact,
        wall_time=time.perf_counter() - start,
    )
    if (cfg.eval_every and step % cfg.eval_every == 0) or step == cfg.steps:
        greedy = greedy_success(maze, policy)
        history.log_eval(step=step, episodes=episodes, greedy_success=greedy, exact_return=exact)


def episodes_to_solve(history: History, min_exact_return: float = 9.9) -> float:
    """Episodes used at the first evaluation with greedy success 1 and exact return >= the threshold
    (``nan`` if never)."""
    for ev in history.evals:
        if ev["greedy_success"] == 1.0 and ev["exact_return"] >= min_exact_return:
            return ev["episodes"]
    return float("nan")

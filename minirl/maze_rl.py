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

Both models are tables, as small as the problem: ``MazePolicy`` holds one row of 4 logits per
cell, ``ValueModel`` one value per (steps left, cell).  So ``expected_returns(maze,
policy.probs())`` gives the exact expected return of the learned policy at every step.

Shapes: every per-step tensor of an ``EpisodeBatch`` is ``[episode, time]`` with time = max_steps.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from tqdm.auto import tqdm

from minirl.advantages import compute_gae, discounted_returns
from minirl.history import History
from minirl.hooks import RunHooks, TrainState
from minirl.losses import policy_loss
from minirl.utils import check_positive_ints, load_torch, save_torch, torch_threads, write_json
from toy_envs.maze import Maze
from toy_envs.maze_values import expected_returns

__all__ = [
    "MAZE_ALGORITHMS",
    "EpisodeBatch",
    "MazePolicy",
    "MazeTrainConfig",
    "ValueModel",
    "episodes_to_solve",
    "exact_return",
    "greedy_route",
    "greedy_success",
    "leave_one_out_baseline",
    "maze_advantages",
    "rollout",
    "surrogate_loss",
    "train_maze",
    "value_loss",
]

MAZE_ALGORITHMS = ("reinforce", "reinforce_baseline", "ppo")


# ----------------------------------------------------------------------------------------------
# The two models: tables
# ----------------------------------------------------------------------------------------------


class MazePolicy(nn.Module):
    """π_θ(a | cell) = softmax over the permitted moves of a learned logit table ``[n_cells, 4]``.

    The logits start at 0, so the initial policy is uniform over the permitted moves.  A move
    that is not permitted gets logit −inf, hence probability exactly 0: the agent never wastes
    a move on a wall.  (The policy ignores the steps left: the best move does not depend on it
    here, and a small table learns faster.)  Wall cells, never visited, get a uniform row so that
    every row is a proper distribution.
    """

    allowed: torch.Tensor  # [n_cells, 4] bool: the permitted moves (every move from a wall cell), a buffer

    def __init__(self, maze: Maze) -> None:
        super().__init__()
        permitted = torch.tensor(maze.permitted_mask())
        walls = torch.tensor(maze.walls.copy())
        self.register_buffer("allowed", permitted | walls[:, None])  # [n_cells, 4] bool
        self.logits_table = nn.Parameter(torch.zeros(maze.n_cells, 4))

    def forward(self, cells: torch.Tensor) -> torch.Tensor:
        """cells ``[...]`` (long) -> masked logits ``[..., 4]`` (−inf on non-permitted moves)."""
        return self.logits_table[cells].masked_fill(~self.allowed[cells], -math.inf)

    def log_prob(self, cells: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """log π(a | cell) of the given moves: cells, actions ``[...]`` -> ``[...]``."""
        log_p = torch.log_softmax(self(cells), dim=-1)
        return log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1)

    def entropy(self, cells: torch.Tensor) -> torch.Tensor:
        """H(π(· | cell)) = −Σ_a π log π in nats: ``[...]`` -> ``[...]`` (0 · log 0 counts as 0)."""
        log_p = torch.log_softmax(self(cells), dim=-1)
        p = log_p.exp()
        return -torch.where(p > 0, p * log_p, torch.zeros_like(p)).sum(-1)

    def save(self, folder: str | os.PathLike) -> None:
        """The logit table into ``folder`` (a run folder, ``minirl.runs``) as ``model.pt``, and this class in
        ``model.json`` (the maze itself, which fixes the table's shape, is the run's task)."""
        save_torch(self.state_dict(), Path(folder) / "model.pt")
        write_json(Path(folder) / "model.json", {"policy": f"{type(self).__module__}:{type(self).__qualname__}"})

    @classmethod
    def load(cls, folder: str | os.PathLike, maze: Maze, device: str | torch.device | None = None) -> MazePolicy:
        """The table ``save`` wrote into ``folder``, for ``maze`` (the run's task); ``device`` as given."""
        policy = cls(maze)
        policy.load_state_dict(load_torch(Path(folder) / "model.pt"))
        return policy.to(device) if device is not None else policy

    def probs(self) -> torch.Tensor:
        """The whole policy as a ``[n_cells, 4]`` probability matrix (detached), the format of
        ``toy_envs.maze.expected_returns``."""
        with torch.no_grad():
            return torch.softmax(self(torch.arange(self.logits_table.shape[0])), dim=-1)


class ValueModel(nn.Module):
    """V_φ(cell, k): a table ``[max_steps + 1, n_cells]`` of values, starting at 0.

    The true value depends on the steps left k, not only on the cell: from cell 8 the goal is
    two moves away, so V(8, k = 1) = 0 whatever the policy, while V(8, k = 2) > 0.  A value of
    the cell alone would have to average these, a biased baseline.  V(·, 0) = 0 always (nothing
    can be earned without a move), so row 0 of the table is never used.
    """

    def __init__(self, maze: Maze) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.zeros(maze.max_steps + 1, maze.n_cells))

    def forward(self, cells: torch.Tensor, steps_left: torch.Tensor) -> torch.Tensor:
        """cells, steps_left ``[...]`` (long) -> values ``[...]`` (0 where steps_left = 0)."""
        values = self.table[steps_left, cells]
        return torch.where(steps_left > 0, values, torch.zeros_like(values))


# ----------------------------------------------------------------------------------------------
# Sampling episodes
# ----------------------------------------------------------------------------------------------


@dataclass
class EpisodeBatch:
    """A batch of episodes from the start, every per-step tensor ``[episode, time]``, time = max_steps.

    Attributes:
        cells: s_t, the cell before move t (long).  After the episode ended it stays at the goal.
        steps_left: k_t = max_steps − t, the budget before move t (long).
        actions: a_t (long), always a permitted move (also on padding steps, so log π is finite).
        log_probs: log π_old(a_t | s_t) of the sampling policy (detached).
        next_cells: s_{t+1}, the cell after move t (long).
        rewards: r_t, ``goal_reward`` at the move that enters G, else 0 (float).
        dones: d_t = 1.0 at the move that enters G, else 0 (a budget running out is not a "done":
            the next value is 0 there because V(·, 0) = 0).
        mask: 1.0 for real moves, 0.0 for the padding after the episode ended.
        returns: R = Σ_t r_t, one undiscounted return per episode, ``[episode]``.
    """

    cells: torch.Tensor
    steps_left: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    next_cells: torch.Tensor
    rewards: torch.Tensor
    dones: torch.Tensor
    mask: torch.Tensor
    returns: torch.Tensor

    @property
    def success(self) -> torch.Tensor:
        """``[episode]`` bool: True where the episode reached the goal."""
        return self.dones.sum(dim=1) > 0


@torch.no_grad()
def rollout(maze: Maze, policy: MazePolicy, n_episodes: int, generator: torch.Generator | None = None) -> EpisodeBatch:
    """Play ``n_episodes`` episodes from the start with ``policy``, all at once (a loop over time only).

    Same dynamics as ``Maze.step``: a move goes to ``maze.next_cell_table[cell, action]``,
    entering G gives ``goal_reward`` and ends the episode, and the episode is cut after
    ``max_steps`` moves.  Actions are drawn with ``torch.multinomial`` from ``generator`` (None =
    torch's global generator).
    """
    check_positive_ints(n_episodes=n_episodes)
    table = torch.tensor(maze.next_cell_table.copy())  # [n_cells, 4]: the cell each move leads to
    horizon = maze.max_steps
    cell = torch.full((n_episodes,), maze.start, dtype=torch.long)
    playing = torch.ones(n_episodes, dtype=torch.bool)
    cells, actions, log_probs, next_cells, dones, mask = [], [], [], [], [], []
    for _ in range(horizon):
        log_p = torch.log_softmax(policy(cell), dim=-1)  # [episode, 4]
        action = torch.multinomial(log_p.exp(), 1, generator=generator).squeeze(-1)  # [episode]
        nxt = torch.where(playing, table[cell, action], cell)  # a finished episode stays put
        arrived = playing & (nxt == maze.goal)
        cells.append(cell)
        actions.append(action)
        log_probs.append(log_p.gather(-1, action[:, None]).squeeze(-1))
        next_cells.append(nxt)
        dones.append(arrived.float())
        mask.append(playing.float())
        playing = playing & ~arrived
        cell = nxt
    dones_t = torch.stack(dones, dim=1)  # [episode, time]
    rewards = dones_t * maze.goal_reward
    return EpisodeBatch(
        cells=torch.stack(cells, dim=1),
        steps_left=torch.arange(horizon, 0, -1).repeat(n_episodes, 1),
        actions=torch.stack(actions, dim=1),
        log_probs=torch.stack(log_probs, dim=1),
        next_cells=torch.stack(next_cells, dim=1),
        rewards=rewards,
        dones=dones_t,
        mask=torch.stack(mask, dim=1),
        returns=rewards.sum(dim=1),
    )


# ----------------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------------


def exact_return(maze: Maze, policy: MazePolicy) -> float:
    """J(π) exactly: the expected (undiscounted) return from the start with the whole budget,
    by dynamic programming (``expected_returns(maze, policy.probs())[max_steps, start]``)."""
    return float(expected_returns(maze, policy.probs())[maze.max_steps, maze.start])


@torch.no_grad()
def greedy_route(maze: Maze, policy: MazePolicy) -> list[int]:
    """Play the argmax policy once in a fresh copy of the real ``Maze`` env: the cells it visits, from S until
    it reaches G or the step budget runs out."""
    env = Maze(list(maze.layout), max_steps=maze.max_steps, goal_reward=maze.goal_reward)
    cell, _ = env.reset()
    route = [cell]
    while True:
        action = int(policy(torch.tensor(cell)).argmax())
        cell, _, terminated, truncated, _ = env.step(action)
        route.append(cell)
        if terminated or truncated:
            return route


def greedy_success(maze: Maze, policy: MazePolicy) -> float:
    """1.0 if the argmax policy's route (``greedy_route``) reaches G, else 0.0."""
    return 1.0 if greedy_route(maze, policy)[-1] == maze.goal else 0.0


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

"""minirl.critic: PPO for language models (a value head on the policy's hidden states, GAE per model token), on the
tiny Llama and the text maze.

Tolerances: float32 log-softmax of the same logits computed by two forward passes of different shapes agrees to
~1e-6; ``abs=1e-4`` leaves a hundred times that. The value head's fit is checked by its loss falling, not by a
fixed number.
"""

import dataclasses

import pytest
import torch

from minirl.advantages import token_gae
from minirl.algorithms import ALGORITHMS, LM_ALGORITHMS, get_algorithm
from minirl.critic import Critic, ValueHead, prompt_features, token_features, value_loss
from minirl.episodes import sample_rollout
from minirl.lm.models import make_tiny_lm
from minirl.lm.recipes import lm_algorithm
from minirl.train import TrainConfig, train
from tests.test_train import strip_time
from toy_envs.maze_text import TextMazeTask

TASK = TextMazeTask()
SMALL = dict(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128)


@pytest.fixture(scope="module")
def policy():
    return make_tiny_lm(0, max_new_tokens=5, **SMALL)


@pytest.fixture(scope="module")
def batch(policy):
    prompts = TASK.eval_prompts(2)
    rollout = sample_rollout(policy, TASK, prompts, 3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    return prompts, rollout


def test_the_features_are_the_hidden_states_that_predict_each_token(policy, batch):
    """The LM head on the features gives the very log-probabilities the loss scores: V(s_k) reads what the model
    had read when it wrote token k, no more (an off-by-one would let the value see the token it values)."""
    prompts, rollout = batch
    features = token_features(policy, prompts, rollout)
    assert features.shape == (*rollout.tokens.shape, 64) and not features.requires_grad
    with torch.no_grad():
        logits = policy.model.lm_head(features)
        scored = policy.score(prompts, rollout, temperature=1.0).log_probs
    from_features = torch.log_softmax(logits, -1).gather(-1, rollout.tokens[..., None]).squeeze(-1)
    mask = rollout.mask > 0
    assert from_features[mask].tolist() == pytest.approx(scored[mask].tolist(), abs=1e-4)
    shifted = torch.log_softmax(logits[..., 1:, :], -1).gather(-1, rollout.tokens[..., :-1, None]).squeeze(-1)
    assert shifted[mask[..., :-1]].tolist() != pytest.approx(
        scored[mask][: int(mask[..., :-1].sum())].tolist(), abs=1e-2
    )


def test_the_prompt_features_are_the_state_before_every_answer_s_first_token(policy, batch):
    """The state before the first move, read from the prompts alone, is each trial's first token feature: the same
    hidden states up to the rounding of two passes of different lengths (the ``abs=1e-4`` above)."""
    prompts, rollout = batch
    start = prompt_features(policy, prompts)
    assert start.shape == (2, 64) and not start.requires_grad
    features = token_features(policy, prompts, rollout)
    for trial in range(rollout.tokens.shape[1]):
        assert start.flatten().tolist() == pytest.approx(features[:, trial, 0].flatten().tolist(), abs=1e-4)
    later = features[:, 0, 1].flatten().tolist()  # the state after the first token is another one
    assert start.flatten().tolist() != pytest.approx(later, abs=1e-2)
    with pytest.raises(TypeError, match="policy must be a minirl.lm.CausalLMPolicy"):
        prompt_features(object(), prompts)


def test_a_new_head_values_every_state_at_zero_and_its_advantages_are_gae_of_the_rewards(policy, batch):
    prompts, rollout = batch
    rewards = torch.tensor([[10.0, 0.0, 10.0], [0.0, 0.0, 10.0]])
    critic = Critic.for_policy(policy, lm_algorithm("ppo"))
    advantages, metrics = critic.advantages(policy, prompts, rollout, rewards)
    expected, returns = token_gae(rewards, torch.zeros(rollout.tokens.shape), rollout.mask, lam=0.95)
    assert torch.equal(advantages, expected)
    assert (advantages[rollout.mask == 0] == 0).all()  # the environment's tokens are not actions
    assert metrics["value_mean"] == 0.0
    assert metrics["value_loss"] == pytest.approx(float(value_loss(torch.zeros_like(returns), returns, rollout.mask)))
    assert metrics["value_loss_after"] < metrics["value_loss"]  # the head was fitted to the returns


def test_the_head_learns_the_returns_of_a_batch(policy, batch):
    prompts, rollout = batch
    rewards = torch.tensor([[10.0, 0.0, 10.0], [0.0, 0.0, 10.0]])
    critic = Critic.for_policy(policy, lm_algorithm("ppo", value_learning_rate=1e-2))
    losses = [critic.advantages(policy, prompts, rollout, rewards)[1]["value_loss"] for _ in range(10)]
    # the same batch ten times: the linear fit improves at every call and closes most of the gap in the first few
    # (a linear head on frozen features has a floor above 0, which depends on the sampled batch)
    assert all(b < a for a, b in zip(losses, losses[1:])), f"value losses {losses}"
    assert losses[-1] < 0.6 * losses[0], f"value losses {losses}"


def test_the_value_loss_counts_only_the_model_tokens():
    values = torch.tensor([[[1.0, 5.0, 3.0]]])
    returns = torch.tensor([[[2.0, 0.0, 3.0]]])
    mask = torch.tensor([[[1.0, 0.0, 1.0]]])
    assert float(value_loss(values, returns, mask)) == 0.25  # ½ (1² + 0²) / 2: the masked 5 − 0 does not count
    assert float(value_loss(values, returns, torch.zeros_like(mask))) == 0.0
    with pytest.raises(ValueError, match="values, returns and mask must share one shape"):
        value_loss(values, returns[..., :2], mask)


def test_ppo_is_a_language_model_preset_with_its_kl_in_the_reward():
    ppo = get_algorithm("ppo")
    assert "ppo" in LM_ALGORITHMS and "ppo" not in ALGORITHMS  # the toy tasks' presets stay toy-trainable
    assert ppo.advantage_level == "critic" and ppo.clip_eps_low == 0.2 and ppo.importance_ratio
    assert lm_algorithm("ppo").kl_coef == 0.02 and lm_algorithm("ppo").policy_loss_kwargs()["kl_coef"] == 0.0
    assert ALGORITHMS["grpo"].policy_loss_kwargs()["kl_coef"] == ALGORITHMS["grpo"].kl_coef


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"lam": 1.5}, r"lam must be in \[0, 1\]; got 1.5"),
        ({"gamma": -0.1}, r"gamma must be in \[0, 1\]; got -0.1"),
        ({"value_learning_rate": 0.0}, "value_learning_rate must be > 0; got 0.0"),
        ({"value_epochs": 0}, "value_epochs must be"),
        ({"advantage_level": "value"}, "advantage_level must be one of"),
        ({"delta_mode": "best_vs_worst"}, "advantage_level 'critic' shapes the rewards by one of"),
    ],
)
def test_bad_critic_knobs_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        get_algorithm("ppo").with_(**change)


def test_a_group_delta_mode_scales_each_episodes_reward_within_its_group_before_the_critic():
    """PPO's own ``delta_mode="rewards"`` hands the critic the rewards as they are; a group mode scales them as GRPO
    does first (a probe of what that scaling does). Tolerance: float32 means and stds of four numbers near 1 agree
    with the formula to ~1e-7; ``abs=1e-5`` leaves room for the ε of the division."""
    from minirl.algorithms import CRITIC_DELTA_MODES
    from minirl.train import _step_advantages

    seen = []

    class Recording:
        def advantages(self, policy, prompts, rollout, rewards, kl):
            seen.append(rewards)
            return rewards, {}

    rewards = torch.tensor([[1.0, 0.8, 1.0, 0.8], [0.0, 0.8, 0.8, 0.8]])  # [batch, trial]
    for mode in CRITIC_DELTA_MODES:
        _step_advantages(TASK, lm_algorithm("ppo", delta_mode=mode), Recording(), None, None, None, rewards, None, {})
    centered = rewards - rewards.mean(dim=1, keepdim=True)
    assert torch.equal(seen[0], rewards)
    assert seen[1] == pytest.approx(centered, abs=1e-5)
    assert seen[2] == pytest.approx(centered / rewards.std(dim=1, keepdim=True), abs=1e-5)
    # scaled, the first group's gap of 0.2 moves its episodes by ±0.87, more than centring's ±0.1
    assert seen[2][0].abs().min() > 0.8 and seen[1][0].abs().max() < 0.11


def test_a_toy_policy_gets_a_clear_error():
    with pytest.raises(TypeError, match="the policy must be a minirl.lm.CausalLMPolicy"):
        train(TrainConfig(algo=get_algorithm("ppo"), steps=1, prompts_per_step=2, group_size=2, progress=False))
    with pytest.raises(ValueError, match="must be a positive int"):
        ValueHead(0)


class LongWalks(TextMazeTask):
    """The text maze paying each episode its number of turns: an untrained model rarely reaches the goal, and the
    value head would have nothing but zeros to fit."""

    def rewards(self, prompts, answers, /):
        return torch.tensor([[float(e.turns) for e in group] for group in answers])


def _ppo_run(seed, kl_coef):
    config = TrainConfig(
        task=LongWalks(),
        algo=lm_algorithm("ppo", kl_coef=kl_coef),
        steps=2,
        prompts_per_step=2,
        group_size=2,
        learning_rate=1e-3,
        seed=seed,
        eval_every=0,
        eval_prompts=2,
        eval_sampled=False,
        progress=False,
    )
    return train(config, make_tiny_lm(0, max_new_tokens=5, **SMALL))[1]


@pytest.mark.parametrize("kl_coef", [0.0, 0.02])
def test_the_loop_trains_ppo_on_episodes_and_logs_the_critic(kl_coef):
    history = _ppo_run(0, kl_coef)
    for key in ("value_loss", "value_loss_after", "value_mean", "loss"):
        assert all(torch.isfinite(torch.tensor(history[key]))), key
    assert history["value_mean"][0] == 0.0 and history["value_mean"][1] != 0.0  # fitted after the first step
    assert ("kl" in history.records[-1]) == (kl_coef > 0)  # β measured with a reference, as for every preset
    assert strip_time(history.records) == strip_time(_ppo_run(0, kl_coef).records)  # the same seed, the same run


def test_a_critic_run_refuses_to_resume(tmp_path):
    from minirl.runs import RunFolder

    config = dataclasses.replace(
        TrainConfig(task=TASK, algo=lm_algorithm("ppo"), steps=1, prompts_per_step=2, group_size=2),
        eval_every=0,
        eval_prompts=2,
        eval_sampled=False,
        progress=False,
    )
    policy = make_tiny_lm(0, max_new_tokens=5, **SMALL)
    train(config, policy, run=RunFolder.create(tmp_path / "run", config, save_every=1))
    resumed = RunFolder.resume(tmp_path / "run", config, save_every=1)
    with pytest.raises(ValueError, match="cannot resume a run yet: its value head is not checkpointed"):
        train(config, policy, run=resumed)


def test_the_command_line_trains_the_text_maze_with_ppo_and_shows_its_walks(tmp_path, capsys):
    import json

    from minirl.cli import main

    flags = ["--task", "maze_text", "--model", "tiny", "--algo", "ppo", "--sft-steps", "2", "--steps", "2"]
    flags += ["--prompts-per-step", "2", "--group-size", "2", "--eval-every", "0", "--eval-prompts", "2"]
    assert main(["train", *flags, "--pass-k", "0", "--no-progress", "--out", str(tmp_path / "run")]) == 0
    stored = json.loads((tmp_path / "run" / "config.json").read_text())
    assert stored["preset"] == "ppo" and stored["algo"]["advantage_level"] == "critic"
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all({"value_loss", "value_loss_after", "value_mean"} <= set(r) for r in rows)
    capsys.readouterr()
    assert (
        main(["eval", str(tmp_path / "run"), "--eval-prompts", "10", "--samples", "10", "--samples-per-prompt", "1"])
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    line = next(line for line in out if line.startswith("  greedy episodes: "))
    assert "turns an episode; " in line and all(f"success from cell {c} " in line for c in TASK.start_cells)
    assert all(rows[0][k] >= 0 for k in ("turns", "invalid_replies"))
    walks = [line for line in out if line.startswith("  from cell ")]
    assert len(walks) == 10 and walks[0].startswith("  from cell 0 (row 0, column 0): ")  # every start cell
    assert all(line.endswith(("(right)", "(wrong)")) for line in walks)
    with pytest.raises(SystemExit, match=r"unknown algorithm\(s\) \['ppo'\] for --task sorting"):
        main(["train", "--algo", "ppo", "--no-progress"])  # the toy tasks' policies have no hidden states

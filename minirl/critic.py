"""PPO for language models: a learned value gives each of the model's tokens its own advantage.

GRPO gives every token of an episode one advantage, the episode's reward against its group's: a move that led
nowhere and the move that reached the goal share it. The classic RLHF loop (PPO with a value model) instead learns
V(s), the expected return from the state before each token, and credits each token with GAE over the TD
residuals (``minirl.advantages.token_gae``)::

    r_k = −β (log π_old(y_k) − log π_ref(y_k)) + (R if k = K else 0)      the KL penalty folded into the reward
    δ_k = r_k + γ V(s_{k+1}) − V(s_k)                                     V(s_{K+1}) = 0
    A_k = δ_k + γ λ A_{k+1}                                               G_k = A_k + V(s_k), the value's target

where k runs over the model's tokens only (an environment's tokens are not actions: they are skipped, and the
state after the model's last token of a turn is the state before its first token of the next). The value is a
linear layer on the policy's last hidden state at the position that predicts the token (``ValueHead``,
``token_features``): s_k is what the model has read when it writes y_k. The policy's features are taken without
gradient (a linear probe on the language model, cheap on a CPU: one forward pass without backward), and the head
is fitted to the returns G_k by ``value_epochs`` Adam steps a batch on

    L_V = ½ mean_k m_k (V(s_k) − G_k)²                                   over the model's tokens (mask m)

``Critic`` holds the head and its optimiser; the training loop calls ``Critic.advantages`` each step when the
algorithm's ``advantage_level`` is ``"critic"`` (the ``ppo`` preset), and the same ``policy_loss`` then takes
advantages ``[batch, trial, pos]``. Because β penalises the reward here, the loss itself carries no KL term
(``AlgoConfig.policy_loss_kwargs``).

Shapes: rewards ``[batch, trial]``; features ``[batch, trial, pos, hidden]``; values, advantages, returns and the
mask ``[batch, trial, pos]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from einops import rearrange

from minirl.advantages import token_gae
from minirl.protocols import Rollout

if TYPE_CHECKING:
    from minirl.algorithms import AlgoConfig

__all__ = ["Critic", "ValueHead", "prompt_features", "token_features", "value_loss"]


class ValueHead(torch.nn.Module):
    """V(s) = w · h(s) + b on a hidden state ``[..., hidden]`` -> ``[...]``; starts at V ≡ 0 (w = 0, b = 0), so
    its first advantages are the λ-returns of the rewards."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        if not (isinstance(hidden_size, int) and hidden_size > 0):
            raise ValueError(f"hidden_size must be a positive int; got {hidden_size!r}")
        self.linear = torch.nn.Linear(hidden_size, 1)
        torch.nn.init.zeros_(self.linear.weight)
        torch.nn.init.zeros_(self.linear.bias)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.linear(features).squeeze(-1)


def _require_lm(policy: Any) -> None:
    if not hasattr(policy, "encode_prompts") or not hasattr(policy, "model"):
        raise TypeError(f"policy must be a minirl.lm.CausalLMPolicy (a language model); got {type(policy).__name__}")


def _decoder_states(policy: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The decoder's last (normed) hidden state at every position ``[rows, pos, hidden]``, in the pass's dtype: no
    logits over the vocabulary."""
    from minirl.lm.policy import _position_ids

    with policy._autocast():
        out = policy.model.get_decoder()(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=_position_ids(attention_mask)
        )
    return out.last_hidden_state


@torch.no_grad()
def token_features(policy: Any, prompts: Any, rollout: Rollout) -> torch.Tensor:
    """The policy's last hidden state at the position that predicts each rollout token, without gradient:
    ``[batch, trial, pos, hidden]`` (a response's first token is predicted from the prompt's last position).
    Needs a ``minirl.lm.CausalLMPolicy`` (a HuggingFace causal LM, whose ``get_decoder()`` gives the hidden states
    before the language-model head: no logits over the vocabulary are computed)."""
    _require_lm(policy)
    input_ids, attention_mask = policy.encode_prompts(prompts)
    batch, trial, n_resp = rollout.tokens.shape
    responses = rearrange(rollout.tokens.to(policy.device), "batch trial pos -> (batch trial) pos")
    attn = torch.cat([attention_mask.repeat_interleave(trial, 0), torch.ones_like(responses)], dim=1)
    seq = torch.cat([input_ids.repeat_interleave(trial, 0), responses], dim=1)
    hidden = _decoder_states(policy, seq, attn)[:, -n_resp - 1 : -1].float()  # the positions predicting each token
    return rearrange(hidden, "(batch trial) pos hidden -> batch trial pos hidden", trial=trial)


@torch.no_grad()
def prompt_features(policy: Any, prompts: Any) -> torch.Tensor:
    """The policy's last hidden state at each prompt's last position, without gradient: ``[batch, hidden]``, the
    state before the first token of an answer (the prompt read, nothing written). ``token_features(...)[:, t, 0]``
    of any rollout, without running the rollout's tokens through the model."""
    _require_lm(policy)
    input_ids, attention_mask = policy.encode_prompts(prompts)  # LEFT-padded: each prompt ends at the last position
    return _decoder_states(policy, input_ids, attention_mask)[:, -1].float()


def value_loss(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """L_V = ½ Σ m (V − G)² / Σ m: the mean over the model's tokens (``mask`` 1) of the squared error to the
    returns; all ``[batch, trial, pos]``. 0 for a batch without a model token."""
    if values.shape != returns.shape or values.shape != mask.shape:
        raise ValueError(
            f"values, returns and mask must share one shape; got {list(values.shape)}, {list(returns.shape)} "
            f"and {list(mask.shape)}"
        )
    return 0.5 * ((values - returns) ** 2 * mask).sum() / mask.sum().clamp(min=1.0)


class Critic:
    """A ``ValueHead`` on a language model's features and its Adam optimiser, with the algorithm's GAE knobs
    (``gamma``, ``lam``, ``value_learning_rate``, ``value_epochs``, β = ``kl_coef``)."""

    def __init__(self, hidden_size: int, algo: AlgoConfig, device: torch.device | str = "cpu") -> None:
        self.algo = algo
        self.head = ValueHead(hidden_size).to(device)
        self.optimizer = torch.optim.Adam(self.head.parameters(), lr=algo.value_learning_rate)

    @classmethod
    def for_policy(cls, policy: Any, algo: AlgoConfig) -> Critic:
        """A critic sized for ``policy``'s language model (its config's ``hidden_size``), on its device."""
        config = getattr(getattr(policy, "model", None), "config", None)
        if config is None or not hasattr(config, "hidden_size"):
            raise TypeError(
                f"algorithm {algo.name!r} learns a value on a language model's hidden states: the policy must be a "
                f"minirl.lm.CausalLMPolicy; got {type(policy).__name__}"
            )
        return cls(config.hidden_size, algo, policy.device)

    def advantages(
        self,
        policy: Any,
        prompts: Any,
        rollout: Rollout,
        rewards: torch.Tensor,
        kl: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """This batch's advantages ``[batch, trial, pos]`` from the values before fitting, then the head fitted to
        the returns. ``kl``: log π_old − log π_ref of each token ``[batch, trial, pos]`` (None: no penalty).
        Returns the advantages and ``value_loss`` (before the fit), ``value_loss_after``, ``value_mean``."""
        features = token_features(policy, prompts, rollout)
        mask = rollout.mask if rollout.mask is not None else torch.ones(rollout.tokens.shape)
        return self.fit(features, mask, rewards, kl)

    def fit(
        self,
        features: torch.Tensor,
        mask: torch.Tensor,
        rewards: torch.Tensor,
        kl: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """``advantages`` on features already taken (``token_features``: ``[batch, trial, pos, hidden]``, the
        model's tokens marked by ``mask`` ``[batch, trial, pos]``): GAE from the head's values, then
        ``value_epochs`` Adam steps on ``value_loss`` towards the returns. The same batch's features can so be
        fitted by several heads (``minirl.bench.critic_fit``)."""
        mask = mask.to(features.device).float()
        if mask.shape != features.shape[:-1]:
            raise ValueError(
                f"mask must be [batch, trial, pos] = {list(features.shape[:-1])} (the features' leading axes); got "
                f"{list(mask.shape)}"
            )
        with torch.no_grad():
            values = self.head(features)
        advantages, returns = token_gae(
            rewards.to(features.device).float(),
            values,
            mask,
            kl=kl,
            kl_coef=self.algo.kl_coef,
            gamma=self.algo.gamma,
            lam=self.algo.lam,
        )
        before = float(value_loss(values, returns, mask))
        for _ in range(self.algo.value_epochs):
            self.optimizer.zero_grad(set_to_none=True)
            loss = value_loss(self.head(features), returns, mask)
            loss.backward()
            self.optimizer.step()
        with torch.no_grad():
            after = float(value_loss(self.head(features), returns, mask))
        n = float(mask.sum().clamp(min=1.0))
        return advantages, {
            "value_loss": before,
            "value_loss_after": after,
            "value_mean": float((values * mask).sum()) / n,
        }

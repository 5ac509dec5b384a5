"""The tiny models of the sorting task: the encoder-decoder policy and a reward model on the same encoder.

Neither is a transformer: every idea of RL on a language model (a distribution over token
sequences, sampling a group of responses, per-token log-probabilities, a learned reward) shows up
already in a model with a few thousand parameters that trains in seconds on a laptop CPU.

Both read tokens the same way, with ``encode``: one matrix per position, summed,

    encode         h = Σ_i W[i]ᵀ e(t_i)                                            [batch, dim]

The policy, ``TinyEncoderDecoder`` (``make_model(task)`` builds one sized for a sorting task):

    prompt tokens  x_1 .. x_P          embed            e(x_i)                     [batch, pos, dim]
    encode         h = Σ_i W_enc[i]ᵀ e(x_i)                                        [batch, dim]
    decode         d_j = W_dec[j]ᵀ h           (one matrix per response position)  [batch, pos, dim]
    logits         logit_j(v) = d_j · e(v)     (tied output embedding)             [batch, pos, vocab]

Every response position is predicted from the prompt alone (there is no dependence on the
response tokens already emitted), so the policy factorises over positions:
π(y | x) = Π_j softmax(logit_j)[y_j]. That keeps sampling a single forward pass.

The reward model, ``RewardModel``: the prompt and the response each encoded, then a small MLP to
one number r_φ(x, y); ``LearnedReward`` wraps a trained one as a task reward ``[batch, trial]``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from einops import einsum
from torch import nn

from minirl.protocols import ToyTask
from minirl.utils import check_positive_ints

__all__ = ["LearnedReward", "RewardModel", "TinyEncoderDecoder", "encode", "make_model"]


def encode(embedding: torch.Tensor, weights: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """The encoder of both tiny models: h = Σ_i W[i]ᵀ e(t_i), one matrix per position.

    embedding[vocab, dim], weights[pos, dim_in, dim_out], tokens[..., pos] (LongTensor, any leading
    axes: ``[batch, pos]`` or ``[batch, trial, pos]``) -> h[..., dim_out].
    """
    return einsum(embedding[tokens], weights, "... pos d_in, pos d_in d_out -> ... d_out")


def _init_weights(generator: torch.Generator | None, std: float):
    """A function ``init(*shape) -> nn.Parameter`` drawing N(0, std²) weights from ``generator``."""

    def init(*shape: int) -> nn.Parameter:
        return nn.Parameter(torch.randn(*shape, generator=generator) * std)

    return init


class TinyEncoderDecoder(nn.Module):
    """One shared embedding table, one encode matrix per prompt position, one decode matrix per
    response position; logits by dot product with the embedding table.

    Args:
        vocab_size: number of token values (V).
        embedding_dim: width of the embedding (D).
        prompt_length: number of prompt positions (P).
        response_length: number of response positions (R).
        init_scale: standard deviation of the weights is ``init_scale / sqrt(D)`` so that the
            initial logits are small and the initial policy is close to uniform.
        generator: optional ``torch.Generator`` for a reproducible initialisation.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int,
        prompt_length: int,
        response_length: int,
        init_scale: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        check_positive_ints(
            vocab_size=vocab_size,
            embedding_dim=embedding_dim,
            prompt_length=prompt_length,
            response_length=response_length,
        )
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.prompt_length = prompt_length
        self.response_length = response_length
        init = _init_weights(generator, init_scale / embedding_dim**0.5)
        self.embedding = init(vocab_size, embedding_dim)  # [vocab, dim]
        self.encode_weights = init(prompt_length, embedding_dim, embedding_dim)  # [pos, dim_in, dim_out]
        self.decode_weights = init(response_length, embedding_dim, embedding_dim)  # [pos, dim_in, dim_out]

    def forward(self, prompts: torch.Tensor) -> torch.Tensor:
        """prompts[batch, pos] (LongTensor) -> logits[batch, pos, vocab] over each response position."""
        if prompts.dim() != 2 or prompts.shape[1] != self.prompt_length:
            raise ValueError(
                f"prompts must have shape [batch, pos] = [batch, {self.prompt_length}]; got {list(prompts.shape)}"
            )
        if prompts.dtype != torch.long:
            raise TypeError(f"prompts must be a LongTensor of token ids; got dtype {prompts.dtype}")
        encoded = encode(self.embedding, self.encode_weights, prompts)  # [batch, dim]
        decoded = einsum(encoded, self.decode_weights, "batch d_in, pos d_in d_out -> batch pos d_out")
        return einsum(decoded, self.embedding, "batch pos dim, vocab dim -> batch pos vocab")


def make_model(task: ToyTask, embedding_dim: int = 32, seed: int = 0) -> TinyEncoderDecoder:
    """A freshly initialised ``TinyEncoderDecoder`` sized for ``task`` (its ``n_tokens``, ``prompt_length`` and
    ``response_length``), its weights drawn from a generator seeded with ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    return TinyEncoderDecoder(
        task.n_tokens, embedding_dim, task.prompt_length, task.response_length, generator=generator
    )


class RewardModel(nn.Module):
    """A small scalar reward r_φ(x, y) on the tiny policy's encoder.

        e(v)                                            token embedding              [vocab, dim]
        h = Σ_i P[i]ᵀ e(x_i) + Σ_j R[j]ᵀ e(y_j)         ``encode`` of the prompt and of
                                                        the response                 [batch, dim]
        r = w₂ · relu(W₁ relu(h) + b₁) + b₂             an MLP head                  [batch]

    ``forward(prompts[batch, P], responses[batch, R]) -> [batch]``; responses ``[batch, trial, R]``
    (a group per prompt) give ``[batch, trial]``.

    Args:
        vocab_size: number of token values (V), shared by prompts and responses.
        embedding_dim: width of the embedding and of h (D).
        prompt_length: number of prompt positions (P).
        response_length: number of response positions (R).
        hidden_dim: width of the MLP head's hidden layer.
        init_scale: the encoder weights have std ``init_scale / sqrt(D)``, as in ``TinyEncoderDecoder``.
        generator: optional ``torch.Generator`` for a reproducible initialisation.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int,
        prompt_length: int,
        response_length: int,
        hidden_dim: int = 64,
        init_scale: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        check_positive_ints(
            vocab_size=vocab_size,
            embedding_dim=embedding_dim,
            prompt_length=prompt_length,
            response_length=response_length,
            hidden_dim=hidden_dim,
        )
        self.vocab_size, self.embedding_dim = vocab_size, embedding_dim
        self.prompt_length, self.response_length, self.hidden_dim = prompt_length, response_length, hidden_dim
        init = _init_weights(generator, init_scale / embedding_dim**0.5)

        def linear(n_in: int, n_out: int) -> tuple[nn.Parameter, nn.Parameter]:
            bound = 1.0 / n_in**0.5  # nn.Linear's default initialisation, drawn from our generator
            weight = (torch.rand(n_out, n_in, generator=generator) * 2 - 1) * bound
            bias = (torch.rand(n_out, generator=generator) * 2 - 1) * bound
            return nn.Parameter(weight), nn.Parameter(bias)

        self.embedding = init(vocab_size, embedding_dim)  # [vocab, dim]
        self.prompt_weights = init(prompt_length, embedding_dim, embedding_dim)  # [pos, dim_in, dim_out]
        self.response_weights = init(response_length, embedding_dim, embedding_dim)  # [pos, dim_in, dim_out]
        self.hidden_weight, self.hidden_bias = linear(embedding_dim, hidden_dim)  # [hidden, dim], [hidden]
        self.out_weight, self.out_bias = linear(hidden_dim, 1)  # [1, hidden], [1]

    @classmethod
    def from_policy(
        cls,
        policy: TinyEncoderDecoder,
        response_length: int | None = None,
        hidden_dim: int = 64,
        generator: torch.Generator | None = None,
    ) -> RewardModel:
        """A reward model whose embedding and prompt encoder start as copies of a ``TinyEncoderDecoder``'s
        (as an RLHF reward model starts from the SFT model); the response encoder and the head are new."""
        for name in ("embedding", "encode_weights", "prompt_length", "response_length"):
            if not hasattr(policy, name):
                raise TypeError(
                    f"policy must be a TinyEncoderDecoder (it has no {name!r}); got {type(policy).__name__}"
                )
        vocab_size, dim = policy.embedding.shape
        model = cls(
            vocab_size,
            dim,
            policy.prompt_length,
            response_length or policy.response_length,
            hidden_dim,
            generator=generator,
        )
        with torch.no_grad():
            model.embedding.copy_(policy.embedding)
            model.prompt_weights.copy_(policy.encode_weights)
        return model

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """prompts[batch, P], responses[batch, R] -> rewards[batch]; responses[batch, trial, R] -> [batch, trial]."""
        if prompts.dim() != 2 or prompts.shape[1] != self.prompt_length:
            raise ValueError(
                f"prompts must have shape [batch, pos] = [batch, {self.prompt_length}]; got {list(prompts.shape)}"
            )
        if (
            responses.dim() not in (2, 3)
            or responses.shape[0] != prompts.shape[0]
            or responses.shape[-1] != self.response_length
        ):
            raise ValueError(
                f"responses must have shape [batch, pos] or [batch, trial, pos] with batch = "
                f"{prompts.shape[0]} and pos = {self.response_length}; got {list(responses.shape)}"
            )
        if prompts.dtype != torch.long or responses.dtype != torch.long:
            raise TypeError(
                f"prompts and responses must be LongTensors of token ids; got {prompts.dtype} and {responses.dtype}"
            )
        h_prompt = encode(self.embedding, self.prompt_weights, prompts)  # [batch, dim]
        h_response = encode(self.embedding, self.response_weights, responses)  # [batch, (trial,) dim]
        if responses.dim() == 3:
            h_prompt = h_prompt.unsqueeze(1)  # the same prompt for every response of its group
        h = torch.relu(h_prompt + h_response)
        hidden = torch.relu(F.linear(h, self.hidden_weight, self.hidden_bias))
        return F.linear(hidden, self.out_weight, self.out_bias).squeeze(-1)


class LearnedReward:
    """A trained reward model as a batched reward function, without gradients.

    ``LearnedReward(model)(prompts[batch, pos], responses[batch, trial, pos]) -> rewards[batch, trial]``,
    the shape of ``SortingTask.rewards``, so it can replace the true reward in a policy-gradient loop
    (and be hacked by it).
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def __call__(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        if responses.dim() != 3:
            raise ValueError(f"responses must have shape [batch, trial, pos]; got {list(responses.shape)}")
        with torch.no_grad():
            return self.model(prompts, responses)

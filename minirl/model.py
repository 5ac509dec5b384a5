"""The tiny encoder-decoder policy for the sorting task.

It is deliberately not a transformer: every idea of RL on a language model (a distribution over
token sequences, sampling a group of responses, per-token log-probabilities) shows up already in
a model with a few thousand parameters that trains in seconds on a laptop CPU.

    prompt tokens  x_1 .. x_P          embed            e(x_i)                     [batch, pos, dim]
    encode         h = Σ_i W_enc[i]ᵀ e(x_i)                                        [batch, dim]
    decode         d_j = W_dec[j]ᵀ h           (one matrix per response position)  [batch, pos, dim]
    logits         logit_j(v) = d_j · e(v)     (tied output embedding)             [batch, pos, vocab]

Every response position is predicted from the prompt alone (there is no dependence on the
response tokens already emitted), so the policy factorises over positions:
π(y | x) = Π_j softmax(logit_j)[y_j]. That keeps sampling a single forward pass.
"""

from __future__ import annotations

import torch
from einops import einsum
from torch import nn

from minirl.utils import check_positive_ints

__all__ = ["TinyEncoderDecoder"]


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
        check_positive_ints(vocab_size=vocab_size, embedding_dim=embedding_dim, prompt_length=prompt_length,
                            response_length=response_length)
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.prompt_length = prompt_length
        self.response_length = response_length
        std = init_scale / embedding_dim**0.5

        def init(*shape: int) -> nn.Parameter:
            return nn.Parameter(torch.randn(*shape, generator=generator) * std)

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
        embeddings = self.embedding[prompts]  # [batch, pos, dim]
        encoded = einsum(embeddings, self.encode_weights, "batch pos d_in, pos d_in d_out -> batch d_out")
        decoded = einsum(encoded, self.decode_weights, "batch d_in, pos d_in d_out -> batch pos d_out")
        return einsum(decoded, self.embedding, "batch pos dim, vocab dim -> batch pos vocab")

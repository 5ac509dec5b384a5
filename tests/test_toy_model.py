"""The toy model (minirl.toy.model): TinyEncoderDecoder's formula, its near-uniform start, the reward model on the
same encoder (sampling and log-probabilities: test_toy_sampling.py)."""

import math

import pytest
import torch
from einops import einsum

from minirl import TinyEncoderDecoder, token_entropy
from minirl.toy.model import LearnedReward, RewardModel, encode
from tests.tolerances import assert_close_f32


def small_model(seed=0, vocab=5, dim=4, length=3):
    return TinyEncoderDecoder(vocab, dim, length, length, generator=torch.Generator().manual_seed(seed))


def test_forward_shape_and_formula():
    model = small_model()
    prompts = torch.tensor([[3, 1, 2], [0, 0, 4]])
    logits = model(prompts)
    assert logits.shape == (2, 3, 5)
    # the formula written out with explicit loops for prompt 0, response position 1, token 2
    e, enc, dec = model.embedding, model.encode_weights, model.decode_weights
    h = sum(e[prompts[0, i]] @ enc[i] for i in range(3))
    d = h @ dec[1]
    # The same sums in another order (tests/tolerances.py): 3 positions x width 4, then two more width-4 dot
    # products: ~20 terms, relative to the logits' scale (one logit may cancel to near 0)
    assert_close_f32(logits[0, 1, 2], d @ e[2], terms=20, scale=logits)
    # the output embedding is the input embedding (tied)
    again = einsum(einsum(e[prompts], enc, "b p i, p i o -> b o"), dec, "b i, p i o -> b p o") @ e.T
    assert_close_f32(logits, again, terms=20)


def test_initial_policy_is_close_to_uniform():
    model = TinyEncoderDecoder(10, 32, 5, 5, generator=torch.Generator().manual_seed(0))
    prompts = torch.randint(0, 10, (64, 5), generator=torch.Generator().manual_seed(1))
    entropy = token_entropy(model, prompts)
    assert entropy.shape == (64, 5)
    assert entropy.mean().item() > 0.9 * math.log(10)


def test_model_bad_input():
    model = small_model()
    with pytest.raises(ValueError, match=r"prompts must have shape \[batch, pos\] = \[batch, 3\]; got \[2, 4\]"):
        model(torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="LongTensor"):
        model(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="embedding_dim must be a positive int; got 0"):
        TinyEncoderDecoder(5, 0, 3, 3)


# ---- the reward model ---------------------------------------------------------------------------


def test_reward_model_shapes_and_groups():
    model = RewardModel(6, 8, 4, 3, generator=torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(1)
    prompts = torch.randint(0, 6, (5, 4), generator=gen)
    responses = torch.randint(0, 6, (5, 2, 3), generator=gen)
    grouped = model(prompts, responses)
    assert grouped.shape == (5, 2)
    # one response per prompt vs a group: other shapes, so other kernels for the same sums (tests/tolerances.py):
    # 4 prompt and 3 response positions of width 8, then the width-8 head: ~70 terms
    assert_close_f32(grouped[:, 1], model(prompts, responses[:, 1]), terms=70, scale=grouped)
    assert model(prompts, responses[:, 0]).shape == (5,)
    assert torch.equal(LearnedReward(model)(prompts, responses), grouped.detach())  # the same call, no grad
    assert not LearnedReward(model)(prompts, responses).requires_grad
    with pytest.raises(ValueError, match=r"prompts must have shape \[batch, pos\] = \[batch, 4\]"):
        model(prompts[:, :3], responses)
    with pytest.raises(ValueError, match="responses must have shape"):
        model(prompts, responses[..., :2])


def test_reward_model_seeded_and_from_policy():
    a = RewardModel(5, 4, 3, 3, generator=torch.Generator().manual_seed(3))
    b = RewardModel(5, 4, 3, 3, generator=torch.Generator().manual_seed(3))
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    policy = TinyEncoderDecoder(5, 4, 3, 3, generator=torch.Generator().manual_seed(0))
    model = RewardModel.from_policy(policy)
    assert torch.equal(model.embedding, policy.embedding) and torch.equal(model.prompt_weights, policy.encode_weights)
    assert model.embedding.data_ptr() != policy.embedding.data_ptr()  # a copy, not shared


def test_encode_by_hand_and_shared_by_both_models():
    gen = torch.Generator().manual_seed(5)
    embedding, weights = torch.randn(5, 4, generator=gen), torch.randn(3, 4, 2, generator=gen)
    tokens = torch.tensor([[[3, 1, 2], [0, 0, 4]]])  # [batch 1, trial 2, pos 3]
    h = encode(embedding, weights, tokens)
    assert h.shape == (1, 2, 2)
    # the same sums of 3 positions x width 4 in another order (tests/tolerances.py)
    assert_close_f32(h[0, 1], sum(embedding[tokens[0, 1, i]] @ weights[i] for i in range(3)), terms=12, scale=h)
    assert_close_f32(encode(embedding, weights, tokens[:, 1]), h[:, 1], terms=12, scale=h)
    # the reward model started from a policy encodes prompts exactly as the policy does
    policy = TinyEncoderDecoder(5, 4, 3, 3, generator=torch.Generator().manual_seed(0))
    reward_model = RewardModel.from_policy(policy)
    prompts = torch.tensor([[3, 1, 2], [0, 0, 4]])
    assert torch.equal(
        encode(reward_model.embedding, reward_model.prompt_weights, prompts),  # the same code on
        encode(policy.embedding, policy.encode_weights, prompts),
    )  # copies of the same numbers

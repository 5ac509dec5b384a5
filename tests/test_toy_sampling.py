"""Sampling from the toy model and scoring its responses (minirl.toy.sampling): shapes, seeding, the frequencies
and the log-probabilities it gives."""

import pytest
import torch
import torch.nn.functional as F

from minirl import TinyEncoderDecoder, compute_log_probs, greedy_responses, sample_responses


def small_model(seed=0, vocab=5, dim=4, length=3):
    return TinyEncoderDecoder(vocab, dim, length, length, generator=torch.Generator().manual_seed(seed))


def test_sample_responses_shape_range_and_determinism():
    model = small_model()
    prompts = torch.tensor([[3, 1, 2], [0, 0, 4]])
    a = sample_responses(model, prompts, 6, generator=torch.Generator().manual_seed(7))
    b = sample_responses(model, prompts, 6, generator=torch.Generator().manual_seed(7))
    c = sample_responses(model, prompts, 6, generator=torch.Generator().manual_seed(8))
    assert a.shape == (2, 6, 3) and a.dtype == torch.long
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert int(a.min()) >= 0 and int(a.max()) < 5


def test_sampling_frequencies_match_the_policy():
    model = small_model(dim=8)
    prompts = torch.tensor([[4, 0, 2]])
    samples = sample_responses(model, prompts, 20000, generator=torch.Generator().manual_seed(0))
    probs = F.softmax(model(prompts), dim=-1)[0]  # [pos, vocab]
    freq = F.one_hot(samples[0], 5).float().mean(0)  # [pos, vocab]
    assert (freq - probs).abs().max().item() < 0.015  # 4-5 standard errors at n = 20000


def test_low_temperature_is_nearly_greedy():
    model = small_model(dim=8)
    prompts = torch.tensor([[4, 0, 2], [1, 1, 3]])
    cold = sample_responses(model, prompts, 50, temperature=1e-3, generator=torch.Generator().manual_seed(0))
    assert torch.equal(cold, greedy_responses(model, prompts).expand(-1, 50, -1))
    with pytest.raises(ValueError, match="temperature must be > 0"):
        sample_responses(model, prompts, 2, temperature=0.0)
    with pytest.raises(ValueError, match="num_responses must be a positive int; got 0"):
        sample_responses(model, prompts, 0)


def test_compute_log_probs_values():
    model = small_model()
    prompts = torch.tensor([[3, 1, 2]])
    responses = torch.tensor([[[0, 1, 2], [4, 4, 4]]])
    lp = compute_log_probs(prompts, responses, model)
    assert lp.shape == (1, 2, 3)
    table = F.log_softmax(model(prompts), dim=-1)[0]  # [pos, vocab]
    expected = torch.stack([table[torch.arange(3), responses[0, t]] for t in range(2)]).unsqueeze(0)
    torch.testing.assert_close(lp, expected)
    assert (lp <= 0).all()
    with pytest.raises(ValueError, match=r"responses must have shape \[batch, trial, pos\] with batch = 1"):
        compute_log_probs(prompts, responses[0], model)

"""minirl.lm.scoring: the output layer applied only where a token is scored gives the full pass's values there.

Tolerances (tests/tolerances.py): a kept log-probability is a log-softmax over the vocabulary of dot products of
the hidden width, the same float32 sums as the full pass's in another layout: terms = hidden + vocab; through a
language model, the sums of every block too (3 of the hidden width a layer, counted generously), on values of
size up to 10 (log-probs and entropies over a vocabulary of a few hundred tokens).
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minirl.episodes import sample_rollout
from minirl.lm.models import make_tiny_lm
from minirl.lm.scoring import kept_token_scores
from tests.tolerances import assert_close_f32
from toy_envs.maze_text import TextMazeTask

HIDDEN, VOCAB = 16, 50


def _full(head, hidden, targets, temperature):
    log_p = F.log_softmax(head(hidden) / temperature, dim=-1)
    return log_p.gather(-1, targets.unsqueeze(-1)).squeeze(-1), -(log_p.exp() * log_p).sum(-1)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_kept_positions_get_the_full_pass_values_and_the_others_zero(temperature):
    gen = torch.Generator().manual_seed(0)
    head = nn.Linear(HIDDEN, VOCAB, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.randn(VOCAB, HIDDEN, generator=gen))
    hidden = torch.randn(3, 7, HIDDEN, generator=gen)
    targets = torch.randint(0, VOCAB, (3, 7), generator=gen)
    keep = torch.rand(3, 7, generator=gen) < 0.4
    keep[0, 0] = True
    log_probs, entropy = kept_token_scores(head, hidden, targets, keep, temperature)
    want_lp, want_h = _full(head, hidden, targets, temperature)
    assert log_probs.shape == entropy.shape == (3, 7)
    assert_close_f32(log_probs[keep], want_lp[keep], terms=HIDDEN + VOCAB)
    assert_close_f32(entropy[keep], want_h[keep], terms=HIDDEN + VOCAB)
    assert bool((log_probs[~keep] == 0).all()) and bool((entropy[~keep] == 0).all())


def test_gradients_reach_only_the_kept_positions():
    gen = torch.Generator().manual_seed(1)
    head = nn.Linear(HIDDEN, VOCAB, bias=False)
    hidden = torch.randn(2, 5, HIDDEN, generator=gen, requires_grad=True)
    targets = torch.randint(0, VOCAB, (2, 5), generator=gen)
    keep = torch.tensor([[True, False, True, False, False], [False, True, True, True, False]])
    log_probs, entropy = kept_token_scores(head, hidden, targets, keep, 1.0)
    (log_probs.sum() + entropy.sum()).backward()
    assert bool((hidden.grad[~keep] == 0).all()) and bool((hidden.grad[keep].abs().sum(-1) > 0).all())
    full = hidden.detach().clone().requires_grad_(True)
    want_lp, want_h = _full(head, full, targets, 1.0)
    (want_lp[keep].sum() + want_h[keep].sum()).backward()
    assert_close_f32(hidden.grad, full.grad, terms=2 * (HIDDEN + VOCAB))


def test_mismatched_shapes_are_refused_by_name():
    head = nn.Linear(HIDDEN, VOCAB, bias=False)
    hidden = torch.zeros(2, 5, HIDDEN)
    with pytest.raises(ValueError, match=r"keep and targets must have shape \[rows, pos\] = \[2, 5\]"):
        kept_token_scores(head, hidden, torch.zeros(2, 5, dtype=torch.long), torch.ones(2, 4, dtype=torch.bool), 1.0)


def test_an_episodes_environment_turns_score_zero_and_its_moves_as_the_whole_pass():
    """The policy's shared-cache path runs the output layer on the model's own tokens only: the environment's
    turns get exactly 0.0, the model's tokens the log-probs and entropies of the pass over every position."""
    policy = make_tiny_lm(0, max_new_tokens=5)
    task = TextMazeTask()
    gen = torch.Generator().manual_seed(2)
    prompts = task.sample_prompts(2, gen)
    rollout = sample_rollout(policy, task, prompts, 2, temperature=1.0, generator=gen)
    with torch.no_grad():
        shared = policy.score(prompts, rollout, temperature=1.0)
        whole = policy.score(prompts, rollout, temperature=1.0, share_prompt_cache=False)
    own = rollout.mask.bool()
    assert 0 < int(own.sum()) < own.numel() // 2  # most positions are the environment's
    assert bool((shared.log_probs[~own] == 0).all()) and bool((shared.entropy[~own] == 0).all())
    config = policy.model.config
    terms = config.vocab_size + 3 * config.num_hidden_layers * config.hidden_size  # the softmax; each block's sums
    assert_close_f32(shared.log_probs[own], whole.log_probs[own], terms=terms, scale=10.0)  # |log π| ≲ log vocab
    assert_close_f32(shared.entropy[own], whole.entropy[own], terms=terms, scale=10.0)

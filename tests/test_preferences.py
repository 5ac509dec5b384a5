"""Preference pairs, whole-response log-probabilities and the reward model's trainer, against
hand-computed numbers. (The Bradley–Terry and DPO losses are tested in test_losses.py, the reward
model itself in test_toy_model.py.)"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from minirl.losses import bradley_terry_loss
from minirl.preferences import (
    PreferencePairs,
    make_preference_pairs,
    pairwise_accuracy,
    response_log_probs,
    train_reward_model,
)
from minirl.toy.model import TinyEncoderDecoder
from minirl.toy.sampling import compute_log_probs
from tests.tolerances import assert_close_f32
from toy_envs.sorting import SortingTask

LOG2 = math.log(2.0)


# ---- whole-response log-probabilities -----------------------------------------------------------


def test_response_log_probs_sums_token_log_probs():
    model = TinyEncoderDecoder(5, 4, 3, 3, generator=torch.Generator().manual_seed(0))
    prompts = torch.tensor([[0, 1, 2], [4, 4, 1]])
    responses = torch.tensor([[1, 2, 0], [3, 3, 4]])
    tokens = compute_log_probs(prompts, responses.unsqueeze(1), model).squeeze(1)
    # sums of 3 token log-probs, scored with another batch shape (tests/tolerances.py): the width-4 model's dot
    # products at 3 positions, its 5-token softmax and the sum: ~25 terms, relative to the tokens' |log π|
    assert_close_f32(response_log_probs(model, prompts, responses), tokens.sum(-1), terms=25, scale=tokens)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert_close_f32(
        response_log_probs(model, prompts, responses, mask), (tokens * mask).sum(-1), terms=25, scale=tokens
    )
    grouped = response_log_probs(model, prompts, responses.unsqueeze(1))
    assert grouped.shape == (2, 1)
    with pytest.raises(ValueError, match="mask must have the shape of responses"):
        response_log_probs(model, prompts, responses, mask[:, :2])


# ---- pairwise accuracy -------------------------------------------------------------------------


def test_pairwise_accuracy_by_hand():
    pairs = PreferencePairs(
        prompts=torch.zeros(4, 1, dtype=torch.long),
        chosen=torch.tensor([[3], [1], [2], [0]]),
        rejected=torch.tensor([[1], [3], [2], [2]]),
        true_margin=torch.ones(4),
        flipped=torch.zeros(4, dtype=torch.bool),
    )

    def score(prompts, responses):  # the response's token is its reward
        return responses[..., 0].float()

    assert pairwise_accuracy(score, pairs) == 0.25  # 3 > 1 only; the tie (2, 2) counts as wrong


# ---- preference pairs -------------------------------------------------------------------------------

TASK = SortingTask(vocab_size=5, length=3)


def test_pairs_are_deterministic_and_informative():
    a = make_preference_pairs(TASK, 300, torch.Generator().manual_seed(0))
    b = make_preference_pairs(TASK, 300, torch.Generator().manual_seed(0))
    c = make_preference_pairs(TASK, 300, torch.Generator().manual_seed(1))
    for name in ("prompts", "chosen", "rejected", "true_margin", "flipped"):
        assert torch.equal(getattr(a, name), getattr(b, name))
    assert not torch.equal(a.chosen, c.chosen)
    assert len(a) == 300 and a.prompts.shape == (300, 3) and a.chosen.shape == a.rejected.shape == (300, 3)
    assert (a.chosen != a.rejected).any(dim=1).all()  # ties are dropped: the two always differ
    scores_c = TASK.rewards(a.prompts, a.chosen.unsqueeze(1)).squeeze(1)
    scores_r = TASK.rewards(a.prompts, a.rejected.unsqueeze(1)).squeeze(1)
    torch.testing.assert_close(a.true_margin, scores_c - scores_r)
    assert torch.equal(a.flipped, a.true_margin < 0)
    assert (a.true_margin != 0).all()
    # a mixture: correct, partly correct and random answers all occur
    assert {0.0, 1.0, 2.0, 3.0} <= set(torch.cat([scores_c, scores_r]).tolist())


def test_noise_fraction():
    assert not make_preference_pairs(TASK, 500, torch.Generator().manual_seed(0), noise=0.0).flipped.any()
    pairs = make_preference_pairs(TASK, 4000, torch.Generator().manual_seed(0), noise=0.2)
    assert 0.18 < pairs.noise_rate < 0.22  # 4000 Bernoulli(0.2): std 0.0063
    clean = pairs.unflipped()
    assert not clean.flipped.any() and (clean.true_margin > 0).all()
    assert torch.equal(clean.chosen[pairs.flipped], pairs.rejected[pairs.flipped])
    assert torch.equal(clean.chosen[~pairs.flipped], pairs.chosen[~pairs.flipped])


def test_pairs_from_a_policy_and_a_custom_scorer():
    policy = TinyEncoderDecoder(5, 8, 3, 3, generator=torch.Generator().manual_seed(0))

    def first_token(prompts, responses):
        return responses[..., 0].float()

    pairs = make_preference_pairs(
        TASK, 50, torch.Generator().manual_seed(0), scorer=first_token, noise=0.0, policy=policy
    )
    assert (pairs.chosen[:, 0] > pairs.rejected[:, 0]).all()
    torch.testing.assert_close(pairs.true_margin, (pairs.chosen[:, 0] - pairs.rejected[:, 0]).float())


def test_pairs_error_when_everything_ties():
    with pytest.raises(ValueError, match="nearly always tie"):
        make_preference_pairs(
            TASK, 10, torch.Generator().manual_seed(0), scorer=lambda p, r: torch.zeros(r.shape[:2]), max_rounds=3
        )
    with pytest.raises(ValueError, match="noise must be a probability"):
        make_preference_pairs(TASK, 10, noise=1.5)


def test_split_and_indexing():
    pairs = make_preference_pairs(TASK, 100, torch.Generator().manual_seed(0))
    train, val = pairs.split(0.25, torch.Generator().manual_seed(0))
    assert len(train) == 75 and len(val) == 25
    assert len(pairs[:10]) == 10 and torch.equal(pairs[:10].prompts, pairs.prompts[:10])
    with pytest.raises(ValueError, match=r"true_margin and flipped must have shape \[n\] = \[2\]"):
        PreferencePairs(pairs.prompts[:2], pairs.chosen[:2], pairs.rejected[:2], pairs.true_margin, pairs.flipped[:2])


# ---- training ---------------------------------------------------------------------------------------


def test_reward_model_learns_the_hidden_scorer():
    """4000 sorting pairs (5% of labels flipped), 6 epochs: about 2 s on one CPU thread."""
    pairs = make_preference_pairs(TASK, 4000, torch.Generator().manual_seed(0), noise=0.05)
    model, history = train_reward_model(pairs, vocab_size=5, epochs=6, seed=0)
    final = history.evals[-1]
    assert final["val_true_accuracy"] >= 0.9, final  # measured 0.96
    assert final["val_accuracy"] >= 0.85, final  # measured 0.906; the 5% flipped labels cap it near 0.95
    assert history.evals[0]["val_true_accuracy"] < history.evals[1]["val_true_accuracy"] < final["val_true_accuracy"]
    assert history["loss"][-20:].mean() < history["loss"][:20].mean() < LOG2 + 0.1
    assert set(history.metrics) == {"step", "epoch", "loss", "accuracy"}
    # evaluated before the first epoch and after each one
    assert [e["epoch"] for e in history.evals] == [0, 1, 2, 3, 4, 5, 6]
    assert history.evals[0]["step"] == 0 and history.evals[-1]["step"] == len(history)
    # on fresh pairs, scored against the hidden scorer
    fresh = make_preference_pairs(TASK, 1000, torch.Generator().manual_seed(99), noise=0.0)
    assert pairwise_accuracy(model, fresh) >= 0.9


def test_training_is_seeded():
    pairs = make_preference_pairs(TASK, 200, torch.Generator().manual_seed(0))
    _, h1 = train_reward_model(pairs, epochs=1, seed=3)
    _, h2 = train_reward_model(pairs, epochs=1, seed=3)
    assert h1.records == h2.records and h1.evals == h2.evals
    val = make_preference_pairs(TASK, 30, torch.Generator().manual_seed(1))
    model, h3 = train_reward_model(pairs, val_pairs=val, epochs=1, embedding_dim=8, hidden_dim=8)
    assert len(h3) == 4  # all 200 pairs train (batches of 64) when val_pairs is given
    assert h3.evals[-1]["val_accuracy"] == pairwise_accuracy(model, val)


def test_eval_every_and_errors():
    pairs = make_preference_pairs(TASK, 200, torch.Generator().manual_seed(0))
    _, every_2 = train_reward_model(pairs, epochs=5, eval_every=2, embedding_dim=8, hidden_dim=8)
    assert [e["epoch"] for e in every_2.evals] == [0, 2, 4, 5]  # and always after the last epoch
    _, at_end = train_reward_model(pairs, epochs=3, eval_every=0, embedding_dim=8, hidden_dim=8)
    assert [e["epoch"] for e in at_end.evals] == [3]
    assert at_end.records == train_reward_model(pairs, epochs=3, embedding_dim=8, hidden_dim=8)[1].records
    with pytest.raises(ValueError, match="eval_every must be >= 0"):
        train_reward_model(pairs, eval_every=-1)


def test_loss_fn_is_what_is_minimised():
    """The default loss_fn is bradley_terry_loss; another pair loss is used as given."""
    pairs = make_preference_pairs(TASK, 200, torch.Generator().manual_seed(0))
    small = dict(epochs=2, embedding_dim=8, hidden_dim=8, seed=1)
    _, default = train_reward_model(pairs, **small)
    _, explicit = train_reward_model(pairs, loss_fn=bradley_terry_loss, **small)
    assert default.records == explicit.records

    seen = []

    def hinge(r_chosen, r_rejected):  # a margin loss: 0 once chosen beats rejected by 1
        seen.append(r_chosen.shape)
        return F.relu(1.0 - (r_chosen - r_rejected)).mean()

    model, hinged = train_reward_model(pairs, loss_fn=hinge, **small)
    assert len(seen) == len(hinged) and seen[0] == (64,)
    assert hinged.records[0]["loss"] != default.records[0]["loss"]
    with pytest.raises(ValueError, match=r"loss_fn\(r_chosen, r_rejected\) must return a scalar"):
        train_reward_model(pairs, loss_fn=lambda c, r: F.softplus(r - c), **small)  # the mean forgotten

"""Bradley–Terry, DPO, the reward model and preference pairs, against hand-computed numbers."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from minirl.model import TinyEncoderDecoder
from minirl.preferences import (
    LearnedReward,
    PreferencePairs,
    RewardModel,
    bradley_terry_loss,
    dpo_loss,
    make_preference_pairs,
    pairwise_accuracy,
    sequence_log_probs,
    train_reward_model,
)
from minirl.sampling import compute_log_probs
from toy_envs.sorting import SortingTask

LOG2 = math.log(2.0)


def softplus(x: float) -> float:
    return math.log1p(math.exp(x))


# ---- bradley_terry_loss -------------------------------------------------------------------------


def test_bt_margin_zero_is_log_2():
    r = torch.tensor([0.3, -1.2, 5.0])
    assert bradley_terry_loss(r, r.clone()).item() == pytest.approx(LOG2, abs=1e-6)


def test_bt_hand_value():
    # margins 2, 0, −1, −0.5: mean of softplus(−margin)
    got = bradley_terry_loss(torch.tensor([1.0, 0.5, -1.0, 2.0]), torch.tensor([-1.0, 0.5, 0.0, 2.5]))
    want = (softplus(-2) + LOG2 + softplus(1) + softplus(0.5)) / 4
    assert got.item() == pytest.approx(want, abs=1e-6)
    assert want == pytest.approx(0.7768534658)


@pytest.mark.parametrize("margin, want", [(1000.0, 0.0), (-1000.0, 1000.0), (200.0, 0.0), (-200.0, 200.0)])
def test_bt_large_margins_are_finite(margin, want):
    got = bradley_terry_loss(torch.tensor([margin / 2]), torch.tensor([-margin / 2]))
    assert math.isfinite(got.item())
    assert got.item() == pytest.approx(want, abs=1e-4)


def test_bt_depends_only_on_the_difference():
    gen = torch.Generator().manual_seed(0)
    rc, rr = torch.randn(7, generator=gen), torch.randn(7, generator=gen)
    torch.testing.assert_close(bradley_terry_loss(rc + 3.0, rr + 3.0), bradley_terry_loss(rc, rr))


def test_bt_gradient_raises_chosen_and_lowers_rejected():
    rc = torch.tensor([0.0, 1.0, -2.0], requires_grad=True)
    rr = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    bradley_terry_loss(rc, rr).backward()
    # dL/dr_c = −σ(−m)/N, dL/dr_r = +σ(−m)/N; at m = 0: ∓0.5/3
    want = -torch.sigmoid(-(rc - rr).detach()) / 3
    torch.testing.assert_close(rc.grad, want)
    torch.testing.assert_close(rr.grad, -want)
    assert (rc.grad < 0).all() and (rr.grad > 0).all()  # gradient descent raises r_chosen, lowers r_rejected
    assert rc.grad[0].item() == pytest.approx(-0.5 / 3)


def test_bt_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"r_rejected must have shape \[batch\]"):
        bradley_terry_loss(torch.zeros(3), torch.zeros(3, 1))
    with pytest.raises(ValueError, match=r"shape mismatch: r_chosen \[3\], r_rejected \[2\]"):
        bradley_terry_loss(torch.zeros(3), torch.zeros(2))
    with pytest.raises(TypeError, match="r_chosen must be a float tensor"):
        bradley_terry_loss(torch.zeros(3, dtype=torch.long), torch.zeros(3))


# ---- dpo_loss ---------------------------------------------------------------------------------------

PC, PR, RC, RR = (torch.tensor(x) for x in ([-5.0, -8.0], [-7.0, -6.0], [-6.0, -8.0], [-6.0, -7.0]))


@pytest.mark.parametrize("beta, want_loss, want_chosen, want_rejected", [
    # log-ratios chosen [1, 0], rejected [−1, 1]; margins β·[2, −1]
    (0.5, (softplus(-1.0) + softplus(0.5)) / 2, [0.5, 0.0], [-0.5, 0.5]),
    (0.1, (softplus(-0.2) + softplus(0.1)) / 2, [0.1, 0.0], [-0.1, 0.1]),
])
def test_dpo_hand_numbers(beta, want_loss, want_chosen, want_rejected):
    loss, chosen, rejected = dpo_loss(PC, PR, RC, RR, beta)
    assert loss.item() == pytest.approx(want_loss, abs=1e-6)
    torch.testing.assert_close(chosen, torch.tensor(want_chosen))
    torch.testing.assert_close(rejected, torch.tensor(want_rejected))
    torch.testing.assert_close(chosen - rejected, beta * torch.tensor([2.0, -1.0]))  # the margins
    assert {0.5: 0.6436693358, 0.1: 0.6712677647}[beta] == pytest.approx(want_loss)


def test_dpo_is_bradley_terry_on_the_implicit_rewards():
    gen = torch.Generator().manual_seed(1)
    pc, pr, rc, rr = (-10 * torch.rand(8, generator=gen) for _ in range(4))
    for beta in (0.05, 0.1, 1.0):
        loss, chosen, rejected = dpo_loss(pc, pr, rc, rr, beta)
        torch.testing.assert_close(chosen, beta * (pc - rc))
        torch.testing.assert_close(rejected, beta * (pr - rr))
        torch.testing.assert_close(loss, bradley_terry_loss(chosen, rejected))


def test_dpo_at_the_reference_is_log_2_and_default_beta():
    pc, pr = torch.tensor([-3.0, -9.0]), torch.tensor([-4.0, -1.0])
    loss, chosen, rejected = dpo_loss(pc, pr, pc.clone(), pr.clone())  # π_θ = π_ref
    assert loss.item() == pytest.approx(LOG2)
    assert chosen.abs().max() == 0 and rejected.abs().max() == 0
    loss, chosen, _ = dpo_loss(PC, PR, RC, RR)
    torch.testing.assert_close(chosen, torch.tensor([0.1, 0.0]))  # beta = 0.1 by default, as in TRL


def test_dpo_gradient_and_detached_rewards():
    pc, pr = PC.clone().requires_grad_(True), PR.clone().requires_grad_(True)
    rc, rr = RC.clone().requires_grad_(True), RR.clone().requires_grad_(True)
    loss, chosen, rejected = dpo_loss(pc, pr, rc, rr, 0.5)
    assert not chosen.requires_grad and not rejected.requires_grad
    loss.backward()
    # dL/d log π(y_w) = −β σ(−margin) / N, margins [1, −0.5]
    want = -0.5 * torch.sigmoid(-torch.tensor([1.0, -0.5])) / 2
    torch.testing.assert_close(pc.grad, want)
    torch.testing.assert_close(pr.grad, -want)
    assert rc.grad is None and rr.grad is None  # the reference is frozen


def test_dpo_large_margins_are_finite():
    loss, _, _ = dpo_loss(torch.tensor([-400.0]), torch.tensor([-5.0]), torch.tensor([-10.0]),
                          torch.tensor([-6.0]), 0.5)
    assert loss.item() == pytest.approx(195.5)


def test_dpo_errors():
    with pytest.raises(ValueError, match="beta must be > 0"):
        dpo_loss(PC, PR, RC, RR, 0.0)
    with pytest.raises(ValueError, match=r"ref_rejected_logps must have shape \[batch\]"):
        dpo_loss(PC, PR, RC, RR.unsqueeze(0))
    with pytest.raises(ValueError, match="shape mismatch"):
        dpo_loss(PC, PR, RC, RR[:1])


def test_sequence_log_probs_sums_token_log_probs():
    model = TinyEncoderDecoder(5, 4, 3, 3, generator=torch.Generator().manual_seed(0))
    prompts = torch.tensor([[0, 1, 2], [4, 4, 1]])
    responses = torch.tensor([[1, 2, 0], [3, 3, 4]])
    tokens = compute_log_probs(prompts, responses.unsqueeze(1), model).squeeze(1)
    torch.testing.assert_close(sequence_log_probs(model, prompts, responses), tokens.sum(-1))
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    torch.testing.assert_close(sequence_log_probs(model, prompts, responses, mask), (tokens * mask).sum(-1))
    grouped = sequence_log_probs(model, prompts, responses.unsqueeze(1))
    assert grouped.shape == (2, 1)
    with pytest.raises(ValueError, match="mask must have the shape of responses"):
        sequence_log_probs(model, prompts, responses, mask[:, :2])


# ---- the reward model -------------------------------------------------------------------------------


def test_reward_model_shapes_and_groups():
    model = RewardModel(6, 8, 4, 3, generator=torch.Generator().manual_seed(0))
    prompts = torch.randint(0, 6, (5, 4))
    responses = torch.randint(0, 6, (5, 2, 3))
    grouped = model(prompts, responses)
    assert grouped.shape == (5, 2)
    torch.testing.assert_close(grouped[:, 1], model(prompts, responses[:, 1]))
    assert model(prompts, responses[:, 0]).shape == (5,)
    torch.testing.assert_close(LearnedReward(model)(prompts, responses), grouped.detach())
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


def test_pairwise_accuracy_by_hand():
    pairs = PreferencePairs(prompts=torch.zeros(4, 1, dtype=torch.long),
                            chosen=torch.tensor([[3], [1], [2], [0]]), rejected=torch.tensor([[1], [3], [2], [2]]),
                            true_margin=torch.ones(4), flipped=torch.zeros(4, dtype=torch.bool))

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

    pairs = make_preference_pairs(TASK, 50, torch.Generator().manual_seed(0), scorer=first_token, noise=0.0,
                                  policy=policy)
    assert (pairs.chosen[:, 0] > pairs.rejected[:, 0]).all()
    torch.testing.assert_close(pairs.true_margin, (pairs.chosen[:, 0] - pairs.rejected[:, 0]).float())


def test_pairs_error_when_everything_ties():
    with pytest.raises(ValueError, match="nearly always tie"):
        make_preference_pairs(TASK, 10, torch.Generator().manual_seed(0), scorer=lambda p, r: torch.zeros(
            r.shape[:2]), max_rounds=3)
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
    assert history.evals[0]["val_true_accuracy"] < final["val_true_accuracy"]
    assert history["loss"][-20:].mean() < history["loss"][:20].mean() < LOG2 + 0.1
    assert set(history.metrics) == {"step", "epoch", "loss", "accuracy"}
    assert len(history.evals) == 6 and history.evals[-1]["step"] == len(history)
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


def test_bt_loss_equals_logsigmoid_form():
    r = torch.randn(2, 5, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(bradley_terry_loss(r[0], r[1]), F.softplus(r[1] - r[0]).mean())

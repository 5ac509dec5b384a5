"""The presets: the ladder changes one knob per rung (one documented exception), and the knobs reach the loss."""

import inspect

import pytest
import torch

from minirl import ALGORITHMS, ToyPolicy, make_model
from minirl.losses import policy_loss
from minirl.train import policy_update
from tests.tolerances import assert_close_f32
from toy_envs import SortingTask

LADDER = ["naive", "baselined", "normalized", "unclipped", "clipped", "clipped_entropy", "grpo"]


def test_each_rung_changes_one_knob_of_the_rung_below():
    changes = {hi: ALGORITHMS[hi].changed_knobs(ALGORITHMS[lo]) for lo, hi in zip(LADDER, LADDER[1:])}
    assert {k: sorted(v) for k, v in changes.items()} == {
        "baselined": ["delta_mode"],
        "normalized": ["delta_mode"],
        "unclipped": ["importance_ratio", "inner_epochs"],  # the ratio alone is inert: see the next test
        "clipped": ["clip_eps_low"],
        "clipped_entropy": ["entropy_coef"],
        "grpo": ["kl_coef", "ref_refresh_every"],  # the KL term and its anchor's refresh rate
    }


def test_the_ratio_alone_gives_the_naive_gradient():
    """At one inner epoch ρ = π_θ / π_old ≡ 1 and ∇(ρΔ) = Δ ∇log π_θ: turning on the ratio without reusing the
    batch changes nothing, which is why `unclipped` turns it on together with several inner epochs."""
    task = SortingTask(vocab_size=5, length=3)
    prompts = task.sample_prompts(8, torch.Generator().manual_seed(0))
    responses = torch.randint(0, 5, (8, 4, 3), generator=torch.Generator().manual_seed(1))
    advantages = torch.randn(8, 4, generator=torch.Generator().manual_seed(2))
    grads = []
    for algo in (ALGORITHMS["normalized"], ALGORITHMS["normalized"].with_(importance_ratio=True)):
        policy = ToyPolicy(make_model(task, seed=0))
        optimizer = torch.optim.SGD(policy.parameters(), lr=0.0)
        policy_update(policy, optimizer, algo, prompts, policy.rollout_from_tokens(responses), advantages)
        grads.append(torch.cat([p.grad.flatten() for p in policy.parameters()]))
    assert grads[0].abs().sum() > 0
    # ∇ρ = ρ ∇log π_θ with ρ = 1 computes the same sums through one more product (tests/tolerances.py): each entry
    # adds 8 x 4 responses of 3 tokens (96 rows) and crosses the toy model's width-32 dot products at 3 positions
    # and its 5-token softmax, forward and backward: ~300 terms
    assert_close_f32(grads[0], grads[1], terms=300)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_policy_loss_kwargs_are_policy_loss_arguments(name):
    kwargs = ALGORITHMS[name].policy_loss_kwargs()
    assert set(kwargs) <= set(inspect.signature(policy_loss).parameters)
    assert kwargs["kl_coef"] == ALGORITHMS[name].kl_coef and kwargs["aggregation"] == ALGORITHMS[name].aggregation

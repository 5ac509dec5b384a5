"""The checks' machinery (minirl.checks._core), and what every exercise check must do, whatever it checks: pass
the reference, call a stub "not implemented yet", raise in strict mode, report any exception from the learner's
code in one line, and accept a correct function computed in another order."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from check_helpers import ALL_CHECKS, REFERENCES, caught, nudged, run, stub

import minirl
from minirl import checks
from minirl.checks import check_compute_deltas, tiny_forward, use_reference
from minirl.checks._core import RTOL, Check, CheckFailure, format_tensor, numbers_close, tensors_close

by_name = pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)


def test_every_check_is_exported_and_listed_here():
    exported = {name for name in checks.__all__ if name.startswith("check_")}
    assert exported == {c.__name__ for c in ALL_CHECKS}


@by_name
def test_reference_passes(check, capsys):
    ok, line = run(check, REFERENCES[check], capsys)
    name = check.__name__.removeprefix("check_")
    assert ok is True
    assert line.startswith(f"✔ {name}: all ") and line.endswith(" checks passed"), line


@by_name
def test_stub_is_not_implemented_yet(check, capsys):
    ok, line = run(check, stub, capsys)
    assert ok is False
    assert line.startswith("○ ") and "not implemented yet" in line and "reference version" in line


@by_name
def test_strict_mode_raises_on_failure_and_on_stub(check, monkeypatch):
    monkeypatch.setenv("MINIRL_STRICT", "1")
    with pytest.raises(AssertionError, match="not implemented yet"):
        check(stub)

    def broken(*args, **kwargs):
        raise ValueError("oops")

    with pytest.raises(AssertionError, match=r"✘ .*raised ValueError.*oops"):
        check(broken)
    assert check(REFERENCES[check]) is True  # strict mode changes nothing for a passing function


@by_name
def test_any_exception_is_one_line(check, capsys):
    def broken(*args, **kwargs):
        raise KeyError("some key")

    line = caught(check, broken, capsys, "raised KeyError", "some key")
    assert "\n" not in line and check.__name__.removeprefix("check_") in line


@by_name
def test_not_implemented_line_echoes_the_stubs_hint(check, capsys):
    def hinted(*args, **kwargs):
        raise NotImplementedError("subtract the group mean, keepdim=True")

    ok, line = run(check, hinted, capsys)
    assert ok is False and line.startswith("○ ")
    assert "(hint: subtract the group mean, keepdim=True)" in line and "reference version" in line


def test_the_default_stub_message_is_not_echoed(capsys):
    ok, line = run(checks.check_compute_deltas, stub, capsys)
    assert ok is False and "hint" not in line and "replace this line" not in line


def deltas_without(*missing: str, hint: str = "divide by the std"):
    """compute_deltas with some modes still raising NotImplementedError (the others right)."""
    import minirl

    def compute_deltas(rewards, mode):
        if mode in missing:
            raise NotImplementedError(hint)
        return minirl.compute_deltas(rewards, mode)

    return compute_deltas


def test_multi_mode_says_which_modes_pass_and_which_remain(capsys):
    ok, line = run(checks.check_compute_deltas, deltas_without("normalized_rewards"), capsys)
    assert ok is False and line.startswith(
        "○ compute_deltas: 'rewards', 'centered_rewards' already pass; "
        "'normalized_rewards' not implemented yet (hint: divide by the std)"
    )
    ok, line = run(checks.check_compute_deltas, deltas_without("centered_rewards", "normalized_rewards"), capsys)
    assert "'rewards' already passes; 'centered_rewards', 'normalized_rewards' not implemented yet" in line
    ok, line = run(
        checks.check_compute_deltas, deltas_without("rewards", "centered_rewards", "normalized_rewards"), capsys
    )
    assert line.startswith("○ compute_deltas: not implemented yet (hint: divide by the std)"), line


def test_multi_mode_a_wrong_mode_beats_a_missing_one(capsys):
    import minirl

    def compute_loss(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
        if mode == "naive":
            return (log_probs * deltas[..., None]).mean()  # the sign flipped
        if mode == "unclipped":
            return minirl.compute_loss(log_probs, deltas, mode, old_log_probs, epsilon)
        raise NotImplementedError("clip, then take the min")

    caught(checks.check_compute_loss, compute_loss, capsys, "naive", "wrong sign")


@pytest.mark.parametrize(
    "check, modes, missing",
    [
        (checks.check_compute_loss, ("naive", "unclipped"), "clipped"),
        (checks.check_kl_estimate, ("k1", "k2"), "k3"),
    ],
    ids=["compute_loss", "kl_estimate"],
)
def test_multi_mode_partial_for_other_exercises(check, modes, missing, capsys):
    reference = REFERENCES[check]

    def partial(*args):
        if missing in args:
            raise NotImplementedError
        return reference(*args)

    ok, line = run(check, partial, capsys)
    assert ok is False and line.startswith("○ ")
    assert f"{', '.join(repr(m) for m in modes)} already pass; {missing!r} not implemented yet" in line, line


def test_a_stub_with_a_hint_per_mode_echoes_the_first_pending_modes_hint(capsys):
    """Notebook 04's stub: one hint for 'naive', another for both ratio modes; the line ends with the first."""

    def compute_loss(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
        if mode == "naive":
            raise NotImplementedError("−mean(Δ · log π); deltas[..., None] spreads Δ over the positions")
        raise NotImplementedError("the importance ratio ρ = π_θ / π_old: subtract, then exponentiate")

    ok, line = run(checks.check_compute_loss, compute_loss, capsys)
    assert ok is False
    assert line.startswith(
        "○ compute_loss: not implemented yet (hint for 'naive': −mean(Δ · log π); "
        "deltas[..., None] spreads Δ over the positions) — fill in the exercise above"
    ), line

    def naive_done(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
        if mode == "naive":
            return minirl.compute_loss(log_probs, deltas, mode)
        if mode == "unclipped":
            raise NotImplementedError("the ratio first")
        raise NotImplementedError("then clip")

    ok, line = run(checks.check_compute_loss, naive_done, capsys)
    assert (
        "'naive' already passes; 'unclipped', 'clipped' not implemented yet (hint for 'unclipped': the ratio "
        "first)" in line
    ), line


# ---- the tolerance rule (minirl.checks._core: tensors_close, numbers_close) ------------------------------


def test_tolerance_is_relative_to_the_scale_of_the_values():
    # float32 noise on a value that should be 0, computed from inputs of order 1: a few ulps of 1, not of 0
    assert tensors_close(torch.tensor([0.0, 3e-7, -6e-7]), torch.zeros(3))
    assert not tensors_close(torch.tensor([0.0, 1e-3]), torch.zeros(2))
    # on values of order 200 (DPO's confident margins) the same relative noise is 200 times larger
    want = torch.tensor([200.0, -195.5, 0.25])
    assert tensors_close(want + torch.tensor([2e-3, -2e-3, 2e-3]), want)
    assert not tensors_close(want + torch.tensor([0.0, 0.0, 0.1]), want)
    # a caller whose inputs are large passes their scale
    assert tensors_close(torch.tensor(1e-3), torch.tensor(0.0), scale=100.0)
    assert not tensors_close(torch.tensor(1e-3), torch.tensor(0.0))
    assert not tensors_close(torch.zeros(2, 3), torch.zeros(3, 2))
    assert not tensors_close(torch.tensor([float("nan")]), torch.tensor([float("nan")]))
    assert tensors_close(torch.tensor([float("-inf"), 1.0]), torch.tensor([float("-inf"), 1.0]))
    assert not tensors_close(torch.tensor([float("-inf")]), torch.tensor([-120.0]))
    assert numbers_close(10 / 3 + 2e-6, 10 / 3) and not numbers_close(10 / 3 + 1e-2, 10 / 3)
    assert numbers_close(1e-5, 0.0) and not numbers_close(1e-3, 0.0)
    assert RTOL == pytest.approx(800 * torch.finfo(torch.float32).eps, rel=0.05)  # the documented ~800 ulps


def test_tolerance_covers_float32_reduction_orders():
    """A float32 sum of 1000 terms in ascending, descending and pairwise order, against the exact float64 sum."""
    terms = torch.randn(1000, generator=torch.Generator().manual_seed(0)) * 3.0
    exact = terms.double().sum()
    sequential = torch.zeros((), dtype=torch.float32)
    for t in terms.sort().values:  # one term at a time: the worst common order
        sequential = sequential + t
    for got in (terms.sum(), sequential, terms.flip(0).sum(), terms.view(10, 100).sum(1).sum()):
        assert tensors_close(got, exact, scale=float(terms.abs().max()))
    assert not tensors_close(terms.sum() - terms[0], exact, scale=float(terms.abs().max()))  # one term left out


@pytest.mark.parametrize(
    "check", [c for c in ALL_CHECKS if c is not checks.check_grpo_config_kwargs], ids=lambda c: c.__name__
)
def test_a_correct_function_computed_in_another_order_passes(check, capsys):
    """The reference with every float result moved by 64 float32 ulps of its scale (what another order of the
    same sums, another dtype or thread count can do on the checks' small inputs) still passes."""
    reference = REFERENCES[check]

    def reordered(*args, **kwargs):
        return nudged(reference(*args, **kwargs))

    ok, line = run(check, reordered, capsys)
    assert ok is True, line


@pytest.mark.parametrize(
    "check", [c for c in ALL_CHECKS if c is not checks.check_grpo_config_kwargs], ids=lambda c: c.__name__
)
def test_every_check_passes_on_one_thread_and_on_several(check, capsys):
    threads = torch.get_num_threads()
    try:
        for n in (1, max(2, threads)):
            torch.set_num_threads(n)
            ok, line = run(check, REFERENCES[check], capsys)
            assert ok is True, (n, line)
    finally:
        torch.set_num_threads(threads)


def aggregate_divide_then_sum(per_token, mask, aggregation="sequence_mean", max_length=None):
    """minirl.aggregate's three rules, each divided before it is summed (the reference sums first)."""
    n_seq = per_token.shape[0] * per_token.shape[1]
    if aggregation == "sequence_mean":
        weights = mask / mask.sum(-1, keepdim=True).clamp(min=1) / n_seq
        return (per_token * weights).sum()
    if aggregation == "token_mean":
        return (per_token * (mask / mask.sum().clamp(min=1))).sum()
    return (per_token.masked_fill(mask == 0, 0.0) / (n_seq * (max_length or per_token.shape[-1]))).sum()


def reinforce_masked_fill(log_probs, advantages, mask):
    per_step = (advantages.detach() * log_probs).masked_fill(mask == 0, 0.0)
    return -(per_step / per_step.numel()).sum()


def forward_matmul(embedding, encode_weights, decode_weights, prompts):
    embedded = embedding[prompts]  # [batch, pos, dim]
    h = (embedded.unsqueeze(-2) @ encode_weights).squeeze(-2).sum(1)  # [batch, dim]
    decoded = torch.stack([h @ w for w in decode_weights], dim=1)  # [batch, pos, dim]
    return decoded @ embedding.T


def compute_loss_sum_over_numel(log_probs, deltas, mode, old_log_probs=None, epsilon=0.2):
    d = deltas[..., None].expand_as(log_probs)
    if mode == "naive":
        per_token = log_probs * d
    else:
        ratio = (log_probs.double() - old_log_probs.double()).exp()  # in float64, cast back at the end
        per_token = (
            torch.minimum(ratio * d, ratio.clamp(1 - epsilon, 1 + epsilon) * d) if mode == "clipped" else ratio * d
        )
    return (-per_token.sum() / per_token.numel()).to(log_probs.dtype)


def dpo_regrouped(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta):
    """The margin as (π_w − π_l) − (ref_w − ref_l) instead of (π_w − ref_w) − (π_l − ref_l)."""
    margin = beta * ((policy_chosen_logps - policy_rejected_logps) - (ref_chosen_logps - ref_rejected_logps))
    return (
        -F.logsigmoid(margin).mean(),
        beta * (policy_chosen_logps - ref_chosen_logps).detach(),
        beta * (policy_rejected_logps - ref_rejected_logps).detach(),
    )


def bellman_float32(maze, policy, values_next):
    """The backup in float32 torch (the reference works in float64 numpy)."""
    pi = torch.as_tensor(np.asarray(policy), dtype=torch.float32)
    v = torch.as_tensor(np.asarray(values_next), dtype=torch.float32)
    nxt = torch.tensor(maze.next_cell_table)
    enters = nxt == maze.goal
    q = torch.where(enters, torch.tensor(float(maze.goal_reward)), v[nxt].masked_fill(enters, 0.0))
    values = torch.einsum("sa,sa->s", pi, q)
    values[maze.goal] = 0.0
    return values


def gae_forward_weights(rewards, values, next_values, dones, gamma, lam):
    """GAE as an explicit weighted sum of the TD errors (no backward recursion), in float64."""
    r, v, nv, d = (x.double() for x in (rewards, values, next_values, dones))
    deltas = r + gamma * (1 - d) * nv - v
    T = r.shape[-1]
    out = torch.zeros_like(deltas)
    for t in range(T):
        weight = torch.ones_like(deltas[..., 0])
        for k in range(t, T):
            out[..., t] += weight * deltas[..., k]
            weight = weight * gamma * lam * (1 - d[..., k])
    return out.to(rewards.dtype)


@pytest.mark.parametrize(
    "check, fn",
    [
        (checks.check_aggregate, aggregate_divide_then_sum),
        (checks.check_reinforce_loss, reinforce_masked_fill),
        (checks.check_forward, forward_matmul),
        (checks.check_compute_loss, compute_loss_sum_over_numel),
        (checks.check_dpo_loss, dpo_regrouped),
        (checks.check_bellman_backup, bellman_float32),
        (checks.check_compute_gae, gae_forward_weights),
    ],
    ids=["aggregate", "reinforce_loss", "forward", "compute_loss", "dpo_loss", "bellman_backup", "compute_gae"],
)
def test_correct_implementations_in_another_order_pass(check, fn, capsys):
    ok, line = run(check, fn, capsys)
    assert ok is True, line


def test_the_tolerance_still_rejects_a_result_off_by_a_thousandth(capsys):
    """Tight enough: the reference's loss moved by 1e-3 of its scale fails, with the numbers."""

    def off(*args, **kwargs):
        loss, chosen, rejected = minirl.dpo_loss(*args, **kwargs)
        return loss + 1e-3 * max(1.0, abs(float(loss.detach()))), chosen, rejected

    caught(checks.check_dpo_loss, off, capsys, "loss (the worked example, beta=0.5): expected 0.6437, got 0.6447")


def test_close_names_a_mistake_on_the_mistakes_own_scale():
    c = Check("x")
    want = torch.tensor([0.5, -0.25])
    summed = want * 40 + torch.tensor([4e-4, -4e-4])  # a sum for a mean, with a sum's own float32 noise
    with pytest.raises(CheckFailure, match="you summed"):  # 4e-4 off: within 1e-4 of the sum's scale 20, not of 1
        c.close(summed, want, "loss", [(want * 40, "you summed; take the mean")])


# ---- the machinery (minirl.checks._core: Check, format_tensor, use_reference) --------------------------------


def test_a_value_instead_of_a_function(capsys):
    caught(check_compute_deltas, 3.0, capsys, "expected a function", "check_compute_deltas(compute_deltas)")


def test_checks_never_modify_global_rng(capsys):
    torch.manual_seed(0)
    state = torch.get_rng_state()
    for check in ALL_CHECKS:
        check(REFERENCES[check])
    assert torch.equal(torch.get_rng_state(), state)


def test_shape_message():
    c = Check("compute_log_probs")
    with pytest.raises(
        CheckFailure,
        match=r"^log_probs: expected shape \[batch, trial, pos\] = \[2, 4, 3\], "
        r"got \[2, 3\] — keep the trial axis$",
    ):
        c.shape(torch.zeros(2, 3), [2, 4, 3], "batch, trial, pos", "log_probs", {(2, 3): "keep the trial axis"})
    assert c.shape(torch.zeros(2, 4, 3), [2, 4, 3], "batch, trial, pos", "log_probs") is not None
    assert c.passed == 3  # is-a-tensor twice, right shape once


def test_close_message_shows_expected_and_got():
    c = Check("x")
    with pytest.raises(CheckFailure, match=r"deltas: expected \[\[1\.0, 0\.3333\]\], got \[\[1\.0, 0\.5\]\]"):
        c.close(torch.tensor([[1.0, 0.5]]), torch.tensor([[1.0, 1 / 3]]), "deltas")
    with pytest.raises(CheckFailure, match="deltas: wrong sign"):
        c.close(
            torch.tensor([-1.0, -2.0]), torch.tensor([1.0, 2.0]), "deltas", [(torch.tensor([-1.0, -2.0]), "wrong sign")]
        )
    with pytest.raises(CheckFailure, match=r"wrong values at \[1, 2\]: expected 0\.0, got 5\.0"):
        big = torch.zeros(4, 5)
        c.close(big.clone().index_put_((torch.tensor(1), torch.tensor(2)), torch.tensor(5.0)), big, "x")
    assert format_tensor(torch.tensor(float("nan"))) == "nan"
    assert format_tensor(torch.arange(20.0)).startswith("<tensor of shape [20]: 0.0, 1.0")


def test_use_reference(capsys):
    def compute_deltas(rewards, mode):
        raise NotImplementedError

    assert use_reference(compute_deltas, minirl.compute_deltas, False) is minirl.compute_deltas
    assert capsys.readouterr().out == "↪ compute_deltas: using the reference minirl.compute_deltas from here on\n"
    assert use_reference(compute_deltas, minirl.compute_deltas, True) is compute_deltas
    assert "using your version" in capsys.readouterr().out
    assert use_reference(None, tiny_forward, True) is tiny_forward
    assert "minirl.checks.tiny_forward" in capsys.readouterr().out


def test_package_exports_every_check():
    assert {c.__name__ for c in ALL_CHECKS} <= set(checks.__all__)
    assert {"use_reference", "exercise_check", "Check", "tiny_forward"} <= set(checks.__all__)
    for name in checks.__all__:
        assert hasattr(checks, name)

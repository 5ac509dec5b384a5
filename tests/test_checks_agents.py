"""The checks of notebook 12 accept the references and catch the plausible wrong implementations, each with a
message that names the mistake; and ``minirl.episodes.episode_ids_and_mask``, the reference of the first.

Tolerances: the hand-worked expected values are short decimals, and the references recompute them in float64 from
the same inputs: a few float64 ulps apart (``abs=1e-12``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from check_helpers import caught, nudged, run, stub

import minirl
from minirl.advantages import token_gae
from minirl.checks import check_episode_ids_and_mask, check_token_gae
from minirl.checks import nb12_agents as checks
from minirl.checks._core import tensors_close
from minirl.episodes import episode_ids_and_mask, episode_rollout

REFERENCES = {check_episode_ids_and_mask: episode_ids_and_mask, check_token_gae: token_gae}
by_check = pytest.mark.parametrize("check", list(REFERENCES), ids=lambda c: c.__name__)

# ---- episode_ids_and_mask, the reference ----------------------------------------------------------------------


def test_the_docstrings_example():
    assert episode_ids_and_mask([([5, 6, 2], [7, 8]), ([4, 2], [])]) == ([5, 6, 2, 7, 8, 4, 2], [1, 1, 1, 0, 0, 1, 1])
    assert episode_ids_and_mask([]) == ([], [])


@pytest.mark.parametrize(
    "episode",
    [[([1, 2],)], [[1, 2]], [([1, 2], (3,))], [([1, 2], [3], [4])], [([1, 2], [3]), "turn"]],
    ids=["one list", "ids, not a pair", "a tuple of ids", "a triple", "a string"],
)
def test_a_turn_that_is_not_a_pair_of_lists_is_refused(episode):
    with pytest.raises(ValueError, match=r"episode must be a sequence of \(reply ids, env turn ids\) pairs of lists"):
        episode_ids_and_mask(episode)


def test_episode_rollout_lays_out_each_episode_with_it():
    turns = [[([5, 6, 2], [7, 8]), ([4, 2], [])], [([3, 2], [])]]
    policy = SimpleNamespace(pad_token_id=0, device="cpu")
    rollout = episode_rollout(policy, turns, [[None, None]], 8, torch.zeros(2, dtype=torch.bool))
    assert rollout.tokens.tolist() == [[[5, 6, 2, 7, 8, 4, 2], [3, 2, 0, 0, 0, 0, 0]]]
    assert rollout.mask.tolist() == [[[1, 1, 1, 0, 0, 1, 1], [1, 1, 0, 0, 0, 0, 0]]]


# ---- what every check does ------------------------------------------------------------------------------------


def test_the_checks_are_exported():
    assert {"check_episode_ids_and_mask", "check_token_gae"} <= set(minirl.checks.__all__)


@by_check
def test_the_reference_passes_also_computed_in_another_order(check, capsys):
    reference = REFERENCES[check]
    for fn in (reference, lambda *a, **k: nudged(reference(*a, **k))):
        ok, line = run(check, fn, capsys)
        name = check.__name__.removeprefix("check_")
        assert ok is True and line.startswith(f"✔ {name}: all ") and line.endswith(" checks passed"), line


@by_check
def test_a_stub_is_not_implemented_yet_and_its_hint_is_echoed(check, capsys):
    ok, line = run(check, stub, capsys)
    assert ok is False and line.startswith("○ ") and "not implemented yet" in line and "reference version" in line

    def hinted(*args, **kwargs):
        raise NotImplementedError("skip the environment's tokens")

    ok, line = run(check, hinted, capsys)
    assert ok is False and "(hint: skip the environment's tokens)" in line


@by_check
def test_strict_mode_raises_and_any_exception_is_one_line(check, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("some key")

    line = caught(check, broken, capsys, "raised KeyError", "some key")
    assert check.__name__.removeprefix("check_") in line
    monkeypatch.setenv("MINIRL_STRICT", "1")
    with pytest.raises(AssertionError, match="not implemented yet"):
        check(stub)
    with pytest.raises(AssertionError, match=r"✘ .*raised KeyError"):
        check(broken)
    assert check(REFERENCES[check]) is True


# ---- check_episode_ids_and_mask -------------------------------------------------------------------------------


def test_the_hand_worked_episodes_agree_with_the_reference():
    for episode, ids, mask, why in checks.EPISODE_CASES:
        assert episode_ids_and_mask(episode) == (ids, mask), why


def test_the_worked_episodes_mistakes_are_told_apart():
    episode, ids, mask, _ = checks.EPISODE_CASES[0]
    for mistakes, right in ((checks._ids_mistakes(episode), ids), (checks._mask_mistakes(episode), mask)):
        values = {}
        for value, message in mistakes:
            assert value != right, message
            assert values.setdefault(str(value), message) == message, (value, message)


def test_episode_ids_and_mask_accepts_tensors_and_tuples(capsys):
    def as_tensors(episode):
        ids, mask = episode_ids_and_mask(episode)
        return torch.tensor(ids), torch.tensor(mask, dtype=torch.bool)

    def as_tuples(episode):
        return tuple(tuple(x) for x in episode_ids_and_mask(episode))

    for fn in (as_tensors, as_tuples):
        ok, line = run(check_episode_ids_and_mask, fn, capsys)
        assert ok, line


def env_in_loss(episode):
    ids, _ = episode_ids_and_mask(episode)
    return ids, [1] * len(ids)


def inverted(episode):
    ids, mask = episode_ids_and_mask(episode)
    return ids, [1 - m for m in mask]


def end_token_left_out(episode):
    ids, mask = [], []
    for reply, env in episode:
        ids += reply + env
        mask += [1] * len(reply[:-1]) + [0] + [0] * len(env)  # the reply's tokens "before its end"
    return ids, mask


def eos_id_left_out(episode):
    ids, mask = episode_ids_and_mask(episode)
    return ids, [m if i != checks.EOS else 0 for i, m in zip(ids, mask)]


def env_before_reply(episode):
    ids, mask = [], []
    for reply, env in episode:
        ids += env + reply
        mask += [0] * len(env) + [1] * len(reply)
    return ids, mask


def mask_in_the_wrong_order(episode):
    ids, _ = episode_ids_and_mask(episode)
    return ids, env_before_reply(episode)[1]


def only_the_last_turn(episode):
    for reply, env in episode:
        ids, mask = reply + env, [1] * len(reply) + [0] * len(env)
    return ids, mask


def env_ids_dropped(episode):
    ids = [i for reply, _ in episode for i in reply]
    return ids, [1] * len(ids)


def mask_of_the_replies_only(episode):
    ids, _ = episode_ids_and_mask(episode)
    return ids, [1 for reply, _ in episode for _ in reply]


def extends_the_first_reply(episode):
    ids, mask = episode[0][0], []  # the reply's own list
    for i, (reply, env) in enumerate(episode):
        ids += (reply if i else []) + env
        mask += [1] * len(reply) + [0] * len(env)
    return ids, mask


@pytest.mark.parametrize(
    "fn, keywords",
    [
        (env_in_loss, ["1 on the environment's tokens too", "in the loss"]),
        (inverted, ["inverted"]),
        (end_token_left_out, ["end-of-sequence id is the model's too", "mask 1 on it"]),
        (eos_id_left_out, ["end-of-sequence id is the model's too"]),
        (env_before_reply, ["the model's reply comes first"]),
        (mask_in_the_wrong_order, ["the mask follows the ids"]),
        (only_the_last_turn, ["not only the last one"]),
        (env_ids_dropped, ["the environment's ids stay in the sequence"]),
        (mask_of_the_replies_only, ["one per id"]),
        (extends_the_first_reply, ["changed the episode it was given"]),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_episode_ids_and_mask_names_the_mistakes(fn, keywords, capsys):
    caught(check_episode_ids_and_mask, fn, capsys, *keywords)


def test_a_mistake_on_the_worked_episode_shows_its_numbers(capsys):
    line = caught(check_episode_ids_and_mask, inverted, capsys)
    assert line == (
        "✘ episode_ids_and_mask: episode_ids_and_mask([([5, 6, 2], [7, 8]), ([4, 2], [])]) (a reply, the "
        "environment's answer, and the last reply; 2 is the end-of-sequence id): mask [0, 0, 0, 1, 1, 0, 0] — your "
        "mask is inverted: 1 on the model's reply ids (its actions, in the loss), 0 on the environment's; expected "
        "[1, 1, 1, 0, 0, 1, 1]"
    )


# ---- check_token_gae ------------------------------------------------------------------------------------------


def _case_inputs(case, dtype=torch.float64):
    _, outcome, values, mask, kwargs, adv, ret = case
    kwargs = {k: torch.tensor(v, dtype=dtype) if k == "kl" else v for k, v in kwargs.items()}
    inputs = (torch.tensor(outcome, dtype=dtype), torch.tensor(values, dtype=dtype), torch.tensor(mask, dtype=dtype))
    return inputs, kwargs, torch.tensor(adv, dtype=dtype), torch.tensor(ret, dtype=dtype)


@pytest.mark.parametrize("case", checks.GAE_CASES, ids=lambda c: c[0][:40])
def test_the_hand_worked_advantages_agree_with_the_reference(case):
    inputs, kwargs, adv, ret = _case_inputs(case)
    got_adv, got_ret = token_gae(*inputs, **kwargs)
    assert torch.allclose(got_adv, adv, rtol=0, atol=1e-12) and torch.allclose(got_ret, ret, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_checks_variant_with_no_knob_turned_is_the_reference(seed):
    gen = torch.Generator().manual_seed(seed)
    shape = (2, 3, 9)
    mask = (torch.rand(shape, generator=gen) < 0.6).double()
    values, kl = torch.randn(shape, generator=gen, dtype=torch.float64), torch.rand(shape, generator=gen).double()
    outcome = torch.randn(shape[:2], generator=gen, dtype=torch.float64)
    want = token_gae(outcome, values, mask, kl, kl_coef=0.3, gamma=0.9, lam=0.8)
    got = checks._token_gae_variant(outcome, values, mask, kl, kl_coef=0.3, gamma=0.9, lam=0.8)
    for g, w in zip(got, want):
        assert torch.allclose(g, w, rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", checks.GAE_CASES, ids=lambda c: c[0][:40])
def test_every_mistake_is_farther_from_the_right_values_than_the_tolerance(case):
    inputs, kwargs, adv, ret = _case_inputs(case, torch.float32)
    for mistakes, right in (
        (checks._advantage_mistakes(inputs, kwargs), adv),
        (checks._return_mistakes(inputs, kwargs), ret),
    ):
        for value, message in mistakes:
            if value is not None:
                assert (value - right).abs().max() >= 0.05, message


def test_the_worked_examples_mistakes_are_told_apart():
    inputs, kwargs, adv, ret = _case_inputs(checks.GAE_CASES[0], torch.float32)
    for mistakes in (checks._advantage_mistakes(inputs, kwargs), checks._return_mistakes(inputs, kwargs)):
        for i, (a, message_a) in enumerate(mistakes):
            for b, message_b in mistakes[i + 1 :]:
                if a is not None and b is not None and message_a != message_b:
                    assert not tensors_close(a, b), (message_a, message_b)


def learner_gae(outcome, values, mask, kl=None, kl_coef=0.0, gamma=1.0, lam=0.95, *, bug=""):
    """A learner's plain loop over each row's model tokens, right unless ``bug`` names a mistake."""
    adv, ret = torch.zeros_like(values), torch.zeros_like(values)
    batch, trial, pos = values.shape
    beta = {"no_kl": 0.0, "kl_unscaled": 1.0, "kl_added": -kl_coef}.get(bug, kl_coef)
    factor = {"td": 0.0, "monte_carlo": gamma, "lam_alone": lam}.get(bug, gamma * lam)
    for b in range(batch):
        for t in range(trial):
            own = [p for p in range(pos) if mask[b, t, p] > 0]
            last = {"row_end": pos - 1, "count": int(mask[b, t].sum()) - 1}.get(bug, own[-1] if own else -1)
            running = future = 0.0
            for j in reversed(range(len(own))):
                p = own[j]
                r = (float(outcome[b, t]) if p == last else 0.0) - (beta * float(kl[b, t, p]) if kl is not None else 0)
                if j + 1 < len(own):
                    following = p + 1 if bug == "next_position" else own[j + 1]
                    next_value = float(values[b, t, following])
                else:
                    next_value = float(values[b, t, p + 1]) if bug == "bootstrap" and p + 1 < pos else 0.0
                running = r + gamma * next_value - float(values[b, t, p]) + factor * running
                future = r + gamma * future
                adv[b, t, p] = running
                ret[b, t, p] = {"returns_are_a": running, "returns_monte_carlo": future}.get(
                    bug, running + float(values[b, t, p])
                )
    return adv, ret


def env_tokens_as_steps(outcome, values, mask, kl=None, kl_coef=0.0, gamma=1.0, lam=0.95, *, masked=True):
    """GAE over every position of the row (minirl.compute_gae), the reward at the last model token."""
    positions = torch.arange(values.shape[-1], dtype=values.dtype)
    last = (mask * (positions + 1)).argmax(dim=-1, keepdim=True)  # the last model token (0 for a row without one)
    rewards = torch.zeros_like(values).scatter(-1, last, outcome.unsqueeze(-1).to(values.dtype))
    if kl is not None:
        rewards = rewards - kl_coef * kl
    next_values = torch.cat([values[..., 1:], torch.zeros_like(values[..., :1])], dim=-1)
    dones = torch.zeros_like(values)
    dones[..., -1] = 1.0
    adv = minirl.compute_gae(rewards, values, next_values, dones, gamma, lam)
    return (adv * mask, (adv + values) * mask) if masked else (adv, adv + values)


def test_a_plain_loop_passes(capsys):
    ok, line = run(check_token_gae, learner_gae, capsys)
    assert ok, line


LOOP_MISTAKES = [
    ("next_position", ["the environment's tokens are not steps", "next position"]),
    ("row_end", ["the reward arrives after the last token the model wrote (position 3)", "row's last position (4)"]),
    ("count", ["mask.sum() − 1 = 2 counts the model's tokens"]),
    ("bootstrap", ["V_{K+1} = 0", "bootstrapped past the end"]),
    ("no_kl", ["fold the KL penalty into the rewards", "leaves the KL out"]),
    ("kl_added", ["the KL penalty is subtracted", "wrong sign"]),
    ("kl_unscaled", ["multiply the KL by kl_coef"]),
    ("td", ["you ignored lam", "one-step TD errors"]),
    ("monte_carlo", ["you ignored lam", "Monte-Carlo"]),
    ("lam_alone", ["decays by λ alone"]),
    ("returns_are_a", ["the returns are the value's target G_k = A_k + V_k; yours are the advantages"]),
    ("returns_monte_carlo", ["the returns of", "Monte-Carlo returns", "λ-return"]),
]


@pytest.mark.parametrize("bug, keywords", LOOP_MISTAKES, ids=[bug for bug, _ in LOOP_MISTAKES])
def test_token_gae_names_the_mistakes_of_a_loop(bug, keywords, capsys):
    def broken(*args, **kwargs):
        return learner_gae(*args, **kwargs, bug=bug)

    caught(check_token_gae, broken, capsys, *keywords)


def test_token_gae_names_the_environments_tokens_taken_as_steps(capsys):
    caught(check_token_gae, env_tokens_as_steps, capsys, "steps through every position", "are not steps")
    caught(
        check_token_gae,
        lambda *a, **k: env_tokens_as_steps(*a, **k, masked=False),
        capsys,
        "your advantages of token_gae(",
        "should be 0 where the mask is 0 (the environment's tokens and the padding",
        "not 0 at [0, 0, 1], [0, 0, 4]",
    )


def test_token_gae_names_the_other_mistakes(capsys):
    caught(
        check_token_gae,
        lambda *a, **k: (token_gae(*a, **k)[0], token_gae(*a, **k)[0] + a[1]),  # returns = A + V, not masked
        capsys,
        "your returns of",
        "should be 0",
    )
    caught(
        check_token_gae,
        lambda *a, **k: (token_gae(*a, **k)[0], token_gae(*a, **k)[0] - a[1] * a[2]),
        capsys,
        "not A_k − V_k",
    )
    caught(check_token_gae, lambda *a, **k: token_gae(*a, **k)[::-1], capsys, "(returns, advantages)")
    caught(check_token_gae, lambda *a, **k: token_gae(*a, **k)[0], capsys, "expected a pair")
    caught(check_token_gae, lambda *a, **k: tuple(x[0] for x in token_gae(*a, **k)), capsys, "expected shape")
    caught(check_token_gae, lambda o, v, m, kl=None: token_gae(o, v, m, kl), capsys, "the signature is token_gae(")

    def masks_the_values_in_place(outcome, values, mask, *args, **kwargs):
        values.mul_(mask)
        return token_gae(outcome, values, mask, *args, **kwargs)

    caught(check_token_gae, masks_the_values_in_place, capsys, "changed its input values in place")


def test_a_mistake_on_the_worked_example_is_named_with_its_numbers(capsys):
    line = caught(check_token_gae, lambda *a, **k: learner_gae(*a, **k, bug="row_end"), capsys)
    assert line == (
        "✘ token_gae: the advantages of token_gae(outcome [[3]], values [[[0.5, 4, 1, 2, 3]]], mask [[[1, 0, 1, 1, "
        "0]]] (model, environment, model, model, padding), gamma=1, lam=0.5): the reward arrives after the last "
        "token the model wrote (position 3), not at the row's last position (4): skip the environment's tokens and "
        "the padding"
    )

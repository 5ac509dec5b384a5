"""Checks for notebook 12 (agents: multi-turn RL), named after the function they check.

    check_episode_ids_and_mask(fn)   fn(episode) -> (ids, mask): the turns' (reply ids, env turn ids) concatenated,
                                     the mask 1 on the model's reply ids (their end-of-sequence id included) and 0
                                     on the environment's
    check_token_gae(fn)              fn(outcome [batch, trial], values [batch, trial, pos], mask, kl=None,
                                     kl_coef=0.0, gamma=1.0, lam=0.95) -> (advantages, returns) [batch, trial, pos]:
                                     GAE over the model's tokens only, the KL penalty folded into the rewards

Expected values are hand-worked (the references ``minirl.episodes.episode_ids_and_mask`` and
``minirl.advantages.token_gae`` agree: ``tests/test_checks_agents.py``), and each wrong value is compared with what
the usual mistakes give, so that the line names the mistake.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any

import torch

from minirl.checks._core import RTOL, Check, exercise_check, format_tensor, tensors_close

__all__ = ["check_episode_ids_and_mask", "check_token_gae"]

# ---- episode_ids_and_mask -----------------------------------------------------------------------------------

EOS = 2  # the end-of-sequence id of the cases below

# (episode, its ids, its mask, what the case shows)
EPISODE_CASES: list[tuple[list[tuple[list[int], list[int]]], list[int], list[int], str]] = [
    (
        [([5, 6, 2], [7, 8]), ([4, 2], [])],
        [5, 6, 2, 7, 8, 4, 2],
        [1, 1, 1, 0, 0, 1, 1],
        "a reply, the environment's answer, and the last reply",
    ),
    (
        [([3, 2], [10, 11]), ([4, 4, 2], [12]), ([6], [2])],
        [3, 2, 10, 11, 4, 4, 2, 12, 6, 2],
        [1, 1, 0, 0, 1, 1, 1, 0, 1, 0],
        "three turns; the token budget cut the last reply, so the end-of-sequence id that closes it is the "
        "environment's (mask 0: the model did not write it)",
    ),
    ([([7, 2], [])], [7, 2], [1, 1], "one reply ends the episode"),
]

_IDS_ORDER = (
    "each turn is (reply, env): the model's reply comes first, then the environment's answer to it — "
    "ids reply, env, reply, env, ..."
)


def _ids_mistakes(episode: list[tuple[list[int], list[int]]]) -> list[tuple[list[int] | None, str]]:
    """(the ids a mistake returns, the mistake)."""
    return [
        ([i for reply, env in episode for i in env + reply], _IDS_ORDER),
        (
            [i for reply, _ in episode for i in reply],
            "the environment's ids stay in the sequence (the model reads them as context when it writes the next "
            "reply); only the mask leaves them out of the loss",
        ),
        (
            list(episode[-1][0] + episode[-1][1]) if len(episode) > 1 else None,
            "concatenate every turn, not only the last one (grow the lists across the loop, not inside it)",
        ),
    ]


def _mask_mistakes(episode: list[tuple[list[int], list[int]]]) -> list[tuple[list[int], str]]:
    """(the mask a mistake returns, the mistake)."""
    end_out = "the reply's end-of-sequence id is the model's too (it wrote it, and must learn to stop): mask 1 on it"
    return [
        (
            [1] * sum(len(reply) + len(env) for reply, env in episode),
            "your mask is 1 on the environment's tokens too: they would be in the loss, training the model to "
            "predict the environment's answers — 0 on every id of an environment turn",
        ),
        (
            [m for reply, env in episode for m in [0] * len(reply) + [1] * len(env)],
            "your mask is inverted: 1 on the model's reply ids (its actions, in the loss), 0 on the environment's",
        ),
        ([m for reply, env in episode for m in [1] * (len(reply) - 1) + [0] * (1 + len(env))], end_out),
        ([m for reply, env in episode for m in [int(i != EOS) for i in reply] + [0] * len(env)], end_out),
        (
            [m for reply, env in episode for m in [0] * len(env) + [1] * len(reply)],
            "the mask follows the ids: each turn's reply first (1s), then its environment turn (0s)",
        ),
    ]


def _as_list(c: Check, value: Any, what: str) -> list:
    """``value`` as a list (a tensor's ``tolist()``); a failure when it is no sequence."""
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        c.fail(f"{what} should be a list of ints; got {type(value).__name__} {value!r:.60}")
    return list(value)


def _check_episode_case(c: Check, fn: Callable, case: tuple) -> None:
    episode, want_ids, want_mask, why = case
    given = copy.deepcopy(episode)
    where = f"episode_ids_and_mask({episode}) ({why}; {EOS} is the end-of-sequence id)"
    got = c.call(fn, given, call=where)
    c.expect(
        given == episode,
        f"{where}: your function changed the episode it was given (ids += reply extends the reply's own list when "
        "ids IS that list) — start from new lists: ids, mask = [], []",
    )
    c.expect(isinstance(got, (tuple, list)) and len(got) == 2, f"{where}: expected a pair (ids, mask), got {got!r:.80}")
    ids, mask = _as_list(c, got[0], f"{where}: ids"), _as_list(c, got[1], f"{where}: mask")
    if ids != want_ids:
        for wrong, message in _ids_mistakes(episode):
            if ids == wrong:
                c.fail(f"{where}: ids {ids} — {message}; expected {want_ids}", named=True)
        c.fail(f"{where}: expected ids {want_ids} (each turn's reply, then its environment turn), got {ids}")
    c.passed += 1
    if len(mask) != len(ids):
        c.fail(
            f"{where}: your mask has {len(mask)} entries for {len(ids)} ids — one per id: 1 on the model's, 0 on the "
            f"environment's ({want_mask})",
            named=True,
        )
    if mask != want_mask:
        for wrong, message in _mask_mistakes(episode):
            if mask == wrong:
                c.fail(f"{where}: mask {mask} — {message}; expected {want_mask}", named=True)
        c.fail(f"{where}: expected mask {want_mask} (1 on the replies' ids, 0 on the environment's), got {mask}")
    c.passed += 1


@exercise_check("episode_ids_and_mask")
def check_episode_ids_and_mask(c: Check, fn: Callable) -> None:
    """``fn(episode) -> (ids, mask)``: the turns' (reply ids, env turn ids) concatenated in order, the mask 1 on the
    replies' ids (the end-of-sequence id included) and 0 on the environment's. Catches the environment's tokens left
    in the loss (mask 1 everywhere), an inverted mask, the reply's end token left out of the mask, the environment's
    ids before the reply's (in the ids or in the mask), the environment's ids dropped, only the last turn kept, a
    mask of another length than the ids, and changing the episode it was given."""
    for i, case in enumerate(EPISODE_CASES):
        with c.worked_example() if i == 0 else contextlib.nullcontext():
            _check_episode_case(c, fn, case)


# ---- token_gae ----------------------------------------------------------------------------------------------

# (what, outcome [batch, trial], values [batch, trial, pos], mask, the keyword arguments passed (kl included),
#  advantages by hand, returns by hand). Values that stand out sit where no value counts (environment tokens, padding),
# so that a mistake which reads them shows.
GAE_CASES: list[tuple[str, Any, Any, Any, dict[str, Any], Any, Any]] = [
    # model tokens at positions 0, 2, 3 (V = 0.5, 1, 2), r = (0, 0, 3), γ = 1, γλ = 0.5:
    # δ = (0 + 1 − 0.5, 0 + 2 − 1, 3 + 0 − 2) = (0.5, 1, 1) (V after the last model token: 0, not the padding's 3);
    # A_3 = 1, A_2 = 1 + 0.5·1 = 1.5, A_1 = 0.5 + 0.5·1.5 = 1.25; G = A + V = (1.75, 2.5, 3)
    (
        "outcome [[3]], values [[[0.5, 4, 1, 2, 3]]], mask [[[1, 0, 1, 1, 0]]] (model, environment, model, model, "
        "padding), gamma=1, lam=0.5",
        [[3.0]],
        [[[0.5, 4.0, 1.0, 2.0, 3.0]]],
        [[[1, 0, 1, 1, 0]]],
        {"gamma": 1.0, "lam": 0.5},
        [[[1.25, 0.0, 1.5, 1.0, 0.0]]],
        [[[1.75, 0.0, 2.5, 3.0, 0.0]]],
    ),
    # model tokens at positions 0, 1, 4 (V = 1, 0.5, 1.5; KL = 0.2, 0.4, 0.6), β = 0.5, γ = 0.8, γλ = 0.4:
    # r = (−0.1, −0.2, 2 − 0.3) = (−0.1, −0.2, 1.7);
    # δ = (−0.1 + 0.8·0.5 − 1, −0.2 + 0.8·1.5 − 0.5, 1.7 − 1.5) = (−0.7, 0.5, 0.2);
    # A_3 = 0.2, A_2 = 0.5 + 0.4·0.2 = 0.58, A_1 = −0.7 + 0.4·0.58 = −0.468; G = (0.532, 1.08, 1.7)
    (
        "outcome [[2]], values [[[1, 0.5, 5, 5, 1.5, 5]]], mask [[[1, 1, 0, 0, 1, 0]]], kl [[[0.2, 0.4, 9, 9, 0.6, "
        "9]]], kl_coef=0.5, gamma=0.8, lam=0.5",
        [[2.0]],
        [[[1.0, 0.5, 5.0, 5.0, 1.5, 5.0]]],
        [[[1, 1, 0, 0, 1, 0]]],
        {"kl": [[[0.2, 0.4, 9.0, 9.0, 0.6, 9.0]]], "kl_coef": 0.5, "gamma": 0.8, "lam": 0.5},
        [[[-0.468, 0.58, 0.0, 0.0, 0.2, 0.0]]],
        [[[0.532, 1.08, 0.0, 0.0, 1.7, 0.0]]],
    ),
    # the defaults γ = 1, λ = 0.95 (γλ = 0.95), 2 × 2 rows:
    # [0, 0]: model at 0, 1, 3, V = (0.2, 0.4, 0.8), R = 1: δ = (0.2, 0.4, 0.2); A = (0.2 + 0.95·0.59, 0.4 + 0.95·0.2,
    #         0.2) = (0.7605, 0.59, 0.2); G = (0.9605, 0.99, 1)
    # [0, 1]: no model token: nothing to credit, zeros
    # [1, 0]: one model token, V = 0.5, R = −1: A = δ = −1.5, G = −1
    # [1, 1]: four model tokens, V = 1 each, R = 2: δ = (0, 0, 0, 1); A = (0.95³, 0.95², 0.95, 1); G = A + 1
    (
        "outcome [[1, 1], [-1, 2]], 2 × 2 rows of 4 positions (one without a model token), defaults gamma=1, lam=0.95",
        [[1.0, 1.0], [-1.0, 2.0]],
        [[[0.2, 0.4, 3.0, 0.8], [1.0, 1.0, 1.0, 1.0]], [[0.5, 2.0, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0]]],
        [[[1, 1, 0, 1], [0, 0, 0, 0]], [[1, 0, 0, 0], [1, 1, 1, 1]]],
        {},
        [[[0.7605, 0.59, 0.0, 0.2], [0.0, 0.0, 0.0, 0.0]], [[-1.5, 0.0, 0.0, 0.0], [0.857375, 0.9025, 0.95, 1.0]]],
        [[[0.9605, 0.99, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]], [[-1.0, 0.0, 0.0, 0.0], [1.857375, 1.9025, 1.95, 2.0]]],
    ),
]

# Tolerance: the checks' one rule (``tensors_close``: RTOL = 1e-4 of max(max |expected|, 1)). Each expected value is
# a float32 sum of at most a dozen products of inputs of order 1 to 10 (a handful of δ's, each r + γV − V), whose
# rounding in any order is a few ulps of 10, ~1e-6; the mistakes below change a value by 0.05 or more.

_SIGNATURE = "the signature is token_gae(outcome, values, mask, kl=None, kl_coef=0.0, gamma=1.0, lam=0.95)"
_HINTS = [("argument", _SIGNATURE)]
_RECURSION = "A_k = δ_k + γλ A_{k+1}"
_ENV_STEPS = (
    "the environment's tokens are not steps: skip them (and the padding) — the step after one of the model's tokens "
    "is the model's next token, whose value is V_{k+1}; an environment token's value never enters δ or A"
)


def _next_value(v: list[float], steps: list[int], j: int, knobs: dict[str, Any]) -> float:
    """V_{k+1} for step j: the next step's value (or the next position's, knob ``next``), 0 after the last step
    (or the value at the position after it, knob ``bootstrap``)."""
    p = steps[j]
    if j + 1 < len(steps):
        return v[p + 1] if knobs.get("next") == "position" else v[steps[j + 1]]
    return v[p + 1] if knobs.get("bootstrap") and p + 1 < len(v) else 0.0


def _row_gae(
    outcome: float, v: list[float], m: list[float], kl: list[float], beta: float, gamma: float, decay: float, knobs
) -> tuple[list[float], list[float]]:
    """One row of ``_token_gae_variant``: (advantages, returns), 0 where the mask is 0."""
    pos = len(m)
    own = [p for p in range(pos) if m[p] > 0]
    adv, ret = [0.0] * pos, [0.0] * pos
    if not own:
        return adv, ret
    steps = list(range(pos)) if knobs.get("steps") == "all" else own
    reward_at = {"last": own[-1], "row_end": pos - 1, "count": len(own) - 1}[knobs.get("reward_at", "last")]
    running = future = 0.0
    for j in reversed(range(len(steps))):
        p = steps[j]
        r = (outcome if p == reward_at else 0.0) - beta * (kl[p] if m[p] > 0 else 0.0)
        running = r + gamma * _next_value(v, steps, j, knobs) - v[p] + decay * running
        future = r + gamma * future
        if m[p] > 0:
            targets = {"a+v": running + v[p], "a": running, "mc": future, "a-v": running - v[p]}
            adv[p], ret[p] = running, targets[knobs.get("returns", "a+v")]
    return adv, ret


def _token_gae_variant(
    outcome: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    kl: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    gamma: float = 1.0,
    lam: float = 0.95,
    *,
    kl_sign: float = -1.0,
    kl_scale: float | None = None,
    decay: float | None = None,
    **knobs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """token_gae with one knob turned, a plain loop over the rows (the right values when every knob is at its
    default): what the usual mistakes return. ``kl_sign`` +1: the KL added; ``kl_scale``: β in place of kl_coef;
    ``decay``: the recursion's factor in place of γλ; ``steps="all"``: every position a step; ``next="position"``:
    V_{k+1} from the next position; ``bootstrap``: V after the last model token from the next position;
    ``reward_at`` "row_end" / "count": the reward at the row's last position / at mask.sum() − 1; ``returns`` "a",
    "mc", "a-v": the advantages, the Monte-Carlo returns, A − V."""
    beta = -kl_sign * (kl_coef if kl_scale is None else kl_scale)
    kl_values = torch.zeros_like(values) if kl is None else kl
    decay = gamma * lam if decay is None else decay
    adv = torch.zeros(values.shape, dtype=torch.float64)
    ret = torch.zeros(values.shape, dtype=torch.float64)
    for b in range(values.shape[0]):
        for t in range(values.shape[1]):
            row = (values[b, t].tolist(), mask[b, t].tolist(), kl_values[b, t].tolist())
            a, g = _row_gae(float(outcome[b, t]), *row, beta, gamma, decay, knobs)
            adv[b, t], ret[b, t] = torch.tensor(a, dtype=torch.float64), torch.tensor(g, dtype=torch.float64)
    return adv, ret


def _row_positions(mask: torch.Tensor, differ: Callable[[int, int, int], bool]) -> tuple[int, int, int] | None:
    """(the last model token's position, the row's last position, mask.sum() − 1) of the first row (in order) that
    has a model token and where ``differ`` holds; None when none does."""
    for row in mask.reshape(-1, mask.shape[-1]):
        own = [p for p, x in enumerate(row.tolist()) if x > 0]
        if own and differ(own[-1], len(row) - 1, len(own) - 1):
            return own[-1], len(row) - 1, len(own) - 1
    return None


def _reward_mistakes(inputs: tuple, kwargs: dict[str, Any]) -> list[tuple[torch.Tensor | None, str]]:
    def variant(**knobs: Any) -> torch.Tensor:
        return _token_gae_variant(*inputs, **{**kwargs, **knobs})[0]

    mistakes: list[tuple[torch.Tensor | None, str]] = []
    at_end = _row_positions(inputs[2], lambda last, end, _: last != end)
    if at_end is not None:
        message = (
            f"the reward arrives after the last token the model wrote (position {at_end[0]}), not at the row's last "
            f"position ({at_end[1]}): skip the environment's tokens and the padding"
        )
        mistakes += [(variant(reward_at="row_end"), message), (variant(reward_at="row_end", steps="all"), message)]
    by_count = _row_positions(inputs[2], lambda last, _, count: last != count)
    if by_count is not None:
        mistakes.append(
            (
                variant(reward_at="count"),
                f"the reward arrives after the last token the model wrote (position {by_count[0]}); mask.sum() − 1 = "
                f"{by_count[2]} counts the model's tokens, it is not the last one's position when environment tokens "
                "sit in between",
            )
        )
    return mistakes


def _kl_mistakes(inputs: tuple, kwargs: dict[str, Any]) -> list[tuple[torch.Tensor | None, str]]:
    beta = kwargs.get("kl_coef", 0.0)
    if kwargs.get("kl") is None or beta <= 0:
        return []

    def variant(**knobs: Any) -> torch.Tensor:
        return _token_gae_variant(*inputs, **{**kwargs, **knobs})[0]

    return [
        (
            variant(kl_scale=0.0),
            f"fold the KL penalty into the rewards: r_k = −β KL_k on each of the model's tokens (β = kl_coef = "
            f"{beta:g}), plus R at the last one; yours leaves the KL out",
        ),
        (
            variant(kl_sign=1.0),
            "the KL penalty is subtracted from the rewards: r_k = −β KL_k (plus R at the last model token); you added "
            "it (the wrong sign)",
        ),
        (variant(kl_scale=1.0), f"multiply the KL by kl_coef: r_k = −β KL_k with β = {beta:g}, not −KL_k"),
    ]


def _advantage_mistakes(inputs: tuple, kwargs: dict[str, Any]) -> list[tuple[torch.Tensor | None, str]]:
    """(the advantages a mistake returns, the mistake) for one case."""

    def variant(**knobs: Any) -> torch.Tensor:
        return _token_gae_variant(*inputs, **{**kwargs, **knobs})[0]

    gamma, lam = kwargs.get("gamma", 1.0), kwargs.get("lam", 0.95)
    bootstrap = (
        "the episode is over after the model's last token: V_{K+1} = 0, so δ_K = r_K − V_K — you bootstrapped past "
        "the end from the value at the position after it"
    )
    return [
        (variant(steps="all"), f"your recursion steps through every position; {_ENV_STEPS}"),
        (variant(next="position"), f"your δ_k bootstraps from the value at the next position; {_ENV_STEPS}"),
        (
            variant(next="position", bootstrap=True),
            f"your δ_k bootstraps from the value at the next position; {_ENV_STEPS}",
        ),
        (variant(bootstrap=True), bootstrap),
        *_reward_mistakes(inputs, kwargs),
        *_kl_mistakes(inputs, kwargs),
        (
            variant(lam=0.0),
            f"you ignored lam (lam = {lam:g}): your advantages are the one-step TD errors δ_k (λ = 0); GAE "
            f"accumulates them: {_RECURSION}",
        ),
        (
            variant(lam=1.0),
            f"you ignored lam (lam = {lam:g}): your advantages are the Monte-Carlo ones, G_k − V_k (λ = 1); GAE "
            f"decays the TD errors ahead: {_RECURSION}",
        ),
        (
            variant(decay=lam) if gamma != 1.0 else None,
            f"your recursion decays by λ alone; it decays by γλ: {_RECURSION}",
        ),
    ]


def _return_mistakes(inputs: tuple, kwargs: dict[str, Any]) -> list[tuple[torch.Tensor | None, str]]:
    """(the returns a mistake returns, the mistake) for one case, the advantages right."""

    def variant(kind: str) -> torch.Tensor:
        return _token_gae_variant(*inputs, **kwargs, returns=kind)[1]

    return [
        (variant("a"), "the returns are the value's target G_k = A_k + V_k; yours are the advantages A_k"),
        (
            variant("mc"),
            "yours are the Monte-Carlo returns (the discounted sum of the rewards ahead); the value's target here is "
            "the λ-return G_k = A_k + V_k",
        ),
        (variant("a-v"), "the returns are A_k + V_k, not A_k − V_k"),
    ]


def _zero_off_mask(c: Check, got: torch.Tensor, want: torch.Tensor, mask: torch.Tensor, what: str) -> None:
    """Assert (one check) that ``got`` is 0 where the mask is 0, on the tolerance rule's scale of ``want``."""
    off = mask == 0
    values = got.detach().double()
    scale = float(want.abs().max())
    if tensors_close(values[off], torch.zeros(int(off.sum()), dtype=torch.float64), scale=scale):
        c.passed += 1
        return
    wrong = off & ~torch.isclose(values, torch.zeros_like(values), rtol=0.0, atol=RTOL * max(scale, 1.0))
    at = ", ".join(str(index) for index in torch.nonzero(wrong).tolist()[:4])
    c.fail(
        f"your {what} should be 0 where the mask is 0 (the environment's tokens and the padding: they are not the "
        f"model's actions); yours are {format_tensor(got)}, not 0 at {at}",
        named=True,
    )


def _check_gae_case(c: Check, fn: Callable, case: tuple) -> None:
    what, outcome, values, mask, kwargs, want_adv, want_ret = case
    outcome, values, mask = torch.tensor(outcome), torch.tensor(values), torch.tensor(mask, dtype=torch.float32)
    kwargs = {k: torch.tensor(v) if k == "kl" else v for k, v in kwargs.items()}
    want_adv, want_ret = torch.tensor(want_adv), torch.tensor(want_ret)
    where = f"token_gae({what})"
    inputs = {"outcome": outcome, "values": values, "mask": mask, **({"kl": kwargs["kl"]} if "kl" in kwargs else {})}
    copies = {name: x.clone() for name, x in inputs.items()}
    passed = {k: copies["kl"] if k == "kl" else v for k, v in kwargs.items()}
    got = c.call(fn, copies["outcome"], copies["values"], copies["mask"], **passed, call=where, hints=_HINTS)
    c.unchanged(inputs, copies, where)
    c.expect(
        isinstance(got, (tuple, list)) and len(got) == 2,
        f"{where}: expected a pair (advantages, returns), got {type(got).__name__} {got!r:.60}",
    )
    shape = list(values.shape)
    adv = c.shape(got[0], shape, "batch, trial, pos", f"the advantages of {where}")
    ret = c.shape(got[1], shape, "batch, trial, pos", f"the returns of {where}")
    if tensors_close(adv, want_ret) and tensors_close(ret, want_adv):
        c.fail(f"{where}: you returned (returns, advantages); return (advantages, returns)", named=True)
    _zero_off_mask(c, adv, want_adv, mask, f"advantages of {where}")
    args = (outcome, values, mask)
    c.close(adv.float(), want_adv, f"the advantages of {where}", _advantage_mistakes(args, kwargs))
    _zero_off_mask(c, ret, want_ret, mask, f"returns of {where}")
    c.close(ret.float(), want_ret, f"the returns of {where}", _return_mistakes(args, kwargs))


@exercise_check("token_gae")
def check_token_gae(c: Check, fn: Callable) -> None:
    """``fn(outcome, values, mask, kl=None, kl_coef=0.0, gamma=1.0, lam=0.95) -> (advantages, returns)``: GAE over
    the model's tokens only, on three hand-worked cases (an environment token between the model's tokens and
    padding after them; the KL penalty with γ < 1; 2 × 2 rows with the defaults, one row without a model token).
    Catches the environment's tokens treated as steps (their values in the recursion), the reward at the row's last
    position or at mask.sum() − 1 instead of after the last model token, a bootstrap past the end (V_{K+1} ≠ 0),
    the KL penalty left out, added, or not scaled by kl_coef, λ ignored (one-step TD or Monte-Carlo), λ for γλ,
    returns other than A + V, non-zero values where the mask is 0, the pair swapped, and changing the inputs."""
    for i, case in enumerate(GAE_CASES):
        with c.worked_example() if i == 0 else contextlib.nullcontext():
            _check_gae_case(c, fn, case)

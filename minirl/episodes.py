"""Multi-turn episodes: a language model talks with an environment, and the episode becomes one token sequence.

An episode is the conversation after the prompt, laid out as the tokens the model read and wrote::

    [ reply 1 ... <eos> | env turn 1 | reply 2 ... <eos> | env turn 2 | ... | last reply ... <eos> ]
      mask 1 1 1 1 1      0 0 0 0 0    1 1 1 1 1 1 1 1     0 0 0 0 0          1 1 1 1 1 1 1 1

where an env turn is the chat template's text between the end of one assistant reply and the start of the next:
the user message holding the environment's answer, and the assistant's turn opened again. The episode is a
``Rollout`` (``[batch, trial, pos]``, one episode per trial) whose ``mask`` is 1 on the model's tokens only, so
the loop's loss, its KL term and its length normalisation count the model's tokens and never the environment's
(``minirl.update.policy_update`` reads nothing else); the environment's tokens stay in the sequence as context,
so ``policy.score`` sees every token the model saw when it sampled.

Two bugs other stacks hit are designed out:

- *unmasked environment tokens*: a loss over the env's tokens trains the model to predict the environment
  (its observations, a tool's results). ``episode_mask_errors`` says which of a mask's tokens are wrong.
- *a chat template that rewrites earlier turns* (some templates drop a past turn's reasoning): re-rendering the
  conversation would score tokens that were never sampled. Here the sequence is built from the sampled ids and the
  env turns' ids (``env_turn_ids``), never re-rendered; ``env_turn_ids`` refuses a template under which a longer
  conversation does not extend a shorter one's text.

Sampling reuses the KV cache across turns: each ``generate`` call continues from the cache of everything before it
and runs only the new tokens (the env turn); the first runs each prompt once for its group and the prompts' common
beginning (the system message) once for all (``CausalLMPolicy.grouped_prompts``). In the batch, a reply that ended
early leaves padding after its end-of-sequence token, masked out of attention and skipped by the position ids
(``_position_ids``), so every episode's tokens sit at the positions they have in the compact sequence the episode
returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import torch

from minirl.protocols import EpisodicTask, Rollout
from minirl.utils import draw_seed

if TYPE_CHECKING:
    from minirl.lm.policy import CausalLMPolicy

__all__ = [
    "Conversation",
    "choice_demonstrations",
    "demonstrations",
    "env_turn_encoder",
    "env_turn_ids",
    "episode_ids_and_mask",
    "episode_mask_errors",
    "episode_rollout",
    "greedy_rollout",
    "WALKS_PER_CALL",
    "sample_answers",
    "sample_episodes",
    "sample_rollout",
    "scripted_episodes",
    "success_by_prompt",
]


class Conversation(Protocol):
    """An environment an episode talks with: ``step(reply)`` -> (its next message, or None once the episode is
    over; the reward of that turn; whether the episode ended), and ``episode``: its record of the walk."""

    episode: Any

    def step(self, reply: str) -> tuple[str | None, float, bool]: ...


_PROBE = ({"role": "system", "content": "S"}, {"role": "user", "content": "Q"})


_MARKER = "\ue000"  # a private-use character: no environment message holds it


def env_turn_encoder(tokenizer) -> Callable[[str], list[int]]:
    """``env_turn_ids`` for one tokenizer, its template rendered once: the text around a user message is found
    with a marker in the message's place, and each message is then put between the two and tokenised (as a
    whole, so the ids are those of the rendered text). A ValueError when the template rewrites earlier turns or
    changes a message's text (so the marker does not come through as it went in)."""
    eos = tokenizer.eos_token
    before = tokenizer.apply_chat_template(list(_PROBE), add_generation_prompt=True, tokenize=False) + "A" + eos
    turns = [*_PROBE, {"role": "assistant", "content": "A"}, {"role": "user", "content": _MARKER}]
    after = tokenizer.apply_chat_template(turns, add_generation_prompt=True, tokenize=False)
    if not after.startswith(before):
        raise ValueError(
            "the tokenizer's chat template rewrites earlier turns (a conversation with one more turn does not begin "
            "with the shorter one's text and the reply's end-of-sequence token): multi-turn episodes are built from "
            "the sampled token ids and need a template that only appends"
        )
    head, found, tail = after[len(before) :].partition(_MARKER)
    if not found or _MARKER in tail:
        raise ValueError("the tokenizer's chat template changes a user message's text: it must keep it as it is")

    def encode(message: str) -> list[int]:
        return tokenizer(head + message + tail, add_special_tokens=False)["input_ids"]

    return encode


def env_turn_ids(tokenizer, message: str) -> list[int]:
    """The token ids the chat template puts after an assistant reply's end-of-sequence token for a user turn
    ``message``, up to and including the opening of the next assistant turn (ChatML: ``"\\n<|im_start|>user\\n"``
    + message + ``"<|im_end|>\\n<|im_start|>assistant\\n"``).

    Found by rendering a short conversation with and without the extra turn: the longer text must begin with the
    shorter one and the reply's end-of-sequence token, else the template rewrites earlier turns and a multi-turn
    episode built from sampled ids would not be what the template renders: a ValueError says so. A loop over many
    turns renders the template once with ``env_turn_encoder``."""
    return env_turn_encoder(tokenizer)(message)


def episode_mask_errors(mask: torch.Tensor, model_tokens: torch.Tensor) -> dict[str, int]:
    """How a loss mask ``[..., pos]`` differs from the model's own tokens (``model_tokens``, 1/True where the
    model wrote the token, the same shape): ``env_in_loss`` counts environment or padding tokens with mask 1,
    ``model_left_out`` the model's tokens with mask 0. Both 0 for a right mask."""
    if mask.shape != model_tokens.shape:
        raise ValueError(f"mask must have the shape of model_tokens {list(model_tokens.shape)}; got {list(mask.shape)}")
    on, own = mask.bool(), model_tokens.bool()
    return {"env_in_loss": int((on & ~own).sum()), "model_left_out": int((~on & own).sum())}


def episode_ids_and_mask(episode: Sequence[tuple[list[int], list[int]]]) -> tuple[list[int], list[int]]:
    """One episode's token ids and loss mask: ``episode`` is its turns in order, each a pair (the model's reply
    ids, its end-of-sequence id included; the environment's next turn ids, empty after the last reply). Returns
    the ids concatenated (reply, env, reply, env, ...) and a mask of the same length, 1 on the model's reply ids
    (the end-of-sequence id too: the model wrote it) and 0 on the environment's. With 2 the end-of-sequence id::

        episode_ids_and_mask([([5, 6, 2], [7, 8]), ([4, 2], [])])
        -> ([5, 6, 2, 7, 8, 4, 2], [1, 1, 1, 0, 0, 1, 1])

    (a reply [5, 6, 2], the environment's answer [7, 8], and the last reply [4, 2], after which the episode ended).
    A ValueError when a turn is not a pair of lists."""
    ids: list[int] = []
    mask: list[int] = []
    for i, turn in enumerate(episode):
        if not (isinstance(turn, (tuple, list)) and len(turn) == 2 and all(isinstance(part, list) for part in turn)):
            raise ValueError(
                f"episode must be a sequence of (reply ids, env turn ids) pairs of lists; turn {i} is {turn!r:.80}"
            )
        reply, env = turn
        ids += reply + env
        mask += [1] * len(reply) + [0] * len(env)
    return ids, mask


def _pad_right(rows: list[list[int]], value: float, width: int | None = None) -> torch.Tensor:
    width = max([len(r) for r in rows] + [width or 0])
    out = torch.full((len(rows), width), value)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=out.dtype)
    return out


def _next_inputs(
    sequences: torch.Tensor,
    attn: torch.Tensor,
    lengths: list[int],
    keep: list[int],
    segments: list[list[int]],
    pad: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The next turn's ``generate`` inputs: the rows ``keep`` of ``sequences`` (everything so far and this turn's
    replies), then each row's env turn ``segments`` LEFT-padded to one width; the attention mask 1 on every real
    token and 0 on the padding ``generate`` wrote after a reply's end and on the holes before a shorter env turn
    (masked, and skipped by the position ids). ``lengths``: each reply's tokens, its EOS included."""
    n_new = sequences.shape[1] - attn.shape[1]
    gen_mask = (torch.arange(n_new) < torch.tensor(lengths)[:, None]).long()  # [alive, new]
    attn = torch.cat([attn, gen_mask.to(attn.device)], 1)
    index = torch.tensor(keep, device=sequences.device)
    width = max(len(s) for s in segments)
    seg = torch.full((len(keep), width), pad, dtype=torch.long)
    seg_mask = torch.zeros((len(keep), width), dtype=torch.long)
    for i, s in enumerate(segments):
        seg[i, width - len(s) :] = torch.tensor(s)
        seg_mask[i, width - len(s) :] = 1
    seq = torch.cat([sequences[index], seg.to(sequences.device)], 1)
    return seq, torch.cat([attn[index.to(attn.device)], seg_mask.to(attn.device)], 1)


def _generated_cache(out: Any, name: str) -> Any:
    """The KV cache ``generate`` returns (``return_dict_in_generate``) under the model's name for it."""
    cache = getattr(out, name, None)
    return cache if cache is not None else out.past_key_values


def episode_rollout(
    policy: CausalLMPolicy,
    turns: Sequence[Sequence[tuple[list[int], list[int]]]],
    answers: list[list[Any]],
    max_length: int,
    truncated: torch.Tensor,
) -> Rollout:
    """Episodes -> ``Rollout`` ``[batch, trial, pos]``: each episode's (reply ids, env turn ids) pairs
    concatenated, mask 1 on the replies' ids and 0 on the env turns' and the padding after the episode."""
    group = len(answers[0])
    tokens, mask = [], []
    for episode in turns:
        ids, own = episode_ids_and_mask(episode)
        tokens.append(ids)
        mask.append(own)
    t = _pad_right(tokens, policy.pad_token_id).long()
    m = _pad_right(mask, 0.0, t.shape[1])
    return Rollout(
        t.view(len(answers), group, -1).to(policy.device),
        m.view(len(answers), group, -1).to(policy.device),
        answers,
        max_length,
        truncated.view(len(answers), group),
    )


def sample_episodes(  # noqa: C901
    policy: CausalLMPolicy,
    prompts: Sequence[Any],
    make_env: Callable[[Any], Conversation],
    group_size: int,
    *,
    max_turns: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    greedy: bool = False,
) -> Rollout:
    """``group_size`` episodes per prompt, each talking with its own ``make_env(prompt)`` until it ends or
    ``max_turns`` replies were written -> ``Rollout`` ``[batch, trial, pos]`` (the module docstring's layout)
    whose ``answers`` are the environments' ``episode`` records, a list per prompt.

    A reply is at most ``policy.max_new_tokens`` tokens; one the budget cut is closed with the end-of-sequence
    token as an environment token (mask 0: the model did not write it) and counts as ``truncated``. The seed of
    each turn's ``generate`` is drawn from ``generator`` (``greedy``: the most likely token instead).
    ``max_length`` (the Dr GRPO constant) is the model's budget: ``max_turns × max_new_tokens``."""
    if not (isinstance(group_size, int) and group_size > 0):
        raise ValueError(f"group_size must be a positive int; got {group_size!r}")
    if not (isinstance(max_turns, int) and max_turns > 0):
        raise ValueError(f"max_turns must be a positive int; got {max_turns!r}")
    if not greedy and not temperature > 0:
        raise ValueError(f"temperature must be > 0; got {temperature!r}")
    tok, eos, pad = policy.tokenizer, policy.eos_token_id, policy.pad_token_id
    env_ids = env_turn_encoder(tok)
    envs = [make_env(p) for p in prompts for _ in range(group_size)]
    n = len(envs)
    seq, attn = policy.encode_prompts(prompts)
    turns: list[list[tuple[list[int], list[int]]]] = [[] for _ in range(n)]
    cut = torch.zeros(n, dtype=torch.bool)
    alive = list(range(n))  # the episodes still talking, in the order of seq's rows
    cache = None
    for turn in range(max_turns):
        seed = draw_seed(generator)
        kwargs = policy.generation_kwargs(None if greedy else temperature)  # plain sampling, as policy.sample
        with policy._generating() as model:  # no_grad; the bfloat16 copy on a CPU with cpu_bfloat16
            if turn == 0:  # each prompt run once for its group, and the prompts' common prefix once in all
                seq, attn, cache = policy.grouped_prompts(seq, attn, group_size, model)
            if cache is not None:
                kwargs[policy._cache_name] = cache
            torch.manual_seed(seed)
            out = model.generate(
                input_ids=seq, attention_mask=attn, use_cache=True, return_dict_in_generate=True, **kwargs
            )
        new = out.sequences[:, seq.shape[1] :].cpu()  # [alive, new_pos]
        cache = _generated_cache(out, policy._cache_name)
        ended = (new == eos).cumsum(-1) == 0  # True before the first EOS
        lengths = (ended.sum(-1) + (new == eos).any(-1).long()).tolist()  # up to and including the EOS
        keep, segments = [], []
        for row, episode in enumerate(alive):
            reply = new[row, : lengths[row]].tolist()
            closed = bool(reply) and reply[-1] == eos
            text = tok.decode(reply, skip_special_tokens=True)
            message, _, done = envs[episode].step(text)
            cut[episode] |= not closed
            goes_on = not done and message is not None
            env = ([] if closed else [eos]) + (env_ids(message) if message is not None and goes_on else [])
            turns[episode].append((reply, env))
            if goes_on:
                keep.append(row)
                segments.append(env)
        if not keep:
            break
        seq, attn = _next_inputs(out.sequences, attn, lengths, keep, segments, pad)
        if len(keep) < len(alive):
            cache.batch_select_indices(torch.tensor(keep, device=seq.device))
        alive = [alive[row] for row in keep]
    for episode in alive:  # the turn limit ended these: their last reply closes the episode
        reply, _ = turns[episode][-1]
        turns[episode][-1] = (reply, [] if reply and reply[-1] == eos else [eos])
    answers = [[envs[b * group_size + t].episode for t in range(group_size)] for b in range(len(prompts))]
    return episode_rollout(policy, turns, answers, max_turns * policy.max_new_tokens, cut)


def sample_rollout(
    policy: Any, task: Any, prompts: Any, group_size: int, *, temperature: float, generator: torch.Generator | None
) -> Rollout:
    """``group_size`` sampled answers per prompt: episodes with the task's environment for an ``EpisodicTask``,
    else the policy's one-reply ``sample``. What the loop, ``evaluate`` and pass@k call."""
    if isinstance(task, EpisodicTask):
        return sample_episodes(
            policy,
            prompts,
            task.make_env,
            group_size,
            max_turns=task.max_turns,
            temperature=temperature,
            generator=generator,
        )
    return policy.sample(prompts, group_size, temperature=temperature, generator=generator)


def greedy_rollout(policy: Any, task: Any, prompts: Any) -> Rollout:
    """One greedy answer per prompt: an episode of most likely replies for an ``EpisodicTask``, else ``greedy``."""
    if isinstance(task, EpisodicTask):
        return sample_episodes(policy, prompts, task.make_env, 1, max_turns=task.max_turns, greedy=True)
    return policy.greedy(prompts)


def scripted_episodes(
    policy: CausalLMPolicy,
    prompts: Sequence[Any],
    make_env: Callable[[Any], Conversation],
    reply: Callable[[Any, torch.Generator | None], str],
    *,
    max_turns: int,
    generator: torch.Generator | None = None,
) -> Rollout:
    """One episode per prompt whose replies come from ``reply(env, generator)`` (a demonstrator) instead of the
    model: ``Rollout`` ``[batch, 1, pos]`` in ``sample_episodes``' layout, each reply's tokens followed by the
    end-of-sequence token (the model's to learn, mask 1) and the env turns masked. What a warm start imitates."""
    if not (isinstance(max_turns, int) and max_turns > 0):
        raise ValueError(f"max_turns must be a positive int; got {max_turns!r}")
    tok, eos = policy.tokenizer, policy.eos_token_id
    env_ids = env_turn_encoder(tok)
    turns, answers = [], []
    for prompt in prompts:
        env, episode = make_env(prompt), []
        for _ in range(max_turns):
            text = reply(env, generator)
            message, _, done = env.step(text)
            ids = env_ids(message) if message is not None and not done else []
            episode.append((tok(text, add_special_tokens=False)["input_ids"] + [eos], ids))
            if done or message is None:
                break
        turns.append(episode)
        answers.append([env.episode])
    longest = max(sum(len(r) for r, _ in episode) for episode in turns)
    return episode_rollout(policy, turns, answers, longest, torch.zeros(len(prompts), dtype=torch.bool))


def demonstrations(policy: Any, task: Any, prompts: Any, generator: torch.Generator | None) -> Rollout:
    """What a supervised warm start imitates for ``prompts``, ``[batch, 1, pos]``: an episodic task's
    demonstrator walking each episode (``scripted_episodes`` with ``task.demonstrate``), else each prompt's
    reference answer (``prompt.target``) as one reply."""
    if isinstance(task, EpisodicTask):
        return scripted_episodes(
            policy, prompts, task.make_env, task.demonstrate, max_turns=task.max_turns, generator=generator
        )
    return policy.rollout_from_texts(prompts, [[p.target] for p in prompts])


def choice_demonstrations(
    policy: Any, task: Any, prompts: Any, generator: torch.Generator | None
) -> tuple[Rollout, torch.Tensor]:
    """``demonstrations`` of an episodic task whose demonstrator draws each reply uniformly from a set (the task's
    ``demonstration_choices(env)``, e.g. the maze's permitted moves), with that set at each reply's first token:
    ``(rollout [batch, 1, pos], choices [batch, 1, pos, k])``, where ``choices`` holds, at the first token of each
    demonstrated reply, the first token id of every reply the demonstrator could have written there (−1 elsewhere
    and after a shorter set; ``k`` the largest set). The same walks as ``demonstrations`` with the same generator.

    A warm start can then imitate the demonstrator's distribution at each state it visited instead of its one draw
    (``minirl.lm.warm_start``). A ValueError when the task has no ``demonstration_choices``, the drawn reply is not
    among them, or two of them begin with the same token (the first token would not tell them apart)."""
    choose: Callable[[Any], Sequence[str]] | None = getattr(task, "demonstration_choices", None)
    if not (isinstance(task, EpisodicTask) and callable(choose)):
        raise ValueError(
            f"task must be an episodic task with demonstration_choices(env) (the replies its demonstrator draws "
            f"from); {type(task).__name__} has none: use demonstrations"
        )
    offered: list[list[int]] = []  # the choices' first token ids, turn by turn in the order the walks are made

    def reply(env: Any, gen: torch.Generator | None) -> str:
        options = list(choose(env))
        text = task.demonstrate(env, gen)
        if text not in options:
            raise ValueError(f"the demonstrator replied {text!r}, not one of its choices {options}")
        firsts = [policy.tokenizer(o, add_special_tokens=False)["input_ids"][0] for o in options]
        if len(set(firsts)) < len(firsts):
            raise ValueError(f"the choices {options} must begin with different tokens; their first ids are {firsts}")
        offered.append(firsts)
        return text

    rollout = scripted_episodes(policy, prompts, task.make_env, reply, max_turns=task.max_turns, generator=generator)
    mask = rollout.mask if rollout.mask is not None else torch.ones_like(rollout.tokens, dtype=torch.float)
    before = torch.nn.functional.pad(mask, (1, 0))[..., :-1]  # the mask one position earlier (0 before the first)
    starts = ((mask > 0) & (before == 0)).nonzero().tolist()  # [turn, 3]: each reply's first token, in walk order
    choices = torch.full((*mask.shape, max(map(len, offered))), -1, dtype=torch.long)
    for (b, t, pos), firsts in zip(starts, offered, strict=True):
        choices[b, t, pos, : len(firsts)] = torch.tensor(firsts)
    return rollout, choices


WALKS_PER_CALL = 64
"""How many answers ``sample_answers`` (and so ``success_by_prompt``) samples in one call by default: as many as
a step of the maze recipe samples (8 start cells × 8 walks), so measuring a success rate needs no more memory than
training. Every walk's KV cache (each layer's keys and values of every token, padded to the longest walk of the
call) stays in memory until the call ends, and the allocator keeps the copies the cache leaves behind as it grows,
so a call's memory grows with its walks: notebook 12's warm-start walks, all in one call, ran a machine out of
memory (RESULTS.md, Agents, "Memory")."""


def sample_answers(
    policy: Any,
    task: Any,
    prompts: Sequence[Any],
    n_samples: int,
    *,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    walks_per_call: int | None = WALKS_PER_CALL,
) -> list[list[Any]]:
    """``n_samples`` sampled answers per prompt (a list per prompt: ``Rollout.answers``), by ``sample_rollout``
    calls of at most ``walks_per_call`` answers (None: every prompt in one call): as many whole prompts' groups as
    fit, or, when one group does not, each prompt's in calls of ``walks_per_call``; they draw from ``generator`` in
    turn. The calls bound the memory (``WALKS_PER_CALL``); the same ``walks_per_call`` and generator give the same
    answers."""
    if not (isinstance(n_samples, int) and n_samples > 0):
        raise ValueError(f"n_samples must be a positive int; got {n_samples!r}")
    if walks_per_call is not None and not (isinstance(walks_per_call, int) and walks_per_call > 0):
        raise ValueError(f"walks_per_call must be a positive int or None; got {walks_per_call!r}")

    def sample(chunk: Sequence[Any], group_size: int) -> list[list[Any]]:
        return sample_rollout(policy, task, chunk, group_size, temperature=temperature, generator=generator).answers

    if walks_per_call is not None and n_samples > walks_per_call:  # a group split over several calls
        sizes = [min(walks_per_call, n_samples - k) for k in range(0, n_samples, walks_per_call)]
        return [[a for size in sizes for a in sample([prompt], size)[0]] for prompt in prompts]
    per_call = len(prompts) if walks_per_call is None else walks_per_call // n_samples
    return [group for i in range(0, len(prompts), per_call) for group in sample(prompts[i : i + per_call], n_samples)]


def success_by_prompt(
    policy: Any,
    task: Any,
    prompts: Sequence[Any],
    n_samples: int = 1,
    *,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    walks_per_call: int | None = WALKS_PER_CALL,
) -> torch.Tensor:
    """The fraction of answers the task calls correct, per prompt ``[batch]`` float: the greedy answer when
    ``n_samples`` is 0, else ``n_samples`` sampled at ``temperature``, ``walks_per_call`` at a time
    (``sample_answers``; an episodic task: the share of walks from each start that reach the goal)."""
    if n_samples == 0:
        answers = greedy_rollout(policy, task, prompts).answers
    else:
        answers = sample_answers(
            policy,
            task,
            prompts,
            n_samples,
            temperature=temperature,
            generator=generator,
            walks_per_call=walks_per_call,
        )
    return task.is_correct(prompts, answers).float().mean(dim=1)

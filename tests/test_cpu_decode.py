"""The weight-first products of CPU generation (minirl.lm.cpu_decode): the same numbers as nn.Linear, only where
generation runs, and never left behind."""

import pytest
import torch
from torch import nn

from minirl.bench import cpu_decode as bench
from minirl.lm.cpu_decode import FEW_ROWS, FewRowsLinear, few_row_products, generation_form

# float32, a dot product of 64 terms of size ~1 summed in another order: each rounding is at most 2^-24 of the
# running sum (|sum| <= ~25 here), so the two forms differ by at most ~64 · 25 · 6e-8 ≈ 1e-4 and typically 1e-6
TOL = dict(rtol=1e-5, atol=1e-4)


def _linear(d_in=64, d_out=48, bias=True, seed=0):
    torch.manual_seed(seed)
    return nn.Linear(d_in, d_out, bias=bias)


@pytest.mark.parametrize("shape", [(1, 64), (3, 64), (2, 5, 64), (FEW_ROWS, 64), (FEW_ROWS + 1, 64)])
@pytest.mark.parametrize("bias", [True, False])
def test_weight_first_form_gives_nn_linear_numbers(shape, bias):
    layer = _linear(bias=bias)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = layer(x)
        with few_row_products(layer):
            got = layer(x)
    assert got.shape == expected.shape == (*shape[:-1], 48)
    torch.testing.assert_close(got, expected, **TOL)
    # which form ran: the weight-first one for 2 to FEW_ROWS rows, nn.Linear's otherwise (each bit for bit)
    rows = x.numel() // 64
    weight_first = torch.mm(layer.weight.detach(), x.reshape(rows, 64).T).T.contiguous()
    weight_first = (weight_first + layer.bias.detach() if bias else weight_first).reshape(expected.shape)
    assert torch.equal(got, weight_first if 2 <= rows <= FEW_ROWS else expected)


def test_with_gradients_it_is_nn_linear_itself():
    layer = _linear()
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(2))
    expected = layer(x)
    with few_row_products(layer):
        got = layer(x)  # grad enabled: nn.Linear's own product, bit for bit
        got.sum().backward()
    assert torch.equal(got, expected)
    assert layer.weight.grad is not None and layer.weight.grad.shape == (48, 64)


def test_the_swap_lasts_only_inside_the_block_even_when_it_raises():
    model = nn.Sequential(_linear(), nn.ReLU(), _linear(48, 8), nn.Sequential(_linear(8, 8)))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(RuntimeError, match="boom"), few_row_products(model):
        assert [type(m) for m in model.modules() if isinstance(m, nn.Linear)] == [FewRowsLinear] * 3
        raise RuntimeError("boom")
    assert [type(m) for m in model.modules() if isinstance(m, nn.Linear)] == [nn.Linear] * 3
    after = model.state_dict()
    assert list(after) == list(before) and all(torch.equal(after[k], before[k]) for k in before)


def test_subclasses_of_linear_are_left_alone():
    class Mine(nn.Linear):
        pass

    model = nn.Sequential(Mine(4, 4), nn.Linear(4, 4))
    with few_row_products(model):
        assert (type(model[0]), type(model[1])) == (Mine, FewRowsLinear)
    assert (type(model[0]), type(model[1])) == (Mine, nn.Linear)


@pytest.mark.slow
def test_a_tiny_language_model_generates_the_same_logits_either_way():
    from minirl.lm.models import make_tiny_lm

    policy = make_tiny_lm(seed=0, max_new_tokens=4)
    ids = torch.randint(5, 100, (3, 7), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        plain = policy.model(input_ids=ids).logits
        with policy._few_rows():
            weight_first = policy.model(input_ids=ids).logits
    torch.testing.assert_close(weight_first, plain, **TOL)
    assert all(type(m) is not FewRowsLinear for m in policy.model.modules())
    policy.weight_first_decode = False  # the public switch: generation keeps nn.Linear's form
    with policy._few_rows():
        assert all(type(m) is not FewRowsLinear for m in policy.model.modules())
    policy.weight_first_decode = True
    with policy._few_rows():
        assert any(type(m) is FewRowsLinear for m in policy.model.modules())


def test_the_bench_measures_both_forms_and_refuses_an_unknown_one(monkeypatch):
    monkeypatch.setattr(bench, "BLOCKS", 1)
    monkeypatch.setattr(bench, "VOCAB", 64)
    for form in ("x @ W.T", "(W @ x.T).T"):
        assert bench.product_ms(2, form, repeats=1) > 0
    with pytest.raises(ValueError, match="form must be"):
        bench.product_ms(2, "x @ W")


# ---- bfloat16 autocast on a CPU: a knob, off by default -------------------------------------------------------


def test_cpu_bfloat16_is_off_by_default_and_runs_the_model_in_bfloat16_when_on():
    from minirl.lm.models import make_tiny_lm

    policy = make_tiny_lm(seed=0, max_new_tokens=4)
    ids = torch.randint(5, 100, (2, 6), generator=torch.Generator().manual_seed(3))
    assert policy.cpu_bfloat16 is False  # the CPU records' numbers: float32 throughout
    with torch.no_grad(), policy._autocast():
        assert policy.model(input_ids=ids).logits.dtype == torch.float32
    policy.cpu_bfloat16 = True
    with torch.no_grad(), policy._autocast():
        assert policy.model(input_ids=ids).logits.dtype == torch.bfloat16
    assert next(policy.model.parameters()).dtype == torch.float32  # the weights Adam moves stay float32


def test_the_generation_form_names_what_generates_and_the_policy_follows_it():
    from minirl.lm.models import make_tiny_lm

    assert generation_form("cpu", True, torch.float32) == "bfloat16 copy"
    assert generation_form("cpu", False, torch.float32) == "float32"
    assert generation_form("cuda", False, torch.float32) == "bfloat16 autocast"  # cpu_bfloat16 or not
    assert generation_form("cuda", True, torch.float32) == "bfloat16 autocast"
    assert generation_form("cpu", True, torch.bfloat16) == "bfloat16"  # weights already bfloat16: no copy
    policy = make_tiny_lm(seed=0, max_new_tokens=2)
    assert policy.generation_form == "float32"
    with policy._generating() as model:
        assert model is policy.model and policy._bfloat16_copy is None
    policy.cpu_bfloat16 = True
    assert policy.generation_form == "bfloat16 copy"
    with policy._generating() as model:
        assert model is not policy.model and next(model.parameters()).dtype == torch.bfloat16


def test_cpu_bfloat16_scores_close_to_float32_but_not_equal():
    from minirl.lm.models import make_tiny_lm

    policy = make_tiny_lm(seed=0, max_new_tokens=6)
    prompts = ["sort 3 1 2", "sort 9 4"]
    rollout = policy.sample(prompts, 3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    exact = policy.score(prompts, rollout, temperature=1.0).log_probs
    policy.cpu_bfloat16 = True
    half = policy.score(prompts, rollout, temperature=1.0).log_probs
    assert half.dtype == torch.float32  # log-softmax runs in float32 even under autocast
    mask = rollout.mask.bool()
    # bfloat16 keeps 8 bits of mantissa: each rounding is up to 2^-9 of the value; the logits behind these
    # log-probabilities (at most ~5 nats here) move by about 5 · 2^-9 ≈ 0.01, so allow twice that
    torch.testing.assert_close(half[mask], exact[mask], rtol=0.0, atol=0.02)
    assert not torch.equal(half[mask], exact[mask])  # it did change the numbers: a knob, not a free speed-up


def test_cpu_bfloat16_must_be_a_bool_and_the_recipe_passes_it_on():
    from minirl.lm.models import make_tiny_lm
    from minirl.lm.policy import CausalLMPolicy
    from minirl.lm.recipes import RECIPES

    tiny = make_tiny_lm(seed=0)
    with pytest.raises(ValueError, match="cpu_bfloat16 must be True or False; got 1"):
        CausalLMPolicy(tiny.model, tiny.tokenizer, cpu_bfloat16=1)
    with pytest.raises(ValueError, match="cpu_bfloat16 must be True or False; got 'yes'"):
        RECIPES["tiny"].with_(cpu_bfloat16="yes")
    assert RECIPES["tiny"].policy("tiny").cpu_bfloat16 is False
    assert RECIPES["tiny"].with_(cpu_bfloat16=True).policy("tiny").cpu_bfloat16 is True


def test_the_bfloat16_probe_answers_false_when_torch_cannot_tell(monkeypatch):
    from minirl.lm.cpu_decode import cpu_has_bfloat16_units

    assert isinstance(cpu_has_bfloat16_units(), bool)
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported", raising=False)
    assert cpu_has_bfloat16_units() is False

    def broken():
        raise RuntimeError("no cpuinfo")

    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", broken, raising=False)
    assert cpu_has_bfloat16_units() is False


@pytest.mark.parametrize(
    ("amx", "avx512_bf16", "machine", "answer"),
    [
        (True, True, "x86_64", "matrix units"),  # Intel's Sapphire Rapids and later: AMX (with AVX-512 BF16)
        (False, True, "x86_64", "vector instructions"),  # AMD's Zen 4
        (False, False, "x86_64", "none"),  # AMD's Zen 3, older Intel: emulated
        (False, False, "AMD64", "none"),  # Windows spells it so
        (False, False, "arm64", "unknown"),  # torch's probes are x86 ones: they say nothing of an Arm CPU
        (None, False, "x86_64", "unknown"),  # a build without the AMX probe
    ],
)
def test_the_bfloat16_arithmetic_probe_names_what_the_cpu_has(monkeypatch, amx, avx512_bf16, machine, answer):
    import platform

    from minirl.lm.cpu_decode import cpu_bfloat16_arithmetic

    monkeypatch.setattr(platform, "machine", lambda: machine)
    for name, value in (("_is_amx_tile_supported", amx), ("_is_avx512_bf16_supported", avx512_bf16)):
        if value is None:
            monkeypatch.delattr(torch.cpu, name, raising=False)
        else:
            monkeypatch.setattr(torch.cpu, name, lambda value=value: value, raising=False)
    assert cpu_bfloat16_arithmetic() == answer


def test_the_bfloat16_arithmetic_probe_answers_unknown_when_a_probe_fails(monkeypatch):
    import platform

    from minirl.lm.cpu_decode import cpu_bfloat16_arithmetic

    def broken():
        raise RuntimeError("no cpuinfo")

    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", broken, raising=False)
    assert cpu_bfloat16_arithmetic() == "unknown"


@pytest.mark.parametrize("arithmetic", ["none", "vector instructions", "matrix units", "unknown"])
def test_generating_with_the_copy_warns_only_where_bfloat16_is_emulated(monkeypatch, arithmetic):
    """``cpu_bfloat16`` on a CPU with no bfloat16 arithmetic costs time and buys nothing: the policy says so once,
    when it makes its bfloat16 copy; elsewhere, and in float32, it stays quiet."""
    import warnings

    import minirl.lm.cpu_decode as cpu_decode
    from minirl.lm.recipes import RECIPES

    monkeypatch.setattr(cpu_decode, "cpu_bfloat16_arithmetic", lambda: arithmetic)
    policy = RECIPES["tiny"].with_(cpu_bfloat16=True).policy("tiny")
    gen = torch.Generator().manual_seed(0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        policy.sample(["sort 3 1 2"], 1, temperature=1.0, generator=gen)
        policy.sample(["sort 3 1 2"], 1, temperature=1.0, generator=gen)  # the same copy: no second warning
    emulated = [w for w in seen if "without bfloat16 arithmetic" in str(w.message)]
    assert len(emulated) == (1 if arithmetic == "none" else 0)
    if emulated:
        assert "leave cpu_bfloat16 off" in str(emulated[0].message) and emulated[0].category is UserWarning
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        # float32: no copy, no warning
        RECIPES["tiny"].policy("tiny").sample(["sort 3 1 2"], 1, temperature=1.0, generator=gen)
    assert not [w for w in seen if "without bfloat16 arithmetic" in str(w.message)]


def test_the_bfloat16_copy_holds_rounded_weights_float32_buffers_and_follows_every_update():
    from minirl.lm.cpu_decode import Bfloat16Copy
    from minirl.lm.models import make_tiny_lm

    model = make_tiny_lm(seed=0).model
    copy = Bfloat16Copy(model)
    pairs = list(zip(model.parameters(), copy.model.parameters()))
    assert pairs and all(w.dtype == torch.bfloat16 and not w.requires_grad for _, w in pairs)
    assert all(torch.equal(w, p.detach().to(torch.bfloat16)) for p, w in pairs)  # rounded, nothing else
    buffers = [b for b in copy.model.buffers() if b.is_floating_point()]
    assert buffers and all(b.dtype == torch.float32 for b in buffers)  # the rotary frequencies keep their bits
    # an optimizer step (Adam, in place) and load_state_dict: the next refreshed() copies what they changed
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(input_ids=torch.tensor([[5, 6, 7]])).logits.sum().backward()
    optimizer.step()
    assert not all(torch.equal(w, p.detach().to(torch.bfloat16)) for p, w in pairs)  # stale until refreshed
    refreshed = copy.refreshed()
    assert refreshed is copy.model
    assert all(torch.equal(w, p.detach().to(torch.bfloat16)) for p, w in pairs)
    model.load_state_dict(make_tiny_lm(seed=1).model.state_dict())
    copy.refreshed()
    assert all(torch.equal(w, p.detach().to(torch.bfloat16)) for p, w in pairs)
    model.eval()
    assert copy.refreshed().training is False  # and the mode follows too


def test_the_head_takes_a_strided_slice_as_if_it_were_contiguous():
    from minirl.lm.cpu_decode import ContiguousInputLinear

    layer = _linear(d_in=64, d_out=300).to(torch.bfloat16)
    hidden = torch.randn(4, 7, 64, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    last = hidden[:, -1:, :]  # what a model hands its head: the last position of each row, strided
    assert not last.is_contiguous()
    with torch.no_grad():
        expected = layer(last.contiguous())
        layer.__class__ = ContiguousInputLinear
        assert torch.equal(layer(last), expected)


def test_with_cpu_bfloat16_generation_runs_the_copy_and_stays_close_to_the_scored_model():
    from minirl.lm.models import make_tiny_lm

    policy = make_tiny_lm(seed=0, max_new_tokens=6)
    n_weights = len(list(policy.parameters()))
    policy.sample(["sort 3 1 2"], 2, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert policy._bfloat16_copy is None  # off: float32 generation, no copy
    policy.cpu_bfloat16 = True
    prompts = ["sort 3 1 2", "sort 9 4"]
    runs = [policy.sample(prompts, 3, temperature=1.0, generator=torch.Generator().manual_seed(0)) for _ in range(2)]
    assert policy._bfloat16_copy is not None and policy._bfloat16_copy.source is policy.model
    assert len(list(policy.parameters())) == n_weights  # the copy is no submodule: the optimizer never sees it
    assert torch.equal(runs[0].tokens, runs[1].tokens)  # the same seed, the same replies
    # the copy's log-probabilities of the same tokens against the scoring pass (float32 weights under autocast):
    # bfloat16 also in the residual stream and the norms: a rounding of up to 2^-9 of the value at each of a dozen
    # steps through the tiny model's 4 blocks, so a logit of a few nats may move by a few hundredths; allow 0.05
    # (measured 0.005 on this model)
    rollout = runs[0]
    scored = policy.score(prompts, rollout, temperature=1.0).log_probs
    copy = policy._bfloat16_copy
    policy.model, policy.cpu_bfloat16 = copy.model, False  # score with the copy itself (a bfloat16 model)
    sampled = policy.score(prompts, rollout, temperature=1.0).log_probs
    policy.model = copy.source
    mask = rollout.mask.bool()
    gap = float((sampled - scored).detach()[mask].abs().max())
    assert 0 < gap < 0.05, f"largest gap between the copy's and the scored log-probs: {gap}"


def test_grouped_kv_attention_sets_transformers_switch_only_inside_the_block(monkeypatch):
    import os

    from minirl.lm.cpu_decode import grouped_kv_attention

    monkeypatch.delenv("TRANSFORMERS_SDPA_FORCE_GQA", raising=False)
    with pytest.raises(RuntimeError), grouped_kv_attention():
        assert os.environ["TRANSFORMERS_SDPA_FORCE_GQA"] == "1"
        raise RuntimeError
    assert "TRANSFORMERS_SDPA_FORCE_GQA" not in os.environ
    monkeypatch.setenv("TRANSFORMERS_SDPA_FORCE_GQA", "0")  # a user's own setting is put back
    with grouped_kv_attention():
        assert os.environ["TRANSFORMERS_SDPA_FORCE_GQA"] == "1"
    with grouped_kv_attention(on=False):
        assert os.environ["TRANSFORMERS_SDPA_FORCE_GQA"] == "0"
    assert os.environ["TRANSFORMERS_SDPA_FORCE_GQA"] == "0"


def test_grouped_kv_attention_skips_the_key_value_copies_and_gives_the_same_logits(monkeypatch):
    """A grouped-query Llama (4 query heads share 1 key/value head) reads padded prompts, then a second chunk
    after its KV cache (a mask on both passes, as a multi-turn rollout's): inside the block transformers never
    copies the key/value heads (``repeat_kv``), and the logits agree with the copying path to float32 rounding
    (the same 16-term dot products and softmax, in another order: ~1e-6 on logits of size ~1, 1e-4 allowed)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.integrations import sdpa_attention

    from minirl.lm.cpu_decode import grouped_kv_attention

    monkeypatch.delenv("TRANSFORMERS_SDPA_FORCE_GQA", raising=False)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=50, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=1, max_position_embeddings=64, attn_implementation="sdpa",
    )  # fmt: skip
    model = LlamaForCausalLM(config).eval()
    copies = []
    real = sdpa_attention.repeat_kv
    monkeypatch.setattr(sdpa_attention, "repeat_kv", lambda x, n: copies.append(n) or real(x, n))
    ids = torch.randint(0, 50, (3, 12), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[0, :4] = 0  # left padding in one row
    mask[1, 7] = 0  # a hole in another, as between two turns

    def logits():
        with torch.no_grad():
            first = model(input_ids=ids[:, :8], attention_mask=mask[:, :8], use_cache=True)
            name = "cache" if "cache" in first else "past_key_values"  # transformers 5.24 renamed it
            second = model(input_ids=ids[:, 8:], attention_mask=mask, **{name: first[name]})
        return torch.cat([first.logits, second.logits], 1)

    plain = logits()
    assert copies, "without the block, transformers copies the key/value heads"
    copies.clear()
    with grouped_kv_attention():
        grouped = logits()
    assert copies == [], "inside the block, no key/value copies"
    keep = mask.bool()
    torch.testing.assert_close(grouped[keep], plain[keep], rtol=1e-5, atol=1e-4)


def test_the_policy_generates_with_grouped_kv_attention_and_inverse_cdf_sampling_on_a_cpu(monkeypatch):
    import os

    from minirl.lm.models import make_tiny_lm

    monkeypatch.delenv("TRANSFORMERS_SDPA_FORCE_GQA", raising=False)
    policy = make_tiny_lm(0, max_new_tokens=2)
    with policy._generating():
        assert os.environ.get("TRANSFORMERS_SDPA_FORCE_GQA") == "1"
        assert torch.multinomial is not _ORIGINAL_MULTINOMIAL, "on a CPU the policy samples by the inverse CDF"
    assert "TRANSFORMERS_SDPA_FORCE_GQA" not in os.environ
    assert torch.multinomial is _ORIGINAL_MULTINOMIAL


_ORIGINAL_MULTINOMIAL = torch.multinomial


# ---- the KV cache grows in place --------------------------------------------------------------------------------


def _kv(batch, pos, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 2, pos, 4, generator=g), torch.randn(batch, 2, pos, 4, generator=g)


def test_the_grow_in_place_layer_holds_what_the_concatenating_layer_holds():
    """The same updates, crop, batch selection and repeat on both layers: equal keys and values at every step (no
    arithmetic, exact); while the room lasts, the in-place layer writes into one buffer (no new storage)."""
    from transformers.cache_utils import DynamicLayer

    from minirl.lm.cpu_decode import GrowInPlaceLayer

    plain, grown = DynamicLayer(), GrowInPlaceLayer()

    def update(batch, pos, seed):
        k, v = _kv(batch, pos, seed)
        a, b = plain.update(k, v), grown.update(k.clone(), v.clone())
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), f"after adding {pos} positions"
        assert grown.get_seq_length() == plain.get_seq_length()

    update(3, 5, 0)  # a prompt
    storage = grown.keys.untyped_storage().data_ptr()
    for step in range(4):  # generated tokens, one position each
        update(3, 1, 1 + step)
    assert grown.keys.untyped_storage().data_ptr() == storage, "a token within the room is written in place"
    update(3, GrowInPlaceLayer.room, 9)  # past the room: a new, larger buffer
    assert grown.keys.untyped_storage().data_ptr() != storage
    for layer in (plain, grown):
        layer.crop(-2)
    update(3, 1, 10)
    for layer in (plain, grown):
        layer.batch_select_indices(torch.tensor([2, 0]))  # episodes that ended are dropped
    update(2, 3, 11)
    for layer in (plain, grown):
        layer.batch_repeat_interleave(2)
    update(4, 1, 12)


def test_grow_in_place_changes_only_plain_dynamic_layers_and_lets_none_through():
    from transformers.cache_utils import DynamicCache, DynamicLayer, DynamicSlidingWindowLayer

    from minirl.lm.cpu_decode import GrowInPlaceLayer, grow_in_place

    assert grow_in_place(None) is None
    cache = DynamicCache()
    cache.layers = [DynamicLayer(), DynamicSlidingWindowLayer(sliding_window=4)]
    assert grow_in_place(cache, on=False) is cache and type(cache.layers[0]) is DynamicLayer
    assert grow_in_place(cache) is cache
    assert type(cache.layers[0]) is GrowInPlaceLayer and type(cache.layers[1]) is DynamicSlidingWindowLayer


def test_the_policy_generates_the_same_tokens_with_the_cache_grown_in_place(monkeypatch):
    """Greedy answers of the tiny model (a shared prompt cache, then ten generated tokens): token for token the
    same with transformers' own cache, which the policy uses when the cache is not grown in place."""
    import minirl.lm.policy as policy_module
    from minirl.lm.cpu_decode import GrowInPlaceLayer
    from minirl.lm.models import make_tiny_lm

    policy = make_tiny_lm(0, max_new_tokens=10)
    prompts = ["Sort: 3 1 2", "Sort: 9 4 7 1 5"]
    ids, mask = policy.encode_prompts(prompts)
    with policy._generating() as model:
        _, _, cache = policy.grouped_prompts(ids, mask, 3, model)
    assert {type(layer) for layer in cache.layers} == {GrowInPlaceLayer}
    grown = policy.sample(prompts, 3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    greedy = policy.greedy(prompts)
    monkeypatch.setattr(policy_module, "grow_in_place", lambda cache, on=True: cache)
    assert torch.equal(policy.greedy(prompts).tokens, greedy.tokens)
    plain = policy.sample(prompts, 3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert torch.equal(plain.tokens, grown.tokens)


# ---- sampling by the inverse CDF --------------------------------------------------------------------------------


def test_inverse_cdf_sampling_draws_each_token_with_its_probability():
    """200 000 rows of one distribution over 6 tokens, one draw each: every frequency within 5 standard errors
    (sqrt(p (1 - p) / n) ≤ 0.0011) of its probability; the tokens of probability 0 are never drawn, nor are
    those of another row's distribution. Unnormalised rows are allowed, as by ``torch.multinomial``."""
    from minirl.lm.cpu_decode import inverse_cdf_sampling

    p = torch.tensor([0.0, 0.1, 0.0, 0.45, 0.25, 0.2])
    n = 200_000
    probs = p.repeat(n, 1) * 3.0  # [rows, vocab], summing to 3
    torch.manual_seed(0)
    with inverse_cdf_sampling():
        tokens = torch.multinomial(probs, 1)
    assert tokens.shape == (n, 1) and tokens.dtype == torch.long
    freq = torch.bincount(tokens.flatten(), minlength=6).double() / n
    bound = 5 * (p * (1 - p) / n).sqrt().double()
    assert ((freq - p.double()).abs() <= bound).all(), f"frequencies {freq.tolist()} for probabilities {p.tolist()}"
    assert freq[0] == 0 and freq[2] == 0
    rows = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0], [0.0, 5.0, 0.0]])
    with inverse_cdf_sampling():
        assert torch.multinomial(rows, 1).flatten().tolist() == [0, 2, 1]


def test_inverse_cdf_sampling_follows_the_global_seed_and_leaves_other_calls_alone():
    from minirl.lm.cpu_decode import inverse_cdf_sampling

    probs = torch.softmax(torch.randn(8, 50, generator=torch.Generator().manual_seed(0)), -1)
    with inverse_cdf_sampling():
        torch.manual_seed(3)
        a = torch.multinomial(probs, 1)
        torch.manual_seed(3)
        b = torch.multinomial(probs, 1)
        torch.manual_seed(4)
        c = torch.multinomial(probs, 1)
        g = torch.Generator().manual_seed(5)  # a generator, several draws or one row: torch.multinomial itself
        with_generator = torch.multinomial(probs, 1, generator=g)
        several = torch.multinomial(probs, 4, replacement=True, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(with_generator, torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(5)))
    assert torch.equal(
        several, torch.multinomial(probs, 4, replacement=True, generator=torch.Generator().manual_seed(6))
    )


def test_inverse_cdf_sampling_refuses_what_torch_refuses_and_restores_multinomial():
    from minirl.lm.cpu_decode import inverse_cdf_sampling

    for bad in (torch.tensor([[0.5, -0.1, 0.6]]), torch.tensor([[0.5, float("nan"), 0.5]]), torch.zeros(1, 3)):
        with pytest.raises(RuntimeError), inverse_cdf_sampling():
            torch.multinomial(bad, 1)
        assert torch.multinomial is _ORIGINAL_MULTINOMIAL
    with inverse_cdf_sampling(on=False):
        assert torch.multinomial is _ORIGINAL_MULTINOMIAL


def test_generate_draws_its_tokens_through_the_inverse_cdf(monkeypatch):
    """The tiny policy's seeded samples with the policy's CPU levers and with all but the sampler: other tokens
    for the same seed, so ``generate`` does call the swapped ``torch.multinomial`` (a transformers that stopped
    calling it would make them equal)."""
    import minirl.lm.policy as policy_module
    from minirl.lm.cpu_decode import grouped_kv_attention
    from minirl.lm.models import make_tiny_lm

    policy = make_tiny_lm(0, max_new_tokens=10)
    prompts = ["Sort: 3 1 2", "Sort: 9 4 7 1 5"]
    inverse_cdf = policy.sample(prompts, 4, temperature=1.0, generator=torch.Generator().manual_seed(0))
    monkeypatch.setattr(policy_module, "cpu_generation", grouped_kv_attention)
    multinomial = policy.sample(prompts, 4, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert not torch.equal(inverse_cdf.tokens, multinomial.tokens)

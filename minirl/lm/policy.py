"""HuggingFace causal language models as a ``minirl.protocols.Policy``.

A prompt is a chat: a string (the user's message), a list of messages ``[{"role": ..., "content": ...}]``
or any object with a ``.messages`` attribute (the text tasks' prompts). It is rendered with the
tokenizer's chat template (``add_generation_prompt=True``), tokenised and LEFT-padded, so that every
prompt ends at the same position and the responses start right after it.

Responses are sampled token by token with the KV cache (``model.generate``) and end at the first
end-of-sequence token (the tokenizer's ``eos_token``, ``<|im_end|>`` for ChatML models). Scoring them
is one forward pass over prompt + response, where the logits at position t − 1 score the token at t
(``completion_log_probs``); by default each prompt runs once and its KV cache is shared by the ``trial``
responses of its group, the beginning that all prompts of a batch share (a system message, a worked
example) runs once for the whole batch (``common_prefix_layout``), and the output layer runs only where a
token is scored (``kept_token_scores``: an episode's environment turns are most of its positions).

Shapes: prompts ``[batch, prompt_pos]``, responses and their log-probs ``[batch, trial, pos]``.

Two models wear it (``minirl.lm.models``): the tiny Llama built locally and SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from minirl.lm.cpu_decode import (
    Bfloat16Copy,
    cpu_generation,
    few_row_products,
    generation_form,
    grow_in_place,
    warn_if_bfloat16_is_emulated,
)
from minirl.lm.layout import common_prefix_layout, first_eos_mask
from minirl.lm.scoring import choice_log_probs, completion_log_probs, kept_choice_log_probs, kept_token_scores
from minirl.protocols import Rollout, TokenScores
from minirl.utils import draw_seed

__all__ = ["CausalLMPolicy", "common_prefix_layout", "completion_log_probs", "first_eos_mask"]


def _position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions that skip padding: cumsum of the mask − 1, clamped at 0. ``[batch, pos]``."""
    return (attention_mask.long().cumsum(dim=-1) - 1).clamp(min=0)


def _as_messages(prompt: Any) -> list[Mapping[str, str]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    messages = getattr(prompt, "messages", prompt)
    if (
        isinstance(messages, Sequence)
        and not isinstance(messages, str)
        and messages
        and all(isinstance(m, Mapping) and "role" in m and "content" in m for m in messages)
    ):
        return list(messages)
    raise ValueError(
        "each prompt must be a string, a list of {'role': ..., 'content': ...} messages or an object "
        f"with a .messages attribute; got {type(prompt).__name__}: {prompt!r:.100}"
    )


class CausalLMPolicy(nn.Module):
    """A HuggingFace causal LM + tokenizer that samples and scores chat responses (``minirl.protocols.Policy``).

    Args:
        model: a ``transformers`` causal LM (``LlamaForCausalLM``, ...).
        tokenizer: its tokenizer, with a chat template and an ``eos_token`` (the end of a response).
        max_new_tokens: the response length budget of ``sample`` and ``greedy`` (``Rollout.max_length``).
        share_prompt_cache: ``sample``, ``greedy`` and ``score`` run each prompt once and share its KV cache
            with the group's responses, and run the batch's common prefix once for all prompts (the same
            values and gradients as running every prompt + response, less compute).
        weight_first_decode: on a CPU, ``sample`` and ``greedy`` compute generation's matrix products of 2 to
            ``FEW_ROWS`` rows in the weight-first form (``minirl.lm.cpu_decode``; the same values, faster there);
            False keeps ``nn.Linear``'s form (``minirl.bench.cpu_decode`` times both).
        cpu_bfloat16: on a CPU too, the loss's passes run under bfloat16 autocast, as they always do on CUDA
            (weights and optimizer state stay float32), and ``sample`` and ``greedy`` generate with a bfloat16
            copy of the model (``minirl.lm.cpu_decode.Bfloat16Copy``). Off by default: it pays only where the CPU
            multiplies bfloat16 in hardware (AMX, ``cpu_has_bfloat16_units``) and changes the numbers of every
            run, so the CPU records made without it would no longer repeat; ``minirl.bench.agents --cpu-bf16``.
    """

    # a frozen copy doubles the model's memory and its forward pass is a large part of a step: the loop measures
    # the KL to the initial model only when asked (``minirl.protocols.Policy.cheap_reference``)
    cheap_reference = False

    def __init__(
        self,
        model: nn.Module,
        tokenizer,
        max_new_tokens: int = 32,
        *,
        share_prompt_cache: bool = True,
        weight_first_decode: bool = True,
        cpu_bfloat16: bool = False,
    ):
        super().__init__()
        if not (isinstance(max_new_tokens, int) and max_new_tokens > 0):
            raise ValueError(f"max_new_tokens must be a positive int; got {max_new_tokens!r}")
        if tokenizer.eos_token_id is None:
            raise ValueError("tokenizer must have an eos_token (the token that ends a response)")
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("tokenizer must have a chat_template (prompts are rendered as chats)")
        # Any: the code below uses the transformers API (generate, get_decoder, save_pretrained), which nn.Module's
        # typing does not know, and PreTrainedModel lacks generate (GenerationMixin's; Python has no intersection type)
        self.model: Any = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.share_prompt_cache = share_prompt_cache
        self.weight_first_decode = weight_first_decode
        if not isinstance(cpu_bfloat16, bool):
            raise ValueError(f"cpu_bfloat16 must be True or False; got {cpu_bfloat16!r}")
        self.cpu_bfloat16 = cpu_bfloat16
        self._bfloat16_copy: Bfloat16Copy | None = None  # made at the first generation that wants it

    # ---- small helpers -------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def eos_token_id(self) -> int:
        return self.tokenizer.eos_token_id

    @property
    def pad_token_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return self.eos_token_id if pad is None else pad

    @property
    def generation_form(self) -> str:
        """How ``sample`` and ``greedy`` run: ``"bfloat16 copy"``, ``"bfloat16 autocast"`` or the weights' format."""
        return generation_form(self.device.type, self.cpu_bfloat16, next(self.model.parameters()).dtype)

    def _autocast(self):
        """bfloat16 autocast for a float32 model on CUDA, and on a CPU when ``cpu_bfloat16``; else nothing."""
        device = self.device.type
        wanted = device == "cuda" or (device == "cpu" and self.cpu_bfloat16)
        if wanted and next(self.model.parameters()).dtype == torch.float32:
            return torch.autocast(device, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def _generating(self) -> Iterator[Any]:
        """No gradients, a forked RNG, on a CPU ``cpu_generation``, and the model to generate with: on a CPU
        with ``cpu_bfloat16`` its bfloat16 copy, refreshed from the current weights; else ``model`` itself under
        ``_autocast`` and ``_few_rows``."""
        with torch.no_grad(), self._fork_rng(), cpu_generation(self.device.type == "cpu"):
            if self.generation_form != "bfloat16 copy":
                with self._autocast(), self._few_rows():
                    yield self.model
                return
            if self._bfloat16_copy is None or self._bfloat16_copy.source is not self.model:
                warn_if_bfloat16_is_emulated()  # once a copy: on such a CPU cpu_bfloat16 only costs time
                self._bfloat16_copy = Bfloat16Copy(self.model)
            yield self._bfloat16_copy.refreshed()

    def _few_rows(self):
        """On a CPU, generation's few-row matrix products in the weight-first form (``minirl.lm.cpu_decode``),
        unless ``weight_first_decode`` is False."""
        on = self.weight_first_decode and self.device.type == "cpu"
        return few_row_products(self.model) if on else contextlib.nullcontext()

    def _fork_rng(self):
        devices = [self.device] if self.device.type == "cuda" else []
        return torch.random.fork_rng(devices=devices)

    def render(self, prompt: Any) -> str:
        """The text the model sees for one prompt: its chat template with the assistant's turn opened."""
        return self.tokenizer.apply_chat_template(_as_messages(prompt), add_generation_prompt=True, tokenize=False)

    def encode_prompts(self, prompts: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """Render, tokenise and LEFT-pad ``prompts`` -> ``(input_ids, attention_mask)``, ``[batch, prompt_pos]``."""
        if isinstance(prompts, str) or not isinstance(prompts, Sequence) or len(prompts) == 0:
            raise ValueError(f"prompts must be a non-empty list of prompts; got {type(prompts).__name__}")
        ids = [self.tokenizer(self.render(p), add_special_tokens=False)["input_ids"] for p in prompts]
        width = max(len(row) for row in ids)
        input_ids = torch.full((len(ids), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, row_ids in enumerate(ids):
            if row_ids:
                input_ids[row, width - len(row_ids) :] = torch.tensor(row_ids)
                attention_mask[row, width - len(row_ids) :] = 1
        return input_ids.to(self.device), attention_mask.to(self.device)

    def completions_to_rollout(
        self, completions: torch.Tensor, group_size: int, max_length: int | None = None
    ) -> Rollout:
        """Generated ids ``[(batch trial), pos]`` (rows of a prompt adjacent) -> a ``Rollout``.

        The mask is 1 up to and including each response's first EOS; later positions are set to the pad
        id and the columns after the longest response are dropped. The answers are the decoded responses
        (special tokens skipped, nothing after the first EOS). A response with no EOS was cut by the budget
        (``Rollout.truncated``).
        """
        tokens = rearrange(completions, "(batch trial) pos -> batch trial pos", trial=group_size)
        truncated = ~(tokens == self.eos_token_id).any(dim=-1).cpu()  # [batch, trial], before EOS pads the rest
        mask = first_eos_mask(tokens, self.eos_token_id)
        width = max(int(mask.sum(dim=-1).max().item()), 1) if tokens.shape[-1] else 0
        tokens = torch.where(mask.bool(), tokens, self.pad_token_id)[..., :width].contiguous()
        mask = mask[..., :width].contiguous()
        lengths = mask.sum(dim=-1).long().tolist()
        flat = [row[:n] for rows, ns in zip(tokens.tolist(), lengths) for row, n in zip(rows, ns)]
        texts = self.tokenizer.batch_decode(flat, skip_special_tokens=True)
        answers = [texts[b * group_size : (b + 1) * group_size] for b in range(tokens.shape[0])]
        return Rollout(tokens, mask, answers, self.max_new_tokens if max_length is None else max_length, truncated)

    # ---- sampling -------------------------------------------------------------------------------

    def _generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        *,
        group_size: int,
        do_sample: bool,
        temperature: float = 1.0,
        seed: int = 0,
        **generate_kwargs,
    ):
        """``model.generate`` with the KV cache and ``generation_kwargs``, seeded by ``seed``."""
        kwargs = {**self.generation_kwargs(temperature if do_sample else None), "use_cache": True, **generate_kwargs}
        with self._generating() as model:
            input_ids, attention_mask, cache = self.grouped_prompts(input_ids, attention_mask, group_size, model)
            if cache is not None:
                kwargs[self._cache_name] = cache
            torch.manual_seed(seed)
            return model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)

    def generation_kwargs(self, temperature: float | None) -> dict[str, Any]:
        """``generate``'s keywords for one reply: plain sampling at ``temperature`` (no top-k or top-p from the
        model's generation config, so the tokens are drawn from the very distribution the loss scores), the most
        likely token when None; the response budget, the end and the padding token."""
        tokens = {
            "max_new_tokens": self.max_new_tokens,
            "pad_token_id": self.pad_token_id,
            "eos_token_id": self.eos_token_id,
        }
        if temperature is None:
            return {"do_sample": False, **tokens}
        return {"do_sample": True, "temperature": float(temperature), "top_k": 0, "top_p": 1.0, **tokens}

    def grouped_prompts(self, ids: torch.Tensor, mask: torch.Tensor, group_size: int, model: Any):
        """Prompts ``[batch, prompt_pos]`` -> each repeated ``group_size`` times ``[(batch trial), prompt_pos]``
        and the KV cache of all but their last token, for ``model.generate`` to continue from (it then runs only
        the last token itself). With ``share_prompt_cache`` each prompt runs once and its cache is copied, and the
        batch's common prefix runs once (``common_prefix_layout``); without it the cache is None. On a CPU the
        cache grows in place (``grow_in_place``)."""
        share = self.share_prompt_cache
        n_prefix, laid_ids, laid_mask = common_prefix_layout(ids, mask) if share else (0, ids, mask)
        cache = None
        if share and (group_size > 1 or n_prefix > 0) and int(mask.sum(dim=1).min()) > 1:
            cache = self._kv_cache(self._prompt_cache(laid_ids[:, :-1], laid_mask[:, :-1], n_prefix, model))
            grow_in_place(cache, self.device.type == "cpu").batch_repeat_interleave(group_size)
        return laid_ids.repeat_interleave(group_size, dim=0), laid_mask.repeat_interleave(group_size, dim=0), cache

    def sample(
        self, prompts: Sequence[Any], group_size: int, *, temperature: float, generator: torch.Generator | None
    ) -> Rollout:
        """``group_size`` responses per prompt from π(· | x) at ``temperature`` -> ``Rollout`` ``[batch, trial, pos]``.

        The seed of ``generate`` is drawn from ``generator`` (from the global RNG when ``None``); generate
        runs on a forked RNG. So the same generator state gives the same responses, and a generator
        leaves the global RNG untouched.
        """
        if not (isinstance(group_size, int) and group_size > 0):
            raise ValueError(f"group_size must be a positive int; got {group_size!r}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0; got {temperature!r}")
        seed = draw_seed(generator)
        input_ids, attention_mask = self.encode_prompts(prompts)
        out = self._generate(
            input_ids, attention_mask, group_size=group_size, do_sample=True, temperature=temperature, seed=seed
        )
        return self.completions_to_rollout(out[:, input_ids.shape[1] :], group_size)

    def greedy(self, prompts: Sequence[Any]) -> Rollout:
        """The most likely token at every step: one response per prompt, ``[batch, 1, pos]``."""
        input_ids, attention_mask = self.encode_prompts(prompts)
        out = self._generate(input_ids, attention_mask, group_size=1, do_sample=False)
        return self.completions_to_rollout(out[:, input_ids.shape[1] :], 1)

    def rollout_from_texts(self, prompts: Sequence[Any], texts: Sequence[Sequence[str]]) -> Rollout:
        """Given responses (a list per prompt of ``trial`` strings; demonstrations) -> ``Rollout``.

        Each text is tokenised, followed by EOS and padded; ``max_length`` is ``max_new_tokens`` or the
        longest response, whichever is larger.
        """
        if len(texts) != len(prompts):
            raise ValueError(f"texts must hold one list per prompt ({len(prompts)}); got {len(texts)}")
        group_sizes = {len(group) for group in texts}
        if len(group_sizes) != 1 or 0 in group_sizes or any(isinstance(group, str) for group in texts):
            raise ValueError(f"texts must be lists of the same number (>= 1) of strings; got sizes {group_sizes}")
        group_size = group_sizes.pop()
        ids = [
            self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.eos_token_id]
            for group in texts
            for text in group
        ]
        width = max(len(row) for row in ids)
        tokens = torch.full((len(ids), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(ids), width))
        for row, row_ids in enumerate(ids):
            tokens[row, : len(row_ids)] = torch.tensor(row_ids)
            mask[row, : len(row_ids)] = 1.0
        to_3d = "(batch trial) pos -> batch trial pos"
        return Rollout(
            rearrange(tokens, to_3d, trial=group_size).to(self.device),
            rearrange(mask, to_3d, trial=group_size).to(self.device),
            [list(group) for group in texts],
            max(self.max_new_tokens, width),
            torch.zeros(len(prompts), group_size, dtype=torch.bool),  # every demonstration ends with EOS
        )

    # ---- scoring --------------------------------------------------------------------------------

    @property
    def _cache_name(self) -> str:
        """The name of the KV cache, as a keyword of the model and a field of its output: ``cache`` from
        transformers 5.24 on, ``past_key_values`` before (5.24 still takes the old name, with a warning)."""
        return "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

    def _kv_cache(self, output):
        """The KV cache of a forward pass's ``output``."""
        return getattr(output, self._cache_name)

    def _prompt_cache(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, n_prefix: int = 0, model=None):
        """Run prompts ``[batch, prompt_pos]`` through the model and keep their KV cache; the first
        ``n_prefix`` columns (the same in every row, ``common_prefix_layout``) run once and their cache is
        copied to every row (``batch_repeat_interleave`` is differentiable: gradients of all rows reach
        the one prefix). Returns the model's output: ``.logits`` of the last position ``[batch, 1, vocab]``
        and the cache (``_kv_cache``). ``model``: the model to run (None: ``self.model``)."""
        model = self.model if model is None else model
        positions = _position_ids(attention_mask)
        if not 0 < n_prefix < input_ids.shape[1]:
            return model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=1,
            )
        prefix = model(
            input_ids=input_ids[:1, :n_prefix],
            attention_mask=attention_mask[:1, :n_prefix],
            position_ids=positions[:1, :n_prefix],
            use_cache=True,
            logits_to_keep=1,
        )
        cache = self._kv_cache(prefix)
        cache.batch_repeat_interleave(input_ids.shape[0])
        return model(
            input_ids=input_ids[:, n_prefix:],
            attention_mask=attention_mask,
            position_ids=positions[:, n_prefix:],
            use_cache=True,
            logits_to_keep=1,
            **{self._cache_name: cache},
        )

    def _sequence_logits(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, responses: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One forward pass over prompt + response (each prompt repeated for its group): prompts
        ``[batch, prompt_pos]``, responses ``[(batch trial), pos]`` -> the logits of the last ``pos + 1``
        positions ``[(batch trial), pos + 1, vocab]`` (the prompt's last position, then the response's) and
        the ids at those positions ``[(batch trial), pos + 1]``."""
        group_size = responses.shape[0] // input_ids.shape[0]
        attn = torch.cat([attention_mask.repeat_interleave(group_size, dim=0), torch.ones_like(responses)], dim=1)
        seq = torch.cat([input_ids.repeat_interleave(group_size, dim=0), responses], dim=1)
        keep = responses.shape[1] + 1  # no logits for the rest of the prompt: they predict prompt tokens
        out = self.model(
            input_ids=seq, attention_mask=attn, position_ids=_position_ids(attn), use_cache=False, logits_to_keep=keep
        )
        return out.logits, seq[:, -keep:]

    def _response_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, responses: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One pass over the responses with the shared prompt KV cache: prompts ``[batch, prompt_pos]``, responses
        ``[(batch trial), pos]`` -> the logits predicting the first response token ``[(batch trial), 1, vocab]``
        and the last hidden states of the responses' positions that predict the others
        ``[(batch trial), pos - 1, hidden]`` (``None`` when ``pos == 1``; the output layer is applied by
        ``kept_token_scores``, only where a token is scored)."""
        group_size = responses.shape[0] // input_ids.shape[0]
        inputs = responses[:, :-1]  # the last response token predicts nothing we score
        # Each prompt once (their common prefix once); its last position predicts the first response token.
        n_prefix, input_ids, attention_mask = common_prefix_layout(input_ids, attention_mask)
        out = self._prompt_cache(input_ids, attention_mask, n_prefix)
        first = out.logits.repeat_interleave(group_size, dim=0)  # [(batch trial), 1, vocab]
        if responses.shape[1] == 1:
            return first, None
        cache = self._kv_cache(out)
        cache.batch_repeat_interleave(group_size)  # differentiable: repeat_interleave of every layer's keys/values
        attn = torch.cat([attention_mask.repeat_interleave(group_size, dim=0), torch.ones_like(inputs)], dim=1)
        hidden = self.model.get_decoder()(
            input_ids=inputs,
            attention_mask=attn,
            position_ids=_position_ids(attn)[:, -inputs.shape[1] :],
            use_cache=True,
            **{self._cache_name: cache},
        ).last_hidden_state
        return first, hidden

    def score(
        self,
        prompts: Sequence[Any],
        rollout: Rollout,
        *,
        temperature: float,
        share_prompt_cache: bool | None = None,
        choices: torch.Tensor | None = None,
    ) -> TokenScores:
        """log π(y_t | x, y_<t) at ``temperature`` of ``rollout``'s responses and the entropy of each
        step's distribution (nats), both ``[batch, trial, pos]`` with gradient; with ``choices`` ``[batch, trial,
        pos, k]`` (token ids, −1: none), also log π(c | x, y_<t) of each (``TokenScores.choices``).

        Values where ``rollout.mask`` is 0 (padding, an episode's environment turns) are finite but
        meaningless (mask them): with the shared prompt cache they are 0.0, as the output layer runs only on the
        real tokens (``kept_token_scores``). ``share_prompt_cache`` overrides the policy's setting (``None``: use
        it)."""
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0; got {temperature!r}")
        share = self.share_prompt_cache if share_prompt_cache is None else share_prompt_cache
        input_ids, attention_mask = self.encode_prompts(prompts)
        tokens = rollout.tokens.to(self.device)
        batch, trial, n_resp = tokens.shape
        if batch != input_ids.shape[0]:
            raise ValueError(
                f"rollout.tokens must have shape [batch, trial, pos] with batch = {input_ids.shape[0]} "
                f"prompts; got {list(tokens.shape)}"
            )
        if choices is not None and (choices.dim() != 4 or choices.shape[:3] != tokens.shape):
            raise ValueError(
                f"choices must have shape [batch, trial, pos, k] = {list(tokens.shape)} + [k]; got "
                f"{list(choices.shape)}"
            )
        if n_resp == 0:
            empty = torch.zeros((batch, trial, 0), device=self.device)
            return TokenScores(empty, empty.clone())
        responses = rearrange(tokens, "batch trial pos -> (batch trial) pos")
        picked = None if choices is None else rearrange(choices.to(self.device), "b t pos k -> (b t) pos k")
        if share:
            mask = torch.ones_like(tokens) if rollout.mask is None else rollout.mask.to(self.device)
            keep = rearrange(mask, "batch trial pos -> (batch trial) pos") > 0  # the real tokens: env turns are 0
            with self._autocast():
                first, hidden = self._response_states(input_ids, attention_mask, responses)
                log_p = F.log_softmax(first.float() / temperature, dim=-1)  # [(batch trial), 1, vocab]
                log_probs = log_p.gather(dim=-1, index=responses[:, :1].unsqueeze(-1)).squeeze(-1)
                entropy = -(log_p.exp() * log_p).sum(dim=-1)
                head = self.model.get_output_embeddings()
                if hidden is not None:
                    rest = kept_token_scores(head, hidden, responses[:, 1:], keep[:, 1:], temperature)
                    log_probs, entropy = torch.cat([log_probs, rest[0]], 1), torch.cat([entropy, rest[1]], 1)
                if picked is not None:
                    picked = kept_choice_log_probs(log_p, head, hidden, picked, temperature)
        else:
            with self._autocast():
                logits, ids = self._sequence_logits(input_ids, attention_mask, responses)
            logits = logits.float() / temperature  # [(batch trial), 1 + pos, vocab]: prompt's last position first
            log_probs = completion_log_probs(logits, ids, prompt_length=1)  # [(batch trial), pos]
            log_p = F.log_softmax(logits[:, :-1], dim=-1)
            entropy = -(log_p.exp() * log_p).sum(dim=-1)
            picked = None if picked is None else choice_log_probs(log_p, picked)
        to_3d = "(batch trial) pos -> batch trial pos"
        if picked is not None:
            picked = rearrange(picked, "(batch trial) pos k -> batch trial pos k", trial=trial)
        return TokenScores(rearrange(log_probs, to_3d, trial=trial), rearrange(entropy, to_3d, trial=trial), picked)

    # ---- which weights train -------------------------------------------------------------------

    def train_top_layers(self, n_layers: int | None) -> CausalLMPolicy:
        """Train only the top ``n_layers`` transformer blocks (and the final norm); None trains everything.

        Frozen (``requires_grad = False``): the token embedding (tied to the LM head in SmolLM2, so the
        head too) and the lowest ``num_hidden_layers − n_layers`` blocks. Autograd then stops at the lowest
        trainable block: an update costs a full forward pass but a backward pass through the top blocks
        only, and Adam keeps state for the trainable weights only: what that saves on SmolLM2 on 2 CPU cores is
        measured in RESULTS.md, "SmolLM2 on 2 CPU cores". Returns self.
        """
        blocks = self.model.get_decoder().layers
        if n_layers is not None and not (isinstance(n_layers, int) and 1 <= n_layers <= len(blocks)):
            raise ValueError(
                f"n_layers must be None or an int in [1, {len(blocks)}] (the model's "
                f"num_hidden_layers); got {n_layers!r}"
            )
        self.model.requires_grad_(True)
        if n_layers is not None:
            self.model.get_input_embeddings().requires_grad_(False)
            for block in blocks[: len(blocks) - n_layers]:
                block.requires_grad_(False)
        return self

    # ---- saving ---------------------------------------------------------------------------------

    def save_pretrained(self, path: str | os.PathLike) -> None:
        """Write the model and the tokenizer to the folder ``path``; ``load_policy(path)`` reads them back."""
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)

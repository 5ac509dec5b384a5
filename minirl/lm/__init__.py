"""A real language model in the one loop: the policy, the two models, the recipes, and the bridge to TRL.

- ``minirl.lm.policy``: ``CausalLMPolicy`` (a HuggingFace causal LM as a ``minirl.protocols.Policy``);
  ``minirl.lm.layout``: ``first_eos_mask``, ``common_prefix_layout``; ``minirl.lm.scoring``:
  ``completion_log_probs``, ``kept_token_scores`` (the output layer only where a token is scored) and
  ``choice_log_probs`` (the log-probabilities of a set of tokens, for a demonstrator's choices);
- ``minirl.lm.models``: the tiny model (``make_tiny_lm``) and the shipped SmolLM2 (``load_policy``, its file
  and its cache);
- ``minirl.lm.recipes``: how each kind of model is trained: ``LMRecipe`` (one per kind, in ``RECIPES``),
  ``lm_algorithm``; ``minirl.lm.warm_start``: ``sft_warm_start``, the supervised warm start;
- ``minirl.lm.trl_bridge``: the same run with TRL's ``GRPOTrainer`` (imported by name, not re-exported here).
"""

from minirl.lm.layout import common_prefix_layout, first_eos_mask
from minirl.lm.models import (
    CHATML_TEMPLATE,
    SMOLLM2_ALIAS,
    build_tiny_tokenizer,
    default_device,
    load_policy,
    make_tiny_lm,
    smollm2_cache_dir,
    smollm2_folder,
    smollm2_gguf_path,
    tiny_lm_config,
)
from minirl.lm.policy import CausalLMPolicy
from minirl.lm.recipes import LM_CHANGES, RECIPES, LMRecipe, lm_algorithm, model_kind, recipe_for, sft_warm_start
from minirl.lm.scoring import completion_log_probs

__all__ = [
    "CHATML_TEMPLATE",
    "LM_CHANGES",
    "RECIPES",
    "SMOLLM2_ALIAS",
    "CausalLMPolicy",
    "LMRecipe",
    "build_tiny_tokenizer",
    "common_prefix_layout",
    "completion_log_probs",
    "default_device",
    "first_eos_mask",
    "lm_algorithm",
    "load_policy",
    "make_tiny_lm",
    "model_kind",
    "recipe_for",
    "sft_warm_start",
    "smollm2_cache_dir",
    "smollm2_folder",
    "smollm2_gguf_path",
    "tiny_lm_config",
]

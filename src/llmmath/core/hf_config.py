"""Read a Hugging Face ``config.json`` into a :class:`~llmmath.core.models.ModelConfig`, offline.

The families the course's model covers (:data:`FAMILIES`): Llama, Llama 4, Mistral, Mixtral,
Qwen2/2.5, Qwen3 (dense and MoE), Phi-3, Gemma 1-4, gpt-oss and DeepSeek-V2/V3 (MLA, shared
experts, dense first layers), DeepSeek-V3.2 and GLM-5 (MLA with sparse attention), GLM-4.5
and MiniMax-M2, and the hybrids Qwen3-Next, Qwen3.5/3.6 MoE, Jamba, Nemotron-H, Kimi Linear
and MiniMax-M1. A multimodal wrapper's text model is read from its
``text_config``; a field the config leaves out takes the default of the family's
``transformers`` config class. Each field the course needs is read by its Hugging Face name;
a field that would change the count in a way the model does not describe raises a
``ValueError`` naming it. Sliding-window and chunked attention come from ``layer_types``,
``sliding_window_pattern`` or the family's fixed pattern, so the KV cache is counted exactly.
What is read but left out of the arithmetic (biases, a vision encoder, a multi-token-prediction
head) comes back as notes. :func:`weight_format` reads ``quantization_config``: which format
holds each part of the weights.

>>> spec, notes = model_from_hf_config(
...     {"model_type": "llama", "hidden_size": 64, "intermediate_size": 256,
...      "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
...      "vocab_size": 1000, "max_position_embeddings": 2048}, "toy")
>>> spec.head_dim, spec.total_params, notes
(8, 366144, [])
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from llmmath.core.hf_hybrid import block_pattern, hybrid_layers
from llmmath.core.hf_quant import (
    QUANT_METHODS,
    CheckpointFormats,
    checkpoint_formats,
    kv_cache_format,
    quantization_config,
    weight_format,
)
from llmmath.core.models import ModelConfig

#: model_type -> the defaults of its ``transformers`` config class that the count needs when
#: the config is silent (``tie_word_embeddings`` always; vocabulary, context, window and the
#: layer pattern where a published config leaves them out, as Gemma 3's does).
FAMILIES: dict[str, dict[str, Any]] = {
    "llama": {"tie_word_embeddings": False},
    "llama4_text": {"tie_word_embeddings": False, "no_rope_layer_interval": 4},
    "mistral": {"tie_word_embeddings": False},
    "mixtral": {"tie_word_embeddings": False},
    "qwen2": {"tie_word_embeddings": False},
    "qwen3": {"tie_word_embeddings": False},
    "qwen3_moe": {"tie_word_embeddings": False},
    "phi3": {"tie_word_embeddings": False},
    "gemma": {"tie_word_embeddings": True},
    "gemma2": {"tie_word_embeddings": True, "sliding_window_pattern": 2},
    "gemma3_text": {
        "tie_word_embeddings": True,
        "vocab_size": 262_208,
        "max_position_embeddings": 131_072,
        "head_dim": 256,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
        "hidden_activation": "gelu_pytorch_tanh",
    },
    "gemma4_text": {"tie_word_embeddings": True, "hidden_activation": "gelu_pytorch_tanh"},
    "gpt_oss": {"tie_word_embeddings": False},
    "deepseek_v2": {"tie_word_embeddings": False},
    "deepseek_v3": {"tie_word_embeddings": False},
    "deepseek_v32": {"tie_word_embeddings": False},  # DeepSeek-V3.2: V3 plus sparse attention
    "glm4_moe": {"tie_word_embeddings": False},  # GLM-4.5, 4.6, 4.7: DeepSeek-style MoE, GQA
    "glm_moe_dsa": {"tie_word_embeddings": False},  # GLM-5: DeepSeek-V3.2's MLA and indexer
    "qwen3_vl_moe_text": {"tie_word_embeddings": False},  # Qwen3-VL's text model: qwen3_moe
    # Hybrids: gated DeltaNet layers beside gated attention (Qwen3-Next, Qwen3.5/3.6 MoE) ...
    "qwen3_next": {"tie_word_embeddings": False, "full_attention_interval": 4},
    "qwen3_5_moe_text": {"tie_word_embeddings": False, "full_attention_interval": 4},
    # ... and Mamba layers beside attention, MoE every other layer (Jamba, JambaConfig's
    # defaults where a config is silent).
    "jamba": {
        "tie_word_embeddings": False,
        "attn_layer_period": 8,
        "attn_layer_offset": 4,
        "expert_layer_period": 2,
        "expert_layer_offset": 1,
        "mamba_d_state": 16,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_conv_bias": True,
        "mamba_proj_bias": False,
    },
    # ... and lightning (linear) attention beside softmax attention, MoE in every layer
    # (MiniMax-M1: attn_type_list 0 / 1; MiniMaxM1Config's defaults where a config is silent).
    "minimax_m1": {"tie_word_embeddings": False, "shared_intermediate_size": 0},
    # ... and Mamba-2 blocks, attention blocks and squared-ReLU MLP blocks, each alone
    # (Nemotron-H, Nemotron Nano 2; NemotronHConfig's defaults where a config is silent).
    "nemotron_h": {
        "tie_word_embeddings": False,
        "mamba_num_heads": 128,
        "mamba_head_dim": 64,
        "ssm_state_size": 128,
        "n_groups": 8,
        "conv_kernel": 4,
        "use_conv_bias": True,
        "mlp_hidden_act": "relu2",
    },
    # ... and Kimi Delta Attention beside MLA, MoE after one dense layer (Kimi Linear).
    "kimi_linear": {"tie_word_embeddings": False},
    # MiniMax-M2: softmax attention (GQA, q/k norms) in every layer, 256 experts top-8 as wide
    # as intermediate_size, no shared expert.
    "minimax_m2": {"tie_word_embeddings": False, "shared_intermediate_size": 0},
}
#: Multimodal wrappers: their text model sits under ``text_config`` (the vision encoder is
#: not counted); the value is the text model's family when ``text_config`` names none.
WRAPPERS = {
    "gemma3": "gemma3_text",
    "gemma4": "gemma4_text",
    "llama4": "llama4_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "mistral3": "mistral",  # Mistral Small 3.1 / 3.2, Magistral, Devstral
    "kimi_k25": "kimi_k2",  # Kimi K2.5: resolved through its text_config's architectures
    "qwen3_5_moe": "qwen3_5_moe_text",  # Qwen3.5 and Qwen3.6 MoE
}
#: The model classes a config's ``architectures`` may name, and the family each is read as,
#: for a ``model_type`` the reader does not know (Kimi K2's ``kimi_k2`` runs as
#: ``DeepseekV3ForCausalLM``, as vLLM and SGLang resolve it).
ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV32ForCausalLM": "deepseek_v32",
    "Glm4MoeForCausalLM": "glm4_moe",
    "GlmMoeDsaForCausalLM": "glm_moe_dsa",
    "MiniMaxM1ForCausalLM": "minimax_m1",
    "MiniMaxText01ForCausalLM": "minimax_m1",  # MiniMax-Text-01: the same layers
    "MiniMaxM2ForCausalLM": "minimax_m2",
    "NemotronHForCausalLM": "nemotron_h",
    "KimiLinearForCausalLM": "kimi_linear",
}

#: The names a config gives the experts each token is routed to (Kimi Linear's the last).
PER_TOKEN_KEYS = (
    "num_experts_per_tok",
    "experts_per_token",
    "top_k_experts",
    "num_experts_per_token",
)
#: Activations whose MLP is gated (three matrices: gate, up, down), as the course counts.
GATED_ACTIVATIONS = ("silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new")
#: The largest number a size field may hold (layers, widths, vocabulary, context).
MAX_FIELD = 10**15
#: Attention kinds in ``layer_types``: a window (or chunk) of tokens, or the whole context.
LOCAL_KINDS = ("sliding_attention", "chunked_attention")
GLOBAL_KINDS = ("full_attention",)
#: Families whose attention is DeepSeek's multi-head latent attention, and those of them that
#: add DeepSeek Sparse Attention's indexer.
LATENT_FAMILIES = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "kimi_linear")
SPARSE_FAMILIES = ("deepseek_v32", "glm_moe_dsa")


class _Reader:
    """Fields of one config, read by name, with errors that name the field and the file."""

    def __init__(self, config: dict[str, Any], where: str, defaults: dict[str, Any]) -> None:
        self.config, self.where, self.defaults = config, where, defaults

    def get(self, key: str) -> Any:
        value = self.config.get(key)
        return self.defaults.get(key) if value is None else value

    def count(self, key: str, default: int | None = None, *, low: int = 1) -> int:
        """A whole number from ``low`` to 10^15 (a JSON integer, not a string or a float)."""
        value = self.get(key)
        value = default if value is None else value
        if value is None:
            raise ValueError(f"{self.where}: field {key!r} is missing (the course needs it)")
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_FIELD:
            raise ValueError(
                f"{self.where}: field {key!r} must be a whole number from {low} to 10^15; "
                f"got {value!r}"
            )
        return value

    def optional_int(self, key: str) -> int:
        """0 where the field is absent, null or 0 (e.g. DeepSeek-V2-Lite's q_lora_rank)."""
        return 0 if self.get(key) is None else self.count(key, low=0)

    def width(self, key: str, default: int) -> int:
        """A width that may be left out (``default`` then) but is never 0 when given."""
        return default if self.get(key) is None else self.count(key)

    def flag(self, key: str) -> bool:
        """A JSON boolean (false where absent or null); a string or a number is refused."""
        value = self.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise ValueError(
                f"{self.where}: field {key!r} must be true or false (a JSON boolean); got {value!r}"
            )
        return value

    def require(self, key: str, allowed: tuple[object, ...], why: str) -> None:
        value = self.get(key)
        if value is not None and value not in allowed:
            raise ValueError(
                f"{self.where}: field {key!r} = {value!r} is not understood ({why}); "
                f"the course's model handles {', '.join(map(repr, allowed))}"
            )


def text_model(config: Any, where: str = "config.json") -> tuple[dict[str, Any], str]:
    """The text model's fields and family: ``config`` itself, or a wrapper's ``text_config``
    (its family from the wrapper when the text config names none). A ``model_type`` the
    reader does not know is read as the model class its ``architectures`` names, where that
    class is one of :data:`ARCHITECTURES` (Kimi K2's ``kimi_k2`` is DeepSeek-V3's)."""
    if not isinstance(config, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(config).__name__}")
    text, family = config, config.get("model_type")
    if isinstance(family, str) and family in WRAPPERS:
        inner = config.get("text_config")
        if not isinstance(inner, dict):
            raise ValueError(f"{where}: field 'text_config' must be an object for {family!r}")
        text = {"tie_word_embeddings": config.get("tie_word_embeddings"), **inner}
        family = text["model_type"] = inner.get("model_type") or WRAPPERS[family]
    if isinstance(family, str) and family in FAMILIES:
        return text, family
    if family is not None and not isinstance(family, str):
        raise ValueError(f"{where}: field 'model_type' = {family!r} is not understood (a string)")
    classes = text.get("architectures")
    resolved = [
        ARCHITECTURES[c] for c in classes or () if isinstance(c, str) and c in ARCHITECTURES
    ]
    if isinstance(classes, list) and resolved:
        return text, resolved[0]
    known = sorted([*FAMILIES, *WRAPPERS])
    raise ValueError(
        f"{where}: field 'model_type' = {family!r} is not understood, nor is 'architectures' = "
        f"{classes!r}; known model types: {', '.join(known)}; known architectures: "
        f"{', '.join(ARCHITECTURES)}"
    )


def model_from_hf_config(
    config: dict[str, Any], name: str, where: str = "config.json"
) -> tuple[ModelConfig, list[str]]:
    """The :class:`ModelConfig` of a Hugging Face config dict, and notes on what is left out.

    Llama-style fields: ``num_hidden_layers`` (L), ``hidden_size`` (D),
    ``intermediate_size`` (F), ``num_attention_heads`` (N), ``num_key_value_heads`` (K,
    default N), ``head_dim`` (H, default D/N), ``vocab_size``, ``max_position_embeddings``,
    ``tie_word_embeddings``. Sparse attention (``deepseek_v32``): ``index_topk``,
    ``index_n_heads``, ``index_head_dim``. MoE: ``num_local_experts``, ``n_routed_experts`` or
    ``num_experts`` (E), ``num_experts_per_tok``, ``experts_per_token`` or ``top_k_experts``
    (k), ``n_shared_experts``, ``moe_intermediate_size``, ``first_k_dense_replace``. MLA:
    ``kv_lora_rank``, ``q_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``,
    ``v_head_dim`` (GLM-5's wider than its keys). Windows: ``sliding_window`` (or Llama 4's
    ``attention_chunk_size``) with ``layer_types`` or ``sliding_window_pattern``; Gemma 4's
    ``global_head_dim``, ``num_global_key_value_heads`` and ``attention_k_eq_v``.
    """
    text, family = text_model(config, where)
    read = _Reader(text, where, FAMILIES[family])
    read.flag("tie_word_embeddings")  # refused unless a JSON boolean
    act_key = "hidden_activation" if read.get("hidden_activation") else "hidden_act"
    if family == "nemotron_h":  # its MLP's own field; hidden_act is not read by its code
        read.require("mlp_hidden_act", ("relu2",), "an ungated squared-ReLU MLP, up and down")
    else:
        read.require(act_key, GATED_ACTIVATIONS, "a gated MLP of three matrices")
    for key, why in (
        ("hidden_size_per_layer_input", "per-layer input embeddings, read for Gemma 4 only"),
        ("num_kv_shared_layers", "layers that share another layer's KV cache, Gemma 4's only"),
    ):
        if read.get(key) and family != "gemma4_text":
            raise ValueError(f"{where}: field {key!r} = {read.get(key)!r} is not modelled ({why})")
    if family in ("minimax_m1", "minimax_m2"):
        read.require("shared_intermediate_size", (0,), "no shared expert beside the routed ones")
    if family == "minimax_m2" and any(kind != 1 for kind in read.get("attn_type_list") or ()):
        raise ValueError(
            f"{where}: field 'attn_type_list' has a 0 (a lightning layer); MiniMax-M2 attends "
            "with softmax in every layer (a lightning hybrid is model_type minimax_m1)"
        )
    D, N = read.count("hidden_size"), read.count("num_attention_heads")
    dense_width = {"qwen3_5_moe_text": lambda: read.count("moe_intermediate_size")}
    blocks = len(block_pattern(read)) if family == "nemotron_h" else None
    shape: dict[str, Any] = {
        "n_layers": read.count("num_hidden_layers", blocks),
        "d_model": D,
        # Qwen3.5 MoE has no dense MLP, and no intermediate_size: d_ff is then unused.
        "d_ff": read.count("intermediate_size", dense_width.get(family, lambda: None)()),
        "n_heads": N,
        "n_kv_heads": read.count("num_key_value_heads", N),
        "head_dim": read.width("head_dim", read.width("attention_head_dim", D // N)),
        "vocab_size": read.count("vocab_size"),
        "max_context": read.count("max_position_embeddings"),
        "tied_embeddings": read.flag("tie_word_embeddings"),
        "source": f"Hugging Face config.json ({where})",
    }
    shape.update(_experts(read, family) if family != "nemotron_h" else {})
    if family == "gemma4_text":
        shape.update(_e_model(read, shape["vocab_size"]))
    shape.update(hybrid_layers(read, family, shape["n_layers"], D))
    if family in LATENT_FAMILIES:
        shape.update(_latent_attention(read))
    if family in SPARSE_FAMILIES:
        shape.update(_sparse_indexer(read, shape["n_layers"], shape.get("n_dense_layers", 0)))
    shape.update(_attention_pattern(read, family, shape["n_layers"], shape["max_context"]))
    return ModelConfig(name=name, **shape), _notes(read, family, config)


def _experts(read: _Reader, family: str) -> dict[str, int]:
    if family == "gemma4_text" and not read.flag("enable_moe_block"):
        return {}
    keys = ("num_local_experts", "n_routed_experts", "num_experts")
    key = next((k for k in keys if read.get(k) is not None), None)
    if key is None:
        return {}
    read.require("moe_layer_freq", (1,), "every layer after the dense ones is an MoE layer")
    read.require("decoder_sparse_step", (1,), "every layer an MoE layer")
    if read.get("mlp_only_layers"):
        raise ValueError(f"{read.where}: field 'mlp_only_layers' is not modelled (dense layers "
                         "among MoE ones); only leading dense layers are")  # fmt: skip
    per_token = next((k for k in PER_TOKEN_KEYS if read.get(k)), "num_experts_per_tok")
    experts = {
        "n_experts": read.count(key),
        "experts_per_token": read.count(per_token),
        "n_dense_layers": read.optional_int("first_k_dense_replace"),
        **_expert_groups(read),
    }
    width = read.optional_int("moe_intermediate_size")
    if family == "llama4_text":  # one shared expert as wide as the routed ones
        experts.update(n_shared_experts=1, d_ff_expert=read.count("intermediate_size"))
        experts.update(_interleaved_dense_layers(read))
    elif family == "gemma4_text":  # a dense MLP beside the experts, as shared experts
        dense = read.count("intermediate_size")
        if dense % width:
            raise ValueError(
                f"{read.where}: field 'intermediate_size' = {dense} is not a multiple of "
                f"'moe_intermediate_size' = {width} (its dense MLP is counted as shared experts)"
            )
        experts.update(n_shared_experts=dense // width, d_ff_expert=width)
    elif family == "jamba":  # MoE every expert_layer_period-th layer, dense MLPs between
        period, offset = read.count("expert_layer_period"), read.count("expert_layer_offset", low=0)
        layers = read.count("num_hidden_layers")
        experts.update(n_dense_layers=layers - sum(i % period == offset for i in range(layers)))
    elif width:
        shared = read.optional_int("shared_expert_intermediate_size")  # Qwen: one, this wide
        if shared % width:
            raise ValueError(
                f"{read.where}: field 'shared_expert_intermediate_size' = {shared} is not a "
                f"multiple of 'moe_intermediate_size' = {width} (counted as shared experts)"
            )
        count = shared // width if shared else read.optional_int("n_shared_experts")
        count = count or read.optional_int("num_shared_experts")  # Kimi Linear's name
        experts.update(n_shared_experts=count, d_ff_expert=width)
    return experts


def _expert_groups(read: _Reader) -> dict[str, int]:
    """DeepSeek's group-limited routing: ``n_group`` groups of experts, a token's from
    ``topk_group`` of them, where the router uses them (``topk_method`` ``noaux_tc``, V3, or
    ``group_limited_greedy``, V2; ``greedy`` ignores the groups)."""
    groups = read.optional_int("n_group") or read.optional_int("num_expert_group")  # Kimi's
    per_token = read.optional_int("topk_group")
    if groups <= 1 or not per_token or per_token >= groups or read.get("topk_method") == "greedy":
        return {}
    return {"expert_groups": groups, "expert_groups_per_token": per_token}


def _e_model(read: _Reader, vocab: int) -> dict[str, Any]:
    """Gemma 4 E2B/E4B: per-layer input embeddings (``hidden_size_per_layer_input`` wide, a
    table of ``vocab_size_per_layer_input`` rows), the last ``num_kv_shared_layers`` layers
    reusing earlier layers' keys and values, and their MLPs doubled (``use_double_wide_mlp``)."""
    width = read.optional_int("hidden_size_per_layer_input")
    shared = read.optional_int("num_kv_shared_layers")
    return {
        "per_layer_input_dim": width,
        "per_layer_vocab_size": read.count("vocab_size_per_layer_input", vocab) if width else 0,
        "n_kv_shared_layers": shared,
        "double_wide_shared_mlp": read.flag("use_double_wide_mlp") and bool(shared),
    }


def _interleaved_dense_layers(read: _Reader) -> dict[str, int]:
    """Llama 4's ``interleave_moe_layer_step`` s: layer i is an MoE layer when (i + 1) % s == 0
    (``transformers``' ``moe_layers``), the others dense MLPs ``intermediate_size_mlp`` wide
    (Maverick: s = 2, every other layer). The count is what the arithmetic needs."""
    step = read.width("interleave_moe_layer_step", 1)
    layers = read.count("num_hidden_layers")
    if step == 1:
        return {}
    if step > layers:
        raise ValueError(
            f"{read.where}: field 'interleave_moe_layer_step' = {step} leaves no MoE layer "
            f"among {layers}; it must be from 1 to num_hidden_layers"
        )
    return {"n_dense_layers": layers - layers // step, "d_ff": read.count("intermediate_size_mlp")}


def _latent_attention(read: _Reader) -> dict[str, int]:
    nope = read.count("qk_nope_head_dim")
    values = read.width("v_head_dim", nope)
    return {
        "head_dim": nope,
        "mla_v_head_dim": 0 if values == nope else values,
        "mla_kv_lora_rank": read.count("kv_lora_rank"),
        "mla_q_lora_rank": read.optional_int("q_lora_rank"),
        "mla_rope_head_dim": read.count("qk_rope_head_dim"),
    }


def _sparse_indexer(read: _Reader, layers: int, dense: int) -> dict[str, int]:
    """DeepSeek Sparse Attention's lightning indexer (``index_topk``, ``index_n_heads``,
    ``index_head_dim``); its key per token and layer held as DeepSeek's reference code holds
    it (inference/model.py of DeepSeek-V3.2-Exp): fp8, one fp32 scale per 128 numbers. An
    indexer in every layer (``indexer_types`` all "full", where given) and the MLPs as
    ``first_k_dense_replace`` says (``mlp_layer_types``, where given, must agree)."""
    kinds = read.get("indexer_types")
    if kinds is not None and (not isinstance(kinds, list) or set(kinds) != {"full"}):
        raise ValueError(
            f"{read.where}: field 'indexer_types' = {kinds!r} is not modelled: the course "
            'counts an indexer of its own in every layer ("full"; a "shared" layer reuses '
            "another's top-k)"
        )
    mlps = read.get("mlp_layer_types")
    if mlps is not None and mlps != ["dense"] * dense + ["sparse"] * (layers - dense):
        raise ValueError(
            f"{read.where}: field 'mlp_layer_types' must be {dense} 'dense' then "
            f"{layers - dense} 'sparse' (first_k_dense_replace = {dense}); other orders are "
            "not modelled"
        )
    dim = read.count("index_head_dim")
    return {
        "index_topk": read.count("index_topk"),
        "index_n_heads": read.count("index_n_heads"),
        "index_head_dim": dim,
        "index_key_bytes": dim + 4 * -(-dim // 128),
    }


def _attention_pattern(read: _Reader, family: str, layers: int, context: int) -> dict[str, Any]:
    """Sliding-window fields: the window, and ``local_per_global`` from the layer pattern."""
    window_key = "attention_chunk_size" if family == "llama4_text" else "sliding_window"
    window = read.optional_int(window_key)
    if not window or read.get("use_sliding_window") is False or window >= context:
        return {}
    types = read.get("layer_types")
    if family == "llama4_text" and not types:  # every no_rope_layer_interval-th layer global
        every = read.count("no_rope_layer_interval")
        types = ["full_attention" if (i + 1) % every == 0 else "chunked_attention"
                 for i in range(layers)]  # fmt: skip
    if types is None and read.get("sliding_window_pattern"):
        every = read.count("sliding_window_pattern")
        types = ["full_attention" if (i + 1) % every == 0 else "sliding_attention"
                 for i in range(layers)]  # fmt: skip
    local_per_global = 0  # no pattern: every layer attends to the window (Mistral, Phi-3)
    if types is not None:
        local_per_global = _pattern(types, layers, read.where)
        if local_per_global < 0:
            return {}  # every layer global
    fields: dict[str, Any] = {"sliding_window": window, "local_per_global": local_per_global}
    if family == "gemma4_text" and local_per_global:
        fields.update(
            global_head_dim=read.optional_int("global_head_dim"),
            global_kv_heads=read.optional_int("num_global_key_value_heads"),
            global_k_eq_v=read.flag("attention_k_eq_v"),
        )
    return fields


def _pattern(types: Any, layers: int, where: str) -> int:
    """``local_per_global`` s of a ``layer_types`` list: layer i global when (i+1) % (s+1) == 0
    (0: every layer local; -1: every layer global)."""
    kinds = (*LOCAL_KINDS, *GLOBAL_KINDS)
    if not isinstance(types, list) or len(types) != layers or any(t not in kinds for t in types):
        raise ValueError(
            f"{where}: field 'layer_types' must list one of {', '.join(kinds)} per layer "
            f"({layers} layers)"
        )
    glob = [t in GLOBAL_KINDS for t in types]
    if all(glob):
        return -1
    s = glob.index(True) if any(glob) else 0
    if any(glob) and glob != [(i + 1) % (s + 1) == 0 for i in range(layers)]:
        raise ValueError(
            f"{where}: field 'layer_types' is not {s} windowed layers then one global, "
            "repeated: the course's model counts that pattern only"
        )
    return s


def _notes(read: _Reader, family: str, outer: dict[str, Any]) -> list[str]:
    """What the config describes that the course's arithmetic leaves out."""
    notes = []
    named = read.config.get("model_type")
    if not (isinstance(named, str) and named in FAMILIES):
        classes = ", ".join(map(str, read.get("architectures")))
        notes.append(f"model_type {named!r} is read as {family} ({classes}, its architectures)")
    if read.get("attention_bias") or family == "qwen2" or family == "gpt_oss":
        notes.append("biases are not counted (under 0.1% of the weights)")
    if family in ("qwen3_next", "qwen3_5_moe_text", "jamba", "minimax_m1", "nemotron_h",
                  "kimi_linear"):  # fmt: skip
        notes.append(
            "state layers hold a constant state per sequence and cache no tokens; their "
            "recurrence's FLOPs (a few per state number a token) are not counted"
        )
    if family in SPARSE_FAMILIES:
        notes.append(
            "sparse attention: a step reads index_topk tokens' KV and every token's index key "
            "(fp8 with an fp32 scale per 128, as DeepSeek's code holds it); all are cached"
        )
    if read.get("num_nextn_predict_layers") or read.get("mtp_num_hidden_layers"):
        notes.append("the multi-token-prediction module is not counted (as in published totals)")
    if "vision_config" in outer:
        notes.append("the vision encoder is not counted: the text model only")
    if family == "llama4_text" and read.get("attention_chunk_size"):
        notes.append(
            f"chunked attention (chunks of {read.get('attention_chunk_size')} tokens) is "
            "counted as a sliding window of that size: an upper bound on its KV cache"
        )
    window = read.get("sliding_window")
    if family in ("mistral", "phi3", "mixtral") and window and read.get("layer_types") is None:
        notes.append(
            f"sliding_window={window} on every layer: each caches at most {window} tokens, "
            "as transformers' attention does; an engine that ignores the window caches more"
        )
    return notes


def read_checkpoint(
    path: str | os.PathLike[str],
) -> tuple[ModelConfig, list[str], CheckpointFormats]:
    """:func:`read_hf_config` and the formats the checkpoint names (its weights', its KV
    cache's and its own: :func:`~llmmath.core.hf_quant.checkpoint_formats`)."""
    file = Path(path)
    try:
        config = json.loads(file.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{file}: not valid JSON ({error.msg} at line {error.lineno})") from None
    except RecursionError:
        raise ValueError(
            f"{file}: JSON nested too deeply to read (a config.json nests a few levels)"
        ) from None
    name = file.parent.name if file.name == "config.json" and file.parent.name else file.stem
    spec, notes = model_from_hf_config(config, name, str(file))
    return spec, notes, checkpoint_formats(config, spec, str(file))


def read_hf_config(path: str | os.PathLike[str]) -> tuple[ModelConfig, list[str]]:
    """:func:`model_from_hf_config` of a ``config.json`` file; the model is named after its
    folder (``.../Llama-3-8B/config.json`` -> ``Llama-3-8B``) or the file's stem."""
    spec, notes, _ = read_checkpoint(path)
    return spec, notes


__all__ = [
    "ARCHITECTURES",
    "FAMILIES",
    "GATED_ACTIVATIONS",
    "QUANT_METHODS",
    "WRAPPERS",
    "kv_cache_format",
    "model_from_hf_config",
    "quantization_config",
    "read_checkpoint",
    "read_hf_config",
    "text_model",
    "weight_format",
]

"""Read a Hugging Face ``config.json`` into a :class:`~llmmath.models.ModelConfig`, offline.

The families the course's model covers: Llama, Mistral, Mixtral, Qwen2/Qwen2.5, Gemma and
Gemma 2 (dense or MoE, GQA) and DeepSeek-V2/V3 (MLA, shared experts, dense first layers).
Each field the course needs is read by its Hugging Face name; a field that would change the
count in a way the model does not describe raises a ``ValueError`` naming it, and so does an
architecture not in :data:`FAMILIES`. What is read but left out of the arithmetic (a sliding
window, biases, a multi-token-prediction head) comes back as notes.

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

from .models import ModelConfig

#: model_type -> whether the input and output embeddings are tied when the config is silent
#: (the default of each family's ``transformers`` config class).
FAMILIES: dict[str, bool] = {
    "llama": False,
    "mistral": False,
    "mixtral": False,
    "qwen2": False,
    "gemma": True,
    "gemma2": True,
    "deepseek_v2": False,
    "deepseek_v3": False,
}

#: The largest number a size field may hold (layers, widths, vocabulary, context).
MAX_FIELD = 10**15

#: Activations whose MLP is gated (three matrices: gate, up, down), as the course counts.
GATED_ACTIVATIONS = ("silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new")


class _Reader:
    """Fields of one config, read by name, with errors that name the field and the file."""

    def __init__(self, config: dict[str, Any], where: str) -> None:
        self.config, self.where = config, where

    def count(self, key: str, default: int | None = None, *, low: int = 1) -> int:
        """A whole number from ``low`` to 10^15 (a JSON integer, not a string or a float)."""
        value = self.config.get(key)
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
        return 0 if self.config.get(key) is None else self.count(key, low=0)

    def require(self, key: str, allowed: tuple[object, ...], why: str) -> None:
        value = self.config.get(key)
        if value is not None and value not in allowed:
            raise ValueError(
                f"{self.where}: field {key!r} = {value!r} is not understood ({why}); "
                f"the course's model handles {', '.join(map(repr, allowed))}"
            )


def model_from_hf_config(
    config: dict[str, Any], name: str, where: str = "config.json"
) -> tuple[ModelConfig, list[str]]:
    """The :class:`ModelConfig` of a Hugging Face config dict, and notes on what is left out.

    Llama-style fields: ``num_hidden_layers`` (L), ``hidden_size`` (D),
    ``intermediate_size`` (F), ``num_attention_heads`` (N), ``num_key_value_heads`` (K,
    default N), ``head_dim`` (H, default D/N), ``vocab_size``, ``max_position_embeddings``,
    ``tie_word_embeddings``. MoE: ``num_local_experts`` or ``n_routed_experts`` or
    ``num_experts`` (E), ``num_experts_per_tok`` (k), ``n_shared_experts``,
    ``moe_intermediate_size``, ``first_k_dense_replace``. MLA: ``kv_lora_rank``,
    ``q_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim`` (= ``v_head_dim``).
    """
    if not isinstance(config, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(config).__name__}")
    family = config.get("model_type")
    if not isinstance(family, str) or family not in FAMILIES:
        raise ValueError(
            f"{where}: field 'model_type' = {family!r} is not understood; "
            f"known: {', '.join(sorted(FAMILIES))}"
        )
    read = _Reader(config, where)
    act_key = "hidden_activation" if config.get("hidden_activation") else "hidden_act"
    read.require(act_key, GATED_ACTIVATIONS, "a gated MLP of three matrices")
    D, N = read.count("hidden_size"), read.count("num_attention_heads")
    shape: dict[str, Any] = {
        "n_layers": read.count("num_hidden_layers"),
        "d_model": D,
        "d_ff": read.count("intermediate_size"),
        "n_heads": N,
        "n_kv_heads": read.count("num_key_value_heads", N),
        "head_dim": read.optional_int("head_dim") or D // N,
        "vocab_size": read.count("vocab_size"),
        "max_context": read.count("max_position_embeddings"),
        "tied_embeddings": bool(config.get("tie_word_embeddings", FAMILIES[family])),
        "source": f"Hugging Face config.json ({where})",
    }
    shape.update(_experts(read))
    if family.startswith("deepseek"):
        shape.update(_latent_attention(read))
    return ModelConfig(name=name, **shape), _notes(config)


def _experts(read: _Reader) -> dict[str, int]:
    config = read.config
    key = next(
        (k for k in ("num_local_experts", "n_routed_experts", "num_experts") if config.get(k)),
        None,
    )
    if key is None:
        return {}
    read.require("moe_layer_freq", (1,), "every layer after the dense ones is an MoE layer")
    experts = {
        "n_experts": read.count(key),
        "experts_per_token": read.count("num_experts_per_tok"),
        "n_dense_layers": read.optional_int("first_k_dense_replace"),
    }
    if config.get("moe_intermediate_size") is not None:
        experts.update(
            n_shared_experts=read.optional_int("n_shared_experts"),
            d_ff_expert=read.count("moe_intermediate_size"),
        )
    return experts


def _latent_attention(read: _Reader) -> dict[str, int]:
    nope = read.count("qk_nope_head_dim")
    read.require("v_head_dim", (nope,), "values as wide as the non-RoPE query/key heads")
    return {
        "head_dim": nope,
        "mla_kv_lora_rank": read.count("kv_lora_rank"),
        "mla_q_lora_rank": read.optional_int("q_lora_rank"),
        "mla_rope_head_dim": read.count("qk_rope_head_dim"),
    }


def _notes(config: dict[str, Any]) -> list[str]:
    """What the config describes that the course's arithmetic leaves out."""
    notes = []
    window = _Reader(config, "config.json").optional_int("sliding_window")
    if (
        window
        and config.get("use_sliding_window", True)
        and window < config.get("max_position_embeddings", window + 1)
    ):
        notes.append(
            f"sliding_window={window}: some layers cache at most {window} tokens; the KV cache "
            "is counted for the full context on every layer (an upper bound)"
        )
    if config.get("attention_bias") or config.get("model_type", "").startswith("qwen2"):
        notes.append("attention biases are not counted (under 0.01% of the weights)")
    if config.get("num_nextn_predict_layers"):
        notes.append("the multi-token-prediction module is not counted (as in published totals)")
    return notes


def read_hf_config(path: str | os.PathLike[str]) -> tuple[ModelConfig, list[str]]:
    """:func:`model_from_hf_config` of a ``config.json`` file; the model is named after its
    folder (``.../Llama-3-8B/config.json`` -> ``Llama-3-8B``) or the file's stem."""
    file = Path(path)
    try:
        config = json.loads(file.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{file}: not valid JSON ({error.msg} at line {error.lineno})") from None
    name = file.parent.name if file.name == "config.json" and file.parent.name else file.stem
    return model_from_hf_config(config, name, str(file))


__all__ = ["FAMILIES", "GATED_ACTIVATIONS", "model_from_hf_config", "read_hf_config"]

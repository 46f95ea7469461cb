"""The state layers of hybrid models, read from a Hugging Face ``config.json``, offline.

A hybrid mixes tokens in most layers through a recurrence instead of attention: gated
DeltaNet in Qwen3-Next and Qwen3.5/3.6 MoE (``layer_types``: ``linear_attention`` beside
``full_attention``), Mamba in Jamba (attention every ``attn_layer_period``-th layer),
lightning attention in MiniMax-M1 (``attn_type_list``: 0 lightning, 1 softmax), Mamba-2 in
Nemotron-H (``hybrid_override_pattern``: ``M`` Mamba-2, ``*`` attention and ``-`` an MLP, each
a block of its own), Kimi Delta Attention in Kimi Linear (``linear_attn_config``'s 1-based
``kda_layers``; MLA in the others). Such a
layer caches no keys and values; it holds a constant state per sequence. This module gives
:class:`~llmmath.core.models.ModelConfig`'s hybrid fields from the config's own: how many
layers, each one's mixer weights (``transformers``' modules, parameter by parameter) and its
state. :mod:`llmmath.core.hf_config` calls it for every config.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

#: ``layer_types`` entries of a gated-DeltaNet hybrid.
LINEAR_KINDS = ("linear_attention", "full_attention")
#: Nemotron-H's blocks, by ``hybrid_override_pattern`` letter and ``layers_block_type`` name.
NEMOTRON_BLOCKS = {"M": "mamba", "*": "attention", "-": "mlp"}


class FieldReader(Protocol):
    """What :mod:`llmmath.core.hf_config`'s reader offers: fields by name, checked."""

    where: str

    def get(self, key: str) -> Any: ...
    def count(self, key: str, default: int | None = None, *, low: int = 1) -> int: ...
    def flag(self, key: str) -> bool: ...


def hybrid_layers(read: FieldReader, family: str, layers: int, d_model: int) -> dict[str, Any]:
    """``ModelConfig``'s hybrid fields (``n_state_layers``, ``state_layer_params``,
    ``state_elements_per_layer``, ``state_dtype``, ``attention_output_gate``) of a config,
    or none for a model that attends in every layer."""
    if family in ("qwen3_next", "qwen3_5_moe_text"):
        return _gated_deltanet(read, family, layers, d_model)
    if family == "jamba":
        return _mamba(read, layers, d_model)
    if family == "minimax_m1":
        return _lightning(read, layers, d_model)
    if family == "nemotron_h":
        return _mamba2(read, block_pattern(read), d_model)
    if family == "kimi_linear":
        return _kimi_delta(read, layers, d_model)
    return {}


def block_pattern(read: FieldReader) -> str:
    """Nemotron-H's blocks as ``hybrid_override_pattern`` letters (or from the newer
    ``layers_block_type`` list); an ``E`` (an MoE block, Nemotron 3) is refused."""
    names = read.get("layers_block_type")
    pattern = read.get("hybrid_override_pattern")
    if pattern is None and isinstance(names, list):
        letters = {name: letter for letter, name in NEMOTRON_BLOCKS.items()}
        pattern = "".join(letters.get(name, "?") for name in names)
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(NEMOTRON_BLOCKS):
        raise ValueError(
            f"{read.where}: field 'hybrid_override_pattern' = {pattern!r} is not understood: "
            "one letter a block, M (Mamba-2), * (attention) or - (MLP); E (MoE blocks) is not "
            "modelled"
        )
    if "*" not in pattern:
        raise ValueError(f"{read.where}: field 'hybrid_override_pattern' has no attention block")
    return pattern


def _gated_deltanet(read: FieldReader, family: str, layers: int, D: int) -> dict[str, Any]:
    """``Qwen3NextGatedDeltaNet``: q, k (``linear_num_key_heads`` x ``linear_key_head_dim``)
    and v, z (``linear_num_value_heads`` x ``linear_value_head_dim``) projected from D, two
    scalars (beta, a) per value head, a depthwise causal conv of ``linear_conv_kernel_dim``
    over q, k, v, ``dt_bias`` and ``A_log`` per value head, a gated norm over one value head,
    and the output projection. Its state: a ``key_dim x value_dim`` matrix per value head,
    and the conv's last ``kernel - 1`` inputs (as vLLM holds them)."""
    types = read.get("layer_types")
    if types is None:
        every = read.count("full_attention_interval")
        types = ["full_attention" if (i + 1) % every == 0 else "linear_attention"
                 for i in range(layers)]  # fmt: skip
    if (
        not isinstance(types, list)
        or len(types) != layers
        or any(t not in LINEAR_KINDS for t in types)
    ):
        raise ValueError(
            f"{read.where}: field 'layer_types' must list one of {', '.join(LINEAR_KINDS)} per "
            f"layer ({layers} layers)"
        )  # fmt: skip
    linear = types.count("linear_attention")
    if linear == layers:
        raise ValueError(f"{read.where}: field 'layer_types' has no full_attention layer")
    keys = read.count("linear_num_key_heads") * read.count("linear_key_head_dim")
    heads, head_v = read.count("linear_num_value_heads"), read.count("linear_value_head_dim")
    values, kernel = heads * head_v, read.count("linear_conv_kernel_dim", 4)
    conv = 2 * keys + values  # the conv runs over q, k and v
    params = D * (2 * keys + 2 * values + 2 * heads) + conv * kernel + 2 * heads + head_v
    params += values * D
    state = heads * (keys // read.count("linear_num_key_heads")) * head_v + conv * (kernel - 1)
    gate = family == "qwen3_next" or read.flag("attn_output_gate")
    return _fields(read, linear, params, state, gate)


def _mamba(read: FieldReader, layers: int, D: int) -> dict[str, Any]:
    """``JambaMambaMixer`` (Mamba-1): in_proj D -> 2I, a depthwise conv of ``mamba_d_conv``,
    x_proj I -> R + 2N, dt_proj R -> I (with bias), A_log (I x N), D (I), out_proj I -> D and
    three small norms (R, N, N), with I = ``mamba_expand`` D, R = ``mamba_dt_rank``
    (``"auto"``: ceil(D/16)), N = ``mamba_d_state``. Its state: I x N, and the conv's last
    ``d_conv - 1`` inputs. Layer i attends when i % ``attn_layer_period`` ==
    ``attn_layer_offset``."""
    period, offset = read.count("attn_layer_period"), read.count("attn_layer_offset", low=0)
    attending = sum(i % period == offset for i in range(layers))
    if not attending:
        raise ValueError(
            f"{read.where}: fields 'attn_layer_period' = {period} and 'attn_layer_offset' = "
            f"{offset} leave no attention layer among {layers}; the offset must be < the period"
        )
    inner, state_n, conv = (
        read.count("mamba_expand") * D,
        read.count("mamba_d_state"),
        read.count("mamba_d_conv"),
    )
    rank = read.get("mamba_dt_rank")
    rank = math.ceil(D / 16) if rank in (None, "auto") else read.count("mamba_dt_rank")
    proj_bias, conv_bias = read.flag("mamba_proj_bias"), read.flag("mamba_conv_bias")
    params = D * 2 * inner + inner * conv + inner * (rank + 2 * state_n) + rank * inner + inner
    params += inner * state_n + inner + inner * D + rank + 2 * state_n
    params += (2 * inner + D) * proj_bias + inner * conv_bias
    state = inner * state_n + inner * (conv - 1)
    return _fields(read, layers - attending, params, state, False)


def _lightning(read: FieldReader, layers: int, D: int) -> dict[str, Any]:
    """MiniMax-M1's (and MiniMax-Text-01's) ``MiniMaxM1LightningAttention``, in the layers
    whose ``attn_type_list`` entry is 0 (1: softmax attention, GQA as usual): ``qkv_proj``
    D -> 3 N H (every query head has its own key and value), ``output_gate`` D -> N H, an
    RMSNorm over N H and ``out_proj`` N H -> D, no biases. Its state: a key x value matrix per
    head, H x H, which the modeling code builds in float32 (``torch.zeros(b, h, d, e)
    .to(torch.float32)``)."""
    kinds = read.get("attn_type_list")
    if not isinstance(kinds, list) or len(kinds) != layers or any(k not in (0, 1) for k in kinds):
        raise ValueError(
            f"{read.where}: field 'attn_type_list' must list 0 (lightning) or 1 (softmax "
            f"attention) per layer ({layers} layers)"
        )
    if 1 not in kinds:
        raise ValueError(f"{read.where}: field 'attn_type_list' has no softmax-attention layer")
    heads = read.count("num_attention_heads")
    width = heads * read.count("head_dim", D // heads)
    params = 5 * D * width + width  # qkv (3), gate, out; the norm
    fields = _fields(read, kinds.count(0), params, heads * (width // heads) ** 2, False)
    return {**fields, "state_dtype": "fp32"}


def _mamba2(read: FieldReader, pattern: str, D: int) -> dict[str, Any]:
    """Nemotron-H's ``NemotronHMamba2Mixer``: in_proj D -> 2 I + 2 G N + H (the gate z, x, B,
    C and dt), a depthwise conv of ``conv_kernel`` over x, B and C (I + 2 G N channels, with
    a bias where ``use_conv_bias``), ``dt_bias``, ``A_log`` and ``D`` per head, a gated
    RMSNorm over I, and out_proj I -> D (biases where ``use_bias``), with H =
    ``mamba_num_heads``, I = H ``mamba_head_dim``, G = ``n_groups``, N = ``ssm_state_size``.
    Its state: an ``mamba_head_dim x ssm_state_size`` matrix per head, and the conv's last
    ``conv_kernel - 1`` inputs. The ``-`` blocks are MLPs alone; every block has one norm."""
    if len(pattern) != read.count("num_hidden_layers", len(pattern)):
        raise ValueError(
            f"{read.where}: field 'hybrid_override_pattern' has {len(pattern)} blocks but "
            f"'num_hidden_layers' is {read.get('num_hidden_layers')}"
        )
    heads, head_dim = read.count("mamba_num_heads"), read.count("mamba_head_dim")
    inner, groups_state = heads * head_dim, read.count("n_groups") * read.count("ssm_state_size")
    channels, kernel = inner + 2 * groups_state, read.count("conv_kernel")
    projected = 2 * inner + 2 * groups_state + heads
    params = D * projected + channels * kernel + 3 * heads + inner + inner * D
    params += channels * read.flag("use_conv_bias") + (projected + D) * read.flag("use_bias")
    state = inner * read.count("ssm_state_size") + channels * (kernel - 1)
    fields = _fields(read, pattern.count("M"), params, state, False)
    return {**fields, "n_mlp_only_layers": pattern.count("-"), "gated_mlp": False}


def _kimi_delta(read: FieldReader, layers: int, D: int) -> dict[str, Any]:
    """Kimi Linear's ``KimiDeltaAttention`` (vLLM's and SGLang's ``kimi_linear.py``) in the
    layers ``linear_attn_config["kda_layers"]`` lists, 1-based (vLLM's ``is_kda_layer``): q, k,
    v and o projections of P = ``num_heads`` x ``head_dim`` (d), the decay's ``f_a`` D -> d and
    ``f_b`` d -> P with a ``dt_bias`` of P, ``b_proj`` D -> heads, three depthwise convs of
    ``short_conv_kernel_size`` over q, k and v (no bias), ``A_log`` per head, the output
    gate's ``g_a`` D -> d and ``g_b`` d -> P, and a gated norm over d. Its state: a d x d
    matrix per head, and each conv's last ``kernel - 1`` inputs."""
    config = read.get("linear_attn_config")
    kda = config.get("kda_layers") if isinstance(config, dict) else None
    full = config.get("full_attn_layers") if isinstance(config, dict) else None
    numbered = list(range(1, layers + 1))
    if not isinstance(kda, list) or sorted(kda + (full or [])) != numbered or not full:
        raise ValueError(
            f"{read.where}: field 'linear_attn_config' must list 'kda_layers' and "
            f"'full_attn_layers', 1-based, each of the {layers} layers in one of them and "
            f"at least one full-attention (MLA) layer; got {config!r}"
        )
    if config.get("use_full_rank_gate") or read.get("mla_use_output_gate"):
        raise ValueError(
            f"{read.where}: fields 'use_full_rank_gate' and 'mla_use_output_gate' are not "
            "modelled (Kimi Linear's low-rank decay and ungated MLA only)"
        )
    sub = _Sub(read, config)
    heads, d, kernel = (
        sub.count("num_heads"),
        sub.count("head_dim"),
        sub.count("short_conv_kernel_size"),
    )
    P = heads * d
    params = 4 * D * P + 2 * (D * d + d * P) + P + D * heads + 3 * P * kernel + heads + d
    state = heads * d * d + 3 * P * (kernel - 1)
    return _fields(read, len(kda), params, state, False)


class _Sub:
    """``linear_attn_config``'s own fields, read as the config's (errors name them there)."""

    def __init__(self, read: FieldReader, config: dict[str, Any]) -> None:
        self.read, self.config = read, config

    def count(self, key: str) -> int:
        value = self.config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"{self.read.where}: field 'linear_attn_config.{key}' must be a whole number "
                f"from 1; got {value!r}"
            )
        return value


def _fields(read: FieldReader, n: int, params: int, state: int, gate: bool) -> dict[str, Any]:
    # Qwen3.5 (mamba_ssm_dtype) and Nemotron Nano 2 (mamba_ssm_cache_dtype) keep it in fp32
    fp32 = "float32" in (read.get("mamba_ssm_dtype"), read.get("mamba_ssm_cache_dtype"))
    return {
        "n_state_layers": n,
        "state_layer_params": params,
        "state_elements_per_layer": state,
        "state_dtype": "fp32" if fp32 else None,
        "attention_output_gate": gate,
    }


__all__ = ["LINEAR_KINDS", "NEMOTRON_BLOCKS", "block_pattern", "hybrid_layers"]

"""Which format a Hugging Face checkpoint holds its weights (and KV cache) in, offline.

:func:`weight_format` reads ``quantization_config``: fp8 (DeepSeek-V3, Kimi K2), fbgemm_fp8,
mxfp4 (gpt-oss), compressed-tensors (int4/int8/fp8/nvfp4/mxfp4 groups), GPTQ and AWQ (at their
``bits``), and which modules each leaves unconverted. :func:`kv_cache_format` reads
``kv_cache_scheme``, :func:`checkpoint_dtype` the checkpoint's own ``torch_dtype``, and
:func:`kv_cache_dtype` chooses the KV cache's format from them and the user's choice.
:mod:`llmmath.core.hf_config` reads the model's shape.

>>> kv_cache_dtype(checkpoint="fp32")
KVCacheDtype(dtype='bf16', source='checkpoint_dtype', checkpoint='fp32')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from llmmath.core._constraints import Instance, OneOf
from llmmath.core.contracts import checked, contract
from llmmath.core.dtypes import BYTES_PER_ELEMENT, DTYPE, WEIGHT_PARTS, WeightFormat
from llmmath.core.models import ModelConfig

#: ``torch_dtype`` names -> the course's formats.
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
#: quant_method -> (the format its weights are in, the parts it converts).
QUANT_METHODS: dict[str, tuple[str, tuple[str, ...]]] = {
    "fp8": ("fp8", ("attention", "mlp", "experts")),
    "fbgemm_fp8": ("fp8", ("attention", "mlp", "experts")),
    "mxfp4": ("mxfp4", ("experts",)),
    "compressed-tensors": ("", ("attention", "mlp", "experts")),
    "awq": ("int4", ("attention", "mlp", "experts")),  # the format follows ``bits``
    "gptq": ("int4", ("attention", "mlp", "experts")),  # the format follows ``bits``
}
#: GPTQ's and AWQ's ``bits`` -> the course's format (their group scales, one fp16 per 128
#: weights, 0.125 bits a weight, are left out as the int4 count leaves them out).
INTEGER_BITS = {4: "int4", 8: "int8"}
#: compressed-tensors' ``kv_cache_scheme`` (type, num_bits) -> the KV cache's format.
KV_CACHE_SCHEMES = {("float", 8): "fp8", ("int", 8): "int8"}
#: Where a KV cache's format came from, strongest first (:func:`kv_cache_dtype`).
KV_SOURCES = ("given", "kv_cache_scheme", "checkpoint_dtype", "default")
#: The format a float32 checkpoint's activations, and so its KV cache, are served in. Engines
#: serve a float32 checkpoint in 16 bits: vLLM's ``--dtype auto`` downcasts it to bfloat16 on
#: GPUs that have it (vllm/config/model.py, ``_resolve_auto_dtype``: "Downcast for float32
#: models"), and its ``--kv-cache-dtype auto`` holds the cache in the model's dtype, as
#: SGLang's does. A 4-byte cache would halve the sequences that fit, for a precision no
#: engine keeps (gemma-2-9b ships float32).
SERVED_FLOAT32_AS = "bf16"


def quantization_config(
    config: dict[str, Any], where: str = "config.json"
) -> dict[str, Any] | None:
    """A checkpoint's ``quantization_config`` (top level, or in a wrapper's ``text_config``
    as Kimi K2.5 ships it), checked to be an object naming a known ``quant_method``."""
    quant = config.get("quantization_config")
    text = config.get("text_config")
    if quant is None and isinstance(text, dict):
        quant = text.get("quantization_config")
    if quant is None:
        return None
    if not isinstance(quant, dict):
        raise ValueError(
            f"{where}: field 'quantization_config' must be an object with a 'quant_method' "
            f"(one of {', '.join(QUANT_METHODS)}); got {quant!r}"
        )
    method = quant.get("quant_method")
    if not isinstance(method, str) or method not in QUANT_METHODS:
        raise ValueError(
            f"{where}: field 'quantization_config.quant_method' = {method!r} is not understood; "
            f"the course reads {', '.join(QUANT_METHODS)}"
        )
    return quant


def kv_cache_format(config: dict[str, Any], where: str = "config.json") -> str | None:
    """The KV cache's format a checkpoint asks for in ``quantization_config.kv_cache_scheme``
    (compressed-tensors, ModelOpt: ``{"type": "float", "num_bits": 8}`` is fp8), or None
    where it names none (the cache is then held as the serving engine is told)."""
    quant = quantization_config(config, where)
    scheme = None if quant is None else quant.get("kv_cache_scheme")
    if scheme is None:
        return None
    kind = scheme.get("type") if isinstance(scheme, dict) else None
    bits = scheme.get("num_bits") if isinstance(scheme, dict) else None
    found = KV_CACHE_SCHEMES.get((str(kind), bits)) if isinstance(bits, int) else None
    if found is None:
        raise ValueError(
            f"{where}: field 'quantization_config.kv_cache_scheme' = {scheme!r} is not "
            'understood; the course reads {"type": "float" or "int", "num_bits": 8}'
        )
    return found


def checkpoint_dtype(config: dict[str, Any]) -> str | None:
    """The checkpoint's own format, its ``torch_dtype`` (newer configs: ``dtype``; a
    wrapper's ``text_config`` where the top level names none) as the course names it: bf16,
    fp16 or fp32; None where the config names none the course knows."""
    text = config.get("text_config")
    inner = text if isinstance(text, dict) else {}
    for fields in (config, inner):
        for key in ("torch_dtype", "dtype"):
            found = TORCH_DTYPES.get(str(fields.get(key)))
            if found is not None:
                return found
    return None


@dataclass(frozen=True)
@checked(weights=Instance(WeightFormat, lambda: WeightFormat.uniform("fp8")), kv_cache=DTYPE,
         dtype=DTYPE)  # fmt: skip
class CheckpointFormats:
    """The formats a checkpoint's ``config.json`` names: its weights' (``quantization_config``,
    :func:`weight_format`; None without one), its KV cache's (``kv_cache_scheme``,
    :func:`kv_cache_format`; None where it names none) and its own (``torch_dtype``,
    :func:`checkpoint_dtype`; None where it names none)."""

    weights: WeightFormat | None = None
    kv_cache: str | None = None
    dtype: str | None = None


def checkpoint_formats(
    config: dict[str, Any], spec: ModelConfig, where: str = "config.json"
) -> CheckpointFormats:
    """The :class:`CheckpointFormats` of a config (``spec``: the model it describes)."""
    return CheckpointFormats(
        weight_format(config, spec, where), kv_cache_format(config, where), checkpoint_dtype(config)
    )


@dataclass(frozen=True)
@checked(dtype=DTYPE, source=OneOf(KV_SOURCES, "KV source"), checkpoint=DTYPE)
class KVCacheDtype:
    """The KV cache's format and where it came from (one of :data:`KV_SOURCES`): ``given``
    (the user's), ``kv_cache_scheme`` (the checkpoint asks for it), ``checkpoint_dtype``
    (the checkpoint's own format, ``checkpoint``; a float32 one is served in
    :data:`SERVED_FLOAT32_AS`) or ``default`` (bf16: nothing says otherwise)."""

    dtype: str
    source: str
    checkpoint: str | None = None


@contract(given=DTYPE, scheme=DTYPE, checkpoint=DTYPE)
def kv_cache_dtype(
    given: str | None = None, scheme: str | None = None, checkpoint: str | None = None
) -> KVCacheDtype:
    """The format the KV cache is held in, strongest first: ``given`` (the user's choice,
    ``--kv-dtype``), else the checkpoint's ``kv_cache_scheme`` (``scheme``, where a config was
    read), else the checkpoint's own format (``checkpoint``, its ``torch_dtype``: bf16 or
    fp16 as it is, fp32 as :data:`SERVED_FLOAT32_AS`), else bf16.

    The weights' format (``--dtype fp8``, or a ``quantization_config``) never sets it: an
    fp8 checkpoint without a ``kv_cache_scheme`` is served with its cache in its
    ``torch_dtype``, as vLLM and SGLang hold it unless told ``--kv-cache-dtype fp8``."""
    if given is not None:
        return KVCacheDtype(given, "given", checkpoint)
    if scheme is not None:
        return KVCacheDtype(scheme, "kv_cache_scheme", checkpoint)
    if checkpoint is not None:
        served = SERVED_FLOAT32_AS if checkpoint == "fp32" else checkpoint
        return KVCacheDtype(served, "checkpoint_dtype", checkpoint)
    return KVCacheDtype("bf16", "default")


def weight_format(
    config: dict[str, Any], spec: ModelConfig, where: str = "config.json"
) -> WeightFormat | None:
    """Which format holds each part of the weights of a checkpoint with a
    ``quantization_config`` (None without one). The input embedding and the output layer stay
    in ``torch_dtype`` (transformers leaves the output layer unconverted); a module in
    ``modules_to_not_convert`` (or compressed-tensors' ``ignore``) keeps its part, or that
    part's share of the layers it names, in ``torch_dtype`` too."""
    quant = quantization_config(config, where)
    if quant is None:
        return None
    base = TORCH_DTYPES.get(str(config.get("torch_dtype") or config.get("dtype")), "bf16")
    method = str(quant["quant_method"])
    dtype, parts = QUANT_METHODS[method]
    if method == "compressed-tensors":
        dtype = _compressed_tensors_dtype(quant, where)
    if method in ("gptq", "awq"):
        dtype = _integer_dtype(quant, method, where)
    left = quant.get("modules_to_not_convert") or quant.get("ignore") or []
    unconverted = _unconverted_shares(left, spec, where)
    shares = {p: (unconverted.get(p, 0.0) if p in parts else 1.0) for p in WEIGHT_PARTS}
    if not spec.is_moe:
        shares["experts"] = 0.0
    sizes = {
        p: shares[p] * BYTES_PER_ELEMENT[base] + (1 - shares[p]) * BYTES_PER_ELEMENT[dtype]
        for p in WEIGHT_PARTS
    }
    return WeightFormat(description=_describe(shares, dtype, base, spec), main=dtype, **sizes)


def _integer_dtype(quant: dict[str, Any], method: str, where: str) -> str:
    """GPTQ's and AWQ's weight format from ``bits`` (AutoAWQ's older files: ``w_bit``)."""
    key = "bits" if "bits" in quant or "w_bit" not in quant else "w_bit"
    bits = quant.get(key)
    if isinstance(bits, bool) or bits not in INTEGER_BITS:
        raise ValueError(
            f"{where}: field 'quantization_config.{key}' = {bits!r} is not modelled for "
            f"{method}; the course reads {' or '.join(map(str, INTEGER_BITS))} bits"
        )
    return INTEGER_BITS[bits]


def _compressed_tensors_dtype(quant: dict[str, Any], where: str) -> str:
    groups = quant.get("config_groups") or {}
    weights = [g.get("weights") or {} for g in groups.values() if isinstance(g, dict)]
    kinds = {(w.get("type"), w.get("num_bits"), w.get("group_size")) for w in weights}
    if len(kinds) != 1:
        raise ValueError(f"{where}: compressed-tensors config_groups must give one weight format")
    kind, bits, group = kinds.pop()
    formats = {("float", 8): "fp8", ("int", 8): "int8", ("int", 4): "int4",
               ("float", 4): "nvfp4" if group == 16 else "mxfp4"}  # fmt: skip
    found = formats.get((str(kind), int(bits or 0)))
    if found is None:
        raise ValueError(f"{where}: compressed-tensors weights of {bits}-bit {kind} not modelled")
    return found


def _unconverted_shares(left: Any, spec: ModelConfig, where: str) -> dict[str, float]:
    """Each part's share left unconverted by the module names (or ``re:`` patterns) given."""
    if not isinstance(left, list):
        raise ValueError(f"{where}: modules_to_not_convert must be a list of module names")
    whole: set[str] = set()
    layers: dict[str, set[int]] = {}
    for module in map(str, left):
        name = module.removeprefix("re:").lower()
        part = _part_of(name)
        if part is None:
            continue
        index = re.search(r"layers\.(\d+)\.", name)
        if index is None:
            whole.add(part)
        else:
            layers.setdefault(part, set()).add(int(index.group(1)))
    shares = {part: 1.0 for part in whole}
    for part, found in layers.items():
        if part not in whole:
            of = spec.n_moe_layers if part == "experts" else spec.n_layers
            shares[part] = min(len(found) / max(of, 1), 1.0)
    return shares


def _part_of(name: str) -> str | None:
    """The part a module name belongs to (None: the embeddings, a router or a norm, which
    no method here converts)."""
    if "embed" in name or "lm_head" in name or "router" in name or "norm" in name:
        return None
    if re.search(r"mlp\.gate\b(?!_)", name) or name.endswith(".gate") or name.endswith("gate$"):
        return None  # an MoE router
    if "shared_expert" in name:
        return "mlp"
    if "expert" in name:
        return "experts"
    if re.search(r"attn|attention|[qkvo]_proj|q_a_proj|q_b_proj|kv_a_proj|kv_b_proj", name):
        return "attention"
    if re.search(r"mlp|feed_forward|gate_proj|up_proj|down_proj", name):
        return "mlp"
    return None


def _describe(shares: dict[str, float], dtype: str, base: str, spec: ModelConfig) -> str:
    """``"experts mxfp4; embeddings, attention, mlp bf16"``, with a part partly left
    unconverted shown as ``"mlp fp8 (2% of its layers bf16)"``."""
    converted, kept, mixed = [], [], []
    for part in WEIGHT_PARTS:
        if part == "experts" and not spec.is_moe:
            continue
        share = shares[part]
        if share == 0:
            converted.append(part)
        elif share == 1:
            kept.append(part)
        else:
            mixed.append(f"{part} {dtype} ({share:.0%} of its layers {base})")
    words = [f"{', '.join(converted)} {dtype}"] if converted else []
    return "; ".join([*words, *mixed, *([f"{', '.join(kept)} {base}"] if kept else [])])


__all__ = [
    "INTEGER_BITS",
    "KV_CACHE_SCHEMES",
    "KV_SOURCES",
    "QUANT_METHODS",
    "SERVED_FLOAT32_AS",
    "TORCH_DTYPES",
    "CheckpointFormats",
    "KVCacheDtype",
    "checkpoint_dtype",
    "checkpoint_formats",
    "kv_cache_dtype",
    "kv_cache_format",
    "quantization_config",
    "weight_format",
]

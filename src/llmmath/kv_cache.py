"""The KV cache: how big it is, what it leaves room for, and where a cached prefix should live.

Every sequence keeps, for each of its ``T`` tokens, keys and values in every layer:
``kv = 2 L K H b`` bytes per token for MHA (``K = N``), GQA (``1 < K < N``) and MQA
(``K = 1``), and ``L (r_kv + r_rope) b`` for DeepSeek's multi-head latent attention (MLA),
which caches one compressed latent per layer
(:meth:`llmmath.core.models.ModelConfig.kv_bytes_per_token`).

* **Capacity wall.** ``B`` sequences of ``T`` tokens need ``B T kv`` bytes beside the weights:
  ``B_max = floor((n HBM - weights) / (T kv))`` and ``T_max = floor((n HBM - weights) / (B kv))``.
* **Bandwidth wall.** A decode step reads the weights once and every KV cache once
  (:func:`llmmath.batching.decode_step`); the KV read overtakes the weight read at
  ``T* = P_read b_w / (B kv)``.
* **Past the dense cache.** Sparse top-k attention (DeepSeek-V3.2) reads ``k`` tokens' KV
  and every token's small index key but still holds every token
  (:meth:`~llmmath.core.models.ModelConfig.kv_bytes_read`): the bandwidth wall moves, the
  capacity wall does not. A hybrid's state layers cache nothing but a constant state: both
  walls move (:func:`read_per_token_curves`).
* **Memory tiers.** A cached prefix of ``S`` tokens (``S kv`` bytes) held ``t`` seconds and
  reused ``r`` times costs ``S kv t c_tier`` to keep plus, per reuse, the chips' rent while it
  streams back at the tier's bandwidth; recomputing it costs ``r`` prefills
  (:func:`llmmath.batching.prefill`). A tier is a candidate only if the prefix fits in it and
  comes back faster than a prefill would recompute it.

Every time is a FLOOR (datasheet bandwidths, no queueing, no overlap of loads with other work);
every price is an EXAMPLE (``data/memory_tiers.toml``, each with its source and date).

>>> from llmmath import get_model, kv_cache
>>> get_model("Llama-3-70B").kv_bytes_per_token("bf16")  # the one definition: ModelConfig's
327680.0
>>> kv_cache.mha_kv_bytes_per_token("Llama-3-70B", "bf16")  # what costing GQA as MHA gives
2621440.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import capacity, serving
from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import AnyOf, Optional, Real, SequenceOf
from llmmath.core.contracts import (
    AMOUNT,
    NAME,
    NOT_A_NUMBER,
    RESULT,
    SCALAR_POSITIVE,
    SCALAR_PROMPT,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.dtypes import bytes_per_element
from llmmath.core.models import MODEL, ModelConfig, check_context, get_model
from llmmath.core.placement import DoesNotFitError
from llmmath.memory_tiers import (
    RECOMPUTE,
    TIER,
    MemoryTier,
    PrefixCache,
    PromptCachePrice,
    break_even_hold_s,
    get_prompt_cache,
    get_tier,
    implied_usd_per_byte_s,
    list_prompt_caches,
    list_tiers,
    prefix_cache,
    prompt_cache_usd_per_token_s,
)


# ---- bytes per token and per sequence ----------------------------------------------------------
@overload
def kv_bytes_per_token(
    model: str | ModelConfig, dtype: str = ..., context: None = None
) -> float: ...
@overload
def kv_bytes_per_token(
    model: str | ModelConfig, dtype: str, context: ArrayLike
) -> float | FloatArray: ...
@contract(context=Optional(AMOUNT))
def kv_bytes_per_token(
    model: str | ModelConfig, dtype: str = "bf16", context: ArrayLike | None = None
) -> float | FloatArray:
    """:meth:`ModelConfig.kv_bytes_per_token <llmmath.core.models.ModelConfig.kv_bytes_per_token>`
    of the preset ``model``, the one definition. Kept only because the released kv_cache
    exercise names this address (learners' copies are never rewritten); course code calls the
    model's method."""
    return get_model(model).kv_bytes_per_token(dtype, context)


@contract()
def mha_kv_bytes_per_token(model: str | ModelConfig, dtype: str = "bf16") -> float:
    """``2 L N H b``: the cache if every query head kept its own keys and values (MHA).

    For a GQA, MQA or MLA model this is the WRONG answer that tools costing every model as MHA
    give; it is ``N / K`` times the GQA cache. Kept to show what GQA, MQA and MLA save.
    (Every attention layer at its own head dim, each caching every token; a hybrid's state
    layers cache none, a sparse model's index keys are left out.)"""
    spec = get_model(model)
    H_global = spec.global_head_dim or spec.head_dim
    dims = spec.n_local_layers * spec.head_dim + spec.n_global_layers * H_global
    return 2.0 * spec.n_heads * dims * bytes_per_element(dtype)


@contract()
def kv_bytes_per_sequence(
    model: str | ModelConfig, context: ArrayLike, dtype: str = "bf16", batch: ArrayLike = 1
) -> float | FloatArray:
    """``B T kv(T)``: the KV caches of ``batch`` sequences of ``context`` tokens (broadcast),
    a sliding-window layer holding ``min(T, window)`` of them."""
    T = as_floats(context)
    B = as_floats(batch)
    return as_output(B * T * np.asarray(get_model(model).kv_bytes_per_token(dtype, T)))


# ---- the capacity wall -------------------------------------------------------------------------
@contract()
def kv_share_of_hbm(deployment: Deployment) -> float:
    """``(n HBM - weights) / (n HBM)``: the share of the chips' HBM left for KV caches."""
    return deployment.kv_budget_bytes / deployment.hbm_bytes


@contract(infinite_ok=True)
def max_batch(deployment: Deployment, context: ArrayLike) -> float | FloatArray:
    """The most sequences of ``context`` tokens that fit, sliding-window layers holding only
    their window: :func:`llmmath.core.capacity.max_batch`, the one count (kept at this address
    for the released kv_cache exercise and the chapter's code)."""
    return capacity.max_batch(deployment, context)


@contract()
def max_context(deployment: Deployment, batch: ArrayLike) -> float | FloatArray:
    """The longest context ``batch`` sequences can all reach beside the weights:
    ``min(floor((n HBM - weights) / (B kv)), max_context of the model)``. With sliding-window
    layers a sequence's cache grows by ``kv(0)`` a token up to the window ``w`` and by the
    global layers' share ``g`` beyond, so past ``w`` the room is ``w + (room - w kv(0)) / g``."""
    dep = deployment
    B = as_floats(batch)
    per_sequence = dep.kv_budget_bytes / B
    held = dep.kv_bytes_held_per_token
    room = per_sequence / held
    w = float(dep.model.sliding_window)
    if w:
        at_window = w * held  # bytes one sequence holds at the window
        past = np.array([w, 2.0 * w])
        grown = past * held * dep.kv_window_share(past)
        g = float(grown[1] - grown[0]) / w  # bytes a token adds past the window
        beyond = w + (per_sequence - at_window) / g if g else np.inf
        room = np.where(per_sequence > at_window, beyond, room)
    return as_output(np.minimum(np.floor(room), float(dep.model.max_context)))


# ---- the bandwidth wall ------------------------------------------------------------------------
@contract()
def kv_crossover_context(deployment: Deployment, batch: ArrayLike) -> float | FloatArray:
    """The context at which a decode step reads as many KV bytes as weight bytes:
    ``T* = P_read b_w / (B kv)`` (for an MoE, the experts ``B`` tokens touch). It may lie past
    the model's ``max_context`` or past the context that fits: then the weights always win.
    A sparse-attention model reads ``kv`` a token up to its top ``k``, then only the index
    keys: past ``k``, ``T* = k + (P_read b_w / B - read(k)) / (L index_key_bytes)``. A hybrid
    reads its constant state first: ``T* = (P_read b_w / B - state) / kv`` (0 where the
    states alone outweigh the weights)."""
    B = as_floats(batch)
    weights = serving.decode_step(deployment, B, 0, allow_overflow=True).bytes_read
    spec, dtype = deployment.model, deployment.kv_dtype
    if spec.n_state_layers:  # every sequence's constant state is read before its tokens
        room = np.maximum(weights / B - spec.state_bytes_per_sequence(dtype), 0.0)
        return as_output(np.asarray(room / spec.kv_bytes_per_token(dtype)))
    dense = np.asarray(weights / (B * spec.kv_bytes_per_token(dtype)))
    if not spec.index_topk:
        return as_output(dense)
    # Sparse: each token costs kv (its pick and its index key) up to k, then its index key.
    k, index_key = float(spec.index_topk), float(spec.n_attention_layers * spec.index_key_bytes)
    past_k = k + (weights / B - float(spec.kv_bytes_read(dtype, k))) / index_key
    return as_output(np.where(dense <= k, dense, past_k))


@contract()
def kv_read_share(
    deployment: Deployment, batch: ArrayLike, context: ArrayLike
) -> float | FloatArray:
    """The KV caches' share of the bytes a decode step reads: ``B read(T) / (P_read b_w + B
    read(T))``, ``read(T)`` what one sequence's attention reads (``T kv`` when dense,
    :meth:`~llmmath.core.models.ModelConfig.kv_bytes_read`); capacity not checked, so a
    sweep may run past the wall."""
    step = serving.decode_step(deployment, batch, context, allow_overflow=True)
    kv = step.batch * deployment.model.kv_bytes_read(deployment.kv_dtype, step.context)
    return as_output(np.asarray(kv / step.bytes_read))


@contract(infinite_ok=True, usd_per_chip_hour=Optional(SCALAR_POSITIVE))
def best_cost_per_million_tokens_usd(
    deployment: Deployment, context: ArrayLike, usd_per_chip_hour: float | None = None
) -> float | FloatArray:
    """The cheapest output token at ``context``: a decode step at the batch
    ``min(ceil(B*(T)), B_max(T))`` (past ``B*(T)``, where the step turns compute-bound, a
    bigger batch saves nothing; past ``B_max`` it does not fit; above ``T_c`` only the HBM
    stops it). Infinite where not one sequence fits. Longer contexts fit fewer sequences and
    read more KV per token, so this rises with the context."""
    dep = deployment
    T = np.asarray(check_context(dep.model, context), dtype=np.float64)
    room = np.asarray(capacity.max_batch(dep, T), dtype=np.float64)
    compute = [capacity.step_critical_batch(dep, float(t)) for t in T.ravel()]
    B = np.minimum(np.ceil(np.reshape(compute, T.shape)), room)
    step = serving.decode_step(dep, np.maximum(B, 1.0), T, allow_overflow=True)
    cost = step.cost_per_million_tokens_usd(usd_per_chip_hour)
    return as_output(np.where(room >= 1, cost, np.inf))


# ---- curves the figures draw ----------------------------------------------------------------
#: Contexts of the capacity and step-time curves: 128 ... 131,072 tokens, log-spaced.
CURVE_CONTEXTS = np.unique(np.round(np.logspace(np.log10(128), np.log10(131072), 121)))


def _accepted(deployment: Deployment, contexts: FloatArray) -> FloatArray:
    return contexts[deployment.model.max_context >= contexts]


@dataclass(frozen=True)
@checked(broadcast=False, **each(RESULT, "context max_batch critical_batch"))
class CapacityCurve:
    """The capacity wall: the largest batch that fits at each context (where one does)."""

    context: FloatArray
    max_batch: FloatArray
    critical_batch: float


@contract(contexts=Real(low_open=False, ndarray=True))
def capacity_curve(deployment: Deployment, contexts: FloatArray = CURVE_CONTEXTS) -> CapacityCurve:
    """:func:`max_batch` over the ``contexts`` the model accepts, where at least one fits."""
    T = _accepted(deployment, contexts)
    room = np.asarray(max_batch(deployment, T))
    return CapacityCurve(T[room >= 1], room[room >= 1], capacity.step_critical_batch(deployment))


@dataclass(frozen=True)
@checked(
    **each(RESULT, "context time_s kv_read_s weight_read_s crossover_context"),
    batch=SCALAR_POSITIVE,
    fits=Real(low_open=False, high=1.0),
    crossover_s=AnyOf((RESULT, NOT_A_NUMBER)),
    nan_ok=("crossover_s",),
)
class StepTimeCurve:
    """The bandwidth wall at one batch: the decode step time against the context (``fits``
    says where the KV caches still fit), its KV and weight reads, and where the KV read
    overtakes the weight read (``crossover_s`` is NaN past the model's longest context)."""

    batch: float
    context: FloatArray
    time_s: FloatArray
    fits: FloatArray
    kv_read_s: FloatArray
    weight_read_s: FloatArray
    crossover_context: float
    crossover_s: float


@contract(batch=SCALAR_POSITIVE, contexts=Real(low_open=False, ndarray=True))
def step_time_curve(
    deployment: Deployment, batch: float, contexts: FloatArray = CURVE_CONTEXTS
) -> StepTimeCurve:
    """:func:`llmmath.batching.decode_step` of ``batch`` sequences over the accepted contexts."""
    T = _accepted(deployment, contexts)
    step = serving.decode_step(deployment, batch, T, allow_overflow=True)
    cross = float(kv_crossover_context(deployment, batch))
    at_cross = math.nan
    if cross <= deployment.model.max_context:
        at_cross = float(serving.decode_step(deployment, batch, cross, allow_overflow=True).time_s)
    return StepTimeCurve(
        batch=float(batch),
        context=T,
        time_s=np.asarray(step.time_s),
        fits=np.asarray(step.fits, dtype=bool),
        kv_read_s=np.asarray(step.kv_read_s),
        weight_read_s=np.asarray(step.weight_read_s),
        crossover_context=cross,
        crossover_s=at_cross,
    )


#: One preset of each attention design the read-per-token figure compares: dense GQA, MLA,
#: sliding window, sparse top-k and a linear-attention hybrid.
READ_MODELS = ("Llama-3-70B", "DeepSeek-V3", "Gemma-4-31B", "DeepSeek-V3.2", "Qwen3-Next-80B-A3B")
#: Contexts of the read-per-token figure: 1,024 ... 1,048,576 tokens, log-spaced.
READ_CONTEXTS = np.unique(np.round(np.logspace(10.0, 20.0, 121, base=2.0)))


@contract()
def attention_design(model: str | ModelConfig) -> str:
    """What bounds a model's KV read: "sparse top-k" (an indexer picks k tokens), "hybrid"
    (state layers beside full attention), "sliding window", or the heads' kind (GQA, MHA,
    MQA, MLA) when every layer reads every cached token."""
    spec = get_model(model)
    if spec.index_topk:
        return "sparse top-k"
    if spec.n_state_layers:
        return "hybrid"
    return "sliding window" if spec.sliding_window else spec.attention_kind


@dataclass(frozen=True)
@checked(
    broadcast=False,
    **each(SequenceOf(NAME), "names designs"),
    dtype=NAME,
    **each(RESULT, "context read_bytes held_bytes max_context"),
)
class ReadPerTokenCurves:
    """The bandwidth wall per sequence: bytes one decoded token reads from its cache
    (``read_bytes``, one row per model) against the context, beside the bytes the cache holds
    (``held_bytes``, the capacity wall's count); ``max_context`` is each model's longest."""

    names: tuple[str, ...]
    designs: tuple[str, ...]
    dtype: str
    context: FloatArray
    read_bytes: FloatArray
    held_bytes: FloatArray
    max_context: FloatArray


@contract(models=SequenceOf(MODEL), contexts=Real(low_open=False, ndarray=True))
def read_per_token_curves(
    models: Sequence[str | ModelConfig] = READ_MODELS,
    dtype: str = "bf16",
    contexts: FloatArray = READ_CONTEXTS,
) -> ReadPerTokenCurves:
    """:meth:`~llmmath.core.models.ModelConfig.kv_bytes_read` and the cache held,
    ``T kv(T)``, of each model over ``contexts`` (past a model's ``max_context`` too: the
    figure marks where each stops)."""
    specs = [get_model(m) for m in models]
    T = np.asarray(contexts, dtype=np.float64)
    return ReadPerTokenCurves(
        names=tuple(spec.name for spec in specs),
        designs=tuple(attention_design(spec) for spec in specs),
        dtype=dtype,
        context=T,
        read_bytes=np.array([np.asarray(spec.kv_bytes_read(dtype, T)) for spec in specs]),
        held_bytes=np.array([T * np.asarray(spec.kv_bytes_per_token(dtype, T)) for spec in specs]),
        max_context=np.array([float(spec.max_context) for spec in specs]),
    )


#: Hold times (s) and expected reuses of the "which tier?" map, log-spaced.
MAP_HOLDS_S = np.logspace(-1, 7, 81)
MAP_REUSES = np.logspace(-1, 3, 41)


@contract(prefix_tokens=SCALAR_PROMPT, usd_per_chip_hour=Optional(SCALAR_POSITIVE))
def tier_map(
    deployment: Deployment, prefix_tokens: float, usd_per_chip_hour: float | None = None
) -> PrefixCache:
    """:func:`prefix_cache` over the map's grid: reuses on axis 0, hold times on axis 1."""
    return prefix_cache(
        deployment,
        prefix_tokens,
        MAP_HOLDS_S[np.newaxis, :],
        MAP_REUSES[:, np.newaxis],
        usd_per_chip_hour=usd_per_chip_hour,
    )


__all__ = [
    "RECOMPUTE",
    "TIER",
    "CapacityCurve",
    "Deployment",
    "DoesNotFitError",
    "MemoryTier",
    "PrefixCache",
    "PromptCachePrice",
    "ReadPerTokenCurves",
    "StepTimeCurve",
    "attention_design",
    "best_cost_per_million_tokens_usd",
    "break_even_hold_s",
    "capacity_curve",
    "get_prompt_cache",
    "get_tier",
    "implied_usd_per_byte_s",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_crossover_context",
    "kv_read_share",
    "kv_share_of_hbm",
    "list_prompt_caches",
    "list_tiers",
    "max_batch",
    "max_context",
    "mha_kv_bytes_per_token",
    "prefix_cache",
    "prompt_cache_usd_per_token_s",
    "read_per_token_curves",
    "step_time_curve",
    "tier_map",
]

"""Parallelism for training and serving: data (with ZeRO / FSDP), tensor, pipeline and expert.

A :class:`Layout` splits ``n_gpus = dp * tp * pp * ep`` GPUs four ways:

* **DP** (data): each replica sees a slice of the batch; gradients are all-reduced once per
  step. ZeRO stage 1 / 2 / 3 shards optimizer state / + gradients / + weights over the DP
  group (stage 3 is FSDP), at the price of all-gathering the weights for every microbatch.
* **TP** (tensor, Megatron with sequence parallelism): every matrix is split across ``tp``
  GPUs; each layer all-reduces its activations twice forward and twice backward.
* **PP** (pipeline): ``pp`` stages of consecutive layers; only activations (forward) and their
  gradients (backward) cross a stage boundary, point to point; idle time is the bubble.
* **EP** (expert): each GPU of an EP group holds ``E / ep`` experts of every MoE layer and
  the tokens travel to their experts and back in all-to-alls. For the attention and dense
  parts the EP ranks are extra data-parallel replicas (the DeepSpeed-MoE convention), so the
  batch is split over ``dp * ep``.

Ranks are numbered TP innermost, then EP, PP and DP outermost, the order Llama 3 used
([TP, CP, PP, DP], arXiv 2407.21783) with EP beside TP as in DeepSeek-V3: a group whose members
all sit in one scale-up domain talks over NVLink/ICI, one that spans domains crosses the
scale-out network. Times come from :mod:`llmmath.core.collectives` and are FLOORS: bandwidth-optimal
collectives at full link speed plus their per-step latency, matmuls at ``flops_efficiency`` of
the dense peak (the MFU knob), no stragglers, perfect load balance.

Context parallelism (CP: the sequence split over ``cp`` ranks) is here alone, for one long
prompt's prefill: :func:`context_parallel_prefill` and :func:`cp_hiding_tokens`.

This is the chapter's module: the layout and what each GPU holds live in
:mod:`llmmath.core.placement`, training in :mod:`llmmath.core.training`, and a serving step in
:mod:`llmmath.core.serving` (the same decode step the batching chapter uses); they are all
re-exported here.

>>> from llmmath import parallelism
>>> round(parallelism.pipeline_bubble_fraction(16, 32), 3)     # Llama 3 405B: PP16, 32 microbatches
0.319
>>> layout = parallelism.Layout(dp=64, tp=8, pp=16, embedding_as_layers=True)
>>> layout.n_gpus, str(layout)
(8192, 'TP8 PP16 DP64')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import collectives
from llmmath.core._checks import FloatArray, as_floats
from llmmath.core._constraints import Instance, MappingOf, OneOf, Real, SequenceOf
from llmmath.core.contracts import (
    CHIPS,
    RESULT,
    SCALAR_FRACTION,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.dtypes import bytes_per_element
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, check_context, get_model
from llmmath.core.placement import (
    AXES,
    KINDS,
    ZERO_STAGES,
    DoesNotFitError,
    Group,
    Layout,
    ServingMemory,
    dense_params,
    expert_params,
    groups,
    kv_shards,
    layers_per_stage,
    max_decode_batch,
    params_per_gpu,
    pipeline_slots,
    serving_memory,
)
from llmmath.core.serving import OVERLAP_RULES, DecodeStep
from llmmath.core.serving import decode_step as _serving_decode_step
from llmmath.core.training import (
    BatchTradeoff,
    Communication,
    TrainingStep,
    batch_tradeoff,
    data_parallel_ceiling,
    dp_hiding_batch,
    gradient_noise_scale,
    min_model_parallel_degree,
    pipeline_bubble_fraction,
    tp_critical_degree,
    training_communication,
    training_flops,
    training_step,
)
from llmmath.core.training_memory import (
    ACTIVATION_MODES,
    ADAM_MIXED_BYTES_PER_PARAM,
    TrainingMemory,
    activation_bytes_per_token,
    activation_memory_bytes,
    model_state_bytes,
    recompute_flops_fraction,
    training_memory,
)


@contract(
    overlap=OneOf(OVERLAP_RULES),
    flops_efficiency=SCALAR_FRACTION,
    bandwidth_efficiency=SCALAR_FRACTION,
)
def layout_decode_step(
    model: str | ModelConfig,
    layout: Layout,
    chip: str | Chip,
    batch: ArrayLike,
    context: ArrayLike,
    *,
    overlap: str = "perfect",
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    activation_dtype: str = "bf16",
    compute_dtype: str = "bf16",
    flops_efficiency: float = 1.0,
    bandwidth_efficiency: float = 1.0,
) -> DecodeStep:
    """One decode step of ``layout`` serving ``model``: :func:`llmmath.core.serving.decode_step`
    with ``batch`` counted **per attention group**, as this chapter does (the serving core's
    ``batch`` is the whole deployment's sequences per stage step; this one is ``ep * dp`` times
    smaller).

    Parameters: ``batch`` is the sequences of one DP replica and EP rank in one stage step, so
    the whole deployment finishes ``batch * ep * dp`` tokens per stage step. The capacity check
    is left to :func:`max_decode_batch` (the chapter sweeps past it on purpose).
    """
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a llmmath.parallelism.Layout; got {layout!r}")
    B = as_floats(batch)
    deployment = Deployment(
        get_model(model),
        get_chip(chip),
        layout.n_gpus,
        layout=layout,
        compute_dtype=compute_dtype,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        activation_dtype=activation_dtype,
        flops_efficiency=flops_efficiency,
        bandwidth_efficiency=bandwidth_efficiency,
    )
    groups_per_step = layout.ep * layout.dp
    return _serving_decode_step(
        deployment, B * groups_per_step, context, overlap=overlap, allow_overflow=True
    )


# ---- long-context prefill: context parallelism ------------------------------------------------
@dataclass(frozen=True)
@checked(
    **each(RESULT, "prompt_tokens matmul_s attention_s kv_bytes_per_gpu kv_s tp_s"),
    **each(CHIPS, "cp tp"),
)
class ContextParallelPrefill:
    """One prompt prefilled by ``tp * cp`` GPUs, per GPU and summed over every layer: its
    matmuls and its causal attention (each a floor at ``flops_efficiency`` of the peak), the
    keys and values it receives from the other ``cp - 1`` ranks and their time on the link the
    CP group crosses, and TP's activation all-reduces. Times are floors or, where parts add
    up, estimates: see :attr:`ring_s` and :attr:`all_gather_s`."""

    prompt_tokens: FloatArray
    cp: int
    tp: int
    matmul_s: FloatArray
    attention_s: FloatArray
    kv_bytes_per_gpu: FloatArray
    kv_s: FloatArray
    tp_s: FloatArray

    @property
    def compute_s(self) -> FloatArray:
        return self.matmul_s + self.attention_s

    @property
    def attention_share(self) -> FloatArray:
        """Attention's share of the prefill's arithmetic: grows with S, the matmuls' does not."""
        return self.attention_s / self.compute_s

    @property
    def kv_to_attention(self) -> FloatArray:
        """The KV traffic's time over the attention's: below 1 a ring hides it."""
        return self.kv_s / self.attention_s

    @property
    def ring_s(self) -> FloatArray:
        """Ring attention (pass-KV), a floor: each layer's KV chunks travel while the local
        chunk's attention runs, so a layer takes its matmuls plus the longer of its attention
        and its KV traffic; TP's all-reduces hide under the arithmetic (perfect overlap)."""
        return np.maximum(self.matmul_s + np.maximum(self.attention_s, self.kv_s), self.tp_s)

    @property
    def all_gather_s(self) -> FloatArray:
        """Llama 3's all-gather CP, an estimate: the keys and values are gathered before the
        attention starts, so their time adds to the step (it sits on the critical path)."""
        return np.maximum(self.compute_s, self.tp_s) + self.kv_s


def _cp_per_domain(cp: int, tp: int, chip: Chip) -> int:
    """CP ranks in one scale-up domain when TP fills the domain first (ranks TP innermost)."""
    per_domain = min(cp, max(1, chip.scale_up_domain_size // tp))
    if cp % per_domain:
        raise ValueError(
            f"cp={cp} must be a multiple of the {per_domain} CP ranks that share one "
            f"{chip.name} domain of {chip.scale_up_domain_size} beside tp={tp}"
        )
    return per_domain


@contract(
    prompt_tokens=Real(low=1.0, low_open=False, integer=True, unit="tokens"),
    cp=CHIPS,
    flops_efficiency=SCALAR_FRACTION,
)
def context_parallel_prefill(
    model: str | ModelConfig,
    chip: str | Chip,
    prompt_tokens: ArrayLike,
    cp: int,
    *,
    tp: int = 8,
    kv_dtype: str = "bf16",
    activation_dtype: str = "bf16",
    compute_dtype: str = "bf16",
    flops_efficiency: float = 1.0,
) -> ContextParallelPrefill:
    """Prefill one prompt of ``S = prompt_tokens`` over ``cp`` context-parallel ranks of
    ``tp`` GPUs each (TP innermost, so a TP group fills a node and the CP ranks sit in
    different nodes once ``tp`` fills the domain).

    Each rank holds ``S / cp`` of the tokens (Llama 3 cuts the prompt into ``2 cp`` chunks
    and gives rank ``i`` chunks ``i`` and ``2 cp - 1 - i``, so the causal work is even).
    Arithmetic, shared by all ``cp * tp`` GPUs: the matmuls ``2 P_mm S`` grow like S, the
    causal attention ``S * attention_flops_per_token((S - 1) / 2)`` like ``S^2``. Traffic: a
    GPU needs the keys and values of every earlier token for its KV heads, so it receives
    ``(cp - 1) / cp * S * kv_bytes_per_token / tp`` bytes, per layer the bytes of one
    all-gather (``collectives.hierarchical_all_gather_time_s``; a ring passes the same
    bytes in the same ``cp - 1`` steps). TP all-reduces ``S / cp`` tokens' activations
    ``tp_all_reduces_per_layer`` times a layer.
    """
    spec, chip_spec = get_model(model), get_chip(chip)
    S = check_context(spec, prompt_tokens, "prompt_tokens")
    n_cp, n_tp = int(cp), int(tp)
    gpus = n_cp * n_tp
    rate = chip_spec.peak(compute_dtype) * float(flops_efficiency)
    matmul = 2.0 * spec.matmul_params_per_token * S / gpus / rate
    attention = S * np.asarray(spec.attention_flops_per_token((S - 1.0) / 2.0)) / gpus / rate
    layers = spec.n_layers
    per_layer_kv = S * spec.kv_bytes_per_token(kv_dtype) / layers / n_tp
    per_domain = _cp_per_domain(n_cp, n_tp, chip_spec)
    kv_layer_s = collectives.hierarchical_all_gather_time_s(
        per_layer_kv, n_cp, chip_spec, per_domain=per_domain
    )
    activations = S / n_cp * spec.d_model * bytes_per_element(activation_dtype)
    tp_layer_s = collectives.hierarchical_all_reduce_time_s(activations, n_tp, chip_spec)
    return ContextParallelPrefill(
        prompt_tokens=S,
        cp=n_cp,
        tp=n_tp,
        matmul_s=as_floats(matmul),
        attention_s=as_floats(attention),
        kv_bytes_per_gpu=as_floats(layers * per_layer_kv * (n_cp - 1) / n_cp),
        kv_s=as_floats(layers * np.asarray(kv_layer_s)),
        tp_s=as_floats(layers * spec.tp_all_reduces_per_layer * np.asarray(tp_layer_s)),
    )


@contract(cp=CHIPS)
def cp_hiding_tokens(
    model: str | ModelConfig,
    chip: str | Chip,
    cp: int,
    *,
    tp: int = 8,
    kv_dtype: str = "bf16",
    compute_dtype: str = "bf16",
) -> float:
    """Tokens per CP rank, ``(S - 1) / cp``, above which a ring's KV bytes take no longer than
    the attention they feed (latency left out).

    Per layer a GPU receives ``S kv_l (cp-1) / (cp tp)`` bytes at ``s`` seconds per byte and
    does ``S (S - 1) a / (2 cp tp)`` attention FLOPs, ``a`` those of one query against one key
    (``4 N H`` for GQA); equal when ``(S - 1) / cp = 2 kv_l s C / a``: for GQA with one CP rank
    per node, ``(K / N) b (C / W_out) (cp - 1) / cp``. Fewer KV heads per query head (GQA, MQA)
    let a shorter chunk hide its traffic.
    """
    spec, chip_spec = get_model(model), get_chip(chip)
    n_cp, n_tp = int(cp), int(tp)
    per_domain = _cp_per_domain(n_cp, n_tp, chip_spec)
    per_byte = collectives.hierarchical_all_gather_s_per_byte(
        n_cp, chip_spec, per_domain=per_domain
    )
    kv_layer = spec.kv_bytes_per_token(kv_dtype) / spec.n_layers
    pair_flops = float(spec.attention_flops_per_token(1.0)) / spec.n_layers
    return float(2.0 * kv_layer * per_byte * chip_spec.peak(compute_dtype) / pair_flops)


# ---- curves the figures draw ----------------------------------------------------------------
@dataclass(frozen=True)
@checked(
    **each(RESULT, "total_memory_bytes hbm_bytes lower_s upper_s mfu bubble_fraction"),
    memory_bytes=MappingOf(
        OneOf(("weights", "gradients", "optimizer", "activations"), "part"),
        RESULT,
        "part",
        example=lambda: {"weights": 1.0},
    ),
    time_parts=SequenceOf(Instance(tuple)),
)
class LayoutBreakdown:
    """One layout training one model, as the chapter's figures show it: memory per GPU by
    part, and the step time as (label, seconds, link) for the compute, the bubble and each
    kind of traffic (the link names the network it loads; empty for compute and bubble)."""

    layout: Layout
    memory_bytes: dict[str, float]
    total_memory_bytes: float
    hbm_bytes: float
    time_parts: tuple[tuple[str, float, str], ...]
    lower_s: float
    upper_s: float
    mfu: float
    bubble_fraction: float


@contract(
    global_batch_tokens=SCALAR_POSITIVE,
    microbatches=CHIPS,
    activations=OneOf(ACTIVATION_MODES, "mode"),
    flops_efficiency=SCALAR_FRACTION,
)
def layout_breakdown(
    model: str | ModelConfig,
    chip: str | Chip,
    layout: Layout,
    global_batch_tokens: float,
    *,
    microbatches: int = 8,
    activations: str = "stored",
    flops_efficiency: float = 1.0,
) -> LayoutBreakdown:
    """:func:`training_memory` and :func:`training_step` of one layout, part by part."""
    spec, chip_spec = get_model(model), get_chip(chip)
    memory = training_memory(
        spec, layout, global_batch_tokens, microbatches=microbatches, activations=activations
    )
    step = training_step(
        spec,
        layout,
        chip_spec,
        global_batch_tokens,
        microbatches=microbatches,
        activations=activations,
        flops_efficiency=flops_efficiency,
    )
    parts = [("compute", float(step.compute_s), ""), ("bubble", float(step.bubble_s), "")]
    for kind in KINDS:
        comm = step.communication[kind]
        parts.append((kind, float(comm.time_s), comm.link))
    bubble = pipeline_bubble_fraction(layout.pp, microbatches, layout.virtual_stages)
    return LayoutBreakdown(
        layout=layout,
        memory_bytes={name: float(value) for name, value in memory.parts().items()},
        total_memory_bytes=float(memory.total_bytes),
        hbm_bytes=float(chip_spec.hbm_bytes),
        time_parts=tuple(parts),
        lower_s=float(step.lower_s),
        upper_s=float(step.upper_s),
        mfu=float(step.mfu),
        bubble_fraction=float(bubble),
    )


__all__ = [
    "ACTIVATION_MODES",
    "ADAM_MIXED_BYTES_PER_PARAM",
    "AXES",
    "KINDS",
    "ZERO_STAGES",
    "BatchTradeoff",
    "Communication",
    "ContextParallelPrefill",
    "DecodeStep",
    "DoesNotFitError",
    "Group",
    "Layout",
    "LayoutBreakdown",
    "ServingMemory",
    "TrainingMemory",
    "TrainingStep",
    "activation_bytes_per_token",
    "activation_memory_bytes",
    "batch_tradeoff",
    "context_parallel_prefill",
    "cp_hiding_tokens",
    "data_parallel_ceiling",
    "dense_params",
    "dp_hiding_batch",
    "expert_params",
    "gradient_noise_scale",
    "groups",
    "kv_shards",
    "layers_per_stage",
    "layout_breakdown",
    "layout_decode_step",
    "max_decode_batch",
    "min_model_parallel_degree",
    "model_state_bytes",
    "params_per_gpu",
    "pipeline_bubble_fraction",
    "pipeline_slots",
    "recompute_flops_fraction",
    "serving_memory",
    "tp_critical_degree",
    "training_communication",
    "training_flops",
    "training_memory",
    "training_step",
]

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
scale-out network. Times come from :mod:`llmmath.collectives` and are FLOORS: bandwidth-optimal
collectives at full link speed plus their per-step latency, matmuls at ``flops_efficiency`` of
the dense peak (the MFU knob), no stragglers, perfect load balance.

This is the chapter's module: the layout and what each GPU holds live in
:mod:`llmmath.placement`, training in :mod:`llmmath.training`, and a serving step in
:mod:`llmmath.serving` (the same decode step the batching chapter uses); they are all
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

from numpy.typing import ArrayLike

from ._checks import as_floats
from .contracts import (
    CHIPS,
    RESULT,
    SCALAR_FRACTION,
    SCALAR_POSITIVE,
    Instance,
    MappingOf,
    OneOf,
    SequenceOf,
    checked,
    contract,
    each,
)
from .hardware import Chip, get_chip
from .models import ModelConfig, get_model
from .placement import (
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
from .serving import OVERLAP_RULES, DecodeStep, Deployment
from .serving import decode_step as _serving_decode_step
from .training import (
    Communication,
    TrainingStep,
    dp_critical_batch,
    pipeline_bubble_fraction,
    tp_critical_degree,
    training_communication,
    training_flops,
    training_step,
)
from .training_memory import (
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
def decode_step(
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
    """One decode step of ``layout`` serving ``model``: :func:`llmmath.serving.decode_step`
    with ``batch`` counted per attention group, as this chapter does.

    ``batch`` is the sequences of one DP replica and EP rank in one stage step, so the whole
    deployment finishes ``batch * ep * dp`` tokens per stage step. The capacity check is left
    to :func:`max_decode_batch` (the chapter sweeps past it on purpose).
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
    "Communication",
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
    "decode_step",
    "dense_params",
    "dp_critical_batch",
    "expert_params",
    "groups",
    "kv_shards",
    "layers_per_stage",
    "layout_breakdown",
    "max_decode_batch",
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

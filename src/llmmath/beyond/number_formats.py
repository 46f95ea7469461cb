"""Low-precision weights and KV caches (FP8, NVFP4): how they move the critical batch ``B*``
and the capacity wall.

Smaller weights shrink the weight read (the latency floor) and free HBM for KV caches; a
smaller KV cache fits more sequences at a context. ``B* = C b_w / (2 W)`` moves only when the
weights shrink *without* the arithmetic getting faster: weight-only quantization (NVFP4
weights feeding bf16 FLOPs) lowers ``B*``; NVFP4 weights with NVFP4 arithmetic (Blackwell's
FP4 tensor cores, twice the FP8 peak) keep it near ``C / W``. Every time is a
:func:`llmmath.core.serving.decode_step` floor. In training, FP8 matmuls double the peak ``C``
(H100, H800: 1,979 against 989 TFLOP/s); :func:`implied_mfu` reads a run's published
GPU-hours back as an MFU against either peak.

>>> from llmmath.beyond import number_formats
>>> fmt = number_formats.format_effects("Llama-3.1-405B", "B200", 8, 32768)
>>> [int(b) for b in fmt.max_batch]
[37, 122, 143]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmmath.core._constraints import Count, Real, SequenceOf
from llmmath.core.capacity import max_batch, step_critical_batch, weight_floor_s
from llmmath.core.contracts import (
    RESULT,
    RESULT_OR_INF,
    SCALAR,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.dtypes import DTYPE, bytes_per_element
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.serving import decode_step
from llmmath.core.training import training_flops
from llmmath.core.units import SECONDS_PER_HOUR

#: (weights, KV cache, arithmetic): bf16 throughout; FP8 throughout; NVFP4 weights and
#: arithmetic with an FP8 KV cache (as Blackwell serving stacks run them).
RECIPES: tuple[tuple[str, str, str], ...] = (
    ("bf16", "bf16", "bf16"),
    ("fp8", "fp8", "fp8"),
    ("nvfp4", "fp8", "nvfp4"),
)


@dataclass(frozen=True)
@checked(
    recipes=SequenceOf(SequenceOf(DTYPE)),
    context=SCALAR,
    **each(RESULT, "weight_bytes kv_bytes_per_token critical_batch weight_floor_s"),
    **each(RESULT, "batch step_time_s cost_per_million_usd"),
    max_batch=RESULT_OR_INF,
)
class FormatEffects:
    """One row per recipe (weights, KV, arithmetic) of the same model on the same chips."""

    recipes: tuple[tuple[str, str, str], ...]
    context: float
    weight_bytes: np.ndarray
    kv_bytes_per_token: np.ndarray
    #: ``B*``: where the matmuls turn compute-bound.
    critical_batch: np.ndarray
    #: The capacity wall: sequences of ``context`` whose KV caches fit beside the weights.
    max_batch: np.ndarray
    #: Weights / bandwidth: the latency floor.
    weight_floor_s: np.ndarray
    #: The cheapest batch, ``min(ceil(B*), max_batch)``, its step and its cost.
    batch: np.ndarray
    step_time_s: np.ndarray
    cost_per_million_usd: np.ndarray


@contract(n_chips=Count(high=1 << 16), context=SCALAR, recipes=SequenceOf(SequenceOf(DTYPE)))
def format_effects(
    model: str,
    chip: str,
    n_chips: int,
    context: float,
    recipes: tuple[tuple[str, str, str], ...] = RECIPES,
    usd_per_chip_hour: float = 1.0,
) -> FormatEffects:
    """``model`` on ``n_chips`` x ``chip`` at ``context`` in each recipe: weight bytes, KV
    bytes per token, ``B*``, the capacity wall, the weight floor, and the cheapest batch's
    step and cost (at ``usd_per_chip_hour``, 1 by default: compare recipes, not vendors)."""
    rows = []
    for weights, kv, compute in recipes:
        for dtype in (weights, kv, compute):
            bytes_per_element(dtype)  # a clear error for an unknown format
        dep = Deployment(
            get_model(model),
            get_chip(chip),
            n_chips,
            weight_dtype=weights,
            kv_dtype=kv,
            compute_dtype=compute,
            usd_per_chip_hour=usd_per_chip_hour,
        )
        rows.append(_row(dep, context))
    columns = [np.array(column, dtype=np.float64) for column in zip(*rows, strict=True)]
    named = tuple((w, kv, c) for w, kv, c in recipes)
    return FormatEffects(named, float(context), *columns)


def _row(dep: Deployment, context: float) -> tuple[float, ...]:
    critical = step_critical_batch(dep)
    room = float(max_batch(dep, context))
    batch = float(min(np.ceil(critical), room))
    step = decode_step(dep, max(batch, 1.0), context, allow_overflow=batch < 1)
    return (
        dep.weight_bytes,
        dep.model.kv_bytes_per_token(dep.kv_dtype),
        critical,
        room,
        weight_floor_s(dep),
        batch,
        float(step.time_s),
        float(step.cost_per_million_tokens_usd()),
    )


# ---- FP8 training: the peak an MFU is counted against ------------------------------------------
@dataclass(frozen=True)
@checked(**each(SCALAR, "model_flops gpu_seconds flop_per_s_per_gpu peak_flop_per_s"))
class ImpliedMFU:
    """A training run's FLOPs over its GPU-time, against one peak: what the run sustained."""

    model_flops: float
    gpu_seconds: float
    #: FLOPs each GPU delivered per second of the run, averaged over every GPU-hour paid.
    flop_per_s_per_gpu: float
    #: The dense peak the MFU is counted against (bf16 or fp8).
    peak_flop_per_s: float

    @property
    def mfu(self) -> float:
        return self.flop_per_s_per_gpu / self.peak_flop_per_s


@contract(
    tokens=SCALAR_POSITIVE,
    gpu_hours=SCALAR_POSITIVE,
    sequence_tokens=Real(low=1.0, low_open=False, integer=True, scalar=True, unit="tokens"),
)
def implied_mfu(
    model: str | ModelConfig,
    tokens: float,
    gpu_hours: float,
    chip: str | Chip,
    dtype: str = "bf16",
    *,
    sequence_tokens: float | None = None,
) -> ImpliedMFU:
    """The MFU a run's published GPU-hours imply: ``FLOPs / (gpu_hours * 3600 * C)``.

    FLOPs are :func:`llmmath.core.training.training_flops` (``6 N D``, matmuls only); with
    ``sequence_tokens`` the causal attention of sequences that long is added, three times its
    forward FLOPs (as PaLM's MFU counts it). ``dtype`` picks the peak ``C``: an MFU is a ratio
    to *one* peak, and a run whose matmuls run in FP8 on a chip whose fp8 peak is twice its
    bf16 one has two honest MFUs, a factor of two apart. GPU-hours include every stall,
    restart and idle hour of the run, so this is at most what its kernels reached.
    """
    spec, chip_spec = get_model(model), get_chip(chip)
    flops = float(training_flops(spec, float(tokens)))
    if sequence_tokens is not None:
        per_token = spec.attention_flops_per_token((float(sequence_tokens) - 1.0) / 2.0)
        flops += 3.0 * float(per_token) * float(tokens)
    seconds = float(gpu_hours) * SECONDS_PER_HOUR
    return ImpliedMFU(flops, seconds, flops / seconds, chip_spec.peak(dtype))


__all__ = ["RECIPES", "FormatEffects", "ImpliedMFU", "format_effects", "implied_mfu"]

"""The roofline: compute time vs memory time, arithmetic intensity, and the critical batch.

Every time here is a FLOOR: it assumes the chip reaches ``flops_efficiency`` of its dense
peak and ``bandwidth_efficiency`` of its HBM bandwidth (1.0 = the datasheet). Real kernels
reach less; lower the knobs to see by how much the floor moves.

>>> from llmmath.core import roofline
>>> round(roofline.critical_batch("H100"))            # bf16 weights, bf16 compute
295
>>> round(roofline.critical_batch("H100", weight_dtype="int8"))
148
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import Real
from llmmath.core.contracts import (
    AMOUNT,
    FLAG,
    POSITIVE,
    RESULT,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.dtypes import bytes_per_element
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, get_model, weight_params_read


@dataclass(frozen=True)
@checked(compute_s=RESULT, memory_s=RESULT)
class RooflineTime:
    """Compute and memory time of one operation; the truth lies between the two bounds."""

    compute_s: FloatArray
    memory_s: FloatArray

    @property
    def lower_s(self) -> FloatArray:
        """Perfect overlap of compute and memory traffic: ``max(T_math, T_comms)``."""
        return np.maximum(self.compute_s, self.memory_s)

    @property
    def upper_s(self) -> FloatArray:
        """No overlap at all: ``T_math + T_comms``."""
        return self.compute_s + self.memory_s

    @property
    def compute_bound(self) -> FloatArray:
        """True where compute time exceeds memory time."""
        return np.asarray(self.compute_s > self.memory_s)


@contract(flops=POSITIVE, bytes_moved=POSITIVE)
def arithmetic_intensity(flops: ArrayLike, bytes_moved: ArrayLike) -> float | FloatArray:
    """FLOPs done per byte moved to or from memory."""
    return as_output(as_floats(flops) / as_floats(bytes_moved))


@contract(intensity=POSITIVE)
def attainable_flop_per_s(
    intensity: ArrayLike, chip: str | Chip, dtype: str = "bf16"
) -> float | FloatArray:
    """The roofline curve: ``min(C, intensity * W)`` FLOP/s."""
    spec = get_chip(chip)
    return as_output(_roof(as_floats(intensity), spec.peak(dtype), spec.hbm_bandwidth_bytes_per_s))


def _roof(intensity: FloatArray, peak: float, bandwidth: float) -> FloatArray:
    return np.minimum(peak, intensity * bandwidth)


@contract(d_in=POSITIVE, d_out=POSITIVE)
def matmul_flops(batch: ArrayLike, d_in: ArrayLike, d_out: ArrayLike) -> float | FloatArray:
    """``[B, D] x [D, F]`` costs ``2 B D F`` FLOPs (a multiply and an add per term)."""
    B, D, F = _sizes(batch, d_in, d_out)
    return as_output(2.0 * B * D * F)


@contract(d_in=POSITIVE, d_out=POSITIVE)
def matmul_bytes(
    batch: ArrayLike,
    d_in: ArrayLike,
    d_out: ArrayLike,
    weight_dtype: str = "bf16",
    activation_dtype: str = "bf16",
) -> float | FloatArray:
    """Bytes moved: read activations ``B*D`` and weights ``D*F``, write outputs ``B*F``."""
    B, D, F = _sizes(batch, d_in, d_out)
    activation = bytes_per_element(activation_dtype)
    return as_output(activation * (B * D + B * F) + bytes_per_element(weight_dtype) * D * F)


@contract(flops=AMOUNT, bytes_moved=AMOUNT)
def roofline_time(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    chip: str | Chip,
    compute_dtype: str = "bf16",
    *,
    flops_efficiency: ArrayLike = 1.0,
    bandwidth_efficiency: ArrayLike = 1.0,
) -> RooflineTime:
    """Compute time ``FLOPs / (eff * C)`` and memory time ``bytes / (eff * W)``."""
    spec = get_chip(chip)
    achieved_flops = spec.peak(compute_dtype) * as_floats(flops_efficiency)
    achieved_bw = spec.hbm_bandwidth_bytes_per_s * as_floats(bandwidth_efficiency)
    flops_array, bytes_array = as_floats(flops), as_floats(bytes_moved)
    return RooflineTime(flops_array / achieved_flops, bytes_array / achieved_bw)


@contract(d_in=POSITIVE, d_out=POSITIVE)
def matmul_time(
    batch: ArrayLike,
    d_in: ArrayLike,
    d_out: ArrayLike,
    chip: str | Chip,
    compute_dtype: str = "bf16",
    weight_dtype: str | None = None,
    *,
    flops_efficiency: ArrayLike = 1.0,
    bandwidth_efficiency: ArrayLike = 1.0,
) -> RooflineTime:
    """Roofline bounds of one ``[B, D] x [D, F]`` matmul on ``chip``."""
    weights = weight_dtype or compute_dtype
    return roofline_time(
        matmul_flops(batch, d_in, d_out),
        matmul_bytes(batch, d_in, d_out, weights, compute_dtype),
        chip,
        compute_dtype,
        flops_efficiency=flops_efficiency,
        bandwidth_efficiency=bandwidth_efficiency,
    )


@contract()
def critical_batch(
    chip: str | Chip, compute_dtype: str = "bf16", weight_dtype: str | None = None
) -> float:
    """Token batch above which a weight-dominated matmul turns compute-bound.

    For ``B << D, F`` the intensity is ``2 B / bytes_per_weight``; setting it equal to the
    chip's ``C / W`` gives ``B* = C * bytes_per_weight / (2 W)``: ``C / W`` for bf16 weights,
    half that for int8 weights feeding bf16 FLOPs.
    """
    spec = get_chip(chip)
    weight_bytes = bytes_per_element(weight_dtype or compute_dtype)
    return spec.peak(compute_dtype) * weight_bytes / (2.0 * spec.hbm_bandwidth_bytes_per_s)


@contract()
def decode_weight_time(
    model: str | ModelConfig,
    batch: ArrayLike,
    chip: str | Chip,
    compute_dtype: str = "bf16",
    weight_dtype: str | None = None,
    *,
    flops_efficiency: ArrayLike = 1.0,
    bandwidth_efficiency: ArrayLike = 1.0,
) -> RooflineTime:
    """One decode step of ``batch`` sequences through the model's weight matmuls on one chip.

    Counts ``2 * B * P_matmul`` FLOPs and one read of every weight a step touches (for an MoE,
    the experts that at least one token in the batch is routed to). The KV cache, activations
    and communication are left out here; the batching chapter adds them.
    """
    flops, bytes_read = _decode_weight_work(model, batch, compute_dtype, weight_dtype)
    return roofline_time(
        flops,
        bytes_read,
        chip,
        compute_dtype,
        flops_efficiency=flops_efficiency,
        bandwidth_efficiency=bandwidth_efficiency,
    )


def _decode_weight_work(
    model: str | ModelConfig, batch: ArrayLike, compute_dtype: str, weight_dtype: str | None
) -> tuple[FloatArray, FloatArray]:
    """FLOPs ``2 B P_matmul`` and the bytes of every weight read of one decode step."""
    spec = get_model(model)
    B = as_floats(batch)
    flops = 2.0 * B * spec.matmul_params_per_token
    bytes_read = weight_params_read(spec, B) * bytes_per_element(weight_dtype or compute_dtype)
    return flops, bytes_read


# ---- curves the figures draw ----------------------------------------------------------------
#: Intensities of the roofline curve: 0.1 ... 10,000 FLOP per byte, log-spaced.
CURVE_INTENSITIES = np.logspace(-1, 4, 200)
#: Batches of the decode-step curves: 1 ... 8,192 sequences, log-spaced.
CURVE_BATCHES = np.logspace(0, np.log10(8192), 120)


@dataclass(frozen=True)
@checked(
    broadcast=False,
    **each(RESULT, "intensity attainable_flop_per_s peak_flop_per_s ridge_intensity"),
)
class RooflineCurve:
    """A roofline: attainable FLOP/s ``min(C, I W)`` against arithmetic intensity ``I``, its
    peak ``C`` and ridge point ``C / W`` (the intensity where it turns compute-bound)."""

    intensity: FloatArray
    attainable_flop_per_s: FloatArray
    peak_flop_per_s: float
    ridge_intensity: float


@contract(
    peak_flop_per_s=SCALAR_POSITIVE,
    bandwidth_bytes_per_s=SCALAR_POSITIVE,
    intensities=Real(ndarray=True),
)
def ceiling_curve(
    peak_flop_per_s: float,
    bandwidth_bytes_per_s: float,
    intensities: FloatArray = CURVE_INTENSITIES,
) -> RooflineCurve:
    """The roofline of any peak and bandwidth (a datasheet's, or one measured) over
    ``intensities``: the most a kernel of that intensity can attain, a floor on its time."""
    C, W = float(peak_flop_per_s), float(bandwidth_bytes_per_s)
    I = as_floats(intensities)  # noqa: E741 (the intensity's symbol)
    return RooflineCurve(I, _roof(I, C, W), C, C / W)


@contract(intensities=Real(ndarray=True))
def roofline_curve(
    chip: str | Chip, dtype: str = "bf16", intensities: FloatArray = CURVE_INTENSITIES
) -> RooflineCurve:
    """``chip``'s roofline at its dense ``dtype`` peak and its HBM bandwidth (datasheet)."""
    spec = get_chip(chip)
    return ceiling_curve(spec.peak(dtype), spec.hbm_bandwidth_bytes_per_s, intensities)


@dataclass(frozen=True)
@checked(
    **each(RESULT, "batch compute_s memory_s lower_s upper_s critical_batch"),
    broadcast=False,
)
class DecodeTimeCurves:
    """One decode step's weight matmuls against the batch on one chip: compute time, weight
    read time, the floor (perfect overlap, ``max``) and no overlap (the sum), and the critical
    batch where the two cross."""

    batch: FloatArray
    compute_s: FloatArray
    memory_s: FloatArray
    lower_s: FloatArray
    upper_s: FloatArray
    critical_batch: float


@contract(batches=Real(ndarray=True))
def decode_time_curves(
    model: str | ModelConfig,
    chip: str | Chip,
    compute_dtype: str = "bf16",
    weight_dtype: str | None = None,
    batches: FloatArray = CURVE_BATCHES,
) -> DecodeTimeCurves:
    """:func:`decode_weight_time` over ``batches``, and :func:`critical_batch`."""
    step = decode_weight_time(model, batches, chip, compute_dtype, weight_dtype)
    critical = critical_batch(chip, compute_dtype, weight_dtype)
    B = as_floats(batches)
    return DecodeTimeCurves(B, step.compute_s, step.memory_s, step.lower_s, step.upper_s, critical)


@dataclass(frozen=True)
@checked(**each(RESULT, "batch intensity attainable_flop_per_s time_s"), compute_bound=FLAG)
class DecodePoint:
    """One decode step on the roofline: its intensity (FLOPs per weight byte read), the FLOP/s
    it attains at the floor time ``time_s``, and whether compute time exceeds memory time."""

    batch: float
    intensity: float
    attainable_flop_per_s: float
    time_s: float
    compute_bound: bool


@contract(batch=SCALAR_POSITIVE)
def decode_point(
    model: str | ModelConfig,
    batch: float,
    chip: str | Chip,
    compute_dtype: str = "bf16",
    weight_dtype: str | None = None,
) -> DecodePoint:
    """Where :func:`decode_weight_time`'s step of ``batch`` sits on the roofline."""
    flops, bytes_read = _decode_weight_work(model, batch, compute_dtype, weight_dtype)
    step = roofline_time(flops, bytes_read, chip, compute_dtype)
    time_s = float(step.lower_s)
    return DecodePoint(
        float(batch),
        float(flops / bytes_read),
        float(flops) / time_s,
        time_s,
        bool(step.compute_bound),
    )


def _sizes(*values: ArrayLike) -> tuple[FloatArray, ...]:
    return tuple(as_floats(value) for value in values)

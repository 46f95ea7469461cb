"""llmmath.core.roofline: intensity, the roofline curve, matmul and decode-step floors.

Expected values are written out from the roofline formulas in reference.md
(``T_math = FLOPs / C``, ``T_comms = bytes / W``, matmul ``2BDF`` FLOPs and
``2BD + 2DF + 2BF`` bytes in bf16).
"""

from __future__ import annotations

import numpy as np
import pytest

from llmmath.core import roofline
from llmmath.core.hardware import get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.roofline import RooflineTime

H100_BF16 = 9.89e14
H100_BW = 3.35e12


# ---- intensity and the curve --------------------------------------------------------------
def test_arithmetic_intensity() -> None:
    assert roofline.arithmetic_intensity(600.0, 3.0) == 200.0
    result = roofline.arithmetic_intensity(np.array([10.0, 20.0]), 5.0)
    assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(result, [2.0, 4.0])


@pytest.mark.parametrize(("flops", "moved", "name"), [(0, 1, "flops"), (1, 0, "bytes_moved")])
def test_arithmetic_intensity_rejects_zero(flops: float, moved: float, name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} must be finite and > 0"):
        roofline.arithmetic_intensity(flops, moved)


def test_attainable_flops_below_and_above_the_ridge() -> None:
    ridge = H100_BF16 / H100_BW
    below = roofline.attainable_flop_per_s(ridge / 4, "H100")
    assert below == pytest.approx(ridge / 4 * H100_BW, rel=1e-12)
    assert roofline.attainable_flop_per_s(ridge, "H100") == pytest.approx(H100_BF16, rel=1e-12)
    assert roofline.attainable_flop_per_s(10 * ridge, "H100") == H100_BF16


def test_attainable_flops_uses_the_dtype_peak() -> None:
    intensities = np.array([1.0, 1e4])
    curve = roofline.attainable_flop_per_s(intensities, "H100", "fp8")
    np.testing.assert_allclose(curve, [H100_BW, 1.979e15], rtol=1e-12)


def test_attainable_flops_rejects_a_dtype_the_chip_lacks() -> None:
    with pytest.raises(ValueError, match="fp8"):
        roofline.attainable_flop_per_s(10.0, "A100", "fp8")


# ---- matmuls ------------------------------------------------------------------------------
def test_matmul_flops_and_bytes() -> None:
    B, D, F = 16, 1024, 4096
    assert roofline.matmul_flops(B, D, F) == 2 * B * D * F
    assert roofline.matmul_bytes(B, D, F) == 2 * B * D + 2 * D * F + 2 * B * F


def test_matmul_bytes_per_dtype() -> None:
    B, D, F = 4, 256, 512
    # int8 weights with bf16 activations: the D x F term at 1 byte.
    assert roofline.matmul_bytes(B, D, F, "int8") == 2 * B * D + D * F + 2 * B * F
    # fp32 everywhere.
    assert roofline.matmul_bytes(B, D, F, "fp32", "fp32") == 4 * (B * D + D * F + B * F)


def test_small_batch_matmul_intensity_is_about_the_batch() -> None:
    # reference.md: for B << D, F a bf16 matmul's intensity is about B.
    for B in (1, 8, 64):
        flops = roofline.matmul_flops(B, 16384, 16384)
        moved = roofline.matmul_bytes(B, 16384, 16384)
        assert roofline.arithmetic_intensity(flops, moved) == pytest.approx(B, rel=0.01)


def test_matmul_functions_accept_arrays() -> None:
    batches = np.array([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(roofline.matmul_flops(batches, 10, 20), 400.0 * batches)


@pytest.mark.parametrize("position", [0, 1, 2])
@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_matmul_sizes_must_be_positive(position: int, bad: float) -> None:
    sizes = [8.0, 16.0, 32.0]
    sizes[position] = bad
    name = ("batch", "d_in", "d_out")[position]
    with pytest.raises(ValueError, match=f"{name} must be finite and > 0"):
        roofline.matmul_flops(*sizes)
    with pytest.raises(ValueError, match=f"{name} must be finite and > 0"):
        roofline.matmul_bytes(*sizes)


def test_matmul_sizes_reject_strings() -> None:
    with pytest.raises(TypeError, match="batch must be a number"):
        roofline.matmul_flops("8", 16, 32)  # type: ignore[arg-type]


def test_matmul_rejects_unknown_dtypes() -> None:
    with pytest.raises(ValueError, match="unknown dtype 'int3'"):
        roofline.matmul_bytes(1, 2, 3, "int3")


# ---- roofline_time ------------------------------------------------------------------------
def test_roofline_time_divides_by_peak_and_bandwidth() -> None:
    t = roofline.roofline_time(9.89e14, 3.35e12 / 2, "H100")
    assert t.compute_s == pytest.approx(1.0, rel=1e-12)
    assert t.memory_s == pytest.approx(0.5, rel=1e-12)
    assert t.lower_s == pytest.approx(1.0, rel=1e-12)
    assert t.upper_s == pytest.approx(1.5, rel=1e-12)
    assert bool(t.compute_bound)


def test_roofline_time_accepts_zero_work() -> None:
    t = roofline.roofline_time(0.0, 1e9, "H100")
    assert t.compute_s == 0.0 and not bool(t.compute_bound)


def test_efficiency_knobs_stretch_the_times() -> None:
    full = roofline.roofline_time(1e15, 1e12, "H100")
    slow = roofline.roofline_time(
        1e15, 1e12, "H100", flops_efficiency=0.5, bandwidth_efficiency=0.8
    )
    assert slow.compute_s == pytest.approx(full.compute_s / 0.5, rel=1e-12)
    assert slow.memory_s == pytest.approx(full.memory_s / 0.8, rel=1e-12)


def test_efficiency_may_be_an_array() -> None:
    t = roofline.roofline_time(1e15, 1e12, "H100", flops_efficiency=np.array([0.25, 0.5, 1.0]))
    np.testing.assert_allclose(t.compute_s * np.array([0.25, 0.5, 1.0]), 1e15 / H100_BF16)


@pytest.mark.parametrize("knob", ["flops_efficiency", "bandwidth_efficiency"])
@pytest.mark.parametrize("bad", [0.0, -0.5, 1.01, 50.0, float("nan"), [0.5, 1.5]])
def test_efficiency_outside_zero_one_is_rejected(knob: str, bad: object) -> None:
    with pytest.raises(ValueError, match=rf"{knob} must be in \(0, 1\]"):
        roofline.roofline_time(1.0, 1.0, "H100", **{knob: bad})  # type: ignore[arg-type]


def test_efficiency_of_the_wrong_type_is_rejected() -> None:
    with pytest.raises(TypeError, match="flops_efficiency must be a number"):
        roofline.roofline_time(1.0, 1.0, "H100", flops_efficiency="high")  # type: ignore[arg-type]


@pytest.mark.parametrize(("flops", "moved", "name"), [(-1, 1, "flops"), (1, -1, "bytes_moved")])
def test_negative_work_is_rejected(flops: float, moved: float, name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} must be finite and >= 0"):
        roofline.roofline_time(flops, moved, "H100")


def test_roofline_time_on_an_unknown_chip() -> None:
    with pytest.raises(ValueError, match="unknown chip 'V100'; known: A100"):
        roofline.roofline_time(1.0, 1.0, "V100")


def test_rooflinetime_bounds_are_elementwise() -> None:
    t = RooflineTime(np.array([1.0, 5.0]), np.array([3.0, 2.0]))
    np.testing.assert_array_equal(t.lower_s, [3.0, 5.0])
    np.testing.assert_array_equal(t.upper_s, [4.0, 7.0])
    np.testing.assert_array_equal(t.compute_bound, [False, True])


def test_matmul_time_combines_flops_and_bytes() -> None:
    B, D, F = 32, 8192, 8192
    t = roofline.matmul_time(B, D, F, "H100")
    assert t.compute_s == pytest.approx(2 * B * D * F / H100_BF16, rel=1e-12)
    assert t.memory_s == pytest.approx((2 * B * D + 2 * D * F + 2 * B * F) / H100_BW, rel=1e-12)


def test_matmul_time_weight_dtype_defaults_to_compute_dtype() -> None:
    fp8 = roofline.matmul_time(8, 4096, 4096, "H100", "fp8")
    assert fp8.memory_s == pytest.approx((8 * 4096 * 2 + 4096 * 4096) / H100_BW, rel=1e-12)
    mixed = roofline.matmul_time(8, 4096, 4096, "H100", "bf16", "int8")
    assert mixed.compute_s == pytest.approx(2 * 8 * 4096 * 4096 / H100_BF16, rel=1e-12)
    assert mixed.memory_s == pytest.approx(
        (2 * 8 * 4096 + 4096 * 4096 + 2 * 8 * 4096) / H100_BW, rel=1e-12
    )


def test_matmul_time_in_fp8_on_a100_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown dtype for A100 'fp8'; known: bf16, fp16, int8"):
        roofline.matmul_time(8, 1024, 1024, "A100", "fp8")


# ---- critical batch -----------------------------------------------------------------------
def test_critical_batch_for_matching_dtypes() -> None:
    assert roofline.critical_batch("H100") == pytest.approx(H100_BF16 / H100_BW, rel=1e-12)
    # fp8 weights and FLOPs: twice the peak, half the bytes per weight, so the same batch
    # (the critical *intensity* doubles to ~590, the intensity of the matmul does too).
    assert roofline.critical_batch("H100", "fp8") == pytest.approx(
        1.979e15 / H100_BW / 2, rel=1e-12
    )


def test_critical_batch_scales_with_weight_bits() -> None:
    # reference.md: b_w / b_a. int4 weights quarter the bf16 critical batch; fp32 doubles it.
    bf16 = roofline.critical_batch("B200")
    assert roofline.critical_batch("B200", "bf16", "int4") == pytest.approx(bf16 / 4, rel=1e-12)
    assert roofline.critical_batch("B200", "bf16", "fp32") == pytest.approx(2 * bf16, rel=1e-12)


@pytest.mark.parametrize("chip", ["A100", "H100", "B200", "TPU-v5e"])
def test_critical_batch_separates_memory_from_compute_bound_matmuls(chip: str) -> None:
    # With D, F huge the activation bytes vanish and the crossover sits at the critical batch.
    critical = roofline.critical_batch(chip)
    below = roofline.matmul_time(0.95 * critical, 1e7, 1e7, chip)
    above = roofline.matmul_time(1.05 * critical, 1e7, 1e7, chip)
    assert not bool(below.compute_bound)
    assert bool(above.compute_bound)


def test_critical_batch_rejects_a_missing_dtype() -> None:
    with pytest.raises(ValueError, match="fp8"):
        roofline.critical_batch("A100", "fp8")


# ---- decode steps -------------------------------------------------------------------------
def test_decode_weight_time_dense_model() -> None:
    llama = get_model("Llama-3-70B")
    # Every matmul weight (all but the input embedding, a lookup) is read once per step.
    matmul_params = llama.total_params - llama.vocab_size * llama.d_model
    for B in (1.0, 64.0, 1024.0):
        t = roofline.decode_weight_time(llama, B, "H100")
        assert t.compute_s == pytest.approx(2 * B * matmul_params / H100_BF16, rel=1e-12)
        assert t.memory_s == pytest.approx(2 * matmul_params / H100_BW, rel=1e-12)


def test_decode_weight_time_at_batch_one_is_about_forty_ms_on_h100() -> None:
    # ~69.5e9 matmul weights x 2 bytes / 3.35e12 B/s ~ 41.5 ms (reference.md decode formula).
    t = roofline.decode_weight_time("Llama-3-70B", 1, "H100")
    assert float(t.lower_s) == pytest.approx(41.5e-3, rel=0.01)


def test_decode_compute_equals_memory_at_the_critical_batch() -> None:
    critical = roofline.critical_batch("H100")
    t = roofline.decode_weight_time("Llama-3-8B", critical, "H100")
    assert float(t.compute_s) == pytest.approx(float(t.memory_s), rel=1e-9)


def test_int8_weights_halve_the_read_but_not_the_compute() -> None:
    bf16 = roofline.decode_weight_time("Llama-3-8B", 16, "H100")
    int8 = roofline.decode_weight_time("Llama-3-8B", 16, "H100", "bf16", "int8")
    assert float(int8.memory_s) == pytest.approx(float(bf16.memory_s) / 2, rel=1e-12)
    assert float(int8.compute_s) == pytest.approx(float(bf16.compute_s), rel=1e-12)


def test_decode_efficiency_knobs() -> None:
    full = roofline.decode_weight_time("Llama-3-8B", 16, "H100")
    knobs = roofline.decode_weight_time(
        "Llama-3-8B", 16, "H100", flops_efficiency=0.5, bandwidth_efficiency=0.9
    )
    assert float(knobs.compute_s) == pytest.approx(2 * float(full.compute_s), rel=1e-12)
    assert float(knobs.memory_s) == pytest.approx(float(full.memory_s) / 0.9, rel=1e-12)
    with pytest.raises(ValueError, match="bandwidth_efficiency"):
        roofline.decode_weight_time("Llama-3-8B", 16, "H100", bandwidth_efficiency=1.2)


@pytest.mark.parametrize("bad", [0, -8, float("inf")])
def test_decode_batch_must_be_positive(bad: float) -> None:
    with pytest.raises(ValueError, match="batch must be finite and > 0"):
        roofline.decode_weight_time("Llama-3-8B", bad, "H100")


def test_decode_accepts_a_custom_model_and_chip_object() -> None:
    model = ModelConfig("tiny", 2, 64, 256, 4, 4, 16, 100, 128)
    chip = get_chip("H100")
    t = roofline.decode_weight_time(model, 1, chip)
    assert float(t.memory_s) == pytest.approx(2 * model.matmul_params_per_token / H100_BW)


def test_weight_params_read_for_a_dense_model_keeps_the_batch_shape() -> None:
    llama = get_model("Llama-3-8B")
    reads = roofline.weight_params_read(llama, np.array([1.0, 10.0, 100.0]))
    assert reads.shape == (3,)
    np.testing.assert_array_equal(reads, llama.matmul_params_per_token)


def test_weight_params_read_for_moe_under_uniform_routing() -> None:
    mixtral = get_model("Mixtral-8x7B")
    per_expert = 3 * 4096 * 14336
    # One token touches exactly k = 2 experts per layer: the active weights.
    assert float(roofline.weight_params_read(mixtral, 1)) == pytest.approx(
        mixtral.matmul_params_per_token, rel=1e-12
    )
    # Two tokens: expected experts touched 8 (1 - (6/8)^2) = 3.5, so 1.5 more per layer.
    assert float(roofline.weight_params_read(mixtral, 2)) == pytest.approx(
        mixtral.matmul_params_per_token + 32 * 1.5 * per_expert, rel=1e-12
    )
    # A big batch touches all 8: every matmul weight, i.e. all but the input embedding.
    assert float(roofline.weight_params_read(mixtral, 4096)) == pytest.approx(
        mixtral.total_params - 32000 * 4096, rel=1e-9
    )


def test_moe_decode_reads_more_than_active_weights_at_large_batch() -> None:
    small = roofline.decode_weight_time("Mixtral-8x7B", 1, "H100")
    large = roofline.decode_weight_time("Mixtral-8x7B", 512, "H100")
    assert float(large.memory_s) / float(small.memory_s) == pytest.approx(
        (46.70e9 - 0.131e9) / (12.88e9 - 0.131e9), rel=0.01
    )


# ---- curves the figures draw ------------------------------------------------------------------
def test_the_roofline_curve_is_min_of_peak_and_intensity_times_bandwidth() -> None:
    curve = roofline.roofline_curve("H100")
    assert curve.peak_flop_per_s == H100_BF16
    assert curve.ridge_intensity == pytest.approx(H100_BF16 / H100_BW, rel=1e-12)
    np.testing.assert_allclose(
        curve.attainable_flop_per_s,
        np.minimum(H100_BF16, curve.intensity * H100_BW),
        rtol=1e-12,
    )
    assert curve.intensity[0] == pytest.approx(0.1) and curve.intensity[-1] == pytest.approx(1e4)
    measured = roofline.ceiling_curve(1e11, 5e10, np.array([1.0, 2.0, 4.0]))
    np.testing.assert_allclose(measured.attainable_flop_per_s, [5e10, 1e11, 1e11], rtol=1e-12)
    assert measured.ridge_intensity == pytest.approx(2.0, rel=1e-12)


@pytest.mark.parametrize(("weights", "per_batch"), [("bf16", 1.0), ("int8", 2.0)])
def test_a_dense_decode_step_sits_on_the_roofline(weights: str, per_batch: float) -> None:
    """Each weight is read once and used in 2B FLOPs: ``2B / bytes_per_weight`` FLOP per byte,
    so B in bf16 and 2B in int8; at its floor time a step attains the roofline there."""
    critical = roofline.critical_batch("H100", "bf16", weights)
    for batch in (4.0, 64.0, 2048.0):
        point = roofline.decode_point("Llama-3-70B", batch, "H100", "bf16", weights)
        assert point.intensity == pytest.approx(per_batch * batch, rel=1e-12)
        on_roof = roofline.attainable_flop_per_s(point.intensity, "H100")
        assert point.attainable_flop_per_s == pytest.approx(on_roof, rel=1e-12)
        step = roofline.decode_weight_time("Llama-3-70B", batch, "H100", "bf16", weights)
        assert point.time_s == pytest.approx(float(step.lower_s), rel=1e-12)
        assert point.compute_bound == (batch > critical)


def test_decode_time_curves_are_the_step_over_the_batches() -> None:
    batches = np.array([1.0, 300.0, 4096.0])
    curves = roofline.decode_time_curves("Llama-3-8B", "H100", batches=batches)
    step = roofline.decode_weight_time("Llama-3-8B", batches, "H100")
    np.testing.assert_allclose(curves.compute_s, step.compute_s, rtol=1e-12)
    np.testing.assert_allclose(curves.lower_s, np.maximum(step.compute_s, step.memory_s))
    np.testing.assert_allclose(curves.upper_s, step.compute_s + step.memory_s)
    assert curves.critical_batch == pytest.approx(H100_BF16 / H100_BW, rel=1e-12)
    with pytest.raises(ValueError, match="batches"):
        roofline.decode_time_curves("Llama-3-8B", "H100", batches=np.array([0.0, 1.0]))

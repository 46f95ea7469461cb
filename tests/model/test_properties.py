"""Properties that must hold for every input, checked with Hypothesis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath.core import roofline
from llmmath.core.dtypes import bytes_per_element
from llmmath.core.hardware import PRESET_NAMES
from llmmath.core.models import ModelConfig, get_model

SETTINGS = settings(max_examples=60, deadline=None)

chips = st.sampled_from(PRESET_NAMES)
preset_models = st.sampled_from(["Llama-3-8B", "Llama-2-13B", "Mixtral-8x7B", "DeepSeek-V3"])
work = st.floats(min_value=0.0, max_value=1e24, allow_nan=False, allow_infinity=False)
positive_work = st.floats(min_value=1e-6, max_value=1e24)
efficiency = st.floats(min_value=1e-3, max_value=1.0)
batch = st.floats(min_value=1.0, max_value=1e6)
size = st.integers(min_value=1, max_value=1 << 16)
weight_dtypes = st.sampled_from(["fp32", "bf16", "fp16", "fp8", "int8", "int4"])


@st.composite
def moe_models(draw: st.DrawFn) -> ModelConfig:
    """Small MoE shapes with valid head and expert counts."""
    n_kv_heads = draw(st.integers(1, 8))
    n_layers = draw(st.integers(1, 8))
    n_experts = draw(st.integers(1, 64))
    return ModelConfig(
        name="moe",
        n_layers=n_layers,
        d_model=draw(st.integers(8, 512)),
        d_ff=draw(st.integers(8, 2048)),
        n_heads=n_kv_heads * draw(st.integers(1, 8)),
        n_kv_heads=n_kv_heads,
        head_dim=draw(st.integers(1, 128)),
        vocab_size=draw(st.integers(1, 5000)),
        max_context=1024,
        tied_embeddings=draw(st.booleans()),
        n_experts=n_experts,
        experts_per_token=draw(st.integers(1, n_experts)),
        n_shared_experts=draw(st.integers(0, 2)),
        d_ff_expert=draw(st.integers(0, 1024)),
        n_dense_layers=draw(st.integers(0, n_layers - 1)),
    )


any_moe = st.one_of(st.sampled_from(["Mixtral-8x7B", "DeepSeek-V3"]).map(get_model), moe_models())


# ---- roofline bounds ----------------------------------------------------------------------
@SETTINGS
@given(work, work, chips, efficiency, efficiency)
def test_lower_bound_is_at_most_the_upper_and_at_least_each_part(
    flops: float, moved: float, chip: str, flops_eff: float, bw_eff: float
) -> None:
    t = roofline.roofline_time(
        flops, moved, chip, flops_efficiency=flops_eff, bandwidth_efficiency=bw_eff
    )
    assert t.lower_s <= t.upper_s
    assert t.lower_s >= t.compute_s
    assert t.lower_s >= t.memory_s
    assert t.upper_s == pytest.approx(t.compute_s + t.memory_s)
    assert t.upper_s <= 2 * t.lower_s * (1 + 1e-12)  # overlap saves at most half


@SETTINGS
@given(work, positive_work, st.floats(min_value=1e-6, max_value=1e6), chips)
def test_memory_time_is_linear_in_bytes(
    flops: float, moved: float, factor: float, chip: str
) -> None:
    one = roofline.roofline_time(flops, moved, chip)
    scaled = roofline.roofline_time(flops, factor * moved, chip)
    assert scaled.memory_s == pytest.approx(factor * one.memory_s, rel=1e-12)
    assert scaled.compute_s == one.compute_s


@SETTINGS
@given(positive_work, positive_work, chips)
def test_memory_time_adds_up(first: float, second: float, chip: str) -> None:
    both = roofline.roofline_time(0.0, first + second, chip).memory_s
    apart = roofline.roofline_time(0.0, first, chip).memory_s
    apart = apart + roofline.roofline_time(0.0, second, chip).memory_s
    assert both == pytest.approx(apart, rel=1e-12)


@SETTINGS
@given(positive_work, st.floats(min_value=1e-3, max_value=1.0), chips)
def test_lower_efficiency_never_makes_anything_faster(moved: float, eff: float, chip: str) -> None:
    full = roofline.roofline_time(moved, moved, chip)
    slow = roofline.roofline_time(
        moved, moved, chip, flops_efficiency=eff, bandwidth_efficiency=eff
    )
    assert slow.lower_s >= full.lower_s
    assert slow.upper_s == pytest.approx(full.upper_s / eff, rel=1e-12)


# ---- matmul bytes -------------------------------------------------------------------------
@SETTINGS
@given(size, size, size)
def test_int8_weights_halve_the_weight_part_of_matmul_bytes(B: int, D: int, F: int) -> None:
    bf16 = roofline.matmul_bytes(B, D, F, "bf16")
    int8 = roofline.matmul_bytes(B, D, F, "int8")
    activations = 2 * (B * D + B * F)  # bf16 activations in and out, the same in both
    assert int8 - activations == pytest.approx((bf16 - activations) / 2, rel=1e-12)


@SETTINGS
@given(size, size, size, weight_dtypes, weight_dtypes)
def test_matmul_bytes_are_affine_in_bytes_per_weight(
    B: int, D: int, F: int, first: str, second: str
) -> None:
    difference = roofline.matmul_bytes(B, D, F, first) - roofline.matmul_bytes(B, D, F, second)
    expected = (bytes_per_element(first) - bytes_per_element(second)) * D * F
    assert difference == pytest.approx(expected, rel=1e-9, abs=1e-6 * D * F)


@SETTINGS
@given(size, size, size)
def test_matmul_intensity_never_exceeds_the_batch_in_bf16(B: int, D: int, F: int) -> None:
    # 2BDF / (2BD + 2DF + 2BF) < min(B, D, F): intensity is capped by the smallest side.
    intensity = roofline.matmul_flops(B, D, F) / roofline.matmul_bytes(B, D, F)
    assert intensity < min(B, D, F)


# ---- decode -------------------------------------------------------------------------------
@SETTINGS
@given(preset_models, batch, batch, chips, st.sampled_from(["bf16", "int8", "int4"]))
def test_decode_time_is_non_decreasing_in_batch(
    model: str, b1: float, b2: float, chip: str, weights: str
) -> None:
    small, large = sorted((b1, b2))
    a = roofline.decode_weight_time(model, small, chip, "bf16", weights)
    b = roofline.decode_weight_time(model, large, chip, "bf16", weights)
    for part in ("compute_s", "memory_s", "lower_s", "upper_s"):
        assert getattr(a, part) <= getattr(b, part) * (1 + 1e-12)


@SETTINGS
@given(st.sampled_from(["Llama-3-8B", "Llama-3-70B", "Llama-2-13B"]), batch, chips)
def test_dense_decode_is_compute_bound_exactly_above_the_critical_batch(
    model: str, B: float, chip: str
) -> None:
    critical = roofline.critical_batch(chip)
    if abs(B / critical - 1) < 1e-9:
        return  # too close to the ridge for floating point to decide
    t = roofline.decode_weight_time(model, B, chip)
    assert bool(t.compute_bound) == (critical < B)


@SETTINGS
@given(any_moe, batch, batch)
def test_moe_weights_read_lie_between_active_and_total_and_grow(
    model: ModelConfig, b1: float, b2: float
) -> None:
    small, large = sorted((b1, b2))
    read_small = float(roofline.weight_params_read(model, small))
    read_large = float(roofline.weight_params_read(model, large))
    input_embedding = 0 if model.tied_embeddings else model.vocab_size * model.d_model
    every_matmul_weight = model.total_params - input_embedding
    assert model.matmul_params_per_token <= read_small * (1 + 1e-12)
    assert read_small <= read_large * (1 + 1e-12)
    assert read_large <= every_matmul_weight * (1 + 1e-12)


@SETTINGS
@given(any_moe)
def test_moe_one_token_reads_only_the_active_weights(model: ModelConfig) -> None:
    read = float(roofline.weight_params_read(model, 1))
    assert read == pytest.approx(model.matmul_params_per_token, rel=1e-12)


# ---- vectorised == elementwise ------------------------------------------------------------
batch_arrays = st.lists(batch, min_size=1, max_size=12)


@SETTINGS
@given(preset_models, batch_arrays, chips, efficiency, efficiency)
def test_vectorised_decode_equals_scalar_calls(
    model: str, batches: list[float], chip: str, flops_eff: float, bw_eff: float
) -> None:
    knobs = {"flops_efficiency": flops_eff, "bandwidth_efficiency": bw_eff}
    vector = roofline.decode_weight_time(model, np.array(batches), chip, **knobs)
    assert vector.lower_s.shape == (len(batches),)
    for i, B in enumerate(batches):
        scalar = roofline.decode_weight_time(model, B, chip, **knobs)
        assert vector.compute_s[i] == pytest.approx(float(scalar.compute_s), rel=1e-12)
        assert vector.memory_s[i] == pytest.approx(float(scalar.memory_s), rel=1e-12)


@SETTINGS
@given(st.lists(st.tuples(size, size, size), min_size=1, max_size=12), weight_dtypes)
def test_vectorised_matmul_counts_equal_scalar_calls(
    shapes: list[tuple[int, int, int]], weights: str
) -> None:
    B, D, F = (np.array(column, dtype=float) for column in zip(*shapes, strict=True))
    flops = roofline.matmul_flops(B, D, F)
    moved = roofline.matmul_bytes(B, D, F, weights)
    for i, (b, d, f) in enumerate(shapes):
        assert flops[i] == roofline.matmul_flops(b, d, f)
        assert moved[i] == roofline.matmul_bytes(b, d, f, weights)


@SETTINGS
@given(st.lists(st.floats(min_value=1e-3, max_value=1e5), min_size=1, max_size=12), chips)
def test_vectorised_roofline_curve_equals_scalar_calls(intensities: list[float], chip: str) -> None:
    curve = roofline.attainable_flop_per_s(np.array(intensities), chip)
    for i, intensity in enumerate(intensities):
        assert curve[i] == roofline.attainable_flop_per_s(intensity, chip)


@SETTINGS
@given(preset_models, st.lists(st.integers(0, 1 << 20), min_size=1, max_size=12))
def test_vectorised_forward_flops_equal_scalar_calls(model: str, contexts: list[int]) -> None:
    spec = get_model(model)
    vector = spec.forward_flops_per_token(np.array(contexts))
    for i, T in enumerate(contexts):
        assert vector[i] == spec.forward_flops_per_token(T)

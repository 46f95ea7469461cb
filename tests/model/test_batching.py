"""llmmath.batching (decode steps, cost per token, floors, prefill, requests, slow mode), its
figures and its explorer.

Expected values are written out from the formulas in reference.md and the datasheet numbers:
H100 9.89e14 FLOP/s bf16 dense, 3.35e12 B/s, 80e9 B; Llama-3-70B 70,553,706,496 parameters
(69,503,033,344 in matmuls: all but the input embedding, a lookup), 327,680 KV bytes per token.
"""

from __future__ import annotations

import io
import math
from typing import Any

import ipywidgets as w
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure
from PIL import Image

from llmmath import batching
from llmmath.beyond import serving_modes
from llmmath.core import capacity
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import PRESET_NAMES, get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.placement import DoesNotFitError
from llmmath.display import plots, widgets
from llmmath.display.plots import batching as batching_plots
from llmmath.display.widgets import batching as batching_widgets

C_H100, W_H100, HBM_H100 = 9.89e14, 3.35e12, 80e9
LLAMA70_PARAMS = 70_553_706_496
LLAMA70_MATMUL = 70_553_706_496 - 128_256 * 8192
LLAMA70_KV = 327_680


@pytest.fixture(scope="module")
def llama() -> Deployment:
    return Deployment("Llama-3-70B", "H100", 8)


def test_the_module_docstring_examples_hold() -> None:
    import doctest

    result = doctest.testmod(batching)
    assert result.attempted >= 3 and result.failed == 0


# ---- one decode step, part by part ----------------------------------------------------------
def test_decode_step_parts_follow_the_formulas(llama: Deployment) -> None:
    B, T, n = 64, 2048, 8
    step = batching.decode_step(llama, B, T)
    assert float(step.weight_read_s) == pytest.approx(LLAMA70_MATMUL * 2 / (n * W_H100), rel=1e-12)
    assert float(step.kv_read_s) == pytest.approx(B * T * LLAMA70_KV / (n * W_H100), rel=1e-12)
    assert float(step.matmul_compute_s) == pytest.approx(
        2 * B * LLAMA70_MATMUL / (n * C_H100), rel=1e-12
    )
    # QK^T and AV: 2 L T N (H + H) FLOPs per token, 80 layers, 64 query heads of 128.
    attention = B * 2 * 80 * T * 64 * 256
    assert float(step.attention_compute_s) == pytest.approx(attention / (n * C_H100), rel=1e-12)
    assert float(step.time_s) == pytest.approx(
        max(float(step.matmul_compute_s), float(step.weight_read_s))
        + max(float(step.attention_compute_s), float(step.kv_read_s)),
        rel=1e-12,
    )
    assert float(step.flops) == pytest.approx(2 * B * LLAMA70_MATMUL + attention, rel=1e-12)
    assert float(step.bytes_read) == pytest.approx(2 * LLAMA70_MATMUL + B * T * LLAMA70_KV)
    assert float(step.hbm_needed_bytes) == pytest.approx(2 * LLAMA70_PARAMS + B * T * LLAMA70_KV)


def test_throughput_per_chip_and_per_user(llama: Deployment) -> None:
    step = batching.decode_step(llama, 64, 1024)
    t = float(step.time_s)
    assert float(step.tokens_per_s) == pytest.approx(64 / t)
    assert float(step.tokens_per_s_per_chip) == pytest.approx(64 / t / 8)
    assert float(step.tokens_per_s_per_user) == pytest.approx(1 / t)


def test_attention_is_bandwidth_bound_for_gqa(llama: Deployment) -> None:
    # Attention does 4 N H FLOPs per 4 K H bytes of bf16 KV: intensity N / K = 8 << 295.
    step = batching.decode_step(llama, 256, 8192 // 2)
    assert np.all(step.kv_read_s > step.attention_compute_s)


def test_overlap_floor_is_at_most_the_step_and_at_least_half_of_it(llama: Deployment) -> None:
    step = batching.decode_step(llama, np.array([1, 64, 512]), 1024)
    assert np.all(step.floor_s <= step.time_s)
    assert np.all(step.time_s <= 2 * step.floor_s)


def test_efficiency_knobs_stretch_each_part() -> None:
    full = batching.decode_step(Deployment("Llama-3-8B", "H100"), 32, 1024)
    slow = batching.decode_step(
        Deployment("Llama-3-8B", "H100", flops_efficiency=0.5, bandwidth_efficiency=0.8), 32, 1024
    )
    assert float(slow.matmul_compute_s) == pytest.approx(2 * float(full.matmul_compute_s))
    assert float(slow.weight_read_s) == pytest.approx(float(full.weight_read_s) / 0.8)
    assert float(slow.kv_read_s) == pytest.approx(float(full.kv_read_s) / 0.8)


def test_int8_weights_and_kv_halve_the_reads_not_the_flops() -> None:
    bf16 = batching.decode_step(Deployment("Llama-3-8B", "H100"), 16, 2048)
    int8 = batching.decode_step(
        Deployment("Llama-3-8B", "H100", weight_dtype="int8", kv_dtype="int8"), 16, 2048
    )
    assert float(int8.weight_read_s) == pytest.approx(float(bf16.weight_read_s) / 2)
    assert float(int8.kv_read_s) == pytest.approx(float(bf16.kv_read_s) / 2)
    assert float(int8.compute_s) == pytest.approx(float(bf16.compute_s))


def test_moe_step_reads_the_experts_the_batch_touches() -> None:
    mixtral = Deployment("Mixtral-8x7B", "H100", 2)
    one, many = batching.decode_step(mixtral, 1, 0), batching.decode_step(mixtral, 4096, 0)
    model = get_model("Mixtral-8x7B")
    assert float(one.weight_read_s) == pytest.approx(
        model.matmul_params_per_token * 2 / (2 * W_H100), rel=1e-12
    )
    all_matmul = model.total_params - model.vocab_size * model.d_model
    assert float(many.weight_read_s) == pytest.approx(all_matmul * 2 / (2 * W_H100), rel=1e-9)


def test_decode_step_is_vectorized_over_batch_and_context(llama: Deployment) -> None:
    B = np.arange(1, 1001, dtype=float)[:, None]
    T = np.linspace(0, 8192, 100)[None, :]
    grid = batching.decode_step(llama, B, T, allow_overflow=True)
    assert grid.time_s.shape == (1000, 100)
    for i, j in ((0, 0), (63, 25), (999, 99)):
        one = batching.decode_step(llama, float(B[i, 0]), float(T[0, j]), allow_overflow=True)
        assert grid.time_s[i, j] == pytest.approx(float(one.time_s), rel=1e-12)
    assert grid.fits[0, 99] and not grid.fits[999, 99]


def test_scalars_give_zero_dimensional_arrays(llama: Deployment) -> None:
    step = batching.decode_step(llama, 8, 128)
    assert np.ndim(step.time_s) == 0 and isinstance(float(step.time_s), float)


# ---- cost per token and prices --------------------------------------------------------------
def test_cost_per_million_tokens_formula() -> None:
    # 8 chips at $2/h for a 10 ms step shared by 100 tokens: 8 * 2 * 0.01 / 3600 / 100 * 1e6.
    assert batching.cost_per_million_tokens_usd(0.01, 100, 8, 2.0) == pytest.approx(
        8 * 2 * 0.01 / 3600 / 100 * 1e6, rel=1e-12
    )
    costs = batching.cost_per_million_tokens_usd(0.01, np.array([1.0, 2.0]), 1, 3.6)
    np.testing.assert_allclose(costs, [10.0, 5.0])


def test_step_cost_uses_the_example_price_or_the_one_given(llama: Deployment) -> None:
    step = batching.decode_step(llama, 1, 0)
    expected = 8 * 2.00 * float(step.time_s) / 3600 * 1e6
    assert float(step.cost_per_million_tokens_usd()) == pytest.approx(expected, rel=1e-12)
    assert float(step.cost_per_million_tokens_usd(10.8)) == pytest.approx(expected * 5.4)


def test_example_prices_carry_a_source_and_date() -> None:
    assert set(batching.list_example_prices()) == {"H100", "TPU-v5e", "B200"}
    for chip in batching.list_example_prices():
        price = batching.example_price(chip)
        assert price.usd_per_chip_hour > 0 and price.source and price.source_date
    # DeepSeek's assumed $2 per H800-hour; Google Cloud's $1.20 per v5e chip-hour (2025-02).
    assert batching.example_price("H100").usd_per_chip_hour == 2.00
    assert batching.example_price("TPU-v5e").usd_per_chip_hour == 1.20


def test_a_chip_without_an_example_price_asks_for_one() -> None:
    step = batching.decode_step(Deployment("Llama-3-8B", "H200"), 1, 0)
    with pytest.raises(ValueError, match=r"no example price for chip 'H200'.*usd_per_chip_hour"):
        step.cost_per_million_tokens_usd()
    assert float(step.cost_per_million_tokens_usd(5.0)) > 0


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((0.01, 0, 8, 2.0), "batch"),
        ((0.01, 1, 8, 0.0), "usd_per_chip_hour"),
        ((-1, 1, 8, 2), "step_time_s"),
    ],
)
def test_cost_rejects_bad_numbers(args: tuple[float, ...], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        batching.cost_per_million_tokens_usd(*args)  # type: ignore[arg-type]


def test_batching_amortizes_the_weight_read(llama: Deployment) -> None:
    # Llama-3-70B on 8 H100 at context 2048: a lone sequence pays for a whole weight read;
    # at the critical batch the token costs two orders of magnitude less.
    costs = batching.decode_step(llama, np.array([1, 296]), 2048).cost_per_million_tokens_usd()
    assert costs[0] / costs[1] > 100


# ---- thresholds and floors: published numbers -----------------------------------------------
def test_step_critical_batch_is_the_chips_critical_intensity(llama: Deployment) -> None:
    # Scaling book, roofline / inference: decode is compute-bound past B = C / W ~ 295 on H100
    # with bf16 weights (0.5%), on any number of chips and at any context.
    assert capacity.step_critical_batch(llama) == pytest.approx(295, rel=5e-3)
    step = batching.decode_step(llama, capacity.step_critical_batch(llama), 0)
    assert float(step.matmul_compute_s) == pytest.approx(float(step.weight_read_s), rel=1e-9)
    assert capacity.step_critical_batch(Deployment("Llama-3-70B", "H100", 2)) == pytest.approx(
        capacity.step_critical_batch(llama), rel=1e-12
    )


def test_step_critical_batch_scales_with_the_knobs_and_weight_bytes() -> None:
    base = capacity.step_critical_batch(Deployment("Llama-3-8B", "H100"))
    knobs = Deployment("Llama-3-8B", "H100", flops_efficiency=0.5, bandwidth_efficiency=0.8)
    assert capacity.step_critical_batch(knobs) == pytest.approx(base * 0.5 / 0.8, rel=1e-12)
    int8 = Deployment("Llama-3-8B", "H100", weight_dtype="int8")
    assert capacity.step_critical_batch(int8) == pytest.approx(base / 2, rel=1e-12)


@pytest.mark.parametrize(("model", "n"), [("Mixtral-8x7B", 2), ("DeepSeek-V3", 32)])
def test_moe_critical_batch_is_near_the_dense_one_times_the_sparsity(model: str, n: int) -> None:
    # reference.md: an MoE needs ~C/W x sparsity tokens per step; with sparsity defined as
    # P_total / P_active of the matmul weights (all experts are touched at that batch: 0.1%).
    dep = Deployment(model, "H100", n, weight_dtype="fp8", compute_dtype="fp8", kv_dtype="fp8")
    spec = get_model(model)
    sparsity = (spec.total_params - spec.vocab_size * spec.d_model) / spec.matmul_params_per_token
    dense = 1.979e15 * 1 / (2 * W_H100)
    critical = capacity.step_critical_batch(dep)
    assert critical == pytest.approx(dense * sparsity, rel=1e-3)
    step = batching.decode_step(dep, critical, 0, allow_overflow=True)
    assert float(step.matmul_compute_s) == pytest.approx(float(step.weight_read_s), rel=1e-6)


def test_weight_floor_of_llama_3_70b_on_8_h100(llama: Deployment) -> None:
    # reference.md: weights / bandwidth. 69.5e9 matmul weights x 2 B / (8 x 3.35e12 B/s) =
    # 5.19 ms; the common shortcut with all 70.55e9 parameters gives 5.27 ms (2% covers both).
    assert capacity.weight_floor_s(llama) == pytest.approx(5.19e-3, rel=1e-3)
    assert capacity.weight_floor_s(llama) == pytest.approx(70.55e9 * 2 / (8 * W_H100), rel=0.02)


def test_hbm_floors() -> None:
    # reference.md: 80e9 / 3.35e12 ~ 23.9 ms for an H100 (0.2%); scaling book,
    # applied-inference: 16e9 / 8.2e11 ~ 19 ms for a TPU v5e (printed to 2 figures: 3%).
    assert capacity.hbm_floor_s("H100") == pytest.approx(23.9e-3, rel=2e-3)
    assert capacity.hbm_floor_s("TPU-v5e") == pytest.approx(19e-3, rel=0.03)
    assert capacity.hbm_floor_s("H100", 0.5) == pytest.approx(2 * 23.9e-3, rel=2e-3)


def test_a_full_hbm_steps_at_the_hbm_floor(llama: Deployment) -> None:
    # Scaling book, applied-inference: with the largest batch that fits, a step reads (nearly)
    # the whole HBM, so its time is about HBM / W, whatever the number of chips.
    room = float(capacity.max_batch(llama, 8192))
    step = batching.decode_step(llama, room, 8192)
    assert not bool(step.compute_bound)
    assert float(step.time_s) <= capacity.hbm_floor_s("H100")
    assert float(step.time_s) == pytest.approx(capacity.hbm_floor_s("H100"), rel=0.01)


def test_max_batch_on_8_h100_and_16_tpu_v5e() -> None:
    # (8 x 80e9 - 141.1e9) / (8192 x 327,680) = 185.9: 185 sequences of 8k on 8 H100.
    assert capacity.max_batch(Deployment("Llama-3-70B", "H100", 8), 8192) == 185
    # Scaling book, applied-inference: bf16 Llama-3-70B on a 4x4 TPU v5e holds 43 KV caches of
    # 8k (it rounds the weights to 140 GB); the exact count of weights leaves room for 42.
    v5e = Deployment("Llama-3-70B", "TPU-v5e", 16)
    assert abs(float(capacity.max_batch(v5e, 8192)) - 43) <= 1
    np.testing.assert_array_equal(capacity.max_batch(v5e, np.array([0.0, 8192.0])), [np.inf, 42.0])


def test_llama_2_13b_kv_cache_of_one_long_sequence_and_its_context_limit() -> None:
    # Scaling book, inference: 8,192 tokens of Llama-2-13B KV cache in bf16 ~ 6.7e9 B (1%);
    # but the model was trained for 4,096 tokens, so a decode step at 8,192 is refused.
    dep = Deployment("Llama-2-13B", "H100")
    assert dep.model.kv_bytes_per_token(dep.kv_dtype) * 8192 == pytest.approx(6.7e9, rel=0.01)
    with pytest.raises(ValueError, match="context must be <= Llama-2-13B's max_context=4096"):
        batching.decode_step(dep, 1, 8192)


# ---- what does not fit ----------------------------------------------------------------------
def test_weights_that_do_not_fit_say_how_many_bytes_are_missing() -> None:
    with pytest.raises(DoesNotFitError, match=r"6\.111e\+10 B missing; use n_chips >= 2") as info:
        Deployment("Llama-3-70B", "H100", 1)
    assert info.value.missing_bytes == pytest.approx(2 * LLAMA70_PARAMS - HBM_H100, rel=1e-12)
    # 141.1 GB of bf16 weights against 141 GB of H200 HBM: short by 107 MB.
    with pytest.raises(DoesNotFitError, match=r"1 x H200 hold 1\.41e\+11 B: 1\.074e\+08 B missing"):
        Deployment("Llama-3-70B", "H200", 1)


def test_an_undercounted_model_would_fit_where_the_real_one_does_not() -> None:
    # reference.md: a tool that counts a SwiGLU MLP as two matrices (2 D F instead of 3 D F)
    # undercounts Llama-style models by ~25%, and so "fits" Llama-3-70B on one H200.
    spec = get_model("Llama-3-70B")
    two_matrix = spec.total_params - spec.n_layers * spec.d_model * spec.d_ff
    assert 1 - two_matrix / spec.total_params == pytest.approx(0.27, abs=0.01)
    assert two_matrix * 2 < 141e9  # what that tool would conclude
    with pytest.raises(DoesNotFitError):
        Deployment(spec, "H200", 1)


def test_kv_caches_that_do_not_fit_are_refused_with_the_missing_bytes(llama: Deployment) -> None:
    with pytest.raises(DoesNotFitError, match="at most 185 sequences fit") as info:
        batching.decode_step(llama, np.array([64, 512]), 8192)
    assert info.value.missing_bytes == pytest.approx(
        512 * 8192 * LLAMA70_KV - (8 * HBM_H100 - 2 * LLAMA70_PARAMS), rel=1e-12
    )
    allowed = batching.decode_step(llama, np.array([64, 512]), 8192, allow_overflow=True)
    np.testing.assert_array_equal(allowed.fits, [True, False])


# ---- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_batch_must_be_positive(llama: Deployment, bad: float) -> None:
    with pytest.raises(ValueError, match="batch must be finite and > 0"):
        batching.decode_step(llama, bad, 1024)


def test_batch_of_the_wrong_type(llama: Deployment) -> None:
    with pytest.raises(TypeError, match="batch must be a number"):
        batching.decode_step(llama, "64", 1024)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, float("nan")])
def test_context_must_be_non_negative(llama: Deployment, bad: float) -> None:
    with pytest.raises(ValueError, match="context must be finite and >= 0"):
        batching.decode_step(llama, 1, bad)


def test_context_longer_than_the_model_allows(llama: Deployment) -> None:
    with pytest.raises(
        ValueError, match="context must be <= Llama-3-70B's max_context=8192; got 8193"
    ):
        batching.decode_step(llama, 1, np.array([1024, 8193]))
    with pytest.raises(ValueError, match="context must be <= Llama-3-70B's max_context"):
        capacity.max_batch(llama, 9000)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_chips": 0}, ValueError, "n_chips must be >= 1"),
        ({"n_chips": 2.5}, TypeError, "n_chips must be an integer"),
        ({"flops_efficiency": 0.0}, ValueError, r"flops_efficiency must be in \(0, 1\]"),
        ({"bandwidth_efficiency": 1.5}, ValueError, r"bandwidth_efficiency must be in \(0, 1\]"),
        ({"bandwidth_efficiency": [0.5, 1.0]}, TypeError, "bandwidth_efficiency must be a single"),
        ({"weight_dtype": "int3"}, ValueError, "unknown dtype 'int3'"),
        ({"chip": "A100", "compute_dtype": "fp8"}, ValueError, "unknown dtype for A100 'fp8'"),
        ({"chip": "V100"}, ValueError, "unknown chip 'V100'"),
        ({"model": "GPT-5"}, ValueError, "unknown model 'GPT-5'"),
    ],
)
def test_deployment_rejects_bad_settings(kwargs: dict[str, Any], error: type, match: str) -> None:
    settings_ = {"model": "Llama-3-8B", "chip": "H100", **kwargs}
    with pytest.raises(error, match=match):
        Deployment(**settings_)


def test_deployment_accepts_objects_and_names() -> None:
    tiny = ModelConfig("tiny", 2, 64, 256, 4, 4, 16, 100, 128)
    dep = Deployment(tiny, get_chip("H100"))
    assert dep.model is tiny and dep.label == "tiny on 1×H100"
    assert Deployment("Llama-3-8B", "H100").model is get_model("Llama-3-8B")


# ---- prefill, TTFT and whole requests -------------------------------------------------------
def test_prefill_flops_sum_every_prompt_token() -> None:
    # Token i attends to its i predecessors: sum the per-token FLOPs one by one.
    tiny = ModelConfig("tiny", 2, 64, 256, 4, 2, 16, 100, 128)
    dep = Deployment(tiny, "H100")
    P = 17
    one_by_one = sum(float(tiny.forward_flops_per_token(i)) for i in range(P))
    assert float(batching.prefill(dep, P).flops) == pytest.approx(one_by_one, rel=1e-12)
    assert float(batching.prefill(dep, P, batch=3).flops) == pytest.approx(3 * one_by_one)


def test_prefill_is_compute_bound_past_the_critical_batch(llama: Deployment) -> None:
    short, long = batching.prefill(llama, 100), batching.prefill(llama, 2000)
    assert not bool(short.compute_bound) and bool(long.compute_bound)
    # 2,000 tokens: 2 x 69.5e9 x 2,000 FLOPs plus attention, over 8 x 9.89e14.
    assert float(long.time_s) == pytest.approx(float(long.flops) / (8 * C_H100), rel=1e-12)
    assert batching.ttft_s(llama, 2000) == pytest.approx(35.8e-3, rel=0.01)
    assert batching.mfu(long.flops, long.time_s, llama) == pytest.approx(1.0)


def test_a_one_token_prefill_reads_the_weights_like_a_decode_step(llama: Deployment) -> None:
    pre = batching.prefill(llama, 1)
    assert float(pre.time_s) == pytest.approx(capacity.weight_floor_s(llama), rel=1e-3)


@pytest.mark.parametrize(
    ("prompt", "match"),
    [(0, r"prompt_tokens must be finite and >= 1"), (9000, "prompt_tokens must be <=")],
)
def test_prefill_rejects_bad_prompts(llama: Deployment, prompt: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        batching.prefill(llama, prompt)


def test_request_latency_sums_its_steps_as_the_context_grows(llama: Deployment) -> None:
    prompt, output, batch = 500, 40, 16
    r = batching.request_latency(llama, prompt, output, batch)
    steps = [
        float(batching.decode_step(llama, batch, prompt + i).time_s) for i in range(output - 1)
    ]
    assert float(r.decode_s) == pytest.approx(sum(steps), rel=1e-12)
    assert r.ttft_s == pytest.approx(batching.ttft_s(llama, prompt))
    assert float(r.total_s) == pytest.approx(r.ttft_s + sum(steps))
    assert float(r.mean_tpot_s) == pytest.approx(sum(steps) / (output - 1))
    final = float(batching.decode_step(llama, batch, prompt + output).time_s)
    assert float(r.final_context_decode_s) == pytest.approx((output - 1) * final)


def test_summed_steps_equal_the_steps_at_the_mean_context(llama: Deployment) -> None:
    # A step is linear in T, so the sum is (n - 1) steps at the mean context.
    r = batching.request_latency(llama, 1000, 4000, np.array([1.0, 64.0]))
    mean = batching.decode_step(llama, np.array([1.0, 64.0]), 1000 + (4000 - 2) / 2)
    np.testing.assert_allclose(r.decode_s, 3999 * mean.time_s, rtol=1e-9)
    # Costing every step at the final 5,000 tokens overstates this batch-64 decode by ~20%.
    assert float(r.final_context_decode_s[1] / r.decode_s[1]) == pytest.approx(1.2, abs=0.02)


def test_a_one_token_answer_has_no_decode_step(llama: Deployment) -> None:
    r = batching.request_latency(llama, 100, 1)
    assert float(r.decode_s) == 0.0 and float(r.final_context_decode_s) == 0.0
    assert math.isnan(float(r.mean_tpot_s))


@pytest.mark.parametrize(
    ("prompt", "output", "error", "match"),
    [
        (8000, 500, ValueError, "prompt_tokens \\+ output_tokens must be <= Llama-3-70B's"),
        (0, 10, ValueError, "prompt_tokens must be >= 1"),
        (100, 0, ValueError, "output_tokens must be >= 1"),
        (100, 2.5, TypeError, "output_tokens must be an integer"),
    ],
)
def test_request_latency_rejects_bad_lengths(
    llama: Deployment, prompt: int, output: int, error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        batching.request_latency(llama, prompt, output)


def test_request_that_does_not_fit_at_its_final_context(llama: Deployment) -> None:
    with pytest.raises(DoesNotFitError, match="batch 256 and context 8192"):
        batching.request_latency(llama, 4096, 4096, 256)


# ---- utilisation, sizing --------------------------------------------------------------------
def test_mfu_and_mbu_of_decode(llama: Deployment) -> None:
    small = batching.decode_step(llama, 1, 0)
    assert batching.mbu(small.bytes_read, small.time_s, llama) == pytest.approx(1.0)
    assert batching.mfu(small.flops, small.time_s, llama) == pytest.approx(1 / 295.2, rel=1e-3)
    big = batching.decode_step(llama, 1024, 0)
    assert batching.mfu(big.flops, big.time_s, llama) == pytest.approx(1.0)
    # A measured step of twice the floor halves the utilisation.
    assert batching.mbu(small.bytes_read, 2 * small.time_s, llama) == pytest.approx(0.5)


def test_utilisation_rejects_a_zero_time(llama: Deployment) -> None:
    with pytest.raises(ValueError, match="time_s must be finite and > 0"):
        batching.mfu(1e12, 0.0, llama)


def test_chips_for_a_service(llama: Deployment) -> None:
    step = batching.decode_step(llama, 256, 2048)
    per_replica = float(step.tokens_per_s)
    assert batching.chips_for_throughput(per_replica, step) == 8
    assert batching.chips_for_throughput(per_replica * 1.01, step) == 16
    # The lecture's scale, 1e8 tokens/s: batch 1 needs ~200x the chips of batch 256.
    lone = batching.decode_step(llama, 1, 2048)
    ratio = batching.chips_for_throughput(1e8, lone) / batching.chips_for_throughput(1e8, step)
    assert ratio > 100


# ---- slow mode -------------------------------------------------------------------------------
def test_a_lone_sequence_costs_the_same_on_any_number_of_chips() -> None:
    # Fewer chips: each step takes n times longer but rents n times fewer chips.
    costs = [
        float(
            batching.decode_step(
                Deployment("Llama-3-70B", "H100", n), 1, 2048
            ).cost_per_million_tokens_usd()
        )
        for n in (2, 4, 8)
    ]
    assert costs == pytest.approx([costs[0]] * 3, rel=1e-12)


def test_slow_mode_buys_nothing_past_the_floor(llama: Deployment) -> None:
    # At 1,024 tokens (below T_c) the step turns compute-bound at B*(1024) ~ 963, which fits.
    latency = np.array([1e-3, 5.3e-3, 6e-3, 8e-3, 20e-3, 0.05, 10.0])
    sm = serving_modes.slow_mode(llama, 1024, latency)
    assert sm.batch[0] == 0 and np.isinf(sm.cost_per_million_usd[0])  # below the weight floor
    assert sm.batch[1] >= 1
    assert np.all(np.diff(sm.batch) >= 0) and np.all(np.diff(sm.cost_per_million_usd) <= 0)
    assert sm.floor_batch == math.ceil(capacity.step_critical_batch(llama, 1024)) == 963
    assert sm.floor_limit == "compute"
    assert sm.cost_per_million_usd[-1] == pytest.approx(sm.floor_cost_per_million_usd)
    assert sm.cost_per_million_usd[-2] == pytest.approx(sm.floor_cost_per_million_usd)
    assert sm.saturation_latency_s == pytest.approx(
        float(batching.decode_step(llama, 963, 1024).time_s)
    )
    assert sm.batch1_cost_per_million_usd / sm.floor_cost_per_million_usd > 100
    assert sm.weight_floor_s == pytest.approx(capacity.weight_floor_s(llama))
    # Past the floor batch a token costs no less: its FLOPs now set the step.
    past = batching.decode_step(llama, np.array([963.0, 1400.0]), 1024)
    assert bool(np.all(past.compute_bound))
    cost = past.cost_per_million_tokens_usd()
    assert float(cost[1]) == pytest.approx(float(cost[0]), rel=1e-3)


def test_slow_mode_past_the_critical_context_is_stopped_by_the_hbm(llama: Deployment) -> None:
    # At 2,048 tokens (above T_c ~ 1,477) no batch is compute-bound: the cost keeps falling
    # past C / W ~ 296 until the HBM is full at 743.
    sm = serving_modes.slow_mode(llama, 2048, np.array([1.0]))
    assert sm.floor_batch == sm.batch[0] == capacity.max_batch(llama, 2048) == 743
    assert sm.floor_limit == "memory capacity"
    at_296 = float(batching.decode_step(llama, 296, 2048).cost_per_million_tokens_usd())
    assert sm.floor_cost_per_million_usd < 0.8 * at_296


def test_slow_mode_at_long_context_is_limited_by_memory(llama: Deployment) -> None:
    sm = serving_modes.slow_mode(llama, 8192, np.array([1.0]))
    assert sm.floor_batch == 185 and sm.batch[0] == 185
    assert sm.floor_limit == "memory capacity"


def test_slow_mode_batch_is_the_largest_that_meets_the_latency(llama: Deployment) -> None:
    sm = serving_modes.slow_mode(llama, 1024, np.array([6e-3, 7e-3, 30e-3]))
    for B, budget in zip(sm.batch[:2], sm.latency_s[:2], strict=True):
        assert float(batching.decode_step(llama, B, 1024).time_s) <= budget
        assert float(batching.decode_step(llama, B + 1, 1024).time_s) > budget
    # 30 ms would allow more than B*(1024), which would cost no less per token.
    assert sm.batch[2] == sm.floor_batch == 963


def test_slow_mode_rejects_a_context_that_leaves_no_room() -> None:
    tight = Deployment("Llama-3-70B", "H100", 2)  # 18.9 GB left for KV: 7 sequences of 8k
    assert serving_modes.slow_mode(tight, 8192, 1.0).floor_batch == 7
    with pytest.raises(ValueError, match="latency_s must be finite and > 0"):
        serving_modes.slow_mode(tight, 1024, 0.0)


def test_cheapest_batch_is_where_the_cost_stops_falling(llama: Deployment) -> None:
    for context in (256.0, 1024.0, 2048.0, 8192.0):
        B = capacity.cheapest_batch(llama, context)
        costs = np.asarray(_every_batch(llama, context).cost_per_million_tokens_usd())
        # No batch that fits is cheaper (past B*(T) the cost is flat, within rounding).
        assert float(np.min(costs)) >= float(costs[int(B) - 1]) * (1 - 1e-9), context
        assert serving_modes.slow_mode(llama, context, 1.0).floor_batch == B
    assert capacity.cheapest_batch(llama, 1024) == math.ceil(
        capacity.step_critical_batch(llama, 1024)
    )
    assert capacity.cheapest_batch(llama, 2048) == capacity.max_batch(llama, 2048)


def _every_batch(dep: Deployment, context: float) -> Any:
    room = float(capacity.max_batch(dep, context))
    return batching.decode_step(dep, np.arange(1.0, room + 1.0), context)


def test_tie_price_makes_the_two_tokens_cost_the_same(llama: Deployment) -> None:
    v5e = Deployment("Llama-3-70B", "TPU-v5e", 16)
    for batch, other_batch in ((1.0, 1.0), (743.0, float(capacity.max_batch(v5e, 2048)))):
        h100 = batching.decode_step(llama, batch, 2048)
        tpu = batching.decode_step(v5e, other_batch, 2048)
        tie = float(batching.tie_price_usd(h100, tpu, 1.20))
        assert float(h100.cost_per_million_tokens_usd(tie)) == pytest.approx(
            float(tpu.cost_per_million_tokens_usd(1.20)), rel=1e-12
        )
        # By hand: the other price times the ratio of chip-seconds per token.
        by_hand = 1.20 * (16 * float(tpu.time_s) / other_batch) / (8 * float(h100.time_s) / batch)
        assert tie == pytest.approx(by_hand, rel=1e-12)
    prices = batching.tie_price_usd(h100, tpu, np.array([1.0, 2.0]))
    assert float(prices[1]) == pytest.approx(2 * float(prices[0]), rel=1e-12)
    with pytest.raises(ValueError, match="other_usd_per_chip_hour"):
        batching.tie_price_usd(h100, tpu, -1.0)


def test_a_cloud_list_price_sits_beside_the_example_prices() -> None:
    listed = serving_modes.list_price("H100")
    assert listed.kind == batching.example_price("TPU-v5e").kind  # like with like
    assert listed.kind != batching.example_price("H100").kind
    assert listed.usd_per_chip_hour > batching.example_price("H100").usd_per_chip_hour
    assert listed.source and len(listed.source_date) >= 4
    with pytest.raises(ValueError, match="chip='B200'"):
        serving_modes.list_price("B200")


# ---- concurrency: Little's law and the traffic that fills a batch -------------------------
def test_concurrency_is_arrivals_times_time_in_the_system() -> None:
    assert float(serving_modes.concurrency(92.0, 8.0)) == pytest.approx(736.0, rel=1e-12)
    streams = serving_modes.concurrency(np.array([1.0, 10.0]), 0.5)
    assert np.asarray(streams) == pytest.approx([0.5, 5.0], rel=1e-12)
    with pytest.raises(ValueError, match="arrival_per_s"):
        serving_modes.concurrency(-1.0, 1.0)
    with pytest.raises(ValueError, match="time_in_system_s"):
        serving_modes.concurrency(1.0, float("nan"))


def test_the_traffic_that_fills_a_batch_obeys_littles_law(llama: Deployment) -> None:
    fill = serving_modes.demand_to_fill(llama, 2048, 338)
    assert fill.batch == capacity.cheapest_batch(llama, 2048) == fill.floor_batch
    step = batching.decode_step(llama, fill.batch, 2048)
    assert float(fill.request_s) == pytest.approx(338 * float(step.time_s), rel=1e-12)
    # L = lambda W: the batch is the arrivals times the time each request holds its slot.
    assert float(fill.requests_per_s * fill.request_s) == pytest.approx(743.0, rel=1e-12)
    assert float(fill.tokens_per_s) == pytest.approx(float(fill.requests_per_s) * 338, rel=1e-12)
    assert float(fill.cost_over_floor) == pytest.approx(1.0, rel=1e-12)
    some = serving_modes.demand_to_fill(llama, 2048, 338, np.array([10.0, 591.0]))
    assert np.all(some.requests_per_s < fill.requests_per_s)
    assert np.all(some.cost_over_floor > 1.0)


def test_the_batch_a_demand_keeps_solves_littles_law(llama: Deployment) -> None:
    fill = serving_modes.demand_to_fill(llama, 2048, 338)
    rates = np.array([0.1, 1.0, 10.0, float(fill.requests_per_s)])
    kept = serving_modes.batch_from_demand(llama, 2048, 338, rates)
    steps = batching.decode_step(llama, kept.batch, 2048)
    assert np.asarray(kept.batch) == pytest.approx(rates * 338 * steps.time_s, rel=1e-9)
    assert float(kept.batch[-1]) == pytest.approx(743.0, rel=1e-9)
    # The replica's rent is fixed and it sells what is asked, so a token costs the rent over
    # the tokens asked for: n p / (lambda o), and the multiple of the floor is fill / demand.
    rent_per_s = 8 * batching.example_price("H100").usd_per_chip_hour / 3600
    assert np.asarray(kept.cost_per_million_usd) == pytest.approx(
        rent_per_s / (rates * 338) * 1e6, rel=1e-9
    )
    assert np.asarray(kept.cost_over_floor) == pytest.approx(
        float(fill.requests_per_s) / rates, rel=1e-9
    )
    # A batch kept by a demand round-trips through the traffic that fills it.
    back = serving_modes.demand_to_fill(llama, 2048, 338, kept.batch[:3])
    assert np.asarray(back.requests_per_s) == pytest.approx(rates[:3], rel=1e-9)
    with pytest.raises(ValueError, match=r"requests_per_s.*add replicas"):
        serving_modes.batch_from_demand(llama, 2048, 338, 2 * float(fill.requests_per_s))
    with pytest.raises(ValueError, match="output_tokens"):
        serving_modes.batch_from_demand(llama, 2048, 0, 1.0)


# ---- the critical batch with the KV read: B*(T) and T_c ------------------------------------
def test_critical_batch_at_context_zero_is_the_chips(llama: Deployment) -> None:
    c_over_w = get_chip("H100").critical_intensity("bf16")
    assert capacity.step_critical_batch(llama) == pytest.approx(c_over_w, rel=1e-12)
    assert capacity.step_critical_batch(llama, 0) == capacity.step_critical_batch(llama)


@pytest.mark.parametrize("context", [16.0, 256.0, 1024.0, 1400.0])
def test_critical_batch_is_where_flops_equal_every_read(llama: Deployment, context: float) -> None:
    B = capacity.step_critical_batch(llama, context)
    step = batching.decode_step(llama, B, context, allow_overflow=True)
    # 1e-9: the closed form against the step's own parts (a few roundings apart)
    assert float(step.compute_s) == pytest.approx(float(step.memory_s), rel=1e-9)
    around = batching.decode_step(llama, np.array([0.99, 1.01]) * B, context, allow_overflow=True)
    assert list(around.compute_bound) == [False, True]


def test_critical_batch_grows_with_context_to_infinity_at_the_critical_context(
    llama: Deployment,
) -> None:
    T_c = capacity.critical_context(llama)
    # (2P / C) / (b_kv / W) without attention FLOPs; they push it a little further out.
    flops_s = 2 * llama.model.matmul_params_per_token / 989e12
    rough = flops_s / (llama.model.kv_bytes_per_token(llama.kv_dtype) / 3.35e12)
    assert rough < T_c < 1.05 * rough
    below = [capacity.step_critical_batch(llama, t) for t in (0, 512, 1024, 0.99 * T_c)]
    assert np.all(np.diff(below) > 0) and math.isfinite(below[-1])
    assert math.isinf(capacity.step_critical_batch(llama, 1.01 * T_c))
    one = batching.decode_step(llama, 1, T_c)
    assert float(one.compute_s) == pytest.approx(float(one.kv_read_s), rel=1e-9)


def test_critical_context_for_moe_and_mla() -> None:
    deepseek = Deployment("DeepSeek-V3", "H100", 16, weight_dtype="fp8", compute_dtype="fp8")
    T_c = capacity.critical_context(deepseek)
    assert 1000 < T_c < deepseek.model.max_context
    B = capacity.step_critical_batch(deepseek, 1024)
    step = batching.decode_step(deepseek, B, 1024, allow_overflow=True)
    assert float(step.compute_s) == pytest.approx(float(step.memory_s), rel=1e-6)
    assert math.isinf(capacity.step_critical_batch(deepseek, 1.01 * T_c))


def test_compute_bound_is_the_floors_test_and_weights_amortized_is_not(
    llama: Deployment,
) -> None:
    step = batching.decode_step(llama, 296, 2048)
    assert bool(step.weights_amortized) and not bool(step.compute_bound)
    assert float(step.memory_s) > float(step.compute_s)
    every = batching.decode_step(llama, np.arange(1.0, 744.0), 2048)
    assert not np.any(every.compute_bound)  # memory-bound at every batch that fits


def test_critical_batch_curve(llama: Deployment) -> None:
    curve = batching.critical_batch_curve(llama)
    assert curve.critical_context == capacity.critical_context(llama)
    finite = curve.context < curve.critical_context
    assert np.all(np.isfinite(curve.compute_batch[finite]))
    assert np.all(np.isinf(curve.compute_batch[~finite]))
    assert curve.compute_batch[0] == pytest.approx(curve.critical_batch, rel=1e-12)


# ---- properties ------------------------------------------------------------------------------
SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def deployments(draw: st.DrawFn) -> Deployment:
    """Small dense or MoE models on a preset chip, with random knobs."""
    n_kv = draw(st.integers(1, 8))
    n_layers = draw(st.integers(1, 8))
    n_experts = draw(st.sampled_from([0, 0, 4, 16]))
    model = ModelConfig(
        name="m",
        n_layers=n_layers,
        d_model=draw(st.integers(64, 2048)),
        d_ff=draw(st.integers(64, 8192)),
        n_heads=n_kv * draw(st.integers(1, 8)),
        n_kv_heads=n_kv,
        head_dim=draw(st.integers(16, 128)),
        vocab_size=draw(st.integers(100, 50000)),
        max_context=65536,
        n_experts=n_experts,
        experts_per_token=draw(st.integers(1, n_experts)) if n_experts else 0,
    )
    return Deployment(
        model,
        draw(st.sampled_from(PRESET_NAMES)),
        draw(st.sampled_from([1, 2, 8])),
        flops_efficiency=draw(st.floats(0.05, 1.0)),
        bandwidth_efficiency=draw(st.floats(0.05, 1.0)),
    )


batches = st.floats(1.0, 1e5)
contexts = st.floats(0.0, 65536.0)


@SETTINGS
@given(deployments(), batches, batches, contexts)
def test_cost_per_token_never_rises_with_batch(
    dep: Deployment, b1: float, b2: float, context: float
) -> None:
    small, large = sorted((b1, b2))
    step = batching.decode_step(dep, np.array([small, large]), context, allow_overflow=True)
    cost = step.cost_per_million_tokens_usd(1.0)
    assert cost[1] <= cost[0] * (1 + 1e-12)


@SETTINGS
@given(deployments(), batches, batches, contexts, contexts)
def test_step_time_never_falls_with_batch_or_context(
    dep: Deployment, b1: float, b2: float, t1: float, t2: float
) -> None:
    (bs, bl), (ts, tl) = sorted((b1, b2)), sorted((t1, t2))
    step = batching.decode_step(
        dep, np.array([bs, bl, bs]), np.array([ts, ts, tl]), allow_overflow=True
    )
    assert step.time_s[1] >= step.time_s[0] * (1 - 1e-12)
    assert step.time_s[2] >= step.time_s[0] * (1 - 1e-12)


@SETTINGS
@given(deployments(), batches, contexts)
def test_step_time_is_never_below_any_floor(dep: Deployment, batch: float, context: float) -> None:
    step = batching.decode_step(dep, batch, context, allow_overflow=True)
    t = float(step.time_s) * (1 + 1e-12)
    assert t >= float(step.memory_s) and t >= float(step.compute_s)
    assert t >= float(step.floor_s)
    assert t >= capacity.weight_floor_s(dep)
    assert float(step.time_s) <= float(step.compute_s + step.memory_s) * (1 + 1e-12)
    assert batching.mfu(step.flops, step.time_s, dep) <= dep.flops_efficiency * (1 + 1e-9)
    assert batching.mbu(step.bytes_read, step.time_s, dep) <= dep.bandwidth_efficiency * (1 + 1e-9)


@SETTINGS
@given(deployments(), contexts)
def test_throughput_saturates(dep: Deployment, context: float) -> None:
    # Tokens/s rise with the batch but never pass one token per FLOPs of one sequence (the
    # floor); the serial estimate never passes one per (FLOPs + attention at its roofline).
    assume(not dep.model.is_moe)
    one = batching.decode_step(dep, 1, context)
    ceiling = 1 / float(one.compute_s)
    serial_ceiling = 1 / float(
        one.matmul_compute_s + np.maximum(one.attention_compute_s, one.kv_read_s)
    )
    B = np.array([1.0, 10.0, 1e3, 1e5, 1e7])
    step = batching.decode_step(dep, B, context, allow_overflow=True)
    rate = step.tokens_per_s
    assert np.all(np.diff(rate) >= -1e-9 * rate[1:])
    assert np.all(rate <= ceiling * (1 + 1e-9))
    assert np.all(B / step.serial_s <= serial_ceiling * (1 + 1e-9))
    critical = math.ceil(capacity.step_critical_batch(dep))
    at = batching.decode_step(dep, critical, context, allow_overflow=True)
    assert critical / float(at.serial_s) == pytest.approx(serial_ceiling, rel=1e-9)


@SETTINGS
@given(deployments(), st.integers(1, 4000), st.integers(1, 2000), st.floats(1.0, 512.0))
def test_summing_steps_never_exceeds_costing_them_at_the_final_context(
    dep: Deployment, prompt: int, output: int, batch: float
) -> None:
    r = batching.request_latency(dep, prompt, output, batch, allow_overflow=True)
    assert float(r.decode_s) <= float(r.final_context_decode_s) * (1 + 1e-12)
    assert float(r.total_s) >= r.ttft_s


# ---- figures ---------------------------------------------------------------------------------
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_image(data: bytes | memoryview) -> Image.Image:
    data = bytes(data)
    assert data.startswith(PNG_SIGNATURE)
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def test_cost_curves_are_the_step_costs_where_the_batch_fits(llama: Deployment) -> None:
    curves = batching.cost_curves(llama, 8192)
    assert curves.batch.max() <= 185 and curves.max_batch == 185
    step = batching.decode_step(llama, curves.batch, 8192)
    np.testing.assert_allclose(curves.total, step.cost_per_million_tokens_usd())
    np.testing.assert_allclose(curves.weights * curves.batch, curves.weights[0])  # 1 / B


def test_cost_figure_has_a_panel_per_deployment(llama: Deployment) -> None:
    v5e = Deployment("Llama-3-70B", "TPU-v5e", 16)
    figure = batching_plots.cost_per_token_figure([llama, v5e], 2048)
    assert isinstance(figure, Figure) and len(figure.axes) == 2
    assert "8×H100" in figure.axes[0].get_title() and "16×TPU-v5e" in figure.axes[1].get_title()
    labels = [line.get_label() for line in figure.axes[0].lines]
    assert {"weight read / B", "matmul FLOPs", "step total"} <= set(labels)


def test_critical_context_figure_marks_where_the_fall_stops(llama: Deployment) -> None:
    figure = batching_plots.critical_context_figure(llama, (256, 2048))
    left, right = figure.axes
    # Left: at 256 tokens a dot at B*(256) on the cost curve; at 2,048 a cross at the HBM.
    dot, cross = (line for line in left.lines if line.get_marker() in ("o", "x"))
    assert dot.get_marker() == "o" and cross.get_marker() == "x"
    assert float(dot.get_xdata()[0]) == pytest.approx(capacity.step_critical_batch(llama, 256))
    assert float(cross.get_xdata()[0]) <= float(capacity.max_batch(llama, 2048))
    # Right: B*(T) stays finite below T_c, and T_c is the dashed line.
    T_c = capacity.critical_context(llama)
    b_star = right.lines[0]
    assert max(b_star.get_xdata()) < T_c
    dashed = [line for line in right.lines if line.get_linestyle() == "--"]
    assert [float(line.get_xdata()[0]) for line in dashed] == [pytest.approx(T_c)]


def test_pareto_and_prefill_figures(llama: Deployment) -> None:
    pareto = batching_plots.pareto_figure(llama, (512, 8192))
    (ax,) = pareto.axes
    curve = ax.lines[0]
    step = batching.decode_step(llama, batching.cost_curves(llama, 512).batch, 512)
    np.testing.assert_allclose(curve.get_xdata(), 1e3 * step.time_s)
    np.testing.assert_allclose(curve.get_ydata(), step.tokens_per_s_per_chip)
    prefill = batching_plots.prefill_decode_figure(llama)
    (ax,) = prefill.axes
    assert max(ax.lines[0].get_ydata()) == pytest.approx(1.0)  # prefill reaches peak
    assert max(ax.lines[1].get_ydata()) < 0.6  # decode at context 2048 never does


def test_static_figures_have_a_major_grid_and_no_minor_ticks(llama: Deployment) -> None:
    figures = [
        batching_plots.cost_per_token_figure([llama], 2048),
        batching_plots.pareto_figure(llama, (512,)),
        batching_plots.prefill_decode_figure(llama),
    ]
    for figure in figures:
        ax = figure.axes[0]
        assert all(line.get_visible() for line in ax.get_xgridlines() + ax.get_ygridlines())
        assert not ax.xaxis.get_minorticklocs().size and not ax.yaxis.get_minorticklocs().size


def test_figures_draw_into_a_given_axes(llama: Deployment) -> None:
    figure = Figure()
    ax = figure.add_subplot(1, 2, 2)
    assert batching_plots.pareto_figure(llama, (1024,), ax=ax) is figure


def test_explorer_redraws_markers_and_readout(llama: Deployment) -> None:
    explorer = batching_plots.BatchingExplorer()
    explorer.update(batch=1)
    first = explorer.png()
    assert png_image(first).size == (800, 320)
    assert "memory-bound" in explorer.readout.get_text()
    explorer.update(batch=1024, context=256)
    assert "compute-bound" in explorer.readout.get_text()
    step = batching.decode_step(llama, 1024, 256)
    x, y = explorer.cost_point.get_data()
    assert x[0] == 1024 and y[0] == pytest.approx(float(step.cost_per_million_tokens_usd()))
    assert explorer.png() != first


def test_explorer_says_what_does_not_fit() -> None:
    explorer = batching_plots.BatchingExplorer()
    explorer.update(batch=1024, context=8192)
    assert "does not fit" in explorer.readout.get_text()
    assert len(explorer.cost_point.get_xdata()) == 0
    explorer.update(model="Llama-3.1-405B", chip="H100", n_chips=2)
    assert "GB of weights missing" in explorer.message.get_text()
    png_image(explorer.png())
    explorer.update()  # and recovers
    assert explorer.message.get_text() == "" and len(explorer.cost.total_line.get_xdata()) > 0


def test_the_declared_figure_is_drawn_at_the_batch_asked_for() -> None:
    figure = batching_widgets.declaration().figure(batch=64)
    shown = [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]
    assert any(text.startswith("batch 64: ") for text in shown), shown
    assert plots.batching is batching_plots


# ---- widgets ---------------------------------------------------------------------------------
class LabelledFrames:
    """Stands in for BatchingExplorer: each frame's bytes name the setting drawn."""

    def __init__(self) -> None:
        self.setting = ""

    def update(self, **kw: Any) -> None:
        self.setting = "|".join(
            str(kw[k]) for k in ("model", "chip", "n_chips", "batch", "context", "flops_efficiency")
        )

    def png(self) -> bytes:
        return self.setting.encode()


def test_static_explorer_frames_spell_out_the_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batching_widgets, "BatchingExplorer", LabelledFrames)
    spec = batching_widgets.declaration()
    box = widgets.common.static_explorer(spec)
    c = box.controls
    images = list(box.frames.values())
    assert len(images) == spec.frame_count() == 108 <= 150
    assert [c["batch"].value, c["context"].value] == [1, 2048]
    assert (c["setup"].index, c["batch"].index, c["context"].index, c["efficiency"].index) == (
        0,
        0,
        1,
        0,
    )
    # Nesting: setup > context > efficiency > batch.
    leaf = box.frames[2, 1, 1, 3]
    assert bytes(leaf.value) == b"Llama-3-70B|TPU-v5e|16|64|2048|0.5"


def test_static_explorer_renders_real_frames() -> None:
    explorer = batching_plots.BatchingExplorer()
    settings_ = batching_widgets.STATIC_SETUPS["Llama-3-70B on 16×TPU-v5e"]
    explorer.update(**settings_, batch=64, context=8192)
    png_image(explorer.png())
    assert "16×TPU-v5e" in explorer.ax_pareto.get_title()


def test_live_explorer_redraws_on_every_control() -> None:
    box = widgets.common.live_explorer(batching_widgets.declaration())
    c = box.controls
    image = next(child for child in box.children if isinstance(child, w.Image))
    frames = [bytes(image.value)]
    for name, value in (
        ("batch", 64),
        ("context", 4096),
        ("flops_efficiency", 0.5),
        ("bandwidth_efficiency", 0.8),
        ("usd_per_chip_hour", 3.0),
        ("n_chips", 16),
        ("chip", "H200"),
        ("model", "Llama-3-8B"),
    ):
        c[name].value = value
        frames.append(bytes(image.value))
    for frame in frames:
        png_image(frame)
    assert len(set(frames)) == len(frames)
    assert c["usd_per_chip_hour"].value == 3.0  # H200 has no example price: the last one stays
    c["chip"].value = "TPU-v5e"
    assert c["usd_per_chip_hour"].value == 1.20
    c["model"].value = "Llama-2-13B"
    assert 2 ** c["context"].max == 4096 and c["context"].value <= 4096  # a log2 slider

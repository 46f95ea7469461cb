"""llmmath.moe (and its figures and explorer): parameters, sparsity, experts touched, the
batch an MoE needs, expert parallelism across the rack boundary, and bad input.

Expected values are written out here from the formulas in reference.md (E experts, k per
token, D d_model, F_e expert width, ``3 D F_e`` weights per SwiGLU expert, all-to-all
traffic ``2 B k D bytes`` per layer), or pinned to published numbers with their source.
"""

from __future__ import annotations

import io
from typing import Any

import ipywidgets as w
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure
from model_support import toy_moe
from PIL import Image

from llmmath import moe
from llmmath.core import roofline
from llmmath.core.hardware import get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.display.plots import moe as moe_plots
from llmmath.display.widgets import common as widget_common
from llmmath.display.widgets import moe as moe_widgets

SETTINGS = settings(max_examples=60, deadline=None)
H100_BF16, H100_BW = 9.89e14, 3.35e12
MIXTRAL_EXPERT = 3 * 4096 * 14336  # SwiGLU: gate, up and down, D = 4096, F = 14336
DEEPSEEK_EXPERT = 3 * 7168 * 2048  # D = 7168, expert width 2048


# ---- published numbers --------------------------------------------------------------------
def test_mixtral_total_and_active_parameters() -> None:
    # Jiang et al., "Mixtral of Experts" (arXiv 2401.04088): 46.7e9 parameters, 12.9e9 used
    # per token; printed to 3 figures, so 0.2%.
    counts = moe.param_counts("Mixtral-8x7B")
    assert counts.total == pytest.approx(46.7e9, rel=2e-3)
    assert counts.active == pytest.approx(12.9e9, rel=2e-3)
    assert counts.routed_total == 32 * 8 * MIXTRAL_EXPERT
    assert counts.routed_active == 32 * 2 * MIXTRAL_EXPERT
    assert counts.shared == 0


def test_deepseek_v3_total_and_active_parameters() -> None:
    # DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv 2412.19437): 671e9 total, 37e9
    # activated per token, 256 routed + 1 shared expert of width 2048 in 58 of 61 layers (the
    # 14e9 multi-token-prediction module is not counted). Norm and bias details differ by
    # source: 2%.
    counts = moe.param_counts("DeepSeek-V3")
    assert counts.total == pytest.approx(671e9, rel=0.02)
    assert counts.active == pytest.approx(37e9, rel=0.02)
    assert counts.routed_total == 58 * 256 * DEEPSEEK_EXPERT
    assert counts.shared == 58 * 1 * DEEPSEEK_EXPERT


@pytest.mark.parametrize(
    ("domain", "n_chips", "ratio"),
    [
        # 450 GB/s NVLink4 vs one 400 Gb/s (50 GB/s) NDR NIC per GPU: 9x (reference.md).
        ("HGX H100 (8 GPUs)", 8, 9.0),
        # 900 GB/s NVLink5 vs 400 Gb/s ConnectX-7 per GPU, as data/hardware.toml chooses: 18x
        # (with 800 Gb/s NICs it would be 9x; the lecture's "about 8x" is the HGX case).
        ("GB200 NVL72 (72 GPUs)", 72, 18.0),
        ("HGX B200 (8 GPUs)", 8, 18.0),
        # 4 ICI links x 45 GB/s vs 3.125 GB/s of DCN per chip (scaling book, tpus).
        ("TPU v5e pod (256 chips)", 256, 57.6),
    ],
)
def test_scale_up_to_scale_out_ratios(domain: str, n_chips: int, ratio: float) -> None:
    spec = moe.get_domain(domain)
    assert spec.n_chips == n_chips
    assert spec.bandwidth_ratio == pytest.approx(ratio, rel=1e-12)


def test_nvl72_rack_totals() -> None:
    # NVIDIA GB200 NVL72 page: 13.4 TB of HBM3e and 360 PFLOPS FP16/BF16 "with sparsity"
    # (180 dense) per rack; 72 x 186 GB and 72 x 2.5e15 from our data file, to 0.5%.
    rack = moe.get_domain("GB200 NVL72 (72 GPUs)")
    assert rack.hbm_bytes == pytest.approx(13.4e12, rel=5e-3)
    assert rack.peak_flop_per_s("bf16") == pytest.approx(180e15, rel=5e-3)


def test_the_lecture_rule_uses_experts_over_k() -> None:
    # reference.md: "the batch needed to be compute-bound grows by E/k" -- 300 x sparsity.
    assert moe.LECTURE_SPARSITY == "experts"
    rule = moe.compute_bound_batch_rule("DeepSeek-V3", "H100")
    assert rule == pytest.approx(H100_BF16 / H100_BW * 256 / 8, rel=1e-12)  # ~9,447
    assert rule == pytest.approx(9447, rel=1e-3)


# ---- parameters, FLOPs, sparsity ----------------------------------------------------------
@pytest.mark.parametrize("model", ["Mixtral-8x7B", "DeepSeek-V3", "Llama-3-8B"])
def test_parameter_parts_add_up(model: str) -> None:
    c = moe.param_counts(model)
    assert c.total == c.dense + c.shared + c.routed_total
    assert c.active == c.dense + c.shared + c.routed_active
    assert 0 < c.active <= c.total


def test_toy_parameter_split_by_hand() -> None:
    model = toy_moe(n_shared_experts=1)
    per_expert = 3 * 64 * 32
    c = moe.param_counts(model)
    assert (c.routed_total, c.routed_active, c.shared) == (
        3 * 8 * per_expert,
        3 * 2 * per_expert,
        3 * 1 * per_expert,
    )
    assert c.total - c.active == 3 * (8 - 2) * per_expert


def test_a_dense_model_has_no_expert_part() -> None:
    c = moe.param_counts("Llama-3-8B")
    assert c.routed_total == c.routed_active == c.shared == 0
    assert c.dense == c.total == c.active


def test_more_experts_more_parameters_same_flops() -> None:
    # The point of an MoE: re-cut Mixtral into 64 experts, still 2 per token: 8x the routed
    # weights, the same FLOPs per token but for the router, a D x E matmul in each layer.
    mixtral = get_model("Mixtral-8x7B")
    wide = moe.with_experts(mixtral, 64, 2)
    router = 2 * 32 * 4096 * (64 - 8)
    assert moe.flops_per_token(wide) - moe.flops_per_token(mixtral) == router
    assert router / moe.flops_per_token(mixtral) < 1e-3
    assert moe.flops_per_token(mixtral) == 2.0 * mixtral.matmul_params_per_token
    extra = moe.param_counts(wide).routed_total - moe.param_counts(mixtral).routed_total
    assert extra == 32 * (64 - 8) * MIXTRAL_EXPERT


def test_sparsity_both_ways() -> None:
    assert moe.sparsity("Mixtral-8x7B", "experts") == 4.0
    assert moe.sparsity("DeepSeek-V3", "experts") == 32.0  # routed experts only
    mixtral = get_model("Mixtral-8x7B")
    assert moe.sparsity(mixtral, "params") == mixtral.total_params / mixtral.active_params
    # Attention, dense layers and the shared expert are used by every token: total/active
    # is well below E/k for DeepSeek-V3 (671 / 37 ~ 18).
    assert moe.sparsity("DeepSeek-V3", "params") == pytest.approx(671 / 37, rel=0.03)
    assert moe.sparsity("Mixtral-8x7B", "params") == pytest.approx(46.7 / 12.9, rel=3e-3)


def test_with_experts_keeps_the_expert_width() -> None:
    recut = moe.with_experts("DeepSeek-V3", 64, 2)
    assert recut.mlp_params_per_expert == DEEPSEEK_EXPERT
    assert (recut.n_experts, recut.experts_per_token, recut.n_shared_experts) == (64, 2, 1)
    assert "E=64, k=2" in recut.name
    assert moe.with_experts("DeepSeek-V3", 64, 2, n_shared_experts=0).n_shared_experts == 0


# ---- experts touched and weights read -----------------------------------------------------
def test_expected_experts_touched_by_hand() -> None:
    # E (1 - (1 - k/E)^B) with E = 8, k = 2: B = 1 -> 2, B = 2 -> 3.5, B = 3 -> 4.625.
    touched = moe.expected_experts_touched(np.array([0.0, 1.0, 2.0, 3.0]), 8, 2)
    np.testing.assert_allclose(touched, [0.0, 2.0, 3.5, 4.625], rtol=1e-12)
    assert moe.expected_experts_touched(1, 256, 8) == pytest.approx(8.0, rel=1e-12)
    assert moe.expected_experts_touched(10_000, 256, 8) == pytest.approx(256.0, rel=1e-12)
    assert moe.expected_experts_touched(3, 4, 4) == 4.0  # every token uses every expert
    assert isinstance(moe.expected_experts_touched(3, 8, 2), float)


def test_expected_experts_touched_broadcasts() -> None:
    E = np.array([8.0, 64.0, 256.0])
    touched = moe.expected_experts_touched(16, E, 2)
    assert touched.shape == (3,)
    for i, experts in enumerate(E):
        assert touched[i] == moe.expected_experts_touched(16, experts, 2)
    grid = moe.expected_experts_touched(np.array([[1.0], [4.0]]), E, np.array([1.0, 2.0, 8.0]))
    assert grid.shape == (2, 3)


def test_expected_experts_touched_matches_simulated_routing() -> None:
    # Monte Carlo: each of B tokens picks k distinct experts uniformly at random; count the
    # experts hit. 4,000 trials: the mean's standard error is ~0.02; allow 0.1.
    rng = np.random.default_rng(20261202)
    E, k, B, trials = 16, 4, 5, 4000
    keys = rng.random((trials, B, E))
    chosen = np.argsort(keys, axis=2)[:, :, :k]  # k distinct experts per token
    hit = np.zeros((trials, E), dtype=bool)
    np.put_along_axis(hit, chosen.reshape(trials, B * k), True, axis=1)
    simulated = hit.sum(axis=1).mean()
    assert simulated == pytest.approx(moe.expected_experts_touched(B, E, k), abs=0.1)


def test_weight_reads_grow_from_active_to_every_expert() -> None:
    mixtral = get_model("Mixtral-8x7B")
    embedding = mixtral.vocab_size * mixtral.d_model  # a lookup, never a matmul read
    assert float(moe.weight_params_read(mixtral, 1)) == mixtral.matmul_params_per_token
    two = mixtral.matmul_params_per_token + 32 * (3.5 - 2) * MIXTRAL_EXPERT
    assert float(moe.weight_params_read(mixtral, 2)) == pytest.approx(two, rel=1e-12)
    every = float(moe.weight_params_read(mixtral, 4096))
    assert every == pytest.approx(mixtral.total_params - embedding, rel=1e-12)
    assert moe.weight_bytes_read(mixtral, 4096, "fp8") == pytest.approx(every, rel=1e-12)
    assert moe.weight_bytes_read(mixtral, 4096) == pytest.approx(2 * every, rel=1e-12)


def test_roofline_reads_through_the_one_formula() -> None:
    batches = np.array([1.0, 7.0, 300.0])
    for model in ("Mixtral-8x7B", "DeepSeek-V3", "Llama-3-8B"):
        np.testing.assert_array_equal(
            roofline.weight_params_read(model, batches), moe.weight_params_read(model, batches)
        )


# ---- the batch an MoE needs ---------------------------------------------------------------
def test_compute_bound_batch_rules() -> None:
    critical = H100_BF16 / H100_BW
    assert moe.compute_bound_batch_rule("Mixtral-8x7B", "H100", "experts") == pytest.approx(
        critical * 4, rel=1e-12
    )
    deepseek = get_model("DeepSeek-V3")
    by_params = moe.compute_bound_batch_rule(deepseek, "H100", "params")
    assert by_params == pytest.approx(critical * deepseek.total_params / deepseek.active_params)
    # int8 weights feeding bf16 FLOPs halve it, as for a dense model.
    int8 = moe.compute_bound_batch_rule(deepseek, "H100", "experts", "bf16", "int8")
    assert int8 == pytest.approx(critical * 32 / 2, rel=1e-12)
    # A domain preset stands for its chip.
    assert moe.compute_bound_batch_rule(deepseek, "HGX H100 (8 GPUs)") == pytest.approx(
        critical * 32, rel=1e-12
    )


def test_exact_crossing_of_the_expert_layer_is_the_lecture_rule() -> None:
    # At B ~ 300 E/k every expert is hit ((1 - 1/32)^9447 ~ e^-300), so compute 2 B k 3DF_e / C
    # meets the read E 3DF_e 2 / W exactly at B = (C/W) E/k.
    exact = moe.compute_bound_batch("DeepSeek-V3", "H100", "expert_layer")
    assert exact == pytest.approx(H100_BF16 / H100_BW * 32, rel=1e-9)


def test_exact_crossing_of_the_whole_step() -> None:
    deepseek = get_model("DeepSeek-V3")
    exact = moe.compute_bound_batch(deepseek, "H100", "model")
    step = roofline.decode_weight_time(deepseek, exact, "H100")
    assert float(step.compute_s) == pytest.approx(float(step.memory_s), rel=1e-9)
    # Every expert is read there, so the batch is (C/W) x matmul total / matmul active.
    every = deepseek.total_params - deepseek.vocab_size * deepseek.d_model
    ratio = every / deepseek.matmul_params_per_token
    assert exact == pytest.approx(H100_BF16 / H100_BW * ratio, rel=1e-9)
    assert exact < moe.compute_bound_batch_rule(deepseek, "H100", "experts")


def test_a_few_tokens_touch_many_experts() -> None:
    # Why tools that read only the active weights are wrong at B > 1: 32 tokens of
    # DeepSeek-V3 already touch 256 (1 - (31/32)^32) ~ 163 experts of each layer.
    assert moe.expected_experts_touched(32, 256, 8) == pytest.approx(
        256 * (1 - (31 / 32) ** 32), rel=1e-12
    )
    assert 160 < moe.expected_experts_touched(32, 256, 8) < 166


# ---- expert parallelism -------------------------------------------------------------------
def test_all_to_all_bytes_per_gpu_by_hand() -> None:
    # 8192 tokens over 64 GPUs: 128 each, to 8 experts and back, 7168 bf16 numbers each way.
    sent = moe.all_to_all_bytes_per_gpu("DeepSeek-V3", 8192, 64)
    assert sent == 2 * 128 * 8 * 7168 * 2
    assert moe.all_to_all_bytes_per_gpu("DeepSeek-V3", 8192, 64, "fp8") == sent / 2


def test_expert_parallel_step_inside_one_hgx_node_by_hand() -> None:
    B, G = 8192.0, 8
    step = moe.expert_parallel_step("DeepSeek-V3", B, G, "H100")
    one_way = B / G * 8 * 7168 * 2
    # Dispatch and combine: each sends 7/8 of its bytes to the other 7 GPUs over NVLink, after
    # one step of NVLink latency (0.6 us, NCCL 2.20.3's hwLat; no per-collective base).
    assert float(step.all_to_all_s) == pytest.approx(
        2 * (one_way * 7 / 8 / 450e9 + 0.6e-6), rel=1e-12
    )
    # 8192 x 8 / 8 token-experts per GPU plus its 1024 tokens through the shared expert.
    flops = 2 * DEEPSEEK_EXPERT * (B * 8 + B * 1) / G
    assert float(step.compute_s) == pytest.approx(flops / H100_BF16, rel=1e-12)
    touched = 256 * (1 - (1 - 8 / 256) ** B)
    read = (touched / G + 1) * DEEPSEEK_EXPERT * 2
    assert float(step.weight_read_s) == pytest.approx(read / H100_BW, rel=1e-12)
    assert step.in_one_domain and step.ep_width == G
    assert float(step.lower_s) == max(
        float(step.compute_s), float(step.weight_read_s), float(step.all_to_all_s)
    )
    assert float(step.upper_s) == pytest.approx(
        float(step.compute_s + step.weight_read_s + step.all_to_all_s)
    )


def test_all_to_all_time_jumps_where_ep_leaves_the_hgx_node() -> None:
    inside = moe.expert_parallel_step("DeepSeek-V3", 8192, 8, "H100")
    outside = moe.expert_parallel_step("DeepSeek-V3", 8192, 16, "H100")
    assert not outside.in_one_domain
    # Half the bytes per GPU, but half of them now cross 50 GB/s NICs: 8192/16 x 8 x 7168 x 2
    # bytes each way, 8/16 of it out of the node.
    one_way = 8192 / 16 * 8 * 7168 * 2
    assert float(outside.all_to_all_s) == pytest.approx(
        2 * (one_way * 8 / 16 / 50e9 + 2.7e-6), rel=1e-12
    )
    assert float(outside.all_to_all_s) > 2 * float(inside.all_to_all_s)
    assert bool(outside.communication_bound) and not bool(inside.communication_bound)


def test_deepseek_ep64_fits_an_nvl72_rack_not_hgx_nodes() -> None:
    # The lecture's point in numbers: at B = 8192, EP = 64 hides the all-to-all under the
    # experts' work inside an NVL72 rack, but is communication-bound across HGX H100 nodes.
    rack = moe.expert_parallel_step("DeepSeek-V3", 8192, 64, "GB200 NVL72 (72 GPUs)")
    nodes = moe.expert_parallel_step("DeepSeek-V3", 8192, 64, "HGX H100 (8 GPUs)")
    assert rack.in_one_domain and not bool(rack.communication_bound)
    assert not nodes.in_one_domain and bool(nodes.communication_bound)
    assert float(nodes.all_to_all_s) / float(nodes.compute_s) > 4


def test_expert_parallel_step_is_vectorised_over_the_batch() -> None:
    batches = np.array([16.0, 512.0, 32768.0])
    vector = moe.expert_parallel_step("Mixtral-8x7B", batches, 4, "H100")
    for i, B in enumerate(batches):
        one = moe.expert_parallel_step("Mixtral-8x7B", B, 4, "H100")
        for part in ("compute_s", "weight_read_s", "all_to_all_s"):
            assert getattr(vector, part)[i] == pytest.approx(float(getattr(one, part)))


def test_efficiency_knobs_stretch_the_floors() -> None:
    full = moe.expert_parallel_step("DeepSeek-V3", 4096, 16, "H100")
    slow = moe.expert_parallel_step(
        "DeepSeek-V3",
        4096,
        16,
        "H100",
        flops_efficiency=0.5,
        bandwidth_efficiency=0.8,
        network_efficiency=0.25,
    )
    assert float(slow.compute_s) == pytest.approx(2 * float(full.compute_s))
    assert float(slow.weight_read_s) == pytest.approx(float(full.weight_read_s) / 0.8)
    assert float(slow.all_to_all_s) == pytest.approx(4 * float(full.all_to_all_s))


def test_one_gpu_needs_no_all_to_all() -> None:
    step = moe.expert_parallel_step("Mixtral-8x7B", 64, 1, "H100")
    assert float(step.all_to_all_s) == 0.0


def test_ep_widths_and_the_widest_one_domain_holds() -> None:
    assert moe.ep_widths(256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert moe.ep_widths(60, 8) == [1, 2, 3, 4, 5, 6]
    assert moe.max_ep_width(256, "HGX H100 (8 GPUs)") == 8
    assert moe.max_ep_width(256, "GB200 NVL72 (72 GPUs)") == 64  # 72 does not divide 256
    assert moe.max_ep_width(72, "GB200-NVL72") == 72
    assert moe.max_ep_width(8, "GB200 NVL72 (72 GPUs)") == 8
    assert moe.max_ep_width(256, "TPU v5e pod (256 chips)") == 256


def test_memory_one_domain_holds() -> None:
    # One expert layer per rack (the other layers on other racks): 72 x 186 GB / 2 bytes.
    assert moe.max_expert_layer_params("GB200 NVL72 (72 GPUs)") == pytest.approx(72 * 186e9 / 2)
    held = moe.max_expert_layer_params(
        "HGX H100 (8 GPUs)", "fp8", moe_layers_per_domain=58, memory_fraction=0.5
    )
    assert held == pytest.approx(8 * 80e9 * 0.5 / 58)
    # DeepSeek-V3's expert layer: 257 experts of 3 x 7168 x 2048 = 11.3e9 weights.
    assert moe.expert_layer_params("DeepSeek-V3") == 257 * DEEPSEEK_EXPERT
    assert held < moe.expert_layer_params("DeepSeek-V3")


def test_expert_bytes_per_gpu() -> None:
    # 58 layers x (256/8 + 1 shared) experts in fp8: 84 GB, more than an H100 holds.
    at_8 = moe.expert_bytes_per_gpu("DeepSeek-V3", 8, "fp8")
    assert at_8 == 58 * 33 * DEEPSEEK_EXPERT
    assert at_8 > get_chip("H100").hbm_bytes
    assert moe.expert_bytes_per_gpu("DeepSeek-V3", 64, "fp8") == 58 * 5 * DEEPSEEK_EXPERT


def test_whole_models_in_one_domain() -> None:
    # 671e9 fp8 bytes > 8 x 80 GB; < 72 x 186 GB. Mixtral in bf16 (93 GB) fits one node.
    assert not moe.fits_in_domain("DeepSeek-V3", "HGX H100 (8 GPUs)", "fp8")
    assert moe.fits_in_domain("DeepSeek-V3", "GB200 NVL72 (72 GPUs)", "fp8")
    assert moe.fits_in_domain("Mixtral-8x7B", "HGX H100 (8 GPUs)")
    assert not moe.fits_in_domain("Mixtral-8x7B", "HGX H100 (8 GPUs)", memory_fraction=0.1)


def test_domains_as_data() -> None:
    assert "GB200 NVL72 (72 GPUs)" in moe.list_domains()
    by_label = moe.get_domain("GB200 NVL72 (72 GPUs)")
    assert by_label.chip is get_chip("GB200-NVL72")
    assert moe.get_domain("H100").n_chips == 8
    assert moe.get_domain(get_chip("TPU-v5p")).n_chips == 8960
    assert moe.get_domain(by_label) is by_label
    assert by_label.scale_up_bandwidth_bytes_per_s == 900e9
    assert by_label.scale_out_bandwidth_bytes_per_s == 50e9


# ---- bad input ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: moe.expected_experts_touched(4, 8, 9), ValueError, "experts_per_token=9 exceeds"),
        (
            lambda: moe.expected_experts_touched(4, np.array([8, 4]), np.array([2, 6])),
            ValueError,
            "experts_per_token=6 exceeds n_experts=4",
        ),
        (lambda: moe.expected_experts_touched(4, 0, 1), ValueError, "n_experts must be"),
        (lambda: moe.expected_experts_touched(4, 8, 0), ValueError, "experts_per_token must be"),
        (lambda: moe.expected_experts_touched(4, 8.5, 2), ValueError, "n_experts must be a whole"),
        (lambda: moe.expected_experts_touched(-1, 8, 2), ValueError, "batch must be"),
        (lambda: moe.expected_experts_touched("4", 8, 2), TypeError, "batch must be a number"),
        (lambda: moe.with_experts("Mixtral-8x7B", 8, 9), ValueError, "exceeds n_experts=8"),
        (lambda: moe.with_experts("Mixtral-8x7B", 0, 1), ValueError, "n_experts must be >= 1"),
        (lambda: moe.sparsity("Llama-3-8B"), ValueError, "'Llama-3-8B' is dense"),
        (lambda: moe.sparsity("DeepSeek-V3", "flops"), ValueError, "unknown definition"),
        (lambda: moe.compute_bound_batch("DeepSeek-V3", "H100", "rack"), ValueError, "scope"),
        (
            lambda: moe.expert_parallel_step("DeepSeek-V3", 64, 48, "H100"),
            ValueError,
            "n_experts=256 is not divisible by ep_width=48",
        ),
        (lambda: moe.expert_parallel_step("DeepSeek-V3", 64, 0, "H100"), ValueError, "ep_width"),
        (lambda: moe.expert_parallel_step("DeepSeek-V3", 64, 2.0, "H100"), TypeError, "ep_width"),
        (lambda: moe.expert_parallel_step("Llama-3-8B", 64, 1, "H100"), ValueError, "is dense"),
        (lambda: moe.expert_parallel_step("DeepSeek-V3", 0, 8, "H100"), ValueError, "batch"),
        (
            lambda: moe.expert_parallel_step("DeepSeek-V3", 64, 8, "H100", network_efficiency=2),
            ValueError,
            "network_efficiency must be in",
        ),
        (lambda: moe.get_domain("NVL576"), ValueError, "unknown domain 'NVL576'"),
        (lambda: moe.max_ep_width(0, "H100"), ValueError, "n_experts must be >= 1"),
        (
            lambda: moe.max_expert_layer_params("H100", memory_fraction=1.5),
            ValueError,
            "memory_fraction",
        ),
        (
            lambda: moe.max_expert_layer_params("H100", moe_layers_per_domain=0),
            ValueError,
            "moe_layers_per_domain",
        ),
        (lambda: moe.weight_bytes_read("Mixtral-8x7B", 8, "int3"), ValueError, "unknown dtype"),
    ],
)
def test_bad_input_names_the_parameter(call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


# ---- properties ---------------------------------------------------------------------------
@st.composite
def experts_and_k(draw: st.DrawFn) -> tuple[int, int]:
    E = draw(st.integers(1, 512))
    return E, draw(st.integers(1, E))


@st.composite
def moe_models(draw: st.DrawFn) -> ModelConfig:
    E, k = draw(experts_and_k())
    n_layers = draw(st.integers(1, 6))
    return toy_moe(
        n_layers=n_layers,
        d_model=draw(st.integers(8, 512)),
        n_experts=E,
        experts_per_token=k,
        n_shared_experts=draw(st.integers(0, 2)),
        d_ff_expert=draw(st.integers(1, 1024)),
        n_dense_layers=draw(st.integers(0, n_layers - 1)),
        tied_embeddings=draw(st.booleans()),
    )


any_moe = st.one_of(st.sampled_from(["Mixtral-8x7B", "DeepSeek-V3"]).map(get_model), moe_models())
batches = st.floats(min_value=1.0, max_value=1e6)


@SETTINGS
@given(experts_and_k(), batches, batches)
def test_experts_touched_lie_in_k_to_e_and_grow_with_the_batch(
    shape: tuple[int, int], b1: float, b2: float
) -> None:
    E, k = shape
    small, large = sorted((b1, b2))
    few = float(moe.expected_experts_touched(small, E, k))
    many = float(moe.expected_experts_touched(large, E, k))
    assert k * (1 - 1e-12) <= few <= many * (1 + 1e-12)
    assert many <= E * (1 + 1e-12)


@SETTINGS
@given(any_moe, batches, batches)
def test_weight_reads_lie_between_active_and_total(
    model: ModelConfig, b1: float, b2: float
) -> None:
    small, large = sorted((b1, b2))
    embedding = 0 if model.tied_embeddings else model.vocab_size * model.d_model
    read_small = float(moe.weight_params_read(model, small))
    read_large = float(moe.weight_params_read(model, large))
    assert model.matmul_params_per_token <= read_small * (1 + 1e-12)
    assert read_small <= read_large * (1 + 1e-12)
    assert read_large <= (model.total_params - embedding) * (1 + 1e-12)
    assert model.active_params <= model.total_params


@SETTINGS
@given(any_moe, batches, st.sampled_from(["H100", "GB200-NVL72", "TPU-v5e"]))
def test_all_to_all_traffic_sums_to_2bkd_for_every_width(
    model: ModelConfig, B: float, chip: str
) -> None:
    for G in moe.ep_widths(model.n_experts, 64):
        per_gpu = moe.all_to_all_bytes_per_gpu(model, B, G)
        total = 2 * B * model.experts_per_token * model.d_model * 2
        assert per_gpu * G == pytest.approx(total, rel=1e-12)


@SETTINGS
@given(
    st.sampled_from(["H100", "A100", "B200", "GB200-NVL72"]),
    st.integers(1, 8),
    st.integers(1, 8),
    batches,
)
def test_leaving_the_domain_multiplies_communication_per_unit_of_work(
    chip: str, multiple: int, k: int, B: float
) -> None:
    # Inside a domain of d chips the all-to-all over compute ratio is ~(d-1)/d / W_up; at
    # G = 2d half the bytes cross the NIC, 1/2 / W_out: a jump of W_up / (2 W_out) x d/(d-1).
    spec = get_chip(chip)
    d = spec.scale_up_domain_size
    model = moe.with_experts("DeepSeek-V3", 2 * d * multiple, min(k, 2 * d * multiple))
    inside = moe.expert_parallel_step(model, B, d, spec)
    outside = moe.expert_parallel_step(model, B, 2 * d, spec)
    assert inside.in_one_domain and not outside.in_one_domain
    # Dispatch and combine each pay one step of latency; the bytes' share is what jumps.
    bytes_in = float(inside.all_to_all_s) - 2 * spec.scale_up_latency_s
    bytes_out = float(outside.all_to_all_s) - 2 * spec.scale_out_latency_s
    ratio_in = bytes_in / float(inside.compute_s)
    ratio_out = bytes_out / float(outside.compute_s)
    jump = spec.scale_up_to_scale_out_ratio / 2 * d / (d - 1)
    assert ratio_out == pytest.approx(jump * ratio_in, rel=1e-9)
    assert ratio_out > 4 * ratio_in  # every GPU preset's links are >= 9x its NIC


@SETTINGS
@given(st.sampled_from(["Mixtral-8x7B", "DeepSeek-V3"]), st.lists(batches, min_size=1, max_size=8))
def test_vectorised_reads_equal_scalar_calls(model: str, values: list[float]) -> None:
    vector = moe.weight_params_read(model, np.array(values))
    for i, B in enumerate(values):
        assert vector[i] == pytest.approx(float(moe.weight_params_read(model, B)), rel=1e-12)


# ---- figures ------------------------------------------------------------------------------
def png_size(data: bytes | memoryview) -> tuple[int, int]:
    image = Image.open(io.BytesIO(bytes(data)))
    return image.size


def test_weights_read_figure() -> None:
    figure = moe_plots.weights_read_figure()
    assert isinstance(figure, Figure)
    ax_read, ax_time = figure.axes
    # Mixtral's expected curve starts at its active share and ends at 1 (every expert).
    _x, y = ax_read.lines[0].get_data()
    mixtral = get_model("Mixtral-8x7B")
    every = float(moe.weight_params_read(mixtral, 1e9))
    assert y[0] == pytest.approx(mixtral.matmul_params_per_token / every)
    assert y[-1] == pytest.approx(1.0)
    # The right panel marks the exact crossing and both rules.
    marks = [line.get_xdata()[0] for line in ax_time.lines[2:]]
    assert marks == pytest.approx(
        [
            moe.compute_bound_batch("DeepSeek-V3", "H100"),
            moe.compute_bound_batch_rule("DeepSeek-V3", "H100", "params"),
            moe.compute_bound_batch_rule("DeepSeek-V3", "H100", "experts"),
        ]
    )


def test_rack_boundary_figure_shades_what_leaves_the_domain() -> None:
    figure = moe_plots.rack_boundary_figure("DeepSeek-V3", 8192)
    hgx, nvl = figure.axes
    assert "HGX H100" in hgx.get_title() and "NVL72" in nvl.get_title()
    widths, a2a = hgx.lines[2].get_data()
    assert list(widths) == [2, 4, 8, 16, 32, 64, 128, 256]
    step16 = moe.expert_parallel_step("DeepSeek-V3", 8192, 16, "H100")
    assert a2a[3] == pytest.approx(float(step16.all_to_all_s))
    assert hgx.lines[3].get_xdata()[0] == 8 and nvl.lines[3].get_xdata()[0] == 72


def test_explorer_update_png_and_readout() -> None:
    explorer = moe_plots.MoEExplorer()
    explorer.update("HGX H100 (8 GPUs)", 256, 8, 8192)
    image = explorer.png()
    assert png_size(image) == (800, 320)  # 10 x 4 inches at 80 dpi
    assert "EP=8, in one domain" in explorer.ax_batch.get_title()
    step = moe.expert_parallel_step(moe.with_experts("DeepSeek-V3", 256, 8), 8192, 8, "H100")
    x, y = explorer.width_point.get_data()
    assert x[0] == 8 and y[0] == pytest.approx(float(step.lower_s))
    assert "B=8,192" in explorer.readout.get_text()
    explorer.update("HGX H100 (8 GPUs)", 256, 8, 64)  # same scene: only the markers move
    assert explorer.png() != image
    explorer.update("HGX H100 (8 GPUs)", 256, 8, 64, ep_width=32)
    assert "across domains" in explorer.ax_batch.get_title()
    figure = moe_widgets.declaration().figure(n_experts=64, experts_per_token=2)
    titles = [ax.get_title() for ax in figure.axes]
    assert any("E=64, top-2" in title for title in titles), titles


def test_explorer_rejects_bad_settings() -> None:
    explorer = moe_plots.MoEExplorer()
    with pytest.raises(ValueError, match="exceeds n_experts"):
        explorer.update(n_experts=8, experts_per_token=9)
    with pytest.raises(ValueError, match="not divisible by ep_width"):
        explorer.update(n_experts=64, ep_width=3)
    with pytest.raises(ValueError, match="batch must be"):
        explorer.update(batch=0)


# ---- widgets ------------------------------------------------------------------------------
class LabelledFrames:
    """Stands in for MoEExplorer: each frame's bytes name the setting drawn."""

    def __init__(self, batch_range: tuple[float, float] = (1, 2)) -> None:
        self.setting: tuple[Any, ...] = ()

    def update(self, **kw: Any) -> None:
        self.setting = tuple(kw[k] for k in ("domain", "n_experts", "experts_per_token", "batch"))

    def png(self) -> bytes:
        return "|".join(str(part) for part in self.setting).encode()


def test_static_explorer_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(moe_widgets, "MoEExplorer", LabelledFrames)
    spec = moe_widgets.declaration()
    box = widget_common.static_explorer(spec)
    frames = list(box.frames.values())
    assert len(frames) == spec.frame_count() == 3 * 3 * 3 * 4 <= 150
    assert all(frame.format == "png" for frame in frames)
    leaf = box.frames[0, 2, 1, 3]
    assert bytes(leaf.value) == b"HGX H100 (8 GPUs)|256|2|32768"
    assert list(box.controls) == ["domain", "n_experts", "experts_per_token", "batch"]
    assert box.start()[0] == box.controls["domain"].index == 1  # NVL72 first


def test_live_explorer_keeps_its_controls_consistent() -> None:
    box = widget_common.live_explorer(moe_widgets.declaration())
    c = box.controls
    model, domain, experts, top_k = c["model"], c["domain"], c["n_experts"], c["experts_per_token"]
    width, batch = c["ep_width"], c["batch"]
    image = next(child for child in box.children if isinstance(child, w.Image))
    first = bytes(image.value)
    assert width.value == 64  # the widest EP that fits an NVL72 rack for E = 256
    batch.value = 32768
    assert bytes(image.value) != first
    experts.value = 72  # the slider stops on counts worth splitting (widgets/moe.py)
    assert top_k.value <= 72 and set(width.options) == set(moe.ep_widths(72))
    experts.value = 4
    assert top_k.value <= 4 and top_k.max == 4 and width.value in (1, 2, 4)
    model.value = "Mixtral-8x7B"
    assert (experts.value, top_k.value) == (8, 2) and width.value == 8
    before = bytes(image.value)
    domain.value = "HGX H100 (8 GPUs)"
    assert bytes(image.value) != before


# ---- attention beside wide EP -------------------------------------------------------------
FP8 = {"weight_dtype": "fp8", "compute_dtype": "fp8"}


def _deepseek_group_by_hand(ep: int, attention_tp: int, context: float) -> float:
    """DeepSeek-V3 on H100 in fp8 with a bf16 cache, counted here from the model's own
    numbers: experts split over the group, the rest once per attention replica (split
    ``attention_tp`` ways), MLA's latent held by every rank of a replica."""
    spec, hbm = get_model("DeepSeek-V3"), get_chip("H100").hbm_bytes
    experts = spec.n_moe_layers * spec.n_experts * DEEPSEEK_EXPERT  # routed, 1 byte each
    rest = spec.total_params - experts
    weights = experts / ep + rest / attention_tp
    per_token = 61 * (512 + 64) * 2  # the latent and the RoPE key, bf16
    per_replica = attention_tp * (hbm - weights) / (attention_tp * per_token * context)
    return (ep // attention_tp) * per_replica


@pytest.mark.parametrize("attention_tp", [1, 8])
@pytest.mark.parametrize("context", [2000.0, 32768.0])
def test_attention_beside_ep_by_hand(attention_tp: int, context: float) -> None:
    split = moe.attention_beside_ep(
        "DeepSeek-V3", "H100", 64, context, attention_tp=attention_tp, **FP8
    )
    by_hand = _deepseek_group_by_hand(64, attention_tp, context)
    # max_batch floors the whole group's sequences; the by-hand count is unrounded.
    assert by_hand - 1 < float(split.group_batch) <= by_hand
    assert float(split.sequences_per_gpu) == pytest.approx(float(split.group_batch) / 64)
    assert split.kv_copies == attention_tp  # MLA: one latent, every TP rank holds it


def test_dp_attention_holds_more_sequences_than_tp_attention_for_mla() -> None:
    # TP8 spends 8 copies of each cached latent; DP-attention spends the attention weights 8
    # times instead. For DeepSeek-V3 on H100 the cache wins: DP holds over 6x the sequences.
    dp, tp = (moe.attention_beside_ep("DeepSeek-V3", "H100", 64, 8192.0, attention_tp=t, **FP8)
              for t in (1, 8))  # fmt: skip
    assert float(dp.weight_bytes_per_gpu) > float(tp.weight_bytes_per_gpu)
    assert float(dp.group_batch) > 6 * float(tp.group_batch)


def test_gqa_kv_heads_split_by_attention_tp_without_copies() -> None:
    # Mixtral's 8 KV heads split over TP8: no copies, and TP then holds more sequences (the
    # attention weights are split, the cache is not repeated).
    dp, tp = (moe.attention_beside_ep("Mixtral-8x7B", "H100", 8, 8192.0, attention_tp=t)
              for t in (1, 8))  # fmt: skip
    assert tp.kv_copies == 1.0
    assert float(tp.group_batch) > float(dp.group_batch)


def test_ep_pays_where_the_group_holds_the_expert_bound_batch() -> None:
    split = moe.attention_beside_ep("DeepSeek-V3", "H100", 64, [2000.0, 32768.0, 131072.0], **FP8)
    bound = moe.compute_bound_batch("DeepSeek-V3", "H100", "expert_layer", "fp8")
    assert split.expert_bound_batch == pytest.approx(bound)
    assert list(split.pays) == list(np.asarray(split.group_batch) >= bound)
    assert bool(split.pays[0]) and not bool(split.pays[-1])  # short contexts pay, long ones not


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ep_width": 64, "attention_tp": 3}, "attention_tp=3 must divide ep_width=64"),
        ({"ep_width": 48, "attention_tp": 1}, "not divisible by ep_width=48"),
        ({"ep_width": 64, "attention_tp": 1, "kv_dtype": "int3"}, "kv_dtype"),
    ],
)
def test_attention_beside_ep_refuses_bad_input(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        moe.attention_beside_ep("DeepSeek-V3", "H100", context=2000.0, **FP8, **kwargs)

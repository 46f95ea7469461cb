"""llmmath.parallelism: layouts, memory per GPU, communication, the bubble, reversible layers.

Published numbers name their source and tolerance. "Scaling book" = Austin et al., "How to
Scale Your Model" (Google DeepMind, 2025), by chapter; "ZeRO" = Rajbhandari et al. 2020
(arXiv 1910.02054); "Llama 3" = "The Llama 3 Herd of Models" (arXiv 2407.21783);
"Korthikanti" = "Reducing Activation Recomputation in Large Transformer Models" (arXiv
2205.05198).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.axes import Axes

from llmmath import parallelism
from llmmath.beyond import number_formats, serving_systems
from llmmath.core import collectives, data
from llmmath.core.hardware import get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.placement import DoesNotFitError, Layout

SETTINGS = settings(max_examples=40, deadline=None)
LLAMA_70B = "Llama-3-70B"
LLAMA_405B = "Llama-3.1-405B"
BATCH_4M = 4 * 2**20  # tokens per step: 512 sequences of 8,192
# Llama 3, Table 4: 8,192 H100, TP8 PP16 DP64, 16M tokens per batch (32 sequences of 8,192 per
# DP replica), 430 TFLOP/s per GPU = 43% BF16 MFU. The paper balances 126 layers over 16
# stages by giving the embedding and the output layer a slot each.
LLAMA3_LAYOUT = Layout(dp=64, tp=8, pp=16, zero_stage=1, embedding_as_layers=True)
LLAMA3_BATCH = 16 * 2**20
LLAMA3_TFLOPS_PER_GPU = 430e12


# ---- published numbers --------------------------------------------------------------------
def test_llama_3_70b_training_flops() -> None:
    # Scaling book, applied-training: 6 * 70e9 * 15e12 ≈ 6.3e24 FLOPs. We count the matmul
    # parameters only (the input embedding is a lookup): 6.26e24, within 1%.
    flops = parallelism.training_flops(LLAMA_70B, 15e12)
    assert flops == pytest.approx(6.3e24, rel=1e-2)
    # Recomputation adds one forward pass: 8P instead of 6P per token.
    assert parallelism.training_flops(LLAMA_70B, 15e12, "checkpointed") == pytest.approx(
        flops * 4 / 3, rel=1e-12
    )


def test_mixed_precision_adam_is_16_bytes_per_parameter() -> None:
    # ZeRO, section 3.1: 2Ψ (fp16 weights) + 2Ψ (fp16 gradients) + KΨ, K = 12, = 16Ψ.
    state = parallelism.model_state_bytes(1.0)
    assert float(state.total_bytes) == 16.0
    assert sum(parallelism.ADAM_MIXED_BYTES_PER_PARAM.values()) == 16.0


@pytest.mark.parametrize(
    ("stage", "published_gb"),
    [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.88)],  # ZeRO, Figure 1: Ψ = 7.5B, N_d = 64
)
def test_zero_paper_figure_1(stage: int, published_gb: float) -> None:
    state = parallelism.model_state_bytes(7.5e9, 64, stage)
    # The figure prints three significant digits: 0.5%.
    assert float(state.total_bytes) / 1e9 == pytest.approx(published_gb, rel=5e-3)


def test_dp_hiding_batch_on_h100() -> None:
    # Scaling book, gpus: per-GPU token batch > C / W = 990e12 / 450e9 ≈ 2,200 inside a node.
    # The book drops the ring's (n-1)/n; for 8 GPUs it is 7/8 of C / W.
    h100 = get_chip("H100")
    c_over_w = h100.peak("bf16") / h100.scale_up_bandwidth_bytes_per_s
    assert c_over_w == pytest.approx(2200, rel=5e-3)
    assert parallelism.dp_hiding_batch("H100", 8) == pytest.approx(c_over_w * 7 / 8, rel=1e-12)
    # Across nodes the node's egress (8 x 50 GB/s = 400 GB/s) sets it: 990e12 / 400e9 = 2,475
    # in the book; 1.5% covers its rounded C and our (m-1)/m for 128 nodes.
    assert parallelism.dp_hiding_batch("H100", 1024) == pytest.approx(2475, rel=1.5e-2)
    # One GPU per node (TP8 inside every node): each GPU's own 50 GB/s NIC, C / W = 19,780.
    flat = parallelism.dp_hiding_batch("H100", 128, per_domain=1)
    assert flat == pytest.approx(989e12 / 50e9 * 127 / 128, rel=1e-12)


def test_two_node_data_parallelism_is_bound_by_nvlink() -> None:
    # Scaling book, gpus, question 5: over exactly 2 nodes the node-level reduction, not the
    # cross-node one, is the bottleneck.
    assert parallelism.dp_hiding_batch("H100", 16) == parallelism.dp_hiding_batch("H100", 8)


def test_llama_3_405b_step_time_is_a_plausible_floor() -> None:
    # Llama 3, Table 4: 430 TFLOP/s per GPU (43% MFU) is 1.45e6 tokens/s on 8,192 H100.
    spec = get_model(LLAMA_405B)
    published_tokens_per_s = LLAMA3_TFLOPS_PER_GPU * 8192 / spec.training_flops_per_token()
    assert published_tokens_per_s == pytest.approx(1.45e6, rel=1e-2)
    assert LLAMA3_TFLOPS_PER_GPU / get_chip("H100").peak() == pytest.approx(0.43, abs=0.005)
    step = parallelism.training_step(
        LLAMA_405B, LLAMA3_LAYOUT, "H100", LLAMA3_BATCH, microbatches=32
    )
    # A floor at the datasheet peak must beat the measurement, but not absurdly: with the
    # 32% bubble of PP16 over 32 microbatches and the TP all-reduces it stays under 2x.
    assert published_tokens_per_s < float(step.tokens_per_s) < 2 * published_tokens_per_s
    # The kernel efficiency that would close the gap is what tuned H100 matmuls reach
    # (reference.md: ~67% on H800 for DeepGEMM bf16).
    implied = 0.43 / float(step.mfu_no_overlap)
    assert 0.6 < implied < 0.85
    # Every communication of that layout hides under compute: it is compute-bound.
    assert float(step.comm_s) < float(step.compute_s)
    links = {kind: c.link for kind, c in step.communication.items()}
    assert links == {"DP": "scale-out", "TP": "scale-up", "PP": "scale-out", "EP": "none"}


def test_llama_3_405b_layout_fits_an_h100_but_only_just() -> None:
    # Llama 3 trained this layout on 80 GB H100s; by our count its busiest stage (the second:
    # 15 microbatches in flight on 8 layers) needs ~77 GB with every activation stored.
    memory = parallelism.training_memory(LLAMA_405B, LLAMA3_LAYOUT, LLAMA3_BATCH, microbatches=32)
    assert memory.fits("H100")
    assert 70e9 < float(memory.total_bytes) < 80e9
    memory.require_fit("H100")  # does not raise


def test_pipeline_bubble_of_the_llama_3_layout() -> None:
    # (p - 1) / (m + p - 1) with p = 16, m = 32 (reference.md formula).
    assert parallelism.pipeline_bubble_fraction(16, 32) == pytest.approx(15 / 47, rel=1e-12)
    assert parallelism.pipeline_bubble_fraction(16, 32, 2) == pytest.approx(15 / 79, rel=1e-12)


def test_activation_memory_matches_korthikanti() -> None:
    # Korthikanti, eq. 1 with FlashAttention (no 5as/h term): 34 s b h bytes per layer for a
    # GPT layer with F = 4h. Llama-3-70B (SwiGLU, F = 3.5h, GQA, no dropout) comes to 33.5 h.
    per_layer = parallelism.activation_bytes_per_token(LLAMA_70B) / 80
    assert per_layer == pytest.approx(34 * 8192, rel=3e-2)
    assert per_layer == 2 * (4 * 8192 + 2 * 64 * 128 + 2 * 8 * 128 + 3 * 28672)


# ---- the layout ---------------------------------------------------------------------------
def test_layout_counts_and_names() -> None:
    layout = Layout.for_cluster(1024, tp=8, pp=4, zero_stage=1)
    assert (layout.dp, layout.n_gpus) == (32, 1024)
    assert str(layout) == "TP8 PP4 DP32 ZeRO-1"
    assert str(Layout(dp=1024, zero_stage=3)) == "DP1024 ZeRO-3"
    assert str(Layout(ep=8, tp=2)) == "TP2 EP8 DP1"
    assert layout.validate(LLAMA_70B, 1024) is get_model(LLAMA_70B)


def test_groups_follow_the_placement() -> None:
    # TP innermost: 8 GPUs of a node. PP neighbours are 8 apart: one per node.
    placed = parallelism.groups(Layout(dp=16, tp=8, pp=8), "H100")
    assert (placed["TP"].size, placed["TP"].link) == (8, "scale-up")
    assert (placed["PP"].per_domain, placed["PP"].link) == (1, "scale-out")
    assert (placed["DP"].size, placed["DP"].link) == (16, "scale-out")
    # Pure DP over 1,024 GPUs: 8 per node, two levels.
    dp = parallelism.groups(Layout(dp=1024), "H100")["DP"]
    assert (dp.per_domain, dp.n_domains, dp.link) == (8, 128, "scale-up + scale-out")
    # A pipeline inside one node, and everything inside one NVL72 rack.
    assert parallelism.groups(Layout(dp=2, pp=4), "H100")["PP"].link == "scale-up"
    rack = parallelism.groups(Layout(dp=9, tp=8), "GB200-NVL72")
    assert rack["DP"].link == "scale-up"
    # The dense-gradient group of an MoE layout spans EP and DP.
    moe = parallelism.groups(Layout(dp=2, ep=8), "H100")
    assert (moe["EP"].link, moe["DP"].size, moe["DP"].link) == (
        "scale-up",
        16,
        "scale-up + scale-out",
    )


@pytest.mark.parametrize(
    ("layout", "model", "n_gpus", "message"),
    [
        (Layout(tp=3), LLAMA_70B, None, "tp=3 does not divide Llama-3-70B's n_heads=64"),
        (Layout(pp=3), LLAMA_70B, None, "pp=3 does not divide Llama-3-70B's 80 pipeline slots"),
        (Layout(pp=16), LLAMA_405B, None, "embedding_as_layers=True"),
        (Layout(pp=8, virtual_stages=3), LLAMA_70B, None, "pp\\*virtual_stages=24"),
        (Layout(ep=2), LLAMA_70B, None, "ep=2 needs a mixture-of-experts model"),
        (Layout(ep=3), "Mixtral-8x7B", None, "ep=3 does not divide Mixtral-8x7B's n_experts=8"),
        (Layout(tp=8, dp=128), LLAMA_70B, 1000, "n_gpus=1000"),
        (Layout(tp=32), "Llama-2-13B", None, "tp=32 does not divide"),
    ],
)
def test_bad_layouts_name_the_degree(
    layout: Layout, model: str, n_gpus: int | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        layout.validate(model, n_gpus)


def test_kv_heads_and_tp_must_divide_one_another() -> None:
    shape = get_model(LLAMA_70B).__dict__ | {"name": "odd", "n_heads": 48, "n_kv_heads": 12}
    model = ModelConfig(**shape)
    Layout(tp=4).validate(model)  # 12 KV heads over 4: fine
    with pytest.raises(ValueError, match="tp=8 and odd's n_kv_heads=12 must divide"):
        Layout(tp=8).validate(model)


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: Layout(tp=0), ValueError, "tp must be >= 1"),
        (lambda: Layout(dp=2.0), TypeError, "dp must be an integer"),
        (lambda: Layout(zero_stage=4), ValueError, "zero_stage must be one of"),
        (lambda: Layout(zero_stage=True), TypeError, "zero_stage must be an integer"),
        (lambda: Layout(embedding_as_layers=1), TypeError, "embedding_as_layers"),
        (lambda: Layout.for_cluster(1000, tp=8, pp=16), ValueError, "n_gpus=1000 is not divisible"),
        (lambda: Layout().degree("cp"), ValueError, "unknown axis 'cp'"),
    ],
)
def test_bad_layout_values(build, error: type[Exception], message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=message):
        build()


# ---- memory -----------------------------------------------------------------------------------
def test_model_state_by_zero_stage() -> None:
    # Ψ = 1e9 over 8 replicas: stage 1 shards the 12 optimizer bytes, 2 also the 2 gradient
    # bytes, 3 also the 2 weight bytes.
    totals = [float(parallelism.model_state_bytes(1e9, 8, s).total_bytes) for s in range(4)]
    assert totals == pytest.approx([16e9, 4e9 + 1.5e9, 2e9 + 1.75e9, 2e9])


def test_pure_dp_of_a_70b_model_does_not_fit_and_says_by_how_much() -> None:
    memory = parallelism.training_memory(LLAMA_70B, Layout(dp=1024), BATCH_4M, microbatches=8)
    assert not memory.fits("H100")
    over = -float(memory.headroom_bytes("H100"))
    assert over == pytest.approx(16 * 70.55e9 + float(memory.activations_bytes) - 80e9, rel=1e-3)
    message = r"needs 1,140 GB per GPU .* holds 80 GB: 1,060 GB \(1,325%\) too much"
    with pytest.raises(DoesNotFitError, match=message):
        memory.require_fit("H100", "DP1024")
    assert issubclass(DoesNotFitError, ValueError)


def test_training_memory_of_tp8_zero1() -> None:
    layout = Layout(dp=128, tp=8, zero_stage=1)
    memory = parallelism.training_memory(LLAMA_70B, layout, BATCH_4M, microbatches=8)
    P = get_model(LLAMA_70B).total_params
    assert float(memory.weights_bytes) == pytest.approx(2 * P / 8)
    assert float(memory.grads_bytes) == pytest.approx(2 * P / 8)
    assert float(memory.optimizer_bytes) == pytest.approx(12 * P / 1024)
    # 4M tokens over 128 replicas and 8 microbatches: 4,096 tokens, all 80 layers, split by TP.
    per_token = parallelism.activation_bytes_per_token(LLAMA_70B)
    assert float(memory.activations_bytes) == pytest.approx(4096 * per_token / 8)


def test_a_full_pipeline_holds_as_many_activations_as_one_gpu() -> None:
    # 1F1B: the first stage keeps pp microbatches in flight on L / pp layers.
    flat = parallelism.training_memory(LLAMA_70B, Layout(dp=128, tp=8), BATCH_4M, microbatches=8)
    piped = parallelism.training_memory(
        LLAMA_70B, Layout(dp=16, tp=8, pp=8), BATCH_4M, microbatches=8
    )
    # Same microbatch per GPU (dp shrinks 8x, so tokens per microbatch grow 8x): compare per
    # microbatch token: the piped one holds 8 microbatches x 10 layers = 80 layer-microbatches.
    per_micro_flat = float(flat.activations_bytes) / (BATCH_4M / 128 / 8)
    per_micro_piped = float(piped.activations_bytes) / (BATCH_4M / 16 / 8)
    assert per_micro_piped == pytest.approx(per_micro_flat, rel=1e-12)


def test_activation_modes_for_one_microbatch() -> None:
    per_token = parallelism.activation_bytes_per_token(LLAMA_70B)
    a, D = per_token / 80, 8192 * 2
    stored = parallelism.activation_memory_bytes(LLAMA_70B, 8192, "stored")
    checkpointed = parallelism.activation_memory_bytes(LLAMA_70B, 8192, "checkpointed")
    reversible = parallelism.activation_memory_bytes(LLAMA_70B, 8192, "reversible")
    assert stored == pytest.approx(8192 * 80 * a)
    assert checkpointed == pytest.approx(8192 * (80 * D + a))
    assert reversible == pytest.approx(8192 * (2 * D + a))
    assert reversible < checkpointed < stored
    # Depth: reversible layers do not grow with it, the others do.
    deeper = {
        mode: parallelism.activation_memory_bytes(LLAMA_70B, 8192, mode, n_layers=160)
        for mode in parallelism.ACTIVATION_MODES
    }
    assert deeper["reversible"] == pytest.approx(reversible)
    assert deeper["stored"] == pytest.approx(2 * stored)
    assert parallelism.recompute_flops_fraction("reversible") == pytest.approx(1 / 3)
    assert parallelism.recompute_flops_fraction("stored") == 0.0


def test_serving_memory_tp_divides_kv_pp_does_not() -> None:
    kv_per_token = get_model(LLAMA_70B).kv_bytes_per_token()  # 327,680 B
    one = parallelism.serving_memory(LLAMA_70B, Layout(), 64, 8192)
    tp8 = parallelism.serving_memory(LLAMA_70B, Layout(tp=8), 64, 8192)
    pp8 = parallelism.serving_memory(LLAMA_70B, Layout(pp=8), 64, 8192)
    assert float(one.kv_bytes) == pytest.approx(64 * 8192 * kv_per_token)
    assert float(tp8.kv_bytes) == pytest.approx(float(one.kv_bytes) / 8)
    assert float(pp8.kv_bytes) == pytest.approx(float(one.kv_bytes))  # 8 microbatches x 1/8
    assert float(tp8.weights_bytes) == pytest.approx(float(pp8.weights_bytes))
    # With only one microbatch in flight PP would divide the KV, but leave 7 stages idle.
    lone = parallelism.serving_memory(LLAMA_70B, Layout(pp=8), 64, 8192, microbatches_in_flight=1)
    assert float(lone.kv_bytes) == pytest.approx(float(one.kv_bytes) / 8)
    # Beyond its 8 KV heads TP replicates them: TP16 holds as much KV as TP8.
    tp16 = parallelism.serving_memory(LLAMA_70B, Layout(tp=16, pp=1), 64, 8192)
    assert float(tp16.kv_bytes) == pytest.approx(float(tp8.kv_bytes))
    # MLA keeps one latent per token, which every TP rank needs.
    assert parallelism.kv_shards("DeepSeek-V3", 8) == 1


def test_max_decode_batch_on_8_h100() -> None:
    room = 80e9 - 2 * get_model(LLAMA_70B).total_params / 8
    per_sequence = 8192 * 327680
    assert parallelism.max_decode_batch(LLAMA_70B, Layout(tp=8), "H100", 8192) == np.floor(
        room / (per_sequence / 8)
    )
    assert parallelism.max_decode_batch(LLAMA_70B, Layout(pp=8), "H100", 8192) == np.floor(
        room / per_sequence
    )
    contexts = np.array([1024.0, 8192.0])
    batches = parallelism.max_decode_batch(LLAMA_70B, Layout(tp=8), "H100", contexts)
    assert batches.shape == (2,) and batches[0] > batches[1]
    # One H100 cannot even hold the weights: no batch fits.
    assert parallelism.max_decode_batch(LLAMA_70B, Layout(), "H100", 8192) == 0


def test_serving_rejects_a_zero_stage() -> None:
    with pytest.raises(ValueError, match="zero_stage=3 shards training state"):
        parallelism.serving_memory(LLAMA_70B, Layout(tp=8, zero_stage=3), 1, 1)


# ---- communication and the step -----------------------------------------------------------
def test_tp_all_reduces_per_layer_and_microbatch() -> None:
    layout = Layout(dp=128, tp=8)
    comm = parallelism.training_communication(LLAMA_70B, layout, "H100", BATCH_4M, microbatches=8)
    size = BATCH_4M / 128 / 8 * 8192 * 2  # tokens per microbatch x D x 2 bytes
    one = collectives.all_reduce_time_s(size, 8, "H100")
    assert float(comm["TP"].time_s) == pytest.approx(80 * 8 * 4 * one)
    assert comm["TP"].link == "scale-up"
    recomputed = parallelism.training_communication(
        LLAMA_70B, layout, "H100", BATCH_4M, microbatches=8, activations="checkpointed"
    )
    assert float(recomputed["TP"].time_s) == pytest.approx(80 * 8 * 6 * one)


def test_tp_critical_degree_is_where_tp_traffic_equals_compute() -> None:
    # On a chip whose scale-up domain holds every TP group, the ratio of TP traffic to
    # compute grows as (t - 1) and reaches 1 at tp_critical_degree.
    wide = dataclasses.replace(get_chip("H100"), name="H100-wide", scale_up_domain_size=4096)
    critical = parallelism.tp_critical_degree(LLAMA_70B, wide)
    for tp in (8, 16, 32):
        step = parallelism.training_step(LLAMA_70B, Layout(tp=tp), wide, 2**20)
        ratio = float(step.communication["TP"].time_s / step.compute_s)
        # The degree is where the bytes' time equals compute; each all-reduce's ring latency
        # (6.6 us and 2 (t-1) steps of 0.6 us) adds a little on top at this batch.
        bytes_only = (tp - 1) / (critical - 1)
        assert bytes_only < ratio < bytes_only * (1 + 1e-3)
    # Same order as the scaling book's MLP-only rule F W / C (~13 on H100 NVLink), larger
    # because attention and the backward pass add compute to hide the traffic under.
    mlp_rule = 28672 * 450e9 / 989e12
    assert mlp_rule == pytest.approx(13.0, rel=1e-2)
    assert mlp_rule < critical < 2 * mlp_rule


def test_dp_traffic_by_zero_stage() -> None:
    P = get_model(LLAMA_70B).total_params / 8  # TP8: each GPU's share
    comms = {
        stage: parallelism.training_communication(
            LLAMA_70B, Layout(dp=128, tp=8, zero_stage=stage), "H100", BATCH_4M, microbatches=4
        )["DP"]
        for stage in range(4)
    }
    flat = collectives.all_reduce_time_s(2 * P, 128, "H100")  # one GPU per node: scale-out
    base = get_chip("H100").collective_base_latency_s  # NCCL's, once per collective
    gather = (flat + base) / 2  # half the steps and bytes, the whole base
    assert float(comms[0].time_s) == pytest.approx(flat)
    assert float(comms[1].time_s) == pytest.approx(2 * gather)  # RS + AG: two collectives
    assert float(comms[2].time_s) == pytest.approx(2 * gather)
    assert float(comms[3].time_s) == pytest.approx(gather * (1 + 2 * 4))  # AG per microbatch
    assert float(comms[0].bytes_per_gpu) == pytest.approx(2 * 2 * P * 127 / 128)
    assert comms[0].link == "scale-out"


def test_pp_sends_activations_point_to_point() -> None:
    layout = Layout(dp=16, tp=8, pp=8)
    comm = parallelism.training_communication(LLAMA_70B, layout, "H100", BATCH_4M, microbatches=16)
    message = BATCH_4M / 16 / 16 * 8192 * 2 / 8
    # 2 sends per microbatch, each one step of network latency (2.7 us) plus its bytes.
    assert float(comm["PP"].time_s) == pytest.approx(2 * 16 * (message / 50e9 + 2.7e-6))
    assert comm["PP"].link == "scale-out"
    # PP sends a tiny fraction of what DP and TP move.
    assert float(comm["PP"].bytes_per_gpu) < 0.05 * float(comm["TP"].bytes_per_gpu)


def test_ep_all_to_all_inside_and_across_nodes() -> None:
    batch = 2**20
    inside = parallelism.training_communication(
        "Mixtral-8x7B", Layout(dp=16, ep=8), "H100", batch, microbatches=4
    )["EP"]
    across = parallelism.training_communication(
        "Mixtral-8x7B", Layout(dp=16, ep=8, tp=8), "H100", batch, microbatches=4
    )["EP"]  # EP stride 8: every expert rank in another node
    assert (inside.link, across.link) == ("scale-up", "scale-out")
    per_chip = batch / 128 / 4 * 2 * 4096 * 2
    one = collectives.all_to_all_time_s(per_chip, 8, "H100")
    assert float(inside.time_s) == pytest.approx(32 * 4 * 4 * one)
    # Across nodes with TP8 each GPU sends 1/8 of the tokens, but at 50 instead of 450 GB/s.
    assert float(across.time_s) > float(inside.time_s)


def test_training_step_breakdown() -> None:
    layout = Layout(dp=32, tp=8, pp=4, zero_stage=1)
    step = parallelism.training_step(
        LLAMA_70B, layout, "H100", BATCH_4M, microbatches=32, flops_efficiency=0.5
    )
    flops = 6 * get_model(LLAMA_70B).matmul_params_per_token * BATCH_4M
    assert float(step.compute_s) == pytest.approx(flops / 1024 / (0.5 * 989e12))
    assert float(step.bubble_s) == pytest.approx(float(step.compute_s) * 3 / 32)
    assert float(step.lower_s) <= float(step.upper_s)
    assert float(step.upper_s) == pytest.approx(float(step.compute_s + step.bubble_s + step.comm_s))
    # At 50% of peak with no communication the best MFU is 0.5 / (1 + 3/32).
    assert float(step.mfu) == pytest.approx(0.5 / (1 + 3 / 32), rel=1e-9)
    assert float(step.tokens_per_s) == pytest.approx(BATCH_4M / float(step.lower_s))


def test_training_step_is_vectorised_over_the_batch() -> None:
    batches = np.array([2.0**20, 2.0**22, 2.0**24])
    layout = Layout(dp=16, tp=8, pp=8, zero_stage=1)
    step = parallelism.training_step(LLAMA_70B, layout, "H100", batches, microbatches=16)
    memory = parallelism.training_memory(LLAMA_70B, layout, batches, microbatches=16)
    assert step.lower_s.shape == memory.total_bytes.shape == (3,)
    for i, B in enumerate(batches):
        one = parallelism.training_step(LLAMA_70B, layout, "H100", B, microbatches=16)
        assert step.lower_s[i] == pytest.approx(float(one.lower_s), rel=1e-12)
    assert memory.fits("H100").shape == (3,)


def test_decode_tp_versus_pp_on_one_node() -> None:
    tp8 = parallelism.layout_decode_step(LLAMA_70B, Layout(tp=8), "H100", 64, 8192)
    pp8 = parallelism.layout_decode_step(LLAMA_70B, Layout(pp=8), "H100", 64, 8192)
    # Same bytes and FLOPs per GPU and stage step: the weights 1/8 each, KV read 1/8 each.
    assert float(tp8.memory_s) == pytest.approx(float(pp8.memory_s))
    assert float(tp8.compute_s) == pytest.approx(float(pp8.compute_s))
    # PP passes each token through 8 stages one after another: 8x the latency...
    assert float(pp8.time_s) > 7 * float(tp8.time_s)
    # ...for about the same throughput at this batch (TP pays its all-reduces).
    assert float(pp8.tokens_per_s) >= float(tp8.tokens_per_s)
    assert float(tp8.tp_s) > 0 and float(pp8.tp_s) == 0


def test_decode_step_of_an_moe_reads_the_experts_its_batch_touches() -> None:
    small = parallelism.layout_decode_step("Mixtral-8x7B", Layout(ep=8), "H100", 1, 1024)
    large = parallelism.layout_decode_step("Mixtral-8x7B", Layout(ep=8), "H100", 512, 1024)
    assert float(small.memory_s) < float(large.memory_s)
    assert float(large.ep_s) > 0
    assert float(small.tokens_per_s) == pytest.approx(8 / float(small.stage_s))


def test_step_rejects_bad_knobs() -> None:
    with pytest.raises(ValueError, match="flops_efficiency must be in"):
        parallelism.training_step(LLAMA_70B, Layout(tp=8), "H100", 1e6, flops_efficiency=0)
    with pytest.raises(ValueError, match="unknown mode 'remat'"):
        parallelism.training_memory(LLAMA_70B, Layout(tp=8), 1e6, activations="remat")
    with pytest.raises(ValueError, match="global_batch_tokens must be finite and > 0"):
        parallelism.training_memory(LLAMA_70B, Layout(tp=8), 0)
    with pytest.raises(TypeError, match="microbatches must be an integer"):
        parallelism.training_step(LLAMA_70B, Layout(tp=8), "H100", 1e6, microbatches=2.5)
    with pytest.raises(ValueError, match="microbatches must be >= 1"):
        parallelism.pipeline_bubble_fraction(4, 0.5)


# ---- properties ---------------------------------------------------------------------------
powers = st.sampled_from([1, 2, 4, 8])
modes = st.sampled_from(parallelism.ACTIVATION_MODES)
microbatch_counts = st.sampled_from([1, 2, 4, 8, 16, 32])
batches = st.floats(min_value=2.0**16, max_value=2.0**25)


@SETTINGS
@given(powers, powers, powers, st.integers(0, 3), microbatch_counts, modes, batches)
def test_memory_per_gpu_never_grows_with_a_degree(
    dp: int, tp: int, pp: int, stage: int, m: int, mode: str, B: float
) -> None:
    base = Layout(dp=dp, tp=tp, pp=pp, zero_stage=stage)
    memory = parallelism.training_memory(LLAMA_70B, base, B, microbatches=m, activations=mode)
    total = float(memory.total_bytes)
    more_layouts = [
        Layout(dp=2 * dp, tp=tp, pp=pp, zero_stage=stage),
        Layout(dp=dp, tp=2 * tp, pp=pp, zero_stage=stage),
        Layout(dp=dp, tp=tp, pp=pp, zero_stage=min(stage + 1, 3)),
    ]
    if mode != "reversible":  # see the test below
        more_layouts.append(Layout(dp=dp, tp=tp, pp=2 * pp, zero_stage=stage))
    for more in more_layouts:
        grown = parallelism.training_memory(LLAMA_70B, more, B, microbatches=m, activations=mode)
        assert float(grown.total_bytes) <= total * (1 + 1e-12), str(more)
    # Never below the weights spread over every GPU.
    assert total >= 2 * get_model(LLAMA_70B).total_params / base.n_gpus


def test_reversible_activations_grow_with_the_pipeline_depth() -> None:
    # Found by the property above: reversible layers keep only each stage's output, but under
    # 1F1B a deeper pipeline holds more microbatches in flight at its first stage, so their
    # activations grow with pp (stored and checkpointed ones hold pp x L/pp layers: constant).
    def held(pp: int, mode: str) -> float:
        layout = Layout(pp=pp)
        memory = parallelism.training_memory(
            LLAMA_70B, layout, BATCH_4M, microbatches=16, activations=mode
        )
        return float(memory.activations_bytes)

    assert held(16, "reversible") > held(8, "reversible")
    assert held(16, "checkpointed") <= held(8, "checkpointed")
    assert held(16, "stored") == pytest.approx(held(8, "stored"))


@SETTINGS
@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]), st.integers(0, 3), batches)
def test_expert_parallelism_never_grows_memory(dp: int, ep: int, stage: int, B: float) -> None:
    small = parallelism.training_memory("Mixtral-8x7B", Layout(dp=dp, ep=ep, zero_stage=stage), B)
    large = parallelism.training_memory(
        "Mixtral-8x7B", Layout(dp=dp, ep=2 * ep, zero_stage=stage), B
    )
    assert float(large.total_bytes) <= float(small.total_bytes) * (1 + 1e-12)


@SETTINGS
@given(st.integers(1, 256), st.integers(1, 4096), st.integers(1, 4))
def test_bubble_is_a_fraction_that_falls_with_microbatches(p: int, m: int, v: int) -> None:
    bubble = float(parallelism.pipeline_bubble_fraction(p, m, v))
    assert 0.0 <= bubble < 1.0
    assert float(parallelism.pipeline_bubble_fraction(p, m + 1, v)) <= bubble
    assert float(parallelism.pipeline_bubble_fraction(p + 1, m, v)) >= bubble
    assert (bubble == 0.0) == (p == 1)


def test_bubble_goes_to_zero_and_is_vectorised() -> None:
    m = np.array([1.0, 10.0, 1e3, 1e6])
    bubble = parallelism.pipeline_bubble_fraction(8, m)
    assert np.all(np.diff(bubble) < 0) and bubble[-1] < 1e-5


@SETTINGS  # contexts up to Llama-3-70B's max_context: longer ones are refused
@given(powers, st.sampled_from([1, 2, 4, 8, 16]), st.floats(1.0, 512.0), st.floats(0.0, 8192.0))
def test_pp_leaves_kv_per_gpu_unchanged_and_tp_divides_it(
    tp: int, pp: int, batch: float, context: float
) -> None:
    one = float(parallelism.serving_memory(LLAMA_70B, Layout(), batch, context).kv_bytes)
    piped = float(parallelism.serving_memory(LLAMA_70B, Layout(pp=pp), batch, context).kv_bytes)
    split = float(parallelism.serving_memory(LLAMA_70B, Layout(tp=tp), batch, context).kv_bytes)
    assert piped == pytest.approx(one, rel=1e-12)
    assert split == pytest.approx(one / tp, rel=1e-12)


@SETTINGS
@given(st.floats(1.0, 1e6), st.sampled_from([2, 4, 8, 16, 80, 160]))
def test_reversible_below_checkpointed_below_stored(tokens: float, layers: int) -> None:
    held = {
        mode: float(parallelism.activation_memory_bytes(LLAMA_70B, tokens, mode, n_layers=layers))
        for mode in parallelism.ACTIVATION_MODES
    }
    assert held["reversible"] <= held["checkpointed"] <= held["stored"]


# ---- figures and widgets ------------------------------------------------------------------
def bar_widths(ax: Axes, centre: float) -> list[float]:
    """The widths of an axes' horizontal bars centred at ``centre``, in drawing order."""
    centred = (p for p in ax.patches if p.get_y() + p.get_height() / 2 == pytest.approx(centre))
    return [p.get_width() for p in centred]


def test_figures_come_from_the_package() -> None:
    from llmmath.display.plots import parallelism as plots

    layouts = [Layout(dp=128, tp=8, zero_stage=1), Layout(dp=16, tp=8, pp=8, zero_stage=1)]
    figure = plots.layouts_figure(LLAMA_70B, "H100", layouts, BATCH_4M, microbatches=[8, 32])
    ax_mem, ax_time = figure.axes
    rows = [t.get_text() for t in ax_mem.get_yticklabels()]
    assert rows == [f"{layouts[0]}\nstored, m=8", f"{layouts[1]}\nstored, m=32"]
    cap = 2 * get_chip("H100").hbm_bytes
    for y, layout, m in zip((1, 0), layouts, (8, 32), strict=True):
        shown = parallelism.layout_breakdown(LLAMA_70B, "H100", layout, BATCH_4M, microbatches=m)
        # Left: the row's memory parts stack to the layout's total (drawn up to 2x the HBM).
        drawn = sum(bar_widths(ax_mem, y))
        assert drawn == pytest.approx(min(shown.total_memory_bytes, cap) / 1e9, rel=1e-12)
        # Right: compute then bubble above, each kind of traffic below, as the model has them.
        seconds = [part[1] for part in shown.time_parts]
        assert bar_widths(ax_time, y + 0.17) == pytest.approx(seconds[:2], rel=1e-12)
        assert bar_widths(ax_time, y - 0.17) == pytest.approx(seconds[2:], rel=1e-12)
    bubble = plots.bubble_figure(stages=(4, 16))
    x, y = bubble.axes[0].lines[1].get_data()
    np.testing.assert_allclose(y, parallelism.pipeline_bubble_fraction(16, np.asarray(x)))
    serving = plots.serving_figure(LLAMA_70B, "H100", [Layout(tp=8), Layout(pp=8)])
    assert [line.get_label() for line in serving.axes[0].lines[:2]] == ["TP8 DP1", "PP8 DP1"]
    reversible = plots.reversible_figure(LLAMA_70B)
    assert [line.get_label().split(":")[0] for line in reversible.axes[0].lines[:3]] == list(
        parallelism.ACTIVATION_MODES
    )


def test_explorer_draws_a_layout_and_rejects_a_bad_one() -> None:
    from llmmath.display.plots import parallelism as plots

    explorer = plots.ParallelismExplorer()
    explorer.update(layout=Layout(dp=16, tp=8, pp=8, zero_stage=1), microbatches=16)
    first = explorer.png()
    assert first.startswith(b"\x89PNG")
    assert "TP8 PP8 DP16 ZeRO-1" in explorer.time_title.get_text()
    step = parallelism.training_step(
        LLAMA_70B, Layout(dp=16, tp=8, pp=8, zero_stage=1), "H100", BATCH_4M, microbatches=16
    )
    assert explorer.time_bars[1].get_x() + explorer.time_bars[1].get_width() == pytest.approx(
        float(step.bubble_s)
    )
    assert explorer.time_bars[2].get_hatch() == plots.SCALE_OUT_HATCH  # DP crosses nodes
    assert explorer.time_bars[3].get_hatch() is None  # TP stays on NVLink
    explorer.update(layout=Layout(dp=16, tp=8, pp=8, zero_stage=1), microbatches=64)
    assert explorer.png() != first
    with pytest.raises(ValueError, match="tp=3 does not divide"):
        explorer.update(layout=Layout(tp=3))


class _LabelledFrames:
    """Stands in for ParallelismExplorer: each frame's bytes name the setting it shows."""

    def __init__(self) -> None:
        self.setting = ""

    def update(self, **kw: object) -> None:
        keys = ("model", "chip", "layout", "global_batch_tokens", "microbatches", "activations")
        self.setting = "|".join(str(kw[k]) for k in keys)

    def png(self) -> bytes:
        return self.setting.encode()


def test_static_explorer_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmmath.display.widgets import common
    from llmmath.display.widgets import parallelism as widgets

    monkeypatch.setattr(widgets, "ParallelismExplorer", _LabelledFrames)
    spec = widgets.declaration()
    box = common.static_explorer(spec)
    n_layouts, n_micro = len(widgets.STATIC_LAYOUTS), len(widgets.MICROBATCHES)
    assert spec.frame_count() == n_layouts * n_micro * 3 <= 150  # the CONTRIBUTING budget
    i, j, k = 4, 2, 1
    leaf = box.frames[i, j, k]
    expected = (
        f"Llama-3-70B|H100|{widgets.STATIC_LAYOUTS[i]}|{widgets.STATIC_BATCH_TOKENS}|"
        f"{widgets.MICROBATCHES[j]}|{parallelism.ACTIVATION_MODES[k]}"
    )
    assert bytes(leaf.value) == expected.encode()
    c = box.controls
    assert (c["layout"].index, c["microbatches"].value, c["activations"].value) == (2, 8, "stored")
    assert c["layout"].value == widgets.STATIC_LAYOUTS[2]
    assert box.start()[:2] == (2, 3)  # the layout, then the microbatches: shown first


def test_live_explorer_redraws_and_explains_a_bad_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    import ipywidgets as w

    from llmmath.display.widgets import parallelism as widgets

    monkeypatch.setenv("LLMMATH_STATIC_WIDGETS", "0")
    box = widgets.parallelism_explorer()
    dp, tp, pp = (box.controls[name] for name in ("dp", "tp", "pp"))
    status, image = (next(c for c in box.children if isinstance(c, t)) for t in (w.HTML, w.Image))
    frame = bytes(image.value)
    assert "1,024 GPUs" in status.value
    pp.value = 4
    assert bytes(image.value) != frame and "4,096 GPUs" in status.value
    frame = bytes(image.value)
    pp.value = 32  # 80 layers do not split into 32 stages
    assert "pp=32 does not divide" in status.value
    assert bytes(image.value) == frame  # the last good frame stays
    tp.value, pp.value, dp.value = 8, 1, 128
    assert "TP8 DP128 ZeRO-1" in status.value


# ---- long-context prefill: context parallelism (issue 32) -----------------------------------
def test_context_parallel_prefill_by_hand() -> None:
    # Llama 3.1 405B, one 128K prompt over CP16 x TP8 on H100 (one CP rank per node).
    spec, h100 = get_model(LLAMA_405B), get_chip("H100")
    S, cp, tp = 131072, 16, 8
    r = parallelism.context_parallel_prefill(spec, h100, S, cp, tp=tp)
    C, gpus = 989e12, cp * tp
    L, N, K, H = 126, 128, 8, 128
    matmul = 2 * spec.matmul_params_per_token * S / gpus / C
    # Causal attention: token i attends to its i predecessors, QK^T and AV, 2 * 2H FLOPs each.
    attention = L * N * 4 * H * S * (S - 1) / 2 / gpus / C
    assert float(r.matmul_s) == pytest.approx(matmul, rel=1e-12)
    assert float(r.attention_s) == pytest.approx(attention, rel=1e-12)
    # Each GPU holds 1 of the 8 KV heads: 2 K H b / tp = 512 bytes per token and layer.
    kv_layer = S * 2 * K * H * 2 / tp
    assert float(r.kv_bytes_per_gpu) == pytest.approx(L * kv_layer * 15 / 16, rel=1e-12)
    # One all-gather per layer over 16 nodes, each GPU its own 50 GB/s NIC: NCCL's base
    # latency once and 15 steps of 2.7 us.
    per_layer = 6.6e-6 + 15 * 2.7e-6 + kv_layer * 15 / 16 / 50e9
    assert float(r.kv_s) == pytest.approx(L * per_layer, rel=1e-12)
    # The ring hides the KV traffic under attention; the all-gather adds it to the step.
    assert float(r.ring_s) == pytest.approx(float(r.compute_s), rel=1e-12)
    assert float(r.all_gather_s) == pytest.approx(float(r.compute_s + r.kv_s), rel=1e-12)


def test_attention_grows_as_the_square_of_the_prompt() -> None:
    S = np.array([8192.0, 16384.0, 32768.0, 65536.0])
    r = parallelism.context_parallel_prefill(LLAMA_405B, "H100", S, 8)
    np.testing.assert_allclose(r.matmul_s[1:] / r.matmul_s[:-1], 2.0, rtol=1e-12)
    np.testing.assert_allclose(
        r.attention_s[1:] / r.attention_s[:-1], S[1:] * (S[1:] - 1) / (S[:-1] * (S[:-1] - 1))
    )
    assert np.all(np.diff(r.attention_share) > 0)
    # Attention is a few percent of an 8K prefill of 405B and 40% of a 128K one.
    long = parallelism.context_parallel_prefill(LLAMA_405B, "H100", 131072, 16)
    assert 0.03 < float(r.attention_share[0]) < 0.05 < 0.39 < float(long.attention_share) < 0.41


def test_cp_hiding_tokens_is_where_the_ring_breaks_even() -> None:
    # GQA over one CP rank per node: (K / N) b (C / W_out) (cp - 1) / cp.
    x = parallelism.cp_hiding_tokens(LLAMA_405B, "H100", 16)
    assert x == pytest.approx(8 / 128 * 2 * 989e12 / 50e9 * 15 / 16, rel=1e-12)
    # There the KV bytes (latency left out) take exactly as long as the attention.
    S = 16 * x + 1
    r = parallelism.context_parallel_prefill(LLAMA_405B, "H100", round(S), 16)
    bytes_s = float(r.kv_bytes_per_gpu) / 50e9
    assert bytes_s / float(r.attention_s) == pytest.approx(1.0, rel=1e-3)
    # Twice the chunk hides it; half the chunk does not (the latency is included here).
    assert (
        parallelism.context_parallel_prefill(LLAMA_405B, "H100", round(32 * x), 16).kv_to_attention
        < 1
    )
    assert (
        parallelism.context_parallel_prefill(LLAMA_405B, "H100", round(8 * x), 16).kv_to_attention
        > 1
    )


def test_cp_inside_one_node_uses_nvlink() -> None:
    # TP1 x CP8 fits one HGX node: each layer's gather runs over NVLink (450 GB/s, 7 steps of
    # 0.6 us), every GPU holding all 8 KV heads, 4,096 bytes per token and layer.
    S = 32768
    inside = parallelism.context_parallel_prefill(LLAMA_405B, "H100", S, 8, tp=1)
    per_layer = 6.6e-6 + 7 * 0.6e-6 + S * 4096 * 7 / 8 / 450e9
    assert float(inside.kv_s) == pytest.approx(126 * per_layer, rel=1e-12)


def test_cp_refuses_a_group_that_does_not_fill_domains_evenly() -> None:
    # TP2 leaves room for 4 CP ranks in a node of 8; 6 ranks do not fill nodes evenly.
    with pytest.raises(ValueError, match="cp=6"):
        parallelism.context_parallel_prefill(LLAMA_70B, "H100", 8192, 6, tp=2)
    with pytest.raises(ValueError, match="prompt_tokens"):
        parallelism.context_parallel_prefill(LLAMA_70B, "H100", 10**6, 8)


def test_meta_128k_prefill_is_above_the_floor() -> None:
    # Yang et al. 2024 (arXiv 2411.01783), abstract: 128K tokens of Llama 3 405B prefilled in
    # 3.8 s on 128 H100 (16 nodes). The floor at either peak must sit below it.
    measured = serving_systems.measured("llama3-405b-prefill-128k-128xh100").value
    assert measured == 3.8
    for dtype in ("bf16", "fp8"):
        r = parallelism.context_parallel_prefill(
            LLAMA_405B, "H100", 131072, 16, compute_dtype=dtype
        )
        assert float(r.ring_s) < measured
    # And not absurdly far below: the bf16 floor is over a third of the measured time.
    bf16 = parallelism.context_parallel_prefill(LLAMA_405B, "H100", 131072, 16)
    assert 0.3 < float(bf16.ring_s) / measured < 1


def test_llama3_long_context_layout_adds_up() -> None:
    # Llama 3, Table 4: 16,384 GPUs as TP8 CP16 PP16 DP8, 380 TFLOP/s per GPU = 38% bf16 MFU.
    run = data.table("systems")["llama3_long_context"]
    assert run["tp"] * run["cp"] * run["pp"] * run["dp"] == run["gpus"] == 16384
    mfu = run["tflops_per_gpu"] * 1e12 / get_chip("H100").peak("bf16")
    assert mfu == pytest.approx(run["bf16_mfu"], abs=0.005)  # 38%, printed to two digits


# ---- FP8 training: which peak an MFU counts against (issue 32) ------------------------------
def test_deepseek_v3_implied_mfu_by_hand() -> None:
    # DeepSeek-V3 report, Table 1 and section 1: 2,664K H800 GPU-hours of pre-training on
    # 14.8T tokens (180K GPU-hours per trillion); H800 = H100 SXM FLOP/s.
    run = data.table("systems")["deepseek_v3_training"]
    assert run["pretraining_gpu_hours"] == pytest.approx(180e3 * 14.8, rel=1e-3)
    assert (
        run["pretraining_gpu_hours"]
        + run["context_extension_gpu_hours"]
        + run["post_training_gpu_hours"]
    ) == pytest.approx(2.788e6, rel=1e-12)
    spec = get_model("DeepSeek-V3")
    flops = 6 * spec.matmul_params_per_token * 14.8e12
    seconds = 2664e3 * 3600
    bf16 = number_formats.implied_mfu(spec, 14.8e12, 2664e3, "H100")
    fp8 = number_formats.implied_mfu(spec, 14.8e12, 2664e3, "H100", "fp8")
    assert bf16.model_flops == pytest.approx(flops, rel=1e-12)
    assert bf16.mfu == pytest.approx(flops / seconds / 989e12, rel=1e-12)
    # The same FLOP rate against twice the peak: half the MFU.
    assert fp8.flop_per_s_per_gpu == bf16.flop_per_s_per_gpu
    assert fp8.mfu == pytest.approx(bf16.mfu * 989e12 / 1.979e15, rel=1e-12)
    assert 0.33 < bf16.mfu < 0.35 and 0.16 < fp8.mfu < 0.18
    # Counting causal attention over 4K sequences adds 3 x its forward FLOPs (~14%).
    with_attention = number_formats.implied_mfu(spec, 14.8e12, 2664e3, "H100", sequence_tokens=4096)
    extra = 3 * float(spec.attention_flops_per_token(4095 / 2)) * 14.8e12
    assert with_attention.model_flops == pytest.approx(flops + extra, rel=1e-12)


def test_fp8_doubles_the_compute_rate_and_every_hiding_threshold() -> None:
    layout = Layout(dp=128, tp=8, zero_stage=1)
    steps = {
        d: parallelism.training_step(LLAMA_70B, layout, "H100", BATCH_4M, compute_dtype=d)
        for d in ("bf16", "fp8")
    }
    assert float(steps["fp8"].compute_s) == pytest.approx(
        float(steps["bf16"].compute_s) / 2, rel=1e-3
    )
    assert float(steps["fp8"].comm_s) == float(steps["bf16"].comm_s)
    bf16 = parallelism.dp_hiding_batch("H100", 1024)
    fp8 = parallelism.dp_hiding_batch("H100", 1024, compute_dtype="fp8")
    assert fp8 == pytest.approx(2 * bf16, rel=1e-3)


# ---- the critical batch: data parallelism's ceiling (issue 43, item 6) ----------------------
def test_gradient_noise_scale_is_where_batch_noise_equals_the_signal() -> None:
    # McCandlish et al. 2018, section 2: a batch of B examples estimates the true gradient G
    # with E|g_B - G|^2 = tr(Sigma) / B, which equals |G|^2 at B = B_simple = tr(Sigma)/|G|^2.
    # Drawn per-example gradients with a known mean and covariance, measured, not assumed.
    rng = np.random.default_rng(43)
    true_gradient = np.array([0.3, -0.2, 0.1, 0.05])
    spread = np.array([1.0, 2.0, 0.5, 1.5])  # per-coordinate standard deviations
    examples = true_gradient + spread * rng.standard_normal((200_000, 4))
    trace = float(np.sum(np.var(examples, axis=0)))
    norm = float(np.sum(np.mean(examples, axis=0) ** 2))
    b_simple = parallelism.gradient_noise_scale(trace, norm)
    assert b_simple == pytest.approx(np.sum(spread**2) / np.sum(true_gradient**2), rel=0.02)
    batch = round(b_simple)
    usable = (examples.shape[0] // batch) * batch
    batch_means = examples[:usable].reshape(-1, batch, 4).mean(axis=1)
    noise = float(np.mean(np.sum((batch_means - true_gradient) ** 2, axis=1)))
    assert noise == pytest.approx(float(np.sum(true_gradient**2)), rel=0.1)


def test_batch_tradeoff_is_mccandlish_hyperbola() -> None:
    batch = np.logspace(-3, 3, 61)
    trade = parallelism.batch_tradeoff(batch * 2e6, 2e6)
    excess = (np.asarray(trade.steps_factor) - 1) * (np.asarray(trade.examples_factor) - 1)
    np.testing.assert_allclose(excess, 1.0, rtol=1e-12)
    # E = B S and B_crit = E_min / S_min: examples factor = batch ratio x steps factor.
    np.testing.assert_allclose(
        np.asarray(trade.examples_factor), batch * np.asarray(trade.steps_factor), rtol=1e-12
    )
    at_crit = parallelism.batch_tradeoff(4e6, 4e6)
    assert (at_crit.steps_factor, at_crit.examples_factor) == (2.0, 2.0)
    # Far below B_crit doubling the batch halves the steps for almost no compute; far above, it
    # doubles the compute and saves almost no step.
    small = parallelism.batch_tradeoff(np.array([0.01, 0.02]), 1.0)
    big = parallelism.batch_tradeoff(np.array([100.0, 200.0]), 1.0)
    assert small.steps_factor[1] / small.steps_factor[0] == pytest.approx(0.5, abs=0.01)
    assert small.examples_factor[1] / small.examples_factor[0] == pytest.approx(1.0, abs=0.011)
    assert big.examples_factor[1] / big.examples_factor[0] == pytest.approx(2.0, abs=0.011)
    assert big.steps_factor[1] / big.steps_factor[0] == pytest.approx(1.0, abs=0.006)


def test_llama3_batch_forces_model_parallelism_at_16k_gpus() -> None:
    # Llama 3 (arXiv 2407.21783): 16M tokens in sequences of 8,192 are 2,048 sequences.
    assert parallelism.data_parallel_ceiling(16 * 2**20, 8192) == 2048
    assert parallelism.min_model_parallel_degree(16384, 16 * 2**20, 8192) == 8
    assert parallelism.min_model_parallel_degree(2048, 16 * 2**20, 8192) == 1
    assert parallelism.min_model_parallel_degree(2049, 16 * 2**20, 8192) == 2  # rounds up
    # At 128K tokens a sequence the same batch is 128 sequences.
    assert parallelism.min_model_parallel_degree(16384, 16 * 2**20, 131072) == 128


@pytest.mark.parametrize(
    "row", ["llama3_pretraining_8k", "llama3_pretraining_8k_16k", "llama3_long_context"]
)
def test_table_4_layouts_are_the_fewest_chips_per_replica_for_their_batch(row: str) -> None:
    # Table 4: with the sequences per replica Meta ran (the pipeline's microbatches), the
    # smallest model-parallel degree the batch allows is exactly TP x CP x PP of the row.
    run = data.table("systems")[row]
    batch = run.get("tokens_per_step", 16 * 2**20)
    per_replica = batch // run["sequence_tokens"] // run["dp"]
    model_parallel = run["tp"] * run.get("cp", 1) * run["pp"]
    assert model_parallel * run["dp"] == run["gpus"]
    degree = parallelism.min_model_parallel_degree(
        run["gpus"], batch, run["sequence_tokens"], per_replica
    )
    assert degree == model_parallel


def test_llama3_batch_ramp_doubles_twice() -> None:
    ramp = data.table("systems")["llama3_batch_schedule"]
    tokens, sequences = ramp["tokens_per_step"], ramp["sequence_tokens"]
    assert tokens == [4 * 2**20, 8 * 2**20, 16 * 2**20]
    assert sequences == [4096, 8192, 8192]
    assert ramp["starts_after_tokens"] == [0.0, 252e6, 2.87e12]
    # The first two stages hold the same 1,024 sequences; the third doubles them.
    ceilings = [
        parallelism.data_parallel_ceiling(t, s) for t, s in zip(tokens, sequences, strict=True)
    ]
    assert ceilings == [1024, 1024, 2048]


def test_data_parallel_ceiling_refuses_a_batch_below_one_replica() -> None:
    with pytest.raises(ValueError, match="sequences_per_replica"):
        parallelism.data_parallel_ceiling(4096, 8192)
    with pytest.raises(ValueError, match="sequence_tokens"):
        parallelism.min_model_parallel_degree(1024, 2**20, 8192.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="critical_batch"):
        parallelism.batch_tradeoff(1e6, 0.0)

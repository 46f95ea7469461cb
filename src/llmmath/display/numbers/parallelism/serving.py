"""The parallelism chapter's numbers, its last part (``numbers.parallelism`` gathers them):
serving (why pipelining loses, expert parallelism inside a rack), collective latency under
tensor-parallel decode, and the closing check-yourself questions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from IPython.display import Markdown

from llmmath import parallelism
from llmmath.beyond import serving_systems
from llmmath.core import placement, training, training_memory
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.placement import Layout
from llmmath.core.serving import DecodeStep
from llmmath.core.setting import Setting
from llmmath.display import pages
from llmmath.display.numbers import shown
from llmmath.display.numbers.parallelism.ways import Basics
from llmmath.validation import published


@dataclass(frozen=True)
class Serving:
    """Serving: why pipelining loses; expert parallelism stays inside a rack."""

    layouts: dict[str, Layout]  # tp8, pp8, tp4pp2 on one node of 8 H100
    kv_gb: dict[str, float]  # KV per GPU, 64 sequences of 8,192 tokens
    max_batch: dict[str, float]  # the largest batch per step that fits
    weights_per_gpu: float  # bytes
    caption: str
    serve_gb: str  # Llama-3-70B's weights in bf16
    weights_per_gpu_gb: str
    tp8_kv_gb: str
    pp8_kv_gb: str
    llama_kv_heads: int
    tp8_max_batch: str
    pp8_max_batch: str
    tp8_rate: str
    pp8_rate: str
    tp8_latency_ms: str
    pp8_latency_ms: str
    ds_h100_ep_ms: str
    ds_h100_stage_ms: str  # the serial estimate
    ds_h100_floor_ms: str  # perfect overlap
    ds_nvl72_ep_ms: str
    ds_nvl72_stage_ms: str
    ds_nvl72_floor_ms: str


@dataclass(frozen=True)
class Latency:
    """Collective latency under tensor-parallel decode; PaLM on 64 TPU v4."""

    setting: Setting  # Llama-3-70B as TP8 at batch 1, 2,048 tokens, serial
    tp8_b1: serving_systems.TPBreakdown
    tp16_b1: serving_systems.TPBreakdown
    nccl_measured: serving_systems.Measured
    one_shot: serving_systems.Measured
    palm_model: ModelConfig
    tp_table: str  # the page's table, TP2 to TP16
    base_us: str
    alpha_us: str
    one_ar_us: str
    n_all_reduces: int
    tp8_alpha_ms: str
    tp8_weights_ms: str
    tp8_alpha_share: str
    tp8_serial_ms: str
    tp16_gain: str
    tp8_b256_bytes_ms: str
    nccl_measured_us: str
    nccl_measured_ms: str
    one_shot_us: str
    palm_measured_ms: str
    palm_floor_ms: str
    palm_gap_ms: str
    palm_layers: str
    palm_all_reduces: int
    tpu_alpha_us: str
    palm_ring_ms: str
    palm_torus_ms: str
    palm_torus_share: str
    palm_ring_share: str
    tp16_weights_ms: str
    tp16_alpha_ms: str
    tp16_serial_ms: str


@dataclass(frozen=True)
class CheckYourself:
    """Check yourself 1-3 and the graded exercise."""

    question1_params_b: str  # Llama-2-13B
    question1_zero1_held: str  # bf16 weights and gradients, whole
    question1_zero1_shard: str  # the optimizer's 12 bytes, sharded over 64
    question1_zero1: str
    question1_zero2_held: str
    question1_zero2_shard: str
    question1_zero2: str
    question1_zero3: str
    question2_bubble: str  # 16 stages, 48 microbatches
    question2_enough: int
    question3_kv_token: str  # Llama-3-70B's KV bytes per token
    question3_batch_gb: str  # 32 sequences of 32,768 tokens
    question3_tp8_gb: str
    question3_tp8_total_gb: str
    question3_stage_layers: int
    exercise: Markdown


def _expert_parallel_steps() -> dict[str, DecodeStep]:
    """DeepSeek-V3 as EP64, fp8 weights, 128 sequences of 4,096 tokens, serial, by machine."""
    return {
        key: parallelism.layout_decode_step(
            "DeepSeek-V3", Layout(ep=64), chip, 128, 4096, weight_dtype="fp8", overlap="none"
        )
        for key, chip in (("h100", "H100"), ("nvl72", "GB200-NVL72"))
    }


def build_serving(basics: Basics) -> Serving:
    llama, h100 = basics.llama, basics.h100
    layouts = {"tp8": Layout(tp=8), "pp8": Layout(pp=8), "tp4pp2": Layout(tp=4, pp=2)}
    kv_gb = {
        name: float(placement.serving_memory(llama, layout, 64, 8192).kv_bytes / 1e9)
        for name, layout in layouts.items()
    }
    max_batch = {
        name: float(placement.max_decode_batch(llama, layout, h100, 8192))
        for name, layout in layouts.items()
    }
    fullest = {
        name: parallelism.layout_decode_step(llama, layout, h100, max_batch[name], 8192)
        for name, layout in layouts.items()
    }
    weights_per_gpu = placement.params_per_gpu(llama, layouts["tp8"]) * 2
    caption = (
        f"{llama.name} decoding 8,192-token sequences on 8 H100. Left: weights plus KV cache "
        "per GPU against the sequences per decode step; PP8's grows eight times faster than "
        "TP8's. Right: throughput of the node against the time between two tokens, from batch "
        "1 to the largest batch that fits (dot). Floors at the datasheet peak."
    )
    experts = _expert_parallel_steps()
    return Serving(
        layouts=layouts,
        kv_gb=kv_gb,
        max_batch=max_batch,
        weights_per_gpu=weights_per_gpu,
        caption=caption,
        serve_gb=shown.gb(llama.weight_bytes("bf16")),
        weights_per_gpu_gb=shown.gb(weights_per_gpu, 1),
        tp8_kv_gb=shown.fixed(kv_gb["tp8"], 1),
        pp8_kv_gb=shown.fixed(kv_gb["pp8"]),
        llama_kv_heads=llama.n_kv_heads,
        tp8_max_batch=shown.fixed(max_batch["tp8"]),
        pp8_max_batch=shown.fixed(max_batch["pp8"]),
        tp8_rate=shown.grouped(fullest["tp8"].tokens_per_s),
        pp8_rate=shown.grouped(fullest["pp8"].tokens_per_s),
        tp8_latency_ms=shown.fixed(float(fullest["tp8"].time_s * 1e3), 1),
        pp8_latency_ms=shown.fixed(float(fullest["pp8"].time_s * 1e3), 1),
        ds_h100_ep_ms=shown.fixed(float(experts["h100"].ep_s * 1e3), 1),
        ds_h100_stage_ms=shown.fixed(float(experts["h100"].stage_s * 1e3), 1),
        ds_h100_floor_ms=shown.fixed(float(experts["h100"].floor_s * 1e3), 1),
        ds_nvl72_ep_ms=shown.fixed(float(experts["nvl72"].ep_s * 1e3), 1),
        ds_nvl72_stage_ms=shown.fixed(float(experts["nvl72"].stage_s * 1e3), 1),
        ds_nvl72_floor_ms=shown.fixed(float(experts["nvl72"].floor_s * 1e3), 1),
    )


def _tp_table(llama: ModelConfig, h100: Chip) -> str:
    """The page's table: Llama-3-70B at batch 1, 2,048 tokens, TP2 to TP16, per token."""
    rows = []
    for tp in (2, 4, 8, 16):
        b = serving_systems.tp_decode_breakdown(llama, h100, tp, 1, 2048)
        rows.append(
            f"| TP{tp} | {float(b.weight_read_s) * 1e3:.2f} | {float(b.alpha_s) * 1e3:.2f} "
            f"| {float(b.tp_s - b.alpha_s) * 1e3:.3f} | {float(b.serial_s) * 1e3:.2f} "
            f"| {100 * float(b.alpha_share):.0f}% |"
        )
    return "\n".join(
        [
            "| layout | weight read (ms) | all-reduce latency (ms) | all-reduce bytes (ms) "
            "| step, serial (ms) | latency share |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )


def build_latency(basics: Basics) -> Latency:
    llama, h100 = basics.llama, basics.h100
    # The worked step: Llama-3-70B as TP8 at batch 1, serial (the batching chapter's table and
    # the intro show the same step; tests/display/test_settings_registry.py holds them equal).
    setting = Setting(Deployment(llama, h100, 8, layout=Layout(tp=8)), 2048, "none")
    n_all_reduces = llama.tp_all_reduces_per_layer * llama.n_layers
    tp8_b1 = serving_systems.tp_decode_breakdown(llama, h100, 8, 1, 2048)
    tp8_b256 = serving_systems.tp_decode_breakdown(llama, h100, 8, 256, 2048)
    tp16_b1 = serving_systems.tp_decode_breakdown(llama, h100, 16, 1, 2048)
    nccl_measured = serving_systems.measured("nccl-all-reduce-16kb-8xh100")
    one_shot = serving_systems.measured("one-shot-all-reduce-0.5mb-4xh100")
    palm_model, tpu_v4 = get_model("PaLM-540B"), get_chip("TPU-v4")
    palm = published.decode_comparison("palm-540b-decode")
    palm_all_reduces = palm_model.tp_all_reduces_per_layer * palm_model.n_layers
    palm_ring_s = serving_systems.all_reduce_latency_s(tpu_v4, (64,), palm_all_reduces)
    palm_torus_s = serving_systems.all_reduce_latency_s(tpu_v4, (4, 4, 4), palm_all_reduces)
    palm_gap_s = palm.measured - palm.floor
    return Latency(
        setting=setting,
        tp8_b1=tp8_b1,
        tp16_b1=tp16_b1,
        nccl_measured=nccl_measured,
        one_shot=one_shot,
        palm_model=palm_model,
        tp_table=_tp_table(llama, h100),
        base_us=shown.fixed(h100.collective_base_latency_s * 1e6, 1),
        alpha_us=shown.fixed(h100.scale_up_latency_s * 1e6, 2),
        one_ar_us=shown.fixed(serving_systems.all_reduce_latency_s(h100, (8,), 1) * 1e6),
        n_all_reduces=n_all_reduces,
        tp8_alpha_ms=shown.fixed(float(tp8_b1.alpha_s * 1e3), 2),
        tp8_weights_ms=shown.fixed(float(tp8_b1.weight_read_s * 1e3), 2),
        tp8_alpha_share=shown.fixed(float(100 * tp8_b1.alpha_share)),
        tp8_serial_ms=shown.fixed(float(tp8_b1.serial_s * 1e3), 2),
        tp16_gain=shown.fixed(float(tp8_b1.serial_s / tp16_b1.serial_s), 2),
        tp8_b256_bytes_ms=shown.fixed(float((tp8_b256.tp_s - tp8_b256.alpha_s) * 1e3), 2),
        nccl_measured_us=shown.fixed(nccl_measured.value * 1e6, 1),
        nccl_measured_ms=shown.fixed(nccl_measured.value * n_all_reduces * 1e3, 1),
        one_shot_us=shown.fixed(one_shot.value * 1e6),
        palm_measured_ms=shown.fixed(palm.measured * 1e3),
        palm_floor_ms=shown.fixed(palm.floor * 1e3, 1),
        palm_gap_ms=shown.fixed((palm.measured - palm.floor) * 1e3),
        palm_layers=str(palm_model.n_layers),
        palm_all_reduces=palm_all_reduces,
        tpu_alpha_us=shown.fixed(tpu_v4.scale_up_latency_s * 1e6, 1),
        palm_ring_ms=shown.fixed(palm_ring_s * 1e3, 1),
        palm_torus_ms=shown.fixed(palm_torus_s * 1e3, 1),
        palm_torus_share=shown.fixed(100 * palm_torus_s / palm_gap_s),
        palm_ring_share=shown.fixed(100 * palm_ring_s / palm_gap_s),
        tp16_weights_ms=shown.fixed(float(tp16_b1.weight_read_s * 1e3), 2),
        tp16_alpha_ms=shown.fixed(float(tp16_b1.alpha_s * 1e3), 2),
        tp16_serial_ms=shown.fixed(float(tp16_b1.serial_s * 1e3), 2),
    )


def build_check(basics: Basics, serving: Serving) -> CheckYourself:
    llama = basics.llama
    # 1: Llama-2-13B's model state over 64 data-parallel GPUs, by ZeRO stage.
    params = get_model("Llama-2-13B").total_params
    dp = 64
    state = {stage: training_memory.model_state_bytes(params, dp, stage) for stage in (1, 2, 3)}
    # 2: 16 stages.
    stages, microbatches = 16, 48
    candidates = np.arange(1, 1001)
    enough = int(candidates[training.pipeline_bubble_fraction(stages, candidates) < 0.05][0])
    # 3: Llama-3-70B's shape at 32,768 tokens (Llama 3.1's window), 32 sequences, 8 H100.
    kv_token = float(llama.kv_bytes_per_token())
    batch_kv = 32 * 32768 * kv_token
    return CheckYourself(
        question1_params_b=shown.fixed(params / 1e9, 2),
        question1_zero1_held=shown.fixed(4 * params / 1e9, 2),
        question1_zero1_shard=shown.fixed(12 * params / dp / 1e9, 2),
        question1_zero1=shown.fixed(state[1].total_bytes / 1e9, 2),
        question1_zero2_held=shown.fixed(2 * params / 1e9, 2),
        question1_zero2_shard=shown.fixed(14 * params / dp / 1e9, 2),
        question1_zero2=shown.fixed(state[2].total_bytes / 1e9, 2),
        question1_zero3=shown.fixed(state[3].total_bytes / 1e9, 2),
        question2_bubble=shown.percent(training.pipeline_bubble_fraction(stages, microbatches), 1),
        question2_enough=enough,
        question3_kv_token=shown.grouped(kv_token),
        question3_batch_gb=shown.fixed(batch_kv / 1e9, 1),
        question3_tp8_gb=shown.fixed(batch_kv / 8 / 1e9, 1),
        question3_tp8_total_gb=shown.fixed((batch_kv / 8 + serving.weights_per_gpu) / 1e9, 1),
        question3_stage_layers=llama.n_layers // 8,
        exercise=pages.exercise_link("parallelism", "the parallelism exercise"),
    )

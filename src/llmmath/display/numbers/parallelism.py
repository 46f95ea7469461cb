"""The parallelism chapter's numbers (``lessons/parallelism.md``), section by section.

Its settings:

- training: Llama-3-70B on 1,024 H100, 4M tokens (512 sequences of 8,192) per step, bf16
  weights and gradients with mixed-precision Adam, in the layouts the page names (TP8 x DP128
  ZeRO-1 the worked one, 8 microbatches);
- the links: an 8-GPU H100 node (NVLink, one NIC per GPU) and a GB200 NVL72 rack;
- a real run: Llama-3.1-405B as Meta trained it (Table 4 of the Llama 3 paper, data/systems.toml),
  with an interleaved pipeline of 2 chunks per GPU (our assumption);
- the critical batch: Llama 3's batch ramp, and a check-yourself lab (8M tokens, 24,576 H100);
- FP8: the same TP8 x DP128 step with FP8 matmuls; DeepSeek-V3's pre-training run;
- context parallelism: one 128K prompt of Llama-3.1-405B on 16 nodes of 8 H100 (TP8 x CP16);
- serving: Llama-3-70B on one node of 8 H100, 8,192-token sequences, TP8 against PP8;
  DeepSeek-V3 as EP64 with fp8 weights, 128 sequences of 4,096 tokens per GPU;
- collective latency: Llama-3-70B decoding at batch 1, 2,048 tokens, serial, TP2 to TP16 on
  H100; PaLM 540B on 64 TPU v4.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from IPython.display import Markdown

from llmmath import parallelism
from llmmath.beyond import number_formats, serving_systems
from llmmath.core import collectives, data, training
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.placement import Layout
from llmmath.core.serving import DecodeStep
from llmmath.core.setting import Setting
from llmmath.core.training import Communication, TrainingStep
from llmmath.core.training_memory import TrainingMemory
from llmmath.display import pages
from llmmath.display.numbers import shown
from llmmath.validation import published

#: Tokens per training step: 512 sequences of 8,192.
BATCH_TOKENS = 4 * 2**20


@dataclass(frozen=True)
class Basics:
    """The chapter's worked model and chips, named in the opening question."""

    llama: ModelConfig  # Llama-3-70B
    h100: Chip
    nvl72: Chip  # GB200 NVL72
    batch_tokens: int  # tokens per training step
    params: float  # Llama-3-70B's parameters
    h100_hbm_gb: str


@dataclass(frozen=True)
class Ways:
    """Ways to split a model: the links a group's traffic crosses."""

    h100_up_gbs: str  # NVLink per GPU, an H100 node
    nvl72_up_gbs: str  # NVLink per GPU, an NVL72 rack
    nic_gbs: str  # scale-out per GPU: one NIC
    node_nic_gbs: str  # a node's eight NICs together
    h100_up_over_out: str
    nvl72_up_over_out: str


@dataclass(frozen=True)
class Collectives:
    """Collectives: a ring all-reduce over 4 H100, and one over a node of 8 against its size."""

    ring_n: int
    ring_bytes: float
    ring: collectives.RingSchedule
    node_cost: collectives.AllReduceCost  # 16 kB and 1 GB over 8 H100
    sweep: collectives.AllReduceCost  # 1 kB to 10 GB over 8 H100
    nccl_protocols: dict[str, Any]  # data/systems.toml's NCCL protocol latencies
    ring_caption: str
    nccl_base_us: str
    nccl_alpha_us: str
    nccl_simple_base_us: str
    nccl_simple_alpha_us: str
    nccl_ll_share: str
    token_act_kb: str  # one token's activation, bf16
    ar8_small_bytes_us: str
    ar8_latency_us: str
    ar8_big_ms: str
    ar8_big_latency_share: str


@dataclass(frozen=True)
class Memory:
    """Memory per GPU in training: the model state and the activations."""

    tp8: Layout  # TP8 x DP128, ZeRO-1: the worked layout
    params_b: str
    adam_tb: str  # mixed-precision Adam's 16 bytes per parameter
    state_tp8_gb: str
    state_zero1_gb: str
    state_zero3_gb: str
    act_layer_kb: str  # stored activations per token per layer
    act_layer_d: str  # the same, in units of D bytes
    act_8k_gb: str  # one 8,192-token sequence through every layer
    llama_layers: int


@dataclass(frozen=True)
class Traffic:
    """What each kind sends, and over which link (4M tokens, 8 microbatches unless named)."""

    comm: dict[str, Communication]  # TP8 x DP128
    step_tp8: TrainingStep
    tp16: Layout
    comm16: dict[str, Communication]
    comm64: dict[str, Communication]
    paces: dict[int, str]  # the link that paces a TP group's all-reduce, by degree
    comm_pp: dict[str, Communication]  # TP8 x PP8 x DP16, 32 microbatches
    tp8_compute_s: str
    tp8_tp_s: str
    tp8_tp_gb: str
    tp8_dp_s: str
    tp8_dp_gb: str
    tp16_tp_s: str
    tp64_tp_s: str
    tp_limit: str  # the TP degree up to which its all-reduces hide
    tp_network_first: str
    tp_nvlink_last: str
    tp_network_first_nodes: str
    tp_nvlink_last_nodes: str
    pp8_pp_gb: str
    pp8_pp_s: str
    pp8_dp_gb: str
    dp_hiding_node: str  # the DP hiding batch inside a node
    dp_hiding_nodes: str  # across nodes of 8
    dp_hiding_flat: str  # one GPU per node, its own NIC
    tp8_replica_tokens: str
    tp8_batch_m: str
    dp256_replica_tokens: str


@dataclass(frozen=True)
class Bubble:
    """The price of a pipeline: the bubble of 16 stages."""

    stages: int
    limit: float
    enough: int  # the fewest microbatches that bring it under the limit
    caption: str


@dataclass(frozen=True)
class SideBySide:
    """Side by side: six layouts of Llama-3-70B on 1,024 H100."""

    layouts: list[Layout]
    microbatches: list[int]
    activations: list[str]
    caption: str
    fsdp_mfu: str
    pp4_mfu: str
    pp4_bubble: str


@dataclass(frozen=True)
class Llama3Run:
    """A check against a real run: Llama 3 405B, Table 4's first row."""

    layout: Layout  # TP8 x PP16 x DP64, 2 chunks per GPU
    run: dict[str, Any]  # data/systems.toml's llama3_pretraining_8k
    step: TrainingStep
    memory: TrainingMemory
    gemm: serving_systems.Measured  # the best bf16 matmul on one H100
    microbatches: int
    chunks: int
    gpus: str
    tp: int
    pp: int
    dp: int
    step_m: str
    tflops: str
    mfu: str
    bubble: str
    bubble_plain: str
    tokens_m: str
    mfu_floor: str
    mfu_floor_serial: str
    measured_m: str
    kernel_overlap: str
    kernel: str
    gemm_share: str
    gemm_tflops: str
    memory_gb: str


@dataclass(frozen=True)
class CriticalBatch:
    """How far data parallelism goes: the critical batch, Llama 3's ramp, the check yourself."""

    l3_16k: dict[str, Any]  # data/systems.toml's llama3_pretraining_8k_16k
    l3_long: dict[str, Any]  # data/systems.toml's llama3_long_context
    batch_tokens: int  # Llama 3's last batch
    sequence_tokens: int  # its sequence
    cluster_gpus: int
    dp_max: int
    mp_min: str
    per_replica: int  # sequences per replica, so the pipeline has microbatches
    mp_16k: int  # TP x PP of the 16K-GPU run
    long_mp: int  # TP x CP x PP of the long-context run
    long_dp_pp: int
    long_mp_pp: str
    figure_batches: list[tuple[str, float, int]]
    figure_marked: list[tuple[str, int, int]]
    caption: str
    q_steps: str
    q_examples: str
    f_steps: str
    f_examples: str
    ramp_first_m: str
    ramp_first_seq: str
    ramp_second_m: str
    ramp_second_seq: str
    ramp_second_after_m: str
    ramp_last_m: str
    ramp_third_after_t: str
    ramp_total_t: str
    l3_dp_max: str
    l3_16k_gpus: str
    l3_16k_pp: int
    l3_16k_dp: int
    l3_16k_mp_min: str
    l3_16k_tp: int
    l3_16k_tflops: int
    l3_16k_replica_tokens: str
    l3_long_seq_k: str
    l3_long_dp_max: str
    l3_long_mp_min: str
    l3_long_cp: int
    l3_long_tp: int
    l3_long_pp: int
    l3_long_dp: int
    # Check yourself: 8M-token batches of 8,192-token sequences on 24,576 H100, B_crit 4M.
    check_batch_m: str
    check_seq: str
    check_gpus: str
    check_critical_m: str
    check_dp_max: str
    check_mp_min: str
    check_e_big: str
    check_e_crit: str
    check_compute_more: str
    check_s_big: str
    check_s_crit: str
    check_steps_fewer: str


@dataclass(frozen=True)
class Fp8:
    """FP8 training: a second peak; DeepSeek-V3's implied MFU against each."""

    steps: dict[str, TrainingStep]  # TP8 x DP128 by compute dtype
    ds_mfu: dict[str, number_formats.ImpliedMFU]  # by the peak it is counted against
    ds_mfu_attn: dict[str, number_formats.ImpliedMFU]  # causal attention counted too
    h100_bf16_tflops: str
    h100_fp8_tflops: str
    fp8_compute_s: str
    fp8_comm_s: str
    bf16_comm_s: str
    dp_hiding_nodes_fp8: str
    tp_limit_fp8: str
    ds_tokens_t: str
    ds_gpu_hours_m: str
    ds_gpus: str
    ds_active_b: str
    ds_flops: str
    ds_tflops: str
    ds_mfu_bf16: str
    ds_mfu_fp8: str
    ds_seq: str
    ds_mfu_attn_bf16: str
    ds_mfu_attn_fp8: str
    # Check yourself: a run that sustains 400 TFLOP/s per H100 with FP8 matmuls.
    check_tflops: str
    check_mfu_bf16: str
    check_mfu_fp8: str


@dataclass(frozen=True)
class Context:
    """Long contexts: Llama-3.1-405B's prefill split by context parallelism."""

    long: parallelism.ContextParallelPrefill  # 128K tokens, TP8 x CP16
    short: parallelism.ContextParallelPrefill  # 8K tokens, TP8 x CP16
    node: parallelism.ContextParallelPrefill  # 128K tokens on one node
    fp8: parallelism.ContextParallelPrefill  # 128K tokens, TP8 x CP16, FP8 matmuls
    meta_prefill: serving_systems.Measured
    attn_share_short: str
    attn_share_long: str
    node_s: str
    hide_tokens: str
    kv_kb: str  # a GPU's keys and values per token and layer
    label: str
    gpus: str
    nodes: str
    rank_long: str
    kv_gb: str
    kv_s: str
    attn_s: str
    ratio_long: str
    ring_s: str
    fp8_s: str
    gather_s: str
    gather_extra: str
    rank_short: str
    ratio_short: str
    short_extra: str
    meta_prefill_s: str
    meta_over_floor: str
    meta_over_fp8_floor: str
    meta_precision_source: str
    l3_long_gpus: str
    l3_long_mfu: str
    act_no_cp_gb: str
    act_cp_gb: str
    # Check yourself: Llama-3-70B's shape with CP8 over 8 nodes, a 32K prompt.
    check_cp: int
    check_prompt: int
    check_hide: float
    check_c_over_w: str
    check_hide_tokens: str
    check_rank: str


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
class Reversible:
    """Reversible layers: one 8,192-token sequence's activations by mode."""

    held_gb: dict[str, float]
    caption: str
    act_stored_gb: str
    act_checkpointed_gb: str
    act_reversible_gb: str


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


@dataclass(frozen=True)
class Numbers:
    basics: Basics
    ways: Ways
    collectives: Collectives
    memory: Memory
    traffic: Traffic
    bubble: Bubble
    side_by_side: SideBySide
    llama3: Llama3Run
    critical_batch: CriticalBatch
    fp8: Fp8
    context: Context
    serving: Serving
    reversible: Reversible
    latency: Latency
    check: CheckYourself


def _basics() -> Basics:
    llama, h100 = get_model("Llama-3-70B"), get_chip("H100")
    return Basics(
        llama=llama,
        h100=h100,
        nvl72=get_chip("GB200-NVL72"),
        batch_tokens=BATCH_TOKENS,
        params=llama.total_params,
        h100_hbm_gb=shown.gb(h100.hbm_bytes),
    )


def _ways(basics: Basics) -> Ways:
    h100, nvl72 = basics.h100, basics.nvl72
    return Ways(
        h100_up_gbs=shown.gb(h100.scale_up_bandwidth_bytes_per_s),
        nvl72_up_gbs=shown.gb(nvl72.scale_up_bandwidth_bytes_per_s),
        nic_gbs=shown.gb(h100.scale_out_bandwidth_bytes_per_s),  # one NIC per GPU
        node_nic_gbs=shown.gb(h100.scale_out_bandwidth_bytes_per_s * h100.scale_up_domain_size),
        h100_up_over_out=shown.fixed(
            h100.scale_up_bandwidth_bytes_per_s / h100.scale_out_bandwidth_bytes_per_s
        ),
        nvl72_up_over_out=shown.fixed(
            nvl72.scale_up_bandwidth_bytes_per_s / nvl72.scale_out_bandwidth_bytes_per_s
        ),
    )


def _collectives(basics: Basics) -> Collectives:
    h100 = basics.h100
    ring_n, ring_bytes = 4, 64e6
    ring = collectives.ring_all_reduce_schedule(ring_bytes, ring_n, h100)
    ring_chunk_mb = shown.fixed(ring.chunk_bytes / 1e6)
    ring_step_us = shown.fixed(ring.step_s * 1e6, 1)
    ring_total_us = shown.fixed(ring.total_s * 1e6)
    ring_sent_mb = shown.fixed(ring.sent_bytes_per_chip / 1e6)
    ring_steps8 = str(collectives.ring_steps("all-reduce", 8))
    node_cost = collectives.all_reduce_cost_curve(np.array([16384.0, 1e9]), 8, h100)
    ar8_latency_us = shown.fixed(float(node_cost.latency_s[0]) * 1e6, 1)
    sweep = collectives.all_reduce_cost_curve(np.logspace(3, 10, 701), 8, h100)
    crossover_mb = shown.fixed(float(sweep.array_bytes[sweep.bytes_s >= sweep.latency_s][0]) / 1e6)
    nccl_protocols = data.table("systems")["nccl_protocols"]
    caption = (
        f"Left: a ring all-reduce of {ring_bytes / 1e6:.0f} MB over {ring_n} H100. Each row is a "
        f"step, each cell the chunk (c0-c{ring_n - 1}, {ring_chunk_mb} MB each) a GPU sends to "
        f"its right-hand neighbour: {ring_n - 1} steps of reduce-scatter, then {ring_n - 1} of "
        f"all-gather, {ring_step_us} µs each; each GPU sends {ring_sent_mb} MB, 2(n-1)/n of the "
        f"array, in {ring_total_us} µs with the base latency. Right: one all-reduce over the "
        f"8 H100 of a node against its size: the latency, {ar8_latency_us} µs for "
        f"{ring_steps8} steps, outweighs the bytes below {crossover_mb} MB, the bytes above."
    )
    return Collectives(
        ring_n=ring_n,
        ring_bytes=ring_bytes,
        ring=ring,
        node_cost=node_cost,
        sweep=sweep,
        nccl_protocols=nccl_protocols,
        ring_caption=caption,
        nccl_base_us=shown.fixed(h100.collective_base_latency_s * 1e6, 1),
        nccl_alpha_us=shown.fixed(h100.scale_up_latency_s * 1e6, 1),
        nccl_simple_base_us=shown.fixed(nccl_protocols["simple_base_latency_s"] * 1e6, 1),
        nccl_simple_alpha_us=shown.fixed(nccl_protocols["simple_nvlink_step_latency_s"] * 1e6, 1),
        nccl_ll_share=shown.percent(nccl_protocols["ll_ring_all_reduce_bandwidth_share"]),
        token_act_kb=shown.fixed(basics.llama.d_model * 2 / 1e3, 1),
        ar8_small_bytes_us=shown.fixed(float(node_cost.bytes_s[0]) * 1e6, 2),
        ar8_latency_us=ar8_latency_us,
        ar8_big_ms=shown.fixed(float(node_cost.total_s[1]) * 1e3, 2),
        ar8_big_latency_share=shown.fixed(
            float(node_cost.latency_s[1] / node_cost.total_s[1]) * 100, 1
        ),
    )


def _memory(basics: Basics) -> Memory:
    llama, params = basics.llama, basics.params
    state_tp8 = parallelism.model_state_bytes(params / 8)
    state_zero1 = parallelism.model_state_bytes(params / 8, 128, 1)
    state_zero3 = parallelism.model_state_bytes(params, 1024, 3)
    per_layer = parallelism.activation_bytes_per_token(llama) / llama.n_layers
    return Memory(
        tp8=Layout(dp=128, tp=8, zero_stage=1),
        params_b=shown.fixed(params / 1e9, 2),
        adam_tb=shown.fixed(parallelism.model_state_bytes(params).total_bytes / 1e12, 2),
        state_tp8_gb=shown.gb(state_tp8.total_bytes),
        state_zero1_gb=shown.gb(state_zero1.total_bytes, 1),
        state_zero3_gb=shown.gb(state_zero3.total_bytes, 2),
        act_layer_kb=shown.fixed(per_layer / 1e3),
        act_layer_d=shown.fixed(per_layer / llama.d_model, 1),
        act_8k_gb=shown.gb(parallelism.activation_memory_bytes(llama, 8192)),
        llama_layers=llama.n_layers,
    )


def _traffic(basics: Basics, memory: Memory) -> Traffic:
    llama, h100, batch = basics.llama, basics.h100, basics.batch_tokens
    comm = parallelism.training_communication(llama, memory.tp8, h100, batch, microbatches=8)
    step_tp8 = parallelism.training_step(llama, memory.tp8, h100, batch, microbatches=8)
    tp16 = Layout(dp=64, tp=16, zero_stage=1)
    comm16 = parallelism.training_communication(llama, tp16, h100, batch, microbatches=8)
    tp64 = Layout(dp=16, tp=64, zero_stage=1)
    comm64 = parallelism.training_communication(llama, tp64, h100, batch, microbatches=8)
    paces = {tp: collectives.hierarchical_pace(tp, h100) for tp in (16, 32, 64, 128)}
    first_network = min(tp for tp, pace in paces.items() if pace == "scale-out")
    last_nvlink = max(tp for tp, pace in paces.items() if pace == "scale-up" and tp < first_network)
    piped = Layout(dp=16, tp=8, pp=8, zero_stage=1)
    comm_pp = parallelism.training_communication(llama, piped, h100, batch, microbatches=32)
    return Traffic(
        comm=comm,
        step_tp8=step_tp8,
        tp16=tp16,
        comm16=comm16,
        comm64=comm64,
        paces=paces,
        comm_pp=comm_pp,
        tp8_compute_s=shown.fixed(step_tp8.compute_s, 2),
        tp8_tp_s=shown.fixed(comm["TP"].time_s, 2),
        tp8_tp_gb=shown.gb(comm["TP"].bytes_per_gpu),
        tp8_dp_s=shown.fixed(comm["DP"].time_s, 2),
        tp8_dp_gb=shown.gb(comm["DP"].bytes_per_gpu),
        tp16_tp_s=shown.fixed(comm16["TP"].time_s, 2),
        tp64_tp_s=shown.fixed(comm64["TP"].time_s, 1),
        tp_limit=shown.fixed(parallelism.tp_critical_degree(llama, h100)),
        tp_network_first=f"TP{first_network}",
        tp_nvlink_last=f"TP{last_nvlink}",
        tp_network_first_nodes=str(first_network // h100.scale_up_domain_size),
        tp_nvlink_last_nodes=str(last_nvlink // h100.scale_up_domain_size),
        pp8_pp_gb=shown.gb(comm_pp["PP"].bytes_per_gpu, 2),
        pp8_pp_s=shown.fixed(comm_pp["PP"].time_s, 3),
        pp8_dp_gb=shown.gb(comm_pp["DP"].bytes_per_gpu),
        dp_hiding_node=shown.grouped(parallelism.dp_hiding_batch(h100, 8)),
        dp_hiding_nodes=shown.grouped(parallelism.dp_hiding_batch(h100, 1024)),
        dp_hiding_flat=shown.grouped(parallelism.dp_hiding_batch(h100, 128, per_domain=1)),
        tp8_replica_tokens=shown.grouped(batch / 128),
        tp8_batch_m=shown.fixed(batch / 2**20),
        dp256_replica_tokens=shown.grouped(batch / 256),
    )


def _bubble() -> Bubble:
    stages, limit = 16, 0.05
    microbatches = np.arange(1, 4097)
    bubbles = training.pipeline_bubble_fraction(stages, microbatches)
    enough = int(microbatches[bubbles <= limit][0])
    caption = (
        "The bubble, the share of a step each pipeline stage sits idle, against the "
        "microbatches per step. It falls towards zero as the microbatches outnumber the "
        f"stages; {stages} stages need {enough} microbatches to get it under "
        f"{limit:.0%} (dotted)."
    )
    return Bubble(stages=stages, limit=limit, enough=enough, caption=caption)


def _side_by_side(basics: Basics) -> SideBySide:
    llama, h100, batch = basics.llama, basics.h100, basics.batch_tokens
    layouts = [
        (Layout(dp=1024), 8, "stored"),
        (Layout(dp=1024, zero_stage=3), 1, "checkpointed"),
        (Layout(dp=128, tp=8, zero_stage=1), 8, "stored"),
        (Layout(dp=64, tp=16, zero_stage=1), 8, "stored"),
        (Layout(dp=32, tp=8, pp=4, zero_stage=1), 32, "stored"),
        (Layout(dp=16, tp=8, pp=8, zero_stage=1), 32, "stored"),
    ]
    caption = (
        f"Six layouts of {llama.name} on 1,024 H100, 4M tokens per step. Left: memory per GPU "
        f"(dashed: the H100's {h100.hbm_bytes / 1e9:.0f} GB; the first bar is cut off). Right, "
        "per layout: compute and bubble (upper bar) and the communication of each kind (lower "
        "bar, hatched where it crosses the scale-out network). Communication can hide under "
        "compute; the bubble cannot. Floors at 100% of the dense peak."
    )
    fsdp = parallelism.training_step(
        llama, Layout(dp=1024, zero_stage=3), h100, batch, activations="checkpointed"
    )
    pp4 = parallelism.training_step(
        llama, Layout(dp=32, tp=8, pp=4, zero_stage=1), h100, batch, microbatches=32
    )
    return SideBySide(
        layouts=[layout for layout, _, _ in layouts],
        microbatches=[m for _, m, _ in layouts],
        activations=[mode for _, _, mode in layouts],
        caption=caption,
        fsdp_mfu=shown.fixed(fsdp.mfu * 100),
        pp4_mfu=shown.fixed(pp4.mfu * 100),
        pp4_bubble=shown.fixed(parallelism.pipeline_bubble_fraction(4, 32) * 100, 1),
    )


def _llama3(basics: Basics) -> Llama3Run:
    h100 = basics.h100
    # Meta used an interleaved pipeline schedule; the paper does not print its number of chunks
    # per GPU, so v = 2 (the smallest interleaving) is our assumption.
    chunks = 2
    layout = Layout(
        dp=64, tp=8, pp=16, zero_stage=1, embedding_as_layers=True, virtual_stages=chunks
    )
    run = data.table("systems")["llama3_pretraining_8k"]  # Table 4's first row
    microbatches = run["tokens_per_step"] // run["sequence_tokens"] // run["dp"]
    step = parallelism.training_step(
        "Llama-3.1-405B", layout, h100, run["tokens_per_step"], microbatches=microbatches
    )
    memory = parallelism.training_memory(
        "Llama-3.1-405B", layout, run["tokens_per_step"], microbatches=microbatches
    )
    measured_tokens = (
        run["tflops_per_gpu"]
        * 1e12
        * run["gpus"]
        / get_model("Llama-3.1-405B").training_flops_per_token()
    )
    gemm = serving_systems.measured("h100-bf16-gemm")
    return Llama3Run(
        layout=layout,
        run=run,
        step=step,
        memory=memory,
        gemm=gemm,
        microbatches=microbatches,
        chunks=chunks,
        gpus=format(run["gpus"], ","),
        tp=run["tp"],
        pp=run["pp"],
        dp=run["dp"],
        step_m=shown.fixed(run["tokens_per_step"] / 2**20),
        tflops=str(run["tflops_per_gpu"]),
        mfu=shown.fixed(run["bf16_mfu"] * 100),
        bubble=shown.fixed(parallelism.pipeline_bubble_fraction(16, 32, chunks) * 100),
        bubble_plain=shown.fixed(parallelism.pipeline_bubble_fraction(16, 32) * 100),
        tokens_m=shown.fixed(step.tokens_per_s / 1e6, 2),
        mfu_floor=shown.fixed(step.mfu * 100),
        mfu_floor_serial=shown.fixed(step.mfu_no_overlap * 100),
        measured_m=shown.fixed(measured_tokens / 1e6, 2),
        kernel_overlap=shown.fixed(run["bf16_mfu"] / step.mfu * 100),
        kernel=shown.fixed(run["bf16_mfu"] / step.mfu_no_overlap * 100),
        gemm_share=shown.fixed(gemm.value / h100.peak("bf16") * 100),
        gemm_tflops=shown.tflops(gemm.value, 1),
        memory_gb=shown.gb(memory.total_bytes),
    )


def _k(tokens: int) -> str:
    """A sequence length in K tokens, as the figure's legend writes it."""
    return f"{tokens // 1024}K"


def _critical_batch_figure(
    ramp: dict[str, Any], l3_long: dict[str, Any], mp_16k: int, long_mp: int, cluster_gpus: int
) -> tuple[list[tuple[str, float, int]], list[tuple[str, int, int]]]:
    """The critical-batch figure's batches and marked layouts, labelled as its legend says."""
    first_m, second_m, last_m = (shown.fixed(t / 2**20) for t in ramp["tokens_per_step"])
    batch, sequence = ramp["tokens_per_step"][2], ramp["sequence_tokens"][2]
    long_seq_k = shown.fixed(l3_long["sequence_tokens"] / 1024)
    batches = [
        (
            f"{first_m}M tokens of {_k(ramp['sequence_tokens'][0])} sequences "
            f"(and {second_m}M of {_k(ramp['sequence_tokens'][1])})",
            ramp["tokens_per_step"][0],
            ramp["sequence_tokens"][0],
        ),
        (f"{last_m}M tokens of {_k(sequence)} sequences", batch, sequence),
        (f"{last_m}M tokens of {long_seq_k}K sequences", batch, l3_long["sequence_tokens"]),
    ]
    marked = [
        (f"Llama 3 at {_k(sequence)}: TP8 x PP16", cluster_gpus, mp_16k),
        (f"Llama 3 at {long_seq_k}K: TP8 x CP16 x PP16", l3_long["gpus"], long_mp),
    ]
    return batches, marked


def _critical_batch() -> CriticalBatch:
    systems = data.table("systems")
    ramp = systems["llama3_batch_schedule"]
    l3_16k = systems["llama3_pretraining_8k_16k"]
    l3_long = systems["llama3_long_context"]
    ramp_m = [shown.fixed(t / 2**20) for t in ramp["tokens_per_step"]]
    batch, sequence, gpus = ramp["tokens_per_step"][2], ramp["sequence_tokens"][2], l3_16k["gpus"]
    long_sequence = l3_long["sequence_tokens"]
    dp_max = parallelism.data_parallel_ceiling(batch, sequence)
    per_replica = batch // sequence // l3_16k["dp"]
    mp_16k = l3_16k["tp"] * l3_16k["pp"]
    long_mp = l3_long["tp"] * l3_long["cp"] * l3_long["pp"]
    figure_batches, figure_marked = _critical_batch_figure(ramp, l3_long, mp_16k, long_mp, gpus)
    caption = (
        "Left: McCandlish et al.'s trade-off, steps and examples (so compute) to reach one loss "
        "as multiples of their minima against the batch over the critical batch of optimisation;"
        " at the critical batch both are 2. "
        "Right: the fewest chips per data-parallel replica against the cluster's size, with one "
        f"sequence per replica, for Llama 3's batches; diamonds: its layouts on {gpus:,} H100, "
        f"which run {per_replica} sequences per replica so the pipeline has microbatches."
    )
    quarter = parallelism.batch_tradeoff(0.25, 1.0)
    four = parallelism.batch_tradeoff(4.0, 1.0)
    # Check yourself: 8M-token batches of 8,192-token sequences on 24,576 H100; B_crit 4M tokens.
    check_batch, check_seq, check_gpus, check_critical = 8 * 2**20, 8192, 24576, 4 * 2**20
    check_dp_max = parallelism.data_parallel_ceiling(check_batch, check_seq)
    at = parallelism.batch_tradeoff(np.array([check_critical, check_batch]), check_critical)
    examples, steps = np.asarray(at.examples_factor), np.asarray(at.steps_factor)
    return CriticalBatch(
        l3_16k=l3_16k,
        l3_long=l3_long,
        batch_tokens=batch,
        sequence_tokens=sequence,
        cluster_gpus=gpus,
        dp_max=dp_max,
        mp_min=str(parallelism.min_model_parallel_degree(gpus, batch, sequence)),
        per_replica=per_replica,
        mp_16k=mp_16k,
        long_mp=long_mp,
        long_dp_pp=parallelism.data_parallel_ceiling(batch, long_sequence, per_replica),
        long_mp_pp=format(
            parallelism.min_model_parallel_degree(gpus, batch, long_sequence, per_replica), ","
        ),
        figure_batches=figure_batches,
        figure_marked=figure_marked,
        caption=caption,
        q_steps=format(quarter.steps_factor, ".3g"),
        q_examples=format(quarter.examples_factor, ".3g"),
        f_steps=format(four.steps_factor, ".3g"),
        f_examples=format(four.examples_factor, ".3g"),
        ramp_first_m=ramp_m[0],
        ramp_first_seq=format(ramp["sequence_tokens"][0], ","),
        ramp_second_m=ramp_m[1],
        ramp_second_seq=format(ramp["sequence_tokens"][1], ","),
        ramp_second_after_m=shown.fixed(ramp["starts_after_tokens"][1] / 1e6),
        ramp_last_m=ramp_m[2],
        ramp_third_after_t=shown.fixed(ramp["starts_after_tokens"][2] / 1e12, 2),
        ramp_total_t=shown.fixed(ramp["total_tokens"] / 1e12, 1),
        l3_dp_max=format(dp_max, ","),
        l3_16k_gpus=format(gpus, ","),
        l3_16k_pp=l3_16k["pp"],
        l3_16k_dp=l3_16k["dp"],
        l3_16k_mp_min=str(
            parallelism.min_model_parallel_degree(gpus, batch, sequence, per_replica)
        ),
        l3_16k_tp=l3_16k["tp"],
        l3_16k_tflops=l3_16k["tflops_per_gpu"],
        l3_16k_replica_tokens=format(batch // l3_16k["dp"], ","),
        l3_long_seq_k=shown.fixed(long_sequence / 1024),
        l3_long_dp_max=format(parallelism.data_parallel_ceiling(batch, long_sequence), ","),
        l3_long_mp_min=str(parallelism.min_model_parallel_degree(gpus, batch, long_sequence)),
        l3_long_cp=l3_long["cp"],
        l3_long_tp=l3_long["tp"],
        l3_long_pp=l3_long["pp"],
        l3_long_dp=l3_long["dp"],
        check_batch_m=shown.fixed(check_batch / 2**20),
        check_seq=format(check_seq, ","),
        check_gpus=format(check_gpus, ","),
        check_critical_m=shown.fixed(check_critical / 2**20),
        check_dp_max=format(check_dp_max, ","),
        check_mp_min=str(parallelism.min_model_parallel_degree(check_gpus, check_batch, check_seq)),
        check_e_big=shown.fixed(examples[1]),
        check_e_crit=shown.fixed(examples[0]),
        check_compute_more=shown.fixed((examples[1] / examples[0] - 1) * 100),
        check_s_big=shown.fixed(steps[1], 1),
        check_s_crit=shown.fixed(steps[0]),
        check_steps_fewer=shown.fixed((1 - steps[1] / steps[0]) * 100),
    )


def _fp8(basics: Basics, memory: Memory) -> Fp8:
    llama, h100, batch = basics.llama, basics.h100, basics.batch_tokens
    steps = {
        dtype: parallelism.training_step(
            llama, memory.tp8, h100, batch, microbatches=8, compute_dtype=dtype
        )
        for dtype in ("bf16", "fp8")
    }
    ds_run = data.table("systems")["deepseek_v3_training"]
    ds_model = get_model("DeepSeek-V3")
    ds_mfu = {
        dtype: number_formats.implied_mfu(
            ds_model, ds_run["tokens"], ds_run["pretraining_gpu_hours"], ds_run["chip"], dtype
        )
        for dtype in ("bf16", "fp8")
    }
    ds_mfu_attn = {
        dtype: number_formats.implied_mfu(
            ds_model,
            ds_run["tokens"],
            ds_run["pretraining_gpu_hours"],
            ds_run["chip"],
            dtype,
            sequence_tokens=ds_run["sequence_tokens"],
        )
        for dtype in ("bf16", "fp8")
    }
    # Check yourself: a run that sustains 400 TFLOP/s per H100 with FP8 matmuls.
    check_tflops = 400e12
    return Fp8(
        steps=steps,
        ds_mfu=ds_mfu,
        ds_mfu_attn=ds_mfu_attn,
        h100_bf16_tflops=format(h100.peak("bf16") / 1e12, ",.0f"),
        h100_fp8_tflops=format(h100.peak("fp8") / 1e12, ",.0f"),
        fp8_compute_s=shown.fixed(steps["fp8"].compute_s, 2),
        fp8_comm_s=shown.fixed(steps["fp8"].comm_s, 2),
        bf16_comm_s=shown.fixed(steps["bf16"].comm_s, 2),
        dp_hiding_nodes_fp8=shown.grouped(
            parallelism.dp_hiding_batch(h100, 1024, compute_dtype="fp8")
        ),
        tp_limit_fp8=shown.fixed(parallelism.tp_critical_degree(llama, h100, "fp8")),
        ds_tokens_t=shown.fixed(ds_run["tokens"] / 1e12, 1),
        ds_gpu_hours_m=shown.fixed(ds_run["pretraining_gpu_hours"] / 1e6, 3),
        ds_gpus=format(ds_run["gpus"], ","),
        ds_active_b=shown.fixed(ds_model.matmul_params_per_token / 1e9, 1),
        ds_flops=f"{ds_mfu['bf16'].model_flops / 1e24:.2f} × 10²⁴",
        ds_tflops=shown.tflops(ds_mfu["bf16"].flop_per_s_per_gpu),
        ds_mfu_bf16=shown.fixed(ds_mfu["bf16"].mfu * 100),
        ds_mfu_fp8=shown.fixed(ds_mfu["fp8"].mfu * 100),
        ds_seq=format(ds_run["sequence_tokens"], ","),
        ds_mfu_attn_bf16=shown.fixed(ds_mfu_attn["bf16"].mfu * 100),
        ds_mfu_attn_fp8=shown.fixed(ds_mfu_attn["fp8"].mfu * 100),
        check_tflops=shown.tflops(check_tflops),
        check_mfu_bf16=shown.fixed(check_tflops / h100.peak("bf16") * 100, 1),
        check_mfu_fp8=shown.fixed(check_tflops / h100.peak("fp8") * 100, 1),
    )


def _context(basics: Basics, critical_batch: CriticalBatch) -> Context:
    h100 = basics.h100
    l405 = get_model("Llama-3.1-405B")
    long, short, cp, cp_tp = 131072, 8192, 16, 8
    cp_long = parallelism.context_parallel_prefill(l405, h100, long, cp, tp=cp_tp)
    cp_short = parallelism.context_parallel_prefill(l405, h100, short, cp, tp=cp_tp)
    cp_node = parallelism.context_parallel_prefill(l405, h100, long, 1, tp=cp_tp)
    cp_fp8 = parallelism.context_parallel_prefill(
        l405, h100, long, cp, tp=cp_tp, compute_dtype="fp8"
    )
    cp_hide = parallelism.cp_hiding_tokens(l405, h100, cp, tp=cp_tp)
    meta_key = "llama3-405b-prefill-128k-128xh100"
    meta_prefill = serving_systems.measured(meta_key)
    l3_long = critical_batch.l3_long
    stage_layers = l405.n_layers / l3_long["pp"]
    act_no_cp = parallelism.activation_memory_bytes(l405, long, n_layers=stage_layers, tp=cp_tp)
    act_cp = parallelism.activation_memory_bytes(l405, long / cp, n_layers=stage_layers, tp=cp_tp)
    # Check yourself: Llama-3-70B's shape (64 query heads, 8 KV heads) with CP8 over 8 nodes.
    check_cp, check_prompt = 8, 32768
    check_hide = parallelism.cp_hiding_tokens("Llama-3-70B", h100, check_cp)
    return Context(
        long=cp_long,
        short=cp_short,
        node=cp_node,
        fp8=cp_fp8,
        meta_prefill=meta_prefill,
        attn_share_short=shown.fixed(float(cp_short.attention_share) * 100),
        attn_share_long=shown.fixed(float(cp_long.attention_share) * 100),
        node_s=shown.fixed(cp_node.ring_s, 1),
        hide_tokens=shown.grouped(cp_hide),
        kv_kb=shown.grouped(l405.kv_bytes_per_token() / l405.n_layers / cp_tp),
        label=f"CP{cp}",
        gpus=str(cp * cp_tp),
        nodes=str(cp * cp_tp // h100.scale_up_domain_size),
        rank_long=format(long // cp, ","),
        kv_gb=shown.fixed(float(cp_long.kv_bytes_per_gpu) / 1e9, 1),
        kv_s=shown.fixed(cp_long.kv_s, 2),
        attn_s=shown.fixed(cp_long.attention_s, 2),
        ratio_long=shown.fixed(cp_long.kv_to_attention, 2),
        ring_s=shown.fixed(cp_long.ring_s, 2),
        fp8_s=shown.fixed(cp_fp8.ring_s, 2),
        gather_s=shown.fixed(cp_long.all_gather_s, 2),
        gather_extra=shown.fixed(float(cp_long.all_gather_s / cp_long.ring_s - 1) * 100),
        rank_short=format(short // cp, ","),
        ratio_short=shown.fixed(cp_short.kv_to_attention, 1),
        short_extra=shown.fixed(float(cp_short.ring_s / cp_short.compute_s - 1) * 100),
        meta_prefill_s=shown.fixed(meta_prefill.value, 1),
        meta_over_floor=shown.fixed(meta_prefill.value / float(cp_long.ring_s), 1),
        meta_over_fp8_floor=shown.fixed(meta_prefill.value / float(cp_fp8.ring_s), 1),
        meta_precision_source=data.table("systems")["measured"][meta_key]["precision_source"],
        l3_long_gpus=format(l3_long["gpus"], ","),
        l3_long_mfu=shown.fixed(l3_long["bf16_mfu"] * 100),
        act_no_cp_gb=shown.fixed(float(act_no_cp) / 1e9),
        act_cp_gb=shown.fixed(float(act_cp) / 1e9, 1),
        check_cp=check_cp,
        check_prompt=check_prompt,
        check_hide=check_hide,
        check_c_over_w=shown.grouped(h100.peak("bf16") / h100.scale_out_bandwidth_bytes_per_s),
        check_hide_tokens=shown.grouped(check_hide),
        check_rank=format(check_prompt // check_cp, ","),
    )


def _expert_parallel_steps() -> dict[str, DecodeStep]:
    """DeepSeek-V3 as EP64, fp8 weights, 128 sequences of 4,096 tokens, serial, by machine."""
    return {
        key: parallelism.layout_decode_step(
            "DeepSeek-V3", Layout(ep=64), chip, 128, 4096, weight_dtype="fp8", overlap="none"
        )
        for key, chip in (("h100", "H100"), ("nvl72", "GB200-NVL72"))
    }


def _serving(basics: Basics) -> Serving:
    llama, h100 = basics.llama, basics.h100
    layouts = {"tp8": Layout(tp=8), "pp8": Layout(pp=8), "tp4pp2": Layout(tp=4, pp=2)}
    kv_gb = {
        name: float(parallelism.serving_memory(llama, layout, 64, 8192).kv_bytes / 1e9)
        for name, layout in layouts.items()
    }
    max_batch = {
        name: float(parallelism.max_decode_batch(llama, layout, h100, 8192))
        for name, layout in layouts.items()
    }
    fullest = {
        name: parallelism.layout_decode_step(llama, layout, h100, max_batch[name], 8192)
        for name, layout in layouts.items()
    }
    weights_per_gpu = parallelism.params_per_gpu(llama, layouts["tp8"]) * 2
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


def _reversible(basics: Basics, memory: Memory) -> Reversible:
    llama = basics.llama
    held_gb = {
        mode: float(parallelism.activation_memory_bytes(llama, 8192, mode) / 1e9)
        for mode in parallelism.ACTIVATION_MODES
    }
    caption = (
        f"Activations one 8,192-token microbatch of {llama.name} leaves for the backward pass, "
        f"against the number of layers on the GPU (dotted: the model's {llama.n_layers}). "
        f"Stored ones grow with depth at {memory.act_layer_kb} kB per token per layer, "
        f"checkpointed ones at the {llama.d_model * 2 / 1e3:.0f} kB of each layer's input; "
        "reversible layers keep a constant amount. Both savings cost one extra forward pass, "
        "+33% compute."
    )
    return Reversible(
        held_gb=held_gb,
        caption=caption,
        act_stored_gb=shown.fixed(held_gb["stored"]),
        act_checkpointed_gb=shown.fixed(held_gb["checkpointed"], 1),
        act_reversible_gb=shown.fixed(held_gb["reversible"], 1),
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


def _latency(basics: Basics) -> Latency:
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


def _check(basics: Basics, serving: Serving) -> CheckYourself:
    llama = basics.llama
    # 1: Llama-2-13B's model state over 64 data-parallel GPUs, by ZeRO stage.
    params = get_model("Llama-2-13B").total_params
    dp = 64
    state = {stage: parallelism.model_state_bytes(params, dp, stage) for stage in (1, 2, 3)}
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


@functools.cache
def numbers() -> Numbers:
    """Every value the parallelism page shows, section by section in page order."""
    basics = _basics()
    ways = _ways(basics)
    collectives_ = _collectives(basics)
    memory = _memory(basics)
    traffic = _traffic(basics, memory)
    bubble = _bubble()
    side_by_side = _side_by_side(basics)
    llama3 = _llama3(basics)
    critical_batch = _critical_batch()
    fp8 = _fp8(basics, memory)
    context = _context(basics, critical_batch)
    serving = _serving(basics)
    reversible = _reversible(basics, memory)
    latency = _latency(basics)
    check = _check(basics, serving)
    return Numbers(
        basics=basics,
        ways=ways,
        collectives=collectives_,
        memory=memory,
        traffic=traffic,
        bubble=bubble,
        side_by_side=side_by_side,
        llama3=llama3,
        critical_batch=critical_batch,
        fp8=fp8,
        context=context,
        serving=serving,
        reversible=reversible,
        latency=latency,
        check=check,
    )

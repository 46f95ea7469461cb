"""The parallelism chapter's numbers, its first part (``numbers.parallelism`` gathers them):
the worked model and chips, the links each way of splitting crosses, the collectives, memory per
GPU in training (and the reversible layers that trade compute for activations), and what each
kind of parallelism sends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from llmmath.core import collectives, data, training, training_memory
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.placement import Layout
from llmmath.core.training import Communication, TrainingStep
from llmmath.display.numbers import shown

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
class Reversible:
    """Reversible layers: one 8,192-token sequence's activations by mode."""

    held_gb: dict[str, float]
    caption: str
    act_stored_gb: str
    act_checkpointed_gb: str
    act_reversible_gb: str


def build_basics() -> Basics:
    llama, h100 = get_model("Llama-3-70B"), get_chip("H100")
    return Basics(
        llama=llama,
        h100=h100,
        nvl72=get_chip("GB200-NVL72"),
        batch_tokens=BATCH_TOKENS,
        params=llama.total_params,
        h100_hbm_gb=shown.gb(h100.hbm_bytes),
    )


def build_ways(basics: Basics) -> Ways:
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


def build_collectives(basics: Basics) -> Collectives:
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


def build_memory(basics: Basics) -> Memory:
    llama, params = basics.llama, basics.params
    state_tp8 = training_memory.model_state_bytes(params / 8)
    state_zero1 = training_memory.model_state_bytes(params / 8, 128, 1)
    state_zero3 = training_memory.model_state_bytes(params, 1024, 3)
    per_layer = training_memory.activation_bytes_per_token(llama) / llama.n_layers
    return Memory(
        tp8=Layout(dp=128, tp=8, zero_stage=1),
        params_b=shown.fixed(params / 1e9, 2),
        adam_tb=shown.fixed(training_memory.model_state_bytes(params).total_bytes / 1e12, 2),
        state_tp8_gb=shown.gb(state_tp8.total_bytes),
        state_zero1_gb=shown.gb(state_zero1.total_bytes, 1),
        state_zero3_gb=shown.gb(state_zero3.total_bytes, 2),
        act_layer_kb=shown.fixed(per_layer / 1e3),
        act_layer_d=shown.fixed(per_layer / llama.d_model, 1),
        act_8k_gb=shown.gb(training_memory.activation_memory_bytes(llama, 8192)),
        llama_layers=llama.n_layers,
    )


def build_traffic(basics: Basics, memory: Memory) -> Traffic:
    llama, h100, batch = basics.llama, basics.h100, basics.batch_tokens
    comm = training.training_communication(llama, memory.tp8, h100, batch, microbatches=8)
    step_tp8 = training.training_step(llama, memory.tp8, h100, batch, microbatches=8)
    tp16 = Layout(dp=64, tp=16, zero_stage=1)
    comm16 = training.training_communication(llama, tp16, h100, batch, microbatches=8)
    tp64 = Layout(dp=16, tp=64, zero_stage=1)
    comm64 = training.training_communication(llama, tp64, h100, batch, microbatches=8)
    paces = {tp: collectives.hierarchical_pace(tp, h100) for tp in (16, 32, 64, 128)}
    first_network = min(tp for tp, pace in paces.items() if pace == "scale-out")
    last_nvlink = max(tp for tp, pace in paces.items() if pace == "scale-up" and tp < first_network)
    piped = Layout(dp=16, tp=8, pp=8, zero_stage=1)
    comm_pp = training.training_communication(llama, piped, h100, batch, microbatches=32)
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
        tp_limit=shown.fixed(training.tp_critical_degree(llama, h100)),
        tp_network_first=f"TP{first_network}",
        tp_nvlink_last=f"TP{last_nvlink}",
        tp_network_first_nodes=str(first_network // h100.scale_up_domain_size),
        tp_nvlink_last_nodes=str(last_nvlink // h100.scale_up_domain_size),
        pp8_pp_gb=shown.gb(comm_pp["PP"].bytes_per_gpu, 2),
        pp8_pp_s=shown.fixed(comm_pp["PP"].time_s, 3),
        pp8_dp_gb=shown.gb(comm_pp["DP"].bytes_per_gpu),
        dp_hiding_node=shown.grouped(training.dp_hiding_batch(h100, 8)),
        dp_hiding_nodes=shown.grouped(training.dp_hiding_batch(h100, 1024)),
        dp_hiding_flat=shown.grouped(training.dp_hiding_batch(h100, 128, per_domain=1)),
        tp8_replica_tokens=shown.grouped(batch / 128),
        tp8_batch_m=shown.fixed(batch / 2**20),
        dp256_replica_tokens=shown.grouped(batch / 256),
    )


def build_reversible(basics: Basics, memory: Memory) -> Reversible:
    llama = basics.llama
    held_gb = {
        mode: float(training_memory.activation_memory_bytes(llama, 8192, mode) / 1e9)
        for mode in training_memory.ACTIVATION_MODES
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

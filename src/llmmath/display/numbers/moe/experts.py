"""The MoE chapter's expert sections (``numbers.moe`` gathers them): parameters, the batch an
MoE needs, the scale-up domains and DeepSeek-V3's all-to-all; the settings the other parts
share (``HGX``, ``NVL72``, ``EP_BATCH``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from llmmath import moe
from llmmath.beyond import moe_dispatch
from llmmath.core import data, roofline
from llmmath.core.expert_dispatch import NodeLimitedDispatch, node_limited_all_to_all
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, expected_experts_touched, get_model
from llmmath.core.racks import ScaleUpDomain, get_domain, list_domains
from llmmath.display.numbers import shown

FloatArray = npt.NDArray[np.float64]
HGX, NVL72 = "HGX H100 (8 GPUs)", "GB200 NVL72 (72 GPUs)"
EP_BATCH = 8192  # tokens a step of the expert-parallel worked numbers


@dataclass(frozen=True)
class Params:
    """More parameters, same FLOPs: total against active parameters, two sparsities."""

    mixtral: ModelConfig
    deepseek: ModelConfig
    h100: Chip
    table: str  # both models' counts, as the page's Markdown table
    mixtral_total_b: str
    mixtral_active_b: str
    deepseek_total_b: str
    deepseek_active_b: str
    deepseek_routed_share: str  # percent of the weights that are routed experts
    deepseek_sparsity_params: str  # total / active
    deepseek_sparsity_experts: str  # E / k


@dataclass(frozen=True)
class Batches:
    """Why an MoE needs bigger batches: experts touched, and the compute-bound batch."""

    experts: int  # DeepSeek-V3's routed experts per layer
    top_k: int  # experts per token
    critical: float  # the H100's critical batch, bf16
    touched_32: str  # experts a batch of 32 tokens touches per layer
    h100_critical: str
    mixtral_rule_experts: str  # critical batch x E/k
    mixtral_rule_params: str  # critical batch x total/active
    mixtral_exact: str  # the crossing with the batch-dependent reads
    deepseek_rule_experts: str
    deepseek_rule_params: str
    deepseek_exact: str


@dataclass(frozen=True)
class Domains:
    """Expert parallelism's scale-up domains: their links against the scale-out NICs."""

    table: str  # every domain preset, as the page's Markdown table
    hgx: ScaleUpDomain
    hgx_up_gbs: str
    hgx_out_gbs: str
    ratio_h100: str  # scale-up over scale-out bandwidth, HGX H100
    ratio_nvl72: str
    nvl72_nic_gbit: str
    ratio_nvl72_fast_nic: str  # with NICs of twice the speed


@dataclass(frozen=True)
class AllToAll:
    """DeepSeek-V3's all-to-all at EP8, EP64 across nodes and EP64 in a rack; its closed form;
    DeepSeek's node-limited dispatch; the rack-boundary figure."""

    batch: int  # tokens a step
    inside: moe.ExpertLayerStep  # EP8 in one HGX H100 node
    spilled: moe.ExpertLayerStep  # EP64 over eight HGX H100 nodes
    rack: moe.ExpertLayerStep  # EP64 in one NVL72 rack
    terms_in: moe_dispatch.AllToAllRatio  # the closed form's terms, EP8 in the node
    terms_out: moe_dispatch.AllToAllRatio  # and EP64 across nodes
    hgx8_ratio_value: float  # all-to-all over compute, EP8 in the node
    nvl64_ratio_value: float  # all-to-all over compute, EP64 in the rack
    ep_batch: str
    hgx8_ratio_2f: str
    hgx8_ratio: str
    hgx64_ratio_1f: str
    hgx64_ratio: str
    nvl64_ratio: str
    hgx64_a2a_us: str
    nvl64_a2a_us: str
    nvl64_compute_us: str
    bw_term_in: str
    bw_term_out: str
    expert_width: int  # DeepSeek-V3's F_e
    shared_experts: int
    shared_term: str  # k / (k + s)
    share_in: str  # the share of a GPU's bytes on the link that sets the time, EP8
    share_out: str  # and EP64 across nodes
    lat_term_in: str
    lat_term_out: str
    # DeepSeek's dispatch: one copy per destination node, at most max_nodes nodes.
    max_nodes: int
    n_group: str
    topk_group: str
    group_size: str
    prefill_ep: str
    prefill_nodes: str
    decode_ep: str
    per_node: NodeLimitedDispatch  # one copy per node, no limit on nodes
    limited: NodeLimitedDispatch  # and at most max_nodes nodes
    per_node_step: moe.ExpertLayerStep
    limited_step: moe.ExpertLayerStep
    limited_fp8_step: moe.ExpertLayerStep  # with DeepSeek's fp8 dispatch
    per_expert_copies: str  # copies of a token that leave its node, one per expert
    per_node_copies: str
    limited_nodes: str
    limited_copies: str
    per_node_ratio: str
    limited_ratio: str
    limited_us: str
    limited_fp8_ratio: str
    limited_fp8_us: str
    boundary_tokens: int
    boundary_domains: tuple[str, str]
    boundary_caption: str


def build_params() -> Params:
    mixtral, deepseek = get_model("Mixtral-8x7B"), get_model("DeepSeek-V3")
    counts = {name: moe.param_counts(name) for name in ("Mixtral-8x7B", "DeepSeek-V3")}
    rows = []
    for name, spec in (("Mixtral-8x7B", mixtral), ("DeepSeek-V3", deepseek)):
        c = counts[name]
        rows.append(
            f"| {name} | {spec.n_experts} | {spec.experts_per_token} | {spec.n_shared_experts} "
            f"| {c.total / 1e9:.1f} | {c.active / 1e9:.1f} | {c.routed_total / 1e9:.1f} "
            f"| {moe.sparsity(spec, 'experts'):.0f} | {moe.sparsity(spec, 'params'):.2f} |"
        )
    table = "\n".join(
        [
            "| model | E | k | shared | total (B) | active (B) | routed experts (B) | E/k "
            "| total/active |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    ds = counts["DeepSeek-V3"]
    return Params(
        mixtral=mixtral,
        deepseek=deepseek,
        h100=get_chip("H100"),
        table=table,
        mixtral_total_b=shown.fixed(counts["Mixtral-8x7B"].total / 1e9, 1),
        mixtral_active_b=shown.fixed(counts["Mixtral-8x7B"].active / 1e9, 1),
        deepseek_total_b=shown.fixed(ds.total / 1e9),
        deepseek_active_b=shown.fixed(ds.active / 1e9, 1),
        deepseek_routed_share=shown.fixed(100 * ds.routed_total / ds.total),
        deepseek_sparsity_params=shown.fixed(moe.sparsity(deepseek, "params"), 1),
        deepseek_sparsity_experts=shown.fixed(moe.sparsity(deepseek, "experts")),
    )


def build_batches(params: Params) -> Batches:
    deepseek, mixtral, h100 = params.deepseek, params.mixtral, params.h100
    experts, top_k = deepseek.n_experts, deepseek.experts_per_token
    critical = roofline.critical_batch(h100)

    def rule(spec: ModelConfig, definition: str) -> str:
        return shown.grouped(moe.compute_bound_batch_rule(spec, h100, definition))

    def exact(spec: ModelConfig) -> str:
        return shown.grouped(moe.compute_bound_batch(spec, h100, "model"))

    return Batches(
        experts=experts,
        top_k=top_k,
        critical=critical,
        touched_32=shown.fixed(float(expected_experts_touched(32, experts, top_k))),
        h100_critical=shown.fixed(critical),
        mixtral_rule_experts=rule(mixtral, "experts"),
        mixtral_rule_params=rule(mixtral, "params"),
        mixtral_exact=exact(mixtral),
        deepseek_rule_experts=rule(deepseek, "experts"),
        deepseek_rule_params=rule(deepseek, "params"),
        deepseek_exact=exact(deepseek),
    )


def build_domains() -> Domains:
    rows = []
    for name in list_domains():
        d = get_domain(name)
        rows.append(
            f"| {d.name} | {d.n_chips:,} | {d.scale_up_bandwidth_bytes_per_s / 1e9:,.0f} "
            f"| {d.scale_out_bandwidth_bytes_per_s / 1e9:g} | {d.bandwidth_ratio:.0f}× "
            f"| {d.hbm_bytes / 1e12:,.1f} |"
        )
    table = "\n".join(
        [
            "| scale-up domain | chips | scale-up GB/s per chip | scale-out GB/s per chip "
            "| ratio | HBM (TB) |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    hgx, nvl72 = get_domain(HGX), get_domain(NVL72)
    return Domains(
        table=table,
        hgx=hgx,
        hgx_up_gbs=shown.fixed(hgx.scale_up_bandwidth_bytes_per_s / 1e9),
        hgx_out_gbs=shown.fixed(hgx.scale_out_bandwidth_bytes_per_s / 1e9),
        ratio_h100=shown.fixed(hgx.bandwidth_ratio),
        ratio_nvl72=shown.fixed(nvl72.bandwidth_ratio),
        nvl72_nic_gbit=shown.fixed(nvl72.scale_out_bandwidth_bytes_per_s * 8 / 1e9),
        # NICs of twice the speed (800 Gb/s) halve the ratio.
        ratio_nvl72_fast_nic=shown.fixed(float(nvl72.bandwidth_ratio) / 2),
    )


def microseconds(seconds: float | FloatArray) -> str:
    """Seconds in microseconds, no decimals."""
    return shown.fixed(float(seconds * 1e6))


def build_all_to_all(params: Params) -> AllToAll:
    deepseek, batch = params.deepseek, EP_BATCH
    inside = moe.expert_parallel_step(deepseek, batch, 8, HGX)
    spilled = moe.expert_parallel_step(deepseek, batch, 64, HGX)
    rack = moe.expert_parallel_step(deepseek, batch, 64, NVL72)
    hgx8_ratio = float(inside.all_to_all_s / inside.compute_s)
    hgx64_ratio = float(spilled.all_to_all_s / spilled.compute_s)
    nvl64_ratio = float(rack.all_to_all_s / rack.compute_s)
    # The closed form's terms (moe_dispatch.all_to_all_ratio sums them to the same ratio).
    terms_in = moe_dispatch.all_to_all_ratio(deepseek, batch, 8, HGX)
    terms_out = moe_dispatch.all_to_all_ratio(deepseek, batch, 64, HGX)
    k, shared = deepseek.experts_per_token, deepseek.n_shared_experts
    # DeepSeek's dispatch: one copy per destination node, at most 4 nodes (data/systems.toml).
    systems = data.table("systems")
    routing, serving = systems["deepseek_routing"], systems["deepseek_serving"]
    max_nodes = routing["max_nodes_per_token"]
    per_node = node_limited_all_to_all(deepseek, batch, 64, HGX)
    limited = node_limited_all_to_all(deepseek, batch, 64, HGX, max_domains=max_nodes)
    per_node_step = moe_dispatch.node_limited_step(deepseek, batch, 64, HGX)
    limited_step = moe_dispatch.node_limited_step(deepseek, batch, 64, HGX, max_domains=max_nodes)
    limited_fp8_step = moe_dispatch.node_limited_step(
        deepseek,
        batch,
        64,
        HGX,
        max_domains=max_nodes,
        dispatch_dtype=routing["dispatch_dtype"],
        combine_dtype=routing["combine_dtype"],
    )
    boundary_tokens, boundary_domains = EP_BATCH, (HGX, NVL72)
    hgx_gpus, nvl72_gpus = (get_domain(name).n_chips for name in boundary_domains)
    return AllToAll(
        batch=batch,
        inside=inside,
        spilled=spilled,
        rack=rack,
        terms_in=terms_in,
        terms_out=terms_out,
        hgx8_ratio_value=hgx8_ratio,
        nvl64_ratio_value=nvl64_ratio,
        ep_batch=shown.grouped(batch),
        hgx8_ratio_2f=shown.fixed(hgx8_ratio, 2),
        hgx8_ratio=shown.fixed(hgx8_ratio, 1),
        hgx64_ratio_1f=shown.fixed(hgx64_ratio, 1),
        hgx64_ratio=shown.fixed(hgx64_ratio),
        nvl64_ratio=shown.fixed(nvl64_ratio, 2),
        hgx64_a2a_us=microseconds(spilled.all_to_all_s),
        nvl64_a2a_us=microseconds(rack.all_to_all_s),
        nvl64_compute_us=microseconds(rack.compute_s),
        bw_term_in=shown.fixed(terms_in.bandwidth, 2),
        bw_term_out=shown.fixed(terms_out.bandwidth, 2),
        expert_width=deepseek.expert_d_ff,
        shared_experts=shared,
        shared_term=f"{k}/{k + shared}",
        share_in=f"{8 - 1}/{8}",
        share_out=f"{64 - 8}/{64}",
        lat_term_in=shown.fixed(terms_in.latency, 3),
        lat_term_out=shown.fixed(terms_out.latency, 2),
        max_nodes=max_nodes,
        n_group=str(routing["n_group"]),
        topk_group=str(routing["topk_group"]),
        group_size=str(deepseek.n_experts // routing["n_group"]),
        prefill_ep=str(serving["prefill_ep"]),
        prefill_nodes=str(serving["prefill_nodes_per_unit"]),
        decode_ep=str(serving["decode_ep"]),
        per_node=per_node,
        limited=limited,
        per_node_step=per_node_step,
        limited_step=limited_step,
        limited_fp8_step=limited_fp8_step,
        per_expert_copies=shown.fixed(k * (64 - 8) / 64),
        per_node_copies=shown.fixed(per_node.network_copies_per_token, 1),
        limited_nodes=shown.fixed(limited.domains_per_token, 1),
        limited_copies=shown.fixed(limited.network_copies_per_token, 1),
        per_node_ratio=shown.fixed(float(per_node_step.all_to_all_s / per_node_step.compute_s), 1),
        limited_ratio=shown.fixed(float(limited_step.all_to_all_s / limited_step.compute_s), 1),
        limited_us=microseconds(limited_step.all_to_all_s),
        limited_fp8_ratio=shown.fixed(
            float(limited_fp8_step.all_to_all_s / limited_fp8_step.compute_s), 1
        ),
        limited_fp8_us=microseconds(limited_fp8_step.all_to_all_s),
        boundary_tokens=boundary_tokens,
        boundary_domains=boundary_domains,
        boundary_caption=(
            f"One MoE layer of DeepSeek-V3 at {boundary_tokens:,} tokens per step, per GPU, "
            "against the expert-parallel width G: the experts' compute (orange squares) and "
            "weight read (green triangles) fall like 1/G; the all-to-all (purple diamonds) "
            "falls too while G stays inside the scale-up "
            f"domain, and jumps where it leaves it (shaded): past {hgx_gpus} GPUs on HGX H100 "
            f"(left), past {nvl72_gpus} on NVL72 (right). Floors: datasheet rates, perfect "
            "load balance, one step of link latency per all-to-all."
        ),
    )

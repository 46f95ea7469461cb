"""The MoE chapter's rack sections (``numbers.moe`` gathers them): how the rack bounds the
design, attention beside wide EP and the published wide-EP runs, the rack's physical limits,
and hot experts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmmath import moe
from llmmath.beyond import layout_search, moe_balance, rack_physics
from llmmath.core import collectives, data
from llmmath.core.deployment import Deployment
from llmmath.core.dtypes import WeightFormat
from llmmath.core.hardware import get_chip
from llmmath.core.placement import Layout, with_redundant_experts
from llmmath.core.racks import get_domain
from llmmath.display.numbers import shown
from llmmath.display.numbers.moe.experts import EP_BATCH, HGX, NVL72, Params, microseconds

#: Each published wide-EP decode run's chips, all one EP group (data/systems.toml's ``workload``
#: of the run: ``DeepSeek-V3 CHIPxN --layout epN --dtype fp8 --kv-dtype bf16 --input 2000
#: --output 100 --disaggregate``; tests/claims/moe.py runs that command line against these).
WIDE_EP_CLUSTERS = {
    "h100": ("H100", 72),
    "sglang-deepseek-gb200-nvl72-decode-ep48": ("GB200-NVL72", 48),
    "sglang-deepseek-gb200-nvl72-decode-bf16-attention": ("GB200-NVL72", 48),
}
WIDE_EP_INPUT, WIDE_EP_OUTPUT = 2000, 100  # tokens in and out per request


@dataclass(frozen=True)
class RackBound:
    """How the rack bounds the design: EP width, memory and size of one expert layer."""

    ep_hgx: str
    ep_nvl72: str
    ep_gain: str  # usable EP width, rack over node, split evenly
    nvl72_copies: str  # redundant copies that fill the rack
    nvl72_gpus: str
    nvl72_slots: str  # experts and copies per GPU
    ep_gain_filled: str  # the rack's width with copies over the node's
    bytes_ep8_gb: str  # expert weights per GPU, fp8
    bytes_ep64_gb: str
    layer_b: str  # weights of one expert layer
    nvl72_layer_t: str  # the most bf16 weights of one layer a rack holds
    deepseek_fp8_gb: str
    hgx_hbm_gb: str
    moe_layers: int
    h100_hbm_gb: str


@dataclass(frozen=True)
class Attention:
    """Attention beside wide EP: DP- against TP-attention in one EP group of 64 H100s."""

    ep: int  # GPUs of the EP group
    tp: int  # the TP width of TP-attention
    contexts: tuple[int, ...]
    dtype: str  # the group's weights and arithmetic
    dp_split: moe.AttentionBesideEP
    tp_split: moe.AttentionBesideEP
    table: str
    dp_weights_gb: str
    tp_weights_gb: str
    dp_gain: str  # DP over TP sequences at the shortest context
    dp_expert_batch: str
    dp_short: str
    dp_long: str
    dp_short_batch: str
    dp_long_batch: str


@dataclass(frozen=True)
class WideRun:
    """One published wide-EP decode run against its floor, counted as ``llmmath workload
    --calibrate`` counts it."""

    spec: dict[str, Any]  # its entry in data/systems.toml
    floor: layout_search.WorkloadView  # the run's setting at the floor
    fitted: layout_search.WorkloadView  # and at the efficiency that meets the measurement
    efficiency: float  # that efficiency, FLOP/s and bandwidth alike
    measured_over_floor: float
    bound: str  # what bounds the floor's decode step: memory, compute or network


@dataclass(frozen=True)
class WideRuns:
    """What racks measure: published wide-EP decode runs against their own floors."""

    runs: dict[str, WideRun]  # by key: "h100" and data/systems.toml's [wide_ep] keys
    table: str
    wide_speedup: str  # the NVL72 run's tokens per GPU over the H100 run's
    h100_ratio: str  # measured over floor
    rack_ratio: str
    rack_later_ratio: str
    h100_bound: str  # what bounds the floor's decode step
    rack_bound: str


@dataclass(frozen=True)
class RackPhysics:
    """The rack's physical limits: reach, power, cooling and weight."""

    nvl72_rack: rack_physics.Rack
    hgx_rack: rack_physics.Rack
    room: dict[str, float]
    rack_table: str
    size_table: str
    nvl72_kw: str
    nvl72_w_per_gpu: str
    nvl72_kg: str
    hgx_kw: str
    air_kw: str
    legacy_kw: str
    copper_m: str
    air_gpus: str  # NVL72-class GPUs an air-cooled rack can power
    legacy_gpus: str
    hgx_nodes_air: str
    hgx_gpus_air: str
    nvl72_cables: str
    nvl72_miles: str
    nvl72_gpus: str
    kyber_kw: str
    kyber_packages: str
    kyber_dies: str


@dataclass(frozen=True)
class HotExperts:
    """Hot experts and redundant copies: Zipf loads over DeepSeek-V3's 256 experts."""

    table: str
    hot_expert: str  # the hottest expert's load at skew 0.5, mean 1
    slow_ep32: str
    slow_ep32_copies: str
    slow_ep144_copies: str
    hot_gpu_load: str
    hot_rest: str  # what the hottest GPU's cold experts add
    balanced_us: str  # EP64 in a rack, balanced
    hot_ep64_x: str
    hot_ep64_us: str
    ds_copies: str
    ds_prefill_gpus: str
    ds_prefill_slots: str
    ds_decode_ep: str
    ds_report_decode_gpus: str
    ds_decode_slots: str
    uniform_ep144: str
    top8_cap: str  # E/k: no expert gets more than this times the mean
    ep32_slots: str
    ep144_slots: str
    ep32_per_gpu: str
    ep32_cold: str


def build_rack_bound(params: Params) -> RackBound:
    deepseek = params.deepseek
    ep_hgx, ep_nvl72 = moe.max_ep_width(256, HGX), moe.max_ep_width(256, NVL72)
    # With redundant copies of hot experts (as DeepSeek serves them, and the CLI's
    # --redundant-experts) the experts fill every GPU of the rack.
    copies = moe.copies_to_fill(256, NVL72)
    nvl72_gpus = get_domain(NVL72).n_chips
    return RackBound(
        ep_hgx=str(ep_hgx),
        ep_nvl72=str(ep_nvl72),
        # 256 experts must split evenly, so 64 of the rack's 72 GPUs.
        ep_gain=str(ep_nvl72 // ep_hgx),
        nvl72_copies=str(copies),
        nvl72_gpus=str(nvl72_gpus),
        nvl72_slots=str((256 + copies) // nvl72_gpus),
        ep_gain_filled=str(nvl72_gpus // ep_hgx),
        bytes_ep8_gb=shown.gb(moe.expert_bytes_per_gpu(deepseek, 8, "fp8")),
        bytes_ep64_gb=shown.gb(moe.expert_bytes_per_gpu(deepseek, 64, "fp8"), 1),
        layer_b=shown.fixed(moe.expert_layer_params(deepseek) / 1e9, 1),
        nvl72_layer_t=shown.fixed(float(moe.max_expert_layer_params(NVL72) / 1e12), 1),
        deepseek_fp8_gb=shown.gb(deepseek.weight_bytes("fp8")),
        hgx_hbm_gb=shown.gb(get_domain(HGX).hbm_bytes),
        moe_layers=deepseek.n_moe_layers,
        h100_hbm_gb=shown.gb(params.h100.hbm_bytes),
    )


def build_attention(params: Params) -> Attention:
    # DP-attention against TP-attention in one EP group of 64 H100s (DeepSeek-V3, fp8
    # weights, bf16 cache): what each GPU holds and how many sequences the group decodes.
    deepseek, h100 = params.deepseek, params.h100
    ep, tp = 64, 8
    contexts = (2_000, 32_768, 131_072)
    dtype = "fp8"  # weights and arithmetic
    dp_split = moe.attention_beside_ep(
        deepseek, h100, ep, list(contexts), weight_dtype=dtype, compute_dtype=dtype
    )
    tp_split = moe.attention_beside_ep(
        deepseek, h100, ep, list(contexts), attention_tp=tp, weight_dtype=dtype, compute_dtype=dtype
    )
    rows = [
        f"| {T:,} | {float(tp_split.sequences_per_gpu[i]):,.1f} "
        f"| {float(dp_split.sequences_per_gpu[i]):,.1f} "
        f"| {float(tp_split.group_batch[i]):,.0f} | {float(dp_split.group_batch[i]):,.0f} "
        f"| {'yes' if dp_split.pays[i] else 'no'} |"
        for i, T in enumerate(contexts)
    ]
    table = "\n".join(
        [
            f"| context (tokens) | sequences per GPU, TP{tp} attention | per GPU, DP-attention "
            f"| group batch, TP{tp} | group batch, DP | DP reaches the experts' batch |",
            "|---:|---:|---:|---:|---:|:---|",
            *rows,
        ]
    )
    return Attention(
        ep=ep,
        tp=tp,
        contexts=contexts,
        dtype=dtype,
        dp_split=dp_split,
        tp_split=tp_split,
        table=table,
        dp_weights_gb=shown.gb(float(dp_split.weight_bytes_per_gpu), 1),
        tp_weights_gb=shown.gb(float(tp_split.weight_bytes_per_gpu), 1),
        dp_gain=shown.fixed(float(dp_split.group_batch[0] / tp_split.group_batch[0]), 1),
        dp_expert_batch=shown.grouped(dp_split.expert_bound_batch),
        dp_short=shown.grouped(contexts[0]),
        dp_long=shown.grouped(contexts[1]),
        dp_short_batch=shown.grouped(float(dp_split.group_batch[0])),
        dp_long_batch=shown.grouped(float(dp_split.group_batch[1])),
    )


def wide_ep_deployment(chip: str, n_chips: int) -> Deployment:
    """DeepSeek-V3 decoding on ``n_chips`` of ``chip``, one EP group over all of them, as
    ``llmmath workload``'s flags of the published runs build it: fp8 weights and matmuls,
    bf16 attention and KV cache, DeepSeek's node-limited dispatch in fp8 (the CLI's default for
    group-limited routing in fp8), and the fewest redundant expert copies that split the experts
    evenly (the CLI's default placement, as EPLB places copies of hot experts)."""
    layout = Layout.for_cluster(n_chips, ep=n_chips)
    placed = with_redundant_experts("DeepSeek-V3", layout.ep)
    weights = WeightFormat.of(embeddings="bf16", attention="fp8", mlp="fp8", experts="fp8")
    return Deployment(
        placed,
        get_chip(chip),
        n_chips,
        layout=layout,
        compute_dtype="fp8",
        weight_dtype=weights.main,
        kv_dtype="bf16",
        weight_format=weights,
        attention_dtype="bf16",
        expert_dispatch="node_limited",
        dispatch_dtype="fp8",
    )


def wide_ep_run(spec: dict[str, Any], chip: str, n_chips: int) -> WideRun:
    """A published decode rate against the floor of its own setting: the disaggregated decode
    pool's rate (layout_search.workload, the most sequences that fit), and the one efficiency
    that meets the measurement (layout_search.calibrate): what ``--calibrate`` reports."""
    floor = layout_search.workload(
        wide_ep_deployment(chip, n_chips), WIDE_EP_INPUT, WIDE_EP_OUTPUT, disaggregated=True
    )
    measured = float(spec["value"])
    fitted, efficiency = layout_search.calibrate(floor, measured)
    return WideRun(
        spec=spec,
        floor=floor,
        fitted=fitted,
        efficiency=efficiency,
        measured_over_floor=measured / floor.measured_rate,
        bound=floor.decode_bound,
    )


def build_wide_runs() -> WideRuns:
    systems = data.table("systems")
    specs = {
        "h100": systems["reproduced"]["sglang-deepseek-v3-decode-ep72-h100"],
        **systems["wide_ep"],
    }
    runs = {key: wide_ep_run(spec, *WIDE_EP_CLUSTERS[key]) for key, spec in specs.items()}
    rows = []
    for run in runs.values():
        spec, dep = run.spec, run.floor.deployment
        inside = collectives.fits_in_scale_up(dep.n_chips, dep.chip)
        rows.append(
            f"| {spec['label'].split(',')[0]}, {spec['source_date']} "
            f"| {dep.n_chips} × {dep.chip.name} "
            f"| {'one rack' if inside else 'crosses nodes'} | {spec['value']:,.0f} "
            f"| {run.floor.measured_rate:,.0f} "
            f"| {run.measured_over_floor:.2f} | {run.bound} |"
        )
    table = "\n".join(
        [
            "| decode run, published | GPUs | EP group | measured (out tok/s per GPU) | floor "
            "| measured/floor | the floor's bound |",
            "|:---|:---|:---|---:|---:|---:|:---|",
            *rows,
        ]
    )
    h100_run, rack_run = runs["h100"], runs["sglang-deepseek-gb200-nvl72-decode-ep48"]
    rack_later = runs["sglang-deepseek-gb200-nvl72-decode-bf16-attention"]
    return WideRuns(
        runs=runs,
        table=table,
        wide_speedup=shown.fixed(rack_run.spec["value"] / h100_run.spec["value"], 1),
        h100_ratio=shown.fixed(h100_run.measured_over_floor, 2),
        rack_ratio=shown.fixed(rack_run.measured_over_floor, 2),
        rack_later_ratio=shown.fixed(rack_later.measured_over_floor, 2),
        h100_bound=h100_run.bound,
        rack_bound=rack_run.bound,
    )


def build_rack_physics() -> RackPhysics:
    nvl72 = rack_physics.get_rack("GB200 NVL72")
    hgx = rack_physics.get_rack("DGX H100 node (air)")
    room = rack_physics.room_limits()
    rack_rows = []
    for name in rack_physics.list_racks():
        r = rack_physics.get_rack(name)
        weight = f"{r.weight_kg:,.0f}" if r.weight_kg else "—"
        rack_rows.append(
            f"| {r.name} | {r.gpus} | {r.rack_power_w / 1e3:,.1f} | {r.watts_per_gpu:,.0f} "
            f"| {weight} | {r.cooling} |"
        )
    rack_table = "\n".join(
        [
            "| rack | GPUs (packages) | power (kW) | W per GPU, all-in | weight (kg) | cooling |",
            "|---|---|---|---|---|---|",
            *rack_rows,
        ]
    )
    size_rows = [f"| {d.name} | {d.chips:,} | {d.link} |" for d in rack_physics.domain_sizes()]
    size_table = "\n".join(
        ["| scale-up domain | chips (packages) | joined by |", "|---|---|---|", *size_rows]
    )
    air_w, legacy_w = room["air_cooled_rack_max_w"], room["legacy_rack_w"]
    hgx_nodes_air = rack_physics.gpus_in_power_budget(air_w, hgx.rack_power_w)
    racks = data.table("systems")["racks"]
    kyber = rack_physics.get_rack("Kyber NVL576 (Rubin Ultra)")
    return RackPhysics(
        nvl72_rack=nvl72,
        hgx_rack=hgx,
        room=room,
        rack_table=rack_table,
        size_table=size_table,
        nvl72_kw=shown.fixed(nvl72.rack_power_w / 1e3),
        nvl72_w_per_gpu=shown.grouped(nvl72.watts_per_gpu),
        nvl72_kg=shown.grouped(nvl72.weight_kg),
        hgx_kw=shown.fixed(hgx.rack_power_w / 1e3, 1),
        air_kw=shown.fixed(air_w / 1e3),
        legacy_kw=shown.fixed(legacy_w / 1e3),
        copper_m=shown.fixed(room["copper_reach_m"]),
        air_gpus=str(rack_physics.gpus_in_power_budget(air_w, nvl72.watts_per_gpu)),
        legacy_gpus=str(rack_physics.gpus_in_power_budget(legacy_w, nvl72.watts_per_gpu)),
        hgx_nodes_air=str(hgx_nodes_air),
        hgx_gpus_air=str(hgx_nodes_air * hgx.gpus),
        nvl72_cables=shown.grouped(racks["GB200 NVL72"]["nvlink_copper_cables"]),
        nvl72_miles=str(racks["GB200 NVL72"]["nvlink_copper_miles"]),
        nvl72_gpus=str(nvl72.gpus),
        kyber_kw=shown.fixed(kyber.rack_power_w / 1e3),
        kyber_packages=str(kyber.gpus),
        kyber_dies=str(racks["Kyber NVL576 (Rubin Ultra)"]["gpu_dies"]),
    )


def build_hot_experts(params: Params) -> HotExperts:
    rows = []
    for skew in (0.0, 0.3, 0.5, 0.8):
        loads = moe_balance.zipf_expert_loads(256, skew)
        rows.append(
            f"| {skew:.1f} | {loads[0]:.1f}× | {moe_balance.imbalance_slowdown(loads, 32):.2f} "
            f"| {moe_balance.imbalance_slowdown(loads, 32, 32):.2f} "
            f"| {moe_balance.imbalance_slowdown(loads, 144, 32):.2f} |"
        )
    table = "\n".join(
        [
            "| skew | hottest expert (mean = 1) | EP32 | EP32 + 32 copies | EP144 + 32 copies |",
            "|---|---|---|---|---|",
            *rows,
        ]
    )
    hot = moe_balance.zipf_expert_loads(256, 0.5)
    hot_gpu = float(moe_balance.gpu_loads(hot, 32)[0])
    rack64 = moe.expert_parallel_step(params.deepseek, EP_BATCH, 64, NVL72)
    hot_ep64 = moe_balance.imbalance_slowdown(hot, 64)
    systems = data.table("systems")
    redundant, serving = systems["deepseek_redundant_experts"], systems["deepseek_serving"]
    experts = params.deepseek.n_experts
    uniform = moe_balance.zipf_expert_loads(256, 0.0)
    return HotExperts(
        table=table,
        hot_expert=shown.fixed(float(hot[0]), 1),
        slow_ep32=shown.fixed(moe_balance.imbalance_slowdown(hot, 32), 2),
        slow_ep32_copies=shown.fixed(moe_balance.imbalance_slowdown(hot, 32, 32), 2),
        slow_ep144_copies=shown.fixed(moe_balance.imbalance_slowdown(hot, 144, 32), 2),
        hot_gpu_load=shown.fixed(hot_gpu, 1),
        hot_rest=shown.fixed(float(hot_gpu - hot[0]), 1),
        balanced_us=microseconds(rack64.compute_s),
        hot_ep64_x=shown.fixed(hot_ep64, 2),
        hot_ep64_us=microseconds(rack64.compute_s * hot_ep64),
        ds_copies=str(redundant["prefill_redundant_experts"]),
        ds_prefill_gpus=str(redundant["prefill_gpus"]),
        ds_prefill_slots=str(
            (256 + redundant["prefill_redundant_experts"]) // redundant["prefill_gpus"]
        ),
        ds_decode_ep=str(serving["decode_ep"]),
        ds_report_decode_gpus=str(systems["deepseek_v3_report_decode"]["decode_gpus_per_unit"]),
        ds_decode_slots=str((256 + serving["decode_redundant_experts"]) // serving["decode_ep"]),
        uniform_ep144=shown.fixed(moe_balance.imbalance_slowdown(uniform, 144, 32), 2),
        top8_cap=shown.fixed(moe.sparsity(params.deepseek, "experts")),
        ep32_slots=str((experts + 32) // 32),  # the experts and 32 copies over 32 GPUs
        ep144_slots=str((experts + 32) // 144),
        ep32_per_gpu=str(experts // 32),  # without copies
        ep32_cold=str(experts // 32 - 1),
    )

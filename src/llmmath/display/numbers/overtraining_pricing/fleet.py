"""The over-training and pricing chapter's numbers, last part (``numbers.overtraining_pricing``
gathers them): reading a price sheet, the fleet behind one (DeepSeek's published day: its
margin, its prefill and decode pools, its joules per token), and the check-yourself questions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from IPython.display import Markdown

from llmmath import api_prices, moe, pricing, scaling
from llmmath.api_prices import FleetDay
from llmmath.beyond import rack_physics, serving_systems
from llmmath.core import capacity, collectives, data, serving
from llmmath.core._checks import FloatArray
from llmmath.core.hardware import get_chip
from llmmath.core.training import training_flops
from llmmath.display import pages
from llmmath.display.numbers import shown
from llmmath.display.numbers.overtraining_pricing.serving import ServingCost
from llmmath.display.numbers.overtraining_pricing.training import USD_PER_CHIP_HOUR


@dataclass(frozen=True)
class SheetReading:
    """Reading a price sheet like an engineer: ranges, and DeepSeek's published day."""

    table: str  # HTML, every sheet
    day: FleetDay
    ds_mfu: tuple[float, float]
    ds_read: dict[str, pricing.Range]  # active parameters by dtype over ds_mfu
    gemini_active_lo_b: str
    gemini_active_hi_b: str
    gemini_spread: str
    gemini_kv_lo_kb: str
    gemini_kv_hi_kb: str
    gemini_input_usd: str
    gemini_long_pct: str
    assumed_mfu: str
    assumed_rent: str
    assumed_markup: str
    assumed_context_gap: str
    ds_cost: str
    ds_revenue: str
    ds_margin: str
    ds_markup: str
    ds_bf16_lo_b: str
    ds_bf16_hi_b: str
    ds_fp8_lo_b: str
    ds_fp8_hi_b: str
    ds_params_b: str
    r1_in_usd: str
    ds_pub_revenue: str
    ds_pub_margin: str


@dataclass(frozen=True)
class Pools:
    """Separate pools for prefill and decode: Llama-3-70B's floors and DeepSeek's day."""

    ds_day: serving_systems.PublishedPools
    pools: serving_systems.Pools
    table: str  # markdown
    ds_mix: str
    ds_hits: str
    ds_prefill_nodes: str
    ds_decode_nodes: str
    ds_sum_nodes: str
    ds_fleet_nodes: str
    ds_gap_nodes: str
    nic_gb_s: str
    ds_node_ratio: str
    ds_prefill_ep: str
    ds_decode_ep: str
    prefill_rate: str
    decode_rate: str
    rate_ratio: str
    pool_prefill_chips: str
    pool_decode_chips: str
    pool_decode_share: str
    stall_steps: str
    kv_prompt_mb: str
    kv_move_ms: str
    prefill_2k_ms: str
    rag_decode_share: str


@dataclass(frozen=True)
class Energy:
    """Joules per token: Llama-3-70B on a DGX H100 node at 2,048 tokens, and DeepSeek's day."""

    energy_batches: FloatArray
    energy: rack_physics.ServingEnergy
    joules_out: dict[int, float]  # joules per output token by batch
    share: float  # power's share of the USD 2 rent
    share_high: float  # at the dearest state's industrial price
    share_low: float  # at a hyperscaler's PUE
    share_by_batch: FloatArray
    fleet: rack_physics.FleetDayEnergy
    step64_ms: str
    dgx_kw: str
    watts_per_gpu: str
    pue: str
    pue_low: str
    kw_per_gpu: str
    usd_per_kwh: str
    cents_kwh_high: str
    joules_batch1: str
    joules_batch64: str
    joules_batch256: str
    joules_critical: str
    joules_input: str
    joules_64_over_256: str
    joules_1_over_critical: str
    power_bill: str
    share_pct: str
    share_high_pct: str
    share_low_pct: str
    rent_quarter: str
    ds_mwh: str
    ds_j_token: str
    ds_j_output: str
    ds_tokens_b: str
    ds_power_usd: str
    ds_power_pct: str


@dataclass(frozen=True)
class CheckYourself:
    """Check yourself 1 (13B on 2T tokens, 1,024 H100 at 45%) and 3 (a sheet's ratio)."""

    check3_critical: float
    check3_ratio: float
    peak_tflops: str
    flops: str  # in units of 1e23
    per_chip: str  # in units of 1e14 FLOP/s
    seconds: str  # in units of 1e5 s
    days: str
    hours: str
    check3_r: str
    check3_dense: str
    check3_moe_bound: str
    check3_moe: str
    exercise: Markdown


def _sheet_table() -> str:
    """Every dated price sheet as the page's HTML table, with its note."""
    rows = []
    names = api_prices.list_price_sheets()
    for name in names:
        s = api_prices.get_price_sheet(name)
        tier = (
            f"{s.long_input_usd_per_million:g} / {s.long_output_usd_per_million:g}"
            if s.has_long_tier
            else "—"
        )
        cells = (
            s.model,
            s.vendor,
            s.source_date,
            f"{s.input_usd_per_million:g}",
            f"{s.output_usd_per_million:g}",
            f"{s.output_input_ratio:.1f}×",
            tier,
            "yes" if s.checked else "no",
        )
        rows.append(
            "<tr>"
            + "".join(f"<td style='padding:2px 10px'>{cell}</td>" for cell in cells)
            + "</tr>"
        )
    head = (
        "model",
        "vendor",
        "as of",
        "input",
        "output",
        "out/in",
        "&gt; 200k in / out",
        "re-checked",
    )
    unchecked = sum(not api_prices.get_price_sheet(name).checked for name in names)
    return (
        "<table><tr>"
        + "".join(f"<th style='padding:2px 10px'>{h}</th>" for h in head)
        + "</tr>"
        + "".join(rows)
        + "</table>"
        "<p><small>USD per million tokens, as published on the date given "
        "(<code>src/llmmath/data/api_prices.toml</code> records each source; prices change, "
        "check the vendor's page before quoting one). <em>re-checked</em>: whether the price "
        "was compared with the vendor's page when it was recorded (<code>checked</code>); "
        f"{unchecked} of {len(names)} were transcribed from the course's "
        "reference sheet on offline machines and not re-checked.</small></p>"
    )


def _span(assumed: float | tuple[float, float]) -> tuple[float, float]:
    """An assumption's range, a single value as a range of one."""
    return assumed if isinstance(assumed, tuple) else (assumed, assumed)


def build_sheet_reading() -> SheetReading:
    gemini = pricing.read_price_sheet("Gemini 2.5 Pro")
    kv_bytes = gemini.kv_bytes_per_token
    if kv_bytes is None:  # the sheet has a long-context tier, so its surcharge bounds the KV
        raise ValueError("Gemini 2.5 Pro's sheet lost its long-context tier")
    assume = gemini.assumptions
    mfu, rent = _span(assume.mfu), _span(assume.usd_per_chip_hour)
    markup, gap = _span(assume.markup), _span(assume.context_gap_tokens)
    day = api_prices.get_fleet_day()
    day_cost = api_prices.fleet_day_cost_usd(day.nodes, day.gpus_per_node, day.usd_per_gpu_hour)
    r1 = api_prices.get_price_sheet("DeepSeek-R1")
    day_revenue = api_prices.fleet_day_revenue_usd(day, r1)
    margin = float(api_prices.cost_profit_margin(day_revenue, day_cost))
    # DeepSeek's input price read both ways: MFU 30-60% of the H800's peak (an H100's dense
    # peak) in bf16 and in fp8, at the day's blended markup and USD 2 per GPU-hour.
    ds_mfu = (0.3, 0.6)

    def active_params(dtype: str) -> pricing.Range:
        return pricing.range_over(
            lambda mfu: pricing.active_params_from_input_price(
                r1.input_usd_per_million, "H100", USD_PER_CHIP_HOUR, mfu, 1 + margin, dtype
            ),
            mfu=ds_mfu,
        )

    ds_read = {dtype: active_params(dtype) for dtype in ("bf16", "fp8")}
    at_half = pricing.active_params_from_input_price(
        r1.input_usd_per_million, "H100", USD_PER_CHIP_HOUR, 0.5, 1 + margin
    )
    return SheetReading(
        table=_sheet_table(),
        day=day,
        ds_mfu=ds_mfu,
        ds_read=ds_read,
        gemini_active_lo_b=shown.fixed(gemini.active_params.low / 1e9),
        gemini_active_hi_b=shown.fixed(gemini.active_params.high / 1e9),
        gemini_spread=shown.fixed(gemini.active_params.spread),
        gemini_kv_lo_kb=shown.fixed(kv_bytes.low / 1e3),
        gemini_kv_hi_kb=shown.fixed(kv_bytes.high / 1e3),
        gemini_input_usd=format(gemini.sheet.input_usd_per_million, "g"),
        gemini_long_pct=shown.fixed(100 * (gemini.sheet.long_output_surcharge - 1)),
        assumed_mfu=f"{100 * mfu[0]:.0f}–{100 * mfu[1]:.0f}%",
        assumed_rent=f"{rent[0]:g}–{rent[1]:g}",
        assumed_markup=f"{markup[0]:g}–{markup[1]:g}",
        assumed_context_gap=f"{gap[0] / 1e3:.0f}k–{gap[1] / 1e3:.0f}k",
        ds_cost=shown.grouped(day_cost),
        ds_revenue=shown.grouped(day_revenue),
        ds_margin=shown.percent(margin),
        ds_markup=shown.fixed(1 + margin, 2),
        ds_bf16_lo_b=shown.fixed(ds_read["bf16"].low / 1e9),
        ds_bf16_hi_b=shown.fixed(ds_read["bf16"].high / 1e9),
        ds_fp8_lo_b=shown.fixed(ds_read["fp8"].low / 1e9),
        ds_fp8_hi_b=shown.fixed(ds_read["fp8"].high / 1e9),
        ds_params_b=shown.fixed(float(at_half) / 1e9),
        r1_in_usd=format(r1.input_usd_per_million, "g"),
        ds_pub_revenue=shown.grouped(day.published_revenue_usd),
        ds_pub_margin=shown.percent(day.published_cost_profit_margin),
    )


def build_pools(serving_cost: ServingCost) -> Pools:
    llama_node = serving_cost.llama8
    ds_day = serving_systems.deepseek_pools()
    ds_nodes = ds_day.prefill_nodes + ds_day.decode_nodes
    ds_decode_share = shown.fixed(100 * ds_day.decode_nodes / ds_nodes)
    spec = data.table("systems")["deepseek_serving"]
    pools = serving_systems.disaggregated_pools(
        llama_node,
        ds_day.input_tokens_per_s,
        ds_day.output_tokens_per_s,
        64,
        2048,
        ds_day.cache_hit_fraction,
    )
    prefill_rate = shown.grouped(pools.prefill_tokens_per_s_per_chip)
    decode_rate = shown.grouped(pools.decode_tokens_per_s_per_chip)
    prefill_chips = shown.grouped(pools.prefill_chips)
    decode_chips = shown.grouped(pools.decode_chips)
    decode_share = shown.fixed(100 * pools.decode_share)
    kv_prompt = 2048 * llama_node.model.kv_bytes_per_token(llama_node.kv_dtype)
    kv_move_s = collectives.point_to_point_time_s(kv_prompt / 8, "H100", across_domains=True)
    rag = serving_systems.disaggregated_pools(llama_node, 10.0, 1.0, 64, 2048)
    rows = [
        f"| Llama-3-70B, 8 H100 (floors) | {prefill_rate} per chip | {decode_rate} per chip "
        f"| {prefill_chips} chips | {decode_chips} chips | {decode_share}% |",
        f"| DeepSeek-V3/R1, H800 (measured) "
        f"| {spec['prefill_input_tokens_per_s_per_node']:,.0f} per node, cache hits included "
        f"| {spec['decode_output_tokens_per_s_per_node']:,.0f} per node "
        f"| {ds_day.prefill_nodes:.1f} nodes | {ds_day.decode_nodes:.1f} nodes "
        f"| {ds_decode_share}% |",
    ]
    table = "\n".join(
        [
            "| serving | prefill rate (input tokens/s) | decode rate (output tokens/s) "
            "| prefill pool | decode pool | decode share |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    return Pools(
        ds_day=ds_day,
        pools=pools,
        table=table,
        ds_mix=shown.fixed(ds_day.input_output_ratio, 1),
        ds_hits=shown.fixed(100 * ds_day.cache_hit_fraction),
        ds_prefill_nodes=shown.fixed(ds_day.prefill_nodes, 1),
        ds_decode_nodes=shown.fixed(ds_day.decode_nodes, 1),
        ds_sum_nodes=shown.fixed(ds_nodes, 1),
        ds_fleet_nodes=shown.fixed(ds_day.fleet_nodes, 2),
        ds_gap_nodes=shown.fixed(ds_nodes - ds_day.fleet_nodes, 2),
        nic_gb_s=shown.fixed(get_chip("H100").scale_out_bandwidth_bytes_per_s / 1e9),
        ds_node_ratio=shown.fixed(
            spec["prefill_input_tokens_per_s_per_node"]
            / spec["decode_output_tokens_per_s_per_node"],
            1,
        ),
        ds_prefill_ep=str(spec["prefill_ep"]),
        ds_decode_ep=str(spec["decode_ep"]),
        prefill_rate=prefill_rate,
        decode_rate=decode_rate,
        rate_ratio=shown.fixed(
            pools.prefill_tokens_per_s_per_chip / pools.decode_tokens_per_s_per_chip, 1
        ),
        pool_prefill_chips=prefill_chips,
        pool_decode_chips=decode_chips,
        pool_decode_share=decode_share,
        stall_steps=shown.fixed(serving_systems.prefill_stall_steps(llama_node, 8192, 64, 2048)),
        kv_prompt_mb=shown.fixed(kv_prompt / 1e6),
        kv_move_ms=shown.fixed(float(kv_move_s) * 1e3, 1),
        prefill_2k_ms=shown.fixed(float(serving.prefill(llama_node, 2048, 1).time_s) * 1e3),
        rag_decode_share=shown.fixed(100 * rag.decode_share),
    )


def build_energy(serving_cost: ServingCost) -> Energy:
    llama8 = serving_cost.llama8
    power = rack_physics.electricity()
    dgx = rack_physics.get_rack("DGX H100 node (air)")
    crit_batch = round(float(capacity.step_critical_batch(llama8)))
    energy_batches = np.array([1.0, 64.0, 256.0, crit_batch])
    energy = rack_physics.serving_energy(
        llama8, energy_batches, 2048, dgx, usd_per_chip_hour=USD_PER_CHIP_HOUR
    )
    joules_out = {
        int(b): float(j) for b, j in zip(energy_batches, energy.output_j_per_token, strict=True)
    }
    step64_s = float(serving.decode_step(llama8, 64, 2048).stage_s)
    bill = float(rack_physics.power_usd_per_chip_hour(dgx.watts_per_gpu))
    share = float(energy.power_share)
    share_high = float(
        rack_physics.power_share_of_rent(
            dgx.watts_per_gpu, USD_PER_CHIP_HOUR, usd_per_kwh=power.usd_per_kwh_high
        )
    )
    share_low = float(
        rack_physics.power_share_of_rent(dgx.watts_per_gpu, USD_PER_CHIP_HOUR, pue=power.pue_low)
    )
    share_by_batch = np.asarray(
        energy.output_power_usd_per_million / energy.cost.output_usd_per_million
    )
    fleet = rack_physics.fleet_day_energy(dgx)
    return Energy(
        energy_batches=energy_batches,
        energy=energy,
        joules_out=joules_out,
        share=share,
        share_high=share_high,
        share_low=share_low,
        share_by_batch=share_by_batch,
        fleet=fleet,
        step64_ms=shown.fixed(step64_s * 1e3, 2),
        dgx_kw=shown.fixed(dgx.rack_power_w / 1e3, 1),
        watts_per_gpu=shown.grouped(dgx.watts_per_gpu),
        pue=shown.fixed(power.pue, 2),
        pue_low=shown.fixed(power.pue_low, 2),
        kw_per_gpu=shown.fixed(dgx.watts_per_gpu / 1e3, 3),
        usd_per_kwh=shown.fixed(power.usd_per_kwh, 4),
        cents_kwh_high=shown.fixed(100 * power.usd_per_kwh_high, 2),
        joules_batch1=shown.fixed(joules_out[1]),
        joules_batch64=shown.fixed(joules_out[64], 2),
        joules_batch256=shown.fixed(joules_out[256], 2),
        joules_critical=shown.fixed(joules_out[crit_batch], 2),
        joules_input=shown.fixed(energy.input_j_per_token[0], 2),
        joules_64_over_256=shown.fixed(joules_out[64] / joules_out[256], 1),
        joules_1_over_critical=shown.fixed(joules_out[1] / joules_out[crit_batch]),
        power_bill=shown.fixed(bill, 3),
        share_pct=shown.fixed(100 * share, 1),
        share_high_pct=shown.fixed(100 * share_high),
        share_low_pct=shown.fixed(100 * share_low, 1),
        rent_quarter=shown.fixed(bill / 0.25, 2),
        ds_mwh=shown.fixed(fleet.energy_kwh / 1e3, 1),
        ds_j_token=shown.fixed(fleet.j_per_token, 2),
        ds_j_output=shown.fixed(fleet.j_per_output_token, 2),
        ds_tokens_b=shown.grouped((fleet.day.input_tokens + fleet.day.output_tokens) / 1e9),
        ds_power_usd=shown.grouped(fleet.power_usd),
        ds_power_pct=shown.fixed(100 * fleet.power_share, 1),
    )


def build_check_yourself() -> CheckYourself:
    flop = training_flops(13e9, 2e12)
    seconds = float(scaling.training_time_s(flop, 1024, "H100", 0.45))
    peak = get_chip("H100").peak("bf16")
    # Check yourself 3: the sheet's ratio read as a batch, dense and for a DeepSeek-V3-like MoE.
    critical, ratio = 300.0, 15.0 / 3.0
    sparsity = moe.sparsity("DeepSeek-V3", "experts")  # E/k = 256/8
    return CheckYourself(
        check3_critical=critical,
        check3_ratio=ratio,
        peak_tflops=shown.grouped(peak / 1e12),
        flops=shown.fixed(float(flop) / 1e23, 2),
        per_chip=shown.fixed(peak * 0.45 / 1e14, 2),
        seconds=shown.fixed(seconds / 1e5, 2),
        days=shown.fixed(seconds / 86400, 1),
        hours=shown.grouped(scaling.training_chip_hours(flop, "H100", 0.45)),
        check3_r=shown.fixed(ratio),
        check3_dense=shown.grouped(critical / ratio),
        check3_moe_bound=shown.grouped(critical * sparsity),
        check3_moe=shown.grouped(critical * sparsity / ratio),
        exercise=pages.exercise_link(
            "overtraining_pricing", "the overtraining and pricing exercise"
        ),
    )

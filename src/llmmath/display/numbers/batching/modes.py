"""Why a slow mode cannot be cheap, prefill against decode, tokens per second, the explorer's
answers, and what a fast mode costs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmmath import batching
from llmmath.beyond import serving_modes
from llmmath.beyond.serving_modes import (
    FastMode,
    FastModePrice,
    SlowMode,
)
from llmmath.core import capacity, chip_prices, serving
from llmmath.core.chip_prices import ChipPrice
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.core.placement import Layout
from llmmath.core.serving import DecodeStep
from llmmath.core.setting import Setting
from llmmath.display.numbers import shown
from llmmath.display.numbers.batching.worked import CostHyperbola, T, WorkedNumber


@dataclass(frozen=True)
class LoneRow:
    """One row of the lone-sequence table: a sequence alone on n H100s, at the floor (spread
    evenly) and as TP with its all-reduces serial."""

    alone_ms: str
    alone_cost: str
    tp_ms: str
    tp_cost: str


@dataclass(frozen=True)
class SlowModeCost:
    """Why a slow mode cannot be cheap: a lone sequence on fewer chips, and company."""

    chips_2: LoneRow
    chips_4: LoneRow
    chips_8: LoneRow
    slow: SlowMode
    lone_even: dict[int, Setting]
    lone_tp: dict[int, Setting]
    lone_cost: dict[int, float]
    tp8_dearer: str
    slow_limit: str
    saturation_ms: str
    slow_floor_cost: str
    slow_floor_batch: str
    slow_100ms_cost: str


def build_slow(worked: WorkedNumber) -> SlowModeCost:
    llama = worked.llama
    # A lone sequence on n chips in two settings: spread evenly at the floor (no communication),
    # and as TP with its all-reduces on the critical path (the serial estimate: at batch 1 the next
    # layer waits for the sum, as the parallelism chapter says).
    lone_even = {
        chips: Setting(Deployment(get_model("Llama-3-70B"), get_chip("H100"), chips), T)
        for chips in (2, 4, 8)
    }
    lone_tp = {
        chips: Setting(
            Deployment(get_model("Llama-3-70B"), get_chip("H100"), chips, layout=Layout(tp=chips)),
            T,
            "none",
        )
        for chips in (2, 4, 8)
    }
    lone_cost = {}
    rows = {}
    for chips in (2, 4, 8):
        alone, serial = lone_even[chips].step(1), lone_tp[chips].step(1)
        lone_cost[chips] = float(serial.cost_per_million_tokens_usd())
        rows[chips] = LoneRow(
            alone_ms=shown.fixed(float(alone.time_s * 1e3), 1),
            alone_cost=shown.fixed(float(alone.cost_per_million_tokens_usd()), 2),
            tp_ms=shown.fixed(float(serial.time_s * 1e3), 1),
            tp_cost=shown.fixed(float(lone_cost[chips]), 2),
        )
    tp8_dearer = shown.percent(float(lone_cost[8] / lone_cost[2] - 1), 0)
    slow = serving_modes.slow_mode(llama, T, np.array([0.1]))
    slow_limit = {"compute": "the step turns compute-bound", "memory capacity": "the HBM is full"}[
        slow.floor_limit
    ]
    saturation_ms = shown.fixed(float(slow.saturation_latency_s * 1e3), 1)
    slow_floor_cost = shown.fixed(float(slow.floor_cost_per_million_usd), 2)
    slow_floor_batch = shown.fixed(float(slow.floor_batch), 0)
    slow_100ms_cost = shown.fixed(float(slow.cost_per_million_usd[0]), 2)
    return SlowModeCost(
        chips_2=rows[2],
        chips_4=rows[4],
        chips_8=rows[8],
        slow=slow,
        lone_even=lone_even,
        lone_tp=lone_tp,
        lone_cost=lone_cost,
        tp8_dearer=tp8_dearer,
        slow_limit=slow_limit,
        saturation_ms=saturation_ms,
        slow_floor_cost=slow_floor_cost,
        slow_floor_batch=slow_floor_batch,
        slow_100ms_cost=slow_100ms_cost,
    )


@dataclass(frozen=True)
class PrefillDecode:
    """Prefill against decode: TTFT, MFU and MBU at the floor, a request's latency."""

    ttft_ms: str
    prefill_mfu: str
    decode_mfu_64: str
    decode_mbu_64: str
    prefill_cost_value: float
    prefill_cost: str
    out_over_in_64: str
    out_over_in_full: str
    req_ttft_ms: str
    req_decode_s: str
    req_final_s: str
    req_over: str
    req_tpot_ms: str
    prefill_context: int  # the decode context of the MFU figure
    prefill_caption: str


def build_prefill(worked: WorkedNumber, cost: CostHyperbola) -> PrefillDecode:
    b64, llama, price = worked.b64, worked.llama, worked.price
    full_2k = cost.full_2k
    prompt = 2000
    pre = serving.prefill(llama, prompt)
    ttft_ms = shown.fixed(float(pre.time_s * 1e3), 1)
    prefill_mfu = shown.percent(float(batching.mfu(pre.flops, pre.time_s, llama)), 0)
    decode_mfu_64 = shown.percent(float(batching.mfu(b64.flops, b64.time_s, llama)), 0)
    decode_mbu_64 = shown.percent(float(batching.mbu(b64.bytes_read, b64.time_s, llama)), 0)
    prefill_cost_value = float(
        chip_prices.cost_per_million_tokens_usd(
            pre.time_s, prompt, llama.n_chips, price.usd_per_chip_hour
        )
    )
    prefill_cost = shown.fixed(float(prefill_cost_value), 3)
    out_over_in_64 = shown.fixed(float(b64.cost_per_million_tokens_usd()) / prefill_cost_value, 1)
    out_over_in_full = shown.fixed(
        float(full_2k.cost_per_million_tokens_usd()) / prefill_cost_value, 1
    )
    request = batching.request_latency(llama, 1000, 4000, 64)
    req_ttft_ms = shown.fixed(float(request.ttft_s * 1e3), 1)
    req_decode_s = shown.fixed(float(request.decode_s), 1)
    req_final_s = shown.fixed(float(request.final_context_decode_s), 1)
    req_over = shown.fixed(float(100 * (request.final_context_decode_s / request.decode_s - 1)), 0)
    req_tpot_ms = shown.fixed(float(request.mean_tpot_s * 1e3), 2)
    prefill_context = 2048
    prefill_caption = (
        f"MFU at the floor of one forward pass of {llama.model.name} on {llama.n_chips} "
        f"{llama.chip.name}s against the tokens in it: a prefill of S prompt tokens (orange, "
        "squares) reaches peak at the critical batch (dotted); a decode step of B sequences at "
        "context "
        f"{prefill_context:,} (green, triangles) also pays for their KV reads and levels off far "
        "below it, "
        "and stops where the KV caches fill the HBM."
    )
    return PrefillDecode(
        prefill_context=prefill_context,
        prefill_caption=prefill_caption,
        ttft_ms=ttft_ms,
        prefill_mfu=prefill_mfu,
        decode_mfu_64=decode_mfu_64,
        decode_mbu_64=decode_mbu_64,
        prefill_cost_value=prefill_cost_value,
        prefill_cost=prefill_cost,
        out_over_in_64=out_over_in_64,
        out_over_in_full=out_over_in_full,
        req_ttft_ms=req_ttft_ms,
        req_decode_s=req_decode_s,
        req_final_s=req_final_s,
        req_over=req_over,
        req_tpot_ms=req_tpot_ms,
    )


@dataclass(frozen=True)
class TokensPerSecond:
    """Think in tokens per second: the chips a service of 100M tokens/s needs."""

    service_m: str
    busy_tps: str
    chips_busy: str
    chips_alone: str


def build_tokens_per_s(worked: WorkedNumber) -> TokensPerSecond:
    llama, one = worked.llama, worked.one
    service = (
        1e8  # output tokens per second: the lecture's "hundreds of millions" for a big provider
    )
    busy = serving.decode_step(llama, 256, T)
    service_m = shown.fixed(float(service / 1e6), 0)
    busy_tps = shown.grouped(float(busy.tokens_per_s), 0)
    chips_busy = shown.grouped(float(batching.chips_for_throughput(service, busy)), 0)
    chips_alone = shown.grouped(float(batching.chips_for_throughput(service, one)), 0)
    return TokensPerSecond(
        service_m=service_m, busy_tps=busy_tps, chips_busy=chips_busy, chips_alone=chips_alone
    )


@dataclass(frozen=True)
class MoveIt:
    """Move it yourself: the answers to the explorer's questions 2 and 3."""

    knob_floor_ms: str
    knob_critical: str
    knob_t_c: str
    v5e_price: ChipPrice
    v5e_one: DecodeStep
    tie_alone: float
    tie_best: float
    tie_alone_usd: str
    tie_best_usd: str
    v5e_one_ms: str
    v5e_best_ms: str
    v5e_best_batch: str
    h100_best_ms: str
    h100_best_batch: str
    v5e_price_kind: str
    v5e_price_usd: str
    h100_list: ChipPrice
    h100_list_usd: str


def build_move_it(worked: WorkedNumber) -> MoveIt:
    llama, one, v5e = worked.llama, worked.one, worked.v5e
    # Move it yourself 2: the knobs move the weight floor and the critical batch differently.
    knobs = Deployment(
        get_model("Llama-3-70B"),
        get_chip("H100"),
        8,
        flops_efficiency=0.5,
        bandwidth_efficiency=0.8,
    )
    knob_floor_ms = shown.fixed(float(capacity.weight_floor_s(knobs) * 1e3), 2)
    knob_critical = shown.fixed(float(capacity.step_critical_batch(knobs)), 0)
    knob_t_c = shown.grouped(float(capacity.critical_context(knobs)), 0)
    # Move it yourself 3: the two example prices are of different kinds, so find the H100 price
    # at which the two deployments tie (batching.tie_price_usd: the ratio of chip-seconds per token
    # times the TPU v5e's price).
    v5e_price = chip_prices.example_price("TPU-v5e")
    v5e_one = serving.decode_step(v5e, 1, T)
    v5e_best = serving.decode_step(v5e, capacity.cheapest_batch(v5e, T), T)
    h100_best = serving.decode_step(llama, capacity.cheapest_batch(llama, T), T)  # the HBM full
    tie_alone = float(batching.tie_price_usd(one, v5e_one, v5e_price.usd_per_chip_hour))
    tie_best = float(batching.tie_price_usd(h100_best, v5e_best, v5e_price.usd_per_chip_hour))
    tie_alone_usd = shown.fixed(float(tie_alone), 2)
    tie_best_usd = shown.fixed(float(tie_best), 2)
    v5e_one_ms = shown.fixed(float(v5e_one.time_s * 1e3), 2)
    v5e_best_ms = shown.fixed(float(v5e_best.time_s * 1e3), 2)
    v5e_best_batch = shown.fixed(float(v5e_best.batch), 0)
    h100_best_ms = shown.fixed(float(h100_best.time_s * 1e3), 2)
    h100_best_batch = shown.fixed(float(h100_best.batch), 0)
    v5e_price_kind = v5e_price.kind
    v5e_price_usd = shown.fixed(float(v5e_price.usd_per_chip_hour), 2)
    h100_list = serving_modes.list_price("H100")
    h100_list_usd = shown.fixed(float(h100_list.usd_per_chip_hour), 2)
    return MoveIt(
        knob_floor_ms=knob_floor_ms,
        knob_critical=knob_critical,
        knob_t_c=knob_t_c,
        v5e_price=v5e_price,
        v5e_one=v5e_one,
        tie_alone=tie_alone,
        tie_best=tie_best,
        tie_alone_usd=tie_alone_usd,
        tie_best_usd=tie_best_usd,
        v5e_one_ms=v5e_one_ms,
        v5e_best_ms=v5e_best_ms,
        v5e_best_batch=v5e_best_batch,
        h100_best_ms=h100_best_ms,
        h100_best_batch=h100_best_batch,
        v5e_price_kind=v5e_price_kind,
        v5e_price_usd=v5e_price_usd,
        h100_list=h100_list,
        h100_list_usd=h100_list_usd,
    )


@dataclass(frozen=True)
class FastModeCost:
    """Fast mode: what a shorter step costs, on the same chips or on more."""

    fast: FastMode
    fast_std_batch: str
    fast_std_ms: str
    fast_max: str
    fast_15_batch: str
    fast_15_multiple: str
    fast_2_batch: str
    fast_2_multiple: str
    fast_2_ms: str
    fast_22_multiple: str
    fast_25_multiple: str
    fast_4_multiple: str
    fast_std_limit: str
    fast_1k: FastMode
    fast_1k_std_batch: str
    fast_1k_2_multiple: str
    fast_1k_25_multiple: str
    fast_wider: str
    opus46: FastModePrice
    opus5: FastModePrice
    opus46_speedup: str
    opus46_multiple: str
    opus5_multiple: str
    opus5_speedup: str
    fast_setting: Setting
    h100_domain: str
    fast_caption: str


def build_fast(worked: WorkedNumber, slow: SlowModeCost) -> FastModeCost:
    llama = worked.llama
    slow_mode = slow.slow
    fast = serving_modes.fast_mode(llama, T, np.array([1.5, 2.0, 2.2, 2.5, 4.0]))
    fast_std_batch = shown.fixed(float(fast.standard_batch), 0)
    fast_std_ms = shown.fixed(float(fast.standard_time_s * 1e3), 2)
    fast_max = shown.fixed(float(fast.max_speedup), 2)
    fast_15_batch = shown.fixed(float(fast.fast_batch[0]), 0)
    fast_15_multiple = shown.fixed(float(fast.price_multiple[0]), 2)
    fast_2_batch = shown.fixed(float(fast.fast_batch[1]), 0)
    fast_2_multiple = shown.fixed(float(fast.price_multiple[1]), 1)
    fast_2_ms = shown.fixed(
        float(serving.decode_step(llama, fast.fast_batch[1], T).time_s * 1e3), 2
    )
    fast_22_multiple = shown.fixed(float(fast.price_multiple[2]), 1)
    fast_25_multiple = shown.fixed(float(fast.price_multiple[3]), 1)
    fast_4_multiple = shown.fixed(float(fast.price_multiple[4]), 1)
    fast_std_limit = {"compute": "compute-bound", "memory capacity": "the HBM full"}[
        slow_mode.floor_limit
    ]
    fast_1k = serving_modes.fast_mode(llama, 1024, np.array([2.0, 2.5]))
    fast_1k_std_batch = shown.grouped(float(fast_1k.standard_batch), 0)
    fast_1k_2_multiple = shown.fixed(float(fast_1k.price_multiple[0]), 1)
    fast_1k_25_multiple = shown.fixed(float(fast_1k.price_multiple[1]), 1)
    fast_wider = shown.fixed(float(fast.wider_price_multiple[1]), 1)
    vendors = {v.label: v for v in serving_modes.fast_mode_prices()}
    opus46, opus5 = vendors["Claude Opus 4.6 fast mode"], vendors["Claude Opus 5 fast mode"]
    opus46_speedup = format(opus46.speedup, "g")
    opus46_multiple = format(opus46.price_multiple, "g")
    opus5_multiple = format(opus5.price_multiple, "g")
    opus5_speedup = format(opus5.speedup, "g")
    fast_setting = Setting(llama, T)
    h100_domain = format(llama.chip.scale_up_domain_size, "d")
    fast_caption = (
        "Price per token over the standard price against the speed-up of one user's tokens, for "
        f"{llama.model.name} on {llama.n_chips} {llama.chip.name}s at context {T:,} (floors, "
        "datasheet peaks). A smaller batch on the same chips (solid) gets dearer, slowly and then "
        "fast, and stops at the weight floor (dotted); more chips for the same batch (dashed) "
        "costs nothing at "
        "the floor, because the floor leaves out the collectives. The points are vendors' fast "
        "modes for other models, for scale only."
    )
    return FastModeCost(
        fast_caption=fast_caption,
        fast=fast,
        fast_std_batch=fast_std_batch,
        fast_std_ms=fast_std_ms,
        fast_max=fast_max,
        fast_15_batch=fast_15_batch,
        fast_15_multiple=fast_15_multiple,
        fast_2_batch=fast_2_batch,
        fast_2_multiple=fast_2_multiple,
        fast_2_ms=fast_2_ms,
        fast_22_multiple=fast_22_multiple,
        fast_25_multiple=fast_25_multiple,
        fast_4_multiple=fast_4_multiple,
        fast_std_limit=fast_std_limit,
        fast_1k=fast_1k,
        fast_1k_std_batch=fast_1k_std_batch,
        fast_1k_2_multiple=fast_1k_2_multiple,
        fast_1k_25_multiple=fast_1k_25_multiple,
        fast_wider=fast_wider,
        opus46=opus46,
        opus5=opus5,
        opus46_speedup=opus46_speedup,
        opus46_multiple=opus46_multiple,
        opus5_multiple=opus5_multiple,
        opus5_speedup=opus5_speedup,
        fast_setting=fast_setting,
        h100_domain=h100_domain,
    )

"""One batch at a frontier provider, the traffic that fills a batch (Little's law), and the
batch APIs' slow mode."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmmath.beyond import paged_kv, serving_modes
from llmmath.beyond.paged_kv import Demand
from llmmath.beyond.serving_modes import (
    DeferredWork,
    FleetScale,
)
from llmmath.core import capacity, serving
from llmmath.core import data as _data
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.core.placement import Layout
from llmmath.core.serving import DecodeStep
from llmmath.core.setting import Setting
from llmmath.display.numbers import shown
from llmmath.display.numbers.batching.worked import T, WorkedNumber


@dataclass(frozen=True)
class Frontier:
    """One batch at a frontier provider: DeepSeek-V3 on 16 H100s at a 20 ms target."""

    fleet: FleetScale
    frontier: Deployment
    routing: dict[str, Any]
    frontier_setting: Setting
    fleet_per_expert: FleetScale
    fleet_a2a_ms: str
    fleet_per_expert_a2a_ms: str
    fleet_weight_ms: str
    fleet_serial_ms: str
    fleet_per_expert_serial_ms: str
    ideal_frontier: Deployment
    ideal: FleetScale
    ideal_batch: str
    ideal_tps: str
    ideal_on_ep16: DecodeStep
    ideal_a2a_ms: str
    ideal_room: str
    fleet_batch: str
    fleet_step_ms: str
    fleet_batch_tps: str
    fleet_m: str
    fleet_replicas: str
    fleet_chips: str
    patient: FleetScale
    patient_batch: str
    patient_tps: str
    patient_room: str
    frontier_low: str
    frontier_high: str
    deepseek_per_gpu: str
    fleet_per_gpu_text: str
    deepseek_gap: str


def build_frontier(worked: WorkedNumber) -> Frontier:
    # DeepSeek-V3 as DeepSeek serves it: fp8 matmuls, bf16 attention, experts spread over every GPU
    # (EP16), each GPU attending its own sequences with its own copy of attention, each token sent
    # once per node its experts lie in, dispatched in fp8 (as the CLI counts it for this routing).
    routing = _data.table("systems")["deepseek_routing"]
    # The MoE chapter's first count: one copy of each token per routed expert.
    frontier_per_expert = Deployment(
        get_model("DeepSeek-V3"),
        get_chip("H100"),
        16,
        weight_dtype="fp8",
        compute_dtype="fp8",
        attention_dtype="bf16",
        layout=Layout(ep=16),
    )
    frontier = dataclasses.replace(
        frontier_per_expert,
        expert_dispatch="node_limited",
        dispatch_dtype=routing["dispatch_dtype"],
    )
    frontier_setting = Setting(frontier, T)
    fleet = serving_modes.fleet_scale(frontier, T, 0.020, 3e8)
    fleet_per_expert = serving_modes.fleet_scale(frontier_per_expert, T, 0.020, 3e8)
    fleet_a2a_ms = shown.fixed(float(fleet.step.ep_s) * 1e3, 1)
    fleet_per_expert_a2a_ms = shown.fixed(float(fleet_per_expert.step.ep_s) * 1e3, 1)
    fleet_weight_ms = shown.fixed(float(fleet.step.weight_read_s) * 1e3, 1)
    fleet_serial_ms = shown.fixed(float(fleet.step.serial_s) * 1e3, 1)
    fleet_per_expert_serial_ms = shown.fixed(float(fleet_per_expert.step.serial_s) * 1e3, 1)
    # The ideal split: the weights spread evenly over the 16 GPUs, no all-to-all.
    ideal_frontier = Deployment(
        get_model("DeepSeek-V3"),
        get_chip("H100"),
        16,
        weight_dtype="fp8",
        compute_dtype="fp8",
        attention_dtype="bf16",
    )
    ideal = serving_modes.fleet_scale(ideal_frontier, T, 0.020, 3e8)
    ideal_batch = shown.grouped(float(ideal.batch), 0)
    ideal_tps = shown.grouped(float(ideal.batch_tokens_per_s), 0)
    ideal_on_ep16 = serving.decode_step(frontier_per_expert, ideal.batch, T, allow_overflow=True)
    ideal_a2a_ms = shown.fixed(float(ideal_on_ep16.ep_s) * 1e3, 1)
    ideal_room = shown.grouped(float(capacity.max_batch(frontier, T)), 0)
    fleet_batch = shown.grouped(float(fleet.batch), 0)
    fleet_step_ms = shown.fixed(float(fleet.step.time_s) * 1e3, 1)
    fleet_batch_tps = shown.grouped(float(fleet.batch_tokens_per_s), 0)
    fleet_m = shown.fixed(float(fleet.fleet_tokens_per_s / 1e6), 0)
    fleet_replicas = shown.grouped(float(fleet.replicas), 0)
    fleet_chips = shown.grouped(float(fleet.chips), 0)
    patient = serving_modes.fleet_scale(frontier, T, 0.050, 3e8)
    patient_batch = shown.grouped(float(patient.batch), 0)
    patient_tps = shown.grouped(float(patient.batch_tokens_per_s), 0)
    patient_room = shown.grouped(float(capacity.max_batch(frontier, T)), 0)
    fleet_per_gpu = float(fleet.step.tokens_per_s_per_chip)
    frontier_contexts = (1024, 4096, 8192, 32768)
    frontier_range = {
        t: serving_modes.fleet_scale(frontier, t, 0.020, 3e8).batch_tokens_per_s
        for t in frontier_contexts
    }
    frontier_low = shown.grouped(float(frontier_range[32768]), 0)
    frontier_high = shown.grouped(float(frontier_range[1024]), 0)
    deepseek_day = _data.table("systems")["deepseek_serving"]
    deepseek_per_gpu_value = (
        deepseek_day["decode_output_tokens_per_s_per_node"] / deepseek_day["gpus_per_node"]
    )
    deepseek_per_gpu = shown.grouped(float(deepseek_per_gpu_value), 0)
    fleet_per_gpu_text = shown.grouped(float(fleet_per_gpu), 0)
    deepseek_gap = shown.fixed(float(fleet_per_gpu / deepseek_per_gpu_value), 1)
    return Frontier(
        fleet=fleet,
        frontier=frontier,
        routing=routing,
        frontier_setting=frontier_setting,
        fleet_per_expert=fleet_per_expert,
        fleet_a2a_ms=fleet_a2a_ms,
        fleet_per_expert_a2a_ms=fleet_per_expert_a2a_ms,
        fleet_weight_ms=fleet_weight_ms,
        fleet_serial_ms=fleet_serial_ms,
        fleet_per_expert_serial_ms=fleet_per_expert_serial_ms,
        ideal_frontier=ideal_frontier,
        ideal=ideal,
        ideal_batch=ideal_batch,
        ideal_tps=ideal_tps,
        ideal_on_ep16=ideal_on_ep16,
        ideal_a2a_ms=ideal_a2a_ms,
        ideal_room=ideal_room,
        fleet_batch=fleet_batch,
        fleet_step_ms=fleet_step_ms,
        fleet_batch_tps=fleet_batch_tps,
        fleet_m=fleet_m,
        fleet_replicas=fleet_replicas,
        fleet_chips=fleet_chips,
        patient=patient,
        patient_batch=patient_batch,
        patient_tps=patient_tps,
        patient_room=patient_room,
        frontier_low=frontier_low,
        frontier_high=frontier_high,
        deepseek_per_gpu=deepseek_per_gpu,
        fleet_per_gpu_text=fleet_per_gpu_text,
        deepseek_gap=deepseek_gap,
    )


@dataclass(frozen=True)
class Traffic:
    """How much traffic fills a batch: Little's law for the cheapest batch."""

    answer_value: int
    answer: str
    reader_s: float
    reader_tps: str
    fill_1k: Demand
    fill_1k_ms: str
    fill_1k_user: str
    fill_1k_request_s: str
    fill_1k_rate: str
    fill_1k_day: str
    fill_1k_tps: str
    fill_2k: Demand
    fill_2k_ms: str
    reader_batch_value: float
    fill_reader: Demand
    reader_batch: str
    reader_rate: str
    reader_dearer: str
    kept: Demand
    demand_table: str
    two_h100: Deployment
    fill_two: Demand
    two_batch: str
    two_rate: str
    two_cost: str
    two_over: str
    fleet_streams: str
    question_fill: Demand
    question_rate: str
    question_day: str
    question_tenth: Demand
    question_tenth_rate: str
    question_tenth_batch: str
    question_tenth_naive: str
    question_tenth_over: str
    kept_1_over: str


def build_traffic(worked: WorkedNumber, frontier: Frontier) -> Traffic:
    llama = worked.llama
    fleet = frontier.fleet
    # Little's law: the traffic that keeps a batch full (paged_kv.demand_to_fill and
    # batch_from_demand, from paged_kv).
    answer_value = int(paged_kv.request_lengths()["mean_output_tokens"])  # ShareGPT's mean
    answer = format(answer_value, ",d")
    reader_s = 0.020  # a user who reads 50 tokens per second: a step of at most 20 ms
    reader_tps = shown.fixed(float(1 / reader_s), 0)
    fill_1k = paged_kv.demand_to_fill(llama, 1024, answer_value)
    fill_1k_ms = shown.fixed(float(fill_1k.step_s * 1e3), 1)
    fill_1k_user = shown.fixed(float(1 / fill_1k.step_s), 0)
    fill_1k_request_s = shown.fixed(float(fill_1k.request_s), 2)
    fill_1k_rate = shown.fixed(float(fill_1k.requests_per_s), 0)
    fill_1k_day = shown.fixed(float(fill_1k.requests_per_s) * 86400 / 1e6, 1)
    fill_1k_tps = shown.grouped(float(fill_1k.tokens_per_s), 0)
    fill_2k = paged_kv.demand_to_fill(llama, T, answer_value)
    fill_2k_ms = shown.fixed(float(fill_2k.step_s * 1e3), 1)
    reader_batch_value = float(serving_modes.slow_mode(llama, T, reader_s).batch)
    fill_reader = paged_kv.demand_to_fill(llama, T, answer_value, reader_batch_value)
    reader_batch = shown.fixed(float(reader_batch_value), 0)
    reader_rate = shown.fixed(float(fill_reader.requests_per_s), 0)
    reader_dearer = shown.percent(float(fill_reader.cost_over_floor) - 1, 0)
    demands = np.array([0.1, 1.0, 10.0])
    kept = paged_kv.batch_from_demand(llama, T, answer_value, demands)
    kept_rows = [
        f"| {rate:g} | {rate * 86400:,.0f} | {batch:.1f} | \\${cost:.3g} | {over:.3g}× |"
        for rate, batch, cost, over in zip(
            demands, kept.batch, kept.cost_per_million_usd, kept.cost_over_floor, strict=True
        )
    ]
    fill_row = (
        f"| {float(fill_2k.requests_per_s):.0f} (fills it)"
        f" | {float(fill_2k.requests_per_s) * 86400:,.0f}"
        f" | {float(fill_2k.batch):.0f} | \\${float(fill_2k.cost_per_million_usd):.3g} | 1× |"
    )
    demand_table = "\n".join(
        [
            "| requests per second | requests a day | mean batch | cost per million tokens"
            " | × the floor |",
            "|---|---|---|---|---|",
            *kept_rows,
            fill_row,
        ]
    )
    two_h100 = Deployment(get_model("Llama-3-70B"), get_chip("H100"), 2)
    fill_two = paged_kv.demand_to_fill(two_h100, T, answer_value)
    two_batch = shown.fixed(float(fill_two.batch), 0)
    two_rate = shown.fixed(float(fill_two.requests_per_s), 1)
    two_cost = shown.fixed(float(fill_two.cost_per_million_usd), 2)
    two_over = shown.fixed(float(fill_two.cost_per_million_usd / fill_2k.cost_per_million_usd), 1)
    fleet_streams_value = float(paged_kv.concurrency(fleet.fleet_tokens_per_s, fleet.step.time_s))
    fleet_streams = shown.fixed(float(fleet_streams_value / 1e6), 1)
    # Check yourself: 1,000-token answers at the full batch, then a tenth of that traffic.
    question_fill = paged_kv.demand_to_fill(llama, T, 1000)
    question_rate = shown.fixed(float(question_fill.requests_per_s), 1)
    question_day = shown.fixed(float(question_fill.requests_per_s) * 86400 / 1e6, 1)
    question_tenth = paged_kv.batch_from_demand(
        llama, T, 1000, float(question_fill.requests_per_s) / 10
    )
    question_tenth_rate = shown.fixed(float(question_fill.requests_per_s) / 10, 2)
    question_tenth_batch = shown.fixed(float(question_tenth.batch), 1)
    question_tenth_naive = shown.fixed(float(question_fill.batch) / 10, 1)
    question_tenth_over = shown.fixed(float(question_tenth.cost_over_floor), 0)
    kept_1_over = shown.fixed(float(kept.cost_over_floor[1]), 0)
    return Traffic(
        answer_value=answer_value,
        answer=answer,
        reader_s=reader_s,
        reader_tps=reader_tps,
        fill_1k=fill_1k,
        fill_1k_ms=fill_1k_ms,
        fill_1k_user=fill_1k_user,
        fill_1k_request_s=fill_1k_request_s,
        fill_1k_rate=fill_1k_rate,
        fill_1k_day=fill_1k_day,
        fill_1k_tps=fill_1k_tps,
        fill_2k=fill_2k,
        fill_2k_ms=fill_2k_ms,
        reader_batch_value=reader_batch_value,
        fill_reader=fill_reader,
        reader_batch=reader_batch,
        reader_rate=reader_rate,
        reader_dearer=reader_dearer,
        kept=kept,
        demand_table=demand_table,
        two_h100=two_h100,
        fill_two=fill_two,
        two_batch=two_batch,
        two_rate=two_rate,
        two_cost=two_cost,
        two_over=two_over,
        fleet_streams=fleet_streams,
        question_fill=question_fill,
        question_rate=question_rate,
        question_day=question_day,
        question_tenth=question_tenth,
        question_tenth_rate=question_tenth_rate,
        question_tenth_batch=question_tenth_batch,
        question_tenth_naive=question_tenth_naive,
        question_tenth_over=question_tenth_over,
        kept_1_over=kept_1_over,
    )


@dataclass(frozen=True)
class BatchApis:
    """Batch APIs: the slow mode that exists (company and idle chips)."""

    api_discount: str
    api_hours: str
    api_names: str
    api_rechecked: str
    api_unchecked: str
    deferred: DeferredWork
    deferred_i_batch: str
    deferred_floor_batch: str
    deferred_saving: str
    deferred_i_ms: str
    deferred_floor_ms: str
    deferred_trough: str
    deferred_idle: str
    question_idle: str
    deferred_short: DeferredWork
    deferred_short_saving: str
    question_trough_pct: str


def build_batch_apis(worked: WorkedNumber) -> BatchApis:
    llama = worked.llama
    apis = serving_modes.batch_api_prices()
    api_discount = shown.percent(float(apis[0].discount), 0)
    api_hours = shown.fixed(float(apis[0].turnaround_h), 0)
    api_names = ", ".join(api.label for api in apis)
    api_rechecked = " and ".join(api.label for api in apis if api.checked)
    api_unchecked = " and ".join(api.label for api in apis if not api.checked)
    trough = 0.4  # an assumption for the example: night-time demand at 40% of the daily peak
    deferred = serving_modes.deferred_work(llama, T, 0.010, trough)
    deferred_i_batch = shown.fixed(float(deferred.interactive_batch), 0)
    deferred_floor_batch = shown.fixed(float(deferred.floor_batch), 0)
    deferred_saving = shown.percent(float(deferred.batching_saving), 0)
    deferred_i_ms = shown.fixed(
        float(serving.decode_step(llama, deferred.interactive_batch, T).time_s * 1e3), 2
    )
    deferred_floor_ms = shown.fixed(
        float(serving.decode_step(llama, deferred.floor_batch, T).time_s * 1e3), 2
    )
    deferred_trough = shown.percent(float(trough), 0)
    deferred_idle = shown.percent(float(deferred.idle_share), 0)
    question_trough = 0.6
    question_idle = shown.percent(
        float(serving_modes.deferred_work(llama, T, 0.010, question_trough).idle_share), 0
    )
    deferred_short = serving_modes.deferred_work(llama, 256, 0.010, trough)
    deferred_short_saving = shown.percent(float(deferred_short.batching_saving), 0)
    question_trough_pct = shown.percent(float(question_trough), 0)
    return BatchApis(
        api_discount=api_discount,
        api_hours=api_hours,
        api_names=api_names,
        api_rechecked=api_rechecked,
        api_unchecked=api_unchecked,
        deferred=deferred,
        deferred_i_batch=deferred_i_batch,
        deferred_floor_batch=deferred_floor_batch,
        deferred_saving=deferred_saving,
        deferred_i_ms=deferred_i_ms,
        deferred_floor_ms=deferred_floor_ms,
        deferred_trough=deferred_trough,
        deferred_idle=deferred_idle,
        question_idle=question_idle,
        deferred_short=deferred_short,
        deferred_short_saving=deferred_short_saving,
        question_trough_pct=question_trough_pct,
    )

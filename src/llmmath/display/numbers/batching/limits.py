"""Where the falling stops and the latency floor: B*(T), the critical context, the HBM's
limit, weights / bandwidth and HBM / bandwidth."""

from __future__ import annotations

from dataclasses import dataclass

from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.core.serving import DecodeStep
from llmmath.display.numbers import shown
from llmmath.display.numbers.batching.worked import T, WorkedNumber


@dataclass(frozen=True)
class FallingStops:
    """Where the falling stops: B*(T), the critical context T_c and the HBM's limit."""

    max_b_2k: str
    max_b_4k: str
    max_b_8k: str
    full_8k: DecodeStep
    full_8k_ms: str
    full_8k_read_gb: str
    full_8k_unread_gb: str
    hbm_8_gb: str
    full_8k_cost: str
    v5e_max_b_2k: str
    v5e_t_c: str
    v5e_one_cost: str
    v5e_full_cost: str
    v5e_hbm_gb: str
    fp8_kv_8k: DecodeStep
    fp8_kv_8k_cost: str
    t_c_setups: list[tuple[str, Deployment]]
    t_c_rows: list[str]
    t_c_table: str
    t_c_ds: Deployment
    t_c_ds_mixed: str
    t_c_ds_fp8: str
    t_c_ds_bf16: str
    critical_context_caption: str


def build_falling(worked: WorkedNumber) -> FallingStops:
    llama, v5e = worked.llama, worked.v5e
    max_b_2k = shown.fixed(float(capacity.max_batch(llama, 2048)), 0)
    max_b_4k = shown.fixed(float(capacity.max_batch(llama, 4096)), 0)
    max_b_8k = shown.fixed(float(capacity.max_batch(llama, 8192)), 0)
    full_8k = serving.decode_step(llama, capacity.max_batch(llama, 8192), 8192)
    full_8k_ms = shown.fixed(float(full_8k.time_s * 1e3), 1)
    full_8k_read_gb = shown.fixed(float(full_8k.bytes_read / 1e9), 1)
    full_8k_unread_gb = shown.fixed(float((llama.hbm_bytes - full_8k.bytes_read) / 1e9), 1)
    hbm_8_gb = shown.fixed(float(llama.hbm_bytes / 1e9), 0)
    full_8k_cost = shown.fixed(float(full_8k.cost_per_million_tokens_usd()), 2)
    v5e_max_b_2k = shown.fixed(float(capacity.max_batch(v5e, 2048)), 0)
    v5e_t_c = shown.grouped(float(capacity.critical_context(v5e)), 0)
    v5e_one_cost = shown.fixed(
        float(serving.decode_step(v5e, 1, T).cost_per_million_tokens_usd()), 1
    )
    v5e_full = serving.decode_step(v5e, capacity.max_batch(v5e, T), T)
    v5e_full_cost = shown.fixed(float(v5e_full.cost_per_million_tokens_usd()), 2)
    v5e_hbm_gb = shown.fixed(float(v5e.hbm_bytes / 1e9), 0)
    fp8_kv = Deployment(get_model("Llama-3-70B"), get_chip("H100"), 8, kv_dtype="fp8")
    fp8_kv_8k = serving.decode_step(fp8_kv, capacity.cheapest_batch(fp8_kv, 8192), 8192)
    fp8_kv_8k_cost = shown.fixed(float(fp8_kv_8k.cost_per_million_tokens_usd()), 2)
    t_c_setups = [
        ("dense, GQA", Deployment(get_model("Llama-3-8B"), get_chip("H100"), 1)),
        ("dense, GQA", llama),
        (
            "dense, GQA",
            Deployment(get_model("Llama-3.1-405B"), get_chip("H100"), 16, weight_dtype="fp8"),
        ),
        ("MoE, GQA", Deployment(get_model("Mixtral-8x7B"), get_chip("H100"), 2)),
        # DeepSeek keeps attention in bf16 beside fp8 matmuls (the parallelism chapter; the CLI's
        # default): that row is the one the chapter carries on; the all-fp8 row shows the
        # difference.
        (
            "MoE, MLA",
            Deployment(
                get_model("DeepSeek-V3"),
                get_chip("H100"),
                16,
                weight_dtype="fp8",
                compute_dtype="fp8",
                attention_dtype="bf16",
            ),
        ),
        (
            "MoE, MLA",
            Deployment(
                get_model("DeepSeek-V3"),
                get_chip("H100"),
                16,
                weight_dtype="fp8",
                compute_dtype="fp8",
            ),
        ),
    ]
    t_c_rows = [
        f"| {setup.label} | {kind} | {setup.weight_dtype} | {setup.compute_dtype}"
        f" | {setup.attention_compute_dtype}"
        f" | {capacity.step_critical_batch(setup):,.0f}"
        f" | {setup.model.kv_bytes_per_token(setup.kv_dtype):,.0f}"
        f" | {capacity.critical_context(setup):,.0f} |"
        for kind, setup in t_c_setups
    ]
    t_c_table = "\n".join(
        [
            "| deployment | kind | weights | matmuls | attention | B* at context 0"
            " | KV bytes per token | T_c (tokens) |",
            "|---|---|---|---|---|---|---|---|",
            *t_c_rows,
        ]
    )
    t_c_ds = t_c_setups[-2][1]  # fp8 matmuls, bf16 attention
    t_c_ds_mixed = shown.grouped(float(capacity.critical_context(t_c_ds)), 0)
    t_c_ds_fp8 = shown.grouped(float(capacity.critical_context(t_c_setups[-1][1])), 0)
    t_c_ds_bf16 = shown.grouped(
        float(
            capacity.critical_context(
                Deployment(get_model("DeepSeek-V3"), get_chip("H100"), 16, weight_dtype="fp8")
            )
        ),
        0,
    )
    t_c_value = capacity.critical_context(llama)
    critical_context_caption = (
        f"Where the cost stops falling, {llama.model.name} on {llama.n_chips} {llama.chip.name}s "
        "(floors at datasheet peaks). Left: cost per token against the batch at four contexts; a "
        "dot marks B*(T), past which the step is compute-bound and the cost flat; a cross marks "
        "a curve that is still memory-bound where the HBM fills. Right: B*(T) against the "
        f"context, with the sequences that fit; it is infinite from T_c = {t_c_value:,.0f} "
        "tokens (dashed), and out of reach from where it crosses the capacity line."
    )
    return FallingStops(
        critical_context_caption=critical_context_caption,
        max_b_2k=max_b_2k,
        max_b_4k=max_b_4k,
        max_b_8k=max_b_8k,
        full_8k=full_8k,
        full_8k_ms=full_8k_ms,
        full_8k_read_gb=full_8k_read_gb,
        full_8k_unread_gb=full_8k_unread_gb,
        hbm_8_gb=hbm_8_gb,
        full_8k_cost=full_8k_cost,
        v5e_max_b_2k=v5e_max_b_2k,
        v5e_t_c=v5e_t_c,
        v5e_one_cost=v5e_one_cost,
        v5e_full_cost=v5e_full_cost,
        v5e_hbm_gb=v5e_hbm_gb,
        fp8_kv_8k=fp8_kv_8k,
        fp8_kv_8k_cost=fp8_kv_8k_cost,
        t_c_setups=t_c_setups,
        t_c_rows=t_c_rows,
        t_c_table=t_c_table,
        t_c_ds=t_c_ds,
        t_c_ds_mixed=t_c_ds_mixed,
        t_c_ds_fp8=t_c_ds_fp8,
        t_c_ds_bf16=t_c_ds_bf16,
    )


@dataclass(frozen=True)
class LatencyFloor:
    """The latency floor: weights / bandwidth, HBM / bandwidth, and the batch's latency."""

    weight_floor_ms_2f: str
    weight_floor_ms: str
    hbm_floor_ms: str
    pareto_2k_1_ms: str
    pareto_2k_crit_ms: str
    pareto_2k_gain: str
    pareto_8k_1_ms: str
    pareto_8k_64_ms: str
    pareto_8k_kv_gb: str
    pareto_8k_64_kv_share: str
    v5e_hbm_floor_ms: str
    pareto_contexts: tuple[int, ...]  # the contexts of the latency figure
    pareto_caption: str


def build_latency(worked: WorkedNumber) -> LatencyFloor:
    at_critical, llama, one = worked.at_critical, worked.llama, worked.one
    weight_floor_ms_value = float(capacity.weight_floor_s(llama) * 1e3)
    weight_floor_ms_2f = shown.fixed(float(weight_floor_ms_value), 2)
    weight_floor_ms = shown.fixed(float(weight_floor_ms_value), 1)
    hbm_floor_ms = shown.fixed(float(capacity.hbm_floor_s("H100") * 1e3), 1)
    # The Pareto figure: how much latency the batch costs, at short and at long context.
    pareto_2k_1_ms = shown.fixed(float(one.time_s * 1e3), 2)
    pareto_2k_crit_ms = shown.fixed(float(at_critical.time_s * 1e3), 2)
    pareto_2k_gain = shown.fixed(float(at_critical.tokens_per_s / one.tokens_per_s), 0)
    pareto_8k_1_ms = shown.fixed(float(serving.decode_step(llama, 1, 8192).time_s * 1e3), 2)
    pareto_8k_64 = serving.decode_step(llama, 64, 8192)
    pareto_8k_64_ms = shown.fixed(float(pareto_8k_64.time_s * 1e3), 1)
    pareto_8k_kv_gb = shown.fixed(
        float(llama.model.kv_bytes_per_token(llama.kv_dtype) * 8192 / 1e9), 1
    )
    pareto_8k_64_kv_share = shown.fixed(
        float(pareto_8k_64.kv_read_s / pareto_8k_64.weight_read_s), 1
    )
    v5e_hbm_floor_ms = shown.fixed(float(capacity.hbm_floor_s("TPU-v5e") * 1e3), 1)
    pareto_contexts = (512, 2048, 8192)
    pareto_caption = (
        f"Latency against throughput for {llama.model.name} on {llama.n_chips} "
        f"{llama.chip.name}s, each point a batch size (1, 64, 256, 1,024 marked), one curve per "
        "context, floors at datasheet peaks. At short context, throughput per chip rises steeply "
        "for little latency up to B*(T), then flattens while latency keeps growing; "
        f"at {pareto_contexts[-1]:,} tokens the KV reads make every added sequence cost latency. "
        "The dashed line is weights / bandwidth, the dotted one a full HBM / bandwidth. Longer "
        "contexts fit fewer sequences and stop lower."
    )
    return LatencyFloor(
        pareto_contexts=pareto_contexts,
        pareto_caption=pareto_caption,
        weight_floor_ms_2f=weight_floor_ms_2f,
        weight_floor_ms=weight_floor_ms,
        hbm_floor_ms=hbm_floor_ms,
        pareto_2k_1_ms=pareto_2k_1_ms,
        pareto_2k_crit_ms=pareto_2k_crit_ms,
        pareto_2k_gain=pareto_2k_gain,
        pareto_8k_1_ms=pareto_8k_1_ms,
        pareto_8k_64_ms=pareto_8k_64_ms,
        pareto_8k_kv_gb=pareto_8k_kv_gb,
        pareto_8k_64_kv_share=pareto_8k_64_kv_share,
        v5e_hbm_floor_ms=v5e_hbm_floor_ms,
    )

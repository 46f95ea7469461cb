"""The parallelism chapter's numbers, its third part (``numbers.parallelism`` gathers them):
FP8 training (a second peak, DeepSeek-V3's implied MFU) and long contexts split by context
parallelism."""

from __future__ import annotations

from dataclasses import dataclass

from llmmath import parallelism
from llmmath.beyond import number_formats, serving_systems
from llmmath.core import data, training, training_memory
from llmmath.core.models import get_model
from llmmath.core.training import TrainingStep
from llmmath.display.numbers import shown
from llmmath.display.numbers.parallelism.layouts import CriticalBatch
from llmmath.display.numbers.parallelism.ways import Basics, Memory


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


def build_fp8(basics: Basics, memory: Memory) -> Fp8:
    llama, h100, batch = basics.llama, basics.h100, basics.batch_tokens
    steps = {
        dtype: training.training_step(
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
            training.dp_hiding_batch(h100, 1024, compute_dtype="fp8")
        ),
        tp_limit_fp8=shown.fixed(training.tp_critical_degree(llama, h100, "fp8")),
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


def build_context(basics: Basics, critical_batch: CriticalBatch) -> Context:
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
    act_no_cp = training_memory.activation_memory_bytes(l405, long, n_layers=stage_layers, tp=cp_tp)
    act_cp = training_memory.activation_memory_bytes(
        l405, long / cp, n_layers=stage_layers, tp=cp_tp
    )
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

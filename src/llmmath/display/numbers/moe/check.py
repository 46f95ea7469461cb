"""The MoE chapter's check-yourself questions and its graded exercise (``numbers.moe``
gathers them): Mixtral at batch 4; 128 experts top-8 on a B200; DeepSeek-V3 at EP16 over two
HGX H100 nodes; the longest context of the attention section's DP-attention group."""

from __future__ import annotations

from dataclasses import dataclass

from IPython.display import Markdown

from llmmath import moe
from llmmath.core import roofline
from llmmath.core.hardware import get_chip
from llmmath.core.models import expected_experts_touched
from llmmath.core.units import general
from llmmath.display import pages
from llmmath.display.numbers import shown
from llmmath.display.numbers.moe.experts import Domains, Params
from llmmath.display.numbers.moe.racks import Attention


@dataclass(frozen=True)
class CheckYourself:
    """Check yourself 1-4, and the graded exercise."""

    # 1. Mixtral at batch 4.
    q1_experts: int
    q1_top_k: int
    q1_batch: int
    q1_miss: str  # the chance that every token misses one expert
    q1_touched: str
    q1_share: str
    q1_one: str  # k/E
    q1_under: str
    # 2. 128 experts, top-8, on B200.
    q2_experts: int
    q2_top_k: int
    q2_flops: str
    q2_bandwidth: str
    q2_critical: str
    q2_sparsity: str
    q2_batch: str
    q2_batch_fp8: str
    # 3. DeepSeek-V3 at EP16 over two HGX H100 nodes, 4,096 tokens.
    q3: moe.ExpertLayerStep
    q3_ep: int
    q3_d_model: int
    q3_tokens: int  # tokens per GPU
    q3_batch: str
    q3_sent_mb: str
    q3_out_mb: str
    q3_in_mb: str
    q3_out_ms: str
    q3_in_ms: str
    q3_a2a_ms: str
    q3_compute_ms: str
    q3_ratio: str
    q3_in_frac: str
    # 4. The longest context a DP-attention group of 64 H100s holds the experts' batch at.
    q4_context_value: float
    q4_context_tp_value: float
    q4_kv_kb: str
    q4_free_gb: str
    q4_group_tb: str
    q4_context: str
    q4_context_tp: str
    q4_freed_gb: str
    exercise: Markdown


def build_check_yourself(params: Params, domains: Domains, attention: Attention) -> CheckYourself:
    deepseek, h100 = params.deepseek, params.h100
    # 1. Mixtral at batch 4.
    q1_experts, q1_k, q1_batch = params.mixtral.n_experts, params.mixtral.experts_per_token, 4
    q1_touched = float(expected_experts_touched(q1_batch, q1_experts, q1_k))
    # 2. 128 experts, top-8, on B200.
    b200 = get_chip("B200")
    q2_experts, q2_k = 128, 8
    q2_critical = float(roofline.critical_batch(b200))
    q2_critical_fp8 = float(roofline.critical_batch(b200, weight_dtype="fp8"))
    # 3. DeepSeek-V3 at EP16 over two HGX H100 nodes, 4,096 tokens: half the peers are in the
    # other node.
    q3_batch, q3_ep, hgx = 4096, 16, domains.hgx
    q3 = moe.expert_parallel_step(deepseek, q3_batch, q3_ep, hgx)
    q3_sent = float(q3.all_to_all_bytes_per_gpu)
    q3_out_share = (q3_ep - hgx.n_chips) / q3_ep
    q3_in_share = (hgx.n_chips - 1) / q3_ep
    # 4. The longest context at which the DP-attention group still holds the batch its experts
    # need (the group's free HBM over that batch's caches), and the same with TP8 attention
    # (each latent held 8 times, the attention weights split 8 ways).
    dp_split, tp_split, ep, tp = attention.dp_split, attention.tp_split, attention.ep, attention.tp
    kv = deepseek.kv_bytes_per_token("bf16")
    free = h100.hbm_bytes - float(dp_split.weight_bytes_per_gpu)
    free_tp = h100.hbm_bytes - float(tp_split.weight_bytes_per_gpu)
    context = ep * free / (dp_split.expert_bound_batch * kv)
    context_tp = ep * free_tp / (tp * dp_split.expert_bound_batch * kv)
    return CheckYourself(
        q1_experts=q1_experts,
        q1_top_k=q1_k,
        q1_batch=q1_batch,
        q1_miss=shown.fixed((1 - q1_k / q1_experts) ** q1_batch, 3),
        q1_touched=shown.fixed(q1_touched, 2),
        q1_share=shown.percent(q1_touched / q1_experts),
        q1_one=shown.percent(q1_k / q1_experts),
        q1_under=shown.fixed(q1_touched / q1_k, 1),
        q2_experts=q2_experts,
        q2_top_k=q2_k,
        q2_flops=general(b200.peak("bf16")),
        q2_bandwidth=general(b200.hbm_bandwidth_bytes_per_s),
        q2_critical=shown.fixed(q2_critical),
        q2_sparsity=str(q2_experts // q2_k),
        q2_batch=shown.grouped(q2_critical * q2_experts / q2_k),
        q2_batch_fp8=shown.grouped(q2_critical_fp8 * q2_experts / q2_k),
        q3=q3,
        q3_ep=q3_ep,
        q3_d_model=deepseek.d_model,
        q3_tokens=q3_batch // q3_ep,
        q3_batch=shown.grouped(q3_batch),
        q3_sent_mb=shown.fixed(q3_sent / 1e6, 1),
        q3_out_mb=shown.fixed(q3_sent * q3_out_share / 1e6, 1),
        q3_in_mb=shown.fixed(q3_sent * q3_in_share / 1e6, 1),
        q3_out_ms=shown.fixed(
            q3_sent * q3_out_share / hgx.scale_out_bandwidth_bytes_per_s * 1e3, 2
        ),
        q3_in_ms=shown.fixed(q3_sent * q3_in_share / hgx.scale_up_bandwidth_bytes_per_s * 1e3, 2),
        q3_a2a_ms=shown.fixed(float(q3.all_to_all_s) * 1e3, 2),
        q3_compute_ms=shown.fixed(float(q3.compute_s) * 1e3, 2),
        q3_ratio=shown.fixed(float(q3.all_to_all_s / q3.compute_s), 1),
        q3_in_frac=f"{hgx.n_chips - 1}/{q3_ep}",
        q4_context_value=context,
        q4_context_tp_value=context_tp,
        q4_kv_kb=shown.fixed(kv / 1e3, 1),
        q4_free_gb=shown.gb(free, 1),
        q4_group_tb=shown.fixed(ep * free / 1e12, 2),
        q4_context=shown.grouped(context),
        q4_context_tp=shown.grouped(context_tp),
        q4_freed_gb=shown.gb(free_tp - free),
        exercise=pages.exercise_link("moe", "the mixture-of-experts exercise"),
    )

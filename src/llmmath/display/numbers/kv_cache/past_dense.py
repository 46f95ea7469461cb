"""Attention past the dense cache: sparse top-k (DeepSeek-V3.2) and a linear-attention hybrid
(Qwen3-Next-80B-A3B), beside the dense caches of the capacity wall."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from llmmath import api_prices, kv_cache, pricing
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.setting import Setting
from llmmath.display.numbers import shown
from llmmath.display.numbers.kv_cache.walls import LONG_CONTEXT, CapacityWall


# ---- Attention past the dense cache ----------------------------------------------------------
@dataclass(frozen=True)
class PastDense:
    """Attention past the dense cache: sparse top-k (DeepSeek-V3.2), a hybrid (Qwen3-Next)."""

    #: The figure's curves: bytes one decoded token reads, per design.
    read_curves: kv_cache.ReadPerTokenCurves
    deepseek_v3: ModelConfig
    deepseek_v32: ModelConfig
    qwen3_next: ModelConfig
    #: What-if: Qwen3-Next with every layer attending (its DeltaNet layers as attention).
    qwen3_next_dense: ModelConfig
    #: DeepSeek-V3.2 on 16 H100s (fp8 weights, beside the chapter's DeepSeek-V3), on 128.
    sparse: Deployment
    sparse_wide: Deployment
    #: Qwen3-Next on 2 H100s (fp8 weights), as built and every layer attending.
    hybrid: Deployment
    hybrid_dense: Deployment
    deepseek_setting: Setting
    sparse_setting: Setting
    hybrid_setting: Setting
    #: The lightning indexer: its top k, heads, head dimension and key bytes.
    index_topk: str
    index_heads: str
    index_head_dim: str
    index_key_bytes: str
    #: Bytes per token over all layers: the MLA latent and the index keys.
    latent_kb: str
    index_kb: str
    latent_bytes_text: str
    index_bytes_text: str
    #: Bytes one decoded token reads at 131,072 tokens.
    read_v3: float
    read_v32: float
    mla_read_128k_gb: str
    dsa_read_128k_gb: str
    dsa_vs_mla_128k_value: float
    dsa_vs_mla_128k: str
    dsa_index_share: str
    #: The gain's limit at very long context: the latent over the index key.
    dsa_limit: str
    dsa_held_more: str
    fit_v3_128k: float
    fit_v32_128k: float
    max_batch_v3_128k: str
    max_batch_v32_128k: str
    step_v3: serving.DecodeStep
    step_v32: serving.DecodeStep
    step_v3_ms: str
    step_v32_ms: str
    kv_v3_ms: str
    kv_v32_ms: str
    weights_v32_ms: str
    cost_v3_128k: float
    cost_v32_128k: float
    cost_v3_128k_usd: str
    cost_v32_128k_usd: str
    #: Output cost at 131,072 tokens over that at 8,192, by model name.
    surcharges: dict[str, float]
    #: The smallest output surcharge of the price sheets' long-context tiers.
    tier_output_surcharge: str
    surcharge_405b: str
    surcharge_v3: str
    surcharge_v32: str
    surcharge_qwen3_next: str
    surcharge_qwen3_next_dense: str
    wide_chips: str
    surcharge_v32_wide: str
    qwen3_next_layers: str
    qwen3_next_state_layers: str
    qwen3_next_attention_layers: str
    qwen3_next_kv_bytes: str
    qwen3_next_dense_kv_bytes: str
    qwen3_next_kv_ratio: str
    qwen3_next_state_mb: str
    qwen3_next_state_tokens: str
    qwen3_next_read_128k_gb: str
    llama70_read_128k_gb: str
    fit_qwen3_next_128k: float
    fit_qwen3_next_dense_128k: float
    max_batch_qwen3_next_128k: str
    max_batch_qwen3_next_dense_128k: str
    read_caption: str
    #: Check yourself: DeepSeek-V3.2 at 32,768 tokens.
    question_context: str
    question_picked_gb: str
    question_index_gb: str
    question_read_gb: str
    question_held_gb: str
    question_mla_gb: str
    question_ratio: str


def _surcharge(deployment: Deployment) -> float:
    """Output cost at 131,072 tokens over that at 8,192, each at the largest batch that fits."""
    short_batch = capacity.max_batch(deployment, 8192)
    surcharge = pricing.long_context_surcharge(deployment, short_batch, 8192, LONG_CONTEXT)
    return float(surcharge.output_ratio)


def _read_caption(
    curves: kv_cache.ReadPerTokenCurves, qwen3_next: ModelConfig, index_topk: str
) -> str:
    names = dict(zip(curves.designs, curves.names, strict=True))
    return (
        "Bytes one decoded token reads from its sequence's KV cache against the context "
        f"(log-log), in {curves.dtype} (an fp8 cache halves each curve but the index keys, "
        "fp8 already): a floor, each byte read once at the datasheet bandwidth, weights not "
        f"counted. Dense GQA ({names['GQA']}) and MLA ({names['MLA']}) read everything "
        f"they cache; the sliding window ({names['sliding window']}) stops growing in its "
        "local layers only; the hybrid "
        f"({names['hybrid']}) caches {qwen3_next.n_attention_layers} of its "
        f"{qwen3_next.n_layers} layers plus a constant state; sparse top-k "
        f"({names['sparse top-k']}) reads {index_topk} tokens' latents and every token's "
        "index key. Dashed: what the sparse model holds, the count the capacity wall "
        "compares. Dotted: past each model's longest context, a what-if."
    )


def past_dense(walls: CapacityWall) -> PastDense:
    """Attention past the dense cache, beside the capacity wall's DeepSeek-V3 and 405B."""
    deepseek, big = walls.deepseek, walls.big
    h100 = get_chip("H100")
    v3, v32 = get_model("DeepSeek-V3"), get_model("DeepSeek-V3.2")
    qnext = get_model("Qwen3-Next-80B-A3B")
    sparse = Deployment(v32, h100, 16, weight_dtype="fp8")
    hybrid = Deployment(qnext, h100, 2, weight_dtype="fp8")
    qnext_dense = dataclasses.replace(
        qnext, name="Qwen3-Next, every layer attending (what-if)", n_state_layers=0,
        state_layer_params=0, state_elements_per_layer=0,
    )  # fmt: skip
    hybrid_dense = Deployment(qnext_dense, h100, 2, weight_dtype="fp8")
    sparse_wide = Deployment(v32, h100, 128, weight_dtype="fp8")
    index_topk = shown.grouped(v32.index_topk)
    read_v3 = float(v3.kv_bytes_read("bf16", LONG_CONTEXT))
    read_v32 = float(v32.kv_bytes_read("bf16", LONG_CONTEXT))
    latent_bytes = float(v3.kv_bytes_per_token("bf16"))
    index_bytes = float(v32.kv_bytes_per_token("bf16")) - latent_bytes  # what the indexer adds
    fit_v3 = float(capacity.max_batch(deepseek, LONG_CONTEXT))
    fit_v32 = float(capacity.max_batch(sparse, LONG_CONTEXT))
    step_v3 = serving.decode_step(deepseek, fit_v3, LONG_CONTEXT)
    step_v32 = serving.decode_step(sparse, fit_v32, LONG_CONTEXT)
    cost_v3, cost_v32 = (
        float(step_v3.cost_per_million_tokens_usd()),
        float(step_v32.cost_per_million_tokens_usd()),
    )
    surcharges = {
        dep.model.name: _surcharge(dep) for dep in (big, deepseek, sparse, hybrid, hybrid_dense)
    }
    long_tiers = [
        sheet
        for sheet in map(api_prices.get_price_sheet, api_prices.list_price_sheets())
        if sheet.has_long_tier
    ]
    fit_qnext = float(capacity.max_batch(hybrid, LONG_CONTEXT))
    fit_qnext_dense = float(capacity.max_batch(hybrid_dense, LONG_CONTEXT))
    question = 32768
    read_curves = kv_cache.read_per_token_curves()
    return PastDense(
        read_curves=read_curves,
        deepseek_v3=v3,
        deepseek_v32=v32,
        qwen3_next=qnext,
        qwen3_next_dense=qnext_dense,
        sparse=sparse,
        sparse_wide=sparse_wide,
        hybrid=hybrid,
        hybrid_dense=hybrid_dense,
        deepseek_setting=Setting(deepseek, LONG_CONTEXT),
        sparse_setting=Setting(sparse, LONG_CONTEXT),
        hybrid_setting=Setting(hybrid, LONG_CONTEXT),
        index_topk=index_topk,
        index_heads=str(v32.index_n_heads),
        index_head_dim=str(v32.index_head_dim),
        index_key_bytes=str(v32.index_key_bytes),
        latent_kb=shown.fixed(latent_bytes / 1e3, 1),
        index_kb=shown.fixed(index_bytes / 1e3, 1),
        latent_bytes_text=shown.grouped(latent_bytes),
        index_bytes_text=shown.grouped(index_bytes),
        read_v3=read_v3,
        read_v32=read_v32,
        mla_read_128k_gb=shown.gb(read_v3, 1),
        dsa_read_128k_gb=shown.gb(read_v32, 2),
        dsa_vs_mla_128k_value=read_v3 / read_v32,
        dsa_vs_mla_128k=shown.fixed(read_v3 / read_v32, 1),
        dsa_index_share=shown.percent(LONG_CONTEXT * index_bytes / read_v32),
        dsa_limit=shown.fixed(latent_bytes / index_bytes, 1),
        dsa_held_more=shown.percent(index_bytes / latent_bytes),
        fit_v3_128k=fit_v3,
        fit_v32_128k=fit_v32,
        max_batch_v3_128k=shown.fixed(fit_v3),
        max_batch_v32_128k=shown.fixed(fit_v32),
        step_v3=step_v3,
        step_v32=step_v32,
        step_v3_ms=shown.ms(float(step_v3.time_s)),
        step_v32_ms=shown.ms(float(step_v32.time_s)),
        kv_v3_ms=shown.ms(float(step_v3.kv_read_s)),
        kv_v32_ms=shown.ms(float(step_v32.kv_read_s)),
        weights_v32_ms=shown.ms(float(step_v32.weight_read_s)),
        cost_v3_128k=cost_v3,
        cost_v32_128k=cost_v32,
        cost_v3_128k_usd=shown.fixed(cost_v3, 2),
        cost_v32_128k_usd=shown.fixed(cost_v32, 2),
        surcharges=surcharges,
        tier_output_surcharge=format(min(s.long_output_surcharge for s in long_tiers), "g"),
        surcharge_405b=shown.fixed(surcharges[big.model.name]),
        surcharge_v3=shown.fixed(surcharges[v3.name]),
        surcharge_v32=shown.fixed(surcharges[v32.name]),
        surcharge_qwen3_next=shown.fixed(surcharges[qnext.name], 1),
        surcharge_qwen3_next_dense=shown.fixed(surcharges[qnext_dense.name], 1),
        wide_chips=str(sparse_wide.n_chips),
        surcharge_v32_wide=shown.fixed(_surcharge(sparse_wide), 1),
        qwen3_next_layers=str(qnext.n_layers),
        qwen3_next_state_layers=str(qnext.n_state_layers),
        qwen3_next_attention_layers=str(qnext.n_attention_layers),
        qwen3_next_kv_bytes=shown.grouped(float(qnext.kv_bytes_per_token("bf16"))),
        qwen3_next_dense_kv_bytes=shown.grouped(float(qnext_dense.kv_bytes_per_token("bf16"))),
        qwen3_next_kv_ratio=shown.fixed(
            float(qnext_dense.kv_bytes_per_token("bf16") / qnext.kv_bytes_per_token("bf16"))
        ),
        qwen3_next_state_mb=shown.fixed(qnext.state_bytes_per_sequence("bf16") / 1e6, 1),
        qwen3_next_state_tokens=shown.grouped(
            qnext.state_bytes_per_sequence("bf16") / qnext.kv_bytes_per_token("bf16")
        ),
        qwen3_next_read_128k_gb=shown.gb(float(qnext.kv_bytes_read("bf16", LONG_CONTEXT)), 1),
        llama70_read_128k_gb=shown.gb(
            float(get_model("Llama-3-70B").kv_bytes_read("bf16", LONG_CONTEXT))
        ),
        fit_qwen3_next_128k=fit_qnext,
        fit_qwen3_next_dense_128k=fit_qnext_dense,
        max_batch_qwen3_next_128k=shown.fixed(fit_qnext),
        max_batch_qwen3_next_dense_128k=shown.fixed(fit_qnext_dense),
        read_caption=_read_caption(read_curves, qnext, index_topk),
        question_context=shown.grouped(question),
        question_picked_gb=shown.gb(v32.index_topk * latent_bytes, 3),
        question_index_gb=shown.gb(question * index_bytes, 3),
        question_read_gb=shown.gb(float(v32.kv_bytes_read("bf16", question)), 3),
        question_held_gb=shown.gb(question * float(v32.kv_bytes_per_token("bf16")), 2),
        question_mla_gb=shown.gb(float(v3.kv_bytes_read("bf16", question)), 2),
        question_ratio=shown.fixed(
            float(v3.kv_bytes_read("bf16", question) / v32.kv_bytes_read("bf16", question)), 1
        ),
    )

"""The numbers of ``lessons/kv_cache.md`` (the KV cache: long context and memory tiers).

The chapter's worked settings:

- KV bytes per token: Llama-3-70B (GQA), Llama-2-13B (MHA), DeepSeek-V3 (MLA), in bf16.
- The capacity and bandwidth walls: Llama-3-70B on 8 H100s at 8,192 tokens; Llama-3.1-405B on
  16 H100s at 8,192 and 131,072 tokens; DeepSeek-V3 with fp8 weights on 16 H100s.
- Sliding windows: Gemma-4-31B on one H100 at 1,024 to 131,072 tokens (Gemma-3-27B asked).
- Past the dense cache: DeepSeek-V3.2 (sparse top-k) on 16 H100s and Qwen3-Next-80B-A3B
  (a linear-attention hybrid) on 2 H100s, fp8 weights, 131,072 tokens.
- Memory tiers: an 8,192-token Llama-3-70B prefix on 8 H100s, prefill at 40% to 100% MFU.
- Paging: ShareGPT's requests on Llama-3-70B on 8 H100s, 8,192 tokens reserved.
- Formats: Llama-3.1-405B on 8 B200s at 32,768 tokens, bf16, fp8 and NVFP4 recipes.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from IPython.display import Markdown

from llmmath import kv_cache, memory_tiers, pricing
from llmmath.beyond import focus, number_formats, serving_modes
from llmmath.beyond.paged_kv import KVPacking
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.setting import Setting
from llmmath.display import pages
from llmmath.display.numbers import shown

FloatArray = npt.NDArray[np.float64]

#: The long context of the chapter's comparisons: 128k tokens.
LONG_CONTEXT = 131072


# ---- How big is the cache? -------------------------------------------------------------------
@dataclass(frozen=True)
class CacheSize:
    """How big is the cache? Bytes per token for GQA, MHA and MLA, in bf16."""

    llama70: ModelConfig
    #: Llama-2-13B: MHA, a 4,096-token window.
    llama2: ModelConfig
    llama70_query_heads: str
    llama70_kv_heads: str
    #: Bytes per token in bf16 and int8, and as MHA would cache (one pair per query head).
    llama70_kv_bytes: str
    llama70_kv_bytes_int8: str
    llama70_mha_kv_bytes: str
    llama70_mha_over: str
    llama2_window: str
    llama2_window_gb: str
    #: The scaling book's 8,192-token sequence, twice Llama-2-13B's window: a what-if.
    llama2_8k_gb: str
    llama2_weights_gb: str
    deepseek_kv_bytes: str
    deepseek_mha_kv_bytes: str
    deepseek_mla_saving: str
    llama405_kv_bytes: str
    llama405_128k_gb: str


def _cache_size() -> CacheSize:
    llama70, llama2 = get_model("Llama-3-70B"), get_model("Llama-2-13B")
    deepseek = get_model("DeepSeek-V3")
    deepseek_mha = kv_cache.mha_kv_bytes_per_token("DeepSeek-V3")
    return CacheSize(
        llama70=llama70,
        llama2=llama2,
        llama70_query_heads=str(llama70.n_heads),
        llama70_kv_heads=str(llama70.n_kv_heads),
        llama70_kv_bytes=shown.grouped(llama70.kv_bytes_per_token()),
        llama70_kv_bytes_int8=shown.grouped(llama70.kv_bytes_per_token("int8")),
        llama70_mha_kv_bytes=shown.grouped(kv_cache.mha_kv_bytes_per_token("Llama-3-70B")),
        llama70_mha_over=shown.fixed(
            kv_cache.mha_kv_bytes_per_token(llama70) / llama70.kv_bytes_per_token()
        ),
        llama2_window=shown.grouped(llama2.max_context),
        llama2_window_gb=shown.gb(
            float(kv_cache.kv_bytes_per_sequence(llama2, llama2.max_context)), 2
        ),
        llama2_8k_gb=shown.gb(float(kv_cache.kv_bytes_per_sequence(llama2, 8192)), 2),
        llama2_weights_gb=shown.gb(llama2.weight_bytes("bf16")),
        deepseek_kv_bytes=shown.grouped(deepseek.kv_bytes_per_token()),
        deepseek_mha_kv_bytes=shown.grouped(deepseek_mha),
        deepseek_mla_saving=shown.fixed(deepseek_mha / deepseek.kv_bytes_per_token()),
        llama405_kv_bytes=shown.grouped(get_model("Llama-3.1-405B").kv_bytes_per_token()),
        llama405_128k_gb=shown.gb(
            float(kv_cache.kv_bytes_per_sequence("Llama-3.1-405B", LONG_CONTEXT)), 1
        ),
    )


# ---- The capacity wall -----------------------------------------------------------------------
@dataclass(frozen=True)
class CapacityWall:
    """The capacity wall: the largest batch whose caches fit beside the weights."""

    #: Llama-3-70B on 8 H100s, Llama-3.1-405B on 16, DeepSeek-V3 (fp8 weights) on 16.
    llama: Deployment
    big: Deployment
    deepseek: Deployment
    #: The settings the page prints: the 70B at 8,192 tokens, the 405B at 131,072.
    llama_setting: Setting
    big_setting: Setting
    llama_kv_share: str
    llama_kv_budget_gb: str
    llama_max_batch_8k: str
    llama_max_context_256: str
    big_kv_share: str
    big_kv_budget_gb: str
    big_max_batch_8k: str
    big_max_batch_128k: str
    deepseek_max_batch_128k: str
    #: The 405B's short-context critical batch B*.
    big_critical_batch: str
    big_critical_context: str
    capacity_caption: str


def _capacity_wall() -> CapacityWall:
    h100 = get_chip("H100")
    llama = Deployment(get_model("Llama-3-70B"), h100, 8)
    big = Deployment(get_model("Llama-3.1-405B"), h100, 16)
    deepseek = Deployment(get_model("DeepSeek-V3"), h100, 16, weight_dtype="fp8")
    critical_contexts = [
        shown.grouped(capacity.critical_context(dep)) for dep in (llama, big, deepseek)
    ]
    return CapacityWall(
        llama=llama,
        big=big,
        deepseek=deepseek,
        llama_setting=Setting(llama, 8192),
        big_setting=Setting(big, LONG_CONTEXT),
        llama_kv_share=shown.percent(kv_cache.kv_share_of_hbm(llama)),
        llama_kv_budget_gb=shown.gb(llama.kv_budget_bytes),
        llama_max_batch_8k=shown.fixed(float(kv_cache.max_batch(llama, 8192))),
        llama_max_context_256=shown.grouped(float(kv_cache.max_context(llama, 256))),
        big_kv_share=shown.percent(kv_cache.kv_share_of_hbm(big)),
        big_kv_budget_gb=shown.gb(big.kv_budget_bytes),
        big_max_batch_8k=shown.fixed(float(kv_cache.max_batch(big, 8192))),
        big_max_batch_128k=shown.fixed(float(kv_cache.max_batch(big, LONG_CONTEXT))),
        deepseek_max_batch_128k=shown.fixed(float(kv_cache.max_batch(deepseek, LONG_CONTEXT))),
        big_critical_batch=shown.fixed(capacity.step_critical_batch(big)),
        big_critical_context=critical_contexts[1],
        capacity_caption=(
            "The capacity wall: the largest batch whose KV caches fit beside the weights, "
            "against the context (log-log: $B_{max}$ falls like $1/T$). Dotted: each "
            "deployment's short-context critical batch $B^*$, where the matmuls outlast the "
            "weight read; below it the weights are shared by fewer tokens than they could be. "
            "Counting the KV read, a step turns compute-bound only at a larger batch, and at "
            "none past the critical context $T_c$ "
            f"({critical_contexts[0]}, {critical_contexts[1]} and {critical_contexts[2]} "
            "tokens here): there every batch that fits is bandwidth-bound."
        ),
    )


# ---- Sliding windows: layers that forget -----------------------------------------------------
@dataclass(frozen=True)
class SlidingWindows:
    """Sliding windows: Gemma 4's local layers counted exactly, beside the full count."""

    gemma4: ModelConfig
    #: Gemma-4-31B on one H100.
    gemma4_one: Deployment
    gemma4_local_layers: str
    gemma4_global_layers: str
    gemma4_kv_heads: str
    gemma4_head_dim: str
    gemma4_global_kv_heads: str
    gemma4_global_head_dim: str
    #: Bytes per token with every layer counted as global, and what a token past the window adds.
    gemma4_full_kv_bytes: str
    gemma4_global_kv_bytes: str
    #: The full count's overcount at very long context: the first over the second.
    gemma4_overcount_limit: str
    gemma4_weights_gb: str
    gemma4_budget_gb: str
    #: The table's contexts, each sequence's bytes counted in full and exactly, and the
    #: sequences that fit beside the weights by either count.
    contexts: FloatArray
    full_bytes: FloatArray
    exact_bytes: FloatArray
    fit_full: FloatArray
    fit_exact: FloatArray
    table: str
    overcount_8k: str
    overcount_128k: str
    fit_full_8k: str
    fit_exact_8k: str
    fit_exact_32k: str
    gemma3: ModelConfig
    gemma3_window: str
    gemma3_local_per_global: str
    gemma3_kv_heads: str
    gemma3_head_dim: str
    #: Check yourself: Gemma 3 27B at 32,768 tokens.
    question_context: str
    question_layers: str
    question_global_layers: str
    question_local_layers: str
    question_layer_kv_bytes: str
    question_full_gb: str
    question_exact_gb: str
    question_overcount: str


def _window_table(
    contexts: FloatArray,
    full: FloatArray,
    exact: FloatArray,
    fit_full: FloatArray,
    fit_exact: FloatArray,
) -> str:
    rows = [
        "| context | full-attention count (GB) | exact (GB) | overcount "
        "| sequences that fit: counted in full | exactly |",
        "|---|---|---|---|---|---|",
    ]
    for context, full_bytes, exact_bytes, n_full, n_exact in zip(
        contexts, full, exact, fit_full, fit_exact, strict=True
    ):
        rows.append(
            f"| {context:,.0f} | {full_bytes / 1e9:.2f} | {exact_bytes / 1e9:.2f} "
            f"| {full_bytes / exact_bytes:.1f}× | {n_full:.0f} | {n_exact:.0f} |"
        )
    return "\n".join(rows)


def _sliding_windows() -> SlidingWindows:
    gemma4 = get_model("Gemma-4-31B")
    one = Deployment(gemma4, get_chip("H100"), 1)
    full_per_token = gemma4.kv_bytes_per_token()
    # What each token adds past the window: the global layers' keys and values alone.
    global_per_token = float(
        kv_cache.kv_bytes_per_sequence(gemma4, 2049) - kv_cache.kv_bytes_per_sequence(gemma4, 2048)
    )
    contexts = np.array([1024.0, 8192.0, 32768.0, 131072.0])
    full = contexts * full_per_token
    exact = np.asarray(kv_cache.kv_bytes_per_sequence(gemma4, contexts))
    fit_full = np.floor(one.kv_budget_bytes / full)  # every layer counted as global
    fit_exact = np.asarray(capacity.max_batch(one, contexts))  # the package's one count
    gemma3 = focus.get_focus_model("Gemma-3-27B")
    question_context = 32768
    gemma3_full = question_context * gemma3.kv_bytes_per_token()
    gemma3_exact = kv_cache.kv_bytes_per_sequence(gemma3, question_context)
    return SlidingWindows(
        gemma4=gemma4,
        gemma4_one=one,
        gemma4_local_layers=str(gemma4.n_local_layers),
        gemma4_global_layers=str(gemma4.n_global_layers),
        gemma4_kv_heads=str(gemma4.n_kv_heads),
        gemma4_head_dim=str(gemma4.head_dim),
        gemma4_global_kv_heads=str(gemma4.global_kv_heads),
        gemma4_global_head_dim=str(gemma4.global_head_dim),
        gemma4_full_kv_bytes=shown.grouped(full_per_token),
        gemma4_global_kv_bytes=shown.grouped(global_per_token),
        gemma4_overcount_limit=shown.fixed(float(full_per_token) / global_per_token),
        gemma4_weights_gb=shown.gb(one.weight_bytes, 1),
        gemma4_budget_gb=shown.gb(one.kv_budget_bytes, 1),
        contexts=contexts,
        full_bytes=full,
        exact_bytes=exact,
        fit_full=fit_full,
        fit_exact=fit_exact,
        table=_window_table(contexts, full, exact, fit_full, fit_exact),
        overcount_8k=shown.fixed(full[1] / exact[1], 1),
        overcount_128k=shown.fixed(full[3] / exact[3], 1),
        fit_full_8k=shown.fixed(fit_full[1]),
        fit_exact_8k=shown.fixed(fit_exact[1]),
        fit_exact_32k=shown.fixed(fit_exact[2]),
        gemma3=gemma3,
        gemma3_window=shown.grouped(gemma3.sliding_window),
        gemma3_local_per_global=str(gemma3.local_per_global),
        gemma3_kv_heads=str(gemma3.n_kv_heads),
        gemma3_head_dim=str(gemma3.head_dim),
        question_context=shown.grouped(question_context),
        question_layers=str(gemma3.n_layers),
        question_global_layers=str(gemma3.n_global_layers),
        question_local_layers=str(gemma3.n_local_layers),
        question_layer_kv_bytes=shown.grouped(float(gemma3.kv_bytes_per_token()) / gemma3.n_layers),
        question_full_gb=shown.gb(gemma3_full, 1),
        question_exact_gb=shown.gb(float(gemma3_exact), 2),
        question_overcount=shown.fixed(float(gemma3_full / gemma3_exact), 1),
    )


# ---- The bandwidth wall ----------------------------------------------------------------------
@dataclass(frozen=True)
class BandwidthWall:
    """The bandwidth wall: where a step reads more KV cache than weights, and its cost."""

    #: T*, where the KV read equals the weight read: the 70B at batch 64, the 405B at 16.
    llama_crossover_64: str
    big_crossover_16: str
    #: The 405B's sequences of 131,072 tokens that fit (the HBM full).
    big_room_128k: float
    big_step_8k: serving.DecodeStep
    big_step_128k: serving.DecodeStep
    big_step_8k_ms: str
    big_step_128k_ms: str
    big_kv_share_128k: str
    llama_kv_share_8k: str
    #: The 405B's cost per million tokens at the best batch that fits, and the ratio.
    big_best_cost_8k: str
    big_best_cost_128k: str
    big_best_cost_ratio: str
    step_time_batches: tuple[int, ...]
    step_time_caption: str


def _step_time_caption(big: Deployment, batches: tuple[int, ...]) -> str:
    crossings = {b: float(kv_cache.kv_crossover_context(big, b)) for b in batches}
    crossed = [b for b in batches if crossings[b] <= big.model.max_context]
    uncrossed = [b for b in batches if crossings[b] > big.model.max_context]
    return (
        f"Decode step time of {big.model.name} on {big.n_chips} {big.chip.name}s against the "
        f"context, at batches {', '.join(map(str, batches[:-1]))} and "
        f"{batches[-1]} (dotted where the caches no longer fit; log context, linear "
        "time). The dashed line is the weight read; a cross marks $T^*$, where the KV read "
        "equals it: at batch "
        + " and ".join(f"{b}, {crossings[b]:,.0f} tokens" for b in crossed)
        + (". At batch " if len(uncrossed) == 1 else ". At batches ")
        + " and ".join(map(str, uncrossed))
        + f" it lies past the model's {big.model.max_context:,} tokens of context, off the "
        "plot. Past $T^*$ the step grows linearly with $T$."
    )


def _bandwidth_wall(walls: CapacityWall) -> BandwidthWall:
    llama, big = walls.llama, walls.big
    short = serving.decode_step(big, 16, 8192)
    room_128k = float(kv_cache.max_batch(big, LONG_CONTEXT))
    long = serving.decode_step(big, room_128k, LONG_CONTEXT)
    costs = np.asarray(kv_cache.best_cost_per_million_tokens_usd(big, np.array([8192.0, 131072.0])))
    batches = (1, 4, 16)
    return BandwidthWall(
        llama_crossover_64=shown.grouped(float(kv_cache.kv_crossover_context(llama, 64))),
        big_crossover_16=shown.grouped(float(kv_cache.kv_crossover_context(big, 16))),
        big_room_128k=room_128k,
        big_step_8k=short,
        big_step_128k=long,
        big_step_8k_ms=shown.ms(float(short.time_s)),
        big_step_128k_ms=shown.ms(float(long.time_s)),
        big_kv_share_128k=shown.percent(
            float(kv_cache.kv_read_share(big, room_128k, LONG_CONTEXT))
        ),
        llama_kv_share_8k=shown.percent(float(kv_cache.kv_read_share(llama, 64, 8192))),
        big_best_cost_8k=shown.fixed(float(costs[0]), 2),
        big_best_cost_128k=shown.fixed(float(costs[1]), 2),
        big_best_cost_ratio=shown.fixed(float(costs[1] / costs[0])),
        step_time_batches=batches,
        step_time_caption=_step_time_caption(big, batches),
    )


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


def _past_dense(walls: CapacityWall) -> PastDense:
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
        for sheet in map(pricing.get_price_sheet, pricing.list_price_sheets())
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


# ---- Where a cached prefix should live -------------------------------------------------------
@dataclass(frozen=True)
class PrefixTiers:
    """Where a cached prefix should live: the tiers, and keeping against recomputing."""

    tiers: dict[str, memory_tiers.MemoryTier]
    #: Each tier's rent in dollars per GB-hour.
    usd_gb_hour: dict[str, float]
    hbm_capacity_gb: str
    hbm_bandwidth_gbs: str
    hbm_usd_gb_hour: str
    dram_capacity_gb: str
    dram_bandwidth_gbs: str
    dram_usd_gb_hour: str
    nvme_capacity_gb: str
    nvme_bandwidth_gbs: str
    nvme_usd_gb_hour: str
    disk_bandwidth_gbs: str
    disk_usd_gb_hour: str
    #: The prefix: 8,192 tokens of Llama-3-70B on 8 H100s, held 10 minutes for 10 reuses,
    #: its prefill at 100% MFU (the floor) and at 40%.
    prefix_tokens: int
    prefix: memory_tiers.PrefixCache
    slow_prefix: memory_tiers.PrefixCache
    #: The prefill's MFU: a typical one, a middle one (the tier map's), the floor.
    mfu_low_value: float
    mfu_mid_value: float
    mfu_floor_value: float
    mfu_low: str
    mfu_mid: str
    #: Each tier's break-even hold time in seconds, reused once, at each MFU.
    even_floor_s: dict[str, float]
    even_mid_s: dict[str, float]
    even_low_s: dict[str, float]
    prefix_gb: str
    prefill_ms: str
    prefill_slow_ms: str
    dram_reload_ms: str
    nvme_reload_ms: str
    disk_reload_ms: str
    #: A reuse's saving on the networked disk (a prefill less a reload), at 100% and 40% MFU.
    disk_saved_floor_ms: str
    disk_saved_low_ms: str
    disk_saved_ratio: str
    #: Break-even ranges from the floor prefill to the 40% one, and single ends.
    hbm_even_s: str
    dram_even_min: str
    nvme_even_h: str
    disk_even_h: str
    nvme_even_mid_h: str
    disk_even_mid_h: str
    disk_even_floor_h: str
    nvme_even_low_h: str
    disk_even_low_h: str
    #: The cheapest place for 10 reuses over 10 minutes, at 100% and 40% MFU.
    cheapest: str
    cheapest_slow: str
    tier_map_prefix: int
    tier_map_caption: str


def _range(low: float, high: float, digits: int) -> str:
    return f"{shown.fixed(low, digits)}–{shown.fixed(high, digits)}"


def _prefix_tiers(walls: CapacityWall) -> PrefixTiers:
    llama = walls.llama
    tiers = {name: memory_tiers.get_tier(name) for name in memory_tiers.list_tiers()}
    capacity_gb = {name: float(tier.capacity_bytes / 1e9) for name, tier in tiers.items()}
    bandwidth_gbs = {name: float(tier.bandwidth_bytes_per_s / 1e9) for name, tier in tiers.items()}
    usd_gb_hour = {name: float(tier.usd_per_byte_s * 1e9 * 3600) for name, tier in tiers.items()}
    tokens = 8192
    prefix = memory_tiers.prefix_cache(llama, tokens, 600.0, 10.0)
    # A break-even is a difference of two floors (a prefill saved, a reload paid): show it over
    # the prefill's MFU, 40% (a typical prefill) to 100% (the floor).
    mfu_low, mfu_mid, mfu_floor = 0.4, 0.5, 1.0

    def even_at(mfu: float) -> dict[str, float]:
        return {
            name: float(
                memory_tiers.break_even_hold_s(llama, tokens, name, 1, prefill_efficiency=mfu)
            )
            for name in prefix.tiers
        }

    even_floor, even_mid, even_low = even_at(mfu_floor), even_at(mfu_mid), even_at(mfu_low)
    slow = memory_tiers.prefix_cache(llama, tokens, 600.0, 10.0, prefill_efficiency=mfu_low)
    disk = prefix.tiers.index("networked_disk")
    saved_floor = prefix.recompute_s - prefix.reload_s[disk]
    saved_low = slow.recompute_s - slow.reload_s[disk]
    reload_ms = {name: float(prefix.reload_s[i] * 1e3) for i, name in enumerate(prefix.tiers)}
    tier_map_prefix = 8192
    return PrefixTiers(
        tiers=tiers,
        usd_gb_hour=usd_gb_hour,
        hbm_capacity_gb=shown.grouped(capacity_gb["HBM"]),
        hbm_bandwidth_gbs=shown.grouped(bandwidth_gbs["HBM"]),
        hbm_usd_gb_hour=shown.fixed(usd_gb_hour["HBM"], 3),
        dram_capacity_gb=shown.grouped(capacity_gb["host_DRAM"]),
        dram_bandwidth_gbs=shown.grouped(bandwidth_gbs["host_DRAM"]),
        dram_usd_gb_hour=shown.fixed(usd_gb_hour["host_DRAM"], 4),
        nvme_capacity_gb=shown.grouped(capacity_gb["local_NVMe"]),
        nvme_bandwidth_gbs=shown.grouped(bandwidth_gbs["local_NVMe"]),
        nvme_usd_gb_hour=shown.fixed(usd_gb_hour["local_NVMe"], 6),
        disk_bandwidth_gbs=shown.grouped(bandwidth_gbs["networked_disk"], 1),
        disk_usd_gb_hour=shown.fixed(usd_gb_hour["networked_disk"], 7),
        prefix_tokens=tokens,
        prefix=prefix,
        slow_prefix=slow,
        mfu_low_value=mfu_low,
        mfu_mid_value=mfu_mid,
        mfu_floor_value=mfu_floor,
        mfu_low=shown.percent(mfu_low),
        mfu_mid=shown.percent(mfu_mid),
        even_floor_s=even_floor,
        even_mid_s=even_mid,
        even_low_s=even_low,
        prefix_gb=shown.gb(float(prefix.prefix_bytes), 2),
        prefill_ms=shown.ms(float(prefix.recompute_s), 0),
        prefill_slow_ms=shown.ms(float(slow.recompute_s), 0),
        dram_reload_ms=shown.fixed(reload_ms["host_DRAM"], 1),
        nvme_reload_ms=shown.fixed(reload_ms["local_NVMe"]),
        disk_reload_ms=shown.fixed(reload_ms["networked_disk"]),
        disk_saved_floor_ms=shown.ms(float(saved_floor), 0),
        disk_saved_low_ms=shown.ms(float(saved_low), 0),
        disk_saved_ratio=shown.fixed(float(saved_low / saved_floor)),
        hbm_even_s=_range(even_floor["HBM"], even_low["HBM"], 0),
        dram_even_min=_range(even_floor["host_DRAM"] / 60, even_low["host_DRAM"] / 60, 1),
        nvme_even_h=_range(even_floor["local_NVMe"] / 3600, even_low["local_NVMe"] / 3600, 1),
        disk_even_h=_range(
            even_floor["networked_disk"] / 3600, even_low["networked_disk"] / 3600, 1
        ),
        nvme_even_mid_h=shown.fixed(even_mid["local_NVMe"] / 3600, 1),
        disk_even_mid_h=shown.fixed(even_mid["networked_disk"] / 3600, 1),
        disk_even_floor_h=shown.fixed(even_floor["networked_disk"] / 3600, 1),
        nvme_even_low_h=shown.fixed(even_low["local_NVMe"] / 3600, 1),
        disk_even_low_h=shown.fixed(even_low["networked_disk"] / 3600, 1),
        cheapest=prefix.cheapest_name().replace("_", " "),
        cheapest_slow=slow.cheapest_name().replace("_", " "),
        tier_map_prefix=tier_map_prefix,
        tier_map_caption=(
            f"Which tier? The cheapest place to keep a {tier_map_prefix:,}-token prefix of "
            f"{llama.model.name} on {llama.n_chips} {llama.chip.name}s, against the hold time "
            "and the expected number of reuses, at the example prices, with the prefill at "
            "100% MFU (the floor). Short holds stay in HBM, then DRAM, then NVMe; past a line "
            "that moves right as reuses grow, recomputing by prefill is cheapest. A slower "
            f"prefill moves that line right: at {shown.percent(mfu_mid)} MFU the networked "
            "disk takes over from NVMe before it. Dashed: 5 minutes, 1 hour, 1 day."
        ),
    )


# ---- What a prompt-cache price tells you -----------------------------------------------------
@dataclass(frozen=True)
class PromptCachePrices:
    """What a prompt-cache price tells you: vendors' prices as rent per GB-hour."""

    #: What each cache's price implies in dollars per GB-hour, at Llama-3-70B's bytes per token.
    gb_hour: dict[str, float]
    anthropic_5min_gb_hour: str
    anthropic_1h_gb_hour: str
    gemini_gb_hour: str
    #: Anthropic's 5-minute cache: the write over the input price, the extra, the input, the TTL.
    anthropic_5min_write_x: str
    anthropic_5min_extra_x: str
    anthropic_5min_input: str
    anthropic_5min_ttl_s: str
    anthropic_1h_write_x: str
    gemini_storage: str
    deepseek_hit: str
    deepseek_miss: str


def _prompt_cache_prices() -> PromptCachePrices:
    stand_in = get_model("Llama-3-70B").kv_bytes_per_token()
    gb_hour = {
        name: float(memory_tiers.implied_usd_per_byte_s(name, stand_in) * 1e9 * 3600)
        for name in ("anthropic_5min", "anthropic_1h", "google_gemini_2_5_pro")
    }
    five_min = memory_tiers.get_prompt_cache("anthropic_5min")
    one_hour = memory_tiers.get_prompt_cache("anthropic_1h")
    gemini = memory_tiers.get_prompt_cache("google_gemini_2_5_pro")
    deepseek = memory_tiers.get_prompt_cache("deepseek")
    write_x = five_min.write_usd_per_mtok / five_min.input_usd_per_mtok
    return PromptCachePrices(
        gb_hour=gb_hour,
        anthropic_5min_gb_hour=shown.fixed(gb_hour["anthropic_5min"], 3),
        anthropic_1h_gb_hour=shown.fixed(gb_hour["anthropic_1h"], 4),
        gemini_gb_hour=shown.fixed(gb_hour["google_gemini_2_5_pro"], 3),
        anthropic_5min_write_x=shown.fixed(write_x, 2),
        anthropic_5min_extra_x=shown.fixed(write_x - 1, 2),
        anthropic_5min_input=shown.fixed(five_min.input_usd_per_mtok),
        anthropic_5min_ttl_s=shown.fixed(five_min.ttl_s),
        anthropic_1h_write_x=shown.fixed(one_hour.write_usd_per_mtok / one_hour.input_usd_per_mtok),
        gemini_storage=shown.fixed(gemini.storage_usd_per_mtok_hour, 2),
        deepseek_hit=shown.fixed(deepseek.read_usd_per_mtok, 2),
        deepseek_miss=shown.fixed(deepseek.input_usd_per_mtok, 2),
    )


# ---- Continuous batching and a paged KV cache ------------------------------------------------
@dataclass(frozen=True)
class Packing:
    """Continuous batching and a paged KV cache, on ShareGPT's requests."""

    #: ShareGPT's requests on Llama-3-70B on 8 H100s, 8,192 tokens reserved, 16-token pages.
    share_gpt: KVPacking
    #: The same with 256-token pages.
    big_pages: KVPacking
    #: B*(T) at the mean cached context: the batch at which a step turns compute-bound.
    critical_at_mean: float
    prompt_tokens: str
    mean_output_tokens: str
    reserved_batch: str
    critical_batch: str
    reserved_kv_use: str
    mean_cached_tokens: str
    mean_paged_tokens: str
    paged_batch: str
    paged_kv_use: str
    static_busy_share: str
    static_batch: str
    #: The longest of a static batch's answers over the mean answer.
    longest_over_mean: str
    #: The share of the KV memory the vLLM paper measured in systems that reserve the output.
    vllm_used_low: str
    vllm_used_high: str
    question_big_pages_use: str
    question_big_pages_batch: str


def _packing(walls: CapacityWall) -> Packing:
    llama = walls.llama
    share_gpt = serving_modes.request_lengths()
    prompt, output = int(share_gpt["prompt_tokens"]), share_gpt["mean_output_tokens"]
    # A static batch is the reserved batch that fits (pack.static_batch).
    pack = serving_modes.kv_packing(llama, prompt, output, 8192)
    # The step reads each live sequence's real cache, so its compute-bound batch is B*(T) at
    # the mean cached context, not the short-context B*.
    critical_at = capacity.step_critical_batch(llama, pack.mean_cached_tokens)
    big_pages = serving_modes.kv_packing(llama, prompt, output, 8192, 256)
    return Packing(
        share_gpt=pack,
        big_pages=big_pages,
        critical_at_mean=critical_at,
        prompt_tokens=shown.fixed(pack.prompt_tokens),
        mean_output_tokens=shown.fixed(output),
        reserved_batch=shown.fixed(pack.reserved_batch),
        critical_batch=shown.fixed(critical_at),
        reserved_kv_use=shown.percent(pack.reserved_kv_use, 1),
        mean_cached_tokens=shown.fixed(pack.mean_cached_tokens),
        mean_paged_tokens=shown.fixed(pack.mean_paged_tokens),
        paged_batch=shown.grouped(pack.paged_batch),
        paged_kv_use=shown.percent(pack.paged_kv_use, 1),
        static_busy_share=shown.percent(pack.static_busy_share),
        static_batch=shown.fixed(pack.static_batch),
        longest_over_mean=shown.fixed(1 / pack.static_busy_share, 1),
        vllm_used_low=shown.percent(share_gpt["used_share_low"], 1),
        vllm_used_high=shown.percent(share_gpt["used_share_high"], 1),
        question_big_pages_use=shown.percent(big_pages.paged_kv_use),
        question_big_pages_batch=shown.grouped(big_pages.paged_batch),
    )


# ---- FP8 and FP4: smaller weights, smaller caches --------------------------------------------
@dataclass(frozen=True)
class Formats:
    """FP8 and FP4: what smaller weights and caches move."""

    #: Llama-3.1-405B on 8 B200s at 32,768 tokens: bf16, fp8 and NVFP4 recipes
    #: (weights, KV cache, arithmetic).
    effects: number_formats.FormatEffects
    context: float
    context_text: str
    #: Each recipe as a deployment.
    deployments: list[Deployment]
    table: str
    bf16_room: str
    fp8_room: str
    nvfp4_room: str
    nvfp4_cost_ratio: str
    bf16_critical_batch: str
    nvfp4_critical_batch: str
    #: NVFP4 weights feeding bf16 arithmetic: B*.
    weight_only_critical_batch: str
    #: The largest critical context of the three recipes.
    critical_context_max: str
    #: Check yourself: bf16 weights and arithmetic, an fp8 KV cache.
    question_kv_only_room: str
    question_freed_gb: str


_RECIPE_NAMES = ("bf16 weights, bf16 KV", "fp8 weights, fp8 KV", "NVFP4 weights, fp8 KV")


def _formats_table(effects: number_formats.FormatEffects) -> str:
    rows = [
        "| recipe (arithmetic as weights) | weights (GB) | KV (kB/token) | $B^*$ (weights only) "
        "| fits at 32,768 | weight floor (ms) | cost vs bf16 |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, name in enumerate(_RECIPE_NAMES):
        rows.append(
            f"| {name} | {effects.weight_bytes[i] / 1e9:.0f} "
            f"| {effects.kv_bytes_per_token[i] / 1e3:.0f} "
            f"| {effects.critical_batch[i]:.0f} | {effects.max_batch[i]:.0f} "
            f"| {effects.weight_floor_s[i] * 1e3:.1f} "
            f"| {effects.cost_per_million_usd[i] / effects.cost_per_million_usd[0]:.2f}× |"
        )
    return "\n".join(rows)


def _formats() -> Formats:
    context = 32768
    effects = number_formats.format_effects("Llama-3.1-405B", "B200", 8, context)
    weight_only = number_formats.format_effects(
        "Llama-3.1-405B", "B200", 8, context, (("nvfp4", "fp8", "bf16"),)
    )
    kv_only = number_formats.format_effects(
        "Llama-3.1-405B", "B200", 8, context, (("bf16", "fp8", "bf16"),)
    )
    model, b200 = get_model("Llama-3.1-405B"), get_chip("B200")
    deployments = [
        Deployment(model, b200, 8, weight_dtype=w, kv_dtype=kv, compute_dtype=c)
        for w, kv, c in effects.recipes
    ]
    critical_contexts = [float(capacity.critical_context(dep)) for dep in deployments]
    costs = effects.cost_per_million_usd
    return Formats(
        effects=effects,
        context=context,
        context_text=shown.grouped(context),
        deployments=deployments,
        table=_formats_table(effects),
        bf16_room=shown.fixed(effects.max_batch[0]),
        fp8_room=shown.fixed(effects.max_batch[1]),
        nvfp4_room=shown.fixed(effects.max_batch[2]),
        nvfp4_cost_ratio=shown.fixed(costs[2] / costs[0], 2),
        bf16_critical_batch=shown.fixed(effects.critical_batch[0]),
        nvfp4_critical_batch=shown.fixed(effects.critical_batch[2]),
        weight_only_critical_batch=shown.fixed(weight_only.critical_batch[0]),
        critical_context_max=shown.grouped(max(critical_contexts)),
        question_kv_only_room=shown.fixed(kv_only.max_batch[0]),
        question_freed_gb=shown.gb(effects.weight_bytes[0] - effects.weight_bytes[1]),
    )


# ---- Check yourself --------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckYourself:
    """The closing check-yourself questions and the graded exercise."""

    #: 1. Mixtral-8x7B's shape, its bytes per token, as MHA, and one 32,768-token sequence.
    mixtral_layers: str
    mixtral_heads: str
    mixtral_kv_heads: str
    mixtral_head_dim: str
    mixtral_kv_bytes: str
    mixtral_mha_kv_bytes: str
    mixtral_32k_gb: str
    #: 2. Llama-3-8B on one H100: how many 8,192-token sequences fit.
    llama8_weights_gb: str
    llama8_hbm_gb: str
    llama8_budget_gb: str
    llama8_kv_bytes: str
    llama8_max_batch_8k: str
    #: 3. An 8,192-token Llama-3-70B prefix brought back from host DRAM over 8 PCIe links.
    prefix_gb: str
    pcie_link_gbs: str
    dram_reload_ms: str
    #: The graded exercise's link.
    exercise: Markdown


def _check_yourself(tiers: PrefixTiers) -> CheckYourself:
    mixtral = get_model("Mixtral-8x7B")
    llama8 = Deployment(get_model("Llama-3-8B"), get_chip("H100"), 1)
    prefix_bytes = kv_cache.kv_bytes_per_sequence("Llama-3-70B", 8192)
    # Each GPU's own PCIe link to host DRAM (data/memory_tiers.toml), 8 of them in parallel.
    link = tiers.tiers["host_DRAM"].bandwidth_bytes_per_s
    return CheckYourself(
        mixtral_layers=str(mixtral.n_layers),
        mixtral_heads=str(mixtral.n_heads),
        mixtral_kv_heads=str(mixtral.n_kv_heads),
        mixtral_head_dim=str(mixtral.head_dim),
        mixtral_kv_bytes=shown.grouped(mixtral.kv_bytes_per_token()),
        mixtral_mha_kv_bytes=shown.grouped(kv_cache.mha_kv_bytes_per_token("Mixtral-8x7B")),
        mixtral_32k_gb=shown.gb(float(kv_cache.kv_bytes_per_sequence("Mixtral-8x7B", 32768)), 2),
        llama8_weights_gb=shown.gb(llama8.weight_bytes, 1),
        llama8_hbm_gb=shown.gb(llama8.chip.hbm_bytes),
        llama8_budget_gb=shown.gb(llama8.kv_budget_bytes, 1),
        llama8_kv_bytes=shown.grouped(llama8.model.kv_bytes_per_token(llama8.kv_dtype)),
        llama8_max_batch_8k=shown.fixed(float(kv_cache.max_batch(llama8, 8192))),
        prefix_gb=shown.gb(float(prefix_bytes), 2),
        pcie_link_gbs=shown.gb(link),
        dram_reload_ms=shown.ms(float(prefix_bytes / (8 * link))),
        exercise=pages.exercise_link("kv_cache", "the KV-cache exercise"),
    )


@dataclass(frozen=True)
class Numbers:
    """Every value the page shows, one field per section, in page order."""

    size: CacheSize
    capacity: CapacityWall
    window: SlidingWindows
    bandwidth: BandwidthWall
    past_dense: PastDense
    tiers: PrefixTiers
    prices: PromptCachePrices
    packing: Packing
    formats: Formats
    check: CheckYourself


@functools.cache
def numbers() -> Numbers:
    """Every value the KV-cache chapter shows, by section in page order."""
    size = _cache_size()
    walls = _capacity_wall()
    window = _sliding_windows()
    bandwidth = _bandwidth_wall(walls)
    past_dense = _past_dense(walls)
    tiers = _prefix_tiers(walls)
    prices = _prompt_cache_prices()
    packing = _packing(walls)
    formats = _formats()
    return Numbers(
        size=size,
        capacity=walls,
        window=window,
        bandwidth=bandwidth,
        past_dense=past_dense,
        tiers=tiers,
        prices=prices,
        packing=packing,
        formats=formats,
        check=_check_yourself(tiers),
    )

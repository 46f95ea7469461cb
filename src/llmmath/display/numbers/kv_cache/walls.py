"""The page's first part: how big the cache is, the capacity wall, sliding windows and the
bandwidth wall (Llama-3-70B, Llama-3.1-405B and DeepSeek-V3 on H100s, Gemma-4-31B on one)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from llmmath import kv_cache
from llmmath.beyond import focus
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.setting import Setting
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


def cache_size() -> CacheSize:
    """How big is the cache? Llama-3-70B, Llama-2-13B, DeepSeek-V3 and the 405B, in bf16."""
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


def capacity_wall() -> CapacityWall:
    """The capacity wall, for the chapter's three H100 deployments."""
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


def sliding_windows() -> SlidingWindows:
    """Sliding windows: Gemma-4-31B's bytes counted in full and exactly."""
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


def bandwidth_wall(walls: CapacityWall) -> BandwidthWall:
    """The bandwidth wall, on the capacity wall's deployments."""
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

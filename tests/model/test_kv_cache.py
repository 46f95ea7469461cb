"""llmmath.kv_cache (KV size, capacity and bandwidth walls, memory tiers), its figures and its
explorers.

Published numbers, each with its source:
* Llama-3-70B KV per token 327,680 B in bf16 and 163,840 B in int8 (scaling book,
  `applied-inference`: 2 x 80 layers x 8 KV heads x 128 x bytes).
* Llama-2-13B, one 8,192-token sequence in bf16 ≈ 6.7e9 B (scaling book, `inference`).
* DeepSeek-V3 MLA: a 512 + 64 latent per layer, 61 layers: 70,272 B per token in bf16
  (DeepSeek-V3 technical report, arXiv 2412.19437, and its config.json).
"""

from __future__ import annotations

import math

import ipywidgets as w
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import batching, kv_cache
from llmmath.beyond import focus
from llmmath.core import capacity
from llmmath.core.deployment import Deployment
from llmmath.core.models import get_model, list_models
from llmmath.core.placement import DoesNotFitError
from llmmath.display import plots, widgets

LLAMA = Deployment("Llama-3-70B", "H100", 8)


# ---- published numbers ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "dtype", "expected", "rel"),
    [
        ("Llama-3-70B", "bf16", 327_680.0, 0.0),  # scaling book applied-inference, exact
        ("Llama-3-70B", "int8", 163_840.0, 0.0),  # same, exact
        ("Llama-3-70B", "fp8", 163_840.0, 0.0),
        ("DeepSeek-V3", "bf16", 70_272.0, 0.0),  # 61 x (512 + 64) x 2, DeepSeek-V3 report
    ],
)
def test_published_kv_bytes_per_token(model: str, dtype: str, expected: float, rel: float) -> None:
    assert math.isclose(get_model(model).kv_bytes_per_token(dtype), expected, rel_tol=rel)


def test_llama2_13b_sequence_is_about_6_7_gb() -> None:
    # scaling book, inference chapter: "about 6.7 GB" for 8,192 tokens in bf16 (MHA, K = N).
    size = kv_cache.kv_bytes_per_sequence("Llama-2-13B", 8192)
    assert math.isclose(size, 6.7e9, rel_tol=0.01)
    assert size == 8192 * 2 * 40 * 40 * 128 * 2


def test_gqa_is_not_costed_as_mha() -> None:
    # Llama-3-70B has 64 query heads but 8 KV heads: a tool that costs it as MHA is 8x too big.
    right = get_model("Llama-3-70B").kv_bytes_per_token()
    wrong = kv_cache.mha_kv_bytes_per_token("Llama-3-70B")
    assert wrong == 2_621_440.0
    assert right == wrong * 8 / 64
    assert right != wrong
    # Llama-2-13B is MHA: both agree.
    assert get_model("Llama-2-13B").kv_bytes_per_token() == kv_cache.mha_kv_bytes_per_token(
        "Llama-2-13B"
    )


def test_mla_saves_more_than_gqa() -> None:
    mla = get_model("DeepSeek-V3").kv_bytes_per_token()
    as_mha = kv_cache.mha_kv_bytes_per_token("DeepSeek-V3")
    assert as_mha == 2 * 61 * 128 * 128 * 2
    assert as_mha / mla > 50  # ~57x smaller than a full per-head cache


@pytest.mark.parametrize(
    "name",
    [
        m
        for m in list_models()
        if get_model(m).attention_kind != "MLA" and not get_model(m).sliding_window
    ],
)  # MLA caches a latent, not per-head keys and values: see test_mla_saves_more_than_gqa;
# Gemma 4's layer kinds have different K / N: see test_gemma_4_as_mha_counts_each_layer_kind
def test_gqa_equals_mha_times_k_over_n(name: str) -> None:
    spec = get_model(name)
    ratio = spec.n_kv_heads / spec.n_heads
    assert math.isclose(
        get_model(spec).kv_bytes_per_token(), kv_cache.mha_kv_bytes_per_token(spec) * ratio
    )


# ---- sliding-window layers: exact KV from the layer pattern ---------------------------------
def _layers(n_layers: int) -> list[str]:
    """Hugging Face's layer_types for Gemma 3 and 4: layer i global when (i + 1) % 6 == 0."""
    return ["full" if (i + 1) % 6 == 0 else "sliding" for i in range(n_layers)]


def _by_layer(n_layers: int, local: int, glob: int, T: float, window: int = 1024) -> float:
    """Bytes one sequence caches, layer by layer: a local layer ``local`` bytes per token for
    at most ``window`` tokens, a global one ``glob`` bytes per token for all ``T``."""
    return sum(
        local * min(T, window) if kind == "sliding" else glob * T for kind in _layers(n_layers)
    )


# (model, layers, local and global bytes per token in bf16: 2 K H 2, from each config.json)
GEMMA_SHAPES = [
    ("Gemma-4-31B", 60, 2 * 16 * 256 * 2, 2 * 4 * 512 * 2),
    ("Gemma-4-26B-A4B", 30, 2 * 8 * 256 * 2, 2 * 2 * 512 * 2),
    ("Gemma-3-27B", 62, 2 * 16 * 128 * 2, 2 * 16 * 128 * 2),
    ("Gemma-3-12B", 48, 2 * 8 * 256 * 2, 2 * 8 * 256 * 2),
]


@pytest.mark.parametrize(("name", "L", "local", "glob"), GEMMA_SHAPES)
@pytest.mark.parametrize("T", [1.0, 1000.0, 1024.0, 1025.0, 8192.0, 32768.0, 131072.0])
def test_sliding_window_kv_is_the_sum_over_the_layers(
    name: str, L: int, local: int, glob: int, T: float
) -> None:
    spec = focus.get_focus_model(name)
    exact = float(kv_cache.kv_bytes_per_sequence(spec, T))
    assert exact == pytest.approx(_by_layer(L, local, glob, T), rel=1e-12)
    # Up to the window every layer holds every token: the full-attention count.
    full = T * get_model(spec).kv_bytes_per_token()
    assert (exact == pytest.approx(full, rel=1e-12)) if T <= 1024 else exact < full


@pytest.mark.parametrize(("name", "L", "local", "glob"), GEMMA_SHAPES)
def test_the_overcount_tends_to_the_global_layers_share(
    name: str, L: int, local: int, glob: int
) -> None:
    spec = focus.get_focus_model(name)
    limit = (L * local - (L // 6) * local + (L // 6) * glob) / ((L // 6) * glob)
    T = np.array([2048.0, 8192.0, 32768.0, 131072.0])
    over = get_model(spec).kv_bytes_per_token() / np.asarray(
        get_model(spec).kv_bytes_per_token("bf16", T)
    )
    assert np.all(np.diff(over) > 0) and np.all(over < limit)
    assert over[-1] == pytest.approx(limit, rel=0.2)


@pytest.mark.parametrize("name", ["Gemma-3-4B", "Gemma-3-12B", "Gemma-3-27B"])
def test_gemma_3_long_context_cache_is_about_a_sixth(name: str) -> None:
    # Gemma 3 report (arXiv 2503.19786), Figure 6, as llama.cpp issue #12637 reads it: the 5:1
    # pattern "can reduce the KV cache usage to one sixth". At the longest context the
    # package's exact cache is within 20% of that sixth (34, 48, 62 layers: 5, 8, 10 global).
    spec = focus.get_focus_model(name)
    share = float(get_model(spec).kv_bytes_per_token("bf16", spec.max_context)) / (
        get_model(spec).kv_bytes_per_token()
    )
    assert share == pytest.approx(1 / 6, rel=0.2)


def test_sequences_that_fit_with_the_window() -> None:
    one = Deployment("Gemma-4-31B", "H100", 1)
    budget = 80e9 - one.weight_bytes
    for T in (1024.0, 8192.0, 32768.0, 131072.0):
        by_hand = math.floor(budget / _by_layer(60, 16384, 8192, T))
        assert kv_cache.max_batch(one, T) == by_hand
        assert capacity.max_batch(one, T) == by_hand  # one count (#42), not T * 901,120 B
    assert kv_cache.max_batch(one, 8192) == 12 and math.floor(budget / (8192 * 901_120)) == 2
    for B in (1.0, 2.0, 10.0, 40.0):  # the longest context fits, one more token does not
        T = float(kv_cache.max_context(one, B))
        assert B * _by_layer(60, 16384, 8192, T) <= budget < B * _by_layer(60, 16384, 8192, T + 1)


def test_a_window_leaves_models_without_one_alone() -> None:
    assert kv_cache.max_context(LLAMA, 256) == 5947  # the same as test_max_context_at_a_batch
    for T in (1.0, 8192.0):
        assert get_model("Llama-3-70B").kv_bytes_per_token("bf16", T) == 327_680


def test_gemma_4_as_mha_counts_each_layer_kind() -> None:
    # MHA: 32 query heads, each its own keys and values, 256 wide locally and 512 globally.
    assert kv_cache.mha_kv_bytes_per_token("Gemma-4-31B") == 2 * 32 * (50 * 256 + 10 * 512) * 2


# ---- capacity wall ------------------------------------------------------------------------
def test_share_of_hbm_and_max_batch() -> None:
    weights = 70_553_706_496 * 2
    assert math.isclose(kv_cache.kv_share_of_hbm(LLAMA), 1 - weights / 640e9, rel_tol=1e-12)
    # (640e9 - 141.1e9) / (8192 * 327,680) = 185.8 -> 185, as in the batching exercise.
    assert kv_cache.max_batch(LLAMA, 8192) == 185.0
    assert kv_cache.max_batch(LLAMA, 8192) == capacity.max_batch(LLAMA, 8192)


def test_max_context_at_a_batch() -> None:
    budget = 640e9 - 70_553_706_496 * 2
    assert kv_cache.max_context(LLAMA, 256) == math.floor(budget / (256 * 327_680)) == 5947
    assert kv_cache.max_context(LLAMA, 1) == 8192  # capped at the model's max_context
    big = Deployment("Llama-3.1-405B", "H100", 16)
    assert kv_cache.max_context(big, 8) == math.floor(
        (16 * 80e9 - big.weight_bytes) / (8 * 516_096)
    )


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 8192), min_size=2, max_size=20))
def test_max_batch_non_increasing_in_context(contexts: list[int]) -> None:
    T = np.sort(np.array(contexts, dtype=float))
    room = np.asarray(kv_cache.max_batch(LLAMA, T))
    assert np.all(np.diff(room) <= 0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4096), st.integers(1, 64), st.integers(1, 64))
def test_kv_linear_in_context_and_batch(context: int, batch: int, k: int) -> None:
    one = kv_cache.kv_bytes_per_sequence("Llama-3-8B", context, batch=batch)
    assert math.isclose(
        kv_cache.kv_bytes_per_sequence("Llama-3-8B", k * context, batch=batch), k * one
    )
    assert math.isclose(
        kv_cache.kv_bytes_per_sequence("Llama-3-8B", context, batch=k * batch), k * one
    )


# ---- bandwidth wall ---------------------------------------------------------------------------
def test_crossover_context_balances_the_reads() -> None:
    matmul_weights = 69_503_033_344 * 2  # the input embedding is a lookup, not a read
    T = kv_cache.kv_crossover_context(LLAMA, 64)
    assert math.isclose(T, matmul_weights / (64 * 327_680), rel_tol=1e-12)
    step = batching.decode_step(LLAMA, 64, T, allow_overflow=True)
    assert math.isclose(float(step.kv_read_s), float(step.weight_read_s), rel_tol=1e-9)
    assert math.isclose(kv_cache.kv_read_share(LLAMA, 64, T), 0.5, rel_tol=1e-9)


# ---- past the dense cache (#43): sparse top-k and hybrids -------------------------------------
SPARSE = Deployment("DeepSeek-V3.2", "H100", 16, weight_dtype="fp8")


@pytest.mark.parametrize("batch", [64, 256, 1024])
def test_sparse_crossover_balances_the_reads(batch: int) -> None:
    """Past k the read grows by the index keys alone: T* moves out, and the step agrees."""
    T = float(kv_cache.kv_crossover_context(SPARSE, batch))
    step = batching.decode_step(SPARSE, batch, min(T, 163840.0), allow_overflow=True)
    if T <= 163840:
        assert math.isclose(float(step.kv_read_s), float(step.weight_read_s), rel_tol=1e-9)
        assert math.isclose(kv_cache.kv_read_share(SPARSE, batch, T), 0.5, rel_tol=1e-9)
    dense = Deployment("DeepSeek-V3", "H100", 16, weight_dtype="fp8")
    assert float(kv_cache.kv_crossover_context(dense, batch)) < T


@pytest.mark.parametrize("batch", [1, 16, 256])
def test_hybrid_crossover_counts_the_constant_state(batch: int) -> None:
    hybrid = Deployment("Qwen3-Next-80B-A3B", "H100", 2, weight_dtype="fp8")
    T = float(kv_cache.kv_crossover_context(hybrid, batch))
    state = get_model("Qwen3-Next-80B-A3B").state_bytes_per_sequence("bf16")
    weights = float(batching.decode_step(hybrid, batch, 0, allow_overflow=True).bytes_read)
    if weights / batch <= state:  # the states alone outweigh the weights: T* is 0
        assert T == 0
        return
    assert math.isclose(kv_cache.kv_read_share(hybrid, batch, T), 0.5, rel_tol=1e-9)


def test_the_decode_step_reads_the_sparse_count_and_holds_the_dense_one() -> None:
    v3 = Deployment("DeepSeek-V3", "H100", 16, weight_dtype="fp8")
    T = 131072.0
    sparse, dense = (batching.decode_step(d, 8, T) for d in (SPARSE, v3))
    kv_per_sequence = float(get_model("DeepSeek-V3.2").kv_bytes_read("bf16", T))
    assert math.isclose(float(sparse.kv_read_s), 8 * kv_per_sequence / (16 * 3.35e12), rel_tol=1e-9)
    assert float(sparse.kv_read_s) < float(dense.kv_read_s) / 5
    # Capacity: every token's latent and index key is held, so fewer sequences fit.
    assert capacity.max_batch(SPARSE, T) < capacity.max_batch(v3, T)
    held = T * get_model("DeepSeek-V3.2").kv_bytes_per_token("bf16")
    assert math.isclose(float(SPARSE.kv_bytes_held(np.array(1.0), np.array(T))), held)


def test_read_per_token_curves_come_from_the_model() -> None:
    curves = kv_cache.read_per_token_curves()
    assert curves.designs == ("GQA", "MLA", "sliding window", "sparse top-k", "hybrid")
    assert curves.context[0] == 1024 and curves.context[-1] == 1 << 20
    for i, name in enumerate(curves.names):
        spec = get_model(name)
        assert np.allclose(curves.read_bytes[i], spec.kv_bytes_read("bf16", curves.context))
        assert curves.max_context[i] == spec.max_context
    # Dense kinds read what they hold; the sparse one holds more than it reads past k.
    sparse = curves.designs.index("sparse top-k")
    for i in range(len(curves.names)):
        past_k = curves.context > 2048
        if i == sparse:
            assert np.all(curves.read_bytes[i][past_k] < curves.held_bytes[i][past_k])
        else:
            assert np.allclose(curves.read_bytes[i], curves.held_bytes[i], rtol=1e-12)
    # Each row rises with the context; the hybrid's and the sparse one's stay below GQA's.
    assert np.all(np.diff(curves.read_bytes, axis=1) > 0)
    gqa = curves.designs.index("GQA")
    for kind in ("hybrid", "sparse top-k"):
        assert np.all(curves.read_bytes[curves.designs.index(kind)] < curves.read_bytes[gqa])


def test_attention_design_names_what_bounds_the_read() -> None:
    assert kv_cache.attention_design("Llama-3-70B") == "GQA"
    assert kv_cache.attention_design("Gemma-4-31B") == "sliding window"
    assert kv_cache.attention_design("DeepSeek-V3.2") == "sparse top-k"
    assert kv_cache.attention_design("Qwen3-Next-80B-A3B") == "hybrid"


def test_long_context_tokens_cost_more() -> None:
    big = Deployment("Llama-3.1-405B", "H100", 16)
    cost = np.asarray(kv_cache.best_cost_per_million_tokens_usd(big, [8192, 32768, 131072]))
    assert np.all(np.diff(cost) > 0)
    assert cost[-1] > 10 * cost[0]
    tiny = Deployment("Llama-3-70B", "H100", 2)  # 160 GB less 141.1 GB of weights
    assert kv_cache.max_batch(tiny, 8192) == 7  # 18.9e9 / 2.68e9
    # 11 x 80 GB less 811.7 GB of weights leaves 68.3 GB; one 131,072-token sequence in fp32
    # needs 131,072 x 1,032,192 B = 135 GB: not one fits, so no token can be made there.
    room_for_none = Deployment("Llama-3.1-405B", "H100", 11, kv_dtype="fp32")
    assert kv_cache.max_batch(room_for_none, 131072) == 0
    cost = kv_cache.best_cost_per_million_tokens_usd(room_for_none, [1024, 131072])
    assert np.isfinite(cost[0]) and cost[1] == np.inf


# ---- memory tiers ---------------------------------------------------------------------------
def test_tiers_are_cited_and_ordered() -> None:
    tiers = [kv_cache.get_tier(name) for name in kv_cache.list_tiers()]
    assert [t.name for t in tiers] == ["HBM", "host_DRAM", "local_NVMe", "networked_disk"]
    for tier in tiers:
        assert tier.source and tier.source_date[:2] == "20"
    costs = [t.usd_per_byte_s for t in tiers]
    bandwidths = [t.bandwidth_bytes_per_s for t in tiers]
    capacities = [t.capacity_bytes for t in tiers]
    assert costs == sorted(costs, reverse=True)  # a slower tier is cheaper...
    assert bandwidths == sorted(bandwidths, reverse=True)  # ...and slower
    assert capacities == sorted(capacities)  # ...and bigger
    # The arithmetic in the data file's comments: USD per GB-month / 2,628,000 s / 1e9 B.
    assert math.isclose(
        kv_cache.get_tier("networked_disk").usd_per_byte_s, 0.023 / 2.628e15, rel_tol=1e-3
    )
    assert math.isclose(
        kv_cache.get_tier("local_NVMe").usd_per_byte_s, 0.080 / 2.628e15, rel_tol=1e-3
    )
    assert math.isclose(kv_cache.get_tier("HBM").usd_per_byte_s, 2.0 / 3600 / 80e9, rel_tol=1e-3)


def test_prefix_cache_worked_case() -> None:
    S, t, r = 4096, 60.0, 2.0
    pc = kv_cache.prefix_cache(LLAMA, S, t, r)
    size = S * 327_680
    assert float(pc.prefix_bytes) == size
    dram = kv_cache.get_tier("host_DRAM")
    i = pc.tiers.index("host_DRAM")
    assert math.isclose(pc.hold_usd[i], size * t * dram.usd_per_byte_s)
    assert math.isclose(pc.reload_s[i], size / (8 * 64e9))
    assert pc.reload_s[pc.tiers.index("HBM")] == 0.0
    prefill_s = float(batching.prefill(LLAMA, S).time_s)
    assert math.isclose(float(pc.recompute_s), prefill_s)
    assert math.isclose(float(pc.recompute_usd), r * prefill_s * 8 * 2.0 / 3600)
    assert pc.cheapest_name() in pc.options


def test_short_holds_stay_in_hbm_long_ones_recompute() -> None:
    pc = kv_cache.prefix_cache(LLAMA, 4096, np.array([0.1, 1e7]), 1)
    assert [pc.options[i] for i in pc.cheapest] == ["HBM", kv_cache.RECOMPUTE]
    assert kv_cache.prefix_cache(LLAMA, 4096, 1e7, 0).cheapest_name() == kv_cache.RECOMPUTE


def test_break_even_hold_matches_the_costs() -> None:
    t = kv_cache.break_even_hold_s(LLAMA, 4096, "local_NVMe", 3)
    pc = kv_cache.prefix_cache(LLAMA, 4096, t, 3)
    i = pc.tiers.index("local_NVMe")
    assert math.isclose(float(pc.keep_usd[i]), float(pc.recompute_usd), rel_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(16, 8192),
    st.floats(0, 10),
    st.lists(st.floats(-1, 8), min_size=2, max_size=25),
)
def test_cheapest_tier_moves_monotonically_with_hold_time(
    prefix: int, reuses: float, log_holds: list[float]
) -> None:
    hold = np.sort(10.0 ** np.array(log_holds))
    pc = kv_cache.prefix_cache(LLAMA, prefix, hold, reuses)
    assert np.all(np.diff(pc.cheapest) >= 0)  # HBM -> DRAM -> NVMe -> disk -> recompute
    assert np.all(np.diff(pc.cheapest_usd) >= -1e-18)


@settings(max_examples=40, deadline=None)
@given(st.integers(16, 8192), st.floats(0, 1e6), st.floats(0, 10), st.floats(1e-4, 1.0))
def test_a_tier_too_slow_is_never_chosen(
    prefix: int, hold: float, reuses: float, deadline: float
) -> None:
    pc = kv_cache.prefix_cache(LLAMA, prefix, hold, reuses, deadline_s=deadline)
    choice = int(pc.cheapest)
    if choice < len(pc.tiers):
        assert pc.reload_s[choice] <= deadline
        assert pc.fits[choice]


def test_prompt_cache_prices_are_cited_and_convert() -> None:
    for name in kv_cache.list_prompt_caches():
        price = kv_cache.get_prompt_cache(name)
        assert price.vendor and price.source and price.source_date[:2] == "20"
    # Anthropic 5 min: premium 0.75 USD per M tokens for 300 s.
    assert math.isclose(
        kv_cache.prompt_cache_usd_per_token_s("anthropic_5min"), 0.75 / 1e6 / 300, rel_tol=1e-12
    )
    # Gemini: storage 4.50 per M tokens per hour, no write premium.
    assert math.isclose(
        kv_cache.prompt_cache_usd_per_token_s("google_gemini_2_5_pro"), 4.5 / 1e6 / 3600
    )
    per_byte = kv_cache.implied_usd_per_byte_s("anthropic_5min", 327_680)
    assert math.isclose(per_byte, 0.75 / 1e6 / 300 / 327_680)


# ---- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: kv_cache.kv_bytes_per_sequence("Llama-3-8B", -1), "context"),
        (lambda: kv_cache.kv_bytes_per_sequence("Llama-3-8B", 10, batch=np.nan), "batch"),
        (lambda: get_model("Llama-3-8B").kv_bytes_per_token("fp7"), "dtype"),
        (lambda: get_model("Llama-9").kv_bytes_per_token(), "model"),
        (lambda: kv_cache.max_context(LLAMA, 0), "batch"),
        (lambda: kv_cache.max_batch(LLAMA, 10_000), "context"),
        (lambda: kv_cache.kv_crossover_context(LLAMA, -2), "batch"),
        (lambda: kv_cache.prefix_cache(LLAMA, 0, 1.0), "prefix_tokens"),
        (lambda: kv_cache.prefix_cache(LLAMA, 100, -1.0), "hold_s"),
        (lambda: kv_cache.prefix_cache(LLAMA, 100, 1.0, -1), "reuses"),
        (lambda: kv_cache.prefix_cache(LLAMA, 100, 1.0, tiers=("tape",)), "tier"),
        (lambda: kv_cache.prefix_cache(LLAMA, 100, 1.0, deadline_s=0), "deadline_s"),
        (lambda: kv_cache.prefix_cache(LLAMA, 100, 1.0, usd_per_chip_hour=0), "usd_per_chip_hour"),
        (lambda: kv_cache.implied_usd_per_byte_s("deepseek", 0), "kv_bytes_per_token"),
        (lambda: kv_cache.get_prompt_cache("acme"), "prompt cache"),
    ],
)
def test_bad_input_names_the_parameter(call: object, name: str) -> None:
    with pytest.raises((ValueError, TypeError), match=name):
        call()  # type: ignore[operator]


def test_weights_that_do_not_fit_say_so() -> None:
    with pytest.raises(DoesNotFitError, match="missing"):
        Deployment("Llama-3.1-405B", "H100", 8)


# ---- figures and explorers ------------------------------------------------------------------
def test_figures_draw_the_model_s_numbers() -> None:
    from llmmath.display.plots import kv_cache as kv_plots

    names = ["Llama-3-70B", "DeepSeek-V3"]
    bars = kv_plots.kv_per_token_figure(names).axes[0].patches
    built = [get_model(n).kv_bytes_per_token("bf16") for n in names]
    assert [b.get_width() for b in bars[len(names) :]] == pytest.approx(built, rel=1e-12)
    wall = kv_plots.capacity_figure(LLAMA).axes[0]
    curve = kv_cache.capacity_curve(LLAMA)
    assert wall.lines[0].get_ydata() == pytest.approx(curve.max_batch, rel=1e-12)
    assert wall.lines[1].get_ydata()[0] == pytest.approx(curve.critical_batch, rel=1e-12)
    steps = kv_plots.step_time_figure(LLAMA, batches=(1, 16, 64)).axes[0]
    assert [t.get_text() for t in steps.get_legend().get_texts()] == ["B = 1", "B = 16", "B = 64"]
    one = kv_cache.step_time_curve(LLAMA, 1)
    fits = np.asarray(one.fits, dtype=bool)
    assert steps.lines[0].get_ydata() == pytest.approx(1e3 * one.time_s[fits], rel=1e-12)
    cheapest = kv_plots.tier_map_figure(LLAMA, 4096).axes[0].collections[0].get_array()
    assert np.array_equal(np.ravel(cheapest), np.ravel(kv_cache.tier_map(LLAMA, 4096).cheapest))
    assert plots.kv_cache is kv_plots


def test_explorer_redraws_and_reports() -> None:
    from llmmath.display.plots.kv_cache import OPTION_LABELS, KVCacheExplorer, TierExplorer

    explorer = KVCacheExplorer()
    explorer.update("Llama-3-70B", 8, "bf16", batch=16, context=4096)
    assert explorer.png()[:4] == b"\x89PNG"
    room = float(kv_cache.max_batch(LLAMA, 4096))  # LLAMA: Llama-3-70B on 8 x H100, bf16
    assert f"B = 16 fits (≤ {room:,.0f})" in explorer.readout.get_text()
    explorer.update("Llama-3.1-405B", 8, "bf16", batch=16, context=4096)  # does not fit
    assert "does not fit" in explorer.message.get_text()
    tiers = TierExplorer()
    tiers.update("Llama-3-70B", 8, "bf16", prefix_tokens=4096, hold_s=60.0, reuses=2.0)
    assert tiers.png()[:4] == b"\x89PNG"
    # The readout names the option the model finds cheapest there, at its cost.
    cache = kv_cache.prefix_cache(LLAMA, 4096, 60.0, 2.0)
    best = OPTION_LABELS[cache.cheapest_name()]
    assert tiers.readout.get_text().startswith(
        f"hold 60 s, r = 2: {best}, ${float(cache.cheapest_usd):.2g}"
    )


def test_static_explorers_stay_small(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmmath.display.widgets import kv_cache as kv_widgets

    assert kv_widgets.declaration().frame_count() == 3 * 2 * 4 * 5 <= 150
    assert kv_widgets.tier_declaration().frame_count() == 3 * 3 * 3 * 5 <= 150
    assert widgets.kv_cache is kv_widgets
    monkeypatch.setenv("LLMMATH_STATIC_WIDGETS", "0")
    live = kv_widgets.kv_cache_explorer()
    assert isinstance(live, w.VBox)
    live.controls["model"].value = "Llama-2-13B"  # a new model bounds the context
    assert 2 ** live.controls["context"].max == 4096  # a log2 slider
    assert isinstance(kv_widgets.tier_explorer(), w.VBox)


def test_break_even_hold_moves_with_the_prefills_mfu() -> None:
    # A break-even is a difference of two floors: a slower prefill makes keeping worth longer.
    llama = Deployment("Llama-3-70B", "H100", 8)
    holds = [
        float(kv_cache.break_even_hold_s(llama, 8192, "local_NVMe", 1, prefill_efficiency=e))
        for e in (1.0, 0.5, 0.4)
    ]
    assert holds[0] < holds[1] < holds[2]
    assert holds[1] > 3 * 3600  # "hours" on flash at 50% MFU, against ~1.6 h at the floor
    default = float(kv_cache.break_even_hold_s(llama, 8192, "local_NVMe", 1))
    assert default == pytest.approx(holds[0], rel=1e-12)  # the deployment's own knob: 1.0
    with pytest.raises(ValueError, match="prefill_efficiency"):
        kv_cache.break_even_hold_s(llama, 8192, "local_NVMe", 1, prefill_efficiency=0.0)


def test_static_busy_share_is_for_a_stated_batch() -> None:
    # Without continuous batching a batch waits for its longest answer: for n exponential
    # answers (uncapped) the longest is the mean times H_n, so the busy share is 1 / H_n.
    from llmmath.beyond import serving_modes

    llama = Deployment("Llama-3-70B", "H100", 8)
    default = serving_modes.kv_packing(llama, 161, 338.0, 8192)
    assert default.static_batch == default.reserved_batch == 185  # the batch that fits
    for n in (1, 2, 185, 512):
        pack = serving_modes.kv_packing(llama, 161, 338.0, 8192, static_batch=n)
        harmonic = sum(1.0 / k for k in range(1, n + 1))
        assert pack.static_busy_share == pytest.approx(1.0 / harmonic, rel=1e-6), n
    assert default.static_busy_share == pytest.approx(0.172, abs=0.001)
    # Capped answers: the longest cannot pass the cap, so a tight cap keeps more slots busy.
    tight = serving_modes.kv_packing(llama, 161, 338.0, 400, static_batch=185)
    assert default.static_busy_share < tight.static_busy_share <= 1.0
    with pytest.raises(ValueError, match="static_batch"):
        serving_modes.kv_packing(llama, 161, 338.0, 8192, static_batch=0)


def test_the_released_exercises_address_of_kv_bytes_per_token_is_the_models() -> None:
    # exercises/kv_cache names kv_cache.kv_bytes_per_token (learners' copies are never
    # rewritten): it must stay, and give what the one definition gives.
    for name, dtype in (("Llama-3.1-405B", "bf16"), ("DeepSeek-V3", "fp8")):
        one = get_model(name).kv_bytes_per_token(dtype)
        assert kv_cache.kv_bytes_per_token(name, dtype) == pytest.approx(one, rel=1e-12)

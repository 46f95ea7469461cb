"""Numbers the book's prose states by hand, pinned to the package that computes them."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from lesson_support import lesson

from llmmath import batching, get_chip, kv_cache, pricing
from llmmath.beyond import serving_modes
from llmmath.core import capacity

BOOK = Path(__file__).resolve().parents[2] / "book"


def _intro() -> str:
    return " ".join((BOOK / "intro.md").read_text().split())


def test_front_page_batching_gain_is_the_lessons_ratio() -> None:
    # The batching lesson's worked case: Llama-3-70B on 8 H100 at 2,048 tokens of context,
    # batch 1 against the cheapest batch (past T_c: the HBM full). The gain is bounded by
    # about C / W: a token costs at least its FLOPs, and a lone one about its weight read.
    llama = batching.Deployment("Llama-3-70B", "H100", 8)
    one = batching.decode_step(llama, 1, 2048).cost_per_million_tokens_usd()
    cheapest = serving_modes.slow_mode(llama, 2048, 1.0).floor_cost_per_million_usd
    gain = float(one / cheapest)
    c_over_w = get_chip("H100").critical_intensity("bf16")
    text = _intro()
    assert f"({round(gain)}× for Llama-3-70B on eight H100s at 2,048 tokens of context)" in text
    assert f"$C/W$ ({round(c_over_w)} on an H100)" in text
    assert gain < c_over_w
    assert "thousands of times cheaper" not in text


def test_front_page_floor_example_is_the_weight_floor() -> None:
    floor_ms = capacity.weight_floor_s(batching.Deployment("Llama-3-70B", "H100", 8)) * 1e3
    stated = re.findall(r'says "([0-9.]+) ms"', _intro())
    assert stated == [f"{floor_ms:.2f}"]


def test_prompt_cache_prices_have_one_source_and_label() -> None:
    from llmmath import api_prices

    for name in kv_cache.list_prompt_caches():
        cache = kv_cache.get_prompt_cache(name)
        if cache.model not in api_prices.list_price_sheets():
            continue
        sheet = api_prices.get_price_sheet(cache.model)
        assert cache.input_usd_per_mtok == sheet.input_usd_per_million, name
        if sheet.cached_input_usd_per_million:  # 0 where the sheet has no cached price
            assert cache.read_usd_per_mtok == sheet.cached_input_usd_per_million, name
    deepseek = kv_cache.get_prompt_cache("deepseek")
    assert deepseek.model == "DeepSeek-R1"


# ---- the pricing chapter ----------------------------------------------------------------------
def test_pricing_ratio_formula_is_the_floor() -> None:
    # "output / input ≈ max(1, B*/B + T kv C / (2 P W))": the KV term inside the max, as the
    # floor adds it to the weight read (the package's decode_batch_from_ratio inverts it).
    ns = lesson("overtraining_pricing.md")
    dep = ns.llama8
    chip = dep.chip
    C, W = chip.peak("bf16"), chip.hbm_bandwidth_bytes_per_s
    P = dep.model.total_params
    for batch, context in ((64, 2048), (256, 2048), (743, 2048), (128, 512)):
        kv_term = context * dep.model.kv_bytes_per_token(dep.kv_dtype) * C / (2 * P * W)
        predicted = max(1.0, capacity.step_critical_batch(dep) / batch + kv_term)
        cost = pricing.serving_cost(dep, batch, context, usd_per_chip_hour=2.0)
        assert float(cost.output_input_ratio) == pytest.approx(predicted, rel=0.1), batch


def test_pricing_ratio_stays_above_one_past_t_c() -> None:
    ns = lesson("overtraining_pricing.md")
    dep = ns.llama8
    # "not to 1: 2,048 tokens is past T_c ≈ 1,477, so the KV reads keep decode
    # bandwidth-bound at every batch; even the 743 sequences that fit pay 1.8×."
    assert capacity.critical_context(dep) < 2048
    assert not batching.decode_step(dep, ns.full_2k, 2048).compute_bound
    assert float(ns.cost_full.output_input_ratio) > 1.5
    # Prompt 3: "at 2,048 tokens, why does the ratio keep falling past it ... switch the
    # context to 512: where does the ratio stop falling now"
    past = [pricing.serving_cost(dep, b, 2048).output_input_ratio for b in (296, 400, 743)]
    assert past[0] > past[1] > past[2] > 1
    at_512 = math.ceil(capacity.step_critical_batch(dep, 512))
    assert at_512 < capacity.max_batch(dep, 512)
    flat = [float(pricing.serving_cost(dep, b, 512).output_input_ratio) for b in (at_512, 2000)]
    assert flat[0] == pytest.approx(flat[1], rel=1e-9) and flat[0] < 1.01


def test_pricing_long_context_runs_the_batch_that_fits() -> None:
    # "each context at the largest batch that fits: past T_c ≈ 1,477 tokens no batch is
    # compute-bound, so that batch is the cheapest. At 8k tokens 185 sequences fit"
    ns = lesson("overtraining_pricing.md")
    dep = ns.what_if
    assert capacity.critical_context(dep) < 8192
    assert ns.long_short_batch == f"{capacity.max_batch(dep, 8192):.0f}"
    costs = [
        float(batching.decode_step(dep, b, 8192).cost_per_million_tokens_usd())
        for b in (64, 128, ns.long_batch)
    ]
    assert costs[0] > costs[1] > costs[2]
    assert not batching.decode_step(dep, ns.long_batch, 8192).compute_bound

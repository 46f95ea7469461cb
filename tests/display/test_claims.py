"""Numbers the book's prose states by hand, pinned to the package that computes them."""

from __future__ import annotations

import re
from pathlib import Path

from llmmath import batching, get_chip, kv_cache
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

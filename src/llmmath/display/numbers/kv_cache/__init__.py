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

import functools
from dataclasses import dataclass

from llmmath.display.numbers.kv_cache.packing import (
    CheckYourself,
    Formats,
    Packing,
    check_yourself,
    formats,
    packing,
)
from llmmath.display.numbers.kv_cache.past_dense import PastDense, past_dense
from llmmath.display.numbers.kv_cache.tiers import (
    PrefixTiers,
    PromptCachePrices,
    prefix_tiers,
    prompt_cache_prices,
)
from llmmath.display.numbers.kv_cache.walls import (
    BandwidthWall,
    CacheSize,
    CapacityWall,
    SlidingWindows,
    bandwidth_wall,
    cache_size,
    capacity_wall,
    sliding_windows,
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
    size = cache_size()
    walls = capacity_wall()
    window = sliding_windows()
    bandwidth = bandwidth_wall(walls)
    beyond_dense = past_dense(walls)
    tiers = prefix_tiers(walls)
    prices = prompt_cache_prices()
    paged = packing(walls)
    recipes = formats()
    return Numbers(
        size=size,
        capacity=walls,
        window=window,
        bandwidth=bandwidth,
        past_dense=beyond_dense,
        tiers=tiers,
        prices=prices,
        packing=paged,
        formats=recipes,
        check=check_yourself(tiers),
    )

"""The batching chapter's numbers (``lessons/batching.md``), section by section.

Its worked settings, one line each:

- Llama-3-70B on 8 H100s in bf16, context T = 2,048 (the chapter's main setting), at the
  example H100 price; beside it Llama-3-70B on 16 TPU v5e.
- The same 8 H100s serving Llama-3-70B's shape with a 128k context at 65,536 tokens (2026
  traffic).
- Llama-3-70B on 2, 4 and 8 H100s, alone: spread evenly at the floor, and as TP with serial
  all-reduces.
- DeepSeek-V3 on 16 H100s as DeepSeek serves it: fp8 matmuls, bf16 attention, EP16,
  node-limited fp8 dispatch (the frontier batch and its MTP draft).
- Llama-3-8B on one H100 (the check-yourself question 1).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from llmmath.display.numbers.batching.limits import (
    FallingStops,
    LatencyFloor,
    build_falling,
    build_latency,
)
from llmmath.display.numbers.batching.modes import (
    FastModeCost,
    MoveIt,
    PrefillDecode,
    SlowModeCost,
    TokensPerSecond,
    build_fast,
    build_move_it,
    build_prefill,
    build_slow,
    build_tokens_per_s,
)
from llmmath.display.numbers.batching.scale import (
    BatchApis,
    Frontier,
    Traffic,
    build_batch_apis,
    build_frontier,
    build_traffic,
)
from llmmath.display.numbers.batching.speculation import (
    CheckYourself,
    Speculative,
    build_check,
    build_speculative,
)
from llmmath.display.numbers.batching.worked import (
    Agentic,
    CostHyperbola,
    T,
    ThreeClocks,
    WeightCount,
    WorkedNumber,
    build_agentic,
    build_cost,
    build_three_clocks,
    build_weight_count,
    build_worked,
)

__all__ = ["Numbers", "T", "numbers"]


@dataclass(frozen=True)
class Numbers:
    """The batching lesson's values, one field per section of the page."""

    worked: WorkedNumber
    three_clocks: ThreeClocks
    agentic: Agentic
    weight_count: WeightCount
    cost: CostHyperbola
    falling: FallingStops
    latency: LatencyFloor
    slow: SlowModeCost
    prefill: PrefillDecode
    tokens_per_s: TokensPerSecond
    move_it: MoveIt
    fast: FastModeCost
    frontier: Frontier
    traffic: Traffic
    batch_apis: BatchApis
    speculative: Speculative
    check: CheckYourself


@functools.cache
def numbers() -> Numbers:
    """Every value the batching lesson shows, built once, section by section in page order
    (the cost section's full batch comes before the 2026-traffic paragraph that compares
    with it)."""
    worked = build_worked()
    cost = build_cost(worked)
    slow = build_slow(worked)
    frontier = build_frontier(worked)
    return Numbers(
        worked=worked,
        three_clocks=build_three_clocks(),
        agentic=build_agentic(cost),
        weight_count=build_weight_count(worked),
        cost=cost,
        falling=build_falling(worked),
        latency=build_latency(worked),
        slow=slow,
        prefill=build_prefill(worked, cost),
        tokens_per_s=build_tokens_per_s(worked),
        move_it=build_move_it(worked),
        fast=build_fast(worked, slow),
        frontier=frontier,
        traffic=build_traffic(worked, frontier),
        batch_apis=build_batch_apis(worked),
        speculative=build_speculative(worked, cost, frontier),
        check=build_check(worked),
    )

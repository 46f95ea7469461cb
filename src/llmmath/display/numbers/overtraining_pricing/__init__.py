"""The over-training and pricing chapter's numbers (``lessons/overtraining_pricing.md``),
section by section.

Its settings:

- a training run: Llama-3-70B on 15T tokens, 16,384 H100 at 40% MFU, USD 2 per H100-hour;
- the Chinchilla fits: Hoffmann et al.'s rounded one and Besiroglu et al.'s refit (the
  package's default), at Chinchilla's budget 5.76e23 FLOPs and its loss under the refit;
- serving: Llama-3-70B on 8 H100 in bf16, 2,048 tokens of context, USD 2 per chip-hour, busy
  half the time; a what-if of it allowed a 1M context; 2026 traffic at 65,536 tokens (its 128k
  shape, Llama-3.1-70B's) with 0, 50 and 90% prompt-cache hits;
- the dated price sheets of ``data/api_prices.toml``; DeepSeek-V3.2 and V3 on 8 H200 in fp8;
  DeepSeek's published day of V3/R1 serving (226.75 nodes of 8 H800);
- joules: a DGX H100 node's power, the EIA 2023 industrial price, Uptime's 2023 PUE.

Its sections live in four modules, one per part of the page, in page order: ``training`` (the
training run, Chinchilla, training plus serving), ``serving`` (what a token costs, long
prompts), ``traffic`` (today's traffic) and ``fleet`` (price sheets, pools, joules, check
yourself). ``numbers()`` builds them here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from llmmath.display.numbers.overtraining_pricing.fleet import (
    CheckYourself,
    Energy,
    Pools,
    SheetReading,
    build_check_yourself,
    build_energy,
    build_pools,
    build_sheet_reading,
)
from llmmath.display.numbers.overtraining_pricing.serving import (
    LongContext,
    ServingCost,
    build_long_context,
    build_serving_cost,
)
from llmmath.display.numbers.overtraining_pricing.traffic import (
    AgentCheck,
    DeepSeekV32,
    Gemini31,
    Traffic,
    build_agent_check,
    build_deepseek_v32,
    build_gemini31,
    build_traffic,
)
from llmmath.display.numbers.overtraining_pricing.training import (
    Chinchilla,
    Lifetime,
    Reinforcement,
    TrainingRun,
    build_chinchilla,
    build_lifetime,
    build_reinforcement,
    build_training_run,
)


@dataclass(frozen=True)
class Numbers:
    training: TrainingRun
    chinchilla: Chinchilla
    lifetime: Lifetime
    rl: Reinforcement
    serving: ServingCost
    long: LongContext
    traffic: Traffic
    gemini: Gemini31
    v32: DeepSeekV32
    agent: AgentCheck
    sheets: SheetReading
    pools: Pools
    energy: Energy
    check: CheckYourself


@functools.cache
def numbers() -> Numbers:
    """Every value the over-training and pricing chapter shows, in page order."""
    lifetime = build_lifetime()
    serving_cost = build_serving_cost()
    gemini = build_gemini31()
    return Numbers(
        training=build_training_run(),
        chinchilla=build_chinchilla(),
        lifetime=lifetime,
        rl=build_reinforcement(lifetime),
        serving=serving_cost,
        long=build_long_context(),
        traffic=build_traffic(serving_cost),
        gemini=gemini,
        v32=build_deepseek_v32(),
        agent=build_agent_check(gemini),
        sheets=build_sheet_reading(),
        pools=build_pools(serving_cost),
        energy=build_energy(serving_cost),
        check=build_check_yourself(),
    )

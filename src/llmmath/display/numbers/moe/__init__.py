"""The mixture-of-experts chapter's numbers (``lessons/moe.md``), section by section.

Its settings:

- the models: Mixtral-8x7B and DeepSeek-V3 as published (bf16 unless a line says otherwise);
- the batch argument: the critical batch ``C/W`` of one H100 in bf16;
- expert parallelism: DeepSeek-V3 at 8,192 tokens a step, EP8 in one HGX H100 node, EP64 over
  eight nodes and EP64 in one GB200 NVL72 rack, bf16 activations; DeepSeek's node-limited fp8
  dispatch at EP64 over eight HGX H100 nodes;
- attention beside EP: 64 H100s, DeepSeek-V3 in fp8 with a bf16 cache, at 2,000, 32,768 and
  131,072 tokens of context; the published wide-EP decode runs of ``data/systems.toml``;
- the rack: the racks, room limits and domains of ``data/systems.toml``;
- hot experts: Zipf-shaped loads over DeepSeek-V3's 256 experts, skews 0 to 0.8;
- check yourself: Mixtral at batch 4; 128 experts top-8 on a B200; DeepSeek-V3 at EP16 over two
  HGX H100 nodes at 4,096 tokens; the DP-attention group of the attention section.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from llmmath.display.numbers.moe.check import CheckYourself, build_check_yourself
from llmmath.display.numbers.moe.experts import (
    AllToAll,
    Batches,
    Domains,
    Params,
    build_all_to_all,
    build_batches,
    build_domains,
    build_params,
)
from llmmath.display.numbers.moe.racks import (
    Attention,
    HotExperts,
    RackBound,
    RackPhysics,
    WideRuns,
    build_attention,
    build_hot_experts,
    build_rack_bound,
    build_rack_physics,
    build_wide_runs,
)


@dataclass(frozen=True)
class Numbers:
    params: Params
    batches: Batches
    domains: Domains
    all_to_all: AllToAll
    rack: RackBound
    attention: Attention
    wide: WideRuns
    physics: RackPhysics
    balance: HotExperts
    check: CheckYourself


@functools.cache
def numbers() -> Numbers:
    """Every value the MoE chapter shows, in page order."""
    params = build_params()
    batches = build_batches(params)
    domains = build_domains()
    all_to_all = build_all_to_all(params)
    attention = build_attention(params)
    return Numbers(
        params=params,
        batches=batches,
        domains=domains,
        all_to_all=all_to_all,
        rack=build_rack_bound(params),
        attention=attention,
        wide=build_wide_runs(),
        physics=build_rack_physics(),
        balance=build_hot_experts(params),
        check=build_check_yourself(params, domains, attention),
    )

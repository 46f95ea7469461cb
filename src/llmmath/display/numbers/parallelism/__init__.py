"""The parallelism chapter's numbers (``lessons/parallelism.md``), section by section.

Its settings:

- training: Llama-3-70B on 1,024 H100, 4M tokens (512 sequences of 8,192) per step, bf16
  weights and gradients with mixed-precision Adam, in the layouts the page names (TP8 x DP128
  ZeRO-1 the worked one, 8 microbatches);
- the links: an 8-GPU H100 node (NVLink, one NIC per GPU) and a GB200 NVL72 rack;
- a real run: Llama-3.1-405B as Meta trained it (Table 4 of the Llama 3 paper, data/systems.toml),
  with an interleaved pipeline of 2 chunks per GPU (our assumption);
- the critical batch: Llama 3's batch ramp, and a check-yourself lab (8M tokens, 24,576 H100);
- FP8: the same TP8 x DP128 step with FP8 matmuls; DeepSeek-V3's pre-training run;
- context parallelism: one 128K prompt of Llama-3.1-405B on 16 nodes of 8 H100 (TP8 x CP16);
- serving: Llama-3-70B on one node of 8 H100, 8,192-token sequences, TP8 against PP8;
  DeepSeek-V3 as EP64 with fp8 weights, 128 sequences of 4,096 tokens per GPU;
- collective latency: Llama-3-70B decoding at batch 1, 2,048 tokens, serial, TP2 to TP16 on
  H100; PaLM 540B on 64 TPU v4.

Its sections live in four modules, in page order: :mod:`.ways` (the links, collectives, memory
and traffic of each kind, and reversible layers), :mod:`.layouts` (the bubble, six layouts,
Llama 3's run, the critical batch), :mod:`.fp8_and_context` and :mod:`.serving` (serving,
collective latency, the check-yourself questions).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from llmmath.display.numbers.parallelism.fp8_and_context import (
    Context,
    Fp8,
    build_context,
    build_fp8,
)
from llmmath.display.numbers.parallelism.layouts import (
    Bubble,
    CriticalBatch,
    Llama3Run,
    SideBySide,
    build_bubble,
    build_critical_batch,
    build_llama3,
    build_side_by_side,
)
from llmmath.display.numbers.parallelism.serving import (
    CheckYourself,
    Latency,
    Serving,
    build_check,
    build_latency,
    build_serving,
)
from llmmath.display.numbers.parallelism.ways import (
    Basics,
    Collectives,
    Memory,
    Reversible,
    Traffic,
    Ways,
    build_basics,
    build_collectives,
    build_memory,
    build_reversible,
    build_traffic,
    build_ways,
)


@dataclass(frozen=True)
class Numbers:
    """The page's sections, in page order."""

    basics: Basics
    ways: Ways
    collectives: Collectives
    memory: Memory
    traffic: Traffic
    bubble: Bubble
    side_by_side: SideBySide
    llama3: Llama3Run
    critical_batch: CriticalBatch
    fp8: Fp8
    context: Context
    serving: Serving
    reversible: Reversible
    latency: Latency
    check: CheckYourself


@functools.cache
def numbers() -> Numbers:
    """Every value the parallelism page shows, section by section in page order."""
    basics = build_basics()
    ways = build_ways(basics)
    collectives = build_collectives(basics)
    memory = build_memory(basics)
    traffic = build_traffic(basics, memory)
    bubble = build_bubble()
    side_by_side = build_side_by_side(basics)
    llama3 = build_llama3(basics)
    critical_batch = build_critical_batch()
    fp8 = build_fp8(basics, memory)
    context = build_context(basics, critical_batch)
    serving = build_serving(basics)
    reversible = build_reversible(basics, memory)
    latency = build_latency(basics)
    check = build_check(basics, serving)
    return Numbers(
        basics=basics,
        ways=ways,
        collectives=collectives,
        memory=memory,
        traffic=traffic,
        bubble=bubble,
        side_by_side=side_by_side,
        llama3=llama3,
        critical_batch=critical_batch,
        fp8=fp8,
        context=context,
        serving=serving,
        reversible=reversible,
        latency=latency,
        check=check,
    )

"""Two systems consequences of the floors: the latency of tensor-parallel all-reduces at small
batch, and separate pools of chips for prefill and decode.

**Collective latency.** Tensor parallelism all-reduces each layer's activations twice (after
attention, after the MLP; once for a parallel attention + MLP block, as PaLM's). Each
all-reduce pays a base latency and the link's per-step latency alpha for every step of its
algorithm, however few bytes it carries, and the next layer cannot start before it ends: at
batch 1 nothing hides it. So NCCL's cost model estimates a token's latency as the weight read
plus ``all-reduces x (base + steps x alpha)``, a term that grows with the TP degree while the
weight read shrinks. An estimate, not a floor: one-shot all-reduces take fewer steps.

**Disaggregation.** Prefill is compute-bound (a prompt is a batch for the weights) and decode
is bandwidth-bound below the critical batch, so a chip does several times more input tokens
than output tokens per second. A server that runs them on separate pools (DeepSeek's, DistServe,
Splitwise) sizes each pool by its own rate, and a long prefill no longer stalls every decoding
sequence. Chip counts from floors are lower bounds.

>>> from llmmath.beyond import serving_systems
>>> b = serving_systems.tp_decode_breakdown("Llama-3-70B", "H100", 8, 1, 2048)
>>> round(float(b.alpha_s) * 1e3, 2), round(float(b.serial_s) * 1e3, 2)   # ms per token
(2.4, 7.62)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.beyond.layout_search import WORKLOAD, WorkloadView
from llmmath.core import collectives, data
from llmmath.core._checks import FloatArray
from llmmath.core._constraints import MAX_CHIPS, Count, OneOf, Real, SequenceOf
from llmmath.core.capacity import step_critical_batch
from llmmath.core.contracts import (
    AMOUNT,
    FLAG,
    NOTE,
    POSITIVE,
    RESULT,
    SCALAR,
    SCALAR_POSITIVE,
    SCALAR_PROMPT,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig
from llmmath.core.placement import Layout
from llmmath.core.serving import decode_step, prefill
from llmmath.parallelism import layout_decode_step

# ---- collective latency in tensor-parallel decode ----------------------------------------------


def _double_latency(chip: str | Chip) -> Chip:
    """The same chip with every latency doubled (per step and per collective). A collective's
    time is linear in them, so the time this adds is exactly the latency part of the original."""
    spec = get_chip(chip)
    return dataclasses.replace(
        spec,
        scale_up_latency_s=2 * spec.scale_up_latency_s,
        scale_out_latency_s=2 * spec.scale_out_latency_s,
        collective_base_latency_s=2 * spec.collective_base_latency_s,
    )


@contract(group=SequenceOf(Count(high=MAX_CHIPS)), n_all_reduces=Count(low=0))
def all_reduce_latency_s(chip: str | Chip, group: Sequence[int], n_all_reduces: int) -> float:
    """The latency part (base + alpha x steps) of ``n_all_reduces`` all-reduces over a group of
    ``prod(group)`` chips, reduced one dimension at a time with a ring along each: ``(64,)`` is
    one ring over 64 chips (``2 x 63`` steps), ``(4, 4, 4)`` a 3D torus (``2 x 9`` steps, and
    three base latencies where the chip has one).
    Each dimension's share is what :func:`llmmath.core.collectives.all_reduce_time_s` adds when
    the latency doubles."""
    slow = _double_latency(chip)
    per_all_reduce = sum(
        collectives.all_reduce_time_s(1.0, d, slow) - collectives.all_reduce_time_s(1.0, d, chip)
        for d in group
    )
    return float(n_all_reduces * per_all_reduce)


@dataclass(frozen=True)
@checked(
    **each(RESULT, "batch weight_read_s tp_s alpha_s floor_s serial_s"), tp=Count(high=MAX_CHIPS)
)
class TPBreakdown:
    """One decode step with tensor parallelism over ``tp`` chips, per token of one sequence:
    the weight read, the TP all-reduces (``tp_s``) and their latency part (``alpha_s``), the
    floor (everything overlapped) and the serial estimate (the all-reduces after the matmuls,
    which is what a dependent chain of layers does at batch 1)."""

    tp: int
    batch: FloatArray
    weight_read_s: FloatArray
    tp_s: FloatArray
    alpha_s: FloatArray
    floor_s: FloatArray
    serial_s: FloatArray

    @property
    def alpha_share(self) -> FloatArray:
        """The all-reduces' latency as a share of the serial step."""
        return np.asarray(self.alpha_s / self.serial_s)


@contract(tp=Count(high=MAX_CHIPS), context=AMOUNT)
def tp_decode_breakdown(
    model: str | ModelConfig,
    chip: str | Chip,
    tp: int,
    batch: ArrayLike,
    context: ArrayLike,
    *,
    weight_dtype: str = "bf16",
) -> TPBreakdown:
    """:func:`llmmath.parallelism.layout_decode_step` with ``Layout(tp=tp)``, split into the weight
    read and the all-reduces; the latency part is what the step's ``tp_s`` gains when the
    links' latency doubles."""
    layout = Layout(tp=tp)
    step = layout_decode_step(model, layout, chip, batch, context, weight_dtype=weight_dtype)
    slow = layout_decode_step(
        model, layout, _double_latency(chip), batch, context, weight_dtype=weight_dtype
    )
    return TPBreakdown(
        tp=tp,
        batch=np.asarray(step.batch),
        weight_read_s=np.asarray(step.weight_read_s),
        tp_s=np.asarray(step.tp_s),
        alpha_s=np.asarray(slow.tp_s - step.tp_s),
        floor_s=np.asarray(step.floor_s),
        serial_s=np.asarray(step.serial_s),
    )


@dataclass(frozen=True)
@checked(value=SCALAR_POSITIVE, **each(NOTE, "key units label"))
class Measured:
    """A published measurement set beside one of the package's estimates (``systems.toml``,
    ``[measured.<key>]``): its value in ``units``, what was measured and where."""

    key: str
    value: float
    units: str
    label: str
    source: str
    source_date: str


def _measured_keys() -> list[str]:
    return list(data.table("systems")["measured"])


@contract(key=OneOf(_measured_keys, "measurement"))
def measured(key: str) -> Measured:
    """The published measurement ``key`` of ``data/systems.toml`` (``[measured.<key>]``)."""
    spec = data.table("systems")["measured"][key]
    return Measured(
        key=key, **{f: spec[f] for f in ("value", "units", "label", "source", "source_date")}
    )


# ---- disaggregated prefill and decode ----------------------------------------------------------
@dataclass(frozen=True)
@checked(
    **each(
        RESULT,
        "prefill_tokens_per_s_per_chip decode_tokens_per_s_per_chip prefill_chips decode_chips",
    )
)
class Pools:
    """The chips each pool needs for a stream of input and output tokens (lower bounds: the
    rates are floors' rates), and each pool's rate per chip."""

    prefill_tokens_per_s_per_chip: FloatArray
    decode_tokens_per_s_per_chip: FloatArray
    prefill_chips: FloatArray
    decode_chips: FloatArray

    @property
    def decode_share(self) -> FloatArray:
        """The share of all chips that decode."""
        return np.asarray(self.decode_chips / (self.prefill_chips + self.decode_chips))


@contract(
    input_tokens_per_s=AMOUNT,
    output_tokens_per_s=AMOUNT,
    decode_batch=POSITIVE,
    context=SCALAR_PROMPT,
    cache_hit_fraction=Real(low_open=False, high=1.0, scalar=True),
)
def disaggregated_pools(
    deployment: Deployment,
    input_tokens_per_s: ArrayLike,
    output_tokens_per_s: ArrayLike,
    decode_batch: ArrayLike,
    context: float,
    cache_hit_fraction: float = 0.0,
) -> Pools:
    """Chips for a prefill pool and a decode pool, each built of copies of ``deployment``.

    Prefill: prompts of ``context`` tokens, ``ceil(B* / context)`` per pass (enough to be
    compute-bound, as :func:`llmmath.pricing.serving_cost` does); input tokens found in the
    prompt cache (``cache_hit_fraction``) are not recomputed. Decode: ``decode_batch``
    sequences at ``context`` per step. Chips = tokens per second / (tokens per second per chip).
    """
    dep = deployment
    per_pass = math.ceil(float(step_critical_batch(dep)) / float(context))
    fill = prefill(dep, context, per_pass)
    step = decode_step(dep, decode_batch, context)
    prefill_rate = np.asarray(fill.tokens_per_s / dep.n_chips)
    decode_rate = np.asarray(step.tokens_per_s_per_chip)
    computed = np.asarray(input_tokens_per_s, dtype=np.float64) * (1.0 - cache_hit_fraction)
    output = np.asarray(output_tokens_per_s, dtype=np.float64)
    return Pools(
        prefill_tokens_per_s_per_chip=prefill_rate,
        decode_tokens_per_s_per_chip=decode_rate,
        prefill_chips=np.asarray(computed / prefill_rate),
        decode_chips=np.asarray(output / decode_rate),
    )


@dataclass(frozen=True)
@checked(
    **each(SCALAR, "input_tokens_per_s output_tokens_per_s prefill_nodes decode_nodes fleet_nodes"),
    cache_hit_fraction=Real(low_open=False, high=1.0, scalar=True),
)
class PublishedPools:
    """DeepSeek's fleet, one day's averages: the token streams and the nodes each pool needs
    at its published per-node rate (``fleet_nodes`` is what they ran on average)."""

    input_tokens_per_s: float
    output_tokens_per_s: float
    prefill_nodes: float
    decode_nodes: float
    fleet_nodes: float
    cache_hit_fraction: float

    @property
    def input_output_ratio(self) -> float:
        return self.input_tokens_per_s / self.output_tokens_per_s


@contract()
def deepseek_pools() -> PublishedPools:
    """DeepSeek's day (``data/systems.toml``): input and output tokens per second, and the
    nodes each pool needs at ~73.7k input tokens/s (cache hits included) per prefill node and
    ~14.8k output tokens/s per decode node."""
    spec = data.table("systems")["deepseek_serving"]
    day_s = 24 * 3600.0
    input_rate = spec["input_tokens_per_day"] / day_s
    output_rate = spec["output_tokens_per_day"] / day_s
    return PublishedPools(
        input_tokens_per_s=input_rate,
        output_tokens_per_s=output_rate,
        prefill_nodes=input_rate / spec["prefill_input_tokens_per_s_per_node"],
        decode_nodes=output_rate / spec["decode_output_tokens_per_s_per_node"],
        fleet_nodes=float(spec["fleet_nodes"]),
        cache_hit_fraction=spec["cached_input_tokens_per_day"] / spec["input_tokens_per_day"],
    )


@contract(prompt_tokens=SCALAR_PROMPT, decode_batch=SCALAR_POSITIVE, context=SCALAR)
def prefill_stall_steps(
    deployment: Deployment, prompt_tokens: float, decode_batch: float, context: float
) -> float:
    """How many decode steps one prefill of ``prompt_tokens`` lasts on the same chips: on a
    server that mixes them, every decoding sequence waits that many token-times (the
    interference that disaggregation removes; chunked prefill spreads it instead)."""
    fill = prefill(deployment, prompt_tokens, 1)
    step = decode_step(deployment, decode_batch, context)
    return float(fill.time_s / step.time_s)


# ---- chunked prefill: a token budget a step, shared by the decodes and the prompts ----------
@dataclass(frozen=True)
@checked(
    **each(SCALAR, "prefill_chunk decode_tokens_per_step prompt_tokens_per_step"),
    **each(SCALAR, "needed_prompt_tokens_per_step steps_to_first_token"),
    **each(RESULT, "ttft_s longest_step_s mean_step_s tpot_s"),
    keeps_up=FLAG,
)
class ChunkedPrefill:
    """A colocated workload under a budget of ``P`` tokens a step (vLLM's
    ``max_num_batched_tokens``, SGLang's ``chunked_prefill_size``), all floors: the ``C``
    decoding sequences take one token each, prompts fill the other ``P - C``. One prompt of
    ``I'`` computed tokens (``I`` less the prefix-cache hits) rides ``ceil(I' / (P - C))`` steps
    alone (no queueing). A prompt token costs ``t_p = t_prefill / I'``, the compute-bound rate
    of the workload's batched prefill, so a step carrying ``k`` prompt tokens takes
    ``t_decode + k t_p``."""

    #: The budget ``P``, tokens a step.
    prefill_chunk: float
    #: ``C``: one token for each sequence decoding (MTP drafts not counted).
    decode_tokens_per_step: float
    #: ``P - C``: the prompt tokens a step can carry.
    prompt_tokens_per_step: float
    #: ``C I' / O``: the prompt tokens a step must carry on average to keep ``C`` decoding.
    needed_prompt_tokens_per_step: float
    #: Whether the budget carries what the stream needs (else prompts queue without bound).
    keeps_up: bool
    #: ``ceil(I' / (P - C))``: the steps a lone prompt takes.
    steps_to_first_token: float
    #: ``ceil(I' / (P - C)) t_decode + I' t_p``: the first token of a lone prompt.
    ttft_s: float
    #: ``t_decode + (P - C) t_p``: a step carrying a full chunk, the longest gap between tokens.
    longest_step_s: float
    #: ``t_decode + (C I' / O) t_p``: a step on average; the budget does not change it.
    mean_step_s: float
    #: The mean step over the tokens a step yields: the workload's own TPOT.
    tpot_s: float


def _room_for_a_prompt(view: WorkloadView, prefill_chunk: float) -> str | None:
    """The rule of :func:`chunked_prefill` (its ``where=``): a colocated workload, and a budget
    that leaves room for a prompt beside the decodes."""
    if view.disaggregated:
        return (
            "prefill_chunk applies to colocated serving; a disaggregated prefill pool runs "
            "whole prompts"
        )
    if prefill_chunk <= view.concurrency:
        return (
            f"prefill_chunk must exceed the {view.concurrency:g} sequences decoding (one token "
            f"each a step) to leave room for a prompt; got {prefill_chunk:g}"
        )
    return None


@contract(
    view=WORKLOAD,
    prefill_chunk=Real(low=1.0, low_open=False, scalar=True, integer=True),
    where=_room_for_a_prompt,
)
def chunked_prefill(view: WorkloadView, prefill_chunk: float) -> ChunkedPrefill:
    """``view`` (colocated) with its prompts cut into chunks of a ``prefill_chunk``-token budget
    a step (see :class:`ChunkedPrefill`). A larger budget shortens the first token of a long
    prompt and lengthens the longest gap between tokens; the mean step, and so TPOT and the
    throughput, are the same at the floor (the same prompt tokens are computed either way).

    >>> from llmmath.core.deployment import Deployment
    >>> from llmmath.beyond.layout_search import workload
    >>> view = workload(Deployment("Llama-3-8B", "H100"), 7000, 500, 8)
    >>> chunks = chunked_prefill(view, 8192)
    >>> chunks.prompt_tokens_per_step, chunks.steps_to_first_token
    (8184.0, 1.0)
    """
    P, C = float(prefill_chunk), view.concurrency
    computed = max(view.input_tokens * (1.0 - view.cache_hit_fraction), 1.0)
    per_token_s = view.prefill_s_per_request / computed
    room = P - C
    needed = C * computed / view.output_tokens
    steps = float(math.ceil(computed / room))
    mean_step_s = view.decode_step_s + needed * per_token_s
    return ChunkedPrefill(
        prefill_chunk=P,
        decode_tokens_per_step=C,
        prompt_tokens_per_step=room,
        needed_prompt_tokens_per_step=needed,
        keeps_up=needed <= room,
        steps_to_first_token=steps,
        ttft_s=steps * view.decode_step_s + computed * per_token_s,
        longest_step_s=view.decode_step_s + room * per_token_s,
        mean_step_s=mean_step_s,
        tpot_s=mean_step_s / view.mtp_tokens_per_step,
    )


@contract()
def default_prefill_chunk() -> float:
    """The engines' default budget a step, tokens (``data/systems.toml``: vLLM's and SGLang's
    on an H100 or H200)."""
    return float(data.table("systems")["chunked_prefill"]["default_tokens"])


__all__ = [
    "ChunkedPrefill",
    "Measured",
    "Pools",
    "PublishedPools",
    "TPBreakdown",
    "all_reduce_latency_s",
    "chunked_prefill",
    "deepseek_pools",
    "default_prefill_chunk",
    "disaggregated_pools",
    "measured",
    "prefill_stall_steps",
    "tp_decode_breakdown",
]

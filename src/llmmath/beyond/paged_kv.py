"""Continuous batching and a paged KV cache: how many sequences fit, and how full the KV
memory and the batch are, when requests arrive and end at random; and, by Little's law, the
traffic that keeps a batch full (re-exported by :mod:`llmmath.beyond.serving_modes`, whose lesson
sections they are).

>>> from llmmath.beyond import paged_kv
>>> from llmmath.core.deployment import Deployment
>>> pack = paged_kv.kv_packing(Deployment("Llama-3-70B", "H100", 8), 161, 338.0, 8192)
>>> int(pack.reserved_batch), int(pack.static_batch), round(pack.static_busy_share, 3)
(185, 185, 0.172)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import data
from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import Count, Optional
from llmmath.core.capacity import cheapest_batch, max_batch, step_critical_batch
from llmmath.core.contracts import (
    AMOUNT,
    POSITIVE,
    RESULT,
    SCALAR,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.models import check_context
from llmmath.core.serving import decode_step


# ---- continuous batching and a paged KV cache ---------------------------------------------------
@dataclass(frozen=True)
@checked(
    **each(RESULT, "prompt_tokens mean_output_tokens reserved_tokens page_tokens"),
    **each(RESULT, "mean_cached_tokens mean_paged_tokens reserved_batch paged_batch"),
    **each(RESULT, "reserved_kv_use paged_kv_use static_busy_share critical_batch"),
    static_batch=RESULT,
)
class KVPacking:
    """How many sequences fit, and how full the KV memory is, with and without paging.

    *Reserved*: each sequence holds room for ``reserved_tokens`` from the start (a static
    allocation). *Paged*: each holds its tokens so far, rounded up to pages. In steady state a
    request of ``o`` output tokens is live for ``o`` steps, so long requests are weighted by
    their length. *Static batching* (no refill) keeps a batch until its longest request ends:
    on average only ``static_busy_share`` of the ``static_batch`` slots are busy (the longer
    the batch, the longer its longest answer, so the share falls with ``static_batch``).
    """

    prompt_tokens: float
    mean_output_tokens: float
    reserved_tokens: float
    page_tokens: float
    #: Tokens a live sequence has cached, on average over steps.
    mean_cached_tokens: float
    #: The same rounded up to whole pages.
    mean_paged_tokens: float
    reserved_batch: float
    paged_batch: float
    #: Share of the KV memory holding real tokens: reserved, and paged.
    reserved_kv_use: float
    paged_kv_use: float
    static_busy_share: float
    #: The deployment's critical batch, for comparison.
    critical_batch: float
    #: The requests a static batch starts together (``static_busy_share`` is for this batch;
    #: by default ``reserved_batch``).
    static_batch: float


#: Quantiles of the output-length distribution the steady state averages over.
LENGTH_SAMPLES = 512


@contract(
    prompt_tokens=Count(),
    mean_output_tokens=SCALAR_POSITIVE,
    reserved_tokens=Count(),
    page_tokens=Count(high=1 << 12),
    static_batch=Optional(Count()),
)
def kv_packing(
    deployment: Deployment,
    prompt_tokens: int,
    mean_output_tokens: float,
    reserved_tokens: int,
    page_tokens: int = 16,
    static_batch: int | None = None,
) -> KVPacking:
    """KV memory use and batch for requests of ``prompt_tokens`` and output lengths drawn
    from an exponential of mean ``mean_output_tokens`` (capped so a request fits in
    ``reserved_tokens``), with each sequence reserving ``reserved_tokens`` or paging.
    ``static_busy_share`` is the mean answer over the expected longest of ``static_batch``
    answers, ``1 / H_n`` uncapped (default ``n``: ``reserved_batch``, the sequences that fit
    when each reserves its room)."""
    dep = deployment
    check_context(dep.model, reserved_tokens, "reserved_tokens")
    cap = reserved_tokens - prompt_tokens
    if cap < 1:
        raise ValueError(
            f"reserved_tokens={reserved_tokens} leaves no room for output after "
            f"prompt_tokens={prompt_tokens}"
        )
    q = (np.arange(LENGTH_SAMPLES) + 0.5) / LENGTH_SAMPLES
    outputs = np.clip(np.ceil(-mean_output_tokens * np.log1p(-q)), 1, cap)
    cached, paged, steps = _steady_state(float(prompt_tokens), outputs, page_tokens)
    reserved_batch = float(max_batch(dep, reserved_tokens))
    n = int(max(reserved_batch, 1.0)) if static_batch is None else int(static_batch)
    # Answers of mean m capped at c, u = 1 - exp(-c/m): one averages m u, the longest of n
    # m (u + u^2/2 + ... + u^n/n) (m H_n uncapped), so the busy share is u / sum(u^k / k).
    u = -math.expm1(-cap / mean_output_tokens)
    k = np.arange(1.0, n + 1.0)
    busy = u / float(np.sum(u**k / k))
    budget, kv = dep.kv_budget_bytes, dep.kv_bytes_held_per_token
    return KVPacking(
        prompt_tokens=float(prompt_tokens),
        mean_output_tokens=float(np.mean(outputs)),
        reserved_tokens=float(reserved_tokens),
        page_tokens=float(page_tokens),
        mean_cached_tokens=cached / steps,
        mean_paged_tokens=paged / steps,
        reserved_batch=reserved_batch,
        paged_batch=math.floor(budget / (paged / steps * kv)),
        reserved_kv_use=cached / steps / reserved_tokens,
        paged_kv_use=cached / paged,
        static_busy_share=busy,
        critical_batch=step_critical_batch(dep),
        static_batch=float(n),
    )


def _steady_state(prompt: float, outputs: FloatArray, page: int) -> tuple[float, float, float]:
    """Sums over every (request, step) pair: cached tokens, the same in whole pages, steps."""
    cached = paged = 0.0
    for o in outputs:
        lengths = prompt + np.arange(1.0, o + 1.0)  # the cache after each of its o steps
        cached += float(np.sum(lengths))
        paged += float(np.sum(np.ceil(lengths / page) * page))
    return cached, paged, float(np.sum(outputs))


@contract()
def request_lengths() -> dict[str, float]:
    """The ShareGPT means and the vLLM paper's measured KV use of earlier systems (data)."""
    spec = data.table("serving_modes")["request_lengths"]["sharegpt"]
    keys = ("prompt_tokens", "mean_output_tokens", "used_share_low", "used_share_high")
    return {key: float(spec[key]) for key in keys}


# ---- concurrency: the traffic that fills a batch (Little's law) --------------------------------
@contract(arrival_per_s=AMOUNT, time_in_system_s=AMOUNT)
def concurrency(arrival_per_s: ArrayLike, time_in_system_s: ArrayLike) -> float | FloatArray:
    """Little's law, ``L = lambda W``: the mean number in flight when ``arrival_per_s`` arrive
    per second and each stays ``time_in_system_s`` (any stable system in steady state).

    >>> from llmmath.beyond import paged_kv
    >>> round(float(paged_kv.concurrency(3e8, 0.020)))  # tokens/s x s per token: streams
    6000000
    """
    return as_output(as_floats(arrival_per_s) * as_floats(time_in_system_s))


@dataclass(frozen=True)
@checked(
    **each(RESULT, "batch output_tokens step_s request_s requests_per_s tokens_per_s"),
    **each(RESULT, "cost_per_million_usd floor_cost_per_million_usd floor_batch"),
)
class Demand:
    """One replica's mean decode batch and the traffic that keeps it there.

    A request holds one slot for its answer, ``output_tokens`` steps of ``step_s``:
    ``request_s = output_tokens * step_s``. By Little's law the batch is
    ``requests_per_s * request_s``, and its ``batch / step_s`` tokens per second are
    ``requests_per_s * output_tokens``. Prefill and queueing are left out (floors)."""

    batch: FloatArray
    output_tokens: float
    step_s: FloatArray
    request_s: FloatArray
    requests_per_s: FloatArray
    tokens_per_s: FloatArray
    cost_per_million_usd: FloatArray
    #: The cheapest batch (``min(ceil(B*(T)), max batch)``) and its cost.
    floor_batch: float
    floor_cost_per_million_usd: float

    @property
    def cost_over_floor(self) -> FloatArray:
        """How many times the cheapest token this traffic's token costs."""
        return np.asarray(self.cost_per_million_usd / self.floor_cost_per_million_usd)


def _demand(dep: Deployment, T: float, output_tokens: int, batch: FloatArray) -> Demand:
    floor_batch = cheapest_batch(dep, T)
    step = decode_step(dep, batch, T)
    request_s = output_tokens * np.asarray(step.time_s)
    return Demand(
        batch=np.asarray(step.batch),
        output_tokens=float(output_tokens),
        step_s=np.asarray(step.time_s),
        request_s=request_s,
        requests_per_s=np.asarray(step.batch / request_s),
        tokens_per_s=np.asarray(step.tokens_per_s),
        cost_per_million_usd=np.asarray(step.cost_per_million_tokens_usd()),
        floor_batch=floor_batch,
        floor_cost_per_million_usd=float(
            decode_step(dep, floor_batch, T).cost_per_million_tokens_usd()
        ),
    )


@contract(context=SCALAR, output_tokens=Count(high=1 << 20), batch=Optional(POSITIVE))
def demand_to_fill(
    deployment: Deployment, context: float, output_tokens: int, batch: ArrayLike | None = None
) -> Demand:
    """The traffic that keeps ``batch`` sequences of ``context`` tokens in one replica's step
    (default: the cheapest batch), answers of ``output_tokens``: ``lambda = B / (o t(B))``."""
    T = float(check_context(deployment.model, context))
    B = cheapest_batch(deployment, T) if batch is None else as_floats(batch)
    return _demand(deployment, T, output_tokens, np.asarray(B, dtype=np.float64))


@contract(context=SCALAR, output_tokens=Count(high=1 << 20), requests_per_s=POSITIVE)
def batch_from_demand(
    deployment: Deployment, context: float, output_tokens: int, requests_per_s: ArrayLike
) -> Demand:
    """The mean batch ``requests_per_s`` keep in one replica: ``B = lambda o t(B)`` (Little's
    law with the step's own time), solved by bisection (``B / t(B)`` rises with ``B``) up to
    the cheapest batch; more traffic than that batch serves needs another replica."""
    T = float(check_context(deployment.model, context))
    rate = as_floats(requests_per_s) * output_tokens  # tokens per second asked for
    top = demand_to_fill(deployment, T, output_tokens)
    if np.any(rate > top.tokens_per_s * (1 + 1e-12)):
        raise ValueError(
            f"requests_per_s={np.max(as_floats(requests_per_s)):g} is more than one replica "
            f"serves at its cheapest batch ({float(top.requests_per_s):.4g} per s): add replicas"
        )
    lo, hi = np.zeros_like(rate), np.full_like(rate, top.floor_batch)
    for _ in range(64):  # to 2^-64 of the floor batch: below a float's resolution
        mid = 0.5 * (lo + hi)
        slow = np.asarray(decode_step(deployment, np.maximum(mid, 1e-300), T).tokens_per_s) < rate
        lo, hi = np.where(slow, mid, lo), np.where(slow, hi, mid)
    return _demand(deployment, T, output_tokens, 0.5 * (lo + hi))


__all__ = [
    "LENGTH_SAMPLES",
    "Demand",
    "KVPacking",
    "batch_from_demand",
    "concurrency",
    "demand_to_fill",
    "kv_packing",
    "request_lengths",
]

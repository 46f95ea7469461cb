"""Continuous batching and a paged KV cache: how many sequences fit, and how full the KV
memory and the batch are, when requests arrive and end at random (re-exported by
:mod:`llmmath.serving_modes`, whose lesson section it is).

>>> from llmmath import paged_kv
>>> from llmmath.deployment import Deployment
>>> pack = paged_kv.kv_packing(Deployment("Llama-3-70B", "H100", 8), 161, 338.0, 8192)
>>> int(pack.reserved_batch), int(pack.static_batch), round(pack.static_busy_share, 3)
(185, 185, 0.172)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import data
from ._checks import FloatArray
from .batching import max_batch, step_critical_batch
from .contracts import RESULT, SCALAR_POSITIVE, Count, Optional, checked, contract, each
from .deployment import Deployment, check_context


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


__all__ = ["LENGTH_SAMPLES", "KVPacking", "kv_packing", "request_lengths"]

"""The cheapest serving layout and batch that meet a time-per-token target.

Every way to split ``n`` chips into ``dp * tp * pp * ep`` that the model allows
(:meth:`~llmmath.placement.Layout.validate`) and whose weights fit is tried; for each, the
largest batch whose decode step (:func:`llmmath.serving.decode_step`) meets the target and
whose KV caches fit. A step's time ``t(B)`` rises with the batch while ``t(B) / B`` does not,
so the largest batch that meets the target is also the cheapest per token on that layout; the
layouts are then ranked by output tokens per second per chip, which ranks them by cost at any
one price per chip-hour. Every time is a FLOOR under the deployment's overlap
rule and efficiency knobs.

>>> from llmmath.deployment import Deployment
>>> found = best_layouts(Deployment("Llama-3-70B", "H100", 8), 0.030, 4096)
>>> best = found.candidates[0]
>>> str(best.layout), int(best.batch)
('TP8 DP1', 371)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .batching import max_batch
from .chip_prices import list_example_prices
from .contracts import (
    CHIPS,
    RESULT,
    RESULT_OR_INF,
    SCALAR,
    SCALAR_POSITIVE,
    Count,
    Instance,
    OneOf,
    Optional,
    Real,
    checked,
    contract,
)
from .deployment import Deployment, check_context
from .placement import DoesNotFitError, Layout
from .serving import OVERLAP_RULES, DecodeStep, decode_step

#: Batches above this are not searched (a context of 0 would otherwise fit any batch).
MAX_SEARCH_BATCH = 2**20


@dataclass(frozen=True)
@checked(
    batch=RESULT,
    max_batch=RESULT_OR_INF,
    step=Instance(DecodeStep),
    cost_per_million_usd=Optional(RESULT),
)
class Candidate:
    """One layout at the largest batch whose step meets the target (and fits)."""

    layout: Layout
    batch: float
    #: The most sequences whose KV caches fit: where ``batch`` equals it, memory set the limit.
    max_batch: float
    step: DecodeStep
    #: None where the chip has no example price and the deployment names none.
    cost_per_million_usd: float | None

    @property
    def limited_by(self) -> str:
        """ "memory" where the KV caches capped the batch, "latency" where the target did."""
        return "memory" if self.batch >= self.max_batch else "latency"


@dataclass(frozen=True)
@checked(
    latency_s=SCALAR_POSITIVE,
    candidates=Instance(list, example=list),
    too_slow=Instance(list, example=list),
    do_not_fit=Instance(list, example=list),
    not_allowed=Count(low=0),
)
class SearchResult:
    """Layouts that meet the target, cheapest first, and why the others were left out."""

    latency_s: float
    candidates: list[Candidate]
    #: Layouts whose batch-1 step fits but is slower than the target, with that step.
    too_slow: list[Candidate]
    #: Layouts that the model allows but whose weights or one sequence's KV do not fit.
    do_not_fit: list[Layout]
    #: Splits of the chips the model does not allow (heads, layers or experts not divisible).
    not_allowed: int


@contract(n=CHIPS)
def divisors(n: int) -> list[int]:
    """Every whole number that divides ``n``, smallest first."""
    return [d for d in range(1, n + 1) if n % d == 0]


@contract()
def serving_layouts(deployment: Deployment) -> tuple[list[Layout], int]:
    """Every ``Layout(dp, tp, pp, ep)`` with ``dp tp pp ep = n`` that the model allows, and how
    many splits it does not allow."""
    n, model = deployment.n_chips, deployment.model
    allowed, refused = [], 0
    for tp in divisors(n):
        for pp in divisors(n // tp):
            for ep in divisors(n // (tp * pp)) if model.is_moe else [1]:
                layout = Layout.for_cluster(n, tp=tp, pp=pp, ep=ep)
                try:
                    layout.validate(model)
                except ValueError:
                    refused += 1
                    continue
                allowed.append(layout)
    return allowed, refused


@contract(
    latency_s=SCALAR_POSITIVE,
    context=SCALAR,
    most=Real(low=1.0, low_open=False, high=MAX_SEARCH_BATCH, scalar=True),
    overlap=OneOf(OVERLAP_RULES),
)
def largest_batch_within(
    deployment: Deployment,
    latency_s: float,
    context: float,
    most: float,
    *,
    overlap: str = "perfect",
) -> float:
    """The largest whole batch ``B <= most`` whose step meets ``latency_s`` (0 if none).

    ``t(B)`` rises with ``B``, so each round evaluates 64 batches between what is known to
    meet the target and what is not, in one vectorised call, and keeps the gap between them.
    """
    lo, hi = 0.0, float(most)  # every B <= lo meets it; every B > hi does not
    while lo < hi:
        grid = np.unique(np.round(np.linspace(lo + 1.0, hi, 64)))
        step = decode_step(deployment, grid, context, overlap=overlap)
        fast = step.time_s <= latency_s
        if np.any(fast):
            lo = float(grid[fast].max())
        if not np.all(fast):
            hi = float(grid[~fast].min()) - 1.0
    return lo


@contract(latency_s=SCALAR_POSITIVE, context=SCALAR, overlap=OneOf(OVERLAP_RULES))
def best_layouts(
    deployment: Deployment, latency_s: float, context: float, *, overlap: str = "perfect"
) -> SearchResult:
    """Every layout of ``deployment``'s chips at its cheapest batch meeting ``latency_s`` per
    output token at ``context`` under ``overlap``; dtypes, knobs and price come from
    ``deployment`` (its own layout is ignored). See the module docstring."""
    target = float(latency_s)
    T = float(check_context(deployment.model, context))
    layouts, refused = serving_layouts(deployment)
    priced = deployment.usd_per_chip_hour is not None or (
        deployment.chip.name in list_example_prices()
    )
    met: list[Candidate] = []
    slow: list[Candidate] = []
    full: list[Layout] = []
    for layout in layouts:
        try:
            dep = dataclasses.replace(deployment, layout=layout)
        except DoesNotFitError:
            full.append(layout)
            continue
        most = min(float(max_batch(dep, T)), MAX_SEARCH_BATCH)
        if most < 1:
            full.append(layout)
            continue
        batch = largest_batch_within(dep, target, T, most, overlap=overlap)
        step = decode_step(dep, max(batch, 1.0), T, overlap=overlap)
        cost = float(step.cost_per_million_tokens_usd()) if priced else None
        (met if batch >= 1 else slow).append(Candidate(layout, batch, most, step, cost))
    met.sort(key=lambda c: (-float(c.step.tokens_per_s_per_chip), float(c.step.time_s)))
    slow.sort(key=lambda c: float(c.step.time_s))
    return SearchResult(target, met, slow, full, refused)


__all__ = [
    "MAX_SEARCH_BATCH",
    "Candidate",
    "SearchResult",
    "best_layouts",
    "divisors",
    "largest_batch_within",
    "serving_layouts",
]

"""The cheapest serving layout and batch that meet a time-per-token target.

Every way to split ``n`` chips into ``dp * tp * pp * ep`` that the model allows
(:meth:`~llmmath.core.placement.Layout.validate`) and whose weights fit is tried; for each, the
largest batch whose decode step (:func:`llmmath.core.serving.decode_step`) meets the target and
whose KV caches fit. A step's time ``t(B)`` rises with the batch while ``t(B) / B`` does not,
so the largest batch that meets the target is also the cheapest per token on that layout; the
layouts are then ranked by output tokens per second per chip, which ranks them by cost at any
one price per chip-hour. Every time is a FLOOR under the deployment's overlap
rule and efficiency knobs.

>>> from llmmath.core.deployment import Deployment
>>> found = best_layouts(Deployment("Llama-3-70B", "H100", 8), 0.030, 4096)
>>> best = found.candidates[0]
>>> str(best.layout), int(best.batch)
('TP8 DP1', 371)

:func:`workload` is the steady state of a stream of requests (``I`` prompt tokens, ``O``
output tokens, ``C`` of them decoding at once) on one deployment, prefill included, and
:func:`calibrate` the one efficiency that makes it meet a measured rate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmmath.beyond.speculative import mtp_draft_kv_share, mtp_draft_share, speculative_step
from llmmath.core._constraints import Count, Instance, OneOf, Optional, Real
from llmmath.core.capacity import max_batch, step_critical_batch
from llmmath.core.chip_prices import list_example_prices
from llmmath.core.contracts import (
    CHIPS,
    FLAG,
    RESULT,
    RESULT_OR_INF,
    SCALAR,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import check_context, get_model
from llmmath.core.placement import DoesNotFitError, Layout
from llmmath.core.serving import OVERLAP_RULES, DecodeStep, decode_step, prefill
from llmmath.core.units import SECONDS_PER_HOUR

#: Batches above this are not searched (a context of 0 would otherwise fit any batch).
MAX_SEARCH_BATCH = 2**20


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
    priced = _priced(deployment)
    met: list[Candidate] = []
    slow: list[Candidate] = []
    full: list[Layout] = []
    for layout, dep, most in _placed(deployment, layouts, T, full):
        batch = largest_batch_within(dep, target, T, most, overlap=overlap)
        step = decode_step(dep, max(batch, 1.0), T, overlap=overlap)
        cost = float(step.cost_per_million_tokens_usd()) if priced else None
        (met if batch >= 1 else slow).append(Candidate(layout, batch, most, step, cost))
    met.sort(key=lambda c: (-float(c.step.tokens_per_s_per_chip), float(c.step.time_s)))
    slow.sort(key=lambda c: float(c.step.time_s))
    return SearchResult(target, met, slow, full, refused)


def _priced(deployment: Deployment) -> bool:
    """Whether the search can price a step: a rent given, or an example price for the chip."""
    return deployment.usd_per_chip_hour is not None or (
        deployment.chip.name in list_example_prices()
    )


def _placed(
    deployment: Deployment, layouts: list[Layout], context: float, full: list[Layout]
) -> Iterator[tuple[Layout, Deployment, float]]:
    """Each layout that holds its weights and at least one sequence at ``context``, as the
    deployment on it and the most sequences it holds (capped at ``MAX_SEARCH_BATCH``); the
    layouts that do not are appended to ``full``."""
    for layout in layouts:
        try:
            dep = dataclasses.replace(deployment, layout=layout)
        except DoesNotFitError:
            full.append(layout)
            continue
        most = min(float(max_batch(dep, context)), MAX_SEARCH_BATCH)
        if most < 1:
            full.append(layout)
            continue
        yield layout, dep, most


@contract(
    latency_s=SCALAR_POSITIVE,
    input_tokens=Real(low=1.0, low_open=False, scalar=True, integer=True),
    output_tokens=Real(low=1.0, low_open=False, scalar=True, integer=True),
    overlap=OneOf(OVERLAP_RULES),
)
def best_workload_layouts(
    deployment: Deployment,
    latency_s: float,
    input_tokens: float,
    output_tokens: float,
    *,
    overlap: str = "perfect",
) -> SearchResult:
    """:func:`best_layouts` for a stream of requests of ``input_tokens`` and ``output_tokens``
    (colocated, as :func:`workload` serves them): on each layout the most sequences decoding
    at once whose time per output token (:attr:`WorkloadView.tpot_s`, the decode step and the
    prompts prefilled beside it) meets ``latency_s`` and whose caches fit at the final context
    ``I + O``; layouts ranked by output tokens a second per chip *with the prefill counted*.
    Each candidate's ``workload`` is exactly what :func:`workload` gives at that concurrency,
    so a search and a workload of the same setting cannot disagree."""
    target, I, O = float(latency_s), float(input_tokens), float(output_tokens)  # noqa: E741
    final = float(check_context(deployment.model, I + O))
    layouts, refused = serving_layouts(deployment)
    priced = _priced(deployment)
    met: list[Candidate] = []
    slow: list[Candidate] = []
    full: list[Layout] = []
    for layout, dep, most in _placed(deployment, layouts, final, full):

        def at(concurrency: float, dep: Deployment = dep) -> WorkloadView:
            return workload(dep, I, O, concurrency, overlap=overlap)

        lo, hi = 0.0, most  # TPOT rises with the concurrency: every C <= lo meets it
        while lo < hi:
            mid = float(np.ceil((lo + hi) / 2.0))
            lo, hi = (mid, hi) if at(mid).tpot_s <= target else (lo, mid - 1.0)
        view = at(max(lo, 1.0))
        usd = view.usd_per_million()[1] if priced else None
        candidate = Candidate(layout, lo if lo >= 1 else 1.0, most, _view_step(view), usd, view)
        (met if lo >= 1 else slow).append(candidate)
    met.sort(key=lambda c: (-c.tokens_per_s_per_chip, c.time_per_token_s))
    slow.sort(key=lambda c: c.time_per_token_s)
    return SearchResult(target, met, slow, full, refused)


def _view_step(view: WorkloadView) -> DecodeStep:
    """The decode step of a workload: its concurrency at its mean context ``I + O / 2``."""
    mean = view.input_tokens + view.output_tokens / 2.0
    return decode_step(view.deployment, view.concurrency, mean, overlap=view.overlap)


# ---- a workload: a stream of requests in steady state ----------------------------------------
@dataclass(frozen=True)
@checked(
    **each(SCALAR, "input_tokens output_tokens concurrency cache_hit_fraction"),
    **each(RESULT, "decode_step_s prefill_s_per_request ttft_s"),
    mtp_tokens_per_step=SCALAR,
    disaggregated=FLAG,
    decode_bound=OneOf(("compute", "memory", "network")),
    overlap=OneOf(OVERLAP_RULES),
)
class WorkloadView:
    """A stream of requests in steady state on one deployment (all floors).

    Colocated (chunked prefill): each decode step of the ``C`` running sequences also
    computes the prompts of the ``C / O`` requests that replace the ones finishing, one after
    the other: a token every ``t = t_decode / m + (C / O) t_prefill`` (``m`` tokens a step
    with MTP). Disaggregated: prefill and decode run on separate copies of the deployment,
    sized to the stream; a token every ``t_decode / m``.
    """

    deployment: Deployment
    input_tokens: float
    output_tokens: float
    concurrency: float
    cache_hit_fraction: float
    disaggregated: bool
    #: One decode step at the mean context ``I + O / 2``.
    decode_step_s: float
    #: The prompt compute of one request, in a pass of prompts batched to be compute-bound.
    prefill_s_per_request: float
    #: One prompt prefilled alone: the floor of the time to first token (no queueing).
    ttft_s: float
    mtp_tokens_per_step: float = 1.0
    #: What bounds the decode step at the floor: "compute", "memory" or "network".
    decode_bound: str = "memory"
    #: How the steps' parts add up: "perfect" (the floor) or "none" (the serial estimate).
    overlap: str = "perfect"

    @property
    def _decode_token_s(self) -> float:
        return self.decode_step_s / self.mtp_tokens_per_step

    @property
    def tpot_s(self) -> float:
        """Time per output token of each sequence."""
        if self.disaggregated:
            return self._decode_token_s
        return self._decode_token_s + self.concurrency / self.output_tokens * (
            self.prefill_s_per_request
        )

    @property
    def request_s(self) -> float:
        return self.ttft_s + self.output_tokens * self.tpot_s

    @property
    def chip_s_per_output_token(self) -> float:
        """Chip-seconds one output token costs, its share of its prompt's prefill included."""
        n = self.deployment.n_chips
        decode = n * self._decode_token_s / self.concurrency
        return decode + n * self.prefill_s_per_request / self.output_tokens

    @property
    def output_tokens_per_s_per_chip(self) -> float:
        """Output tokens a second per chip, prefill included (both pools when disaggregated)."""
        return 1.0 / self.chip_s_per_output_token

    @property
    def decode_tokens_per_s_per_chip(self) -> float:
        """Output tokens a second per chip of the decode alone (a decode pool's rate)."""
        return self.concurrency / (self.deployment.n_chips * self._decode_token_s)

    @property
    def prefill_tokens_per_s_per_chip(self) -> float:
        """Input tokens a second per chip of the prefill alone (a prefill pool's rate), the
        prompt tokens found in the prefix cache counted as served."""
        return self.input_tokens / (self.deployment.n_chips * self.prefill_s_per_request)

    @property
    def measured_rate(self) -> float:
        """What a benchmark of this setting reports per chip: output tokens a second with the
        prefill included, or a disaggregated decode pool's own rate."""
        if self.disaggregated:
            return self.decode_tokens_per_s_per_chip
        return self.output_tokens_per_s_per_chip

    @property
    def input_tokens_per_s_per_chip(self) -> float:
        return self.output_tokens_per_s_per_chip * self.input_tokens / self.output_tokens

    @property
    def requests_per_s(self) -> float:
        """Requests a second the whole deployment (or both pools) completes."""
        return self.deployment.n_chips * self.output_tokens_per_s_per_chip / self.output_tokens

    @property
    def prefill_chip_share(self) -> float:
        """The share of chip time spent on prefill (the prefill pool's share, disaggregated)."""
        n = self.deployment.n_chips
        return (
            n * self.prefill_s_per_request / self.output_tokens * self.output_tokens_per_s_per_chip
        )

    def usd_per_million(self) -> tuple[float, float]:
        """$ per million input and output tokens: the chip time of the prefill over the input
        tokens, of the decode over the output tokens."""
        usd_per_chip_s = self.deployment.chip_hour_usd / SECONDS_PER_HOUR
        n = self.deployment.n_chips
        inputs = n * self.prefill_s_per_request / self.input_tokens * usd_per_chip_s
        outputs = n * self._decode_token_s / self.concurrency * usd_per_chip_s
        return inputs * 1e6, outputs * 1e6


@dataclass(frozen=True)
@checked(
    batch=RESULT,
    max_batch=RESULT_OR_INF,
    step=Instance(DecodeStep),
    cost_per_million_usd=Optional(RESULT),
    workload=Optional(Instance(WorkloadView)),
)
class Candidate:
    """One layout at the largest batch whose step meets the target (and fits); searched
    with a workload (:func:`best_workload_layouts`), the batch is the concurrency and
    ``workload`` its steady state, prefill included."""

    layout: Layout
    batch: float
    #: The most sequences whose KV caches fit: where ``batch`` equals it, memory set the limit.
    max_batch: float
    step: DecodeStep
    #: None where the chip has no example price and the deployment names none.
    cost_per_million_usd: float | None
    workload: WorkloadView | None = None

    @property
    def limited_by(self) -> str:
        """ "memory" where the KV caches capped the batch, "latency" where the target did."""
        return "memory" if self.batch >= self.max_batch else "latency"

    @property
    def time_per_token_s(self) -> float:
        """What the target is held to: the decode step, or with a workload its TPOT (the
        step and the prompts prefilled beside it)."""
        if self.workload is not None:
            return self.workload.tpot_s
        return float(self.step.time_s)

    @property
    def tokens_per_s_per_chip(self) -> float:
        """Output tokens a second per chip: the decode step's, or with a workload the
        stream's with its prefill counted (what the ranking uses)."""
        if self.workload is not None:
            return self.workload.output_tokens_per_s_per_chip
        return float(self.step.tokens_per_s_per_chip)


@contract(
    input_tokens=Real(low=1.0, low_open=False, scalar=True, integer=True),
    output_tokens=Real(low=1.0, low_open=False, scalar=True, integer=True),
    concurrency=Optional(Real(low=1.0, low_open=False, scalar=True)),
    cache_hit_fraction=Real(low_open=False, high=1.0, scalar=True),
    mtp_acceptance=Optional(Real(low_open=False, high=1.0, scalar=True)),
    overlap=OneOf(OVERLAP_RULES),
)
def workload(
    deployment: Deployment,
    input_tokens: float,
    output_tokens: float,
    concurrency: float | None = None,
    *,
    cache_hit_fraction: float = 0.0,
    disaggregated: bool = False,
    mtp_acceptance: float | None = None,
    overlap: str = "perfect",
) -> WorkloadView:
    """The steady state of requests of ``input_tokens`` and ``output_tokens`` with
    ``concurrency`` decoding at once (default: the most whose KV caches fit at the final
    context ``I + O``). Prompt tokens found in the prefix cache (``cache_hit_fraction``) are
    not recomputed. ``mtp_acceptance``: one multi-token-prediction draft per step accepted
    with that probability (:func:`llmmath.beyond.speculative.speculative_step`), the draft
    charged its share of the weight read and of the KV read (its one layer's cache, as the
    batching lesson charges it). Floors under the
    deployment's efficiency knobs, the steps' parts added up under ``overlap`` (see
    :class:`WorkloadView`)."""
    dep = deployment
    I, O = float(input_tokens), float(output_tokens)  # noqa: E741 (the symbols of the text)
    final = check_context(dep.model, I + O)
    room = float(max_batch(dep, final))
    C = room if concurrency is None else float(concurrency)
    if not 1 <= C <= room:
        raise DoesNotFitError(
            f"{dep.model.name}: {C:g} sequences of {I + O:g} tokens need more KV cache than "
            f"{dep.n_chips} x {dep.chip.name} hold beside the weights; at most {room:g} fit"
        )
    mean = I + O / 2.0
    step = decode_step(dep, C, mean, overlap=overlap)
    parts = [float(step.compute_s), float(step.memory_s), float(step.communication_s)]
    bound = ("compute", "memory", "network")[int(np.argmax(parts))]
    tokens_per_step = 1.0
    step_s = float(step.time_s)
    if mtp_acceptance is not None:
        if overlap != "perfect":
            raise ValueError(
                "mtp_acceptance: a speculative step is timed at the floor only "
                f"(overlap='perfect'); got overlap={overlap!r}"
            )
        # The MTP module's own layer reads its weights and its KV cache per draft token, as
        # the batching lesson's speculation section charges it (mtp_draft_kv_share).
        spec = speculative_step(
            dep,
            C,
            mean,
            1,
            mtp_acceptance,
            mtp_draft_share(dep.model),
            draft_kv_share=mtp_draft_kv_share(dep.model),
        )
        tokens_per_step, step_s = float(spec.tokens_per_step), float(spec.time_s)
    computed = max(I * (1.0 - cache_hit_fraction), 1.0)
    per_pass = max(1.0, float(np.ceil(float(step_critical_batch(dep)) / computed)))
    fill = prefill(dep, computed, per_pass, allow_overflow=True, overlap=overlap)
    return WorkloadView(
        deployment=dep,
        input_tokens=I,
        output_tokens=O,
        concurrency=C,
        cache_hit_fraction=float(cache_hit_fraction),
        disaggregated=disaggregated,
        decode_step_s=step_s,
        prefill_s_per_request=float(fill.time_s) / per_pass,
        ttft_s=float(prefill(dep, computed, 1, allow_overflow=True, overlap=overlap).time_s),
        mtp_tokens_per_step=tokens_per_step,
        decode_bound=bound,
        overlap=overlap,
    )


@contract(
    requests_per_s=SCALAR_POSITIVE,
    input_tokens=SCALAR_POSITIVE,
    output_tokens=SCALAR_POSITIVE,
    cache_hit_fraction=Real(low_open=False, high=1.0, scalar=True),
    mtp_acceptance=Optional(Real(low_open=False, high=1.0, scalar=True)),
    overlap=OneOf(OVERLAP_RULES),
)
def concurrency_for_rate(
    deployment: Deployment,
    requests_per_s: float,
    input_tokens: float,
    output_tokens: float,
    *,
    cache_hit_fraction: float = 0.0,
    disaggregated: bool = False,
    mtp_acceptance: float | None = None,
    overlap: str = "perfect",
) -> WorkloadView:
    """The workload whose concurrency serves ``requests_per_s``: ``C`` sequences decoding,
    each finishing after ``O`` tokens, complete ``C / (O TPOT)`` requests a second (Little's
    law over the decode; TPOT rises with ``C``), found by bisection on ``C``. Raises
    :class:`DoesNotFitError`, saying the most it serves, where even the largest concurrency
    that fits is too slow. The options are :func:`workload`'s."""
    options: dict[str, Any] = {
        "cache_hit_fraction": cache_hit_fraction,
        "disaggregated": disaggregated,
        "mtp_acceptance": mtp_acceptance,
        "overlap": overlap,
    }
    most = workload(deployment, input_tokens, output_tokens, **options)
    if most.requests_per_s < requests_per_s:
        raise DoesNotFitError(
            f"{requests_per_s:g} requests/s needs more than {deployment.n_chips} x "
            f"{deployment.chip.name}: at most {most.requests_per_s:.4g} at {most.concurrency:g} "
            "sequences at once"
        )
    lo, hi = 1.0, most.concurrency
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        view = workload(deployment, input_tokens, output_tokens, mid, **options)
        lo, hi = (mid, hi) if view.requests_per_s < requests_per_s else (lo, mid)
    return workload(deployment, input_tokens, output_tokens, hi, **options)


#: A workload parameter (the common test's example: Llama-3-8B on one H100, one request).
WORKLOAD = Instance(
    WorkloadView,
    example=lambda: workload(Deployment(get_model("Llama-3-8B"), get_chip("H100")), 100, 100, 1),
)


@contract(view=WORKLOAD, measured_tokens_per_s_per_chip=SCALAR_POSITIVE)
def calibrate(
    view: WorkloadView, measured_tokens_per_s_per_chip: float
) -> tuple[WorkloadView, float]:
    """The workload at the one efficiency (FLOP/s and bandwidth alike) that makes its
    :attr:`~WorkloadView.measured_rate` (output tokens a second per chip; a disaggregated
    decode pool's own) the measured one, and that efficiency (near measured over floor, where
    communication is small). Raises where the measurement beats the floor: the workload or
    the deployment is not the one measured."""
    floor = view.measured_rate
    target = float(measured_tokens_per_s_per_chip)
    if target > floor:
        raise ValueError(
            f"measured {target:.4g} output tokens/s per chip beats the floor's {floor:.4g}: "
            "the measured setting is not this one (an fp8 KV cache not counted, MTP, cache "
            "hits, a smaller model?)"
        )

    def at(e: float) -> WorkloadView:
        dep = dataclasses.replace(view.deployment, flops_efficiency=e, bandwidth_efficiency=e)
        acceptance = None
        if view.mtp_tokens_per_step != 1.0:  # recover a from 1 + a
            acceptance = view.mtp_tokens_per_step - 1.0
        return workload(
            dep, view.input_tokens, view.output_tokens, view.concurrency,
            cache_hit_fraction=view.cache_hit_fraction, disaggregated=view.disaggregated,
            mtp_acceptance=acceptance, overlap=view.overlap,
        )  # fmt: skip

    return _efficiency_for_rate(at, target)


#: The efficiencies :func:`calibrate` searches between, and how closely it meets the rate
#: (relative: far below what any printed digit shows).
EFFICIENCY_RANGE, RATE_TOLERANCE = (1e-4, 1.0), 1e-12


def _efficiency_for_rate(
    at: Callable[[float], WorkloadView], target: float
) -> tuple[WorkloadView, float]:
    """The efficiency in :data:`EFFICIENCY_RANGE` whose workload (``at(e)``) serves
    ``target`` (within :data:`RATE_TOLERANCE`; where the rate jumps past it, the least that
    serves it), and that workload. The rate rises with the efficiency, nearly in proportion
    (each step's compute and memory time scale as 1/e, its communication does not), so
    log(rate) is nearly linear in log(e): a bracketed secant (the Illinois variant of
    regula falsi) meets the rate in a handful of workloads where bisection took 60, and keeps
    the bracket, so a rate that jumps (a prefill pass that takes one more request) still
    converges to the efficiency where it crosses the target."""
    low, high = np.log(EFFICIENCY_RANGE[0]), np.log(EFFICIENCY_RANGE[1])

    def gap(x: float) -> tuple[WorkloadView, float]:  # log(rate / target): rises with x
        view = at(float(np.exp(x)))
        return view, float(np.log(view.measured_rate / target))

    (_, f_low), (view, f_high) = gap(low), gap(high)
    if f_low >= 0:  # even the least efficiency serves it
        return at(float(np.exp(low))), float(np.exp(low))
    above = f_high  # the high end's own gap (f_high may be scaled down, as Illinois does)
    last_side = 0
    for _ in range(200):
        if above <= RATE_TOLERANCE or high - low <= RATE_TOLERANCE:
            break
        x = (low * f_high - high * f_low) / (f_high - f_low)
        if not low < x < high:  # no progress from the secant: bisect
            x = 0.5 * (low + high)
        found, f = gap(x)
        if abs(f) <= RATE_TOLERANCE:  # met, from either side
            return found, float(np.exp(x))
        if f >= 0:  # the root is below x; if the low end stayed twice, halve its weight
            high, f_high, above, view = x, f, f, found
            f_low = f_low / 2 if last_side < 0 else f_low
            last_side = -1
        else:
            low, f_low = x, f
            f_high = f_high / 2 if last_side > 0 else f_high
            last_side = 1
    return view, float(np.exp(high))


__all__ = [
    "MAX_SEARCH_BATCH",
    "Candidate",
    "SearchResult",
    "WorkloadView",
    "best_layouts",
    "best_workload_layouts",
    "calibrate",
    "concurrency_for_rate",
    "divisors",
    "largest_batch_within",
    "serving_layouts",
    "workload",
]

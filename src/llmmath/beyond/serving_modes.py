"""Serving modes around the one decode step: slow, fast, batch APIs, at a frontier provider's
scale, and (from :mod:`llmmath.beyond.paged_kv`, re-exported) continuous batching with a
paged KV cache.

Every time here is :func:`llmmath.core.serving.decode_step`'s floor (perfect overlap at the
deployment's efficiency knobs); every price multiple is a ratio of two floors' costs. Vendors'
fast-mode and batch-API prices are in ``data/serving_modes.toml``.

>>> from llmmath.beyond import serving_modes
>>> from llmmath.core.deployment import Deployment
>>> fast = serving_modes.fast_mode(Deployment("Llama-3-70B", "H100", 8), 2048, 2.0)
>>> int(fast.fast_batch), round(float(fast.price_multiple), 1)
(267, 1.4)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from llmmath.beyond.paged_kv import (
    LENGTH_SAMPLES,
    Demand,
    KVPacking,
    batch_from_demand,
    concurrency,
    demand_to_fill,
    kv_packing,
    request_lengths,
)
from llmmath.core import data
from llmmath.core._checks import FloatArray, as_floats
from llmmath.core._constraints import Instance, OneOf, Optional, Real
from llmmath.core.capacity import cheapest_batch, max_batch, weight_floor_s
from llmmath.core.chip_prices import ChipPrice
from llmmath.core.contracts import (
    FLAG,
    MAX_CHIPS,
    NAME,
    NOTE,
    POSITIVE,
    RESULT,
    RESULT_OR_INF,
    SCALAR,
    SCALAR_FRACTION,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import check_context, get_model
from llmmath.core.placement import DoesNotFitError
from llmmath.core.serving import DecodeStep, decode_step


# ---- vendors' modes (data) --------------------------------------------------------------------
@dataclass(frozen=True)
@checked(
    label=NAME,
    speedup=SCALAR_POSITIVE,
    price_multiple=SCALAR_POSITIVE,
    checked=FLAG,
    **each(NOTE, "source source_date"),
)
class FastModePrice:
    """A vendor's fast mode: how much faster (its "up to"), and how many times the price."""

    label: str
    speedup: float
    price_multiple: float
    checked: bool
    source: str
    source_date: str


@dataclass(frozen=True)
@checked(
    label=NAME,
    discount=SCALAR_FRACTION,
    turnaround_h=SCALAR_POSITIVE,
    checked=FLAG,
    **each(NOTE, "source source_date"),
)
class BatchApiPrice:
    """A vendor's batch API: the share taken off the price, and the promised turnaround."""

    label: str
    discount: float
    turnaround_h: float
    checked: bool
    source: str
    source_date: str


@contract()
def fast_mode_prices() -> list[FastModePrice]:
    """The fast modes in ``data/serving_modes.toml``."""
    table = data.table("serving_modes")["fast_modes"]
    return [FastModePrice(**spec) for spec in table.values()]


@contract()
def batch_api_prices() -> list[BatchApiPrice]:
    """The batch APIs in ``data/serving_modes.toml``."""
    table = data.table("serving_modes")["batch_apis"]
    return [BatchApiPrice(**spec) for spec in table.values()]


@contract(chip=NAME)
def list_price(chip: str) -> ChipPrice:
    """A cloud's on-demand list price for ``chip`` (``data/serving_modes.toml``), to set
    beside :func:`llmmath.core.chip_prices.example_price` where that is of another kind."""
    table = data.table("serving_modes")["list_prices"]
    if chip not in table:
        raise ValueError(f"chip={chip!r} has no list price here (there are: {', '.join(table)})")
    return ChipPrice(**table[chip])


# ---- "slow mode" ----------------------------------------------------------------------------
#: What ends the fall of the cost per token as the batch grows.
FLOOR_LIMITS = ("compute", "memory capacity")


@dataclass(frozen=True)
@checked(
    **each(RESULT, "latency_s batch batch1_cost_per_million_usd floor_cost_per_million_usd"),
    **each(RESULT, "floor_batch saturation_latency_s weight_floor_s"),
    cost_per_million_usd=RESULT_OR_INF,
    floor_limit=OneOf(FLOOR_LIMITS),
)
class SlowMode:
    """What accepting a longer time per token does and does not buy, at one context.

    A longer step lets more sequences share it, so the cost falls, but only until the batch
    reaches ``floor_batch``: the step turns compute-bound (``B*(T)``, where a token costs its
    FLOPs whatever the batch) or, first, the HBM is full (:attr:`floor_limit` says which).
    Past that, waiting buys nothing. And a sequence with no company pays
    ``batch1_cost_per_million_usd`` however long it waits: the chips read every weight for its
    one token either way.
    """

    #: The time per output token accepted (one decode step).
    latency_s: FloatArray
    #: The largest useful batch whose step fits in ``latency_s`` (0 where none does).
    batch: FloatArray
    #: Cost at that batch (infinite where no step is that fast).
    cost_per_million_usd: FloatArray
    batch1_cost_per_million_usd: float
    #: The cheapest any wait can buy: the cost at ``floor_batch``.
    floor_cost_per_million_usd: float
    #: ``min(ceil(B*(T)), max_batch)``: past it the cost per token is flat or the HBM is full.
    floor_batch: float
    #: What stops the fall at ``floor_batch``: ``"compute"`` (the step turned compute-bound)
    #: or ``"memory capacity"`` (the KV caches filled the HBM first).
    floor_limit: str
    #: The step time at ``floor_batch``: a longer wait per token buys nothing.
    saturation_latency_s: float
    #: Weights / bandwidth: no step is faster.
    weight_floor_s: float


@contract(
    infinite_ok=True,
    context=SCALAR,
    latency_s=POSITIVE,
    usd_per_chip_hour=Optional(SCALAR_POSITIVE),
)
def slow_mode(
    deployment: Deployment,
    context: float,
    latency_s: ArrayLike,
    usd_per_chip_hour: float | None = None,
) -> SlowMode:
    """The cheapest cost per token for each accepted time per token, at ``context``.

    The cost per token ``t(B) / B`` falls with the batch until the step turns compute-bound
    at ``B*(T)`` (:func:`step_critical_batch`), or the HBM is full; the smaller of the two is
    ``floor_batch``. For each latency the largest batch ``B <= floor_batch`` with
    ``t(B) <= latency`` is found by bisection (``t`` rises with ``B``); its cost is the best
    that latency can buy.
    """
    dep = deployment
    T = float(check_context(dep.model, context))
    budget = as_floats(latency_s)
    price = dep.chip_hour_usd if usd_per_chip_hour is None else usd_per_chip_hour
    room = float(max_batch(dep, T))
    if room < 1:
        raise DoesNotFitError(
            f"not one sequence of context {T:g} fits beside {dep.model.name}'s weights on "
            f"{dep.n_chips} x {dep.chip.name}",
            T * dep.model.kv_bytes_per_token(dep.kv_dtype) - dep.kv_budget_bytes,
        )
    floor_batch = cheapest_batch(dep, T)  # past T_c B*(T) is infinite: the HBM stops it

    def step(B: ArrayLike) -> DecodeStep:
        return decode_step(dep, B, T)

    lo = np.zeros_like(budget)  # the largest batch known to be fast enough (0: none)
    hi = np.full_like(budget, floor_batch)
    while np.any(lo < hi):
        mid = np.ceil((lo + hi) / 2.0)
        fast = step(np.maximum(mid, 1.0)).time_s <= budget
        lo, hi = np.where(fast, mid, lo), np.where(fast, hi, mid - 1.0)
    chosen = step(np.maximum(lo, 1.0))
    cost = np.where(lo >= 1, chosen.cost_per_million_tokens_usd(price), np.inf)
    at_floor = step(floor_batch)
    floor_limit = "compute" if bool(at_floor.compute_bound) else "memory capacity"
    return SlowMode(
        latency_s=budget,
        batch=lo,
        cost_per_million_usd=cost,
        batch1_cost_per_million_usd=float(step(1).cost_per_million_tokens_usd(price)),
        floor_cost_per_million_usd=float(at_floor.cost_per_million_tokens_usd(price)),
        floor_batch=floor_batch,
        floor_limit=floor_limit,
        saturation_latency_s=float(at_floor.time_s),
        weight_floor_s=weight_floor_s(dep),
    )


# ---- fast mode: what a shorter step costs -------------------------------------------------------
@dataclass(frozen=True)
@checked(
    **each(RESULT, "standard_batch standard_time_s fast_time_s fast_batch"),
    **each(RESULT, "max_speedup price_multiple wider_price_multiple speedup"),
)
class FastMode:
    """A ``speedup`` of one user's tokens, bought two ways from the floor.

    *Smaller batch*, same chips: the step may only take ``standard / speedup``, so fewer
    sequences share the weight read; the price per token rises by the cost ratio, and no
    batch beats the weight floor (``max_speedup``). *More chips*, same batch: each chip reads
    ``1/speedup`` of the weights; at the floor with an ideal split the price does not change
    (``wider_price_multiple``), but the split's collectives are left out (the parallelism
    chapter counts them).
    """

    speedup: FloatArray
    #: The standard mode: the cheapest batch (``min(ceil(B*), max batch)``) and its step.
    standard_batch: float
    standard_time_s: float
    fast_time_s: FloatArray
    #: The largest batch whose step fits in ``fast_time_s`` (0 where none does).
    fast_batch: FloatArray
    #: Standard step / weight floor: the most any batch can speed a token up.
    max_speedup: float
    #: Cost per token at ``fast_batch`` over the standard cost (inf where none is fast enough).
    price_multiple: FloatArray
    #: The same speed-up from ``speedup`` times the chips at the standard batch, at the floor.
    wider_price_multiple: FloatArray


@contract(infinite_ok=True, context=SCALAR, speedup=Real(low=1.0, low_open=False))
def fast_mode(deployment: Deployment, context: float, speedup: ArrayLike) -> FastMode:
    """What a ``speedup`` in tokens per second per user costs, against a standard mode that
    runs at the cheapest batch (the cost floor) at ``context``."""
    dep = deployment
    s = as_floats(speedup)
    standard = slow_mode(dep, context, 1.0)  # any wait: its floor batch is the standard mode
    B0, t0 = standard.floor_batch, standard.saturation_latency_s
    target = t0 / s
    fast = slow_mode(dep, context, target)
    base_cost = standard.floor_cost_per_million_usd
    wider = []
    for factor in np.ravel(s):
        chips = max(1, math.ceil(dep.n_chips * float(factor)))
        if chips > MAX_CHIPS:  # the wider deployment's own limit, said of this parameter
            raise ValueError(
                f"serving_modes.fast_mode(): speedup={float(factor):g} needs {chips} chips "
                f"in the wider deployment; at most {MAX_CHIPS} are modelled"
            )
        step = decode_step(replace(dep, n_chips=chips), B0, context, allow_overflow=True)
        wider.append(float(step.cost_per_million_tokens_usd(dep.chip_hour_usd)) / base_cost)
    return FastMode(
        speedup=s,
        standard_batch=B0,
        standard_time_s=t0,
        fast_time_s=np.asarray(target),
        fast_batch=fast.batch,
        max_speedup=t0 / float(decode_step(dep, 1, context).time_s),
        price_multiple=np.asarray(fast.cost_per_million_usd / base_cost),
        wider_price_multiple=np.reshape(np.array(wider), np.shape(s)),
    )


# ---- a frontier provider's scale ---------------------------------------------------------------
#: A decode step (the common test's example: Llama-3-8B on one H100, alone, empty context).
STEP = Instance(
    DecodeStep,
    example=lambda: decode_step(Deployment(get_model("Llama-3-8B"), get_chip("H100")), 1, 0),
)


@dataclass(frozen=True)
@checked(
    step=STEP,
    **each(RESULT, "batch batch_tokens_per_s fleet_tokens_per_s replicas chips"),
)
class FleetScale:
    """One batch (one replica's decode step) and the fleet of them a service needs."""

    step: DecodeStep
    batch: float
    #: Output tokens per second of one replica at ``batch``.
    batch_tokens_per_s: float
    fleet_tokens_per_s: float
    #: Replicas (batches in flight at once) and chips the fleet needs at the floor.
    replicas: float
    chips: float


@contract(context=SCALAR, token_latency_s=SCALAR_POSITIVE, fleet_tokens_per_s=SCALAR_POSITIVE)
def fleet_scale(
    deployment: Deployment, context: float, token_latency_s: float, fleet_tokens_per_s: float
) -> FleetScale:
    """The largest useful batch whose step meets ``token_latency_s`` per token, the tokens
    per second of that one batch, and how many such replicas serve ``fleet_tokens_per_s``."""
    mode = slow_mode(deployment, context, token_latency_s)
    B = float(mode.batch)
    if B < 1:
        floor = mode.weight_floor_s
        raise ValueError(
            f"token_latency_s={token_latency_s:g} is below this deployment's weight floor "
            f"({floor:.4g} s): no batch is that fast"
        )
    return fleet_of(decode_step(deployment, B, context), fleet_tokens_per_s)


@contract(step=STEP, fleet_tokens_per_s=SCALAR_POSITIVE)
def fleet_of(step: DecodeStep, fleet_tokens_per_s: float) -> FleetScale:
    """The fleet of replicas of one decode ``step`` (one batch, its time under its own rule)
    that serves ``fleet_tokens_per_s``: whole replicas, each ``step.tokens_per_s``."""
    per_batch = float(step.tokens_per_s)
    replicas = math.ceil(fleet_tokens_per_s / per_batch)
    return FleetScale(
        step=step,
        batch=float(step.batch),
        batch_tokens_per_s=per_batch,
        fleet_tokens_per_s=float(fleet_tokens_per_s),
        replicas=float(replicas),
        chips=float(replicas * step.deployment.n_chips),
    )


# ---- batch APIs: deferred work in a fleet sized for the peak -----------------------------------
@dataclass(frozen=True)
@checked(
    **each(RESULT, "interactive_batch interactive_cost_per_million_usd floor_batch"),
    **each(RESULT, "floor_cost_per_million_usd batching_saving trough_to_peak idle_share"),
)
class DeferredWork:
    """Why a batch API can be cheap: bigger batches, and chips that would otherwise idle."""

    #: The interactive mode: the largest batch meeting the latency target, and its cost.
    interactive_batch: float
    interactive_cost_per_million_usd: float
    #: Without a latency target: the cheapest batch and its cost.
    floor_batch: float
    floor_cost_per_million_usd: float
    #: ``1 - floor cost / interactive cost``: what the bigger batch alone saves.
    batching_saving: float
    trough_to_peak: float
    #: Share of a peak-sized fleet's chip-hours that interactive demand leaves idle.
    idle_share: float


@contract(
    context=SCALAR,
    interactive_latency_s=SCALAR_POSITIVE,
    trough_to_peak=Real(low=0.0, low_open=False, high=1.0, scalar=True),
)
def deferred_work(
    deployment: Deployment, context: float, interactive_latency_s: float, trough_to_peak: float
) -> DeferredWork:
    """The two sources of a batch API's discount, from the floor.

    Demand through a day swinging like a cosine between ``trough_to_peak`` and 1 of the
    peak, on a fleet sized for the peak, leaves ``(1 - trough_to_peak) / 2`` of its
    chip-hours idle; work that may wait 24 h fills them. A deferred token also needs no
    latency target, so it can run at the cheapest batch.
    """
    r = float(trough_to_peak)
    interactive = slow_mode(deployment, context, interactive_latency_s)
    cost = float(interactive.cost_per_million_usd)
    if not np.isfinite(cost):
        raise ValueError(
            f"interactive_latency_s={interactive_latency_s:g} is below the weight floor "
            f"({interactive.weight_floor_s:.4g} s)"
        )
    floor = interactive.floor_cost_per_million_usd
    return DeferredWork(
        interactive_batch=float(interactive.batch),
        interactive_cost_per_million_usd=cost,
        floor_batch=interactive.floor_batch,
        floor_cost_per_million_usd=floor,
        batching_saving=1.0 - floor / cost,
        trough_to_peak=r,
        idle_share=(1.0 - r) / 2.0,
    )


__all__ = [
    "FLOOR_LIMITS",
    "LENGTH_SAMPLES",
    "BatchApiPrice",
    "DeferredWork",
    "Demand",
    "FastMode",
    "FastModePrice",
    "FleetScale",
    "KVPacking",
    "SlowMode",
    "batch_api_prices",
    "batch_from_demand",
    "concurrency",
    "deferred_work",
    "demand_to_fill",
    "fast_mode",
    "fast_mode_prices",
    "fleet_of",
    "fleet_scale",
    "kv_packing",
    "list_price",
    "request_lengths",
    "slow_mode",
]

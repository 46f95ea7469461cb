"""API price sheets and a fleet's day: what providers charge, and what one day cost and earned.

The prices live in ``data/api_prices.toml`` with their dates and sources (vendors change them);
the fleet day is DeepSeek's published 24-hour inference accounting. :mod:`llmmath.pricing`
reads what the prices imply about the models behind them.

>>> from llmmath import api_prices
>>> round(api_prices.get_price_sheet("GPT-4o").output_input_ratio, 1)
4.0
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import data
from llmmath.core._checks import FloatArray, as_floats, as_output, positive
from llmmath.core._constraints import AnyOf, Count, Instance, OneOf, Real
from llmmath.core.contracts import (
    AMOUNT,
    CHIPS,
    FLAG,
    NAME,
    NOTE,
    POSITIVE,
    SCALAR,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.units import TOKENS_PER_MILLION


# ---- dated price sheets -------------------------------------------------------------------
@dataclass(frozen=True)
@checked(
    model=NAME,
    vendor=NOTE,
    **each(SCALAR_POSITIVE, "input_usd_per_million output_usd_per_million"),
    **each(SCALAR, "long_input_usd_per_million long_output_usd_per_million"),
    cached_input_usd_per_million=SCALAR,  # 0: no cached-input price
    long_context_threshold_tokens=Count(low=0),
    checked=FLAG,
    cached_input_source=NOTE,
)
class PriceSheet:
    """One model's published API prices in USD per million tokens, AS OF ``source_date``."""

    model: str
    vendor: str
    input_usd_per_million: float
    output_usd_per_million: float
    long_context_threshold_tokens: int
    long_input_usd_per_million: float
    long_output_usd_per_million: float
    cached_input_usd_per_million: float
    source: str
    source_date: str
    checked: bool
    #: Where the cached-input price was read, and whether that was the vendor's own page.
    cached_input_source: str = ""

    @property
    def label(self) -> str:
        return f"{self.model} ({self.vendor}, as of {self.source_date})"

    @property
    def has_long_tier(self) -> bool:
        return self.long_context_threshold_tokens > 0

    @property
    def output_input_ratio(self) -> float:
        return self.output_usd_per_million / self.input_usd_per_million

    @property
    def long_input_surcharge(self) -> float:
        """Long-tier input price over the standard one (1.0 where there is no tier)."""
        if not self.has_long_tier:
            return 1.0
        return self.long_input_usd_per_million / self.input_usd_per_million

    @property
    def long_output_surcharge(self) -> float:
        if not self.has_long_tier:
            return 1.0
        return self.long_output_usd_per_million / self.output_usd_per_million

    @property
    def has_cached_price(self) -> bool:
        return self.cached_input_usd_per_million > 0

    @property
    def cached_input_share(self) -> float:
        """Cached-input price over the input price (1.0 where no cached price is listed)."""
        if not self.has_cached_price:
            return 1.0
        return self.cached_input_usd_per_million / self.input_usd_per_million


@dataclass(frozen=True)
@checked(
    name=NAME,
    **each(SCALAR, "nodes usd_per_gpu_hour hours published_cost_usd input_tokens"),
    **each(
        SCALAR,
        "cached_input_tokens output_tokens published_revenue_usd published_cost_profit_margin",
    ),
    gpus_per_node=CHIPS,
)
class FleetDay:
    """One published day of a serving fleet: its rent, its tokens and their list value."""

    name: str
    nodes: float
    gpus_per_node: int
    usd_per_gpu_hour: float
    hours: float
    published_cost_usd: float
    input_tokens: float
    cached_input_tokens: float
    output_tokens: float
    published_revenue_usd: float
    published_cost_profit_margin: float
    source: str
    source_date: str

    def __post_init__(self) -> None:
        if self.cached_input_tokens > self.input_tokens:
            raise ValueError(
                f"FleetDay {self.name}: cached_input_tokens must be <= input_tokens (the cached "
                f"input is part of it); got {self.cached_input_tokens:g} > {self.input_tokens:g}"
            )


@cache
def _load() -> tuple[dict[str, PriceSheet], dict[str, FleetDay]]:
    tables: dict[str, Any] = data.table("api_prices")
    sheets = {}
    for name, spec in tables["prices"].items():
        sheet = PriceSheet(model=name, **spec)
        for field in ("input_usd_per_million", "output_usd_per_million"):
            positive(f"{name}: {field}", getattr(sheet, field))
        if sheet.has_long_tier:
            positive(f"{name}: long_input_usd_per_million", sheet.long_input_usd_per_million)
            positive(f"{name}: long_output_usd_per_million", sheet.long_output_usd_per_million)
        sheets[name] = sheet
    fleets = {name: FleetDay(name=name, **spec) for name, spec in tables["fleets"].items()}
    return sheets, fleets


@contract()
def list_price_sheets() -> list[str]:
    """Models with a dated price sheet in ``data/api_prices.toml``."""
    return list(_load()[0])


#: A sheet parameter: a :class:`PriceSheet` or the name of a dated one.
SHEET = AnyOf((Instance(PriceSheet), OneOf(list_price_sheets)))


@contract(model=OneOf(list_price_sheets))
def get_price_sheet(model: str) -> PriceSheet:
    sheets = _load()[0]
    return sheets[model]


@contract(name=OneOf(lambda: data.table("api_prices")["fleets"], "fleet"))
def get_fleet_day(name: str = "DeepSeek-V3/R1, 24 h") -> FleetDay:
    fleets = _load()[1]
    return fleets[name]


# ---- a fleet's day: cost, revenue, margin -------------------------------------------------
@contract(nodes=POSITIVE, gpus_per_node=POSITIVE, usd_per_gpu_hour=POSITIVE, hours=POSITIVE)
def fleet_day_cost_usd(
    nodes: ArrayLike, gpus_per_node: ArrayLike, usd_per_gpu_hour: ArrayLike, hours: ArrayLike = 24.0
) -> float | FloatArray:
    """Rent of a fleet for ``hours``: ``nodes x gpus_per_node x price x hours``."""
    return as_output(
        as_floats(nodes) * as_floats(gpus_per_node) * as_floats(usd_per_gpu_hour) * as_floats(hours)
    )


@contract(tokens=AMOUNT, usd_per_million=POSITIVE)
def revenue_usd(tokens: ArrayLike, usd_per_million: ArrayLike) -> float | FloatArray:
    """What ``tokens`` bring at a list price of ``usd_per_million``."""
    T = as_floats(tokens)
    return as_output(T * as_floats(usd_per_million) / TOKENS_PER_MILLION)


@contract(day=Instance(FleetDay, example=get_fleet_day), sheet=SHEET)
def fleet_day_revenue_usd(day: FleetDay, sheet: PriceSheet | str) -> float:
    """The day's tokens at the sheet's list prices (a sheet or its name, as every function
    of a ``sheet`` takes): cached input, other input, output."""
    sheet = get_price_sheet(sheet) if isinstance(sheet, str) else sheet
    uncached = day.input_tokens - day.cached_input_tokens
    cached_price = sheet.cached_input_usd_per_million or sheet.input_usd_per_million
    return float(
        revenue_usd(day.cached_input_tokens, cached_price)
        + revenue_usd(uncached, sheet.input_usd_per_million)
        + revenue_usd(day.output_tokens, sheet.output_usd_per_million)
    )


@contract(revenue=AMOUNT, cost=POSITIVE)
def cost_profit_margin(revenue: ArrayLike, cost: ArrayLike) -> float | FloatArray:
    """``(revenue - cost) / cost``; DeepSeek's "cost profit margin" (5.45 = 545%). The markup
    of price over cost is ``1 + margin``."""
    return as_output(as_floats(revenue) / as_floats(cost) - 1.0)


# ---- one request at a sheet's prices: the long-context step, cached input ------------------
#: The share of a prompt that hits the prompt cache: 0 (none) to 1 (all of it).
HIT_FRACTION = Real(low_open=False, high=1.0)


def _tier_factor(sheet: PriceSheet, prompt_tokens: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Input and output multipliers of each prompt's tier: 1 at or below the threshold, the
    long tier's surcharges above it (the whole request pays the long tier: a step)."""
    long = sheet.has_long_tier & (prompt_tokens > sheet.long_context_threshold_tokens)
    return (
        np.where(long, sheet.long_input_surcharge, 1.0),
        np.where(long, sheet.long_output_surcharge, 1.0),
    )


@contract(sheet=SHEET, prompt_tokens=AMOUNT, cache_hit_fraction=HIT_FRACTION)
def blended_input_usd_per_million(
    sheet: PriceSheet | str, cache_hit_fraction: ArrayLike, prompt_tokens: ArrayLike = 0.0
) -> float | FloatArray:
    """The input price a request pays on average when ``cache_hit_fraction`` of its prompt
    hits the prompt cache: ``(1 - h) p_in + h p_cached``, in the tier of ``prompt_tokens``.
    A sheet with no cached price charges every input token in full. In the long tier the
    cached price is scaled like the input price (Google lists both doubled)."""
    entry = get_price_sheet(sheet) if isinstance(sheet, str) else sheet
    h = as_floats(cache_hit_fraction)
    in_factor, _ = _tier_factor(entry, as_floats(prompt_tokens))
    share = (1.0 - h) + h * entry.cached_input_share
    return as_output(entry.input_usd_per_million * in_factor * share)


@contract(sheet=SHEET, prompt_tokens=AMOUNT, cache_hit_fraction=HIT_FRACTION)
def output_input_price_ratio(
    sheet: PriceSheet | str, cache_hit_fraction: ArrayLike = 0.0, prompt_tokens: ArrayLike = 0.0
) -> float | FloatArray:
    """What one output token costs in input tokens once cache hits are counted: the output
    price over :func:`blended_input_usd_per_million`, in the tier of ``prompt_tokens``. With
    no hits and a short prompt it is the sheet's own ratio."""
    entry = get_price_sheet(sheet) if isinstance(sheet, str) else sheet
    _, out_factor = _tier_factor(entry, as_floats(prompt_tokens))
    blended = blended_input_usd_per_million(entry, cache_hit_fraction, prompt_tokens)
    return as_output(entry.output_usd_per_million * out_factor / np.asarray(blended))


@contract(sheet=SHEET, prompt_tokens=AMOUNT, output_tokens=AMOUNT, cache_hit_fraction=HIT_FRACTION)
def request_price_usd(
    sheet: PriceSheet | str,
    prompt_tokens: ArrayLike,
    output_tokens: ArrayLike,
    cache_hit_fraction: ArrayLike = 0.0,
) -> float | FloatArray:
    """What one request costs at the sheet's list prices: its prompt at the blended input
    price (:func:`blended_input_usd_per_million`), its output (reasoning tokens included) at
    the output price, both in the prompt's tier. Past a long-context threshold the price per
    token steps up for the whole request, so one token more can cost far more than one
    token's price (Gemini 3.1 Pro: input x2, output x1.5 above 200k)."""
    entry = get_price_sheet(sheet) if isinstance(sheet, str) else sheet
    S, out = as_floats(prompt_tokens), as_floats(output_tokens)
    _, out_factor = _tier_factor(entry, S)
    input_usd = np.asarray(blended_input_usd_per_million(entry, cache_hit_fraction, S)) * S
    output_usd = entry.output_usd_per_million * out_factor * out
    return as_output((input_usd + output_usd) / TOKENS_PER_MILLION)


__all__ = [
    "FleetDay",
    "PriceSheet",
    "blended_input_usd_per_million",
    "cost_profit_margin",
    "fleet_day_cost_usd",
    "fleet_day_revenue_usd",
    "get_fleet_day",
    "get_price_sheet",
    "list_price_sheets",
    "output_input_price_ratio",
    "request_price_usd",
    "revenue_usd",
]

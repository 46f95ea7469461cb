"""What chips cost to rent, and what that makes a million tokens cost.

The example prices live in ``data/chip_prices.toml``, each with its kind (a cloud's on-demand
list price, an operator's stated cost...) and source: compare like with like.

>>> from llmmath.core import chip_prices
>>> chip_prices.example_price("H100").usd_per_chip_hour
2.0
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from numpy.typing import ArrayLike

from llmmath.core import data
from llmmath.core._checks import FloatArray, as_floats, as_output, positive
from llmmath.core._constraints import Optional
from llmmath.core.contracts import AMOUNT, NAME, SCALAR_POSITIVE, checked, contract
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.units import SECONDS_PER_HOUR, TOKENS_PER_MILLION


@dataclass(frozen=True)
@checked(chip=NAME, usd_per_chip_hour=SCALAR_POSITIVE, kind=NAME)
class ChipPrice:
    """An EXAMPLE rental price of one chip for one hour (see ``data/chip_prices.toml``)."""

    chip: str
    usd_per_chip_hour: float
    kind: str
    source: str
    source_date: str


@cache
def _prices() -> dict[str, ChipPrice]:
    prices = {}
    for chip, spec in data.table("chip_prices").items():
        get_chip(chip)  # every price belongs to a known chip
        positive(f"{chip}: usd_per_chip_hour", spec["usd_per_chip_hour"])
        prices[chip] = ChipPrice(chip=chip, **spec)
    return prices


@contract()
def list_example_prices() -> list[str]:
    """Chips that have an example price."""
    return list(_prices())


@contract()
def example_price(chip: str | Chip) -> ChipPrice:
    """The example price of ``chip``; chips without one ask for ``usd_per_chip_hour``."""
    name = get_chip(chip).name
    prices = _prices()
    if name not in prices:
        raise ValueError(
            f"no example price for chip {name!r} (there are: {', '.join(prices)}); "
            "pass usd_per_chip_hour"
        )
    return prices[name]


@contract(usd_per_chip_hour=Optional(SCALAR_POSITIVE))
def price_or_example(chip: str | Chip, usd_per_chip_hour: float | None) -> float:
    """``usd_per_chip_hour`` if given, else the chip's example price: the one place the
    default is chosen."""
    if usd_per_chip_hour is None:
        return example_price(chip).usd_per_chip_hour
    return float(usd_per_chip_hour)


@contract(step_time_s=AMOUNT)
def cost_per_million_tokens_usd(
    step_time_s: ArrayLike, batch: ArrayLike, n_chips: int, usd_per_chip_hour: ArrayLike
) -> float | FloatArray:
    """``price * n * t / (3600 B) * 1e6``: the rent of ``n`` chips for one step of ``t``
    seconds, shared by the ``B`` tokens the step produces, per million tokens."""
    t, B, price = as_floats(step_time_s), as_floats(batch), as_floats(usd_per_chip_hour)
    n = int(n_chips)
    return as_output(price * n * t / (SECONDS_PER_HOUR * B) * TOKENS_PER_MILLION)


__all__ = [
    "ChipPrice",
    "cost_per_million_tokens_usd",
    "example_price",
    "list_example_prices",
    "price_or_example",
]

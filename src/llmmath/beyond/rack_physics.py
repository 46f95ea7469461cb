"""The rack's physical limits: power, cooling, weight and copper reach bound a scale-up domain.

A scale-up domain (:mod:`llmmath.core.racks`) is as large as the chips that fast copper links can
join, and copper reaches only a couple of metres: in practice, one rack. What fits in one rack
is then set by how much power the rack can be fed and how much heat can be carried out of it.
Every figure comes from ``data/systems.toml`` with its source.

**Energy.** A rack's power also sets what a token costs in joules. A chip drawing ``w`` watts
all-in (its rack's power over its GPUs), in a building whose facility power is ``PUE`` times
its IT power, spends ``w PUE`` joules per chip-second; a token that takes ``s`` chip-seconds
(the step's time times its chips over the step's tokens, :func:`llmmath.pricing.serving_cost`)
costs ``w PUE s`` joules. At ``e`` dollars per joule the power bill per chip-hour is
``3600 w PUE e``, and its share of a rent of ``r`` per chip-hour is ``3600 w PUE e / r``: the
same at every batch and step time, since power and rent are both paid per second.

>>> from llmmath.beyond import rack_physics
>>> nvl72 = rack_physics.get_rack("GB200 NVL72")
>>> round(nvl72.watts_per_gpu)
1667
>>> rack_physics.gpus_in_power_budget(40e3, nvl72.watts_per_gpu)   # an air-cooled rack
24
>>> dgx = rack_physics.get_rack("DGX H100 node (air)")
>>> round(rack_physics.power_share_of_rent(dgx.watts_per_gpu, 2.0, 1.58, 0.0806), 3)
0.081
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from llmmath.api_prices import FleetDay, fleet_day_cost_usd, get_fleet_day
from llmmath.core import data
from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import AnyOf, Instance, OneOf, Optional, Real
from llmmath.core.contracts import (
    CHIPS,
    NAME,
    NOTE,
    POSITIVE,
    PROMPT,
    SCALAR,
    SCALAR_POSITIVE,
    WHOLE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.units import SECONDS_PER_HOUR, TOKENS_PER_MILLION
from llmmath.pricing import ServingCost, serving_cost


@dataclass(frozen=True)
@checked(
    name=NAME,
    gpus=WHOLE,
    rack_power_w=SCALAR_POSITIVE,
    weight_kg=SCALAR,
    cooling=NOTE,
    source=NOTE,
    source_date=NOTE,
)
class Rack:
    """One rack as built: its GPUs, the power it draws at full load, its weight (0 where the
    source gives none) and how it is cooled."""

    name: str
    gpus: int
    rack_power_w: float
    weight_kg: float
    cooling: str
    source: str
    source_date: str

    @property
    def watts_per_gpu(self) -> float:
        """All-in power per GPU: the GPU and its share of CPUs, switches, NICs and fans."""
        return self.rack_power_w / self.gpus


@contract()
def list_racks() -> list[str]:
    """Names of the racks in ``data/systems.toml``."""
    return list(data.table("systems")["racks"])


@contract(name=OneOf(lambda: list_racks(), "rack"))
def get_rack(name: str) -> Rack:
    """A rack by name (``"GB200 NVL72"``)."""
    spec = data.table("systems")["racks"][name]
    return Rack(
        name=name,
        gpus=int(spec["gpus"]),
        rack_power_w=float(spec["rack_power_w"]),
        weight_kg=float(spec.get("weight_kg", 0.0)),
        cooling=spec["cooling"],
        source=spec["source"],
        source_date=spec["source_date"],
    )


@contract(budget_w=SCALAR_POSITIVE, watts_per_gpu=SCALAR_POSITIVE)
def gpus_in_power_budget(budget_w: float, watts_per_gpu: float) -> int:
    """How many GPUs a rack fed (and cooled) for ``budget_w`` watts holds, at
    ``watts_per_gpu`` all-in: ``floor(budget / watts per GPU)`` (a ratio a rounding error
    below a whole number counts as that number)."""
    return math.floor(budget_w / watts_per_gpu * (1 + 1e-12))


@contract(n_gpus=CHIPS, watts_per_gpu=SCALAR_POSITIVE)
def rack_power_for_w(n_gpus: int, watts_per_gpu: float) -> float:
    """The power (and so the heat to carry away) of ``n_gpus`` at ``watts_per_gpu`` all-in."""
    return float(n_gpus * watts_per_gpu)


@contract()
def room_limits() -> dict[str, float]:
    """What the room around a rack allows: ``air_cooled_rack_max_w`` (the most air carries out
    of one rack), ``legacy_rack_w`` (a pre-AI rack feed) and ``copper_reach_m`` (passive copper
    at today's lane rates)."""
    room = data.table("systems")["room"]
    keys = ("air_cooled_rack_max_w", "legacy_rack_w", "copper_reach_m")
    return {key: float(room[key]) for key in keys}


@dataclass(frozen=True)
@checked(name=NAME, chips=WHOLE, link=NOTE, source=NOTE, source_date=NOTE)
class DomainSize:
    """A scale-up domain past today's racks, by size only: ``chips`` (packages) joined by one
    fast fabric, and what the fabric is."""

    name: str
    chips: int
    link: str
    source: str
    source_date: str


@contract()
def domain_sizes() -> list[DomainSize]:
    """The scale-up domains of ``data/systems.toml``, smallest first."""
    table: dict[str, dict[str, Any]] = data.table("systems")["domains"]
    sizes = [
        DomainSize(name, int(s["chips"]), s["link"], s["source"], s["source_date"])
        for name, s in table.items()
    ]
    return sorted(sizes, key=lambda d: d.chips)


# ---- energy: joules per token, and power's share of the cost -----------------------------------
#: A PUE: facility power over IT power, 1 (no overhead) to 3 (an old, badly cooled room).
PUE = Real(low=1.0, low_open=False, high=3.0, scalar=True)
JOULES_PER_KWH = 3.6e6


@dataclass(frozen=True)
@checked(**each(SCALAR_POSITIVE, "usd_per_kwh usd_per_kwh_high"), **each(PUE, "pue pue_low"))
class Electricity:
    """What power costs (``data/systems.toml``, ``[electricity]``): an average price per kWh and
    a high one, a survey-average PUE and a hyperscaler's."""

    usd_per_kwh: float
    usd_per_kwh_high: float
    pue: float
    pue_low: float
    source: str
    source_date: str


@contract()
def electricity() -> Electricity:
    """The course's electricity price and PUE, with their sources."""
    return Electricity(**data.table("systems")["electricity"])


def _pue(pue: float | None) -> float:
    return electricity().pue if pue is None else float(pue)


def _usd_per_kwh(usd_per_kwh: float | None) -> float:
    return electricity().usd_per_kwh if usd_per_kwh is None else float(usd_per_kwh)


@contract(watts_per_chip=POSITIVE, pue=Optional(PUE), usd_per_kwh=Optional(SCALAR_POSITIVE))
def power_usd_per_chip_hour(
    watts_per_chip: ArrayLike, pue: float | None = None, usd_per_kwh: float | None = None
) -> float | FloatArray:
    """The power bill of one chip for one hour at full draw: ``w PUE / 1000 x USD per kWh``
    (``pue`` and ``usd_per_kwh`` default to :func:`electricity`'s)."""
    kw = as_floats(watts_per_chip) / 1e3
    return as_output(kw * _pue(pue) * _usd_per_kwh(usd_per_kwh))


@contract(watts_per_chip=POSITIVE, pue=Optional(PUE), usd_per_kwh=Optional(SCALAR_POSITIVE))
def power_share_of_rent(
    watts_per_chip: ArrayLike,
    usd_per_chip_hour: ArrayLike,
    pue: float | None = None,
    usd_per_kwh: float | None = None,
) -> float | FloatArray:
    """The share of a chip's hourly rent that pays its power, ``3600 w PUE e / r``: the share
    of every token's cost that is electricity, whatever the batch or step time (both are paid
    per second). An upper bound: the chip is taken at full draw every hour it is rented, and
    the rent (an all-in hourly cost) is taken to include the power."""
    bill = np.asarray(power_usd_per_chip_hour(watts_per_chip, pue, usd_per_kwh))
    return as_output(bill / as_floats(usd_per_chip_hour))


@dataclass(frozen=True)
@checked(
    cost=Instance(ServingCost),
    rack=Instance(Rack, example=lambda: get_rack("DGX H100 node (air)")),
    pue=PUE,
    usd_per_kwh=SCALAR_POSITIVE,
    usd_per_chip_hour=SCALAR_POSITIVE,
)
class ServingEnergy:
    """Joules per input and output token of one deployment at one setting, and the power's
    share of their cost: the floors' chip-seconds per token at the rack's full power."""

    #: The costs at this setting, all hours busy (``utilisation`` 1).
    cost: ServingCost
    rack: Rack
    pue: float
    usd_per_kwh: float
    usd_per_chip_hour: float

    def _joules(self, usd_per_million: FloatArray) -> FloatArray:
        chip_s = usd_per_million / TOKENS_PER_MILLION * SECONDS_PER_HOUR / self.usd_per_chip_hour
        return np.asarray(chip_s * self.rack.watts_per_gpu * self.pue, dtype=np.float64)

    @property
    def input_j_per_token(self) -> FloatArray:
        return self._joules(self.cost.input_usd_per_million)

    @property
    def output_j_per_token(self) -> FloatArray:
        return self._joules(self.cost.output_usd_per_million)

    @property
    def output_power_usd_per_million(self) -> FloatArray:
        return self.output_j_per_token / JOULES_PER_KWH * self.usd_per_kwh * TOKENS_PER_MILLION

    @property
    def power_share(self) -> float:
        """Power's share of each token's cost (input or output alike)."""
        return float(
            power_share_of_rent(
                self.rack.watts_per_gpu, self.usd_per_chip_hour, self.pue, self.usd_per_kwh
            )
        )


RACK = AnyOf(
    (
        Instance(Rack, example=lambda: get_rack("DGX H100 node (air)")),
        OneOf(lambda: list_racks(), "rack"),
    )
)


@contract(
    context=PROMPT,
    rack=RACK,
    usd_per_chip_hour=Optional(SCALAR_POSITIVE),
    pue=Optional(PUE),
    usd_per_kwh=Optional(SCALAR_POSITIVE),
)
def serving_energy(
    deployment: Deployment,
    batch: ArrayLike,
    context: ArrayLike,
    rack: str | Rack,
    *,
    usd_per_chip_hour: float | None = None,
    pue: float | None = None,
    usd_per_kwh: float | None = None,
) -> ServingEnergy:
    """Joules per token of ``deployment`` decoding ``batch`` sequences at ``context`` (and
    prefilling as :func:`llmmath.pricing.serving_cost` does), its chips drawing ``rack``'s
    power per GPU: ``chip-seconds per token x watts per GPU x PUE``. An estimate, not a floor:
    the step times are floors (real steps are longer) but the power is the rack's maximum
    (a bandwidth-bound step draws less)."""
    price = deployment.chip_hour_usd if usd_per_chip_hour is None else float(usd_per_chip_hour)
    return ServingEnergy(
        cost=serving_cost(deployment, batch, context, usd_per_chip_hour=price),
        rack=rack if isinstance(rack, Rack) else get_rack(rack),
        pue=_pue(pue),
        usd_per_kwh=_usd_per_kwh(usd_per_kwh),
        usd_per_chip_hour=price,
    )


@dataclass(frozen=True)
@checked(
    day=Instance(FleetDay, example=get_fleet_day),
    rack=Instance(Rack, example=lambda: get_rack("DGX H100 node (air)")),
    pue=PUE,
    usd_per_kwh=SCALAR_POSITIVE,
)
class FleetDayEnergy:
    """A published fleet day's energy, its nodes at ``rack``'s power per GPU all day."""

    day: FleetDay
    rack: Rack
    pue: float
    usd_per_kwh: float

    @property
    def energy_kwh(self) -> float:
        gpus = self.day.nodes * self.day.gpus_per_node
        return gpus * self.rack.watts_per_gpu * self.pue * self.day.hours / 1e3

    @property
    def j_per_token(self) -> float:
        """Over every token, input (cached or not) and output."""
        tokens = self.day.input_tokens + self.day.output_tokens
        return self.energy_kwh * JOULES_PER_KWH / tokens

    @property
    def j_per_output_token(self) -> float:
        """The whole day's energy over its output tokens alone."""
        return self.energy_kwh * JOULES_PER_KWH / self.day.output_tokens

    @property
    def power_usd(self) -> float:
        return self.energy_kwh * self.usd_per_kwh

    @property
    def power_share(self) -> float:
        """The power bill over the day's rent."""
        d = self.day
        rent = fleet_day_cost_usd(d.nodes, d.gpus_per_node, d.usd_per_gpu_hour, d.hours)
        return self.power_usd / float(rent)


@contract(
    day=Optional(Instance(FleetDay, example=get_fleet_day)),
    rack=RACK,
    pue=Optional(PUE),
    usd_per_kwh=Optional(SCALAR_POSITIVE),
)
def fleet_day_energy(
    rack: str | Rack,
    day: FleetDay | None = None,
    *,
    pue: float | None = None,
    usd_per_kwh: float | None = None,
) -> FleetDayEnergy:
    """The energy of a published fleet day (DeepSeek's by default), every node at ``rack``'s
    power per GPU for the whole day: an upper bound on the draw (nodes are not all at full
    power), so on the joules per token and on the power's share of the day's cost."""
    return FleetDayEnergy(
        day=get_fleet_day() if day is None else day,
        rack=rack if isinstance(rack, Rack) else get_rack(rack),
        pue=_pue(pue),
        usd_per_kwh=_usd_per_kwh(usd_per_kwh),
    )


__all__ = [
    "JOULES_PER_KWH",
    "PUE",
    "DomainSize",
    "Electricity",
    "FleetDayEnergy",
    "Rack",
    "ServingEnergy",
    "domain_sizes",
    "electricity",
    "fleet_day_energy",
    "get_rack",
    "gpus_in_power_budget",
    "list_racks",
    "power_share_of_rent",
    "power_usd_per_chip_hour",
    "rack_power_for_w",
    "room_limits",
    "serving_energy",
]

"""The rack's physical limits: power, cooling, weight and copper reach bound a scale-up domain.

A scale-up domain (:mod:`llmmath.racks`) is as large as the chips that fast copper links can
join, and copper reaches only a couple of metres: in practice, one rack. What fits in one rack
is then set by how much power the rack can be fed and how much heat can be carried out of it.
Every figure comes from ``data/systems.toml`` with its source.

>>> from llmmath import rack_physics
>>> nvl72 = rack_physics.get_rack("GB200 NVL72")
>>> round(nvl72.watts_per_gpu)
1667
>>> rack_physics.gpus_in_power_budget(40e3, nvl72.watts_per_gpu)   # an air-cooled rack
24
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from . import data
from .contracts import NAME, NOTE, SCALAR, SCALAR_POSITIVE, WHOLE, OneOf, checked, contract


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


@contract(n_gpus=WHOLE, watts_per_gpu=SCALAR_POSITIVE)
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


__all__ = [
    "DomainSize",
    "Rack",
    "domain_sizes",
    "get_rack",
    "gpus_in_power_budget",
    "list_racks",
    "rack_power_for_w",
    "room_limits",
]

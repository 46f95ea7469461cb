"""Accelerator presets, loaded from ``data/hardware.toml``, plus chips the reader adds.

>>> from llmmath import hardware
>>> h100 = hardware.get_chip("H100")
>>> round(h100.critical_intensity("bf16"))
295
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import data
from ._checks import choice, positive, positive_int
from .contracts import (
    CHIPS,
    NAME,
    NOTE,
    SCALAR,
    SCALAR_POSITIVE,
    AnyOf,
    Instance,
    MappingOf,
    OneOf,
    PathLike,
    checked,
    contract,
    each,
    vocabulary,
)
from .dtypes import DTYPE

#: Set this to the path of a TOML file (same shape as data/hardware.toml) to add chips.
EXTRA_HARDWARE_ENV = "LLMMATH_HARDWARE_FILE"


@dataclass(frozen=True)
@checked(
    name=NAME,
    full_name=NOTE,
    peak_flop_per_s=MappingOf(DTYPE, SCALAR_POSITIVE, "dtype", lambda: {"bf16": 1e15}),
    hbm_bytes=SCALAR_POSITIVE,
    **each(
        SCALAR,
        "hbm_bandwidth_bytes_per_s scale_up_bandwidth_bytes_per_s scale_out_bandwidth_bytes_per_s",
    ),
    **each(SCALAR, "scale_up_latency_s scale_out_latency_s"),
    scale_up_domain_size=CHIPS,
)
class Chip:
    """One accelerator: dense peak FLOP/s per dtype, memory, and the two network tiers."""

    name: str
    full_name: str
    peak_flop_per_s: dict[str, float] = field(hash=False)
    hbm_bytes: float
    hbm_bandwidth_bytes_per_s: float
    scale_up_bandwidth_bytes_per_s: float
    scale_up_domain_size: int
    scale_out_bandwidth_bytes_per_s: float
    #: Seconds one step of a collective takes on each link before any byte arrives (alpha).
    scale_up_latency_s: float
    scale_out_latency_s: float
    latency_source: str
    source: str
    source_date: str

    def __post_init__(self) -> None:
        if not self.peak_flop_per_s:
            raise ValueError(f"chip {self.name!r}: peak_flop_per_s needs at least one dtype")
        for dtype, flops in self.peak_flop_per_s.items():
            positive(f"chip {self.name!r} peak_flop_per_s[{dtype!r}]", flops)
        for attribute in (
            "hbm_bytes",
            "hbm_bandwidth_bytes_per_s",
            "scale_up_bandwidth_bytes_per_s",
            "scale_out_bandwidth_bytes_per_s",
            "scale_up_latency_s",
            "scale_out_latency_s",
        ):
            positive(f"chip {self.name!r} {attribute}", getattr(self, attribute))
        positive_int(f"chip {self.name!r} scale_up_domain_size", self.scale_up_domain_size)

    def peak(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s for matmuls whose operands are ``dtype``."""
        choice(f"dtype for {self.name}", dtype, self.peak_flop_per_s)
        return self.peak_flop_per_s[dtype]

    def critical_intensity(self, dtype: str = "bf16") -> float:
        """FLOPs per byte of HBM traffic above which a kernel is compute-bound: ``C / W``."""
        return self.peak(dtype) / self.hbm_bandwidth_bytes_per_s

    @property
    def memory_floor_s(self) -> float:
        """Time to read the whole HBM once: no step that touches all of it can be faster."""
        return self.hbm_bytes / self.hbm_bandwidth_bytes_per_s

    @property
    def scale_up_to_scale_out_ratio(self) -> float:
        """How many times faster the scale-up (NVLink/ICI) link is than the scale-out one."""
        return self.scale_up_bandwidth_bytes_per_s / self.scale_out_bandwidth_bytes_per_s


@contract(
    name=NAME, spec=Instance(dict)
)  #: A chip parameter: a :class:`Chip`, or the name of a preset or an added chip.
def chip_from_dict(name: str, spec: dict[str, Any]) -> Chip:
    """Build a :class:`Chip` from one table of a hardware TOML file, with clear errors."""
    required = [f for f in Chip.__dataclass_fields__ if f != "name"]
    missing = [key for key in required if key not in spec]
    if missing:
        raise ValueError(f"chip {name!r} is missing {', '.join(missing)}")
    unknown = sorted(set(spec) - set(required))
    if unknown:
        raise ValueError(f"chip {name!r} has unknown fields {unknown}; allowed: {required}")
    return Chip(name=name, **{key: spec[key] for key in required})


@contract(path=PathLike())
def load_chips(path: str | os.PathLike[str]) -> dict[str, Chip]:
    """Read every chip in a TOML file shaped like ``data/hardware.toml``."""
    with Path(path).open("rb") as handle:
        tables = tomllib.load(handle)
    return {name: chip_from_dict(name, spec) for name, spec in tables.items()}


def _preset_chips() -> dict[str, Chip]:
    return {name: chip_from_dict(name, spec) for name, spec in data.table("hardware").items()}


_CHIPS: dict[str, Chip] = _preset_chips()
PRESET_NAMES: tuple[str, ...] = tuple(_CHIPS)
if os.environ.get(EXTRA_HARDWARE_ENV):
    _CHIPS.update(load_chips(os.environ[EXTRA_HARDWARE_ENV]))


@contract(chip=Instance(Chip, example=lambda: _CHIPS["H100"]))
def add_chip(chip: Chip) -> None:
    """Make ``chip`` available by name to every function that takes a chip name."""
    if not isinstance(chip, Chip):
        raise TypeError(f"chip must be a llmmath.hardware.Chip; got {type(chip).__name__}")
    _CHIPS[chip.name] = chip


@contract()
def list_chips() -> list[str]:
    """Names of every chip known: the presets, then any the reader added."""
    return list(_CHIPS)


CHIP = AnyOf((OneOf(lambda: list(_CHIPS), "chip"), Instance(Chip, example=lambda: _CHIPS["H100"])))
vocabulary(chip=CHIP)


@contract()
def get_chip(chip: str | Chip) -> Chip:
    """Look a chip up by name (``"H100"``), or pass a :class:`Chip` straight through."""
    if isinstance(chip, Chip):
        return chip
    return _CHIPS[choice("chip", chip, _CHIPS)]


# ---- racks: scale-up domains as data (moe and the collectives use them) ----------------------
#: The scale-up domains of the course, each the preset chip of ``data/hardware.toml`` whose
#: ``scale_up_domain_size`` and link bandwidths describe it.
DOMAIN_PRESETS: dict[str, str] = {
    "HGX A100 (8 GPUs)": "A100",
    "HGX H100 (8 GPUs)": "H100",
    "HGX B200 (8 GPUs)": "B200",
    "GB200 NVL72 (72 GPUs)": "GB200-NVL72",
    "TPU v5e pod (256 chips)": "TPU-v5e",
    "TPU v5p pod (8,960 chips)": "TPU-v5p",
}


@dataclass(frozen=True)
@checked(name=NAME, chip=Instance(Chip))
class ScaleUpDomain:
    """One scale-up domain: ``n_chips`` chips joined by fast links, and the slower
    scale-out network every chip has to the world outside it."""

    name: str
    chip: Chip

    @property
    def n_chips(self) -> int:
        return self.chip.scale_up_domain_size

    @property
    def hbm_bytes(self) -> float:
        """HBM of the whole domain."""
        return self.n_chips * self.chip.hbm_bytes

    @property
    def scale_up_bandwidth_bytes_per_s(self) -> float:
        """Per chip, one direction (NVLink, ICI)."""
        return self.chip.scale_up_bandwidth_bytes_per_s

    @property
    def scale_out_bandwidth_bytes_per_s(self) -> float:
        """Per chip, one direction (InfiniBand/Ethernet NICs, TPU DCN)."""
        return self.chip.scale_out_bandwidth_bytes_per_s

    @property
    def bandwidth_ratio(self) -> float:
        """How many times faster a chip talks inside the domain than out of it."""
        return self.chip.scale_up_to_scale_out_ratio

    def peak_flop_per_s(self, dtype: str = "bf16") -> float:
        """Dense peak of the whole domain."""
        return self.n_chips * self.chip.peak(dtype)


@contract()
def list_domains() -> list[str]:
    """Names of the scale-up domain presets."""
    return list(DOMAIN_PRESETS)


#: A domain parameter: a :class:`ScaleUpDomain`, a chip, or a domain or chip name.
DOMAIN = AnyOf(
    (OneOf(lambda: [*DOMAIN_PRESETS, *list_chips()], "domain"), Instance(ScaleUpDomain), CHIP)
)


@contract(domain=DOMAIN)
def get_domain(domain: str | Chip | ScaleUpDomain) -> ScaleUpDomain:
    """A domain by preset name (``"GB200 NVL72 (72 GPUs)"``), by chip name (``"H100"``), from
    a :class:`~llmmath.hardware.Chip`, or passed straight through."""
    if isinstance(domain, ScaleUpDomain):
        return domain
    if isinstance(domain, Chip):
        return ScaleUpDomain(f"{domain.name} ({domain.scale_up_domain_size:,} per domain)", domain)
    name = choice("domain", domain, [*DOMAIN_PRESETS, *list_chips()])
    if name in DOMAIN_PRESETS:
        return ScaleUpDomain(name, get_chip(DOMAIN_PRESETS[name]))
    return get_domain(get_chip(name))

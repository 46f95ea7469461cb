"""Accelerator presets, loaded from ``data/hardware.toml``, plus chips the reader adds.

>>> from llmmath.core import hardware
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

from llmmath.core import data
from llmmath.core._checks import choice
from llmmath.core._constraints import AnyOf, Instance, MappingOf, OneOf, PathLike, Real
from llmmath.core.contracts import CHIPS, NAME, NOTE, checked, contract, each, refuse, vocabulary
from llmmath.core.dtypes import DTYPE

#: Set this to the path of a TOML file (same shape as data/hardware.toml) to add chips.
EXTRA_HARDWARE_ENV = "LLMMATH_HARDWARE_FILE"

#: What a chip's numbers may be: ranges far wider than today's chips span (2e14-1e16 FLOP/s,
#: 16-288 GB, 0.8-8 TB/s, links of 1-900 GB/s, ~1 us a hop), narrow enough that a unit slip
#: (GB/s for B/s) is refused and no time derived from them (HBM / bandwidth) overflows.
FLOP_RATE = Real(low=1e6, low_open=False, high=1e18, scalar=True)
BYTES = Real(low=1e6, low_open=False, high=1e15, scalar=True)
BYTE_RATE = Real(low=1e6, low_open=False, high=1e15, scalar=True)
LATENCY = Real(low=1e-9, low_open=False, high=1.0, scalar=True)
#: A fixed cost per collective (NCCL's baseLat); 0 where no figure is published.
BASE_LATENCY = Real(low=0.0, low_open=False, high=1.0, scalar=True)


@dataclass(frozen=True)
@checked(
    inside=True,  # a chip read from a TOML file is checked as one built outside
    name=NAME,
    full_name=NOTE,
    peak_flop_per_s=MappingOf(DTYPE, FLOP_RATE, "dtype", lambda: {"bf16": 1e15}),
    hbm_bytes=BYTES,
    **each(
        BYTE_RATE,
        "hbm_bandwidth_bytes_per_s scale_up_bandwidth_bytes_per_s scale_out_bandwidth_bytes_per_s",
    ),
    **each(LATENCY, "scale_up_latency_s scale_out_latency_s"),
    collective_base_latency_s=BASE_LATENCY,
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
    #: Seconds every ring collective (all-gather, reduce-scatter, all-reduce) pays once, on top
    #: of its steps: NCCL's per-collective base latency. Optional in a chip file (0: none).
    collective_base_latency_s: float = 0.0

    @contract()
    def peak(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s for matmuls whose operands are ``dtype``."""
        choice(f"dtype for {self.name}", dtype, self.peak_flop_per_s)
        return self.peak_flop_per_s[dtype]

    @contract()
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
    allowed = [f for f in Chip.__dataclass_fields__ if f != "name"]
    optional = ("collective_base_latency_s",)
    missing = [key for key in allowed if key not in spec and key not in optional]
    if missing:
        raise ValueError(f"chip {name!r} is missing {', '.join(missing)}")
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        raise ValueError(f"chip {name!r} has unknown fields {unknown}; allowed: {allowed}")
    return Chip(name=name, **{key: spec[key] for key in allowed if key in spec})


@contract(path=PathLike())
def load_chips(path: str | os.PathLike[str]) -> dict[str, Chip]:
    """Read every chip in a TOML file shaped like ``data/hardware.toml``: one table per chip,
    ``[name]``, holding its fields. An error names the file and what it expected."""
    where = f"hardware.load_chips(): path {str(path)!r}"
    expected = "a TOML file shaped like data/hardware.toml, one [name] table per chip"
    try:
        with Path(path).open("rb") as handle:
            tables = tomllib.load(handle)
    except OSError as error:  # missing, a folder, unreadable: keep the kind (FileNotFoundError)
        message = f"{where}: cannot be read ({error.strerror}); expected {expected}"
        raise type(error)(error.errno, message, error.filename) from error
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{where}: is not valid TOML ({error}); expected {expected}") from None
    chips = {}
    for name, spec in tables.items():
        if not isinstance(spec, dict):
            raise ValueError(f"{where}: {name} = {spec!r} is not a table; expected {expected}")
        try:
            chips[name] = chip_from_dict(name, spec)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{where}: {error}") from None
    return chips


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
        raise TypeError(f"chip must be a llmmath.core.hardware.Chip; got {type(chip).__name__}")
    _CHIPS[chip.name] = chip


@contract()
def list_chips() -> list[str]:
    """Names of every chip known: the presets, then any the reader added."""
    return list(_CHIPS)


#: A chip's name (:func:`list_chips`), where only a name will do (a key, a price per chip).
CHIP_NAME = OneOf(lambda: _CHIPS, "chip")
#: A chip: its name or a :class:`Chip`.
CHIP = AnyOf((CHIP_NAME, Instance(Chip, example=lambda: _CHIPS["H100"])))
vocabulary(chip=CHIP)


@contract(own_check=True)
def get_chip(chip: str | Chip) -> Chip:
    """Look a chip up by name (``"H100"``), or pass a :class:`Chip` straight through."""
    if isinstance(chip, Chip):
        return chip
    if type(chip) is not str or chip not in _CHIPS:
        refuse(get_chip, "chip", chip)
    return _CHIPS[chip]

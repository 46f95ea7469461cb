"""How the lessons write numbers in prose: the few formats every chapter uses.

Each helper returns exactly what ``format(float(value), spec)`` returned in the lessons before
their numbers moved here, so a page reads the same: ``fixed`` for a plain decimal, ``grouped``
for a count with thousands separators, ``percent``, and the unit helpers, which scale first
(bytes to GB, seconds to ms, FLOP/s to TFLOP/s) and then write ``fixed``.

>>> fixed(2.0 / 3.0, 2), grouped(1234567), percent(0.256), percent(0.256, 1)
('0.67', '1,234,567', '26%', '25.6%')
>>> gb(140e9), ms(0.0419, 1), tflops(989.4e12), tb_per_s(3.35e12)
('140', '41.9', '989', '3.35')
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from llmmath.core._constraints import Count, Real
from llmmath.core.contracts import contract

#: Any finite number, of either sign (a difference, a saving that is a loss).
_NUMBER = Real(low=-float("inf"), scalar=True)
_DIGITS = Count(low=0, high=12)
#: A number to show: a float, a numpy scalar, or a 0-d array (a step of one batch).
Number: TypeAlias = float | np.floating[Any] | npt.NDArray[np.floating[Any]]


@contract(number=_NUMBER, digits=_DIGITS)
def fixed(number: Number, digits: int = 0) -> str:
    """``number`` with ``digits`` decimals: ``format(float(number), ".{digits}f")``."""
    return format(float(number), f".{digits}f")


@contract(number=_NUMBER, digits=_DIGITS)
def grouped(number: Number, digits: int = 0) -> str:
    """``number`` with thousands separators: ``format(float(number), ",.{digits}f")``."""
    return format(float(number), f",.{digits}f")


@contract(fraction=_NUMBER, digits=_DIGITS)
def percent(fraction: Number, digits: int = 0) -> str:
    """``fraction`` as a percentage: ``format(float(fraction), ".{digits}%")``."""
    return format(float(fraction), f".{digits}%")


@contract(n_bytes=_NUMBER, digits=_DIGITS)
def gb(n_bytes: Number, digits: int = 0) -> str:
    """Bytes in GB (1e9 bytes), ``digits`` decimals."""
    return fixed(float(n_bytes) / 1e9, digits)


@contract(seconds=_NUMBER, digits=_DIGITS)
def ms(seconds: Number, digits: int = 1) -> str:
    """Seconds in milliseconds, ``digits`` decimals."""
    return fixed(float(seconds) * 1e3, digits)


@contract(flops_per_s=_NUMBER, digits=_DIGITS)
def tflops(flops_per_s: Number, digits: int = 0) -> str:
    """FLOP/s in TFLOP/s (1e12), ``digits`` decimals."""
    return fixed(float(flops_per_s) / 1e12, digits)


@contract(bytes_per_s=_NUMBER, digits=_DIGITS)
def tb_per_s(bytes_per_s: Number, digits: int = 2) -> str:
    """Bytes/s in TB/s (1e12), ``digits`` decimals."""
    return fixed(float(bytes_per_s) / 1e12, digits)

"""Unit constants used across the package: one place, so no module redefines them; and how
the book's text writes a quantity too large or small for plain digits."""

from __future__ import annotations

from llmmath.core._constraints import Count, Real
from llmmath.core.contracts import contract

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
TOKENS_PER_MILLION = 1e6

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


@contract(
    value=Real(low=0.0, low_open=False, scalar=True),
    significant=Count(high=17),
)
def scientific(value: float, significant: int = 2) -> str:
    """``value`` as prose writes it, never Python's e-notation: ``6.3 × 10²⁴`` for 6.3e24 at
    two significant figures (``0`` for zero). Every number the book's text shows in powers of
    ten goes through here, so they all read one way (tests/display/test_prose.py scans the
    built book for ``e+24``)."""
    if value == 0:
        return "0"
    # Python's own rounding, so 9.96e24 at two figures carries to 1.0 × 10²⁵.
    mantissa, exponent = f"{float(value):.{significant - 1}e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


@contract(
    value=Real(low=0.0, low_open=False, scalar=True),
    significant=Count(high=17),
)
def general(value: float, significant: int = 3) -> str:
    """``value`` as Python's ``g`` format writes it (plain digits, trailing zeros dropped:
    ``407``, ``0.75``), except where ``g`` would switch to e-notation: below a million, digits
    rounded to ``significant`` figures with thousands separators (``1,150``); above, or below
    10⁻⁴, :func:`scientific` with its trailing zeros dropped (``8 × 10¹²``, ``1.92 × 10¹⁹``)."""
    text = f"{float(value):.{significant}g}"
    if "e" not in text:
        return text
    exponent = int(text.split("e")[1])
    if 0 < exponent < 6:
        return f"{round(float(value), significant - 1 - exponent):,.0f}"
    mantissa, power = scientific(value, significant).split(" × ")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × {power}"


__all__ = ["SECONDS_PER_DAY", "SECONDS_PER_HOUR", "TOKENS_PER_MILLION", "general", "scientific"]

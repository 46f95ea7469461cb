"""How the ``llmmath`` command shows its answers: aligned tables with units, or JSON.

A :class:`Report` holds what a subcommand found twice over: ``data`` (plain numbers in SI
units, for ``--json``) and the lines people read (a heading, settings, tables, notes).

>>> print(table(["batch", "step ms"], [["1", "5.19"], ["256", "12.3"]]))
batch  step ms
-----  -------
    1     5.19
  256     12.3
>>> ms(0.0051934), si(2_147_483_648, "B"), count(123456.7)
('5.19', '2.15 GB', '123,457')
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

#: Said under every table of times: the model's numbers are lower bounds.
FLOOR_NOTE = (
    "Floors, not promises: at {flops:.0%} of the datasheet FLOP/s and {bandwidth:.0%} of its "
    "bandwidth,\nwith {rule}. Real systems are slower: lower --efficiency to model them."
)

#: Short names of the links a collective crosses (see llmmath.placement.Group.link).
LINK_NAMES = {"scale-up": "up", "scale-out": "out", "scale-up + scale-out": "up+out"}

_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]


@dataclass
class Report:
    """One subcommand's answer: ``data`` for ``--json``, ``lines`` for people."""

    data: dict[str, Any]
    lines: list[str] = field(default_factory=list)

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def render(self, as_json: bool) -> str:
        if as_json:
            return json.dumps(plain(self.data), indent=2)
        return "\n".join(self.lines)


def plain(value: Any) -> Any:
    """``value`` with numpy numbers as floats and infinities or NaN as None (valid JSON)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if hasattr(value, "ndim") and value.ndim:
        return [plain(v) for v in value.tolist()]
    number = float(value)
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell: text left-aligned, numbers right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    numeric = [all(_numeric(row[i]) for row in rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        padded = [
            cell.rjust(w) if right else cell.ljust(w)
            for cell, w, right in zip(cells, widths, numeric, strict=True)
        ]
        return "  ".join(padded).rstrip()

    rule = ["-" * w for w in widths]
    return "\n".join([line(header), line(rule), *(line(row) for row in rows)])


def _numeric(cell: str) -> bool:
    """A number, maybe with a currency sign, separators and a unit: ``$1.89``, ``8.03B``,
    ``131 kB``, ``12.5%`` (right-aligned in a table)."""
    return cell in ("-", "inf") or re.fullmatch(r"\$?-?[\d,]*\.?\d+ ?[A-Za-z%]*", cell) is not None


def sig(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures, without exponent for everyday sizes."""
    if not math.isfinite(value):
        return "inf" if value > 0 else "-"
    if value == 0:
        return "0"
    places = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    return f"{value:,.{places}f}"


def ms(seconds: float) -> str:
    """Seconds shown in milliseconds, three significant figures."""
    return sig(seconds * 1e3)


def si(value: float, unit: str) -> str:
    """A decimal-prefixed quantity: ``si(2.15e9, "B") == "2.15 GB"``."""
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{sig(value / scale)} {prefix}{unit}"
    return f"{sig(value)} {unit}"


def count(value: float) -> str:
    """A whole count with thousands separators (``inf`` where unbounded)."""
    return f"{value:,.0f}" if math.isfinite(value) else "inf"


def params(value: float) -> str:
    """A parameter count in billions (decimal): ``params(7.06e10) == "70.6B"``."""
    return f"{sig(value / 1e9)}B"


def short(value: float) -> str:
    """A large count with a decimal suffix and no space: ``short(1.56e13) == "15.6T"``."""
    return si(value, "").replace(" ", "")


def usd(value: float | None) -> str:
    """A price in dollars, three significant figures; ``-`` where there is no price."""
    if value is None or not math.isfinite(value):
        return "-"
    return "$" + (short(value) if value >= 1e6 else sig(value))


def percent(share: float) -> str:
    return f"{share * 100:.1f}%"


__all__ = [
    "FLOOR_NOTE",
    "LINK_NAMES",
    "Report",
    "count",
    "ms",
    "params",
    "percent",
    "plain",
    "short",
    "si",
    "sig",
    "table",
    "usd",
]

"""Number formats and their sizes."""

from __future__ import annotations

from ._checks import choice

#: Bytes per element of each number format the course uses.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}


def bytes_per_element(dtype: str) -> float:
    """Size of one element of ``dtype`` in bytes, e.g. ``bytes_per_element("bf16") == 2``."""
    return BYTES_PER_ELEMENT[choice("dtype", dtype, BYTES_PER_ELEMENT)]

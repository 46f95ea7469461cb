"""Number formats and their sizes."""

from __future__ import annotations

from .contracts import OneOf, contract, each, refuse, vocabulary

#: Bytes per element of each number format the course uses.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    # NVFP4 (Blackwell): 4-bit values and one 8-bit scale per block of 16, 4.5 bits a value
    # (data/serving_modes.toml, [formats.nvfp4]); the per-tensor fp32 scale is negligible.
    "nvfp4": (4 + 8 / 16) / 8,
}

#: Any number format the course knows (a parameter's contract).
DTYPE = OneOf(tuple(BYTES_PER_ELEMENT), "dtype")
vocabulary(**each(DTYPE, "dtype compute_dtype weight_dtype kv_dtype activation_dtype grad_dtype"))


@contract(own_check=True)
def bytes_per_element(dtype: str) -> float:
    """Size of one element of ``dtype`` in bytes, e.g. ``bytes_per_element("bf16") == 2``."""
    if type(dtype) is not str or dtype not in BYTES_PER_ELEMENT:
        refuse(bytes_per_element, "dtype", dtype)
    return BYTES_PER_ELEMENT[dtype]

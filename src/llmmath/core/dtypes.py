"""Number formats and their sizes, and weights held in several formats at once.

>>> bytes_per_element("mxfp4")
0.53125
>>> WeightFormat.uniform("fp8").experts
1.0
"""

from __future__ import annotations

from dataclasses import dataclass

from llmmath.core._constraints import OneOf, Real
from llmmath.core.contracts import NAME, checked, contract, each, refuse, vocabulary

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
    # MXFP4 (OCP microscaling, as gpt-oss ships its experts): 4-bit E2M1 values and one
    # 8-bit E8M0 scale per block of 32, 4.25 bits a value (OCP MX spec v1.0, 2023-09).
    "mxfp4": (4 + 8 / 32) / 8,
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


#: The parts of a model's weights a format may differ between.
WEIGHT_PARTS = ("embeddings", "attention", "mlp", "experts")


@dataclass(frozen=True)
@checked(**each(Real(high=8.0, scalar=True), " ".join(WEIGHT_PARTS)), description=NAME, main=DTYPE)
class WeightFormat:
    """Bytes per parameter of each part of a model's weights: ``embeddings`` (input and
    output), ``attention`` (its projections), ``mlp`` (dense MLPs, shared experts, routers,
    norms) and ``experts`` (routed ones). A part partly left in another format (a checkpoint's
    modules left unconverted) holds the average of its bytes per parameter. ``description``
    says which format holds which part, e.g. ``"experts mxfp4; the rest bf16"``; ``main`` is
    the format the largest converted part is in (the matmuls' format where a chip has it)."""

    embeddings: float
    attention: float
    mlp: float
    experts: float
    description: str
    main: str = "bf16"

    @classmethod
    @contract()
    def uniform(cls, dtype: str) -> WeightFormat:
        """Every weight in ``dtype``."""
        b = bytes_per_element(dtype)
        return cls(b, b, b, b, f"all {dtype}", dtype)

    @classmethod
    @contract(**each(DTYPE, "embeddings attention mlp experts"))
    def of(cls, embeddings: str, attention: str, mlp: str, experts: str) -> WeightFormat:
        """Each part in its own format, described part by part."""
        dtypes = {"embeddings": embeddings, "attention": attention, "mlp": mlp, "experts": experts}
        by_dtype: dict[str, list[str]] = {}
        for part, dtype in dtypes.items():
            by_dtype.setdefault(dtype, []).append(part)
        words = "; ".join(f"{', '.join(parts)} {dtype}" for dtype, parts in by_dtype.items())
        sizes = {part: bytes_per_element(dtype) for part, dtype in dtypes.items()}
        text = words if len(by_dtype) > 1 else f"all {embeddings}"
        return cls(description=text, main=experts if experts != embeddings else mlp, **sizes)

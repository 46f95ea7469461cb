"""Controls for the lessons, one module per chapter, on the shared plumbing in ``common``."""

from . import batching, kv_cache, moe, overtraining_pricing, parallelism, roofline
from .common import (
    STATIC_ENV,
    Control,
    Explorer,
    Options,
    Range,
    explorer,
    nested_stacks,
    static_mode,
)

__all__ = [
    "STATIC_ENV",
    "Control",
    "Explorer",
    "Options",
    "Range",
    "batching",
    "explorer",
    "kv_cache",
    "moe",
    "nested_stacks",
    "overtraining_pricing",
    "parallelism",
    "roofline",
    "static_mode",
]

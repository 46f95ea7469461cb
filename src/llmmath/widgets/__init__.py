"""Controls for the lessons, one module per chapter, on the shared plumbing in ``common``."""

from . import batching, kv_cache, moe, parallelism, pricing, roofline
from .common import STATIC_ENV, nested_stacks, static_mode

__all__ = [
    "STATIC_ENV",
    "batching",
    "kv_cache",
    "moe",
    "nested_stacks",
    "parallelism",
    "pricing",
    "roofline",
    "static_mode",
]

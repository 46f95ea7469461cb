"""Figures for the course, one module per chapter. Each function returns a matplotlib Figure
(no pyplot state, no ``plt.show()``); the lessons show them captioned and the widgets re-drive
the same code, so the book and the notebook always agree."""

from . import batching, kv_cache, moe, parallelism, pricing, published, roofline
from .common import figure_and_axes, figure_png

__all__ = [
    "batching",
    "figure_and_axes",
    "figure_png",
    "kv_cache",
    "moe",
    "parallelism",
    "pricing",
    "published",
    "roofline",
]

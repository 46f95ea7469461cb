"""Figures for the course, one module per chapter. Each function returns a matplotlib Figure
(no pyplot state, no ``plt.show()``). A set of curves is drawn by one panel class, which both
the lesson's figure and the chapter's explorer use, and the curves come from the model
(``llmmath.<chapter>``'s "curves the figures draw"); so the book and the notebook agree."""

from . import (
    batching,
    collectives,
    kv_cache,
    moe,
    overtraining_pricing,
    parallelism,
    published,
    roofline,
    serving_modes,
)
from .common import figure_and_axes, figure_png

__all__ = [
    "batching",
    "collectives",
    "figure_and_axes",
    "figure_png",
    "kv_cache",
    "moe",
    "overtraining_pricing",
    "parallelism",
    "published",
    "roofline",
    "serving_modes",
]

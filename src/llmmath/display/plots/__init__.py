"""Figures for the course, one module per chapter. Each function returns a matplotlib Figure
(no pyplot state, no ``plt.show()``). A set of curves is drawn by one panel class, which both
the lesson's figure and the chapter's explorer use, and the curves come from the model
(``llmmath.<chapter>``'s "curves the figures draw"); so the book and the notebook agree.

Every module of this folder is imported here (``plots.batching`` ... after ``from llmmath
import plots``): a new chapter's ``plots/<ch>.py`` needs no line in this file."""

import importlib
import pkgutil

from llmmath.display.plots.common import figure_and_axes, figure_png

#: The shared drawing code; every other module is a chapter's or a section's figures.
_HELPERS = {"common", "fast_text"}
_FIGURES = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in _HELPERS)
for _name in _FIGURES:
    importlib.import_module(f"{__name__}.{_name}")

__all__ = ["figure_and_axes", "figure_png", *_FIGURES]

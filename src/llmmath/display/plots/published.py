"""Figures of the validation appendix: how close published systems came to the floors."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from llmmath.display.plots.common import (
    COMPUTE_COLOUR,
    FLOOR_COLOUR,
    MEMORY_COLOUR,
    figure_and_axes,
)
from llmmath.validation.published import Comparison, checked_comparisons


def efficiency_bars(comparisons: Sequence[Comparison], ax: Axes | None = None) -> Figure:
    """One horizontal bar per comparison: the implied efficiency ``floor / measured``.

    Floors (lower bounds) are drawn in one colour, identities that are not bounds (Chinchilla's
    compute vs ``6 N D``) in another; the line at 1 is the datasheet roofline itself.
    """
    checked_comparisons(comparisons)
    own_figure = ax is None
    figure, ax = figure_and_axes(ax)
    if own_figure:
        figure.set_size_inches(6.5, 0.42 * len(comparisons) + 2.0)
    rows = np.arange(len(comparisons))[::-1]
    efficiency = np.array([c.efficiency for c in comparisons])
    colours = [MEMORY_COLOUR if c.is_floor else COMPUTE_COLOUR for c in comparisons]
    ax.barh(rows, efficiency, color=colours)
    for row, value in zip(rows, efficiency, strict=True):
        ax.annotate(
            f"{value:.2f}", (value, row), textcoords="offset points", xytext=(3, -3), fontsize=9
        )
    ax.axvline(1.0, color=FLOOR_COLOUR, linestyle="--", linewidth=1)
    # Wrapped so the labels leave the bars half the width of a book column.
    labels = [textwrap.fill(c.name, 28) for c in comparisons]
    ax.set_yticks(rows, labels, fontsize=8)
    ax.set_xlim(0.0, max(1.15, float(efficiency.max()) * 1.1))
    ax.set(
        xlabel="floor / measured (1 = the datasheet roofline)",
        title="How close real systems came to the floors",
    )
    handles = [
        Patch(color=MEMORY_COLOUR, label="floor vs measurement"),
        Patch(color=COMPUTE_COLOUR, label="6ND vs published compute (not a bound)"),
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.4, -0.08), fontsize=8)
    return figure

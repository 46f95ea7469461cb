"""The figure of ``llmmath plan --plot``: each chip type's throughput-per-chip vs
speed-per-user frontier (floors), with the configuration the plan chose on it."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from llmmath.beyond.planning import Frontier
from llmmath.display.plots.common import end_label, figure_and_axes, mark_curves, plain_axes


def frontier_figure(
    frontiers: Sequence[Frontier],
    chosen: Sequence[tuple[str, float, float, str]],
    title: str,
    ax: Axes | None = None,
) -> Figure:
    """One line per chip type (a marker each, named where it ends) and each chosen point
    (chip, speed per user, throughput per chip, label) as a filled circle with its label."""
    figure, ax = figure_and_axes(ax)
    lines = []
    for front in frontiers:
        (line,) = ax.plot(front.tokens_per_s_per_user, front.tokens_per_s_per_chip)
        lines.append(line)
        end_label(ax, line, f"{front.chip} frontier", ha="left")
    mark_curves(*lines)
    colours = {front.chip: line.get_color() for front, line in zip(frontiers, lines, strict=True)}
    for chip, speed, rate, label in chosen:
        ax.plot(speed, rate, "o", color=colours.get(chip, "black"), markersize=8)
        ax.annotate(label, (speed, rate), textcoords="offset points", xytext=(6, -12), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):  # log axes read in plain numbers: 20, 50, 100, 200
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("output tokens/s per user (1 / TPOT)")
    ax.set_ylabel("output tokens/s per chip (prefill counted)")
    ax.set_title(title, fontsize=9)
    plain_axes(ax)
    return figure


__all__ = ["frontier_figure"]

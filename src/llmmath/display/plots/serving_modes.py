"""Figures of the serving-mode sections: what a fast mode costs (batching chapter) and where
speculative decoding pays (batching chapter)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from llmmath.beyond import serving_modes, speculative
from llmmath.core.deployment import Deployment
from llmmath.display.plots.common import (
    COMPUTE_COLOUR,
    FLOOR_COLOUR,
    MEMORY_COLOUR,
    figure_and_axes,
    mark_curves,
    plain_axes,
)


def fast_mode_figure(deployment: Deployment, context: float, ax: Axes | None = None) -> Figure:
    """Price multiple against speed-up, from the floor: a smaller batch on the same chips
    (rising to the weight floor), and more chips at the standard batch (flat at 1 at the
    floor, collectives left out); vendors' fast modes as points."""
    figure, ax = figure_and_axes(ax)
    standard = serving_modes.fast_mode(deployment, context, 1.0)
    top = float(standard.max_speedup)
    speedups = np.linspace(1.0, top * 0.999, 200)
    fast = serving_modes.fast_mode(deployment, context, speedups)
    ax.plot(
        fast.speedup, fast.price_multiple, color=MEMORY_COLOUR, label="smaller batch, same chips"
    )
    ax.plot(
        fast.speedup,
        fast.wider_price_multiple,
        color=COMPUTE_COLOUR,
        linestyle="--",
        label="more chips, same batch (no collectives)",
    )
    ax.axvline(top, color=FLOOR_COLOUR, linestyle=":", label=f"weight floor: {top:.2f}× at most")
    for vendor in serving_modes.fast_mode_prices():
        ax.plot(vendor.speedup, vendor.price_multiple, "o", color="black")
        ax.annotate(
            f"{vendor.label}\n(up to {vendor.speedup:g}×, {vendor.price_multiple:g}× price)",
            (vendor.speedup, vendor.price_multiple),
            textcoords="offset points",
            xytext=(6, 4),
            fontsize=8,
        )
    ax.set_xlim(0.95, max(top, 2.5) + 0.9)
    ax.set_yscale("log")
    ax.set_xlabel("speed-up of one user's tokens per second")
    ax.set_ylabel("price per token / standard price")
    ax.set_title(f"{deployment.label}, context {context:,.0f}: floors")
    ax.legend(loc="upper left", fontsize=8)
    plain_axes(ax)
    return figure


def speculative_figure(
    cases: Sequence[tuple[str, Deployment, int, float, float, float]],
    context: float,
    ax: Axes | None = None,
) -> Figure:
    """Speed-up of speculative decoding against the batch, one line per
    ``(label, deployment, drafts, acceptance, draft share, draft KV share)``, at the floor."""
    figure, ax = figure_and_axes(ax)
    colours = (MEMORY_COLOUR, COMPUTE_COLOUR, FLOOR_COLOUR)
    lines = []
    for (label, dep, k, a, share, kv_share), colour in zip(cases, colours, strict=False):
        curve = speculative.speedup_curve(dep, context, k, a, share, kv_share)
        lines += ax.plot(curve.batch, curve.speedup, color=colour, label=label)
    mark_curves(*lines)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("batch (sequences per step)")
    ax.set_ylabel("tokens/s per sequence vs plain decoding")
    ax.set_title(f"Speculative decoding at context {context:,.0f}: floors")
    ax.legend(fontsize=8)
    plain_axes(ax)
    return figure


__all__ = ["fast_mode_figure", "speculative_figure"]

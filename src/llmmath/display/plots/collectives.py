"""Figures of the collectives section (parallelism chapter): what each chip of a ring
all-reduce sends at each step, and where the latency alpha and the bytes each dominate."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from llmmath.core import collectives
from llmmath.core.collectives import AllReduceCost, RingSchedule
from llmmath.core.hardware import Chip, get_chip
from llmmath.display.plots.common import COMPUTE_COLOUR, MEMORY_COLOUR, plain_axes

PHASE_COLOURS = {"reduce-scatter": "#fc8d62", "all-gather": "#8da0cb"}


class RingPanel:
    """The ring's steps as a grid: one row per step, one column per chip; each cell names the
    chunk that chip sends to its right-hand neighbour, coloured by phase."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax

    def show(self, ring: RingSchedule) -> None:
        ax, n = self.ax, ring.n_chips
        steps = len(ring.phase)
        for s, phase in enumerate(ring.phase):
            for i in range(n):
                ax.add_patch(_cell(i, s, PHASE_COLOURS[phase]))
                ax.text(i, s, f"c{ring.sent_chunk[s, i]}", ha="center", va="center", fontsize=9)
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_ylim(steps - 0.5, -0.5)
        ax.set_xticks(range(n), [f"chip {i}\n→ {(i + 1) % n}" for i in range(n)], fontsize=8)
        ax.set_yticks(range(steps), [f"{s + 1}" for s in range(steps)], fontsize=8)
        ax.set_ylabel("step")
        for phase, colour in PHASE_COLOURS.items():
            ax.bar(0, 0, color=colour, label=phase)  # legend entries only
        ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2)
        ax.set_title(
            f"each step: {ring.chunk_bytes / 1e6:.0f} MB per chip, {ring.step_s * 1e6:.1f} µs",
            fontsize=9,
            pad=28,
        )
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
        ax.tick_params(length=0)


class CostPanel:
    """One all-reduce's time against its size: the latency part, flat, and the bytes part,
    rising; the sum crosses from one to the other."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax

    def show(self, cost: AllReduceCost) -> None:
        ax = self.ax
        size = cost.array_bytes
        ax.loglog(size, cost.total_s * 1e6, color="black", label="all-reduce")
        ax.loglog(
            size,
            cost.latency_s * 1e6,
            color=COMPUTE_COLOUR,
            linestyle="--",
            label="latency: base + 2(n−1) α",
        )
        ax.loglog(
            size,
            cost.bytes_s * 1e6,
            color=MEMORY_COLOUR,
            linestyle=":",
            label="bytes: 2(n−1)/n · S / W",
        )
        ax.set(xlabel="array S (bytes)", ylabel="time (µs)")
        ax.legend(fontsize=8)
        plain_axes(ax)


def _cell(i: int, s: int, colour: str) -> Rectangle:
    return Rectangle((i - 0.45, s - 0.45), 0.9, 0.9, facecolor=colour, edgecolor="white")


def ring_all_reduce_figure(
    chip: str | Chip = "H100", n_chips: int = 4, array_bytes: float = 64e6
) -> Figure:
    """Left: a ring all-reduce of ``array_bytes`` over ``n_chips`` step by step. Right: one
    all-reduce over the chip's scale-up domain against its size, latency and bytes apart."""
    spec = get_chip(chip)
    figure = Figure(figsize=(9.0, 3.8), dpi=100, layout="constrained")
    left, right = figure.subplots(1, 2, width_ratios=(1.0, 1.2))
    RingPanel(left).show(collectives.ring_all_reduce_schedule(array_bytes, n_chips, spec))
    sizes = np.logspace(3, 10, 57)
    CostPanel(right).show(collectives.all_reduce_cost_curve(sizes, spec.scale_up_domain_size, spec))
    right.set_title(f"{spec.scale_up_domain_size} × {spec.name}, one all-reduce", fontsize=9)
    return figure

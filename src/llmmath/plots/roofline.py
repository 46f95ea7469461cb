"""Figures of the roofline chapter."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from .. import roofline
from ..hardware import Chip, get_chip
from ..measure import MachineRoofline
from ..models import ModelConfig, get_model
from .common import COMPUTE_COLOUR, FLOOR_COLOUR, MEMORY_COLOUR, figure_and_axes, figure_png

BATCHES = 2.0 ** np.arange(0, 13)  # 1 ... 4096 tokens, the static book's slider stops
_INTENSITY = np.logspace(-1, 4, 200)
_SWEEP = np.logspace(0, np.log10(8192), 120)


def roofline_curve(chip: str | Chip, dtype: str = "bf16", ax: Axes | None = None) -> Figure:
    """Attainable FLOP/s against arithmetic intensity, ridge point marked."""
    figure, ax = figure_and_axes(ax)
    spec = get_chip(chip)
    ax.loglog(
        _INTENSITY, roofline.attainable_flop_per_s(_INTENSITY, spec, dtype), color=FLOOR_COLOUR
    )
    ridge = spec.critical_intensity(dtype)
    ax.axvline(ridge, color="grey", linestyle=":")
    ax.annotate(
        f"ridge {ridge:.0f} FLOP/B",
        (ridge, spec.peak(dtype)),
        textcoords="offset points",
        xytext=(5, -14),
        fontsize=8,
    )
    ax.set(
        xlabel="arithmetic intensity (FLOP per byte)",
        ylabel="attainable FLOP/s",
        title=f"{spec.name} roofline, {dtype} (dense peak)",
    )
    return figure


class RooflineExplorer:
    """Two panels for one chip and model: the roofline with the decode step's operating
    point, and compute vs memory time against batch. ``update`` moves every artist in
    place, so a redraw costs one render instead of a new figure."""

    def __init__(self) -> None:
        # 80 dpi, no minor ticks and a layout computed once keep a redraw near 40 ms.
        self.figure = Figure(figsize=(10.0, 4.0), dpi=80, layout="constrained")
        self._canvas = FigureCanvasAgg(self.figure)
        self._laid_out = False
        self.ax_roof, self.ax_time = self.figure.subplots(1, 2)
        (self.roof_line,) = self.ax_roof.loglog([], [], color=FLOOR_COLOUR, label="roofline")
        (self.roof_point,) = self.ax_roof.plot([], [], "o", color=COMPUTE_COLOUR, markersize=8)
        self.ridge_line = self.ax_roof.axvline(1.0, color="grey", linestyle=":")
        (self.compute_line,) = self.ax_time.loglog(
            [], [], color=COMPUTE_COLOUR, label="compute time"
        )
        (self.memory_line,) = self.ax_time.plot(
            [], [], color=MEMORY_COLOUR, label="weight-read time"
        )
        (self.floor_line,) = self.ax_time.plot(
            [], [], color=FLOOR_COLOUR, linestyle="--", linewidth=1, label="floor = max"
        )
        (self.time_point,) = self.ax_time.plot([], [], "o", color=COMPUTE_COLOUR, markersize=8)
        self.critical_line = self.ax_time.axvline(1.0, color="grey", linestyle=":")
        self.ax_roof.set(xlabel="arithmetic intensity (FLOP/byte)", ylabel="attainable FLOP/s")
        self.ax_time.set(xlabel="batch (tokens per step)", ylabel="time per decode step (s)")
        self.ax_time.legend(loc="upper left", fontsize=8)
        self.ax_roof.set_xlim(_INTENSITY[0], _INTENSITY[-1])
        self.ax_time.set_xlim(_SWEEP[0], _SWEEP[-1])
        for ax in (self.ax_roof, self.ax_time):
            ax.xaxis.set_minor_locator(NullLocator())
            ax.yaxis.set_minor_locator(NullLocator())
            ax.grid(True, which="major", alpha=0.3)

    def update(
        self,
        chip: str | Chip = "H100",
        model: str | ModelConfig = "Llama-3-70B",
        batch: float = 1,
        compute_dtype: str = "bf16",
        weight_dtype: str | None = None,
    ) -> None:
        spec, model_spec = get_chip(chip), get_model(model)
        weights = weight_dtype or compute_dtype
        curve = np.asarray(roofline.attainable_flop_per_s(_INTENSITY, spec, compute_dtype))
        self.roof_line.set_data(_INTENSITY, curve)
        self.ridge_line.set_xdata([spec.critical_intensity(compute_dtype)] * 2)
        sweep = roofline.decode_weight_time(model_spec, _SWEEP, spec, compute_dtype, weights)
        self.compute_line.set_data(_SWEEP, sweep.compute_s)
        self.memory_line.set_data(_SWEEP, sweep.memory_s)
        self.floor_line.set_data(_SWEEP, sweep.lower_s)
        point = roofline.decode_weight_time(model_spec, batch, spec, compute_dtype, weights)
        flops = point.compute_s * spec.peak(compute_dtype)
        intensity = flops / (point.memory_s * spec.hbm_bandwidth_bytes_per_s)
        achieved = flops / point.lower_s
        self.roof_point.set_data([intensity], [achieved])
        self.time_point.set_data([batch], [point.lower_s])
        critical = roofline.critical_batch(spec, compute_dtype, weights)
        self.critical_line.set_xdata([critical] * 2)
        bound = "compute-bound" if point.compute_bound else "memory-bound"
        self.ax_roof.set_ylim(curve.min() / 2, spec.peak(compute_dtype) * 3)
        self.ax_roof.set_title(
            f"{spec.name}, {compute_dtype} FLOPs, {weights} weights", fontsize=10
        )
        self.ax_time.set_ylim(sweep.compute_s.min() / 2, sweep.upper_s.max() * 2)
        self.ax_time.set_title(
            f"{model_spec.name}, batch {batch:g}: {1e3 * float(point.lower_s):.3g} ms ({bound})",
            fontsize=10,
        )
        if not self._laid_out:  # freeze the constrained layout after the first full draw
            self._canvas.draw()  # type: ignore[no-untyped-call]
            self.figure.set_layout_engine("none")
            self._laid_out = True

    def png(self, colours: int = 32) -> bytes:
        """The figure as PNG bytes, palette-reduced: ~5 KB a frame, no visible loss."""
        return figure_png(self.figure, colours)


def explorer_figure(**settings: object) -> Figure:
    """The explorer's figure for one setting (see :meth:`RooflineExplorer.update`)."""
    explorer = RooflineExplorer()
    explorer.update(**settings)  # type: ignore[arg-type]
    return explorer.figure


def machine_roofline(result: MachineRoofline, ax: Axes | None = None) -> Figure:
    """The reader's machine: its measured roofline, and each measured matmul placed on it."""
    figure, ax = figure_and_axes(ax)
    intensity = np.logspace(-1, 3, 100)
    ceiling = np.minimum(result.peak_flop_per_s, intensity * result.bandwidth_bytes_per_s)
    ax.loglog(intensity, ceiling, color=FLOOR_COLOUR, label="roofline from measured peaks")
    ax.plot(
        result.sweep_intensity,
        result.sweep_achieved_flop_per_s,
        "o",
        color=COMPUTE_COLOUR,
        label=f"measured [B, {result.sweep_dim}] x [{result.sweep_dim}, {result.sweep_dim}]",
    )
    for batch, x, y in zip(
        result.sweep_batch, result.sweep_intensity, result.sweep_achieved_flop_per_s, strict=True
    ):
        ax.annotate(f"B={batch:g}", (x, y), textcoords="offset points", xytext=(3, -10), fontsize=7)
    ax.set(
        xlabel="arithmetic intensity (FLOP per byte, float32)",
        ylabel="FLOP/s",
        title="your machine's roofline (float32, numpy)",
    )
    ax.legend(fontsize=8, loc="lower right")
    return figure

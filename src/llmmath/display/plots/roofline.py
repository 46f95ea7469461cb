"""Figures of the roofline chapter."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from llmmath.core import roofline
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.measure import MachineRoofline
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.units import general
from llmmath.display.plots.common import (
    COMPUTE_COLOUR,
    FLOOR_COLOUR,
    MEMORY_COLOUR,
    FastFigure,
    figure_and_axes,
    mark_curves,
    snap_log_limits,
)


class RooflinePanel:
    """A chip's roofline on one axes: attainable FLOP/s against arithmetic intensity, the
    ridge point dotted."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        (self.line,) = ax.loglog([], [], color=FLOOR_COLOUR, label="roofline")
        self.ridge_line = ax.axvline(1.0, color="grey", linestyle=":")
        intensities = roofline.CURVE_INTENSITIES
        ax.set_xlim(intensities[0], intensities[-1])
        ax.set(xlabel="arithmetic intensity (FLOP per byte)", ylabel="attainable FLOP/s")

    def show(self, curve: roofline.RooflineCurve) -> None:
        self.line.set_data(curve.intensity, curve.attainable_flop_per_s)
        self.ridge_line.set_xdata([curve.ridge_intensity] * 2)
        low = curve.attainable_flop_per_s.min() / 2
        self.ax.set_ylim(*snap_log_limits(low, curve.peak_flop_per_s * 3))


def roofline_curve(chip: str | Chip, dtype: str = "bf16", ax: Axes | None = None) -> Figure:
    """Attainable FLOP/s against arithmetic intensity, ridge point marked."""
    figure, ax = figure_and_axes(ax)
    spec = get_chip(chip)
    curve = roofline.roofline_curve(spec, dtype)
    RooflinePanel(ax).show(curve)
    ax.annotate(
        f"ridge {curve.ridge_intensity:.0f} FLOP/B",
        (curve.ridge_intensity, curve.peak_flop_per_s),
        textcoords="offset points",
        xytext=(5, -14),
        fontsize=8,
    )
    ax.set_title(f"{spec.name} roofline, {dtype} (dense peak)")
    return figure


class RooflineExplorer(FastFigure):
    """Two panels for one chip and model: the roofline with the decode step's operating
    point, and compute vs memory time against batch. Moving the batch redraws only the two
    markers and the readout; changing chip, model or number format redraws the rest."""

    def __init__(self) -> None:
        super().__init__(figsize=(10.0, 4.0), ncols=2)
        self.ax_roof, self.ax_time = self.axes
        self.roof = RooflinePanel(self.ax_roof)
        (self.compute_line,) = self.ax_time.loglog(
            [], [], color=COMPUTE_COLOUR, label="compute time"
        )
        (self.memory_line,) = self.ax_time.plot(
            [], [], color=MEMORY_COLOUR, label="weight-read time"
        )
        mark_curves(self.compute_line, self.memory_line)
        (self.floor_line,) = self.ax_time.plot(
            [], [], color=FLOOR_COLOUR, linestyle="--", linewidth=1, label="floor = max"
        )
        self.critical_line = self.ax_time.axvline(1.0, color="grey", linestyle=":")
        self.roof_point = self.marker(self.ax_roof)
        self.time_point = self.marker(self.ax_time)
        self.readout = self.corner_readout(self.ax_time)
        self.ax_time.set(xlabel="batch (tokens per step)", ylabel="time per decode step (s)")
        self.ax_time.legend(loc="upper left", fontsize=8)
        self.ax_time.set_xlim(roofline.CURVE_BATCHES[0], roofline.CURVE_BATCHES[-1])

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
        if self.new_scene((spec, model_spec, compute_dtype, weights)):
            self._draw_scene(spec, model_spec, compute_dtype, weights)
        point = roofline.decode_point(model_spec, batch, spec, compute_dtype, weights)
        self.roof_point.set_data([point.intensity], [point.attainable_flop_per_s])
        self.time_point.set_data([batch], [point.time_s])
        bound = "compute-bound" if point.compute_bound else "memory-bound"
        self.readout.set_text(f"batch {batch:g}: {general(1e3 * point.time_s)} ms, {bound}")

    def _draw_scene(self, spec: Chip, model: ModelConfig, compute: str, weights: str) -> None:
        self.roof.show(roofline.roofline_curve(spec, compute))
        sweep = roofline.decode_time_curves(model, spec, compute, weights)
        self.compute_line.set_data(sweep.batch, sweep.compute_s)
        self.memory_line.set_data(sweep.batch, sweep.memory_s)
        self.floor_line.set_data(sweep.batch, sweep.lower_s)
        self.critical_line.set_xdata([sweep.critical_batch] * 2)
        self.ax_roof.set_title(f"{spec.name}, {compute} FLOPs, {weights} weights", fontsize=10)
        self.ax_time.set_ylim(*snap_log_limits(sweep.compute_s.min() / 2, sweep.upper_s.max() * 2))
        self.ax_time.set_title(f"{model.name}: one decode step on one chip", fontsize=10)


def machine_roofline(result: MachineRoofline, ax: Axes | None = None) -> Figure:
    """The reader's machine: its measured roofline, and each measured matmul placed on it."""
    figure, ax = figure_and_axes(ax)
    ceiling = result.roofline
    ax.loglog(
        ceiling.intensity,
        ceiling.attainable_flop_per_s,
        color=FLOOR_COLOUR,
        label="roofline from measured peaks",
    )
    best = result.sweep_achieved_flop_per_s
    shape = f"[B, {result.sweep_dim}] x [{result.sweep_dim}, {result.sweep_dim}]"
    typical = result.sweep_typical_flop_per_s
    if typical is None:
        ax.plot(result.sweep_intensity, best, "o", color=COMPUTE_COLOUR, label=f"{shape}")
    else:  # the spread: a bar from the best run down to the median one
        ax.errorbar(
            result.sweep_intensity,
            best,
            yerr=[best - typical, np.zeros_like(best)],
            fmt="o",
            color=COMPUTE_COLOUR,
            capsize=2,
            label=f"{shape}: best run, bar down to the median",
        )
    for batch, x, y in zip(
        result.sweep_batch, result.sweep_intensity, result.sweep_achieved_flop_per_s, strict=True
    ):
        ax.annotate(f"B={batch:g}", (x, y), textcoords="offset points", xytext=(3, -10), fontsize=7)
    ax.set(
        xlabel="arithmetic intensity (FLOP per byte, float32)",
        ylabel="FLOP/s",
        title=f"your machine's roofline (float32, numpy{_threads(result.blas_threads)})",
    )
    ax.legend(fontsize=8, loc="lower right")
    return figure


def _threads(count: int | None) -> str:
    return "" if count is None else f", {count} BLAS thread" + ("s" if count > 1 else "")

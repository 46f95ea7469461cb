"""Figures of the mixture-of-experts chapter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, ScalarFormatter

from llmmath import moe
from llmmath.core import racks, roofline
from llmmath.core._checks import positive
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, get_model, weight_params_read
from llmmath.core.units import general
from llmmath.display.plots.common import (
    COMPUTE_COLOUR,
    FLOOR_COLOUR,
    MEMORY_COLOUR,
    FastFigure,
    figure_and_axes,
    mark_curves,
    no_minor_ticks,
    plain_axes,
    snap_log_limits,
)

COMMS_COLOUR = "#7570b3"
SPILL_COLOUR = "#e7298a"
_BATCH_SWEEP = np.logspace(0, np.log10(2.0**17), 120)
_MODEL_COLOURS = ("#1f78b4", "#e6ab02", "#666666", "#a6761d")


def _seconds(value: float, _position: object = None) -> str:
    """A tick label for a time in seconds, in the unit that reads best (no mathtext)."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if value >= scale * 0.999:
            return f"{general(value / scale)} {unit}"
    return f"{value:.0e} s"


def _tokens(value: float, _position: object = None) -> str:
    """A tick label for a token count: 1, 10, 100, 1k, 10k, 100k."""
    return f"{value / 1e3:g}k" if value >= 1e3 else f"{value:g}"


def _batch_axis(ax: Axes) -> None:
    ax.xaxis.set_major_locator(FixedLocator([10.0**i for i in range(6)]))
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens))


def _time_axis(ax: Axes) -> None:
    """Log time axis with a few decade ticks in s/ms/us: cheap to draw, easy to read."""
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=7))
    ax.yaxis.set_major_formatter(FuncFormatter(_seconds))


# ---- why bigger batches ---------------------------------------------------------------------
def weights_read_figure(
    models: Sequence[str | ModelConfig] = ("Mixtral-8x7B", "DeepSeek-V3"),
    chip: str | Chip = "H100",
) -> Figure:
    """Left: share of a model's matmul weights one decode step reads, against the batch, with
    the two batch-independent shortcuts (only the active weights; every expert). Right: the
    step's compute and weight-read time on ``chip`` for the last model, with the exact
    compute-bound batch and the two "critical batch x sparsity" rules."""
    figure = Figure(figsize=(10.0, 4.0), dpi=100, layout="constrained")
    ax_read, ax_time = figure.subplots(1, 2)
    specs = [get_model(m) for m in models]
    chip_spec = get_chip(chip)
    expected = []
    for spec, colour in zip(specs, _MODEL_COLOURS, strict=False):
        every = float(np.asarray(weight_params_read(spec, 1e9)))
        share = weight_params_read(spec, _BATCH_SWEEP) / every
        label = f"{spec.name}: expected"
        expected += ax_read.semilogx(_BATCH_SWEEP, share, color=colour, label=label)
        ax_read.axhline(
            spec.matmul_params_per_token / every,
            color=colour,
            linestyle=":",
            label=f"{spec.name}: active only",
        )
    ax_read.axhline(1.0, color=FLOOR_COLOUR, linestyle="--", linewidth=1, label="every expert")
    mark_curves(*expected)
    ax_read.set(
        xlabel="batch B (tokens per step)",
        ylabel="share of matmul weights read per step",
        ylim=(0, 1.08),
        title="uniform routing: reads grow with the batch",
    )
    ax_read.legend(fontsize=7, loc="center right")

    spec = specs[-1]
    step = roofline.decode_weight_time(spec, _BATCH_SWEEP, chip_spec)
    mark_curves(
        *ax_time.loglog(_BATCH_SWEEP, step.compute_s, color=COMPUTE_COLOUR, label="compute time"),
        *ax_time.loglog(_BATCH_SWEEP, step.memory_s, color=MEMORY_COLOUR, label="weight-read time"),
    )
    exact = moe.compute_bound_batch(spec, chip_spec)
    by_params = moe.compute_bound_batch_rule(spec, chip_spec, "params")
    by_experts = moe.compute_bound_batch_rule(spec, chip_spec, "experts")
    for x, style, label in (
        (exact, "-", f"crossing {exact:,.0f}"),
        (by_params, ":", f"B* x total/active = {by_params:,.0f}"),
        (by_experts, "--", f"B* x E/k = {by_experts:,.0f}"),
    ):
        ax_time.axvline(x, color="grey", linestyle=style, linewidth=1, label=label)
    ax_time.set(
        xlabel="batch B (tokens per step)",
        ylabel="time per decode step (s)",
        title=f"{spec.name} on one {chip_spec.name} (floors)",
    )
    ax_time.legend(fontsize=7, loc="upper left")
    for ax in (ax_read, ax_time):
        plain_axes(ax)
        _batch_axis(ax)
    _time_axis(ax_time)
    return figure


# ---- the rack boundary ----------------------------------------------------------------------
class EPWidthPanel:
    """Time per MoE layer per GPU against the expert-parallel width G on one axes: the
    experts' compute and weight read fall like 1/G; the all-to-all jumps where G leaves the
    scale-up domain (shaded)."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        (self.compute_line,) = ax.loglog([], [], color=COMPUTE_COLOUR, label="compute")
        (self.read_line,) = ax.plot([], [], color=MEMORY_COLOUR, label="weight read")
        (self.a2a_line,) = ax.plot([], [], color=COMMS_COLOUR, label="all-to-all")
        # A marker at each width, one shape per line: told apart without colour.
        mark_curves(self.compute_line, self.read_line, self.a2a_line, every=None, size=3.5)
        self.spill = ax.axvspan(1.0, 2.0, color=SPILL_COLOUR, alpha=0.08)
        self.domain_line = ax.axvline(1.0, color=SPILL_COLOUR, linestyle=":", linewidth=1)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        plain_axes(ax)
        ax.set(xlabel="expert-parallel width G (GPUs)", ylabel="time per MoE layer, per GPU (s)")

    @property
    def lines(self) -> tuple[Line2D, Line2D, Line2D]:
        return self.compute_line, self.read_line, self.a2a_line

    def show_domain(self, domain: racks.ScaleUpDomain, widths: Sequence[int]) -> None:
        """The widths on the axis, and the share beyond ``domain`` shaded."""
        top = max(float(widths[-1]), 2.0)
        spills = domain.n_chips < top
        self.spill.set_x(domain.n_chips * 1.0001 if spills else top * 2)
        self.spill.set_width(top * 4)
        self.domain_line.set_xdata([float(domain.n_chips)] * 2)
        self.domain_line.set_visible(spills)
        self.ax.set_xlim(widths[0] / 1.3, top * 1.3)
        ticks = [float(w) for w in widths if w in (1, *_powers_of_two(top))]
        self.ax.xaxis.set_major_locator(FixedLocator(ticks))

    def show(self, curves: moe.EPWidthCurves) -> None:
        self.compute_line.set_data(curves.width, curves.compute_s)
        self.read_line.set_data(curves.width, curves.weight_read_s)
        spread = curves.width > 1  # log axes cannot show the zero all-to-all of G = 1
        self.a2a_line.set_data(curves.width[spread], curves.all_to_all_s[spread])


def ep_width_axes(
    model: str | ModelConfig,
    batch: float,
    chip: str | Chip | racks.ScaleUpDomain,
    ax: Axes | None = None,
) -> Figure:
    """One domain's :class:`EPWidthPanel` for ``model`` at ``batch`` (widths G > 1)."""
    figure, ax = figure_and_axes(ax)
    spec, domain = get_model(model), racks.get_domain(chip)
    widths = [G for G in moe.ep_widths(spec.n_experts) if G > 1]
    panel = EPWidthPanel(ax)
    panel.show_domain(domain, widths)
    panel.show(moe.ep_width_curves(spec, batch, domain.chip, widths))
    ax.relim()  # set_data does not move the data limits
    ax.autoscale_view(scalex=False)
    ax.set_title(f"{domain.name}: {spec.name}, B = {batch:,.0f}")
    ax.legend(fontsize=7, loc="lower left")
    _time_axis(ax)
    return figure


def rack_boundary_figure(
    model: str | ModelConfig = "DeepSeek-V3",
    batch: float = 8192,
    domains: Sequence[str] = ("HGX H100 (8 GPUs)", "GB200 NVL72 (72 GPUs)"),
) -> Figure:
    """:func:`ep_width_axes` side by side for several domains, on one time axis."""
    figure = Figure(figsize=(5.0 * len(domains), 4.0), dpi=100, layout="constrained")
    axes = figure.subplots(1, len(domains), sharey=True, squeeze=False)[0]
    for ax, domain in zip(axes, domains, strict=True):
        ep_width_axes(model, batch, domain, ax=ax)
    return figure


class MoEExplorer(FastFigure):
    """Two panels for one MoE layer shape on one domain. Left: per-GPU time of compute,
    weight read and all-to-all against the EP width at the chosen batch, the scale-out
    region shaded and the chosen width ringed. Right: the same three against the batch at
    the chosen width, with the batch where the experts turn compute-bound.

    The scene (domain, experts, top-k, EP width, formats) is drawn once; moving the batch
    redraws only the left panel's three curves, the two rings and the readout. The left
    panel's time axis spans ``batch_range`` so that the curves of every batch fit on it."""

    def __init__(self, batch_range: tuple[float, float] = (1.0, 2.0**17)) -> None:
        super().__init__(figsize=(10.0, 4.0), ncols=2)
        self.ax_width, self.ax_batch = self.axes
        low, high = (float(b) for b in batch_range)
        self.batch_range = (low, high)
        self.sweep = _BATCH_SWEEP
        # the scene: redrawn only when new_scene() says so
        self.widths = EPWidthPanel(self.ax_width)
        (self.batch_compute,) = self.ax_batch.loglog([], [], color=COMPUTE_COLOUR, label="compute")
        (self.batch_read,) = self.ax_batch.plot([], [], color=MEMORY_COLOUR, label="weight read")
        (self.batch_a2a,) = self.ax_batch.plot([], [], color=COMMS_COLOUR, label="all-to-all")
        mark_curves(self.batch_compute, self.batch_read, self.batch_a2a)
        self.bound_line = self.ax_batch.axvline(1.0, color="grey", linestyle="--", linewidth=1)
        # what one batch changes: blitted over the scene
        for line in self.widths.lines:
            self.dynamic(line)
        ring: dict[str, Any] = {
            "marker": "o",
            "markersize": 11,
            "markerfacecolor": "none",
            "linestyle": "",
        }
        self.width_point = self.dynamic(self.ax_width.plot([], [], color=FLOOR_COLOUR, **ring)[0])
        self.batch_point = self.dynamic(self.ax_batch.plot([], [], color=FLOOR_COLOUR, **ring)[0])
        self.readout = self.corner_readout(self.ax_batch, fontsize=9)
        self.ax_width.set_ylabel("per GPU per layer (s)")
        self.ax_batch.set(
            xlabel="batch B (tokens per step, whole group)", ylabel="per GPU per layer (s)"
        )
        self.ax_width.legend(fontsize=7, loc="lower left")
        self.ax_batch.set_xlim(_BATCH_SWEEP[0], _BATCH_SWEEP[-1])
        _batch_axis(self.ax_batch)
        for ax in (self.ax_width, self.ax_batch):
            _time_axis(ax)
            no_minor_ticks(ax)  # loglog() above put them back

    def update(
        self,
        domain: str | Chip | racks.ScaleUpDomain = "GB200 NVL72 (72 GPUs)",
        n_experts: int = 256,
        experts_per_token: int = 8,
        batch: float = 4096,
        ep_width: int | None = None,
        model: str | ModelConfig = "DeepSeek-V3",
        activation_dtype: str = "bf16",
        weight_dtype: str = "bf16",
    ) -> None:
        """Redraw for a layer of ``model``'s shape re-cut into ``n_experts`` experts, top-k
        ``experts_per_token``, on ``domain``; ``ep_width`` defaults to the widest that fits."""
        where = racks.get_domain(domain)
        spec = moe.with_experts(model, n_experts, experts_per_token)
        G = moe.max_ep_width(n_experts, where) if ep_width is None else ep_width
        knobs = {"activation_dtype": activation_dtype, "weight_dtype": weight_dtype}
        widths = moe.ep_widths(n_experts, 4096)
        if self.new_scene((where, spec, G, activation_dtype, weight_dtype)):
            self._draw_scene(where, spec, G, widths, knobs)
        B = float(positive("batch", batch))
        curves = moe.ep_width_curves(spec, B, where, widths, **knobs)
        self.widths.show(curves)
        i = widths.index(G)
        self.width_point.set_data([float(G)], [float(curves.lower_s[i])])
        self.batch_point.set_data([B], [float(curves.lower_s[i])])
        self.readout.set_text(
            f"B={B:,.0f}: all-to-all {_seconds(float(curves.all_to_all_s[i]))}, "
            f"compute {_seconds(float(curves.compute_s[i]))}, "
            f"read {_seconds(float(curves.weight_read_s[i]))}"
        )

    def _draw_scene(
        self,
        where: racks.ScaleUpDomain,
        spec: ModelConfig,
        G: int,
        widths: list[int],
        knobs: dict[str, str],
    ) -> None:
        self.widths.show_domain(where, widths)
        # the time axis holds every batch of the range at every width
        ends = np.asarray(self.batch_range)
        extremes = [moe.expert_parallel_step(spec, ends, w, where, **knobs) for w in widths]
        floor = min(float(np.min(e.compute_s)) for e in extremes)
        a2a = [float(np.min(e.all_to_all_s)) for e in extremes[1:]]
        floor = min([floor, *a2a])
        ceiling = max(float(np.max(e.upper_s)) for e in extremes)
        self.ax_width.set_ylim(*snap_log_limits(max(floor, 1e-12) / 2, ceiling * 2))
        fits = "in one domain" if where.n_chips >= G else "across domains"
        self.ax_width.set_title(
            f"{where.name}: E={spec.n_experts}, top-{spec.experts_per_token}", fontsize=9, y=1.0
        )

        sweep = moe.expert_parallel_step(spec, self.sweep, G, where, **knobs)
        self.batch_compute.set_data(self.sweep, sweep.compute_s)
        self.batch_read.set_data(self.sweep, sweep.weight_read_s)
        self.batch_a2a.set_data(self.sweep, np.maximum(sweep.all_to_all_s, 1e-15))
        bound = moe.compute_bound_batch(
            spec, where.chip, "expert_layer", weight_dtype=knobs["weight_dtype"]
        )
        self.bound_line.set_xdata([bound] * 2)
        curves = np.concatenate([sweep.compute_s, sweep.weight_read_s])
        self.ax_batch.set_ylim(
            *snap_log_limits(float(np.min(curves)) / 3, float(np.max(curves)) * 10)
        )
        self.ax_batch.set_title(
            f"EP={G}, {fits}: compute-bound above B~{bound:,.0f}", fontsize=9, y=1.0
        )


def _powers_of_two(top: float) -> list[int]:
    return [2**i for i in range(1, int(np.log2(top)) + 1)]

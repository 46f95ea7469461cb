"""Figures of the batching chapter: the cost-per-token hyperbola, the latency-throughput
trade-off, and prefill against decode. The hyperbola and the trade-off are each drawn by one
panel class, used both by the lesson's figure and by the explorer; the curves come from
:func:`llmmath.batching.cost_curves`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Annotation
from matplotlib.ticker import FixedLocator, FuncFormatter

from llmmath import batching
from llmmath.batching import CURVE_BATCHES, CostCurves
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.placement import DoesNotFitError
from llmmath.core.units import general
from llmmath.display.plots.common import (
    COMPUTE_COLOUR,
    FLOOR_COLOUR,
    KV_COLOUR,
    MEMORY_COLOUR,
    WARNING_COLOUR,
    FastFigure,
    end_label,
    figure_and_axes,
    mark_curves,
    plain_axes,
    snap_log_limits,
)

#: Batches marked on the latency-throughput curves.
LABELLED_BATCHES = (1.0, 64.0, 256.0, 1024.0, 4096.0)
#: One colour per context of the latency-throughput curves.
CONTEXT_COLOURS = ("#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#e6ab02")
_FIRST, _LAST = float(CURVE_BATCHES[0]), float(CURVE_BATCHES[-1])


def _gb(size_bytes: float) -> str:
    return (
        f"{size_bytes / 1e9:,.0f} GB" if size_bytes >= 1e10 else f"{general(size_bytes / 1e9)} GB"
    )


def _milliseconds_log_x(ax: Axes) -> None:
    """A log time axis labelled 1, 2, 5, 10, 20, 50 ... ms rather than powers of ten."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator([m * 10.0**e for e in range(-1, 4) for m in (1, 2, 5)]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))


class CostPanel:
    """The cost-per-token hyperbola on one axes: the weight-read share falls like 1/B onto the
    floor set by the FLOPs and the KV reads; the shaded batches do not fit in HBM."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        (self.weights_line,) = ax.loglog([], [], color=MEMORY_COLOUR, label="weight read / B")
        (self.flops_line,) = ax.plot([], [], color=COMPUTE_COLOUR, label="matmul FLOPs")
        (self.kv_line,) = ax.plot([], [], color=KV_COLOUR, label="KV read")
        (self.total_line,) = ax.plot([], [], color=FLOOR_COLOUR, linewidth=2.2, label="step total")
        mark_curves(self.weights_line, self.flops_line, self.kv_line)  # the total: thick, plain
        self.critical_line = ax.axvline(1.0, color="grey", linestyle=":")
        self.full_span = ax.axvspan(1.0, 2.0, color="grey", alpha=0.15, lw=0)
        self.full_text = ax.annotate(
            "KV caches\ndo not fit",
            (1.0, 1.0),
            textcoords="offset points",
            xytext=(6, -4),
            fontsize=8,
            va="top",
        )
        ax.set_xlim(0.8 * _FIRST, _LAST)  # room for a marker at B = 1
        plain_axes(ax)
        ax.set(
            xlabel="batch B (sequences per step)", ylabel="USD per million output tokens (floor)"
        )

    def show(self, curves: CostCurves, context: float) -> None:
        B = curves.batch
        self.weights_line.set_data(B, curves.weights)
        self.flops_line.set_data(B, curves.matmul_flops)
        self.kv_line.set_data(B, curves.kv)
        self.kv_line.set_visible(context > 0)
        self.total_line.set_data(B, curves.total)
        self.critical_line.set_xdata([curves.critical_batch] * 2)
        start = min(curves.max_batch, _LAST)
        self.full_span.set_x(start)
        self.full_span.set_width(_LAST - start)
        self.full_text.xy = (start, float(curves.total[0]))
        self.full_text.set_visible(start < _LAST)
        parts = [curves.total.min(), curves.matmul_flops.min()]
        if context:
            parts.append(curves.kv.min())
        self.ax.set_ylim(*snap_log_limits(min(parts) / 2, curves.total.max() * 3))

    def clear(self) -> None:
        for line in (self.weights_line, self.flops_line, self.kv_line, self.total_line):
            line.set_data([], [])
        for artist in (self.critical_line, self.full_span, self.full_text):
            artist.set_visible(False)

    def reveal(self) -> None:
        for artist in (self.critical_line, self.full_span):
            artist.set_visible(True)


class ParetoPanel:
    """Latency against throughput on one axes: one curve per context, each point a batch (some
    labelled), and the two latency floors (weights / bandwidth, a full HBM / bandwidth)."""

    def __init__(self, ax: Axes, n_contexts: int = 1) -> None:
        self.ax = ax
        colours = CONTEXT_COLOURS[:n_contexts]
        self.lines = [ax.plot([], [], color=c)[0] for c in colours]
        self.dots = [ax.plot([], [], "o", color=c, markersize=4)[0] for c in colours]
        self.weight_floor_line = ax.axvline(1.0, color=FLOOR_COLOUR, linestyle="--", linewidth=1)
        self.hbm_floor_line = ax.axvline(1.0, color=FLOOR_COLOUR, linestyle=":", linewidth=1)
        self.floor_texts = [
            ax.annotate(
                text,
                (1.0, 0.0),
                xycoords=("data", "axes fraction"),
                textcoords="offset points",
                xytext=(3, 4),
                fontsize=7,
                rotation=90,
            )
            for text in ("weights / bandwidth", "full HBM / bandwidth")
        ]
        self.batch_labels: list[Annotation] = []
        self.end_labels: list[Annotation] = []
        ax.set_yscale("log")
        _milliseconds_log_x(ax)
        ax.set(xlim=(1.0, 100.0), ylim=(1.0, 1e4))  # until the first show()
        plain_axes(ax)
        ax.set(xlabel="time per output token, per user (ms)", ylabel="output tokens/s per chip")

    def show(self, curves: Sequence[CostCurves], contexts: Sequence[float]) -> None:
        for label in (*self.batch_labels, *self.end_labels):
            label.remove()
        self.batch_labels, self.end_labels = [], []
        for line, dots, curve, context in zip(self.lines, self.dots, curves, contexts, strict=True):
            ms, throughput = 1e3 * curve.time_s, curve.tokens_per_s_per_chip
            line.set_data(ms, throughput)
            line.set_label(f"context {context:g} (B ≤ {min(curve.max_batch, _LAST):,.0f} fit)")
            marks = np.isin(curve.batch, LABELLED_BATCHES)
            dots.set_data(ms[marks], throughput[marks])
            for b, x, y in zip(curve.batch[marks], ms[marks], throughput[marks], strict=True):
                self.batch_labels.append(self._batch_label(b, x, y, line.get_color()))
            if len(self.lines) > 1:  # named where it ends, not by colour alone
                label = end_label(self.ax, line, f"T = {context:,.0f}", xytext=(-2, 3))
                self.end_labels.append(label)
        first = curves[0]
        for line, text, floor_s in zip(
            (self.weight_floor_line, self.hbm_floor_line),
            self.floor_texts,
            (first.weight_floor_s, first.hbm_floor_s),
            strict=True,
        ):
            line.set_xdata([1e3 * floor_s] * 2)
            text.xy = (1e3 * floor_s, 0.0)
        slowest = max(max(float(c.time_s.max()) for c in curves), first.hbm_floor_s)
        low = min(float(c.tokens_per_s_per_chip.min()) for c in curves)
        high = max(float(c.tokens_per_s_per_chip.max()) for c in curves)
        self.ax.set_xlim(*snap_log_limits(0.8e3 * first.weight_floor_s, 1.25e3 * slowest, 3))
        self.ax.set_ylim(*snap_log_limits(low / 2, high * 2))

    def _batch_label(self, batch: float, x: float, y: float, colour: object) -> Annotation:
        return self.ax.annotate(
            f"{batch:g}",
            (x, y),
            textcoords="offset points",
            xytext=(4, -9),
            fontsize=7,
            color=colour,
        )

    def clear(self) -> None:
        for line in (*self.lines, *self.dots):
            line.set_data([], [])
        for label in (*self.batch_labels, *self.end_labels):
            label.remove()
        self.batch_labels, self.end_labels = [], []
        for artist in (self.weight_floor_line, self.hbm_floor_line, *self.floor_texts):
            artist.set_visible(False)

    def reveal(self) -> None:
        for artist in (self.weight_floor_line, self.hbm_floor_line, *self.floor_texts):
            artist.set_visible(True)


def cost_per_token_figure(
    deployments: Deployment | Sequence[Deployment],
    context: float = 2048,
    usd_per_chip_hour: float | None = None,
) -> Figure:
    """The cost-per-token hyperbola, one panel per deployment, parts drawn separately."""
    setups = [deployments] if isinstance(deployments, Deployment) else list(deployments)
    figure = Figure(figsize=(5.2 * len(setups), 4.0), dpi=100, layout="constrained")
    axes = figure.subplots(1, len(setups), squeeze=False)[0]
    for ax, setup in zip(axes, setups, strict=True):
        CostPanel(ax).show(batching.cost_curves(setup, context, usd_per_chip_hour), context)
        ax.set_title(f"{setup.label}, context {context:g}")
    axes[0].legend(fontsize=8, loc="lower left")
    return figure


def pareto_figure(
    deployment: Deployment,
    contexts: Sequence[float] = (512, 2048, 8192),
    ax: Axes | None = None,
) -> Figure:
    """Latency against throughput: each batch a point, one curve per context, and the two
    latency floors (weights / bandwidth, a full HBM / bandwidth)."""
    figure, ax = figure_and_axes(ax)
    panel = ParetoPanel(ax, len(contexts))
    panel.show(
        [batching.cost_curves(deployment, T, usd_per_chip_hour=1.0) for T in contexts], contexts
    )
    ax.set_title(f"{deployment.label}: each point a batch size")
    ax.legend(handles=panel.lines, fontsize=8, loc="lower right")
    return figure


def critical_context_figure(
    deployment: Deployment, contexts: Sequence[float] = (256, 1024, 2048, 8192)
) -> Figure:
    """Where the cost per token stops falling. Left: the step's cost against the batch at
    each context, marked where the step turns compute-bound (``B*(T)``) or the HBM fills.
    Right: ``B*(T)`` and the most sequences that fit against the context, with ``T_c``."""
    figure = Figure(figsize=(10.4, 4.0), dpi=100, layout="constrained")
    left, right = figure.subplots(1, 2)
    lines = []
    for context, colour in zip(contexts, CONTEXT_COLOURS, strict=False):
        curves = batching.cost_curves(deployment, context)
        label = f"context {context:,.0f}"
        lines += left.loglog(curves.batch, curves.total, color=colour, label=label)
        end = float(curves.batch[-1])
        if curves.compute_batch <= end:  # compute-bound from here: flat
            at = np.interp(curves.compute_batch, curves.batch, curves.total)
            left.plot([curves.compute_batch], [at], "o", color=colour, markersize=6)
        else:  # still memory-bound where the HBM fills
            left.plot([end], [float(curves.total[-1])], "x", color=colour, markersize=8, mew=2)
    mark_curves(*lines)
    plain_axes(left)
    left.set(
        xlabel="batch B (sequences per step)",
        ylabel="USD per million output tokens (floor)",
        title="cost per token: ● compute-bound from here, × HBM full",
    )
    left.legend(fontsize=8, loc="lower left")
    curve = batching.critical_batch_curve(deployment)
    finite = np.isfinite(curve.compute_batch)
    (compute_line,) = right.loglog(
        np.maximum(curve.context[finite], 1.0),
        curve.compute_batch[finite],
        color=COMPUTE_COLOUR,
        linestyle="-",  # solid: the dashed line of this panel is T_c
        label="B*(T): compute-bound from this batch",
    )
    fit = np.isfinite(curve.max_batch) & (curve.max_batch >= 1)
    (fit_line,) = right.plot(
        curve.context[fit],
        curve.max_batch[fit],
        color=MEMORY_COLOUR,
        linestyle="-",
        label="sequences that fit",
    )
    mark_curves(compute_line, fit_line)
    right.axhline(
        curve.critical_batch,
        color="grey",
        linestyle=":",
        linewidth=1,
        label=f"C b_w / 2W = {curve.critical_batch:,.0f} (weights only)",
    )
    if np.isfinite(curve.critical_context):
        right.axvline(curve.critical_context, color=FLOOR_COLOUR, linestyle="--", linewidth=1)
        right.annotate(
            f"T_c = {curve.critical_context:,.0f}",
            (curve.critical_context, 0.02),
            xycoords=("data", "axes fraction"),
            textcoords="offset points",
            xytext=(-4, 0),
            ha="right",
            fontsize=8,
        )
    plain_axes(right)
    right.set(
        xlabel="context T (tokens)",
        ylabel="batch (sequences)",
        title=f"{deployment.label}: B*(T) against the HBM",
    )
    right.legend(fontsize=8, loc="upper right")
    return figure


def prefill_decode_figure(
    deployment: Deployment, context: float = 2048, ax: Axes | None = None
) -> Figure:
    """MFU of one forward pass against the tokens in it: a prefill of S prompt tokens, and a
    decode step of B sequences at ``context`` (stopping where their KV caches fill the HBM)."""
    figure, ax = figure_and_axes(ax)
    curves = batching.pass_curves(deployment, context)
    (prefill_line,) = ax.semilogx(
        curves.prompt_tokens, curves.prefill_mfu, color=COMPUTE_COLOUR, label="prefill of S tokens"
    )
    (decode_line,) = ax.plot(
        curves.batch,
        curves.decode_mfu,
        color=MEMORY_COLOUR,
        label=f"decode step of B sequences, context {context:g}",
    )
    mark_curves(prefill_line, decode_line)
    ax.axvline(curves.critical_batch, color="grey", linestyle=":")
    ax.set_ylim(0, 1.05)
    plain_axes(ax)
    ax.set(
        xlabel="tokens in one forward pass (S for prefill, B for decode)",
        ylabel="MFU at the floor",
        title=f"{deployment.label}: prefill against decode",
    )
    ax.legend(fontsize=8, loc="upper left")
    return figure


class BatchingExplorer(FastFigure):
    """Two panels for one deployment: the cost hyperbola (parts and total) with the chosen
    batch, and the latency-throughput curve at the chosen context. Moving the batch redraws
    only the two markers and the readout; any other control redraws the curves."""

    def __init__(self) -> None:
        super().__init__(figsize=(10.0, 4.0), ncols=2)
        self.ax_cost, self.ax_pareto = self.axes
        self.cost = CostPanel(self.ax_cost)
        self.ax_cost.legend(loc="lower left", fontsize=8)
        self.pareto = ParetoPanel(self.ax_pareto)
        self.message = self.warning_message()
        self.cost_point = self.marker(self.ax_cost)
        self.pareto_point = self.marker(self.ax_pareto)
        self.readout = self.title_readout(self.ax_cost)
        self.deployment: Deployment | None = None
        self.context = 0.0
        self.usd_per_chip_hour: float | None = None

    def update(
        self,
        model: str | ModelConfig = "Llama-3-70B",
        chip: str | Chip = "H100",
        n_chips: int = 8,
        batch: float = 1,
        context: float = 2048,
        flops_efficiency: float = 1.0,
        bandwidth_efficiency: float = 1.0,
        usd_per_chip_hour: float | None = None,
    ) -> None:
        spec, chip_spec = get_model(model), get_chip(chip)
        scene = (spec, chip_spec, n_chips, context, flops_efficiency, bandwidth_efficiency)
        if self.new_scene((*scene, usd_per_chip_hour)):
            self._draw_scene(*scene, usd_per_chip_hour)
        self._draw_batch(batch)

    def _draw_batch(self, batch: float) -> None:
        if self.deployment is None:  # nothing fits: the scene says why
            self.readout.set_text("")
            return
        try:
            step = serving.decode_step(self.deployment, batch, self.context)
        except DoesNotFitError as error:  # a result, drawn (CONTRIBUTING "Refusals")
            self.cost_point.set_data([], [])
            self.pareto_point.set_data([], [])
            self.readout.set_text(
                f"batch {batch:g} does not fit: {_gb(error.missing_bytes)} missing"
            )
            self.readout.set_color(WARNING_COLOUR)
            return
        cost = float(step.cost_per_million_tokens_usd(self.usd_per_chip_hour))
        self.cost_point.set_data([batch], [cost])
        self.pareto_point.set_data([1e3 * float(step.time_s)], [float(step.tokens_per_s_per_chip)])
        bound = "compute-bound" if step.compute_bound else "memory-bound"
        time_ms = 1e3 * float(step.time_s)
        self.readout.set_text(
            f"batch {batch:g}: ${general(cost)} per M tokens, {general(time_ms)} ms ({bound})"
        )
        self.readout.set_color("black")

    def _draw_scene(
        self,
        model: ModelConfig,
        chip: Chip,
        n_chips: int,
        context: float,
        flops_efficiency: float,
        bandwidth_efficiency: float,
        usd_per_chip_hour: float | None,
    ) -> None:
        self.context, self.usd_per_chip_hour = context, usd_per_chip_hour
        try:
            deployment = Deployment(
                model,
                chip,
                n_chips,
                flops_efficiency=flops_efficiency,
                bandwidth_efficiency=bandwidth_efficiency,
            )
        except DoesNotFitError as error:  # a result, drawn (CONTRIBUTING "Refusals")
            self._clear(
                f"{model.name} does not fit on {n_chips} × {chip.name}:\n"
                f"{_gb(error.missing_bytes)} of weights missing"
            )
            return
        if capacity.max_batch(deployment, context) < 1:
            self._clear(f"not one sequence of context {context:g} fits beside the weights")
            return
        self.deployment = deployment
        self.message.set_text("")
        self.cost.reveal()
        self.pareto.reveal()
        curves = batching.cost_curves(deployment, context, usd_per_chip_hour)
        self.cost.show(curves, context)
        self.pareto.show([curves], [context])
        self.ax_pareto.set_title(
            f"{deployment.label}, context {context:g}: "
            f"floor {general(1e3 * curves.weight_floor_s)} ms",
            fontsize=10,
        )

    def _clear(self, text: str) -> None:
        self.deployment = None
        self.cost.clear()
        self.pareto.clear()
        for point in (self.cost_point, self.pareto_point):
            point.set_data([], [])
        self.message.set_text(text)
        self.ax_pareto.set_title(" ", fontsize=10)  # not "": the frozen layout keeps title room

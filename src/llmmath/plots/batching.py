"""Figures of the batching chapter: the cost-per-token hyperbola, the latency-throughput
trade-off, and prefill against decode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter

from .. import batching
from .._checks import FloatArray
from ..batching import Deployment, DoesNotFitError
from ..hardware import Chip, get_chip
from ..models import ModelConfig, get_model
from .common import (
    COMPUTE_COLOUR,
    FLOOR_COLOUR,
    KV_COLOUR,
    MEMORY_COLOUR,
    WARNING_COLOUR,
    FastFigure,
    figure_and_axes,
    no_minor_ticks,
    plain_axes,
)

#: Batches the curves are drawn at: 1 ... 4096 sequences, log-spaced.
SWEEP = np.unique(np.round(np.logspace(0, np.log10(4096), 121)))
#: Batches marked on the latency-throughput curves.
LABELLED_BATCHES = (1.0, 64.0, 256.0, 1024.0, 4096.0)
#: Tokens in one forward pass for the prefill figure: 1 ... 8192.
PASS_TOKENS = np.unique(np.round(np.logspace(0, np.log10(8192), 121)))


@dataclass(frozen=True)
class CostCurves:
    """Cost per million output tokens over :data:`SWEEP`, whole and by part, where it fits."""

    batch: FloatArray
    #: Each part costed as if it alone set the step time: weights / B is the hyperbola.
    weights: FloatArray
    matmul_flops: FloatArray
    kv: FloatArray
    total: FloatArray
    time_s: FloatArray
    tokens_per_s_per_chip: FloatArray
    max_batch: float
    critical_batch: float


def cost_curves(
    deployment: Deployment, context: float, usd_per_chip_hour: float | None = None
) -> CostCurves:
    """The cost of each part of a decode step per million tokens, for batches that fit."""
    max_batch = float(batching.max_batch(deployment, context))
    batch = SWEEP[max_batch >= SWEEP]
    step = batching.decode_step(deployment, batch, context)
    price = (
        batching.example_price(deployment.chip).usd_per_chip_hour
        if usd_per_chip_hour is None
        else usd_per_chip_hour
    )

    def cost(time_s: FloatArray) -> FloatArray:
        n = deployment.n_chips
        return np.asarray(batching.cost_per_million_tokens_usd(time_s, batch, n, price))

    return CostCurves(
        batch=batch,
        weights=cost(step.weight_read_s),
        matmul_flops=cost(step.matmul_compute_s),
        kv=cost(np.maximum(step.kv_read_s, step.attention_compute_s)),
        total=cost(step.time_s),
        time_s=step.time_s,
        tokens_per_s_per_chip=step.tokens_per_s_per_chip,
        max_batch=max_batch,
        critical_batch=batching.step_critical_batch(deployment),
    )


def _gb(size_bytes: float) -> str:
    return f"{size_bytes / 1e9:,.0f} GB" if size_bytes >= 1e10 else f"{size_bytes / 1e9:.3g} GB"


def _milliseconds_log_x(ax: Axes) -> None:
    """A log time axis labelled 1, 2, 5, 10, 20, 50 ... ms rather than powers of ten."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator([m * 10.0**e for e in range(-1, 4) for m in (1, 2, 5)]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))


def draw_cost_per_token(
    ax: Axes, deployment: Deployment, context: float, usd_per_chip_hour: float | None = None
) -> CostCurves:
    """One panel of the hyperbola: the weight-read share falls like 1/B onto the floor set by
    the FLOPs and the KV reads; the shaded batches do not fit in HBM."""
    curves = cost_curves(deployment, context, usd_per_chip_hour)
    B = curves.batch
    ax.loglog(B, curves.weights, color=MEMORY_COLOUR, label="weight read / B")
    ax.plot(B, curves.matmul_flops, color=COMPUTE_COLOUR, label="matmul FLOPs")
    if context > 0:
        ax.plot(B, curves.kv, color=KV_COLOUR, label=f"KV read (T = {context:g})")
    ax.plot(B, curves.total, color=FLOOR_COLOUR, linewidth=2.2, label="step total")
    ax.axvline(curves.critical_batch, color="grey", linestyle=":")
    if curves.max_batch < SWEEP[-1]:
        ax.axvspan(curves.max_batch, SWEEP[-1], color="grey", alpha=0.15, lw=0)
        ax.annotate(
            "KV caches\ndo not fit",
            (curves.max_batch, curves.total[0]),
            textcoords="offset points",
            xytext=(6, -4),
            fontsize=8,
            va="top",
        )
    ax.set_xlim(SWEEP[0], SWEEP[-1])
    plain_axes(ax)
    ax.set(
        xlabel="batch B (sequences per step)",
        ylabel="USD per million output tokens (floor)",
        title=f"{deployment.label}, context {context:g}",
    )
    return curves


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
        draw_cost_per_token(ax, setup, context, usd_per_chip_hour)
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
    colours = ("#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#e6ab02")
    for colour, context in zip(colours, contexts, strict=False):
        curves = cost_curves(deployment, context, usd_per_chip_hour=1.0)
        ax.plot(
            1e3 * curves.time_s,
            curves.tokens_per_s_per_chip,
            color=colour,
            label=f"context {context:g} (B ≤ {min(curves.max_batch, SWEEP[-1]):,.0f} fit)",
        )
        marks = np.isin(curves.batch, LABELLED_BATCHES)
        ax.plot(
            1e3 * curves.time_s[marks],
            curves.tokens_per_s_per_chip[marks],
            "o",
            color=colour,
            markersize=4,
        )
        for b, x, y in zip(
            curves.batch[marks],
            curves.time_s[marks],
            curves.tokens_per_s_per_chip[marks],
            strict=True,
        ):
            ax.annotate(
                f"{b:g}",
                (1e3 * x, y),
                textcoords="offset points",
                xytext=(4, -9),
                fontsize=7,
                color=colour,
            )
    weight_floor = batching.weight_floor_s(deployment)
    hbm_floor = batching.hbm_floor_s(deployment.chip, deployment.bandwidth_efficiency)
    ax.axvline(1e3 * weight_floor, color=FLOOR_COLOUR, linestyle="--", linewidth=1)
    ax.axvline(1e3 * hbm_floor, color=FLOOR_COLOUR, linestyle=":", linewidth=1)
    ax.set_yscale("log")
    _milliseconds_log_x(ax)
    bottom = ax.get_ylim()[0]
    for x, text in ((weight_floor, "weights / bandwidth"), (hbm_floor, "full HBM / bandwidth")):
        ax.annotate(
            text,
            (1e3 * x, bottom),
            textcoords="offset points",
            xytext=(3, 4),
            fontsize=7,
            rotation=90,
        )
    ax.set_xlim(left=0.8e3 * weight_floor)
    plain_axes(ax)
    ax.set(
        xlabel="time per output token, per user (ms)",
        ylabel="output tokens/s per chip",
        title=f"{deployment.label}: each point a batch size",
    )
    ax.legend(fontsize=8, loc="lower right")
    return figure


def prefill_decode_figure(
    deployment: Deployment, context: float = 2048, ax: Axes | None = None
) -> Figure:
    """MFU of one forward pass against the tokens in it: a prefill of P prompt tokens, and a
    decode step of B sequences at ``context`` (stopping where their KV caches fill the HBM)."""
    figure, ax = figure_and_axes(ax)
    pre = batching.prefill(deployment, PASS_TOKENS[deployment.model.max_context >= PASS_TOKENS])
    ax.semilogx(
        pre.prompt_tokens,
        batching.mfu(pre.flops, pre.time_s, deployment),
        color=COMPUTE_COLOUR,
        label="prefill of P tokens",
    )
    room = float(batching.max_batch(deployment, context))
    batch = PASS_TOKENS[room >= PASS_TOKENS]
    step = batching.decode_step(deployment, batch, context)
    ax.plot(
        batch,
        batching.mfu(step.flops, step.time_s, deployment),
        color=MEMORY_COLOUR,
        label=f"decode step of B sequences, context {context:g}",
    )
    ax.axvline(batching.step_critical_batch(deployment), color="grey", linestyle=":")
    ax.set_ylim(0, 1.05)
    plain_axes(ax)
    ax.set(
        xlabel="tokens in one forward pass (P for prefill, B for decode)",
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
        ax = self.ax_cost
        (self.weights_line,) = ax.loglog([], [], color=MEMORY_COLOUR, label="weight read / B")
        (self.flops_line,) = ax.plot([], [], color=COMPUTE_COLOUR, label="matmul FLOPs")
        (self.kv_line,) = ax.plot([], [], color=KV_COLOUR, label="KV read")
        (self.total_line,) = ax.plot([], [], color=FLOOR_COLOUR, linewidth=2.2, label="total")
        self.critical_line = ax.axvline(1.0, color="grey", linestyle=":")
        self.full_span = ax.axvspan(1.0, 2.0, color="grey", alpha=0.15, lw=0)
        ax.set(xlim=(0.8 * SWEEP[0], SWEEP[-1]), ylim=(1e-2, 1e2))  # room for the B = 1 marker
        ax.set(xlabel="batch B (sequences per step)", ylabel="USD per million output tokens")
        ax.legend(loc="upper right", fontsize=8)
        ax = self.ax_pareto
        (self.pareto_line,) = ax.plot([], [], color=KV_COLOUR)
        self.weight_floor_line = ax.axvline(
            1.0, color=FLOOR_COLOUR, linestyle="--", lw=1, label="weights / bandwidth"
        )
        self.hbm_floor_line = ax.axvline(
            1.0, color=FLOOR_COLOUR, linestyle=":", lw=1, label="full HBM / bandwidth"
        )
        ax.set_yscale("log")
        _milliseconds_log_x(ax)
        ax.set(xlim=(1.0, 100.0), ylim=(1.0, 1e4))  # until the first scene sets them
        ax.set(xlabel="time per output token (ms)", ylabel="output tokens/s per chip")
        ax.legend(loc="lower right", fontsize=8)
        self.message = self.warning_message()
        self.cost_point = self.marker(self.ax_cost)
        self.pareto_point = self.marker(self.ax_pareto)
        self.readout = self.title_readout(self.ax_cost)
        for axes in self.axes:  # setting a log scale brought back the minor ticks
            no_minor_ticks(axes)
        self._furniture = (
            self.critical_line,
            self.full_span,
            self.weight_floor_line,
            self.hbm_floor_line,
        )
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
            step = batching.decode_step(self.deployment, batch, self.context)
        except DoesNotFitError as error:
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
            f"batch {batch:g}: ${cost:.3g} per M tokens, {time_ms:.3g} ms ({bound})"
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
        except DoesNotFitError as error:
            self._clear(
                f"{model.name} does not fit on {n_chips} × {chip.name}:\n"
                f"{_gb(error.missing_bytes)} of weights missing"
            )
            return
        if batching.max_batch(deployment, context) < 1:
            self._clear(f"not one sequence of context {context:g} fits beside the weights")
            return
        self.deployment = deployment
        self.message.set_text("")
        for artist in self._furniture:
            artist.set_visible(True)
        curves = cost_curves(deployment, context, usd_per_chip_hour)
        B = curves.batch
        self.weights_line.set_data(B, curves.weights)
        self.flops_line.set_data(B, curves.matmul_flops)
        self.kv_line.set_data(B, curves.kv)
        self.total_line.set_data(B, curves.total)
        self.critical_line.set_xdata([curves.critical_batch] * 2)
        start = min(curves.max_batch, SWEEP[-1])
        self.full_span.set_x(start)
        self.full_span.set_width(SWEEP[-1] - start)
        self.pareto_line.set_data(1e3 * curves.time_s, curves.tokens_per_s_per_chip)
        weight_floor = batching.weight_floor_s(deployment)
        hbm_floor = batching.hbm_floor_s(deployment.chip, bandwidth_efficiency)
        self.weight_floor_line.set_xdata([1e3 * weight_floor] * 2)
        self.hbm_floor_line.set_xdata([1e3 * hbm_floor] * 2)
        parts = [curves.total.min(), curves.matmul_flops.min()]
        if context:
            parts.append(curves.kv.min())
        self.ax_cost.set_ylim(min(parts) / 2, curves.total.max() * 3)
        throughput = curves.tokens_per_s_per_chip
        slowest = max(curves.time_s.max(), hbm_floor)
        self.ax_pareto.set_xlim(0.8e3 * weight_floor, 1.25e3 * slowest)
        self.ax_pareto.set_ylim(throughput.min() / 2, throughput.max() * 2)
        self.ax_pareto.set_title(
            f"{deployment.label}, context {context:g}: floor {1e3 * weight_floor:.3g} ms",
            fontsize=10,
        )

    def _clear(self, text: str) -> None:
        self.deployment = None
        for line in (
            self.weights_line,
            self.flops_line,
            self.kv_line,
            self.total_line,
            self.cost_point,
            self.pareto_point,
            self.pareto_line,
        ):
            line.set_data([], [])
        for artist in self._furniture:
            artist.set_visible(False)
        self.message.set_text(text)
        self.ax_pareto.set_title(" ", fontsize=10)  # not "": the frozen layout keeps title room


def explorer_figure(**settings: object) -> Figure:
    """The explorer's figure for one setting (see :meth:`BatchingExplorer.update`)."""
    explorer = BatchingExplorer()
    explorer.update(**settings)  # type: ignore[arg-type]
    return explorer.as_figure()

"""Figures of the KV-cache chapter: KV bytes per token by attention kind, the capacity wall
(batch x context), the bandwidth wall (step time against context) and the "which tier?" map."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from llmmath import kv_cache, memory_tiers
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import ModelConfig, get_model, list_models
from llmmath.core.placement import DoesNotFitError
from llmmath.core.units import general
from llmmath.display.plots.common import (
    COMPUTE_COLOUR,
    FLOOR_COLOUR,
    KV_COLOUR,
    MEMORY_COLOUR,
    WARNING_COLOUR,
    FastFigure,
    figure_and_axes,
    mark_curves,
    plain_axes,
    snap_log_limits,
)

#: One colour per option of the tier map: HBM, host DRAM, local NVMe, networked disk, recompute.
OPTION_COLOURS = ("#d95f02", "#e6ab02", "#66a61e", "#1f78b4", "#bbbbbb")
OPTION_LABELS = {
    "HBM": "HBM",
    "host_DRAM": "host DRAM",
    "local_NVMe": "local NVMe",
    "networked_disk": "networked disk",
    kv_cache.RECOMPUTE: "recompute (prefill)",
}
HOLDS_S, REUSES = kv_cache.MAP_HOLDS_S, kv_cache.MAP_REUSES
CONTEXTS = kv_cache.CURVE_CONTEXTS


def kv_per_token_figure(
    models: Sequence[str] | None = None, dtype: str = "bf16", ax: Axes | None = None
) -> Figure:
    """KV bytes per token of each model (filled), and what it would be as MHA (outline):
    the gap is what GQA, MQA or MLA saves. By default every preset whose every layer caches
    and reads every token (a sliding window's, a hybrid's and a sparse model's read depends
    on the context: :func:`llmmath.display.plots.kv_read.read_per_token_figure`)."""
    figure, ax = figure_and_axes(ax)
    every = [name for name in list_models() if _every_layer_reads_every_token(get_model(name))]
    names = list(models) if models is not None else every
    y = np.arange(len(names))
    actual = [get_model(n).kv_bytes_per_token(dtype) for n in names]
    as_mha = [kv_cache.mha_kv_bytes_per_token(n, dtype) for n in names]
    ax.barh(y, as_mha, color="none", edgecolor=FLOOR_COLOUR, label="if it were MHA (K = N)")
    ax.barh(y, actual, color=KV_COLOUR, label="as built")
    for i, name in enumerate(names):
        kind = get_model(name).attention_kind
        ax.annotate(
            f"{actual[i] / 1e3:,.0f} kB ({kind})",
            (actual[i], i),
            textcoords="offset points",
            xytext=(4, -3),
            fontsize=8,
        )
    ax.set_xscale("log")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    plain_axes(ax)
    ax.set(xlabel=f"KV-cache bytes per token of context ({dtype})", title="KV cache per token")
    ax.legend(fontsize=8, loc="lower right")
    return figure


def _every_layer_reads_every_token(model: ModelConfig) -> bool:
    return kv_cache.attention_design(model) in ("MHA", "MQA", "GQA", "MLA")


class CapacityPanel:
    """The capacity wall on one axes: the largest batch that fits against the context, one
    curve per deployment, with each one's weights-only critical batch ``C b_w / 2W`` (dotted):
    no batch below it is compute-bound, and past ``T_c`` none above it is either."""

    def __init__(self, ax: Axes, colours: Sequence[str] = (KV_COLOUR,)) -> None:
        self.ax = ax
        self.lines = [ax.loglog([], [], color=c)[0] for c in colours]
        self.critical_lines = [
            ax.axhline(1.0, color=c, linestyle=":", linewidth=1) for c in colours
        ]
        if len(self.lines) > 1:  # told apart without colour
            mark_curves(*self.lines)
        plain_axes(ax)
        ax.set(xlabel="context T (tokens per sequence)", ylabel="largest batch that fits")

    def show(self, curves: Sequence[kv_cache.CapacityCurve], labels: Sequence[str]) -> None:
        for line, critical, curve, label in zip(
            self.lines, self.critical_lines, curves, labels, strict=True
        ):
            line.set_data(curve.context, curve.max_batch)
            line.set_label(label)
            critical.set_ydata([curve.critical_batch] * 2)
            critical.set_visible(True)
        longest = max(float(c.context[-1]) for c in curves if c.context.size)
        self.ax.relim()  # set_data does not move the data limits
        self.ax.autoscale_view(scalex=False)
        self.ax.set_xlim(CONTEXTS[0], max(longest, 1024.0))

    def clear(self) -> None:
        for line in self.lines:
            line.set_data([], [])
        for critical in self.critical_lines:
            critical.set_visible(False)


class StepTimePanel:
    """The bandwidth wall on one axes: decode step time against context, one curve per batch
    (dotted where the KV caches no longer fit, a cross where the KV read overtakes the weight
    read), and the weight read for scale (dashed)."""

    def __init__(self, ax: Axes, colours: Sequence[str] = (FLOOR_COLOUR,)) -> None:
        self.ax = ax
        self.lines = [ax.plot([], [], color=c)[0] for c in colours]
        self.overflow = [ax.plot([], [], color=c, linestyle=":", linewidth=1)[0] for c in colours]
        self.crosses = [ax.plot([], [], "x", color=c, markersize=8)[0] for c in colours]
        if len(self.lines) > 1:  # told apart without colour, a curve's overflow marked alike
            mark_curves(*self.lines)
            mark_curves(*self.overflow)
        self.weight_line = ax.axhline(1.0, color=FLOOR_COLOUR, linestyle="--", linewidth=1)
        self.weight_text = ax.annotate(
            "weights / bandwidth",
            (0.0, 1.0),
            xycoords=("axes fraction", "data"),
            xytext=(2, 3),
            textcoords="offset points",
            fontsize=7,
        )
        ax.set_xscale("log")
        plain_axes(ax)
        ax.set(xlabel="context T (tokens per sequence)", ylabel="decode step time (ms, floor)")

    def show(self, curves: Sequence[kv_cache.StepTimeCurve], weight_read_s: float) -> None:
        for line, over, cross, curve in zip(
            self.lines, self.overflow, self.crosses, curves, strict=True
        ):
            fits, ms = np.asarray(curve.fits, dtype=bool), 1e3 * curve.time_s
            line.set_data(curve.context[fits], ms[fits])
            line.set_label(f"B = {curve.batch:g}")
            over.set_data(curve.context[~fits], ms[~fits])
            cross.set_data([curve.crossover_context], [1e3 * curve.crossover_s])
        self.weight_line.set_ydata([1e3 * weight_read_s] * 2)
        self.weight_text.xy = (0.0, 1e3 * weight_read_s)
        longest = max(float(c.context[-1]) for c in curves)
        self.ax.relim()  # set_data does not move the data limits
        self.ax.autoscale_view(scalex=False)
        self.ax.set_xlim(CONTEXTS[0], max(longest, 1024.0))

    def clear(self) -> None:
        for line in (*self.lines, *self.overflow, *self.crosses):
            line.set_data([], [])


def capacity_figure(
    deployments: Deployment | Sequence[Deployment], ax: Axes | None = None
) -> Figure:
    """The capacity wall of each deployment (see :class:`CapacityPanel`)."""
    figure, ax = figure_and_axes(ax)
    setups = [deployments] if isinstance(deployments, Deployment) else list(deployments)
    panel = CapacityPanel(ax, (KV_COLOUR, MEMORY_COLOUR, COMPUTE_COLOUR, "#e7298a")[: len(setups)])
    panel.show(
        [kv_cache.capacity_curve(dep) for dep in setups],
        [f"{dep.label} ({dep.weight_dtype})" for dep in setups],
    )
    ax.set_title("The capacity wall: B × T × KV ≤ HBM − weights")
    ax.legend(fontsize=8, loc="lower left")
    return figure


def step_time_figure(
    deployment: Deployment, batches: Sequence[float] = (1, 16, 64), ax: Axes | None = None
) -> Figure:
    """The bandwidth wall at a few batches (see :class:`StepTimePanel`)."""
    figure, ax = figure_and_axes(ax)
    colours = (MEMORY_COLOUR, KV_COLOUR, COMPUTE_COLOUR, "#e7298a")[: len(batches)]
    panel = StepTimePanel(ax, colours)
    panel.show(
        [kv_cache.step_time_curve(deployment, B) for B in batches],
        capacity.weight_floor_s(deployment),
    )
    ax.set_ylim(bottom=0)
    ax.set_title(f"{deployment.label}: step time against context")
    ax.legend(handles=panel.lines, fontsize=8, loc="upper left")
    return figure


def _option_cmap() -> tuple[ListedColormap, BoundaryNorm]:
    cmap = ListedColormap(list(OPTION_COLOURS))
    return cmap, BoundaryNorm(np.arange(-0.5, len(OPTION_COLOURS)), cmap.N)


class TierMapPanel:
    """The "which tier?" map on one axes: the cheapest option for each (hold time, reuses),
    with the 5 min / 1 h / 1 day marks and a legend of the options. The grid is fixed, so a
    new prefix or deployment only recolours the map (no artist is made again)."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        cmap, norm = _option_cmap()
        blank = np.zeros((len(REUSES), len(HOLDS_S)))
        self.mesh = ax.pcolormesh(HOLDS_S, REUSES, blank, cmap=cmap, norm=norm, shading="nearest")
        ax.set_xscale("log")
        ax.set_yscale("log")
        self.marks: list[Artist] = []
        for seconds, text in ((300, "5 min"), (3600, "1 h"), (86400, "1 day")):
            self.marks.append(ax.axvline(seconds, color="white", linewidth=0.8, linestyle="--"))
            self.marks.append(
                ax.annotate(
                    text,
                    (seconds, REUSES[-1]),
                    xytext=(2, -10),
                    textcoords="offset points",
                    fontsize=7,
                    color="black",
                )
            )
        self.options: tuple[str, ...] = ()
        plain_axes(ax)
        ax.set(xlabel="hold time t (s)", ylabel="expected reuses r")

    def show(self, pc: memory_tiers.PrefixCache) -> None:
        self.mesh.set_array(pc.cheapest)
        if tuple(pc.options) != self.options:  # a legend only for a new set of options
            self.options = tuple(pc.options)
            handles = [
                Patch(color=OPTION_COLOURS[i], label=OPTION_LABELS[name])
                for i, name in enumerate(pc.options)
            ]
            self.ax.legend(handles=handles, fontsize=7, loc="lower left", framealpha=0.9)
        self._shown(True)

    def clear(self) -> None:
        self._shown(False)

    def _shown(self, shown: bool) -> None:
        for artist in (self.mesh, *self.marks, self.ax.get_legend()):
            if artist is not None:
                artist.set_visible(shown)


def tier_map_figure(
    deployment: Deployment, prefix_tokens: float = 4096, ax: Axes | None = None
) -> Figure:
    """Which tier? The cheapest place for a cached prefix of ``prefix_tokens`` against hold
    time and expected reuses (keeping + reloading vs recomputing by prefill)."""
    figure, ax = figure_and_axes(ax)
    pc = kv_cache.tier_map(deployment, prefix_tokens)
    TierMapPanel(ax).show(pc)
    gb = float(pc.prefix_bytes.ravel()[0]) / 1e9
    ax.set_title(
        f"{deployment.label}: a {prefix_tokens:,.0f}-token prefix ({general(gb, 2)} GB)",
        fontsize=10,
    )
    return figure


# ---- the explorers ------------------------------------------------------------------------------
def past_window(model: ModelConfig, tokens: float, what: str) -> str:
    """A first line for a frame asked for more tokens than ``model`` reads (drawn at its
    longest context instead), else "": a frame names the state its control reads (#45)."""
    if tokens <= model.max_context:
        return ""
    longest = f"{model.name}'s {model.max_context:,} tokens"
    return f"{what} {tokens:,.0f} > {longest}: shown at its longest\n"


def _deployment(model: str | ModelConfig, n_chips: int, dtype: str) -> Deployment:
    return Deployment(
        get_model(model), get_chip("H100"), n_chips, weight_dtype=dtype, kv_dtype=dtype
    )


class KVCacheExplorer(FastFigure):
    """Two panels for a model on ``n`` H100s in one dtype (weights and KV): the capacity wall
    with the chosen (context, batch), and the step time against context at the chosen batch.
    Moving the context redraws only the markers and the readout."""

    def __init__(self) -> None:
        super().__init__(figsize=(10.0, 4.0), ncols=2)
        self.ax_room, self.ax_step = self.axes
        self.capacity = CapacityPanel(self.ax_room)
        self.batch_line = self.ax_room.axhline(1.0, color=COMPUTE_COLOUR, linewidth=0.8)
        self.ax_room.set(xlim=(CONTEXTS[0], CONTEXTS[-1]), ylim=(0.5, 1e5))
        self.ax_room.set_ylabel("batch B (sequences)")
        self.ax_room.legend(
            handles=[self.capacity.lines[0], self.capacity.critical_lines[0]],
            labels=["largest batch that fits", "C b_w / 2W: below it, memory-bound"],
            fontsize=8,
            loc="upper right",
        )
        self.steps = StepTimePanel(self.ax_step)
        self.steps.weight_text.set_text("weight read")
        (self.kv_line,) = self.ax_step.plot([], [], color=KV_COLOUR, label="KV read")
        mark_curves(self.kv_line)  # the step's line stays plain
        self.ax_step.set_yscale("log")
        self.ax_step.set(xlim=(CONTEXTS[0], CONTEXTS[-1]), ylim=(0.1, 1e3))
        self.ax_step.legend(
            handles=[self.steps.lines[0], self.kv_line], labels=["step", "KV read"], fontsize=8
        )
        self.message = self.warning_message()
        self.room_point = self.marker(self.ax_room)
        self.step_point = self.marker(self.ax_step)
        self.readout = self.title_readout(self.ax_room, fontsize=9)
        self.ax_step.set_title(" ", fontsize=10)
        for axes in self.axes:
            plain_axes(axes)
        self.deployment: Deployment | None = None
        self.batch = 1.0

    def update(
        self,
        model: str | ModelConfig = "Llama-3-70B",
        n_chips: int = 8,
        dtype: str = "bf16",
        batch: float = 16,
        context: float = 4096,
    ) -> None:
        spec = get_model(model)
        if self.new_scene((spec, n_chips, dtype, batch)):
            self._draw_scene(spec, n_chips, dtype, batch)
        self._draw_context(context)

    def _draw_scene(self, model: ModelConfig, n_chips: int, dtype: str, batch: float) -> None:
        self.batch = float(batch)
        try:
            dep = _deployment(model, n_chips, dtype)
        except DoesNotFitError as error:  # a result, drawn (CONTRIBUTING "Refusals")
            self.deployment = None
            self.capacity.clear()
            self.steps.clear()
            self.kv_line.set_data([], [])
            self.message.set_text(
                f"{model.name} in {dtype} does not fit on {n_chips} × H100:\n"
                f"{error.missing_bytes / 1e9:,.0f} GB of weights missing"
            )
            self.ax_step.set_title(" ", fontsize=10)
            self._show_scene(False)
            return
        self.deployment = dep
        self.message.set_text("")
        self._show_scene(True)
        self.capacity.show([kv_cache.capacity_curve(dep)], [""])
        self.batch_line.set_ydata([self.batch] * 2)
        step = kv_cache.step_time_curve(dep, self.batch)
        self.steps.show([step], float(step.weight_read_s[0]))
        self.kv_line.set_data(step.context, 1e3 * step.kv_read_s)
        low = 0.5e3 * min(float(np.min(step.kv_read_s)), float(np.min(step.weight_read_s)))
        self.ax_step.set_ylim(*snap_log_limits(low, 2e3 * float(np.max(step.time_s))))
        self.ax_step.set_title(
            f"{dep.label} ({dtype}), B = {self.batch:g}: KV = weights at T = "
            f"{step.crossover_context:,.0f}",
            fontsize=8,
        )

    def _show_scene(self, shown: bool) -> None:
        """Show the scene's lines, or (nothing fits) hide them on the axes' first limits:
        the figure then looks the same whatever was shown before."""
        for artist in (self.batch_line, self.steps.weight_line, self.steps.weight_text):
            artist.set_visible(shown)
        if not shown:
            self.ax_room.set(xlim=(CONTEXTS[0], CONTEXTS[-1]), ylim=(0.5, 1e5))
            self.ax_step.set(xlim=(CONTEXTS[0], CONTEXTS[-1]), ylim=(0.1, 1e3))

    def _draw_context(self, context: float) -> None:
        dep = self.deployment
        if dep is None:
            self.readout.set_text("")
            self.room_point.set_data([], [])
            self.step_point.set_data([], [])
            return
        T = min(float(context), float(dep.model.max_context))
        room = float(kv_cache.max_batch(dep, T))
        fits = self.batch <= room
        self.room_point.set_data([T], [self.batch])
        self.room_point.set_color(MEMORY_COLOUR if fits else WARNING_COLOUR)
        step = serving.decode_step(dep, self.batch, T, allow_overflow=True)
        self.step_point.set_data([T], [1e3 * float(step.time_s)])
        share = float(kv_cache.kv_read_share(dep, self.batch, T))
        verdict = "fits" if fits else "does not fit"
        self.readout.set_text(
            past_window(dep.model, float(context), "context")
            + f"T = {T:,.0f}: B = {self.batch:g} {verdict} (≤ {room:,.0f}); "
            f"step {general(1e3 * float(step.time_s))} ms, KV {share:.0%} of bytes"
        )
        self.readout.set_color("black" if fits else WARNING_COLOUR)


class TierExplorer(FastFigure):
    """The "which tier?" map for a prefix on a deployment, with the chosen (hold, reuses),
    and the cost of each option against hold time at those reuses. Moving the hold time
    redraws only the markers and the readout."""

    def __init__(self) -> None:
        super().__init__(figsize=(10.0, 4.0), ncols=2)
        self.ax_map, self.ax_cost = self.axes
        self.map = TierMapPanel(self.ax_map)
        self.option_lines = [
            self.ax_cost.loglog([], [], color=c, linewidth=2 if i < 4 else 2.5)[0]
            for i, c in enumerate(OPTION_COLOURS)
        ]
        mark_curves(*self.option_lines)
        self.ax_cost.set(
            xlim=(HOLDS_S[0], HOLDS_S[-1]),
            xlabel="hold time t (s)",
            ylabel="USD per prefix, all reuses",
        )
        self.map_point = self.dynamic(
            self.ax_map.plot([], [], "o", color="black", markerfacecolor="white", markersize=8)[0]
        )
        self.cost_marker = self.dynamic(self.ax_cost.axvline(1.0, color="black", linewidth=0.8))
        self.readout = self.title_readout(self.ax_map, fontsize=9)
        self.ax_cost.set_title(" ", fontsize=10)
        self.message = self.warning_message()
        self.deployment: Deployment | None = None
        self.prefix_tokens = 4096.0
        self.reuses = 1.0

    def update(
        self,
        model: str | ModelConfig = "Llama-3-70B",
        n_chips: int = 8,
        dtype: str = "bf16",
        prefix_tokens: float = 4096,
        hold_s: float = 60.0,
        reuses: float = 1.0,
    ) -> None:
        spec = get_model(model)
        if self.new_scene((spec, n_chips, dtype, prefix_tokens, reuses)):
            self._draw_scene(spec, n_chips, dtype, prefix_tokens, reuses)
        self._draw_hold(hold_s)

    def _draw_scene(
        self, model: ModelConfig, n_chips: int, dtype: str, prefix_tokens: float, reuses: float
    ) -> None:
        self.prefix_tokens, self.reuses = float(prefix_tokens), float(reuses)
        try:
            dep = _deployment(model, n_chips, dtype)
        except DoesNotFitError:  # a result, drawn (CONTRIBUTING "Refusals")
            self.deployment = None
            self.map.clear()
            self.message.set_text(f"{model.name} in {dtype} does not fit on {n_chips} × H100")
            for line in self.option_lines:
                line.set_data([], [])
            # The title names this setting, never the last one that fitted.
            self.ax_cost.set_title(
                f"{model.name} on {n_chips}×H100 ({dtype}): {self.prefix_tokens:,.0f} tokens, "
                f"r = {self.reuses:g}: does not fit",
                fontsize=9,
            )
            return
        self.deployment = dep
        self.message.set_text("")
        S = min(self.prefix_tokens, float(model.max_context))
        past = past_window(model, self.prefix_tokens, "prefix")
        self.prefix_tokens = S
        self.map.show(kv_cache.tier_map(dep, S))
        line_pc = memory_tiers.prefix_cache(dep, S, HOLDS_S, self.reuses)
        costs = line_pc.option_usd
        finite = costs[np.isfinite(costs)]
        for i, line in enumerate(self.option_lines):
            line.set_data(HOLDS_S, costs[:, i])
            line.set_label(OPTION_LABELS[line_pc.options[i]])
        # Whole decades: the reuses scale every cost, and a decade holds many of their moves.
        self.ax_cost.set_ylim(
            *snap_log_limits(max(float(finite.min()) / 3, 1e-12), float(finite.max()) * 3, 1)
        )
        labels = [line.get_label() for line in self.option_lines]
        legend = self.ax_cost.get_legend()
        if legend is None or [t.get_text() for t in legend.get_texts()] != labels:
            self.ax_cost.legend(fontsize=7, loc="upper left")  # new entries: a new background
        gb = S * dep.model.kv_bytes_per_token(dep.kv_dtype) / 1e9
        self.ax_cost.set_title(
            f"{past}{dep.label} ({dtype}): {S:,.0f} tokens = {general(gb)} GB, r = {self.reuses:g}",
            fontsize=9,
        )
        plain_axes(self.ax_cost)

    def _draw_hold(self, hold_s: float) -> None:
        dep = self.deployment
        if dep is None:
            self.readout.set_text("")
            self.map_point.set_data([], [])
            return
        pc = memory_tiers.prefix_cache(dep, self.prefix_tokens, hold_s, self.reuses)
        best = pc.cheapest_name()
        self.map_point.set_data([hold_s], [self.reuses])
        self.cost_marker.set_xdata([hold_s] * 2)
        i = pc.options.index(best)
        back = (
            f", back in {general(1e3 * float(pc.reload_s[i]))} ms"
            if i < len(pc.tiers)
            else f", prefill {general(1e3 * float(pc.recompute_s))} ms"
        )
        self.readout.set_text(
            f"hold {hold_s:g} s, r = {self.reuses:g}: {OPTION_LABELS[best]}, "
            f"${general(float(pc.cheapest_usd), 2)}{back}"
        )

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

from .. import batching, kv_cache
from .._checks import FloatArray
from ..batching import Deployment, DoesNotFitError
from ..hardware import get_chip
from ..models import ModelConfig, get_model, list_models
from .common import (
    COMPUTE_COLOUR,
    FLOOR_COLOUR,
    KV_COLOUR,
    MEMORY_COLOUR,
    WARNING_COLOUR,
    FastFigure,
    figure_and_axes,
    plain_axes,
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
#: Hold times (s) and expected reuses of the tier map, log-spaced.
HOLDS_S = np.logspace(-1, 7, 81)
REUSES = np.logspace(-1, 3, 41)
#: Contexts of the capacity and step-time curves: 128 ... 131,072 tokens.
CONTEXTS = np.unique(np.round(np.logspace(np.log10(128), np.log10(131072), 121)))


def _contexts(model: ModelConfig) -> FloatArray:
    return CONTEXTS[model.max_context >= CONTEXTS]


def kv_per_token_figure(
    models: Sequence[str] | None = None, dtype: str = "bf16", ax: Axes | None = None
) -> Figure:
    """KV bytes per token of each model (filled), and what it would be as MHA (outline):
    the gap is what GQA, MQA or MLA saves."""
    figure, ax = figure_and_axes(ax)
    names = list(models) if models is not None else list_models()
    y = np.arange(len(names))
    actual = [kv_cache.kv_bytes_per_token(n, dtype) for n in names]
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


def capacity_figure(
    deployments: Deployment | Sequence[Deployment], ax: Axes | None = None
) -> Figure:
    """The capacity wall: the largest batch that fits against the context, one curve per
    deployment, with each one's critical batch (dotted) for scale."""
    figure, ax = figure_and_axes(ax)
    setups = [deployments] if isinstance(deployments, Deployment) else list(deployments)
    colours = (KV_COLOUR, MEMORY_COLOUR, COMPUTE_COLOUR, "#e7298a")
    for colour, dep in zip(colours, setups, strict=False):
        T = _contexts(dep.model)
        room = np.asarray(kv_cache.max_batch(dep, T))
        label = f"{dep.label} ({dep.weight_dtype})"
        ax.loglog(T[room >= 1], room[room >= 1], color=colour, label=label)
        ax.axhline(batching.step_critical_batch(dep), color=colour, linestyle=":", linewidth=1)
    plain_axes(ax)
    ax.set(
        xlabel="context T (tokens per sequence)",
        ylabel="largest batch that fits",
        title="The capacity wall: B × T × KV ≤ HBM − weights",
    )
    ax.legend(fontsize=8, loc="lower left")
    return figure


def _draw_step_times(ax: Axes, dep: Deployment, batch: float, colour: str) -> None:
    T = _contexts(dep.model)
    step = batching.decode_step(dep, batch, T, allow_overflow=True)
    fits = np.asarray(step.fits, dtype=bool)
    ms = 1e3 * np.asarray(step.time_s)
    ax.plot(T[fits], ms[fits], color=colour, label=f"B = {batch:g}")
    ax.plot(T[~fits], ms[~fits], color=colour, linestyle=":", linewidth=1)


def step_time_figure(
    deployment: Deployment, batches: Sequence[float] = (1, 16, 64), ax: Axes | None = None
) -> Figure:
    """The bandwidth wall: decode step time against context at a few batches (dotted where the
    KV caches no longer fit), with the weight read for scale; crosses mark where the KV read
    overtakes the weight read."""
    figure, ax = figure_and_axes(ax)
    colours = (MEMORY_COLOUR, KV_COLOUR, COMPUTE_COLOUR, "#e7298a")
    for colour, B in zip(colours, batches, strict=False):
        _draw_step_times(ax, deployment, B, colour)
        cross = float(kv_cache.kv_crossover_context(deployment, B))
        if cross <= deployment.model.max_context:
            at = batching.decode_step(deployment, B, cross, allow_overflow=True)
            ax.plot([cross], [1e3 * float(at.time_s)], "x", color=colour, markersize=8)
    weight_ms = 1e3 * batching.weight_floor_s(deployment)
    ax.axhline(weight_ms, color=FLOOR_COLOUR, linestyle="--", linewidth=1)
    ax.annotate(
        "weights / bandwidth",
        (CONTEXTS[0], weight_ms),
        xytext=(2, 3),
        textcoords="offset points",
        fontsize=7,
    )
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    plain_axes(ax)
    ax.set(
        xlabel="context T (tokens per sequence)",
        ylabel="decode step time (ms, floor)",
        title=f"{deployment.label}: step time against context",
    )
    ax.legend(fontsize=8, loc="upper left")
    return figure


def tier_map(
    deployment: Deployment, prefix_tokens: float, usd_per_chip_hour: float | None = None
) -> kv_cache.PrefixCache:
    """The prefix cache over the map's grid: reuses on axis 0, hold times on axis 1."""
    return kv_cache.prefix_cache(
        deployment,
        prefix_tokens,
        HOLDS_S[np.newaxis, :],
        REUSES[:, np.newaxis],
        usd_per_chip_hour=usd_per_chip_hour,
    )


def _option_cmap() -> tuple[ListedColormap, BoundaryNorm]:
    cmap = ListedColormap(list(OPTION_COLOURS))
    return cmap, BoundaryNorm(np.arange(-0.5, len(OPTION_COLOURS)), cmap.N)


def _draw_tier_map(ax: Axes, pc: kv_cache.PrefixCache) -> list[Artist]:
    """Draw the map; return its artists (so an explorer can remove them for a new scene)."""
    cmap, norm = _option_cmap()
    drawn: list[Artist] = [
        ax.pcolormesh(HOLDS_S, REUSES, pc.cheapest, cmap=cmap, norm=norm, shading="nearest")
    ]
    ax.set_xscale("log")
    ax.set_yscale("log")
    for seconds, text in ((300, "5 min"), (3600, "1 h"), (86400, "1 day")):
        drawn.append(ax.axvline(seconds, color="white", linewidth=0.8, linestyle="--"))
        drawn.append(
            ax.annotate(
                text,
                (seconds, REUSES[-1]),
                xytext=(2, -10),
                textcoords="offset points",
                fontsize=7,
                color="black",
            )
        )
    handles = [
        Patch(color=OPTION_COLOURS[i], label=OPTION_LABELS[name])
        for i, name in enumerate(pc.options)
    ]
    drawn.append(ax.legend(handles=handles, fontsize=7, loc="lower left", framealpha=0.9))
    plain_axes(ax)
    ax.set(xlabel="hold time t (s)", ylabel="expected reuses r")
    return drawn


def tier_map_figure(
    deployment: Deployment, prefix_tokens: float = 4096, ax: Axes | None = None
) -> Figure:
    """Which tier? The cheapest place for a cached prefix of ``prefix_tokens`` against hold
    time and expected reuses (keeping + reloading vs recomputing by prefill)."""
    figure, ax = figure_and_axes(ax)
    pc = tier_map(deployment, prefix_tokens)
    _draw_tier_map(ax, pc)
    gb = float(pc.prefix_bytes.ravel()[0]) / 1e9
    ax.set_title(
        f"{deployment.label}: a {prefix_tokens:,.0f}-token prefix ({gb:.2g} GB)", fontsize=10
    )
    return figure


# ---- the explorers ------------------------------------------------------------------------------
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
        ax = self.ax_room
        (self.room_line,) = ax.loglog([], [], color=KV_COLOUR, label="largest batch that fits")
        self.critical_line = ax.axhline(1.0, color="grey", linestyle=":", label="critical batch")
        self.batch_line = ax.axhline(1.0, color=COMPUTE_COLOUR, linewidth=0.8)
        ax.set(xlim=(CONTEXTS[0], CONTEXTS[-1]), ylim=(0.5, 1e5))
        ax.set(xlabel="context T (tokens)", ylabel="batch B (sequences)")
        ax.legend(fontsize=8, loc="upper right")
        ax = self.ax_step
        (self.step_line,) = ax.loglog([], [], color=FLOOR_COLOUR, linewidth=2, label="step")
        (self.kv_line,) = ax.plot([], [], color=KV_COLOUR, label="KV read")
        (self.weight_line,) = ax.plot([], [], color=MEMORY_COLOUR, label="weight read")
        (self.over_line,) = ax.plot([], [], color=FLOOR_COLOUR, linestyle=":", linewidth=1)
        ax.set(xlim=(CONTEXTS[0], CONTEXTS[-1]), ylim=(0.1, 1e3))
        ax.set(xlabel="context T (tokens)", ylabel="time per step (ms, floor)")
        ax.legend(fontsize=8, loc="upper left")
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
        except DoesNotFitError as error:
            self.deployment = None
            for line in (
                self.room_line,
                self.step_line,
                self.kv_line,
                self.weight_line,
                self.over_line,
            ):
                line.set_data([], [])
            self.message.set_text(
                f"{model.name} in {dtype} does not fit on {n_chips} × H100:\n"
                f"{error.missing_bytes / 1e9:,.0f} GB of weights missing"
            )
            self.ax_step.set_title(" ", fontsize=10)
            return
        self.deployment = dep
        self.message.set_text("")
        T = _contexts(model)
        room = np.asarray(kv_cache.max_batch(dep, T))
        self.room_line.set_data(T[room >= 1], room[room >= 1])
        self.critical_line.set_ydata([batching.step_critical_batch(dep)] * 2)
        self.batch_line.set_ydata([self.batch] * 2)
        step = batching.decode_step(dep, self.batch, T, allow_overflow=True)
        fits = np.asarray(step.fits, dtype=bool)
        ms = 1e3 * np.asarray(step.time_s)
        self.step_line.set_data(T[fits], ms[fits])
        self.over_line.set_data(T[~fits], ms[~fits])
        self.kv_line.set_data(T, 1e3 * np.asarray(step.kv_read_s))
        self.weight_line.set_data(T, 1e3 * np.asarray(step.weight_read_s))
        self.ax_room.set_xlim(CONTEXTS[0], max(T[-1], 1024.0))
        self.ax_step.set_xlim(CONTEXTS[0], max(T[-1], 1024.0))
        low = 0.5 * min(float(np.min(step.kv_read_s)), float(np.min(step.weight_read_s))) * 1e3
        self.ax_step.set_ylim(low, 2e3 * float(np.max(step.time_s)))
        cross = float(kv_cache.kv_crossover_context(dep, self.batch))
        self.ax_step.set_title(
            f"{dep.label} ({dtype}), B = {self.batch:g}: KV = weights at T = {cross:,.0f}",
            fontsize=8,
        )

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
        step = batching.decode_step(dep, self.batch, T, allow_overflow=True)
        self.step_point.set_data([T], [1e3 * float(step.time_s)])
        share = float(kv_cache.kv_read_share(dep, self.batch, T))
        verdict = "fits" if fits else "does not fit"
        self.readout.set_text(
            f"T = {T:,.0f}: B = {self.batch:g} {verdict} (≤ {room:,.0f}); "
            f"step {1e3 * float(step.time_s):.3g} ms, KV {share:.0%} of bytes"
        )
        self.readout.set_color("black" if fits else WARNING_COLOUR)


class TierExplorer(FastFigure):
    """The "which tier?" map for a prefix on a deployment, with the chosen (hold, reuses),
    and the cost of each option against hold time at those reuses. Moving the hold time
    redraws only the markers and the readout."""

    def __init__(self) -> None:
        super().__init__(figsize=(10.0, 4.0), ncols=2)
        self.ax_map, self.ax_cost = self.axes
        self.option_lines = [
            self.ax_cost.loglog([], [], color=c, linewidth=2 if i < 4 else 2.5)[0]
            for i, c in enumerate(OPTION_COLOURS)
        ]
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
        self._map_artists: list[Artist] = []
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
        for artist in self._map_artists:
            artist.remove()
        self._map_artists = []
        try:
            dep = _deployment(model, n_chips, dtype)
        except DoesNotFitError:
            self.deployment = None
            self.message.set_text(f"{model.name} in {dtype} does not fit on {n_chips} × H100")
            for line in self.option_lines:
                line.set_data([], [])
            return
        self.deployment = dep
        self.message.set_text("")
        S = min(self.prefix_tokens, float(model.max_context))
        self.prefix_tokens = S
        self._map_artists = _draw_tier_map(self.ax_map, tier_map(dep, S))
        line_pc = kv_cache.prefix_cache(dep, S, HOLDS_S, self.reuses)
        costs = line_pc.option_usd
        finite = costs[np.isfinite(costs)]
        for i, line in enumerate(self.option_lines):
            line.set_data(HOLDS_S, costs[:, i])
            line.set_label(OPTION_LABELS[line_pc.options[i]])
        self.ax_cost.set_ylim(max(float(finite.min()) / 3, 1e-12), float(finite.max()) * 3)
        self.ax_cost.legend(fontsize=7, loc="upper left")
        gb = S * dep.kv_bytes_per_token / 1e9
        self.ax_cost.set_title(
            f"{dep.label} ({dtype}): {S:,.0f} tokens = {gb:.3g} GB, r = {self.reuses:g}",
            fontsize=9,
        )
        plain_axes(self.ax_cost)

    def _draw_hold(self, hold_s: float) -> None:
        dep = self.deployment
        if dep is None:
            self.readout.set_text("")
            self.map_point.set_data([], [])
            return
        pc = kv_cache.prefix_cache(dep, self.prefix_tokens, hold_s, self.reuses)
        best = pc.cheapest_name()
        self.map_point.set_data([hold_s], [self.reuses])
        self.cost_marker.set_xdata([hold_s] * 2)
        i = pc.options.index(best)
        back = (
            f", back in {1e3 * float(pc.reload_s[i]):.3g} ms"
            if i < len(pc.tiers)
            else f", prefill {1e3 * float(pc.recompute_s):.3g} ms"
        )
        self.readout.set_text(
            f"hold {hold_s:g} s, r = {self.reuses:g}: {OPTION_LABELS[best]}, "
            f"${float(pc.cheapest_usd):.2g}{back}"
        )


def explorer_figure(**settings: object) -> Figure:
    """The capacity/bandwidth explorer's figure for one setting."""
    explorer = KVCacheExplorer()
    explorer.update(**settings)  # type: ignore[arg-type]
    return explorer.as_figure()

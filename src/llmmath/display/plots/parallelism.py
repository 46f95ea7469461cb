"""Figures of the parallelism chapter: memory per GPU and step time by layout, the pipeline
bubble, serving with TP against PP, and the activation memory of reversible layers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import NullLocator

from llmmath import parallelism
from llmmath.core import placement, training, training_memory
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.placement import Layout
from llmmath.core.units import general
from llmmath.display.plots.common import (
    COMPUTE_COLOUR,
    FLOOR_COLOUR,
    MEMORY_COLOUR,
    FastFigure,
    figure_and_axes,
    mark_curves,
    plain_axes,
)

MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations")
MEMORY_COLOURS = {
    "weights": MEMORY_COLOUR,
    "gradients": "#66c2a5",
    "optimizer": "#8da0cb",
    "activations": "#fc8d62",
}
KIND_COLOURS = {"DP": "#7570b3", "TP": "#e7298a", "PP": "#66a61e", "EP": "#e6ab02"}
BUBBLE_COLOUR = "#bbbbbb"
SCALE_OUT_HATCH = "///"
_BUBBLE_SWEEP = np.arange(1, 129, dtype=float)


# ---- several layouts side by side ---------------------------------------------------------
def layouts_figure(
    model: str | ModelConfig,
    chip: str | Chip,
    layouts: Sequence[Layout],
    global_batch_tokens: float,
    *,
    microbatches: int | Sequence[int] = 8,
    activations: str | Sequence[str] = "stored",
    flops_efficiency: float = 1.0,
) -> Figure:
    """Memory per GPU (left) and step-time floor (right) of each layout, one row each.

    Right: the upper bar of a row is compute plus bubble; the lower one the communication of
    each kind, hatched where it crosses the scale-out network. Communication hides if its bar
    is shorter than the compute; the bubble never hides.
    """
    spec, chip_spec = get_model(model), get_chip(chip)
    n = len(layouts)
    micro = [microbatches] * n if isinstance(microbatches, int) else list(microbatches)
    modes = [activations] * n if isinstance(activations, str) else list(activations)
    figure = Figure(figsize=(11.0, 1.0 + 0.62 * n), dpi=100, layout="constrained")
    ax_mem, ax_time = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.5]})
    hbm = chip_spec.hbm_bytes / 1e9
    cap = 2.0 * hbm
    labels = []
    for row, (layout, m, mode) in enumerate(zip(layouts, micro, modes, strict=True)):
        y = n - 1 - row
        shown_layout = parallelism.layout_breakdown(
            spec,
            chip_spec,
            layout,
            global_batch_tokens,
            microbatches=m,
            activations=mode,
            flops_efficiency=flops_efficiency,
        )
        left = 0.0
        for name, value in shown_layout.memory_bytes.items():
            width = value / 1e9
            shown = max(min(left + width, cap) - left, 0.0)
            ax_mem.barh(y, shown, left=left, color=MEMORY_COLOURS[name], height=0.6)
            left += width
        total = shown_layout.total_memory_bytes / 1e9
        ax_mem.annotate(
            f"{total:,.0f} GB" if total >= 100 else f"{general(total)} GB",
            (min(total, cap), y),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
            fontweight="bold" if total > hbm else "normal",
            color="#b2182b" if total > hbm else FLOOR_COLOUR,
        )
        parts = shown_layout.time_parts
        ax_time.barh(y + 0.17, parts[0][1], height=0.3, color=COMPUTE_COLOUR)
        ax_time.barh(y + 0.17, parts[1][1], left=parts[0][1], height=0.3, color=BUBBLE_COLOUR)
        left = 0.0
        for kind, seconds, link in parts[2:]:
            hatch = SCALE_OUT_HATCH if "scale-out" in link else None
            ax_time.barh(
                y - 0.17,
                seconds,
                left=left,
                height=0.3,
                color=KIND_COLOURS[kind],
                hatch=hatch,
                edgecolor="white",
                linewidth=0,
            )
            left += seconds
        ax_time.annotate(
            f"{shown_layout.lower_s:.2f} s, MFU ≤ {shown_layout.mfu:.0%}",
            (parts[0][1] + parts[1][1], y + 0.17),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
        labels.append(f"{layout}\n{mode}, m={m}")
    for ax in (ax_mem, ax_time):
        ax.set_yticks(range(n - 1, -1, -1), labels, fontsize=8)
        plain_axes(ax)
    ax_time.set_yticklabels([])
    ax_mem.axvline(hbm, color=FLOOR_COLOUR, linestyle="--", linewidth=1)
    ax_mem.set_xlim(0, cap * 1.25)
    ax_mem.set(xlabel="memory per GPU (GB)", title=f"{chip_spec.name}: {hbm:.0f} GB (dashed)")
    ax_time.set(
        xlabel="seconds per step (floors)",
        title=f"{spec.name}, {global_batch_tokens / 2**20:.0f}M tokens per step, "
        f"{flops_efficiency:.0%} of peak",
    )
    xmax = ax_time.get_xlim()[1]
    ax_time.set_xlim(0, xmax * 1.25)
    handles = [Patch(color=MEMORY_COLOURS[p], label=p) for p in MEMORY_PARTS]
    ax_mem.legend(
        handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4
    )
    handles = [
        Patch(color=COMPUTE_COLOUR, label="compute"),
        Patch(color=BUBBLE_COLOUR, label="bubble"),
        *(Patch(color=c, label=f"{k} traffic") for k, c in KIND_COLOURS.items()),
        Patch(facecolor="white", edgecolor=FLOOR_COLOUR, hatch=SCALE_OUT_HATCH, label="scale-out"),
    ]
    ax_time.legend(
        handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=7
    )
    return figure


# ---- the explorer -------------------------------------------------------------------------
class ParallelismExplorer(FastFigure):
    """One layout of one model on one cluster: memory per GPU against HBM, the step-time
    breakdown with the link each kind of traffic loads, and the bubble against microbatches.

    Bars, readouts and the bubble marker are dynamic (blitted); the axes, the HBM line and the
    bubble curve are the scene, redrawn only when the chip, the pipeline depth or the decade of
    the time axis changes."""

    def __init__(self) -> None:
        super().__init__(figsize=(11.0, 4.0), ncols=3)
        self.ax_mem, self.ax_time, self.ax_bubble = self.axes
        grid = self.ax_mem.get_gridspec()
        assert grid is not None
        grid.set_width_ratios([0.8, 1.6, 1.0])
        self.memory_bars = [
            self.dynamic(self.ax_mem.bar(0, 0.0, width=0.6, color=MEMORY_COLOURS[name])[0])
            for name in MEMORY_PARTS
        ]
        self.hbm_line = self.ax_mem.axhline(80.0, color=FLOOR_COLOUR, linestyle="--", linewidth=1)
        self.memory_text = self.dynamic(
            self.ax_mem.text(0, 0, "", ha="center", va="bottom", fontsize=8)
        )
        self.ax_mem.set_xticks([])
        self.ax_mem.set_xlim(-0.6, 0.6)
        self.ax_mem.set_ylabel("memory per GPU (GB)")
        handles = [Patch(color=MEMORY_COLOURS[p], label=p) for p in MEMORY_PARTS]
        self.ax_mem.legend(
            handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2
        )
        rows = ["compute", "bubble", *parallelism.KINDS]
        colours = [COMPUTE_COLOUR, BUBBLE_COLOUR, *KIND_COLOURS.values()]
        self.time_bars = [
            self.dynamic(self.ax_time.barh(i, 1.0, left=1.0, height=0.6, color=c, linewidth=0)[0])
            for i, c in enumerate(colours)
        ]
        for bar in self.time_bars:
            bar.set_edgecolor("white")
        self.time_texts = [
            self.dynamic(self.ax_time.text(0, i, "", va="center", fontsize=8))
            for i in range(len(rows))
        ]
        self.ax_time.set_yticks(range(len(rows)), rows)
        self.ax_time.set_ylim(len(rows) - 0.5, -0.5)
        self.ax_time.set_xscale("log")
        self.ax_time.set_xlabel("seconds per step (floors)")
        self.time_title = self.title_readout(self.ax_time)
        (self.bubble_line,) = self.ax_bubble.plot([], [], color=FLOOR_COLOUR)
        self.bubble_point = self.marker(self.ax_bubble)
        self.bubble_title = self.title_readout(self.ax_bubble)
        self.ax_bubble.set_xscale("log", base=2)
        self.ax_bubble.set_xlim(1, _BUBBLE_SWEEP[-1])
        self.ax_bubble.set_xticks([1, 4, 16, 64], ["1", "4", "16", "64"])
        self.ax_bubble.xaxis.set_minor_locator(NullLocator())
        self.ax_bubble.set_ylim(0, 1)
        self.ax_bubble.set(xlabel="microbatches", ylabel="bubble: idle share of the step")
        self.ax_time.xaxis.set_minor_locator(NullLocator())

    def update(
        self,
        model: str | ModelConfig = "Llama-3-70B",
        chip: str | Chip = "H100",
        layout: Layout | None = None,
        global_batch_tokens: float = 4 * 2**20,
        microbatches: int = 8,
        activations: str = "stored",
        flops_efficiency: float = 1.0,
    ) -> None:
        """Redraw for one setting; a layout that does not fit the model raises ValueError."""
        spec, chip_spec = get_model(model), get_chip(chip)
        layout = layout or Layout.for_cluster(1024, tp=8, zero_stage=1)
        shown = parallelism.layout_breakdown(
            spec,
            chip_spec,
            layout,
            global_batch_tokens,
            microbatches=microbatches,
            activations=activations,
            flops_efficiency=flops_efficiency,
        )
        parts = shown.time_parts
        longest = max(max(p[1] for p in parts), 1e-9)
        # A log axis snapped to decades: tiny PP sends and long steps both show, and the axis
        # (part of the cached scene) changes only when the step changes by a factor of ten.
        high = float(10.0 ** np.ceil(np.log10(longest * 20)))
        low = high * 1e-5
        hbm = chip_spec.hbm_bytes / 1e9
        cap = 2.0 * hbm
        if self.new_scene((chip_spec.name, hbm, high, layout.pp, layout.virtual_stages)):
            self.hbm_line.set_ydata([hbm, hbm])
            self.ax_mem.set_ylim(0, cap * 1.2)
            self.ax_mem.set_title(f"{chip_spec.name}, {hbm:.0f} GB", fontsize=10)
            self.ax_time.set_xlim(low, high)
            curve = training.pipeline_bubble_fraction(
                layout.pp, _BUBBLE_SWEEP, layout.virtual_stages
            )
            self.bubble_line.set_data(_BUBBLE_SWEEP, curve)

        bottom = 0.0
        for bar, value in zip(self.memory_bars, shown.memory_bytes.values(), strict=True):
            height = value / 1e9
            bar.set_y(min(bottom, cap))
            bar.set_height(max(min(bottom + height, cap) - bottom, 0.0))
            bottom += height
        total = shown.total_memory_bytes / 1e9
        over = total - hbm
        verdict = f"over by {over:,.0f} GB" if over > 0 else f"{-over:.0f} GB free"
        self.memory_text.set_position((0, min(total, cap)))
        self.memory_text.set_text(f"{total:,.1f} GB\n{verdict}")
        self.memory_text.set_color("#b2182b" if over > 0 else FLOOR_COLOUR)

        for bar, text, (_label, seconds, link) in zip(
            self.time_bars, self.time_texts, parts, strict=True
        ):
            bar.set_x(low)
            bar.set_width(max(seconds - low, 0.0))
            bar.set_hatch(SCALE_OUT_HATCH if "scale-out" in link else None)
            text.set_position((max(seconds, low) * 1.15, text.get_position()[1]))
            words = f"{general(seconds)} s" if seconds > 0 else "none"
            text.set_text(words + (f", {link}" if link and seconds > 0 else ""))
        self.time_title.set_text(
            f"{spec.name} {layout} on {layout.n_gpus:,} GPUs: {general(shown.lower_s)}"
            f"–{general(shown.upper_s)} s, MFU ≤ {shown.mfu:.0%}"
        )
        here = shown.bubble_fraction
        self.bubble_point.set_data([microbatches], [here])
        self.bubble_title.set_text(f"PP{layout.pp}, {microbatches} microbatches: {here:.0%}")


# ---- the bubble -------------------------------------------------------------------------------
def bubble_figure(
    stages: Sequence[int] = (2, 4, 8, 16), max_microbatches: int = 512, ax: Axes | None = None
) -> Figure:
    """Idle share of a pipelined step against microbatches, one line per pipeline depth,
    with the 5% line dotted."""
    figure, ax = figure_and_axes(ax)
    m = np.arange(1, max_microbatches + 1, dtype=float)
    lines = [ax.plot(m, training.pipeline_bubble_fraction(p, m))[0] for p in stages]
    for line, p in zip(lines, stages, strict=True):
        line.set_label(f"{p} stages")
    mark_curves(*lines)
    ax.axhline(0.05, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ticks = [2**k for k in range(0, int(np.log2(max_microbatches)) + 1, 2)]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_ylim(0, 1)
    ax.set(xlabel="microbatches per step", ylabel="bubble: idle share of the step")
    ax.set_title("(stages - 1) / (microbatches + stages - 1)", fontsize=10)
    ax.legend(fontsize=8)
    plain_axes(ax)
    return figure


# ---- serving: TP against PP -----------------------------------------------------------------
def serving_figure(
    model: str | ModelConfig,
    chip: str | Chip,
    layouts: Sequence[Layout],
    context: float = 8192,
    max_batch: int = 512,
) -> Figure:
    """Decode on one node, per layout: memory per GPU against the batch per step (left), and
    throughput against the time between two tokens of a sequence (right), from batch 1 to
    the largest batch whose KV cache fits (dot)."""
    spec, chip_spec = get_model(model), get_chip(chip)
    figure = Figure(figsize=(10.0, 4.0), dpi=100, layout="constrained")
    ax_mem, ax_rate = figure.subplots(1, 2)
    batch = np.arange(1, max_batch + 1, dtype=float)
    hbm = chip_spec.hbm_bytes / 1e9
    pairs = []  # each layout's memory line and, where a batch fits, its rate line
    for layout in layouts:
        memory = placement.serving_memory(spec, layout, batch, context)
        total = np.asarray(memory.total_bytes) / 1e9
        (line,) = ax_mem.plot(batch, total, label=str(layout))
        pairs.append((line, None))
        fits = total <= hbm
        if not fits.any():
            continue
        step = parallelism.layout_decode_step(spec, layout, chip_spec, batch[fits], context)
        latency, rate = 1e3 * step.time_s, step.tokens_per_s
        colour = line.get_color()
        label = f"{layout}: up to {batch[fits][-1]:.0f}"
        pairs[-1] = (line, ax_rate.plot(latency, rate, color=colour, label=label)[0])
        ax_rate.plot(latency[-1], rate[-1], "o", color=colour)
    mark_curves(*(line for line, _ in pairs))  # one shape per layout, in both panels
    for line, rate_line in pairs:
        if rate_line is not None:
            rate_line.set(marker=line.get_marker(), markevery=0.1, markersize=4)
    ax_mem.axhline(hbm, color=FLOOR_COLOUR, linestyle="--", linewidth=1)
    ax_mem.annotate(
        f"{chip_spec.name}: {hbm:.0f} GB",
        (1, hbm),
        xytext=(0, 3),
        textcoords="offset points",
        fontsize=8,
    )
    ax_mem.set_ylim(0, 2 * hbm)
    ax_mem.set(
        xlabel="sequences per decode step",
        ylabel="weights + KV cache per GPU (GB)",
        title=f"{spec.name}, context {context:,.0f}",
    )
    ax_rate.set_ylim(bottom=0)
    ax_rate.set_xlim(left=0)
    ax_rate.set(
        xlabel="time between tokens of a sequence (ms, floor)",
        ylabel="tokens per second, whole node (floor)",
        title="batch 1 to the largest that fits (dot)",
    )
    for ax in (ax_mem, ax_rate):
        ax.legend(fontsize=8)
        plain_axes(ax)
    return figure


# ---- reversible layers ------------------------------------------------------------------------
def reversible_figure(
    model: str | ModelConfig,
    tokens: float = 8192,
    max_layers: int = 160,
    ax: Axes | None = None,
) -> Figure:
    """Activation memory of one microbatch against depth, stored, checkpointed and reversible,
    with the extra compute each costs."""
    figure, ax = figure_and_axes(ax)
    spec = get_model(model)
    layers = np.arange(1, max_layers + 1, dtype=float)
    styles = {"stored": "-", "checkpointed": "--", "reversible": ":"}
    for mode, style in styles.items():
        held = [
            float(training_memory.activation_memory_bytes(spec, tokens, mode, n_layers=n)) / 1e9
            for n in layers
        ]
        extra = training_memory.recompute_flops_fraction(mode)
        ax.plot(
            layers,
            held,
            style,
            color=FLOOR_COLOUR if mode == "stored" else None,
            label=f"{mode}: +{extra:.0%} compute",
        )
    ax.axvline(spec.n_layers, color="grey", linestyle=":", linewidth=1)
    ax.set_yscale("log")
    ax.set(
        xlabel="layers on the GPU",
        ylabel="activations kept for backward (GB)",
        title=f"{spec.name}, {tokens:,.0f} tokens per microbatch",
    )
    ax.legend(fontsize=8)
    plain_axes(ax)
    return figure


# ---- the critical batch: data parallelism's ceiling ---------------------------------------
CLUSTER_SIZES = tuple(2**power for power in range(10, 18))  # 1k to 128k chips


def critical_batch_figure(
    batches: Sequence[tuple[str, float, int]],
    marked: Sequence[tuple[str, int, int]] = (),
    cluster_sizes: Sequence[int] = CLUSTER_SIZES,
) -> Figure:
    """Left: McCandlish et al.'s trade-off, steps and examples (compute) to reach one loss as
    multiples of their minima against the batch over the critical batch, ``B_crit`` marked.
    Right: the fewest chips per data-parallel replica (model parallelism) a cluster needs,
    against its size, one line per ``(label, batch_tokens, sequence_tokens)`` with one
    sequence per replica; ``marked`` adds ``(label, n_chips, chips_per_replica)`` points (a
    published layout)."""
    figure = Figure(figsize=(10.0, 4.0), dpi=100, layout="constrained")
    ax_trade, ax_mp = figure.subplots(1, 2)
    ratio = np.logspace(-np.log10(32), np.log10(32), 161)
    trade = training.batch_tradeoff(ratio, 1.0)
    steps = ax_trade.plot(ratio, trade.steps_factor, label="steps / fewest steps")[0]
    examples = ax_trade.plot(
        ratio, trade.examples_factor, label="examples (compute) / fewest", linestyle="--"
    )[0]
    mark_curves(steps, examples)
    ax_trade.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax_trade.plot([1.0], [2.0], "o", color="black", markersize=5)
    ax_trade.annotate(
        "B = B_crit:\nboth are 2",
        (1.0, 8.0),
        xytext=(4, 0),
        textcoords="offset points",
        fontsize=8,
        va="center",
    )
    ax_trade.set_xscale("log")
    ax_trade.set_yscale("log")
    ax_trade.set(xlabel="batch / critical batch of optimisation", ylabel="multiple of the minimum")
    factors = [2**k for k in range(0, 6)]
    ax_trade.set_yticks(factors, [str(f) for f in factors])
    ax_trade.yaxis.set_minor_locator(NullLocator())
    ax_trade.set_title("(steps/fewest - 1) x (examples/fewest - 1) = 1", fontsize=10)
    ax_trade.legend(fontsize=8, loc="upper center")
    plain_axes(ax_trade)

    sizes = np.asarray(cluster_sizes)
    lines = []
    styles = ("-", "--", ":", "-.")  # told apart without colour (the diamonds are Llama 3's)
    if len(batches) > len(styles):
        raise ValueError(f"batches: at most {len(styles)} lines; got {len(batches)}")
    for (label, batch_tokens, sequence_tokens), style in zip(batches, styles, strict=False):
        degree = [
            training.min_model_parallel_degree(int(n), batch_tokens, sequence_tokens) for n in sizes
        ]
        drawn = ax_mp.plot(sizes, degree, style, marker="o", markersize=4, label=label)
        lines.append(drawn[0])
    for label, n_chips, per_replica in marked:
        ax_mp.plot([n_chips], [per_replica], "D", color="black", markersize=5)
        ax_mp.annotate(
            label,
            (n_chips, per_replica),
            xytext=(-8, 0),
            textcoords="offset points",
            fontsize=8,
            ha="right",
            va="center",
        )
    ax_mp.set_xscale("log", base=2)
    ax_mp.set_yscale("log", base=2)
    ax_mp.set_xticks(sizes, [f"{n // 1024}k" for n in sizes])
    ax_mp.yaxis.set_minor_locator(NullLocator())
    ax_mp.xaxis.set_minor_locator(NullLocator())
    ticks = [4**k for k in range(0, 7)]
    ax_mp.set_yticks(ticks, [str(t) for t in ticks])
    ax_mp.set(xlabel="chips in the cluster", ylabel="fewest chips per DP replica")
    ax_mp.set_title("one sequence per replica: DP <= batch / sequence", fontsize=10)
    ax_mp.legend(fontsize=8, loc="lower right")
    plain_axes(ax_mp)
    return figure

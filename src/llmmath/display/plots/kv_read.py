"""The KV chapter's figure of attention past the dense cache: the bytes one decoded token
reads from its cache against the context, for dense GQA, MLA, a sliding window, sparse top-k
attention and a linear-attention hybrid (:func:`llmmath.kv_cache.read_per_token_curves`)."""

from __future__ import annotations

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from llmmath import kv_cache
from llmmath.core._checks import FloatArray
from llmmath.display.plots.common import figure_and_axes, mark_curves, plain_axes

#: One colour per model of the read-per-token figure (Okabe and Ito's, as the cycle).
READ_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")


class ReadPerTokenPanel:
    """The bandwidth wall per sequence on one axes (log-log): the bytes one decoded token reads
    from its cache against the context, one curve per model, each named where it ends and
    marked; dotted past the model's longest context (a what-if). Dashed: what a sparse
    model holds, the capacity wall's count, where it differs from what it reads."""

    def __init__(self, ax: Axes, count: int) -> None:
        self.ax = ax
        colours = READ_COLOURS[:count]
        self.lines = [ax.loglog([], [], color=c)[0] for c in colours]
        self.beyond = [ax.plot([], [], color=c, linestyle=":", linewidth=1)[0] for c in colours]
        self.held = [ax.plot([], [], color=c, linestyle="--", linewidth=1)[0] for c in colours]
        mark_curves(*self.lines)
        mark_curves(*self.beyond)
        mark_curves(*self.held)
        self.labels: list[Artist] = []
        plain_axes(ax)
        ax.set(xlabel="context T (tokens per sequence)")

    def show(self, curves: kv_cache.ReadPerTokenCurves) -> None:
        for label in self.labels:
            label.remove()
        self.labels = []
        T = curves.context
        rows = zip(self.lines, self.beyond, self.held, curves.names, curves.designs, strict=False)
        for i, (line, beyond, held, name, design) in enumerate(rows):
            within = curves.max_context[i] >= T
            read_gb, held_gb = curves.read_bytes[i] / 1e9, curves.held_bytes[i] / 1e9
            line.set_data(T[within], read_gb[within])
            line.set_label(f"{name} ({design})")
            last = max(int(np.sum(within)) - 1, 0)  # the past-the-context part joins on
            beyond.set_data(T[last:], read_gb[last:])
            differs = ~np.isclose(read_gb, held_gb, rtol=1e-9)
            held.set_data(T[differs], held_gb[differs])
            held.set_label(f"{name}: held" if differs.any() else "_held")
        self.ax.set_xlim(T[0], T[-1])
        self.ax.relim()  # set_data does not move the data limits
        self.ax.autoscale_view(scalex=False)
        self.ax.set_ylabel(f"KV read per decoded token (GB, {curves.dtype})")
        ends = curves.read_bytes[: len(self.lines), -1] / 1e9
        for line, end, at, name, design in zip(
            self.lines, ends, self._spread(ends), curves.names, curves.designs, strict=False
        ):
            self.labels.append(
                self.ax.annotate(
                    f"{name}\n({design})",
                    (T[-1], end),
                    xytext=(T[-1] * 1.08, at),
                    color=line.get_color(),
                    fontsize=7,
                    va="center",
                    annotation_clip=False,
                )
            )

    def _spread(self, ends: FloatArray) -> FloatArray:
        """Heights for the end labels: at each curve's end, pushed apart (in log space) where
        two ends lie closer than a label's height."""
        low, high = (np.log10(v) for v in self.ax.get_ylim())
        gap = 0.085 * (high - low)
        logs = np.log10(ends)
        order = np.argsort(logs)
        placed = logs[order].copy()
        for j in range(1, placed.size):
            placed[j] = max(placed[j], placed[j - 1] + gap)
        spread = np.empty_like(placed)
        spread[order] = placed
        return np.asarray(10.0**spread)


def read_per_token_figure(
    curves: kv_cache.ReadPerTokenCurves | None = None, ax: Axes | None = None
) -> Figure:
    """Bytes read per decoded token against the context for each attention design
    (:func:`llmmath.kv_cache.read_per_token_curves`, by default
    :data:`llmmath.kv_cache.READ_MODELS` in bf16; see :class:`ReadPerTokenPanel`)."""
    figure, ax = figure_and_axes(ax)
    shown = curves if curves is not None else kv_cache.read_per_token_curves()
    panel = ReadPerTokenPanel(ax, len(shown.names))
    panel.show(shown)
    ax.set_title("What one decoded token reads from its cache")
    return figure

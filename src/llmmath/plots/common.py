"""Shared figure plumbing: palette PNGs for widget frames, axes handling, notebook display."""

from __future__ import annotations

import io
from collections.abc import Hashable
from typing import TypeVar

from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import NullLocator
from PIL import Image

ArtistT = TypeVar("ArtistT", bound=Artist)
COMPUTE_COLOUR, MEMORY_COLOUR, FLOOR_COLOUR = "#d95f02", "#1b9e77", "#222222"
KV_COLOUR, WARNING_COLOUR = "#7570b3", "#b2182b"
_ON_TOP = 10.0  # above lines (2), spines (2.5) and legends (5): where blitting puts them
_READOUT_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.9}


def no_minor_ticks(ax: Axes) -> None:
    """Drop an axes' minor ticks: they double its draw time (log scales bring them back)."""
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_locator(NullLocator())


def plain_axes(ax: Axes) -> None:
    """No minor ticks, a light grid on the major ones: the look of every course figure."""
    no_minor_ticks(ax)
    ax.grid(True, which="major", alpha=0.3)


def figure_png(figure: Figure, colours: int = 32) -> bytes:
    """Render ``figure`` with Agg to a palette PNG of at most ``colours`` colours."""
    canvas = (
        figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    )
    canvas.draw()  # type: ignore[no-untyped-call]
    return _canvas_png(canvas, colours)


def _canvas_png(canvas: FigureCanvasAgg, colours: int) -> bytes:
    """What is in the canvas's buffer now, as a palette PNG (~5-10 KB for a line plot)."""
    image = Image.frombuffer(
        "RGBA",
        canvas.get_width_height(),
        canvas.buffer_rgba(),  # type: ignore[no-untyped-call]
    )
    buffer = io.BytesIO()
    palette = image.convert("RGB").quantize(colours, method=Image.Quantize.FASTOCTREE)
    palette.save(buffer, format="PNG")
    return buffer.getvalue()


class FastFigure:
    """A widget figure that redraws in a few milliseconds.

    Drawing axes, ticks and labels is most of matplotlib's cost, and a control such as a batch
    slider usually moves only a marker. So artists are split: *static* ones are drawn once per
    scene (chip, model, ...) into a cached background; *dynamic* ones (registered with
    :meth:`dynamic`) are drawn over it on every :meth:`png`. Subclasses call
    :meth:`new_scene` with a key of what the static artists depend on, and redraw those only
    when it returns True.
    """

    def __init__(self, figsize: tuple[float, float], ncols: int = 1, dpi: int = 80) -> None:
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        self.canvas = FigureCanvasAgg(self.figure)
        self.axes: list[Axes] = list(self.figure.subplots(1, ncols, squeeze=False)[0])
        for ax in self.axes:  # minor ticks on log axes double the draw time: see png()
            ax.grid(True, which="major", alpha=0.3)
        self._dynamic: list[Artist] = []
        self._scene: Hashable = None
        self._background: object = None
        self._laid_out = False

    def dynamic(self, artist: ArtistT) -> ArtistT:
        """Mark ``artist`` as redrawn on every frame (excluded from the cached background).

        It is blitted over everything else, so it is also put above everything else
        (``zorder``): drawn in one pass for :meth:`as_figure`, the figure looks the same."""
        artist.set_animated(True)
        artist.set_zorder(max(artist.get_zorder(), _ON_TOP))
        self._dynamic.append(artist)
        return artist

    def marker(self, ax: Axes, colour: str = COMPUTE_COLOUR, size: float = 8) -> Line2D:
        """A dynamic round marker on ``ax`` (place it with ``set_data``)."""
        return self.dynamic(ax.plot([], [], "o", color=colour, markersize=size)[0])

    def corner_readout(
        self, ax: Axes, top: bool = False, fontsize: float = 10, boxed: bool = True
    ) -> Text:
        """A dynamic text in the right-hand corner of ``ax`` (bottom unless ``top``)."""
        return self.dynamic(
            ax.text(
                0.98,
                0.96 if top else 0.04,
                "",
                transform=ax.transAxes,
                ha="right",
                va="top" if top else "baseline",
                fontsize=fontsize,
                bbox=_READOUT_BOX if boxed else None,
            )
        )

    def title_readout(self, ax: Axes, fontsize: float = 10) -> Text:
        """A dynamic text where the title of ``ax`` would be, clear of every curve."""
        ax.set_title(" ", fontsize=10)  # not "": keeps room for it in the frozen layout
        return self.dynamic(
            ax.text(
                0.5, 1.02, "", transform=ax.transAxes, ha="center", va="bottom", fontsize=fontsize
            )
        )

    def warning_message(self) -> Text:
        """Text across the middle of the figure, for a setting that cannot be drawn."""
        return self.figure.text(
            0.5,
            0.5,
            "",
            ha="center",
            va="center",
            fontsize=11,
            color=WARNING_COLOUR,
            bbox={"facecolor": "white", "edgecolor": WARNING_COLOUR},
        )

    def new_scene(self, key: Hashable) -> bool:
        """True (and the background is dropped) when ``key`` differs from the last scene."""
        if key == self._scene:
            return False
        self._scene, self._background = key, None
        return True

    def png(self, colours: int = 32) -> bytes:
        """The current frame as a palette PNG."""
        if self._background is None:
            for ax in self.axes:  # set again: log scales (loglog) bring the minor ticks back
                no_minor_ticks(ax)
            self.canvas.draw()  # type: ignore[no-untyped-call]
            if not self._laid_out:  # freeze the layout so every frame lines up
                self.figure.set_layout_engine("none")
                self._laid_out = True
            self._background = self.canvas.copy_from_bbox(self.figure.bbox)  # type: ignore[no-untyped-call]
        else:
            self.canvas.restore_region(self._background)  # type: ignore[no-untyped-call]
        for artist in self._dynamic:
            self.figure.draw_artist(artist)
        return _canvas_png(self.canvas, colours)

    def as_figure(self) -> Figure:
        """The figure with every artist drawn normally (for a static, captioned display),
        looking as :meth:`png` draws it."""
        for ax in self.axes:  # as png() does: log scales bring the minor ticks back
            no_minor_ticks(ax)
        for artist in self._dynamic:
            artist.set_animated(False)
        return self.figure


def figure_and_axes(ax: Axes | None) -> tuple[Figure, Axes]:
    if ax is not None:
        figure = ax.get_figure()
        assert isinstance(figure, Figure)
        return figure, ax
    figure = Figure(figsize=(6.0, 4.0), dpi=100, layout="constrained")
    return figure, figure.add_subplot()


def _full_png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)  # type: ignore[no-untyped-call]
    return buffer.getvalue()


def _show_figures_in_notebooks() -> None:
    """Let a bare ``Figure`` (made without pyplot) display as a PNG in Jupyter and the book.

    ipykernel registers matplotlib's PNG formatter only once pyplot is imported; these
    figures never touch pyplot, so register one here.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing to register
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(Figure, _full_png)


_show_figures_in_notebooks()

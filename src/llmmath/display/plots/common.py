"""Shared figure plumbing: palette PNGs for widget frames, axes handling, notebook display."""

from __future__ import annotations

import io
import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

import matplotlib as mpl
import numpy as np
from cycler import cycler
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba_array
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Annotation, Text
from matplotlib.ticker import NullLocator
from PIL import Image

from llmmath.display.plots.fast_text import FastCanvas

ArtistT = TypeVar("ArtistT", bound=Artist)
#: Okabe and Ito's colour-blind-safe palette ("Color Universal Design", 2008): blue,
#: vermillion, bluish green, reddish purple, orange, sky blue, black, yellow.
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
# The captions name them (batching, moe, validation): compute "orange" (vermillion), memory
# "green" (bluish green), KV "purple" (kept: distinct from both in lightness under the
# common colour-vision deficiencies).
COMPUTE_COLOUR, MEMORY_COLOUR, FLOOR_COLOUR = "#D55E00", "#009E73", "#222222"
KV_COLOUR, WARNING_COLOUR = "#7570b3", "#b2182b"
# Every course figure is made after this module is imported (each plots module imports it).
# Colours only: a dash cycle drew curves dashed and dotted in figures whose captions keep
# "dashed" and "dotted" for one reference line (the KV chapter's step times per batch beside
# "the dashed line is the weight read"); a figure sets its own dashes where its caption says.
mpl.rcParams["axes.prop_cycle"] = cycler(color=list(OKABE_ITO))
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


#: Markers that tell apart curves drawn in one line style, so that no two differ by colour
#: alone (for a reader who cannot tell the colours apart, or a grey print); the legend shows
#: them. "o" and "x" are left out: figures mark points with them (an operating point, "HBM
#: full"). Line styles are not cycled: captions keep "dashed" and "dotted" for one line each.
CURVE_MARKERS = ("s", "^", "D", "v", "P", "h", "*")


class _SpacedMarkers(Line2D):
    """A curve whose markers are spaced along it (``markevery`` a float). matplotlib 3.11 places
    them from the line's first finite point and raises ``IndexError`` on a line that has none:
    an explorer's curve can be empty, or all infinite, at some setting (``make bench`` moved a
    slider there). Such a line has nothing to draw, so it draws nothing."""

    def draw(self, renderer: Any) -> None:
        if np.isfinite(np.asarray(self.get_xydata(), dtype=float)).all(axis=1).any():
            super().draw(renderer)


def mark_curves(*lines: Line2D, every: float | None = 0.1, size: float = 4.0) -> None:
    """Give each of ``lines`` its own marker from :data:`CURVE_MARKERS`: spaced along it
    (``every``: a fraction of the axes' diagonal, in screen distance, so log axes too), or at
    every data point (``every=None``, for curves of a few measured points)."""
    if len(lines) > len(CURVE_MARKERS):
        raise ValueError(f"mark_curves: at most {len(CURVE_MARKERS)} lines; got {len(lines)}")
    for line, marker in zip(lines, CURVE_MARKERS, strict=False):
        line.set(marker=marker, markevery=every, markersize=size)
        if every is not None and type(line) is Line2D:
            line.__class__ = _SpacedMarkers  # the same artist, drawn only when it has a point


def end_label(ax: Axes, line: Line2D, text: str, **kwargs: Any) -> Annotation:
    """A direct label: ``text`` just above the last point of ``line``, ending there, in its
    colour, so the line is named where it ends rather than by its colour in a legend."""
    x, y = np.asarray(line.get_xdata())[-1], np.asarray(line.get_ydata())[-1]
    style = {"textcoords": "offset points", "xytext": (0, 3), "fontsize": 7, "ha": "right"}
    return ax.annotate(text, (x, y), color=line.get_color(), **{**style, **kwargs})


def figure_png(figure: Figure, colours: int = 32) -> bytes:
    """Render ``figure`` with Agg to a palette PNG of at most ``colours`` colours."""
    canvas = (
        figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    )
    canvas.draw()  # type: ignore[no-untyped-call]
    return _canvas_png(canvas, colours)


#: zlib's effort for a PNG: 6 (PIL's default) for frames a page keeps; 1 for a live frame,
#: sent once over the kernel's socket (the same pixels, ~1.5 ms sooner, ~50% more bytes).
KEPT, SENT = 6, 1


def _canvas_png(canvas: FigureCanvasAgg, colours: int, compress_level: int = KEPT) -> bytes:
    """What is in the canvas's buffer now, as a palette PNG (~5-10 KB for a line plot)."""
    image = Image.frombuffer(
        "RGBA",
        canvas.get_width_height(),
        canvas.buffer_rgba(),  # type: ignore[no-untyped-call]
    )
    buffer = io.BytesIO()
    palette = image.convert("RGB").quantize(colours, method=Image.Quantize.FASTOCTREE)
    palette.save(buffer, format="PNG", compress_level=compress_level)
    return buffer.getvalue()


class FastFigure:
    """A widget figure that redraws in a few milliseconds.

    Drawing axes, ticks and tick labels is most of matplotlib's cost, and a control usually
    moves curves, markers and texts while the axes stay put. So every artist *on* the axes
    (lines, spans, texts, titles, legends, the figure's own texts) is drawn on every
    :meth:`png` over a cached background of what stays: the axes with their ticks, tick
    labels, axis labels and grid. The background is redrawn only when its key changes (limits,
    scales, ticks, axis labels), only for the axes whose part changed, and the last few
    backgrounds, and each axes' last few looks, are kept, so flipping back to a setting seen
    before is a blit too (or a copy of that one panel). Explorers keep their limits fixed per
    scene (see :func:`snap_log_limits`) so that most moves never redraw an axis. Text, most
    of what is left, is drawn by a :class:`~.fast_text.FastCanvas` (same pixels, cheaper).

    Subclasses may call :meth:`new_scene` with a key of what their curves depend on and
    recompute those only when it returns True.
    """

    #: Backgrounds kept (each a figure-sized RGBA buffer: 1 MB at 800 x 320).
    BACKGROUNDS = 16
    #: Panels kept per axes (each up to ~0.6 MB: the pixels of one axes at one set of limits,
    #: ticks and labels).
    PATCHES = 12
    #: zlib's effort for :meth:`png` (a live explorer sets :data:`SENT`).
    compress_level = KEPT

    def __init__(self, figsize: tuple[float, float], ncols: int = 1, dpi: int = 80) -> None:
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        self.canvas = FastCanvas(self.figure)  # same pixels, text a third cheaper
        self.axes: list[Axes] = list(self.figure.subplots(1, ncols, squeeze=False)[0])
        for ax in self.axes:  # minor ticks on log axes double the draw time: see png()
            ax.grid(True, which="major", alpha=0.3)
            # Titles stay at the top of the axes (where matplotlib puts them when no tick
            # label is on top) rather than measuring every axis on every draw to place them.
            ax.set_title("", y=1.0)
        self._scene: Hashable = None
        self._scene_version = 0
        #: (background key, scene version) -> the background with the scene drawn on it
        self._scene_image: tuple[Hashable, object] | None = None
        #: key -> (the canvas's pixels, what each axes drew into them)
        self._backgrounds: dict[Hashable, tuple[object, list[_Patch]]] = {}
        #: (axes index, its part of the key) -> what that axes draws
        self._patches: dict[tuple[int, Hashable], _Patch] = {}
        self._laid_out = False

    def dynamic(self, artist: ArtistT) -> ArtistT:
        """Mark ``artist`` as drawn on top of every other one (a marker, a readout)."""
        artist.set_zorder(artist.get_zorder() + 2 * _ON_TOP)
        setattr(artist, _LIFTED, True)
        setattr(artist, _ON_TOP_MARK, True)
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
        """True when ``key`` differs from the last scene's (the caller recomputes its curves)."""
        if key == self._scene:
            return False
        self._scene, self._scene_version = key, self._scene_version + 1
        return True

    def forget_scene(self) -> None:
        """After ``update`` refused a setting (raised ValueError) perhaps halfway through
        redrawing the scene: the next update redraws it whatever its key."""
        self._scene = None

    def _moving(self) -> list[Artist]:
        """Every artist drawn over the background, in the order one full draw would draw
        them: each axes' in zorder (raised above the axes' own), then the figure's texts."""
        moving: list[Artist] = []
        for ax in self.axes:
            titles = (ax.title, *(getattr(ax, f"_{side}_title") for side in ("left", "right")))
            ours = [*ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.images, *titles]
            if ax.legend_ is not None:  # over the curves, as a full draw puts it
                ours.append(ax.legend_)
            for artist in ours:
                _lift(artist)
            ids = {id(a) for a in ours}
            moving += sorted(
                (a for a in ax.get_children() if id(a) in ids), key=lambda a: a.get_zorder()
            )
        for text in self.figure.texts:
            _lift(text)
        return moving + sorted(self.figure.texts, key=lambda a: a.get_zorder())

    def _background_key(self) -> Hashable:
        """What the background shows: each axes' limits, scales, ticks and labels."""
        return tuple(
            (
                ax.get_xlim(),
                ax.get_ylim(),
                ax.get_xscale(),
                ax.get_yscale(),
                tuple(ax.xaxis.get_majorticklocs()),
                tuple(ax.yaxis.get_majorticklocs()),
                id(ax.xaxis.get_major_formatter()),
                id(ax.yaxis.get_major_formatter()),
                ax.get_xlabel(),
                ax.get_ylabel(),
                ax.get_visible(),
            )
            for ax in self.axes
        )

    def png(self, colours: int = 32) -> bytes:
        """The current frame as a palette PNG (zlib at :attr:`compress_level`).

        Two layers are cached: the background (the axes) and, on it, the scene (everything
        redrawn only on :meth:`new_scene`, the contract of a subclass). A move that keeps
        both draws only the artists marked :meth:`dynamic` (markers, readouts)."""
        moving = self._moving()
        key = self._background_key()
        scene_key = (key, self._scene_version)
        top = [a for a in moving if getattr(a, _ON_TOP_MARK, False)]
        if self._scene_image is not None and self._scene_image[0] == scene_key:
            self.canvas.restore_region(self._scene_image[1])  # type: ignore[no-untyped-call]
            for artist in top:
                self.figure.draw_artist(artist)
            return _canvas_png(self.canvas, colours, self.compress_level)
        self._scene_image = None
        cached = self._backgrounds.pop(key, None)
        if cached is None:
            for ax in self.axes:  # set again: log scales (loglog) bring the minor ticks back
                no_minor_ticks(ax)
            last = next(reversed(self._backgrounds), None)
            if self._laid_out and last is not None:
                patches = self._redraw_changed_axes(last, key)
                background = self.canvas.copy_from_bbox(self.figure.bbox)  # type: ignore[no-untyped-call]
            else:
                self.canvas.draw()  # type: ignore[no-untyped-call]
                self.figure.set_layout_engine("none")  # freeze it: every frame lines up
                self._laid_out = True
                background = self.canvas.copy_from_bbox(self.figure.bbox)  # type: ignore[no-untyped-call]
                key = self._background_key()  # the draw may settle autoscaled limits
                assert isinstance(key, tuple)
                patches = [self._axes_patch(i, part) for i, part in enumerate(key)]
                self.canvas.restore_region(background)  # type: ignore[no-untyped-call]
            cached = (background, patches)
        else:
            self.canvas.restore_region(cached[0])  # type: ignore[no-untyped-call]
        self._backgrounds[key] = cached  # most recent last
        while len(self._backgrounds) > self.BACKGROUNDS:
            del self._backgrounds[next(iter(self._backgrounds))]
        for artist in moving:
            if artist not in top:
                self.figure.draw_artist(artist)
        if key == scene_key[0]:  # (a draw that settled the limits keeps no scene image)
            scene = self.canvas.copy_from_bbox(self.figure.bbox)  # type: ignore[no-untyped-call]
            self._scene_image = (scene_key, scene)
        for artist in top:
            self.figure.draw_artist(artist)
        return _canvas_png(self.canvas, colours, self.compress_level)

    def _pixels(self) -> np.ndarray:
        """The canvas's RGBA buffer, writable in place."""
        return np.asarray(self.canvas.buffer_rgba())  # type: ignore[no-untyped-call]

    def _paper(self) -> np.ndarray:
        """The figure's colour as the canvas stores it (RGBA bytes)."""
        rgba = to_rgba_array(self.figure.get_facecolor())[0] * 255
        return np.array(rgba.round(), dtype=np.uint8)

    def _axes_patch(self, i: int, part: Hashable) -> _Patch:
        """The pixels ``self.axes[i]`` draws with its part ``part`` of the background key (its
        limits, ticks, labels): from the cache, else drawn alone on a blank canvas, where
        every pixel that is not paper is its own. The canvas is left scribbled on."""
        patch = self._patches.pop((i, part), None)
        if patch is None:
            pixels, paper = self._pixels(), self._paper()
            pixels[...] = paper
            self.axes[i].draw(self.canvas.get_renderer())
            patch = _Patch.of(pixels, paper)
        self._patches[(i, part)] = patch  # most recent last
        while len(self._patches) > self.PATCHES * len(self.axes):
            del self._patches[next(iter(self._patches))]
        return patch

    def _redraw_changed_axes(self, last: Hashable, key: Hashable) -> list[_Patch]:
        """The last background with each axes whose part of the key changed swapped: its old
        pixels back to paper, its new ones (cached, or drawn alone) pasted in their place.
        The layout is frozen and no two panels draw on the same pixel, so the result is the
        pixels of a full draw, at a fraction of its cost (a panel seen before is a copy)."""
        background, patches = self._backgrounds[last]
        patches = list(patches)
        assert isinstance(last, tuple) and isinstance(key, tuple)
        changed = [i for i, (old, new) in enumerate(zip(last, key, strict=True)) if old != new]
        new = {i: self._axes_patch(i, key[i]) for i in changed}  # may draw on the canvas
        self.canvas.restore_region(background)  # type: ignore[no-untyped-call]
        pixels, paper = self._pixels(), self._paper()
        for i in changed:
            patches[i].erase(pixels, paper)
        for i in changed:
            patches[i] = new[i]
            patches[i].paste(pixels)
        return patches

    def summary(self) -> str:
        """What the frame says in words, for its text alternative (#45): each axes' title and
        texts on it (readouts, labels at curves' ends), then the figure's own (a warning), in
        reading order; tick labels and legends are left to the caption."""
        said: list[str] = []
        for ax in self.axes:
            said += [ax.get_title(loc) for loc in ("left", "center", "right")]
            said += [t.get_text() for t in ax.texts if t.get_visible()]
        said += [t.get_text() for t in self.figure.texts if t.get_visible()]
        lines = [line for text in said for line in text.splitlines()]
        return "; ".join(" ".join(line.split()) for line in lines if line.strip())

    def as_figure(self) -> Figure:
        """The figure with every artist drawn normally (for a static, captioned display),
        looking as :meth:`png` draws it."""
        for ax in self.axes:  # as png() does: log scales bring the minor ticks back
            no_minor_ticks(ax)
        for artist in self._moving():
            artist.set_animated(False)
        return self.figure


_LIFTED = "_llmmath_lifted"
_ON_TOP_MARK = "_llmmath_dynamic"


def _lift(artist: Artist) -> None:
    """Leave ``artist`` out of the cached background, and above the axes' own artists
    (grid, spines, ticks), so that a one-pass draw stacks it as :meth:`FastFigure.png` does."""
    if not getattr(artist, _LIFTED, False):
        artist.set_zorder(artist.get_zorder() + _ON_TOP)
        setattr(artist, _LIFTED, True)
    artist.set_animated(True)


@dataclass(frozen=True)
class _Patch:
    """The pixels one axes draws over the paper: a rectangle of the canvas and, in it, the
    pixels that are not paper (the only ones the axes owns)."""

    rows: slice
    cols: slice
    image: np.ndarray
    mask: np.ndarray

    @classmethod
    def of(cls, pixels: np.ndarray, paper: np.ndarray) -> _Patch:
        """What is drawn on a canvas that was all ``paper``."""
        ink = pixels.view(np.uint32)[..., 0] != paper.view(np.uint32)[0]
        rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        if rows.size == 0:  # an invisible axes
            return cls(slice(0, 0), slice(0, 0), pixels[:0, :0].copy(), ink[:0, :0])
        where = (slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1))
        return cls(*where, pixels[where].copy(), ink[where].copy())

    def erase(self, pixels: np.ndarray, paper: np.ndarray) -> None:
        pixels[self.rows, self.cols][self.mask] = paper

    def paste(self, pixels: np.ndarray) -> None:
        region = pixels[self.rows, self.cols]
        region[self.mask] = self.image[self.mask]


def snap_log_limits(low: float, high: float, steps_per_decade: int = 2) -> tuple[float, float]:
    """``(low, high)`` widened to the next ``1/steps_per_decade`` of a decade on a log axis:
    limits that stay put while the curves move a little, so a move is a blit."""
    step = 1.0 / steps_per_decade
    bottom = math.floor(math.log10(low) / step) * step
    top = math.ceil(math.log10(high) / step) * step
    return 10.0**bottom, 10.0**top


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

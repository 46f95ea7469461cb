"""Shared figure plumbing: palette PNGs for widget frames, axes handling, notebook display."""

from __future__ import annotations

import io

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

COMPUTE_COLOUR, MEMORY_COLOUR, FLOOR_COLOUR = "#d95f02", "#1b9e77", "#222222"


def figure_png(figure: Figure, colours: int = 32) -> bytes:
    """Render ``figure`` with Agg to a palette PNG of at most ``colours`` colours."""
    canvas = (
        figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    )
    canvas.draw()  # type: ignore[no-untyped-call]
    image = Image.frombuffer(
        "RGBA",
        canvas.get_width_height(),
        canvas.buffer_rgba(),  # type: ignore[no-untyped-call]
    )
    buffer = io.BytesIO()
    palette = image.convert("RGB").quantize(colours, method=Image.Quantize.FASTOCTREE)
    palette.save(buffer, format="PNG")
    return buffer.getvalue()


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

"""fast_text's private matplotlib hooks exist on the pinned matplotlib, and are used.

Without them ``FastCanvas`` quietly falls back to matplotlib's plain Agg canvas: the pixels stay
right (tests/display/test_plots_widgets.py compares them) and every explorer gets a third slower at
drawing text, which no other test would notice. A matplotlib upgrade that drops or reshapes a
hook fails here, naming it.
"""

from __future__ import annotations

import inspect

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font

from llmmath.display.plots import fast_text

#: What fast_text calls or overrides that matplotlib does not document, by owner.
HOOKS = {
    RendererAgg: ("_draw_text_glyphs_and_boxes", "_prepare_font", "draw_text"),
    FT2Font: ("_layout", "_render_glyph", "_set_transform"),
}


def test_every_private_hook_is_there() -> None:
    missing = [
        f"{owner.__name__}.{name}"
        for owner, names in HOOKS.items()
        for name in names
        if not hasattr(owner, name)
    ]
    assert not missing, f"matplotlib no longer has {missing}: fast_text draws text slowly"
    assert fast_text._HOOKS, "fast_text found its hooks missing: FastCanvas is the plain one"


def test_the_overrides_take_what_matplotlib_passes() -> None:
    """matplotlib calls the overridden methods by keyword too: same parameters, same names."""
    for name in ("draw_text", "_draw_text_glyphs_and_boxes"):
        ours = list(inspect.signature(getattr(fast_text._Renderer, name)).parameters)
        theirs = list(inspect.signature(getattr(RendererAgg, name)).parameters)
        assert ours == theirs, f"RendererAgg.{name}{theirs} changed; fast_text has {ours}"


def test_the_fast_renderer_is_used_and_draws_matplotlib_pixels() -> None:
    """A figure with text, rotated text and a legend: FastCanvas draws with its own renderer
    (the layout items' and glyph bitmaps' private fields included) to Agg's exact pixels."""

    def drawn(canvas_class: type[FigureCanvasAgg]) -> tuple[np.ndarray, type]:
        fig = Figure(figsize=(3, 2), dpi=80)
        canvas = canvas_class(fig)
        ax = fig.add_subplot()
        ax.plot([1, 2, 3], label="tokens/s")
        ax.set(xlabel="batch", ylabel="time (ms)", title="decode 4.2 ms")
        ax.legend()
        canvas.draw()
        return np.asarray(canvas.buffer_rgba()).copy(), type(canvas.get_renderer())

    fast, renderer = drawn(fast_text.FastCanvas)
    plain, _ = drawn(FigureCanvasAgg)
    assert renderer is fast_text._Renderer, renderer
    assert fast.shape == plain.shape and (fast == plain).all(), "FastCanvas's pixels differ"

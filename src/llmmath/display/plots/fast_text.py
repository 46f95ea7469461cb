"""Text drawn faster, to the same pixels.

Matplotlib's Agg renderer (3.11) shapes every string again on every draw (libraqm: 0.1 ms
for "4", 1 ms for an axis label) and asks FreeType for every glyph's bitmap through a Python
loop. An explorer draws the same tick labels, legends and titles frame after frame, so a
:class:`FastCanvas` remembers both: a string's layout by its font, size and text, and a
glyph's bitmap by its font, size, rotation and where it falls within a pixel (in FreeType's
sixty-fourths: moved by whole pixels, a glyph renders to the same bitmap, moved). Text is
then about a third cheaper to draw, and the pixels are those of matplotlib's own renderer
(``tests/display/test_plots_widgets.py`` compares them). A matplotlib without these private hooks
gets its plain canvas.
"""

# matplotlib types none of the renderer internals this module overrides:
# mypy: disable-error-code="no-untyped-call,attr-defined,no-any-return"
from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.ft2font import FT2Font, RenderMode

#: Entries kept before a cache starts again (a glyph bitmap is ~100 bytes, a layout ~1 KB).
GLYPHS_KEPT, LAYOUTS_KEPT = 50_000, 5_000
_HOOKS = hasattr(RendererAgg, "_draw_text_glyphs_and_boxes") and all(
    hasattr(FT2Font, name) for name in ("_layout", "_render_glyph", "_set_transform")
)
#: key -> (the font, so that its id is not reused, and its bitmap, left and top at the
#: pixel's origin); a string's key -> (the font, its layout items)
_glyphs: dict[tuple[Any, ...], tuple[FT2Font, np.ndarray, int, int]] = {}
_layouts: dict[tuple[Any, ...], tuple[FT2Font, list[Any]]] = {}


class _Renderer(RendererAgg):
    """Agg with remembered layouts and glyph bitmaps."""

    def draw_text(  # type: ignore[no-untyped-def]
        self, gc, x, y, s, prop, angle, ismath=False, mtext=None
    ) -> None:
        if ismath:
            return self.draw_mathtext(gc, x, y, s, prop, angle)
        font = self._prepare_font(prop)
        features = mtext.get_fontfeatures() if mtext is not None else None
        language = mtext.get_language() if mtext is not None else None
        size = prop.get_size_in_points()
        shape = None if features is None else tuple(features)
        key = (id(font), size, self.dpi, s, get_hinting_flag(), shape, language)
        if key not in _layouts:
            if len(_layouts) >= LAYOUTS_KEPT:
                _layouts.clear()
            flags = get_hinting_flag()
            items = font._layout(s, flags=flags, features=features, language=language)
            _layouts[key] = (font, list(items))
        glyphs = ((i.ft_object, size, i.glyph_index, 0, 1, i.x, i.y) for i in _layouts[key][1])
        self._draw_text_glyphs_and_boxes(gc, x, y, angle, glyphs, [])
        return None

    def _draw_text_glyphs_and_boxes(  # type: ignore[no-untyped-def]
        self, gc, x, y, angle, glyphs, boxes
    ) -> None:
        if boxes:  # mathtext with bars (fractions, roots): as matplotlib draws it
            return super()._draw_text_glyphs_and_boxes(gc, x, y, angle, glyphs, boxes)
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        for font, size, index, slant, extend, dx, dy in glyphs:
            # FreeType's origin in 1/64 pixel, y upwards, as matplotlib computes it
            ox = round(0x40 * (x + dx * cos - dy * sin))
            oy = round(0x40 * (self.height - y + dx * sin + dy * cos))
            bitmap, left, top = self._glyph(gc, font, size, index, (angle, slant, extend), ox, oy)
            row = int(self.height) - (top + (oy >> 6)) + bitmap.shape[0]
            self._renderer.draw_text_image(bitmap, left + (ox >> 6), row, 0, gc)
        return None

    def _glyph(
        self,
        gc: Any,
        font: FT2Font,
        size: float,
        index: int,
        turn: tuple[float, ...],
        ox: int,
        oy: int,
    ) -> tuple[np.ndarray, int, int]:
        """One glyph's bitmap, left and top, rendered at ``(ox, oy)``'s place in its pixel."""
        smooth = bool(gc.get_antialiased())
        flags = get_hinting_flag()
        key = (id(font), size, self.dpi, index, turn, ox & 63, oy & 63, flags, smooth)
        hit = _glyphs.get(key)
        if hit is None:
            if len(_glyphs) >= GLYPHS_KEPT:
                _glyphs.clear()
            angle, slant, extend = turn
            cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
            matrix = (
                0x10000 * np.array([[cos, -sin], [sin, cos]]) @ [[extend, extend * slant], [0, 1]]
            )
            font.set_size(size, self.dpi)
            font._set_transform(matrix.round().astype(int), [ox & 63, oy & 63])
            rendered = font._render_glyph(
                index, flags, RenderMode.NORMAL if smooth else RenderMode.MONO
            )
            bitmap = np.array(rendered.buffer)
            if not smooth:
                bitmap *= 0xFF
            hit = _glyphs[key] = (font, bitmap, rendered.left, rendered.top)
        return hit[1], hit[2], hit[3]


class FastCanvas(FigureCanvasAgg):
    """An Agg canvas whose renderer remembers layouts and glyphs (see the module)."""

    def get_renderer(self) -> RendererAgg:
        if not _HOOKS:
            return super().get_renderer()
        w, h = self.get_width_height(physical=True)
        key = w, h, self.figure.dpi
        if self._lastKey != key:
            self.renderer = _Renderer(w, h, self.figure.dpi)
            self._lastKey = key
        return self.renderer

"""Sphinx extension: pages that load only what they use, with a clean console (#45).

Jupyter Book 1 and its themes put things in every page that this book does not use or that
log errors; ``scripts/bench_pages.py`` measures what is left on a phone network.

* sphinx-thebe (always loaded by Jupyter Book) declares ``const THEBE_JS_URL`` twice in each
  page's head, an error in every console, for a launch button the book turns off
  (``_config.yml``: ``thebe: false``): its script, style and settings are dropped, with the
  second copy of sphinx-togglebutton's selector.
* The explorers are plain HTML (``llmmath.display.widgets.common.StaticExplorer``): a page
  with one loads ``explorer.js`` (a few kB, deferred), and no other page does. No page
  embeds ipywidgets' state, and the book ships no widget renderer (``_config.yml``).
* pydata-sphinx-theme leaves ``data-mode`` empty when a reader has chosen no mode, and then
  logs "Got invalid theme mode"; ``default_mode: auto`` is what it resets to anyway.
* Source maps and files no page loads (the theme's FontAwesome script) are removed from the
  built ``_static`` after the build, and so are the explorers' script and MathJax's builds
  (the SVG one only nbgrader's feedback inlines) when no built page loads them.
* A page with maths preloads MathJax's three fonts that every formula uses, so they arrive
  with the script rather than after the typesetting.
* The lessons' figures (matplotlib's RGBA PNGs, 40-100 kB each) are rewritten as 256-colour
  palette PNGs (a fifth of the bytes, the same picture: a line plot has few colours), and
  each ``<img>`` of one gets its size (the page keeps its layout while it loads) and
  ``loading="lazy"``: a figure below the first screens loads when the reader scrolls near
  it, not in the first seconds, when the page's text, styles and MathJax need the network.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from PIL import Image
from sphinx.application import Sphinx
from sphinx.builders.html._assets import _JavaScript
from sphinx.config import Config

#: Built files no page loads, relative to ``_static`` (globs).
UNUSED = (
    "**/*.map",
    "sphinx-thebe.js",
    "scripts/fontawesome.js",  # book/_templates/layout.html: the theme's font draws the icons
    "sphinx-thebe.css",
)
#: Built files shipped only when some page loads them (by the name a page's HTML uses; globs):
#: the explorers' script, and of MathJax's builds the one the pages load (a build of the book
#: made before keeps the files an older configuration copied into its ``_static``).
SHIPPED_IF_LOADED = ("explorer.js", "mathjax/*.js")
#: MathJax's CHTML fonts (its script asks for them only once it has typeset the page: seconds
#: into a phone's load, and each one that arrives lays the page out again); the three that
#: every page with maths uses are preloaded with the page, beside the script (55 kB).
MATHJAX_FONTS = "mathjax/output/chtml/fonts/woff-v2"
PRELOADED_FONTS = ("MathJax_Main-Regular.woff", "MathJax_Math-Italic.woff", "MathJax_Zero.woff")
#: A lesson figure as docutils writes it (MyST-NB's image of a cell's PNG output).
FIGURE = re.compile(r'<img alt="([^"]*)" src="((?:\.\./)*_images/([^"/]+\.png))" />')
#: What a page's body holds when it has a static explorer (StaticExplorer's outer element).
EXPLORER = 'class="llm-explorer"'


def _is_thebe(asset: Any) -> bool:
    name = getattr(asset, "filename", "") or ""
    body = getattr(asset, "attributes", {}).get("body", "")
    return "thebe" in name or "THEBE_JS_URL" in body


def prune_assets(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    seen: set[str] = set()
    scripts = []
    for script in context.get("script_files", []):
        body = getattr(script, "attributes", {}).get("body", "")
        if _is_thebe(script) or (body and body in seen):
            continue
        seen.add(body)
        scripts.append(script)
    if EXPLORER in context.get("body", ""):
        scripts.append(_JavaScript("_static/explorer.js", defer="defer"))
    if any("mathjax/" in str(getattr(s, "filename", "")) for s in scripts):
        pathto = context["pathto"]
        context["metatags"] = context.get("metatags", "") + "".join(
            f'\n<link rel="preload" href="{pathto(f"_static/{MATHJAX_FONTS}/{name}", 1)}" '
            'as="font" type="font/woff" crossorigin="anonymous" />'
            for name in PRELOADED_FONTS
        )
    context["script_files"] = scripts
    context["css_files"] = [c for c in context.get("css_files", []) if not _is_thebe(c)]


def default_mode(app: Sphinx, config: Config) -> None:
    # A template variable of pydata-sphinx-theme's layout, not a theme option.
    config.html_context = {**config.html_context, "default_mode": "auto"}


def drop_unused(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    for pattern in UNUSED:
        for path in static.glob(pattern):
            if path.is_file():
                path.unlink()
    outdir = Path(app.outdir)
    pages = {p: p.read_text() for p in outdir.rglob("*.html") if "_static" not in p.parts}
    light_figures(outdir, pages)
    for pattern in SHIPPED_IF_LOADED:
        for path in static.glob(pattern):
            name = path.relative_to(static).as_posix()
            if path.is_file() and not any(f"_static/{name}" in page for page in pages.values()):
                path.unlink()


def palette_png(path: Path) -> tuple[int, int]:
    """Rewrite the opaque RGB(A) PNG at ``path`` as a 256-colour palette PNG where that is
    smaller (a figure with transparency, or a palette already, stays as it is); its size."""
    with Image.open(path) as image:
        size = image.size
        opaque = image.mode == "RGB" or (
            image.mode == "RGBA" and image.getchannel("A").getextrema()[0] == 255
        )
        if not opaque:
            return size
        palette = image.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE)
    buffer = io.BytesIO()
    palette.save(buffer, format="PNG", optimize=True)
    if buffer.tell() < path.stat().st_size:
        path.write_bytes(buffer.getvalue())
    return size


def light_figures(outdir: Path, pages: dict[Path, str]) -> None:
    """The figures as palette PNGs, and each ``<img>`` of one sized and loaded lazily (a page
    built before has them already: its tag no longer matches :data:`FIGURE`)."""
    sizes = {path.name: palette_png(path) for path in (outdir / "_images").glob("*.png")}

    def sized(match: re.Match[str]) -> str:
        alt, src, name = match.groups()
        width, height = sizes[name]
        return (
            f'<img alt="{alt}" src="{src}" width="{width}" height="{height}" '
            'loading="lazy" decoding="async" />'
        )

    for path, page in pages.items():
        lighter = FIGURE.sub(sized, page)
        if lighter != page:
            path.write_text(lighter)
            pages[path] = lighter


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", default_mode)
    # After the extensions that add the assets (sphinx-thebe, MyST-NB's widget scripts).
    app.connect("html-page-context", prune_assets, priority=900)
    app.connect("build-finished", drop_unused)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Sphinx extension: pages that load only what they use, with a clean console (#45).

Jupyter Book 1 and its themes put things in every page that this book does not use or that
log errors; ``scripts/bench_pages.py`` measures what is left on a phone network.

* sphinx-thebe (always loaded by Jupyter Book) declares ``const THEBE_JS_URL`` twice in each
  page's head, an error in every console, for a launch button the book turns off
  (``_config.yml``: ``thebe: false``): its script, style and settings are dropped, with the
  second copy of sphinx-togglebutton's selector.
* The explorers are plain HTML (``llmmath.display.widgets.common.StaticExplorer``): a page
  with one loads ``explorer.js`` (a few kB, deferred), and no other page does. The widget
  renderer (html-manager, 4.4 MB, and require.js) comes only with a page that embeds
  ipywidgets' state (MyST-NB adds it then; none does now), and ``widget_compat.js``, its
  shims, only with it.
* pydata-sphinx-theme leaves ``data-mode`` empty when a reader has chosen no mode, and then
  logs "Got invalid theme mode"; ``default_mode: auto`` is what it resets to anyway.
* Source maps and files no page loads (the renderer's other bundles, MathJax's SVG build that
  only nbgrader's feedback inlines, the widget fonts' older formats) are removed from the
  built ``_static`` after the build, and so are the widget renderer, its shims and the
  explorers' script when no built page loads them.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.builders.html._assets import _JavaScript
from sphinx.config import Config

#: Built files no page loads, relative to ``_static`` (globs).
UNUSED = (
    "**/*.map",
    "html-manager/embed.js",
    "html-manager/embed.js.LICENSE.txt",
    "html-manager/libembed-amd.js",
    "html-manager/*.embed.js",
    "html-manager/*.eot",
    "html-manager/*.ttf",
    "html-manager/*.woff",
    "html-manager/*.svg",
    "mathjax/tex-svg.js",
    "sphinx-thebe.js",
    "scripts/fontawesome.js",  # book/_templates/layout.html: the theme's font draws the icons
    "sphinx-thebe.css",
)
#: Built files shipped only when some page loads them (by the name a page's HTML uses).
SHIPPED_IF_LOADED = {
    "html-manager/embed-amd.js": "html-manager",
    "require.js": "require.js",
    "widget_compat.js": "widget_compat.js",
    "explorer.js": "explorer.js",
}
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
    loads_renderer = any("html-manager" in str(getattr(s, "filename", "")) for s in scripts)
    if not loads_renderer:  # the renderer's shims, only beside it
        scripts = [s for s in scripts if "widget_compat.js" not in str(getattr(s, "filename", s))]
    if EXPLORER in context.get("body", ""):
        scripts.append(_JavaScript("_static/explorer.js", defer="defer"))
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
    pages = [p.read_text() for p in Path(app.outdir).rglob("*.html") if "_static" not in p.parts]
    for loaded, shipped in SHIPPED_IF_LOADED.items():
        if not any(f"_static/{loaded}" in page for page in pages):
            path = static / shipped
            if path.is_dir():
                shutil.rmtree(path)
            elif path.is_file():
                path.unlink()


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", default_mode)
    # After the extensions that add the assets (sphinx-thebe, MyST-NB's widget scripts).
    app.connect("html-page-context", prune_assets, priority=900)
    app.connect("build-finished", drop_unused)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

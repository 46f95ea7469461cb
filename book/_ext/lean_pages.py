"""Sphinx extension: pages that load only what they use, with a clean console (#45).

Jupyter Book 1 and its themes put things in every page that this book does not use or that
log errors; ``scripts/bench_pages.py`` measures what is left on a phone network.

* sphinx-thebe (always loaded by Jupyter Book) declares ``const THEBE_JS_URL`` twice in each
  page's head, an error in every console, for a launch button the book turns off
  (``_config.yml``: ``thebe: false``): its script, style and settings are dropped, with the
  second copy of sphinx-togglebutton's selector.
* (The widget renderer, 4.4 MB, is deferred by ``_config.yml``'s ``nb_ipywidgets_js``.)
* pydata-sphinx-theme leaves ``data-mode`` empty when a reader has chosen no mode, and then
  logs "Got invalid theme mode"; ``default_mode: auto`` is what it resets to anyway.
* Source maps and files no page loads (the renderer's other bundles, MathJax's SVG build that
  only nbgrader's feedback inlines, the widget fonts' older formats) are removed from the
  built ``_static`` after the build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
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


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", default_mode)
    # After the extensions that add the assets (sphinx-thebe, MyST-NB's widget scripts).
    app.connect("html-page-context", prune_assets, priority=900)
    app.connect("build-finished", drop_unused)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

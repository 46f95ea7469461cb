"""Sphinx extension: a lesson's figure gets a short text alternative that points to its caption.

``llmmath.display.pages.figure`` shows a drawing, then its caption (``**Figure.** ...``)
beneath it in the same cell's output, so that the caption reads the same in the book and in
JupyterLab.
MyST-NB gives the image the file's path as ``alt``; a screen reader would read that name. The
caption, read next, says what the figure shows: an ``alt`` copying it was read twice (#45).
So the ``alt`` names the image as a chart the caption below describes (WCAG technique G74);
the book's a11y.js links the image to itself at full size, for a phone's reader to zoom into
(tests/display/test_accessibility.py checks both).

A book page's figure made with MyST-NB's ``mystnb: figure:`` (the validation page's) has its
caption in the figure's own ``<figcaption>``, read after the image too: it gets the same ``alt``.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

PREFIX = "Figure."
ALT = "Chart; the caption below says what it shows. Opens at full size."


def _named_by_its_file(image: nodes.image) -> bool:
    alt = str(image.get("alt", ""))
    return not alt or alt == image.get("uri") or alt.endswith((".png", ".svg", ".jpg"))


def caption_as_alt(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for figure in doctree.findall(nodes.figure):
        if any(figure.findall(nodes.caption)):
            for image in figure.findall(nodes.image):
                if _named_by_its_file(image):
                    image["alt"] = ALT
    for output in doctree.findall(nodes.container):
        if "cell_output" not in output.get("classes", []):
            continue
        images = list(output.findall(nodes.image))
        captions = [
            p.astext() for p in output.findall(nodes.paragraph) if p.astext().startswith(PREFIX)
        ]
        for image, _caption in zip(images, captions, strict=False):
            if _named_by_its_file(image):
                image["alt"] = ALT


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", caption_as_alt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Sphinx extension: a lesson's figure gets a short text alternative that points to its caption.

``llmmath.display.pages.figure`` shows a drawing, then its caption (``**Figure.** ...``)
beneath it in the same cell's output, so that the caption reads the same in the book and in
JupyterLab.
MyST-NB gives the image the file's path as ``alt``; a screen reader would read that name. The
caption, read next, says what the figure shows: an ``alt`` copying it was read twice (#45).
So the ``alt`` names the image as a chart the caption below describes (WCAG technique G74);
the book's a11y.js links the image to itself at full size, for a phone's reader to zoom into
(tests/display/test_accessibility.py checks both).
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

PREFIX = "Figure."
ALT = "Chart; the caption below says what it shows. Opens at full size."


def caption_as_alt(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for output in doctree.findall(nodes.container):
        if "cell_output" not in output.get("classes", []):
            continue
        images = list(output.findall(nodes.image))
        captions = [
            p.astext() for p in output.findall(nodes.paragraph) if p.astext().startswith(PREFIX)
        ]
        for image, _caption in zip(images, captions, strict=False):
            alt = str(image.get("alt", ""))
            if not alt or alt == image.get("uri") or alt.endswith((".png", ".svg", ".jpg")):
                image["alt"] = ALT


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", caption_as_alt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

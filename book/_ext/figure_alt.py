"""Sphinx extension: a lesson's figure gets its caption as its text alternative.

``llmmath.display.pages.figure`` shows a drawing, then its caption (``**Figure.** ...``)
beneath it in the same cell's output, so that the caption reads the same in the book and in
JupyterLab.
MyST-NB gives the image the file's path as ``alt``; a screen reader would read that name.
This sets each such image's ``alt`` to its caption (tests/display/test_accessibility.py checks it).
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

PREFIX = "Figure."


def caption_as_alt(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for output in doctree.findall(nodes.container):
        if "cell_output" not in output.get("classes", []):
            continue
        images = list(output.findall(nodes.image))
        captions = [
            p.astext() for p in output.findall(nodes.paragraph) if p.astext().startswith(PREFIX)
        ]
        for image, caption in zip(images, captions, strict=False):
            alt = str(image.get("alt", ""))
            if not alt or alt == image.get("uri") or alt.endswith((".png", ".svg", ".jpg")):
                image["alt"] = " ".join(caption.removeprefix(PREFIX).split())


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", caption_as_alt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The course's chapters in the book's order, read from the one list: ``_toc.yml``.

A chapter is a lesson under the table of contents' "Chapters" caption (``lessons/<ch>``); its
short name ``<ch>`` also names its plots and widgets modules, exercise and tests
(CONTRIBUTING). The benchmarks, the Lab benchmark and the widget tests take their chapters
from here, so a new chapter is one line in ``_toc.yml``, not a line in each of them.

``_toc.yml`` sits at the root of the course, beside ``src/``: it is read from the checkout the
package is installed from (``make setup`` installs it editable). An installed wheel has no
table of contents, and :func:`chapters` says so rather than guess.

>>> chapters()[:2]
('roofline', 'batching')
"""

from __future__ import annotations

import re
from pathlib import Path

from llmmath.core.contracts import contract

#: The course's root: ``src/llmmath/chapters.py`` -> the folder holding ``src/``.
ROOT = Path(__file__).resolve().parents[3]
CAPTION = "Chapters"
_CAPTION = re.compile(r"^\s*-\s*caption:\s*(?P<caption>.+?)\s*$")
_LESSON = re.compile(r"^\s*-\s*file:\s*lessons/(?P<name>\w+)\s*$")


@contract()
def toc_path() -> Path:
    """The course's ``_toc.yml``; ``FileNotFoundError`` naming where it was looked for."""
    path = ROOT / "_toc.yml"
    if not path.is_file():
        raise FileNotFoundError(
            f"the course's chapters are listed in _toc.yml at the root of its checkout, but "
            f"{path} does not exist: llmmath reads them from the checkout it is installed from "
            f"(`make setup`, an editable install), not from an installed wheel"
        )
    return path


@contract()
def chapters() -> tuple[str, ...]:
    """Each lesson under the "Chapters" caption of ``_toc.yml`` (``lessons/<ch>``), in order.

    Read line by line (the standard library has no YAML reader): a ``- caption:`` line opens a
    part, a ``- file: lessons/<ch>`` line in the "Chapters" part is a chapter.
    """
    path = toc_path()
    found: list[str] = []
    part = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if caption := _CAPTION.match(line):
            part = caption["caption"].strip("'\"")
        elif part == CAPTION and (lesson := _LESSON.match(line)):
            found.append(lesson["name"])
    if not found:
        raise ValueError(f"{path} lists no lessons/<chapter> under a '- caption: {CAPTION}' part")
    return tuple(found)

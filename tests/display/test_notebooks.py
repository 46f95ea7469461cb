"""Every lesson is a notebook that JupyterLab and Jupyter Book both read, the same way.

Each lesson is executed twice by ``make test``: by the book build in the static widget mode
(``-W``: an error fails it) and by ``tests/course/test_lab.py`` in JupyterLab with live widgets,
where no cell may print an error or to stderr, and every figure, caption and explorer must show.
(A third, headless live run here repeated the second: about 20 s of the suite.)"""

from __future__ import annotations

from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "lessons").glob("*.md"))


def test_there_are_lessons() -> None:
    assert [p.name for p in LESSONS if p.name == "roofline.md"], "lessons/roofline.md is missing"


def test_lessons_have_execution_front_matter() -> None:
    """Without the full jupytext front matter Jupyter Book silently skips execution."""
    for path in LESSONS:
        metadata = jupytext.read(path).metadata
        assert metadata["jupytext"]["text_representation"]["format_name"] == "myst", path
        assert metadata["kernelspec"]["name"] == "python3", path


def test_pages_are_in_the_layout_jupyterlab_saves() -> None:
    """JupyterLab autosaves an opened lesson through jupytext: if the file is already in
    jupytext's layout, a learner who only reads and runs it leaves the checkout clean."""
    from llmmath_course import page_layout as normalize

    pages = normalize.notebook_pages()
    assert {p.name for p in LESSONS} <= {p.name for p in pages}
    differ = [p.name for p in pages if normalize.as_jupytext_saves(p.read_text()) != p.read_text()]
    assert not differ, f"run `python scripts/normalize_pages.py` to fix {differ}"

"""Every lesson executes headless, top to bottom, with no error output — in both widget modes."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("*.md"))


def execute(path: Path, env_static: bool, monkeypatch: pytest.MonkeyPatch) -> nbformat.NotebookNode:
    monkeypatch.setenv("LLMMATH_STATIC_WIDGETS", "1" if env_static else "0")
    notebook = jupytext.read(path)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    return notebook


def error_outputs(notebook: nbformat.NotebookNode) -> list[str]:
    return [
        f"cell {index}: {output.get('ename')}: {output.get('evalue')}"
        for index, cell in enumerate(notebook.cells)
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error" or output.get("name") == "stderr"
    ]


def test_there_are_lessons() -> None:
    assert [p.name for p in LESSONS if p.name == "roofline.md"], "lessons/roofline.md is missing"


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_lesson_runs_live(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a learner runs it in JupyterLab: live widgets, every figure displayed as a PNG."""
    notebook = execute(path, env_static=False, monkeypatch=monkeypatch)
    assert not error_outputs(notebook)
    kinds = {
        key for cell in notebook.cells for o in cell.get("outputs", []) for key in o.get("data", {})
    }
    assert "image/png" in kinds, "no figure was displayed as an image"
    assert "application/vnd.jupyter.widget-view+json" in kinds, "no widget was displayed"


def test_lessons_have_execution_front_matter() -> None:
    """Without the full jupytext front matter Jupyter Book silently skips execution."""
    for path in LESSONS:
        metadata = jupytext.read(path).metadata
        assert metadata["jupytext"]["text_representation"]["format_name"] == "myst", path
        assert metadata["kernelspec"]["name"] == "python3", path


def test_pages_are_in_the_layout_jupyterlab_saves() -> None:
    """JupyterLab autosaves an opened lesson through jupytext: if the file is already in
    jupytext's layout, a learner who only reads and runs it leaves the checkout clean."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("normalize", ROOT / "scripts/normalize_pages.py")
    assert spec and spec.loader
    normalize = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(normalize)
    pages = normalize.notebook_pages()
    assert {p.name for p in LESSONS} <= {p.name for p in pages}
    differ = [p.name for p in pages if normalize.as_jupytext_saves(p.read_text()) != p.read_text()]
    assert not differ, f"run `python scripts/normalize_pages.py` to fix {differ}"

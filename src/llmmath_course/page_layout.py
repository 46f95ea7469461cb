"""Rewrite the MyST notebook pages (lessons/*.md, book/*.md) in the form jupytext saves them.

JupyterLab opens these pages as notebooks through jupytext and autosaves them in jupytext's
own layout (option blocks in YAML, a blank line after them, its version in the front matter).
Keeping the files in that layout already means a learner who opens a lesson in `make lab`
leaves no change behind for `git pull` to trip over. Captions become one line of text, which
jupytext then wraps. tests/display/test_notebooks.py checks every page; ``main`` fixes them:

    python scripts/normalize_pages.py           # rewrite the pages that differ
    python scripts/normalize_pages.py --check   # list them, exit 1 if any
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[2]
FORMAT = "md:myst"


def notebook_pages(root: Path = ROOT) -> list[Path]:
    """Every Markdown page with jupytext front matter: these execute as notebooks."""
    pages = sorted((root / "lessons").glob("*.md")) + sorted((root / "book").glob("*.md"))
    return [p for p in pages if p.read_text().startswith("---\njupytext:")]


def as_jupytext_saves(text: str) -> str:
    """``text`` as jupytext writes it back after a read, with one-line figure captions."""
    notebook = jupytext.reads(text, fmt=FORMAT)
    for cell in notebook.cells:
        figure = cell.metadata.get("mystnb", {}).get("figure", {})
        if "caption" in figure:
            figure["caption"] = " ".join(figure["caption"].split())
    return str(jupytext.writes(notebook, fmt=FORMAT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only list the pages that differ")
    args = parser.parse_args(argv)
    differ = []
    for page in notebook_pages():
        text = page.read_text()
        saved = as_jupytext_saves(text)
        if saved != text:
            differ.append(page.relative_to(ROOT))
            if not args.check:
                page.write_text(saved)
    verb = "differ from" if args.check else "rewritten as"
    for page in differ:
        print(f"{page}: {verb} what jupytext saves")
    return 1 if args.check and differ else 0

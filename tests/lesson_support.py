"""A lesson's numbers as its hidden cells compute them, for tests that pin prose to the package
(for a lesson whose numbers moved to ``llmmath.display.numbers.<chapter>``, that module's
``numbers()``); and its ``{eval}`` roles resolved in page order, as the book's inline execution
resolves them."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jupytext

from llmmath.display.numbers import has_numbers

ROOT = Path(__file__).resolve().parent.parent
# MyST's inline role: {eval}`expression`.
EVAL_ROLE = re.compile(r"\{eval\}`([^`]+)`")


class _Stub:
    """Stands in for `plots` and `widgets`: any attribute, any call, returns itself."""

    def __getattr__(self, name: str) -> _Stub:
        return self

    def __call__(self, *args: object, **kwargs: object) -> _Stub:
        return self

    def __format__(self, spec: str) -> str:
        return "<stub>"


def _runs_here(cell: Any) -> bool:
    """A hidden cell that computes (not the reader's own cells: a measurement, an error shown;
    not a figure)."""
    tags = cell.metadata.get("tags", [])
    return "remove-input" in tags and "pages.figure(" not in cell.source


@cache
def lesson(page: str) -> Any:
    """What a lesson shows, by name: for a lesson whose numbers live in
    ``llmmath.display.numbers.<chapter>``, its ``numbers()`` (read names with dots,
    ``decode.llama_memory_ms``, e.g. through ``operator.attrgetter``); for another, what its
    hidden cells define (:func:`hidden_namespace`)."""
    chapter = Path(page).stem
    if has_numbers(chapter):
        return importlib.import_module(f"llmmath.display.numbers.{chapter}").numbers()
    return SimpleNamespace(**hidden_namespace(page))


@cache
def hidden_namespace(page: str) -> dict[str, Any]:
    """What a lesson's hidden cells define (its setup cell's ``n`` among them), without drawing
    its figures: the namespace its figure cells run in."""
    cells = [c for c in jupytext.read(ROOT / "lessons" / page).cells if c.cell_type == "code"]
    namespace: dict[str, Any] = {}
    for cell in cells:
        if not _runs_here(cell):
            continue
        exec(cell.source, namespace)
        namespace["plots"] = namespace["widgets"] = _Stub()
    return namespace


def bound_names(source: str) -> set[str]:
    """The names a cell binds (assignments, loops, imports, definitions), read, not run."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def evals_in_page_order(path: Path) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Each ``{eval}`` expression of the lesson at ``path``, in page order, with the namespace
    the book's kernel has at that point: (markdown cell number, expression, namespace). Hidden
    cells run as in ``lesson``; the names the other code cells bind (the reader's own cells and
    figures, which the book runs) stand as stubs from their place on, so an expression resolves
    here exactly when a cell before it defines each name it uses. Evaluate each expression as
    it comes: the namespace moves on with the page."""
    namespace: dict[str, Any] = {}
    for number, cell in enumerate(jupytext.read(path).cells):
        if cell.cell_type == "markdown":
            for expression in EVAL_ROLE.findall(cell.source):
                yield number, expression, namespace
        elif cell.cell_type == "code":
            if _runs_here(cell):
                exec(cell.source, namespace)
            else:
                namespace.update(dict.fromkeys(bound_names(cell.source), _Stub()))
            namespace["plots"] = namespace["widgets"] = _Stub()

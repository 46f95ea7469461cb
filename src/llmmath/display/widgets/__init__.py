"""Controls for the lessons, one module per chapter, on the shared plumbing in ``common``.

Every module of this folder is imported here (``widgets.batching`` ... after ``from llmmath
import widgets``): a new chapter's ``widgets/<ch>.py`` needs no line in this file, and
:func:`declarations` finds its explorers by the chapter list in ``_toc.yml``."""

import importlib
import inspect
import pkgutil
from collections.abc import Callable

from llmmath.display.chapters import chapters
from llmmath.display.widgets.common import (
    STATIC_ENV,
    Control,
    Explorer,
    Options,
    Range,
    StaticExplorer,
    explorer,
    static_mode,
)

_CHAPTER_MODULES = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "common")
for _name in _CHAPTER_MODULES:
    importlib.import_module(f"{__name__}.{_name}")


def chapter_declarations(chapter: str) -> dict[str, Callable[[], Explorer]]:
    """The explorers ``widgets.<chapter>`` declares (each function whose name ends in
    ``declaration``), in the order the module defines them: the first is the lesson's main
    explorer. Keyed ``<chapter>`` for ``declaration``, ``<chapter>.<which>`` for
    ``<which>_declaration``."""
    try:
        module = importlib.import_module(f"{__name__}.{chapter}")
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"chapter {chapter!r} (in _toc.yml) has no widgets module {__name__}.{chapter}"
        ) from error
    found = {}
    for name, value in vars(module).items():
        mine = inspect.isfunction(value) and value.__module__ == module.__name__
        if name.endswith("declaration") and mine:
            which = name.removesuffix("declaration").strip("_")
            found[f"{chapter}.{which}" if which else chapter] = value
    if not found:
        raise ValueError(f"{module.__name__} declares no explorer (a `declaration()` function)")
    return found


def declarations() -> dict[str, Callable[[], Explorer]]:
    """Every explorer of every chapter in ``_toc.yml``, in the book's order."""
    return {k: v for chapter in chapters() for k, v in chapter_declarations(chapter).items()}


def main_declaration(chapter: str) -> Callable[[], Explorer]:
    """The lesson's main explorer: the first its widgets module declares."""
    return next(iter(chapter_declarations(chapter).values()))


__all__ = [
    "STATIC_ENV",
    "Control",
    "Explorer",
    "Options",
    "Range",
    "StaticExplorer",
    "chapter_declarations",
    "declarations",
    "explorer",
    "main_declaration",
    "static_mode",
    *_CHAPTER_MODULES,
]

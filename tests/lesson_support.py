"""A lesson's numbers as its hidden cells compute them, for tests that pin prose to the package."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jupytext

ROOT = Path(__file__).resolve().parent.parent


class _Stub:
    """Stands in for `plots` and `widgets`: any attribute, any call, returns itself."""

    def __getattr__(self, name: str) -> _Stub:
        return self

    def __call__(self, *args: object, **kwargs: object) -> _Stub:
        return self


@cache
def lesson(page: str) -> SimpleNamespace:
    """What a lesson's hidden cells define, without drawing its figures."""
    cells = [c for c in jupytext.read(ROOT / "lessons" / page).cells if c.cell_type == "code"]
    namespace: dict[str, Any] = {}
    for cell in cells:
        if "remove-input" not in cell.metadata.get("tags", []) or "pages.figure(" in cell.source:
            continue  # the reader's own cells (a measurement, an error shown) and figures
        exec(cell.source, namespace)
        namespace["plots"] = namespace["widgets"] = _Stub()
    return SimpleNamespace(**namespace)

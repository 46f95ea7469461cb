"""The package's shape: no import cycles, modules a reader can hold in their head, doctests."""

from __future__ import annotations

import ast
import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import llmmath

PACKAGE = Path(llmmath.__file__).parent
MAX_LINES = 500


def _modules() -> list[str]:
    return sorted(info.name for info in pkgutil.walk_packages([str(PACKAGE)], prefix="llmmath."))


def _source(module: str) -> Path:
    path = PACKAGE.joinpath(*module.split(".")[1:])
    return path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"


def _imports(module: str) -> set[str]:
    """Every llmmath module ``module`` imports, at top level or inside a function."""
    source = _source(module)
    is_package = source.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = f"{base}.{node.module}" if node.module else base
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llmmath"):
            found.add(str(node.module))
    return found & set(_modules())


def test_no_module_imports_itself_back() -> None:
    graph = {module: _imports(module) for module in _modules()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    # A package's __init__ imports its submodules, which import siblings, not the package.
    cycles = [m for m in graph if not m.endswith(("plots", "widgets")) and reaches(m, m, {m})]
    assert not cycles, f"import cycles through {cycles}"


def test_the_old_moe_roofline_cycle_is_gone() -> None:
    assert "llmmath.moe" not in _imports("llmmath.roofline")


@pytest.mark.parametrize("module", _modules())
def test_modules_stay_short(module: str) -> None:
    lines = len(_source(module).read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it along a seam"


@pytest.mark.parametrize("module", _modules())
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0

"""The package's shape: its layers (import-linter's contracts in pyproject.toml), modules a
reader can hold in their head, doctests."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import os
import pkgutil
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import llmmath

PACKAGE = Path(llmmath.__file__).parent
ROOT = PACKAGE.parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
#: A guide, not a guillotine: lines of code, never comments or docstrings (a module is not made
#: to fit by trimming what explains it). Past it, split along a seam.
MAX_CODE_LINES = 450


def _modules() -> list[str]:
    return sorted(info.name for info in pkgutil.walk_packages([str(PACKAGE)], prefix="llmmath."))


def _source(module: str) -> Path:
    path = PACKAGE.joinpath(*module.split(".")[1:])
    return path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"


def code_lines(source: str) -> int:
    """Lines holding code: not blank, not a comment, not part of a docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, (body[0].end_lineno or 0) + 1))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#") and number not in docstrings
    )


def lint_imports(root: Path, src: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's contracts (pyproject.toml) over the package under ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True
    )


def test_the_layers_hold() -> None:
    result = lint_imports(ROOT, ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("core/units.py", "import llmmath.batching", "Layers"),  # the core reaches a chapter
        ("core/dtypes.py", "import matplotlib", "Only the display layer draws"),
        ("batching.py", "import ipywidgets", "Only the display layer draws"),
        ("core/units.py", "import llmmath.core.serving", "No import cycles"),
    ],
)
def test_the_contracts_catch_a_broken_layer(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    """The contracts can fail: one import added to a copy of the package breaks the one named."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    copy = tmp_path / "src" / "llmmath"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    with (copy / module).open("a") as source:
        source.write(f"\n{line}  # noqa\n")
    result = lint_imports(tmp_path, tmp_path / "src")
    assert result.returncode != 0, result.stdout
    verdicts = [row for row in result.stdout.splitlines() if row.endswith(("KEPT", "BROKEN"))]
    assert any(broken in row and row.endswith("BROKEN") for row in verdicts), result.stdout


@pytest.mark.parametrize("module", _modules())
def test_modules_stay_short(module: str) -> None:
    lines = code_lines(_source(module).read_text())
    assert lines <= MAX_CODE_LINES, f"{module} has {lines} lines of code; split it along a seam"


def test_the_size_rule_counts_code_not_comments() -> None:
    source = (
        '"""A module.\n\nExplained at length.\n"""\n\n# why\nx = 1  # what\n\n\n'
        'def f():\n    """Doc."""\n    return x\n'
    )
    assert code_lines(source) == 3


@pytest.mark.parametrize("module", _modules())
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


# ---- One address per thing ---------------------------------------------------------------------

#: Public names the model layers define twice, each for a reason a learner's copy fixes: a
#: released exercise (never rewritten) calls ``kv_cache.max_batch``, which counts sliding-window
#: layers at their window; ``core.capacity.max_batch`` counts every layer in full.
TWICE_DEFINED = {"max_batch": {"llmmath.core.capacity", "llmmath.kv_cache"}}
MODEL_LAYERS = ("llmmath.core.", "llmmath.beyond.", "llmmath.validation.")


def _is_model_module(module: str) -> bool:
    """The core, the chapter modules at the top (not the display or the CLI), beyond, validation."""
    top_level = module.count(".") == 1 and module not in ("llmmath.display", "llmmath.cli")
    return top_level or module.startswith(MODEL_LAYERS)


def _llmmath_imports(tree: ast.AST) -> Iterator[tuple[str, str]]:
    """Each ``from llmmath.x import name`` of ``tree``, as (``llmmath.x``, ``name``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            package = node.module.startswith("llmmath")
            yield from ((node.module, alias.name) for alias in node.names if package)


def _defined_elsewhere(thing: object, module: str) -> str | None:
    """Where ``thing`` (a function or class of the package) is defined, if not in ``module``."""
    if not (inspect.isclass(thing) or inspect.isfunction(thing)):
        return None  # a module, or a constraint instance
    home = thing.__module__
    return home if home != module and home.startswith("llmmath") else None


def module_aliases(tree: ast.AST) -> dict[str, str]:
    """The names ``tree`` gives the package's modules: ``from llmmath import moe`` -> ``moe``,
    ``import llmmath.core.racks as racks`` -> ``racks``."""
    names = {}
    for module, name in _llmmath_imports(tree):
        if inspect.ismodule(getattr(importlib.import_module(module), name, None)):
            names[name] = f"{module}.{name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname: a.name for a in node.names if a.asname and a.name[:7] == "llmmath"}
    for node in ast.walk(tree):  # ``from llmmath import moe as m``
        if isinstance(node, ast.ImportFrom) and node.module and node.module[:7] == "llmmath":
            for alias in node.names:
                if alias.asname and alias.name in names:
                    names[alias.asname] = names.pop(alias.name)
    return names


def _attribute_uses(tree: ast.AST) -> Iterator[tuple[ast.Attribute, str, object]]:
    """Each ``x.name`` of ``tree`` where ``x`` names a module of the package, as (the node,
    that module, what ``name`` is there)."""
    aliases = module_aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            home = aliases.get(node.value.id)
            if home is not None:
                yield node, home, getattr(importlib.import_module(home), node.attr, None)


def misaddressed_imports(module: str, source: str) -> list[str]:
    """``from llmmath.x import name`` in ``module`` where ``name`` (a function or class) is
    defined elsewhere, and ``x.name`` where ``x`` is a module of the package that only passes
    ``name`` on: code names the module that defines a thing, not one that passes it on."""
    tree = ast.parse(source)
    found = []
    for home, name in _llmmath_imports(tree):
        where = _defined_elsewhere(getattr(importlib.import_module(home), name, None), home)
        if where:
            found.append(f"{module}: {name} from {home}, defined in {where}")
    for node, home, thing in _attribute_uses(tree):
        where = _defined_elsewhere(thing, home)
        if where:
            found.append(f"{module}:{node.lineno}: {ast.unparse(node)}, defined in {where}")
    return found


def _private(name: str) -> bool:
    """``_x`` (a helper of its module), not ``__version__`` or ``__file__``."""
    return name.startswith("_") and not name.startswith("__")


def private_names_crossing(module: str, source: str) -> list[str]:
    """A module's private helper (``_x``) used by another module: ``from llmmath.x import _y``
    or ``x._y``. A helper another module needs is public (its contract, its docstring) or
    lives where it is used. A private *module* (``core._constraints``) is the package's own
    toolkit and may be imported: its names are public to the package."""
    tree = ast.parse(source)
    found = []
    for home, name in _llmmath_imports(tree):
        thing = getattr(importlib.import_module(home), name, None)
        if _private(name) and home != module and not inspect.ismodule(thing):
            found.append(f"{module}: {name} from {home}")
    for node, home, thing in _attribute_uses(tree):
        if home != module and _private(node.attr) and not inspect.ismodule(thing):
            found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    return found


def definitions_by_name(modules: list[str]) -> dict[str, set[str]]:
    """Each public function or class name, with the modules that define (not import) it."""
    homes: dict[str, set[str]] = {}
    for module in modules:
        for name, thing in vars(importlib.import_module(module)).items():
            a_definition = inspect.isclass(thing) or inspect.isfunction(thing)
            if a_definition and not name.startswith("_") and thing.__module__ == module:
                homes.setdefault(name, set()).add(module)
    return homes


def test_code_imports_each_thing_from_the_module_that_defines_it() -> None:
    """#33: Deployment had three addresses and DoesNotFitError five; the shims that stay for
    released exercises (llmmath.serving, llmmath.deployment,
    llmmath.setting) are for learners, not for code."""
    found = [
        problem
        for module in _modules()
        for problem in misaddressed_imports(module, _source(module).read_text())
    ]
    assert not found, "\n".join(found)


def test_a_re_export_is_caught() -> None:
    """The check can fail: a shim's name, imported through the shim."""
    shimmed = "from llmmath.serving import decode_step\n"
    assert misaddressed_imports("llmmath.example", shimmed) == [
        "llmmath.example: decode_step from llmmath.serving, defined in llmmath.core.serving"
    ]


@pytest.mark.parametrize(
    "source",
    [
        "from llmmath import moe\nmoe.get_domain('H100')\n",
        "from llmmath import moe as chapter\nchapter.get_domain('H100')\n",
        "import llmmath.moe as chapter\nchapter.get_domain('H100')\n",
    ],
)
def test_a_re_export_reached_as_an_attribute_is_caught(source: str) -> None:
    """The check can fail: a chapter module's re-export, reached as ``module.attr``; the
    same call at its home passes."""
    assert misaddressed_imports("llmmath.example", source) == [
        "llmmath.example:2: "
        + source.split("\n")[1].split("(")[0]
        + ", defined in llmmath.core.racks"
    ]
    at_home = "from llmmath.core import racks\nracks.get_domain('H100')\n"
    assert misaddressed_imports("llmmath.example", at_home) == []


def test_code_uses_no_other_module_s_private_names() -> None:
    """#47: planning ran on a dozen of plan_workers' ``_helpers``, training on placement's."""
    found = [
        problem
        for module in _modules()
        for problem in private_names_crossing(module, _source(module).read_text())
    ]
    assert not found, "\n".join(found)


def test_a_private_name_crossing_modules_is_caught() -> None:
    """The check can fail: a helper imported, or reached as an attribute, from another module;
    a dunder, a private module and a module's own helper pass."""
    source = (
        "from llmmath.core.models import _COUNT_FIELDS\n"
        "from llmmath.core import models\n"
        "models._COUNT_FIELDS\n"
        "from llmmath import __version__\n"
        "from llmmath.core import _constraints\n"
    )
    assert private_names_crossing("llmmath.example", source) == [
        "llmmath.example: _COUNT_FIELDS from llmmath.core.models",
        "llmmath.example:3: models._COUNT_FIELDS",
    ]
    assert private_names_crossing("llmmath.core.models", source) == []


def test_the_model_defines_each_public_name_once() -> None:
    """#33: three kv_bytes_per_token and two decode_steps with different meanings of batch.
    Now one of each (parallelism's is layout_decode_step); max_batch is the one kept twice."""
    homes = definitions_by_name([m for m in _modules() if _is_model_module(m)])
    twice = {name: where for name, where in homes.items() if len(where) > 1}
    assert twice == TWICE_DEFINED
    assert "decode_step" in homes and "layout_decode_step" in homes

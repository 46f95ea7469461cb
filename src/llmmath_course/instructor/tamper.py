"""The review heuristics on a student's notebook: locked cells edited, and code that reaches
into the checking machinery.

The tampering flag is a heuristic, easy to get round, and it protects nothing: the hidden
tests' asserts are evaluated outside the student's kernel (grading/llmmath_nbgrader.py), so a
patched ``math.isclose`` gains nothing. It tells a person where to look.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path
from typing import Any

from llmmath_course.instructor.course import read_notebook

# Names whose use in a student's code cell is flagged for review.
SUSPECT_CALLS = {
    "setattr",
    "delattr",
    "exec",
    "eval",
    "compile",
    "__import__",
    "globals",
    "vars",
    "locals",
    "get_ipython",
    "reload",
}
SUSPECT_NAMES = set(dir(builtins)) | {"get_ipython", "__builtins__", "In", "Out", "exit", "quit"}


def tampering(source: str) -> list[str]:
    """What in one code cell reaches into the checking machinery (empty if nothing)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        # IPython's own cell syntax (%magics, !shell) as plain Python; IPython types neither.
        tree = ast.parse(TransformerManager().transform_cell(source))  # type: ignore[no-untyped-call]
    except SyntaxError:
        return []  # it cannot run either: the tests fail on their own
    modules = {"math", "builtins", "sys", "numpy", "np", "IPython"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            base = target
            while isinstance(base, ast.Attribute | ast.Subscript):
                base = base.value
            if target is not base and (
                (isinstance(base, ast.Name) and base.id in modules | SUSPECT_NAMES)
                or isinstance(base, ast.Call)
            ):
                found.append(f"changes {ast.unparse(target)}")
            elif isinstance(target, ast.Name) and target.id in SUSPECT_NAMES:
                found.append(f"rebinds {target.id}")
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in SUSPECT_NAMES:
            found.append(f"rebinds {node.name}")
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in SUSPECT_CALLS:
                found.append(f"calls {name}()")
    return sorted(set(found))


def flag_cells(student_nb: Any, locked: dict[str, str]) -> list[str]:
    """A submission's flags from its cells: locked cells edited, tampering in answer cells."""
    flags = []
    for cell in student_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if grade_id in locked and cell.source != locked[grade_id]:
            flags.append(f"locked cell {grade_id} edited (nbgrader restored it)")
        if cell.cell_type == "code" and not meta.get("locked"):
            flags += [f"tampering suspected: {problem}" for problem in tampering(cell.source)]
    return flags


def locked_sources(release: Path) -> dict[str, str]:
    """The released source of each locked cell of the notebook at ``release``, by grade_id."""
    if not release.exists():
        return {}
    return {
        cell.metadata["nbgrader"]["grade_id"]: cell.source
        for cell in read_notebook(release).cells
        if cell.metadata.get("nbgrader", {}).get("locked")
    }

"""Simulated classes for the grading tests and ``scripts/bench_grading.py``: each assignment's
spec (``tests/specs/<assignment>.py`` defines ``SPEC``), submissions filled in from the
solutions, and the roofline exercise's broken submissions (an infinite loop, a kernel death, a
corrupt file, tampering, ...), which tests/course/test_instructor.py grades and scores.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SPECS_DIR = ROOT / "tests" / "specs"


@dataclass(frozen=True)
class Mistake:
    """A realistic wrong answer to one part, and whether the visible checks catch it."""

    #: The answer cell it replaces (its grade_id), and what a learner might write there.
    cell: str
    source: str
    #: A few words on the mistake.
    what: str
    #: True when a visible test cell fails on it; False when only the hidden tests can tell.
    caught: bool


def slip(assignment: str, cell: str, what: str, *edits: tuple[str, str]) -> Mistake:
    """A mistake made from the solution's answer cell ``cell`` by text edits, each ``(old, new)``
    (``old`` must occur): the bank follows the solution, and each entry shows only what differs.
    The visible checks are expected to catch it (``dataclasses.replace(m, caught=False)`` where
    they do not)."""
    nb = read(ROOT / "solutions" / assignment / f"{assignment}.ipynb")
    source = "".join(
        line
        for line in cell_by_id(nb, cell).source.splitlines(keepends=True)
        if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )
    for old, new in edits:
        assert old in source, f"{assignment} {cell}: {old!r} is not in the solution"
        source = source.replace(old, new)
    return Mistake(cell, source, what, True)


@dataclass(frozen=True)
class AssignmentSpec:
    """One graded assignment as the tests see it."""

    assignment: str
    #: The autograded test cells, in notebook order.
    test_cells: tuple[str, ...]
    autograded_points: float
    manual_points: float
    #: Manually graded answer cells (the reflection).
    manual_cells: tuple[str, ...]
    #: The answers the hidden tests pin, by the name the student defines. None of them, at any
    #: everyday rounding, may appear in exercises/, in feedback or in a failure message.
    answers: dict[str, float]
    #: Plausible, well-typed mistakes that the hidden tests must fail, by solution cell grade_id
    #: (the visible checks may catch them too: ``wrong_unseen`` names those they miss).
    wrong_answers: dict[str, str]
    #: Test cells the mistakes must fail, and the name each failure message must mention.
    wrong_fails: dict[str, str]
    #: Pinned values compared with expressions rather than names (e.g. function calls).
    pinned_expressions: int = 0
    #: Text that names the hidden asserts' messages; never in the release, always in feedback.
    hidden_message: str = "is off by more than"
    notebook: str = ""
    #: Realistic mistakes beyond ``wrong_answers``, each with whether a visible check catches it:
    #: tests/course/test_visible_checks.py runs every one, and the hidden tests must fail each.
    mistakes: tuple[Mistake, ...] = ()
    #: The ``wrong_answers`` cells whose mistake the visible checks do not catch.
    wrong_unseen: tuple[str, ...] = ()
    #: Sentences the leak detector must catch, and ones it must let through.
    leaky_examples: tuple[str, ...] = field(default_factory=tuple)
    clean_examples: tuple[str, ...] = field(default_factory=tuple)

    @property
    def notebook_id(self) -> str:
        return self.notebook or self.assignment

    @property
    def source_nb(self) -> Path:
        return ROOT / "solutions" / self.assignment / f"{self.notebook_id}.ipynb"

    @property
    def release_dir(self) -> Path:
        return ROOT / "exercises" / self.assignment

    @property
    def release_nb(self) -> Path:
        return self.release_dir / f"{self.notebook_id}.ipynb"

    def points_by_cell(self) -> dict[str, float]:
        """Each autograded test cell's points, as the source notebook's nbgrader metadata says."""
        nb = read(self.source_nb)
        return {g: nbgrader_meta(cell_by_id(nb, g))["points"] for g in self.test_cells}

    @property
    def wrong_score(self) -> float:
        """What the spec's wrong answers earn: the autograded points of the cells they pass."""
        points = self.points_by_cell()
        return float(sum(p for g, p in points.items() if g not in self.wrong_fails))


def load_specs(folder: Path = SPECS_DIR) -> list[AssignmentSpec]:
    """Every ``SPEC`` in ``folder/*.py`` (default tests/specs/), sorted by assignment."""
    specs = []
    for path in sorted(folder.glob("*.py")):
        module_spec = importlib.util.spec_from_file_location(f"specs.{path.stem}", path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        specs.append(module.SPEC)
    return specs


# ---- notebooks ------------------------------------------------------------------------------
def read(path: Path) -> Any:
    return nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]  # untyped


def nbgrader_meta(cell: Any) -> dict[str, Any]:
    return dict(cell.metadata.get("nbgrader", {}))


def cell_by_id(nb: Any, grade_id: str) -> Any:
    matches = [c for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id]
    assert len(matches) == 1, f"expected one cell with grade_id {grade_id!r}, found {len(matches)}"
    return matches[0]


def submission_from_release(release_nb: Path, source_nb: Path, wrong: dict[str, str]) -> Any:
    """A release with every answer cell filled in from the solutions, except ``wrong`` ones."""
    release, source = read(release_nb), read(source_nb)
    for cell in release.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution") and cell.cell_type == "code":
            grade_id = meta["grade_id"]
            solved = cell_by_id(source, grade_id).source
            cell.source = wrong.get(grade_id) or "\n".join(
                line for line in solved.splitlines() if "SOLUTION" not in line
            )
    return release


# ---- a class of submissions ---------------------------------------------------------------
REFLECTION = "The step waits on reading the weights, so more FLOP/s does not help."


def reflected(nb: Any, spec: AssignmentSpec) -> Any:
    """The notebook with the hand-graded reflection answered (a grader then has to score it)."""
    for grade_id in spec.manual_cells:
        cell_by_id(nb, grade_id).source = REFLECTION
    return nb


#: The broken submissions ``bad_submissions`` makes, by name.
BAD_KINDS = (
    "loop", "import_error", "huge_output", "sys_exit", "kernel_death", "patched_isclose",
    "disguised_patch", "shadowed_builtin", "silenced_tracebacks", "wrong_types",
    "empty_notebook", "corrupt_ipynb", "deleted_test", "edited_test",
)  # fmt: skip


def bad_submissions(release: Path, spec: AssignmentSpec) -> dict[str, Any]:
    """The roofline exercise's broken submissions (``BAD_KINDS``), each as a notebook (or, for
    the corrupt one, bytes): ``release`` is its released notebook, ``spec`` its spec."""

    def solved(wrong: dict[str, str] | None = None) -> Any:
        return reflected(submission_from_release(release, spec.source_nb, wrong or {}), spec)

    def edit(nb: Any, grade_id: str, before: str = "", after: str = "") -> Any:
        cell = cell_by_id(nb, grade_id)
        cell.source = before + cell.source + after
        return nb

    isclose_patch = (
        "import math\n"
        "_isclose = math.isclose\n"
        "math.isclose = lambda a, b, **k: b != critical_batch_h100 or _isclose(a, b, **k)\n"
        "critical_batch_int8 = 300.0\n"
    )
    # Issue #37: the isclose every hidden test calls, replaced through the module's __dict__
    # (which the tamper heuristic does not see), true for everything but Part 4's visible
    # check; before the hidden tests moved out of the kernel, this scored full marks.
    disguised = (
        "import math\n\n"
        "_isclose = math.isclose\n"
        "ns = math.__dict__\n"
        "ns['isclose'] = lambda a, b, **k: _isclose(a, b, **k) or k.get('rel_tol') != 1e-3\n\n"
    )
    subs: dict[str, Any] = {
        "loop": edit(solved(), "decode_batch1", "while True:\n    pass\n"),
        "import_error": edit(solved(), "matmul_intensity", "import no_such_module_xyz\n"),
        "huge_output": edit(
            solved(), "critical_batch", after="\nprint('x' * 2_000_000)\nprint('y\\n' * 100_000)\n"
        ),
        "sys_exit": edit(solved(), "critical_batch", after="\nimport sys\nsys.exit(3)\n"),
        "kernel_death": edit(solved(), "critical_batch", after="\nimport os\nos._exit(1)\n"),
        "patched_isclose": solved({"critical_batch_int8": isclose_patch}),
        "disguised_patch": edit(solved(spec.wrong_answers), "matmul_intensity", disguised),
        "shadowed_builtin": solved(
            {
                "matmul_intensity": "def isinstance(obj, kind):\n    return True\n\n"
                "def matmul_intensity(batch, d_in, d_out, bytes_per_element):\n    return 1\n"
            }
        ),
        "silenced_tracebacks": solved(
            {
                "critical_batch_int8": "get_ipython().showtraceback = lambda *a, **k: None\n"
                "critical_batch_int8 = 5.0\n"
            }
        ),
        "wrong_types": solved(
            {
                "matmul_intensity": "def matmul_intensity(batch, d_in, d_out, bytes_per_element):"
                "\n    return [1.0]\n",
                "critical_batch": "critical_batch_h100 = '295.2'\nbatch_64_memory_bound = 'yes'\n",
            }
        ),
        "empty_notebook": nbformat.v4.new_notebook(),  # type: ignore[no-untyped-call]
        "corrupt_ipynb": b'{"cells": [{"cell_type": "code", "source": ',
    }
    deleted = solved()
    deleted.cells = [
        c
        for c in deleted.cells
        if c.metadata.get("nbgrader", {}).get("grade_id") != "test_critical_batch"
    ]
    subs["deleted_test"] = deleted
    edited = solved({"critical_batch_int8": "critical_batch_int8 = 300.0\n"})
    cell_by_id(edited, "test_critical_batch_int8").source = "pass\n"
    subs["edited_test"] = edited
    return subs

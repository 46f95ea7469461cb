"""What the grading tests need to know about each assignment, and the nbgrader plumbing.

Each assignment has a spec in ``tests/specs/<assignment>.py`` defining ``SPEC``
(``llmmath_course.simulate.AssignmentSpec``); the tests
in ``test_grading.py`` run every spec through one scratch nbgrader course.
"""

from __future__ import annotations

import ast
import atexit
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat

# The specs and the notebooks they describe live in the course tooling's package (the
# grading benchmark, scripts/bench_grading.py, uses them too).
from llmmath_course.simulate import (
    ROOT,
    SPECS_DIR,  # noqa: F401
    AssignmentSpec,
    Mistake,  # noqa: F401
    cell_by_id,
    load_specs,  # noqa: F401
    nbgrader_meta,
    read,
    submission_from_release,
)

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---- notebooks ------------------------------------------------------------------------------
def region(source: str, begin: str, end: str) -> list[str]:
    """The lines strictly between each ``### begin`` / ``### end`` pair."""
    lines, inside = [], False
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            lines.append(line)
    return lines


def renderings(value: float) -> set[str]:
    """Ways a number gets written down: full, 3 and 4 significant digits, ms and us for times."""
    forms = {repr(value), f"{value:.3g}", f"{value:.4g}", f"{value:.2e}", f"{value:.3e}"}
    if value < 1:  # seconds also show up as milliseconds and microseconds
        forms |= {f"{value * scale:.3g}" for scale in (1e3, 1e6)}
    if value > 1e9:  # bytes also show up as GB
        forms.add(f"{value / 1e9:.3g}")
    return {form for form in forms if len(form.replace(".", "")) >= 3}


def leaks(text: str, values: dict[str, float]) -> list[str]:
    """The renderings of ``values`` that occur in ``text`` as whole numbers."""
    found = []
    for name, value in values.items():
        for form in sorted(renderings(value)):
            if re.search(rf"(?<![\w.]){re.escape(form)}(?![\d])", text):
                found.append(f"{name} written as {form}")
    return found


def release_text(nb: Any) -> str:
    return "\n".join(cell.source for cell in nb.cells)


def error_text(cell: Any) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            parts += [output.ename, output.evalue, *output.traceback]
    return ANSI.sub("", "\n".join(parts))


def hidden_expected_values(spec: AssignmentSpec) -> dict[str, list[float]]:
    """Every literal a hidden ``math.isclose(actual, expected, ...)`` compares with, by actual."""
    nb = read(spec.source_nb)
    pinned: dict[str, list[float]] = {}
    for grade_id in spec.test_cells:
        hidden = region(cell_by_id(nb, grade_id).source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
        for node in ast.walk(ast.parse("\n".join(hidden))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "isclose":
                actual, expected = node.args[:2]
                if isinstance(expected, ast.Constant):
                    pinned.setdefault(ast.unparse(actual), []).append(expected.value)
    return pinned


# ---- one generate_assignment per test process -----------------------------------------------
@functools.cache
def _generated_once(assignment: str) -> Path:
    """A scratch course (the root nbgrader_config.py, grading/ and solutions/<assignment>/) in
    which ``nbgrader generate_assignment <assignment> --force`` ran, once in this process."""
    root = Path(tempfile.mkdtemp(prefix=f"llmmath-generated-{assignment}-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    shutil.copy2(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(ROOT / "grading", root / "grading", ignore=shutil.ignore_patterns("__py*"))
    shutil.copytree(
        ROOT / "solutions" / assignment,
        root / "solutions" / assignment,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints"),
    )
    # The gradebook shells out to alembic, which sits next to this interpreter.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force"],
        cwd=root, env=dict(os.environ, PATH=path), capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, f"generate_assignment {assignment}:\n{result.stderr}"
    return root


def generate_assignment(root: Path, assignment: str) -> None:
    """What ``nbgrader generate_assignment <assignment> --force`` writes into the course at
    ``root``: the release (exercises/<assignment>/) and the gradebook that records its cells,
    copied from one run of it in this test process. Every scratch course of the grading tests
    starts from the same generated files; running nbgrader (and its alembic) for each cost a
    Python start and seconds of CPU per course for identical output. test_grading checks a fresh
    generate_assignment of every assignment against the committed release."""
    generated = _generated_once(assignment)
    shutil.copytree(
        generated / "exercises" / assignment, root / "exercises" / assignment, dirs_exist_ok=True
    )
    shutil.copy2(generated / "gradebook.db", root / "gradebook.db")


# ---- one scratch course that releases and grades every assignment ---------------------------
STUDENTS = ("solver", "blank", "wrong")


def grade_everything(root: Path, specs: list[AssignmentSpec]) -> dict[str, dict[str, Any]]:
    """Release every assignment in a scratch course at ``root``; student ``solver`` hands in
    the solution, ``blank`` the release untouched, ``wrong`` the release with the spec's
    mistakes; autograde all, generate feedback for ``wrong``; return what the tests inspect."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    shutil.copy2(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    # Its plug-ins (grading/llmmath_nbgrader.py: the hidden tests checked outside the kernel).
    shutil.copytree(ROOT / "grading", root / "grading", ignore=shutil.ignore_patterns("__py*"))
    for spec in specs:
        shutil.copytree(
            ROOT / "solutions" / spec.assignment,
            root / "solutions" / spec.assignment,
            ignore=shutil.ignore_patterns(".ipynb_checkpoints"),
        )
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    config.Exchange.root = str(root / "exchange")  # keep the API away from /srv/nbgrader
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)

    old_path = os.environ.get("PATH", "")
    # The gradebook shells out to alembic, which sits next to this interpreter.
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), old_path])
    results: dict[str, dict[str, Any]] = {}
    try:
        for spec in specs:
            results[spec.assignment] = _grade_one(api, Gradebook, root, spec)
    finally:
        os.environ["PATH"] = old_path
    return results


def _check(result: dict[str, Any]) -> None:
    assert result["success"], result.get("log", "") + result.get("error", "")


def _grade_one(api: Any, gradebook: Any, root: Path, spec: AssignmentSpec) -> dict[str, Any]:
    name, nb_id = spec.assignment, spec.notebook_id
    _check(api.generate_assignment(name))
    fresh = root / "exercises" / name / f"{nb_id}.ipynb"
    submissions = {
        "solver": read(spec.source_nb),
        "blank": read(fresh),
        "wrong": submission_from_release(fresh, spec.source_nb, spec.wrong_answers),
    }
    for student, nb in submissions.items():
        folder = root / "submitted" / student / name
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{nb_id}.ipynb")
    _check(api.autograde(name, "*"))
    _check(api.generate_feedback(name, "wrong"))

    scores: dict[str, dict[str, Any]] = {}
    with gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
        for student in submissions:
            submission = gb.find_submission(name, student)
            notebook = gb.find_submission_notebook(nb_id, name, student)
            scores[student] = {
                "score": submission.score,
                "max_score": submission.max_score,
                "code": {g.name: g.auto_score for g in notebook.grades if g.cell_type == "code"},
                "needs_manual": [g.name for g in notebook.grades if g.needs_manual_grade],
            }
    return {
        "fresh": fresh,
        "scores": scores,
        "autograded": {
            student: read(root / "autograded" / student / name / f"{nb_id}.ipynb")
            for student in submissions
        },
        "feedback": root / "feedback" / "wrong" / name / f"{nb_id}.html",
    }


# ---- the visible checks as a learner runs them, in-process ----------------------------------
def fresh_shell() -> Any:
    """The process's in-process IPython shell, emptied as a kernel restart empties it: a new
    session, the user's names gone, the execution count back at 1.

    Made without an on-disk history (the kernel's history is no part of what a notebook's
    cells see: a sqlite write per cell, with its saving thread, was 3 of 17 s for six
    notebooks) and emptied without the full ``gc.collect()`` that ``reset()`` runs over the
    whole test process (about 1 s each time in a pytest worker): the collector is frozen
    around it, so it frees the old names' objects by reference count at once and leaves any
    cycles among them to the next automatic collection."""
    import gc

    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False  # in memory: no sqlite file, no saving thread
    shell = InteractiveShell.instance(config=config)
    gc.freeze()
    try:
        shell.reset(new_session=True)
    finally:
        gc.unfreeze()
    return shell


def run_visible(nb: Any) -> dict[str, tuple[bool, str]]:
    """Run a notebook without hidden tests (a release, filled in) cell by cell in one in-process
    IPython shell, as Run All does in Lab; for each graded test cell, (it failed, what it
    printed). A test cell fails as nbgrader scores it: an error, or anything on stderr."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from IPython.utils.capture import capture_output

    shell = fresh_shell()
    outcome: dict[str, tuple[bool, str]] = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        with capture_output() as captured:
            result = shell.run_cell(cell.source, store_history=True)
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution"):
            raised = result.error_before_exec or result.error_in_exec
            failed = raised is not None or bool(captured.stderr.strip())
            said = captured.stderr.strip() or captured.stdout.strip()
            if raised is not None:
                said = f"{type(raised).__name__}: {raised}"
            outcome[meta["grade_id"]] = (failed, ANSI.sub("", said))
    plt.close("all")
    return outcome


def filled_release(spec: AssignmentSpec, wrong: dict[str, str] | None = None) -> Any:
    """The committed release with every answer from the solutions, except ``wrong`` ones."""
    return submission_from_release(spec.release_nb, spec.source_nb, wrong or {})


# ---- the settings an exercise prints ----------------------------------------------------------
def printed_settings(assignment: str) -> dict[str, tuple[Any, ...]]:
    """Each setting cell of the exercise (``setting_part<n>``, read-only, above a part's answer)
    run as the learner runs it, by the cell's id: the :class:`~llmmath.core.setting.Setting`
    objects it prints, in order. The line the learner sees is ``describe()`` of these."""
    from llmmath.core.setting import Setting

    source = read(ROOT / "solutions" / assignment / f"{assignment}.ipynb")
    found: dict[str, tuple[Any, ...]] = {}
    for cell in source.cells:
        if not nbgrader_meta(cell).get("grade_id", "").startswith("setting_"):
            continue
        shown: list[Any] = []

        def record(*args: Any, shown: list[Any] = shown, **_: Any) -> None:
            shown.extend(arg for arg in args if isinstance(arg, Setting))

        exec(cell.source, {"print": record})
        assert shown, f"{assignment}: the setting cell {cell.get('id')} prints no Setting"
        found[nbgrader_meta(cell)["grade_id"]] = tuple(shown)
    return found

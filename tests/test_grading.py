"""The graded roofline exercise, end to end through nbgrader.

One scratch copy of the course (``nbgrader_config.py`` and ``solutions/``) is released and
graded once for the module: student ``solver`` hands in the solution notebook, ``blank`` the
release untouched, ``wrong`` the release with two plausible, well-typed mistakes. The repository
itself is never written to.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "roofline"
NOTEBOOK_ID = "roofline"
SOURCE_NB = ROOT / "solutions" / ASSIGNMENT / f"{NOTEBOOK_ID}.ipynb"
RELEASE_DIR = ROOT / "exercises" / ASSIGNMENT
RELEASE_NB = RELEASE_DIR / f"{NOTEBOOK_ID}.ipynb"

AUTOGRADED_POINTS = 8.0  # four autograded parts of 2 points
MANUAL_POINTS = 2.0  # the reflection
TEST_CELLS = (
    "test_matmul_intensity",
    "test_decode_batch1",
    "test_critical_batch",
    "test_critical_batch_int8",
)

# The answers the hidden tests pin, by the name the student defines. None of them, at any
# everyday rounding, may appear in exercises/ or in a failure message.
ANSWERS = {
    "weight_bytes": 1.411e11,
    "weight_read_time_s": 0.042121615818507464,
    "compute_time_batch1_s": 1.426768584347826e-4,
    "critical_batch_h100": 295.2238805970149,
    "critical_batch_int8": 147.61194029850745,
}
# Two well-typed mistakes that pass the visible checks: counting parameters instead of bytes,
# and thinking 1-byte weights double the critical batch instead of halving it.
WRONG_ANSWERS = {
    "decode_batch1": (
        "weight_bytes = LLAMA3_70B_PARAMS\n"
        "weight_read_time_s = weight_bytes / H100_HBM_BYTES_PER_S\n"
        "compute_time_batch1_s = 2 * LLAMA3_70B_PARAMS / H100_BF16_FLOP_PER_S\n"
    ),
    "critical_batch_int8": (
        "critical_batch_int8 = 2 * H100_BF16_FLOP_PER_S / H100_HBM_BYTES_PER_S\n"
    ),
}
WRONG_FAILS = {
    "test_decode_batch1": "weight_bytes",
    "test_critical_batch_int8": "critical_batch_int8",
}

# nbgrader 0.9.6 trips SQLAlchemy's autoflush warnings in its own gradebook code; not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Object of type <Submitted")

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---- helpers --------------------------------------------------------------------------------
def read(path: Path) -> Any:
    return nbformat.read(path, as_version=4)


def nbgrader_meta(cell: Any) -> dict[str, Any]:
    return dict(cell.metadata.get("nbgrader", {}))


def cell_by_id(nb: Any, grade_id: str) -> Any:
    matches = [c for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id]
    assert len(matches) == 1, f"expected one cell with grade_id {grade_id!r}, found {len(matches)}"
    return matches[0]


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


def submission_from_release(release_nb: Path, wrong: dict[str, str]) -> Any:
    """A release with every answer cell filled in from the solutions, except ``wrong`` ones."""
    release, source = read(release_nb), read(SOURCE_NB)
    for cell in release.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution") and cell.cell_type == "code":
            grade_id = meta["grade_id"]
            solved = cell_by_id(source, grade_id).source
            cell.source = wrong.get(grade_id) or "\n".join(
                line for line in solved.splitlines() if "SOLUTION" not in line
            )
    return release


# ---- the graded scratch course --------------------------------------------------------------
@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    root = tmp_path_factory.mktemp("course")
    shutil.copy2(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(
        ROOT / "solutions" / ASSIGNMENT,
        root / "solutions" / ASSIGNMENT,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints"),
    )
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    config.Exchange.root = str(root / "exchange")  # keep the API away from /srv/nbgrader
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)

    old_path = os.environ.get("PATH", "")
    # The gradebook shells out to alembic, which sits next to this interpreter.
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), old_path])
    try:
        result = api.generate_assignment(ASSIGNMENT)
        assert result["success"], result.get("log", "") + result.get("error", "")

        fresh = root / "exercises" / ASSIGNMENT / f"{NOTEBOOK_ID}.ipynb"
        submissions = {
            "solver": read(SOURCE_NB),
            "blank": read(fresh),
            "wrong": submission_from_release(fresh, WRONG_ANSWERS),
        }
        for student, nb in submissions.items():
            folder = root / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{NOTEBOOK_ID}.ipynb")

        result = api.autograde(ASSIGNMENT, "*")
        assert result["success"], result.get("log", "") + result.get("error", "")
        result = api.generate_feedback(ASSIGNMENT, "wrong")
        assert result["success"], result.get("log", "") + result.get("error", "")

        scores: dict[str, dict[str, Any]] = {}
        with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
            for student in submissions:
                submission = gb.find_submission(ASSIGNMENT, student)
                notebook = gb.find_submission_notebook(NOTEBOOK_ID, ASSIGNMENT, student)
                scores[student] = {
                    "score": submission.score,
                    "max_score": submission.max_score,
                    "code": {
                        g.name: g.auto_score for g in notebook.grades if g.cell_type == "code"
                    },
                    "needs_manual": [g.name for g in notebook.grades if g.needs_manual_grade],
                }
    finally:
        os.environ["PATH"] = old_path

    yield {
        "root": root,
        "fresh": fresh,
        "scores": scores,
        "autograded": {
            student: read(root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK_ID}.ipynb")
            for student in submissions
        },
        "feedback": root / "feedback" / "wrong" / ASSIGNMENT / f"{NOTEBOOK_ID}.html",
    }


# ---- the source notebook: structure only, no kernel -----------------------------------------
def test_source_notebook_has_valid_nbgrader_metadata() -> None:
    from nbgrader.nbgraderformat import SCHEMA_VERSION, MetadataValidator

    nb = read(SOURCE_NB)
    nbformat.validate(nb)
    MetadataValidator().validate_nb(nb)  # raises on anything nbgrader would reject
    assert nb.metadata.kernelspec.name == "python3"
    assert all(
        nbgrader_meta(c)["schema_version"] == SCHEMA_VERSION for c in nb.cells if nbgrader_meta(c)
    )
    graded = [nbgrader_meta(c) for c in nb.cells if nbgrader_meta(c).get("grade")]
    auto = [m for m in graded if not m["solution"]]
    manual = [m for m in graded if m["solution"]]
    assert [m["grade_id"] for m in auto] == list(TEST_CELLS)
    assert sum(m["points"] for m in auto) == AUTOGRADED_POINTS
    assert sum(m["points"] for m in manual) == MANUAL_POINTS
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"cell {cell.get('id')!r} of {SOURCE_NB.name} has outputs: clear them"
            )


@pytest.mark.parametrize("grade_id", TEST_CELLS)
def test_each_part_has_visible_and_hidden_tests_with_messages(grade_id: str) -> None:
    source = cell_by_id(read(SOURCE_NB), grade_id).source
    hidden = "\n".join(region(source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"))
    visible = source.split("### BEGIN HIDDEN TESTS")[0]
    for part, text in (("visible", visible), ("hidden", hidden)):
        asserts = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Assert)]
        assert asserts, f"{grade_id}: no {part} asserts"
        silent = [n.lineno for n in asserts if n.msg is None]
        assert not silent, f"{grade_id}: {part} asserts without a message at lines {silent}"
    assert "llmmath" not in source, f"{grade_id}: test cells hold literal values, not llmmath calls"


def hidden_expected_values() -> dict[str, list[float]]:
    """Every literal a hidden ``math.isclose(actual, expected, ...)`` compares with, by actual."""
    nb = read(SOURCE_NB)
    pinned: dict[str, list[float]] = {}
    for grade_id in TEST_CELLS:
        hidden = region(cell_by_id(nb, grade_id).source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
        for node in ast.walk(ast.parse("\n".join(hidden))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "isclose":
                actual, expected = node.args
                if isinstance(expected, ast.Constant):
                    pinned.setdefault(ast.unparse(actual), []).append(expected.value)
    return pinned


def test_answers_listed_here_are_the_ones_the_hidden_tests_pin() -> None:
    pinned = hidden_expected_values()
    names = {name: values for name, values in pinned.items() if name.isidentifier()}
    assert {name: value for name, (value,) in names.items()} == ANSWERS, (
        "ANSWERS is not what the hidden tests pin: update ANSWERS"
    )
    assert len(pinned) - len(names) == 3, "Part 1's hidden tests pin three intensities"


def test_leak_detector_finds_rounded_answers_only() -> None:
    assert leaks("the critical batch is about 295 tokens", ANSWERS)
    assert leaks("a read of 141 GB takes 42.1 ms", ANSWERS)
    assert not leaks("D = 8192, F = 28672, 3.35e12 B/s, 9.89e14 FLOP/s, 70.55e9", ANSWERS)


# ---- the committed release -----------------------------------------------------------------
def test_release_has_no_solutions_hidden_tests_or_outputs() -> None:
    for path in RELEASE_DIR.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            for marker in (*MARKERS, "BEGIN MARK SCHEME"):
                assert marker not in text, f"{path.relative_to(ROOT)} contains {marker!r}"
    release, source = read(RELEASE_NB), read(SOURCE_NB)
    text = release_text(release)
    for cell in source.cells:
        for line in region(cell.source, "BEGIN SOLUTION", "END SOLUTION") + region(
            cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
        ):
            if len(line.strip()) > 12:
                assert line.strip() not in text, f"solution or hidden-test line leaked: {line!r}"
    assert not leaks(text, ANSWERS), f"answers written out in the release: {leaks(text, ANSWERS)}"
    for actual, values in hidden_expected_values().items():
        for value in values:
            assert repr(value) not in text, f"the release holds the hidden value for {actual}"
    for cell in release.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
            if meta.get("solution"):
                assert "raise NotImplementedError()" in cell.source, meta["grade_id"]


# ---- graded in the scratch course ----------------------------------------------------------
@pytest.mark.slow
def test_committed_release_matches_a_fresh_generate_assignment(course: dict[str, Any]) -> None:
    fresh, committed = json.loads(course["fresh"].read_text()), json.loads(RELEASE_NB.read_text())

    def essence(nb: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (c["cell_type"], c.get("id"), "".join(c["source"]), c["metadata"].get("nbgrader"))
            for c in nb["cells"]
        ]

    hint = "exercises/ is out of date: run python scripts/release.py"
    assert essence(committed) == essence(fresh), hint
    assert committed["metadata"]["kernelspec"] == fresh["metadata"]["kernelspec"], hint


@pytest.mark.slow
def test_solution_runs_clean_and_earns_every_autograded_point(course: dict[str, Any]) -> None:
    errors = {
        cell.get("id"): error_text(cell)
        for cell in course["autograded"]["solver"].cells
        if error_text(cell)
    }
    assert not errors, f"the solution notebook raised: {errors}"
    scores = course["scores"]["solver"]
    assert scores["code"] == dict.fromkeys(TEST_CELLS, 2.0)
    assert scores["score"] == AUTOGRADED_POINTS  # the reflection waits for a human
    assert scores["max_score"] == AUTOGRADED_POINTS + MANUAL_POINTS
    assert scores["needs_manual"] == ["reflection"]


@pytest.mark.slow
def test_untouched_release_scores_zero(course: dict[str, Any]) -> None:
    scores = course["scores"]["blank"]
    assert scores["score"] == 0
    assert scores["code"] == dict.fromkeys(TEST_CELLS, 0.0)
    assert scores["needs_manual"] == [], "an unchanged answer cell should score 0 on its own"


@pytest.mark.slow
def test_wrong_answers_pass_visible_checks_fail_hidden_ones_and_keep_the_answer(
    course: dict[str, Any],
) -> None:
    scores = course["scores"]["wrong"]
    expected = {grade_id: 0.0 if grade_id in WRONG_FAILS else 2.0 for grade_id in TEST_CELLS}
    assert scores["code"] == expected
    hidden_only = "is off by more than"  # the wording of the hidden asserts' messages
    assert hidden_only not in release_text(read(course["fresh"]))
    for grade_id, name in WRONG_FAILS.items():
        cell = cell_by_id(course["autograded"]["wrong"], grade_id)
        message = error_text(cell)
        # Every visible assert comes before the hidden block, so failing there means they passed.
        assert "AssertionError" in message and hidden_only in message, message
        assert name in message, f"the message should name {name}: {message}"
        assert not leaks(message, ANSWERS), f"failure message gives the answer away: {message}"
        assert "isclose" not in message, f"the traceback shows hidden test source: {message}"


@pytest.mark.slow
def test_feedback_strips_hidden_tests(course: dict[str, Any]) -> None:
    html = course["feedback"].read_text(encoding="utf-8")
    assert "is off by more than" in html, "the feedback should show the failing message"
    for marker in MARKERS[2:]:
        assert marker not in html
    for actual, values in hidden_expected_values().items():
        for value in values:
            assert repr(value) not in html, f"feedback shows the hidden value for {actual}"

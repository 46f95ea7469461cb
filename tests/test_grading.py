"""Every graded exercise, end to end through nbgrader (one spec per assignment in specs/).

One scratch copy of the course (``nbgrader_config.py`` and ``solutions/``) releases and grades
every assignment once per session: student ``solver`` hands in the solution notebook,
``blank`` the release untouched, ``wrong`` the release with two plausible, well-typed
mistakes. The repository itself is never written to.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from grading_support import (
    MARKERS,
    ROOT,
    AssignmentSpec,
    cell_by_id,
    error_text,
    grade_everything,
    hidden_expected_values,
    leaks,
    load_specs,
    nbgrader_meta,
    read,
    region,
    release_text,
)

SPECS = load_specs()
BY_ID = {spec.assignment: spec for spec in SPECS}
each_spec = pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.assignment)
each_test_cell = pytest.mark.parametrize(
    ("spec", "grade_id"),
    [(spec, grade_id) for spec in SPECS for grade_id in spec.test_cells],
    ids=lambda value: value.assignment if isinstance(value, AssignmentSpec) else value,
)

# nbgrader 0.9.6 trips SQLAlchemy's autoflush warnings in its own gradebook code; not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Object of type <Submitted")


@pytest.fixture(scope="session")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return grade_everything(tmp_path_factory.mktemp("course"), SPECS)


def test_every_assignment_has_a_spec() -> None:
    assignments = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    assert assignments == sorted(BY_ID), "add tests/specs/<assignment>.py for each assignment"
    releases = sorted(p.name for p in (ROOT / "exercises").iterdir() if p.is_dir())
    assert releases == assignments, "exercises/ and solutions/ hold different assignments"


# ---- the source notebook: structure only, no kernel -----------------------------------------
@each_spec
def test_source_notebook_has_valid_nbgrader_metadata(spec: AssignmentSpec) -> None:
    from nbgrader.nbgraderformat import SCHEMA_VERSION, MetadataValidator

    nb = read(spec.source_nb)
    nbformat.validate(nb)
    MetadataValidator().validate_nb(nb)  # raises on anything nbgrader would reject
    assert nb.metadata.kernelspec.name == "python3"
    assert all(
        nbgrader_meta(c)["schema_version"] == SCHEMA_VERSION for c in nb.cells if nbgrader_meta(c)
    )
    graded = [nbgrader_meta(c) for c in nb.cells if nbgrader_meta(c).get("grade")]
    auto = [m for m in graded if not m["solution"]]
    manual = [m for m in graded if m["solution"]]
    assert [m["grade_id"] for m in auto] == list(spec.test_cells)
    assert [m["grade_id"] for m in manual] == list(spec.manual_cells)
    assert sum(m["points"] for m in auto) == spec.autograded_points
    assert sum(m["points"] for m in manual) == spec.manual_points
    assert spec.autograded_points + spec.manual_points >= 10, "each exercise is worth >= 10"
    assert len(spec.test_cells) >= 4, "each exercise has >= 4 autograded parts"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"cell {cell.get('id')!r} of {spec.source_nb.name} has outputs: clear them"
            )


@each_test_cell
def test_each_part_has_visible_and_hidden_tests_with_messages(
    spec: AssignmentSpec, grade_id: str
) -> None:
    source = cell_by_id(read(spec.source_nb), grade_id).source
    hidden = "\n".join(region(source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"))
    visible = source.split("### BEGIN HIDDEN TESTS")[0]
    for part, text in (("visible", visible), ("hidden", hidden)):
        asserts = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Assert)]
        assert asserts, f"{grade_id}: no {part} asserts"
        silent = [n.lineno for n in asserts if n.msg is None]
        assert not silent, f"{grade_id}: {part} asserts without a message at lines {silent}"
    assert "llmmath" not in source, f"{grade_id}: test cells hold literal values, not llmmath calls"
    assert 'set_mode("Minimal")' in hidden, f"{grade_id}: hidden block must hide its source lines"


@each_spec
def test_answers_listed_in_the_spec_are_the_ones_the_hidden_tests_pin(
    spec: AssignmentSpec,
) -> None:
    pinned = hidden_expected_values(spec)
    names = {name: values for name, values in pinned.items() if name.isidentifier()}
    assert {name: value for name, (value,) in names.items()} == spec.answers, (
        f"tests/specs/{spec.assignment}.py answers are not what the hidden tests pin"
    )
    assert len(pinned) - len(names) == spec.pinned_expressions


@each_spec
def test_leak_detector_finds_rounded_answers_only(spec: AssignmentSpec) -> None:
    for text in spec.leaky_examples:
        assert leaks(text, spec.answers), text
    for text in spec.clean_examples:
        assert not leaks(text, spec.answers), text


# ---- the committed release -----------------------------------------------------------------
@each_spec
def test_release_has_no_solutions_hidden_tests_or_outputs(spec: AssignmentSpec) -> None:
    for path in spec.release_dir.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            for marker in (*MARKERS, "BEGIN MARK SCHEME"):
                assert marker not in text, f"{path.relative_to(ROOT)} contains {marker!r}"
    release, source = read(spec.release_nb), read(spec.source_nb)
    text = release_text(release)
    for cell in source.cells:
        for line in region(cell.source, "BEGIN SOLUTION", "END SOLUTION") + region(
            cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
        ):
            if len(line.strip()) > 12:
                assert line.strip() not in text, f"solution or hidden-test line leaked: {line!r}"
    found = leaks(text, spec.answers)
    assert not found, f"answers written out in the release: {found}"
    for actual, values in hidden_expected_values(spec).items():
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
@each_spec
def test_committed_release_matches_a_fresh_generate_assignment(
    spec: AssignmentSpec, graded: dict[str, dict[str, Any]]
) -> None:
    fresh_path: Path = graded[spec.assignment]["fresh"]
    fresh, committed = json.loads(fresh_path.read_text()), json.loads(spec.release_nb.read_text())

    def essence(nb: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (c["cell_type"], c.get("id"), "".join(c["source"]), c["metadata"].get("nbgrader"))
            for c in nb["cells"]
        ]

    hint = f"exercises/ is out of date: run make release ASSIGNMENT={spec.assignment}"
    assert essence(committed) == essence(fresh), hint
    assert committed["metadata"]["kernelspec"] == fresh["metadata"]["kernelspec"], hint


def points_by_cell(spec: AssignmentSpec) -> dict[str, float]:
    nb = read(spec.source_nb)
    return {
        grade_id: nbgrader_meta(cell_by_id(nb, grade_id))["points"] for grade_id in spec.test_cells
    }


@pytest.mark.slow
@each_spec
def test_solution_runs_clean_and_earns_every_autograded_point(
    spec: AssignmentSpec, graded: dict[str, dict[str, Any]]
) -> None:
    result = graded[spec.assignment]
    errors = {
        cell.get("id"): error_text(cell)
        for cell in result["autograded"]["solver"].cells
        if error_text(cell)
    }
    assert not errors, f"the solution notebook raised: {errors}"
    scores = result["scores"]["solver"]
    assert scores["code"] == points_by_cell(spec)
    assert scores["score"] == spec.autograded_points  # the reflection waits for a human
    assert scores["max_score"] == spec.autograded_points + spec.manual_points
    assert scores["needs_manual"] == list(spec.manual_cells)


@pytest.mark.slow
@each_spec
def test_untouched_release_scores_zero(
    spec: AssignmentSpec, graded: dict[str, dict[str, Any]]
) -> None:
    scores = graded[spec.assignment]["scores"]["blank"]
    assert scores["score"] == 0
    assert scores["code"] == dict.fromkeys(spec.test_cells, 0.0)
    assert scores["needs_manual"] == [], "an unchanged answer cell should score 0 on its own"


@pytest.mark.slow
@each_spec
def test_wrong_answers_pass_visible_checks_fail_hidden_ones_and_keep_the_answer(
    spec: AssignmentSpec, graded: dict[str, dict[str, Any]]
) -> None:
    result = graded[spec.assignment]
    points = points_by_cell(spec)
    expected = {g: 0.0 if g in spec.wrong_fails else points[g] for g in spec.test_cells}
    assert result["scores"]["wrong"]["code"] == expected
    assert spec.hidden_message not in release_text(read(result["fresh"]))
    for grade_id, name in spec.wrong_fails.items():
        message = error_text(cell_by_id(result["autograded"]["wrong"], grade_id))
        # Every visible assert comes before the hidden block, so failing there means they passed.
        assert "AssertionError" in message and spec.hidden_message in message, message
        assert name in message, f"the message should name {name}: {message}"
        assert not leaks(message, spec.answers), f"failure message gives the answer away: {message}"
        assert "isclose" not in message, f"the traceback shows hidden test source: {message}"


@pytest.mark.slow
@each_spec
def test_feedback_strips_hidden_tests(
    spec: AssignmentSpec, graded: dict[str, dict[str, Any]]
) -> None:
    html = graded[spec.assignment]["feedback"].read_text(encoding="utf-8")
    assert spec.hidden_message in html, "the feedback should show the failing message"
    for marker in MARKERS[2:]:
        assert marker not in html
    for actual, values in hidden_expected_values(spec).items():
        for value in values:
            assert repr(value) not in html, f"feedback shows the hidden value for {actual}"

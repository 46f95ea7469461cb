"""Every graded exercise, end to end through nbgrader (one spec per assignment in specs/).

One scratch copy of the course (``nbgrader_config.py`` and ``solutions/``) releases and grades
every assignment once per session: student ``solver`` hands in the solution notebook,
``blank`` the release untouched, ``wrong`` the release with two plausible, well-typed
mistakes. The repository itself is never written to.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import re
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
#: Relative tolerance for two routes to the same number (another CPU rounds differently).
SAME_COMPUTATION = 1e-12
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
    hidden = {name: value for name, (value,) in names.items()}
    where = f"tests/specs/{spec.assignment}.py answers are not what the hidden tests pin"
    assert hidden.keys() == spec.answers.keys(), where
    # Some specs compute their answers from the package at run time (moe's from numpy's
    # power, whose SIMD kernels differ by a unit in the last place between CPUs): "the same
    # computation" is equal to 1e-12, far below the hidden tests' own tolerance.
    for name, expected in hidden.items():
        assert math.isclose(spec.answers[name], expected, rel_tol=SAME_COMPUTATION), (
            f"{where}: {name} = {spec.answers[name]!r}, the hidden test pins {expected!r}"
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
    assert scores["code"] == spec.points_by_cell()
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
    points = spec.points_by_cell()
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


# ---- what a learner reads when a test fails -------------------------------------------------
# nbgrader's Validate dialog shows a failing visible test's message in a narrow box, and the
# feedback shows a hidden one's: each names its part, and a visible one fits in the box.
VISIBLE_MESSAGE_CHARS = 145  # the longest in the roofline exercise, the pattern, is 142
HIDDEN_MESSAGE_CHARS = 200


def report_call(visible: str) -> tuple[int, tuple[str, ...], str] | None:
    """(part, names, checks) of the visible tests' last statement, report_part(N, names,
    part_N), or None if it is something else."""
    last = ast.parse(visible).body[-1]
    call = last.value if isinstance(last, ast.Expr) else None
    if not (isinstance(call, ast.Call) and getattr(call.func, "id", "") == "report_part"):
        return None
    part, names, checks = call.args
    return ast.literal_eval(part), ast.literal_eval(names), ast.unparse(checks)


def part_number(nb: Any, grade_id: str) -> int:
    """The N of the last "## Part N" heading above the cell ``grade_id``."""
    number = 0
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade_id") == grade_id:
            assert number, f"{grade_id}: no '## Part N' heading above it"
            return number
        found = re.search(r"^## Part (\d+)", cell.source, re.M)
        if cell.cell_type == "markdown" and found:
            number = int(found.group(1))
    raise AssertionError(f"no cell {grade_id}")


def messages(text: str) -> list[tuple[ast.Assert, str, str]]:
    """Each assert with a message: the node, its source, and its literal text (no fields)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assert) and node.msg is not None:
            pieces = node.msg.values if isinstance(node.msg, ast.JoinedStr) else [node.msg]
            literal = "".join(
                p.value for p in pieces if isinstance(p, ast.Constant) and isinstance(p.value, str)
            )
            found.append((node, ast.unparse(node.msg), literal))
    return sorted(found, key=lambda item: item[0].lineno)


def visible_and_hidden(spec: AssignmentSpec, grade_id: str) -> tuple[str, str]:
    source = cell_by_id(read(spec.source_nb), grade_id).source
    hidden = "\n".join(region(source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"))
    return source.split("### BEGIN HIDDEN TESTS")[0], hidden


def answer_names(nb: Any, grade_id: str) -> set[str]:
    """The names a part asks for, from its answer cells (those between the previous test cell
    and ``grade_id``): each "# Define a, b and c." line, and each function the release keeps."""
    names: set[str] = set()
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade_id") == grade_id:
            return names
        if cell.cell_type != "code":
            continue
        if meta.get("grade") and not meta.get("solution"):
            names = set()  # a test cell closes the previous part
        elif meta.get("solution"):
            outside = "\n".join(
                line
                for line in cell.source.split("### END SOLUTION")[-1].splitlines()
                if "BEGIN SOLUTION" not in line
            )
            given = cell.source.split("### BEGIN SOLUTION")[0] + outside
            names |= set(re.findall(r"^def (\w+)\(", given, re.M))
            for line in re.findall(r"^# Define (.+)\.$", cell.source, re.M):
                names |= set(re.findall(r"\w+", line.replace(" and ", ", "))) - {"and"}
    raise AssertionError(f"no cell {grade_id}")


@each_test_cell
def test_every_assert_message_names_its_part_and_is_short(
    spec: AssignmentSpec, grade_id: str
) -> None:
    part = part_number(read(spec.source_nb), grade_id)
    visible, hidden = visible_and_hidden(spec, grade_id)
    for text, limit in ((visible, VISIBLE_MESSAGE_CHARS), (hidden, HIDDEN_MESSAGE_CHARS)):
        for node, source, literal in messages(text):
            assert literal.startswith(f"Part {part}: "), (
                f"{grade_id} line {node.lineno}: the message should start 'Part {part}: ': {source}"
            )
            assert len(source) <= limit, f"{grade_id}: {len(source)} > {limit} chars: {source}"


@each_test_cell
def test_an_unanswered_part_says_so_instead_of_raising_name_error(
    spec: AssignmentSpec, grade_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The visible tests, run with nothing but the read-only numbers defined (as when a learner
    runs a test cell before its answer), print one line on stderr, which scores the cell 0 as an
    error would: the part is not answered yet, and which names are missing. They raise nothing,
    so Run All goes on to the next part."""
    nb = read(spec.source_nb)
    part = part_number(nb, grade_id)
    visible, _ = visible_and_hidden(spec, grade_id)
    call = report_call(visible)
    assert call is not None and call[0] == part and call[2] == f"part_{part}", (
        f"{grade_id}: the cell should end with report_part({part}, names, part_{part})"
    )
    names = answer_names(nb, grade_id)
    listed = set(call[1])
    assert names <= listed, f"{grade_id}: report_part does not list {sorted(names - listed)}"
    namespace: dict[str, Any] = {}
    exec(cell_by_id(nb, "specs").source, namespace)
    capsys.readouterr()
    exec(visible, namespace)  # raises if the test cell does
    printed = capsys.readouterr()
    assert not printed.out, printed.out
    line = printed.err.strip()
    assert line.startswith(f"Part {part}: not answered yet (run your answer cell; not defined: ")
    assert names <= set(line.rsplit(": ", 1)[1].rstrip(")").split(", ")), line


def choices_of(visible: str) -> dict[str, tuple[str, ...]]:
    """Answers with a few possible values, from their visible type checks: a True/False
    (``type(x).__name__ in {"bool", "bool_"}``) or one of some literals (``x in ("A", "B")``)."""
    found: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(ast.parse(visible)):
        if not (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In)):
            continue
        left, options = node.left, node.comparators[0]
        values = [e.value for e in getattr(options, "elts", []) if isinstance(e, ast.Constant)]
        if "bool" in values and isinstance(left, ast.Attribute) and left.attr == "__name__":
            call = left.value
            if isinstance(call, ast.Call) and isinstance(call.args[0], ast.Name):
                found[call.args[0].id] = ("True", "False")
        elif isinstance(left, ast.Name) and values and all(isinstance(v, str) for v in values):
            found[left.id] = tuple(f'"{v}"' for v in values)
    return found


def test_the_choice_detector_finds_every_true_false_and_choice_part() -> None:
    found = {
        name
        for spec in SPECS
        for grade_id in spec.test_cells
        for name in choices_of(visible_and_hidden(spec, grade_id)[0])
    }
    assert found == {
        "batch_64_memory_bound",
        "batch_4096_compute_bound",
        "fits_zero0",
        "dp_compute_bound",
        "cheaper_model",
    }


@each_test_cell
def test_a_true_false_or_choice_part_does_not_give_its_answer_away(
    spec: AssignmentSpec, grade_id: str
) -> None:
    """A hidden check of a bool alone, failing with "x is wrong", tells the student to flip
    it. Each such answer is checked together with the number it follows from (an isclose in
    the same assert), and the one message names neither value nor says "wrong"."""
    visible, hidden = visible_and_hidden(spec, grade_id)
    for name, values in choices_of(visible).items():
        checks = [
            (node, literal)
            for node, _, literal in messages(hidden)
            if name in {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        ]
        assert checks, f"{grade_id}: no hidden test checks {name}"
        for node, literal in checks:
            calls = [n for n in ast.walk(node.test) if isinstance(n, ast.Call)]
            assert any(getattr(c.func, "attr", "") == "isclose" for c in calls), (
                f"{grade_id}: check {name} in one assert with the number it follows from"
            )
            said = [w for w in (*values, "wrong", "should be", f"not {name}") if w in literal]
            assert not said, f"{grade_id}: the message for {name} says {said}: {literal}"


# ---- the plots under a part (not graded) ----------------------------------------------------
def plot_cells(nb: Any) -> list[Any]:
    """The code cell after each "*Not graded.*" note."""
    cells = list(nb.cells)
    return [
        after
        for before, after in itertools.pairwise(cells)
        if before.cell_type == "markdown"
        and before.source.startswith("*Not graded.*")
        and after.cell_type == "code"
    ]


def solved_namespace(nb: Any, upto: Any) -> dict[str, Any]:
    """The read-only numbers and every solution cell above ``upto``, run."""
    namespace: dict[str, Any] = {}
    for cell in nb.cells:
        if cell is upto:
            return namespace
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and (meta.get("solution") or meta.get("grade_id") == "specs"):
            exec(cell.source, namespace)
    raise AssertionError("plot cell not found")


def as_float(function: Any) -> Any:
    return lambda *args: float(function(*args))


def as_array(function: Any) -> Any:
    import numpy as np

    return lambda *args: np.asarray(function(*args), dtype=float)


def unanswered(*args: Any) -> Any:
    raise NotImplementedError()


@each_spec
def test_plot_cells_draw_any_correct_answer_and_never_raise(
    spec: AssignmentSpec, capsys: pytest.CaptureFixture[str]
) -> None:
    """A learner's function may return a float (float(...)), a numpy scalar or a 0-d array;
    each plot draws all of them, and an unanswered part prints a line instead of raising."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nb = read(spec.source_nb)
    for cell in plot_cells(nb):
        base = solved_namespace(nb, cell)
        functions = [n for n, v in base.items() if callable(v) and n in cell.source]
        assert functions, f"{spec.assignment}: the plot cell calls no answer"
        for variant in (None, as_float, as_array, "unanswered"):
            namespace = dict(base)
            for name in functions:
                if variant == "unanswered":
                    namespace[name] = unanswered
                elif variant is not None:
                    namespace[name] = variant(base[name])
            plt.close("all")
            exec(cell.source, namespace)  # raises if the plot cell does
            drawn = plt.get_fignums()
            printed = capsys.readouterr().out
            if variant == "unanswered":
                assert not drawn and "first" in printed, printed
            else:
                assert drawn and not printed, f"{spec.assignment} {variant}: {printed}"
        plt.close("all")

"""Each submission as the report sees it: final scores, flags, and answers waiting for a person."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmmath_course.instructor.copies import identical_groups
from llmmath_course.instructor.course import make_api, read_notebook
from llmmath_course.instructor.sandbox import OUT_OF_MEMORY
from llmmath_course.instructor.tamper import flag_cells, locked_sources


@dataclass
class Row:
    """One submission's final scores, its flags and what waits for a person."""

    student: str
    score: float | None
    max_score: float
    cells: dict[str, float | None] = field(default_factory=dict)  # final: overrides count
    flags: list[str] = field(default_factory=list)  # for review: something may be wrong
    hand_set: set[str] = field(default_factory=set)  # cells whose score a person set
    to_grade: list[str] = field(default_factory=list)  # answers still waiting for a person
    unscored: list[str] = field(default_factory=list)  # other cells with no score (a review)
    formgrader_flagged: bool = False  # a notebook of it flagged in the formgrader


def report_rows(root: Path, assignment: str) -> tuple[list[Row], list[str]]:
    """Each submission's final scores, flags and answers waiting for a person; the columns."""
    from nbgrader.api import Gradebook

    api = make_api(root)
    rows: list[Row] = []
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
        grade_cells = [
            (c.name, c.cell_type) for nb in gb.find_assignment(assignment).notebooks
            for c in nb.grade_cells
        ]  # fmt: skip
        test_cells = [name for name, kind in grade_cells if kind == "code"]
        # Answers graded by hand by design: a grade cell that is also a solution cell.
        by_hand = {
            c.name for nb in gb.find_assignment(assignment).notebooks for c in nb.solution_cells
        } & {name for name, _ in grade_cells}
        for submission in sorted(gb.assignment_submissions(assignment), key=lambda s: s.student.id):
            row = _row(submission, by_hand)
            _flag_grading(root, assignment, submission, row, test_cells)
            for nb in submission.notebooks:
                row.formgrader_flagged |= bool(nb.flagged)
                path = root / "submitted" / row.student / assignment / f"{nb.name}.ipynb"
                try:
                    student_nb = read_notebook(path)
                except Exception:  # any unreadable file is flagged above, never raised
                    continue
                release = root / api.coursedir.release_directory / assignment / f"{nb.name}.ipynb"
                row.flags += flag_cells(student_nb, locked_sources(release))
            rows.append(row)
    _flag_copies(root, assignment, rows)
    return rows, [name for name, _ in grade_cells]


def _flag_copies(root: Path, assignment: str, rows: list[Row]) -> None:
    """Flag every submission byte-identical to another student's (``copies``)."""
    by_student = {row.student: row for row in rows}
    for group in identical_groups(root, assignment, sorted(by_student)):
        for student in group:
            others = ", ".join(s for s in group if s != student)
            by_student[student].flags.append(f"byte-identical to the submission of {others}")


def _row(submission: Any, by_hand: set[str]) -> Row:
    """A submission's final scores (a person's score, hand grade or override, wins), and the
    cells that wait for a person: answers graded by hand go to their own list; any other cell
    without a score (a deleted test, say) is something to review."""
    row = Row(submission.student.id, submission.score, submission.max_score)
    for nb in submission.notebooks:
        for grade in nb.grades:
            manual, auto = grade.manual_score, grade.auto_score
            row.cells[grade.name] = manual if manual is not None else auto
            if grade.manual_score is not None:
                row.hand_set.add(grade.name)
            if grade.needs_manual_grade:
                (row.to_grade if grade.name in by_hand else row.unscored).append(grade.name)
    return row


def _flag_grading(
    root: Path, assignment: str, submission: Any, row: Row, test_cells: list[str]
) -> None:
    auto = {g.name: g.auto_score for nb in submission.notebooks for g in nb.grades}
    graded = all(
        (root / "autograded" / row.student / assignment / f"{nb.name}.ipynb").exists()
        for nb in submission.notebooks
    )
    missing = [c for c in test_cells if auto.get(c) is None]
    errors = root / "autograded" / f".errors-{assignment}" / f"{row.student}.log"
    if errors.exists() and errors.read_text().startswith(OUT_OF_MEMORY):
        row.flags.append("not graded: its kernel ran out of memory (the sandbox's limit)")
        row.to_grade = []
    elif not graded:  # nothing in it to grade cell by cell: review it as a whole
        row.flags.append("not graded by nbgrader (corrupt notebook or kernel died)")
        row.to_grade = []
    elif len(missing) == len(test_cells):
        row.flags.append("no test cells found (empty or rebuilt notebook)")
    elif missing:
        row.flags.append(f"test cells deleted: {', '.join(missing)}")
    others = [c for c in row.unscored if c not in missing]
    if graded and others:  # e.g. an override a person has not confirmed
        row.flags.append(f"no score yet for {', '.join(others)} (score it by hand)")

"""Regrade everyone after a test is fixed, keeping every grade a person set."""

from __future__ import annotations

from pathlib import Path

from llmmath_course.instructor.autograde import autograde
from llmmath_course.instructor.course import gradebook, nbgrader

HandGrade = tuple[float | None, float | None, bool]  # manual score, extra credit, needs review


def hand_grades(root: Path, assignment: str) -> dict[tuple[str, str, str], HandGrade]:
    """Every grade a person set (a hand score or an override), by (student, notebook, cell)."""
    kept = {}
    with gradebook(root) as gb:
        for submission in gb.assignment_submissions(assignment):
            for nb in submission.notebooks:
                for grade in nb.grades:
                    if grade.manual_score is not None or grade.extra_credit:
                        key = (submission.student.id, nb.name, grade.name)
                        kept[key] = (
                            grade.manual_score,
                            grade.extra_credit,
                            grade.needs_manual_grade,
                        )
    return kept


def restore_hand_grades(
    root: Path, assignment: str, kept: dict[tuple[str, str, str], HandGrade]
) -> None:
    """Put back what a person set, and whether it still needed review, after an autograde."""
    from nbgrader.api import MissingEntry

    with gradebook(root) as gb:
        for (student, notebook, cell), (manual, extra, needs_review) in kept.items():
            try:
                grade = gb.find_grade(cell, notebook, assignment, student)
            except MissingEntry:  # the cell is gone from the regenerated assignment
                continue
            grade.manual_score, grade.extra_credit = manual, extra
            grade.needs_manual_grade = needs_review
        gb.db.commit()


def regrade(
    root: Path, assignment: str, jobs: int, timeout: int | None = None, kernels: str = "fork"
) -> list[str]:
    """Record the assignment again from solutions/ and autograde everyone, keeping hand grades."""
    kept = hand_grades(root, assignment)
    nbgrader(root, "generate_assignment", assignment, "--force")
    print(f"regrade {assignment}: assignment recorded again from solutions/", flush=True)
    failed = autograde(root, assignment, jobs, timeout, force=True, kernels=kernels)
    restore_hand_grades(root, assignment, kept)
    print(f"kept {len(kept)} hand grades and overrides, with their reviewed state", flush=True)
    return failed

"""Regrade everyone after a test is fixed, keeping every grade a person set.

The hand grades are saved to ``autograded/.hand-grades-<assignment>.json`` before anything is
regraded, and that file is removed only once they are back in the gradebook: a regrade killed
part way (even by SIGKILL, when the autograde may already have reset them) is run again, and
the rerun restores the saved grades, not what the cut-short run left.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from llmmath_course.instructor.autograde import autograde
from llmmath_course.instructor.course import gradebook, nbgrader
from llmmath_course.instructor.sandbox import Limits

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


def saved_path(root: Path, assignment: str) -> Path:
    # A dotfile: nbgrader globs student folders with "*", which skips it.
    return root / "autograded" / f".hand-grades-{assignment}.json"


def save_hand_grades(path: Path, kept: dict[tuple[str, str, str], HandGrade]) -> None:
    """Write the hand grades to ``path`` atomically (a kill leaves the old file or the new)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [[*key, *value] for key, value in sorted(kept.items())]
    partial = path.with_suffix(".partial")
    with partial.open("w") as fh:
        json.dump(entries, fh)
        fh.flush()
        os.fsync(fh.fileno())
    partial.replace(path)


def load_hand_grades(path: Path) -> dict[tuple[str, str, str], HandGrade]:
    return {
        (student, notebook, cell): (manual, extra, needs_review)
        for student, notebook, cell, manual, extra, needs_review in json.loads(path.read_text())
    }


def restore_hand_grades(
    root: Path, assignment: str, kept: dict[tuple[str, str, str], HandGrade]
) -> int:
    """Put back what a person set, and whether it still needed review, after an autograde;
    return how many were put back."""
    from nbgrader.api import MissingEntry

    restored = 0
    with gradebook(root) as gb:
        for (student, notebook, cell), (manual, extra, needs_review) in kept.items():
            try:
                grade = gb.find_grade(cell, notebook, assignment, student)
            except MissingEntry:  # the cell or the submission is gone
                continue
            grade.manual_score, grade.extra_credit = manual, extra
            grade.needs_manual_grade = needs_review
            restored += 1
        gb.db.commit()
    return restored


def regrade(
    root: Path,
    assignment: str,
    jobs: int,
    timeout: int | None = None,
    kernels: str = "sandbox",
    limits: Limits | None = None,
) -> list[str]:
    """Record the assignment again from solutions/ and autograde everyone, keeping hand grades."""
    saved = saved_path(root, assignment)
    if saved.exists():  # an earlier regrade was cut short: its grades are the ones to keep
        kept = load_hand_grades(saved)
        print(f"regrade {assignment}: an interrupted regrade saved {len(kept)} hand grades")
    else:
        kept = hand_grades(root, assignment)
        save_hand_grades(saved, kept)
    nbgrader(root, "generate_assignment", assignment, "--force")
    print(f"regrade {assignment}: assignment recorded again from solutions/", flush=True)
    failed = autograde(root, assignment, jobs, timeout, force=True, kernels=kernels, limits=limits)
    restored = restore_hand_grades(root, assignment, kept)
    saved.unlink()
    print(
        f"kept {restored} of {len(kept)} hand grades and overrides, with their reviewed state",
        flush=True,
    )
    return failed

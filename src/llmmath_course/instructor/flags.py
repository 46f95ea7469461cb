"""Flags a person must look at, each tied to one submission, and which ones were reviewed."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from llmmath_course.instructor.course import gradebook, submission_stamp
from llmmath_course.instructor.rows import Row


@dataclass(frozen=True)
class Flag:
    """Something in one submission a person must look at. ``submission`` names which one (its
    timestamp, or a refused one's inbound folder), so a new submission's flags are new."""

    student: str
    submission: str
    text: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.student, self.submission, self.text)


REVIEWED_COLUMNS = ("student", "submission", "flag", "reviewed_at", "by", "note")


def reviewed_path(root: Path, assignment: str) -> Path:
    # Beside the submissions it is about; a dotfile, which nbgrader's globs skip.
    return root / "submitted" / f".reviewed-{assignment}.tsv"


def read_reviewed(root: Path, assignment: str) -> set[tuple[str, str, str]]:
    """The keys of every flag marked reviewed."""
    path = reviewed_path(root, assignment)
    if not path.exists():
        return set()
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return {(r["student"], r["submission"], r["flag"]) for r in rows}


def all_flags(
    root: Path, assignment: str, rows: list[Row], forged: list[dict[str, str]]
) -> list[Flag]:
    """The report's flags (refused submissions first), each tied to its submission."""
    flags = [
        Flag(
            e["student"], e["submission"], f"refused at collect: {e['submission']}: {e['problem']}"
        )
        for e in forged
    ]
    for row in rows:
        stamp = ""
        if (root / "submitted" / row.student / assignment).is_dir():
            stamp = submission_stamp(root, row.student, assignment)
        flags += [Flag(row.student, stamp, text) for text in row.flags]
    return flags


def flag_in_formgrader(root: Path, assignment: str, students: list[str], flagged: bool) -> None:
    """Set the formgrader's flag (its "flagged" column, and the flag button on a submission)
    on every notebook of these students' submissions."""
    from nbgrader.api import MissingEntry

    if not students:
        return
    with gradebook(root) as gb:
        for student in students:
            try:
                submission = gb.find_submission(assignment, student)
            except MissingEntry:  # a refused submission's student may have none
                continue
            for nb in submission.notebooks:
                nb.flagged = flagged
        gb.db.commit()

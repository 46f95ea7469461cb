"""Review: list the flags, mark a student's flags reviewed, and say what still waits."""

from __future__ import annotations

import sys
from pathlib import Path

from llmmath_course.instructor.course import refused
from llmmath_course.instructor.flags import (
    all_flags,
    append_reviewed,
    flag_in_formgrader,
    read_ledger,
)
from llmmath_course.instructor.report import report
from llmmath_course.instructor.rows import report_rows


def review(root: Path, assignment: str, students: list[str], note: str = "") -> None:
    """Without students: list every flag, open or reviewed. With students: mark each of their
    open flags reviewed (and their submissions unflagged in the formgrader)."""
    import datetime
    import getpass

    rows, _ = report_rows(root, assignment)
    flags = all_flags(root, assignment, rows, refused(root, assignment))
    done, forged = read_ledger(root, assignment)
    if not students:
        for flag in flags:
            state = "reviewed" if flag.key in done else "OPEN"
            print(f"{state:8}  {flag.student}: {flag.text}")
        print(f"{sum(f.key not in done for f in flags)} open of {len(flags)} flags", flush=True)
        for line in forged:
            print(f"FORGED ledger row, not written by review (ignored): {line}")
        return
    unknown = [s for s in students if not any(f.student == s for f in flags)]
    if unknown:
        sys.exit(f"no flag to review for {', '.join(unknown)} in {assignment}")
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    marked = []
    for flag in flags:
        if flag.student in students and flag.key not in done:
            marked.append([*flag.key, when, getpass.getuser(), note])
            print(f"reviewed  {flag.student}: {flag.text}")
    append_reviewed(root, assignment, marked)
    flag_in_formgrader(root, assignment, students, False)
    report(root, assignment)


def open_review(root: Path, assignment: str) -> list[str]:
    """What still waits for a person before feedback may go out, one line each (empty: none)."""
    rows, _ = report_rows(root, assignment)
    done, forged = read_ledger(root, assignment)
    flags = all_flags(root, assignment, rows, refused(root, assignment))
    lines = [f"ledger row not written by review (forged?): {line}" for line in forged]
    lines += [f"flag not reviewed: {f.student}: {f.text}" for f in flags if f.key not in done]
    lines += [
        f"flagged in the formgrader: {row.student}"
        for row in rows
        if row.formgrader_flagged and not any(f.student == row.student for f in flags)
    ]
    lines += [f"to grade by hand: {row.student}: {cell}" for row in rows for cell in row.to_grade]
    return lines

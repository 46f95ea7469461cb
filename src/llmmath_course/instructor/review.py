"""Review: list the flags, mark a student's flags reviewed, and say what still waits."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from llmmath_course.instructor.course import refused
from llmmath_course.instructor.flags import (
    REVIEWED_COLUMNS,
    all_flags,
    flag_in_formgrader,
    read_reviewed,
    reviewed_path,
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
    done = read_reviewed(root, assignment)
    if not students:
        for flag in flags:
            state = "reviewed" if flag.key in done else "OPEN"
            print(f"{state:8}  {flag.student}: {flag.text}")
        print(f"{sum(f.key not in done for f in flags)} open of {len(flags)} flags", flush=True)
        return
    unknown = [s for s in students if not any(f.student == s for f in flags)]
    if unknown:
        sys.exit(f"no flag to review for {', '.join(unknown)} in {assignment}")
    path = reviewed_path(root, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    with path.open("a", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t")
        if new:
            writer.writerow(REVIEWED_COLUMNS)
        for flag in flags:
            if flag.student in students and flag.key not in done:
                writer.writerow([*flag.key, when, getpass.getuser(), note])
                print(f"reviewed  {flag.student}: {flag.text}")
    flag_in_formgrader(root, assignment, students, False)
    report(root, assignment)


def open_review(root: Path, assignment: str) -> list[str]:
    """What still waits for a person before feedback may go out, one line each (empty: none)."""
    rows, _ = report_rows(root, assignment)
    done = read_reviewed(root, assignment)
    flags = all_flags(root, assignment, rows, refused(root, assignment))
    lines = [f"flag not reviewed: {f.student}: {f.text}" for f in flags if f.key not in done]
    lines += [
        f"flagged in the formgrader: {row.student}"
        for row in rows
        if row.formgrader_flagged and not any(f.student == row.student for f in flags)
    ]
    lines += [f"to grade by hand: {row.student}: {cell}" for row in rows for cell in row.to_grade]
    return lines

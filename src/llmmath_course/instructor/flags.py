"""Flags a person must look at, each tied to one submission, and which ones were reviewed."""

from __future__ import annotations

import csv
import hashlib
import hmac
import os
import secrets
from contextlib import suppress
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


REVIEWED_COLUMNS = ("student", "submission", "flag", "reviewed_at", "by", "note", "mac")


def reviewed_path(root: Path, assignment: str) -> Path:
    # Beside the submissions it is about; a dotfile, which nbgrader's globs skip.
    return root / "submitted" / f".reviewed-{assignment}.tsv"


def _review_key(root: Path, create: bool) -> bytes | None:
    """The course's review key (``.review-key`` in the course root, the instructor's alone,
    mode 600): what makes a ledger row the review command's. None where there is none yet."""
    path = root / ".review-key"
    if create:
        with suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(32))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _mac(key: bytes, assignment: str, fields: list[str]) -> str:
    message = "\x1f".join([assignment, *fields]).encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def append_reviewed(root: Path, assignment: str, rows: list[list[str]]) -> None:
    """Add rows (student, submission, flag, reviewed_at, by, note) to the review ledger, each
    signed with the course's review key: only ``review`` writes it (flags.read_ledger drops a
    row that does not verify). Opened without following a link, created mode 600."""
    key = _review_key(root, create=True)
    assert key is not None
    path = reviewed_path(root, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "a", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t")
        if new:
            writer.writerow(REVIEWED_COLUMNS)
        for row in rows:
            writer.writerow([*row, _mac(key, assignment, row)])


def read_ledger(root: Path, assignment: str) -> tuple[set[tuple[str, str, str]], list[str]]:
    """The keys of every flag marked reviewed by the review command, and the rows that were
    not written by it (no signature, or a wrong one: a row added by hand or by code that
    reached the ledger), one line each. Those rows count for nothing."""
    path = reviewed_path(root, assignment)
    if not path.exists():
        return set(), []
    key = _review_key(root, create=False)
    with path.open(newline="") as fh:
        # By position: a ledger from before the signatures has six columns, and each of its
        # rows counts as forged (delete that ledger and review again).
        rows = list(csv.reader(fh, delimiter="\t"))[1:]
    done, forged = set(), []
    for row in rows:
        fields, mac = row[:6], (row[6] if len(row) > 6 else "")
        if (
            key is not None
            and len(fields) == 6
            and hmac.compare_digest(mac, _mac(key, assignment, fields))
        ):
            done.add((fields[0], fields[1], fields[2]))
        else:
            who = fields[4] if len(fields) > 4 else ""
            forged.append(": ".join(fields[:1] + fields[2:3]) + f' ("by" {who})')
    return done, forged


def read_reviewed(root: Path, assignment: str) -> set[tuple[str, str, str]]:
    """The keys of every flag marked reviewed (by the review command: see read_ledger)."""
    return read_ledger(root, assignment)[0]


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

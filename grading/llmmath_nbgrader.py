"""The course's additions to nbgrader 0.9.6, switched on in ``nbgrader_config.py``.

``OwnerCheckedCollect`` (``c.ExchangeFactory.collect``): nbgrader's ``collect``, except that a
submission whose files are not all owned by the OS user of the student it names is refused: not
collected, listed in ``submitted/.refused-<assignment>.tsv`` (which the grade report shows) and
logged. nbgrader itself only warns ("cheating attempt?") and collects it anyway, so one student
could hand in work as another (``nbgrader submit --student=<someone else>``), replace their
submission and, holding that submission's secret, fetch the other student's feedback. A refused
submission stays in the exchange's inbound folder, as evidence; the named student's newest
genuine submission is collected instead. ``c.ExchangeCollect.check_owner = False`` switches the
check off (only where several students share one OS account, as the tests simulate them).
"""

from __future__ import annotations

import csv
import glob
import os
import pwd
import stat
from collections import defaultdict
from pathlib import Path
from typing import Any

from nbgrader.exchange.default.collect import ExchangeCollect

REFUSED_COLUMNS = ("submission", "student", "problem")


def refused_path(submitted: Path, assignment: str) -> Path:
    """Where collect lists the submissions it refused (a dotfile: nbgrader's globs skip it)."""
    return submitted / f".refused-{assignment}.tsv"


def read_refused(submitted: Path, assignment: str) -> list[dict[str, str]]:
    path = refused_path(submitted, assignment)
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def ownership_problem(folder: Path, student: str) -> str | None:
    """Why ``folder`` (a submission in the inbound folder) is not ``student``'s own work, or None.

    Every entry must be a plain file or folder (no symbolic link: collect, run as the
    instructor, would copy what it points to) owned by the OS user named ``student``.
    """
    try:
        uid = pwd.getpwnam(student).pw_uid
    except KeyError:
        return f"no OS user is named {student}"
    entries = [folder]
    for parent, dirs, files in os.walk(folder):
        entries += [Path(parent) / name for name in dirs + files]
    for entry in entries:
        info = os.lstat(entry)
        where = entry.relative_to(folder).as_posix() if entry != folder else "the folder"
        if stat.S_ISLNK(info.st_mode):
            return f"{where} is a symbolic link"
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            return f"{where} is not a plain file"
        if info.st_uid != uid:
            try:
                owner = pwd.getpwuid(info.st_uid).pw_name
            except KeyError:
                owner = f"uid {info.st_uid}"
            return f"{where} is owned by {owner}, not by {student}"
    return None


class OwnerCheckedCollect(ExchangeCollect):  # type: ignore[misc]
    """nbgrader's collect, refusing submissions that are not their named student's own."""

    def init_src(self) -> None:
        super().init_src()  # checks the course and inbound folder, finds the due date
        if not self.check_owner:
            return
        student = self.coursedir.student_id or "*"
        pattern = os.path.join(
            self.inbound_path, f"{student}+{self.coursedir.assignment_id}+*"
        )  # as nbgrader's own
        genuine: dict[str, list[dict[str, Any]]] = defaultdict(list)
        refused = []
        for path in sorted(glob.glob(pattern)):
            record = self._path_to_record(path)
            problem = ownership_problem(Path(path), record["username"])
            if problem is None:
                genuine[record["username"]].append(record)
                continue
            refused.append((record["filename"], record["username"], problem))
            self.log.error(
                "REFUSED %s: it names %s, but %s; not collected (it stays in the inbound folder)",
                record["filename"],
                record["username"],
                problem,
            )
        self.src_records = [self._choose(records) for records in genuine.values()]
        if self.coursedir.student_id in ("", "*"):  # a run for the whole class: the full list
            self._write_refused(refused)

    def _choose(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """The submission nbgrader would collect of one student's (its rule, unchanged)."""
        records = self._sort_by_timestamp(records)
        if self.duedate is not None and self.before_duedate:
            on_time = [r for r in records if r["timestamp"] <= self.duedate]
            return on_time[0] if on_time else records[0]
        return records[0]

    def _write_refused(self, refused: list[tuple[str, str, str]]) -> None:
        submitted = Path(self.coursedir.root) / self.coursedir.submitted_directory
        path = refused_path(submitted, self.coursedir.assignment_id)
        if not refused:
            path.unlink(missing_ok=True)
            return
        submitted.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh, delimiter="\t")
            writer.writerow(REFUSED_COLUMNS)
            writer.writerows(refused)

"""The class's OS accounts: made with a private home (and a password PAM accepts), found,
their processes, and removed with every process and the memory cgroup they leave."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
from contextlib import suppress
from pathlib import Path

RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"


def add_user(name: str, home: Path, password: str | None = None) -> None:
    """A new OS account with a private home; with ``password``, one PAM accepts."""
    subprocess.run(
        ["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash",
         "--user-group", name],
        check=True, capture_output=True,
    )  # fmt: skip
    home.chmod(0o700)  # a student's work is theirs alone
    if password is not None:
        subprocess.run(["chpasswd"], input=f"{name}:{password}", text=True, check=True)


def processes_of(users: list[str]) -> list[Path]:
    """``/proc/<pid>`` of every process running as one of ``users`` (gone users: none)."""
    uids = set()
    for name in users:
        with suppress(KeyError):
            uids.add(pwd.getpwnam(name).pw_uid)
    found = []
    for proc in Path("/proc").iterdir():
        with suppress(FileNotFoundError):
            if proc.name.isdigit() and proc.stat().st_uid in uids:
                found.append(proc)
    return found


def remove_user(name: str) -> None:
    for proc in processes_of([name]):  # every process still running as this user
        with suppress(ProcessLookupError, PermissionError):
            os.kill(int(proc.name), signal.SIGKILL)
    subprocess.run(["userdel", "--remove", name], capture_output=True)
    for cgroup in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")):  # its memory cgroup
        for folder in (name, f"grading-{name}"):  # and the instructor's delegated one (empty
            with suppress(OSError):  # once grading is over), both hub/jupyterhub_config.py's
                (cgroup / "llmmath-hub" / folder).rmdir()


def accounts(students: str, prefix: str, instructor: str | None) -> tuple[str, list[str]]:
    """The instructor's and the students' account names: ``students`` is a count (accounts
    ``<prefix>-s01`` ...) or a comma-separated list of names."""
    if students.isdigit():
        names = [f"{prefix}-s{i:02d}" for i in range(1, int(students) + 1)]
    else:
        names = [n.strip() for n in students.split(",") if n.strip()]
    valid = re.compile(r"[a-z_][a-z0-9_-]*")
    bad = [n for n in [*names, instructor or ""] if n and not valid.fullmatch(n)]
    if not names or bad:
        raise ValueError(
            f"--students must be a count or comma-separated account names (lower case, digits, "
            f"_ and -), got {students!r}" + (f"; bad: {bad}" if bad else "")
        )
    return instructor or f"{prefix}-inst", names


def exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True

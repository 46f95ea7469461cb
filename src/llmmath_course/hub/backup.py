"""The whole class in one archive (``make hub-backup``), consistent while the hub runs."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import sys
import tarfile
import tempfile
from pathlib import Path

from llmmath_course.hub.exchange import exchange_mounted, image_of


def backup(state: Path, to: Path) -> list[str]:
    """The whole class in one tar.gz (root only, mode 600): the state folder with the homes of the
    accounts made there, and the instructor's course root wherever it is. Each SQLite database (the
    hub's, the gradebook) is copied with SQLite's backup API, consistent even while the hub or a
    grading run writes to it. Returns the archive's member names.

    Left out: the hub's own copy of the static files (``<state>/static``, rewritten at each start),
    the exchange's filesystem image (its files are archived from ``exchange/``, the image mounted
    read-only for the while if the hub is stopped), and whatever is neither a file, a folder nor a
    symbolic link (a student's unix socket or FIFO, a device node), each named in a warning on
    stderr: a socket stopped the archive half way, and reading a FIFO would wait forever. Files are
    read without following a link (``O_NOFOLLOW``): a student who swaps a file for a link between
    the listing and the read gets an error for that file, not root's reading of what it points
    to."""
    if not (state / "hub").is_dir():
        raise ValueError(f"--state {state} holds no class (no hub/ folder in it)")
    own_static, image = state / "static", image_of(state)
    with exchange_mounted(state), tempfile.TemporaryDirectory() as scratch:
        snapshots: dict[Path, Path] = {}
        for db in [*state.rglob("*.sqlite"), *state.rglob("gradebook.db")]:
            if not db.is_file() or db.is_symlink():
                continue
            copy = Path(scratch) / f"{len(snapshots)}.db"
            source = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            with contextlib.closing(source), contextlib.closing(sqlite3.connect(copy)) as dst:
                source.backup(dst)
            snapshots[db] = copy
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        fd = os.open(to, flags, 0o600)
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            for path in sorted([state, *state.rglob("*")]):
                if path.name.endswith(("-journal", "-wal", "-shm")):
                    continue
                if path in (own_static, image) or own_static in path.parents:
                    continue
                _add(tar, path, path.relative_to(state.parent).as_posix(), snapshots)
            return tar.getnames()


def _add(tar: tarfile.TarFile, path: Path, name: str, snapshots: dict[Path, Path]) -> None:
    """One entry: a file's bytes (a database's consistent copy), a folder, a link as a link;
    anything else skipped with a warning."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:  # gone since the listing (a student's temporary file)
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
        kind = {stat.S_IFSOCK: "socket", stat.S_IFIFO: "FIFO"}.get(stat.S_IFMT(mode), "device")
        print(f"hub-backup: skipped {path} (a {kind}, not a file)", file=sys.stderr)
        return
    info = tar.gettarinfo(str(path), arcname=name)
    if path in snapshots:
        info.size = snapshots[path].stat().st_size
        with snapshots[path].open("rb") as fh:
            tar.addfile(info, fh)
    elif info.isfile():
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as error:  # swapped for a link (ELOOP), or gone
            print(f"hub-backup: skipped {path} ({error.strerror})", file=sys.stderr)
            return
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                print(f"hub-backup: skipped {path} (no longer a file)", file=sys.stderr)
                return
            info.size = os.fstat(fh.fileno()).st_size
            tar.addfile(info, fh)
    else:
        tar.addfile(info)

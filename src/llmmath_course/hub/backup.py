"""The whole class in one archive (``make hub-backup``), consistent while the hub runs."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tarfile
import tempfile
from pathlib import Path


def backup(state: Path, to: Path) -> list[str]:
    """The whole class in one tar.gz (root only, mode 600): the state folder with the homes of
    the accounts made there, and the instructor's course root wherever it is. Each SQLite
    database (the hub's, the gradebook) is copied with SQLite's backup API, consistent even while
    the hub or a grading run writes to it. Returns the archive's member names."""
    if not (state / "hub").is_dir():
        raise ValueError(f"--state {state} holds no class (no hub/ folder in it)")
    with tempfile.TemporaryDirectory() as scratch:
        snapshots: dict[Path, Path] = {}
        for db in [*state.rglob("*.sqlite"), *state.rglob("gradebook.db")]:
            copy = Path(scratch) / f"{len(snapshots)}.db"
            source = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            with contextlib.closing(source), contextlib.closing(sqlite3.connect(copy)) as dst:
                source.backup(dst)
            snapshots[db] = copy
        fd = os.open(to, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:

            def add(path: Path, name: str) -> None:
                info = tar.gettarinfo(str(path), arcname=name)
                if path in snapshots:
                    info.size = snapshots[path].stat().st_size
                    with snapshots[path].open("rb") as fh:
                        tar.addfile(info, fh)
                elif info.isfile():
                    with path.open("rb") as fh:
                        tar.addfile(info, fh)
                else:
                    tar.addfile(info)

            for path in sorted([state, *state.rglob("*")]):
                if path.name.endswith(("-journal", "-wal", "-shm")) or "static" in path.parts:
                    continue
                add(path, path.relative_to(state.parent).as_posix())
            return tar.getnames()

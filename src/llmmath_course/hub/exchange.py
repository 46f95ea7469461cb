"""The exchange on a filesystem of its own, of a fixed size (``make hub``).

Every account of the class may write in nbgrader's exchange: its root (mode 1770, nbgrader's
student commands need it writable) and the course's ``inbound/`` (mode 2733). nbgrader caps what
``submit`` copies (100 MB), but a student's terminal or kernel writes there directly, and a
folder on the machine's disk would take all of it. So the exchange is an ext4 filesystem in a
file of the state folder (``hub/exchange.img``, root's), loop-mounted on ``<state>/exchange``
while the hub runs: students together can write at most its size less a reserve, and a write
past that fails with ENOSPC. The reserve is ext4's reserved blocks, given to the instructor's
account (the ``resuid`` mount option): with the exchange full, the instructor still releases
and returns feedback, which students cannot write into.

This kernel has no disk quotas (no ``CONFIG_QUOTA``): one student alone can fill the students'
share, and then the others' submissions fail until the file goes (book/instructor.md says how
to find and remove it). With quotas, per-student limits on the same filesystem would bound each.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# The exchange's filesystem, and the part of it only the instructor (and root) may write.
EXCHANGE_SIZE = "2G"
EXCHANGE_RESERVE = "256M"
BLOCK = 4096
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def size_bytes(text: str, name: str) -> int:
    """``512M``, ``2G``, ``1048576`` (bytes; K, M, G, T are powers of 1024) as bytes."""
    found = re.fullmatch(r"(\d+)([KMGT]?)", text.strip().upper())
    if found is None:
        raise ValueError(f"{name} must be a size in bytes such as 512M or 2G, got {text!r}")
    return int(found[1]) * _UNITS[found[2]]


def image_of(state: Path) -> Path:
    return state / "hub" / "exchange.img"


def mount_exchange(state: Path, exchange: Path, instructor: str, size: int, reserve: int) -> str:
    """Mount the exchange's filesystem on ``exchange`` (made, at ``size`` bytes with ``reserve``
    for ``instructor``, when the state folder has none yet); what was done, in a sentence. A
    size of 0 leaves the exchange a plain folder; so does a machine that cannot loop-mount
    (a container without loop devices), which the sentence says."""
    if size == 0:
        return "the exchange is a plain folder (--exchange-size 0): students' writes are unbounded"
    if os.path.ismount(exchange):
        return f"the exchange's filesystem was mounted already ({_free(exchange)})"
    image = image_of(state)
    made = not image.exists()
    try:
        if made:
            _make_image(image, size, reserve)
        moved = _move_in(image, exchange) if made and any(exchange.iterdir()) else None
        uid = pwd.getpwnam(instructor).pw_uid
        options = f"loop,nosuid,nodev,resuid={uid}"
        subprocess.run(["mount", "-o", options, str(image), str(exchange)], check=True,
                       capture_output=True, text=True)  # fmt: skip
    except (subprocess.CalledProcessError, OSError) as error:
        if made:
            image.unlink(missing_ok=True)
        why = getattr(error, "stderr", "") or error
        return f"the exchange is a plain folder, UNBOUNDED: no filesystem of its own here ({why})"
    note = f"; the folder it replaced is kept in {moved}" if moved else ""
    return f"the exchange is its own filesystem ({_free(exchange)}){note}"


def unmount_exchange(exchange: Path) -> None:
    """Unmount the exchange's filesystem (its files stay in the image for the next start); a
    process still inside it (a student's, in its own namespace) keeps it until it ends."""
    if os.path.ismount(exchange):
        done = subprocess.run(["umount", str(exchange)], capture_output=True)
        if done.returncode:
            subprocess.run(["umount", "--lazy", str(exchange)], capture_output=True)


@contextmanager
def exchange_mounted(state: Path) -> Iterator[None]:
    """The exchange's files readable in ``<state>/exchange`` meanwhile (``make hub-backup``
    with the hub stopped: the image mounted read-only, and unmounted after)."""
    image, exchange = image_of(state), state / "exchange"
    if not image.is_file() or os.path.ismount(exchange) or not exchange.is_dir():
        yield
        return
    subprocess.run(["mount", "-o", "loop,ro,nosuid,nodev,noexec", str(image), str(exchange)],
                   check=True, capture_output=True, text=True)  # fmt: skip
    try:
        yield
    finally:
        unmount_exchange(exchange)


def _make_image(image: Path, size: int, reserve: int) -> None:
    """A new ext4 filesystem of ``size`` bytes in ``image`` (root's, mode 600; sparse: disk is
    taken as it fills), ``reserve`` bytes of it reserved blocks."""
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.truncate(size)
    blocks = str(reserve // BLOCK)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", str(BLOCK), "-m", "0", "-L", "llmmath-exch",
                    str(image)], check=True, capture_output=True, text=True)  # fmt: skip
    reserved = ["tune2fs", "-r", blocks, str(image)]
    subprocess.run(reserved, check=True, capture_output=True, text=True)


def _move_in(image: Path, exchange: Path) -> Path:
    """A class whose exchange was a plain folder (made before the cap): its files go into the
    new filesystem, owners and modes kept; the old folder is kept, root's alone, beside it."""
    with tempfile.TemporaryDirectory(dir=image.parent) as scratch:
        subprocess.run(["mount", "-o", "loop", str(image), scratch], check=True,
                       capture_output=True, text=True)  # fmt: skip
        try:
            subprocess.run(["cp", "-a", f"{exchange}/.", scratch], check=True,
                           capture_output=True, text=True)  # fmt: skip
        finally:
            subprocess.run(["umount", scratch], check=True, capture_output=True)
    kept = exchange.with_name(f"exchange-before-cap-{time.strftime('%Y%m%dT%H%M%S')}")
    exchange.rename(kept)
    kept.chmod(0o700)
    exchange.mkdir()
    return kept


def _free(exchange: Path) -> str:
    usage = shutil.disk_usage(exchange)
    return f"{usage.total / 2**20:.0f} MiB, {usage.free / 2**20:.0f} MiB free"

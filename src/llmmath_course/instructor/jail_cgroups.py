"""The grading jails' cgroups: where they live, how one is removed, and the sweep of jails
whose grading process died before it closed them (``sandbox.Jail`` names each for its owner)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
# Where each sandbox gets its own cgroups (under every hierarchy it uses), as root.
CGROUP_PARENT = "llmmath-grading"


# ---- jails whose grading process died before it closed them ---------------------------------
#: A jail's cgroup name: its owner's pid and start time (clock ticks after boot), its folder.
_JAIL_NAME = re.compile(r"^(\d+)\.(\d+)\.(llmg-[A-Za-z0-9_]+)$")


def process_start(pid: int, zombie: bool = True) -> int | None:
    """When process ``pid`` started (clock ticks after boot); None if there is none, or, with
    ``zombie=False``, if it has ended and only waits to be reaped."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat_line.rsplit(")", 1)[1].split()  # after the name, which may hold spaces
    return None if not zombie and fields[0] == "Z" else int(fields[19])


def sweep_orphaned_jails() -> list[str]:
    """Kill what is left in each jail whose grading process is gone, and remove its cgroups
    and folder; what was removed, a line each. A worker killed mid-kernel (``kill -9`` of
    ``grade``) never closes its jail, and bwrap's --die-with-parent can miss the death
    (bubblewrap#633): its kernel stayed, asleep in its jail, for good. A live run's jails are
    never touched: their owner's pid and start time still match."""
    removed = []
    for cgroup in jail_cgroups():
        found = _JAIL_NAME.match(cgroup.name)
        if found is None or process_start(int(found[1])) == int(found[2]):
            continue
        pids = _procs(cgroup)
        remove_cgroup(cgroup)
        shutil.rmtree(Path("/tmp") / found[3], ignore_errors=True)
        removed.append(f"removed the orphaned grading jail {cgroup} (processes {pids or 'none'})")
    return removed


def jail_cgroups() -> list[Path]:
    """Every jail's cgroup, under each hierarchy a jail may use (v2, or v1's memory and pids)."""
    parents = [CGROUP_ROOT / CGROUP_PARENT]
    parents += [CGROUP_ROOT / hierarchy / CGROUP_PARENT for hierarchy in ("memory", "pids")]
    return sorted(c for p in parents if p.is_dir() for c in p.iterdir() if c.is_dir())


def _procs(cgroup: Path) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
    return []


def remove_cgroup(path: Path) -> None:
    """Kill every process in the cgroup, then remove it (a cgroup with a process stays)."""
    kill = path / "cgroup.kill"
    for _ in range(100):
        with contextlib.suppress(OSError):
            if kill.exists():
                kill.write_text("1")
            for pid in _procs(path):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)  # the killed processes are still being reaped

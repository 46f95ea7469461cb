"""Hubs a dead test run left running, found and removed at the start of the next run.

:func:`~llmmath_course.hub.running.running_hub` stops its hub and removes its throwaway class
in a ``finally``; when pytest itself is killed that never runs, and the hub (in a session of
its own, some tests start it with SIGINT ignored) keeps its students' servers, accounts and
exchange mount. Such a hub is known by two things: its class is a throwaway (its state folder
is ``running_hub``'s own temporary ``llmmath-hub-*``, never a real class's ``--state``) and its
starter is gone (the hub was handed to init, parent PID 1). ``tests/conftest.py`` sweeps them
when a run starts, and says what it removed.
"""

from __future__ import annotations

import grp
import os
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from llmmath_course.hub.accounts import exists, remove_user
from llmmath_course.hub.exchange import unmount_exchange

#: How long a left hub has to stop its servers on SIGTERM before its process group is killed.
STOP_S = 30.0


@dataclass(frozen=True)
class LeftHub:
    pid: int
    state: Path  # its throwaway class folder, /tmp/llmmath-hub-*
    accounts: tuple[str, ...]  # the instructor's and the students' (made by running_hub)


def _environment(proc: Path) -> dict[str, str]:
    raw = (proc / "environ").read_bytes().split(b"\0")
    pairs = (item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)
    return dict(pairs)


def _parent(proc: Path) -> int:
    for line in (proc / "status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    raise ValueError(f"{proc}/status names no parent")


def _is_hub(proc: Path) -> bool:
    """The hub's script, run by its interpreter: ``python .../bin/jupyterhub -f ...``."""
    argv = (proc / "cmdline").read_bytes().split(b"\0")[:2]
    return any(Path(arg.decode(errors="replace")).name == "jupyterhub" for arg in argv)


def left_hubs() -> list[LeftHub]:
    """Every throwaway hub whose starter is gone (its parent is init)."""
    temporary = Path(tempfile.gettempdir())
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if not _is_hub(proc) or _parent(proc) != 1:
                continue
            environment = _environment(proc)
        except (OSError, ValueError):  # gone meanwhile, or not ours to read
            continue
        state = Path(environment.get("LLMMATH_HUB_STATE", "/"))
        if state.parent != temporary or not state.name.startswith("llmmath-hub-"):
            continue  # a real class (make hub's --state), or a test's kept state: not ours
        names = [environment.get("LLMMATH_HUB_INSTRUCTOR", "")]
        names += environment.get("LLMMATH_HUB_STUDENTS", "").split(",")
        found.append(LeftHub(int(proc.name), state, tuple(n for n in names if n)))
    return found


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def _stop(pid: int) -> None:
    """SIGTERM (the hub stops its servers), wait until it has gone, then its process group."""
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_S
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # running_hub starts it in a session of its own


def remove(hub: LeftHub) -> None:
    """What ``running_hub``'s ``finally`` would have done: stop the hub, unmount the exchange,
    remove the accounts and the class's group, and the folder."""
    exchange = hub.state / "exchange"
    group = None
    with suppress(OSError, KeyError):  # the mounted exchange is the class group's
        group = grp.getgrgid(exchange.stat().st_gid).gr_name
    _stop(hub.pid)
    unmount_exchange(exchange)
    for name in hub.accounts:
        if exists(name):
            remove_user(name)
    if group and group.endswith("-class"):
        subprocess.run(["groupdel", group], capture_output=True)
    shutil.rmtree(hub.state, ignore_errors=True)


def sweep() -> list[str]:
    """Remove every hub a dead run left; one line for each, saying what went."""
    lines = []
    for hub in left_hubs():
        remove(hub)
        accounts = ", ".join(hub.accounts) or "no accounts"
        lines.append(
            f"removed a hub left by a dead test run: pid {hub.pid}, {hub.state}, {accounts}"
        )
    return lines

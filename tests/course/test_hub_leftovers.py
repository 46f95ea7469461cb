"""A hub a killed test run left behind is found and removed when the next run starts
(``llmmath_course.hub.leftovers``, called from ``tests/conftest.py``); a live run's hub and a
real class's hub are never touched. The hubs here are stand-ins: a script named ``jupyterhub``
that sleeps, with the environment ``running_hub`` gives the real one."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from wait_support import seconds

from llmmath_course.hub import leftovers

STAND_IN = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(600)\n"


def _environment(state: Path) -> dict[str, str]:
    # Accounts that do not exist: the sweep removes only what is there.
    return dict(
        os.environ,
        LLMMATH_HUB_STATE=str(state),
        LLMMATH_HUB_INSTRUCTOR="llmmzz-nosuch-inst",
        LLMMATH_HUB_STUDENTS="llmmzz-nosuch-s01",
    )


def _parent_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("PPid:")).split()[1])


def _runs(pid: int, script: Path) -> bool:
    """The interpreter runs ``script`` (``python script ...``), not ``setsid python script``."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return len(argv) > 1 and argv[1] == str(script).encode()


def _orphan(state: Path) -> int:
    """A stand-in hub whose starter has exited (as pytest killed mid-run): its parent is init.
    Returns its pid once the kernel has handed it over."""
    script = state / "jupyterhub"
    script.write_text(STAND_IN)
    starter = subprocess.run(
        [
            "sh",
            "-c",
            f'setsid "{sys.executable}" "{script}" -f config.py >/dev/null 2>&1 & echo $!',
        ],
        env=_environment(state),
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(starter.stdout.strip())
    deadline = time.monotonic() + seconds(30)
    # Until it runs the script (setsid has exec'd it: on a busy machine the starter can exit
    # first) and init holds it.
    while not (_runs(pid, script) and _parent_of(pid) == 1):
        assert time.monotonic() < deadline, f"the stand-in {pid} never ran its script under init"
        time.sleep(0.05)
    return pid


@pytest.fixture
def states() -> Iterator[list[Path]]:
    made: list[Path] = []
    yield made
    for state in made:
        subprocess.run(["pkill", "-KILL", "-f", str(state)], capture_output=True)
        subprocess.run(["rm", "-rf", str(state)], capture_output=True)


def _state(states: list[Path], prefix: str, where: Path | None = None) -> Path:
    state = Path(tempfile.mkdtemp(prefix=prefix, dir=where))
    states.append(state)
    return state


def test_a_hub_left_by_a_dead_run_is_removed(states: list[Path]) -> None:
    state = _state(states, "llmmath-hub-")
    pid = _orphan(state)
    found = {hub.pid: hub for hub in leftovers.left_hubs()}
    assert pid in found, "the left hub was not found"
    assert found[pid].state == state
    assert found[pid].accounts == ("llmmzz-nosuch-inst", "llmmzz-nosuch-s01")
    lines = leftovers.sweep()
    assert any(f"pid {pid}," in line for line in lines), lines
    assert not Path(f"/proc/{pid}").exists(), "the hub is still running"
    assert not state.exists(), "its throwaway class folder is still there"


def test_a_live_runs_hub_and_a_real_class_are_left_alone(states: list[Path]) -> None:
    # A hub whose starter (this test) is alive: another run's, in progress.
    live_state = _state(states, "llmmath-hub-")
    (live_state / "jupyterhub").write_text(STAND_IN)
    live = subprocess.Popen(
        [sys.executable, str(live_state / "jupyterhub"), "-f", "config.py"],
        env=_environment(live_state),
    )
    # An orphaned hub of a real class: its --state is not a throwaway folder of /tmp.
    real_state = _state(states, "llmmath-class-", Path(tempfile.gettempdir()))
    real = _orphan(real_state)
    try:
        found = {hub.pid for hub in leftovers.left_hubs()}
        assert live.pid not in found and real not in found, found
    finally:
        live.kill()
        live.wait()
        os.kill(real, 9)

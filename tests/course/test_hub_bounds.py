"""Students' writes outside their home are bounded (issue #48, item 6), attacked on a class hub
by real OS users typing into their own JupyterLab terminals:

- a student filling /tmp, /var/tmp and /dev/shm gets ENOSPC at their server's caps, and sees
  none of another student's /tmp (each server has its own, in a mount namespace of its own);
- a student filling the exchange (its course's ``inbound/`` and its root) gets ENOSPC at the
  students' share of the exchange's own filesystem, while the hub, another student's server and
  the instructor (who writes into the reserve: a release) keep working; once the file is
  removed, as the guide says, an honest student submits and is graded to the right score.

Needs root (OS users, mounts): run under ``flock /tmp/hub.lock``, as tests/course/test_hub.py.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from port_support import free_port_block
from test_hub import (
    ASSIGNMENT,
    COURSE,
    NOTEBOOK,
    PYTHON,
    SPEC,
    Api,
    _gradebook_scores,
    answered,
    in_terminal,
    release,
    unique,
)
from wait_support import seconds

from llmmath_course.hub.accounts import remove_user
from llmmath_course.hub.backup import backup
from llmmath_course.hub.exchange import size_bytes
from llmmath_course.hub.running import Bounds, Hub, running_hub


def private_mounts_work() -> bool:
    """Root may make a mount namespace with a tmpfs in it, and loop devices exist."""
    if os.geteuid() != 0 or not Path("/dev/loop-control").exists():
        return False
    probe = ["unshare", "--mount", "--propagation", "private", "--",
             "mount", "-t", "tmpfs", "-o", "size=1M", "llmmath-probe", "/mnt"]  # fmt: skip
    return subprocess.run(probe, capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not private_mounts_work(), reason="needs root, mount namespaces, loops"),
]

# Small caps, so that filling them is quick.
BOUNDS = Bounds(tmp_size="16M", shm_size="8M", exchange_size="96M", exchange_reserve="24M")
END = "echo END-OF-$((40 + 2))"  # the terminal shows the command, then 42 once it ran


@pytest.fixture(scope="module")
def bounded_class() -> Iterator[tuple[Hub, Api]]:
    token = secrets.token_hex(16)
    with running_hub(
        2, free_port_block(), prefix=unique("llmmq"), admin_token=token, bounds=BOUNDS,
        start_timeout_s=seconds(60),
    ) as hub:  # fmt: skip
        api = Api(hub, token)
        for student in hub.students:
            api.start_server(student)
        api.wait_ready(hub.students)
        yield hub, api


def shown_numbers(shown: str, name: str) -> list[int]:
    return [int(n) for n in re.findall(rf"^{name}=\s*(\d+)\r?$", shown, re.M)]


def test_a_students_tmp_and_shm_are_capped_and_private(bounded_class: tuple[Hub, Api]) -> None:
    hub, api = bounded_class
    first, second = hub.students
    secret = f"llmmath-secret-{secrets.token_hex(4)}"
    fill = (
        f"echo mine > /tmp/{secret}; "
        "for d in /tmp /var/tmp /dev/shm /run/lock; do "
        "head -c 40M /dev/zero > $d/fill; echo wrote=$?; "
        "echo size=$(df -B1 --output=size $d | tail -1); rm -f $d/fill; done; " + END
    )
    shown = in_terminal(api, first, fill, until="END-OF-42")
    assert shown_numbers(shown, "wrote") == [1, 1, 1, 1], shown  # head failed: 40M did not fit
    assert shown.count("No space left on device") == 4, shown
    caps = [size_bytes(BOUNDS.tmp_size, "tmp")] * 2 + [size_bytes(BOUNDS.shm_size, "shm"), 2**20]
    assert shown_numbers(shown, "size") == caps, shown
    # Another student's /tmp is their own: the first's file is not there, nor on the machine's.
    look = f"cat /tmp/{secret}; echo seen=$?; head -c 8M /dev/zero > /tmp/own; echo wrote=$?; {END}"
    shown = in_terminal(api, second, look, until="END-OF-42")
    assert shown_numbers(shown, "seen") == [1] and shown_numbers(shown, "wrote") == [0], shown
    assert not (Path("/tmp") / secret).exists(), "a student's /tmp file is on the machine's /tmp"
    # Still there for its owner: the server's /tmp lasts as long as the server.
    shown = in_terminal(api, first, f"cat /tmp/{secret}; echo seen=$?; {END}", until="END-OF-42")
    assert shown_numbers(shown, "seen") == [0] and "mine" in shown, shown


def test_a_student_filling_the_exchange_leaves_the_class_working(
    bounded_class: tuple[Hub, Api],
) -> None:
    hub, api = bounded_class
    attacker, honest = hub.students
    release(hub)
    api.nbgrader(honest, "fetch")
    api.save(honest, f"{ASSIGNMENT}/{NOTEBOOK}.ipynb", answered(hub, wrong=False))
    inbound = hub.exchange / COURSE / "inbound"
    fill = (
        f"head -c 200M /dev/zero > {inbound}/{attacker}+fill; echo inbound=$?; "
        f"head -c 8M /dev/zero > {hub.exchange}/junk; echo root=$?; "
        f"echo free=$(df -B1 --output=avail {hub.exchange} | tail -1); " + END
    )
    shown = in_terminal(api, attacker, fill, until="END-OF-42")
    assert shown_numbers(shown, "inbound") == [1] and shown_numbers(shown, "root") == [1], shown
    assert shown_numbers(shown, "free") == [0], shown
    taken = (inbound / f"{attacker}+fill").stat().st_size
    students_share = size_bytes(BOUNDS.exchange_size, "") - size_bytes(BOUNDS.exchange_reserve, "")
    assert taken <= students_share, f"{taken} bytes written past the students' share"
    # The hub, the other student's server and the instructor keep working: the instructor
    # releases again and writes 8 MB more, into the reserve no student may take.
    assert {u["name"] for u in api.call("GET", "/hub/api/users")} >= set(hub.students)
    shown = in_terminal(api, honest, f"echo alive; {END}", until="END-OF-42")
    assert "alive" in shown
    hub.as_user(hub.instructor, PYTHON, "-m", "nbgrader", "release_assignment", ASSIGNMENT,
                "--force", cwd=hub.course)  # fmt: skip
    hub.as_user(hub.instructor, "sh", "-c", f"head -c 8M /dev/zero > {hub.exchange / COURSE}/x")
    (hub.exchange / COURSE / "x").unlink()
    # Only the students' total is bounded here (no per-user quotas in this kernel): the honest
    # student cannot submit until the file is found by its owner and removed, as the guide says.
    assert not api.nbgrader(honest, "submit").get("success")
    found = subprocess.run(
        ["find", str(hub.exchange), "-xdev", "-user", attacker, "-type", "f", "-size", "+1M"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    assert found == [str(inbound / f"{attacker}+fill")], found
    for path in found:
        Path(path).unlink()
    submitted = api.nbgrader(honest, "submit")
    assert submitted.get("success"), submitted
    log = hub.as_user(hub.instructor, PYTHON, "scripts/instructor.py", "grade", ASSIGNMENT,
                      "--jobs", "1", cwd=hub.course)  # fmt: skip
    assert "autograded 1 of 1" in log, log
    total = SPEC.autograded_points + SPEC.manual_points
    assert _gradebook_scores(hub.course) == {honest: (SPEC.autograded_points, total)}


def test_the_exchange_survives_a_stop_in_its_image(tmp_path: Path) -> None:
    """The exchange's files live in the state folder's image: a stopped hub unmounts it, the
    next start mounts it again with everything in it, and make hub-backup archives the files
    (not the image) with the hub stopped."""
    state = Path(tempfile.mkdtemp(prefix="llmmath-state-"))
    prefix = unique("llmmq")
    try:
        for start in range(2):
            with running_hub(1, free_port_block(), prefix=prefix, state=state, bounds=BOUNDS,
                             start_timeout_s=seconds(60)) as hub:  # fmt: skip
                assert os.path.ismount(hub.exchange)
                kept = hub.exchange / COURSE / "kept.txt"
                if start == 0:
                    kept.write_text("from the first start\n")
                assert kept.read_text() == "from the first start\n"
            assert not os.path.ismount(state / "exchange")
        names = backup(state, tmp_path / "class.tar.gz")
        assert f"{state.name}/exchange/{COURSE}/kept.txt" in names, names
        assert f"{state.name}/hub/exchange.img" not in names
        assert not os.path.ismount(state / "exchange")
    finally:
        for name in (f"{prefix}-inst", f"{prefix}-s01"):
            remove_user(name)
        subprocess.run(["groupdel", f"{prefix}-class"], capture_output=True)
        shutil.rmtree(state, ignore_errors=True)

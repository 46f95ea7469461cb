"""A JupyterHub class on one machine: an instructor and N students, each a real OS user.

    sudo python scripts/hub.py --students 3                   # make hub: the class in --state
    sudo python scripts/hub.py --students alice,bob --instructor prof
    sudo python scripts/hub.py --backup class-2026-12-01.tar.gz
    sudo python scripts/hub.py --students 3 --throwaway      # a demo: all removed on exit

Needs root. The class lives in ``--state`` (default ``/var/lib/llmmath-hub``), which a stop
(Ctrl-C, ``kill``, a reboot) leaves as it is: the hub's database and log (``hub/``, root only),
the exchange, the configuration, and the homes of the accounts this script made (``home/``),
the instructor's course root (``~/course``: gradebook, submissions, feedback) among them.
Starting again with the same ``--state`` picks the class up where it stopped; the course root is
made only when it does not exist. ``--backup FILE`` writes all of it to one tar.gz (each SQLite
database copied consistently, even while the hub runs).

Logins are the machine's own (PAM). An account named on the command line that does not exist
is made (``useradd``, its home in the state folder, mode 700) with a random password, printed
once and kept in ``hub/initial-passwords.txt`` (root only); an account that exists is used as it
is, with its own password and home. Every account joins the class group (``<prefix>-class``),
the only one, with root, that may enter the exchange (mode 1770, not 777).

What a student writes outside their home is bounded: their server has private tmpfs on /tmp,
/var/tmp (``--tmp-size`` each) and /dev/shm (``--shm-size``), and the exchange is a filesystem
of its own (``--exchange-size``, of which ``--exchange-reserve`` only the instructor may write).

``--throwaway`` (tests/course/test_hub.py, a quick look) keeps the state in a temporary folder
and on exit stops the hub, every server and every process of the accounts it made, then
deletes those accounts and the folder.

The servers run from ``/opt/llmmath-hub/<version>`` (``LLMMATH_HUB_HOME``): a copy of this
interpreter and a venv of requirements.lock, readable by every user (the project's .venv may sit
in root's private home). ``<version>`` is a digest of the lock and this Python, so a checkout
with other pins builds beside it and never under a running hub (``make hub-env``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from llmmath_course.hub.accounts import accounts
from llmmath_course.hub.backup import backup
from llmmath_course.hub.configs import FORMGRADER_URL
from llmmath_course.hub.environment import LOCK, build_env
from llmmath_course.hub.exchange import EXCHANGE_RESERVE, EXCHANGE_SIZE
from llmmath_course.hub.running import MEM_LIMIT, SHM_SIZE, TMP_SIZE, Bounds, running_hub

STATE = Path("/var/lib/llmmath-hub")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", default="3", help="a count, or account names: a,b,c")
    parser.add_argument("--instructor", help="the instructor's account (default <prefix>-inst)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--prefix", default="llmm", help="made accounts start with this")
    parser.add_argument("--state", type=Path, default=STATE, help="where the class lives")
    parser.add_argument("--mem-limit", default=MEM_LIMIT, help="per student, e.g. 1G")
    parser.add_argument("--tmp-size", default=TMP_SIZE,
                        help="each student's private /tmp, and /var/tmp (tmpfs)")  # fmt: skip
    parser.add_argument("--shm-size", default=SHM_SIZE, help="each student's private /dev/shm")
    parser.add_argument("--exchange-size", default=EXCHANGE_SIZE,
                        help="the exchange's filesystem (0: a plain folder)")  # fmt: skip
    parser.add_argument("--exchange-reserve", default=EXCHANGE_RESERVE,
                        help="of it, what only the instructor may write")  # fmt: skip
    parser.add_argument("--throwaway", action="store_true", help="a demo: removed on exit")
    parser.add_argument("--backup", type=Path, metavar="FILE", help="archive --state, and exit")
    parser.add_argument(
        "--build-env", action="store_true", help="build HUB_HOME if out of date, and exit"
    )
    parser.add_argument("--uv", type=Path, help="with --build-env: the uv that installs the lock")
    args = parser.parse_args(argv)
    if args.build_env:
        if args.uv is None:
            parser.error("--build-env needs --uv (make hub-env passes the Makefile's)")
        build_env(LOCK, args.uv)
        return 0
    if args.backup:
        names = backup(args.state.resolve(), args.backup)
        print(f"{len(names)} entries of {args.state} in {args.backup} (mode 600)")
        return 0
    bounds = Bounds(args.mem_limit, args.tmp_size, args.shm_size, args.exchange_size,
                    args.exchange_reserve)  # fmt: skip
    try:
        accounts(args.students, args.prefix, args.instructor)
        bounds.check()
    except ValueError as error:
        parser.error(str(error))
    # A plain `kill` (SIGTERM) must stop the hub too: turn it into an exit that runs the finally.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    state = None if args.throwaway else args.state.resolve()
    with running_hub(
        args.students, args.port, args.prefix, state=state, instructor=args.instructor,
        bounds=bounds,
    ) as hub:  # fmt: skip
        print(f"JupyterHub on {hub.url}; the class in {hub.state} (log: {hub.log}, root only)")
        print(f"instructor: {hub.instructor}; course root {hub.course}; formgrader at "
              f"{hub.url}{FORMGRADER_URL}")  # fmt: skip
        print(f"students: {', '.join(hub.students)}")
        for name, password in hub.passwords.items():
            print(f"  new account {name}: first password {password}")
        if hub.passwords:
            kept = hub.state / "hub" / "initial-passwords.txt"
            print(f"  (kept in {kept}; `passwd` in a terminal changes one)")
        print("Ctrl-C stops the hub; " + ("these accounts and files go too." if args.throwaway
              else f"the class stays in {hub.state} for the next start."), flush=True)  # fmt: skip
        try:
            while hub.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            print("stopping", flush=True)
    return 0

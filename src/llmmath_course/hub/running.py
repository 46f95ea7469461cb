"""A running hub: the state folder and accounts prepared, JupyterHub started on them, and on
leaving stopped with its servers (a throwaway class's accounts and folder removed too)."""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from llmmath_course.hub.accounts import RUNUSER, accounts, add_user, exists, remove_user
from llmmath_course.hub.configs import COURSE, course_copy, write_configs
from llmmath_course.hub.environment import HUB_ENV, HUB_HOME, HUB_LIB, PROXY, REPO
from llmmath_course.hub.exchange import (
    EXCHANGE_RESERVE,
    EXCHANGE_SIZE,
    mount_exchange,
    size_bytes,
    unmount_exchange,
)

# A hub stops a class's servers in well under this; a slower stop keeps its log (_keep_log).
SLOW_STOP_S = 20
# What each student's server and its kernels and terminals may use together (a cgroup, see
# hub/jupyterhub_config.py); a server alone takes about 100 MB, a kernel 60-100 MB.
MEM_LIMIT = "1G"
# What a student's server may write outside their home, beside the exchange (exchange.py): a
# private tmpfs of TMP_SIZE on each of /tmp and /var/tmp and one of SHM_SIZE on /dev/shm, in a
# mount namespace of the server's own (hub/private-tmp.sh). Memory, counted in MEM_LIMIT too.
TMP_SIZE = "256M"
SHM_SIZE = "64M"


@dataclass(frozen=True)
class Bounds:
    """What each student may take: memory, their private /tmp and /dev/shm, and the students'
    share of the exchange (its size less the instructor's reserve). Sizes as ``make hub`` takes
    them (512M, 2G)."""

    mem_limit: str = MEM_LIMIT
    tmp_size: str = TMP_SIZE
    shm_size: str = SHM_SIZE
    exchange_size: str = EXCHANGE_SIZE
    exchange_reserve: str = EXCHANGE_RESERVE

    def check(self) -> None:
        """Fail at once on a size that is no size, naming the setting."""
        for name in ("mem_limit", "tmp_size", "shm_size", "exchange_size", "exchange_reserve"):
            size_bytes(getattr(self, name), "--" + name.replace("_", "-"))
        size = size_bytes(self.exchange_size, "--exchange-size")
        if size and size_bytes(self.exchange_reserve, "--exchange-reserve") >= size:
            raise ValueError(
                f"--exchange-reserve ({self.exchange_reserve}) must be less than --exchange-size "
                f"({self.exchange_size})"
            )


# Where the hub makes the instructor's delegated grading cgroup (cgroup v1; jupyterhub_config.py).
GRADING_CGROUPS = Path("/sys/fs/cgroup/memory/llmmath-hub")


@dataclass
class Hub:
    """A running hub: its URL, the accounts and their first passwords, and the folders."""

    url: str
    state: Path
    course: Path
    exchange: Path
    instructor: str
    students: list[str]
    passwords: dict[str, str]
    process: subprocess.Popen[bytes]
    log: Path
    users: list[str] = field(default_factory=list)  # the accounts this run made

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)

    def as_user(self, user: str, *argv: str, cwd: Path | None = None) -> str:
        """Run a command as ``user`` with the hub's environment; its output, or fail loudly."""
        role = "grader" if user == self.instructor else "student"
        env = {
            "HOME": str(self.home(user)),
            "PATH": f"{HUB_ENV / 'bin'}:/usr/bin:/bin",
            "JUPYTER_CONFIG_PATH": str(self.state / "config" / role),
            "LD_LIBRARY_PATH": str(HUB_LIB),
            "LANG": "C.UTF-8",
        }
        if role == "student":  # as on their server: the course's submit (configs.write_configs)
            env["PYTHONPATH"] = str(self.state / "config" / "python")
        grading = GRADING_CGROUPS / f"grading-{user}"
        if role == "grader" and grading.is_dir():  # as the hub gives the instructor's terminal
            env["LLMMATH_GRADING_CGROUP"] = str(grading)
        result = subprocess.run(
            [RUNUSER, "-u", user, "--", *argv],
            cwd=cwd or self.home(user), env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        if result.returncode:
            raise RuntimeError(f"{' '.join(argv)} as {user}: {result.stdout}{result.stderr}")
        return result.stdout + result.stderr


def _check_ready() -> None:
    if os.geteuid() != 0:
        sys.exit("make hub needs root: it runs each student's server as that student (sudo)")
    if not (HUB_ENV / ".installed").exists():
        sys.exit(f"no hub environment in {HUB_HOME}: run `make hub-env` first")
    if not PROXY.exists():
        sys.exit(f"no proxy at {PROXY}: run `make hub-env` (npm ci in hub/) first")


def _wait_for(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyterhub exited ({process.returncode}):\n{log.read_text()}")
        try:
            urllib.request.urlopen(f"{url}/hub/api", timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"jupyterhub did not answer within {timeout} s:\n{log.read_text()}")


def _prepare(
    state: Path, instructor: str, students: list[str], group: str, bounds: Bounds
) -> dict[str, str]:
    """The state folder, the class group and the accounts; the passwords of accounts made now.

    Made once and kept: state/ (755), state/hub/ (700, root: the hub's database, cookie secret,
    log and first passwords), state/home/ (the homes of accounts made here), the exchange
    (root:<group>, mode 1770: the class only, and no one removes what another made)."""
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o755)
    (state / "hub").mkdir(mode=0o700, exist_ok=True)
    (state / "hub").chmod(0o700)
    (state / "home").mkdir(mode=0o755, exist_ok=True)
    if not any(g.gr_name == group for g in grp.getgrall()):
        subprocess.run(["groupadd", group], check=True, capture_output=True)
    made: dict[str, str] = {}
    for name in [instructor, *students]:
        try:
            pwd.getpwnam(name)
        except KeyError:
            made[name] = secrets.token_urlsafe(12)
            add_user(name, state / "home" / name, made[name])
        subprocess.run(["usermod", "-aG", group, name], check=True, capture_output=True)
    if made:
        first = state / "hub" / "initial-passwords.txt"
        with os.fdopen(os.open(first, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a") as fh:
            fh.writelines(f"{name}\t{password}\n" for name, password in made.items())
    exchange = state / "exchange"
    exchange.mkdir(exist_ok=True)
    size = size_bytes(bounds.exchange_size, "--exchange-size")
    reserve = size_bytes(bounds.exchange_reserve, "--exchange-reserve")
    print(mount_exchange(state, exchange, instructor, size, reserve), flush=True)
    os.chown(exchange, 0, grp.getgrnam(group).gr_gid)
    exchange.chmod(0o1770)
    planted = course_exchange(exchange, instructor)
    if planted is not None:
        print(f"exchange/{COURSE} was not the instructor's: moved aside to {planted}", flush=True)
    course = Path(pwd.getpwnam(instructor).pw_dir) / "course"
    if not course.exists():
        course_copy(course, exchange, instructor)
    # What every server serves at <server>/static/: readable by every user (the course's own
    # copy is in the instructor's private home).
    shutil.rmtree(state / "static", ignore_errors=True)
    shutil.copytree(REPO / "book" / "_vendor" / "mathjax", state / "static" / "mathjax")
    subprocess.run(["chmod", "-R", "a+rX", str(state / "static")], check=True)
    write_configs(state, exchange)
    return made


@contextmanager
def running_hub(
    students: int | str,
    port: int = 8000,
    prefix: str = "llmm",
    *,
    state: Path | None = None,
    instructor: str | None = None,
    admin_token: str | None = None,
    mem_limit: str = MEM_LIMIT,
    bounds: Bounds | None = None,
    start_timeout_s: float = 60,
) -> Iterator[Hub]:
    """Start the class hub on ``state`` (None: a throwaway class in a temporary folder, whose
    accounts and folder are removed on leaving); on leaving, stop the hub and its servers.
    ``start_timeout_s``: how long to wait for the hub's API to answer (the tests scale it with
    the machine's load). ``bounds``: what each student may take (``mem_limit`` alone sets
    its memory)."""
    bounds = bounds or Bounds(mem_limit=mem_limit)
    bounds.check()
    _check_ready()
    throwaway = state is None
    if state is None:
        state = Path(tempfile.mkdtemp(prefix="llmmath-hub-"))
    inst, names = accounts(str(students), prefix, instructor)
    group = f"{prefix}-class"
    made: dict[str, str] = {}
    made_now: list[str] = []  # the accounts (and group) this run made: a throwaway removes them
    made_group = not any(g.gr_name == group for g in grp.getgrall())
    process = None
    log = state / "hub" / "jupyterhub.log"
    try:
        existing = {n for n in [inst, *names] if exists(n)}
        try:
            made = _prepare(state, inst, names, group, bounds)
        finally:
            made_now = [n for n in [inst, *names] if n not in existing and exists(n)]
        course = Path(pwd.getpwnam(inst).pw_dir) / "course"
        env = dict(
            os.environ,
            LLMMATH_HUB_STATE=str(state), LLMMATH_HUB_PORT=str(port),
            LLMMATH_HUB_ENV=str(HUB_ENV), LLMMATH_HUB_LIB=str(HUB_LIB),
            LLMMATH_HUB_PROXY=str(PROXY), LLMMATH_HUB_MEM_LIMIT=bounds.mem_limit,
            LLMMATH_HUB_TMP_SIZE=bounds.tmp_size, LLMMATH_HUB_SHM_SIZE=bounds.shm_size,
            LLMMATH_HUB_INSTRUCTOR=inst, LLMMATH_HUB_STUDENTS=",".join(names),
            LLMMATH_HUB_COURSE=str(course),
            PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        )  # fmt: skip
        if admin_token:  # tests only: a service token that may act for every user
            env["LLMMATH_HUB_ADMIN_TOKEN"] = admin_token
        with os.fdopen(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as out:
            out.write(f"\n[llmmath] starting the hub on port {port}\n".encode())
            out.flush()
            process = subprocess.Popen(
                [str(Path(sys.executable).parent / "jupyterhub"),
                 "-f", str(REPO / "hub" / "jupyterhub_config.py")],
                cwd=state / "hub", env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        _wait_for(url, process, log, timeout=start_timeout_s)
        for path in (state / "hub").iterdir():  # the database and secret: root's alone
            path.chmod(0o600)
        exchange = state / "exchange"
        yield Hub(url, state, course, exchange, inst, names, made, process, log, made_now)
    except BaseException as error:
        _keep_log(log, prefix, f"stopped by {type(error).__name__}")
        raise
    finally:
        started = time.monotonic()
        if process is not None:
            _stop(process)
        stopped = time.monotonic()
        unmount_exchange(state / "exchange")  # its files stay in hub/exchange.img
        if throwaway:
            for name in made_now:
                remove_user(name)
            if made_group:
                subprocess.run(["groupdel", group], capture_output=True)
        removed = time.monotonic()
        if removed - started > SLOW_STOP_S:
            why = f"stop took {stopped - started:.0f} s, users {removed - stopped:.0f} s"
            _keep_log(log, prefix, why)
        if throwaway:
            shutil.rmtree(state, ignore_errors=True)


def _keep_log(log: Path, prefix: str, why: str) -> None:
    """The state folder may be about to go: keep the hub's log (servers and proxy too), in a new
    file of /tmp that no one could have made first (mkstemp: a random name, O_EXCL, mode 600).
    A fixed name there was a student's to plant a link at: root wrote the log through it
    (this machine has fs.protected_symlinks=0) over any file the link named."""
    if not log.exists():
        return
    fd, kept = tempfile.mkstemp(prefix=f"llmmath-hub-{prefix}-", suffix=".log")
    with os.fdopen(fd, "wb") as out, log.open("rb") as source:
        shutil.copyfileobj(source, out)
        out.write(f"\n[llmmath] {why}\n".encode())
    print(f"{why}: hub log kept at {kept}", file=sys.stderr)


def course_exchange(exchange: Path, instructor: str) -> Path | None:
    """The exchange's course folder, ``exchange/<course>``, made here by root and owned by the
    instructor (mode 755), so that no student can make it first: one a student made before the
    first release (the exchange is the class's to write in) held the instructor's release out
    (nbgrader refuses a course folder it does not own). A folder (or link, or file) at that name
    owned by anyone else is moved aside, made root's and unreadable, kept as evidence; its new
    path is returned (None: nothing was moved)."""
    folder = exchange / COURSE
    owner = pwd.getpwnam(instructor)
    moved = None
    while True:
        try:
            os.mkdir(folder, 0o700)  # root's until it is the instructor's: no one swaps it
        except FileExistsError:
            info = folder.lstat()
            if stat.S_ISDIR(info.st_mode) and info.st_uid == owner.pw_uid:
                return moved
            # Root may rename another's entry in the sticky exchange; a rename follows no link.
            when = time.strftime("%Y%m%dT%H%M%S")
            moved = exchange / f".planted-{COURSE}-{when}-{secrets.token_hex(3)}"
            os.rename(folder, moved)
            os.chown(moved, 0, 0, follow_symlinks=False)
            if not stat.S_ISLNK(info.st_mode):
                os.chmod(moved, 0)
            continue
        os.chmod(folder, 0o755)
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        return moved


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM: the hub stops its servers, services and proxy; then its process group."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # the proxy, if the hub left it behind
    process.wait()

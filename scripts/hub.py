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
import contextlib
import fcntl
import grp
import hashlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROXY = REPO / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
LOCK = REPO / "requirements.lock"
# Where the servers' Python lives: one folder per version (lock and interpreter), each a copy of
# this interpreter (without its site-packages) and a venv on it, all readable by every user.
HUB_ROOT = Path(os.environ.get("LLMMATH_HUB_HOME", "/opt/llmmath-hub"))
STATE = Path("/var/lib/llmmath-hub")
COURSE = "llmmath"
# A hub stops a class's servers in well under this; a slower stop keeps its log (_keep_log).
SLOW_STOP_S = 20
# What each student's server and its kernels and terminals may use together (a cgroup, see
# hub/jupyterhub_config.py); a server alone takes about 100 MB, a kernel 60-100 MB.
MEM_LIMIT = "1G"
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"


def env_version(lock: Path = LOCK) -> str:
    """The hub environment's folder name: a digest of the pins and of this interpreter."""
    digest = hashlib.sha256(lock.read_bytes() + sys.version.encode() + sys.base_prefix.encode())
    return digest.hexdigest()[:12]


HUB_HOME = HUB_ROOT / env_version()
HUB_ENV = HUB_HOME / "venv"
HUB_LIB = HUB_HOME / "python" / "lib"  # libpython, for LD_LIBRARY_PATH
# A terminal's shell: bash, not a login shell. jupyter_server starts `sh -l` when no shell is
# set, and a login shell reads /etc/profile, which resets PATH: `python` and `nbgrader` were
# "not found" in the instructor's terminal and `python3` was Debian's, without nbformat.
TERMINAL = {"shell_command": ["/bin/bash"]}
# JupyterLab asks every new user whether to fetch "official Jupyter news" (and would then call
# out to the network): off, server side, for everyone on the hub.
NO_NEWS = {"news_url": None, "check_for_updates_class": "jupyterlab.NeverCheckForUpdate"}
# Idle kernels and terminals end after half an hour (a student's server, after an hour without
# activity, is stopped by jupyterhub-idle-culler: hub/jupyterhub_config.py).
CULL = {"cull_idle_timeout": 1800, "cull_interval": 300, "cull_connected": True}
# What students' servers must not load: nbgrader's grader-side server and lab extensions; and
# jupyter_lsp, which looks for nineteen language servers at every start (none is installed, and
# JupyterLab's LSP client is off by default): 0.4 s of CPU a server, 12 s for a class of thirty.
# llmmath_student_ext (hub/) makes Fetch Feedback say when there is none to fetch and makes an
# exercise's my-work/ copy for the book's launch button; the learner's
# Lab extension (lab/learner/labextensions, added in _write_configs) keeps Validate from saying
# "Success! Your notebook passes all the tests." when only the visible checks ran.
STUDENT_SERVER = {
    "ServerApp": {
        "terminado_settings": TERMINAL,
        "jpserver_extensions": {
            "jupyter_lsp": False,
            "nbgrader.server_extensions.formgrader": False,
            "nbgrader.server_extensions.course_list": False,
            "nbgrader.server_extensions.assignment_list": True,
            "nbgrader.server_extensions.validate_assignment": True,
            "llmmath_student_ext": True,
            # The book's JupyterHub button: git-pull?repo=... clones or merges the course into
            # the student's home, never over their edits (book/_ext/hub_launch.py).
            "nbgitpuller": True,
        },
        # The pulled course's lessons/ and book/ open read-only and unmodified, as in `make lab`
        # (lab/learner/read_only_lessons.py, copied onto PYTHONPATH by _write_configs).
        "contents_manager_class": "read_only_lessons.ReadOnlyLessons",
    },
    "LabApp": NO_NEWS,
    "MappingKernelManager": CULL,
    "TerminalManager": {"cull_inactive_timeout": 1800, "cull_interval": 300},
}
NO_ANNOUNCEMENTS = {"@jupyterlab/apputils-extension:announcements": True}
STUDENT_LAB = {
    "disabledExtensions": {
        "@jupyter/nbgrader:formgrader": True,
        "@jupyter/nbgrader:create-assignment": True,
        "@jupyter/nbgrader:course-list": True,
        **NO_ANNOUNCEMENTS,
    }
}
# The formgrader service's Lab. nbgrader's Nbgrader > Formgrader opens the formgrader in an
# iframe, which every server of JupyterHub >= 4.1 refuses to be framed in (frame-ancestors
# 'none', against same-origin attacks; nbgrader#1870, reverted workaround nbgrader#1947): the tab
# said "127.0.0.1 refused to connect". So that item is switched off and a Formgrader menu opens
# the formgrader in a browser tab of its own, where it works.
GRADER_LAB = {"disabledExtensions": {"@jupyter/nbgrader:formgrader": True, **NO_ANNOUNCEMENTS}}
FORMGRADER_URL = "/services/formgrader/formgrader"
GRADER_SETTINGS = {
    "@jupyterlab/mainmenu-extension:plugin": {
        "menus": [
            {
                "id": "jp-mainmenu-llmmath-formgrader",
                "label": "Formgrader",
                "rank": 1000,
                "items": [
                    {
                        "command": "help:open",
                        "args": {
                            "url": FORMGRADER_URL,
                            "text": "Open the Formgrader (new browser tab)",
                            "newBrowserTab": True,
                        },
                    }
                ],
            }
        ]
    },
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}
# A lesson (.md) opens as a notebook, as in `make lab` (lab/overrides.json): the launch button's
# lab/tree/<course>/lessons/<page>.md showed the MyST source as text.
DOC_VIEWERS = "@jupyterlab/docmanager-extension:plugin"
STUDENT_SETTINGS = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    DOC_VIEWERS: json.loads((REPO / "lab" / "overrides.json").read_text())[DOC_VIEWERS],
}
# `make check ASSIGNMENT=roofline` in a student's terminal, from any folder: make reads the
# files named in MAKEFILES before its own (hub/jupyterhub_config.py sets it for every server).
CHECK_MAKEFILE = """\
# make check ASSIGNMENT=roofline: your copy in ~/<assignment>/, part by part (scripts/check.py).
ASSIGNMENT ?= roofline
.PHONY: check
check:
\t@python {check} $(ASSIGNMENT) --root $(HOME) --learner-dir .
"""


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
        if role == "student":  # as on their server: the course's submit (_write_configs)
            env["PYTHONPATH"] = str(self.state / "config" / "python")
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


def _add_user(name: str, home: Path, password: str | None = None) -> None:
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


def _remove_user(name: str) -> None:
    for proc in processes_of([name]):  # every process still running as this user
        with suppress(ProcessLookupError, PermissionError):
            os.kill(int(proc.name), signal.SIGKILL)
    subprocess.run(["userdel", "--remove", name], capture_output=True)
    for cgroup in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")):  # its memory cgroup
        with suppress(OSError):  # (hub/jupyterhub_config.py) once its processes are gone
            (cgroup / "llmmath-hub" / name).rmdir()


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


def _write_configs(state: Path, exchange: Path) -> None:
    """Every server's configuration, rewritten at each start (root's, readable by all)."""
    shutil.rmtree(state / "config", ignore_errors=True)
    shared = (
        "c = get_config()  # noqa: F821\n"
        f'c.Exchange.root = "{exchange}"\n'
        f'c.CourseDirectory.course_id = "{COURSE}"\n'
    )
    quiet_submit = (  # the students' submit (hub/llmmath_student_ext.py), where it is importable
        "try:\n    from llmmath_student_ext import CheckpointQuietSubmit\n"
        "    c.ExchangeFactory.submit = CheckpointQuietSubmit\n"
        "except ImportError:\n    pass\n"
    )
    roles = {
        "student": (STUDENT_SERVER, STUDENT_LAB, STUDENT_SETTINGS),
        "grader": ({"ServerApp": {"terminado_settings": TERMINAL},
                    "LabApp": NO_NEWS}, GRADER_LAB, GRADER_SETTINGS),
    }  # fmt: skip
    for role, (server, lab, settings) in roles.items():
        folder = state / "config" / role
        (folder / "labconfig").mkdir(parents=True)
        (folder / "lab-settings").mkdir()
        own = quiet_submit if role == "student" else ""
        (folder / "nbgrader_config.py").write_text(shared + own)
        server = json.loads(json.dumps(server))
        server.setdefault("LabApp", {})["app_settings_dir"] = str(folder / "lab-settings")
        if role == "student":  # Validate's wording, as in `make lab` (lab/learner/)
            server["LabApp"]["extra_labextensions_path"] = [str(state / "config" / "labextensions")]
        (folder / "jupyter_server_config.json").write_text(json.dumps(server, indent=1))
        (folder / "labconfig" / "page_config.json").write_text(json.dumps(lab, indent=1))
        (folder / "lab-settings" / "overrides.json").write_text(json.dumps(settings, indent=1))
    # What every server imports from here (PYTHONPATH) and runs: the student extension,
    # scripts/check.py for `make check` (it reads only the student's own notebook), and llmmath.
    python = state / "config" / "python"
    python.mkdir()
    shutil.copy2(REPO / "hub" / "llmmath_student_ext.py", python)
    shutil.copy2(REPO / "scripts" / "check.py", python)
    shutil.copy2(REPO / "scripts" / "lab.py", python)  # copy_exercise, for llmmath/my-work
    for module in ("read_only_lessons.py", "myst_links.py"):  # the learner's read-only lessons
        shutil.copy2(REPO / "lab" / "learner" / module, python)
    # The course's package, for the lessons the launch button opens (`import llmmath`).
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "src" / "llmmath", python / "llmmath", ignore=skip)
    shutil.copytree(REPO / "lab" / "learner" / "labextensions", state / "config" / "labextensions")
    (state / "config" / "check.mk").write_text(CHECK_MAKEFILE.format(check=python / "check.py"))
    subprocess.run(["chmod", "-R", "u=rwX,go=rX", str(state / "config")], check=True)


def _course_copy(course: Path, exchange: Path, owner: str) -> None:
    """The instructor's course root: the repository's course files, owned by the instructor."""
    course.mkdir()
    config = (REPO / "nbgrader_config.py").read_text()
    (course / "nbgrader_config.py").write_text(config + f'\nc.Exchange.root = "{exchange}"\n')
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    shutil.copytree(REPO / "grading", course / "grading", ignore=ignore)
    shutil.copytree(REPO / "solutions", course / "solutions", ignore=ignore)
    # The vendored MathJax where instructor.py finds it (it copies it beside the feedback). The
    # servers serve another copy, in the state folder (_prepare), which every user can read.
    vendor = REPO / "book" / "_vendor" / "mathjax"
    shutil.copytree(vendor, course / "book" / "_vendor" / "mathjax")
    (course / "scripts").mkdir()
    shutil.copy2(REPO / "scripts" / "instructor.py", course / "scripts" / "instructor.py")
    # The course tooling instructor.py wraps, beside it (the hub's venv does not install it).
    package = course / "scripts" / "llmmath_course"
    shutil.copytree(REPO / "src" / "llmmath_course", package, ignore=ignore)
    subprocess.run(["chown", "-R", f"{owner}:{owner}", str(course)], check=True)


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


def _prepare(state: Path, instructor: str, students: list[str], group: str) -> dict[str, str]:
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
            _add_user(name, state / "home" / name, made[name])
        subprocess.run(["usermod", "-aG", group, name], check=True, capture_output=True)
    if made:
        first = state / "hub" / "initial-passwords.txt"
        with os.fdopen(os.open(first, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a") as fh:
            fh.writelines(f"{name}\t{password}\n" for name, password in made.items())
    exchange = state / "exchange"
    exchange.mkdir(exist_ok=True)
    os.chown(exchange, 0, grp.getgrnam(group).gr_gid)
    exchange.chmod(0o1770)
    course = Path(pwd.getpwnam(instructor).pw_dir) / "course"
    if not course.exists():
        _course_copy(course, exchange, instructor)
    # What every server serves at <server>/static/: readable by every user (the course's own
    # copy is in the instructor's private home).
    shutil.rmtree(state / "static", ignore_errors=True)
    shutil.copytree(REPO / "book" / "_vendor" / "mathjax", state / "static" / "mathjax")
    subprocess.run(["chmod", "-R", "a+rX", str(state / "static")], check=True)
    _write_configs(state, exchange)
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
) -> Iterator[Hub]:
    """Start the class hub on ``state`` (None: a throwaway class in a temporary folder, whose
    accounts and folder are removed on leaving); on leaving, stop the hub and its servers."""
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
        existing = {n for n in [inst, *names] if _exists(n)}
        try:
            made = _prepare(state, inst, names, group)
        finally:
            made_now = [n for n in [inst, *names] if n not in existing and _exists(n)]
        course = Path(pwd.getpwnam(inst).pw_dir) / "course"
        env = dict(
            os.environ,
            LLMMATH_HUB_STATE=str(state), LLMMATH_HUB_PORT=str(port),
            LLMMATH_HUB_ENV=str(HUB_ENV), LLMMATH_HUB_LIB=str(HUB_LIB),
            LLMMATH_HUB_PROXY=str(PROXY), LLMMATH_HUB_MEM_LIMIT=mem_limit,
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
        _wait_for(url, process, log, timeout=60)
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
        if throwaway:
            for name in made_now:
                _remove_user(name)
            if made_group:
                subprocess.run(["groupdel", group], capture_output=True)
        removed = time.monotonic()
        if removed - started > SLOW_STOP_S:
            why = f"stop took {stopped - started:.0f} s, users {removed - stopped:.0f} s"
            _keep_log(log, prefix, why)
        if throwaway:
            shutil.rmtree(state, ignore_errors=True)


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _keep_log(log: Path, prefix: str, why: str) -> None:
    """The state folder may be about to go: keep the hub's log (servers and proxy too)."""
    if log.exists():
        kept = Path(tempfile.gettempdir()) / f"llmmath-hub-{prefix}.log"
        shutil.copy2(log, kept)
        kept.chmod(0o600)
        with kept.open("a") as out:
            out.write(f"\n[llmmath] {why}\n")
        print(f"{why}: hub log kept at {kept}", file=sys.stderr)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM: the hub stops its servers, services and proxy; then its process group."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # the proxy, if the hub left it behind
    process.wait()


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


def build_env(lock: Path, uv: Path) -> None:
    """HUB_HOME: this Python copied where every user can read it, and a venv with ``lock``.

    The project's interpreter may sit in root's private home (pyenv), which a student's server,
    running as the student, cannot open; Debian's python3 is older than the pins allow. Each
    version has a folder of its own (env_version): a build never touches another's, so a hub
    running from one keeps running; prune removes the versions that nothing runs from.
    """
    HUB_ROOT.mkdir(parents=True, exist_ok=True)
    HUB_ROOT.chmod(0o755)
    with (HUB_ROOT / ".build.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # two builds at once (make -j, two checkouts) wait
        installed = HUB_ENV / ".installed"
        if installed.exists() and installed.read_text() == lock.read_text() and _same_python():
            print(f"hub environment up to date in {HUB_HOME}")
        else:
            _build(lock, uv)
        for gone in prune(HUB_ROOT, keep=HUB_HOME):
            print(f"removed an unused hub environment: {gone}")


def _build(lock: Path, uv: Path) -> None:
    base = Path(sys.base_prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    python = HUB_HOME / "python"
    shutil.rmtree(HUB_HOME, ignore_errors=True)  # this version only, and it was incomplete
    (python / "lib").mkdir(parents=True)
    shutil.copytree(base / "bin", python / "bin", symlinks=True)
    for lib in (base / "lib").glob("libpython*"):
        shutil.copy2(lib, python / "lib" / lib.name, follow_symlinks=False)
    shutil.copytree(
        base / "lib" / version, python / "lib" / version, symlinks=True,
        ignore=lambda folder, names: [n for n in names if n in ("site-packages", "test")]
        if Path(folder) == base / "lib" / version else [],
    )  # fmt: skip
    (python / "lib" / version / "site-packages").mkdir()
    env = dict(os.environ, LD_LIBRARY_PATH=str(HUB_LIB))
    venv = [str(python / "bin" / version), "-m", "venv", "--without-pip", str(HUB_ENV)]
    subprocess.run(venv, env=env, check=True)
    # As make setup. Students cannot write .pyc files here, so every one is made now.
    python_env = str(HUB_ENV / "bin" / "python")
    install = [str(uv), "pip", "install", "--quiet", "--python", python_env, "--no-deps"]
    subprocess.run([*install, "-r", str(lock), "pip==25.3"], env=env, check=True)
    site_packages = HUB_ENV / "lib" / version / "site-packages"
    compileall = [python_env, "-m", "compileall", "-q", "-j0", str(site_packages)]
    subprocess.run(compileall, env=env, check=True)
    subprocess.run(["chmod", "-R", "a+rX", str(HUB_HOME)], check=True)
    (HUB_ENV / ".installed").write_text(lock.read_text())


def in_use(folder: Path) -> bool:
    """Whether a running process maps a file from ``folder`` (its interpreter, libpython, a
    module's shared library) or works in it."""
    prefix = str(folder) + "/"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with suppress(OSError):
            if os.readlink(proc / "cwd").startswith(prefix):
                return True
            if prefix in (proc / "maps").read_text():
                return True
    return False


def prune(root: Path, keep: Path) -> list[Path]:
    """Remove every other hub environment under ``root`` that no process uses (a version
    folder, or the single venv/ and python/ of the layout before versions)."""
    gone = []
    for entry in sorted(root.iterdir()):
        version = re.fullmatch(r"[0-9a-f]{12}", entry.name) is not None
        if entry == keep or not entry.is_dir() or not (version or entry.name in ("venv", "python")):
            continue
        if not in_use(entry):
            shutil.rmtree(entry)
            gone.append(entry)
    return gone


def _same_python() -> bool:
    """The hub environment's Python is this one (same version and build)."""
    probe = subprocess.run(
        [str(HUB_ENV / "bin" / "python"), "-c", "import sys; print(sys.version)"],
        env=dict(os.environ, LD_LIBRARY_PATH=str(HUB_LIB)), capture_output=True, text=True,
    )  # fmt: skip
    return probe.returncode == 0 and probe.stdout.strip() == sys.version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", default="3", help="a count, or account names: a,b,c")
    parser.add_argument("--instructor", help="the instructor's account (default <prefix>-inst)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--prefix", default="llmm", help="made accounts start with this")
    parser.add_argument("--state", type=Path, default=STATE, help="where the class lives")
    parser.add_argument("--mem-limit", default=MEM_LIMIT, help="per student, e.g. 1G")
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
    try:
        accounts(args.students, args.prefix, args.instructor)
    except ValueError as error:
        parser.error(str(error))
    # A plain `kill` (SIGTERM) must stop the hub too: turn it into an exit that runs the finally.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    state = None if args.throwaway else args.state.resolve()
    with running_hub(
        args.students, args.port, args.prefix, state=state, instructor=args.instructor,
        mem_limit=args.mem_limit,
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


if __name__ == "__main__":
    sys.exit(main())

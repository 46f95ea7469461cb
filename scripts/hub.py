"""A local JupyterHub class: an instructor and N students, each a real OS user (``make hub``).

    sudo python scripts/hub.py --students 3           # until Ctrl-C, then everything removed
    sudo python scripts/hub.py --students 3 --port 8000 --password secret

Needs root: it creates throwaway OS users (``llmm-inst``, ``llmm-s01`` ...; the prefix is
``--prefix``), each with a private home, starts JupyterHub (hub/jupyterhub_config.py) with its
proxy from hub/node_modules, and on exit (Ctrl-C, an error, a test's teardown) stops the hub,
every server it started and every process of those users, then deletes the users and their
folders. The servers run from ``/opt/llmmath-hub`` (``LLMMATH_HUB_HOME``), a Python
environment every user can read (the project's .venv may sit in root's private home);
``make hub-env`` builds it (``--build-env``).

The instructor's course root is a copy of this repository's course (``nbgrader_config.py``,
``grading/``, ``solutions/``, the grading scripts) in the instructor's home; the formgrader runs
there as a hub service. tests/test_hub.py drives all this in a browser.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROXY = REPO / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
# Where the servers' Python lives: a copy of this interpreter (without its site-packages) and a
# virtual environment on it with requirements.lock, all readable by every user.
HUB_HOME = Path(os.environ.get("LLMMATH_HUB_HOME", "/opt/llmmath-hub"))
HUB_ENV = HUB_HOME / "venv"
HUB_LIB = HUB_HOME / "python" / "lib"  # libpython, for LD_LIBRARY_PATH
COURSE = "llmmath"
# A hub stops a class's servers in well under this; a slower stop keeps its log (_keep_log).
SLOW_STOP_S = 20
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
# What students' servers must not load: nbgrader's grader-side server and lab extensions; and
# jupyter_lsp, which looks for nineteen language servers at every start (none is installed, and
# JupyterLab's LSP client is off by default): 0.4 s of CPU a server, 12 s for a class of thirty.
# A terminal's shell: bash, not a login shell. jupyter_server starts `sh -l` when no shell is
# set, and a login shell reads /etc/profile, which resets PATH: `python` and `nbgrader` were
# "not found" in the instructor's terminal and `python3` was Debian's, without nbformat.
TERMINAL = {"shell_command": ["/bin/bash"]}
STUDENT_SERVER = {
    "ServerApp": {
        "terminado_settings": TERMINAL,
        "jpserver_extensions": {
            "jupyter_lsp": False,
            "nbgrader.server_extensions.formgrader": False,
            "nbgrader.server_extensions.course_list": False,
            "nbgrader.server_extensions.assignment_list": True,
            "nbgrader.server_extensions.validate_assignment": True,
        },
    }
}
STUDENT_LAB = {
    "disabledExtensions": {
        "@jupyter/nbgrader:formgrader": True,
        "@jupyter/nbgrader:create-assignment": True,
        "@jupyter/nbgrader:course-list": True,
        # No "get notified about Jupyter news?" prompt over a student's work.
        "@jupyterlab/apputils-extension:announcements": True,
    }
}


@dataclass
class Hub:
    """A running hub: its URL, the users, the shared password and the folders."""

    url: str
    state: Path
    course: Path
    exchange: Path
    instructor: str
    students: list[str]
    password: str
    process: subprocess.Popen[bytes]
    log: Path
    users: list[str] = field(default_factory=list)

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)

    def as_user(self, user: str, *argv: str, cwd: Path | None = None) -> str:
        """Run a command as ``user`` with the hub's environment; its output, or fail loudly."""
        env = {
            "HOME": str(self.home(user)),
            "PATH": f"{HUB_ENV / 'bin'}:/usr/bin:/bin",
            "JUPYTER_CONFIG_PATH": str(self.state / "config" / "student"),
            "LD_LIBRARY_PATH": str(HUB_LIB),
            "LANG": "C.UTF-8",
        }
        if user == self.instructor:
            env["JUPYTER_CONFIG_PATH"] = str(self.state / "config" / "grader")
        result = subprocess.run(
            [RUNUSER, "-u", user, "--", *argv],
            cwd=cwd or self.home(user), env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        if result.returncode:
            raise RuntimeError(f"{' '.join(argv)} as {user}: {result.stdout}{result.stderr}")
        return result.stdout + result.stderr


def _check_ready() -> None:
    if os.geteuid() != 0:
        sys.exit("make hub needs root: it creates one OS user per student (sudo make hub)")
    if not (HUB_ENV / ".installed").exists():
        sys.exit(f"no hub environment in {HUB_ENV}: run `make hub-env` first")
    if not PROXY.exists():
        sys.exit(f"no proxy at {PROXY}: run `make hub-env` (npm ci in hub/) first")


def _add_user(name: str, home: Path) -> None:
    subprocess.run(
        ["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash",
         "--user-group", name],
        check=True, capture_output=True,
    )  # fmt: skip
    home.chmod(0o700)  # a student's work is theirs alone


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


def _write_configs(state: Path, exchange: Path) -> None:
    shared = (
        "c = get_config()  # noqa: F821\n"
        f'c.Exchange.root = "{exchange}"\n'
        f'c.CourseDirectory.course_id = "{COURSE}"\n'
    )
    for role in ("student", "grader"):
        folder = state / "config" / role
        (folder / "labconfig").mkdir(parents=True)
        (folder / "nbgrader_config.py").write_text(shared)
        if role == "student":  # every user's own server, the instructor's too
            (folder / "jupyter_server_config.json").write_text(json.dumps(STUDENT_SERVER))
            (folder / "labconfig" / "page_config.json").write_text(json.dumps(STUDENT_LAB))
        else:  # the formgrader service
            server = {"ServerApp": {"terminado_settings": TERMINAL}}
            (folder / "jupyter_server_config.json").write_text(json.dumps(server))
    for path in (state / "config").rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def _course_copy(course: Path, exchange: Path, owner: str) -> None:
    """The instructor's course root: the repository's course files, owned by the instructor."""
    course.mkdir()
    config = (REPO / "nbgrader_config.py").read_text()
    (course / "nbgrader_config.py").write_text(config + f'\nc.Exchange.root = "{exchange}"\n')
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    shutil.copytree(REPO / "grading", course / "grading", ignore=ignore)
    shutil.copytree(REPO / "solutions", course / "solutions", ignore=ignore)
    # The vendored MathJax where instructor.py finds it (it copies it beside the feedback). The
    # servers serve another copy, in the state folder (running_hub), which every user can read.
    vendor = REPO / "book" / "_vendor" / "mathjax"
    shutil.copytree(vendor, course / "book" / "_vendor" / "mathjax")
    (course / "scripts").mkdir()
    for script in ("instructor.py", "forkkernel.py", "fastgrade.py"):
        shutil.copy2(REPO / "scripts" / script, course / "scripts" / script)
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


@contextmanager
def running_hub(
    students: int,
    port: int = 8000,
    prefix: str = "llmm",
    password: str | None = None,
    admin_token: str | None = None,
) -> Iterator[Hub]:
    """Start the class hub; on leaving, stop everything and remove every user and folder."""
    _check_ready()
    state = Path(tempfile.mkdtemp(prefix="llmmath-hub-"))
    state.chmod(0o755)
    exchange = state / "exchange"
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o777)
    (state / "home").mkdir(mode=0o755)
    instructor = f"{prefix}-inst"
    names = [f"{prefix}-s{i:02d}" for i in range(1, students + 1)]
    password = password or secrets.token_urlsafe(12)
    users: list[str] = []
    process = None
    log = state / "jupyterhub.log"
    try:
        for name in [instructor, *names]:
            _add_user(name, state / "home" / name)
            users.append(name)
        course = state / "home" / instructor / "course"
        _course_copy(course, exchange, instructor)
        # What every server serves at <server>/static/: readable by every user (the course's
        # own copy is in the instructor's private home).
        shutil.copytree(REPO / "book" / "_vendor" / "mathjax", state / "static" / "mathjax")
        subprocess.run(["chmod", "-R", "a+rX", str(state / "static")], check=True)
        _write_configs(state, exchange)
        env = dict(
            os.environ,
            LLMMATH_HUB_STATE=str(state), LLMMATH_HUB_PORT=str(port),
            LLMMATH_HUB_ENV=str(HUB_ENV), LLMMATH_HUB_LIB=str(HUB_LIB),
            LLMMATH_HUB_PROXY=str(PROXY),
            LLMMATH_HUB_INSTRUCTOR=instructor, LLMMATH_HUB_STUDENTS=",".join(names),
            LLMMATH_HUB_PASSWORD=password, LLMMATH_HUB_COURSE=str(course),
            LLMMATH_HUB_STUDENT_CONFIG=str(state / "config" / "student"),
            LLMMATH_HUB_GRADER_CONFIG=str(state / "config" / "grader"),
            PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        )  # fmt: skip
        if admin_token:  # tests only: a service token that may act for every user
            env["LLMMATH_HUB_ADMIN_TOKEN"] = admin_token
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(Path(sys.executable).parent / "jupyterhub"),
                 "-f", str(REPO / "hub" / "jupyterhub_config.py")],
                cwd=state, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        _wait_for(url, process, log, timeout=60)
        yield Hub(url, state, course, exchange, instructor, names, password, process, log, users)
    except BaseException as error:
        _keep_log(log, prefix, f"stopped by {type(error).__name__}")
        raise
    finally:
        started = time.monotonic()
        if process is not None:
            _stop(process)
        stopped = time.monotonic()
        for name in users:
            _remove_user(name)
        removed = time.monotonic()
        if removed - started > SLOW_STOP_S:
            why = f"stop took {stopped - started:.0f} s, users {removed - stopped:.0f} s"
            _keep_log(log, prefix, why)
        shutil.rmtree(state, ignore_errors=True)


def _keep_log(log: Path, prefix: str, why: str) -> None:
    """The state folder is about to go: keep the hub's log (servers and proxy too) for a look."""
    if log.exists():
        kept = Path(tempfile.gettempdir()) / f"llmmath-hub-{prefix}.log"
        shutil.copy2(log, kept)
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


def build_env(lock: Path, uv: Path) -> None:
    """HUB_HOME: this Python copied where every user can read it, and a venv with ``lock``.

    The project's interpreter may sit in root's private home (pyenv), which a student's server,
    running as the student, cannot open; Debian's python3 is older than the pins allow.
    """
    base, version = (
        Path(sys.base_prefix),
        f"python{sys.version_info.major}.{sys.version_info.minor}",
    )
    python = HUB_HOME / "python"
    installed = HUB_ENV / ".installed"
    if installed.exists() and installed.read_text() == lock.read_text() and _same_python():
        print(f"hub environment up to date in {HUB_HOME}")
        return
    shutil.rmtree(HUB_HOME, ignore_errors=True)
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
    installed.write_text(lock.read_text())


def _same_python() -> bool:
    """The hub environment's Python is this one (same version and build)."""
    probe = subprocess.run(
        [str(HUB_ENV / "bin" / "python"), "-c", "import sys; print(sys.version)"],
        env=dict(os.environ, LD_LIBRARY_PATH=str(HUB_LIB)), capture_output=True, text=True,
    )  # fmt: skip
    return probe.returncode == 0 and probe.stdout.strip() == sys.version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--prefix", default="llmm", help="OS user names start with this")
    parser.add_argument("--password", help="the shared demo password (default: random)")
    parser.add_argument(
        "--build-env", action="store_true", help="build HUB_HOME if out of date, and exit"
    )
    parser.add_argument("--uv", type=Path, help="with --build-env: the uv that installs the lock")
    args = parser.parse_args(argv)
    if args.build_env:
        if args.uv is None:
            parser.error("--build-env needs --uv (make hub-env passes the Makefile's)")
        build_env(REPO / "requirements.lock", args.uv)
        return 0
    # A plain `kill` (SIGTERM) must clean up too: turn it into an exit that runs the finally.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    with running_hub(args.students, args.port, args.prefix, args.password) as hub:
        print(f"JupyterHub on {hub.url} (log: {hub.log})")
        print(f"instructor: {hub.instructor}; formgrader at {hub.url}/services/formgrader/")
        print(f"students: {', '.join(hub.students)}; password for all: {hub.password}")
        print("Ctrl-C stops the hub and removes these users and their files.", flush=True)
        try:
            while hub.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            print("stopping", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

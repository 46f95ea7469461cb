"""JupyterHub for the course: one OS user per student, the formgrader as a hub service.

Started by ``scripts/hub.py`` (``make hub``, tests/course/test_hub.py), which makes the accounts and
the folders and passes them in ``LLMMATH_HUB_*`` variables:

- logins are the machine's own accounts, through PAM (``PAMAuthenticator``, JupyterHub's
  default): the instructor and the students named there, no one else;
- every student's server runs as that student's own OS user (``LocalProcessSpawner``: the hub
  runs as root and switches user), from an environment every user can read (``HUB_ENV``), so
  a student cannot read another student's home, submission or the instructor's ``solutions/``;
  it runs in a memory cgroup of its own (``LimitedSpawner``, below), with its kernels and
  terminals: together they get ``LLMMATH_HUB_MEM_LIMIT``; and in a mount namespace of its
  own, with private, size-capped /tmp, /var/tmp and /dev/shm (``LLMMATH_HUB_TMP_SIZE``,
  ``LLMMATH_HUB_SHM_SIZE``; hub/private-tmp.sh);
- students' servers load nbgrader's *Assignments* tab only (formgrader, course list and
  create-assignment are disabled in their config folder, ``<state>/config/student``), cull
  kernels and terminals idle for 30 minutes, and the hub stops a server idle for an hour
  (``jupyterhub-idle-culler``);
- the formgrader is a hub-managed service running as the instructor's OS user in the course
  root, reachable only by the instructor (``/services/formgrader/``);
- the nbgrader exchange is a shared folder (``<state>/exchange``), the same path on every
  server, open to the class's group only;
- the hub's database, cookie secret and log are in ``<state>/hub``, root's alone.
"""

import os
import pwd
import signal
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner
from jupyterhub.utils import random_port

c = get_config()  # noqa: F821  (traitlets injects get_config into config files)
# A hub started where SIGINT is ignored (a script's background job, nohup) would hand that on
# to everything it starts. It stops the formgrader service with SIGINT first, then waits 30 s
# before SIGTERM: every stop took 35-45 s. Python's own handler here means each process the
# hub starts begins with SIGINT's default (and Ctrl-C stops the hub itself).
signal.signal(signal.SIGINT, signal.default_int_handler)
env = os.environ
state = Path(env["LLMMATH_HUB_STATE"])
config = state / "config"
port = int(env["LLMMATH_HUB_PORT"])
hub_env = Path(env["LLMMATH_HUB_ENV"])
instructor = env["LLMMATH_HUB_INSTRUCTOR"]
students = env["LLMMATH_HUB_STUDENTS"].split(",")
path = f"{hub_env / 'bin'}:/usr/local/bin:/usr/bin:/bin"
# The servers' Python is a copy of the project's; its libpython is found through this.
library = env["LLMMATH_HUB_LIB"]

# The hub, its proxy and its database, all on loopback and in the state folder's hub/ (700).
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = port + 1
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port + 2}"
c.ConfigurableHTTPProxy.command = [env["LLMMATH_HUB_PROXY"]]
c.JupyterHub.db_url = f"sqlite:///{state / 'hub' / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "hub" / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every server it started
c.JupyterHub.cleanup_proxy = True

# The machine's accounts and passwords (PAM's "login" service). No PAM session is opened: the
# hub is no login shell, and pam_loginuid refuses a session started from a service.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False
c.Authenticator.allowed_users = {instructor, *students}
c.Authenticator.admin_users = {instructor}


class LimitedSpawner(LocalProcessSpawner):
    """The local-process spawner, with each user's server (and every kernel and terminal it
    starts, its children) in a memory cgroup of that user's, capped at ``mem_limit``. The
    local-process spawner itself enforces no limit at all: it only passes MEM_LIMIT on."""

    def make_preexec_fn(self, name):
        switch_user = super().make_preexec_fn(name)
        procs = self._cgroup_procs
        private = self._private_tmp

        def preexec():  # in the child, still root: join the cgroup, then become the user
            if procs:
                with open(procs, "w") as fh:
                    fh.write(str(os.getpid()))
            if not private:
                switch_user()
            # else private-tmp.sh becomes the user (setpriv), once its mounts are made as root

        return preexec

    async def start(self):
        self._cgroup_procs = memory_cgroup(self.user.name, self.mem_limit)
        if self._cgroup_procs is None and self.mem_limit:
            self.log.warning("No memory cgroup for %s: its limit is not enforced", self.user.name)
        # A student's server in a mount namespace of its own, with private, capped /tmp,
        # /var/tmp and /dev/shm (the instructor's is not: their grading has its own sandbox).
        self._private_tmp = private_tmp_works and self.user.name != instructor
        if self.user.name != instructor and not private_tmp_works:
            self.log.warning("No private /tmp for %s: its writes there are not bounded",
                             self.user.name)  # fmt: skip
        self.cmd = private_tmp_cmd(self.user.name) if self._private_tmp else server_cmd
        return await super().start()

    def get_env(self):
        env = super().get_env()
        if self.user.name == instructor and grading_cgroup:  # their terminal's `grade`
            env["LLMMATH_GRADING_CGROUP"] = grading_cgroup
        return env


def memory_cgroup(user, limit):
    """The cgroup.procs file of ``user``'s memory cgroup, made and capped at ``limit`` bytes:
    cgroup v2 (memory.max) or v1 (memory.limit_in_bytes). None where neither can be written
    (a container without its own cgroups): then nothing caps a student's memory."""
    v2, v1 = Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")
    try:
        if (v2 / "cgroup.controllers").exists():
            parent = v2 / "llmmath-hub"
            parent.mkdir(exist_ok=True)
            (parent / "cgroup.subtree_control").write_text("+memory")
            group, limit_file = parent / user, "memory.max"
        elif v1.is_dir():
            group, limit_file = v1 / "llmmath-hub" / user, "memory.limit_in_bytes"
        else:
            return None
        group.mkdir(parents=True, exist_ok=True)
        (group / limit_file).write_text(str(int(limit)) if limit else "max")
        return str(group / "cgroup.procs")
    except OSError:
        return None


def delegated_grading_cgroup(user):
    """A memory cgroup folder ``user`` may create cgroups in, or None: each kernel the
    instructor grades (in a terminal, or the formgrader's Autograde button) gets a cgroup of its
    own there, with its own memory cap (llmmath_course.instructor.sandbox reads the folder from
    LLMMATH_GRADING_CGROUP). cgroup v1 only: there a user may move their own processes into a
    cgroup whose cgroup.procs they may write, and the cgroups they make are theirs. (v2 would
    also need write access to the common ancestor's cgroup.procs, which a hub does not hand a
    user; without one the sandbox caps a kernel's address space instead, as the guide says.)
    A sibling of the instructor's server's cgroup, not inside it: the server's cap stays its own."""
    v1 = Path("/sys/fs/cgroup/memory")
    if (Path("/sys/fs/cgroup") / "cgroup.controllers").exists() or not v1.is_dir():
        return None
    try:
        entry = pwd.getpwnam(user)
        group = v1 / "llmmath-hub" / f"grading-{user}"
        group.mkdir(parents=True, exist_ok=True)
        for path in [group, *group.iterdir()]:
            os.chown(path, entry.pw_uid, entry.pw_gid)
        return str(group)
    except (OSError, KeyError):
        return None


grading_cgroup = delegated_grading_cgroup(instructor)
server_cmd = [str(hub_env / "bin" / "jupyterhub-singleuser")]
# What a student may write outside their home, beside the exchange (whose cap is its own
# filesystem's, made by llmmath_course.hub.exchange): /tmp and /var/tmp get TMP_SIZE each,
# /dev/shm SHM_SIZE. They are tmpfs, in memory: what a student keeps there counts toward their
# memory cgroup too.
tmp_size = env.get("LLMMATH_HUB_TMP_SIZE", "256M")
shm_size = env.get("LLMMATH_HUB_SHM_SIZE", "64M")
private_tmp_script = config / "private-tmp.sh"


def private_tmp_cmd(user):
    """The server's command, run by util-linux's unshare in a new mount namespace (private
    propagation: nothing mounted there reaches the machine's) through private-tmp.sh."""
    return [
        "unshare", "--mount", "--propagation", "private", "--",
        "/bin/sh", str(private_tmp_script), user, str(state), tmp_size, shm_size, "--",
        *server_cmd,
    ]  # fmt: skip


def private_tmp_probe():
    """Whether this machine lets root make a mount namespace and a tmpfs in it (a container
    without CAP_SYS_ADMIN does not): else students' servers start as before, with a warning."""
    import subprocess

    probe = ["unshare", "--mount", "--propagation", "private", "--",
             "mount", "-t", "tmpfs", "-o", "size=1M", "llmmath-probe", "/mnt"]  # fmt: skip
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


private_tmp_works = private_tmp_script.is_file() and private_tmp_probe()

# One OS user per student: the hub (root) starts each server as that user.
c.JupyterHub.spawner_class = LimitedSpawner
c.Spawner.mem_limit = env.get("LLMMATH_HUB_MEM_LIMIT") or None
c.Spawner.cmd = server_cmd
c.Spawner.default_url = "/lab"
# The course's vendored MathJax, served by every server at <server>/static/mathjax/: feedback
# and the formgrader render their maths. make hub (llmmath_course.hub) copies it into the state
# folder, where every user can read it (from the instructor's private home, students' servers got
# a 404).
static = f"--ServerApp.extra_static_paths={state / 'static'}"
c.Spawner.args = [static]
# The course's tests read a student's JupyterLab application as tests/course/test_lab.py reads
# make lab's (window.jupyterapp: whether the open notebook has unsaved changes once its kernel's
# info has reached it); only a hub the tests start sets LLMMATH_HUB_EXPOSE_APP.
if env.get("LLMMATH_HUB_EXPOSE_APP") == "1":
    c.Spawner.args.append("--LabApp.expose_app_in_browser=True")
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 180  # thirty servers starting at once on two cores
c.Spawner.http_timeout = 180
c.Spawner.environment = {
    "JUPYTER_CONFIG_PATH": str(config / "student"),
    "PATH": path,
    "LD_LIBRARY_PATH": library,
    # The course's student extension (Fetch Feedback says when there is none) and check.py.
    "PYTHONPATH": str(config / "python"),
    # `make check ASSIGNMENT=...` in a terminal, from any folder (llmmath_course.hub.configs,
    # CHECK_MAKEFILE).
    "MAKEFILES": str(config / "check.mk"),
    # The server and its kernels know they are on the hub: the pulled course's pages are
    # read-only (read_only_lessons.py) and a lesson's exercise link opens the student's my-work
    # copy through llmmath/my-work (llmmath.display.pages.exercise_link).
    "LLMMATH_HUB": "1",
}
c.JupyterHub.concurrent_spawn_limit = 0

# Each server's port, chosen here. The spawner's own choice is a port the OS calls free now,
# which the server binds seconds later (jupyterhub#3005): thirty servers starting at once can
# be handed the same one (2.6% of thirty-port draws here). The second then fails to bind, while the
# hub, taking any answer at its URL for "up" (even the first student's 404), routes that
# student to the other student's server (the 404 in a CI run). So a port this hub gave
# another student, or holds itself, is never handed out again.
_given: dict[str, int] = {}


def _own_port(spawner):
    taken = {p for user, p in _given.items() if user != spawner.user.name}
    taken |= {port, port + 1, port + 2, port + 3}  # the hub, its API, the proxy's, formgrader
    chosen = random_port()
    while chosen in taken:
        chosen = random_port()
    _given[spawner.user.name] = spawner.port = chosen


c.Spawner.pre_spawn_hook = _own_port

# The formgrader, as a service run by the hub as the instructor, in the course root.
c.JupyterHub.services = [
    {
        "name": "formgrader",
        "url": f"http://127.0.0.1:{port + 3}",
        "command": [
            str(hub_env / "bin" / "jupyterhub-singleuser"),
            "--ServerApp.root_dir=.",
            # The hub's Services > formgrader link opens the formgrader itself, in its own tab.
            "--ServerApp.default_url=/formgrader",
            static,
        ],
        "user": instructor,
        "cwd": env["LLMMATH_HUB_COURSE"],
        "environment": {
            "JUPYTER_CONFIG_PATH": str(config / "grader"),
            "PATH": path,
            "LD_LIBRARY_PATH": library,
            # Its guard, llmmath_formgrader_ext (CSP, the release gate on the feedback buttons),
            # and the course tooling that guard asks whether review is done.
            "PYTHONPATH": str(config / "python"),
            # The Autograde button's kernels: each in a cgroup of its own, made here.
            **({"LLMMATH_GRADING_CGROUP": grading_cgroup} if grading_cgroup else {}),
        },
        "oauth_no_confirm": True,
        # The hub gives up (and exits) if the service does not answer in time: 30 s by
        # default, which a busy two-core machine can miss while the server imports.
        "timeout": 180,
    },
    # A student's server with no activity for an hour is stopped (their files stay; the next
    # login starts it again). Kernels idle for 30 minutes end sooner, in the server itself.
    {
        "name": "idle-culler",
        "command": [
            str(hub_env / "bin" / "python"),
            "-m",
            "jupyterhub_idle_culler",
            "--timeout=3600",
            "--cull-every=300",
        ],
        "environment": {"LD_LIBRARY_PATH": library},
        "user": "nobody",  # it needs only the hub's API and its token, not root
    },
]
c.JupyterHub.load_roles = [
    {
        "name": "graders",
        "users": [instructor],
        "scopes": ["access:services!service=formgrader"],
    },
    {
        "name": "formgrader",
        "services": ["formgrader"],
        "scopes": ["read:users:name"],
    },
    {
        "name": "idle-culler",
        "services": ["idle-culler"],
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    },
]

# tests/course/test_hub.py drives the class through the hub's REST API with one token (never set by
# make hub): start servers, and act on a student's server as the student's browser would.
if env.get("LLMMATH_HUB_ADMIN_TOKEN"):
    c.JupyterHub.services.append(
        {"name": "llmmath-test", "api_token": env["LLMMATH_HUB_ADMIN_TOKEN"]}
    )
    c.JupyterHub.load_roles.append(
        {
            "name": "llmmath-test",
            "services": ["llmmath-test"],
            "scopes": ["admin:users", "admin:servers", "access:servers", "read:users"],
        }
    )

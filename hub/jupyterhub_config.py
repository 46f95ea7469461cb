"""JupyterHub for the course: one OS user per student, the formgrader as a hub service.

Started by ``scripts/hub.py`` (``make hub``, tests/test_hub.py), which creates the users and the
folders and passes them in ``LLMMATH_HUB_*`` variables:

- every student's server runs as that student's own OS user (``LocalProcessSpawner``: the hub
  runs as root and switches user), from an environment every user can read (``HUB_ENV``), so
  a student cannot read another student's home, submission or the instructor's ``solutions/``;
- students' servers load nbgrader's *Assignments* tab only (formgrader, course list and
  create-assignment are disabled in their config folder, ``STUDENT_CONFIG``);
- the formgrader is a hub-managed service running as the instructor's OS user in the course
  root, reachable only by the instructor (``/services/formgrader/``);
- the nbgrader exchange is a shared folder (``EXCHANGE``), the same path on every server.

Authentication here is JupyterHub's ``DummyAuthenticator`` (one shared password, allowed users
only), which suits a demo and a test; a class uses PAM, LDAP or OAuth instead
(book/instructor.md, "On JupyterHub").
"""

import os
import signal
from pathlib import Path

from jupyterhub.utils import random_port

c = get_config()  # noqa: F821  (traitlets injects get_config into config files)
# A hub started where SIGINT is ignored (a script's background job, nohup) would hand that on
# to everything it starts. It stops the formgrader service with SIGINT first, then waits 30 s
# before SIGTERM: every stop took 35-45 s. Python's own handler here means each process the
# hub starts begins with SIGINT's default (and Ctrl-C stops the hub itself).
signal.signal(signal.SIGINT, signal.default_int_handler)
env = os.environ
state = Path(env["LLMMATH_HUB_STATE"])
port = int(env["LLMMATH_HUB_PORT"])
hub_env = Path(env["LLMMATH_HUB_ENV"])
instructor = env["LLMMATH_HUB_INSTRUCTOR"]
students = env["LLMMATH_HUB_STUDENTS"].split(",")
path = f"{hub_env / 'bin'}:/usr/local/bin:/usr/bin:/bin"
# The servers' Python is a copy of the project's; its libpython is found through this.
library = env["LLMMATH_HUB_LIB"]

# The hub, its proxy and its database, all on loopback and in the state folder.
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = port + 1
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port + 2}"
c.ConfigurableHTTPProxy.command = [env["LLMMATH_HUB_PROXY"]]
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every server it started
c.JupyterHub.cleanup_proxy = True

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = env["LLMMATH_HUB_PASSWORD"]
c.Authenticator.allowed_users = {instructor, *students}
c.Authenticator.admin_users = {instructor}

# One OS user per student: the hub (root) starts each server as that user.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(hub_env / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
# The course's vendored MathJax, served by every server at <server>/static/mathjax/: feedback
# and the formgrader render their maths. scripts/hub.py copies it into the state folder, where
# every user can read it (from the instructor's private home, students' servers got a 404).
static = f"--ServerApp.extra_static_paths={state / 'static'}"
c.Spawner.args = [static]
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 180  # thirty servers starting at once on two cores
c.Spawner.http_timeout = 180
c.Spawner.environment = {
    "JUPYTER_CONFIG_PATH": env["LLMMATH_HUB_STUDENT_CONFIG"],
    "PATH": path,
    "LD_LIBRARY_PATH": library,
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
            static,
        ],
        "user": instructor,
        "cwd": env["LLMMATH_HUB_COURSE"],
        "environment": {
            "JUPYTER_CONFIG_PATH": env["LLMMATH_HUB_GRADER_CONFIG"],
            "PATH": path,
            "LD_LIBRARY_PATH": library,
        },
        "oauth_no_confirm": True,
        # The hub gives up (and exits) if the service does not answer in time: 30 s by
        # default, which a busy two-core machine can miss while the server imports.
        "timeout": 180,
    }
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
]

# tests/test_hub.py drives the class through the hub's REST API with one token (never set by
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

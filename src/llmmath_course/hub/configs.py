"""What each server of the class is given: the students' and the grader's Jupyter settings
(rewritten at every start, readable by all), what students' servers import from the state
folder, and the instructor's course root (made once)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from llmmath_course.hub.environment import REPO

COURSE = "llmmath"
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
# Lab extension (lab/learner/labextensions, added in write_configs) keeps Validate from saying
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
        # (lab/learner/read_only_lessons.py, copied onto PYTHONPATH by write_configs).
        "contents_manager_class": "read_only_lessons.ReadOnlyLessons",
    },
    "LabApp": NO_NEWS,
    "MappingKernelManager": CULL,
    "TerminalManager": {"cull_inactive_timeout": 1800, "cull_interval": 300},
}
NO_ANNOUNCEMENTS = {"@jupyterlab/apputils-extension:announcements": True}
# No JupyterLab build on a course server: without these, every page load asks the server for the
# build's status, which runs `node yarn.js config --json` and rereads every extension's
# package.json (about 0.5 s of CPU a load) to offer a "Build Recommended" dialog no one may act on.
NO_BUILD = {"buildAvailable": False, "buildCheck": False}
# Run by every server of the class before it imports JupyterLab (config files run first; the
# JSON beside it is read after it): no `node yarn.js config --json` at each start, about 0.5 s of
# CPU a server (lab/learner/no_yarn_config.py, on the servers' PYTHONPATH).
NO_YARN_CONFIG = "from no_yarn_config import skip_yarn_config\n\nskip_yarn_config()\n"
STUDENT_LAB = {
    **NO_BUILD,
    "disabledExtensions": {
        "@jupyter/nbgrader:formgrader": True,
        "@jupyter/nbgrader:create-assignment": True,
        "@jupyter/nbgrader:course-list": True,
        **NO_ANNOUNCEMENTS,
    },
}
# The formgrader service's Lab. nbgrader's Nbgrader > Formgrader opens the formgrader in an
# iframe, which every server of JupyterHub >= 4.1 refuses to be framed in (frame-ancestors
# 'none', against same-origin attacks; nbgrader#1870, reverted workaround nbgrader#1947): the tab
# said "127.0.0.1 refused to connect". So that item is switched off and a Formgrader menu opens
# the formgrader in a browser tab of its own, where it works.
GRADER_LAB = {
    **NO_BUILD,
    "disabledExtensions": {"@jupyter/nbgrader:formgrader": True, **NO_ANNOUNCEMENTS},
}
FORMGRADER_URL = "/services/formgrader/formgrader"
# The formgrader service's server: hub/llmmath_formgrader_ext.py (on its PYTHONPATH, from
# config/python) puts a Content-Security-Policy with nonces on every formgrader page, so a
# submission's scripts never run in the grader's tab, and holds the per-student and
# per-assignment Generate/Release Feedback buttons to the release gate, logged.
GRADER_SERVER = {
    "ServerApp": {
        "terminado_settings": TERMINAL,
        "jpserver_extensions": {"llmmath_formgrader_ext": True},
    },
    "LabApp": NO_NEWS,
}
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


def write_configs(state: Path, exchange: Path) -> None:
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
        "grader": (GRADER_SERVER, GRADER_LAB, GRADER_SETTINGS),
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
        (folder / "jupyter_server_config.py").write_text(NO_YARN_CONFIG)
        (folder / "labconfig" / "page_config.json").write_text(json.dumps(lab, indent=1))
        (folder / "lab-settings" / "overrides.json").write_text(json.dumps(settings, indent=1))
    # What every server imports from here (PYTHONPATH) and runs: the student extension,
    # scripts/check.py for `make check` (it reads only the student's own notebook), llmmath and
    # the course tooling.
    python = state / "config" / "python"
    python.mkdir()
    shutil.copy2(REPO / "hub" / "llmmath_student_ext.py", python)
    shutil.copy2(REPO / "hub" / "llmmath_formgrader_ext.py", python)  # the formgrader's only
    shutil.copy2(REPO / "scripts" / "check.py", python)
    # The learner's read-only lessons, and no `node yarn.js config` at a server's start.
    for module in ("read_only_lessons.py", "myst_links.py", "no_yarn_config.py"):
        shutil.copy2(REPO / "lab" / "learner" / module, python)
    # The course's package, for the lessons the launch button opens (`import llmmath`), and the
    # course tooling, for llmmath/my-work (llmmath_course.lab.copy_exercise).
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "src" / "llmmath", python / "llmmath", ignore=skip)
    shutil.copytree(REPO / "src" / "llmmath_course", python / "llmmath_course", ignore=skip)
    shutil.copytree(REPO / "lab" / "learner" / "labextensions", state / "config" / "labextensions")
    (state / "config" / "check.mk").write_text(CHECK_MAKEFILE.format(check=python / "check.py"))
    # What the hub (root) runs each student's server through: private, capped /tmp and /dev/shm.
    shutil.copy2(REPO / "hub" / "private-tmp.sh", state / "config" / "private-tmp.sh")
    subprocess.run(["chmod", "-R", "u=rwX,go=rX", str(state / "config")], check=True)


def course_copy(course: Path, exchange: Path, owner: str) -> None:
    """The instructor's course root: the repository's course files, owned by the instructor."""
    course.mkdir()
    config = (REPO / "nbgrader_config.py").read_text()
    (course / "nbgrader_config.py").write_text(config + f'\nc.Exchange.root = "{exchange}"\n')
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    shutil.copytree(REPO / "grading", course / "grading", ignore=ignore)
    shutil.copytree(REPO / "solutions", course / "solutions", ignore=ignore)
    # The vendored MathJax where instructor.py finds it (it copies it beside the feedback). The
    # servers serve another copy, in the state folder (running._prepare), which every user can read.
    vendor = REPO / "book" / "_vendor" / "mathjax"
    shutil.copytree(vendor, course / "book" / "_vendor" / "mathjax")
    (course / "scripts").mkdir()
    shutil.copy2(REPO / "scripts" / "instructor.py", course / "scripts" / "instructor.py")
    # The course tooling instructor.py wraps, beside it (the hub's venv does not install it).
    package = course / "scripts" / "llmmath_course"
    shutil.copytree(REPO / "src" / "llmmath_course", package, ignore=ignore)
    # And llmmath, which the exercises' setting cells import: the grading sandbox binds it
    # (read-only, alone) into each kernel it jails.
    shutil.copytree(REPO / "src" / "llmmath", course / "scripts" / "llmmath", ignore=ignore)
    subprocess.run(["chown", "-R", f"{owner}:{owner}", str(course)], check=True)

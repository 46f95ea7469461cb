"""Sphinx extension: the book's JupyterHub launch button, checked, and its exercise-page variant.

Jupyter Book 1's theme (sphinx-book-theme 1.1) draws the button when ``_config.yml`` sets
``launch_buttons: jupyterhub_url:`` and ``repository: url:`` (book/instructor.md, "A launch
button to the class hub"). On a lesson it links to nbgitpuller on the class hub::

    <hub>/hub/user-redirect/git-pull?repo=<repository url>
        &urlpath=lab/tree/<repo>/<page>.md&branch=<branch>

nbgitpuller clones the course into ``~/<repo>`` (or pulls it again, merging, never overwriting
the student's edits), then JupyterLab opens the page; a lesson's ``.md`` opens as a notebook
(jupytext, the students' ``defaultViewers``: llmmath_course.hub.configs). This extension adds
what the theme does not do:

- **checks** at start: a hub URL without a repository URL (the theme stopped with a
  ``TypeError``), a hub URL that is not ``http(s)://``, or a classic-notebook interface (it
  would open a lesson's ``.md`` as text) stop the build with a message naming the setting;
  a repository on a git server the theme does not know by name (it knows GitHub, GitLab and
  Bitbucket; a university's own server) is accepted: the link uses the URL as it is given;
- on an **exercise page** the button opens the student's own copy, ``my-work/<assignment>/``
  in the pulled course, made the first time only (as ``make lab`` makes it), by the students'
  server extension (hub/llmmath_student_ext.py, ``llmmath/my-work/<repo>/<assignment>``): the
  theme's button can only open the page's own file, the release, which a new version of the
  course would change under the student.

With no hub URL (the default) the theme draws no launch button at all: no control that leads
nowhere.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError, ExtensionError

#: The students' server extension's route to their own copy of an exercise.
MY_WORK_ROUTE = "llmmath/my-work"
EXERCISE_PAGE = re.compile(r"exercises/([a-z0-9_]+)/\1")
KNOWN_PROVIDERS = ("github", "gitlab", "bitbucket")


def pull_url(hub: str, repository: str, branch: str, urlpath: str) -> str:
    """nbgitpuller's link on ``hub``: pull ``repository`` at ``branch``, then open ``urlpath``
    (relative to the student's server). The theme's formula for its JupyterHub button."""
    query = urlencode({"repo": repository, "urlpath": urlpath, "branch": branch}, safe="/")
    return f"{hub.strip('/')}/hub/user-redirect/git-pull?{query}"


def repo_folder(repository: str) -> str:
    """The folder nbgitpuller clones ``repository`` into, in the student's home: its last part."""
    return repository.rstrip("/").split("/")[-1]


def my_work_urlpath(repository: str, assignment: str) -> str:
    """Where an exercise page's button sends the student once the course is pulled."""
    return f"{MY_WORK_ROUTE}/{repo_folder(repository)}/{assignment}"


def settings(config: Config) -> tuple[str, str, str]:
    """The hub URL, repository URL and branch that ``_config.yml`` set ("" where unset)."""
    theme = config.html_theme_options or {}
    launch = theme.get("launch_buttons") or {}
    hub = str(launch.get("jupyterhub_url") or "").strip()
    repository = str(theme.get("repository_url") or "").strip().rstrip("/")
    branch = str(theme.get("repository_branch") or "").strip()
    return hub, repository, branch


def check_settings(app: Sphinx, config: Config) -> None:
    """Refuse a launch-button configuration that would build a broken button (``config-inited``)."""
    theme = config.html_theme_options or {}
    hub, repository, branch = settings(config)
    if not hub:
        return
    where = "_config.yml"
    if not re.match(r"https?://[^/\s]+", hub):
        raise ConfigError(
            f"{where}: launch_buttons.jupyterhub_url must be the class hub's address, "
            f"http(s)://host[/prefix], got {hub!r}"
        )
    if not repository:
        raise ConfigError(
            f"{where}: launch_buttons.jupyterhub_url is set ({hub}) but repository.url is empty: "
            "the button pulls the course from repository.url into the student's home. "
            "Set both, or leave jupyterhub_url empty for no button"
        )
    # Not file://: git refuses to clone a repository that another OS user owns ("dubious
    # ownership"), and nbgitpuller clones as the student.
    if not re.match(r"(https?|git|ssh)://[^/\s]+/\S+", repository):
        raise ConfigError(
            f"{where}: repository.url must be a git URL every student can clone, "
            f"https://host/org/repo (or git://, ssh://), got {repository!r}"
        )
    if not branch:
        raise ConfigError(f"{where}: repository.branch must name the branch to pull, got ''")
    interface = (theme.get("launch_buttons") or {}).get("notebook_interface", "classic")
    if interface != "jupyterlab":
        raise ConfigError(
            f"{where}: launch_buttons.notebook_interface must be jupyterlab for the hub's button "
            f"(the lessons are MyST .md, which JupyterLab opens as notebooks), got {interface!r}"
        )
    provider = repository.split("://", 1)[-1].split("/", 1)[0].lower()
    if not theme.get("repository_provider") and not any(p in provider for p in KNOWN_PROVIDERS):
        # The theme names the repository's parts after a provider and stops on an unknown host;
        # the JupyterHub link uses only the URL, whatever the name (nothing else here uses it).
        theme["repository_provider"] = "github"


def exercise_button(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """On an exercise page, the theme's JupyterHub button opens the student's ``my-work/`` copy."""
    hub, repository, branch = settings(app.config)
    found = EXERCISE_PAGE.fullmatch(pagename)
    if not hub or not found:
        return
    groups = [b for b in context.get("header_buttons", []) if b.get("label") == "launch-buttons"]
    buttons = [b for g in groups for b in g.get("buttons", []) if b.get("text") == "JupyterHub"]
    if len(buttons) != 1:
        raise ExtensionError(f"{pagename}: expected the theme's one JupyterHub button, {buttons}")
    assignment = found.group(1)
    buttons[0]["url"] = pull_url(hub, repository, branch, my_work_urlpath(repository, assignment))
    buttons[0]["text"] = "JupyterHub: your copy"
    buttons[0]["tooltip"] = f"Open your own copy, my-work/{assignment}/, on the class hub"


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", check_settings)
    # After the theme's add_launch_buttons (priority 501) has put the button in the context.
    app.connect("html-page-context", exercise_button, priority=510)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

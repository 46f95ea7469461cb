"""The book's JupyterHub launch button (_config.yml's launch_buttons and repository, the theme's
button, book/_ext/hub_launch.py): what the built pages link to, with and without a hub.

A small book (the batching lesson and its exercise, with the course's _config.yml and the
settings an instructor fills in) is built as ``make book`` builds, without executing, and its
pages are read: the lesson's button is nbgitpuller's link on the hub, opening the lesson's
``.md`` in JupyterLab; the exercise page's opens the student's ``my-work/`` copy; with no hub
URL there is no launch button at all. Bad settings stop the build, naming the setting.
tests/course/test_hub.py clicks the built link on the course's own JupyterHub.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from hub_launch import my_work_urlpath, pull_url  # noqa: E402
from launch_support import build_launch_pages, launch_links  # noqa: E402

HUB = "https://hub.example.edu"
REPOSITORY = "https://git.example.edu/course/llmmath"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_launch_pages(tmp_path_factory.mktemp("launch"), HUB, REPOSITORY)


def test_the_lessons_button_pulls_the_course_and_opens_the_lesson(built: Path) -> None:
    links = launch_links(built / "lessons" / "batching.html")
    assert list(links) == ["JupyterHub"], links
    url = urlsplit(links["JupyterHub"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{HUB}/hub/user-redirect/git-pull"
    query = parse_qs(url.query)
    assert query == {
        "repo": [REPOSITORY],
        "urlpath": ["lab/tree/llmmath/lessons/batching.md"],  # the MyST source, in JupyterLab
        "branch": ["main"],
    }, query
    # The extension's formula is the theme's: the exercise pages' link is built the same way.
    assert links["JupyterHub"] == pull_url(HUB, REPOSITORY, "main", query["urlpath"][0])


def test_the_exercise_pages_button_opens_the_students_own_copy(built: Path) -> None:
    links = launch_links(built / "exercises" / "batching" / "batching.html")
    assert list(links) == ["JupyterHub: your copy"], links
    query = parse_qs(urlsplit(links["JupyterHub: your copy"]).query)
    assert query["urlpath"] == ["llmmath/my-work/llmmath/batching"], query
    assert query["urlpath"] == [my_work_urlpath(REPOSITORY, "batching")]
    assert query["repo"] == [REPOSITORY] and query["branch"] == ["main"]


def test_with_no_hub_the_course_book_has_no_launch_button() -> None:
    """The course's own settings (no hub URL): no launch button on any page of the built book,
    and no link to a hub (a control that leads nowhere)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["launch_buttons"]["jupyterhub_url"] == "", "the course ships no hub address"
    html = ROOT / "_build" / "html"
    pages = sorted(html.glob("lessons/*.html")) + sorted(html.glob("exercises/*/*.html"))
    if not pages:
        pytest.fail(f"no built lessons in {html}: build the book first (make book)", pytrace=False)
    shown = {p.relative_to(html).as_posix(): launch_links(p) for p in pages}
    assert not any(shown.values()), f"launch buttons with no hub configured: {shown}"
    for page in pages:
        assert "git-pull" not in page.read_text(), page


@pytest.mark.parametrize(
    ("hub", "repository", "branch", "message"),
    [
        (HUB, "", "main", "repository.url is empty"),
        ("hub.example.edu", REPOSITORY, "main", "launch_buttons.jupyterhub_url must be"),
        (HUB, "llmmath", "main", "repository.url must be a git URL"),
        (HUB, "file:///srv/course/llmmath", "main", "repository.url must be a git URL"),
        (HUB, REPOSITORY, "", "repository.branch must name the branch"),
    ],
)
def test_a_bad_setting_stops_the_build_naming_it(
    tmp_path: Path, hub: str, repository: str, branch: str, message: str
) -> None:
    from types import SimpleNamespace

    from hub_launch import check_settings
    from sphinx.errors import ConfigError

    theme = {
        "launch_buttons": {"notebook_interface": "jupyterlab", "jupyterhub_url": hub},
        "repository_url": repository,
        "repository_branch": branch,
    }
    with pytest.raises(ConfigError, match=message):
        check_settings(None, SimpleNamespace(html_theme_options=theme))  # type: ignore[arg-type]
    theme.update(repository_url=REPOSITORY, repository_branch="main")
    theme["launch_buttons"] = {"notebook_interface": "classic", "jupyterhub_url": HUB}
    with pytest.raises(ConfigError, match="notebook_interface must be jupyterlab"):
        check_settings(None, SimpleNamespace(html_theme_options=theme))  # type: ignore[arg-type]

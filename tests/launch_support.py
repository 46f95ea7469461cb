"""The launch-button book both tests/display/test_launch.py (its links) and
tests/course/test_hub.py (the button clicked on the course's hub) build and read."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from bs4 import BeautifulSoup
from wait_support import seconds

ROOT = Path(__file__).resolve().parents[1]
TOC = """\
format: jb-book
root: intro
chapters:
  - file: lessons/batching
    sections:
      - file: exercises/batching/batching
"""


def build_launch_pages(where: Path, hub: str, repository: str, branch: str = "main") -> Path:
    """Build the batching lesson and exercise with the course's _config.yml and these launch
    settings (no execution: the button does not depend on it); the html folder. Raises with the
    build's output when it fails."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["launch_buttons"]["jupyterhub_url"] = hub
    config["repository"] = {"url": repository, "branch": branch}
    config["execute"]["execute_notebooks"] = "off"
    config["exclude_patterns"] = ["_build"]
    config["sphinx"] = {"local_extensions": {"hub_launch": str(ROOT / "book" / "_ext")}}
    book = where / "book"
    (book / "book").mkdir(parents=True)
    (book / "_config.yml").write_text(yaml.safe_dump(config))
    (book / "_toc.yml").write_text(TOC)
    (book / "intro.md").write_text("# Launch buttons\n")
    shutil.copy2(ROOT / "book" / "references.bib", book / "book" / "references.bib")
    (book / "lessons").mkdir()
    shutil.copy2(ROOT / "lessons" / "batching.md", book / "lessons" / "batching.md")
    shutil.copytree(ROOT / "exercises" / "batching", book / "exercises" / "batching")
    result = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(book), "--quiet"],
        capture_output=True, text=True, timeout=seconds(600), check=False,
    )  # fmt: skip
    if result.returncode:
        raise RuntimeError(f"jupyter-book build failed:\n{result.stdout}\n{result.stderr}")
    return book / "_build" / "html"


def launch_links(page: Path) -> dict[str, str]:
    """The launch buttons a built page shows in its header: text -> href."""
    soup = BeautifulSoup(page.read_text(), "html.parser")
    links = soup.select(".dropdown-launch-buttons a, a[href*='git-pull']")
    return {" ".join(a.get_text().split()): str(a["href"]) for a in links}

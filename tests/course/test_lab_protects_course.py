"""Lab protects the course (#46 item 5): a course file or folder is renamed, moved or deleted
nowhere (File > Rename, drag and drop, Move to Trash all call the contents manager's
``rename_file`` and ``delete_file``), with the same guard as a save; the learner's own files
move freely."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from tornado.web import HTTPError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lab" / "learner"))
import read_only_lessons  # noqa: E402  (lab/learner/ is the learner server's config folder)


def run(call: Coroutine[Any, Any, Any]) -> Any:
    """Run a contents-manager coroutine on a loop of its own, in a thread of its own: a worker
    that already ran a browser test has Playwright's loop running in its main thread, where
    ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, call).result()


@pytest.fixture
def contents(tmp_path: Path) -> Any:
    for name in ("lessons/roofline.md", "book/notation.md", "exercises/roofline/roofline.ipynb"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "_toc.yml").write_text("format: jb-book\n")
    (tmp_path / "my-work").mkdir()
    (tmp_path / "my-work" / "notes.md").write_text("mine")
    return read_only_lessons.ReadOnlyLessons(root_dir=str(tmp_path), delete_to_trash=False)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("lessons/roofline.md", "lessons/roofline2.md"),  # File > Rename
        ("lessons/roofline.md", "my-work/roofline.md"),  # moved out
        ("exercises/roofline/roofline.ipynb", "exercises/roofline/roofline_v2.ipynb"),
        ("lessons", "lessons_old"),  # the folder itself
        ("_toc.yml", "my-work/toc.yml"),
        ("my-work/notes.md", "lessons/notes.md"),  # moved in among the lessons
    ],
)
def test_a_course_file_is_not_renamed_or_moved(
    contents: Any, tmp_path: Path, old: str, new: str
) -> None:
    with pytest.raises(HTTPError) as refused:
        run(contents.rename_file(old, new))
    assert refused.value.status_code == 403 and "course" in str(refused.value.log_message)
    assert (tmp_path / old).exists() and not (tmp_path / new).exists()


@pytest.mark.parametrize("path", ["lessons/roofline.md", "book", "exercises/roofline"])
def test_a_course_file_is_not_deleted(contents: Any, tmp_path: Path, path: str) -> None:
    with pytest.raises(HTTPError) as refused:
        run(contents.delete_file(path))
    assert refused.value.status_code == 403
    assert (tmp_path / path).exists()


def test_the_learner_s_own_files_move_and_go(contents: Any, tmp_path: Path) -> None:
    run(contents.rename_file("my-work/notes.md", "my-work/notes2.md"))
    assert (tmp_path / "my-work" / "notes2.md").read_text() == "mine"
    run(contents.delete_file("my-work/notes2.md"))
    assert not (tmp_path / "my-work" / "notes2.md").exists()


def test_a_book_page_read_as_text_is_served_read_only_with_its_links() -> None:
    """The rendered page a lesson's glossary link opens (#46 item 5) reads the page as text:
    it is served not writable, its references as links at their labels, the file untouched."""
    contents = read_only_lessons.ReadOnlyLessons(root_dir=str(ROOT))
    model = run(contents.get("book/glossary.md", type="file", format="text"))
    assert model["writable"] is False
    assert "{ref}`" not in model["content"] and "{cite}`" not in model["content"]
    assert "](notation.md#notation)" in model["content"]
    assert "{ref}`notation`" in (ROOT / "book" / "glossary.md").read_text()

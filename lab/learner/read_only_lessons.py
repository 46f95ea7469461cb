"""The course's pages open read-only and unmodified: ``make lab`` and the hub's students.

``ReadOnlyLessons`` is the learner's contents manager (``jupyter_server_config.py`` beside this
file sets it for ``make lab``; ``make hub`` (``llmmath_course.hub.configs``) copies this module
and ``myst_links.py`` onto the students' ``PYTHONPATH`` and names it in their server's
configuration). The course's lessons
(``lessons/*.md``) and the book's pages (``book/*.md``) are reported not writable, a save to them
is refused, they are served as JupyterLab will show them (so opening one does not mark it
modified) and their citations and cross-references as links (``myst_links``).

Where the course is: in ``make lab`` the server's root is the checkout (``lessons/x.md``); on the
hub (``LLMMATH_HUB=1`` in the student's server environment, hub/jupyterhub_config.py) the root is
the student's home and nbgitpuller pulls the course into ``~/<course>/``, so a course page is
``<course>/lessons/x.md``, for a top-level folder holding the course's ``_toc.yml``.
"""

import copy
import os
from pathlib import Path

import myst_links  # beside this module (and beside it on the hub's PYTHONPATH)
from ipykernel.ipkernel import IPythonKernel
from jupytext.async_contentsmanager import AsyncTextFileContentsManager
from tornado.web import HTTPError

READ_ONLY = ("lessons/", "book/")
#: The course's own files beside its pages: Lab may open them, never rename, move or delete them
#: (the learner's work lives in my-work/, which is none of these).
COURSE_FILES = (
    *READ_ONLY,
    "exercises/",
    "solutions/",
    "src/",
    "tests/",
    "scripts/",
    "lab/",
    "grading/",
    "hub/",
    "_toc.yml",
    "_config.yml",
    "Makefile",
    "pyproject.toml",
    "nbgrader_config.py",
    "requirements.in",
    "requirements.lock",
    "README.md",
    "CONTRIBUTING.md",
)
HUB_ENV = "LLMMATH_HUB"  # "1" on the hub's students' servers and their kernels


def course_page(
    path: str, root: Path, protected: tuple[str, ...] = READ_ONLY
) -> tuple[Path, str] | None:
    """``(the course's root, the page relative to it)`` when ``path`` (relative to the server's
    ``root``) is one of the course's read-only pages (or, with ``protected=COURSE_FILES``, any
    of its files or folders, the folders themselves included), else None."""
    page = path.strip("/")
    course = root
    if os.environ.get(HUB_ENV) == "1":
        folder, _, page = page.partition("/")
        course = root / folder
        if folder in ("", ".", "..") or not (course / "_toc.yml").is_file():
            return None
    inside = page.startswith(protected) or f"{page}/" in protected
    return (course, page) if inside else None


def with_language_info(notebook: dict) -> None:
    """The kernel reports its language on connecting and JupyterLab writes that into the
    notebook's metadata, marking a page nobody changed as modified: a lesson, the start page,
    an exercise whose release holds only ``{"name": "python"}``. Serve it already there (every
    page here runs this environment's ipykernel)."""
    metadata = notebook.setdefault("metadata", {})
    kernel = metadata.get("kernelspec", {}).get("language", "python")
    stored = metadata.get("language_info", {})
    if kernel == "python" and stored.get("name", "python") == "python":
        metadata["language_info"] = {**stored, **copy.deepcopy(IPythonKernel.language_info)}


def with_links(notebook: dict, page: str, root: Path) -> None:
    """Citations and cross-references as links JupyterLab can follow (``myst_links``)."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            cell["source"] = myst_links.rewrite(source, page, root)


class ReadOnlyLessons(AsyncTextFileContentsManager):
    """The course's pages are reported not writable, and a save to them is refused.

    It is Jupytext's contents manager (so Jupytext does not wrap it again): ``get`` sees the
    lesson as the notebook JupyterLab will show."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        page = course_page(path, Path(self.root_dir))
        if page:
            model["writable"] = False
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
            with_language_info(model["content"])
            if page:
                with_links(model["content"], page[1], page[0])
        elif page and page[1].endswith(".md") and isinstance(model.get("content"), str):
            # read as text: a book page a lesson's link opens as a rendered page (Markdown
            # Preview, labextensions/llmmath-learner) shows its links as a notebook would
            model["content"] = myst_links.rewrite(model["content"], page[1], page[0])
        return model

    def refuse_moving(self, *paths):
        """A course file is renamed, moved or deleted nowhere (File > Rename, drag and drop,
        Move to Trash): the same guard as a save, for the folders that hold them too."""
        for path in paths:
            if course_page(path, Path(self.root_dir), COURSE_FILES):
                raise HTTPError(
                    403,
                    f"{path} is one of the course's files, kept as it is here: copy it into "
                    "my-work/ to change it",
                )

    async def rename_file(self, old_path, new_path):
        self.refuse_moving(old_path, new_path)
        return await super().rename_file(old_path, new_path)

    async def delete_file(self, path):
        self.refuse_moving(path)
        return await super().delete_file(path)

    async def save(self, model, path=""):
        if course_page(path, Path(self.root_dir)):
            raise HTTPError(
                403, f"{path} is a course lesson, read-only here: File > Save As into my-work/"
            )
        return await super().save(model, path)

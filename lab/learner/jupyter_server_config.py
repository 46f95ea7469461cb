"""JupyterLab for a learner (``make lab``; ``make lab ROLE=instructor`` skips this folder).

scripts/lab.py puts this folder on JUPYTER_CONFIG_PATH. With it:

- the course's lessons (``lessons/*.md``) and the book's pages (``book/*.md``) open
  read-only: a learner runs them, moves their controls and reads them, but neither autosave
  nor Ctrl-S rewrites them, so ``git status`` and ``git pull`` stay clean, and opening one
  does not mark it modified. File -> Save As puts a copy of their own in ``my-work/``;
- their citations and cross-references are served as links a learner can follow
  (``myst_links.py``: jupyterlab-myst alone shows them as "not found");
- nbgrader's instructor tools are off: the formgrader server extension here, the Create
  Assignment panel and the Nbgrader menu in ``labconfig/page_config.json``. Validate stays,
  and when no visible check fails its dialog says so and that the hidden tests check the values
  when the notebook is graded, not nbgrader's "Success! Your notebook passes all the tests."
  (``labextensions/llmmath-learner``: that text is fixed in nbgrader's labextension).
"""

import copy
import sys
from pathlib import Path

from ipykernel.ipkernel import IPythonKernel
from jupytext.async_contentsmanager import AsyncTextFileContentsManager
from tornado.web import HTTPError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import myst_links  # beside this file (traitlets runs a config file with __file__ set)

READ_ONLY = ("lessons/", "book/")


def read_only(path: str) -> bool:
    return path.strip("/").startswith(READ_ONLY)


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
    """Files under lessons/ are reported not writable, and a save to them is refused.

    It is Jupytext's contents manager (so Jupytext does not wrap it again): ``get`` sees the
    lesson as the notebook JupyterLab will show."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if read_only(path):
            model["writable"] = False
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
            with_language_info(model["content"])
            if read_only(path):
                with_links(model["content"], path.strip("/"), Path(self.root_dir))
        return model

    async def save(self, model, path=""):
        if read_only(path):
            raise HTTPError(
                403, f"{path} is a course lesson, read-only here: File > Save As into my-work/"
            )
        return await super().save(model, path)


c = get_config()  # noqa: F821 (traitlets provides it)
c.ServerApp.contents_manager_class = ReadOnlyLessons
c.ServerApp.jpserver_extensions = {"nbgrader.server_extensions.formgrader": False}
c.LabApp.extra_labextensions_path = [str(Path(__file__).resolve().parent / "labextensions")]
# A kernel no tab is connected to is shut down after ten idle minutes. Closing an exercise
# shuts its kernel at once (lab/overrides.json: kernelShutdown), but a lesson opens with
# Jupytext's notebook factory, which does not take that setting: without this each lesson a
# learner has closed kept its kernel (~100 MB) until the server stopped. A tab left open keeps
# its kernel, however long it idles.
c.MappingKernelManager.cull_idle_timeout = 600
c.MappingKernelManager.cull_interval = 60
c.MappingKernelManager.cull_connected = False

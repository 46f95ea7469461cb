"""JupyterLab for a learner (``make lab``; ``make lab ROLE=instructor`` skips this folder).

scripts/lab.py puts this folder on JUPYTER_CONFIG_PATH. With it:

- the course's lessons (``lessons/*.md``) and the book's pages (``book/*.md``) open
  read-only (``read_only_lessons.py``, which the hub's students' servers use too): a learner
  runs them, moves their controls and reads them, but neither autosave nor Ctrl-S rewrites
  them, so ``git status`` and ``git pull`` stay clean, and opening one does not mark it
  modified. File -> Save As puts a copy of their own in ``my-work/``;
- their citations and cross-references are served as links a learner can follow, to the
  label (``myst_links.py``: jupyterlab-myst alone shows them as "not found"); a link to a book
  page (the glossary, the notation) opens it read-only as a rendered page, at the label, with
  no kernel (``labextensions/llmmath-learner``);
- nbgrader's instructor tools are off: the formgrader server extension here, the Create
  Assignment panel and the Nbgrader menu in ``labconfig/page_config.json``. Validate stays,
  and when no visible check fails its dialog says so and that the hidden tests check the values
  when the notebook is graded, not nbgrader's "Success! Your notebook passes all the tests."
  (``labextensions/llmmath-learner``: that text is fixed in nbgrader's labextension);
- the server starts without running ``node yarn.js config --json`` (``no_yarn_config.py``).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# beside this file (traitlets runs a config file with __file__ set); the hub's students'
# servers use it too (scripts/hub.py)
from no_yarn_config import skip_yarn_config
from read_only_lessons import ReadOnlyLessons

skip_yarn_config()  # before the server imports JupyterLab: no `node yarn.js config` at each start
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

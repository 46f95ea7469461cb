"""A Jupyter server extension for students' servers on the course's hub (scripts/hub.py).

nbgrader 0.9.6's *Fetch Feedback* button calls ``assignments/fetch_feedback``, whose handler
ignores whether any feedback came and answers with the assignment list as before: clicked before
the instructor releases feedback, the button did nothing visible. This handler, found before
nbgrader's, runs the same fetch and, when the student then holds no feedback for the
assignment, answers as nbgrader does for a failed action (``success: false`` and a message),
which the Assignments tab shows in place of its lists until the student refreshes them.

``CheckpointQuietSubmit`` (the students' ``c.ExchangeFactory.submit``): nbgrader's submit,
whose check of the notebooks handed in no longer counts JupyterLab's
``.ipynb_checkpoints/*-checkpoint.ipynb``. Submit never copies them (they are on
``CourseDirectory.ignore``), but its check listed each as an "extra notebook" and logged a
warning at every submission, as if the submission carried it.

``GET llmmath/my-work/<course>/<assignment>`` (where the book's JupyterHub button sends a
student from an exercise page, once nbgitpuller has pulled the course into ``~/<course>``):
copies ``~/<course>/exercises/<assignment>/`` to ``~/<course>/my-work/<assignment>/`` the first
time only, as ``make lab`` does (``llmmath_course.lab.copy_exercise``; ``my-work/`` is
gitignored, so nbgitpuller never touches it), and opens the copy in JupyterLab.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from nbgrader.exchange.default import submit as nbgrader_submit
from nbgrader.server_extensions.assignment_list.handlers import AssignmentActionHandler
from tornado import web

NO_FEEDBACK = (
    "No feedback for {assignment} yet: your instructor has not released it. Your submission "
    "is safe. Click the refresh button to see your assignments again, and fetch the feedback "
    "once your instructor says it is out."
)


def has_feedback(listing: dict[str, Any], assignment: str) -> bool:
    """Whether nbgrader's assignment list shows fetched feedback for ``assignment``."""
    for item in listing.get("value", []) if listing.get("success") else []:
        if item.get("assignment_id") != assignment:
            continue
        for submission in item.get("submissions", []) or [item]:
            if submission.get("has_local_feedback"):
                return True
    return False


class FetchFeedbackHandler(AssignmentActionHandler):  # type: ignore[misc]
    """POST assignments/fetch_feedback: nbgrader's action, and a word when nothing came."""

    @web.authenticated
    def post(self) -> None:
        data = self.get_json_body() or {
            "assignment_id": self.get_argument("assignment_id"),
            "course_id": self.get_argument("course_id"),
        }
        course, assignment = data["course_id"], data["assignment_id"]
        self.manager.fetch_feedback(course, assignment)
        listing = self.manager.list_assignments(course_id=course)
        if not has_feedback(listing, assignment):
            listing = {"success": False, "value": NO_FEEDBACK.format(assignment=assignment)}
        self.finish(json.dumps(listing))


class CheckpointQuietSubmit(nbgrader_submit.ExchangeSubmit):  # type: ignore[misc]
    """nbgrader's submit, comparing only the notebooks it copies (see the module's doc)."""

    def check_filename_diff(self) -> None:
        find = nbgrader_submit.find_all_notebooks
        ignored = list(self.coursedir.ignore)

        def copied(path: str) -> list[str]:
            return [
                name
                for name in find(path)
                if not any(fnmatch.fnmatch(part, g) for part in Path(name).parts for g in ignored)
            ]

        nbgrader_submit.find_all_notebooks = copied  # what nbgrader's check calls, for this call
        try:
            super().check_filename_diff()
        finally:
            nbgrader_submit.find_all_notebooks = find


class MyWorkHandler(JupyterHandler):  # type: ignore[misc]
    """GET llmmath/my-work/<course>/<assignment>: the student's own copy, made once, opened."""

    @web.authenticated
    def get(self, course: str, assignment: str) -> None:
        from llmmath_course.lab import LEARNER_DIR, copy_exercise  # copied beside this module

        root = Path(self.settings["server_root_dir"]).expanduser()
        folder = root / course
        if course in (".", "..") or not (folder / "exercises" / assignment).is_dir():
            raise web.HTTPError(404, f"no exercise {assignment} in ~/{course}/exercises/")
        said = copy_exercise(folder, folder / LEARNER_DIR, assignment)
        self.log.info("llmmath: %s", said)
        notebook = f"{course}/{LEARNER_DIR}/{assignment}/{assignment}.ipynb"
        self.redirect(url_path_join(self.base_url, "lab", "tree", notebook))


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "llmmath_student_ext"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    web_app = serverapp.web_app
    base = web_app.settings["base_url"]
    pattern = url_path_join(base, "/assignments/fetch_feedback")
    my_work = url_path_join(base, r"/llmmath/my-work/([A-Za-z0-9_.-]+)/([a-z0-9_]+)")
    web_app.add_handlers(".*$", [(pattern, FetchFeedbackHandler), (my_work, MyWorkHandler)])
    # tornado puts a new host rule just before the last one; move it first, so that it answers
    # before nbgrader's assignments/<action>, whichever extension loaded first.
    rules = web_app.default_router.rules
    rules.insert(0, rules.pop(-2))
    serverapp.log.info("llmmath: Fetch Feedback says when there is none yet; my-work copies")

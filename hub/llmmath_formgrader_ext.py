"""The formgrader service's guard: a server extension of the hub's formgrader only
(``llmmath_course.hub.configs``, ``GRADER_SERVER``), copied onto its ``PYTHONPATH``.

1. **Submissions stay inert in the grader's tab.** Every formgrader response carries a
   Content-Security-Policy whose ``script-src`` is this response's nonce and 'strict-dynamic':
   a browser runs the ``<script>`` tags written in nbgrader's own templates (and the course's
   MathJax macro), to which the nonce is added as the templates load, and what they load, and
   nothing else. A student's output or answer is not template source, so an ``onerror``
   attribute or a ``<script>`` in it never gets the nonce, even if it got past the sanitizer
   (``c.HTMLExporter.sanitize_html`` in the course's nbgrader_config.py). nbconvert's own
   templates, whose scripts print a notebook's JavaScript outputs, are never given the nonce.
   nbgrader's three inline event handlers (the icons that show a student's name) are allowed
   by hash ('unsafe-hashes'); a submission's own files, which the formgrader serves beside the
   notebook, get the same policy.
2. **The release gate holds in the formgrader.** Its Generate Feedback and Release Feedback
   buttons, per student and per assignment, are refused while review is open (what
   ``instructor.py release-feedback`` refuses: llmmath_course.instructor.review.open_review),
   with the same message in the formgrader's dialog; every press, refused or done, is logged
   in ``feedback/.releases-<assignment>.log`` with the account and the student.
"""

from __future__ import annotations

import base64
import contextvars
import datetime
import getpass
import hashlib
import json
import re
import secrets
from pathlib import Path
from typing import Any

from jinja2 import BaseLoader
from jupyter_server.utils import url_path_join
from nbgrader.server_extensions.formgrader import apihandlers, base, handlers
from tornado import web

# The nonce of the response being written (set around each render: see _with_nonce).
_NONCE: contextvars.ContextVar[str] = contextvars.ContextVar("llmmath_csp_nonce", default="")
NBGRADER_TEMPLATES = str(Path(handlers.template_path).resolve())
INLINE_HANDLERS = ("toggle_name(true);", "toggle_name(false);", "toggleAllNames()")
SCRIPT_TAG = re.compile(r"<script(?=[\s>])")
# The feedback macro's own policy (grading/nbconvert/feedback/mathjax.html.j2): the header's
# replaces it here, and two policies would both have to pass.
META_POLICY = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>')


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


def policy(nonce: str) -> str:
    handlers_allowed = " ".join(_hash(source) for source in INLINE_HANDLERS)
    return "; ".join(
        [
            f"script-src 'nonce-{nonce}' 'strict-dynamic' 'unsafe-hashes' {handlers_allowed}",
            "object-src 'none'",
            "base-uri 'self'",
            "frame-ancestors 'none'",
        ]
    )


class NonceLoader(BaseLoader):
    """Another loader's templates, with ``nonce="..."`` added to each ``<script`` tag of the
    templates under ``owned`` (nbgrader's formgrader templates, the course's grading/nbconvert/)."""

    def __init__(self, inner: BaseLoader, owned: tuple[str, ...]) -> None:
        self.inner, self.owned = inner, owned

    def get_source(self, environment: Any, template: str) -> Any:
        source, filename, uptodate = self.inner.get_source(environment, template)
        if filename and str(Path(filename).resolve()).startswith(self.owned):
            source = SCRIPT_TAG.sub('<script nonce="{{ llmmath_csp_nonce() }}"', source)
            source = META_POLICY.sub("", source)
        return source, filename, uptodate


def _guard(environment: Any, owned: tuple[str, ...]) -> None:
    if not isinstance(environment.loader, NonceLoader):
        environment.loader = NonceLoader(environment.loader, owned)
        environment.globals["llmmath_csp_nonce"] = _NONCE.get
        environment.cache = None  # templates compiled before the loader changed: none kept


def _nonce(handler: Any) -> str:
    if not getattr(handler, "_llmmath_nonce", ""):
        handler._llmmath_nonce = secrets.token_urlsafe(18)
    return str(handler._llmmath_nonce)


def _patch_formgrader(course_templates: str) -> None:
    owned = (NBGRADER_TEMPLATES, course_templates)
    base.BaseHandler.content_security_policy = property(lambda self: policy(_nonce(self)))
    original_render = base.BaseHandler.render

    def render(self: Any, name: str, **ns: Any) -> str:
        _guard(self.settings["nbgrader_jinja2_env"], owned)
        token = _NONCE.set(_nonce(self))
        try:
            return str(original_render(self, name, **ns))
        finally:
            _NONCE.reset(token)

    base.BaseHandler.render = render
    original_get = handlers.SubmissionHandler.get

    def submission_get(self: Any, *args: Any, **kwargs: Any) -> Any:
        _guard(self.exporter.environment, owned)
        token = _NONCE.set(_nonce(self))
        try:
            return original_get(self, *args, **kwargs)
        finally:
            _NONCE.reset(token)

    handlers.SubmissionHandler.get = submission_get


def _log(root: Path, assignment: str, line: str) -> None:
    log = root / "feedback" / f".releases-{assignment}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    with log.open("a") as fh:
        fh.write(f"{when}\t{getpass.getuser()}\t{line}\n")


def _gated(nbgrader_handler: type, action: str) -> type:
    """nbgrader's feedback button handler, run only when the release gate is open; logged."""

    class Gated(nbgrader_handler):  # type: ignore[misc, valid-type]
        @web.authenticated
        @base.check_xsrf
        @base.check_notebook_dir
        def post(self, assignment_id: str, student_id: str | None = None) -> None:
            from llmmath_course.instructor.review import open_review

            root = Path(self.coursedir.root)
            who = student_id or "every student"
            waiting = open_review(root, assignment_id)
            if waiting:
                _log(root, assignment_id, f"REFUSED formgrader {action} for {who}: review open")
                message = (
                    f"{action} refused: review is not done ({len(waiting)} open). Grade by hand, "
                    "review each flag (instructor.py review), then release with "
                    f"instructor.py release-feedback {assignment_id}.\n" + "\n".join(waiting)
                )
                # 200 with success false: the formgrader's dialog shows the error text.
                self.write(json.dumps({"success": False, "error": message, "log": ""}))
                return
            _log(root, assignment_id, f"formgrader {action} for {who}: review done")
            args = (assignment_id,) if student_id is None else (assignment_id, student_id)
            super().post(*args)

    Gated.__name__ = f"Gated{nbgrader_handler.__name__}"
    return Gated


GATED = [
    (r"/formgrader/api/assignment/([^/]+)/generate_feedback",
     apihandlers.GenerateAllFeedbackHandler, "generate feedback"),
    (r"/formgrader/api/assignment/([^/]+)/release_feedback",
     apihandlers.ReleaseAllFeedbackHandler, "release feedback"),
    (r"/formgrader/api/assignment/([^/]+)/([^/]+)/generate_feedback",
     apihandlers.GenerateFeedbackHandler, "generate feedback"),
    (r"/formgrader/api/assignment/([^/]+)/([^/]+)/release_feedback",
     apihandlers.ReleaseFeedbackHandler, "release feedback"),
]  # fmt: skip


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "llmmath_formgrader_ext"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    web_app = server_app.web_app
    course_templates = str((Path(server_app.root_dir) / "grading" / "nbconvert").resolve())
    _patch_formgrader(course_templates)
    rules = [
        (url_path_join(web_app.settings["base_url"], pattern), _gated(handler, action))
        for pattern, handler, action in GATED
    ]
    web_app.add_handlers(".*$", rules)  # tornado puts them last but one (before its wildcard):
    # move them ahead of nbgrader's own routes for the same URLs, whichever loaded first.
    web_app.default_router.rules.insert(0, web_app.default_router.rules.pop(-2))
    server_app.log.info("llmmath formgrader guard: CSP with nonces, feedback buttons gated")

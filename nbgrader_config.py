"""nbgrader settings for the LLM Math course (nbgrader 0.9.6).

Graded notebooks are written once, in ``solutions/<assignment>/`` (the nbgrader source, with
solutions and hidden tests); ``exercises/<assignment>/`` is the student version that
``nbgrader generate_assignment`` writes from it. Regenerate it with ``python scripts/release.py``.
Run nbgrader from the repository root with the environment's ``bin/`` on PATH: the gradebook
shells out to ``alembic``.
"""

import sys
from pathlib import Path

import nbgrader
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import ClearHiddenTests, GetGrades

c = get_config()  # noqa: F821  (traitlets injects get_config into config files)

c.CourseDirectory.course_id = "llmmath"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
# The gradebook stays at nbgrader's default, sqlite:///<root>/gradebook.db, where <root> is the
# directory nbgrader runs in (the repository root; gradebook.db is gitignored).
# submitted/, autograded/ and feedback/ also sit at the root and are gitignored.

# Per cell: an infinite loop in a submission stops here, scores 0, and grading goes on.
# nbgrader's Execute preprocessor is a subclass of ExecutePreprocessor, so it reads this.
# The slowest cell of any solution takes 0.5 s (importing matplotlib); 10 s leaves room for a
# loaded grading machine, and a spinning loop burns a core for no longer than that.
c.ExecutePreprocessor.timeout = 10

# Feedback is rendered from the autograded notebook, in which the hidden tests were restored;
# strip them again so that students do not see them. (A failing hidden test would still print
# its source lines in the traceback; each hidden block switches the kernel's traceback mode to
# "Minimal" so that only the assert message, which never holds the answer, is shown.)
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]

# The feedback page is nbgrader's "feedback" template, and the formgrader's pages its
# "formgrade" template, except for their mathjax() macro: the one in grading/nbconvert/feedback/
# (grading/nbconvert/formgrade/ links to it) is found first and loads the course's vendored
# MathJax by a relative URL instead of a CDN, so the maths renders offline and each feedback
# file stays small (see that template). The formgrader reads this file too: its own templates
# stay on the list, after ours. __file__ is this file: grading/ sits next to it in the course.
_templates = Path(__file__).resolve().parent / "grading" / "nbconvert"
c.HTMLExporter.extra_template_basedirs = [
    str(_templates),
    str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
]
# Submissions are untrusted. Before the formgrader or a feedback page shows one, nbconvert's
# SanitizeHTML cleans it (bleach): the HTML in Markdown answers and in HTML outputs loses every
# script, event handler (onerror=...) and unknown tag, and outputs of any other rich type (SVG,
# JavaScript, widgets) go, leaving their text/plain. nbgrader's templates render Markdown cells
# without the exporter's own sanitize_html (set too, for the outputs), hence the preprocessor.
# And the page's own scripts are the only ones a browser runs: grading/llmmath_csp.py
# (feedback) and hub/llmmath_formgrader_ext.py (the hub's formgrader) send a CSP.
c.HTMLExporter.preprocessors = ["nbconvert.preprocessors.sanitize.SanitizeHTML"]
c.HTMLExporter.sanitize_html = True

# The course's additions to nbgrader (grading/llmmath_nbgrader.py, next to this file): collect
# refuses a submission whose files are not owned by the OS user of the student it names
# (nbgrader only warns); the hidden tests' asserts are evaluated in the grading process on the
# values the student's kernel reports, never in the kernel, where a student's code could have
# replaced what they call; release leaves an existing exchange root's mode alone (the hub's is
# the class group's, 1770, not 777). A copy of this file without grading/ beside it (a
# student's, which only validates) runs nbgrader unchanged; scripts/instructor.py refuses to
# grade with it.
_plugins = Path(__file__).resolve().parent / "grading"
if (_plugins / "llmmath_nbgrader.py").exists():
    if str(_plugins) not in sys.path:
        sys.path.insert(0, str(_plugins))
    from llmmath_nbgrader import (
        CheckHiddenTests,
        KeepRootRelease,
        OwnerCheckedCollect,
        SandboxedExecute,
        SplitHiddenTests,
    )
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import (
        AssignLatePenalties,
        CheckCellMetadata,
        IgnorePattern,
        LimitOutput,
        SaveAutoGrades,
    )

    c.ExchangeFactory.collect = OwnerCheckedCollect
    # The hashes in a feedback page's Content-Security-Policy (grading/nbconvert/feedback/).
    c.HTMLExporter.filters = {"csp_sha256": "llmmath_csp.csp_sha256"}
    # An exchange root that exists keeps its mode (nbgrader would make it 777 at each release).
    c.ExchangeFactory.release_assignment = KeepRootRelease
    # nbgrader 0.9.6's list, with the hidden tests split off before Execute and checked after,
    # and Execute's kernels in the grading sandbox (SandboxedExecute): the formgrader's Autograde
    # button and `nbgrader autograde` read this list too, not only scripts/instructor.py.
    c.Autograde.autograde_preprocessors = [
        SplitHiddenTests,
        SandboxedExecute,
        CheckHiddenTests,
        IgnorePattern,
        ClearMetadataPreprocessor,
        LimitOutput,
        SaveAutoGrades,
        AssignLatePenalties,
        CheckCellMetadata,
    ]

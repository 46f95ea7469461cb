"""nbgrader's plumbing for one course root: its config and API, the command line, the
submissions, the autograde journal, the exchange and the gradebook's simplest reads."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

BIN = str(Path(sys.executable).parent)
# The repository (or, on the hub, the instructor's course root holding scripts/llmmath_course).
REPO = Path(__file__).resolve().parents[3]
# nbgrader_config.py points generate_feedback here; the rubric page uses its MathJax too.
FEEDBACK_TEMPLATE = REPO / "grading" / "nbconvert" / "feedback"
# The course's pinned MathJax (scripts/vendor_js.py). Feedback pages load one shared copy of it
# from feedback/mathjax/ by a relative URL (see FEEDBACK_TEMPLATE's mathjax.html.j2).
MATHJAX = REPO / "book" / "_vendor" / "mathjax" / "tex-svg.js"


def env_path() -> None:
    """Put this interpreter's ``bin/`` on PATH: the gradebook shells out to alembic there."""
    if BIN not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([BIN, os.environ.get("PATH", "")])


def course_config(root: Path) -> Any:
    """The course's ``nbgrader_config.py`` as a traitlets Config (empty if there is none)."""
    from traitlets.config.loader import Config, PyFileConfigLoader

    if (root / "nbgrader_config.py").exists():
        return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    return Config()


def make_api(root: Path, overrides: dict[str, dict[str, Any]] | None = None) -> Any:
    """nbgrader's API for the course at ``root``, with its ``nbgrader_config.py``."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    env_path()
    config = course_config(root)
    for section, values in (overrides or {}).items():
        for key, value in values.items():
            config[section][key] = value
    config.CourseDirectory.root = str(root)
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def read_notebook(path: Path) -> Any:
    """The notebook at ``path`` (nbformat 4); nbformat raises on a file that is not one."""
    import nbformat

    return nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]  # untyped


def gradebook(root: Path) -> Any:
    """nbgrader's ``Gradebook`` of the course at ``root`` (a context manager)."""
    from nbgrader.api import Gradebook

    api = make_api(root)
    return Gradebook(api.coursedir.db_url, api.coursedir.course_id)


def nbgrader(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the nbgrader command line in ``root``; exit with its log if it fails."""
    env_path()
    command = [sys.executable, "-m", "nbgrader", *args]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"nbgrader {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def plural(n: int, noun: str) -> str:
    """``1 flag``, ``2 flags``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def quiet_warnings() -> None:
    """Silence the library warnings a grading run would print for every student.

    nbgrader 0.9.6 trips SQLAlchemy's autoflush warning for each new student (three times), and
    ipykernel warns that it runs over TCP for each kernel. Neither is about the submission.
    """
    import warnings

    warnings.filterwarnings("ignore", message=r"Object of type <\w+> not in session")
    warnings.filterwarnings("ignore", module="sqlalchemy")


# ---- submissions and the autograde journal ---------------------------------------------------
def submitted_students(root: Path, assignment: str) -> list[str]:
    """The students with a folder for ``assignment`` in submitted/, sorted."""
    return sorted(p.parent.name for p in (root / "submitted").glob(f"*/{assignment}") if p.is_dir())


def submission_stamp(root: Path, student: str, assignment: str) -> str:
    """The submission's timestamp.txt (written by collect), else its newest file's mtime."""
    folder = root / "submitted" / student / assignment
    stamp = folder / "timestamp.txt"
    if stamp.exists():
        return stamp.read_text().strip()
    return str(max((p.stat().st_mtime_ns for p in folder.rglob("*")), default=0))


def journal_path(root: Path, assignment: str) -> Path:
    # A dotfile: nbgrader globs student folders with "*", which skips it.
    return root / "autograded" / f".journal-{assignment}.tsv"


def read_journal(root: Path, assignment: str) -> dict[str, str]:
    """The submission stamp each journalled student was graded at."""
    path = journal_path(root, assignment)
    done: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) == 2:  # a line cut short by a kill has no tab or no newline yet
                done[parts[0]] = parts[1]
    return done


def append_journal(root: Path, assignment: str, student: str, stamp: str) -> None:
    """Journal one graded student, on disk before the next one starts (a kill loses nothing)."""
    path = journal_path(root, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(f"{student}\t{stamp}\n")
        fh.flush()
        os.fsync(fh.fileno())


# ---- the gradebook and the exchange --------------------------------------------------------
def in_gradebook(root: Path, assignment: str) -> bool:
    """Whether the gradebook records ``assignment``."""
    from nbgrader.api import MissingEntry

    with gradebook(root) as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            return False
    return True


def ensure_assignment(root: Path, assignment: str) -> None:
    """Record the assignment (with its hidden tests) in the gradebook if it is not there yet."""
    if not in_gradebook(root, assignment):
        nbgrader(root, "generate_assignment", assignment, "--force")


def scores(root: Path, assignment: str) -> dict[str, tuple[float, float]]:
    """(score, max_score) for each student with a submission, from the gradebook."""
    out = {}
    with gradebook(root) as gb:
        for submission in gb.assignment_submissions(assignment):
            out[submission.student.id] = (submission.score, submission.max_score)
    return out


def exchange_inbound(root: Path) -> Path:
    """The exchange's inbound folder of this course (where students' submissions wait)."""
    api = make_api(root)
    exchange = api.config.Exchange.get("root", "/srv/nbgrader/exchange")
    return Path(exchange) / str(api.coursedir.course_id) / "inbound"


def collect(root: Path, assignment: str) -> None:
    """``nbgrader collect --update``; says which submissions it refused (see refused())."""
    result = nbgrader(root, "collect", assignment, "--update")
    print("collected submissions from the exchange", flush=True)
    for line in (result.stdout + result.stderr).splitlines():
        if "REFUSED" in line:
            print(line[line.index("REFUSED") :], flush=True)


def refused(root: Path, assignment: str) -> list[dict[str, str]]:
    """Submissions collect refused (grading/llmmath_nbgrader.py): each one's inbound folder,
    the student it names and the problem (files not owned by that student's OS user)."""
    path = root / "submitted" / f".refused-{assignment}.tsv"
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def export(root: Path, to: str = "grades.csv") -> Path:
    """``nbgrader export`` to ``to`` in the course root."""
    nbgrader(root, "export", f"--to={to}")
    print(f"grades exported to {to}", flush=True)
    return root / to

"""The instructor's grading steps, wrapping nbgrader (which does all the grading itself).

Run from the course root (the folder with ``nbgrader_config.py``), environment ``bin/`` on PATH:

    python scripts/instructor.py grade roofline -j 4   # collect, autograde, grades.csv, report
    python scripts/instructor.py release-feedback roofline   # after hand grading and review
    python scripts/instructor.py regrade roofline -j 4 # after fixing a test: everyone again
    python scripts/instructor.py autograde roofline -j 2   # autograde only, two processes
    python scripts/instructor.py export                # nbgrader export -> grades.csv
    python scripts/instructor.py report roofline       # reports/roofline/report.md + scores.png

``grade`` never shows students anything: feedback is generated and released only by
``release-feedback``, from the final scores (hand grades and overrides included).

``autograde`` calls nbgrader's own ``NbGraderAPI.autograde`` once per student, in ``--jobs``
worker processes, and prints one line per graded submission and a summary. Each student's kernel
is forked from a pristine pre-imported process (scripts/forkkernel.py; ``--kernels fresh`` starts
nbgrader's usual ``python -m ipykernel_launcher`` instead). Each finished student is appended
to a journal (``autograded/.journal-<assignment>.tsv``, with the submission's timestamp), so a
run that is killed part way (even by SIGKILL) is simply run again: students in the journal are
skipped, every other one is regraded with ``--force`` (which clears any half-written output),
and the gradebook keeps one row per student and assignment. A new submission from a student
(a later timestamp) is regraded.

``report`` lists first what needs a human's review: submissions collect refused (not owned by
the student they name), submissions nbgrader could not grade (corrupt notebook, kernel death),
missing or edited test cells, and code that looks like it tampers with the checking machinery
(monkey-patching modules such as ``math``, rebinding builtins, ``setattr``/``exec``/
``get_ipython()``). That last flag is a heuristic, easy to get round, and it protects nothing:
the hidden tests' asserts are evaluated outside the student's kernel
(grading/llmmath_nbgrader.py), so a patched ``math.isclose`` gains nothing. Hand grading (the
reflections) is counted and listed on its own.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import concurrent.futures
import csv
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BIN = str(Path(sys.executable).parent)
REPO = Path(__file__).resolve().parent.parent
# nbgrader_config.py points generate_feedback here; the rubric page uses its MathJax too.
FEEDBACK_TEMPLATE = REPO / "grading" / "nbconvert" / "feedback"
# The course's pinned MathJax (scripts/vendor_js.py). Feedback pages load one shared copy of it
# from feedback/mathjax/ by a relative URL (see FEEDBACK_TEMPLATE's mathjax.html.j2).
MATHJAX = REPO / "book" / "_vendor" / "mathjax" / "tex-svg.js"
# Names whose use in a student's code cell is flagged for review.
SUSPECT_CALLS = {
    "setattr",
    "delattr",
    "exec",
    "eval",
    "compile",
    "__import__",
    "globals",
    "vars",
    "locals",
    "get_ipython",
    "reload",
}
SUSPECT_NAMES = set(dir(builtins)) | {"get_ipython", "__builtins__", "In", "Out", "exit", "quit"}


# ---- nbgrader plumbing -------------------------------------------------------------------
def _env_path() -> None:
    # The gradebook shells out to alembic, which sits next to this interpreter.
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

    _env_path()
    config = course_config(root)
    for section, values in (overrides or {}).items():
        for key, value in values.items():
            config[section][key] = value
    config.CourseDirectory.root = str(root)
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def nbgrader(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the nbgrader command line in ``root``; exit with its log if it fails."""
    _env_path()
    command = [sys.executable, "-m", "nbgrader", *args]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"nbgrader {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def submitted_students(root: Path, assignment: str) -> list[str]:
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
    path = journal_path(root, assignment)
    done: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) == 2:  # a line cut short by a kill has no tab or no newline yet
                done[parts[0]] = parts[1]
    return done


def append_journal(root: Path, assignment: str, student: str, stamp: str) -> None:
    path = journal_path(root, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(f"{student}\t{stamp}\n")
        fh.flush()
        os.fsync(fh.fileno())


# ---- autograde in worker processes ----------------------------------------------------------
_WORKER_API: Any = None
# Failures of the machine, not of the submission: a gradebook write that collided with another
# process, or a kernel too slow to start on a loaded machine. Retried once, serially, at the end.
_TRANSIENT = ("database is locked", "Kernel didn't respond")
KERNELS = ("fork", "fresh")


def quiet_warnings() -> None:
    """Silence the library warnings a grading run would print for every student.

    nbgrader 0.9.6 trips SQLAlchemy's autoflush warning for each new student (three times), and
    ipykernel warns that it runs over TCP for each kernel. Neither is about the submission.
    """
    import warnings

    warnings.filterwarnings("ignore", message=r"Object of type <\w+> not in session")
    warnings.filterwarnings("ignore", module="sqlalchemy")


def require_hidden_checks(root: Path) -> list[Any]:
    """The course's autograde steps; exit unless they check hidden tests outside the kernel
    (grading/llmmath_nbgrader.py, switched on by nbgrader_config.py)."""
    from nbgrader.converters import Autograde

    steps = list(Autograde(config=course_config(root)).autograde_preprocessors)
    if "CheckHiddenTests" not in [getattr(step, "__name__", str(step)) for step in steps]:
        sys.exit(
            f"{root / 'nbgrader_config.py'} does not check the hidden tests outside the "
            "students' kernels: copy grading/ (llmmath_nbgrader.py) next to it"
        )
    return steps


def _grading_config(root: Path, timeout: int | None, kernels: str) -> dict[str, dict[str, Any]]:
    from nbgrader.preprocessors import Execute

    overrides: dict[str, dict[str, Any]] = {}
    if timeout:
        overrides["Execute"] = {"timeout": timeout}
    steps = require_hidden_checks(root)
    if kernels == "fork":
        import fastgrade
        from forkkernel import fork_execute_class

        fastgrade.install()
        fork_execute = fork_execute_class()
        steps = [fork_execute if step is Execute else step for step in steps]
        overrides["Autograde"] = {"autograde_preprocessors": steps}
    return overrides


def _worker_init(root: str, timeout: int | None, kernels: str = "fork") -> None:
    global _WORKER_API
    quiet_warnings()
    _WORKER_API = make_api(Path(root), _grading_config(Path(root), timeout, kernels))


def _worker_grade(assignment: str, student: str) -> tuple[str, bool, str, float]:
    start = time.perf_counter()
    result = _WORKER_API.autograde(assignment, student, force=True, create=True)
    log = result.get("log", "") + result.get("error", "")
    return student, bool(result["success"]), log, time.perf_counter() - start


def scores(root: Path, assignment: str) -> dict[str, tuple[float, float]]:
    """(score, max_score) for each student with a submission, from the gradebook."""
    from nbgrader.api import Gradebook

    api = make_api(root)
    out = {}
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
        for submission in gb.assignment_submissions(assignment):
            out[submission.student.id] = (submission.score, submission.max_score)
    return out


def autograde(
    root: Path,
    assignment: str,
    jobs: int = 1,
    timeout: int | None = None,
    force: bool = False,
    kernels: str = "fork",
) -> list[str]:
    """Autograde every submission of ``assignment`` not yet in the journal; return failures."""
    if not (root / "solutions" / assignment).is_dir() and not _in_gradebook(root, assignment):
        sys.exit(f"unknown assignment {assignment!r}: no solutions/{assignment}/ in {root}")
    students = submitted_students(root, assignment)
    done = {} if force else read_journal(root, assignment)
    stamps = {s: submission_stamp(root, s, assignment) for s in students}
    todo = [s for s in students if done.get(s) != stamps[s]]
    print(
        f"autograde {assignment}: {len(students)} submissions, {len(students) - len(todo)} "
        f"already graded, {len(todo)} to grade with {jobs} process(es)",
        flush=True,
    )
    if not todo:
        return []
    _ensure_assignment(root, assignment)
    require_hidden_checks(root)
    failed: list[str] = []
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_worker_init,
        initargs=(str(root), timeout, kernels),
    ) as pool:
        futures = [pool.submit(_worker_grade, assignment, s) for s in todo]
        retry: list[str] = []
        for count, future in enumerate(concurrent.futures.as_completed(futures), 1):
            student, ok, log, seconds = future.result()
            if not ok and any(marker in log for marker in _TRANSIENT):
                retry.append(student)  # not the student's fault: run it again, alone
                continue
            _record(root, assignment, student, stamps[student], ok, log, failed)
            elapsed = time.perf_counter() - start
            print(
                f"[{count}/{len(todo)}] {student}: {'graded' if ok else 'NOT GRADED'} in "
                f"{seconds:.1f} s ({elapsed:.0f} s elapsed, "
                f"{elapsed / count * (len(todo) - count):.0f} s to go)",
                flush=True,
            )
    if retry:
        _worker_init(str(root), timeout, kernels)
        for student in retry:
            student, ok, log, seconds = _worker_grade(assignment, student)
            _record(root, assignment, student, stamps[student], ok, log, failed)
            print(f"[retry] {student}: {'graded' if ok else 'NOT GRADED'} in {seconds:.1f} s")
    wall = time.perf_counter() - start
    print(
        f"autograded {len(todo) - len(failed)} of {len(todo)} in {wall:.1f} s"
        + (f"; nbgrader could not grade {len(failed)}: {', '.join(failed)}" if failed else ""),
        flush=True,
    )
    return failed


def _record(
    root: Path, assignment: str, student: str, stamp: str, ok: bool, log: str, failed: list[str]
) -> None:
    # A failed submission is journalled too: it is in the gradebook with no autograded score
    # and the report flags it; rerunning with --force tries it again.
    append_journal(root, assignment, student, stamp)
    if not ok:
        failed.append(student)
        errors = root / "autograded" / f".errors-{assignment}"
        errors.mkdir(parents=True, exist_ok=True)
        (errors / f"{student}.log").write_text(log)


def _in_gradebook(root: Path, assignment: str) -> bool:
    from nbgrader.api import Gradebook, MissingEntry

    api = make_api(root)
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            return False
    return True


def _ensure_assignment(root: Path, assignment: str) -> None:
    """Record the assignment (with its hidden tests) in the gradebook if it is not there yet."""
    if not _in_gradebook(root, assignment):
        nbgrader(root, "generate_assignment", assignment, "--force")


# ---- regrading, keeping hand grades -------------------------------------------------------
HandGrade = tuple[float | None, float | None, bool]  # manual score, extra credit, needs review


def hand_grades(root: Path, assignment: str) -> dict[tuple[str, str, str], HandGrade]:
    """Every grade a person set (a hand score or an override), by (student, notebook, cell)."""
    from nbgrader.api import Gradebook

    api = make_api(root)
    kept = {}
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
        for submission in gb.assignment_submissions(assignment):
            for nb in submission.notebooks:
                for grade in nb.grades:
                    if grade.manual_score is not None or grade.extra_credit:
                        key = (submission.student.id, nb.name, grade.name)
                        kept[key] = (
                            grade.manual_score,
                            grade.extra_credit,
                            grade.needs_manual_grade,
                        )
    return kept


def restore_hand_grades(
    root: Path, assignment: str, kept: dict[tuple[str, str, str], HandGrade]
) -> None:
    """Put back what a person set, and whether it still needed review, after an autograde."""
    from nbgrader.api import Gradebook, MissingEntry

    api = make_api(root)
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
        for (student, notebook, cell), (manual, extra, needs_review) in kept.items():
            try:
                grade = gb.find_grade(cell, notebook, assignment, student)
            except MissingEntry:  # the cell is gone from the regenerated assignment
                continue
            grade.manual_score, grade.extra_credit = manual, extra
            grade.needs_manual_grade = needs_review
        gb.db.commit()


def regrade(
    root: Path, assignment: str, jobs: int, timeout: int | None = None, kernels: str = "fork"
) -> list[str]:
    """Record the assignment again from solutions/ and autograde everyone, keeping hand grades."""
    kept = hand_grades(root, assignment)
    nbgrader(root, "generate_assignment", assignment, "--force")
    print(f"regrade {assignment}: assignment recorded again from solutions/", flush=True)
    failed = autograde(root, assignment, jobs, timeout, force=True, kernels=kernels)
    restore_hand_grades(root, assignment, kept)
    print(f"kept {len(kept)} hand grades and overrides, with their reviewed state", flush=True)
    return failed


# ---- feedback, export, report ---------------------------------------------------------------
def release_feedback(root: Path, assignment: str, force: bool = False) -> None:
    """Feedback HTML from the final scores (hand grades included), released to the exchange;
    refused while review is open (see open_review) unless ``force``. Each release is logged in
    feedback/.releases-<assignment>.log, a forced one with what was still open."""
    import datetime
    import getpass

    waiting = open_review(root, assignment)
    hand = sum(1 for line in waiting if line.startswith("to grade by hand"))
    summary = (
        f"{_count(hand, 'answer')} to grade by hand, {_count(len(waiting) - hand, 'flag')} open"
    )
    if waiting and not force:
        sys.exit(
            f"release-feedback {assignment} refused: review is not done ({summary}).\n  "
            + "\n  ".join(waiting)
            + "\nGrade by hand in the formgrader; read each flagged submission, then mark it "
            f"reviewed: {commands(root, assignment)['review']}. To release anyway: "
            f"{commands(root, assignment)['force']}, which is logged."
        )
    log = root / "feedback" / f".releases-{assignment}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    with log.open("a") as fh:
        state = f"FORCED with {summary}" if waiting else "review done"
        fh.write(f"{when}\t{getpass.getuser()}\t{state}\n")
        fh.writelines(f"{when}\t\t{line}\n" for line in waiting)
    if waiting:
        print(f"FORCED: releasing with review open ({summary}); logged in {log}", flush=True)
    api = make_api(root)
    result = api.generate_feedback(assignment, force=True)
    if not result["success"]:
        print(result.get("log", "") + result.get("error", ""))
    folders = sorted((root / "feedback").glob(f"*/{assignment}"))
    shared = root / "feedback" / "mathjax" / MATHJAX.name
    shared.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(MATHJAX, shared)  # what each feedback/<student>/<assignment>/ page loads
    print(f"feedback written for {len(folders)} to feedback/*/{assignment}/", flush=True)
    if not exchange_inbound(root).exists():
        return
    # release_feedback stops at the first feedback without the exchange's timestamp.txt and
    # submission_secret.txt (a submission put into submitted/ by hand): leave those out.
    by_hand = [
        f.parent.name
        for f in folders
        if not ((f / "timestamp.txt").exists() and (f / "submission_secret.txt").exists())
    ]
    args = ["release_feedback", assignment]
    if by_hand:
        args.append(f"--CourseDirectory.student_id_exclude={','.join(by_hand)}")
    nbgrader(root, *args)
    print(f"feedback released to the exchange for {len(folders) - len(by_hand)}", flush=True)
    if by_hand:
        print(f"not released (not submitted through the exchange): {', '.join(by_hand)}")


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


def exchange_inbound(root: Path) -> Path:
    api = make_api(root)
    exchange = api.config.Exchange.get("root", "/srv/nbgrader/exchange")
    return Path(exchange) / api.coursedir.course_id / "inbound"


def export(root: Path, to: str = "grades.csv") -> Path:
    nbgrader(root, "export", f"--to={to}")
    print(f"grades exported to {to}", flush=True)
    return root / to


@dataclass
class Row:
    student: str
    score: float | None
    max_score: float
    cells: dict[str, float | None] = field(default_factory=dict)  # final: overrides count
    flags: list[str] = field(default_factory=list)  # for review: something may be wrong
    hand_set: set[str] = field(default_factory=set)  # cells whose score a person set
    to_grade: list[str] = field(default_factory=list)  # answers still waiting for a person
    unscored: list[str] = field(default_factory=list)  # other cells with no score (a review)
    formgrader_flagged: bool = False  # a notebook of it flagged in the formgrader


def tampering(source: str) -> list[str]:
    """What in one code cell reaches into the checking machinery (empty if nothing)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError:
        return []  # it cannot run either: the tests fail on their own
    modules = {"math", "builtins", "sys", "numpy", "np", "IPython"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            base = target
            while isinstance(base, ast.Attribute | ast.Subscript):
                base = base.value
            if target is not base and (
                (isinstance(base, ast.Name) and base.id in modules | SUSPECT_NAMES)
                or isinstance(base, ast.Call)
            ):
                found.append(f"changes {ast.unparse(target)}")
            elif isinstance(target, ast.Name) and target.id in SUSPECT_NAMES:
                found.append(f"rebinds {target.id}")
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in SUSPECT_NAMES:
            found.append(f"rebinds {node.name}")
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in SUSPECT_CALLS:
                found.append(f"calls {name}()")
    return sorted(set(found))


def report_rows(root: Path, assignment: str) -> tuple[list[Row], list[str]]:
    """Each submission's final scores, flags and answers waiting for a person; the columns."""
    import nbformat
    from nbgrader.api import Gradebook

    api = make_api(root)
    rows: list[Row] = []
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
        grade_cells = [
            (c.name, c.cell_type) for nb in gb.find_assignment(assignment).notebooks
            for c in nb.grade_cells
        ]  # fmt: skip
        test_cells = [name for name, kind in grade_cells if kind == "code"]
        # Answers graded by hand by design: a grade cell that is also a solution cell.
        by_hand = {
            c.name for nb in gb.find_assignment(assignment).notebooks for c in nb.solution_cells
        } & {name for name, _ in grade_cells}
        for submission in sorted(gb.assignment_submissions(assignment), key=lambda s: s.student.id):
            row = _row(submission, by_hand)
            _flag_grading(root, assignment, submission, row, test_cells)
            for nb in submission.notebooks:
                row.formgrader_flagged |= bool(nb.flagged)
                path = root / "submitted" / row.student / assignment / f"{nb.name}.ipynb"
                try:
                    student_nb = nbformat.read(path, as_version=4)
                except Exception:  # any unreadable file is flagged above, never raised
                    continue
                locked = _locked_sources(root, api, assignment, nb.name)
                row.flags += _flag_cells(student_nb, locked)
            rows.append(row)
    return rows, [name for name, _ in grade_cells]


def report(root: Path, assignment: str, out: Path | None = None) -> Path:
    """Write reports/<assignment>/report.md, scores.png and flags.csv; return the report.
    Every submission with a flag not yet reviewed is flagged in the formgrader too."""
    from matplotlib.figure import Figure

    out = out or root / "reports" / assignment
    out.mkdir(parents=True, exist_ok=True)
    rows, columns = report_rows(root, assignment)
    forged = refused(root, assignment)
    flags = all_flags(root, assignment, rows, forged)
    done = read_reviewed(root, assignment)
    open_flags = [f for f in flags if f.key not in done]
    flag_in_formgrader(root, assignment, sorted({f.student for f in open_flags}), True)
    _plot(rows, assignment, out / "scores.png", Figure)
    rubric(root, assignment, out)
    path = out / "report.md"
    reviewed = {(f.student, f.text) for f in flags if f.key in done}
    text = _markdown(assignment, rows, columns, forged, reviewed)
    path.write_text(text, "utf-8")
    with (out / "flags.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "score", "max_score", "kind", "flag", "reviewed"])
        for entry in forged:
            flag = f"{entry['submission']}: {entry['problem']}"
            seen = (entry["student"], f"refused at collect: {flag}") in reviewed
            writer.writerow([entry["student"], "", "", "refused", flag, "yes" if seen else ""])
        for row in rows:
            for flag in row.flags:
                seen = "yes" if (row.student, flag) in reviewed else ""
                writer.writerow([row.student, row.score, row.max_score, "review", flag, seen])
            for cell in row.to_grade:
                writer.writerow(
                    [row.student, row.score, row.max_score, "hand", f"grade {cell}", ""]
                )
    reviews = sum(1 for row in rows if row.flags)
    hand = sum(len(row.to_grade) for row in rows)
    print(f"report written to {path}: {reviews} to review, {hand} to grade by hand", flush=True)
    if forged:
        print(f"REFUSED at collect: {_count(len(forged), 'submission')} (see the report)")
    return path


# ---- review: flags marked reviewed, and release gated on it ---------------------------------
@dataclass(frozen=True)
class Flag:
    """Something in one submission a person must look at. ``submission`` names which one (its
    timestamp, or a refused one's inbound folder), so a new submission's flags are new."""

    student: str
    submission: str
    text: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.student, self.submission, self.text)


REVIEWED_COLUMNS = ("student", "submission", "flag", "reviewed_at", "by", "note")


def reviewed_path(root: Path, assignment: str) -> Path:
    # Beside the submissions it is about; a dotfile, which nbgrader's globs skip.
    return root / "submitted" / f".reviewed-{assignment}.tsv"


def read_reviewed(root: Path, assignment: str) -> set[tuple[str, str, str]]:
    path = reviewed_path(root, assignment)
    if not path.exists():
        return set()
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return {(r["student"], r["submission"], r["flag"]) for r in rows}


def all_flags(
    root: Path, assignment: str, rows: list[Row], forged: list[dict[str, str]]
) -> list[Flag]:
    """The report's flags (refused submissions first), each tied to its submission."""
    flags = [
        Flag(
            e["student"], e["submission"], f"refused at collect: {e['submission']}: {e['problem']}"
        )
        for e in forged
    ]
    for row in rows:
        stamp = ""
        if (root / "submitted" / row.student / assignment).is_dir():
            stamp = submission_stamp(root, row.student, assignment)
        flags += [Flag(row.student, stamp, text) for text in row.flags]
    return flags


def flag_in_formgrader(root: Path, assignment: str, students: list[str], flagged: bool) -> None:
    """Set the formgrader's flag (its "flagged" column, and the flag button on a submission)
    on every notebook of these students' submissions."""
    from nbgrader.api import Gradebook, MissingEntry

    if not students:
        return
    api = make_api(root)
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
        for student in students:
            try:
                submission = gb.find_submission(assignment, student)
            except MissingEntry:  # a refused submission's student may have none
                continue
            for nb in submission.notebooks:
                nb.flagged = flagged
        gb.db.commit()


def review(root: Path, assignment: str, students: list[str], note: str = "") -> None:
    """Without students: list every flag, open or reviewed. With students: mark each of their
    open flags reviewed (and their submissions unflagged in the formgrader)."""
    import datetime
    import getpass

    rows, _ = report_rows(root, assignment)
    flags = all_flags(root, assignment, rows, refused(root, assignment))
    done = read_reviewed(root, assignment)
    if not students:
        for flag in flags:
            state = "reviewed" if flag.key in done else "OPEN"
            print(f"{state:8}  {flag.student}: {flag.text}")
        print(f"{sum(f.key not in done for f in flags)} open of {len(flags)} flags", flush=True)
        return
    unknown = [s for s in students if not any(f.student == s for f in flags)]
    if unknown:
        sys.exit(f"no flag to review for {', '.join(unknown)} in {assignment}")
    path = reviewed_path(root, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    with path.open("a", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t")
        if new:
            writer.writerow(REVIEWED_COLUMNS)
        for flag in flags:
            if flag.student in students and flag.key not in done:
                writer.writerow([*flag.key, when, getpass.getuser(), note])
                print(f"reviewed  {flag.student}: {flag.text}")
    flag_in_formgrader(root, assignment, students, False)
    report(root, assignment)


def open_review(root: Path, assignment: str) -> list[str]:
    """What still waits for a person before feedback may go out, one line each (empty: none)."""
    rows, _ = report_rows(root, assignment)
    done = read_reviewed(root, assignment)
    flags = all_flags(root, assignment, rows, refused(root, assignment))
    lines = [f"flag not reviewed: {f.student}: {f.text}" for f in flags if f.key not in done]
    lines += [
        f"flagged in the formgrader: {row.student}"
        for row in rows
        if row.formgrader_flagged and not any(f.student == row.student for f in flags)
    ]
    lines += [f"to grade by hand: {row.student}: {cell}" for row in rows for cell in row.to_grade]
    return lines


def _row(submission: Any, by_hand: set[str]) -> Row:
    """A submission's final scores (a person's score, hand grade or override, wins), and the
    cells that wait for a person: answers graded by hand go to their own list; any other cell
    without a score (a deleted test, say) is something to review."""
    row = Row(submission.student.id, submission.score, submission.max_score)
    for nb in submission.notebooks:
        for grade in nb.grades:
            manual, auto = grade.manual_score, grade.auto_score
            row.cells[grade.name] = manual if manual is not None else auto
            if grade.manual_score is not None:
                row.hand_set.add(grade.name)
            if grade.needs_manual_grade:
                (row.to_grade if grade.name in by_hand else row.unscored).append(grade.name)
    return row


def _flag_grading(
    root: Path, assignment: str, submission: Any, row: Row, test_cells: list[str]
) -> None:
    auto = {g.name: g.auto_score for nb in submission.notebooks for g in nb.grades}
    graded = all(
        (root / "autograded" / row.student / assignment / f"{nb.name}.ipynb").exists()
        for nb in submission.notebooks
    )
    missing = [c for c in test_cells if auto.get(c) is None]
    if not graded:  # nothing in it to grade cell by cell: review it as a whole
        row.flags.append("not graded by nbgrader (corrupt notebook or kernel died)")
        row.to_grade = []
    elif len(missing) == len(test_cells):
        row.flags.append("no test cells found (empty or rebuilt notebook)")
    elif missing:
        row.flags.append(f"test cells deleted: {', '.join(missing)}")
    others = [c for c in row.unscored if c not in missing]
    if graded and others:  # e.g. an override a person has not confirmed
        row.flags.append(f"no score yet for {', '.join(others)} (score it by hand)")


def _flag_cells(student_nb: Any, locked: dict[str, str]) -> list[str]:
    flags = []
    for cell in student_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if grade_id in locked and cell.source != locked[grade_id]:
            flags.append(f"locked cell {grade_id} edited (nbgrader restored it)")
        if cell.cell_type == "code" and not meta.get("locked"):
            flags += [f"tampering suspected: {problem}" for problem in tampering(cell.source)]
    return flags


# ---- the graders' rubric --------------------------------------------------------------------
RUBRIC_NOTE = "For graders only: model answers and marking schemes. Never give this to students."


def rubric_parts(source: Path) -> list[tuple[str, str]]:
    """(prompt, model answer and marking) for each hand-graded answer cell of a source notebook."""
    import nbformat

    parts, prompt = [], ""
    for cell in nbformat.read(source, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("locked"):
            prompt = cell.source
        elif meta.get("grade") and meta.get("solution"):
            answer = cell.source.split("### BEGIN SOLUTION", 1)[-1]
            answer = answer.split("### END SOLUTION", 1)[0].strip()
            parts.append((prompt, answer))
    return parts


def rubric(root: Path, assignment: str, out: Path) -> Path | None:
    """reports/<assignment>/rubric.md and .html from solutions/ (None if nothing is hand-graded)."""
    from nbconvert.filters import markdown2html

    sections = []
    for source in sorted((root / "solutions" / assignment).glob("*.ipynb")):
        for prompt, answer in rubric_parts(source):
            sections.append(f"## {source.stem}\n\n{prompt}\n\n---\n\n{answer}\n")
    if not sections:
        return None
    text = f"# Rubric: {assignment}\n\n*{RUBRIC_NOTE}*\n\n" + "\n".join(sections)
    (out / "rubric.md").write_text(text, encoding="utf-8")
    mathjax = (FEEDBACK_TEMPLATE / "mathjax.html.j2").read_text(encoding="utf-8")
    config = mathjax[mathjax.index("<script>") : mathjax.index("</script>") + 9]
    script = MATHJAX.read_text(encoding="utf-8")  # one page for the graders: carried inline
    html = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Rubric: {assignment}</title>"
        "<style>body{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.5}"
        "hr{margin:1.5em 0}</style>"
        f"{config}<script>{script}</script></head><body>{markdown2html(text)}</body></html>"
    )
    path = out / "rubric.html"
    path.write_text(html, encoding="utf-8")
    return path


def _locked_sources(root: Path, api: Any, assignment: str, notebook: str) -> dict[str, str]:
    """The released source of each locked cell, by grade_id."""
    import nbformat

    release = root / api.coursedir.release_directory / assignment / f"{notebook}.ipynb"
    if not release.exists():
        return {}
    return {
        cell.metadata["nbgrader"]["grade_id"]: cell.source
        for cell in nbformat.read(release, as_version=4).cells
        if cell.metadata.get("nbgrader", {}).get("locked")
    }


def _plot(rows: list[Row], assignment: str, path: Path, figure: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    fig = figure(figsize=(6, 3.5))
    ax = fig.add_subplot()
    values = [row.score or 0.0 for row in rows]
    top = max((row.max_score for row in rows), default=1.0)
    ax.hist(values, bins=[x - 0.5 for x in range(int(top) + 2)], color="tab:blue", rwidth=0.9)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count of students
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(
        xlabel=f"score (of {top:g}; hand-graded points count once graded)",
        ylabel="students",
        title=f"{assignment}: {len(rows)} submissions",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _markdown(
    assignment: str,
    rows: list[Row],
    columns: list[str],
    forged: list[dict[str, str]],
    reviewed: set[tuple[str, str]],
) -> str:
    values = sorted(row.score or 0.0 for row in rows)
    lines = [f"# Grade report: {assignment}", ""]
    if forged:
        lines += [
            f"## Refused at collect: {_count(len(forged), 'submission')}",
            "",
            "Handed in under a student's name by another account (or holding a link): not "
            "collected, not graded; each stays in the exchange's inbound folder as evidence. "
            "The named student's own newest submission, if any, was collected instead.",
            "",
        ]
        for e in forged:
            flag = f"refused at collect: {e['submission']}: {e['problem']}"
            mark = " *(reviewed)*" if (e["student"], flag) in reviewed else ""
            lines += [f"- **{e['student']}**: `{e['submission']}`: {e['problem']}.{mark}"]
        lines += [""]
    if values:
        mean = sum(values) / len(values)
        median = values[len(values) // 2]
        lines += [
            f"{len(rows)} submissions; mean {mean:.2f}, median {median:g}, "
            f"max {values[-1]:g} of {rows[0].max_score:g}.",
            "",
        ]
    lines += ["![score distribution](scores.png)", ""]
    flagged = [row for row in rows if row.flags]
    lines += [f"## To review: {_count(len(flagged), 'submission')}", ""]
    lines += [
        "Something may be wrong with these: read the submission before trusting its score.",
        "",
    ]
    for row in flagged:
        also = f" Also to grade by hand: {', '.join(row.to_grade)}." if row.to_grade else ""
        seen = all((row.student, flag) in reviewed for flag in row.flags)
        mark = " *(reviewed)*" if seen else ""
        lines += [f"- **{row.student}** ({row.score:g}): {'; '.join(row.flags)}.{also}{mark}"]
    if flagged:
        lines += [
            "",
            "Each is flagged in the formgrader until marked reviewed: `python "
            f"scripts/instructor.py review {assignment} <student>`. `release-feedback` waits "
            "until every flag is reviewed and every answer graded.",
        ]
    lines += ["" if flagged else "Nothing.", ""]
    waiting = [row for row in rows if row.to_grade]
    count = sum(len(row.to_grade) for row in waiting)
    lines += [
        f"## To grade by hand: {_count(count, 'answer')} in {_count(len(waiting), 'submission')}",
        "",
    ]
    if waiting:
        by_cell: dict[str, list[str]] = {}
        for row in waiting:
            for cell in row.to_grade:
                by_cell.setdefault(cell, []).append(row.student)
        for cell, students in by_cell.items():
            lines += [f"- `{cell}` ({len(students)}): {', '.join(students)}"]
        lines += [
            "",
            "In JupyterLab: *Nbgrader* menu > *Formgrader* > *Manage Submissions*. Model answers "
            "and marking: [rubric.md](rubric.md) (graders only).",
        ]
    else:
        lines += ["Nothing."]
    lines += [
        "",
        "## Scores",
        "",
        "A score set by a person (hand grade or override) is marked *.",
        "",
    ]
    lines += ["| student | score | " + " | ".join(columns) + " |"]
    lines += ["|---" * (len(columns) + 2) + "|"]
    for row in rows:
        cells = [_cell_text(row, c) for c in columns]
        lines += [f"| {row.student} | {row.score:g} | " + " | ".join(cells) + " |"]
    return "\n".join(lines) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _cell_text(row: Row, cell: str) -> str:
    value = row.cells.get(cell)
    if value is None:
        return "—"
    return f"{value:g}*" if cell in row.hand_set else f"{value:g}"


# ---- the command line -----------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="course root (default: .)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("grade", "autograde", "regrade"):
        step = sub.add_parser(name)
        step.add_argument("assignment")
        step.add_argument("-j", "--jobs", type=int, default=1, help="autograde processes")
        step.add_argument("--timeout", type=int, help="seconds per cell (default: the config's)")
        step.add_argument(
            "--kernels", choices=KERNELS, default="fork",
            help="fork: each kernel forked from a pre-imported process (default); "
            "fresh: nbgrader's own, one new Python per student",
        )  # fmt: skip
        if name != "regrade":
            step.add_argument("--force", action="store_true", help="regrade every submission")
    for name in ("release-feedback", "feedback"):  # "feedback": its name before the split
        step = sub.add_parser(name)
        step.add_argument("assignment")
        step.add_argument(
            "--force", action="store_true",
            help="release although answers wait for hand grading or flags for review (logged)",
        )  # fmt: skip
    step = sub.add_parser("review", help="list the flags, or mark students' flags reviewed")
    step.add_argument("assignment")
    step.add_argument("students", nargs="*", help="mark every open flag of these reviewed")
    step.add_argument("--note", default="", help="what you found (kept with the review)")
    sub.add_parser("export").add_argument("--to", default="grades.csv")
    sub.add_parser("report").add_argument("assignment")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    quiet_warnings()
    if args.command in ("grade", "autograde"):
        if args.command == "grade" and exchange_inbound(root).exists():
            collect(root, args.assignment)
        autograde(root, args.assignment, args.jobs, args.timeout, args.force, args.kernels)
        if args.command == "grade":
            export(root)
            report(root, args.assignment)
            print(next_steps(root, args.assignment), flush=True)
    elif args.command == "regrade":
        regrade(root, args.assignment, args.jobs, args.timeout, args.kernels)
        export(root)
        report(root, args.assignment)
    elif args.command in ("release-feedback", "feedback"):
        release_feedback(root, args.assignment, args.force)
        export(root)
        report(root, args.assignment)
    elif args.command == "review":
        review(root, args.assignment, args.students, args.note)
    elif args.command == "export":
        export(root, args.to)
    elif args.command == "report":
        report(root, args.assignment)
    return 0


NEXT_STEPS = (
    "Students see nothing yet. Review the report (mark each flag reviewed: {review}), grade by "
    "hand in the formgrader, then: {release}"
)


def commands(root: Path, assignment: str) -> dict[str, str]:
    """The review and release commands as they exist here: make targets in a checkout of the
    repository, the script itself in a course root without the Makefile (``~/course`` on the
    hub, where the formgrader is the hub's Services > formgrader)."""
    if (root / "Makefile").exists():
        return {
            "review": f"make review ASSIGNMENT={assignment} STUDENT=<student>",
            "release": f"make release-feedback ASSIGNMENT={assignment}",
            "force": f"make release-feedback ASSIGNMENT={assignment} FORCE=1",
        }
    script = "python scripts/instructor.py"
    return {
        "review": f"{script} review {assignment} <student>",
        "release": f"{script} release-feedback {assignment}",
        "force": f"{script} release-feedback {assignment} --force",
    }


def next_steps(root: Path, assignment: str) -> str:
    """What to do after ``grade``, as commands that exist here (see commands)."""
    found = commands(root, assignment)
    return NEXT_STEPS.format(review=found["review"], release=found["release"])


if __name__ == "__main__":
    sys.exit(main())

"""The course's additions to nbgrader 0.9.6, switched on in ``nbgrader_config.py``.

``OwnerCheckedCollect`` (``c.ExchangeFactory.collect``): nbgrader's ``collect``, except that a
submission whose files are not all owned by the OS user of the student it names is refused: not
collected, listed in ``submitted/.refused-<assignment>.tsv`` (which the grade report shows) and
logged. nbgrader itself only warns ("cheating attempt?") and collects it anyway, so one student
could hand in work as another (``nbgrader submit --student=<someone else>``), replace their
submission and, holding that submission's secret, fetch the other student's feedback. A refused
submission stays in the exchange's inbound folder, as evidence; the named student's newest
genuine submission is collected instead. ``c.ExchangeCollect.check_owner = False`` switches the
check off (only where several students share one OS account, as the tests simulate them).

``KeepRootRelease`` (``c.ExchangeFactory.release_assignment``): nbgrader's release, without its
``chmod 777`` of an exchange root that exists (the hub's is the class's group's, mode 1770).

``SplitHiddenTests`` and ``CheckHiddenTests`` (around ``Execute`` in
``c.Autograde.autograde_preprocessors``): the hidden tests' ``assert`` statements are checked
in the grading process, never in the student's kernel. A student's notebook runs in its own
kernel, so whatever the hidden tests call there (``math.isclose``, ``abs``, IPython's
``run_cell``, even the float a student hands in, which may be a subclass that lies) is the
student's to replace, however well a check hides its name (``math.__dict__["isclose"] = ...``).
So before the notebook runs, each test cell's hidden block is replaced by one line that only
*reports* what the asserts compare: each value they read from the student's namespace (a
name such as ``critical_batch_int8``, or a call of the student's function such as
``matmul_intensity(1, 8192, 28672, 2)``), as plain data (a float's exact ``hex()``, an int,
a bool, a string, else its ``repr``). The expected values never enter the kernel. After the
run, each assert is evaluated here, with this process's own ``math``, on those reported values;
a failing one becomes the cell's error output (its message only, as ``Minimal`` tracebacks show
it), which scores the cell 0 as a failure in the kernel would. A student who wants to pass a
hidden test must report the right value, which takes knowing it. The cell's source is put back
as it was, so feedback, the formgrader and ``ClearHiddenTests`` see nothing new.

``SandboxedExecute`` (for nbgrader's ``Execute`` in ``c.Autograde.autograde_preprocessors``):
every kernel that runs a submission from this course's config runs in the grading sandbox
(``llmmath_course.instructor.sandbox``: bubblewrap, an account that owns nothing, no course
root, no network, capped memory and output), whoever starts it: ``scripts/instructor.py`` (which
swaps in its own limits, or fork kernels when asked), ``nbgrader autograde`` run by hand, and the
formgrader's per-student Autograde button, which calls nbgrader's API with this config. With
nbgrader's own ``Execute`` there, that button ran a hostile submission as the instructor, in the
course root, where it could read ``solutions/``. Where the sandbox cannot run it refuses to grade.

Inside a hidden block, ``math.*`` and ``abs`` are evaluated here; every other name, attribute
or call is read from the kernel. Statements other than ``assert`` (the ``set_mode`` line) still
run in the kernel, so they must never hold an expected value.
"""

from __future__ import annotations

import ast
import csv
import glob
import math
import os
import pwd
import stat
from collections import defaultdict
from pathlib import Path
from typing import Any

from nbformat import NotebookNode
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from nbgrader.utils import check_directory

REFUSED_COLUMNS = ("submission", "student", "problem")


def refused_path(submitted: Path, assignment: str) -> Path:
    """Where collect lists the submissions it refused (a dotfile: nbgrader's globs skip it)."""
    return submitted / f".refused-{assignment}.tsv"


def read_refused(submitted: Path, assignment: str) -> list[dict[str, str]]:
    path = refused_path(submitted, assignment)
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def ownership_problem(folder: Path, student: str) -> str | None:
    """Why ``folder`` (a submission in the inbound folder) is not ``student``'s own work, or None.

    Every entry must be a plain file or folder (no symbolic link: collect, run as the
    instructor, would copy what it points to) owned by the OS user named ``student``.
    """
    try:
        uid = pwd.getpwnam(student).pw_uid
    except KeyError:
        return f"no OS user is named {student}"
    entries = [folder]
    for parent, dirs, files in os.walk(folder):
        entries += [Path(parent) / name for name in dirs + files]
    for entry in entries:
        info = os.lstat(entry)
        where = entry.relative_to(folder).as_posix() if entry != folder else "the folder"
        if stat.S_ISLNK(info.st_mode):
            return f"{where} is a symbolic link"
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            return f"{where} is not a plain file"
        if info.st_uid != uid:
            try:
                owner = pwd.getpwuid(info.st_uid).pw_name
            except KeyError:
                owner = f"uid {info.st_uid}"
            return f"{where} is owned by {owner}, not by {student}"
    return None


class OwnerCheckedCollect(ExchangeCollect):  # type: ignore[misc]
    """nbgrader's collect, refusing submissions that are not their named student's own."""

    def init_src(self) -> None:
        super().init_src()  # checks the course and inbound folder, finds the due date
        if not self.check_owner:
            return
        student = self.coursedir.student_id or "*"
        pattern = os.path.join(
            self.inbound_path, f"{student}+{self.coursedir.assignment_id}+*"
        )  # as nbgrader's own
        genuine: dict[str, list[dict[str, Any]]] = defaultdict(list)
        refused = []
        for path in sorted(glob.glob(pattern)):
            record = self._path_to_record(path)
            problem = ownership_problem(Path(path), record["username"])
            if problem is None:
                genuine[record["username"]].append(record)
                continue
            refused.append((record["filename"], record["username"], problem))
            self.log.error(
                "REFUSED %s: it names %s, but %s; not collected (it stays in the inbound folder)",
                record["filename"],
                record["username"],
                problem,
            )
        self.src_records = [self._choose(records) for records in genuine.values()]
        if self.coursedir.student_id in ("", "*"):  # a run for the whole class: the full list
            self._write_refused(refused)

    def _choose(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """The submission nbgrader would collect of one student's (its rule, unchanged)."""
        records = self._sort_by_timestamp(records)
        if self.duedate is not None and self.before_duedate:
            on_time = [r for r in records if r["timestamp"] <= self.duedate]
            return on_time[0] if on_time else records[0]
        return records[0]

    def _write_refused(self, refused: list[tuple[str, str, str]]) -> None:
        submitted = Path(self.coursedir.root) / self.coursedir.submitted_directory
        path = refused_path(submitted, self.coursedir.assignment_id)
        if not refused:
            path.unlink(missing_ok=True)
            return
        submitted.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh, delimiter="\t")
            writer.writerow(REFUSED_COLUMNS)
            writer.writerows(refused)


class KeepRootRelease(ExchangeReleaseAssignment):  # type: ignore[misc]
    """nbgrader's release_assignment, except that it leaves an existing exchange root's mode as
    it is. nbgrader sets the root to 777 at every release (and fails where the instructor does
    not own it); the course's hub gives it to the class's group only (root:<class>, mode 1770:
    scripts/hub.py), which nbgrader's other commands accept, as they only check that the root is
    writable. A root that does not exist yet is made as nbgrader makes it."""

    def ensure_root(self) -> None:
        if not os.path.exists(self.root):
            super().ensure_root()
        elif not check_directory(self.root, write=True, execute=True):
            self.fail(f"Unwritable exchange directory: {self.root}")


# ---- hidden tests checked outside the student's kernel ---------------------------------------
BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
ANSWERS_MIME = "application/vnd.llmmath.answers+json"
STASH = "llmmath_hidden"  # cell metadata between the two preprocessors, removed after
#: What a hidden assert may use that is evaluated here, in the grading process.
GRADER_NAMES = {"math": math, "abs": abs}
_REPORTER = "__llmmath_answer"
# Runs in the kernel: one answer as JSON-safe data (NaN and infinities too, through hex()).
_REPORTER_DEF = f"""def {_REPORTER}(value):
    import operator
    if value is None or isinstance(value, (bool, str)):
        return value
    try:
        return ["i", str(operator.index(value))]
    except Exception:
        pass
    try:
        return ["f", float(value).hex()]
    except Exception:
        return ["r", repr(value)[:200]]
"""


class Opaque:
    """A reported value that is not a number, bool or string (a list, say): it compares
    unequal to everything and is no number, as the assert it meets expects of a wrong answer."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __format__(self, spec: str) -> str:
        return self.text


def _decode(value: Any) -> Any:
    if isinstance(value, list) and len(value) == 2:
        kind, text = value
        if kind == "i":
            return int(text)
        if kind == "f":
            return float.fromhex(text)
        return Opaque(str(text))
    return value


def _is_grader_side(node: ast.expr) -> bool:
    """``math.<name>`` or a name in GRADER_NAMES: evaluated here, not read from the kernel."""
    if isinstance(node, ast.Name):
        return node.id in GRADER_NAMES
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "math"
    )


class _FromKernel(ast.NodeTransformer):
    """Replaces each value an assert reads from the kernel by a name bound to its report."""

    def __init__(self, keys: dict[str, str]) -> None:
        self.keys = keys  # expression source -> its name here

    def _replace(self, node: ast.expr) -> ast.expr:
        source = ast.unparse(node)
        name = self.keys.setdefault(source, f"__answer{len(self.keys)}")
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return node if _is_grader_side(node) else self._replace(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        return node if _is_grader_side(node) else self._replace(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        return self._replace(node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if _is_grader_side(node.func):
            self.generic_visit(node)
            return node
        return self._replace(node)  # the student's function, called in the kernel


def split_hidden(source: str) -> tuple[str, list[str], dict[str, str]] | None:
    """(the code the kernel runs, the asserts checked here, {expression: name}) for a test
    cell's source, or None if it has no hidden block."""
    if BEGIN not in source:
        return None
    before, rest = source.split(BEGIN, 1)
    hidden, _, after = rest.partition(END)
    tree = ast.parse(hidden)
    keys: dict[str, str] = {}
    kept, asserts = [], []
    for statement in tree.body:
        if isinstance(statement, ast.Assert):
            asserts.append(ast.unparse(_FromKernel(keys).visit(statement)))
        else:
            kept.append(ast.unparse(statement))
    report = ", ".join(f"{name!r}: {_REPORTER}({source})" for source, name in keys.items())
    kernel = "\n".join(
        [
            before.rstrip("\n"),
            *kept,
            _REPORTER_DEF,
            f"__import__('IPython').display.display({{{ANSWERS_MIME!r}: {{{report}}}}}, raw=True)",
            f"del {_REPORTER}",
            after.lstrip("\n"),
        ]
    )
    return kernel, asserts, keys


class SplitHiddenTests(NbGraderPreprocessor):  # type: ignore[misc]
    """Before Execute: each hidden block becomes a report of the values its asserts read."""

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("grade"):
            return cell, resources
        split = split_hidden(cell.source)
        if split is not None:
            kernel, asserts, _ = split
            cell.metadata[STASH] = {"source": cell.source, "asserts": asserts}
            cell.source = kernel
        return cell, resources


class CheckHiddenTests(NbGraderPreprocessor):  # type: ignore[misc]
    """After Execute: the asserts, evaluated here on what the kernel reported; the source back."""

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        stash = cell.metadata.pop(STASH, None)
        if stash is None:
            return cell, resources
        cell.source = stash["source"]
        reports = [
            out
            for out in cell.get("outputs", [])
            if out.get("output_type") == "display_data" and ANSWERS_MIME in out.get("data", {})
        ]
        cell.outputs = [out for out in cell.get("outputs", []) if out not in reports]
        if any(out.get("output_type") == "error" for out in cell.outputs):
            return cell, resources  # failed in the kernel already: 0 points, its own message
        if len(reports) != 1:
            self._fail(cell, "RuntimeError", "the hidden tests could not read your answers")
            return cell, resources
        answers = {name: _decode(v) for name, v in reports[0]["data"][ANSWERS_MIME].items()}
        namespace: dict[str, Any] = {"__builtins__": __builtins__, **GRADER_NAMES, **answers}
        for statement in stash["asserts"]:
            try:
                exec(compile(statement, "<hidden test>", "exec"), namespace)
            except Exception as error:  # an AssertionError, or a wrong type of answer
                self._fail(cell, type(error).__name__, str(error))
                break
        return cell, resources

    @staticmethod
    def _fail(cell: NotebookNode, ename: str, evalue: str) -> None:
        cell.outputs.append(
            NotebookNode(
                output_type="error",
                ename=ename,
                evalue=evalue,
                traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"],
            )
        )


# ---- every submission's kernel in the grading sandbox ------------------------------------------
def _sandbox_module() -> Any:
    """``llmmath_course.instructor.sandbox``: installed (the repository's venv), on PYTHONPATH (the
    hub's formgrader), or in the course root's ``scripts/`` (the hub's course copy)."""
    import importlib
    import sys

    try:
        return importlib.import_module("llmmath_course.instructor.sandbox")
    except ImportError:
        scripts = Path(__file__).resolve().parent.parent / "scripts"
        if (scripts / "llmmath_course").is_dir() and str(scripts) not in sys.path:
            sys.path.insert(0, str(scripts))
    try:
        return importlib.import_module("llmmath_course.instructor.sandbox")
    except ImportError as error:
        raise RuntimeError(
            "the grading sandbox (llmmath_course.instructor.sandbox) is not importable here, so "
            "no submission is run: install the course tooling or copy scripts/llmmath_course "
            f"beside this course's scripts/ ({error})"
        ) from error


class SandboxedExecute(Execute):  # type: ignore[misc]
    """nbgrader's ``Execute`` with each kernel in the grading sandbox, at its default limits.

    Built on use (``__new__``), so that loading the config never imports the sandbox: a config
    read for ``generate_assignment`` needs none of it, and grading without it is refused."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        sandbox = _sandbox_module()
        sandbox.check_sandbox()
        return sandbox.sandbox_execute_class(sandbox.Limits())(*args, **kwargs)

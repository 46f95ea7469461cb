"""Check a learner's copy of an exercise against its visible tests, part by part.

    make check ASSIGNMENT=roofline          # or: python scripts/check.py roofline
    python scripts/check.py roofline --learner-dir my-work

It runs the learner's notebook (``my-work/<assignment>/*.ipynb``, the copy ``make lab`` made)
top to bottom the way nbgrader's **Validate** does (nbgrader's Execute preprocessor, the
course's nbgrader_config.py, ``NBGRADER_VALIDATING=1``), then prints one line per autograded
part, in the words its test cell printed: "visible checks pass" (none of the usual slips they look
for; never "passed" or a verdict, since a wrong answer that slips past them reads the same, and
only the hidden tests check the values), failed (with the kind of mistake), not answered yet, or
its answer cell raised (with the error). The manually graded answers show as written or empty,
and the report names them among the parts it cannot check. It prints no points: the hidden tests
decide them. Only what is in the learner's notebook runs: the released notebook holds the visible
tests only, and the hidden tests live in ``solutions/``, which this never reads.

It refuses, in one line that says what nbgrader will grade, a notebook nbgrader will not grade as
it is: one under another name than the release's (``roofline_v2.ipynb``: nbgrader grades only
``roofline.ipynb``), and one whose graded cells differ from the release's (a test cell changed,
deleted, or with an answer merged into it: grading restores the test cell as released, which
drops the merged answer, and a part whose answer cell is gone scores 0).

Exit status: 0 when it ran and printed its report (whatever the parts' status: a part not
answered yet is normal work in progress, and the summary line says how many pass), 2 when
there is no copy to check, or none nbgrader would grade as it is. ``--strict`` exits 1 when an
autograded part does not pass.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
HIDDEN_MARKER = "BEGIN HIDDEN TESTS"
#: A part whose visible checks pass: never "passed", for only the hidden tests check the values.
PASSING = ("checked",)
#: How a test cell says its visible checks pass; copies made before #46 said "consistent" or
#: "plausible", which read the same here.
PASS_WORDS = ("visible checks pass", "consistent", "plausible")


@dataclass
class Part:
    title: str
    points: float
    status: str  # "checked", "failed", "not answered", "raised", "written", "empty"
    message: str = ""
    note: str = ""
    autograded: bool = True


def meta(cell: Any) -> dict[str, Any]:
    return dict(cell.metadata.get("nbgrader", {}))


def errors(cell: Any) -> list[tuple[str, str]]:
    """(name, message) of each error a code cell raised, stderr counted as an error."""
    found = []
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            found.append((output.ename, ANSI.sub("", output.evalue)))
        elif output.output_type == "stream" and output.name == "stderr":
            found.append(("stderr", ANSI.sub("", output.text).strip()))
    return found


def heading(cell: Any) -> str | None:
    for line in cell.source.splitlines():
        if line.startswith("#"):
            return str(line.lstrip("#").strip())
    return None


def execute(path: Path, root: Path) -> Any:
    """Run the notebook as nbgrader's Validate does; return it with its outputs."""
    from nbgrader.preprocessors import ClearOutput, Execute
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = Config()
    if (root / "nbgrader_config.py").exists():
        config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    # The kernel's own log (e.g. its warning that loopback TCP is unencrypted) is not the
    # course's to print; errors in the learner's code still reach the report.
    config.Execute.extra_arguments = ["--IPKernelApp.log_level=ERROR"]
    nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]  # untyped
    resources: dict[str, Any] = {"metadata": {"path": str(path.parent)}}
    saved = {k: os.environ.get(k) for k in ("NBGRADER_VALIDATING", "NBGRADER_EXECUTION")}
    os.environ.update(NBGRADER_VALIDATING="1", NBGRADER_EXECUTION="validate")
    try:
        with _kernel_stderr_discarded():
            for preprocessor in (ClearOutput, Execute):
                nb, resources = preprocessor(config=config).preprocess(nb, resources)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb


@contextmanager
def _kernel_stderr_discarded() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null while the kernel runs: the kernel inherits it, and
    what it writes there (its log, libzmq's shutdown asserts on a loaded machine) is not the
    course's to print. The learner's own stderr output travels over the kernel's channels and
    still reaches the report."""
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def verdict(cell: Any) -> str:
    """What a test cell said of its part, after "Part N: " (its last such line), or ""."""
    said = ""
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            for line in ANSI.sub("", output.text).splitlines():
                if re.match(r"Part \d+: ", line):
                    said = line.split(": ", 1)[1].strip()
    return said


def changed(cell: Any) -> bool:
    """A locked cell (e.g. a test cell) whose source differs from the release."""
    from nbgrader import utils

    info = meta(cell)
    return (
        bool(info.get("locked"))
        and "checksum" in info
        and (utils.compute_checksum(cell) != info["checksum"])
    )


def parts(nb: Any) -> tuple[list[Part], list[str]]:
    """Each graded cell as a part, and notes on ungraded cells that raised."""
    result: list[Part] = []
    notes: list[str] = []
    title = ""
    answers: list[Any] = []  # answer cells since the last test cell
    for index, cell in enumerate(nb.cells):
        info = meta(cell)
        if cell.cell_type == "markdown" and not info.get("grade"):
            title = heading(cell) or title
        if cell.cell_type == "markdown" and info.get("grade") and info.get("solution"):
            text = cell.source.strip()
            empty = not text or text == "YOUR ANSWER HERE"
            words = len(text.split())
            result.append(
                Part(
                    title or info.get("grade_id", f"cell {index}"),
                    float(info.get("points", 0)),
                    "empty" if empty else "written",
                    "" if empty else f"{words} words",
                    autograded=False,
                )
            )
            continue
        if cell.cell_type != "code":
            continue
        if info.get("solution"):
            answers.append(cell)
        if not info.get("grade"):
            if not info.get("solution"):
                raised = [e for e in errors(cell) if e[0] not in ("stderr", "NotImplementedError")]
                if raised:
                    notes.append(f"cell {index + 1} (not graded) raised {raised[0][0]}")
            continue
        raised = [e for c in answers for e in errors(c) if e[0] != "stderr"]
        failed = errors(cell)
        said = verdict(cell)
        part = Part(
            title or info.get("grade_id", f"cell {index}"), float(info.get("points", 0)), ""
        )
        if said:  # the cell's own line, "Part N: ...": what nbgrader will see as well
            part.status, part.message = "failed", said.removeprefix("failed: ")
            if said.startswith("not answered yet"):
                part.status = "not answered"
                part.message = said.removeprefix("not answered yet").strip(" ()")
            elif said.startswith("your answer cell raised"):
                part.status = "raised"
            elif failed and said.startswith(PASS_WORDS):
                name, message = failed[0]  # e.g. a warning on stderr: graded 0 all the same
                part.message = f"{name}: {message}"
            elif said.startswith(PASS_WORDS):
                part.status = "checked"
                part.message = said.split("—", 1)[-1].strip()
        # A copy made before the test cells reported in words: they raise, or print nothing.
        elif any(name == "NotImplementedError" for name, _ in raised + failed):
            part.status = "not answered"  # the release's stub still raises
        elif raised:
            name, message = raised[0]
            part.status = "raised"
            part.message = f"your answer cell raised {name}: {message}; fix it and run it again"
        elif failed:
            name, message = failed[0]
            part.status, part.message = "failed", f"{name}: {message}" if message else name
        else:
            part.status = "checked"
            part.message = "the visible checks pass; the hidden tests check the values"
        if changed(cell):
            part.note = "you changed this test cell: grading puts the original back"
        result.append(part)
        answers = []
    return result, notes


def report(path: Path, shown: str, root: Path) -> bool:
    """Print the per-part report for one notebook; True when every autograded part passes."""
    nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]  # untyped
    print(f"Checking {shown} against its visible tests (hidden tests run when it is graded)")
    if any(HIDDEN_MARKER in cell.source for cell in nb.cells):
        print("  note: this notebook holds hidden tests: it is the instructor's source, not a copy")
    found, notes = parts(execute(path, root))
    if not found:
        print("  no graded parts in this notebook")
        return True
    width = max(len(p.title) for p in found)
    for part in found:
        label = {
            "checked": "visible checks pass",
            "failed": "FAILED",
            "raised": "answer cell raised",
            "not answered": "not answered yet",
            "written": "written, graded by hand",
            "empty": "empty, graded by hand",
        }[part.status]
        extra = f" ({part.message})" if part.message and not part.autograded else ""
        print(f"  {part.title:<{width}}  {label}{extra}")
        if part.autograded and part.message:
            for line in textwrap.wrap(part.message, 88):
                print(f"      {line}")
        if part.note:
            print(f"      note: {part.note}")
    for note in notes:
        print(f"  note: {note}")
    graded = [p for p in found if p.autograded]
    passing = [p for p in graded if p.status in PASSING]
    by_hand = [p.title for p in found if not p.autograded]
    if by_hand:
        print(f"  not checked here: {'; '.join(by_hand)} (graded by hand)")
    print(
        f"{len(passing)} of {len(graded)} autograded parts pass their visible tests; these "
        "cannot check the values, and the points come from the hidden tests when it is graded."
    )
    return len(passing) == len(graded)


def graded_cells(nb: Any) -> dict[str, Any]:
    """The cells nbgrader grades or locks, by grade_id."""
    return {
        meta(cell)["grade_id"]: cell
        for cell in nb.cells
        if meta(cell).get("grade_id")
        and (meta(cell).get("grade") or meta(cell).get("solution") or meta(cell).get("locked"))
    }


def refusal(path: Path, release: Path) -> str | None:
    """Why nbgrader would not grade ``path`` as it is, in one line (None when it would): its
    graded cells against the release's, by grade_id, and its locked cells' checksums."""
    from nbgrader import utils

    read = nbformat.read  # untyped
    mine = graded_cells(read(path, as_version=4))  # type: ignore[no-untyped-call]
    released = graded_cells(read(release, as_version=4))  # type: ignore[no-untyped-call]
    tests = [g for g, c in released.items() if meta(c).get("grade") and not meta(c).get("solution")]
    answers = [g for g, c in released.items() if meta(c).get("solution")]
    gone_tests = [g for g in tests if g not in mine]
    gone_answers = [g for g in answers if g not in mine]
    changed_tests = [
        g
        for g in tests
        if g in mine
        and "checksum" in meta(released[g])
        and utils.compute_checksum(mine[g]) != meta(released[g])["checksum"]
    ]
    if not (gone_tests or gone_answers or changed_tests):
        return None
    problems = []
    if changed_tests:
        problems.append(f"test cell {', '.join(changed_tests)} changed (an answer merged in?)")
    if gone_tests:
        problems.append(f"test cell {', '.join(gone_tests)} missing")
    if gone_answers:
        problems.append(f"answer cell {', '.join(gone_answers)} missing")
    return (
        f"{shown(path)}: not checked — {'; '.join(problems)}: nbgrader will grade the release's "
        "test cells as released (dropping anything merged into them), and a part with no answer "
        "cell scores 0; undo the merge or deletion (Edit → Undo, or split the cell) and check again"
    )


def shown(path: Path) -> str:
    """``path`` relative to the current folder when it is inside it, else absolute."""
    return path.relative_to(Path.cwd()).as_posix() if path.is_relative_to(Path.cwd()) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", help="e.g. roofline")
    parser.add_argument("--root", type=Path, default=ROOT, help="the course folder")
    parser.add_argument("--learner-dir", default="my-work", help="relative to --root")
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when an autograded part does not pass"
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    folder = (root / args.learner_dir / args.assignment).resolve()
    shown_folder = shown(folder)
    notebooks = sorted(folder.glob("*.ipynb")) if folder.is_dir() else []
    if not notebooks:
        released = (root / "exercises" / args.assignment).is_dir()
        hint = (
            f"run `make lab` (it copies exercises/{args.assignment}/ there), then work in it"
            if released
            else f"there is no exercise {args.assignment!r} in exercises/ either"
        )
        print(f"No copy of {args.assignment!r} to check in {shown_folder}/: {hint}.")
        return 2
    releases = {p.name: p for p in (root / "exercises" / args.assignment).glob("*.ipynb")}
    ok, checked, renamed = True, 0, False
    for path in notebooks:
        if releases and path.name not in releases:
            renamed = True
            expected = " or ".join(sorted(releases))
            print(
                f"{shown(path)}: not checked — nbgrader grades only {expected} in "
                f"{shown_folder}/; a renamed copy is never graded (rename it back, or copy your "
                "answers into it)"
            )
            ok = False
            continue
        refused = refusal(path, releases[path.name]) if releases else None
        if refused:
            print(refused)
            ok = False
            continue
        ok = report(path, shown(path), root) and ok
        checked += 1
    for name in sorted(set(releases) - {p.name for p in notebooks}) if not renamed else ():
        print(f"No {name} in {shown_folder}/: nbgrader grades that file, so it would grade none")
    if not checked:
        return 2
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())

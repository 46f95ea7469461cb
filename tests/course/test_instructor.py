"""A term of grading, end to end: the exchange cycle, bad submissions, feedback, a killed run.

One scratch course (``nbgrader_config.py`` and ``solutions/``, with ``c.Exchange.root`` pointed
at a temporary exchange, as book/instructor.md says) runs the commands of the instructor guide
once per module. Students alice (the solution), bob (two plausible mistakes) and carol (the
release untouched) each have their own home folder and go through the exchange with
``--student``; the bad submissions are dropped into ``submitted/`` as other students, so that
one ``scripts/instructor.py grade`` run grades them all together. The repository itself is
never written to.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest
from grading_support import (
    MARKERS,
    ROOT,
    cell_by_id,
    error_text,
    generate_assignment,
    hidden_expected_values,
    load_specs,
    read,
    submission_from_release,
)
from wait_support import seconds, wait_until

from llmmath_course.instructor.jail_cgroups import CGROUP_PARENT
from llmmath_course.simulate import BAD_KINDS, bad_submissions, reflected

SPEC = {spec.assignment: spec for spec in load_specs()}["roofline"]
ASSIGNMENT, NOTEBOOK, COURSE = SPEC.assignment, SPEC.notebook_id, "llmmath"
BIN = str(Path(sys.executable).parent)
GUIDE = ROOT / "book" / "instructor.md"
# Test speed only: an infinite loop costs one cell timeout (10 s in nbgrader_config.py).
CELL_TIMEOUT = 5

pytestmark = [
    pytest.mark.slow,
    # nbgrader 0.9.6 trips SQLAlchemy's autoflush warnings in its own gradebook code; not ours.
    pytest.mark.filterwarnings("ignore:Object of type <Submitted"),
]

# What each submission earns of the autograded points (FULL), and whether the report flags it.
FULL, TOTAL = SPEC.autograded_points, SPEC.autograded_points + SPEC.manual_points
PART = FULL / len(SPEC.test_cells)  # each autograded part is worth the same
GOOD = {"alice": FULL, "bob": SPEC.wrong_score, "carol": 0.0}
BAD: dict[str, tuple[float, bool]] = {
    "loop": (FULL - PART, False),  # `while True` in Part 2: that cell times out, grading goes on
    "import_error": (FULL - PART, False),  # a missing module in Part 1's answer
    "deleted_test": (FULL - PART, True),  # Part 3's test cell deleted: no grade, flagged
    "edited_test": (FULL - PART, True),  # Part 4's test cell replaced by `pass`: restored, fails
    "huge_output": (FULL, False),  # megabytes of print: truncated to 1000 lines, still graded
    "sys_exit": (FULL, False),  # sys.exit() in IPython is an exception, not an exit
    "kernel_death": (0.0, True),  # os._exit(): nbgrader cannot grade it, flagged
    # Patching math.isclose: the hidden asserts are checked outside the kernel, so the wrong
    # part still fails (grading/llmmath_nbgrader.py); the report flags it too.
    "patched_isclose": (FULL - PART, True),
    # The same, disguised (math.__dict__), in front of three wrong answers: not flagged (the
    # flag is a heuristic), and the wrong answers score what they deserve.
    "disguised_patch": (SPEC.wrong_score, False),
    "shadowed_builtin": (FULL - PART, True),  # rebinding isinstance: the hidden values still fail
    # A visible check fails with tracebacks off: nbgrader PR #1324 still scores that part 0.
    "silenced_tracebacks": (FULL - PART, True),
    # A list and strings where numbers belong: Parts 1 and 3 (Part 4's checks no longer read
    # Part 3's number: they test its own defining property, #36 item 1).
    "wrong_types": (FULL - 2 * PART, False),
    "empty_notebook": (0.0, True),
    "corrupt_ipynb": (0.0, True),
}

GRADED = len(GOOD) + len(BAD)  # submissions in one grading run of the term


class Course:
    """The scratch course, its exchange and the students' homes; runs and logs commands."""

    def __init__(self, base: Path, students_are_os_users: bool = False) -> None:
        self.root, self.exchange, self.homes = base / "course", base / "exchange", base / "home"
        self.root.mkdir()
        self.exchange.mkdir()
        self.exchange.chmod(0o777)  # every student's account writes here
        self.commands: list[str] = []
        config = (ROOT / "nbgrader_config.py").read_text()
        # As the guide says: the exchange root goes in the course's nbgrader_config.py.
        config += f'\nc.Exchange.root = "{self.exchange}"\n'
        if not students_are_os_users:
            # These students are simulated with --student, all as this one OS user: collect's
            # check that a submission is owned by the student it names cannot apply
            # (tests/course/test_hub.py runs it with real OS users).
            config += "c.ExchangeCollect.check_owner = False\n"
        (self.root / "nbgrader_config.py").write_text(config)
        # The feedback template (with its MathJax) sits next to nbgrader_config.py.
        shutil.copytree(ROOT / "grading", self.root / "grading")
        for source in (ROOT / "solutions").iterdir():
            if source.is_dir():
                shutil.copytree(
                    source,
                    self.root / "solutions" / source.name,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"),
                )
        self.env = dict(os.environ, PATH=os.pathsep.join([BIN, os.environ.get("PATH", "")]))

    def home(self, student: str) -> Path:
        home = self.homes / student
        if not home.exists():
            (home / ".jupyter").mkdir(parents=True)
            # A student's own config on a shared machine (on a hub: /etc/jupyter/).
            (home / ".jupyter" / "nbgrader_config.py").write_text(
                f'c = get_config()  # noqa\nc.Exchange.root = "{self.exchange}"\n'
            )
        return home

    def run(
        self, command: str, cwd: Path, env: dict[str, str], extra: str = "", ok: bool = True
    ) -> subprocess.CompletedProcess[str]:
        self.commands.append(command)
        argv = shlex.split(command) + shlex.split(extra)
        if argv[0] == "python":
            argv[0] = sys.executable
            argv[1] = str(ROOT / argv[1])  # scripts/ live in the repository, not the course
        result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
        output = result.stdout + result.stderr
        assert (result.returncode == 0) == ok, (
            f"{command} {extra}: rc={result.returncode}\n{output}"
        )
        return result

    def instructor(self, command: str, extra: str = "", ok: bool = True) -> str:
        result = self.run(command, self.root, self.env, extra, ok)
        return result.stdout + result.stderr

    def student(self, student: str, command: str, ok: bool = True) -> str:
        home = self.home(student)
        env = dict(self.env, HOME=str(home))
        # The exchange names submissions after the OS user; --student stands in for one.
        result = self.run(command, home, env, f"--student={student}", ok)
        return result.stdout + result.stderr


@pytest.fixture(scope="module")
def term(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    course = Course(tmp_path_factory.mktemp("term"))
    root = course.root
    generate_assignment(root, ASSIGNMENT)  # as `nbgrader generate_assignment roofline --force`
    course.instructor(f"nbgrader release_assignment {ASSIGNMENT}")
    fetched = {}
    for student in GOOD:
        course.student(student, f"nbgrader fetch_assignment {ASSIGNMENT} --course={COURSE}")
        path = course.home(student) / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
        fetched[student] = read(path)
        if student == "alice":
            nbformat.write(reflected(submission_from_release(path, SPEC.source_nb, {}), SPEC), path)
        elif student == "bob":
            answered = submission_from_release(path, SPEC.source_nb, SPEC.wrong_answers)
            nbformat.write(reflected(answered, SPEC), path)
        course.student(student, f"nbgrader submit {ASSIGNMENT} --course={COURSE}")
    # A submission for an assignment that was never released is refused at the exchange.
    stray = course.home("dave") / "nosuch"
    stray.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), stray / "nosuch.ipynb")
    refused = course.student("dave", f"nbgrader submit nosuch --course={COURSE}", ok=False)

    release = root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    bad = bad_submissions(release, SPEC)
    assert sorted(bad) == sorted(BAD) == sorted(BAD_KINDS)
    for student, nb in bad.items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        if isinstance(nb, bytes):
            (folder / f"{NOTEBOOK}.ipynb").write_bytes(nb)
        else:
            nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")
    # And one handed in outside the exchange for an unknown assignment.
    (root / "submitted" / "dave" / "nosuch").mkdir(parents=True)
    nbformat.write(read(release), root / "submitted" / "dave" / "nosuch" / "nosuch.ipynb")

    start = time.perf_counter()
    grade_log = course.instructor(
        f"python scripts/instructor.py grade {ASSIGNMENT} --jobs 4",
        extra=f"--timeout {CELL_TIMEOUT}",
    )
    grade_s = time.perf_counter() - start
    autograded_scores = gradebook_scores(root)
    released_before_review = sorted(p.name for p in course.exchange.rglob("feedback*"))
    report_dir = root / "reports" / ASSIGNMENT
    report_before_review = (report_dir / "report.md").read_text(encoding="utf-8")
    flags_before_review = read_flags(report_dir / "flags.csv")
    # Feedback waits for review: answers to grade by hand and flags not reviewed.
    refused_release = course.instructor(
        f"python scripts/instructor.py release-feedback {ASSIGNMENT}", ok=False
    )
    released_after_refusal = sorted(p.name for p in course.exchange.rglob("feedback*"))
    # The graders' turn, as the formgrader records it: some reflections scored by hand, and a
    # part of the cheater's overridden after review; the cheater's flags marked reviewed.
    hand_grade(root, HAND_SCORES, OVERRIDES)
    review_log = course.instructor(
        f"python scripts/instructor.py review {ASSIGNMENT}",
        extra="patched_isclose --note 'the patch gained nothing'",
    )
    flags_listed = course.instructor(f"python scripts/instructor.py review {ASSIGNMENT}")
    # The other bad submissions stay unreviewed: released anyway, and logged.
    release_log = course.instructor(
        f"python scripts/instructor.py release-feedback {ASSIGNMENT}", extra="--force"
    )
    for student in GOOD:
        course.student(student, f"nbgrader fetch_feedback {ASSIGNMENT} --course={COURSE}")
    return {
        "course": course,
        "fetched": fetched,
        "refused": refused,
        "grade_log": grade_log,
        "grade_s": grade_s,
        "scores": autograded_scores,
        "released_before_review": released_before_review,
        "report_before_review": report_before_review,
        "flags_before_review": flags_before_review,
        "release_log": release_log,
        "refused_release": refused_release,
        "released_after_refusal": released_after_refusal,
        "review_log": review_log,
        "flags_listed": flags_listed,
    }


# What the graders give each reflection, and the override after reviewing the cheater.
HAND_SCORES = {"alice": 2.0, "bob": 1.0, "carol": 0.0, "patched_isclose": 2.0}
OVERRIDES = {("patched_isclose", "test_critical_batch_int8"): 0.0}


def hand_grade(
    root: Path, reflections: dict[str, float], overrides: dict[tuple[str, str], float]
) -> None:
    """Set scores as the formgrader does: manual_score, and needs_manual_grade cleared."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE) as gb:
        todo = {(s, "reflection"): v for s, v in reflections.items()} | overrides
        for (student, cell), score in todo.items():
            grade = gb.find_grade(cell, NOTEBOOK, ASSIGNMENT, student)
            grade.manual_score = score
            grade.needs_manual_grade = False
        gb.db.commit()


def read_flags(path: Path, kind: str = "review") -> dict[str, list[str]]:
    flags: dict[str, list[str]] = {}
    with path.open() as fh:
        for row in csv.DictReader(fh):
            if row["kind"] == kind:
                flags.setdefault(row["student"], []).append(row["flag"])
    return flags


def gradebook_scores(root: Path) -> dict[str, dict[str, Any]]:
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE) as gb:
        for submission in gb.assignment_submissions(ASSIGNMENT):
            grades = [g for nb in submission.notebooks for g in nb.grades]
            out[submission.student.id] = {
                "score": submission.score,
                "code": {g.name: g.auto_score for g in grades if g.cell_type == "code"},
            }
    return out


def autograded(term: dict[str, Any], student: str) -> Any:
    return read(term["course"].root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb")


def report_flags(term: dict[str, Any]) -> dict[str, list[str]]:
    return dict(term["flags_before_review"])


# ---- the exchange cycle ---------------------------------------------------------------------
def test_students_fetch_the_release_without_solutions(term: dict[str, Any]) -> None:
    for student, nb in term["fetched"].items():
        text = "\n".join(cell.source for cell in nb.cells)
        assert "raise NotImplementedError()" in text, student
        for marker in MARKERS:
            assert marker not in text, f"{student} fetched a notebook with {marker!r}"


def test_every_collected_submission_is_graded_with_its_expected_score(
    term: dict[str, Any],
) -> None:
    scores = term["scores"]
    for student, expected in GOOD.items():
        assert scores[student]["score"] == expected, (student, scores[student])
        submitted = term["course"].root / "submitted" / student / ASSIGNMENT
        assert (submitted / "timestamp.txt").exists(), f"{student} was not collected"
    assert f"[{GRADED}/{GRADED}]" in term["grade_log"], "progress lines are printed"


def test_a_submission_for_an_unknown_assignment_is_refused(term: dict[str, Any]) -> None:
    assert "Assignment not found" in term["refused"]
    assert "nosuch" not in term["scores"]
    assert not (term["course"].root / "autograded" / "dave").exists()
    course = term["course"]
    out = course.instructor("python scripts/instructor.py autograde nosuch", ok=False)
    assert "unknown assignment 'nosuch'" in out


def test_grades_are_exported_to_csv(term: dict[str, Any]) -> None:
    with (term["course"].root / "grades.csv").open() as fh:
        rows = {row["student_id"]: row for row in csv.DictReader(fh)}
    expected = final_scores()
    assert {s: float(rows[s]["raw_score"]) for s in expected} == expected, "hand grades count"
    assert {rows[s]["max_score"] for s in expected} == {str(TOTAL)}
    assert all(rows[s]["assignment"] == ASSIGNMENT for s in expected)


def test_students_fetch_feedback_without_hidden_tests(term: dict[str, Any]) -> None:
    course = term["course"]
    pinned = [repr(v) for values in hidden_expected_values(SPEC).values() for v in values]
    for student in GOOD:
        found = list((course.home(student) / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))
        assert len(found) == 1, f"{student} fetched {found}"
        html = found[0].read_text(encoding="utf-8")
        for text in (*MARKERS, "set_mode", *pinned):
            assert text not in html, f"{student}'s feedback shows {text!r}"
    bob = next((course.home("bob") / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))
    assert SPEC.hidden_message in bob.read_text(encoding="utf-8"), "bob should see why he lost"


def test_feedback_of_every_bad_submission_hides_the_hidden_tests(term: dict[str, Any]) -> None:
    pinned = [repr(v) for values in hidden_expected_values(SPEC).values() for v in values]
    for html_path in (term["course"].root / "feedback").glob(f"*/{ASSIGNMENT}/*.html"):
        html = html_path.read_text(encoding="utf-8")
        for text in (*MARKERS, "set_mode", *pinned):
            assert text not in html, f"{html_path} shows {text!r}"


def final_scores() -> dict[str, float]:
    """Autograded scores, plus the hand-graded reflections, with the overrides applied."""
    scores = {**GOOD, **{student: score for student, (score, _) in BAD.items()}}
    for student, points in HAND_SCORES.items():
        scores[student] += points
    return scores


# ---- review before release -------------------------------------------------------------------
def test_grade_releases_no_feedback_until_release_feedback(term: dict[str, Any]) -> None:
    assert term["released_before_review"] == [], "make grade released feedback"
    assert "then: python scripts/instructor.py release-feedback roofline" in term["grade_log"]
    assert "feedback released to the exchange for 3" in term["release_log"]


def test_release_feedback_refuses_while_review_is_open(term: dict[str, Any]) -> None:
    refusal = term["refused_release"]
    assert "release-feedback roofline refused: review is not done" in refusal
    assert "to grade by hand: alice: reflection" in refusal
    assert "flag not reviewed: patched_isclose: tampering suspected" in refusal
    assert "flag not reviewed: kernel_death: not graded by nbgrader" in refusal
    assert "--force" in refusal
    assert term["released_after_refusal"] == [], "a refused release released feedback"
    # --force releases, says so, and logs what was still open.
    assert "FORCED: releasing with review open" in term["release_log"]
    log = (term["course"].root / "feedback" / f".releases-{ASSIGNMENT}.log").read_text()
    assert "FORCED with" in log and "flag not reviewed: deleted_test" in log
    assert "patched_isclose" not in log, "its flags were reviewed before the release"


def test_a_flag_marked_reviewed_in_the_report_and_the_formgrader(term: dict[str, Any]) -> None:
    from nbgrader.api import Gradebook

    root = term["course"].root
    assert "reviewed  patched_isclose: tampering suspected" in term["review_log"]
    listed = term["flags_listed"].splitlines()
    assert any(line.startswith("reviewed  patched_isclose:") for line in listed), listed
    assert any(line.startswith("OPEN      deleted_test:") for line in listed), listed
    report = (root / "reports" / ASSIGNMENT / "report.md").read_text(encoding="utf-8")
    cheat = next(line for line in report.splitlines() if "**patched_isclose**" in line)
    deleted = next(line for line in report.splitlines() if "**deleted_test**" in line)
    assert cheat.endswith("*(reviewed)*") and not deleted.endswith("*(reviewed)*")
    with (root / "reports" / ASSIGNMENT / "flags.csv").open() as fh:
        rows = [row for row in csv.DictReader(fh) if row["kind"] == "review"]
    assert {r["reviewed"] for r in rows if r["student"] == "patched_isclose"} == {"yes"}
    assert {r["reviewed"] for r in rows if r["student"] == "deleted_test"} == {""}
    reviewed = (root / "submitted" / f".reviewed-{ASSIGNMENT}.tsv").read_text()
    assert "the patch gained nothing" in reviewed
    # The formgrader's "flagged" column shows the open ones only.
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE) as gb:
        flagged = {
            s.student.id: any(nb.flagged for nb in s.notebooks)
            for s in gb.assignment_submissions(ASSIGNMENT)
        }
    assert not flagged["patched_isclose"] and flagged["deleted_test"]
    assert not flagged["alice"], "nothing to review for alice"


def test_a_forged_ledger_row_neither_reviews_nor_releases(term: dict[str, Any]) -> None:
    """#48: code that reached the course root added a row "by" the instructor for an open flag
    (its submission had run as the instructor). The row is not the review command's (no valid
    signature): the flag stays open, the row is named, and the release gate stays shut."""
    from llmmath_course.instructor.course import refused
    from llmmath_course.instructor.flags import all_flags, reviewed_path
    from llmmath_course.instructor.review import open_review
    from llmmath_course.instructor.rows import report_rows

    root = term["course"].root
    ledger = reviewed_path(root, ASSIGNMENT)
    kept = ledger.read_bytes()
    rows, _ = report_rows(root, ASSIGNMENT)
    flag = next(f for f in all_flags(root, ASSIGNMENT, rows, refused(root, ASSIGNMENT))
                if f.student == "deleted_test")  # fmt: skip
    try:
        with ledger.open("a") as fh:
            fh.write("\t".join([*flag.key, "2026-12-01T10:00:00+00:00", "prof", "", "0" * 64]))
            fh.write("\n")
        waiting = open_review(root, ASSIGNMENT)
        assert f"flag not reviewed: deleted_test: {flag.text}" in waiting, waiting
        assert any(
            line.startswith("ledger row not written by review (forged?): deleted_test")
            for line in waiting
        ), waiting
        assert not any("patched_isclose" in line for line in waiting), "a signed row was lost"
    finally:
        ledger.write_bytes(kept)


def feedback_html(term: dict[str, Any], student: str) -> str:
    folder = term["course"].root / "feedback" / student / ASSIGNMENT
    return (folder / f"{NOTEBOOK}.html").read_text(encoding="utf-8")


def test_released_feedback_shows_the_final_scores(term: dict[str, Any]) -> None:
    course = term["course"]
    alice = next((course.home("alice") / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))
    text = alice.read_text(encoding="utf-8")
    final = final_scores()
    assert f"Score: {final['alice']} / {TOTAL}" in text, "alice's feedback lacks her reflection"
    cheat = feedback_html(term, "patched_isclose")
    assert f"Score: {final['patched_isclose']} / {TOTAL}" in cheat, "the override is missing"


def test_report_lists_review_flags_first_and_counts_hand_grading(term: dict[str, Any]) -> None:
    text = term["report_before_review"]
    review = text.index("## To review:")
    hand = text.index("## To grade by hand:")
    assert review < hand
    reviewed = text[review:hand]
    for student, (_, flagged) in BAD.items():
        assert (f"**{student}**" in reviewed) == flagged, student
    for student in GOOD:
        assert f"**{student}**" not in reviewed, f"{student} has nothing to review"
    section = text[hand : text.index("## Scores")]
    line = next(line for line in section.splitlines() if line.startswith("- `reflection`"))
    waiting = {name.strip() for name in line.split(":", 1)[1].split(",")}
    assert {"alice", "bob"} <= waiting and "carol" not in waiting, "carol left it blank"
    assert "patched_isclose" in waiting, "a flag must not hide the hand grading"
    assert "kernel_death" not in waiting, "nothing to grade by hand in an ungraded notebook"
    assert f"## To grade by hand: {len(waiting)} answers in {len(waiting)} submissions" in text
    bullet = next(line for line in reviewed.splitlines() if "**patched_isclose**" in line)
    assert "Also to grade by hand: reflection" in bullet


def test_report_after_review_honours_overrides_and_hand_grades(term: dict[str, Any]) -> None:
    text = (term["course"].root / "reports" / ASSIGNMENT / "report.md").read_text("utf-8")
    header = next(line for line in text.splitlines() if line.startswith("| student |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    rows = {
        cells[0]: dict(zip(columns, cells, strict=True))
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| student")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert rows["patched_isclose"]["test_critical_batch_int8"] == "0*"
    final = final_scores()
    assert rows["patched_isclose"]["score"] == f"{final['patched_isclose']:g}"
    assert rows["alice"]["reflection"] == "2*" and rows["alice"]["score"] == f"{final['alice']:g}"
    assert "## To grade by hand: 0 answers" not in text  # the bad ones still wait
    assert "**alice**" not in text.split("## Scores")[0], "alice needs nothing more"


def test_grading_run_is_quiet(term: dict[str, Any]) -> None:
    """One progress line per submission, a summary, and none of the libraries' warnings."""
    allowed = (
        r"collected submissions from the exchange",
        r"autograde roofline: \d+ submissions, 0 already graded, \d+ to grade with 4 process\(es\)",
        rf"\[\d+/{GRADED}\] \w+: (graded|NOT GRADED) in [\d.]+ s \(\d+ s elapsed, \d+ s to go\)",
        r"\[retry\] \w+: (graded|NOT GRADED) in [\d.]+ s",
        rf"autograded \d+ of {GRADED} in [\d.]+ s(; nbgrader could not grade \d+: [\w, ]+)?",
        r"grades exported to grades.csv",
        r"report written to .*report.md: \d+ to review, \d+ to grade by hand",
        # The course root has no Makefile: the hint names the script itself.
        r"Students see nothing yet\. .*python scripts/instructor.py release-feedback roofline",
    )
    lines = term["grade_log"].splitlines()
    for line in lines:
        assert any(re.fullmatch(pattern, line) for pattern in allowed), f"noise: {line!r}"
    progress = [line for line in lines if re.match(rf"\[(\d+/{GRADED}|retry)\]", line)]
    assert len(progress) == GRADED + sum(1 for line in progress if line.startswith("[retry]"))


# A roofline feedback page is ~0.2 MB, 0.12 MB of it nbconvert's inlined CSS; with MathJax
# inlined it was 2.3 MB.
FEEDBACK_BYTES = 300_000
MATHJAX = ROOT / "book" / "_vendor" / "mathjax" / "tex-svg.js"
RAW_MATH = "$[B, D]$"  # in Part 1's prompt: shown as is only if MathJax did not run


def typeset(browser: Any, url: str, screenshot: Path | None = None) -> tuple[int, bool, list[str]]:
    """Open ``url`` with every request off this machine refused; return the number of typeset
    formulas, whether the raw TeX is still on the page, and the refused requests."""
    from site_support import is_local
    from site_support import typeset as typeset_page

    refused: list[str] = []

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if url.startswith("file:") or is_local(url):
            request_route.continue_()
        else:
            refused.append(url)
            request_route.abort()

    page = browser.new_page()
    try:
        page.route("**/*", route)
        page.goto(url)
        # MathJax has typeset the page, or there is none to wait for (counted below).
        typeset_page(page)
        count = page.locator("mjx-container").count()
        raw = page.evaluate(f"document.body.innerText.includes({RAW_MATH!r})")
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=False)
    finally:
        page.close()
    return count, raw, refused


def outputs_overflowing(browser: Any, url: str, width: int = 700) -> list[str]:
    """The output texts of the page at ``url`` wider than the page, in a narrow window."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(url)
        return list(
            page.evaluate(
                "Array.from(document.querySelectorAll('.output_subarea pre'))"
                ".filter(e => e.scrollWidth > e.clientWidth + 1)"
                ".map(e => e.innerText.slice(0, 80))"
            )
        )
    finally:
        page.close()


@contextlib.contextmanager
def course_lab(server_root: Path, course_root: Path) -> Iterator[str]:
    """JupyterLab with ``make lab``'s command line (llmmath_course.lab; instructor: the
    formgrader is on), serving ``server_root``, started in the course folder; yields its URL
    with a token."""
    from test_lab import Lab, free_port, port_is_free, server_env, stop

    from llmmath_course.lab import lab_command

    token, port = secrets.token_hex(16), free_port()
    command = lab_command(
        server_root, course_root / "my-work", port, [f"--ServerApp.token={token}"]
    )
    log = server_root / "lab-server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=course_root,  # the formgrader reads nbgrader_config.py from here
            env=server_env(server_root / "lab"),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    lab = Lab(f"http://127.0.0.1:{port}", token, server_root, port, process, log)
    try:
        budget = seconds(120)
        deadline = time.monotonic() + budget
        while True:
            assert process.poll() is None, log.read_text()
            with contextlib.suppress(OSError, ValueError):
                lab.api("GET", "status", timeout=2)
                break
            assert time.monotonic() < deadline, f"no answer in {budget:.0f} s:\n{log.read_text()}"
            time.sleep(0.25)
        yield f"{lab.url}|{token}"
    finally:
        stop(process, lab)
        assert process.poll() is not None and port_is_free(port)


class TestTheTermsPagesInALab:
    """The feedback and the formgrader's pages, served by one Lab on the term's course (the
    two tests each started the same server and a browser of their own). The Lab works in the
    course folder: it stops after these tests, before the killed run's check that no process
    is left there."""

    @pytest.fixture(scope="class")
    @classmethod
    def served(cls, term: dict[str, Any]) -> Iterator[str]:
        course = term["course"]
        with course_lab(course.root.parent, course.root) as served:
            yield served

    def test_feedback_is_small_and_typesets_offline_from_disk_and_from_the_lab(
        self, term: dict[str, Any], served: str, browser: Any
    ) -> None:
        """Each feedback file loads the course's one vendored MathJax by a relative URL: opened
        from the instructor's feedback/ (next to the shared copy) or from a student's Lab server
        (which serves it), its maths is typeset with every request off this machine refused."""
        course = term["course"]
        base = course.root.parent
        mine = course.root / "feedback" / "bob" / ASSIGNMENT / f"{NOTEBOOK}.html"
        fetched = next((course.home("bob") / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))
        shared = course.root / "feedback" / "mathjax" / "tex-svg.js"
        assert shared.read_bytes() == MATHJAX.read_bytes(), "release-feedback keeps one shared copy"
        for path in (mine, fetched):
            html = path.read_text(encoding="utf-8")
            assert len(html.encode()) < FEEDBACK_BYTES, f"{path.name}: {len(html.encode())} bytes"
            assert not re.search(r"""<script[^>]+src=["']?https?:""", html), "a script from the web"
            assert "window.MathJax" in html and RAW_MATH in html
        shots = base / "screenshots"
        shots.mkdir(exist_ok=True)
        count, raw, refused = typeset(browser, mine.as_uri(), shots / "feedback-disk.png")
        assert refused == [] and count > 10 and not raw, (count, raw, refused)
        # Bob's long failure messages wrap inside a narrow window rather than run off its edge.
        assert "AssertionError" in mine.read_text(encoding="utf-8")
        assert outputs_overflowing(browser, mine.as_uri()) == []
        url, token = served.split("|")
        path = urllib.parse.quote(fetched.relative_to(base).as_posix())
        count, raw, refused = typeset(
            browser, f"{url}/files/{path}?token={token}", shots / "feedback-lab.png"
        )
        assert refused == [] and count > 10 and not raw, (count, raw, refused)

    def test_formgrader_typesets_maths_offline(
        self, term: dict[str, Any], served: str, browser: Any
    ) -> None:
        """A grader's view of a submission in the formgrader (make lab ROLE=instructor) loads the
        vendored MathJax from the Lab server, not nbconvert's CDN: with the web out of reach the
        maths is typeset, not raw $B$."""
        from nbgrader.api import Gradebook

        course = term["course"]
        base = course.root.parent
        db = f"sqlite:///{course.root / 'gradebook.db'}"
        with Gradebook(db, COURSE) as gradebook:
            submission = gradebook.find_submission_notebook(NOTEBOOK, ASSIGNMENT, "bob").id
        url, token = served.split("|")
        page = f"{url}/formgrader/submissions/{submission}/?token={token}"
        shot = base / "screenshots" / "formgrader.png"
        shot.parent.mkdir(exist_ok=True)
        count, raw, refused = typeset(browser, page, shot)
        assert count > 10 and not raw, f"{count} formulas typeset, raw TeX shown: {raw}"
        assert not [u for u in refused if "mathjax" in u.lower()], refused


def test_rubric_is_for_graders_only(term: dict[str, Any]) -> None:
    root = term["course"].root
    rubric = (root / "reports" / ASSIGNMENT / "rubric.md").read_text(encoding="utf-8")
    html = (root / "reports" / ASSIGNMENT / "rubric.html").read_text(encoding="utf-8")
    assert "*Model answer.*" in rubric and "*Marking (1 point each).*" in rubric
    assert f"Part {len(SPEC.test_cells) + 1}: reflection" in rubric and "Model answer" in html
    assert not re.search(r"""<script[^>]+src=["']?https?:""", html) and "MathJax" in html
    report = (root / "reports" / ASSIGNMENT / "report.md").read_text(encoding="utf-8")
    assert "[rubric.md](rubric.md)" in report
    seen_by_students = [
        *(root / "exercises").rglob("*.ipynb"),
        *(root / "feedback").rglob("*.html"),
        *term["course"].homes.rglob("*.html"),
        *term["course"].homes.rglob("*.ipynb"),
    ]
    assert len(seen_by_students) > 10
    for path in seen_by_students:
        text = path.read_text(encoding="utf-8", errors="replace")
        for secret in ("Model answer", "Marking (1 point each)"):
            assert secret not in text, f"{path} shows the rubric's {secret!r}"


def test_score_plot_counts_students_in_whole_numbers(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from llmmath_course.instructor.report import plot_scores
    from llmmath_course.instructor.rows import Row

    figures: list[Any] = []

    def keep(**kwargs: Any) -> Any:
        figures.append(Figure(**kwargs))
        return figures[-1]

    rows = [Row("a", 3.0, 10.0), Row("b", 7.0, 10.0), Row("c", 8.0, 10.0)]
    plot_scores(rows, ASSIGNMENT, tmp_path / "scores.png", keep)
    ticks = figures[0].axes[0].get_yticks()
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks


# ---- bad submissions, one test each -----------------------------------------------------------
@pytest.mark.parametrize("student", sorted(BAD))
def test_bad_submission_gets_its_expected_score_and_flag(
    term: dict[str, Any], student: str
) -> None:
    expected, flagged = BAD[student]
    assert term["scores"][student]["score"] == expected, term["scores"][student]
    assert (student in report_flags(term)) == flagged, report_flags(term).get(student)


def test_infinite_loop_times_out_in_its_own_cell(term: dict[str, Any]) -> None:
    nb = autograded(term, "loop")
    assert "CellTimeoutError" in error_text(cell_by_id(nb, "decode_batch1"))
    assert term["scores"]["loop"]["code"]["test_matmul_intensity"] == 2.0


def test_huge_output_is_truncated(term: dict[str, Any]) -> None:
    cell = cell_by_id(autograded(term, "huge_output"), "critical_batch")
    text = "".join(o.get("text", "") for o in cell.outputs)
    assert "Output truncated" in text and text.count("\n") <= 1001


def test_deleted_and_edited_test_cells_are_reported(term: dict[str, Any]) -> None:
    flags = report_flags(term)
    assert flags["deleted_test"] == ["test cells deleted: test_critical_batch"]
    assert (
        "locked cell test_critical_batch_int8 edited (nbgrader restored it)" in flags["edited_test"]
    )
    restored = cell_by_id(autograded(term, "edited_test"), "test_critical_batch_int8")
    assert "AssertionError" in error_text(restored), "the restored test ran and failed"


def test_tampering_is_flagged(term: dict[str, Any]) -> None:
    flags = report_flags(term)
    assert any("math.isclose" in flag for flag in flags["patched_isclose"])
    assert any("rebinds isinstance" in flag for flag in flags["shadowed_builtin"])
    assert any("showtraceback" in flag for flag in flags["silenced_tracebacks"])
    for student in GOOD:
        assert not any("tampering" in flag for flag in flags.get(student, [])), student


def test_pinned_nbgrader_has_pr_1324_silenced_tracebacks_still_fail(
    term: dict[str, Any],
) -> None:
    """A student who disables showtraceback leaves no error output; nbgrader >= 0.7 reads the
    kernel's execute reply (PR #1324) and still records a failure that raises. A visible check
    no longer raises (#36 item 3): it prints its line on stderr, which nbgrader scores 0 as it
    does an error, and which showtraceback does not touch."""
    import nbgrader

    assert nbgrader.__version__ == "0.9.6"
    assert term["scores"]["silenced_tracebacks"]["code"]["test_critical_batch_int8"] == 0.0
    cell = cell_by_id(autograded(term, "silenced_tracebacks"), "test_critical_batch_int8")
    stderr = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")
    assert "Part 4: failed: " in stderr or "showtraceback was disabled" in error_text(cell)


def test_bad_submissions_are_named_in_the_report(term: dict[str, Any]) -> None:
    report_dir = term["course"].root / "reports" / ASSIGNMENT
    text = (report_dir / "report.md").read_text(encoding="utf-8")
    png = (report_dir / "scores.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5_000
    for student, (_, flagged) in BAD.items():
        assert (f"**{student}**" in text) == flagged, student
    assert "not graded by nbgrader" in text


# ---- the guide -------------------------------------------------------------------------------
def test_the_guide_shows_the_commands_the_tests_run(term: dict[str, Any]) -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    commands = [c for c in term["course"].commands if "nosuch" not in c]  # meant to fail
    assert len(commands) >= 6
    for command in commands:
        assert command in guide, f"book/instructor.md does not show `{command}`"
    assert "make grade ASSIGNMENT=roofline" in guide


# ---- a killed run -----------------------------------------------------------------------------
def test_sigkill_mid_autograde_then_rerun_loses_and_duplicates_nothing(
    term: dict[str, Any],
) -> None:
    course = term["course"]
    root = course.root
    before = gradebook_scores(root)
    release = root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    late = [f"late{i}" for i in range(5)]
    for i, student in enumerate(late):
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        wrong = SPEC.wrong_answers if i % 2 else {}
        nb = submission_from_release(release, SPEC.source_nb, wrong)
        nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")
    journal = root / "autograded" / f".journal-{ASSIGNMENT}.tsv"
    lines_before = len(journal.read_text().splitlines())
    command = [sys.executable, str(ROOT / "scripts/instructor.py"), "autograde", ASSIGNMENT]
    proc = subprocess.Popen(
        command, cwd=root, env=course.env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def grading_a_third() -> list[str]:
        """Two students journalled, and a kernel at work on a third student's notebook (a
        process in its autograded/ folder, and a kernel among the run's processes)."""
        assert proc.poll() is None, "autograde ended before the kill"
        journalled = journal.read_text().splitlines()
        if len(journalled) < lines_before + 2:
            return []
        done = {line.split("\t")[0] for line in journalled}
        autograded = root / "autograded"
        if not any(b"ipykernel" in c for c in descendants(proc.pid).values()):
            return []
        return [s for s in late if s not in done and processes_in(autograded / s, wait_s=0)]

    wait_until(
        grading_a_third,
        "two students graded and a third being graded (a process in autograded/<student>)",
        120,
        seen=lambda: f"journal: {journal.read_text().splitlines()[lines_before:]}",
        every=0.1,
    )
    # The run's processes, kernels included: a sandboxed kernel works in its jail
    # (/tmp/llmg-*), not in the course, and bwrap gives it a session of its own, so neither
    # the folder nor the process group finds it.
    started = descendants(proc.pid)
    kernels = [p for p, cmdline in started.items() if b"ipykernel" in cmdline]
    assert kernels, f"no kernel among the run's processes: {list(started.values())}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not processes_in(root, wait_s=15), "a killed run left a process in the course"
    # A kernel killed as it starts can stay asleep in its jail: bwrap's --die-with-parent can
    # miss the death (bubblewrap#633; book/instructor.md says so). That one is the next run's to
    # sweep (a fresh clone's run here left one); every other process of the run goes now.
    wait_until(
        lambda: not outside_a_jail(alive(started)) or None,
        "every process of the killed run gone, but a jailed kernel's",
        15,
        seen=lambda: outside_a_jail(alive(started)),
    )
    asleep = alive(started)
    partly = len(journal.read_text().splitlines()) - lines_before
    assert partly < len(late), "the kill came too late to test anything"

    out = course.instructor(f"python scripts/instructor.py autograde {ASSIGNMENT}")
    assert not alive(asleep), f"the rerun left the killed run's jailed kernel: {alive(asleep)}"
    if asleep:
        assert "removed the orphaned grading jail" in out, out
    assert f"{len(late) - partly} to grade" in out
    after = gradebook_scores(root)
    assert len(after) == len(before) + len(late), "one gradebook row per student"
    for student in late:
        expected = GOOD["bob"] if int(student[-1]) % 2 else GOOD["alice"]
        assert after[student]["score"] == expected, (student, after[student])
    assert {s: after[s] for s in before} == before, "earlier grades changed"
    entries = [line.split("\t")[0] for line in journal.read_text().splitlines()]
    assert sorted(set(entries)) == sorted(after), "every student journalled"
    assert len(entries) == len(set(entries)), "no student graded twice"


def descendants(pid: int) -> dict[psutil.Process, bytes]:
    """Every process below ``pid`` (children, theirs, ...), with its command line."""
    found: dict[psutil.Process, bytes] = {}
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):  # gone meanwhile
            found[child] = " ".join(child.cmdline()).encode()
    return found


def alive(processes: dict[psutil.Process, bytes]) -> dict[psutil.Process, bytes]:
    """Those of ``processes`` still running (a pid reused since is another process)."""
    return {p: cmdline for p, cmdline in processes.items() if p.is_running()}


def outside_a_jail(processes: dict[psutil.Process, bytes]) -> dict[psutil.Process, bytes]:
    """Those of ``processes`` in no grading jail's cgroup (what sweep_orphaned_jails kills)."""
    inside = f"/{CGROUP_PARENT}/"

    def jailed(process: psutil.Process) -> bool:
        with contextlib.suppress(OSError):
            return inside in Path(f"/proc/{process.pid}/cgroup").read_text()
        return False  # gone meanwhile

    return {p: cmdline for p, cmdline in processes.items() if not jailed(p)}


def processes_in(folder: Path, wait_s: float) -> list[int]:
    """Processes whose working folder is inside ``folder`` (kernels run in autograded/...),
    after waiting up to ``seconds(wait_s)`` (scaled: tests/wait_support.py) for them to go."""
    deadline = time.monotonic() + seconds(wait_s)
    while True:
        found = []
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and (proc / "cwd").resolve().is_relative_to(folder):
                    found.append(int(proc.name))
            except OSError:  # gone, or not ours to look at
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


# ---- regrading after a fix -------------------------------------------------------------------
def test_regrade_uses_the_grade_job_count(term: dict[str, Any]) -> None:
    def dry_run(target: str) -> str:
        out = subprocess.run(
            ["make", "-n", "-o", "setup", target, "ASSIGNMENT=roofline", "JOBS=7"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        return next(line for line in out.splitlines() if "instructor.py" in line)

    assert dry_run("grade").endswith("grade roofline --jobs 7")
    assert dry_run("regrade").endswith("regrade roofline --jobs 7")
    assert dry_run("release-feedback").endswith("release-feedback roofline")


def test_regrade_keeps_hand_grades_and_their_reviewed_state(term: dict[str, Any]) -> None:
    course = term["course"]
    root = course.root
    out = course.instructor(
        f"python scripts/instructor.py regrade {ASSIGNMENT} --jobs 4",
        extra=f"--timeout {CELL_TIMEOUT}",
    )
    assert "regrade roofline: assignment recorded again" in out
    assert "to grade with 4 process(es)" in out
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE) as gb:
        for (student, cell), score in {
            **{(s, "reflection"): v for s, v in HAND_SCORES.items()},
            **OVERRIDES,
        }.items():
            grade = gb.find_grade(cell, NOTEBOOK, ASSIGNMENT, student)
            assert grade.manual_score == score, (student, cell)
            assert not grade.needs_manual_grade, f"{student}'s {cell} must stay reviewed"
    text = (root / "reports" / ASSIGNMENT / "report.md").read_text(encoding="utf-8")
    hand = text[text.index("## To grade by hand:") : text.index("## Scores")]
    for student in HAND_SCORES:
        assert student not in hand, f"{student} is listed for hand grading again"
    assert gradebook_scores(root)["alice"]["score"] == final_scores()["alice"]


# ---- nothing carried from one student to the next --------------------------------------------
def test_a_patched_builtin_never_reaches_the_next_students_tests(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """One worker grades a cheater, then an honest student, in that order: each kernel is new
    (forked from a process that never ran a student's code), so the patches die with the first."""
    course = Course(tmp_path_factory.mktemp("isolation"))
    generate_assignment(course.root, ASSIGNMENT)
    release = course.root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    patches = (
        "import builtins, math\n"
        "math.isclose = lambda *a, **k: True\n"
        "_isinstance = builtins.isinstance\n"
        "builtins.isinstance = lambda o, t: t is float or _isinstance(o, t)\n"
        "builtins.__dict__['LEAKED'] = 1\n"
        "critical_batch_int8 = 300.0\n"
    )
    cheater = submission_from_release(release, SPEC.source_nb, {"critical_batch_int8": patches})
    honest = submission_from_release(release, SPEC.source_nb, SPEC.wrong_answers)
    probe = "assert 'LEAKED' not in dir(__builtins__), 'a builtin from another student'\n"
    cell_by_id(honest, "matmul_intensity").source += "\n" + probe
    for student, nb in (("a_cheater", cheater), ("b_honest", honest)):
        folder = course.root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")
    out = course.instructor(f"python scripts/instructor.py autograde {ASSIGNMENT} --jobs 1")
    assert out.index("a_cheater") < out.index("b_honest"), "graded in this order"
    scores = gradebook_scores(course.root)
    assert scores["a_cheater"]["score"] is not None, "the cheater was graded first"
    assert scores["b_honest"]["score"] == GOOD["bob"], "the patches reached the next student"
    honest_nb = read(course.root / "autograded" / "b_honest" / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    assert "AssertionError" not in error_text(cell_by_id(honest_nb, "matmul_intensity"))


# ---- the gradebook on PostgreSQL ------------------------------------------------------------
def postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return found[-1].parent if found else None


@pytest.fixture
def postgres() -> Any:
    """A throwaway PostgreSQL server (Debian's packages) on a unix socket; yields its db_url."""
    pytest.importorskip("psycopg2", reason="no PostgreSQL driver: pip install psycopg2-binary")
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server: apt-get install postgresql")
    # PostgreSQL refuses to run as root; pytest's tmp_path is private to root.
    as_user = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    base = Path(tempfile.mkdtemp(prefix="llmmath-pg-"))
    data, sock = base / "pgdata", base / "pgsock"
    sock.mkdir()
    if as_user:
        shutil.chown(base, "postgres")
        shutil.chown(sock, "postgres")

    def pg(*argv: str) -> None:
        result = subprocess.run(
            [*as_user, *argv], capture_output=True, text=True, cwd=base, timeout=seconds(60)
        )
        assert result.returncode == 0, f"{argv[0]}: {result.stdout}{result.stderr}"

    pg(str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust")
    options = f"-c listen_addresses='' -k {sock}"
    # -l: the server must not inherit our pipes, or waiting for pg_ctl never ends.
    pg(
        str(bin_dir / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        options,
        "-l",
        str(base / "log"),
        "-w",
        "start",
    )
    try:
        pg(str(bin_dir / "createdb"), "-h", str(sock), "-U", "postgres", COURSE)
        yield f"postgresql+psycopg2://postgres@/{COURSE}?host={sock}"
    finally:
        pg(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(base, ignore_errors=True)


def test_gradebook_on_postgresql_with_parallel_autograde(
    postgres: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    course = Course(tmp_path_factory.mktemp("pg"))
    config = course.root / "nbgrader_config.py"
    config.write_text(config.read_text() + f'c.CourseDirectory.db_url = "{postgres}"\n')
    course.instructor(f"nbgrader generate_assignment {ASSIGNMENT} --force")
    release = course.root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    expected = {}
    for i in range(4):
        folder = course.root / "submitted" / f"pg{i}" / ASSIGNMENT
        folder.mkdir(parents=True)
        wrong = SPEC.wrong_answers if i % 2 else {}
        nbformat.write(
            submission_from_release(release, SPEC.source_nb, wrong), folder / f"{NOTEBOOK}.ipynb"
        )
        expected[f"pg{i}"] = GOOD["bob"] if i % 2 else FULL
    course.instructor(f"python scripts/instructor.py autograde {ASSIGNMENT} --jobs 2")
    assert not (course.root / "gradebook.db").exists(), "the SQLite gradebook was used"
    from nbgrader.api import Gradebook

    with Gradebook(postgres, COURSE) as gb:
        scores = {s.student.id: s.score for s in gb.assignment_submissions(ASSIGNMENT)}
    assert scores == expected


@pytest.mark.parametrize("with_makefile", [True, False], ids=["checkout", "hub course root"])
def test_hints_name_commands_that_exist_where_they_are_printed(
    tmp_path: Path, with_makefile: bool
) -> None:
    """grade's next steps and release-feedback's refusal name commands that run where they are
    printed: make targets of this Makefile in a checkout; the script itself, with arguments its
    parser takes, in a course root with no Makefile (the hub's ~/course, issue #37)."""
    from llmmath_course.instructor.feedback import commands, next_steps

    if with_makefile:
        (tmp_path / "Makefile").write_text("")
    found = commands(tmp_path, "roofline")
    shown = next_steps(tmp_path, "roofline")
    assert found["review"] in shown and found["release"] in shown, shown
    assert ("make " in shown) == with_makefile, shown
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), re.M))
    for command in found.values():
        argv = shlex.split(command.replace("<student>", "bob"))
        if with_makefile:
            assert argv[0] == "make" and argv[1] in targets, command
            continue
        assert argv[:2] == ["python", "scripts/instructor.py"], command
        helped = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "instructor.py"), argv[2], "--help"],
            capture_output=True, text=True, timeout=seconds(60),
        )  # fmt: skip
        assert helped.returncode == 0, (command, helped.stderr)
        assert all(a in helped.stdout for a in argv[4:] if a.startswith("--")), command

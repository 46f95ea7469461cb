"""``make check`` tells the truth (#46 item 4): no points total that assumes the hidden tests
agree, the parts it cannot check named, and a copy nbgrader would not grade as it is refused in
one line that says what nbgrader will grade: a renamed notebook, an answer merged into a locked
test cell, a test cell deleted. (tests/course/test_lab.py runs the report on ordinary copies.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from grading_support import cell_by_id, load_specs, submission_from_release

ROOT = Path(__file__).resolve().parents[2]
SPEC = {spec.assignment: spec for spec in load_specs()}["roofline"]


def copy_of_solution(tmp_path: Path, wrong: dict[str, str] | None = None) -> Path:
    """``tmp_path/my-work/roofline/roofline.ipynb``: the release with the solution's answers."""
    folder = tmp_path / "my-work" / "roofline"
    folder.mkdir(parents=True)
    nb = submission_from_release(SPEC.release_nb, SPEC.source_nb, wrong or {})
    nbformat.write(nb, folder / "roofline.ipynb")
    return folder / "roofline.ipynb"


def check(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "scripts" / "check.py"), "roofline"]
    command += ["--learner-dir", str(tmp_path / "my-work")]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_report_prints_no_points_and_names_what_it_cannot_check(tmp_path: Path) -> None:
    # Part 3 the careful exact meeting point: the visible checks pass it, the hidden tests not.
    copy_of_solution(tmp_path, {"critical_batch": SPEC.wrong_answers["critical_batch"]})
    result = check(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not re.search(r"of [\d.]+ points|if they agree", result.stdout), result.stdout
    assert "5 of 5 autograded parts pass their visible tests" in result.stdout, result.stdout
    assert "cannot check the values" in result.stdout, result.stdout
    assert re.search(r"not checked here: .*reflection.* \(graded by hand\)", result.stdout, re.I)
    assert not re.search(r"consistent|plausible|passed", result.stdout), result.stdout


def test_a_renamed_copy_is_refused_in_one_line(tmp_path: Path) -> None:
    path = copy_of_solution(tmp_path)
    path.rename(path.with_name("roofline_v2.ipynb"))
    result = check(tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    assert "roofline_v2.ipynb: not checked" in lines[0] and "grades only roofline.ipynb" in lines[0]


def test_an_answer_merged_into_its_test_cell_is_refused(tmp_path: Path) -> None:
    """Shift+M on Part 3's answer and its test cell: one cell, the answer's id and metadata,
    the test's source under it; the test cell's id is gone."""
    path = copy_of_solution(tmp_path)
    nb = nbformat.read(path, as_version=4)
    answer, test = cell_by_id(nb, "critical_batch"), cell_by_id(nb, "test_critical_batch")
    answer.source += "\n" + test.source
    nb.cells.remove(test)
    nbformat.write(nb, path)
    result = check(tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    assert "not checked" in lines[0] and "test_critical_batch" in lines[0], lines[0]
    assert "nbgrader will grade" in lines[0], lines[0]


def test_a_test_cell_changed_or_deleted_is_noticed(tmp_path: Path) -> None:
    path = copy_of_solution(tmp_path)
    nb = nbformat.read(path, as_version=4)
    focus = cell_by_id(nb, "test_focus")
    nb.cells.remove(focus)
    test = cell_by_id(nb, "test_critical_batch")
    test.source = "critical_batch_h100 = 295.0\n" + test.source
    nbformat.write(nb, path)
    result = check(tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    said = result.stdout.strip()
    assert "test cell test_focus missing" in said, said
    assert "test cell test_critical_batch changed" in said, said


def test_the_release_itself_is_not_refused(tmp_path: Path) -> None:
    folder = tmp_path / "my-work" / "roofline"
    shutil.copytree(SPEC.release_dir, folder)
    result = check(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not checked —" not in result.stdout, result.stdout
    assert "0 of 5 autograded parts pass their visible tests" in result.stdout, result.stdout

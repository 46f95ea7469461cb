"""Attacks on the grading path (#48): submissions that go around the kernel, graded in the
sandbox (``llmmath_course.instructor.sandbox``) beside an honest class.

One scratch course (the instructor's ``course`` folder in a scratch home: ``solutions/``, the
gradebook, the review ledger) grades, with ``scripts/instructor.py autograde`` and ``report``,
an honest class (the solution, two plausible mistakes, the release untouched) and one student
per attempt of the issue's table that runs on the grading path. Each attempt is asserted
refused, neutralized or flagged, and the honest class keeps its scores.

Run as root, grading makes the ``llmmath-grader`` OS account: run this file under
``flock /tmp/hub.lock`` (CONTRIBUTING.md).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from grading_support import ROOT, generate_assignment, load_specs, read, submission_from_release
from wait_support import seconds

from llmmath_course.instructor.course import gradebook
from llmmath_course.simulate import reflected

SPEC = {spec.assignment: spec for spec in load_specs()}["roofline"]
ASSIGNMENT, NOTEBOOK = SPEC.assignment, SPEC.notebook_id
FULL = SPEC.autograded_points
HONEST = {"alice": FULL, "bob": SPEC.wrong_score, "carol": 0.0}
TOKEN = secrets.token_hex(16)  # the instructor server's hub token, as the hub sets it
MARK = f"llmmath-attack-{secrets.token_hex(4)}"  # names what the attackers leave behind
KERNEL_MEMORY = "512M"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:Object of type <Submitted"),
]


def attacks(root: Path) -> dict[str, str]:
    """Each attacker's code, run in a cell of its own at the top of the release untouched (so
    any answer it steals would score: the release alone scores 0)."""
    solution = root / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    ledger = root / "submitted" / f".reviewed-{ASSIGNMENT}.tsv"
    steal = f"""
import json, pathlib
try:
    source = json.loads(pathlib.Path({str(solution)!r}).read_text())
    for cell in source["cells"]:
        if cell["metadata"].get("nbgrader", {{}}).get("solution") and cell["cell_type"] == "code":
            exec("".join(cell["source"]))
    print("ATTACK worked")
except Exception as error:
    print("ATTACK blocked:", type(error).__name__)
"""
    return {
        # Reads the instructor's solutions during grading and runs the answers in them.
        "reads_solutions": steal,
        # Copies solutions/ and the gradebook to a world-readable folder in /tmp.
        "exfiltrates": f"""
import shutil, os
out = "/tmp/{MARK}-loot"
os.makedirs(out, exist_ok=True)
os.chmod(out, 0o777)
for source in ({str(root / "solutions")!r}, {str(root / "gradebook.db")!r}):
    try:
        (shutil.copytree if os.path.isdir(source) else shutil.copy)(
            source, os.path.join(out, os.path.basename(source)))
        print("ATTACK copied", source)
    except Exception as error:
        print("ATTACK blocked:", type(error).__name__)
""",
        # Writes into the course root and adds a row "by" the instructor to the review ledger.
        "writes_course": f"""
for path, text in (({str(root / (MARK + "-planted"))!r}, "x"),
                   ({str(ledger)!r}, "writes_course\\t\\tall\\t2026\\tinstructor\\tok\\n")):
    try:
        with open(path, "a") as fh:
            fh.write(text)
        print("ATTACK wrote", path)
    except Exception as error:
        print("ATTACK blocked:", type(error).__name__)
""",
        # Starts a detached process (its own session, double-forked) meant to outlive grading.
        "detached": f"""
import subprocess, sys
subprocess.Popen(
    [sys.executable, "-c", "import time\\nwhile True: time.sleep(0.5)", "{MARK}-daemon"],
    start_new_session=True, stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("ATTACK started")
""",
        # Reads the hub's token from the kernel's environment.
        "reads_token": """
import os
print("ATTACK env:", sorted(k for k in os.environ if "JUPYTERHUB" in k or "TOKEN" in k),
      [k for k, v in os.environ.items() if len(v) == 32 and v.isalnum()])
""",
        # 20 MB of output.
        "floods_output": 'print("x" * (20 * 1024 * 1024))\nprint("ATTACK printed")',
        # Memory blow-up: far past the kernel's limit.
        "eats_memory": """
hoard = []
for _ in range(64):
    hoard.append(bytearray(64 * 1024 * 1024))
print("ATTACK allocated", len(hoard))
""",
    }


def attacked(release: Path, code: str) -> Any:
    nb = read(release)
    nb.cells.insert(0, nbformat.v4.new_code_cell(code))  # type: ignore[no-untyped-call]
    return nb


def run(root: Path, env: dict[str, str], *args: str) -> str:
    command = [sys.executable, str(ROOT / "scripts" / "instructor.py"), *args]
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"{args}: rc={result.returncode}\n{result.stdout}{result.stderr}"
    return result.stdout + result.stderr


def attack_output(root: Path, student: str) -> str:
    """The text the attacker's own cell printed while it was graded."""
    path = root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    cell = read(path).cells[0]
    return "".join(out.get("text", "") for out in cell.get("outputs", []))


def scores(root: Path) -> dict[str, float]:
    with gradebook(root) as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions(ASSIGNMENT)}


def leftover_processes(mark: str) -> list[int]:
    """Processes whose command line holds ``mark``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mark.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("instructor")
    root = home / "course"
    root.mkdir()
    (root / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text())
    subprocess.run(["cp", "-r", str(ROOT / "grading"), str(root / "grading")], check=True)
    subprocess.run(["mkdir", "-p", str(root / "solutions")], check=True)
    subprocess.run(
        ["cp", "-r", str(ROOT / "solutions" / ASSIGNMENT), str(root / "solutions")], check=True
    )
    env = dict(
        os.environ,
        HOME=str(home),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        JUPYTERHUB_API_TOKEN=TOKEN,
        JUPYTERHUB_API_URL="http://127.0.0.1:8081/hub/api",
    )
    generate_assignment(root, ASSIGNMENT)
    release = root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    notebooks: dict[str, Any] = {
        "alice": reflected(submission_from_release(release, SPEC.source_nb, {}), SPEC),
        "bob": reflected(
            submission_from_release(release, SPEC.source_nb, SPEC.wrong_answers), SPEC
        ),
        "carol": read(release),
    }
    notebooks |= {name: attacked(release, code) for name, code in attacks(root).items()}
    for student, nb in notebooks.items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")  # type: ignore[no-untyped-call]
    # A byte-identical copy of alice's file.
    copy = root / "submitted" / "copycat" / ASSIGNMENT
    copy.mkdir(parents=True)
    (copy / f"{NOTEBOOK}.ipynb").write_bytes(
        (root / "submitted" / "alice" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_bytes()
    )
    ledger = root / "submitted" / f".reviewed-{ASSIGNMENT}.tsv"
    ledger.write_text("student\tsubmission\tflag\treviewed_at\tby\tnote\n")
    ledger_before = ledger.read_bytes()
    log = run(
        root, env, "autograde", ASSIGNMENT, "--jobs", "2", "--timeout", "20",
        "--kernel-memory", KERNEL_MEMORY,
    )  # fmt: skip
    run(root, env, "report", ASSIGNMENT)
    report_dir = root / "reports" / ASSIGNMENT
    return {
        "root": root,
        "env": env,
        "log": log,
        "scores": scores(root),
        "ledger_before": ledger_before,
        "report": (report_dir / "report.md").read_text(encoding="utf-8"),
        "flags": (report_dir / "flags.csv").read_text(encoding="utf-8"),
    }


def test_an_honest_class_grades_to_the_same_scores(graded: dict[str, Any]) -> None:
    assert {s: graded["scores"][s] for s in HONEST} == HONEST
    assert graded["scores"]["copycat"] == FULL


def test_reading_the_solutions_during_grading_is_refused(graded: dict[str, Any]) -> None:
    printed = attack_output(graded["root"], "reads_solutions")
    assert "ATTACK blocked: FileNotFoundError" in printed, printed
    assert graded["scores"]["reads_solutions"] == 0.0  # what the release alone earns


def test_the_formgraders_autograde_button_grades_in_the_sandbox_too(
    graded: dict[str, Any],
) -> None:
    """The formgrader's per-student Autograde button calls nbgrader's API with the course's
    config, not instructor.py: the solutions reader, handed in again under another name and
    autograded that way, is still refused and scores 0."""
    root = graded["root"]
    student = "via_formgrader"
    folder = root / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    source = root / "submitted" / "reads_solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    (folder / f"{NOTEBOOK}.ipynb").write_bytes(source.read_bytes())
    button = f"""
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader
config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
result = api.autograde({ASSIGNMENT!r}, {student!r})
assert result["success"], result
"""
    done = subprocess.run(
        [sys.executable, "-c", button], cwd=root, env=graded["env"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = attack_output(root, student)
    assert "ATTACK blocked: FileNotFoundError" in printed, printed
    assert scores(root)[student] == 0.0


def test_copying_solutions_and_gradebook_to_tmp_is_refused(graded: dict[str, Any]) -> None:
    printed = attack_output(graded["root"], "exfiltrates")
    assert printed.count("ATTACK blocked: FileNotFoundError") == 2, printed
    assert not Path(f"/tmp/{MARK}-loot").exists(), "the kernel's /tmp is its own"


def test_writing_the_course_root_and_the_review_ledger_is_refused(graded: dict[str, Any]) -> None:
    root = graded["root"]
    printed = attack_output(root, "writes_course")
    assert printed.count("ATTACK blocked: FileNotFoundError") == 2, printed
    assert not (root / f"{MARK}-planted").exists()
    ledger = root / "submitted" / f".reviewed-{ASSIGNMENT}.tsv"
    assert ledger.read_bytes() == graded["ledger_before"]


def test_a_detached_process_does_not_outlive_grading(graded: dict[str, Any]) -> None:
    assert "ATTACK started" in attack_output(graded["root"], "detached")
    assert leftover_processes(f"{MARK}-daemon") == []


def test_the_kernel_environment_holds_no_hub_token(graded: dict[str, Any]) -> None:
    printed = attack_output(graded["root"], "reads_token")
    assert printed.strip() == "ATTACK env: [] []", printed
    autograded = graded["root"] / "autograded" / "reads_token" / ASSIGNMENT
    assert TOKEN not in (autograded / f"{NOTEBOOK}.ipynb").read_text()


def test_a_20_mb_output_is_capped_and_graded(graded: dict[str, Any]) -> None:
    path = graded["root"] / "autograded" / "floods_output" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    assert path.stat().st_size < 2 << 20
    assert "output over" in attack_output(graded["root"], "floods_output")
    assert graded["scores"]["floods_output"] == 0.0  # the release's own score


def test_a_memory_blow_up_is_killed_and_named(graded: dict[str, Any]) -> None:
    assert "eats_memory: NOT GRADED (out of memory)" in graded["log"]
    flags = [line for line in graded["flags"].splitlines() if line.startswith("eats_memory,")]
    assert any("ran out of memory" in line for line in flags), flags


def test_a_byte_identical_copy_is_flagged(graded: dict[str, Any]) -> None:
    review = graded["report"].split("## To review")[1].split("## To grade")[0]
    assert f"**copycat** ({FULL:g}): byte-identical to the submission of alice" in review
    assert f"**alice** ({FULL:g}): byte-identical to the submission of copycat" in review


def test_the_same_answers_are_listed(graded: dict[str, Any]) -> None:
    same = graded["report"].split("## Same answers")[1].split("##")[0]
    assert "- alice, copycat" in same, same
    assert "bob" not in same


# ---- faults: a regrade killed with SIGKILL ------------------------------------------------
def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _wait_gone(pids: list[int], wait_s: float) -> list[int]:
    deadline = time.monotonic() + wait_s
    while True:
        alive = [p for p in pids if Path(f"/proc/{p}").exists()]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def hand_state(root: Path, student: str, cell: str) -> tuple[float | None, bool]:
    with gradebook(root) as gb:
        grade = gb.find_grade(cell, NOTEBOOK, ASSIGNMENT, student)
        return grade.manual_score, bool(grade.needs_manual_grade)


def test_a_killed_regrade_leaves_no_worker_and_its_rerun_restores_hand_grades(
    graded: dict[str, Any],
) -> None:
    root, env = graded["root"], graded["env"]
    cell = SPEC.manual_cells[0]
    with gradebook(root) as gb:
        grade = gb.find_grade(cell, NOTEBOOK, ASSIGNMENT, "alice")
        grade.manual_score, grade.needs_manual_grade = 2.0, False  # graded and reviewed
        gb.db.commit()
    command = [sys.executable, str(ROOT / "scripts/instructor.py"), "regrade", ASSIGNMENT]
    proc = subprocess.Popen(
        [*command, "--jobs", "2"], cwd=root, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    in_flight = root / "autograded" / f".in-flight-{ASSIGNMENT}"
    deadline = time.monotonic() + 180
    while not (in_flight.is_dir() and any(in_flight.iterdir())):
        assert proc.poll() is None and time.monotonic() < deadline, "regrade ended too soon"
        time.sleep(0.1)
    workers = _children(proc.pid)
    assert workers, "regrade has no workers"
    grandchildren = [c for w in workers for c in _children(w)]
    proc.send_signal(signal.SIGKILL)  # its process only: the workers must follow on their own
    proc.wait()
    assert _wait_gone(workers + grandchildren, wait_s=30) == [], "workers outlived regrade"
    saved = root / "autograded" / f".hand-grades-{ASSIGNMENT}.json"
    assert saved.exists(), "regrade did not save the hand grades before it started"
    out = run(root, env, "regrade", ASSIGNMENT, "--jobs", "2")
    assert "an interrupted regrade saved" in out
    # A jail its killed worker had open is swept by the rerun, its kernel with it.
    from llmmath_course.instructor.jail_cgroups import jail_cgroups

    killed = {str(pid) for pid in workers}
    left = [c for c in jail_cgroups() if c.name.split(".")[0] in killed]
    assert left == [], f"the killed workers' jails stay: {left}"
    assert hand_state(root, "alice", cell) == (2.0, False)
    assert not saved.exists()
    # alice's reflection counts now that it is graded; the rest is as before the regrade.
    assert {s: scores(root)[s] for s in HONEST} == dict(HONEST, alice=HONEST["alice"] + 2.0)


# ---- jails a killed worker left ----------------------------------------------------------
#: A grading process that makes a jail and exits without closing it, as a killed worker does.
ORPHAN_JAIL = (
    "from llmmath_course.instructor.sandbox import Jail, Limits\n"
    "jail = Jail(Limits())\n"
    "print(jail.work, *jail.cgroups)\n"
)


def _sleeper_in(cgroups: list[Path]) -> subprocess.Popen[bytes]:
    """A process in each of ``cgroups``, standing in for a kernel left in its jail."""
    sleeper = subprocess.Popen(["sleep", "600"])
    for cgroup in cgroups:
        (cgroup / "cgroup.procs").write_text(str(sleeper.pid))
    return sleeper


def test_a_jail_its_worker_left_is_swept_and_a_live_workers_jail_is_not() -> None:
    """A grading worker killed while its kernel ran never closes that kernel's jail, and bwrap's
    --die-with-parent can miss the death (bubblewrap#633): one kernel stayed, asleep, after a
    `make pytest` here. The next grading run and the test session's start kill what is in a
    jail whose owner is gone and remove its cgroups and folder; a live owner's jail stays."""
    from llmmath_course.instructor.jail_cgroups import sweep_orphaned_jails
    from llmmath_course.instructor.sandbox import Jail, Limits

    made = subprocess.run(
        [sys.executable, "-c", ORPHAN_JAIL], capture_output=True, text=True, check=True
    )
    work, *names = made.stdout.split()
    orphan = [Path(name) for name in names]
    if not orphan:
        shutil.rmtree(work, ignore_errors=True)
        pytest.skip("no writable cgroup here: a jail without one holds nothing to sweep")
    live = Jail(Limits())
    left, kept = _sleeper_in(orphan), _sleeper_in(live.cgroups)
    try:
        lines = sweep_orphaned_jails()
        assert left.wait(timeout=seconds(30)) == -signal.SIGKILL, "the orphan's process lives"
        assert [str(c) for c in orphan if c.exists()] == [], "the orphan's cgroups stay"
        assert not Path(work).exists(), "the orphan's folder stays"
        assert all(any(str(c) in line for line in lines) for c in orphan), lines
        assert kept.poll() is None, "the sweep killed a live worker's kernel"
        assert all(c.exists() for c in live.cgroups) and live.work.exists()
    finally:
        live.close()
        for process in (left, kept):
            process.kill()
            process.wait()

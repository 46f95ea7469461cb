"""Autograde every new submission in worker processes, journalled so a killed run resumes.

Each worker calls nbgrader's own ``NbGraderAPI.autograde`` once per student. With
``kernels="sandbox"`` (the default) the course's autograde steps get ``SandboxExecute`` in place
of nbgrader's ``Execute``: each student's kernel runs in a bubblewrap jail of its own
(``sandbox``), as an account that owns nothing, seeing nothing of the course. With
``kernels="fork"`` the course's autograde steps (``Autograde.autograde_preprocessors``, a
configurable nbgrader setting) get ``ForkExecute`` in place of nbgrader's ``Execute``: the same
preprocessor with kernels forked from a pre-imported process (``forkkernel``). Nothing else of
nbgrader is replaced: its gradebook and metadata checks run as they ship.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import multiprocessing
import os
import select
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from llmmath_course.instructor.course import (
    append_journal,
    course_config,
    ensure_assignment,
    in_gradebook,
    make_api,
    quiet_warnings,
    read_journal,
    submission_stamp,
    submitted_students,
)
from llmmath_course.instructor.jail_cgroups import process_start, sweep_orphaned_jails
from llmmath_course.instructor.sandbox import (
    OOM_KILLED,
    OUT_OF_MEMORY,
    Limits,
    SandboxUnavailableError,
    check_sandbox,
    sandbox_execute_class,
)

_WORKER_API: Any = None
_WORKER_ROOT: Path | None = None
# Failures of the machine, not of the submission: a gradebook write that collided with another
# process, or a kernel too slow to start on a loaded machine. Retried once, serially, at the end.
_TRANSIENT = ("database is locked", "Kernel didn't respond")
KERNELS = ("sandbox", "fork", "fresh")
#: prctl(2) option: the signal a process gets when its parent dies (Linux).
PR_SET_PDEATHSIG = 1
#: How often a worker with no pidfd looks whether its run still lives (``die_with_run``).
RUN_POLL_S = 0.5
#: What every grading worker imports (nbgrader's apps import nbconvert, the gradebook's
#: sqlalchemy...: about 1.2 s of CPU), imported once by the process the workers fork from.
WORKER_PRELOAD = [
    "llmmath_course.instructor.autograde",
    "nbgrader.apps",
    "nbgrader.converters",
    "nbclient",
    "jupyter_client.manager",
    "jupyter_client.provisioning.local_provisioner",
]


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


def grading_config(
    root: Path, timeout: int | None, kernels: str, limits: Limits | None = None
) -> dict[str, dict[str, Any]]:
    """The config a worker's API gets on top of the course's: the cell timeout, and the
    autograde steps with the course's Execute step (the sandboxed one, or nbgrader's own in an
    older config) replaced by ``SandboxExecute`` at these limits (``kernels="sandbox"``),
    ``ForkExecute`` (``"fork"``) or nbgrader's own ``Execute`` (``"fresh"``)."""
    from nbgrader.preprocessors import Execute

    from llmmath_course.instructor.forkkernel import fork_execute_class

    if kernels not in KERNELS:
        raise ValueError(f"kernels must be one of {KERNELS}, not {kernels!r}")
    overrides: dict[str, dict[str, Any]] = {}
    if timeout:
        overrides["Execute"] = {"timeout": timeout}
    steps = require_hidden_checks(root)
    runs = [step for step in steps if isinstance(step, type) and issubclass(step, Execute)]
    if len(runs) != 1:  # an nbgrader whose steps changed: say so, never run unjailed
        raise RuntimeError(
            f"the autograde steps {steps} hold {len(runs)} Execute steps, not one: "
            f"the {kernels} kernels cannot replace it"
        )
    if kernels == "sandbox":
        execute = sandbox_execute_class(limits or Limits())
    elif kernels == "fork":
        execute = fork_execute_class()
    else:
        execute = Execute  # nbgrader's own, unsandboxed: asked for by name
    steps = [execute if step is runs[0] else step for step in steps]
    overrides["Autograde"] = {"autograde_preprocessors": steps}
    return overrides


def die_with_parent() -> None:
    """End this process when the one that started it ends (a SIGKILL of ``regrade`` or
    ``grade`` leaves no worker grading on); exit now if that already happened. A pool's worker
    has the fork server for parent, which outlives a killed run: ``die_with_run`` covers it."""
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent or parent == 1:
        os._exit(1)


def die_with_run(run_pid: int) -> None:
    """End this worker when the grading run (process ``run_pid``) ends, a SIGKILL included. A
    worker's parent is the fork server, which outlives a killed run while a worker lives (each
    holds the server's pipe open), so the parent's death would come too late: a thread waits
    on the run's pidfd instead, or, where there is none (Linux before 5.3, or a container whose
    seccomp filter refuses ``pidfd_open``), looks at the run twice a second. Exit now if the run
    is already gone."""
    try:
        run: int | None = os.pidfd_open(run_pid)
    except ProcessLookupError:
        os._exit(1)
    except OSError:
        run = None
    started = process_start(run_pid, zombie=False)
    if started is None:
        os._exit(1)

    def watch() -> None:
        if run is not None:
            select.select([run], [], [])
        else:
            # Ended, reaped, or another start time (the pid was reused): the run is gone.
            while process_start(run_pid, zombie=False) == started:
                time.sleep(RUN_POLL_S)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="die-with-run", daemon=True).start()


def worker_init(
    root: str,
    timeout: int | None,
    kernels: str = "sandbox",
    limits: Limits | None = None,
    run_pid: int | None = None,
) -> None:
    """Set up this grading process: its own nbgrader API with ``grading_config``. A pool's
    worker passes ``run_pid``, the run it works for, and ends with it."""
    global _WORKER_API, _WORKER_ROOT
    die_with_parent()
    if run_pid is not None:
        die_with_run(run_pid)
    quiet_warnings()
    _WORKER_ROOT = Path(root)
    _WORKER_API = make_api(Path(root), grading_config(Path(root), timeout, kernels, limits))


def in_flight_path(root: Path, assignment: str) -> Path:
    """The folder where each worker names the student it grades now (one file per worker)."""
    return root / "autograded" / f".in-flight-{assignment}"


def worker_grade(assignment: str, student: str) -> tuple[str, bool, str, float]:
    """Autograde one student in this process: (student, success, nbgrader's log, seconds)."""
    start = time.perf_counter()
    assert _WORKER_ROOT is not None
    marker = in_flight_path(_WORKER_ROOT, assignment) / str(os.getpid())
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(student)  # if this worker dies, the parent names who it was grading
    OOM_KILLED.clear()
    result = _WORKER_API.autograde(assignment, student, force=True, create=True)
    log = result.get("log", "") + result.get("error", "")
    ok = bool(result["success"])
    if OOM_KILLED:
        log = f"{OUT_OF_MEMORY} (its sandbox's memory cgroup)\n{log}"
        ok = False  # a score from a notebook cut short by the kill is no score
    marker.unlink(missing_ok=True)
    return student, ok, log, time.perf_counter() - start


def autograde(
    root: Path,
    assignment: str,
    jobs: int = 1,
    timeout: int | None = None,
    force: bool = False,
    kernels: str = "sandbox",
    limits: Limits | None = None,
) -> list[str]:
    """Autograde every submission of ``assignment`` not yet in the journal; return failures."""
    if not (root / "solutions" / assignment).is_dir() and not in_gradebook(root, assignment):
        sys.exit(f"unknown assignment {assignment!r}: no solutions/{assignment}/ in {root}")
    if kernels == "sandbox":
        try:
            check_sandbox()
        except SandboxUnavailableError as error:
            sys.exit(f"cannot grade in the sandbox: {error}")
        for line in sweep_orphaned_jails():  # what a killed run left: its kernels stop now
            print(line, flush=True)
    else:
        print(
            f"WARNING: --kernels {kernels} grades WITHOUT the sandbox: each submission's code "
            "runs as you, and can read solutions/ and write the gradebook",
            flush=True,
        )
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
    ensure_assignment(root, assignment)
    require_hidden_checks(root)
    failed: list[str] = []
    start = time.perf_counter()
    # Workers are forked from a fork server (a fresh process that imported WORKER_PRELOAD, no
    # gradebook open and no thread), not spawned: a spawned worker was a new Python importing
    # nbgrader again. A worker's parent is then that server, which exits only once this run
    # and every worker are gone, so each worker ends with this run itself (``die_with_run``).
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_PRELOAD)
    shutil.rmtree(in_flight_path(root, assignment), ignore_errors=True)
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=worker_init,
        initargs=(str(root), timeout, kernels, limits, os.getpid()),
    ) as pool:
        futures = [pool.submit(worker_grade, assignment, s) for s in todo]
        retry: list[str] = []
        try:
            for count, future in enumerate(concurrent.futures.as_completed(futures), 1):
                student, ok, log, seconds = future.result()
                if not ok and any(marker in log for marker in _TRANSIENT):
                    retry.append(student)  # not the student's fault: run it again, alone
                    continue
                _record(root, assignment, student, stamps[student], ok, log, failed)
                elapsed = time.perf_counter() - start
                why = " (out of memory)" if log.startswith(OUT_OF_MEMORY) else ""
                print(
                    f"[{count}/{len(todo)}] {student}: {'graded' if ok else 'NOT GRADED'}{why} "
                    f"in {seconds:.1f} s ({elapsed:.0f} s elapsed, "
                    f"{elapsed / count * (len(todo) - count):.0f} s to go)",
                    flush=True,
                )
        except concurrent.futures.process.BrokenProcessPool:
            sys.exit(_worker_died(root, assignment))
    if retry:
        worker_init(str(root), timeout, kernels, limits)
        for student in retry:
            student, ok, log, seconds = worker_grade(assignment, student)
            _record(root, assignment, student, stamps[student], ok, log, failed)
            print(f"[retry] {student}: {'graded' if ok else 'NOT GRADED'} in {seconds:.1f} s")
    wall = time.perf_counter() - start
    print(
        f"autograded {len(todo) - len(failed)} of {len(todo)} in {wall:.1f} s"
        + (f"; nbgrader could not grade {len(failed)}: {', '.join(failed)}" if failed else ""),
        flush=True,
    )
    return failed


def _worker_died(root: Path, assignment: str) -> str:
    """What to say when a grading worker was killed (out of memory, most likely): the
    submissions it was grading, from the workers' in-flight files."""
    folder = in_flight_path(root, assignment)
    students = sorted({p.read_text() for p in folder.glob("*")}) if folder.is_dir() else []
    return (
        "a grading worker was killed (out of memory?) while grading "
        + (", ".join(students) if students else "an unknown submission")
        + ". Graded submissions are journalled: run the same command again to go on; "
        "--jobs 1 grades one at a time."
    )


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

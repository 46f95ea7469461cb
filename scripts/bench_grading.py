"""Autograde throughput: N simulated submissions of one assignment, graded by instructor.py.

    python scripts/bench_grading.py                    # 300 submissions, 2 processes a core
    python scripts/bench_grading.py -n 40 --jobs 1     # a quick serial figure
    python scripts/bench_grading.py -n 50 --breakdown 20   # where each submission's CPU goes

A scratch course (the root nbgrader_config.py and solutions/, in a temporary folder) gets
``n`` submissions of the assignment: 40 % the solution, 30 % with the spec's two mistakes, 10 %
the release untouched and 20 % broken in the ways tests/course/test_instructor.py grades (an
infinite loop, a kernel death, a corrupt file, ...: ``llmmath_course.simulate``). It then times
``python scripts/instructor.py autograde <assignment> --jobs J`` and prints (and with
``--out``, writes as JSON) the wall time, submissions per minute and the range of scores each
kind of submission got (a fast run that grades wrongly shows there). ``--breakdown K`` grades
in this process instead and splits the CPU seconds of one submission into the grading worker's
parts (kernel start, execution, nbgrader's bookkeeping, gradebook reads and writes, ...) and
the kernel's own (start-up, cells). Not part of make test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--submissions", type=int, default=300)
    parser.add_argument("-j", "--jobs", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--timeout", type=int, help="seconds per cell (default: the config's)")
    parser.add_argument("--assignment", default="roofline")
    parser.add_argument(
        "--kernels", choices=("sandbox", "fork", "fresh"), default="sandbox",
        help="instructor.py's kernels: each in its own sandbox (default), forked from a "
        "pre-imported process (no sandbox), or nbgrader's own (no sandbox)",
    )  # fmt: skip
    parser.add_argument(
        "--breakdown", type=int, metavar="K",
        help="instead: grade K submissions in this process, one by one, and print where each "
        "one's CPU goes (cProfile on CPU time, and each kernel's own timers)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the scratch course")
    args = parser.parse_args(argv)

    import nbformat

    from llmmath_course.simulate import bad_submissions, load_specs, read, submission_from_release

    spec = {s.assignment: s for s in load_specs()}[args.assignment]
    scratch = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    env = dict(
        os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    )
    try:
        shutil.copy2(ROOT / "nbgrader_config.py", scratch / "nbgrader_config.py")
        shutil.copytree(ROOT / "grading", scratch / "grading")
        shutil.copytree(
            ROOT / "solutions" / spec.assignment, scratch / "solutions" / spec.assignment
        )
        subprocess.run(
            [sys.executable, "-m", "nbgrader", "generate_assignment", spec.assignment, "--force"],
            cwd=scratch, env=env, check=True, capture_output=True,
        )  # fmt: skip
        release = scratch / "exercises" / spec.assignment / f"{spec.notebook_id}.ipynb"
        bad = bad_submissions(release, spec)
        bad_names = sorted(bad)
        kinds: dict[str, int] = {}
        kind_of: dict[str, str] = {}
        for i in range(args.submissions):
            slot = i % 10
            if slot < 4:
                kind, nb = "correct", submission_from_release(release, spec.source_nb, {})
            elif slot < 7:
                kind = "partial"
                nb = submission_from_release(release, spec.source_nb, spec.wrong_answers)
            elif slot < 8:
                kind, nb = "blank", read(release)
            else:
                kind = bad_names[(i // 10 * 2 + slot - 8) % len(bad_names)]
                nb = bad[kind]
            kinds[kind] = kinds.get(kind, 0) + 1
            kind_of[f"s{i:03d}"] = kind
            folder = scratch / "submitted" / f"s{i:03d}" / spec.assignment
            folder.mkdir(parents=True)
            path = folder / f"{spec.notebook_id}.ipynb"
            if isinstance(nb, bytes):
                path.write_bytes(nb)
            else:
                nbformat.write(nb, path)  # type: ignore[no-untyped-call]  # untyped
        print(f"{args.submissions} submissions: {kinds}", flush=True)
        if args.breakdown:
            figures = breakdown(scratch, spec.assignment, args.breakdown, args.kernels)
            print(json.dumps(figures, indent=2))
            if args.out:
                args.out.write_text(json.dumps(figures, indent=2) + "\n")
            return 0
        command = [
            sys.executable, str(ROOT / "scripts" / "instructor.py"),
            "autograde", spec.assignment, "--jobs", str(args.jobs), "--kernels", args.kernels,
        ] + (["--timeout", str(args.timeout)] if args.timeout else [])  # fmt: skip
        load_before = os.getloadavg()[0]
        cpu_before = cpu_of_children()
        kernel_log = scratch / "kernel-memory.log"
        env["LLMMATH_KERNEL_MEMORY_LOG"] = str(kernel_log)
        measure = measuring_cgroup()
        start = time.perf_counter()
        subprocess.run(
            command, cwd=scratch, env=env, check=True,
            preexec_fn=(lambda: join_cgroup(measure)) if measure else None,
        )  # fmt: skip
        wall_s = time.perf_counter() - start
        memory = memory_figures(measure, kernel_log)
        # Every process of the run (workers, fork servers, kernels) is a waited-for descendant.
        cpu_s = cpu_of_children() - cpu_before
        figures = {
            "assignment": spec.assignment,
            "submissions": args.submissions,
            "jobs": args.jobs,
            "cores": os.cpu_count(),
            "wall_s": round(wall_s, 1),
            "per_submission_s": round(wall_s / args.submissions, 2),
            "submissions_per_min": round(60 * args.submissions / wall_s, 1),
            "kernels": args.kernels,
            "cpu_s": round(cpu_s, 1),
            "cpu_per_submission_s": round(cpu_s / args.submissions, 2),
            "load_average_before": round(load_before, 2),
            "load_average_after": round(os.getloadavg()[0], 2),
            **memory,
            "mix": kinds,
            "scores": scores_by_kind(scratch, spec.assignment, kind_of),
            "timeout_s": args.timeout,
            "command": " ".join(["python scripts/bench_grading.py", *(argv or sys.argv[1:])]),
        }
        print(json.dumps(figures, indent=2))
        if args.out:
            args.out.write_text(json.dumps(figures, indent=2) + "\n")
    finally:
        if args.keep:
            print(f"scratch course kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


# ---- memory: the grading run's own processes in a cgroup of their own (as root) --------------
def measuring_cgroup() -> Path | None:
    """A fresh memory cgroup for the grading run (cgroup v1 or v2), or None if none can be made.
    Sandboxed kernels leave it for cgroups of their own: they are counted apart."""
    for base in (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")):
        if (base / "cgroup.procs").exists() and os.access(base, os.W_OK):
            path = base / f"bench-grading-{os.getpid()}"
            try:
                path.mkdir()
            except OSError:
                continue
            return path
    return None


def join_cgroup(path: Path) -> None:
    (path / "cgroup.procs").write_text(str(os.getpid()))


def memory_figures(cgroup: Path | None, kernel_log: Path) -> dict[str, object]:
    """Peak memory of the grading run's own processes (workers and all, kernels apart) and of
    the sandboxed kernels, in MB."""
    figures: dict[str, object] = {}
    if cgroup is not None:
        for name in ("memory.max_usage_in_bytes", "memory.peak"):
            if (cgroup / name).exists():
                figures["grading_processes_peak_mb"] = round(int((cgroup / name).read_text()) / 1e6)
                break
        for _ in range(50):  # its last processes may still be being reaped
            try:
                cgroup.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    if kernel_log.exists():
        peaks = [int(line) for line in kernel_log.read_text().split()]
        if peaks:
            figures["kernel_peak_mb_max"] = round(max(peaks) / 1e6)
            figures["kernel_peak_mb_median"] = round(sorted(peaks)[len(peaks) // 2] / 1e6)
    return figures


# Where a grading worker's CPU goes, by the nbgrader/nbclient function that spends it (CPU time
# under it, callees included; the parts do not overlap).
PARTS = {
    "kernel start, worker side (launch, connect, wait)": ("nbclient/client.py", "setup_kernel"),
    "execution, worker side (send cells, collect outputs)": (
        "nbconvert/preprocessors/execute.py", "preprocess_cell",
    ),
    "nbgrader bookkeeping (student, submission, files)": (
        "nbgrader/converters/autograde.py", "init_assignment",
    ),
    "cell metadata checks": ("nbgrader/preprocessors/checkcellmetadata.py", "preprocess"),
    "gradebook writes (scores)": ("nbgrader/preprocessors/saveautogrades.py", "preprocess"),
    "gradebook reads (locked cells restored)": (
        "nbgrader/preprocessors/overwritecells.py", "preprocess",
    ),
    "notebook read": ("nbformat/__init__.py", "read"),
    "notebook write": ("nbgrader/converters/base.py", "write_single_notebook"),
}  # fmt: skip


def breakdown(root: Path, assignment: str, count: int, kernels: str) -> dict[str, object]:
    """CPU seconds per submission: the grading worker's, by part, and the kernel's.

    ``count`` submissions are graded without a profiler for the totals, then ``count`` more
    under cProfile (on CPU time) for each part's share of the worker's CPU: the profiler slows
    Python code about threefold, so its seconds are scaled to the unprofiled total.
    """
    import cProfile
    import pstats

    from llmmath_course.instructor import autograde, course

    os.chdir(root)
    log = root / "kernel-cpu.log"
    os.environ["LLMMATH_KERNEL_CPU_LOG"] = str(log)
    autograde.worker_init(str(root), None, kernels)
    students = course.submitted_students(root, assignment)
    if len(students) < 2 * count + 1:
        sys.exit(f"--breakdown {count} needs at least {2 * count + 1} submissions (-n)")
    autograde.worker_grade(assignment, students[0])  # starts the fork server: not counted
    log.write_text("")
    plain, profiled = students[1 : count + 1], students[count + 1 : 2 * count + 1]
    kids_before, server_before = cpu_of_children(), fork_server_cpu()
    worker_before = time.process_time()
    for student in plain:
        autograde.worker_grade(assignment, student)
    worker_s = (time.process_time() - worker_before) / count
    kernel_s = (cpu_of_children() - kids_before + fork_server_cpu() - server_before) / count
    # Forked kernels log their own start-up and run CPU (the same kernels as kernel_s).
    rows = [tuple(map(float, line.split())) for line in log.read_text().splitlines()]
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    for student in profiled:
        autograde.worker_grade(assignment, student)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in stats.values())  # every function's own time
    shares = {
        name: sum(row[3] for (path, _, func), row in stats.items()
                  if path.endswith(where) and func == func_name) / total
        for name, (where, func_name) in PARTS.items()
    }  # fmt: skip
    shares["the rest of the worker (nbgrader, nbconvert, logging)"] = 1 - sum(shares.values())
    figures: dict[str, object] = {
        "submissions": count,
        "kernels": kernels,
        "worker_cpu_s": {k: round(v * worker_s, 3) for k, v in shares.items()},
        "worker_cpu_total_s": round(worker_s, 3),
        "kernel_cpu_total_s": round(kernel_s, 3),
    }
    if rows:
        figures["kernel_cpu_s"] = {
            "start-up (IPKernelApp.initialize)": round(sum(r[0] for r in rows) / len(rows), 3),
            "cells and shutdown": round(sum(r[1] for r in rows) / len(rows), 3),
        }
    figures["cpu_per_submission_s"] = round(worker_s + kernel_s, 3)
    return figures


def fork_server_cpu() -> float:
    """CPU seconds of this worker's fork server and its finished kernels (0 without one)."""
    from llmmath_course.instructor.forkkernel import ForkServer

    server = ForkServer._instance
    if server is None:
        return 0.0
    fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def cpu_of_children() -> float:
    """User + system CPU seconds of every finished descendant that was waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def scores_by_kind(root: Path, assignment: str, kind_of: dict[str, str]) -> dict[str, str]:
    """The range of scores each kind of submission got, so a fast but wrong run shows."""
    from llmmath_course.instructor.course import scores

    by_kind: dict[str, list[float]] = {}
    max_score = 0.0
    for student, (score, most) in scores(root, assignment).items():
        by_kind.setdefault(kind_of[student], []).append(score)
        max_score = max(max_score, most)
    return {
        kind: f"{min(got):g}-{max(got):g} of {max_score:g} ({len(got)} graded)"
        for kind, got in sorted(by_kind.items())
    }


if __name__ == "__main__":
    sys.exit(main())

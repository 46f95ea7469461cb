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
is forked from a pristine pre-imported process (``forkkernel``; ``--kernels fresh`` starts
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

``python scripts/instructor.py`` runs ``main`` (scripts/instructor.py is a one-line wrapper).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llmmath_course.instructor.autograde import KERNELS, autograde
from llmmath_course.instructor.course import collect, exchange_inbound, export, quiet_warnings
from llmmath_course.instructor.feedback import next_steps, release_feedback
from llmmath_course.instructor.regrade import regrade
from llmmath_course.instructor.report import report
from llmmath_course.instructor.review import review
from llmmath_course.instructor.sandbox import Limits, parse_size


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
            "--kernels", choices=KERNELS, default="sandbox",
            help="sandbox: each kernel in a bubblewrap jail of its own (default); "
            "fork: forked from a pre-imported process, fresh: nbgrader's own - both WITHOUT "
            "the sandbox, as you",
        )  # fmt: skip
        step.add_argument(
            "--kernel-memory", type=parse_size, default=Limits().memory_bytes,
            help="memory each sandboxed kernel may use, e.g. 512M or 2G (default 1G)",
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
        limits = Limits(memory_bytes=args.kernel_memory)
        autograde(root, args.assignment, args.jobs, args.timeout, args.force, args.kernels, limits)
        if args.command == "grade":
            export(root)
            report(root, args.assignment)
            print(next_steps(root, args.assignment), flush=True)
    elif args.command == "regrade":
        limits = Limits(memory_bytes=args.kernel_memory)
        regrade(root, args.assignment, args.jobs, args.timeout, args.kernels, limits)
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

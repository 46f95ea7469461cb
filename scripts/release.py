"""Regenerate the student notebooks in exercises/ from their nbgrader source in solutions/.

    python scripts/release.py             # every assignment under solutions/
    python scripts/release.py roofline    # one assignment
    python scripts/release.py --check     # exit 1 if exercises/ differs from a fresh release

It runs ``nbgrader generate_assignment <assignment> --force`` (with the root nbgrader_config.py)
in a temporary copy of the course, then replaces ``exercises/<assignment>/`` with the result, so
the repository's gradebook.db is neither created nor changed. The output depends only on
solutions/ and nbgrader_config.py, so running it twice gives the same bytes.

To grade, also run ``nbgrader generate_assignment <assignment> --force`` at the repository root
(environment ``bin/`` on PATH): it writes the same exercises/ and records the assignment, with
its hidden tests, in gradebook.db.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "solutions"
RELEASE = ROOT / "exercises"


def generate(assignment: str, course: Path) -> Path:
    """Release ``assignment`` inside the scratch course ``course``; return its release folder."""
    shutil.copy2(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copytree(
        SOURCE / assignment,
        course / "solutions" / assignment,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
    )
    env = dict(os.environ)
    # The gradebook shells out to alembic, which lives next to this interpreter.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    command = [sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force"]
    result = subprocess.run(command, cwd=course, env=env, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"{' '.join(command[2:])} failed:\n{result.stdout}{result.stderr}")
    return course / "exercises" / assignment


def differences(fresh: Path, committed: Path) -> list[str]:
    """Files that are missing, extra or changed in ``committed`` compared with ``fresh``."""
    if not committed.is_dir():
        return [f"{committed.relative_to(ROOT)} is missing"]
    problems = []
    comparison = filecmp.dircmp(fresh, committed, ignore=[".ipynb_checkpoints"])
    stack = [(comparison, Path())]
    while stack:
        node, prefix = stack.pop()
        problems += [f"missing {prefix / name}" for name in node.left_only]
        problems += [f"not generated: {prefix / name}" for name in node.right_only]
        for name in node.common_files:
            if not filecmp.cmp(fresh / prefix / name, committed / prefix / name, shallow=False):
                problems.append(f"out of date: {prefix / name}")
        stack += [(sub, prefix / name) for name, sub in node.subdirs.items()]
    return [f"exercises/{committed.name}: {problem}" for problem in problems]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="default: every folder in solutions/")
    parser.add_argument("--check", action="store_true", help="compare only; change nothing")
    args = parser.parse_args(argv)
    assignments = args.assignments or sorted(p.name for p in SOURCE.iterdir() if p.is_dir())
    problems: list[str] = []
    for assignment in assignments:
        if not (SOURCE / assignment).is_dir():
            sys.exit(f"no assignment {assignment!r} in {SOURCE}")
        with tempfile.TemporaryDirectory() as scratch:
            fresh = generate(assignment, Path(scratch))
            if args.check:
                problems += differences(fresh, RELEASE / assignment)
                continue
            shutil.rmtree(RELEASE / assignment, ignore_errors=True)
            shutil.copytree(fresh, RELEASE / assignment)
            print(f"wrote {(RELEASE / assignment).relative_to(ROOT)}/")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("run: python scripts/release.py", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

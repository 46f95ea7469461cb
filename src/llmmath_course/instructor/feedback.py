"""Feedback for students, from the final scores, released only once review is done; and the
review and release commands as they exist where they are printed."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from llmmath_course.instructor.course import MATHJAX, exchange_inbound, make_api, nbgrader, plural
from llmmath_course.instructor.review import open_review


def release_feedback(root: Path, assignment: str, force: bool = False) -> None:
    """Feedback HTML from the final scores (hand grades included), released to the exchange;
    refused while review is open (see open_review) unless ``force``. Each release is logged in
    feedback/.releases-<assignment>.log, a forced one with what was still open."""
    import datetime
    import getpass

    waiting = open_review(root, assignment)
    hand = sum(1 for line in waiting if line.startswith("to grade by hand"))
    summary = (
        f"{plural(hand, 'answer')} to grade by hand, {plural(len(waiting) - hand, 'flag')} open"
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

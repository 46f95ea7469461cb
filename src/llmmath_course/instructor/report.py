"""The grade report: reports/<assignment>/report.md, scores.png, flags.csv and the rubric.

It lists first what needs a human's review: submissions collect refused (not owned by the
student they name), submissions nbgrader could not grade (corrupt notebook, kernel death),
missing or edited test cells, and code that looks like it tampers with the checking machinery
(``tamper``). Hand grading (the reflections) is counted and listed on its own.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from llmmath_course.instructor.copies import same_answer_groups
from llmmath_course.instructor.course import make_api, plural, refused
from llmmath_course.instructor.flags import all_flags, flag_in_formgrader, read_reviewed
from llmmath_course.instructor.rows import Row, report_rows
from llmmath_course.instructor.rubric import rubric


def report(root: Path, assignment: str, out: Path | None = None) -> Path:
    """Write reports/<assignment>/report.md, scores.png and flags.csv; return the report.
    Every submission with a flag not yet reviewed is flagged in the formgrader too."""
    from matplotlib.figure import Figure

    out = out or root / "reports" / assignment
    out.mkdir(parents=True, exist_ok=True)
    rows, columns = report_rows(root, assignment)
    forged = refused(root, assignment)
    flags = all_flags(root, assignment, rows, forged)
    done = read_reviewed(root, assignment)
    open_flags = [f for f in flags if f.key not in done]
    flag_in_formgrader(root, assignment, sorted({f.student for f in open_flags}), True)
    plot_scores(rows, assignment, out / "scores.png", Figure)
    rubric(root, assignment, out)
    path = out / "report.md"
    reviewed = {(f.student, f.text) for f in flags if f.key in done}
    release = root / make_api(root).coursedir.release_directory / assignment
    alike = same_answer_groups(root, assignment, [row.student for row in rows], release)
    text = _markdown(assignment, rows, columns, forged, reviewed, alike)
    path.write_text(text, "utf-8")
    with (out / "flags.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "score", "max_score", "kind", "flag", "reviewed"])
        for entry in forged:
            flag = f"{entry['submission']}: {entry['problem']}"
            seen = (entry["student"], f"refused at collect: {flag}") in reviewed
            writer.writerow([entry["student"], "", "", "refused", flag, "yes" if seen else ""])
        for row in rows:
            for flag in row.flags:
                done_yes = "yes" if (row.student, flag) in reviewed else ""
                writer.writerow([row.student, row.score, row.max_score, "review", flag, done_yes])
            for cell in row.to_grade:
                writer.writerow(
                    [row.student, row.score, row.max_score, "hand", f"grade {cell}", ""]
                )
        scored = {row.student: row for row in rows}
        for group in alike:
            for student in group:
                row = scored[student]
                others = ", ".join(s for s in group if s != student)
                flag = f"same answer cells as {others}"
                writer.writerow([student, row.score, row.max_score, "copy", flag, ""])
    reviews = sum(1 for row in rows if row.flags)
    hand = sum(len(row.to_grade) for row in rows)
    print(f"report written to {path}: {reviews} to review, {hand} to grade by hand", flush=True)
    if forged:
        print(f"REFUSED at collect: {plural(len(forged), 'submission')} (see the report)")
    return path


def plot_scores(rows: list[Row], assignment: str, path: Path, figure: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    fig = figure(figsize=(6, 3.5))
    ax = fig.add_subplot()
    values = [row.score or 0.0 for row in rows]
    top = max((row.max_score for row in rows), default=1.0)
    ax.hist(values, bins=[x - 0.5 for x in range(int(top) + 2)], color="tab:blue", rwidth=0.9)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count of students
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(
        xlabel=f"score (of {top:g}; hand-graded points count once graded)",
        ylabel="students",
        title=f"{assignment}: {len(rows)} submissions",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _markdown(
    assignment: str,
    rows: list[Row],
    columns: list[str],
    forged: list[dict[str, str]],
    reviewed: set[tuple[str, str]],
    alike: list[list[str]],
) -> str:
    values = sorted(row.score or 0.0 for row in rows)
    lines = [f"# Grade report: {assignment}", ""]
    if forged:
        lines += [
            f"## Refused at collect: {plural(len(forged), 'submission')}",
            "",
            "Handed in under a student's name by another account (or holding a link): not "
            "collected, not graded; each stays in the exchange's inbound folder as evidence. "
            "The named student's own newest submission, if any, was collected instead.",
            "",
        ]
        for e in forged:
            flag = f"refused at collect: {e['submission']}: {e['problem']}"
            mark = " *(reviewed)*" if (e["student"], flag) in reviewed else ""
            lines += [f"- **{e['student']}**: `{e['submission']}`: {e['problem']}.{mark}"]
        lines += [""]
    if values:
        mean = sum(values) / len(values)
        median = values[len(values) // 2]
        lines += [
            f"{len(rows)} submissions; mean {mean:.2f}, median {median:g}, "
            f"max {values[-1]:g} of {rows[0].max_score:g}.",
            "",
        ]
    lines += ["![score distribution](scores.png)", ""]
    flagged = [row for row in rows if row.flags]
    lines += [f"## To review: {plural(len(flagged), 'submission')}", ""]
    lines += [
        "Something may be wrong with these: read the submission before trusting its score.",
        "",
    ]
    for row in flagged:
        also = f" Also to grade by hand: {', '.join(row.to_grade)}." if row.to_grade else ""
        seen = all((row.student, flag) in reviewed for flag in row.flags)
        mark = " *(reviewed)*" if seen else ""
        lines += [f"- **{row.student}** ({row.score:g}): {'; '.join(row.flags)}.{also}{mark}"]
    if flagged:
        lines += [
            "",
            "Each is flagged in the formgrader until marked reviewed: `python "
            f"scripts/instructor.py review {assignment} <student>`. `release-feedback` waits "
            "until every flag is reviewed and every answer graded.",
        ]
    lines += ["" if flagged else "Nothing.", ""]
    if alike:
        lines += [
            f"## Same answers: {plural(len(alike), 'group')} of students",
            "",
            "Every answer cell these students changed is the same as the others' in the group, "
            "comments and whitespace aside. A short exercise can be answered alike by honest "
            "students: read them before you judge (byte-identical submissions are flagged "
            "above).",
            "",
            *[f"- {', '.join(group)}" for group in alike],
            "",
        ]
    waiting = [row for row in rows if row.to_grade]
    count = sum(len(row.to_grade) for row in waiting)
    lines += [
        f"## To grade by hand: {plural(count, 'answer')} in {plural(len(waiting), 'submission')}",
        "",
    ]
    if waiting:
        by_cell: dict[str, list[str]] = {}
        for row in waiting:
            for cell in row.to_grade:
                by_cell.setdefault(cell, []).append(row.student)
        for cell, students in by_cell.items():
            lines += [f"- `{cell}` ({len(students)}): {', '.join(students)}"]
        lines += [
            "",
            "In JupyterLab: *Nbgrader* menu > *Formgrader* > *Manage Submissions*. Model answers "
            "and marking: [rubric.md](rubric.md) (graders only).",
        ]
    else:
        lines += ["Nothing."]
    lines += [
        "",
        "## Scores",
        "",
        "A score set by a person (hand grade or override) is marked *.",
        "",
    ]
    lines += ["| student | score | " + " | ".join(columns) + " |"]
    lines += ["|---" * (len(columns) + 2) + "|"]
    for row in rows:
        cells = [_cell_text(row, c) for c in columns]
        lines += [f"| {row.student} | {row.score:g} | " + " | ".join(cells) + " |"]
    return "\n".join(lines) + "\n"


def _cell_text(row: Row, cell: str) -> str:
    value = row.cells.get(cell)
    if value is None:
        return "—"
    return f"{value:g}*" if cell in row.hand_set else f"{value:g}"

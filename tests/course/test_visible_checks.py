"""The visible checks catch the mistakes they can see, and only the hidden tests the rest.

Each spec lists realistic mistakes (``AssignmentSpec.mistakes``), each with whether a visible
test cell fails on it; its ``wrong_answers`` are mistakes the visible checks never see. Here
every one is put into the committed release in place of its answer and the notebook is run cell
by cell, as Run All runs it: a caught mistake must fail a visible test cell (an error or a line
on stderr, as nbgrader scores it), an uncaught one must pass them all, and the right answers
must pass every visible check. ``PYTHONPATH=tests python tests/course/test_visible_checks.py``
prints the counts (tests/ holds grading_support, as pytest's ``pythonpath`` says).

Each test cell also reports its part in one line, in words (#36 item 3), and never raises, so Run
All reaches every part: not answered yet, its answer cell raised, failed (on stderr, which
nbgrader scores 0 as it does an error), or consistent / plausible, with what the hidden tests
still check (never "passed": the visible checks do not know the values).
"""

from __future__ import annotations

import re

import pytest
from grading_support import (
    Mistake,
    cell_by_id,
    filled_release,
    load_specs,
    nbgrader_meta,
    read,
    run_visible,
)

SPECS = {spec.assignment: spec for spec in load_specs()}
MEASURED = [name for name, spec in SPECS.items() if spec.mistakes]


def all_mistakes(assignment: str) -> list[Mistake]:
    spec = SPECS[assignment]
    unseen = [
        Mistake(cell, source, "spec wrong answer", False)
        for cell, source in spec.wrong_answers.items()
    ]
    return [*spec.mistakes, *unseen]


def caught(assignment: str, mistake: Mistake) -> tuple[bool, list[str]]:
    outcome = run_visible(filled_release(SPECS[assignment], {mistake.cell: mistake.source}))
    failing = [f"{g}: {said}" for g, (failed, said) in outcome.items() if failed]
    return bool(failing), failing


@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_the_right_answers_pass_every_visible_check(assignment: str) -> None:
    outcome = run_visible(filled_release(SPECS[assignment]))
    assert outcome, f"{assignment}: no test cell ran"
    failing = {g: said for g, (failed, said) in outcome.items() if failed}
    assert not failing, f"{assignment}: the solutions fail visible checks: {failing}"
    for _, said in outcome.values():
        assert re.fullmatch(r"Part \d+: (consistent|plausible) — .+", said), said
        assert "the hidden tests check" in said and "passed" not in said, said


@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_run_all_reaches_every_part_of_an_untouched_release(assignment: str) -> None:
    """The release as handed out: every answer cell's stub raises, yet each test cell runs and
    says its part is not answered yet, in one line on stderr, without raising."""
    spec = SPECS[assignment]
    release = read(spec.release_nb)
    for cell in release.cells:
        if cell.cell_type == "code" and nbgrader_meta(cell).get("solution"):
            assert "raises-exception" in cell.metadata.get("tags", []), (
                f"{assignment} {nbgrader_meta(cell)['grade_id']}: an answer cell needs the "
                "raises-exception tag, or Lab's Run All stops at its stub"
            )
    outcome = run_visible(release)
    assert list(outcome) == list(spec.test_cells)
    for grade_id, (failed, said) in outcome.items():
        assert failed and re.fullmatch(r"Part \d+: not answered yet( \(.+\))?", said), (
            grade_id,
            said,
        )


@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_an_answer_cell_that_raises_is_reported_as_such(assignment: str) -> None:
    spec = SPECS[assignment]
    first = next(
        nbgrader_meta(c)["grade_id"]
        for c in read(spec.source_nb).cells
        if c.cell_type == "code" and nbgrader_meta(c).get("solution")
    )
    source = cell_by_id(read(spec.source_nb), first).source
    broken = "not_a_name + 1\n" + source
    outcome = run_visible(filled_release(spec, {first: broken}))
    failed, said = outcome[spec.test_cells[0]]
    assert failed and re.fullmatch(r"Part 1: your answer cell raised NameError: .+", said), said
    for index, (_, said) in enumerate(list(outcome.values())[1:], start=2):
        assert said.startswith(f"Part {index}: "), f"Part {index} did not report: {said}"


@pytest.mark.parametrize(
    ("assignment", "index"),
    [(name, i) for name in MEASURED for i in range(len(all_mistakes(name)))],
)
def test_each_mistake_is_caught_exactly_when_its_spec_says(assignment: str, index: int) -> None:
    mistake = all_mistakes(assignment)[index]
    seen, failing = caught(assignment, mistake)
    assert seen == mistake.caught, (
        f"{assignment} {mistake.cell} ({mistake.what}): expected "
        f"{'caught' if mistake.caught else 'unseen'}, visible checks said {failing}"
    )


def main() -> None:
    for name in sorted(SPECS):
        mistakes = all_mistakes(name)
        seen = sum(caught(name, m)[0] for m in mistakes)
        print(f"{name}: the visible checks catch {seen} of {len(mistakes)} mistakes")


if __name__ == "__main__":
    main()


@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_answers_left_above_the_stub_s_raise_are_still_checked(assignment: str) -> None:
    """A learner who writes the answers above the release's ``raise NotImplementedError()``
    defines them all and then raises: the part is checked as nbgrader grades it (the test cell
    passes), and the line says the cell raised."""
    spec = SPECS[assignment]
    source = read(spec.source_nb)
    cells = [c for c in source.cells if c.cell_type == "code" and nbgrader_meta(c).get("solution")]
    cell = next(c for c in cells if "# Define" in c.source)
    grade_id = nbgrader_meta(cell)["grade_id"]
    outcome = run_visible(
        filled_release(spec, {grade_id: cell.source + "\nraise NotImplementedError()"})
    )
    said = [said for failed, said in outcome.values() if "then raised" in said]
    assert len(said) == 1 and re.fullmatch(
        r"Part \d+: (consistent|plausible) — .+ \(note: your answer cell then raised "
        r"NotImplementedError\)",
        said[0],
    ), outcome
    assert not any(failed for failed, _ in outcome.values()), outcome

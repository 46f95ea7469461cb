"""The visible checks catch the usual mistakes, and the hidden tests catch every one (#46).

Each spec holds a bank of realistic wrong answers: its ``mistakes`` (each with whether a visible
check catches it) and its ``wrong_answers`` (the ones ``test_grading.py`` hands in; those the
visible checks miss are named in ``wrong_unseen``). Here every one is put into the committed
release in place of its answer and the notebook is run cell by cell, as Run All runs it: a caught
mistake must fail a visible test cell (an error or a line on stderr, as nbgrader scores it) with
one line that names its kind, an uncaught one must pass them all. The bank holds at least three
wrong answers for every answer cell, the visible checks catch at least 90% of each exercise's,
and the hidden tests (the instructor's source, the same mistake in place) fail every one.
``PYTHONPATH=tests python tests/course/test_visible_checks.py`` prints the counts per exercise
(tests/ holds grading_support, as pytest's ``pythonpath`` says).

A passing test cell says "visible checks pass", the one label a right answer and a wrong answer
that slips past the checks share: never a verdict ("consistent", "passed", "correct"). Each test
cell reports its part in one line, in words (#36 item 3), and never raises, so Run All reaches
every part: not answered yet, its answer cell raised, failed (on stderr, which nbgrader scores 0
as it does an error), or that the visible checks pass, with what the hidden tests still check.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest
from grading_support import (
    ANSI,
    AssignmentSpec,
    Mistake,
    cell_by_id,
    filled_release,
    fresh_shell,
    load_specs,
    nbgrader_meta,
    read,
    run_visible,
)

SPECS = {spec.assignment: spec for spec in load_specs()}
#: The share of an exercise's bank the visible checks must catch (#46).
CAUGHT_AT_LEAST = 0.9
#: Wrong answers per answer cell, at least.
BANK_PER_PART = 3
PASSING_LINE = re.compile(r"Part \d+: visible checks pass — .+")
VERDICTS = ("consistent", "plausible", "passed", "correct")
#: A part's line labelled with a verdict (a failure may still call a value "not plausible").
VERDICT_LABEL = re.compile(rf"Part \d+: ({'|'.join(VERDICTS)})")


def bank(assignment: str) -> list[Mistake]:
    """Every wrong answer the spec knows: its mistakes, then its graded wrong answers."""
    spec = SPECS[assignment]
    graded = [
        Mistake(cell, source, "the spec's graded wrong answer", cell not in spec.wrong_unseen)
        for cell, source in spec.wrong_answers.items()
    ]
    return [*spec.mistakes, *graded]


def answer_cells(spec: AssignmentSpec) -> list[str]:
    return [
        nbgrader_meta(c)["grade_id"]
        for c in read(spec.source_nb).cells
        if c.cell_type == "code" and nbgrader_meta(c).get("solution")
    ]


@cache
def visible(assignment: str, index: int) -> tuple[bool, tuple[str, ...]]:
    """Whether the visible checks catch mistake ``index``, and what every test cell said."""
    mistake = bank(assignment)[index]
    outcome = run_visible(filled_release(SPECS[assignment], {mistake.cell: mistake.source}))
    return any(failed for failed, _ in outcome.values()), tuple(s for _, s in outcome.values())


def run_graded(nb: Any) -> dict[str, bool]:
    """Run the instructor's source (hidden tests included) cell by cell in one in-process shell;
    for each test cell, whether it raised: the visible checks never raise, so a raise is a
    hidden test failing."""
    import matplotlib.pyplot as plt
    from IPython.utils.capture import capture_output

    shell = fresh_shell()
    raised: dict[str, bool] = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        with capture_output():
            result = shell.run_cell(cell.source, store_history=True)
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution"):
            raised[meta["grade_id"]] = not result.success
    shell.InteractiveTB.set_mode("Context")  # the hidden cells set Minimal
    plt.close("all")  # the plot cells' figures (pyplot keeps every one: a warning past 20)
    return raised


def hidden_fails(assignment: str, index: int) -> list[str]:
    """The test cells whose hidden tests fail with mistake ``index`` in the source."""
    spec, mistake = SPECS[assignment], bank(assignment)[index]
    source = read(spec.source_nb)
    cell_by_id(source, mistake.cell).source = mistake.source
    return [grade_id for grade_id, raised in run_graded(source).items() if raised]


BANK = [(name, i) for name in sorted(SPECS) for i in range(len(bank(name)))]


@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_the_right_answers_pass_every_visible_check(assignment: str) -> None:
    outcome = run_visible(filled_release(SPECS[assignment]))
    assert outcome, f"{assignment}: no test cell ran"
    failing = {g: said for g, (failed, said) in outcome.items() if failed}
    assert not failing, f"{assignment}: the solutions fail visible checks: {failing}"
    for _, said in outcome.values():
        assert PASSING_LINE.fullmatch(said), said
        assert "the hidden tests check" in said, said
        assert not any(word in said for word in VERDICTS), f"a verdict: {said}"


@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_the_right_answers_pass_the_hidden_tests(assignment: str) -> None:
    assert not any(run_graded(read(SPECS[assignment].source_nb)).values())


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
def test_a_test_cell_run_after_a_restart_says_which_cell_to_run(assignment: str) -> None:
    """After a kernel restart the first code cell (the numbers, report_part) has not run: a test
    cell run alone says so in one line, not ``NameError: name 'report_part' is not defined``."""
    from IPython.utils.capture import capture_output

    spec = SPECS[assignment]
    release = filled_release(spec)
    for grade_id in spec.test_cells:
        shell = fresh_shell()
        with capture_output() as captured:
            result = shell.run_cell(cell_by_id(release, grade_id).source)
        said = ANSI.sub("", captured.stderr).strip()
        assert result.success, f"{assignment} {grade_id}: {result.error_in_exec!r}"
        assert re.fullmatch(r"Part \d+: not checked — run the first code cell .+", said), said
        assert "\n" not in said and not captured.stdout, (said, captured.stdout)


@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_an_answer_cell_that_raises_is_reported_as_such(assignment: str) -> None:
    spec = SPECS[assignment]
    first = answer_cells(spec)[0]
    source = cell_by_id(read(spec.source_nb), first).source
    broken = "not_a_name + 1\n" + source
    outcome = run_visible(filled_release(spec, {first: broken}))
    failed, said = outcome[spec.test_cells[0]]
    assert failed and re.fullmatch(r"Part 1: your answer cell raised NameError: .+", said), said
    for index, (_, said) in enumerate(list(outcome.values())[1:], start=2):
        assert said.startswith(f"Part {index}: "), f"Part {index} did not report: {said}"


@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_every_part_has_a_bank_of_wrong_answers(assignment: str) -> None:
    spec = SPECS[assignment]
    per_cell = {cell: 0 for cell in answer_cells(spec)}
    for mistake in bank(assignment):
        assert mistake.cell in per_cell, f"{assignment}: no answer cell {mistake.cell!r}"
        per_cell[mistake.cell] += 1
    thin = {cell: n for cell, n in per_cell.items() if n < BANK_PER_PART}
    assert not thin, f"{assignment}: fewer than {BANK_PER_PART} wrong answers for {thin}"
    assert set(spec.wrong_unseen) <= set(spec.wrong_answers), spec.wrong_unseen


@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_the_visible_checks_catch_nine_in_ten_of_the_bank(assignment: str) -> None:
    mistakes = bank(assignment)
    declared = sum(m.caught for m in mistakes)
    assert declared >= CAUGHT_AT_LEAST * len(mistakes), (
        f"{assignment}: the visible checks catch {declared} of {len(mistakes)}"
    )


@pytest.mark.parametrize(("assignment", "index"), BANK)
def test_each_mistake_is_caught_exactly_when_its_spec_says(assignment: str, index: int) -> None:
    mistake = bank(assignment)[index]
    seen, said = visible(assignment, index)
    failing = [s for s in said if "failed: " in s]
    assert seen == mistake.caught, (
        f"{assignment} {mistake.cell} ({mistake.what}): expected "
        f"{'caught' if mistake.caught else 'unseen'}, visible checks said {said}"
    )
    assert not any(VERDICT_LABEL.match(s) for s in said), said
    for line in failing:  # one line that names the kind of mistake, not a traceback
        assert re.fullmatch(r"Part \d+: failed: .{20,}", line) and "Error" not in line, line


@pytest.mark.parametrize(("assignment", "index"), BANK)
def test_the_hidden_tests_fail_every_mistake(assignment: str, index: int) -> None:
    mistake = bank(assignment)[index]
    failing = hidden_fails(assignment, index)
    spec = SPECS[assignment]
    own = spec.test_cells[answer_cells(spec).index(mistake.cell)]
    assert own in failing, f"{assignment} {mistake.cell} ({mistake.what}): hidden tests pass it"


def main(names: list[str]) -> None:
    """Per exercise: the bank, what the visible checks catch, what the hidden tests catch; with
    ``-v``, each mistake's lines."""
    verbose = "-v" in names
    for name in [n for n in names if n in SPECS] or sorted(SPECS):
        mistakes = bank(name)
        seen = [visible(name, i) for i in range(len(mistakes))]
        hidden = [hidden_fails(name, i) for i in range(len(mistakes))]
        print(
            f"{name}: bank {len(mistakes)}, the visible checks catch "
            f"{sum(caught for caught, _ in seen)}, the hidden tests {sum(map(bool, hidden))}"
        )
        for mistake, (caught, said), failing in zip(mistakes, seen, hidden, strict=True):
            if verbose or not caught or not failing:
                lines = [s for s in said if "failed" in s] if caught else []
                print(f"  {mistake.cell}: {mistake.what}: visible {caught}, hidden {failing}")
                print("".join(f"      {line}\n" for line in lines), end="")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])


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
        r"Part \d+: visible checks pass — .+ \(note: your answer cell then raised "
        r"NotImplementedError\)",
        said[0],
    ), outcome
    assert not any(failed for failed, _ in outcome.values()), outcome


# ---- questions that say what they grade (#46 item 3) ----------------------------------------
def _roofline_meeting_points() -> dict[str, tuple[float, float]]:
    """(the lesson's approximation, the exact meeting point) of Parts 3 and 4: the intensity
    taken as B (weights' bytes only) against the three arrays of Part 1 solved for C / W."""
    ridge, d, f = 9.89e14 / 3.35e12, 8192, 28672
    return {
        "critical_batch_h100": (ridge, ridge * d * f / (d * f - ridge * (d + f))),
        "critical_batch_int8": (ridge / 2, ridge * d * f / (2 * (d * f - ridge * (d + f)))),
    }


def _prefill_means(prompt: int, params: float, embedding: float, a: float) -> tuple[float, float]:
    """A prompt's FLOPs with attention at the mean S / 2 tokens against the causal (S - 1) / 2."""
    matmul = 2 * (params - embedding)
    return prompt * (matmul + a * prompt / 2), prompt * (matmul + a * (prompt - 1) / 2)


#: Each part where a lesson's approximation and the exact value could differ: (exercise, the
#: part's markdown cell, the answer, (approximation, exact) up to a common factor, the phrase that
#: says which one the question wants where they differ by more than the hidden tolerance).
APPROXIMATIONS = (
    ("roofline", "part3", "critical_batch_h100", "the grading wants the batch at which $B = C /"),
    ("roofline", "part4", "critical_batch_int8", "the grading wants it within 1%, not"),
    ("batching", "part4", "ttft_s", "$A\\,(S - 1)/2$ on average"),
    ("kv_cache", "part4", "prefill_s", "$A\\,(S - 1)/2$ on average"),
)


def _approximation_and_exact(answer: str) -> tuple[float, float]:
    if answer in ("critical_batch_h100", "critical_batch_int8"):
        return _roofline_meeting_points()[answer]
    if answer == "ttft_s":
        return _prefill_means(2000, 70_553_706_496, 128256 * 8192, 2 * 80 * 64 * 256)
    return _prefill_means(8192, 70_553_706_496, 128256 * 8192, 2 * 80 * 64 * 256)


def _hidden_rel_tol(assignment: str, answer: str) -> float:
    import ast

    spec = SPECS[assignment]
    source = read(spec.source_nb)
    for grade_id in spec.test_cells:
        text = cell_by_id(source, grade_id).source.partition("### BEGIN HIDDEN TESTS")[2]
        for node in ast.walk(ast.parse(text.partition("### END HIDDEN TESTS")[0])):
            is_pin = isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "isclose"
            if is_pin and ast.unparse(node.args[0]) == answer:
                tolerances = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                return float(tolerances["rel_tol"])
    raise AssertionError(f"{assignment}: no hidden isclose pins {answer}")


@pytest.mark.parametrize(("assignment", "part", "answer", "phrase"), APPROXIMATIONS)
def test_where_approximation_and_exact_differ_the_question_says_which(
    assignment: str, part: str, answer: str, phrase: str
) -> None:
    """A careful answer (the exact value) and the lesson's approximation either both pass the
    hidden test's tolerance, or the question says which one it grades."""
    approximation, exact = _approximation_and_exact(answer)
    gap = abs(exact - approximation) / approximation
    tolerance = _hidden_rel_tol(assignment, answer)
    question = " ".join(cell_by_id(read(SPECS[assignment].source_nb), part).source.split())
    if gap > tolerance:
        assert " ".join(phrase.split()) in question, (
            f"{assignment} {part}: the exact {answer} is {gap:.1%} off the approximation, past "
            f"the hidden tolerance {tolerance:g}, and the question does not say which it wants"
        )
    else:
        assert gap < tolerance / 10, f"{assignment} {answer}: gap {gap:.2g} near {tolerance:g}"


def test_the_roofline_gap_is_the_one_the_questions_name() -> None:
    """Parts 3 and 4's exact meeting points sit about 5% above C / W and C / 2W: past the 1%."""
    for approximation, exact in _roofline_meeting_points().values():
        assert 0.04 < exact / approximation - 1 < 0.06

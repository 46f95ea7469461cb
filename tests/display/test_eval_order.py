"""Every ``{eval}`` of every lesson resolves at its place in page order, as the book's inline
execution resolves it: a name used before the cell that defines it fails here in seconds (the
book build would fail on it only after a minute or more)."""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest
from lesson_support import EVAL_ROLE, ROOT, bound_names, evals_in_page_order

from llmmath.display.numbers import has_numbers

LESSONS = sorted(p.name for p in (ROOT / "lessons").glob("*.md"))


@pytest.mark.parametrize("page", LESSONS)
def test_every_eval_resolves_at_its_place(page: str) -> None:
    unresolved, count = [], 0
    for cell, expression, namespace in evals_in_page_order(ROOT / "lessons" / page):
        count += 1
        try:
            eval(expression, namespace)
        except Exception as error:
            unresolved.append(
                f"cell {cell}: {{eval}}`{expression}`: {type(error).__name__}: {error}"
            )
    assert count, f"{page} has no {{eval}}: the search for them is broken"
    assert not unresolved, f"{page}, in page order:\n" + "\n".join(unresolved)


def test_a_name_used_before_its_cell_is_caught(tmp_path: Path) -> None:
    """The check itself: a lesson whose prose uses a name one cell too early fails it."""
    header = (ROOT / "lessons" / LESSONS[0]).read_text().split("\n---\n", 1)[0]
    (tmp_path / "early.md").write_text(
        f"{header}\n---\n\nToo early: {{eval}}`later`.\n\n"
        "```{code-cell} ipython3\n:tags: [remove-input]\nlater = 1\n```\n\n"
        "In time: {eval}`later`, and {eval}`shown`.\n\n"
        "```{code-cell} ipython3\nshown = 2\n```\n\n"
        "After the reader's cell: {eval}`shown`.\n"
    )
    found, outcomes = [], []
    for _, expression, namespace in evals_in_page_order(tmp_path / "early.md"):
        found.append(expression)
        try:
            eval(expression, namespace)
            outcomes.append(True)
        except NameError:
            outcomes.append(False)
    assert found == ["later", "later", "shown", "shown"]
    assert outcomes == [False, True, False, True]


# What a converted lesson's prose may show: a value of its chapter's numbers, by name.
BY_NAME = re.compile(r"n(?:\.[A-Za-z_]\w*)+")
SETUP = "n = numbers.{chapter}.numbers()"


def converted() -> list[str]:
    """The lessons whose numbers live in ``llmmath.display.numbers.<chapter>``."""
    return [page for page in LESSONS if has_numbers(Path(page).stem)]


@pytest.mark.parametrize("page", converted())
def test_a_lessons_numbers_come_from_its_module(page: str) -> None:
    """Once ``llmmath.display.numbers.<chapter>`` exists, the lesson computes nothing itself:
    one hidden setup cell binds ``n`` from it, every other hidden cell only shows (a figure, an
    explorer, ``pages.source``) and binds no name, and every ``{eval}`` reads ``n`` by name."""
    chapter = Path(page).stem
    notebook = jupytext.read(ROOT / "lessons" / page)
    hidden = [
        cell
        for cell in notebook.cells
        if cell.cell_type == "code" and "remove-input" in cell.metadata.get("tags", [])
    ]
    setups = [cell for cell in hidden if SETUP.format(chapter=chapter) in cell.source]
    assert len(setups) == 1, f"{page}: one hidden cell runs {SETUP.format(chapter=chapter)!r}"
    assert hidden[0] is setups[0], f"{page}: the setup cell is the first hidden cell"
    binding = [
        f"{cell.source.splitlines()[0]!r} binds {sorted(bound_names(cell.source))}"
        for cell in hidden[1:]
        if bound_names(cell.source)
    ]
    assert not binding, f"{page}: a hidden cell computes; move it to numbers.{chapter}:\n" + (
        "\n".join(binding)
    )
    expressions = EVAL_ROLE.findall("\n".join(c.source for c in notebook.cells))
    assert expressions, f"{page} has no {{eval}}"
    not_by_name = [e for e in expressions if not BY_NAME.fullmatch(e)]
    assert not not_by_name, f"{page}: {{eval}}s that are not n.<section>.<name>: {not_by_name}"

"""Every ``{eval}`` of every lesson resolves at its place in page order, as the book's inline
execution resolves it: a name used before the cell that defines it fails here in seconds (the
book build would fail on it only after a minute or more)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lesson_support import ROOT, evals_in_page_order

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

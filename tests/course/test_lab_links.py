"""The learner's JupyterLab serves citations and cross-references as links it can follow
(lab/learner/myst_links.py, #36 item 2); the book's own build resolves them itself."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("myst_links", ROOT / "lab/learner/myst_links.py")
assert _spec is not None and _spec.loader is not None
myst_links = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(myst_links)

PAGES = sorted((ROOT / "lessons").glob("*.md")) + sorted((ROOT / "book").glob("*.md"))
ROLES = re.compile(r"\{(?:cite|cite:p|cite:t|ref|doc|numref)\}`")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_role_jupyterlab_cannot_resolve_is_left(page: Path) -> None:
    served = myst_links.rewrite(page.read_text(), f"{page.parent.name}/{page.name}", ROOT)
    left = ROLES.findall(served)
    assert not left, f"{page.name}: JupyterLab would show 'not found' for {len(left)} roles"
    if page.name == "references.md":
        assert "{bibliography}" not in served


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_link_it_makes_opens_a_course_page_at_its_label(page: Path) -> None:
    """Each reference links the page that holds its label, at the label (#46 item 5: a
    glossary link opened the glossary at its top; a label on the page itself was plain text)."""
    name = f"{page.parent.name}/{page.name}"
    served = myst_links.rewrite(page.read_text(), name, ROOT)
    before = set(re.findall(r"\]\(([^)\s]*#[\w-]+)\)", page.read_text()))
    made = set(re.findall(r"\]\(([^)\s]*#[\w-]+)\)", served)) - before
    assert made or not re.search(r"\{ref\}`", page.read_text()), f"{name}: no reference linked"
    for link in made:
        target, label = link.split("#")
        holder = (page.parent / target).resolve() if target else page
        assert holder.is_file(), f"{name} links to {target}"
        at = myst_links.labels(ROOT)[label][0]
        assert (ROOT / at).resolve() == holder, f"{name}: #{label} is on {at}, not {target}"


def test_a_citation_and_a_reference_as_the_learner_reads_them() -> None:
    text = (
        "Roofline {cite}`williams2009roofline`; {cite:t}`shazeer2019fast` showed it; see "
        "{ref}`notation`, {ref}`the collectives <collectives>` and {ref}`batching`."
    )
    served = myst_links.rewrite(text, "lessons/batching.md", ROOT)
    assert served.startswith("Roofline ([Williams et al., 2009](../book/references.md)); ")
    assert "[Shazeer (2019)](../book/references.md) showed it" in served
    assert "[Notation](../book/notation.md#notation)" in served
    assert "[the collectives](parallelism.md#collectives)" in served
    title = myst_links.labels(ROOT)["batching"][1]
    # a label on the page itself: a link to it there, with its title (it was dead text)
    assert served.endswith(f"and [{title}](#batching).")


def test_the_references_page_lists_every_entry_of_the_bibliography() -> None:
    served = myst_links.rewrite(
        (ROOT / "book/references.md").read_text(), "book/references.md", ROOT
    )
    entries = myst_links.bibliography(ROOT)
    assert served.count("\n- ") + served.startswith("- ") >= len(entries) - 1
    assert "Shazeer (2019). *Fast Transformer Decoding" in served


def test_an_unknown_key_or_label_is_left_for_the_book_build_to_refuse() -> None:
    text = "{cite}`nosuchkey2099` and {ref}`no-such-label`"
    assert myst_links.rewrite(text, "lessons/roofline.md", ROOT) == text


def test_the_references_page_shows_no_raw_latex() -> None:
    """A ``\\url{...}`` in references.bib is served as a link, not as raw LaTeX (#46 item 5)."""
    served = myst_links.reference_list(ROOT)
    assert "\\url" not in served, served  # (\\_ is Markdown's escaped _, $...$ maths)
    assert "<https://kipp.ly/transformer-inference-arithmetic/>" in served

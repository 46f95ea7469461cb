"""Claims by chapter: ``tests/claims/<chapter>.py`` holds what ``lessons/<chapter>.md`` says
in words, each pinned to the package for the lesson's own setting.

A sentence that says memory- or compute-bound, cheaper, the same, never, a gain or a loss is a
claim like a number. A :class:`Claim` names a phrase of the sentence (its anchor: the test
fails if the sentence is reworded away, so the claim is looked at again) and a predicate over
the chapter's numbers, ``n = llmmath.display.numbers.<chapter>.numbers()``: it reads values by
name (``n.decode.llama``, never a pinned ``296``) and calls the package function its sentence
names. The chapter's errata pins and depth checks sit in the same file, as plain tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lesson_support import ROOT, lesson


@dataclass(frozen=True)
class Claim:
    #: A phrase of the sentence, as the page has it (whitespace folded).
    anchor: str
    #: True where the package supports the sentence, for the chapter's numbers ``n``.
    holds: Callable[[Any], bool]


def page_words(chapter: str) -> str:
    """``lessons/<chapter>.md`` with its whitespace folded, as anchors are matched."""
    return " ".join((ROOT / "lessons" / f"{chapter}.md").read_text().split())


def chapter_numbers(chapter: str) -> Any:
    """``numbers()`` of ``llmmath.display.numbers.<chapter>``: what the lesson shows, by name
    (:func:`lesson_support.lesson` of a moved lesson, the one place that loads it)."""
    return lesson(f"{chapter}.md")


def check_claim(chapter: str, claim: Claim) -> None:
    """The claim's sentence is on its page and the package supports it."""
    assert " ".join(claim.anchor.split()) in page_words(chapter), (
        f"lessons/{chapter}.md no longer says {claim.anchor!r}: re-derive the claim or drop it"
    )
    assert claim.holds(chapter_numbers(chapter)), (
        f"lessons/{chapter}.md: the package no longer supports {claim.anchor!r}"
    )


def claim_id(claim: Claim) -> str:
    return claim.anchor[:40]

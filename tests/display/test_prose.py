"""The built book's text as a reader sees it (#45, "Prose"): no Python e-notation or raw tuples
in the words, section numbers that agree between a lesson and its exercise, references to parts
and sections that exist, and one measurement of the machine that built the book.

"Text" is what a page shows in words: its main content outside code, maths and the figures'
data, and the words its explorers show (their labels and stops are in the page; the panels
of text not shown first are listed in the explorer's script of frames). The API reference
(book/api/) is left out: its text is the package's docstrings and contracts, written in
Python's notation for readers of Python (``>= 1e6``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import pytest
from site_support import HTML

if not (HTML / "index.html").exists():
    pytest.fail("the book is not built: run `make book` (make test does it first)", pytrace=False)

# Python's e-notation: 6.6e+13, 9.89e14, 3.044e-17 (never part of a longer word or number).
E_NOTATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]?\d+\b")
# A Python tuple or list of numbers printed as is: (2.0, 6.0), [1, 4096]. An interval, (0, 1],
# closes with the other bracket and is not one.
_NUMBER = r"-?\d[\d.]*"
RAW_TUPLE = re.compile(
    rf"\(\s*{_NUMBER}(?:\s*,\s*{_NUMBER})+\s*\)|\[\s*{_NUMBER}(?:\s*,\s*{_NUMBER})+\s*\]"
)

# Elements and classes whose text is code, maths or a figure's data, not prose.
CODE_TAGS = frozenset({"script", "style", "pre", "code", "kbd", "samp", "svg", "math"})
CODE_CLASSES = frozenset({"math", "highlight", "sig", "MathJax", "cell_input"})
VOID_TAGS = frozenset({"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "wbr"})
EXPLORER_FRAMES = re.compile(
    r'<script type="application/json" class="explorer-frames">(.*?)</script>', re.S
)


class _Prose(HTMLParser):
    """The text of ``<main>`` (or of a whole fragment), outside code and maths."""

    def __init__(self, *, whole: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, bool, bool]] = []  # (tag, hides its text, is <main>)
        self.hidden = 0
        self.in_main = 1 if whole else 0
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID_TAGS:
            return
        classes = set((dict(attrs).get("class") or "").split())
        hides = tag in CODE_TAGS or bool(classes & CODE_CLASSES)
        self.open.append((tag, hides, tag == "main"))
        self.hidden += hides
        self.in_main += tag == "main"

    def handle_endtag(self, tag: str) -> None:
        if all(name != tag for name, _, _ in self.open):
            return  # a void element's closing slash, or a stray end tag
        while self.open:
            name, hides, main = self.open.pop()
            self.hidden -= hides
            self.in_main -= main
            if name == tag:
                return

    def handle_data(self, data: str) -> None:
        if self.in_main and not self.hidden and data.strip():
            self.texts.append(data)


def prose_of(html: str, *, whole: bool = False) -> list[str]:
    parser = _Prose(whole=whole)
    parser.feed(html)
    return parser.texts


def widget_words(html: str) -> Iterator[str]:
    """The words a page's explorers show in the frames not shown first: each panel of text
    (parsed as HTML), and what each frame says (``said``: its figure's titles and readouts,
    read out in its alt and announced when it is shown)."""
    for block in EXPLORER_FRAMES.findall(html):
        for frame in json.loads(block):
            if "html" in frame:
                yield from prose_of(frame["html"], whole=True)
            if frame.get("said"):
                yield frame["said"]


def book_pages() -> list[Path]:
    return sorted(
        path
        for path in HTML.rglob("*.html")
        if not {"_static", "_sources", "api"} & set(path.relative_to(HTML).parts)
        and path.name not in {"genindex.html", "py-modindex.html", "search.html"}
    )


@cache
def page_words(path: Path) -> tuple[str, ...]:
    html = path.read_text()
    return (*prose_of(html), *widget_words(html))


def offending(pattern: re.Pattern[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in book_pages():
        for text in page_words(path):
            for match in pattern.finditer(text):
                start, end = max(0, match.start() - 40), match.end() + 20
                found.setdefault(path.relative_to(HTML).as_posix(), []).append(
                    " ".join(text[start:end].split())
                )
    return found


def test_the_scanner_sees_prose_and_skips_code_and_maths() -> None:
    page = (
        "<main><p>costs 6.6e+13 tokens <code>1e9</code> <span class='math'>\\(2e3\\)</span>"
        "<img src='a.png'/> at (2.0, 6.0) USD</p><div class='highlight'><pre>x = (1, 2)"
        "</pre></div></main><p>outside 7e9</p>"
    )
    words = " ".join(prose_of(page))
    assert E_NOTATION.findall(words) == ["6.6e+13"] and RAW_TUPLE.findall(words) == ["(2.0, 6.0)"]
    assert not E_NOTATION.search("arXiv 2412.19437, in (0, 1], v2e4, 1.5e") and not (
        RAW_TUPLE.search("in (0, 1] or [1, 131072)")
    )


def test_the_scanner_reads_the_explorers_words() -> None:
    page = (HTML / "lessons" / "overtraining_pricing.html").read_text()
    words = " ".join(widget_words(page))
    assert "USD/chip-hour" in words, "the price-sheet explorer's assumptions were not read"


def test_no_e_notation_in_the_text() -> None:
    found = offending(E_NOTATION)
    assert not found, (
        "Python's e-notation in the book's text: write it with llmmath.core.units.scientific "
        f"or general (6.6 × 10¹³), or as code where a reader types it:\n{found}"
    )


def test_no_raw_tuples_in_the_text() -> None:
    found = offending(RAW_TUPLE)
    assert not found, f"a Python tuple or list printed as is in the book's text:\n{found}"


# ---- numbering ---------------------------------------------------------------------------------
HEADING = re.compile(
    r'<h[1-6][^>]*>\s*<span class="section-number">([\d.]+?)\.?\s*</span>(.*?)</h[1-6]>', re.S
)


def numbered_headings(path: Path) -> list[tuple[str, str]]:
    """(number, title) of each numbered heading of the page, as it shows them."""
    return [
        (number, " ".join(re.sub(r"<[^>]+>", "", title).split()).rstrip("#").strip())
        for number, title in HEADING.findall(path.read_text())
    ]


def chapters() -> list[str]:
    return sorted(path.stem for path in (HTML / "lessons").glob("*.html"))


@pytest.mark.parametrize("chapter", chapters())
def test_a_lesson_and_its_exercise_give_the_exercise_one_number(chapter: str) -> None:
    """The exercise page is a section of its lesson; a heading of the lesson that names the
    exercise would carry another number (#45: "1.9 Graded exercise" pointed to 1.10)."""
    lesson = numbered_headings(HTML / "lessons" / f"{chapter}.html")
    exercise_number, exercise_title = numbered_headings(
        HTML / "exercises" / chapter / f"{chapter}.html"
    )[0]
    chapter_number = lesson[0][0]
    assert exercise_number.startswith(f"{chapter_number}."), (exercise_number, chapter_number)
    stem = exercise_title.split(":")[0]
    twins = [(n, t) for n, t in lesson if n != exercise_number and t.startswith(stem)]
    assert not twins, f"the lesson numbers '{stem}' {twins}, its page is {exercise_number}"
    # The lesson's own sections come before its exercise, with no number skipped.
    top = sorted({int(n.split(".")[1]) for n, _ in lesson if n.count(".") >= 1})
    assert (
        top == list(range(1, len(top) + 1)) and int(exercise_number.split(".")[1]) == len(top) + 1
    )


# "Part 3", "Section 2.4", "Chapter 2", "Figure 1" in the book's own words. A citation of a
# paper's section or table is written in lower case or names the paper ("its section 3.3.2",
# "Chinchilla's Table 3"), and is not the book's to number.
OWN_REFERENCE = re.compile(r"\b(Part|Section|Chapter|Figure|Fig\.)\s+(\d+(?:\.\d+)*)\b")


def parts_of(path: Path) -> set[str]:
    """The N of each heading "Part N: ..." (an exercise's parts)."""
    return {m for _, title in numbered_headings(path) for m in re.findall(r"^Part (\d+)", title)}


def numbers_shown(path: Path) -> dict[str, set[str]]:
    """What a page's references can name: parts (its own exercise's headings "Part N: ...";
    on a page with none, such as the instructor's guide quoting feedback, any exercise's),
    sections and chapters (every page's heading numbers, book-wide) and its figures
    ("Fig. N")."""
    text = path.read_text()
    headings = {number for page in book_pages() for number, _ in numbered_headings(page)}
    parts = parts_of(path) or {
        n for page in HTML.glob("exercises/*/*.html") for n in parts_of(page)
    }
    figures = set(re.findall(r'<span class="caption-number">Fig\. (\d+)', text))
    return {
        "Part": parts,
        "Section": headings,
        "Chapter": {n.split(".")[0] for n in headings},
        "Figure": figures,
        "Fig.": figures,
    }


def test_every_numbered_reference_names_something_the_book_numbers() -> None:
    unresolved: dict[str, list[str]] = {}
    checked = 0
    for path in book_pages():
        shown = None
        for text in page_words(path):
            for kind, number in OWN_REFERENCE.findall(text):
                shown = shown or numbers_shown(path)
                checked += 1
                if number not in shown[kind]:
                    page = path.relative_to(HTML).as_posix()
                    unresolved.setdefault(page, []).append(f"{kind} {number}")
    assert checked, "no numbered reference found: is the scanner reading the pages?"
    assert not unresolved, f"references to numbers no heading or figure has: {unresolved}"


# ---- one measurement of the machine that built the book -----------------------------------------
def test_the_book_shows_one_measurement_of_the_machine_that_built_it() -> None:
    """The roofline chapter prints the machine's peak and bandwidth; the validation page, built
    in another process, states them again. Two measurements would differ (#45: 139.7 against
    118 GFLOP/s); one (llmmath.core.measure.measure_machine_once) cannot."""
    lesson = re.sub(r"<[^>]+>", "", (HTML / "lessons" / "roofline.html").read_text())
    peak = re.search(r"measured peak:\s+([\d.]+) GFLOP/s", lesson)
    bandwidth = re.search(r"measured bandwidth:\s+([\d.]+) GB/s", lesson)
    validation = " ".join(prose_of((HTML / "book" / "validation.html").read_text()))
    stated = re.search(r"measured\s+([\d.]+)\s+GFLOP/s\s+and\s+([\d.]+)\s+GB/s", validation)
    assert peak and bandwidth and stated, "a page no longer shows the measurement this reads"
    # One number, rounded twice: 99.46 shows as 99.5 in the lesson and 99 on the page, so the
    # two texts must be roundings of one value (their intervals meet), not equal after rounding.
    assert _roundings_meet(peak.group(1), stated.group(1)), (peak.group(1), stated.group(1))
    assert bandwidth.group(1) == stated.group(2), (bandwidth.group(1), stated.group(2))


def _rounding_interval(text: str) -> tuple[float, float]:
    """The values that a number written as ``text`` (e.g. "99.5", "99") may have been."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    half = 0.5 * 10.0**-decimals
    return float(text) - half, float(text) + half


def _roundings_meet(a: str, b: str) -> bool:
    (a_low, a_high), (b_low, b_high) = _rounding_interval(a), _rounding_interval(b)
    return max(a_low, b_low) <= min(a_high, b_high)


def test_two_roundings_of_one_value_meet_and_of_two_values_do_not() -> None:
    assert _roundings_meet("99.5", "99") and _roundings_meet("99.4", "99")
    assert not _roundings_meet("139.7", "118") and not _roundings_meet("99.7", "99")

"""One symbol, one meaning, across the book (#32 item 10).

The notation page promises that each symbol is defined once there. This reads its table and
the maths of every lesson and book page: a symbol (a capital Latin letter with any subscript or
star, as the pages write them) that a page uses must be in the table, and no symbol may be in
the table twice. A chapter that needs a new quantity adds a row, where a reader (and a
reviewer) sees at once whether its letter is taken.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTATION = ROOT / "book" / "notation.md"
PAGES = sorted((ROOT / "lessons").glob("*.md")) + sorted(
    p for p in (ROOT / "book").glob("*.md") if p != NOTATION
)

INLINE_CODE = re.compile(r"``?[^`\n]+``?")
MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$|^```\{math\}\n(.+?)^```", re.S | re.M)
#: A capital letter standing alone (not part of a word such as "GPU" or a command, not itself
#: a subscript), with an optional star and an optional subscript.
SYMBOL = re.compile(
    r"(?<![\\A-Za-z_^])([A-Z])(?![A-Za-z])"
    r"(\^\*|\^\{\*\})?"
    r"(_(?:\\(?:text|mathrm)\{[^}]*\}|\{[^}]*\}|[A-Za-z0-9]))?"
)


def normalized(symbol: re.Match[str]) -> str:
    letter, star, sub = symbol.group(1), symbol.group(2) or "", symbol.group(3) or ""
    sub = re.sub(r"\\mathrm\{", r"\\text{", sub)
    sub = re.sub(r"^_\{([A-Za-z0-9])\}$", r"_\1", sub)
    return letter + ("^*" if star else "") + sub


def symbols_in(math: str) -> set[str]:
    math = re.sub(r"\\math(?:cal|bb|bf)\{[^}]*\}", " ", math)  # not tracked: \mathcal{L}
    math = re.sub(r"\\(?:text|mathrm|operatorname)\{[^}]*\}", _keep_subscript, math)
    return {normalized(m) for m in SYMBOL.finditer(math)}


def _keep_subscript(match: re.Match[str]) -> str:
    """Words in \\text{} are not symbols, except as a subscript (the caller's regex reads
    ``_\\text{...}`` whole), so a \\text{} not preceded by ``_`` is blanked."""
    start = match.start()
    text = match.string
    return match.group(0) if start > 0 and text[start - 1] == "_" else " "


def maths(page: Path) -> list[str]:
    cells = jupytext.read(page).cells  # the prose, as the book reads it: no code cell
    text = INLINE_CODE.sub("", "\n".join(c.source for c in cells if c.cell_type == "markdown"))
    return [next(g for g in m.groups() if g) for m in MATH.finditer(text)]


def notation_rows() -> list[list[str]]:
    """The symbols each row of the notation table defines: the first symbol of each ``$...$``
    in its first cell (``$B^*(T)$`` defines ``B^*``; what follows ``=`` explains it)."""
    rows = []
    for line in NOTATION.read_text().splitlines():
        if not line.startswith("| $"):
            continue
        cell = line.split("|")[1]
        row = []
        for math in re.findall(r"\$([^$]+)\$", cell):
            math = re.sub(r"\\math(?:cal|bb|bf)\{[^}]*\}(_\S+)?", " ", math)  # \mathcal{L}
            first = SYMBOL.match(math.split("=")[0].strip())  # \phi(T): not tracked
            if first:  # B^*(T), a function of the context, is a symbol of its own
                argument = re.match(r"\([^)]*\)", math[first.end() :])
                row.append(normalized(first) + (argument.group(0) if argument else ""))
        rows.append(row)
    return rows


def test_the_notation_table_defines_each_symbol_once() -> None:
    seen: dict[str, int] = {}
    for row in notation_rows():
        for symbol in row:
            seen[symbol] = seen.get(symbol, 0) + 1
    twice = sorted(s for s, n in seen.items() if n > 1)
    assert not twice, f"defined more than once in book/notation.md: {twice}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_symbol_a_page_uses_is_on_the_notation_page(page: Path) -> None:
    defined = {s for row in notation_rows() for s in row}
    used = set().union(*(symbols_in(m) for m in maths(page)))
    missing = sorted(used - defined)
    assert not missing, (
        f"{page.relative_to(ROOT)} uses symbols book/notation.md does not define: {missing}; "
        "add a row there (a letter already taken means another symbol)"
    )


def test_the_reader_finds_symbols_in_the_maths() -> None:
    """The extraction itself: a page's display maths, inline maths and subscripts are read,
    code cells and words in \\text{} are not (else the tests above could pass on nothing)."""
    found = symbols_in(r"T_\text{memory} = \frac{P\,b_w}{W} \text{ at batch } B^* + C_\text{train}")
    assert found == {"T_\\text{memory}", "P", "W", "B^*", "C_\\text{train}"}
    assert {"B", "W", "C"} <= set().union(
        *(symbols_in(m) for m in maths(ROOT / "lessons/roofline.md"))
    )


#: The exercises whose maths uses the notation page's symbols throughout (#42: the
#: over-training exercise wrote the Chinchilla paper's N, D, T, E, A, B and mapped them to the
#: page; it now writes the page's P, P_mm, D_train, D_inf and the fit's L_inf, A_P, A_D, gamma_P,
#: gamma_D). batching and kv_cache still write A for the attention FLOPs per token of context
#: (the page's phi(T) / T) and kv_cache C_8 for the fp8 peak: not yet renamed.
EXERCISES_ON_THE_PAGE = ("moe", "overtraining_pricing", "parallelism", "roofline")


def exercise_maths(assignment: str) -> list[str]:
    notebook = json.loads((ROOT / "solutions" / assignment / f"{assignment}.ipynb").read_text())
    markdown = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown"]
    text = INLINE_CODE.sub("", "\n".join(markdown))
    return [next(g for g in m.groups() if g) for m in MATH.finditer(text)]


@pytest.mark.parametrize("assignment", EXERCISES_ON_THE_PAGE)
def test_an_exercise_writes_the_notation_pages_symbols(assignment: str) -> None:
    defined = {s for row in notation_rows() for s in row}
    used = set().union(*(symbols_in(m) for m in exercise_maths(assignment)))
    missing = sorted(used - defined)
    assert not missing, (
        f"solutions/{assignment}/{assignment}.ipynb writes symbols book/notation.md does not "
        f"define: {missing}; use the page's (or add a row there)"
    )
    if assignment == "overtraining_pricing":  # renamed, not mapped: the paper's letters gone
        maths = " ".join(exercise_maths(assignment))
        assert "\\alpha" not in maths and "\\beta" not in maths
        assert {"P", "P_\\text{mm}", "D_\\text{train}", "D_\\text{inf}"} <= used

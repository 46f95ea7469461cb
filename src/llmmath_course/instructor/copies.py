"""Submissions that look copied: byte-identical notebooks, and the same answers.

Byte-identical: two students handed in the same file (same SHA-256), which no two people
working alone do (nbgrader's own metadata and the outputs differ from run to run). It is a
flag to review. Near-identical: every answer cell a student changed from the release is, with
comments and whitespace aside, the same as another student's; a short exercise can be answered
the same way by two honest students, so these are listed for a person to judge, not flagged.
"""

from __future__ import annotations

import hashlib
import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path
from typing import Any

from llmmath_course.instructor.course import read_notebook


def identical_groups(root: Path, assignment: str, students: list[str]) -> list[list[str]]:
    """Students whose submissions hold the same notebooks byte for byte, in groups of two
    or more (each sorted; only students with at least one notebook)."""
    by_digest: dict[str, list[str]] = defaultdict(list)
    for student in students:
        folder = root / "submitted" / student / assignment
        notebooks = sorted(folder.glob("*.ipynb"))
        if not notebooks:
            continue
        digest = hashlib.sha256()
        for path in notebooks:
            digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
        by_digest[digest.hexdigest()].append(student)
    return sorted(sorted(group) for group in by_digest.values() if len(group) > 1)


def normalized(cell: Any) -> str:
    """A cell's source with comments and whitespace aside (markdown: words, lower case)."""
    source = str(cell.source)
    if cell.cell_type != "code":
        return " ".join(re.findall(r"\w+", source.lower()))
    try:
        tokens = [
            tok.string
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)
            and tok.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return " ".join(source.split())
    return " ".join(tokens)


def _answers(path: Path, released: dict[str, str]) -> tuple[str, ...]:
    """The answer cells of the notebook at ``path`` that differ from the release, normalized."""
    try:
        nb = read_notebook(path)
    except Exception:  # an unreadable notebook is flagged elsewhere
        return ()
    changed = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("solution") or meta.get("locked"):
            continue
        text = normalized(cell)
        if text and text != released.get(meta.get("grade_id", "")):
            changed.append(f"{meta.get('grade_id', '')}={text}")
    return tuple(changed)


def same_answer_groups(
    root: Path, assignment: str, students: list[str], release: Path
) -> list[list[str]]:
    """Students whose changed answer cells are all the same, in groups of two or more."""
    released: dict[str, dict[str, str]] = {}
    for path in sorted(release.glob("*.ipynb")):
        released[path.name] = {
            cell.metadata["nbgrader"].get("grade_id", ""): normalized(cell)
            for cell in read_notebook(path).cells
            if cell.metadata.get("nbgrader", {}).get("solution")
        }
    by_answers: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for student in students:
        folder = root / "submitted" / student / assignment
        key = tuple(
            (path.name, _answers(path, released.get(path.name, {})))
            for path in sorted(folder.glob("*.ipynb"))
        )
        if any(answers for _, answers in key):  # at least one answer written
            by_answers[key].append(student)
    return sorted(sorted(group) for group in by_answers.values() if len(group) > 1)

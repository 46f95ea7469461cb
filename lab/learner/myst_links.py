"""Citations and cross-references a learner's JupyterLab can follow (#36 item 2).

The book resolves ``{cite}`` against ``book/references.bib`` and ``{ref}`` against every page's
labels; jupyterlab-myst sees one notebook at a time and shows both as a "not found" marker. The
learner's server (``jupyter_server_config.py``) serves each course page with its markdown
rewritten by :func:`rewrite`:

- ``{cite}`key``` (and ``{cite:p}``) becomes "(Author, Year)", ``{cite:t}`` "Author (Year)",
  linked to the references page;
- ``{ref}`label``` and ``{ref}`text <label>``` become a link to the label on the page that holds
  it (``../book/glossary.md#glossary-decode``; ``#label`` on the page itself), with the label's
  heading as its text. A lesson opens as a notebook, a book page read-only as a rendered page
  with no kernel, each scrolled to the label (the learner's labextension,
  ``labextensions/llmmath-learner``), where jupyterlab-myst gives the label's heading that id;
- the references page's ``{bibliography}`` becomes the list of entries, which the book builds
  from the same file.

Only what is served changes: the files on disk, and the book, are untouched.
"""

from __future__ import annotations

import functools
import posixpath
import re
from pathlib import Path

PAGES = ("lessons", "book")
REFERENCES = "book/references.md"
BIBLIOGRAPHY = re.compile(r"^```\{bibliography\}.*?^```\s*$", re.S | re.M)
ROLE = re.compile(r"\{(cite|cite:p|cite:t|ref)\}`([^`]+)`")
LABEL = re.compile(r"^\(([\w-]+)\)=\s*$")
EXPLICIT = re.compile(r"^(.*?)\s*<([\w-]+)>$", re.S)


# ---- what the course's files hold ------------------------------------------------------------
@functools.cache
def labels(root: Path) -> dict[str, tuple[str, str]]:
    """Every ``(label)=`` of the course's pages: label -> (page, the heading it marks)."""
    found: dict[str, tuple[str, str]] = {}
    for folder in PAGES:
        for page in sorted((root / folder).glob("*.md")):
            lines = page.read_text().splitlines()
            for i, line in enumerate(lines):
                match = LABEL.match(line)
                if match:
                    found[match.group(1)] = (f"{folder}/{page.name}", _title(lines[i + 1 :]))
    return found


def _title(after: list[str]) -> str:
    """The heading a label marks (or the bold phrase that opens its paragraph)."""
    line = next((line for line in after if line.strip()), "")
    if line.startswith("#"):
        return line.lstrip("#").strip()
    bold = re.match(r"\*\*(.+?)\*\*", line)
    return bold.group(1).rstrip(".") if bold else line.strip()


@functools.cache
def bibliography(root: Path) -> dict[str, dict[str, str]]:
    """``book/references.bib`` as key -> fields (braces kept only where they nest)."""
    text = (root / "book" / "references.bib").read_text()
    entries: dict[str, dict[str, str]] = {}
    for match in re.finditer(r"@\w+\s*\{\s*([^,\s]+)\s*,", text):
        body = _braced(text, match.start() + match.group(0).index("{"))
        fields: dict[str, str] = {}
        for field in re.finditer(r"(\w+)\s*=\s*", body):
            start = field.end()
            if body[start] == "{":
                value = _braced(body, start)
            else:
                value = re.match(r"[^,\n]*", body[start:]).group(0)  # type: ignore[union-attr]
            fields.setdefault(field.group(1).lower(), _plain(value))
        entries[match.group(1)] = fields
    return entries


def _braced(text: str, start: int) -> str:
    """What the brace at ``start`` encloses, nested braces included."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1 : i]
    raise ValueError(f"references.bib: unbalanced braces after character {start}")


def _plain(value: str) -> str:
    """A field as text: LaTeX's ``\\url{x}`` as a Markdown autolink ``<x>``, braces dropped."""
    value = re.sub(r"\\url\{([^{}]*)\}", r"<\1>", value)
    return re.sub(r"\s+", " ", value.replace("{", "").replace("}", "").replace("\\&", "&")).strip()


def authors(fields: dict[str, str]) -> str:
    """ "Pope", "Shazeer and Lee", "Austin et al.", as the book's author-year style writes them."""
    names = [name.strip() for name in fields.get("author", "Anonymous").split(" and ")]
    last = [name.split(",")[0].strip() for name in names]
    if len(last) > 2 or "others" in last:
        return f"{last[0]} et al."
    return " and ".join(last)


# ---- the rewrite -----------------------------------------------------------------------------
def rewrite(markdown: str, page: str, root: Path) -> str:
    """``markdown`` of the course page ``page`` (relative to ``root``) with every citation and
    cross-reference a link JupyterLab can follow."""
    if page == REFERENCES:
        markdown = BIBLIOGRAPHY.sub(lambda _: reference_list(root), markdown)
    return ROLE.sub(lambda match: _role(match, page, root), markdown)


def _role(match: re.Match[str], page: str, root: Path) -> str:
    role, body = match.groups()
    if role == "ref":
        return _reference(body, page, root)
    keys = [key.strip() for key in body.split(",")]
    entries = bibliography(root)
    unknown = [key for key in keys if key not in entries]
    if unknown:
        return match.group(0)  # the book's build fails on it: leave it to say so
    target = _relative(REFERENCES, page)
    if role == "cite:t":
        return "; ".join(
            f"[{authors(entries[k])} ({entries[k].get('year', 'n.d.')})]({target})" for k in keys
        )
    cited = "; ".join(f"{authors(entries[k])}, {entries[k].get('year', 'n.d.')}" for k in keys)
    return f"([{cited}]({target}))"


def _reference(body: str, page: str, root: Path) -> str:
    explicit = EXPLICIT.match(body)
    text, label = (explicit.group(1), explicit.group(2)) if explicit else (None, body.strip())
    known = labels(root).get(label)
    if known is None:
        return f"{{ref}}`{body}`"  # the book's build fails on it: leave it to say so
    target, title = known
    where = "" if target == page else _relative(target, page)
    return f"[{text or title}]({where}#{label})"


def _relative(target: str, page: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(page) or ".")


def reference_list(root: Path) -> str:
    """The bibliography as a list, ordered as the book's (by author, then year)."""
    entries = bibliography(root)
    ordered = sorted(
        entries.items(), key=lambda kv: (authors(kv[1]).lower(), kv[1].get("year", ""))
    )
    lines = []
    for key, fields in ordered:
        where = fields.get("journal") or fields.get("booktitle") or fields.get("howpublished", "")
        url = f" <{fields['url']}>" if "url" in fields else ""
        lines.append(
            f"- {authors(fields)} ({fields.get('year', 'n.d.')}). *{fields.get('title', key)}*."
            + (f" {where}." if where else "")
            + url
        )
    return "\n".join(lines) + "\n"

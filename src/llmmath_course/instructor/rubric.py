"""The graders' rubric: each hand-graded answer's prompt, model answer and marking."""

from __future__ import annotations

from pathlib import Path

from llmmath_course.instructor.course import FEEDBACK_TEMPLATE, MATHJAX, read_notebook

RUBRIC_NOTE = "For graders only: model answers and marking schemes. Never give this to students."


def rubric_parts(source: Path) -> list[tuple[str, str]]:
    """(prompt, model answer and marking) for each hand-graded answer cell of a source notebook."""
    parts, prompt = [], ""
    for cell in read_notebook(source).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("locked"):
            prompt = cell.source
        elif meta.get("grade") and meta.get("solution"):
            answer = cell.source.split("### BEGIN SOLUTION", 1)[-1]
            answer = answer.split("### END SOLUTION", 1)[0].strip()
            parts.append((prompt, answer))
    return parts


def rubric(root: Path, assignment: str, out: Path) -> Path | None:
    """reports/<assignment>/rubric.md and .html from solutions/ (None if nothing is hand-graded)."""
    from nbconvert.filters import markdown2html

    sections = []
    for source in sorted((root / "solutions" / assignment).glob("*.ipynb")):
        for prompt, answer in rubric_parts(source):
            sections.append(f"## {source.stem}\n\n{prompt}\n\n---\n\n{answer}\n")
    if not sections:
        return None
    text = f"# Rubric: {assignment}\n\n*{RUBRIC_NOTE}*\n\n" + "\n".join(sections)
    (out / "rubric.md").write_text(text, encoding="utf-8")
    mathjax = (FEEDBACK_TEMPLATE / "mathjax.html.j2").read_text(encoding="utf-8")
    config = mathjax[mathjax.index("<script>") : mathjax.index("</script>") + 9]
    script = MATHJAX.read_text(encoding="utf-8")  # one page for the graders: carried inline
    html = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Rubric: {assignment}</title>"
        "<style>body{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.5}"
        "hr{margin:1.5em 0}</style>"
        f"{config}<script>{script}</script></head><body>{markdown2html(text)}</body></html>"
    )
    path = out / "rubric.html"
    path.write_text(html, encoding="utf-8")
    return path

"""Dump every value a page shows inline (glue and {eval}), to diff before and after a change.

    python scripts/dump_values.py --out values.json            # every page in _toc.yml
    python scripts/dump_values.py --out new.json --compare old.json
    python scripts/dump_values.py --only lessons/moe.md --compare old.json   # one page

Each page runs in its own process: its code cells execute top to bottom with ``myst_nb.glue``
recorded, then every ``{eval}`` role's expression is evaluated in the page's namespace. A lesson
whose numbers live in ``llmmath.display.numbers.<chapter>`` is not run: its ``{eval}``s read
``n = numbers.<chapter>.numbers()``, as its one setup cell does. An ``{eval}`` is keyed by its
place on the page (``eval@007``, its expression beside it), so a value that moved into a
chapter's module compares with the value it had before, whatever its new name. The comparison
lists each value that changed, appeared or disappeared, by page and name.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVAL_ROLE = re.compile(r"\{eval\}`([^`]+)`")
GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`([A-Za-z_][A-Za-z0-9_]*)(?::([^`]*))?`")
REL_TOL = 1e-9


def toc_pages() -> list[Path]:
    """Every .md page in _toc.yml that has code cells, in book order."""
    text = (ROOT / "_toc.yml").read_text()
    names = re.findall(r"(?:file|root):\s*(\S+)", text)
    pages = [ROOT / f"{name}.md" for name in names]
    return [p for p in pages if p.exists() and "```{code-cell}" in p.read_text()]


def _plain(value: Any) -> Any:
    """A JSON-friendly form of a shown value: numbers as floats, the rest as text."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return number if math.isfinite(number) else str(number)


def chapter_numbers(page: Path) -> Any | None:
    """``numbers()`` of the lesson's module in ``llmmath.display.numbers``, or None."""
    import importlib

    from llmmath.display.numbers import has_numbers

    if page.parent.name != "lessons" or not has_numbers(page.stem):
        return None

    return importlib.import_module(f"llmmath.display.numbers.{page.stem}").numbers()


def _shown_evals(page_text: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Each ``{eval}`` of the page in order: ``eval@NNN`` -> its text, ``expr@NNN`` -> itself."""
    shown: dict[str, Any] = {}
    for index, expression in enumerate(EVAL_ROLE.findall(page_text)):
        shown[f"eval@{index:03d}"] = str(eval(expression, namespace))
        shown[f"expr@{index:03d}"] = expression
    return shown


def dump_page(page: Path) -> dict[str, Any]:
    """Run one page's code cells and return {name: value} for every glued or evaluated name."""
    import jupytext
    import myst_nb

    numbers = chapter_numbers(page)
    if numbers is not None:
        return _shown_evals(page.read_text(), {"n": numbers})

    shown: dict[str, Any] = {}

    def record(name: str, variable: Any, display: bool = True) -> None:
        shown[f"glue:{name}"] = _plain(variable)

    myst_nb.glue = record  # lessons import it with `from myst_nb import glue`
    notebook = jupytext.read(page)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    os.chdir(page.parent)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            source = "\n".join(
                line
                for line in cell.source.splitlines()
                if not line.lstrip().startswith(("%", "!"))
            )
            exec(compile(source, f"{page.name}", "exec"), namespace)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for name, spec in GLUE_ROLE.findall(cell.source):
                raw = shown.get(f"glue:{name}")
                if spec and isinstance(raw, float):
                    shown[f"text:{name}"] = format(raw, spec)
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    return shown | _shown_evals(markdown, namespace)


def dump_all(pages: list[Path]) -> dict[str, dict[str, Any]]:
    values: dict[str, dict[str, Any]] = {}
    for page in pages:
        print(f"  {page.relative_to(ROOT)}", file=sys.stderr, flush=True)
        result = subprocess.run(
            [sys.executable, __file__, "--page", str(page)],
            capture_output=True,
            text=True,
            env={**os.environ, "MPLBACKEND": "Agg", "LLMMATH_STATIC_WIDGETS": "0"},
            check=False,
        )
        if result.returncode != 0:
            raise SystemExit(f"{page.name} failed:\n{result.stderr[-3000:]}")
        values[str(page.relative_to(ROOT))] = json.loads(result.stdout.splitlines()[-1])
    return values


def _same(old: Any, new: Any) -> bool:
    if isinstance(old, float) and isinstance(new, float):
        return math.isclose(old, new, rel_tol=REL_TOL, abs_tol=1e-12)
    return old == new


def compare(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[str]:
    """Lines naming each value that changed, appeared or went away.

    ``glue:NAME`` is the value a page glued; ``text:NAME`` the text a glue role shows;
    ``eval@NNN`` the text of the page's NNN-th ``{eval}``, named in the lines by its expression
    now (``expr@NNN``, not compared: a value may move to a new name and stay the same).
    """
    lines = []
    for page in sorted(set(old) | set(new)):
        before, after = old.get(page, {}), new.get(page, {})
        for name in sorted(set(before) | set(after)):
            if name.startswith("expr@"):
                continue
            if name.startswith("eval@"):
                expression = after.get(f"expr@{name[5:]}", before.get(f"expr@{name[5:]}"))
                name_shown = f"{name} ({expression})"
            else:
                name_shown = name
            moved_to_eval = name.startswith("glue:") and f"text:{name[5:]}" in after
            if name not in after and moved_to_eval:
                continue  # a glued value now shown by {eval}: its text is compared instead
            if name not in after:
                lines.append(f"{page} {name_shown}: {before[name]!r} -> (gone)")
            elif name not in before:
                lines.append(f"{page} {name_shown}: (new) -> {after[name]!r}")
            elif not _same(before[name], after[name]):
                lines.append(f"{page} {name_shown}: {before[name]!r} -> {after[name]!r}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="write {page: {name: value}} here")
    parser.add_argument("--compare", type=Path, help="an earlier dump to diff against")
    parser.add_argument(
        "--only", action="append", default=[], help="this page only (repeatable): lessons/moe.md"
    )
    args = parser.parse_args()
    if args.page:
        print(json.dumps(dump_page(Path(args.page))))
        return
    pages = toc_pages()
    if args.only:
        pages = [p for p in pages if str(p.relative_to(ROOT)) in args.only]
        unknown = set(args.only) - {str(p.relative_to(ROOT)) for p in pages}
        if unknown:
            raise SystemExit(f"--only: not a page of _toc.yml with code cells: {sorted(unknown)}")
    values = dump_all(pages)
    if args.out:
        args.out.write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
    count = sum(len(v) for v in values.values())
    print(f"{count} values on {len(values)} pages", file=sys.stderr)
    if args.compare:
        earlier = json.loads(args.compare.read_text())
        if args.only:
            earlier = {page: shown for page, shown in earlier.items() if page in values}
        changes = compare(earlier, values)
        print("\n".join(changes) if changes else "no value changed")


if __name__ == "__main__":
    main()

"""The built book: every page in the table of contents is there, pages come from the package,
and nothing graded leaks into it (no solution code, no hidden test)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from site_support import HTML, ROOT

if not (HTML / "index.html").exists():
    pytest.fail("the book is not built: run `make book` (make test does it first)", pytrace=False)

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries: list[dict[str, object]]) -> None:
        for entry in entries:
            if "file" in entry:
                files.append(str(entry["file"]))
            for key in ("chapters", "sections"):
                if key in entry:
                    walk(entry[key])  # type: ignore[arg-type]

    walk(toc["parts"])
    return files


def solution_lines() -> set[str]:
    """Substantial lines of code between the solution and hidden-test markers that the
    student-visible part of the same notebook does not also contain (a constant's name in
    the read-only specs cell, a phrase the instructions quote, are not secrets)."""
    secret: set[str] = set()
    for notebook in (ROOT / "solutions").rglob("*.ipynb"):
        hidden, public = set(), []
        for cell in json.loads(notebook.read_text())["cells"]:
            inside = False
            for line in "".join(cell["source"]).splitlines():
                stripped = line.strip()
                if stripped.startswith("### BEGIN"):
                    inside = True
                elif stripped.startswith("### END"):
                    inside = False
                elif inside and len(stripped) >= 12 and not stripped.startswith("#"):
                    hidden.add(stripped)
                elif not inside:
                    public.append(stripped.replace("`", ""))
        visible = "\n".join(public)
        secret |= {line for line in hidden if line not in visible}
    return secret


def built_text() -> dict[Path, str]:
    return {
        path: path.read_text(errors="replace")
        for path in HTML.rglob("*")
        if path.is_file()
        and path.suffix in {".html", ".js", ".txt", ".ipynb", ".md", ".json"}
        and "_vendor" not in path.parts
        and "mathjax" not in path.parts
    }


def test_every_toc_entry_is_built() -> None:
    missing = [f for f in toc_files() if not (HTML / f"{f}.html").exists()]
    assert not missing, f"pages in _toc.yml that did not build: {missing}"


def test_no_page_shows_an_error_or_stderr() -> None:
    """The build runs each lesson with the static widgets (JupyterLab runs them live:
    tests/course/test_lab.py). An exception fails the build (-W); a warning printed to stderr would
    only show on the page, as MyST-NB's ``output stderr`` block."""
    shown = {
        path.relative_to(HTML).as_posix(): len(found)
        for path in sorted(HTML.rglob("*.html"))
        if (found := re.findall(r'class="output (?:stderr|traceback)\b', path.read_text()))
    }
    assert not shown, f"error or stderr outputs on built pages: {shown}"


def test_no_solution_or_hidden_test_in_the_book() -> None:
    secrets = solution_lines()
    assert secrets, "found no solution lines to look for: is solutions/ empty?"
    for path, text in built_text().items():
        unescaped = re.sub(r"<[^>]+>", "", text).replace("&quot;", '"').replace("&#39;", "'")
        for marker in MARKERS:
            assert marker not in unescaped, f"{path} contains {marker!r}"
        leaked = [line for line in secrets if line in unescaped]
        assert not leaked, f"{path} contains solution or hidden-test lines: {leaked[:3]}"


def test_exercise_page_is_the_student_version() -> None:
    page = (HTML / "exercises" / "roofline" / "roofline.html").read_text()
    assert "NotImplementedError" in page, "the exercise page should show the stubs"


def test_reference_tables_come_from_the_data_files() -> None:
    from llmmath import get_chip, get_model

    page = (HTML / "book" / "hardware_and_models.html").read_text()
    assert page.count("<table") >= 2, "the reference tables render as text, not tables"
    assert get_chip("H100").full_name in page
    assert f"{get_model('Llama-3-70B').kv_bytes_per_token('bf16'):,.0f}" in page


def test_no_cdn_in_pages() -> None:
    """Scripts and styles load from the book itself (the browser test checks requests too)."""
    for path in HTML.rglob("*.html"):
        text = path.read_text()
        sources = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', text)
        assert not sources, f"{path} loads {sources} from the network"


def book_excludes() -> Callable[[str], bool]:
    """Whether ``_config.yml`` excludes a path or a folder above it (sphinx-external-toc's
    own test for the pages it adds to ``exclude_patterns``)."""
    from sphinx.util.matching import Matcher

    excluded = Matcher(yaml.safe_load((ROOT / "_config.yml").read_text())["exclude_patterns"])

    def outside_the_book(path: str) -> bool:
        parts = path.split("/")
        return any(excluded("/".join(parts[: i + 1])) for i in range(len(parts)))

    return outside_the_book


def test_pages_made_beside_the_book_never_rebuild_it() -> None:
    """Jupyter Book (only_build_toc_files) lists every page outside the TOC in
    ``exclude_patterns``; a new one changes that config and Sphinx re-executes every lesson.
    So every committed page outside the TOC, and any page in a folder .gitignore names (made by
    ``make lab``, ``make grade``, npm), must already be excluded."""
    in_toc, outside_the_book = set(toc_files()), book_excludes()
    listed = subprocess.run(
        ["git", "ls-files", "*.md", "*.ipynb"], cwd=ROOT, capture_output=True, text=True,
        check=True,
    ).stdout.split()  # fmt: skip
    stray = [p for p in listed if p.rsplit(".", 1)[0] not in in_toc and not outside_the_book(p)]
    assert not stray, f"pages outside _toc.yml not in _config.yml's exclude_patterns: {stray}"
    made_later = []
    for line in (ROOT / ".gitignore").read_text().splitlines():
        if line.endswith("/") and not line.startswith("#"):
            folder = line.strip("/").replace("*", "-x")
            made_later.append(f"{folder}/page.md")
            # Git matches a pattern without an inner "/" at any depth; hidden folders are not
            # searched for pages.
            if "/" not in line.strip("/") and not line.startswith((".", "/")):
                made_later.append(f"lessons/x/{folder}/page.md")
    assert len(made_later) > 10, "read no folders from .gitignore"
    missing = [p for p in made_later if not outside_the_book(p)]
    assert not missing, f"pages made later in ignored folders would rebuild the book: {missing}"


# ---- pages load only what they use (#45 item 3; book/_ext/lean_pages.py) -------------------
def head_of(path: Path) -> str:
    return path.read_text().split("</head>", 1)[0]


BLOCKING = re.compile(r"<script(?![^>]*\b(?:defer|async)\b)[^>]*\bsrc=\"([^\"]+)\"")
#: Scripts a page may load in its head without defer, each small and each needed before the
#: page is drawn (the widget shims must run before the theme and the renderer load).
SMALL_BLOCKING = 64_000


def test_no_heavy_script_blocks_the_first_paint() -> None:
    """A script in the head without defer or async stops the page from painting until it
    has arrived and run: the 4.4 MB widget renderer did, and the 300 kB search index."""
    heavy = {}
    for path in HTML.rglob("*.html"):
        # search.html searches its index and nothing else: it needs it before anything.
        if "_static" in path.parts or path.name == "search.html":
            continue
        for source in BLOCKING.findall(head_of(path)):
            file = (path.parent / source.split("?")[0]).resolve()
            if file.is_file() and file.stat().st_size > SMALL_BLOCKING:
                heavy[path.relative_to(HTML).as_posix()] = source
    assert not heavy, heavy


def test_the_search_index_loads_only_on_the_search_page() -> None:
    loading = [
        p.relative_to(HTML).as_posix()
        for p in HTML.rglob("*.html")
        if "searchindex.js" in head_of(p) and p.name != "search.html"
    ]
    assert not loading, loading[:5]
    assert "searchindex.js" in (HTML / "search.html").read_text()


def test_no_page_declares_thebe_it_does_not_use() -> None:
    """sphinx-thebe declared ``const THEBE_JS_URL`` twice in every head: a console error."""
    for path in [HTML / "book" / "intro.html", HTML / "lessons" / "kv_cache.html"]:
        assert "THEBE_JS_URL" not in path.read_text(), path


def test_no_dead_files_in_static() -> None:
    """Source maps and bundles no page loads are not shipped (book/_ext/lean_pages.py), nor
    the explorers' script where no page has an explorer; no widget renderer at all (the
    explorers are plain HTML)."""
    static = HTML / "_static"
    dead = [p.relative_to(static).as_posix() for p in static.rglob("*.map")]
    dead += [
        name
        for name in (
            "html-manager",
            "require.js",
            "widget_compat.js",
            "mathjax/tex-svg.js",
            "mathjax/tex-mml-chtml.js",
            "scripts/fontawesome.js",
        )
        if (static / name).exists()
    ]
    pages = [p.read_text() for p in HTML.rglob("*.html") if "_static" not in p.parts]
    loaded = any("_static/explorer.js" in page for page in pages)
    if (static / "explorer.js").exists() != loaded:
        dead.append(f"explorer.js (loaded by a page: {loaded}, shipped: {not loaded})")
    assert loaded, "no page loads explorer.js"
    assert not dead, dead


#: Our own files in ``_static`` that no page names and that are used all the same: MathJax
#: fetches its fonts and TeX extensions from beside its script, as a page needs them.
LOADED_BY_MATHJAX = ("mathjax/output/", "mathjax/input/tex/extensions/")


def test_every_vendored_and_course_file_shipped_is_used() -> None:
    """Each file the book ships from ``book/_vendor`` (scripts/vendor_js.py) and
    ``book/static`` is loaded by a built page (or by MathJax, from beside its script): a file
    vendored or written for the book and then left unused (as the widget renderer, require.js
    and their shims were once the explorers became plain HTML) fails here."""
    static = HTML / "_static"
    ours = [
        path.relative_to(folder).as_posix()
        for folder in (ROOT / "book" / "_vendor", ROOT / "book" / "static")
        for path in folder.rglob("*")
        if path.is_file() and path.name != "versions.json"
    ]
    shipped = [name for name in ours if (static / name).is_file()]
    assert "mathjax/tex-chtml-lean.js" in shipped and "explorer.js" in shipped, shipped
    pages = "\n".join(p.read_text() for p in HTML.rglob("*.html") if "_static" not in p.parts)
    unused = [
        name
        for name in shipped
        if f"_static/{name}" not in pages and not name.startswith(LOADED_BY_MATHJAX)
    ]
    assert not unused, f"shipped in _static, loaded by no page: {unused}"


def test_vendor_js_fetches_only_what_the_book_and_tests_load() -> None:
    """scripts/vendor_js.py vendors MathJax (the book, nbgrader's feedback) and axe-core (the
    tests): no widget renderer or require.js, which no page loads."""
    spec = importlib.util.spec_from_file_location("vendor_js", ROOT / "scripts" / "vendor_js.py")
    assert spec and spec.loader
    vendor_js = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vendor_js)
    names = {spec.rsplit("@", 1)[0] for spec in (*vendor_js.PACKAGES, *vendor_js.TEST_PACKAGES)}
    assert names == {"mathjax", "axe-core"}, names


def test_explorer_script_loads_deferred_and_only_where_an_explorer_is() -> None:
    """A page with an explorer loads explorer.js (deferred: it never holds back the first
    paint); a page without one loads neither it nor the widget renderer (#45 item 3)."""
    for path in HTML.rglob("*.html"):
        if "_static" in path.parts:
            continue
        page = path.read_text()
        scripts = re.findall(r"<script[^>]*\bsrc=\"[^\"]*_static/explorer\.js[^>]*>", page)
        if 'class="llm-explorer"' in page:
            assert len(scripts) == 1 and "defer" in scripts[0], (path, scripts)
        else:
            assert not scripts, path
        # No ipywidgets state (the book ships no renderer to draw it) and no renderer loaded.
        assert "application/vnd.jupyter.widget-state+json" not in page, path
        assert "html-manager" not in page and "_static/require.js" not in page, path


def test_figures_are_palette_pngs_loaded_lazily_at_their_size() -> None:
    """A lesson figure ships as a palette PNG (book/_ext/lean_pages.py: a fifth of
    matplotlib's RGBA bytes) and its ``<img>`` says its size and loads lazily, so figures far
    down a page leave a phone's first seconds of network to the text, styles and MathJax."""
    from PIL import Image

    tags = [
        tag
        for page in HTML.rglob("*.html")
        if "_static" not in page.parts
        for tag in re.findall(r"<img [^>]*_images/[^>]*>", page.read_text())
    ]
    assert len(tags) >= 20, f"only {len(tags)} figures in the book"
    for tag in tags:
        assert 'loading="lazy"' in tag and re.search(r'width="\d+" height="\d+"', tag), tag
    figures = list((HTML / "_images").glob("*.png"))
    rgba = [p.name for p in figures if Image.open(p).mode != "P"]
    assert figures and not rgba, f"figures shipped as full-colour PNGs: {rgba}"

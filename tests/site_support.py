"""Serve the built book on loopback and drive it with Debian's chromium (no download): the
browser and server are llmmath_course.browser's (the benchmarks use them too)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Browser, Page
from wait_support import ms, screenshot_pages, seconds

from llmmath_course import browser
from llmmath_course.browser import CHROMIUM, CHROMIUM_ARGS, MISSING, serve  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
# In a JupyterLab page that exposes its app (window.jupyterapp: make lab's in test_lab, the
# test hub's students' in test_hub):
#: True once the current document's kernel info and spec have arrived and JupyterLab's own
#: handlers of them (registered first, so run first) have updated the notebook's metadata.
KERNEL_KNOWN = """async () => {
    const panel = jupyterapp.shell.currentWidget;
    await panel.sessionContext.ready;
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel) return false;
    await kernel.info;
    await kernel.spec;
    await new Promise(resolve => setTimeout(resolve, 0));
    return true;
}"""
# Console errors a page may log, each with its reason (#45: every other error fails, and so
# does every failed request). The book's own pages log none (book/_ext/lean_pages.py), and
# since the explorers are plain HTML (no widget renderer's "processLuminoMessage" under fast
# keys), there is no exception left.
HARMLESS_CONSOLE: tuple[str, ...] = ()


# What a page waits where a call names none (Playwright's own default is 30 s).
DEFAULT_WAIT_S = 30


@contextmanager
def chromium() -> Iterator[Browser]:
    """``llmmath_course.browser.chromium``, which fails the test, not errors, without it. Its
    pages wait ``seconds(DEFAULT_WAIT_S)`` where a call names no timeout (tests/wait_support.py),
    and when the test fails inside, each open page is photographed before the browser closes:
    the failure ends with the pages' addresses and the screenshots' paths."""
    if not Path(CHROMIUM).exists():
        pytest.fail(MISSING, pytrace=False)
    with browser.chromium(default_timeout_s=seconds(DEFAULT_WAIT_S)) as opened:
        try:
            yield opened
        except BaseException as error:
            # A test's failure (pytest.fail's too, not an Exception), not an interrupt.
            interrupted = isinstance(error, KeyboardInterrupt | GeneratorExit | SystemExit)
            if not interrupted and not getattr(error, "_photographed", False):
                label = os.environ.get("PYTEST_CURRENT_TEST", "test").split(" ")[0]
                shots = screenshot_pages(opened, label)
                error.add_note("open pages when it failed:\n" + "\n".join(shots))
                error._photographed = True  # type: ignore[attr-defined]
            raise


# True once MathJax 3 has typeset the page (its startup promise resolves after the first
# typesetting), or at once on a page that loads no MathJax. A page whose MathJax script is still
# loading (window.MathJax only its configuration) is waited for, not taken as done.
MATHS_TYPESET = """() => {
    const loads = [...document.scripts].some(s => /mathjax/i.test(s.src));
    if (!loads && !window.MathJax) return true;
    if (!window.MathJax || !MathJax.startup || !MathJax.startup.promise) return false;
    return MathJax.startup.promise.then(() => true);
}"""


def typeset(page: Page) -> None:
    """Wait until ``page`` shows what a reader sees: its maths typeset (``MATHS_TYPESET``) and
    its fonts loaded."""
    page.wait_for_function(MATHS_TYPESET, timeout=ms(30))
    page.wait_for_function("() => document.fonts.status === 'loaded'", timeout=ms(20))


def is_local(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in ("data", "blob", "about") or parsed.hostname in (
        "127.0.0.1",
        "localhost",
    )


def built_pages() -> list[Path]:
    """Every page of the book (not Sphinx's generated index and search pages)."""
    skip = {"genindex.html", "search.html"}
    return sorted(
        p
        for p in HTML.rglob("*.html")
        if p.name not in skip and not {"_static", "_sources", "_images"} & set(p.parts)
    )

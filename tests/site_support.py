"""Serve the built book on loopback and drive it with Debian's chromium (no download)."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Browser, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Console noise seen on every Jupyter Book 1 page and from fast widget events (toolchain.md).
HARMLESS_CONSOLE = (
    "THEBE_JS_URL",
    "processLuminoMessage",
    "Got invalid theme mode",  # sphinx-book-theme before a mode is stored
    "Failed to load resource",  # FontAwesome fonts the widget CSS asks for (404)
)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on a free loopback port; yields the base URL, always shuts down."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


_running: list[Browser] = []  # the browser this process has open, if any


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's chromium driven by Playwright (never a downloaded browser); always closed.

    One per process: Playwright's sync API cannot run twice at once in a thread, so a caller
    inside another's ``with`` (a test using the session's browser) shares the open one."""
    if _running and _running[-1].is_connected():
        yield _running[-1]
        return
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: apt-get install chromium", pytrace=False)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        _running.append(browser)
        try:
            yield browser
        finally:
            _running.remove(browser)
            browser.close()


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

"""Serve a folder on loopback and drive it with Debian's chromium (no download): the book's
browser tests (tests/site_support.py) and benchmarks (scripts/bench.py, scripts/bench_lab.py)."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

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
MISSING = "Debian's chromium is missing: apt-get install chromium"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(
    directory: Path, handler_class: type[http.server.SimpleHTTPRequestHandler] = _QuietHandler
) -> Iterator[str]:
    """Serve ``directory`` on a free loopback port with ``handler_class`` (static files, quiet,
    by default); yields the base URL, always shuts down."""
    handler = functools.partial(handler_class, directory=str(directory))
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


def _with_default_timeout(browser: Browser, timeout_ms: float) -> None:
    """Every context ``browser`` makes from now on (and so every page, popups included) waits
    at most ``timeout_ms`` where a call names no timeout (Playwright's default is 30 s)."""
    new_context, new_page = browser.new_context, browser.new_page

    def context_with_timeout(*args: Any, **kwargs: Any) -> BrowserContext:
        context = new_context(*args, **kwargs)
        context.set_default_timeout(timeout_ms)
        return context

    def page_with_timeout(*args: Any, **kwargs: Any) -> Page:
        page = new_page(*args, **kwargs)
        page.context.set_default_timeout(timeout_ms)
        return page

    # On this instance only: the sync API has no setting for a browser-wide default.
    setattr(browser, "new_context", context_with_timeout)  # noqa: B010
    setattr(browser, "new_page", page_with_timeout)  # noqa: B010


@contextmanager
def chromium(default_timeout_s: float | None = None) -> Iterator[Browser]:
    """Debian's chromium driven by Playwright (never a downloaded browser); always closed.
    ``default_timeout_s``: what its pages wait where a call names no timeout (the tests take
    theirs from tests/wait_support.py); Playwright's 30 s if None.

    One per process: Playwright's sync API cannot run twice at once in a thread, so a caller
    inside another's ``with`` (a test using the session's browser) shares the open one."""
    from playwright.sync_api import sync_playwright

    if _running and _running[-1].is_connected():
        yield _running[-1]
        return
    if not Path(CHROMIUM).exists():
        raise RuntimeError(MISSING)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if default_timeout_s is not None:
            _with_default_timeout(browser, default_timeout_s * 1000)
        _running.append(browser)
        try:
            yield browser
        finally:
            _running.remove(browser)
            browser.close()


def running() -> Browser | None:
    """The browser ``chromium`` has open in this process, if any."""
    return _running[-1] if _running else None

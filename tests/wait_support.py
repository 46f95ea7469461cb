"""Every wait in the tests takes its budget from here: ``seconds(base)`` / ``ms(base)``.

A wait waits for a condition (a document loaded, a kernel idle, a file written) and returns as
soon as it holds, so a generous budget costs nothing when the test passes; it only decides how
long a real failure takes to be reported. ``base`` is what the wait needs on a quiet 2-core
machine with the suite's two workers running, with room to spare. It is scaled by

- ``LLMMATH_WAIT_FACTOR`` (default 1): CI, or anyone on a slow machine, sets it
  (``.ci/run`` sets 2);
- the machine's load when the wait starts: the 1-minute load average per core, beyond the
  suite's own (two workers and their servers, browsers and kernels, about 2 per core's worth
  on 2 cores), so a machine shared with other jobs waits longer. Capped at ``MAX_LOAD_FACTOR``
  so that a wait that can never succeed still fails in minutes.

A wait that runs out fails with what it waited for and what it saw: ``wait_until`` says both;
a browser's pages are photographed (``screenshot_pages``) when a test fails with them open
(tests/conftest.py, tests/site_support.py), and the path is in the failure. Nothing here
retries an action: a wait polls a condition, and its first failure is the test's failure.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "_build" / "test-screenshots"
# The load the suite makes by itself, per core: two workers, each with a server or a browser.
OWN_LOAD_PER_CORE = 2.0
MAX_LOAD_FACTOR = 4.0


def env_factor() -> float:
    """``LLMMATH_WAIT_FACTOR``: a number >= 1 (default 1); anything else is refused."""
    raw = os.environ.get("LLMMATH_WAIT_FACTOR", "1")
    try:
        factor = float(raw)
    except ValueError:
        factor = 0.0
    if not factor >= 1:  # also NaN
        raise ValueError(f"LLMMATH_WAIT_FACTOR must be a number >= 1, not {raw!r}")
    return factor


def load_factor() -> float:
    """How much busier this machine is than the suite makes it alone: the 1-minute load average
    per core over ``OWN_LOAD_PER_CORE``, between 1 and ``MAX_LOAD_FACTOR``."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        return 1.0
    per_core = load / (os.cpu_count() or 1)
    return min(MAX_LOAD_FACTOR, max(1.0, per_core / OWN_LOAD_PER_CORE))


def factor() -> float:
    """What every budget is multiplied by, now."""
    return env_factor() * load_factor()


def seconds(base: float) -> float:
    """A wait's budget in seconds: ``base`` (a quiet machine's, with room) times ``factor()``."""
    return base * factor()


def ms(base: float) -> float:
    """``seconds(base)`` in milliseconds, for Playwright's ``timeout=``."""
    return seconds(base) * 1000


def in_page(page: Any) -> Callable[[float], None]:
    """A pause that lets Playwright handle the page's events meanwhile (``time.sleep`` would
    hold its routes and messages until the next call): ``wait_until(..., pause=in_page(p))``."""
    return lambda s: page.wait_for_timeout(s * 1000)


def poll(
    condition: Callable[[], T | None],
    base: float,
    every: float = 0.2,
    pause: Callable[[float], None] = time.sleep,
) -> T | None:
    """Call ``condition`` every ``every`` s until it returns something truthy, and return that;
    after ``seconds(base)``, its last value. An exception in ``condition`` is not caught."""
    deadline = time.monotonic() + seconds(base)
    while True:
        result = condition()
        if result or time.monotonic() > deadline:
            return result
        pause(every)


def wait_until(
    condition: Callable[[], T | None],
    what: str,
    base: float,
    seen: Callable[[], object] | None = None,
    every: float = 0.2,
    pause: Callable[[float], None] = time.sleep,
) -> T:
    """``poll`` until ``condition`` holds and return its value; or fail after ``seconds(base)``,
    saying ``what`` was waited for and what ``seen()`` (default: the condition's last value)
    showed."""
    budget = seconds(base)
    result = poll(condition, base, every, pause)
    if result:
        return result
    shown = seen() if seen is not None else result
    raise AssertionError(
        f"waited {budget:.0f} s (base {base:g} s x {budget / base:.2f}) for {what}; saw: {shown}"
    )


def screenshot_pages(browser: Any, label: str) -> list[str]:
    """Photograph every open page of ``browser`` (a Playwright Browser) into
    ``_build/test-screenshots/<label>-<n>.png``; lines "url -> path" (or why not)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-")[-120:]
    lines = []
    try:
        pages = [page for context in browser.contexts for page in context.pages]
    except Exception as error:  # the browser is gone: say so rather than hide the test's error
        return [f"(no screenshot: {type(error).__name__}: {error})"]
    for n, page in enumerate(pages):
        path = SCREENSHOTS / f"{stem}-{n}.png"
        try:
            page.screenshot(path=str(path), timeout=10_000)
            lines.append(f"{page.url} -> {path}")
        except Exception as error:
            lines.append(f"{page.url} -> (no screenshot: {type(error).__name__})")
    return lines

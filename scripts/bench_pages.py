"""The built book's pages on a phone network (measured, reported, never asserted; #45 item 3).

    make bench                                                # after `make book`
    .venv/bin/python scripts/bench_pages.py _build/html --out pages.json
    .venv/bin/python scripts/bench_pages.py _build/html --only kv_cache --loads 1

Serves the book on loopback with gzip, as a publishing host serves it (text files compressed
on the fly, images as they are), and loads each page in headless Chromium under Chromium's
own emulation, through the DevTools protocol: 1.6 Mbps down, 750 kbps up, 150 ms round trip
(Network.emulateNetworkConditions) and a CPU 4x slower (Emulation.setCPUThrottlingRate),
a fresh cache each load. For each page it reports

* ``transferred_bytes``: the bytes that crossed the (emulated) network, headers included,
  until the page is interactive (Network.loadingFinished's encodedDataLength, summed);
* ``fcp_s``: first contentful paint (the paint timing entry);
* ``interactive_s``: the load event has fired, every explorer has its controls working
  (explorer.js has set up each static explorer; no ipywidgets ``widget-view+json``
  placeholder, if a page had one, is left unrendered) and the main thread has been idle
  for 0.5 s (no long task), from the start of navigation;
* ``requests`` and ``failed``: requests made, and those that failed or answered >= 400.

Medians of ``--loads`` loads. Prints a table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import io
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from llmmath_course.browser import chromium, serve

#: The phone profile the issue names.
DOWNLOAD_BPS = 1.6e6 / 8
UPLOAD_BPS = 750e3 / 8
LATENCY_MS = 150
CPU_SLOWDOWN = 4
COMPRESSED = (".html", ".js", ".css", ".json", ".svg", ".txt", ".map", ".woff", ".ttf", ".eot")


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """Static files, text compressed with gzip when the browser accepts it (as GitHub Pages,
    Netlify or nginx's gzip_static serve a book)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self) -> Any:
        path = Path(self.translate_path(self.path))
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.is_file() and path.suffix in COMPRESSED):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


RENDERED = """() => {
  const kind = 'script[type="application/vnd.jupyter.widget-view+json"]';
  const views = document.querySelectorAll(kind);
  for (const view of views) {
    const next = view.nextElementSibling;
    if (!(next && next.classList.contains('jupyter-widgets'))
        && !view.parentElement.querySelector('.jupyter-widgets')) return false;
  }
  if (document.querySelector('.llm-explorer:not([data-ready])')) return false;
  return document.readyState === 'complete';
}"""

LONG_TASKS = """() => {
  window.__lastLongTask = performance.now();
  new PerformanceObserver(list => {
    for (const entry of list.getEntries())
      window.__lastLongTask = Math.max(window.__lastLongTask, entry.startTime + entry.duration);
  }).observe({type: 'longtask', buffered: true});
}"""


def load(browser: Any, url: str) -> dict[str, Any]:
    """One cold load of ``url`` under the phone profile."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    cdp.send(
        "Network.emulateNetworkConditions",
        {
            "offline": False,
            "latency": LATENCY_MS,
            "downloadThroughput": DOWNLOAD_BPS,
            "uploadThroughput": UPLOAD_BPS,
        },
    )
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
    sizes: dict[str, float] = {}
    failed: list[str] = []
    urls: dict[str, str] = {}
    cdp.on(
        "Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"])
    )
    cdp.on(
        "Network.loadingFinished",
        lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]),
    )
    cdp.on("Network.loadingFailed", lambda e: failed.append(urls.get(e["requestId"], "?")))

    def answered(e: dict[str, Any]) -> None:
        if e["response"]["status"] >= 400:
            failed.append(f"{e['response']['status']} {e['response']['url']}")

    cdp.on("Network.responseReceived", answered)
    page.add_init_script(f"({LONG_TASKS})()")
    start = time.perf_counter()
    page.goto(url, wait_until="commit", timeout=300_000)
    page.wait_for_function(RENDERED, timeout=300_000, polling=100)
    # Idle: no long task in the last 0.5 s.
    page.wait_for_function(
        "performance.now() - window.__lastLongTask > 500", timeout=300_000, polling=100
    )
    wall = time.perf_counter() - start
    timing = page.evaluate(
        """() => ({
          fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1,
          idle: window.__lastLongTask,
          load: performance.getEntriesByType('navigation')[0]?.loadEventEnd ?? -1,
        })"""
    )
    context.close()
    return {
        "transferred_bytes": sum(sizes.values()),
        "fcp_s": timing["fcp"] / 1e3,
        "interactive_s": max(timing["idle"], timing["load"]) / 1e3,
        "wall_s": wall,
        "requests": len(urls),
        "failed": failed,
    }


def pages_of(html: Path, only: str | None) -> list[str]:
    lessons = sorted(f"lessons/{p.name}" for p in (html / "lessons").glob("*.html"))
    pages = ["book/intro.html", *lessons, "book/references.html"]
    return [p for p in pages if not only or only in p]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("html", type=Path, nargs="?", default=Path("_build/html"))
    parser.add_argument("--loads", type=int, default=3, help="loads per page (median)")
    parser.add_argument("--only", help="pages whose path contains this")
    parser.add_argument("--out", type=Path, help="write the results here (JSON)")
    args = parser.parse_args()
    if not (args.html / "index.html").exists():
        print(f"no built book in {args.html}: run `make book`", file=sys.stderr)
        return 1
    rows = []
    print(f"{'page':34} {'gzip kB':>8} {'FCP s':>6} {'interactive s':>13} {'requests':>8} failed")
    with serve(args.html, GzipHandler) as base, chromium() as browser:
        for path in pages_of(args.html, args.only):
            runs = [load(browser, f"{base}/{path}") for _ in range(args.loads)]
            row = {
                "page": path,
                **{
                    key: statistics.median(run[key] for run in runs)
                    for key in ("transferred_bytes", "fcp_s", "interactive_s", "requests")
                },
                "failed": sorted({f for run in runs for f in run["failed"]}),
            }
            rows.append(row)
            print(
                f"{path:34} {row['transferred_bytes'] / 1e3:8.0f} {row['fcp_s']:6.2f} "
                f"{row['interactive_s']:13.2f} {row['requests']:8.0f} {len(row['failed'])}",
                flush=True,
            )
    profile = {
        "download_bps": DOWNLOAD_BPS * 8,
        "upload_bps": UPLOAD_BPS * 8,
        "latency_ms": LATENCY_MS,
        "cpu_slowdown": CPU_SLOWDOWN,
    }
    if args.out:
        args.out.write_text(json.dumps({"profile": profile, "pages": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

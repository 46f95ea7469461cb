"""The learner's JupyterLab, timed in Debian's chromium (measured and reported, never asserted).

    .venv/bin/python scripts/bench_lab.py            # about a minute
    .venv/bin/python scripts/bench_lab.py --moves 50

Figures:

- ``make lab`` to a usable page: from starting ``make lab`` (environment already set up) until
  the server answers, and until the start page is rendered in an already open browser;
- a lesson's first live figure: from opening ``lessons/roofline.md`` until Run All has drawn
  the explorer;
- live widget update latency: a key press on the batch slider until the new figure has
  loaded in the page (kernel round trip, model, redraw, PNG, transfer, decode), timed inside
  the page with ``performance.now()``; median and p95 over ``--moves`` presses, one at a time;
- the same for one main control of each lesson's main explorer (``main_controls()``), right
  after that lesson's Run All;
- Run All of every lesson in JupyterLab: from the menu command until every code cell (hidden
  ones too) has an execution count, read from the notebook's model; and, run headless with
  nbclient, the cell that takes longest in each lesson.
- what a learner's session holds after the walk: every lesson run and then closed as a
  learner closes a tab (File > Close Tab, Discard), and each exercise opened and closed the
  same way; the kernels still running and the resident memory of the server and its kernels,
  at once and after the server's idle culling (``--cull-after`` seconds; ten minutes for a
  learner).

It runs ``make lab`` in this repository with a throwaway learner folder (``my-work-bench-*``,
removed afterwards) on a free loopback port, and writes ``bench-lab-results.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

import numpy as np
import psutil
from playwright.sync_api import Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from llmmath_course.browser import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parent.parent

# Records, in the page, when a key goes down and when the figure next finishes loading.
PROBE = """(img) => {
  window.__bench = {keys: [], loads: []};
  document.addEventListener('keydown', () => window.__bench.keys.push(performance.now()), true);
  img.addEventListener('load', () => window.__bench.loads.push(performance.now()));
}"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers(url: str, token: str) -> bool:
    request = urllib.request.Request(
        f"{url}/api/status", headers={"Authorization": f"token {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=2):
            return True
    except (OSError, urllib.error.URLError):
        return False


def stop(process: subprocess.Popen[bytes], url: str, token: str) -> None:
    request = urllib.request.Request(
        f"{url}/api/shutdown", method="POST", headers={"Authorization": f"token {token}"}
    )
    with contextlib.suppress(OSError, urllib.error.URLError):
        urllib.request.urlopen(request, timeout=5).close()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_all_run(page: Page, timeout_s: float = 300) -> None:
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        prompts = cells.all_text_contents()
        if prompts and all("[" in p and "*" not in p and p.strip("[]: ") for p in prompts):
            return
        page.wait_for_timeout(100)
    raise TimeoutError("Run All did not finish")


RAN_JS = """() => {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
    let code = 0, ran = 0;
    for (let i = 0; i < cells.length; i++) {
        const cell = cells.get(i);
        if (cell.type === "code") { code++; if (cell.executionCount) ran++; }
    }
    return code > 0 && ran === code;
}"""


def lesson_run_all_s(page: Page, url: str, token: str, lesson: Path) -> float:
    """Seconds from Run All Cells until every code cell of ``lesson`` has run in JupyterLab
    (the lesson is left open, its explorers live)."""
    page.goto(f"{url}/lab/tree/lessons/{lesson.name}?reset&token={token}")
    page.locator("#jp-main-statusbar", has_text="| Idle").wait_for(timeout=120_000)
    start = time.perf_counter()
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    page.wait_for_function(RAN_JS, timeout=300_000, polling=100)
    return time.perf_counter() - start


def close_tab(page: Page, url: str, token: str) -> None:
    """Close the current tab as a learner does (File > Close Tab), discarding a lesson's
    outputs when JupyterLab asks whether to save them; wait (up to 10 s) for the kernel's
    shutdown, which the page requests after the tab is gone, before moving on."""
    before = len(kernels(url, token))
    page.evaluate("() => jupyterapp.commands.execute('application:close')")
    discard = page.locator(".jp-Dialog button", has_text="Discard")
    with contextlib.suppress(PlaywrightTimeout):
        discard.click(timeout=3_000)
    page.locator(".jp-Dialog").wait_for(state="detached")
    deadline = time.monotonic() + 10
    while len(kernels(url, token)) >= before and time.monotonic() < deadline:
        time.sleep(0.2)


def kernels(url: str, token: str) -> list[object]:
    request = urllib.request.Request(
        f"{url}/api/kernels", headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return list(json.loads(response.read()))


def session_held(process: subprocess.Popen[bytes], url: str, token: str) -> dict[str, float]:
    """The kernels still running and the resident memory (MB) of the server and its kernels."""
    time.sleep(3)  # a kernel shut down on close takes a moment to exit
    running = len(kernels(url, token))
    tree = psutil.Process(process.pid).children(recursive=True)
    rss = sum(p.memory_info().rss for p in tree if p.is_running())
    return {"kernels": running, "rss_mb": rss / 1e6}


def latency_figures(latencies: list[float]) -> dict[str, float]:
    return {
        "moves": len(latencies),
        "median": statistics.median(latencies),
        "p95": float(np.percentile(np.array(latencies), 95)),
        "min": min(latencies),
        "max": max(latencies),
    }


def slowest_cell(lesson: Path) -> dict[str, object]:
    """The lesson's slowest code cell, run headless (nbclient records each cell's timing)."""
    import jupytext
    from nbclient import NotebookClient

    notebook = jupytext.read(lesson)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3")
    client.resources = {"metadata": {"path": str(lesson.parent)}}
    client.execute()
    times = []
    for cell in notebook.cells:
        timing = cell.metadata.get("execution", {})
        if cell.cell_type == "code" and "iopub.execute_input" in timing:
            began = datetime.fromisoformat(timing["iopub.execute_input"])
            ended = datetime.fromisoformat(timing["shell.execute_reply"])
            times.append(((ended - began).total_seconds(), cell.source.splitlines()[0]))
    seconds, first_line = max(times)
    return {"s": seconds, "first_line": first_line, "all_cells_s": sum(s for s, _ in times)}


def main_controls() -> dict[str, str]:
    """Each chapter's (``_toc.yml``) main explorer (its first live one on the page) and the
    slider timed on it, by its label: the declaration's ``timed`` control (the slider the
    issue names where it names one), else its first live slider."""
    from llmmath.display import widgets
    from llmmath.display.chapters import chapters

    return {c: widgets.main_declaration(c)().timed_control().label for c in chapters()}


def slider_latency(page: Page, moves: int, label: str | None = None) -> list[float]:
    """Milliseconds from each key press on a slider (the one labelled ``label``, else the
    first) of the page's first live explorer to the redrawn figure's load event."""
    explorer = (
        page.locator(".jp-OutputArea-output")
        .filter(has=page.locator(".widget-slider"))
        .filter(has=page.locator(".widget-image"))
        .first
    )
    image = explorer.locator(".widget-image").first
    image.scroll_into_view_if_needed()
    image.evaluate(PROBE)
    sliders = explorer.locator(".widget-slider")
    if label is not None:
        named = page.locator(".widget-label", has_text=re.compile(f"^{re.escape(label)}$"))
        sliders = sliders.filter(has=named)
    handle = sliders.first.locator(".noUi-handle").first
    handle.focus()
    latencies = []
    for i in range(moves):
        # End and Home: each press is a new batch on the log slider (a PageUp from batch 1 can
        # round back to batch 1 and draw nothing new).
        page.keyboard.press("End" if i % 2 == 0 else "Home")
        page.wait_for_function(f"window.__bench.loads.length > {i}", timeout=30_000)
        keys, loads = page.evaluate("[window.__bench.keys, window.__bench.loads]")
        latencies.append(loads[i] - keys[i])
        page.wait_for_timeout(100)  # a learner's pace, and nothing left in flight
    return latencies


def _shown(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(
            f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in value.items()
        )
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument(
        "--cull-after",
        type=int,
        default=15,
        help="idle seconds before the server culls a kernel no tab uses (the learner's default "
        "is 600; shortened here so that the walk's end can be measured after it)",
    )
    args = parser.parse_args(argv)
    port, token = free_port(), secrets.token_hex(16)
    learner = f"my-work-bench-{os.getpid()}"
    url = f"http://127.0.0.1:{port}"
    results: dict[str, object] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        command = ["make", "-s", "-o", ".venv/.installed", "lab", f"LAB_PORT={port}"]
        # expose_app_in_browser: the Run All timing reads which cells ran from the model.
        lab_args = f"--ServerApp.token={token} --LabApp.expose_app_in_browser=True"
        lab_args += f" --MappingKernelManager.cull_idle_timeout={args.cull_after}"
        lab_args += " --MappingKernelManager.cull_interval=5"
        command += [f"LAB_ARGS={lab_args}", f"LEARNER_DIR={learner}"]
        start = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            while not answers(url, token):
                if process.poll() is not None:
                    sys.exit(f"make lab exited with {process.returncode}")
                time.sleep(0.05)
            results["make_lab_to_server_s"] = time.perf_counter() - start
            page.goto(f"{url}/lab?token={token}")
            page.locator(".jp-MarkdownViewer h1").wait_for(timeout=120_000)
            page.locator(".jp-FileBrowser .jp-DirListing-item").first.wait_for()
            results["make_lab_to_start_page_s"] = time.perf_counter() - start

            opened = time.perf_counter()
            page.goto(f"{url}/lab/tree/lessons/roofline.md?reset&token={token}")
            status = page.locator("#jp-main-statusbar", has_text="| Idle")
            status.wait_for(timeout=120_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
            wait_all_run(page)
            page.locator(".widget-image").first.wait_for()
            results["lesson_open_to_live_figure_s"] = time.perf_counter() - opened

            results["widget_update_ms"] = latency_figures(slider_latency(page, args.moves))
            close_tab(page, url, token)
            run_all, controls, main = {}, {}, main_controls()
            for lesson in sorted((ROOT / "lessons").glob("*.md")):
                run_all[lesson.stem] = lesson_run_all_s(page, url, token, lesson)
                label = main.get(lesson.stem)
                if label is not None:
                    latencies = slider_latency(page, args.moves, label)
                    controls[f"{lesson.stem}.{label}"] = latency_figures(latencies)
                close_tab(page, url, token)
            results["run_all_s"] = run_all
            results["lesson_control_ms"] = controls
            for exercise in sorted((ROOT / learner).glob("*/*.ipynb")):
                page.goto(
                    f"{url}/lab/tree/{learner}/{exercise.parent.name}/{exercise.name}?token={token}"
                )
                page.locator("#jp-main-statusbar", has_text="| Idle").wait_for(timeout=120_000)
                close_tab(page, url, token)
            results["after_the_walk"] = session_held(process, url, token)
            time.sleep(args.cull_after + 10)
            results["after_the_walk_and_culling"] = session_held(process, url, token)
        finally:
            browser.close()
            stop(process, url, token)
            shutil.rmtree(ROOT / learner, ignore_errors=True)
    results["slowest_cell"] = {
        lesson.stem: slowest_cell(lesson) for lesson in sorted((ROOT / "lessons").glob("*.md"))
    }
    results["cpus"] = os.cpu_count()
    results["load_average_1min"] = os.getloadavg()[0]
    for name, value in results.items():
        if isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
            print(name)  # one line per lesson
            for part, figures in value.items():
                print(f"  {part:28s} {_shown(figures)}")
        else:
            print(f"{name:30s} {_shown(value)}")
    path = ROOT / "bench-lab-results.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmarks for the figures the issues name (measured, reported, never asserted).

    make bench        # or: .venv/bin/python scripts/bench.py
    .venv/bin/python scripts/bench.py --controls-only            # the explorers' controls only
    .venv/bin/python scripts/bench.py --profile batching.context --top 15  # cProfile, one control
    .venv/bin/python scripts/bench.py --pages _build/html     # lesson weights, first paint

Reports every control of every live explorer (each chapter's ``widgets.<chapter>.*declaration``:
sliders, log sliders, menus, buttons, number boxes): the median and p95 of one move (model +
redraw), in wall time and in process CPU time (which contention on a shared machine distorts
less), slowest control first. Then a 10^6-point model sweep,
the static explorer's frame rendering, the serving core over 1,000 batches in one call, and
the ``llmmath`` command end to end (one ``serve``, and a 1,000-batch sweep as JSON).
Writes bench-results.json beside the repo root.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import ipywidgets as ipw
import numpy as np

from llmmath import batching
from llmmath.core import roofline, serving
from llmmath.core.placement import Layout
from llmmath.display import widgets
from llmmath.display.widgets.common import Explorer, live_explorer, static_explorer


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def declarations() -> Iterator[tuple[str, Callable[[], Explorer]]]:
    """Every explorer a chapter of ``_toc.yml`` declares: ``<chapter>`` or ``<chapter>.<which>``."""
    yield from widgets.declarations().items()


def _fraction(i: int) -> float:
    """Spread-out positions in (0, 1), no two alike within 100 moves."""
    return ((i * 37) % 100 + 0.5) / 100


def next_value(control: ipw.Widget, i: int) -> object:
    """The ``i``-th value to move ``control`` to: the next option, or a spread-out position
    (on a log scale for a log slider or a number box spanning orders of magnitude)."""
    if hasattr(control, "options"):
        return control.options[(control.index + 1) % len(control.options)]
    if isinstance(control, ipw.FloatLogSlider):
        return control.base ** (control.min + (control.max - control.min) * _fraction(i))
    low, high = float(control.min), float(control.max)
    if low > 0 and high / low > 100:
        value = low * (high / low) ** _fraction(i)
    else:
        value = low + (high - low) * _fraction(i)
    if isinstance(control, ipw.IntSlider | ipw.BoundedIntText):
        return round(value)
    return value


def _kind(control: ipw.Widget) -> str:
    return type(control).__name__


def time_moves(box: ipw.VBox, name: str, repeats: int) -> dict[str, object]:
    """Move control ``name`` of a live explorer ``repeats`` times (after one warm-up move) and
    time each move's model + redraw; then put it back where it started."""
    control = box.controls[name]
    start_value = control.value
    wall, cpu = [], []
    for i in range(repeats + 1):
        value = next_value(control, i)
        if isinstance(value, tuple):  # (label, value) options: the value
            value = value[1]
        if value == control.value:
            continue
        t0, c0 = time.perf_counter(), time.process_time()
        control.value = value
        t1, c1 = time.perf_counter(), time.process_time()
        if i:
            wall.append(t1 - t0)
            cpu.append(c1 - c0)
    control.value = start_value
    if not wall:
        return {}
    return {
        "kind": _kind(control),
        "moves": len(wall),
        "median_ms": 1e3 * statistics.median(wall),
        "p95_ms": 1e3 * percentile(wall, 95),
        "cpu_median_ms": 1e3 * statistics.median(cpu),
        "cpu_p95_ms": 1e3 * percentile(cpu, 95),
    }


def bench_controls(repeats: int = 15, only: str | None = None) -> list[dict[str, object]]:
    """Every control of every live explorer, slowest median first."""
    found = []
    for explorer_name, declare in declarations():
        if only and only != explorer_name and not only.startswith(f"{explorer_name}."):
            continue
        box = live_explorer(declare())
        for name in box.controls:
            if only and only not in (explorer_name, f"{explorer_name}.{name}"):
                continue
            figures = time_moves(box, name, repeats)
            if figures:
                found.append({"control": f"{explorer_name}.{name}", **figures})
    return sorted(found, key=lambda f: -float(f["median_ms"]))  # type: ignore[arg-type]


def profile_control(target: str, repeats: int = 15, top: int = 25) -> str:
    """cProfile of moving one control (``explorer.control``), by cumulative time."""
    explorer_name, name = target.rsplit(".", 1)
    declare = dict(declarations())[explorer_name]
    box = live_explorer(declare())
    profiler = cProfile.Profile()
    profiler.enable()
    time_moves(box, name, repeats)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def print_controls(found: list[dict[str, object]]) -> None:
    heads = ("median", "p95", "cpu med", "cpu p95")
    print(f"{'control':44s} {'kind':18s} " + " ".join(f"{h:>8s}" for h in heads))
    for f in found:
        print(
            f"{f['control']!s:44s} {f['kind']!s:18s} {f['median_ms']:7.1f} {f['p95_ms']:7.1f} "
            f"{f['cpu_median_ms']:8.1f} {f['cpu_p95_ms']:8.1f}"
        )


def bench_batching_grid() -> dict[str, float]:
    """The 1,000 x 100 (batch x context) grid of decode steps the batching issue asks for."""
    deployment = batching.Deployment("Llama-3-70B", "H100", 8)
    batch = np.linspace(1, 1000, 1000)[:, None]
    context = np.linspace(128, 8192, 100)[None, :]
    times = []
    for _ in range(5):
        start = time.perf_counter()
        batching.decode_step(deployment, batch, context, allow_overflow=True)
        times.append(time.perf_counter() - start)
    return {"best_ms": 1e3 * min(times), "median_ms": 1e3 * statistics.median(times)}


def bench_sweep(points: int = 1_000_000, repeats: int = 5) -> dict[str, float]:
    batch = np.linspace(1, 8192, points)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = roofline.decode_weight_time("Llama-3-70B", batch, "H100")
        _ = result.lower_s
        times.append(time.perf_counter() - start)
    return {"best_ms": 1e3 * min(times), "median_ms": 1e3 * statistics.median(times)}


def bench_cli(arguments: list[str], repeats: int = 5) -> dict[str, float]:
    """One ``llmmath`` command end to end: process start (Python, numpy) to its last output."""
    script = Path(sys.executable).parent / "llmmath"
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([str(script), *arguments], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return {"best_ms": 1e3 * min(times), "median_ms": 1e3 * statistics.median(times)}


def bench_decode_sweep(points: int = 1000, repeats: int = 20) -> dict[str, float]:
    """The serving core's decode step over ``points`` batches in one vectorised call."""
    deployment = serving.Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
    batch = np.arange(1.0, points + 1.0)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        serving.decode_step(deployment, batch, 2048, allow_overflow=True)
        times.append(time.perf_counter() - start)
    return {"best_ms": 1e3 * min(times), "median_ms": 1e3 * statistics.median(times)}


def bench_static_frames() -> dict[str, float]:
    spec = widgets.roofline.declaration()
    start = time.perf_counter()
    static_explorer(spec)
    return {"seconds": time.perf_counter() - start, "frames": float(spec.frame_count())}


def bench_pages(html: Path, loads: int = 3) -> list[dict[str, object]]:
    """Each lesson page of a built book: its HTML weight, the frames it references, and the
    time to first contentful paint and to the first explorer figure in headless Chromium
    (median of ``loads`` fresh loads, served on loopback)."""
    from llmmath_course.browser import chromium, serve

    found = []
    with serve(html) as base, chromium() as browser:
        for page_path in sorted((html / "lessons").glob("*.html")):
            text = page_path.read_text()
            paints, figures = [], []
            for _ in range(loads):
                page = browser.new_page()
                start = time.perf_counter()
                page.goto(f"{base}/lessons/{page_path.name}", wait_until="commit")
                page.locator(".widget-image").first.wait_for(state="visible", timeout=60000)
                figures.append(time.perf_counter() - start)
                paint = page.evaluate(
                    "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1"
                )
                paints.append(float(paint) / 1e3)
                page.close()
            found.append(
                {
                    "page": page_path.name,
                    "html_bytes": len(text.encode()),
                    "inline_png_frames": text.count("iVBORw0KGgo"),  # base64 of a PNG's start
                    "first_paint_ms": 1e3 * statistics.median(paints),
                    "first_figure_ms": 1e3 * statistics.median(figures),
                }
            )
    return found


def bench_this_cpu() -> dict[str, float]:
    """How close this CPU comes to its own measured roofline (the roofline lesson's sweep): the
    efficiency (floor / measured) of the lowest- and highest-intensity matmul, and how much
    more FLOP/s a batch of 256 achieves at best than a batch of 1 at its median (the figure's
    story). Measured, not asserted: a busy machine moves them (was a unit test, #41)."""
    from llmmath.core.measure import measure_machine
    from llmmath.validation.published import machine_comparisons

    machine = measure_machine(sweep_batches=(1, 4, 256, 1024))
    low, high = machine_comparisons(machine)
    story = measure_machine(sweep_batches=(1, 256), sweep_dim=4096)
    assert story.sweep_median_s is not None
    typical = story.sweep_flops / story.sweep_median_s
    return {
        "peak_gflop_per_s": machine.peak_flop_per_s / 1e9,
        "bandwidth_gb_per_s": machine.bandwidth_bytes_per_s / 1e9,
        "low_intensity_efficiency": low.efficiency,
        "high_intensity_efficiency": high.efficiency,
        "b256_best_over_b1_median": float(story.sweep_achieved_flop_per_s[1] / typical[0]),
    }


SERVE = ["serve", "Llama-3-70B", "H100x8", "--layout", "tp8", "--context", "2048"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--controls-only", action="store_true", help="only the controls")
    parser.add_argument("--only", help="one explorer or control, e.g. batching.context")
    parser.add_argument("--repeats", type=int, default=15, help="moves per control")
    parser.add_argument("--profile", metavar="EXPLORER.CONTROL", help="cProfile one control")
    parser.add_argument("--top", type=int, default=25, help="functions a profile lists")
    parser.add_argument("--out", type=Path, help="where to write the figures (JSON)")
    parser.add_argument("--pages", type=Path, metavar="HTML", help="a built book: page weights")
    args = parser.parse_args()
    if args.pages:
        pages = bench_pages(args.pages)
        for row in pages:
            print(
                f"{row['page']:28s} {row['html_bytes'] / 1e6:6.2f} MB  inline frames "
                f"{row['inline_png_frames']:4d}  first paint {row['first_paint_ms']:6.0f} ms  "
                f"first figure {row['first_figure_ms']:6.0f} ms"
            )
        if args.out:
            args.out.write_text(json.dumps({"pages": pages}, indent=2))
        return
    if args.profile:
        print(profile_control(args.profile, args.repeats, args.top))
        return
    found = bench_controls(args.repeats, args.only)
    print_controls(found)
    results: dict[str, object] = {"controls": found}
    if not (args.controls_only or args.only):
        results |= {
            "batching_grid_1000x100": bench_batching_grid(),
            "this_cpu": bench_this_cpu(),
            "sweep_1e6_points": bench_sweep(),
            "static_explorer": bench_static_frames(),
            "decode_step_1000_batches": bench_decode_sweep(),
            "cli_serve_process": bench_cli(SERVE),
            "cli_sweep_1000_process": bench_cli([*SERVE, "--batch", "1:1000", "--json"]),
        }
        for name, figures in results.items():
            if name != "controls":
                shown = ", ".join(f"{key} {value:.1f}" for key, value in figures.items())  # type: ignore[attr-defined]
                print(f"{name:24s} {shown}")
    path = args.out or Path(__file__).resolve().parent.parent / "bench-results.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Benchmarks for the figures the issues name (measured, reported, never asserted).

    make bench        # or: .venv/bin/python scripts/bench.py

Reports the live widget's update (model + redraw) median and p95, a 10^6-point model sweep,
the static explorer's frame rendering, the serving core over 1,000 batches in one call, and
the ``llmmath`` command end to end (one ``serve``, and a 1,000-batch sweep as JSON).
Writes bench-results.json beside the repo root.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import ipywidgets as ipw
import numpy as np

from llmmath import batching, roofline, serving, widgets
from llmmath.placement import Layout
from llmmath.widgets.common import live_explorer, static_explorer


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def bench_widget_update(repeats: int = 60) -> dict[str, float]:
    """Live explorer: a batch-slider move (markers only) and a chip change (whole scene)."""
    box = live_explorer(widgets.roofline.declaration())
    slider, chip = box.controls["batch"], box.controls["chip"]
    moves, scenes = [], []
    for i in range(repeats):
        start = time.perf_counter()
        slider.value = int(1 + (i * 97) % 4096)
        moves.append(time.perf_counter() - start)
        if i % 5 == 4:
            start = time.perf_counter()
            chip.value = ["H100", "A100", "B200", "TPU-v5e"][i // 5 % 4]
            scenes.append(time.perf_counter() - start)
    return {
        "slider_median_ms": 1e3 * statistics.median(moves),
        "slider_p95_ms": 1e3 * percentile(moves, 95),
        "chip_change_median_ms": 1e3 * statistics.median(scenes),
        "chip_change_p95_ms": 1e3 * percentile(scenes, 95),
    }


def controls(widget: object) -> list[object]:
    """Every slider and menu inside ``widget``, depth first."""
    found: list[object] = []
    if isinstance(widget, ipw.SelectionSlider | ipw.IntSlider | ipw.FloatSlider | ipw.Dropdown):
        found.append(widget)
    for child in getattr(widget, "children", ()):
        found += controls(child)
    return found


def bench_live_explorer(make: Callable[[], object], repeats: int = 30) -> dict[str, float]:
    """Move a chapter's live batch slider (else its first slider) ``repeats`` times and time
    the model + redraw of each move."""
    box = make()
    sliders = [c for c in controls(box) if not isinstance(c, ipw.Dropdown)]
    batch_sliders = [c for c in sliders if "batch" in str(getattr(c, "description", "")).lower()]
    slider = (batch_sliders or sliders)[0]
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        if isinstance(slider, ipw.SelectionSlider):
            slider.index = (slider.index + 1) % len(slider.options)
        else:
            span = slider.max - slider.min
            slider.value = slider.min + span * ((i * 37) % 100) / 100
        times.append(time.perf_counter() - start)
    return {"median_ms": 1e3 * statistics.median(times), "p95_ms": 1e3 * percentile(times, 95)}


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


SERVE = ["serve", "Llama-3-70B", "H100x8", "--layout", "tp8", "--context", "2048"]


def main() -> None:
    live = {
        "batching": widgets.batching.declaration,
        "moe": widgets.moe.declaration,
        "parallelism": widgets.parallelism.declaration,
        "overtraining": widgets.overtraining_pricing.overtraining_declaration,
    }
    results = {
        "widget_update": bench_widget_update(),
        **{
            f"{name}_slider": bench_live_explorer(lambda d=declare: live_explorer(d()))
            for name, declare in live.items()
        },
        "batching_grid_1000x100": bench_batching_grid(),
        "sweep_1e6_points": bench_sweep(),
        "static_explorer": bench_static_frames(),
        "decode_step_1000_batches": bench_decode_sweep(),
        "cli_serve_process": bench_cli(SERVE),
        "cli_sweep_1000_process": bench_cli([*SERVE, "--batch", "1:1000", "--json"]),
    }
    for name, figures in results.items():
        shown = ", ".join(f"{key} {value:.1f}" for key, value in figures.items())
        print(f"{name:18s} {shown}")
    path = Path(__file__).resolve().parent.parent / "bench-results.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path.name}")


if __name__ == "__main__":
    main()

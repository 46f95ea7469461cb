"""Benchmarks for the figures the issues name (measured, reported, never asserted).

    make bench        # or: .venv/bin/python scripts/bench.py

Reports the live widget's update (model + redraw) median and p95, a 10^6-point model sweep,
and the static explorer's frame rendering. Writes bench-results.json beside the repo root.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import numpy as np

from llmmath import roofline, widgets


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def bench_widget_update(repeats: int = 60) -> dict[str, float]:
    """Live explorer: a batch-slider move (markers only) and a chip change (whole scene)."""
    box = widgets.roofline.live_roofline_explorer()
    slider = box.children[1].children[1]
    chip = box.children[0].children[0]
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


def bench_sweep(points: int = 1_000_000, repeats: int = 5) -> dict[str, float]:
    batch = np.linspace(1, 8192, points)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = roofline.decode_weight_time("Llama-3-70B", batch, "H100")
        _ = result.lower_s
        times.append(time.perf_counter() - start)
    return {"best_ms": 1e3 * min(times), "median_ms": 1e3 * statistics.median(times)}


def bench_static_frames() -> dict[str, float]:
    start = time.perf_counter()
    widgets.roofline.static_roofline_explorer()
    return {
        "seconds": time.perf_counter() - start,
        "frames": float(len(widgets.roofline.STATIC_CHIPS) * 26),
    }


def main() -> None:
    results = {
        "widget_update": bench_widget_update(),
        "sweep_1e6_points": bench_sweep(),
        "static_explorer": bench_static_frames(),
    }
    for name, figures in results.items():
        shown = ", ".join(f"{key} {value:.1f}" for key, value in figures.items())
        print(f"{name:18s} {shown}")
    path = Path(__file__).resolve().parent.parent / "bench-results.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path.name}")


if __name__ == "__main__":
    main()

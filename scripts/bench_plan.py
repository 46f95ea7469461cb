"""``llmmath plan`` timed (measured and reported, never asserted): three chip types, workers of
1 to 64 chips in every layout the model allows, aggregated and disaggregated, queueing
simulated. The issue's budget is 5 s on the course's 2-core machine.

    make bench        # or: .venv/bin/python scripts/bench_plan.py [--repeats 3]

Times the search in process (``cli.main``, the report included) and the command end to end
(a fresh Python: imports and all), and writes bench-plan.json beside the repo root.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from llmmath.cli import parse_and_run as cli
from llmmath.core.chip_prices import example_price

ROOT = Path(__file__).resolve().parents[1]


def question() -> list[str]:
    """The issue's question: Llama-3-70B in fp8 at 20 requests/s, 2,000 tokens in and 500
    out, TTFT <= 2 s and TPOT <= 50 ms at p99, on H100, H200 and B200. The search's time does
    not depend on the price: H200 and B200 rent here at the H100's example price."""
    price = example_price("H100").usd_per_chip_hour
    chips = f"H100,H200={price},B200={price}"
    return ["plan", "Llama-3-70B", "--chips", chips, "--rate", "20", "--input", "2000",
            "--output", "500", "--ttft", "2s@p99", "--tpot", "50ms@p99", "--dtype", "fp8",
            "--max-chips", "64", "--mode", "both"]  # fmt: skip


def in_process(argv: list[str]) -> tuple[float, float]:
    """Wall time and this process's CPU time (which a loaded machine distorts less)."""
    start, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(argv)
    assert status == 0, status
    return time.perf_counter() - start, time.process_time() - cpu


def end_to_end(argv: list[str]) -> float:
    command = [str(Path(sys.executable).with_name("llmmath")), *argv]
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    argv = question()
    runs = [in_process(argv) for _ in range(repeats)]
    searched, cpu = [wall for wall, _ in runs], [used for _, used in runs]
    command = [end_to_end(argv) for _ in range(repeats)]
    result = {
        "command": "llmmath " + " ".join(argv),
        "in_process_s": {"median": statistics.median(searched), "all": searched},
        "in_process_cpu_s": {"median": statistics.median(cpu), "all": cpu},
        "end_to_end_s": {"median": statistics.median(command), "all": command},
        "budget_s": 5.0,
    }
    print(f"llmmath plan, 3 chip types x 1-64 chips x every layout, both modes, queueing: "
          f"median {result['in_process_s']['median']:.2f} s in process "
          f"({result['in_process_cpu_s']['median']:.2f} s CPU), "
          f"{result['end_to_end_s']['median']:.2f} s end to end (budget 5 s)")  # fmt: skip
    (ROOT / "bench-plan.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""What the contracts cost: each figure with contracts on, and with them bypassed.

    .venv/bin/python scripts/bench_contracts.py            # ~1 min
    .venv/bin/python scripts/bench_contracts.py --quick    # fewer repeats, ~15 s

    # instructions per call, which the machine's load does not move (~5 min):
    valgrind --tool=callgrind --dump-before=getppid --callgrind-out-file=/tmp/cg/cg.out \
        .venv/bin/python scripts/bench_contracts.py --phases | tail -1 > /tmp/cg/order.json
    .venv/bin/python scripts/bench_contracts.py --callgrind /tmp/cg

The last prints, beside each case's own checked/bypassed overhead, checked instructions now
against the package before contracts (``bench_contracts_before.json``: ``e361fb7`` bypassed,
when function bodies still checked their own arguments; ``--save COMMIT WHAT`` replaces it).
That is the issue's "before and after contracts": since a body no longer re-checks what its
contract checks, "bypassed" now runs no checks at all, a package that never shipped, and
its overhead figure counts every check the package makes, not what contracts added.

Times a scalar ``serving.decode_step`` (one slider move's model call), a 1,000-batch decode
sweep in one call, ``roofline.roofline_time``, building a ``Deployment`` and a ``Layout``
(result records checked on construction), and three of ``make bench``'s heavier figures (the
1,000 x 100 batching grid, a 10^6-point ``decode_weight_time``, a live slider move).
"Bypassed" swaps every contracted function and method of the package for the function it
wraps and marks the thread as inside a checked call (records skip their check): the package
as it would run without contracts.

CPU time of this thread (the machine is shared), per call: each sample times a block of calls
after one untimed call; checked and bypassed samples alternate, and the median of each is
reported. Writes ``bench-contracts.json`` beside the repo root with ``--json``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import os
import pkgutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import llmmath
from llmmath import batching
from llmmath.core import contracts, roofline, serving
from llmmath.core.placement import Layout


@functools.cache
def package_modules() -> tuple[Any, ...]:
    """Every module of the package, imported (the drawing layers too: they call the model)."""
    for info in pkgutil.walk_packages(llmmath.__path__, "llmmath."):
        importlib.import_module(info.name)
    return tuple(m for name, m in sys.modules.items() if name.split(".")[0] == "llmmath")


def _unwrapped(obj: object) -> object | None:
    """The function a contract wraps (for a function, or a method held as a class attribute)."""
    inner = obj.__func__ if isinstance(obj, classmethod | staticmethod) else obj
    if callable(inner) and getattr(inner, "__contract__", None) is not None:
        wrapped = getattr(inner, "__wrapped__", None)
        if isinstance(obj, classmethod):
            return classmethod(wrapped)  # type: ignore[arg-type]
        return wrapped
    return None


@contextlib.contextmanager
def bypassed() -> Iterator[int]:
    """The package with its contracts taken out: yields how many contracted callables."""
    swapped: list[tuple[Any, str, object]] = []
    for module in package_modules():
        for owner in [module, *(v for v in vars(module).values() if isinstance(v, type))]:
            if getattr(owner, "__module__", module.__name__).split(".")[0] != "llmmath":
                continue
            for name, value in list(vars(owner).items()):
                plain = None if isinstance(value, type) else _unwrapped(value)
                if plain is not None:
                    swapped.append((owner, name, value))
                    setattr(owner, name, plain)
    token = contracts.INSIDE.set(True)  # records built from here on skip their check
    check = contracts.RecordContract.check
    contracts.RecordContract.check = lambda self, record: None  # type: ignore[method-assign]
    try:  # (and those checked even inside a call, such as a Deployment)
        yield len({id(value) for _, _, value in swapped})  # re-exports counted once
    finally:
        contracts.RecordContract.check = check  # type: ignore[method-assign]
        contracts.INSIDE.reset(token)
        for owner, name, value in swapped:
            setattr(owner, name, value)


def per_call_us(call: Callable[[], object], block: int) -> float:
    start = time.thread_time_ns()
    for _ in range(block):
        call()
    return (time.thread_time_ns() - start) / block / 1e3


def compare(call: Callable[[], object], samples: int, block: int) -> dict[str, float]:
    """Median per-call CPU time, contracts on and bypassed, samples interleaved."""
    on: list[float] = []
    off: list[float] = []
    call()  # warm caches (chip and model tables, compiled code)
    for _ in range(samples):
        call()  # untimed: the first call after swapping runs from cold caches
        on.append(per_call_us(call, block))
        with bypassed():
            call()
            off.append(per_call_us(call, block))
    checked, plain = statistics.median(on), statistics.median(off)
    return {
        "checked_us": checked,
        "bypassed_us": plain,
        "overhead_pct": 100 * (checked / plain - 1),
    }


def cases() -> dict[str, tuple[Callable[[], object], int]]:
    """Each figure's call and how many calls one sample times (about a millisecond's worth)."""
    deployment = serving.Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
    batches = np.arange(1.0, 1001.0)
    grid_deployment = batching.Deployment("Llama-3-70B", "H100", 8)
    grid_batch = np.linspace(1, 1000, 1000)[:, None]
    grid_context = np.linspace(128, 8192, 100)[None, :]
    million = np.linspace(1, 8192, 1_000_000)
    return {
        "decode_step scalar": (lambda: serving.decode_step(deployment, 8, 2048), 10),
        "decode_step 1000 batches": (
            lambda: serving.decode_step(deployment, batches, 2048, allow_overflow=True),
            5,
        ),
        "roofline_time": (lambda: roofline.roofline_time(1e12, 1e9, "H100"), 50),
        "Deployment(...)": (
            lambda: serving.Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8)),
            10,
        ),
        "Layout(tp=8)": (lambda: Layout(tp=8), 100),
        # make bench's heavier figures: one call each, the contracts' share is small.
        "batching grid 1000x100": (
            lambda: batching.decode_step(
                grid_deployment, grid_batch, grid_context, allow_overflow=True
            ),
            1,
        ),
        "decode_weight_time 1e6": (
            lambda: roofline.decode_weight_time("Llama-3-70B", million, "H100").lower_s,
            1,
        ),
        "widget slider move": (slider_move(), 1),
    }


def slider_move() -> Callable[[], object]:
    """The roofline explorer's batch slider moved once: the model call and the redraw."""
    from llmmath.display import widgets
    from llmmath.display.widgets.common import live_explorer

    slider = live_explorer(widgets.roofline.declaration()).controls["batch"]
    values = iter(range(10**9))

    def move() -> None:
        slider.value = 1 + (next(values) * 97) % 4096

    return move


# ---- instruction counts: the same comparison, free of the machine's load ---------------------
#: Instructions per call of the package before contracts took over its checks: its bodies
#: checked their own arguments, so "bypassed" today (no contracts, and bodies that no longer
#: check what a contract does) runs less than the package did, and is no fair "before".
BEFORE = Path(__file__).with_name("bench_contracts_before.json")
#: Calls per phase when counting instructions (valgrind runs ~50x slower).
COUNTED = {"batching grid 1000x100": 3, "decode_weight_time 1e6": 3, "widget slider move": 5}


def phases() -> None:
    """Each case checked, then bypassed, between ``os.getppid()`` marks: run under
    ``valgrind --tool=callgrind --dump-before=getppid`` each phase is one dump file."""
    order = []
    for name, (call, block) in cases().items():
        count = COUNTED.get(name, 20 * block)
        call()
        os.getppid()
        for _ in range(count):
            call()
        os.getppid()  # the swap and the warm call are their own dump
        with bypassed():
            call()
            os.getppid()
            for _ in range(count):
                call()
            os.getppid()
        order.append((name, count))
    os.getppid()
    print(json.dumps(order))


def read_dumps(folder: Path, order: list[tuple[str, int]]) -> dict[str, dict[str, float]]:
    """Instructions per call from the dumps of :func:`phases`: per case, its checked calls,
    the swap, its bypassed calls, and the swap back."""
    totals = []
    for path in sorted(folder.glob("*.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1])):
        summary = next(line for line in path.open() if line.startswith("summary:"))
        totals.append(int(summary.split()[1]))
    per_case = totals[-4 * len(order) :]  # numbered dumps; the one at exit has no number
    figures = {}
    for index, (name, count) in enumerate(order):
        checked, _, plain, _ = per_case[4 * index : 4 * index + 4]
        figures[name] = {"checked": checked / count, "bypassed": plain / count}
    return figures


def report(figures: dict[str, dict[str, float]], before: dict[str, Any] | None) -> None:
    """Each case's instructions per call, checked and bypassed; with ``before`` (a saved
    reading of the package before contracts), checked now against bypassed then."""
    if before is not None:
        print(f"before contracts: {before['commit']} bypassed ({before['what']})")
    for name, counts in figures.items():
        checked, plain = counts["checked"], counts["bypassed"]
        line = (
            f"{name:26s} checked {checked / 1e3:9.1f}k   bypassed {plain / 1e3:9.1f}k "
            f"instructions   overhead {100 * (checked / plain - 1):+5.1f}%"
        )
        if before is not None and name in before["cases"]:
            then = before["cases"][name]["bypassed"]
            line += f"   before {then / 1e3:9.1f}k: {100 * (checked / then - 1):+5.1f}%"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--json", action="store_true", help="write bench-contracts.json")
    parser.add_argument("--phases", action="store_true", help="for valgrind: see phases()")
    parser.add_argument("--callgrind", type=Path, help="read the dumps of a --phases run")
    parser.add_argument(
        "--save",
        nargs=2,
        metavar=("COMMIT", "WHAT"),
        help=f"with --callgrind: keep this reading as the one before contracts ({BEFORE.name})",
    )
    options = parser.parse_args()
    if options.phases:
        return phases()
    if options.callgrind:
        order = json.loads((options.callgrind / "order.json").read_text())
        figures = read_dumps(options.callgrind, order)
        if options.save:
            saved = {"commit": options.save[0], "what": options.save[1], "cases": figures}
            BEFORE.write_text(json.dumps(saved, indent=1) + "\n")
        before = json.loads(BEFORE.read_text()) if BEFORE.exists() else None
        return report(figures, before)
    samples = 15 if options.quick else 61
    with bypassed() as count:
        print(f"{count} contracted functions and methods; {samples} samples of each, CPU time")
    results = {}
    for name, (call, block) in cases().items():
        timed = compare(call, samples, block)
        results[name] = timed
        print(
            f"{name:26s} checked {timed['checked_us']:8.1f} us   bypassed "
            f"{timed['bypassed_us']:8.1f} us   overhead {timed['overhead_pct']:+5.1f}%"
        )
    if options.json:
        path = Path(__file__).resolve().parent.parent / "bench-contracts.json"
        path.write_text(json.dumps(results, indent=2))
        print(f"wrote {path.name}")


if __name__ == "__main__":
    main()

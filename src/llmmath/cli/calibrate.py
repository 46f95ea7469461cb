"""``llmmath calibrate``: the published serving benchmarks against their floors.

Each benchmark of ``systems.toml`` ``[reproduced]`` is run through ``llmmath workload`` at its
own setting (the ``workload`` arguments stored beside it) with ``--calibrate`` its measured
rate: measured / floor, and the one efficiency (FLOP/s and bandwidth alike) that makes the
floor meet it. A measurement can only fall below its floor; one that beats it says the setting
is not the one measured (an fp8 KV cache not counted, MTP, prefix-cache hits, a smaller model)
and is flagged rather than fitted.

:func:`carried_efficiency` is the median of the fitted efficiencies, leaving out benchmarks
that beat their floor and those whose floor is network-bound (there the fitted efficiency of
the chips stands in for the network's and says little about them): the number
``llmmath plan --calibrate`` applies.
"""

from __future__ import annotations

import shlex
import statistics
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llmmath.cli.formatting import InputError, Report, table
from llmmath.core import data


@dataclass(frozen=True)
class BenchmarkResult:
    """One published benchmark beside its floor."""

    key: str
    label: str
    engine: str
    engine_version: str
    workload: str
    measured: float  # output tokens/s per GPU (a disaggregated decode pool's own)
    floor: float  # the same rate at the floor, at the benchmark's setting
    bound: str  # what bounds the floor's decode step: memory, compute or network
    efficiency: float | None  # fitted; None where the measurement beats the floor
    source: str
    source_date: str

    @property
    def ratio(self) -> float:
        """measured / floor: below 1 for every measurement of the setting it names."""
        return self.measured / self.floor

    @property
    def beats_floor(self) -> bool:
        return self.measured > self.floor


def benchmarks() -> dict[str, dict[str, Any]]:
    """The published serving benchmarks, by key (``systems.toml`` ``[reproduced]``)."""
    reproduced: dict[str, dict[str, Any]] = data.table("systems")["reproduced"]
    return reproduced


def run_benchmark(key: str, workload: Callable[[list[str]], dict[str, Any]]) -> BenchmarkResult:
    """``llmmath workload`` at benchmark ``key``'s setting, calibrated to its measured rate.
    ``workload`` runs ``llmmath workload ARGV`` and gives its report's data: the command line
    passes its own, ``cli.parse_and_run.workload_data`` (that module imports this one, so this one
    does not import it back)."""
    specs = benchmarks()
    if key not in specs:
        raise InputError(f"benchmark {key!r} is not one of {', '.join(specs)}")
    spec = specs[key]
    argv = ["workload", *shlex.split(spec["workload"])]
    measured = float(spec["value"])
    floor_data = workload(argv)
    rate = "decode_tokens_per_s_per_chip" if floor_data["disaggregated"] else (
        "output_tokens_per_s_per_chip")  # fmt: skip
    floor = float(floor_data[rate])
    efficiency = None
    bound = "?"
    if measured <= floor:
        fitted = workload([*argv, "--calibrate", repr(measured)])
        efficiency = float(fitted["fitted_efficiency"])
        bound = str(fitted["decode_bound_at_floor"])
    return BenchmarkResult(
        key=key,
        label=spec["label"],
        engine=spec["engine"],
        engine_version=spec["engine_version"],
        workload=spec["workload"],
        measured=measured,
        floor=floor,
        bound=bound,
        efficiency=efficiency,
        source=spec["source"],
        source_date=spec["source_date"],
    )


def carried_efficiency(results: Sequence[BenchmarkResult]) -> float:
    """The median fitted efficiency over the benchmarks below their floor and not bound by
    the network: what ``plan --calibrate`` applies."""
    fitted = [r.efficiency for r in results if r.efficiency is not None and r.bound != "network"]
    if not fitted:
        raise InputError("no benchmark below its floor and not network-bound to calibrate from")
    return float(statistics.median(fitted))


def wrong_setting(result: BenchmarkResult) -> str:
    """The one line that says a benchmark beats its floor, and what to look for."""
    return (
        f"{result.key} beats its floor ({result.measured:,.0f} measured > {result.floor:,.0f} "
        f"output tokens/s per GPU, measured/floor {result.ratio:.2f}): the setting is wrong, "
        "not the floor; look for an fp8 KV cache not counted (--kv-dtype), MTP, prefix-cache "
        "hits or a smaller model"
    )


def calibrate_report(results: Sequence[BenchmarkResult]) -> Report:
    """What ``llmmath calibrate`` prints: one row per benchmark, the wrong settings flagged,
    and the efficiency ``plan --calibrate`` carries."""
    counted = [r for r in results if r.efficiency is not None and r.bound != "network"]
    carried = carried_efficiency(counted) if counted else None
    report = Report(
        {
            "command": "calibrate",
            "benchmarks": [
                {
                    "key": r.key,
                    "label": r.label,
                    "engine": r.engine,
                    "engine_version": r.engine_version,
                    "workload": r.workload,
                    "measured_output_tokens_per_s_per_chip": r.measured,
                    "floor_output_tokens_per_s_per_chip": r.floor,
                    "measured_over_floor": r.ratio,
                    "decode_bound_at_floor": None if r.beats_floor else r.bound,
                    "fitted_efficiency": r.efficiency,
                    "beats_floor": r.beats_floor,
                    "source": r.source,
                    "source_date": r.source_date,
                }
                for r in results
            ],
            "carried_efficiency": carried,
        }
    )
    rows = [
        [
            r.key,
            f"{r.measured:,.0f}",
            f"{r.floor:,.0f}",
            f"{r.ratio:.2f}" + (" BEATS" if r.beats_floor else ""),
            "-" if r.efficiency is None else f"{r.efficiency:.2f}",
            "-" if r.beats_floor else r.bound,
        ]
        for r in results
    ]
    report.add(
        "Published serving benchmarks against their floors (output tokens/s per GPU)",
        table(["benchmark", "measured", "floor", "meas/floor", "eff", "bound"], rows),
        "",
    )
    for r in results:
        if r.beats_floor:
            report.add(*textwrap.wrap(wrong_setting(r), 88, subsequent_indent="  "))
    if carried is None:
        report.add("No benchmark here is below its floor and bound by the chips: nothing to carry.")
        return report
    report.add(
        f"plan --calibrate carries efficiency {carried:.2f}: the median fitted efficiency of the "
        f"{len(counted)} benchmarks",
        "below their floor and not network-bound (their setting: llmmath calibrate KEY --json).",
    )
    return report


def calibrate(keys: Sequence[str], workload: Callable[[list[str]], dict[str, Any]]) -> Report:
    """``llmmath calibrate [KEY ...]``: the named benchmarks (default: every one)."""
    return calibrate_report([run_benchmark(key, workload) for key in keys or list(benchmarks())])


def plan_calibration(
    choice: str | None, efficiency_flag: str, workload: Callable[[list[str]], dict[str, Any]]
) -> tuple[float, str] | None:
    """``plan --calibrate [KEY]`` (``choice``; ``"benchmarks"`` when given with no key): the
    efficiency to size at and a note saying where it came from; a benchmark that beats its floor
    is refused (its setting, not the floor, is wrong)."""
    if choice is None:
        return None
    if efficiency_flag.strip() not in ("1", "1.0"):
        raise InputError("give --efficiency or --calibrate, not both")
    if choice == "benchmarks":
        results = [run_benchmark(key, workload) for key in benchmarks()]
        efficiency = carried_efficiency(results)
        counted = sum(r.efficiency is not None and r.bound != "network" for r in results)
        return efficiency, (
            f"calibrated: efficiency {efficiency:.2f}, the median of {counted} published "
            "benchmarks' (llmmath calibrate); times and chip counts are estimates, not floors"
        )
    if not choice.strip():
        raise InputError("--calibrate takes nothing (the benchmarks' median) or a benchmark "
                         "key (llmmath calibrate lists them); got ''")  # fmt: skip
    if choice not in benchmarks():
        raise InputError(f"--calibrate {choice!r} is not a benchmark key (llmmath "
                         "calibrate lists them)")  # fmt: skip
    result = run_benchmark(choice, workload)
    if result.efficiency is None:
        raise InputError(f"--calibrate {wrong_setting(result)}")
    return result.efficiency, (
        f"calibrated: efficiency {result.efficiency:.2f}, benchmark {result.key}'s "
        f"(measured/floor {result.ratio:.2f}); times and chip counts are estimates, not floors"
    )


__all__ = [
    "BenchmarkResult",
    "benchmarks",
    "calibrate",
    "calibrate_report",
    "carried_efficiency",
    "plan_calibration",
    "run_benchmark",
    "wrong_setting",
]

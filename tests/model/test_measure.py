"""llmmath.core.measure: timing, achieved FLOP/s and bandwidth, the measured roofline.

Real timings vary from run to run, so the real measurements are only checked for sanity
(finite, positive, consistent); the arithmetic that turns times into rates is checked with
a fixed clock.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from llmmath.core import measure, roofline
from llmmath.core.measure import MachineRoofline


def fixed_best_time(seconds: float) -> Callable[..., float]:
    """A best_time_s that runs the operation once and reports a fixed time."""

    def best_time_s(operation: Callable[[], object], repeats: int = 5) -> float:
        operation()
        return seconds

    return best_time_s


# ---- best_time_s --------------------------------------------------------------------------
def test_best_time_runs_a_warm_up_then_the_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = iter([0.0, 3.0, 10.0, 11.0, 20.0, 22.0])  # durations 3, 1, 2
    monkeypatch.setattr(measure, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    calls = itertools.count()
    assert measure.best_time_s(lambda: next(calls), repeats=3) == 1.0
    assert next(calls) == 4  # one warm-up and three timed runs


def test_best_time_of_real_work_is_positive() -> None:
    seconds = measure.best_time_s(lambda: np.ones(1000).sum(), repeats=2)
    assert 0 <= seconds < 1


# ---- peak and bandwidth -------------------------------------------------------------------
def test_peak_counts_two_n_cubed_flops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measure, "best_time_s", fixed_best_time(0.5))
    assert measure.measure_peak_flop_per_s(size=64, repeats=1) == 2 * 64**3 / 0.5


def test_bandwidth_counts_copy_as_read_plus_write(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measure, "best_time_s", fixed_best_time(1.0))
    # 1 MB: the copy moves 2 MB (read + write) per second; the mat-vec reads 500 x 500 x 4 B.
    assert measure.measure_bandwidth_bytes_per_s(megabytes=1.0) == 2e6


def test_real_peak_and_bandwidth_are_plausible() -> None:
    peak = measure.measure_peak_flop_per_s(size=128, repeats=2)
    bandwidth = measure.measure_bandwidth_bytes_per_s(megabytes=8.0, repeats=2)
    # Any machine that runs the tests does between a MFLOP/s and a PFLOP/s, and moves
    # between 1 MB/s and 100 TB/s.
    assert 1e6 < peak < 1e15
    assert 1e6 < bandwidth < 1e14


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_bandwidth_rejects_non_positive_sizes(bad: float) -> None:
    with pytest.raises(ValueError, match="megabytes must be finite and > 0"):
        measure.measure_bandwidth_bytes_per_s(megabytes=bad)


@pytest.mark.parametrize(
    "call",
    [
        lambda: measure.best_time_s(lambda: None, repeats=0),
        lambda: measure.measure_peak_flop_per_s(size=0),
        lambda: measure.measure_bandwidth_bytes_per_s(megabytes=1e-7),  # not one float32
    ],
    ids=["repeats=0", "size=0", "megabytes=1e-7"],
)
def test_empty_measurements_are_rejected(call: Callable[[], float]) -> None:
    # Today: a bare "min() arg is an empty sequence", or a rate of 0.0 reported as a result.
    with pytest.raises(ValueError, match="must be"):
        call()


# ---- the matmul sweep ---------------------------------------------------------------------
def test_sweep_counts_match_the_roofline_module() -> None:
    batches = np.array([1.0, 4.0, 16.0])
    flops, moved, measured, median = measure.measure_matmul_sweep(batches, dim=64, repeats=3)
    np.testing.assert_array_equal(flops, roofline.matmul_flops(batches, 64, 64))
    np.testing.assert_array_equal(moved, roofline.matmul_bytes(batches, 64, 64, "fp32", "fp32"))
    assert measured.shape == median.shape == (3,) and np.all(measured > 0)
    assert np.all(median >= measured)  # the best run is never slower than the median one


def test_machine_roofline_properties() -> None:
    result = MachineRoofline(
        peak_flop_per_s=100.0,
        bandwidth_bytes_per_s=10.0,
        sweep_batch=np.array([1.0, 2.0]),
        sweep_dim=8,
        sweep_flops=np.array([100.0, 2000.0]),
        sweep_bytes=np.array([50.0, 50.0]),
        sweep_measured_s=np.array([10.0, 40.0]),
    )
    assert result.critical_intensity == 10.0
    np.testing.assert_array_equal(result.sweep_intensity, [2.0, 40.0])
    # max(100/100, 50/10) = 5 s (memory-bound); max(2000/100, 50/10) = 20 s (compute-bound).
    np.testing.assert_array_equal(result.sweep_predicted_s, [5.0, 20.0])
    np.testing.assert_array_equal(result.sweep_achieved_flop_per_s, [10.0, 50.0])
    assert result.sweep_typical_flop_per_s is None  # no medians kept
    # The measured roofline min(100, 10 I): 1 FLOP/s at I = 0.1, flat at 100 past I = 10.
    curve = result.roofline
    assert curve.ridge_intensity == 10.0 and curve.peak_flop_per_s == 100.0
    assert curve.attainable_flop_per_s[0] == pytest.approx(1.0, rel=1e-12)
    assert curve.attainable_flop_per_s[-1] == 100.0 and curve.intensity[-1] == pytest.approx(1e3)
    medians = replace(result, sweep_median_s=np.array([20.0, 50.0]))
    np.testing.assert_array_equal(medians.sweep_typical_flop_per_s, [5.0, 40.0])


def test_measure_machine_takes_the_envelope(monkeypatch: pytest.MonkeyPatch) -> None:
    # Peak and bandwidth measured far too low: the sweep's own rates must raise them.
    monkeypatch.setattr(measure, "measure_peak_flop_per_s", lambda: 1.0)
    monkeypatch.setattr(measure, "measure_bandwidth_bytes_per_s", lambda: 1.0)
    result = measure.measure_machine(sweep_batches=(1, 8, 64), sweep_dim=64)
    rates = result.sweep_flops / result.sweep_measured_s
    assert result.peak_flop_per_s == pytest.approx(rates.max(), rel=1e-12)
    traffic = result.sweep_bytes / result.sweep_measured_s
    assert result.bandwidth_bytes_per_s == pytest.approx(traffic.max(), rel=1e-12)


def test_measured_points_lie_under_the_measured_roofline(monkeypatch: pytest.MonkeyPatch) -> None:
    # Real measurements, at sizes small enough for a unit test.
    peak, bandwidth = measure.measure_peak_flop_per_s, measure.measure_bandwidth_bytes_per_s
    monkeypatch.setattr(measure, "measure_peak_flop_per_s", lambda: peak(128, 2))
    monkeypatch.setattr(measure, "measure_bandwidth_bytes_per_s", lambda: bandwidth(8.0, 2))
    result = measure.measure_machine(sweep_batches=(1, 2, 32), sweep_dim=128)
    np.testing.assert_array_equal(result.sweep_batch, [1.0, 2.0, 32.0])
    assert result.sweep_dim == 128
    # The roofline is an envelope: no measured point beats it, so each floor is <= the time.
    assert np.all(result.sweep_predicted_s <= result.sweep_measured_s * (1 + 1e-12))
    assert np.all(result.sweep_achieved_flop_per_s <= result.peak_flop_per_s * (1 + 1e-12))


# ---- a stable figure ------------------------------------------------------------------------
def test_blas_threads_are_pinned_and_restored() -> None:
    controls = measure._blas_thread_controls()
    if not controls:  # numpy built on another BLAS: the pin says it could not
        with measure.pinned_blas_threads(1) as pinned:
            assert pinned is None
        return
    before = [get() for get, _ in controls]
    with measure.pinned_blas_threads(1) as pinned:
        assert pinned == 1
        assert [get() for get, _ in controls] == [1] * len(controls)
    assert [get() for get, _ in controls] == before


def test_pinned_threads_reject_a_bad_count() -> None:
    with pytest.raises(ValueError, match="threads"), measure.pinned_blas_threads(0):
        pass


def test_the_sweep_shows_its_spread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each point carries its spread: a median no faster than the best run, from BLAS pinned
    to one thread. How far a batch of 256 outruns a batch of 1 (the figure's story) is this
    CPU's to say, under whatever load: `make bench` reports it (scripts/bench.py, "this CPU")."""
    peak, bandwidth = measure.measure_peak_flop_per_s, measure.measure_bandwidth_bytes_per_s
    monkeypatch.setattr(measure, "measure_peak_flop_per_s", lambda: peak(128, 2))
    monkeypatch.setattr(measure, "measure_bandwidth_bytes_per_s", lambda: bandwidth(8.0, 2))
    result = measure.measure_machine(sweep_batches=(1, 256), sweep_dim=256)
    assert result.sweep_median_s is not None and result.blas_threads in (1, None)
    best = result.sweep_achieved_flop_per_s
    typical = result.sweep_flops / result.sweep_median_s
    assert np.all(typical <= best)


def test_the_book_build_measures_the_machine_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """#45: with ``LLMMATH_MACHINE_FILE`` set (scripts/build_book.py), the first call measures
    and every later one reads that measurement back, whole; without it, each call measures."""
    runs = itertools.count(1)

    def fake_measure() -> MachineRoofline:
        # A different machine each run, so a second measurement cannot pass for the first.
        run = float(next(runs))
        return MachineRoofline(
            100.0 * run, 10.0 * run, np.array([1.0, 4.0]), 8,
            np.array([16.0, 64.0]), np.array([40.0, 52.0]), np.array([2.0, 3.0]),
            np.array([2.5, 3.5]), 1,
        )  # fmt: skip

    monkeypatch.setattr(measure, "measure_machine", fake_measure)
    monkeypatch.delenv(measure.MACHINE_FILE_ENV, raising=False)
    assert measure.measure_machine_once().peak_flop_per_s == 100.0
    assert measure.measure_machine_once().peak_flop_per_s == 200.0

    monkeypatch.setenv(measure.MACHINE_FILE_ENV, str(tmp_path / "build" / "machine.json"))
    first, again = measure.measure_machine_once(), measure.measure_machine_once()
    assert first.peak_flop_per_s == again.peak_flop_per_s == 300.0
    assert again.bandwidth_bytes_per_s == 30.0 and (again.sweep_dim, again.blas_threads) == (8, 1)
    for name in ("sweep_batch", "sweep_flops", "sweep_bytes", "sweep_measured_s"):
        np.testing.assert_array_equal(getattr(again, name), getattr(first, name))
    np.testing.assert_array_equal(again.sweep_median_s, [2.5, 3.5])
    assert next(runs) == 4  # measured three times in all: twice unset, once with the file

"""Measure your machine: its achieved matmul FLOP/s and memory bandwidth, and how well the
roofline built from those two numbers predicts operations of low and high intensity.

Everything runs in numpy (float32) in a few seconds; timings take the best of a few repeats,
because the roofline is about what the hardware can do, not about what else is running. On a
busy machine one pass can be slowed by a neighbour, so the sweep is timed in rounds (each
point once per round: a burst of load hits one sample of several points, not every sample
of one), numpy's BLAS is pinned to a fixed number of threads while measuring, and the median
is kept beside the best so that a figure shows the spread.
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from llmmath.core._checks import FloatArray, as_floats
from llmmath.core._constraints import Count, Function, Real, SequenceOf
from llmmath.core.contracts import POSITIVE, RESULT, SCALAR_POSITIVE, checked, contract, each
from llmmath.core.roofline import RooflineCurve, ceiling_curve

_FLOAT32_BYTES = 4.0
#: Intensities of a measured roofline's curve: 0.1 ... 1,000 FLOP per byte, log-spaced.
MACHINE_INTENSITIES = np.logspace(-1, 3, 100)


@dataclass(frozen=True)
@checked(
    peak_flop_per_s=SCALAR_POSITIVE,
    bandwidth_bytes_per_s=SCALAR_POSITIVE,
    **each(POSITIVE, "sweep_batch sweep_flops sweep_bytes sweep_measured_s"),
    sweep_dim=Count(),
    sweep_median_s=RESULT,
    blas_threads=Count(high=4096),
)
class MachineRoofline:
    """A measured roofline and the predicted-vs-measured times of a sweep of matmuls: the
    best time of each (``sweep_measured_s``) and, where measured, the median of its repeats
    and the BLAS threads it ran on."""

    peak_flop_per_s: float
    bandwidth_bytes_per_s: float
    sweep_batch: FloatArray
    sweep_dim: int
    sweep_flops: FloatArray
    sweep_bytes: FloatArray
    sweep_measured_s: FloatArray
    sweep_median_s: FloatArray | None = None
    blas_threads: int | None = None

    def __post_init__(self) -> None:
        names = ("batch", "flops", "bytes", "measured_s", "median_s")
        values = {f"sweep_{n}": getattr(self, f"sweep_{n}") for n in names}
        shapes = {n: np.shape(v) for n, v in values.items() if v is not None}
        one = shapes["sweep_batch"]
        if len(one) != 1 or not one[0] or any(shape != one for shape in shapes.values()):
            raise ValueError(
                f"MachineRoofline: {', '.join(shapes)} must be 1-d arrays of one length >= 1 "
                f"(one entry per matmul of the sweep); got shapes {shapes}"
            )

    @property
    def critical_intensity(self) -> float:
        return self.peak_flop_per_s / self.bandwidth_bytes_per_s

    @property
    def sweep_intensity(self) -> FloatArray:
        return self.sweep_flops / self.sweep_bytes

    @property
    def sweep_predicted_s(self) -> FloatArray:
        """The roofline floor for each operation: ``max(FLOPs / C, bytes / W)``."""
        return np.maximum(
            self.sweep_flops / self.peak_flop_per_s, self.sweep_bytes / self.bandwidth_bytes_per_s
        )

    @property
    def sweep_achieved_flop_per_s(self) -> FloatArray:
        return self.sweep_flops / self.sweep_measured_s

    @property
    def sweep_typical_flop_per_s(self) -> FloatArray | None:
        """FLOP/s at each operation's median time (None where only the best was kept)."""
        return None if self.sweep_median_s is None else self.sweep_flops / self.sweep_median_s

    @property
    def roofline(self) -> RooflineCurve:
        """The measured roofline over :data:`MACHINE_INTENSITIES`."""
        return ceiling_curve(self.peak_flop_per_s, self.bandwidth_bytes_per_s, MACHINE_INTENSITIES)


@contract(operation=Function(example=lambda: None))
def best_time_s(operation: Callable[[], object], repeats: int = 5) -> float:
    """Fastest of ``repeats`` runs of ``operation`` (after one warm-up run)."""
    int(repeats)
    operation()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return min(times)


@contract(size=Count(high=1 << 14))
def measure_peak_flop_per_s(size: int = 1024, repeats: int = 5) -> float:
    """Achieved float32 FLOP/s of a square ``size x size`` matmul (2 n^3 FLOPs)."""
    int(size)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    out = np.empty_like(a)
    seconds = best_time_s(lambda: np.matmul(a, b, out=out), repeats)
    return 2.0 * size**3 / seconds


@contract(megabytes=Real(high=4096.0, scalar=True))
def measure_bandwidth_bytes_per_s(megabytes: float = 256.0, repeats: int = 5) -> float:
    """Achieved memory bandwidth: the better of a large array copy (read + write) and a
    matrix-vector product that streams a large matrix once (a pure read, like decode).

    Both arrays are far larger than any CPU cache, so the bytes come from main memory.
    """
    n = int(as_floats(megabytes) * 1e6 / _FLOAT32_BYTES)
    if n < 1024:
        raise ValueError(f"megabytes must be at least 0.004 (1024 float32); got {megabytes}")
    source = np.ones(n, dtype=np.float32)
    target = np.empty_like(source)
    copy_rate = 2.0 * source.nbytes / best_time_s(lambda: np.copyto(target, source), repeats)
    side = int(np.sqrt(n))
    matrix = source[: side * side].reshape(side, side)
    vector = np.ones(side, dtype=np.float32)
    read_rate = matrix.nbytes / best_time_s(lambda: matrix @ vector, repeats)
    return max(copy_rate, read_rate)


@contract(
    batches=Real(low=1.0, low_open=False, high=1 << 14, integer=True), dim=Count(high=1 << 14)
)
def measure_matmul_sweep(
    batches: FloatArray, dim: int, repeats: int = 3
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Time ``[B, dim] x [dim, dim]`` for each ``B``, in ``repeats`` rounds of one run each
    (after a warm-up round): FLOPs, bytes moved, best time and median time. A single ``B``
    is a sweep of one: the four results are arrays of one entry."""
    batches = np.atleast_1d(as_floats(batches))  # checked by the contract
    int(repeats)
    rng = np.random.default_rng(1)
    weights = rng.standard_normal((dim, dim), dtype=np.float32)
    runs = []
    for batch in batches.astype(int):
        activations = rng.standard_normal((batch, dim), dtype=np.float32)
        out = np.empty((batch, dim), dtype=np.float32)
        runs.append(partial(np.matmul, activations, weights, out=out))
    times: list[list[float]] = [[] for _ in runs]
    for round_ in range(repeats + 1):
        for run, samples in zip(runs, times, strict=True):
            start = time.perf_counter()
            run()
            if round_:  # round 0 warms every size up
                samples.append(time.perf_counter() - start)
    flops = 2.0 * batches.astype(int) * dim * dim
    moved = _FLOAT32_BYTES * (2 * batches.astype(int) * dim + dim * dim)
    best = np.array([min(t) for t in times])
    median = np.array([statistics.median(t) for t in times])
    return flops.astype(float), moved.astype(float), best, median


# numpy's OpenBLAS, by the names its builds export (plain, and scipy-openblas's ILP64 build).
_BLAS_THREAD_CALLS = (
    ("openblas_get_num_threads", "openblas_set_num_threads"),
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
)


def _blas_thread_controls() -> list[tuple[Callable[[], int], Callable[[int], None]]]:
    """(get, set) thread-count calls of each OpenBLAS loaded in this process (Linux: read
    from /proc/self/maps; threadpoolctl does the same, and is not a dependency)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = sorted({line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()})
    found = []
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for get, set_ in _BLAS_THREAD_CALLS:
            if hasattr(library, get) and hasattr(library, set_):
                found.append((getattr(library, get), getattr(library, set_)))
                break
    return found


@contextmanager
@contract(threads=Count(high=4096))
def pinned_blas_threads(threads: int) -> Iterator[int | None]:
    """numpy's BLAS on ``threads`` threads inside the block, then as before. Yields
    ``threads``, or None where no OpenBLAS is found (set ``OPENBLAS_NUM_THREADS`` or
    ``OMP_NUM_THREADS`` before starting Python to pin another BLAS)."""
    int(threads)
    controls = _blas_thread_controls()
    before = [get() for get, _ in controls]
    for _, set_threads in controls:
        set_threads(threads)
    try:
        yield threads if controls else None
    finally:
        for (_, set_threads), count in zip(controls, before, strict=True):
            set_threads(count)


@contract(
    sweep_batches=SequenceOf(Count(high=1 << 14)),
    sweep_dim=Count(high=1 << 14),
    blas_threads=Count(high=4096),
)
def measure_machine(
    sweep_batches: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    sweep_dim: int = 4096,
    blas_threads: int = 1,
) -> MachineRoofline:
    """Build this machine's roofline (about 5-10 s): peak, bandwidth and a matmul sweep, with
    numpy's BLAS on ``blas_threads`` threads (one by default: a core shared with other work
    varies less than several, so the figure tells the same story run after run).

    The sweep's weight matrix (64 MB at ``dim=4096``) does not fit in cache, so small
    batches are bandwidth-bound like an LLM decode step, and large ones compute-bound.
    """
    batches = np.asarray(sweep_batches, dtype=np.float64)
    with pinned_blas_threads(blas_threads) as pinned:
        peak = measure_peak_flop_per_s()
        bandwidth = measure_bandwidth_bytes_per_s()
        flops, moved, measured, median = measure_matmul_sweep(batches, sweep_dim)
    # A roofline is the envelope of what the machine achieved: if a sweep point ran faster
    # (e.g. weights partly cached), that rate belongs to the roofline too.
    peak = max(peak, float(np.max(flops / measured)))
    bandwidth = max(bandwidth, float(np.max(moved / measured)))
    return MachineRoofline(
        peak, bandwidth, batches, sweep_dim, flops, moved, measured, median, pinned
    )


# ---- one measurement per book build ------------------------------------------------------------
#: Set by ``scripts/build_book.py`` for the pages it executes: the file that holds the book's one
#: measurement of the machine building it. Unset (JupyterLab, tests), every call measures.
MACHINE_FILE_ENV = "LLMMATH_MACHINE_FILE"

_SWEEP_FIELDS = ("sweep_batch", "sweep_flops", "sweep_bytes", "sweep_measured_s", "sweep_median_s")


def _to_json(machine: MachineRoofline) -> str:
    record: dict[str, object] = {
        "peak_flop_per_s": machine.peak_flop_per_s,
        "bandwidth_bytes_per_s": machine.bandwidth_bytes_per_s,
        "sweep_dim": machine.sweep_dim,
        "blas_threads": machine.blas_threads,
    }
    for name in _SWEEP_FIELDS:
        values = getattr(machine, name)
        record[name] = None if values is None else [float(v) for v in values]
    return json.dumps(record)


def _from_json(text: str) -> MachineRoofline:
    record = json.loads(text)
    for name in _SWEEP_FIELDS:
        if record[name] is not None:
            record[name] = np.asarray(record[name], dtype=np.float64)
    return MachineRoofline(**record)


@contract()
def measure_machine_once() -> MachineRoofline:
    """:func:`measure_machine` with its defaults, but in the book's build measured once: the
    first page to call it measures and writes the file ``$LLMMATH_MACHINE_FILE`` names; every
    later call, on any page and in any later build into the same ``_build``, reads it. So the
    roofline chapter and the validation page show one machine, not two runs of it that
    disagree (#45). A page that runs while another measures waits for it (a file lock): two
    measurements at once would also slow each other. Without the variable it simply measures."""
    where = os.environ.get(MACHINE_FILE_ENV)
    if not where:
        return measure_machine()
    import fcntl  # here: the book builds on POSIX; a learner's Windows never sets the variable

    path = Path(where)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return _from_json(path.read_text())
        machine = measure_machine()
        written = path.with_name(path.name + ".partial")
        written.write_text(_to_json(machine))
        written.replace(path)
        return machine

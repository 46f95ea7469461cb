"""Measure your machine: its achieved matmul FLOP/s and memory bandwidth, and how well the
roofline built from those two numbers predicts operations of low and high intensity.

Everything runs in numpy (float32) in a few seconds; timings take the best of a few repeats,
because the roofline is about what the hardware can do, not about what else is running.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ._checks import FloatArray, positive, positive_int

_FLOAT32_BYTES = 4.0


@dataclass(frozen=True)
class MachineRoofline:
    """A measured roofline and the predicted-vs-measured times of a sweep of matmuls."""

    peak_flop_per_s: float
    bandwidth_bytes_per_s: float
    sweep_batch: FloatArray
    sweep_dim: int
    sweep_flops: FloatArray
    sweep_bytes: FloatArray
    sweep_measured_s: FloatArray

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


def best_time_s(operation: Callable[[], object], repeats: int = 5) -> float:
    """Fastest of ``repeats`` runs of ``operation`` (after one warm-up run)."""
    positive_int("repeats", repeats)
    operation()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_peak_flop_per_s(size: int = 1024, repeats: int = 5) -> float:
    """Achieved float32 FLOP/s of a square ``size x size`` matmul (2 n^3 FLOPs)."""
    positive_int("size", size)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    out = np.empty_like(a)
    seconds = best_time_s(lambda: np.matmul(a, b, out=out), repeats)
    return 2.0 * size**3 / seconds


def measure_bandwidth_bytes_per_s(megabytes: float = 256.0, repeats: int = 5) -> float:
    """Achieved memory bandwidth: the better of a large array copy (read + write) and a
    matrix-vector product that streams a large matrix once (a pure read, like decode).

    Both arrays are far larger than any CPU cache, so the bytes come from main memory.
    """
    n = int(positive("megabytes", megabytes) * 1e6 / _FLOAT32_BYTES)
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


def measure_matmul_sweep(
    batches: FloatArray, dim: int, repeats: int = 3
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Time ``[B, dim] x [dim, dim]`` for each ``B``: FLOPs, bytes moved and best time."""
    batches = positive("batches", batches)
    rng = np.random.default_rng(1)
    weights = rng.standard_normal((dim, dim), dtype=np.float32)
    flops, moved, measured = [], [], []
    for batch in batches.astype(int):
        activations = rng.standard_normal((batch, dim), dtype=np.float32)
        out = np.empty((batch, dim), dtype=np.float32)
        measured.append(best_time_s(partial(np.matmul, activations, weights, out=out), repeats))
        flops.append(2.0 * batch * dim * dim)
        moved.append(_FLOAT32_BYTES * (2 * batch * dim + dim * dim))
    return np.array(flops), np.array(moved), np.array(measured)


def measure_machine(
    sweep_batches: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    sweep_dim: int = 4096,
) -> MachineRoofline:
    """Build this machine's roofline (about 3-5 s): peak, bandwidth and a matmul sweep.

    The sweep's weight matrix (64 MB at ``dim=4096``) does not fit in cache, so small
    batches are bandwidth-bound like an LLM decode step, and large ones compute-bound.
    """
    batches = np.asarray(sweep_batches, dtype=np.float64)
    peak = measure_peak_flop_per_s()
    bandwidth = measure_bandwidth_bytes_per_s()
    flops, moved, measured = measure_matmul_sweep(batches, sweep_dim)
    # A roofline is the envelope of what the machine achieved: if a sweep point ran faster
    # (e.g. weights partly cached), that rate belongs to the roofline too.
    peak = max(peak, float(np.max(flops / measured)))
    bandwidth = max(bandwidth, float(np.max(moved / measured)))
    return MachineRoofline(peak, bandwidth, batches, sweep_dim, flops, moved, measured)

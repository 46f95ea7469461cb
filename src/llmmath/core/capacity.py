"""Capacity and step floors of a :class:`~llmmath.core.deployment.Deployment`: the batch at
which a decode step turns compute-bound (``B*(T)``), the context past which none does
(``T_c``), the most sequences whose KV caches fit, the batch where the cost per token stops
falling, and the two latency floors (weights / bandwidth, HBM / bandwidth).

Built on :func:`llmmath.core.serving.decode_step` (the course's one step); the batching chapter
teaches them and the sections past the floor, pricing and the command line use them. Every
time is a FLOOR at the deployment's efficiency knobs.

>>> from llmmath.core import capacity
>>> from llmmath.core.deployment import Deployment, most_sequences
>>> round(capacity.step_critical_batch(Deployment("Llama-3-70B", "H100", 8)))  # C / W
295
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core._checks import FloatArray, as_output
from llmmath.core.contracts import SCALAR, SCALAR_FRACTION, contract
from llmmath.core.deployment import Deployment, most_sequences
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import check_context
from llmmath.core.roofline import critical_batch
from llmmath.core.serving import decode_step


# ---- thresholds and floors ------------------------------------------------------------------
@contract(infinite_ok=True, context=SCALAR)
def step_critical_batch(deployment: Deployment, context: float = 0.0) -> float:
    """The batch ``B*(T)`` at which a step at ``context`` turns compute-bound: its FLOPs take
    as long as everything it reads, weights and KV caches (the floor's own test).

    At context 0 only the weights are read: dense ``B* = C b_w / (2 W)``, the chip's critical
    batch (the number of chips cancels; the efficiency knobs scale it by ``flops_eff /
    bandwidth_eff``). At context ``T`` each sequence adds ``T b_kv / W`` of reading against
    ``(2 P + F_attn(T)) / C`` of arithmetic, so for a dense model
    ``B*(T) = (P b_w / W) / ((2 P + F_attn(T)) / C - T b_kv / W)``, which grows with ``T`` and
    is infinite from :func:`critical_context` on: there no batch is compute-bound. An MoE reads
    more experts as the batch grows, so its ``B*`` is solved numerically (near
    ``C b_w / (2 W) * P_total / P_active`` at context 0).

    >>> from llmmath.core import capacity
    >>> from llmmath.core.deployment import Deployment
    >>> llama = Deployment("Llama-3-70B", "H100", 8)
    >>> round(capacity.step_critical_batch(llama, 1024)), capacity.step_critical_batch(llama, 2048)
    (963, inf)
    """
    dep, model = deployment, deployment.model
    T = float(check_context(model, context))
    per_sequence = _per_sequence_surplus_s(dep, T)
    if per_sequence <= 0:
        return math.inf
    if not model.is_moe:
        if T == 0:  # the chip's critical batch, as the roofline chapter computes it
            ratio = dep.flops_efficiency / dep.bandwidth_efficiency
            return critical_batch(dep.chip, dep.compute_dtype, dep.weight_dtype) * ratio
        return float(decode_step(dep, 1, T, allow_overflow=True).weight_read_s) / per_sequence

    def surplus(B: float) -> float:  # compute minus everything read; rises with B
        step = decode_step(dep, B, T, allow_overflow=True)
        return float(step.compute_s - step.memory_s)

    # With every expert read (the most any batch reads), B = all weights / surplus per
    # sequence surely computes longer than it reads; near zero it surely does not.
    all_read = float(decode_step(dep, 1e12, T, allow_overflow=True).weight_read_s)
    return _bisect(surplus, 1e-9, 2.0 * all_read / per_sequence)


def _per_sequence_surplus_s(dep: Deployment, context: float) -> float:
    """What one more sequence adds to a step's compute time minus its read time (its FLOPs
    against its KV read; both grow in step with the batch)."""
    one = decode_step(dep, 1, context, allow_overflow=True)
    return float(one.compute_s - one.kv_read_s)


def _bisect(rising: Callable[[float], float], lo: float, hi: float) -> float:
    """Where ``rising`` (negative at ``lo``, non-negative at ``hi``) crosses zero, to 1e-12."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if rising(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


@contract(infinite_ok=True)
def critical_context(deployment: Deployment) -> float:
    """The context ``T_c`` from which no batch is compute-bound: one sequence's KV read takes
    as long as its FLOPs, ``T_c b_kv / W = (2 P + F_attn(T_c)) / C``, so past it every
    sequence added brings more reading than arithmetic. Ignoring attention FLOPs,
    ``T_c = (2 P / C) / (b_kv / W)``: about 1,440 tokens for Llama-3-70B on H100s in bf16
    (1,477 with the attention FLOPs).
    Infinite where even the model's ``max_context`` stays below it (a small KV cache, as
    MLA's, or attention FLOPs that keep pace with the read).

    >>> from llmmath.core import capacity
    >>> from llmmath.core.deployment import Deployment
    >>> round(capacity.critical_context(Deployment("Llama-3-70B", "H100", 8)))
    1477
    """
    dep = deployment
    top = float(dep.model.max_context)
    if _per_sequence_surplus_s(dep, top) > 0:
        return math.inf
    # The first sign change on a grid (a sliding window can bend the curves), then bisect.
    grid = np.unique(np.concatenate([[0.0], np.geomspace(1.0, top, 64)]))
    one = decode_step(dep, 1, grid, allow_overflow=True)  # the whole grid in one step
    surplus = one.compute_s - one.kv_read_s
    first = int(np.argmax(surplus <= 0))
    return _bisect(
        lambda t: -_per_sequence_surplus_s(dep, t), float(grid[first - 1]), float(grid[first])
    )


@contract(infinite_ok=True)
def max_batch(deployment: Deployment, context: ArrayLike) -> float | FloatArray:
    """The most sequences of ``context`` tokens whose KV caches fit beside the weights:
    ``floor((n HBM - weights) / (T kv(T)))`` (infinite at context 0), where ``kv(T)`` is
    :attr:`~llmmath.core.deployment.Deployment.kv_bytes_held_per_token` (copies of KV heads
    under wide TP, ``pp`` batches in flight) with each sliding-window layer holding
    ``min(T, window)`` tokens. It is exactly the largest batch
    :func:`~llmmath.core.serving.decode_step` accepts at ``context``: both count
    :meth:`~llmmath.core.deployment.Deployment.kv_bytes_held`.

    >>> from llmmath.core import capacity
    >>> from llmmath.core.deployment import Deployment
    >>> int(capacity.max_batch(Deployment("Gemma-4-26B-A4B", "H100"), 32768))
    33
    """
    dep = deployment
    T = check_context(dep.model, context)
    return as_output(most_sequences(dep, np.asarray(T, dtype=np.float64)))


@contract(context=SCALAR)
def cheapest_batch(deployment: Deployment, context: float) -> float:
    """The batch where the cost per token stops falling at ``context``:
    ``min(ceil(B*(T)), max_batch)``. Past ``B*(T)`` a token costs its FLOPs whatever the
    batch; past ``T_c`` (``B*(T)`` infinite) the HBM fills first and the cost falls to it.

    >>> from llmmath.core import capacity
    >>> from llmmath.core.deployment import Deployment
    >>> llama = Deployment("Llama-3-70B", "H100", 8)
    >>> capacity.cheapest_batch(llama, 1024), capacity.cheapest_batch(llama, 2048)
    (963.0, 743.0)
    """
    room = float(max_batch(deployment, context))
    compute_batch = step_critical_batch(deployment, context)
    if math.isfinite(compute_batch) and math.ceil(compute_batch) <= room:
        return float(math.ceil(compute_batch))
    return room


@contract()
def weight_floor_s(deployment: Deployment) -> float:
    """Weights / bandwidth: a batch-1, context-0 step. No decode step of this deployment
    is faster, however small the batch or however patient the user."""
    return float(decode_step(deployment, 1, 0).weight_read_s)


@contract(bandwidth_efficiency=SCALAR_FRACTION)
def hbm_floor_s(chip: str | Chip, bandwidth_efficiency: float = 1.0) -> float:
    """HBM capacity / bandwidth: a step that reads a full HBM (as a server whose memory is
    filled with weights and KV caches does) takes at least this long, on any number of chips."""
    return get_chip(chip).memory_floor_s / float(bandwidth_efficiency)


__all__ = [
    "cheapest_batch",
    "critical_context",
    "hbm_floor_s",
    "max_batch",
    "step_critical_batch",
    "weight_floor_s",
]

"""MoE load imbalance: hot experts, and the redundant copies that spread them.

The expert-parallel floors of :mod:`llmmath.moe` assume perfect balance: every GPU gets
``B k / G`` token-expert pairs. Real routers favour some experts, and an expert layer ends when
its most loaded GPU does, so the layer's time scales with ``max / mean`` of the GPUs' loads.
Serving systems replicate the hottest experts (DeepSeek-V3 keeps 32 redundant copies in each
32-GPU prefill unit, chosen from live statistics) and place the copies to even out the GPUs.

Loads here are expected shares (the mean expert has load 1), so the slowdown is that of a
large batch; a small batch adds random imbalance on top, so these are floors on the slowdown.

>>> from llmmath.beyond import moe_balance
>>> loads = moe_balance.zipf_expert_loads(256, 0.5)
>>> round(moe_balance.imbalance_slowdown(loads, 32), 2)     # no redundant experts
1.51
>>> round(moe_balance.imbalance_slowdown(loads, 32, redundant=32), 2)   # DeepSeek's prefill
1.0
>>> round(moe_balance.imbalance_slowdown(loads, 144, redundant=32), 2)  # and decode
1.26
"""

from __future__ import annotations

import heapq

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core._checks import FloatArray
from llmmath.core._constraints import Count, Real
from llmmath.core.contracts import CHIPS, contract
from llmmath.core.placement import REDUNDANT

#: Expected loads of the experts of one layer (one number per expert, >= 0, not all zero).
LOADS = Real(low_open=False, high=1e12)
#: A Zipf exponent: 0 is uniform routing. Top-k routing caps an expert's load at E/k times
#: the mean (one slot of every token): for 256 experts and top-8, skews above ~0.9 exceed it.
SKEW = Real(low_open=False, high=4.0, scalar=True)


@contract(n_experts=Count(high=1 << 16), skew=SKEW)  # a layer's experts, as everywhere
def zipf_expert_loads(n_experts: int, skew: float) -> FloatArray:
    """Expected loads of ``n_experts`` experts when the ``i``-th most popular is chosen in
    proportion to ``i**-skew``, hottest first, scaled so that the mean load is 1. A stand-in
    for a measured routing histogram (pass one to the other functions instead)."""
    ranks = np.arange(1, n_experts + 1, dtype=np.float64)
    weights = ranks**-skew
    return np.asarray(weights * n_experts / weights.sum(), dtype=np.float64)


def _loads(loads: ArrayLike) -> FloatArray:
    return np.atleast_1d(np.asarray(loads, dtype=np.float64)).ravel()


def _some_load(loads: ArrayLike) -> str | None:
    """The rule of every function of expert loads (its ``where=``)."""
    return None if _loads(loads).sum() > 0 else "loads must not all be zero"


def _same_slots(loads: ArrayLike, n_gpus: int, redundant: int = 0) -> str | None:
    """The rule of a placement on GPUs (its ``where=``): loads not all zero, and every GPU
    holds the same number of slots."""
    n_experts = _loads(loads).size
    if (n_experts + redundant) % n_gpus == 0:
        return _some_load(loads)
    return (
        f"n_gpus ({n_gpus}) must divide the experts plus redundant copies "
        f"({n_experts} + {redundant}): every GPU holds the same number of slots"
    )


@contract(loads=LOADS, redundant=REDUNDANT, where=_some_load)
def replica_counts(loads: ArrayLike, redundant: int = 0) -> FloatArray:
    """Copies of each expert after adding ``redundant`` copies, one at a time, each to the
    expert whose copies carry the most load each (the hottest, then the next...): the greedy
    rule of DeepSeek's expert-parallel load balancer. A token goes to any copy, so each copy
    of expert ``i`` carries ``loads[i] / copies[i]``."""
    values = _loads(loads)
    copies = np.ones(values.size)
    heap = [(-load, i) for i, load in enumerate(values)]
    heapq.heapify(heap)
    for _ in range(redundant):
        _, i = heapq.heappop(heap)
        copies[i] += 1
        heapq.heappush(heap, (-values[i] / copies[i], i))
    return copies


@contract(loads=LOADS, n_gpus=CHIPS, redundant=REDUNDANT, where=_same_slots)
def gpu_loads(loads: ArrayLike, n_gpus: int, redundant: int = 0) -> FloatArray:
    """Each GPU's load, heaviest first, when the experts and ``redundant`` extra copies
    (:func:`replica_counts`) are placed on ``n_gpus`` GPUs with the same number of slots
    each: heaviest copy first, each onto the least loaded GPU that has a free slot."""
    values = _loads(loads)
    slots = (values.size + redundant) // n_gpus
    copies = replica_counts(values, redundant)
    per_copy = np.repeat(values / copies, copies.astype(int))
    totals = np.zeros(n_gpus)
    used = np.zeros(n_gpus, dtype=int)
    open_gpus = [(0.0, gpu) for gpu in range(n_gpus)]  # a heap of GPUs with a free slot
    for load in np.sort(per_copy)[::-1]:
        _, gpu = heapq.heappop(open_gpus)
        totals[gpu] += load
        used[gpu] += 1
        if used[gpu] < slots:
            heapq.heappush(open_gpus, (totals[gpu], gpu))
    return np.sort(totals)[::-1]


@contract(loads=LOADS, n_gpus=CHIPS, redundant=REDUNDANT, where=_same_slots)
def imbalance_slowdown(loads: ArrayLike, n_gpus: int, redundant: int = 0) -> float:
    """``max / mean`` of :func:`gpu_loads`: how much longer an expert layer takes than under
    perfect balance, since every GPU waits for the most loaded one (1.0 = balanced)."""
    per_gpu = gpu_loads(loads, n_gpus, redundant)
    return float(per_gpu.max() / per_gpu.mean())


__all__ = [
    "gpu_loads",
    "imbalance_slowdown",
    "replica_counts",
    "zipf_expert_loads",
]

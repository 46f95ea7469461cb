"""Time of the collectives that parallel training and serving use, on a chip's two networks.

A group of ``n_chips`` that fits in one scale-up domain (an NVLink node or rack, a TPU ICI
pod) talks over the scale-up links; a larger group also crosses the scale-out network
(InfiniBand/Ethernet NICs, TPU DCN), which is several times slower. The bandwidth terms are
floors: bandwidth-optimal algorithms at full link speed, no congestion. The latency terms are
NCCL's own cost model (``src/graph/tuning.cc``, NCCL 2.20.3, Ring/LL), an **estimate**: each
ring collective (all-gather, reduce-scatter, all-reduce) pays a base latency once
(``Chip.collective_base_latency_s``) and the link's latency alpha per step
(``scale_up_latency_s`` / ``scale_out_latency_s``); a ring over ``n`` chips takes ``n - 1``
steps per gather, so many small messages (tensor-parallel decode at batch 1) are latency-bound,
not bandwidth-bound. One-shot and switch-reduced (NVLS) all-reduces take fewer steps for tiny
messages and can beat it; launches and synchronisation can make a real one slower. All-to-all
and point-to-point sends pay one step of alpha and no base. A message of zero bytes is not sent
and costs nothing.

Sizes follow the scaling book: ``array_bytes`` is the size of the whole (unsharded) array.

>>> from llmmath.core import collectives
>>> round(collectives.all_reduce_time_s(1e9, 8, "H100") * 1e3, 3)   # 1 GB over NVLink
3.904
>>> round(collectives.all_reduce_time_s(16384, 8, "H100") * 1e6, 1)  # one token: latency
15.1
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import Count, OneOf, Real, SequenceOf
from llmmath.core.contracts import AMOUNT, FLAG, RESULT, checked, contract, each
from llmmath.core.hardware import Chip, get_chip


@contract()
def fits_in_scale_up(n_chips: int, chip: str | Chip) -> bool:
    """True if ``n_chips`` fit in one scale-up domain of ``chip``."""
    return int(n_chips) <= get_chip(chip).scale_up_domain_size


@contract()
def link_bandwidth_bytes_per_s(n_chips: int, chip: str | Chip) -> float:
    """Per-chip bandwidth a ring over ``n_chips`` runs at: the slowest link it crosses."""
    spec = get_chip(chip)
    if fits_in_scale_up(n_chips, spec):
        return spec.scale_up_bandwidth_bytes_per_s
    return spec.scale_out_bandwidth_bytes_per_s


@contract()
def link_latency_s(n_chips: int, chip: str | Chip) -> float:
    """Latency of one step of a ring over ``n_chips``: the slowest link it crosses."""
    spec = get_chip(chip)
    if fits_in_scale_up(n_chips, spec):
        return spec.scale_up_latency_s
    return spec.scale_out_latency_s


RING_COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce")


@contract(collective=OneOf(RING_COLLECTIVES, "collective"))
def ring_steps(collective: str, n_chips: int) -> int:
    """Steps of a ring ``collective`` over ``n_chips``: ``n - 1`` for an all-gather or a
    reduce-scatter, ``2 (n - 1)`` for an all-reduce (a reduce-scatter, then an all-gather)."""
    per_pass = int(n_chips) - 1
    return (2 if collective == "all-reduce" else 1) * per_pass


def _sent(size: FloatArray, seconds: FloatArray) -> FloatArray:
    """``seconds`` where a message is sent, 0 where it has no bytes."""
    return np.where(size > 0, seconds, 0.0)


@contract(array_bytes=AMOUNT)
def all_gather_time_s(array_bytes: ArrayLike, n_chips: int, chip: str | Chip) -> float | FloatArray:
    """AllGather (or ReduceScatter) of an array of ``array_bytes``: each chip sends and
    receives ``(n-1)/n`` of it in ``n - 1`` ring steps,
    ``base + (n-1) alpha + S (n-1) / (n W)``."""
    return _ring(array_bytes, n_chips, chip, passes=1)


def _ring(
    array_bytes: ArrayLike, n_chips: int, chip: str | Chip, passes: int
) -> float | FloatArray:
    """``passes`` ring passes over ``n`` chips: the base latency once, then per pass
    ``(n-1)`` steps of alpha and ``S (n-1) / (n W)`` of bytes."""
    spec = get_chip(chip)
    n = int(n_chips)
    size = as_floats(array_bytes)
    bandwidth = size * (n - 1) / (n * link_bandwidth_bytes_per_s(n, spec))
    steps = passes * (n - 1) * link_latency_s(n, spec)
    base = spec.collective_base_latency_s if n > 1 else 0.0
    return as_output(_sent(size, base + steps + passes * bandwidth))


@contract(array_bytes=AMOUNT)
def reduce_scatter_time_s(
    array_bytes: ArrayLike, n_chips: int, chip: str | Chip
) -> float | FloatArray:
    """ReduceScatter moves the same bytes as AllGather, in the other direction."""
    return all_gather_time_s(array_bytes, n_chips, chip)


@contract(array_bytes=AMOUNT)
def all_reduce_time_s(array_bytes: ArrayLike, n_chips: int, chip: str | Chip) -> float | FloatArray:
    """AllReduce = ReduceScatter + AllGather in one collective:
    ``base + 2 (n-1) alpha + 2 S (n-1) / (n W)`` (the base latency is paid once)."""
    return _ring(array_bytes, n_chips, chip, passes=2)


@contract(bytes_per_chip=AMOUNT)
def all_to_all_time_s(
    bytes_per_chip: ArrayLike,
    n_chips: int,
    chip: str | Chip,
    *,
    per_domain: int | None = None,
) -> float | FloatArray:
    """AllToAll where each chip sends ``bytes_per_chip`` spread evenly over all ``n`` chips.

    Inside one scale-up domain of ``d`` chips a chip sends ``(d-1)/n`` of its bytes over
    scale-up links; the ``(n-d)/n`` bound for other domains go over its scale-out NIC. The
    two proceed in parallel, so the slower sets the time; each pays one step of its link's
    latency (the messages to every peer leave at once). ``d`` is ``min(n, domain size)`` for
    a group of consecutive chips; pass ``per_domain`` for a group spread out with a stride
    (e.g. ``per_domain=1`` when every member sits in a different node).
    """
    spec = get_chip(chip)
    n = int(n_chips)
    sent = as_floats(bytes_per_chip)
    domain = members_per_domain(n, spec, per_domain)
    inside = sent * (domain - 1) / n / spec.scale_up_bandwidth_bytes_per_s
    outside = sent * (n - domain) / n / spec.scale_out_bandwidth_bytes_per_s
    inside = inside + (spec.scale_up_latency_s if domain > 1 else 0.0)
    outside = outside + (spec.scale_out_latency_s if n > domain else 0.0)
    return as_output(_sent(sent, np.maximum(inside, outside)))


@contract(message_bytes=AMOUNT, across_domains=FLAG)
def point_to_point_time_s(
    message_bytes: ArrayLike, chip: str | Chip, across_domains: bool = False
) -> float | FloatArray:
    """One chip sends ``message_bytes`` to one other (pipeline stages pass activations):
    one step of the link's latency plus the bytes at its bandwidth."""
    spec = get_chip(chip)
    size = as_floats(message_bytes)
    if across_domains:
        latency, bandwidth = spec.scale_out_latency_s, spec.scale_out_bandwidth_bytes_per_s
    else:
        latency, bandwidth = spec.scale_up_latency_s, spec.scale_up_bandwidth_bytes_per_s
    return as_output(_sent(size, latency + size / bandwidth))


@contract()
def members_per_domain(n_chips: int, chip: str | Chip, per_domain: int | None = None) -> int:
    """How many members of a group of ``n_chips`` share each scale-up domain.

    ``None`` means a group of consecutive chips: ``min(n, domain size)``. An explicit value
    must be at most the domain size and divide ``n_chips`` (the group fills whole domains
    evenly), else a ValueError names ``per_domain``.
    """
    spec = get_chip(chip)
    n = int(n_chips)
    if per_domain is None:
        return min(n, spec.scale_up_domain_size)
    g = int(per_domain)
    if g > min(n, spec.scale_up_domain_size) or n % g:
        raise ValueError(
            f"per_domain={g} must divide n_chips={n} and be at most "
            f"{spec.name}'s scale-up domain of {spec.scale_up_domain_size} chips"
        )
    return g


@contract(array_bytes=AMOUNT)
def hierarchical_all_gather_time_s(
    array_bytes: ArrayLike,
    n_chips: int,
    chip: str | Chip,
    *,
    per_domain: int | None = None,
) -> float | FloatArray:
    """AllGather over ``n`` chips, ``g`` of them in each of ``m = n/g`` scale-up domains.

    Two levels: across domains each chip gathers the ``1/g`` of the array its domain is
    responsible for, ``(S/g)(m-1)/m`` bytes over its own scale-out NIC; inside the domain it
    gathers the rest, ``S(g-1)/g`` bytes over scale-up links. Chunks are pipelined through the
    two levels, so the slower one sets the time:

        T = max(S (g-1) / (g W_up), (S/g) (m-1) / (m W_out)) + (g-1) a_up + (m-1) a_out,

    the two levels' ring steps adding their latencies, plus the base latency once.

    A group inside one domain (m = 1) gives :func:`all_gather_time_s`; one member per domain
    (g = 1) gives the flat ring over scale-out. Across nodes of 8 H100 the scale-out term is
    ``S / (8 * 50 GB/s) = S / 400 GB/s``: the node's egress, as in the scaling book (gpus).
    """
    return _hierarchical(array_bytes, n_chips, chip, per_domain, passes=1)


def _hierarchical(
    array_bytes: ArrayLike, n_chips: int, chip: str | Chip, per_domain: int | None, passes: int
) -> float | FloatArray:
    """``passes`` two-level passes (1: gather or scatter, 2: all-reduce), the base once."""
    spec = get_chip(chip)
    n = int(n_chips)
    g = members_per_domain(n, spec, per_domain)
    m = n // g
    size = as_floats(array_bytes)
    per_byte = hierarchical_all_gather_s_per_byte(n, spec, per_domain=per_domain)
    steps = (g - 1) * spec.scale_up_latency_s + (m - 1) * spec.scale_out_latency_s
    base = spec.collective_base_latency_s if n > 1 else 0.0
    return as_output(_sent(size, base + passes * (size * per_byte + steps)))


@contract()
def hierarchical_all_gather_s_per_byte(
    n_chips: int, chip: str | Chip, *, per_domain: int | None = None
) -> float:
    """Seconds per byte of array that :func:`hierarchical_all_gather_time_s` takes, its fixed
    latency left out: ``max((g-1) / (g W_up), (m-1) / (m g W_out))``. For gradients, which are
    far too many bytes for the latency to matter, this is the whole cost."""
    return max(_two_level_s_per_byte(n_chips, chip, per_domain))


@contract()
def hierarchical_pace(n_chips: int, chip: str | Chip, *, per_domain: int | None = None) -> str:
    """Which level sets the pace of a two-level collective's bytes: ``"scale-up"`` while each
    domain's NICs together carry its cross-domain share no slower than the scale-up links
    carry the rest, ``"scale-out"`` past that (H100 nodes of 8: from 8 nodes on)."""
    inside, across = _two_level_s_per_byte(n_chips, chip, per_domain)
    return "scale-out" if across > inside else "scale-up"


def _two_level_s_per_byte(
    n_chips: int, chip: str | Chip, per_domain: int | None
) -> tuple[float, float]:
    """Seconds per byte of array inside each domain, ``(g-1) / (g W_up)``, and across the
    domains, ``(m-1) / (m g W_out)``, for ``m`` domains of ``g`` chips."""
    spec = get_chip(chip)
    n = int(n_chips)
    g = members_per_domain(n, spec, per_domain)
    m = n // g
    inside = (g - 1) / g / spec.scale_up_bandwidth_bytes_per_s
    across = (m - 1) / m / g / spec.scale_out_bandwidth_bytes_per_s
    return inside, across


@contract(array_bytes=AMOUNT)
def hierarchical_reduce_scatter_time_s(
    array_bytes: ArrayLike,
    n_chips: int,
    chip: str | Chip,
    *,
    per_domain: int | None = None,
) -> float | FloatArray:
    """ReduceScatter in two levels: the same bytes as the AllGather, in the other direction."""
    return hierarchical_all_gather_time_s(array_bytes, n_chips, chip, per_domain=per_domain)


@contract(array_bytes=AMOUNT)
def hierarchical_all_reduce_time_s(
    array_bytes: ArrayLike,
    n_chips: int,
    chip: str | Chip,
    *,
    per_domain: int | None = None,
) -> float | FloatArray:
    """AllReduce in two levels = hierarchical ReduceScatter + AllGather (twice the bytes and
    the steps, the base latency once)."""
    return _hierarchical(array_bytes, n_chips, chip, per_domain, passes=2)


# ---- curves the figures draw ----
@dataclass(frozen=True)
@checked(
    sent_chunk=Real(low_open=False, ndarray=True),
    phase=SequenceOf(OneOf(("reduce-scatter", "all-gather"), "phase")),
    **each(RESULT, "chunk_bytes step_s base_s total_s sent_bytes_per_chip"),
)
class RingSchedule:
    """A ring all-reduce of ``n`` chips, step by step: ``sent_chunk[s, i]`` is the chunk (of
    ``n``, each ``S/n`` bytes) chip ``i`` sends to chip ``i + 1`` at step ``s``; ``phase[s]``
    is "reduce-scatter" (it adds what it received to its own copy and passes the sum on) or
    "all-gather" (it passes a finished sum on). Each step takes ``step_s`` = alpha + (S/n)/W;
    the collective takes ``total_s`` = base + 2 (n-1) step_s, what
    :func:`all_reduce_time_s` gives, and each chip sends ``sent_bytes_per_chip`` =
    2 (n-1)/n S in all."""

    n_chips: int
    sent_chunk: np.ndarray
    phase: tuple[str, ...]
    chunk_bytes: float
    step_s: float
    base_s: float
    total_s: float
    sent_bytes_per_chip: float


#: The most chips a drawn ring schedule has: it holds a (2 (n - 1), n) table of chunks.
MAX_RING_DRAWN = 1024


# array_bytes >= 0, as every collective's: one of no bytes costs its latency alone
@contract(array_bytes=Real(low_open=False, scalar=True), n_chips=Count(low=2, high=MAX_RING_DRAWN))
def ring_all_reduce_schedule(array_bytes: float, n_chips: int, chip: str | Chip) -> RingSchedule:
    """The steps of a ring all-reduce of ``array_bytes`` over ``n_chips`` (one ring, inside
    one link tier): reduce-scatter step ``s`` has chip ``i`` send chunk ``(i - s) mod n``;
    after ``n - 1`` steps chip ``i`` holds the full sum of chunk ``(i + 1) mod n``, and
    all-gather step ``s`` has it send chunk ``(i + 1 - s) mod n``."""
    spec = get_chip(chip)
    n = int(n_chips)
    if n < 2:
        raise ValueError(f"n_chips must be >= 2 for a ring; got {n}")
    chips = np.arange(n)
    reduce = [(chips - s) % n for s in range(n - 1)]
    gather = [(chips + 1 - s) % n for s in range(n - 1)]
    chunk = float(array_bytes) / n
    step = link_latency_s(n, spec) + chunk / link_bandwidth_bytes_per_s(n, spec)
    steps = ring_steps("all-reduce", n)
    return RingSchedule(
        n_chips=n,
        sent_chunk=np.array(reduce + gather),
        phase=("reduce-scatter",) * (n - 1) + ("all-gather",) * (n - 1),
        chunk_bytes=chunk,
        step_s=step,
        base_s=spec.collective_base_latency_s,
        total_s=spec.collective_base_latency_s + steps * step,
        sent_bytes_per_chip=steps * chunk,
    )


@dataclass(frozen=True)
@checked(**each(RESULT, "array_bytes latency_s bytes_s total_s"))
class AllReduceCost:
    """One all-reduce over ``n_chips`` against its size: the latency part (base + steps x
    alpha, the same at every size), the bytes part (2 (n-1)/n S / W) and their sum."""

    n_chips: int
    array_bytes: FloatArray
    latency_s: FloatArray
    bytes_s: FloatArray
    total_s: FloatArray


@contract(array_bytes=Real(low_open=False, ndarray=True))
def all_reduce_cost_curve(array_bytes: ArrayLike, n_chips: int, chip: str | Chip) -> AllReduceCost:
    """:func:`all_reduce_time_s` over a sweep of sizes, split into its latency and bytes."""
    spec = get_chip(chip)
    n = int(n_chips)
    size = as_floats(array_bytes)
    total = np.asarray(all_reduce_time_s(size, n, spec))
    bytes_s = 2 * size * (n - 1) / (n * link_bandwidth_bytes_per_s(n, spec))
    return AllReduceCost(
        n_chips=n,
        array_bytes=size,
        latency_s=total - bytes_s,
        bytes_s=np.asarray(bytes_s),
        total_s=total,
    )

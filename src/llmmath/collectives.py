"""Time of the collectives that parallel training and serving use, on a chip's two networks.

A group of ``n_chips`` that fits in one scale-up domain (an NVLink node or rack, a TPU ICI
pod) talks over the scale-up links; a larger group also crosses the scale-out network
(InfiniBand/Ethernet NICs, TPU DCN), which is several times slower. Times are floors:
bandwidth-optimal algorithms at full link speed, no congestion. Each step of a collective also
pays the link's latency alpha (``Chip.scale_up_latency_s`` / ``scale_out_latency_s``, from
NCCL's own cost model): a ring over ``n`` chips takes ``n - 1`` steps per gather, so many small
messages (tensor-parallel decode at batch 1) are latency-bound, not bandwidth-bound. Switch-
reduced (NVLS) and one-shot all-reduces take fewer steps for tiny messages, so there the latency
term is NCCL's default ring cost rather than a hard limit. A message of zero bytes is not sent
and costs nothing.

Sizes follow the scaling book: ``array_bytes`` is the size of the whole (unsharded) array.

>>> from llmmath import collectives
>>> round(collectives.all_reduce_time_s(1e9, 8, "H100") * 1e3, 3)   # 1 GB over NVLink
3.895
>>> round(collectives.all_reduce_time_s(16384, 8, "H100") * 1e6, 1)  # one token: latency
6.6
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._checks import FloatArray, as_floats, as_output
from .contracts import AMOUNT, FLAG, contract
from .hardware import Chip, get_chip


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


def _sent(size: FloatArray, seconds: FloatArray) -> FloatArray:
    """``seconds`` where a message is sent, 0 where it has no bytes."""
    return np.where(size > 0, seconds, 0.0)


@contract(array_bytes=AMOUNT)
def all_gather_time_s(array_bytes: ArrayLike, n_chips: int, chip: str | Chip) -> float | FloatArray:
    """AllGather (or ReduceScatter) of an array of ``array_bytes``: each chip sends and
    receives ``(n-1)/n`` of it in ``n - 1`` ring steps, ``(n-1) alpha + S (n-1) / (n W)``."""
    n = int(n_chips)
    size = as_floats(array_bytes)
    bandwidth = size * (n - 1) / (n * link_bandwidth_bytes_per_s(n, chip))
    return as_output(_sent(size, (n - 1) * link_latency_s(n, chip) + bandwidth))


@contract(array_bytes=AMOUNT)
def reduce_scatter_time_s(
    array_bytes: ArrayLike, n_chips: int, chip: str | Chip
) -> float | FloatArray:
    """ReduceScatter moves the same bytes as AllGather, in the other direction."""
    return all_gather_time_s(array_bytes, n_chips, chip)


@contract(array_bytes=AMOUNT)
def all_reduce_time_s(array_bytes: ArrayLike, n_chips: int, chip: str | Chip) -> float | FloatArray:
    """AllReduce = ReduceScatter + AllGather: ``2 (n-1) alpha + 2 S (n-1) / (n W)``."""
    return as_output(2.0 * np.asarray(all_gather_time_s(array_bytes, n_chips, chip)))


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

    the two levels' ring steps adding their latencies.

    A group inside one domain (m = 1) gives :func:`all_gather_time_s`; one member per domain
    (g = 1) gives the flat ring over scale-out. Across nodes of 8 H100 the scale-out term is
    ``S / (8 * 50 GB/s) = S / 400 GB/s``: the node's egress, as in the scaling book (gpus).
    """
    spec = get_chip(chip)
    n = int(n_chips)
    g = members_per_domain(n, spec, per_domain)
    m = n // g
    size = as_floats(array_bytes)
    per_byte = hierarchical_all_gather_s_per_byte(n, spec, per_domain=per_domain)
    latency = (g - 1) * spec.scale_up_latency_s + (m - 1) * spec.scale_out_latency_s
    return as_output(_sent(size, size * per_byte + latency))


@contract()
def hierarchical_all_gather_s_per_byte(
    n_chips: int, chip: str | Chip, *, per_domain: int | None = None
) -> float:
    """Seconds per byte of array that :func:`hierarchical_all_gather_time_s` takes, its fixed
    latency left out: ``max((g-1) / (g W_up), (m-1) / (m g W_out))``. For gradients, which are
    far too many bytes for the latency to matter, this is the whole cost."""
    spec = get_chip(chip)
    n = int(n_chips)
    g = members_per_domain(n, spec, per_domain)
    m = n // g
    inside = (g - 1) / g / spec.scale_up_bandwidth_bytes_per_s
    across = (m - 1) / m / g / spec.scale_out_bandwidth_bytes_per_s
    return max(inside, across)


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
    """AllReduce in two levels = hierarchical ReduceScatter + AllGather (twice the bytes)."""
    gather = hierarchical_all_gather_time_s(array_bytes, n_chips, chip, per_domain=per_domain)
    return as_output(2.0 * np.asarray(gather))

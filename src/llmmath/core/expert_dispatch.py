"""Node-limited expert dispatch: one copy of a token per scale-up domain its experts lie in.

The arithmetic of :mod:`llmmath.beyond.moe_dispatch` (which explains it and builds the MoE
chapter's steps on it) that the core's decode step needs when a deployment dispatches
node-limited (:attr:`llmmath.core.deployment.Deployment.expert_dispatch`): it lives here so
that the core does not reach up into the chapters' modules.

>>> round(domains_reached(256, 8, 8, max_domains=4), 2)   # DeepSeek-V3's limit, 8 nodes
3.63
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import collectives
from llmmath.core._checks import FloatArray, as_floats
from llmmath.core._constraints import Count, Optional
from llmmath.core.contracts import RESULT, checked, contract, each
from llmmath.core.dtypes import DTYPE, bytes_per_element
from llmmath.core.hardware import Chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.racks import DOMAIN, ScaleUpDomain, get_domain


def _moe_model(model: str | ModelConfig) -> ModelConfig:
    spec = get_model(model)
    if not spec.is_moe:
        raise ValueError(f"model {spec.name!r} is dense (n_experts=0); this needs an MoE model")
    return spec


def _experts_divide(model: str | ModelConfig, ep_width: int) -> str | None:
    """The rule of :func:`node_limited_all_to_all` (its ``where=``): each GPU of the group
    holds the same number of experts."""
    spec = get_model(model)
    if not spec.is_moe or spec.n_experts % ep_width == 0:
        return None
    return (
        f"n_experts={spec.n_experts} is not divisible by ep_width={ep_width}: every GPU must "
        "hold the same number of experts"
    )


@contract(
    n_experts=Count(high=1 << 16),
    experts_per_token=Count(),
    n_domains=Count(high=1 << 16),
    max_domains=Optional(Count(high=1 << 16)),
)
def domains_reached(
    n_experts: int, experts_per_token: int, n_domains: int, max_domains: int | None = None
) -> float:
    """Expected number of domains (nodes) that hold at least one of a token's ``k`` experts.

    The ``E`` experts are split evenly over ``n`` domains; the router picks ``m = min(M, n)``
    domains (all ``n`` without a limit) and the token's ``k`` experts uniformly, without
    replacement, among their ``m E / n`` experts. A chosen domain gets none of them with
    probability ``C((m-1) E/n, k) / C(m E/n, k)``, so ``m (1 - C((m-1) E/n, k) / C(m E/n, k))``.
    """
    E, k, n = int(n_experts), int(experts_per_token), int(n_domains)
    if E % n:
        raise ValueError(f"n_domains={n} must divide n_experts={E} (each domain the same experts)")
    m = n if max_domains is None else min(int(max_domains), n)
    pool, per_domain = m * E // n, E // n
    if k > pool:
        raise ValueError(
            f"experts_per_token={k} is more than the {pool} experts of max_domains={m} domains"
        )
    return m * (1.0 - comb(pool - per_domain, k) / comb(pool, k))


@dataclass(frozen=True)
@checked(
    **each(
        RESULT,
        "domains_per_token network_copies_per_token nvlink_copies_per_token "
        "network_bytes_per_gpu nvlink_bytes_per_gpu all_to_all_s",
    )
)
class NodeLimitedDispatch:
    """One MoE layer's dispatch and combine with one copy per destination domain."""

    #: Domains a token's experts lie in, its own included (expected, uniform routing).
    domains_per_token: float
    #: Copies of a token that cross the network: the other domains it reaches.
    network_copies_per_token: float
    #: Copies forwarded over NVLink inside a domain: ``k (d-1)/d``.
    nvlink_copies_per_token: float
    #: Dispatch plus combine bytes each GPU sends through its NIC.
    network_bytes_per_gpu: FloatArray
    #: Dispatch plus combine bytes each GPU sends over its scale-up links.
    nvlink_bytes_per_gpu: FloatArray
    all_to_all_s: FloatArray


#: The inputs' rules, shared with :func:`llmmath.beyond.moe_dispatch.node_limited_step`.
NODE_LIMITED_RULES: dict[str, Any] = {
    "chip": DOMAIN,
    "max_domains": Optional(Count(high=1 << 16)),
    **each(DTYPE, "dispatch_dtype combine_dtype"),
    "where": _experts_divide,
}


@contract(**NODE_LIMITED_RULES)
def node_limited_all_to_all(
    model: str | ModelConfig,
    batch: ArrayLike,
    ep_width: int,
    chip: str | Chip | ScaleUpDomain,
    *,
    max_domains: int | None = None,
    dispatch_dtype: str = "bf16",
    combine_dtype: str = "bf16",
    network_efficiency: ArrayLike = 1.0,
) -> NodeLimitedDispatch:
    """The all-to-all of one MoE layer when a token crosses the network once per domain it
    reaches (at most ``max_domains``) and NVLink forwards it to its experts' GPUs.

    Per GPU and direction, with ``d`` GPUs of the group in each of its ``n`` domains:
    ``(B/G) r D b`` bytes through the NIC, ``r`` = :func:`domains_reached` ``x (n-1)/n``, and
    ``(B/G) k (d-1)/d D b`` over NVLink; the two overlap, so each direction takes the slower,
    plus one step of that link's latency, as :func:`llmmath.core.collectives.all_to_all_time_s`.
    DeepSeek dispatches in fp8 and combines in bf16 (its inference system overview).
    """
    spec = _moe_model(model)
    G = int(ep_width)
    chip_spec = get_domain(chip).chip
    d = collectives.members_per_domain(G, chip_spec)
    n = G // d
    E, k = spec.n_experts, spec.experts_per_token
    reached = domains_reached(E, k, n, max_domains) if n > 1 else 1.0
    network_copies = reached * (n - 1) / n
    nvlink_copies = k * (d - 1) / d
    tokens = as_floats(batch) / G
    up, out = chip_spec.scale_up_bandwidth_bytes_per_s, chip_spec.scale_out_bandwidth_bytes_per_s
    up_lat = chip_spec.scale_up_latency_s if d > 1 else 0.0
    out_lat = chip_spec.scale_out_latency_s if n > 1 else 0.0
    time = np.zeros_like(tokens)
    sent_out, sent_up = np.zeros_like(tokens), np.zeros_like(tokens)
    for dtype in (dispatch_dtype, combine_dtype):
        one = tokens * spec.d_model * bytes_per_element(dtype)
        sent_out, sent_up = sent_out + one * network_copies, sent_up + one * nvlink_copies
        time = time + np.maximum(
            one * network_copies / out + out_lat, one * nvlink_copies / up + up_lat
        )
    return NodeLimitedDispatch(
        domains_per_token=float(reached),
        network_copies_per_token=float(network_copies),
        nvlink_copies_per_token=float(nvlink_copies),
        network_bytes_per_gpu=sent_out,
        nvlink_bytes_per_gpu=sent_up,
        all_to_all_s=time / as_floats(network_efficiency),
    )


__all__ = [
    "NODE_LIMITED_RULES",
    "NodeLimitedDispatch",
    "domains_reached",
    "node_limited_all_to_all",
]

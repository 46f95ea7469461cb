"""Node-limited expert dispatch, and the all-to-all over compute ratio term by term.

:func:`llmmath.moe.expert_parallel_step` sends a token's activations once per expert it is
routed to: ``k`` copies spread over all ``G`` GPUs, ``k (n-1)/n`` of them through the NIC when
the group fills ``n`` scale-up domains. DeepSeek-V3 sends less across domains, in two ways:

* **Group-limited routing.** Its router picks experts only from ``topk_group`` = 4 of
  ``n_group`` = 8 groups of experts (the released ``config.json``, so at inference too). With
  one group per node (64 GPUs on 8 nodes, as in training) a token reaches at most 4 nodes.
* **One copy per node.** A token crosses the network once per destination node, to the GPU with
  its own in-node index, which forwards it over NVLink to the GPUs holding its experts; the
  combine runs the path backwards, summing inside the node first (DeepSeek-V3 report 3.2.2;
  DeepEP's normal kernels, used in training and prefill).

Every time is a FLOOR: uniform routing (the nodes and the experts in them drawn at random),
perfect balance, links at datasheet rate, network and NVLink fully overlapped.

>>> from llmmath.beyond import moe_dispatch
>>> round(moe_dispatch.domains_reached(256, 8, 8), 2)        # no limit: 8 experts over 8 nodes
5.29
>>> round(moe_dispatch.domains_reached(256, 8, 8, max_domains=4), 2)   # DeepSeek's limit
3.63
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import collectives
from llmmath.core.contracts import RESULT, checked, contract, each
from llmmath.core.dtypes import bytes_per_element
from llmmath.core.expert_dispatch import (
    NODE_LIMITED_RULES,
    NodeLimitedDispatch,
    domains_reached,
    node_limited_all_to_all,
)
from llmmath.core.hardware import Chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.racks import DOMAIN, ScaleUpDomain, get_domain
from llmmath.moe import EP_WIDTH_RULES, ExpertLayerStep, expert_parallel_step


@contract(**NODE_LIMITED_RULES)
def node_limited_step(
    model: str | ModelConfig,
    batch: ArrayLike,
    ep_width: int,
    chip: str | Chip | ScaleUpDomain,
    *,
    max_domains: int | None = None,
    dispatch_dtype: str = "bf16",
    combine_dtype: str = "bf16",
) -> ExpertLayerStep:
    """:func:`llmmath.moe.expert_parallel_step` with the all-to-all of
    :func:`node_limited_all_to_all` in place of one copy per expert (compute and weight read
    unchanged)."""
    step = expert_parallel_step(model, batch, ep_width, chip)
    a2a = node_limited_all_to_all(
        model,
        batch,
        ep_width,
        chip,
        max_domains=max_domains,
        dispatch_dtype=dispatch_dtype,
        combine_dtype=combine_dtype,
    )
    return dataclasses.replace(
        step,
        all_to_all_s=a2a.all_to_all_s,
        all_to_all_bytes_per_gpu=a2a.network_bytes_per_gpu + a2a.nvlink_bytes_per_gpu,
    )


# ---- the ratio of the all-to-all to the experts' compute, term by term ---------------------
@dataclass(frozen=True)
@checked(**each(RESULT, "bandwidth shared_factor link_share latency total"))
class AllToAllRatio:
    """``T_all-to-all / T_compute = bandwidth x shared_factor x link_share + latency``."""

    #: ``b C / (3 F_e W)``, ``W`` the link that sets the time (scale-up or scale-out).
    bandwidth: float
    #: ``k / (k + s)``: the shared experts add compute and no traffic.
    shared_factor: float
    #: The share of a GPU's bytes on that link: ``(d-1)/G`` inside, ``(G-d)/G`` across.
    link_share: float
    #: The rest of the package's all-to-all time (its links' latency) over the compute time.
    latency: float
    total: float


@contract(chip=DOMAIN, **EP_WIDTH_RULES)
def all_to_all_ratio(
    model: str | ModelConfig,
    batch: ArrayLike,
    ep_width: int,
    chip: str | Chip | ScaleUpDomain,
    activation_dtype: str = "bf16",
) -> AllToAllRatio:
    """:func:`llmmath.moe.expert_parallel_step`'s all-to-all over its compute, split into the
    terms of the closed form ``b C k f / (3 F_e W (k + s)) + latency / T_compute``."""
    spec = get_model(model)  # a dense model is refused by expert_parallel_step below
    G = int(ep_width)
    chip_spec = get_domain(chip).chip
    step = expert_parallel_step(spec, batch, G, chip_spec, activation_dtype=activation_dtype)
    d = collectives.members_per_domain(G, chip_spec)
    up = (d - 1) / G / chip_spec.scale_up_bandwidth_bytes_per_s
    out = (G - d) / G / chip_spec.scale_out_bandwidth_bytes_per_s
    share, W = (
        ((G - d) / G, chip_spec.scale_out_bandwidth_bytes_per_s)
        if out > up
        else (
            (d - 1) / G,
            chip_spec.scale_up_bandwidth_bytes_per_s,
        )
    )
    b = bytes_per_element(activation_dtype)
    k, s = spec.experts_per_token, spec.n_shared_experts
    bandwidth = b * chip_spec.peak("bf16") / (3 * spec.expert_d_ff * W)
    bytes_s = np.asarray(step.all_to_all_bytes_per_gpu) * share / W
    compute = np.asarray(step.compute_s)
    latency = float(np.max((np.asarray(step.all_to_all_s) - bytes_s) / compute))
    shared = k / (k + s)
    return AllToAllRatio(
        bandwidth=bandwidth,
        shared_factor=shared,
        link_share=share,
        latency=latency,
        total=bandwidth * shared * share + latency,
    )


__all__ = [
    "AllToAllRatio",
    "NodeLimitedDispatch",
    "all_to_all_ratio",
    "domains_reached",
    "node_limited_all_to_all",
    "node_limited_step",
]

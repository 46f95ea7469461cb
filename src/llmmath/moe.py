"""Mixture of experts: parameters, FLOPs, the batch an MoE needs, and the rack boundary.

Symbols as in the scaling book: E routed experts per MoE layer, k routed to per token, D
``d_model``, F_e the width of one expert, B tokens in one step, G GPUs of expert parallelism
(EP). An expert is a SwiGLU MLP of ``3 D F_e`` weights.

Every time here is a FLOOR: datasheet FLOP/s, HBM and link bandwidths (scaled by the
efficiency knobs), uniform routing with perfect load balance, no congestion; each all-to-all
pays one step of its link's latency (``llmmath.core.collectives.all_to_all_time_s``).

>>> from llmmath import moe
>>> moe.sparsity("DeepSeek-V3", "experts"), round(moe.sparsity("DeepSeek-V3", "params"), 1)
(32.0, 17.9)
>>> round(moe.compute_bound_batch_rule("DeepSeek-V3", "H100"))     # "300 x sparsity", E/k
9447
>>> float(moe.expected_experts_touched(2, 8, 2))                   # 8 (1 - (6/8)^2)
3.5
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import collectives
from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import Count, OneOf, SequenceOf
from llmmath.core.contracts import (
    AMOUNT,
    CHIPS,
    RESULT,
    SCALAR_FRACTION,
    SCALAR_POSITIVE,
    WHOLE,
    checked,
    contract,
    each,
)
from llmmath.core.dtypes import DTYPE, bytes_per_element
from llmmath.core.hardware import Chip
from llmmath.core.models import (
    ModelConfig,
    expected_experts_touched,
    get_model,
    weight_params_read,
)
from llmmath.core.placement import fewest_redundant_experts
from llmmath.core.racks import DOMAIN, DOMAIN_PRESETS, ScaleUpDomain, get_domain, list_domains
from llmmath.core.roofline import critical_batch, decode_weight_time, roofline_time

#: The two definitions of "sparsity". The lecture's "batch ~ 300 x sparsity" is the
#: expert-layer argument (each expert must see ~C/W tokens), so it uses ``"experts"``.
SPARSITY_DEFINITIONS = ("experts", "params")
LECTURE_SPARSITY = "experts"


# ---- parameters and FLOPs -------------------------------------------------------------------
@dataclass(frozen=True)
@checked(**each(WHOLE, "total active routed_total routed_active shared dense"))
class MoEParams:
    """Where a model's weights sit. ``total = dense + shared + routed_total`` and
    ``active = dense + shared + routed_active``."""

    total: int
    active: int
    #: All E routed experts of every MoE layer.
    routed_total: int
    #: The k routed experts one token uses, in every MoE layer.
    routed_active: int
    #: Shared experts: every token uses them, like a dense MLP.
    shared: int
    #: Everything else: attention, the dense layers' MLPs, embeddings, routers, norms.
    dense: int


@contract()
def param_counts(model: str | ModelConfig) -> MoEParams:
    """Total and active parameters of ``model``, split into routed, shared and dense parts."""
    spec = get_model(model)
    per_layer = spec.n_moe_layers * spec.mlp_params_per_expert
    routed_total = per_layer * spec.n_experts
    shared = per_layer * spec.n_shared_experts
    return MoEParams(
        total=spec.total_params,
        active=spec.active_params,
        routed_total=routed_total,
        routed_active=per_layer * spec.experts_per_token,
        shared=shared,
        dense=spec.total_params - routed_total - shared,
    )


@contract()
def flops_per_token(model: str | ModelConfig, context: ArrayLike = 0) -> float | FloatArray:
    """Dense forward FLOPs per token: ``2 * P_active`` (matmul weights) plus attention.

    An MoE does the FLOPs of a dense model of its *active* size while holding all of its
    total parameters: that is the whole point of it.
    """
    return get_model(model).forward_flops_per_token(context)


def _routes_within_layer(n_experts: int, experts_per_token: int) -> str | None:
    """The rule of :func:`with_experts` (its ``where=``): a token's experts are the layer's."""
    if experts_per_token <= n_experts:
        return None
    return (
        f"experts_per_token={experts_per_token} exceeds n_experts={n_experts}: "
        "a token cannot be routed to more experts than the layer has"
    )


@contract(
    n_experts=Count(high=1 << 16),
    experts_per_token=Count(),
    n_shared_experts=Count(low=0, high=1 << 16),
    where=_routes_within_layer,
)
def with_experts(
    model: str | ModelConfig,
    n_experts: int,
    experts_per_token: int,
    n_shared_experts: int | None = None,
) -> ModelConfig:
    """``model`` with its MoE layers re-cut into ``n_experts`` routed experts of the same
    width, ``experts_per_token`` of them per token (checked by :class:`ModelConfig`)."""
    spec = get_model(model)
    E, k = int(n_experts), int(experts_per_token)
    shared = spec.n_shared_experts if n_shared_experts is None else n_shared_experts
    return dataclasses.replace(
        spec,
        name=f"{spec.name} (E={E}, k={k})",
        n_experts=E,
        experts_per_token=k,
        n_shared_experts=shared,
        d_ff_expert=spec.expert_d_ff,
    )


@contract(definition=OneOf(SPARSITY_DEFINITIONS))
def sparsity(model: str | ModelConfig, definition: str = LECTURE_SPARSITY) -> float:
    """How many times more weights an MoE holds than one token uses, defined two ways.

    * ``"experts"``: ``E / k``, the routed experts per layer over those a token uses. It is
      exact for an expert layer on its own, and it is what the lecture's "300 x sparsity"
      rule uses.
    * ``"params"``: ``P_total / P_active``. Attention, dense layers and shared experts are
      used by every token, so this is smaller than ``E / k`` (DeepSeek-V3: 17.9 vs 32).
    """
    spec = _moe_model(model)
    if definition == "experts":
        return spec.n_experts / spec.experts_per_token
    return spec.total_params / spec.active_params


# ---- which experts a batch touches: models.expected_experts_touched, models.weight_params_read
@contract()
def weight_bytes_read(
    model: str | ModelConfig, batch: ArrayLike, weight_dtype: str = "bf16"
) -> float | FloatArray:
    """Bytes of weights one decode step reads: :func:`weight_params_read` times the bytes
    per weight. A batch-independent shortcut (the active or the total count) is right only at
    the extremes: batch 1, or a batch that touches every expert."""
    return as_output(weight_params_read(model, batch) * bytes_per_element(weight_dtype))


# ---- the batch an MoE needs to be compute-bound ---------------------------------------------
@contract(chip=DOMAIN, definition=OneOf(SPARSITY_DEFINITIONS))
def compute_bound_batch_rule(
    model: str | ModelConfig,
    chip: str | Chip | ScaleUpDomain,
    definition: str = LECTURE_SPARSITY,
    compute_dtype: str = "bf16",
    weight_dtype: str | None = None,
) -> float:
    """The rule of thumb: the chip's critical batch times the sparsity, ``B* x E/k`` with the
    lecture's definition or ``B* x P_total/P_active`` with the other one."""
    spec = get_domain(chip).chip
    return critical_batch(spec, compute_dtype, weight_dtype) * sparsity(model, definition)


@contract(chip=DOMAIN, scope=OneOf(("model", "expert_layer")))
def compute_bound_batch(
    model: str | ModelConfig,
    chip: str | Chip | ScaleUpDomain,
    scope: str = "model",
    compute_dtype: str = "bf16",
    weight_dtype: str | None = None,
) -> float:
    """Token batch where a decode step's compute time reaches its weight-read time, solved
    with the batch-dependent reads of :func:`expected_experts_touched` (no rule of thumb).

    ``scope="expert_layer"``: one layer's routed experts, ``2 B k 3DF_e`` FLOPs against
    ``touched(B) 3DF_e`` weights read; the answer is close to ``B* E/k``.
    ``scope="model"``: the whole step of :func:`llmmath.core.roofline.decode_weight_time`; the
    answer is close to ``B* P_total/P_active``, because at that batch every expert is read.
    """
    spec, chip_spec = _moe_model(model), get_domain(chip).chip
    weights = weight_dtype or compute_dtype
    if scope == "model":

        def excess(B: FloatArray) -> FloatArray:
            step = decode_weight_time(spec, B, chip_spec, compute_dtype, weights)
            return step.compute_s - step.memory_s

    else:
        E, k, per_expert = spec.n_experts, spec.experts_per_token, spec.mlp_params_per_expert

        def excess(B: FloatArray) -> FloatArray:
            flops = 2.0 * B * k * per_expert
            read = np.asarray(expected_experts_touched(B, E, k)) * per_expert
            step = roofline_time(flops, read * bytes_per_element(weights), chip_spec, compute_dtype)
            return step.compute_s - step.memory_s

    ceiling = 4.0 * compute_bound_batch_rule(spec, chip_spec, "experts", compute_dtype, weights)
    return _root(excess, 1e-6, max(ceiling, 1.0))


# ---- expert parallelism -------------------------------------------------------------------
@dataclass(frozen=True)
@checked(**each(RESULT, "compute_s weight_read_s all_to_all_s all_to_all_bytes_per_gpu"))
class ExpertLayerStep:
    """One MoE layer of one decode step, per GPU of an expert-parallel group of ``ep_width``.

    The three clocks can overlap (the all-to-all of one micro-batch under the experts of
    another), so the step takes at least the slowest and at most their sum.
    """

    compute_s: FloatArray
    weight_read_s: FloatArray
    all_to_all_s: FloatArray
    #: Dispatch plus combine bytes each GPU sends (the part to itself never leaves it).
    all_to_all_bytes_per_gpu: FloatArray
    ep_width: int
    #: True when the group fits in one scale-up domain (NVLink node or rack, TPU pod).
    in_one_domain: bool

    @property
    def lower_s(self) -> FloatArray:
        """Perfect overlap: the slowest of compute, weight read and all-to-all."""
        return np.maximum(np.maximum(self.compute_s, self.weight_read_s), self.all_to_all_s)

    @property
    def upper_s(self) -> FloatArray:
        """No overlap at all: the three one after another."""
        return self.compute_s + self.weight_read_s + self.all_to_all_s

    @property
    def communication_bound(self) -> FloatArray:
        """True where the all-to-all takes longer than the experts' compute and weight read."""
        return np.asarray(self.all_to_all_s > np.maximum(self.compute_s, self.weight_read_s))


def _experts_divide(model: str | ModelConfig, ep_width: int) -> str | None:
    """The rule of every function of an EP width (its ``where=``): each GPU of the group
    holds the same number of experts (a dense model is refused by the function itself)."""
    spec = get_model(model)
    if not spec.is_moe or spec.n_experts % ep_width == 0:
        return None
    return (
        f"n_experts={spec.n_experts} is not divisible by ep_width={ep_width}: every GPU must "
        f"hold the same number of experts (try one of {ep_widths(spec.n_experts)})"
    )


#: The contract rules of every function of an EP width, shared with
#: :func:`llmmath.beyond.moe_dispatch.all_to_all_ratio`: each GPU of the group holds the same
#: number of experts.
EP_WIDTH_RULES: dict[str, Any] = {"where": _experts_divide}


@contract(where=_experts_divide)
def all_to_all_bytes_per_gpu(
    model: str | ModelConfig, batch: ArrayLike, ep_width: int, activation_dtype: str = "bf16"
) -> float | FloatArray:
    """Bytes each GPU sends in one MoE layer: its ``B/G`` tokens go to k experts each
    (dispatch) and come back (combine), ``2 (B/G) k D`` activations. Summed over the group
    that is the ``2 B k D`` bytes of the reference formula."""
    spec = _moe_model(model)
    G = int(ep_width)
    B = as_floats(batch)
    one_way = B / G * spec.experts_per_token * spec.d_model * bytes_per_element(activation_dtype)
    return as_output(2.0 * one_way)


@contract(chip=DOMAIN, where=_experts_divide)
def expert_parallel_step(
    model: str | ModelConfig,
    batch: ArrayLike,
    ep_width: int,
    chip: str | Chip | ScaleUpDomain,
    *,
    activation_dtype: str = "bf16",
    compute_dtype: str = "bf16",
    weight_dtype: str | None = None,
    flops_efficiency: ArrayLike = 1.0,
    bandwidth_efficiency: ArrayLike = 1.0,
    network_efficiency: ArrayLike = 1.0,
) -> ExpertLayerStep:
    """Floors of one MoE layer when ``batch`` tokens per step are spread over ``ep_width``
    GPUs, each holding ``E/G`` routed experts (plus a copy of the shared ones).

    * compute: the ``B k / G`` token-experts a GPU receives, ``2 x 3DF_e`` FLOPs each, plus
      its ``B/G`` tokens through the shared experts;
    * weight read: its experts that some token is routed to, ``touched(B) / G``, plus the
      shared ones;
    * all-to-all: dispatch and combine, each :func:`llmmath.core.collectives.all_to_all_time_s`
      of ``(B/G) k D`` activations: scale-up links inside one domain, and the slower
      scale-out NICs for the share that crosses to another domain.
    """
    spec = _moe_model(model)
    G = int(ep_width)
    chip_spec = get_domain(chip).chip
    weights = weight_dtype or compute_dtype
    B = as_floats(batch)
    E, k, s = spec.n_experts, spec.experts_per_token, spec.n_shared_experts
    per_expert = float(spec.mlp_params_per_expert)
    flops = 2.0 * per_expert * (B * k + B * s) / G
    experts_read = np.asarray(expected_experts_touched(B, E, k)) / G + s
    step = roofline_time(
        flops,
        experts_read * per_expert * bytes_per_element(weights),
        chip_spec,
        compute_dtype,
        flops_efficiency=flops_efficiency,
        bandwidth_efficiency=bandwidth_efficiency,
    )
    sent = np.asarray(all_to_all_bytes_per_gpu(spec, B, G, activation_dtype))
    network = as_floats(network_efficiency)
    dispatch = np.asarray(collectives.all_to_all_time_s(sent / 2, G, chip_spec))
    combine = np.asarray(collectives.all_to_all_time_s(sent / 2, G, chip_spec))
    return ExpertLayerStep(
        compute_s=step.compute_s,
        weight_read_s=step.memory_s,
        all_to_all_s=(dispatch + combine) / network,
        all_to_all_bytes_per_gpu=sent,
        ep_width=G,
        in_one_domain=collectives.fits_in_scale_up(G, chip_spec),
    )


@contract(n_experts=Count(high=1 << 16), max_width=CHIPS)
def ep_widths(n_experts: int, max_width: int | None = None) -> list[int]:
    """Every expert-parallel width that splits ``n_experts`` evenly: its divisors."""
    E = int(n_experts)
    top = E if max_width is None else min(E, int(max_width))
    return [G for G in range(1, top + 1) if E % G == 0]


@contract(n_experts=Count(high=1 << 16), chip=DOMAIN)
def max_ep_width(n_experts: int, chip: str | Chip | ScaleUpDomain) -> int:
    """The widest even split of ``n_experts`` that stays inside one scale-up domain."""
    return ep_widths(n_experts, get_domain(chip).n_chips)[-1]


@contract(n_experts=Count(high=1 << 16), chip=DOMAIN)
def copies_to_fill(n_experts: int, chip: str | Chip | ScaleUpDomain) -> int:
    """The fewest redundant expert copies that let ``n_experts`` split evenly over every GPU
    of one scale-up domain: ``r >= 0`` with ``(n_experts + r)`` a multiple of its GPUs (256
    experts + 32 copies = 288 = 72 x 4 on an NVL72 rack). Serving systems place copies of hot
    experts anyway (DeepSeek: 32 on EP144), so the domain's full width is usable."""
    return fewest_redundant_experts(n_experts, get_domain(chip).n_chips)


# ---- attention beside wide EP: DP-attention against TP-attention ----------------------------
@dataclass(frozen=True)
@checked(
    **each(RESULT, "weight_bytes_per_gpu sequences_per_gpu group_batch"),
    attention_tp=CHIPS,
    **each(SCALAR_POSITIVE, "kv_copies expert_bound_batch"),
)
class AttentionBesideEP:
    """How an expert-parallel group of ``ep_width`` GPUs runs attention, at one context.

    The experts are split over all ``ep_width`` GPUs either way. Attention runs as
    ``ep_width / attention_tp`` replicas, each over ``attention_tp`` GPUs: ``attention_tp = 1``
    is DP-attention (SGLang's ``--enable-dp-attention``: every GPU attends for its own
    sequences and holds their whole KV cache), ``attention_tp > 1`` splits each replica's
    heads. A replica holds the non-expert weights once, split ``attention_tp`` ways, and each
    cached token ``kv_copies`` times (``attention_tp / min(attention_tp, K)``; every TP rank
    needs MLA's one latent, so ``attention_tp`` copies)."""

    ep_width: int
    attention_tp: int
    kv_copies: float
    weight_bytes_per_gpu: FloatArray
    #: Sequences of ``context`` tokens whose caches fit beside the weights, per GPU.
    sequences_per_gpu: FloatArray
    #: The same for the whole group: a decode step's token batch, one token per sequence.
    group_batch: FloatArray
    #: Tokens a step needs for the experts to turn compute-bound
    #: (:func:`compute_bound_batch`, ``scope="expert_layer"``).
    expert_bound_batch: float

    @property
    def pays(self) -> FloatArray:
        """True where the group holds enough sequences for its experts to be compute-bound."""
        return np.asarray(self.group_batch >= self.expert_bound_batch)


def _ep_and_attention_divide(
    model: str | ModelConfig, ep_width: int, attention_tp: int = 1
) -> str | None:
    """The experts split evenly over the group, and the group into whole attention replicas."""
    if int(ep_width) % int(attention_tp):
        return (
            f"attention_tp={attention_tp} must divide ep_width={ep_width}: the group runs "
            "whole attention replicas"
        )
    return _experts_divide(model, ep_width)


@contract(
    chip=DOMAIN,
    context=AMOUNT,
    attention_tp=CHIPS,
    **each(DTYPE, "weight_dtype kv_dtype compute_dtype"),
    where=_ep_and_attention_divide,
)
def attention_beside_ep(
    model: str | ModelConfig,
    chip: str | Chip | ScaleUpDomain,
    ep_width: int,
    context: ArrayLike,
    *,
    attention_tp: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    compute_dtype: str = "bf16",
) -> AttentionBesideEP:
    """Per-GPU KV capacity of an EP group of ``ep_width`` GPUs, and whether it holds the batch
    that makes its experts pay, with attention DP (``attention_tp=1``) or TP across the group.

    The memory is :class:`~llmmath.core.deployment.Deployment`'s with the layout
    ``tp{attention_tp},ep{ep_width / attention_tp}`` on ``ep_width`` chips (experts over all
    of them, the rest of the weights per attention replica), and the capacity
    :func:`llmmath.core.capacity.max_batch`'s: one count with the rest of the course. The
    batch that pays is :func:`compute_bound_batch` of one expert layer, the whole group's
    tokens a step."""
    from llmmath.core.capacity import max_batch  # the serving model sits above this module
    from llmmath.core.deployment import Deployment
    from llmmath.core.placement import Layout

    spec, domain = _moe_model(model), get_domain(chip)
    G, t = int(ep_width), int(attention_tp)
    dep = Deployment(
        spec,
        domain.chip,
        G,
        Layout.for_cluster(G, tp=t, ep=G // t),
        compute_dtype=compute_dtype,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
    )
    batch = np.floor(np.asarray(max_batch(dep, context), dtype=float))
    return AttentionBesideEP(
        ep_width=G,
        attention_tp=t,
        kv_copies=float(dep.kv_copies),
        weight_bytes_per_gpu=np.asarray(dep.weight_bytes_per_chip),
        sequences_per_gpu=batch / G,
        group_batch=batch,
        expert_bound_batch=compute_bound_batch(
            spec, domain, "expert_layer", compute_dtype, weight_dtype
        ),
    )


# ---- what fits in a rack (the domains themselves: llmmath.core.racks) ---------------------------
@contract(domain=DOMAIN, moe_layers_per_domain=Count())
def max_expert_layer_params(
    domain: str | Chip | ScaleUpDomain,
    weight_dtype: str = "bf16",
    *,
    moe_layers_per_domain: int = 1,
    memory_fraction: ArrayLike = 1.0,
) -> float | FloatArray:
    """Largest expert layer (the weights of all its experts) one scale-up domain can hold when
    it holds ``moe_layers_per_domain`` such layers in ``memory_fraction`` of its HBM (the rest
    is for the KV cache and activations): ``n HBM fraction / (layers bytes_per_weight)``.
    With one layer per domain (the other layers on other racks, as pipeline stages) this is
    the hard ceiling on an expert layer whose all-to-all stays inside the domain."""
    spec = get_domain(domain)
    layers = int(moe_layers_per_domain)
    usable = spec.hbm_bytes * as_floats(memory_fraction)
    return as_output(usable / (layers * bytes_per_element(weight_dtype)))


@contract()
def expert_layer_params(model: str | ModelConfig) -> int:
    """Weights of one MoE layer's experts, routed and shared: ``(E + shared) 3 D F_e``."""
    spec = _moe_model(model)
    return (spec.n_experts + spec.n_shared_experts) * spec.mlp_params_per_expert


@contract(where=_experts_divide)
def expert_bytes_per_gpu(
    model: str | ModelConfig, ep_width: int, weight_dtype: str = "bf16"
) -> float:
    """HBM each GPU of an expert-parallel group needs for the experts of every MoE layer:
    ``L_moe (E/G + shared) 3 D F_e`` weights (attention and the KV cache come on top)."""
    spec = _moe_model(model)
    G = int(ep_width)
    experts_held = spec.n_experts / G + spec.n_shared_experts
    weights = spec.n_moe_layers * experts_held * spec.mlp_params_per_expert
    return weights * bytes_per_element(weight_dtype)


@contract(domain=DOMAIN, memory_fraction=SCALAR_FRACTION)
def fits_in_domain(
    model: str | ModelConfig,
    domain: str | Chip | ScaleUpDomain,
    weight_dtype: str = "bf16",
    memory_fraction: float = 1.0,
) -> bool:
    """True if every weight of ``model`` fits in ``memory_fraction`` of one domain's HBM."""
    usable = get_domain(domain).hbm_bytes * float(memory_fraction)
    return bool(get_model(model).weight_bytes(weight_dtype) <= usable)


# ---- helpers --------------------------------------------------------------------------------
def _moe_model(model: str | ModelConfig) -> ModelConfig:
    spec = get_model(model)
    if not spec.is_moe:
        raise ValueError(f"model {spec.name!r} is dense (n_experts=0); this needs an MoE model")
    return spec


def _root(excess: Callable[[FloatArray], FloatArray], low: float, high: float) -> float:
    """Where an increasing ``excess(B)`` crosses zero, by bisection in log B."""
    if float(excess(np.asarray(high))) < 0:
        raise RuntimeError(f"no crossing below a batch of {high:g}: widen the search")
    lo, hi = np.log(low), np.log(high)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if float(excess(np.asarray(np.exp(mid)))) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return float(np.exp(0.5 * (lo + hi)))


# ---- curves the figures draw ----------------------------------------------------------------
@dataclass(frozen=True)
@checked(**each(RESULT, "width compute_s weight_read_s all_to_all_s lower_s"))
class EPWidthCurves:
    """One MoE layer's floors per GPU against the expert-parallel width, at one batch."""

    width: FloatArray
    compute_s: FloatArray
    weight_read_s: FloatArray
    all_to_all_s: FloatArray
    lower_s: FloatArray


@contract(chip=DOMAIN, batch=SCALAR_POSITIVE, widths=SequenceOf(CHIPS))
def ep_width_curves(
    model: str | ModelConfig,
    batch: float,
    chip: str | Chip | ScaleUpDomain,
    widths: list[int],
    *,
    activation_dtype: str = "bf16",
    weight_dtype: str | None = None,
) -> EPWidthCurves:
    """:func:`expert_parallel_step` of ``batch`` tokens at each EP width in ``widths``."""
    steps = [
        expert_parallel_step(
            model, batch, G, chip, activation_dtype=activation_dtype, weight_dtype=weight_dtype
        )
        for G in widths
    ]

    def part(name: str) -> FloatArray:
        return np.array([float(getattr(step, name)) for step in steps])

    return EPWidthCurves(
        width=np.asarray(widths, dtype=float),
        compute_s=part("compute_s"),
        weight_read_s=part("weight_read_s"),
        all_to_all_s=part("all_to_all_s"),
        lower_s=part("lower_s"),
    )


__all__ = [
    "DOMAIN_PRESETS",
    "EP_WIDTH_RULES",
    "LECTURE_SPARSITY",
    "SPARSITY_DEFINITIONS",
    "AttentionBesideEP",
    "EPWidthCurves",
    "ExpertLayerStep",
    "MoEParams",
    "ScaleUpDomain",
    "all_to_all_bytes_per_gpu",
    "attention_beside_ep",
    "compute_bound_batch",
    "compute_bound_batch_rule",
    "copies_to_fill",
    "ep_width_curves",
    "ep_widths",
    "expected_experts_touched",
    "expert_bytes_per_gpu",
    "expert_layer_params",
    "expert_parallel_step",
    "fits_in_domain",
    "flops_per_token",
    "get_domain",
    "list_domains",
    "max_ep_width",
    "max_expert_layer_params",
    "param_counts",
    "sparsity",
    "weight_bytes_read",
    "weight_params_read",
    "with_experts",
]

"""A model deployed on some chips: what each chip holds, and its share of a step's work.

:class:`Deployment` is the one description of "this model, on these chips, split this way,
at these prices and efficiencies" that every chapter builds; :mod:`llmmath.core.serving` times a
decode step and a prefill on it. Without a layout the weights and KV caches are spread evenly
(an ideal split, no traffic between chips); with a :class:`~llmmath.core.placement.Layout` each chip
holds its shard and the step pays the layout's collectives.

>>> from llmmath.core.deployment import Deployment
>>> llama = Deployment("Llama-3-70B", "H100", 8)
>>> round(llama.weight_bytes_per_chip / 1e9, 1)
17.6
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmmath.core import collectives
from llmmath.core._checks import FloatArray
from llmmath.core._constraints import Count, Instance, OneOf, Optional, Real
from llmmath.core.chip_prices import price_or_example
from llmmath.core.contracts import (
    RESULT,
    SCALAR,
    SCALAR_FRACTION,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
    vocabulary,
)
from llmmath.core.dtypes import DTYPE, WeightFormat, bytes_per_element
from llmmath.core.expert_dispatch import node_limited_all_to_all
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, check_context, get_model, weight_params_read
from llmmath.core.placement import (
    DoesNotFitError,
    Layout,
    expert_params,
    groups,
    kv_shards,
    layers_per_stage,
    params_per_gpu,
)


# ---- a model on some chips ------------------------------------------------------------------
@dataclass(frozen=True)
@checked(
    inside=True,
    flops_efficiency=SCALAR_FRACTION,
    bandwidth_efficiency=SCALAR_FRACTION,
    usd_per_chip_hour=Optional(SCALAR_POSITIVE),
    hbm_utilization=SCALAR_FRACTION,
    reserve_bytes_per_chip=Real(low_open=False, scalar=True),
    weight_format=Optional(Instance(WeightFormat)),
    attention_dtype=Optional(DTYPE),
    expert_dispatch=OneOf(("per_expert", "node_limited")),
    dispatch_dtype=Optional(DTYPE),
)
class Deployment:
    """``model`` served on ``n_chips`` chips of one kind.

    Without a ``layout`` the weights and KV caches are spread evenly over the chips and no
    traffic between them is counted (an ideal split). With a ``layout`` (whose
    ``dp * tp * pp * ep`` must equal ``n_chips``) each chip holds its shard, DP replicas hold
    copies, and decode and prefill pay the layout's collectives. ``usd_per_chip_hour``
    defaults to the chip's example price. Raises :class:`DoesNotFitError`, saying how many
    bytes are missing, when the weights alone do not fit, unless ``allow_overflow`` (a
    what-if, such as the roofline chapter's 70B model on one chip: its steps say ``fits``
    False).

    ``weight_format`` holds each part of the weights in its own format (a quantized
    checkpoint's experts in MXFP4 beside bf16 attention, say); without one every weight is in
    ``weight_dtype``. ``attention_dtype`` is the format attention's QK^T and AV compute in;
    without one, ``compute_dtype`` (the matmuls'). ``hbm_utilization`` (the share of each
    chip's HBM the deployment may fill, as vLLM's ``gpu_memory_utilization``) and
    ``reserve_bytes_per_chip`` (activations, CUDA graphs, the runtime) shrink the HBM that
    weights and KV caches share: :attr:`usable_hbm_bytes_per_chip`. By default every byte.
    """

    model: ModelConfig
    chip: Chip
    n_chips: int = 1
    layout: Layout | None = None
    compute_dtype: str = "bf16"
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    activation_dtype: str = "bf16"
    flops_efficiency: float = 1.0
    bandwidth_efficiency: float = 1.0
    usd_per_chip_hour: float | None = None
    allow_overflow: bool = False
    weight_format: WeightFormat | None = None
    attention_dtype: str | None = None
    hbm_utilization: float = 1.0
    reserve_bytes_per_chip: float = 0.0
    #: How an EP layout's all-to-all carries a token to its experts: ``"per_expert"``, one copy
    #: per routed expert (the default), or ``"node_limited"``, one copy per scale-up domain it
    #: reaches, forwarded over NVLink inside it, at most as many domains as the model's
    #: group-limited routing allows (DeepSeek-V3;
    #: :func:`llmmath.core.expert_dispatch.node_limited_all_to_all`). ``dispatch_dtype``: the
    #: format tokens are sent to their experts in (DeepSeek's fp8); the combine comes back in
    #: ``activation_dtype``.
    expert_dispatch: str = "per_expert"
    dispatch_dtype: str | None = None

    def __post_init__(self) -> None:
        # Each field was checked by @checked (inside a checked call too); what is left are
        # the rules across fields, and names and numbers made plain.
        object.__setattr__(self, "model", get_model(self.model))
        object.__setattr__(self, "chip", get_chip(self.chip))
        self.chip.peak(self.compute_dtype)  # the chip must have FLOPs in this dtype
        self.chip.peak(self.attention_compute_dtype)
        for knob in ("flops_efficiency", "bandwidth_efficiency", "hbm_utilization"):
            object.__setattr__(self, knob, float(getattr(self, knob)))
        if self.usd_per_chip_hour is not None:
            object.__setattr__(self, "usd_per_chip_hour", float(self.usd_per_chip_hour))
        if self.usable_hbm_bytes_per_chip <= 0:
            raise ValueError(
                f"reserve_bytes_per_chip={self.reserve_bytes_per_chip:.4g} leaves no HBM of "
                f"{self.chip.name}'s {self.chip.hbm_bytes:.4g} B at hbm_utilization="
                f"{self.hbm_utilization:g}"
            )
        self._check_layout()
        if not self.allow_overflow:
            self._check_weights_fit()

    def _check_layout(self) -> None:
        if self.layout is None:
            return
        layout = self.layout
        if layout.n_gpus != self.n_chips:
            raise ValueError(
                f"the layout {layout} uses dp*tp*pp*ep = {layout.dp}*{layout.tp}*{layout.pp}*"
                f"{layout.ep} = {layout.n_gpus} GPUs but the deployment has n_chips="
                f"{self.n_chips}"
            )
        layout.validate(self.model)
        if self.layout.zero_stage:
            raise ValueError(
                f"zero_stage={self.layout.zero_stage} shards training state; a serving layout "
                "has zero_stage=0"
            )

    def _check_weights_fit(self) -> None:
        missing = self.n_chips * (self.weight_bytes_per_chip - self.usable_hbm_bytes_per_chip)
        if missing <= 0:
            return
        if self.layout is None:
            need = math.ceil(self.weight_bytes / self.usable_hbm_bytes_per_chip)
            raise DoesNotFitError(
                f"{self.model.name} weights in {self.weight_dtype} need "
                f"{self.weight_bytes:.4g} B but {self._where} hold {self.hbm_bytes:.4g} B: "
                f"{missing:.4g} B missing; use n_chips >= {need} or smaller weights",
                missing,
            )
        hint = "use more tensor, pipeline or expert parallelism, or smaller weights"
        raise DoesNotFitError(
            f"{self.model.name} weights in {self.weight_dtype} need "
            f"{self.weight_bytes_per_chip:.4g} B per chip on {self._where} but one "
            f"{self.chip.name} holds {self.usable_hbm_bytes_per_chip:.4g} B: "
            f"{missing:.4g} B missing "
            f"in all; {hint}",
            missing,
        )

    @property
    def _where(self) -> str:
        layout = f" ({self.layout})" if self.layout is not None else ""
        return f"{self.n_chips} x {self.chip.name}{layout}"

    @property
    def label(self) -> str:
        layout = f", {self.layout}" if self.layout is not None else ""
        return f"{self.model.name} on {self.n_chips}×{self.chip.name}{layout}"

    @property
    def weight_bytes(self) -> float:
        """Every weight once, as stored (the input embedding too: it is read by lookup only)."""
        if self.weight_format is None:
            return self.model.weight_bytes(self.weight_dtype)
        dense, experts = self._part_bytes()
        return dense + experts

    def _part_bytes(self) -> tuple[float, float]:
        """Bytes of the weights every chip of a model-parallel group shares out (attention,
        embeddings, dense MLPs), and of the routed experts, under :attr:`weight_format`."""
        model, fmt = self.model, self.weight_format
        assert fmt is not None
        experts = expert_params(model)
        rest = model.total_params - experts - model.attention_params - model.embedding_params
        dense = (
            model.embedding_params * fmt.embeddings
            + model.attention_params * fmt.attention
            + rest * fmt.mlp
        )
        return dense, experts * fmt.experts

    @property
    def attention_compute_dtype(self) -> str:
        """The format attention computes in: ``attention_dtype``, else ``compute_dtype``."""
        return self.attention_dtype or self.compute_dtype

    @property
    def weight_bytes_per_chip(self) -> float:
        """Weights each chip holds: ``1/n`` of them, or its shard under the layout."""
        if self.layout is None:
            return self.weight_bytes / self.n_chips
        if self.weight_format is not None:
            dense, experts = self._part_bytes()
            split = self.layout.tp * self.layout.pp
            return dense / split + experts / (split * self.layout.ep)
        return params_per_gpu(self.model, self.layout) * bytes_per_element(self.weight_dtype)

    @property
    def usable_hbm_bytes_per_chip(self) -> float:
        """HBM weights and KV caches may fill on one chip: ``HBM u - reserve``."""
        if self.hbm_utilization == 1.0 and not self.reserve_bytes_per_chip:
            return self.chip.hbm_bytes
        return self.chip.hbm_bytes * self.hbm_utilization - self.reserve_bytes_per_chip

    @property
    def hbm_bytes(self) -> float:
        """HBM weights and KV caches may fill on all the chips together."""
        return self.n_chips * self.usable_hbm_bytes_per_chip

    @property
    def kv_budget_bytes(self) -> float:
        """HBM left for KV caches once every chip holds its weights."""
        return self.n_chips * (self.usable_hbm_bytes_per_chip - self.weight_bytes_per_chip)

    @property
    def kv_copies(self) -> float:
        """How many times the chips hold each cached token: more than 1 when tensor
        parallelism is wider than the KV heads (each head is then replicated)."""
        if self.layout is None:
            return 1.0
        return self.layout.tp / kv_shards(self.model, self.layout.tp)

    @property
    def kv_bytes_held_per_token(self) -> float:
        """HBM one cached token of one sequence of the batch costs the deployment: the KV
        bytes times :attr:`kv_copies`, times ``pp`` because a pipeline keeps ``pp`` batches
        in flight (each stage holds its layers' cache for all of them, as
        :func:`~llmmath.core.placement.serving_memory` counts)."""
        pp = self.layout.pp if self.layout is not None else 1
        return self.model.kv_bytes_per_token(self.kv_dtype) * self.kv_copies * pp

    @contract(context=Real(low_open=False, ndarray=True))
    def kv_window_share(self, context: FloatArray) -> FloatArray:
        """The share of the full-attention KV count (:attr:`kv_bytes_held_per_token`) the cache
        holds at ``context`` tokens: 1 without sliding-window layers, less past the window
        (each such layer holds ``min(T, window)`` tokens); a hybrid's constant state adds
        ``state / (T kv)`` (:meth:`~llmmath.core.models.ModelConfig.kv_bytes_per_token`)."""
        if not (self.model.sliding_window or self.model.n_state_layers):
            return np.ones_like(context, dtype=np.float64)
        exact = np.asarray(self.model.kv_bytes_per_token(self.kv_dtype, context))
        return exact / self.model.kv_bytes_per_token(self.kv_dtype)

    @contract(batch=Real(low_open=False, ndarray=True), context=Real(low_open=False, ndarray=True))
    def kv_bytes_held(self, batch: FloatArray, context: FloatArray) -> FloatArray:
        """HBM the KV caches of ``batch`` sequences of ``context`` cached tokens take on the
        deployment: ``B T kv_held share(T)``, window-exact. The one count both the capacity
        check of a step (:func:`check_capacity`) and the most that fit
        (:func:`llmmath.core.capacity.max_batch`) compare with :attr:`kv_budget_bytes`."""
        B, T = np.asarray(batch, dtype=np.float64), np.asarray(context, dtype=np.float64)
        return np.asarray(B * T * self.kv_bytes_held_per_token * self.kv_window_share(T))

    @property
    def dispatch_words(self) -> str:
        """How the EP all-to-all is counted, in words (the setting's line and the CLI)."""
        return dispatch_words(
            self.model, self.expert_dispatch, self.dispatch_dtype, self.activation_dtype
        )

    @property
    def peak_flop_per_s(self) -> float:
        """Datasheet dense peak of all the chips together (for MFU)."""
        return self.n_chips * self.chip.peak(self.compute_dtype)

    @property
    def peak_bytes_per_s(self) -> float:
        """Datasheet HBM bandwidth of all the chips together (for MBU)."""
        return self.n_chips * self.chip.hbm_bandwidth_bytes_per_s

    @property
    def chip_hour_usd(self) -> float:
        """The price of one chip-hour: ``usd_per_chip_hour``, else the chip's example price."""
        return price_or_example(self.chip, self.usd_per_chip_hour)


#: A deployment parameter (the common test's example: Llama-3-8B on one H100).
DEPLOYMENT = Instance(
    Deployment, example=lambda: Deployment(get_model("Llama-3-8B"), get_chip("H100"))
)
vocabulary(deployment=DEPLOYMENT, dep=DEPLOYMENT)


@contract(infinite_ok=True, tokens=Real(low_open=False, ndarray=True))
def most_sequences(dep: Deployment, tokens: FloatArray) -> FloatArray:
    """The largest whole batch of ``tokens``-token sequences whose caches
    (:meth:`Deployment.kv_bytes_held`) fit in :attr:`Deployment.kv_budget_bytes`: ``floor(budget
    / (T kv_held share))``, then moved by one where rounding puts the product on the other side
    of the budget, so that exactly the batches up to it pass :func:`check_capacity` (infinite
    at 0 tokens)."""
    T = np.asarray(tokens, dtype=np.float64)
    budget = dep.kv_budget_bytes
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.floor(budget / dep.kv_bytes_held(np.ones_like(T), T))
        finite = np.isfinite(room)
        room = np.where(finite & (dep.kv_bytes_held(room, T) > budget), room - 1.0, room)
        room = np.where(finite & (dep.kv_bytes_held(room + 1.0, T) <= budget), room + 1.0, room)
    return np.asarray(np.maximum(room, 0.0))


@contract(batch=Real(ndarray=True), tokens=Real(low_open=False, ndarray=True))
def check_capacity(dep: Deployment, batch: FloatArray, tokens: FloatArray) -> None:
    """Raise unless ``batch`` sequences of ``tokens`` cached tokens fit beside the weights."""
    kv = dep.kv_bytes_held(batch, tokens)  # a sliding-window layer holds at most its window
    over = kv > dep.kv_budget_bytes
    if np.any(over):
        i = np.unravel_index(np.argmax(np.where(over, kv, -1.0)), kv.shape)
        b, t, cache = float(batch[i]), float(tokens[i]), float(kv[i])
        missing = cache - dep.kv_budget_bytes
        room = int(most_sequences(dep, np.asarray(t)))
        held = dep.hbm_bytes - dep.kv_budget_bytes
        raise DoesNotFitError(
            f"{dep.model.name} at batch {b:g} and context {t:g} needs "
            f"{held + cache:.4g} B (weights {held:.4g} + KV cache "
            f"{cache:.4g}) but {dep._where} hold {dep.hbm_bytes:.4g} B: "
            f"{missing:.4g} B missing; at this context at most {room} sequences fit "
            "(or pass allow_overflow=True)",
            missing,
        )


# ---- how a step's work splits over the chips --------------------------------------------------
@dataclass(frozen=True)
@checked(**each(Count(low=0), "flops weights experts replicas"), kv_read=SCALAR)
class ChipShares:
    """Divisors that turn a whole step's work into one chip's share."""

    flops: int  # every chip does 1/n of the FLOPs
    weights: int  # the non-expert weights a chip reads: 1/(tp pp), or 1/n without a layout
    experts: int  # the routed-expert weights: a further 1/ep
    replicas: int  # attention groups the batch is split over: dp * ep
    kv_read: float  # a chip reads 1/(pp kv_shards) of its group's KV cache
    pp: int


@contract()
def chip_shares(dep: Deployment) -> ChipShares:
    if dep.layout is None:
        n = dep.n_chips
        return ChipShares(flops=n, weights=n, experts=1, replicas=1, kv_read=n, pp=1)
    layout = dep.layout
    return ChipShares(
        flops=dep.n_chips,
        weights=layout.tp * layout.pp,
        experts=layout.ep,
        replicas=layout.dp * layout.ep,
        kv_read=layout.pp * kv_shards(dep.model, layout.tp),
        pp=layout.pp,
    )


@contract(split=Instance(ChipShares), tokens=Real(low_open=False, ndarray=True))
def weight_bytes_read_per_chip(
    dep: Deployment, split: ChipShares, tokens: FloatArray
) -> FloatArray:
    """Weight bytes one chip reads for ``tokens`` tokens of its replica group: the shared
    weights once, and the routed experts (of its EP rank) that some token is routed to."""
    model = dep.model
    routed = model.n_moe_layers * model.experts_per_token * model.mlp_params_per_expert
    shared = model.matmul_params_per_token - routed
    per_group = tokens * split.experts / split.replicas  # tokens an EP group routes
    experts = np.asarray(weight_params_read(model, per_group)) - shared
    fmt = dep.weight_format
    if fmt is None:
        params = shared / split.weights + experts / (split.weights * split.experts)
        return params * bytes_per_element(dep.weight_dtype)
    unembedding = model.vocab_size * model.d_model  # read by the output layer's matmul
    mlp = shared - model.attention_params - unembedding
    shared_bytes = (
        model.attention_params * fmt.attention + unembedding * fmt.embeddings + mlp * fmt.mlp
    )
    return shared_bytes / split.weights + experts * fmt.experts / (split.weights * split.experts)


@dataclass(frozen=True)
@checked(**each(RESULT, "tp_s ep_s pp_s"))
class StepTraffic:
    tp_s: FloatArray
    ep_s: FloatArray
    pp_s: FloatArray


@contract(tokens_per_group=Real(low_open=False, ndarray=True))
def step_traffic(dep: Deployment, tokens_per_group: FloatArray) -> StepTraffic:
    """Per chip: TP all-reduces (2 a layer, 1 for a parallel block), EP all-to-alls (dispatch
    and combine per MoE layer) and the PP hop, for ``tokens_per_group`` tokens of one
    attention group."""
    zero = np.zeros_like(tokens_per_group)
    if dep.layout is None:
        return StepTraffic(zero, zero, zero)
    layout, model, chip = dep.layout, dep.model, dep.chip
    b_act = bytes_per_element(dep.activation_dtype)
    placed = groups(layout, chip)
    activations = tokens_per_group * model.d_model * b_act
    tp, ep, pp = placed["TP"], placed["EP"], placed["PP"]
    tp_s = zero
    if tp.size > 1:
        one = collectives.hierarchical_all_reduce_time_s(
            activations, tp.size, chip, per_domain=tp.per_domain
        )
        per_layer = model.tp_all_reduces_per_layer
        tp_s = per_layer * layers_per_stage(model, layout) * np.asarray(one)
    ep_s = zero
    if ep.size > 1:
        ep_s = (model.n_moe_layers / layout.pp) * _expert_all_to_all_s(dep, tokens_per_group)
    pp_s = zero
    if pp.size > 1:
        hop = collectives.point_to_point_time_s(
            activations / layout.tp, chip, across_domains=pp.crosses_domains
        )
        pp_s = np.asarray(hop)
    return StepTraffic(np.asarray(tp_s), np.asarray(ep_s), pp_s)


@contract(expert_dispatch=OneOf(("per_expert", "node_limited")), dispatch_dtype=Optional(DTYPE))
def dispatch_words(
    model: str | ModelConfig,
    expert_dispatch: str,
    dispatch_dtype: str | None,
    activation_dtype: str,
) -> str:
    """An EP all-to-all in words: one copy per routed expert or per node reached (with the
    model's group limit), and the formats it goes out and comes back in."""
    spec = get_model(model)
    dtypes = (
        f" with {dispatch_dtype} dispatch and {activation_dtype} combine"
        if dispatch_dtype not in (None, activation_dtype)
        else f" in {activation_dtype}"
    )
    if expert_dispatch == "per_expert":
        return "one copy per routed expert" + dtypes
    limit = (
        f" (experts from {spec.expert_groups_per_token} of {spec.expert_groups} groups)"
        if spec.expert_groups
        else ""
    )
    return "one copy per node reached" + limit + dtypes


@contract(domains=Count())
def routed_domain_limit(model: str | ModelConfig, domains: int) -> int | None:
    """The most scale-up domains a token's experts can lie in under ``model``'s group-limited
    routing, its expert groups spread evenly over ``domains`` (None: no limit). DeepSeek-V3's
    4 of 8 groups on 8 nodes: 4; on 2 nodes: 2 (no limit); on 16: 8."""
    model = get_model(model)
    if not model.expert_groups:
        return None
    groups, chosen = model.expert_groups, model.expert_groups_per_token
    if domains <= groups:  # whole groups in each domain: the chosen groups' domains
        return min(domains, chosen)
    return min(domains, math.ceil(chosen * domains / groups))  # each group spans domains


def _expert_all_to_all_s(dep: Deployment, tokens_per_group: FloatArray) -> FloatArray:
    """One MoE layer's dispatch and combine on one chip, for ``tokens_per_group`` tokens of
    its attention group, under the deployment's :attr:`Deployment.expert_dispatch`."""
    layout, model, chip = dep.layout, dep.model, dep.chip
    assert layout is not None
    G = layout.ep
    combine = dep.activation_dtype
    dispatch = dep.dispatch_dtype or combine
    if dep.expert_dispatch == "node_limited":
        domains = G // collectives.members_per_domain(G, chip)
        one_layer = node_limited_all_to_all(
            model,
            tokens_per_group * G / layout.tp,  # the EP group's tokens, each TP rank a share
            G,
            chip,
            max_domains=routed_domain_limit(model, domains),
            dispatch_dtype=dispatch,
            combine_dtype=combine,
        )
        return np.asarray(one_layer.all_to_all_s)
    per_domain = groups(layout, chip)["EP"].per_domain
    copies = tokens_per_group * model.d_model * model.experts_per_token / layout.tp
    return np.asarray(
        sum(
            np.asarray(
                collectives.all_to_all_time_s(
                    copies * bytes_per_element(b), G, chip, per_domain=per_domain
                )
            )
            for b in (dispatch, combine)
        )
    )


__all__ = [
    "ChipShares",
    "Deployment",
    "DoesNotFitError",
    "StepTraffic",
    "check_capacity",
    "check_context",
    "chip_shares",
    "dispatch_words",
    "most_sequences",
    "routed_domain_limit",
    "step_traffic",
    "weight_bytes_read_per_chip",
]

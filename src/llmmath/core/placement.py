"""Where a parallel layout puts the model: degrees, groups, weights per GPU, and whether it fits.

A :class:`Layout` splits ``n_gpus = dp * tp * pp * ep`` GPUs four ways (data, tensor,
pipeline, expert); :func:`groups` says which GPUs each kind talks among and over which link;
:func:`params_per_gpu` and :func:`kv_shards` say what each GPU holds. Training
(:mod:`llmmath.core.training`) and serving (:mod:`llmmath.core.serving`) both start from here.

Ranks are numbered TP innermost, then EP, PP and DP outermost, the order Llama 3 used
([TP, CP, PP, DP], arXiv 2407.21783) with EP beside TP as in DeepSeek-V3: a group whose members
all sit in one scale-up domain talks over NVLink/ICI, one that spans domains crosses the
scale-out network.

>>> from llmmath.core.placement import Layout
>>> layout = Layout(dp=64, tp=8, pp=16, embedding_as_layers=True)
>>> layout.n_gpus, str(layout)
(8192, 'TP8 PP16 DP64')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import Count, Instance, OneOf, Optional, SequenceOf
from llmmath.core.contracts import (
    CHIPS,
    FLAG,
    MAX_CHIPS,
    NAME,
    RESULT,
    checked,
    contract,
    vocabulary,
)
from llmmath.core.dtypes import bytes_per_element
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import MODEL, ModelConfig, check_context, get_model

ZERO_STAGES = (0, 1, 2, 3)
#: Innermost first: rank = t + tp * (e + ep * (s + pp * d)).
AXES = ("tp", "ep", "pp", "dp")
KINDS = ("DP", "TP", "PP", "EP")


class DoesNotFitError(ValueError):
    """Weights (and KV caches, optimizer state or activations) need more HBM than the chips
    hold; ``missing_bytes`` says how many bytes are missing. It may be left out, as in
    ``DoesNotFitError("...")``: not known, it is then NaN."""

    @contract(message=NAME, missing_bytes=RESULT)
    def __init__(self, message: str, missing_bytes: float | None = None) -> None:
        super().__init__(message)
        self.missing_bytes = float("nan") if missing_bytes is None else missing_bytes


# ---- the layout ---------------------------------------------------------------------------
@dataclass(frozen=True)
@checked(zero_stage=Count(low=0, high=3), virtual_stages=CHIPS, embedding_as_layers=FLAG)
class Layout:
    """Degrees of data, tensor, pipeline and expert parallelism, and the ZeRO stage.

    ``embedding_as_layers`` counts the embedding and the output layer as one pipeline slot
    each, as Llama 3 did to spread 126 layers over 16 stages (126 + 2 = 16 x 8).
    ``virtual_stages`` > 1 is the interleaved 1F1B schedule (Megatron): each GPU holds
    ``virtual_stages`` chunks of layers, which divides the bubble by that factor.
    """

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero_stage: int = 0
    virtual_stages: int = 1
    embedding_as_layers: bool = False

    def __post_init__(self) -> None:
        # Each field was checked by @checked; only the rule across fields is left.
        if self.dp * self.tp * self.pp * self.ep > MAX_CHIPS:
            raise ValueError(f"dp*tp*pp*ep = {self.n_gpus} GPUs; at most {MAX_CHIPS} are modelled")

    @classmethod
    @contract(n_gpus=CHIPS, zero_stage=Count(low=0, high=3), virtual_stages=CHIPS)
    def for_cluster(
        cls,
        n_gpus: int,
        *,
        tp: int = 1,
        pp: int = 1,
        ep: int = 1,
        zero_stage: int = 0,
        virtual_stages: int = 1,
        embedding_as_layers: bool = False,
    ) -> Layout:
        """The layout that fills ``n_gpus`` with the given TP, PP and EP: ``dp`` is the rest."""
        n, model_parallel = int(n_gpus), int(tp) * int(pp) * int(ep)
        if n % model_parallel:
            raise ValueError(
                f"n_gpus={n} is not divisible by tp*pp*ep = {tp}*{pp}*{ep} = {model_parallel}"
            )
        return cls(n // model_parallel, tp, pp, ep, zero_stage, virtual_stages, embedding_as_layers)

    @property
    def n_gpus(self) -> int:
        return self.dp * self.tp * self.pp * self.ep

    @contract(axis=OneOf(AXES, "axis"))
    def degree(self, axis: str) -> int:
        """The degree along ``axis`` ("tp", "ep", "pp" or "dp")."""
        return int(getattr(self, axis))

    def __str__(self) -> str:
        parts = [f"{axis.upper()}{self.degree(axis)}" for axis in ("tp", "ep", "pp", "dp")]
        text = " ".join(
            p
            for p, axis in zip(parts, ("tp", "ep", "pp", "dp"), strict=True)
            if self.degree(axis) > 1 or axis == "dp"
        )
        if self.virtual_stages > 1:
            text += f" (x{self.virtual_stages} virtual)"
        return text + (f" ZeRO-{self.zero_stage}" if self.zero_stage else "")

    @contract(n_gpus=CHIPS)
    def validate(self, model: str | ModelConfig, n_gpus: int | None = None) -> ModelConfig:
        """Check the layout against the model (and the cluster size); return the model.

        Raises a ValueError naming the degree that does not fit: heads divisible by ``tp``
        (and KV heads and ``tp`` dividing one another), layers by ``pp`` (times
        ``virtual_stages``), experts by ``ep``, and ``dp*tp*pp*ep == n_gpus``.
        """
        spec = get_model(model)
        if n_gpus is not None and self.n_gpus != n_gpus:
            raise ValueError(
                f"the layout {self} uses dp*tp*pp*ep = {self.dp}*{self.tp}*{self.pp}*{self.ep} "
                f"= {self.n_gpus} GPUs but the cluster has n_gpus={n_gpus}"
            )
        if spec.n_heads % self.tp:
            raise ValueError(
                f"tp={self.tp} does not divide {spec.name}'s n_heads={spec.n_heads}: "
                "tensor parallelism splits the attention heads"
            )
        K = spec.n_kv_heads
        if spec.attention_kind != "MLA" and K % self.tp and self.tp % K:
            raise ValueError(
                f"tp={self.tp} and {spec.name}'s n_kv_heads={K} must divide one another "
                "(each GPU holds whole KV heads, replicated when tp > n_kv_heads)"
            )
        slots = pipeline_slots(spec, self.embedding_as_layers)
        chunks = self.pp * self.virtual_stages
        if slots % chunks:
            what = "pp" if self.virtual_stages == 1 else "pp*virtual_stages"
            hint = ""
            if not self.embedding_as_layers and (spec.n_layers + 2) % chunks == 0:
                hint = (
                    f"; counting the embedding and output layers as slots "
                    f"(embedding_as_layers=True, as Llama 3 did) gives {spec.n_layers + 2}"
                )
            raise ValueError(
                f"{what}={chunks} does not divide {spec.name}'s {slots} pipeline slots "
                f"({spec.n_layers} layers){hint}"
            )
        if self.ep > 1 and not spec.is_moe:
            raise ValueError(
                f"ep={self.ep} needs a mixture-of-experts model; {spec.name} has no experts"
            )
        if spec.is_moe and spec.n_experts % self.ep:
            raise ValueError(
                f"ep={self.ep} does not divide {spec.name}'s n_experts={spec.n_experts}"
            )
        return spec


@contract(embedding_as_layers=FLAG)
def pipeline_slots(model: str | ModelConfig, embedding_as_layers: bool = False) -> int:
    """Layers to spread over the pipeline: ``L``, or ``L + 2`` with the embedding and output
    layer counted as one slot each."""
    spec = get_model(model)
    return spec.n_layers + (2 if embedding_as_layers else 0)


#: A layout parameter (the default layout is one GPU).
LAYOUT = Instance(Layout, example=Layout)
vocabulary(layout=LAYOUT)


@contract(microbatches=CHIPS)
def stage_loads(
    model: str | ModelConfig, layout: Layout, microbatches: int
) -> list[tuple[float, int]]:
    """(layers, microbatches in flight) on each pipeline stage under 1F1B: stage ``i`` holds
    ``min(pp - i, m)`` microbatches; with embedding slots the first and last hold one layer
    fewer. Equal stages repeat, so only distinct pairs are returned."""
    per_stage = pipeline_slots(model, layout.embedding_as_layers) / layout.pp
    loads = set()
    for i in range(layout.pp):
        layers = per_stage
        if layout.embedding_as_layers:
            layers -= (i == 0) + (i == layout.pp - 1)
        loads.add((max(layers, 1.0), min(layout.pp - i, microbatches)))
    return sorted(loads)


@contract()
def layers_per_stage(model: str | ModelConfig, layout: Layout) -> float:
    """Transformer layers on one pipeline stage (all its virtual chunks): ``slots / pp``.
    With embedding slots the first and last stage hold one layer fewer; this is the most."""
    spec = layout.validate(model)
    return min(pipeline_slots(spec, layout.embedding_as_layers) / layout.pp, spec.n_layers)


# ---- where each group sits ------------------------------------------------------------------
@dataclass(frozen=True)
@checked(kind=OneOf(KINDS), size=CHIPS)
class Group:
    """The GPUs one kind of parallelism talks among, and how they sit in scale-up domains."""

    kind: str
    size: int
    per_domain: int  # members that share each scale-up domain

    @property
    def n_domains(self) -> int:
        return self.size // self.per_domain

    @property
    def link(self) -> str:
        """ "none", "scale-up", "scale-out" or "scale-up + scale-out" (two-level collective)."""
        if self.size == 1:
            return "none"
        if self.n_domains == 1:
            return "scale-up"
        return "scale-out" if self.per_domain == 1 else "scale-up + scale-out"

    @property
    def crosses_domains(self) -> bool:
        return self.n_domains > 1


@contract(
    kind=OneOf(KINDS, "kind"),
    axes=SequenceOf(OneOf(AXES, "axis")),
    domain_size=CHIPS,
)
def group_through_gpu0(layout: Layout, kind: str, axes: tuple[str, ...], domain_size: int) -> Group:
    """The ``kind`` group through GPU 0 that varies ``axes`` of ``layout`` (ranks placed TP
    fastest, then EP, PP, DP); members per scale-up domain of ``domain_size`` GPUs from that
    placement. :func:`groups` gives the four usual ones; training asks for the expert DP group
    (``axes=("dp",)``) too."""
    strides = {"tp": 1}
    strides["ep"] = layout.tp
    strides["pp"] = layout.tp * layout.ep
    strides["dp"] = layout.tp * layout.ep * layout.pp
    ranks = np.zeros(1, dtype=np.int64)
    for axis in axes:
        offsets = np.arange(getattr(layout, axis), dtype=np.int64) * strides[axis]
        ranks = (ranks[:, None] + offsets[None, :]).ravel()
    size = int(ranks.size)
    n_domains = int(np.unique(ranks // domain_size).size)
    per_domain = size // n_domains if size % n_domains == 0 else 1
    return Group(kind, size, per_domain)


@contract()
def groups(layout: Layout, chip: str | Chip) -> dict[str, Group]:
    """The DP, TP, PP and EP groups of ``layout`` on ``chip``'s scale-up domains.

    DP is the group that all-reduces the dense (non-expert) gradients: ``dp * ep`` GPUs.
    """
    domain = get_chip(chip).scale_up_domain_size
    return {
        "DP": group_through_gpu0(layout, "DP", ("ep", "dp"), domain),
        "TP": group_through_gpu0(layout, "TP", ("tp",), domain),
        "PP": group_through_gpu0(layout, "PP", ("pp",), domain),
        "EP": group_through_gpu0(layout, "EP", ("ep",), domain),
    }


# ---- parameters split by how they shard ------------------------------------------------------
@contract()
def expert_params(model: str | ModelConfig) -> int:
    """Routed-expert weights (sharded by EP): ``L_moe * E * 3 D F_expert``; 0 for dense."""
    spec = get_model(model)
    return spec.n_moe_layers * spec.n_experts * spec.mlp_params_per_expert


@contract()
def dense_params(model: str | ModelConfig) -> int:
    """Every other weight (attention, dense and shared MLPs, router, embeddings, norms)."""
    spec = get_model(model)
    return spec.total_params - expert_params(spec)


@contract()
def params_per_gpu(model: str | ModelConfig, layout: Layout) -> float:
    """Weights each GPU holds before ZeRO sharding: ``P_dense / (tp pp) + P_exp / (tp pp ep)``."""
    spec = layout.validate(model)
    split = layout.tp * layout.pp
    return dense_params(spec) / split + expert_params(spec) / (split * layout.ep)


# ---- does it fit ---------------------------------------------------------------------------------
@dataclass(frozen=True)
@checked()
class MemoryPerGpu:
    """What both memory records share (:class:`ServingMemory`, and
    :class:`~llmmath.core.training_memory.TrainingMemory`): their bytes per GPU against a
    chip's HBM. A subclass gives ``total_bytes`` and ``parts``."""

    @property
    def total_bytes(self) -> FloatArray:
        raise NotImplementedError

    @contract()
    def headroom_bytes(self, chip: str | Chip) -> float | FloatArray:
        """HBM left over per GPU; negative when the layout does not fit."""
        return as_output(get_chip(chip).hbm_bytes - np.asarray(self.total_bytes, dtype=float))

    @contract()
    def fits(self, chip: str | Chip) -> bool | np.ndarray:
        """True where the memory per GPU is at most the chip's HBM."""
        ok = np.asarray(self.headroom_bytes(chip)) >= 0
        return bool(ok) if ok.ndim == 0 else ok

    @contract(what=NAME)
    def require_fit(self, chip: str | Chip, what: str = "the layout") -> None:
        """Raise :class:`DoesNotFitError` saying by how much, per GPU, the memory is over."""
        spec = get_chip(chip)
        total = np.asarray(self.total_bytes, dtype=float)
        worst = float(total.max()) if total.size else 0.0  # nothing to hold: it fits
        if worst <= spec.hbm_bytes:
            return
        parts = ", ".join(
            f"{name} {_gb(float(np.asarray(value).max()))}" for name, value in self.parts().items()
        )
        over = worst - spec.hbm_bytes
        raise DoesNotFitError(
            f"{what} needs {_gb(worst)} GB per GPU ({parts}, in GB) but one {spec.name} holds "
            f"{_gb(spec.hbm_bytes)} GB: {_gb(over)} GB ({100 * over / spec.hbm_bytes:,.0f}%) "
            "too much",
            over,
        )

    def parts(self) -> dict[str, FloatArray]:
        raise NotImplementedError


@contract()
def kv_shards(model: str | ModelConfig, tp: int) -> int:
    """How many ways TP splits the KV cache: ``min(tp, K)`` KV heads (beyond ``K`` each head is
    replicated); 1 for MLA, whose one latent per token every TP rank needs."""
    spec = get_model(model)
    if spec.attention_kind == "MLA":
        return 1
    return min(int(tp), spec.n_kv_heads)


def _gb(value: float) -> str:
    """Bytes as GB for a message: three significant figures, thousands separated."""
    gb = value / 1e9
    return f"{gb:,.0f}" if abs(gb) >= 100 else f"{gb:.3g}"


# ---- serving memory ---------------------------------------------------------------------------
@dataclass(frozen=True)
@checked(weights_bytes=RESULT, kv_bytes=RESULT)
class ServingMemory(MemoryPerGpu):
    """Bytes per GPU while serving: the weights and the KV cache of the sequences in flight."""

    weights_bytes: FloatArray
    kv_bytes: FloatArray

    @property
    def total_bytes(self) -> FloatArray:
        return self.weights_bytes + self.kv_bytes

    def parts(self) -> dict[str, FloatArray]:
        return {"weights": self.weights_bytes, "KV cache": self.kv_bytes}


@contract(microbatches_in_flight=Optional(CHIPS))
def serving_memory(
    model: str | ModelConfig,
    layout: Layout,
    batch: ArrayLike,
    context: ArrayLike,
    *,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    microbatches_in_flight: int | None = None,
) -> ServingMemory:
    """Weights and KV cache per GPU for decode steps of ``batch`` sequences of ``context``.

    ``batch`` is what each decode step processes (the batch that shares one read of the
    weights); a pipeline needs ``pp`` such microbatches in flight to keep every stage busy
    (the default). Each stage holds ``1/pp`` of the layers for all ``pp * batch`` sequences,
    so its KV cache is ``batch * context * kv_per_token`` — the same as one GPU holding every
    layer: PP does not shrink it. TP splits the KV heads, so it divides the cache by
    :func:`kv_shards`. Expert parallelism splits the experts; each EP rank serves its own
    ``batch`` through attention. DP replicas each hold a copy.
    """
    spec = layout.validate(model)
    if layout.zero_stage:
        raise ValueError(
            f"zero_stage={layout.zero_stage} shards training state; a serving layout has "
            "zero_stage=0"
        )
    B, T = as_floats(batch), check_context(spec, context)
    flight = int(layout.pp if microbatches_in_flight is None else microbatches_in_flight)
    weights = params_per_gpu(spec, layout) * bytes_per_element(weight_dtype)
    kv_per_sequence_token = (
        spec.kv_bytes_per_token(kv_dtype) / layout.pp / kv_shards(spec, layout.tp)
    )
    kv = flight * B * T * kv_per_sequence_token
    return ServingMemory(
        weights_bytes=np.broadcast_to(np.float64(weights), np.shape(kv)).astype(float),
        kv_bytes=np.asarray(kv, dtype=float),
    )


@contract(infinite_ok=True)
def max_decode_batch(
    model: str | ModelConfig,
    layout: Layout,
    chip: str | Chip,
    context: ArrayLike,
    *,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
) -> float | FloatArray:
    """Largest ``batch`` per decode step whose weights and KV cache fit in HBM (0 if even the
    weights do not): ``floor((HBM - weights) / KV per sequence)``."""
    spec = get_chip(chip)
    one = serving_memory(model, layout, 1.0, context, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    room = spec.hbm_bytes - one.weights_bytes
    per_sequence = np.asarray(one.kv_bytes, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 where no KV: np.inf
        batch = np.where(per_sequence > 0, np.floor(np.maximum(room, 0) / per_sequence), np.inf)
    return as_output(np.asarray(batch, dtype=float))


#: Copies of hot experts placed beside a layer's experts (0: none), at most one a GPU's worth.
REDUNDANT = Count(low=0, high=MAX_CHIPS)


@contract(n_experts=Count(high=1 << 16), ep=CHIPS)  # a layer's experts, as everywhere
def fewest_redundant_experts(n_experts: int, ep: int) -> int:
    """The fewest redundant expert copies ``r >= 0`` that let ``n_experts + r`` split evenly
    over ``ep`` GPUs: 256 experts + 32 copies = 288 = 72 x 4 on an NVL72 rack. Serving systems
    place copies of hot experts anyway (DeepSeek: 32 on EP144, EPLB)."""
    return (-int(n_experts)) % int(ep)


@contract(model=MODEL, ep=CHIPS, redundant=Optional(REDUNDANT))
def with_redundant_experts(
    model: str | ModelConfig, ep: int, redundant: int | None = None
) -> ModelConfig:
    """``model`` placed over an expert-parallel group of ``ep`` GPUs with ``redundant`` copies
    beside its experts (default: :func:`fewest_redundant_experts`), as EPLB places copies of hot
    experts; the copies count as experts (weights, a router column each). Unchanged with no
    copies. ``ValueError`` where the experts and copies do not split evenly over ``ep``."""
    spec = get_model(model)
    experts = spec.n_experts
    extra = fewest_redundant_experts(experts, ep) if redundant is None else redundant
    if (experts + extra) % ep:
        raise ValueError(
            f"placement.with_redundant_experts(): redundant: {experts} + {extra} experts do not "
            f"split evenly over ep{ep}; {fewest_redundant_experts(experts, ep)} (plus any "
            f"multiple of {ep}) would"
        )
    if extra == 0:
        return spec
    name = f"{spec.name} +{extra} redundant experts"
    return dataclasses.replace(spec, n_experts=experts + extra, name=name)


__all__ = [
    "AXES",
    "KINDS",
    "REDUNDANT",
    "ZERO_STAGES",
    "DoesNotFitError",
    "Group",
    "Layout",
    "MemoryPerGpu",
    "ServingMemory",
    "dense_params",
    "expert_params",
    "fewest_redundant_experts",
    "group_through_gpu0",
    "groups",
    "kv_shards",
    "layers_per_stage",
    "max_decode_batch",
    "params_per_gpu",
    "pipeline_slots",
    "serving_memory",
    "stage_loads",
    "with_redundant_experts",
]

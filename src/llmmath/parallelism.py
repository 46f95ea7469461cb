"""Parallelism for training and serving: data (with ZeRO / FSDP), tensor, pipeline and expert.

A :class:`Layout` splits ``n_gpus = dp * tp * pp * ep`` GPUs four ways:

* **DP** (data): each replica sees a slice of the batch; gradients are all-reduced once per
  step. ZeRO stage 1 / 2 / 3 shards optimizer state / + gradients / + weights over the DP
  group (stage 3 is FSDP), at the price of all-gathering the weights for every microbatch.
* **TP** (tensor, Megatron with sequence parallelism): every matrix is split across ``tp``
  GPUs; each layer all-reduces its activations twice forward and twice backward.
* **PP** (pipeline): ``pp`` stages of consecutive layers; only activations (forward) and their
  gradients (backward) cross a stage boundary, point to point; idle time is the bubble.
* **EP** (expert): each GPU of an EP group holds ``E / ep`` experts of every MoE layer and
  the tokens travel to their experts and back in all-to-alls. For the attention and dense
  parts the EP ranks are extra data-parallel replicas (the DeepSpeed-MoE convention), so the
  batch is split over ``dp * ep``.

Ranks are numbered TP innermost, then EP, PP and DP outermost, the order Llama 3 used
([TP, CP, PP, DP], arXiv 2407.21783) with EP beside TP as in DeepSeek-V3: a group whose members
all sit in one scale-up domain talks over NVLink/ICI, one that spans domains crosses the
scale-out network. Times come from :mod:`llmmath.collectives` and are FLOORS: bandwidth-optimal
collectives at full link speed, matmuls at ``flops_efficiency`` of the dense peak (the MFU
knob), no latency, no stragglers, perfect load balance.

>>> from llmmath import parallelism
>>> round(parallelism.pipeline_bubble_fraction(16, 32), 3)     # Llama 3 405B: PP16, 32 microbatches
0.319
>>> layout = parallelism.Layout(dp=64, tp=8, pp=16, embedding_as_layers=True)
>>> layout.n_gpus, str(layout)
(8192, 'TP8 PP16 DP64')
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from . import collectives, roofline
from ._validate import FloatArray, as_output, choice, fraction, positive, positive_int
from .dtypes import bytes_per_element
from .hardware import Chip, get_chip
from .models import ModelConfig, get_model

ZERO_STAGES = (0, 1, 2, 3)
#: How activations are kept for the backward pass (see :func:`activation_memory_bytes`).
ACTIVATION_MODES = ("stored", "checkpointed", "reversible")
#: Innermost first: rank = t + tp * (e + ep * (s + pp * d)).
AXES = ("tp", "ep", "pp", "dp")
KINDS = ("DP", "TP", "PP", "EP")
#: Mixed-precision Adam (ZeRO paper, arXiv 1910.02054): bf16/fp16 weights and gradients, and
#: an fp32 master copy, momentum and variance, K = 12 bytes: 16 bytes per parameter in all.
ADAM_MIXED_BYTES_PER_PARAM = {"weights": 2.0, "grads": 2.0, "optimizer": 12.0}


class DoesNotFitError(ValueError):
    """A layout needs more memory per GPU than the chip has; the message says by how much."""


# ---- the layout ---------------------------------------------------------------------------
@dataclass(frozen=True)
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
        for name in ("dp", "tp", "pp", "ep", "virtual_stages"):
            positive_int(name, getattr(self, name))
        stage = self.zero_stage
        if isinstance(stage, bool) or not isinstance(stage, int | np.integer):
            raise TypeError(f"zero_stage must be an integer in {ZERO_STAGES}; got {stage!r}")
        if stage not in ZERO_STAGES:
            raise ValueError(f"zero_stage must be one of {ZERO_STAGES}; got {stage}")
        if not isinstance(self.embedding_as_layers, bool):
            raise TypeError(
                f"embedding_as_layers must be True or False; got {self.embedding_as_layers!r}"
            )

    @classmethod
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
        n = positive_int("n_gpus", n_gpus)
        model_parallel = positive_int("tp", tp) * positive_int("pp", pp) * positive_int("ep", ep)
        if n % model_parallel:
            raise ValueError(
                f"n_gpus={n} is not divisible by tp*pp*ep = {tp}*{pp}*{ep} = {model_parallel}"
            )
        return cls(n // model_parallel, tp, pp, ep, zero_stage, virtual_stages, embedding_as_layers)

    @property
    def n_gpus(self) -> int:
        return self.dp * self.tp * self.pp * self.ep

    def degree(self, axis: str) -> int:
        """The degree along ``axis`` ("tp", "ep", "pp" or "dp")."""
        return int(getattr(self, choice("axis", axis, AXES)))

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

    def validate(self, model: str | ModelConfig, n_gpus: int | None = None) -> ModelConfig:
        """Check the layout against the model (and the cluster size); return the model.

        Raises a ValueError naming the degree that does not fit: heads divisible by ``tp``
        (and KV heads and ``tp`` dividing one another), layers by ``pp`` (times
        ``virtual_stages``), experts by ``ep``, and ``dp*tp*pp*ep == n_gpus``.
        """
        spec = get_model(model)
        if n_gpus is not None and self.n_gpus != positive_int("n_gpus", n_gpus):
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


def pipeline_slots(model: str | ModelConfig, embedding_as_layers: bool = False) -> int:
    """Layers to spread over the pipeline: ``L``, or ``L + 2`` with the embedding and output
    layer counted as one slot each."""
    spec = get_model(model)
    return spec.n_layers + (2 if embedding_as_layers else 0)


def _stage_loads(spec: ModelConfig, layout: Layout, microbatches: int) -> list[tuple[float, int]]:
    """(layers, microbatches in flight) on each pipeline stage under 1F1B: stage ``i`` holds
    ``min(pp - i, m)`` microbatches; with embedding slots the first and last hold one layer
    fewer. Equal stages repeat, so only distinct pairs are returned."""
    per_stage = pipeline_slots(spec, layout.embedding_as_layers) / layout.pp
    loads = set()
    for i in range(layout.pp):
        layers = per_stage
        if layout.embedding_as_layers:
            layers -= (i == 0) + (i == layout.pp - 1)
        loads.add((max(layers, 1.0), min(layout.pp - i, microbatches)))
    return sorted(loads)


def layers_per_stage(model: str | ModelConfig, layout: Layout) -> float:
    """Transformer layers on one pipeline stage (all its virtual chunks): ``slots / pp``.
    With embedding slots the first and last stage hold one layer fewer; this is the most."""
    spec = layout.validate(model)
    return min(pipeline_slots(spec, layout.embedding_as_layers) / layout.pp, spec.n_layers)


# ---- where each group sits ------------------------------------------------------------------
@dataclass(frozen=True)
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


def _group(layout: Layout, kind: str, axes: tuple[str, ...], domain_size: int) -> Group:
    """The group through GPU 0 that varies ``axes``; members per domain from the placement."""
    strides = {"tp": 1}
    strides["ep"] = layout.tp
    strides["pp"] = layout.tp * layout.ep
    strides["dp"] = layout.tp * layout.ep * layout.pp
    ranks = np.zeros(1, dtype=np.int64)
    for axis in axes:
        offsets = np.arange(layout.degree(axis), dtype=np.int64) * strides[axis]
        ranks = (ranks[:, None] + offsets[None, :]).ravel()
    size = int(ranks.size)
    n_domains = int(np.unique(ranks // domain_size).size)
    per_domain = size // n_domains if size % n_domains == 0 else 1
    return Group(kind, size, per_domain)


def groups(layout: Layout, chip: str | Chip) -> dict[str, Group]:
    """The DP, TP, PP and EP groups of ``layout`` on ``chip``'s scale-up domains.

    DP is the group that all-reduces the dense (non-expert) gradients: ``dp * ep`` GPUs.
    """
    domain = get_chip(chip).scale_up_domain_size
    return {
        "DP": _group(layout, "DP", ("ep", "dp"), domain),
        "TP": _group(layout, "TP", ("tp",), domain),
        "PP": _group(layout, "PP", ("pp",), domain),
        "EP": _group(layout, "EP", ("ep",), domain),
    }


# ---- parameters split by how they shard ------------------------------------------------------
def expert_params(model: str | ModelConfig) -> int:
    """Routed-expert weights (sharded by EP): ``L_moe * E * 3 D F_expert``; 0 for dense."""
    spec = get_model(model)
    return spec.n_moe_layers * spec.n_experts * spec.mlp_params_per_expert


def dense_params(model: str | ModelConfig) -> int:
    """Every other weight (attention, dense and shared MLPs, router, embeddings, norms)."""
    spec = get_model(model)
    return spec.total_params - expert_params(spec)


def params_per_gpu(model: str | ModelConfig, layout: Layout) -> float:
    """Weights each GPU holds before ZeRO sharding: ``P_dense / (tp pp) + P_exp / (tp pp ep)``."""
    spec = layout.validate(model)
    split = layout.tp * layout.pp
    return dense_params(spec) / split + expert_params(spec) / (split * layout.ep)


# ---- memory ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Fits:
    @property
    def total_bytes(self) -> FloatArray:
        raise NotImplementedError

    def headroom_bytes(self, chip: str | Chip) -> float | FloatArray:
        """HBM left over per GPU; negative when the layout does not fit."""
        return as_output(get_chip(chip).hbm_bytes - np.asarray(self.total_bytes, dtype=float))

    def fits(self, chip: str | Chip) -> bool | np.ndarray:
        """True where the memory per GPU is at most the chip's HBM."""
        ok = np.asarray(self.headroom_bytes(chip)) >= 0
        return bool(ok) if ok.ndim == 0 else ok

    def require_fit(self, chip: str | Chip, what: str = "the layout") -> None:
        """Raise :class:`DoesNotFitError` saying by how much, per GPU, the memory is over."""
        spec = get_chip(chip)
        total = np.asarray(self.total_bytes, dtype=float)
        worst = float(total.max())
        if worst <= spec.hbm_bytes:
            return
        parts = ", ".join(
            f"{name} {_gb(float(np.asarray(value).max()))}" for name, value in self.parts().items()
        )
        over = worst - spec.hbm_bytes
        raise DoesNotFitError(
            f"{what} needs {_gb(worst)} GB per GPU ({parts}, in GB) but one {spec.name} holds "
            f"{_gb(spec.hbm_bytes)} GB: {_gb(over)} GB ({100 * over / spec.hbm_bytes:,.0f}%) "
            "too much"
        )

    def parts(self) -> dict[str, FloatArray]:
        raise NotImplementedError


@dataclass(frozen=True)
class TrainingMemory(_Fits):
    """Bytes per GPU while training: model state (weights, gradients, optimizer) and the
    activations kept for the backward pass. Buffers, fragmentation and the logits are left out."""

    weights_bytes: FloatArray
    grads_bytes: FloatArray
    optimizer_bytes: FloatArray
    activations_bytes: FloatArray  # the most any pipeline stage holds

    @property
    def state_bytes(self) -> FloatArray:
        return self.weights_bytes + self.grads_bytes + self.optimizer_bytes

    @property
    def total_bytes(self) -> FloatArray:
        return self.state_bytes + self.activations_bytes

    def parts(self) -> dict[str, FloatArray]:
        return {
            "weights": self.weights_bytes,
            "gradients": self.grads_bytes,
            "optimizer": self.optimizer_bytes,
            "activations": self.activations_bytes,
        }


def model_state_bytes(
    n_params: ArrayLike,
    dp: ArrayLike = 1,
    zero_stage: int = 0,
    *,
    weight_bytes_per_param: float = 2.0,
    grad_bytes_per_param: float = 2.0,
    optimizer_bytes_per_param: float = 12.0,
) -> TrainingMemory:
    """Weights, gradients and optimizer state per GPU for ``n_params`` held by a DP group of
    ``dp`` (ZeRO paper, arXiv 1910.02054, section 5): stage 1 divides the optimizer by ``dp``,
    stage 2 also the gradients, stage 3 (FSDP) also the weights. The defaults are
    mixed-precision Adam, ``2 + 2 + 12 = 16`` bytes per parameter."""
    P = positive("n_params", n_params, allow_zero=True)
    N = positive("dp", dp)
    stage = Layout(zero_stage=zero_stage).zero_stage  # validates the stage
    per_param = {
        "weight_bytes_per_param": weight_bytes_per_param,
        "grad_bytes_per_param": grad_bytes_per_param,
        "optimizer_bytes_per_param": optimizer_bytes_per_param,
    }
    b_w, b_g, b_o = (positive(name, value, allow_zero=True) for name, value in per_param.items())
    return TrainingMemory(
        weights_bytes=b_w * P / (N if stage >= 3 else 1.0),
        grads_bytes=b_g * P / (N if stage >= 2 else 1.0),
        optimizer_bytes=b_o * P / (N if stage >= 1 else 1.0),
        activations_bytes=np.zeros_like(P),
    )


def activation_bytes_per_token(model: str | ModelConfig, dtype: str = "bf16") -> float:
    """Activations one token leaves for the backward pass, summed over all layers.

    Per layer with FlashAttention (no ``T x T`` scores kept), RMSNorm, no dropout, SwiGLU:
    attention keeps its norm's input and output (``2D``), Q, K and V (``NH + 2KH``) and the
    attention output (``NH``); a dense MLP keeps its norm's input and output (``2D``), the gate
    and up projections (``2F``) and their product (``F``); an MoE MLP keeps ``2D`` plus, for
    each of its ``k`` routed and shared experts, the token's copy (``D``) and ``3 F_expert``.
    MLA layers count their queries and keys at ``H + rope`` and add the two latents.
    Korthikanti et al. (arXiv 2205.05198) count ``34 D`` bytes per layer for a GPT layer with
    ``F = 4D`` in fp16; Llama-3-70B comes to ``33.5 D``.
    """
    spec = get_model(model)
    D, N, K, H = spec.d_model, spec.n_heads, spec.n_kv_heads, spec.head_dim
    if spec.attention_kind == "MLA":
        qk = N * (H + spec.mla_rope_head_dim)
        attention = 2 * D + 2 * qk + 2 * N * H + spec.mla_q_lora_rank + spec.mla_kv_lora_rank
    else:
        attention = 2 * D + N * H + 2 * K * H + N * H
    dense_mlp = 2 * D + 3 * spec.d_ff
    experts = spec.experts_per_token + spec.n_shared_experts
    moe_mlp = 2 * D + experts * (D + 3 * spec.expert_d_ff)
    n_dense = spec.n_layers - spec.n_moe_layers
    elements = spec.n_layers * attention + n_dense * dense_mlp + spec.n_moe_layers * moe_mlp
    return float(elements * bytes_per_element(dtype))


def activation_memory_bytes(
    model: str | ModelConfig,
    tokens: ArrayLike,
    mode: str = "stored",
    *,
    n_layers: float | None = None,
    tp: int = 1,
    microbatches_in_flight: int = 1,
    dtype: str = "bf16",
) -> float | FloatArray:
    """Activation bytes one GPU holds for ``tokens`` per microbatch over ``n_layers`` layers.

    With ``a`` = :func:`activation_bytes_per_token` per layer and ``D`` bytes of layer input:

    * ``stored``: every layer keeps all it needs, ``f * tokens * n_layers * a``;
    * ``checkpointed`` (full recomputation): only each layer's input is kept,
      ``f * tokens * n_layers * D``, plus one layer's ``tokens * a`` while it is recomputed;
    * ``reversible`` (RevNet, Reformer): a layer's inputs are rebuilt from its outputs, so only
      the stage's two output streams are kept, ``f * tokens * 2D``, plus one layer's working
      set: memory no longer grows with depth.

    ``f`` is the number of microbatches in flight. Everything is divided by ``tp`` (sequence
    parallelism shards the activations too). The extra compute is in
    :func:`recompute_flops_fraction`.
    """
    spec = get_model(model)
    choice("mode", mode, ACTIVATION_MODES)
    T = positive("tokens", tokens, allow_zero=True)
    layers = positive("n_layers", spec.n_layers if n_layers is None else n_layers)
    shards = positive_int("tp", tp)
    flight = positive_int("microbatches_in_flight", microbatches_in_flight)
    per_layer = activation_bytes_per_token(spec, dtype) / spec.n_layers
    layer_input = spec.d_model * bytes_per_element(dtype)
    if mode == "stored":
        kept = flight * T * layers * per_layer
    elif mode == "checkpointed":
        kept = flight * T * layers * layer_input + T * per_layer
    else:
        kept = flight * T * 2 * layer_input + T * per_layer
    return as_output(kept / shards)


def recompute_flops_fraction(mode: str) -> float:
    """Extra training FLOPs over ``6 P`` per token: 0 when activations are stored; one more
    forward pass, ``2P / 6P = 1/3``, for checkpointing, and the same for reversible layers,
    which recompute each layer once to rebuild its inputs and take its gradients."""
    return 0.0 if choice("mode", mode, ACTIVATION_MODES) == "stored" else 1.0 / 3.0


def training_memory(
    model: str | ModelConfig,
    layout: Layout,
    global_batch_tokens: ArrayLike,
    *,
    microbatches: int = 1,
    activations: str = "stored",
    weight_bytes_per_param: float = 2.0,
    grad_bytes_per_param: float = 2.0,
    optimizer_bytes_per_param: float = 12.0,
    activation_dtype: str = "bf16",
) -> TrainingMemory:
    """Memory per GPU for one training step of ``global_batch_tokens`` tokens.

    Model state: :func:`model_state_bytes` of the dense weights ``P_dense / (tp pp)`` over the
    ``dp * ep`` replicas and of the expert weights ``P_exp / (tp pp ep)`` over ``dp``.
    Activations: each replica's ``B / (dp ep)`` tokens are cut into ``microbatches``; under the
    1F1B schedule stage ``i`` holds ``min(pp - i, microbatches)`` of them while it waits for
    their backward pass, each over its ``L / pp`` layers (:func:`activation_memory_bytes`);
    the busiest stage counts. With ``pp`` microbatches in flight on ``L / pp`` layers the
    first stage holds as much as one GPU with every layer: pipelining alone does not shrink
    activation memory (Korthikanti et al., arXiv 2205.05198). With reversible layers, whose
    per-stage memory does not depend on its layers, the ``pp`` microbatches in flight make
    a deeper pipeline hold *more* activations.
    """
    spec = layout.validate(model)
    m = positive_int("microbatches", microbatches)
    tokens = positive("global_batch_tokens", global_batch_tokens)
    split = layout.tp * layout.pp
    knobs = {
        "weight_bytes_per_param": weight_bytes_per_param,
        "grad_bytes_per_param": grad_bytes_per_param,
        "optimizer_bytes_per_param": optimizer_bytes_per_param,
    }
    stage = layout.zero_stage
    dense = model_state_bytes(dense_params(spec) / split, layout.dp * layout.ep, stage, **knobs)
    experts = model_state_bytes(
        expert_params(spec) / (split * layout.ep), layout.dp, stage, **knobs
    )
    micro_tokens = tokens / (layout.dp * layout.ep * m)
    kept = np.zeros_like(micro_tokens)
    for layers, in_flight in _stage_loads(spec, layout, m):
        held = activation_memory_bytes(
            spec,
            micro_tokens,
            activations,
            n_layers=layers,
            tp=layout.tp,
            microbatches_in_flight=in_flight,
            dtype=activation_dtype,
        )
        kept = np.maximum(kept, held)
    shape = np.shape(tokens)
    return TrainingMemory(
        weights_bytes=np.broadcast_to(dense.weights_bytes + experts.weights_bytes, shape),
        grads_bytes=np.broadcast_to(dense.grads_bytes + experts.grads_bytes, shape),
        optimizer_bytes=np.broadcast_to(dense.optimizer_bytes + experts.optimizer_bytes, shape),
        activations_bytes=np.asarray(kept, dtype=float),
    )


@dataclass(frozen=True)
class ServingMemory(_Fits):
    """Bytes per GPU while serving: the weights and the KV cache of the sequences in flight."""

    weights_bytes: FloatArray
    kv_bytes: FloatArray

    @property
    def total_bytes(self) -> FloatArray:
        return self.weights_bytes + self.kv_bytes

    def parts(self) -> dict[str, FloatArray]:
        return {"weights": self.weights_bytes, "KV cache": self.kv_bytes}


def kv_shards(model: str | ModelConfig, tp: int) -> int:
    """How many ways TP splits the KV cache: ``min(tp, K)`` KV heads (beyond ``K`` each head is
    replicated); 1 for MLA, whose one latent per token every TP rank needs."""
    spec = get_model(model)
    if spec.attention_kind == "MLA":
        return 1
    return min(positive_int("tp", tp), spec.n_kv_heads)


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
    B = positive("batch", batch, allow_zero=True)
    T = positive("context", context, allow_zero=True)
    flight = positive_int(
        "microbatches_in_flight",
        layout.pp if microbatches_in_flight is None else microbatches_in_flight,
    )
    weights = params_per_gpu(spec, layout) * bytes_per_element(weight_dtype)
    kv_per_sequence_token = (
        spec.kv_bytes_per_token(kv_dtype) / layout.pp / kv_shards(spec, layout.tp)
    )
    kv = flight * B * T * kv_per_sequence_token
    return ServingMemory(
        weights_bytes=np.broadcast_to(np.float64(weights), np.shape(kv)).astype(float),
        kv_bytes=np.asarray(kv, dtype=float),
    )


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
    with np.errstate(divide="ignore"):
        batch = np.where(per_sequence > 0, np.floor(np.maximum(room, 0) / per_sequence), np.inf)
    return as_output(np.asarray(batch, dtype=float))


def _gb(value: float) -> str:
    """Bytes as GB for a message: three significant figures, thousands separated."""
    gb = value / 1e9
    return f"{gb:,.0f}" if abs(gb) >= 100 else f"{gb:.3g}"


# ---- the pipeline bubble ------------------------------------------------------------------
def pipeline_bubble_fraction(
    stages: ArrayLike, microbatches: ArrayLike, virtual_stages: ArrayLike = 1
) -> float | FloatArray:
    """Share of a pipelined step that a stage sits idle: ``(p - 1) / (v m + p - 1)``.

    A stage waits ``p - 1`` microbatch-times for the first microbatch to reach it and as long
    again after its last one, while it works for ``m`` of them (GPipe and 1F1B alike); the
    interleaved schedule with ``v`` chunks per GPU shrinks the wait to ``(p - 1) / v``. It is
    0 for one stage and falls towards 0 as ``m`` grows.
    """
    p = _at_least_one("stages", stages)
    m = _at_least_one("microbatches", microbatches)
    v = _at_least_one("virtual_stages", virtual_stages)
    return as_output((p - 1) / (v * m + p - 1))


def _at_least_one(name: str, value: ArrayLike) -> FloatArray:
    array = positive(name, value)
    if np.any(array < 1):
        raise ValueError(f"{name} must be >= 1; got {float(array[array < 1].ravel()[0])!r}")
    return array


# ---- communication and the step -------------------------------------------------------------
@dataclass(frozen=True)
class Communication:
    """One kind of parallelism's traffic in a step: the collective, bytes each GPU sends, the
    time (a floor) and the link it loads."""

    kind: str
    collective: str
    bytes_per_gpu: FloatArray
    time_s: FloatArray
    link: str


@dataclass(frozen=True)
class TrainingStep:
    """Time of one training step, per GPU: compute, the pipeline bubble and communication.

    ``lower_s`` assumes communication hides under compute (perfect overlap), ``upper_s`` that
    none of it does; the bubble adds to both. Both are floors at ``flops_efficiency``.
    """

    compute_s: FloatArray
    bubble_s: FloatArray
    communication: dict[str, Communication] = field(hash=False)
    tokens: FloatArray
    model_flop_per_gpu: FloatArray  # 6 P_active per token, recomputation not counted
    peak_flop_per_s: float

    @property
    def comm_s(self) -> FloatArray:
        return sum((c.time_s for c in self.communication.values()), np.zeros_like(self.compute_s))

    @property
    def lower_s(self) -> FloatArray:
        return np.maximum(self.compute_s, self.comm_s) + self.bubble_s

    @property
    def upper_s(self) -> FloatArray:
        return self.compute_s + self.comm_s + self.bubble_s

    @property
    def tokens_per_s(self) -> FloatArray:
        """Whole-cluster training throughput at the optimistic (overlapped) step time."""
        return self.tokens / self.lower_s

    @property
    def mfu(self) -> FloatArray:
        """Model FLOPs utilisation at ``lower_s``: ``6 P tokens / (n_gpus C t)``."""
        return self.model_flop_per_gpu / (self.peak_flop_per_s * self.lower_s)

    @property
    def mfu_no_overlap(self) -> FloatArray:
        return self.model_flop_per_gpu / (self.peak_flop_per_s * self.upper_s)


def training_flops(
    model: str | ModelConfig, tokens: ArrayLike, activations: str = "stored"
) -> float | FloatArray:
    """FLOPs to train on ``tokens`` tokens: ``6 P_active`` each (attention left out), plus
    :func:`recompute_flops_fraction` for checkpointing or reversible layers."""
    spec = get_model(model)
    T = positive("tokens", tokens, allow_zero=True)
    return as_output(
        spec.training_flops_per_token() * (1 + recompute_flops_fraction(activations)) * T
    )


def training_communication(
    model: str | ModelConfig,
    layout: Layout,
    chip: str | Chip,
    global_batch_tokens: ArrayLike,
    *,
    microbatches: int = 1,
    activations: str = "stored",
    weight_bytes_per_param: float = 2.0,
    grad_bytes_per_param: float = 2.0,
    activation_dtype: str = "bf16",
) -> dict[str, Communication]:
    """Traffic per GPU in one training step, by kind, timed with :mod:`llmmath.collectives`.

    * DP: the gradients each GPU holds (``P_dense / (tp pp)`` over ``dp * ep`` GPUs, expert
      weights over ``dp``): an all-reduce (ZeRO 0); a reduce-scatter of the gradients and an
      all-gather of the updated weights (ZeRO 1, 2: the same bytes); ZeRO 3 all-gathers the
      weights again in the forward and backward pass of every microbatch.
    * TP: per layer and microbatch, 2 all-reduces of the activations ``tokens_mb * D`` forward
      and 2 backward (all-gathers and reduce-scatters under sequence parallelism: the same
      bytes), 2 more when the forward pass is recomputed.
    * PP: per microbatch (and virtual chunk) the activations go forward and their gradients
      back, ``tokens_mb * D / tp`` each, point to point; over scale-out if the stages span
      domains.
    * EP: per MoE layer and microbatch, a dispatch and a combine all-to-all forward and again
      backward (and in a recomputed forward), ``tokens_mb * k * D / tp`` bytes from each GPU.
    """
    spec = layout.validate(model)
    chip_spec = get_chip(chip)
    m = positive_int("microbatches", microbatches)
    tokens = positive("global_batch_tokens", global_batch_tokens)
    b_act = bytes_per_element(activation_dtype)
    b_w = float(positive("weight_bytes_per_param", weight_bytes_per_param))
    b_g = float(positive("grad_bytes_per_param", grad_bytes_per_param))
    placed = groups(layout, chip_spec)
    recompute = recompute_flops_fraction(activations) > 0
    micro_tokens = tokens / (layout.dp * layout.ep * m)
    split = layout.tp * layout.pp
    layers = layers_per_stage(spec, layout)
    result: dict[str, Communication] = {}

    # DP: dense gradients over dp*ep GPUs, expert gradients over the dp GPUs that share experts.
    dp_groups = [(dense_params(spec) / split, placed["DP"])]
    if spec.is_moe:
        expert_dp = _group(layout, "DP", ("dp",), chip_spec.scale_up_domain_size)
        dp_groups.append((expert_params(spec) / (split * layout.ep), expert_dp))
    dp_time, dp_bytes = np.zeros_like(tokens), np.zeros_like(tokens)
    for n_params, group in dp_groups:
        t, sent = _dp_sync(n_params, group, chip_spec, layout.zero_stage, m, b_w, b_g)
        dp_time, dp_bytes = dp_time + t, dp_bytes + sent
    collective = {
        0: "all-reduce",
        1: "reduce-scatter + all-gather",
        2: "reduce-scatter + all-gather",
        3: "reduce-scatter + 2 all-gathers per microbatch",
    }[layout.zero_stage]
    result["DP"] = Communication("DP", collective, dp_bytes, dp_time, placed["DP"].link)

    # TP: activations all-reduced inside every layer.
    tp = placed["TP"]
    count = layers * m * (4 + (2 if recompute else 0))
    size = micro_tokens * spec.d_model * b_act
    one = np.asarray(
        collectives.hierarchical_all_reduce_time_s(
            size, tp.size, chip_spec, per_domain=tp.per_domain
        )
    )
    result["TP"] = Communication(
        "TP", "all-reduce", count * 2 * size * (tp.size - 1) / tp.size, count * one, tp.link
    )

    # PP: point to point between neighbouring stages.
    pp = placed["PP"]
    sends = 2 * m * layout.virtual_stages if pp.size > 1 else 0
    message = micro_tokens * spec.d_model * b_act / layout.tp
    hop = np.asarray(
        collectives.point_to_point_time_s(message, chip_spec, across_domains=pp.crosses_domains)
    )
    result["PP"] = Communication("PP", "send/receive", sends * message, sends * hop, pp.link)

    # EP: all-to-all dispatch and combine per MoE layer.
    ep = placed["EP"]
    moe_layers = spec.n_moe_layers / layout.pp
    a2a_count = moe_layers * m * (4 + (2 if recompute else 0)) if ep.size > 1 else 0
    per_chip = micro_tokens * spec.experts_per_token * spec.d_model * b_act / layout.tp
    a2a = np.asarray(
        collectives.all_to_all_time_s(per_chip, ep.size, chip_spec, per_domain=ep.per_domain)
    )
    result["EP"] = Communication(
        "EP", "all-to-all", a2a_count * per_chip * (ep.size - 1) / ep.size, a2a_count * a2a, ep.link
    )
    return result


def _dp_sync(
    n_params: float, group: Group, chip: Chip, stage: int, microbatches: int, b_w: float, b_g: float
) -> tuple[FloatArray, FloatArray]:
    """Time and bytes sent per GPU to keep ``n_params`` in sync over a DP ``group``."""
    n, g = group.size, group.per_domain
    if n == 1:
        return np.zeros(()), np.zeros(())
    grads, weights = n_params * b_g, n_params * b_w
    share = (n - 1) / n

    def gather(size: float) -> FloatArray:
        return np.asarray(collectives.hierarchical_all_gather_time_s(size, n, chip, per_domain=g))

    if stage == 0:
        time = 2 * gather(grads)
        sent = 2 * grads * share
    elif stage in (1, 2):
        time = gather(grads) + gather(weights)
        sent = (grads + weights) * share
    else:
        time = gather(grads) + 2 * microbatches * gather(weights)
        sent = (grads + 2 * microbatches * weights) * share
    return time, np.asarray(sent)


def training_step(
    model: str | ModelConfig,
    layout: Layout,
    chip: str | Chip,
    global_batch_tokens: ArrayLike,
    *,
    microbatches: int = 1,
    activations: str = "stored",
    flops_efficiency: float = 1.0,
    compute_dtype: str = "bf16",
    weight_bytes_per_param: float = 2.0,
    grad_bytes_per_param: float = 2.0,
    activation_dtype: str = "bf16",
) -> TrainingStep:
    """Step-time breakdown of ``layout`` training ``model`` on ``layout.n_gpus`` chips.

    Compute: :func:`training_flops` of the batch shared evenly by every GPU, at
    ``flops_efficiency`` of the dense peak (the MFU knob: what the matmuls reach while they
    run). Bubble: compute times ``(p - 1) / (v m)`` — the idle share
    :func:`pipeline_bubble_fraction` of the whole step. Communication:
    :func:`training_communication`. All floors.
    """
    spec = layout.validate(model)
    chip_spec = get_chip(chip)
    efficiency = float(fraction("flops_efficiency", flops_efficiency))
    m = positive_int("microbatches", microbatches)
    tokens = positive("global_batch_tokens", global_batch_tokens)
    peak = chip_spec.peak(compute_dtype)
    per_gpu = np.asarray(training_flops(spec, tokens, activations)) / layout.n_gpus
    compute = per_gpu / (peak * efficiency)
    bubble = compute * (layout.pp - 1) / (layout.virtual_stages * m)
    communication = training_communication(
        spec,
        layout,
        chip_spec,
        tokens,
        microbatches=m,
        activations=activations,
        weight_bytes_per_param=weight_bytes_per_param,
        grad_bytes_per_param=grad_bytes_per_param,
        activation_dtype=activation_dtype,
    )
    return TrainingStep(
        compute_s=compute,
        bubble_s=bubble,
        communication=communication,
        tokens=tokens,
        model_flop_per_gpu=np.asarray(training_flops(spec, tokens)) / layout.n_gpus,
        peak_flop_per_s=peak,
    )


def tp_critical_degree(
    model: str | ModelConfig,
    chip: str | Chip,
    compute_dtype: str = "bf16",
    activation_dtype: str = "bf16",
) -> float:
    """TP degree up to which a layer's all-reduces (on one scale-up domain) hide under its
    matmuls, as counted by :func:`training_communication` and :func:`training_step`.

    Per token and layer a GPU of a TP group of ``t`` does ``6 P_layer / t`` FLOPs and
    all-reduces ``D`` activations 4 times, ``4 * 2 b D (t-1)/t / W`` seconds; equal when

        t* = 1 + 6 P_layer W / (8 b D C).

    Compute per GPU shrinks as ``1/t`` while the all-reduced activations do not. The scaling
    book's MLP-only rule, ``t < F W / C``, counts the forward pass of the MLP alone and gives
    a smaller degree.
    """
    spec, chip_spec = get_model(model), get_chip(chip)
    per_layer = spec.matmul_params_per_token / spec.n_layers
    b = bytes_per_element(activation_dtype)
    W, C = chip_spec.scale_up_bandwidth_bytes_per_s, chip_spec.peak(compute_dtype)
    return 1.0 + 6.0 * per_layer * W / (8.0 * b * spec.d_model * C)


def dp_critical_batch(
    chip: str | Chip,
    n_chips: int,
    *,
    per_domain: int | None = None,
    grad_dtype: str = "bf16",
    compute_dtype: str = "bf16",
) -> float:
    """Tokens per data-parallel replica above which the gradient all-reduce hides under the
    backward pass (per GPU for pure DP).

    The backward pass does ``4 B P`` FLOPs on ``B`` tokens; the all-reduce of ``P`` gradients of
    ``b`` bytes takes ``2 b P (n-1) / (n W)`` on one level. Equal when

        B* = C * T_allreduce(b bytes) / 4  =  (b / 2) * (C / W) * (n - 1) / n,

    ``C / W`` for bf16 gradients and a large group: about 2,200 tokens on H100 over NVLink
    (the scaling book, gpus) and ``C / (8 * 50 GB/s) = 2,470`` across nodes of 8.
    """
    spec = get_chip(chip)
    per_param = collectives.hierarchical_all_reduce_time_s(
        bytes_per_element(grad_dtype), n_chips, spec, per_domain=per_domain
    )
    return float(per_param) * spec.peak(compute_dtype) / 4.0


# ---- serving ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeStep:
    """One decode step of a layout, per GPU: floors for compute, memory reads and traffic."""

    compute_s: FloatArray
    memory_s: FloatArray
    tp_s: FloatArray
    ep_s: FloatArray
    pp_s: FloatArray
    pp: int
    sequences_per_stage_step: FloatArray  # batch * ep * dp tokens leave the pipeline per stage step

    @property
    def stage_s(self) -> FloatArray:
        """One stage's share of the step: ``max(compute, memory)`` plus the TP and EP traffic
        between its matmuls, which nothing hides."""
        return np.maximum(self.compute_s, self.memory_s) + self.tp_s + self.ep_s

    @property
    def token_latency_s(self) -> FloatArray:
        """Time between two tokens of one sequence: through every stage and every hop."""
        return self.pp * self.stage_s + (self.pp - 1) * self.pp_s

    @property
    def tokens_per_s(self) -> FloatArray:
        """Cluster throughput: a stage step finishes one token for ``batch`` sequences per
        attention group (the pipeline's ``pp`` microbatches are staggered)."""
        return self.sequences_per_stage_step / self.stage_s


def decode_step(
    model: str | ModelConfig,
    layout: Layout,
    chip: str | Chip,
    batch: ArrayLike,
    context: ArrayLike,
    *,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    activation_dtype: str = "bf16",
    compute_dtype: str = "bf16",
    flops_efficiency: ArrayLike = 1.0,
    bandwidth_efficiency: ArrayLike = 1.0,
) -> DecodeStep:
    """Floors of one decode step of ``batch`` sequences of ``context`` under ``layout``.

    Per GPU and stage step: FLOPs ``batch * forward_flops_per_token(context) / (tp pp)``;
    bytes read, the weights it touches (:func:`llmmath.roofline.weight_params_read` for the
    experts of an MoE, over ``ep`` ranks) plus its KV cache, ``batch * context * kv / (pp
    kv_shards)``; TP all-reduces ``2 L/pp`` times ``batch * D``, EP all-to-alls ``2 L_moe/pp``
    times ``batch * k * D / tp``, and PP sends ``batch * D / tp`` to the next stage.
    """
    spec = layout.validate(model)
    chip_spec = get_chip(chip)
    B = positive("batch", batch)
    T = positive("context", context, allow_zero=True)
    split = layout.tp * layout.pp
    b_act = bytes_per_element(activation_dtype)
    placed = groups(layout, chip_spec)
    flops = B * np.asarray(spec.forward_flops_per_token(T)) / split
    routed = spec.n_moe_layers * spec.experts_per_token * spec.mlp_params_per_expert
    shared = spec.matmul_params_per_token - routed
    read = np.asarray(roofline.weight_params_read(spec, B * layout.ep)) - shared
    weight_bytes = (shared / split + read / (split * layout.ep)) * bytes_per_element(weight_dtype)
    kv = B * T * spec.kv_bytes_per_token(kv_dtype) / (layout.pp * kv_shards(spec, layout.tp))
    floor = roofline.roofline_time(
        flops,
        weight_bytes + kv,
        chip_spec,
        compute_dtype,
        flops_efficiency=flops_efficiency,
        bandwidth_efficiency=bandwidth_efficiency,
    )
    tp = placed["TP"]
    layers = layers_per_stage(spec, layout)
    tp_one = collectives.hierarchical_all_reduce_time_s(
        B * spec.d_model * b_act, tp.size, chip_spec, per_domain=tp.per_domain
    )
    ep = placed["EP"]
    moe_layers = spec.n_moe_layers / layout.pp if ep.size > 1 else 0.0
    ep_one = collectives.all_to_all_time_s(
        B * spec.experts_per_token * spec.d_model * b_act / layout.tp,
        ep.size,
        chip_spec,
        per_domain=ep.per_domain,
    )
    pp = placed["PP"]
    hop = collectives.point_to_point_time_s(
        B * spec.d_model * b_act / layout.tp, chip_spec, across_domains=pp.crosses_domains
    )
    return DecodeStep(
        compute_s=np.asarray(floor.compute_s),
        memory_s=np.asarray(floor.memory_s),
        tp_s=2 * layers * np.asarray(tp_one) if tp.size > 1 else np.zeros_like(B),
        ep_s=2 * moe_layers * np.asarray(ep_one),
        pp_s=np.asarray(hop) if pp.size > 1 else np.zeros_like(B),
        pp=layout.pp,
        sequences_per_stage_step=B * layout.ep * layout.dp,
    )


# ---- curves the figures draw ----------------------------------------------------------------
@dataclass(frozen=True)
class LayoutBreakdown:
    """One layout training one model, as the chapter's figures show it: memory per GPU by
    part, and the step time as (label, seconds, link) for the compute, the bubble and each
    kind of traffic (the link names the network it loads; empty for compute and bubble)."""

    layout: Layout
    memory_bytes: dict[str, float]
    total_memory_bytes: float
    hbm_bytes: float
    time_parts: tuple[tuple[str, float, str], ...]
    lower_s: float
    upper_s: float
    mfu: float
    bubble_fraction: float


def layout_breakdown(
    model: str | ModelConfig,
    chip: str | Chip,
    layout: Layout,
    global_batch_tokens: float,
    *,
    microbatches: int = 8,
    activations: str = "stored",
    flops_efficiency: float = 1.0,
) -> LayoutBreakdown:
    """:func:`training_memory` and :func:`training_step` of one layout, part by part."""
    spec, chip_spec = get_model(model), get_chip(chip)
    memory = training_memory(
        spec, layout, global_batch_tokens, microbatches=microbatches, activations=activations
    )
    step = training_step(
        spec,
        layout,
        chip_spec,
        global_batch_tokens,
        microbatches=microbatches,
        activations=activations,
        flops_efficiency=flops_efficiency,
    )
    parts = [("compute", float(step.compute_s), ""), ("bubble", float(step.bubble_s), "")]
    for kind in KINDS:
        comm = step.communication[kind]
        parts.append((kind, float(comm.time_s), comm.link))
    bubble = pipeline_bubble_fraction(layout.pp, microbatches, layout.virtual_stages)
    return LayoutBreakdown(
        layout=layout,
        memory_bytes={name: float(value) for name, value in memory.parts().items()},
        total_memory_bytes=float(memory.total_bytes),
        hbm_bytes=float(chip_spec.hbm_bytes),
        time_parts=tuple(parts),
        lower_s=float(step.lower_s),
        upper_s=float(step.upper_s),
        mfu=float(step.mfu),
        bubble_fraction=float(bubble),
    )

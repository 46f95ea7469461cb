"""Training on a parallel layout: memory per GPU, the pipeline bubble, communication, the step.

* **DP** (data): each replica sees a slice of the batch; gradients are all-reduced once per
  step. ZeRO stage 1 / 2 / 3 shards optimizer state / + gradients / + weights over the DP
  group (stage 3 is FSDP), at the price of all-gathering the weights for every microbatch.
* **TP** (tensor, Megatron with sequence parallelism): every matrix is split across ``tp``
  GPUs; each layer all-reduces its activations twice forward and twice backward.
* **PP** (pipeline): ``pp`` stages of consecutive layers; only activations (forward) and their
  gradients (backward) cross a stage boundary, point to point; idle time is the bubble.
* **EP** (expert): each GPU of an EP group holds ``E / ep`` experts of every MoE layer and
  the tokens travel to their experts and back in all-to-alls. For the attention and dense
  parts the EP ranks are extra data-parallel replicas (the DeepSpeed-MoE convention).

Times come from :mod:`llmmath.core.collectives` and are FLOORS: collectives at full link speed with
their per-message latency, matmuls at ``flops_efficiency`` of the dense peak (the MFU knob), no
stragglers, perfect load balance.

>>> from llmmath.core import training
>>> round(training.pipeline_bubble_fraction(16, 32), 3)     # Llama 3 405B: PP16, 32 microbatches
0.319
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import collectives
from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import AnyOf, Count, Instance, OneOf, Optional, Real
from llmmath.core.contracts import (
    CHIP_COUNT,
    CHIPS,
    NAME,
    PARAMS,
    POSITIVE,
    RESULT,
    SCALAR,
    SCALAR_FRACTION,
    SCALAR_POSITIVE,
    TOKENS,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import routed_domain_limit
from llmmath.core.dtypes import DTYPE, bytes_per_element
from llmmath.core.expert_dispatch import node_limited_all_to_all
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import MODEL, ModelConfig, get_model
from llmmath.core.placement import (
    Group,
    Layout,
    dense_params,
    expert_params,
    group_through_gpu0,
    groups,
    layers_per_stage,
)
from llmmath.core.training_memory import ACTIVATION_MODES, recompute_flops_fraction

#: Forward (2) plus backward (4) FLOPs per parameter and token.
TRAINING_FLOPS_PER_PARAM_TOKEN = 6.0


# ---- the pipeline bubble ------------------------------------------------------------------
@contract(
    # the same counts as a Layout's and training_step's (CHIPS), as arrays for curves
    **each(CHIP_COUNT, "stages microbatches virtual_stages"),
)
def pipeline_bubble_fraction(
    stages: ArrayLike, microbatches: ArrayLike, virtual_stages: ArrayLike = 1
) -> float | FloatArray:
    """Share of a pipelined step that a stage sits idle: ``(p - 1) / (v m + p - 1)``.

    A stage waits ``p - 1`` microbatch-times for the first microbatch to reach it and as long
    again after its last one, while it works for ``m`` of them (GPipe and 1F1B alike); the
    interleaved schedule with ``v`` chunks per GPU shrinks the wait to ``(p - 1) / v``. It is
    0 for one stage and falls towards 0 as ``m`` grows.
    """
    p, m, v = as_floats(stages), as_floats(microbatches), as_floats(virtual_stages)
    return as_output((p - 1) / (v * m + p - 1))


# ---- communication and the step -------------------------------------------------------------
@dataclass(frozen=True)
@checked(**each(NAME, "kind collective link"), bytes_per_gpu=RESULT, time_s=RESULT)
class Communication:
    """One kind of parallelism's traffic in a step: the collective, bytes each GPU sends, the
    time (a floor) and the link it loads."""

    kind: str
    collective: str
    bytes_per_gpu: FloatArray
    time_s: FloatArray
    link: str


@dataclass(frozen=True)
@checked(
    **each(RESULT, "compute_s bubble_s tokens model_flop_per_gpu"),
    communication=Instance(dict),
    peak_flop_per_s=SCALAR,
)
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


#: A count of parameters, or a model whose parameters are counted.
PARAMS_OR_MODEL = AnyOf(
    (PARAMS, MODEL),
    f"a number of parameters ({PARAMS.allowed}) or a model (a name of models.list_models() "
    "or a llmmath.core.models.ModelConfig)",
)


@contract(params=PARAMS_OR_MODEL, tokens=POSITIVE, activations=OneOf(ACTIVATION_MODES, "mode"))
def training_flops(
    params: ArrayLike | str | ModelConfig, tokens: ArrayLike, activations: str = "stored"
) -> float | FloatArray:
    """FLOPs to train on ``tokens`` tokens: ``C = 6 N D``, the one training-FLOPs formula.

    ``params`` is an active-parameter count ``N`` or a model (its matmul weights: the input
    embedding is a lookup). Attention is left out. ``activations`` adds
    :func:`recompute_flops_fraction` for checkpointed or reversible layers.
    """
    per_token: float | FloatArray
    if isinstance(params, str | ModelConfig):
        per_token = get_model(params).training_flops_per_token()
    else:
        per_token = TRAINING_FLOPS_PER_PARAM_TOKEN * as_floats(params)
    T = as_floats(tokens)
    return as_output(per_token * (1 + recompute_flops_fraction(activations)) * T)


@contract(
    global_batch_tokens=POSITIVE,
    microbatches=CHIPS,
    activations=OneOf(ACTIVATION_MODES, "mode"),
    expert_dispatch=OneOf(("per_expert", "node_limited")),
    dispatch_dtype=Optional(DTYPE),
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
    expert_dispatch: str = "per_expert",
    dispatch_dtype: str | None = None,
) -> dict[str, Communication]:
    """Traffic per GPU in one training step, by kind, timed with :mod:`llmmath.core.collectives`.

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
      backward (and in a recomputed forward), ``tokens_mb * k * D / tp`` bytes from each GPU;
      with ``expert_dispatch="node_limited"`` one copy per domain a token reaches, as
      :attr:`llmmath.core.deployment.Deployment.expert_dispatch` counts it (the forward's
      dispatch in ``dispatch_dtype``, everything else in ``activation_dtype``).
    """
    spec = layout.validate(model)
    chip_spec = get_chip(chip)
    m = int(microbatches)
    tokens = as_floats(global_batch_tokens)
    b_act = bytes_per_element(activation_dtype)
    b_w = float(weight_bytes_per_param)
    b_g = float(grad_bytes_per_param)
    placed = groups(layout, chip_spec)
    recompute = recompute_flops_fraction(activations) > 0
    micro_tokens = tokens / (layout.dp * layout.ep * m)
    split = layout.tp * layout.pp
    layers = layers_per_stage(spec, layout)
    result: dict[str, Communication] = {}

    # DP: dense gradients over dp*ep GPUs, expert gradients over the dp GPUs that share experts.
    dp_groups = [(dense_params(spec) / split, placed["DP"])]
    if spec.is_moe:
        expert_dp = group_through_gpu0(layout, "DP", ("dp",), chip_spec.scale_up_domain_size)
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
    # forward, backward and (recomputing) the forward again, each per_layer all-reduces
    count = layers * m * spec.tp_all_reduces_per_layer * (2 + (1 if recompute else 0))
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
    ep_bytes, ep_time = a2a_count * per_chip * (ep.size - 1) / ep.size, a2a_count * a2a
    if ep.size > 1 and expert_dispatch == "node_limited":
        passes = moe_layers * m  # each pass: a dispatch and a combine
        forward = _node_limited(spec, layout, chip_spec, micro_tokens, dispatch_dtype or
                                activation_dtype, activation_dtype)  # fmt: skip
        backward = _node_limited(spec, layout, chip_spec, micro_tokens, activation_dtype,
                                 activation_dtype)  # fmt: skip
        forwards = 2 if recompute else 1
        ep_time = passes * (forwards * forward[0] + backward[0])
        ep_bytes = passes * (forwards * forward[1] + backward[1])
    result["EP"] = Communication("EP", "all-to-all", ep_bytes, ep_time, ep.link)
    return result


def _node_limited(
    spec: ModelConfig,
    layout: Layout,
    chip: Chip,
    micro_tokens: FloatArray,
    dispatch_dtype: str,
    combine_dtype: str,
) -> tuple[FloatArray, FloatArray]:
    """One MoE layer's dispatch and combine with one copy per domain a token reaches: its
    time and the bytes each GPU sends (network and NVLink)."""
    G = layout.ep
    domains = G // collectives.members_per_domain(G, chip)
    one = node_limited_all_to_all(
        spec,
        micro_tokens * G / layout.tp,  # the EP group's tokens of a microbatch
        G,
        chip,
        max_domains=routed_domain_limit(spec, domains),
        dispatch_dtype=dispatch_dtype,
        combine_dtype=combine_dtype,
    )
    sent = np.asarray(one.network_bytes_per_gpu + one.nvlink_bytes_per_gpu)
    return np.asarray(one.all_to_all_s), sent


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

    if stage == 0:  # one all-reduce: the base latency once
        time = np.asarray(collectives.hierarchical_all_reduce_time_s(grads, n, chip, per_domain=g))
        sent = 2 * grads * share
    elif stage in (1, 2):
        time = gather(grads) + gather(weights)
        sent = (grads + weights) * share
    else:
        time = gather(grads) + 2 * microbatches * gather(weights)
        sent = (grads + 2 * microbatches * weights) * share
    return time, np.asarray(sent)


@contract(
    global_batch_tokens=POSITIVE,
    microbatches=CHIPS,
    activations=OneOf(ACTIVATION_MODES, "mode"),
    flops_efficiency=SCALAR_FRACTION,
    expert_dispatch=OneOf(("per_expert", "node_limited")),
    dispatch_dtype=Optional(DTYPE),
)
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
    expert_dispatch: str = "per_expert",
    dispatch_dtype: str | None = None,
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
    efficiency = float(flops_efficiency)
    m = int(microbatches)
    tokens = as_floats(global_batch_tokens)
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
        expert_dispatch=expert_dispatch,
        dispatch_dtype=dispatch_dtype,
    )
    return TrainingStep(
        compute_s=compute,
        bubble_s=bubble,
        communication=communication,
        tokens=tokens,
        model_flop_per_gpu=np.asarray(training_flops(spec, tokens)) / layout.n_gpus,
        peak_flop_per_s=peak,
    )


@contract()
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


@contract()
def dp_hiding_batch(
    chip: str | Chip,
    n_chips: int,
    *,
    per_domain: int | None = None,
    grad_dtype: str = "bf16",
    compute_dtype: str = "bf16",
) -> float:
    """The DP hiding batch ``B_DP``: tokens per data-parallel replica above which the gradient
    all-reduce hides under the backward pass (per GPU for pure DP). Not the critical batch
    ``B*`` of decode (``C b_w / 2W``, HBM): this one is set by the link the gradients cross.

    The backward pass does ``4 P`` FLOPs per token on a replica's ``B_r`` tokens; the
    all-reduce of ``P`` gradients of ``b_g`` bytes takes ``2 b_g P (n-1) / (n W_link)`` on one
    level. Equal when

        B_DP = C * T_allreduce(b_g bytes) / 4  =  (b_g / 2) * (C / W_link) * (n - 1) / n,

    ``C / W_link`` for bf16 gradients and a large group: about 2,200 tokens on H100 over
    NVLink (the scaling book, gpus) and ``C / (8 * 50 GB/s) = 2,470`` across nodes of 8. FP8
    arithmetic (``compute_dtype="fp8"``) doubles ``C`` and so ``B_DP``.
    """
    spec = get_chip(chip)
    # An all-reduce is two all-gathers' worth of bytes.
    per_byte = 2 * collectives.hierarchical_all_gather_s_per_byte(
        n_chips, spec, per_domain=per_domain
    )
    per_param = bytes_per_element(grad_dtype) * per_byte
    return per_param * spec.peak(compute_dtype) / 4.0


# ---- the critical batch: how far data parallelism is worth taking -------------------------
# McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch Training" (arXiv
# 1812.06162): to reach a given loss, training at batch B takes S steps and E = B S examples,
# and over a wide range of B the two trade off as (S / S_min - 1)(E / E_min - 1) = 1, with
# S_min the fewest steps (an infinite batch) and E_min the fewest examples (a tiny batch).
# The critical batch B_crit = E_min / S_min is the knee of that hyperbola.
@contract(gradient_variance_trace=POSITIVE, gradient_norm_squared=POSITIVE)
def gradient_noise_scale(
    gradient_variance_trace: ArrayLike, gradient_norm_squared: ArrayLike
) -> float | FloatArray:
    """The simple gradient noise scale ``B_simple = tr(Σ) / |G|²`` (McCandlish et al. 2018).

    ``Σ`` is the covariance of one example's gradient and ``G`` the true (whole-data)
    gradient: a batch of ``B`` examples estimates ``G`` with noise ``tr(Σ) / B``, as large as
    the signal ``|G|²`` at ``B = B_simple``. Below it, a bigger batch buys a proportionally
    better step; far above it, the step hardly improves. The paper finds the measured critical
    batch ``B_crit`` close to this noise scale (its ``B_noise``, the same with the Hessian's
    weighting, is the exact version under its model), and that it grows as the loss falls.
    """
    return as_output(as_floats(gradient_variance_trace) / as_floats(gradient_norm_squared))


@dataclass(frozen=True)
@checked(**each(RESULT, "batch critical_batch steps_factor examples_factor"))
class BatchTradeoff:
    """Steps and examples to reach one loss at ``batch``, as multiples of their minima.

    ``steps_factor = S / S_min = 1 + B_crit / B`` and ``examples_factor = E / E_min =
    1 + B / B_crit``: their product of excesses ``(S/S_min - 1)(E/E_min - 1)`` is 1. At
    ``B = B_crit`` both are 2: twice the fewest steps, twice the fewest examples (compute).
    """

    batch: float | FloatArray
    critical_batch: float
    steps_factor: float | FloatArray
    examples_factor: float | FloatArray


@contract(batch=POSITIVE, critical_batch=SCALAR_POSITIVE)
def batch_tradeoff(batch: ArrayLike, critical_batch: float) -> BatchTradeoff:
    """McCandlish et al.'s trade-off of steps against examples at ``batch`` (any unit, the
    same as ``critical_batch``: examples, sequences or tokens).

    From ``(S/S_min - 1)(E/E_min - 1) = 1`` with ``E = B S`` and ``B_crit = E_min / S_min``:

        S / S_min = 1 + B_crit / B,        E / E_min = 1 + B / B_crit.

    Doubling a batch far below ``B_crit`` halves the steps for almost no extra compute (data
    parallelism is free); doubling it far above ``B_crit`` doubles the compute and saves almost
    no step (the extra replicas are wasted).
    """
    b = as_floats(batch)
    ratio = b / critical_batch
    return BatchTradeoff(
        batch=as_output(b),
        critical_batch=float(critical_batch),
        steps_factor=as_output(1.0 + 1.0 / ratio),
        examples_factor=as_output(1.0 + ratio),
    )


def _whole_sequences(
    batch_tokens: float, sequence_tokens: int, sequences_per_replica: int
) -> str | None:
    """The rule of :func:`data_parallel_ceiling` (its ``where=``): a replica's share of the
    batch is at least one whole sequence."""
    if batch_tokens < sequence_tokens * sequences_per_replica:
        return (
            f"batch_tokens = {batch_tokens:,.0f} holds fewer than sequences_per_replica = "
            f"{sequences_per_replica} sequences of sequence_tokens = {sequence_tokens:,}: "
            "even one data-parallel replica has no whole microbatch"
        )
    return None


#: A global batch in tokens: a whole number >= 1 (Llama 3's 16M is 16,777,216).
BATCH_TOKENS = Real(low=1.0, low_open=False, integer=True, scalar=True, unit="tokens")


#: What a replica's share of the batch must satisfy: both functions below take these inputs.
_replica_rules: dict[str, Any] = {
    "batch_tokens": BATCH_TOKENS,
    "sequence_tokens": TOKENS,
    "sequences_per_replica": Count(),
    "where": _whole_sequences,
}


@contract(**_replica_rules)
def data_parallel_ceiling(
    batch_tokens: float, sequence_tokens: int, sequences_per_replica: int = 1
) -> int:
    """The most data-parallel replicas a global batch can feed: ``batch / (T m)``, rounded down.

    A replica must see at least ``m`` whole sequences of ``T`` tokens a step (one, if its
    pipeline and its matmuls can live with that; a pipeline wants ``m`` >= its stages, or it
    idles). The batch itself is set by optimisation, not by the cluster: past the critical
    batch (:func:`batch_tradeoff`) a larger one buys few steps for much compute. So the
    critical batch, through the batch it allows, is data parallelism's real ceiling.
    Splitting a sequence (context parallelism) is model parallelism here: it does not add a
    replica.
    """
    return int(batch_tokens // (sequence_tokens * sequences_per_replica))


@contract(**_replica_rules)
def min_model_parallel_degree(
    n_chips: int, batch_tokens: float, sequence_tokens: int, sequences_per_replica: int = 1
) -> int:
    """The smallest model-parallel degree (TP x CP x PP x EP: chips per data-parallel
    replica) that keeps ``n_chips`` busy with a global batch of ``batch_tokens``:
    ``ceil(n_chips / data_parallel_ceiling(...))``, at least 1.

    Llama 3 405B: 16M tokens in sequences of 8,192 are 2,048 sequences, so at most 2,048
    replicas; 16,384 H100 need at least 8 chips per replica. At 128K tokens a sequence the same
    batch is 128 sequences and 16,384 chips need 128 per replica.
    """
    ceiling = data_parallel_ceiling(batch_tokens, sequence_tokens, sequences_per_replica)
    return max(1, -(-n_chips // ceiling))

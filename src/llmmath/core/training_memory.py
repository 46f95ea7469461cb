"""Memory per GPU while training: model state (weights, gradients, optimizer) and activations.

ZeRO stage 1 / 2 / 3 shards optimizer state / + gradients / + weights over the data-parallel
group; activations are stored, checkpointed (recomputed in the backward pass) or, with
reversible layers, rebuilt from the layer's output. :mod:`llmmath.core.training` times the step.

>>> from llmmath.core import training_memory
>>> training_memory.recompute_flops_fraction("checkpointed")
0.3333333333333333
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import Count, OneOf, Optional, Real
from llmmath.core.contracts import (
    AMOUNT,
    CHIPS,
    POSITIVE,
    RESULT,
    SCALAR,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
    vocabulary,
)
from llmmath.core.dtypes import bytes_per_element
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.placement import (
    Layout,
    MemoryPerGpu,
    dense_params,
    expert_params,
    stage_loads,
)

#: Bytes each parameter takes, one rule wherever a function takes them (#47: the memory
#: functions accepted 0 bytes of weights and gradients, the communication ones refused it).
#: Weights and gradients are > 0: every trained weight is held and gets a gradient in some
#: format (fp8 is 1, a 4-bit format 0.5), and 0 would make the DP traffic vanish rather than
#: describe a format. Optimizer state may be 0: plain SGD keeps none.
vocabulary(
    weight_bytes_per_param=SCALAR_POSITIVE,
    grad_bytes_per_param=SCALAR_POSITIVE,
    optimizer_bytes_per_param=SCALAR,
)

#: How activations are kept for the backward pass (see :func:`activation_memory_bytes`).
ACTIVATION_MODES = ("stored", "checkpointed", "reversible")
#: Mixed-precision Adam (ZeRO paper, arXiv 1910.02054): bf16/fp16 weights and gradients, and
#: an fp32 master copy, momentum and variance, K = 12 bytes: 16 bytes per parameter in all.
ADAM_MIXED_BYTES_PER_PARAM = {"weights": 2.0, "grads": 2.0, "optimizer": 12.0}


@dataclass(frozen=True)
@checked(**each(RESULT, "weights_bytes grads_bytes optimizer_bytes activations_bytes"))
class TrainingMemory(MemoryPerGpu):
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


@contract(
    n_params=AMOUNT,
    dp=Real(low=1.0, low_open=False, integer=True),
    zero_stage=Count(low=0, high=3),
)
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
    P = as_floats(n_params)
    N = as_floats(dp)
    stage = Layout(zero_stage=zero_stage).zero_stage  # validates the stage
    per_param = (weight_bytes_per_param, grad_bytes_per_param, optimizer_bytes_per_param)
    b_w, b_g, b_o = (as_floats(value) for value in per_param)
    return TrainingMemory(
        weights_bytes=b_w * P / (N if stage >= 3 else 1.0),
        grads_bytes=b_g * P / (N if stage >= 2 else 1.0),
        optimizer_bytes=b_o * P / (N if stage >= 1 else 1.0),
        activations_bytes=np.zeros_like(P),
    )


@contract()
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
        values = N * spec.mla_value_head_dim  # the values, then the attention output
        attention = 2 * D + 2 * qk + 2 * values + spec.mla_q_lora_rank + spec.mla_kv_lora_rank
    else:
        attention = 2 * D + N * H + 2 * K * H + N * H
    dense_mlp = 2 * D + spec.mlp_matrices * spec.d_ff
    experts = spec.experts_per_token + spec.n_shared_experts
    moe_mlp = 2 * D + experts * (D + 3 * spec.expert_d_ff)
    n_dense = spec.n_layers - spec.n_moe_layers
    elements = spec.n_layers * attention + n_dense * dense_mlp + spec.n_moe_layers * moe_mlp
    return float(elements * bytes_per_element(dtype))


@contract(
    tokens=AMOUNT,
    mode=OneOf(ACTIVATION_MODES, "mode"),
    n_layers=Optional(SCALAR_POSITIVE),
    microbatches_in_flight=CHIPS,
)
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
    T = as_floats(tokens)
    layers = as_floats(spec.n_layers if n_layers is None else n_layers)
    shards = int(tp)
    flight = int(microbatches_in_flight)
    per_layer = activation_bytes_per_token(spec, dtype) / spec.n_layers
    layer_input = spec.d_model * bytes_per_element(dtype)
    if mode == "stored":
        kept = flight * T * layers * per_layer
    elif mode == "checkpointed":
        kept = flight * T * layers * layer_input + T * per_layer
    else:
        kept = flight * T * 2 * layer_input + T * per_layer
    return as_output(kept / shards)


@contract(mode=OneOf(ACTIVATION_MODES, "mode"))
def recompute_flops_fraction(mode: str) -> float:
    """Extra training FLOPs over ``6 P`` per token: 0 when activations are stored; one more
    forward pass, ``2P / 6P = 1/3``, for checkpointing, and the same for reversible layers,
    which recompute each layer once to rebuild its inputs and take its gradients."""
    return 0.0 if mode == "stored" else 1.0 / 3.0


@contract(
    global_batch_tokens=POSITIVE,
    microbatches=CHIPS,
    activations=OneOf(ACTIVATION_MODES, "mode"),
)
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
    m = int(microbatches)
    tokens = as_floats(global_batch_tokens)
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
    for layers, in_flight in stage_loads(spec, layout, m):
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


__all__ = [
    "ACTIVATION_MODES",
    "ADAM_MIXED_BYTES_PER_PARAM",
    "TrainingMemory",
    "activation_bytes_per_token",
    "activation_memory_bytes",
    "model_state_bytes",
    "recompute_flops_fraction",
    "training_memory",
]

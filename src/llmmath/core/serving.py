"""The serving core: a model deployed on some chips, one decode step and one prefill.

Every chapter that times a step calls this module: the roofline and batching chapters on a
deployment with no layout (weights and KV caches spread evenly, no traffic between chips), the
parallelism and MoE chapters with a :class:`~llmmath.core.placement.Layout` (tensor, expert,
pipeline and data parallelism, and the collectives they need).

A decode step feeds one new token of each of ``batch`` sequences (B), each with ``context``
tokens (T) cached. On each chip it

* reads the matmul weights it touches once (for an MoE, the experts some token is routed to);
* reads its share of every sequence's KV cache;
* does its share of the ``2 B P`` matmul FLOPs and of the attention FLOPs over the context;
* with a layout, waits for the tensor-parallel all-reduces and expert all-to-alls between its
  matmuls, and (with pipeline stages) sends activations to the next stage.

**The overlap rule** says how those parts add up, and it is always named:

* ``overlap="perfect"`` (the default) gives the **floor**: ``max(compute, memory,
  communication)``. Nothing that does this work can be faster.
* ``overlap="none"`` gives the **serial estimate**: each operation at its own roofline
  (matmuls ``max(FLOPs, weight read)``, attention ``max(FLOPs, KV read)``) one after the
  other, then the communication with nothing hidden under it (the scaling book's estimate;
  DeepSeek and SGLang hide the all-to-all behind a second micro-batch, so real systems sit
  between the two).

``C`` and ``W`` are the datasheet peaks times the ``flops_efficiency`` and
``bandwidth_efficiency`` knobs (1.0 = datasheet). Activations' working memory and the write of
each new token's keys and values (1/T of the KV read) are left out.

>>> from llmmath.core import serving
>>> llama = serving.Deployment("Llama-3-70B", "H100", 8)
>>> round(float(serving.decode_step(llama, 1, 0).time_s) * 1e3, 2)  # ms, weights / bandwidth
5.19
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core._checks import FloatArray, as_floats
from llmmath.core._constraints import OneOf
from llmmath.core.chip_prices import cost_per_million_tokens_usd
from llmmath.core.contracts import PROMPT, RESULT, checked, contract, each
from llmmath.core.deployment import (
    Deployment,
    check_capacity,
    chip_shares,
    step_traffic,
    weight_bytes_read_per_chip,
)
from llmmath.core.models import check_context
from llmmath.core.placement import DoesNotFitError
from llmmath.core.roofline import roofline_time

#: How a step's parts add up: "perfect" overlap is the floor, "none" the serial estimate.
OVERLAP_RULES = ("perfect", "none")


# ---- the overlap rule ------------------------------------------------------------------------
def _perfect_overlap(compute: FloatArray, memory: FloatArray, comm: FloatArray) -> FloatArray:
    """The floor of one stage: its slowest part, every other part hidden under it."""
    return np.maximum(np.maximum(compute, memory), comm)


def _through_pipeline(stage: FloatArray, pp: int, hop: FloatArray) -> FloatArray:
    """A token passes every stage in turn, and the ``pp - 1`` hops between them."""
    return pp * stage + (pp - 1) * hop


# ---- one decode step ------------------------------------------------------------------------
@dataclass(frozen=True)
@checked(
    **each(RESULT, "batch context weight_read_s kv_read_s matmul_compute_s attention_compute_s"),
    **each(RESULT, "tp_s ep_s pp_s flops bytes_read hbm_needed_bytes"),
    overlap=OneOf(OVERLAP_RULES),
)
class DecodeStep:
    """One decode step of ``batch`` sequences at ``context``, per chip; arrays broadcast.

    ``batch`` counts the sequences that finish a token in one stage step of the whole
    deployment (with a pipeline of ``pp`` stages, ``pp`` such batches are in flight).
    """

    deployment: Deployment
    batch: FloatArray
    context: FloatArray
    overlap: str
    #: Reading the matmul weights a chip touches once (shared by the whole batch).
    weight_read_s: FloatArray
    #: Reading the chip's share of every sequence's KV cache.
    kv_read_s: FloatArray
    #: The chip's share of the ``2 B P`` matmul FLOPs.
    matmul_compute_s: FloatArray
    #: The chip's share of the attention FLOPs over the context (QK^T and AV).
    attention_compute_s: FloatArray
    #: Tensor-parallel all-reduces, expert all-to-alls, and one pipeline hop (0 without).
    tp_s: FloatArray
    ep_s: FloatArray
    pp_s: FloatArray
    #: FLOPs of the step, all chips together.
    flops: FloatArray
    #: Bytes the step reads from HBM, all chips together: weights + KV caches.
    bytes_read: FloatArray
    #: HBM the deployment needs to hold: the weights on every chip + the batch's KV caches.
    hbm_needed_bytes: FloatArray

    @property
    def pp(self) -> int:
        return self.deployment.layout.pp if self.deployment.layout is not None else 1

    @property
    def compute_s(self) -> FloatArray:
        return self.matmul_compute_s + self.attention_compute_s

    @property
    def memory_s(self) -> FloatArray:
        """Time to read everything the step needs: the latency floor at this B and T."""
        return self.weight_read_s + self.kv_read_s

    @property
    def communication_s(self) -> FloatArray:
        """Collectives between a stage's matmuls (the pipeline hop is counted per token)."""
        return self.tp_s + self.ep_s

    @property
    def stage_s(self) -> FloatArray:
        """One pipeline stage's share of the step under the step's overlap rule."""
        return self.stage_time_s()

    @contract(overlap=OneOf(OVERLAP_RULES))
    def stage_time_s(self, overlap: str | None = None) -> FloatArray:
        """One pipeline stage's share of the step under ``overlap`` (the step's own rule by
        default): ``max(compute, memory, communication)``, or each operation at its roofline
        in turn and then the communication."""
        if (overlap or self.overlap) == "perfect":
            return _perfect_overlap(self.compute_s, self.memory_s, self.communication_s)
        matmuls = np.maximum(self.matmul_compute_s, self.weight_read_s)
        attention = np.maximum(self.attention_compute_s, self.kv_read_s)
        return matmuls + attention + self.communication_s

    @contract(overlap=OneOf(OVERLAP_RULES))
    def token_time_s(self, overlap: str | None = None) -> FloatArray:
        """Time between two tokens of one sequence: through every stage and every hop."""
        return _through_pipeline(self.stage_time_s(overlap), self.pp, self.pp_s)

    @property
    def time_s(self) -> FloatArray:
        """The step (time per output token) under the step's overlap rule."""
        return self.token_time_s()

    @property
    def floor_s(self) -> FloatArray:
        """The floor: perfect overlap of compute, memory and communication."""
        return self.token_time_s("perfect")

    @property
    def serial_s(self) -> FloatArray:
        """The serial estimate: no overlap between operations or with communication."""
        return self.token_time_s("none")

    @property
    def compute_bound(self) -> FloatArray:
        """True where the step's FLOPs take at least as long as everything it reads (weights
        and KV caches): the floor's own test, ``compute_s >= memory_s``."""
        return np.asarray(self.compute_s >= self.memory_s)

    @property
    def weights_amortized(self) -> FloatArray:
        """True where the matmuls' FLOPs outlast the weight read alone (the batch is past
        the weights-only critical batch ``C b_w / 2W``); the KV read is not counted, so a
        step can be past it and still memory-bound."""
        return np.asarray(self.matmul_compute_s >= self.weight_read_s)

    @property
    def fits(self) -> FloatArray:
        """True where weights and KV caches fit in the deployment's HBM."""
        return np.asarray(self.hbm_needed_bytes <= self.deployment.hbm_bytes)

    @property
    def tokens_per_s(self) -> FloatArray:
        """Output tokens per second of the whole deployment: ``B`` per stage step."""
        return self.batch / self.stage_s

    @property
    def tokens_per_s_per_chip(self) -> FloatArray:
        return self.tokens_per_s / self.deployment.n_chips

    @property
    def tokens_per_s_per_user(self) -> FloatArray:
        """What one sequence sees: one token per step, ``1 / t``."""
        return 1.0 / self.time_s

    @contract()
    def cost_per_million_tokens_usd(self, usd_per_chip_hour: float | None = None) -> FloatArray:
        """Rent of the chips per million output tokens (the deployment's price by default)."""
        dep = self.deployment
        price = dep.chip_hour_usd if usd_per_chip_hour is None else usd_per_chip_hour
        cost = cost_per_million_tokens_usd(self.stage_s, self.batch, dep.n_chips, price)
        return np.asarray(cost, dtype=np.float64)


@contract(overlap=OneOf(OVERLAP_RULES))
def decode_step(
    deployment: Deployment,
    batch: ArrayLike,
    context: ArrayLike,
    *,
    overlap: str = "perfect",
    allow_overflow: bool = False,
) -> DecodeStep:
    """One decode step of ``batch`` sequences, each with ``context`` tokens cached.

    Per chip: weights ``P_read b_w`` over its shard; KV ``B T kv`` over its share (what
    attention reads: a sparse model's k picked tokens and index keys,
    :meth:`~llmmath.core.models.ModelConfig.kv_bytes_read`); matmuls
    ``2 B P / (n C)``; attention ``B F_attn(T) / (n C)`` (MLA absorbed); and, with a layout,
    the collectives. ``batch`` and ``context`` broadcast. Raises :class:`DoesNotFitError`
    where the KV caches do not fit beside the weights, unless ``allow_overflow`` (then see
    :attr:`DecodeStep.fits`). ``overlap`` names how the parts add up (module docstring).
    """
    dep, model = deployment, deployment.model  # types and names: checked by the contract
    B0 = as_floats(batch)
    T0 = check_context(model, context)
    B, T = (np.array(a, dtype=np.float64) for a in np.broadcast_arrays(B0, T0))
    if not allow_overflow:
        check_capacity(dep, B, T)
    split = chip_shares(dep)
    matmul_flops = B * 2.0 * model.matmul_params_per_token
    attention_flops = B * np.asarray(model.attention_flops_per_token(T, decode=True))
    weight_bytes = weight_bytes_read_per_chip(dep, split, B)
    # What each sequence's attention reads: window-exact, k tokens of a sparse model
    kv_per_sequence = np.asarray(model.kv_bytes_read(dep.kv_dtype, T))
    kv_bytes = B / split.replicas * kv_per_sequence / split.kv_read
    knobs = {
        "flops_efficiency": dep.flops_efficiency,
        "bandwidth_efficiency": dep.bandwidth_efficiency,
    }
    matmuls = roofline_time(
        matmul_flops / split.flops, weight_bytes, dep.chip, dep.compute_dtype, **knobs
    )
    attention = roofline_time(
        attention_flops / split.flops, kv_bytes, dep.chip, dep.attention_compute_dtype, **knobs
    )
    traffic = step_traffic(dep, B / split.replicas)
    kv_held = dep.kv_bytes_held(B, T)  # the count check_capacity compares (window-exact)
    return DecodeStep(
        deployment=dep,
        batch=B,
        context=T,
        overlap=overlap,
        weight_read_s=np.asarray(matmuls.memory_s),
        kv_read_s=np.asarray(attention.memory_s),
        matmul_compute_s=np.asarray(matmuls.compute_s),
        attention_compute_s=np.asarray(attention.compute_s),
        tp_s=traffic.tp_s,
        ep_s=traffic.ep_s,
        pp_s=traffic.pp_s,
        flops=matmul_flops + attention_flops,
        bytes_read=(weight_bytes + kv_bytes) * dep.n_chips,
        hbm_needed_bytes=dep.hbm_bytes - dep.kv_budget_bytes + kv_held,
    )


# ---- prefill --------------------------------------------------------------------------------
@dataclass(frozen=True)
@checked(
    **each(RESULT, "prompt_tokens batch compute_s memory_s communication_s pp_s flops bytes_moved"),
    overlap=OneOf(OVERLAP_RULES),
)
class PrefillStep:
    """Prefill of ``batch`` prompts of ``prompt_tokens``: one forward pass over all of them."""

    deployment: Deployment
    prompt_tokens: FloatArray
    batch: FloatArray
    overlap: str
    compute_s: FloatArray
    memory_s: FloatArray
    #: Tensor-parallel all-reduces and expert all-to-alls per stage; one pipeline hop.
    communication_s: FloatArray
    pp_s: FloatArray
    #: FLOPs, all chips together.
    flops: FloatArray
    #: Bytes moved, all chips together: the weights read once, the KV caches written.
    bytes_moved: FloatArray

    @property
    def pp(self) -> int:
        return self.deployment.layout.pp if self.deployment.layout is not None else 1

    @property
    def time_s(self) -> FloatArray:
        """Through every stage: ``max(compute, memory, communication)`` per stage under
        perfect overlap, ``max(compute, memory) + communication`` under none."""
        if self.overlap == "perfect":
            stage = _perfect_overlap(self.compute_s, self.memory_s, self.communication_s)
        else:
            stage = np.maximum(self.compute_s, self.memory_s) + self.communication_s
        return _through_pipeline(stage, self.pp, self.pp_s)

    @property
    def compute_bound(self) -> FloatArray:
        return np.asarray(self.compute_s > self.memory_s)

    @property
    def tokens_per_s(self) -> FloatArray:
        return self.batch * self.prompt_tokens / self.time_s


@contract(prompt_tokens=PROMPT, overlap=OneOf(OVERLAP_RULES))
def prefill(
    deployment: Deployment,
    prompt_tokens: ArrayLike,
    batch: ArrayLike = 1,
    *,
    overlap: str = "perfect",
    allow_overflow: bool = False,
) -> PrefillStep:
    """Prefill ``batch`` prompts of ``prompt_tokens`` (P) each in one pass.

    FLOPs: ``B P`` tokens, token ``i`` attending to its ``i`` predecessors, so
    ``B P * forward_flops_per_token((P - 1) / 2)``. Bytes: the weights once (for an MoE, the
    experts the ``B P`` tokens touch) plus the ``B P`` new tokens' keys and values written.
    With a layout, the pass pays the same collectives as a decode step, for ``B P`` tokens.
    A prompt is a batch of P tokens for the weights, so prefill is compute-bound once ``B P``
    passes the critical batch.
    """
    dep, model = deployment, deployment.model  # types and names: checked by the contract
    P0 = check_context(model, prompt_tokens, "prompt_tokens")
    if np.any(P0 < 1):  # the contract's rule, again for a caller's context (serving_cost's)
        raise ValueError(f"prompt_tokens must be >= 1; got {float(np.min(P0)):g}")
    B0 = as_floats(batch)
    P, B = (np.array(a, dtype=np.float64) for a in np.broadcast_arrays(P0, B0))
    if not allow_overflow:
        check_capacity(dep, B, P)
    split = chip_shares(dep)
    tokens = B * P
    flops = tokens * np.asarray(model.forward_flops_per_token((P - 1.0) / 2.0))
    timed = flops  # FLOPs at the matmuls' peak: attention's scaled to its own format's peak
    if dep.attention_compute_dtype != dep.compute_dtype:
        attention = tokens * np.asarray(model.attention_flops_per_token((P - 1.0) / 2.0))
        speed = dep.chip.peak(dep.compute_dtype) / dep.chip.peak(dep.attention_compute_dtype)
        timed = flops + attention * (speed - 1.0)
    weight_bytes = weight_bytes_read_per_chip(dep, split, tokens)
    kv_written = (
        tokens / split.replicas * dep.model.kv_bytes_per_token(dep.kv_dtype) / split.kv_read
    )
    t = roofline_time(
        timed / split.flops,
        weight_bytes + kv_written,
        dep.chip,
        dep.compute_dtype,
        flops_efficiency=dep.flops_efficiency,
        bandwidth_efficiency=dep.bandwidth_efficiency,
    )
    traffic = step_traffic(dep, tokens / split.replicas)
    return PrefillStep(
        deployment=dep,
        prompt_tokens=P,
        batch=B,
        overlap=overlap,
        compute_s=np.asarray(t.compute_s),
        memory_s=np.asarray(t.memory_s),
        communication_s=traffic.tp_s + traffic.ep_s,
        pp_s=traffic.pp_s,
        flops=flops,
        bytes_moved=(weight_bytes + kv_written) * dep.n_chips,
    )


__all__ = [
    "OVERLAP_RULES",
    "DecodeStep",
    "Deployment",
    "DoesNotFitError",
    "PrefillStep",
    "decode_step",
    "prefill",
]

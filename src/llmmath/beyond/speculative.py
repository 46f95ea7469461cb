"""Speculative decoding and multi-token prediction: more than one token per weight read.

A decode step reads every weight once and gives each sequence one token, so at small batch
its time is the weight floor. A cheap **draft** (a small model, or DeepSeek-V3's
multi-token-prediction module) proposes ``k`` tokens; one step of the big model **verifies**
all ``k + 1`` positions at once, reading its weights once; the first rejected draft and
everything after it are thrown away. With each draft accepted with probability ``a``
independently, a step yields ``(1 - a^(k+1)) / (1 - a)`` tokens on average (Leviathan et al.
2023). The verify step does ``k + 1`` times the matmul FLOPs, so the gain shrinks once those
FLOPs outlast the step's reads (weights and KV caches), and turns into a loss where
:func:`break_even_batch` says, if any batch that fits gets there: at long context the KV read
keeps even a full HBM's batch memory-bound. Times are :func:`llmmath.core.serving.decode_step`
floors.

>>> from llmmath.beyond import speculative
>>> round(float(speculative.expected_tokens_per_step(0.85, 1)), 2)
1.85
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import data
from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import Count, Real
from llmmath.core.capacity import max_batch
from llmmath.core.contracts import FRACTION, NAME, RESULT, SCALAR, checked, contract, each
from llmmath.core.deployment import Deployment
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.serving import decode_step

#: An acceptance probability: in [0, 1].
ACCEPTANCE = Real(low=0.0, low_open=False, high=1.0)
#: A draft's KV read per draft token over the target's: in [0, 1] (0: a draft with no cache).
DRAFT_KV_SHARE = Real(low=0.0, low_open=False, high=1.0, scalar=True)
#: Tokens drafted per sequence per verify step: at least one (no draft is the plain decode
#: step, which `serving.decode_step` is), at most 64.
DRAFT_TOKENS = Count(high=64)


@contract(acceptance=ACCEPTANCE, draft_tokens=DRAFT_TOKENS)
def expected_tokens_per_step(acceptance: ArrayLike, draft_tokens: int) -> float | FloatArray:
    """Tokens one verify step yields on average: ``sum_{i=0..k} a^i = (1 - a^(k+1)) / (1 - a)``
    (each of ``k`` drafts kept only if it and every draft before it are accepted, plus the
    big model's own token at the first rejection)."""
    a = as_floats(acceptance)
    k = draft_tokens
    with np.errstate(divide="ignore", invalid="ignore"):  # a = 1: every draft kept
        tokens = np.where(a < 1.0, (1.0 - a ** (k + 1)) / (1.0 - a), k + 1.0)
    return as_output(tokens)


@contract()
def mtp_draft_share(model: str | ModelConfig) -> float:
    """Weights an MTP module reads per draft token, as a share of the main model's matmul
    weights: one more transformer layer (an average layer's active weights), the
    ``2D x D`` projection that joins the hidden state to the next token's embedding, and the
    shared output head (DeepSeek-V3 report, section 2.2)."""
    spec = get_model(model)
    head = spec.vocab_size * spec.d_model
    layer = (spec.matmul_params_per_token - head) / spec.n_layers
    projection = 2 * spec.d_model * spec.d_model
    return float((layer + projection + head) / spec.matmul_params_per_token)


@contract()
def mtp_draft_kv_share(model: str | ModelConfig) -> float:
    """KV bytes an MTP module reads per draft token, as a share of the main model's: its one
    transformer layer keeps a cache like any other layer's, ``1 / n_layers`` of the model's."""
    return 1.0 / get_model(model).n_layers


@dataclass(frozen=True)
@checked(
    **each(RESULT, "batch context plain_time_s verify_time_s draft_time_s"),
    **each(RESULT, "tokens_per_step acceptance draft_share draft_kv_share"),
    draft_tokens=DRAFT_TOKENS,
)
class SpeculativeStep:
    """One verify step of ``batch`` sequences with ``draft_tokens`` drafts each, against a
    plain decode step, at the floor."""

    batch: FloatArray
    context: FloatArray
    draft_tokens: int
    acceptance: FloatArray
    draft_share: float
    plain_time_s: FloatArray
    #: The big model over ``k + 1`` positions per sequence: weights and KV caches read once,
    #: ``k + 1`` times the FLOPs.
    verify_time_s: FloatArray
    #: ``k`` draft steps, each ``draft_share`` of a plain step's weight read and
    #: ``draft_kv_share`` of its KV read (the draft's own caches).
    draft_time_s: FloatArray
    tokens_per_step: FloatArray
    draft_kv_share: float = 0.0

    @property
    def time_s(self) -> FloatArray:
        return self.verify_time_s + self.draft_time_s

    @property
    def speedup(self) -> FloatArray:
        """Tokens per second per sequence against plain decoding (below 1: a loss)."""
        return self.tokens_per_step * self.plain_time_s / self.time_s


@contract(
    draft_tokens=DRAFT_TOKENS,
    acceptance=ACCEPTANCE,
    draft_share=FRACTION,
    draft_kv_share=DRAFT_KV_SHARE,
)
def speculative_step(
    deployment: Deployment,
    batch: ArrayLike,
    context: ArrayLike,
    draft_tokens: int,
    acceptance: ArrayLike,
    draft_share: float,
    *,
    draft_kv_share: float = 0.0,
) -> SpeculativeStep:
    """Speculative decoding on ``deployment`` (without pipeline stages), at the floor.

    Verify: ``max(FLOPs of B (k+1) tokens, weights + B KV caches, collectives)``, the same
    perfect-overlap rule as a decode step. Draft: ``k`` steps, each reading ``draft_share`` of
    the weights and ``draft_kv_share`` of the batch's KV read (the draft's own caches: a
    small model's, or an MTP module's one layer), memory-bound because a draft is small. The
    draft's caches also take HBM beside the target's; that is left out of what fits."""
    if deployment.layout is not None and deployment.layout.pp > 1:
        raise ValueError("speculative_step: a deployment with pipeline stages is not modelled")
    a = as_floats(acceptance)
    share = float(draft_share)
    plain = decode_step(deployment, batch, context)
    wide = decode_step(deployment, plain.batch * (draft_tokens + 1), context, allow_overflow=True)
    # The k + 1 positions share one read of the weights they touch (for an MoE, the experts
    # all B (k + 1) tokens route to) and of each sequence's KV cache.
    memory = wide.weight_read_s + plain.kv_read_s
    verify = np.maximum(np.maximum(wide.compute_s, memory), wide.communication_s)
    kv_share = float(draft_kv_share)
    draft = draft_tokens * (share * plain.weight_read_s + kv_share * plain.kv_read_s)
    return SpeculativeStep(
        batch=plain.batch,
        context=plain.context,
        draft_tokens=draft_tokens,
        acceptance=np.asarray(a),
        draft_share=share,
        plain_time_s=np.asarray(plain.time_s),
        verify_time_s=np.asarray(verify),
        draft_time_s=np.asarray(draft),
        tokens_per_step=np.asarray(expected_tokens_per_step(a, draft_tokens)),
        draft_kv_share=kv_share,
    )


@contract(
    infinite_ok=True,
    context=SCALAR,
    draft_tokens=DRAFT_TOKENS,
    acceptance=Real(low=0.0, low_open=False, high=1.0, scalar=True),
    draft_share=FRACTION,
    draft_kv_share=DRAFT_KV_SHARE,
)
def break_even_batch(
    deployment: Deployment,
    context: float,
    draft_tokens: int,
    acceptance: float,
    draft_share: float,
    *,
    draft_kv_share: float = 0.0,
) -> float:
    """The smallest batch at which speculation stops paying (its speed-up falls to 1 or
    below), among the whole batches whose KV caches fit at ``context``; infinite where it
    pays at every one of them (the step stays memory-bound enough that ``k + 1`` times the
    FLOPs still hide under the reads). Found on the whole batches, not from a rule of thumb.

    >>> from llmmath.beyond import speculative
    >>> from llmmath.core.deployment import Deployment
    >>> llama = Deployment("Llama-3-70B", "H100", 8)
    >>> speculative.break_even_batch(llama, 2048, 3, 0.7, 0.02)
    inf
    >>> speculative.break_even_batch(llama, 256, 3, 0.7, 0.02)
    205.0
    """
    room = min(float(max_batch(deployment, context)), 1e6)
    batches = np.arange(1.0, np.floor(room) + 1.0)
    step = speculative_step(
        deployment,
        batches,
        context,
        draft_tokens,
        acceptance,
        draft_share,
        draft_kv_share=draft_kv_share,
    )
    loss = np.asarray(step.speedup) <= 1.0
    return float(batches[np.argmax(loss)]) if loss.any() else float("inf")


@contract(name=NAME)
def mtp_published(name: str = "DeepSeek-V3") -> dict[str, float]:
    """DeepSeek-V3's MTP module as published: drafts per step, size, acceptance range and the
    reported speed-up (``data/serving_modes.toml``)."""
    spec = data.table("serving_modes")["mtp"][name]
    keys = (
        "draft_tokens",
        "module_params",
        "acceptance_low",
        "acceptance_high",
        "reported_tps_speedup",
    )
    return {key: float(spec[key]) for key in keys}


# ---- curves the figures draw ----------------------------------------------------------------
#: Batches the speed-up curve is drawn at.
CURVE_BATCHES = np.unique(np.round(np.logspace(0, np.log10(4096), 97)))


@contract(
    context=SCALAR,
    draft_tokens=DRAFT_TOKENS,
    acceptance=ACCEPTANCE,
    draft_share=FRACTION,
    draft_kv_share=DRAFT_KV_SHARE,
)
def speedup_curve(
    deployment: Deployment,
    context: float,
    draft_tokens: int,
    acceptance: float,
    draft_share: float,
    draft_kv_share: float = 0.0,
) -> SpeculativeStep:
    """:func:`speculative_step` over the :data:`CURVE_BATCHES` whose KV caches fit."""
    batches = CURVE_BATCHES[max_batch(deployment, context) >= CURVE_BATCHES]
    return speculative_step(
        deployment,
        batches,
        context,
        draft_tokens,
        acceptance,
        draft_share,
        draft_kv_share=draft_kv_share,
    )


__all__ = [
    "ACCEPTANCE",
    "CURVE_BATCHES",
    "DRAFT_KV_SHARE",
    "SpeculativeStep",
    "break_even_batch",
    "expected_tokens_per_step",
    "mtp_draft_kv_share",
    "mtp_draft_share",
    "mtp_published",
    "speculative_step",
    "speedup_curve",
]

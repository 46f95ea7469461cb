"""Batching: why a token is cheap only in a big batch, and what a lone user can't buy.

The step itself lives in :mod:`llmmath.core.serving` (one model of a decode step for the whole
course); this chapter's module builds on it: the batch where the matmuls turn compute-bound,
the most sequences that fit, the two latency floors, a request's latency step by step,
utilisation, sizing a service, and "slow mode".

Every time is a FLOOR at the deployment's efficiency knobs (``overlap="perfect"``): a step is
at least ``max(compute, memory)``; :attr:`~llmmath.core.serving.DecodeStep.serial_s` gives the
scaling book's serial estimate (matmuls, then attention, each at its own roofline).

>>> from llmmath import batching
>>> llama = batching.Deployment("Llama-3-70B", "H100", 8)
>>> round(float(batching.decode_step(llama, 1, 0).time_s) * 1e3, 2)  # ms, weights / bandwidth
5.19
>>> from llmmath.core import capacity  # B*, T_c, the most that fit, the floors
>>> round(capacity.step_critical_batch(llama))  # C / W: the number of chips cancels
295
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import capacity
from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import Count, Instance, Optional, Real

# kept at this address (not in __all__): the released batching exercise names batching.max_batch
from llmmath.core.capacity import max_batch  # noqa: F401
from llmmath.core.chip_prices import (
    ChipPrice,
    cost_per_million_tokens_usd,
    example_price,
    list_example_prices,
)
from llmmath.core.contracts import (
    AMOUNT,
    MAX_COUNT,
    POSITIVE,
    PROMPT,
    RESULT,
    RESULT_OR_INF,
    SCALAR,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.placement import DoesNotFitError
from llmmath.core.serving import DecodeStep, PrefillStep, decode_step, prefill
from llmmath.core.units import SECONDS_PER_HOUR, TOKENS_PER_MILLION  # noqa: F401  (re-exported)


# ---- TTFT and a whole request -----------------------------------------------------------
@contract(prompt_tokens=PROMPT)
def ttft_s(deployment: Deployment, prompt_tokens: ArrayLike) -> float | FloatArray:
    """Time to first token: the prefill of one prompt on the whole deployment (no queueing)."""
    return as_output(prefill(deployment, prompt_tokens).time_s)


@dataclass(frozen=True)
@checked(ttft_s=SCALAR, decode_s=RESULT, final_context_decode_s=RESULT, output_tokens=Count(low=0))
class RequestLatency:
    """One request's latency: prefill, then ``output_tokens - 1`` decode steps in a batch."""

    #: Time to first token (the prefill of this prompt).
    ttft_s: float
    #: The decode steps summed as the context grows by one token per step.
    decode_s: FloatArray
    #: The same steps, each costed at the final context (what many performance tools do).
    final_context_decode_s: FloatArray
    output_tokens: int

    @property
    def total_s(self) -> FloatArray:
        return self.ttft_s + self.decode_s

    @property
    def final_context_total_s(self) -> FloatArray:
        return self.ttft_s + self.final_context_decode_s

    @property
    def mean_tpot_s(self) -> FloatArray:
        """Mean time per output token after the first (NaN for a one-token answer)."""
        steps = self.output_tokens - 1
        return self.decode_s / steps if steps else np.full_like(self.decode_s, np.nan)


@contract(prompt_tokens=Count(high=MAX_COUNT), output_tokens=Count(high=1 << 20))
def request_latency(
    deployment: Deployment,
    prompt_tokens: int,
    output_tokens: int,
    batch: ArrayLike = 1,
    *,
    allow_overflow: bool = False,
) -> RequestLatency:
    """End-to-end latency of a request that shares its decode steps with ``batch - 1`` others.

    TTFT is the prefill of its prompt. Decode step ``i`` (``i = 0 ... output_tokens - 2``)
    runs at context ``prompt_tokens + i``, and the steps are summed one by one. The result
    also carries the shortcut that costs every step at the final context
    ``prompt_tokens + output_tokens``, which overstates the KV reads.
    """
    dep = deployment
    prompt, output = int(prompt_tokens), int(output_tokens)
    final = prompt + output
    if final > dep.model.max_context:
        raise ValueError(
            f"prompt_tokens + output_tokens must be <= {dep.model.name}'s max_context="
            f"{dep.model.max_context}; got {prompt} + {output} = {final}"
        )
    B = as_floats(batch)
    at_final = decode_step(dep, B, final, allow_overflow=allow_overflow)  # checks capacity
    contexts = prompt + np.arange(output - 1, dtype=np.float64)
    steps = decode_step(dep, B[..., np.newaxis], contexts, allow_overflow=True)
    return RequestLatency(
        ttft_s=float(ttft_s(dep, prompt)),
        decode_s=np.asarray(steps.time_s.sum(axis=-1)),
        final_context_decode_s=(output - 1) * at_final.time_s,
        output_tokens=output,
    )


# ---- utilisation and sizing -----------------------------------------------------------------
@contract(flops=AMOUNT, time_s=POSITIVE)
def mfu(flops: ArrayLike, time_s: ArrayLike, deployment: Deployment) -> float | FloatArray:
    """Model FLOPs utilisation: FLOPs done / (time * datasheet peak of all the chips)."""
    done = as_floats(flops)
    t = as_floats(time_s)
    return as_output(done / (t * deployment.peak_flop_per_s))


@contract(bytes_moved=AMOUNT, time_s=POSITIVE)
def mbu(bytes_moved: ArrayLike, time_s: ArrayLike, deployment: Deployment) -> float | FloatArray:
    """Memory-bandwidth utilisation: bytes moved / (time * datasheet bandwidth of the chips)."""
    moved = as_floats(bytes_moved)
    t = as_floats(time_s)
    return as_output(moved / (t * deployment.peak_bytes_per_s))


@contract(tokens_per_s=POSITIVE, step=Instance(DecodeStep))
def chips_for_throughput(tokens_per_s: ArrayLike, step: DecodeStep) -> float | FloatArray:
    """Chips a service of ``tokens_per_s`` output tokens needs, in whole replicas of the
    step's deployment each running steps like ``step``: ``ceil(rate / (B / t)) * n``."""
    rate = as_floats(tokens_per_s)
    replicas = np.ceil(rate / step.tokens_per_s)
    return as_output(replicas * step.deployment.n_chips)


@contract(step=Instance(DecodeStep), other=Instance(DecodeStep), other_usd_per_chip_hour=POSITIVE)
def tie_price_usd(
    step: DecodeStep, other: DecodeStep, other_usd_per_chip_hour: ArrayLike
) -> float | FloatArray:
    """The price per chip-hour of ``step``'s chips at which its tokens cost what ``other``'s
    do at ``other_usd_per_chip_hour``: ``p' (n' t' / B') / (n t / B)``, the other price times
    the ratio of the two steps' chip-seconds per token (a token's cost is linear in the price,
    so this compares the chips with one price instead of two prices of unlike kinds).

    >>> from llmmath import batching
    >>> h100 = batching.decode_step(batching.Deployment("Llama-3-70B", "H100", 8), 1, 2048)
    >>> v5e = batching.decode_step(batching.Deployment("Llama-3-70B", "TPU-v5e", 16), 1, 2048)
    >>> round(float(batching.tie_price_usd(h100, v5e, 1.20)), 2)
    4.9
    """
    price = as_floats(other_usd_per_chip_hour)
    other_cost = other.cost_per_million_tokens_usd(1.0) * price
    return as_output(other_cost / step.cost_per_million_tokens_usd(1.0))


# ---- curves the figures draw ----------------------------------------------------------------
#: Batches the chapter's curves are drawn at: 1 ... 4096 sequences, log-spaced.
CURVE_BATCHES = np.unique(np.round(np.logspace(0, np.log10(4096), 121)))
#: Tokens in one forward pass for the prefill-against-decode curves: 1 ... 8192.
PASS_TOKENS = np.unique(np.round(np.logspace(0, np.log10(8192), 121)))


@dataclass(frozen=True)
@checked(
    **each(RESULT, "batch weights matmul_flops kv total time_s tokens_per_s_per_chip"),
    **each(RESULT, "critical_batch weight_floor_s hbm_floor_s"),
    **each(RESULT_OR_INF, "max_batch compute_batch critical_context"),
)
class CostCurves:
    """Cost per million output tokens over the batches that fit, whole and by part, with the
    step time and throughput at each batch and the latency floors for scale."""

    batch: FloatArray
    #: Each part costed as if it alone set the step time: weights / B is the hyperbola.
    weights: FloatArray
    matmul_flops: FloatArray
    kv: FloatArray
    total: FloatArray
    time_s: FloatArray
    tokens_per_s_per_chip: FloatArray
    max_batch: float
    #: ``C b_w / 2W``: where the weight read stops dominating (the KV read not counted).
    critical_batch: float
    #: ``B*(T)``: where the step turns compute-bound at this context (infinite past ``T_c``).
    compute_batch: float
    #: ``T_c``: the context from which no batch is compute-bound.
    critical_context: float
    weight_floor_s: float
    hbm_floor_s: float


@contract(
    infinite_ok=True,
    context=SCALAR,
    usd_per_chip_hour=Optional(SCALAR_POSITIVE),
    batches=Real(ndarray=True),
)
def cost_curves(
    deployment: Deployment,
    context: float,
    usd_per_chip_hour: float | None = None,
    batches: FloatArray = CURVE_BATCHES,
) -> CostCurves:
    """The cost of each part of a decode step per million tokens, for ``batches`` that fit
    (at the chip's example price unless ``usd_per_chip_hour`` is given)."""
    room = float(capacity.max_batch(deployment, context))
    batch = batches[room >= batches]
    step = decode_step(deployment, batch, context)
    price = (
        example_price(deployment.chip).usd_per_chip_hour
        if usd_per_chip_hour is None
        else usd_per_chip_hour
    )

    def cost(time_s: FloatArray) -> FloatArray:
        return np.asarray(cost_per_million_tokens_usd(time_s, batch, deployment.n_chips, price))

    return CostCurves(
        batch=batch,
        weights=cost(step.weight_read_s),
        matmul_flops=cost(step.matmul_compute_s),
        kv=cost(np.maximum(step.kv_read_s, step.attention_compute_s)),
        total=cost(step.time_s),
        time_s=step.time_s,
        tokens_per_s_per_chip=step.tokens_per_s_per_chip,
        max_batch=room,
        critical_batch=capacity.step_critical_batch(deployment),
        compute_batch=capacity.step_critical_batch(deployment, context),
        critical_context=capacity.critical_context(deployment),
        weight_floor_s=capacity.weight_floor_s(deployment),
        hbm_floor_s=capacity.hbm_floor_s(deployment.chip, deployment.bandwidth_efficiency),
    )


#: Contexts the critical-batch curve is drawn at: 0, then 16 ... 131,072 tokens, log-spaced.
CURVE_CONTEXTS = np.concatenate([[0.0], np.unique(np.round(np.geomspace(16, 131072, 97)))])


@dataclass(frozen=True)
@checked(
    broadcast=False,
    context=RESULT,
    **each(RESULT_OR_INF, "compute_batch max_batch critical_context"),
    critical_batch=RESULT,
)
class CriticalBatchCurve:
    """Against the context: the batch where a step turns compute-bound (``B*(T)``, infinite
    from ``T_c`` on) and the most sequences that fit; the cost per token stops falling at the
    smaller of the two."""

    context: FloatArray
    compute_batch: FloatArray
    max_batch: FloatArray
    #: ``C b_w / 2W``, ``B*`` at context 0.
    critical_batch: float
    critical_context: float


@contract(infinite_ok=True, contexts=Real(low_open=False, ndarray=True))
def critical_batch_curve(
    deployment: Deployment, contexts: FloatArray = CURVE_CONTEXTS
) -> CriticalBatchCurve:
    """:func:`~llmmath.core.capacity.step_critical_batch` and
    :func:`~llmmath.core.capacity.max_batch` over ``contexts`` the model accepts."""
    T = contexts[deployment.model.max_context >= contexts]
    return CriticalBatchCurve(
        context=T,
        compute_batch=np.array([capacity.step_critical_batch(deployment, t) for t in T]),
        max_batch=np.asarray(capacity.max_batch(deployment, T)),
        critical_batch=capacity.step_critical_batch(deployment),
        critical_context=capacity.critical_context(deployment),
    )


@dataclass(frozen=True)
@checked(
    broadcast=False, **each(RESULT, "prompt_tokens prefill_mfu batch decode_mfu critical_batch")
)
class PassCurves:
    """MFU of one forward pass against the tokens in it: a prefill of each prompt length, and
    a decode step of each batch at one context (up to where the KV caches fill the HBM)."""

    prompt_tokens: FloatArray
    prefill_mfu: FloatArray
    batch: FloatArray
    decode_mfu: FloatArray
    critical_batch: float


@contract(context=SCALAR, tokens=Real(low=1.0, low_open=False, ndarray=True))
def pass_curves(
    deployment: Deployment, context: float, tokens: FloatArray = PASS_TOKENS
) -> PassCurves:
    """Prefill and decode MFU over ``tokens`` (prompts the model accepts, batches that fit)."""
    pre = prefill(deployment, tokens[deployment.model.max_context >= tokens])
    batch = tokens[float(capacity.max_batch(deployment, context)) >= tokens]
    step = decode_step(deployment, batch, context)
    return PassCurves(
        prompt_tokens=pre.prompt_tokens,
        prefill_mfu=np.asarray(mfu(pre.flops, pre.time_s, deployment)),
        batch=batch,
        decode_mfu=np.asarray(mfu(step.flops, step.time_s, deployment)),
        critical_batch=capacity.step_critical_batch(deployment),
    )


__all__ = [
    "CURVE_BATCHES",
    "CURVE_CONTEXTS",
    "ChipPrice",
    "CostCurves",
    "CriticalBatchCurve",
    "DecodeStep",
    "Deployment",
    "DoesNotFitError",
    "PassCurves",
    "PrefillStep",
    "RequestLatency",
    "chips_for_throughput",
    "cost_curves",
    "cost_per_million_tokens_usd",
    "critical_batch_curve",
    "decode_step",
    "example_price",
    "list_example_prices",
    "mbu",
    "mfu",
    "pass_curves",
    "prefill",
    "request_latency",
    "tie_price_usd",
    "ttft_s",
]

"""Batching: what one decode step costs, and why a token is cheap only in a big batch.

A :class:`Deployment` is a model served on ``n_chips`` of one kind, its weights and KV caches
sharded evenly over them. One **decode step** feeds one new token of each of ``batch``
sequences (B), each with ``context`` tokens (T) already in its KV cache. The step

* reads the matmul weights it touches once: ``P b_w`` bytes (all of them for a dense model);
* reads every sequence's KV cache: ``B T kv`` bytes;
* does ``2 B P`` matmul FLOPs, plus the attention FLOPs over the context.

Its time is the scaling book's estimate: the matmuls run at their own roofline, and attention,
whose intensity is far below any chip's ``C / W``, adds its KV read on top::

    t = max(2 B P / (n C), P b_w / (n W)) + max(F_attn / (n C), B T kv / (n W))

Every time here is a FLOOR. ``C`` and ``W`` are the datasheet peaks times the
``flops_efficiency`` and ``bandwidth_efficiency`` knobs (1.0 = datasheet); communication
between the chips is left out (see :mod:`llmmath.collectives`), and so are the activations'
working memory and the write of each new token's keys and values (1/T of the KV read). Real
servers are slower; lower the knobs to see by how much.

>>> from llmmath import batching
>>> llama = batching.Deployment("Llama-3-70B", "H100", 8)
>>> round(float(batching.decode_step(llama, 1, 0).time_s) * 1e3, 2)  # ms, weights / bandwidth
5.19
>>> round(batching.step_critical_batch(llama))  # C / W: the number of chips cancels
295
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from importlib import resources

import numpy as np
from numpy.typing import ArrayLike

from ._validate import FloatArray, as_output, fraction, positive, positive_int
from .dtypes import bytes_per_element
from .hardware import Chip, get_chip
from .models import ModelConfig, get_model
from .roofline import critical_batch, roofline_time, weight_params_read

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6


# ---- example prices ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ChipPrice:
    """An EXAMPLE rental price of one chip for one hour (see ``data/chip_prices.toml``)."""

    chip: str
    usd_per_chip_hour: float
    kind: str
    source: str
    source_date: str


def _load_prices() -> dict[str, ChipPrice]:
    text = resources.files("llmmath").joinpath("data/chip_prices.toml").read_text()
    prices = {}
    for chip, spec in tomllib.loads(text).items():
        get_chip(chip)  # every price belongs to a known chip
        positive(f"{chip}: usd_per_chip_hour", spec["usd_per_chip_hour"])
        prices[chip] = ChipPrice(chip=chip, **spec)
    return prices


_PRICES = _load_prices()


def list_example_prices() -> list[str]:
    """Chips that have an example price."""
    return list(_PRICES)


def example_price(chip: str | Chip) -> ChipPrice:
    """The example price of ``chip``; chips without one ask for ``usd_per_chip_hour``."""
    name = get_chip(chip).name
    if name not in _PRICES:
        raise ValueError(
            f"no example price for chip {name!r} (there are: {', '.join(_PRICES)}); "
            "pass usd_per_chip_hour"
        )
    return _PRICES[name]


def cost_per_million_tokens_usd(
    step_time_s: ArrayLike, batch: ArrayLike, n_chips: int, usd_per_chip_hour: ArrayLike
) -> float | FloatArray:
    """``price * n * t / (3600 B) * 1e6``: the rent of ``n`` chips for one step of ``t``
    seconds, shared by the ``B`` tokens the step produces, per million tokens."""
    t = positive("step_time_s", step_time_s, allow_zero=True)
    B = positive("batch", batch)
    price = positive("usd_per_chip_hour", usd_per_chip_hour)
    n = positive_int("n_chips", n_chips)
    return as_output(price * n * t / (SECONDS_PER_HOUR * B) * TOKENS_PER_MILLION)


# ---- a model on some chips ------------------------------------------------------------------
class DoesNotFitError(ValueError):
    """The weights (or weights plus KV caches) need more HBM than the chips hold."""

    def __init__(self, message: str, missing_bytes: float) -> None:
        super().__init__(message)
        self.missing_bytes = missing_bytes


@dataclass(frozen=True)
class Deployment:
    """``model`` served on ``n_chips`` chips of one kind, everything sharded evenly.

    ``model`` and ``chip`` may be preset names. Raises :class:`DoesNotFitError`, saying how
    many bytes are missing, when the weights alone do not fit in the chips' HBM.
    """

    model: ModelConfig
    chip: Chip
    n_chips: int = 1
    compute_dtype: str = "bf16"
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    flops_efficiency: float = 1.0
    bandwidth_efficiency: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", get_model(self.model))
        object.__setattr__(self, "chip", get_chip(self.chip))
        positive_int("n_chips", self.n_chips)
        self.chip.peak(self.compute_dtype)  # the chip must have FLOPs in this dtype
        bytes_per_element(self.weight_dtype)
        bytes_per_element(self.kv_dtype)
        for knob in ("flops_efficiency", "bandwidth_efficiency"):
            value = fraction(knob, getattr(self, knob))
            if value.ndim:
                raise TypeError(f"{knob} must be a single number; got an array")
            object.__setattr__(self, knob, float(value))
        missing = self.weight_bytes - self.hbm_bytes
        if missing > 0:
            need = math.ceil(self.weight_bytes / self.chip.hbm_bytes)
            raise DoesNotFitError(
                f"{self.model.name} weights in {self.weight_dtype} need {self.weight_bytes:.4g} B "
                f"but {self.n_chips} x {self.chip.name} hold {self.hbm_bytes:.4g} B: "
                f"{missing:.4g} B missing; use n_chips >= {need} or smaller weights",
                missing,
            )

    @property
    def label(self) -> str:
        return f"{self.model.name} on {self.n_chips}×{self.chip.name}"

    @property
    def weight_bytes(self) -> float:
        """Every weight, as stored (the input embedding too: it is read by lookup only)."""
        return self.model.weight_bytes(self.weight_dtype)

    @property
    def hbm_bytes(self) -> float:
        return self.n_chips * self.chip.hbm_bytes

    @property
    def kv_budget_bytes(self) -> float:
        """HBM left for KV caches once the weights are loaded."""
        return self.hbm_bytes - self.weight_bytes

    @property
    def kv_bytes_per_token(self) -> float:
        return self.model.kv_bytes_per_token(self.kv_dtype)

    @property
    def peak_flop_per_s(self) -> float:
        """Datasheet dense peak of all the chips together (for MFU)."""
        return self.n_chips * self.chip.peak(self.compute_dtype)

    @property
    def peak_bytes_per_s(self) -> float:
        """Datasheet HBM bandwidth of all the chips together (for MBU)."""
        return self.n_chips * self.chip.hbm_bandwidth_bytes_per_s


def _context(model: ModelConfig, context: ArrayLike, name: str = "context") -> FloatArray:
    T = positive(name, context, allow_zero=True)
    if np.any(model.max_context < T):
        worst = float(np.max(T))
        raise ValueError(
            f"{name} must be <= {model.name}'s max_context={model.max_context}; got {worst:g}"
        )
    return T


def _check_capacity(dep: Deployment, batch: FloatArray, tokens: FloatArray) -> None:
    """Raise unless ``batch`` sequences of ``tokens`` cached tokens fit beside the weights."""
    kv = batch * tokens * dep.kv_bytes_per_token
    over = kv > dep.kv_budget_bytes
    if np.any(over):
        i = np.unravel_index(np.argmax(np.where(over, kv, -1.0)), kv.shape)
        b, t, cache = float(batch[i]), float(tokens[i]), float(kv[i])
        missing = cache - dep.kv_budget_bytes
        room = math.floor(dep.kv_budget_bytes / (t * dep.kv_bytes_per_token))
        raise DoesNotFitError(
            f"{dep.model.name} at batch {b:g} and context {t:g} needs "
            f"{dep.weight_bytes + cache:.4g} B (weights {dep.weight_bytes:.4g} + KV cache "
            f"{cache:.4g}) but {dep.n_chips} x {dep.chip.name} hold {dep.hbm_bytes:.4g} B: "
            f"{missing:.4g} B missing; at this context at most {room} sequences fit "
            "(or pass allow_overflow=True)",
            missing,
        )


# ---- one decode step ------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeStep:
    """One decode step of ``batch`` sequences at ``context``: the time of each part (floors,
    on the whole deployment) and what the step moves. Arrays broadcast over B and T."""

    deployment: Deployment
    batch: FloatArray
    context: FloatArray
    #: Reading the matmul weights once (shared by the whole batch).
    weight_read_s: FloatArray
    #: Reading every sequence's KV cache.
    kv_read_s: FloatArray
    #: ``2 B P`` matmul FLOPs.
    matmul_compute_s: FloatArray
    #: Attention FLOPs over the context (QK^T and AV).
    attention_compute_s: FloatArray
    #: FLOPs of the step, all chips together.
    flops: FloatArray
    #: Bytes the step reads from HBM, all chips together: weights + KV caches.
    bytes_read: FloatArray
    #: HBM the step needs to hold: all weights + the batch's KV caches.
    hbm_needed_bytes: FloatArray

    @property
    def compute_s(self) -> FloatArray:
        return self.matmul_compute_s + self.attention_compute_s

    @property
    def memory_s(self) -> FloatArray:
        """Time to read everything the step needs: the latency floor at this B and T."""
        return self.weight_read_s + self.kv_read_s

    @property
    def time_s(self) -> FloatArray:
        """The step: matmuls at their roofline, plus attention at its (bandwidth) roofline."""
        matmuls = np.maximum(self.matmul_compute_s, self.weight_read_s)
        attention = np.maximum(self.attention_compute_s, self.kv_read_s)
        return matmuls + attention

    @property
    def overlap_floor_s(self) -> FloatArray:
        """``max(compute, memory)``: even perfect overlap of every part cannot beat this."""
        return np.maximum(self.compute_s, self.memory_s)

    @property
    def compute_bound(self) -> FloatArray:
        """True where the matmuls' FLOPs take longer than reading their weights."""
        return np.asarray(self.matmul_compute_s > self.weight_read_s)

    @property
    def fits(self) -> FloatArray:
        """True where weights and KV caches fit in the deployment's HBM."""
        return np.asarray(self.hbm_needed_bytes <= self.deployment.hbm_bytes)

    @property
    def tokens_per_s(self) -> FloatArray:
        """Output tokens per second of the whole deployment: ``B / t``."""
        return self.batch / self.time_s

    @property
    def tokens_per_s_per_chip(self) -> FloatArray:
        return self.tokens_per_s / self.deployment.n_chips

    @property
    def tokens_per_s_per_user(self) -> FloatArray:
        """What one sequence sees: one token per step, ``1 / t``."""
        return 1.0 / self.time_s

    def cost_per_million_tokens_usd(self, usd_per_chip_hour: float | None = None) -> FloatArray:
        """Rent of the chips per million output tokens (the chip's example price by default)."""
        price = (
            example_price(self.deployment.chip).usd_per_chip_hour
            if usd_per_chip_hour is None
            else usd_per_chip_hour
        )
        cost = cost_per_million_tokens_usd(self.time_s, self.batch, self.deployment.n_chips, price)
        return np.asarray(cost, dtype=np.float64)


def decode_step(
    deployment: Deployment, batch: ArrayLike, context: ArrayLike, *, allow_overflow: bool = False
) -> DecodeStep:
    """One decode step of ``batch`` sequences, each with ``context`` tokens cached.

    Weights: ``P_read b_w / (n W)`` (for an MoE, the experts at least one token is routed
    to); KV: ``B T kv / (n W)``; matmuls: ``2 B P / (n C)``; attention:
    ``B (forward FLOPs at T - at 0) / (n C)``. ``batch`` and ``context`` broadcast.
    Raises :class:`DoesNotFitError` where the KV caches do not fit beside the weights,
    unless ``allow_overflow`` (then see :attr:`DecodeStep.fits`). Every time is a floor at
    the deployment's efficiency knobs; :attr:`DecodeStep.time_s` combines them.
    """
    dep, model = deployment, deployment.model
    B0 = positive("batch", batch)
    T0 = _context(model, context)
    B, T = (np.array(a, dtype=np.float64) for a in np.broadcast_arrays(B0, T0))
    if not allow_overflow:
        _check_capacity(dep, B, T)
    n = dep.n_chips
    matmul_per_token = float(model.forward_flops_per_token(0))  # 2 P: the weights' FLOPs
    matmul_flops = B * matmul_per_token
    attention_flops = B * (np.asarray(model.forward_flops_per_token(T)) - matmul_per_token)
    weight_bytes = weight_params_read(model, B) * bytes_per_element(dep.weight_dtype)
    kv_bytes = B * T * dep.kv_bytes_per_token
    knobs = {
        "flops_efficiency": dep.flops_efficiency,
        "bandwidth_efficiency": dep.bandwidth_efficiency,
    }
    matmuls = roofline_time(
        matmul_flops / n, weight_bytes / n, dep.chip, dep.compute_dtype, **knobs
    )
    attention = roofline_time(
        attention_flops / n, kv_bytes / n, dep.chip, dep.compute_dtype, **knobs
    )
    return DecodeStep(
        deployment=dep,
        batch=B,
        context=T,
        weight_read_s=matmuls.memory_s,
        kv_read_s=attention.memory_s,
        matmul_compute_s=matmuls.compute_s,
        attention_compute_s=attention.compute_s,
        flops=matmul_flops + attention_flops,
        bytes_read=weight_bytes + kv_bytes,
        hbm_needed_bytes=dep.weight_bytes + kv_bytes,
    )


# ---- thresholds and floors ------------------------------------------------------------------
def step_critical_batch(deployment: Deployment) -> float:
    """The batch at which a step's matmuls turn compute-bound: ``2 B P / C = P_read b_w / W``.

    Dense: ``B* = C b_w / (2 W)``, the chip's critical batch (the number of chips and the
    context cancel; the efficiency knobs scale it by ``flops_eff / bandwidth_eff``). MoE: the
    weights read grow with the batch as more experts are touched, so ``B*`` is solved
    numerically; it comes out near ``C b_w / (2 W) * P_total / P_active``.
    """
    dep, model = deployment, deployment.model
    ratio = dep.flops_efficiency / dep.bandwidth_efficiency
    dense = critical_batch(dep.chip, dep.compute_dtype, dep.weight_dtype) * ratio
    if not model.is_moe:
        return dense

    def surplus(B: float) -> float:  # compute minus weight read, per chip-second; rises with B
        step = decode_step(dep, B, 0, allow_overflow=True)
        return float(step.matmul_compute_s - step.weight_read_s)

    # Every expert touched reads P_all weights at most, so at twice dense * P_all / P_active
    # the FLOPs surely outlast the read; near zero they surely do not.
    all_weights = float(weight_params_read(model, 1e12))
    lo, hi = 1e-9, 2.0 * dense * all_weights / model.matmul_params_per_token
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if surplus(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


def max_batch(deployment: Deployment, context: ArrayLike) -> float | FloatArray:
    """The most sequences of ``context`` tokens whose KV caches fit beside the weights:
    ``floor((n HBM - weights) / (T kv))`` (infinite at context 0)."""
    dep = deployment
    T = _context(dep.model, context)
    with np.errstate(divide="ignore"):
        room = np.floor(dep.kv_budget_bytes / (T * dep.kv_bytes_per_token))
    return as_output(room)


def weight_floor_s(deployment: Deployment) -> float:
    """Weights / bandwidth: a batch-1, context-0 step. No decode step of this deployment
    is faster, however small the batch or however patient the user."""
    return float(decode_step(deployment, 1, 0).weight_read_s)


def hbm_floor_s(chip: str | Chip, bandwidth_efficiency: float = 1.0) -> float:
    """HBM capacity / bandwidth: a step that reads a full HBM (as a server whose memory is
    filled with weights and KV caches does) takes at least this long, on any number of chips."""
    return get_chip(chip).memory_floor_s / float(
        fraction("bandwidth_efficiency", bandwidth_efficiency)
    )


# ---- prefill, TTFT and a whole request ------------------------------------------------------
@dataclass(frozen=True)
class PrefillStep:
    """Prefill of ``batch`` prompts of ``prompt_tokens``: one forward pass over all of them."""

    deployment: Deployment
    prompt_tokens: FloatArray
    batch: FloatArray
    compute_s: FloatArray
    memory_s: FloatArray
    #: FLOPs, all chips together.
    flops: FloatArray
    #: Bytes moved, all chips together: the weights read once, the KV caches written.
    bytes_moved: FloatArray

    @property
    def time_s(self) -> FloatArray:
        """The roofline floor ``max(compute, memory)``: one pass, one read of the weights."""
        return np.maximum(self.compute_s, self.memory_s)

    @property
    def compute_bound(self) -> FloatArray:
        return np.asarray(self.compute_s > self.memory_s)

    @property
    def tokens_per_s(self) -> FloatArray:
        return self.batch * self.prompt_tokens / self.time_s


def prefill(
    deployment: Deployment,
    prompt_tokens: ArrayLike,
    batch: ArrayLike = 1,
    *,
    allow_overflow: bool = False,
) -> PrefillStep:
    """Prefill ``batch`` prompts of ``prompt_tokens`` (P) each in one pass.

    FLOPs: ``B P`` tokens, token ``i`` attending to its ``i`` predecessors, so
    ``B P * forward_flops_per_token((P - 1) / 2)``. Bytes: the weights once (for an MoE, the
    experts the ``B P`` tokens touch) plus the ``B P`` new tokens' keys and values written.
    A prompt is a batch of P tokens for the weights, so prefill is compute-bound once
    ``B P`` passes the critical batch.
    """
    dep, model = deployment, deployment.model
    P0 = _context(model, prompt_tokens, "prompt_tokens")
    if np.any(P0 < 1):
        raise ValueError(f"prompt_tokens must be >= 1; got {float(np.min(P0)):g}")
    B0 = positive("batch", batch)
    P, B = (np.array(a, dtype=np.float64) for a in np.broadcast_arrays(P0, B0))
    if not allow_overflow:
        _check_capacity(dep, B, P)
    tokens = B * P
    flops = tokens * np.asarray(model.forward_flops_per_token((P - 1.0) / 2.0))
    moved = (
        weight_params_read(model, tokens) * bytes_per_element(dep.weight_dtype)
        + tokens * dep.kv_bytes_per_token
    )
    n = dep.n_chips
    t = roofline_time(
        flops / n,
        moved / n,
        dep.chip,
        dep.compute_dtype,
        flops_efficiency=dep.flops_efficiency,
        bandwidth_efficiency=dep.bandwidth_efficiency,
    )
    return PrefillStep(dep, P, B, t.compute_s, t.memory_s, flops, moved)


def ttft_s(deployment: Deployment, prompt_tokens: ArrayLike) -> float | FloatArray:
    """Time to first token: the prefill of one prompt on the whole deployment (no queueing)."""
    return as_output(prefill(deployment, prompt_tokens).time_s)


@dataclass(frozen=True)
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
    prompt = positive_int("prompt_tokens", prompt_tokens)
    output = positive_int("output_tokens", output_tokens)
    final = prompt + output
    if final > dep.model.max_context:
        raise ValueError(
            f"prompt_tokens + output_tokens must be <= {dep.model.name}'s max_context="
            f"{dep.model.max_context}; got {prompt} + {output} = {final}"
        )
    B = positive("batch", batch)
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
def mfu(flops: ArrayLike, time_s: ArrayLike, deployment: Deployment) -> float | FloatArray:
    """Model FLOPs utilisation: FLOPs done / (time * datasheet peak of all the chips)."""
    done = positive("flops", flops, allow_zero=True)
    t = positive("time_s", time_s)
    return as_output(done / (t * deployment.peak_flop_per_s))


def mbu(bytes_moved: ArrayLike, time_s: ArrayLike, deployment: Deployment) -> float | FloatArray:
    """Memory-bandwidth utilisation: bytes moved / (time * datasheet bandwidth of the chips)."""
    moved = positive("bytes_moved", bytes_moved, allow_zero=True)
    t = positive("time_s", time_s)
    return as_output(moved / (t * deployment.peak_bytes_per_s))


def chips_for_throughput(tokens_per_s: ArrayLike, step: DecodeStep) -> float | FloatArray:
    """Chips a service of ``tokens_per_s`` output tokens needs, in whole replicas of the
    step's deployment each running steps like ``step``: ``ceil(rate / (B / t)) * n``."""
    rate = positive("tokens_per_s", tokens_per_s)
    replicas = np.ceil(rate / step.tokens_per_s)
    return as_output(replicas * step.deployment.n_chips)


# ---- "slow mode" ----------------------------------------------------------------------------
@dataclass(frozen=True)
class SlowMode:
    """What accepting a longer time per token does and does not buy, at one context.

    A longer step lets more sequences share it, so the cost falls, but only until the batch
    reaches ``floor_batch`` (compute-bound, or the HBM is full); past that, waiting buys
    nothing. And a sequence with no company pays ``batch1_cost_per_million_usd`` however long
    it waits: the chips read every weight for its one token either way.
    """

    #: The time per output token accepted (one decode step).
    latency_s: FloatArray
    #: The largest useful batch whose step fits in ``latency_s`` (0 where none does).
    batch: FloatArray
    #: Cost at that batch (infinite where no step is that fast).
    cost_per_million_usd: FloatArray
    batch1_cost_per_million_usd: float
    #: The cheapest any wait can buy: the cost at ``floor_batch``.
    floor_cost_per_million_usd: float
    #: ``min(ceil(B*), max_batch)``: past it the cost per token is flat or the HBM is full.
    floor_batch: float
    #: The step time at ``floor_batch``: a longer wait per token buys nothing.
    saturation_latency_s: float
    #: Weights / bandwidth: no step is faster.
    weight_floor_s: float


def slow_mode(
    deployment: Deployment,
    context: float,
    latency_s: ArrayLike,
    usd_per_chip_hour: float | None = None,
) -> SlowMode:
    """The cheapest cost per token for each accepted time per token, at ``context``.

    For each latency the largest batch ``B <= floor_batch`` with ``t(B) <= latency`` is found
    by bisection (``t`` rises with ``B``); its cost is the best that latency can buy.
    """
    dep = deployment
    T = float(_context(dep.model, context))
    budget = positive("latency_s", latency_s)
    price = (
        example_price(dep.chip).usd_per_chip_hour
        if usd_per_chip_hour is None
        else usd_per_chip_hour
    )
    room = float(max_batch(dep, T))
    if room < 1:
        raise DoesNotFitError(
            f"not one sequence of context {T:g} fits beside {dep.model.name}'s weights on "
            f"{dep.n_chips} x {dep.chip.name}",
            T * dep.kv_bytes_per_token - dep.kv_budget_bytes,
        )
    floor_batch = float(min(math.ceil(step_critical_batch(dep)), room))

    def step(B: ArrayLike) -> DecodeStep:
        return decode_step(dep, B, T)

    lo = np.zeros_like(budget)  # the largest batch known to be fast enough (0: none)
    hi = np.full_like(budget, floor_batch)
    while np.any(lo < hi):
        mid = np.ceil((lo + hi) / 2.0)
        fast = step(np.maximum(mid, 1.0)).time_s <= budget
        lo, hi = np.where(fast, mid, lo), np.where(fast, hi, mid - 1.0)
    chosen = step(np.maximum(lo, 1.0))
    cost = np.where(lo >= 1, chosen.cost_per_million_tokens_usd(price), np.inf)
    at_floor = step(floor_batch)
    return SlowMode(
        latency_s=budget,
        batch=lo,
        cost_per_million_usd=cost,
        batch1_cost_per_million_usd=float(step(1).cost_per_million_tokens_usd(price)),
        floor_cost_per_million_usd=float(at_floor.cost_per_million_tokens_usd(price)),
        floor_batch=floor_batch,
        saturation_latency_s=float(at_floor.time_s),
        weight_floor_s=weight_floor_s(dep),
    )


# ---- curves the figures draw ----------------------------------------------------------------
#: Batches the chapter's curves are drawn at: 1 ... 4096 sequences, log-spaced.
CURVE_BATCHES = np.unique(np.round(np.logspace(0, np.log10(4096), 121)))
#: Tokens in one forward pass for the prefill-against-decode curves: 1 ... 8192.
PASS_TOKENS = np.unique(np.round(np.logspace(0, np.log10(8192), 121)))


@dataclass(frozen=True)
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
    critical_batch: float
    weight_floor_s: float
    hbm_floor_s: float


def cost_curves(
    deployment: Deployment,
    context: float,
    usd_per_chip_hour: float | None = None,
    batches: FloatArray = CURVE_BATCHES,
) -> CostCurves:
    """The cost of each part of a decode step per million tokens, for ``batches`` that fit
    (at the chip's example price unless ``usd_per_chip_hour`` is given)."""
    room = float(max_batch(deployment, context))
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
        critical_batch=step_critical_batch(deployment),
        weight_floor_s=weight_floor_s(deployment),
        hbm_floor_s=hbm_floor_s(deployment.chip, deployment.bandwidth_efficiency),
    )


@dataclass(frozen=True)
class PassCurves:
    """MFU of one forward pass against the tokens in it: a prefill of each prompt length, and
    a decode step of each batch at one context (up to where the KV caches fill the HBM)."""

    prompt_tokens: FloatArray
    prefill_mfu: FloatArray
    batch: FloatArray
    decode_mfu: FloatArray
    critical_batch: float


def pass_curves(
    deployment: Deployment, context: float, tokens: FloatArray = PASS_TOKENS
) -> PassCurves:
    """Prefill and decode MFU over ``tokens`` (prompts the model accepts, batches that fit)."""
    pre = prefill(deployment, tokens[deployment.model.max_context >= tokens])
    batch = tokens[float(max_batch(deployment, context)) >= tokens]
    step = decode_step(deployment, batch, context)
    return PassCurves(
        prompt_tokens=pre.prompt_tokens,
        prefill_mfu=np.asarray(mfu(pre.flops, pre.time_s, deployment)),
        batch=batch,
        decode_mfu=np.asarray(mfu(step.flops, step.time_s, deployment)),
        critical_batch=step_critical_batch(deployment),
    )


__all__ = [
    "ChipPrice",
    "CostCurves",
    "DecodeStep",
    "Deployment",
    "DoesNotFitError",
    "PassCurves",
    "PrefillStep",
    "RequestLatency",
    "SlowMode",
    "chips_for_throughput",
    "cost_curves",
    "cost_per_million_tokens_usd",
    "decode_step",
    "example_price",
    "hbm_floor_s",
    "list_example_prices",
    "max_batch",
    "mbu",
    "mfu",
    "pass_curves",
    "prefill",
    "request_latency",
    "slow_mode",
    "step_critical_batch",
    "ttft_s",
    "weight_floor_s",
]

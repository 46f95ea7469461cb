"""Tail latency you can defend: requests queueing at a stated rate, in closed form where one
exists (M/M/1, M/D/1, M/G/1 by Pollaczek-Khinchine, M/M/c by Erlang C, M/G/c by Allen-Cunneen)
and, for a continuous-batching server, by a small seeded discrete-event simulation whose steps
come from a step-time function (chunked prefill interleaved with decode).

Every time here is a floor where the service or step times are floors: queueing adds the wait
a stream at ``arrival_rate_per_s`` meets to whatever the step model charges, and nothing else
(no scheduler overhead, no KV-memory pre-emption, no network).

>>> from llmmath.beyond import queueing
>>> round(queueing.md1_mean_wait_s(0.5, 1.0), 3), round(queueing.mm1_mean_wait_s(0.5, 1.0), 3)
(0.5, 1.0)
>>> round(queueing.mmc_wait_quantile_s(0.5, 1.0, 0.99), 3)
7.824
>>> round(queueing.erlang_c(1.5, 1.0, 2), 4)
0.6429
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import AnyOf, Count, Function, OneOf, Real
from llmmath.core.contracts import (
    AMOUNT,
    NOT_A_NUMBER,
    POSITIVE,
    RESULT,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.serving import OVERLAP_RULES, decode_step, prefill

IntArray = NDArray[np.int64]
#: A latency over the finished requests: NaN where none finished (or, for TPOT, none had a
#: second token).
MAYBE = AnyOf((RESULT, NOT_A_NUMBER))
_LATENCIES: tuple[str, ...] = (
    "mean_sojourn_s",
    "mean_queueing_s",
    "p50_queueing_s",
    "p99_queueing_s",
)
_LATENCIES += ("mean_ttft_s", "p50_ttft_s", "p99_ttft_s", "p50_tpot_s", "p99_tpot_s")

#: A waiting-time quantile in [0, 1] (1, the largest wait, is unbounded: inf).
QUANTILE = Real(low=0.0, low_open=False, high=1.0)
#: Servers of an M/M/c queue (Erlang C runs a recurrence over them).
SERVERS = Count(high=10_000)
#: A prompt's or an answer's length in tokens: a whole number in [1, 131072] (a 128k context),
#: one for every request or an array the simulation draws each request's length from.
LENGTHS = Real(low=1.0, low_open=False, high=131_072.0, integer=True, unit="tokens")


def _unstable(
    arrival_rate_per_s: ArrayLike, mean_service_s: ArrayLike, servers: int = 1
) -> str | None:
    """A closed form holds for a stable queue only: offered load below the servers."""
    load = np.max(as_floats(arrival_rate_per_s) * as_floats(mean_service_s))
    if load < servers:
        return None
    return (
        f"arrival_rate_per_s x mean_service_s must be < servers={servers} (a stable queue: "
        f"otherwise the wait grows without bound); got an offered load of {load:g}"
    )


def _unstable_deterministic(arrival_rate_per_s: ArrayLike, service_s: ArrayLike) -> str | None:
    return _unstable(arrival_rate_per_s, service_s)


# ---- closed forms -------------------------------------------------------------------------
@contract(arrival_rate_per_s=POSITIVE, mean_service_s=POSITIVE, service_cv=AMOUNT, where=_unstable)
def mg1_mean_wait_s(
    arrival_rate_per_s: ArrayLike, mean_service_s: ArrayLike, service_cv: ArrayLike = 1.0
) -> float | FloatArray:
    """M/G/1's mean wait in the queue (Pollaczek-Khinchine): Poisson arrivals at rate λ, one
    server, service times of mean ``s`` and coefficient of variation ``cv``, FCFS:
    ``W_q = ρ s (1 + cv²) / (2 (1 - ρ))`` with ``ρ = λ s < 1``. A floor where ``s`` is one."""
    rho = as_floats(arrival_rate_per_s) * as_floats(mean_service_s)
    cv = as_floats(service_cv)
    return as_output(rho * as_floats(mean_service_s) * (1 + cv**2) / (2 * (1 - rho)))


@contract(arrival_rate_per_s=POSITIVE, service_s=POSITIVE, where=_unstable_deterministic)
def md1_mean_wait_s(arrival_rate_per_s: ArrayLike, service_s: ArrayLike) -> float | FloatArray:
    """M/D/1's mean wait (Pollaczek-Khinchine with constant service, ``cv = 0``):
    ``W_q = ρ s / (2 (1 - ρ))``, ``ρ = λ s < 1``."""
    return mg1_mean_wait_s(arrival_rate_per_s, service_s, 0.0)


@contract(arrival_rate_per_s=POSITIVE, mean_service_s=POSITIVE, where=_unstable)
def mm1_mean_wait_s(arrival_rate_per_s: ArrayLike, mean_service_s: ArrayLike) -> float | FloatArray:
    """M/M/1's mean wait (exponential service, ``cv = 1``): ``W_q = ρ s / (1 - ρ)``."""
    return mg1_mean_wait_s(arrival_rate_per_s, mean_service_s, 1.0)


@contract(
    arrival_rate_per_s=POSITIVE,
    mean_service_s=POSITIVE,
    servers=SERVERS,
    where=_unstable,
)
def erlang_c(
    arrival_rate_per_s: ArrayLike, mean_service_s: ArrayLike, servers: int
) -> float | FloatArray:
    """M/M/c's probability that an arrival waits (Erlang C), offered load ``a = λ s < c``.

    From Erlang B's stable recurrence ``B_k = a B_{k-1} / (k + a B_{k-1})``, ``B_0 = 1``:
    ``C = c B_c / (c - a (1 - B_c))``. For ``c = 1`` it is ``ρ``."""
    load = as_floats(arrival_rate_per_s) * as_floats(mean_service_s)
    blocking = np.ones_like(load)
    for k in range(1, servers + 1):
        blocking = load * blocking / (k + load * blocking)
    return as_output(servers * blocking / (servers - load * (1 - blocking)))


@contract(
    arrival_rate_per_s=POSITIVE,
    mean_service_s=POSITIVE,
    servers=SERVERS,
    service_cv=AMOUNT,
    where=_unstable,
)
def mgc_mean_wait_s(
    arrival_rate_per_s: ArrayLike,
    mean_service_s: ArrayLike,
    servers: int = 1,
    service_cv: ArrayLike = 1.0,
) -> float | FloatArray:
    """M/G/c's mean wait by the Allen-Cunneen approximation (exact for M/M/c, ``cv = 1``, and
    for M/G/1): ``W_q ≈ C(c, a) s / (c - a) · (1 + cv²) / 2``, ``a = λ s < c``, Poisson
    arrivals (their ``cv² = 1``)."""
    load = as_floats(arrival_rate_per_s) * as_floats(mean_service_s)
    waits = erlang_c(arrival_rate_per_s, mean_service_s, servers)
    cv = as_floats(service_cv)
    return as_output(waits * as_floats(mean_service_s) / (servers - load) * (1 + cv**2) / 2)


@contract(
    infinite_ok=True,
    arrival_rate_per_s=POSITIVE,
    mean_service_s=POSITIVE,
    quantile=QUANTILE,
    servers=SERVERS,
    where=_unstable,
)
def mmc_wait_quantile_s(
    arrival_rate_per_s: ArrayLike,
    mean_service_s: ArrayLike,
    quantile: ArrayLike,
    servers: int = 1,
) -> float | FloatArray:
    """The ``quantile`` of M/M/c's wait in the queue (M/M/1 by default), FCFS: the wait is 0
    with probability ``1 - C`` and else exponential at rate ``c/s - λ``, so
    ``P(W_q > t) = C e^{-(c/s - λ) t}`` and the quantile ``q`` is
    ``ln(C / (1 - q)) / (c/s - λ)`` where ``1 - q < C``, else 0 (``C = ρ`` for one server);
    ``q = 1`` is unbounded (inf)."""
    rate = as_floats(arrival_rate_per_s)
    service = as_floats(mean_service_s)
    waits = as_floats(erlang_c(arrival_rate_per_s, mean_service_s, servers))
    tail = 1 - as_floats(quantile)
    drain_per_s = servers / service - rate
    with np.errstate(divide="ignore", invalid="ignore"):  # q = 1: the wait is unbounded
        quantile_s = np.log(np.maximum(waits / tail, 1.0)) / drain_per_s
    quantile_s = np.where(tail == 0, np.inf, quantile_s)
    return as_output(quantile_s)


# ---- a continuous-batching server, simulated -----------------------------------------------
@dataclass(frozen=True)
@checked(
    **each(RESULT, "requests completed steps simulated_s mean_in_system"),
    **each(MAYBE, "mean_sojourn_s mean_queueing_s p50_queueing_s p99_queueing_s mean_ttft_s"),
    **each(MAYBE, "p50_ttft_s p99_ttft_s p50_tpot_s p99_tpot_s"),
    nan_ok=_LATENCIES,
)
class BatcherLatency:
    """What a simulated continuous-batching server gave its requests (those that finished).

    *Queueing*: arrival to admission into the running batch. *TTFT*: arrival to the end of the
    step that finished the prompt's prefill (which emits the first token). *TPOT*: after that,
    the time per further output token, ``(finish - first token) / (output - 1)``, for requests
    of two tokens or more (NaN where none has; every latency is NaN where no request finished
    within the simulated time). ``mean_in_system`` is the time average of the
    batcher's own count of requests waiting or running, kept step by step, so Little's law
    (``mean_in_system = completed / simulated_s × mean_sojourn_s`` when every request ends)
    checks the simulation's bookkeeping."""

    requests: float
    completed: float
    steps: float
    simulated_s: float
    mean_in_system: float
    mean_sojourn_s: float
    mean_queueing_s: float
    p50_queueing_s: float
    p99_queueing_s: float
    mean_ttft_s: float
    p50_ttft_s: float
    p99_ttft_s: float
    p50_tpot_s: float
    p99_tpot_s: float


def _constant_step_s(batch: int, prefill_tokens: int) -> float:
    """A 10 ms step whatever it holds (the contract's example step-time function)."""
    return 0.01


def _budget_holds_the_batch(max_running_sequences: int, max_batched_tokens: int) -> str | None:
    if max_batched_tokens >= max_running_sequences:
        return None
    return (
        f"max_batched_tokens={max_batched_tokens} must be >= max_running_sequences="
        f"{max_running_sequences} (every running sequence decodes a token each step)"
    )


def _lengths(tokens: ArrayLike, n: int, rng: np.random.Generator) -> IntArray:
    """Each request's length: the one given, or drawn (uniformly, with replacement) from the
    array given."""
    values = np.asarray(tokens, dtype=np.int64).ravel()
    if values.size == 1:
        return np.full(n, values[0])
    return rng.choice(values, size=n)


@contract(
    arrival_rate_per_s=SCALAR_POSITIVE,
    n_requests=Count(high=100_000),
    input_tokens=LENGTHS,
    output_tokens=LENGTHS,
    step_time_s=Function(example=_constant_step_s),
    max_running_sequences=Count(high=65_536),
    max_batched_tokens=Count(high=1_048_576),
    seed=Count(low=0),
    max_simulated_s=SCALAR_POSITIVE,
    where=_budget_holds_the_batch,
)
def simulate_batcher(
    arrival_rate_per_s: float,
    n_requests: int,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    step_time_s: Callable[[int, int], float],
    max_running_sequences: int,
    max_batched_tokens: int,
    *,
    seed: int = 0,
    max_simulated_s: float = 1e7,
) -> BatcherLatency:
    """Simulate a continuous-batching server (vLLM's scheduler, simplified) under Poisson
    arrivals at ``arrival_rate_per_s``, ``n_requests`` of them, seeded.

    Each step holds at most ``max_running_sequences`` sequences and ``max_batched_tokens``
    tokens: first one decode token per running sequence whose prompt is done, then prompt
    chunks (chunked prefill) for running sequences in arrival order, then waiting requests
    admitted FCFS while a slot and a token are left. The step lasts
    ``step_time_s(decoding_sequences, prefill_tokens)`` seconds (deterministic in its
    arguments: a run of identical decode-only steps is charged one call times their number).
    An idle server starts a step the moment a request arrives; otherwise arrivals join at the
    next step. Input and output lengths are fixed or drawn from the arrays given. Not modelled:
    KV memory (the running cap stands for it), pre-emption, scheduler and sampling overhead;
    so with floor step times the latencies are floors. Stops when every request has finished
    or past ``max_simulated_s``; statistics are over finished requests."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / arrival_rate_per_s, n_requests))
    inputs = _lengths(input_tokens, n_requests, rng)
    outputs = _lengths(output_tokens, n_requests, rng)
    times = _run(
        arrivals,
        inputs,
        outputs,
        step_time_s,
        max_running_sequences,
        max_batched_tokens,
        max_simulated_s,
    )
    return _summary(arrivals, outputs, times)


@dataclass
class _Times:
    admitted_s: list[float]
    first_token_s: list[float]
    finished_s: list[float]
    end_s: float = 0.0
    area: float = 0.0  # ∫ (requests waiting or running) dt, from the batcher's own count
    steps: int = 0


@dataclass
class _Slots:
    """The running sequences: those decoding in numpy arrays by slot (a run of decode steps
    is one vectorised update), those still in prefill as ``[slot, request, tokens left]`` in
    arrival order."""

    request: IntArray
    decode_left: IntArray
    decoding: NDArray[np.bool_]
    prefilling: list[list[int]]
    free: list[int]
    n_decoding: int = 0


def _run(
    arrivals: FloatArray,
    inputs: IntArray,
    outputs: IntArray,
    step_time_s: Callable[[int, int], float],
    cap: int,
    budget: int,
    max_simulated_s: float,
) -> _Times:
    """The event loop, one step (or one run of identical decode-only steps) an iteration."""
    n = arrivals.size
    times = _Times([np.nan] * n, [np.nan] * n, [np.nan] * n)
    slots = _Slots(
        np.full(cap, -1), np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=bool), [], []
    )
    slots.free = list(range(cap))
    arrival_list, input_list, output_list = arrivals.tolist(), inputs.tolist(), outputs.tolist()
    arrival_sums = np.concatenate(([0.0], np.cumsum(arrivals))).tolist()
    now, arrived, admitted, finished = 0.0, 0, 0, 0
    while finished < n and now <= max_simulated_s:
        arrived = bisect_right(arrival_list, now, lo=arrived)
        if slots.n_decoding == 0 and not slots.prefilling and admitted == arrived:
            now = arrival_list[arrived]  # idle: the next step starts when a request arrives
            continue
        # The step's tokens: a decode token per decoding sequence, then prompt chunks.
        left = budget - slots.n_decoding
        prefill_tokens, prefilled = 0, []
        for entry in slots.prefilling:
            chunk = min(entry[2], left)
            entry[2] -= chunk
            left -= chunk
            prefill_tokens += chunk
            if entry[2] == 0:
                prefilled.append(entry)
        while left > 0 and slots.free and admitted < arrived:
            chunk = min(input_list[admitted], left)
            entry = [slots.free.pop(), admitted, input_list[admitted] - chunk]
            (prefilled if entry[2] == 0 else slots.prefilling).append(entry)
            times.admitted_s[admitted] = now
            left -= chunk
            prefill_tokens += chunk
            admitted += 1
        if prefilled:
            slots.prefilling = [entry for entry in slots.prefilling if entry[2] > 0]
        steps = 1
        if prefill_tokens == 0:  # decode only: jump to the next completion or admission
            steps = int(slots.decode_left[slots.decoding].min())
            if admitted == arrived < n and slots.free:
                one = float(step_time_s(slots.n_decoding, 0))
                wait = max(1, int(np.ceil((arrival_list[arrived] - now) / one)))
                steps = min(steps, wait)
        duration = float(step_time_s(slots.n_decoding, prefill_tokens)) * steps
        if not (duration > 0 and np.isfinite(duration)):
            raise ValueError(
                f"queueing.simulate_batcher(): step_time_s({slots.n_decoding}, "
                f"{prefill_tokens}) must return a finite time > 0; got {duration / steps!r}"
            )
        end = now + duration
        # The area: those in the system all step long, plus arrivals during it from arrival.
        later = bisect_right(arrival_list, end, lo=arrived)
        joined = (later - arrived) * end - (arrival_sums[later] - arrival_sums[arrived])
        times.area += (arrived - finished) * duration + joined
        finished += _decode(slots, steps, end, times)
        finished += _first_tokens(slots, prefilled, output_list, end, times)
        times.steps += steps
        now = end
    times.end_s = now
    return times


def _decode(slots: _Slots, steps: int, end: float, times: _Times) -> int:
    """``steps`` decode steps for every decoding sequence; those done leave. How many did."""
    if slots.n_decoding == 0:
        return 0
    slots.decode_left[slots.decoding] -= steps
    done = np.flatnonzero(slots.decoding & (slots.decode_left == 0))
    for request in slots.request[done].tolist():
        times.finished_s[request] = end
    slots.decoding[done] = False
    slots.free.extend(done.tolist())
    slots.n_decoding -= done.size
    return int(done.size)


def _first_tokens(
    slots: _Slots, prefilled: list[list[int]], outputs: list[int], end: float, times: _Times
) -> int:
    """The prompts whose prefill ended this step emit their first token; a one-token answer
    is done, the others start decoding. How many are done."""
    done = 0
    for slot, request, _ in prefilled:
        times.first_token_s[request] = end
        if outputs[request] == 1:
            times.finished_s[request] = end
            slots.free.append(slot)
            done += 1
            continue
        slots.request[slot] = request
        slots.decode_left[slot] = outputs[request] - 1
        slots.decoding[slot] = True
        slots.n_decoding += 1
    return done


def _summary(arrivals: FloatArray, outputs: IntArray, times: _Times) -> BatcherLatency:
    finished = np.array(times.finished_s)
    ended = ~np.isnan(finished)
    admitted, first_token = np.array(times.admitted_s), np.array(times.first_token_s)
    queueing = (admitted - arrivals)[ended]
    ttft = (first_token - arrivals)[ended]
    sojourn = (finished - arrivals)[ended]
    several = ended & (outputs > 1)
    tpot = (finished - first_token)[several] / (outputs[several] - 1)
    queueing_p50, queueing_p99 = _percentiles(queueing)
    ttft_p50, ttft_p99 = _percentiles(ttft)
    tpot_p50, tpot_p99 = _percentiles(tpot)
    return BatcherLatency(
        requests=float(arrivals.size),
        completed=float(ended.sum()),
        steps=float(times.steps),
        simulated_s=times.end_s,
        mean_in_system=times.area / times.end_s if times.end_s > 0 else 0.0,
        mean_sojourn_s=_mean(sojourn),
        mean_queueing_s=_mean(queueing),
        p50_queueing_s=queueing_p50,
        p99_queueing_s=queueing_p99,
        mean_ttft_s=_mean(ttft),
        p50_ttft_s=ttft_p50,
        p99_ttft_s=ttft_p99,
        p50_tpot_s=tpot_p50,
        p99_tpot_s=tpot_p99,
    )


def _mean(values: FloatArray) -> float:
    return float(values.mean()) if values.size else np.nan


def _percentiles(values: FloatArray) -> tuple[float, float]:
    """p50 and p99, NaN for no values."""
    if not values.size:
        return np.nan, np.nan
    p50, p99 = np.percentile(values, [50, 99])
    return float(p50), float(p99)


# ---- a deployment's steps, for the simulation ------------------------------------------------
@dataclass(frozen=True)
@checked(decode_s=RESULT, prefill_s=RESULT, broadcast=False)
class StepTable:
    """A deployment's step times by what the step holds, looked up (the simulation calls it
    once a step): ``table(decoding_sequences, prefill_tokens)`` is the longer of the decode
    step of that batch and the prefill of that many prompt tokens, a floor (a step that does
    both can be no shorter than either alone)."""

    #: The decode step of 0, 1, ... max_running_sequences sequences, at the context given.
    decode_s: FloatArray
    #: The prefill of 0, 1, ... max_batched_tokens prompt tokens.
    prefill_s: FloatArray

    def __call__(self, batch: int, prefill_tokens: int) -> float:
        return max(float(self.decode_s[batch]), float(self.prefill_s[prefill_tokens]))


@contract(
    context_tokens=Real(low=1.0, low_open=False, scalar=True),
    max_running_sequences=Count(high=65_536),
    max_batched_tokens=Count(high=1_048_576),
    overlap=OneOf(OVERLAP_RULES),
)
def deployment_step_time(
    deployment: Deployment,
    context_tokens: float,
    max_running_sequences: int,
    max_batched_tokens: int,
    *,
    overlap: str = "perfect",
) -> StepTable:
    """The step-time function :func:`simulate_batcher` takes, from the package's
    :func:`~llmmath.core.serving.decode_step` (every sequence at ``context_tokens`` cached)
    and :func:`~llmmath.core.serving.prefill` (a chunk priced as a prompt of its length: its
    attention to earlier chunks is not counted), tabulated once over every batch and chunk the
    caps allow. Floors, as those are. A cap whose KV caches do not fit raises
    :class:`~llmmath.core.placement.DoesNotFitError`."""
    batches = np.arange(1, max_running_sequences + 1, dtype=np.float64)
    chunks = np.arange(1, max_batched_tokens + 1, dtype=np.float64)
    decode = decode_step(deployment, batches, context_tokens, overlap=overlap).time_s
    chunk = prefill(deployment, chunks, overlap=overlap).time_s
    return StepTable(np.concatenate(([0.0], decode)), np.concatenate(([0.0], chunk)))


__all__ = [
    "BatcherLatency",
    "StepTable",
    "deployment_step_time",
    "erlang_c",
    "md1_mean_wait_s",
    "mg1_mean_wait_s",
    "mgc_mean_wait_s",
    "mm1_mean_wait_s",
    "mmc_wait_quantile_s",
    "simulate_batcher",
]

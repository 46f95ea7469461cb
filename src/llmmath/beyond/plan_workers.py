"""The pieces of :mod:`llmmath.beyond.planning`: what it is asked (:class:`Targets`, a
:class:`Stream` of requests and its engine), what it answers with (:class:`Pool`,
:class:`Refusal`), the workers it tries (:func:`candidate_workers`) and the walls one worker
meets before any queueing (:func:`hbm_wall`, :func:`prefill_wall`, :func:`decode_wall`). The
search over copies of a worker is planning's; see that module for the walls and the queueing
model."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from llmmath.beyond.layout_search import serving_layouts
from llmmath.beyond.queueing import BatcherLatency, simulate_batcher
from llmmath.core._constraints import Count, Instance, OneOf, Optional, Real
from llmmath.core.capacity import max_batch
from llmmath.core.collectives import point_to_point_time_s
from llmmath.core.contracts import (
    FLAG,
    NAME,
    NOTE,
    SCALAR,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import DEPLOYMENT, Deployment
from llmmath.core.hardware import CHIP_NAME, get_chip
from llmmath.core.placement import DoesNotFitError, Layout
from llmmath.core.serving import decode_step, prefill

WALLS = ("HBM", "compute", "bandwidth", "network", "queueing")
#: The percentiles the simulation reports (:class:`~llmmath.beyond.queueing.BatcherLatency`).
PERCENTILES = ("p50", "p99")
MODES = ("aggregated", "disaggregated")
ROLES = ("serve", "prefill", "decode")
#: The most chips a plan searches (``llmmath plan --max-chips`` allows as many): workers of
#: 1, 2, 4, ... chips up to it.
MAX_CHIPS_SEARCHED = Count(high=1024)
#: A step's parts, as the wall each names when it is the largest.
_PART_WALLS = ("compute", "bandwidth", "network")


def _example_latency() -> BatcherLatency:
    """A small simulation's answer, for the contract checks' examples."""
    return simulate_batcher(2.0, 50, 10, 5, lambda batch, tokens: 0.01, 8, 64, seed=0)


_LATENCY = Instance(BatcherLatency, example=_example_latency)


@dataclass(frozen=True)
@checked(
    **each(SCALAR_POSITIVE, "ttft_s tpot_s"),
    **each(OneOf(PERCENTILES, "percentile"), "ttft_percentile tpot_percentile"),
)
class Targets:
    """Time to first token and time per output token, each at a percentile ("p50" or "p99",
    the two the simulation reports)."""

    ttft_s: float
    tpot_s: float
    ttft_percentile: str = "p99"
    tpot_percentile: str = "p99"

    @contract(latency=_LATENCY)
    def ttft_of(self, latency: BatcherLatency) -> float:
        """The simulated time to first token at the target's percentile (seconds)."""
        return float(getattr(latency, f"{self.ttft_percentile}_ttft_s"))

    @contract(latency=_LATENCY)
    def tpot_of(self, latency: BatcherLatency) -> float:
        """The simulated time per output token at the target's percentile (seconds)."""
        return float(getattr(latency, f"{self.tpot_percentile}_tpot_s"))

    @contract(latency=_LATENCY)
    def queueing_of(self, latency: BatcherLatency) -> float:
        """The simulated wait before prefill starts, at the TTFT target's percentile (s)."""
        return float(getattr(latency, f"{self.ttft_percentile}_queueing_s"))


TARGETS = Instance(Targets, example=lambda: Targets(2.0, 0.05))


@dataclass(frozen=True)
@checked(
    **each(Real(low=1.0, low_open=False, ndarray=True), "input_tokens output_tokens"),
    rate_per_s=SCALAR_POSITIVE,
    cache_hit_fraction=Real(low_open=False, high=1.0, scalar=True),
    chunked_prefill=FLAG,
    **each(Count(), "max_running_sequences max_batched_tokens n_requests"),
    max_chips=MAX_CHIPS_SEARCHED,
    seed=Count(low=0),
)
class Stream:
    """The requests and the engine: ``rate_per_s`` Poisson arrivals whose prompt and answer
    lengths are drawn from ``input_tokens`` and ``output_tokens`` (one value: every request),
    a share of each prompt found in the prefix cache, the engine's caps (vLLM's
    ``max_num_seqs`` and ``max_num_batched_tokens``; without chunked prefill a prompt is
    prefilled whole in one step: the budget is raised to the longest prompt), the most chips
    searched, and the simulation's requests and seed."""

    rate_per_s: float
    input_tokens: NDArray[np.float64]
    output_tokens: NDArray[np.float64]
    cache_hit_fraction: float = 0.0
    max_running_sequences: int = 256
    max_batched_tokens: int = 8192
    chunked_prefill: bool = True
    max_chips: int = 64
    n_requests: int = 1000
    seed: int = 0

    @property
    def mean_input(self) -> float:
        return float(np.mean(self.input_tokens))

    @property
    def mean_output(self) -> float:
        return float(np.mean(self.output_tokens))

    @property
    def computed_inputs(self) -> NDArray[np.float64]:
        """Prompt tokens each request computes: those not found in the prefix cache."""
        return np.maximum(np.ceil(self.input_tokens * (1.0 - self.cache_hit_fraction)), 1.0)

    @property
    def budget(self) -> int:
        """Tokens a step (the budget the simulation runs with)."""
        if self.chunked_prefill:
            return self.max_batched_tokens
        return max(self.max_batched_tokens, int(self.computed_inputs.max()))


def _stream_example() -> Stream:
    return Stream(1.0, np.array([100.0]), np.array([50.0]), n_requests=20)


STREAM = Instance(Stream, example=_stream_example)


@dataclass(frozen=True)
@checked(
    role=OneOf(ROLES, "role"),
    deployment=DEPLOYMENT,
    workers=Count(),
    latency=Optional(Instance(BatcherLatency)),
)
class Pool:
    """``workers`` copies of one worker (``deployment``, DP 1) in one role, and what the
    simulation of one of them gave (None where it was not simulated)."""

    role: str
    deployment: Deployment
    workers: int
    latency: BatcherLatency | None = None

    @property
    def n_chips(self) -> int:
        return self.workers * self.deployment.n_chips

    def describe(self) -> str:
        chips = f"{self.n_chips} chip{'s' * (self.n_chips != 1)}"
        return f"{self.workers} x {self.deployment.layout} ({chips})"


@dataclass(frozen=True)
@checked(
    mode=OneOf(MODES, "mode"),
    role=OneOf(ROLES, "role"),
    layout=Instance(Layout, example=Layout),
    wall=OneOf((*WALLS, "costlier"), "wall"),
    why=NOTE,
)
class Refusal:
    """A worker that cannot serve the stream within the targets (``wall``, and ``why`` in
    words), or that was not simulated because its floor needs more chips than the cheapest
    configuration found (``costlier``)."""

    mode: str
    role: str
    layout: Layout
    wall: str
    why: str


WORKER = DEPLOYMENT  # a worker: one model-parallel group (DP 1), as a deployment


def _has_layout(worker: Deployment) -> str | None:
    """The rule of :func:`refusal` (its ``where=``): a worker searched has its layout."""
    return None if worker.layout is not None else "worker has no layout (a searched worker has)"


@contract(
    mode=OneOf(MODES, "mode"), role=OneOf(ROLES, "role"), worker=WORKER, wall=NAME,
    where=_has_layout,
)  # fmt: skip
def refusal(mode: str, role: str, worker: Deployment, wall: str) -> Refusal:
    """The :class:`Refusal` of ``worker`` in ``mode`` and ``role`` from a wall as the walls
    below give it: ``"wall: why"``."""
    name, _, why = wall.partition(": ")
    assert worker.layout is not None  # the contract's rule
    return Refusal(mode, role, worker.layout, name, why)


# ---- one worker's walls -----------------------------------------------------------------------
@contract(**each(SCALAR, "compute_s memory_s network_s"))
def part_wall(compute_s: float, memory_s: float, network_s: float) -> str:
    """The wall a too-slow step meets: its largest part."""
    return _PART_WALLS[int(np.argmax([compute_s, memory_s, network_s]))]


@contract(
    template=DEPLOYMENT,
    chip=CHIP_NAME,
    usd_per_chip_hour=SCALAR_POSITIVE,
    max_chips=MAX_CHIPS_SEARCHED,
)
def candidate_workers(
    template: Deployment, chip: str, usd_per_chip_hour: float, max_chips: int
) -> list[Deployment]:
    """Every worker layout (DP 1) of ``template``'s model on 1, 2, 4, ... ``max_chips`` chips
    of ``chip`` that the model allows, as deployments (those whose weights do not fit too:
    ``allow_overflow``, refused later by :func:`hbm_wall`)."""
    sizes = [2**i for i in range(int(math.log2(max_chips)) + 1)]
    found = []
    for size in sizes:
        shell = dataclasses.replace(
            template, chip=get_chip(chip), n_chips=size, layout=None,
            usd_per_chip_hour=usd_per_chip_hour, allow_overflow=True,
        )  # fmt: skip
        layouts, _ = serving_layouts(shell)
        found += [dataclasses.replace(shell, layout=lay) for lay in layouts if lay.dp == 1]
    return found


@contract(worker=WORKER, stream=STREAM)
def hbm_wall(worker: Deployment, stream: Stream) -> str:
    """Why the worker's HBM cannot hold the weights and one whole request, or ``""``."""
    try:
        dep = dataclasses.replace(worker, allow_overflow=False)
    except DoesNotFitError:
        return (
            f"the weights need {worker.weight_bytes_per_chip / 1e9:,.1f} GB a chip; "
            f"{worker.usable_hbm_bytes_per_chip / 1e9:,.1f} GB are usable"
        )
    longest = float(stream.input_tokens.max() + stream.output_tokens.max())
    longest = min(longest, float(dep.model.max_context))
    if float(max_batch(dep, longest)) < 1:
        return f"one request of {longest:,.0f} tokens: its KV cache does not fit beside the weights"
    return ""


def _percentile_length(lengths: NDArray[np.float64], percentile: str) -> float:
    """The length at ``percentile`` ("p99") of the lengths drawn from."""
    return float(np.percentile(lengths, float(percentile[1:])))


@contract(worker=WORKER, stream=STREAM, percentile=OneOf(PERCENTILES, "percentile"))
def kv_transfer_s(worker: Deployment, stream: Stream, percentile: str) -> float:
    """The prompt's KV cache from a prefill worker to a decode worker over the scale-out
    network, each of the worker's chips sending its share at once (a floor)."""
    tokens = _percentile_length(stream.input_tokens, percentile)
    kv = tokens * float(worker.model.kv_bytes_per_token(worker.kv_dtype)) / worker.n_chips
    return float(point_to_point_time_s(kv, worker.chip, across_domains=True))


@contract(worker=WORKER, stream=STREAM, targets=TARGETS, extra_s=SCALAR)
def prefill_wall(worker: Deployment, stream: Stream, targets: Targets, extra_s: float) -> str:
    """The wall (``"wall: why"``) where one prompt alone (at the TTFT percentile's length),
    ``extra_s`` (a KV transfer) added, misses the TTFT target, or ``""``."""
    prompt = _percentile_length(stream.computed_inputs, targets.ttft_percentile)
    fill = prefill(worker, prompt, 1, allow_overflow=True)
    if float(fill.time_s) + extra_s <= targets.ttft_s:
        return ""
    wall = part_wall(float(fill.compute_s), float(fill.memory_s), float(fill.communication_s))
    if extra_s > float(fill.time_s):
        wall = "network"
    return (
        f"{wall}: one {prompt:,.0f}-token prompt alone takes {float(fill.time_s) + extra_s:.3g} s"
        f" to its first token{' (KV transfer included)' * (extra_s > 0)}, over the TTFT "
        f"target {targets.ttft_s:.3g} s"
    )


@contract(worker=WORKER, stream=STREAM, targets=TARGETS)
def decode_wall(worker: Deployment, stream: Stream, targets: Targets) -> str:
    """The wall (``"wall: why"``) where one sequence's decode step misses the TPOT target, or
    ``""``."""
    context = stream.mean_input + stream.mean_output / 2.0
    step = decode_step(worker, 1, context)
    if float(step.time_s) <= targets.tpot_s:
        return ""
    network = float(step.communication_s) + float(step.pp_s)
    wall = part_wall(float(step.compute_s), float(step.memory_s), network)
    return (
        f"{wall}: one sequence's decode step takes {float(step.time_s) * 1e3:.3g} ms, over the "
        f"TPOT target {targets.tpot_s * 1e3:.3g} ms"
    )


@contract(worker=WORKER, stream=STREAM)
def running_cap(worker: Deployment, stream: Stream) -> int:
    """The most sequences a worker runs: the engine's cap, or the KV caches that fit at the
    mean request's final context."""
    final = min(stream.mean_input + stream.mean_output, float(worker.model.max_context))
    fit = float(max_batch(worker, final))
    return int(max(1, min(stream.max_running_sequences, math.floor(fit))))


__all__ = [
    "MAX_CHIPS_SEARCHED",
    "MODES",
    "PERCENTILES",
    "ROLES",
    "STREAM",
    "TARGETS",
    "WALLS",
    "WORKER",
    "Pool",
    "Refusal",
    "Stream",
    "Targets",
    "candidate_workers",
    "decode_wall",
    "hbm_wall",
    "kv_transfer_s",
    "part_wall",
    "prefill_wall",
    "refusal",
    "running_cap",
]

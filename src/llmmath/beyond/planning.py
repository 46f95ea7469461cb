"""The practitioner's question: how many chips of which kind, in which layout, serve a stream of
requests within TTFT and TPOT targets at a percentile, and at what cost per million tokens.

For each chip type, every *worker* (one model-parallel group: ``tp x pp x ep`` chips, DP 1;
``ep > 1`` with ``tp = 1`` is the engines' DP-attention + EP) on 1, 2, 4, ... ``max_chips``
chips that the model allows is tried, in two ways of serving:

- **aggregated**: ``k`` copies of the worker, each taking ``1 / k`` of the requests (a random
  split of a Poisson stream is Poisson) and running continuous batching with chunked prefill;
- **disaggregated**: ``x`` prefill workers and ``y`` decode workers (a ``P:D`` chip ratio),
  each pool sized alone; the prompt's KV cache crosses the scale-out network between them.

A worker meets a wall before any queueing is counted: **HBM** (the weights, or one request's
KV cache beside them, do not fit), **compute**, **bandwidth** or **network** (one prompt
prefilled alone is slower than the TTFT target, one sequence's decode step slower than the
TPOT target, or ``max_chips`` of workers at their most sequences serve fewer requests a second
than asked: named after the largest part of that step). The workers left are run through
:func:`llmmath.beyond.queueing.simulate_batcher` (Poisson arrivals, seeded, step times from
:func:`llmmath.beyond.queueing.deployment_step_time`, the package's decode and prefill floors)
at the fewest copies their floor rate allows, and more copies while the simulated percentiles
miss the targets: a worker that misses them with every copy up to ``max_chips`` meets the
**queueing** wall. The cheapest configuration is the one with the fewest chips (one chip type
rents at one price); a worker whose floor already needs more chips than it is not simulated
(``costlier``).

Every time is a floor (the simulation adds queueing to floor step times and nothing else: no
scheduler overhead, no pre-emption), so every chip count is a lower bound. A disaggregated
TTFT adds the prefill pool's simulated percentile, the KV transfer and the decode pool's
percentile of waiting for a slot (equal to the percentile of the sum where the delays move
together, above it where they are independent).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import NDArray

from llmmath.beyond.layout_search import concurrency_for_rate, workload
from llmmath.beyond.plan_workers import (
    MODES,
    STREAM,
    TARGETS,
    Pool,
    Refusal,
    Stream,
    Targets,
    candidate_workers,
    decode_wall,
    hbm_wall,
    kv_transfer_s,
    part_wall,
    prefill_wall,
    refusal,
    running_cap,
)
from llmmath.beyond.queueing import (
    BatcherLatency,
    StepTable,
    deployment_step_time,
    simulate_batcher,
)
from llmmath.core._constraints import Count, Instance, MappingOf, OneOf, Optional
from llmmath.core.chip_prices import cost_per_million_tokens_usd
from llmmath.core.contracts import NAME, RESULT, SCALAR_POSITIVE, checked, contract, each
from llmmath.core.deployment import DEPLOYMENT, Deployment
from llmmath.core.hardware import CHIP_NAME
from llmmath.core.serving import decode_step


@dataclass(frozen=True)
@checked(
    mode=OneOf(MODES, "mode"),
    pools=Instance(tuple, example=tuple),
    **each(RESULT, "ttft_s tpot_s transfer_s usd_per_hour"),
    **each(RESULT, "usd_per_million_input usd_per_million_output output_tokens_per_s"),
)
class Configuration:
    """A configuration that meets the targets: its pools (one when aggregated; prefill then
    decode when disaggregated), its TTFT and TPOT at the targets' percentiles, the KV transfer
    counted in that TTFT, and its rent per hour and per million tokens at the stated rate
    (idle headroom included: the chips are rented whole)."""

    mode: str
    pools: tuple[Pool, ...]
    ttft_s: float
    tpot_s: float
    transfer_s: float
    usd_per_hour: float
    usd_per_million_input: float
    usd_per_million_output: float
    #: Output tokens a second at the stated rate.
    output_tokens_per_s: float

    @property
    def n_chips(self) -> int:
        return sum(pool.n_chips for pool in self.pools)

    @property
    def tokens_per_s_per_chip(self) -> float:
        """Where it serves the stream: output tokens a second per chip at the stated rate."""
        return self.output_tokens_per_s / self.n_chips

    @property
    def tokens_per_s_per_user(self) -> float:
        """The speed a user sees: ``1 /`` its TPOT at the target's percentile."""
        return 1.0 / self.tpot_s

    def describe(self) -> str:
        return " + ".join(f"{pool.role} {pool.describe()}" for pool in self.pools)


@dataclass(frozen=True)
@checked(
    chip=NAME,
    usd_per_chip_hour=SCALAR_POSITIVE,
    best=Optional(Instance(Configuration)),
    by_mode=Instance(dict, example=dict),
    refused=Instance(list, example=list),
    simulations=Count(low=0),
)
class ChipPlan:
    """One chip type's answer: the cheapest configuration (None where none meets the targets
    within ``max_chips``), the cheapest of each mode, and every worker refused, with why."""

    chip: str
    usd_per_chip_hour: float
    best: Configuration | None
    by_mode: dict[str, Configuration | None]
    refused: list[Refusal]
    simulations: int


# ---- the plan ---------------------------------------------------------------------------------
@contract(
    deployment=DEPLOYMENT,
    chip_prices=MappingOf(CHIP_NAME, SCALAR_POSITIVE, "chip", example=lambda: {"H100": 2.0}),
    stream=STREAM,
    targets=TARGETS,
    modes=OneOf(("both", *MODES), "modes"),
)
def plan(
    deployment: Deployment,
    chip_prices: dict[str, float],
    stream: Stream,
    targets: Targets,
    *,
    modes: str = "both",
) -> list[ChipPlan]:
    """The cheapest configuration per chip type (``chip_prices``: USD per chip-hour) that
    serves ``stream`` within ``targets``; ``deployment`` gives the model, the formats and the
    efficiency knobs (its chip, chip count, layout and price are replaced); ``modes`` searches
    both ways of serving or one. See the module docstring for the search, the walls and the
    queueing model."""
    searched = MODES if modes == "both" else (modes,)
    return [
        _plan_chip(deployment, chip, price, stream, targets, searched)
        for chip, price in chip_prices.items()
    ]


def _plan_chip(
    template: Deployment,
    chip: str,
    price: float,
    stream: Stream,
    targets: Targets,
    modes: tuple[str, ...],
) -> ChipPlan:
    refused: list[Refusal] = []
    workers = []
    for worker in candidate_workers(template, chip, price, stream.max_chips):
        why = hbm_wall(worker, stream)
        if not why:
            workers.append(dataclasses.replace(worker, allow_overflow=False))
        else:
            roles = [("aggregated", "serve"), ("disaggregated", "prefill"),
                     ("disaggregated", "decode")]  # fmt: skip
            refused += [refusal(mode, role, worker, f"HBM: {why}") for mode, role in roles
                        if mode in modes]  # fmt: skip
    by_mode: dict[str, Configuration | None] = {}
    runs = 0
    if "aggregated" in modes:
        by_mode["aggregated"], n = _aggregated(workers, stream, targets, refused)
        runs += n
    if "disaggregated" in modes:
        by_mode["disaggregated"], n = _disaggregated(workers, stream, targets, refused)
        runs += n
    met = [c for c in by_mode.values() if c is not None]
    best = min(met, key=lambda c: (c.n_chips, c.mode != "aggregated"), default=None)
    return ChipPlan(chip, price, best, by_mode, refused, runs)


def _aggregated(
    workers: list[Deployment], stream: Stream, targets: Targets, refused: list[Refusal]
) -> tuple[Configuration | None, int]:
    searches = []
    for worker in workers:
        wall = prefill_wall(worker, stream, targets, 0.0) or decode_wall(worker, stream, targets)
        if not wall:
            wall, search = _aggregated_search(worker, stream, targets)
            if search is not None:
                searches.append(search)
                continue
        refused.append(refusal("aggregated", "serve", worker, wall))

    found = _cheapest_of(searches, refused, "aggregated", "serve", targets)
    runs = sum(len(s.runs) for s in searches)
    if found is None:
        return None, runs
    search, copies = found
    latency = search.at(copies)
    pool = Pool("serve", search.worker, copies, latency)
    view = concurrency_for_rate(
        search.worker, stream.rate_per_s / copies, stream.mean_input, stream.mean_output,
        cache_hit_fraction=stream.cache_hit_fraction,
    )  # fmt: skip
    share = view.prefill_chip_share
    return _configuration("aggregated", (pool,), targets, stream, share, 0.0), runs


def _aggregated_search(
    worker: Deployment, stream: Stream, targets: Targets
) -> tuple[str, _Search | None]:
    """The worker's capacity wall, or its search: copies from the floor's rate at the most
    sequences it runs up to what the chips allow."""
    cap = running_cap(worker, stream)
    most = stream.max_chips // worker.n_chips
    view = workload(
        worker, stream.mean_input, stream.mean_output, cap,
        cache_hit_fraction=stream.cache_hit_fraction,
    )  # fmt: skip
    fewest = max(1, math.ceil(stream.rate_per_s / view.requests_per_s))
    if fewest > most:
        wall = "compute" if view.prefill_chip_share > 0.5 else _bound_wall(view.decode_bound)
        return (
            f"{wall}: {_copies(most)} of {cap} sequences serve <= "
            f"{most * view.requests_per_s:.3g} req/s at the floor, under {stream.rate_per_s:g}",
            None,
        )
    context = stream.mean_input + stream.mean_output / 2.0
    table = _once(lambda: deployment_step_time(worker, context, cap, stream.budget))

    def simulate(copies: int) -> BatcherLatency:
        return simulate_batcher(
            stream.rate_per_s / copies, stream.n_requests, stream.computed_inputs,
            stream.output_tokens, table(), cap, stream.budget, seed=stream.seed,
        )  # fmt: skip

    def meets(latency: BatcherLatency) -> bool:
        return targets.ttft_of(latency) <= targets.ttft_s and (
            targets.tpot_of(latency) <= targets.tpot_s
        )

    return "", _Search(worker, fewest, most, simulate, meets)


def _disaggregated(
    workers: list[Deployment], stream: Stream, targets: Targets, refused: list[Refusal]
) -> tuple[Configuration | None, int]:
    """The cheapest decode pool meeting the TPOT target, then the cheapest prefill pool
    meeting the TTFT target less the decode pool's wait for a slot."""
    decode = _decode_pool(workers, stream, targets, refused)
    runs = sum(len(s.runs) for s in decode[1])
    if decode[0] is None:
        for worker in workers:
            why = "costlier: not searched, no decode pool meets the TPOT target"
            refused.append(refusal("disaggregated", "prefill", worker, why))
        return None, runs
    decode_pool = decode[0]
    assert decode_pool.latency is not None
    waits_s = targets.queueing_of(decode_pool.latency)
    room = stream.max_chips - decode_pool.n_chips
    prefill_found, prefill_searches = _prefill_pool(
        workers, stream, targets, refused, waits_s, room
    )
    runs += sum(len(s.runs) for s in prefill_searches)
    if prefill_found is None:
        return None, runs
    prefill_pool, transfer_s = prefill_found
    pools = (prefill_pool, decode_pool)
    share = prefill_pool.n_chips / (prefill_pool.n_chips + decode_pool.n_chips)
    config = _configuration("disaggregated", pools, targets, stream, share, transfer_s)
    return config, runs


def _decode_pool(
    workers: list[Deployment], stream: Stream, targets: Targets, refused: list[Refusal]
) -> tuple[Pool | None, list[_Search]]:
    searches = []
    context = stream.mean_input + stream.mean_output / 2.0
    for worker in workers:
        wall = decode_wall(worker, stream, targets)
        cap = running_cap(worker, stream)
        most = stream.max_chips // worker.n_chips
        step = decode_step(worker, cap, context)
        per_worker = cap / (stream.mean_output * float(step.time_s))  # Little's law
        fewest = max(1, math.ceil(stream.rate_per_s / per_worker))
        if not wall and fewest > most:
            parts = (float(step.compute_s), float(step.memory_s), float(step.communication_s))
            wall = (
                f"{part_wall(*parts)}: {_copies(most)} decoding {cap} sequences serve <= "
                f"{most * per_worker:.3g} req/s at the floor, under {stream.rate_per_s:g}"
            )
        if wall:
            refused.append(refusal("disaggregated", "decode", worker, wall))
            continue
        steps = _once(partial(_decode_table, worker, context, cap))

        def simulate(
            copies: int, steps: Callable[[], StepTable] = steps, cap: int = cap
        ) -> BatcherLatency:
            return simulate_batcher(
                stream.rate_per_s / copies, stream.n_requests, 1, stream.output_tokens, steps(),
                cap, cap, seed=stream.seed,
            )  # fmt: skip

        def meets(latency: BatcherLatency) -> bool:
            return targets.tpot_of(latency) <= targets.tpot_s and (
                targets.queueing_of(latency) < targets.ttft_s
            )

        searches.append(_Search(worker, fewest, most, simulate, meets))

    found = _cheapest_of(searches, refused, "disaggregated", "decode", targets)
    if found is None:
        return None, searches
    search, copies = found
    return Pool("decode", search.worker, copies, search.at(copies)), searches


def _prefill_pool(
    workers: list[Deployment],
    stream: Stream,
    targets: Targets,
    refused: list[Refusal],
    decode_wait_s: float,
    room: int,
) -> tuple[tuple[Pool, float] | None, list[_Search]]:
    searches, transfers = [], {}
    for worker in workers:
        transfer = kv_transfer_s(worker, stream, targets.ttft_percentile)
        budget = dataclasses.replace(targets, ttft_s=max(targets.ttft_s - decode_wait_s, 1e-9))
        wall = prefill_wall(worker, stream, budget, transfer)
        view = workload(worker, stream.mean_input, 1, 1,
                        cache_hit_fraction=stream.cache_hit_fraction)  # fmt: skip
        most = room // worker.n_chips
        fewest = max(1, math.ceil(stream.rate_per_s * view.prefill_s_per_request))
        if not wall and most == 0:
            wall = f"costlier: no room beside the decode pool's chips within {stream.max_chips}"
        elif not wall and fewest > most:
            wall = (
                f"compute: {_copies(most)} prefilling beside the decode pool serve <= "
                f"{most / view.prefill_s_per_request:.3g} req/s at the floor, under "
                f"{stream.rate_per_s:g}"
            )
        if wall:
            refused.append(refusal("disaggregated", "prefill", worker, wall))
            continue
        table = _once(partial(deployment_step_time, worker, stream.mean_input, 1, stream.budget))
        limit = budget.ttft_s - transfer

        def simulate(copies: int, table: Callable[[], StepTable] = table) -> BatcherLatency:
            return simulate_batcher(
                stream.rate_per_s / copies, stream.n_requests, stream.computed_inputs, 1,
                table(), stream.max_running_sequences, stream.budget, seed=stream.seed,
            )  # fmt: skip

        def meets(latency: BatcherLatency, limit: float = limit) -> bool:
            return targets.ttft_of(latency) <= limit

        transfers[id(worker)] = transfer
        searches.append(_Search(worker, fewest, most, simulate, meets))

    found = _cheapest_of(searches, refused, "disaggregated", "prefill", targets)
    if found is None:
        return None, searches
    search, copies = found
    pool = Pool("prefill", search.worker, copies, search.at(copies))
    return (pool, transfers[id(search.worker)]), searches


def _cheapest_of(
    searches: list[_Search], refused: list[Refusal], mode: str, role: str, targets: Targets
) -> tuple[_Search, int] | None:
    """:func:`_cheapest` of one pool's searches, the others refused in ``mode`` and ``role``."""

    def refuse(search: _Search, wall: str, why: str) -> None:
        refused.append(refusal(mode, role, search.worker, f"{wall}: {why}"))

    return _cheapest(searches, refuse, _missed(targets))


def _copies(n: int) -> str:
    return f"{n} cop{'y' if n == 1 else 'ies'}"


def _once(build: Callable[[], StepTable]) -> Callable[[], StepTable]:
    """``build``, run at the first call only: a worker never simulated never tabulates."""
    built: list[StepTable] = []

    def table() -> StepTable:
        if not built:
            built.append(build())
        return built[0]

    return table


def _decode_table(worker: Deployment, context: float, cap: int) -> StepTable:
    """A decode worker's steps: one that takes a prompt's KV cache is counted as a decode step
    of the sequences it then holds (no prompt is computed there)."""
    table = deployment_step_time(worker, context, cap, cap)
    return StepTable(table.decode_s, table.decode_s)


def _configuration(
    mode: str,
    pools: tuple[Pool, ...],
    targets: Targets,
    stream: Stream,
    input_share: float,
    transfer_s: float,
) -> Configuration:
    """The configuration's latencies at the targets' percentiles and its costs: the rent of
    its chips for a second, ``input_share`` of it over the second's input tokens and the rest
    over its output tokens."""
    chips = sum(pool.n_chips for pool in pools)
    price = pools[0].deployment.chip_hour_usd
    last = pools[-1].latency
    first = pools[0].latency
    assert first is not None and last is not None
    ttft = targets.ttft_of(first)
    if mode == "disaggregated":
        ttft += transfer_s + targets.queueing_of(last)
    rate = stream.rate_per_s

    def per_million(share: float, tokens: float) -> float:
        return float(cost_per_million_tokens_usd(share, rate * tokens, chips, price))

    return Configuration(
        mode=mode,
        pools=pools,
        ttft_s=ttft,
        tpot_s=targets.tpot_of(last),
        transfer_s=transfer_s,
        usd_per_hour=chips * price,
        usd_per_million_input=per_million(input_share, stream.mean_input),
        usd_per_million_output=per_million(1.0 - input_share, stream.mean_output),
        output_tokens_per_s=rate * stream.mean_output,
    )


# ---- the search over copies of one worker -------------------------------------------------------
@dataclass
class _Search:
    """A worker's search state: the fewest copies its floor rate allows, the most the chips
    allow, and the simulation of ``k`` copies (cached)."""

    worker: Deployment
    fewest: int
    most: int
    simulate: Callable[[int], BatcherLatency]
    meets: Callable[[BatcherLatency], bool]
    runs: dict[int, BatcherLatency] = dataclasses.field(default_factory=dict)

    def at(self, copies: int) -> BatcherLatency:
        if copies not in self.runs:
            self.runs[copies] = self.simulate(copies)
        return self.runs[copies]

    def fewest_meeting(self, upto: int) -> int | None:
        """The fewest copies in [fewest, upto] whose simulation meets the targets (the
        latencies fall as copies are added), or None."""
        if upto < self.fewest or not self.meets(self.at(upto)):
            return None
        lo, hi = self.fewest - 1, upto  # hi meets; lo does not (or is below the range)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if self.meets(self.at(mid)) else (mid, hi)
        return hi


def _cheapest(
    searches: list[_Search],
    refuse: Callable[[_Search, str, str], None],
    what: Callable[[BatcherLatency], str],
) -> tuple[_Search, int] | None:
    """The search and copies with the fewest chips meeting the targets; the others refused
    (queueing where they miss at every copy the chips allow, else costlier)."""
    best: tuple[_Search, int] | None = None
    best_chips = math.inf
    for search in sorted(searches, key=lambda s: s.fewest * s.worker.n_chips):
        size = search.worker.n_chips
        if search.fewest * size >= best_chips:
            refuse(search, "costlier", f"its floor needs >= {search.fewest * size} chips, the "
                   f"cheapest found {int(best_chips)}")  # fmt: skip
            continue
        upto = search.most if best is None else min(search.most, int(best_chips - 1) // size)
        copies = search.fewest_meeting(upto)
        if copies is not None:
            if best is not None:
                refuse(best[0], "costlier", f"needs {best[1] * best[0].worker.n_chips} chips")
            best, best_chips = (search, copies), copies * size
            continue
        if upto == search.most:
            last = search.at(upto)
            refuse(
                search,
                "queueing",
                f"{what(last)} with {upto} cop{'y' if upto == 1 else 'ies'} ({upto * size} chips)",
            )
        else:
            refuse(search, "costlier", f"misses the targets below {int(best_chips)} chips")
    return best


def _missed(targets: Targets) -> Callable[[BatcherLatency], str]:
    def what(latency: BatcherLatency) -> str:
        ttft, tpot = targets.ttft_of(latency), targets.tpot_of(latency)
        missed = []
        if not ttft <= targets.ttft_s:
            missed.append(f"{targets.ttft_percentile} TTFT {ttft:.3g} s")
        if not tpot <= targets.tpot_s:
            missed.append(f"{targets.tpot_percentile} TPOT {tpot * 1e3:.3g} ms")
        return " and ".join(missed) + " over the targets"

    return what


def _bound_wall(bound: str) -> str:
    return {"compute": "compute", "memory": "bandwidth", "network": "network"}[bound]


# ---- curves the figures draw ------------------------------------------------------------------
@dataclass(frozen=True)
@checked(chip=NAME, **each(RESULT, "tokens_per_s_per_user tokens_per_s_per_chip"))
class Frontier:
    """One chip type's frontier at the stream's lengths: the most output tokens a second per
    chip (prefill counted) at each speed a user sees (``1 / TPOT``), over every worker that
    fits and every concurrency it holds (floors, no queueing), fastest last."""

    chip: str
    tokens_per_s_per_user: NDArray[np.float64]
    tokens_per_s_per_chip: NDArray[np.float64]


@contract(
    deployment=DEPLOYMENT,
    chip=CHIP_NAME,
    usd_per_chip_hour=SCALAR_POSITIVE,
    stream=STREAM,
)
def frontier(
    deployment: Deployment, chip: str, usd_per_chip_hour: float, stream: Stream
) -> Frontier:
    """The throughput-per-chip vs speed-per-user frontier of ``chip`` (see :class:`Frontier`),
    from :func:`llmmath.beyond.layout_search.workload` over the workers :func:`plan` tries."""
    points = []
    for worker in candidate_workers(deployment, chip, usd_per_chip_hour, stream.max_chips):
        if hbm_wall(worker, stream):
            continue
        fitted = dataclasses.replace(worker, allow_overflow=False)
        cap = running_cap(fitted, stream)
        for concurrency in np.unique(np.round(np.geomspace(1, cap, 12))):
            view = workload(
                fitted, stream.mean_input, stream.mean_output, float(concurrency),
                cache_hit_fraction=stream.cache_hit_fraction,
            )  # fmt: skip
            points.append((1.0 / view.tpot_s, view.output_tokens_per_s_per_chip))
    points.sort(key=lambda p: (-p[0], -p[1]))
    kept: list[tuple[float, float]] = []
    for speed, rate in points:  # fastest first: keep each point above every faster one
        if not kept or rate > kept[-1][1]:
            kept.append((speed, rate))
    kept.reverse()
    return Frontier(
        chip,
        np.array([p[0] for p in kept], dtype=np.float64),
        np.array([p[1] for p in kept], dtype=np.float64),
    )


__all__ = ["ChipPlan", "Configuration", "Frontier", "frontier", "plan"]

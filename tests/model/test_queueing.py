"""Queueing (issue 44, tail latency): the closed forms against hand-worked values, and the
simulated continuous batcher against them where its setting is a textbook queue (one-token
answers, a batch of one: every request is one service), Little's law over its own bookkeeping,
chunked prefill counted step by step, and bad input refused naming the parameter."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

from llmmath.beyond import queueing
from llmmath.beyond.queueing import (
    deployment_step_time,
    erlang_c,
    md1_mean_wait_s,
    mg1_mean_wait_s,
    mgc_mean_wait_s,
    mm1_mean_wait_s,
    mmc_wait_quantile_s,
    simulate_batcher,
)
from llmmath.core.deployment import Deployment
from llmmath.core.placement import DoesNotFitError
from llmmath.core.serving import decode_step, prefill

#: The textbook setting: Poisson arrivals at 0.5/s, a 1 s mean service, so ρ = 0.5.
RATE_PER_S, SERVICE_S = 0.5, 1.0
#: Enough requests that the seeded estimates sit well inside the tolerances below.
N_REQUESTS = 50_000
#: Relative tolerances, from the spread of the estimates over 30 seeds (0-29) at N_REQUESTS and
#: rho = 0.5 (measured when this test was written; waits are correlated from one request to the
#: next, so the spread is several times an i.i.d. sample's): the relative error's standard
#: deviation was 0.016 for M/D/1's mean wait, 0.0195 for M/M/1's and 0.024 for M/M/1's p99
#: wait, its mean under 0.003 in each (no bias), its largest 0.037, 0.042 and 0.055. Each
#: tolerance is at least 4 standard deviations (a seeded run off by chance fails it with odds
#: under 1 in 15,000), while a wrong model is far outside it (M/M/1's wait is twice M/D/1's).
MEAN_TOLERANCE, P99_TOLERANCE = 0.08, 0.10


def constant_step(service_s: float) -> Callable[[int, int], float]:
    return lambda batch, prefill_tokens: service_s


def exponential_step(mean_s: float, seed: int) -> Callable[[int, int], float]:
    """Each step (here each request: one token in, one out, one at a time) an exponential
    service time, drawn from its own seeded generator."""
    rng = np.random.default_rng(seed)
    return lambda batch, prefill_tokens: float(rng.exponential(mean_s))


def textbook_queue(step: Callable[[int, int], float]) -> queueing.BatcherLatency:
    """The batcher as a single-server FCFS queue: one sequence at a time, one-token prompts
    and answers, so each request is exactly one step."""
    return simulate_batcher(RATE_PER_S, N_REQUESTS, 1, 1, step, 1, 1, seed=3)


# ---- closed forms ------------------------------------------------------------------------------
def test_pollaczek_khinchine_by_hand() -> None:
    """ρ = 0.5, s = 1: M/D/1 waits ρ s / (2 (1 - ρ)) = 0.5 s; M/M/1 twice that, 1 s; M/G/1 with
    cv = 2 (1 + cv²) = 5 times M/D/1's, 2.5 s."""
    assert md1_mean_wait_s(0.5, 1.0) == pytest.approx(0.5, rel=1e-12)
    assert mm1_mean_wait_s(0.5, 1.0) == pytest.approx(1.0, rel=1e-12)
    assert mg1_mean_wait_s(0.5, 1.0, 2.0) == pytest.approx(2.5, rel=1e-12)
    # vectorised over the rate: the wait grows without bound as ρ -> 1
    waits = np.asarray(md1_mean_wait_s(np.array([0.1, 0.5, 0.9, 0.99]), 1.0))
    assert np.all(np.diff(waits) > 0) and waits[-1] == pytest.approx(49.5, rel=1e-12)


def test_erlang_c_by_hand() -> None:
    """a = 1.5 erlangs on c = 2 servers: C = (a²/2!)(c/(c-a)) / (1 + a + (a²/2!)(c/(c-a)))
    = 4.5 / 7; on one server C = ρ."""
    assert erlang_c(1.5, 1.0, 2) == pytest.approx(4.5 / 7, rel=1e-12)
    assert erlang_c(np.array([0.2, 0.7]), 1.0, 1) == pytest.approx([0.2, 0.7], rel=1e-12)
    # M/M/2's mean wait C s / (c - a) = (4.5 / 7) / 0.5
    assert mgc_mean_wait_s(1.5, 1.0, 2) == pytest.approx(9 / 7, rel=1e-12)


def test_allen_cunneen_is_exact_for_one_server() -> None:
    """On one server Allen-Cunneen is Pollaczek-Khinchine, at every cv."""
    cv = np.array([0.0, 0.5, 1.0, 3.0])
    assert mgc_mean_wait_s(0.7, 1.2, 1, cv) == pytest.approx(mg1_mean_wait_s(0.7, 1.2, cv))


def test_more_servers_at_the_same_load_per_server_wait_less() -> None:
    """ρ = 0.8 per server: pooling (M/M/c with c = 1, 2, 8, 32) cuts the chance of waiting."""
    waits = [float(erlang_c(0.8 * c, 1.0, c)) for c in (1, 2, 8, 32)]
    assert all(later < earlier for earlier, later in itertools.pairwise(waits))


def test_mm1_wait_quantiles_by_hand() -> None:
    """P(W > t) = ρ e^{-(μ - λ) t}: p99 at ρ = 0.5 is 2 ln(50) s; the median is 0 (half the
    arrivals find the server free)."""
    assert mmc_wait_quantile_s(0.5, 1.0, 0.99) == pytest.approx(2 * math.log(50), rel=1e-12)
    assert mmc_wait_quantile_s(0.5, 1.0, 0.5) == 0.0
    assert mmc_wait_quantile_s(0.5, 1.0, 0.4) == 0.0
    assert mmc_wait_quantile_s(0.5, 1.0, 1.0) == math.inf


# ---- the simulated batcher against the closed forms --------------------------------------------
def test_constant_service_reproduces_md1() -> None:
    run = textbook_queue(constant_step(SERVICE_S))
    expected = md1_mean_wait_s(RATE_PER_S, SERVICE_S)
    assert run.completed == N_REQUESTS
    assert run.mean_queueing_s == pytest.approx(expected, rel=MEAN_TOLERANCE)
    # the first token comes at the end of the one step: the wait plus the service
    assert run.mean_ttft_s == pytest.approx(run.mean_queueing_s + SERVICE_S, rel=1e-9)
    # and it is not M/M/1's (twice as long): the tolerance tells the two apart
    assert abs(run.mean_queueing_s / float(mm1_mean_wait_s(RATE_PER_S, SERVICE_S)) - 1) > 0.3


def test_exponential_service_reproduces_mm1_mean_and_p99() -> None:
    run = textbook_queue(exponential_step(SERVICE_S, seed=11))
    assert run.mean_queueing_s == pytest.approx(
        mm1_mean_wait_s(RATE_PER_S, SERVICE_S), rel=MEAN_TOLERANCE
    )
    assert run.p99_queueing_s == pytest.approx(
        mmc_wait_quantile_s(RATE_PER_S, SERVICE_S, 0.99), rel=P99_TOLERANCE
    )
    assert run.p50_queueing_s == 0.0  # half the arrivals find the server idle
    assert math.isnan(run.p50_tpot_s)  # one-token answers have no time per output token


def test_littles_law_holds_for_a_busy_batcher() -> None:
    """The batcher's own time-average count of requests in the system equals the throughput
    times the mean time in it, with chunked prefill, drawn lengths and a full batch."""
    lengths = np.random.default_rng(5)
    prompts = lengths.integers(100, 6000, size=500)
    answers = lengths.integers(1, 800, size=500)
    step = lambda batch, prefill_tokens: 0.015 + 2e-5 * batch + 4e-6 * prefill_tokens  # noqa: E731
    run = simulate_batcher(6.0, 3000, prompts, answers, step, 64, 2048, seed=2)
    assert run.completed == 3000
    throughput_per_s = run.completed / run.simulated_s
    assert run.mean_in_system == pytest.approx(throughput_per_s * run.mean_sojourn_s, rel=1e-9)
    assert run.p50_ttft_s <= run.p99_ttft_s and run.p50_tpot_s <= run.p99_tpot_s
    assert run.mean_ttft_s >= run.mean_queueing_s


def test_chunked_prefill_step_by_step() -> None:
    """One request alone: a 10,000-token prompt under a 4,096-token budget takes 3 steps (the
    first token at 0.3 s), then 4 more tokens at one 0.1 s step each."""
    run = simulate_batcher(1.0, 1, 10_000, 5, constant_step(0.1), 8, 4096)
    assert run.p50_queueing_s == 0.0
    assert run.p50_ttft_s == pytest.approx(0.3, rel=1e-12)
    assert run.p50_tpot_s == pytest.approx(0.1, rel=1e-12)
    assert run.steps == 3 + 4


def test_a_full_batch_makes_arrivals_queue() -> None:
    """Room for one sequence of 100 tokens' answer: the second of two close arrivals waits for
    the first to finish; with room for two it does not."""
    step = constant_step(0.01)
    one = simulate_batcher(100.0, 2000, 10, 100, step, 1, 64, seed=1)
    many = simulate_batcher(100.0, 2000, 10, 100, step, 64, 64, seed=1)
    assert one.p99_queueing_s > 10 * many.p99_queueing_s


def test_runs_are_seeded() -> None:
    step = constant_step(0.05)
    first = simulate_batcher(5.0, 200, [50, 500], [10, 100], step, 8, 512, seed=4)
    again = simulate_batcher(5.0, 200, [50, 500], [10, 100], step, 8, 512, seed=4)
    other = simulate_batcher(5.0, 200, [50, 500], [10, 100], step, 8, 512, seed=5)
    assert first == again
    assert first != other


def test_the_simulated_time_bounds_the_run() -> None:
    """Past ``max_simulated_s`` the run stops: only the requests finished count."""
    run = simulate_batcher(1.0, 1000, 1, 1, constant_step(0.1), 1, 1, max_simulated_s=50.0)
    assert 0 < run.completed < 1000 and run.simulated_s <= 50.0 + 0.1


# ---- bad input ---------------------------------------------------------------------------------
def test_a_negative_rate_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="arrival_rate_per_s"):
        md1_mean_wait_s(-1.0, 1.0)
    with pytest.raises(ValueError, match="arrival_rate_per_s"):
        simulate_batcher(-1.0, 10, 1, 1, constant_step(0.1), 1, 1)


@pytest.mark.parametrize(
    "closed_form",
    [
        lambda: md1_mean_wait_s(2.0, 0.5),
        lambda: mm1_mean_wait_s(1.5, 1.0),
        lambda: mg1_mean_wait_s(np.array([0.5, 1.2]), 1.0),
        lambda: erlang_c(2.5, 1.0, 2),
        lambda: mmc_wait_quantile_s(1.0, 1.0, 0.99),
    ],
)
def test_a_rate_at_or_above_capacity_is_refused_where_a_closed_form_needs_stability(
    closed_form: Callable[[], object],
) -> None:
    with pytest.raises(ValueError, match=r"arrival_rate_per_s x .*servers=\d+ \(a stable queue"):
        closed_form()


def test_caps_must_be_whole_numbers() -> None:
    with pytest.raises(TypeError, match="max_running_sequences must be an integer"):
        simulate_batcher(1.0, 10, 1, 1, constant_step(0.1), 2.5, 16)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_batched_tokens must be an integer"):
        simulate_batcher(1.0, 10, 1, 1, constant_step(0.1), 2, 16.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="input_tokens must be a whole number"):
        simulate_batcher(1.0, 10, [10, 20.5], 1, constant_step(0.1), 2, 16)


def test_a_budget_smaller_than_the_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="max_batched_tokens=8 must be >= max_running_sequences"):
        simulate_batcher(1.0, 10, 1, 1, constant_step(0.1), 16, 8)


def test_a_step_time_that_is_not_a_time_is_refused() -> None:
    with pytest.raises(ValueError, match=r"step_time_s\(0, 1\) must return a finite time > 0"):
        simulate_batcher(1.0, 10, 1, 1, constant_step(-0.1), 1, 1)
    with pytest.raises(TypeError, match="step_time_s must be a callable"):
        simulate_batcher(1.0, 10, 1, 1, 0.1, 1, 1)  # type: ignore[arg-type]


# ---- a deployment's step times -----------------------------------------------------------------
def test_a_deployments_step_table_is_the_serving_floors() -> None:
    """Llama-3-8B on one H100 at 2,500 tokens cached: a decode-only step is decode_step's, a
    prefill-only one prefill's, and a mixed one the longer of the two."""
    dep = Deployment("Llama-3-8B", "H100")
    table = deployment_step_time(dep, 2500.0, 64, 2048)
    decode_s = float(decode_step(dep, 32.0, 2500.0).time_s)
    prefill_s = float(prefill(dep, 1000.0).time_s)
    assert table(32, 0) == pytest.approx(decode_s, rel=1e-12)
    assert table(0, 1000) == pytest.approx(prefill_s, rel=1e-12)
    assert table(32, 1000) == pytest.approx(max(decode_s, prefill_s), rel=1e-12)
    # a cap whose KV caches do not fit is refused as such
    with pytest.raises(DoesNotFitError):
        deployment_step_time(dep, 2500.0, 4096, 8192)


def test_a_deployment_under_load_pays_at_least_its_decode_floor() -> None:
    """2,000-token prompts, 200-token answers at 4 requests/s: every output token after the
    first takes at least the one-sequence decode step, the first at least the prompt's
    prefill."""
    dep = Deployment("Llama-3-8B", "H100")
    table = deployment_step_time(dep, 2200.0, 64, 2048)
    run = simulate_batcher(4.0, 500, 2000, 200, table, 64, 2048, seed=1)
    assert run.completed == 500
    assert run.p50_tpot_s >= table(1, 0)
    assert run.p50_ttft_s >= float(prefill(dep, 2000.0).time_s)

"""llmmath.beyond.layout_search: the cheapest layout and batch that meet a time-per-token target."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from llmmath import kv_cache
from llmmath.beyond.layout_search import (
    best_layouts,
    calibrate,
    concurrency_for_rate,
    divisors,
    largest_batch_within,
    serving_layouts,
    workload,
)
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.placement import DoesNotFitError, Layout


def test_divisors() -> None:
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(1) == [1]


def test_every_allowed_split_is_tried_once() -> None:
    layouts, refused = serving_layouts(Deployment("Llama-3-70B", "H100", 8))
    # 8 = tp * pp * dp: 10 ordered splits; Llama-3-70B allows every one (64 heads, 80 layers).
    assert len(layouts) == 10 and refused == 0
    assert len({str(layout) for layout in layouts}) == 10
    assert all(layout.n_gpus == 8 and layout.ep == 1 for layout in layouts)
    moe, refused = serving_layouts(Deployment("Mixtral-8x7B", "H100", 8))
    assert any(layout.ep == 8 for layout in moe) and refused == 0
    # 32 layers: pp=64 is not allowed on 64 chips.
    _, refused = serving_layouts(Deployment("Llama-3-8B", "H100", 64))
    assert refused > 0


def test_the_batch_found_is_the_last_that_meets_the_target() -> None:
    dep = Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
    most = float(capacity.max_batch(dep, 4096))
    every = np.arange(1.0, most + 1)
    times = serving.decode_step(dep, every, 4096).time_s
    for target in (0.012, 0.020, float(times[200])):
        batch = largest_batch_within(dep, target, 4096, most)
        assert batch == every[times <= target].max()
    assert largest_batch_within(dep, 1e-6, 4096, most) == 0.0
    assert largest_batch_within(dep, 10.0, 4096, 123) == 123.0


def test_best_layout_is_cheapest_and_meets_the_target() -> None:
    base = Deployment("Llama-3-70B", "H100", 8)
    found = best_layouts(base, 0.030, 4096)
    costs = [c.cost_per_million_usd for c in found.candidates]
    assert costs == sorted(costs)  # type: ignore[type-var]
    for candidate in found.candidates:
        assert float(candidate.step.time_s) <= 0.030
        dep = dataclasses.replace(base, layout=candidate.layout)
        assert candidate.batch <= float(capacity.max_batch(dep, 4096))
        if candidate.limited_by == "latency":  # one more sequence would miss the target
            slower = serving.decode_step(dep, candidate.batch + 1, 4096, allow_overflow=True)
            assert float(slower.time_s) > 0.030
    best = found.candidates[0]
    assert str(best.layout) == "TP8 DP1"  # all-reduces on NVLink beat a pipeline's KV copies
    # The whole search spent 10 layouts: met, too slow, or not fitting.
    assert len(found.candidates) + len(found.too_slow) + len(found.do_not_fit) == 10


def test_an_impossible_target_returns_the_fastest_layouts() -> None:
    found = best_layouts(Deployment("Llama-3-70B", "H100", 8), 0.001, 4096)
    assert found.candidates == []
    times = [float(c.step.time_s) for c in found.too_slow]
    assert times == sorted(times) and times[0] > 0.001


def test_without_a_price_the_ranking_stands_and_costs_are_none() -> None:
    found = best_layouts(Deployment("Llama-3-8B", "H200", 2), 0.010, 2048)
    assert found.candidates and all(c.cost_per_million_usd is None for c in found.candidates)
    priced = best_layouts(Deployment("Llama-3-8B", "H200", 2, usd_per_chip_hour=3.0), 0.010, 2048)
    assert [str(c.layout) for c in priced.candidates] == [str(c.layout) for c in found.candidates]


def test_bad_targets_are_refused() -> None:
    with pytest.raises(ValueError, match="latency_s must be finite and > 0"):
        best_layouts(Deployment("Llama-3-8B", "H100", 1), 0.0, 2048)
    with pytest.raises(ValueError, match="context must be <="):
        best_layouts(Deployment("Llama-3-8B", "H100", 1), 0.05, 10**6)


def test_the_serial_estimate_allows_smaller_batches() -> None:
    dep = Deployment("Llama-3-70B", "H100", 8)
    floor = best_layouts(dep, 0.020, 4096)
    serial = best_layouts(dep, 0.020, 4096, overlap="none")
    by_layout = {str(c.layout): c.batch for c in floor.candidates}
    assert serial.candidates
    for candidate in serial.candidates:
        assert float(candidate.step.serial_s) <= 0.020
        assert candidate.batch <= by_layout[str(candidate.layout)]
    assert any(c.batch < by_layout[str(c.layout)] for c in serial.candidates)


# ---- a workload in steady state ----------------------------------------------------------------
def test_a_colocated_workload_interleaves_prefill_with_decode() -> None:
    dep = Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
    view = workload(dep, 2000, 500, 64)
    step = float(serving.decode_step(dep, 64, 2000 + 250).time_s)
    per_pass = np.ceil(capacity.step_critical_batch(dep) / 2000)
    fill = float(serving.prefill(dep, 2000, per_pass).time_s) / per_pass
    assert view.decode_step_s == pytest.approx(step, rel=1e-12)
    assert view.prefill_s_per_request == pytest.approx(fill, rel=1e-12)
    # 64 sequences, each replaced every 500 steps: 64/500 prompts prefilled per step
    assert view.tpot_s == pytest.approx(step + 64 / 500 * fill, rel=1e-12)
    assert view.output_tokens_per_s_per_chip == pytest.approx(64 / (8 * view.tpot_s), rel=1e-12)
    usd_in, usd_out = view.usd_per_million()
    per_chip_s = dep.chip_hour_usd / 3600
    assert usd_out == pytest.approx(8 * step / 64 * per_chip_s * 1e6, rel=1e-12)
    assert usd_in == pytest.approx(8 * fill / 2000 * per_chip_s * 1e6, rel=1e-12)
    # Disaggregated: no interference in TPOT; the same chip-seconds a token in all
    apart = workload(dep, 2000, 500, 64, disaggregated=True)
    assert apart.tpot_s == pytest.approx(step, rel=1e-12) and apart.tpot_s < view.tpot_s
    assert apart.output_tokens_per_s_per_chip == pytest.approx(
        view.output_tokens_per_s_per_chip, rel=1e-12
    )


def test_cache_hits_and_mtp_change_what_they_should() -> None:
    dep = Deployment("DeepSeek-V3", "H200", 16, layout=Layout(ep=16), weight_dtype="fp8",
                     compute_dtype="fp8")  # fmt: skip
    plain = workload(dep, 4000, 1000, 128)
    cached = workload(dep, 4000, 1000, 128, cache_hit_fraction=0.5)
    assert cached.prefill_s_per_request < plain.prefill_s_per_request
    assert cached.decode_step_s == pytest.approx(plain.decode_step_s, rel=1e-12)
    mtp = workload(dep, 4000, 1000, 128, mtp_acceptance=0.8)
    assert mtp.mtp_tokens_per_step == pytest.approx(1.8, rel=1e-12)
    assert mtp.tpot_s < plain.tpot_s  # a verify step yields 1.8 tokens at a step's cost


def test_the_most_that_fit_is_the_default_concurrency() -> None:
    dep = Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
    view = workload(dep, 1000, 1000)
    assert view.concurrency == float(kv_cache.max_batch(dep, 2000))
    with pytest.raises(DoesNotFitError, match="at most"):
        workload(dep, 1000, 1000, view.concurrency + 1)


def test_calibration_reproduces_the_measurement() -> None:
    dep = Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
    floor = workload(dep, 1000, 1000, 128)
    fitted, efficiency = calibrate(floor, 0.3 * floor.output_tokens_per_s_per_chip)
    assert fitted.output_tokens_per_s_per_chip == pytest.approx(
        0.3 * floor.output_tokens_per_s_per_chip, rel=1e-9
    )
    assert 0.25 < efficiency < 0.35  # near measured/floor where communication is small
    assert fitted.deployment.flops_efficiency == fitted.deployment.bandwidth_efficiency
    with pytest.raises(ValueError, match="beats the floor"):
        calibrate(floor, 2 * floor.output_tokens_per_s_per_chip)


def test_calibration_meets_a_rate_that_communication_bends() -> None:
    """DeepSeek-V3 over 64 H100 in EP: the all-to-all does not scale with the efficiency, so
    the rate is not proportional to it; the fit still meets the measurement, in a few
    workloads rather than the 60 a bisection took."""
    from llmmath.beyond import layout_search

    dep = Deployment("DeepSeek-V3", "H100", 64, layout=Layout(ep=64), weight_dtype="fp8",
                     compute_dtype="fp8", expert_dispatch="node_limited")  # fmt: skip
    floor = workload(dep, 2000, 200, 512)
    calls = []
    real = layout_search.workload

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout_search, "workload", counted)
        fitted, efficiency = calibrate(floor, 0.25 * floor.measured_rate)
    assert fitted.measured_rate == pytest.approx(0.25 * floor.measured_rate, rel=1e-9)
    assert efficiency < 0.25  # the network's time does not shrink: the chips must slow more
    assert len(calls) <= 12


def test_the_efficiency_fit_finds_where_a_jumping_rate_crosses_the_target() -> None:
    """A rate that jumps past the target (a prefill pass that takes one more request): the
    fit returns the least efficiency that serves it, the jump's."""
    from types import SimpleNamespace

    from llmmath.beyond.layout_search import _efficiency_for_rate

    def at(e: float) -> Any:
        return SimpleNamespace(measured_rate=1000 * e + (500 if e >= 0.3 else 0))

    view, efficiency = _efficiency_for_rate(at, 700.0)
    assert efficiency == pytest.approx(0.3, rel=1e-9) and view.measured_rate >= 700.0
    view, efficiency = _efficiency_for_rate(at, 900.0)  # past the jump: on the line
    assert efficiency == pytest.approx(0.4, rel=1e-9)
    view, efficiency = _efficiency_for_rate(at, 1e-3)  # below the least efficiency's rate
    assert efficiency == pytest.approx(1e-4, rel=1e-9)


def test_a_rate_finds_its_concurrency_by_littles_law() -> None:
    dep = Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
    view = concurrency_for_rate(dep, 2.0, 1000, 500)
    assert view.requests_per_s == pytest.approx(2.0, rel=1e-6)
    # C sequences decoding, each for O tokens of TPOT: C = R O TPOT
    assert view.concurrency == pytest.approx(2.0 * 500 * view.tpot_s, rel=1e-6)
    most = workload(dep, 1000, 500)
    with pytest.raises(DoesNotFitError, match="requests/s needs more"):
        concurrency_for_rate(dep, 2 * most.requests_per_s, 1000, 500)

"""llmmath.layout_search: the cheapest layout and batch that meet a time-per-token target."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmmath import batching, serving
from llmmath.deployment import Deployment
from llmmath.layout_search import (
    best_layouts,
    divisors,
    largest_batch_within,
    serving_layouts,
)
from llmmath.placement import Layout


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
    most = float(batching.max_batch(dep, 4096))
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
        assert candidate.batch <= float(batching.max_batch(dep, 4096))
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

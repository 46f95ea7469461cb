"""Chunked prefill under a token budget a step (issue 34, the workload view):
``serving_systems.chunked_prefill`` against the workload it cuts up, its properties over the
budget, and the engines' default with its source."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath.beyond.layout_search import workload
from llmmath.beyond.serving_systems import ChunkedPrefill, chunked_prefill, default_prefill_chunk
from llmmath.core import data
from llmmath.core.deployment import Deployment

#: Llama-3-8B on one H100: 8 sequences decoding, 7,000-token prompts, 500-token outputs.
VIEW = workload(Deployment("Llama-3-8B", "H100"), 7000, 500, 8)


def test_the_default_is_the_engines_with_its_source() -> None:
    spec = data.table("systems")["chunked_prefill"]
    assert default_prefill_chunk() == 8192.0
    assert "max_num_batched_tokens" in spec["source"] and "chunked_prefill_size" in spec["source"]
    assert spec["source_date"]


def test_a_budget_cuts_the_prompt_into_steps_beside_the_decodes() -> None:
    """2,048 tokens a step beside 8 decodes leave 2,040 for the prompt: 7,000 tokens take
    ceil(7000 / 2040) = 4 steps; 8,192 leave 8,184, one step."""
    small, large = chunked_prefill(VIEW, 2048), chunked_prefill(VIEW, 8192)
    assert (small.prompt_tokens_per_step, small.steps_to_first_token) == (2040.0, 4.0)
    assert (large.prompt_tokens_per_step, large.steps_to_first_token) == (8184.0, 1.0)
    # the stream needs C I / O = 8 x 7000 / 500 = 112 prompt tokens a step
    assert small.needed_prompt_tokens_per_step == pytest.approx(112.0, rel=1e-12)
    assert small.keeps_up and large.keeps_up


def test_the_prompt_compute_is_the_same_however_it_is_cut() -> None:
    """TTFT = steps x the decode step + the prompt's compute, and the compute part is the
    workload's own prefill of one request whatever the budget; the mean step, so TPOT, is the
    workload's TPOT (computed there along another path)."""
    for budget in (100, 1000, 2048, 8192, 16384):
        chunks = chunked_prefill(VIEW, budget)
        compute = chunks.ttft_s - chunks.steps_to_first_token * VIEW.decode_step_s
        assert compute == pytest.approx(VIEW.prefill_s_per_request, rel=1e-12)
        assert chunks.tpot_s == pytest.approx(VIEW.tpot_s, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(9, 20_000), st.integers(1, 20_000))
def test_a_larger_budget_trades_the_longest_gap_for_the_first_token(budget: int, more: int) -> None:
    a, b = chunked_prefill(VIEW, budget), chunked_prefill(VIEW, budget + more)
    assert b.steps_to_first_token <= a.steps_to_first_token
    assert b.ttft_s <= a.ttft_s * (1 + 1e-12)
    assert b.longest_step_s > a.longest_step_s
    assert a.longest_step_s > VIEW.decode_step_s  # a chunk always costs something


def test_the_budget_keeps_up_exactly_at_what_the_stream_needs() -> None:
    """C + C I / O = 8 + 112 = 120 tokens a step carry the stream; 119 do not."""
    assert chunked_prefill(VIEW, 120).keeps_up
    assert not chunked_prefill(VIEW, 119).keeps_up
    assert isinstance(chunked_prefill(VIEW, 119), ChunkedPrefill)


def test_prefix_cache_hits_are_not_chunked() -> None:
    """Half the prompt from the cache: 3,500 tokens computed, so 2 steps of 2,040."""
    view = workload(Deployment("Llama-3-8B", "H100"), 7000, 500, 8, cache_hit_fraction=0.5)
    chunks = chunked_prefill(view, 2048)
    assert chunks.steps_to_first_token == math.ceil(3500 / 2040)
    assert chunks.needed_prompt_tokens_per_step == pytest.approx(8 * 3500 / 500, rel=1e-12)


def test_bad_budgets_fail_naming_the_parameter() -> None:
    with pytest.raises(ValueError, match="prefill_chunk must exceed the 8 sequences"):
        chunked_prefill(VIEW, 8)
    with pytest.raises(ValueError, match="prefill_chunk"):
        chunked_prefill(VIEW, 1.5)
    split = workload(Deployment("Llama-3-8B", "H100"), 7000, 500, 8, disaggregated=True)
    with pytest.raises(ValueError, match="colocated"):
        chunked_prefill(split, 8192)

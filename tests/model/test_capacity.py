"""One count of what fits (#42): ``capacity.max_batch`` is exactly the largest batch
``serving.decode_step`` accepts, at every preset and context, sliding-window (Gemma 4), MLA
(DeepSeek-V3) and MoE models included, with and without a layout."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llmmath import kv_cache
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.models import ModelConfig, get_model, list_models
from llmmath.core.placement import DoesNotFitError, Layout


def _smallest_deployment(model: str, layout: str) -> Deployment:
    """The fewest H100s (a power of two) that hold ``model``'s bf16 weights: spread evenly,
    under TP alone, or as two pipeline stages of TP (the KV held ``pp`` times over)."""
    n = 1
    while n <= 1024:
        placed = {"tp": Layout(tp=n), "pp": Layout(tp=max(n // 2, 1), pp=2)}.get(layout)
        try:
            if placed is not None:
                placed.validate(model, n)
            return Deployment(model, "H100", n, layout=placed)
        except (DoesNotFitError, ValueError):
            n *= 2
    raise AssertionError(f"{model} fits no {layout} layout of up to 1,024 H100")


#: Every preset in every layout it allows (two pipeline stages need an even layer count).
LAYOUTS = [
    (name, layout)
    for name in list_models()
    for layout in ("", "tp", "pp")
    if layout != "pp" or get_model(name).n_layers % 2 == 0
]


def _accepts(dep: Deployment, batch: float, context: float) -> bool:
    try:
        serving.decode_step(dep, batch, context)
    except DoesNotFitError:
        return False
    return True


def _is_the_largest_accepted(dep: Deployment, context: float) -> None:
    most = float(capacity.max_batch(dep, context))
    assert most == int(most) and most >= 0
    if most >= 1:
        assert _accepts(dep, most, context), (dep.label, context, most)
        assert bool(serving.decode_step(dep, most, context).fits)
    assert not _accepts(dep, most + 1, context), (dep.label, context, most)
    assert kv_cache.max_batch(dep, context) == most  # the chapter's address, the same count


def _contexts(model: ModelConfig) -> list[float]:
    """Around every place the count could bend: the window, powers of two, the limit."""
    top = model.max_context
    marks = [1, 2, 1000, 2048, 8192, 32768, 131072, top - 1, top]
    if model.sliding_window:
        w = model.sliding_window
        marks += [w - 1, w, w + 1, 2 * w]
    return sorted({float(t) for t in marks if 1 <= t <= top})


@pytest.mark.parametrize(("name", "layout"), LAYOUTS)
def test_max_batch_is_the_largest_batch_a_step_accepts_at_every_preset(
    name: str, layout: str
) -> None:
    dep = _smallest_deployment(name, layout=layout)
    for context in _contexts(dep.model):
        _is_the_largest_accepted(dep, context)


def test_gemma_4_moe_on_one_h100_at_32k_fits_33_by_one_count() -> None:
    # The case: fit said 33, best picked 4 (it counted the windowed layers in full).
    dep = Deployment("Gemma-4-26B-A4B", "H100", 1)
    assert capacity.max_batch(dep, 32768) == 33
    _is_the_largest_accepted(dep, 32768)


@st.composite
def deployments(draw: st.DrawFn) -> Deployment:
    """A preset (or a preset made sliding-window) on some chips, in some KV format, with
    some memory held back: the count must hold for all of them."""
    model = get_model(draw(st.sampled_from(list_models())))
    plain = not (model.sliding_window or model.mla_kv_lora_rank or model.n_state_layers)
    if draw(st.booleans()) and plain:  # a window is not modelled with MLA or state layers
        window = draw(st.integers(1, model.max_context))
        every = draw(st.integers(0, 7))
        model = dataclasses.replace(
            model, name=f"{model.name} (window {window})", sliding_window=window,
            local_per_global=every,
        )  # fmt: skip
    chip = draw(st.sampled_from(["H100", "H200", "B200", "TPU-v5e"]))
    n = 2 ** draw(st.integers(0, 7))
    kv = draw(st.sampled_from(["bf16", "fp8", "fp32"]))
    utilization = draw(st.floats(0.5, 1.0))
    try:
        return Deployment(model, chip, n, kv_dtype=kv, hbm_utilization=utilization)
    except DoesNotFitError:
        assume(False)
        raise


@settings(max_examples=150, deadline=None)
@given(deployments(), st.floats(0.0, 1.0))
def test_max_batch_is_the_largest_batch_a_step_accepts(dep: Deployment, where: float) -> None:
    context = float(max(1, round(where * dep.model.max_context)))
    _is_the_largest_accepted(dep, context)


def test_max_batch_is_infinite_at_no_context_and_zero_where_none_fits() -> None:
    # 2 x 71 GB usable hold the 141 GB of weights and under one 8,192-token cache (2.7 GB)
    dep = Deployment("Llama-3-70B", "H100", 2, reserve_bytes_per_chip=9e9)
    assert capacity.max_batch(dep, 0) == np.inf
    assert capacity.max_batch(dep, 8192) == 0
    assert not _accepts(dep, 1, 8192)

"""llmmath.core.serving: one decode step and one prefill for every chapter, with a named
overlap rule."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import batching, parallelism
from llmmath.core import capacity, models, serving
from llmmath.core.deployment import Deployment
from llmmath.core.placement import DoesNotFitError, Layout

LLAMA = "Llama-3-70B"
STEP_FIELDS = (
    "weight_read_s",
    "kv_read_s",
    "matmul_compute_s",
    "attention_compute_s",
    "tp_s",
    "ep_s",
    "pp_s",
    "flops",
    "bytes_read",
    "hbm_needed_bytes",
)


def _same_step(a: serving.DecodeStep, b: serving.DecodeStep) -> None:
    for name in STEP_FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.time_s, b.time_s)


@pytest.mark.parametrize("model", ["Llama-3-8B", "Mixtral-8x7B"])
@pytest.mark.parametrize("overlap", serving.OVERLAP_RULES)
def test_one_chip_and_the_tp1_layout_are_the_same_step(model: str, overlap: str) -> None:
    chip = "H200" if model == "Mixtral-8x7B" else "H100"
    alone = Deployment(model, chip, 1)
    laid_out = Deployment(model, chip, 1, layout=Layout(tp=1, ep=1))
    B, T = np.array([1.0, 16.0, 256.0]), np.array([[0.0], [1024.0]])
    _same_step(
        serving.decode_step(alone, B, T, overlap=overlap, allow_overflow=True),
        serving.decode_step(laid_out, B, T, overlap=overlap, allow_overflow=True),
    )
    a, b = serving.prefill(alone, 512, 2, overlap=overlap), serving.prefill(laid_out, 512, 2)
    assert float(a.time_s) == float(b.time_s)


def test_the_three_chapters_call_the_same_step() -> None:
    # Batching (no layout), parallelism (TP8) and the serving core agree on the floor of
    # Llama-3-70B on 8 H100 at batch 64, context 2,048: TP8 splits the 8 KV heads evenly and
    # perfect overlap hides its all-reduces, so only the named serial estimate differs.
    plain = batching.decode_step(batching.Deployment(LLAMA, "H100", 8), 64, 2048)
    tp8 = parallelism.layout_decode_step(LLAMA, Layout(tp=8), "H100", 64, 2048)
    assert float(tp8.floor_s) == pytest.approx(float(plain.floor_s), rel=1e-12)
    assert float(plain.floor_s) * 1e3 == pytest.approx(6.79, abs=0.005)
    # The serial estimate adds the 160 all-reduces, each NCCL's 6.6 us base and 14 ring steps
    # of 0.6 us, plus bytes.
    assert float(tp8.serial_s) * 1e3 == pytest.approx(9.84, abs=0.01)
    assert float(plain.serial_s) == pytest.approx(float(plain.floor_s), rel=1e-12)


def test_tp_decode_at_batch_one_pays_the_all_reduce_latency() -> None:
    # 80 layers x 2 all-reduces of one token's activations: ~2.4 ms of latency in NCCL's cost
    # model (6.6 us + 14 x 0.6 us each), where a bandwidth-only model charges ~10 us.
    step = parallelism.layout_decode_step(LLAMA, Layout(tp=8), "H100", 1, 2048)
    assert float(step.tp_s) * 1e3 == pytest.approx(2.41, abs=0.01)
    bandwidth_only = 160 * 2 * 8192 * 2 * 7 / 8 / 450e9
    assert float(step.tp_s) > 50 * bandwidth_only


def test_prefill_pays_tensor_parallel_communication() -> None:
    plain = serving.prefill(Deployment(LLAMA, "H100", 8), 2048)
    tp8 = serving.prefill(Deployment(LLAMA, "H100", 8, layout=Layout(tp=8)), 2048)
    assert float(plain.communication_s) == 0.0
    # 160 all-reduces of 2,048 tokens x 8,192 bf16 activations (32 MiB) over NVLink.
    one = 6.6e-6 + 14 * 0.6e-6 + 2 * 2048 * 8192 * 2 * 7 / 8 / 450e9
    assert float(tp8.communication_s) == pytest.approx(160 * one, rel=1e-9)
    assert float(tp8.time_s) == pytest.approx(float(plain.time_s), rel=1e-12)  # hidden
    serial = serving.prefill(
        Deployment(LLAMA, "H100", 8, layout=Layout(tp=8)), 2048, overlap="none"
    )
    assert float(serial.time_s) == pytest.approx(float(plain.time_s) + 160 * one, rel=1e-9)


LAYOUTS = [Layout(tp=8), Layout(tp=4, pp=2), Layout(pp=8), Layout(tp=2, dp=4), Layout(tp=8, dp=2)]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(LAYOUTS),
    st.floats(1.0, 4096.0),
    st.floats(0.0, 8192.0),
    st.sampled_from(["H100", "B200", "TPU-v5p"]),
)
def test_the_floor_is_below_every_estimate(
    layout: Layout, batch: float, context: float, chip: str
) -> None:
    dep = Deployment(LLAMA, chip, layout.n_gpus, layout=layout)
    step = serving.decode_step(dep, batch, context, allow_overflow=True)
    floor, serial = float(step.floor_s), float(step.serial_s)
    assert floor <= serial * (1 + 1e-12)
    stage = max(float(step.compute_s), float(step.memory_s), float(step.communication_s))
    assert floor == pytest.approx(layout.pp * stage + (layout.pp - 1) * float(step.pp_s))
    assert serial <= layout.pp * float(step.compute_s + step.memory_s + step.communication_s) + (
        layout.pp - 1
    ) * float(step.pp_s) * (1 + 1e-12)
    fill = serving.prefill(dep, max(context, 1.0), allow_overflow=True)
    serial_fill = serving.prefill(dep, max(context, 1.0), overlap="none", allow_overflow=True)
    assert float(fill.time_s) <= float(serial_fill.time_s) * (1 + 1e-12)


def test_throughput_counts_the_batch_per_stage_step() -> None:
    # PP8 finishes one microbatch per stage step; a token waits for all eight stages.
    step = parallelism.layout_decode_step(LLAMA, Layout(pp=8), "H100", 32, 8192)
    assert float(step.tokens_per_s) == pytest.approx(32 / float(step.stage_s))
    assert float(step.time_s) == pytest.approx(8 * float(step.stage_s) + 7 * float(step.pp_s))


def test_mla_decode_is_counted_absorbed() -> None:
    # DeepSeek-V3 (config.json: 128 heads, kv_lora_rank 512, rope 64, 61 layers) at 5,000
    # tokens: absorbed decode scores the 512 + 64 latent and sums 512 per head.
    ds = models.get_model("DeepSeek-V3")
    absorbed = 2 * 128 * (512 + 64 + 512) * 5000 * 61
    per_head = 2 * 128 * (128 + 64 + 128) * 5000 * 61
    assert ds.attention_flops_per_token(5000, decode=True) == pytest.approx(absorbed, rel=1e-12)
    assert absorbed / 1e9 == pytest.approx(84.95, abs=0.01)
    assert ds.attention_flops_per_token(5000) == pytest.approx(per_head, rel=1e-12)
    assert absorbed / per_head == pytest.approx(3.4, abs=0.01)
    dep = Deployment("DeepSeek-V3", "H200", 8, weight_dtype="fp8", compute_dtype="fp8")
    step = serving.decode_step(dep, 1, 5000)
    assert float(step.flops) == pytest.approx(2 * ds.matmul_params_per_token + absorbed)
    # Other attention is the same in both phases.
    llama = models.get_model(LLAMA)
    assert llama.attention_flops_per_token(4096, decode=True) == llama.attention_flops_per_token(
        4096
    )


def test_the_price_defaults_once_to_the_example_price() -> None:
    default = Deployment(LLAMA, "H100", 8)
    own = Deployment(LLAMA, "H100", 8, usd_per_chip_hour=3.0)
    assert default.chip_hour_usd == batching.example_price("H100").usd_per_chip_hour
    a = serving.decode_step(default, 64, 2048).cost_per_million_tokens_usd()
    b = serving.decode_step(own, 64, 2048).cost_per_million_tokens_usd()
    assert float(b) == pytest.approx(float(a) * 3.0 / default.chip_hour_usd)
    with pytest.raises(ValueError, match="no example price for chip 'A100-40GB'"):
        Deployment("Llama-3-8B", "A100-40GB", 1).chip_hour_usd  # noqa: B018


def test_one_error_class_for_what_does_not_fit() -> None:
    assert serving.DoesNotFitError is batching.DoesNotFitError is parallelism.DoesNotFitError
    with pytest.raises(DoesNotFitError) as info:
        Deployment(LLAMA, "H100", 1)
    assert info.value.missing_bytes == pytest.approx(141.1e9 - 80e9, rel=1e-3)
    with pytest.raises(DoesNotFitError, match="per chip on 8 x H100 \\(PP8 DP1\\)"):
        Deployment("Llama-3.1-405B", "H100", 8, layout=Layout(pp=8, embedding_as_layers=True))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: serving.decode_step(Deployment(LLAMA, "H100", 8), 1, 0, overlap="some"),
            ValueError,
            "unknown overlap 'some'; known: none, perfect",
        ),
        (
            lambda: serving.decode_step(Deployment(LLAMA, "H100", 8), 1, 0, allow_overflow="no"),
            TypeError,
            "allow_overflow must be True or False",
        ),
        (lambda: serving.decode_step(None, 1, 0), TypeError, "deployment must be"),  # type: ignore[arg-type]
        (
            lambda: Deployment(LLAMA, "H100", 16, layout=Layout(tp=8)),
            ValueError,
            "= 8 GPUs but the deployment has n_chips=16",
        ),
        (
            lambda: Deployment(LLAMA, "H100", 8, layout=Layout(tp=8, zero_stage=3)),
            ValueError,
            "zero_stage=3 shards training state",
        ),
        (lambda: Deployment(LLAMA, "H100", 8, layout="tp8"), TypeError, "layout must be"),  # type: ignore[arg-type]
        (
            lambda: Deployment(LLAMA, "H100", 8, usd_per_chip_hour=-2.0),
            ValueError,
            "usd_per_chip_hour must be finite and > 0",
        ),
    ],
)
def test_bad_input_names_the_parameter(call, error: type, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=message):
        call()


def test_kv_heads_replicated_past_tp_count_against_capacity() -> None:
    # Llama-3-70B has 8 KV heads: at TP16 (two nodes) every head lives on two GPUs.
    wide = Deployment(LLAMA, "H100", 16, layout=Layout(tp=16))
    assert wide.kv_copies == 2.0
    narrow = Deployment(LLAMA, "H100", 16)
    room_wide = wide.kv_budget_bytes / (
        2048 * wide.model.kv_bytes_per_token(wide.kv_dtype) * wide.kv_copies
    )
    with pytest.raises(DoesNotFitError, match="at most"):
        serving.decode_step(wide, np.floor(room_wide) + 1, 2048)
    serving.decode_step(narrow, np.floor(room_wide) + 1, 2048)  # fits without replication
    assert dataclasses.replace(narrow, n_chips=16).kv_copies == 1.0


@pytest.mark.parametrize(
    "layout", [Layout(tp=8), Layout(pp=8), Layout(tp=4, pp=2), Layout(tp=2, dp=4)]
)
def test_deployment_capacity_agrees_with_the_placement_count(layout: Layout) -> None:
    # A pipeline keeps pp batches in flight, so the deployment's capacity check, max_batch and
    # placement.max_decode_batch (per attention group) must agree on how many sequences fit.
    dep = Deployment(LLAMA, "H100", 8, layout=layout)
    most = float(capacity.max_batch(dep, 8192))
    per_group = float(parallelism.max_decode_batch(LLAMA, layout, "H100", 8192))
    assert most == pytest.approx(per_group * layout.dp, abs=layout.dp)
    serving.decode_step(dep, most, 8192)
    with pytest.raises(DoesNotFitError, match="at most"):
        serving.decode_step(dep, most + 1, 8192)


def test_max_context_counts_the_pipeline_batches_in_flight() -> None:
    from llmmath import kv_cache

    tp8 = Deployment(LLAMA, "H100", 8, layout=Layout(tp=8))
    pp8 = Deployment(LLAMA, "H100", 8, layout=Layout(pp=8))
    assert pp8.kv_bytes_held_per_token == 8 * tp8.kv_bytes_held_per_token
    ratio = float(kv_cache.max_context(tp8, 1000)) / float(kv_cache.max_context(pp8, 1000))
    assert ratio == pytest.approx(8 * tp8.kv_budget_bytes / pp8.kv_budget_bytes, rel=1e-2)


def test_the_roofline_chapters_matmul_step_is_the_serving_step_on_one_chip() -> None:
    # The roofline chapter's worked number: Llama-3-70B on one H100 at batch 1, a what-if
    # (141 GB of weights, 80 GB of HBM). roofline.decode_weight_time, which its explorer
    # draws, is the matmul part of the one decode step.
    from llmmath.core import roofline

    for weights in ("bf16", "int8"):
        alone = Deployment(LLAMA, "H100", 1, weight_dtype=weights, allow_overflow=True)
        for batch in (1.0, 64.0, 512.0):
            step = serving.decode_step(alone, batch, 0, allow_overflow=True)
            part = roofline.decode_weight_time(LLAMA, batch, "H100", weight_dtype=weights)
            assert float(step.weight_read_s) == float(part.memory_s)
            assert float(step.matmul_compute_s) == float(part.compute_s)
            assert bool(step.fits) == (weights == "int8")  # 70.6 GB of int8 fit in 80 GB
    with pytest.raises(DoesNotFitError):
        Deployment(LLAMA, "H100", 1)

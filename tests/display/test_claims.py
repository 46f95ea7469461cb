"""Numbers the book's prose states by hand, pinned to the package that computes them."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from lesson_support import lesson

from llmmath import batching, get_chip, kv_cache, pricing
from llmmath.beyond import serving_modes
from llmmath.core import capacity

BOOK = Path(__file__).resolve().parents[2] / "book"


def _intro() -> str:
    return " ".join((BOOK / "intro.md").read_text().split())


def test_front_page_batching_gain_is_the_lessons_ratio() -> None:
    # The batching lesson's worked case: Llama-3-70B on 8 H100 at 2,048 tokens of context,
    # batch 1 against the cheapest batch (past T_c: the HBM full). The gain is bounded by
    # about C / W: a token costs at least its FLOPs, and a lone one about its weight read.
    llama = batching.Deployment("Llama-3-70B", "H100", 8)
    one = batching.decode_step(llama, 1, 2048).cost_per_million_tokens_usd()
    cheapest = serving_modes.slow_mode(llama, 2048, 1.0).floor_cost_per_million_usd
    gain = float(one / cheapest)
    c_over_w = get_chip("H100").critical_intensity("bf16")
    text = _intro()
    assert f"({round(gain)}× for Llama-3-70B on eight H100s at 2,048 tokens of context)" in text
    assert f"$C/W$ ({round(c_over_w)} on an H100)" in text
    assert gain < c_over_w
    assert "thousands of times cheaper" not in text


def test_front_page_floor_example_is_the_weight_floor() -> None:
    floor_ms = capacity.weight_floor_s(batching.Deployment("Llama-3-70B", "H100", 8)) * 1e3
    stated = re.findall(r'says "([0-9.]+) ms"', _intro())
    assert stated == [f"{floor_ms:.2f}"]


def test_prompt_cache_prices_have_one_source_and_label() -> None:
    from llmmath import api_prices

    for name in kv_cache.list_prompt_caches():
        cache = kv_cache.get_prompt_cache(name)
        if cache.model not in api_prices.list_price_sheets():
            continue
        sheet = api_prices.get_price_sheet(cache.model)
        assert cache.input_usd_per_mtok == sheet.input_usd_per_million, name
        if sheet.cached_input_usd_per_million:  # 0 where the sheet has no cached price
            assert cache.read_usd_per_mtok == sheet.cached_input_usd_per_million, name
    deepseek = kv_cache.get_prompt_cache("deepseek")
    assert deepseek.model == "DeepSeek-R1"


# ---- the KV-cache chapter: claims derived from its own namespace ------------------------------
def _kv() -> SimpleNamespace:
    return lesson("kv_cache.md")


def test_kv_long_context_is_past_the_critical_context() -> None:
    # "Its short-context critical batch, 295 (...), is far out of reach, and at these contexts
    # no batch would turn the step compute-bound anyway"
    ns = _kv()
    assert capacity.step_critical_batch(ns.big) > capacity.max_batch(ns.big, 8192)
    for context in (8192, 131072):
        assert capacity.step_critical_batch(ns.big, context) == math.inf
        room = capacity.max_batch(ns.big, context)
        assert not batching.decode_step(ns.big, room, context).compute_bound


def test_kv_capacity_caption_every_batch_past_t_c_is_bandwidth_bound() -> None:
    # "at none past the critical context T_c (...): there every batch that fits is
    # bandwidth-bound."
    ns = _kv()
    for dep in (ns.llama, ns.big, ns.deepseek):
        t_c = capacity.critical_context(dep)
        beyond = 2 * t_c
        room = capacity.max_batch(dep, beyond)
        assert room >= 1 and not batching.decode_step(dep, room, beyond).compute_bound


def test_kv_break_evens_are_ranges_that_flip_to_hours() -> None:
    ns = _kv()
    # "a break-even hold time is a difference of two floors ... it moves with the prefill's MFU"
    for name in ns.pc.tiers:
        assert ns.even_low_s[name] > ns.even_mid_s[name] > ns.even_floor_s[name] > 0, name
    # "against a real prefill, flash and disk keep a prefix for hours"
    assert ns.nvme_even_mid_s > 3 * 3600 and ns.disk_even_mid_s > 3 * 3600
    # "the disk, whose rent is the lowest, for 9.2": longer than NVMe at 50% MFU, not at 100%
    assert ns.disk_even_mid_s > ns.nvme_even_mid_s
    assert ns.disk_even_floor_s < ns.nvme_even_floor_s
    # "Only a prefill at the floor makes recomputing win within about an hour or two."
    for t in (ns.nvme_even_floor_s, ns.disk_even_floor_s):
        assert 3600 <= t <= 2 * 3600
    # "The disk's range is the widest"
    spans = {n: ns.even_low_s[n] / ns.even_floor_s[n] for n in ns.pc.tiers}
    assert max(spans, key=spans.get) == "networked_disk"  # type: ignore[arg-type]
    # "... the cheapest place is host DRAM at either end of the range."
    assert ns.pfx_best == ns.pfx_best_slow == "host DRAM"


def test_kv_tier_map_disk_appears_only_below_the_floor() -> None:
    # "A slower prefill moves that line right: at 50% MFU the networked disk takes over from
    # NVMe before it." (and at the floor it never does)
    ns = _kv()
    holds = np.geomspace(1.0, 1e7, 400)[np.newaxis, :]
    reuses = np.array([1.0, 10.0, 100.0])[:, np.newaxis]

    def winners(mfu: float) -> set[str]:
        pc = kv_cache.prefix_cache(ns.llama, ns.S, holds, reuses, prefill_efficiency=mfu)
        return {pc.options[i] for i in np.unique(pc.cheapest)}

    assert "networked_disk" not in winners(1.0)
    assert "networked_disk" in winners(ns.MFU_MID)


def test_kv_deepseek_hours_to_days_agrees_only_with_a_real_prefill() -> None:
    # "That agrees with the break-evens above against a real prefill (9.2-13.3 hours reused
    # once, and a break-even grows in proportion to the reuses), not with the floor's 1.1 hours."
    ns = _kv()
    assert ns.disk_even_mid_s > 6 * 3600 and ns.disk_even_floor_s < 2 * 3600
    ten = kv_cache.break_even_hold_s(ns.llama, ns.S, "networked_disk", 10, prefill_efficiency=0.5)
    assert float(ten) == pytest.approx(10 * ns.disk_even_mid_s) and float(ten) > 86400


def test_kv_packing_batches_against_the_compute_bound_batch() -> None:
    ns = _kv()
    # "fits 185 sequences, below B*(T) ≈ 445, the batch at which a step over their mean
    # 498 cached tokens turns compute-bound"
    pack, T = ns.pack, ns.pack.mean_cached_tokens
    assert pack.reserved_batch < ns.pack_critical_at < pack.paged_batch
    assert not batching.decode_step(ns.llama, pack.reserved_batch, T).compute_bound
    # "the server can run a compute-bound batch" (and with 256-token pages: "Still far past")
    assert batching.decode_step(ns.llama, math.ceil(ns.pack_critical_at), T).compute_bound
    assert ns.big_pages.paged_batch > 4 * ns.pack_critical_at
    # "For a batch of the 185 sequences that fit ... only 17% of its slots are busy."
    assert pack.static_batch == pack.reserved_batch == float(ns.mb_70b_8k)
    assert ns.pack_busy == "17%"


def test_kv_number_formats_stop_at_the_wall_bandwidth_bound() -> None:
    # "all three stop at the wall, bandwidth-bound at every batch that fits"
    ns = _kv()
    for dep, room in zip(ns.fmt_deps, ns.fmt.max_batch, strict=True):
        assert room < ns.fmt.critical_batch[0]
        assert capacity.critical_context(dep) < ns.fmt_T
        assert not batching.decode_step(dep, room, ns.fmt_T).compute_bound


# ---- the pricing chapter ----------------------------------------------------------------------
def test_pricing_ratio_formula_is_the_floor() -> None:
    # "output / input ≈ max(1, B*/B + T kv C / (2 P W))": the KV term inside the max, as the
    # floor adds it to the weight read (the package's decode_batch_from_ratio inverts it).
    ns = lesson("overtraining_pricing.md")
    dep = ns.llama8
    chip = dep.chip
    C, W = chip.peak("bf16"), chip.hbm_bandwidth_bytes_per_s
    P = dep.model.total_params
    for batch, context in ((64, 2048), (256, 2048), (743, 2048), (128, 512)):
        kv_term = context * dep.model.kv_bytes_per_token(dep.kv_dtype) * C / (2 * P * W)
        predicted = max(1.0, capacity.step_critical_batch(dep) / batch + kv_term)
        cost = pricing.serving_cost(dep, batch, context, usd_per_chip_hour=2.0)
        assert float(cost.output_input_ratio) == pytest.approx(predicted, rel=0.1), batch


def test_pricing_ratio_stays_above_one_past_t_c() -> None:
    ns = lesson("overtraining_pricing.md")
    dep = ns.llama8
    # "not to 1: 2,048 tokens is past T_c ≈ 1,477, so the KV reads keep decode
    # bandwidth-bound at every batch; even the 743 sequences that fit pay 1.8×."
    assert capacity.critical_context(dep) < 2048
    assert not batching.decode_step(dep, ns.full_2k, 2048).compute_bound
    assert float(ns.cost_full.output_input_ratio) > 1.5
    # Prompt 3: "at 2,048 tokens, why does the ratio keep falling past it ... switch the
    # context to 512: where does the ratio stop falling now"
    past = [pricing.serving_cost(dep, b, 2048).output_input_ratio for b in (296, 400, 743)]
    assert past[0] > past[1] > past[2] > 1
    at_512 = math.ceil(capacity.step_critical_batch(dep, 512))
    assert at_512 < capacity.max_batch(dep, 512)
    flat = [float(pricing.serving_cost(dep, b, 512).output_input_ratio) for b in (at_512, 2000)]
    assert flat[0] == pytest.approx(flat[1], rel=1e-9) and flat[0] < 1.01


def test_pricing_long_context_runs_the_batch_that_fits() -> None:
    # "each context at the largest batch that fits: past T_c ≈ 1,477 tokens no batch is
    # compute-bound, so that batch is the cheapest. At 8k tokens 185 sequences fit"
    ns = lesson("overtraining_pricing.md")
    dep = ns.what_if
    assert capacity.critical_context(dep) < 8192
    assert ns.long_short_batch == f"{capacity.max_batch(dep, 8192):.0f}"
    costs = [
        float(batching.decode_step(dep, b, 8192).cost_per_million_tokens_usd())
        for b in (64, 128, ns.long_batch)
    ]
    assert costs[0] > costs[1] > costs[2]
    assert not batching.decode_step(dep, ns.long_batch, 8192).compute_bound

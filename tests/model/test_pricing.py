"""llmmath.pricing: serving cost from hardware, dated price sheets, and what they imply.

Expected values are written out from the formulas in the module docstring, with the H100
datasheet numbers of the reference sheet (9.89e14 FLOP/s dense bf16, 3.35e12 B/s)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import api_prices, batching, memory_tiers, pricing
from llmmath.core import capacity
from llmmath.core.deployment import Deployment
from llmmath.core.setting import Setting

SETTINGS = settings(max_examples=30, deadline=None)
H100_BF16 = 9.89e14
H100_BW = 3.35e12
LLAMA = batching.Deployment("Llama-3-70B", "H100", 8)


# ---- the dated price table ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "ratio"),
    [
        # Reference sheet, "API prices" (vendors' tables of 2025-2026), output / input.
        ("Gemini 2.5 Pro", 8.0),
        ("Gemini 3 Pro (preview)", 6.0),
        ("Claude Sonnet 4.5", 5.0),
        ("Claude Opus 4.5", 5.0),
        ("GPT-4o", 4.0),
        ("DeepSeek-R1", 2.19 / 0.55),
        # #43: Google's Gemini 3.1 Pro (2 / 12), DeepSeek's page 2025-09-05 (0.56 / 1.68) and
        # V3.2 (0.28 / 0.42, outside the 3-8x band the others span), as api_prices.toml cites.
        ("Gemini 3.1 Pro (preview)", 6.0),
        ("DeepSeek-V3.1", 3.0),
        ("DeepSeek-V3.2", 1.5),
        # 2026 sheets read on the vendors' pages 2026-12-06: Anthropic's Claude Opus 5.5
        # (4 / 20) and OpenAI's GPT-6.2 Sol model page (2 / 10).
        ("Claude Opus 5.5", 5.0),
        ("GPT-6.2 Sol", 5.0),
    ],
)
def test_output_input_ratios_of_the_dated_table(model: str, ratio: float) -> None:
    assert pricing.get_price_sheet(model).output_input_ratio == pytest.approx(ratio, rel=1e-9)


def test_long_context_tiers() -> None:
    # Reference sheet: above 200k tokens Gemini 3 Pro input doubles and output rises 50%.
    gemini = pricing.get_price_sheet("Gemini 3 Pro (preview)")
    assert gemini.long_context_threshold_tokens == 200_000
    assert gemini.long_input_surcharge == pytest.approx(2.0)
    assert gemini.long_output_surcharge == pytest.approx(1.5)
    assert pricing.get_price_sheet("GPT-4o").long_output_surcharge == 1.0


def test_every_price_is_dated_and_sourced() -> None:
    for name in pricing.list_price_sheets():
        sheet = pricing.get_price_sheet(name)
        assert sheet.source and len(sheet.source_date) >= 7, name
        assert sheet.source_date in sheet.label
        assert 1 < sheet.output_input_ratio < 10, name


def test_cached_prices_are_filled_and_sourced() -> None:
    """#43: every sheet but one lists its cache-hit price, each with where it was read;
    a price read from a third party says so ([secondary]), one not found says so too."""
    missing = []
    for name in pricing.list_price_sheets():
        sheet = pricing.get_price_sheet(name)
        assert sheet.cached_input_source, name
        if not sheet.has_cached_price:
            missing.append(name)
            assert sheet.cached_input_source.startswith("[not found]"), name
            continue
        assert 0 < sheet.cached_input_share < 1, name
        assert sheet.cached_input_source.startswith(("vendor page", "[secondary]")), name
    assert missing == ["Gemini 3 Pro (preview)"]
    # Published cache-hit prices (USD per 1M): DeepSeek's page 2025-09-05, Anthropic's docs.
    assert pricing.get_price_sheet("DeepSeek-V3.1").cached_input_usd_per_million == 0.07
    assert pricing.get_price_sheet("Claude Sonnet 4.5").cached_input_share == pytest.approx(0.1)


def test_the_2026_sheets_price_a_cache_hit_at_a_twentieth() -> None:
    """Anthropic's Opus 5.5 page: 'cache reads at $0.20 per million tokens (0.05x the base
    input price)'; OpenAI's GPT-6.2 Sol page: cached input $0.10 against $2 input."""
    for name in ("Claude Opus 5.5", "GPT-6.2 Sol"):
        sheet = pricing.get_price_sheet(name)
        assert sheet.checked and sheet.cached_input_source.startswith("vendor page"), name
        assert sheet.cached_input_share == pytest.approx(0.05), name


def test_gpt_6_2_sol_long_context_step_at_272k() -> None:
    """OpenAI's page: above 272K input tokens input and cache rates double and output costs
    1.5x for the full request; at 272,000 tokens exactly the short rates apply."""
    sheet = "GPT-6.2 Sol"
    below, above = api_prices.request_price_usd(sheet, [272_000, 272_001], 1000, 0.5)
    assert below == pytest.approx((136_000 * 2.0 + 136_000 * 0.10 + 1000 * 10.0) / 1e6)
    assert above == pytest.approx((136_000.5 * 4.0 + 136_000.5 * 0.20 + 1000 * 15.0) / 1e6)


def test_gemini_3_1_long_context_step() -> None:
    """The lecture's Gemini 3.1 data point: 50% more for output above 200k tokens (input
    doubles), and output several times input: 6x below the threshold, 4.5x above."""
    sheet = "Gemini 3.1 Pro (preview)"
    gemini = pricing.get_price_sheet(sheet)
    assert gemini.long_output_surcharge == pytest.approx(1.5)
    assert gemini.long_input_surcharge == pytest.approx(2.0)
    ratios = api_prices.output_input_price_ratio(sheet, 0.0, [200_000, 200_001])
    assert ratios == pytest.approx([6.0, 4.5])
    # One request of 1,000 output tokens: (S * 2 + 1000 * 12) / 1e6 below, doubled-ish above.
    below, above = api_prices.request_price_usd(sheet, [200_000, 200_001], 1000)
    assert below == pytest.approx((200_000 * 2.0 + 1000 * 12.0) / 1e6, rel=1e-12)
    assert above == pytest.approx((200_001 * 4.0 + 1000 * 18.0) / 1e6, rel=1e-12)
    assert above / below > 1.9  # one token more, nearly twice the bill: a step


def test_cache_hits_lower_the_input_and_raise_the_ratio() -> None:
    # Claude Sonnet 4.5: 3 input, 0.30 cached, 15 output. At 90% hits input is
    # 0.1 * 3 + 0.9 * 0.3 = 0.57, and output costs 15 / 0.57 = 26.3 input tokens.
    sheet = "Claude Sonnet 4.5"
    blended = api_prices.blended_input_usd_per_million(sheet, [0.0, 0.5, 0.9])
    assert blended == pytest.approx([3.0, 1.65, 0.57], rel=1e-12)
    assert api_prices.output_input_price_ratio(sheet, 0.9) == pytest.approx(15 / 0.57)
    # A sheet with no cached price charges hits in full: the ratio does not move.
    assert api_prices.output_input_price_ratio("Gemini 3 Pro (preview)", 0.9) == pytest.approx(6)
    price = api_prices.request_price_usd(sheet, 64_000, 8_000, 0.9)
    assert price == pytest.approx((64_000 * 0.57 + 8_000 * 15.0) / 1e6, rel=1e-12)
    with pytest.raises(ValueError, match="cache_hit_fraction"):
        api_prices.blended_input_usd_per_million(sheet, 1.5)


# ---- a workload: the 2023 chat and today's long agentic contexts ---------------------------
AGENTIC = Setting(Deployment(pricing.with_context_limit("Llama-3-70B", 131_072), "H100", 8), 65_536)


def test_long_context_workload_is_kv_bound_and_its_ratio_far_above_chat() -> None:
    chat = pricing.workload_cost(Setting(LLAMA, 2048), utilisation=0.5)
    agentic = pricing.workload_cost(AGENTIC, cache_hit_fraction=0.9, utilisation=0.5)
    # The most sequences that fit: (8 x 80e9 - weights) / (65,536 x 327,680 B), by default.
    assert agentic.batch == float(capacity.max_batch(AGENTIC.deployment, 65_536))
    assert not agentic.compute_bound and agentic.kv_read_share > 0.5
    assert agentic.output_input_ratio > 10 * chat.output_input_ratio
    # Cache hits lower the input the request pays, so output weighs more still.
    assert agentic.blended_output_input_ratio > agentic.output_input_ratio
    blended = 0.1 * agentic.input_usd_per_million + 0.9 * agentic.cached_input_usd_per_million
    assert agentic.blended_input_usd_per_million == pytest.approx(blended, rel=1e-12)


def test_a_cache_hit_costs_the_cheapest_way_to_have_the_kv_back() -> None:
    cost = pricing.workload_cost(AGENTIC, hold_s=300.0)
    prefix = memory_tiers.prefix_cache(AGENTIC.deployment, 65_536, 300.0, 1)
    keep = np.where(prefix.fits & prefix.in_time, prefix.hold_usd + prefix.reload_usd, np.inf)
    assert cost.cached_option == prefix.tiers[int(np.argmin(keep))]
    assert cost.cached_input_usd_per_million == pytest.approx(
        float(np.min(keep)) / 65_536 * 1e6, rel=1e-12
    )
    assert 0 < cost.cached_input_share < 1  # cheaper than a prefill of the same tokens
    # Held for a day, nothing is cheaper than recomputing: the hit costs a prefill.
    day = pricing.workload_cost(AGENTIC, hold_s=86_400.0 * 30)
    assert day.cached_option == "recompute" and day.cached_input_share == pytest.approx(1.0)


def test_workload_cost_refuses_a_serial_setting() -> None:
    with pytest.raises(ValueError, match="overlap 'perfect'"):
        pricing.workload_cost(Setting(LLAMA, 2048, "none"))


def test_unknown_sheet_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="GPT-4o"):
        pricing.get_price_sheet("GPT-5")


# ---- DeepSeek's published day ---------------------------------------------------------------
def test_deepseek_day6_cost_revenue_and_margin() -> None:
    # DeepSeek open-infra-index day 6 (2025-03-01): 226.75 nodes x 8 H800 x $2 x 24 h =
    # $87,072 per day; the day's tokens at R1 list prices $562,027; margin 545%.
    day = pricing.get_fleet_day()
    cost = pricing.fleet_day_cost_usd(day.nodes, day.gpus_per_node, day.usd_per_gpu_hour)
    assert cost == pytest.approx(87_072, abs=0.5)
    assert cost == pytest.approx(day.published_cost_usd, abs=0.5)
    revenue = pricing.fleet_day_revenue_usd(day, pricing.get_price_sheet("DeepSeek-R1"))
    # The published token counts are rounded to 1e9, so 0.1% is as close as they allow.
    assert revenue == pytest.approx(day.published_revenue_usd, rel=1e-3)
    margin = pricing.cost_profit_margin(revenue, cost)
    assert margin == pytest.approx(day.published_cost_profit_margin, abs=0.01)


# ---- forward: cost from hardware ----------------------------------------------------------
def test_output_cost_is_the_decode_step_rent() -> None:
    cost = pricing.serving_cost(LLAMA, 64, 1024, usd_per_chip_hour=2.0)
    step = batching.decode_step(LLAMA, 64, 1024)
    expected = 2.0 * 8 * float(step.time_s) / (3600 * 64) * 1e6
    assert float(cost.output_usd_per_million) == pytest.approx(expected, rel=1e-12)


def test_input_cost_is_compute_bound_prefill() -> None:
    # A 4096-token prompt is a batch of 4096 for the weights: compute-bound, so per token
    # about 2 P_matmul (plus attention) FLOPs at the peak.
    cost = pricing.serving_cost(LLAMA, 64, 4096, usd_per_chip_hour=2.0)
    assert float(cost.prefill_batch) == 1
    fill = batching.prefill(LLAMA, 4096)
    assert bool(fill.compute_bound)
    per_token_s = float(fill.flops) / 4096 / (8 * H100_BF16)
    expected = 2.0 * 8 * per_token_s / 3600 * 1e6
    assert float(cost.input_usd_per_million) == pytest.approx(expected, rel=1e-9)


def test_short_prompts_are_grouped_until_prefill_is_compute_bound() -> None:
    cost = pricing.serving_cost(LLAMA, 8, 100)
    assert float(cost.prefill_batch) == 3  # ceil(295.2 / 100)
    fill = batching.prefill(LLAMA, 100, 3)
    assert float(fill.compute_s) >= float(fill.memory_s)
    alone = pricing.serving_cost(LLAMA, 8, 100, prefill_batch=1)
    assert float(alone.input_usd_per_million) > 2 * float(cost.input_usd_per_million)


def test_utilisation_divides_the_cost() -> None:
    full = pricing.serving_cost(LLAMA, 32, 1024)
    half = pricing.serving_cost(LLAMA, 32, 1024, utilisation=0.5)
    assert float(half.output_usd_per_million) == pytest.approx(
        2 * float(full.output_usd_per_million)
    )
    assert float(half.output_input_ratio) == pytest.approx(float(full.output_input_ratio))


def test_ratio_near_the_critical_batch_over_batch() -> None:
    # Short context: KV reads are small, so output / input ~ B* / B below the critical batch.
    cost = pricing.serving_cost(LLAMA, 32, 128)
    critical = capacity.step_critical_batch(LLAMA)
    assert float(cost.output_input_ratio) == pytest.approx(critical / 32, rel=0.1)


def test_long_context_costs_more_and_shrinks_the_batch() -> None:
    what_if = batching.Deployment(pricing.with_context_limit("Llama-3-70B", 1_000_000), "H100", 8)
    surcharge = pricing.long_context_surcharge(what_if, 128, 8192, 262_144)
    assert float(surcharge.long.batch) < float(surcharge.short.batch) == 128
    assert float(surcharge.output_ratio) > 1.5 and float(surcharge.input_ratio) > 1.5
    assert "what-if" in what_if.model.name


def test_serving_cost_errors() -> None:
    with pytest.raises(ValueError, match="utilisation"):
        pricing.serving_cost(LLAMA, 8, 1024, utilisation=0)
    with pytest.raises(ValueError, match="usd_per_chip_hour"):
        pricing.serving_cost(LLAMA, 8, 1024, usd_per_chip_hour=-1)
    with pytest.raises(batching.DoesNotFitError):
        pricing.serving_cost(LLAMA, 10_000, 8192)
    with pytest.raises(ValueError, match="long_context"):
        pricing.long_context_surcharge(LLAMA, 8, 4096, 1024)


@SETTINGS
@given(st.floats(1, 90), st.floats(1.01, 4.0), st.sampled_from([128.0, 1024.0, 4096.0]))
def test_cost_per_output_token_falls_with_batch(batch: float, more: float, context: float) -> None:
    small = pricing.serving_cost(LLAMA, batch, context)
    large = pricing.serving_cost(LLAMA, batch * more, context)
    assert float(large.output_usd_per_million) < float(small.output_usd_per_million)
    assert float(large.input_usd_per_million) == pytest.approx(float(small.input_usd_per_million))


@SETTINGS
@given(st.floats(1, 400), st.sampled_from([128.0, 2048.0]))
def test_output_never_cheaper_than_input(batch: float, context: float) -> None:
    # Decode does the same FLOPs per token as prefill and reads weights and KV besides.
    cost = pricing.serving_cost(LLAMA, batch, context)
    assert float(cost.output_input_ratio) >= 1.0 - 1e-9


# ---- inverse: what a price sheet implies -------------------------------------------------
def test_active_params_formula() -> None:
    # N = p C mfu / (2 markup price_s): $1/M, H100, $3.6/h (= $0.001/s), 50%, markup 1.
    params = pricing.active_params_from_input_price(1.0, "H100", 3.6, 0.5, 1.0)
    assert params == pytest.approx(1e-6 * H100_BF16 * 0.5 / (2 * 1e-3), rel=1e-12)


def test_deepseek_price_is_consistent_with_37b_active() -> None:
    # DeepSeek-V3/R1 has 37e9 active parameters; at its own $2/h, its published 6.45x
    # markup and half of peak, the $0.55 input price points at ~38e9.
    params = pricing.active_params_from_input_price(0.55, "H100", 2.0, 0.5, 6.45)
    assert params == pytest.approx(37e9, rel=0.1)


def test_reading_gives_wide_ranges_not_a_number() -> None:
    reading = pricing.read_price_sheet("Gemini 2.5 Pro")
    assert reading.active_params.spread > 10
    assert reading.decode_batch_fraction == pytest.approx(1 / 8)
    assert reading.kv_bytes_per_token is not None and reading.kv_bytes_per_token.spread > 10
    assert any("MoE" in text for text in reading.cannot_deduce)
    assert pricing.read_price_sheet("GPT-4o").kv_bytes_per_token is None


def test_range_over_covers_every_corner() -> None:
    r = pricing.range_over(lambda a, b: a / b, a=(1.0, 2.0), b=(4.0, 8.0))
    assert (r.low, r.high) == (0.125, 0.5)
    assert 0.25 in r and 1.0 not in r
    with pytest.raises(ValueError, match="low <= high"):
        pricing.Range(2.0, 1.0)


def test_decode_batch_from_ratio() -> None:
    assert pricing.decode_batch_from_ratio(5.0, 295.0) == pytest.approx(59.0)
    assert pricing.decode_batch_from_ratio(5.0, 295.0, 1.0) == pytest.approx(73.75)
    with pytest.raises(ValueError, match="compute-bound"):
        pricing.decode_batch_from_ratio(1.0, 295.0)


def test_kv_from_surcharge_formula() -> None:
    # $5/M extra over a 250k-token gap, H100, $3.6/h, markup 1: kv = 5e-6 W / (1e-3 2.5e5).
    kv = pricing.kv_bytes_from_surcharge(10.0, 15.0, 2.5e5, "H100", 3.6, 1.0)
    assert kv == pytest.approx(5e-6 * H100_BW / (1e-3 * 2.5e5), rel=1e-12)
    with pytest.raises(ValueError, match="long_output_usd_per_million"):
        pricing.kv_bytes_from_surcharge(10.0, 10.0, 2.5e5, "H100", 3.6, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"markup": 0.5}, "markup"),
        ({"mfu": 1.2}, "mfu"),
        ({"usd_per_chip_hour": 0.0}, "usd_per_chip_hour"),
        ({"input_usd_per_million": -1.0}, "input_usd_per_million"),
    ],
)
def test_inverse_bad_input_names_the_parameter(kwargs: dict[str, float], name: str) -> None:
    args = {"input_usd_per_million": 1.0, "usd_per_chip_hour": 2.0, "mfu": 0.5, "markup": 1.0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        pricing.active_params_from_input_price(chip="H100", **args)


@SETTINGS
@given(st.floats(0.1, 20.0), st.floats(1.0, 10.0), st.floats(1.0, 10.0))
def test_higher_markup_or_rent_means_fewer_implied_params(
    price: float, markup: float, rent: float
) -> None:
    base = pricing.active_params_from_input_price(price, "H100", rent, 0.5, markup)
    assert pricing.active_params_from_input_price(price, "H100", rent, 0.5, markup * 2) < base
    assert pricing.active_params_from_input_price(price, "H100", rent * 2, 0.5, markup) < base
    assert pricing.active_params_from_input_price(price * 2, "H100", rent, 0.5, markup) > base


def test_vectorized() -> None:
    N = pricing.active_params_from_input_price(np.array([1.0, 2.0]), "H100", 2.0, 0.5, 1.0)
    assert isinstance(N, np.ndarray) and N[1] == pytest.approx(2 * N[0])
    cost = pricing.serving_cost(LLAMA, np.array([8.0, 64.0]), 1024)
    assert cost.output_usd_per_million.shape == (2,)


# ---- figures and widgets of the chapter ---------------------------------------------------
def texts(figure: Any) -> list[str]:
    return [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]


def test_chapter_figures_draw_the_model_s_numbers() -> None:
    from llmmath import scaling
    from llmmath.display.plots import overtraining_pricing as pricing_plots
    from llmmath.display.widgets import overtraining_pricing as pricing_widgets

    ratios = pricing_plots.tokens_per_param_vs_demand(2.0).axes[0]
    curve = scaling.tokens_per_param_curve(2.0)
    assert ratios.lines[0].get_ydata() == pytest.approx(curve.tokens_per_param, rel=1e-12)
    assert ratios.lines[1].get_ydata()[0] == pytest.approx(curve.without_inference, rel=1e-12)
    sheets = [pricing.get_price_sheet(n) for n in pricing.list_price_sheets()]
    bars = pricing_plots.price_sheet_ratios().axes[0].patches[: len(sheets)]
    assert [b.get_width() for b in bars] == pytest.approx([s.output_input_ratio for s in sheets])
    # The explorers' figures are drawn at the state asked for.
    overtraining = pricing_widgets.overtraining_declaration()
    best = scaling.inference_aware_optimum(1.9, 1e12)
    shown = " ".join(texts(overtraining.figure(target_loss=1.9, inference_tokens=1e12)))
    assert f"best P {float(best.params) / 1e9:.1f}B" in shown and "loss 1.9" in shown
    serving = texts(pricing_widgets.serving_declaration().figure(batch=8))
    assert any(text.startswith("batch 8: output ") for text in serving)


def test_total_compute_figure_marks_each_optimum() -> None:
    from llmmath import scaling
    from llmmath.display.plots import overtraining_pricing as pricing_plots

    figure = pricing_plots.total_compute_vs_size(1.937, (0.0, 1e13))
    (ax,) = figure.axes
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    best = scaling.inference_aware_optimum(1.937, 1e13)
    assert float(dots[1].get_xdata()[0]) == pytest.approx(float(best.params))


def test_serving_explorer_marker_follows_the_cost() -> None:
    from llmmath.display.plots import overtraining_pricing as pricing_plots

    explorer = pricing_plots.ServingExplorer()
    explorer.update(LLAMA, 16, 2048, 4.0, 0.6)
    first = explorer.png()
    explorer.update(LLAMA, 128, 2048, 4.0, 0.6)
    assert explorer.png() != first
    cost = pricing.serving_cost(LLAMA, 128, 2048, usd_per_chip_hour=4.0, utilisation=0.6)
    x, y = explorer.out_point.get_data()
    assert (x[0], y[0]) == (128, pytest.approx(float(cost.output_usd_per_million)))


def _images(box: object) -> int:
    from llmmath.display.widgets.common import StaticExplorer

    assert isinstance(box, StaticExplorer)
    return sum(frame.format != "html" for frame in box.frames.values())


def test_static_explorers_stay_small_and_linked(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmmath.display.widgets import STATIC_ENV
    from llmmath.display.widgets import overtraining_pricing as pricing_widgets

    class Blank:  # stands in for the figures: every frame a few bytes
        def __init__(self) -> None:
            self.setting: tuple[object, ...] = ()

        def update(self, **setting: object) -> None:
            self.setting = tuple(setting.items())

        def png(self) -> bytes:
            return repr(self.setting).encode()

    monkeypatch.setenv(STATIC_ENV, "1")
    monkeypatch.setattr(pricing_widgets, "OvertrainingExplorer", Blank)
    monkeypatch.setattr(pricing_widgets, "ServingExplorer", Blank)
    over = pricing_widgets.overtraining_explorer()
    serve = pricing_widgets.serving_explorer()
    sheet = pricing_widgets.price_sheet_explorer()
    assert _images(over) == 3 * 10 and _images(serve) == 3 * 3 * 9
    assert _images(over) + _images(serve) <= 150
    # Every control is in the page, its stride in the frames its axis's size below it.
    page = over._repr_html_()
    for control, stride in zip(over.controls, over.strides(), strict=True):
        assert f'id="{over.key}-{control}"' in page or f'name="{over.key}-{control}"' in page
        assert f'data-stride="{stride}"' in page
    assert len(sheet.frames) == len(pricing.list_price_sheets())


def test_live_explorers_redraw(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmmath.display.widgets import STATIC_ENV
    from llmmath.display.widgets import overtraining_pricing as pricing_widgets

    monkeypatch.setenv(STATIC_ENV, "0")
    box = pricing_widgets.overtraining_explorer()
    image = box.children[-1]
    before = bytes(image.value)
    box.controls["inference_tokens"].value = 1e15  # lifetime serving tokens
    assert bytes(image.value) != before
    sheets = pricing_widgets.price_sheet_explorer()
    sheets.controls["model"].value = "GPT-4o"
    assert "2024-08-06" in sheets.children[-1].value

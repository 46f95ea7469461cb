"""The over-training and pricing chapter's numbers, second part (``numbers.overtraining_pricing``
gathers them): what a token costs to serve, and why prompts over 200k tokens cost more."""

from __future__ import annotations

from dataclasses import dataclass

from llmmath import api_prices, moe, pricing
from llmmath.api_prices import PriceSheet
from llmmath.core import capacity
from llmmath.core._checks import FloatArray
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.display.numbers import shown
from llmmath.display.numbers.overtraining_pricing.training import USD_PER_CHIP_HOUR

UTILISATION = 0.5  # busy half the time


@dataclass(frozen=True)
class ServingCost:
    """What a token costs to serve: Llama-3-70B on 8 H100, 2,048 tokens, half busy."""

    llama8: Deployment
    cost64: pricing.ServingCost
    cost256: pricing.ServingCost
    full_2k: float  # the batch that fits at 2,048 tokens
    cost_full: pricing.ServingCost
    sheet_ratio: dict[str, float]  # every price sheet's output/input ratio
    band: dict[str, float]  # the sheets inside the band
    below_band: list[str]  # the sheets below it (ratio under 2)
    in_cost: str
    out_cost_64: str
    ratio_64: str
    ratio_256: str
    critical_batch: str
    t_c_70b: str
    full_2k_batch: str
    ratio_full: str
    ratio_min_sheet: str
    ratio_max_sheet: str
    below_band_sheet: str
    below_band_ratio: str
    sheet_ratio_min: str
    sheet_ratio_max: str
    gemini3_ratio: str
    sheet_moe_x: str  # E/k of DeepSeek-V3: B* x E/k for an MoE


@dataclass(frozen=True)
class LongContext:
    """Why prompts over 200k tokens cost more: a what-if Llama-3-70B allowed 1M tokens."""

    what_if: Deployment
    long_batch: float  # the batch that fits at 8,192 tokens
    long: pricing.LongContextSurcharge
    tiers: list[PriceSheet]  # the sheets with a long-context tier
    tier_out: list[str]
    tier_in: list[str]
    tier_vendors: dict[int, list[str]]  # vendors by the tier's threshold
    long_t_c: str
    long_short_batch: str
    long_long_batch: str
    long_out_ratio: str
    long_in_ratio: str
    kv_llama_kb: str
    tier_names: str
    tier_out_x: str
    tier_in_x: str
    tier_thresholds: str


def build_serving_cost() -> ServingCost:
    llama8 = Deployment(get_model("Llama-3-70B"), get_chip("H100"), 8)

    def cost(batch: float | FloatArray) -> pricing.ServingCost:
        return pricing.serving_cost(
            llama8, batch, 2048, usd_per_chip_hour=USD_PER_CHIP_HOUR, utilisation=UTILISATION
        )

    cost64, cost256 = cost(64), cost(256)
    full_2k = capacity.max_batch(llama8, 2048)
    cost_full = cost(full_2k)
    # The output/input ratios of the price sheets in data/api_prices.toml: their range, and
    # the sheets at its ends (the lecture says "3-5x"; a summary of it gives Gemini "5x").
    sheet_ratio = {
        name: float(api_prices.get_price_sheet(name).output_input_ratio)
        for name in api_prices.list_price_sheets()
    }
    ratio_max_sheet = max(sheet_ratio, key=sheet_ratio.__getitem__)
    # One sheet falls below the band the others span (DeepSeek-V3.2, 1.5x): named and
    # explained in "Today's traffic", not folded into the band.
    below_band = sorted(name for name, r in sheet_ratio.items() if r < 2)
    band = {name: r for name, r in sheet_ratio.items() if name not in below_band}
    ratio_min_sheet = min(band, key=band.__getitem__)
    return ServingCost(
        llama8=llama8,
        cost64=cost64,
        cost256=cost256,
        full_2k=float(full_2k),
        cost_full=cost_full,
        sheet_ratio=sheet_ratio,
        band=band,
        below_band=below_band,
        in_cost=shown.fixed(cost64.input_usd_per_million, 2),
        out_cost_64=shown.fixed(cost64.output_usd_per_million, 2),
        ratio_64=shown.fixed(cost64.output_input_ratio, 1),
        ratio_256=shown.fixed(cost256.output_input_ratio, 1),
        critical_batch=shown.fixed(capacity.step_critical_batch(llama8)),
        t_c_70b=shown.grouped(capacity.critical_context(llama8)),
        full_2k_batch=shown.fixed(full_2k),
        ratio_full=shown.fixed(cost_full.output_input_ratio, 1),
        ratio_min_sheet=ratio_min_sheet,
        ratio_max_sheet=ratio_max_sheet,
        below_band_sheet=below_band[0],
        below_band_ratio=shown.fixed(sheet_ratio[below_band[0]], 1),
        sheet_ratio_min=shown.fixed(sheet_ratio[ratio_min_sheet]),
        sheet_ratio_max=shown.fixed(sheet_ratio[ratio_max_sheet]),
        gemini3_ratio=shown.fixed(sheet_ratio["Gemini 3 Pro (preview)"]),
        sheet_moe_x=shown.fixed(moe.sparsity("DeepSeek-V3", "experts")),
    )


def build_long_context() -> LongContext:
    what_if = Deployment(pricing.with_context_limit("Llama-3-70B", 1_000_000), get_chip("H100"), 8)
    # Past T_c no batch is compute-bound, so the cheapest batch is the largest that fits.
    long_batch = capacity.max_batch(what_if, 8192)
    long = pricing.long_context_surcharge(what_if, long_batch, 8192, 262_144)
    sheets = [api_prices.get_price_sheet(name) for name in api_prices.list_price_sheets()]
    tiers = [s for s in sheets if s.has_long_tier]
    tier_out = sorted({format(s.long_output_surcharge, "g") for s in tiers})
    tier_in = sorted({format(s.long_input_surcharge, "g") for s in tiers})
    # Where each vendor's tier starts (Google's and Anthropic's at 200k, OpenAI's at 272k).
    vendor_sets: dict[int, set[str]] = {}
    for sheet in tiers:
        vendor_sets.setdefault(sheet.long_context_threshold_tokens, set()).add(sheet.vendor)
    tier_vendors = {t: sorted(v) for t, v in vendor_sets.items()}
    return LongContext(
        what_if=what_if,
        long_batch=float(long_batch),
        long=long,
        tiers=tiers,
        tier_out=tier_out,
        tier_in=tier_in,
        tier_vendors=tier_vendors,
        long_t_c=shown.grouped(capacity.critical_context(what_if)),
        long_short_batch=shown.fixed(long.short.batch),
        long_long_batch=shown.fixed(long.long.batch),
        long_out_ratio=shown.fixed(long.output_ratio),
        long_in_ratio=shown.fixed(long.input_ratio, 1),
        kv_llama_kb=shown.fixed(what_if.model.kv_bytes_per_token(what_if.kv_dtype) / 1e3),
        tier_names=", ".join(s.model for s in tiers),
        tier_out_x=tier_out[0],  # one value each: a claim checks it
        tier_in_x=tier_in[0],
        tier_thresholds=" or ".join(
            f"{t // 1000}k ({', '.join(v)})" for t, v in sorted(tier_vendors.items())
        ),
    )

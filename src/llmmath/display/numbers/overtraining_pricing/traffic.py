"""The over-training and pricing chapter's numbers, third part (``numbers.overtraining_pricing``
gathers them): today's traffic, long agentic contexts and cache hits, with Gemini 3.1 Pro's
long-context step, DeepSeek-V3.2's sheet and the agent's check."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from llmmath import api_prices, moe, pricing
from llmmath.api_prices import PriceSheet
from llmmath.core import capacity, serving
from llmmath.core._checks import FloatArray
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.core.setting import Setting
from llmmath.display.numbers import shown
from llmmath.display.numbers.overtraining_pricing.serving import UTILISATION, ServingCost
from llmmath.display.numbers.overtraining_pricing.training import USD_PER_CHIP_HOUR

AGENTIC_CONTEXT = 65_536  # tokens of context of 2026 agentic traffic


@dataclass(frozen=True)
class Traffic:
    """Today's traffic: the 2,048-token chat against 65,536-token agentic contexts."""

    chat_setting: Setting
    agentic_setting: Setting
    chat: pricing.WorkloadCost
    hits: dict[float, pricing.WorkloadCost]  # by cache-hit fraction
    agentic: pricing.WorkloadCost  # 90% hits
    agentic_steps: serving.DecodeStep  # every batch that fits
    kv_over_weights: npt.NDArray[np.bool_]  # per batch: the step reads more KV than weights
    context_table: str  # markdown
    sheets: list[PriceSheet]
    cached_shares: list[float]  # sorted, of the sheets with a cached price
    sheets_at_tenth: int
    at_twentieth: list[PriceSheet]
    agent_request: FloatArray  # USD, cold and 90% warm cache
    agentic_context: str
    agentic_batch: str
    chat_batch: str
    agentic_out: str
    chat_out: str
    agentic_in: str
    chat_in: str
    agentic_ratio: str
    chat_ratio: str
    out_x: str
    agentic_kv_share: str
    kv_from_batch: str
    chat_kv_from_batch: str
    cached_usd: str
    cached_where: str
    cached_share: str
    hold_min: str
    blended_50: str
    blended_90: str
    ratio_50: str
    ratio_90: str
    sheet_cached_lo: str
    sheet_cached_hi: str
    sheets_at_tenth_text: str
    at_twentieth_names: str
    sheets_cached: str
    sonnet_r50: str
    sonnet_r90: str
    agent_request_cold: str
    agent_request_warm: str
    agent_output_share: str


@dataclass(frozen=True)
class Gemini31:
    """The lecture's Gemini 3.1 data point: its sheet around the long-context threshold."""

    sheet: PriceSheet
    prompts: tuple[int, ...]
    ratios: FloatArray  # output/input per token at each prompt
    table: str  # markdown
    out_pct: str
    in_x: str
    ratio_short: str
    ratio_long: str
    step: str  # the request's price one token past the threshold over at it
    threshold_text: str
    date: str


@dataclass(frozen=True)
class DeepSeekV32:
    """A sheet outside the band: DeepSeek-V3.2 (and V3) on 8 H200 in fp8."""

    v32: PriceSheet
    v32_implied: float  # the decode batch its ratio implies
    v32_fits_value: float  # sequences of 65,536 tokens that fit on one node
    v32_floor: pricing.WorkloadCost
    v32_kv_s: float  # one sequence's KV read at 65,536 tokens, V3.2
    v3_kv_s: float  # the same for V3's dense latent attention
    v32_ratio: str
    v31_ratio: str
    v32_date: str
    v31_date: str
    v32_implied_text: str
    v32_weight_bound_text: str
    v32_fits: str
    v32_floor_ratio: str
    v32_nodes: str
    v32_cached: str
    v32_kv_less: str


@dataclass(frozen=True)
class AgentCheck:
    """Check yourself: an agent's 100k-token prompts, 80% cached, on Gemini 3.1 Pro's sheet."""

    agent: FloatArray  # USD per request at 100k and 210k tokens of prompt
    agent_short: str
    agent_long: str
    agent_out: str
    agent_x: str
    blended: str


def _kv_from_batch(
    setting: Setting, batch: float
) -> tuple[serving.DecodeStep, npt.NDArray[np.bool_]]:
    """Every batch up to ``batch``'s steps, and where each reads more KV cache than weights."""
    steps = setting.step(np.arange(1.0, batch + 1.0))
    return steps, np.asarray(steps.kv_read_s > steps.weight_read_s)


def build_traffic(serving_cost: ServingCost) -> Traffic:
    # One server, two workloads: the 2023 chat of the worked number, and 2026 traffic (agents
    # and reasoning models: 32k-128k tokens of context, most of it a cached prefix).
    # Llama-3.1-70B has Llama-3-70B's shape with a 128k context; the package's Llama-3-70B
    # allowed 131,072 tokens is that model.
    agentic_node = Deployment(
        pricing.with_context_limit("Llama-3-70B", 131_072), get_chip("H100"), 8
    )
    chat_setting = Setting(serving_cost.llama8, 2048)
    agentic_setting = Setting(agentic_node, AGENTIC_CONTEXT)
    rent = {"usd_per_chip_hour": USD_PER_CHIP_HOUR, "utilisation": UTILISATION}
    chat = pricing.workload_cost(chat_setting, **rent)
    hits = {
        h: pricing.workload_cost(agentic_setting, cache_hit_fraction=h, **rent)
        for h in (0.0, 0.5, 0.9)
    }
    agentic = hits[0.9]
    # The first batch from which each step reads more KV cache than weights.
    agentic_steps, kv_over_weights = _kv_from_batch(agentic_setting, agentic.batch)
    chat_steps, chat_kv_over = _kv_from_batch(chat_setting, chat.batch)
    by_context = [
        pricing.workload_cost(Setting(agentic_node, T), **rent) for T in (32_768, 65_536, 131_072)
    ]
    context_table = "\n".join(
        [
            "| context | batch that fits | input, USD/M | output, USD/M | output / input "
            "| KV share of reads |",
            "|---|---|---|---|---|---|",
            f"| {chat_setting.context:,.0f} (chat) | {chat.batch:,.0f} "
            f"| {chat.input_usd_per_million:.2f} | {chat.output_usd_per_million:.2f} "
            f"| {chat.output_input_ratio:.1f}× | {chat.kv_read_share:.0%} |",
            *(
                f"| {w.setting.context:,.0f} | {w.batch:,.0f} | {w.input_usd_per_million:.2f} "
                f"| {w.output_usd_per_million:.2f} | {w.output_input_ratio:.0f}× "
                f"| {w.kv_read_share:.0%} |"
                for w in by_context
            ),
        ]
    )
    # Cache hits: what a hit costs at the floor; what hits do to the input a request pays.
    cached_where = {"local_NVMe": "local NVMe flash", "host_DRAM": "host DRAM"}.get(
        agentic.cached_option, agentic.cached_option
    )
    sheets = [api_prices.get_price_sheet(name) for name in api_prices.list_price_sheets()]
    cached_shares = sorted(s.cached_input_share for s in sheets if s.has_cached_price)
    sheets_at_tenth = sum(abs(share - 0.1) < 1e-9 for share in cached_shares)
    # The 2026 sheets that price a hit at a twentieth of the input (Anthropic, OpenAI, newest).
    at_twentieth = [
        s for s in sheets if s.has_cached_price and abs(s.cached_input_share - 0.05) < 1e-9
    ]
    sonnet = "Claude Sonnet 4.5"
    sonnet_ratios = np.asarray(api_prices.output_input_price_ratio(sonnet, [0.0, 0.5, 0.9]))
    agent_request = np.asarray(api_prices.request_price_usd(sonnet, 65_536, 8_000, [0.0, 0.9]))
    return Traffic(
        chat_setting=chat_setting,
        agentic_setting=agentic_setting,
        chat=chat,
        hits=hits,
        agentic=agentic,
        agentic_steps=agentic_steps,
        kv_over_weights=kv_over_weights,
        context_table=context_table,
        sheets=sheets,
        cached_shares=cached_shares,
        sheets_at_tenth=sheets_at_tenth,
        at_twentieth=at_twentieth,
        agent_request=agent_request,
        agentic_context=shown.grouped(agentic_setting.context),
        agentic_batch=shown.fixed(agentic.batch),
        chat_batch=shown.grouped(chat.batch),
        agentic_out=shown.fixed(agentic.output_usd_per_million, 2),
        chat_out=shown.fixed(chat.output_usd_per_million, 2),
        agentic_in=shown.fixed(agentic.input_usd_per_million, 2),
        chat_in=shown.fixed(chat.input_usd_per_million, 2),
        agentic_ratio=shown.fixed(agentic.output_input_ratio),
        chat_ratio=shown.fixed(chat.output_input_ratio, 1),
        out_x=shown.fixed(agentic.output_usd_per_million / chat.output_usd_per_million),
        agentic_kv_share=shown.percent(agentic.kv_read_share),
        kv_from_batch=shown.fixed(agentic_steps.batch[np.argmax(kv_over_weights)]),
        chat_kv_from_batch=shown.fixed(chat_steps.batch[np.argmax(chat_kv_over)]),
        cached_usd=shown.fixed(agentic.cached_input_usd_per_million, 3),
        cached_where=cached_where,
        cached_share=shown.percent(agentic.cached_input_share),
        hold_min=shown.fixed(agentic.hold_s / 60),
        blended_50=shown.fixed(hits[0.5].blended_input_usd_per_million, 2),
        blended_90=shown.fixed(hits[0.9].blended_input_usd_per_million, 2),
        ratio_50=shown.fixed(hits[0.5].blended_output_input_ratio),
        ratio_90=shown.fixed(hits[0.9].blended_output_input_ratio),
        sheet_cached_lo=shown.percent(cached_shares[0]),
        sheet_cached_hi=shown.percent(cached_shares[-1]),
        sheets_at_tenth_text=str(sheets_at_tenth),
        at_twentieth_names=" and ".join(s.model for s in at_twentieth),
        sheets_cached=str(len(cached_shares)),
        sonnet_r50=shown.fixed(sonnet_ratios[1]),
        sonnet_r90=shown.fixed(sonnet_ratios[2]),
        agent_request_cold=shown.fixed(agent_request[0], 2),
        agent_request_warm=shown.fixed(agent_request[1], 2),
        agent_output_share=shown.percent(8_000 * 15.0 / 1e6 / float(agent_request[1])),
    )


def build_gemini31() -> Gemini31:
    sheet = api_prices.get_price_sheet("Gemini 3.1 Pro (preview)")
    threshold = sheet.long_context_threshold_tokens
    prompts = (100_000, threshold, threshold + 1, 400_000)
    prices = np.asarray(api_prices.request_price_usd(sheet.model, prompts, 8_000))
    ratios = np.asarray(api_prices.output_input_price_ratio(sheet.model, 0.0, prompts))
    table = "\n".join(
        [
            "| prompt tokens | request price, USD | output / input per token |",
            "|---|---|---|",
            *(
                f"| {p:,} | {float(c):.3f} | {float(r):.1f}× |"
                for p, c, r in zip(prompts, prices, ratios, strict=True)
            ),
        ]
    )
    return Gemini31(
        sheet=sheet,
        prompts=prompts,
        ratios=ratios,
        table=table,
        out_pct=shown.fixed(100 * (sheet.long_output_surcharge - 1)),
        in_x=format(sheet.long_input_surcharge, "g"),
        ratio_short=shown.fixed(ratios[0]),
        ratio_long=shown.fixed(ratios[-1], 1),
        step=shown.fixed(prices[2] / prices[1], 2),
        threshold_text=format(threshold, ","),
        date=sheet.source_date,
    )


def _fp8_node(model: str) -> Deployment:
    return Deployment(
        get_model(model),
        get_chip("H200"),
        8,
        weight_dtype="fp8",
        kv_dtype="fp8",
        compute_dtype="fp8",
    )


def build_deepseek_v32() -> DeepSeekV32:
    v32 = api_prices.get_price_sheet("DeepSeek-V3.2")
    v31 = api_prices.get_price_sheet("DeepSeek-V3.1")
    # Read as a batch (equal markups, no KV term): B = B*_MoE / r, with B*_MoE = B* x E/k.
    v32_node = _fp8_node("DeepSeek-V3.2")
    weight_bound = moe.compute_bound_batch_rule("DeepSeek-V3.2", "H200", "experts", "fp8", "fp8")
    implied = float(pricing.decode_batch_from_ratio(v32.output_input_ratio, weight_bound))
    fits = float(capacity.max_batch(v32_node, AGENTIC_CONTEXT))
    floor = pricing.workload_cost(
        Setting(v32_node, AGENTIC_CONTEXT), usd_per_chip_hour=USD_PER_CHIP_HOUR
    )
    # What DSA saves per output token at 65,536 tokens: V3.2's KV read against V3's (dense
    # MLA).
    v32_kv_s = float(serving.decode_step(v32_node, 1, AGENTIC_CONTEXT).kv_read_s)
    v3_kv_s = float(serving.decode_step(_fp8_node("DeepSeek-V3"), 1, AGENTIC_CONTEXT).kv_read_s)
    return DeepSeekV32(
        v32=v32,
        v32_implied=implied,
        v32_fits_value=fits,
        v32_floor=floor,
        v32_kv_s=v32_kv_s,
        v3_kv_s=v3_kv_s,
        v32_ratio=shown.fixed(v32.output_input_ratio, 1),
        v31_ratio=shown.fixed(v31.output_input_ratio),
        v32_date=v32.source_date,
        v31_date=v31.source_date,
        v32_implied_text=shown.grouped(implied),
        v32_weight_bound_text=shown.grouped(weight_bound),
        v32_fits=shown.grouped(fits),
        v32_floor_ratio=shown.fixed(floor.output_input_ratio),
        v32_nodes=shown.fixed(implied / fits),
        v32_cached=format(v32.cached_input_usd_per_million, "g"),
        v32_kv_less=shown.fixed(v3_kv_s / v32_kv_s, 1),
    )


def build_agent_check(gemini: Gemini31) -> AgentCheck:
    sheet = gemini.sheet
    agent = np.asarray(api_prices.request_price_usd(sheet.model, [100_000, 210_000], 5_000, 0.8))
    return AgentCheck(
        agent=agent,
        agent_short=shown.fixed(agent[0], 3),
        agent_long=shown.fixed(agent[1], 3),
        agent_out=shown.percent(5_000 * sheet.output_usd_per_million / 1e6 / float(agent[0])),
        agent_x=shown.fixed(agent[1] / agent[0], 1),
        blended=shown.fixed(api_prices.blended_input_usd_per_million(sheet.model, 0.8), 2),
    )

"""What ``lessons/overtraining_pricing.md`` says in words, pinned to the package for the
lesson's settings (``llmmath.display.numbers.overtraining_pricing``), with its errata pins and
depth checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from claims import Claim, check_claim, claim_id, page_words
from llmmath import api_prices, batching, moe, pricing, scaling
from llmmath.beyond import serving_systems
from llmmath.core import capacity, collectives, data, serving
from llmmath.core.models import get_model
from llmmath.display import numbers
from llmmath.display.numbers import shown
from llmmath.display.numbers.overtraining_pricing import Numbers

CHAPTER = "overtraining_pricing"


def _sparsity(model: str) -> float:
    """E/k: the experts over those each token is routed to."""
    spec = get_model(model)
    return spec.n_experts / spec.experts_per_token


def _half_last_digit(published: float) -> float:
    """Half a unit in the third significant digit of ``published``, relative to it."""
    return 0.5 * 10 ** (math.floor(math.log10(published)) - 2) / published


def _within_the_published_rounding(n: Numbers) -> bool:
    # Each count and rate to three figures: half a unit in the last digit of each.
    spec = data.table("systems")["deepseek_serving"]
    day = n.pools.ds_day
    gap = abs(day.prefill_nodes + day.decode_nodes - day.fleet_nodes)
    return gap < day.prefill_nodes * (
        _half_last_digit(spec["input_tokens_per_day"])
        + _half_last_digit(spec["prefill_input_tokens_per_s_per_node"])
    ) + day.decode_nodes * (
        _half_last_digit(spec["output_tokens_per_day"])
        + _half_last_digit(spec["decode_output_tokens_per_s_per_node"])
    )


def _as_batch(shown_batch: str) -> float:
    return float(shown_batch.replace(",", ""))


CLAIMS = [
    # ---- the RL factor and the takeaway: over-training against the fit's own optimum ----
    Claim(
        "times the {eval}`n.lifetime.plain_tpp` the fit makes compute-optimal at that loss",
        lambda n: (
            round(float(n.lifetime.heavy.tokens_per_param / n.lifetime.plain.tokens_per_param))
            == int(n.lifetime.heavy_factor)
            == round(float(scaling.overtraining_factor(n.lifetime.target, 1e14)))
            # "the refit's optimum is the rule of thumb's 20 again" (#43: Besiroglu's refit)
            and 0.75 < int(n.lifetime.heavy_factor) / int(n.lifetime.heavy_tpp_x) < 1.25
            and 15 < float(n.lifetime.plain.tokens_per_param) < 25
        ),
    ),
    Claim(
        "the refit makes every optimum {eval}`n.lifetime.moved_lo`–{eval}`n.lifetime.moved_hi`× "
        "larger and far",
        lambda n: (
            all(m > 1 for m in n.lifetime.moved)
            and all(
                float(new.tokens_per_param) < float(old.tokens_per_param)
                for new, old in zip(n.lifetime.new, n.lifetime.old, strict=True)
            )
            and n.lifetime.llama_demand_value > n.lifetime.old_llama_demand_value
        ),
    ),
    # ---- long prompts: the sheets' tiers against a plain GQA Llama ----
    Claim(
        "all charge **{eval}`n.long.tier_out_x`× for output and {eval}`n.long.tier_in_x`× for "
        "input** past",
        lambda n: (
            len(n.long.tiers) >= 2
            and len(n.long.tier_out) == 1
            and len(n.long.tier_in) == 1
            and sum(map(len, n.long.tier_vendors.values())) >= 2
            and all(
                s.vendor in n.long.tier_vendors[s.long_context_threshold_tokens]
                for s in n.long.tiers
            )
        ),
    ),
    Claim(
        "So the models behind them must be far kinder to long contexts than a plain {ref}`GQA",
        lambda n: (
            float(n.long.long.output_ratio) > 10 * float(n.long.tier_out_x)
            and float(n.long.long.input_ratio) > float(n.long.tier_in_x)
        ),
    ),
    # ---- today's traffic: long agentic contexts and cache hits (#43 item 5) ----
    Claim(
        "and decode is memory-bound at every batch that fits.",
        lambda n: (
            not np.any(n.traffic.agentic_steps.compute_bound)
            and len(n.traffic.agentic_steps.batch)
            == float(
                capacity.max_batch(
                    n.traffic.agentic_setting.deployment, n.traffic.agentic_setting.context
                )
            )
        ),
    ),
    Claim(
        "each step reads more KV cache than weights (the chat crosses over only at batch",
        lambda n: (
            # False below the crossover, True from it to the last batch that fits.
            bool(np.all(np.diff(n.traffic.kv_over_weights.astype(int)) >= 0))
            and bool(n.traffic.kv_over_weights[-1])
            and int(n.traffic.kv_from_batch) < 10 < int(n.traffic.chat_kv_from_batch)
            and n.traffic.agentic.kv_read_share > 0.5
        ),
    ),
    Claim(
        "No price sheet charges anything like that",
        lambda n: n.traffic.agentic.output_input_ratio > 4 * max(n.serving.sheet_ratio.values()),
    ),
    Claim(
        "**{eval}`n.traffic.cached_share` of a fresh input token** at the floor",
        lambda n: (
            0 < n.traffic.agentic.cached_input_share < 1
            and n.traffic.agentic.cached_option != "recompute"
        ),
    ),
    Claim(
        "a twentieth): the same order, and falling.",
        lambda n: (
            n.traffic.cached_shares[0]
            <= n.traffic.agentic.cached_input_share
            <= n.traffic.cached_shares[-1]
            and n.traffic.sheets_at_tenth + len(n.traffic.at_twentieth)
            > len(n.traffic.cached_shares) / 2
            # falling: the sheets at a twentieth are the newest sheets with a cached price
            and min(s.source_date for s in n.traffic.at_twentieth)
            > max(
                s.source_date
                for s in n.traffic.sheets
                if s.has_cached_price and s not in n.traffic.at_twentieth
            )
        ),
    ),
    Claim(
        "So in today's traffic the output line is most of the bill",
        # An agent step of 8,000 output tokens on Claude Sonnet 4.5's sheet, 90% hits.
        lambda n: (
            8_000
            * api_prices.get_price_sheet("Claude Sonnet 4.5").output_usd_per_million
            / 1e6
            / float(n.traffic.agent_request[1])
            > 0.5
            and n.traffic.hits[0.9].blended_output_input_ratio
            > n.traffic.hits[0.5].blended_output_input_ratio
        ),
    ),
    Claim(
        'the lecture\'s "5× output" lies between',
        lambda n: float(n.gemini.ratios[-1]) < 5 < float(n.gemini.ratios[0]),
    ),
    Claim(
        "one token past the threshold multiplies the bill by",
        lambda n: n.gemini.prompts[2] - n.gemini.prompts[1] == 1 and float(n.gemini.step) > 1.5,
    ),
    Claim(
        "far below the 3–8× of the other sheets",
        lambda n: (
            (n.serving.sheet_ratio_min, n.serving.sheet_ratio_max) == ("3", "8")
            and n.v32.v32.output_input_ratio < min(n.serving.band.values()) / 1.5
            and n.serving.below_band == [n.v32.v32.model]
        ),
    ),
    Claim(
        "less KV than V3's dense latent attention",
        lambda n: n.v32.v3_kv_s > 2 * n.v32.v32_kv_s,
    ),
    Claim(
        "so the batch the price implies takes about",
        lambda n: (
            n.v32.v32_implied > 10 * n.v32.v32_fits_value and n.v32.v32_floor.output_input_ratio > 3
        ),
    ),
    Claim(
        "Agents trim or summarise their history before it crosses the threshold for this reason.",
        lambda n: float(n.agent.agent[1] / n.agent.agent[0]) > 210_000 / 100_000,
    ),
    # ---- reading a sheet: an MoE's weight-bound batch is B* x E/k ----
    Claim(
        "for an {ref}`MoE <glossary-moe>` it is $B^* \\cdot E/k$ (the MoE chapter's",
        # The exact batch where one expert layer's FLOPs meet its reads is B* x E/k.
        lambda n: (
            float(n.serving.sheet_moe_x) == _sparsity("DeepSeek-V3")
            and math.isclose(
                moe.compute_bound_batch("DeepSeek-V3", "H100", scope="expert_layer"),
                moe.compute_bound_batch_rule("DeepSeek-V3", "H100", definition="experts"),
                rel_tol=0.01,
            )
        ),
    ),
    Claim(
        "the same ratio says about {eval}`n.check.check3_moe` sequences",
        # r = B*/B read backwards (no KV term): B = B*/r dense, B* x E/k / r for the MoE.
        lambda n: (
            _as_batch(n.check.check3_moe)
            == round(
                float(
                    pricing.decode_batch_from_ratio(
                        n.check.check3_ratio, n.check.check3_critical * _sparsity("DeepSeek-V3")
                    )
                )
            )
            and _as_batch(n.check.check3_dense)
            == round(
                float(
                    pricing.decode_batch_from_ratio(n.check.check3_ratio, n.check.check3_critical)
                )
            )
        ),
    ),
    # ---- DeepSeek's day read back (issue 32, items 5 and 7) ----
    Claim(
        "the same prices ask for twice the parameters",
        lambda n: (
            math.isclose(
                n.sheets.ds_read["fp8"].low, 2 * n.sheets.ds_read["bf16"].low, rel_tol=1e-3
            )
            and math.isclose(
                n.sheets.ds_read["fp8"].high, 2 * n.sheets.ds_read["bf16"].high, rel_tol=1e-3
            )
        ),
    ),
    Claim(
        "DeepSeek-V3 has 37B {cite}`deepseek2024v3`, inside the range; in FP8 it fits only below "
        "30% MFU or with an input markup above the blended one.",
        lambda n: (
            n.sheets.ds_read["bf16"].low
            < get_model("DeepSeek-V3").active_params
            < n.sheets.ds_read["fp8"].low
            and n.sheets.ds_mfu[0] == 0.3
        ),
    ),
    Claim(
        "returns the fleet's size almost by construction",
        lambda n: (
            abs(
                n.pools.ds_day.prefill_nodes
                + n.pools.ds_day.decode_nodes
                - n.pools.ds_day.fleet_nodes
            )
            < 0.001 * n.pools.ds_day.fleet_nodes
        ),
    ),
    Claim(
        "gap is within the rounding of the published figures (three significant digits each)",
        _within_the_published_rounding,
    ),
    Claim(
        "(226.75 × 8 GPUs × USD 2 × 24 h)",
        lambda n: (
            n.sheets.ds_cost
            == shown.grouped(
                pricing.fleet_day_cost_usd(
                    n.sheets.day.nodes, n.sheets.day.gpus_per_node, n.sheets.day.usd_per_gpu_hour
                )
            )
            and (n.sheets.day.nodes, n.sheets.day.gpus_per_node, n.sheets.day.usd_per_gpu_hour)
            == (226.75, 8, 2.0)
        ),
    ),
    # ---- joules per token and power's share (issue 32, energy) ----
    Claim(
        "Power is a small share of the cost per token: under a tenth at the average price",
        lambda n: n.energy.share < 0.1 and n.energy.share_low < n.energy.share,
    ),
    Claim(
        "and still about a fifth ({eval}`n.energy.share_high_pct`%) at Rhode Island's",
        lambda n: 0.15 < n.energy.share_high < 0.25,
    ),
    Claim(
        "The step time cancels in the share: power and rent are both paid by the second",
        lambda n: bool(np.allclose(n.energy.share_by_batch, n.energy.share, rtol=1e-12)),
    ),
    Claim(
        "the same share as one GPU's, as it must be when both are paid by the GPU-hour",
        lambda n: math.isclose(n.energy.fleet.power_share, n.energy.share, rel_tol=1e-12),
    ),
    Claim(
        "An input token, in a compute-bound prefill, costs",
        lambda n: bool(
            np.all(
                serving.prefill(
                    n.serving.llama8, 2048, n.energy.energy.cost.prefill_batch
                ).compute_bound
            )
        ),
    ),
    Claim(
        "so the rise is less than 4×). The share stays at",
        lambda n: (
            1 < n.energy.joules_out[64] / n.energy.joules_out[256] < 4
            and math.isclose(float(n.energy.share_by_batch[1]), float(n.energy.share_by_batch[2]))
        ),
    ),
    Claim(
        "but the power is the node's maximum (a bandwidth-bound step draws less)",
        lambda n: (
            not np.any(
                batching.decode_step(n.serving.llama8, n.energy.energy_batches, 2048).compute_bound
            )
        ),
    ),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=claim_id)
def test_claim_is_on_its_page_and_holds(claim: Claim) -> None:
    check_claim(CHAPTER, claim)


def _numbers() -> Numbers:
    result: Numbers = numbers.overtraining_pricing.numbers()
    return result


# ---- errata -------------------------------------------------------------------------------------
#: Issue 42: phrasings each true only in a setting the page had silently changed.
ISSUE_42_GONE = (
    # 2,306 tokens per parameter is 25x the fit's own 91 at that loss, not "115x Chinchilla"
    'times "Chinchilla\'s" 20',  # was "{eval}`heavy_tpp_x` times ..."
    # a price ratio read as 1/r of the critical batch holds for a dense model only
    "says decode runs at about $1/r$ of its critical batch",
)


def test_issue_42_wrong_phrasings_do_not_return() -> None:
    words = page_words(CHAPTER)
    for wrong in ISSUE_42_GONE:
        assert " ".join(wrong.split()) not in words, f"{CHAPTER}.md says again: {wrong!r}"


def test_price_ratio_range_is_the_sheets() -> None:
    ratios = {
        name: float(api_prices.get_price_sheet(name).output_input_ratio)
        for name in api_prices.list_price_sheets()
    }
    n = _numbers()
    # The band is every sheet's but the one below it (#43: DeepSeek-V3.2's 1.5x), which the
    # page names and explains instead of folding it in.
    below = [name for name, r in ratios.items() if r < 2]
    band = [r for name, r in ratios.items() if name not in below]
    assert below == [n.serving.below_band_sheet] == ["DeepSeek-V3.2"]
    assert (n.serving.sheet_ratio_min, n.serving.sheet_ratio_max) == (
        f"{min(band):.0f}",
        f"{max(band):.0f}",
    )
    # The lecture's "3-5x" fits every sheet but Google's; Gemini 3 Pro's is 6x, not 5x.
    for name, ratio in ratios.items():
        vendor = api_prices.get_price_sheet(name).vendor
        assert (ratio > 5) == (vendor == "Google"), name
    assert n.serving.gemini3_ratio == "6"
    words = page_words(CHAPTER)
    assert "4–8×" not in words and "re-checked" in n.sheets.table


# ---- depth: the serving-cost formula, long contexts, disaggregated pools -------------------------
def test_pricing_ratio_formula_is_the_floor() -> None:
    # "output / input ≈ max(1, B*/B + T kv C / (2 P W))": the KV term inside the max, as the
    # floor adds it to the weight read (the package's decode_batch_from_ratio inverts it).
    dep = _numbers().serving.llama8
    chip = dep.chip
    C, W = chip.peak("bf16"), chip.hbm_bandwidth_bytes_per_s
    P = dep.model.total_params
    for batch, context in ((64, 2048), (256, 2048), (743, 2048), (128, 512)):
        kv_term = context * dep.model.kv_bytes_per_token(dep.kv_dtype) * C / (2 * P * W)
        predicted = max(1.0, capacity.step_critical_batch(dep) / batch + kv_term)
        cost = pricing.serving_cost(dep, batch, context, usd_per_chip_hour=2.0)
        assert float(cost.output_input_ratio) == pytest.approx(predicted, rel=0.1), batch


def test_pricing_ratio_stays_above_one_past_t_c() -> None:
    n = _numbers()
    dep = n.serving.llama8
    # "not to 1: 2,048 tokens is past T_c ≈ 1,477, so the KV reads keep decode
    # bandwidth-bound at every batch; even the 743 sequences that fit pay 1.8×."
    assert capacity.critical_context(dep) < 2048
    assert not batching.decode_step(dep, n.serving.full_2k, 2048).compute_bound
    assert float(n.serving.cost_full.output_input_ratio) > 1.5
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
    long = _numbers().long
    dep = long.what_if
    assert capacity.critical_context(dep) < 8192
    assert long.long_short_batch == f"{capacity.max_batch(dep, 8192):.0f}"
    costs = [
        float(batching.decode_step(dep, b, 8192).cost_per_million_tokens_usd())
        for b in (64, 128, long.long_batch)
    ]
    assert costs[0] > costs[1] > costs[2]
    assert not batching.decode_step(dep, long.long_batch, 8192).compute_bound


def test_pricing_lesson_disaggregation_claims() -> None:
    node = _numbers().serving.llama8
    day = serving_systems.deepseek_pools()
    pools = serving_systems.disaggregated_pools(
        node, day.input_tokens_per_s, day.output_tokens_per_s, 64, 2048, day.cache_hit_fraction
    )
    # "even at {ds_mix} input tokens per output token, {pool_decode_share}% of the chips decode"
    assert day.input_output_ratio > 3 and float(pools.decode_share) > 0.5
    # The measured per-node ratio is "close to the floors' ratio".
    spec = data.table("systems")["deepseek_serving"]
    measured = (
        spec["prefill_input_tokens_per_s_per_node"] / spec["decode_output_tokens_per_s_per_node"]
    )
    floors = float(pools.prefill_tokens_per_s_per_chip / pools.decode_tokens_per_s_per_chip)
    assert abs(math.log(floors / measured)) < math.log(1.5)
    # One 8,192-token prefill lasts many decode steps.
    stall = serving_systems.prefill_stall_steps(node, 8192, 64, 2048)
    assert stall == pytest.approx(
        float(serving.prefill(node, 8192, 1).time_s / serving.decode_step(node, 64, 2048).time_s)
    )
    assert stall > 10
    # Moving a prompt's KV cache costs little beside its prefill.
    kv = 2048 * node.model.kv_bytes_per_token(node.kv_dtype)
    move = float(collectives.point_to_point_time_s(kv / 8, "H100", across_domains=True))
    assert move < float(serving.prefill(node, 2048, 1).time_s) / 10
    # The check-yourself answer: a 10:1 retrieval mix, no cache hits; prefill takes most.
    rag = serving_systems.disaggregated_pools(node, 10.0, 1.0, 64, 2048)
    assert float(rag.decode_share) < 0.5

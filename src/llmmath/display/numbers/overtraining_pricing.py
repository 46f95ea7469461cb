"""The over-training and pricing chapter's numbers (``lessons/overtraining_pricing.md``),
section by section.

Its settings:

- a training run: Llama-3-70B on 15T tokens, 16,384 H100 at 40% MFU, USD 2 per H100-hour;
- the Chinchilla fits: Hoffmann et al.'s rounded one and Besiroglu et al.'s refit (the
  package's default), at Chinchilla's budget 5.76e23 FLOPs and its loss under the refit;
- serving: Llama-3-70B on 8 H100 in bf16, 2,048 tokens of context, USD 2 per chip-hour, busy
  half the time; a what-if of it allowed a 1M context; 2026 traffic at 65,536 tokens (its 128k
  shape, Llama-3.1-70B's) with 0, 50 and 90% prompt-cache hits;
- the dated price sheets of ``data/api_prices.toml``; DeepSeek-V3.2 and V3 on 8 H200 in fp8;
  DeepSeek's published day of V3/R1 serving (226.75 nodes of 8 H800);
- joules: a DGX H100 node's power, the EIA 2023 industrial price, Uptime's 2023 PUE.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from IPython.display import Markdown

from llmmath import api_prices, batching, get_chip, moe, pricing, scaling
from llmmath.api_prices import FleetDay, PriceSheet
from llmmath.beyond import rack_physics, serving_systems
from llmmath.core import capacity, collectives, data, serving
from llmmath.core._checks import FloatArray
from llmmath.core.deployment import Deployment
from llmmath.core.models import get_model
from llmmath.core.setting import Setting
from llmmath.core.units import scientific
from llmmath.display import pages
from llmmath.display.numbers import shown

USD_PER_CHIP_HOUR = 2.0  # the chapter's example rent
UTILISATION = 0.5  # busy half the time
LLAMA_PARAMS, LLAMA_TOKENS = 70e9, 15e12  # Llama-3-70B's training run


@dataclass(frozen=True)
class TrainingRun:
    """What a training run costs: Llama-3-70B on 15T tokens, 16,384 H100 at 40% MFU."""

    llama_flops: str
    llama_days: str
    llama_rent_musd: str  # at USD 2 per H100-hour
    llama_tpp: str  # tokens per parameter
    llama_tpp_x: str  # over the rule of thumb's 20


@dataclass(frozen=True)
class Chinchilla:
    """A table and a fit that disagree: Hoffmann's rounded fit against Besiroglu's refit."""

    loss_70b: str  # Chinchilla (70B on 1.4T) under the rounded fit
    fit_n_chinchilla_b: str
    fit_tpp_chinchilla: str
    fit_tpp_1e21: str
    fit_tpp_1e26: str
    refit_e: str
    refit_a: str
    refit_b: str
    refit_alpha: str
    refit_beta: str
    refit_n_b: str
    refit_tpp: str
    refit_tpp_1e21: str
    refit_tpp_1e26: str


@dataclass(frozen=True)
class Lifetime:
    """Training plus serving: the cheapest model for Chinchilla's loss under the refit."""

    target: float  # Chinchilla 70B on 1.4T tokens, under the refit
    total_demands: tuple[float, ...]  # lifetime tokens, one curve each in the figure
    figure_caption: str
    plain: scaling.LifetimeCompute  # no inference
    served: scaling.LifetimeCompute  # 1e13 lifetime tokens
    heavy: scaling.LifetimeCompute  # 1e14 lifetime tokens
    new: tuple[scaling.LifetimeCompute, ...]  # the three optima under the refit
    old: tuple[scaling.LifetimeCompute, ...]  # the same under Hoffmann's fit
    moved: tuple[float, ...]  # refit's optimum size over Hoffmann's, each demand
    llama_demand_value: float  # lifetime tokens that make 70B cheapest for Llama-3's loss
    old_llama_demand_value: float  # the same under Hoffmann's fit
    target_text: str
    plain_n_b: str
    plain_tpp: str
    served_n_b: str
    served_tpp: str
    heavy_n_b: str
    heavy_tpp_0f: str
    heavy_tpp: str
    heavy_tpp_x: str  # over the rule of thumb's 20
    heavy_factor: str  # over the fit's own compute-optimal ratio at the same loss
    saving_heavy: str
    heavy_train_extra: str
    llama_loss: str
    llama_demand: str
    old_plain_b: str
    old_served_b: str
    old_heavy_b: str
    old_plain_tpp: str
    old_served_tpp: str
    old_heavy_tpp: str
    moved_lo: str
    moved_hi: str
    old_llama_demand: str
    demand_moved: str


@dataclass(frozen=True)
class Reinforcement:
    """The RL factor: 1e13 serving and 1e13 rollout tokens, inference FLOPs weighted 3."""

    params_b: str
    tokens_per_param: str
    factor: str
    batch: str  # the decode batch whose MFU is a third of training's 40%
    decode_mfu_pct: str
    batch1_mfu_pct: str
    batch1_weight: str


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


@dataclass(frozen=True)
class SheetReading:
    """Reading a price sheet like an engineer: ranges, and DeepSeek's published day."""

    table: str  # HTML, every sheet
    day: FleetDay
    ds_mfu: tuple[float, float]
    ds_read: dict[str, pricing.Range]  # active parameters by dtype over ds_mfu
    gemini_active_lo_b: str
    gemini_active_hi_b: str
    gemini_spread: str
    gemini_kv_lo_kb: str
    gemini_kv_hi_kb: str
    gemini_input_usd: str
    gemini_long_pct: str
    assumed_mfu: str
    assumed_rent: str
    assumed_markup: str
    assumed_context_gap: str
    ds_cost: str
    ds_revenue: str
    ds_margin: str
    ds_markup: str
    ds_bf16_lo_b: str
    ds_bf16_hi_b: str
    ds_fp8_lo_b: str
    ds_fp8_hi_b: str
    ds_params_b: str
    r1_in_usd: str
    ds_pub_revenue: str
    ds_pub_margin: str


@dataclass(frozen=True)
class Pools:
    """Separate pools for prefill and decode: Llama-3-70B's floors and DeepSeek's day."""

    ds_day: serving_systems.PublishedPools
    pools: serving_systems.Pools
    table: str  # markdown
    ds_mix: str
    ds_hits: str
    ds_prefill_nodes: str
    ds_decode_nodes: str
    ds_sum_nodes: str
    ds_fleet_nodes: str
    ds_gap_nodes: str
    nic_gb_s: str
    ds_node_ratio: str
    ds_prefill_ep: str
    ds_decode_ep: str
    prefill_rate: str
    decode_rate: str
    rate_ratio: str
    pool_prefill_chips: str
    pool_decode_chips: str
    pool_decode_share: str
    stall_steps: str
    kv_prompt_mb: str
    kv_move_ms: str
    prefill_2k_ms: str
    rag_decode_share: str


@dataclass(frozen=True)
class Energy:
    """Joules per token: Llama-3-70B on a DGX H100 node at 2,048 tokens, and DeepSeek's day."""

    energy_batches: FloatArray
    energy: rack_physics.ServingEnergy
    joules_out: dict[int, float]  # joules per output token by batch
    share: float  # power's share of the USD 2 rent
    share_high: float  # at the dearest state's industrial price
    share_low: float  # at a hyperscaler's PUE
    share_by_batch: FloatArray
    fleet: rack_physics.FleetDayEnergy
    step64_ms: str
    dgx_kw: str
    watts_per_gpu: str
    pue: str
    pue_low: str
    kw_per_gpu: str
    usd_per_kwh: str
    cents_kwh_high: str
    joules_batch1: str
    joules_batch64: str
    joules_batch256: str
    joules_critical: str
    joules_input: str
    joules_64_over_256: str
    joules_1_over_critical: str
    power_bill: str
    share_pct: str
    share_high_pct: str
    share_low_pct: str
    rent_quarter: str
    ds_mwh: str
    ds_j_token: str
    ds_j_output: str
    ds_tokens_b: str
    ds_power_usd: str
    ds_power_pct: str


@dataclass(frozen=True)
class CheckYourself:
    """Check yourself 1 (13B on 2T tokens, 1,024 H100 at 45%) and 3 (a sheet's ratio)."""

    check3_critical: float
    check3_ratio: float
    peak_tflops: str
    flops: str  # in units of 1e23
    per_chip: str  # in units of 1e14 FLOP/s
    seconds: str  # in units of 1e5 s
    days: str
    hours: str
    check3_r: str
    check3_dense: str
    check3_moe_bound: str
    check3_moe: str
    exercise: Markdown


@dataclass(frozen=True)
class Numbers:
    training: TrainingRun
    chinchilla: Chinchilla
    lifetime: Lifetime
    rl: Reinforcement
    serving: ServingCost
    long: LongContext
    traffic: Traffic
    gemini: Gemini31
    v32: DeepSeekV32
    agent: AgentCheck
    sheets: SheetReading
    pools: Pools
    energy: Energy
    check: CheckYourself


@functools.cache
def numbers() -> Numbers:
    """Every value the over-training and pricing chapter shows, in page order."""
    lifetime = _lifetime()
    serving_cost = _serving_cost()
    gemini = _gemini31()
    return Numbers(
        training=_training_run(),
        chinchilla=_chinchilla(),
        lifetime=lifetime,
        rl=_reinforcement(lifetime),
        serving=serving_cost,
        long=_long_context(),
        traffic=_traffic(serving_cost),
        gemini=gemini,
        v32=_deepseek_v32(),
        agent=_agent_check(gemini),
        sheets=_sheet_reading(),
        pools=_pools(serving_cost),
        energy=_energy(serving_cost),
        check=_check_yourself(),
    )


def _training_run() -> TrainingRun:
    flop = scaling.training_flops(LLAMA_PARAMS, LLAMA_TOKENS)
    seconds = scaling.training_time_s(flop, 16384, "H100", 0.40)
    rent = scaling.training_cost_usd(flop, "H100", 0.40, USD_PER_CHIP_HOUR)
    return TrainingRun(
        llama_flops=scientific(float(flop), 3),
        llama_days=shown.fixed(seconds / 86400, 1),
        llama_rent_musd=shown.fixed(rent / 1e6, 1),
        llama_tpp=shown.fixed(LLAMA_TOKENS / LLAMA_PARAMS),
        llama_tpp_x=shown.fixed(
            LLAMA_TOKENS / LLAMA_PARAMS / scaling.RULE_OF_THUMB_TOKENS_PER_PARAM
        ),
    )


def _chinchilla() -> Chinchilla:
    hoffmann = scaling.HOFFMANN_FIT  # the paper's rounded coefficients, the section's subject
    at_chinchilla = scaling.compute_optimal(5.76e23, hoffmann)
    # Besiroglu et al.'s refit of the same data: the package's default from here on.
    refit = scaling.CHINCHILLA_FIT
    refit_at_chinchilla = scaling.compute_optimal(5.76e23)
    return Chinchilla(
        loss_70b=shown.fixed(scaling.loss(70e9, 1.4e12, hoffmann), 3),
        fit_n_chinchilla_b=shown.fixed(at_chinchilla.params / 1e9),
        fit_tpp_chinchilla=shown.fixed(at_chinchilla.tokens_per_param),
        fit_tpp_1e21=shown.fixed(scaling.compute_optimal(1e21, hoffmann).tokens_per_param),
        fit_tpp_1e26=shown.fixed(scaling.compute_optimal(1e26, hoffmann).tokens_per_param),
        refit_e=shown.fixed(refit.E, 3),
        refit_a=shown.fixed(refit.A),
        refit_b=shown.fixed(refit.B),
        refit_alpha=shown.fixed(refit.alpha, 3),
        refit_beta=shown.fixed(refit.beta, 3),
        refit_n_b=shown.fixed(refit_at_chinchilla.params / 1e9),
        refit_tpp=shown.fixed(refit_at_chinchilla.tokens_per_param),
        refit_tpp_1e21=shown.fixed(scaling.compute_optimal(1e21).tokens_per_param),
        refit_tpp_1e26=shown.fixed(scaling.compute_optimal(1e26).tokens_per_param),
    )


DEMANDS = np.logspace(11, 17, 480)  # lifetime tokens searched for the one that makes 70B best


def _demand_for_70b(loss: float, fit: scaling.ChinchillaFit) -> float:
    """The lifetime demand at which 70B is the cheapest way to ``loss`` (on DEMANDS' grid)."""
    sizes = scaling.inference_aware_optimum(loss, DEMANDS, fit=fit).params
    return float(DEMANDS[np.argmin(np.abs(np.log(sizes / 70e9)))])


def _lifetime() -> Lifetime:
    target = scaling.CHINCHILLA_TARGET_LOSS  # Chinchilla 70B on 1.4T tokens, under the refit
    plain = scaling.inference_aware_optimum(target, 0.0)
    served = scaling.inference_aware_optimum(target, 1e13)
    heavy = scaling.inference_aware_optimum(target, 1e14)
    heavy_tpp = float(heavy.tokens_per_param)
    as_served = scaling.lifetime_compute(plain.params, target, 1e14)
    llama_fit_loss = float(scaling.loss(70e9, 15e12))
    llama_demand = _demand_for_70b(llama_fit_loss, scaling.CHINCHILLA_FIT)
    # The same numbers under Hoffmann's rounded fit (at its own Chinchilla loss, 1.937): how
    # much the refit moves them.
    hoffmann = scaling.HOFFMANN_FIT
    old_target = round(float(scaling.loss(70e9, 1.4e12, hoffmann)), 3)
    old = tuple(
        scaling.inference_aware_optimum(old_target, d, fit=hoffmann) for d in (0.0, 1e13, 1e14)
    )
    new = (plain, served, heavy)
    moved = tuple(float(n.params / o.params) for n, o in zip(new, old, strict=True))
    old_llama_demand = _demand_for_70b(float(scaling.loss(70e9, 15e12, hoffmann)), hoffmann)
    total_demands = (0.0, 1e12, 1e13, 1e14)
    return Lifetime(
        target=target,
        total_demands=total_demands,
        figure_caption=(
            "Training plus lifetime inference FLOPs of every model that reaches loss "
            f"{target} under the Chinchilla fit, one curve per lifetime demand; dots mark each "
            "curve's minimum and its tokens per parameter. Left of the minimum a model is too "
            "small (it needs absurd amounts of data); right of it, too big to serve. More "
            "demand moves the minimum left."
        ),
        plain=plain,
        served=served,
        heavy=heavy,
        new=new,
        old=old,
        moved=moved,
        llama_demand_value=llama_demand,
        old_llama_demand_value=old_llama_demand,
        target_text=shown.fixed(target, 3),
        plain_n_b=shown.fixed(plain.params / 1e9),
        plain_tpp=shown.fixed(plain.tokens_per_param),
        served_n_b=shown.fixed(served.params / 1e9),
        served_tpp=shown.fixed(served.tokens_per_param),
        heavy_n_b=shown.fixed(heavy.params / 1e9, 1),
        heavy_tpp_0f=shown.fixed(heavy_tpp),
        heavy_tpp=shown.grouped(heavy_tpp),
        heavy_tpp_x=shown.fixed(heavy_tpp / scaling.RULE_OF_THUMB_TOKENS_PER_PARAM),
        # Against the fit's own compute-optimal ratio at the same loss (the RL section's
        # yardstick), not the rule of thumb's 20, which this fit does not give.
        heavy_factor=shown.fixed(scaling.overtraining_factor(target, 1e14)),
        saving_heavy=shown.percent(1 - heavy.total_flops / as_served.total_flops),
        heavy_train_extra=shown.fixed(heavy.training_flops / plain.training_flops, 1),
        llama_loss=shown.fixed(llama_fit_loss, 3),
        llama_demand=scientific(llama_demand),
        old_plain_b=shown.fixed(old[0].params / 1e9),
        old_served_b=shown.fixed(old[1].params / 1e9),
        old_heavy_b=shown.fixed(old[2].params / 1e9),
        old_plain_tpp=shown.grouped(old[0].tokens_per_param),
        old_served_tpp=shown.grouped(old[1].tokens_per_param),
        old_heavy_tpp=shown.grouped(old[2].tokens_per_param),
        moved_lo=shown.fixed(min(moved), 1),
        moved_hi=shown.fixed(max(moved), 1),
        old_llama_demand=scientific(old_llama_demand),
        demand_moved=shown.fixed(llama_demand / old_llama_demand),
    )


TRAINING_MFU = 0.40


def _reinforcement(lifetime: Lifetime) -> Reinforcement:
    target = lifetime.target
    rl = scaling.inference_aware_optimum(target, 1e13, 1e13, inference_flop_weight=3.0)
    factor = scaling.overtraining_factor(target, 1e13, 1e13, inference_flop_weight=3.0)
    # The weight 3 read as an MFU: decode at a third of training's 40%, and the floor's batch
    # there.
    node = Deployment(get_model("Llama-3-70B"), get_chip("H100"), 8)
    batches = np.arange(1.0, 301.0)
    steps = batching.decode_step(node, batches, 2048)
    mfus = np.asarray(batching.mfu(steps.flops, steps.stage_s, node))
    decode_mfu = TRAINING_MFU / 3.0
    return Reinforcement(
        params_b=shown.fixed(rl.params / 1e9, 1),
        tokens_per_param=shown.fixed(rl.tokens_per_param),
        factor=shown.fixed(factor),
        batch=shown.fixed(batches[np.argmin(np.abs(mfus - decode_mfu))]),
        decode_mfu_pct=shown.fixed(100 * decode_mfu),
        batch1_mfu_pct=shown.fixed(100 * float(mfus[0]), 2),
        batch1_weight=shown.grouped(TRAINING_MFU / float(mfus[0])),
    )


def _serving_cost() -> ServingCost:
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
        name: float(pricing.get_price_sheet(name).output_input_ratio)
        for name in pricing.list_price_sheets()
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


def _long_context() -> LongContext:
    what_if = Deployment(pricing.with_context_limit("Llama-3-70B", 1_000_000), get_chip("H100"), 8)
    # Past T_c no batch is compute-bound, so the cheapest batch is the largest that fits.
    long_batch = capacity.max_batch(what_if, 8192)
    long = pricing.long_context_surcharge(what_if, long_batch, 8192, 262_144)
    sheets = [pricing.get_price_sheet(name) for name in pricing.list_price_sheets()]
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


AGENTIC_CONTEXT = 65_536  # tokens of context of 2026 agentic traffic


def _kv_from_batch(
    setting: Setting, batch: float
) -> tuple[serving.DecodeStep, npt.NDArray[np.bool_]]:
    """Every batch up to ``batch``'s steps, and where each reads more KV cache than weights."""
    steps = setting.step(np.arange(1.0, batch + 1.0))
    return steps, np.asarray(steps.kv_read_s > steps.weight_read_s)


def _traffic(serving_cost: ServingCost) -> Traffic:
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


def _gemini31() -> Gemini31:
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


def _deepseek_v32() -> DeepSeekV32:
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
    v32_kv_s = float(batching.decode_step(v32_node, 1, AGENTIC_CONTEXT).kv_read_s)
    v3_kv_s = float(batching.decode_step(_fp8_node("DeepSeek-V3"), 1, AGENTIC_CONTEXT).kv_read_s)
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


def _agent_check(gemini: Gemini31) -> AgentCheck:
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


def _sheet_table() -> str:
    """Every dated price sheet as the page's HTML table, with its note."""
    rows = []
    names = pricing.list_price_sheets()
    for name in names:
        s = pricing.get_price_sheet(name)
        tier = (
            f"{s.long_input_usd_per_million:g} / {s.long_output_usd_per_million:g}"
            if s.has_long_tier
            else "—"
        )
        cells = (
            s.model,
            s.vendor,
            s.source_date,
            f"{s.input_usd_per_million:g}",
            f"{s.output_usd_per_million:g}",
            f"{s.output_input_ratio:.1f}×",
            tier,
            "yes" if s.checked else "no",
        )
        rows.append(
            "<tr>"
            + "".join(f"<td style='padding:2px 10px'>{cell}</td>" for cell in cells)
            + "</tr>"
        )
    head = (
        "model",
        "vendor",
        "as of",
        "input",
        "output",
        "out/in",
        "&gt; 200k in / out",
        "re-checked",
    )
    unchecked = sum(not pricing.get_price_sheet(name).checked for name in names)
    return (
        "<table><tr>"
        + "".join(f"<th style='padding:2px 10px'>{h}</th>" for h in head)
        + "</tr>"
        + "".join(rows)
        + "</table>"
        "<p><small>USD per million tokens, as published on the date given "
        "(<code>src/llmmath/data/api_prices.toml</code> records each source; prices change, "
        "check the vendor's page before quoting one). <em>re-checked</em>: whether the price "
        "was compared with the vendor's page when it was recorded (<code>checked</code>); "
        f"{unchecked} of {len(names)} were transcribed from the course's "
        "reference sheet on offline machines and not re-checked.</small></p>"
    )


def _span(assumed: float | tuple[float, float]) -> tuple[float, float]:
    """An assumption's range, a single value as a range of one."""
    return assumed if isinstance(assumed, tuple) else (assumed, assumed)


def _sheet_reading() -> SheetReading:
    gemini = pricing.read_price_sheet("Gemini 2.5 Pro")
    kv_bytes = gemini.kv_bytes_per_token
    if kv_bytes is None:  # the sheet has a long-context tier, so its surcharge bounds the KV
        raise ValueError("Gemini 2.5 Pro's sheet lost its long-context tier")
    assume = gemini.assumptions
    mfu, rent = _span(assume.mfu), _span(assume.usd_per_chip_hour)
    markup, gap = _span(assume.markup), _span(assume.context_gap_tokens)
    day = pricing.get_fleet_day()
    day_cost = pricing.fleet_day_cost_usd(day.nodes, day.gpus_per_node, day.usd_per_gpu_hour)
    r1 = pricing.get_price_sheet("DeepSeek-R1")
    day_revenue = pricing.fleet_day_revenue_usd(day, r1)
    margin = float(pricing.cost_profit_margin(day_revenue, day_cost))
    # DeepSeek's input price read both ways: MFU 30-60% of the H800's peak (an H100's dense
    # peak) in bf16 and in fp8, at the day's blended markup and USD 2 per GPU-hour.
    ds_mfu = (0.3, 0.6)

    def active_params(dtype: str) -> pricing.Range:
        return pricing.range_over(
            lambda mfu: pricing.active_params_from_input_price(
                r1.input_usd_per_million, "H100", USD_PER_CHIP_HOUR, mfu, 1 + margin, dtype
            ),
            mfu=ds_mfu,
        )

    ds_read = {dtype: active_params(dtype) for dtype in ("bf16", "fp8")}
    at_half = pricing.active_params_from_input_price(
        r1.input_usd_per_million, "H100", USD_PER_CHIP_HOUR, 0.5, 1 + margin
    )
    return SheetReading(
        table=_sheet_table(),
        day=day,
        ds_mfu=ds_mfu,
        ds_read=ds_read,
        gemini_active_lo_b=shown.fixed(gemini.active_params.low / 1e9),
        gemini_active_hi_b=shown.fixed(gemini.active_params.high / 1e9),
        gemini_spread=shown.fixed(gemini.active_params.spread),
        gemini_kv_lo_kb=shown.fixed(kv_bytes.low / 1e3),
        gemini_kv_hi_kb=shown.fixed(kv_bytes.high / 1e3),
        gemini_input_usd=format(gemini.sheet.input_usd_per_million, "g"),
        gemini_long_pct=shown.fixed(100 * (gemini.sheet.long_output_surcharge - 1)),
        assumed_mfu=f"{100 * mfu[0]:.0f}–{100 * mfu[1]:.0f}%",
        assumed_rent=f"{rent[0]:g}–{rent[1]:g}",
        assumed_markup=f"{markup[0]:g}–{markup[1]:g}",
        assumed_context_gap=f"{gap[0] / 1e3:.0f}k–{gap[1] / 1e3:.0f}k",
        ds_cost=shown.grouped(day_cost),
        ds_revenue=shown.grouped(day_revenue),
        ds_margin=shown.percent(margin),
        ds_markup=shown.fixed(1 + margin, 2),
        ds_bf16_lo_b=shown.fixed(ds_read["bf16"].low / 1e9),
        ds_bf16_hi_b=shown.fixed(ds_read["bf16"].high / 1e9),
        ds_fp8_lo_b=shown.fixed(ds_read["fp8"].low / 1e9),
        ds_fp8_hi_b=shown.fixed(ds_read["fp8"].high / 1e9),
        ds_params_b=shown.fixed(float(at_half) / 1e9),
        r1_in_usd=format(r1.input_usd_per_million, "g"),
        ds_pub_revenue=shown.grouped(day.published_revenue_usd),
        ds_pub_margin=shown.percent(day.published_cost_profit_margin),
    )


def _pools(serving_cost: ServingCost) -> Pools:
    llama_node = serving_cost.llama8
    ds_day = serving_systems.deepseek_pools()
    ds_nodes = ds_day.prefill_nodes + ds_day.decode_nodes
    ds_decode_share = shown.fixed(100 * ds_day.decode_nodes / ds_nodes)
    spec = data.table("systems")["deepseek_serving"]
    pools = serving_systems.disaggregated_pools(
        llama_node,
        ds_day.input_tokens_per_s,
        ds_day.output_tokens_per_s,
        64,
        2048,
        ds_day.cache_hit_fraction,
    )
    prefill_rate = shown.grouped(pools.prefill_tokens_per_s_per_chip)
    decode_rate = shown.grouped(pools.decode_tokens_per_s_per_chip)
    prefill_chips = shown.grouped(pools.prefill_chips)
    decode_chips = shown.grouped(pools.decode_chips)
    decode_share = shown.fixed(100 * pools.decode_share)
    kv_prompt = 2048 * llama_node.model.kv_bytes_per_token(llama_node.kv_dtype)
    kv_move_s = collectives.point_to_point_time_s(kv_prompt / 8, "H100", across_domains=True)
    rag = serving_systems.disaggregated_pools(llama_node, 10.0, 1.0, 64, 2048)
    rows = [
        f"| Llama-3-70B, 8 H100 (floors) | {prefill_rate} per chip | {decode_rate} per chip "
        f"| {prefill_chips} chips | {decode_chips} chips | {decode_share}% |",
        f"| DeepSeek-V3/R1, H800 (measured) "
        f"| {spec['prefill_input_tokens_per_s_per_node']:,.0f} per node, cache hits included "
        f"| {spec['decode_output_tokens_per_s_per_node']:,.0f} per node "
        f"| {ds_day.prefill_nodes:.1f} nodes | {ds_day.decode_nodes:.1f} nodes "
        f"| {ds_decode_share}% |",
    ]
    table = "\n".join(
        [
            "| serving | prefill rate (input tokens/s) | decode rate (output tokens/s) "
            "| prefill pool | decode pool | decode share |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    return Pools(
        ds_day=ds_day,
        pools=pools,
        table=table,
        ds_mix=shown.fixed(ds_day.input_output_ratio, 1),
        ds_hits=shown.fixed(100 * ds_day.cache_hit_fraction),
        ds_prefill_nodes=shown.fixed(ds_day.prefill_nodes, 1),
        ds_decode_nodes=shown.fixed(ds_day.decode_nodes, 1),
        ds_sum_nodes=shown.fixed(ds_nodes, 1),
        ds_fleet_nodes=shown.fixed(ds_day.fleet_nodes, 2),
        ds_gap_nodes=shown.fixed(ds_nodes - ds_day.fleet_nodes, 2),
        nic_gb_s=shown.fixed(get_chip("H100").scale_out_bandwidth_bytes_per_s / 1e9),
        ds_node_ratio=shown.fixed(
            spec["prefill_input_tokens_per_s_per_node"]
            / spec["decode_output_tokens_per_s_per_node"],
            1,
        ),
        ds_prefill_ep=str(spec["prefill_ep"]),
        ds_decode_ep=str(spec["decode_ep"]),
        prefill_rate=prefill_rate,
        decode_rate=decode_rate,
        rate_ratio=shown.fixed(
            pools.prefill_tokens_per_s_per_chip / pools.decode_tokens_per_s_per_chip, 1
        ),
        pool_prefill_chips=prefill_chips,
        pool_decode_chips=decode_chips,
        pool_decode_share=decode_share,
        stall_steps=shown.fixed(serving_systems.prefill_stall_steps(llama_node, 8192, 64, 2048)),
        kv_prompt_mb=shown.fixed(kv_prompt / 1e6),
        kv_move_ms=shown.fixed(float(kv_move_s) * 1e3, 1),
        prefill_2k_ms=shown.fixed(float(serving.prefill(llama_node, 2048, 1).time_s) * 1e3),
        rag_decode_share=shown.fixed(100 * rag.decode_share),
    )


def _energy(serving_cost: ServingCost) -> Energy:
    llama8 = serving_cost.llama8
    power = rack_physics.electricity()
    dgx = rack_physics.get_rack("DGX H100 node (air)")
    crit_batch = round(float(capacity.step_critical_batch(llama8)))
    energy_batches = np.array([1.0, 64.0, 256.0, crit_batch])
    energy = rack_physics.serving_energy(
        llama8, energy_batches, 2048, dgx, usd_per_chip_hour=USD_PER_CHIP_HOUR
    )
    joules_out = {
        int(b): float(j) for b, j in zip(energy_batches, energy.output_j_per_token, strict=True)
    }
    step64_s = float(batching.decode_step(llama8, 64, 2048).stage_s)
    bill = float(rack_physics.power_usd_per_chip_hour(dgx.watts_per_gpu))
    share = float(energy.power_share)
    share_high = float(
        rack_physics.power_share_of_rent(
            dgx.watts_per_gpu, USD_PER_CHIP_HOUR, usd_per_kwh=power.usd_per_kwh_high
        )
    )
    share_low = float(
        rack_physics.power_share_of_rent(dgx.watts_per_gpu, USD_PER_CHIP_HOUR, pue=power.pue_low)
    )
    share_by_batch = np.asarray(
        energy.output_power_usd_per_million / energy.cost.output_usd_per_million
    )
    fleet = rack_physics.fleet_day_energy(dgx)
    return Energy(
        energy_batches=energy_batches,
        energy=energy,
        joules_out=joules_out,
        share=share,
        share_high=share_high,
        share_low=share_low,
        share_by_batch=share_by_batch,
        fleet=fleet,
        step64_ms=shown.fixed(step64_s * 1e3, 2),
        dgx_kw=shown.fixed(dgx.rack_power_w / 1e3, 1),
        watts_per_gpu=shown.grouped(dgx.watts_per_gpu),
        pue=shown.fixed(power.pue, 2),
        pue_low=shown.fixed(power.pue_low, 2),
        kw_per_gpu=shown.fixed(dgx.watts_per_gpu / 1e3, 3),
        usd_per_kwh=shown.fixed(power.usd_per_kwh, 4),
        cents_kwh_high=shown.fixed(100 * power.usd_per_kwh_high, 2),
        joules_batch1=shown.fixed(joules_out[1]),
        joules_batch64=shown.fixed(joules_out[64], 2),
        joules_batch256=shown.fixed(joules_out[256], 2),
        joules_critical=shown.fixed(joules_out[crit_batch], 2),
        joules_input=shown.fixed(energy.input_j_per_token[0], 2),
        joules_64_over_256=shown.fixed(joules_out[64] / joules_out[256], 1),
        joules_1_over_critical=shown.fixed(joules_out[1] / joules_out[crit_batch]),
        power_bill=shown.fixed(bill, 3),
        share_pct=shown.fixed(100 * share, 1),
        share_high_pct=shown.fixed(100 * share_high),
        share_low_pct=shown.fixed(100 * share_low, 1),
        rent_quarter=shown.fixed(bill / 0.25, 2),
        ds_mwh=shown.fixed(fleet.energy_kwh / 1e3, 1),
        ds_j_token=shown.fixed(fleet.j_per_token, 2),
        ds_j_output=shown.fixed(fleet.j_per_output_token, 2),
        ds_tokens_b=shown.grouped((fleet.day.input_tokens + fleet.day.output_tokens) / 1e9),
        ds_power_usd=shown.grouped(fleet.power_usd),
        ds_power_pct=shown.fixed(100 * fleet.power_share, 1),
    )


def _check_yourself() -> CheckYourself:
    flop = scaling.training_flops(13e9, 2e12)
    seconds = float(scaling.training_time_s(flop, 1024, "H100", 0.45))
    peak = get_chip("H100").peak("bf16")
    # Check yourself 3: the sheet's ratio read as a batch, dense and for a DeepSeek-V3-like MoE.
    critical, ratio = 300.0, 15.0 / 3.0
    sparsity = moe.sparsity("DeepSeek-V3", "experts")  # E/k = 256/8
    return CheckYourself(
        check3_critical=critical,
        check3_ratio=ratio,
        peak_tflops=shown.grouped(peak / 1e12),
        flops=shown.fixed(float(flop) / 1e23, 2),
        per_chip=shown.fixed(peak * 0.45 / 1e14, 2),
        seconds=shown.fixed(seconds / 1e5, 2),
        days=shown.fixed(seconds / 86400, 1),
        hours=shown.grouped(scaling.training_chip_hours(flop, "H100", 0.45)),
        check3_r=shown.fixed(ratio),
        check3_dense=shown.grouped(critical / ratio),
        check3_moe_bound=shown.grouped(critical * sparsity),
        check3_moe=shown.grouped(critical * sparsity / ratio),
        exercise=pages.exercise_link(
            "overtraining_pricing", "the overtraining and pricing exercise"
        ),
    )

"""What a million tokens costs to serve, and what a dated price sheet does and does not reveal.

**Forward: from hardware to a price.** A :class:`~llmmath.batching.Deployment` rents
``n`` chips at ``usd_per_chip_hour``. An *output* token costs its share of one decode step,
``price n t_decode / B`` (:func:`llmmath.batching.decode_step`); an *input* token its share of
a prefill pass, ``price n t_prefill / (B_p S)`` (:func:`llmmath.batching.prefill`). Both are
divided by ``utilisation``, the fraction of rented hours the chips spend serving. The step
times are the batching chapter's roofline FLOORS, so these costs are floors too.

Why output costs more: a decode step reads every weight for one token per sequence, so below
the critical batch ``B*`` it is bandwidth-bound; a prompt is a batch of ``S`` tokens for the
weights, so prefill is compute-bound. Per token, with the same efficiency on both::

    output / input  ~  max(1, B* / B + T kv C / (2 P W))

(the second term: each output token also reads its own sequence's KV cache). Long contexts
cost more because that KV term grows with ``T`` and because fewer sequences fit in HBM, so
the weight read is shared by fewer tokens.

**Inverse: from a price sheet to the hardware.** A price is ``markup x cost``, and neither the
markup, the chip's rent nor its utilisation is published. So every deduction here is a
:class:`Range` over stated assumptions, never one number:

* active parameters from the input price (prefill at ``mfu`` of peak):
  ``P = p_in C mfu / (2 markup price_per_chip_s)``;
* the decode batch, as a fraction of ``B*``, from the output / input ratio;
* KV bytes per token from the long-context output surcharge:
  ``kv = (p_long - p_short) W / (markup price_per_chip_s (T_long - T_short))``.

What a price sheet cannot give: total parameters of an MoE (only active ones set FLOPs), the
chip, the parallelism, or the margin itself. And it may reflect strategy, not cost.

>>> from llmmath import pricing
>>> round(pricing.fleet_day_cost_usd(226.75, 8, 2.0))   # DeepSeek day 6: $87,072 per day
87072
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from llmmath.api_prices import (
    SHEET,
    FleetDay,
    PriceSheet,
    cost_profit_margin,
    fleet_day_cost_usd,
    fleet_day_revenue_usd,
    get_fleet_day,
    get_price_sheet,
    list_price_sheets,
    revenue_usd,
)
from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import (
    Count,
    Function,
    Instance,
    OneOf,
    Optional,
    Real,
    SequenceOf,
    span,
)
from llmmath.core.capacity import max_batch, step_critical_batch
from llmmath.core.chip_prices import cost_per_million_tokens_usd
from llmmath.core.contracts import (
    AMOUNT,
    FLAG,
    MAX_COUNT,
    NAME,
    POSITIVE,
    PROMPT,
    RESULT,
    SCALAR,
    SCALAR_FRACTION,
    SCALAR_MARKUP,
    SCALAR_POSITIVE,
    TOKENS,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import CHIP_NAME, Chip, get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.placement import DoesNotFitError
from llmmath.core.serving import decode_step, prefill
from llmmath.core.setting import Setting
from llmmath.core.units import SECONDS_PER_HOUR, TOKENS_PER_MILLION
from llmmath.memory_tiers import prefix_cache


# ---- a range, not a number ----------------------------------------------------------------
@dataclass(frozen=True)
@checked(low=SCALAR, high=SCALAR)
class Range:
    """What an assumption-laden deduction can say: somewhere from ``low`` to ``high``."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not self.low <= self.high:
            raise ValueError(f"Range needs low <= high; got {self.low!r} > {self.high!r}")

    @property
    def spread(self) -> float:
        """``high / low``: how many times apart the ends are (inf from 0 to above 0; 1 from 0
        to 0)."""
        if self.low == 0:
            return 1.0 if self.high == 0 else float("inf")
        return self.high / self.low

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int | float) and self.low <= value <= self.high


def _span(value: float | Sequence[float]) -> tuple[float, float]:
    """A number, or a ``(low, high)`` pair (a list or a tuple: its contract checked it)."""
    if isinstance(value, Sequence):
        return float(value[0]), float(value[1])
    return float(value), float(value)


@contract(formula=Function(example=revenue_usd), assumptions=span(SCALAR_POSITIVE))
def range_over(
    formula: Callable[..., float | FloatArray], **assumptions: float | Sequence[float]
) -> Range:
    """Evaluate ``formula`` at every corner of the assumption box (each a number or a
    ``(low, high)`` pair) and return the smallest and largest result. Right for formulas that
    are monotonic in each assumption, as every one in this module is."""
    names = list(assumptions)
    corners = itertools.product(*(_span(assumptions[name]) for name in names))
    values = [float(formula(**dict(zip(names, corner, strict=True)))) for corner in corners]
    return Range(min(values), max(values))


# ---- forward: serving cost from hardware --------------------------------------------------
@dataclass(frozen=True)
@checked(**each(RESULT, "batch context prefill_batch input_usd_per_million output_usd_per_million"))
class ServingCost:
    """Cost floors per million input and output tokens of one deployment at one setting."""

    deployment: Deployment
    #: Decode batch (sequences per step) and the context each output token reads.
    batch: FloatArray
    context: FloatArray
    #: Prompts prefilled together in one pass.
    prefill_batch: FloatArray
    input_usd_per_million: FloatArray
    output_usd_per_million: FloatArray

    @property
    def output_input_ratio(self) -> FloatArray:
        """How many input tokens one output token costs as much as."""
        return self.output_usd_per_million / self.input_usd_per_million


@contract(context=PROMPT, prefill_batch=POSITIVE)
def serving_cost(
    deployment: Deployment,
    batch: ArrayLike,
    context: ArrayLike,
    *,
    prefill_batch: ArrayLike | None = None,
    usd_per_chip_hour: ArrayLike | None = None,
    utilisation: ArrayLike = 1.0,
) -> ServingCost:
    """Cost per million input tokens (prefill of ``prefill_batch`` prompts of ``context``
    tokens in one pass) and per million output tokens (a decode step of ``batch`` sequences at
    ``context``), each ``rent of the chips x step time / tokens in the step / utilisation``.

    ``prefill_batch`` defaults to ``ceil(B* / context)`` prompts, enough tokens to make the
    pass compute-bound (a server groups short prompts; a long one fills a pass alone).
    ``usd_per_chip_hour`` defaults to the chip's example price (``data/chip_prices.toml``).
    Raises :class:`~llmmath.batching.DoesNotFitError` when the batch's KV caches do not fit.
    """
    dep = deployment
    price = as_floats(dep.chip_hour_usd if usd_per_chip_hour is None else usd_per_chip_hour)
    busy = as_floats(utilisation)
    step = decode_step(dep, batch, context)
    if prefill_batch is None:
        prefill_batch = np.ceil(step_critical_batch(dep) / np.maximum(step.context, 1.0))
    fill = prefill(dep, context, prefill_batch)
    output = (
        np.asarray(cost_per_million_tokens_usd(step.stage_s, step.batch, dep.n_chips, price)) / busy
    )
    tokens = fill.batch * fill.prompt_tokens
    input_ = np.asarray(cost_per_million_tokens_usd(fill.time_s, tokens, dep.n_chips, price)) / busy
    return ServingCost(
        deployment=dep,
        batch=step.batch,
        context=step.context,
        prefill_batch=fill.batch,
        input_usd_per_million=np.asarray(input_, dtype=np.float64),
        output_usd_per_million=np.asarray(output, dtype=np.float64),
    )


@contract()
def batch_that_fits(deployment: Deployment, batch: ArrayLike, context: ArrayLike) -> FloatArray:
    """``min(batch, max_batch(context))``: the batch a server can run at that context.
    Raises :class:`~llmmath.batching.DoesNotFitError` where not one sequence fits."""
    B = as_floats(batch)
    room = np.asarray(max_batch(deployment, context))
    if np.any(room < 1):
        raise DoesNotFitError(
            f"not one sequence of context {float(np.max(context)):g} fits beside "
            f"{deployment.model.name}'s weights on {deployment.n_chips} x "
            f"{deployment.chip.name}; use more chips",
            float("nan"),
        )
    return np.asarray(np.minimum(B, room), dtype=np.float64)


@dataclass(frozen=True)
@checked(short=Instance(ServingCost), long=Instance(ServingCost))
class LongContextSurcharge:
    """Serving cost at a short and a long context, each at the largest batch that fits."""

    short: ServingCost
    long: ServingCost

    @property
    def input_ratio(self) -> FloatArray:
        return self.long.input_usd_per_million / self.short.input_usd_per_million

    @property
    def output_ratio(self) -> FloatArray:
        return self.long.output_usd_per_million / self.short.output_usd_per_million


def _long_after_short(short_context: float, long_context: float) -> str | None:
    if long_context > short_context:
        return None
    return f"long_context must exceed short_context; got {long_context:g} <= {short_context:g}"


@contract(short_context=TOKENS, long_context=TOKENS, where=_long_after_short)
def long_context_surcharge(
    deployment: Deployment,
    batch: ArrayLike,
    short_context: float,
    long_context: float,
    *,
    usd_per_chip_hour: ArrayLike | None = None,
    utilisation: ArrayLike = 1.0,
) -> LongContextSurcharge:
    """How much more a token costs at ``long_context`` than at ``short_context``.

    The server runs ``min(batch, max_batch(T))`` sequences at each context (long caches crowd
    the HBM), so the long-context cost carries both causes: more KV bytes read per token and a
    weight read shared by fewer tokens.
    """
    dep = deployment
    costs = [
        serving_cost(
            dep,
            batch_that_fits(dep, batch, T),
            T,
            usd_per_chip_hour=usd_per_chip_hour,
            utilisation=utilisation,
        )
        for T in (float(short_context), float(long_context))
    ]
    return LongContextSurcharge(*costs)


@contract(max_context=Count(high=MAX_COUNT))
def with_context_limit(model: str | ModelConfig, max_context: int) -> ModelConfig:
    """A copy of ``model`` allowed ``max_context`` tokens (a what-if: same shape, longer
    context), named so that no one mistakes it for the released model."""
    spec = get_model(model)
    limit = int(max_context)
    return replace(spec, name=f"{spec.name} (context {limit:,}, what-if)", max_context=limit)


# ---- a workload: long contexts and prompt-cache hits (today's traffic, #43 item 5) -------
#: The share of a prompt found in the prompt cache: 0 (none) to 1.
SCALAR_SHARE = Real(low_open=False, high=1.0, scalar=True)
#: A worked setting: the chapter's 2023 chat (Llama-3-70B on 8 H100, 2,048 tokens).
SETTING = Instance(
    Setting,
    example=lambda: Setting(Deployment(get_model("Llama-3-70B"), get_chip("H100"), 8), 2048),
)


def _floor_setting(setting: Setting) -> str | None:
    if setting.overlap == "perfect":
        return None
    return f"setting must be a floor (overlap 'perfect'), as its costs are; got {setting.overlap!r}"


@dataclass(frozen=True)
@checked(
    setting=SETTING,
    **each(RESULT, "batch input_usd_per_million output_usd_per_million"),
    **each(RESULT, "cached_input_usd_per_million kv_read_share hold_s"),
    cache_hit_fraction=SCALAR,
    cached_option=NAME,
    compute_bound=FLAG,
)
class WorkloadCost:
    """Cost floors per million tokens of one setting's traffic: output at ``batch``, fresh
    input (a prefill of the whole context), and cached input (the prompt's KV held
    ``hold_s`` in the cheapest tier and brought back once, or recomputed if that is
    cheaper), with ``cache_hit_fraction`` of the prompt found in the cache."""

    setting: Setting
    batch: float
    input_usd_per_million: float
    output_usd_per_million: float
    cached_input_usd_per_million: float
    #: Where a cached prompt is cheapest to keep for ``hold_s`` (a tier, or "recompute").
    cached_option: str
    hold_s: float
    cache_hit_fraction: float
    #: The KV caches' share of the bytes the decode step reads at ``batch``.
    kv_read_share: float
    compute_bound: bool

    @property
    def blended_input_usd_per_million(self) -> float:
        h = self.cache_hit_fraction
        return (1 - h) * self.input_usd_per_million + h * self.cached_input_usd_per_million

    @property
    def output_input_ratio(self) -> float:
        """Output over fresh input, as a price sheet's two lines compare them."""
        return self.output_usd_per_million / self.input_usd_per_million

    @property
    def blended_output_input_ratio(self) -> float:
        """Output over the input a request pays on average once its cache hits are counted."""
        return self.output_usd_per_million / self.blended_input_usd_per_million

    @property
    def cached_input_share(self) -> float:
        """Cached input's cost over fresh input's: what a sheet's cached line should be."""
        return self.cached_input_usd_per_million / self.input_usd_per_million


@contract(
    setting=SETTING,
    batch=Optional(SCALAR_POSITIVE),
    cache_hit_fraction=SCALAR_SHARE,
    hold_s=SCALAR,
    usd_per_chip_hour=Optional(SCALAR_POSITIVE),
    utilisation=SCALAR_FRACTION,
    where=_floor_setting,
)
def workload_cost(
    setting: Setting,
    *,
    batch: float | None = None,
    cache_hit_fraction: float = 0.0,
    hold_s: float = 300.0,
    usd_per_chip_hour: float | None = None,
    utilisation: float = 1.0,
) -> WorkloadCost:
    """The setting's traffic costed at its context: decode at ``batch`` (default: the most
    sequences that fit, the cheapest batch past ``T_c``), input through
    :func:`serving_cost`, and a cache hit as the cheapest way to have the prompt's KV back
    after ``hold_s`` seconds (``llmmath.memory_tiers.prefix_cache``: held in a tier and
    reloaded once, or recomputed). Chip time is divided by ``utilisation``; storage rent
    is not. All floors. Raises ``DoesNotFitError`` where not one sequence fits."""
    dep, T = setting.deployment, setting.context
    B = float(batch_that_fits(dep, max_batch(dep, T) if batch is None else batch, T))
    price = dep.chip_hour_usd if usd_per_chip_hour is None else float(usd_per_chip_hour)
    cost = serving_cost(dep, B, T, usd_per_chip_hour=price, utilisation=utilisation)
    step = setting.step(B)
    prefix = prefix_cache(dep, T, hold_s, 1, usd_per_chip_hour=price)
    keep = np.asarray(prefix.hold_usd + prefix.reload_usd / utilisation, dtype=np.float64)
    usable = np.logical_and(prefix.fits, prefix.in_time)
    options = np.append(np.where(usable, keep, np.inf), np.inf)
    options[-1] = float(cost.input_usd_per_million) * T / TOKENS_PER_MILLION  # recompute
    best = int(np.argmin(options))
    return WorkloadCost(
        setting=setting,
        batch=B,
        input_usd_per_million=float(cost.input_usd_per_million),
        output_usd_per_million=float(cost.output_usd_per_million),
        cached_input_usd_per_million=float(options[best]) / T * TOKENS_PER_MILLION,
        cached_option=prefix.options[best],
        hold_s=float(hold_s),
        cache_hit_fraction=float(cache_hit_fraction),
        kv_read_share=float(step.kv_read_s / step.memory_s),
        compute_bound=bool(step.compute_bound),
    )


# ---- inverse: what a price sheet implies ---------------------------------------------------
@contract(input_usd_per_million=POSITIVE)
def active_params_from_input_price(
    input_usd_per_million: ArrayLike,
    chip: str | Chip,
    usd_per_chip_hour: ArrayLike,
    mfu: ArrayLike,
    markup: ArrayLike,
    dtype: str = "bf16",
) -> float | FloatArray:
    """Active parameters whose compute-bound prefill, at ``mfu`` of the chip's peak and sold
    at ``markup`` times cost, matches the input price: ``P = p C mfu / (2 markup price_s)``.
    Prompt attention FLOPs are left out, so this overstates P for long prompts."""
    p = as_floats(input_usd_per_million) / TOKENS_PER_MILLION
    C = get_chip(chip).peak(dtype)
    u = as_floats(mfu)
    price_s = as_floats(usd_per_chip_hour) / SECONDS_PER_HOUR
    return as_output(p * C * u / (2.0 * as_floats(markup) * price_s))


def _beyond_kv(output_input_ratio: ArrayLike, kv_term: ArrayLike) -> str | None:
    r, k = as_floats(output_input_ratio), as_floats(kv_term)
    if np.all(r - k > 1):
        return None
    return (
        "output_input_ratio must exceed 1 + kv_term: at or below it the price says decode "
        "is compute-bound and bounds the batch only from below, by the critical batch; "
        f"got ratio {float(np.min(r)):g} with kv_term {float(np.max(k)):g}"
    )


@contract(output_input_ratio=POSITIVE, critical_batch=POSITIVE, kv_term=AMOUNT, where=_beyond_kv)
def decode_batch_from_ratio(
    output_input_ratio: ArrayLike, critical_batch: ArrayLike, kv_term: ArrayLike = 0.0
) -> float | FloatArray:
    """The decode batch a price ratio implies if output and input carry the same markup:
    ``r = B* / B + kv_term`` gives ``B = B* / (r - kv_term)``.

    ``kv_term = T kv C / (2 P W)`` is the KV read per output token over its matmul FLOPs
    (0 ignores it; any positive value raises the implied batch). For a ratio at or below
    ``1 + kv_term`` decode would be compute-bound and the price gives only ``B >= B*``.
    """
    r, k = as_floats(output_input_ratio), as_floats(kv_term)
    return as_output(as_floats(critical_batch) / (r - k))


def _surcharge(
    short_output_usd_per_million: ArrayLike, long_output_usd_per_million: ArrayLike
) -> str | None:
    short, long = as_floats(short_output_usd_per_million), as_floats(long_output_usd_per_million)
    if np.all(long > short):
        return None
    return (
        "long_output_usd_per_million must exceed short_output_usd_per_million for a "
        f"surcharge; got {float(np.min(long)):g} <= {float(np.max(short)):g}"
    )


@contract(
    **each(POSITIVE, "short_output_usd_per_million long_output_usd_per_million"), where=_surcharge
)
def kv_bytes_from_surcharge(
    short_output_usd_per_million: ArrayLike,
    long_output_usd_per_million: ArrayLike,
    context_gap_tokens: ArrayLike,
    chip: str | Chip,
    usd_per_chip_hour: ArrayLike,
    markup: ArrayLike,
    bandwidth_efficiency: ArrayLike = 1.0,
) -> float | FloatArray:
    """KV bytes per token a long-context output surcharge pays for, if all of it is the extra
    KV read: ``kv = (p_long - p_short) W eff / (markup price_s (T_long - T_short))``.

    An output token at context T reads ``T kv`` bytes of its own cache, costing
    ``price_s T kv / W`` whatever the number of chips. The long tier's smaller batches also
    raise the cost, so the real ``kv`` is at most this.
    """
    short, long = as_floats(short_output_usd_per_million), as_floats(long_output_usd_per_million)
    gap = as_floats(context_gap_tokens)
    W = get_chip(chip).hbm_bandwidth_bytes_per_s * as_floats(bandwidth_efficiency)
    extra_per_token = (long - short) / TOKENS_PER_MILLION
    price_s = as_floats(usd_per_chip_hour) / SECONDS_PER_HOUR
    return as_output(extra_per_token * W / (as_floats(markup) * price_s * gap))


_SPANS = each(span(SCALAR_POSITIVE), "usd_per_chip_hour context_gap_tokens")


@dataclass(frozen=True)
@checked(chip=CHIP_NAME, mfu=span(SCALAR_FRACTION), markup=span(SCALAR_MARKUP), **_SPANS)
class Assumptions:
    """What a reader of a price sheet must assume; each is a number or a ``(low, high)`` span.

    Defaults: an H100-class chip rented for $2-6 per hour (``data/chip_prices.toml`` and the
    cloud list prices it quotes), prefill at 30-60% MFU (Llama 3 trained at 38-43%; Pope et al.
    2022 reached 76% on large-batch prefill), price 1-6.5x cost (DeepSeek's published day
    implies 6.45x at full list prices), a long-tier prompt 200k-500k tokens longer than a
    standard one.
    """

    chip: str = "H100"
    usd_per_chip_hour: float | tuple[float, float] = (2.0, 6.0)
    mfu: float | tuple[float, float] = (0.3, 0.6)
    markup: float | tuple[float, float] = (1.0, 6.5)
    context_gap_tokens: float | tuple[float, float] = (2e5, 5e5)

    def __post_init__(self) -> None:
        for name in [*_SPANS, "mfu", "markup"]:  # a (low, high) list is kept as a tuple
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True)
@checked(
    sheet=Instance(PriceSheet),
    assumptions=Instance(Assumptions),
    active_params=Instance(Range),
    decode_batch_fraction=SCALAR_FRACTION,
    kv_bytes_per_token=Optional(Instance(Range)),
    cannot_deduce=Instance(tuple),
)
class PriceSheetReading:
    """What one dated price sheet implies under :class:`Assumptions`, as ranges."""

    sheet: PriceSheet
    assumptions: Assumptions
    active_params: Range
    #: Decode batch as a fraction of the critical batch, ignoring KV reads (a lower bound).
    decode_batch_fraction: float
    #: KV bytes per token the long-tier output surcharge pays for (None: no tier).
    kv_bytes_per_token: Range | None
    cannot_deduce: tuple[str, ...]


CANNOT_DEDUCE = (
    "total parameters of an MoE (only active ones cost FLOPs)",
    "the chip, the number of chips and the parallelism",
    "the markup (a price is cost times an unpublished margin, maybe not the same on every line)",
    "whether a price follows cost at all, or demand and competition",
)


@contract(sheet=SHEET, assumptions=Instance(Assumptions, example=Assumptions))
def read_price_sheet(
    sheet: PriceSheet | str, assumptions: Assumptions | None = None
) -> PriceSheetReading:
    """Active parameters, decode batch and KV bytes per token that ``sheet`` implies, each
    over the whole box of ``assumptions``; and the list of what it cannot tell."""
    entry = get_price_sheet(sheet) if isinstance(sheet, str) else sheet
    a = assumptions or Assumptions()
    chip = get_chip(a.chip)

    def params(usd_per_chip_hour: float, mfu: float, markup: float) -> float | FloatArray:
        return active_params_from_input_price(
            entry.input_usd_per_million, chip, usd_per_chip_hour, mfu, markup
        )

    kv: Range | None = None
    if entry.has_long_tier:

        def kv_bytes(
            usd_per_chip_hour: float, markup: float, context_gap_tokens: float
        ) -> float | FloatArray:
            return kv_bytes_from_surcharge(
                entry.output_usd_per_million,
                entry.long_output_usd_per_million,
                context_gap_tokens,
                chip,
                usd_per_chip_hour,
                markup,
            )

        kv = range_over(
            kv_bytes,
            usd_per_chip_hour=a.usd_per_chip_hour,
            markup=a.markup,
            context_gap_tokens=a.context_gap_tokens,
        )
    return PriceSheetReading(
        sheet=entry,
        assumptions=a,
        active_params=range_over(
            params, usd_per_chip_hour=a.usd_per_chip_hour, mfu=a.mfu, markup=a.markup
        ),
        decode_batch_fraction=float(decode_batch_from_ratio(entry.output_input_ratio, 1.0)),
        kv_bytes_per_token=kv,
        cannot_deduce=CANNOT_DEDUCE,
    )


@contract(names=SequenceOf(OneOf(list_price_sheets)))
def output_input_ratios(names: Sequence[str] | None = None) -> dict[str, float]:
    """Output / input price ratio of each dated sheet."""
    return {name: get_price_sheet(name).output_input_ratio for name in names or list_price_sheets()}


__all__ = [
    "CANNOT_DEDUCE",
    "Assumptions",
    "FleetDay",
    "LongContextSurcharge",
    "PriceSheet",
    "PriceSheetReading",
    "Range",
    "ServingCost",
    "WorkloadCost",
    "active_params_from_input_price",
    "batch_that_fits",
    "cost_profit_margin",
    "decode_batch_from_ratio",
    "fleet_day_cost_usd",
    "fleet_day_revenue_usd",
    "get_fleet_day",
    "get_price_sheet",
    "kv_bytes_from_surcharge",
    "list_price_sheets",
    "long_context_surcharge",
    "output_input_ratios",
    "range_over",
    "read_price_sheet",
    "revenue_usd",
    "serving_cost",
    "with_context_limit",
    "workload_cost",
]

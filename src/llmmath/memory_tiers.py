"""Memory tiers: where a cached prefix should live (HBM, host DRAM, local SSD...), or be
recomputed, and what prompt caching vendors charge for holding one.

A cached prefix of ``S`` tokens (``S kv`` bytes) held ``t`` seconds and reused ``r`` times
costs ``S kv t c_tier`` to keep plus, per reuse, the chips' rent while it streams back at the
tier's bandwidth; recomputing it costs ``r`` prefills (:func:`llmmath.batching.prefill`). A
tier is a candidate only if the prefix fits in it and comes back faster than a prefill would
recompute it. Part of the KV-cache chapter: :mod:`llmmath.kv_cache` re-exports every name.

Every time is a FLOOR; every price is an EXAMPLE (``data/memory_tiers.toml``, each with its
source and date).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import data, serving
from llmmath.core._checks import FloatArray, as_floats, as_output, positive
from llmmath.core._constraints import AnyOf, Flag, Instance, OneOf, Optional, SequenceOf
from llmmath.core.contracts import (
    AMOUNT,
    NAME,
    NOTE,
    POSITIVE,
    PROMPT,
    RESULT,
    SCALAR,
    SCALAR_FRACTION,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.deployment import Deployment
from llmmath.core.models import check_context
from llmmath.core.units import SECONDS_PER_HOUR, TOKENS_PER_MILLION

#: What a tier list calls recomputing the prefix by prefill.
RECOMPUTE = "recompute"


# ---- memory tiers ------------------------------------------------------------------------------
@dataclass(frozen=True)
@checked(name=NAME, **each(SCALAR, "capacity_bytes bandwidth_bytes_per_s usd_per_byte_s"))
class MemoryTier:
    """A place a KV cache can be kept, per accelerator (see ``data/memory_tiers.toml``)."""

    name: str
    capacity_bytes: float
    bandwidth_bytes_per_s: float
    usd_per_byte_s: float
    source: str
    source_date: str


#: A tier parameter: a :class:`MemoryTier` or a tier's name (``list_tiers()``).
TIER = AnyOf((Instance(MemoryTier), OneOf(lambda: _tier_names())))


def _tier_names() -> list[str]:
    return list(_load_tiers()[0])


@dataclass(frozen=True)
@checked(
    name=NAME,
    vendor=NOTE,
    model=NAME,
    **each(
        SCALAR, "input_usd_per_mtok write_usd_per_mtok read_usd_per_mtok storage_usd_per_mtok_hour"
    ),
    ttl_s=SCALAR_POSITIVE,  # the write premium is spread over it
)
class PromptCachePrice:
    """A vendor's published prompt-cache prices (USD per million tokens) and time-to-live."""

    name: str
    vendor: str
    model: str
    input_usd_per_mtok: float
    write_usd_per_mtok: float
    read_usd_per_mtok: float
    storage_usd_per_mtok_hour: float
    ttl_s: float
    source: str
    source_date: str


@cache
def _load_tiers() -> tuple[dict[str, MemoryTier], dict[str, PromptCachePrice]]:
    tables = dict(data.table("memory_tiers"))
    caches = tables.pop("prompt_cache")
    tiers = {}
    for name, spec in tables.items():
        for key in ("capacity_bytes", "bandwidth_bytes_per_s", "usd_per_byte_s"):
            positive(f"{name}: {key}", spec[key])
        tiers[name] = MemoryTier(name=name, **spec)
    prices = {}
    for name, spec in caches.items():
        for key in ("input_usd_per_mtok", "write_usd_per_mtok", "read_usd_per_mtok", "ttl_s"):
            positive(f"prompt_cache.{name}: {key}", spec[key])
        positive(
            f"prompt_cache.{name}: storage", spec["storage_usd_per_mtok_hour"], allow_zero=True
        )
        prices[name] = PromptCachePrice(name=name, **spec)
    return tiers, prices


@contract()
def list_tiers() -> list[str]:
    """Tier names, fastest and dearest first."""
    return list(_load_tiers()[0])


@contract(tier=TIER)
def get_tier(tier: str | MemoryTier) -> MemoryTier:
    """Look a tier up by name, or pass a :class:`MemoryTier` straight through."""
    if isinstance(tier, MemoryTier):
        return tier
    tiers = _load_tiers()[0]
    return tiers[tier]


@contract()
def list_prompt_caches() -> list[str]:
    return list(_load_tiers()[1])


@contract(name=OneOf(list_prompt_caches, "prompt cache"))
def get_prompt_cache(name: str) -> PromptCachePrice:
    caches = _load_tiers()[1]
    return caches[name]


@contract(price=AnyOf((Instance(PromptCachePrice), OneOf(list_prompt_caches, "prompt cache"))))
def prompt_cache_usd_per_token_s(price: str | PromptCachePrice) -> float:
    """What a vendor charges to keep one token cached for one second: the storage price
    (per million tokens per hour) plus the write premium over a plain input token, paid once
    for the time-to-live: ``storage / (1e6 * 3600) + (write - input) / (1e6 * TTL)``."""
    p = get_prompt_cache(price) if isinstance(price, str) else price
    storage = p.storage_usd_per_mtok_hour / (TOKENS_PER_MILLION * SECONDS_PER_HOUR)
    premium = (p.write_usd_per_mtok - p.input_usd_per_mtok) / (TOKENS_PER_MILLION * p.ttl_s)
    return storage + max(premium, 0.0)


@contract(
    price=AnyOf((Instance(PromptCachePrice), OneOf(list_prompt_caches, "prompt cache"))),
    kv_bytes_per_token=POSITIVE,
)
def implied_usd_per_byte_s(
    price: str | PromptCachePrice, kv_bytes_per_token: ArrayLike
) -> float | FloatArray:
    """The vendor's holding price per byte-second, if a token's cache is ``kv_bytes_per_token``
    bytes (the vendor's model is not public: pass a stand-in). Compare with the tiers'."""
    kv = as_floats(kv_bytes_per_token)
    return as_output(prompt_cache_usd_per_token_s(price) / kv)


@dataclass(frozen=True)
@checked(
    broadcast=False,  # one row per prefix, one column per tier
    tiers=SequenceOf(NAME),
    **each(RESULT, "prefix_bytes hold_usd reload_s reload_usd recompute_s recompute_usd"),
    **each(Flag(arrays=True), "fits in_time"),
)
class PrefixCache:
    """Keeping a cached prefix in each tier against recomputing it, broadcast over the
    inputs; per-tier arrays have the tiers on the last axis, in :attr:`tiers` order."""

    tiers: tuple[str, ...]
    prefix_bytes: FloatArray
    #: Rent of the bytes in each tier for the hold time.
    hold_usd: FloatArray
    #: Time to bring the prefix back to the chips (0 in HBM: it is already there).
    reload_s: FloatArray
    #: The chips' rent while they wait for the ``r`` reloads.
    reload_usd: FloatArray
    #: The prefix fits in the tier (HBM: in the KV budget left by the weights).
    fits: FloatArray
    #: The tier returns the prefix within the deadline (by default: faster than a prefill).
    in_time: FloatArray
    #: One prefill of the prefix on the deployment (a floor).
    recompute_s: FloatArray
    #: ``r`` prefills: the chips' rent for recomputing the prefix at each reuse.
    recompute_usd: FloatArray

    @property
    def keep_usd(self) -> FloatArray:
        """Holding plus reloading in each tier; infinite where the tier cannot be used."""
        cost = self.hold_usd + self.reload_usd
        return np.where(np.logical_and(self.fits, self.in_time), cost, np.inf)

    @property
    def options(self) -> tuple[str, ...]:
        return (*self.tiers, RECOMPUTE)

    @property
    def option_usd(self) -> FloatArray:
        """Cost of every option, recompute last."""
        return np.concatenate([self.keep_usd, self.recompute_usd[..., np.newaxis]], axis=-1)

    @property
    def cheapest(self) -> FloatArray:
        """Index into :attr:`options` of the cheapest option (the faster tier on a tie)."""
        return np.asarray(np.argmin(self.option_usd, axis=-1))

    @property
    def cheapest_usd(self) -> FloatArray:
        return np.asarray(np.min(self.option_usd, axis=-1))

    def cheapest_name(self) -> str:
        """The cheapest option's name (scalar inputs only)."""
        if self.cheapest.ndim:
            raise ValueError("cheapest_name needs scalar inputs; use cheapest and options")
        return self.options[int(self.cheapest)]


@contract(
    prefix_tokens=PROMPT,
    hold_s=AMOUNT,
    reuses=AMOUNT,
    usd_per_chip_hour=Optional(SCALAR_POSITIVE),
    deadline_s=Optional(POSITIVE),
    tiers=Optional(SequenceOf(TIER)),
    prefill_efficiency=Optional(SCALAR_FRACTION),
)
def prefix_cache(
    deployment: Deployment,
    prefix_tokens: ArrayLike,
    hold_s: ArrayLike,
    reuses: ArrayLike = 1,
    *,
    usd_per_chip_hour: float | None = None,
    deadline_s: ArrayLike | None = None,
    tiers: Sequence[str | MemoryTier] | None = None,
    prefill_efficiency: float | None = None,
) -> PrefixCache:
    """A prefix of ``S`` tokens held ``t`` seconds and reused ``r`` times (all broadcast).

    Per tier: hold ``S kv t c``; reload ``S kv / (n W_tier)`` (0 in HBM), costing
    ``r * reload * n * price / 3600``; usable where ``S kv`` fits (``n`` accelerators' share,
    HBM: the KV budget) and the reload beats ``deadline_s`` (default: the prefill time).
    Recompute: ``r`` prefills of ``S`` tokens, ``r * t_prefill * n * price / 3600``, at the
    deployment's ``flops_efficiency`` unless ``prefill_efficiency`` (the prefill's MFU) is
    given: a floor at 100% makes recomputing look cheaper than any real prefill.
    """
    dep = deployment
    S0 = check_context(dep.model, prefix_tokens, "prefix_tokens")
    t0 = as_floats(hold_s)
    r0 = as_floats(reuses)
    d0 = np.nan if deadline_s is None else as_floats(deadline_s)  # NaN: the default, below
    S, t, r, d = (np.array(a, dtype=np.float64) for a in np.broadcast_arrays(S0, t0, r0, d0))
    chosen = [get_tier(x) for x in (list_tiers() if tiers is None else tiers)]
    names = tuple(tier.name for tier in chosen)
    price = dep.chip_hour_usd if usd_per_chip_hour is None else float(usd_per_chip_hour)
    chip_usd_per_s = dep.n_chips * price / SECONDS_PER_HOUR
    prefiller = dep if prefill_efficiency is None else _at_mfu(dep, prefill_efficiency)
    recompute_s = np.asarray(serving.prefill(prefiller, S, allow_overflow=True).time_s)
    deadline = recompute_s if deadline_s is None else d
    size = S * dep.model.kv_bytes_per_token(dep.kv_dtype)
    rate = np.array([x.usd_per_byte_s for x in chosen])
    capacity = np.array(
        [dep.kv_budget_bytes if x.name == "HBM" else dep.n_chips * x.capacity_bytes for x in chosen]
    )
    bandwidth = np.array([dep.n_chips * x.bandwidth_bytes_per_s for x in chosen])
    in_place = np.array([x.name == "HBM" for x in chosen])
    bytes_, hold, reuse = size[..., np.newaxis], t[..., np.newaxis], r[..., np.newaxis]
    reload_s = np.where(in_place, 0.0, bytes_ / bandwidth)
    return PrefixCache(
        tiers=names,
        prefix_bytes=size,
        hold_usd=bytes_ * hold * rate,
        reload_s=reload_s,
        reload_usd=reuse * reload_s * chip_usd_per_s,
        fits=np.asarray(bytes_ <= capacity),
        in_time=np.asarray(reload_s <= np.asarray(deadline)[..., np.newaxis]),
        recompute_s=recompute_s,
        recompute_usd=r * recompute_s * chip_usd_per_s,
    )


def _at_mfu(dep: Deployment, flops_efficiency: float) -> Deployment:
    return dataclasses.replace(dep, flops_efficiency=float(flops_efficiency))


@contract(
    prefix_tokens=PROMPT,
    tier=TIER,
    reuses=AMOUNT,
    usd_per_chip_hour=Optional(SCALAR_POSITIVE),
    prefill_efficiency=Optional(SCALAR_FRACTION),
)
def break_even_hold_s(
    deployment: Deployment,
    prefix_tokens: ArrayLike,
    tier: str | MemoryTier,
    reuses: ArrayLike = 1,
    *,
    usd_per_chip_hour: float | None = None,
    prefill_efficiency: float | None = None,
) -> float | FloatArray:
    """The hold time past which recomputing beats keeping the prefix in ``tier``:
    ``t = r (t_prefill - t_reload) n price / (3600 S kv c)`` (0 where the tier is no faster
    than a prefill, or the prefix does not fit in it). It is a difference of two floors, so
    it moves with the prefill's MFU (``prefill_efficiency``): show it as a range."""
    chosen = get_tier(tier)
    at_zero = prefix_cache(
        deployment,
        prefix_tokens,
        0.0,
        reuses,
        usd_per_chip_hour=usd_per_chip_hour,
        tiers=(chosen,),
        prefill_efficiency=prefill_efficiency,
    )
    rate = chosen.usd_per_byte_s
    saved = at_zero.recompute_usd - at_zero.reload_usd[..., 0]
    usable = np.logical_and(at_zero.fits[..., 0], at_zero.in_time[..., 0])
    t = np.where(usable, np.maximum(saved, 0.0) / (at_zero.prefix_bytes * rate), 0.0)
    return as_output(np.asarray(t))


__all__ = [
    "RECOMPUTE",
    "TIER",
    "MemoryTier",
    "PrefixCache",
    "PromptCachePrice",
    "break_even_hold_s",
    "get_prompt_cache",
    "get_tier",
    "implied_usd_per_byte_s",
    "list_prompt_caches",
    "list_tiers",
    "prefix_cache",
    "prompt_cache_usd_per_token_s",
]

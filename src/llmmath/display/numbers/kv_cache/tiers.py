"""Where a cached prefix should live: the memory tiers, keeping against recomputing, and what
the vendors' prompt-cache prices imply as rent."""

from __future__ import annotations

from dataclasses import dataclass

from llmmath import memory_tiers
from llmmath.core.models import get_model
from llmmath.display.numbers import shown
from llmmath.display.numbers.kv_cache.walls import CapacityWall


# ---- Where a cached prefix should live -------------------------------------------------------
@dataclass(frozen=True)
class PrefixTiers:
    """Where a cached prefix should live: the tiers, and keeping against recomputing."""

    tiers: dict[str, memory_tiers.MemoryTier]
    #: Each tier's rent in dollars per GB-hour.
    usd_gb_hour: dict[str, float]
    hbm_capacity_gb: str
    hbm_bandwidth_gbs: str
    hbm_usd_gb_hour: str
    dram_capacity_gb: str
    dram_bandwidth_gbs: str
    dram_usd_gb_hour: str
    nvme_capacity_gb: str
    nvme_bandwidth_gbs: str
    nvme_usd_gb_hour: str
    disk_bandwidth_gbs: str
    disk_usd_gb_hour: str
    #: The prefix: 8,192 tokens of Llama-3-70B on 8 H100s, held 10 minutes for 10 reuses,
    #: its prefill at 100% MFU (the floor) and at 40%.
    prefix_tokens: int
    prefix: memory_tiers.PrefixCache
    slow_prefix: memory_tiers.PrefixCache
    #: The prefill's MFU: a typical one, a middle one (the tier map's), the floor.
    mfu_low_value: float
    mfu_mid_value: float
    mfu_floor_value: float
    mfu_low: str
    mfu_mid: str
    #: Each tier's break-even hold time in seconds, reused once, at each MFU.
    even_floor_s: dict[str, float]
    even_mid_s: dict[str, float]
    even_low_s: dict[str, float]
    prefix_gb: str
    prefill_ms: str
    prefill_slow_ms: str
    dram_reload_ms: str
    nvme_reload_ms: str
    disk_reload_ms: str
    #: A reuse's saving on the networked disk (a prefill less a reload), at 100% and 40% MFU.
    disk_saved_floor_ms: str
    disk_saved_low_ms: str
    disk_saved_ratio: str
    #: Break-even ranges from the floor prefill to the 40% one, and single ends.
    hbm_even_s: str
    dram_even_min: str
    nvme_even_h: str
    disk_even_h: str
    nvme_even_mid_h: str
    disk_even_mid_h: str
    disk_even_floor_h: str
    nvme_even_low_h: str
    disk_even_low_h: str
    #: The cheapest place for 10 reuses over 10 minutes, at 100% and 40% MFU.
    cheapest: str
    cheapest_slow: str
    tier_map_prefix: int
    tier_map_caption: str


def _range(low: float, high: float, digits: int) -> str:
    return f"{shown.fixed(low, digits)}–{shown.fixed(high, digits)}"


def prefix_tiers(walls: CapacityWall) -> PrefixTiers:
    """Where a cached prefix should live: the capacity wall's Llama-3-70B prefix."""
    llama = walls.llama
    tiers = {name: memory_tiers.get_tier(name) for name in memory_tiers.list_tiers()}
    capacity_gb = {name: float(tier.capacity_bytes / 1e9) for name, tier in tiers.items()}
    bandwidth_gbs = {name: float(tier.bandwidth_bytes_per_s / 1e9) for name, tier in tiers.items()}
    usd_gb_hour = {name: float(tier.usd_per_byte_s * 1e9 * 3600) for name, tier in tiers.items()}
    tokens = 8192
    prefix = memory_tiers.prefix_cache(llama, tokens, 600.0, 10.0)
    # A break-even is a difference of two floors (a prefill saved, a reload paid): show it over
    # the prefill's MFU, 40% (a typical prefill) to 100% (the floor).
    mfu_low, mfu_mid, mfu_floor = 0.4, 0.5, 1.0

    def even_at(mfu: float) -> dict[str, float]:
        return {
            name: float(
                memory_tiers.break_even_hold_s(llama, tokens, name, 1, prefill_efficiency=mfu)
            )
            for name in prefix.tiers
        }

    even_floor, even_mid, even_low = even_at(mfu_floor), even_at(mfu_mid), even_at(mfu_low)
    slow = memory_tiers.prefix_cache(llama, tokens, 600.0, 10.0, prefill_efficiency=mfu_low)
    disk = prefix.tiers.index("networked_disk")
    saved_floor = prefix.recompute_s - prefix.reload_s[disk]
    saved_low = slow.recompute_s - slow.reload_s[disk]
    reload_ms = {name: float(prefix.reload_s[i] * 1e3) for i, name in enumerate(prefix.tiers)}
    tier_map_prefix = 8192
    return PrefixTiers(
        tiers=tiers,
        usd_gb_hour=usd_gb_hour,
        hbm_capacity_gb=shown.grouped(capacity_gb["HBM"]),
        hbm_bandwidth_gbs=shown.grouped(bandwidth_gbs["HBM"]),
        hbm_usd_gb_hour=shown.fixed(usd_gb_hour["HBM"], 3),
        dram_capacity_gb=shown.grouped(capacity_gb["host_DRAM"]),
        dram_bandwidth_gbs=shown.grouped(bandwidth_gbs["host_DRAM"]),
        dram_usd_gb_hour=shown.fixed(usd_gb_hour["host_DRAM"], 4),
        nvme_capacity_gb=shown.grouped(capacity_gb["local_NVMe"]),
        nvme_bandwidth_gbs=shown.grouped(bandwidth_gbs["local_NVMe"]),
        nvme_usd_gb_hour=shown.fixed(usd_gb_hour["local_NVMe"], 6),
        disk_bandwidth_gbs=shown.grouped(bandwidth_gbs["networked_disk"], 1),
        disk_usd_gb_hour=shown.fixed(usd_gb_hour["networked_disk"], 7),
        prefix_tokens=tokens,
        prefix=prefix,
        slow_prefix=slow,
        mfu_low_value=mfu_low,
        mfu_mid_value=mfu_mid,
        mfu_floor_value=mfu_floor,
        mfu_low=shown.percent(mfu_low),
        mfu_mid=shown.percent(mfu_mid),
        even_floor_s=even_floor,
        even_mid_s=even_mid,
        even_low_s=even_low,
        prefix_gb=shown.gb(float(prefix.prefix_bytes), 2),
        prefill_ms=shown.ms(float(prefix.recompute_s), 0),
        prefill_slow_ms=shown.ms(float(slow.recompute_s), 0),
        dram_reload_ms=shown.fixed(reload_ms["host_DRAM"], 1),
        nvme_reload_ms=shown.fixed(reload_ms["local_NVMe"]),
        disk_reload_ms=shown.fixed(reload_ms["networked_disk"]),
        disk_saved_floor_ms=shown.ms(float(saved_floor), 0),
        disk_saved_low_ms=shown.ms(float(saved_low), 0),
        disk_saved_ratio=shown.fixed(float(saved_low / saved_floor)),
        hbm_even_s=_range(even_floor["HBM"], even_low["HBM"], 0),
        dram_even_min=_range(even_floor["host_DRAM"] / 60, even_low["host_DRAM"] / 60, 1),
        nvme_even_h=_range(even_floor["local_NVMe"] / 3600, even_low["local_NVMe"] / 3600, 1),
        disk_even_h=_range(
            even_floor["networked_disk"] / 3600, even_low["networked_disk"] / 3600, 1
        ),
        nvme_even_mid_h=shown.fixed(even_mid["local_NVMe"] / 3600, 1),
        disk_even_mid_h=shown.fixed(even_mid["networked_disk"] / 3600, 1),
        disk_even_floor_h=shown.fixed(even_floor["networked_disk"] / 3600, 1),
        nvme_even_low_h=shown.fixed(even_low["local_NVMe"] / 3600, 1),
        disk_even_low_h=shown.fixed(even_low["networked_disk"] / 3600, 1),
        cheapest=prefix.cheapest_name().replace("_", " "),
        cheapest_slow=slow.cheapest_name().replace("_", " "),
        tier_map_prefix=tier_map_prefix,
        tier_map_caption=(
            f"Which tier? The cheapest place to keep a {tier_map_prefix:,}-token prefix of "
            f"{llama.model.name} on {llama.n_chips} {llama.chip.name}s, against the hold time "
            "and the expected number of reuses, at the example prices, with the prefill at "
            "100% MFU (the floor). Short holds stay in HBM, then DRAM, then NVMe; past a line "
            "that moves right as reuses grow, recomputing by prefill is cheapest. A slower "
            f"prefill moves that line right: at {shown.percent(mfu_mid)} MFU the networked "
            "disk takes over from NVMe before it. Dashed: 5 minutes, 1 hour, 1 day."
        ),
    )


# ---- What a prompt-cache price tells you -----------------------------------------------------
@dataclass(frozen=True)
class PromptCachePrices:
    """What a prompt-cache price tells you: vendors' prices as rent per GB-hour."""

    #: What each cache's price implies in dollars per GB-hour, at Llama-3-70B's bytes per token.
    gb_hour: dict[str, float]
    anthropic_5min_gb_hour: str
    anthropic_1h_gb_hour: str
    gemini_gb_hour: str
    #: Anthropic's 5-minute cache: the write over the input price, the extra, the input, the TTL.
    anthropic_5min_write_x: str
    anthropic_5min_extra_x: str
    anthropic_5min_input: str
    anthropic_5min_ttl_s: str
    anthropic_1h_write_x: str
    gemini_storage: str
    deepseek_hit: str
    deepseek_miss: str


def prompt_cache_prices() -> PromptCachePrices:
    """What a prompt-cache price tells you, at Llama-3-70B's bytes per token."""
    stand_in = get_model("Llama-3-70B").kv_bytes_per_token()
    gb_hour = {
        name: float(memory_tiers.implied_usd_per_byte_s(name, stand_in) * 1e9 * 3600)
        for name in ("anthropic_5min", "anthropic_1h", "google_gemini_2_5_pro")
    }
    five_min = memory_tiers.get_prompt_cache("anthropic_5min")
    one_hour = memory_tiers.get_prompt_cache("anthropic_1h")
    gemini = memory_tiers.get_prompt_cache("google_gemini_2_5_pro")
    deepseek = memory_tiers.get_prompt_cache("deepseek")
    write_x = five_min.write_usd_per_mtok / five_min.input_usd_per_mtok
    return PromptCachePrices(
        gb_hour=gb_hour,
        anthropic_5min_gb_hour=shown.fixed(gb_hour["anthropic_5min"], 3),
        anthropic_1h_gb_hour=shown.fixed(gb_hour["anthropic_1h"], 4),
        gemini_gb_hour=shown.fixed(gb_hour["google_gemini_2_5_pro"], 3),
        anthropic_5min_write_x=shown.fixed(write_x, 2),
        anthropic_5min_extra_x=shown.fixed(write_x - 1, 2),
        anthropic_5min_input=shown.fixed(five_min.input_usd_per_mtok),
        anthropic_5min_ttl_s=shown.fixed(five_min.ttl_s),
        anthropic_1h_write_x=shown.fixed(one_hour.write_usd_per_mtok / one_hour.input_usd_per_mtok),
        gemini_storage=shown.fixed(gemini.storage_usd_per_mtok_hour, 2),
        deepseek_hit=shown.fixed(deepseek.read_usd_per_mtok, 2),
        deepseek_miss=shown.fixed(deepseek.input_usd_per_mtok, 2),
    )

"""Packing more sequences in: continuous batching with a paged KV cache, FP8 and FP4 weights
and caches, and the closing check-yourself questions."""

from __future__ import annotations

from dataclasses import dataclass

from IPython.display import Markdown

from llmmath import kv_cache
from llmmath.beyond import number_formats, paged_kv
from llmmath.beyond.paged_kv import KVPacking
from llmmath.core import capacity
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.display import pages
from llmmath.display.numbers import shown
from llmmath.display.numbers.kv_cache.tiers import PrefixTiers
from llmmath.display.numbers.kv_cache.walls import CapacityWall


# ---- Continuous batching and a paged KV cache ------------------------------------------------
@dataclass(frozen=True)
class Packing:
    """Continuous batching and a paged KV cache, on ShareGPT's requests."""

    #: ShareGPT's requests on Llama-3-70B on 8 H100s, 8,192 tokens reserved, 16-token pages.
    share_gpt: KVPacking
    #: The same with 256-token pages.
    big_pages: KVPacking
    #: B*(T) at the mean cached context: the batch at which a step turns compute-bound.
    critical_at_mean: float
    prompt_tokens: str
    mean_output_tokens: str
    reserved_batch: str
    critical_batch: str
    reserved_kv_use: str
    mean_cached_tokens: str
    mean_paged_tokens: str
    paged_batch: str
    paged_kv_use: str
    static_busy_share: str
    static_batch: str
    #: The longest of a static batch's answers over the mean answer.
    longest_over_mean: str
    #: The share of the KV memory the vLLM paper measured in systems that reserve the output.
    vllm_used_low: str
    vllm_used_high: str
    question_big_pages_use: str
    question_big_pages_batch: str


def packing(walls: CapacityWall) -> Packing:
    """Continuous batching and a paged KV cache, on the capacity wall's Llama-3-70B."""
    llama = walls.llama
    share_gpt = paged_kv.request_lengths()
    prompt, output = int(share_gpt["prompt_tokens"]), share_gpt["mean_output_tokens"]
    # A static batch is the reserved batch that fits (pack.static_batch).
    pack = paged_kv.kv_packing(llama, prompt, output, 8192)
    # The step reads each live sequence's real cache, so its compute-bound batch is B*(T) at
    # the mean cached context, not the short-context B*.
    critical_at = capacity.step_critical_batch(llama, pack.mean_cached_tokens)
    big_pages = paged_kv.kv_packing(llama, prompt, output, 8192, 256)
    return Packing(
        share_gpt=pack,
        big_pages=big_pages,
        critical_at_mean=critical_at,
        prompt_tokens=shown.fixed(pack.prompt_tokens),
        mean_output_tokens=shown.fixed(output),
        reserved_batch=shown.fixed(pack.reserved_batch),
        critical_batch=shown.fixed(critical_at),
        reserved_kv_use=shown.percent(pack.reserved_kv_use, 1),
        mean_cached_tokens=shown.fixed(pack.mean_cached_tokens),
        mean_paged_tokens=shown.fixed(pack.mean_paged_tokens),
        paged_batch=shown.grouped(pack.paged_batch),
        paged_kv_use=shown.percent(pack.paged_kv_use, 1),
        static_busy_share=shown.percent(pack.static_busy_share),
        static_batch=shown.fixed(pack.static_batch),
        longest_over_mean=shown.fixed(1 / pack.static_busy_share, 1),
        vllm_used_low=shown.percent(share_gpt["used_share_low"], 1),
        vllm_used_high=shown.percent(share_gpt["used_share_high"], 1),
        question_big_pages_use=shown.percent(big_pages.paged_kv_use),
        question_big_pages_batch=shown.grouped(big_pages.paged_batch),
    )


# ---- FP8 and FP4: smaller weights, smaller caches --------------------------------------------
@dataclass(frozen=True)
class Formats:
    """FP8 and FP4: what smaller weights and caches move."""

    #: Llama-3.1-405B on 8 B200s at 32,768 tokens: bf16, fp8 and NVFP4 recipes
    #: (weights, KV cache, arithmetic).
    effects: number_formats.FormatEffects
    context: float
    context_text: str
    #: Each recipe as a deployment.
    deployments: list[Deployment]
    table: str
    bf16_room: str
    fp8_room: str
    nvfp4_room: str
    nvfp4_cost_ratio: str
    bf16_critical_batch: str
    nvfp4_critical_batch: str
    #: NVFP4 weights feeding bf16 arithmetic: B*.
    weight_only_critical_batch: str
    #: The largest critical context of the three recipes.
    critical_context_max: str
    #: Check yourself: bf16 weights and arithmetic, an fp8 KV cache.
    question_kv_only_room: str
    question_freed_gb: str


_RECIPE_NAMES = ("bf16 weights, bf16 KV", "fp8 weights, fp8 KV", "NVFP4 weights, fp8 KV")


def _formats_table(effects: number_formats.FormatEffects) -> str:
    rows = [
        "| recipe (arithmetic as weights) | weights (GB) | KV (kB/token) | $B^*$ (weights only) "
        "| fits at 32,768 | weight floor (ms) | cost vs bf16 |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, name in enumerate(_RECIPE_NAMES):
        rows.append(
            f"| {name} | {effects.weight_bytes[i] / 1e9:.0f} "
            f"| {effects.kv_bytes_per_token[i] / 1e3:.0f} "
            f"| {effects.critical_batch[i]:.0f} | {effects.max_batch[i]:.0f} "
            f"| {effects.weight_floor_s[i] * 1e3:.1f} "
            f"| {effects.cost_per_million_usd[i] / effects.cost_per_million_usd[0]:.2f}× |"
        )
    return "\n".join(rows)


def formats() -> Formats:
    """FP8 and FP4: the three recipes of Llama-3.1-405B on 8 B200s."""
    context = 32768
    effects = number_formats.format_effects("Llama-3.1-405B", "B200", 8, context)
    weight_only = number_formats.format_effects(
        "Llama-3.1-405B", "B200", 8, context, (("nvfp4", "fp8", "bf16"),)
    )
    kv_only = number_formats.format_effects(
        "Llama-3.1-405B", "B200", 8, context, (("bf16", "fp8", "bf16"),)
    )
    model, b200 = get_model("Llama-3.1-405B"), get_chip("B200")
    deployments = [
        Deployment(model, b200, 8, weight_dtype=w, kv_dtype=kv, compute_dtype=c)
        for w, kv, c in effects.recipes
    ]
    critical_contexts = [float(capacity.critical_context(dep)) for dep in deployments]
    costs = effects.cost_per_million_usd
    return Formats(
        effects=effects,
        context=context,
        context_text=shown.grouped(context),
        deployments=deployments,
        table=_formats_table(effects),
        bf16_room=shown.fixed(effects.max_batch[0]),
        fp8_room=shown.fixed(effects.max_batch[1]),
        nvfp4_room=shown.fixed(effects.max_batch[2]),
        nvfp4_cost_ratio=shown.fixed(costs[2] / costs[0], 2),
        bf16_critical_batch=shown.fixed(effects.critical_batch[0]),
        nvfp4_critical_batch=shown.fixed(effects.critical_batch[2]),
        weight_only_critical_batch=shown.fixed(weight_only.critical_batch[0]),
        critical_context_max=shown.grouped(max(critical_contexts)),
        question_kv_only_room=shown.fixed(kv_only.max_batch[0]),
        question_freed_gb=shown.gb(effects.weight_bytes[0] - effects.weight_bytes[1]),
    )


# ---- Check yourself --------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckYourself:
    """The closing check-yourself questions and the graded exercise."""

    #: 1. Mixtral-8x7B's shape, its bytes per token, as MHA, and one 32,768-token sequence.
    mixtral_layers: str
    mixtral_heads: str
    mixtral_kv_heads: str
    mixtral_head_dim: str
    mixtral_kv_bytes: str
    mixtral_mha_kv_bytes: str
    mixtral_32k_gb: str
    #: 2. Llama-3-8B on one H100: how many 8,192-token sequences fit.
    llama8_weights_gb: str
    llama8_hbm_gb: str
    llama8_budget_gb: str
    llama8_kv_bytes: str
    llama8_max_batch_8k: str
    #: 3. An 8,192-token Llama-3-70B prefix brought back from host DRAM over 8 PCIe links.
    prefix_gb: str
    pcie_link_gbs: str
    dram_reload_ms: str
    #: The graded exercise's link.
    exercise: Markdown


def check_yourself(tiers: PrefixTiers) -> CheckYourself:
    """The closing questions and the exercise's link (the third reloads from the tiers' DRAM)."""
    mixtral = get_model("Mixtral-8x7B")
    llama8 = Deployment(get_model("Llama-3-8B"), get_chip("H100"), 1)
    prefix_bytes = kv_cache.kv_bytes_per_sequence("Llama-3-70B", 8192)
    # Each GPU's own PCIe link to host DRAM (data/memory_tiers.toml), 8 of them in parallel.
    link = tiers.tiers["host_DRAM"].bandwidth_bytes_per_s
    return CheckYourself(
        mixtral_layers=str(mixtral.n_layers),
        mixtral_heads=str(mixtral.n_heads),
        mixtral_kv_heads=str(mixtral.n_kv_heads),
        mixtral_head_dim=str(mixtral.head_dim),
        mixtral_kv_bytes=shown.grouped(mixtral.kv_bytes_per_token()),
        mixtral_mha_kv_bytes=shown.grouped(kv_cache.mha_kv_bytes_per_token("Mixtral-8x7B")),
        mixtral_32k_gb=shown.gb(float(kv_cache.kv_bytes_per_sequence("Mixtral-8x7B", 32768)), 2),
        llama8_weights_gb=shown.gb(llama8.weight_bytes, 1),
        llama8_hbm_gb=shown.gb(llama8.chip.hbm_bytes),
        llama8_budget_gb=shown.gb(llama8.kv_budget_bytes, 1),
        llama8_kv_bytes=shown.grouped(llama8.model.kv_bytes_per_token(llama8.kv_dtype)),
        llama8_max_batch_8k=shown.fixed(float(kv_cache.max_batch(llama8, 8192))),
        prefix_gb=shown.gb(float(prefix_bytes), 2),
        pcie_link_gbs=shown.gb(link),
        dram_reload_ms=shown.ms(float(prefix_bytes / (8 * link))),
        exercise=pages.exercise_link("kv_cache", "the KV-cache exercise"),
    )

"""One step, three clocks; the same server on 2026 traffic; counting the weights; the cost
hyperbola: the chapter's worked step of Llama-3-70B on 8 H100s and what it costs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmmath import pricing
from llmmath.core import capacity, chip_prices, serving
from llmmath.core.chip_prices import ChipPrice
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.roofline import arithmetic_intensity
from llmmath.core.serving import DecodeStep
from llmmath.core.setting import Setting
from llmmath.display.numbers import shown

#: The context of the chapter's worked numbers, in tokens.
T = 2048


@dataclass(frozen=True)
class WorkedNumber:
    """One step, three clocks: the worked step of Llama-3-70B on 8 H100s at T tokens."""

    llama: Deployment  # Llama-3-70B on 8 H100s, spread evenly
    at_critical: DecodeStep  # the step at the weights' critical batch, rounded up
    b64: DecodeStep  # the step at batch 64
    critical_b: float  # the weights' critical batch C b_w / 2W
    one: DecodeStep  # a lone sequence's step
    price: ChipPrice  # the H100's example price
    v5e: Deployment  # Llama-3-70B on 16 TPU v5e
    setting: Setting  # the chapter's worked setting, at T tokens
    weights_gb: str
    hbm_gb: str
    kv_per_token: str
    kv_seq_gb: str
    one_weight_ms: str
    one_kv_ms: str
    one_flops_ms: str
    one_ms: str
    one_user_tps: str
    one_weight_share: str


def build_worked() -> WorkedNumber:
    llama = Deployment(get_model("Llama-3-70B"), get_chip("H100"), 8)
    setting = Setting(llama, T)  # the chapter's worked example: its line is shown below
    v5e = Deployment(get_model("Llama-3-70B"), get_chip("TPU-v5e"), 16)
    price = chip_prices.example_price("H100")
    one = serving.decode_step(llama, 1, T)
    critical_b = capacity.step_critical_batch(llama)
    at_critical = serving.decode_step(llama, math.ceil(critical_b), T)
    b64 = serving.decode_step(llama, 64, T)

    weights_gb = shown.fixed(float(llama.weight_bytes / 1e9), 0)
    hbm_gb = shown.fixed(float(llama.hbm_bytes / 1e9), 0)
    kv_per_token = shown.grouped(float(llama.model.kv_bytes_per_token(llama.kv_dtype)), 0)
    kv_seq_gb = shown.fixed(float(llama.model.kv_bytes_per_token(llama.kv_dtype) * T / 1e9), 2)
    one_weight_ms = shown.fixed(float(one.weight_read_s * 1e3), 2)
    one_kv_ms = shown.fixed(float(one.kv_read_s * 1e3), 3)
    one_flops_ms = shown.fixed(float(one.matmul_compute_s * 1e3), 3)
    one_ms = shown.fixed(float(one.time_s * 1e3), 2)
    one_user_tps = shown.fixed(float(one.tokens_per_s_per_user), 0)
    one_weight_share = shown.percent(float(one.weight_read_s / one.time_s), 1)
    return WorkedNumber(
        llama=llama,
        at_critical=at_critical,
        b64=b64,
        critical_b=critical_b,
        one=one,
        price=price,
        v5e=v5e,
        setting=setting,
        weights_gb=weights_gb,
        hbm_gb=hbm_gb,
        kv_per_token=kv_per_token,
        kv_seq_gb=kv_seq_gb,
        one_weight_ms=one_weight_ms,
        one_kv_ms=one_kv_ms,
        one_flops_ms=one_flops_ms,
        one_ms=one_ms,
        one_user_tps=one_user_tps,
        one_weight_share=one_weight_share,
    )


@dataclass(frozen=True)
class ThreeClocks:
    """One step, three clocks: how many FLOPs attention does per byte of KV cache."""

    gqa_attention_intensity: str  # FLOP per KV byte of Llama-3-70B's decode attention
    mla_attention_intensity: str  # the same for DeepSeek-V3's absorbed MLA
    h100_ci: str  # the H100's critical intensity C/W


def _attention_intensity(name: str) -> float:
    """Attention's FLOPs per KV byte in decode at context T: a few for GQA, near C/W for
    absorbed MLA."""
    model = get_model(name)
    flops = model.attention_flops_per_token(T, decode=True)
    return float(arithmetic_intensity(flops, T * model.kv_bytes_per_token("bf16")))


def build_three_clocks() -> ThreeClocks:
    gqa_attention_intensity = shown.fixed(float(_attention_intensity("Llama-3-70B")), 0)
    mla_attention_intensity = shown.fixed(float(_attention_intensity("DeepSeek-V3")), 0)
    h100_ci = shown.fixed(float(get_chip("H100").critical_intensity()), 0)
    return ThreeClocks(
        gqa_attention_intensity=gqa_attention_intensity,
        mla_attention_intensity=mla_attention_intensity,
        h100_ci=h100_ci,
    )


@dataclass(frozen=True)
class Agentic:
    """The same server on 2026 traffic: 65,536 tokens of context on the 128k-context model."""

    agentic_setting: Setting
    agentic_fits: float
    agentic_steps: DecodeStep
    agentic_full: DecodeStep
    agentic_context: str
    agentic_seq_gb: str
    agentic_one_kv_ms: str
    agentic_one_ms: str
    agentic_batch: str
    agentic_full_ms: str
    agentic_kv_share: str
    agentic_user_tps: str
    agentic_full_cost: str
    agentic_cost_x: str


def build_agentic(cost: CostHyperbola) -> Agentic:
    full_2k = cost.full_2k
    # The same eight H100s on 2026 traffic: an agent's or a reasoning model's 64k-token context.
    # Llama-3.1-70B has Llama-3-70B's shape with a 128k context: the package's Llama-3-70B
    # allowed 131,072 tokens is that model.
    agentic_setting = Setting(
        Deployment(pricing.with_context_limit("Llama-3-70B", 131_072), get_chip("H100"), 8), 65_536
    )
    agentic_one = agentic_setting.step(1)
    agentic_fits = float(capacity.max_batch(agentic_setting.deployment, agentic_setting.context))
    agentic_steps = agentic_setting.step(np.arange(1.0, agentic_fits + 1.0))
    agentic_full = agentic_setting.step(agentic_fits)
    agentic_context = shown.grouped(float(agentic_setting.context), 0)
    agentic_dep = agentic_setting.deployment
    agentic_seq_gb = shown.fixed(
        float(
            agentic_dep.model.kv_bytes_per_token(agentic_dep.kv_dtype)
            * agentic_setting.context
            / 1e9
        ),
        1,
    )
    agentic_one_kv_ms = shown.fixed(float(agentic_one.kv_read_s * 1e3), 2)
    agentic_one_ms = shown.fixed(float(agentic_one.time_s * 1e3), 2)
    agentic_batch = shown.grouped(float(agentic_fits), 0)
    agentic_full_ms = shown.fixed(float(agentic_full.time_s * 1e3), 1)
    agentic_kv_share = shown.percent(float(agentic_full.kv_read_s / agentic_full.memory_s), 0)
    agentic_user_tps = shown.fixed(float(agentic_full.tokens_per_s_per_user), 0)
    agentic_full_cost = shown.fixed(float(agentic_full.cost_per_million_tokens_usd()), 2)
    agentic_cost_x = shown.fixed(
        float(agentic_full.cost_per_million_tokens_usd() / full_2k.cost_per_million_tokens_usd()), 0
    )
    return Agentic(
        agentic_setting=agentic_setting,
        agentic_fits=agentic_fits,
        agentic_steps=agentic_steps,
        agentic_full=agentic_full,
        agentic_context=agentic_context,
        agentic_seq_gb=agentic_seq_gb,
        agentic_one_kv_ms=agentic_one_kv_ms,
        agentic_one_ms=agentic_one_ms,
        agentic_batch=agentic_batch,
        agentic_full_ms=agentic_full_ms,
        agentic_kv_share=agentic_kv_share,
        agentic_user_tps=agentic_user_tps,
        agentic_full_cost=agentic_full_cost,
        agentic_cost_x=agentic_cost_x,
    )


@dataclass(frozen=True)
class WeightCount:
    """Counting the weights: a SwiGLU MLP's three matrices, not two."""

    llama_shape: ModelConfig  # Llama-3-70B's shape
    two_matrix: int
    two_matrix_b: str
    undercount: str
    params_b: str
    h200_gb: str


def build_weight_count(worked: WorkedNumber) -> WeightCount:
    llama = worked.llama
    llama_shape = llama.model
    two_matrix = (
        llama_shape.total_params - llama_shape.n_layers * llama_shape.d_model * llama_shape.d_ff
    )
    two_matrix_b = shown.fixed(float(two_matrix / 1e9), 1)
    undercount = shown.percent(float(1 - two_matrix / llama_shape.total_params), 0)
    params_b = shown.fixed(float(llama_shape.total_params / 1e9), 2)
    h200_gb = shown.fixed(float(get_chip("H200").hbm_bytes / 1e9), 0)
    return WeightCount(
        llama_shape=llama_shape,
        two_matrix=two_matrix,
        two_matrix_b=two_matrix_b,
        undercount=undercount,
        params_b=params_b,
        h200_gb=h200_gb,
    )


@dataclass(frozen=True)
class CostHyperbola:
    """The cost hyperbola: cost per token against the batch, and where it stops falling."""

    one_cost_value: float  # a lone sequence's cost per million tokens, USD
    full_2k: DecodeStep
    max_b_2k_value: float
    price_h100: str
    h100_price_kind: str
    one_cost_1f: str
    one_cost: str
    b64_cost: str
    critical: str
    critical_cost: str
    amortization: str
    t_c_value: float
    t_c: str
    full_2k_batch: str
    full_2k_cost: str
    full_2k_amortization: str
    past_critical_saving: str
    at_critical_compute_ms: str
    at_critical_memory_ms: str
    critical_1k_value: float
    critical_1k: str
    max_b_1k: str
    at_critical_1k: DecodeStep
    critical_1k_cost: str
    hyperbola_context: int  # the context of the cost figure
    hyperbola_caption: str


def build_cost(worked: WorkedNumber) -> CostHyperbola:
    at_critical, b64, critical_b, llama, one, price = (
        worked.at_critical,
        worked.b64,
        worked.critical_b,
        worked.llama,
        worked.one,
        worked.price,
    )
    price_h100 = shown.fixed(float(price.usd_per_chip_hour), 2)
    h100_price_kind = price.kind
    one_cost_value = float(one.cost_per_million_tokens_usd())
    one_cost_1f = shown.fixed(float(one_cost_value), 1)
    one_cost = shown.fixed(float(one_cost_value), 0)
    b64_cost = shown.fixed(float(b64.cost_per_million_tokens_usd()), 2)
    critical = shown.fixed(float(critical_b), 0)
    critical_cost = shown.fixed(float(at_critical.cost_per_million_tokens_usd()), 2)
    amortization = shown.fixed(
        float(one.cost_per_million_tokens_usd() / at_critical.cost_per_million_tokens_usd()), 0
    )
    # With the KV read: the batch where the step turns compute-bound at context T, and T_c.
    t_c_value = capacity.critical_context(llama)
    t_c = shown.grouped(float(t_c_value), 0)
    max_b_2k_value = float(capacity.max_batch(llama, T))
    full_2k = serving.decode_step(llama, max_b_2k_value, T)
    full_2k_batch = shown.grouped(float(max_b_2k_value), 0)
    full_2k_cost = shown.fixed(float(full_2k.cost_per_million_tokens_usd()), 3)
    full_2k_amortization = shown.fixed(
        float(one.cost_per_million_tokens_usd() / full_2k.cost_per_million_tokens_usd()), 0
    )
    past_critical_saving = shown.percent(
        float(
            1 - full_2k.cost_per_million_tokens_usd() / at_critical.cost_per_million_tokens_usd()
        ),
        0,
    )
    at_critical_compute_ms = shown.fixed(float(at_critical.compute_s * 1e3), 2)
    at_critical_memory_ms = shown.fixed(float(at_critical.memory_s * 1e3), 2)
    critical_1k_value = capacity.step_critical_batch(llama, 1024)
    critical_1k = shown.grouped(float(critical_1k_value), 0)
    max_b_1k = shown.grouped(float(capacity.max_batch(llama, 1024)), 0)
    at_critical_1k = serving.decode_step(llama, math.ceil(critical_1k_value), 1024)
    critical_1k_cost = shown.fixed(float(at_critical_1k.cost_per_million_tokens_usd()), 3)
    hyperbola_context = 2048
    v5e = worked.v5e
    hyperbola_caption = (
        f"Cost per million output tokens against batch at context {hyperbola_context:,}, at the "
        "example prices. Green squares: the weight read shared by the batch (a hyperbola); orange "
        "triangles: the matmul FLOPs; purple diamonds: the KV read; thick black: the step. The "
        "dotted line is "
        "C b_w / 2W, where the matmul FLOPs catch up with the weight read; at this context "
        "the step is still memory-bound past it. In the grey band the KV caches no longer fit. "
        f"Left: {llama.model.name} on {llama.n_chips} {llama.chip.name}s. Right: on "
        f"{v5e.n_chips} {v5e.chip.name}, whose {v5e.chip.hbm_bytes / 1e9:.0f} GB chips fill up "
        "at a smaller batch."
    )
    return CostHyperbola(
        one_cost_value=one_cost_value,
        hyperbola_context=hyperbola_context,
        hyperbola_caption=hyperbola_caption,
        full_2k=full_2k,
        max_b_2k_value=max_b_2k_value,
        price_h100=price_h100,
        h100_price_kind=h100_price_kind,
        one_cost_1f=one_cost_1f,
        one_cost=one_cost,
        b64_cost=b64_cost,
        critical=critical,
        critical_cost=critical_cost,
        amortization=amortization,
        t_c_value=t_c_value,
        t_c=t_c,
        full_2k_batch=full_2k_batch,
        full_2k_cost=full_2k_cost,
        full_2k_amortization=full_2k_amortization,
        past_critical_saving=past_critical_saving,
        at_critical_compute_ms=at_critical_compute_ms,
        at_critical_memory_ms=at_critical_memory_ms,
        critical_1k_value=critical_1k_value,
        critical_1k=critical_1k,
        max_b_1k=max_b_1k,
        at_critical_1k=at_critical_1k,
        critical_1k_cost=critical_1k_cost,
    )

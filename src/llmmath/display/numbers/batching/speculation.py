"""Speculative decoding and multi-token prediction, and the chapter's check-yourself
questions 1 and 2 with the graded exercise's link."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from IPython.display import Markdown

from llmmath.beyond import speculative
from llmmath.beyond.speculative import SpeculativeStep
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.core.serving import DecodeStep
from llmmath.core.setting import Setting
from llmmath.display import pages
from llmmath.display.numbers import shown
from llmmath.display.numbers.batching.scale import Frontier
from llmmath.display.numbers.batching.worked import CostHyperbola, T, WorkedNumber


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding and multi-token prediction."""

    mtp: dict[str, float]
    mtp_share: float
    mtp_tokens: str
    mtp_low: str
    mtp_high: str
    mtp_reported: str
    mtp_module_b: str
    mtp_share_pct: str
    mtp_kv_share: float
    mtp_big: SpeculativeStep
    mtp_small: SpeculativeStep
    mtp_big_speedup: str
    mtp_big_plain_ms: str
    mtp_big_verify_ms: str
    mtp_big_draft_ms: str
    mtp_small_speedup: str
    draft_kv: float
    spec_setting: Setting
    draft_1: SpeculativeStep
    draft_tokens: str
    draft_speedup: str
    draft_plain_ms: str
    draft_verify_ms: str
    draft_draft_ms: str
    spec_at: SpeculativeStep
    spec_74: str
    spec_400: str
    spec_full: str
    spec_full_no_kv: str
    spec_break_256_value: float
    draft_kv_pct: str
    spec_break_256: str
    spec_room_256: str
    question_spec_tokens: str
    figure_cases: list[tuple[str, Deployment, int, float, float, float]]  # the speed-up figure's
    figure_caption: str


def build_speculative(worked: WorkedNumber, cost: CostHyperbola, frontier: Frontier) -> Speculative:
    llama = worked.llama
    max_b_2k_value = cost.max_b_2k_value
    deepseek = frontier.frontier
    mtp = speculative.mtp_published()
    mtp_share = speculative.mtp_draft_share("DeepSeek-V3")
    mtp_tokens = shown.fixed(
        float(speculative.expected_tokens_per_step(mtp["acceptance_low"], 1)), 2
    )
    mtp_low = shown.percent(float(mtp["acceptance_low"]), 0)
    mtp_high = shown.percent(float(mtp["acceptance_high"]), 0)
    mtp_reported = format(mtp["reported_tps_speedup"], "g")
    mtp_module_b = shown.fixed(float(mtp["module_params"] / 1e9), 0)
    mtp_share_pct = shown.percent(float(mtp_share), 1)
    mtp_kv_share = speculative.mtp_draft_kv_share("DeepSeek-V3")  # its one layer's cache
    mtp_big = speculative.speculative_step(
        deepseek, 1024, T, 1, mtp["acceptance_low"], mtp_share, draft_kv_share=mtp_kv_share
    )
    mtp_small = speculative.speculative_step(
        deepseek, 4, T, 1, mtp["acceptance_low"], mtp_share, draft_kv_share=mtp_kv_share
    )
    mtp_big_speedup = shown.fixed(float(mtp_big.speedup), 2)
    mtp_big_plain_ms = shown.fixed(float(mtp_big.plain_time_s * 1e3), 2)
    mtp_big_verify_ms = shown.fixed(float(mtp_big.verify_time_s * 1e3), 2)
    mtp_big_draft_ms = shown.fixed(float(mtp_big.draft_time_s * 1e3), 2)
    mtp_small_speedup = shown.fixed(float(mtp_small.speedup), 2)
    # A 1B-class draft (Llama-3.2-1B's shape): 2% of the target's weights, and its own cache of
    # 16 layers x 8 KV heads x 64 dims, a tenth of the target's KV bytes per token.
    draft_kv = 0.1
    spec_setting = Setting(llama, T)
    draft_1 = speculative.speculative_step(llama, 1, T, 3, 0.7, 0.02, draft_kv_share=draft_kv)
    draft_tokens = shown.fixed(float(draft_1.tokens_per_step), 2)
    draft_speedup = shown.fixed(float(draft_1.speedup), 2)
    draft_plain_ms = shown.fixed(float(draft_1.plain_time_s * 1e3), 2)
    draft_verify_ms = shown.fixed(float(draft_1.verify_time_s * 1e3), 2)
    draft_draft_ms = shown.fixed(float(draft_1.draft_time_s * 1e3), 2)
    spec_at = speculative.speculative_step(
        llama, np.array([74.0, 400.0, max_b_2k_value]), T, 3, 0.7, 0.02, draft_kv_share=draft_kv
    )
    spec_74, spec_400, spec_full = (shown.fixed(float(x), 2) for x in spec_at.speedup)
    spec_full_no_kv = shown.fixed(
        float(speculative.speculative_step(llama, max_b_2k_value, T, 3, 0.7, 0.02).speedup), 2
    )
    spec_break_256_value = speculative.break_even_batch(
        llama, 256, 3, 0.7, 0.02, draft_kv_share=draft_kv
    )
    draft_kv_pct = shown.percent(float(draft_kv), 0)
    spec_break_256 = shown.grouped(float(spec_break_256_value), 0)
    spec_room_256 = shown.grouped(float(capacity.max_batch(llama, 256)), 0)
    question_spec_tokens = shown.fixed(float(speculative.expected_tokens_per_step(0.8, 3)), 2)
    figure_cases = [
        (
            "DeepSeek-V3 + MTP, 1 draft, a = 0.85",
            deepseek,
            1,
            mtp["acceptance_low"],
            mtp_share,
            mtp_kv_share,
        ),
        ("Llama-3-70B, 3 drafts, a = 0.7, draft 2% / KV 10%", llama, 3, 0.7, 0.02, draft_kv),
    ]
    figure_caption = (
        f"Speed-up of one sequence's tokens per second from speculation against the batch, at "
        f"context {T:,} (floors). DeepSeek-V3's MTP module on {deepseek.n_chips} "
        f"{deepseek.chip.name}s ({deepseek.layout}, fp8 matmuls) gains most once the batch touches "
        f"most experts; a 3-token draft for {llama.model.name} on {llama.n_chips} "
        f"{llama.chip.name}s gains most at small batch and falls toward 1 as the drafts' own KV "
        "reads and the check's FLOPs grow with the batch."
    )
    return Speculative(
        figure_cases=figure_cases,
        figure_caption=figure_caption,
        mtp=mtp,
        mtp_share=mtp_share,
        mtp_tokens=mtp_tokens,
        mtp_low=mtp_low,
        mtp_high=mtp_high,
        mtp_reported=mtp_reported,
        mtp_module_b=mtp_module_b,
        mtp_share_pct=mtp_share_pct,
        mtp_kv_share=mtp_kv_share,
        mtp_big=mtp_big,
        mtp_small=mtp_small,
        mtp_big_speedup=mtp_big_speedup,
        mtp_big_plain_ms=mtp_big_plain_ms,
        mtp_big_verify_ms=mtp_big_verify_ms,
        mtp_big_draft_ms=mtp_big_draft_ms,
        mtp_small_speedup=mtp_small_speedup,
        draft_kv=draft_kv,
        spec_setting=spec_setting,
        draft_1=draft_1,
        draft_tokens=draft_tokens,
        draft_speedup=draft_speedup,
        draft_plain_ms=draft_plain_ms,
        draft_verify_ms=draft_verify_ms,
        draft_draft_ms=draft_draft_ms,
        spec_at=spec_at,
        spec_74=spec_74,
        spec_400=spec_400,
        spec_full=spec_full,
        spec_full_no_kv=spec_full_no_kv,
        spec_break_256_value=spec_break_256_value,
        draft_kv_pct=draft_kv_pct,
        spec_break_256=spec_break_256,
        spec_room_256=spec_room_256,
        question_spec_tokens=question_spec_tokens,
    )


@dataclass(frozen=True)
class CheckYourself:
    """Check yourself (questions 1 and 2) and the graded exercise's link."""

    small: Deployment
    lone: DecodeStep
    question1_gb: str
    question1_tb_s: str
    question1_flops_less: str
    question1_ms: str
    question1_chip_hours: str
    question1_cost: str
    question2_weights_gb: str
    question2_ratio: str
    question2_room: str
    question2_compute_ms: str
    question2_memory_ms: str
    question2_ratio_bound: str
    exercise: Markdown  # the link to the graded exercise, where the reader works it


def build_check(worked: WorkedNumber) -> CheckYourself:
    llama = worked.llama
    small = Deployment(get_model("Llama-3-8B"), get_chip("H100"), 1)
    lone = serving.decode_step(small, 1, 0)
    question1_gb = shown.fixed(
        float(lone.bytes_read / 1e9), 1
    )  # at batch 1 and context 0: the weights
    question1_tb_s = shown.fixed(float(small.chip.hbm_bandwidth_bytes_per_s / 1e12), 2)
    question1_flops_less = shown.fixed(float(lone.weight_read_s / lone.matmul_compute_s), 0)
    question1_ms = shown.fixed(float(lone.time_s * 1e3), 2)
    question1_chip_hours = shown.fixed(float(1e6 * lone.time_s / 3600), 2)
    question1_cost = shown.fixed(float(lone.cost_per_million_tokens_usd()), 2)
    question2_weights_gb = shown.fixed(float(llama.weight_bytes / 1e9), 1)
    question2_ratio = shown.fixed(
        float(llama.kv_budget_bytes / (4096 * llama.model.kv_bytes_per_token(llama.kv_dtype))), 1
    )
    question2_room_value = float(capacity.max_batch(llama, 4096))
    question2_room = shown.fixed(float(question2_room_value), 0)
    question2_step = serving.decode_step(llama, question2_room_value, 4096)
    question2_compute_ms = shown.fixed(float(question2_step.compute_s * 1e3), 1)
    question2_memory_ms = shown.fixed(float(question2_step.memory_s * 1e3), 1)
    question2_ratio_bound = shown.fixed(
        float(question2_step.memory_s / question2_step.compute_s), 1
    )
    exercise = pages.exercise_link("batching", "the batching exercise")
    return CheckYourself(
        small=small,
        lone=lone,
        question1_gb=question1_gb,
        question1_tb_s=question1_tb_s,
        question1_flops_less=question1_flops_less,
        question1_ms=question1_ms,
        question1_chip_hours=question1_chip_hours,
        question1_cost=question1_cost,
        question2_weights_gb=question2_weights_gb,
        question2_ratio=question2_ratio,
        question2_room=question2_room,
        question2_compute_ms=question2_compute_ms,
        question2_memory_ms=question2_memory_ms,
        question2_ratio_bound=question2_ratio_bound,
        exercise=exercise,
    )

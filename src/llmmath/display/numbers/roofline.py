"""The roofline chapter's numbers (``lessons/roofline.md``), section by section.

Its settings:

- the worked number: one decode step of Llama-3-70B at batch 1, nothing cached, bf16, on one
  H100 as a what-if (the weights do not fit in its 80 GB); again with int8 weights;
- the chips: the critical intensity ``C/W`` of every chip preset in bf16;
- the focus machine: Gemma 4 (26B A4B, 31B) and Gemma-3-4B in int4 at 4,096 tokens on a Mac
  mini M4 Pro and an RTX 4090, one user; the laptop of its check-yourself (100 GB/s, 16 GB);
- check yourself 2: Llama-3-8B alone on one H100, batch 1, bf16.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from IPython.display import Markdown

from llmmath import moe
from llmmath.beyond import focus
from llmmath.core import hardware, models, roofline, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.models import ModelConfig, get_model
from llmmath.core.setting import Setting
from llmmath.display import pages
from llmmath.display.numbers import shown


@dataclass(frozen=True)
class Decode:
    """A worked number: Llama-3-70B decoding at batch 1 on one H100 (a what-if)."""

    h100: Chip
    llama: ModelConfig
    alone: Deployment
    step: serving.DecodeStep
    setting: Setting  # shown above the worked number
    critical_batch: float  # bf16 weights and arithmetic
    h100_tflops: str
    h100_tbps: str
    h100_hbm_gb: str
    h100_critical_1f: str
    h100_critical: str
    llama_params_b: str
    llama_weight_gb: str
    llama_read_gb: str  # every weight but the input embedding, a lookup of one row per token
    llama_memory_ms: str
    llama_compute_ms: str
    llama_ratio: str  # memory time over compute time


@dataclass(frozen=True)
class Quantized:
    """Quantization moves the ridge: the worked number with int8 weights."""

    int8_step: serving.DecodeStep
    llama_int8_memory_ms: str
    h100_critical_int8: str  # int8 weights, bf16 arithmetic
    h100_critical_int8_int8: str  # int8 arithmetic too: the H100's int8 peak doubles C


@dataclass(frozen=True)
class Chips:
    """About 300 on most generations: ``C/W`` across the chip presets."""

    by_critical_intensity: dict[str, float]  # every chip preset, bf16
    a100_b200_flops: str  # B200 over A100, dense bf16 FLOP/s
    a100_b200_bw: str  # B200 over A100, HBM bandwidth
    a100_critical: str
    b200_critical: str
    h200_critical: str
    gb200_critical: str
    v5e_critical: str
    v5p_critical: str
    v6e_critical: str
    v5e_tflops: str
    v5e_gbps: str
    ci_min_chip: str
    ci_max_chip: str
    ci_min: str
    ci_max: str


@dataclass(frozen=True)
class Focus:
    """A focus machine: Gemma 4 on a Mac mini M4 Pro and an RTX 4090, one user."""

    context: int  # tokens cached, for every table of the section
    mac: focus.FocusMachine
    card: focus.FocusMachine
    moe_name: str
    dense_name: str
    small_name: str
    moe_spec: ModelConfig
    mac_moe: focus.LocalDecode
    mac_dense: focus.LocalDecode
    mac_small: focus.LocalDecode
    card_moe_int8: focus.LocalDecode
    card_moe: focus.LocalDecode
    card_dense: focus.LocalDecode
    tables: Markdown  # both machines' tables, as the page shows them
    context_text: str
    gemma_window: str
    mac_gbps: str
    mac_gb: str
    mac_usable_gb: str
    card_gbps: str
    card_gb: str
    card_usable_gb: str
    card_over_mac: str
    dense_params_b: str
    moe_params_b: str
    moe_active_b: str
    moe_experts: int
    moe_k: int
    moe_hold_gb: str
    moe_need_gb: str
    dense_need_gb: str
    moe_read_gb: str
    dense_read_gb: str
    mac_moe_tps: str
    mac_dense_tps: str
    mac_small_tps: str
    moe_over_dense: str
    small_params_b: str
    card_moe_int8_need_gb: str
    card_moe_tps: str
    card_dense_tps: str
    # The datacenter's view: a batch of server_batch touches more experts, and the batch that
    # makes a step compute-bound is the chip's critical batch times E/k (the MoE chapter).
    server_batch: int
    touched_64: str
    moe_sparsity: str
    moe_rule: str


@dataclass(frozen=True)
class Laptop:
    """The focus machine's check-yourself: a laptop with 100 GB/s and 16 GB (12 GB usable)."""

    q_moe: focus.LocalDecode
    q_12b: focus.LocalDecode
    q_moe_gb: str
    q_moe_tps: str
    q_moe_need_gb: str
    q_12b_gb: str
    q_12b_tps: str
    q_12b_need_gb: str


@dataclass(frozen=True)
class CheckYourself:
    """Check yourself 2 (Llama-3-8B alone on one H100, batch 1) and the graded exercise."""

    small_step: serving.DecodeStep
    q2_params_b: str
    q2_hold_gb: str
    q2_read_params_b: str
    q2_read_gb: str
    q2_memory_ms: str
    q2_compute_ms: str
    q2_ratio: str
    exercise: Markdown


@dataclass(frozen=True)
class Numbers:
    decode: Decode
    quantized: Quantized
    chips: Chips
    focus: Focus
    laptop: Laptop
    check: CheckYourself


@functools.cache
def numbers() -> Numbers:
    """Every value the roofline chapter shows, in page order."""
    decode = _decode()
    return Numbers(
        decode=decode,
        quantized=_quantized(decode),
        chips=_chips(),
        focus=_focus(),
        laptop=_laptop(),
        check=_check_yourself(decode),
    )


def _decode() -> Decode:
    h100 = get_chip("H100")
    llama = get_model("Llama-3-70B")
    # The course's one decode step (serving.decode_step, as in the batching and parallelism
    # chapters), on one H100 as a what-if: the weights do not fit in its 80 GB.
    alone = Deployment(llama, h100, 1, allow_overflow=True)
    step = serving.decode_step(alone, 1, 0, allow_overflow=True)
    critical = float(h100.critical_intensity("bf16"))
    return Decode(
        h100=h100,
        llama=llama,
        alone=alone,
        step=step,
        setting=Setting(alone, 0),
        critical_batch=roofline.critical_batch(h100),
        h100_tflops=shown.tflops(h100.peak("bf16")),
        h100_tbps=shown.tb_per_s(h100.hbm_bandwidth_bytes_per_s),
        h100_hbm_gb=shown.gb(h100.hbm_bytes),
        h100_critical_1f=shown.fixed(critical, 1),
        h100_critical=shown.fixed(critical),
        llama_params_b=shown.fixed(llama.total_params / 1e9, 2),
        llama_weight_gb=shown.gb(llama.weight_bytes("bf16")),
        # A step reads every weight but the input embedding (book/notation.md, "Parameters").
        llama_read_gb=shown.gb(llama.matmul_params_per_token * 2),
        llama_memory_ms=shown.ms(step.memory_s),
        llama_compute_ms=shown.ms(step.compute_s, 3),
        llama_ratio=shown.fixed(step.memory_s / step.compute_s),
    )


def _quantized(decode: Decode) -> Quantized:
    alone_int8 = Deployment(decode.llama, decode.h100, 1, weight_dtype="int8", allow_overflow=True)
    int8_step = serving.decode_step(alone_int8, 1, 0, allow_overflow=True)
    return Quantized(
        int8_step=int8_step,
        llama_int8_memory_ms=shown.ms(int8_step.memory_s),
        h100_critical_int8=shown.fixed(roofline.critical_batch(decode.h100, weight_dtype="int8")),
        # int8 arithmetic as well: C doubles as the bytes halve (data/hardware.toml).
        h100_critical_int8_int8=shown.fixed(roofline.critical_batch(decode.h100, "int8")),
    )


def _critical(chip: str) -> str:
    return shown.fixed(get_chip(chip).critical_intensity())


def _chips() -> Chips:
    a100, b200, v5e = get_chip("A100"), get_chip("B200"), get_chip("TPU-v5e")
    # The range over every chip preset, with the chips at its ends.
    by_ci = {name: float(get_chip(name).critical_intensity()) for name in hardware.list_chips()}
    lowest = min(by_ci, key=by_ci.__getitem__)
    highest = max(by_ci, key=by_ci.__getitem__)
    return Chips(
        by_critical_intensity=by_ci,
        a100_b200_flops=shown.fixed(b200.peak("bf16") / a100.peak("bf16"), 1),
        a100_b200_bw=shown.fixed(
            b200.hbm_bandwidth_bytes_per_s / a100.hbm_bandwidth_bytes_per_s, 1
        ),
        a100_critical=_critical("A100"),
        b200_critical=_critical("B200"),
        h200_critical=_critical("H200"),
        gb200_critical=_critical("GB200-NVL72"),
        v5e_critical=_critical("TPU-v5e"),
        v5p_critical=_critical("TPU-v5p"),
        v6e_critical=_critical("TPU-v6e"),
        v5e_tflops=shown.tflops(v5e.peak("bf16")),
        v5e_gbps=shown.fixed(v5e.hbm_bandwidth_bytes_per_s / 1e9),
        ci_min_chip=lowest,
        ci_max_chip=highest,
        ci_min=shown.fixed(by_ci[lowest]),
        ci_max=shown.fixed(by_ci[highest]),
    )


FOCUS_CONTEXT = 4096  # tokens of context for the focus machine's tables
FOCUS_MOE, FOCUS_DENSE, FOCUS_SMALL = "Gemma-4-26B-A4B", "Gemma-4-31B", "Gemma-3-4B"
SERVER_BATCH = 64


def _focus() -> Focus:
    mac = focus.get_focus_machine("Mac-mini-M4-Pro")
    card = focus.get_focus_machine("RTX-4090")
    context = FOCUS_CONTEXT

    def on(machine: focus.FocusMachine, model: str, dtype: str = "int4") -> focus.LocalDecode:
        return focus.local_decode(machine, model, dtype, context)

    mac_moe, mac_dense, mac_small = on(mac, FOCUS_MOE), on(mac, FOCUS_DENSE), on(mac, FOCUS_SMALL)
    card_moe_int8, card_moe, card_dense = (
        on(card, FOCUS_MOE, "int8"),
        on(card, FOCUS_MOE),
        on(card, FOCUS_DENSE),
    )
    moe_spec, dense_spec = mac_moe.model, mac_dense.model
    experts, k = moe_spec.n_experts, moe_spec.experts_per_token
    tables = Markdown(  # type: ignore[no-untyped-call]
        "**Mac mini M4 Pro**\n\n"
        + focus.focus_markdown(mac, context=context)
        + "\n\n**RTX 4090**\n\n"
        + focus.focus_markdown(card, context=context)
    )
    return Focus(
        context=context,
        mac=mac,
        card=card,
        moe_name=FOCUS_MOE,
        dense_name=FOCUS_DENSE,
        small_name=FOCUS_SMALL,
        moe_spec=moe_spec,
        mac_moe=mac_moe,
        mac_dense=mac_dense,
        mac_small=mac_small,
        card_moe_int8=card_moe_int8,
        card_moe=card_moe,
        card_dense=card_dense,
        tables=tables,
        context_text=format(context, ","),
        gemma_window=format(dense_spec.sliding_window, ","),
        mac_gbps=shown.fixed(mac.bandwidth_bytes_per_s / 1e9),
        mac_gb=shown.gb(mac.memory_bytes),
        mac_usable_gb=shown.gb(mac.usable_bytes),
        card_gbps=shown.grouped(card.bandwidth_bytes_per_s / 1e9),
        card_gb=shown.gb(card.memory_bytes),
        card_usable_gb=shown.gb(card.usable_bytes, 1),
        card_over_mac=shown.fixed(card.bandwidth_bytes_per_s / mac.bandwidth_bytes_per_s, 1),
        dense_params_b=shown.fixed(dense_spec.total_params / 1e9, 1),
        moe_params_b=shown.fixed(moe_spec.total_params / 1e9, 1),
        moe_active_b=shown.fixed(moe_spec.active_params / 1e9, 1),
        moe_experts=experts,
        moe_k=k,
        # Bytes held against bytes read, int4 weights on the Mac.
        moe_hold_gb=shown.gb(mac_moe.weight_bytes, 1),
        moe_need_gb=shown.gb(mac_moe.memory_needed_bytes, 1),
        dense_need_gb=shown.gb(mac_dense.memory_needed_bytes, 1),
        moe_read_gb=shown.gb(mac_moe.weight_read_bytes, 2),
        dense_read_gb=shown.gb(mac_dense.weight_read_bytes, 1),
        mac_moe_tps=shown.fixed(mac_moe.tokens_per_s),
        mac_dense_tps=shown.fixed(mac_dense.tokens_per_s),
        mac_small_tps=shown.fixed(mac_small.tokens_per_s),
        moe_over_dense=shown.fixed(mac_moe.tokens_per_s / mac_dense.tokens_per_s, 1),
        small_params_b=shown.fixed(mac_small.model.total_params / 1e9, 1),
        card_moe_int8_need_gb=shown.gb(card_moe_int8.memory_needed_bytes, 1),
        card_moe_tps=shown.fixed(card_moe.tokens_per_s),
        card_dense_tps=shown.fixed(card_dense.tokens_per_s),
        server_batch=SERVER_BATCH,
        touched_64=shown.fixed(models.expected_experts_touched(SERVER_BATCH, experts, k)),
        moe_sparsity=shown.fixed(moe.sparsity(FOCUS_MOE, "experts")),
        moe_rule=shown.grouped(moe.compute_bound_batch_rule(FOCUS_MOE, "H100")),
    )


def _laptop() -> Laptop:
    laptop = focus.FocusMachine("laptop", "a laptop", 16e9, 100e9, 0.75)
    q_moe = focus.local_decode(laptop, FOCUS_MOE, "int4", FOCUS_CONTEXT)
    q_12b = focus.local_decode(laptop, "Gemma-3-12B", "int4", FOCUS_CONTEXT)
    return Laptop(
        q_moe=q_moe,
        q_12b=q_12b,
        q_moe_gb=shown.gb(q_moe.bytes_per_token, 2),
        q_moe_tps=shown.fixed(q_moe.tokens_per_s),
        q_moe_need_gb=shown.gb(q_moe.memory_needed_bytes, 1),
        q_12b_gb=shown.gb(q_12b.bytes_per_token, 2),
        q_12b_tps=shown.fixed(q_12b.tokens_per_s),
        q_12b_need_gb=shown.gb(q_12b.memory_needed_bytes, 1),
    )


def _check_yourself(decode: Decode) -> CheckYourself:
    # Llama-3-8B alone on one H100: it holds every weight, reads all but the input embedding.
    small = get_model("Llama-3-8B")
    small_step = serving.decode_step(Deployment(small, decode.h100, 1), 1, 0)
    return CheckYourself(
        small_step=small_step,
        q2_params_b=shown.fixed(small.total_params / 1e9, 2),
        q2_hold_gb=shown.gb(small.weight_bytes("bf16"), 1),
        q2_read_params_b=shown.fixed(small.matmul_params_per_token / 1e9, 2),
        q2_read_gb=shown.gb(small.matmul_params_per_token * 2, 1),
        q2_memory_ms=shown.ms(small_step.memory_s, 2),
        q2_compute_ms=shown.ms(small_step.compute_s, 4),
        q2_ratio=shown.fixed(small_step.memory_s / small_step.compute_s),
        exercise=pages.exercise_link("roofline", "the roofline exercise"),
    )

"""What lessons/roofline.md says in words, pinned to the package for its own settings
(src/llmmath/display/numbers/roofline.py): claims, and the errata of issue 18."""

from __future__ import annotations

import math

import pytest

from claims import Claim, chapter_numbers, check_claim, claim_id, page_words
from llmmath import moe
from llmmath.core import hardware, measure, models, roofline
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model

CLAIMS = [
    # ---- the ridge across chips and formats (third read, #32) ----
    Claim(
        "bound by memory bandwidth on every accelerator here",
        # A decode step's intensity is about B: every preset needs a batch of ~100+ to turn.
        lambda n: min(n.chips.by_critical_intensity.values()) > 100,
    ),
    Claim(
        "(from the H100 to the B200 bandwidth grew a little faster, and $C/W$ fell). Yet $C/W$ "
        "stays within a factor of four",
        lambda n: (
            float(n.chips.a100_b200_flops) > float(n.chips.a100_b200_bw) > 1
            and 0.9 * (ci := n.chips.by_critical_intensity)["H100"] < ci["B200"] < ci["H100"]
            and max(ci.values()) / min(ci.values()) < 4
        ),
    ),
    Claim(
        "gained far more compute than bandwidth over the v5e",
        lambda n: (
            get_chip("TPU-v6e").peak("bf16") / get_chip("TPU-v5e").peak("bf16")
            > 2
            * get_chip("TPU-v6e").hbm_bandwidth_bytes_per_s
            / get_chip("TPU-v5e").hbm_bandwidth_bytes_per_s
        ),
    ),
    Claim(
        "so the step turns compute-bound at half the batch",
        lambda n: math.isclose(
            roofline.critical_batch(n.decode.h100, weight_dtype="int8"),
            n.decode.critical_batch / 2,
            rel_tol=1e-12,
        ),
    ),
    Claim(
        "$C$ doubles too and $B^*$ is back at {eval}`n.quantized.h100_critical_int8_int8`, "
        "the bf16 value.",
        lambda n: (
            # 1,979 against 989 TFLOP/s: "doubles" to 0.1%
            math.isclose(n.decode.h100.peak("int8"), 2 * n.decode.h100.peak("bf16"), rel_tol=1e-3)
            and math.isclose(
                n.decode.h100.peak("fp8"), 2 * n.decode.h100.peak("bf16"), rel_tol=1e-3
            )
            and n.quantized.h100_critical_int8_int8 == n.decode.h100_critical
        ),
    ),
    # ---- the focus machine is Gemma 4 (#32) ----
    Claim(
        "{eval}`n.focus.moe_over_dense` times faster: as fast as a dense model of its active size",
        lambda n: (
            n.focus.mac_moe.tokens_per_s > 5 * n.focus.mac_dense.tokens_per_s
            and abs(n.focus.mac_moe.tokens_per_s / n.focus.mac_small.tokens_per_s - 1) < 0.1
            and abs(n.focus.mac_small.model.total_params / n.focus.moe_spec.active_params - 1) < 0.1
        ),
    ),
    Claim(
        "not far below the 31B's {eval}`n.focus.dense_need_gb` GB",
        lambda n: (
            0.7 < n.focus.mac_moe.memory_needed_bytes / n.focus.mac_dense.memory_needed_bytes < 1
        ),
    ),
    Claim(
        "but cannot hold the 26B A4B in int8",
        lambda n: (
            not n.focus.card_moe_int8.fits and n.focus.card_moe.fits and n.focus.card_dense.fits
        ),
    ),
    Claim(
        "Locally, sparsity is nearly free in bandwidth: it costs memory, not time.",
        # At batch 1 the MoE reads its active weights only, a sixth of what it holds.
        lambda n: (
            math.isclose(
                n.focus.mac_moe.weight_read_bytes,
                n.focus.moe_spec.matmul_params_per_token * 0.5,
                rel_tol=1e-12,
            )
            and n.focus.mac_moe.weight_read_bytes < n.focus.mac_moe.weight_bytes / 6
        ),
    ),
    Claim(
        "so a step reads nearly every weight",
        lambda n: (
            float(models.weight_params_read(n.focus.moe_name, n.focus.server_batch))
            > 0.95 * n.focus.moe_spec.total_params
        ),
    ),
    Claim(
        "What makes an MoE cheap on a desk makes it hungry for batch in a datacenter.",
        lambda n: (
            moe.compute_bound_batch_rule(n.focus.moe_name, "H100") > 10 * n.decode.critical_batch
        ),
    ),
    Claim(
        "so it does not fit. Sparsity saved bandwidth, not memory.",
        lambda n: (
            not n.laptop.q_moe.fits
            and n.laptop.q_12b.fits
            and n.laptop.q_moe.tokens_per_s > n.laptop.q_12b.tokens_per_s
        ),
    ),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=claim_id)
def test_claim_is_on_its_page_and_holds(claim: Claim) -> None:
    check_claim("roofline", claim)


# This machine's CPU, measured as the lesson's own cell does (about 1-2 s), against the lowest
# C/W of the GPU and TPU presets: tens of FLOP/byte against 150 and more. It holds on any CPU,
# but it measures one: `make test` runs it, the edit loop does not (#41).
CPU_CLAIM = Claim(
    "A CPU's critical intensity is far lower than a GPU's",
    lambda n: (
        measure.measure_peak_flop_per_s() / measure.measure_bandwidth_bytes_per_s()
        < min(n.chips.by_critical_intensity.values()) / 3
    ),
)


@pytest.mark.slow
def test_this_cpus_critical_intensity_is_far_below_every_accelerators() -> None:
    check_claim("roofline", CPU_CLAIM)


# ---- errata (issue 18) ------------------------------------------------------------------------
def test_the_range_of_critical_intensity_is_the_presets() -> None:
    """The takeaway's range is the chip presets' own, with the chips at its ends named."""
    by_chip = {c: float(get_chip(c).critical_intensity()) for c in hardware.list_chips()}
    chips = chapter_numbers("roofline").chips
    lowest, highest = min(by_chip, key=by_chip.__getitem__), max(by_chip, key=by_chip.__getitem__)
    assert (chips.ci_min, chips.ci_max) == (f"{by_chip[lowest]:.0f}", f"{by_chip[highest]:.0f}")
    assert (chips.ci_min_chip, chips.ci_max_chip) == (lowest, highest)
    words = page_words("roofline")
    assert "**{eval}`n.chips.ci_min` to {eval}`n.chips.ci_max` FLOP/byte**" in words
    assert "150–300" not in words and "every generation" not in words
    # The outliers the text names really are the far ones from the H100's C/W, on either side.
    for low in ("H200", "TPU-v5p", "A100"):
        assert by_chip[low] < 0.75 * by_chip["H100"]
    assert by_chip["TPU-v6e"] > 1.85 * by_chip["H100"]  # "twice the rest"


def test_a_step_reads_the_matmul_weights_only() -> None:
    """Every weight but the input embedding is read: the check-yourself and the worked number."""
    numbers = chapter_numbers("roofline")
    h100 = get_chip("H100")
    for model, read_gb, gb_digits, memory_ms, ms_digits in (
        ("Llama-3-8B", numbers.check.q2_read_gb, 1, numbers.check.q2_memory_ms, 2),
        ("Llama-3-70B", numbers.decode.llama_read_gb, 0, numbers.decode.llama_memory_ms, 1),
    ):
        config = get_model(model)
        read_bytes = 2 * (config.total_params - config.vocab_size * config.d_model)
        assert read_gb == f"{read_bytes / 1e9:.{gb_digits}f}", model
        seconds = read_bytes / h100.hbm_bandwidth_bytes_per_s
        assert memory_ms == f"{seconds * 1e3:.{ms_digits}f}", model

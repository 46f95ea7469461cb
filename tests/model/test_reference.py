"""Published numbers, pinned. Each check names its source and its tolerance.

"Scaling book" = Austin et al., "How to Scale Your Model" (Google DeepMind, 2025), cited by
chapter. "HF" = the parameter count Hugging Face shows for the released checkpoint.
"""

from __future__ import annotations

import pytest

from llmmath.core import roofline
from llmmath.core.hardware import get_chip
from llmmath.core.models import ModelConfig, get_model


# ---- critical intensity: "about 300 on every generation" ----------------------------------
@pytest.mark.parametrize(
    ("chip", "published"),
    [
        ("H100", 295),  # scaling book, gpus: 9.89e14 / 3.35e12
        ("TPU-v5e", 240),  # scaling book, roofline / tpus: 1.97e14 / 8.2e11
        ("B200", 281),  # scaling book, gpus: 2.25e15 / 8e12
    ],
)
def test_critical_intensity_bf16(chip: str, published: float) -> None:
    # The book rounds to whole FLOPs per byte: 0.5%.
    assert get_chip(chip).critical_intensity("bf16") == pytest.approx(published, rel=5e-3)
    assert roofline.critical_batch(chip) == pytest.approx(published, rel=5e-3)


def test_int8_weights_halve_the_critical_batch() -> None:
    # reference.md / scaling book, inference: critical batch scales with b_w / b_a, so int8
    # weights feeding bf16 FLOPs need half the batch (H100: ~148).
    for chip in ("H100", "B200", "TPU-v5e", "A100"):
        bf16 = roofline.critical_batch(chip)
        int8 = roofline.critical_batch(chip, "bf16", "int8")
        assert int8 == pytest.approx(bf16 / 2, rel=1e-12)
    assert roofline.critical_batch("H100", "bf16", "int8") == pytest.approx(148, rel=5e-3)


def test_h100_memory_floor() -> None:
    # reference.md latency floor: reading 80 GB of HBM at 3.35 TB/s takes ~23.9 ms.
    assert get_chip("H100").memory_floor_s == pytest.approx(23.9e-3, rel=2e-3)


# ---- parameter counts ---------------------------------------------------------------------
def test_llama_3_70b_parameters() -> None:
    # HF meta-llama/Meta-Llama-3-70B: 70,553,706,496 parameters (exact), which is also
    # what the reference.md formula gives (~70.55e9; the scaling book prints 70.4e9 rounded).
    assert get_model("Llama-3-70B").total_params == 70_553_706_496
    assert get_model("Llama-3-70B").total_params == pytest.approx(70.55e9, rel=1e-3)


def test_llama_3_8b_parameters() -> None:
    # HF meta-llama/Meta-Llama-3-8B: 8,030,261,248 parameters (exact).
    assert get_model("Llama-3-8B").total_params == 8_030_261_248


def test_llama_2_13b_parameters() -> None:
    # Llama 2 paper (arXiv 2307.09288) / HF meta-llama/Llama-2-13b-hf: ~13.0e9 (0.5%).
    assert get_model("Llama-2-13B").total_params == pytest.approx(13.0e9, rel=5e-3)


def test_llama_3_1_405b_parameters() -> None:
    # Llama 3 herd paper (arXiv 2407.21783): 405e9 (the name rounds; 0.5%).
    assert get_model("Llama-3.1-405B").total_params == pytest.approx(405e9, rel=5e-3)


def test_mixtral_total_and_active_parameters() -> None:
    # Mistral AI, "Mixtral of Experts" (arXiv 2401.04088): 46.7e9 total, 12.9e9 active per
    # token (published to 3 figures: 0.2%).
    mixtral = get_model("Mixtral-8x7B")
    assert mixtral.total_params == pytest.approx(46.7e9, rel=2e-3)
    assert mixtral.active_params == pytest.approx(12.9e9, rel=2e-3)


def test_deepseek_v3_total_and_active_parameters() -> None:
    # DeepSeek-V3 technical report (arXiv 2412.19437): 671e9 total, 37e9 activated per token
    # (the MTP module is not counted). Norm/bias details differ by source: 2%.
    deepseek = get_model("DeepSeek-V3")
    assert deepseek.total_params == pytest.approx(671e9, rel=0.02)
    assert deepseek.active_params == pytest.approx(37e9, rel=0.02)


# ---- KV cache -----------------------------------------------------------------------------
def test_llama_3_70b_kv_bytes_per_token() -> None:
    # Scaling book, applied-inference: 2 x 80 layers x 8 KV heads x 128 = 163,840 numbers,
    # 327,680 B in bf16 and 163,840 B in int8 (exact).
    llama = get_model("Llama-3-70B")
    assert llama.kv_bytes_per_token("bf16") == 327_680
    assert llama.kv_bytes_per_token("int8") == 163_840


def test_llama_2_13b_kv_cache_of_one_long_sequence() -> None:
    # Scaling book, inference: one 8,192-token sequence of Llama-2-13B's KV cache in bf16 is
    # ~6.7 GB (printed to 2 figures: 1%).
    cache_bytes = get_model("Llama-2-13B").kv_bytes_per_token("bf16") * 8192
    assert cache_bytes == pytest.approx(6.7e9, rel=1e-2)


def test_deepseek_v3_mla_kv_bytes_per_token() -> None:
    # DeepSeek-V2/V3 reports: MLA caches a 512-wide latent plus a 64-wide RoPE key per layer:
    # 61 layers x 576 x 2 B = 70,272 B per token in bf16 (exact).
    assert get_model("DeepSeek-V3").kv_bytes_per_token("bf16") == 61 * 576 * 2 == 70_272


# ---- attention vs matmul FLOPs ------------------------------------------------------------
@pytest.mark.parametrize("context", [512, 8192, 65536])
def test_attention_to_matmul_flops_ratio_is_t_over_8d(context: int) -> None:
    # Scaling book, transformers: for MHA with F = 4D (and N H = D), attention FLOPs over
    # matmul FLOPs per layer is T / (8 D). Differencing two depths cancels the embeddings;
    # the 2 D norm weights per layer the package counts as matmul weights shift it by
    # 2 D / (16 D^2) = 1 / (8 D), 0.003%; 0.1% tolerance.
    D = 4096
    shape = {"d_model": D, "d_ff": 4 * D, "n_heads": 32, "n_kv_heads": 32, "head_dim": 128}
    one = ModelConfig("mha-1", 1, vocab_size=32000, max_context=65536, **shape)
    two = ModelConfig("mha-2", 2, vocab_size=32000, max_context=65536, **shape)
    assert one.attention_kind == "MHA"
    matmul_per_layer = two.forward_flops_per_token(0) - one.forward_flops_per_token(0)
    attention_per_layer = one.forward_flops_per_token(context) - one.forward_flops_per_token(0)
    assert attention_per_layer / matmul_per_layer == pytest.approx(context / (8 * D), rel=1e-3)


# ---- training compute ---------------------------------------------------------------------
def test_llama_3_70b_training_flops() -> None:
    # Scaling book, applied-training: 6 x 70e9 x 15e12 tokens ~ 6.3e24 FLOPs (2 figures: 2%).
    flops = get_model("Llama-3-70B").training_flops_per_token() * 15e12
    assert flops == pytest.approx(6.3e24, rel=0.02)

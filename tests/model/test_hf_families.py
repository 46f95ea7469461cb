"""llmmath.core.hf_config: the families of #43 that came last (GLM-5, Nemotron-H, Kimi Linear),
each against a hand count of its public config.json (tests/data/hf_configs/, sources in its
README) within 0.1%, and against its publisher's total."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from llmmath.core.hf_config import model_from_hf_config, read_hf_config

CONFIGS = Path(__file__).parents[1] / "data" / "hf_configs"


def _config(folder: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / folder / "config.json").read_text())
    return config


# ---- GLM-5: DeepSeek-V3.2's sparse MLA with values wider than the keys ------------------------
def _glm_5_by_hand(t: dict[str, Any], experts: int) -> int:
    """GlmMoeDsa's weights, module by module (its modeling code's shapes): q_a_proj, its norm,
    q_b_proj to N (nope + rope); kv_a_proj_with_mqa to kv_rank + rope, its norm, kv_b_proj to
    N (nope + v); o_proj from N v; the indexer's wq_b (from the query latent), wk, k_norm
    (weight and bias) and weights_proj; two norms a layer; first_k_dense_replace dense SwiGLU
    MLPs; in the others ``experts`` routed experts, the shared ones, the router and its
    correction bias; two embedding matrices and the final norm. The MTP layer is left out, as
    in the published totals."""
    D, L, N = t["hidden_size"], t["num_hidden_layers"], t["num_attention_heads"]
    q, kv, nope, rope, v = (t[k] for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                           "qk_rope_head_dim", "v_head_dim"))  # fmt: skip
    attention = D * q + q + q * N * (nope + rope)
    attention += D * (kv + rope) + kv + kv * N * (nope + v) + N * v * D
    heads, dim = t["index_n_heads"], t["index_head_dim"]
    indexer = q * heads * dim + D * dim + 2 * dim + D * heads
    dense_layers = t["first_k_dense_replace"]
    E, width = t["n_routed_experts"], t["moe_intermediate_size"]
    moe = (experts + t["n_shared_experts"]) * 3 * D * width + D * E + E
    total = L * (attention + indexer + 2 * D) + dense_layers * 3 * D * t["intermediate_size"]
    return total + (L - dense_layers) * moe + 2 * t["vocab_size"] * D + D


def test_glm_5_reads_sparse_mla_with_wide_values() -> None:
    """GLM-5 (zai-org/GLM-5): 78 layers, the first 3 dense, 256 experts of 2,048 top-8 and a
    shared one; MLA with 192-wide non-RoPE keys and 256-wide values; DSA's indexer (32 heads
    of 128, top 2,048 tokens)."""
    t = _config("GLM-5")
    spec, notes = read_hf_config(CONFIGS / "GLM-5" / "config.json")
    assert spec.total_params == pytest.approx(_glm_5_by_hand(t, 256), rel=1e-3)
    # GLM-5 technical report (arXiv 2602.15763), its architecture table: 744B total, 40B
    # activated (as glennklockwood.com/garden/GLM-5 copies it); the active count without
    # the embeddings (41.8B with them).
    assert spec.total_params == pytest.approx(744e9, rel=2e-3)
    assert spec.active_params == pytest.approx(_glm_5_by_hand(t, 8), rel=1e-3)
    assert spec.active_params - spec.embedding_params == pytest.approx(40e9, rel=0.01)
    assert (spec.head_dim, spec.mla_value_head_dim, spec.n_dense_layers) == (192, 256, 3)
    assert (spec.index_topk, spec.index_n_heads, spec.index_head_dim) == (2048, 32, 128)
    # Capacity: every token's latent (512 + 64) and index key (128 fp8 + one fp32 scale) in
    # each of the 78 layers; the values' width does not reach the cache.
    held = 78 * ((512 + 64) * 2 + 128 + 4)
    assert spec.kv_bytes_per_token("bf16") == held
    # Bandwidth: a step at 128k reads 2,048 tokens' latents and every token's index key.
    T = 131072
    read = 78 * (2048 * (512 + 64) * 2 + T * (128 + 4))
    assert float(spec.kv_bytes_read("bf16", T)) == read < T * held / 5
    assert any("sparse attention" in n for n in notes)
    assert any("multi-token" in n for n in notes)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"v_head_dim": 0}, "'v_head_dim' must be a whole number from 1"),
        ({"index_topk": None}, "field 'index_topk' is missing"),
        ({"indexer_types": ["full", "shared"] * 39}, "field 'indexer_types'"),
        ({"mlp_layer_types": ["sparse"] * 78}, "field 'mlp_layer_types' must be 3 'dense'"),
        ({"moe_layer_freq": 2}, "field 'moe_layer_freq'"),
    ],
)
def test_glm_5_fields_the_model_cannot_describe_name_the_field(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        model_from_hf_config({**_config("GLM-5"), **change}, "bad")


def test_glm_5_resolves_through_its_architectures() -> None:
    """A re-release that renames model_type still reads by its GlmMoeDsaForCausalLM class."""
    renamed = {**_config("GLM-5"), "model_type": "glm5_custom"}
    spec, notes = model_from_hf_config(renamed, "renamed")
    assert spec.total_params == read_hf_config(CONFIGS / "GLM-5" / "config.json")[0].total_params
    assert any("read as glm_moe_dsa" in n for n in notes)


# ---- Nemotron-H: Mamba-2, attention and squared-ReLU MLP blocks, each alone ----------------
def _mamba2_by_hand(t: dict[str, Any]) -> tuple[int, int]:
    """One NemotronHMamba2Mixer's weights and state, module by module: in_proj (z, x, B, C and
    dt: 2 I + 2 G N + H), conv1d over x, B, C with its bias, dt_bias, A_log, D, the gated norm
    over I, out_proj; the state is H x head_dim x N plus the conv's last kernel - 1 inputs."""
    D, H, P = t["hidden_size"], t["mamba_num_heads"], t["mamba_head_dim"]
    G, N, kernel = t["n_groups"], t["ssm_state_size"], t["conv_kernel"]
    inner = H * P
    channels = inner + 2 * G * N
    weights = D * (2 * inner + 2 * G * N + H) + channels * (kernel + 1) + 3 * H + inner
    return weights + inner * D, H * P * N + channels * (kernel - 1)


def _nemotron_h_by_hand(t: dict[str, Any]) -> int:
    """Per block of hybrid_override_pattern one norm and: M a Mamba-2 mixer, * GQA attention
    (q, k, v, o), - an MLP of two matrices (up, down: squared ReLU); the two embedding
    matrices and the final norm."""
    D, N, K = t["hidden_size"], t["num_attention_heads"], t["num_key_value_heads"]
    H = t.get("head_dim") or t.get("attention_head_dim") or D // N
    pattern = t["hybrid_override_pattern"]
    mamba, _ = _mamba2_by_hand(t)
    block = {"M": mamba, "*": 2 * D * N * H + 2 * D * K * H, "-": 2 * D * t["intermediate_size"]}
    return sum(block[c] + D for c in pattern) + 2 * t["vocab_size"] * D + D


def test_nemotron_h_counts_its_blocks_and_kv_on_attention_blocks_only() -> None:
    """Nemotron-H-8B-Base-8K: 52 blocks, 24 Mamba-2, 4 attention (GQA, 32 heads, 8 KV heads
    of 128) and 24 MLPs of 21,504 with squared ReLU (no gate)."""
    t = _config("Nemotron-H-8B-Base-8K")
    spec, notes = read_hf_config(CONFIGS / "Nemotron-H-8B-Base-8K" / "config.json")
    assert spec.total_params == pytest.approx(_nemotron_h_by_hand(t), rel=1e-3)
    # NVIDIA ADLR's Nemotron-H page and the Nemotron-H report (arXiv 2504.03624): "8B",
    # 24 Mamba-2, 24 MLP and 4 self-attention layers; one figure, so within 2%.
    assert spec.total_params == pytest.approx(8e9, rel=0.02)
    assert (spec.n_state_layers, spec.n_attention_layers, spec.n_mlp_only_layers) == (24, 4, 24)
    assert not spec.gated_mlp and spec.mlp_params_per_expert == 2 * 4096 * 21504
    # KV on the 4 attention blocks only; each Mamba-2 block a constant state, in the KV dtype.
    assert spec.kv_bytes_per_token("bf16") == 4 * 2 * 8 * 128 * 2
    _, state = _mamba2_by_hand(t)
    assert spec.state_bytes_per_sequence("bf16") == 24 * state * 2
    T = 8192
    held = float(spec.kv_bytes_per_token("bf16", T)) * T
    assert held == pytest.approx(4 * 2 * 8 * 128 * 2 * T + 24 * state * 2, rel=1e-12)
    assert float(spec.kv_bytes_read("bf16", T)) == pytest.approx(held, rel=1e-12)
    assert spec.tp_all_reduces_per_layer == 1  # one mixer or MLP a block
    assert any("constant state" in n for n in notes)


def test_nemotron_nano_2_pattern_with_adjacent_mamba_blocks() -> None:
    """NVIDIA-Nemotron-Nano-9B-v2's shape as a trimmed public copy gives it (index id
    71543829462: 56 blocks with "MM" runs, Mamba heads of 80) and its fp32 SSM cache
    (mamba_ssm_cache_dtype, as Nemotron's newer configs write it), counted by hand."""
    t = {
        **_config("Nemotron-H-8B-Base-8K"),
        "num_hidden_layers": 56,
        "hidden_size": 4480,
        "intermediate_size": 15680,
        "num_attention_heads": 40,
        "head_dim": 128,
        "mamba_head_dim": 80,
        "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
        "mamba_ssm_cache_dtype": "float32",
    }
    spec, _ = model_from_hf_config(t, "Nemotron-Nano-9B-v2")
    assert spec.total_params == pytest.approx(_nemotron_h_by_hand(t), rel=1e-3)
    assert (spec.n_state_layers, spec.n_attention_layers, spec.n_mlp_only_layers) == (27, 4, 25)
    _, state = _mamba2_by_hand(t)
    assert spec.state_bytes_per_sequence("bf16") == 27 * state * 4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hybrid_override_pattern": "MEMEM*EMEM" * 5 + "M-"}, "'hybrid_override_pattern' ="),
        ({"hybrid_override_pattern": "M-" * 26}, "'hybrid_override_pattern' has no attention"),
        ({"hybrid_override_pattern": "M*-" * 10}, "has 30 blocks but 'num_hidden_layers' is 52"),
        ({"mlp_hidden_act": "silu"}, "field 'mlp_hidden_act' = 'silu' is not understood"),
        ({"mamba_num_heads": 0}, "'mamba_num_heads' must be a whole number from 1"),
        ({"use_conv_bias": "yes"}, "'use_conv_bias' must be true or false"),
    ],
)
def test_nemotron_h_fields_the_model_cannot_describe_name_the_field(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        model_from_hf_config({**_config("Nemotron-H-8B-Base-8K"), **change}, "bad")


def test_nemotron_h_reads_layers_block_type_without_num_hidden_layers() -> None:
    """Newer Nemotron configs spell the blocks as a list and drop num_hidden_layers."""
    t = _config("Nemotron-H-8B-Base-8K")
    names = {"M": "mamba", "*": "attention", "-": "mlp"}
    listed = {
        **t,
        "hybrid_override_pattern": None,
        "num_hidden_layers": None,
        "layers_block_type": [names[c] for c in t["hybrid_override_pattern"]],
    }
    spec, _ = model_from_hf_config(listed, "listed")
    assert spec == model_from_hf_config(t, "listed")[0]


# ---- Kimi Linear: Kimi Delta Attention beside MLA, MoE ----------------------------------------
def _kimi_delta_by_hand(t: dict[str, Any]) -> tuple[int, int]:
    """One KimiDeltaAttention's weights and state, module by module (SGLang's kimi_linear.py,
    adapted from vLLM's): q, k, v (D -> P), f_a (D -> d), f_b (d -> P), dt_bias (P), b_proj
    (D -> heads), q/k/v conv1d (P x kernel each, no bias), A_log (heads), g_a, g_b, o_norm
    (d), o_proj (P -> D); the state is a d x d matrix per head plus three convs' last
    kernel - 1 inputs."""
    D, linear = t["hidden_size"], t["linear_attn_config"]
    heads, d, kernel = linear["num_heads"], linear["head_dim"], linear["short_conv_kernel_size"]
    P = heads * d
    weights = 3 * D * P + D * d + d * P + P + D * heads + 3 * P * kernel + heads
    weights += D * d + d * P + d + P * D
    return weights, heads * d * d + 3 * P * (kernel - 1)


def _kimi_linear_by_hand(t: dict[str, Any]) -> int:
    """MLA without a query latent (q_proj D -> N (nope + rope); kv_a_proj_with_mqa, its norm,
    kv_b_proj, o_proj) in the full-attention layers, KDA in the others, two norms a layer,
    first_k_dense_replace dense MLPs, then the routed experts, num_shared_experts shared
    ones, the router and its correction bias; two embedding matrices and the final norm."""
    D, L, N = t["hidden_size"], t["num_hidden_layers"], t["num_attention_heads"]
    kv, nope, rope, v = (t[k] for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                        "v_head_dim"))  # fmt: skip
    mla = D * N * (nope + rope) + D * (kv + rope) + kv + kv * N * (nope + v) + N * v * D
    full = len(t["linear_attn_config"]["full_attn_layers"])
    kda, _ = _kimi_delta_by_hand(t)
    E, width, dense = t["num_experts"], t["moe_intermediate_size"], t["first_k_dense_replace"]
    moe = (E + t["num_shared_experts"]) * 3 * D * width + D * E + E
    mlps = dense * 3 * D * t["intermediate_size"] + (L - dense) * moe
    return full * mla + (L - full) * kda + L * 2 * D + mlps + 2 * t["vocab_size"] * D + D


def test_kimi_linear_counts_kda_layers_and_mla_kv_only() -> None:
    """Kimi-Linear-48B-A3B-Instruct: 27 layers, MLA at (1-based) 4, 8, ..., 24 and 27, KDA in
    the 20 others (32 heads of 128); 256 experts of 1,024, top-8, one shared, after one
    dense layer."""
    t = _config("Kimi-Linear-48B-A3B-Instruct")
    spec, notes = read_hf_config(CONFIGS / "Kimi-Linear-48B-A3B-Instruct" / "config.json")
    assert spec.total_params == pytest.approx(_kimi_linear_by_hand(t), rel=1e-3)
    # Moonshot AI's Kimi-Linear README (MoonshotAI/Kimi-Linear): "48B" total, "3B" activated.
    # The config counts 49.1B: its 26 x 257 experts alone hold 47.3B, so the name's 48B is
    # rounded down; held within 3%. The 3B is matched by the weights a token multiplies
    # (3.11B; 2.73B without either embedding, 3.48B with both).
    assert spec.total_params == pytest.approx(48e9, rel=0.03)
    assert spec.matmul_params_per_token == pytest.approx(3e9, rel=0.05)
    assert (spec.n_attention_layers, spec.n_state_layers, spec.n_dense_layers) == (7, 20, 1)
    assert spec.attention_kind == "MLA" and spec.mla_q_lora_rank == 0
    # KV: the 7 MLA layers' latents (512 + 64, the NoPE model still caches the 64) ...
    kv = 7 * (512 + 64) * 2
    assert spec.kv_bytes_per_token("bf16") == kv
    # ... and each KDA layer's constant state, read once a step like the cache.
    _, state = _kimi_delta_by_hand(t)
    assert spec.state_bytes_per_sequence("bf16") == 20 * state * 2
    T = 1_048_576
    assert float(spec.kv_bytes_read("bf16", T)) == pytest.approx(kv * T + 20 * state * 2)
    assert any("constant state" in n for n in notes)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"linear_attn_config": None}, "field 'linear_attn_config' must list 'kda_layers'"),
        (
            {"linear_attn_config": {"num_heads": 32, "head_dim": 128, "full_attn_layers": [4]}},
            "field 'linear_attn_config' must list 'kda_layers'",
        ),
        (
            {"linear_attn_config": {"kda_layers": list(range(1, 28)), "full_attn_layers": []}},
            "at least one full-attention (MLA) layer",
        ),
        ({"mla_use_output_gate": True}, "'mla_use_output_gate' are not modelled"),
        ({"moe_layer_freq": 2}, "field 'moe_layer_freq'"),
        ({"hidden_act": "situ"}, "field 'hidden_act' = 'situ' is not understood"),
    ],
)
def test_kimi_linear_fields_the_model_cannot_describe_name_the_field(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        model_from_hf_config({**_config("Kimi-Linear-48B-A3B-Instruct"), **change}, "bad")


def test_kimi_linear_sub_fields_name_themselves() -> None:
    t = _config("Kimi-Linear-48B-A3B-Instruct")
    bad = {**t, "linear_attn_config": {**t["linear_attn_config"], "num_heads": "32"}}
    with pytest.raises(ValueError, match=re.escape("'linear_attn_config.num_heads' must be")):
        model_from_hf_config(bad, "bad")

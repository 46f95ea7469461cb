"""llmmath.core.models: shapes, parameter counts, FLOPs and KV bytes per token, and bad shapes.

Expected values are derived here from the formulas in reference.md (written out in the
tests, not read back from the package), on small made-up shapes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from model_support import toy

from llmmath.core import models
from llmmath.core.models import get_model, list_models, model_from_dict

PRESETS = ["Llama-3-8B", "Llama-3-70B", "Llama-3.1-405B", "Llama-2-13B", "Mixtral-8x7B"]


def dense_params(L: int, D: int, F: int, N: int, K: int, H: int, V: int, tied: bool) -> int:
    """reference.md: L (3DF + 2DNH + 2DKH + 2D norms) + V D (x2 unless tied) + D final norm."""
    return L * (3 * D * F + 2 * D * N * H + 2 * D * K * H + 2 * D) + V * D * (1 if tied else 2) + D


# ---- presets ------------------------------------------------------------------------------
def test_presets_are_listed() -> None:
    assert set([*PRESETS, "DeepSeek-V3"]) <= set(list_models())


@pytest.mark.parametrize("name", [*PRESETS, "DeepSeek-V3"])
def test_preset_records_its_source(name: str) -> None:
    model = get_model(name)
    assert model.name == name
    assert model.source and model.source_date


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Llama-3-8B", "GQA"),
        ("Llama-3-70B", "GQA"),
        ("Llama-2-13B", "MHA"),
        ("Mixtral-8x7B", "GQA"),
        ("DeepSeek-V3", "MLA"),
    ],
)
def test_attention_kind_of_presets(name: str, kind: str) -> None:
    assert get_model(name).attention_kind == kind


def test_attention_kind_of_custom_shapes() -> None:
    assert toy(n_kv_heads=1).attention_kind == "MQA"
    assert toy(n_kv_heads=8).attention_kind == "MHA"
    assert toy(n_kv_heads=4).attention_kind == "GQA"


def test_get_model_passes_a_config_through() -> None:
    model = toy()
    assert get_model(model) is model


def test_configs_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_model("Llama-3-8B").n_layers = 1  # type: ignore[misc]


def test_moe_flags() -> None:
    assert not get_model("Llama-3-70B").is_moe
    assert get_model("Llama-3-70B").n_moe_layers == 0
    mixtral = get_model("Mixtral-8x7B")
    assert mixtral.is_moe and mixtral.n_moe_layers == 32
    assert get_model("DeepSeek-V3").n_moe_layers == 61 - 3


# ---- parameters ---------------------------------------------------------------------------
@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("kv_heads", [1, 2, 8])
def test_dense_parameter_count_matches_the_formula(tied: bool, kv_heads: int) -> None:
    model = toy(n_kv_heads=kv_heads, tied_embeddings=tied)
    expected = dense_params(4, 64, 256, 8, kv_heads, 8, 1000, tied)
    assert model.total_params == expected
    assert model.active_params == expected


@pytest.mark.parametrize("name", PRESETS[:4])
def test_dense_presets_match_the_formula(name: str) -> None:
    m = get_model(name)
    expected = dense_params(
        m.n_layers, m.d_model, m.d_ff, m.n_heads, m.n_kv_heads, m.head_dim, m.vocab_size, False
    )
    assert m.total_params == expected


def test_tying_embeddings_saves_one_vocabulary_matrix() -> None:
    assert toy().total_params - toy(tied_embeddings=True).total_params == 1000 * 64


def test_moe_total_and_active_differ_by_the_unused_experts() -> None:
    moe = toy(n_experts=8, experts_per_token=2, d_ff_expert=128, n_dense_layers=1)
    per_expert = 3 * 64 * 128
    assert moe.mlp_params_per_expert == per_expert
    assert moe.n_moe_layers == 3
    assert moe.total_params - moe.active_params == 3 * (8 - 2) * per_expert
    # One dense layer (dense MLP of d_ff) and three MoE layers (8 experts + a D x E router).
    attention = 2 * 64 * 8 * 8 + 2 * 64 * 2 * 8
    dense_layer = attention + 3 * 64 * 256 + 2 * 64
    moe_layer = attention + 8 * per_expert + 64 * 8 + 2 * 64
    assert moe.total_params == dense_layer + 3 * moe_layer + 2 * 1000 * 64 + 64


def test_shared_experts_count_in_both_total_and_active() -> None:
    plain = toy(n_experts=8, experts_per_token=2)
    shared = toy(n_experts=8, experts_per_token=2, n_shared_experts=1)
    extra = 4 * 3 * 64 * 256  # every layer is MoE; experts default to d_ff wide
    assert shared.total_params - plain.total_params == extra
    assert shared.active_params - plain.active_params == extra


def test_moe_with_every_expert_active_is_a_wider_dense_model() -> None:
    moe = toy(n_experts=4, experts_per_token=4)
    assert moe.active_params == moe.total_params


def test_matmul_params_leave_out_the_input_embedding() -> None:
    assert toy().active_params - toy().matmul_params_per_token == 1000 * 64
    tied = toy(tied_embeddings=True)  # the one matrix is also the unembedding matmul
    assert tied.matmul_params_per_token == tied.active_params


@pytest.mark.parametrize(("dtype", "size"), [("fp32", 4), ("bf16", 2), ("int8", 1), ("int4", 0.5)])
def test_weight_bytes(dtype: str, size: float) -> None:
    model = toy()
    assert model.weight_bytes(dtype) == model.total_params * size


# ---- FLOPs --------------------------------------------------------------------------------
def test_forward_flops_without_context_are_twice_the_matmul_params() -> None:
    model = toy()
    assert model.forward_flops_per_token() == 2 * model.matmul_params_per_token
    assert isinstance(model.forward_flops_per_token(0), float)


def test_attention_flops_grow_linearly_with_context() -> None:
    model = toy()
    base = model.forward_flops_per_token(0)
    # QK^T and AV each cost 2 T N H per layer (reference.md: ~4 L T N H per token).
    for T in (1, 100, 4096):
        assert model.forward_flops_per_token(T) - base == pytest.approx(4 * 4 * T * 8 * 8)


def test_forward_flops_accept_arrays() -> None:
    model = toy()
    contexts = np.array([0, 10, 1000])
    result = model.forward_flops_per_token(contexts)
    assert isinstance(result, np.ndarray) and result.shape == (3,)
    assert list(result) == [model.forward_flops_per_token(int(t)) for t in contexts]


def test_training_flops_are_three_forward_passes() -> None:
    model = get_model("Llama-3-8B")
    assert model.training_flops_per_token() == pytest.approx(3 * model.forward_flops_per_token())


@pytest.mark.parametrize("bad", [-1, -0.5, float("nan"), [0, -3]])
def test_negative_context_is_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="context must be finite and >= 0"):
        toy().forward_flops_per_token(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["100", None, True])
def test_context_of_the_wrong_type_is_rejected(bad: object) -> None:
    with pytest.raises(TypeError, match="context must be a number"):
        toy().forward_flops_per_token(bad)  # type: ignore[arg-type]


# ---- KV cache -----------------------------------------------------------------------------
@pytest.mark.parametrize(("dtype", "size"), [("bf16", 2), ("fp8", 1), ("int8", 1), ("fp32", 4)])
def test_kv_bytes_per_token_gqa(dtype: str, size: float) -> None:
    # 2 (K and V) x L x K x H elements.
    assert toy().kv_elements_per_token() == 2 * 4 * 2 * 8
    assert toy().kv_bytes_per_token(dtype) == 2 * 4 * 2 * 8 * size


def test_kv_cache_shrinks_by_the_query_to_kv_head_ratio() -> None:
    mha, mqa = toy(n_kv_heads=8), toy(n_kv_heads=1)
    assert mha.kv_bytes_per_token() == 8 * mqa.kv_bytes_per_token()


def test_mla_caches_one_latent_per_layer() -> None:
    mla = toy(mla_kv_lora_rank=32, mla_q_lora_rank=48, mla_rope_head_dim=4, n_kv_heads=8)
    assert mla.attention_kind == "MLA"
    assert mla.kv_elements_per_token() == 4 * (32 + 4)
    assert mla.kv_bytes_per_token("bf16") == 4 * 36 * 2


def test_mla_attention_parameters() -> None:
    D, N, H, q, kv, rope = 64, 8, 8, 48, 32, 4
    mla = toy(
        mla_kv_lora_rank=kv, mla_q_lora_rank=q, mla_rope_head_dim=rope, n_kv_heads=N, head_dim=H
    )
    # Queries: down-projection, its norm, up to N heads of (H + rope); keys/values: down to
    # the latent plus the shared rope key, its norm, up to N heads of K and V; output N H x D.
    expected = (
        (D * q + q + q * N * (H + rope)) + (D * (kv + rope) + kv + kv * N * 2 * H) + N * H * D
    )
    assert mla.attention_params_per_layer == expected


def test_mla_without_a_query_latent_has_a_full_query_projection() -> None:
    # DeepSeek-V2-Lite (config.json q_lora_rank: null) projects queries straight from D to
    # N heads of (H + rope), so mla_q_lora_rank=0 must mean a D x N (H + rope) matrix.
    D, N, H, kv, rope = 64, 8, 8, 32, 4
    mla = toy(mla_kv_lora_rank=kv, mla_rope_head_dim=rope, n_kv_heads=N, head_dim=H)
    expected = D * N * (H + rope) + (D * (kv + rope) + kv + kv * N * 2 * H) + N * H * D
    assert mla.attention_params_per_layer == expected


def test_unknown_kv_dtype_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown dtype 'fp4'; known: bf16, fp16, fp32"):
        toy().kv_bytes_per_token("fp4")


# ---- bad shapes ---------------------------------------------------------------------------
def test_heads_not_divisible_by_kv_heads() -> None:
    with pytest.raises(ValueError, match="n_heads=64 is not divisible by n_kv_heads=6"):
        toy(n_heads=64, n_kv_heads=6)


@pytest.mark.parametrize(
    "field",
    [
        "n_layers",
        "d_model",
        "d_ff",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "vocab_size",
        "max_context",
    ],
)
@pytest.mark.parametrize("bad", [0, -4])
def test_counts_must_be_at_least_one(field: str, bad: int) -> None:
    with pytest.raises(ValueError, match=f"toy: {field} must be >= 1; got {bad}"):
        toy(**{field: bad})


@pytest.mark.parametrize("bad", [64.0, "64", True, None])
def test_counts_must_be_integers(bad: object) -> None:
    with pytest.raises(TypeError, match="d_model must be an integer"):
        toy(d_model=bad)


def test_numpy_integers_are_accepted() -> None:
    assert toy(d_model=np.int64(64)).total_params == toy().total_params


def test_more_experts_per_token_than_experts() -> None:
    with pytest.raises(ValueError, match="experts_per_token=9 exceeds n_experts=8"):
        toy(n_experts=8, experts_per_token=9)


def test_moe_needs_experts_per_token() -> None:
    with pytest.raises(ValueError, match="experts_per_token must be >= 1"):
        toy(n_experts=8)


@pytest.mark.parametrize("bad", [4, 5, -1])
def test_dense_layers_must_leave_some_moe_layers(bad: int) -> None:
    with pytest.raises(ValueError, match=r"n_dense_layers must be (in \[0, n_layers\)|>= 0)"):
        toy(n_experts=8, experts_per_token=2, n_dense_layers=bad)


@pytest.mark.parametrize(
    "field", ["n_shared_experts", "d_ff_expert", "mla_kv_lora_rank", "mla_rope_head_dim"]
)
def test_optional_counts_must_not_be_negative(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        toy(n_experts=8, experts_per_token=2, **{field: -1})


def test_experts_per_token_needs_experts() -> None:
    with pytest.raises(ValueError, match="experts_per_token"):
        toy(experts_per_token=2)


def test_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown model 'Llama-4'") as info:
        get_model("Llama-4")
    for name in PRESETS:
        assert name in str(info.value)


def test_model_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match="model must be a string"):
        get_model(70)  # type: ignore[arg-type]


def test_model_from_dict_names_unknown_fields() -> None:
    spec = {"n_layers": 2, "d_model": 8, "d_ff": 16, "n_heads": 2, "n_kv_heads": 2}
    spec |= {"head_dim": 4, "vocab_size": 10, "max_context": 16, "hidden_size": 8}
    with pytest.raises(ValueError, match=r"unknown fields \['hidden_size'\]"):
        model_from_dict("tiny", spec)
    del spec["hidden_size"]
    assert model_from_dict("tiny", spec).name == "tiny"


# ---- hybrid local/global attention (Gemma 2/3/4) ----------------------------------------
# Layer lists built as Hugging Face's Gemma configs build layer_types: layer i is global when
# (i + 1) % 6 == 0 (configuration_gemma4.py; Gemma 3's sliding_window_pattern = 6).
def _layer_types(n_layers: int, period: int = 6) -> list[str]:
    return ["full" if (i + 1) % period == 0 else "sliding" for i in range(n_layers)]


def test_gemma_4_layer_counts_are_the_configs() -> None:
    # 31B: "5x sliding_attention followed by 1x full_attention, repeated 10 times -> 50 SWA
    # layers, 10 global" (the official config.json, as ik_llama.cpp issue #1607 quotes it).
    big, moe = get_model("Gemma-4-31B"), get_model("Gemma-4-26B-A4B")
    assert (big.n_local_layers, big.n_global_layers) == (50, 10)
    assert (moe.n_local_layers, moe.n_global_layers) == (25, 5)
    for spec in (big, moe):
        assert _layer_types(spec.n_layers).count("full") == spec.n_global_layers
        assert _layer_types(spec.n_layers)[-1] == "full"  # Gemma 4: the last layer is global


def _gemma_4_params(
    L: int, D: int, N: int, K: int, K_g: int, V: int, mlp_per_layer: int, router: int
) -> int:
    """By hand: local layers W_Q, W_O (256-wide heads), W_K, W_V; global layers W_Q, W_O
    (512-wide heads) and W_K only (values from the key projection); two norms a layer, the
    tied embedding, the final norm."""
    local = 2 * D * N * 256 + 2 * D * K * 256
    glob = 2 * D * N * 512 + D * K_g * 512
    n_global = L // 6
    attention = (L - n_global) * local + n_global * glob
    return attention + L * (mlp_per_layer + router + 2 * D) + V * D + D


def test_gemma_4_31b_parameters_by_hand_and_published() -> None:
    spec = get_model("Gemma-4-31B")
    by_hand = _gemma_4_params(60, 5376, 32, 16, 4, 262144, 3 * 5376 * 21504, 0)
    assert spec.total_params == by_hand == spec.active_params
    assert spec.total_params == pytest.approx(30.7e9, rel=0.005)  # model card: 30.7B


def test_gemma_4_26b_a4b_parameters_by_hand_and_published() -> None:
    spec = get_model("Gemma-4-26B-A4B")
    D, expert = 2816, 3 * 2816 * 704
    dense_mlp = 3 * D * 2112  # the per-layer dense MLP, counted as three shared experts
    total = _gemma_4_params(30, D, 16, 8, 2, 262144, 128 * expert + dense_mlp, D * 128)
    active = _gemma_4_params(30, D, 16, 8, 2, 262144, 8 * expert + dense_mlp, D * 128)
    assert (spec.total_params, spec.active_params) == (total, active)
    # Model card: 25.2B total, 3.8B active (both rounded to 0.1B).
    assert spec.total_params == pytest.approx(25.2e9, rel=0.005)
    assert spec.active_params == pytest.approx(3.8e9, rel=0.015)


# The counts before the layer pattern was added (commit b7fe0be): a model without a window
# keeps its parameters, its KV bytes at every context and its attention FLOPs.
BEFORE_THE_PATTERN = {
    "Llama-3-8B": (8_030_261_248, 131_072),
    "Llama-3-70B": (70_553_706_496, 327_680),
    "Llama-3.1-405B": (405_853_388_800, 516_096),
    "Llama-2-13B": (13_015_864_320, 819_200),
    "Mixtral-8x7B": (46_702_792_704, 131_072),
    "DeepSeek-V3": (671_026_404_352, 70_272),
    "PaLM-540B": (540_358_649_856, 120_832),
}


@pytest.mark.parametrize("name", list(BEFORE_THE_PATTERN))
def test_presets_without_a_window_keep_their_counts(name: str) -> None:
    spec = get_model(name)
    params, kv = BEFORE_THE_PATTERN[name]
    assert spec.total_params == params
    assert spec.kv_bytes_per_token("bf16") == kv
    assert np.all(spec.kv_bytes_per_token("bf16", [0.0, 1.0, 5e3, 1e6]) == kv)
    assert (spec.n_global_layers, spec.n_local_layers) == (spec.n_layers, 0)


def test_attention_flops_see_the_window() -> None:
    spec = get_model("Gemma-4-31B")
    for T in (100.0, 1024.0, 5000.0):
        by_layer = sum(
            2 * min(T, 1024) * 32 * 2 * 256 if kind == "sliding" else 2 * T * 32 * 2 * 512
            for kind in _layer_types(60)
        )
        assert float(spec.attention_flops_per_token(T)) == pytest.approx(by_layer, rel=1e-12)


def test_every_layer_local_without_a_global_pattern() -> None:
    model = toy(sliding_window=16)  # Mistral-7B-v0.1 style: a window on every layer
    assert (model.n_local_layers, model.n_global_layers) == (4, 0)
    full = 2 * 4 * 2 * 8 * 2
    assert float(model.kv_bytes_per_token("bf16", 64)) == pytest.approx(full * 16 / 64, rel=1e-12)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"local_per_global": 5}, "local_per_global is set but sliding_window is 0"),
        ({"global_head_dim": 16}, "global_head_dim is set but sliding_window is 0"),
        ({"sliding_window": 8, "global_kv_heads": 2}, "local_per_global is 0"),
        ({"sliding_window": 8, "local_per_global": 1, "global_kv_heads": 3}, "global_kv_heads=3"),
        ({"sliding_window": -1}, "sliding_window must be >= 0"),
    ],
)
def test_pattern_fields_are_checked(fields: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        toy(**fields)


# ---- hybrids (#43): state layers cache no tokens, hold a constant state ---------------------
def _hybrid(**fields: object) -> models.ModelConfig:
    """A Qwen3-Next-like toy: 8 layers, 6 of them gated-DeltaNet state layers."""
    shape: dict[str, object] = dict(
        name="hybrid", n_layers=8, d_model=256, d_ff=512, n_heads=4, n_kv_heads=2, head_dim=64,
        vocab_size=1000, max_context=1 << 20, n_state_layers=6, state_layer_params=123_456,
        state_elements_per_layer=10_000,
    )  # fmt: skip
    return models.ModelConfig(**{**shape, **fields})  # type: ignore[arg-type]


def test_state_layers_replace_attention_weights_and_kv() -> None:
    hybrid, dense = _hybrid(), _hybrid(n_state_layers=0, state_layer_params=0,
                                       state_elements_per_layer=0)  # fmt: skip
    per_layer = dense.attention_params_per_layer
    assert hybrid.attention_params == 2 * per_layer + 6 * 123_456
    assert hybrid.kv_elements_per_token() == dense.kv_elements_per_token() // 4  # 2 of 8
    assert hybrid.state_bytes_per_sequence("bf16") == 6 * 10_000 * 2
    assert _hybrid(state_dtype="fp32").state_bytes_per_sequence("bf16") == 6 * 10_000 * 4
    # Attention FLOPs over the context: the attention layers only.
    assert hybrid.attention_flops_per_token(1000) == dense.attention_flops_per_token(1000) / 4
    gated = _hybrid(attention_output_gate=True)
    assert gated.attention_params_per_layer - per_layer == 256 * 4 * 64  # the gate: D N H


def test_the_constant_state_is_held_per_sequence_in_the_capacity_count() -> None:
    from llmmath.core.deployment import Deployment

    hybrid = _hybrid()
    dep = Deployment(hybrid, "H100")
    kv, state = hybrid.kv_bytes_per_token("bf16"), hybrid.state_bytes_per_sequence("bf16")
    B, T = np.array([1.0, 8.0]), np.array([100.0, 100_000.0])
    assert np.allclose(dep.kv_bytes_held(B, T), B * (T * kv + state), rtol=1e-12)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"n_state_layers": 8}, "n_state_layers must be < n_layers=8"),
        ({"n_state_layers": 0}, "state_layer_params is set but n_state_layers is 0"),
        ({"sliding_window": 128}, "n_state_layers is not modelled with sliding_window"),
        ({"state_dtype": "fp7"}, "state_dtype"),
    ],
)
def test_state_layers_that_cannot_be_counted_are_refused(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _hybrid(**fields)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"n_kv_shared_layers": 8}, "n_kv_shared_layers must be < n_layers=8"),
        ({"double_wide_shared_mlp": True}, "double_wide_shared_mlp needs n_kv_shared_layers"),
        ({"per_layer_input_dim": 16}, "per_layer_input_dim and per_layer_vocab_size"),
        ({"n_kv_shared_layers": 2, "n_state_layers": 1, "state_layer_params": 1,
          "state_elements_per_layer": 1}, "n_kv_shared_layers is modelled with GQA layers only"),
    ],
)  # fmt: skip
def test_e_model_fields_that_cannot_be_counted_are_refused(
    fields: dict[str, object], message: str
) -> None:
    shape: dict[str, object] = dict(
        name="e", n_layers=8, d_model=256, d_ff=512, n_heads=4, n_kv_heads=2, head_dim=64,
        vocab_size=1000, max_context=4096,
    )  # fmt: skip
    with pytest.raises(ValueError, match=message):
        models.ModelConfig(**{**shape, **fields})  # type: ignore[arg-type]


def test_kv_shared_layers_keep_queries_and_drop_keys_values_and_cache() -> None:
    shape: dict[str, object] = dict(
        name="e", n_layers=8, d_model=256, d_ff=512, n_heads=4, n_kv_heads=2, head_dim=64,
        vocab_size=1000, max_context=4096,
    )  # fmt: skip
    plain = models.ModelConfig(**shape)  # type: ignore[arg-type]
    shared = models.ModelConfig(**{**shape, "n_kv_shared_layers": 6})  # type: ignore[arg-type]
    D, K, H = 256, 2, 64
    assert plain.attention_params - shared.attention_params == 6 * 2 * D * K * H
    assert shared.kv_elements_per_token() == plain.kv_elements_per_token() // 4  # 2 of 8
    assert shared.attention_flops_per_token(1000) == plain.attention_flops_per_token(1000)


# ---- sparse attention (#43): the indexer picks k tokens, every token stays cached ----------
def _sparse(**fields: object) -> models.ModelConfig:
    """A DeepSeek-V3.2-like toy: MLA in 4 layers, an indexer that picks 16 tokens."""
    shape: dict[str, object] = dict(
        name="sparse", n_layers=4, d_model=256, d_ff=512, n_heads=8, n_kv_heads=8, head_dim=32,
        vocab_size=1000, max_context=1 << 20, mla_kv_lora_rank=64, mla_q_lora_rank=96,
        mla_rope_head_dim=16, index_topk=16, index_n_heads=4, index_head_dim=32,
        index_key_bytes=36,
    )  # fmt: skip
    return models.ModelConfig(**{**shape, **fields})  # type: ignore[arg-type]


def _dense_of(sparse: models.ModelConfig) -> models.ModelConfig:
    return dataclasses.replace(
        sparse, index_topk=0, index_n_heads=0, index_head_dim=0, index_key_bytes=0
    )


def test_sparse_attention_holds_every_token_and_the_index_keys() -> None:
    sparse = _sparse()
    dense = _dense_of(sparse)
    latent = 4 * (64 + 16)  # L (r_kv + r_rope) numbers a token
    assert dense.kv_bytes_per_token("bf16") == latent * 2
    # Held: the whole latent of every token, plus 36 B of index key a layer.
    assert sparse.kv_bytes_per_token("bf16") == latent * 2 + 4 * 36
    assert np.allclose(sparse.kv_bytes_per_token("fp8", [10.0, 1e5]), latent + 4 * 36)


def test_sparse_attention_reads_k_tokens_and_every_index_key() -> None:
    sparse, T = _sparse(), np.array([0.0, 8.0, 16.0, 100.0, 1e5])
    dense = _dense_of(sparse)
    latent_bytes = 4 * (64 + 16) * 2
    expected = np.minimum(T, 16) * latent_bytes + T * 4 * 36  # written out, not read back
    assert np.allclose(sparse.kv_bytes_read("bf16", T), expected, rtol=1e-12)
    # Up to k it reads what it holds; dense attention reads everything it holds.
    assert np.allclose(sparse.kv_bytes_read("bf16", 16.0), 16 * sparse.kv_bytes_per_token())
    assert np.allclose(dense.kv_bytes_read("bf16", T), T * latent_bytes, rtol=1e-12)
    # Far past k the read grows by the index key alone: the ratio to dense tends to it.
    ratio = dense.kv_bytes_read("bf16", 1e9) / sparse.kv_bytes_read("bf16", 1e9)
    assert ratio == pytest.approx(latent_bytes / (4 * 36), rel=1e-6)


def test_sparse_attention_flops_and_indexer_weights() -> None:
    sparse = _sparse()
    dense = _dense_of(sparse)
    # Indexer: queries from the 96-wide query latent, a key from D with a LayerNorm, a weight
    # per head from D.
    indexer = 96 * 4 * 32 + 256 * 32 + 2 * 32 + 256 * 4
    assert sparse.attention_params - dense.attention_params == 4 * indexer
    absorbed = 2 * 64 + 16  # per head and cached token in decode
    for T in (8.0, 5000.0):
        flops = sparse.attention_flops_per_token(T, decode=True)
        attended = 2.0 * 4 * min(T, 16) * 8 * absorbed
        assert flops == pytest.approx(attended + 2.0 * 4 * T * 4 * 32, rel=1e-12)
    assert dense.attention_flops_per_token(5000.0, decode=True) == pytest.approx(
        2.0 * 4 * 5000 * 8 * absorbed, rel=1e-12
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"index_key_bytes": 0}, "set without index_key_bytes"),
        ({"index_topk": 0}, "set without index_topk"),
        ({"index_topk": -1}, "index_topk"),
    ],
)
def test_an_incomplete_indexer_is_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _sparse(**fields)


def test_sparse_attention_with_state_layers_is_refused() -> None:
    with pytest.raises(ValueError, match=r"index_topk .* modelled only"):
        _hybrid(index_topk=16, index_n_heads=4, index_head_dim=32, index_key_bytes=36)


def test_deepseek_v32_is_deepseek_v3_with_the_indexer_of_its_reference_code() -> None:
    """deepseek-ai/DeepSeek-V3.2-Exp inference/model.py (2025): Indexer(wq_b: q_lora_rank x
    64 x 128, wk: D x 128, k_norm: LayerNorm(128), weights_proj: D x 64) in each of the 61
    layers; k_cache fp8 of 128 plus an fp32 scale per 128 (132 B); index_topk 2048."""
    v3, v32 = get_model("DeepSeek-V3"), get_model("DeepSeek-V3.2")
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert v32.total_params - v3.total_params == 61 * indexer
    assert v32.kv_bytes_per_token("bf16") == v3.kv_bytes_per_token("bf16") + 61 * 132
    # DeepSeek's model card: 685B with the 14B multi-token-prediction module, not counted here.
    assert v32.total_params + 14e9 == pytest.approx(685e9, rel=0.005)
    read_128k = 2048 * v3.kv_bytes_per_token("bf16") + 131072 * 61 * 132
    assert v32.kv_bytes_read("bf16", 131072) == pytest.approx(read_128k, rel=1e-12)


def test_qwen3_next_preset_is_what_its_config_reads() -> None:
    """The preset's hybrid fields are hf_hybrid's reading of the release's config.json."""
    from pathlib import Path

    from llmmath.core.hf_config import read_hf_config

    path = Path(__file__).parents[1] / "data/hf_configs/Qwen3-Next-80B-A3B-Instruct/config.json"
    read, _ = read_hf_config(path)
    preset = get_model("Qwen3-Next-80B-A3B")
    for field in dataclasses.fields(preset):
        if field.name not in ("name", "source", "source_date"):
            assert getattr(preset, field.name) == getattr(read, field.name), field.name
    # 12 gated-attention layers of 2 KV heads of 256 cache keys and values.
    assert preset.kv_bytes_per_token("bf16") == 12 * 2 * 2 * 256 * 2

"""llmmath.core.hf_config: Hugging Face config.json files of several families, offline.

Each saved config (tests/data/hf_configs/, sources in its README) must give the parameter
count its publisher states, within 1%.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from llmmath.core import models
from llmmath.core.hf_config import model_from_hf_config, read_hf_config, weight_format

CONFIGS = Path(__file__).parents[1] / "data" / "hf_configs"

# (folder, published total, published active or None, where it is published)
PUBLISHED = [
    ("Qwen3-8B", 8.2e9, None, "Qwen3-8B model card: 8.2B (6.95B non-embedding)"),
    ("Qwen3-30B-A3B", 30.5e9, 3.3e9, "Qwen3-30B-A3B model card: 30.5B total, 3.3B activated"),
    ("gpt-oss-120b", 116.83e9, 5.13e9, "gpt-oss model card (arXiv 2508.10925), Table 1"),
    ("gemma-3-27b-it", 1_416e6 + 25_600e6, None, "Gemma 3 report (arXiv 2503.19786), Table 1"),
    ("Phi-3-mini-4k-instruct", 3.8e9, None, "Phi-3 report (arXiv 2404.14219): 3.8B"),
    ("Llama-3-8B", 8.03e9, None, "Hub safetensors count, meta-llama/Meta-Llama-3-8B"),
    ("Llama-3-70B", 70.6e9, None, "Hub safetensors count, meta-llama/Meta-Llama-3-70B"),
    ("Mixtral-8x7B", 46.7e9, 12.9e9, "Mistral AI, 'Mixtral of experts', 2023-12-11"),
    ("Qwen2.5-7B", 7.61e9, None, "Qwen2.5-7B model card"),
    ("Qwen2.5-0.5B", 0.49e9, None, "Qwen2.5-0.5B model card (tied embeddings)"),
    ("DeepSeek-V3", 671e9, 37e9, "DeepSeek-V3 report, arXiv 2412.19437"),
    ("gemma-2-9b", 917_504_000 + 8_324_201_984, None, "Gemma 2 report, arXiv 2408.00118"),
]


def _config(folder: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / folder / "config.json").read_text())
    return config


@pytest.mark.parametrize(("folder", "total", "active", "source"), PUBLISHED)
def test_parameter_counts_match_the_published_totals(
    folder: str, total: float, active: float | None, source: str
) -> None:
    spec, _ = read_hf_config(CONFIGS / folder / "config.json")
    assert spec.name == folder
    assert spec.total_params == pytest.approx(total, rel=0.01), source
    # Active counts are published to two or three figures, and publishers differ on whether
    # the input-embedding lookup is "activated" (CONVENTION): each is held to its own.
    counted = (
        spec.active_params if CONVENTION.get(folder) == "with" else spec.matmul_params_per_token
    )
    assert counted == pytest.approx(active or counted, rel=0.02), source


#: Whose active count includes the input embedding: Qwen's 3.3B and Meta's 17B do (3.04B and
#: 16.1B without); OpenAI's 5.13B (its Table 1: 4 of 128 experts, attention and unembedding)
#: and DeepSeek-V2-Lite's 2.4B do not. DeepSeek-V3's "37B" lies between (37.55B with it,
#: 36.63B without); Mixtral's 12.9B is 12.88B with it and 12.75B without.
CONVENTION = {"Qwen3-30B-A3B": "with", "Llama-4-Scout-17B-16E": "with", "Mixtral-8x7B": "with"}


def test_llama_4_scout_with_its_vision_encoder_is_the_published_total() -> None:
    """Meta's 109B total / 17B active includes the vision encoder, which the course does not
    model: its parameters come from vision_config by hand (34 layers of attention 4 D^2 and a
    GELU MLP 2 D F with D = 1408, F = 5632, plus the 4 x 1408 -> 4096 -> 4096 adapter and the
    4096 -> 5120 projector), ~0.87B beside the 107.8B text model."""
    spec, notes = read_hf_config(CONFIGS / "Llama-4-Scout-17B-16E" / "config.json")
    D, F, layers = 1408, 5632, 34
    vision = layers * (4 * D * D + 2 * D * F) + (4 * D * 4096 + 4096 * 4096) + 4096 * 5120
    assert spec.total_params + vision == pytest.approx(109e9, rel=0.01)
    assert spec.active_params == pytest.approx(17e9, rel=0.02)  # with the input embedding
    assert spec.n_experts == 16 and spec.n_shared_experts == 1 and spec.experts_per_token == 1
    assert spec.sliding_window == 8192 and spec.n_global_layers == 12  # every 4th layer NoPE
    assert any("vision encoder" in n for n in notes) and any("chunked" in n for n in notes)


@pytest.mark.parametrize(
    ("folder", "context", "windowed_layers", "window"),
    [
        ("gemma-2-9b", 8192, 21, 4096),  # Gemma 2 alternates, local first
        ("gemma-3-27b-it", 32768, 52, 1024),  # 5 local then 1 global (class default)
        ("gpt-oss-120b", 8192, 18, 128),  # layer_types
        ("Phi-3-mini-4k-instruct", 4096, 32, 2047),  # every layer (no pattern)
    ],
)
def test_kv_is_counted_layer_by_layer(
    folder: str, context: int, windowed_layers: int, window: int
) -> None:
    """The exact KV bytes per token at ``context``, summed layer by layer from the config's
    own fields: a windowed layer holds min(T, window) tokens, a global one T."""
    config = json.loads((CONFIGS / folder / "config.json").read_text())
    text = config.get("text_config", config)
    spec, _ = read_hf_config(CONFIGS / folder / "config.json")
    K, L = text["num_key_value_heads"], text["num_hidden_layers"]
    H = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    per_layer = 2 * K * H * 2  # keys and values, bf16
    total = sum(
        per_layer * (min(context, window) if i < windowed_layers else context) for i in range(L)
    )  # the order of the layers does not change the sum
    assert spec.n_local_layers == windowed_layers
    exact = float(spec.kv_bytes_per_token("bf16", context)) * context
    assert exact == pytest.approx(total, rel=1e-12)


def test_gemma_3_at_32k_caches_5_3_times_less_than_the_full_count() -> None:
    spec, _ = read_hf_config(CONFIGS / "gemma-3-27b-it" / "config.json")
    ratio = spec.kv_bytes_per_token("bf16") / float(spec.kv_bytes_per_token("bf16", 32768))
    assert ratio == pytest.approx(62 / (10 + 52 / 32), rel=1e-12)  # = 5.33
    assert spec.vocab_size == 262_208 and spec.tied_embeddings  # class defaults


def test_layer_types_that_are_not_the_pattern_are_refused() -> None:
    config = _config("gpt-oss-120b")
    odd = ["full_attention", "sliding_attention"] * 18
    with pytest.raises(ValueError, match="'layer_types' is not 0 windowed"):
        model_from_hf_config({**config, "layer_types": odd}, "x")
    with pytest.raises(ValueError, match="one of sliding_attention"):
        model_from_hf_config({**config, "layer_types": ["sliding_attention"] * 3}, "x")
    every = model_from_hf_config({**config, "layer_types": ["full_attention"] * 36}, "x")[0]
    assert every.sliding_window == 0


def test_gemma_4_reads_its_global_layers() -> None:
    """A config with Gemma 4's field names (Gemma4TextConfig: global_head_dim,
    num_global_key_value_heads, attention_k_eq_v, enable_moe_block, top_k_experts) and the
    shape of the Gemma-4-26B-A4B preset: the same model as the preset."""
    preset = models.get_model("Gemma-4-26B-A4B")
    text = {
        "model_type": "gemma4_text", "hidden_size": 2816, "num_hidden_layers": 30,
        "intermediate_size": 2112, "num_attention_heads": 16, "num_key_value_heads": 8,
        "num_global_key_value_heads": 2, "head_dim": 256, "global_head_dim": 512,
        "vocab_size": 262144, "max_position_embeddings": 262144, "sliding_window": 1024,
        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5,
        "attention_k_eq_v": True, "enable_moe_block": True, "num_experts": 128,
        "top_k_experts": 8, "moe_intermediate_size": 704, "hidden_size_per_layer_input": 0,
        "num_kv_shared_layers": 0,
    }  # fmt: skip
    spec, _ = model_from_hf_config({"model_type": "gemma4", "text_config": text}, "g4")
    for field in models.ModelConfig.__dataclass_fields__:
        if field not in ("name", "source", "source_date"):
            assert getattr(spec, field) == getattr(preset, field), field
    with pytest.raises(ValueError, match="per-layer input embeddings, read for Gemma 4 only"):
        model_from_hf_config({**_config("Llama-3-8B"), "hidden_size_per_layer_input": 256}, "x")


def test_quantization_config_says_which_format_holds_each_part() -> None:
    from llmmath.core.hf_config import weight_format

    gpt, _ = read_hf_config(CONFIGS / "gpt-oss-120b" / "config.json")
    fmt = weight_format(_config("gpt-oss-120b"), gpt)
    assert fmt is not None and fmt.experts == 4.25 / 8 and fmt.attention == 2.0
    assert fmt.description == "experts mxfp4; embeddings, attention, mlp bf16"
    deepseek, _ = read_hf_config(CONFIGS / "DeepSeek-V3" / "config.json")
    fp8 = weight_format(_config("DeepSeek-V3"), deepseek)
    assert fp8 is not None and (fp8.attention, fp8.experts, fp8.embeddings) == (1.0, 1.0, 2.0)
    # fbgemm_fp8 with the attention of every layer and two layers' MLPs left in bf16 (the
    # shape of Llama-3.1-405B-Instruct-FP8's list: constructed here, not its file).
    llama = models.get_model("Llama-3.1-405B")
    left = ["model.layers.*.self_attn", "model.layers.0.mlp", "model.layers.125.mlp", "lm_head"]
    quant = {"quant_method": "fbgemm_fp8", "modules_to_not_convert": left}
    mixed = weight_format({"quantization_config": quant}, llama)
    assert mixed is not None and mixed.attention == 2.0
    assert mixed.mlp == pytest.approx((2 * 2.0 + 124 * 1.0) / 126, rel=1e-12)
    assert "mlp fp8 (2% of its layers bf16)" in mixed.description
    tensors = {
        "quant_method": "compressed-tensors",
        "ignore": ["lm_head"],
        "config_groups": {
            "g": {
                "targets": ["Linear"],
                "weights": {"type": "int", "num_bits": 4, "group_size": 128},
            }
        },
    }
    w4 = weight_format({"quantization_config": tensors}, llama)
    assert w4 is not None and w4.mlp == 0.5 and w4.embeddings == 2.0
    with pytest.raises(
        ValueError, match=r"'quantization_config\.quant_method' = 'bitnet' is not understood"
    ):
        weight_format({"quantization_config": {"quant_method": "bitnet"}}, llama)
    assert weight_format(_config("Qwen3-8B"), llama) is None


@pytest.mark.parametrize("preset", ["Llama-3-8B", "Llama-3-70B", "Mixtral-8x7B", "DeepSeek-V3"])
def test_a_config_gives_the_same_shape_as_the_preset(preset: str) -> None:
    spec, _ = read_hf_config(CONFIGS / preset / "config.json")
    shape = {f: getattr(spec, f) for f in models.ModelConfig.__dataclass_fields__}
    expected = {f: getattr(models.get_model(preset), f) for f in shape}
    for volatile in ("source", "source_date", "max_context"):
        shape.pop(volatile), expected.pop(volatile)
    assert shape == expected


def test_family_details_are_read() -> None:
    gemma, notes = read_hf_config(CONFIGS / "gemma-2-9b" / "config.json")
    assert gemma.tied_embeddings  # Gemma ties them when the config is silent
    assert gemma.head_dim == 256 != gemma.d_model // gemma.n_heads
    assert gemma.sliding_window == 4096 and gemma.local_per_global == 1 and notes == []
    qwen, _ = read_hf_config(CONFIGS / "Qwen2.5-0.5B" / "config.json")
    assert qwen.tied_embeddings and qwen.attention_kind == "GQA"
    deepseek, notes = read_hf_config(CONFIGS / "DeepSeek-V3" / "config.json")
    assert deepseek.attention_kind == "MLA" and deepseek.n_dense_layers == 3
    assert deepseek.kv_bytes_per_token("bf16") == 61 * (512 + 64) * 2
    assert any("multi-token" in note for note in notes)


def test_deepseek_v32_reads_as_the_preset() -> None:
    """DeepSeek-V3.2's config.json is V3's plus model_type deepseek_v32 and the indexer's
    three fields (index_topk 2048, index_n_heads 64, index_head_dim 128)."""
    config = {
        **_config("DeepSeek-V3"),
        "model_type": "deepseek_v32",
        "architectures": ["DeepseekV32ForCausalLM"],
        "index_topk": 2048,
        "index_n_heads": 64,
        "index_head_dim": 128,
    }
    spec, notes = model_from_hf_config(config, "DeepSeek-V3.2")
    preset = models.get_model("DeepSeek-V3.2")
    for field in models.ModelConfig.__dataclass_fields__:
        if field not in ("name", "source", "source_date", "max_context"):
            assert getattr(spec, field) == getattr(preset, field), field
    assert spec.index_key_bytes == 128 + 4  # fp8 keys, one fp32 scale per 128
    assert any("sparse attention" in note for note in notes)
    with pytest.raises(ValueError, match="index_topk"):
        model_from_hf_config({**config, "index_topk": 0}, "no-k")


def test_a_null_field_takes_the_family_default() -> None:
    # Hugging Face writes absent optional fields as null: K then defaults to N (MHA).
    spec, _ = model_from_hf_config({**_config("Llama-3-8B"), "num_key_value_heads": None}, "x")
    assert spec.n_kv_heads == spec.n_heads == 32


def test_deepseek_v2_lite_has_no_query_latent() -> None:
    config = {**_config("DeepSeek-V3"), "model_type": "deepseek_v2", "q_lora_rank": None}
    spec, _ = model_from_hf_config(config, "no-q-latent")
    assert spec.mla_q_lora_rank == 0
    # Queries come straight from D: D N (H + rope) instead of D q + q + q N (H + rope).
    D, N, q, width = 7168, 128, 1536, 128 + 64
    extra = D * N * width - (D * q + q + q * N * width)
    v3 = models.get_model("DeepSeek-V3")
    assert spec.attention_params_per_layer - v3.attention_params_per_layer == extra


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"model_type": "mamba", "architectures": None},
            "'model_type' = 'mamba' is not understood",
        ),
        ({"model_type": "mamba", "architectures": ["MambaForCausalLM"]}, "known architectures:"),
        ({"model_type": None, "architectures": None}, "'model_type' = None is not understood"),
        ({"intermediate_size": None}, "field 'intermediate_size' is missing"),
        ({"num_hidden_layers": "32"}, "'num_hidden_layers' must be a whole number"),
        ({"hidden_act": "relu"}, "'hidden_act' = 'relu' is not understood"),
        ({"num_attention_heads": 30}, "n_heads=30 is not divisible by n_kv_heads=8"),
        ({"num_attention_heads": 0}, "'num_attention_heads' must be a whole number from 1"),
        ({"model_type": ["llama"]}, "'model_type' = ['llama'] is not understood"),
        ({"sliding_window": "4096"}, "'sliding_window' must be a whole number from 0"),
        ({"num_hidden_layers": 10**30}, "'num_hidden_layers' must be a whole number from 1 to"),
        ({"hidden_size": 4096.0}, "'hidden_size' must be a whole number"),
    ],
)
def test_configs_the_model_cannot_describe_name_the_field(
    change: dict[str, Any], message: str
) -> None:
    config = {**_config("Llama-3-8B"), **change}
    with pytest.raises(ValueError, match=re.escape(message)):
        model_from_hf_config(config, "bad")


@pytest.mark.parametrize(
    ("change", "field"),
    [({"moe_layer_freq": 2}, "moe_layer_freq"), ({"v_head_dim": 0}, "v_head_dim")],
)
def test_deepseek_fields_the_model_cannot_describe(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"field '{field}'"):
        model_from_hf_config({**_config("DeepSeek-V3"), **change}, "bad")


def test_a_file_that_is_not_json_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_hf_config(bad)


def test_models_toml_in_the_package_format(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        "[tiny]\nn_layers = 2\nd_model = 64\nd_ff = 128\nn_heads = 4\nn_kv_heads = 4\n"
        "head_dim = 16\nvocab_size = 100\nmax_context = 512\n"
    )
    (tiny,) = models.load_models(path).values()
    assert tiny.name == "tiny" and tiny.attention_kind == "MHA"
    path.write_text("n_layers = 2\n")
    with pytest.raises(ValueError, match="one \\[table\\] per model"):
        models.load_models(path)
    path.write_text("[tiny]\nn_layers = 2\n")
    with pytest.raises(ValueError, match="missing d_model"):
        models.load_models(path)


# ---- the configs people deploy (#43): each against a hand count of its public config --------
def _hand_count(text: dict[str, Any], *, mlp_layers: int, moe_layers: int, shared: int) -> int:
    """Every weight of a GQA model with (optionally) routed experts, counted from the config's
    fields alone: q/k/v/o projections (and their biases where ``attention_bias``), two norms a
    layer, the dense MLPs of ``mlp_layers`` layers, and in each of ``moe_layers`` MoE layers
    the routed experts, ``shared`` shared ones, the router and (sigmoid routers, GLM's and
    DeepSeek's) its correction bias; the embeddings (two matrices unless tied), the final
    norm."""
    D, L, N = text["hidden_size"], text["num_hidden_layers"], text["num_attention_heads"]
    K, H = text["num_key_value_heads"], text.get("head_dim") or D // N
    attention = 2 * D * N * H + 2 * D * K * H
    if text.get("attention_bias"):
        attention += N * H + 2 * K * H
    dense = 3 * D * text.get("intermediate_size_mlp", text["intermediate_size"])
    width = text.get("moe_intermediate_size") or text["intermediate_size"]
    E = text.get("n_routed_experts") or text.get("num_local_experts") or text.get("num_experts", 0)
    router = D * E + (E if text.get("topk_method") == "noaux_tc" else 0)
    moe = (E + shared) * 3 * D * width + router
    tied = text.get("tie_word_embeddings", False)
    embeddings = text["vocab_size"] * D * (1 if tied else 2)
    return L * (attention + 2 * D) + mlp_layers * dense + moe_layers * moe + embeddings + D


def test_glm_4_5_air_reads_its_dense_first_layer_and_shared_expert() -> None:
    """GLM-4.5-Air (glm4_moe): 1 dense layer, then 45 of 128 routed + 1 shared expert."""
    config = _config("GLM-4.5-Air")
    spec, notes = read_hf_config(CONFIGS / "GLM-4.5-Air" / "config.json")
    hand = _hand_count(config, mlp_layers=1, moe_layers=45, shared=1)
    assert spec.total_params == pytest.approx(hand, rel=1e-3)
    assert (spec.n_dense_layers, spec.n_shared_experts, spec.d_ff_expert) == (1, 1, 1408)
    # zai-org: "106 billion total parameters and 12 billion active parameters"
    assert spec.total_params == pytest.approx(106e9, rel=0.01)
    assert spec.matmul_params_per_token == pytest.approx(12e9, rel=0.07)  # "12B": 2 figures
    assert spec.kv_bytes_per_token("bf16") == 46 * 2 * 8 * 128 * 2
    assert any("biases" in n for n in notes)


def test_llama_4_maverick_alternates_dense_and_moe_layers() -> None:
    """interleave_moe_layer_step 2: layers 1, 3, ..., 47 are MoE (128 routed + 1 shared of
    8,192), the other 24 dense MLPs of intermediate_size_mlp 16,384."""
    config = _config("Llama-4-Maverick-17B-128E")
    text = config["text_config"]
    spec, notes = read_hf_config(CONFIGS / "Llama-4-Maverick-17B-128E" / "config.json")
    hand = _hand_count(text, mlp_layers=24, moe_layers=24, shared=1)
    assert spec.total_params == pytest.approx(hand, rel=1e-3)
    assert (spec.n_dense_layers, spec.n_moe_layers, spec.d_ff, spec.d_ff_expert) == (
        24, 24, 16384, 8192)  # fmt: skip
    # Meta: "17B active parameters, 128 experts, 400B total" (the vision encoder, ~0.9B, apart)
    assert spec.total_params == pytest.approx(400e9, rel=0.01)
    assert spec.active_params == pytest.approx(17e9, rel=0.02)
    assert spec.n_global_layers == 12 and any("chunked" in n for n in notes)
    with pytest.raises(ValueError, match="'interleave_moe_layer_step' = 49 leaves no MoE layer"):
        model_from_hf_config({**text, "interleave_moe_layer_step": 49}, "x")


def test_kimi_k2_is_read_through_its_architectures() -> None:
    """model_type kimi_k2 is no transformers class: its architectures name DeepSeek-V3's."""
    config = _config("Kimi-K2-Base")
    spec, notes = read_hf_config(CONFIGS / "Kimi-K2-Base" / "config.json")
    deepseek, _ = model_from_hf_config({**config, "model_type": "deepseek_v3"}, "Kimi-K2-Base")
    assert replace(spec, source="") == replace(deepseek, source="")
    assert spec.attention_kind == "MLA"
    assert any("read as deepseek_v3" in n for n in notes)
    # By hand: MLA with a query latent (q 1536, kv 512, rope 64, 128-wide heads), 1 dense
    # layer, 60 MoE layers of 384 routed + 1 shared expert of 2,048 and a noaux_tc router.
    D, N, q, kv, rope, H = 7168, 64, 1536, 512, 64, 128
    attention = D * q + q + q * N * (H + rope) + D * (kv + rope) + kv + kv * N * 2 * H + N * H * D
    moe = 385 * 3 * D * 2048 + D * 384 + 384
    hand = 61 * (attention + 2 * D) + 3 * D * 18432 + 60 * moe + 2 * 163840 * D + D
    assert spec.total_params == pytest.approx(hand, rel=1e-3)
    # Kimi K2 report (arXiv 2507.20534): "1.04 trillion total parameters, 32 billion
    # activated"; the config counts 1.026T (the report's figure is rounded up).
    assert spec.total_params == pytest.approx(1.04e12, rel=0.015)
    assert spec.active_params == pytest.approx(32e9, rel=0.03)
    # Kimi K2.5 wraps the same text model in text_config (a kimi_k25 wrapper with a vision
    # tower), and ships its int4 quantization_config inside text_config.
    quant = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"],
             "config_groups": {"group_0": {"weights": {"type": "int", "num_bits": 4,
                                                        "group_size": 32}}}}  # fmt: skip
    k25 = {"model_type": "kimi_k25", "architectures": ["KimiK25ForConditionalGeneration"],
           "text_config": {**config, "quantization_config": quant},
           "vision_config": {"vt_num_hidden_layers": 27}}  # fmt: skip
    wrapped, notes = model_from_hf_config(k25, "Kimi-K2-Base")
    assert replace(wrapped, source="") == replace(spec, source="") and any(
        "vision encoder" in n for n in notes
    )
    fmt = weight_format(k25, wrapped)
    assert fmt is not None and fmt.experts == 0.5 and fmt.attention == 2.0


def test_multimodal_wrappers_read_their_text_config() -> None:
    """mistral3 (Mistral Small 3.1) and qwen3_vl_moe (Qwen3-VL): the text model only."""
    config = _config("Mistral-Small-3.1-24B")
    spec, notes = read_hf_config(CONFIGS / "Mistral-Small-3.1-24B" / "config.json")
    hand = _hand_count(config["text_config"], mlp_layers=40, moe_layers=0, shared=0)
    assert spec.total_params == pytest.approx(hand, rel=1e-3)
    assert spec.sliding_window == 0 and any("vision encoder" in n for n in notes)
    # Mistral AI: "Mistral Small 3.1 ... 24B parameters", with its ~0.4B Pixtral encoder
    assert spec.total_params == pytest.approx(24e9, rel=0.03)
    # Qwen3-VL-30B-A3B's text model is Qwen3-30B-A3B's shape under qwen3_vl_moe_text:
    # constructed here from that file, the wrapper as Qwen3VLMoeConfig nests it.
    text = {**_config("Qwen3-30B-A3B"), "model_type": "qwen3_vl_moe_text"}
    vl = {"model_type": "qwen3_vl_moe", "text_config": text, "vision_config": {"depth": 27}}
    qwen_vl, _ = model_from_hf_config(vl, "Qwen3-30B-A3B")
    qwen, _ = read_hf_config(CONFIGS / "Qwen3-30B-A3B" / "config.json")
    assert qwen_vl.total_params == qwen.total_params and qwen_vl.n_experts == 128


def test_gptq_and_awq_read_bits() -> None:
    """A GPTQ-Int8 70B holds its matmul weights in one byte each: 72.7 GB, not the 38.4 GB
    of int4 (quantization_config as Qwen's GPTQ-Int8 checkpoints ship it)."""
    from llmmath.core.deployment import Deployment

    llama, _ = read_hf_config(CONFIGS / "Llama-3-70B" / "config.json")
    gptq = {"bits": 8, "damp_percent": 0.01, "desc_act": False, "group_size": 128,
            "quant_method": "gptq", "static_groups": False, "sym": True,
            "true_sequential": True}  # fmt: skip
    stored = {}
    for bits in (8, 4):
        fmt = weight_format(
            {**_config("Llama-3-70B"), "quantization_config": {**gptq, "bits": bits}}, llama
        )
        stored[bits] = Deployment(llama, "H100", weight_format=fmt).weight_bytes
    embeddings = 2 * 128256 * 8192  # in bf16, the rest at 1 (int8) or 0.5 (int4) bytes
    assert stored[8] == embeddings * 2 + (llama.total_params - embeddings) * 1
    assert stored[8] / 1e9 == pytest.approx(72.7, abs=0.05)
    assert stored[4] / 1e9 == pytest.approx(38.4, abs=0.05)
    awq = {"quant_method": "awq", "w_bit": 4, "q_group_size": 128, "zero_point": True}
    fmt = weight_format({"quantization_config": awq}, llama)
    assert fmt is not None and fmt.main == "int4"
    with pytest.raises(
        ValueError,
        match=r"'quantization_config\.bits' = 3 is not modelled for gptq; the course reads 4 or 8",
    ):
        weight_format({"quantization_config": {**gptq, "bits": 3}}, llama)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"head_dim": 0}, "field 'head_dim' must be a whole number from 1 to 10^15; got 0"),
        ({"tie_word_embeddings": "false"}, "field 'tie_word_embeddings' must be true or false"),
        ({"tie_word_embeddings": 0}, "field 'tie_word_embeddings' must be true or false"),
        ({"num_local_experts": 0}, "field 'num_local_experts' must be a whole number from 1"),
        ({"model_type": 7}, "field 'model_type' = 7 is not understood (a string)"),
    ],
)
def test_config_values_the_reader_refuses_name_the_field(
    change: dict[str, Any], message: str
) -> None:
    """#44's silent misreadings: each one line naming the field and what is allowed."""
    with pytest.raises(ValueError, match=re.escape(message)):
        model_from_hf_config({**_config("Llama-3-8B"), **change}, "bad")


@pytest.mark.parametrize(
    ("quant", "message"),
    [
        ("fp8", "field 'quantization_config' must be an object with a 'quant_method'"),
        ({"quant_method": ["fp8"]}, "'quantization_config.quant_method' = ['fp8'] is not"),
        ({"quant_method": "gptq"}, "'quantization_config.bits' = None is not modelled"),
        ({"quant_method": "gptq", "bits": True}, "'quantization_config.bits' = True"),
    ],
)
def test_quantization_configs_the_reader_refuses_name_the_field(quant: Any, message: str) -> None:
    llama = models.get_model("Llama-3-8B")
    with pytest.raises(ValueError, match=re.escape(message)):
        weight_format({"quantization_config": quant}, llama)


def test_kv_cache_scheme_is_read(tmp_path: Path) -> None:
    from llmmath.core.hf_config import kv_cache_format, read_checkpoint

    fp8 = {"quant_method": "compressed-tensors",
           "config_groups": {"g": {"weights": {"type": "float", "num_bits": 8}}},
           "kv_cache_scheme": {"type": "float", "num_bits": 8, "dynamic": False}}  # fmt: skip
    config = {**_config("Llama-3-8B"), "quantization_config": fp8}
    assert kv_cache_format(config) == "fp8" and kv_cache_format(_config("Llama-3-8B")) is None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    _, notes, formats = read_checkpoint(path)
    assert formats.weights is not None and formats.weights.main == "fp8"
    assert (formats.kv_cache, formats.dtype) == ("fp8", "bf16")
    assert not any("kv_cache_scheme" in n for n in notes)  # applied, not left to a note
    bad = {**fp8, "kv_cache_scheme": {"type": "float", "num_bits": 4}}
    with pytest.raises(ValueError, match=r"'quantization_config\.kv_cache_scheme' = .* is not"):
        kv_cache_format({"quantization_config": bad})


def test_checkpoint_dtype_is_torch_dtype_as_the_course_names_it() -> None:
    """torch_dtype (newer configs: dtype; a wrapper's text_config where the top level names
    none) as bf16, fp16 or fp32; None where a config names none the course knows."""
    from llmmath.core.hf_quant import checkpoint_dtype

    assert checkpoint_dtype(_config("Llama-3-8B")) == "bf16"
    assert checkpoint_dtype(_config("gemma-2-9b")) == "fp32"  # as Google ships it
    assert checkpoint_dtype({"dtype": "float16"}) == "fp16"
    assert checkpoint_dtype({"text_config": {"torch_dtype": "float16"}}) == "fp16"
    assert checkpoint_dtype({"torch_dtype": "bfloat16", "dtype": "float16"}) == "bf16"
    assert checkpoint_dtype(_config("gpt-oss-120b")) is None
    assert checkpoint_dtype({"torch_dtype": "auto"}) is None


def test_kv_cache_dtype_takes_the_strongest_source() -> None:
    """--kv-dtype > the checkpoint's kv_cache_scheme > its own dtype (fp32 served as bf16)
    > bf16; the weights' format is not among them."""
    from llmmath.core.hf_quant import KVCacheDtype, kv_cache_dtype

    assert kv_cache_dtype("fp8", "int8", "fp16") == KVCacheDtype("fp8", "given", "fp16")
    assert kv_cache_dtype("bf16", "fp8", "bf16") == KVCacheDtype("bf16", "given", "bf16")
    assert kv_cache_dtype(None, "fp8", "bf16") == KVCacheDtype("fp8", "kv_cache_scheme", "bf16")
    assert kv_cache_dtype(None, None, "fp16") == KVCacheDtype("fp16", "checkpoint_dtype", "fp16")
    assert kv_cache_dtype(None, None, "fp32") == KVCacheDtype("bf16", "checkpoint_dtype", "fp32")
    assert kv_cache_dtype() == KVCacheDtype("bf16", "default")
    with pytest.raises(ValueError, match=r"kv_cache_dtype.*unknown dtype 'fp7'"):
        kv_cache_dtype("fp7")
    with pytest.raises(ValueError, match="KV source"):
        KVCacheDtype("bf16", "--dtype")


def test_json_nested_too_deeply_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="JSON nested too deeply"):
        read_hf_config(path)


# ---- hybrids: a constant state in the linear-attention / Mamba layers, KV in the others -----
def _gated_deltanet_by_hand(t: dict[str, Any]) -> tuple[int, int]:
    """One Qwen3NextGatedDeltaNet's weights and state, module by module (transformers):
    in_proj_qkvz, in_proj_ba, conv1d (no bias), dt_bias, A_log, norm, out_proj; the state is
    (value heads x key head dim x value head dim) plus the conv's last kernel - 1 inputs."""
    D, kernel = t["hidden_size"], t["linear_conv_kernel_dim"]
    nk, dk = t["linear_num_key_heads"], t["linear_key_head_dim"]
    nv, dv = t["linear_num_value_heads"], t["linear_value_head_dim"]
    qkvz, ba = D * (2 * nk * dk + 2 * nv * dv), D * 2 * nv
    conv_channels = 2 * nk * dk + nv * dv
    weights = qkvz + ba + conv_channels * kernel + nv + nv + dv + nv * dv * D
    return weights, nv * dk * dv + conv_channels * (kernel - 1)


def _qwen_hybrid_by_hand(t: dict[str, Any]) -> int:
    """Every weight: gated attention (q_proj twice as wide: query and gate; q/k norms) on
    the full-attention layers, gated DeltaNet on the others, and in every layer 2 norms, the
    routed experts, one shared expert with its sigmoid gate, and the router."""
    D, L, N, K, H = (t[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                    "num_key_value_heads", "head_dim"))  # fmt: skip
    full = t["layer_types"].count("full_attention")
    attention = D * 2 * N * H + 2 * D * K * H + N * H * D + 2 * H
    linear, _ = _gated_deltanet_by_hand(t)
    E, width, shared = (
        t["num_experts"],
        t["moe_intermediate_size"],
        t["shared_expert_intermediate_size"],
    )
    moe = E * 3 * D * width + 3 * D * shared + D + D * E
    embeddings = t["vocab_size"] * D * 2
    return full * attention + (L - full) * linear + L * (2 * D + moe) + embeddings + D


@pytest.mark.parametrize(
    ("folder", "published", "active", "source"),
    [
        ("Qwen3-Next-80B-A3B-Instruct", 80e9, 3e9, "Qwen3-Next model card: 80B total, 3B active"),
        (
            "Qwen3.6-35B-A3B",
            35e9,
            3e9,
            "Qwen3.6-35B-A3B model card: 35B total (vision too), 3B active",
        ),
    ],
)
def test_gated_deltanet_hybrids_count_kv_on_full_attention_layers_only(
    folder: str, published: float, active: float, source: str
) -> None:
    config = _config(folder)
    text = config.get("text_config", config)
    spec, notes = read_hf_config(CONFIGS / folder / "config.json")
    assert spec.total_params == pytest.approx(_qwen_hybrid_by_hand(text), rel=1e-3)
    assert spec.total_params == pytest.approx(published, rel=0.02), source
    assert spec.matmul_params_per_token == pytest.approx(active, rel=0.2), source  # "3B"
    full = text["layer_types"].count("full_attention")
    assert (spec.n_attention_layers, spec.n_state_layers) == (
        full,
        text["num_hidden_layers"] - full,
    )
    # KV: only the full-attention layers, K heads of H, keys and values, bf16 ...
    kv = full * 2 * text["num_key_value_heads"] * text["head_dim"] * 2
    assert spec.kv_bytes_per_token("bf16") == kv
    # ... and each linear layer's constant state (fp32 where mamba_ssm_dtype says so).
    _, state = _gated_deltanet_by_hand(text)
    held = 4 if text.get("mamba_ssm_dtype") == "float32" else 2
    per_sequence = (text["num_hidden_layers"] - full) * state * held
    assert spec.state_bytes_per_sequence("bf16") == per_sequence
    for T in (1024, 131072):
        assert float(spec.kv_bytes_per_token("bf16", T)) * T == pytest.approx(
            kv * T + per_sequence, rel=1e-12
        )
    assert any("constant state" in n for n in notes)


def test_jamba_counts_mamba_layers_and_its_interleaved_experts() -> None:
    """AI21-Jamba-1.5-Mini: attention at layers 4, 12, 20, 28 (period 8, offset 4), Mamba in
    the other 28; MoE (16 experts of 14,336, top-2) at odd layers, dense MLPs at even ones."""
    t = _config("AI21-Jamba-1.5-Mini")
    spec, _ = read_hf_config(CONFIGS / "AI21-Jamba-1.5-Mini" / "config.json")
    D, inner, R, S, C = 4096, 2 * 4096, t["mamba_dt_rank"], t["mamba_d_state"], t["mamba_d_conv"]
    # JambaMambaMixer: in_proj, conv1d (+ bias), x_proj, dt_proj (+ bias), A_log, D, out_proj,
    # and the dt, B and C norms.
    mamba = (
        D * 2 * inner
        + inner * C
        + inner
        + inner * (R + 2 * S)
        + R * inner
        + inner
        + inner * S
        + inner
        + inner * D
        + R
        + 2 * S
    )
    attention = 2 * D * 32 * 128 + 2 * D * 8 * 128
    mlp = 3 * D * 14336
    hand = 4 * attention + 28 * mamba + 32 * 2 * D + 16 * mlp + 16 * (16 * mlp + D * 16)
    hand += 2 * 65536 * D + D
    assert spec.total_params == pytest.approx(hand, rel=1e-3)
    # AI21: "Jamba 1.5 Mini ... 12B active parameters and 52B total parameters"
    assert spec.total_params == pytest.approx(52e9, rel=0.01)
    assert spec.active_params == pytest.approx(12e9, rel=0.02)
    assert (spec.n_attention_layers, spec.n_dense_layers, spec.n_moe_layers) == (4, 16, 16)
    assert spec.kv_bytes_per_token("bf16") == 4 * 2 * 8 * 128 * 2
    assert spec.state_bytes_per_sequence("bf16") == 28 * (inner * S + inner * (C - 1)) * 2
    with pytest.raises(ValueError, match="leave no attention layer among 32"):
        model_from_hf_config({**t, "attn_layer_offset": 8}, "x")


def test_hybrid_layer_types_that_are_not_understood_are_refused() -> None:
    text = _config("Qwen3-Next-80B-A3B-Instruct")
    with pytest.raises(ValueError, match="'layer_types' must list one of linear_attention"):
        model_from_hf_config({**text, "layer_types": ["mamba"] * 48}, "x")
    with pytest.raises(ValueError, match="'layer_types' has no full_attention layer"):
        model_from_hf_config({**text, "layer_types": ["linear_attention"] * 48}, "x")
    with pytest.raises(
        ValueError, match="'shared_expert_intermediate_size' = 700 is not a multiple"
    ):
        model_from_hf_config({**text, "shared_expert_intermediate_size": 700}, "x")


def test_gemma_4_e2b_reads_per_layer_embeddings_and_shared_kv_layers() -> None:
    """Gemma 4 E2B: 35 layers (4 sliding of 512 then 1 full, x7), per-layer embeddings 256
    wide, and the last 20 layers reusing the KV of the last earlier layer of their kind (no
    k_proj/v_proj, nothing cached: transformers' Gemma4TextAttention), with double-wide MLPs."""
    text = _config("gemma-4-E2B")["text_config"]
    spec, _ = read_hf_config(CONFIGS / "gemma-4-E2B" / "config.json")
    D, L, N, F, V, P = 1536, 35, 8, 6144, 262144, 256
    local_h, global_h, K = 256, 512, 1
    kinds = text["layer_types"]
    cached = kinds[: L - 20]  # the first 15 compute (and cache) their keys and values
    width = {"sliding_attention": local_h, "full_attention": global_h}
    queries_out = sum(2 * D * N * width[k] for k in kinds)
    keys_values = sum(2 * D * K * width[k] for k in cached)
    mlp = 15 * 3 * D * F + 20 * 3 * D * 2 * F
    per_layer = V * L * P + D * L * P + P + L * (2 * D * P + D)
    hand = queries_out + keys_values + mlp + per_layer + L * 2 * D + V * D + D
    assert spec.total_params == pytest.approx(hand, rel=1e-3)
    # Google: "2.3B effective parameters (5.1B with Per-Layer Embeddings)"; the 5.1B counts
    # the vision and audio encoders (~0.45B) too. Effective = the weights a token multiplies.
    assert spec.matmul_params_per_token == pytest.approx(2.3e9, rel=0.02)
    assert spec.n_kv_shared_layers == 20 and spec.double_wide_shared_mlp
    # KV: 12 sliding layers of one 256-wide head hold min(T, 512) tokens, 3 full ones of one
    # 512-wide head hold T; the 20 shared layers hold nothing.
    T = 32768
    exact = (12 * 2 * K * local_h * min(T, 512) + 3 * 2 * K * global_h * T) * 2
    assert float(spec.kv_bytes_per_token("bf16", T)) * T == pytest.approx(exact, rel=1e-12)
    assert spec.kv_bytes_per_token("bf16") == (12 * 2 * local_h + 3 * 2 * global_h) * 2


def test_minimax_m1_counts_lightning_layers_and_softmax_kv_only() -> None:
    """MiniMax-M1 (attn_type_list: seven lightning layers, then one softmax, repeated): the
    lightning layers' qkv_proj (3 N H wide: a key and value per head), output_gate, norm and
    out_proj; GQA on the softmax ones; 32 experts of intermediate_size, top-2, in every layer."""
    t = _config("MiniMax-M1")
    spec, notes = read_hf_config(CONFIGS / "MiniMax-M1" / "config.json")
    D, L, N, K, H = (t[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                    "num_key_value_heads", "head_dim"))  # fmt: skip
    softmax = t["attn_type_list"].count(1)
    lightning = 3 * D * N * H + D * N * H + N * H + N * H * D
    attention = 2 * D * N * H + 2 * D * K * H
    E, F = t["num_local_experts"], t["intermediate_size"]
    moe = E * 3 * D * F + D * E
    embeddings = 2 * t["vocab_size"] * D
    hand = softmax * attention + (L - softmax) * lightning + L * (2 * D + moe) + embeddings + D
    assert spec.total_params == pytest.approx(hand, rel=1e-3)
    # MiniMax-M1 report (arXiv 2506.13585, abstract): built on MiniMax-Text-01, "a total of 456
    # billion parameters with 45.9 billion parameters activated per token" (the embeddings left
    # out of the latter).
    assert spec.total_params == pytest.approx(456e9, rel=2e-3)
    assert spec.active_params - spec.embedding_params == pytest.approx(45.9e9, rel=2e-3)
    assert (spec.n_attention_layers, spec.n_state_layers) == (softmax, L - softmax) == (10, 70)
    assert spec.kv_bytes_per_token("bf16") == softmax * 2 * K * H * 2
    assert spec.state_bytes_per_sequence("bf16") == (L - softmax) * N * H * H * 4  # fp32
    assert any("constant state" in n for n in notes)
    with pytest.raises(ValueError, match="'attn_type_list' must list 0"):
        model_from_hf_config({**t, "attn_type_list": [2] * L}, "x")
    with pytest.raises(ValueError, match="'attn_type_list' has no softmax-attention layer"):
        model_from_hf_config({**t, "attn_type_list": [0] * L}, "x")
    with pytest.raises(ValueError, match="'shared_intermediate_size' = 1024 is not understood"):
        model_from_hf_config({**t, "shared_intermediate_size": 1024}, "x")
    # MiniMax-Text-01's class reads as the same family through its architectures.
    renamed = {**t, "model_type": "minimax_text_01", "architectures": ["MiniMaxText01ForCausalLM"]}
    assert model_from_hf_config(renamed, "x")[0].total_params == spec.total_params


def test_minimax_m2_attends_in_every_layer_with_256_experts() -> None:
    """MiniMax-M2: GQA softmax attention with per-layer q/k norms in all 62 layers
    (attn_type_list all 1), 256 experts of intermediate_size, top-8, sigmoid router with a
    correction bias, no shared expert; its own fp8 blocks read as the checkpoint's format."""
    t = _config("MiniMax-M2")
    path = CONFIGS / "MiniMax-M2" / "config.json"
    spec, notes = read_hf_config(path)
    D, L, N, K, H = (t[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                    "num_key_value_heads", "head_dim"))  # fmt: skip
    E, F = t["num_local_experts"], t["intermediate_size"]
    attention = 2 * D * N * H + 2 * D * K * H + N * H + K * H  # q, k, v, o; q and k norms
    moe = E * 3 * D * F + D * E + E  # experts, router, correction bias
    hand = L * (attention + 2 * D + moe) + 2 * t["vocab_size"] * D + D
    assert spec.total_params == pytest.approx(hand, rel=1e-3)
    # MiniMax-M2: 230B total, 10B active (rounded: the total to 2 figures, the active count
    # without the embeddings), as apxml.com's model page quotes it; the model card itself was
    # not in the stored corpus (tests/data/hf_configs/README.md).
    assert spec.total_params == pytest.approx(230e9, rel=0.01)
    assert spec.active_params - spec.embedding_params == pytest.approx(10e9, rel=0.05)
    assert (spec.n_attention_layers, spec.n_state_layers, spec.n_dense_layers) == (L, 0, 0)
    assert spec.kv_bytes_per_token("bf16") == L * 2 * K * H * 2
    assert notes == []
    assert weight_format(t, spec, str(path)).main == "fp8"
    with pytest.raises(ValueError, match="'attn_type_list' has a 0"):
        model_from_hf_config({**t, "attn_type_list": [0] + [1] * (L - 1)}, "x")

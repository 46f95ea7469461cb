"""llmmath.hf_config: Hugging Face config.json files of several families, offline.

Each saved config (tests/data/hf_configs/, sources in its README) must give the parameter
count its publisher states, within 1%.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from llmmath import models
from llmmath.hf_config import model_from_hf_config, read_hf_config

CONFIGS = Path(__file__).parent / "data" / "hf_configs"

# (folder, published total, published active or None, where it is published)
PUBLISHED = [
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
    # the input-embedding lookup is "activated": DeepSeek-V3 comes to 37.55e9 with it and
    # 36.6e9 without, against "37B". So 2% here; totals are held to 1%.
    assert spec.active_params == pytest.approx(active or total, rel=0.02), source


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
    assert any("sliding_window=4096" in note for note in notes)
    qwen, _ = read_hf_config(CONFIGS / "Qwen2.5-0.5B" / "config.json")
    assert qwen.tied_embeddings and qwen.attention_kind == "GQA"
    deepseek, notes = read_hf_config(CONFIGS / "DeepSeek-V3" / "config.json")
    assert deepseek.attention_kind == "MLA" and deepseek.n_dense_layers == 3
    assert deepseek.kv_bytes_per_token("bf16") == 61 * (512 + 64) * 2
    assert any("multi-token" in note for note in notes)


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
        ({"model_type": "mamba"}, "'model_type' = 'mamba' is not understood; known:"),
        ({"model_type": None}, "'model_type' = None is not understood"),
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
    [({"moe_layer_freq": 2}, "moe_layer_freq"), ({"v_head_dim": 64}, "v_head_dim")],
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

"""Small made-up model shapes for unit tests, so expected values can be worked by hand."""

from __future__ import annotations

from typing import Any

from llmmath.core.models import ModelConfig

TOY_SHAPE: dict[str, Any] = {
    "name": "toy",
    "n_layers": 4,
    "d_model": 64,
    "d_ff": 256,
    "n_heads": 8,
    "n_kv_heads": 2,
    "head_dim": 8,
    "vocab_size": 1000,
    "max_context": 2048,
}


def toy(**overrides: Any) -> ModelConfig:
    """A small GQA model: L=4, D=64, F=256, N=8, K=2, H=8, V=1000."""
    return ModelConfig(**{**TOY_SHAPE, **overrides})


def toy_moe(**overrides: Any) -> ModelConfig:
    """The toy as an MoE: L=4 (one dense), E=8, k=2, expert width 32."""
    moe = {
        "name": "toy-moe",
        "n_experts": 8,
        "experts_per_token": 2,
        "d_ff_expert": 32,
        "n_dense_layers": 1,
    }
    return toy(**{**moe, **overrides})

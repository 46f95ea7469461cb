"""The rules across a model's fields: what :class:`~llmmath.core.models.ModelConfig` refuses
when its fields, each valid alone, do not make a model the course can count (MoE fields on a
dense model, a window with state layers, an incomplete sparse-attention indexer...).

Kept apart from :mod:`llmmath.core.models` (which calls :func:`check_model_fields` from
``ModelConfig.__post_init__``), so the shapes and their arithmetic read on their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any


def check_model_fields(fields: Mapping[str, Any]) -> None:
    """The rules across a :class:`~llmmath.core.models.ModelConfig`'s fields (each field alone
    is checked by its record contract): raises ``ValueError`` naming the model and the field."""
    model = SimpleNamespace(**fields)
    moe_only = ("experts_per_token", "n_shared_experts", "d_ff_expert", "n_dense_layers")
    for field in moe_only if not model.n_experts else ():
        if getattr(model, field):
            raise ValueError(f"{model.name}: {field} is set but n_experts is 0 (a dense model)")
    mla_only = model.mla_q_lora_rank or model.mla_rope_head_dim or model.mla_v_head_dim
    if mla_only and not model.mla_kv_lora_rank:
        raise ValueError(f"{model.name}: MLA ranks are set but mla_kv_lora_rank is 0")
    if model.n_heads % model.n_kv_heads:
        raise ValueError(
            f"{model.name}: n_heads={model.n_heads} is not divisible by "
            f"n_kv_heads={model.n_kv_heads}"
        )
    _check_pattern(model)
    _check_state_layers(model)
    _check_e_model(model)
    _check_sparse(model)
    if model.n_experts:
        if model.experts_per_token < 1:
            raise ValueError(
                f"{model.name}: experts_per_token must be >= 1; got {model.experts_per_token}"
            )
        if model.experts_per_token > model.n_experts:
            raise ValueError(
                f"{model.name}: experts_per_token={model.experts_per_token} exceeds "
                f"n_experts={model.n_experts}"
            )
        if not 0 <= model.n_dense_layers < model.n_layers:
            raise ValueError(f"{model.name}: n_dense_layers must be in [0, n_layers)")
    _check_groups(model)


def _check_groups(model: SimpleNamespace) -> None:
    """Group-limited routing: both counts or neither, the groups splitting the experts."""
    groups, per_token = model.expert_groups, model.expert_groups_per_token
    if bool(groups) != bool(per_token):
        raise ValueError(
            f"{model.name}: expert_groups={groups} and expert_groups_per_token={per_token} "
            "go together (DeepSeek's n_group and topk_group; 0 and 0 = no limit)"
        )
    if not groups:
        return
    # Not required to divide n_experts: redundant copies (EP7 of DeepSeek-V3's 256) or a
    # layer re-cut into other experts keep the routing rule, a limit on domains reached.
    if not model.n_experts:
        raise ValueError(f"{model.name}: expert_groups={groups} is set but n_experts is 0")
    if per_token > groups:
        raise ValueError(
            f"{model.name}: expert_groups_per_token={per_token} exceeds expert_groups={groups}"
        )


def _check_pattern(model: SimpleNamespace) -> None:
    pattern = ("local_per_global", "global_head_dim", "global_kv_heads", "global_k_eq_v")
    if not model.sliding_window:
        for field in pattern:
            if getattr(model, field):
                raise ValueError(
                    f"{model.name}: {field} is set but sliding_window is 0 (every layer "
                    "global): set sliding_window, the tokens a local layer attends to"
                )
        return
    if model.mla_kv_lora_rank:
        raise ValueError(f"{model.name}: sliding_window is not modelled with MLA")
    if not model.local_per_global:
        for field in pattern[1:]:
            if getattr(model, field):
                raise ValueError(
                    f"{model.name}: {field} is set but local_per_global is 0 (no global layers)"
                )
    if model.global_kv_heads and model.n_heads % model.global_kv_heads:
        raise ValueError(
            f"{model.name}: n_heads={model.n_heads} is not divisible by "
            f"global_kv_heads={model.global_kv_heads}"
        )


def _check_state_layers(model: SimpleNamespace) -> None:
    split = model.n_mlp_only_layers  # Nemotron-H's blocks: dense GQA, no window, no experts
    others = model.n_experts or model.sliding_window or model.mla_kv_lora_rank
    if split and (others or model.n_state_layers + split >= model.n_layers):
        raise ValueError(
            f"{model.name}: n_mlp_only_layers={split} is modelled with dense MLPs and full GQA "
            f"attention (no experts, window or MLA) and needs at least one attention block "
            f"beside n_state_layers={model.n_state_layers} among n_layers={model.n_layers}"
        )
    state = ("state_layer_params", "state_elements_per_layer", "state_dtype")
    if not model.n_state_layers:
        for field in state:
            if getattr(model, field) not in (0, None):
                raise ValueError(f"{model.name}: {field} is set but n_state_layers is 0")
        return
    if model.n_state_layers >= model.n_layers:
        raise ValueError(
            f"{model.name}: n_state_layers must be < n_layers={model.n_layers} (at least one "
            f"attention layer); got {model.n_state_layers}"
        )
    if model.sliding_window:
        raise ValueError(f"{model.name}: n_state_layers is not modelled with sliding_window")


def _check_e_model(model: SimpleNamespace) -> None:
    if not 0 <= model.n_kv_shared_layers < model.n_layers:
        raise ValueError(
            f"{model.name}: n_kv_shared_layers must be < n_layers={model.n_layers} (one layer "
            f"at least computes its keys); got {model.n_kv_shared_layers}"
        )
    if model.n_kv_shared_layers and (model.n_state_layers or model.mla_kv_lora_rank):
        raise ValueError(f"{model.name}: n_kv_shared_layers is modelled with GQA layers only")
    if model.double_wide_shared_mlp and (not model.n_kv_shared_layers or model.n_experts):
        raise ValueError(
            f"{model.name}: double_wide_shared_mlp needs n_kv_shared_layers and no experts"
        )
    if bool(model.per_layer_input_dim) != bool(model.per_layer_vocab_size):
        raise ValueError(
            f"{model.name}: per_layer_input_dim and per_layer_vocab_size are set together"
        )


def _check_sparse(model: SimpleNamespace) -> None:
    indexer = ("index_topk", "index_n_heads", "index_head_dim", "index_key_bytes")
    given = [field for field in indexer if getattr(model, field)]
    if given and len(given) < len(indexer):
        missing = ", ".join(f for f in indexer if f not in given)
        raise ValueError(
            f"{model.name}: {', '.join(given)} set without {missing}: a sparse-attention "
            "indexer needs all four (DeepSeek-V3.2: 2048, 64, 128 and 132)"
        )
    if given and (model.sliding_window or model.n_state_layers or model.n_kv_shared_layers):
        raise ValueError(
            f"{model.name}: index_topk (sparse attention) is modelled only with every "
            "layer attending to the whole context (no sliding_window, state or KV-shared "
            "layers)"
        )


__all__ = ["check_model_fields"]

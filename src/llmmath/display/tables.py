"""Reference tables built from the package's data files (the book's hardware & model page)."""

from __future__ import annotations

from llmmath.core.contracts import contract
from llmmath.core.hardware import get_chip, list_chips
from llmmath.core.models import get_model, list_models


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _peaks(peaks: dict[str, float]) -> str:
    return ", ".join(f"{dtype} {value / 1e12:,.0f}" for dtype, value in peaks.items())


@contract()
def hardware_markdown() -> str:
    """One row per chip: dense peaks, HBM, bandwidths, critical intensity, source and date."""
    header = [
        "chip",
        "dense peak (TFLOP/s)",
        "HBM (GB)",
        "HBM (TB/s)",
        "bf16 FLOP/byte",
        "HBM read (ms)",
        "scale-up (GB/s) x domain",
        "scale-out (GB/s)",
        "source (date)",
    ]
    rows = []
    for name in list_chips():
        chip = get_chip(name)
        rows.append(
            [
                f"**{chip.name}**<br>{chip.full_name}",
                _peaks(chip.peak_flop_per_s),
                f"{chip.hbm_bytes / 1e9:,.0f}",
                f"{chip.hbm_bandwidth_bytes_per_s / 1e12:.2f}",
                f"{chip.critical_intensity('bf16'):.0f}",
                f"{chip.memory_floor_s * 1e3:.1f}",
                f"{chip.scale_up_bandwidth_bytes_per_s / 1e9:,.0f} x {chip.scale_up_domain_size:,}",
                f"{chip.scale_out_bandwidth_bytes_per_s / 1e9:g}",
                f"{chip.source} ({chip.source_date})",
            ]
        )
    return _markdown(header, rows)


@contract()
def model_markdown() -> str:
    """One row per model preset: shape, parameters, attention kind, KV bytes per token."""
    header = [
        "model",
        "L",
        "D",
        "F",
        "N / K / H",
        "V",
        "attention",
        "params total / active",
        "KV bytes/token (bf16)",
        "source (date)",
    ]
    rows = []
    for name in list_models():
        m = get_model(name)
        moe = f"<br>E={m.n_experts}, k={m.experts_per_token}" if m.is_moe else ""
        rows.append(
            [
                f"**{m.name}**{moe}",
                str(m.n_layers),
                f"{m.d_model:,}",
                f"{m.expert_d_ff:,}" + (" per expert" if m.is_moe else ""),
                f"{m.n_heads} / {m.n_kv_heads} / {m.head_dim}",
                f"{m.vocab_size:,}",
                m.attention_kind,
                f"{m.total_params / 1e9:,.1f}B / {m.active_params / 1e9:,.1f}B",
                f"{m.kv_bytes_per_token('bf16'):,.0f}",
                f"{m.source} ({m.source_date})",
            ]
        )
    return _markdown(header, rows)

"""The focus machine with Gemma 4: an MoE at batch 1 reads its active weights and holds them all.

Expected values are worked by hand from the release configs (transformers'
convert_gemma4_weights.py): Gemma 4 26B A4B has L = 30, D = 2,816, 16 query heads, 8 KV heads
of 256 on its 25 sliding-window layers and 2 of 512 (keys only: values from the key projection)
on its 5 global ones, a 2,112-wide dense MLP and 8 of 128 experts of width 704 per layer, and a
tied 262,144-token vocabulary.
"""

from __future__ import annotations

import pytest

from llmmath.beyond import focus

D, V = 2816, 262_144
ATTENTION = 25 * (2 * D * 16 * 256 + 2 * D * 8 * 256) + 5 * (2 * D * 16 * 512 + D * 2 * 512)
PER_LAYER = 3 * D * 2112 + D * 128 + 2 * D  # dense MLP, router, two norms
EXPERT = 3 * D * 704
ACTIVE = ATTENTION + 30 * (PER_LAYER + 8 * EXPERT) + V * D + D
TOTAL = ATTENTION + 30 * (PER_LAYER + 128 * EXPERT) + V * D + D


def _kv_bytes(T: float) -> float:
    """The sequence's bf16 cache: 25 layers hold min(T, 1,024) tokens, 5 hold all T."""
    return 25 * min(T, 1024) * 2 * 8 * 256 * 2 + 5 * T * 2 * 2 * 512 * 2


@pytest.mark.parametrize("T", [0.0, 512.0, 4096.0, 65536.0])
def test_the_moe_reads_its_active_weights_and_holds_them_all(T: float) -> None:
    mac = focus.get_focus_machine("Mac-mini-M4-Pro")
    run = focus.local_decode(mac, "Gemma-4-26B-A4B", "int4", T)
    assert run.weight_read_bytes == pytest.approx(ACTIVE * 0.5, rel=1e-12)
    assert run.weight_bytes == pytest.approx(TOTAL * 0.5, rel=1e-12)
    assert run.kv_bytes == pytest.approx(_kv_bytes(T), rel=1e-12)
    floor_s = (ACTIVE * 0.5 + _kv_bytes(T)) / 273e9
    assert run.time_s == pytest.approx(floor_s, rel=1e-12)
    assert run.memory_needed_bytes == pytest.approx(TOTAL * 0.5 + _kv_bytes(T), rel=1e-12)


def test_sparsity_buys_bandwidth_not_memory() -> None:
    mac = focus.get_focus_machine("Mac-mini-M4-Pro")
    moe = focus.local_decode(mac, "Gemma-4-26B-A4B", "int4", 4096)
    dense = focus.local_decode(mac, "Gemma-4-31B", "int4", 4096)
    # The 31B reads all it holds; the 26B A4B a sixth of it, so it runs > 5x faster while
    # holding more than 3/4 of what the 31B holds.
    assert dense.weight_read_bytes == pytest.approx(dense.weight_bytes, rel=1e-12)
    assert moe.weight_read_bytes < moe.weight_bytes / 6
    assert moe.tokens_per_s > 5 * dense.tokens_per_s
    assert moe.memory_needed_bytes > 0.75 * dense.memory_needed_bytes


def test_the_table_shows_what_a_token_reads() -> None:
    card = focus.get_focus_machine("RTX-4090")
    table = focus.focus_markdown(card, context=4096)
    moe_int8 = focus.local_decode(card, "Gemma-4-26B-A4B", "int8", 4096)
    row = next(line for line in table.splitlines() if line.startswith("| Gemma-4-26B-A4B | int8"))
    assert f"| {moe_int8.bytes_per_token / 1e9:.2f} |" in row and row.endswith("**no** |")
    assert table.count("\n") == 2 + 4 - 1

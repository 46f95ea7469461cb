"""Collective times against the formulas in the scaling book (chapter gpus / sharding)."""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import collectives, get_chip

# Per-step latencies of the H100 preset (NCCL's ring/LL cost model, data/hardware.toml).
NVLINK_ALPHA = 0.47e-6
NETWORK_ALPHA = 2.7e-6


def test_ring_all_gather_inside_a_node() -> None:
    # (n-1) alpha + S (n-1) / (n W): 1 GB over 8 H100 at 450 GB/s, 7 ring steps.
    assert collectives.all_gather_time_s(1e9, 8, "H100") == pytest.approx(
        7 * NVLINK_ALPHA + 1e9 * 7 / 8 / 450e9
    )


def test_small_messages_are_latency_bound() -> None:
    # Tensor-parallel decode at batch 1: an all-reduce of one token's activations (8,192 bf16
    # values) over TP8 is 14 ring steps; their latency is ~30x the bytes' time.
    message = 8192 * 2
    bandwidth = 2 * message * 7 / 8 / 450e9
    time = collectives.all_reduce_time_s(message, 8, "H100")
    assert time == pytest.approx(14 * NVLINK_ALPHA + bandwidth)
    assert time > 30 * bandwidth
    # 160 of them per token (2 per layer, 80 layers): about a millisecond, where measured tools
    # charge 1.3-3 ms and a bandwidth-only model 10 us.
    assert 160 * time == pytest.approx(1.06e-3, rel=0.01)


def test_an_empty_message_costs_nothing() -> None:
    assert collectives.all_reduce_time_s(0.0, 8, "H100") == 0.0
    assert collectives.point_to_point_time_s(0.0, "H100") == 0.0
    assert collectives.all_to_all_time_s(0.0, 16, "H100") == 0.0


def test_all_reduce_is_reduce_scatter_plus_all_gather() -> None:
    sizes = np.array([1e6, 1e9])
    expected = 2 * collectives.reduce_scatter_time_s(sizes, 8, "H100")
    np.testing.assert_allclose(collectives.all_reduce_time_s(sizes, 8, "H100"), expected)


def test_a_ring_that_leaves_the_node_runs_at_scale_out_speed() -> None:
    S = 1e9
    across = collectives.all_gather_time_s(S, 16, "H100")
    # 50 GB/s instead of 450, and every one of the 15 steps at the network's latency.
    assert across == pytest.approx(15 * NETWORK_ALPHA + S * 15 / 16 / 50e9)
    assert collectives.link_bandwidth_bytes_per_s(72, "GB200-NVL72") == 900e9


def test_all_to_all_inside_and_across_the_domain() -> None:
    h100 = get_chip("H100")
    inside = collectives.all_to_all_time_s(8e9, 8, h100)
    assert inside == pytest.approx(NVLINK_ALPHA + 8e9 * 7 / 8 / 450e9)
    # 16 chips: half the bytes leave the node over 50 GB/s, which dominates.
    across = collectives.all_to_all_time_s(8e9, 16, h100)
    assert across == pytest.approx(NETWORK_ALPHA + 8e9 * 8 / 16 / 50e9)
    assert across > 5 * inside


def test_one_chip_needs_no_communication() -> None:
    assert collectives.all_reduce_time_s(1e9, 1, "H100") == 0.0
    assert collectives.all_to_all_time_s(1e9, 1, "H100") == 0.0


def test_point_to_point_uses_the_link_asked_for() -> None:
    assert collectives.point_to_point_time_s(450e9, "H100") == pytest.approx(1.0 + NVLINK_ALPHA)
    assert collectives.point_to_point_time_s(50e9, "H100", across_domains=True) == pytest.approx(
        1.0 + NETWORK_ALPHA
    )


# ---- groups spread over several domains ------------------------------------------------------
def test_hierarchical_collectives_reduce_to_the_flat_ones() -> None:
    # Inside one domain (m = 1) and with one member per domain (g = 1) there is one level.
    for n in (1, 2, 8):
        assert collectives.hierarchical_all_reduce_time_s(1e9, n, "H100") == pytest.approx(
            collectives.all_reduce_time_s(1e9, n, "H100")
        )
    flat_out = collectives.all_gather_time_s(1e9, 64, "H100")
    assert collectives.hierarchical_all_gather_time_s(
        1e9, 64, "H100", per_domain=1
    ) == pytest.approx(flat_out)
    assert collectives.hierarchical_reduce_scatter_time_s(1e9, 72, "GB200-NVL72") == (
        pytest.approx(collectives.reduce_scatter_time_s(1e9, 72, "GB200-NVL72"))
    )


def test_hierarchical_all_gather_across_nodes_runs_at_the_node_egress() -> None:
    # Scaling book, gpus: beyond a node of 8 H100 the collective runs at the node's egress,
    # 8 NICs x 50 GB/s = 400 GB/s. 16 nodes: each GPU sends (S/8)(15/16) over its own NIC,
    # which is slower than the S (7/8) over NVLink.
    S = 1e9
    # The two levels' ring steps add their latencies: 7 inside, 15 across.
    latency = 7 * NVLINK_ALPHA + 15 * NETWORK_ALPHA
    assert collectives.hierarchical_all_gather_time_s(S, 128, "H100") == pytest.approx(
        S * 15 / 16 / 400e9 + latency
    )
    # Two nodes: (S/8)(1/2)/50e9 = S/800e9 across, S (7/8)/450e9 = S/514e9 inside: NVLink
    # is the bottleneck (the book's question 5).
    assert collectives.hierarchical_all_gather_time_s(S, 16, "H100") == pytest.approx(
        S * 7 / 8 / 450e9 + 7 * NVLINK_ALPHA + NETWORK_ALPHA
    )
    # Eight times faster than a flat ring that runs every byte at one NIC's speed.
    flat = collectives.all_gather_time_s(S, 128, "H100") - 127 * NETWORK_ALPHA
    hierarchical = collectives.hierarchical_all_gather_time_s(S, 128, "H100") - latency
    assert flat / hierarchical == pytest.approx(8 * (127 / 128) / (15 / 16))


def test_all_to_all_of_a_strided_group() -> None:
    # 8 chips, one per node (e.g. expert parallelism outside TP8): everything leaves the node.
    strided = collectives.all_to_all_time_s(8e9, 8, "H100", per_domain=1)
    assert strided == pytest.approx(NETWORK_ALPHA + 8e9 * 7 / 8 / 50e9)
    assert collectives.all_to_all_time_s(8e9, 8, "H100", per_domain=8) == pytest.approx(
        collectives.all_to_all_time_s(8e9, 8, "H100")
    )


def test_members_per_domain() -> None:
    assert collectives.members_per_domain(1024, "H100") == 8
    assert collectives.members_per_domain(4, "H100") == 4
    assert collectives.members_per_domain(16, "H100", per_domain=2) == 2
    with pytest.raises(ValueError, match="per_domain=3 must divide n_chips=16"):
        collectives.members_per_domain(16, "H100", per_domain=3)
    with pytest.raises(ValueError, match="per_domain=16 must divide"):
        collectives.members_per_domain(32, "H100", per_domain=16)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: collectives.all_gather_time_s(1e9, 0, "H100"), "n_chips must be >= 1"),
        (lambda: collectives.all_gather_time_s(-1.0, 8, "H100"), "array_bytes must be"),
        (lambda: collectives.all_to_all_time_s(1e9, 2.5, "H100"), "n_chips must be an integer"),
        (lambda: collectives.all_reduce_time_s(1e9, 8, "H900"), "unknown chip 'H900'"),
        (
            lambda: collectives.hierarchical_all_reduce_time_s(1e9, 8, "H100", per_domain=0),
            "per_domain must be >= 1",
        ),
    ],
)
def test_bad_input_names_the_parameter(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match=message):
        call()

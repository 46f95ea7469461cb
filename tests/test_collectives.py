"""Collective times against the formulas in the scaling book (chapter gpus / sharding)."""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import collectives, get_chip


def test_ring_all_gather_inside_a_node() -> None:
    # S (n-1) / (n W): 1 GB over 8 H100 at 450 GB/s = 1e9 * 7/8 / 450e9 s.
    assert collectives.all_gather_time_s(1e9, 8, "H100") == pytest.approx(1e9 * 7 / 8 / 450e9)


def test_all_reduce_is_reduce_scatter_plus_all_gather() -> None:
    sizes = np.array([1e6, 1e9])
    expected = 2 * collectives.reduce_scatter_time_s(sizes, 8, "H100")
    np.testing.assert_allclose(collectives.all_reduce_time_s(sizes, 8, "H100"), expected)


def test_a_ring_that_leaves_the_node_runs_at_scale_out_speed() -> None:
    inside = collectives.all_gather_time_s(1e9, 8, "H100")
    across = collectives.all_gather_time_s(1e9, 16, "H100")
    # 450 vs 50 GB/s, and (15/16) / (7/8) more of the array per chip.
    assert across / inside == pytest.approx(9 * (15 / 16) / (7 / 8))
    assert collectives.link_bandwidth_bytes_per_s(72, "GB200-NVL72") == 900e9


def test_all_to_all_inside_and_across_the_domain() -> None:
    h100 = get_chip("H100")
    inside = collectives.all_to_all_time_s(8e9, 8, h100)
    assert inside == pytest.approx(8e9 * 7 / 8 / 450e9)
    # 16 chips: half the bytes leave the node over 50 GB/s, which dominates.
    across = collectives.all_to_all_time_s(8e9, 16, h100)
    assert across == pytest.approx(8e9 * 8 / 16 / 50e9)
    assert across > 5 * inside


def test_one_chip_needs_no_communication() -> None:
    assert collectives.all_reduce_time_s(1e9, 1, "H100") == 0.0
    assert collectives.all_to_all_time_s(1e9, 1, "H100") == 0.0


def test_point_to_point_uses_the_link_asked_for() -> None:
    assert collectives.point_to_point_time_s(450e9, "H100") == pytest.approx(1.0)
    assert collectives.point_to_point_time_s(50e9, "H100", across_domains=True) == pytest.approx(
        1.0
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
    assert collectives.hierarchical_all_gather_time_s(S, 128, "H100") == pytest.approx(
        S * 15 / 16 / 400e9
    )
    # Two nodes: (S/8)(1/2)/50e9 = S/800e9 across, S (7/8)/450e9 = S/514e9 inside: NVLink
    # is the bottleneck (the book's question 5).
    assert collectives.hierarchical_all_gather_time_s(S, 16, "H100") == pytest.approx(
        S * 7 / 8 / 450e9
    )
    # Eight times faster than a flat ring that runs every byte at one NIC's speed.
    flat = collectives.all_gather_time_s(S, 128, "H100")
    assert flat / collectives.hierarchical_all_gather_time_s(S, 128, "H100") == pytest.approx(
        8 * (127 / 128) / (15 / 16)
    )


def test_all_to_all_of_a_strided_group() -> None:
    # 8 chips, one per node (e.g. expert parallelism outside TP8): everything leaves the node.
    strided = collectives.all_to_all_time_s(8e9, 8, "H100", per_domain=1)
    assert strided == pytest.approx(8e9 * 7 / 8 / 50e9)
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

"""Collective times against the formulas in the scaling book (chapter gpus / sharding)."""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import get_chip
from llmmath.core import collectives

# Latencies of the H100 preset: NCCL 2.20.3's ring/LL cost model (src/graph/tuning.cc, read at
# commit b6475625; data/hardware.toml): hwLat per step, baseLat once per ring collective.
NVLINK_ALPHA = 0.6e-6
NETWORK_ALPHA = 2.7e-6
BASE = 6.6e-6


def test_ring_all_gather_inside_a_node() -> None:
    # base + (n-1) alpha + S (n-1) / (n W): 1 GB over 8 H100 at 450 GB/s, 7 ring steps.
    assert collectives.all_gather_time_s(1e9, 8, "H100") == pytest.approx(
        BASE + 7 * NVLINK_ALPHA + 1e9 * 7 / 8 / 450e9
    )


def test_small_messages_are_latency_bound() -> None:
    # Tensor-parallel decode at batch 1: an all-reduce of one token's activations (8,192 bf16
    # values) over TP8 is the base latency and 14 ring steps: ~15 us, 200x the bytes' time.
    message = 8192 * 2
    bandwidth = 2 * message * 7 / 8 / 450e9
    time = collectives.all_reduce_time_s(message, 8, "H100")
    assert time == pytest.approx(BASE + 14 * NVLINK_ALPHA + bandwidth)
    assert time == pytest.approx(15.06e-6, rel=1e-3)  # the "about 15 us"
    assert time > 200 * bandwidth
    # 160 of them per token (2 per layer, 80 layers): 2.4 ms, where a bandwidth-only model
    # charges 10 us.
    assert 160 * time == pytest.approx(2.41e-3, rel=0.01)


def test_an_empty_message_costs_nothing() -> None:
    assert collectives.all_reduce_time_s(0.0, 8, "H100") == 0.0
    assert collectives.point_to_point_time_s(0.0, "H100") == 0.0
    assert collectives.all_to_all_time_s(0.0, 16, "H100") == 0.0


def test_all_reduce_is_reduce_scatter_plus_all_gather() -> None:
    # Twice the bytes and the steps of a reduce-scatter, in one collective: one base latency.
    sizes = np.array([1e6, 1e9])
    expected = 2 * collectives.reduce_scatter_time_s(sizes, 8, "H100") - BASE
    np.testing.assert_allclose(collectives.all_reduce_time_s(sizes, 8, "H100"), expected)
    assert collectives.ring_steps("all-reduce", 8) == 2 * collectives.ring_steps("all-gather", 8)
    with pytest.raises(ValueError, match="collective"):
        collectives.ring_steps("all-to-all", 8)


def test_the_base_latency_is_per_collective_and_optional() -> None:
    # TPUs publish no per-collective figure: their rings pay per-hop latency only.
    tpu = get_chip("TPU-v4")
    assert tpu.collective_base_latency_s == 0.0
    assert collectives.all_reduce_time_s(1.0, 4, tpu) == pytest.approx(
        6 * tpu.scale_up_latency_s + 2 * 3 / 4 / tpu.scale_up_bandwidth_bytes_per_s
    )
    # A point-to-point send and an all-to-all pay one step and no base.
    assert collectives.point_to_point_time_s(1.0, "H100") == pytest.approx(NVLINK_ALPHA + 1 / 450e9)


def test_a_ring_that_leaves_the_node_runs_at_scale_out_speed() -> None:
    S = 1e9
    across = collectives.all_gather_time_s(S, 16, "H100")
    # 50 GB/s instead of 450, and every one of the 15 steps at the network's latency.
    assert across == pytest.approx(BASE + 15 * NETWORK_ALPHA + S * 15 / 16 / 50e9)
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
    # The two levels' ring steps add their latencies: 7 inside, 15 across, and the base once.
    latency = BASE + 7 * NVLINK_ALPHA + 15 * NETWORK_ALPHA
    assert collectives.hierarchical_all_gather_time_s(S, 128, "H100") == pytest.approx(
        S * 15 / 16 / 400e9 + latency
    )
    # Two nodes: (S/8)(1/2)/50e9 = S/800e9 across, S (7/8)/450e9 = S/514e9 inside: NVLink
    # is the bottleneck (the book's question 5).
    assert collectives.hierarchical_all_gather_time_s(S, 16, "H100") == pytest.approx(
        S * 7 / 8 / 450e9 + BASE + 7 * NVLINK_ALPHA + NETWORK_ALPHA
    )
    # Eight times faster than a flat ring that runs every byte at one NIC's speed.
    flat = collectives.all_gather_time_s(S, 128, "H100") - BASE - 127 * NETWORK_ALPHA
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


# ---- the pace of a two-level collective (parallelism lesson, erratum 8 of issue 32) -----------
def test_nvlink_sets_the_pace_up_to_four_nodes_of_h100() -> None:
    # Inside: (7/8)/450e9 per byte; across m nodes: (m-1)/m/8/50e9. Equal near m = 4.6.
    paces = {tp: collectives.hierarchical_pace(tp, "H100") for tp in (8, 16, 32, 64, 128)}
    assert paces == {
        8: "scale-up",
        16: "scale-up",
        32: "scale-up",
        64: "scale-out",
        128: "scale-out",
    }
    assert collectives.hierarchical_pace(16, "H100", per_domain=1) == "scale-out"


# ---- the ring figure's curves ------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_schedule_sends_each_chunk_round_once_per_phase(n: int) -> None:
    S = 64e6
    ring = collectives.ring_all_reduce_schedule(S, n, "H100")
    assert ring.sent_chunk.shape == (2 * (n - 1), n)
    assert ring.phase.count("reduce-scatter") == ring.phase.count("all-gather") == n - 1
    # Every step each chip sends a different chunk: one per chip.
    for row in ring.sent_chunk:
        assert sorted(row) == list(range(n))
    # Reduce-scatter: what chip i sends at step s+1 is what it received from chip i-1 at step s.
    for s in range(n - 2):
        np.testing.assert_array_equal(ring.sent_chunk[s + 1], np.roll(ring.sent_chunk[s], 1))
    # After it, chip i holds chunk (i+1) mod n complete and sends it first in the all-gather.
    np.testing.assert_array_equal(ring.sent_chunk[n - 1], (np.arange(n) + 1) % n)
    # 2(n-1)/n of the array per chip, and the same time as all_reduce_time_s.
    assert ring.sent_bytes_per_chip == pytest.approx(2 * (n - 1) / n * S)
    assert ring.total_s == pytest.approx(collectives.all_reduce_time_s(S, n, "H100"))
    with pytest.raises(ValueError, match="n_chips must be >= 2"):
        collectives.ring_all_reduce_schedule(S, 1, "H100")


def test_all_reduce_cost_curve_splits_latency_from_bytes() -> None:
    sizes = np.logspace(3, 10, 8)
    cost = collectives.all_reduce_cost_curve(sizes, 8, "H100")
    np.testing.assert_allclose(cost.latency_s, BASE + 14 * NVLINK_ALPHA)
    np.testing.assert_allclose(cost.bytes_s, 2 * sizes * 7 / 8 / 450e9)
    np.testing.assert_allclose(cost.total_s, collectives.all_reduce_time_s(sizes, 8, "H100"))


def test_ring_figure_draws_the_schedule() -> None:
    from llmmath.display import plots

    figure = plots.collectives.ring_all_reduce_figure("H100", 4, 64e6)
    ring_ax, cost_ax = figure.axes
    labels = [t.get_text() for t in ring_ax.texts]
    ring = collectives.ring_all_reduce_schedule(64e6, 4, "H100")
    assert labels == [f"c{c}" for c in ring.sent_chunk.ravel()]
    # Right: one all-reduce over the 8-GPU domain, its latency and bytes terms, in µs.
    total, latency, moved = cost_ax.lines
    sizes = total.get_xdata()
    cost = collectives.all_reduce_cost_curve(sizes, get_chip("H100").scale_up_domain_size, "H100")
    assert total.get_ydata() == pytest.approx(1e6 * cost.total_s, rel=1e-12)
    assert latency.get_ydata() == pytest.approx(1e6 * cost.latency_s, rel=1e-12)
    assert moved.get_ydata() == pytest.approx(1e6 * cost.bytes_s, rel=1e-12)


def test_a_ring_schedule_is_drawn_for_a_bounded_number_of_chips() -> None:
    # Its chunk table is 2 (n - 1) x n: a million chips would need terabytes (it once took a
    # test worker to 24 GB and the OOM killer); the schedule is for figures.
    with pytest.raises(ValueError, match=r"ring_all_reduce_schedule\(\): n_chips must be"):
        collectives.ring_all_reduce_schedule(1e6, 2**20, "H100")
    assert collectives.ring_all_reduce_schedule(1e6, 1024, "H100").sent_chunk.shape == (2046, 1024)

"""The systems sections (issue 18): rack physics, MoE load imbalance, collective latency in
tensor-parallel decode, and disaggregated prefill and decode.

Each function is checked against a hand derivation, and each claim the new lesson sections
make in words (``a third of a rack``, ``not 2x``, ``most chips decode``) is pinned to the
values the sections show.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import get_chip, get_model
from llmmath.beyond import moe_balance, rack_physics, serving_systems
from llmmath.core import data, serving
from llmmath.core.deployment import Deployment

# ---- rack physics ------------------------------------------------------------------------------


def test_every_rack_and_domain_has_a_source_and_date() -> None:
    for name in rack_physics.list_racks():
        rack = rack_physics.get_rack(name)
        assert rack.source and rack.source_date, name
    for domain in rack_physics.domain_sizes():
        assert domain.source and domain.source_date, domain.name
    room = data.table("systems")["room"]
    assert room["source"] and room["source_date"]


def test_the_racks_domain_agrees_with_the_hardware_preset() -> None:
    # One domain, two files: the rack's GPU count and the chip preset's domain size.
    assert rack_physics.get_rack("GB200 NVL72").gpus == get_chip("GB200-NVL72").scale_up_domain_size
    sizes = {d.name: d.chips for d in rack_physics.domain_sizes()}
    assert sizes["GB200 NVL72"] == get_chip("GB200-NVL72").scale_up_domain_size
    assert sizes["HGX H100"] == get_chip("H100").scale_up_domain_size
    assert sizes["TPU v5p pod"] == get_chip("TPU-v5p").scale_up_domain_size


def test_gpus_in_power_budget_is_the_floor_of_the_ratio() -> None:
    nvl72 = rack_physics.get_rack("GB200 NVL72")
    assert nvl72.watts_per_gpu == pytest.approx(nvl72.rack_power_w / 72)
    # 40 kW / (120 kW / 72) is 24 in exact arithmetic: a rounding error must not make it 23.
    assert rack_physics.gpus_in_power_budget(40e3, 120e3 / 72) == 24
    assert rack_physics.gpus_in_power_budget(40e3 - 1.0, 120e3 / 72) == 23
    assert rack_physics.rack_power_for_w(72, nvl72.watts_per_gpu) == pytest.approx(120e3)


# ---- MoE load imbalance ------------------------------------------------------------------------


def test_zipf_loads_have_mean_one_and_the_zipf_ratio() -> None:
    loads = moe_balance.zipf_expert_loads(256, 0.5)
    assert loads.mean() == pytest.approx(1.0)
    assert np.all(np.diff(loads) <= 0)
    assert loads[0] / loads[3] == pytest.approx(4**0.5)
    np.testing.assert_allclose(moe_balance.zipf_expert_loads(64, 0.0), np.ones(64))


def test_replica_counts_go_to_the_hottest_per_copy() -> None:
    loads = [4.0, 1.0, 1.0, 1.0]
    # First copy to the expert of load 4 (then 2 per copy), second again (2 > 1), third
    # again (4/3 > 1), fourth to a load-1 expert (1 > 4/4... tie broken by the heap).
    assert list(moe_balance.replica_counts(loads, 2)) == [3, 1, 1, 1]
    assert moe_balance.replica_counts(loads, 5).sum() == 4 + 5
    np.testing.assert_array_equal(moe_balance.replica_counts(np.ones(8), 8), np.full(8, 2.0))


def test_gpu_loads_by_hand() -> None:
    # 8 experts on 2 GPUs, 4 slots each: the hot expert's GPU must also take 3 cold ones.
    loads = [4.0, 1, 1, 1, 1, 1, 1, 1]
    per_gpu = moe_balance.gpu_loads(loads, 2)
    np.testing.assert_allclose(per_gpu, [7.0, 4.0])
    assert moe_balance.imbalance_slowdown(loads, 2) == pytest.approx(7.0 / 5.5)
    # The greedy placement is optimal here: check against every split into 4 + 4.
    best = min(
        max(sum(loads[i] for i in part), sum(loads) - sum(loads[i] for i in part))
        for part in itertools.combinations(range(8), 4)
    )
    assert per_gpu[0] == best


def test_one_expert_per_gpu_slows_by_the_hottest_expert() -> None:
    loads = moe_balance.zipf_expert_loads(256, 0.5)
    assert moe_balance.imbalance_slowdown(loads, 256) == pytest.approx(loads[0])


@pytest.mark.parametrize("skew", [0.3, 0.5, 0.8])
def test_redundant_copies_help_and_keep_the_load(skew: float) -> None:
    loads = moe_balance.zipf_expert_loads(256, skew)
    assert moe_balance.gpu_loads(loads, 32, 32).sum() == pytest.approx(256.0)
    without = moe_balance.imbalance_slowdown(loads, 32)
    with_copies = moe_balance.imbalance_slowdown(loads, 32, 32)
    assert 1.0 <= with_copies < without


@settings(max_examples=40, deadline=None)
@given(
    # Realistic loads: an all-but-zero total (a subnormal such as 5e-324) makes max/mean
    # overflow, which the package refuses with a clean error, as it should.
    loads=st.lists(st.floats(0.0, 100.0), min_size=8, max_size=8).filter(lambda x: sum(x) >= 1e-6),
    redundant=st.sampled_from([0, 2, 4, 8]),
)
def test_placement_keeps_the_load_and_never_beats_balance(
    loads: list[float], redundant: int
) -> None:
    per_gpu = moe_balance.gpu_loads(loads, 2, redundant)
    assert per_gpu.sum() == pytest.approx(sum(loads))
    assert moe_balance.imbalance_slowdown(loads, 2, redundant) >= 1.0 - 1e-12
    # No GPU can do better than the hottest expert split over all its copies.
    copies = moe_balance.replica_counts(loads, redundant)
    assert per_gpu[0] >= max(np.asarray(loads) / copies) - 1e-9


def test_slots_must_divide_evenly() -> None:
    with pytest.raises(ValueError, match="n_gpus"):
        moe_balance.gpu_loads(np.ones(256), 144)
    with pytest.raises(ValueError, match="loads"):
        moe_balance.gpu_loads(np.zeros(8), 2)


# ---- collective latency in tensor-parallel decode ---------------------------------------------


def test_all_reduce_latency_counts_ring_steps() -> None:
    h100 = get_chip("H100")
    alpha, base = h100.scale_up_latency_s, h100.collective_base_latency_s
    assert (alpha, base) == (0.6e-6, 6.6e-6)  # NCCL 2.20.3, tuning.cc, Ring/LL on NVLink
    assert serving_systems.all_reduce_latency_s("H100", (8,), 1) == pytest.approx(
        base + 2 * 7 * alpha
    )
    alpha_tpu = get_chip("TPU-v4").scale_up_latency_s
    torus = serving_systems.all_reduce_latency_s("TPU-v4", (4, 4, 4), 10)
    assert torus == pytest.approx(10 * 2 * 9 * alpha_tpu)
    assert serving_systems.all_reduce_latency_s("H100", (8,), 0) == 0.0


def test_tp_breakdown_latency_part_is_two_per_layer() -> None:
    llama, h100 = get_model("Llama-3-70B"), get_chip("H100")
    one = serving_systems.tp_decode_breakdown(llama, h100, 8, 1, 2048)
    per_all_reduce = h100.collective_base_latency_s + 2 * 7 * h100.scale_up_latency_s
    expected = 2 * llama.n_layers * per_all_reduce
    assert float(one.alpha_s) == pytest.approx(expected)
    # The latency does not grow with the batch; the bytes do.
    big = serving_systems.tp_decode_breakdown(llama, h100, 8, 256, 2048)
    assert float(big.alpha_s) == pytest.approx(float(one.alpha_s))
    assert float(big.tp_s) > float(one.tp_s)
    assert float(one.serial_s) >= float(one.weight_read_s + one.alpha_s)


def test_a_parallel_block_all_reduces_once_per_layer() -> None:
    import dataclasses

    from llmmath.core.placement import Layout
    from llmmath.parallelism import layout_decode_step as layout_step

    palm = get_model("PaLM-540B")
    serial = dataclasses.replace(palm, parallel_block=False)
    assert get_model("Llama-3-70B").tp_all_reduces_per_layer == 2
    one = layout_step(palm, Layout(tp=48, pp=2), "TPU-v4", 1, 2048, weight_dtype="int8")
    two = layout_step(serial, Layout(tp=48, pp=2), "TPU-v4", 1, 2048, weight_dtype="int8")
    assert float(two.tp_s) == pytest.approx(2 * float(one.tp_s))


# ---- disaggregated prefill and decode ----------------------------------------------------------


def test_pools_are_the_streams_over_the_rates() -> None:
    node = Deployment("Llama-3-70B", "H100", 8)
    pools = serving_systems.disaggregated_pools(node, 3.0e6, 1.0e6, 64, 2048, 0.5)
    decode_rate = serving.decode_step(node, 64, 2048).tokens_per_s_per_chip
    assert float(pools.decode_tokens_per_s_per_chip) == pytest.approx(float(decode_rate))
    assert float(pools.prefill_chips * pools.prefill_tokens_per_s_per_chip) == pytest.approx(1.5e6)
    assert float(pools.decode_chips * pools.decode_tokens_per_s_per_chip) == pytest.approx(1.0e6)
    # Prefill is compute-bound: at most C / (2 P) tokens per chip (attention adds FLOPs).
    h100, llama = get_chip("H100"), get_model("Llama-3-70B")
    ceiling = h100.peak("bf16") / (2 * llama.matmul_params_per_token)
    assert 0.9 * ceiling < float(pools.prefill_tokens_per_s_per_chip) <= ceiling
    every_hit = serving_systems.disaggregated_pools(node, 3.0e6, 1.0e6, 64, 2048, 1.0)
    assert float(every_hit.prefill_chips) == 0.0


def test_deepseek_pools_add_up_to_its_fleet() -> None:
    day = serving_systems.deepseek_pools()
    spec = data.table("systems")["deepseek_serving"]
    assert day.input_output_ratio == pytest.approx(608 / 168)
    assert day.prefill_nodes == pytest.approx(
        608e9 / 86400 / spec["prefill_input_tokens_per_s_per_node"]
    )
    # Published rates and token counts, one day: the two pools need what the fleet ran.
    assert day.prefill_nodes + day.decode_nodes == pytest.approx(day.fleet_nodes, rel=0.01)
    assert day.fleet_nodes == data.table("api_prices")["fleets"]["DeepSeek-V3/R1, 24 h"]["nodes"]

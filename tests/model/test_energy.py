"""Energy per token and power's share of its cost (rack_physics), each against a by-hand path."""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import api_prices, batching
from llmmath.beyond import rack_physics
from llmmath.core.deployment import Deployment

DGX = "DGX H100 node (air)"


@pytest.fixture(scope="module")
def llama() -> Deployment:
    return Deployment("Llama-3-70B", "H100", 8)


def test_electricity_data_are_the_sourced_figures() -> None:
    power = rack_physics.electricity()
    # EIA: US industrial average 8.06 cents/kWh in 2023; Table 5.6.B (Jan-Jul 2024): Rhode
    # Island 19.97, the highest. Uptime: survey average PUE 1.58 in 2023; Google 1.10.
    assert power.usd_per_kwh == pytest.approx(0.0806, abs=5e-5)
    assert power.usd_per_kwh_high == pytest.approx(0.1997, abs=5e-5)
    assert power.pue == pytest.approx(1.58, abs=5e-3)
    assert power.pue_low == pytest.approx(1.10, abs=5e-3)
    assert "EIA" in power.source and "Uptime" in power.source and power.source_date[:2] == "20"
    # The DGX H100's 10.2 kW (NVIDIA user guide) over its 8 GPUs.
    assert rack_physics.get_rack(DGX).watts_per_gpu == pytest.approx(1275.0, rel=1e-12)


def test_power_bill_per_chip_hour_by_hand() -> None:
    bill = rack_physics.power_usd_per_chip_hour(1275.0, 1.58, 0.0806)
    assert bill == pytest.approx(1.275 * 1.58 * 0.0806, rel=1e-12)
    # Defaults are the data's.
    assert rack_physics.power_usd_per_chip_hour(1275.0) == pytest.approx(bill, rel=1e-12)
    assert rack_physics.power_share_of_rent(1275.0, 2.0) == pytest.approx(bill / 2.0, rel=1e-12)


def test_output_joules_are_the_decode_step_at_the_racks_power(llama: Deployment) -> None:
    batches = np.array([1.0, 64.0, 256.0])
    energy = rack_physics.serving_energy(llama, batches, 2048, DGX, usd_per_chip_hour=2.0)
    step = batching.decode_step(llama, batches, 2048)
    by_hand = 1275.0 * 1.58 * 8 * step.stage_s / batches
    assert np.allclose(energy.output_j_per_token, by_hand, rtol=1e-12)
    # A bigger batch shares each weight read: fewer joules per output token.
    assert np.all(np.diff(energy.output_j_per_token) < 0)
    # Input: one prefill pass of the prompts serving_cost groups, shared by its tokens.
    cost = energy.cost
    fill = batching.prefill(llama, 2048, cost.prefill_batch)
    by_hand_in = 1275.0 * 1.58 * 8 * fill.time_s / (cost.prefill_batch * 2048)
    assert np.allclose(energy.input_j_per_token, by_hand_in, rtol=1e-12)


def test_power_share_does_not_depend_on_the_batch(llama: Deployment) -> None:
    batches = np.array([1.0, 64.0, 296.0])
    energy = rack_physics.serving_energy(llama, batches, 2048, DGX, usd_per_chip_hour=2.0)
    share = energy.output_power_usd_per_million / energy.cost.output_usd_per_million
    assert np.allclose(share, energy.power_share, rtol=1e-12)
    assert energy.power_share == pytest.approx(
        rack_physics.power_share_of_rent(1275.0, 2.0), rel=1e-12
    )
    # Doubling the rent halves the share; the joules do not move.
    dear = rack_physics.serving_energy(llama, batches, 2048, DGX, usd_per_chip_hour=4.0)
    assert dear.power_share == pytest.approx(energy.power_share / 2, rel=1e-12)
    assert np.allclose(dear.output_j_per_token, energy.output_j_per_token, rtol=1e-12)


def test_fleet_day_energy_by_hand() -> None:
    day = api_prices.get_fleet_day()
    fleet = rack_physics.fleet_day_energy(DGX)
    kwh = 226.75 * 8 * 1.275 * 1.58 * 24
    assert fleet.energy_kwh == pytest.approx(kwh, rel=1e-12)
    assert fleet.j_per_token == pytest.approx(kwh * 3.6e6 / (608e9 + 168e9), rel=1e-12)
    assert fleet.j_per_output_token == pytest.approx(kwh * 3.6e6 / 168e9, rel=1e-12)
    assert fleet.power_usd == pytest.approx(kwh * 0.0806, rel=1e-12)
    # The day's rent is per GPU-hour too, so the day's share is the per-chip share.
    assert fleet.power_share == pytest.approx(
        rack_physics.power_share_of_rent(1275.0, day.usd_per_gpu_hour), rel=1e-12
    )


def test_energy_refuses_bad_input(llama: Deployment) -> None:
    with pytest.raises(ValueError, match="pue"):
        rack_physics.power_usd_per_chip_hour(1275.0, pue=0.9)
    with pytest.raises(ValueError, match="rack"):
        rack_physics.serving_energy(llama, 64, 2048, "no such rack")
    with pytest.raises(ValueError, match="watts_per_chip"):
        rack_physics.power_share_of_rent(-1.0, 2.0)

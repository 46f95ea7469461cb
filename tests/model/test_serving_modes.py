"""Serving modes (llmmath.beyond: focus, serving_modes, speculative, number_formats) and their
figures.

Expected values come from the formulas written out here and the data files' numbers, never
from the functions under test: e.g. Gemma 3's parameter count from its config, a batch API's
idle share from integrating a cosine day, B* from C b_w / (2 W).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmmath.beyond import focus, number_formats, serving_modes, speculative
from llmmath.core import capacity, data, serving
from llmmath.core.deployment import Deployment
from llmmath.core.dtypes import bytes_per_element
from llmmath.display import plots


@pytest.fixture(scope="module")
def llama() -> Deployment:
    return Deployment("Llama-3-70B", "H100", 8)


@pytest.fixture(scope="module")
def deepseek() -> Deployment:
    return Deployment("DeepSeek-V3", "H100", 16, weight_dtype="fp8", compute_dtype="fp8")


# ---- data -----------------------------------------------------------------------------------
def test_every_serving_modes_entry_has_a_source_and_date() -> None:
    for section, entries in data.table("serving_modes").items():
        for name, entry in entries.items():
            assert entry.get("source"), f"{section}.{name} has no source"
            assert len(entry.get("source_date", "")) >= 4, f"{section}.{name} has no date"


def test_nvfp4_size_is_the_data_files_block_format() -> None:
    fmt = data.table("serving_modes")["formats"]["nvfp4"]
    bits = fmt["bits_per_value"] + fmt["scale_bits"] / fmt["block"]
    assert bytes_per_element("nvfp4") == bits / 8 == 0.5625


# ---- the focus machine ------------------------------------------------------------------------
def _gemma_params(L: int, D: int, F: int, N: int, K: int, H: int, V: int) -> int:
    # SwiGLU MLP, GQA attention, two norms a layer, tied embedding, the final norm.
    return L * (3 * D * F + 2 * D * N * H + 2 * D * K * H + 2 * D) + V * D + D


GEMMA = {  # config.json text_config: L, D, F, N, K, H, V; and the published size
    "Gemma-3-4B": ((34, 2560, 10240, 8, 4, 256, 262208), 3.88e9),
    "Gemma-3-12B": ((48, 3840, 15360, 16, 8, 256, 262208), 11.77e9),
    "Gemma-3-27B": ((62, 5376, 21504, 32, 16, 128, 262208), 27.0e9),
}


@pytest.mark.parametrize("name", list(GEMMA))
def test_gemma_presets_have_the_published_size(name: str) -> None:
    shape, published = GEMMA[name]
    model = focus.get_focus_model(name)
    assert model.total_params == _gemma_params(*shape)
    assert model.total_params == pytest.approx(published, rel=0.01)


def test_local_decode_is_bandwidth_over_bytes() -> None:
    mac = focus.get_focus_machine("Mac-mini-M4-Pro")
    run = focus.local_decode(mac, "Gemma-3-27B", "int4")
    params = _gemma_params(*GEMMA["Gemma-3-27B"][0])  # tied: the head is the embedding
    assert run.time_s == pytest.approx(params * 0.5 / 273e9, rel=1e-12)
    assert run.tokens_per_s == pytest.approx(273e9 / (params * 0.5), rel=1e-12)
    assert round(run.tokens_per_s, 1) == 20.2  # the module's docstring


def test_local_decode_matches_the_decode_step_on_a_chip() -> None:
    # The same bytes / W as serving.decode_step's memory time, on a chip with W = the H100's.
    h100 = Deployment("Llama-3-8B", "H100", 1, weight_dtype="int8", compute_dtype="int8")
    machine = focus.FocusMachine("h100-like", "", 80e9, 3.35e12)
    run = focus.local_decode(machine, "Llama-3-8B", "int8", 1000)
    step = serving.decode_step(h100, 1, 1000)
    assert run.time_s == pytest.approx(float(step.memory_s), rel=1e-12)


def test_which_gemma_fits_on_a_24_gb_card() -> None:
    card = focus.get_focus_machine("RTX-4090")
    usable = 24e9 * 0.9
    for name, (shape, _) in GEMMA.items():
        for dtype, b in (("int8", 1.0), ("int4", 0.5)):
            run = focus.local_decode(card, name, dtype, 4096)
            L, K, H = shape[0], shape[4], shape[5]
            # 1 layer in 6 global (all 4,096 tokens), the rest a 1,024-token window.
            cached = (L // 6) * 4096 + (L - L // 6) * 1024
            need = _gemma_params(*shape) * b + cached * 2 * K * H * 2
            assert run.fits == (need <= usable), (name, dtype)
    assert not focus.local_decode(card, "Gemma-3-27B", "int8", 4096).fits
    assert focus.local_decode(card, "Gemma-3-27B", "int4", 4096).fits


def test_measured_machine_uses_the_measured_bandwidth() -> None:
    from llmmath.core.measure import MachineRoofline

    one = np.array([1.0])
    measured = MachineRoofline(1e11, 5e10, one, 64, one, one, one)
    mine = focus.measured_machine(measured, 32e9)
    assert mine.bandwidth_bytes_per_s == 5e10
    assert mine.usable_bytes == pytest.approx(0.75 * 32e9)
    table = focus.focus_markdown(mine)
    assert table.count("\n") == 2 + 4 - 1 and "Gemma-4-26B-A4B" in table


def test_focus_errors_name_the_parameter() -> None:
    mac = focus.get_focus_machine("Mac-mini-M4-Pro")
    with pytest.raises(ValueError, match="context"):
        focus.local_decode(mac, "Gemma-3-4B", "int4", 10**6)
    with pytest.raises(ValueError, match="focus machine"):
        focus.get_focus_machine("Cray-1")


# ---- fast mode ------------------------------------------------------------------------------
def test_fast_mode_batch_is_the_largest_fast_enough(llama: Deployment) -> None:
    fast = serving_modes.fast_mode(llama, 2048, np.array([1.5, 2.0, 2.2]))
    t0 = float(serving.decode_step(llama, fast.standard_batch, 2048).time_s)
    # Above T_c (~1,477 tokens) no batch is compute-bound: the cheapest batch fills the HBM.
    assert fast.standard_batch == capacity.max_batch(llama, 2048) == 743
    base = float(
        serving.decode_step(llama, fast.standard_batch, 2048).cost_per_million_tokens_usd()
    )
    for s, B, multiple in zip(fast.speedup, fast.fast_batch, fast.price_multiple, strict=True):
        assert float(serving.decode_step(llama, B, 2048).time_s) <= t0 / s
        assert float(serving.decode_step(llama, B + 1, 2048).time_s) > t0 / s
        cost = float(serving.decode_step(llama, B, 2048).cost_per_million_tokens_usd())
        assert multiple == pytest.approx(cost / base, rel=1e-12)
    assert list(fast.fast_batch) == [426, 267, 224]
    assert np.all(np.diff(fast.price_multiple) > 0)


def test_fast_mode_limits(llama: Deployment) -> None:
    fast = serving_modes.fast_mode(llama, 2048, np.array([1.0, 5.0]))
    floor = float(serving.decode_step(llama, 1, 2048).time_s)
    assert 4.5 < fast.max_speedup < 5.0
    assert fast.max_speedup == pytest.approx(fast.standard_time_s / floor, rel=1e-12)
    assert fast.price_multiple[0] == pytest.approx(1.0)
    assert math.isinf(fast.price_multiple[1])  # past the weight floor: no batch is that fast
    # Twice the chips at the same batch: half the step, the same cost (the floor, no collectives).
    assert fast.wider_price_multiple == pytest.approx([1.0, 1.0], rel=1e-9)


# ---- a frontier provider's batch --------------------------------------------------------------
def test_fleet_scale_reproduces_about_128k_tokens_per_batch(deepseek: Deployment) -> None:
    fleet = serving_modes.fleet_scale(deepseek, 2048, 0.020, 3e8)
    step = serving.decode_step(deepseek, fleet.batch, 2048)
    assert (
        float(step.time_s)
        <= 0.020
        < float(serving.decode_step(deepseek, fleet.batch + 1, 2048).time_s)
    )
    assert fleet.batch_tokens_per_s == pytest.approx(fleet.batch / float(step.time_s), rel=1e-12)
    assert 100e3 < fleet.batch_tokens_per_s < 160e3  # the lecture's "~128k tokens/s" per batch
    assert fleet.replicas == math.ceil(3e8 / fleet.batch_tokens_per_s)
    assert fleet.chips == fleet.replicas * 16


def test_fleet_scale_refuses_a_latency_below_the_floor(llama: Deployment) -> None:
    with pytest.raises(ValueError, match="token_latency_s"):
        serving_modes.fleet_scale(llama, 2048, 0.001, 1e6)


# ---- batch APIs -------------------------------------------------------------------------------
def test_batch_apis_are_half_price_within_a_day() -> None:
    apis = serving_modes.batch_api_prices()
    assert len(apis) == 3
    assert all(api.discount == 0.5 and api.turnaround_h == 24 for api in apis)


def test_idle_share_integrates_a_cosine_day(llama: Deployment) -> None:
    r = 0.4
    hours = np.linspace(0, 24, 24001)
    demand = r + (1 - r) * (1 + np.cos(2 * np.pi * hours / 24)) / 2  # peak 1, trough r
    idle = 1 - np.trapezoid(demand, hours) / 24
    work = serving_modes.deferred_work(llama, 2048, 0.010, r)
    assert work.idle_share == pytest.approx(idle, rel=1e-6)
    i_cost = float(
        serving.decode_step(llama, work.interactive_batch, 2048).cost_per_million_tokens_usd()
    )
    assert work.interactive_cost_per_million_usd == pytest.approx(i_cost, rel=1e-12)
    assert work.batching_saving == pytest.approx(1 - work.floor_cost_per_million_usd / i_cost)
    assert 0 < work.batching_saving < 0.5  # the bigger batch alone does not make 50% off


# ---- continuous batching and paged KV ---------------------------------------------------------
def test_kv_packing_steady_state(llama: Deployment) -> None:
    lengths = serving_modes.request_lengths()
    pack = serving_modes.kv_packing(llama, 161, 338, 8192)
    # An exponential of mean m has E[o^2] = 2 m^2: a live sequence holds p + m + 1/2 on average.
    assert pack.mean_cached_tokens == pytest.approx(161 + 338 + 0.5, rel=0.01)
    assert pack.mean_paged_tokens - pack.mean_cached_tokens == pytest.approx(7.5, abs=1.0)
    kv = 327_680
    budget = 8 * 80e9 - 70_553_706_496 * 2
    assert pack.reserved_batch == math.floor(budget / (8192 * kv))
    assert pack.paged_batch == math.floor(budget / (pack.mean_paged_tokens * kv))
    assert pack.reserved_batch < pack.critical_batch < pack.paged_batch
    assert pack.reserved_kv_use == pytest.approx(pack.mean_cached_tokens / 8192)
    assert pack.paged_kv_use > 0.96
    # Reserving the model's context wastes more than the 20-38% use the vLLM paper measured
    # in systems that reserved a request's maximum output.
    assert pack.reserved_kv_use < lengths["used_share_low"]


def test_kv_packing_refuses_a_prompt_longer_than_the_reservation(llama: Deployment) -> None:
    with pytest.raises(ValueError, match="reserved_tokens"):
        serving_modes.kv_packing(llama, 4096, 338, 2048)


# ---- speculative decoding and MTP -------------------------------------------------------------
@pytest.mark.parametrize(("a", "k"), [(0.85, 1), (0.9, 1), (0.7, 3), (0.0, 4)])
def test_expected_tokens_is_the_sum_of_acceptances(a: float, k: int) -> None:
    assert speculative.expected_tokens_per_step(a, k) == pytest.approx(
        sum(a**i for i in range(k + 1))
    )


def test_mtp_draft_share_counts_a_layer_a_projection_and_the_head() -> None:
    from llmmath.core.models import get_model

    ds = get_model("DeepSeek-V3")
    head = 129280 * 7168
    layer = (ds.matmul_params_per_token - head) / 61
    share = (layer + 2 * 7168**2 + head) / ds.matmul_params_per_token
    assert speculative.mtp_draft_share("DeepSeek-V3") == pytest.approx(share, rel=1e-12)
    assert 0.03 < share < 0.06


def test_speculation_at_batch_one_pays_tokens_over_draft_cost(llama: Deployment) -> None:
    # Memory-bound: the verify step reads what a plain step reads, so the gain is the tokens
    # per step over (1 + the drafts' share of a step).
    step = speculative.speculative_step(llama, 1, 2048, 3, 0.7, 0.02)
    plain = serving.decode_step(llama, 1, 2048)
    tokens = 1 + 0.7 + 0.7**2 + 0.7**3
    drafts = 3 * 0.02 * float(plain.weight_read_s)
    expected = tokens * float(plain.time_s) / (float(plain.time_s) + drafts)
    assert float(step.speedup) == pytest.approx(expected, rel=1e-9)


def test_a_drafts_own_kv_read_is_charged_per_draft(llama: Deployment) -> None:
    # Each of the k drafts reads draft_kv_share of the batch's KV read beside its weights.
    B = float(capacity.max_batch(llama, 2048))
    plain = serving.decode_step(llama, B, 2048)
    free = speculative.speculative_step(llama, B, 2048, 3, 0.7, 0.02)
    kv = speculative.speculative_step(llama, B, 2048, 3, 0.7, 0.02, draft_kv_share=0.1)
    extra = float(kv.draft_time_s - free.draft_time_s)
    assert extra == pytest.approx(3 * 0.1 * float(plain.kv_read_s), rel=1e-12)
    # With the HBM full at 2,048 tokens the KV read dwarfs the weights: the gain is gone.
    assert float(free.speedup) > 1.05 and float(kv.speedup) < 1.02
    assert speculative.mtp_draft_kv_share("DeepSeek-V3") == pytest.approx(1 / 61)
    with pytest.raises(ValueError, match="draft_kv_share"):
        speculative.speculative_step(llama, 1, 2048, 3, 0.7, 0.02, draft_kv_share=1.5)


def test_speculation_is_a_loss_when_compute_bound(llama: Deployment) -> None:
    step = speculative.speculative_step(llama, 2000, 0, 3, 0.7, 0.02)
    assert float(step.speedup) < 1.0
    assert float(step.speedup) == pytest.approx(2.533 / 4, rel=0.05)  # E tokens for 4x FLOPs


def test_deepseek_mtp_floor_is_near_the_reported_speedup(deepseek: Deployment) -> None:
    mtp = speculative.mtp_published()
    share = speculative.mtp_draft_share("DeepSeek-V3")
    step = speculative.speculative_step(deepseek, 1024, 2048, 1, mtp["acceptance_low"], share)
    assert float(step.speedup) == pytest.approx(mtp["reported_tps_speedup"], rel=0.03)
    # At small batch the second token routes to other experts: the verify reads more weights.
    small = speculative.speculative_step(deepseek, 4, 2048, 1, mtp["acceptance_low"], share)
    assert float(small.speedup) < float(step.speedup)


# ---- FP8 / NVFP4 --------------------------------------------------------------------------------
def test_formats_move_the_capacity_wall_not_b_star() -> None:
    fmt = number_formats.format_effects("Llama-3.1-405B", "B200", 8, 32768)
    C = {"bf16": 2.25e15, "fp8": 4.5e15, "nvfp4": 9.0e15}
    b = {"bf16": 2.0, "fp8": 1.0, "nvfp4": 0.5625}
    params, kv_elems = 405_853_388_800, 2 * 126 * 8 * 128
    for i, (w, kv, c) in enumerate(number_formats.RECIPES):
        assert fmt.critical_batch[i] == pytest.approx(C[c] * b[w] / (2 * 8e12), rel=1e-12)
        room = (8 * 180e9 - params * b[w]) / (32768 * kv_elems * b[kv])
        assert fmt.max_batch[i] == math.floor(room)
    assert list(fmt.max_batch) == [37, 122, 143]
    assert np.all(fmt.batch == fmt.max_batch)  # at 32k the wall binds before B*
    weight_only = number_formats.format_effects(
        "Llama-3.1-405B", "B200", 8, 32768, (("nvfp4", "fp8", "bf16"),)
    )
    assert weight_only.critical_batch[0] == pytest.approx(2.25e15 * 0.5625 / 16e12)


# ---- figures ------------------------------------------------------------------------------------
def test_figures_draw(llama: Deployment, deepseek: Deployment) -> None:
    ax = plots.serving_modes.fast_mode_figure(llama, 2048).axes[0]
    top = float(serving_modes.fast_mode(llama, 2048, 1.0).max_speedup)
    fast = serving_modes.fast_mode(llama, 2048, ax.lines[0].get_xdata())
    assert ax.lines[0].get_ydata() == pytest.approx(fast.price_multiple, rel=1e-12)
    assert ax.lines[0].get_xdata()[-1] == pytest.approx(top * 0.999)  # up to the weight floor
    cases = [("MTP", deepseek, 1, 0.85, 0.044, 0.016), ("draft", llama, 3, 0.7, 0.02, 0.1)]
    (ax,) = plots.serving_modes.speculative_figure(cases, 2048).axes
    *curves, one = ax.lines  # a line per case, then the break-even at 1
    assert [line.get_label() for line in curves] == ["MTP", "draft"]
    for line, (_, dep, k, a, share, kv_share) in zip(curves, cases, strict=True):
        curve = speculative.speedup_curve(dep, 2048, k, a, share, kv_share)
        assert line.get_xdata() == pytest.approx(curve.batch, rel=1e-12)
        assert line.get_ydata() == pytest.approx(curve.speedup, rel=1e-12)
    assert list(one.get_ydata()) == [1.0, 1.0]


# ---- what the new lesson sections say -----------------------------------------------------------
def test_a_patient_frontier_batch_stops_at_the_capacity_wall(deepseek: Deployment) -> None:

    patient = serving_modes.fleet_scale(deepseek, 2048, 0.050, 3e8)
    assert patient.batch == float(capacity.max_batch(deepseek, 2048))
    assert float(patient.step.time_s) < 0.050


def test_formats_cut_cost_and_the_weight_floor() -> None:
    fmt = number_formats.format_effects("Llama-3.1-405B", "B200", 8, 32768)
    assert np.all(np.diff(fmt.cost_per_million_usd) < 0)
    assert fmt.weight_floor_s[1] == pytest.approx(fmt.weight_floor_s[0] / 2, rel=1e-12)
    kv_only = number_formats.format_effects(
        "Llama-3.1-405B", "B200", 8, 32768, (("bf16", "fp8", "bf16"),)
    )
    assert kv_only.max_batch[0] == 2 * fmt.max_batch[0] < fmt.max_batch[1]


def test_big_pages_waste_about_half_a_page(llama: Deployment) -> None:
    pack = serving_modes.kv_packing(llama, 161, 338, 8192, 256)
    waste = pack.mean_paged_tokens - pack.mean_cached_tokens
    assert waste == pytest.approx(128, rel=0.1)
    assert pack.paged_kv_use == pytest.approx(pack.mean_cached_tokens / pack.mean_paged_tokens)
    assert pack.paged_batch > pack.critical_batch


def test_speculation_break_even_is_where_the_speedup_crosses_one(llama: Deployment) -> None:
    # At 2,048 tokens (above T_c) the step stays memory-bound at every batch that fits, so
    # three drafts at a = 0.7 still pay with the HBM full; at 256 tokens they stop paying.
    assert math.isinf(speculative.break_even_batch(llama, 2048, 3, 0.7, 0.02))
    full = speculative.speculative_step(llama, capacity.max_batch(llama, 2048), 2048, 3, 0.7, 0.02)
    assert float(full.speedup) > 1.0
    B = speculative.break_even_batch(llama, 256, 3, 0.7, 0.02)
    around = speculative.speculative_step(llama, np.array([B - 1, B]), 256, 3, 0.7, 0.02)
    assert float(around.speedup[0]) > 1.0 >= float(around.speedup[1])


def test_fleet_of_sizes_a_fleet_from_any_step(llama: Deployment) -> None:
    plain = serving_modes.fleet_scale(llama, 2048, 0.020, 1e8)
    assert serving_modes.fleet_of(plain.step, 1e8) == plain
    serial = serving.decode_step(llama, plain.batch, 2048, overlap="none")
    slower = serving_modes.fleet_of(serial, 1e8)  # the serial step: fewer tokens a second
    assert slower.batch_tokens_per_s < plain.batch_tokens_per_s
    assert slower.replicas == math.ceil(1e8 / slower.batch_tokens_per_s)

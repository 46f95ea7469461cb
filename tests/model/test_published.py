"""llmmath.validation.published: the floors next to published measurements (book/validation.md).

Each published case must hold as a floor (floor <= measured) with an implied efficiency in a
range stated per case; the expected floors are also written out here from the formulas in
reference.md, not read back from the package. Sources are named in
src/llmmath/data/measurements.toml and beside each check.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from llmmath.core import measure
from llmmath.core.hardware import get_chip
from llmmath.core.measure import MachineRoofline
from llmmath.core.models import get_model
from llmmath.display import plots
from llmmath.scaling import TABLE3
from llmmath.validation import published
from llmmath.validation.published import Comparison

SECONDS_PER_DAY = 86400.0

# Implied efficiency (floor / measured) allowed for each published floor, and why.
EFFICIENCY_RANGES = {
    # Pope et al. 2022: 29 ms/token vs a ~7.2 ms weight+KV read floor; low-batch decode on 64
    # chips is dominated by communication the floor leaves out: 0.15..0.40.
    "palm-540b-decode": (0.15, 0.40),
    # Pope et al. 2022: 76% MFU on a compute-bound prefill, so the efficiency is the MFU.
    "palm-540b-prefill": (0.70, 0.80),
    # kipply / FasterTransformer: 22 ms vs a ~16.5 ms weight-read floor: 0.6..0.9.
    "13b-a100-40gb-decode": (0.60, 0.90),
    # Narayanan et al. 2021: 6ND MFU = 140/312 * 6/8 ~ 0.34: 0.30..0.40.
    "gpt3-175b-megatron-training": (0.30, 0.40),
}


def comparison_for(key: str) -> Comparison:
    kind = published.load_measurements()[key]["kind"]
    if kind == "decode":
        return published.decode_comparison(key)
    if kind == "prefill_mfu":
        return published.prefill_comparison(key)
    return published.training_comparison(key)


# ---- the data file and the presets it needs ------------------------------------------------
def test_every_measurement_records_value_units_source_and_date() -> None:
    tables = published.load_measurements()
    assert set(EFFICIENCY_RANGES) | {"chinchilla-table3"} == set(tables)
    for key, spec in tables.items():
        assert spec["source"] and spec["source_date"] and spec["units"], key
        if spec["kind"] != "table3":
            assert spec["value"] > 0, key


def test_tpu_v4_preset_has_no_int8_speedup() -> None:
    # Google Cloud TPU v4 page / Pope et al. 2022: 275 TFLOP/s bf16, int8 at the same rate;
    # 1.2 TB/s HBM; ICI 6 x 45 GB/s.
    tpu = get_chip("TPU-v4")
    assert tpu.peak("bf16") == 275e12
    assert tpu.peak("int8") == tpu.peak("bf16")
    assert tpu.hbm_bandwidth_bytes_per_s == 1.2e12
    assert tpu.scale_up_bandwidth_bytes_per_s == 270e9
    assert tpu.source and tpu.source_date


def test_a100_40gb_preset() -> None:
    # NVIDIA A100 datasheet: 40GB SXM has 1,555 GB/s, the 80GB part 2,039 GB/s; same peaks.
    a100_40 = get_chip("A100-40GB")
    assert a100_40.hbm_bandwidth_bytes_per_s == 1.555e12
    assert a100_40.hbm_bytes == 40e9
    assert a100_40.peak("fp16") == get_chip("A100").peak("fp16") == 312e12


def test_palm_540b_preset() -> None:
    # PaLM paper (arXiv 2204.02311) Table 1: 540.35e9 parameters; MQA; tied embeddings (0.1%).
    palm = get_model("PaLM-540B")
    assert palm.total_params == pytest.approx(540.35e9, rel=1e-3)
    assert palm.attention_kind == "MQA"
    assert palm.source and palm.source_date


# ---- every published floor holds, with a sane efficiency -------------------------------------
@pytest.mark.parametrize("key", sorted(EFFICIENCY_RANGES))
def test_published_floor_is_below_the_measurement(key: str) -> None:
    case = comparison_for(key)
    low, high = EFFICIENCY_RANGES[key]
    assert case.is_floor
    assert case.floor <= case.measured
    assert low <= case.efficiency <= high
    assert case.efficiency == pytest.approx(case.floor / case.measured, rel=1e-12)


def test_palm_decode_floor_is_the_weight_and_kv_read() -> None:
    # reference.md decode step: B T kv / W + max(2 B P / C, P b_w / W), on 64 chips. At
    # batch 64 the weight read (int8, 1 B each) beats 2 B P / C, so both terms are reads.
    P = get_model("PaLM-540B").total_params  # tied embeddings: every weight is a matmul weight
    kv = 2 * 118 * 1 * 256 * 2  # bf16 keys and values, one KV head
    W = 64 * 1.2e12
    assert 2 * 64 * P / (64 * 275e12) < P * 1.0 / W
    expected = P * 1.0 / W + 64 * 2048 * kv / W
    assert published.decode_comparison("palm-540b-decode").floor == pytest.approx(
        expected, rel=1e-9
    )


def test_palm_prefill_is_compute_bound_so_efficiency_is_the_mfu() -> None:
    assert published.prefill_comparison().efficiency == pytest.approx(0.76, rel=1e-9)


def test_13b_floor_is_weight_bytes_over_bandwidth() -> None:
    # The brief's floor: weight bytes / 1.555e12. The package reads only the matmul weights
    # (the input embedding is a lookup), so it is 1.3% lower.
    weight_bytes = get_model("Llama-2-13B").weight_bytes("fp16")
    floor = published.decode_comparison("13b-a100-40gb-decode").floor
    assert floor == pytest.approx(weight_bytes / 1.555e12, rel=0.02)
    assert floor <= weight_bytes / 1.555e12


# ---- GPT-3 on Megatron-LM -----------------------------------------------------------------
def test_8nd_reproduces_megatrons_34_days() -> None:
    # Narayanan et al. 2021 section 5.1: 8 N D / (n X) ~ 34 days (within 10%).
    days = published.gpt3_training_days(8.0)
    assert days == pytest.approx(34.0, rel=0.10)
    assert days == pytest.approx(8 * 175e9 * 300e9 / (1024 * 140e12) / SECONDS_PER_DAY, rel=1e-9)


def test_6nd_gives_three_quarters_of_8nd() -> None:
    assert published.gpt3_training_days(6.0) == pytest.approx(
        0.75 * published.gpt3_training_days(8.0), rel=1e-12
    )


def test_gpt3_efficiency_is_the_6nd_mfu() -> None:
    case = published.training_comparison()
    assert case.floor == pytest.approx(6 * 175e9 * 300e9 / (1024 * 312e12) / 86400, rel=1e-9)
    # 34 days is their rounding of 33.9: 1%.
    assert case.efficiency == pytest.approx(140 / 312 * 6 / 8, rel=0.01)


# ---- Chinchilla ---------------------------------------------------------------------------
def test_chinchilla_rows_match_6nd_within_5_percent() -> None:
    # reference.md: every Table 3 row equals 6 N D within 5%. Not a floor: either side of 1.
    cases = published.chinchilla_comparisons()
    assert len(cases) == len(TABLE3)
    for case, row in zip(cases, TABLE3, strict=True):
        assert not case.is_floor
        assert case.floor == pytest.approx(6 * row.params * row.tokens, rel=1e-12)
        assert case.efficiency == pytest.approx(1.0, abs=0.05)


def test_published_comparisons_hold_every_case() -> None:
    cases = published.published_comparisons()
    assert len(cases) == len(EFFICIENCY_RANGES) + len(TABLE3)
    assert all(case.floor <= case.measured for case in cases if case.is_floor)


# ---- the reader's own machine --------------------------------------------------------------
def fake_machine() -> MachineRoofline:
    return MachineRoofline(
        peak_flop_per_s=1e11,
        bandwidth_bytes_per_s=1e10,
        sweep_batch=np.array([1.0, 64.0, 1024.0]),
        sweep_dim=256,
        sweep_flops=np.array([1e6, 1e8, 1e10]),
        sweep_bytes=np.array([1e6, 1e6, 1e7]),
        sweep_measured_s=np.array([2e-4, 2e-3, 0.2]),
    )


def test_machine_comparisons_pick_the_lowest_and_highest_intensity() -> None:
    low, high = published.machine_comparisons(fake_machine())
    assert low.floor == pytest.approx(1e6 / 1e10)  # bandwidth-bound: bytes / W
    assert low.measured == 2e-4
    assert high.floor == pytest.approx(1e10 / 1e11)  # compute-bound: FLOPs / C
    assert high.efficiency == pytest.approx(0.5)
    assert "1024 × 256 by 256 × 256" in high.name


def test_this_cpu_compares_against_its_own_envelope(monkeypatch: pytest.MonkeyPatch) -> None:
    # What holds on any machine, however busy: the measured roofline is the envelope of what
    # was measured, so no floor beats its measurement and each efficiency is in (0, 1]. How
    # efficient this CPU is (the big matmul near its peak) is a measurement: `make bench`
    # reports it (scripts/bench.py, "this CPU"). Small sizes: a unit test's seconds.
    peak, bandwidth = measure.measure_peak_flop_per_s, measure.measure_bandwidth_bytes_per_s
    monkeypatch.setattr(measure, "measure_peak_flop_per_s", lambda: peak(128, 2))
    monkeypatch.setattr(measure, "measure_bandwidth_bytes_per_s", lambda: bandwidth(8.0, 2))
    machine = measure.measure_machine(sweep_batches=(1, 4, 256), sweep_dim=256)
    low, high = published.machine_comparisons(machine)
    assert "1 × 256 by" in low.name and "by 256 × 256" in high.name
    for case in (low, high):
        assert case.floor <= case.measured * (1 + 1e-9), case
        assert 0 < case.efficiency <= 1 + 1e-9, case


# ---- the figure ---------------------------------------------------------------------------
def test_efficiency_bars_draw_one_bar_per_case() -> None:
    cases = published.published_comparisons()
    figure = plots.published.efficiency_bars(cases)
    assert isinstance(figure, Figure)
    ax = figure.axes[0]
    widths = sorted(patch.get_width() for patch in ax.patches)
    assert widths == pytest.approx(sorted(c.efficiency for c in cases))


def test_comparison_table_has_a_row_per_case_in_readable_units() -> None:
    cases = (
        Comparison("decode", 0.00724, 0.029, "s/token", "paper"),
        Comparison("training", 11.4, 34.0, "days", "paper"),
    )
    lines = published.comparison_table(cases).splitlines()
    assert lines[0] == "| case | floor | measured | floor / measured |"
    assert lines[2] == "| decode | 7.24 ms/token | 29 ms/token | 0.25 |"
    assert lines[3] == "| training | 11.4 days | 34 days | 0.34 |"
    assert len(lines) == 4


# ---- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("floor", "measured", "unit", "error"),
    [
        (1.0, 0.0, "s", ValueError),
        (-1.0, 1.0, "s", ValueError),
        (float("nan"), 1.0, "s", ValueError),
        (1.0, "fast", "s", TypeError),
        (1.0, [1.0, 2.0], "s", TypeError),
        (1.0, 1.0, "", ValueError),
    ],
)
def test_bad_comparisons_are_refused(
    floor: object, measured: object, unit: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        Comparison("bad", floor, measured, unit, "nowhere")  # type: ignore[arg-type]


def test_bad_keys_and_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown measurement"):
        published.decode_comparison("no-such-case")
    with pytest.raises(ValueError, match="not 'decode'"):
        published.decode_comparison("gpt3-175b-megatron-training")
    with pytest.raises(ValueError, match="flops_per_param_token"):
        published.gpt3_training_days(0.0)
    with pytest.raises(TypeError, match="MachineRoofline"):
        published.machine_comparisons("my laptop")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one"):
        plots.published.efficiency_bars([])
    with pytest.raises(TypeError, match="Comparison"):
        plots.published.efficiency_bars(["x"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one"):
        published.comparison_table(())
    with pytest.raises(TypeError, match="Comparison"):
        published.comparison_table(("x",))  # type: ignore[arg-type]

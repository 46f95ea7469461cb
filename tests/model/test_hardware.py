"""llmmath.core.hardware: presets, lookups, custom chips, and errors that say what was wrong."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from llmmath.core import hardware
from llmmath.core.hardware import Chip, add_chip, get_chip, list_chips, load_chips

EXPECTED_PRESETS = ["A100", "H100", "H200", "B200", "GB200-NVL72", "TPU-v5e", "TPU-v5p", "TPU-v6e"]

CUSTOM_TOML = textwrap.dedent(
    """
    [Toy-1]
    full_name = "Toy accelerator"
    peak_flop_per_s = { bf16 = 1.0e15, int8 = 2.0e15 }
    hbm_bytes = 64e9
    hbm_bandwidth_bytes_per_s = 4.0e12
    scale_up_bandwidth_bytes_per_s = 400e9
    scale_up_domain_size = 16
    scale_out_bandwidth_bytes_per_s = 25e9
    scale_up_latency_s = 1e-6
    scale_out_latency_s = 5e-6
    latency_source = "made up for the tests"
    source = "made up for the tests"
    source_date = "2026-01"
    """
)


def chip_fields(**overrides: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "name": "Toy-1",
        "full_name": "Toy accelerator",
        "peak_flop_per_s": {"bf16": 1.0e15, "int8": 2.0e15},
        "hbm_bytes": 64e9,
        "hbm_bandwidth_bytes_per_s": 4.0e12,
        "scale_up_bandwidth_bytes_per_s": 400e9,
        "scale_up_domain_size": 16,
        "scale_out_bandwidth_bytes_per_s": 25e9,
        "scale_up_latency_s": 1e-6,
        "scale_out_latency_s": 5e-6,
        "latency_source": "made up for the tests",
        "source": "made up for the tests",
        "source_date": "2026-01",
    }
    fields.update(overrides)
    return fields


@pytest.fixture
def private_registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, Chip]:
    """A copy of the chip registry, so add_chip in one test cannot leak into another."""
    registry = dict(hardware._CHIPS)
    monkeypatch.setattr(hardware, "_CHIPS", registry)
    return registry


# ---- presets ------------------------------------------------------------------------------
def test_every_preset_from_the_reference_table_is_listed() -> None:
    assert set(EXPECTED_PRESETS) <= set(list_chips())
    assert set(EXPECTED_PRESETS) <= set(hardware.PRESET_NAMES)


@pytest.mark.parametrize("name", EXPECTED_PRESETS)
def test_preset_records_source_date_and_a_bf16_peak(name: str) -> None:
    chip = get_chip(name)
    assert chip.name == name
    assert chip.source and chip.source_date
    assert chip.peak("bf16") > 0
    # Integer peaks are twice the bf16 peak on every chip in the reference table.
    assert chip.peak("int8") == pytest.approx(2 * chip.peak("bf16"), rel=1e-3)


def test_todays_chips_are_listed() -> None:
    assert {"GB300-NVL72", "TPU7x", "MI355X"} <= set(hardware.PRESET_NAMES)


# Datasheet figures (reference.md hardware table): dense bf16 FLOP/s, HBM bytes/s.
@pytest.mark.parametrize(
    ("name", "bf16", "bandwidth"),
    [
        ("A100", 3.12e14, 2.039e12),
        ("H100", 9.89e14, 3.35e12),
        ("H200", 9.89e14, 4.8e12),
        ("B200", 2.25e15, 8.0e12),
        ("TPU-v5e", 1.97e14, 8.2e11),
        # Google Cloud's TPU pages (issue 42: not the scaling book's rounded 2.8e12, 9.2e14
        # and 1.6e12; v6e's C/W is then 560, not 575).
        ("TPU-v5p", 4.59e14, 2.765e12),
        ("TPU-v6e", 9.18e14, 1.638e12),
    ],
)
def test_preset_peaks_are_the_dense_datasheet_numbers(
    name: str, bf16: float, bandwidth: float
) -> None:
    chip = get_chip(name)
    if name == "TPU-v6e":
        assert round(chip.critical_intensity()) == 560
    assert chip.peak("bf16") == pytest.approx(bf16, rel=1e-9)
    assert chip.hbm_bandwidth_bytes_per_s == pytest.approx(bandwidth, rel=1e-9)


def test_peak_defaults_to_bf16() -> None:
    chip = get_chip("H100")
    assert chip.peak() == chip.peak("bf16")
    assert chip.critical_intensity() == chip.critical_intensity("bf16")


def test_critical_intensity_is_peak_over_bandwidth() -> None:
    chip = get_chip("H200")
    assert chip.critical_intensity("fp8") == pytest.approx(1.979e15 / 4.8e12, rel=1e-12)


def test_memory_floor_and_link_ratio() -> None:
    chip = get_chip("H100")
    assert chip.memory_floor_s == pytest.approx(80e9 / 3.35e12, rel=1e-12)
    # NVLink4 450 GB/s vs one 400 Gb/s NIC (50 GB/s): 9x (reference.md).
    assert chip.scale_up_to_scale_out_ratio == pytest.approx(9.0, rel=1e-12)


def test_chip_objects_are_frozen() -> None:
    chip = get_chip("H100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        chip.hbm_bytes = 1.0  # type: ignore[misc]


def test_get_chip_passes_a_chip_through() -> None:
    chip = Chip(**chip_fields())  # type: ignore[arg-type]
    assert get_chip(chip) is chip


# ---- bad input ----------------------------------------------------------------------------
def test_unknown_chip_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown chip 'H1000'") as info:
        get_chip("H1000")
    for name in EXPECTED_PRESETS:
        assert name in str(info.value)


@pytest.mark.parametrize("bad", [100, None, 3.5, ["H100"]])
def test_chip_name_of_the_wrong_type_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="chip must be a string"):
        get_chip(bad)  # type: ignore[arg-type]


def test_dtype_the_chip_lacks_is_rejected_with_the_ones_it_has() -> None:
    a100 = get_chip("A100")  # Ampere has no fp8 tensor cores
    with pytest.raises(ValueError, match="fp8") as info:
        a100.peak("fp8")
    assert "bf16" in str(info.value) and "int8" in str(info.value)
    with pytest.raises(ValueError, match="fp8"):
        a100.critical_intensity("fp8")


def test_tpu_has_no_fp16_entry() -> None:
    with pytest.raises(ValueError, match="known: bf16, int8"):
        get_chip("TPU-v5e").peak("fp16")


@pytest.mark.parametrize(
    "field",
    [
        "hbm_bytes",
        "hbm_bandwidth_bytes_per_s",
        "scale_up_bandwidth_bytes_per_s",
        "scale_out_bandwidth_bytes_per_s",
    ],
)
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_chip_rejects_non_positive_sizes(field: str, bad: float) -> None:
    with pytest.raises(ValueError, match=field):
        Chip(**chip_fields(**{field: bad}))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0.0, -2e14])
def test_chip_rejects_non_positive_peak(bad: float) -> None:
    with pytest.raises(ValueError, match=r"peak_flop_per_s\['bf16'\]"):
        Chip(**chip_fields(peak_flop_per_s={"bf16": bad}))  # type: ignore[arg-type]


def test_chip_needs_at_least_one_dtype() -> None:
    with pytest.raises(ValueError, match="at least one dtype"):
        Chip(**chip_fields(peak_flop_per_s={}))  # type: ignore[arg-type]


@pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (-8, ValueError), (8.0, TypeError)])
def test_domain_size_must_be_a_positive_integer(bad: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="scale_up_domain_size"):
        Chip(**chip_fields(scale_up_domain_size=bad))  # type: ignore[arg-type]


def test_chip_rejects_a_string_where_a_number_belongs() -> None:
    with pytest.raises(TypeError, match="hbm_bytes"):
        Chip(**chip_fields(hbm_bytes="80e9"))  # type: ignore[arg-type]


# ---- custom chips -------------------------------------------------------------------------
def test_load_chips_reads_a_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "chips.toml"
    path.write_text(CUSTOM_TOML)
    chips = load_chips(path)
    assert list(chips) == ["Toy-1"]
    toy = chips["Toy-1"]
    assert toy.peak("int8") == 2.0e15
    assert toy.scale_up_domain_size == 16
    assert toy.critical_intensity("bf16") == pytest.approx(250.0, rel=1e-12)  # 1e15 / 4e12


def test_load_chips_accepts_a_string_path(tmp_path: Path) -> None:
    path = tmp_path / "chips.toml"
    path.write_text(CUSTOM_TOML)
    assert list(load_chips(str(path))) == ["Toy-1"]


def test_load_chips_names_missing_fields(tmp_path: Path) -> None:
    path = tmp_path / "chips.toml"
    path.write_text(CUSTOM_TOML.replace("hbm_bytes = 64e9\n", ""))
    with pytest.raises(ValueError, match="'Toy-1' is missing hbm_bytes"):
        load_chips(path)


def test_load_chips_names_unknown_fields(tmp_path: Path) -> None:
    path = tmp_path / "chips.toml"
    path.write_text(CUSTOM_TOML.replace("hbm_bytes = 64e9", "hbm_bytes = 64e9\nhbm_gb = 64"))
    with pytest.raises(ValueError, match=r"unknown fields \['hbm_gb'\]"):
        load_chips(path)


def test_load_chips_validates_values(tmp_path: Path) -> None:
    path = tmp_path / "chips.toml"
    path.write_text(CUSTOM_TOML.replace("hbm_bytes = 64e9", "hbm_bytes = -64e9"))
    with pytest.raises(
        ValueError, match=r"chips.toml.: Chip Toy-1: hbm_bytes must be finite and >= 1e\+06"
    ):
        load_chips(path)


def test_add_chip_makes_it_available_by_name(private_registry: dict[str, Chip]) -> None:
    toy = Chip(**chip_fields())  # type: ignore[arg-type]
    assert "Toy-1" not in list_chips()
    add_chip(toy)
    assert get_chip("Toy-1") is toy
    assert list_chips()[-1] == "Toy-1"
    assert "Toy-1" not in hardware.PRESET_NAMES
    # Functions that take a chip name see it too.
    from llmmath.core import roofline

    assert roofline.critical_batch("Toy-1") == pytest.approx(250.0, rel=1e-12)


def test_add_chip_rejects_anything_but_a_chip(private_registry: dict[str, Chip]) -> None:
    with pytest.raises(TypeError, match="got dict"):
        add_chip(chip_fields())  # type: ignore[arg-type]


def test_hardware_file_environment_variable_adds_chips(tmp_path: Path) -> None:
    path = tmp_path / "extra.toml"
    path.write_text(CUSTOM_TOML)
    script = (
        "import json, llmmath; from llmmath.core import hardware, roofline;"
        "print(json.dumps({'chips': llmmath.list_chips(),"
        " 'presets': list(hardware.PRESET_NAMES),"
        " 'critical': roofline.critical_batch('Toy-1')}))"
    )
    env = {**os.environ, hardware.EXTRA_HARDWARE_ENV: str(path)}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    report = json.loads(result.stdout)
    assert report["chips"][-1] == "Toy-1"
    assert set(EXPECTED_PRESETS) <= set(report["chips"])
    assert "Toy-1" not in report["presets"]
    assert report["critical"] == pytest.approx(250.0, rel=1e-12)


def test_a_broken_hardware_file_fails_at_import(tmp_path: Path) -> None:
    path = tmp_path / "extra.toml"
    path.write_text(CUSTOM_TOML.replace("scale_up_domain_size = 16", "scale_up_domain_size = 0"))
    env = {**os.environ, hardware.EXTRA_HARDWARE_ENV: str(path)}
    result = subprocess.run(
        [sys.executable, "-c", "import llmmath"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "scale_up_domain_size must be >= 1" in result.stderr


# ---- today's chips (#43): each published figure with its source and tolerance ----------------
#: (preset, dense bf16, a low-precision peak, HBM bytes, HBM bytes/s, scale-up domain, source)
TODAYS_CHIPS = [
    ("GB300-NVL72", 2.5e15, ("nvfp4", 1.5e16), 288e9, 8.0e12, 72,
     "NVIDIA GB300 NVL72 (GTC 2025): rack BF16 360 PF and FP4 1,080 PF dense / 72, 576 TB/s / 72"),
    ("TPU7x", 2.307e15, ("fp8", 4.614e15), 192e9, 7.37e12, 9216,
     "Google Cloud TPU7x (Ironwood) docs: 2307 / 4614 TFLOPs, 192 GiB, 9,216 chips a pod"),
    ("MI355X", 2.5166e15, ("mxfp4", 1.00664e16), 288e9, 8.0e12, 8,
     "AMD Instinct MI355X (2025-06): 2.5 PF BF16, 10.1 PF MXFP4 dense, 288 GB at 8 TB/s"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "bf16", "low", "hbm", "bandwidth", "domain", "source"), TODAYS_CHIPS
)
def test_todays_chips_hold_their_published_figures(
    name: str,
    bf16: float,
    low: tuple[str, float],
    hbm: float,
    bandwidth: float,
    domain: int,
    source: str,
) -> None:
    chip = get_chip(name)
    assert chip.peak("bf16") == pytest.approx(bf16, rel=1e-3), source
    assert chip.peak(low[0]) == pytest.approx(low[1], rel=1e-3), source
    assert chip.hbm_bytes == pytest.approx(hbm, rel=1e-9), source
    assert chip.hbm_bandwidth_bytes_per_s == pytest.approx(bandwidth, rel=1e-3), source
    assert chip.scale_up_domain_size == domain, source
    assert chip.source and chip.source_date >= "2025-03"


def test_todays_chips_sit_at_about_313_flop_per_byte() -> None:
    """Compute outgrew bandwidth again: H100's bf16 C/W is 295, B200's 281; GB300, TPU7x and
    MI355X all sit at 313 +- 1 (Ironwood's fp8 at twice that)."""
    ratios = [get_chip(n).critical_intensity("bf16") for n in ("GB300-NVL72", "TPU7x", "MI355X")]
    assert all(312 <= r <= 315 for r in ratios), ratios
    assert get_chip("H100").critical_intensity("bf16") < min(ratios)

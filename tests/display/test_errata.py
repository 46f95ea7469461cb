"""Issue 18's errata: each corrected claim in the lessons, pinned to the package.

A lesson's numbers are `{eval}` names set by its hidden cells; these tests run those cells
(figures and explorers stubbed out) and check the names against the package computed here
independently, and that the text uses the names rather than a typed number.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from llmmath import batching, get_chip, get_model, moe
from llmmath.core import capacity, hardware
from llmmath.core.deployment import Deployment

ROOT = Path(__file__).resolve().parents[2]


def text(page: str) -> str:
    return " ".join((ROOT / page).read_text().split())


# ---- the notation page's parameter convention and the capacity rule --------------------------
def test_notation_states_the_parameter_convention_with_the_packages_numbers() -> None:
    llama, small = get_model("Llama-3-70B"), get_model("Llama-3-8B")
    words = text("book/notation.md")
    assert f"{llama.matmul_params_per_token / 1e9:.2f} billion for Llama-3-70B" in words
    hold_ms = llama.weight_bytes("bf16") / 3.35e12 * 1e3
    read_ms = 2 * llama.matmul_params_per_token / 3.35e12 * 1e3
    assert f"({read_ms:.1f} ms against {hold_ms:.1f} ms" in words
    assert f"{1 - llama.matmul_params_per_token / llama.total_params:.1%}" == "1.5%"
    assert (
        f"({2 * small.matmul_params_per_token / 1e9:.1f} GB read, "
        f"{small.weight_bytes('bf16') / 1e9:.1f} GB held)" in words
    )
    assert round(100 * (1 - small.matmul_params_per_token / small.total_params)) == 7


def _exposed_bytes() -> dict[str, float]:
    """Each chip's driver-exposed capacity, as its comment in hardware.toml records it."""
    exposed: dict[str, float] = {}
    chip = ""
    for line in (ROOT / "src/llmmath/data/hardware.toml").read_text().splitlines():
        if line.startswith("["):
            chip = line.strip("[]")
        found = re.search(r"hbm_bytes = .*exposed: ([0-9,]+) MiB", line)
        if found:
            exposed[chip] = float(found.group(1).replace(",", "")) * 2**20
    return exposed


def test_capacity_rule_and_the_fits_answers_it_moves() -> None:
    exposed = _exposed_bytes()
    assert {"A100", "H100", "H200", "A100-40GB"} <= set(exposed)
    for name, exposed_bytes in exposed.items():  # the decimal reading is 5-8% under
        assert 1.05 < exposed_bytes / get_chip(name).hbm_bytes < 1.08, name
    lines = (ROOT / "src/llmmath/data/hardware.toml").read_text().splitlines()
    header = " ".join(" ".join(line.lstrip("# ") for line in lines).split())

    def at_exposed(name: str) -> hardware.Chip:
        return dataclasses.replace(get_chip(name), hbm_bytes=exposed[name])

    llama8 = Deployment("Llama-3-70B", "H100", 8)
    wider = Deployment("Llama-3-70B", at_exposed("H100"), 8)
    before, after = float(capacity.max_batch(llama8, 8192)), float(capacity.max_batch(wider, 8192))
    assert f"hold {after:.0f} rather than {before:.0f} sequences of 8,192" in header
    assert f"about {round(100 * (after / before - 1))}% more sequences" in text(
        "book/hardware_and_models.md"
    )
    with pytest.raises(batching.DoesNotFitError):
        Deployment("Llama-3-70B", "H200", 1)
    h200 = Deployment("Llama-3-70B", at_exposed("H200"), 1)
    assert f"room for {capacity.max_batch(h200, 2048):.0f} sequences of 2,048" in header
    assert f"{0.9 * exposed['H100'] / 1e9:.1f}e9 B on an H100" in header
    experts = float(moe.expert_bytes_per_gpu("DeepSeek-V3", 8, "fp8"))
    assert f"EP = 8 ({experts / 1e9:.1f}e9 B per GPU)" in header
    assert get_chip("H100").hbm_bytes < experts < exposed["H100"]

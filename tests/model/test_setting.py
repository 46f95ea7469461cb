"""A worked example's setting: one object, one line, the same step as the package's."""

from __future__ import annotations

import numpy as np
import pytest

from llmmath.core import serving
from llmmath.core.deployment import Deployment
from llmmath.core.placement import Layout
from llmmath.core.setting import Setting
from llmmath.display import pages

LLAMA = Deployment("Llama-3-70B", "H100", 8)


def test_step_is_decode_step_under_the_settings_rule() -> None:
    for overlap in ("perfect", "none"):
        tp8 = Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
        ours = Setting(tp8, 2048, overlap).step(np.array([1.0, 64.0]))
        theirs = serving.decode_step(tp8, np.array([1.0, 64.0]), 2048, overlap=overlap)
        np.testing.assert_array_equal(ours.time_s, theirs.time_s)
    # The two rules differ at batch 1 on TP8: the all-reduces are exposed in the serial one.
    tp8_floor = Setting(tp8, 2048).step(1).time_s
    assert float(Setting(tp8, 2048, "none").step(1).time_s) > 1.4 * float(tp8_floor)


def test_line_names_every_part_of_the_setting() -> None:
    line = Setting(LLAMA, 2048).describe()
    for part in (
        "Llama-3-70B",
        "8×H100",
        "no communication counted",
        "KV cache bf16",
        "attention bf16",
        "context 2,048 tokens",
        "floor",
        "$2.00",
    ):
        assert part in line, part
    ds = Deployment(
        "DeepSeek-V3",
        "H100",
        16,
        weight_dtype="fp8",
        compute_dtype="fp8",
        attention_dtype="bf16",
        layout=Layout(ep=16),
        flops_efficiency=0.5,
    )
    line = Setting(ds, 4096, "none").describe()
    for part in (
        "EP16",
        "all-to-alls",
        "counted",
        "weights fp8",
        "matmuls fp8",
        "attention bf16",
        "context 4,096",
        "serial estimate",
        "50% of peak FLOP/s",
    ):
        assert part in line, part
    assert "datasheet" not in line and "no communication" not in line


def test_a_what_if_says_the_weights_do_not_fit() -> None:
    alone = Deployment("Llama-3-70B", "H100", 1, allow_overflow=True)
    assert "a what-if: the weights do not fit" in Setting(alone, 0).describe()
    assert "what-if" not in Setting(LLAMA, 0).describe()


def test_communication_is_counted_only_with_a_layout_over_chips() -> None:
    assert not Setting(LLAMA, 0).communication_counted
    tp8 = Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
    assert Setting(tp8, 0).communication_counted
    one_chip = Deployment("Llama-3-8B", "H100", 1, layout=Layout())
    assert not Setting(one_chip, 0).communication_counted


def test_bad_settings_are_refused_naming_the_parameter() -> None:
    with pytest.raises(ValueError, match="overlap"):
        Setting(LLAMA, 2048, "some")
    with pytest.raises(ValueError, match="context"):
        Setting(LLAMA, -1)
    with pytest.raises(ValueError, match="context"):
        Setting(LLAMA, 10**9)  # past the model's longest context
    with pytest.raises(TypeError, match="deployment"):
        Setting("Llama-3-70B", 2048)  # type: ignore[arg-type]


def test_page_line_is_the_objects_line_with_dollars_escaped() -> None:
    one, two = Setting(LLAMA, 2048), Setting(LLAMA, 2048, "none")
    shown = pages.setting(one, two).data
    assert shown.count("> **Setting.**") == 2
    assert one.describe().replace("$", "\\$") in shown
    assert "\\$2.00" in shown and " $2" not in shown
    with pytest.raises(ValueError, match="at least one"):
        pages.setting()
    with pytest.raises(ValueError, match="Setting objects"):
        pages.setting(LLAMA)  # type: ignore[arg-type]

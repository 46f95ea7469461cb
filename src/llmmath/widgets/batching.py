"""The batching chapter's explorer: model, chip and count, batch, context and efficiency."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ..batching import example_price, list_example_prices
from ..hardware import list_chips
from ..models import get_model, list_models
from ..plots.batching import BatchingExplorer
from .common import nested_stacks, static_mode

#: The static book's settings: 3 x 6 x 3 x 2 = 108 frames (CONTRIBUTING: under ~150).
STATIC_SETUPS: dict[str, dict[str, Any]] = {
    "Llama-3-70B on 8×H100": {"model": "Llama-3-70B", "chip": "H100", "n_chips": 8},
    "Llama-3-8B on 1×H100": {"model": "Llama-3-8B", "chip": "H100", "n_chips": 1},
    "Llama-3-70B on 16×TPU-v5e": {"model": "Llama-3-70B", "chip": "TPU-v5e", "n_chips": 16},
}
STATIC_BATCHES = (1, 4, 16, 64, 256, 1024)
STATIC_CONTEXTS = (256, 2048, 8192)
#: (label, flops_efficiency, bandwidth_efficiency). The second is an example below the best
#: hand-tuned kernels (~67% of peak FLOP/s, ~90% of HBM bandwidth; reference.md).
STATIC_EFFICIENCIES = (("datasheet peaks", 1.0, 1.0), ("50% FLOPs, 80% bandwidth", 0.5, 0.8))


def static_frame_count() -> int:
    return (
        len(STATIC_SETUPS) * len(STATIC_BATCHES) * len(STATIC_CONTEXTS) * len(STATIC_EFFICIENCIES)
    )


def batching_explorer() -> w.Widget:
    """Cost per token and latency against batch for a model on some chips."""
    return static_batching_explorer() if static_mode() else live_batching_explorer()


def live_batching_explorer(model: str = "Llama-3-70B", chip: str = "H100") -> w.VBox:
    """Every control redraws through the kernel, for any value."""
    explorer = BatchingExplorer()
    model_box = w.Dropdown(options=list_models(), value=model, description="model")
    chip_box = w.Dropdown(options=list_chips(), value=chip, description="chip")
    n_chips = w.BoundedIntText(value=8, min=1, max=4096, description="chips")
    batch = w.FloatLogSlider(
        value=1, base=2, min=0, max=12, step=0.25, description="batch", readout_format=".0f"
    )
    context = w.IntSlider(
        value=2048, min=0, max=get_model(model).max_context, step=128, description="context"
    )
    flops_eff = w.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="FLOPs eff.")
    bw_eff = w.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="HBM eff.")
    price = w.BoundedFloatText(
        value=example_price(chip).usd_per_chip_hour,
        min=0.01,
        max=1000.0,
        step=0.1,
        description="$/chip-h",
    )
    image = w.Image(format="png")

    def redraw(_change: object = None) -> None:
        explorer.update(
            model_box.value,
            chip_box.value,
            n_chips.value,
            round(batch.value),
            context.value,
            flops_eff.value,
            bw_eff.value,
            price.value,
        )
        image.value = explorer.png()

    def new_model(change: dict[str, Any]) -> None:
        context.max = get_model(change["new"]).max_context  # clamps the value if need be
        redraw()

    def new_chip(change: dict[str, Any]) -> None:
        if change["new"] in list_example_prices():
            price.value = example_price(change["new"]).usd_per_chip_hour  # redraws
        redraw()

    model_box.observe(new_model, names="value")
    chip_box.observe(new_chip, names="value")
    for control in (n_chips, batch, context, flops_eff, bw_eff, price):
        control.observe(redraw, names="value")
    redraw()
    note = w.HTML(
        "<small>Example prices (llmmath/data/chip_prices.toml); chips without one keep the "
        "last price. Every time is a floor.</small>"
    )
    box = w.VBox(
        [
            w.HBox([model_box, chip_box, n_chips]),
            w.HBox([batch, context]),
            w.HBox([flops_eff, bw_eff, price]),
            image,
            note,
        ]
    )
    box.redraw = redraw  # the benchmark times this
    return box


def static_batching_explorer() -> w.VBox:
    """Precomputed frames over setup x batch x context x efficiency, switched client-side."""
    explorer = BatchingExplorer()
    efficiencies = {label: (f, b) for label, f, b in STATIC_EFFICIENCIES}

    def frame(setup: str, context: int, efficiency: str, batch: int) -> w.Image:
        flops_eff, bw_eff = efficiencies[efficiency]
        explorer.update(
            **STATIC_SETUPS[setup],
            batch=batch,
            context=context,
            flops_efficiency=flops_eff,
            bandwidth_efficiency=bw_eff,
        )
        return w.Image(value=explorer.png(), format="png")

    setup = w.Dropdown(
        options=list(STATIC_SETUPS), index=0, description="setup", layout=w.Layout(width="22em")
    )
    batch = w.SelectionSlider(options=list(STATIC_BATCHES), index=0, description="batch")
    context = w.ToggleButtons(options=list(STATIC_CONTEXTS), index=1, description="context")
    efficiency = w.ToggleButtons(
        options=list(efficiencies),
        index=0,
        description="efficiency",
        style={"button_width": "13em"},
    )
    # Batch innermost: its frames share one scene, so each is a quick blit of two markers.
    stacks = nested_stacks(
        [list(STATIC_SETUPS), list(STATIC_CONTEXTS), list(efficiencies), list(STATIC_BATCHES)],
        frame,
        [setup, context, efficiency, batch],
    )
    prices = ", ".join(
        f"${example_price(chip).usd_per_chip_hour:.2f} per {chip}-hour"
        for chip in dict.fromkeys(setting["chip"] for setting in STATIC_SETUPS.values())
    )
    caption = w.HTML(
        f"<small>Precomputed frames at example prices ({prices}). In JupyterLab the controls "
        "redraw live for any model, chip, count, efficiency and price.</small>"
    )
    return w.VBox([w.HBox([setup, batch]), context, efficiency, stacks, caption])

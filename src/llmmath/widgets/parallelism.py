"""The parallelism chapter's explorer: a layout of DP, TP, PP and EP, microbatches and how
activations are kept, against memory per GPU and the step-time breakdown."""

from __future__ import annotations

import ipywidgets as w

from ..hardware import list_chips
from ..models import list_models
from ..parallelism import ACTIVATION_MODES, Layout
from ..plots.parallelism import MICROBATCHES, ParallelismExplorer
from .common import nested_stacks, static_mode

STATIC_MODEL, STATIC_CHIP, STATIC_GPUS = "Llama-3-70B", "H100", 1024
STATIC_BATCH_TOKENS = 4 * 2**20
#: The static book's layouts of 1,024 GPUs, from pure data parallelism to a deep pipeline.
STATIC_LAYOUTS = (
    Layout(dp=1024),
    Layout(dp=1024, zero_stage=3),
    Layout(dp=128, tp=8, zero_stage=1),
    Layout(dp=64, tp=16, zero_stage=1),
    Layout(dp=32, tp=8, pp=4, zero_stage=1),
    Layout(dp=16, tp=8, pp=8, zero_stage=1),
)
BATCH_TOKENS = tuple(2**k for k in range(18, 27))  # 256K ... 64M tokens per step
DEGREES = tuple(2**k for k in range(11))  # 1 ... 1024


def parallelism_explorer(model: str = STATIC_MODEL) -> w.Widget:
    """Layout, microbatches and activation memory against memory per GPU and step time."""
    return static_parallelism_explorer() if static_mode() else live_parallelism_explorer(model)


def live_parallelism_explorer(model: str = STATIC_MODEL) -> w.VBox:
    """Every control redraws through the kernel; a layout that does not fit the model, the
    cluster or the chip says why in the line under the controls."""
    explorer = ParallelismExplorer()
    model_box = w.Dropdown(options=list_models(), value=model, description="model")
    chip = w.Dropdown(options=list_chips(), value=STATIC_CHIP, description="chip")
    dp, tp, pp, ep = (
        w.Dropdown(
            options=DEGREES,
            value=value,
            description=name,
            style={"description_width": "2em"},
            layout=w.Layout(width="9em"),
        )
        for name, value in (("DP", 128), ("TP", 8), ("PP", 1), ("EP", 1))
    )
    zero = w.ToggleButtons(options=[0, 1, 2, 3], value=1, description="ZeRO")
    zero.style.button_width = "3em"
    micro = w.IntSlider(value=8, min=1, max=128, description="microbatches")
    activations = w.ToggleButtons(
        options=ACTIVATION_MODES, value="stored", description="activations"
    )
    batch = w.SelectionSlider(
        options=[(f"{t / 2**20:g}M", t) for t in BATCH_TOKENS],
        value=STATIC_BATCH_TOKENS,
        description="tokens/step",
    )
    efficiency = w.FloatSlider(value=1.0, min=0.1, max=1.0, step=0.05, description="of peak")
    status = w.HTML()
    image = w.Image(format="png")

    def redraw(_change: object = None) -> None:
        try:
            layout = Layout(dp.value, tp.value, pp.value, ep.value, zero_stage=zero.value)
            explorer.update(
                model_box.value,
                chip.value,
                layout,
                batch.value,
                micro.value,
                activations.value,
                efficiency.value,
            )
        except ValueError as error:  # the package's message names the degree to change
            status.value = f"<span style='color:#b2182b'>{error}</span>"
            return
        status.value = f"<small>{layout}: {layout.n_gpus:,} GPUs.</small>"
        image.value = explorer.png()

    controls = (model_box, chip, dp, tp, pp, ep, zero, micro, activations, batch, efficiency)
    for control in controls:
        control.observe(redraw, names="value")
    redraw()
    box = w.VBox(
        [
            w.HBox([model_box, chip]),
            w.HBox([dp, tp, pp, ep]),
            w.HBox([zero, activations]),
            w.HBox([micro, batch, efficiency]),
            status,
            image,
        ]
    )
    box.redraw = redraw  # the benchmark times this
    return box


def static_parallelism_explorer() -> w.VBox:
    """Precomputed frames over layout x microbatches x activations, switched client-side."""
    explorer = ParallelismExplorer()

    def frame(layout: Layout, microbatches: int, activations: str) -> w.Image:
        explorer.update(
            STATIC_MODEL, STATIC_CHIP, layout, STATIC_BATCH_TOKENS, microbatches, activations
        )
        return w.Image(value=explorer.png(), format="png")

    layout = w.Dropdown(
        options=[(str(layout), i) for i, layout in enumerate(STATIC_LAYOUTS)],
        index=2,
        description="layout",
    )
    wide = {"description_width": "initial"}
    micro = w.SelectionSlider(
        options=list(MICROBATCHES), index=3, description="microbatches", style=wide
    )
    activations = w.ToggleButtons(
        options=ACTIVATION_MODES, index=0, description="activations", style=wide
    )
    stacks = nested_stacks(
        [list(STATIC_LAYOUTS), list(MICROBATCHES), list(ACTIVATION_MODES)],
        frame,
        [layout, micro, activations],
    )
    caption = w.HTML(
        f"<small>{STATIC_MODEL} on {STATIC_GPUS:,} {STATIC_CHIP}, "
        f"{STATIC_BATCH_TOKENS / 2**20:g}M tokens per step, floors at the datasheet peak; "
        "precomputed frames.</small>"
    )
    return w.VBox([w.HBox([layout, activations]), micro, stacks, caption])

"""The roofline chapter's explorer: chip, weight format and batch."""

from __future__ import annotations

import ipywidgets as w

from ..hardware import list_chips
from ..models import list_models
from ..plots.roofline import BATCHES, RooflineExplorer
from .common import nested_stacks, static_mode

STATIC_CHIPS = ("A100", "H100", "B200", "TPU-v5e")
WEIGHT_DTYPES = ("bf16", "int8")


def roofline_explorer(model: str = "Llama-3-70B") -> w.Widget:
    """Chip, weight format and batch against the roofline and the decode-step time."""
    return static_roofline_explorer(model) if static_mode() else live_roofline_explorer(model)


def live_roofline_explorer(model: str = "Llama-3-70B") -> w.VBox:
    """Every control redraws through the kernel, for any value."""
    explorer = RooflineExplorer()
    chip = w.Dropdown(options=list_chips(), value="H100", description="chip")
    model_box = w.Dropdown(options=list_models(), value=model, description="model")
    weights = w.ToggleButtons(options=WEIGHT_DTYPES, value="bf16", description="weights")
    batch = w.IntSlider(value=1, min=1, max=4096, description="batch", continuous_update=True)
    image = w.Image(format="png")

    def redraw(_change: object = None) -> None:
        explorer.update(chip.value, model_box.value, batch.value, "bf16", weights.value)
        image.value = explorer.png()

    for control in (chip, model_box, weights, batch):
        control.observe(redraw, names="value")
    redraw()
    box = w.VBox([w.HBox([chip, model_box]), w.HBox([weights, batch]), image])
    box.redraw = redraw  # the benchmark times this
    return box


def static_roofline_explorer(model: str = "Llama-3-70B") -> w.VBox:
    """Precomputed frames over chip x weight format x batch, switched client-side."""
    explorer = RooflineExplorer()

    def frame(chip: str, weights: str, batch: float) -> w.Image:
        explorer.update(chip, model, batch, "bf16", weights)
        return w.Image(value=explorer.png(), format="png")

    chip = w.Dropdown(options=list(STATIC_CHIPS), index=1, description="chip")
    weights = w.ToggleButtons(options=WEIGHT_DTYPES, index=0, description="weights")
    batch = w.SelectionSlider(options=[int(b) for b in BATCHES], index=0, description="batch")
    stacks = nested_stacks(
        [list(STATIC_CHIPS), list(WEIGHT_DTYPES), list(BATCHES)],
        frame,
        [chip, weights, batch],
    )
    caption = w.HTML(f"<small>{model}, one decode step, bf16 FLOPs; precomputed frames.</small>")
    return w.VBox([w.HBox([chip, weights]), batch, stacks, caption])

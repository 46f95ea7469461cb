"""Controls for the lessons, in two flavours that share the plotting code in :mod:`plots`.

* ``live``: with a kernel (JupyterLab), every change re-runs the model and redraws, for any
  value of the controls.
* ``static``: for the built book, where no kernel runs. Every frame is rendered at build time
  into an ``ipywidgets.Image`` inside nested ``Stack`` widgets, and each control is
  ``jslink``-ed to the ``selected_index`` of the Stacks it drives, so moving it switches
  frames in the browser with no Python behind it.

``roofline_explorer()`` picks the flavour: static while the book is being built (the
Makefile sets ``LLMMATH_STATIC_WIDGETS=1``), live otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as w

from .hardware import list_chips
from .models import list_models
from .plots import BATCHES, RooflineExplorer

STATIC_ENV = "LLMMATH_STATIC_WIDGETS"
STATIC_CHIPS = ("A100", "H100", "B200", "TPU-v5e")
WEIGHT_DTYPES = ("bf16", "int8")


def static_mode() -> bool:
    """True while the book is built: controls must work without a kernel."""
    return os.environ.get(STATIC_ENV, "") == "1"


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


def nested_stacks(
    axes: Sequence[Sequence[Any]],
    make_leaf: Callable[..., w.Widget],
    controls: Sequence[w.Widget],
) -> w.Stack:
    """A Stack per level of ``axes``; ``controls[i]`` drives every Stack at level ``i``.

    Each control must have an ``index`` trait (Dropdown, ToggleButtons, SelectionSlider)
    whose positions match ``axes[i]``; links run in the browser via ``jslink``.
    """

    def build(level: int, chosen: tuple[Any, ...]) -> w.Widget:
        if level == len(axes):
            return make_leaf(*chosen)
        children = [build(level + 1, (*chosen, value)) for value in axes[level]]
        stack = w.Stack(children=children, selected_index=int(controls[level].index))
        w.jslink((controls[level], "index"), (stack, "selected_index"))
        return stack

    root = build(0, ())
    assert isinstance(root, w.Stack)
    return root

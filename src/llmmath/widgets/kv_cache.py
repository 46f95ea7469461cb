"""The KV-cache chapter's explorers: the capacity and bandwidth walls (model, chips, dtype,
batch, context) and the "which tier?" map (model, chips, dtype, prefix, hold time, reuses)."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ..models import get_model, list_models
from ..plots.kv_cache import KVCacheExplorer, TierExplorer
from .common import nested_stacks, static_mode

#: (model, H100s) of the static book.
STATIC_SETUPS: dict[str, tuple[str, int]] = {
    "Llama-3-70B on 8×H100": ("Llama-3-70B", 8),
    "Llama-3.1-405B on 16×H100": ("Llama-3.1-405B", 16),
    "DeepSeek-V3 on 16×H100": ("DeepSeek-V3", 16),
}
STATIC_DTYPES = ("bf16", "fp8")
STATIC_BATCHES = (1, 16, 64, 256)
STATIC_CONTEXTS = (1024, 4096, 8192, 32768, 131072)
#: The tier explorer: setup x prefix x reuses x hold time.
STATIC_PREFIXES = (1024, 8192, 65536)
STATIC_REUSES = (1, 10, 100)
STATIC_HOLDS_S = (1, 60, 600, 3600, 86400)


def static_frame_count() -> int:
    """3 x 2 x 4 x 5 = 120 frames (CONTRIBUTING: under ~150)."""
    return len(STATIC_SETUPS) * len(STATIC_DTYPES) * len(STATIC_BATCHES) * len(STATIC_CONTEXTS)


def static_tier_frame_count() -> int:
    """3 x 3 x 3 x 5 = 135 frames, in bf16."""
    return len(STATIC_SETUPS) * len(STATIC_PREFIXES) * len(STATIC_REUSES) * len(STATIC_HOLDS_S)


def kv_cache_explorer() -> w.Widget:
    """The capacity wall and the step time against context."""
    return static_kv_cache_explorer() if static_mode() else live_kv_cache_explorer()


def tier_explorer() -> w.Widget:
    """Which tier should a cached prefix live in?"""
    return static_tier_explorer() if static_mode() else live_tier_explorer()


def _model_controls(model: str) -> tuple[w.Dropdown, w.BoundedIntText, w.ToggleButtons]:
    return (
        w.Dropdown(options=list_models(), value=model, description="model"),
        w.BoundedIntText(value=8, min=1, max=4096, description="H100s"),
        w.ToggleButtons(options=list(STATIC_DTYPES), value="bf16", description="dtype"),
    )


def live_kv_cache_explorer(model: str = "Llama-3-70B") -> w.VBox:
    """Every control redraws through the kernel, for any value."""
    explorer = KVCacheExplorer()
    model_box, n_chips, dtype = _model_controls(model)
    batch = w.FloatLogSlider(
        value=16, base=2, min=0, max=12, step=0.5, description="batch", readout_format=".0f"
    )
    context = w.IntSlider(
        value=4096, min=128, max=get_model(model).max_context, step=128, description="context"
    )
    image = w.Image(format="png")

    def redraw(_change: object = None) -> None:
        explorer.update(
            model_box.value, n_chips.value, dtype.value, round(batch.value), context.value
        )
        image.value = explorer.png()

    def new_model(change: dict[str, Any]) -> None:
        context.max = get_model(change["new"]).max_context
        redraw()

    model_box.observe(new_model, names="value")
    for control in (n_chips, dtype, batch, context):
        control.observe(redraw, names="value")
    redraw()
    note = w.HTML("<small>Weights and KV cache in the chosen dtype; every time is a floor.</small>")
    box = w.VBox([w.HBox([model_box, n_chips]), dtype, w.HBox([batch, context]), image, note])
    box.redraw = redraw
    return box


def static_kv_cache_explorer() -> w.VBox:
    """Precomputed frames over setup x dtype x batch x context, switched client-side."""
    explorer = KVCacheExplorer()

    def frame(setup: str, dtype: str, batch: int, context: int) -> w.Image:
        model, n = STATIC_SETUPS[setup]
        explorer.update(model, n, dtype, batch, context)
        return w.Image(value=explorer.png(), format="png")

    setup = w.Dropdown(
        options=list(STATIC_SETUPS), index=0, description="setup", layout=w.Layout(width="24em")
    )
    dtype = w.ToggleButtons(options=list(STATIC_DTYPES), index=0, description="dtype")
    batch = w.ToggleButtons(options=list(STATIC_BATCHES), index=1, description="batch")
    context = w.SelectionSlider(options=list(STATIC_CONTEXTS), index=1, description="context")
    # Context innermost: its frames share one scene, so each is a quick blit of the markers.
    stacks = nested_stacks(
        [list(STATIC_SETUPS), list(STATIC_DTYPES), list(STATIC_BATCHES), list(STATIC_CONTEXTS)],
        frame,
        [setup, dtype, batch, context],
    )
    caption = w.HTML(
        "<small>Precomputed frames (weights and KV cache in the chosen dtype). In JupyterLab "
        "the controls redraw live for any model, number of chips, batch and context.</small>"
    )
    return w.VBox([w.HBox([setup, dtype]), w.HBox([batch, context]), stacks, caption])


def live_tier_explorer(model: str = "Llama-3-70B") -> w.VBox:
    explorer = TierExplorer()
    model_box, n_chips, dtype = _model_controls(model)
    prefix = w.IntSlider(
        value=8192, min=128, max=get_model(model).max_context, step=128, description="prefix"
    )
    hold = w.FloatLogSlider(value=60, base=10, min=-1, max=7, step=0.1, description="hold (s)")
    reuses = w.FloatLogSlider(value=10, base=10, min=-1, max=3, step=0.1, description="reuses")
    image = w.Image(format="png")

    def redraw(_change: object = None) -> None:
        explorer.update(
            model_box.value, n_chips.value, dtype.value, prefix.value, hold.value, reuses.value
        )
        image.value = explorer.png()

    def new_model(change: dict[str, Any]) -> None:
        prefix.max = get_model(change["new"]).max_context
        redraw()

    model_box.observe(new_model, names="value")
    for control in (n_chips, dtype, prefix, hold, reuses):
        control.observe(redraw, names="value")
    redraw()
    box = w.VBox([w.HBox([model_box, n_chips]), dtype, w.HBox([prefix, reuses]), hold, image])
    box.redraw = redraw
    return box


def static_tier_explorer() -> w.VBox:
    """Precomputed frames over setup x prefix x reuses x hold time (bf16)."""
    explorer = TierExplorer()

    def frame(setup: str, prefix: int, reuses: int, hold: int) -> w.Image:
        model, n = STATIC_SETUPS[setup]
        explorer.update(model, n, "bf16", prefix, float(hold), float(reuses))
        return w.Image(value=explorer.png(), format="png")

    setup = w.Dropdown(
        options=list(STATIC_SETUPS), index=0, description="setup", layout=w.Layout(width="24em")
    )
    prefix = w.ToggleButtons(options=list(STATIC_PREFIXES), index=1, description="prefix")
    reuses = w.ToggleButtons(options=list(STATIC_REUSES), index=1, description="reuses")
    hold = w.SelectionSlider(options=list(STATIC_HOLDS_S), index=1, description="hold (s)")
    stacks = nested_stacks(
        [list(STATIC_SETUPS), list(STATIC_PREFIXES), list(STATIC_REUSES), list(STATIC_HOLDS_S)],
        frame,
        [setup, prefix, reuses, hold],
    )
    caption = w.HTML(
        "<small>Precomputed frames in bf16 at the example prices of data/memory_tiers.toml. "
        "In JupyterLab every control redraws live, dtype and chips included.</small>"
    )
    return w.VBox([w.HBox([setup, prefix]), w.HBox([reuses, hold]), stacks, caption])

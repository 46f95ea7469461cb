"""The mixture-of-experts chapter's explorer: domain, experts, top-k, EP width and batch."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from .. import moe
from ..models import get_model, list_models
from ..plots.moe import BATCHES, MoEExplorer
from .common import nested_stacks, static_mode

STATIC_DOMAINS = ("HGX H100 (8 GPUs)", "GB200 NVL72 (72 GPUs)", "TPU v5e pod (256 chips)")
STATIC_EXPERTS = (8, 64, 256)
STATIC_TOP_K = (1, 2, 8)
SHAPE_MODEL = "DeepSeek-V3"  # the layer shape (D, expert width, shared expert) being re-cut


def static_frame_count() -> int:
    """Frames the static explorer renders: domains x experts x top-k x batches."""
    return len(STATIC_DOMAINS) * len(STATIC_EXPERTS) * len(STATIC_TOP_K) * len(BATCHES)


def moe_explorer(model: str = SHAPE_MODEL) -> w.Widget:
    """Rack, experts, top-k, EP width and batch against one MoE layer's three clocks."""
    return static_moe_explorer(model) if static_mode() else live_moe_explorer(model)


def live_moe_explorer(model: str = SHAPE_MODEL) -> w.VBox:
    """Every control redraws through the kernel, for any value."""
    explorer = MoEExplorer()
    spec = get_model(model)
    moe_models = [name for name in list_models() if get_model(name).is_moe]
    model_box = w.Dropdown(options=moe_models, value=spec.name, description="shape of")
    domain = w.Dropdown(options=moe.list_domains(), value=STATIC_DOMAINS[1], description="domain")
    experts = w.IntSlider(value=spec.n_experts, min=1, max=512, description="experts E")
    top_k = w.IntSlider(value=spec.experts_per_token, min=1, max=32, description="top-k")
    width = w.SelectionSlider(options=moe.ep_widths(spec.n_experts), description="EP width G")
    width.value = moe.max_ep_width(spec.n_experts, domain.value)
    batch = w.FloatLogSlider(
        value=4096, base=2, min=0, max=17, step=0.25, description="batch B", readout_format=",.0f"
    )
    image = w.Image(format="png")
    state = {"busy": False}

    def redraw(_change: object = None) -> None:
        if state["busy"]:
            return
        explorer.update(
            domain.value, experts.value, top_k.value, batch.value, width.value, model_box.value
        )
        image.value = explorer.png()

    def reshape(_change: object = None, keep_width: bool = True) -> None:
        """Keep k <= E and G a divisor of E, then redraw once."""
        state["busy"] = True
        try:
            top_k.max = max(1, min(32, experts.value))
            previous = width.value
            width.options = moe.ep_widths(experts.value)
            fallback = moe.max_ep_width(experts.value, domain.value)
            keep = keep_width and previous in width.options
            width.value = previous if keep else fallback
        finally:
            state["busy"] = False
        redraw()

    def pick_model(change: Any) -> None:
        chosen = get_model(change["new"])
        state["busy"] = True
        try:
            experts.value = chosen.n_experts
            top_k.max = max(1, min(32, chosen.n_experts))
            top_k.value = chosen.experts_per_token
        finally:
            state["busy"] = False
        reshape(keep_width=False)

    model_box.observe(pick_model, names="value")
    experts.observe(reshape, names="value")
    for control in (domain, top_k, width, batch):
        control.observe(redraw, names="value")
    redraw()
    box = w.VBox(
        [w.HBox([model_box, domain]), w.HBox([experts, top_k]), w.HBox([width, batch]), image]
    )
    box.redraw = redraw  # a benchmark can time this
    return box


def static_moe_explorer(model: str = SHAPE_MODEL) -> w.VBox:
    """Precomputed frames over domain x experts x top-k x batch, switched client-side. The EP
    width is the widest that fits in the domain (the left panel shows every width)."""
    explorer = MoEExplorer(batch_range=(BATCHES[0], BATCHES[-1]))

    def frame(domain: str, n_experts: int, top_k: int, batch: int) -> w.Image:
        explorer.update(domain, n_experts, top_k, batch, model=model)
        return w.Image(value=explorer.png(), format="png")

    domain = w.Dropdown(options=list(STATIC_DOMAINS), index=1, description="domain")
    experts = w.ToggleButtons(
        options=[str(E) for E in STATIC_EXPERTS], index=2, description="experts E"
    )
    top_k = w.ToggleButtons(options=[str(k) for k in STATIC_TOP_K], index=2, description="top-k")
    batch = w.SelectionSlider(options=list(BATCHES), index=2, description="batch B")
    stacks = nested_stacks(
        [list(STATIC_DOMAINS), list(STATIC_EXPERTS), list(STATIC_TOP_K), list(BATCHES)],
        frame,
        [domain, experts, top_k, batch],
    )
    caption = w.HTML(
        f"<small>One MoE layer of {model}'s shape (d_model, expert width, one shared "
        "expert) re-cut into E experts; the EP width on the right is the widest that fits "
        "in one domain; bf16; precomputed frames.</small>"
    )
    return w.VBox([w.HBox([domain, batch]), experts, top_k, stacks, caption])

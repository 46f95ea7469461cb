"""The over-training and pricing chapter's explorers: lifetime demand and target loss; chip
price, utilisation and batch; and a dated price sheet read like an engineer."""

from __future__ import annotations

import html

import ipywidgets as w

from .. import pricing
from ..batching import Deployment
from ..hardware import get_chip
from ..models import get_model
from ..plots.pricing import (
    DEMANDS,
    SERVING_BATCHES,
    TARGET_LOSSES,
    OvertrainingExplorer,
    ServingExplorer,
)
from .common import nested_stacks, static_mode

STATIC_PRICES = (2.0, 4.0, 8.0)  # USD per chip-hour
STATIC_UTILISATIONS = (0.3, 0.6, 1.0)
SERVING_CONTEXT = 2048


# ---- lifetime demand and target loss --------------------------------------------------------
def overtraining_explorer() -> w.Widget:
    """Target loss and lifetime inference tokens against the cheapest model size."""
    return static_overtraining_explorer() if static_mode() else live_overtraining_explorer()


def live_overtraining_explorer() -> w.VBox:
    explorer = OvertrainingExplorer()
    target = w.FloatSlider(value=1.937, min=1.85, max=2.3, step=0.005, description="loss")
    serve = w.FloatLogSlider(value=1e13, base=10, min=10, max=16, description="serving tok")
    rl = w.FloatLogSlider(value=1e10, base=10, min=10, max=15, description="RL tok")
    image = w.Image(format="png")

    def redraw(_change: object = None) -> None:
        explorer.update(target.value, serve.value, rl.value)
        image.value = explorer.png()

    for control in (target, serve, rl):
        control.observe(redraw, names="value")
    redraw()
    box = w.VBox([w.HBox([target, serve, rl]), image])
    box.redraw = redraw
    return box


def static_overtraining_explorer() -> w.VBox:
    explorer = OvertrainingExplorer()

    def frame(target: float, tokens: float) -> w.Image:
        explorer.update(target, tokens)
        return w.Image(value=explorer.png(), format="png")

    target = w.ToggleButtons(
        options=[str(t) for t in TARGET_LOSSES],
        index=1,
        description="loss",
        style={"button_width": "64px"},
    )
    tokens = w.SelectionSlider(
        options=[f"{t:.0e}" if t else "0" for t in DEMANDS],
        index=DEMANDS.index(1e13),
        description="lifetime tok",
    )
    stacks = nested_stacks([list(TARGET_LOSSES), list(DEMANDS)], frame, [target, tokens])
    caption = w.HTML(
        "<small>Lifetime inference tokens include RL rollouts; precomputed frames.</small>"
    )
    return w.VBox([w.HBox([target]), tokens, stacks, caption])


# ---- chip price, utilisation, batch --------------------------------------------------------
def serving_explorer(deployment: Deployment | None = None) -> w.Widget:
    """Chip price, utilisation and decode batch against cost per million tokens."""
    dep = deployment or Deployment(get_model("Llama-3-70B"), get_chip("H100"), 8)
    return static_serving_explorer(dep) if static_mode() else live_serving_explorer(dep)


def live_serving_explorer(deployment: Deployment) -> w.VBox:
    explorer = ServingExplorer()
    price = w.FloatSlider(value=2.0, min=0.5, max=12.0, step=0.25, description="USD/chip-h")
    busy = w.FloatSlider(value=0.5, min=0.05, max=1.0, step=0.05, description="utilisation")
    batch = w.IntSlider(value=64, min=1, max=512, description="batch")
    context = w.Dropdown(options=[512, 2048, 8192], value=SERVING_CONTEXT, description="context")
    image = w.Image(format="png")
    message = w.HTML()

    def redraw(_change: object = None) -> None:
        room = int(pricing.batch_that_fits(deployment, 10**9, context.value))
        shown = min(batch.value, room)
        message.value = "" if shown == batch.value else f"<small>only {room} fit</small>"
        explorer.update(deployment, shown, context.value, price.value, busy.value)
        image.value = explorer.png()

    for control in (price, busy, batch, context):
        control.observe(redraw, names="value")
    redraw()
    box = w.VBox([w.HBox([price, busy]), w.HBox([batch, context, message]), image])
    box.redraw = redraw
    return box


def static_serving_explorer(deployment: Deployment) -> w.VBox:
    explorer = ServingExplorer()

    def frame(price: float, busy: float, batch: float) -> w.Image:
        explorer.update(deployment, batch, SERVING_CONTEXT, price, busy)
        return w.Image(value=explorer.png(), format="png")

    price = w.Dropdown(options=[f"{p:g}" for p in STATIC_PRICES], index=0, description="USD/chip-h")
    busy = w.ToggleButtons(
        options=[f"{u:.0%}" for u in STATIC_UTILISATIONS],
        index=1,
        description="utilisation",
        style={"button_width": "64px"},
    )
    batch = w.SelectionSlider(options=list(SERVING_BATCHES), index=6, description="batch")
    stacks = nested_stacks(
        [list(STATIC_PRICES), list(STATIC_UTILISATIONS), list(SERVING_BATCHES)],
        frame,
        [price, busy, batch],
    )
    caption = w.HTML(
        f"<small>{html.escape(deployment.label)}, context {SERVING_CONTEXT}; cost floors "
        "(roofline step times); precomputed frames.</small>"
    )
    return w.VBox([w.HBox([price, busy]), batch, stacks, caption])


# ---- a dated price sheet, read -----------------------------------------------------------
def _fmt(value: float, unit: str) -> str:
    return f"{value:.2g} {unit}"


def price_sheet_html(model: str, assumptions: pricing.Assumptions | None = None) -> str:
    """One dated price sheet and what it implies under ``assumptions``, as an HTML table."""
    reading = pricing.read_price_sheet(model, assumptions)
    sheet, a = reading.sheet, reading.assumptions
    rows = [
        ("as published", f"{sheet.source_date} ({html.escape(sheet.source)})"),
        (
            "input / output",
            f"{sheet.input_usd_per_million:g} / {sheet.output_usd_per_million:g} USD per M tokens",
        ),
        ("output / input", f"{sheet.output_input_ratio:.1f}x"),
    ]
    if sheet.has_long_tier:
        rows.append(
            (
                f"> {sheet.long_context_threshold_tokens // 1000}k tokens",
                f"input x{sheet.long_input_surcharge:.2g}, "
                f"output x{sheet.long_output_surcharge:.2g}",
            )
        )
    params = reading.active_params
    rows += [
        (
            "active parameters",
            f"{params.low / 1e9:.0f}B to {params.high / 1e9:.0f}B ({params.spread:.0f}x apart)",
        ),
        (
            "decode batch",
            f"at least ~1/{1 / reading.decode_batch_fraction:.0f} of the critical batch "
            "(same markup on input and output)",
        ),
    ]
    if reading.kv_bytes_per_token is not None:
        kv = reading.kv_bytes_per_token
        rows.append(("KV cache per token", f"at most {_fmt(kv.low, 'B')} to {_fmt(kv.high, 'B')}"))
    rows.append(("cannot tell", "; ".join(reading.cannot_deduce)))
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{k}</th><td>{v}</td></tr>"
        for k, v in rows
    )
    note = (
        f"<small>Assumed: {a.chip}, {a.usd_per_chip_hour} USD/chip-hour, prefill MFU {a.mfu}, "
        f"price / cost {a.markup}, long prompts {a.context_gap_tokens} tokens longer.</small>"
    )
    return f"<table>{body}</table>{note}"


def price_sheet_explorer() -> w.Widget:
    """Pick a dated price sheet; see what it does and does not reveal."""
    names = pricing.list_price_sheets()
    choice = w.Dropdown(options=names, index=0, description="model")
    if static_mode():
        stack = w.Stack(
            children=[w.HTML(price_sheet_html(name)) for name in names], selected_index=0
        )
        w.jslink((choice, "index"), (stack, "selected_index"))
        return w.VBox([choice, stack])
    view = w.HTML(price_sheet_html(names[0]))

    def redraw(_change: object = None) -> None:
        view.value = price_sheet_html(choice.value)

    choice.observe(redraw, names="value")
    box = w.VBox([choice, view])
    box.redraw = redraw
    return box

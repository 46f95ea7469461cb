"""The over-training and pricing chapter's explorers: lifetime demand and target loss; chip
price, utilisation and batch; and a dated price sheet read like an engineer."""

from __future__ import annotations

import html

from llmmath import api_prices, pricing, scaling
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.display.plots.overtraining_pricing import (
    OvertrainingExplorer,
    ServingExplorer,
    tokens_label,
)
from llmmath.display.widgets.common import (
    Control,
    Explorer,
    ExplorerView,
    Options,
    Range,
    Settings,
    explorer,
    log_range,
)

#: The over-training explorer's stops: target losses (Chinchilla 70B / 1.4T is
#: scaling.CHINCHILLA_TARGET_LOSS under the default fit, 1.974; 1.937 under Hoffmann's rounded
#: one) and lifetime inference tokens (0, then 1e11 ... 1e15).
TARGET_LOSSES = (1.9, scaling.CHINCHILLA_TARGET_LOSS, 2.0)
DEMANDS = (0.0, 1e11, 3e11, 1e12, 3e12, 1e13, 3e13, 1e14, 3e14, 1e15)
#: The live sliders' token counts, 1 and 3 per decade (a readout of 1e+13 read as raw output);
#: lifetime demand starts at 0 (training only), as the static book's does (#45).
LIVE_RL_TOKENS = tuple(m * 10.0**e for e in range(10, 16) for m in (1, 3) if m * 10.0**e <= 1e15)
LIVE_DEMANDS = (0.0, *LIVE_RL_TOKENS, 1e16)


def _token_options(values: tuple[float, ...]) -> Options:
    return Options([(tokens_label(t), t) for t in values], "slider")


#: The serving explorer's stops: USD per chip-hour, utilisation and decode batch.
STATIC_PRICES = (2.0, 4.0, 8.0)
STATIC_UTILISATIONS = (0.3, 0.6, 1.0)
SERVING_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
SERVING_CONTEXT = 2048


# ---- lifetime demand and target loss --------------------------------------------------------
def overtraining_declaration() -> Explorer:
    """Target loss and lifetime demand (RL rollouts live only): 3 x 10 = 30 frames."""
    return Explorer(
        view=OvertrainingExplorer,
        controls=(
            Control(
                "target_loss",
                "loss",
                scaling.CHINCHILLA_TARGET_LOSS,
                TARGET_LOSSES,
                "buttons",
                Range(1.85, 2.3, 0.005),
                style={"button_width": "64px"},
            ),
            Control(
                "inference_tokens",
                "lifetime tok",
                1e13,
                DEMANDS,
                live=_token_options(LIVE_DEMANDS),
                labels=[tokens_label(t) for t in DEMANDS],
            ),
            Control("rl_rollout_tokens", "RL tok", 1e10, live=_token_options(LIVE_RL_TOKENS)),
        ),
        rows=(("target_loss", "inference_tokens", "rl_rollout_tokens"),),
        static_rows=(("target_loss",), ("inference_tokens",)),
        caption="Lifetime inference tokens include RL rollouts; precomputed frames.",
    )


def overtraining_explorer() -> ExplorerView:
    """Target loss and lifetime inference tokens against the cheapest model size."""
    return explorer(overtraining_declaration())


# ---- chip price, utilisation, batch --------------------------------------------------------
def serving_declaration(deployment: Deployment | None = None) -> Explorer:
    """Chip price, utilisation and batch (context live only): 3 x 3 x 9 = 81 frames."""
    dep = deployment or Deployment(get_model("Llama-3-70B"), get_chip("H100"), 8)

    def room(values: Settings) -> int:
        context = values.get("context", SERVING_CONTEXT)
        return int(pricing.batch_that_fits(dep, 10**9, context))

    def settings(values: Settings) -> Settings:
        clamped = {**values, "batch": min(values["batch"], room(values))}
        return {"deployment": dep, "context": SERVING_CONTEXT, **clamped}

    def status(values: Settings) -> str:
        fits = room(values)
        return "" if values["batch"] <= fits else f"<small>only {fits} fit</small>"

    return Explorer(
        view=ServingExplorer,
        controls=(
            Control(
                "usd_per_chip_hour",
                "USD/chip-h",
                2.0,
                STATIC_PRICES,
                "menu",
                Range(0.5, 12.0, 0.25),
                fmt="{:g}",
            ),
            Control(
                "utilisation",
                "utilisation",
                0.6,
                STATIC_UTILISATIONS,
                "buttons",
                Range(0.05, 1.0, 0.05),
                fmt="{:.0%}",
                style={"button_width": "64px"},
            ),
            Control("batch", "batch", 64, SERVING_BATCHES, live=log_range(1, 512)),
            Control("context", "context", SERVING_CONTEXT, live=Options([512, 2048, 8192])),
        ),
        rows=(("usd_per_chip_hour", "utilisation"), ("batch", "context")),
        settings=settings,
        caption=f"{html.escape(dep.label)}, context {SERVING_CONTEXT}; cost floors "
        "(roofline step times); precomputed frames.",
        status=status,
    )


def serving_explorer(deployment: Deployment | None = None) -> ExplorerView:
    """Chip price, utilisation and decode batch against cost per million tokens."""
    return explorer(serving_declaration(deployment))


# ---- a dated price sheet, read -----------------------------------------------------------
def _fmt(value: float, unit: str) -> str:
    """Two significant figures with thousands separators (3,100 B, not 3.1e+03 B)."""
    rounded = float(f"{value:.2g}")
    return f"{rounded:,.0f} {unit}" if rounded >= 10 else f"{rounded:g} {unit}"


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
        f"<small>Assumed: {a.chip}, {_span(a.usd_per_chip_hour, '{:g}')} USD/chip-hour, "
        f"prefill MFU {_span(a.mfu, '{:.0%}')}, price / cost {_span(a.markup, '{:g}x')}, "
        f"long prompts {_span(a.context_gap_tokens, '{:,.0f}')} tokens longer.</small>"
    )
    return f"<table>{body}</table>{note}"


def _span(value: float | tuple[float, float], fmt: str) -> str:
    """An assumption as prose: one value, or a range "2 to 6" (never a raw tuple, #45)."""
    if isinstance(value, tuple):
        low, high = value
        return f"{fmt.format(low)} to {fmt.format(high)}"
    return fmt.format(value)


class PriceSheetView:
    """One dated price sheet as an HTML table: the explorer's view. ``update`` builds the
    table, so an unknown sheet is refused there (ValueError), where the live explorer shows
    a refusal, not later when the page asks for the HTML."""

    def __init__(self) -> None:
        self.update(api_prices.list_price_sheets()[0])

    def update(self, model: str) -> None:
        self.table = price_sheet_html(model)
        self.model = model

    def html(self) -> str:
        return self.table


def price_sheet_declaration() -> Explorer:
    """One control: the dated price sheet shown."""
    names = tuple(api_prices.list_price_sheets())
    return Explorer(
        view=PriceSheetView,
        controls=(Control("model", "model", names[0], names, "menu"),),
        rows=(("model",),),
    )


def price_sheet_explorer() -> ExplorerView:
    """Pick a dated price sheet; see what it does and does not reveal."""
    return explorer(price_sheet_declaration())

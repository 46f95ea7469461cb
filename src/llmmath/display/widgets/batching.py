"""The batching chapter's explorer, declared once: model, chip and count, batch, context,
efficiency and price."""

from __future__ import annotations

from typing import Any

from llmmath.core.chip_prices import example_price, list_example_prices
from llmmath.core.hardware import list_chips
from llmmath.core.models import get_model, list_models
from llmmath.display.plots.batching import BatchingExplorer
from llmmath.display.widgets.common import (
    Control,
    Explorer,
    ExplorerView,
    LiveControls,
    Options,
    Range,
    Settings,
    explorer,
    log_range,
    set_high,
)

#: The static book's deployments: 3 x 6 x 3 x 2 = 108 frames (CONTRIBUTING: under ~150).
STATIC_SETUPS: dict[str, dict[str, Any]] = {
    "Llama-3-70B on 8×H100": {"model": "Llama-3-70B", "chip": "H100", "n_chips": 8},
    "Llama-3-8B on 1×H100": {"model": "Llama-3-8B", "chip": "H100", "n_chips": 1},
    "Llama-3-70B on 16×TPU-v5e": {"model": "Llama-3-70B", "chip": "TPU-v5e", "n_chips": 16},
}
STATIC_BATCHES = (1, 4, 16, 64, 256, 1024)
STATIC_CONTEXTS = (256, 2048, 8192)
#: label: (flops_efficiency, bandwidth_efficiency). The second is an example below the best
#: hand-tuned kernels (~67% of peak FLOP/s, ~90% of HBM bandwidth; reference.md).
STATIC_EFFICIENCIES = {"datasheet peaks": (1.0, 1.0), "50% FLOPs, 80% bandwidth": (0.5, 0.8)}
_FIRST = STATIC_SETUPS["Llama-3-70B on 8×H100"]


def _settings(values: Settings) -> Settings:
    """The static presets (setup, efficiency) spelled out as the figure's keywords."""
    settings = dict(values)
    settings.update(STATIC_SETUPS.get(settings.pop("setup", ""), {}))
    preset = settings.pop("efficiency", None)
    if preset is not None:
        settings["flops_efficiency"], settings["bandwidth_efficiency"] = STATIC_EFFICIENCIES[preset]
    return settings


def _wire(controls: LiveControls) -> None:
    """A new model bounds the context; a chip with an example price brings it."""

    def new_model(change: dict[str, Any]) -> None:
        with controls.hold():
            set_high(controls["context"], get_model(change["new"]).max_context)  # clamps it

    def new_chip(change: dict[str, Any]) -> None:
        if change["new"] in list_example_prices():
            with controls.hold():
                controls["usd_per_chip_hour"].value = example_price(change["new"]).usd_per_chip_hour

    controls["model"].observe(new_model, names="value")
    controls["chip"].observe(new_chip, names="value")


def _prices() -> str:
    chips = dict.fromkeys(setup["chip"] for setup in STATIC_SETUPS.values())
    return ", ".join(f"${example_price(c).usd_per_chip_hour:.2f} per {c}-hour" for c in chips)


def declaration(model: str = "Llama-3-70B", chip: str = "H100") -> Explorer:
    """Presets in the static book (setup, efficiency), free choices in the live one."""
    wide = {"button_width": "13em"}
    return Explorer(
        view=BatchingExplorer,
        controls=(
            Control(
                "setup",
                "setup",
                "Llama-3-70B on 8×H100",
                tuple(STATIC_SETUPS),
                "menu",
                live=False,
                width="22em",
            ),
            Control("model", "model", model, live=Options(list_models())),
            Control("chip", "chip", chip, live=Options(list_chips())),
            Control(
                "n_chips", "chips", _FIRST["n_chips"], live=Range(1, 4096, integer=True, box=True)
            ),
            Control(
                "batch",
                "batch",
                1,
                STATIC_BATCHES,
                live=log_range(1, 4096),
            ),
            Control(
                "context",
                "context",
                2048,
                STATIC_CONTEXTS,
                "buttons",
                log_range(64, get_model(model).max_context),
            ),
            Control(
                "efficiency",
                "efficiency",
                "datasheet peaks",
                tuple(STATIC_EFFICIENCIES),
                "buttons",
                live=False,
                style=wide,
            ),
            Control("flops_efficiency", "FLOPs eff.", 1.0, live=Range(0.05, 1.0, 0.05)),
            Control("bandwidth_efficiency", "HBM eff.", 1.0, live=Range(0.05, 1.0, 0.05)),
            Control(
                "usd_per_chip_hour",
                "$/chip-h",
                example_price(chip).usd_per_chip_hour,
                live=Range(0.01, 1000.0, 0.1, box=True),
            ),
        ),
        rows=(
            ("model", "chip", "n_chips"),
            ("batch", "context"),
            ("flops_efficiency", "bandwidth_efficiency", "usd_per_chip_hour"),
        ),
        static_rows=(("setup", "batch"), ("context",), ("efficiency",)),
        settings=_settings,
        # Batch innermost: its frames share one scene, so each is a quick blit of two markers.
        nesting=("setup", "context", "efficiency", "batch"),
        caption=f"Precomputed frames at example prices ({_prices()}). In JupyterLab the "
        "controls redraw live for any model, chip, count, efficiency and price.",
        note="Example prices (llmmath/data/chip_prices.toml); chips without one keep the last "
        "price. Every time is a floor.",
        wire=_wire,
        timed="context",
    )


def batching_explorer() -> ExplorerView:
    """Cost per token and latency against batch for a model on some chips."""
    return explorer(declaration())

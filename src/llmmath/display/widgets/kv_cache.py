"""The KV-cache chapter's explorers, declared once: the capacity and bandwidth walls (model,
chips, dtype, batch, context) and the "which tier?" map (model, chips, dtype, prefix, hold
time, reuses)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llmmath.core.models import get_model, list_models
from llmmath.display.plots.kv_cache import KVCacheExplorer, TierExplorer
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
#: The tier explorer's setups (model, H100s, dtype): it has no dtype control in the static
#: book, and DeepSeek-V3's 671B parameters in bf16 need more than 16 H100s hold (every frame
#: would say "does not fit"), so it is shown in fp8, the format it was trained in (#45).
TIER_SETUPS: dict[str, tuple[str, int, str]] = {
    "Llama-3-70B on 8×H100 (bf16)": ("Llama-3-70B", 8, "bf16"),
    "Llama-3.1-405B on 16×H100 (bf16)": ("Llama-3.1-405B", 16, "bf16"),
    "DeepSeek-V3 on 16×H100 (fp8)": ("DeepSeek-V3", 16, "fp8"),
}
STATIC_REUSES = (1, 10, 100)
STATIC_HOLDS_S = (1, 60, 600, 3600, 86400)
#: A log slider's readout (d3-format): three significant figures, never an exponent (3,600 s,
#: not 3.6e+3; ipywidgets refuses d3's "~" that would trim 60.0 to 60).
READABLE = ",.3r"


def _settings(values: Settings) -> Settings:
    """The static setup spelled out as model and number of H100s."""
    settings = dict(values)
    setup = settings.pop("setup", None)
    if setup is not None:
        settings["model"], settings["n_chips"] = STATIC_SETUPS[setup]
    return settings


def _tier_settings(values: Settings) -> Settings:
    """The tier explorer's static setup spelled out as model, number of H100s and dtype."""
    settings = dict(values)
    setup = settings.pop("setup", None)
    if setup is not None:
        settings["model"], settings["n_chips"], settings["dtype"] = TIER_SETUPS[setup]
    return settings


def _deployment_controls(model: str, setups: tuple[str, ...]) -> tuple[Control, ...]:
    """Setup (static book) or model, H100s and dtype (live)."""
    return (
        Control("setup", "setup", setups[0], setups, "menu", live=False, width="24em"),
        Control("model", "model", model, live=Options(list_models())),
        Control("n_chips", "H100s", 8, live=Range(1, 4096, integer=True, box=True)),
    )


def _bound_by_model(slider: str) -> Callable[[LiveControls], None]:
    """A ``wire``: a new model bounds ``slider`` by its longest context."""

    def wire(controls: LiveControls) -> None:
        def new_model(change: dict[str, Any]) -> None:
            with controls.hold():
                set_high(controls[slider], get_model(change["new"]).max_context)

        controls["model"].observe(new_model, names="value")

    return wire


def declaration(model: str = "Llama-3-70B") -> Explorer:
    """The capacity wall and the step time against context: 3 x 2 x 4 x 5 = 120 frames."""
    return Explorer(
        view=KVCacheExplorer,
        controls=(
            *_deployment_controls(model, tuple(STATIC_SETUPS)),
            Control("dtype", "dtype", "bf16", STATIC_DTYPES, "buttons"),
            Control(
                "batch",
                "batch",
                16,
                STATIC_BATCHES,
                "buttons",
                log_range(1, 4096),
            ),
            Control(
                "context",
                "context",
                4096,
                STATIC_CONTEXTS,
                fmt="{:,}",
                live=log_range(128, get_model(model).max_context),
            ),
        ),
        rows=(("setup", "model", "n_chips", "dtype"), ("batch", "context")),
        settings=_settings,
        # Context innermost: its frames share one scene, so each is a quick blit of markers.
        caption="Precomputed frames (weights and KV cache in the chosen dtype). In JupyterLab "
        "the controls redraw live for any model, number of chips, batch and context.",
        note="Weights and KV cache in the chosen dtype; every time is a floor.",
        wire=_bound_by_model("context"),
        timed="batch",
    )


def tier_declaration(model: str = "Llama-3-70B") -> Explorer:
    """Which tier for a cached prefix: 3 x 3 x 3 x 5 = 135 frames, each setup in its dtype."""
    return Explorer(
        view=TierExplorer,
        controls=(
            *_deployment_controls(model, tuple(TIER_SETUPS)),
            Control("dtype", "dtype", "bf16", live=Options(STATIC_DTYPES, "buttons")),
            Control(
                "prefix_tokens",
                "prefix",
                8192,
                STATIC_PREFIXES,
                "buttons",
                log_range(128, get_model(model).max_context),
                fmt="{:,}",
            ),
            Control(
                "reuses",
                "reuses",
                10,
                STATIC_REUSES,
                "buttons",
                Range(0.1, 1000, 0.1, log_base=10, readout_format=READABLE),
            ),
            Control(
                "hold_s",
                "hold (s)",
                60,
                STATIC_HOLDS_S,
                live=Range(0.1, 1e7, 0.1, log_base=10, readout_format=READABLE),
            ),
        ),
        rows=(("model", "n_chips"), ("dtype",), ("prefix_tokens", "reuses"), ("hold_s",)),
        static_rows=(("setup", "prefix_tokens"), ("reuses", "hold_s")),
        settings=_tier_settings,
        caption="Precomputed frames in each setup's dtype at the example prices of "
        "data/memory_tiers.toml. "
        "In JupyterLab every control redraws live, dtype and chips included.",
        wire=_bound_by_model("prefix_tokens"),
    )


def kv_cache_explorer() -> ExplorerView:
    """The capacity wall and the step time against context."""
    return explorer(declaration())


def tier_explorer() -> ExplorerView:
    """Which tier should a cached prefix live in?"""
    return explorer(tier_declaration())

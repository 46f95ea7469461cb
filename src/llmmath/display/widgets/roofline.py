"""The roofline chapter's explorer, declared once: chip, weight format and batch."""

from __future__ import annotations

from llmmath.core.hardware import list_chips
from llmmath.core.models import list_models
from llmmath.display.plots.roofline import RooflineExplorer
from llmmath.display.widgets.common import (
    Control,
    Explorer,
    ExplorerView,
    Options,
    Settings,
    explorer,
    log_range,
)

STATIC_CHIPS = ("A100", "H100", "B200", "TPU-v5e")
WEIGHT_DTYPES = ("bf16", "int8")
BATCHES = tuple(2**k for k in range(13))  # 1 ... 4096 tokens: the static book's batch stops


def declaration(model: str = "Llama-3-70B") -> Explorer:
    """Chip, model (live only), weight format and batch of one decode step."""

    def settings(values: Settings) -> Settings:
        return {"model": model, "compute_dtype": "bf16", **values}

    return Explorer(
        view=RooflineExplorer,
        controls=(
            Control("chip", "chip", "H100", STATIC_CHIPS, "menu", Options(list_chips())),
            Control("model", "model", model, live=Options(list_models())),
            Control("weight_dtype", "weights", "bf16", WEIGHT_DTYPES, "buttons"),
            Control("batch", "batch", 1, BATCHES, live=log_range(1, 4096)),
        ),
        rows=(("chip", "model", "weight_dtype"), ("batch",)),
        settings=settings,
        caption=f"{model}, one decode step, bf16 FLOPs; precomputed frames.",
    )


def roofline_explorer(model: str = "Llama-3-70B") -> ExplorerView:
    """Chip, weight format and batch against the roofline and the decode-step time."""
    return explorer(declaration(model))

"""The parallelism chapter's explorer, declared once: a layout of DP, TP, PP and EP,
microbatches and how activations are kept, against memory per GPU and the step-time
breakdown."""

from __future__ import annotations

from llmmath.core.hardware import list_chips
from llmmath.core.models import list_models
from llmmath.core.placement import Layout
from llmmath.display.plots.parallelism import ParallelismExplorer
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
from llmmath.parallelism import ACTIVATION_MODES

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
MICROBATCHES = (1, 2, 4, 8, 16, 32, 64)  # the static book's microbatch stops
BATCH_TOKENS = tuple(2**k for k in range(18, 27))  # 256K ... 64M tokens per step
DEGREES = tuple(2**k for k in range(11))  # 1 ... 1024
_DEGREE_LOOK = {"description_width": "2em"}
_DEGREES = ("dp", "tp", "pp", "ep")


def _settings(values: Settings) -> Settings:
    """The live DP/TP/PP/EP degrees and ZeRO stage as one :class:`Layout`."""
    settings: Settings = {"model": STATIC_MODEL, "chip": STATIC_CHIP}
    settings["global_batch_tokens"] = STATIC_BATCH_TOKENS
    settings |= {k: v for k, v in values.items() if k not in (*_DEGREES, "zero")}
    if "dp" in values:
        degrees = {k: values[k] for k in _DEGREES}
        settings["layout"] = Layout(**degrees, zero_stage=values["zero"])
    return settings


def _status(values: Settings) -> str:
    layout = _settings(values)["layout"]
    return f"<small>{layout}: {layout.n_gpus:,} GPUs.</small>"


def _degree(name: str, start: int) -> Control:
    return Control(
        name, name.upper(), start, live=Options(DEGREES), style=_DEGREE_LOOK, width="9em"
    )


def declaration(model: str = STATIC_MODEL) -> Explorer:
    """Static: 6 layouts x 7 microbatch counts x 3 activation modes = 126 frames."""
    wide = {"description_width": "initial"}
    return Explorer(
        view=ParallelismExplorer,
        controls=(
            Control("model", "model", model, live=Options(list_models())),
            Control("chip", "chip", STATIC_CHIP, live=Options(list_chips())),
            Control(
                "layout",
                "layout",
                STATIC_LAYOUTS[2],
                STATIC_LAYOUTS,
                "menu",
                live=False,
                labels=[str(layout) for layout in STATIC_LAYOUTS],
            ),
            *(_degree(n, s) for n, s in zip(_DEGREES, (128, 8, 1, 1), strict=True)),
            Control(
                "zero",
                "ZeRO",
                1,
                live=Options([0, 1, 2, 3], "buttons"),
                style={"button_width": "3em"},
            ),
            Control(
                "activations", "activations", "stored", ACTIVATION_MODES, "buttons", style=wide
            ),
            Control(
                "microbatches",
                "microbatches",
                8,
                MICROBATCHES,
                style=wide,
                live=log_range(1, 128, fmt=".0f"),
            ),
            Control(
                "global_batch_tokens",
                "tokens/step",
                STATIC_BATCH_TOKENS,
                live=Options([(f"{t / 2**20:g}M", t) for t in BATCH_TOKENS], "slider"),
            ),
            Control("flops_efficiency", "of peak", 1.0, live=Range(0.1, 1.0, 0.05)),
        ),
        rows=(
            ("model", "chip", "layout"),
            _DEGREES,
            ("zero", "activations"),
            ("microbatches", "global_batch_tokens", "flops_efficiency"),
        ),
        static_rows=(("layout", "activations"), ("microbatches",)),
        settings=_settings,
        nesting=("layout", "microbatches", "activations"),
        caption=f"{STATIC_MODEL} on {STATIC_GPUS:,} {STATIC_CHIP}, "
        f"{STATIC_BATCH_TOKENS / 2**20:g}M tokens per step, floors at the datasheet peak; "
        "precomputed frames.",
        status=_status,
    )


def parallelism_explorer(model: str = STATIC_MODEL) -> ExplorerView:
    """Layout, microbatches and activation memory against memory per GPU and step time."""
    return explorer(declaration(model))

"""The mixture-of-experts chapter's explorer, declared once: domain, experts, top-k, EP width
and batch."""

from __future__ import annotations

from typing import Any

from llmmath import moe
from llmmath.core import racks
from llmmath.core.models import get_model, list_models
from llmmath.display.plots.moe import MoEExplorer
from llmmath.display.widgets.common import (
    Control,
    Explorer,
    ExplorerView,
    LiveControls,
    Options,
    Range,
    Settings,
    explorer,
)

STATIC_DOMAINS = ("HGX H100 (8 GPUs)", "GB200 NVL72 (72 GPUs)", "TPU v5e pod (256 chips)")
STATIC_EXPERTS = (8, 64, 256)
STATIC_TOP_K = (1, 2, 8)
STATIC_BATCHES = (64, 512, 4096, 32768)
SHAPE_MODEL = "DeepSeek-V3"  # the layer shape (D, expert width, shared expert) being re-cut
#: Expert counts worth splitting: powers of two, multiples of the NVL72's 72 and counts that
#: shipped (DeepSeek-V2 160, Kimi K2 384). A log slider stopped on counts like 181, a prime
#: whose only EP widths are 1 and 181, and drew an all-to-all of one point.
EXPERT_COUNTS = (4, 8, 16, 32, 64, 72, 128, 144, 160, 256, 288, 384, 512)


def expert_counts() -> list[int]:
    """The live slider's stops: :data:`EXPERT_COUNTS` and every MoE preset's own count."""
    presets = {get_model(name).n_experts for name in list_models() if get_model(name).is_moe}
    return sorted(set(EXPERT_COUNTS) | presets)


def _wire(controls: LiveControls) -> None:
    """Keep k <= E and G a divisor of E; a new model shape brings its E and k."""
    experts, top_k, width = (
        controls["n_experts"],
        controls["experts_per_token"],
        controls["ep_width"],
    )

    def reshape(_change: object = None, keep_width: bool = True) -> None:
        count = round(experts.value)  # a log slider: whole experts only
        with controls.hold():
            top_k.max = max(1, min(32, count))
            previous = width.value
            width.options = moe.ep_widths(count)
            fallback = moe.max_ep_width(count, controls["domain"].value)
            width.value = previous if keep_width and previous in width.options else fallback

    def pick_model(change: Any) -> None:
        chosen = get_model(change["new"])
        with controls.hold():
            experts.value = chosen.n_experts
            top_k.max = max(1, min(32, chosen.n_experts))
            top_k.value = chosen.experts_per_token
            reshape(keep_width=False)

    controls["model"].observe(pick_model, names="value")
    experts.observe(reshape, names="value")


def declaration(model: str = SHAPE_MODEL) -> Explorer:
    """Static: 3 x 3 x 3 x 4 = 108 frames, each at the widest EP width that fits the domain."""
    spec = get_model(model)
    domain = STATIC_DOMAINS[1]

    def settings(values: Settings) -> Settings:
        return {"model": model, **values}

    return Explorer(
        view=MoEExplorer,
        static_view=lambda: MoEExplorer(batch_range=(STATIC_BATCHES[0], STATIC_BATCHES[-1])),
        controls=(
            Control(
                "model",
                "shape of",
                spec.name,
                live=Options([n for n in list_models() if get_model(n).is_moe]),
            ),
            Control(
                "domain", "domain", domain, STATIC_DOMAINS, "menu", Options(racks.list_domains())
            ),
            Control(
                "batch",
                "batch B",
                4096,
                STATIC_BATCHES,
                live=Range(1, 2**17, 0.25, log_base=2, readout_format=",.0f"),
            ),
            Control(
                "n_experts",
                "experts E",
                spec.n_experts,
                STATIC_EXPERTS,
                "buttons",
                Options(expert_counts(), "slider"),
            ),
            Control(
                "experts_per_token",
                "top-k",
                spec.experts_per_token,
                STATIC_TOP_K,
                "buttons",
                Range(1, 32, integer=True),
            ),
            Control(
                "ep_width",
                "EP width G",
                moe.max_ep_width(spec.n_experts, domain),
                live=Options(moe.ep_widths(spec.n_experts), "slider"),
            ),
        ),
        rows=(("model", "domain"), ("n_experts", "experts_per_token"), ("ep_width", "batch")),
        static_rows=(("domain", "batch"), ("n_experts",), ("experts_per_token",)),
        settings=settings,
        nesting=("domain", "n_experts", "experts_per_token", "batch"),
        caption=f"One MoE layer of {model}'s shape (d_model, expert width, one shared expert) "
        "re-cut into E experts; the EP width on the right is the widest that fits in one "
        "domain; bf16; precomputed frames.",
        wire=_wire,
        timed="n_experts",
    )


def moe_explorer(model: str = SHAPE_MODEL) -> ExplorerView:
    """Rack, experts, top-k, EP width and batch against one MoE layer's three clocks."""
    return explorer(declaration(model))

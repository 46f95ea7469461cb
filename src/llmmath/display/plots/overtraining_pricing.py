"""Figures of the over-training and pricing chapter: total compute against model size, the
tokens per parameter that lifetime demand buys, and serving cost against batch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from llmmath import api_prices, pricing, scaling
from llmmath.core.capacity import step_critical_batch
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.core.units import general
from llmmath.display.plots.common import (
    COMPUTE_COLOUR,
    CURVE_MARKERS,
    FLOOR_COLOUR,
    MEMORY_COLOUR,
    FastFigure,
    figure_and_axes,
    mark_curves,
    snap_log_limits,
)

_DEMAND_CURVES = (0.0, 1e12, 1e13, 1e14)
_BATCH_SWEEP = np.unique(np.round(np.logspace(0, np.log10(1024), 80)))
_DEMAND_COLOURS = (FLOOR_COLOUR, MEMORY_COLOUR, COMPUTE_COLOUR, "#7570b3", "#e7298a")
_REFERENCE_GREY = "#bbbbbb"
#: The marker of each demand's curve (mark_curves: squares, triangles, diamonds, ...) as text.
_GLYPHS = {"s": "■", "^": "▲", "D": "◆", "v": "▼", "P": "✚", "h": "⬢", "*": "★"}
_MARKED = [(_GLYPHS[m], t) for m, t in zip(CURVE_MARKERS, _DEMAND_CURVES, strict=False)]

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def tokens_label(tokens: float) -> str:
    """A token count as the lesson writes it: ``10¹³``, ``3×10¹³``, ``0``."""
    if tokens == 0:
        return "0"
    exponent = f"{tokens:.0e}".split("e")
    mantissa, power = int(exponent[0]), int(exponent[1])
    scale = f"10{str(power).translate(_SUPERSCRIPT)}"
    return scale if mantissa == 1 else f"{mantissa}×{scale}"


def _demand_label(tokens: float) -> str:
    return "training only" if tokens == 0 else f"+ {tokens_label(tokens)} inference tokens"


class LifetimePanel:
    """Training plus lifetime inference FLOPs against model size at one target loss, one
    curve per lifetime demand, each minimum marked (and, if ``labelled``, its tokens per
    parameter written beside it)."""

    def __init__(self, ax: Axes, colours: Sequence[str], labelled: bool = True) -> None:
        self.ax, self.labelled = ax, labelled
        self.lines = [ax.loglog([], [], color=c, lw=1.5 if labelled else 1)[0] for c in colours]
        mark_curves(*self.lines)  # one shape per demand, in both panels
        self.dots = [ax.plot([], [], "o", color=c)[0] for c in colours] if labelled else []
        self.notes = [
            ax.annotate(
                "", (1.0, 1.0), textcoords="offset points", xytext=(4, 6), fontsize=7, color=c
            )
            for c in colours
            if labelled
        ]
        ax.set(xlabel="parameters P", ylabel="training + inference FLOPs")

    def show(self, curves: Sequence[scaling.LifetimeCurve]) -> None:
        for line, curve in zip(self.lines, curves, strict=True):
            line.set_data(curve.params, curve.total_flops)
            line.set_label(_demand_label(curve.inference_tokens))
        for dot, note, curve in zip(
            self.dots, self.notes, curves if self.labelled else [], strict=True
        ):
            dot.set_data([curve.best_params], [curve.best_total_flops])
            note.xy = (curve.best_params, curve.best_total_flops)
            note.set_text(f"{curve.best_tokens_per_param:.0f} tok/param")
        sizes = curves[0].params
        bottom = min(float(c.total_flops.min()) for c in curves)
        top = max(float(c.total_flops.max()) for c in curves)
        # Snapped: the axes stay put over a range of losses (a move is then a blit).
        self.ax.set_xlim(*snap_log_limits(sizes[0], sizes[-1]))
        self.ax.set_ylim(*snap_log_limits(bottom / 2, top * 2))


class TokensPerParamPanel:
    """Tokens per parameter of the cheapest model that reaches one loss against lifetime
    demand, with the fit's compute-optimal ratio (dashed) and the rule of thumb 20 (dotted)."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        (self.line,) = ax.loglog([], [], color=COMPUTE_COLOUR, label="inference-aware optimum")
        self.plain_line = ax.axhline(
            1.0, color=FLOOR_COLOUR, ls="--", lw=1, label="fit, no inference"
        )
        ax.axhline(
            scaling.RULE_OF_THUMB_TOKENS_PER_PARAM, color="grey", ls=":", label="Table 3: ~20"
        )
        ax.set_xlim(scaling.CURVE_DEMANDS[0], scaling.CURVE_DEMANDS[-1])
        ax.set(
            xlabel="lifetime inference tokens (serving + RL rollouts)",
            ylabel="training tokens per parameter",
        )

    def show(self, curve: scaling.TokensPerParamCurve) -> None:
        self.line.set_data(curve.demand, curve.tokens_per_param)
        self.plain_line.set_ydata([curve.without_inference] * 2)
        self.ax.set_ylim(*snap_log_limits(10, float(curve.tokens_per_param.max()) * 2))


def total_compute_vs_size(
    target_loss: float = scaling.CHINCHILLA_TARGET_LOSS,
    inference_tokens: Sequence[float] = _DEMAND_CURVES,
    ax: Axes | None = None,
) -> Figure:
    """Every model size that reaches ``target_loss`` (Chinchilla fit), one curve per lifetime
    demand (see :class:`LifetimePanel`)."""
    figure, ax = figure_and_axes(ax)
    colours = [_DEMAND_COLOURS[i % len(_DEMAND_COLOURS)] for i in range(len(inference_tokens))]
    LifetimePanel(ax, colours).show(
        [scaling.lifetime_curve(target_loss, tokens) for tokens in inference_tokens]
    )
    ax.set_title(f"Every model here reaches loss {target_loss:g} (Chinchilla fit)")
    ax.legend(fontsize=8, loc="upper right")
    return figure


def tokens_per_param_vs_demand(
    target_loss: float = scaling.CHINCHILLA_TARGET_LOSS, ax: Axes | None = None
) -> Figure:
    """Tokens per parameter of the cheapest model against lifetime inference (see
    :class:`TokensPerParamPanel`)."""
    figure, ax = figure_and_axes(ax)
    TokensPerParamPanel(ax).show(scaling.tokens_per_param_curve(target_loss))
    ax.set_title(f"Target loss {target_loss:g}")
    ax.legend(fontsize=8, loc="upper left")
    return figure


class OvertrainingExplorer(FastFigure):
    """Left: total compute against model size at one target loss, with the chosen lifetime
    demand's curve highlighted over grey reference curves. Right: tokens per parameter against
    demand. Moving the demand redraws the highlight and markers only; a new loss, the rest."""

    def __init__(self) -> None:
        super().__init__(figsize=(10.0, 4.0), ncols=2)
        self.ax_cost, self.ax_ratio = self.axes
        self.reference = LifetimePanel(
            self.ax_cost, [_REFERENCE_GREY] * len(_DEMAND_CURVES), labelled=False
        )
        self.ratios = TokensPerParamPanel(self.ax_ratio)
        self.curve = self.dynamic(self.ax_cost.plot([], [], color=COMPUTE_COLOUR, lw=2)[0])
        self.best = self.marker(self.ax_cost, COMPUTE_COLOUR)
        self.ratio_point = self.marker(self.ax_ratio, COMPUTE_COLOUR)
        self.readout = self.corner_readout(self.ax_cost, top=True, fontsize=9)
        self.ax_ratio.set_xlabel("lifetime inference tokens (+ RL rollouts)")
        self.ax_ratio.set_ylabel("tokens per parameter of the optimum")

    def update(
        self,
        target_loss: float = scaling.CHINCHILLA_TARGET_LOSS,
        inference_tokens: float = 1e13,
        rl_rollout_tokens: float = 0.0,
    ) -> None:
        if self.new_scene(target_loss):
            self._draw_scene(target_loss)
        total = inference_tokens + rl_rollout_tokens
        curve = scaling.lifetime_curve(target_loss, total)
        self.curve.set_data(curve.params, curve.total_flops)
        self.best.set_data([curve.best_params], [curve.best_total_flops])
        shown = max(total, float(scaling.CURVE_DEMANDS[0]))
        self.ratio_point.set_data([shown], [curve.best_tokens_per_param])
        self.readout.set_text(
            f"best P {curve.best_params / 1e9:.1f}B on {curve.best_tokens / 1e12:.1f}T tokens\n"
            f"{curve.best_tokens_per_param:.0f} tokens/param; "
            f"training {curve.best_training_flops / curve.best_total_flops:.0%} of compute"
        )

    def _draw_scene(self, target_loss: float) -> None:
        self.reference.show([scaling.lifetime_curve(target_loss, t) for t in _DEMAND_CURVES])
        self.ax_cost.set_title(
            f"loss {target_loss:g}; grey: {_MARKED[0][0]} 0 (training only), "
            f"{', '.join(f'{g} {tokens_label(t)}' for g, t in _MARKED[1:])} tokens",
            fontsize=9,
        )
        self.ratios.show(scaling.tokens_per_param_curve(target_loss))
        self.ax_ratio.set_title("dashed: fit without inference; dotted: 20", fontsize=9)


class ServingExplorer(FastFigure):
    """Left: cost floors per million input and output tokens against decode batch for one
    deployment, chip price and utilisation. Right: the output / input ratio it implies, with
    the dated vendors' ratios as a band. Moving the batch redraws the markers only."""

    def __init__(self) -> None:
        super().__init__(figsize=(10.0, 4.0), ncols=2)
        self.ax_cost, self.ax_ratio = self.axes
        (self.output_line,) = self.ax_cost.loglog([], [], color=MEMORY_COLOUR, label="output")
        (self.input_line,) = self.ax_cost.plot([], [], color=COMPUTE_COLOUR, label="input")
        mark_curves(self.output_line, self.input_line)
        (self.ratio_line,) = self.ax_ratio.loglog([], [], color=FLOOR_COLOUR, label="cost ratio")
        self.critical = self.ax_ratio.axvline(1.0, color="grey", ls=":")
        ratios = list(pricing.output_input_ratios().values())
        self.ax_ratio.axhspan(min(ratios), max(ratios), color=COMPUTE_COLOUR, alpha=0.15)
        self.ax_ratio.text(
            1.2, max(ratios) * 1.1, "API price sheets (dated)", fontsize=8, color=COMPUTE_COLOUR
        )
        self.out_point = self.marker(self.ax_cost, MEMORY_COLOUR)
        self.ratio_point = self.marker(self.ax_ratio, FLOOR_COLOUR)
        self.readout = self.corner_readout(self.ax_cost, top=True, fontsize=9)
        self.ax_cost.set(xlabel="decode batch (sequences)", ylabel="USD per million tokens")
        self.ax_ratio.set(xlabel="decode batch (sequences)", ylabel="output / input cost")
        self.ax_cost.legend(loc="lower left", fontsize=8)
        self.ax_cost.set_xlim(_BATCH_SWEEP[0], _BATCH_SWEEP[-1])
        self.ax_ratio.set_xlim(_BATCH_SWEEP[0], _BATCH_SWEEP[-1])

    def update(
        self,
        deployment: Deployment | None = None,
        batch: float = 64,
        context: float = 2048,
        usd_per_chip_hour: float = 2.0,
        utilisation: float = 0.5,
    ) -> None:
        dep = deployment or Deployment(get_model("Llama-3-70B"), get_chip("H100"), 8)
        key = (dep, context, usd_per_chip_hour, utilisation)
        if self.new_scene(key):
            self._draw_scene(dep, context, usd_per_chip_hour, utilisation)
        cost = pricing.serving_cost(
            dep, batch, context, usd_per_chip_hour=usd_per_chip_hour, utilisation=utilisation
        )
        out, ratio = float(cost.output_usd_per_million), float(cost.output_input_ratio)
        self.out_point.set_data([batch], [out])
        self.ratio_point.set_data([batch], [ratio])
        self.readout.set_text(
            f"batch {batch:g}: output {general(out)} USD/M, input "
            f"{general(float(cost.input_usd_per_million))} USD/M, ratio {ratio:.1f}x"
        )

    def _draw_scene(self, dep: Deployment, context: float, price: float, busy: float) -> None:
        room = float(pricing.batch_that_fits(dep, _BATCH_SWEEP[-1], context))
        sweep = _BATCH_SWEEP[np.less_equal(_BATCH_SWEEP, room)]
        cost = pricing.serving_cost(dep, sweep, context, usd_per_chip_hour=price, utilisation=busy)
        self.output_line.set_data(sweep, cost.output_usd_per_million)
        self.input_line.set_data(sweep, np.broadcast_to(cost.input_usd_per_million, sweep.shape))
        self.ratio_line.set_data(sweep, cost.output_input_ratio)
        self.critical.set_xdata([step_critical_batch(dep)] * 2)
        low = float(np.min(cost.input_usd_per_million))
        self.ax_cost.set_ylim(
            *snap_log_limits(low / 3, float(cost.output_usd_per_million.max()) * 2)
        )
        self.ax_ratio.set_ylim(*snap_log_limits(0.5, float(cost.output_input_ratio.max()) * 2))
        chip = get_chip(dep.chip)
        self.ax_cost.set_title(
            f"{dep.label}, {price:g} USD/chip-h, {busy:.0%} busy, context {context:g}",
            fontsize=9,
        )
        self.ax_ratio.set_title(
            f"{chip.name}: dotted = C b_w/2W, weights only (ratio ~ B*/B + KV term)", fontsize=9
        )


def price_sheet_ratios(ax: Axes | None = None) -> Figure:
    """Output / input and long-context surcharges of each dated price sheet."""
    figure, ax = figure_and_axes(ax)
    names = api_prices.list_price_sheets()
    sheets = [api_prices.get_price_sheet(name) for name in names]
    y = np.arange(len(sheets))
    ax.barh(y, [s.output_input_ratio for s in sheets], color=MEMORY_COLOUR, label="output / input")
    long = [s.long_output_surcharge if s.has_long_tier else 0.0 for s in sheets]
    ax.barh(y + 0.35, long, height=0.3, color=COMPUTE_COLOUR, label="> 200k output / standard")
    ax.set_yticks(y + 0.15, [f"{s.model}\n{s.source_date}" for s in sheets], fontsize=8)
    ax.set(xlabel="price ratio", title="Dated API price sheets (USD per million tokens)")
    ax.legend(fontsize=8, loc="lower right")
    ax.invert_yaxis()
    return figure

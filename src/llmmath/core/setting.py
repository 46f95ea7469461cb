"""A worked example's setting: one deployment, one context, one overlap rule, named in one line.

A number carried from one chapter to another (a step time, a cost, a batch) is true only in its
setting: the model and chips, the layout and what its communication costs, the formats weights,
KV caches and attention are held and computed in, the context, and whether the step is the floor
(perfect overlap) or the serial estimate. :class:`Setting` holds all of it, :meth:`Setting.step`
times a decode step in it, and :meth:`Setting.describe` writes it as the one line each worked
example prints above its numbers (``llmmath.display.pages.setting``), so text and numbers
cannot disagree about the setting.

>>> from llmmath.core.deployment import DEPLOYMENT, Deployment
>>> s = Setting(Deployment("Llama-3-70B", "H100", 8), context=2048)
>>> round(float(s.step(1).time_s) * 1e3, 2)
5.21
>>> print(s.describe())  # doctest: +NORMALIZE_WHITESPACE
Llama-3-70B on 8×H100, spread evenly (no communication counted) · weights bf16, KV cache bf16,
matmuls bf16, attention bf16 · context 2,048 tokens · floor: compute, memory and communication
overlap perfectly · $2.00 per chip-hour (an operator's assumed rental cost)
"""

from __future__ import annotations

from dataclasses import dataclass

from numpy.typing import ArrayLike

from llmmath.core._constraints import OneOf
from llmmath.core.chip_prices import example_price, list_example_prices
from llmmath.core.contracts import SCALAR, checked, contract
from llmmath.core.deployment import DEPLOYMENT, Deployment
from llmmath.core.models import check_context
from llmmath.core.serving import OVERLAP_RULES, DecodeStep, decode_step

#: How each overlap rule reads in a setting's line.
OVERLAP_WORDS = {
    "perfect": "floor: compute, memory and communication overlap perfectly",
    "none": "serial estimate: each operation after the other, communication not hidden",
}


@dataclass(frozen=True)
@checked(
    deployment=DEPLOYMENT,
    context=SCALAR,
    overlap=OneOf(OVERLAP_RULES),
)
class Setting:
    """The setting of a worked example: ``deployment`` (model, chips, layout, formats,
    efficiencies, price) serving sequences of ``context`` tokens, its steps added up under
    ``overlap`` (``"perfect"``: the floor; ``"none"``: the serial estimate). Communication is
    counted exactly when the deployment has a layout spanning more than one chip."""

    deployment: Deployment
    context: float
    overlap: str = "perfect"

    def __post_init__(self) -> None:
        # The context must be one the model takes (its maximum); the type was checked.
        check_context(self.deployment.model, self.context)
        object.__setattr__(self, "context", float(self.context))

    @property
    def communication_counted(self) -> bool:
        """True where the step pays its layout's collectives (a layout over several chips)."""
        dep = self.deployment
        return dep.layout is not None and dep.n_chips > 1

    @contract()
    def step(self, batch: ArrayLike, *, allow_overflow: bool = False) -> DecodeStep:
        """A decode step of ``batch`` sequences in this setting."""
        return decode_step(
            self.deployment,
            batch,
            self.context,
            overlap=self.overlap,
            allow_overflow=allow_overflow,
        )

    def _layout_words(self) -> str:
        dep = self.deployment
        where = f"{dep.model.name} on {dep.n_chips}×{dep.chip.name}"
        if dep.weight_bytes_per_chip > dep.usable_hbm_bytes_per_chip:  # allow_overflow
            where += " (a what-if: the weights do not fit)"
        if dep.layout is None:
            if dep.n_chips == 1:
                return where
            return f"{where}, spread evenly (no communication counted)"
        layout = dep.layout
        counted = []
        if layout.tp > 1:
            counted.append("TP all-reduces")
        if layout.ep > 1:
            counted.append(f"EP all-to-alls of {dep.dispatch_words}")
        if layout.pp > 1:
            counted.append("PP hops")
        what = f"{', '.join(counted)} counted" if counted else "no collectives at decode"
        return f"{where} as {layout} ({what})"

    def _format_words(self) -> str:
        dep = self.deployment
        weights = (
            dep.weight_format.description if dep.weight_format is not None else dep.weight_dtype
        )
        return (
            f"weights {weights}, KV cache {dep.kv_dtype}, matmuls {dep.compute_dtype}, "
            f"attention {dep.attention_compute_dtype}"
        )

    def _knob_words(self) -> str:
        dep = self.deployment
        knobs = [
            f"{value:.0%} of peak {what}"
            for value, what in (
                (dep.flops_efficiency, "FLOP/s"),
                (dep.bandwidth_efficiency, "bandwidth"),
            )
            if value != 1.0
        ]
        return ", ".join(knobs) if knobs else "datasheet peaks"

    def _price_words(self) -> str:
        dep = self.deployment
        if dep.usd_per_chip_hour is not None:
            return f"${dep.usd_per_chip_hour:.2f} per chip-hour"
        if dep.chip.name not in list_example_prices():
            return f"no price (no example price for {dep.chip.name})"
        price = example_price(dep.chip)
        return f"${price.usd_per_chip_hour:.2f} per chip-hour ({price.kind})"

    def describe(self) -> str:
        """The setting in one line: model and chips with the layout and what communication it
        counts, the formats, the context, the overlap rule, the efficiencies where they are not
        the datasheet's, and the price the costs use."""
        parts = [
            self._layout_words(),
            self._format_words(),
            f"context {self.context:,.0f} tokens",
            OVERLAP_WORDS[self.overlap],
        ]
        knobs = self._knob_words()
        if knobs != "datasheet peaks":
            parts.append(knobs)
        parts.append(self._price_words())
        return " · ".join(parts)

    def __str__(self) -> str:
        return self.describe()


__all__ = ["OVERLAP_WORDS", "Setting"]

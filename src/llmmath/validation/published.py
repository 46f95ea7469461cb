"""How good are the floors? The package's roofline floors next to published measurements.

Each comparison puts a floor computed by the package's own functions (``batching``,
``scaling``, ``measure``) beside what a real system reached, and reports the implied
efficiency ``floor / measured``: 1.0 would mean the system ran at the datasheet roofline; a
real one is always slower, so for a floor the efficiency is at most 1. No formula is
re-derived here; the setups are read from ``data/measurements.toml``.

Every time here is a FLOOR at the datasheet peaks (efficiency knobs at 1.0): communication
between chips, kernel launches and imperfect overlap are left out, so the measured times are
longer.

>>> from llmmath.validation import published
>>> round(published.gpt3_training_days(8.0))
34
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmmath.core import data
from llmmath.core._checks import choice, positive, positive_int
from llmmath.core._constraints import Instance, OneOf, SequenceOf
from llmmath.core.contracts import FLAG, NAME, SCALAR_POSITIVE, checked, contract
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.measure import MachineRoofline
from llmmath.core.serving import decode_step, prefill
from llmmath.core.training import TRAINING_FLOPS_PER_PARAM_TOKEN, training_flops
from llmmath.core.units import SECONDS_PER_DAY, general
from llmmath.scaling import TABLE3, training_time_s

KINDS = ("decode", "prefill_mfu", "training", "table3")


@dataclass(frozen=True)
@checked(
    inside=True,  # built from the measurements table
    name=NAME,
    floor=SCALAR_POSITIVE,
    measured=SCALAR_POSITIVE,
    unit=NAME,
    is_floor=FLAG,
)
class Comparison:
    """One floor beside one measurement, in the same ``unit``.

    ``is_floor`` is False for identities that are not lower bounds (Chinchilla's compute vs
    ``6 N D``): there the ratio should be close to 1 from either side.
    """

    name: str
    floor: float
    measured: float
    unit: str
    source: str
    source_date: str = ""
    is_floor: bool = True

    def __post_init__(self) -> None:
        for attribute in ("floor", "measured"):  # checked by @checked; made plain floats
            object.__setattr__(self, attribute, float(getattr(self, attribute)))

    @property
    def efficiency(self) -> float:
        """``floor / measured``: the fraction of the roofline the real system reached."""
        return self.floor / self.measured


# ---- the published measurements ------------------------------------------------------------
@contract()
def load_measurements() -> dict[str, dict[str, Any]]:
    """Every table of ``data/measurements.toml``, by key; each has a known ``kind``,
    ``source`` and ``source_date``."""
    tables: dict[str, dict[str, Any]] = data.table("measurements")
    for key, spec in tables.items():
        choice(f"{key}: kind", spec.get("kind"), KINDS)
        for required in ("label", "units", "source", "source_date"):
            if not spec.get(required):
                raise ValueError(f"measurement {key!r} is missing {required}")
    return tables


def _spec(key: str, kind: str) -> dict[str, Any]:
    tables = load_measurements()
    spec = tables[choice("measurement", key, tables)]
    if spec["kind"] != kind:
        raise ValueError(f"measurement {key!r} is of kind {spec['kind']!r}, not {kind!r}")
    return spec


def _deployment(spec: dict[str, Any]) -> Deployment:
    return Deployment(
        spec["model"],
        spec["chip"],
        positive_int("n_chips", spec["n_chips"]),
        compute_dtype=spec["compute_dtype"],
        weight_dtype=spec["weight_dtype"],
        kv_dtype=spec["kv_dtype"],
    )


@contract(key=OneOf(lambda: load_measurements(), "measurement"))
def decode_comparison(key: str = "palm-540b-decode") -> Comparison:
    """A measured time per output token beside the decode-step floor
    :func:`llmmath.batching.decode_step` ``(...).time_s`` of the same setup (weights and KV
    read at full bandwidth, matmuls at full peak; no communication)."""
    spec = _spec(key, "decode")
    step = decode_step(_deployment(spec), spec["batch"], spec["context"])
    return Comparison(
        spec["label"],
        float(step.time_s),
        spec["value"],
        spec["units"],
        spec["source"],
        spec["source_date"],
    )


@contract(key=OneOf(lambda: load_measurements(), "measurement"))
def prefill_comparison(key: str = "palm-540b-prefill") -> Comparison:
    """A published prefill MFU turned into time: the measured pass took
    ``FLOPs / (MFU * n * C)`` (the package's FLOP count of :func:`llmmath.batching.prefill`),
    beside that pass's roofline floor. When the floor is compute-bound the efficiency is the
    MFU itself; the check is that the package finds the pass compute-bound."""
    spec = _spec(key, "prefill_mfu")
    dep = _deployment(spec)
    step = prefill(dep, spec["prompt_tokens"], spec["batch"])
    published_mfu = float(positive("MFU", spec["value"]))
    measured_s = float(step.flops) / (published_mfu * dep.peak_flop_per_s)
    floor_s = float(step.time_s)
    return Comparison(
        spec["label"], floor_s, measured_s, "s per pass", spec["source"], spec["source_date"]
    )


@contract(
    flops_per_param_token=SCALAR_POSITIVE, key=OneOf(lambda: load_measurements(), "measurement")
)
def gpt3_training_days(
    flops_per_param_token: float = 8.0, key: str = "gpt3-175b-megatron-training"
) -> float:
    """Days to train at the published per-GPU throughput, counting
    ``flops_per_param_token * N * D`` FLOPs: ``8 N D`` (with activation recomputation) is how
    Narayanan et al. reach ~34 days; ``6 N D`` gives 3/4 of it. Uses
    :func:`llmmath.scaling.training_time_s` with MFU = achieved / peak."""
    spec = _spec(key, "training")
    per_param_token = float(flops_per_param_token)
    scale = per_param_token / TRAINING_FLOPS_PER_PARAM_TOKEN
    flops = float(training_flops(spec["params"], spec["tokens"])) * scale
    peak = get_chip(spec["chip"]).peak(spec["compute_dtype"])
    achieved = float(positive("achieved_flop_per_s", spec["achieved_flop_per_s"]))
    utilisation = achieved / peak
    seconds = training_time_s(flops, spec["n_chips"], spec["chip"], utilisation)
    return float(seconds) / SECONDS_PER_DAY


@contract(key=OneOf(lambda: load_measurements(), "measurement"))
def training_comparison(key: str = "gpt3-175b-megatron-training") -> Comparison:
    """The published training time beside the floor ``6 N D / (n C)`` at 100% MFU
    (:func:`llmmath.scaling.training_time_s`); the efficiency is the MFU counted with
    ``6 N D`` (recomputation is work the floor does not need)."""
    spec = _spec(key, "training")
    flops = training_flops(spec["params"], spec["tokens"])
    floor_s = training_time_s(flops, spec["n_chips"], spec["chip"], 1.0, spec["compute_dtype"])
    return Comparison(
        spec["label"],
        float(floor_s) / SECONDS_PER_DAY,
        spec["value"],
        spec["units"],
        spec["source"],
        spec["source_date"],
    )


@contract(key=OneOf(lambda: load_measurements(), "measurement"))
def chinchilla_comparisons(key: str = "chinchilla-table3") -> tuple[Comparison, ...]:
    """Each row of Chinchilla's Table 3 (:data:`llmmath.scaling.TABLE3`): ``6 N D`` beside the
    published compute. Not a floor: the ratio should be within a few % of 1 either way."""
    spec = _spec(key, "table3")
    return tuple(
        Comparison(
            f"Chinchilla Table 3, {general(row.params)} params",
            float(training_flops(row.params, row.tokens)),
            row.flops,
            spec["units"],
            spec["source"],
            spec["source_date"],
            is_floor=False,
        )
        for row in TABLE3
    )


@contract()
def published_comparisons() -> tuple[Comparison, ...]:
    """Every published case of ``data/measurements.toml``, in the file's order."""
    cases: list[Comparison] = []
    for key, spec in load_measurements().items():
        if spec["kind"] == "decode":
            cases.append(decode_comparison(key))
        elif spec["kind"] == "prefill_mfu":
            cases.append(prefill_comparison(key))
        elif spec["kind"] == "training":
            cases.append(training_comparison(key))
        else:
            cases.extend(chinchilla_comparisons(key))
    return tuple(cases)


# ---- the reader's own machine ----------------------------------------------------------------
@contract(machine=Instance(MachineRoofline))
def machine_comparisons(machine: MachineRoofline) -> tuple[Comparison, Comparison]:
    """The lowest- and highest-intensity matmul of a :func:`llmmath.core.measure.measure_machine`
    sweep: the roofline prediction built from the measured peak and bandwidth
    (:attr:`MachineRoofline.sweep_predicted_s`) beside the measured time."""
    if not isinstance(machine, MachineRoofline):
        raise TypeError(
            f"machine must be a llmmath.core.measure.MachineRoofline; got {type(machine).__name__}"
        )
    intensity = machine.sweep_intensity
    low, high = int(np.argmin(intensity)), int(np.argmax(intensity))
    predicted, measured = machine.sweep_predicted_s, machine.sweep_measured_s
    cases = []
    for index, what in ((low, "low"), (high, "high")):
        batch = int(machine.sweep_batch[index])
        cases.append(
            Comparison(
                f"this CPU, {what} intensity: {batch} × {machine.sweep_dim} by "
                f"{machine.sweep_dim} × {machine.sweep_dim} float32 matmul",
                float(predicted[index]),
                float(measured[index]),
                "s",
                "measured at build time (llmmath.core.measure.measure_machine)",
            )
        )
    return cases[0], cases[1]


# Units shown in the table: small times read better in milliseconds.
_DISPLAY_UNITS = {"s/token": (1e3, "ms/token"), "s": (1e3, "ms")}


def _with_unit(value: float, unit: str) -> str:
    scale, shown = _DISPLAY_UNITS.get(unit, (1.0, unit))
    return f"{general(value * scale)} {shown}"


@contract(comparisons=SequenceOf(Instance(Comparison)))
def checked_comparisons(comparisons: Sequence[Comparison]) -> Sequence[Comparison]:
    """``comparisons`` if it holds at least one, and only, :class:`Comparison`; else an error."""
    if not comparisons:
        raise ValueError("comparisons must hold at least one Comparison")
    for item in comparisons:
        if not isinstance(item, Comparison):
            raise TypeError(
                "comparisons must hold llmmath.validation.published.Comparison; "
                f"got {type(item).__name__}"
            )
    return comparisons


@contract(comparisons=SequenceOf(Instance(Comparison)))
def comparison_table(comparisons: Sequence[Comparison]) -> str:
    """A Markdown table: case, floor, measured (with units) and the implied efficiency."""
    lines = ["| case | floor | measured | floor / measured |", "|---|--:|--:|--:|"]
    for c in checked_comparisons(comparisons):
        lines.append(
            f"| {c.name} | {_with_unit(c.floor, c.unit)} | {_with_unit(c.measured, c.unit)} | "
            f"{c.efficiency:.2f} |"
        )
    return "\n".join(lines)


__all__ = [
    "Comparison",
    "checked_comparisons",
    "chinchilla_comparisons",
    "comparison_table",
    "decode_comparison",
    "gpt3_training_days",
    "load_measurements",
    "machine_comparisons",
    "prefill_comparison",
    "published_comparisons",
    "training_comparison",
]

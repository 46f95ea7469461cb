"""A "focus machine": a small model on the computer on your desk, bounded by its memory.

On one machine serving one user, a decode step is a batch of 1: it reads every matmul weight
once (and the sequence's KV cache) for one token. So the machine's memory bandwidth ``W`` sets
a **ceiling** on tokens per second, ``W / bytes read per token``, whatever its FLOP/s, and
its memory size says which models fit at all. Both numbers are bounds: a real runtime reaches
a fraction of ``W`` (the roofline chapter's measured sweep shows how large).

A mixture of experts at batch 1 reads only its active weights (the experts one token is
routed to) while its memory must hold them all: Gemma 4's 26B A4B reads about 3.8e9 of its
25.2e9 parameters per token, so on a desk sparsity buys bandwidth at the price of memory.

The machines and the Gemma 3 shapes are in ``data/serving_modes.toml`` (``focus_machines``,
``focus_models``), Gemma 4's in ``data/models.toml``; a measured
:class:`~llmmath.core.measure.MachineRoofline` stands in for your own.

>>> from llmmath.beyond import focus
>>> mac = focus.get_focus_machine("Mac-mini-M4-Pro")
>>> round(float(focus.local_decode(mac, "Gemma-3-27B", "int4").tokens_per_s), 1)
20.2
>>> round(float(focus.local_decode(mac, "Gemma-4-26B-A4B", "int4").tokens_per_s))
143
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmmath.core import data
from llmmath.core._constraints import AnyOf, Instance, OneOf, SequenceOf
from llmmath.core.contracts import (
    NAME,
    NOTE,
    RESULT,
    SCALAR,
    SCALAR_FRACTION,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.dtypes import DTYPE, bytes_per_element
from llmmath.core.measure import MachineRoofline
from llmmath.core.models import (
    ModelConfig,
    get_model,
    list_models,
    model_from_dict,
    weight_params_read,
)


# ---- machines -------------------------------------------------------------------------------
@dataclass(frozen=True)
@checked(
    name=NAME,
    full_name=NOTE,
    memory_bytes=SCALAR_POSITIVE,
    bandwidth_bytes_per_s=SCALAR_POSITIVE,
    usable_fraction=SCALAR_FRACTION,
    **each(NOTE, "source source_date"),
)
class FocusMachine:
    """A computer running a model for one user: its memory, the share a model may use, and
    its memory bandwidth (datasheet or measured)."""

    name: str
    full_name: str
    memory_bytes: float
    bandwidth_bytes_per_s: float
    usable_fraction: float = 1.0
    source: str = ""
    source_date: str = ""

    @property
    def usable_bytes(self) -> float:
        return self.memory_bytes * self.usable_fraction


def _machines() -> dict[str, FocusMachine]:
    table = data.table("serving_modes")["focus_machines"]
    return {name: FocusMachine(name=name, **spec) for name, spec in table.items()}


@contract()
def list_focus_machines() -> list[str]:
    """Names of the example machines in ``data/serving_modes.toml``."""
    return list(_machines())


@contract(name=OneOf(list_focus_machines, "focus machine"))
def get_focus_machine(name: str) -> FocusMachine:
    """One example machine by name."""
    machines = _machines()
    return machines[name]


#: A measured roofline for the contract's example (not a measurement).
_EXAMPLE_MEASURED = MachineRoofline(1e11, 5e10, np.ones(1), 64, np.ones(1), np.ones(1), np.ones(1))


@contract(
    measured=Instance(MachineRoofline, example=lambda: _EXAMPLE_MEASURED),
    memory_bytes=SCALAR_POSITIVE,
    usable_fraction=SCALAR_FRACTION,
)
def measured_machine(
    measured: MachineRoofline, memory_bytes: float, usable_fraction: float = 0.75
) -> FocusMachine:
    """Your machine: the bandwidth :func:`~llmmath.core.measure.measure_machine` achieved, and the
    memory you say it has (``usable_fraction`` of it for the model)."""
    return FocusMachine(
        name="this machine",
        full_name="the machine that ran measure_machine()",
        memory_bytes=float(memory_bytes),
        bandwidth_bytes_per_s=float(measured.bandwidth_bytes_per_s),
        usable_fraction=float(usable_fraction),
        source="measured with llmmath.core.measure.measure_machine",
    )


# ---- small models -----------------------------------------------------------------------------
def _focus_models() -> dict[str, ModelConfig]:
    table = data.table("serving_modes")["focus_models"]
    return {name: model_from_dict(name, spec) for name, spec in table.items()}


@contract()
def list_focus_models() -> list[str]:
    """The Gemma 3 shapes of ``data/serving_modes.toml`` (4B, 12B, 27B); Gemma 4's are
    presets of ``data/models.toml``."""
    return list(_focus_models())


FOCUS_MODEL = AnyOf(
    (
        OneOf(lambda: [*list_focus_models(), *list_models()], "model"),
        Instance(ModelConfig, example=lambda: _focus_models()["Gemma-3-4B"]),
    )
)


@contract(model=FOCUS_MODEL)
def get_focus_model(model: str | ModelConfig) -> ModelConfig:
    """A Gemma 3 shape or a model preset by name (a :class:`ModelConfig` passes through)."""
    if isinstance(model, ModelConfig):
        return model
    models = _focus_models()
    if model in models:
        return models[model]
    return get_model(model)


# ---- one user's tokens per second -------------------------------------------------------------
@dataclass(frozen=True)
@checked(
    machine=Instance(FocusMachine, example=lambda: get_focus_machine("RTX-4090")),
    model=Instance(ModelConfig, example=lambda: _focus_models()["Gemma-3-4B"]),
    weight_dtype=NOTE,
    kv_dtype=NOTE,
    context=SCALAR,
    **each(RESULT, "weight_bytes weight_read_bytes kv_bytes bytes_per_token time_s"),
)
class LocalDecode:
    """One user's decode on a focus machine: the bytes each token reads, and what fits."""

    machine: FocusMachine
    model: ModelConfig
    weight_dtype: str
    kv_dtype: str
    context: float
    #: Every weight as stored (what must fit in memory).
    weight_bytes: float
    #: The matmul weights one token reads: all of a dense model's, the active ones of an MoE.
    weight_read_bytes: float
    #: The sequence's KV cache at ``context``.
    kv_bytes: float
    #: Bytes one token reads: the matmul weights once, and the KV cache.
    bytes_per_token: float
    #: ``bytes_per_token / W``: no token comes faster.
    time_s: float

    @property
    def tokens_per_s(self) -> float:
        """The ceiling on one user's tokens per second: ``W / bytes per token``."""
        return 1.0 / self.time_s

    @property
    def memory_needed_bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes

    @property
    def fits(self) -> bool:
        """True if the weights and the KV cache fit in the machine's usable memory."""
        return self.memory_needed_bytes <= self.machine.usable_bytes


@contract(
    machine=Instance(FocusMachine, example=lambda: get_focus_machine("RTX-4090")),
    model=FOCUS_MODEL,
    context=SCALAR,
)
def local_decode(
    machine: FocusMachine,
    model: str | ModelConfig,
    weight_dtype: str = "int4",
    context: float = 0.0,
    kv_dtype: str = "bf16",
) -> LocalDecode:
    """Batch-1 decode of ``model`` on ``machine``: time per token at least
    ``(P_read b_w + T kv(T)) / W``, ``P_read`` the matmul weights one token uses (an MoE's
    active ones) and ``T kv(T)`` the sequence's cache, exact for sliding-window layers
    (:meth:`~llmmath.core.models.ModelConfig.kv_bytes_per_token` at ``context``)."""
    spec = get_focus_model(model)
    T = float(context)
    if spec.max_context < T:
        raise ValueError(f"context must be <= {spec.name}'s max_context={spec.max_context}")
    weights_read = float(weight_params_read(spec, 1.0)) * bytes_per_element(weight_dtype)
    kv = T * float(spec.kv_bytes_per_token(kv_dtype, T))
    bytes_per_token = weights_read + kv
    return LocalDecode(
        machine=machine,
        model=spec,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        context=T,
        weight_bytes=spec.weight_bytes(weight_dtype),
        weight_read_bytes=weights_read,
        kv_bytes=kv,
        bytes_per_token=bytes_per_token,
        time_s=bytes_per_token / machine.bandwidth_bytes_per_s,
    )


# ---- the table the lesson shows -----------------------------------------------------------------
@contract(
    machine=Instance(FocusMachine, example=lambda: get_focus_machine("RTX-4090")),
    models=SequenceOf(FOCUS_MODEL),
    dtypes=SequenceOf(DTYPE),
    context=SCALAR,
)
def focus_markdown(
    machine: FocusMachine,
    models: tuple[str, ...] = ("Gemma-4-26B-A4B", "Gemma-4-31B"),
    dtypes: tuple[str, ...] = ("int8", "int4"),
    context: float = 4096.0,
) -> str:
    """A markdown table: for each model and weight format, GB to hold (weights and cache),
    GB one token reads, the tokens/s ceiling, and whether it fits in usable memory."""
    header = "| model | weights | GB to hold | GB read per token | tokens/s at most | fits? |"
    lines = [header, "|---|---|---|---|---|---|"]
    for name in models:
        for dtype in dtypes:
            run = local_decode(machine, name, dtype, context)
            fits = "yes" if run.fits else "**no**"
            lines.append(
                f"| {run.model.name} | {dtype} | {run.memory_needed_bytes / 1e9:.1f} | "
                f"{run.bytes_per_token / 1e9:.2f} | {run.tokens_per_s:.0f} | {fits} |"
            )
    return "\n".join(lines)


__all__ = [
    "FocusMachine",
    "LocalDecode",
    "focus_markdown",
    "get_focus_machine",
    "get_focus_model",
    "list_focus_machines",
    "list_focus_models",
    "local_decode",
    "measured_machine",
]

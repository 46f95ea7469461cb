"""How the ``llmmath`` command shows its answers (aligned tables with units, or JSON) and
reads the numbers it is given (suffixes, ranges, bounds, one-line errors naming the option).

A :class:`Report` holds what a subcommand found twice over: ``data`` (plain numbers in SI
units, for ``--json``) and the lines people read (a heading, settings, tables, notes).

>>> print(table(["batch", "step ms"], [["1", "5.19"], ["256", "12.3"]]))
batch  step ms
-----  -------
    1     5.19
  256     12.3
>>> ms(0.0051934), si(2_147_483_648, "B"), count(123456.7)
('5.19', '2.15 GB', '123,457')
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llmmath.core import hardware
from llmmath.core.dtypes import BYTES_PER_ELEMENT
from llmmath.core.hf_quant import KVCacheDtype
from llmmath.core.models import ModelConfig
from llmmath.core.placement import Layout, with_redundant_experts

#: Said under every table of times: the model's numbers are lower bounds.
FLOOR_NOTE = (
    "Floors, not promises: at {flops:.0%} of the datasheet FLOP/s and {bandwidth:.0%} of its "
    "bandwidth,\nwith {rule}. Real systems are slower: lower --efficiency to model them."
)

#: Short names of the links a collective crosses (see llmmath.core.placement.Group.link).
LINK_NAMES = {"scale-up": "up", "scale-out": "out", "scale-up + scale-out": "up+out"}

_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]


@dataclass
class Report:
    """One subcommand's answer: ``data`` for ``--json``, ``lines`` for people."""

    data: dict[str, Any]
    lines: list[str] = field(default_factory=list)

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def render(self, as_json: bool) -> str:
        if as_json:
            return json.dumps(plain(self.data), indent=2)
        return "\n".join(self.lines)


def plain(value: Any) -> Any:
    """``value`` with numpy numbers as floats and infinities or NaN as None (valid JSON)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if hasattr(value, "ndim") and value.ndim:
        return [plain(v) for v in value.tolist()]
    number = float(value)
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell: text left-aligned, numbers right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    numeric = [all(_numeric(row[i]) for row in rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        padded = [
            cell.rjust(w) if right else cell.ljust(w)
            for cell, w, right in zip(cells, widths, numeric, strict=True)
        ]
        return "  ".join(padded).rstrip()

    rule = ["-" * w for w in widths]
    return "\n".join([line(header), line(rule), *(line(row) for row in rows)])


def _numeric(cell: str) -> bool:
    """A number, maybe with a currency sign, separators and a unit: ``$1.89``, ``8.03B``,
    ``131 kB``, ``12.5%`` (right-aligned in a table)."""
    return cell in ("-", "inf") or re.fullmatch(r"\$?-?[\d,]*\.?\d+ ?[A-Za-z%]*", cell) is not None


def sig(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures, without exponent for everyday sizes."""
    if not math.isfinite(value):
        return "inf" if value > 0 else "-"
    if value == 0:
        return "0"
    places = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    return f"{value:,.{places}f}"


def ms(seconds: float) -> str:
    """Seconds shown in milliseconds, three significant figures."""
    return sig(seconds * 1e3)


def si(value: float, unit: str) -> str:
    """A decimal-prefixed quantity: ``si(2.15e9, "B") == "2.15 GB"``."""
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{sig(value / scale)} {prefix}{unit}"
    return f"{sig(value)} {unit}"


def count(value: float) -> str:
    """A whole count with thousands separators (``inf`` where unbounded)."""
    return f"{value:,.0f}" if math.isfinite(value) else "inf"


def params(value: float) -> str:
    """A parameter count in billions (decimal): ``params(7.06e10) == "70.6B"``."""
    return f"{sig(value / 1e9)}B"


def short(value: float) -> str:
    """A large count with a decimal suffix and no space: ``short(1.56e13) == "15.6T"``."""
    return si(value, "").replace(" ", "")


def usd(value: float | None) -> str:
    """A price in dollars, three significant figures; ``-`` where there is no price."""
    if value is None or not math.isfinite(value):
        return "-"
    return "$" + (short(value) if value >= 1e6 else sig(value))


def percent(share: float) -> str:
    return f"{share * 100:.1f}%"


# ---- numbers in: what the command reads --------------------------------------------------
#: The most values one range (START:STOP) may expand to.
MAX_VALUES = 1_000_000
_UNITS_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
#: Number suffixes: k, M, G, T are powers of 1,000 (8k = 8,000); Ki, Mi, Gi, Ti of 1,024.
SUFFIXES = {
    "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40,
}  # fmt: skip
NUMBERS = "k, M, G, T = 1e3, 1e6, 1e9, 1e12 (8k = 8,000); Ki, Mi = 1,024, 1,024^2 (8Ki = 8,192)"


class InputError(ValueError):
    """Input the command cannot use: shown as one line, exit status 2."""


def did_you_mean(text: str, known: Sequence[str]) -> str:
    """``"; did you mean 'X'?"`` for the closest of ``known`` (case ignored), or ``""``."""
    lowered = {k.lower(): k for k in known}
    close = difflib.get_close_matches(text.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[close[0]]!r}?" if close else ""


def parse_number(text: str, name: str, *, whole: bool = False, low: float | None = None) -> float:
    """``"15e12"``, ``"15T"``, ``"16M"``, ``"8Ki"`` -> a finite float (:data:`SUFFIXES`);
    ``whole`` refuses fractions, ``low`` anything below it."""
    suffix = next((s for s in ("Ki", "Mi", "Gi", "Ti") if text.endswith(s)), text[-1:])
    scale = SUFFIXES.get(suffix, 1.0) if text else 1.0
    body = text[: -len(suffix)] if scale != 1.0 else text
    try:
        value = float(body.replace("_", "")) * scale
    except ValueError:
        raise InputError(f"{name} {text!r} is not a number (e.g. 8192, 8k, 15e12)") from None
    return _bounded(value, name, whole=whole, low=low)


def _bounded(value: float, name: str, *, whole: bool, low: float | None) -> float:
    if not math.isfinite(value):
        raise InputError(f"{name} must be a finite number; got {value}")
    if whole and not value.is_integer():
        raise InputError(f"{name} must be a whole number; got {value:g}")
    if low is not None and value < low:
        raise InputError(f"{name} must be >= {low:g}; got {value:g}")
    return value


def parse_values(
    text: str, name: str, *, whole: bool = False, low: float | None = None
) -> list[float]:
    """``"1,16,64"`` and ranges ``"1:1000"`` or ``"1024:8192:1024"`` -> numbers."""
    values: list[float] = []
    for part in filter(None, text.split(",")):
        if ":" in part:
            bounds = [parse_number(p, name) for p in part.split(":")]
            if len(bounds) not in (2, 3) or (len(bounds) == 3 and bounds[2] <= 0):
                raise InputError(f"{name} range {part!r} is not START:STOP[:STEP]")
            start, stop, stride = bounds[0], bounds[1], bounds[2] if len(bounds) == 3 else 1.0
            n = int((stop - start) // stride) + 1
            if n > MAX_VALUES:
                raise InputError(
                    f"{name} range {part!r} gives {n:,} values; at most {MAX_VALUES:,}"
                )
            if n < 1:
                raise InputError(f"{name} range {part!r} is empty (STOP below START)")
            values.extend(start + stride * i for i in range(n))
        else:
            values.append(parse_number(part, name))
    if not values:
        raise InputError(f"{name} {text!r} holds no numbers")
    return [_bounded(value, name, whole=whole, low=low) for value in values]


def parse_share(text: str, name: str, n: tuple[int, ...] = (1,)) -> list[float]:
    """Shares in (0, 1] (efficiencies, an HBM share): ``n`` says how many may be given."""
    values = parse_values(text, name)
    if len(values) not in n or not all(0 < v <= 1 for v in values):
        raise InputError(f"{name} values must be in (0, 1], {' or '.join(map(str, n))} of them; "
                         f"got {text!r}")  # fmt: skip
    return values


def parse_latency(text: str) -> float:
    """``"30ms"`` -> 0.03 s; a unit (us, ms, s) is required."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(us|µs|ms|s)\s*", text)
    if not match and re.fullmatch(r"\s*[0-9.eE+-]+\s*", text):
        raise InputError(f"--latency {text!r} needs a unit, e.g. 30ms or 0.03s")
    if not match:  # e.g. nanms: the unit is there, the number is not
        raise InputError(f"--latency {text!r} is not a time > 0 with a unit (us, ms or s), "
                         "e.g. 30ms or 0.03s")  # fmt: skip
    value = parse_number(match.group(1), "--latency") * _UNITS_S[match.group(2)]
    if not value > 0:
        raise InputError(f"--latency must be > 0; got {text!r}")
    return value


def parse_tokens(text: str, name: str, model: ModelConfig) -> list[float]:
    """Context or prompt lengths: whole numbers from 1 to the model's ``max_context``."""
    values = parse_values(text, name, whole=True, low=1)
    worst = max(values)
    if worst > model.max_context:
        raise InputError(
            f"{name} must be <= {model.name}'s max_context={model.max_context:,} tokens; "
            f"got {worst:,.0f}"
        )
    return values


def parse_length(text: str, name: str, model: ModelConfig) -> float:
    """One context or prompt length (:func:`parse_tokens` of a single value)."""
    values = parse_tokens(text, name, model)
    if len(values) != 1 or re.search(r"[,:]", text):
        raise InputError(f"{name} takes one length here; got {text!r}")
    return values[0]


def without_function_name(message: str) -> str:
    """A package error without the prefix naming the function it came from
    (``serving.decode_step():`` and the space after it)."""
    return re.sub(r"^[\w.]+\(\): ", "", message)


#: What each source of the KV cache's format says about it (:func:`kv_cache_words`).
KV_SOURCE_WORDS = {
    "given": "set by --kv-dtype",
    "kv_cache_scheme": "from the checkpoint's kv_cache_scheme",
    "checkpoint_dtype": "checkpoint dtype",
    "default": "default",
}


def kv_cache_words(kv: KVCacheDtype) -> str:
    """Where the KV cache's format came from, in words: ``"checkpoint dtype; --kv-dtype fp8
    to change"`` (a 16-bit cache that was not asked for says how to ask for fp8)."""
    words = KV_SOURCE_WORDS[kv.source]
    if kv.source == "checkpoint_dtype" and kv.checkpoint != kv.dtype:
        words = f"checkpoint {kv.checkpoint}, served in {kv.dtype}"
    if kv.source != "given" and kv.dtype in ("bf16", "fp16"):
        words += "; --kv-dtype fp8 to change"
    return words


def parse_dtype(text: str, flag: str) -> str:
    """A number format the package knows (``bf16``, ``fp8``, ``nvfp4``, ...)."""
    if text not in BYTES_PER_ELEMENT:
        known = list(BYTES_PER_ELEMENT)
        raise InputError(
            f"{flag} {text!r} is not a number format{did_you_mean(text, known)} "
            f"(known: {', '.join(known)})"
        )
    return text


def parse_price(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise InputError(f"--price must be > 0 USD per chip-hour; got {value}")
    return value


def parse_cluster(text: str) -> tuple[str, int]:
    """``"H100x8"`` -> ``("H100", 8)``; a bare chip name is one chip."""
    if text in hardware.list_chips():
        return text, 1
    match = re.fullmatch(r"(.+?)[x×](\d+)", text.strip())
    if not match or int(match.group(2)) < 1:
        raise InputError(f"cluster {text!r} is not CHIPxN, e.g. H100x8")
    chip = match.group(1)
    if chip not in hardware.list_chips():
        chips = hardware.list_chips()
        raise InputError(
            f"unknown chip {chip!r}{did_you_mean(chip, chips)} (known: {', '.join(chips)}; "
            "add one with --chip-file)"
        )
    return chip, int(match.group(2))


def _degrees(text: str) -> tuple[dict[str, int], bool]:
    """The degrees a ``--layout`` names (each axis once), and whether it says ``emb``."""
    degrees: dict[str, int] = {}
    parts = [p for p in re.split(r"[,\s]+", text.strip().lower()) if p]
    for part in parts:
        if part == "emb":
            continue
        match = re.fullmatch(r"(tp|pp|ep|dp|zero)(\d+)", part)
        if part in ("tp", "pp", "ep", "dp", "zero"):
            raise InputError(f"--layout part {part!r} needs a degree, e.g. {part}2")
        if not match:
            raise InputError(
                f"--layout part {part!r} is not tpN, ppN, epN, dpN, zeroN or emb"
                + did_you_mean(re.sub(r"\d+", "", part), ("tp", "pp", "ep", "dp", "zero", "emb"))
            )
        axis, degree = match.group(1), int(match.group(2))
        if axis in degrees:
            raise InputError(f"--layout {text!r} names {axis} twice: give each axis once")
        if degree < (0 if axis == "zero" else 1):
            raise InputError(f"--layout part {part!r}: a degree must be >= 1")
        degrees[axis] = degree
    if degrees.get("zero", 0) > 3:
        raise InputError(f"--layout part 'zero{degrees['zero']}': ZeRO stages are 0 to 3")
    return degrees, "emb" in parts


def given_layout(text: str | None) -> str | None:
    """``--layout`` as given, or None where it was not; a given one naming no axis (``""``,
    ``","``) is refused rather than read as no layout."""
    if text is not None and not [p for p in re.split(r"[,\s]+", text) if p]:
        raise InputError(f"--layout {text!r} names no axis; give tpN, ppN, epN, dpN, zeroN "
                         "or emb, comma-separated, e.g. tp8 or tp4,pp2")  # fmt: skip
    return text


def parse_layout(text: str, n_chips: int) -> Layout:
    """``"tp8,pp2"`` -> the layout on ``n_chips`` with DP filling the rest; ``zero1`` sets
    ZeRO, ``emb`` counts the embedding and output layers as pipeline slots (as Llama 3 did).
    Each axis may be named once."""
    degrees, emb = _degrees(text)
    zero = degrees.pop("zero", 0)
    dp = degrees.pop("dp", None)
    group = math.prod(degrees.values())
    if n_chips % group:  # said in the flags' words, not the placement's field names
        raise InputError(f"--layout {text!r} needs a chip count divisible by tp x pp x ep = "
                         f"{group}; got {n_chips} chips")  # fmt: skip
    try:
        layout = Layout.for_cluster(n_chips, zero_stage=zero, embedding_as_layers=emb, **degrees)
    except ValueError as error:
        raise InputError(f"--layout {text!r}: {without_function_name(str(error))}") from None
    if dp is not None and dp != layout.dp:
        raise InputError(f"--layout {text!r} on {n_chips} chips leaves dp={layout.dp}, not dp={dp}")
    return layout


def engine_layout(text: str, n_chips: int) -> tuple[str, list[str]]:
    """The engines' ``tpN,epN`` (TP and EP on the same N GPUs: vLLM's
    ``--tensor-parallel-size N --enable-expert-parallel``, SGLang's ``--tp N --ep N``) in the
    course's notation, where ranks multiply: ``epN`` with attention data-parallel on the N
    (DP-attention + EP). Anything else comes back as given."""
    degrees, _ = _degrees(text)
    tp, ep = degrees.get("tp", 1), degrees.get("ep", 1)
    if tp == 1 or ep == 1 or tp * ep * degrees.get("pp", 1) <= n_chips or tp != ep:
        return text, []
    rest = [p for p in re.split(r"[,\s]+", text.strip().lower()) if p and p[:2] not in ("tp", "ep")]
    mapped = ",".join([f"ep{ep}", *rest])
    return mapped, [
        f"--layout {text}: TP and EP on the same {ep} GPUs, as the engines write it, is read "
        f"as {mapped}: experts split {ep} ways and attention data-parallel across them "
        "(SGLang's --enable-dp-attention); vLLM's --enable-expert-parallel keeps attention "
        f"tensor-parallel (--layout tp{tp} models that side: experts split by TP)"
    ]


def place(
    text: str, n_chips: int, model: ModelConfig, redundant: int | None = None
) -> tuple[Layout, ModelConfig, list[str]]:
    """``--layout`` on ``model``: the layout, the model as placed, and notes on how it mapped.

    A pipeline that does not divide the layers gives its first stages one layer more: the
    model is placed as padded to ``pp ceil(L / pp)`` layers, so each stage's time and memory
    are the largest stage's. Expert parallelism that does not divide the experts places
    ``redundant`` copies beside them (the fewest that make ``E + R`` divide, by default), as
    DeepSeek's EPLB does with its hot experts (:mod:`llmmath.beyond.moe_balance`); the placed model
    counts a router column per copy too (0.1% of DeepSeek-V3's bytes with 104 copies).
    """
    text, notes = engine_layout(text, n_chips)
    layout = parse_layout(text, n_chips)
    if redundant is not None and not (model.is_moe and layout.ep > 1):
        raise InputError(f"--redundant-experts is for a MoE model under an ep degree in --layout; "
                         f"{model.name} on {text} has none")  # fmt: skip
    placed = model
    slots = model.n_layers + (2 if layout.embedding_as_layers else 0)
    chunks = layout.pp * layout.virtual_stages
    if slots % chunks and not (not layout.embedding_as_layers and (slots + 2) % chunks == 0):
        most = -(-slots // chunks)
        placed = dataclasses.replace(
            placed,
            n_layers=placed.n_layers + most * chunks - slots,
            name=f"{placed.name} padded to {placed.n_layers + most * chunks - slots} layers",
        )
        notes.append(
            f"pp{layout.pp} does not divide {model.name}'s {slots} layers: stages hold {most} "
            f"or fewer; timed and sized as {placed.n_layers} layers (the largest stage's)"
        )
    if model.is_moe and layout.ep > 1 and (model.n_experts % layout.ep or redundant):
        E = model.n_experts
        try:
            placed = with_redundant_experts(placed, layout.ep, redundant)
        except ValueError as error:  # only a given count can fail to split
            why = without_function_name(str(error)).removeprefix("redundant:")
            raise InputError(f"--redundant-experts {redundant}:{why}") from None
        extra = placed.n_experts - E
        notes.append(
            f"ep{layout.ep} holds {E} experts and {extra} redundant copies, "
            f"{(E + extra) // layout.ep} a GPU (copies take a hot expert's load, as EPLB does)"
        )
    try:
        layout.validate(placed)
    except ValueError as error:
        message = str(error).replace("(embedding_as_layers=True, ", "(add emb to --layout, ")
        raise InputError(f"--layout {text!r}: {without_function_name(message)}") from None
    return layout, placed, notes


__all__ = [
    "FLOOR_NOTE",
    "KV_SOURCE_WORDS",
    "LINK_NAMES",
    "MAX_VALUES",
    "NUMBERS",
    "SUFFIXES",
    "InputError",
    "Report",
    "count",
    "did_you_mean",
    "engine_layout",
    "given_layout",
    "kv_cache_words",
    "ms",
    "params",
    "parse_cluster",
    "parse_dtype",
    "parse_latency",
    "parse_layout",
    "parse_length",
    "parse_number",
    "parse_price",
    "parse_share",
    "parse_tokens",
    "parse_values",
    "percent",
    "place",
    "plain",
    "short",
    "si",
    "sig",
    "table",
    "usd",
    "without_function_name",
]

"""The ``llmmath serve`` and ``llmmath fit`` reports (a
:class:`~llmmath.cli.formatting.Report` each), and the lines every report opens with: the
heading (model, chips, layout, formats, KV cache, price), the setting line and the floor note,
which the other reports (:mod:`llmmath.cli.search`, :mod:`llmmath.cli.training`,
:mod:`llmmath.cli.plan`) take from here.

Every number comes from the course's package: the decode step and prefill of
:mod:`llmmath.core.serving`, the capacity of :mod:`llmmath.batching` and :mod:`llmmath.kv_cache`.
Nothing here re-derives a formula; it chooses, formats and explains.
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np

from llmmath import kv_cache
from llmmath.cli.formatting import (
    FLOOR_NOTE,
    LINK_NAMES,
    Report,
    count,
    kv_cache_words,
    ms,
    params,
    si,
    sig,
    table,
    usd,
)
from llmmath.core.chip_prices import cost_per_million_tokens_usd, list_example_prices
from llmmath.core.deployment import Deployment
from llmmath.core.hf_quant import KVCacheDtype
from llmmath.core.placement import Layout, groups
from llmmath.core.serving import decode_step, prefill
from llmmath.core.setting import Setting

#: Where the heading wraps a line (the setting line wraps at 84, under its 11-column label).
HEADING_WIDTH = 95


# ---- shared ---------------------------------------------------------------------------------
def price_of(dep: Deployment) -> float | None:
    """The deployment's price per chip-hour, or None where the chip has no example price."""
    if dep.usd_per_chip_hour is None and dep.chip.name not in list_example_prices():
        return None
    return dep.chip_hour_usd


def settings(dep: Deployment, overlap: str, kv: KVCacheDtype | None = None) -> dict[str, Any]:
    """The deployment's settings for ``--json``; ``kv``: where the KV cache's format came from
    (``kv_dtype_from``, one of ``hf_quant.KV_SOURCES``, and in words ``kv_dtype_why``)."""
    layout = str(dep.layout) if dep.layout is not None else None
    return {
        "model": dep.model.name,
        "chip": dep.chip.name,
        "n_chips": dep.n_chips,
        "layout": layout,
        "weight_dtype": dep.weight_dtype,
        "weights_held_as": held_as(dep),
        "kv_dtype": dep.kv_dtype,
        "kv_dtype_from": None if kv is None else kv.source,
        "kv_dtype_why": None if kv is None else kv_cache_words(kv),
        "compute_dtype": dep.compute_dtype,
        "attention_dtype": dep.attention_compute_dtype,
        "expert_dispatch": dep.expert_dispatch,
        "dispatch_dtype": dep.dispatch_dtype or dep.activation_dtype,
        "flops_efficiency": dep.flops_efficiency,
        "bandwidth_efficiency": dep.bandwidth_efficiency,
        "usd_per_chip_hour": price_of(dep),
        "overlap": overlap,
    }


def setting_line(dep: Deployment, context: float, overlap: str) -> str:
    """The setting the command computed, in the one line every worked example of the book
    shows (:meth:`llmmath.core.setting.Setting.describe`): model, chips, layout and the
    communication it counts, formats, context, overlap rule, efficiencies, price."""
    return Setting(dep, context, overlap).describe()


def add_setting(report: Report, dep: Deployment, context: float, overlap: str) -> None:
    """The setting line in ``--json`` (``setting``) and, wrapped for a terminal, in the text."""
    line = setting_line(dep, context, overlap)
    report.data["setting"] = line
    lines = textwrap.wrap(
        line, 84, initial_indent="  setting  ", subsequent_indent=" " * 11, break_on_hyphens=False
    )
    report.add(*lines)


def held_as(dep: Deployment) -> str:
    """Which format holds each part of the weights, in words."""
    fmt = dep.weight_format
    return fmt.description if fmt is not None else f"all {dep.weight_dtype}"


def kv_line(dep: Deployment, context: float | None) -> str:
    """KV bytes per token, exact at ``context`` where sliding-window layers hold less; what a
    sparse-attention model's step reads, and a hybrid's state."""
    full = si(dep.model.kv_bytes_per_token(dep.kv_dtype), "B")
    model = dep.model
    if model.index_topk:
        return f"{full} per token held (index keys included)\n{sparse_read_line(dep, context)}"
    if model.n_state_layers:
        state = si(model.state_bytes_per_sequence(dep.kv_dtype), "B")
        layers = f"{model.n_attention_layers} of {model.n_layers} layers attend"
        return f"{full} per token ({layers}) + {state} of state per sequence (hybrid)"
    if not model.sliding_window:
        return f"{full} per token"
    if context is None:
        return f"{full} per token at full attention (less with windows: exact below)"
    at = float(model.kv_bytes_per_token(dep.kv_dtype, context))
    windows = (
        f"{model.n_local_layers} of {model.n_layers} layers hold {count(model.sliding_window)}"
    )
    return f"{si(at, 'B')} per token at {count(context)} tokens ({windows}; {full} at full)"


def sparse_read_line(dep: Deployment, context: float | None) -> str:
    """What a sparse-attention step reads of each sequence's cache: the steps above use it."""
    model = dep.model
    index_key = si(model.n_attention_layers * model.index_key_bytes, "B")
    reads = (
        f"           sparse attention: a step reads {count(model.index_topk)} tokens' KV and "
        f"every token's {index_key} index key"
    )
    if context is None:
        return reads
    read = si(float(model.kv_bytes_read(dep.kv_dtype, context)), "B")
    held = si(context * float(model.kv_bytes_per_token(dep.kv_dtype, context)), "B")
    return f"{reads},\n           {read} of the {held} a sequence holds at {count(context)} tokens"


def heading(
    report: Report,
    dep: Deployment,
    *,
    layout: bool = True,
    price: bool = True,
    context: float | None = None,
    kv: KVCacheDtype | None = None,
) -> None:
    model = dep.model
    size = params(model.total_params)
    if model.is_moe:
        size += f", {params(model.matmul_params_per_token)} active*"
    split = (
        str(dep.layout)
        if dep.layout is not None
        else "none (weights and KV spread evenly, no communication counted)"
        + (f"\n           try --layout tp{dep.n_chips} for a real split" if dep.n_chips > 1 else "")
    )
    per_hour = price_of(dep)
    weights = (
        f"{si(dep.weight_bytes_per_chip, 'B')} per chip"
        if layout
        else f"{si(dep.weight_bytes, 'B')} in all"
    )
    report.add(
        f"{model.name} ({size} parameters) on {dep.n_chips} x {dep.chip.full_name}",
        *([f"  layout   {split}"] if layout else []),
        f"  weights  {held_as(dep)}: {weights}",
        f"  compute  matmuls in {dep.compute_dtype}, attention in {dep.attention_compute_dtype}",
        *([f"  dispatch {dispatch_line(dep)}"] if layout and _expert_parallel(dep) else []),
        kv_heading(dep, context, kv),
        *(
            []
            if not price
            else [f"  price    {usd(per_hour)} per chip-hour"]
            if per_hour is not None
            else [f"  price    none (no example price for {dep.chip.name}: pass --price)"]
        ),
    )


def kv_heading(dep: Deployment, context: float | None, kv: KVCacheDtype | None) -> str:
    """The heading's KV cache line: its format, where that came from, and its bytes per token
    (on the next line where one would be too long for a terminal)."""
    words, size = f"  KV cache {kv_format(dep, kv)}", kv_line(dep, context)
    wide = len(words) + len(size.split("\n")[0]) + 2 > HEADING_WIDTH
    joint = ",\n" + " " * 11 if wide else ", "
    return words + joint + size


def kv_format(dep: Deployment, kv: KVCacheDtype | None) -> str:
    """The KV cache's format and, where known, where it came from: ``"bf16 (checkpoint dtype;
    --kv-dtype fp8 to change)"``."""
    return dep.kv_dtype if kv is None else f"{dep.kv_dtype} ({kv_cache_words(kv)})"


def _expert_parallel(dep: Deployment) -> bool:
    return dep.layout is not None and dep.layout.ep > 1


def dispatch_line(dep: Deployment) -> str:
    """Which EP all-to-all the step counts, and why (the config's routing, or the option)."""
    model = dep.model
    why = (
        f"\n           (the config routes from {model.expert_groups_per_token} of "
        f"{model.expert_groups} expert groups; --dispatch per-expert for one copy per expert)"
        if dep.expert_dispatch == "node_limited" and model.expert_groups
        else ""
    )
    return f"EP all-to-all of {dep.dispatch_words}{why}"


def floor_note(dep: Deployment, overlap: str) -> str:
    rule = "perfect overlap" if overlap == "perfect" else "the serial estimate"
    return FLOOR_NOTE.format(
        rule=rule, flops=dep.flops_efficiency, bandwidth=dep.bandwidth_efficiency
    )


# ---- serve ----------------------------------------------------------------------------------
def serve(
    dep: Deployment,
    batches: list[float],
    context: float,
    prompt: float,
    overlap: str,
    kv: KVCacheDtype | None = None,
) -> Report:
    """A decode step per batch (floor and serial estimate, its parts, rates, costs, fit) and
    the prefill of one prompt (TTFT) and of a batch of prompts (the input-token cost)."""
    B = np.asarray(batches, dtype=np.float64)
    step = decode_step(dep, B, context, overlap=overlap, allow_overflow=True)
    prompts = prefill(dep, prompt, B, overlap=overlap, allow_overflow=True)
    ttft = float(prefill(dep, prompt, 1, overlap=overlap, allow_overflow=True).time_s)
    price = price_of(dep)
    output_cost = step.cost_per_million_tokens_usd() if price is not None else None
    input_cost = (
        np.asarray(cost_per_million_tokens_usd(prompts.time_s, B * prompt, dep.n_chips, price))
        if price is not None
        else None
    )
    parts = np.stack([step.compute_s, step.memory_s, step.communication_s])
    bound = np.array(["compute", "memory", "network"])[np.argmax(parts, axis=0)]
    missing = np.maximum(step.hbm_needed_bytes - dep.hbm_bytes, 0.0)
    columns: dict[str, list[Any]] = {
        name: np.broadcast_to(value, B.shape).tolist()
        for name, value in {
            "batch": B,
            "floor_s": step.floor_s,
            "serial_s": step.serial_s,
            "time_s": step.time_s,
            "compute_s": step.compute_s,
            "memory_s": step.memory_s,
            "communication_s": step.communication_s,
            "bottleneck": bound,
            "tokens_per_s": step.tokens_per_s,
            "tokens_per_s_per_chip": step.tokens_per_s_per_chip,
            "tokens_per_s_per_user": step.tokens_per_s_per_user,
            "usd_per_million_output": output_cost,
            "usd_per_million_input": input_cost,
            "fits": step.fits,
            "missing_bytes": missing,
        }.items()
    }
    rows = [
        dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)
    ]
    data = {
        "command": "serve",
        **settings(dep, overlap, kv),
        "context": context,
        "prompt_tokens": prompt,
        "ttft_s": ttft,
        "rows": rows,
    }
    report = Report(data)
    heading(report, dep, context=context, kv=kv)
    add_setting(report, dep, context, overlap)
    rule = "floor" if overlap == "perfect" else "serial estimate"
    report.add(
        f"  context  {count(context)} tokens cached per sequence",
        f"  TTFT     {ms(ttft)} ms to prefill one {count(prompt)}-token prompt alone",
        "",
        "The step: its floor, the serial estimate, and the floor's parts (per chip)",
        table(
            ["batch", "floor ms", "serial ms", "compute ms", "memory ms", "network ms", "bound"],
            [_step_row(row) for row in rows],
        ),
        "",
        f"What it serves, at the {rule}",
        table(
            ["batch", "tok/s/chip", "tok/s/user", "$/M out", "$/M in", "fits in HBM"],
            [_rate_row(row) for row in rows],
        ),
        "",
        "$/M in prices the prefill of each sequence's prompt.",
        floor_note(dep, overlap),
    )
    return report


def _step_row(row: dict[str, Any]) -> list[str]:
    times = ("floor_s", "serial_s", "compute_s", "memory_s", "communication_s")
    return [count(row["batch"]), *(ms(row[name]) for name in times), row["bottleneck"]]


def _rate_row(row: dict[str, Any]) -> list[str]:
    fits = "yes" if row["fits"] else f"no: {si(row['missing_bytes'], 'B')} short"
    return [
        count(row["batch"]),
        count(row["tokens_per_s_per_chip"]),
        sig(row["tokens_per_s_per_user"]),
        usd(row["usd_per_million_output"]),
        usd(row["usd_per_million_input"]),
        fits,
    ]


# ---- fit ------------------------------------------------------------------------------------
def fit(
    dep: Deployment, contexts: list[float], batches: list[float], kv: KVCacheDtype | None = None
) -> Report:
    """The most sequences at each context, and the longest context at each batch."""
    T = np.asarray(contexts, dtype=np.float64)
    B = np.asarray(batches, dtype=np.float64)
    most = np.atleast_1d(np.asarray(kv_cache.max_batch(dep, T), dtype=np.float64))
    pp = dep.layout.pp if dep.layout is not None else 1
    exact = dep.kv_window_share(T)
    held_at = dep.kv_bytes_held_per_token * np.broadcast_to(exact, T.shape)
    longest = np.atleast_1d(np.asarray(kv_cache.max_context(dep, B), dtype=np.float64))
    data = {
        "command": "fit",
        **{k: v for k, v in settings(dep, "perfect", kv).items() if k in _FIT_SETTINGS},
        "weight_bytes_per_chip": dep.weight_bytes_per_chip,
        "kv_budget_bytes": dep.kv_budget_bytes,
        "kv_bytes_per_token": dep.model.kv_bytes_per_token(dep.kv_dtype),
        "kv_bytes_held_per_token": dep.kv_bytes_held_per_token,
        "hbm_utilization": dep.hbm_utilization,
        "reserve_bytes_per_chip": dep.reserve_bytes_per_chip,
        "max_batch": [
            {
                "context": t,
                "max_batch": m,
                "sequences_in_flight": m * pp,
                "kv_bytes_per_token": e * dep.model.kv_bytes_per_token(dep.kv_dtype),
            }
            for t, m, e in zip(T, most, np.broadcast_to(exact, T.shape), strict=True)
        ],
        "max_context": [{"batch": b, "max_context": c} for b, c in zip(B, longest, strict=True)],
    }
    report = Report(data)
    one = float(T[0]) if T.size == 1 else None  # one context: the heading's KV is exact at it
    windowed = bool(dep.model.sliding_window)
    heading(report, dep, price=False, context=one, kv=kv)
    held = dep.kv_bytes_held_per_token
    holds = si(held, "B") + (" at full attention" if windowed else "")
    if one is not None and windowed:
        holds = f"{si(float(held_at[0]), 'B')} at {count(one)} tokens"
    budget = ""
    if dep.hbm_utilization != 1.0 or dep.reserve_bytes_per_chip:
        budget = (
            f"\n           ({dep.hbm_utilization:.0%} of each chip's "
            f"{si(dep.chip.hbm_bytes, 'B')}, less {si(dep.reserve_bytes_per_chip, 'B')} reserved)"
        )
    report.add(
        f"  room     {si(dep.kv_budget_bytes, 'B')} of HBM left for KV caches{budget};\n"
        f"           a cached token holds {holds}"
        + (
            "\n           (with the KV copies and the pipeline's batches in flight)"
            if held != dep.model.kv_bytes_per_token(dep.kv_dtype)
            else ""
        ),
        "",
        table(
            [
                "context",
                "max batch",
                *(["in flight"] if pp > 1 else []),
                "KV at it",
                *(["KV/token"] if windowed else []),
            ],
            [
                [
                    count(t),
                    count(m),
                    *([count(m * pp)] if pp > 1 else []),
                    si(m * t * h, "B"),
                    *([si(h, "B")] if windowed else []),
                ]
                for t, m, h in zip(T, most, held_at, strict=True)
            ],
        ),
        *(
            [
                "",
                f"Under PP{pp} the max batch is per microbatch: {pp} microbatches are in flight,",
                f"so the chips hold {pp} x as many sequences; each token passes all {pp} "
                "stages in turn,",
                f"so a sequence gets one token per {pp} stage times (serve shows the step).",
            ]
            if pp > 1
            else []
        ),
        "",
        table(
            ["batch", "max context", "limit"],
            [
                [count(b), count(c), "model" if c >= dep.model.max_context else "memory"]
                for b, c in zip(B, longest, strict=True)
            ],
        ),
        "",
        "Weights and KV caches only: activations and fragmentation take more."
        + (
            f"\nSliding-window layers ({dep.model.n_local_layers} of {dep.model.n_layers}) hold "
            f"at most {count(dep.model.sliding_window)} tokens each: counted exactly."
            if dep.model.sliding_window
            else ""
        ),
        f"The model's own context limit is {count(dep.model.max_context)} tokens.",
    )
    return report


#: The settings ``fit`` depends on (no times, no prices).
_FIT_SETTINGS = (
    "model",
    "chip",
    "n_chips",
    "layout",
    "weight_dtype",
    "weights_held_as",
    "kv_dtype",
    "kv_dtype_from",
    "kv_dtype_why",
)


def links(layout: Layout, dep: Deployment) -> str:
    """Which link each kind of model parallelism talks over: "up" (NVLink/ICI, the scale-up
    domain), "out" (the scale-out network) or "up+out" (a two-level collective)."""
    placed = groups(layout, dep.chip)
    short = LINK_NAMES
    used = [
        f"{kind} {short[placed[kind].link]}" for kind in ("TP", "EP", "PP") if placed[kind].size > 1
    ]
    return ", ".join(used) or "none"


__all__ = [
    "add_setting",
    "fit",
    "floor_note",
    "heading",
    "price_of",
    "serve",
    "setting_line",
    "settings",
]

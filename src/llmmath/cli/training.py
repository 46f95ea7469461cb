"""The ``llmmath train``, ``workload``, ``chips`` and ``models`` subcommands, as reports.

``train`` times a whole run from :func:`llmmath.core.training.training_step` (steps of
``batch_tokens`` until ``tokens`` are seen) and
:func:`llmmath.core.training_memory.training_memory`;
``chips`` and ``models`` list the presets (and any added from files) with their sources.
"""

from __future__ import annotations

from llmmath.beyond.layout_search import WorkloadView
from llmmath.beyond.serving_systems import ChunkedPrefill, chunked_prefill, default_prefill_chunk
from llmmath.cli.formatting import (
    LINK_NAMES,
    Report,
    count,
    ms,
    params,
    percent,
    short,
    si,
    sig,
    table,
    usd,
)
from llmmath.cli.serve_and_fit import add_setting, floor_note, heading, price_of, settings
from llmmath.core.chip_prices import example_price, list_example_prices
from llmmath.core.deployment import dispatch_words
from llmmath.core.hardware import Chip
from llmmath.core.hf_quant import KVCacheDtype
from llmmath.core.models import ModelConfig
from llmmath.core.placement import DoesNotFitError, Layout
from llmmath.core.training import pipeline_bubble_fraction, training_step
from llmmath.core.training_memory import training_memory
from llmmath.core.units import SECONDS_PER_DAY, SECONDS_PER_HOUR


def train(
    model: ModelConfig,
    chip: Chip,
    layout: Layout,
    tokens: float,
    batch_tokens: float,
    microbatches: int,
    activations: str,
    mfu: float,
    price: float | None,
    dispatch: tuple[str, str | None] = ("per_expert", None),
) -> Report:
    """Days and chip-hours to train on ``tokens``, memory per chip, bubble, communication.
    Raises :class:`DoesNotFitError` (naming each part of the memory) when a chip cannot
    hold its share."""
    step = training_step(
        model, layout, chip, batch_tokens, microbatches=microbatches, activations=activations,
        flops_efficiency=mfu, expert_dispatch=dispatch[0], dispatch_dtype=dispatch[1],
    )  # fmt: skip
    memory = training_memory(
        model, layout, batch_tokens, microbatches=microbatches, activations=activations
    )
    try:
        memory.require_fit(chip, what=f"training {model.name} on {layout}")
    except DoesNotFitError as error:
        raise DoesNotFitError(
            f"{error}; try more --microbatches, zero1-3 or pp in --layout, or "
            "--activations checkpointed",
            error.missing_bytes,
        ) from None
    steps = tokens / batch_tokens
    fast, slow = steps * float(step.lower_s), steps * float(step.upper_s)
    chip_hours = layout.n_gpus * fast / SECONDS_PER_HOUR
    bubble = float(pipeline_bubble_fraction(layout.pp, microbatches, layout.virtual_stages))
    parts = {name: float(value) for name, value in memory.parts().items()}
    total = float(memory.total_bytes)
    data = {
        "command": "train",
        "model": model.name,
        "chip": chip.name,
        "n_chips": layout.n_gpus,
        "layout": str(layout),
        "tokens": tokens,
        "batch_tokens": batch_tokens,
        "microbatches": microbatches,
        "activations": activations,
        "flops_efficiency": mfu,
        "expert_dispatch": dispatch[0] if layout.ep > 1 else None,
        "dispatch_dtype": (dispatch[1] or "bf16") if layout.ep > 1 else None,
        "usd_per_chip_hour": price,
        "steps": steps,
        "step_s": float(step.lower_s),
        "step_serial_s": float(step.upper_s),
        "days": fast / SECONDS_PER_DAY,
        "days_serial": slow / SECONDS_PER_DAY,
        "chip_hours": chip_hours,
        "cost_usd": None if price is None else chip_hours * price,
        "mfu": float(step.mfu),
        "mfu_serial": float(step.mfu_no_overlap),
        "bubble_fraction": bubble,
        "memory_bytes_per_chip": {**parts, "total": total},
        "fits": total <= chip.hbm_bytes,
        "communication": {
            kind: {
                "collective": c.collective,
                "link": c.link,
                "bytes_per_chip": float(c.bytes_per_gpu),
                "time_s": float(c.time_s),
            }
            for kind, c in step.communication.items()
        },
    }
    report = Report(data)
    report.add(
        f"Training {model.name} ({params(model.total_params)} parameters) on "
        f"{count(layout.n_gpus)} x {chip.full_name}",
        f"  layout   {layout}",
        f"  run      {short(tokens)} tokens in {count(steps)} steps of {count(batch_tokens)} "
        f"tokens,",
        f"           {microbatches} microbatch{'es' if microbatches > 1 else ''} per replica, "
        f"activations {activations}",
        f"  time     {sig(fast / SECONDS_PER_DAY)} days with communication hidden, "
        f"{sig(slow / SECONDS_PER_DAY)} with none hidden",
        f"           ({ms(float(step.lower_s))}-{ms(float(step.upper_s))} ms per step)",
        f"  compute  {short(chip_hours)} chip-hours"
        + (f", {usd(chip_hours * price)} at {usd(price)} per chip-hour" if price else "")
        + f";\n           MFU {percent(float(step.mfu))} ({percent(float(step.mfu_no_overlap))} "
        "serial)",
        *(
            [f"  dispatch EP all-to-all of {_dispatch_words(model, dispatch)}"]
            if layout.ep > 1
            else []
        ),
        f"  bubble   {percent(bubble)} of each step idle in the pipeline",
        f"  memory   {si(total, 'B')} per chip of {si(chip.hbm_bytes, 'B')}: fits",
        "",
        table(["memory per chip", "size"], [[k, si(v, "B")] for k, v in parts.items()]),
        "",
        table(
            ["traffic", "collective", "link", "bytes/step", "ms/step", "of compute"],
            [
                [
                    kind,
                    c.collective,
                    LINK_NAMES.get(c.link, c.link),
                    si(float(c.bytes_per_gpu), "B"),
                    ms(float(c.time_s)),
                    percent(float(c.time_s / step.compute_s)),
                ]
                for kind, c in step.communication.items()
                if float(c.bytes_per_gpu) > 0
            ],
        ),
        "link: up = within a scale-up domain (NVLink, ICI), out = over the scale-out network",
        "",
        f"Floors, not promises: matmuls at {mfu:.0%} of peak FLOP/s while they run (--mfu),\n"
        "collectives at full link speed, no stragglers or failures (the step's MFU is lower).",
    )
    return report


def _dispatch_words(model: ModelConfig, dispatch: tuple[str, str | None]) -> str:
    """The words the serving commands use for this dispatch (a deployment's own)."""
    return dispatch_words(model, dispatch[0], dispatch[1], "bf16")


def chips(listed: dict[str, Chip]) -> Report:
    """Every chip with its peaks, memory, links and example price, then the sources."""
    priced = set(list_example_prices())
    rows: list[list[str]] = []
    data: list[dict[str, object]] = []
    for chip in listed.values():
        price = example_price(chip).usd_per_chip_hour if chip.name in priced else None
        bf16 = chip.peak_flop_per_s.get("bf16")
        fp8 = chip.peak_flop_per_s.get("fp8")
        rows.append(
            [
                chip.name,
                "-" if bf16 is None else sig(bf16 / 1e12),
                "-" if fp8 is None else sig(fp8 / 1e12),
                sig(chip.hbm_bytes / 1e9),
                sig(chip.hbm_bandwidth_bytes_per_s / 1e12),
                sig(chip.scale_up_bandwidth_bytes_per_s / 1e9),
                count(chip.scale_up_domain_size),
                sig(chip.scale_out_bandwidth_bytes_per_s / 1e9),
                usd(price),
            ]
        )
        data.append(
            {
                "name": chip.name,
                "full_name": chip.full_name,
                "peak_flop_per_s": chip.peak_flop_per_s,
                "hbm_bytes": chip.hbm_bytes,
                "hbm_bandwidth_bytes_per_s": chip.hbm_bandwidth_bytes_per_s,
                "scale_up_bandwidth_bytes_per_s": chip.scale_up_bandwidth_bytes_per_s,
                "scale_up_domain_size": chip.scale_up_domain_size,
                "scale_out_bandwidth_bytes_per_s": chip.scale_out_bandwidth_bytes_per_s,
                "example_usd_per_chip_hour": price,
                "source": chip.source,
                "source_date": chip.source_date,
            }
        )
    header = [
        "chip",
        "bf16 TFLOP/s",
        "fp8 TFLOP/s",
        "HBM GB",
        "HBM TB/s",
        "scale-up GB/s",
        "domain",
        "scale-out GB/s",
        "$/chip-h",
    ]
    report = Report({"command": "chips", "chips": data})
    report.add(
        table(header, rows),
        "",
        "Dense peaks (no 'with sparsity' figures); link bandwidths one direction per chip;",
        "prices are examples (data/chip_prices.toml). Sources:",
        *(f"  {c.name}: {c.source} ({c.source_date})" for c in listed.values()),
    )
    return report


def models(listed: list[ModelConfig], held: list[str | None] | None = None) -> Report:
    """Every model with its shape, parameters and KV bytes per token, then the sources.
    ``held``: how each model's checkpoint holds its weights (None: not quantized)."""
    rows: list[list[str]] = []
    data: list[dict[str, object]] = []
    formats = held or [None] * len(listed)
    for spec, fmt in zip(listed, formats, strict=True):
        rows.append(
            [
                spec.name,
                params(spec.total_params),
                params(spec.matmul_params_per_token),
                count(spec.n_layers),
                count(spec.d_model),
                f"{spec.n_heads}/{spec.n_kv_heads}",
                spec.attention_kind,
                f"{spec.n_experts}/{spec.experts_per_token}" if spec.is_moe else "-",
                si(spec.kv_bytes_per_token("bf16"), "B"),
                count(spec.max_context),
            ]
        )
        data.append(
            {
                "name": spec.name,
                "total_params": spec.total_params,
                "active_params": spec.matmul_params_per_token,
                "active_params_with_input_embedding": spec.active_params,
                "weights_held_as": fmt,
                "sliding_window": spec.sliding_window,
                "global_layers": spec.n_global_layers,
                "kv_bytes_per_token_bf16": spec.kv_bytes_per_token("bf16"),
                "shape": {
                    f: getattr(spec, f)
                    for f in ModelConfig.__dataclass_fields__
                    if f not in ("name", "source", "source_date")
                },
                "source": spec.source,
                "source_date": spec.source_date,
            }
        )
    header = [
        "model",
        "params",
        "active*",
        "layers",
        "d_model",
        "heads N/K",
        "attention",
        "experts E/k",
        "KV/token bf16",
        "context",
    ]
    report = Report({"command": "models", "models": data})
    report.add(
        table(header, rows),
        "",
        "Parameters from the shape (embeddings, norms, routers included). *active: the",
        "weights one token multiplies by, without the input embedding (a lookup), as OpenAI",
        "and DeepSeek count; Qwen and Meta count it too (--json: with_input_embedding).",
        *(f"  {m.name}: checkpoint holds {f}" for m, f in zip(listed, formats, strict=True) if f),
        "Sources:",
        *(
            f"  {m.name}: {m.source}" + (f" ({m.source_date})" if m.source_date else "")
            for m in listed
        ),
    )
    return report


# ---- workload -------------------------------------------------------------------------------
def workload_report(
    view: WorkloadView,
    overlap: str,
    measured: float | None = None,
    efficiency: float | None = None,
    at_floor: WorkloadView | None = None,
    prefill_chunk: float | None = None,
    kv: KVCacheDtype | None = None,
) -> Report:
    """A stream of requests in steady state: rates per chip, TTFT, TPOT, cost per token, and
    colocated, chunked prefill under a budget of ``prefill_chunk`` tokens a step (default: the
    engines'); with a measurement, the efficiency that reproduces it and measured/floor."""
    dep = view.deployment
    budget = default_prefill_chunk() if prefill_chunk is None else prefill_chunk
    chunks: ChunkedPrefill | None = None
    if not view.disaggregated and (prefill_chunk is not None or budget > view.concurrency):
        chunks = chunked_prefill(view, budget)  # a budget given that is too small: an error
    floor = at_floor.measured_rate if at_floor is not None else None
    price = price_of(dep)
    usd_in, usd_out = view.usd_per_million() if price is not None else (None, None)
    data = {
        "command": "workload",
        **settings(dep, overlap, kv),
        "input_tokens": view.input_tokens,
        "output_tokens": view.output_tokens,
        "concurrency": view.concurrency,
        "cache_hit_fraction": view.cache_hit_fraction,
        "disaggregated": view.disaggregated,
        "mtp_tokens_per_step": view.mtp_tokens_per_step,
        "ttft_s": view.ttft_s,
        "tpot_s": view.tpot_s,
        "request_s": view.request_s,
        "requests_per_s": view.requests_per_s,
        "output_tokens_per_s_per_chip": view.output_tokens_per_s_per_chip,
        "input_tokens_per_s_per_chip": view.input_tokens_per_s_per_chip,
        "decode_tokens_per_s_per_chip": view.decode_tokens_per_s_per_chip,
        "prefill_tokens_per_s_per_chip": view.prefill_tokens_per_s_per_chip,
        "prefill_chip_share": view.prefill_chip_share,
        "usd_per_million_input": usd_in,
        "usd_per_million_output": usd_out,
        "measured_output_tokens_per_s_per_chip": measured,
        "fitted_efficiency": efficiency,
        "decode_bound_at_floor": (at_floor or view).decode_bound,
        "floor_output_tokens_per_s_per_chip": floor,
        "measured_over_floor": None if measured is None or not floor else measured / floor,
        "prefill_chunk": None if view.disaggregated else budget,
        "chunked_ttft_s": chunks.ttft_s if chunks else None,
        "longest_step_s": chunks.longest_step_s if chunks else None,
        "prefill_chunk_keeps_up": chunks.keeps_up if chunks else None,
    }
    report = Report(data)
    heading(report, dep, context=view.input_tokens + view.output_tokens / 2, kv=kv)
    add_setting(report, dep, view.input_tokens + view.output_tokens / 2, view.overlap)
    mode = (
        "disaggregated: prefill and decode on separate copies of these chips"
        if view.disaggregated
        else "colocated: each step also prefills the prompts of the requests that join"
    )

    def per_chip(label: str, rate: float) -> list[str]:
        return [label, count(rate), count(rate * dep.n_chips)]

    extras = []
    if view.cache_hit_fraction:
        extras.append(f"{view.cache_hit_fraction:.0%} of prompt tokens from the prefix cache")
    if view.mtp_tokens_per_step != 1.0:
        extras.append(f"MTP: {view.mtp_tokens_per_step:.2f} tokens a step")
    report.add(
        f"  requests {count(view.input_tokens)} tokens in, {count(view.output_tokens)} out; "
        f"{count(view.concurrency)} decoding at once",
        f"  serving  {mode}" + "".join(f";\n           {e}" for e in extras),
        "",
        table(
            ["", "per chip", "all chips"],
            [
                per_chip("output tok/s", view.output_tokens_per_s_per_chip),
                per_chip("input tok/s", view.input_tokens_per_s_per_chip),
                ["requests/s", sig(view.requests_per_s / dep.n_chips), sig(view.requests_per_s)],
                per_chip("decode alone, out tok/s", view.decode_tokens_per_s_per_chip),
                per_chip("prefill alone, in tok/s", view.prefill_tokens_per_s_per_chip),
            ],
        ),
        "",
        *_chunk_lines(view, chunks, budget),
        f"  TPOT     {ms(view.tpot_s)} ms per output token; a request takes "
        f"{sig(view.request_s)} s",
        f"  prefill  {percent(view.prefill_chip_share)} of the chip time",
        f"  cost     {usd(usd_in)} per million input tokens, {usd(usd_out)} per million output"
        if price is not None
        else f"  cost     none (no example price for {dep.chip.name}: pass --price)",
    )
    if measured is not None and efficiency is not None and floor:
        report.add(
            "",
            f"Calibrated to {count(measured)} {'decode-pool ' if view.disaggregated else ''}"
            "output tok/s per chip measured: the floor at full",
            f"efficiency gives {count(floor)}, measured/floor = {measured / floor:.3f}; FLOP/s",
            f"and bandwidth at {percent(efficiency)} of peak reproduce the measurement."
            + (
                "\nThe floor's decode step is network-bound: the fitted efficiency says little"
                "\nabout the chips; measured/floor is the number to read."
                if at_floor is not None and at_floor.decode_bound == "network"
                else ""
            ),
        )
    report.add("", floor_note(dep, overlap))
    return report


def _chunk_lines(view: WorkloadView, chunks: ChunkedPrefill | None, budget: float) -> list[str]:
    """TTFT, and colocated, what a budget of ``budget`` tokens a step makes of it."""
    if view.disaggregated or chunks is None:
        lines = [
            f"  TTFT     {ms(view.ttft_s)} ms (one prompt prefilled alone; queueing not counted)"
        ]
        if not view.disaggregated:
            lines.append(
                f"  chunks   not modelled: the default {count(budget)} tokens a step are not more "
                f"than the\n           {count(view.concurrency)} sequences decoding; pass "
                "--prefill-chunk"
            )
        return lines
    steps = chunks.steps_to_first_token
    lines = [
        f"  TTFT     {ms(chunks.ttft_s)} ms chunked: a lone prompt in {count(steps)} "
        f"step{'s' if steps > 1 else ''} of <= {count(chunks.prompt_tokens_per_step)} tokens "
        f"beside the\n           decodes ({ms(view.ttft_s)} ms prefilled alone); queueing not "
        "counted",
        f"  chunks   {count(budget)} tokens a step: decodes first, one token each, prompts in the "
        f"rest;\n           a step {ms(chunks.mean_step_s)} ms on average, "
        f"{ms(chunks.longest_step_s)} ms with a full chunk (the longest gap)",
    ]
    if not chunks.keeps_up:
        lines.append(
            f"           the stream needs {count(chunks.needed_prompt_tokens_per_step)} prompt "
            f"tokens a step, more than the {count(chunks.prompt_tokens_per_step)} left:\n"
            "           prompts queue without bound, the rates above assume they do not;\n"
            "           raise --prefill-chunk or lower --concurrency"
        )
    return lines


__all__ = ["chips", "models", "train", "workload_report"]

"""``llmmath plan``: the cheapest chips and layout per chip type for a stream of requests within
TTFT and TPOT targets at a percentile (:mod:`llmmath.beyond.planning`), with why the other
layouts fail, the cost per million tokens, and the frontier drawn with ``--plot``.

>>> parse_target("2s@p99", "--ttft"), parse_target("50ms", "--tpot")
((2.0, 'p99'), (0.05, 'p99'))
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from llmmath.beyond import planning, serving_systems
from llmmath.beyond.plan_workers import MODES, PERCENTILES, WALLS, Refusal, Stream, Targets
from llmmath.beyond.planning import ChipPlan, Configuration
from llmmath.cli.formatting import (
    InputError,
    Report,
    count,
    did_you_mean,
    ms,
    parse_number,
    sig,
    table,
    usd,
)
from llmmath.cli.serve_and_fit import floor_note, kv_format, setting_line, settings
from llmmath.core import hardware
from llmmath.core.chip_prices import example_price, list_example_prices
from llmmath.core.deployment import Deployment
from llmmath.core.hf_quant import KVCacheDtype

_UNITS_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_LENGTH_LIMIT = 131_072


# ---- reading plan's flags -------------------------------------------------------------------
def parse_target(text: str, flag: str) -> tuple[float, str]:
    """``"2s@p99"`` -> (2.0, "p99"); the percentile defaults to p99."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(us|µs|ms|s)\s*(?:@\s*(p\d+(?:\.\d+)?))?\s*", text)
    if not match:
        raise InputError(
            f"{flag} {text!r} is not TIME[@PERCENTILE]: a time with a unit (us, ms, s) and "
            "p50 or p99, e.g. 2s@p99 or 50ms@p50"
        )
    try:
        value = float(match.group(1)) * _UNITS_S[match.group(2)]
    except ValueError:
        raise InputError(f"{flag} {text!r}: {match.group(1)!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{flag} must be a time > 0, e.g. 2s@p99; got {text!r}")
    percentile = match.group(3) or "p99"
    if percentile not in PERCENTILES:
        raise InputError(
            f"{flag} {text!r}: the percentile must be p50 or p99 (the two the queueing "
            f"simulation reports); got {percentile}"
        )
    return value, percentile


def parse_chips(text: str) -> dict[str, float]:
    """``"H100,B200=5.5"`` -> each chip's USD per chip-hour: given after ``=``, else its
    example price (``data/chip_prices.toml``)."""
    chips: dict[str, float] = {}
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or not all(parts):
        raise InputError(f"--chips {text!r} must name chips, comma-separated, e.g. H100,B200=5")
    known = hardware.list_chips()
    for part in parts:
        name, sep, price_text = part.partition("=")
        name = name.strip()
        if name not in known:
            raise InputError(
                f"--chips: unknown chip {name!r}{did_you_mean(name, known)} (known: "
                f"{', '.join(known)}; add one with --chip-file)"
            )
        if name in chips:
            raise InputError(f"--chips names {name} twice: give each chip once")
        if sep:
            price = parse_number(price_text.strip(), f"--chips {name}=")
            if not price > 0:
                raise InputError(f"--chips {name}= must be a price > 0 USD per chip-hour; "
                                 f"got {price_text!r}")  # fmt: skip
        elif name in list_example_prices():
            price = example_price(name).usd_per_chip_hour
        else:
            raise InputError(
                f"--chips: {name} has no example price (data/chip_prices.toml has "
                f"{', '.join(list_example_prices())}): give one as {name}=USD per chip-hour"
            )
        chips[name] = price
    return chips


def parse_lengths(text: str, flag: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    """A mean length (``2000``, ``2k``), or a file of lengths (whole numbers separated by
    spaces, commas or new lines) each request draws its own from."""
    if not text.strip():
        raise InputError(f"{flag} is empty: give a length in tokens (e.g. 2000) or a file")
    path = Path(text)
    if path.is_file():
        try:
            words = re.split(r"[\s,]+", path.read_text().strip())
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"{flag} {text}: cannot be read ({error})") from None
        values = [
            parse_number(word, f"{flag} {text}:", whole=True, low=1) for word in words if word
        ]
        if not values:
            raise InputError(f"{flag} {text} holds no lengths")
    else:
        if re.search(r"[/\\]|\.(txt|csv)$", text):
            raise InputError(f"{flag} {text}: no such file")
        values = [parse_number(text, flag, whole=True, low=1)]
    if max(values) > _LENGTH_LIMIT:
        raise InputError(f"{flag} lengths must be <= {_LENGTH_LIMIT:,} tokens; got "
                         f"{max(values):,.0f}")  # fmt: skip
    return np.asarray(values, dtype=np.float64)


def _count(text: str, flag: str, low: int, high: int) -> int:
    value = parse_number(text, flag, whole=True)
    if not low <= value <= high:
        raise InputError(f"{flag} must be a whole number in [{low:,}, {high:,}]; got {text!r}")
    return int(value)


def cache_hit(text: str) -> float:
    """`--cache-hit`: a share of prompt tokens in [0, 1); 0, the default, is no cache."""
    value = parse_number(text, "--cache-hit")
    if not 0 <= value < 1:
        raise InputError(f"--cache-hit must be a share in [0, 1); got {text!r}")
    return value


def read_stream(args: argparse.Namespace, dep: Deployment) -> tuple[Stream, Targets]:
    """The stream, the engine and the targets ``plan``'s flags describe."""
    rate = parse_number(args.rate, "--rate")
    if not rate > 0:
        raise InputError(f"--rate must be > 0 requests/s; got {args.rate!r}")
    inputs = parse_lengths(args.input, "--input")
    outputs = parse_lengths(args.output, "--output")
    longest = float(inputs.max() + outputs.max())
    if longest > dep.model.max_context:
        raise InputError(f"--input + --output must be <= {dep.model.name}'s max_context="
                         f"{dep.model.max_context:,}; got {longest:,.0f}")  # fmt: skip
    ttft, ttft_at = parse_target(args.ttft, "--ttft")
    tpot, tpot_at = parse_target(args.tpot, "--tpot")
    max_chips = _count(args.max_chips, "--max-chips", 1, 1024)
    if max_chips & (max_chips - 1):
        raise InputError(f"--max-chips must be a power of two (workers of 1, 2, 4, ... chips); "
                         f"got {args.max_chips!r}")  # fmt: skip
    running = _count(args.max_running, "--max-running", 1, 65_536)
    budget = _count(args.max_batched_tokens, "--max-batched-tokens", 1, 1_048_576)
    if budget < running:
        raise InputError(
            f"--max-batched-tokens ({budget:,}) must be >= --max-running ({running:,}): "
            "every running sequence decodes a token a step"
        )
    stream = Stream(
        rate_per_s=rate,
        input_tokens=inputs,
        output_tokens=outputs,
        cache_hit_fraction=cache_hit(args.cache_hit),
        max_running_sequences=running,
        max_batched_tokens=budget,
        chunked_prefill=not args.no_chunked_prefill,
        max_chips=max_chips,
        n_requests=_count(args.requests, "--requests", 100, 100_000),
        seed=_count(args.seed, "--seed", 0, 2**32 - 1),
    )
    return stream, Targets(ttft, tpot, ttft_at, tpot_at)


# ---- the answer -----------------------------------------------------------------------------
def worker_name(dep: Deployment) -> str:
    """A worker's layout without its DP 1: ``TP2``, ``TP4 PP2``, or ``1 chip``."""
    text = str(dep.layout).replace(" DP1", "").replace("DP1", "")
    return text or "1 chip"


def _pools(config: Configuration) -> str:
    return " + ".join(
        f"{pool.role} {pool.workers} x {worker_name(pool.deployment)}" for pool in config.pools
    )


def _config_data(config: Configuration | None) -> dict[str, Any] | None:
    if config is None:
        return None
    return {
        "mode": config.mode,
        "n_chips": config.n_chips,
        "configuration": _pools(config),
        "pools": [
            {
                "role": pool.role,
                "layout": str(pool.deployment.layout),
                "chips_per_worker": pool.deployment.n_chips,
                "workers": pool.workers,
                "n_chips": pool.n_chips,
            }
            for pool in config.pools
        ],
        "ttft_s": config.ttft_s,
        "tpot_s": config.tpot_s,
        "kv_transfer_s": config.transfer_s,
        "usd_per_hour": config.usd_per_hour,
        "usd_per_million_input": config.usd_per_million_input,
        "usd_per_million_output": config.usd_per_million_output,
    }


def _refusal_data(refusal: Refusal) -> dict[str, Any]:
    return {
        "mode": refusal.mode,
        "role": refusal.role,
        "layout": str(refusal.layout),
        "wall": refusal.wall,
        "why": refusal.why,
    }


def _setting(config: Configuration, stream: Stream) -> str:
    """The setting line of the chosen configuration's decoding worker."""
    worker = config.pools[-1].deployment
    context = stream.mean_input + stream.mean_output / 2.0
    return setting_line(worker, context, "perfect")


def plan_report(
    dep: Deployment,
    plans: list[ChipPlan],
    stream: Stream,
    targets: Targets,
    mode: str,
    kv: KVCacheDtype | None = None,
) -> Report:
    """What ``plan`` prints: the stream and targets, a table of the cheapest configuration per
    chip type, then per chip type the other mode, the setting line and the walls."""
    base = {k: v for k, v in settings(dep, "perfect", kv).items() if k not in ("chip", "n_chips")}
    data: dict[str, Any] = {
        "command": "plan",
        **base,
        "layout": None,
        "usd_per_chip_hour": None,
        "rate_per_s": stream.rate_per_s,
        "input_tokens_mean": stream.mean_input,
        "output_tokens_mean": stream.mean_output,
        "input_lengths": int(stream.input_tokens.size),
        "output_lengths": int(stream.output_tokens.size),
        "cache_hit_fraction": stream.cache_hit_fraction,
        "targets": dataclasses.asdict(targets),
        "engine": {
            "max_running_sequences": stream.max_running_sequences,
            "max_batched_tokens": stream.max_batched_tokens,
            "chunked_prefill": stream.chunked_prefill,
        },
        "max_chips": stream.max_chips,
        "modes": mode,
        "queueing": {
            "model": "simulate_batcher",
            "requests": stream.n_requests,
            "seed": stream.seed,
        },
        "chips": [],
    }
    report = Report(data)
    lengths = "means" if stream.input_tokens.size == stream.output_tokens.size == 1 else (
        "means of the lengths given")  # fmt: skip
    report.add(
        f"{dep.model.name}: {sig(stream.rate_per_s)} requests/s, {count(stream.mean_input)} "
        f"tokens in, {count(stream.mean_output)} out ({lengths}), "
        f"{stream.cache_hit_fraction:.0%} of prompts cached",
        f"  targets  TTFT <= {ms(targets.ttft_s)} ms at {targets.ttft_percentile}, TPOT <= "
        f"{ms(targets.tpot_s)} ms at {targets.tpot_percentile}",
        f"  engine   <= {count(stream.max_running_sequences)} sequences and "
        f"{count(stream.max_batched_tokens)} tokens a step, chunked prefill "
        f"{'on' if stream.chunked_prefill else 'off'}; up to {stream.max_chips} chips",
        f"  queueing simulated: {count(stream.n_requests)} Poisson arrivals (seed {stream.seed}) "
        "through continuous batching, floor step times",
        f"  KV cache {kv_format(dep, kv)}",
        "",
    )
    rows = []
    for chip_plan in plans:
        best = chip_plan.best
        data["chips"].append(
            {
                "chip": chip_plan.chip,
                "usd_per_chip_hour": chip_plan.usd_per_chip_hour,
                "best": _config_data(best),
                "setting": _setting(best, stream) if best is not None else None,
                **{mode_: _config_data(c) for mode_, c in chip_plan.by_mode.items()},
                "refused": [_refusal_data(r) for r in chip_plan.refused],
                "simulations": chip_plan.simulations,
            }
        )
        rows.append(_best_row(chip_plan, targets))
    report.add(
        "The cheapest configuration per chip type that meets both targets",
        table(
            [
                "chip",
                "$/chip-h",
                "mode",
                "configuration",
                "chips",
                "$/h",
                f"TTFT {targets.ttft_percentile} ms",
                f"TPOT {targets.tpot_percentile} ms",
                "$/M in",
                "$/M out",
            ],
            rows,
        ),
    )
    for chip_plan in plans:
        _chip_section(report, chip_plan, stream)
    report.add(
        "",
        "Chips = workers x chips per worker; the cheapest is the fewest chips (one price per\n"
        "chip type). $/M in and out split the rent at the stated rate (idle headroom included)\n"
        "by the chip time prefill and decode take. Walls: HBM (does not fit), compute,\n"
        "bandwidth, network (a step's largest part too slow, or the floor's rate on the most\n"
        "chips under the rate), queueing (the simulated percentile over the target).",
        floor_note(dep, "perfect"),
    )
    return report


def _best_row(chip_plan: ChipPlan, targets: Targets) -> list[str]:
    best = chip_plan.best
    price = usd(chip_plan.usd_per_chip_hour)
    if best is None:
        return [chip_plan.chip, price, "-", "none meets the targets", "-", "-", "-", "-", "-",
                "-"]  # fmt: skip
    return [
        chip_plan.chip,
        price,
        best.mode,
        _pools(best),
        count(best.n_chips),
        usd(best.usd_per_hour),
        ms(best.ttft_s),
        ms(best.tpot_s),
        usd(best.usd_per_million_input),
        usd(best.usd_per_million_output),
    ]


def _chip_section(report: Report, chip_plan: ChipPlan, stream: Stream) -> None:
    report.add("", f"{chip_plan.chip}:")
    best = chip_plan.best
    for mode, config in chip_plan.by_mode.items():
        if config is None:
            report.add(f"  {mode:<14} none meets the targets within {stream.max_chips} chips")
            continue
        ratio = ""
        if config.mode == "disaggregated":
            p, d = (pool.n_chips for pool in config.pools)
            ratio = f", P:D {p}:{d}, KV transfer {ms(config.transfer_s)} ms"
        mark = "  (chosen)" if config is best else ""
        chips = f"{config.n_chips} chip{'s' * (config.n_chips != 1)}"
        report.add(f"  {mode:<14} {_pools(config)}: {chips}{ratio}{mark}")
    if best is not None:
        line = _setting(best, stream)
        report.add(*textwrap.wrap(line, 84, initial_indent="  setting  ",
                                  subsequent_indent=" " * 11, break_on_hyphens=False))  # fmt: skip
    walls = Counter(r.wall for r in chip_plan.refused)
    summary = ", ".join(f"{walls[w]} {w}" for w in (*WALLS, "costlier") if walls[w])
    report.add(f"  refused  {summary or 'none'} ({chip_plan.simulations} simulations run)")
    failing = [r for r in chip_plan.refused if r.wall != "costlier"]
    shown = _one_per_worker(failing)
    if shown:
        report.add(
            textwrap.indent(
                table(
                    ["mode", "role", "worker", "wall", "why"],
                    [[r.mode, r.role, worker_name_of(r), r.wall, _short(r.why)] for r in shown],
                ),
                "  ",
            )
        )


def worker_name_of(refusal: Refusal) -> str:
    text = str(refusal.layout).replace(" DP1", "").replace("DP1", "")
    return text or "1 chip"


def _one_per_worker(refused: list[Refusal]) -> list[Refusal]:
    """One row per worker and wall: an HBM refusal once, not once per role."""
    seen, rows = set(), []
    for refusal in refused:
        key = (str(refusal.layout), refusal.wall, refusal.why)
        if refusal.wall == "HBM":
            key = (str(refusal.layout), "HBM", "")
        if key not in seen:
            seen.add(key)
            rows.append(refusal)
    return rows


def _short(text: str, width: int = 76) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def frontier_plot(
    dep: Deployment, plans: list[ChipPlan], stream: Stream, targets: Targets, path: str
) -> None:
    """Draw each chip type's frontier and its chosen configuration to ``path`` (.png, .svg)."""
    from llmmath.display.plots.plan import frontier_figure  # matplotlib only when asked

    fronts, chosen = [], []
    for chip_plan in plans:
        fronts.append(planning.frontier(dep, chip_plan.chip, chip_plan.usd_per_chip_hour, stream))
        if chip_plan.best is not None:
            best = chip_plan.best
            speed, rate = best.tokens_per_s_per_user, best.tokens_per_s_per_chip
            label = f"{chip_plan.chip}: {_pools(chip_plan.best)}"
            chosen.append((chip_plan.chip, speed, rate, label))
    title = (
        f"{dep.model.name}, {count(stream.mean_input)} in / {count(stream.mean_output)} out: "
        f"frontier (floors) and the plan at {sig(stream.rate_per_s)} req/s, "
        f"TPOT {targets.tpot_percentile}"
    )
    figure = frontier_figure(fronts, chosen, title)
    figure.savefig(path)


def check_plot_path(text: str | None) -> None:
    if text is None:
        return
    if not text.lower().endswith((".png", ".svg")):
        raise InputError(f"--plot {text!r} must name a .png or .svg file")
    folder = Path(text).parent
    if not folder.is_dir():
        raise InputError(f"--plot {text}: no such folder {str(folder)!r}")


def add_stream_flags(plan: argparse.ArgumentParser) -> None:
    """``plan``'s own flags: the chips compared, the request stream, its latency targets, the
    engine's caps, the search and the simulation (the model and format flags are ``serve``'s)."""
    plan.add_argument("--chips", required=True, help="chip types to compare, comma-separated, "
                      "each at its example price (data/chip_prices.toml) or CHIP=USD per "
                      "chip-hour, e.g. H100,B200=5")  # fmt: skip
    plan.add_argument("--chip-file", help="TOML file of extra chips, shaped like "
                      "data/hardware.toml (default: the presets only)")  # fmt: skip
    plan.add_argument("--rate", required=True, help="requests per second arriving (Poisson)")
    plan.add_argument("--input", default="2000", help="prompt tokens per request: a length, or "
                      "a file of lengths each request draws one from")  # fmt: skip
    plan.add_argument("--output", default="500", help="output tokens per request: a length, or "
                      "a file of lengths")  # fmt: skip
    plan.add_argument("--ttft", default="2s@p99", help="time to first token at a percentile "
                      "(p50 or p99), e.g. 2s@p99")  # fmt: skip
    plan.add_argument("--tpot", default="50ms@p99", help="time per output token at a "
                      "percentile, e.g. 50ms@p99")  # fmt: skip
    plan.add_argument("--cache-hit", default="0", help="share of prompt tokens found in the "
                      "prefix cache, in [0, 1)")  # fmt: skip
    plan.add_argument("--max-running", default="256", help="most sequences a worker runs at "
                      "once (vLLM's max_num_seqs)")  # fmt: skip
    plan.add_argument("--max-batched-tokens",
                      default=f"{serving_systems.default_prefill_chunk():.0f}",
                      help="tokens a step (vLLM's max_num_batched_tokens)")  # fmt: skip
    plan.add_argument("--no-chunked-prefill", action="store_true", help="prefill each prompt "
                      "whole in one step (default: chunked into the step's budget)")  # fmt: skip
    plan.add_argument("--mode", choices=("both", *MODES), default="both",
                      help="aggregated (prefill and decode on the same workers), "
                      "disaggregated (separate pools), or both")  # fmt: skip
    plan.add_argument("--max-chips", default="64", help="most chips per chip type (a power of "
                      "two; workers of 1, 2, 4, ... chips)")  # fmt: skip
    plan.add_argument("--requests", default="1000", help="requests the queueing simulation runs")
    plan.add_argument("--seed", default="0", help="the simulation's seed")
    plan.add_argument("--plot", help="draw the throughput-per-chip vs speed-per-user frontier "
                      "with the chosen points to FILE.png or FILE.svg (default: none)")  # fmt: skip


__all__ = [
    "add_stream_flags",
    "cache_hit",
    "check_plot_path",
    "frontier_plot",
    "parse_chips",
    "parse_lengths",
    "parse_target",
    "plan_report",
    "read_stream",
    "worker_name",
]

"""``llmmath best``: the cheapest layouts and batches for a latency target, decode alone or a
stream of requests with its prefill counted (:mod:`llmmath.beyond.layout_search`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from llmmath.beyond.layout_search import Candidate, best_layouts, best_workload_layouts
from llmmath.cli.formatting import Report, count, ms, sig, table, usd
from llmmath.cli.serve_and_fit import add_setting, floor_note, heading, links, settings
from llmmath.core.deployment import Deployment
from llmmath.core.hf_quant import KVCacheDtype


# ---- best -----------------------------------------------------------------------------------
def best(
    dep: Deployment,
    latency_s: float,
    context: float,
    top: int,
    overlap: str,
    requests: tuple[float, float] | None = None,
    kv: KVCacheDtype | None = None,
) -> Report:
    """The cheapest layouts and batches whose time per output token meets ``latency_s``:
    decode alone at ``context``, or with ``requests`` = (input, output tokens) the stream
    ``workload`` serves, prefill counted (its TPOT held to the target, its rate ranked)."""
    if requests is None:
        found = best_layouts(dep, latency_s, context, overlap=overlap)
    else:
        found = best_workload_layouts(dep, latency_s, *requests, overlap=overlap)
        context = requests[0] + requests[1] / 2.0  # the decode step's mean context
    rows = [_best_row(c, dep) for c in found.candidates]
    fastest = found.too_slow[0] if found.too_slow else None
    data = {
        "command": "best",
        **settings(dep, overlap, kv),
        "latency_s": latency_s,
        "context": context,
        "input_tokens": None if requests is None else requests[0],
        "output_tokens": None if requests is None else requests[1],
        "prefill_counted": requests is not None,
        "candidates": rows,
        "too_slow": len(found.too_slow),
        "do_not_fit": [str(layout) for layout in found.do_not_fit],
        "not_allowed": found.not_allowed,
        "fastest_too_slow": None
        if fastest is None
        else {"layout": str(fastest.layout), "time_s": fastest.time_per_token_s},
    }
    report = Report(data)
    heading(report, dep, layout=False, context=context, kv=kv)
    # The setting of the first row (its layout): the one the search recommends.
    first = dep if not found.candidates else replace(dep, layout=found.candidates[0].layout)
    add_setting(report, first, context, overlap)
    if requests is None:
        report.add(
            f"  target   {ms(latency_s)} ms per output token at {count(context)} tokens of "
            "context;",
            "           decode alone: prefill not counted (--input/--output count it)",
            "",
        )
    else:
        report.add(
            f"  target   {ms(latency_s)} ms per output token (TPOT, prefill beside the decodes)",
            f"  requests {count(requests[0])} tokens in, {count(requests[1])} out, colocated as "
            "workload serves them",
            "",
        )
    if rows:
        report.add(_best_table(found.candidates[:top], dep, requests is not None), "")
    else:
        report.add("No layout meets the target.")
    tried = len(found.candidates) + len(found.too_slow) + len(found.do_not_fit)
    summary = f"{tried} layouts tried: {len(rows)} meet the target"
    summary += f", {len(found.too_slow)} too slow even at batch 1"
    if fastest is not None:
        summary += f" (fastest {ms(fastest.time_per_token_s)} ms, {fastest.layout})"
    summary += f", {len(found.do_not_fit)} do not fit"
    if found.not_allowed:
        summary += f";\n{found.not_allowed} other splits of the chips the model does not allow"
    ranked = (
        "Ranked by output tokens per second per chip with the prefill counted (= by cost per\n"
        "request at any one price); each batch is the most sequences decoding at once whose\n"
        "TPOT meets the target and whose caches fit at input + output tokens; tok/s/chip are\n"
        "output tokens, prefill counted; $/M out is the decode's share, as workload's."
        if requests is not None
        else "Ranked by output tokens per second per chip (= by cost at any one price); each "
        "batch\nis the largest that meets the target and fits."
    )
    report.add(
        summary + ".",
        ranked + "\nlinks: up = within a scale-up domain, out = over the scale-out network.",
        floor_note(dep, overlap),
    )
    return report


def _best_row(c: Candidate, dep: Deployment) -> dict[str, Any]:
    row: dict[str, Any] = {
        "layout": str(c.layout),
        "batch": c.batch,
        "limited_by": c.limited_by,
        "time_s": c.time_per_token_s,
        "decode_step_s": float(c.step.time_s),
        "tokens_per_s_per_user": 1.0 / c.time_per_token_s,
        "tokens_per_s_per_chip": c.tokens_per_s_per_chip,
        "usd_per_million_output": c.cost_per_million_usd,
        "links": links(c.layout, dep),
    }
    if c.workload is not None:
        usd_in = c.workload.usd_per_million()[0] if c.cost_per_million_usd is not None else None
        row |= {"requests_per_s": c.workload.requests_per_s, "usd_per_million_input": usd_in}
    return row


def _best_table(candidates: list[Candidate], dep: Deployment, requests: bool) -> str:
    if not requests:
        return table(
            ["#", "layout", "batch", "limit", "step ms", "tok/s/chip", "$/M out", "links"],
            [
                [
                    str(i + 1),
                    str(c.layout),
                    count(c.batch),
                    c.limited_by,
                    ms(c.time_per_token_s),
                    count(c.tokens_per_s_per_chip),
                    usd(c.cost_per_million_usd),
                    links(c.layout, dep),
                ]
                for i, c in enumerate(candidates)
            ],
        )
    return table(
        ["#", "layout", "batch", "limit", "TPOT ms", "tok/s/chip", "req/s", "$/M out", "links"],
        [
            [
                str(i + 1),
                str(c.layout),
                count(c.batch),
                c.limited_by,
                ms(c.time_per_token_s),
                count(c.tokens_per_s_per_chip),
                sig(c.workload.requests_per_s),
                usd(c.cost_per_million_usd),
                links(c.layout, dep),
            ]
            for i, c in enumerate(candidates)
            if c.workload is not None
        ],
    )


__all__ = ["best"]

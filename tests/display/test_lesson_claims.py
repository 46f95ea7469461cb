"""Qualitative claims in the lessons, derived from the package for each lesson's own setting.

A sentence that says memory- or compute-bound, cheaper, the same, never, a gain or a loss is a
claim like a number. Each entry of ``CLAIMS`` names the lesson, a phrase of the sentence (its
anchor: the test fails if the sentence is reworded away, so the claim is looked at again) and a
predicate over the lesson's own namespace (what its hidden cells compute) that must hold for
the sentence to be true. Numbers are pinned elsewhere; this pins the words around them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from lesson_support import ROOT, lesson

from llmmath import batching
from llmmath.beyond.layout_search import workload
from llmmath.core import capacity, models, serving
from llmmath.core.deployment import Deployment
from llmmath.core.placement import Layout


@dataclass(frozen=True)
class Claim:
    page: str
    #: A phrase of the sentence, as the page has it (whitespace folded).
    anchor: str
    holds: Callable[[SimpleNamespace], bool]


def _steps(ns: SimpleNamespace, context: float) -> serving.DecodeStep:
    """Every batch that fits at ``context`` on the lesson's Llama-3-70B deployment."""
    room = float(capacity.max_batch(ns.llama, context))
    return batching.decode_step(ns.llama, np.arange(1.0, room + 1.0), context)


def _costs(ns: SimpleNamespace, context: float) -> np.ndarray:
    return np.asarray(_steps(ns, context).cost_per_million_tokens_usd())


CLAIMS = [
    # ---- the command line's page: its workload view and the reproduced measurements ----
    Claim(
        "book/cli.md",
        "so decode no longer waits for prompts",
        lambda _: (
            (tp8 := Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))) is not None
            and workload(tp8, 2000, 500, 64, disaggregated=True).tpot_s
            < workload(tp8, 2000, 500, 64).tpot_s
        ),
    ),
    Claim(
        "book/cli.md",
        "the floor's decode reads the KV caches at full bandwidth",
        lambda _: (
            _reproduced("trtllm-llama-3.3-70b-fp4-b200-tp4")["decode_bound_at_floor"] == "memory"
        ),
    ),
    Claim(
        "book/cli.md",
        "but their floors are network-bound",
        lambda _: all(
            _reproduced(key)["decode_bound_at_floor"] == "network"
            for key in ("sglang-deepseek-v3-decode-ep72-h100", "deepseek-day-decode-ep144-h800")
        ),
    ),
    Claim(
        "book/cli.md",
        "so the command counts the all-to-all the way DeepSeek runs it, the {ref}`MoE "
        "chapter's <moe>` node-limited dispatch: one fp8 copy per node a token reaches",
        lambda _: (
            all(
                (_reproduced(key)["expert_dispatch"], _reproduced(key)["dispatch_dtype"])
                == ("node_limited", "fp8")
                for key in ("sglang-deepseek-v3-decode-ep72-h100", "deepseek-day-decode-ep144-h800")
            )
            and models.get_model("DeepSeek-V3").expert_groups_per_token == 4
        ),
    ),
    Claim(
        "book/cli.md",
        "a slower floor that would flatter the two measurements",
        lambda _: all(
            _reproduced(key, "--dispatch per-expert")["measured_over_floor"]
            > _reproduced(key)["measured_over_floor"]
            for key in ("sglang-deepseek-v3-decode-ep72-h100", "deepseek-day-decode-ep144-h800")
        ),
    ),
    # ---- the command line's page: chunked prefill in the workload view ----
    Claim(
        "book/cli.md",
        "A smaller budget delays the first token of a long prompt and shortens the longest gap",
        lambda _: (
            _long_prompts("2048")["chunked_ttft_s"] > _long_prompts()["chunked_ttft_s"]
            and _long_prompts("2048")["longest_step_s"] < _long_prompts()["longest_step_s"]
        ),
    ),
    Claim(
        "book/cli.md",
        "stay the same at the floor, since the same prompt tokens are computed however they are",
        lambda _: all(
            _long_prompts("2048")[key] == pytest.approx(_long_prompts()[key], rel=1e-12)
            for key in ("tpot_s", "output_tokens_per_s_per_chip")
        ),
    ),
    # ---- the command line's page: its serve example at 8K of context ----
    Claim(
        "book/cli.md",
        "At 8K of context decode is memory-bound at every batch",
        lambda _: (
            (tp8 := Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))) is not None
            and capacity.critical_context(tp8) < 8192
            and not np.any(
                batching.decode_step(
                    tp8, np.array([1.0, 16, 64, 256]), 8192, allow_overflow=True
                ).compute_bound
            )
        ),
    ),
    Claim(
        "book/cli.md",
        "sizing a fleet from the decode-only ranking would buy {glue:text}`decode_over:.1f` "
        "times too few chips",
        # book/cli.md's setting: decode alone serves far more per chip than the stream does
        lambda ns: (
            _best_first_row("best Llama-3-70B H100x8 --dtype fp8 --latency 50ms --context 2250")[
                "tokens_per_s_per_chip"
            ]
            > 2
            * _best_first_row(
                "best Llama-3-70B H100x8 --dtype fp8 --latency 50ms --input 2000 --output 500"
            )["tokens_per_s_per_chip"]
        ),
    ),
]


def _best_first_row(arguments: str) -> dict[str, Any]:
    """The first row of ``llmmath best ARGUMENTS --json``."""
    import contextlib
    import io
    import json

    from llmmath.cli import parse_and_run as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*arguments.split(), "--json"]) == 0
    row: dict[str, Any] = json.loads(out.getvalue())["candidates"][0]
    return row


def _reproduced(key: str, extra: str = "") -> dict[str, Any]:
    """``llmmath workload`` of one of the measurements book/cli.md reproduces, as JSON (with
    ``extra`` options)."""
    import contextlib
    import io
    import json

    from llmmath.cli import parse_and_run as cli
    from llmmath.core import data

    spec = data.table("systems")["reproduced"][key]
    out = io.StringIO()
    argv = ["workload", *spec["workload"].split(), "--calibrate", str(spec["value"]), "--json"]
    argv += extra.split()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(argv) == 0
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def _long_prompts(budget: str | None = None) -> dict[str, Any]:
    """book/cli.md's chunked-prefill example (6,000-token prompts), as JSON, under a budget of
    ``budget`` tokens a step (default: the engines')."""
    import contextlib
    import io
    import json

    from llmmath.cli import parse_and_run as cli

    argv = ["workload", "Llama-3-70B", "H100x8", "--layout", "tp8", "--dtype", "fp8",
            "--input", "6000", "--output", "500", "--concurrency", "64", "--json"]  # fmt: skip
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main([*argv, *(["--prefill-chunk", budget] if budget else [])]) == 0
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def _benchmark_ratios() -> dict[str, tuple[float, str]]:
    """measured/floor and the floor's decode bound of each published serving benchmark
    (``llmmath calibrate``), as book/cli.md reads them."""
    from llmmath.cli import calibrate, parse_and_run

    runner = parse_and_run.workload_data
    results = [calibrate.run_benchmark(k, runner) for k in calibrate.benchmarks()]
    return {r.key: (r.ratio, r.bound) for r in results}


def _memory_beats_compute() -> bool:
    ratios = _benchmark_ratios()
    memory = [r for k, (r, b) in ratios.items() if b == "memory" and "fp4" not in k]
    compute = [r for r, b in ratios.values() if b == "compute"]
    lowest = min(ratios, key=lambda k: ratios[k][0])
    return bool(memory and compute and min(memory) > max(compute)) and (
        lowest == "trtllm-llama-3.3-70b-fp4-b200-tp4"
    )


def _bf16_cache_beats_the_floor() -> bool:
    """The 8B benchmark set up with a bf16 KV cache: its measurement beats that floor."""
    import contextlib
    import io

    from llmmath.cli import parse_and_run as cli

    argv = ["workload", "Llama-3-8B", "H100x1", "--dtype", "fp8", "--kv-dtype", "bf16",
            "--input", "1000", "--output", "1000", "--calibrate", "15220"]  # fmt: skip
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    return status == 2 and "beats the floor" in err.getvalue()


#: Issue 44's benchmark table on the CLI page.
CLAIMS += [
    Claim(
        "book/cli.md",
        "engines come closest",  # memory-bound floors met more closely than compute-bound ones
        lambda ns: _memory_beats_compute(),
    ),
    Claim(
        "book/cli.md",
        "of its floor, the lowest:",
        lambda ns: _memory_beats_compute(),
    ),
    Claim(
        "book/cli.md",
        "the same measurement beats the floor",
        lambda ns: _bf16_cache_beats_the_floor(),
    ),
]


def _plan_question() -> dict[str, Any]:
    """book/cli.md's practitioner's question, ``llmmath plan ... --json``, by chip type."""
    import contextlib
    import io
    import json

    from llmmath.cli import parse_and_run as cli

    argv = ["plan", "Llama-3-70B", "--chips", "H100,B200", "--rate", "20", "--input", "2000",
            "--output", "500", "--ttft", "2s@p99", "--tpot", "50ms@p99", "--dtype", "fp8",
            "--json"]  # fmt: skip
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(argv) == 0
    return {chip["chip"]: chip for chip in json.loads(out.getvalue())["chips"]}


#: The command line's page: plan's worked question (#44).
CLAIMS += [
    Claim(
        "book/cli.md",
        "H100s (disaggregated, prefill and decode pools",
        lambda _: (
            (h100 := _plan_question()["H100"])["best"]["mode"] == "aggregated"
            and [p["role"] for p in h100["disaggregated"]["pools"]] == ["prefill", "decode"]
        ),
    ),
]


def _page_text(page: str) -> str:
    """A lesson by its name, another page by its path from the root ("book/cli.md")."""
    path = ROOT / page if "/" in page else ROOT / "lessons" / page
    return " ".join(path.read_text().split())


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{c.page}:{c.anchor[:40]}")
def test_claim_is_on_its_page_and_holds(claim: Claim) -> None:
    assert " ".join(claim.anchor.split()) in _page_text(claim.page), (
        f"{claim.page} no longer says {claim.anchor!r}: re-derive the claim or drop it"
    )
    namespace = SimpleNamespace() if "/" in claim.page else lesson(claim.page)
    assert claim.holds(namespace), f"{claim.page}: the package no longer supports {claim.anchor!r}"


#: Issue 42: phrasings each true only in a setting the page had silently changed, by page.
ISSUE_42_GONE = {
    "batching.md": (
        "Slower, and exactly as expensive.",  # the TP all-reduces at batch 1: TP8 38% dearer
        "that it is always bandwidth-bound",  # absorbed MLA does ~242 FLOP/byte, near C/W
        "Vendors charge more than either",  # Opus 5's 2x is below the floor's 2.8x at 1,024
        "The floor charges less than that for the speed at either context",
        "so speculation never turns into a loss here",  # held only without the draft's KV
        "from a draft model costing 2% of a step",
        "One decode step lands near the first number",  # 139,611 tok/s left the all-to-all out
        "spread evenly, the expert {ref}`all-to-all <glossary-all-to-all>` left out",
        "DeepSeek-V3 computing in bf16 would reach",  # T_c named without attention's format
    ),
    "roofline.md": (
        # max is a bound; the sum is not one (a poor kernel is slower), nor Williams et al.'s
        "and at most their sum {cite}`williams2009roofline`",
    ),
    "book/intro.md": (
        # 5.19 ms named without its setting; the page maps the server's four latencies now
        "(one decode step of Llama-3-70B on eight H100s), read",
    ),
}


@pytest.mark.parametrize("page", sorted(ISSUE_42_GONE))
def test_issue_42_wrong_phrasings_do_not_return(page: str) -> None:
    text = _page_text(page)
    for wrong in ISSUE_42_GONE[page]:
        assert " ".join(wrong.split()) not in text, f"{page} says again: {wrong!r}"

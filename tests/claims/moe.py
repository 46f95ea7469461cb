"""What lessons/moe.md says in words, pinned to the package for its own settings
(src/llmmath/display/numbers/moe/): claims, the erratum of issue 18/42 (the rack widens EP
eightfold), the lesson's rack and imbalance checks (issue 18), its all-to-all formula and
node-limited dispatch checks (issue 32), and its wide-EP runs against the command line's."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import shlex
from fractions import Fraction

import numpy as np
import pytest
from lesson_support import ROOT

from claims import Claim, chapter_numbers, check_claim, claim_id, page_words
from llmmath import get_chip, moe
from llmmath.beyond import moe_balance, moe_dispatch, rack_physics
from llmmath.cli import parse_and_run
from llmmath.core import collectives, data, models
from llmmath.display.numbers.moe.experts import HGX, NVL72

CLAIMS = [
    # ---- the all-to-all formula and DeepSeek's node-limited dispatch (issue 32) ----
    Claim(
        "the all-to-all can hide under the arithmetic.",
        lambda n: n.all_to_all.terms_in.total < 1 < n.all_to_all.terms_out.total,
    ),
    Claim(
        "(the last term grows as $G$ shrinks each GPU's compute)",
        lambda n: (
            moe_dispatch.all_to_all_ratio(n.params.deepseek, n.all_to_all.batch, 8, NVL72).latency
            < moe_dispatch.all_to_all_ratio(
                n.params.deepseek, n.all_to_all.batch, 64, NVL72
            ).latency
        ),
    ),
    Claim(
        "DeepSeek-V3 sends fewer, in two ways.",
        lambda n: (
            float(n.all_to_all.per_expert_copies)
            > n.all_to_all.per_node.network_copies_per_token
            > n.all_to_all.limited.network_copies_per_token
        ),
    ),
    Claim(
        "with one copy per node alone",
        lambda n: bool(
            n.all_to_all.spilled.all_to_all_s
            > n.all_to_all.per_node_step.all_to_all_s
            > n.all_to_all.limited_step.all_to_all_s
        ),
    ),
    Claim(
        "Node-limited dispatch cuts the NIC's bytes by more than half",
        lambda n: bool(
            n.all_to_all.limited.network_bytes_per_gpu
            < 0.5 * n.all_to_all.spilled.all_to_all_bytes_per_gpu * (64 - 8) / 64
        ),
    ),
    Claim(
        "yet the all-to-all still takes longer than the experts' compute",
        lambda n: bool(
            n.all_to_all.limited_fp8_step.all_to_all_s > n.all_to_all.limited_fp8_step.compute_s
        ),
    ),
    Claim(
        "node-limited fp8 dispatch, still more than the compute",
        lambda n: bool(n.all_to_all.limited_fp8_step.communication_bound),
    ),
    Claim(
        "in serving as in training",
        lambda n: int(n.all_to_all.topk_group) < int(n.all_to_all.n_group),
    ),
    # ---- the third read (#32) ----
    Claim(
        "(the small gap is the input embedding, which is a lookup, not a matmul)",
        lambda n: all(
            math.isclose(
                moe.compute_bound_batch(spec, n.params.h100, "model"),
                float(n.batches.critical)
                * (c.total - spec.vocab_size * spec.d_model)
                / (c.active - spec.vocab_size * spec.d_model),
                rel_tol=1e-6,
            )
            for spec in (n.params.mixtral, n.params.deepseek)
            for c in [moe.param_counts(spec)]
        ),
    ),
    Claim(
        "and at that batch the all-to-all is of the same order as the arithmetic",
        # EP inside one domain at the lesson's 8,192 tokens: HGX H100 (EP8) and NVL72 (EP64)
        lambda n: all(
            0.3 < r < 3 for r in (n.all_to_all.hgx8_ratio_value, n.all_to_all.nvl64_ratio_value)
        ),
    ),
    Claim(
        "about {eval}`n.check.q3_ratio`× the experts' compute: the layer is communication-bound",
        lambda n: (
            float(n.check.q3.all_to_all_s) > 2 * float(n.check.q3.compute_s)
            and float(n.check.q3.all_to_all_s) > float(n.check.q3.weight_read_s)
        ),
    ),
    Claim(
        "so their ratio does not depend on the batch — only on which links carry the bytes — "
        "except for the links' fixed latency, which matters only at small batch.",
        lambda n: all(
            math.isclose(small.bandwidth, big.bandwidth, rel_tol=1e-12)
            and small.latency > 10 * big.latency
            and big.latency < 0.05 * big.total
            for G in (8, 64)
            for small, big in [
                (
                    moe_dispatch.all_to_all_ratio(n.params.deepseek, 64, G, HGX),
                    moe_dispatch.all_to_all_ratio(n.params.deepseek, n.all_to_all.batch, G, HGX),
                )
            ]
        ),
    ),
    # ---- attention beside wide EP, and published rack-scale runs (#43 item 7) ----
    Claim(
        "what limits the batch is the KV cache",
        lambda n: (
            float(n.attention.dp_split.weight_bytes_per_gpu)
            > float(n.attention.tp_split.weight_bytes_per_gpu)
            and all(
                np.asarray(n.attention.dp_split.group_batch)
                > np.asarray(n.attention.tp_split.group_batch)
            )
        ),
    ),
    Claim(
        "the group's {eval}`n.attention.dp_short_batch` sequences clear the "
        "{eval}`n.attention.dp_expert_batch` tokens a step its expert layers need to be "
        "compute-bound",
        lambda n: bool(n.attention.dp_split.pays[0]) and not bool(n.attention.tp_split.pays[0]),
    ),
    Claim(
        "the cache, not the experts, sets the batch, and at this width the experts stay "
        "memory-bound",
        lambda n: not any(n.attention.dp_split.pays[1:]),
    ),
    Claim(
        "the floor's decode step is {eval}`n.wide.h100_bound`-bound",
        lambda n: (
            n.wide.h100_bound == "network"
            and n.wide.rack_bound == "compute"
            and not collectives.fits_in_scale_up(72, get_chip("H100"))
            and collectives.fits_in_scale_up(48, get_chip("GB200-NVL72"))
        ),
    ),
    Claim(
        "Neither run is near its floor",
        lambda n: all(run.measured_over_floor < 0.5 for run in n.wide.runs.values()),
    ),
    Claim(
        "Past these contexts the group's experts stay memory-bound",
        lambda n: (
            n.check.q4_context_tp_value < n.check.q4_context_value
            and all(
                bool(
                    moe.attention_beside_ep(
                        n.params.deepseek,
                        n.params.h100,
                        n.attention.ep,
                        scale * n.check.q4_context_value,
                        weight_dtype=n.attention.dtype,
                        compute_dtype=n.attention.dtype,
                    ).pays
                )
                == pays
                for scale, pays in ((0.99, True), (1.01, False))
            )
        ),
    ),
    Claim(
        "Per layer, the experts are the last part of the step to turn compute-bound",
        lambda n: all(
            moe.compute_bound_batch(spec, n.params.h100, "expert_layer")
            > moe.compute_bound_batch(spec, n.params.h100, "model")
            > float(n.batches.critical)
            for spec in (n.params.mixtral, n.params.deepseek)
        ),
    ),
    Claim(
        "TPU pods are far larger but their data-centre network ({ref}`DCN <glossary-dcn>`) is "
        "slower still",
        lambda n: all(
            d.n_chips > 72
            and d.scale_out_bandwidth_bytes_per_s
            < moe.get_domain(NVL72).scale_out_bandwidth_bytes_per_s
            for name in moe.list_domains()
            if name.startswith("TPU")
            for d in [moe.get_domain(name)]
        ),
    ),
    Claim(
        "more than its {eval}`n.rack.h100_hbm_gb` GB — and the whole model",
        lambda n: (
            moe.expert_bytes_per_gpu(n.params.deepseek, 8, "fp8") > n.params.h100.hbm_bytes
            and n.params.deepseek.weight_bytes("fp8") > n.domains.hgx.hbm_bytes
        ),
    ),
    Claim(
        "Memory is not the binding limit of one expert layer; the all-to-all is.",
        lambda n: (
            moe.max_expert_layer_params(NVL72) > 10 * moe.expert_layer_params(n.params.deepseek)
            and float(n.all_to_all.spilled.all_to_all_s) > float(n.all_to_all.spilled.compute_s)
        ),
    ),
    Claim(
        "is right only at the extremes: the first is too pessimistic at small batch, the others "
        "far too optimistic at any batch above a handful",
        lambda n: (
            models.weight_params_read(n.params.deepseek, 1) < 0.1 * n.params.deepseek.total_params
            and models.weight_params_read(n.params.deepseek, 8)
            > 4 * n.params.deepseek.matmul_params_per_token
        ),
    ),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=claim_id)
def test_claim_is_on_its_page_and_holds(claim: Claim) -> None:
    check_claim("moe", claim)


# ---- the rack widens expert parallelism eightfold (issue 18's erratum, issue 42) -------------
def test_moe_rack_widens_expert_parallelism_eightfold() -> None:
    n = chapter_numbers("moe")
    gain = moe.max_ep_width(256, NVL72) / moe.max_ep_width(256, HGX)
    assert gain == 8
    assert n.rack.ep_gain == "8"
    words = page_words("moe")
    assert "nine times" not in words
    # Issue 42: with redundant copies (the same chapter's EP144, the CLI's
    # --redundant-experts) EP72 fills the rack: 9x, said beside the even split's 8x.
    copies = moe.copies_to_fill(256, NVL72)
    assert copies == 32 and (256 + copies) % 72 == 0
    assert moe.copies_to_fill(256, HGX) == 0
    assert (n.rack.nvl72_copies, n.rack.nvl72_slots, n.rack.ep_gain_filled) == ("32", "4", "9")
    assert "{eval}`n.rack.ep_gain_filled` times" in words
    assert "over at most 64 GPUs" not in words
    assert "*floor* argument" in words
    # The takeaway's reason the node is not enough: the experts alone overflow an H100.
    held = float(moe.expert_bytes_per_gpu(n.params.deepseek, 8, "fp8"))
    assert held > n.params.h100.hbm_bytes


# ---- the rack's physical limits and hot experts (issue 18) ----------------------------------
def test_moe_lesson_rack_claims() -> None:
    physics = chapter_numbers("moe").physics
    nvl72, dgx, room = physics.nvl72_rack, physics.hgx_rack, physics.room
    air = rack_physics.gpus_in_power_budget(room["air_cooled_rack_max_w"], nvl72.watts_per_gpu)
    legacy = rack_physics.gpus_in_power_budget(room["legacy_rack_w"], nvl72.watts_per_gpu)
    nodes = rack_physics.gpus_in_power_budget(room["air_cooled_rack_max_w"], dgx.rack_power_w)
    assert (physics.air_gpus, physics.legacy_gpus, physics.hgx_nodes_air) == (
        str(air),
        str(legacy),
        str(nodes),
    )
    # "{air_gpus} GPUs: a third of an NVL72 rack": air cannot cool the 72-GPU domain.
    assert air * 3 == nvl72.gpus
    assert legacy < air < nvl72.gpus
    # The air-cooled H100 rack holds several 8-GPU nodes, each its own NVLink domain.
    assert nodes > 1 and nodes * dgx.gpus == air
    # "more than many raised floors were rated to carry": well over a tonne.
    assert nvl72.weight_kg > 1000
    assert nvl72.rack_power_w > room["air_cooled_rack_max_w"]
    # "denser rather than wider": the 576-die rack draws more per package, in one rack.
    kyber = rack_physics.get_rack("Kyber NVL576 (Rubin Ultra)")
    assert kyber.watts_per_gpu > nvl72.watts_per_gpu and kyber.rack_power_w > nvl72.rack_power_w
    assert data.table("systems")["racks"][kyber.name]["gpu_dies"] == 576
    assert physics.kyber_dies == "576"
    # Domains past one rack: denser NVLink racks, and TPU pods of thousands of chips.
    chips = [d.chips for d in rack_physics.domain_sizes()]
    assert chips == sorted(chips) and chips[-1] > 1000


def test_moe_lesson_imbalance_claims() -> None:
    n = chapter_numbers("moe")
    spec = data.table("systems")
    redundant = spec["deepseek_redundant_experts"]
    serving_spec = spec["deepseek_serving"]
    assert (256 + redundant["prefill_redundant_experts"]) % redundant["prefill_gpus"] == 0
    assert (256 + serving_spec["decode_redundant_experts"]) % serving_spec["decode_ep"] == 0
    hot = moe_balance.zipf_expert_loads(256, 0.5)
    ep32 = moe_balance.imbalance_slowdown(hot, 32)
    ep32_copies = moe_balance.imbalance_slowdown(hot, 32, 32)
    ep144_copies = moe_balance.imbalance_slowdown(hot, 144, 32)
    assert (n.balance.slow_ep32, n.balance.slow_ep32_copies, n.balance.slow_ep144_copies) == (
        f"{ep32:.2f}",
        f"{ep32_copies:.2f}",
        f"{ep144_copies:.2f}",
    )
    # "runs {slow_ep32}x slower without copies and {slow_ep32_copies}x with 32"
    assert ep32 > 1.4 and ep32_copies < 1.01
    # "Wide EP balances worse", even under uniform routing (256 over 144 does not split).
    assert ep144_copies > ep32_copies
    assert moe_balance.imbalance_slowdown(np.ones(256), 144, 32) > 1.05
    # "Why not {hot_expert}x?": the hottest GPU holds the hot expert plus 7 cold ones.
    top = moe_balance.gpu_loads(hot, 32)[0]
    assert hot[0] + hot[-7:].sum() <= top < hot[0] + 7 * hot.mean()
    assert ep32 == pytest.approx(top / 8)
    assert n.balance.ep32_cold == "7"
    # The table's skews stay under top-8's cap of E/k times the mean.
    cap = moe.sparsity(n.params.deepseek, "experts")
    assert moe_balance.zipf_expert_loads(256, 0.8)[0] < cap
    # On EP64 in a rack the layer's compute floor stretches by the slowdown.
    assert moe_balance.imbalance_slowdown(hot, 64) > ep32


# ---- the all-to-all formula and node-limited dispatch (issue 32) -----------------------------
def test_lesson_formula_gives_the_numbers_beside_it() -> None:
    a2a = chapter_numbers("moe").all_to_all
    k_over = float(Fraction(a2a.shared_term))  # "8/9"
    for bw, share, lat, shown in (
        (a2a.bw_term_in, a2a.share_in, a2a.lat_term_in, a2a.hgx8_ratio_2f),
        (a2a.bw_term_out, a2a.share_out, a2a.lat_term_out, a2a.hgx64_ratio_1f),
    ):
        value = float(bw) * k_over * float(Fraction(share)) + float(lat)
        digits = len(shown.split(".")[1])
        assert format(value, f".{digits}f") == shown
    # Without the shared expert's k/(k+s) the formula gave 0.63 and 5.6, not 0.56 and 5.1.
    assert format(float(a2a.bw_term_in) * 7 / 8, ".2f") != a2a.hgx8_ratio_2f


def test_lesson_node_limited_numbers() -> None:
    a2a = chapter_numbers("moe").all_to_all
    routing = data.table("systems")["deepseek_routing"]
    # One group per node (EP64 over 8 nodes = 8 groups): the node limit is topk_group.
    assert routing["n_group"] == 64 // 8 and routing["max_nodes_per_token"] == routing["topk_group"]
    assert routing["topk_group"] < routing["n_group"]  # the released config keeps the limit
    step = moe_dispatch.node_limited_step(
        "DeepSeek-V3", 8192, 64, HGX, max_domains=4, dispatch_dtype="fp8"
    )
    assert a2a.limited_fp8_ratio == format(float(step.all_to_all_s / step.compute_s), ".1f")
    assert (a2a.hgx64_ratio_1f, a2a.limited_ratio, a2a.limited_fp8_ratio) == ("5.1", "2.3", "1.8")
    assert (a2a.limited_copies, a2a.per_expert_copies, a2a.per_node_copies) == ("3.2", "7", "4.6")


def test_exercise_model_answer_quotes_the_lesson() -> None:
    nb = json.loads((ROOT / "solutions/moe/moe.ipynb").read_text())
    answer = "".join(next(c for c in nb["cells"] if c.get("id") == "reflection")["source"])
    answer = " ".join(answer.split())
    found = re.search(r"about ([\d.]+)x the compute at EP64, ([\d.]+)x with fp8 dispatch", answer)
    assert found, "the reflection's model answer no longer prices node-limited dispatch"
    a2a = chapter_numbers("moe").all_to_all
    assert found.groups() == (a2a.limited_ratio, a2a.limited_fp8_ratio)
    assert "during training)" not in answer  # the limit holds in serving too


# ---- the wide-EP runs: one count with the command line ---------------------------------------
def test_wide_ep_runs_are_what_workload_calibrate_reports() -> None:
    """The page's wide-EP table calls the package functions ``llmmath workload --calibrate``
    calls (the display layer does not import the CLI); this runs that command line at each
    run's stored setting (data/systems.toml's ``workload`` and ``value``, as book/cli.md and
    ``llmmath calibrate`` run the reproduced specs) and wants the same numbers."""
    wide = chapter_numbers("moe").wide
    systems = data.table("systems")
    stored = {"h100": systems["reproduced"]["sglang-deepseek-v3-decode-ep72-h100"]}
    assert {key: run.spec for key, run in wide.runs.items()} == {**stored, **systems["wide_ep"]}
    for key, run in wide.runs.items():
        argv = shlex.split(f"workload {run.spec['workload']} --calibrate {run.spec['value']}")
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert parse_and_run.main([*argv, "--json"]) == 0, key
        reported = json.loads(out.getvalue())
        deployment = run.floor.deployment
        assert (reported["model"], reported["chip"], reported["n_chips"], reported["layout"]) == (
            deployment.model.name,
            deployment.chip.name,
            deployment.n_chips,
            str(deployment.layout),
        ), key
        assert reported["floor_output_tokens_per_s_per_chip"] == run.floor.measured_rate, key
        assert reported["measured_over_floor"] == run.measured_over_floor, key
        assert reported["fitted_efficiency"] == run.efficiency, key
        assert reported["decode_bound_at_floor"] == run.bound, key
        assert reported["decode_tokens_per_s_per_chip"] == run.fitted.measured_rate, key
        # and the page's row shows what the command reports
        row = (
            f"| {reported['floor_output_tokens_per_s_per_chip']:,.0f} "
            f"| {reported['measured_over_floor']:.2f} | {reported['decode_bound_at_floor']} |"
        )
        assert row in wide.table, key

"""Qualitative claims in the lessons, derived from the package for each lesson's own setting.

A sentence that says memory- or compute-bound, cheaper, the same, never, a gain or a loss is a
claim like a number. Each entry of ``CLAIMS`` names the lesson, a phrase of the sentence (its
anchor: the test fails if the sentence is reworded away, so the claim is looked at again) and a
predicate over the lesson's own namespace (what its hidden cells compute) that must hold for
the sentence to be true. Numbers are pinned elsewhere; this pins the words around them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from lesson_support import ROOT, lesson

from llmmath import batching, moe
from llmmath.beyond import moe_dispatch, serving_modes, serving_systems, speculative
from llmmath.beyond.layout_search import workload
from llmmath.core import capacity, models, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
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
    # ---- batching: the floor and the serial estimate ----
    Claim(
        "batching.md",
        "Below $C\\,b_w/2W$ (the batch where the matmuls' FLOPs catch up with their weight read, "
        "below) the two are the same number; above it the estimate is the larger.",
        lambda ns: bool(
            np.allclose(
                (s := batching.decode_step(ns.llama, np.arange(1.0, 296.0), 2048)).serial_s,
                s.floor_s,
                rtol=1e-12,
            )
            and np.all(
                (b := batching.decode_step(ns.llama, np.arange(296.0, 744.0), 2048)).serial_s
                > b.floor_s
            )
        ),
    ),
    # ---- batching: the cost keeps falling past C/W at 2,048 tokens ----
    Claim(
        "batching.md",
        "It keeps falling: the",
        lambda ns: bool(np.all(np.diff(_costs(ns, 2048)) < 0)),
    ),
    Claim(
        "batching.md",
        "Past it the weights no longer dominate, but the step is not yet compute-bound",
        lambda ns: (
            bool(ns.at_critical.weights_amortized) and not bool(ns.at_critical.compute_bound)
        ),
    ),
    Claim(
        "batching.md",
        "past $T_c$ every sequence added brings more reading than arithmetic, and **no batch is "
        "compute-bound**",
        lambda ns: (
            not np.any(_steps(ns, 1.01 * ns.t_c_value).compute_bound)
            and math.isinf(capacity.step_critical_batch(ns.llama, 1.01 * ns.t_c_value))
        ),
    ),
    Claim(
        "batching.md",
        "so the cost stops falling at \\${eval}`B_1k_cost` per million, the FLOPs' own cost",
        lambda ns: (
            bool(ns.at_B_1k.compute_bound)
            and ns.B_1k_value < float(capacity.max_batch(ns.llama, 1024))
            and float(np.min(_costs(ns, 1024)))
            >= 0.999 * float(ns.at_B_1k.cost_per_million_tokens_usd())
        ),
    ),
    Claim(
        "batching.md",
        "At 2,048 tokens the step is memory-bound at every batch that fits, and the cost falls "
        "until the HBM is full",
        lambda ns: (
            not np.any(_steps(ns, 2048).compute_bound)
            and int(np.argmin(_costs(ns, 2048))) == len(_costs(ns, 2048)) - 1
        ),
    ),
    Claim(
        "batching.md",
        "toward the KV read alone: a token at context $T$ costs at least",
        lambda ns: bool(
            np.all(
                _steps(ns, 2048).stage_s / _steps(ns, 2048).batch
                >= _steps(ns, 2048).kv_read_s / _steps(ns, 2048).batch
            )
        ),
    ),
    Claim(
        "batching.md",
        "At 8k context this server is memory-bound at every batch",
        lambda ns: not np.any(_steps(ns, 8192).compute_bound),
    ),
    Claim(
        "batching.md",
        "and 2,048 is past their $T_c$ of {eval}`v5e_t_c`",
        lambda ns: capacity.critical_context(ns.v5e) < 2048,
    ),
    Claim(
        "batching.md",
        "sparsity lowers the FLOPs per token (active parameters) and with them $T_c$; MLA's small "
        "cache pushes it out again",
        lambda ns: (
            capacity.critical_context(Deployment("Mixtral-8x7B", "H100", 2))
            < capacity.critical_context(ns.llama)
            and ns.t_c_setups[-1][1].model.kv_bytes_per_token(ns.t_c_setups[-1][1].kv_dtype)
            < ns.llama.model.kv_bytes_per_token(ns.llama.kv_dtype)
        ),
    ),
    Claim(
        "batching.md",
        "A small dense model does few FLOPs per token against the same kind of cache, so its $T_c$ "
        "is short",
        lambda ns: (
            capacity.critical_context(ns.t_c_setups[0][1]) < capacity.critical_context(ns.llama)
        ),
    ),
    Claim(
        "batching.md",
        "far more than halved",
        lambda ns: (
            capacity.critical_context(ns.t_c_setups[-1][1])
            < 0.5
            * capacity.critical_context(Deployment("DeepSeek-V3", "H100", 16, weight_dtype="fp8"))
        ),
    ),
    # ---- batching: latency ----
    Claim(
        "batching.md",
        "just under it",
        lambda ns: (
            0.98 * capacity.hbm_floor_s("H100")
            < float(ns.full.time_s)
            < capacity.hbm_floor_s("H100")
        ),
    ),
    Claim(
        "batching.md",
        "room for less than one more sequence's cache",
        lambda ns: (
            0
            <= ns.llama.kv_budget_bytes
            - float(ns.full.batch) * 8192 * ns.llama.model.kv_bytes_per_token(ns.llama.kv_dtype)
            < 8192 * ns.llama.model.kv_bytes_per_token(ns.llama.kv_dtype)
        ),
    ),
    Claim(
        "batching.md",
        "there, every sequence added costs latency from the start",
        lambda ns: (
            float(batching.decode_step(ns.llama, 2, 8192).time_s)
            > float(batching.decode_step(ns.llama, 1, 8192).time_s)
        ),
    ),
    # ---- batching: slow mode ----
    Claim(
        "batching.md",
        "At the floor, slower and exactly as expensive",
        lambda ns: len({ns.alone_2_cost, ns.alone_4_cost, ns.alone_8_cost}) == 1,
    ),
    Claim(
        "batching.md",
        "there the wider server is the dearer one",
        # The serial TP step is the parallelism chapter's tp_decode_breakdown, and its cost
        # rises with the chips (issue 42: TP2 $24.56, TP4 $26.81, TP8 $33.88 at 2,048 tokens).
        lambda ns: (
            all(
                float(
                    serving_systems.tp_decode_breakdown("Llama-3-70B", "H100", n, 1, 2048).serial_s
                )
                == pytest.approx(float(ns.lone_tp[n].step(1).time_s), rel=1e-12)
                for n in (2, 4, 8)
            )
            and ns.lone_cost[2] < ns.lone_cost[4] < ns.lone_cost[8]
            and abs(ns.lone_cost[8] / ns.lone_cost[2] - 1.38) < 0.01
        ),
    ),
    Claim(
        "batching.md",
        "no way of serving a lone sequence costs less than the floor's rent of its weight read",
        lambda ns: min(ns.lone_cost.values()) > float(ns.alone_8_cost) == float(ns.alone_2_cost),
    ),
    Claim(
        "batching.md",
        "a user willing to wait 100 ms per token pays the same",
        lambda ns: (
            float(ns.slow.cost_per_million_usd[0])
            == pytest.approx(ns.slow.floor_cost_per_million_usd, rel=1e-12)
            and ns.slow.saturation_latency_s < 0.1
        ),
    ),
    # ---- batching: fast mode ----
    Claim(
        "batching.md",
        "The price climbs slowly at first",
        lambda ns: (
            float(ns.fast.price_multiple[1] - 1) < 0.5
            and float(ns.fast.price_multiple[4]) > 3 * float(ns.fast.price_multiple[1])
        ),
    ),
    Claim(
        "batching.md",
        "Only Opus 4.6's price is above the floor's at both contexts",
        lambda ns: (
            ns.opus46.speedup == ns.opus5.speedup == 2.5 == ns.fast.speedup[3]
            and ns.fast_1k.speedup[1] == 2.5
            and ns.opus46.price_multiple
            > max(float(ns.fast.price_multiple[3]), float(ns.fast_1k.price_multiple[1]))
            and ns.opus5.price_multiple
            < max(float(ns.fast.price_multiple[3]), float(ns.fast_1k.price_multiple[1]))
        ),
    ),
    Claim(
        "batching.md",
        "is above the floor's {eval}`fast_25_multiple`× at 2,048 tokens but below its "
        "{eval}`fast_1k_25_multiple`× at 1,024",
        lambda ns: (
            float(ns.fast.price_multiple[3])
            < ns.opus5.price_multiple
            < float(ns.fast_1k.price_multiple[1])
        ),
    ),
    Claim(
        "batching.md",
        "at the floor the price does not change",
        lambda ns: bool(np.allclose(ns.fast.wider_price_multiple, 1.0, rtol=1e-9)),
    ),
    # ---- batching: the frontier batch ----
    Claim(
        "batching.md",
        "long before the step would turn compute-bound",
        lambda ns: (
            capacity.step_critical_batch(ns.frontier, 2048)
            > float(capacity.max_batch(ns.frontier, 2048))
        ),
    ),
    # ---- batching: batch APIs ----
    Claim(
        "batching.md",
        "at 256 tokens the 10 ms batch is already the cheapest",
        lambda ns: (
            ns.deferred_short.batching_saving == 0.0
            and ns.deferred_short.interactive_batch == ns.deferred_short.floor_batch
        ),
    ),
    Claim(
        "batching.md",
        "worth the most at long context",
        lambda ns: ns.deferred.batching_saving > ns.deferred_short.batching_saving,
    ),
    # ---- batching: speculative decoding ----
    Claim(
        "batching.md",
        "With the HBM full ({eval}`max_b_2k` sequences) the gain is gone",
        lambda ns: (
            abs(float(ns.spec_at.speedup[-1]) - 1.0) < 0.01
            and float(ns.spec_at.batch[-1]) == ns.max_b_2k_value
            and ns.spec_at.draft_kv_share == 0.1
        ),
    ),
    Claim(
        "batching.md",
        "Leave the draft's caches out and the full batch would still show",
        lambda ns: (
            float(ns.spec_full_no_kv) > 1.05
            and bool(
                np.all(
                    speculative.speculative_step(
                        ns.llama, np.arange(1.0, ns.max_b_2k_value + 1), 2048, 3, 0.7, 0.02
                    ).speedup
                    > 1.0
                )
            )
        ),
    ),
    Claim(
        "batching.md",
        "it stops paying at batch {eval}`spec_break_256`",
        lambda ns: (
            math.isfinite(ns.spec_break_256_value)
            and float(
                speculative.speculative_step(
                    ns.llama, ns.spec_break_256_value, 256, 3, 0.7, 0.02, draft_kv_share=0.1
                ).speedup
            )
            <= 1.0
        ),
    ),
    Claim(
        "batching.md",
        "speculative decoding gets past it with more than one token per step",
        lambda ns: float(ns.draft_1.speedup) > 1.0 and float(ns.draft_1.tokens_per_step) > 1.0,
    ),
    Claim(
        "batching.md",
        "At batch 4 it gives only",
        lambda ns: float(ns.mtp_small.speedup) < float(ns.mtp_big.speedup),
    ),
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
    # ---- batching: check yourself ----
    Claim(
        "batching.md",
        "So no: the cheapest token here is set by the KV read, with the HBM full.",
        lambda ns: (
            not np.any(_steps(ns, 4096).compute_bound)
            and serving_modes.slow_mode(ns.llama, 4096, 1.0).floor_limit == "memory capacity"
        ),
    ),
    Claim(
        "batching.md",
        "A lone user's token costs the same however long it waits.",
        lambda ns: len({ns.alone_2_cost, ns.alone_4_cost, ns.alone_8_cost}) == 1,
    ),
    # ---- batching: issue 32's re-read (numbers the page now derives, and their words) ----
    Claim(
        "batching.md",
        "Why does a token cost over a hundred times less",
        lambda ns: (
            float(ns.one.cost_per_million_tokens_usd())
            > 100 * float(ns.full_2k.cost_per_million_tokens_usd())
        ),
    ),
    Claim(
        "batching.md",
        "Almost all of it ({eval}`one_weight_share`) is the weight read.",
        lambda ns: float(ns.one.weight_read_s / ns.one.time_s) > 0.95,
    ),
    Claim(
        "batching.md",
        "and would happily place it on one {eval}`h200_gb` GB H200",
        lambda ns: (
            ns.two_matrix * 2 < (hbm := get_chip("H200").hbm_bytes)
            and ns.spec.total_params * 2 > hbm
        ),
    ),
    Claim(
        "batching.md",
        "the same number as its critical {ref}`intensity <glossary-arithmetic-intensity>` $C/W$ in "
        "FLOP per byte",
        lambda ns: (
            ns.critical_b == pytest.approx(get_chip("H100").critical_intensity("bf16"), rel=1e-12)
        ),
    ),
    Claim(
        "batching.md",
        "That is why long context costs more per token",
        lambda ns: bool(
            np.all(
                np.diff(
                    [
                        float(
                            batching.decode_step(
                                ns.llama, capacity.cheapest_batch(ns.llama, t), t
                            ).cost_per_million_tokens_usd()
                        )
                        for t in (256, 1024, 2048, 4096, 8192)
                    ]
                )
                > 0
            )
        ),
    ),
    Claim(
        "batching.md",
        "cut the cost of long context: an fp8 cache brings that 8,192-token token to",
        lambda ns: (
            float(ns.fp8_kv_8k.cost_per_million_tokens_usd())
            < float(ns.full.cost_per_million_tokens_usd())
        ),
    ),
    Claim(
        "batching.md",
        "turns compute-bound once $S$ reaches $B^*$",
        lambda ns: (
            bool(batching.prefill(ns.llama, round(ns.critical_b)).compute_bound)
            and not bool(batching.prefill(ns.llama, round(ns.critical_b) - 1).compute_bound)
            and round(ns.critical_b) < ns.critical_b  # the attention FLOPs tip it over early
        ),
    ),
    Claim(
        "batching.md",
        "That is why output tokens are priced above input tokens",
        lambda ns: (
            ns.prefill_cost_value < float(ns.full_2k.cost_per_million_tokens_usd())
            and ns.prefill_cost_value < float(ns.b64.cost_per_million_tokens_usd())
        ),
    ),
    Claim(
        "batching.md",
        "An operator's cost (the \\${eval}`price_h100` above) is under both",
        lambda ns: ns.price.usd_per_chip_hour < min(ns.tie_alone, ns.tie_best),
    ),
    Claim(
        "batching.md",
        "is above both, and there the TPU v5e wins",
        lambda ns: (
            ns.h100_list.usd_per_chip_hour > max(ns.tie_alone, ns.tie_best)
            and float(ns.one.cost_per_million_tokens_usd(ns.h100_list.usd_per_chip_hour))
            > float(ns.v5e_one.cost_per_million_tokens_usd(ns.v5e_price.usd_per_chip_hour))
        ),
    ),
    Claim(
        "batching.md",
        "because at this context most of a full step is KV reads",
        lambda ns: (
            float((s := batching.decode_step(ns.llama, ns.fast.standard_batch, 2048)).kv_read_s)
            > 0.5 * float(s.time_s)
        ),
    ),
    Claim(
        "batching.md",
        "the weights are a larger share of a step",
        lambda ns: (
            float(
                (a := batching.decode_step(ns.llama, ns.fast_1k.standard_batch, 1024)).weight_read_s
                / a.time_s
            )
            > float(
                (b := batching.decode_step(ns.llama, ns.fast.standard_batch, 2048)).weight_read_s
                / b.time_s
            )
        ),
    ),
    Claim(
        "batching.md",
        "A $T_c$ quoted for an MLA model is only as good as the attention format it names",
        lambda ns: (
            capacity.critical_context(ns.t_c_ds) > 3 * float(ns.t_c_ds_fp8.replace(",", ""))
            and ns.t_c_ds.attention_compute_dtype == "bf16"
            and ns.t_c_setups[-1][1].attention_compute_dtype == "fp8"
        ),
    ),
    Claim(
        "batching.md",
        "as DeepSeek serves it (the row this chapter carries on)",
        # The frontier section's deployment computes as the T_c row it names, and as the
        # parallelism chapter's and the CLI's DeepSeek (fp8 matmuls, bf16 attention).
        lambda ns: (
            (ns.frontier.compute_dtype, ns.frontier.attention_compute_dtype)
            == (ns.t_c_ds.compute_dtype, ns.t_c_ds.attention_compute_dtype)
            == ("fp8", "bf16")
        ),
    ),
    Claim(
        "batching.md",
        "that it is bandwidth-bound, adds its read on top",
        lambda ns: float(ns.gqa_attention_intensity) < 0.1 * float(ns.h100_ci),
    ),
    Claim(
        "batching.md",
        "Absorbed {ref}`MLA <glossary-mla>` is the exception",
        lambda ns: 0.75 * float(ns.h100_ci) < float(ns.mla_attention_intensity) < float(ns.h100_ci),
    ),
    Claim(
        "batching.md",
        "In bf16 MLA's attention FLOPs almost keep pace with its cache reads",
        lambda ns: (
            (bf16 := Deployment("DeepSeek-V3", "H100", 16, weight_dtype="fp8")) is not None
            and float(
                (
                    one := batching.decode_step(bf16, 1, capacity.critical_context(bf16))
                ).attention_compute_s
                / one.kv_read_s
            )
            > 0.75
        ),
    ),
    Claim(
        "batching.md",
        "the same target gives {eval}`ideal_batch` sequences and {eval}`ideal_tps` tokens per "
        "second, near the lecture's figure",
        # The lecture's "about 128k tokens per second" in one batch (pope2026lecture).
        lambda ns: abs(ns.ideal.batch_tokens_per_s / 128e3 - 1) < 0.1,
    ),
    Claim(
        "batching.md",
        "No layout delivers it: at that batch the per-expert all-to-all alone would take",
        # The MoE chapter's per-layer count (issue 42: 405.7 us a layer, 23.5 ms a step).
        lambda ns: (
            float(ns.ideal_on_ep16.ep_s)
            == pytest.approx(
                ns.frontier.model.n_moe_layers
                * float(
                    moe.expert_parallel_step(
                        "DeepSeek-V3", ns.ideal.batch, 16, "HGX H100 (8 GPUs)"
                    ).all_to_all_s
                ),
                rel=1e-9,
            )
            and float(ns.ideal_on_ep16.ep_s) > 0.020
            and ns.ideal.batch > float(capacity.max_batch(ns.frontier, 2048))
        ),
    ),
    Claim(
        "batching.md",
        "at the floor either hides under the reads, and the batch is the same",
        lambda ns: (
            ns.fleet.batch == ns.fleet_pe.batch
            and float(ns.fleet_pe.step.ep_s) < float(ns.fleet.step.memory_s)
            and float(ns.fleet.step.ep_s) < float(ns.fleet_pe.step.ep_s)
            and float(ns.fleet.step.memory_s) >= float(ns.fleet.step.compute_s)
            and ns.frontier.expert_dispatch == "node_limited"
            # the node-limited count is the MoE chapter's per layer, times the MoE layers
            and float(ns.fleet.step.ep_s)
            == pytest.approx(
                ns.frontier.model.n_moe_layers
                * float(
                    moe_dispatch.node_limited_step(
                        "DeepSeek-V3",
                        ns.fleet.batch,
                        16,
                        "HGX H100 (8 GPUs)",
                        max_domains=ns.routing["max_nodes_per_token"],
                        dispatch_dtype=ns.routing["dispatch_dtype"],
                        combine_dtype=ns.routing["combine_dtype"],
                    ).all_to_all_s
                ),
                rel=1e-9,
            )
        ),
    ),
    Claim(
        "batching.md",
        "Under the serial estimate it does not hide",
        lambda ns: (
            float(ns.fleet_pe.step.serial_s)
            > float(ns.fleet.step.serial_s)
            > 0.020
            >= float(ns.fleet.step.time_s)
        ),
    ),
    Claim(
        "batching.md",
        "The reads set it: every GPU reads its experts and its own copy of the attention weights",
        lambda ns: (
            float(ns.fleet.step.weight_read_s)
            > float(batching.decode_step(ns.ideal_frontier, ns.fleet.batch, 2048).weight_read_s)
        ),
    ),
    Claim(
        "batching.md",
        "Memory: at context 2,048 the KV caches of {eval}`patient_room` sequences fill",
        lambda ns: ns.patient.batch == float(capacity.max_batch(ns.frontier, 2048)),
    ),
    Claim(
        "batching.md",
        "speed-up**, close to the reported figure",
        lambda ns: abs(float(ns.mtp_big.speedup) / ns.mtp["reported_tps_speedup"] - 1) < 0.05,
    ),
    Claim(
        "batching.md",
        "so the check reads more expert weights than a plain step",
        lambda ns: (
            float(batching.decode_step(ns.frontier, 8, 2048).weight_read_s)
            > float(batching.decode_step(ns.frontier, 4, 2048).weight_read_s)
        ),
    ),
    # ---- batching: how much traffic fills a batch (Little's law) ----
    Claim(
        "batching.md",
        "tokens per second each, faster than the reader",
        lambda ns: float(ns.fill_1k.step_s) <= ns.reader_s,
    ),
    Claim(
        "batching.md",
        "steps in {eval}`fill_2k_ms` ms, slower than the reader",
        lambda ns: (
            float(ns.fill_2k.step_s) > ns.reader_s
            and ns.reader_batch_value < float(ns.fill_2k.batch)
            and float(ns.fill_reader.cost_over_floor) > 1
        ),
    ),
    Claim(
        "batching.md",
        "the fill rate over $\\lambda$ times the floor, whatever the model",
        lambda ns: all(
            float(
                serving_modes.batch_from_demand(
                    dep, 2048, ns.answer_value, rate
                ).cost_per_million_usd
            )
            == pytest.approx(
                dep.n_chips * dep.chip_hour_usd / 3600 / (rate * ns.answer_value) * 1e6,
                rel=1e-9,
            )
            for dep in (ns.llama, ns.two_h100, Deployment("Mixtral-8x7B", "H100", 2))
            for rate in (0.5, 2.0)
        ),
    ),
    Claim(
        "batching.md",
        "The floor is for whoever sends one replica about a hundred requests every second",
        lambda ns: (
            50 < float(ns.fill_2k.requests_per_s) < 200
            and 50 < float(ns.fill_1k.requests_per_s) < 200
        ),
    ),
    Claim(
        "batching.md",
        "Renting fewer chips helps only so far",
        lambda ns: (
            float(
                serving_modes.batch_from_demand(
                    ns.two_h100, 2048, ns.answer_value, 1.0
                ).cost_per_million_usd
            )
            < float(ns.kept.cost_per_million_usd[1])
            and float(ns.fill_two.cost_per_million_usd) > float(ns.fill_2k.cost_per_million_usd)
        ),
    ),
    Claim(
        "batching.md",
        "each costs {eval}`q_tenth_over` times the floor. The batch falls to",
        lambda ns: (
            float(ns.q_tenth.cost_over_floor) == pytest.approx(10.0, rel=1e-9)
            and float(ns.q_tenth.batch) < float(ns.q_fill.batch) / 10
        ),
    ),
    Claim(
        "batching.md",
        "at batch 1 the FLOPs are $B^*$ times shorter than the weight read",
        lambda ns: (
            float(ns.lone.weight_read_s / ns.lone.matmul_compute_s)
            == pytest.approx(capacity.step_critical_batch(ns.small), rel=1e-9)
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


def test_the_old_claims_are_gone() -> None:
    text = _page_text("batching.md")
    for wrong in (
        "more batch buys nothing",  # past C/W the cost kept falling at 2,048 tokens
        "can reach the compute floor",
        "after which it turns into a loss",
        "No token comes faster",  # per step: speculation gets past it
        "far from half",
        "an operator's stated rental cost",  # the price's kind is "assumed" (chip_prices.toml)
        "the chip's critical intensity for bf16 weights",  # C b_w/2W is a batch, B*
        "priced several times above",  # 1.8x with the HBM full: said with the numbers now
        "$B^* \\approx C/W$",
    ):
        assert wrong not in text, wrong


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


#: #43 item 5 on the batching page: the worked server's second setting, 2026 traffic.
CLAIMS += [
    Claim(
        "batching.md",
        "is memory-bound at every batch that fits and, at the full batch, **KV-bound**",
        lambda ns: (
            not np.any(ns.agentic_steps.compute_bound)
            and len(ns.agentic_steps.batch) == ns.agentic_fits
            and float(ns.agentic_full.kv_read_s) > 0.5 * float(ns.agentic_full.memory_s)
            and float(ns.agentic_full.time_s) == float(ns.agentic_full.memory_s)
        ),
    ),
]

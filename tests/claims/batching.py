"""What ``lessons/batching.md`` says in words, pinned to the package for the lesson's own
settings (``llmmath.display.numbers.batching``): its claims, errata pins and depth checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from claims import Claim, check_claim, claim_id, page_words
from llmmath import batching, moe
from llmmath.beyond import moe_dispatch, serving_modes, serving_systems, speculative
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.display import numbers
from llmmath.display.numbers.batching import T


def _steps(n: numbers.batching.Numbers, context: float) -> serving.DecodeStep:
    """Every batch that fits at ``context`` on the lesson's Llama-3-70B deployment."""
    room = float(capacity.max_batch(n.worked.llama, context))
    return batching.decode_step(n.worked.llama, np.arange(1.0, room + 1.0), context)


def _costs(n: numbers.batching.Numbers, context: float) -> np.ndarray:
    return np.asarray(_steps(n, context).cost_per_million_tokens_usd())


CLAIMS = [
    # ---- batching: the floor and the serial estimate ----
    Claim(
        "Below $C\\,b_w/2W$ (the batch where the matmuls' FLOPs catch up with their weight read, "
        "below) the two are the same number; above it the estimate is the larger.",
        lambda n: bool(
            np.allclose(
                (
                    s := batching.decode_step(
                        n.worked.llama, np.arange(1.0, math.ceil(n.worked.critical_b)), T
                    )
                ).serial_s,
                s.floor_s,
                rtol=1e-12,
            )
            and np.all(
                (
                    b := batching.decode_step(
                        n.worked.llama,
                        np.arange(math.ceil(n.worked.critical_b), n.cost.max_b_2k_value + 1),
                        T,
                    )
                ).serial_s
                > b.floor_s
            )
        ),
    ),
    # ---- batching: the cost keeps falling past C/W at 2,048 tokens ----
    Claim(
        "It keeps falling: the",
        lambda n: bool(np.all(np.diff(_costs(n, T)) < 0)),
    ),
    Claim(
        "Past it the weights no longer dominate, but the step is not yet compute-bound",
        lambda n: (
            bool(n.worked.at_critical.weights_amortized)
            and not bool(n.worked.at_critical.compute_bound)
        ),
    ),
    Claim(
        "past $T_c$ every sequence added brings more reading than arithmetic, and **no batch is "
        "compute-bound**",
        lambda n: (
            not np.any(_steps(n, 1.01 * n.cost.t_c_value).compute_bound)
            and math.isinf(capacity.step_critical_batch(n.worked.llama, 1.01 * n.cost.t_c_value))
        ),
    ),
    Claim(
        "so the cost stops falling at \\${eval}`n.cost.critical_1k_cost` per million, "
        "the FLOPs' own cost",
        lambda n: (
            bool(n.cost.at_critical_1k.compute_bound)
            and n.cost.critical_1k_value < float(capacity.max_batch(n.worked.llama, 1024))
            and float(np.min(_costs(n, 1024)))
            >= 0.999 * float(n.cost.at_critical_1k.cost_per_million_tokens_usd())
        ),
    ),
    Claim(
        "At 2,048 tokens the step is memory-bound at every batch that fits, and the cost falls "
        "until the HBM is full",
        lambda n: (
            not np.any(_steps(n, T).compute_bound)
            and int(np.argmin(_costs(n, T))) == len(_costs(n, T)) - 1
        ),
    ),
    Claim(
        "toward the KV read alone: a token at context $T$ costs at least",
        lambda n: bool(
            np.all(
                _steps(n, T).stage_s / _steps(n, T).batch
                >= _steps(n, T).kv_read_s / _steps(n, T).batch
            )
        ),
    ),
    Claim(
        "At 8k context this server is memory-bound at every batch",
        lambda n: not np.any(_steps(n, 8192).compute_bound),
    ),
    Claim(
        "and 2,048 is past their $T_c$ of {eval}`n.falling.v5e_t_c`",
        lambda n: capacity.critical_context(n.worked.v5e) < T,
    ),
    Claim(
        "sparsity lowers the FLOPs per token (active parameters) and with them $T_c$; MLA's small "
        "cache pushes it out again",
        lambda n: (
            capacity.critical_context(Deployment("Mixtral-8x7B", "H100", 2))
            < capacity.critical_context(n.worked.llama)
            and n.falling.t_c_setups[-1][1].model.kv_bytes_per_token(
                n.falling.t_c_setups[-1][1].kv_dtype
            )
            < n.worked.llama.model.kv_bytes_per_token(n.worked.llama.kv_dtype)
        ),
    ),
    Claim(
        "A small dense model does few FLOPs per token against the same kind of cache, so its $T_c$ "
        "is short",
        lambda n: (
            capacity.critical_context(n.falling.t_c_setups[0][1])
            < capacity.critical_context(n.worked.llama)
        ),
    ),
    Claim(
        "far more than halved",
        lambda n: (
            capacity.critical_context(n.falling.t_c_setups[-1][1])
            < 0.5
            * capacity.critical_context(Deployment("DeepSeek-V3", "H100", 16, weight_dtype="fp8"))
        ),
    ),
    # ---- batching: latency ----
    Claim(
        "just under it",
        lambda n: (
            0.98 * capacity.hbm_floor_s("H100")
            < float(n.falling.full_8k.time_s)
            < capacity.hbm_floor_s("H100")
        ),
    ),
    Claim(
        "room for less than one more sequence's cache",
        lambda n: (
            0
            <= n.worked.llama.kv_budget_bytes
            - float(n.falling.full_8k.batch)
            * 8192
            * n.worked.llama.model.kv_bytes_per_token(n.worked.llama.kv_dtype)
            < 8192 * n.worked.llama.model.kv_bytes_per_token(n.worked.llama.kv_dtype)
        ),
    ),
    Claim(
        "there, every sequence added costs latency from the start",
        lambda n: (
            float(batching.decode_step(n.worked.llama, 2, 8192).time_s)
            > float(batching.decode_step(n.worked.llama, 1, 8192).time_s)
        ),
    ),
    # ---- batching: slow mode ----
    Claim(
        "At the floor, slower and exactly as expensive",
        lambda n: (
            len({n.slow.chips_2.alone_cost, n.slow.chips_4.alone_cost, n.slow.chips_8.alone_cost})
            == 1
        ),
    ),
    Claim(
        "there the wider server is the dearer one",
        # The serial TP step is the parallelism chapter's tp_decode_breakdown, and its cost
        # rises with the chips (issue 42: TP2 $24.56, TP4 $26.81, TP8 $33.88 at 2,048 tokens).
        lambda n: (
            all(
                float(
                    serving_systems.tp_decode_breakdown("Llama-3-70B", "H100", chips, 1, T).serial_s
                )
                == pytest.approx(float(n.slow.lone_tp[chips].step(1).time_s), rel=1e-12)
                for chips in (2, 4, 8)
            )
            and n.slow.lone_cost[2] < n.slow.lone_cost[4] < n.slow.lone_cost[8]
            and abs(n.slow.lone_cost[8] / n.slow.lone_cost[2] - 1.38) < 0.01
        ),
    ),
    Claim(
        "no way of serving a lone sequence costs less than the floor's rent of its weight read",
        lambda n: (
            min(n.slow.lone_cost.values())
            > float(n.slow.chips_8.alone_cost)
            == float(n.slow.chips_2.alone_cost)
        ),
    ),
    Claim(
        "a user willing to wait 100 ms per token pays the same",
        lambda n: (
            float(n.slow.slow.cost_per_million_usd[0])
            == pytest.approx(n.slow.slow.floor_cost_per_million_usd, rel=1e-12)
            and n.slow.slow.saturation_latency_s < 0.1
        ),
    ),
    # ---- batching: fast mode ----
    Claim(
        "The price climbs slowly at first",
        lambda n: (
            float(n.fast.fast.price_multiple[1] - 1) < 0.5
            and float(n.fast.fast.price_multiple[4]) > 3 * float(n.fast.fast.price_multiple[1])
        ),
    ),
    Claim(
        "Only Opus 4.6's price is above the floor's at both contexts",
        lambda n: (
            n.fast.opus46.speedup == n.fast.opus5.speedup == 2.5 == n.fast.fast.speedup[3]
            and n.fast.fast_1k.speedup[1] == 2.5
            and n.fast.opus46.price_multiple
            > max(float(n.fast.fast.price_multiple[3]), float(n.fast.fast_1k.price_multiple[1]))
            and n.fast.opus5.price_multiple
            < max(float(n.fast.fast.price_multiple[3]), float(n.fast.fast_1k.price_multiple[1]))
        ),
    ),
    Claim(
        "is above the floor's {eval}`n.fast.fast_25_multiple`× at 2,048 tokens but below its "
        "{eval}`n.fast.fast_1k_25_multiple`× at 1,024",
        lambda n: (
            float(n.fast.fast.price_multiple[3])
            < n.fast.opus5.price_multiple
            < float(n.fast.fast_1k.price_multiple[1])
        ),
    ),
    Claim(
        "at the floor the price does not change",
        lambda n: bool(np.allclose(n.fast.fast.wider_price_multiple, 1.0, rtol=1e-9)),
    ),
    # ---- batching: the frontier batch ----
    Claim(
        "long before the step would turn compute-bound",
        lambda n: (
            capacity.step_critical_batch(n.frontier.frontier, T)
            > float(capacity.max_batch(n.frontier.frontier, T))
        ),
    ),
    # ---- batching: batch APIs ----
    Claim(
        "at 256 tokens the 10 ms batch is already the cheapest",
        lambda n: (
            n.batch_apis.deferred_short.batching_saving == 0.0
            and n.batch_apis.deferred_short.interactive_batch
            == n.batch_apis.deferred_short.floor_batch
        ),
    ),
    Claim(
        "worth the most at long context",
        lambda n: (
            n.batch_apis.deferred.batching_saving > n.batch_apis.deferred_short.batching_saving
        ),
    ),
    # ---- batching: speculative decoding ----
    Claim(
        "With the HBM full ({eval}`n.falling.max_b_2k` sequences) the gain is gone",
        lambda n: (
            abs(float(n.speculative.spec_at.speedup[-1]) - 1.0) < 0.01
            and float(n.speculative.spec_at.batch[-1]) == n.cost.max_b_2k_value
            and n.speculative.spec_at.draft_kv_share == 0.1
        ),
    ),
    Claim(
        "Leave the draft's caches out and the full batch would still show",
        lambda n: (
            float(n.speculative.spec_full_no_kv) > 1.05
            and bool(
                np.all(
                    speculative.speculative_step(
                        n.worked.llama,
                        np.arange(1.0, n.cost.max_b_2k_value + 1),
                        T,
                        3,
                        0.7,
                        0.02,
                    ).speedup
                    > 1.0
                )
            )
        ),
    ),
    Claim(
        "it stops paying at batch {eval}`n.speculative.spec_break_256`",
        lambda n: (
            math.isfinite(n.speculative.spec_break_256_value)
            and float(
                speculative.speculative_step(
                    n.worked.llama,
                    n.speculative.spec_break_256_value,
                    256,
                    3,
                    0.7,
                    0.02,
                    draft_kv_share=0.1,
                ).speedup
            )
            <= 1.0
        ),
    ),
    Claim(
        "speculative decoding gets past it with more than one token per step",
        lambda n: (
            float(n.speculative.draft_1.speedup) > 1.0
            and float(n.speculative.draft_1.tokens_per_step) > 1.0
        ),
    ),
    Claim(
        "At batch 4 it gives only",
        lambda n: float(n.speculative.mtp_small.speedup) < float(n.speculative.mtp_big.speedup),
    ),
    # ---- batching: check yourself ----
    Claim(
        "So no: the cheapest token here is set by the KV read, with the HBM full.",
        lambda n: (
            not np.any(_steps(n, 4096).compute_bound)
            and serving_modes.slow_mode(n.worked.llama, 4096, 1.0).floor_limit == "memory capacity"
        ),
    ),
    Claim(
        "A lone user's token costs the same however long it waits.",
        lambda n: (
            len({n.slow.chips_2.alone_cost, n.slow.chips_4.alone_cost, n.slow.chips_8.alone_cost})
            == 1
        ),
    ),
    # ---- batching: issue 32's re-read (numbers the page now derives, and their words) ----
    Claim(
        "Why does a token cost over a hundred times less",
        lambda n: (
            float(n.worked.one.cost_per_million_tokens_usd())
            > 100 * float(n.cost.full_2k.cost_per_million_tokens_usd())
        ),
    ),
    Claim(
        "Almost all of it ({eval}`n.worked.one_weight_share`) is the weight read.",
        lambda n: float(n.worked.one.weight_read_s / n.worked.one.time_s) > 0.95,
    ),
    Claim(
        "and would happily place it on one {eval}`n.weight_count.h200_gb` GB H200",
        lambda n: (
            n.weight_count.two_matrix * 2 < (hbm := get_chip("H200").hbm_bytes)
            and n.weight_count.llama_shape.total_params * 2 > hbm
        ),
    ),
    Claim(
        "the same number as its critical {ref}`intensity <glossary-arithmetic-intensity>` $C/W$ in "
        "FLOP per byte",
        lambda n: (
            n.worked.critical_b
            == pytest.approx(get_chip("H100").critical_intensity("bf16"), rel=1e-12)
        ),
    ),
    Claim(
        "That is why long context costs more per token",
        lambda n: bool(
            np.all(
                np.diff(
                    [
                        float(
                            batching.decode_step(
                                n.worked.llama, capacity.cheapest_batch(n.worked.llama, t), t
                            ).cost_per_million_tokens_usd()
                        )
                        for t in (256, 1024, T, 4096, 8192)
                    ]
                )
                > 0
            )
        ),
    ),
    Claim(
        "cut the cost of long context: an fp8 cache brings that 8,192-token token to",
        lambda n: (
            float(n.falling.fp8_kv_8k.cost_per_million_tokens_usd())
            < float(n.falling.full_8k.cost_per_million_tokens_usd())
        ),
    ),
    Claim(
        "turns compute-bound once $S$ reaches $B^*$",
        lambda n: (
            bool(batching.prefill(n.worked.llama, round(n.worked.critical_b)).compute_bound)
            and not bool(
                batching.prefill(n.worked.llama, round(n.worked.critical_b) - 1).compute_bound
            )
            and round(n.worked.critical_b)
            < n.worked.critical_b  # the attention FLOPs tip it over early
        ),
    ),
    Claim(
        "That is why output tokens are priced above input tokens",
        lambda n: (
            n.prefill.prefill_cost_value < float(n.cost.full_2k.cost_per_million_tokens_usd())
            and n.prefill.prefill_cost_value < float(n.worked.b64.cost_per_million_tokens_usd())
        ),
    ),
    Claim(
        "An operator's cost (the \\${eval}`n.cost.price_h100` above) is under both",
        lambda n: n.worked.price.usd_per_chip_hour < min(n.move_it.tie_alone, n.move_it.tie_best),
    ),
    Claim(
        "is above both, and there the TPU v5e wins",
        lambda n: (
            n.move_it.h100_list.usd_per_chip_hour > max(n.move_it.tie_alone, n.move_it.tie_best)
            and float(
                n.worked.one.cost_per_million_tokens_usd(n.move_it.h100_list.usd_per_chip_hour)
            )
            > float(
                n.move_it.v5e_one.cost_per_million_tokens_usd(n.move_it.v5e_price.usd_per_chip_hour)
            )
        ),
    ),
    Claim(
        "because at this context most of a full step is KV reads",
        lambda n: (
            float(
                (s := batching.decode_step(n.worked.llama, n.fast.fast.standard_batch, T)).kv_read_s
            )
            > 0.5 * float(s.time_s)
        ),
    ),
    Claim(
        "the weights are a larger share of a step",
        lambda n: (
            float(
                (
                    a := batching.decode_step(n.worked.llama, n.fast.fast_1k.standard_batch, 1024)
                ).weight_read_s
                / a.time_s
            )
            > float(
                (
                    b := batching.decode_step(n.worked.llama, n.fast.fast.standard_batch, T)
                ).weight_read_s
                / b.time_s
            )
        ),
    ),
    Claim(
        "A $T_c$ quoted for an MLA model is only as good as the attention format it names",
        lambda n: (
            capacity.critical_context(n.falling.t_c_ds)
            > 3 * float(n.falling.t_c_ds_fp8.replace(",", ""))
            and n.falling.t_c_ds.attention_compute_dtype == "bf16"
            and n.falling.t_c_setups[-1][1].attention_compute_dtype == "fp8"
        ),
    ),
    Claim(
        "as DeepSeek serves it (the row this chapter carries on)",
        # The frontier section's deployment computes as the T_c row it names, and as the
        # parallelism chapter's and the CLI's DeepSeek (fp8 matmuls, bf16 attention).
        lambda n: (
            (n.frontier.frontier.compute_dtype, n.frontier.frontier.attention_compute_dtype)
            == (n.falling.t_c_ds.compute_dtype, n.falling.t_c_ds.attention_compute_dtype)
            == ("fp8", "bf16")
        ),
    ),
    Claim(
        "that it is bandwidth-bound, adds its read on top",
        lambda n: (
            float(n.three_clocks.gqa_attention_intensity) < 0.1 * float(n.three_clocks.h100_ci)
        ),
    ),
    Claim(
        "Absorbed {ref}`MLA <glossary-mla>` is the exception",
        lambda n: (
            0.75 * float(n.three_clocks.h100_ci)
            < float(n.three_clocks.mla_attention_intensity)
            < float(n.three_clocks.h100_ci)
        ),
    ),
    Claim(
        "In bf16 MLA's attention FLOPs almost keep pace with its cache reads",
        lambda n: (
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
        "the same target gives {eval}`n.frontier.ideal_batch` sequences and "
        "{eval}`n.frontier.ideal_tps` tokens per "
        "second, near the lecture's figure",
        # The lecture's "about 128k tokens per second" in one batch (pope2026lecture).
        lambda n: abs(n.frontier.ideal.batch_tokens_per_s / 128e3 - 1) < 0.1,
    ),
    Claim(
        "No layout delivers it: at that batch the per-expert all-to-all alone would take",
        # The MoE chapter's per-layer count (issue 42: 405.7 us a layer, 23.5 ms a step).
        lambda n: (
            float(n.frontier.ideal_on_ep16.ep_s)
            == pytest.approx(
                n.frontier.frontier.model.n_moe_layers
                * float(
                    moe.expert_parallel_step(
                        "DeepSeek-V3", n.frontier.ideal.batch, 16, "HGX H100 (8 GPUs)"
                    ).all_to_all_s
                ),
                rel=1e-9,
            )
            and float(n.frontier.ideal_on_ep16.ep_s) > 0.020
            and n.frontier.ideal.batch > float(capacity.max_batch(n.frontier.frontier, T))
        ),
    ),
    Claim(
        "at the floor either hides under the reads, and the batch is the same",
        lambda n: (
            n.frontier.fleet.batch == n.frontier.fleet_per_expert.batch
            and float(n.frontier.fleet_per_expert.step.ep_s) < float(n.frontier.fleet.step.memory_s)
            and float(n.frontier.fleet.step.ep_s) < float(n.frontier.fleet_per_expert.step.ep_s)
            and float(n.frontier.fleet.step.memory_s) >= float(n.frontier.fleet.step.compute_s)
            and n.frontier.frontier.expert_dispatch == "node_limited"
            # the node-limited count is the MoE chapter's per layer, times the MoE layers
            and float(n.frontier.fleet.step.ep_s)
            == pytest.approx(
                n.frontier.frontier.model.n_moe_layers
                * float(
                    moe_dispatch.node_limited_step(
                        "DeepSeek-V3",
                        n.frontier.fleet.batch,
                        16,
                        "HGX H100 (8 GPUs)",
                        max_domains=n.frontier.routing["max_nodes_per_token"],
                        dispatch_dtype=n.frontier.routing["dispatch_dtype"],
                        combine_dtype=n.frontier.routing["combine_dtype"],
                    ).all_to_all_s
                ),
                rel=1e-9,
            )
        ),
    ),
    Claim(
        "Under the serial estimate it does not hide",
        lambda n: (
            float(n.frontier.fleet_per_expert.step.serial_s)
            > float(n.frontier.fleet.step.serial_s)
            > 0.020
            >= float(n.frontier.fleet.step.time_s)
        ),
    ),
    Claim(
        "The reads set it: every GPU reads its experts and its own copy of the attention weights",
        lambda n: (
            float(n.frontier.fleet.step.weight_read_s)
            > float(
                batching.decode_step(
                    n.frontier.ideal_frontier, n.frontier.fleet.batch, T
                ).weight_read_s
            )
        ),
    ),
    Claim(
        "Memory: at context 2,048 the KV caches of {eval}`n.frontier.patient_room` sequences fill",
        lambda n: n.frontier.patient.batch == float(capacity.max_batch(n.frontier.frontier, T)),
    ),
    Claim(
        "speed-up**, close to the reported figure",
        lambda n: (
            abs(
                float(n.speculative.mtp_big.speedup) / n.speculative.mtp["reported_tps_speedup"] - 1
            )
            < 0.05
        ),
    ),
    Claim(
        "so the check reads more expert weights than a plain step",
        lambda n: (
            float(batching.decode_step(n.frontier.frontier, 8, T).weight_read_s)
            > float(batching.decode_step(n.frontier.frontier, 4, T).weight_read_s)
        ),
    ),
    # ---- batching: how much traffic fills a batch (Little's law) ----
    Claim(
        "tokens per second each, faster than the reader",
        lambda n: float(n.traffic.fill_1k.step_s) <= n.traffic.reader_s,
    ),
    Claim(
        "steps in {eval}`n.traffic.fill_2k_ms` ms, slower than the reader",
        lambda n: (
            float(n.traffic.fill_2k.step_s) > n.traffic.reader_s
            and n.traffic.reader_batch_value < float(n.traffic.fill_2k.batch)
            and float(n.traffic.fill_reader.cost_over_floor) > 1
        ),
    ),
    Claim(
        "the fill rate over $\\lambda$ times the floor, whatever the model",
        lambda n: all(
            float(
                serving_modes.batch_from_demand(
                    dep, T, n.traffic.answer_value, rate
                ).cost_per_million_usd
            )
            == pytest.approx(
                dep.n_chips * dep.chip_hour_usd / 3600 / (rate * n.traffic.answer_value) * 1e6,
                rel=1e-9,
            )
            for dep in (n.worked.llama, n.traffic.two_h100, Deployment("Mixtral-8x7B", "H100", 2))
            for rate in (0.5, 2.0)
        ),
    ),
    Claim(
        "The floor is for whoever sends one replica about a hundred requests every second",
        lambda n: (
            50 < float(n.traffic.fill_2k.requests_per_s) < 200
            and 50 < float(n.traffic.fill_1k.requests_per_s) < 200
        ),
    ),
    Claim(
        "Renting fewer chips helps only so far",
        lambda n: (
            float(
                serving_modes.batch_from_demand(
                    n.traffic.two_h100, T, n.traffic.answer_value, 1.0
                ).cost_per_million_usd
            )
            < float(n.traffic.kept.cost_per_million_usd[1])
            and float(n.traffic.fill_two.cost_per_million_usd)
            > float(n.traffic.fill_2k.cost_per_million_usd)
        ),
    ),
    Claim(
        "each costs {eval}`n.traffic.question_tenth_over` times the floor. The batch falls to",
        lambda n: (
            float(n.traffic.question_tenth.cost_over_floor) == pytest.approx(10.0, rel=1e-9)
            and float(n.traffic.question_tenth.batch) < float(n.traffic.question_fill.batch) / 10
        ),
    ),
    Claim(
        "at batch 1 the FLOPs are $B^*$ times shorter than the weight read",
        lambda n: (
            float(n.check.lone.weight_read_s / n.check.lone.matmul_compute_s)
            == pytest.approx(capacity.step_critical_batch(n.check.small), rel=1e-9)
        ),
    ),
    # ---- #43 item 5: the worked server's second setting, 2026 traffic ----
    Claim(
        "is memory-bound at every batch that fits and, at the full batch, **KV-bound**",
        lambda n: (
            not np.any(n.agentic.agentic_steps.compute_bound)
            and len(n.agentic.agentic_steps.batch) == n.agentic.agentic_fits
            and float(n.agentic.agentic_full.kv_read_s)
            > 0.5 * float(n.agentic.agentic_full.memory_s)
            and float(n.agentic.agentic_full.time_s) == float(n.agentic.agentic_full.memory_s)
        ),
    ),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=claim_id)
def test_claim_is_on_its_page_and_holds(claim: Claim) -> None:
    check_claim("batching", claim)


# ---- errata pins ---------------------------------------------------------------------------------


def test_batching_compares_prices_of_one_kind() -> None:
    n = numbers.batching.numbers()
    h100, v5e = batching.example_price("H100"), batching.example_price("TPU-v5e")
    assert h100.kind != v5e.kind  # which is why the text names each kind
    words = page_words("batching")
    assert "{eval}`n.cost.h100_price_kind`" in words and "{eval}`n.move_it.v5e_price_kind`" in words
    # At the tie price the 8 H100s cost exactly what the 16 TPU v5e cost, alone and at best.
    h8, v16 = Deployment("Llama-3-70B", "H100", 8), Deployment("Llama-3-70B", "TPU-v5e", 16)
    alone = float(batching.decode_step(v16, 1, T).cost_per_million_tokens_usd())
    tie = float(n.move_it.tie_alone_usd)
    at_tie = float(batching.decode_step(h8, 1, T).cost_per_million_tokens_usd(tie))
    assert at_tie == pytest.approx(alone, rel=5e-3)
    best_v = batching.decode_step(v16, capacity.max_batch(v16, T), T)
    # Each at its cheapest: past T_c no batch is compute-bound, so both fill their HBM.
    best_h = batching.decode_step(h8, capacity.max_batch(h8, T), T)
    at_tie_best = best_h.cost_per_million_tokens_usd(float(n.move_it.tie_best_usd))
    assert float(at_tie_best) == pytest.approx(
        float(best_v.cost_per_million_tokens_usd()), rel=5e-3
    )
    # The operator's cost is below both ties: at the example prices the H100 wins both ways.
    assert h100.usd_per_chip_hour < min(tie, float(n.move_it.tie_best_usd))


def test_batching_knob_hint_moves_the_floor_by_bandwidth_only() -> None:
    n = numbers.batching.numbers()
    base = Deployment("Llama-3-70B", "H100", 8)
    assert float(n.move_it.knob_floor_ms) == pytest.approx(
        capacity.weight_floor_s(base) / 0.8 * 1e3, abs=0.006
    )
    assert float(n.move_it.knob_critical) == pytest.approx(
        capacity.step_critical_batch(base) * 0.5 / 0.8, abs=0.5
    )
    assert "Both by the ratio of the knobs" not in page_words("batching")


def test_batching_floor_utilisations_are_full_by_construction() -> None:
    n = numbers.batching.numbers()
    assert n.prefill.prefill_mfu == "100%" and n.prefill.decode_mbu_64 == "100%"
    words = page_words("batching")
    assert "by construction" in words
    assert "all its $P$ tokens" not in words and "a batch of $S$ tokens" in words


def test_batching_pareto_latency_depends_on_the_context() -> None:
    llama = Deployment("Llama-3-70B", "H100", 8)
    short = [float(batching.decode_step(llama, b, T).time_s) for b in (1, 64)]
    long = [float(batching.decode_step(llama, b, 8192).time_s) for b in (1, 64)]
    assert short[1] / short[0] < 1.5  # 64x the throughput for under 50% more latency
    assert long[1] / long[0] > 2  # more than double at 8,192
    n = numbers.batching.numbers()
    assert float(n.latency.pareto_8k_64_kv_share) > 1  # the 64 KV reads outweigh the weights
    assert n.latency.pareto_8k_64_ms == f"{long[1] * 1e3:.1f}"
    assert "at almost no cost in latency until" not in page_words("batching")


def test_fast_mode_text_says_which_prices_were_re_checked() -> None:
    from llmmath.beyond import serving_modes

    vendors = {v.label: v for v in serving_modes.fast_mode_prices()}
    assert vendors["Claude Opus 4.6 fast mode"].checked
    assert not vendors["Claude Opus 5 fast mode"].checked
    words = page_words("batching")
    assert "the Opus 4.6 figures re-read on Anthropic's own page" in words
    assert "the Opus 5 price only in resellers' listings" in words
    apis = serving_modes.batch_api_prices()
    n = numbers.batching.numbers()
    assert n.batch_apis.api_rechecked == " and ".join(a.label for a in apis if a.checked)
    assert n.batch_apis.api_unchecked == " and ".join(a.label for a in apis if not a.checked)
    # Both kinds exist, so the sentence reads.
    assert n.batch_apis.api_rechecked and n.batch_apis.api_unchecked
    assert "{eval}`n.batch_apis.api_rechecked`: terms re-read on the vendor's own page" in words


# ---- wrong words that must not return ------------------------------------------------------
def test_the_old_claims_are_gone() -> None:
    text = page_words("batching")
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

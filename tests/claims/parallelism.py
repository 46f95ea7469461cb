"""What ``lessons/parallelism.md`` says in words, pinned to the package for its own settings
(``llmmath.display.numbers.parallelism``): its claims, its errata pins and its depth checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from claims import Claim, chapter_numbers, check_claim, claim_id, page_words
from llmmath import get_chip, get_model, parallelism
from llmmath.beyond import serving_systems
from llmmath.core import collectives, training
from llmmath.display import numbers
from llmmath.validation import published

CHAPTER = "parallelism"


def _words() -> str:
    return page_words(CHAPTER)


CLAIMS = [
    # ---- FP8 training and context parallelism (issue 32, depth) ----
    Claim(
        "only the **peak $C$ doubles**",
        lambda n: math.isclose(
            n.basics.h100.peak("fp8"), 2 * n.basics.h100.peak("bf16"), rel_tol=1e-3
        ),
    ),
    Claim(
        "the compute floor halves from {eval}`n.traffic.tp8_compute_s` s to "
        "{eval}`n.fp8.fp8_compute_s` s, while the bytes that cross the links do not change",
        lambda n: (
            math.isclose(
                float(n.fp8.steps["fp8"].compute_s),
                float(n.fp8.steps["bf16"].compute_s) / 2,
                rel_tol=1e-3,
            )
            and float(n.fp8.steps["fp8"].comm_s) == float(n.fp8.steps["bf16"].comm_s)
        ),
    ),
    Claim(
        "Faster arithmetic makes a step more communication-bound.",
        lambda n: (
            float(n.fp8.steps["fp8"].comm_s / n.fp8.steps["fp8"].compute_s)
            > float(n.fp8.steps["bf16"].comm_s / n.fp8.steps["bf16"].compute_s)
        ),
    ),
    Claim(
        "nodes doubles from {eval}`n.traffic.dp_hiding_nodes` to "
        "{eval}`n.fp8.dp_hiding_nodes_fp8` tokens per replica",
        lambda n: math.isclose(
            parallelism.dp_hiding_batch(n.basics.h100, 1024, compute_dtype="fp8"),
            2 * parallelism.dp_hiding_batch(n.basics.h100, 1024),
            rel_tol=1e-3,
        ),
    ),
    Claim(
        "TP degree up to which its all-reduces hide falls from about",
        lambda n: (
            parallelism.tp_critical_degree(n.basics.llama, n.basics.h100, "fp8")
            < parallelism.tp_critical_degree(n.basics.llama, n.basics.h100)
            and int(n.fp8.tp_limit_fp8) < int(n.traffic.tp_limit)
        ),
    ),
    Claim(
        "they differ by exactly the factor of two",
        lambda n: (
            math.isclose(n.fp8.ds_mfu["bf16"].mfu, 2 * n.fp8.ds_mfu["fp8"].mfu, rel_tol=1e-3)
            and math.isclose(
                n.fp8.ds_mfu_attn["bf16"].mfu, 2 * n.fp8.ds_mfu_attn["fp8"].mfu, rel_tol=1e-3
            )
        ),
    ),
    Claim(
        "it can even pass 100%, since the FP8 peak is twice the bf16 one",
        lambda n: n.basics.h100.peak("fp8") / n.basics.h100.peak("bf16") > 1.9,
    ),
    Claim(
        "the matmuls growing like $S$ and attention like $S^2$",
        lambda n: (
            math.isclose(
                float(n.context.long.matmul_s / n.context.short.matmul_s),
                n.context.long.prompt_tokens / n.context.short.prompt_tokens,
                rel_tol=1e-9,
            )
            and math.isclose(
                float(n.context.long.attention_s / n.context.short.attention_s),
                (n.context.long.prompt_tokens / n.context.short.prompt_tokens) ** 2,
                rel_tol=0.02,
            )
        ),
    ),
    Claim(
        "**the ring hides its traffic under the attention**",
        lambda n: (
            bool(n.context.long.kv_s < n.context.long.attention_s)
            and math.isclose(
                float(n.context.long.ring_s), float(n.context.long.compute_s), rel_tol=1e-12
            )
        ),
    ),
    Claim(
        "so **the ring no longer hides it** and the traffic adds",
        lambda n: (
            bool(n.context.short.kv_s > n.context.short.attention_s)
            and bool(n.context.short.ring_s > n.context.short.compute_s)
        ),
    ),
    Claim(
        "it matters only for long prompts",
        lambda n: (
            float(n.context.short.kv_to_attention) > 1 > float(n.context.long.kv_to_attention)
        ),
    ),
    Claim(
        "as Llama 3's training does, adds it to the step",
        lambda n: bool(n.context.long.all_gather_s > n.context.long.ring_s),
    ),
    Claim(
        "{eval}`n.context.meta_over_floor`× the bf16 floor",
        lambda n: (
            n.context.meta_prefill.value
            > float(n.context.long.ring_s)
            > float(n.context.fp8.ring_s)
        ),
    ),
    Claim(
        "just short, so the KV traffic takes a little longer than the attention it feeds",
        lambda n: (
            n.context.check_prompt / n.context.check_cp
            < n.context.check_hide
            < 1.1 * n.context.check_prompt / n.context.check_cp
        ),
    ),
    Claim(
        "Half as many ranks (CP4, 8,192 tokens each) would hide it",
        lambda n: (
            parallelism.cp_hiding_tokens(n.basics.llama, n.basics.h100, n.context.check_cp // 2)
            < n.context.check_prompt / (n.context.check_cp // 2)
        ),
    ),
    # ---- collectives defined, their latency an estimate (issue 32) ----
    Claim(
        "never more than $2M$ however many GPUs share the work",
        lambda n: all(
            collectives.ring_all_reduce_schedule(1.0, chips, n.basics.h100).sent_bytes_per_chip
            < 2.0
            for chips in (2, 8, 72, 1024)
        ),
    ),
    Claim(
        "small batch is paced by $\\alpha$, not $W_\\text{link}$",
        lambda n: (
            float(n.collectives.node_cost.latency_s[0])
            > 100 * float(n.collectives.node_cost.bytes_s[0])
        ),
    ),
    Claim(
        "carry the cross-node share about as fast as NVLink carries the rest",
        # Up to some degree past one node NVLink still paces the all-reduce; from the first
        # degree the network paces, every larger one is paced by it too.
        lambda n: (
            (domain := n.basics.h100.scale_up_domain_size) > 0
            and any(pace == "scale-up" and tp > domain for tp, pace in n.traffic.paces.items())
            and all(
                (pace == "scale-out") == (tp >= int(n.traffic.tp_network_first[2:]))
                for tp, pace in n.traffic.paces.items()
            )
            and int(n.traffic.tp_nvlink_last[2:]) > domain
        ),
    ),
    Claim(
        "of the peak closes it, below the",
        lambda n: int(n.llama3.kernel_overlap) < int(n.llama3.kernel) < int(n.llama3.gemm_share),
    ),
    Claim(
        "Measured all-reduces land on both sides of the estimate",
        lambda n: (
            n.latency.nccl_measured.value
            > serving_systems.all_reduce_latency_s(n.basics.h100, (8,), 1)
            > n.latency.one_shot.value
        ),
    ),
    Claim(
        "more than its own model says",
        lambda n: (
            n.latency.nccl_measured.value * n.latency.n_all_reduces
            > float(n.latency.tp8_b1.alpha_s)
        ),
    ),
    Claim(
        "partial sums add up locally before one all-reduce per layer",
        lambda n: (
            n.latency.palm_model.parallel_block
            and n.latency.palm_all_reduces == n.latency.palm_model.n_layers
        ),
    ),
    Claim(
        "TP16 is only {eval}`n.latency.tp16_gain`× faster than TP8, not 2×",
        lambda n: 1.0 < float(n.latency.tp8_b1.serial_s / n.latency.tp16_b1.serial_s) < 2.0,
    ),
    # ---- the third read (#32) ----
    Claim(
        # the blockquote's "> " splits the sentence: the anchor stops at the line's end
        "Training Llama-3-70B needs over a terabyte of memory, and even serving it",
        lambda n: (
            parallelism.model_state_bytes(n.basics.params).total_bytes > 1e12
            and n.basics.llama.weight_bytes("bf16") > n.basics.h100.hbm_bytes
        ),
    ),
    Claim(
        "and PP made that all-reduce about eight times smaller, since each GPU holds only its "
        "stage's weights",
        # 1/8 of the weights; the rings' (n-1)/n (DP128 against DP16) add the rest
        lambda n: (
            7.5
            < float(n.traffic.comm["DP"].bytes_per_gpu / n.traffic.comm_pp["DP"].bytes_per_gpu)
            < 9
        ),
    ),
    Claim(
        "TP8 × DP128 gives each replica {eval}`n.traffic.tp8_replica_tokens` tokens: "
        "compute-bound, with less than a factor of two to spare.",
        lambda n: (
            1
            < (n.basics.batch_tokens / 128)
            / parallelism.dp_hiding_batch(n.basics.h100, 128, per_domain=1)
            < 2
        ),
    ),
    Claim(
        "Every layout but the first fits. FSDP over all 1,024 GPUs, in one microbatch, fits only "
        "with recomputation",
        lambda n: (
            not parallelism.training_memory(
                n.basics.llama,
                n.side_by_side.layouts[0],
                n.basics.batch_tokens,
                microbatches=n.side_by_side.microbatches[0],
            ).fits(n.basics.h100)
            # FSDP in one microbatch with stored activations does not fit
            and not parallelism.training_memory(
                n.basics.llama, n.side_by_side.layouts[1], n.basics.batch_tokens, microbatches=1
            ).fits(n.basics.h100)
            # "split into two or more microbatches it would fit with stored activations"
            and parallelism.training_memory(
                n.basics.llama, n.side_by_side.layouts[1], n.basics.batch_tokens, microbatches=2
            ).fits(n.basics.h100)
            and all(
                parallelism.training_memory(
                    n.basics.llama, layout, n.basics.batch_tokens, microbatches=m, activations=a
                ).fits(n.basics.h100)
                for layout, m, a in zip(
                    n.side_by_side.layouts[1:],
                    n.side_by_side.microbatches[1:],
                    n.side_by_side.activations[1:],
                    strict=True,
                )
            )
        ),
    ),
    Claim(
        "**TP stays inside a scale-up domain.**",
        # TP8 (one node) and TP16 hide under the step's compute; TP64 (eight nodes) does not
        lambda n: (
            float(n.traffic.comm["TP"].time_s)
            < float(n.traffic.comm16["TP"].time_s)
            < float(n.traffic.step_tp8.compute_s)
            < float(n.traffic.comm64["TP"].time_s)
        ),
    ),
    Claim(
        "TP16 doubles TP's traffic against the same compute",
        lambda n: (
            1.9
            < float(n.traffic.comm16["TP"].bytes_per_gpu / n.traffic.comm["TP"].bytes_per_gpu)
            < 2.2
            and math.isclose(
                float(
                    parallelism.training_step(
                        n.basics.llama,
                        n.traffic.tp16,
                        n.basics.h100,
                        n.basics.batch_tokens,
                        microbatches=8,
                    ).compute_s
                ),
                float(n.traffic.step_tp8.compute_s),
                rel_tol=1e-12,
            )
        ),
    ),
    Claim(
        "exactly what one GPU with every layer would hold for 64",
        lambda n: (
            math.isclose(
                n.serving.kv_gb["pp8"] * 1e9,
                64 * 8192 * float(n.basics.llama.kv_bytes_per_token()),
                rel_tol=1e-12,
            )
            and math.isclose(n.serving.kv_gb["pp8"], 8 * n.serving.kv_gb["tp8"], rel_tol=1e-12)
        ),
    ),
    Claim(
        "shares each read among 8 times fewer sequences",
        lambda n: 7.5 < n.serving.max_batch["tp8"] / n.serving.max_batch["pp8"] < 8.5,
    ),
    Claim(
        "cannot make the H100 step shorter than the all-to-all itself",
        # DeepSeek-V3, EP64, 128 sequences of 4,096 tokens per GPU: the floor is the all-to-all
        lambda n: (
            math.isclose(
                float(n.serving.ds_h100_floor_ms), float(n.serving.ds_h100_ep_ms), rel_tol=0.01
            )
            and float(n.serving.ds_nvl72_floor_ms) < float(n.serving.ds_h100_floor_ms) / 2
        ),
    ),
    Claim(
        "and PP8 hold the same {eval}`n.serving.weights_per_gpu_gb` GB of weights per GPU",
        lambda n: math.isclose(
            float(parallelism.params_per_gpu(n.basics.llama, n.serving.layouts["tp8"])),
            float(parallelism.params_per_gpu(n.basics.llama, n.serving.layouts["pp8"])),
            rel_tol=1e-12,
        ),
    ),
    Claim(
        "Each further doubling gains less, and at some TP the latency outgrows the saving.",
        # batch 1, 2,048 tokens: TP32 (four nodes) is already slower than TP16
        lambda n: (lambda t: t[16] < t[8] and t[32] > t[16])(
            {
                tp: float(
                    serving_systems.tp_decode_breakdown(
                        n.basics.llama, n.basics.h100, tp, 1, 2048
                    ).serial_s
                )
                for tp in (8, 16, 32)
            }
        ),
    ),
    Claim(
        "GB of an H100's {eval}`n.basics.h100_hbm_gb`: it fits, just.",
        lambda n: (
            0.9 * n.basics.h100.hbm_bytes
            < float(n.llama3.memory.total_bytes)
            < n.basics.h100.hbm_bytes
        ),
    ),
    # ---- the critical batch, data parallelism's ceiling (issue 43, item 6) ----
    Claim(
        "That is the tension DP128 sits on: $B_\\text{DP}$ is a floor on each replica's tokens",
        # DP128 clears the floor, by less than 2x; DP256 at the same batch falls under it.
        lambda n: (
            (floor := parallelism.dp_hiding_batch(n.basics.h100, 128, per_domain=1))
            < n.basics.batch_tokens / 128
            < 2 * floor
            and parallelism.dp_hiding_batch(n.basics.h100, 256, per_domain=1)
            > n.basics.batch_tokens / 256
        ),
    ),
    Claim(
        "would leave each of them {eval}`n.traffic.dp256_replica_tokens` tokens, under "
        "$B_\\text{DP}$",
        lambda n: (
            float(n.traffic.dp256_replica_tokens.replace(",", ""))
            < parallelism.dp_hiding_batch(n.basics.h100, 256, per_domain=1)
        ),
    ),
    Claim(
        "At $B_\\text{crit}$ training takes twice the fewest steps and twice the fewest examples.",
        lambda n: (
            (t := parallelism.batch_tradeoff(1.0, 1.0)).steps_factor == 2.0
            and t.examples_factor == 2.0
        ),
    ),
    Claim(
        "halves the time for almost no extra compute; well above it, each doubling doubles the "
        "compute and barely shortens the run",
        lambda n: (
            (lo := parallelism.batch_tradeoff(np.array([1 / 64, 1 / 32]), 1.0)).steps_factor[1]
            / lo.steps_factor[0]
            < 0.52
            and lo.examples_factor[1] / lo.examples_factor[0] < 1.02
            and (hi := parallelism.batch_tradeoff(np.array([32.0, 64.0]), 1.0)).examples_factor[1]
            / hi.examples_factor[0]
            > 1.96
            and hi.steps_factor[1] / hi.steps_factor[0] > 0.98
        ),
    ),
    Claim(
        "**at most {eval}`n.critical_batch.l3_dp_max` data-parallel replicas**",
        lambda n: (
            (c := n.critical_batch).dp_max
            == parallelism.data_parallel_ceiling(c.batch_tokens, c.sequence_tokens)
            == c.batch_tokens // c.sequence_tokens
            and c.batch_tokens // (c.dp_max + 1) < c.sequence_tokens  # one more: no whole one
        ),
    ),
    Claim(
        "is what **forces** model parallelism at that scale",
        # More chips than the batch has sequences: some replica must span several chips.
        lambda n: (
            n.critical_batch.dp_max < n.critical_batch.cluster_gpus
            and int(n.critical_batch.mp_min) > 1
        ),
    ),
    Claim(
        "exactly Table 4's TP{eval}`n.critical_batch.l3_16k_tp` × "
        "PP{eval}`n.critical_batch.l3_16k_pp` on {eval}`n.critical_batch.l3_16k_gpus` GPUs",
        lambda n: (
            int((c := n.critical_batch).l3_16k_mp_min)
            == c.mp_16k
            == c.l3_16k["tp"] * c.l3_16k["pp"]
            and c.per_replica == c.l3_16k["pp"]
        ),
    ),
    Claim(
        "the sequence itself must be split, and Meta added CP{eval}`n.critical_batch.l3_long_cp`",
        # One sequence per replica already needs TP8 x PP16's 128 chips; with the 16 sequences
        # per replica the pipeline wants, DP8 is left and a replica needs 2,048 chips: more
        # than TP x PP, so the sequence is split (CP16).
        lambda n: (
            int((c := n.critical_batch).l3_long_mp_min) >= c.mp_16k
            and c.long_dp_pp == c.l3_long["dp"]
            and int(c.long_mp_pp.replace(",", "")) > c.mp_16k
            and parallelism.min_model_parallel_degree(
                c.cluster_gpus, c.batch_tokens, c.l3_long["sequence_tokens"], c.l3_16k["pp"]
            )
            == c.long_mp
            > c.l3_long["tp"] * c.l3_long["pp"]
        ),
    ),
    Claim(
        "Past the critical batch, time is bought with compute.",
        lambda n: (
            float(n.critical_batch.check_compute_more)
            > float(n.critical_batch.check_steps_fewer)
            > 0
        ),
    ),
    # ---- NCCL's hybrid, Meta's unknown format (#42) ----
    Claim(
        "That pair is a **hybrid NCCL never runs**",
        lambda n: (
            (p := n.collectives.nccl_protocols)["simple_base_latency_s"]
            > n.basics.h100.collective_base_latency_s
            and p["simple_nvlink_step_latency_s"] > n.basics.h100.scale_up_latency_s
            and p["ll_ring_all_reduce_bandwidth_share"] < 1.0
        ),
    ),
    Claim(
        "does not say in which format the matmuls ran, so the gap",
        lambda n: float(n.context.meta_over_fp8_floor) > float(n.context.meta_over_floor) > 1.0,
    ),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=claim_id)
def test_claim_is_on_its_page_and_holds(claim: Claim) -> None:
    check_claim(CHAPTER, claim)


def test_the_ring_figures_caption_says_where_latency_outweighs_the_bytes() -> None:
    # The caption (written by the module, shown under the figure) says the latency outweighs
    # the bytes below the crossover and the bytes above it.
    n = chapter_numbers(CHAPTER)
    sweep = n.collectives.sweep
    crossover = float(sweep.array_bytes[sweep.bytes_s >= sweep.latency_s][0])
    assert "outweighs the bytes below" in n.collectives.ring_caption
    assert f"below {crossover / 1e6:.0f} MB, the bytes above" in n.collectives.ring_caption
    assert bool(np.all((sweep.latency_s > sweep.bytes_s)[sweep.array_bytes < crossover]))
    assert bool(np.all((sweep.bytes_s >= sweep.latency_s)[sweep.array_bytes >= crossover]))


#: Issue 42: phrasings each true only in a setting the page had silently changed.
ISSUE_42_GONE = (
    # LL's latencies at full bandwidth are a hybrid NCCL never runs: named now
    "carry NCCL's own cost model {cite}`nccl2024tuning`: a base latency",
    # vLLM takes NVLS for larger messages, one-shot for small (as the glossary says)
    "switch-reduced ({ref}`NVLS <glossary-nvls>`) all-reduces for small messages",
)


def test_issue_42_wrong_phrasings_do_not_return() -> None:
    words = _words()
    for wrong in ISSUE_42_GONE:
        assert " ".join(wrong.split()) not in words, f"parallelism.md says again: {wrong!r}"


# ---- errata (issue 18 and 32) ------------------------------------------------------------------
def test_llama3_bubble_uses_the_interleaved_schedule() -> None:
    run = numbers.parallelism.numbers().llama3
    assert run.layout.virtual_stages == run.chunks == 2
    assert run.bubble == f"{100 * training.pipeline_bubble_fraction(16, 32, 2):.0f}" == "19"
    assert run.bubble_plain == "32"
    low, high = int(run.kernel_overlap), int(run.kernel)
    # Issue 32, erratum 3: under what a bf16 GEMM reaches on an H100 (794.5 of 989 TFLOP/s,
    # Bekman's MAMF table), not FlashMLA's attention kernel or DeepGEMM's fp8 GEMMs.
    assert run.gemm_share == "80" and run.gemm_tflops == "794.5"
    assert 50 <= low < high < int(run.gemm_share)
    assert "DeepGEMM" not in _words()


def test_check_yourself_3_names_a_model_whose_window_holds_the_context() -> None:
    words = _words()
    assert get_model("Llama-3-70B").max_context < 32768
    assert "Llama-3.1-70B (Llama-3-70B's shape with a 128k-token window" in words
    assert "**3.** Llama-3-70B (KV cache" not in words


def test_data_parallel_batch_in_a_rack_against_a_node() -> None:
    # Check yourself 4: (C / W) (n - 1) / n for each domain.
    def hidden_batch(name: str) -> float:
        chip = get_chip(name)
        n = chip.scale_up_domain_size
        return float(chip.peak("bf16") / chip.scale_up_bandwidth_bytes_per_s * (n - 1) / n)

    rack, node = hidden_batch("GB200-NVL72"), hidden_batch("H100")
    words = _words()
    assert f"\\approx {round(rack, -1):,.0f}".replace(",", "{,}") in words
    assert f"\\approx {round(node, -1):,.0f}".replace(",", "{,}") in words
    assert rack > 1.3 * node and "about the same as on an H100 node" not in words


# ---- depth checks (issue 32) ------------------------------------------------------------------
def test_the_latency_of_tensor_parallel_decode() -> None:
    n = numbers.parallelism.numbers()
    llama, h100 = n.basics.llama, n.basics.h100
    rows = {
        tp: serving_systems.tp_decode_breakdown(llama, h100, tp, 1, 2048) for tp in (2, 4, 8, 16)
    }
    shares = [float(rows[tp].alpha_share) for tp in (2, 4, 8, 16)]
    assert shares == sorted(shares)  # the latency's share grows with TP
    assert 0.25 < shares[2] < 0.4  # "{tp8_alpha_share}% of a serial step" at TP8
    assert n.latency.tp8_alpha_share == f"{100 * shares[2]:.0f}"
    gain = float(rows[8].serial_s / rows[16].serial_s)
    assert 1.0 < gain < 1.6  # "TP16 is only {tp16_gain}x faster than TP8, not 2x"
    assert n.latency.tp16_gain == f"{gain:.2f}"
    assert float(rows[16].alpha_s) > float(rows[8].alpha_s)
    # NCCL's model is an estimate: a measured NCCL all-reduce is slower, a one-shot one faster.
    ring = serving_systems.all_reduce_latency_s(h100, (8,), 1)
    assert serving_systems.measured("nccl-all-reduce-16kb-8xh100").value > ring
    assert serving_systems.measured("one-shot-all-reduce-0.5mb-4xh100").value < ring


def test_palm_latency_brackets_the_gap() -> None:
    palm, tpu = get_model("PaLM-540B"), get_chip("TPU-v4")
    comparison = published.decode_comparison("palm-540b-decode")
    gap = comparison.measured - comparison.floor
    # PaLM's parallel block: one all-reduce per layer under 1-D TP (issue 32, erratum 1).
    assert palm.parallel_block and palm.tp_all_reduces_per_layer == 1
    all_reduces = palm.tp_all_reduces_per_layer * palm.n_layers
    assert all_reduces == 118
    ring = serving_systems.all_reduce_latency_s(tpu, (64,), all_reduces)
    torus = serving_systems.all_reduce_latency_s(tpu, (4, 4, 4), all_reduces)
    # "between {palm_torus_share}% and {palm_ring_share}% of the gap": both below it, so the
    # floor plus the latency stays a floor under the measured 29 ms.
    assert 0 < torus < ring < gap
    # Ring over 64: 118 x 126 x 0.5 us = 7.4 ms; one torus dimension at a time: 1.06 ms.
    assert ring == pytest.approx(7.43e-3, rel=1e-3)
    assert torus == pytest.approx(1.062e-3, rel=1e-3)
    latency = numbers.parallelism.numbers().latency
    assert latency.palm_all_reduces == 118
    assert (latency.palm_ring_ms, latency.palm_torus_ms) == ("7.4", "1.1")
    assert (latency.palm_torus_share, latency.palm_ring_share) == ("5", "34")
    assert comparison.floor + ring < comparison.measured

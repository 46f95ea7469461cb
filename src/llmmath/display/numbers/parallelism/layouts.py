"""The parallelism chapter's numbers, its second part (``numbers.parallelism`` gathers them):
layouts put together: the pipeline's bubble, six layouts side by side, a check against Llama 3
405B's real run, and how far data parallelism goes (the critical batch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from llmmath.beyond import serving_systems
from llmmath.core import data, training, training_memory
from llmmath.core.models import get_model
from llmmath.core.placement import Layout
from llmmath.core.training import TrainingStep
from llmmath.core.training_memory import TrainingMemory
from llmmath.display.numbers import shown
from llmmath.display.numbers.parallelism.ways import Basics


@dataclass(frozen=True)
class Bubble:
    """The price of a pipeline: the bubble of 16 stages."""

    stages: int
    limit: float
    enough: int  # the fewest microbatches that bring it under the limit
    caption: str


@dataclass(frozen=True)
class SideBySide:
    """Side by side: six layouts of Llama-3-70B on 1,024 H100."""

    layouts: list[Layout]
    microbatches: list[int]
    activations: list[str]
    caption: str
    fsdp_mfu: str
    pp4_mfu: str
    pp4_bubble: str


@dataclass(frozen=True)
class Llama3Run:
    """A check against a real run: Llama 3 405B, Table 4's first row."""

    layout: Layout  # TP8 x PP16 x DP64, 2 chunks per GPU
    run: dict[str, Any]  # data/systems.toml's llama3_pretraining_8k
    step: TrainingStep
    memory: TrainingMemory
    gemm: serving_systems.Measured  # the best bf16 matmul on one H100
    microbatches: int
    chunks: int
    gpus: str
    tp: int
    pp: int
    dp: int
    step_m: str
    tflops: str
    mfu: str
    bubble: str
    bubble_plain: str
    tokens_m: str
    mfu_floor: str
    mfu_floor_serial: str
    measured_m: str
    kernel_overlap: str
    kernel: str
    gemm_share: str
    gemm_tflops: str
    memory_gb: str


@dataclass(frozen=True)
class CriticalBatch:
    """How far data parallelism goes: the critical batch, Llama 3's ramp, the check yourself."""

    l3_16k: dict[str, Any]  # data/systems.toml's llama3_pretraining_8k_16k
    l3_long: dict[str, Any]  # data/systems.toml's llama3_long_context
    batch_tokens: int  # Llama 3's last batch
    sequence_tokens: int  # its sequence
    cluster_gpus: int
    dp_max: int
    mp_min: str
    per_replica: int  # sequences per replica, so the pipeline has microbatches
    mp_16k: int  # TP x PP of the 16K-GPU run
    long_mp: int  # TP x CP x PP of the long-context run
    long_dp_pp: int
    long_mp_pp: str
    figure_batches: list[tuple[str, float, int]]
    figure_marked: list[tuple[str, int, int]]
    caption: str
    q_steps: str
    q_examples: str
    f_steps: str
    f_examples: str
    ramp_first_m: str
    ramp_first_seq: str
    ramp_second_m: str
    ramp_second_seq: str
    ramp_second_after_m: str
    ramp_last_m: str
    ramp_third_after_t: str
    ramp_total_t: str
    l3_dp_max: str
    l3_16k_gpus: str
    l3_16k_pp: int
    l3_16k_dp: int
    l3_16k_mp_min: str
    l3_16k_tp: int
    l3_16k_tflops: int
    l3_16k_replica_tokens: str
    l3_long_seq_k: str
    l3_long_dp_max: str
    l3_long_mp_min: str
    l3_long_cp: int
    l3_long_tp: int
    l3_long_pp: int
    l3_long_dp: int
    # Check yourself: 8M-token batches of 8,192-token sequences on 24,576 H100, B_crit 4M.
    check_batch_m: str
    check_seq: str
    check_gpus: str
    check_critical_m: str
    check_dp_max: str
    check_mp_min: str
    check_e_big: str
    check_e_crit: str
    check_compute_more: str
    check_s_big: str
    check_s_crit: str
    check_steps_fewer: str


def build_bubble() -> Bubble:
    stages, limit = 16, 0.05
    microbatches = np.arange(1, 4097)
    bubbles = training.pipeline_bubble_fraction(stages, microbatches)
    enough = int(microbatches[bubbles <= limit][0])
    caption = (
        "The bubble, the share of a step each pipeline stage sits idle, against the "
        "microbatches per step. It falls towards zero as the microbatches outnumber the "
        f"stages; {stages} stages need {enough} microbatches to get it under "
        f"{limit:.0%} (dotted)."
    )
    return Bubble(stages=stages, limit=limit, enough=enough, caption=caption)


def build_side_by_side(basics: Basics) -> SideBySide:
    llama, h100, batch = basics.llama, basics.h100, basics.batch_tokens
    layouts = [
        (Layout(dp=1024), 8, "stored"),
        (Layout(dp=1024, zero_stage=3), 1, "checkpointed"),
        (Layout(dp=128, tp=8, zero_stage=1), 8, "stored"),
        (Layout(dp=64, tp=16, zero_stage=1), 8, "stored"),
        (Layout(dp=32, tp=8, pp=4, zero_stage=1), 32, "stored"),
        (Layout(dp=16, tp=8, pp=8, zero_stage=1), 32, "stored"),
    ]
    caption = (
        f"Six layouts of {llama.name} on 1,024 H100, 4M tokens per step. Left: memory per GPU "
        f"(dashed: the H100's {h100.hbm_bytes / 1e9:.0f} GB; the first bar is cut off). Right, "
        "per layout: compute and bubble (upper bar) and the communication of each kind (lower "
        "bar, hatched where it crosses the scale-out network). Communication can hide under "
        "compute; the bubble cannot. Floors at 100% of the dense peak."
    )
    fsdp = training.training_step(
        llama, Layout(dp=1024, zero_stage=3), h100, batch, activations="checkpointed"
    )
    pp4 = training.training_step(
        llama, Layout(dp=32, tp=8, pp=4, zero_stage=1), h100, batch, microbatches=32
    )
    return SideBySide(
        layouts=[layout for layout, _, _ in layouts],
        microbatches=[m for _, m, _ in layouts],
        activations=[mode for _, _, mode in layouts],
        caption=caption,
        fsdp_mfu=shown.fixed(fsdp.mfu * 100),
        pp4_mfu=shown.fixed(pp4.mfu * 100),
        pp4_bubble=shown.fixed(training.pipeline_bubble_fraction(4, 32) * 100, 1),
    )


def build_llama3(basics: Basics) -> Llama3Run:
    h100 = basics.h100
    # Meta used an interleaved pipeline schedule; the paper does not print its number of chunks
    # per GPU, so v = 2 (the smallest interleaving) is our assumption.
    chunks = 2
    layout = Layout(
        dp=64, tp=8, pp=16, zero_stage=1, embedding_as_layers=True, virtual_stages=chunks
    )
    run = data.table("systems")["llama3_pretraining_8k"]  # Table 4's first row
    microbatches = run["tokens_per_step"] // run["sequence_tokens"] // run["dp"]
    step = training.training_step(
        "Llama-3.1-405B", layout, h100, run["tokens_per_step"], microbatches=microbatches
    )
    memory = training_memory.training_memory(
        "Llama-3.1-405B", layout, run["tokens_per_step"], microbatches=microbatches
    )
    measured_tokens = (
        run["tflops_per_gpu"]
        * 1e12
        * run["gpus"]
        / get_model("Llama-3.1-405B").training_flops_per_token()
    )
    gemm = serving_systems.measured("h100-bf16-gemm")
    return Llama3Run(
        layout=layout,
        run=run,
        step=step,
        memory=memory,
        gemm=gemm,
        microbatches=microbatches,
        chunks=chunks,
        gpus=format(run["gpus"], ","),
        tp=run["tp"],
        pp=run["pp"],
        dp=run["dp"],
        step_m=shown.fixed(run["tokens_per_step"] / 2**20),
        tflops=str(run["tflops_per_gpu"]),
        mfu=shown.fixed(run["bf16_mfu"] * 100),
        bubble=shown.fixed(training.pipeline_bubble_fraction(16, 32, chunks) * 100),
        bubble_plain=shown.fixed(training.pipeline_bubble_fraction(16, 32) * 100),
        tokens_m=shown.fixed(step.tokens_per_s / 1e6, 2),
        mfu_floor=shown.fixed(step.mfu * 100),
        mfu_floor_serial=shown.fixed(step.mfu_no_overlap * 100),
        measured_m=shown.fixed(measured_tokens / 1e6, 2),
        kernel_overlap=shown.fixed(run["bf16_mfu"] / step.mfu * 100),
        kernel=shown.fixed(run["bf16_mfu"] / step.mfu_no_overlap * 100),
        gemm_share=shown.fixed(gemm.value / h100.peak("bf16") * 100),
        gemm_tflops=shown.tflops(gemm.value, 1),
        memory_gb=shown.gb(memory.total_bytes),
    )


def _k(tokens: int) -> str:
    """A sequence length in K tokens, as the figure's legend writes it."""
    return f"{tokens // 1024}K"


def _critical_batch_figure(
    ramp: dict[str, Any], l3_long: dict[str, Any], mp_16k: int, long_mp: int, cluster_gpus: int
) -> tuple[list[tuple[str, float, int]], list[tuple[str, int, int]]]:
    """The critical-batch figure's batches and marked layouts, labelled as its legend says."""
    first_m, second_m, last_m = (shown.fixed(t / 2**20) for t in ramp["tokens_per_step"])
    batch, sequence = ramp["tokens_per_step"][2], ramp["sequence_tokens"][2]
    long_seq_k = shown.fixed(l3_long["sequence_tokens"] / 1024)
    batches = [
        (
            f"{first_m}M tokens of {_k(ramp['sequence_tokens'][0])} sequences "
            f"(and {second_m}M of {_k(ramp['sequence_tokens'][1])})",
            ramp["tokens_per_step"][0],
            ramp["sequence_tokens"][0],
        ),
        (f"{last_m}M tokens of {_k(sequence)} sequences", batch, sequence),
        (f"{last_m}M tokens of {long_seq_k}K sequences", batch, l3_long["sequence_tokens"]),
    ]
    marked = [
        (f"Llama 3 at {_k(sequence)}: TP8 x PP16", cluster_gpus, mp_16k),
        (f"Llama 3 at {long_seq_k}K: TP8 x CP16 x PP16", l3_long["gpus"], long_mp),
    ]
    return batches, marked


def build_critical_batch() -> CriticalBatch:
    systems = data.table("systems")
    ramp = systems["llama3_batch_schedule"]
    l3_16k = systems["llama3_pretraining_8k_16k"]
    l3_long = systems["llama3_long_context"]
    ramp_m = [shown.fixed(t / 2**20) for t in ramp["tokens_per_step"]]
    batch, sequence, gpus = ramp["tokens_per_step"][2], ramp["sequence_tokens"][2], l3_16k["gpus"]
    long_sequence = l3_long["sequence_tokens"]
    dp_max = training.data_parallel_ceiling(batch, sequence)
    per_replica = batch // sequence // l3_16k["dp"]
    mp_16k = l3_16k["tp"] * l3_16k["pp"]
    long_mp = l3_long["tp"] * l3_long["cp"] * l3_long["pp"]
    figure_batches, figure_marked = _critical_batch_figure(ramp, l3_long, mp_16k, long_mp, gpus)
    caption = (
        "Left: McCandlish et al.'s trade-off, steps and examples (so compute) to reach one loss "
        "as multiples of their minima against the batch over the critical batch of optimisation;"
        " at the critical batch both are 2. "
        "Right: the fewest chips per data-parallel replica against the cluster's size, with one "
        f"sequence per replica, for Llama 3's batches; diamonds: its layouts on {gpus:,} H100, "
        f"which run {per_replica} sequences per replica so the pipeline has microbatches."
    )
    quarter = training.batch_tradeoff(0.25, 1.0)
    four = training.batch_tradeoff(4.0, 1.0)
    # Check yourself: 8M-token batches of 8,192-token sequences on 24,576 H100; B_crit 4M tokens.
    check_batch, check_seq, check_gpus, check_critical = 8 * 2**20, 8192, 24576, 4 * 2**20
    check_dp_max = training.data_parallel_ceiling(check_batch, check_seq)
    at = training.batch_tradeoff(np.array([check_critical, check_batch]), check_critical)
    examples, steps = np.asarray(at.examples_factor), np.asarray(at.steps_factor)
    return CriticalBatch(
        l3_16k=l3_16k,
        l3_long=l3_long,
        batch_tokens=batch,
        sequence_tokens=sequence,
        cluster_gpus=gpus,
        dp_max=dp_max,
        mp_min=str(training.min_model_parallel_degree(gpus, batch, sequence)),
        per_replica=per_replica,
        mp_16k=mp_16k,
        long_mp=long_mp,
        long_dp_pp=training.data_parallel_ceiling(batch, long_sequence, per_replica),
        long_mp_pp=format(
            training.min_model_parallel_degree(gpus, batch, long_sequence, per_replica), ","
        ),
        figure_batches=figure_batches,
        figure_marked=figure_marked,
        caption=caption,
        q_steps=format(quarter.steps_factor, ".3g"),
        q_examples=format(quarter.examples_factor, ".3g"),
        f_steps=format(four.steps_factor, ".3g"),
        f_examples=format(four.examples_factor, ".3g"),
        ramp_first_m=ramp_m[0],
        ramp_first_seq=format(ramp["sequence_tokens"][0], ","),
        ramp_second_m=ramp_m[1],
        ramp_second_seq=format(ramp["sequence_tokens"][1], ","),
        ramp_second_after_m=shown.fixed(ramp["starts_after_tokens"][1] / 1e6),
        ramp_last_m=ramp_m[2],
        ramp_third_after_t=shown.fixed(ramp["starts_after_tokens"][2] / 1e12, 2),
        ramp_total_t=shown.fixed(ramp["total_tokens"] / 1e12, 1),
        l3_dp_max=format(dp_max, ","),
        l3_16k_gpus=format(gpus, ","),
        l3_16k_pp=l3_16k["pp"],
        l3_16k_dp=l3_16k["dp"],
        l3_16k_mp_min=str(training.min_model_parallel_degree(gpus, batch, sequence, per_replica)),
        l3_16k_tp=l3_16k["tp"],
        l3_16k_tflops=l3_16k["tflops_per_gpu"],
        l3_16k_replica_tokens=format(batch // l3_16k["dp"], ","),
        l3_long_seq_k=shown.fixed(long_sequence / 1024),
        l3_long_dp_max=format(training.data_parallel_ceiling(batch, long_sequence), ","),
        l3_long_mp_min=str(training.min_model_parallel_degree(gpus, batch, long_sequence)),
        l3_long_cp=l3_long["cp"],
        l3_long_tp=l3_long["tp"],
        l3_long_pp=l3_long["pp"],
        l3_long_dp=l3_long["dp"],
        check_batch_m=shown.fixed(check_batch / 2**20),
        check_seq=format(check_seq, ","),
        check_gpus=format(check_gpus, ","),
        check_critical_m=shown.fixed(check_critical / 2**20),
        check_dp_max=format(check_dp_max, ","),
        check_mp_min=str(training.min_model_parallel_degree(check_gpus, check_batch, check_seq)),
        check_e_big=shown.fixed(examples[1]),
        check_e_crit=shown.fixed(examples[0]),
        check_compute_more=shown.fixed((examples[1] / examples[0] - 1) * 100),
        check_s_big=shown.fixed(steps[1], 1),
        check_s_crit=shown.fixed(steps[0]),
        check_steps_fewer=shown.fixed((1 - steps[1] / steps[0]) * 100),
    )

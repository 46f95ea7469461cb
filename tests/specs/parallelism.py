"""The parallelism exercise (solutions/parallelism/parallelism.ipynb) seen by the grading tests."""

from grading_support import AssignmentSpec

from llmmath import serving_systems


def _tp_latency() -> dict[str, float]:
    """Part 6's answers from the package (the lesson's "Collective latency"): Llama-3-70B with
    TP8 on H100 at batch 1 and 2,048 tokens of context, the serial step. The hidden tests'
    literals must equal these, so a change in serving_systems or the data fails here."""
    step = serving_systems.tp_decode_breakdown("Llama-3-70B", "H100", 8, 1, 2048)
    return {
        "alpha_s": float(step.alpha_s),
        "step_s": float(step.serial_s),
        "alpha_share": float(step.alpha_share),
    }


SPEC = AssignmentSpec(
    assignment="parallelism",
    test_cells=(
        "test_bubble_fraction",
        "test_model_state",
        "test_dp_critical",
        "test_kv_serving",
        "test_activations",
        "test_tp_latency",
    ),
    autograded_points=12.0,  # six autograded parts of 2 points
    manual_points=2.0,  # the reflection
    manual_cells=("reflection",),
    answers={
        "state_bytes_zero0": 2.822e11,
        "state_bytes_zero1": 7.2203515625e10,
        "state_bytes_zero3": 2.2046875e9,
        "critical_tokens_nvlink": 2187.5,
        "critical_tokens_nic": 44296.875,
        "tokens_per_replica": 32768.0,
        "kv_bytes_tp8": 3.221225472e10,
        "kv_bytes_pp8": 2.5769803776e11,
        "max_batch_tp8": 92.0,
        "max_batch_pp8": 11.0,
        "stored_bytes": 1.124073472e10,
        "checkpointed_bytes": 8.11597824e8,
        "reversible_bytes": 2.07618048e8,
        "extra_compute_fraction": 0.3333333333333333,
        **_tp_latency(),
    },
    # Thinking ZeRO-1 also shards the gradients (that is stage 2), thinking a pipeline divides
    # the KV cache per GPU by its stages as tensor parallelism does, and counting one
    # all-reduce per layer where tensor parallelism does two (after attention, after the MLP).
    wrong_answers={
        "model_state": (
            "TP, DP = 4, 128\n"
            "per_gpu_params = LLAMA3_70B_PARAMS / TP\n"
            "adam = WEIGHT_BYTES_PER_PARAM + GRAD_BYTES_PER_PARAM + OPTIMIZER_BYTES_PER_PARAM\n"
            "state_bytes_zero0 = adam * per_gpu_params\n"
            "state_bytes_zero1 = WEIGHT_BYTES_PER_PARAM * per_gpu_params + (\n"
            "    GRAD_BYTES_PER_PARAM + OPTIMIZER_BYTES_PER_PARAM\n"
            ") * per_gpu_params / DP\n"
            "state_bytes_zero3 = adam * per_gpu_params / DP\n"
            "fits_zero0 = state_bytes_zero0 <= H100_HBM_BYTES\n"
        ),
        "kv_serving": (
            "import math\n"
            "BATCH, CONTEXT, GPUS = 48, 16_384, 8\n"
            "one_batch = BATCH * CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN\n"
            "kv_bytes_tp8 = one_batch / GPUS\n"
            "kv_bytes_pp8 = one_batch / GPUS\n"
            "room = H100_HBM_BYTES - WEIGHT_BYTES_PER_PARAM * LLAMA3_70B_PARAMS / GPUS\n"
            "max_batch_tp8 = math.floor(room / (CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN / GPUS))\n"
            "max_batch_pp8 = max_batch_tp8\n"
        ),
        "tp_latency": (
            "TP, CONTEXT = 8, 2_048\n"
            "ring_steps = 2 * (TP - 1)\n"
            "per_all_reduce = NCCL_BASE_LATENCY_S + ring_steps * NVLINK_STEP_LATENCY_S\n"
            "alpha_s = LLAMA3_70B_LAYERS * per_all_reduce\n"
            "weights = WEIGHT_BYTES_PER_PARAM * LLAMA3_70B_MATMUL_PARAMS / TP\n"
            "kv = CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN / TP\n"
            "sent = LLAMA3_70B_LAYERS * ring_steps / TP * LLAMA3_70B_LAYER_INPUT_BYTES\n"
            "reads_s = (weights + kv) / H100_HBM_BYTES_PER_S\n"
            "step_s = reads_s + alpha_s + sent / H100_NVLINK_BYTES_PER_S\n"
            "alpha_share = alpha_s / step_s\n"
        ),
    },
    wrong_fails={
        "test_model_state": "state_bytes_zero1",
        "test_kv_serving": "kv_bytes_pp8",
        "test_tp_latency": "alpha_s",
    },
    pinned_expressions=3,  # Part 1's hidden tests pin three bubble_fraction calls
    leaky_examples=(
        "the ZeRO-0 state is 282 GB per GPU",
        "a replica needs 44,296.875 tokens, about 4.43e+04",
        "at batch 1 the all-reduces' latency is 0.315 of the step, 2.4 ms",
    ),
    clean_examples=("70.55e9 parameters, 16 bytes each, 80e9 bytes of HBM, 327,680 B/token",),
)

"""The parallelism exercise (solutions/parallelism/parallelism.ipynb) seen by the grading tests."""

from llmmath.beyond import serving_systems
from llmmath_course.simulate import AssignmentSpec, Mistake, slip


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
    # The wrong answers graded in test_grading.py (the visible checks catch them too, #46):
    # the whole model per GPU under TP4, a pipeline thought to divide the KV cache per GPU by
    # its stages as tensor parallelism does, and one all-reduce per layer where tensor
    # parallelism does two (after attention, after the MLP).
    wrong_answers={
        "model_state": (
            "TP, DP = 4, 128\n"
            "per_gpu_params = LLAMA3_70B_PARAMS\n"
            "adam = WEIGHT_BYTES_PER_PARAM + GRAD_BYTES_PER_PARAM + OPTIMIZER_BYTES_PER_PARAM\n"
            "state_bytes_zero0 = adam * per_gpu_params\n"
            "kept = (WEIGHT_BYTES_PER_PARAM + GRAD_BYTES_PER_PARAM) * per_gpu_params\n"
            "state_bytes_zero1 = kept + OPTIMIZER_BYTES_PER_PARAM * per_gpu_params / DP\n"
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
        "test_model_state": "state_bytes_zero0",
        "test_kv_serving": "kv_bytes_pp8",
        "test_tp_latency": "alpha_s",
    },
    pinned_expressions=3,  # Part 1's hidden tests pin three bubble_fraction calls
    mistakes=(
        slip(
            "parallelism",
            "bubble_fraction",
            "the idle time over the busy time, not over the whole step",
            ("(microbatches + stages - 1)", "microbatches"),
        ),
        Mistake(
            "bubble_fraction",
            "def bubble_fraction(stages, microbatches):\n    return (stages - 1) / microbatches\n",
            "idle time over working time, not over the step",
            True,
        ),
        Mistake(
            "bubble_fraction",
            "def bubble_fraction(stages, microbatches):\n"
            "    return (stages - 1) / (microbatches + stages)\n",
            "one microbatch-time too many in the step",
            True,
        ),
        Mistake(
            "model_state",
            "TP, DP = 4, 128\n"
            "per_gpu_params = LLAMA3_70B_PARAMS / TP\n"
            "adam = WEIGHT_BYTES_PER_PARAM + GRAD_BYTES_PER_PARAM + OPTIMIZER_BYTES_PER_PARAM\n"
            "state_bytes_zero0 = adam * per_gpu_params\n"
            "state_bytes_zero1 = WEIGHT_BYTES_PER_PARAM * per_gpu_params + (\n"
            "    GRAD_BYTES_PER_PARAM + OPTIMIZER_BYTES_PER_PARAM\n"
            ") * per_gpu_params / DP\n"
            "state_bytes_zero3 = adam * per_gpu_params / DP\n"
            "fits_zero0 = state_bytes_zero0 <= H100_HBM_BYTES\n",
            "ZeRO-1 sharding the gradients too (stage 2)",
            True,
        ),
        Mistake(
            "model_state",
            "TP, DP = 4, 128\n"
            "per_gpu_params = LLAMA3_70B_PARAMS / TP\n"
            "adam = WEIGHT_BYTES_PER_PARAM + GRAD_BYTES_PER_PARAM + OPTIMIZER_BYTES_PER_PARAM\n"
            "state_bytes_zero0 = adam * per_gpu_params\n"
            "kept = (WEIGHT_BYTES_PER_PARAM + GRAD_BYTES_PER_PARAM) * per_gpu_params\n"
            "state_bytes_zero1 = kept + OPTIMIZER_BYTES_PER_PARAM * per_gpu_params / DP\n"
            "state_bytes_zero3 = adam * per_gpu_params / (DP * TP)\n"
            "fits_zero0 = state_bytes_zero0 <= H100_HBM_BYTES\n",
            "ZeRO-3 dividing by the TP group again",
            True,
        ),
        Mistake(
            "model_state",
            "TP, DP = 4, 128\n"
            "per_gpu_params = LLAMA3_70B_PARAMS / TP\n"
            "adam = WEIGHT_BYTES_PER_PARAM + GRAD_BYTES_PER_PARAM + OPTIMIZER_BYTES_PER_PARAM\n"
            "state_bytes_zero0 = adam * per_gpu_params\n"
            "kept = (WEIGHT_BYTES_PER_PARAM + GRAD_BYTES_PER_PARAM) * per_gpu_params\n"
            "state_bytes_zero1 = kept + OPTIMIZER_BYTES_PER_PARAM * per_gpu_params / DP\n"
            "state_bytes_zero3 = adam * per_gpu_params / DP\n"
            "fits_zero0 = state_bytes_zero0 >= H100_HBM_BYTES\n",
            "fits read the wrong way round",
            True,
        ),
        Mistake(
            "dp_critical",
            "STEP_TOKENS, REPLICAS = 2_097_152, 64\n"
            "critical_tokens_nvlink = B200_BF16_FLOP_PER_S / B200_NVLINK_BYTES_PER_S\n"
            "critical_tokens_nic = B200_BF16_FLOP_PER_S / NIC_BYTES_PER_S\n"
            "tokens_per_replica = STEP_TOKENS / REPLICAS\n"
            "dp_compute_bound = tokens_per_replica >= critical_tokens_nic\n",
            "the ring's (n - 1) / n left out",
            True,
        ),
        Mistake(
            "dp_critical",
            "STEP_TOKENS, REPLICAS = 2_097_152, 64\n"
            "critical_tokens_nvlink = 2 * B200_BF16_FLOP_PER_S / B200_NVLINK_BYTES_PER_S * 7 / 8\n"
            "critical_tokens_nic = 2 * B200_BF16_FLOP_PER_S / NIC_BYTES_PER_S * 63 / 64\n"
            "tokens_per_replica = STEP_TOKENS / REPLICAS\n"
            "dp_compute_bound = tokens_per_replica >= critical_tokens_nic\n",
            "the all-reduce's factor 2 counted twice",
            True,
        ),
        Mistake(
            "dp_critical",
            "STEP_TOKENS, REPLICAS = 2_097_152, 64\n"
            "critical_tokens_nvlink = B200_BF16_FLOP_PER_S / B200_NVLINK_BYTES_PER_S * 7 / 8\n"
            "critical_tokens_nic = B200_BF16_FLOP_PER_S / NIC_BYTES_PER_S * 63 / 64\n"
            "tokens_per_replica = STEP_TOKENS\n"
            "dp_compute_bound = tokens_per_replica >= critical_tokens_nic\n",
            "the whole step's tokens on each replica",
            True,
        ),
        Mistake(
            "kv_serving",
            "import math\n"
            "BATCH, CONTEXT, GPUS = 48, 16_384, 8\n"
            "one_batch = BATCH * CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN\n"
            "kv_bytes_tp8 = one_batch / GPUS\n"
            "kv_bytes_pp8 = one_batch\n"
            "per_tp8 = CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN / GPUS\n"
            "max_batch_tp8 = math.floor(H100_HBM_BYTES / per_tp8)\n"
            "max_batch_pp8 = math.floor(H100_HBM_BYTES / (per_tp8 * GPUS))\n",
            "the weights' share of HBM forgotten",
            True,
        ),
        Mistake(
            "kv_serving",
            "import math\n"
            "BATCH, CONTEXT, GPUS = 48, 16_384, 8\n"
            "one_batch = BATCH * CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN\n"
            "kv_bytes_tp8 = one_batch / GPUS\n"
            "kv_bytes_pp8 = one_batch\n"
            "room = H100_HBM_BYTES - WEIGHT_BYTES_PER_PARAM * LLAMA3_70B_PARAMS / GPUS\n"
            "max_batch_tp8 = round(room / (CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN / GPUS))\n"
            "max_batch_pp8 = round(room / (CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN))\n",
            "rounded to nearest, not down",
            True,
        ),
        Mistake(
            "activations",
            "IN_FLIGHT, TOKENS, LAYERS, TP = 4, 4096, 20, 8\n"
            "a, d = LLAMA3_70B_ACTIVATION_BYTES_PER_TOKEN_LAYER, LLAMA3_70B_LAYER_INPUT_BYTES\n"
            "stored_bytes = IN_FLIGHT * TOKENS * LAYERS * a / TP\n"
            "checkpointed_bytes = IN_FLIGHT * TOKENS * LAYERS * d / TP\n"
            "reversible_bytes = (IN_FLIGHT * TOKENS * 2 * d + TOKENS * a) / TP\n"
            "extra_compute_fraction = 2 / 6\n",
            "the layer being rebuilt forgotten",
            True,
        ),
        Mistake(
            "activations",
            "IN_FLIGHT, TOKENS, LAYERS, TP = 4, 4096, 20, 8\n"
            "a, d = LLAMA3_70B_ACTIVATION_BYTES_PER_TOKEN_LAYER, LLAMA3_70B_LAYER_INPUT_BYTES\n"
            "stored_bytes = IN_FLIGHT * TOKENS * LAYERS * a / TP\n"
            "checkpointed_bytes = (IN_FLIGHT * TOKENS * LAYERS * d + TOKENS * a) / TP\n"
            "reversible_bytes = (TOKENS * 2 * d + TOKENS * a) / TP\n"
            "extra_compute_fraction = 2 / 6\n",
            "the output streams of one microbatch only",
            True,
        ),
        Mistake(
            "activations",
            "IN_FLIGHT, TOKENS, LAYERS, TP = 4, 4096, 20, 8\n"
            "a, d = LLAMA3_70B_ACTIVATION_BYTES_PER_TOKEN_LAYER, LLAMA3_70B_LAYER_INPUT_BYTES\n"
            "stored_bytes = IN_FLIGHT * TOKENS * LAYERS * a / TP\n"
            "checkpointed_bytes = (IN_FLIGHT * TOKENS * LAYERS * d + TOKENS * a) / TP\n"
            "reversible_bytes = (IN_FLIGHT * TOKENS * 2 * d + TOKENS * a) / TP\n"
            "extra_compute_fraction = 2 / 8\n",
            "the extra FLOPs over the new total",
            True,
        ),
        Mistake(
            "tp_latency",
            "TP, CONTEXT = 8, 2_048\n"
            "all_reduces, ring_steps = 2 * LLAMA3_70B_LAYERS, 2 * (TP - 1)\n"
            "alpha_s = all_reduces * ring_steps * NVLINK_STEP_LATENCY_S\n"
            "weights = WEIGHT_BYTES_PER_PARAM * LLAMA3_70B_MATMUL_PARAMS / TP\n"
            "kv = CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN / TP\n"
            "sent = all_reduces * ring_steps / TP * LLAMA3_70B_LAYER_INPUT_BYTES\n"
            "reads_s = (weights + kv) / H100_HBM_BYTES_PER_S\n"
            "step_s = reads_s + alpha_s + sent / H100_NVLINK_BYTES_PER_S\n"
            "alpha_share = alpha_s / step_s\n",
            "the base latency left out",
            True,
        ),
        Mistake(
            "tp_latency",
            "TP, CONTEXT = 8, 2_048\n"
            "all_reduces, ring_steps = 2 * LLAMA3_70B_LAYERS, 2 * (TP - 1)\n"
            "alpha_s = all_reduces * (NCCL_BASE_LATENCY_S + ring_steps * NVLINK_STEP_LATENCY_S)\n"
            "weights = WEIGHT_BYTES_PER_PARAM * LLAMA3_70B_MATMUL_PARAMS / TP\n"
            "sent = all_reduces * ring_steps / TP * LLAMA3_70B_LAYER_INPUT_BYTES\n"
            "step_s = weights / H100_HBM_BYTES_PER_S + alpha_s + sent / H100_NVLINK_BYTES_PER_S\n"
            "alpha_share = alpha_s / step_s\n",
            "the KV read left out",
            True,
        ),
        Mistake(
            "tp_latency",
            "TP, CONTEXT = 8, 2_048\n"
            "all_reduces, ring_steps = 2 * LLAMA3_70B_LAYERS, 2 * (TP - 1)\n"
            "alpha_s = all_reduces * (NCCL_BASE_LATENCY_S + ring_steps * NVLINK_STEP_LATENCY_S)\n"
            "weights = WEIGHT_BYTES_PER_PARAM * LLAMA3_70B_MATMUL_PARAMS\n"
            "kv = CONTEXT * LLAMA3_70B_KV_BYTES_PER_TOKEN\n"
            "sent = all_reduces * ring_steps / TP * LLAMA3_70B_LAYER_INPUT_BYTES\n"
            "reads_s = (weights + kv) / H100_HBM_BYTES_PER_S\n"
            "step_s = reads_s + alpha_s + sent / H100_NVLINK_BYTES_PER_S\n"
            "alpha_share = alpha_s / step_s\n",
            "every GPU reading all the weights",
            True,
        ),
    ),
    leaky_examples=(
        "the ZeRO-0 state is 282 GB per GPU",
        "a replica needs 44,296.875 tokens, about 4.43e+04",
        "at batch 1 the all-reduces' latency is 0.315 of the step, 2.4 ms",
    ),
    clean_examples=("70.55e9 parameters, 16 bytes each, 80e9 bytes of HBM, 327,680 B/token",),
)

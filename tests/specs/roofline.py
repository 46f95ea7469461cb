"""The roofline exercise (solutions/roofline/roofline.ipynb) as the grading tests see it."""

from grading_support import AssignmentSpec

SPEC = AssignmentSpec(
    assignment="roofline",
    test_cells=(
        "test_matmul_intensity",
        "test_decode_batch1",
        "test_critical_batch",
        "test_critical_batch_int8",
        "test_focus",
    ),
    autograded_points=10.0,  # five autograded parts of 2 points
    manual_points=2.0,  # the reflection
    manual_cells=("reflection",),
    answers={
        "weight_bytes": 1.411e11,
        "weight_read_time_s": 0.04149213543164179,
        "compute_time_batch1_s": 1.4054464478867543e-4,
        "critical_batch_h100": 295.2238805970149,
        "critical_batch_int8": 147.61194029850745,
        # Part 5, from llmmath.focus.local_decode on a FocusMachine(32e9 B, 90e9 B/s, 0.75)
        # at context 0 (tests/test_exercise_depth.py recomputes them).
        "gemma_12b_int4_tokens_per_s": 15.298784028167388,
        "missing_27b_int8_bytes": 3008663808.0,
    },
    # Counting parameters instead of bytes, thinking 1-byte weights double the critical batch
    # instead of halving it, and giving the model all of a laptop's memory.
    wrong_answers={
        "decode_batch1": (
            "weight_bytes = LLAMA3_70B_PARAMS\n"
            "weight_read_time_s = weight_bytes / H100_HBM_BYTES_PER_S\n"
            "compute_time_batch1_s = 2 * LLAMA3_70B_PARAMS / H100_BF16_FLOP_PER_S\n"
        ),
        "critical_batch_int8": (
            "critical_batch_int8 = 2 * H100_BF16_FLOP_PER_S / H100_HBM_BYTES_PER_S\n"
        ),
        "focus": (
            "gemma_12b_int4_tokens_per_s = LAPTOP_BYTES_PER_S / (GEMMA3_12B_PARAMS * INT4_BYTES)\n"
            "missing_27b_int8_bytes = GEMMA3_27B_PARAMS * INT8_BYTES - LAPTOP_MEMORY_BYTES\n"
        ),
    },
    wrong_fails={
        "test_decode_batch1": "weight_bytes",
        "test_critical_batch_int8": "critical_batch_int8",
        "test_focus": "missing_27b_int8_bytes",
    },
    pinned_expressions=3,  # Part 1's hidden tests pin three intensities of matmul calls
    leaky_examples=(
        "the critical batch is about 295 tokens",
        "a read of 139 GB takes 41.5 ms",
        "the laptop gives Gemma-3-12B at most 15.3 tokens/s",
        "the 27B model in int8 lacks 3.01 GB",
    ),
    clean_examples=(
        "D = 8192, F = 28672, 3.35e12 B/s, 9.89e14 FLOP/s, 70.55e9",
        "90e9 B/s, 32e9 B, 75%, 11.766e9 and 27.009e9 parameters, 200 tokens per second",
    ),
)

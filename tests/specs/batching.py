"""The batching exercise (solutions/batching/batching.ipynb) as the grading tests see it."""

from grading_support import AssignmentSpec

SPEC = AssignmentSpec(
    assignment="batching",
    test_cells=(
        "test_decode_step_time_s",
        "test_cost_per_mtok",
        "test_max_batch",
        "test_request",
    ),
    autograded_points=8.0,  # four autograded parts of 2 points
    manual_points=2.0,  # the reflection
    manual_cells=("reflection",),
    answers={
        "cost_batch1_usd_per_mtok": 23.106832175124378,
        "cost_batch256_usd_per_mtok": 0.1456895208955224,
        "max_batch_8k": 185.0,
        "step_time_max_batch_s": 0.02371657639164179,
        "ttft_s": 0.03513616119716886,
        "decode_time_s": 7.13489088409791,
        "final_context_estimate_s": 7.526541062772537,
    },
    # Forgetting that the weights take their share of the HBM before any KV cache does, and
    # the performance tools' shortcut of costing every decode step at the final context.
    wrong_answers={
        "max_batch": (
            "kv_bytes_per_sequence = 8192 * LLAMA3_70B_KV_BYTES_PER_TOKEN\n"
            "max_batch_8k = int(N_CHIPS * H100_HBM_BYTES // kv_bytes_per_sequence)\n"
            "step_time_max_batch_s = decode_step_time_s(max_batch_8k, 8192)\n"
        ),
        "request": (
            "ttft_s = 2 * (LLAMA3_70B_PARAMS - LLAMA3_70B_EMBEDDING_PARAMS) * 2000"
            " / (N_CHIPS * H100_BF16_FLOP_PER_S)\n"
            "decode_time_s = 999 * decode_step_time_s(64, 3000)\n"
            "final_context_estimate_s = 999 * decode_step_time_s(64, 3000)\n"
        ),
    },
    wrong_fails={
        "test_max_batch": "max_batch_8k",
        "test_request": "decode_time_s",
    },
    pinned_expressions=3,  # Part 1's hidden tests pin three calls of decode_step_time_s
    leaky_examples=(
        "a lone sequence pays 23.1 USD per million tokens",
        "at 8k context 185 sequences fit",
        "the full server steps in 23.7 ms",
        "the first token comes after 35.1 ms",
    ),
    clean_examples=(
        "9.89e14 FLOP/s, 3.35e12 B/s, 80e9 B, 8 chips, 70.55e9 parameters, 327,680 B, 2.00 USD",
        "a 10 ms step shared by 100 tokens costs 0.444 USD per million; 999 steps of 2,000 tokens",
    ),
)

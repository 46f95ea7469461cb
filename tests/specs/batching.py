"""The batching exercise (solutions/batching/batching.ipynb) as the grading tests see it."""

from grading_support import AssignmentSpec

SPEC = AssignmentSpec(
    assignment="batching",
    test_cells=(
        "test_decode_step_time_s",
        "test_cost_per_mtok",
        "test_max_batch",
        "test_request",
        "test_speculative",
    ),
    autograded_points=10.0,  # five autograded parts of 2 points
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
        # Part 5, from llmmath.speculative and batching.step_critical_batch for Llama-3-70B on
        # 8 H100s (tests/test_exercise_depth.py recomputes them).
        "spec_tokens_per_step": 3.05078125,
        "spec_speedup_batch4": 2.7294521918516135,
        "spec_compute_bound_batch": 59.04477611940298,
    },
    # Forgetting that the weights take their share of the HBM before any KV cache does, the
    # performance tools' shortcut of costing every decode step at the final context, and
    # counting every draft as if it were accepted on its own (1 + k a tokens per step, and the
    # check as k tokens, not k + 1).
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
        "speculative": (
            "spec_tokens_per_step = 1 + DRAFT_TOKENS * DRAFT_ACCEPTANCE\n"
            "plain_s = decode_step_time_s(4, 2048)\n"
            "drafts_s = DRAFT_TOKENS * DRAFT_WEIGHT_SHARE * decode_step_time_s(1, 0)\n"
            "spec_speedup_batch4 = spec_tokens_per_step * plain_s / (plain_s + drafts_s)\n"
            "spec_compute_bound_batch = (\n"
            "    H100_BF16_FLOP_PER_S / H100_HBM_BYTES_PER_S / DRAFT_TOKENS\n"
            ")\n"
        ),
    },
    wrong_fails={
        "test_max_batch": "max_batch_8k",
        "test_request": "decode_time_s",
        "test_speculative": "spec_tokens_per_step",
    },
    pinned_expressions=3,  # Part 1's hidden tests pin three calls of decode_step_time_s
    leaky_examples=(
        "a lone sequence pays 23.1 USD per million tokens",
        "at 8k context 185 sequences fit",
        "the full server steps in 23.7 ms",
        "the first token comes after 35.1 ms",
        "a step yields 3.05 tokens, 2.73 times faster; the gain shrinks past 59.0 sequences",
    ),
    clean_examples=(
        "9.89e14 FLOP/s, 3.35e12 B/s, 80e9 B, 8 chips, 70.55e9 parameters, 327,680 B, 2.00 USD",
        "a 10 ms step shared by 100 tokens costs 0.444 USD per million; 999 steps of 2,000 tokens",
        "k = 4 drafts, a = 0.75, 3% of a weight read; one draft half the time gives 1.5 tokens",
    ),
)

"""The KV-cache exercise (solutions/kv_cache/kv_cache.ipynb) as the grading tests see it."""

from grading_support import AssignmentSpec

SPEC = AssignmentSpec(
    assignment="kv_cache",
    test_cells=(
        "test_kv_bytes_per_token",
        "test_capacity",
        "test_bandwidth",
        "test_prefix",
        "test_fp8",
    ),
    autograded_points=10.0,  # five autograded parts of 2 points
    manual_points=2.0,  # the reflection
    manual_cells=("reflection",),
    answers={
        "kv_405b_bytes_per_token": 516096.0,
        "max_batch_128k": 6.0,
        "max_context_b16": 56711.0,
        "crossover_context_b16": 97789.13557167658,
        "step_time_128k_s": 0.022637532031044776,
        "dram_reload_s": 0.00524288,
        "prefill_s": 0.14391771626360364,
        "nvme_break_even_s": 5220.672267515965,
        # Part 5, from llmmath.number_formats.format_effects for Llama-3.1-405B on 16 H100s at
        # 131,072 tokens (tests/test_exercise_depth.py recomputes them).
        "max_batch_128k_fp8_kv": 13.0,
        "max_batch_128k_fp8": 25.0,
        "tokens_per_s_128k_fp8": 1072.5802840422543,
    },
    # The GQA bug other tools shipped: one key-value pair per query head (MHA), 16x too big;
    # forgetting that the weights take their share of the HBM before any KV cache does; and
    # forgetting that FP8 weights free HBM for the caches.
    wrong_answers={
        "kv_bytes_per_token": (
            "def kv_bytes_per_token(n_layers, n_kv_heads, head_dim, bytes_per_element):\n"
            "    return 2 * n_layers * n_kv_heads * head_dim * bytes_per_element\n"
            "\n"
            "\n"
            "kv_405b_bytes_per_token = kv_bytes_per_token(\n"
            "    LLAMA31_405B_LAYERS, LLAMA31_405B_QUERY_HEADS, LLAMA31_405B_HEAD_DIM, BF16_BYTES\n"
            ")\n"
        ),
        "capacity": (
            "max_batch_128k = int(N_CHIPS_405B * H100_HBM_BYTES // (131_072 * 516_096))\n"
            "max_context_b16 = int(N_CHIPS_405B * H100_HBM_BYTES // (16 * 516_096))\n"
        ),
        "fp8": (
            "sequence_bytes = 131_072 * kv_bytes_per_token(126, 8, 128, FP8_BYTES)\n"
            "room_bytes = N_CHIPS_405B * H100_HBM_BYTES - LLAMA31_405B_PARAMS * BF16_BYTES\n"
            "max_batch_128k_fp8_kv = int(room_bytes // sequence_bytes)\n"
            "max_batch_128k_fp8 = max_batch_128k_fp8_kv\n"
            "read_bytes = LLAMA31_405B_PARAMS - LLAMA31_405B_EMBEDDING_PARAMS\n"
            "read_bytes += max_batch_128k_fp8 * sequence_bytes\n"
            "tokens_per_s_128k_fp8 = max_batch_128k_fp8 * N_CHIPS_405B * H100_HBM_BYTES_PER_S"
            " / read_bytes\n"
        ),
    },
    # Part 3 builds on Parts 1 and 2 (the cache per token, the batch that fits), so the
    # mistakes carry into it, as they would for a student.
    wrong_fails={
        "test_kv_bytes_per_token": "kv_405b_bytes_per_token",
        "test_capacity": "max_batch_128k",
        "test_bandwidth": "crossover_context_b16",
        "test_fp8": "max_batch_128k_fp8",
    },
    pinned_expressions=2,  # Part 1's hidden tests pin two calls of kv_bytes_per_token
    leaky_examples=(
        "Llama-3.1-405B caches 5.161e+05 B per token",
        "16 sequences reach 5.671e+04 tokens",
        "the long step takes 22.6 ms",
        "the prefix comes back from DRAM in 5.24 ms, a prefill takes 144 ms",
        "flash pays for 5221 s",
        "in fp8 the server holds 13.0 sequences, or 25.0, and gives 1073 tokens/s",
    ),
    clean_examples=(
        "9.89e14 FLOP/s, 3.35e12 B/s, 80e9 B, 16 chips, 405.85e9 parameters, 131,072 tokens",
        "Llama-3-8B caches 131,072 B per token; 1 GB over 8 links of 64 GB/s takes 1.95 ms",
        "1.979e15 FLOP/s in fp8; 100 GB holds 100 sequences of 1,000 tokens in bf16, 200 in fp8",
    ),
)

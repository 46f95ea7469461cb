"""The KV-cache exercise (solutions/kv_cache/kv_cache.ipynb) as the grading tests see it."""

from llmmath_course.simulate import AssignmentSpec

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
        # Each is the course's own number (tests/course/test_exercise_values.py recomputes them):
        # ModelConfig.kv_bytes_per_token, max_batch, max_context, kv_crossover_context,
        # serving.decode_step, batching.prefill, kv_cache.prefix_cache and break_even_hold_s
        # (prefill at full peak), number_formats.format_effects.
        "kv_405b_bytes_per_token": 516096.0,
        "max_batch_128k": 6.0,
        "max_context_b16": 56711.0,
        "crossover_context_b16": 97789.95634920635,
        "step_time_128k_s": 0.022637658478805972,
        "dram_reload_s": 0.00524288,
        "prefill_s": 0.1550414422537836,
        "nvme_break_even_s": 5825.71108360541,
        "max_batch_128k_fp8_kv": 13.0,
        "max_batch_128k_fp8": 25.0,
        "tokens_per_s_128k_fp8": 1072.5802840422543,
    },
    # Mistakes the visible checks cannot see without giving the value away (they check what
    # defines each answer with the student's own values: the MHA cache and the weights left in
    # the HBM fail there now): a cache function that ignores bytes_per_element (always bf16),
    # a step that reads and multiplies all the parameters held, not P - VD, and a prefill in
    # which every prompt token attends to the whole prompt. Part 5 builds on Part 1's function,
    # so the first mistake carries into it, as it would for a student.
    wrong_answers={
        "kv_bytes_per_token": (
            "def kv_bytes_per_token(n_layers, n_kv_heads, head_dim, bytes_per_element):\n"
            "    return 2 * n_layers * n_kv_heads * head_dim * 2\n"
            "\n"
            "\n"
            "kv_405b_bytes_per_token = kv_bytes_per_token(\n"
            "    LLAMA31_405B_LAYERS, LLAMA31_405B_KV_HEADS, LLAMA31_405B_HEAD_DIM, BF16_BYTES\n"
            ")\n"
        ),
        "bandwidth": (
            "weight_bytes = (LLAMA31_405B_PARAMS - LLAMA31_405B_EMBEDDING_PARAMS) * BF16_BYTES\n"
            "crossover_context_b16 = weight_bytes / (16 * kv_405b_bytes_per_token)\n"
            "\n"
            "\n"
            "def step_time_s(batch, context):\n"
            "    compute_s = batch * 2 * LLAMA31_405B_PARAMS"
            " / (N_CHIPS_405B * H100_BF16_FLOP_PER_S)\n"
            "    read_bytes = LLAMA31_405B_PARAMS * BF16_BYTES"
            " + batch * context * kv_405b_bytes_per_token\n"
            "    return max(compute_s, read_bytes / (N_CHIPS_405B * H100_HBM_BYTES_PER_S))\n"
            "\n"
            "\n"
            "step_time_128k_s = step_time_s(max_batch_128k, 131_072)\n"
        ),
        "prefix": (
            "prefix_bytes = 8192 * LLAMA3_70B_KV_BYTES_PER_TOKEN\n"
            "dram_reload_s = prefix_bytes / (N_CHIPS_70B * DRAM_TO_GPU_BYTES_PER_S)\n"
            "matmul_params_70b = LLAMA3_70B_PARAMS - LLAMA3_70B_EMBEDDING_PARAMS\n"
            "per_token = 2 * matmul_params_70b"
            " + LLAMA3_70B_ATTENTION_FLOPS_PER_CONTEXT_TOKEN * 8192\n"
            "prefill_s = 8192 * per_token / (N_CHIPS_70B * H100_BF16_FLOP_PER_S)\n"
            "nvme_reload_s = prefix_bytes / (N_CHIPS_70B * NVME_TO_GPU_BYTES_PER_S)\n"
            "chips_usd_per_s = N_CHIPS_70B * USD_PER_CHIP_HOUR / SECONDS_PER_HOUR\n"
            "saved_usd = (prefill_s - nvme_reload_s) * chips_usd_per_s\n"
            "nvme_break_even_s = saved_usd / (prefix_bytes * NVME_USD_PER_BYTE_S)\n"
        ),
    },
    wrong_fails={
        "test_kv_bytes_per_token": "kv_bytes_per_token",
        "test_bandwidth": "step_time_128k_s",
        "test_prefix": "prefill_s",
        "test_fp8": "max_batch_128k_fp8_kv",
    },
    pinned_expressions=2,  # Part 1's hidden tests pin two calls of kv_bytes_per_token
    leaky_examples=(
        "Llama-3.1-405B caches 5.161e+05 B per token",
        "16 sequences reach 5.671e+04 tokens",
        "the long step takes 22.6 ms",
        "the prefix comes back from DRAM in 5.24 ms, a prefill takes 155 ms",
        "flash pays for 5826 s",
        "in fp8 the server holds 13.0 sequences, or 25.0, and gives 1073 tokens/s",
    ),
    clean_examples=(
        "9.89e14 FLOP/s, 3.35e12 B/s, 80e9 B, 16 chips, 405,853,388,800 parameters, 131,072 tokens",
        "A = 8,257,536 and 2,621,440 FLOPs per token of context; batch 400 at 2,048 tokens",
        "Llama-3-8B caches 131,072 B per token; 1 GB over 8 links of 64 GB/s takes 1.95 ms",
        "1.979e15 FLOP/s in fp8; 100 GB holds 100 sequences of 1,000 tokens in bf16, 200 in fp8",
    ),
)

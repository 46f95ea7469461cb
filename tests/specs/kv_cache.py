"""The KV-cache exercise (solutions/kv_cache/kv_cache.ipynb) as the grading tests see it."""

from llmmath_course.simulate import AssignmentSpec, slip


def _slip(cell: str, what: str, *edits: tuple[str, str]):  # type: ignore[no-untyped-def]
    return slip("kv_cache", cell, what, *edits)


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
    # The wrong answers graded in test_grading.py (the visible checks catch them too, #46): a
    # cache function that ignores bytes_per_element (always bf16), a step that reads and
    # multiplies all the parameters held, not P - VD, and a prefill in which every prompt token
    # attends to the whole prompt. Part 5 builds on Part 1's function, so the first mistake
    # carries into it, as it would for a student.
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
        "test_bandwidth": "step_time_s",
        "test_prefix": "prefill_s",
        "test_fp8": "max_batch_128k_fp8_kv",
    },
    mistakes=(
        _slip(
            "kv_bytes_per_token",
            "an MHA cache: a key and a value per query head",
            (
                "LLAMA31_405B_LAYERS, LLAMA31_405B_KV_HEADS,",
                "LLAMA31_405B_LAYERS, LLAMA31_405B_QUERY_HEADS,",
            ),
        ),
        _slip(
            "kv_bytes_per_token",
            "keys only, the values left out",
            ("return 2 * n_layers", "return n_layers"),
        ),
        _slip(
            "kv_bytes_per_token",
            "one layer's cache",
            ("return 2 * n_layers * n_kv_heads", "return 2 * n_kv_heads"),
        ),
        _slip(
            "capacity",
            "the HBM the matmul weights leave, the embedding not held",
            (
                "LLAMA31_405B_PARAMS * BF16_BYTES\n",
                "(LLAMA31_405B_PARAMS - LLAMA31_405B_EMBEDDING_PARAMS) * BF16_BYTES\n",
            ),
        ),
        _slip(
            "capacity",
            "batches rounded, not floored",
            ("int(kv_budget_bytes // (131_072", "round(kv_budget_bytes / (131_072"),
            ("int(kv_budget_bytes // (16", "round(kv_budget_bytes / (16"),
        ),
        _slip(
            "capacity",
            "the whole HBM for the caches, the weights forgotten",
            (
                "N_CHIPS_405B * H100_HBM_BYTES - LLAMA31_405B_PARAMS * BF16_BYTES",
                "N_CHIPS_405B * H100_HBM_BYTES",
            ),
        ),
        _slip(
            "bandwidth",
            "a step with no FLOPs term: the reads alone",
            (
                "return max(compute_s, read_bytes / (n * H100_HBM_BYTES_PER_S))",
                "return read_bytes / (n * H100_HBM_BYTES_PER_S)",
            ),
        ),
        _slip(
            "bandwidth",
            "the FLOPs' and the reads' times added",
            (
                "return max(compute_s, read_bytes / (n * H100_HBM_BYTES_PER_S))",
                "return compute_s + read_bytes / (n * H100_HBM_BYTES_PER_S)",
            ),
        ),
        _slip(
            "bandwidth",
            "the crossover for one sequence, not 16",
            (
                "weight_bytes / (16 * kv_405b_bytes_per_token)",
                "weight_bytes / kv_405b_bytes_per_token",
            ),
        ),
        _slip(
            "bandwidth",
            "attention's FLOPs left out of the step",
            (
                "2 * matmul_params + LLAMA31_405B_ATTENTION_FLOPS_PER_CONTEXT_TOKEN * context",
                "2 * matmul_params",
            ),
        ),
        _slip(
            "prefix",
            "the prefix over one GPU's DRAM link",
            (
                "prefix_bytes / (N_CHIPS_70B * DRAM_TO_GPU_BYTES_PER_S)",
                "prefix_bytes / DRAM_TO_GPU_BYTES_PER_S",
            ),
        ),
        _slip(
            "prefix",
            "keeping on NVMe without the chips' wait for the reload",
            ("(prefill_s - nvme_reload_s) * chips_usd_per_s", "prefill_s * chips_usd_per_s"),
        ),
        _slip(
            "prefix",
            "P for P_mm in the prefill: the embedding multiplied too",
            (
                "matmul_params_70b = LLAMA3_70B_PARAMS - LLAMA3_70B_EMBEDDING_PARAMS",
                "matmul_params_70b = LLAMA3_70B_PARAMS",
            ),
        ),
        _slip(
            "fp8",
            "bf16 weights read in the FP8 step",
            (
                "read_bytes = matmul_params_405b * FP8_BYTES",
                "read_bytes = matmul_params_405b * BF16_BYTES",
            ),
        ),
        _slip(
            "fp8",
            "the bf16 cache's batch for the FP8 one",
            (
                "* BF16_BYTES) // sequence_fp8_bytes)",
                "* BF16_BYTES) // (2 * sequence_fp8_bytes))",
            ),
        ),
        _slip(
            "fp8",
            "the server's tokens per second at Part 2's bf16 batch",
            (
                "tokens_per_s_128k_fp8 = max_batch_128k_fp8 /",
                "tokens_per_s_128k_fp8 = max_batch_128k /",
            ),
        ),
        _slip(
            "fp8",
            "all the weights read, the embedding too",
            (
                "read_bytes = matmul_params_405b * FP8_BYTES",
                "read_bytes = LLAMA31_405B_PARAMS * FP8_BYTES",
            ),
        ),
    ),
    pinned_expressions=4,  # two calls of kv_bytes_per_token (Part 1), two of step_time_s (3)
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

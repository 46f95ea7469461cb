"""The batching exercise (solutions/batching/batching.ipynb) as the grading tests see it."""

from llmmath_course.simulate import AssignmentSpec

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
        # Each is the course's own number (tests/course/test_exercise_values.py recomputes them):
        # serving.decode_step(Deployment("Llama-3-70B", "H100", 8), B, T) and its cost,
        # capacity.max_batch, batching.ttft_s, batching.request_latency, and
        # speculative.speculative_step / break_even_batch.
        "cost_batch1_usd_per_mtok": 23.108061527031513,
        "cost_batch256_usd_per_mtok": 0.1456943230514096,
        "max_batch_8k": 185.0,
        "step_time_max_batch_s": 0.023716852995820895,
        "ttft_s": 0.035800352873609706,
        "decode_time_s": 7.135167211672836,
        "final_context_estimate_s": 7.526817390347462,
        "spec_tokens_per_step": 3.05078125,
        "spec_speedup_batch4": 2.7294521918516135,
        "spec_break_even_batch": 194.0,
    },
    # Mistakes the visible checks cannot see without giving the value away (they check what
    # defines each answer with the student's own values, so Parts 2 and 3 admit none): a
    # prefill in which every prompt token attends to the whole prompt, 1,000 decode steps
    # instead of 999 (the prefill gives the first token), (1 - a^k) / (1 - a) tokens per step,
    # and a check that reads every sequence's KV cache k + 1 times (a plain step of (k + 1) B).
    wrong_answers={
        "request": (
            "matmul_params = LLAMA3_70B_PARAMS - LLAMA3_70B_EMBEDDING_PARAMS\n"
            "per_token = 2 * matmul_params + LLAMA3_70B_ATTENTION_FLOPS_PER_CONTEXT_TOKEN * 2000\n"
            "ttft_s = 2000 * per_token / (N_CHIPS * H100_BF16_FLOP_PER_S)\n"
            "decode_time_s = sum(decode_step_time_s(64, 2000 + i) for i in range(1000))\n"
            "final_context_estimate_s = 999 * decode_step_time_s(64, 3000)\n"
        ),
        "speculative": (
            "a, k = DRAFT_ACCEPTANCE, DRAFT_TOKENS\n"
            "spec_tokens_per_step = (1 - a**k) / (1 - a)\n"
            "drafts_s = k * DRAFT_WEIGHT_SHARE * decode_step_time_s(1, 0)\n"
            "\n"
            "\n"
            "def spec_speedup(batch, context):\n"
            "    wide_s = decode_step_time_s((k + 1) * batch, context)\n"
            "    plain_s = decode_step_time_s(batch, context)\n"
            "    return spec_tokens_per_step * plain_s / (drafts_s + wide_s)\n"
            "\n"
            "\n"
            "spec_speedup_batch4 = spec_speedup(4, 2048)\n"
            "spec_break_even_batch = 2\n"
            "while spec_speedup(spec_break_even_batch, 256) > 1:\n"
            "    spec_break_even_batch += 1\n"
        ),
    },
    wrong_fails={
        "test_request": "ttft_s",
        "test_speculative": "spec_tokens_per_step",
    },
    pinned_expressions=4,  # Part 1's hidden tests pin four calls of decode_step_time_s
    leaky_examples=(
        "a lone sequence pays 23.1 USD per million tokens",
        "at 8k context 185 sequences fit",
        "the full server steps in 23.7 ms",
        "the first token comes after 35.8 ms",
        "a step yields 3.05 tokens, 2.73 times faster; it stops paying at 194 sequences",
    ),
    clean_examples=(
        "9.89e14 FLOP/s, 3.35e12 B/s, 80e9 B, 8 chips, 70,553,706,496 parameters, 327,680 B",
        "2.00 USD; A = 2,621,440 FLOPs; at batch 400 the FLOPs take about 7 ms, the reads 10 ms",
        "a 10 ms step shared by 100 tokens costs 0.444 USD per million; 999 steps of 2,000 tokens",
        "k = 4 drafts, a = 0.75, 3% of a weight read; one draft half the time gives 1.5 tokens",
    ),
)

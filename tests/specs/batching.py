"""The batching exercise (solutions/batching/batching.ipynb) as the grading tests see it."""

from llmmath_course.simulate import AssignmentSpec, slip


def _slip(cell: str, what: str, *edits: tuple[str, str]):  # type: ignore[no-untyped-def]
    return slip("batching", cell, what, *edits)


P, P_MM = "LLAMA3_70B_PARAMS", "matmul_params"

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
    # The wrong answers graded in test_grading.py (the visible checks catch them too, #46): a
    # prefill in which every prompt token attends to the whole prompt with 1,000 decode steps
    # instead of 999, and (1 - a^k) / (1 - a) tokens per step with a check that reads every
    # sequence's KV cache k + 1 times (a plain step of (k + 1) B).
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
    mistakes=(
        _slip(
            "decode_step_time_s",
            "the FLOPs' time and the reads' time added, not the longer of the two",
            ("np.maximum(compute_s, memory_s)", "compute_s + memory_s"),
        ),
        _slip(
            "decode_step_time_s",
            "P for P_mm: the embedding read and multiplied too",
            ("matmul_params = LLAMA3_70B_PARAMS - LLAMA3_70B_EMBEDDING_PARAMS", f"{P_MM} = {P}"),
        ),
        _slip(
            "decode_step_time_s",
            "Python's max, which an array of batches cannot take",
            ("np.maximum(compute_s, memory_s)", "max(compute_s, memory_s)"),
        ),
        _slip(
            "decode_step_time_s",
            "one KV cache read for the whole batch",
            ("+ batch * context * LLAMA3", "+ context * LLAMA3"),
        ),
        _slip(
            "cost_per_mtok",
            "one chip's rent for the 8",
            ("N_CHIPS * USD_PER_CHIP_HOUR", "USD_PER_CHIP_HOUR"),
        ),
        _slip(
            "cost_per_mtok",
            "the step's rent not shared by its tokens",
            ("/ SECONDS_PER_HOUR / batch * 1e6", "/ SECONDS_PER_HOUR * 1e6"),
        ),
        _slip(
            "cost_per_mtok",
            "an hourly price charged per second",
            ("/ SECONDS_PER_HOUR / batch", "/ batch"),
        ),
        _slip(
            "max_batch",
            "the HBM the matmul weights leave, the embedding not held",
            (
                "LLAMA3_70B_PARAMS * BF16_BYTES\n",
                "(LLAMA3_70B_PARAMS - LLAMA3_70B_EMBEDDING_PARAMS) * BF16_BYTES\n",
            ),
        ),
        _slip(
            "max_batch",
            "a batch rounded, not floored: the last sequence does not fit",
            ("int(kv_room_bytes // (", "round(kv_room_bytes / ("),
        ),
        _slip(
            "max_batch",
            "one chip's HBM for the 8",
            ("N_CHIPS * H100_HBM_BYTES - ", "H100_HBM_BYTES - "),
        ),
        _slip(
            "request",
            "a decode loop one step long: 1,000 steps, the prefill's token counted twice",
            ("range(999)", "range(1000)"),
        ),
        _slip(
            "request",
            "the prefill without the causal halving: every token attends to the whole prompt",
            ("(2000 - 1) / 2", "2000"),
        ),
        _slip(
            "request",
            "a decode loop one step short",
            ("range(999)", "range(998)"),
        ),
        _slip(
            "request",
            "each step at the context it will reach, one token on",
            ("2000 + i) for", "2001 + i) for"),
        ),
        _slip(
            "speculative",
            "a geometric sum off by one: k terms, the step's own token or the last draft left out",
            ("range(DRAFT_TOKENS + 1)", "range(DRAFT_TOKENS)"),
        ),
        _slip(
            "speculative",
            "the draft steps left out of the time",
            ("/ (drafts_s + check_step_time_s", "/ (check_step_time_s"),
        ),
        _slip(
            "speculative",
            "attention's FLOPs not multiplied by the k + 1 positions",
            (
                "flops_s = (DRAFT_TOKENS + 1) * batch * per_token",
                "flops_s = batch * ((DRAFT_TOKENS + 1) * 2 * matmul_params"
                " + LLAMA3_70B_ATTENTION_FLOPS_PER_CONTEXT_TOKEN * context)",
            ),
        ),
        _slip(
            "speculative",
            "the last batch that still pays, not the first that does not",
            (
                "while spec_speedup(spec_break_even_batch, 256) > 1:\n"
                "    spec_break_even_batch += 1\n",
                "while spec_speedup(spec_break_even_batch + 1, 256) > 1:\n"
                "    spec_break_even_batch += 1\n",
            ),
        ),
    ),
    pinned_expressions=6,  # five calls of decode_step_time_s (Part 1), one of spec_speedup (5)
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

"""The MoE exercise (solutions/moe/moe.ipynb) as the grading tests see it."""

from grading_support import AssignmentSpec

SPEC = AssignmentSpec(
    assignment="moe",
    test_cells=(
        "test_mixtral_params",
        "test_expected_experts_touched",
        "test_compute_bound_batch",
        "test_all_to_all",
    ),
    autograded_points=8.0,  # four autograded parts of 2 points
    manual_points=2.0,  # the reflection
    manual_cells=("reflection",),
    answers={
        "mixtral_total_params": 46702792704.0,
        "mixtral_active_params": 12879925248.0,
        "sparsity_params": 3.6260142667560924,
        "batch_rule_experts": 9447.164179104477,
        "batch_rule_params": 5353.9249697458645,
        "a2a_bytes_per_gpu": 29360128.0,
        "a2a_time_hgx_s": 0.00051380224,
        "a2a_time_nvl72_s": 3.211264e-05,
    },
    # Treating a token's k picks as k independent draws with replacement, and forgetting that
    # the results come back (dispatch without combine).
    wrong_answers={
        "expected_experts_touched": (
            "def expected_experts_touched(batch, n_experts, experts_per_token):\n"
            "    miss = (1 - 1 / n_experts) ** (batch * experts_per_token)\n"
            "    return n_experts * (1 - miss)\n"
        ),
        "all_to_all": (
            "a2a_bytes_per_gpu = (8192 / 64) * DEEPSEEK_TOP_K * DEEPSEEK_D_MODEL * BF16_BYTES\n"
            "in_node = a2a_bytes_per_gpu * 7 / 64 / HGX_NVLINK_BYTES_PER_S\n"
            "off_node = a2a_bytes_per_gpu * 56 / 64 / HGX_NIC_BYTES_PER_S\n"
            "a2a_time_hgx_s = max(in_node, off_node)\n"
            "a2a_time_nvl72_s = a2a_bytes_per_gpu * 63 / 64 / NVL72_NVLINK_BYTES_PER_S\n"
        ),
    },
    wrong_fails={
        "test_expected_experts_touched": "expected_experts_touched",
        "test_all_to_all": "a2a_bytes_per_gpu",
    },
    pinned_expressions=3,  # Part 2's hidden tests pin three calls of expected_experts_touched
    leaky_examples=(
        "the expert layers need about 9447 tokens per step",
        "across nodes the all-to-all takes 514 us",
        "Mixtral holds 46.7 billion parameters",
    ),
    clean_examples=("D = 7168, 256 experts, top-8, 450e9 B/s, 50e9 B/s, 671e9 and 37e9",),
)

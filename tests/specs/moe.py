"""The MoE exercise (solutions/moe/moe.ipynb) as the grading tests see it."""

from grading_support import AssignmentSpec

from llmmath import moe_balance


def _hot_experts() -> dict[str, float]:
    """Part 5's answers from the package (the lesson's "Hot experts and redundant copies"):
    Zipf loads of skew 0.5 over 256 experts, on 64 GPUs, without and with 64 copies. The
    hidden tests' literals must equal these, so a change in moe_balance fails here."""
    loads = moe_balance.zipf_expert_loads(256, 0.5)
    return {
        "hottest_expert_load": float(loads[0]),
        "slowdown_ep64": moe_balance.imbalance_slowdown(loads, 64),
        "slowdown_ep64_copies": moe_balance.imbalance_slowdown(loads, 64, redundant=64),
    }


SPEC = AssignmentSpec(
    assignment="moe",
    test_cells=(
        "test_mixtral_params",
        "test_expected_experts_touched",
        "test_compute_bound_batch",
        "test_all_to_all",
        "test_hot_experts",
    ),
    autograded_points=10.0,  # five autograded parts of 2 points
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
        **_hot_experts(),
    },
    # Treating a token's k picks as k independent draws with replacement, forgetting that the
    # results come back (dispatch without combine), and one copy for each of the 64 hottest
    # experts instead of each copy to whichever expert's copies carry the most.
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
        "hot_experts": (
            "import numpy as np\n"
            "def placement_slowdown(copy_loads, n_gpus):\n"
            "    slots = len(copy_loads) // n_gpus\n"
            "    gpu_loads, gpu_used = np.zeros(n_gpus), np.zeros(n_gpus)\n"
            "    for load in sorted(copy_loads, reverse=True):\n"
            "        free = np.flatnonzero(gpu_used < slots)\n"
            "        gpu = free[np.argmin(gpu_loads[free])]\n"
            "        gpu_loads[gpu] += load\n"
            "        gpu_used[gpu] += 1\n"
            "    return float(gpu_loads.max() / gpu_loads.mean())\n"
            "weights = np.arange(1, DEEPSEEK_EXPERTS + 1) ** -ROUTING_SKEW\n"
            "loads = weights * DEEPSEEK_EXPERTS / weights.sum()\n"
            "hottest_expert_load = float(loads[0])\n"
            "slowdown_ep64 = placement_slowdown(loads, 64)\n"
            "copies = np.ones(DEEPSEEK_EXPERTS)\n"
            "copies[:64] += 1\n"
            "copy_loads = np.repeat(loads / copies, copies.astype(int))\n"
            "slowdown_ep64_copies = placement_slowdown(copy_loads, 64)\n"
        ),
    },
    wrong_fails={
        "test_expected_experts_touched": "expected_experts_touched",
        "test_all_to_all": "a2a_bytes_per_gpu",
        "test_hot_experts": "slowdown_ep64_copies",
    },
    pinned_expressions=3,  # Part 2's hidden tests pin three calls of expected_experts_touched
    leaky_examples=(
        "the expert layers need about 9447 tokens per step",
        "across nodes the all-to-all takes 514 us",
        "Mixtral holds 46.7 billion parameters",
        "hot experts make the EP64 layer 2.49x slower",
    ),
    clean_examples=("D = 7168, 256 experts, top-8, 450e9 B/s, 50e9 B/s, 671e9 and 37e9",),
)

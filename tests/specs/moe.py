"""The MoE exercise (solutions/moe/moe.ipynb) as the grading tests see it."""

from llmmath.beyond import moe_balance
from llmmath_course.simulate import AssignmentSpec, Mistake, slip


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
    # The wrong answers graded in test_grading.py: the dispatch without the combine (the
    # visible checks catch it, #46), and one copy for each of the 64 hottest experts instead of
    # each copy to whichever expert's copies carry the most (they do not: wrong_unseen).
    wrong_answers={
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
        "test_all_to_all": "a2a_bytes_per_gpu",
        "test_hot_experts": "slowdown_ep64_copies",
    },
    # The visible checks cannot see the copies handed to the 64 hottest experts instead of,
    # one at a time, to the expert whose copies carry the most load each.
    wrong_unseen=("hot_experts",),
    pinned_expressions=3,  # Part 2's hidden tests pin three calls of expected_experts_touched
    mistakes=(
        slip(
            "moe",
            "all_to_all",
            "the bytes in fp32, 4 per number",
            ("* DEEPSEEK_D_MODEL * BF16_BYTES", "* DEEPSEEK_D_MODEL * 4"),
        ),
        slip(
            "moe",
            "hot_experts",
            "the loads scaled to sum to 1, not to a mean of 1",
            (
                "loads = weights * DEEPSEEK_EXPERTS / weights.sum()",
                "loads = weights / weights.sum()",
            ),
        ),
        Mistake(
            "expected_experts_touched",
            "def expected_experts_touched(batch, n_experts, experts_per_token):\n"
            "    miss = (1 - 1 / n_experts) ** (batch * experts_per_token)\n"
            "    return n_experts * (1 - miss)\n",
            "a token's k picks as draws with replacement",
            True,
        ),
        Mistake(
            "mixtral_params",
            "other = MIXTRAL_OTHER_PARAMS\n"
            "one_expert = 3 * MIXTRAL_D_MODEL * MIXTRAL_D_FF_EXPERT\n"
            "mixtral_total_params = other + MIXTRAL_LAYERS * MIXTRAL_EXPERTS * one_expert\n"
            "mixtral_active_params = MIXTRAL_LAYERS * MIXTRAL_TOP_K * one_expert\n"
            "sparsity_experts = MIXTRAL_EXPERTS / MIXTRAL_TOP_K\n"
            "sparsity_params = mixtral_total_params / mixtral_active_params\n",
            "the active count without the shared weights",
            True,
        ),
        Mistake(
            "mixtral_params",
            "other = MIXTRAL_OTHER_PARAMS\n"
            "one_expert = 3 * MIXTRAL_D_MODEL * MIXTRAL_D_FF_EXPERT\n"
            "mixtral_total_params = other + MIXTRAL_LAYERS * MIXTRAL_EXPERTS * one_expert\n"
            "mixtral_active_params = other + MIXTRAL_LAYERS * MIXTRAL_TOP_K * one_expert\n"
            "sparsity_experts = MIXTRAL_EXPERTS / MIXTRAL_TOP_K\n"
            "sparsity_params = sparsity_experts\n",
            "sparsity by parameters taken to be E / k",
            True,
        ),
        Mistake(
            "mixtral_params",
            "other = MIXTRAL_OTHER_PARAMS\n"
            "one_expert = 2 * MIXTRAL_D_MODEL * MIXTRAL_D_FF_EXPERT\n"
            "mixtral_total_params = other + MIXTRAL_LAYERS * MIXTRAL_EXPERTS * one_expert\n"
            "mixtral_active_params = other + MIXTRAL_LAYERS * MIXTRAL_TOP_K * one_expert\n"
            "sparsity_experts = MIXTRAL_EXPERTS / MIXTRAL_TOP_K\n"
            "sparsity_params = mixtral_total_params / mixtral_active_params\n",
            "an expert of two matrices, not three",
            True,
        ),
        Mistake(
            "expected_experts_touched",
            "def expected_experts_touched(batch, n_experts, experts_per_token):\n"
            "    return n_experts * (1 - (1 - 1 / n_experts) ** batch) * experts_per_token\n",
            "top-1 coverage times k",
            True,
        ),
        Mistake(
            "expected_experts_touched",
            "def expected_experts_touched(batch, n_experts, experts_per_token):\n"
            "    return min(batch * experts_per_token, n_experts)\n",
            "every pick a new expert until all are read",
            True,
        ),
        Mistake(
            "compute_bound_batch",
            "h100_ridge = H100_BF16_FLOP_PER_S / (2 * H100_HBM_BYTES_PER_S)\n"
            "batch_rule_experts = h100_ridge * DEEPSEEK_EXPERTS / DEEPSEEK_TOP_K\n"
            "batch_rule_params = h100_ridge * DEEPSEEK_TOTAL_PARAMS / DEEPSEEK_ACTIVE_PARAMS\n"
            "batch_4096_compute_bound = batch_rule_experts < 4096\n",
            "the ridge as C / 2W",
            True,
        ),
        Mistake(
            "compute_bound_batch",
            "h100_ridge = H100_BF16_FLOP_PER_S / H100_HBM_BYTES_PER_S\n"
            "batch_rule_experts = h100_ridge * DEEPSEEK_EXPERTS / DEEPSEEK_TOP_K\n"
            "batch_rule_params = h100_ridge * DEEPSEEK_TOTAL_PARAMS / DEEPSEEK_ACTIVE_PARAMS\n"
            "batch_4096_compute_bound = batch_rule_experts > 4096\n",
            "compute-bound taken for below the rule",
            True,
        ),
        Mistake(
            "compute_bound_batch",
            "h100_ridge = H100_BF16_FLOP_PER_S / H100_HBM_BYTES_PER_S\n"
            "batch_rule_experts = h100_ridge * DEEPSEEK_EXPERTS / DEEPSEEK_TOP_K\n"
            "batch_rule_params = h100_ridge * DEEPSEEK_TOTAL_PARAMS / 37e9 * 256 / 257\n"
            "batch_4096_compute_bound = batch_rule_experts < 4096\n",
            "the parameter sparsity adjusted by hand",
            True,
        ),
        Mistake(
            "all_to_all",
            "per_direction = (8192 / 64) * DEEPSEEK_TOP_K * DEEPSEEK_D_MODEL * BF16_BYTES\n"
            "a2a_bytes_per_gpu = 2 * per_direction\n"
            "in_node = a2a_bytes_per_gpu * 7 / 64 / HGX_NVLINK_BYTES_PER_S\n"
            "off_node = a2a_bytes_per_gpu * 56 / 64 / HGX_NIC_BYTES_PER_S\n"
            "a2a_time_hgx_s = in_node + off_node\n"
            "a2a_time_nvl72_s = a2a_bytes_per_gpu * 63 / 64 / NVL72_NVLINK_BYTES_PER_S\n",
            "NVLink and NIC added, not overlapped",
            True,
        ),
        Mistake(
            "all_to_all",
            "per_direction = (8192 / 64) * DEEPSEEK_TOP_K * DEEPSEEK_D_MODEL * BF16_BYTES\n"
            "a2a_bytes_per_gpu = 2 * per_direction\n"
            "a2a_time_hgx_s = a2a_bytes_per_gpu / HGX_NIC_BYTES_PER_S\n"
            "a2a_time_nvl72_s = a2a_bytes_per_gpu / NVL72_NVLINK_BYTES_PER_S\n",
            "every byte over the slower link, the GPU's own share too",
            True,
        ),
        Mistake(
            "hot_experts",
            "import numpy as np\n"
            "def placement_slowdown(copy_loads, n_gpus):\n"
            "    gpu_loads = np.zeros(n_gpus)\n"
            "    for i, load in enumerate(sorted(copy_loads, reverse=True)):\n"
            "        gpu_loads[i % n_gpus] += load\n"
            "    return float(gpu_loads.max() / gpu_loads.mean())\n"
            "weights = np.arange(1, DEEPSEEK_EXPERTS + 1) ** -ROUTING_SKEW\n"
            "loads = weights * DEEPSEEK_EXPERTS / weights.sum()\n"
            "hottest_expert_load = float(loads[0])\n"
            "slowdown_ep64 = placement_slowdown(loads, 64)\n"
            "copies = np.ones(DEEPSEEK_EXPERTS)\n"
            "for _ in range(64):\n"
            "    copies[np.argmax(loads / copies)] += 1\n"
            "copy_loads = np.repeat(loads / copies, copies.astype(int))\n"
            "slowdown_ep64_copies = placement_slowdown(copy_loads, 64)\n",
            "round-robin placement",
            True,
        ),
        Mistake(
            "hot_experts",
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
            "loads = weights / weights.sum()\n"
            "hottest_expert_load = float(loads[0])\n"
            "slowdown_ep64 = placement_slowdown(loads, 64)\n"
            "copies = np.ones(DEEPSEEK_EXPERTS)\n"
            "for _ in range(64):\n"
            "    copies[np.argmax(loads / copies)] += 1\n"
            "copy_loads = np.repeat(loads / copies, copies.astype(int))\n"
            "slowdown_ep64_copies = placement_slowdown(copy_loads, 64)\n",
            "the loads as shares summing to 1, not a mean of 1",
            True,
        ),
        Mistake(
            "hot_experts",
            "import numpy as np\n"
            "def placement_slowdown(copy_loads, n_gpus):\n"
            "    slots = len(copy_loads) // n_gpus\n"
            "    gpu_loads, gpu_used = np.zeros(n_gpus), np.zeros(n_gpus)\n"
            "    for load in sorted(copy_loads, reverse=True):\n"
            "        free = np.flatnonzero(gpu_used < slots)\n"
            "        gpu = free[np.argmin(gpu_loads[free])]\n"
            "        gpu_loads[gpu] += load\n"
            "        gpu_used[gpu] += 1\n"
            "    return float(gpu_loads.max() / gpu_loads.min())\n"
            "weights = np.arange(1, DEEPSEEK_EXPERTS + 1) ** -ROUTING_SKEW\n"
            "loads = weights * DEEPSEEK_EXPERTS / weights.sum()\n"
            "hottest_expert_load = float(loads[0])\n"
            "slowdown_ep64 = placement_slowdown(loads, 64)\n"
            "copies = np.ones(DEEPSEEK_EXPERTS)\n"
            "for _ in range(64):\n"
            "    copies[np.argmax(loads / copies)] += 1\n"
            "copy_loads = np.repeat(loads / copies, copies.astype(int))\n"
            "slowdown_ep64_copies = placement_slowdown(copy_loads, 64)\n",
            "the busiest GPU over the idlest, not the mean",
            True,
        ),
    ),
    leaky_examples=(
        "the expert layers need about 9447 tokens per step",
        "across nodes the all-to-all takes 514 us",
        "Mixtral holds 46.7 billion parameters",
        "hot experts make the EP64 layer 2.49x slower",
    ),
    clean_examples=("D = 7168, 256 experts, top-8, 450e9 B/s, 50e9 B/s, 671e9 and 37e9",),
)

"""The over-training and pricing exercise (solutions/overtraining_pricing/) as the grading
tests see it."""

from grading_support import AssignmentSpec

from llmmath import serving_systems


def _fleet_pools() -> dict[str, float]:
    """Part 6's answers from the package (the lesson's "Separate pools for prefill and
    decode"): DeepSeek's day at its published rates per node. The hidden tests' literals must
    equal these, so a change in serving_systems or data/systems.toml fails here."""
    day = serving_systems.deepseek_pools()
    return {
        "prefill_nodes": day.prefill_nodes,
        "decode_nodes": day.decode_nodes,
        "decode_share": day.decode_nodes / (day.prefill_nodes + day.decode_nodes),
    }


SPEC = AssignmentSpec(
    assignment="overtraining_pricing",
    test_cells=(
        "test_chinchilla_loss",
        "test_training_run",
        "test_tokens_for_loss",
        "test_lifetime",
        "test_fleet_day",
        "test_fleet_pools",
    ),
    autograded_points=12.0,  # six autograded parts of 2 points
    manual_points=2.0,  # the reflection
    manual_cells=("reflection",),
    answers={
        "training_flops": 6.7541970816e23,
        "training_days": 9.64880992348121,
        "training_cost_usd": 948516.6107178968,
        "total_flops_a": 3.3834594434119766e24,
        "total_flops_b": 1.187032079617324e24,
        "daily_cost_usd": 87072.0,
        "daily_revenue_usd": 562100.0,
        "markup": 6.455576993752297,
        **_fleet_pools(),
    },
    # Forgetting that the chips deliver only MFU of their peak, comparing the two models by
    # their training compute alone (no lifetime inference), and sizing the prefill pool for
    # the uncached input only, although the published rate counts cache hits.
    wrong_answers={
        "training_run": (
            "matmul_params = LLAMA3_8B_PARAMS - LLAMA3_8B_EMBEDDING_PARAMS\n"
            "training_flops = TRAINING_FLOPS_PER_PARAM_TOKEN * matmul_params * TRAINING_TOKENS\n"
            "training_seconds = training_flops / (N_CHIPS * H100_BF16_FLOP_PER_S)\n"
            "training_days = training_seconds / SECONDS_PER_DAY\n"
            "training_cost_usd = N_CHIPS * training_seconds / SECONDS_PER_HOUR"
            " * USD_PER_CHIP_HOUR\n"
        ),
        "lifetime": (
            "def lifetime_flops(params):\n"
            "    return TRAINING_FLOPS_PER_PARAM_TOKEN * params"
            " * tokens_for_loss(params, TARGET_LOSS)\n"
            "total_flops_a = lifetime_flops(MODEL_A_PARAMS)\n"
            "total_flops_b = lifetime_flops(MODEL_B_PARAMS)\n"
            'cheaper_model = "A" if total_flops_a < total_flops_b else "B"\n'
        ),
        "fleet_pools": (
            "day_s = FLEET_HOURS * SECONDS_PER_HOUR\n"
            "computed = FLEET_INPUT_TOKENS - FLEET_CACHED_INPUT_TOKENS\n"
            "prefill_nodes = computed / day_s / FLEET_PREFILL_TOKENS_PER_S_PER_NODE\n"
            "decode_nodes = FLEET_OUTPUT_TOKENS / day_s / FLEET_DECODE_TOKENS_PER_S_PER_NODE\n"
            "decode_share = decode_nodes / (prefill_nodes + decode_nodes)\n"
        ),
    },
    wrong_fails={
        "test_training_run": "training_days",
        "test_lifetime": "total_flops_a",
        "test_fleet_pools": "prefill_nodes",
    },
    # chinchilla_loss(...) twice in Part 1, tokens_for_loss(...) twice in Part 3.
    pinned_expressions=4,
    leaky_examples=(
        "the run takes 9.65 days",
        "a markup of 6.46 times cost",
        "the prefill pool needs 95.5 nodes",
    ),
    clean_examples=("226.75 nodes of 8 GPUs at 2 USD per GPU-hour, 608e9 input tokens",),
)

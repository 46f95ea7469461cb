"""The over-training and pricing exercise (solutions/overtraining_pricing/) as the grading
tests see it."""

from llmmath.beyond import serving_systems
from llmmath_course.simulate import AssignmentSpec, Mistake, slip


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
        "total_flops_a": 3.3854817179472525e24,
        "total_flops_b": 2.1619842151596243e24,
        "daily_cost_usd": 87072.0,
        "daily_revenue_usd": 562100.0,
        "markup": 6.455576993752297,
        **_fleet_pools(),
    },
    # The wrong answer graded in test_grading.py (the visible checks catch it too, #46):
    # training FLOPs counted on every parameter, the input embedding's lookups too.
    wrong_answers={
        "training_run": (
            "training_flops = TRAINING_FLOPS_PER_PARAM_TOKEN * LLAMA3_8B_PARAMS * TRAINING_TOKENS\n"
            "training_seconds = training_flops / (N_CHIPS * H100_BF16_FLOP_PER_S * MFU)\n"
            "training_days = training_seconds / SECONDS_PER_DAY\n"
            "training_cost_usd = N_CHIPS * training_seconds / SECONDS_PER_HOUR"
            " * USD_PER_CHIP_HOUR\n"
        ),
    },
    wrong_fails={
        "test_training_run": "training_flops",
    },
    # chinchilla_loss(...) twice in Part 1, tokens_for_loss(...) twice in Part 3.
    pinned_expressions=4,
    mistakes=(
        slip(
            "overtraining_pricing",
            "chinchilla_loss",
            "the data term with gamma_P, the exponent of the parameter term",
            (
                "CHINCHILLA_A_D / tokens**CHINCHILLA_GAMMA_D",
                "CHINCHILLA_A_D / tokens**CHINCHILLA_GAMMA_P",
            ),
        ),
        slip(
            "overtraining_pricing",
            "tokens_for_loss",
            "the power gamma_D, not 1 / gamma_D",
            ("** (1 / CHINCHILLA_GAMMA_D)", "**CHINCHILLA_GAMMA_D"),
        ),
        slip(
            "overtraining_pricing",
            "lifetime",
            "lifetime inference at 6P a token, as if it trained",
            ("INFERENCE_FLOPS_PER_PARAM_TOKEN * params", "TRAINING_FLOPS_PER_PARAM_TOKEN * params"),
        ),
        Mistake(
            "chinchilla_loss",
            "def chinchilla_loss(params, tokens):\n"
            "    return (\n"
            "        CHINCHILLA_L_INF\n"
            "        + CHINCHILLA_A_P / params**CHINCHILLA_GAMMA_D\n"
            "        + CHINCHILLA_A_D / tokens**CHINCHILLA_GAMMA_P\n"
            "    )\n",
            "the exponents swapped",
            True,
        ),
        Mistake(
            "chinchilla_loss",
            "def chinchilla_loss(params, tokens):\n"
            "    return (\n"
            "        CHINCHILLA_L_INF\n"
            "        + CHINCHILLA_A_D / params**CHINCHILLA_GAMMA_P\n"
            "        + CHINCHILLA_A_P / tokens**CHINCHILLA_GAMMA_D\n"
            "    )\n",
            "A_P and A_D swapped",
            True,
        ),
        Mistake(
            "training_run",
            "matmul_params = LLAMA3_8B_PARAMS - LLAMA3_8B_EMBEDDING_PARAMS\n"
            "training_flops = TRAINING_FLOPS_PER_PARAM_TOKEN * matmul_params * TRAINING_TOKENS\n"
            "training_seconds = training_flops / (N_CHIPS * H100_BF16_FLOP_PER_S)\n"
            "training_days = training_seconds / SECONDS_PER_DAY\n"
            "training_cost_usd = N_CHIPS * training_seconds / SECONDS_PER_HOUR"
            " * USD_PER_CHIP_HOUR\n",
            "the chips at their full peak, not at 40% MFU",
            True,
        ),
        Mistake(
            "training_run",
            "matmul_params = LLAMA3_8B_PARAMS - LLAMA3_8B_EMBEDDING_PARAMS\n"
            "training_flops = 2 * matmul_params * TRAINING_TOKENS\n"
            "training_seconds = training_flops / (N_CHIPS * H100_BF16_FLOP_PER_S * MFU)\n"
            "training_days = training_seconds / SECONDS_PER_DAY\n"
            "training_cost_usd = N_CHIPS * training_seconds / SECONDS_PER_HOUR"
            " * USD_PER_CHIP_HOUR\n",
            "2 P_mm D_train, the forward pass alone",
            True,
        ),
        Mistake(
            "training_run",
            "matmul_params = LLAMA3_8B_PARAMS - LLAMA3_8B_EMBEDDING_PARAMS\n"
            "training_flops = TRAINING_FLOPS_PER_PARAM_TOKEN * matmul_params * TRAINING_TOKENS\n"
            "training_seconds = training_flops / (N_CHIPS * H100_BF16_FLOP_PER_S * MFU)\n"
            "training_days = training_seconds / SECONDS_PER_DAY\n"
            "training_cost_usd = training_seconds / SECONDS_PER_HOUR * USD_PER_CHIP_HOUR\n",
            "the rent of one chip",
            True,
        ),
        Mistake(
            "tokens_for_loss",
            "import math\n"
            "def tokens_for_loss(params, target_loss):\n"
            "    room = target_loss - CHINCHILLA_L_INF"
            " - CHINCHILLA_A_P / params**CHINCHILLA_GAMMA_P\n"
            "    return (CHINCHILLA_A_D / room) ** (1 / CHINCHILLA_GAMMA_D)\n",
            "no math.inf when the loss is out of reach",
            True,
        ),
        Mistake(
            "tokens_for_loss",
            "import math\n"
            "def tokens_for_loss(params, target_loss):\n"
            "    room = target_loss - CHINCHILLA_L_INF"
            " - CHINCHILLA_A_P / params**CHINCHILLA_GAMMA_P\n"
            "    if room <= 0:\n"
            "        return math.inf\n"
            "    return (CHINCHILLA_A_D / room) ** CHINCHILLA_GAMMA_D\n",
            "the power gamma_D, not 1 / gamma_D",
            True,
        ),
        Mistake(
            "lifetime",
            "def lifetime_flops(params):\n"
            "    return TRAINING_FLOPS_PER_PARAM_TOKEN * params"
            " * tokens_for_loss(params, TARGET_LOSS)\n"
            "total_flops_a = lifetime_flops(MODEL_A_PARAMS)\n"
            "total_flops_b = lifetime_flops(MODEL_B_PARAMS)\n"
            'cheaper_model = "A" if total_flops_a < total_flops_b else "B"\n',
            "training alone, no lifetime inference",
            True,
        ),
        Mistake(
            "lifetime",
            "def lifetime_flops(params):\n"
            "    training = 6 * params * tokens_for_loss(params, TARGET_LOSS)\n"
            "    return training + 6 * params * LIFETIME_TOKENS\n"
            "total_flops_a = lifetime_flops(MODEL_A_PARAMS)\n"
            "total_flops_b = lifetime_flops(MODEL_B_PARAMS)\n"
            'cheaper_model = "A" if total_flops_a < total_flops_b else "B"\n',
            "6P FLOPs per served token",
            True,
        ),
        Mistake(
            "fleet_day",
            "daily_cost_usd = FLEET_NODES * FLEET_USD_PER_GPU_HOUR * FLEET_HOURS\n"
            "uncached = FLEET_INPUT_TOKENS - FLEET_CACHED_INPUT_TOKENS\n"
            "daily_revenue_usd = (\n"
            "    FLEET_CACHED_INPUT_TOKENS * USD_PER_MILLION_CACHED_INPUT\n"
            "    + uncached * USD_PER_MILLION_INPUT\n"
            "    + FLEET_OUTPUT_TOKENS * USD_PER_MILLION_OUTPUT\n"
            ") / 1e6\n"
            "markup = daily_revenue_usd / daily_cost_usd\n",
            "a node's rent at a GPU's price",
            True,
        ),
        Mistake(
            "fleet_day",
            "gpus = FLEET_NODES * FLEET_GPUS_PER_NODE\n"
            "daily_cost_usd = gpus * FLEET_USD_PER_GPU_HOUR * FLEET_HOURS\n"
            "daily_revenue_usd = (\n"
            "    FLEET_CACHED_INPUT_TOKENS * USD_PER_MILLION_CACHED_INPUT\n"
            "    + FLEET_INPUT_TOKENS * USD_PER_MILLION_INPUT\n"
            "    + FLEET_OUTPUT_TOKENS * USD_PER_MILLION_OUTPUT\n"
            ") / 1e6\n"
            "markup = daily_revenue_usd / daily_cost_usd\n",
            "the cached tokens priced twice",
            True,
        ),
        Mistake(
            "fleet_day",
            "gpus = FLEET_NODES * FLEET_GPUS_PER_NODE\n"
            "daily_cost_usd = gpus * FLEET_USD_PER_GPU_HOUR * FLEET_HOURS\n"
            "daily_revenue_usd = (\n"
            "    FLEET_INPUT_TOKENS * USD_PER_MILLION_INPUT\n"
            "    + FLEET_OUTPUT_TOKENS * USD_PER_MILLION_OUTPUT\n"
            ") / 1e6\n"
            "markup = daily_revenue_usd / daily_cost_usd\n",
            "no discount for cached input",
            True,
        ),
        Mistake(
            "fleet_pools",
            "day_s = FLEET_HOURS * SECONDS_PER_HOUR\n"
            "computed = FLEET_INPUT_TOKENS - FLEET_CACHED_INPUT_TOKENS\n"
            "prefill_nodes = computed / day_s / FLEET_PREFILL_TOKENS_PER_S_PER_NODE\n"
            "decode_nodes = FLEET_OUTPUT_TOKENS / day_s / FLEET_DECODE_TOKENS_PER_S_PER_NODE\n"
            "decode_share = decode_nodes / (prefill_nodes + decode_nodes)\n",
            "the prefill pool for the uncached input only",
            True,
        ),
        Mistake(
            "fleet_pools",
            "day_s = FLEET_HOURS * SECONDS_PER_HOUR\n"
            "prefill_nodes = FLEET_INPUT_TOKENS / day_s / FLEET_PREFILL_TOKENS_PER_S_PER_NODE\n"
            "decode_nodes = FLEET_OUTPUT_TOKENS / day_s / FLEET_DECODE_TOKENS_PER_S_PER_NODE\n"
            "decode_share = decode_nodes / prefill_nodes\n",
            "the decode pool over the prefill pool, not over both",
            True,
        ),
        Mistake(
            "fleet_pools",
            "day_s = FLEET_HOURS * SECONDS_PER_HOUR\n"
            "tokens = FLEET_INPUT_TOKENS + FLEET_OUTPUT_TOKENS\n"
            "prefill_nodes = FLEET_INPUT_TOKENS / day_s / FLEET_PREFILL_TOKENS_PER_S_PER_NODE\n"
            "decode_nodes = tokens / day_s / FLEET_DECODE_TOKENS_PER_S_PER_NODE\n"
            "decode_share = decode_nodes / (prefill_nodes + decode_nodes)\n",
            "the decode pool for input and output",
            True,
        ),
    ),
    leaky_examples=(
        "the run takes 9.65 days",
        "a markup of 6.46 times cost",
        "the prefill pool needs 95.5 nodes",
    ),
    clean_examples=("226.75 nodes of 8 GPUs at 2 USD per GPU-hour, 608e9 input tokens",),
)

"""Every value the batching, KV-cache and over-training exercises' hidden tests pin is the
course's own.

Each part of those exercises names the package function that computes its answer in the course
(``serving.decode_step(Deployment("Llama-3-70B", "H100", 8), B, T).time_s``,
``capacity.max_batch``, ``speculative.break_even_batch``, ``kv_cache.break_even_hold_s``, ...).
Here each of those functions is called in the setting the part states, and its value must equal
the answer the spec lists (and the hidden test pins) within that hidden test's own tolerance: a
change in the package or its data that moves an answer fails here, by name. The expressions the
hidden tests pin (calls of the student's functions) are checked the same way.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable

import numpy as np
import pytest
from grading_support import cell_by_id, load_specs, printed_settings, read, region

from llmmath import api_prices, batching, kv_cache, scaling
from llmmath.beyond import number_formats, serving_systems, speculative
from llmmath.core import capacity, serving
from llmmath.core.deployment import Deployment
from llmmath.core.models import get_model
from llmmath.core.setting import Setting

SPECS = {spec.assignment: spec for spec in load_specs()}


def hidden_checks(assignment: str) -> dict[str, tuple[float, float, float]]:
    """Each hidden ``math.isclose(actual, literal, rel_tol=.., abs_tol=..)``, by ``actual``'s
    source: (the literal, its rel_tol, its abs_tol)."""
    spec = SPECS[assignment]
    nb = read(spec.source_nb)
    found: dict[str, tuple[float, float, float]] = {}
    for grade_id in spec.test_cells:
        hidden = region(cell_by_id(nb, grade_id).source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
        for node in ast.walk(ast.parse("\n".join(hidden))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "isclose":
                actual, expected = node.args[:2]
                tolerances = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                found[ast.unparse(actual)] = (
                    ast.literal_eval(expected),
                    tolerances.get("rel_tol", 1e-9),
                    tolerances.get("abs_tol", 0.0),
                )
    return found


def batching_values() -> dict[str, float]:
    """The batching exercise: Llama-3-70B on 8 H100s at 2.00 USD per chip-hour."""
    llama = Deployment("Llama-3-70B", "H100", 8)

    def step(batch: float, context: float) -> float:
        return float(serving.decode_step(llama, batch, context).time_s)

    fits = float(capacity.max_batch(llama, 8192))
    request = batching.request_latency(llama, 2000, 1000, 64)
    drafts, acceptance, share = 4, 0.75, 0.03
    spec = speculative.speculative_step(llama, 4, 2048, drafts, acceptance, share)
    return {
        "decode_step_time_s(1, 0)": step(1, 0),
        "decode_step_time_s(64, 4096)": step(64, 4096),
        "decode_step_time_s(512, 1024)": step(512, 1024),
        "decode_step_time_s(1024, 1024)": step(1024, 1024),
        "float(array_steps[1])": step(1024, 1024),  # an array of batches
        **{
            f"cost_batch{b}_usd_per_mtok": float(
                serving.decode_step(llama, b, 1024).cost_per_million_tokens_usd(2.0)
            )
            for b in (1, 256)
        },
        "max_batch_8k": fits,
        "step_time_max_batch_s": step(fits, 8192),
        "ttft_s": float(batching.ttft_s(llama, 2000)),
        "decode_time_s": float(request.decode_s),
        "final_context_estimate_s": float(request.final_context_decode_s),
        "spec_tokens_per_step": float(spec.tokens_per_step),
        "spec_speedup_batch4": float(spec.speedup),
        "spec_speedup(256, 4096)": float(
            speculative.speculative_step(llama, 256, 4096, drafts, acceptance, share).speedup
        ),
        "spec_break_even_batch": speculative.break_even_batch(
            llama, 256, drafts, acceptance, share
        ),
    }


def kv_cache_values() -> dict[str, float]:
    """The KV-cache exercise: Llama-3.1-405B on 16 H100s, Llama-3-70B on 8 for the prefix."""
    big = Deployment("Llama-3.1-405B", "H100", 16)
    llama = Deployment("Llama-3-70B", "H100", 8, usd_per_chip_hour=2.0)
    fits = float(kv_cache.max_batch(big, 131_072))
    prefix = kv_cache.prefix_cache(llama, 8192, 0.0, tiers=("host_DRAM",), usd_per_chip_hour=2.0)
    recipes = (("bf16", "fp8", "bf16"), ("fp8", "fp8", "fp8"))
    fmt = number_formats.format_effects("Llama-3.1-405B", "H100", 16, 131_072, recipes)
    fp8 = Deployment(
        "Llama-3.1-405B", "H100", 16, weight_dtype="fp8", kv_dtype="fp8", compute_dtype="fp8"
    )
    fp8_fits = float(fmt.max_batch[1])
    fp8_step_s = float(serving.decode_step(fp8, fp8_fits, 131_072).time_s)
    return {
        "kv_bytes_per_token(80, 8, 128, 1)": get_model("Llama-3-70B").kv_bytes_per_token("fp8"),
        "kv_bytes_per_token(40, 40, 128, 2)": get_model("Llama-2-13B").kv_bytes_per_token(),
        "kv_405b_bytes_per_token": get_model("Llama-3.1-405B").kv_bytes_per_token(),
        "max_batch_128k": fits,
        "max_context_b16": float(kv_cache.max_context(big, 16)),
        "crossover_context_b16": float(kv_cache.kv_crossover_context(big, 16)),
        "step_time_128k_s": float(serving.decode_step(big, fits, 131_072).time_s),
        # step_time_s across its regimes: FLOPs-bound, then reads-bound at a long context.
        "step_time_s(512, 1024)": float(serving.decode_step(big, 512, 1024).time_s),
        "step_time_s(16, 32768)": float(serving.decode_step(big, 16, 32768).time_s),
        "dram_reload_s": float(prefix.reload_s[..., 0]),
        "prefill_s": float(batching.prefill(llama, 8192).time_s),
        "nvme_break_even_s": float(
            kv_cache.break_even_hold_s(
                llama, 8192, "local_NVMe", usd_per_chip_hour=2.0, prefill_efficiency=1.0
            )
        ),
        "max_batch_128k_fp8_kv": float(fmt.max_batch[0]),
        "max_batch_128k_fp8": fp8_fits,
        "tokens_per_s_128k_fp8": fp8_fits / fp8_step_s,
    }


def overtraining_values() -> dict[str, float]:
    """The over-training exercise: the package's default fit (Besiroglu et al.'s refit, #43),
    Chinchilla's own run as the target loss, Llama-3-8B's matmul weights, DeepSeek's day."""
    fit = scaling.CHINCHILLA_FIT
    target = scaling.CHINCHILLA_TARGET_LOSS
    llama_8b = get_model("Llama-3-8B")
    matmul_params = 8.03e9 - llama_8b.vocab_size * llama_8b.d_model  # the table's 8.03e9
    flops = float(scaling.training_flops(matmul_params, 15e12))
    seconds = float(scaling.training_time_s(flops, 2048, "H100", 0.40))
    lifetime = scaling.lifetime_compute(np.array([70e9, 25e9]), target, 2e13)
    day = api_prices.get_fleet_day()
    cost = float(api_prices.fleet_day_cost_usd(day.nodes, day.gpus_per_node, day.usd_per_gpu_hour))
    revenue = api_prices.fleet_day_revenue_usd(day, api_prices.get_price_sheet("DeepSeek-R1"))
    pools = serving_systems.deepseek_pools()
    return {
        "chinchilla_loss(70000000000.0, 1400000000000.0)": float(scaling.loss(70e9, 1.4e12, fit)),
        "chinchilla_loss(400000000.0, 8000000000.0)": float(scaling.loss(4e8, 8e9, fit)),
        "training_flops": flops,
        "training_days": seconds / 86_400,
        "training_cost_usd": float(scaling.training_cost_usd(flops, "H100", 0.40, 2.0)),
        "tokens_for_loss(70000000000.0, 1.974)": float(scaling.tokens_for_loss(70e9, target, fit)),
        "tokens_for_loss(8000000000.0, 2.05)": float(scaling.tokens_for_loss(8e9, 2.05, fit)),
        "total_flops_a": float(lifetime.total_flops[0]),
        "total_flops_b": float(lifetime.total_flops[1]),
        "daily_cost_usd": cost,
        "daily_revenue_usd": revenue,
        "markup": revenue / cost,
        "prefill_nodes": pools.prefill_nodes,
        "decode_nodes": pools.decode_nodes,
        "decode_share": pools.decode_nodes / (pools.prefill_nodes + pools.decode_nodes),
    }


@pytest.mark.parametrize(
    ("assignment", "computed"),
    [
        ("batching", batching_values),
        ("kv_cache", kv_cache_values),
        ("overtraining_pricing", overtraining_values),
    ],
)
def test_every_pinned_value_is_the_named_package_function_s(
    assignment: str, computed: Callable[[], dict[str, float]]
) -> None:
    checks = hidden_checks(assignment)
    values = computed()
    assert set(values) == set(checks), f"{assignment}: the hidden tests pin {sorted(checks)}"
    answers = SPECS[assignment].answers
    for name, (pinned, rel_tol, abs_tol) in checks.items():
        if name in answers:
            assert math.isclose(answers[name], pinned, rel_tol=1e-12), f"specs/{assignment}.py"
        assert math.isclose(values[name], pinned, rel_tol=rel_tol, abs_tol=abs_tol), (
            f"{assignment}: {name} pins {pinned!r}; the package gives {values[name]!r}, outside "
            f"the hidden test's tolerance (rel {rel_tol:g}, abs {abs_tol:g})"
        )


def test_batching_shortcut_error_is_as_part_4_states() -> None:
    """Part 4 says the final-context shortcut overstates the decode by about 5% (#32 item 9),
    more the longer the output is against the prompt: the course's request_latency agrees."""
    llama = Deployment("Llama-3-70B", "H100", 8)

    def excess(prompt: int, output: int) -> float:
        request = batching.request_latency(llama, prompt, output, 64)
        return float(request.final_context_decode_s / request.decode_s - 1)

    assert 0.045 <= excess(2000, 1000) < 0.06, excess(2000, 1000)
    assert excess(2000, 3000) > excess(2000, 1000) > excess(2000, 300)


# ---- each part's setting line, and the numbers it is graded against (#42) --------------------
def _batching_from_lines(shown: dict[str, tuple[Setting, ...]]) -> dict[str, float]:
    (cost,) = shown["setting_part2"]
    (full,) = shown["setting_part3"]
    first, last = shown["setting_part4"]
    at_batch_4, break_even = shown["setting_part5"]
    fits = float(capacity.max_batch(full.deployment, full.context))
    contexts = np.arange(first.context, last.context + 1)  # the 999 decode steps' caches
    decode = serving.decode_step(first.deployment, 64, contexts, overlap=first.overlap)
    drafts = (4, 0.75, 0.03)  # k, acceptance, draft share: the part's example
    return {
        "cost_batch1_usd_per_mtok": float(cost.step(1).cost_per_million_tokens_usd()),
        "cost_batch256_usd_per_mtok": float(cost.step(256).cost_per_million_tokens_usd()),
        "max_batch_8k": fits,
        "step_time_max_batch_s": float(full.step(fits).time_s),
        "ttft_s": float(batching.ttft_s(first.deployment, first.context)),
        "decode_time_s": float(np.sum(decode.time_s)),
        "spec_speedup_batch4": float(
            speculative.speculative_step(
                at_batch_4.deployment, 4, at_batch_4.context, *drafts
            ).speedup
        ),
        "spec_break_even_batch": float(
            speculative.break_even_batch(break_even.deployment, break_even.context, *drafts)
        ),
    }


def _kv_cache_from_lines(shown: dict[str, tuple[Setting, ...]]) -> dict[str, float]:
    (wall,) = shown["setting_part2"]
    (long_step,) = shown["setting_part3"]
    (prefix,) = shown["setting_part4"]
    fp8_cache, all_fp8 = shown["setting_part5"]
    price = prefix.deployment.usd_per_chip_hour
    assert price is not None  # the part states its price: the line shows it
    fits = float(capacity.max_batch(long_step.deployment, long_step.context))
    fp8_fits = float(capacity.max_batch(all_fp8.deployment, all_fp8.context))
    tiers = kv_cache.prefix_cache(
        prefix.deployment, prefix.context, 0.0, tiers=("host_DRAM",), usd_per_chip_hour=price
    )
    return {
        "max_batch_128k": float(capacity.max_batch(wall.deployment, wall.context)),
        "step_time_128k_s": float(long_step.step(fits).time_s),
        "dram_reload_s": float(tiers.reload_s[..., 0]),
        "prefill_s": float(batching.prefill(prefix.deployment, prefix.context).time_s),
        "nvme_break_even_s": float(
            kv_cache.break_even_hold_s(
                prefix.deployment,
                prefix.context,
                "local_NVMe",
                usd_per_chip_hour=price,
                prefill_efficiency=1.0,
            )
        ),
        "max_batch_128k_fp8_kv": float(capacity.max_batch(fp8_cache.deployment, fp8_cache.context)),
        "max_batch_128k_fp8": fp8_fits,
        "tokens_per_s_128k_fp8": fp8_fits / float(all_fp8.step(fp8_fits).time_s),
    }


def _parallelism_from_lines(shown: dict[str, tuple[Setting, ...]]) -> dict[str, float]:
    (tp8,) = shown["setting_part6"]
    return {"step_s": float(tp8.step(1).time_s)}


def _roofline_from_lines(shown: dict[str, tuple[Setting, ...]]) -> dict[str, float]:
    (alone,) = shown["setting_part2"]
    step = alone.step(1, allow_overflow=True)  # a what-if: the line says the weights do not fit
    return {
        "weight_read_time_s": float(step.memory_s),
        "compute_time_batch1_s": float(step.compute_s),
    }


FROM_LINES: dict[str, Callable[[dict[str, tuple[Setting, ...]]], dict[str, float]]] = {
    "batching": _batching_from_lines,
    "kv_cache": _kv_cache_from_lines,
    "parallelism": _parallelism_from_lines,
    "roofline": _roofline_from_lines,
}


@pytest.mark.parametrize("assignment", sorted(FROM_LINES))
def test_each_setting_line_gives_the_numbers_its_part_is_graded_against(assignment: str) -> None:
    """A part's read-only cell prints the Setting its question states (model and chips, layout,
    formats, context, overlap rule): computed from those very objects, the part's answers are
    the ones its hidden tests pin, within their tolerance, so the line and the numbers cannot
    name different settings."""
    checks = hidden_checks(assignment)
    values = FROM_LINES[assignment](printed_settings(assignment))
    for name, value in values.items():
        pinned, rel_tol, abs_tol = checks[name]
        assert math.isclose(value, pinned, rel_tol=rel_tol, abs_tol=abs_tol), (
            f"{assignment}: {name} from the printed setting is {value!r}; the hidden test pins "
            f"{pinned!r} (rel {rel_tol:g}, abs {abs_tol:g})"
        )


def test_every_serving_part_prints_its_setting() -> None:
    """The parts whose question states a serving setting, each with its line (training parts
    and the MoE exercise's expert-level arithmetic have none: a Setting is a decode setting)."""
    lines = {a: sorted(printed_settings(a)) for a in sorted(FROM_LINES)}
    assert lines == {
        "batching": ["setting_part2", "setting_part3", "setting_part4", "setting_part5"],
        "kv_cache": ["setting_part2", "setting_part3", "setting_part4", "setting_part5"],
        "parallelism": ["setting_part6"],
        "roofline": ["setting_part2"],
    }
    one_server = {s.deployment for group in printed_settings("batching").values() for s in group}
    assert len(one_server) == 1  # one deployment through the batching exercise
    (tp8,) = printed_settings("parallelism")["setting_part6"]
    assert "TP all-reduces counted" in tp8.describe() and "serial estimate" in tp8.describe()
    (alone,) = printed_settings("roofline")["setting_part2"]
    assert "a what-if: the weights do not fit" in alone.describe()

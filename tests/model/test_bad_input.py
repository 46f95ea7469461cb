"""Issue 19's root causes, one regression test each: bad input never gets past the package
(and issue 31's cases that still got through, at the end)."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import numpy as np
import pytest

from llmmath import api_prices, kv_cache, memory_tiers, moe, parallelism, pricing, scaling
from llmmath.beyond import serving_modes
from llmmath.core import (
    deployment,
    dtypes,
    hardware,
    measure,
    models,
    placement,
    roofline,
    serving,
    training,
    training_memory,
)
from llmmath.core._checks import NotFiniteError
from llmmath.core._constraints import Real
from llmmath.core.contracts import INSIDE, MAX_CHIPS, contract
from llmmath.validation import published


@pytest.fixture(scope="module")
def dep() -> deployment.Deployment:
    return deployment.Deployment("Llama-3-8B", "H100")


def test_numpy_bools_are_not_numbers() -> None:
    with pytest.raises(TypeError, match=r"matmul_flops\(\): batch must be a number.*numpy.bool"):
        roofline.matmul_flops(np.True_, 4096, 4096)
    with pytest.raises(TypeError, match="batch"):
        roofline.matmul_flops(np.array([True, False]), 4096, 4096)


def test_object_arguments_are_type_checked(dep: deployment.Deployment) -> None:
    with pytest.raises(TypeError, match=r"decode_step\(\): deployment must be a .*Deployment"):
        serving.decode_step(None, 8, 1024)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="layout must be a"):
        placement.groups("TP8", "H100")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fit must be a"):
        scaling.loss(7e10, 1.4e12, fit="chinchilla")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"best_time_s\(\): operation must be a callable; got 5"):
        measure.best_time_s(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="path must be a path"):
        hardware.load_chips(None)  # type: ignore[arg-type]


def test_result_records_validate_their_fields() -> None:
    time = roofline.roofline_time(1e12, 1e9, "H100")
    with pytest.raises(ValueError, match="RooflineTime: compute_s must be finite"):
        dataclasses.replace(time, compute_s=np.nan)
    with pytest.raises(ValueError, match="Group: per_domain must be >= 1"):
        placement.Group("TP", 8, 0)
    with pytest.raises(ValueError, match="missing_bytes must be finite"):
        placement.DoesNotFitError("too big", np.nan)
    with pytest.raises(TypeError, match="must be a single number"):
        pricing.Range(np.array([1.0, 2.0]), 3.0)  # type: ignore[arg-type]


def test_mismatched_shapes_name_both_parameters() -> None:
    with pytest.raises(ValueError, match=r"batch \(2,\) and d_in \(3,\) do not broadcast"):
        roofline.matmul_flops(np.ones(2), np.ones(3), 4096)


def test_overflow_is_an_error_naming_the_input_that_caused_it() -> None:
    with pytest.raises(
        ValueError, match=r"training_flops\(\): params must be finite and >= 1e\+06 and <= 1e\+30"
    ):
        scaling.training_flops(1e300, 1.5e13)
    # Within the bounds, a result that overflows names the inputs that make it overflow, under
    # the function the reader called (not "compute_s" of an internal record).
    with pytest.raises(NotFiniteError, match=r"roofline_time\(\): flops=1e\+30, flops_efficiency"):
        roofline.roofline_time(1e30, 1e9, "H100", flops_efficiency=1e-300)
    with pytest.raises(NotFiniteError, match=r"training_time_s\(\): .*mfu=1e-300"):
        scaling.training_time_s(1e30, 1.0, "H100", 1e-300)


def test_counts_have_upper_bounds_that_keep_memory_and_time_bounded() -> None:
    with pytest.raises(ValueError, match=f"dp must be >= 1 and <= {MAX_CHIPS}"):
        placement.Layout(dp=10**9, tp=8)
    with pytest.raises(ValueError, match=f"at most {MAX_CHIPS} are modelled"):
        placement.Layout(dp=2**20, tp=2**20)
    with pytest.raises(ValueError, match="repeats must be >= 1 and <= 1000"):
        measure.best_time_s(lambda: None, 10**7)
    with pytest.raises(ValueError, match="n_experts must be >= 1 and <= 65536"):
        moe.ep_widths(10**8)


def test_scalar_parameters_refuse_arrays(dep: deployment.Deployment) -> None:
    with pytest.raises(TypeError, match="flops_efficiency must be a single number"):
        deployment.Deployment("Llama-3-8B", "H100", flops_efficiency=np.array([0.5, 0.6]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="short_context must be a single number"):
        pricing.long_context_surcharge(dep, 8, np.array([1e3, 2e3]), 1e5)  # type: ignore[arg-type]


def test_flags_are_bools_not_truthy_values(dep: deployment.Deployment) -> None:
    with pytest.raises(TypeError, match="allow_overflow must be True or False; got str 'no'"):
        serving.decode_step(dep, 8, 1024, allow_overflow="no")  # type: ignore[arg-type]


def test_chip_fields() -> None:
    h100 = hardware.get_chip("H100")
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        dataclasses.replace(h100, name=None)
    with pytest.raises(ValueError, match=r"peak_flop_per_s\['fp5'\]: unknown dtype 'fp5'"):
        dataclasses.replace(h100, peak_flop_per_s={"fp5": 1e15})
    with pytest.raises(TypeError, match="hbm_bandwidth_bytes_per_s must be a single number"):
        dataclasses.replace(h100, hbm_bandwidth_bytes_per_s=np.array([3.35e12]))


def test_model_fields() -> None:
    llama = models.get_model("Llama-3-8B")
    with pytest.raises(TypeError, match="tied_embeddings must be True or False"):
        dataclasses.replace(llama, tied_embeddings="no")
    with pytest.raises(ValueError, match="n_shared_experts is set but n_experts is 0"):
        dataclasses.replace(llama, n_shared_experts=2)
    # numpy integers are integers for every count field alike
    assert dataclasses.replace(llama, n_dense_layers=np.int64(0), n_layers=np.int64(32)).name


def test_a_custom_memory_tier_works_wherever_a_tier_does(dep: deployment.Deployment) -> None:
    """A renamed copy of a preset tier is taken as that tier: the same costs, its own name."""
    tier = dataclasses.replace(kv_cache.get_tier("host_DRAM"), name="my DRAM")
    cache = kv_cache.prefix_cache(dep, 1000, 10.0, 1.0, tiers=[tier])
    preset = kv_cache.prefix_cache(dep, 1000, 10.0, 1.0, tiers=["host_DRAM"])
    assert cache.tiers == ("my DRAM",)
    assert cache.keep_usd == pytest.approx(preset.keep_usd, rel=1e-12)
    assert cache.hold_usd == pytest.approx(preset.hold_usd, rel=1e-12)
    hold = kv_cache.break_even_hold_s(dep, 1000, tier, 1.0)
    same = kv_cache.break_even_hold_s(dep, 1000, "host_DRAM", 1.0)
    assert hold > 0 and hold == pytest.approx(same, rel=1e-12)


def test_fractional_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="stages must be a whole number >= 1"):
        training.pipeline_bubble_fraction(1.5, 32)


def test_every_decode_step_checks_the_models_context() -> None:
    with pytest.raises(ValueError, match="max_context=8192"):
        parallelism.layout_decode_step("Llama-3-8B", placement.Layout(), "H100", 8, 10**7)


def test_an_empty_dtype_is_not_the_default() -> None:
    with pytest.raises(ValueError, match="weight_dtype: unknown dtype ''"):
        roofline.matmul_bytes(1, 2, 3, weight_dtype="")


def test_errors_name_the_parameter_the_reader_passed(dep: deployment.Deployment) -> None:
    with pytest.raises(ValueError, match=r"serving_cost\(\): context must be finite and >= 1"):
        pricing.serving_cost(dep, 8, 0)
    with pytest.raises(ValueError, match=r"serving_cost\(\): prefill_batch must be"):
        pricing.serving_cost(dep, 8, 128, prefill_batch=-1)


# ---- checked once, at the package's boundary -------------------------------------------------
def test_methods_check_their_arguments() -> None:
    with pytest.raises(ValueError, match=r"Chip.peak\(\): unknown dtype 'fp5'"):
        hardware.get_chip("H100").peak("fp5")
    with pytest.raises(TypeError, match=r"ModelConfig.kv_bytes_per_token\(\): dtype must be"):
        models.get_model("Llama-3-8B").kv_bytes_per_token(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Layout.for_cluster\(\): tp must be an integer"):
        placement.Layout.for_cluster(64, tp=8.0)  # type: ignore[arg-type]


def test_a_failed_call_leaves_the_next_one_checked(dep: deployment.Deployment) -> None:
    """Inner calls skip their checks only while a checked call runs: an error (a bad argument,
    a step that does not fit, an overflow) ends that, and the next call is checked again."""
    failures = [
        lambda: serving.decode_step(None, 8, 1024),  # type: ignore[arg-type]
        lambda: serving.decode_step(dep, 10**6, 8192),
        lambda: roofline.roofline_time(1e30, 1e9, "H100", flops_efficiency=1e-300),
    ]
    for fail in failures:
        with pytest.raises(ValueError if fail is not failures[0] else TypeError):
            fail()
        assert not INSIDE.get()
        with pytest.raises(ValueError, match="flops must be finite"):
            roofline.roofline_time(-1.0, 1e9, "H100")


def test_another_thread_is_checked_while_this_one_is_inside_a_call() -> None:
    token = INSIDE.set(True)  # as if this thread were inside a checked call
    errors: list[Exception] = []

    def call() -> None:
        try:
            roofline.roofline_time(-1.0, 1e9, "H100")
        except ValueError as error:
            errors.append(error)

    try:
        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
    finally:
        INSIDE.reset(token)
    assert len(errors) == 1 and "flops must be finite" in str(errors[0])


# ---- each rule checked once, by the contract (issue 19's overhead) ---------------------------
def test_a_lookup_checks_itself_with_its_contract_s_message() -> None:
    """get_model, get_chip and bytes_per_element run unwrapped (own_check) yet refuse as a
    contract does, naming the function and the parameter."""
    assert not hasattr(models.get_model, "__wrapped__")
    with pytest.raises(ValueError, match=r"models\.get_model\(\): unknown model 'GPT-9'; known"):
        models.get_model("GPT-9")
    with pytest.raises(TypeError, match=r"hardware\.get_chip\(\): chip must be a string"):
        hardware.get_chip(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"bytes_per_element\(\): unknown dtype 'fp3'"):
        dtypes.bytes_per_element("fp3")
    assert models.get_model(np.str_("Llama-3-8B")).name == "Llama-3-8B"  # a str after all


def test_a_setup_record_is_checked_even_when_built_inside_a_call() -> None:
    """A Deployment's fields are checked by @checked only (its __post_init__ keeps the rules
    across fields), so it is checked inside a checked call too, where a caller may hand it
    arguments its own contract declared more loosely."""

    @contract(efficiency=Real())  # looser than a Deployment's: any positive number
    def build(efficiency: float) -> deployment.Deployment:
        return deployment.Deployment("Llama-3-8B", "H100", flops_efficiency=efficiency)

    with pytest.raises(ValueError, match=r"Deployment: flops_efficiency must be .*got 2\.0"):
        build(2.0)
    with pytest.raises(
        ValueError, match=r"the layout TP8 DP1 uses .* but the deployment has n_chips=4"
    ):
        deployment.Deployment("Llama-3-70B", "H100", 4, layout=placement.Layout(tp=8))


def test_rules_a_body_used_to_check_are_the_contract_s() -> None:
    """Stricter rules once hidden in a body now stand in the contract, named there."""
    with pytest.raises(ValueError, match=r"cost_profit_margin\(\): cost must be finite and > 0"):
        api_prices.cost_profit_margin(1.0, 0.0)
    with pytest.raises(ValueError, match=r"with_experts\(\): n_experts must be >= 1"):
        moe.with_experts("Mixtral-8x7B", 0, 1)
    with pytest.raises(
        ValueError, match=r"layout_breakdown\(\): global_batch_tokens must be .*> 0"
    ):
        parallelism.layout_breakdown("Llama-3-8B", "H100", placement.Layout(tp=8), 0.0)
    with pytest.raises(ValueError, match=r"fast_mode\(\): speedup=1e\+30 needs .* chips"):
        serving_modes.fast_mode(deployment.Deployment("Llama-3-8B", "H100"), 1024.0, 1e30)


# ---- issue 31: the cases that still got through ------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, r"cannot be read \(No such file or directory\); expected a TOML file shaped like"),
        ("x = = 1\n", r"is not valid TOML \(Invalid value .*\); expected a TOML file shaped like"),
        ("x = 1\n", r"x = 1 is not a table; expected .* one \[name\] table per chip"),
        ("[x]\nhbm_bytes = 1\n", r"chip 'x' is missing full_name"),
    ],
)
def test_a_chip_file_that_cannot_be_read_names_the_file(
    tmp_path: Path, text: str | None, message: str
) -> None:
    path = tmp_path / "chips.toml"
    if text is not None:
        path.write_text(text)
    kind = FileNotFoundError if text is None else ValueError
    with pytest.raises(kind, match=rf"load_chips\(\): path '{path}': {message}"):
        hardware.load_chips(path)


def test_chip_numbers_are_bounded_to_plausible_ranges() -> None:
    h100 = hardware.get_chip("H100")
    with pytest.raises(
        ValueError, match=r"hbm_bandwidth_bytes_per_s must be finite and >= 1e\+06 and <= 1e\+15"
    ):
        dataclasses.replace(h100, hbm_bandwidth_bytes_per_s=1e-300)  # memory_floor_s was inf
    with pytest.raises(ValueError, match=r"peak_flop_per_s\['bf16'\] must be .*<= 1e\+18"):
        dataclasses.replace(h100, peak_flop_per_s={"bf16": 1e30})
    with pytest.raises(ValueError, match=r"scale_up_latency_s must be finite and >= 1e-09"):
        dataclasses.replace(h100, scale_up_latency_s=1e-300)


def test_a_price_sheet_refuses_a_free_input_token() -> None:
    sheet = api_prices.get_price_sheet(api_prices.list_price_sheets()[0])
    with pytest.raises(
        ValueError, match=r"PriceSheet: input_usd_per_million must be finite and > 0"
    ):
        dataclasses.replace(sheet, input_usd_per_million=0.0)  # read_price_sheet divided by it


def test_a_span_is_a_number_or_a_low_high_pair_list_or_tuple() -> None:
    pair = pricing.range_over(api_prices.revenue_usd, tokens=[1e6, 2e6], usd_per_million=1.0)
    assert pair == pricing.range_over(api_prices.revenue_usd, tokens=(1e6, 2e6), usd_per_million=1)
    assert (pair.low, pair.high) == (1.0, 2.0)
    with pytest.raises(
        ValueError,
        match=r"range_over\(\): tokens must be a list or tuple of 2 items \(low, high\), each "
        r"finite and > 0.*; got 3 items, tuple \(1.0, 2.0, 3.0\)",
    ):
        pricing.range_over(api_prices.revenue_usd, tokens=(1.0, 2.0, 3.0), usd_per_million=1.0)
    as_list = pricing.Assumptions(usd_per_chip_hour=[2.0, 6.0])
    assert as_list == pricing.Assumptions() and hash(as_list) == hash(pricing.Assumptions())
    sheet = api_prices.list_price_sheets()[0]
    assert pricing.read_price_sheet(sheet, as_list) == pricing.read_price_sheet(sheet)
    with pytest.raises(ValueError, match=r"Assumptions: markup must be .*list or tuple of 2 items"):
        pricing.Assumptions(markup=(1.0, 2.0, 3.0))


def test_a_range_from_zero_has_an_infinite_spread() -> None:
    assert pricing.Range(0.0, 2.0).spread == np.inf
    assert pricing.Range(0.0, 0.0).spread == 1.0
    assert pricing.Range(2.0, 6.0).spread == 3.0


def test_a_single_batch_is_a_sweep_of_one() -> None:
    flops, moved, best, median = measure.measure_matmul_sweep(np.float64(4.0), 16, 1)
    assert flops.shape == moved.shape == best.shape == median.shape == (1,)
    assert flops[0] == 2.0 * 4 * 16 * 16


def test_nothing_to_hold_fits() -> None:
    training_memory.model_state_bytes(np.array([])).require_fit("H100")  # no error


def fake_machine(n: int, measured: float = 1e-6) -> measure.MachineRoofline:
    return measure.MachineRoofline(
        1e12, 1e10, np.ones(n), 64, np.full(n, 1e4), np.full(n, 1e4), np.full(n, measured)
    )


def test_a_machine_sweep_is_refused_naming_the_sweep() -> None:
    with pytest.raises(
        ValueError, match=r"MachineRoofline: sweep_batch, .* must be 1-d arrays of one length >= 1"
    ):
        fake_machine(0)  # machine_comparisons took argmin of it
    with pytest.raises(
        ValueError, match=r"MachineRoofline: sweep_measured_s must be finite and > 0"
    ):
        fake_machine(2, measured=0.0)  # was reported as a Comparison's "measured"
    with pytest.raises(ValueError, match=r"one length >= 1 .*'sweep_median_s': \(3,\)"):
        dataclasses.replace(fake_machine(1), sweep_median_s=np.ones(3))  # (1,) broadcasts
    low, high = published.machine_comparisons(fake_machine(1))
    assert low.measured == high.measured == 1e-6


def test_every_entry_point_checks_the_models_context() -> None:
    layout = placement.Layout(tp=8)
    with pytest.raises(ValueError, match=r"context must be <= Llama-3-70B's max_context=8192"):
        placement.serving_memory("Llama-3-70B", layout, 1.0, 1e7)
    with pytest.raises(ValueError, match=r"context must be <= Llama-3-70B's max_context=8192"):
        placement.max_decode_batch("Llama-3-70B", layout, "H100", 1e7)
    assert placement.max_decode_batch("Llama-3-70B", layout, "H100", 8192) > 0


def test_counts_are_whole_and_sizes_plausible() -> None:
    with pytest.raises(
        ValueError, match=r"training_flops\(\): params must be finite and >= 1e\+06"
    ):
        training.training_flops(5, 1e12)
    with pytest.raises(ValueError, match=r"loss\(\): params must be finite and >= 1e\+06"):
        scaling.loss(5, 1e12)
    with pytest.raises(
        ValueError, match=r"training_time_s\(\): n_chips must be a whole number >= 1 and <= "
    ):
        scaling.training_time_s(6e24, 2.5, "H100", 0.4)
    assert scaling.training_time_s(6e24, 2048.0, "H100", 0.4) > 0  # a whole float is a count
    with pytest.raises(ValueError, match=r"Table3Row: params must be finite and > 0"):
        scaling.Table3Row(params=0.0, flops=1e20, tokens=1e9)


def test_a_fleet_day_caches_no_more_input_than_it_has() -> None:
    day = api_prices.get_fleet_day()
    with pytest.raises(
        ValueError, match=r"cached_input_tokens must be <= input_tokens .*; got 1\.216e\+12 > 6"
    ):
        dataclasses.replace(day, cached_input_tokens=2 * day.input_tokens)


def test_a_degenerate_fit_is_refused_not_answered_with_inf() -> None:
    fit = dataclasses.replace(scaling.CHINCHILLA_FIT, beta=1e-3)  # D(N) overflows at every N
    with pytest.raises(
        ValueError,
        match=r"inference_aware_optimum\(\): fit must be a fit that reaches target_loss on "
        r"finitely many tokens .*; got ChinchillaFit\(.*beta=0\.001",
    ):
        scaling.inference_aware_optimum(2.0, 1e12, fit=fit)


def test_messages_name_what_the_reader_passed(dep: deployment.Deployment) -> None:
    with pytest.raises(
        TypeError,
        match=r"training_flops\(\): params must be a number of parameters \(finite and >= 1e\+06"
        r".*\) or a model \(a name of models\.list_models\(\) .*; got NoneType None",
    ):
        training.training_flops(None, 1e12)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError,
        match=r"long_context_surcharge\(\): short_context must be >= 1 and <= 1e\+15, a whole "
        r"number of tokens; got 1e-300",
    ):
        pricing.long_context_surcharge(dep, 8, 1e-300, 1e5)
    with pytest.raises(ValueError, match=r"long_context must be a whole number of tokens >= 1"):
        pricing.long_context_surcharge(dep, 8, 1024, 2048.5)


def test_does_not_fit_can_be_raised_with_a_message_alone() -> None:
    error = placement.DoesNotFitError("too big")
    assert str(error) == "too big" and np.isnan(error.missing_bytes)  # NaN: not known
    assert placement.DoesNotFitError("too big", 1e9).missing_bytes == 1e9


def test_a_prompt_cache_keeps_its_tokens_a_positive_time() -> None:
    price = memory_tiers.get_prompt_cache(memory_tiers.list_prompt_caches()[0])
    with pytest.raises(ValueError, match=r"PromptCachePrice .*: ttl_s must be finite and > 0"):
        dataclasses.replace(price, ttl_s=0.0)  # the write premium was divided by it


def test_a_deadline_broadcasts_with_the_prefix_as_every_input_does(
    dep: deployment.Deployment,
) -> None:
    cache = memory_tiers.prefix_cache(dep, 1000, 10.0, 1.0, deadline_s=[1e-9, 1.0, 1e3])
    per_tier = (3, len(cache.tiers))
    assert cache.prefix_bytes.shape == cache.recompute_s.shape == (3,)
    assert cache.hold_usd.shape == cache.in_time.shape == cache.keep_usd.shape == per_tier
    slow = [name != "HBM" for name in cache.tiers]  # HBM reloads nothing: always in time
    assert not cache.in_time[0, slow].any() and cache.in_time[2].all()
    with pytest.raises(ValueError, match=r"prefix_tokens \(2,\) and deadline_s \(3,\) do not"):
        memory_tiers.prefix_cache(dep, [1000, 2000], 10.0, 1.0, deadline_s=[1, 2, 3])

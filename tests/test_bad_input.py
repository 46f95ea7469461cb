"""Issue 19's root causes, one regression test each: bad input never gets past the package."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

from llmmath import (
    api_prices,
    deployment,
    dtypes,
    hardware,
    kv_cache,
    measure,
    models,
    moe,
    parallelism,
    placement,
    pricing,
    roofline,
    scaling,
    serving,
    serving_modes,
    training,
)
from llmmath.contracts import INSIDE, MAX_CHIPS, NotFiniteError, Real, contract


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
        ValueError, match=r"training_flops\(\): params must be finite and > 0 and <= 1e\+30"
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
    tier = dataclasses.replace(kv_cache.get_tier("host_DRAM"), name="my DRAM")
    cache = kv_cache.prefix_cache(dep, 1000, 10.0, 1.0, tiers=[tier])
    assert cache.tiers == ("my DRAM",)
    assert kv_cache.break_even_hold_s(dep, 1000, tier, 1.0) >= 0


def test_fractional_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="stages must be a whole number >= 1"):
        training.pipeline_bubble_fraction(1.5, 32)


def test_every_decode_step_checks_the_models_context() -> None:
    with pytest.raises(ValueError, match="max_context=8192"):
        parallelism.decode_step("Llama-3-8B", placement.Layout(), "H100", 8, 10**7)


def test_an_empty_dtype_is_not_the_default() -> None:
    with pytest.raises(ValueError, match="weight_dtype: unknown dtype ''"):
        roofline.matmul_bytes(1, 2, 3, weight_dtype="")


def test_errors_name_the_parameter_the_reader_passed(dep: deployment.Deployment) -> None:
    with pytest.raises(ValueError, match=r"serving_cost\(\): context must be finite and > 0"):
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

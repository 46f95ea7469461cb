"""One rule per parameter name: a parameter called ``weight_bytes_per_param`` accepts the same
values in every function that takes it (#47: one accepted 0, its sibling refused it). A rule
a name carries everywhere lives once, in :data:`llmmath.core.contracts.VOCABULARY`."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

import llmmath
from llmmath.core._constraints import MAX_COUNT, AnyOf, Constraint, Count, Nothing, Real
from llmmath.core.contracts import Contract, contract

#: Names that mean different things in different functions, each with why.
DIFFERENT_MEANINGS = {
    "assumptions": "pricing.range_over: one assumption's value or its (low, high) range; "
    "read_price_sheet: the whole Assumptions record",
    "batches": "measure.measure_matmul_sweep: the matmul sizes this machine runs (whole, "
    "bounded for its run time); elsewhere the batches a modelled curve is drawn at",
    "chip": "a chip name or record (CHIP); a chip or a scale-up domain where the function "
    "works on a domain (DOMAIN); the record to register (hardware.add_chip); the name of a "
    "price row (serving_modes.list_price); the name keying a price (planning)",
    "key": "the key of each table it looks up (systems' measurements, published comparisons)",
    "machine": "focus: a local machine of that chapter; published: this machine's measured "
    "roofline",
    "mode": "planning: aggregated or disaggregated serving; training_memory: how activations "
    "are kept",
    "model": "a model preset or config (MODEL); an API's priced model (api_prices); a local "
    "model of the focus chapter; a built ModelConfig (models.check_context)",
    "models": "model presets (kv_cache) or the focus chapter's local models",
    "name": "the name in each table it looks up (fleet days, racks, machines, prompt caches)",
    "step_time_s": "queueing.simulate_batcher: a function of the batch; chip_prices: one time",
}

#: Names with one meaning whose range is narrower in some functions, because their formula
#: is undefined on the rest (a division by the value, a power of it, a list of its steps) or
#: they take a mean where the others take one request's whole count: each function refuses
#: exactly that part, and its message says what it accepts. Each entry names the functions on
#: the narrower (or wider) side and why. Loosening them would return inf or NaN; tightening
#: the others would refuse values the pages show (a figure's batch axis from 0, a price with no
#: output). A name whose functions come to agree leaves the list (the test below says so).
DOMAIN_OF_THE_FORMULA = {
    "batch": "> 0 where a result is per token or per sequence (a step's time per token divides "
    "by the batch); kv_bytes_held and expected_experts_touched take 0 (no sequence holds no "
    "bytes and touches no expert: the figures' axes start there)",
    "bytes_moved": ">= 0 (roofline_time, mbu: moving nothing takes no time); "
    "arithmetic_intensity divides by it: > 0",
    "context": ">= 0 (a step at no context reads the weights alone); serving_energy, "
    "serving_cost and disaggregated_pools also prefill it as the requests' prompt, >= 1",
    "flops": ">= 0 (roofline_time, mfu: no work takes no time); arithmetic_intensity > 0 (an "
    "intensity is a point on the roofline curve, which takes > 0); scaling's training budget "
    "> 0 (compute_optimal raises it to powers and divides by it)",
    "input_tokens": "one request's length, whole and >= 1 (simulate_batcher's at most 131,072, "
    "the longest context it simulates); concurrency_for_rate takes a mean, any value > 0",
    "n_chips": "whole, 1 to 2^20 (MAX_CHIPS); ring_all_reduce_schedule lists each of its "
    "2 (n - 1) steps, 2 to 1,024; format_effects builds a deployment per format, at most "
    "65,536 chips",
    "output_tokens": "one request's length, whole and >= 1; concurrency_for_rate a mean > 0; "
    "request_price_usd bills a request that returns nothing (>= 0)",
    "params": ">= 1e6 parameters; training_flops also takes a model for them (its count)",
    "prompt_tokens": "one prompt's length, >= 1; the API price functions take a mean or the "
    "tier's threshold, >= 0 (0: the short tier, their default)",
    "tokens": ">= 0, a count (revenue, capacity, activations); pass_curves draws from 1; "
    "implied_mfu divides by it and scaling.loss raises it to a negative power, > 0; "
    "training_flops > 0 as the loss it feeds",
}


def contracted_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every public function of the package with a ``@contract``, and every public method."""
    for info in pkgutil.walk_packages(llmmath.__path__, "llmmath."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            yield f"{module.__name__}.{name}", obj
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if not attr.startswith("_"):
                        yield f"{module.__name__}.{name}.{attr}", getattr(value, "__func__", value)


def rule(constraint: Constraint) -> str:
    """The values a parameter accepts, in words. Not a rule of its own: ``None`` allowed (a
    parameter defaulting to None, "not given"), and the form (one number, or an array of
    them too: a whole number is a :class:`Count` or an integer :class:`Real`)."""
    if isinstance(constraint, AnyOf) and len(constraint.options) == 2:
        nothing, inner = constraint.options
        if isinstance(nothing, Nothing):
            return rule(inner)
    if isinstance(constraint, Count):
        return f"a whole number >= {constraint.low:g} and <= {constraint.high:g}"
    if isinstance(constraint, Real) and constraint.integer:
        low = constraint.low + (1 if constraint.low_open else 0)
        return f"a whole number >= {low:g} and <= {min(constraint.high, MAX_COUNT):g}"
    if isinstance(constraint, Real):
        return dataclasses.replace(constraint, scalar=False, ndarray=False, unit="").allowed
    return str(constraint.allowed)


def rules_by_name(
    callables: Iterator[tuple[str, Callable[..., Any]]],
) -> dict[str, dict[str, list[str]]]:
    """Each parameter name -> each rule it carries -> the callables with that rule."""
    found: dict[str, dict[str, list[str]]] = {}
    for where, func in callables:
        spec = getattr(func, "__contract__", None)
        if not isinstance(spec, Contract):
            continue  # a record's fields are results, checked by @checked
        for name, constraint in spec.constraints.items():
            found.setdefault(name, {}).setdefault(rule(constraint), []).append(where)
    return found


def two_rules(found: dict[str, dict[str, list[str]]]) -> list[str]:
    return [
        f"{name}: " + "; ".join(f"{r} in {', '.join(w[:2])}" for r, w in rules.items())
        for name, rules in sorted(found.items())
        if len(rules) > 1 and name not in DIFFERENT_MEANINGS and name not in DOMAIN_OF_THE_FORMULA
    ]


def test_each_parameter_name_has_one_rule() -> None:
    found = rules_by_name(contracted_callables())
    assert len(found) > 200  # the walk finds the package's parameters
    problems = two_rules(found)
    assert not problems, "\n".join(problems)


def test_every_listed_name_still_has_two_meanings() -> None:
    """The lists do not outlive their reason: a name with one rule leaves them."""
    found = rules_by_name(contracted_callables())
    stale = [n for n in (*DIFFERENT_MEANINGS, *DOMAIN_OF_THE_FORMULA) if len(found.get(n, {})) < 2]
    assert not stale, stale


def test_two_rules_for_one_name_are_caught() -> None:
    """The check can fail: 0 accepted by one function and refused by its sibling."""
    from llmmath.core.contracts import SCALAR, SCALAR_POSITIVE

    @contract(weight_bytes_per_param=SCALAR)
    def memory(weight_bytes_per_param: float) -> float:
        return weight_bytes_per_param

    @contract(weight_bytes_per_param=SCALAR_POSITIVE)
    def traffic(weight_bytes_per_param: float) -> float:
        return weight_bytes_per_param

    @contract(weight_bytes_per_param=SCALAR_POSITIVE)
    def optional(weight_bytes_per_param: float | None = None) -> float:
        return 1.0

    found = rules_by_name(iter([("memory", memory), ("traffic", traffic)]))
    assert two_rules(found) == [
        f"weight_bytes_per_param: {SCALAR.allowed} in memory; {SCALAR_POSITIVE.allowed} in traffic"
    ]
    # None for "not given" is not a second rule
    assert two_rules(rules_by_name(iter([("traffic", traffic), ("optional", optional)]))) == []

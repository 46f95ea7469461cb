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

#: Names with one meaning and, still, two rules: the rule decided (and why), not applied in
#: #47's seam step because callers (figures, lessons) pass the values one rule refuses and
#: each needs checking against the pages' numbers. A name leaves this list when it has one
#: rule (the test below then says so); a new name never joins it silently.
NOT_YET_ONE_RULE = {
    "batch": "> 0: a step of no sequences has no time per token (kv_bytes_held and "
    "expected_experts_touched accept 0 for figures that start at 0)",
    "bytes_moved": ">= 0, as roofline_time's; arithmetic_intensity of no bytes is infinite",
    "context": ">= 0: a step at no context reads the weights alone (serving_energy, "
    "disaggregated_pools ask >= 1, prefill_stall_steps > 0)",
    "flops": ">= 0, as roofline_time's: no work takes no time",
    "input_tokens": "a request's length: whole, >= 1 (concurrency_for_rate takes a mean)",
    "n_chips": "whole, 1 to 2^20 (MAX_CHIPS); ring_all_reduce_schedule lists each step (2 to "
    "1024), format_effects stops at 65536",
    "output_tokens": "a request's length: whole, >= 1; request_price_usd bills a request "
    "without output (>= 0)",
    "params": ">= 1e6 parameters; training_flops also takes a model for them",
    "prompt_tokens": "a prompt's length: >= 1; the API price functions take a mean (>= 0)",
    "tokens": ">= 0 (a count of tokens); pass_curves >= 1, implied_mfu and training_flops > 0",
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
        if len(rules) > 1 and name not in DIFFERENT_MEANINGS and name not in NOT_YET_ONE_RULE
    ]


def test_each_parameter_name_has_one_rule() -> None:
    found = rules_by_name(contracted_callables())
    assert len(found) > 200  # the walk finds the package's parameters
    problems = two_rules(found)
    assert not problems, "\n".join(problems)


def test_every_listed_name_still_has_two_meanings() -> None:
    """The lists do not outlive their reason: a name with one rule leaves them."""
    found = rules_by_name(contracted_callables())
    stale = [n for n in (*DIFFERENT_MEANINGS, *NOT_YET_ONE_RULE) if len(found.get(n, {})) < 2]
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

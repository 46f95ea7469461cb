"""The common test: every public callable of the core declares a contract, and bad input
generated from that contract gets a clean error naming the parameter.

Callables are discovered, not listed: a function or record added to a core module tomorrow
is covered (or, without a contract, reported here by name) the day it lands.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import math
import pkgutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmmath
from llmmath import api_prices, pricing
from llmmath.beyond import plan_workers
from llmmath.core import (
    data,
    deployment,
    hardware,
    measure,
    models,
    placement,
    racks,
    serving,
    setting,
    training_memory,
)
from llmmath.core._checks import NotFiniteError
from llmmath.core._constraints import AnyOf, Constraint, Count, Instance, Real
from llmmath.core._fast import finite, quick
from llmmath.core.contracts import RESULT, checked, contract, short_module
from llmmath.core.placement import DoesNotFitError
from llmmath.validation import published

#: The addresses released exercises import (one-line re-exports of the core's modules).
SHIMS = {"serving", "deployment"}
#: The model is every module but the display layer (figures, explorers, page helpers), the
#: command line, the reader of ``config.json`` files (its shape and its quantization) and the
#: contract machinery itself: a module added to the package tomorrow is walked too. Named as
#: messages name them (``serving``).
NOT_MODEL = (
    "llmmath.display",
    "llmmath.cli",
    "llmmath.core.hf_config",
    "llmmath.core.hf_quant",
    "llmmath.core.hf_hybrid",
    "llmmath.core.contracts",
)
CORE = sorted(
    short_module(m.name)
    for m in pkgutil.walk_packages(llmmath.__path__, "llmmath.")
    if not m.ispkg
    and "._" not in m.name
    and not m.name.startswith(NOT_MODEL)
    and m.name.removeprefix("llmmath.") not in SHIMS
)
MODULES = {  # short name -> where it is defined
    short_module(m.name): m.name
    for m in pkgutil.walk_packages(llmmath.__path__, "llmmath.")
    if m.name.removeprefix("llmmath.") not in SHIMS
}
#: These time the machine itself: their valid extremes (a 16k matmul, 1000 repeats) take
#: minutes by design, so only their bad inputs are tried.
TIMED = {"measure"}


def public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every function and class a core module defines and makes public (``__all__`` where it
    has one, else every name without a leading underscore)."""
    for short in CORE:
        module = importlib.import_module(MODULES[short])
        names = getattr(module, "__all__", None) or [n for n in vars(module) if n[0] != "_"]
        for name in names:
            obj = getattr(module, name)
            defined_here = getattr(obj, "__module__", None) == module.__name__
            if defined_here and (inspect.isfunction(obj) or inspect.isclass(obj)):
                yield f"{short}.{name}", obj


CALLABLES = dict(public_callables())


def _deployment() -> object:
    return deployment.Deployment("Llama-3-8B", "H100")


#: One instance of each public class with methods, to call its methods on (a class missing
#: here fails ``test_every_public_method_declares_a_contract`` by name).
INSTANCES: dict[type, Callable[[], object]] = {
    hardware.Chip: lambda: hardware.get_chip("H100"),
    models.ModelConfig: lambda: models.get_model("Llama-3-8B"),
    placement.Layout: lambda: placement.Layout(tp=8),
    # the base's methods, on a serving record (the base holds no bytes of its own)
    placement.MemoryPerGpu: lambda: placement.serving_memory(
        "Llama-3-8B", placement.Layout(), 8.0, 1024.0
    ),
    placement.ServingMemory: lambda: placement.serving_memory(
        "Llama-3-8B", placement.Layout(), 8.0, 1024.0
    ),
    training_memory.TrainingMemory: lambda: training_memory.model_state_bytes(8e9),
    racks.ScaleUpDomain: lambda: racks.get_domain(racks.list_domains()[0]),
    serving.DecodeStep: lambda: serving.decode_step(_deployment(), 1.0, 128.0),
    deployment.Deployment: _deployment,
    setting.Setting: lambda: setting.Setting(_deployment(), 128.0),
    plan_workers.Targets: lambda: plan_workers.Targets(2.0, 0.05),
}


def public_methods() -> Iterator[tuple[str, type, str]]:
    """Every public method (classmethods and staticmethods too) that takes arguments, of every
    public class, inherited ones included (``ServingMemory.fits`` from a private base).
    Properties take none, so they have nothing to check."""
    for name, cls in CALLABLES.items():
        if not inspect.isclass(cls):
            continue
        for attr in sorted({a for k in cls.__mro__ if _ours(k) for a in vars(k)}):
            value = inspect.getattr_static(cls, attr)
            func = value.__func__ if isinstance(value, classmethod | staticmethod) else value
            if attr[0] != "_" and inspect.isfunction(func) and _takes_arguments(func):
                yield f"{name}.{attr}", cls, attr


def _ours(cls: type) -> bool:
    return cls.__module__.split(".")[0] == "llmmath"


def _takes_arguments(func: Callable[..., Any]) -> bool:
    return any(p not in ("self", "cls") for p in inspect.signature(func).parameters)


def bound(cls: type, attr: str) -> Callable[..., Any] | None:
    """The method, bound to an instance (or, for a classmethod, to the class); None for a
    class without one in :data:`INSTANCES` (reported by the test below)."""
    if isinstance(inspect.getattr_static(cls, attr), classmethod | staticmethod):
        return getattr(cls, attr)  # type: ignore[no-any-return]
    return getattr(INSTANCES[cls](), attr) if cls in INSTANCES else None


METHODS = list(public_methods())


def test_every_public_method_declares_a_contract() -> None:
    missing = [n for n, cls, attr in METHODS if contract_of(getattr(cls, attr)) is None]
    assert not missing, f"public methods without a contract (add @contract): {missing}"
    unbound = [n for n, cls, attr in METHODS if bound(cls, attr) is None]
    assert not unbound, f"methods with no instance to call them on (add to INSTANCES): {unbound}"
    named = {n.split(".", 1)[1] for n, _, _ in METHODS}
    assert {"Chip.peak", "ModelConfig.kv_bytes_per_token", "Layout.for_cluster"} <= named
    assert {"ServingMemory.fits", "TrainingMemory.require_fit"} <= named  # inherited ones


# Every callable the tests below call with bad input: functions, classes and bound methods.
CALLS: dict[str, Callable[..., Any]] = CALLABLES | {
    n: method for n, c, a in METHODS if (method := bound(c, a)) is not None
}


def contract_of(obj: Callable[..., Any]) -> Any:
    """A function's contract, a record's (its fields), or an exception's (its __init__)."""
    if inspect.isclass(obj) and "__contract__" not in vars(obj):
        return getattr(obj.__init__, "__contract__", None)
    return getattr(obj, "__contract__", None)


def test_every_public_callable_declares_a_contract() -> None:
    missing = sorted(name for name, obj in CALLABLES.items() if contract_of(obj) is None)
    assert not missing, f"public callables without a contract (add @contract/@checked): {missing}"
    assert len(CALLABLES) > 150  # discovery works: the core has ~190 public callables
    assert {"roofline", "serving", "pricing", "published", "units"} <= set(CORE)


def test_a_parameter_nobody_declared_fails_at_import() -> None:
    with pytest.raises(TypeError, match=r"undeclared \['wingspan'\]"):
        contract()(lambda wingspan: wingspan)


# ---- calls built from the contracts -------------------------------------------------------
def parameters(obj: Callable[..., Any]) -> dict[str, tuple[Constraint, inspect.Parameter]]:
    spec = contract_of(obj)
    assert spec is not None, f"{obj.__module__}.{obj.__qualname__} declares no contract"
    params = inspect.signature(obj).parameters
    return {name: (c, params[name]) for name, c in spec.constraints.items()}


#: Valid objects for parameters whose constraint is "an instance of X" with no example of its
#: own (built here, so the package carries no test fixtures), by class or "function.parameter".
EXAMPLES: dict[object, Callable[[], object]] = {
    "chip_from_dict.spec": lambda: dict(data.table("hardware")["H100"]),
    "model_from_dict.spec": lambda: dict(data.table("models")["Llama-3-8B"]),
    "load_chips.path": lambda: str(Path(llmmath.__file__).parent / "data" / "hardware.toml"),
    "load_models.path": lambda: str(Path(llmmath.__file__).parent / "data" / "models.toml"),
    "TrainingStep.communication": dict,
    hardware.Chip: lambda: hardware.get_chip("H100"),
    models.ModelConfig: lambda: models.get_model("Llama-3-8B"),
    pricing.ServingCost: lambda: pricing.serving_cost(_deployment(), 1.0, 128.0),
    api_prices.PriceSheet: lambda: api_prices.get_price_sheet(api_prices.list_price_sheets()[0]),
    pricing.Assumptions: pricing.Assumptions,
    pricing.Range: lambda: pricing.Range(1.0, 2.0),
    tuple: tuple,
    published.Comparison: published.decode_comparison,
    serving.DecodeStep: lambda: serving.decode_step(_deployment(), 1.0, 128.0),
    deployment.Deployment: _deployment,
    deployment.ChipShares: lambda: deployment.chip_shares(_deployment()),
    measure.MachineRoofline: lambda: measure.MachineRoofline(
        1e12,
        1e10,
        np.array([1.0, 2.0]),
        64,
        np.array([1e4, 2e4]),
        np.array([1e4, 1e4]),
        np.array([1e-6, 1e-6]),
    ),
}


def example(where: str, constraint: Constraint) -> object:
    """The constraint's own typical value, else one from :data:`EXAMPLES`."""
    if constraint.examples():
        return constraint.examples()[0]
    if where in EXAMPLES:
        return EXAMPLES[where]()
    options = constraint.options if isinstance(constraint, AnyOf) else (constraint,)
    for option in options:
        item = getattr(option, "item", None)  # a SequenceOf(Instance(...))
        if isinstance(item, Instance) and item.kind in EXAMPLES:
            return [EXAMPLES[item.kind]()]
        if isinstance(option, Instance) and option.kind in EXAMPLES:
            return EXAMPLES[option.kind]()
    raise AssertionError(f"{where} has no valid example: give its constraint one, or EXAMPLES")


def baseline(obj: Callable[..., Any]) -> dict[str, object]:
    """A valid value for every parameter without a default."""
    call = {}
    for name, (constraint, param) in parameters(obj).items():
        if param.default is inspect.Parameter.empty and param.kind != param.VAR_KEYWORD:
            call[name] = example(f"{obj.__name__}.{name}", constraint)
    return call


def bad_calls(name: str) -> Iterator[tuple[str, str, object]]:
    obj = CALLS[name]
    for param, (constraint, kind) in parameters(obj).items():
        shown = "extra" if kind.kind == kind.VAR_KEYWORD else param
        for value in constraint.bad():
            yield shown, param, value


def call_with(obj: Callable[..., Any], name: str, value: object) -> object:
    kwargs = baseline(obj) | {name: value}
    return obj(**kwargs)


def assert_refused(obj: Callable[..., Any], shown: str, value: object) -> None:
    try:
        call_with(obj, shown, value)
    except (TypeError, ValueError) as error:
        assert shown in str(error), f"{obj.__qualname__}({shown}={value!r}): {error}"
    else:
        pytest.fail(f"{obj.__qualname__} accepted {shown}={value!r}")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_bad_input_is_refused_naming_the_parameter(name: str) -> None:
    obj = CALLS[name]
    for shown, _, value in bad_calls(name):
        assert_refused(obj, shown, value)


def invalid_numbers(constraint: Constraint) -> st.SearchStrategy[object]:
    """Numbers outside a Real or Count range, and arrays hiding one such number."""
    if isinstance(constraint, AnyOf):
        numeric = [o for o in constraint.options if isinstance(o, Real | Count)]
        return invalid_numbers(numeric[0]) if numeric else st.nothing()
    if isinstance(constraint, Count):
        below = st.integers(max_value=constraint.low - 1)
        return below | st.integers(min_value=constraint.high + 1)
    if not isinstance(constraint, Real):
        return st.nothing()
    low, high = constraint.low, constraint.high
    below = st.floats(max_value=low, exclude_max=not constraint.low_open)
    above = (
        st.floats(min_value=high, exclude_min=True) if high < sys.float_info.max else st.nothing()
    )
    scalars = below | above | st.just(math.nan)
    if constraint.scalar:
        return scalars
    return st.tuples(scalars, st.integers(0, 4)).map(lambda p: np.insert(np.ones(4), p[1], p[0]))


NUMERIC = sorted(
    name
    for name, obj in CALLS.items()
    if contract_of(obj) is not None
    and any(
        invalid_numbers(c) is not st.nothing()
        for c, p in parameters(obj).values()
        if p.kind != p.VAR_KEYWORD
    )
)


@pytest.mark.parametrize("name", NUMERIC)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_numbers_out_of_range_are_refused(name: str, data: st.DataObject) -> None:
    numeric = invalid_number_strategies(name)
    param = data.draw(st.sampled_from(sorted(numeric)))
    assert_refused(CALLS[name], param, data.draw(numeric[param]))


@functools.cache
def invalid_number_strategies(name: str) -> dict[str, st.SearchStrategy[object]]:
    """Each numeric parameter of ``CALLS[name]`` -> its ``invalid_numbers`` strategy, built once
    per callable (strategies are immutable; building them for each of the 15 examples was 40%
    of this test's time)."""
    return {
        n: invalid_numbers(c)
        for n, (c, p) in parameters(CALLS[name]).items()
        if p.kind != p.VAR_KEYWORD and invalid_numbers(c) is not st.nothing()
    }


def array_parameters(obj: Callable[..., Any]) -> list[str]:
    def takes_arrays(c: Constraint) -> bool:
        options = c.options if isinstance(c, AnyOf) else (c,)
        return any(isinstance(o, Real) and not o.scalar for o in options)

    return [n for n, (c, p) in parameters(obj).items() if takes_arrays(c)]


SHAPED = sorted(
    n
    for n, obj in CALLS.items()
    if contract_of(obj) is not None
    and len(array_parameters(obj)) >= 2
    and getattr(contract_of(obj), "broadcast", True)
)


@pytest.mark.parametrize("name", SHAPED)
def test_mismatched_shapes_name_both_parameters(name: str) -> None:
    obj = CALLS[name]
    first, second = array_parameters(obj)[:2]
    shaped = {}
    for param, size in ((first, 2), (second, 3)):
        constraint = parameters(obj)[param][0]
        typical = next(e for e in constraint.examples() if isinstance(e, float | np.ndarray))
        shaped[param] = np.full(size, float(np.ravel(typical)[0]))
    with pytest.raises(ValueError, match=rf"{first} \(2,\) and {second} \(3,\) do not broadcast"):
        obj(**(baseline(obj) | shaped))


# ---- valid extremes: a finite result or a clean error, never a crash ----------------------
def extreme_calls(obj: Callable[..., Any]) -> Iterator[tuple[str, object]]:
    for param, (constraint, kind) in parameters(obj).items():
        if kind.kind != kind.VAR_KEYWORD and isinstance(constraint, Real | Count | AnyOf):
            for value in constraint.extremes():
                yield param, value


EXTREMES = sorted(
    n for n, obj in CALLS.items() if n.split(".")[0] not in TIMED and not inspect.isclass(obj)
)


@pytest.mark.parametrize("name", EXTREMES)
def test_valid_extremes_give_a_finite_result_or_a_clean_error(name: str) -> None:
    obj = CALLS[name]
    for param, value in extreme_calls(obj):
        try:
            result = call_with(obj, param, value)
        except (TypeError, ValueError):
            continue  # refused with a message: DoesNotFitError, a loss below the floor...
        assert _finite(result), f"{name}({param}={value!r}) returned {result!r}"


def _finite(result: object) -> bool:
    if isinstance(result, float | np.ndarray) and np.asarray(result).dtype.kind == "f":
        return not np.isnan(result).any()  # inf is a documented answer for a few (no limit)
    return True


# ---- what a contract declares valid, the body accepts -----------------------------------------
def low_edges(constraint: Constraint) -> list[object]:
    """A numeric constraint's typical value and the lowest value it allows (of each numeric
    option of an ``AnyOf``): where a rule stricter than the declared one shows."""
    options = constraint.options if isinstance(constraint, AnyOf) else (constraint,)
    numeric = [o for o in options if isinstance(o, Real | Count)]
    return [v for o in numeric for v in (*o.examples()[:1], *o.extremes()[:1])]


def raised_in(error: BaseException, code: Any) -> bool:
    """Whether ``error`` was raised inside a frame running ``code`` (or below it)."""
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            return True
        tb = tb.tb_next
    return False


#: Rules across a parameter and others (or the model, the deployment) that a body still
#: checks: a value valid on its own, refused with the others at their typical values (a
#: ``where=`` could state each). A function whose typical call breaks one is not probed.
BODY_RULES = {
    ("models.expected_experts_touched", "n_experts"): "experts_per_token <= n_experts",
    ("expert_dispatch.domains_reached", "n_experts"): "n_domains divides n_experts",
    ("expert_dispatch.domains_reached", "max_domains"): "experts_per_token fit max_domains",
    ("paged_kv.kv_packing", "prompt_tokens"): "reserved_tokens > prompt_tokens",
    ("placement.Layout.validate", "n_gpus"): "the layout's GPUs == n_gpus",
    ("serving_modes.deferred_work", "interactive_latency_s"): "above the weight floor",
    ("serving_modes.fleet_scale", "token_latency_s"): "above the weight floor",
}


def body_refusal(obj: Callable[..., Any], body: Any, param: str, value: object) -> str | None:
    """Why the body refused ``param=value`` (the others typical), or None."""
    try:
        call_with(obj, param, value)
    except DoesNotFitError:
        return None
    except (TypeError, ValueError) as error:
        return f"{param}={value!r}: {error}" if raised_in(error, body) else None
    return None


@pytest.mark.parametrize("name", EXTREMES)
def test_a_value_the_contract_declares_valid_is_not_refused_by_the_body(name: str) -> None:
    """A body that refuses a value its contract declares valid has a rule the contract does
    not state (``markup`` declared >= 0 while the body needed >= 1): the common test never
    tries the values between the two. Each numeric parameter at its typical value and at the
    lowest it allows, the others typical, must be computed, refused by the contract itself
    (its constraints, its ``where=`` rule, an overflow) or not fit."""
    obj = CALLS[name]
    body = getattr(obj, "__wrapped__", obj).__code__
    probes = [
        (param, value)
        for param, (constraint, kind) in parameters(obj).items()
        if kind.kind != kind.VAR_KEYWORD
        for value in low_edges(constraint)
    ]
    listed = {param for n, param in BODY_RULES if n == name}
    typical = [body_refusal(obj, body, p, v) for p, v in probes[:1]] if listed else []
    if any(typical):  # the typical call itself breaks a listed rule: nothing to learn
        return
    found = [why for p, v in probes if p not in listed and (why := body_refusal(obj, body, p, v))]
    assert not found, f"{name}: the body refuses what the contract allows: {found}"


def test_the_finder_of_undeclared_rules_finds_one() -> None:
    @contract(markup=Real(low_open=False))
    def price(markup: float) -> float:
        if markup < 1:
            raise ValueError(f"markup must be >= 1; got {markup}")
        return markup

    with pytest.raises(ValueError) as refused:
        price(0.0)
    assert raised_in(refused.value, price.__wrapped__.__code__)
    with pytest.raises(ValueError) as declared:
        price(-1.0)
    assert not raised_in(declared.value, price.__wrapped__.__code__)


def test_each_callable_has_its_own_contract_and_each_parameter_bad_inputs(
    record_property: Callable[[str, object], None],
) -> None:
    """Every public callable and method is checked by a contract of its own, and every
    parameter of every contract is tried with at least one bad value (the counts go to the
    test report: callables, methods, contracts, bad inputs)."""
    contracts = {id(contract_of(obj)) for obj in CALLS.values()}
    untried = [
        f"{name}({param})"
        for name in CALLS
        for param, (constraint, _) in parameters(CALLS[name]).items()
        if not constraint.bad()
    ]
    assert not untried, f"parameters no bad value is generated for: {untried}"
    assert len({id(contract_of(obj)) for obj in CALLABLES.values()}) == len(CALLABLES)
    static = [inspect.getattr_static(cls, attr) for _, cls, attr in METHODS]
    methods = {id(getattr(m, "__func__", m)) for m in static}  # inherited ones shared
    assert len(contracts) == len(CALLABLES) + len(methods)
    bad = sum(len(list(bad_calls(name))) for name in CALLS) + 15 * len(NUMERIC)
    record_property("counts", (len(CALLABLES), len(METHODS), len(contracts), bad))


# ---- the fast paths agree with the full checks --------------------------------------------
def every_constraint() -> Iterator[tuple[str, Constraint, inspect.Parameter]]:
    for name, obj in CALLS.items():
        for param, (constraint, kind) in parameters(obj).items():
            yield f"{name}({param})", constraint, kind


def test_a_quick_yes_is_never_given_to_a_value_the_full_check_refuses() -> None:
    """The wrappers trust ``quick``: every bad and valid example of every declared
    constraint (and arrays with a bad element) must get a quick "no", or a full "yes"."""
    tried = 0
    for where, constraint, _ in every_constraint():
        ok = quick(constraint)
        values = [*constraint.bad(), *constraint.examples(), *constraint.extremes()]
        values += [np.array([1.0, np.nan]), np.array([1.0, -1.0]), np.array([[1.0], [2.0]])]
        for value in values:
            tried += 1
            if ok(value):
                assert constraint.problem(value) is None, f"{where}: quick yes for {value!r}"
    assert tried > 5000


def test_the_result_check_looks_at_each_field_not_their_sum() -> None:
    """Two finite fields near 9e307 add up to inf: the result is finite all the same (the
    check once added a record's fields up and reported an overflow that did not happen)."""

    @dataclass(frozen=True)
    @checked(first=RESULT, second=RESULT)
    class Pair:
        first: Any
        second: Any

    @contract(x=Real(high=sys.float_info.max), grow=Real(high=sys.float_info.max))
    def pair(x: float, grow: float = 1.0) -> Pair:
        return Pair(x, np.full(2, x * grow))

    assert pair(9e307).first == 9e307  # three fields of 9e307: their sum is inf
    assert finite(Pair(9e307, np.full(2, 9e307))) and finite(np.full(3, 9e307))
    assert not finite(np.array([9e307, np.inf])) and not finite([1.0, np.array([np.nan, 1.0])])
    assert finite(np.array([np.inf, -np.inf]), infinite_ok=True)  # a NaN sum, no NaN in it
    with pytest.raises(NotFiniteError, match=r"pair\(\): x=9e\+307, grow=10\.0 is too extreme"):
        pair(9e307, grow=10.0)


def test_every_default_meets_its_parameter_s_constraint() -> None:
    """The wrappers skip a parameter left at its default: the default must be valid."""
    for where, constraint, param in every_constraint():
        if param.default is not inspect.Parameter.empty:
            assert constraint.problem(param.default) is None, f"{where} = {param.default!r}"


# ---- a body does not check again what its contract checks -----------------------------------
#: The ``_checks`` helpers that validate an argument (``as_floats`` only converts one).
HELPERS = {"positive", "positive_int", "choice"}
ARGUMENT = {"choice": 1}  # where each helper takes the value: (name, value, ...)
#: Rules no contract can state, across the argument and the instance it is asked of.
ACROSS = {"peak"}  # Chip.peak(dtype): a dtype this chip has a peak for


def _body_checks(tree: ast.AST) -> Iterator[tuple[ast.FunctionDef, str, str, int]]:
    """(function, helper, parameter, line) for each helper call on a bare parameter in the
    body of a ``@contract`` function (nested functions and reassigned names left out)."""
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or not any(
            isinstance(d, ast.Call) and getattr(d.func, "id", "") == "contract"
            for d in fn.decorator_list
        ):
            continue
        params = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
        assigned = {
            t.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        stack: list[ast.AST] = list(fn.body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.FunctionDef | ast.Lambda | ast.ClassDef):
                continue
            stack.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in HELPERS:
                helper = node.func.id  # type: ignore[attr-defined]
                args = node.args
                value = args[ARGUMENT.get(helper, 1)] if len(args) > 1 else None
                if isinstance(value, ast.Name) and value.id in params - assigned:
                    yield fn, helper, value.id, node.lineno


def test_no_body_checks_a_parameter_again() -> None:
    """A contracted function's parameters are checked once, by its contract: a body that
    calls ``positive(name, name)`` pays for the check twice on every call (or, where its rule
    is stricter, hides that rule from the contract and from the common test)."""
    root = Path(llmmath.__file__).parent
    found = [
        f"{path.relative_to(root)}:{line} {fn.name}(): {helper}({param!r})"
        for path in sorted(root.rglob("*.py"))
        for fn, helper, param, line in _body_checks(ast.parse(path.read_text()))
        if fn.name not in ACROSS
    ]
    assert not found, f"state these rules in the contract instead: {found}"


def test_the_body_check_finder_finds_one() -> None:
    source = "@contract(x=AMOUNT)\ndef f(x, y):\n    y = 1\n    return positive('x', x) + y\n"
    assert [(h, p) for _, h, p, _ in _body_checks(ast.parse(source))] == [("positive", "x")]

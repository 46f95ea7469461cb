"""Declared contracts: every public callable states its parameters' constraints once.

In the manner of scikit-learn's ``validate_params``: ``@contract(batch=Real(), chip=CHIP)``
checks each argument on entry and fails with a message that names the function, the
parameter, what is allowed and what was given. Array arguments of one call must broadcast
together (the message names both). A result that is not finite (an overflow from finite
inputs) is an error naming the input that caused it, never an inf or NaN handed back.
Result records declare their fields with :func:`checked`, validated on construction.

>>> from llmmath.contracts import Real, contract
>>> @contract(x=Real())
... def double(x):
...     return 2 * x
>>> double(-1.0)
Traceback (most recent call last):
...
ValueError: contracts.double(): x must be finite and > 0 and <= 1e+30; got -1.0
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from types import FunctionType
from typing import Any, TypeVar

import numpy as np

from ._checks import NotFiniteError
from ._constraints import (
    MAX_CHIPS,
    MAX_COUNT,
    MAX_REAL,
    MAX_REPEATS,
    AnyOf,
    Constraint,
    Count,
    Flag,
    Function,
    Instance,
    Later,
    MappingOf,
    Nothing,
    OneOf,
    Optional,
    PathLike,
    Real,
    SequenceOf,
    Text,
    describe,
    span,
)

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


# ---- functions --------------------------------------------------------------------------
# ---- the constraints most parameters share ------------------------------------------------
#: An amount (bytes, FLOPs, tokens, seconds, dollars): finite, >= 0, a number or an array.
AMOUNT = Real(low_open=False)
#: The same, > 0 (a batch, a size, a rate).
POSITIVE = Real()
#: A single amount >= 0 or > 0.
SCALAR = Real(low_open=False, scalar=True)
SCALAR_POSITIVE = Real(scalar=True)
#: An efficiency or share in (0, 1], a number or an array; and a single one.
FRACTION = Real(high=1.0)
SCALAR_FRACTION = Real(high=1.0, scalar=True)
#: A computed amount in a result record: finite and >= 0, however large.
RESULT = Real(low_open=False, high=sys.float_info.max)
#: The same where inf means "no limit" (a batch nothing bounds, a loss never reached).
RESULT_OR_INF = Real(low_open=False, high=np.inf)
#: A count that may be zero (experts of a dense model, shared experts).
WHOLE = Count(low=0)
#: A count of chips (a degree of parallelism, a group's size).
CHIPS = Count(high=MAX_CHIPS)


class NotANumber(Constraint):
    """Only NaN (an amount that is undefined: ``AnyOf((RESULT, NotANumber()))``)."""

    allowed = "NaN"

    def problem(self, value: object) -> tuple[type[Exception], str, str] | None:
        ok = isinstance(value, float | np.floating) and value != value
        return None if ok else self.refuse(TypeError, value)

    def bad(self) -> tuple[object, ...]:
        return ()


#: Only NaN: ``AnyOf((RESULT, NOT_A_NUMBER))`` is an amount that may be undefined (a
#: crossover past the model's longest context), in a record field listed in ``nan_ok``.
NOT_A_NUMBER = NotANumber()
#: A name, and a free-text note (a source, a date) that may be empty.
NAME = Text()
NOTE = Text(empty_ok=True)
FLAG = Flag()


#: Whether this thread is inside a checked call (inner calls and records run unchecked).
_STATE = threading.local()


#: What a parameter of a common name accepts wherever it appears (``chip``, ``batch``,
#: ``weight_dtype``...), registered by the module that owns the kind; a contract declares
#: only its other parameters, or overrides one of these.
VOCABULARY: dict[str, Constraint] = {}


def vocabulary(**constraints: Constraint) -> None:
    """Register what parameters of these names accept, everywhere in the package."""
    VOCABULARY.update(constraints)


def resolve(
    where: str, params: Mapping[str, inspect.Parameter], declared: dict[str, Constraint]
) -> dict[str, Constraint]:
    """Every parameter's constraint: declared, else from :data:`VOCABULARY`, else (for a
    ``bool``) :data:`FLAG`; a parameter whose default is ``None`` also accepts ``None``. A
    parameter with none is an error at import, so no public callable goes unchecked."""
    unknown = sorted(set(declared) - set(params))
    missing = [n for n in params if n not in declared and n not in VOCABULARY]
    missing = [n for n in missing if params[n].annotation not in ("bool", bool)]
    missing = [n for n in missing if n not in ("self", "cls")]
    if unknown or missing:
        raise TypeError(f"contract for {where}: no parameter {unknown}; undeclared {missing}")
    constraints = {}
    for name, param in params.items():
        if name in ("self", "cls"):
            continue
        constraint = declared.get(name) or VOCABULARY.get(name) or FLAG  # FLAG: a bool
        if param.default is None and constraint.problem(None) is not None:
            constraint = Optional(constraint)
        constraints[name] = constraint
    return constraints


class Contract:
    """One callable's declared constraints, checked on every call."""

    def __init__(
        self, func: Callable[..., Any], constraints: dict[str, Constraint], infinite_ok: bool
    ) -> None:
        self.func = func
        self.infinite_ok = infinite_ok
        self.name = f"{func.__module__.removeprefix('llmmath.')}.{func.__qualname__}()"
        self.signature = inspect.signature(func)
        params = self.signature.parameters
        self.constraints = resolve(self.name, params, constraints)
        self.positional = [
            name
            for name, p in params.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        self.varkw = next((n for n, p in params.items() if p.kind == p.VAR_KEYWORD), None)
        self.arrays = [n for n, c in self.constraints.items() if _takes_arrays(c)]

    def check_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Each argument against its constraint, then the array arguments' shapes."""
        for name, value in zip(self.positional, args, strict=False):
            self._check(name, value)
        for name, value in kwargs.items():
            if name in self.constraints and name != self.varkw:
                self._check(name, value)
            elif self.varkw is not None:
                self._check(self.varkw, value, shown=name)
        if len(self.arrays) > 1:
            self._check_shapes(args, kwargs)

    def _check(self, name: str, value: object, shown: str | None = None) -> None:
        constraint = self.constraints.get(name)
        problem = constraint.problem(value) if constraint is not None else None
        if constraint is not None and problem is not None:
            message = constraint.message(f"{self.name}: {shown or name}", value, problem)
            raise problem[0](message)

    def _check_shapes(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        given = dict(zip(self.positional, args, strict=False)) | kwargs
        check_shapes(self.name, [(n, given[n]) for n in self.arrays if n in given])

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Check at the package's boundary only: a call from inside another checked call
        (a solver's inner loop) runs unchecked, its caller's contract having checked what
        came in and checking what goes out."""
        if getattr(_STATE, "inside", False):
            return self.func(*args, **kwargs)
        self.check_arguments(args, kwargs)
        _STATE.inside = True
        try:
            result = self.func(*args, **kwargs)
        except NotFiniteError as error:
            _STATE.inside = False
            raise self._overflow(args, kwargs, str(error)) from error
        finally:
            _STATE.inside = False
        if not _finite(result, self.infinite_ok):
            raise self._overflow(args, kwargs, "inf or NaN")
        return result

    def _overflow(self, args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> NotFiniteError:
        culprits = self._culprits(args, kwargs)
        named = ", ".join(f"{n}={describe(v)}" for n, v in culprits.items())
        return NotFiniteError(
            f"{self.name}: {named} is too extreme: the result overflows ({what}); "
            "use values of a realistic size"
        )

    def _culprits(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, object]:
        """The numeric inputs that, set back to a typical value, make the result finite."""
        bound = self.signature.bind(*args, **kwargs).arguments
        numeric = {n: v for n, v in bound.items() if _is_numeric(self.constraints.get(n))}
        found = {}
        for name in numeric:
            typical = self.constraints[name].examples()[0]
            try:
                result = self.func(**(bound | {name: typical}))
            except Exception:
                continue
            if _finite(result, self.infinite_ok):
                found[name] = numeric[name]
        return found or numeric or dict(bound)


def check_shapes(where: str, named: list[tuple[str, Any]]) -> None:
    """The arrays among ``named`` (name, value) pairs must broadcast together."""
    shaped = [(n, np.shape(v)) for n, v in named]
    shaped = [(n, s) for n, s in shaped if s]
    for index, (name, shape) in enumerate(shaped[1:], start=1):
        try:
            np.broadcast_shapes(*(s for _, s in shaped[: index + 1]))
        except ValueError:
            others = " and ".join(f"{n} {s}" for n, s in shaped[:index])
            raise ValueError(
                f"{where}: the shapes of {others} and {name} {shape} do not broadcast "
                "together (use matching shapes, or [:, None] for a grid)"
            ) from None


def _takes_arrays(constraint: Constraint) -> bool:
    if isinstance(constraint, AnyOf):
        return any(_takes_arrays(option) for option in constraint.options)
    return isinstance(constraint, Real) and not constraint.scalar


def _is_numeric(constraint: Constraint | None) -> bool:
    if isinstance(constraint, AnyOf):
        return any(_is_numeric(option) for option in constraint.options)
    return isinstance(constraint, Real | Count)


def _finite(result: object, infinite_ok: bool = False) -> bool:
    """No inf or NaN in ``result`` (a number, an array, a result record, or a tuple, list or
    dict of them); with ``infinite_ok``, no NaN. One pass per array: a sum is finite exactly
    when every term is (the quantities here are >= 0 and far below 1e300)."""
    ok = (lambda x: not math.isnan(x)) if infinite_ok else math.isfinite
    if isinstance(result, float | np.floating):
        return ok(result)
    if isinstance(result, np.ndarray) and result.dtype.kind == "f":
        return ok(result.item() if result.size == 1 else np.add.reduce(result, axis=None))
    if isinstance(result, tuple | list):
        return all(_finite(item, infinite_ok) for item in result)
    if isinstance(result, dict):
        return all(_finite(item, infinite_ok) for item in result.values())
    if hasattr(type(result), "__contract__") and hasattr(result, "__dict__"):
        # A record built inside the call: its numbers (records it holds, such as the
        # Deployment, were checked when they came in).
        spec = getattr(type(result), "__contract__", None)
        skip: frozenset[str] = getattr(spec, "nan_ok", frozenset())
        fields = [v for k, v in vars(result).items() if k not in skip and isinstance(v, _NUMBERS)]
        return all(_finite(value, infinite_ok) for value in fields)
    return True


_NUMBERS = (float, np.floating, np.ndarray, dict, tuple, list)


def contract(*, infinite_ok: bool = False, **constraints: Constraint) -> Callable[[F], F]:
    """Declare ``func``'s parameters' constraints; check them (and the result) on each call.

    The result must be finite, or, with ``infinite_ok`` (e.g. a batch limit where nothing
    limits it), at least not NaN.

    The wrapper shares ``func``'s globals, so doctest and ``literalinclude`` still find it.
    """

    def decorate(func: F) -> F:
        spec = Contract(func, constraints, infinite_ok)
        call = spec.call

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return call(args, kwargs)

        code, closure = wrapper.__code__, wrapper.__closure__
        rebuilt = FunctionType(code, func.__globals__, func.__name__, None, closure)
        functools.update_wrapper(rebuilt, func)
        rebuilt.__contract__ = spec  # type: ignore[attr-defined]
        return rebuilt  # type: ignore[return-value]

    return decorate


# ---- result records ---------------------------------------------------------------------
class RecordContract:
    """A record's declared fields, checked in ``__post_init__``."""

    def __init__(
        self,
        kind: type,
        constraints: dict[str, Constraint],
        broadcast: bool,
        nan_ok: tuple[str, ...] = (),
    ) -> None:
        self.kind = kind
        self.broadcast = broadcast
        self.nan_ok = frozenset(nan_ok)
        self.declared = constraints
        self._constraints: dict[str, Constraint] | None = None

    @property
    def constraints(self) -> dict[str, Constraint]:
        """Every field's constraint (resolved on first use: the dataclass is built by then)."""
        if self._constraints is None:
            params = inspect.signature(self.kind).parameters
            self._constraints = resolve(self.kind.__name__, params, self.declared)
        return self._constraints

    def check(self, record: object) -> None:
        if getattr(_STATE, "inside", False):
            return  # built inside a checked call, whose contract checks its result
        label = getattr(record, "name", None)
        where = self.kind.__name__ + (f" {label}" if isinstance(label, str) else "")
        for name, constraint in self.constraints.items():
            value = getattr(record, name)
            problem = constraint.problem(value)
            if problem is not None:
                kind = problem[0]
                if isinstance(value, float | np.floating | np.ndarray) and not _finite(value):
                    kind = NotFiniteError  # an overflow upstream: the caller's contract names it
                raise kind(constraint.message(f"{where}: {name}", value, problem))
        if self.broadcast:
            arrays = [
                (n, getattr(record, n)) for n, c in self.constraints.items() if _takes_arrays(c)
            ]
            check_shapes(where, arrays)


def checked(
    *, broadcast: bool = True, nan_ok: tuple[str, ...] = (), **constraints: Constraint
) -> Callable[[C], C]:
    """Validate a (frozen) dataclass's fields on construction; place it under ``@dataclass``.

    A record built inside a function from values that overflowed raises :class:`NotFiniteError`,
    which that function's contract reports under the input that caused it. Its array fields
    must broadcast together unless ``broadcast=False`` (a record of rows by columns). The
    fields named in ``nan_ok`` may be NaN (undefined) in a function's result.
    """

    def decorate(cls: C) -> C:
        spec = RecordContract(cls, constraints, broadcast, nan_ok)
        original = cls.__dict__.get("__post_init__")

        def __post_init__(self: Any) -> None:  # noqa: N807 (the dataclass hook)
            spec.check(self)
            if original is not None:
                original(self)

        cls.__post_init__ = __post_init__  # type: ignore[attr-defined]
        cls.__contract__ = spec  # type: ignore[attr-defined]
        return cls

    return decorate


def each(constraint: Constraint, names: str) -> dict[str, Any]:
    """The same constraint for several space-separated names: ``**each(RESULT, "a b")``."""
    return dict.fromkeys(names.split(), constraint)


vocabulary(
    **each(FRACTION, "flops_efficiency bandwidth_efficiency network_efficiency mfu utilisation"),
    memory_fraction=FRACTION,
    **each(CHIPS, "n_chips tp dp pp ep ep_width per_domain"),
    **each(NOTE, "source source_date latency_source"),
    repeats=Count(high=MAX_REPEATS),
    batch=POSITIVE,
    context=AMOUNT,
    usd_per_chip_hour=POSITIVE,
    allow_overflow=FLAG,
    markup=AMOUNT,
    context_gap_tokens=AMOUNT,
)


def record_fields(cls: type) -> list[str]:
    """Every init field of a dataclass (the common test checks each one is declared)."""
    return [f.name for f in fields(cls) if f.init] if is_dataclass(cls) else []


__all__ = [
    "AMOUNT",
    "CHIPS",
    "FLAG",
    "FRACTION",
    "MAX_CHIPS",
    "MAX_COUNT",
    "MAX_REAL",
    "MAX_REPEATS",
    "NAME",
    "NOTE",
    "NOT_A_NUMBER",
    "POSITIVE",
    "RESULT",
    "RESULT_OR_INF",
    "SCALAR",
    "SCALAR_FRACTION",
    "SCALAR_POSITIVE",
    "VOCABULARY",
    "WHOLE",
    "AnyOf",
    "Constraint",
    "Contract",
    "Count",
    "Flag",
    "Function",
    "Instance",
    "Later",
    "MappingOf",
    "NotANumber",
    "NotFiniteError",
    "Nothing",
    "OneOf",
    "Optional",
    "PathLike",
    "Real",
    "RecordContract",
    "SequenceOf",
    "Text",
    "checked",
    "contract",
    "describe",
    "each",
    "record_fields",
    "span",
    "vocabulary",
]

"""Declared contracts: every public callable states its parameters' constraints once.

In the manner of scikit-learn's ``validate_params``: ``@contract(batch=Real(), chip=CHIP)``
checks each argument on entry and fails with a message that names the function, the
parameter, what is allowed and what was given. Array arguments of one call must broadcast
together (the message names both). A result that is not finite (an overflow from finite
inputs) is an error naming the input that caused it, never an inf or NaN handed back.
Result records declare their fields with :func:`checked`, validated on construction.

>>> from llmmath.core._constraints import Real
>>> from llmmath.core.contracts import contract
>>> @contract(x=Real())
... def double(x):
...     return 2 * x
>>> double(-1.0)
Traceback (most recent call last):
...
ValueError: contracts.double(): x must be finite and > 0 and <= 1e+30; got -1.0
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import fields, is_dataclass
from typing import Any, NoReturn, TypeVar

import numpy as np

from llmmath.core._checks import NotFiniteError
from llmmath.core._constraints import (
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
from llmmath.core._fast import PLAIN, RECORDS, Quick, check_shapes, quick, wrap
from llmmath.core._fast import finite as _finite
from llmmath.core._fast import is_numeric as _is_numeric
from llmmath.core._fast import takes_arrays as _takes_arrays

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
#: The same as a number or an array (a cluster's size, swept): a whole number, 2.5 is refused.
CHIP_COUNT = Real(low=1.0, low_open=False, high=MAX_CHIPS, integer=True)
#: Tokens of a prompt or a prefix, a number or an array: >= 1 (a pass over no token is none).
PROMPT = Real(low=1.0, low_open=False)
SCALAR_PROMPT = Real(low=1.0, low_open=False, scalar=True)
#: A price over its cost (a markup): >= 1, a price at or above cost.
MARKUP = Real(low=1.0, low_open=False)
SCALAR_MARKUP = Real(low=1.0, low_open=False, scalar=True)
#: A model's parameters: >= 1e6 (no model the course's formulas describe is smaller).
PARAMS = Real(low=1e6, low_open=False)
#: A single length in tokens (a context, a prompt): a whole number >= 1.
TOKENS = Real(low=1.0, low_open=False, high=MAX_COUNT, integer=True, scalar=True, unit="tokens")


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


#: Whether this thread (or task) is inside a checked call: inner calls and records run
#: unchecked. A context variable: per thread like a thread-local, and faster to read.
INSIDE: ContextVar[bool] = ContextVar("llmmath_inside_a_checked_call", default=False)


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


#: A message names a function as a reader calls it: ``serving.decode_step()``, not by the layer
#: package it lives in (``llmmath.core.serving``).
_LAYER_PREFIX = re.compile(r"^llmmath\.(?:(?:core|beyond|validation|display)\.)?")


def short_module(module: str) -> str:
    """``llmmath.core.serving`` -> ``serving``; ``llmmath.display.plots.moe`` -> ``plots.moe``."""
    return _LAYER_PREFIX.sub("", module)


class Contract:
    """One callable's declared constraints, checked on every call from outside the package.

    Its wrapper (:func:`llmmath.core._fast.wrap`, a closure) checks at the package's boundary
    only. A call made from inside another checked call (a solver's inner
    loop, ``decode_step`` asking ``roofline_time``) runs unchecked: its arguments are the
    outer call's checked arguments or values the package computed from them, and what it
    returns flows into the outer call's result, which is checked for inf and NaN. So a body
    never checks its arguments again (``tests/model/test_contracts.py`` walks every body). A rule
    across parameters that no single constraint can state is the contract's ``where``: a
    function of some of the parameters (by name) that returns what is wrong, or None.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        constraints: dict[str, Constraint],
        infinite_ok: bool,
        where: Callable[..., str | None] | None = None,
    ) -> None:
        self.func = func
        self.infinite_ok = infinite_ok
        self.where = where
        self.name = f"{short_module(func.__module__)}.{func.__qualname__}()"
        self.signature = inspect.signature(func)
        params = self.signature.parameters
        self.constraints = resolve(self.name, params, constraints)
        self.varkw = next((n for n, p in params.items() if p.kind == p.VAR_KEYWORD), None)
        self.arrays = [n for n, c in self.constraints.items() if _takes_arrays(c)]
        rule = inspect.signature(where).parameters if where else {}
        self.where_names = tuple(n for n in rule if n in params)  # others keep their default
        unknown = sorted(n for n, p in rule.items() if n not in params and p.default is p.empty)
        if unknown:
            raise TypeError(f"contract for {self.name}: where= names no parameter {unknown}")

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """A call's arguments by name, defaults included (the ``**`` ones flat)."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        named = dict(bound.arguments)
        return named | named.pop(self.varkw, {}) if self.varkw else named

    def check_where(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Raise the ``where`` rule's complaint about these (each valid) arguments, if any."""
        named = self.arguments(args, kwargs)
        problem = self.where(**{n: named[n] for n in self.where_names})  # type: ignore[misc]
        if problem is not None:
            raise ValueError(f"{self.name}: {problem}")

    def fail(self, name: str, value: object, shown: str | None = None) -> None:
        """Raise the error for ``value`` of ``name``, if it has a problem (the quick test was
        only unsure)."""
        constraint = self.constraints[name]
        problem = constraint.problem(value)
        if problem is not None:
            message = constraint.message(f"{self.name}: {shown or name}", value, problem)
            raise problem[0](message)

    def shapes(self, named: tuple[tuple[str, Any], ...]) -> None:
        """The array arguments must broadcast together."""
        check_shapes(self.name, list(named))

    def overflowed(
        self, arguments: dict[str, Any], what: str, error: BaseException | None
    ) -> NoReturn:
        """Raise the overflow of a call with these (valid) arguments, naming the culprits."""
        culprits = self._culprits(arguments)
        named = ", ".join(f"{n}={describe(v)}" for n, v in culprits.items())
        raise NotFiniteError(
            f"{self.name}: {named} is too extreme: the result overflows ({what}); "
            "use values of a realistic size"
        ) from error

    def _culprits(self, arguments: dict[str, Any]) -> dict[str, object]:
        """The numeric inputs that, set back to a typical value, make the result finite
        (``arguments`` by name; the ``**`` ones flat, under their own keys)."""
        constraint = {
            n: self.constraints.get(n, self.constraints.get(self.varkw or "")) for n in arguments
        }
        numeric = {n: v for n, v in arguments.items() if _is_numeric(constraint[n])}
        found = {}
        for name in numeric:
            typical = constraint[name].examples()[0]  # type: ignore[union-attr]
            try:
                result = self.func(**(arguments | {name: typical}))
            except Exception:
                continue
            if _finite(result, self.infinite_ok):
                found[name] = numeric[name]
        return found or numeric or dict(arguments)


def contract(
    *,
    infinite_ok: bool = False,
    own_check: bool = False,
    where: Callable[..., str | None] | None = None,
    **constraints: Constraint,
) -> Callable[[F], F]:
    """Declare ``func``'s parameters' constraints; check them (and the result) on each call.

    The result must be finite, or, with ``infinite_ok`` (e.g. a batch limit where nothing
    limits it), at least not NaN. ``where`` states a rule across parameters: a function taking
    some of them by name (each already valid on its own) that returns what is wrong with them
    together, or None; its complaint is a ``ValueError`` naming ``func``.

    With ``own_check`` the function is left unwrapped: a lookup (``get_model``) that answers
    a known name or an instance at once and otherwise calls :func:`refuse`, which raises the
    contract's error. The package calls its lookups dozens of times a step, where a wrapper's
    frame would cost more than the lookup.

    The wrapper shares ``func``'s globals, so doctest and ``literalinclude`` still find it.
    """

    def decorate(func: F) -> F:
        spec = Contract(func, constraints, infinite_ok, where)
        if own_check:
            func.__contract__ = spec  # type: ignore[attr-defined]
            return func
        wrapper = wrap(func, spec, INSIDE, NotFiniteError)
        wrapper.__contract__ = spec
        return wrapper  # type: ignore[no-any-return]

    return decorate


def refuse(func: Callable[..., Any], name: str, value: object) -> None:
    """Raise the error ``func``'s contract gives for ``value`` of ``name``, if it has one (a
    function with ``own_check`` calls this for what its quick answer did not recognise)."""
    func.__contract__.fail(name, value)  # type: ignore[attr-defined]


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
        self._quick: list[tuple[str, Quick]] = []
        self._arrays: list[str] = []
        self._numeric: tuple[str, ...] | None = None

    @property
    def constraints(self) -> dict[str, Constraint]:
        """Every field's constraint (resolved on first use: the dataclass is built by then)."""
        if self._constraints is None:
            params = inspect.signature(self.kind).parameters
            self._constraints = resolve(self.kind.__name__, params, self.declared)
            self._quick = [(name, quick(c)) for name, c in self._constraints.items()]
            self._arrays = [n for n, c in self._constraints.items() if _takes_arrays(c)]
        return self._constraints

    def numeric_fields(self, fields: dict[str, Any]) -> tuple[str, ...]:
        """The fields whose result values are numbers to check (all but ``nan_ok`` ones and
        those holding records or names, which were checked when they came in)."""
        if self._numeric is None:
            self._numeric = tuple(
                name
                for name, value in fields.items()
                if name not in self.nan_ok and isinstance(value, _NUMBERS)
            )
        return self._numeric

    def check(self, record: object) -> None:
        constraints = self.constraints
        for name, ok in self._quick:
            if not ok(getattr(record, name)):
                self._fail(record, name, constraints[name])
        if self.broadcast and len(self._arrays) > 1:
            arrays = [(n, getattr(record, n)) for n in self._arrays]
            if sum(type(v) not in PLAIN for _, v in arrays) > 1:
                check_shapes(self._where(record), arrays)

    def _where(self, record: object) -> str:
        label = getattr(record, "name", None)
        return self.kind.__name__ + (f" {label}" if isinstance(label, str) else "")

    def _fail(self, record: object, name: str, constraint: Constraint) -> None:
        value = getattr(record, name)
        problem = constraint.problem(value)
        if problem is not None:
            kind = problem[0]
            if isinstance(value, float | np.floating | np.ndarray) and not _finite(value):
                kind = NotFiniteError  # an overflow upstream: the caller's contract names it
            raise kind(constraint.message(f"{self._where(record)}: {name}", value, problem))


_NUMBERS = (float, np.floating, np.ndarray, dict, tuple, list)


def checked(
    *,
    broadcast: bool = True,
    nan_ok: tuple[str, ...] = (),
    inside: bool = False,
    **constraints: Constraint,
) -> Callable[[C], C]:
    """Validate a (frozen) dataclass's fields on construction; place it under ``@dataclass``.

    A record built inside a function from values that overflowed raises :class:`NotFiniteError`,
    which that function's contract reports under the input that caused it. Its array fields
    must broadcast together unless ``broadcast=False`` (a record of rows by columns). The
    fields named in ``nan_ok`` may be NaN (undefined) in a function's result. A record that
    describes a setup rather than a result (a layout, a deployment) is checked ``inside`` a
    checked call too: a function may build it from arguments its own contract declared less
    strictly (an efficiency that may be an array, a dtype from a table), so its
    ``__post_init__`` need not check its fields again.
    """

    def decorate(cls: C) -> C:
        spec = RecordContract(cls, constraints, broadcast, nan_ok)
        original = cls.__dict__.get("__post_init__")

        def __post_init__(self: Any) -> None:  # noqa: N807 (the dataclass hook)
            if inside and INSIDE.get():
                spec.check(self)
                if original is not None:
                    original(self)
                return
            if INSIDE.get():
                if original is not None:
                    original(self)
                return  # built inside a checked call, whose contract checks its result
            spec.check(self)
            if original is not None:
                # Its fields are checked: what it calls on them runs as inside a call.
                token = INSIDE.set(True)
                try:
                    original(self)
                finally:
                    INSIDE.reset(token)

        cls.__post_init__ = __post_init__  # type: ignore[attr-defined]
        cls.__contract__ = spec  # type: ignore[attr-defined]
        RECORDS[cls] = spec
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
    markup=MARKUP,
    context_gap_tokens=POSITIVE,  # the tokens between two contexts
    params=PARAMS,
)


def record_fields(cls: type) -> list[str]:
    """Every init field of a dataclass (the common test checks each one is declared)."""
    return [f.name for f in fields(cls) if f.init] if is_dataclass(cls) else []


__all__ = [
    "AMOUNT",
    "CHIPS",
    "CHIP_COUNT",
    "FLAG",
    "FRACTION",
    "MARKUP",
    "MAX_CHIPS",
    "MAX_COUNT",
    "MAX_REAL",
    "MAX_REPEATS",
    "NAME",
    "NOTE",
    "NOT_A_NUMBER",
    "PARAMS",
    "POSITIVE",
    "PROMPT",
    "RESULT",
    "RESULT_OR_INF",
    "SCALAR",
    "SCALAR_FRACTION",
    "SCALAR_MARKUP",
    "SCALAR_POSITIVE",
    "SCALAR_PROMPT",
    "TOKENS",
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
    "refuse",
    "span",
    "vocabulary",
]

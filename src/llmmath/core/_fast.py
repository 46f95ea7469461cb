"""The contracts' fast paths: a quick yes per constraint, one plain wrapper per function, and
the result check.

A contract is checked on every call from outside the package, so its cost is paid by every
slider move. Two things keep it to a few microseconds:

* :func:`quick` turns a constraint into a predicate that answers ``True`` at once for the
  common valid values (a plain float in range, a known name, an instance). ``False`` only
  means "not sure": the caller then asks the constraint's full ``problem()``, which either
  finds nothing (the value is fine after all) or builds the error. A quick ``True`` is never
  given for a value ``problem()`` refuses (``tests/model/test_contracts.py`` checks this).
* :func:`wrap` builds, once per function, a closure that checks each argument by its position
  or keyword (no ``inspect.bind`` on the common path).
* :func:`finite` checks a result for inf and NaN field by field, one sum per array.
"""

from __future__ import annotations

import functools
import inspect
import math
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from llmmath.core._constraints import (
    AnyOf,
    Constraint,
    Count,
    Flag,
    Instance,
    Nothing,
    OneOf,
    Real,
    Text,
)

Quick = Callable[[object], bool]

#: Number types compared directly (bool is excluded by the exact type test).
_PLAIN = frozenset({float, int, np.float64, np.int64})
#: Values that never have a shape to compare (numbers, names, None).
PLAIN = _PLAIN | {bool, str, type(None)}
_LOWEST, _HIGHEST = np.minimum.reduce, np.maximum.reduce


def _unsure(value: object) -> bool:
    return False


def _real(c: Real) -> Quick:
    low, high, low_open, integer, scalar = c.low, c.high, c.low_open, c.integer, c.scalar

    def within(lowest: Any, highest: Any) -> bool:
        # NaN fails every comparison: it goes to the full check, which names it.
        return bool((low < lowest if low_open else low <= lowest) and highest <= high)

    def ok(value: object) -> bool:
        kind = type(value)
        if kind in _PLAIN and not c.ndarray:
            return within(value, value) and (not integer or value % 1 == 0)  # type: ignore[operator]
        if kind is np.ndarray and not integer:
            array: np.ndarray = value  # type: ignore[assignment]
            if array.dtype.kind != "f" or not array.size or (scalar and array.ndim):
                return False
            return within(_LOWEST(array, axis=None), _HIGHEST(array, axis=None))
        return False

    return ok


def _count(c: Count) -> Quick:
    low, high = c.low, c.high
    return lambda value: type(value) is int and low <= value <= high


def _one_of(c: OneOf) -> Quick:
    names = c.names
    if callable(names):  # a growing set (chips the reader added): asked each time, unsorted
        return lambda value: type(value) is str and value in names()
    known = frozenset(names)
    return lambda value: type(value) is str and value in known


def _any_of(c: AnyOf) -> Quick:
    options = tuple(quick(option) for option in c.options)
    if len(options) == 2:
        first, second = options
        return lambda value: first(value) or second(value)
    return lambda value: any(option(value) for option in options)


def _text(c: Text) -> Quick:
    empty_ok = c.empty_ok
    return lambda value: type(value) is str and (empty_ok or bool(value.strip()))


def quick(constraint: Constraint) -> Quick:
    """A predicate that is ``True`` only for values ``constraint`` accepts (see module doc)."""
    if isinstance(constraint, Real):
        return _real(constraint)
    if isinstance(constraint, Count):
        return _count(constraint)
    if isinstance(constraint, Flag):
        return lambda value: value is True or value is False
    if isinstance(constraint, OneOf):
        return _one_of(constraint)
    if isinstance(constraint, Instance):
        kind = constraint.kind
        return lambda value: isinstance(value, kind)
    if isinstance(constraint, Text):
        return _text(constraint)
    if isinstance(constraint, Nothing):
        return lambda value: value is None
    if isinstance(constraint, AnyOf):
        return _any_of(constraint)
    return _unsure  # sequences, mappings, paths, callables: the full check, every time


# ---- the wrapper ----------------------------------------------------------------------------
def wrap(func: Callable[..., Any], spec: Any, inside: Any, not_finite: type[Exception]) -> Any:
    """``func``'s checking wrapper: a plain closure (``functools.wraps``).

    ``spec`` (a :class:`~llmmath.core.contracts.Contract`) gives the constraints, the array
    parameters whose shapes must broadcast, the cross-parameter rule ``where``, and ``fail``
    and ``overflowed``; ``inside`` the context variable that says whether this thread is
    inside a checked call. The wrapper, in order: inside another checked call, call ``func``
    at once; else check each argument (a quick test, the full one only when unsure; a default
    is valid by declaration), the shapes and the ``where`` rule, call ``func`` marked inside,
    and check the result. An error it raises shows this file and the line that raised it.
    """
    params = list(spec.signature.parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY) for p in params):
        raise TypeError(f"contract for {spec.name}: declare each parameter by name, no * or /")
    constraints = spec.constraints
    # (name, quick test or None, default, whether its shape counts) by position and keyword.
    arrays = set(spec.arrays) if len(spec.arrays) > 1 else set()
    rules = {
        p.name: (p.name, _quick(constraints.get(p.name)), _default(p), p.name in arrays)
        for p in params
    }
    positional = [rules[p.name] for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
    varkw = spec.varkw
    extra = (varkw, quick(constraints[varkw]), _NO_DEFAULT, False) if varkw else None
    index = {rule[0]: i for i, rule in enumerate(positional)}
    shapes = [(n, index.get(n, len(params)), rules[n][2]) for n in spec.arrays if n in arrays]
    # An array default (a curve's grid) counts as one shaped argument when it is not passed.
    shaped_defaults = sum(type(d) not in PLAIN for _, _, d in shapes if d is not _NO_DEFAULT)
    where, infinite_ok = spec.where, spec.infinite_ok
    entered, enter, leave = inside.get, inside.set, inside.reset
    plain, is_finite = PLAIN, finite

    def checked(*args: Any, **kwargs: Any) -> Any:
        if entered():
            return func(*args, **kwargs)
        shaped = 0
        for (name, ok, default, array), value in zip(positional, args, strict=False):
            if ok is not None and value is not default and not ok(value):
                spec.fail(name, value)
            shaped += array and type(value) not in plain
        for key, value in kwargs.items():
            name, ok, default, array = rules.get(key) or extra or (key, None, None, False)
            if ok is not None and value is not default and not ok(value):
                spec.fail(name, value, key if name == varkw else None)
            shaped += array and type(value) not in plain
        if shaped + shaped_defaults > 1:  # compared only when two are not plain numbers
            named = [(n, args[i] if i < len(args) else kwargs.get(n, d)) for n, i, d in shapes]
            spec.shapes(tuple(named))
        if where is not None:
            spec.check_where(args, kwargs)
        token = enter(True)
        try:
            result = func(*args, **kwargs)
        except not_finite as error:
            leave(token)
            spec.overflowed(spec.arguments(args, kwargs), str(error), error)
            raise
        except BaseException:
            leave(token)
            raise
        leave(token)
        if not is_finite(result, infinite_ok):
            spec.overflowed(spec.arguments(args, kwargs), "inf or NaN", None)
        return result

    # On func's globals (its body uses only the names bound above and builtins), so doctest
    # and Sphinx take the wrapper for a function of func's module.
    wrapper = types.FunctionType(
        checked.__code__, func.__globals__, func.__name__, None, checked.__closure__
    )
    return functools.wraps(func)(wrapper)


def _quick(constraint: Constraint | None) -> Quick | None:
    return None if constraint is None else quick(constraint)


#: What a parameter without a default is compared with (no argument is this object).
_NO_DEFAULT = object()


def _default(param: inspect.Parameter) -> object:
    return _NO_DEFAULT if param.default is param.empty else param.default


# ---- shapes ------------------------------------------------------------------------------
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


def takes_arrays(constraint: Constraint) -> bool:
    if isinstance(constraint, AnyOf):
        return any(takes_arrays(option) for option in constraint.options)
    return isinstance(constraint, Real) and not constraint.scalar


def is_numeric(constraint: Constraint | None) -> bool:
    if isinstance(constraint, AnyOf):
        return any(is_numeric(option) for option in constraint.options)
    return isinstance(constraint, Real | Count)


# ---- the result check ---------------------------------------------------------------------
def finite(result: object, infinite_ok: bool = False) -> bool:
    """No inf or NaN in ``result`` (a number, an array, a result record, or a tuple, list or
    dict of them); with ``infinite_ok``, no NaN. Each field and each array on its own: an
    array by its sum (finite only when every element is; a sum that overflows, or is NaN from
    inf - inf, is looked at element by element before it is believed)."""
    kind = type(result)
    if kind in _NOT_NUMBERS:
        return True
    spec = RECORDS.get(kind)
    if spec is not None:
        # A record built inside the call: its numbers (records it holds, such as the
        # Deployment, were checked when they came in).
        fields = result.__dict__
        return _all_finite([fields[name] for name in spec.numeric_fields(fields)], infinite_ok)
    if kind is float or kind is np.float64:
        return _ok(result, infinite_ok)  # type: ignore[arg-type]
    if kind is np.ndarray:
        array: np.ndarray = result  # type: ignore[assignment]
        if array.dtype.kind != "f" or not array.size:
            return True
        total = array.item() if array.size == 1 else float(np.add.reduce(array, axis=None))
        if _ok(total, infinite_ok):
            return True
        return not np.isnan(array).any() if infinite_ok else bool(np.isfinite(array).all())
    if isinstance(result, np.floating):
        return finite(float(result), infinite_ok)
    if isinstance(result, tuple | list):
        return all(finite(item, infinite_ok) for item in result)
    if isinstance(result, dict):
        return all(finite(item, infinite_ok) for item in result.values())
    inherited = getattr(kind, "__contract__", None)  # a subclass of a checked record
    if hasattr(inherited, "numeric_fields") and hasattr(result, "__dict__"):
        RECORDS[kind] = inherited
        return finite(result, infinite_ok)
    return True


def _ok(number: float, infinite_ok: bool) -> bool:
    return not math.isnan(number) if infinite_ok else math.isfinite(number)


def _all_finite(values: list[Any], infinite_ok: bool) -> bool:
    """:func:`finite` of each value; the single numbers (a record's scalar fields) added up
    first, as one test, and looked at one by one only when that sum is not finite."""
    total = 0.0
    for value in values:
        kind = type(value)
        if kind is float or kind is np.float64:
            total += value
        elif kind is np.ndarray and value.size == 1 and value.dtype.kind == "f":
            total += value.item()
        elif not finite(value, infinite_ok):
            return False
    return _ok(total, infinite_ok) or all(finite(value, infinite_ok) for value in values)


#: Every checked record class, and its contract (a result's fields are checked for inf/NaN).
RECORDS: dict[type, Any] = {}
_NOT_NUMBERS = frozenset({int, bool, str, type(None), np.bool_})

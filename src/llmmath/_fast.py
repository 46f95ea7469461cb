"""The contracts' fast paths: a quick yes per constraint, and one compiled wrapper per signature.

A contract is checked on every call from outside the package, so its cost is paid by every
slider move. Two things keep it to a few microseconds:

* :func:`quick` turns a constraint into a predicate that answers ``True`` at once for the
  common valid values (a plain float in range, a known name, an instance). ``False`` only
  means "not sure": the caller then asks the constraint's full ``problem()``, which either
  finds nothing (the value is fine after all) or builds the error. A quick ``True`` is never
  given for a value ``problem()`` refuses (``tests/test_contracts.py`` checks this).
* :func:`compile_wrapper` writes, once per function, a wrapper with the function's own
  signature that checks each parameter in turn: no ``inspect.bind``, no dicts built per call.
* :func:`finite` checks a result for inf and NaN with one sum per result (not per field).
"""

from __future__ import annotations

import linecache
import math
import textwrap
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ._constraints import (
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
def compile_wrapper(func: Callable[..., Any], env: dict[str, Any], spec: Any) -> Any:
    """``func``'s checking wrapper, written for its signature.

    ``spec`` (a :class:`~llmmath.contracts.Contract`) gives the constraints, the array
    parameters whose shapes must broadcast, and ``fail`` and ``overflowed``; ``env`` the
    functions that read and set whether this thread is inside a checked call, and the result
    check. The wrapper, in order: inside another checked call, call ``func`` at once; else
    check each argument (a quick test, the full one only when unsure; a default is valid by
    declaration), the shapes, call ``func`` marked inside, and check the result.
    """
    params = list(spec.signature.parameters.values())
    names = {f"__ok_{p.name}": quick(spec.constraints[p.name]) for p in params if _checked(spec, p)}
    defaults = {f"__d_{p.name}": p.default for p in params if p.default is not p.empty}
    closure = env | names | defaults | {"__func": func, "__spec": spec, "__plain": PLAIN}
    head, call, kwargs = _signature(params)
    body = [f"    if __inside():\n        return __func({call})"]
    body += [_check_line(spec, p) for p in params if _checked(spec, p)]
    if len(spec.arrays) > 1:  # shapes compared only when two of them are not plain numbers
        shaped = " + ".join(f"(type({n}) not in __plain)" for n in spec.arrays)
        pairs = "".join(f"({n!r}, {n}), " for n in spec.arrays)
        body.append(f"    if {shaped} > 1:\n        __spec.shapes(({pairs}))")
    body.append(
        "    __token = __enter(True)\n    try:\n"
        f"        __result = __func({call})\n"
        "    except __NotFiniteError as __error:\n        __leave(__token)\n"
        f"        __spec.overflowed({kwargs}, str(__error), __error)\n"
        "        raise\n"
        "    except BaseException:\n        __leave(__token)\n        raise\n"
        "    __leave(__token)\n"
        "    if not __finite(__result, __spec.infinite_ok):\n"
        f"        __spec.overflowed({kwargs}, 'inf or NaN', None)\n"
        "    return __result"
    )
    wrapper_source = f"def {func.__name__}({head}):\n" + "\n".join(body)
    source = f"def __make({', '.join(closure)}):\n{textwrap.indent(wrapper_source, '  ')}\n"
    source += f"  return {func.__name__}\n"
    namespace: dict[str, Any] = {}
    filename = f"<contract {spec.name}>"
    exec(compile(source, filename, "exec"), namespace)  # our source, from above
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # tracebacks
    inner = namespace["__make"](**closure)
    # Rebuilt on func's globals, so doctest and ``literalinclude`` still find it in its module.
    wrapper = types.FunctionType(
        inner.__code__, func.__globals__, func.__name__, inner.__defaults__, inner.__closure__
    )
    wrapper.__kwdefaults__ = inner.__kwdefaults__
    return wrapper


def _checked(spec: Any, param: Any) -> bool:
    return param.name in spec.constraints


def _signature(params: list[Any]) -> tuple[str, str, str]:
    """The wrapper's parameter list, the call passing them on, and a dict of them by name."""
    head, call, named = [], [], []
    star = False
    for p in params:
        default = f"=__d_{p.name}" if p.default is not p.empty else ""
        if p.kind == p.VAR_KEYWORD:
            head.append(f"**{p.name}")
            call.append(f"**{p.name}")
            named.append(f"**{p.name}")
            continue
        if p.kind == p.VAR_POSITIONAL:
            raise TypeError(f"a contract cannot check *{p.name}: declare each parameter")
        if p.kind == p.KEYWORD_ONLY and not star:
            head.append("*")
            star = True
        head.append(f"{p.name}{default}")
        call.append(p.name if p.kind != p.KEYWORD_ONLY else f"{p.name}={p.name}")
        named.append(f"{p.name!r}: {p.name}")
    if any(p.kind == p.POSITIONAL_ONLY for p in params):
        raise TypeError("a contract cannot wrap positional-only parameters")
    return ", ".join(head), ", ".join(call), "{" + ", ".join(named) + "}"


def _check_line(spec: Any, p: Any) -> str:
    n = p.name
    if p.kind == p.VAR_KEYWORD:
        return (
            f"    for __key, __value in {n}.items():\n"
            f"        if not __ok_{n}(__value):\n"
            f"            __spec.fail({n!r}, __value, __key)"
        )
    default = f"{n} is not __d_{n} and " if p.default is not p.empty else ""
    return f"    if {default}not __ok_{n}({n}):\n        __spec.fail({n!r}, {n})"


# ---- the result check ---------------------------------------------------------------------
def finite(result: object, infinite_ok: bool = False) -> bool:
    """No inf or NaN in ``result`` (a number, an array, a result record, or a tuple, list or
    dict of them); with ``infinite_ok``, no NaN. One pass per array: a sum is finite exactly
    when every term is (the quantities here are >= 0 and far below 1e300)."""
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
        return not math.isnan(result) if infinite_ok else math.isfinite(result)  # type: ignore[arg-type]
    if kind is np.ndarray:
        array: np.ndarray = result  # type: ignore[assignment]
        if array.dtype.kind != "f":
            return True
        total = array.item() if array.size == 1 else _reduced(array)
        return not math.isnan(total) if infinite_ok else math.isfinite(total)
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


def _all_finite(values: list[Any], infinite_ok: bool) -> bool:
    """:func:`finite` of every value, in one sum: the numbers added up, the arrays of more
    than one number joined and reduced once (a record's dozen 1,000-point fields), unless
    they are large."""
    total, arrays, others = 0.0, [], []
    for value in values:
        kind = type(value)
        if kind is float or kind is np.float64:
            total += value
        elif kind is np.ndarray and value.dtype.kind == "f":
            if value.size == 1:
                total += value.item()
            elif value.size:
                arrays.append(value.ravel())
        elif kind is not np.ndarray:
            others.append(value)
    if sum(a.size for a in arrays) <= _JOIN_BELOW:
        arrays = [np.concatenate(arrays)] if len(arrays) > 1 else arrays
    for array in arrays:  # large ones reduced in place: joining them would copy them
        total += _reduced(array)
    ok = not math.isnan(total) if infinite_ok else math.isfinite(total)
    return ok and all(finite(value, infinite_ok) for value in others)


def _reduced(array: np.ndarray) -> float:
    """A number that is finite exactly when every element of ``array`` is, and NaN when one
    is NaN (or two are infinite with opposite signs), as the sum is: the sum of a small
    array; of a large one, its least plus its greatest element (two vectorised passes cost
    less than the sum's one)."""
    if array.size < _EXTREMES_FROM:
        return float(np.add.reduce(array, axis=None))
    return float(_LOWEST(array, axis=None)) + float(_HIGHEST(array, axis=None))


#: Every checked record class, and its contract (a result's fields are checked for inf/NaN).
RECORDS: dict[type, Any] = {}
#: Below this many numbers in all, a record's arrays are joined and summed at once.
_JOIN_BELOW = 100_000
#: From this many numbers, an array is checked by its extremes rather than its sum.
_EXTREMES_FROM = 10_000
_NOT_NUMBERS = frozenset({int, bool, str, type(None), np.bool_})

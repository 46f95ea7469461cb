"""Checks of values that are not a public function's parameters: a data file's numbers, a
chip's own dtypes. A parameter is checked by its function's contract
(:mod:`llmmath.core.contracts`), never here. Each rule is a constraint of
:mod:`llmmath.core._constraints`, the one vocabulary the contracts use; these functions only
say it under the value's own name (fail at once, name the value, say what is allowed)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llmmath.core import _constraints as c

FloatArray = NDArray[np.float64]


class NotFiniteError(ValueError):
    """A value that should be finite is inf or NaN: from finite inputs, an overflow. A
    function's contract (:mod:`llmmath.core.contracts`) reports it under the input that
    caused it."""


#: A data file's amounts: finite and > 0 (or >= 0), however large.
_POSITIVE = c.Real(high=sys.float_info.max)
_AMOUNT = c.Real(low_open=False, high=sys.float_info.max)
_COUNT = c.Count()


def positive(name: str, value: ArrayLike, *, allow_zero: bool = False) -> FloatArray:
    """``value`` as a float array, every element finite and > 0 (>= 0 with ``allow_zero``)."""
    _require(_AMOUNT if allow_zero else _POSITIVE, name, value)
    return as_floats(value)


def positive_int(name: str, value: object) -> int:
    """A count that must be a whole number >= 1 (an ``int`` or a numpy integer, not a bool)."""
    _require(_COUNT, name, value)
    return int(value)  # type: ignore[call-overload, no-any-return]


def choice(name: str, value: object, allowed: Iterable[str]) -> str:
    """A name that must be one of ``allowed`` (a table's keys, a chip's dtypes)."""
    if type(value) is str and value in allowed:  # the common case: no sorting
        return value
    rule = c.OneOf(tuple(allowed))
    problem = rule.problem(value)
    if problem is not None and problem[0] is ValueError:
        raise ValueError(f"unknown {name} {value!r}; known: {', '.join(rule.known())}")
    _require(rule, name, value)
    return str(value)


def _require(rule: c.Constraint, name: str, value: object) -> None:
    """Nothing, if ``rule`` allows ``value``; else its error, ``"name must be ...; got ..."``
    (a :class:`NotFiniteError` for an inf or NaN)."""
    problem = rule.problem(value)
    if problem is None:
        return
    kind = problem[0]
    if kind is ValueError and not np.all(np.isfinite(np.asarray(value, dtype=np.float64))):
        kind = NotFiniteError
    raise kind(rule.message(name, value, problem))


def as_floats(value: ArrayLike) -> FloatArray:
    """``value`` as a float array, unchecked: for a value its function's contract checked
    (:mod:`llmmath.core.contracts`), which the helpers above would only check again."""
    return np.asarray(value, dtype=np.float64)


def as_output(array: FloatArray) -> float | FloatArray:
    """Scalars in, scalar out: a 0-d result becomes a plain float."""
    return float(array) if np.ndim(array) == 0 else array


__all__ = [
    "FloatArray",
    "NotFiniteError",
    "Real",
    "as_floats",
    "as_output",
    "choice",
    "positive",
    "positive_int",
]

"""Input checks shared by every module: fail at once, name the parameter, say what is allowed."""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


class NotFiniteError(ValueError):
    """A value that should be finite is inf or NaN: from finite inputs, an overflow. A
    function's contract (:mod:`llmmath.contracts`) reports it under the input that caused it."""


def _raise(name: str, allowed: str, array: FloatArray, bad: NDArray[np.bool_]) -> None:
    kind = ValueError if np.all(np.isfinite(array[bad])) else NotFiniteError
    raise kind(f"{name} must be {allowed}; got {_first_bad(array, bad)}")


def positive(name: str, value: ArrayLike, *, allow_zero: bool = False) -> FloatArray:
    """Return ``value`` as a float array after checking every element is finite and > 0."""
    array = _as_real_array(name, value)
    bad = ~np.isfinite(array) | ((array < 0) if allow_zero else (array <= 0))
    if np.any(bad):
        _raise(name, "finite and >= 0" if allow_zero else "finite and > 0", array, bad)
    return array


def fraction(name: str, value: ArrayLike) -> FloatArray:
    """An efficiency or share: every element in (0, 1]."""
    array = _as_real_array(name, value)
    bad = ~np.isfinite(array) | (array <= 0) | (array > 1)
    if np.any(bad):
        _raise(name, "in (0, 1] (a fraction of peak)", array, bad)
    return array


def positive_int(name: str, value: object) -> int:
    """A count that must be a whole number >= 1 (layers, heads, chips...)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1; got {value}")
    return int(value)


def choice(name: str, value: object, allowed: Iterable[str]) -> str:
    """A name that must be one of ``allowed`` (presets, dtypes)."""
    if type(value) is str and value in allowed:  # the common case: no sorting
        return value
    options = sorted(allowed)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {options}; got {type(value).__name__}")
    if value not in options:
        raise ValueError(f"unknown {name} {value!r}; known: {', '.join(options)}")
    return value


def as_floats(value: ArrayLike) -> FloatArray:
    """``value`` as a float array, unchecked: for a value its function's contract checked
    (:mod:`llmmath.contracts`), which the helpers above would only check again."""
    return np.asarray(value, dtype=np.float64)


def _as_real_array(name: str, value: ArrayLike) -> FloatArray:
    wrong = isinstance(value, bool | np.bool_ | str | bytes) or value is None
    if wrong or (isinstance(value, np.ndarray) and value.dtype.kind not in "iuf"):
        raise TypeError(f"{name} must be a number or an array of numbers; got {value!r}")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be a number or an array of numbers; got {value!r}") from error
    return array


def _first_bad(array: FloatArray, bad: NDArray[np.bool_]) -> str:
    if array.ndim == 0:
        return repr(float(array))
    return f"an array containing {float(array[bad].ravel()[0])!r}"


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
    "fraction",
    "positive",
    "positive_int",
]

"""Input checks shared by every module: fail at once, name the parameter, say what is allowed."""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def positive(name: str, value: ArrayLike, *, allow_zero: bool = False) -> FloatArray:
    """Return ``value`` as a float array after checking every element is finite and > 0."""
    array = _as_real_array(name, value)
    bad = ~np.isfinite(array) | ((array < 0) if allow_zero else (array <= 0))
    if np.any(bad):
        allowed = "finite and >= 0" if allow_zero else "finite and > 0"
        raise ValueError(f"{name} must be {allowed}; got {_first_bad(array, bad)}")
    return array


def fraction(name: str, value: ArrayLike) -> FloatArray:
    """An efficiency or share: every element in (0, 1]."""
    array = _as_real_array(name, value)
    bad = ~np.isfinite(array) | (array <= 0) | (array > 1)
    if np.any(bad):
        raise ValueError(
            f"{name} must be in (0, 1] (a fraction of peak); got {_first_bad(array, bad)}"
        )
    return array


def positive_int(name: str, value: object) -> int:
    """A count that must be a whole number >= 1 (layers, heads, chips...)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1; got {value}")
    return int(value)


def choice(name: str, value: object, allowed: Iterable[str]) -> str:
    """A name that must be one of ``allowed`` (presets, dtypes)."""
    options = sorted(allowed)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {options}; got {type(value).__name__}")
    if value not in options:
        raise ValueError(f"unknown {name} {value!r}; known: {', '.join(options)}")
    return value


def _as_real_array(name: str, value: ArrayLike) -> FloatArray:
    if isinstance(value, bool | str | bytes) or value is None:
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


__all__ = ["FloatArray", "Real", "as_output", "choice", "fraction", "positive", "positive_int"]

"""What one parameter (or record field) accepts: the constraints :mod:`llmmath.core.contracts` uses.

Each constraint says what it allows in words, why a value is not allowed (``problem``), and
gives valid and invalid examples, from which the common test (``tests/model/test_contracts.py``)
generates its inputs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: No quantity of the course comes near this (the largest are ~1e27 FLOPs); above it, products
#: of a few inputs could overflow a float.
MAX_REAL = 1e30
#: Counts (layers, widths, parameters, tokens) stay below this: floats hold them exactly.
MAX_COUNT = 10**15
#: Chips in one job or group: arrays and loops over them stay small (today's largest ~1e5).
MAX_CHIPS = 1 << 20
#: Timing repeats and other loops the caller sizes.
MAX_REPEATS = 1000

#: Why a value is refused: the error type, what is allowed, and what was given.
Problem = tuple[type[Exception], str, str]


def describe(value: object) -> str:
    """What was given, short: ``-1.0``, ``numpy.bool True``, ``str 'x'``, ``an array...``."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value.item() if isinstance(value, np.generic) else value)
    text = text if len(text) <= 60 else text[:57] + "..."
    kind = type(value)
    if kind in (int, float):
        return text
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    return f"{name} {text}"


class Constraint:
    """What one parameter accepts: ``allowed`` in words; ``problem(value)`` says why not."""

    allowed = "anything"

    def problem(self, value: object) -> Problem | None:
        raise NotImplementedError

    def refuse(self, kind: type[Exception], value: object) -> Problem:
        return kind, self.allowed, describe(value)

    def message(self, where: str, value: object, problem: Problem) -> str:
        """The error's text; ``where`` is ``"module.function(): parameter"``."""
        return f"{where} must be {problem[1]}; got {problem[2]}"

    def examples(self) -> tuple[object, ...]:
        """Valid values, the first a typical one (the common test's baseline)."""
        return ()

    def extremes(self) -> tuple[object, ...]:
        """Valid values at the edges of what is allowed."""
        return self.examples()

    def bad(self) -> tuple[object, ...]:
        """Invalid values the common test tries."""
        return (None, "x", object())


@dataclass(frozen=True)
class Real(Constraint):
    """A finite real number (or, unless ``scalar``, an array of them) in a range; never a bool."""

    low: float = 0.0
    high: float = MAX_REAL
    low_open: bool = True
    integer: bool = False
    scalar: bool = False
    ndarray: bool = False  # a numpy array only (internal steps that index their inputs)
    unit: str = ""  # what a whole number counts ("tokens"), said in the message

    @property
    def allowed(self) -> str:  # type: ignore[override]
        if (self.low, self.high, self.low_open, self.integer) == (0.0, 1.0, True, False):
            return "in (0, 1] (a fraction)"
        text = "" if self.integer else "finite and "
        text += f"{'>' if self.low_open else '>='} {self.low:g}"
        if self.high == np.inf:
            return text.replace("finite and", "not NaN and", 1) + " (inf allowed)"
        text += f" and <= {self.high:g}" if self.high < sys.float_info.max else ""
        counts = f" of {self.unit}" if self.unit else ""
        return text + (f", a whole number{counts}" if self.integer else "")

    @property
    def kind(self) -> str:
        if self.ndarray:
            return "a numpy array of numbers"
        return "a single number" if self.scalar else "a number or an array of numbers"

    def problem(self, value: object) -> Problem | None:
        if self.ndarray and not isinstance(value, np.ndarray | np.integer | np.floating):
            return TypeError, self.kind, describe(value)
        if isinstance(value, int | float | np.integer | np.floating) and not isinstance(
            value, bool | np.bool_
        ):
            try:
                number = float(value)
            except OverflowError:
                return ValueError, self.allowed, describe(value)
            return self._range(np.asarray(number), number, number, value)
        return self._array_problem(value)

    def _array_problem(self, value: object) -> Problem | None:
        if not isinstance(value, np.ndarray | list | tuple):
            return TypeError, self.kind, describe(value)
        try:
            array = np.asarray(value)
        except ValueError:
            return TypeError, self.kind, f"a ragged sequence {describe(value)}"
        if array.dtype.kind not in "iuf" or (self.scalar and array.ndim):
            return TypeError, self.kind, describe(value)
        if array.size == 0:
            return None  # nothing to compute: an empty result
        return self._range(array, float(array.min()), float(array.max()), value)

    def _range(self, array: Any, low: float, high: float, value: object) -> Problem | None:
        too_low = low <= self.low if self.low_open else low < self.low
        if too_low or not high <= self.high or low != low:  # low != low: a NaN
            return ValueError, self.allowed, _first_bad(array, self._bad_mask(array), value)
        if self.integer and not np.all(array == np.round(array)):
            bounds, _, whole = self.allowed.partition(", ")  # "a whole number >= 1"
            given = _first_bad(array, array != np.round(array), value)
            return ValueError, f"{whole} {bounds}", given
        return None

    def _bad_mask(self, array: Any) -> Any:
        below = array <= self.low if self.low_open else array < self.low
        return below | ~(array <= self.high) | np.isnan(array)

    def examples(self) -> tuple[object, ...]:
        typical = 1.0 if self.low < 1.0 <= self.high else float(np.ceil(self.low + 1e-9))
        return (np.array([typical]) if self.ndarray else typical,)

    def extremes(self) -> tuple[object, ...]:
        smallest = self.low + (max(1e-9, abs(self.low) * 1e-9) if self.low_open else 0.0)
        ends = [float(np.ceil(smallest)) if self.integer else smallest, self.high]
        values = [np.array([v]) if self.ndarray else v for v in ends]
        return tuple(v for v in values if self.problem(v) is None)

    def bad(self) -> tuple[object, ...]:
        values: list[object] = [None, "1", True, np.True_, np.nan, -np.inf]
        values += [np.inf] if self.high < np.inf else []
        values += [self.high * 10] if self.high < sys.float_info.max / 10 else []
        values += [self.low - 1.0, np.array([True, False]), complex(1, 1), np.array(["a"])]
        values += [{"x": 1}, self.low - 1e-6 if not self.low_open else self.low]
        if self.integer:
            values.append(self.low + 1.5)
        values.append(np.array([1.0, 2.0]) if self.scalar else np.array([1.0, np.nan]))
        return tuple(values)


def _first_bad(array: Any, mask: Any, value: object) -> str:
    if np.ndim(array) == 0:
        return describe(value)
    bad = array[np.broadcast_to(mask, array.shape)].ravel()
    shown = repr(bad[0].item()) if bad.size else "a bad value"
    return f"an array of shape {array.shape} containing {shown}"


@dataclass(frozen=True)
class Count(Constraint):
    """A whole number (``int`` or numpy integer, never a bool) in ``[low, high]``."""

    low: int = 1
    high: int = MAX_COUNT

    @property
    def allowed(self) -> str:  # type: ignore[override]
        if self.high - self.low < 4:
            return f"one of {tuple(range(self.low, self.high + 1))}"
        return f">= {self.low}" + (f" and <= {self.high}" if self.high < MAX_COUNT else "")

    def problem(self, value: object) -> Problem | None:
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
            return TypeError, "an integer", describe(value)
        return None if self.low <= value <= self.high else self.refuse(ValueError, value)

    def examples(self) -> tuple[object, ...]:
        return (max(self.low, min(2, self.high)),)

    def extremes(self) -> tuple[object, ...]:
        return (self.low, self.high)

    def bad(self) -> tuple[object, ...]:
        return (None, "2", 2.0, 1.5, True, np.True_, np.array([2]), self.low - 1, self.high + 1)


@dataclass(frozen=True)
class Flag(Constraint):
    """``True`` or ``False`` (or, with ``arrays``, an array of them); ``"no"`` is not a flag."""

    arrays: bool = False

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return "True or False" + (" (or an array of them)" if self.arrays else "")

    def problem(self, value: object) -> Problem | None:
        if isinstance(value, bool | np.bool_):
            return None
        if self.arrays and isinstance(value, np.ndarray) and value.dtype.kind == "b":
            return None
        return self.refuse(TypeError, value)

    def examples(self) -> tuple[object, ...]:
        return (False, True)

    def bad(self) -> tuple[object, ...]:
        return (None, "no", 1, 0.0, np.array([1]))


@dataclass(frozen=True)
class OneOf(Constraint):
    """A name from a fixed or a growing set (``names`` may be a function, e.g. list_chips);
    ``what`` names the kind in messages ("unknown dtype 'fp4'; known: ...")."""

    names: Callable[[], Iterable[str]] | tuple[str, ...]
    what: str = ""

    def known(self) -> list[str]:
        return sorted(self.names() if callable(self.names) else self.names)

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return f"a string, one of {self.known()}"

    def problem(self, value: object) -> Problem | None:
        if not isinstance(value, str):
            return self.refuse(TypeError, value)
        return None if value in self.known() else (ValueError, self.allowed, repr(value))

    def message(self, where: str, value: object, problem: Problem) -> str:
        if problem[0] is TypeError:
            return super().message(where, value, problem)
        function, _, name = where.rpartition(": ")
        where = f"{function}: {name}:" if self.what and self.what != name else f"{function}:"
        what = self.what or name
        return f"{where} unknown {what} {value!r}; known: {', '.join(self.known())}"

    def examples(self) -> tuple[object, ...]:
        return tuple(self.known()[:1])

    def bad(self) -> tuple[object, ...]:
        return (None, "", "no-such-name", 3, b"bf16")


@dataclass(frozen=True)
class Instance(Constraint):
    """An instance of ``kind``; ``example`` builds a valid one for the common test."""

    kind: type
    example: Callable[[], object] | None = None

    @property
    def allowed(self) -> str:  # type: ignore[override]
        module = self.kind.__module__
        return f"a {'' if module == 'builtins' else module + '.'}{self.kind.__qualname__}"

    def problem(self, value: object) -> Problem | None:
        return None if isinstance(value, self.kind) else self.refuse(TypeError, value)

    def examples(self) -> tuple[object, ...]:
        return (self.example(),) if self.example else ()


@dataclass(frozen=True)
class Text(Constraint):
    """A string: non-empty unless ``empty_ok`` (a label, a source)."""

    empty_ok: bool = False

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return "a string" if self.empty_ok else "a non-empty string"

    def problem(self, value: object) -> Problem | None:
        if not isinstance(value, str):
            return self.refuse(TypeError, value)
        return None if value.strip() or self.empty_ok else self.refuse(ValueError, value)

    def examples(self) -> tuple[object, ...]:
        return ("example",)

    def bad(self) -> tuple[object, ...]:
        return (None, 3, b"x") if self.empty_ok else (None, 3, b"x", "", "  ")


@dataclass(frozen=True)
class PathLike(Constraint):
    """A file path: a non-empty ``str`` or an ``os.PathLike``."""

    allowed = "a path (str or os.PathLike)"
    example: Callable[[], object] | None = None

    def examples(self) -> tuple[object, ...]:
        return (self.example(),) if self.example else ()

    def problem(self, value: object) -> Problem | None:
        if (isinstance(value, str) and value) or isinstance(value, os.PathLike):
            return None
        return self.refuse(TypeError, value)

    def bad(self) -> tuple[object, ...]:
        return (None, "", 3, b"x")


@dataclass(frozen=True)
class Function(Constraint):
    """Something callable (an operation to time, a formula to evaluate)."""

    allowed = "a callable"
    example: Callable[..., object] | None = None

    def problem(self, value: object) -> Problem | None:
        return None if callable(value) else self.refuse(TypeError, value)

    def examples(self) -> tuple[object, ...]:
        return (self.example,) if self.example else ()

    def bad(self) -> tuple[object, ...]:
        return (None, 5, "f")


@dataclass(frozen=True)
class AnyOf(Constraint):
    """Any one of several constraints (``Optional(c)`` is ``AnyOf((Nothing(), c))``)."""

    options: tuple[Constraint, ...]
    label: str = ""  # what is allowed, in words, where listing each option would mislead

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return self.label or " or ".join(option.allowed for option in self.options)

    def problem(self, value: object) -> Problem | None:
        problems = [option.problem(value) for option in self.options]
        if any(problem is None for problem in problems):
            return None
        # A ValueError means the value had the right type for that option: report that one.
        for problem in problems:
            if problem is not None and problem[0] is not TypeError:
                return problem
        return self.refuse(TypeError, value)

    def message(self, where: str, value: object, problem: Problem) -> str:
        for option in self.options:
            if problem[0] is not TypeError and option.problem(value) == problem:
                return option.message(where, value, problem)
        return super().message(where, value, problem)

    def examples(self) -> tuple[object, ...]:
        return tuple(value for option in self.options for value in option.examples())

    def extremes(self) -> tuple[object, ...]:
        return tuple(value for option in self.options for value in option.extremes())

    def bad(self) -> tuple[object, ...]:
        candidates = [value for option in self.options for value in option.bad()]
        return tuple(value for value in candidates if self.problem(value) is not None)


@dataclass(frozen=True)
class Nothing(Constraint):
    """Only ``None`` (for optional parameters: ``Optional(c)``)."""

    allowed = "None"

    def problem(self, value: object) -> Problem | None:
        return None if value is None else self.refuse(TypeError, value)

    def examples(self) -> tuple[object, ...]:
        return (None,)

    def bad(self) -> tuple[object, ...]:
        return ()


@dataclass(frozen=True)
class SequenceOf(Constraint):
    """A non-empty list or tuple whose items all meet ``item`` (exactly ``length`` of them if
    set, e.g. 2 for a ``(low, high)`` pair; ``what`` then names the pair in messages)."""

    item: Constraint
    length: int | None = None
    what: str = ""

    @property
    def allowed(self) -> str:  # type: ignore[override]
        size = "at least one item" if self.length is None else f"{self.length} items"
        return f"a list or tuple of {size}{self.what}, each {self.item.allowed}"

    def problem(self, value: object) -> Problem | None:
        if not isinstance(value, list | tuple):
            return self.refuse(TypeError, value)
        if not value or len(value) != (self.length or len(value)):
            given = f"{len(value)} items, {describe(value)}" if value else "an empty sequence"
            return ValueError, self.allowed, given
        for position, item in enumerate(value):
            problem = self.item.problem(item)
            if problem:
                return problem[0], self.allowed, f"item {position}: {problem[2]}"
        return None

    def examples(self) -> tuple[object, ...]:
        return tuple([value] * (self.length or 1) for value in self.item.examples()[:1])

    def bad(self) -> tuple[object, ...]:
        longer = [[v] * (self.length + 1) for v in self.item.examples()[:1]] if self.length else []
        return (None, [], "ab", [None], 3, *longer)


@dataclass(frozen=True)
class MappingOf(Constraint):
    """A dict with at least one entry (one ``what``), keys meeting ``key``, values ``value``."""

    key: Constraint
    value: Constraint
    what: str = "entry"
    example: Callable[[], object] | None = None

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return f"a dict with at least one {self.what}"

    def problem(self, value: object) -> Problem | None:
        if not isinstance(value, dict):
            return self.refuse(TypeError, value)
        if not value:
            return ValueError, self.allowed, "an empty dict"
        bad = self._first_bad_item(value)
        return None if bad is None else bad[2]

    def _first_bad_item(self, value: dict[Any, Any]) -> tuple[Any, Constraint, Problem] | None:
        for key, item in value.items():
            for part, constraint in ((key, self.key), (item, self.value)):
                problem = constraint.problem(part)
                if problem:
                    return key, constraint, problem
        return None

    def message(self, where: str, value: object, problem: Problem) -> str:
        bad = self._first_bad_item(value) if isinstance(value, dict) else None
        if bad is None:
            return super().message(where, value, problem)
        key, constraint, item_problem = bad
        return constraint.message(f"{where}[{key!r}]", key, item_problem)

    def examples(self) -> tuple[object, ...]:
        return (self.example(),) if self.example else ()

    def bad(self) -> tuple[object, ...]:
        return (None, {}, "ab", {"no-such-key": 1.0}, {3: 1.0})


def span(constraint: Constraint) -> AnyOf:
    """A value meeting ``constraint`` or a ``(low, high)`` pair of them, a list or a tuple (an
    assumption's range)."""
    return AnyOf((constraint, SequenceOf(constraint, 2, " (low, high)")))


def Optional(constraint: Constraint) -> AnyOf:  # noqa: N802 (reads like the type it mirrors)
    """``None`` or a value meeting ``constraint``."""
    return AnyOf((Nothing(), constraint))


@dataclass(frozen=True)
class Later(Constraint):
    """A constraint defined further down its module (``Later(lambda: DOMAIN)``)."""

    get: Callable[[], Constraint]

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return self.get().allowed

    def problem(self, value: object) -> Problem | None:
        return self.get().problem(value)

    def message(self, where: str, value: object, problem: Problem) -> str:
        return self.get().message(where, value, problem)

    def examples(self) -> tuple[object, ...]:
        return self.get().examples()

    def bad(self) -> tuple[object, ...]:
        return self.get().bad()

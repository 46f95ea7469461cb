"""llmmath.core.units: how the book's text writes a number in powers of ten (#45: never
Python's e-notation, one style everywhere)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmmath.core.units import general, scientific


@pytest.mark.parametrize(
    ("value", "significant", "text"),
    [
        (6.3e24, 2, "6.3 × 10²⁴"),
        (6.302e24, 3, "6.30 × 10²⁴"),  # the figures asked for, zeros kept
        (9.96e24, 2, "1.0 × 10²⁵"),  # rounding carries into the exponent
        (3.044e-17, 4, "3.044 × 10⁻¹⁷"),
        (4e8, 1, "4 × 10⁸"),
        (0.0, 2, "0"),
    ],
)
def test_scientific(value: float, significant: int, text: str) -> None:
    assert scientific(value, significant) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (407.0, "407"),  # where g writes plain digits, so does general
        (0.75, "0.75"),
        (1149.6, "1,150"),  # where g writes 1.15e+03, below a million: digits
        (123456.0, "123,000"),
        (8e12, "8 × 10¹²"),  # where g writes 8e+12, powers of ten, zeros dropped
        (2.25e15, "2.25 × 10¹⁵"),
        (1.2e-5, "1.2 × 10⁻⁵"),
    ],
)
def test_general(value: float, text: str) -> None:
    assert general(value) == text


@given(st.floats(min_value=0.0, max_value=1e30), st.integers(min_value=1, max_value=6))
def test_neither_writes_e_notation_and_both_read_back(value: float, significant: int) -> None:
    for text in (scientific(value, significant), general(value, significant)):
        assert "e" not in text
        mantissa, _, power = text.replace(",", "").partition(" × 10")
        exponent = int(power.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")) or 0)
        # Rounded to `significant` figures: off by at most half a unit of the last one.
        tolerance = 0.5 * 10.0 ** (1 - significant) * (1 + 1e-9)
        assert float(mantissa) * 10.0**exponent == pytest.approx(value, rel=tolerance)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_refuses_what_it_cannot_write(bad: float) -> None:
    with pytest.raises(ValueError, match="value"):
        scientific(bad)

"""Exact xsd:decimal arithmetic on Python's Decimal.

XPath op:numeric-add/-subtract/-multiply are exact here (the context's
precision is the maximum libmpdec supports, so nothing is rounded); only
division has to stop somewhere, and it keeps 18 truncated fractional digits,
the implementation-defined precision Oxigraph uses
(https://www.w3.org/TR/xpath-functions/#op.numeric).
"""

from __future__ import annotations

from decimal import (
    MAX_EMAX,
    MAX_PREC,
    MIN_EMIN,
    ROUND_DOWN,
    ROUND_FLOOR,
    Context,
    Decimal,
    DivisionByZero,
    InvalidOperation,
    Overflow,
)
from typing import Final

from rsep.plugin.expr.errors import ExprError

EXACT: Final = Context(
    prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[InvalidOperation, DivisionByZero, Overflow]
)
"""With this precision +, - and * never round."""

DIVISION_DIGITS: Final = 18
_QUANTUM: Final = Decimal(1).scaleb(-DIVISION_DIGITS)
_division_contexts: dict[int, Context] = {}


def divide(dividend: Decimal | int, divisor: Decimal | int) -> Decimal:
    """xsd:decimal division truncated to 18 places; dividing by zero is an
    error (err:FOAR0001), unlike float/double division."""
    if not divisor:
        raise ExprError("decimal division by zero")
    a = Decimal(dividend)
    b = Decimal(divisor)
    if not a:
        return Decimal(0)
    precision = max(a.adjusted() - b.adjusted(), 0) + DIVISION_DIGITS + 4
    context = _division_contexts.get(precision)
    if context is None:
        context = Context(prec=precision, rounding=ROUND_DOWN, Emax=MAX_EMAX, Emin=MIN_EMIN)
        _division_contexts[precision] = context
    return context.divide(a, b).quantize(_QUANTUM, rounding=ROUND_DOWN, context=EXACT)


def floor_int(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_FLOOR, context=EXACT))


def format_decimal(value: Decimal | int) -> str:
    """Oxigraph's xsd:decimal form: no exponent, no trailing zeros, "3" not "3.0"."""
    if isinstance(value, int):
        return str(value)
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text

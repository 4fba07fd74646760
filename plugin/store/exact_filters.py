"""A simple GPM's FILTERs evaluated in Python, with the answer Oxigraph would give.

The expression evaluator (`rsep.plugin.expr`) follows SPARQL 1.1 and XPath where Oxigraph departs
from them; its differential test (tests/expr/test_expr_oxigraph.py, DEVIATIONS) finds every
disagreement at one node whose operands agree, and names the condition. `ExactFilter` evaluates
every node of a FILTER on a solution and checks those conditions, conservatively, at each node
(operands that agree, and no condition met at the node, give the same value), plus the EBV of
ill-formed literals where a FILTER, `&&`, `||`, `!` or IF reads one: when one is met it answers
None, and the GPM stage matches that event in Oxigraph instead.

The conditions (ours vs Oxigraph 0.5):

- integers beyond 64 bits and decimals beyond Oxigraph's 18 fractional digits or 1.7e20, as an
  operand or a result anywhere ("oxigraph-limits": Oxigraph errors, or stores a term it cannot read);
- `<`, `>`, `<=`, `>=` with an xsd:boolean ("boolean-order") or NaN operand ("nan-order"), or
  between identical terms of a type other than numbers, strings and dates/times
  ("identical-order": Oxigraph compares them as equal);
- `+` of a date/time and a duration ("temporal-plus"); `/` of two integers or decimals
  ("decimal-division": Oxigraph fails on some);
- the EBV of an ill-formed numeric or boolean literal ("ill-formed-ebv");
- casts from strings with white space ("cast-whitespace"), of doubles and floats to strings outside
  [1e-6, 1e6) ("double-to-string") or to integers and decimals ("double-conversion"), to
  xsd:dayTimeDuration and xsd:yearMonthDuration ("duration-cast");
- SUBSTR with bounds beyond 64 bits;
- REGEX with `\\s` over text with non-ASCII or control characters ("regex-whitespace"), with `.`
  over text holding a carriage return (XPath's `.` excludes it, Rust's does not), and
  case-insensitive over non-ASCII text (case folding differs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Final

from rsep.plugin.algebra.sparql import (
    IRI,
    XSD,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_INTEGER,
    XSD_STRING,
    BinaryOp,
    Expr,
    FunctionCall,
    In,
    Literal,
    UnaryOp,
)
from rsep.plugin.expr import ExprError, compile_filter, compile_value
from rsep.plugin.expr.decimals import EXACT
from rsep.plugin.expr.values import (
    BOOLEAN,
    DATE,
    DATETIME,
    DECIMAL,
    DOUBLE,
    DURATION_KINDS,
    FLOAT,
    INTEGER,
    LANG,
    NUMERIC_DATATYPES,
    OTHER,
    STRING,
    TEMPORAL_KINDS,
    TIME,
    Value,
)

Solution = Mapping[str, str]
Check = Callable[[list["Value | None"], "Value | None"], bool]
"""(operand values, the node's value; None for an error) -> may Oxigraph disagree here?"""

_I64: Final = 2**63
_DECIMAL_LIMIT: Final = Decimal(2**127) / Decimal(10**18)
_ORDER: Final = frozenset({"<", ">", "<=", ">="})
_ORDERED_KINDS: Final = frozenset({INTEGER, DECIMAL, FLOAT, DOUBLE, STRING, LANG, DATETIME, DATE, TIME})
"""Kinds whose identical terms both evaluators compare as equal (NaN aside)."""
_EBV_TYPES: Final = NUMERIC_DATATYPES | {XSD_BOOLEAN}
_XML_SPACE: Final = " \t\n\r"
_TO_DURATION: Final = frozenset({XSD + "dayTimeDuration", XSD + "yearMonthDuration"})


class ExactFilter:
    """One FILTER conjunct: `__call__` gives whether a solution passes, or None when Oxigraph
    might answer otherwise."""

    __slots__ = ("_keep", "_nodes")

    def __init__(self, expr: Expr) -> None:
        self._keep = compile_filter(expr)
        self._nodes: list[tuple[Callable[[Solution], Value], tuple[int, ...], Check | None, bool]] = []
        self._add(expr, ebv=True)

    def __call__(self, solution: Solution) -> bool | None:
        values: list[Value | None] = []
        for evaluate, operands, check, ebv in self._nodes:
            try:
                value: Value | None = evaluate(solution)
            except ExprError:
                value = None
            if value is not None and (_beyond_oxigraph(value) or (ebv and _ill_formed_ebv(value))):
                return None
            if check is not None and check([values[i] for i in operands], value):
                return None
            values.append(value)
        return self._keep(solution)

    def _add(self, node: Expr, ebv: bool) -> int:
        """Adds `node` after its operands (post-order); returns its position."""
        operands = tuple(self._add(child, child_ebv) for child, child_ebv in _operands(node))
        self._nodes.append((compile_value(node), operands, _check(node), ebv))
        return len(self._nodes) - 1


def _operands(node: Expr) -> list[tuple[Expr, bool]]:
    """The node's operands, each with whether the node reads its effective boolean value."""
    if isinstance(node, BinaryOp):
        logical = node.op in ("&&", "||")
        return [(node.left, logical), (node.right, logical)]
    if isinstance(node, UnaryOp):
        return [(node.operand, node.op == "!")]
    if isinstance(node, In):
        return [(node.expr, False), *((option, False) for option in node.options)]
    if isinstance(node, FunctionCall):
        condition = isinstance(node.name, str) and node.name.upper() == "IF"
        return [(argument, condition and index == 0) for index, argument in enumerate(node.args)]
    return []


def _check(node: Expr) -> Check | None:
    if isinstance(node, BinaryOp):
        if node.op in _ORDER:
            return _order_check
        if node.op == "+":
            return _temporal_plus
        if node.op == "/":
            return _decimal_division
        return None
    if not isinstance(node, FunctionCall):
        return None
    if isinstance(node.name, IRI):
        return _cast_check(node.name.value)
    name = node.name.upper()
    if name == "SUBSTR":
        return _substr_bounds
    if name == "REGEX":
        return _regex_check(node)
    return None


def _beyond_oxigraph(value: Value) -> bool:
    if value.k == INTEGER:
        return not -_I64 <= value.v < _I64
    if value.k == DECIMAL:
        number: Decimal = value.v
        exponent = number.normalize(EXACT).as_tuple().exponent
        return abs(number) >= _DECIMAL_LIMIT or not isinstance(exponent, int) or -exponent > 18
    return False


def _ill_formed_ebv(value: Value) -> bool:
    return value.k == OTHER and value.dt in _EBV_TYPES


def _is_nan(value: Value) -> bool:
    return value.k in (DOUBLE, FLOAT) and value.v != value.v


def _order_check(operands: list[Value | None], value: Value | None) -> bool:
    left, right = operands
    if left is None or right is None:
        return False
    if BOOLEAN in (left.k, right.k) or _is_nan(left) or _is_nan(right):
        return True
    return left.nt == right.nt and left.k not in _ORDERED_KINDS


def _temporal_plus(operands: list[Value | None], value: Value | None) -> bool:
    kinds = {operand.k for operand in operands if operand is not None}
    return bool(kinds & TEMPORAL_KINDS) and bool(kinds & DURATION_KINDS)


def _decimal_division(operands: list[Value | None], value: Value | None) -> bool:
    return all(operand is not None and operand.k in (INTEGER, DECIMAL) for operand in operands)


def _cast_check(target: str) -> Check:
    def check(operands: list[Value | None], value: Value | None) -> bool:
        (operand,) = operands
        if operand is None:
            return False
        if target in _TO_DURATION:
            return True
        if operand.k in (STRING, LANG) and any(char in _XML_SPACE for char in operand.v):
            return target != XSD_STRING or operand.v != operand.v.strip(_XML_SPACE)
        if operand.k in (DOUBLE, FLOAT):
            if target in (XSD_INTEGER, XSD_DECIMAL):
                return True
            if target == XSD_STRING:
                number = abs(operand.v)
                return math.isfinite(number) and number != 0 and not 1e-6 <= number < 1e6
        return False

    return check


def _substr_bounds(operands: list[Value | None], value: Value | None) -> bool:
    numbers = []
    for operand in operands[1:]:
        if operand is None or operand.k > DOUBLE:
            return False  # not a number: an error in both
        number = float(operand.v)
        if not math.isfinite(number):
            return True
        numbers.append(number)
    start = numbers[0] - 1
    return not all(abs(bound) < 2.0**62 for bound in (start, start + sum(numbers[1:])))


def _regex_check(node: FunctionCall) -> Check:
    """The per-text conditions of a REGEX whose pattern and flags the classifier accepted
    (constant strings, rsep.plugin.compile.simple_gpm)."""
    pattern = node.args[1]
    flags = node.args[2] if len(node.args) > 2 else Literal("")
    assert isinstance(pattern, Literal) and isinstance(flags, Literal)
    spaces = "\\s" in pattern.lexical
    dot = "." in pattern.lexical
    folds = "i" in flags.lexical

    def check(operands: list[Value | None], value: Value | None) -> bool:
        text = operands[0]
        if text is None or text.k not in (STRING, LANG):
            return False
        string: str = text.v
        if string.isascii() and string.isprintable():
            return False
        if folds and not string.isascii():
            return True
        if dot and "\r" in string:
            return True
        return spaces and any(ord(char) > 127 or (ord(char) < 32 and char not in "\t\n\r") for char in string)

    return check
